/* hl_ref_tensor.c - the reference runtime's tensors: contiguous buffers in a dtype's
 * storage format, element access as f64, and seeded random contents (the inputs of a
 * reference run). */
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
