/* runtime.c - the CPU reference interpreter: the oracle every backend is checked against.
 *
 * Each node's result is a contiguous buffer in its dtype's storage format. Nodes run in
 * id order (a topological order). Inputs read their producer through a view; a view is
 * turned into per-dim offset tables (offset_d[i] = stride_d[z := i]), so reading a
 * strided tensor costs one table lookup per dim change, and every position a view can
 * produce is bounds-checked once, up front, from the tables' minima and maxima.
 *
 * Arithmetic: f32 for float dtypes, each result rounded to the node's storage format;
 * wrapping 32-bit for Int, wrapping 64-bit for I64. Sums accumulate in index order, so
 * the results are the same bits on every run. A buffer is freed after its last reader. */
#include "expr_int.h"

#include <inttypes.h>
#include <math.h>

/* ---- tensors ---- */

static bool numel_of(uint32_t ndim, const int64_t *dims, size_t *out)
{
    size_t n = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        if (dims[i] < 0) return false;
        if (dims[i] && n > SIZE_MAX / (size_t)dims[i]) return false;
        n *= (size_t)dims[i];
    }
    *out = n;
    return true;
}

hl_status hl_tensor_init(hl_tensor *t, hl_dtype dtype, uint32_t ndim, const int64_t *dims,
                         hl_error *err)
{
    if ((unsigned)dtype >= HL_DTYPE_COUNT || ndim > HL_MAX_DIMS)
        return hl_error_set(err, HL_ERR_ARG, HL_NONE, "tensor: bad dtype or %u dims", ndim);
    size_t n;
    if (!numel_of(ndim, dims, &n))
        return hl_error_set(err, HL_ERR_ARG, HL_NONE, "tensor: negative or overflowing dims");
    void *d = hl__zalloc(n, hl_dtype_size(dtype));
    if (!d)
        return hl_error_set(err, HL_ERR_NOMEM, HL_NONE, "tensor: out of memory for %zu elements",
                            n);
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->ndim = ndim;
    for (uint32_t i = 0; i < ndim; i++)
        t->dims[i] = dims[i];
    t->numel = n;
    t->data = d;
    return HL_OK;
}

void hl_tensor_fini(hl_tensor *t)
{
    if (!t) return;
    hl__free(t->data);
    memset(t, 0, sizeof *t);
}

static float ld_f(const void *d, hl_dtype t, size_t i)
{
    switch (t) {
    case HL_F32:
        return ((const float *)d)[i];
    case HL_F16:
        return hl_f16_to_f32(((const uint16_t *)d)[i]);
    case HL_BF16:
        return hl_bf16_to_f32(((const uint16_t *)d)[i]);
    case HL_F8E4M3:
        return hl_e4m3_to_f32(((const uint8_t *)d)[i]);
    case HL_F8E5M2:
        return hl_e5m2_to_f32(((const uint8_t *)d)[i]);
    case HL_INT:
        return (float)((const int32_t *)d)[i];
    case HL_I64:
        return (float)((const int64_t *)d)[i];
    case HL_BOOL:
        return ((const uint8_t *)d)[i] ? 1.0f : 0.0f;
    default:
        return 0.0f;
    }
}

static int64_t ld_i(const void *d, hl_dtype t, size_t i)
{
    switch (t) {
    case HL_INT:
        return ((const int32_t *)d)[i];
    case HL_I64:
        return ((const int64_t *)d)[i];
    case HL_BOOL:
        return ((const uint8_t *)d)[i] != 0;
    default: {
        float r = hl_round_to(HL_I64, ld_f(d, t, i));
        return r >= 9.2233720368547758e18f ? INT64_MAX : (int64_t)r;
    }
    }
}

/* Stores an f32 value, converting as a cast to t does. */
static void st_f(void *d, hl_dtype t, size_t i, float v)
{
    switch (t) {
    case HL_F32:
        ((float *)d)[i] = v;
        break;
    case HL_F16:
        ((uint16_t *)d)[i] = hl_f32_to_f16(v);
        break;
    case HL_BF16:
        ((uint16_t *)d)[i] = hl_f32_to_bf16(v);
        break;
    case HL_F8E4M3:
        ((uint8_t *)d)[i] = hl_f32_to_e4m3(v);
        break;
    case HL_F8E5M2:
        ((uint8_t *)d)[i] = hl_f32_to_e5m2(v);
        break;
    case HL_INT: { /* saturating, NaN -> 0, as cvt.rzi.s32.f32 */
        float r = hl_round_to(HL_INT, v);
        ((int32_t *)d)[i] = r >= 2147483648.0f ? INT32_MAX : (int32_t)r;
        break;
    }
    case HL_I64: {
        float r = hl_round_to(HL_I64, v);
        ((int64_t *)d)[i] = r >= 9.2233720368547758e18f ? INT64_MAX : (int64_t)r;
        break;
    }
    case HL_BOOL:
        ((uint8_t *)d)[i] = v != 0.0f;
        break;
    default:
        break;
    }
}

/* Stores an integer value into an integer dtype (Int wraps) or a float (rounded). */
static void st_i(void *d, hl_dtype t, size_t i, int64_t v)
{
    switch (t) {
    case HL_INT:
        ((int32_t *)d)[i] = (int32_t)(uint32_t)(uint64_t)v;
        break;
    case HL_I64:
        ((int64_t *)d)[i] = v;
        break;
    case HL_BOOL:
        ((uint8_t *)d)[i] = v != 0;
        break;
    default:
        st_f(d, t, i, (float)v);
        break;
    }
}

double hl_tensor_get(const hl_tensor *t, size_t i)
{
    if (t->dtype == HL_I64) return (double)((const int64_t *)t->data)[i];
    if (t->dtype == HL_INT) return (double)((const int32_t *)t->data)[i];
    return (double)ld_f(t->data, t->dtype, i);
}

void hl_tensor_set(hl_tensor *t, size_t i, double v)
{
    if (t->dtype == HL_I64) {
        ((int64_t *)t->data)[i] = isnan(v)       ? 0
                                  : v >= 9.2e18  ? INT64_MAX
                                  : v <= -9.2e18 ? INT64_MIN
                                                 : (int64_t)v;
        return;
    }
    if (t->dtype == HL_INT) {
        ((int32_t *)t->data)[i] = isnan(v)             ? 0
                                  : v >= 2147483647.0  ? INT32_MAX
                                  : v <= -2147483648.0 ? INT32_MIN
                                                       : (int32_t)v;
        return;
    }
    st_f(t->data, t->dtype, i, (float)v); /* double -> f32 -> storage: two roundings */
}

/* ---- the run ---- */

typedef struct buf {
    hl_dtype dt;
    size_t n;
    void *data;
    bool owned;
    uint32_t ndim;
    int64_t dims[HL_MAX_DIMS];
} buf;

/* A view made concrete: dims and per-dim position tables. */
typedef struct cview {
    uint32_t ndim;
    int64_t dims[HL_MAX_DIMS];
    int64_t *tab[HL_MAX_DIMS];
    size_t numel;
} cview;

typedef struct run {
    const hl_graph *g;
    const hl_expr_pool *p;
    hl_env env;
    buf *bufs;
    hl_error *err;
    uint32_t *fused; /* fused[reduce id] = the Mul it absorbs, or HL_NONE */
} run;

static void cview_free(cview *c)
{
    for (uint32_t i = 0; i < c->ndim; i++)
        hl__free(c->tab[i]);
    memset(c, 0, sizeof *c);
}

static hl_status eval_dim(run *r, uint32_t node, hl_expr e, int64_t *out, const char *what)
{
    hl_status st = hl_e_eval(r->p, e, &r->env, 0, out, r->err);
    if (st) {
        char m[HL_ERROR_MSG];
        snprintf(m, sizeof m, "%s", r->err->msg);
        r->err->node = node;
        snprintf(r->err->msg, sizeof r->err->msg, "node %u (%s): %s: %.400s", node,
                 hl_op_name(hl_graph_node(r->g, node)->op), what, m);
        return st;
    }
    if (*out < 0)
        return hl_error_set(r->err, HL_ERR_RUNTIME, node,
                            "node %u (%s): %s is negative (%" PRId64 ")", node,
                            hl_op_name(hl_graph_node(r->g, node)->op), what, *out);
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

/* tab[i] = stride[z := i] for i < n. A linear stride is evaluated twice and the table
 * filled by addition (checked for overflow); any other is evaluated at every i. */
static hl_status fill_table(run *r, hl_expr stride, int64_t n, int64_t *tab)
{
    if (n > 2 && linear_in_z(r->p, stride)) {
        int64_t c0, c1, k, last;
        hl_status st = hl_e_eval(r->p, stride, &r->env, 0, &c0, r->err);
        if (!st) st = hl_e_eval(r->p, stride, &r->env, 1, &c1, r->err);
        if (st) return st;
        if (!__builtin_sub_overflow(c1, c0, &k) && !__builtin_mul_overflow(k, n - 1, &last) &&
            !__builtin_add_overflow(c0, last, &last)) {
            for (int64_t i = 0; i < n; i++)
                tab[i] = c0 + i * k;
            return HL_OK;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        hl_status st = hl_e_eval(r->p, stride, &r->env, i, &tab[i], r->err);
        if (st) return st;
    }
    return HL_OK;
}

/* Builds the tables of input `which` of node `node` and checks every position it can
 * reach lies inside the producer's buffer. */
static hl_status make_cview(run *r, uint32_t node, uint32_t which, cview *c)
{
    const hl_node *nd = hl_graph_node(r->g, node);
    const hl_view *v = &nd->in[which].view;
    const buf *src = &r->bufs[nd->in[which].node];
    memset(c, 0, sizeof *c);
    int64_t lo = 0, hi = 0;
    bool empty = false;
    for (uint32_t d = 0; d < v->ndim; d++) {
        hl_status st = eval_dim(r, node, v->dims[d], &c->dims[d], "a view dim");
        if (st) return cview_free(c), st;
        c->ndim = d + 1;
        int64_t n = c->dims[d];
        if (n == 0) empty = true;
        c->tab[d] = hl__zalloc(n ? (size_t)n : 1, sizeof(int64_t));
        if (!c->tab[d]) {
            cview_free(c);
            return hl_error_set(r->err, HL_ERR_NOMEM, node, "node %u: out of memory", node);
        }
        int64_t mn = 0, mx = 0;
        hl_status st2 = fill_table(r, v->strides[d], n, c->tab[d]);
        if (st2) {
            cview_free(c);
            r->err->node = node;
            return st2;
        }
        for (int64_t i = 0; i < n; i++) {
            if (i == 0 || c->tab[d][i] < mn) mn = c->tab[d][i];
            if (i == 0 || c->tab[d][i] > mx) mx = c->tab[d][i];
        }
        if (__builtin_add_overflow(lo, mn, &lo) || __builtin_add_overflow(hi, mx, &hi)) {
            cview_free(c);
            return hl_error_set(r->err, HL_ERR_RUNTIME, node, "node %u: view positions overflow",
                                node);
        }
    }
    c->ndim = v->ndim;
    if (!numel_of(c->ndim, c->dims, &c->numel)) {
        cview_free(c);
        return hl_error_set(r->err, HL_ERR_RUNTIME, node, "node %u: view is too large", node);
    }
    if (!empty && (lo < 0 || (uint64_t)hi >= (uint64_t)src->n)) {
        cview_free(c);
        return hl_error_set(r->err, HL_ERR_RUNTIME, node,
                            "node %u (%s): input %u's view reaches positions %" PRId64 "..%" PRId64
                            " of node %u, which has %zu elements",
                            node, hl_op_name(nd->op), which, lo, hi, nd->in[which].node, src->n);
    }
    return HL_OK;
}

/* Row-major walk over a cview: pos is the buffer position of the current element. */
typedef struct walk {
    const cview *c;
    int64_t coord[HL_MAX_DIMS];
    int64_t pos;
} walk;

static void walk_init(walk *w, const cview *c)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    if (c->numel)
        for (uint32_t d = 0; d < c->ndim; d++)
            w->pos += c->tab[d][0];
}

static void walk_next(walk *w)
{
    const cview *c = w->c;
    for (uint32_t d = c->ndim; d-- > 0;) {
        int64_t i = w->coord[d];
        if (i + 1 < c->dims[d]) {
            w->pos += c->tab[d][i + 1] - c->tab[d][i];
            w->coord[d] = i + 1;
            return;
        }
        w->pos += c->tab[d][0] - c->tab[d][i];
        w->coord[d] = 0;
    }
}

/* Position of logical (row-major) element k of c. */
static int64_t cview_pos(const cview *c, int64_t k)
{
    int64_t pos = 0;
    for (uint32_t d = c->ndim; d-- > 0;) {
        int64_t n = c->dims[d];
        pos += c->tab[d][k % n];
        k /= n;
    }
    return pos;
}

static hl_status alloc_out(run *r, uint32_t id, buf *b)
{
    const hl_node *nd = hl_graph_node(r->g, id);
    memset(b, 0, sizeof *b);
    b->dt = nd->dtype;
    b->ndim = nd->ndim;
    for (uint32_t d = 0; d < nd->ndim; d++) {
        hl_status st = eval_dim(r, id, nd->shape[d], &b->dims[d], "a dim of its shape");
        if (st) return st;
    }
    if (!numel_of(b->ndim, b->dims, &b->n))
        return hl_error_set(r->err, HL_ERR_RUNTIME, id, "node %u: result is too large", id);
    b->data = hl__zalloc(b->n, hl_dtype_size(b->dt));
    if (!b->data)
        return hl_error_set(r->err, HL_ERR_NOMEM, id,
                            "node %u (%s): out of memory for %zu elements", id, hl_op_name(nd->op),
                            b->n);
    b->owned = true;
    return HL_OK;
}

static bool is_intlike(hl_dtype t)
{
    return t == HL_INT || t == HL_I64 || t == HL_BOOL;
}

static float un_op(hl_op op, float x)
{
    switch (op) {
    case HL_OP_EXP2:
        return exp2f(x);
    case HL_OP_LOG2:
        return log2f(x);
    case HL_OP_SIN:
        return sinf(x);
    case HL_OP_RECIP:
        return 1.0f / x;
    case HL_OP_SQRT:
        return sqrtf(x);
    default:
        return x;
    }
}

/* f32 -> bf16 -> f32, round to nearest even, as hl__bf16_dec(hl__bf16_enc(x)) gives it
 * bit for bit (a NaN becomes the canonical quiet NaN with its sign), written with a
 * select instead of a branch so that the loops using it vectorise. */
static inline float bf16_round_fast(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    uint32_t qnan = (u & 0x80000000u) | 0x7FC00000u;
    u = (u & 0x7FFFFFFFu) > 0x7F800000u ? qnan : rounded;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rows in a batch of the matmul layout (see exec_fused). */
enum { MM_ROWS = 8 };

/* acc[q][j] = sum over k of a[bas[q] + along_a[k] + ta0] * b[bb + along_b[k] + tb0 + j],
 * each product rounded to dt (F32 or BF16) as the Mul would store it, k in order. */
static void mm_rows(const void *a, const void *b, hl_dtype dt, const int64_t *bas, size_t cnt,
                    int64_t bb, const int64_t *along_a, const int64_t *along_b, int64_t len,
                    int64_t ta0, int64_t tb0, int64_t n, float *acc)
{
    for (size_t i = 0; i < cnt * (size_t)n; i++)
        acc[i] = 0.0f;
    for (int64_t k = 0; k < len; k++) {
        if (dt == HL_F32) {
            const float *rb = (const float *)b + bb + along_b[k] + tb0;
            for (size_t q = 0; q < cnt; q++) {
                const float x = ((const float *)a)[bas[q] + along_a[k] + ta0];
                float *aq = acc + q * (size_t)n;
                for (int64_t j = 0; j < n; j++)
                    aq[j] += x * rb[j];
            }
        } else {
            const uint16_t *rb = (const uint16_t *)b + bb + along_b[k] + tb0;
            for (size_t q = 0; q < cnt; q++) {
                const float x = hl__bf16_dec(((const uint16_t *)a)[bas[q] + along_a[k] + ta0]);
                float *aq = acc + q * (size_t)n;
                for (int64_t j = 0; j < n; j++)
                    aq[j] += bf16_round_fast(x * hl__bf16_dec(rb[j]));
            }
        }
    }
}

/* As mm_rows, with b already decoded into packed[k * n + j]. */
static void mm_rows_packed(const void *a, hl_dtype dt, const int64_t *bas, size_t cnt,
                           const int64_t *along_a, int64_t ta0, const float *packed, int64_t len,
                           int64_t n, float *acc)
{
    for (size_t i = 0; i < cnt * (size_t)n; i++)
        acc[i] = 0.0f;
    for (int64_t k = 0; k < len; k++) {
        const float *rb = packed + k * n;
        for (size_t q = 0; q < cnt; q++) {
            float *aq = acc + q * (size_t)n;
            if (dt == HL_F32) {
                const float x = ((const float *)a)[bas[q] + along_a[k] + ta0];
                for (int64_t j = 0; j < n; j++)
                    aq[j] += x * rb[j];
            } else {
                const float x = hl__bf16_dec(((const uint16_t *)a)[bas[q] + along_a[k] + ta0]);
                for (int64_t j = 0; j < n; j++)
                    aq[j] += bf16_round_fast(x * rb[j]);
            }
        }
    }
}

/* A SumReduce / MaxReduce reading a Mul that nothing else reads, through a contiguous
 * view of the Mul's own shape, runs as one loop: each product is rounded to the Mul's
 * dtype exactly as the separate Mul would store it, then accumulated in the same order.
 * The result is bit-identical to running the two nodes apart, without materialising the
 * product (a matmul's [m, n, k] broadcast product). */
static hl_status exec_fused(run *r, uint32_t id, uint32_t mul)
{
    const hl_node *nd = hl_graph_node(r->g, id);
    const hl_node *mn = hl_graph_node(r->g, mul);
    buf *out = &r->bufs[id];
    hl_status st;
    if ((st = alloc_out(r, id, out))) return st;
    cview cv[2];
    memset(cv, 0, sizeof cv);
    if ((st = make_cview(r, mul, 0, &cv[0]))) return st;
    if ((st = make_cview(r, mul, 1, &cv[1]))) {
        cview_free(&cv[0]);
        return st;
    }
    /* Rows: the output's last dim (input dim od) is swept innermost for each k, so a
     * matmul streams through b's rows instead of striding down its columns. Each output
     * element still receives its products in k order, so the sums are the same bits. */
    const buf *a = &r->bufs[mn->in[0].node], *b = &r->bufs[mn->in[1].node];
    uint32_t ax = nd->axis;
    int od = -1;
    for (uint32_t d = cv[0].ndim; d-- > 0;)
        if (d != ax) {
            od = (int)d;
            break;
        }
    static const int64_t zero = 0;
    int64_t len = cv[0].dims[ax], n = od >= 0 ? cv[0].dims[od] : 1;
    const int64_t *along_a = cv[0].tab[ax], *along_b = cv[1].tab[ax];
    const int64_t *ta = od >= 0 ? cv[0].tab[od] : &zero, *tb = od >= 0 ? cv[1].tab[od] : &zero;
    /* the matmul layout: a constant along the row (ta[j] all equal), b contiguous along it
       (tb[j] = tb[0] + j); its inner loop needs no index tables and vectorises */
    bool mm_shape = true, ta_const = true;
    for (int64_t j = 1; j < n && ta_const; j++) {
        ta_const = ta[j] == ta[0];
        mm_shape = mm_shape && ta_const && tb[j] == tb[0] + j;
    }
    cview oa = cv[0], ob = cv[1];
    oa.dims[ax] = ob.dims[ax] = 1;
    if (od >= 0) oa.dims[od] = ob.dims[od] = 1;
    size_t rows = n ? out->n / (size_t)n : 0;
    oa.numel = ob.numel = rows;
    bool isum = nd->op == HL_OP_SUM_REDUCE;
    hl_dtype dt = mn->dtype;
    bool ints = is_intlike(dt);
    float *facc = ints ? NULL : hl__alloc(n ? (size_t)n * MM_ROWS : 1, sizeof(float));
    int64_t *iacc = ints ? hl__alloc(n ? (size_t)n : 1, sizeof(int64_t)) : NULL;
    if (!facc && !iacc) {
        cview_free(&cv[0]);
        cview_free(&cv[1]);
        return hl_error_set(r->err, HL_ERR_NOMEM, id, "node %u: out of memory", id);
    }
    walk wa, wb;
    walk_init(&wa, &oa);
    walk_init(&wb, &ob);
    /* With a constant along the row but b in another layout (a transposed b, as in
       q k^T), b is packed once per distinct b base into packed[k][j] (decoded to f32,
       exact) and the same batched kernel runs on the packed copy. */
    bool batched = !ints && isum && ta_const && (dt == HL_F32 || dt == HL_BF16);
    float *packed = NULL;
    int64_t packed_bb = 0;
    bool have_packed = false;
    if (batched && !mm_shape) {
        packed = hl__alloc((size_t)(len ? len : 1) * (size_t)(n ? n : 1), sizeof(float));
        if (!packed) {
            hl__free(facc);
            cview_free(&cv[0]);
            cview_free(&cv[1]);
            return hl_error_set(r->err, HL_ERR_NOMEM, id, "node %u: out of memory", id);
        }
    }
    for (size_t row = 0; row < rows; row++, walk_next(&wa), walk_next(&wb)) {
        int64_t ba = wa.pos - (len ? along_a[0] : 0) - ta[0];
        int64_t bb = wb.pos - (len ? along_b[0] : 0) - tb[0];
        if (batched) {
            /* up to MM_ROWS consecutive rows reading the same b share each of its rows, so
               b streams from memory once per batch instead of once per row */
            int64_t bas[MM_ROWS];
            size_t cnt = 0, row0 = row;
            bas[cnt++] = ba;
            while (cnt < MM_ROWS && row + 1 < rows) {
                walk wa2 = wa, wb2 = wb;
                walk_next(&wa2);
                walk_next(&wb2);
                if (wb2.pos - (len ? along_b[0] : 0) - tb[0] != bb) break;
                wa = wa2;
                wb = wb2;
                row++;
                bas[cnt++] = wa.pos - (len ? along_a[0] : 0) - ta[0];
            }
            if (mm_shape) {
                mm_rows(a->data, b->data, dt, bas, cnt, bb, along_a, along_b, len, ta[0], tb[0], n,
                        facc);
            } else {
                if (!have_packed || packed_bb != bb) {
                    for (int64_t k = 0; k < len; k++)
                        for (int64_t j = 0; j < n; j++)
                            packed[k * n + j] =
                                ld_f(b->data, dt, (size_t)(bb + along_b[k] + tb[j]));
                    packed_bb = bb;
                    have_packed = true;
                }
                mm_rows_packed(a->data, dt, bas, cnt, along_a, ta[0], packed, len, n, facc);
            }
            for (size_t q = 0; q < cnt; q++)
                for (int64_t j = 0; j < n; j++)
                    st_f(out->data, out->dt, (row0 + q) * (size_t)n + (size_t)j,
                         facc[q * (size_t)n + (size_t)j]);
            continue;
        }
        if (ints) {
            int64_t init = isum ? 0 : (dt == HL_INT ? INT32_MIN : INT64_MIN);
            for (int64_t j = 0; j < n; j++)
                iacc[j] = init;
            for (int64_t k = 0; k < len; k++) {
                int64_t ka = ba + along_a[k], kb = bb + along_b[k];
                for (int64_t j = 0; j < n; j++) {
                    int64_t x = ld_i(a->data, dt, (size_t)(ka + ta[j]));
                    int64_t y = ld_i(b->data, dt, (size_t)(kb + tb[j]));
                    int64_t v = (int64_t)((uint64_t)x * (uint64_t)y);
                    if (dt == HL_INT) v = (int32_t)(uint32_t)(uint64_t)v; /* as the Mul stores it */
                    if (isum)
                        iacc[j] = (int64_t)((uint64_t)iacc[j] + (uint64_t)v);
                    else if (v > iacc[j])
                        iacc[j] = v;
                }
            }
            for (int64_t j = 0; j < n; j++)
                st_i(out->data, out->dt, row * (size_t)n + (size_t)j, iacc[j]);
            continue;
        }
        for (int64_t j = 0; j < n; j++)
            facc[j] = isum ? 0.0f : -INFINITY;
        if (isum && dt == HL_F32) { /* without per-element dispatch */
            const float *pa = a->data, *pb = b->data;
            for (int64_t k = 0; k < len; k++) {
                const float *ra = pa + ba + along_a[k], *rb = pb + bb + along_b[k];
                for (int64_t j = 0; j < n; j++)
                    facc[j] += ra[ta[j]] * rb[tb[j]];
            }
        } else if (isum && dt == HL_BF16) {
            const uint16_t *pa = a->data, *pb = b->data;
            for (int64_t k = 0; k < len; k++) {
                const uint16_t *ra = pa + ba + along_a[k], *rb = pb + bb + along_b[k];
                for (int64_t j = 0; j < n; j++)
                    facc[j] += hl__bf16_dec(
                        hl__bf16_enc(hl__bf16_dec(ra[ta[j]]) * hl__bf16_dec(rb[tb[j]])));
            }
        } else {
            for (int64_t k = 0; k < len; k++) {
                int64_t ka = ba + along_a[k], kb = bb + along_b[k];
                for (int64_t j = 0; j < n; j++) {
                    float v = ld_f(a->data, dt, (size_t)(ka + ta[j])) *
                              ld_f(b->data, dt, (size_t)(kb + tb[j]));
                    if (dt != HL_F32) v = hl_round_to(dt, v);
                    if (isum)
                        facc[j] += v;
                    else if (!isnan(facc[j]) && (isnan(v) || v > facc[j]))
                        facc[j] = v;
                }
            }
        }
        for (int64_t j = 0; j < n; j++)
            st_f(out->data, out->dt, row * (size_t)n + (size_t)j, facc[j]);
    }
    hl__free(packed);
    hl__free(facc);
    hl__free(iacc);
    cview_free(&cv[0]);
    cview_free(&cv[1]);
    return HL_OK;
}

/* A float reduction whose reduced dim is not contiguous (a column sum) runs row by row
 * with the output's last dim innermost, so memory is read in order; each output element
 * still adds its inputs in index order, so the bits are those of the simple loop.
 * Returns HL_ERR_VIEW (and does nothing) when the layout does not call for it. */
static hl_status reduce_rows(run *r, uint32_t id, const cview *c, const buf *in, buf *out,
                             bool isum)
{
    uint32_t ax = hl_graph_node(r->g, id)->axis;
    int64_t len = c->dims[ax];
    const int64_t *along = c->tab[ax];
    bool unit = true;
    for (int64_t k = 1; k < len && unit; k++)
        unit = along[k] == along[0] + k;
    int od = -1;
    for (uint32_t d = c->ndim; d-- > 0;)
        if (d != ax) {
            od = (int)d;
            break;
        }
    if (unit || od < 0 || c->dims[od] < 2 || len < 2) return HL_ERR_VIEW;
    int64_t n = c->dims[od];
    const int64_t *tj = c->tab[od];
    float *acc = hl__alloc((size_t)n, sizeof(float));
    if (!acc) return hl_error_set(r->err, HL_ERR_NOMEM, id, "node %u: out of memory", id);
    cview rows_view = *c;
    rows_view.dims[ax] = rows_view.dims[od] = 1;
    size_t rows = out->n / (size_t)n;
    rows_view.numel = rows;
    walk w;
    walk_init(&w, &rows_view);
    hl_dtype dt = in->dt;
    for (size_t row = 0; row < rows; row++, walk_next(&w)) {
        int64_t base = w.pos - along[0] - tj[0];
        for (int64_t j = 0; j < n; j++)
            acc[j] = isum ? 0.0f : -INFINITY;
        for (int64_t k = 0; k < len; k++) {
            int64_t kb = base + along[k];
            if (isum && dt == HL_F32) {
                const float *p = (const float *)in->data + kb;
                for (int64_t j = 0; j < n; j++)
                    acc[j] += p[tj[j]];
                continue;
            }
            for (int64_t j = 0; j < n; j++) {
                float v = ld_f(in->data, dt, (size_t)(kb + tj[j]));
                if (isum)
                    acc[j] += v;
                else if (!isnan(acc[j]) && (isnan(v) || v > acc[j]))
                    acc[j] = v;
            }
        }
        for (int64_t j = 0; j < n; j++)
            st_f(out->data, out->dt, row * (size_t)n + (size_t)j, acc[j]);
    }
    hl__free(acc);
    return HL_OK;
}

static hl_status exec_node(run *r, uint32_t id)
{
    const hl_node *nd = hl_graph_node(r->g, id);
    buf *out = &r->bufs[id];
    hl_status st;
    if (nd->op == HL_OP_INPUT) return HL_OK; /* bound before the loop */
    if (r->fused[id] != HL_NONE) return exec_fused(r, id, r->fused[id]);
    if ((st = alloc_out(r, id, out))) return st;
    cview cv[HL_MAX_INPUTS];
    memset(cv, 0, sizeof cv);
    uint32_t made = 0;
    for (; made < nd->n_in; made++)
        if ((st = make_cview(r, id, made, &cv[made]))) goto done;
    const buf *in0 = nd->n_in > 0 ? &r->bufs[nd->in[0].node] : NULL;
    const buf *in1 = nd->n_in > 1 ? &r->bufs[nd->in[1].node] : NULL;
    switch (nd->op) {
    case HL_OP_CONSTANT:
        st_f(out->data, HL_F32, 0, nd->constant);
        break;
    case HL_OP_IOTA:
        for (size_t i = 0; i < out->n; i++) {
            int64_t v;
            if ((st = hl_e_eval(r->p, nd->iota_expr, &r->env, (int64_t)i, &v, r->err))) {
                r->err->node = id;
                goto done;
            }
            if (v < INT32_MIN || v > INT32_MAX) {
                st = hl_error_set(r->err, HL_ERR_RUNTIME, id,
                                  "node %u (Iota): value %" PRId64 " at %zu does not fit int", id,
                                  v, i);
                goto done;
            }
            ((int32_t *)out->data)[i] = (int32_t)v;
        }
        break;
    case HL_OP_OUTPUT:
    case HL_OP_CAST:
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT: {
        walk w;
        walk_init(&w, &cv[0]);
        bool ints = is_intlike(in0->dt) && is_intlike(out->dt);
        for (size_t i = 0; i < out->n; i++, walk_next(&w)) {
            if (ints)
                st_i(out->data, out->dt, i, ld_i(in0->data, in0->dt, (size_t)w.pos));
            else if (is_intlike(in0->dt) && !is_intlike(out->dt))
                st_f(out->data, out->dt, i, (float)ld_i(in0->data, in0->dt, (size_t)w.pos));
            else
                st_f(out->data, out->dt, i, un_op(nd->op, ld_f(in0->data, in0->dt, (size_t)w.pos)));
        }
        break;
    }
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN: {
        walk wa, wb;
        walk_init(&wa, &cv[0]);
        walk_init(&wb, &cv[1]);
        hl_dtype dt = in0->dt;
        for (size_t i = 0; i < out->n; i++, walk_next(&wa), walk_next(&wb)) {
            if (is_intlike(dt)) {
                int64_t a = ld_i(in0->data, dt, (size_t)wa.pos),
                        b = ld_i(in1->data, dt, (size_t)wb.pos);
                int64_t v;
                switch (nd->op) {
                case HL_OP_ADD:
                    v = (int64_t)((uint64_t)a + (uint64_t)b);
                    break;
                case HL_OP_MUL:
                    v = (int64_t)((uint64_t)a * (uint64_t)b);
                    break;
                case HL_OP_MOD:
                    if (b == 0) {
                        st = hl_error_set(r->err, HL_ERR_RUNTIME, id,
                                          "node %u (Mod): integer modulo by zero at element %zu",
                                          id, i);
                        goto done;
                    }
                    if (dt == HL_INT)
                        v = (b == -1) ? 0 : (int64_t)((int32_t)a % (int32_t)b);
                    else
                        v = (b == -1) ? 0 : a % b;
                    break;
                default:
                    v = a < b;
                    break;
                }
                st_i(out->data, out->dt, i, v);
            } else {
                float a = ld_f(in0->data, dt, (size_t)wa.pos),
                      b = ld_f(in1->data, dt, (size_t)wb.pos);
                switch (nd->op) {
                case HL_OP_ADD:
                    st_f(out->data, out->dt, i, a + b);
                    break;
                case HL_OP_MUL:
                    st_f(out->data, out->dt, i, a * b);
                    break;
                case HL_OP_MOD:
                    st_f(out->data, out->dt, i, fmodf(a, b));
                    break;
                default:
                    ((uint8_t *)out->data)[i] = a < b;
                    break;
                }
            }
        }
        break;
    }
    case HL_OP_GATHER: {
        walk w;
        walk_init(&w, &cv[0]);
        size_t es = hl_dtype_size(out->dt);
        for (size_t i = 0; i < out->n; i++, walk_next(&w)) {
            int64_t k = ((const int32_t *)in0->data)[w.pos];
            if (k < 0 || (uint64_t)k >= cv[1].numel) {
                st = hl_error_set(r->err, HL_ERR_RUNTIME, id,
                                  "node %u (Gather): index %" PRId64
                                  " at position %zu is out of range "
                                  "for data of %zu elements",
                                  id, k, i, cv[1].numel);
                goto done;
            }
            memcpy((char *)out->data + i * es,
                   (const char *)in1->data + (size_t)cview_pos(&cv[1], k) * es, es);
        }
        break;
    }
    case HL_OP_SCATTER: {
        const buf *src = &r->bufs[nd->in[2].node];
        size_t es = hl_dtype_size(out->dt);
        walk w, wi, ws;
        walk_init(&w, &cv[0]);
        for (size_t i = 0; i < out->n; i++, walk_next(&w))
            memcpy((char *)out->data + i * es, (const char *)in0->data + (size_t)w.pos * es, es);
        walk_init(&wi, &cv[1]);
        walk_init(&ws, &cv[2]);
        for (size_t i = 0; i < cv[1].numel; i++, walk_next(&wi), walk_next(&ws)) {
            int64_t k = ((const int32_t *)in1->data)[wi.pos];
            if (k < 0 || (uint64_t)k >= out->n) {
                st = hl_error_set(r->err, HL_ERR_RUNTIME, id,
                                  "node %u (Scatter): index %" PRId64
                                  " at position %zu is out of range "
                                  "for a destination of %zu elements",
                                  id, k, i, out->n);
                goto done;
            }
            memcpy((char *)out->data + (size_t)k * es,
                   (const char *)src->data + (size_t)ws.pos * es, es);
        }
        break;
    }
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE: {
        /* walk the view with the reduced dim held at 0, then run along it */
        cview outer = cv[0];
        uint32_t ax = nd->axis;
        int64_t len = cv[0].dims[ax];
        const int64_t *along = cv[0].tab[ax];
        outer.dims[ax] = 1;
        outer.numel = out->n;
        walk w;
        walk_init(&w, &outer);
        if (len == 0 && out->n) w.pos = 0; /* no element is read */
        bool isum = nd->op == HL_OP_SUM_REDUCE;
        hl_dtype dt = in0->dt;
        if (!is_intlike(dt) && (st = reduce_rows(r, id, &cv[0], in0, out, isum)) != HL_OK) {
            if (st == HL_ERR_VIEW)
                st = HL_OK; /* not that layout: the loop below */
            else
                goto done;
        } else if (!is_intlike(dt)) {
            break;
        }
        for (size_t i = 0; i < out->n; i++, walk_next(&w)) {
            int64_t base = len ? w.pos - along[0] : 0;
            if (is_intlike(dt)) {
                int64_t acc = isum ? 0 : (dt == HL_INT ? INT32_MIN : INT64_MIN);
                for (int64_t k = 0; k < len; k++) {
                    int64_t v = ld_i(in0->data, dt, (size_t)(base + along[k]));
                    if (isum)
                        acc = (int64_t)((uint64_t)acc + (uint64_t)v);
                    else if (v > acc)
                        acc = v;
                }
                st_i(out->data, out->dt, i, acc);
            } else {
                float acc = isum ? 0.0f : -INFINITY;
                for (int64_t k = 0; k < len; k++) {
                    float v = ld_f(in0->data, dt, (size_t)(base + along[k]));
                    if (isum)
                        acc += v;
                    else if (isnan(v) || v > acc || isnan(acc))
                        acc = isnan(acc) ? acc : v;
                }
                st_f(out->data, out->dt, i, acc);
            }
        }
        break;
    }
    default:
        break;
    }
    st = HL_OK;
done:
    for (uint32_t i = 0; i < made; i++)
        cview_free(&cv[i]);
    return st;
}

/* Whether view v (of reduce node id) reads every element of node mn's output once, in
 * row-major order: same dims as mn's shape and contiguous strides, checked on values. */
static hl_status reads_whole_contiguous(run *r, uint32_t id, const hl_view *v, const hl_node *mn,
                                        bool *out)
{
    *out = false;
    if (v->ndim != mn->ndim) return HL_OK;
    int64_t inner = 1;
    for (uint32_t d = v->ndim; d-- > 0;) {
        int64_t n, m;
        hl_status st;
        if ((st = eval_dim(r, id, v->dims[d], &n, "a view dim"))) return st;
        if ((st = eval_dim(r, id, mn->shape[d], &m, "a dim of its input's shape"))) return st;
        if (n != m) return HL_OK;
        for (int64_t i = 0; i < n; i++) {
            int64_t pos;
            if ((st = hl_e_eval(r->p, v->strides[d], &r->env, i, &pos, r->err))) {
                r->err->node = id;
                return st;
            }
            if (n > 1 && pos != i * inner) return HL_OK;
        }
        if (__builtin_mul_overflow(inner, n, &inner)) return HL_OK;
    }
    *out = true;
    return HL_OK;
}

hl_status hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
                 hl_tensor *outputs, hl_error *err)
{
    hl_error local;
    hl_error_clear(&local);
    if (!err) err = &local;
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvars = hl_var_count(p), n = hl_graph_node_count(g);
    uint32_t nout = hl_graph_output_count(g);
    int64_t *vals = hl__zalloc(nvars ? nvars : 1, sizeof(int64_t));
    bool *bound = hl__zalloc(nvars ? nvars : 1, sizeof(bool));
    buf *bufs = hl__zalloc(n ? n : 1, sizeof(buf));
    uint32_t *last = hl__alloc(n ? n : 1, sizeof(uint32_t));
    uint32_t *readers = hl__alloc(n ? n : 1, sizeof(uint32_t));
    uint32_t *fused = hl__alloc(n ? n : 1, sizeof(uint32_t));
    bool *skip = hl__alloc(n ? n : 1, sizeof(bool));
    hl_status st = HL_OK;
    if ((!outputs && nout) || (!inputs && hl_graph_input_count(g))) {
        st = hl_error_set(err, HL_ERR_ARG, HL_NONE,
                          "run: the graph has %u inputs and %u outputs; pass arrays for them",
                          hl_graph_input_count(g), nout);
        goto out;
    }
    for (uint32_t i = 0; i < nout; i++)
        memset(&outputs[i], 0, sizeof outputs[i]);
    if (!vals || !bound || !bufs || !last || !readers || !fused || !skip) {
        st = hl_error_set(err, HL_ERR_NOMEM, HL_NONE, "run: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        int64_t v = dim_values ? dim_values[i] : d->profile;
        if (v < d->lo || v > d->hi) {
            st = hl_error_set(err, HL_ERR_DIM, HL_NONE,
                              "run: dim '%s' = %" PRId64 " is outside its range [%" PRId64
                              ", %" PRId64 "]",
                              hl_var_name(p, d->var), v, d->lo, d->hi);
            goto out;
        }
        vals[d->var] = v;
        bound[d->var] = true;
    }
    run r = {g, p, {vals, bound, nvars}, bufs, err, fused};
    /* last reader of each node, to free buffers early; then the Mul+reduce fusions */
    for (uint32_t id = 0; id < n; id++) {
        last[id] = id;
        readers[id] = 0;
        fused[id] = HL_NONE;
        skip[id] = false;
    }
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        for (uint32_t i = 0; i < nd->n_in; i++) {
            last[nd->in[i].node] = id;
            readers[nd->in[i].node]++;
        }
    }
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        if (nd->op != HL_OP_SUM_REDUCE && nd->op != HL_OP_MAX_REDUCE) continue;
        uint32_t m = nd->in[0].node;
        const hl_node *mn = hl_graph_node(g, m);
        if (mn->op != HL_OP_MUL || readers[m] != 1) continue;
        bool contig;
        if ((st = reads_whole_contiguous(&r, id, &nd->in[0].view, mn, &contig))) goto out;
        if (!contig) continue;
        fused[id] = m;
        skip[m] = true;
        for (uint32_t i = 0; i < mn->n_in; i++) /* read by id now, not by m */
            if (last[mn->in[i].node] < id) last[mn->in[i].node] = id;
    }
    /* bind inputs */
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        uint32_t id = hl_graph_input(g, i);
        const hl_node *nd = hl_graph_node(g, id);
        const hl_tensor *t = &inputs[i];
        buf *b = &bufs[id];
        b->dt = nd->dtype;
        b->ndim = nd->ndim;
        for (uint32_t d = 0; d < nd->ndim; d++)
            if ((st = eval_dim(&r, id, nd->shape[d], &b->dims[d], "a dim of its shape"))) goto out;
        bool ok = t->dtype == nd->dtype && t->ndim == nd->ndim && t->data != NULL;
        for (uint32_t d = 0; ok && d < nd->ndim; d++)
            ok = t->dims[d] == b->dims[d];
        if (!ok) {
            char want[128] = "", got[128] = "";
            size_t lw = 0, lg = 0;
            for (uint32_t d = 0; d < nd->ndim && lw < sizeof want; d++)
                lw += (size_t)snprintf(want + lw, sizeof want - lw, "%s%" PRId64, d ? ", " : "",
                                       b->dims[d]);
            for (uint32_t d = 0; d < t->ndim && d < HL_MAX_DIMS && lg < sizeof got; d++)
                lg += (size_t)snprintf(got + lg, sizeof got - lg, "%s%" PRId64, d ? ", " : "",
                                       t->dims[d]);
            st = hl_error_set(err, HL_ERR_SHAPE, id,
                              "run: input '%s' (node %u) must be %s [%s]; given %s [%s]%s",
                              nd->name, id, hl_dtype_name(nd->dtype), want, hl_dtype_name(t->dtype),
                              got, t->data ? "" : " with no data");
            goto out;
        }
        numel_of(b->ndim, b->dims, &b->n);
        b->data = t->data;
        b->owned = false;
    }
    for (uint32_t id = 0; id < n; id++) {
        if (skip[id]) continue; /* a Mul run inside its reduce */
        if ((st = exec_node(&r, id))) goto out;
        const hl_node *nd = hl_graph_node(g, id);
        if (fused[id] != HL_NONE) nd = hl_graph_node(g, fused[id]); /* its inputs were read */
        for (uint32_t i = 0; i < nd->n_in; i++) { /* free inputs read for the last time */
            uint32_t src = nd->in[i].node;
            if (last[src] == id && bufs[src].owned && hl_graph_node(g, src)->op != HL_OP_OUTPUT) {
                hl__free(bufs[src].data);
                bufs[src].data = NULL;
            }
        }
    }
    for (uint32_t i = 0; i < nout; i++) {
        uint32_t id = hl_graph_output(g, i);
        buf *b = &bufs[id];
        hl_tensor *t = &outputs[i];
        t->dtype = b->dt;
        t->ndim = b->ndim;
        memcpy(t->dims, b->dims, sizeof t->dims);
        t->numel = b->n;
        t->data = b->data;
        b->data = NULL; /* ownership moves to the caller */
    }
out:
    if (bufs)
        for (uint32_t id = 0; id < n; id++)
            if (bufs[id].owned) hl__free(bufs[id].data);
    if (st && outputs)
        for (uint32_t i = 0; i < nout; i++)
            memset(&outputs[i], 0, sizeof outputs[i]);
    hl__free(vals);
    hl__free(bound);
    hl__free(bufs);
    hl__free(last);
    hl__free(readers);
    hl__free(fused);
    hl__free(skip);
    return st;
}
