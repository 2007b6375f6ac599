/* hl_ref_view.c - views made concrete for the reference runtime: dims evaluated, per-dim
 * position tables filled (by addition for a linear stride) and bounds-checked against
 * the producer's buffer; output buffers; the run's recycled blocks. */
#include "ref/hl_ref_int.h"

#include <stdarg.h>

void *hl__rec_alloc(hl__recycler *rc, size_t n, size_t size, bool zero)
{
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    if (rc && bytes >= HL__REC_MIN)
        for (uint32_t i = rc->n; i-- > 0;)
            if (rc->bytes[i] == bytes) {
                void *p = rc->p[i];
                rc->held -= bytes;
                rc->n--;
                rc->p[i] = rc->p[rc->n];
                rc->bytes[i] = rc->bytes[rc->n];
                return zero ? memset(p, 0, bytes) : p;
            }
    return zero ? hl__zalloc(n, size) : hl__alloc(n, size);
}

void hl__rec_free(hl__recycler *rc, void *p, size_t n, size_t size)
{
    size_t bytes = n * size; /* hl__rec_alloc checked it */
    if (!p) return;
    if (!rc || bytes < HL__REC_MIN || rc->n == HL__REC_SLOTS || bytes > rc->cap - rc->held) {
        hl__free(p);
        return;
    }
    rc->p[rc->n] = p;
    rc->bytes[rc->n++] = bytes;
    rc->held += bytes;
}

void hl__rec_drain(hl__recycler *rc)
{
    for (uint32_t i = 0; i < rc->n; i++)
        hl__free(rc->p[i]);
    rc->n = 0;
    rc->held = 0;
}

void hl__ref_cview_free(hl__cview *c)
{
    for (uint32_t i = 0; i < c->ndim; i++)
        hl__rec_free(c->rec, c->tab[i], c->dims[i] ? (size_t)c->dims[i] : 1, sizeof(int64_t));
    memset(c, 0, sizeof *c);
}

hl_status hl__ref_fail(hl__run *r, int code, uint32_t id, const char *fmt, ...)
{
    char msg[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hl__fail_node(r->g, r->err, code, id, hl_graph_node(r->g, id)->op, "%s", msg);
}

hl_status hl__ref_eval(hl__run *r, uint32_t id, hl_expr e, int64_t z, int64_t *out,
                       const char *what)
{
    hl_status st = hl_e_eval(r->p, e, &r->env, z, out, &r->scratch);
    if (st == HL_OK) return HL_OK;
    st = hl__ref_fail(r, st, id, "%s: %.400s", what, r->scratch.msg);
    lm_err_clear(&r->scratch);
    return st;
}

hl_status hl__ref_eval_dim(hl__run *r, uint32_t node, hl_expr e, int64_t *out, const char *what)
{
    hl_status st = hl__ref_eval(r, node, e, 0, out, what);
    if (st) return st;
    if (*out < 0)
        return hl__ref_fail(r, HL_ERR_RUNTIME, node, "%s is negative (%" PRId64 ")", what, *out);
    return HL_OK;
}

/* Whether e is c + k*z for some c, k free of z (z appears only in sums and in products
 * whose other factors do not contain z). */
static bool linear_in_z(const hl_expr_pool *p, hl_expr e)
{
    if (!hl_e_has_z(p, e)) return true;
    hl_expr_node n = hl_e_get(p, e);
    switch (n.kind) {
    case HL_E_Z:
        return true;
    case HL_E_ADD:
    case HL_E_SUB:
        return linear_in_z(p, n.a) && linear_in_z(p, n.b);
    case HL_E_MUL:
        if (hl_e_has_z(p, n.a) && hl_e_has_z(p, n.b)) return false;
        return linear_in_z(p, n.a) && linear_in_z(p, n.b);
    default:
        return false;
    }
}

/* tab[i] = stride[z := i] for i < n, and the table's least and greatest entry in *mn,
 * *mx. A linear stride is evaluated twice and the table filled by addition (checked for
 * overflow), its extremes at its ends; any other is evaluated at every i. */
static hl_status fill_table(hl__run *r, uint32_t node, hl_expr stride, int64_t n, int64_t *tab,
                            int64_t *mn, int64_t *mx)
{
    *mn = *mx = 0;
    if (n > 2 && linear_in_z(r->p, stride)) {
        int64_t c0, c1, k, last;
        hl_status st = hl__ref_eval(r, node, stride, 0, &c0, "a view stride");
        if (!st) st = hl__ref_eval(r, node, stride, 1, &c1, "a view stride");
        if (st) return st;
        if (!__builtin_sub_overflow(c1, c0, &k) && !__builtin_mul_overflow(k, n - 1, &last) &&
            !__builtin_add_overflow(c0, last, &last)) {
            for (int64_t i = 0; i < n; i++)
                tab[i] = c0 + i * k;
            *mn = c0 < last ? c0 : last;
            *mx = c0 < last ? last : c0;
            return HL_OK;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        hl_status st = hl__ref_eval(r, node, stride, i, &tab[i], "a view stride");
        if (st) return st;
        if (i == 0 || tab[i] < *mn) *mn = tab[i];
        if (i == 0 || tab[i] > *mx) *mx = tab[i];
    }
    return HL_OK;
}

/* Builds the tables of input `which` of node `node` and checks every position it can
 * reach lies inside the producer's buffer. */
hl_status hl__ref_make_cview(hl__run *r, uint32_t node, uint32_t which, hl__cview *c)
{
    const hl_node *nd = hl_graph_node(r->g, node);
    const hl_view *v = &nd->in[which].view;
    const hl__buf *src = &r->bufs[nd->in[which].node];
    memset(c, 0, sizeof *c);
    c->rec = &r->rec;
    int64_t lo = 0, hi = 0;
    bool empty = false;
    for (uint32_t d = 0; d < v->ndim; d++) {
        hl_status st = hl__ref_eval_dim(r, node, v->dims[d], &c->dims[d], "a view dim");
        if (st) return hl__ref_cview_free(c), st;
        c->ndim = d + 1;
        int64_t n = c->dims[d];
        if (n == 0) empty = true;
        c->tab[d] = hl__rec_alloc(c->rec, n ? (size_t)n : 1, sizeof(int64_t), n == 0);
        if (!c->tab[d]) {
            hl__ref_cview_free(c);
            return hl__ref_fail(r, HL_ERR_NOMEM, node, "out of memory for a view's positions");
        }
        int64_t mn, mx;
        hl_status st2 = fill_table(r, node, v->strides[d], n, c->tab[d], &mn, &mx);
        if (st2) {
            hl__ref_cview_free(c);
            return st2;
        }
        if (__builtin_add_overflow(lo, mn, &lo) || __builtin_add_overflow(hi, mx, &hi)) {
            hl__ref_cview_free(c);
            return hl__ref_fail(r, HL_ERR_RUNTIME, node, "view positions overflow");
        }
    }
    c->ndim = v->ndim;
    if (!hl__ref_numel_of(c->ndim, c->dims, &c->numel)) {
        hl__ref_cview_free(c);
        return hl__ref_fail(r, HL_ERR_RUNTIME, node, "view is too large");
    }
    if (!empty && (lo < 0 || (uint64_t)hi >= (uint64_t)src->n)) {
        hl__ref_cview_free(c);
        return hl__ref_fail(r, HL_ERR_RUNTIME, node,
                            "input %u's view reaches positions %" PRId64 "..%" PRId64
                            " of node %u, which has %zu elements",
                            which, lo, hi, nd->in[which].node, src->n);
    }
    return HL_OK;
}

hl_status hl__ref_alloc_out(hl__run *r, uint32_t id, hl__buf *b)
{
    const hl_node *nd = hl_graph_node(r->g, id);
    memset(b, 0, sizeof *b);
    b->dt = nd->dtype;
    b->ndim = nd->ndim;
    for (uint32_t d = 0; d < nd->ndim; d++) {
        hl_status st = hl__ref_eval_dim(r, id, nd->shape[d], &b->dims[d], "a dim of its shape");
        if (st) return st;
    }
    if (!hl__ref_numel_of(b->ndim, b->dims, &b->n))
        return hl__ref_fail(r, HL_ERR_RUNTIME, id, "result is too large");
    b->data = hl__rec_alloc(&r->rec, b->n, hl_dtype_size(b->dt), true);
    if (!b->data) return hl__ref_fail(r, HL_ERR_NOMEM, id, "out of memory for %zu elements", b->n);
    b->owned = true;
    return HL_OK;
}
