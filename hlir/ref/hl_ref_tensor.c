/* hl_ref_tensor.c - the reference runtime's tensors: contiguous buffers in a dtype's
 * storage format, element access as f64, and seeded random contents (the inputs of a
 * reference run: hl_graph_fill_input, by each input's initialisation). */
#include "ref/hl_ref_int.h"

hl_status hl_tensor_init(hl_tensor *t, hl_dtype dtype, uint32_t ndim, const int64_t *dims,
                         lm_err *err)
{
    if ((unsigned)dtype >= HL_DTYPE_COUNT || ndim > HL_MAX_DIMS)
        return hl__fail(err, HL_ERR_ARG, NULL, "tensor: bad dtype or %u dims", ndim);
    size_t n;
    if (!hl__ref_numel_of(ndim, dims, &n))
        return hl__fail(err, HL_ERR_ARG, NULL, "tensor: negative or overflowing dims");
    void *d = hl__zalloc(n, hl_dtype_size(dtype));
    if (!d) return hl__fail(err, HL_ERR_NOMEM, NULL, "tensor: out of memory for %zu elements", n);
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

double hl_tensor_get(const hl_tensor *t, size_t i)
{
    if (t->dtype == HL_I64) return (double)((const int64_t *)t->data)[i];
    if (t->dtype == HL_INT) return (double)((const int32_t *)t->data)[i];
    return (double)hl__ld_f(t->data, t->dtype, i);
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
    hl__st_f(t->data, t->dtype, i, (float)v); /* double -> f32 -> storage: two roundings */
}

/* Fills t from PCG32 (seed, stream): the same bytes on every machine. */
void hl_tensor_fill_random(hl_tensor *t, uint64_t seed, uint64_t stream)
{
    lm_pcg32 r;
    lm_pcg_seed(&r, seed, stream);
    for (size_t i = 0; i < t->numel; i++) {
        uint32_t x = lm_pcg_next(&r);
        double v;
        if (hl_dtype_is_float(t->dtype))
            v = (double)(x >> 8) / (double)(1u << 23) - 1.0; /* [-1, 1) in steps of 2^-23 */
        else if (t->dtype == HL_BOOL)
            v = (double)(x >> 31);
        else
            v = (double)(x >> 30); /* 0 to 3 */
        hl_tensor_set(t, i, v);
    }
}

/* The high 64 bits of the 128-bit product a * b. */
static uint64_t mul_hi64(uint64_t a, uint64_t b)
{
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* Fills t uniformly in [lo, hi) from PCG32 (seed, stream), one draw x per element (two for
 * an integer range wider than 2^32): floats lo + (hi - lo) * u with u = (x >> 8) / 2^24
 * (so [-1, 1) gives hl_tensor_fill_random's floats bit for bit), then rounded to the
 * dtype; integers lo + floor(x * n / 2^32) with n = hi - lo (so [0, 4) and [0, 2) give its
 * integers and bools). lo and hi were checked by hl_graph_set_input_init. */
static void fill_uniform(hl_tensor *t, double lo, double hi, uint64_t seed, uint64_t stream)
{
    lm_pcg32 r;
    lm_pcg_seed(&r, seed, stream);
    if (hl_dtype_is_float(t->dtype)) {
        double w = hi - lo;
        for (size_t i = 0; i < t->numel; i++) {
            double u = (double)(lm_pcg_next(&r) >> 8) / (double)(1u << 24);
            hl_tensor_set(t, i, lo + w * u);
        }
        return;
    }
    uint64_t n = (uint64_t)((int64_t)hi - (int64_t)lo); /* 1 .. 2^54 */
    for (size_t i = 0; i < t->numel; i++) {
        uint64_t k;
        if (n <= ((uint64_t)1 << 32)) {
            k = ((uint64_t)lm_pcg_next(&r) * n) >> 32;
        } else {
            uint64_t x = (uint64_t)lm_pcg_next(&r) << 32;
            x |= lm_pcg_next(&r);
            k = mul_hi64(x, n);
        }
        hl_tensor_set(t, i, lo + (double)k); /* exact: |lo + k| <= 2^53 */
    }
}

hl_status hl_graph_fill_input(const hl_graph *g, uint32_t input_index, hl_tensor *t, uint64_t seed,
                              lm_err *err)
{
    uint32_t ni = hl_graph_input_count(g);
    if (input_index >= ni)
        return hl__fail(err, HL_ERR_ARG, NULL, "fill input %u: the graph has %u inputs",
                        input_index, ni);
    uint32_t id = hl_graph_input(g, input_index);
    const hl_node *nd = hl_graph_node(g, id);
    lm_loc at = {.file = hl_graph_source(g), .node = nd->name, .node_id = id};
    const hl_origin *org = hl_graph_node_origin(g, id);
    if (org) {
        at.line = org->line;
        at.col = org->col;
    }
    if (!t || t->dtype != nd->dtype || t->ndim != nd->ndim || (t->numel && !t->data))
        return hl__fail(err, HL_ERR_ARG, &at,
                        "fill input '%.64s': the tensor is not a %s tensor of %u dims (it is "
                        "%s with %u)",
                        nd->name, hl_dtype_name(nd->dtype), nd->ndim,
                        t ? hl_dtype_name(t->dtype) : "missing", t ? t->ndim : 0);
    hl_init in = hl_graph_input_init(g, input_index);
    if (in.kind == HL_INIT_UNIFORM)
        fill_uniform(t, in.lo, in.hi, seed, input_index);
    else
        hl_tensor_fill_random(t, seed, input_index);
    return HL_OK;
}
