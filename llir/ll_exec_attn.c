/* ll_exec_attn.c - KAttn and KAttnMask as the fused kernel computes them (ll_attn in
 * llir.h):
 *
 *   s[j] = scale * acc(q[i, .], k[j, .]) (+ mask[i, j]), -inf where causal and
 *          j > i + (skv - sq)
 *   o[i, c] = (sum_j e^(s[j] - m) v[j, c]) / (sum_j e^(s[j] - m)),  m = max_j s[j]
 *
 * per leading index. Every value is f32: the operands are read in the node's dtype
 * (a producer of another dtype is reinterpreted, ll__x_operand) and widened, each dot
 * product accumulates exact products with one rounding per term (fmaf, in d order, as a
 * tensor core or an FMA loop does), the softmax is f32 (expf), the weighted sum of v
 * accumulates in j order, and the result is rounded once to the node's dtype. A row
 * whose every key is masked (no key, or every score -inf) is 0. The kernel's tile
 * (block sizes, KV splits) changes only the order of the f32 sums, which the tolerance
 * of genome fuzzing covers (docs/llir.md, Attention). A view reaching outside its
 * operand's buffer is LM_ERUNTIME, as in the reference. */
#include "ll_exec_int.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* One evaluated view: per dim, the offset of every index (tab[i][0 .. dim[i])). */
typedef struct xview {
    uint32_t ndim;
    int64_t dim[HL_MAX_DIMS];
    int64_t *tab[HL_MAX_DIMS];
} xview;

static void xview_fini(xview *w)
{
    for (uint32_t i = 0; i < HL_MAX_DIMS; i++) {
        ll__free(w->tab[i]);
        w->tab[i] = NULL;
    }
}

static int eval(ll_exec *x, uint32_t id, hl_expr e, int64_t z, const char *name, int64_t *out)
{
    char what[240];
    ll__node_desc(x->g, id, what, sizeof what);
    size_t len = strlen(what);
    snprintf(what + len, sizeof what - len, ": attention's %s", name);
    return ll__hl_eval(x->p, e, &x->env, z, out, what, x->err) ? x->err->code : 0;
}

/* The offsets of view vw (input k, `have` elements) at every index; the farthest
 * position must lie inside the buffer. */
static int xview_init(ll_exec *x, uint32_t id, uint32_t k, const hl_view *vw, size_t have,
                      xview *w)
{
    static const char *names[] = {"q", "k", "v", "mask"};
    memset(w, 0, sizeof *w);
    w->ndim = vw->ndim;
    int64_t lo = 0, hi = 0;
    bool empty = false;
    for (uint32_t i = 0; i < vw->ndim; i++) {
        int rc = eval(x, id, vw->dims[i], 0, "view size", &w->dim[i]);
        if (rc) return rc;
        if (w->dim[i] <= 0) {
            empty = true;
            continue;
        }
        w->tab[i] = ll__alloc((size_t)w->dim[i], sizeof(int64_t));
        if (!w->tab[i]) return ll__fail_node(x->err, LM_ENOMEM, x->g, id, "out of memory");
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        for (int64_t z = 0; z < w->dim[i]; z++) {
            if ((rc = eval(x, id, vw->strides[i], z, "stride", &w->tab[i][z]))) return rc;
            mn = w->tab[i][z] < mn ? w->tab[i][z] : mn;
            mx = w->tab[i][z] > mx ? w->tab[i][z] : mx;
        }
        if (__builtin_add_overflow(lo, mn, &lo) || __builtin_add_overflow(hi, mx, &hi))
            return ll__fail_node(x->err, LM_ERUNTIME, x->g, id, "the %s view overflows", names[k]);
    }
    if (!empty && (lo < 0 || (uint64_t)hi >= (uint64_t)have))
        return ll__fail_node(x->err, LM_ERUNTIME, x->g, id,
                             "the %s view reaches positions %" PRId64 "..%" PRId64
                             " of a buffer of %zu elements",
                             names[k], lo, hi, have);
    return 0;
}

/* Operand k as f32 values (the caller frees *out). */
static int widen(ll_exec *x, uint32_t id, uint32_t k, float **out, size_t *count)
{
    const ll_node *n = ll_graph_node(x->g, id);
    return ll__x_operand_f32(x, id, n->in[k], n->in_dtype[k], out, count);
}

size_t ll__x_attn_work(const ll_exec *x, uint32_t id)
{
    const ll_node *n = ll_graph_node(x->g, id);
    size_t w = 0;
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t s = n->in[i];
        size_t b = x->numel[s] * 4 + ll__x_operand_bytes(x, s, n->in_dtype[i], x->numel[s]);
        w = w > SIZE_MAX - b ? SIZE_MAX : w + b;
    }
    /* one row of scores, and the view tables (bounded by the views' dims) */
    const int64_t *d = ll__x_dims(x, id);
    size_t row = n->ndim >= 2 ? (size_t)d[n->ndim - 2] + (size_t)d[n->ndim - 1] : 0;
    return w > SIZE_MAX - 64 * row ? SIZE_MAX : w + 64 * row;
}

/* The offset of lead index bh (flattened over dims [0, nl)) in view w. */
static int64_t lead_offset(const xview *w, uint32_t nl, int64_t bh)
{
    int64_t off = 0;
    for (uint32_t i = nl; i-- > 0;) {
        off += w->tab[i][bh % w->dim[i]];
        bh /= w->dim[i];
    }
    return off;
}

int ll__x_attn(ll_exec *x, uint32_t id)
{
    const ll_node *n = ll_graph_node(x->g, id);
    const ll_attn *at = &n->at;
    uint32_t nl = at->nlead;
    bool has_mask = n->n_in == 4;
    if (!ll_op_is_attn(n->op) || n->n_in != ll_op_get(n->op)->n_inputs || nl + 2 != n->ndim ||
        at->q.ndim != nl + 2 || at->k.ndim != nl + 2 || at->v.ndim != nl + 2 ||
        at->mask.ndim != (has_mask ? nl + 2 : 0u))
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "its attention fields do not fit the node (views, inputs)");
    int64_t sq, skv, d;
    int rc;
    if ((rc = eval(x, id, at->sq, 0, "Sq", &sq)) || (rc = eval(x, id, at->skv, 0, "Skv", &skv)) ||
        (rc = eval(x, id, at->d, 0, "D", &d)))
        return rc;
    float *op[4] = {NULL};
    size_t cnt[4] = {0};
    xview w[4];
    memset(w, 0, sizeof w);
    float *s = NULL, *acc = NULL;
    hl_tensor out;
    memset(&out, 0, sizeof out);
    const hl_view *vw[4] = {&at->q, &at->k, &at->v, &at->mask};
    for (uint32_t k = 0; k < n->n_in && !rc; k++) {
        rc = widen(x, id, k, &op[k], &cnt[k]);
        if (!rc) rc = xview_init(x, id, k, vw[k], cnt[k], &w[k]);
    }
    if (rc) goto done;
    int64_t nbh = 1;
    for (uint32_t i = 0; i < nl; i++)
        nbh *= w[0].dim[i];
    if ((uint64_t)(nbh * sq * d) != (uint64_t)x->numel[id]) {
        rc = ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                           "computes %" PRId64 " x %" PRId64 " x %" PRId64
                           " elements, but the node holds %zu",
                           nbh, sq, d, x->numel[id]);
        goto done;
    }
    s = ll__alloc(skv > 0 ? (size_t)skv : 1, sizeof(float));
    acc = ll__alloc(d > 0 ? (size_t)d : 1, sizeof(float));
    if (!s || !acc) {
        rc = ll__fail_node(x->err, LM_ENOMEM, x->g, id, "out of memory");
        goto done;
    }
    if (ll__hl_tensor_init(&out, n->dtype, n->ndim, ll__x_dims(x, id), x->err)) {
        rc = ll__fail_node(x->err, x->err->code, x->g, id, "allocating the result");
        goto done;
    }
    const float scale = (float)at->scale;
    size_t o = 0;
    for (int64_t bh = 0; bh < nbh; bh++) {
        int64_t qb = lead_offset(&w[0], nl, bh), kb = lead_offset(&w[1], nl, bh);
        int64_t vb = lead_offset(&w[2], nl, bh), mb = has_mask ? lead_offset(&w[3], nl, bh) : 0;
        for (int64_t i = 0; i < sq; i++) {
            float m = -INFINITY;
            for (int64_t j = 0; j < skv; j++) {
                float dot = 0.0f;
                for (int64_t c = 0; c < d; c++)
                    dot = fmaf(op[0][qb + w[0].tab[nl][i] + w[0].tab[nl + 1][c]],
                               op[1][kb + w[1].tab[nl][j] + w[1].tab[nl + 1][c]], dot);
                float t = scale * dot;
                if (has_mask) t = t + op[3][mb + w[3].tab[nl][i] + w[3].tab[nl + 1][j]];
                if (at->causal && j > i + (skv - sq)) t = -INFINITY;
                s[j] = t;
                if (isnan(t) || isnan(m))
                    m = NAN; /* a NaN score makes the row NaN, as in the graph */
                else if (t > m)
                    m = t;
            }
            for (int64_t c = 0; c < d; c++)
                acc[c] = 0.0f;
            if (!(m > -INFINITY) && !isnan(m)) { /* every key masked */
                for (int64_t c = 0; c < d; c++)
                    hl_tensor_set(&out, o++, 0.0);
                continue;
            }
            float l = 0.0f;
            for (int64_t j = 0; j < skv; j++) {
                float p = expf(s[j] - m);
                l += p;
                for (int64_t c = 0; c < d; c++)
                    acc[c] = fmaf(p, op[2][vb + w[2].tab[nl][j] + w[2].tab[nl + 1][c]], acc[c]);
            }
            for (int64_t c = 0; c < d; c++)
                hl_tensor_set(&out, o++, (double)(acc[c] / l));
        }
    }
    x->buf[id] = out;
    x->owned[id] = true;
done:
    for (uint32_t k = 0; k < 4; k++) {
        ll__free(op[k]);
        xview_fini(&w[k]);
    }
    ll__free(s);
    ll__free(acc);
    return rc;
}
