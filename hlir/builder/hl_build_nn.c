/* hl_build_nn.c - the builder's high-level ops, each lowered to the primitives of hl_build.c.
 *
 * The lowerings are Luminal's: exp(x) = exp2(x * log2 e), log(x) = log2(x) * ln 2,
 * cos(x) = sin(x + pi/2), a - b = a + (-1 * b), a / b = a * recip(b), where(m, a, b) =
 * a*m + b*(1-m), maximum/minimum through where, matmul as a broadcast multiply and a
 * SumReduce. erf (for the exact gelu) has no primitive, so it is Abramowitz & Stegun
 * 7.1.26 (absolute error below 1.5e-7), built from exp2 and recip. Each intermediate
 * is computed in the operand's dtype, as a GPU kernel storing every node would. */
#include "builder/hl_build_int.h"

#include <math.h>

#define LOG2E 1.4426950408889634
#define LN2 0.6931471805599453
#define PI 3.141592653589793

static bool begin1(hl_graph *g, hl_t x, const char *fn, uint32_t *mark)
{
    return hl__begin(g, mark) && hl__check(g, x, fn);
}

static hl_t sc(hl_graph *g, double v, hl_dtype dt)
{
    return hl_scalar(g, (float)v, dt);
}

static bool need_float(hl_graph *g, hl_t x, const char *fn)
{
    if (hl_dtype_is_float(x.dtype)) return true;
    hl__graph_fail(g, HL_ERR_DTYPE, "%s: needs a float tensor, got %s", fn, hl_dtype_name(x.dtype));
    return false;
}

/* ---- elementwise ---- */

hl_t hl_add_scalar(hl_graph *g, hl_t x, float v)
{
    uint32_t m;
    if (!begin1(g, x, "add_scalar", &m)) return hl__bad();
    return hl__finish(g, m, hl_add(g, x, sc(g, v, x.dtype)));
}

hl_t hl_mul_scalar(hl_graph *g, hl_t x, float v)
{
    uint32_t m;
    if (!begin1(g, x, "mul_scalar", &m)) return hl__bad();
    return hl__finish(g, m, hl_mul(g, x, sc(g, v, x.dtype)));
}

hl_t hl_neg(hl_graph *g, hl_t x)
{
    return hl_mul_scalar(g, x, -1.0f);
}

hl_t hl_sub(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "sub", &m) || !hl__check(g, b, "sub")) return hl__bad();
    return hl__finish(g, m, hl_add(g, a, hl_neg(g, b)));
}

hl_t hl_div(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "div", &m) || !hl__check(g, b, "div")) return hl__bad();
    return hl__finish(g, m, hl_mul(g, a, hl_recip(g, b)));
}

hl_t hl_exp(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "exp", &m)) return hl__bad();
    return hl__finish(g, m, hl_exp2(g, hl_mul_scalar(g, x, (float)LOG2E)));
}

hl_t hl_log(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "log", &m)) return hl__bad();
    return hl__finish(g, m, hl_mul_scalar(g, hl_log2(g, x), (float)LN2));
}

hl_t hl_cos(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "cos", &m)) return hl__bad();
    return hl__finish(g, m, hl_sin(g, hl_add_scalar(g, x, (float)(PI / 2))));
}

hl_t hl_sigmoid(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "sigmoid", &m)) return hl__bad();
    return hl__finish(g, m, hl_recip(g, hl_add_scalar(g, hl_exp(g, hl_neg(g, x)), 1.0f)));
}

hl_t hl_silu(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "silu", &m)) return hl__bad();
    return hl__finish(g, m, hl_mul(g, x, hl_sigmoid(g, x)));
}

hl_t hl_tanh(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "tanh", &m)) return hl__bad();
    hl_t s = hl_sigmoid(g, hl_mul_scalar(g, x, 2.0f));
    return hl__finish(g, m, hl_add_scalar(g, hl_mul_scalar(g, s, 2.0f), -1.0f));
}

/* Bool -> the mask's complement, as Bool. */
static hl_t mask_not(hl_graph *g, hl_t mask)
{
    return hl_lt(g, hl_cast(g, mask, HL_F32), hl_scalar(g, 0.5f, HL_F32));
}

hl_t hl_where(hl_graph *g, hl_t mask, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, mask, "where", &m) || !hl__check(g, a, "where") || !hl__check(g, b, "where"))
        return hl__bad();
    if (mask.dtype != HL_BOOL) {
        hl__graph_fail(g, HL_ERR_DTYPE, "where: the mask must be bool, not %s",
                       hl_dtype_name(mask.dtype));
        return hl__finish(g, m, hl__bad());
    }
    if (a.dtype != b.dtype) {
        hl__graph_fail(g, HL_ERR_DTYPE, "where: branch dtypes %s and %s differ",
                       hl_dtype_name(a.dtype), hl_dtype_name(b.dtype));
        return hl__finish(g, m, hl__bad());
    }
    hl_t yes = hl_mul(g, a, hl_cast(g, mask, a.dtype));
    hl_t no = hl_mul(g, b, hl_cast(g, mask_not(g, mask), a.dtype));
    return hl__finish(g, m, hl_add(g, yes, no));
}

hl_t hl_maximum(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "maximum", &m) || !hl__check(g, b, "maximum")) return hl__bad();
    return hl__finish(g, m, hl_where(g, hl_lt(g, b, a), a, b));
}

hl_t hl_minimum(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "minimum", &m) || !hl__check(g, b, "minimum")) return hl__bad();
    return hl__finish(g, m, hl_where(g, hl_lt(g, a, b), a, b));
}

hl_t hl_relu(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "relu", &m)) return hl__bad();
    return hl__finish(g, m, hl_maximum(g, x, sc(g, 0.0, x.dtype)));
}

hl_t hl_gt(hl_graph *g, hl_t a, hl_t b)
{
    return hl_lt(g, b, a);
}

hl_t hl_ge(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "ge", &m) || !hl__check(g, b, "ge")) return hl__bad();
    return hl__finish(g, m, mask_not(g, hl_lt(g, a, b)));
}

hl_t hl_le(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "le", &m) || !hl__check(g, b, "le")) return hl__bad();
    return hl__finish(g, m, mask_not(g, hl_lt(g, b, a)));
}

/* count of (a < b) and (b < a): 0 exactly when a == b (for non-NaN values) */
static hl_t neq_count(hl_graph *g, hl_t a, hl_t b)
{
    return hl_add(g, hl_cast(g, hl_lt(g, a, b), HL_F32), hl_cast(g, hl_lt(g, b, a), HL_F32));
}

hl_t hl_eq(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "eq", &m) || !hl__check(g, b, "eq")) return hl__bad();
    return hl__finish(g, m, hl_lt(g, neq_count(g, a, b), hl_scalar(g, 0.5f, HL_F32)));
}

hl_t hl_ne(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "ne", &m) || !hl__check(g, b, "ne")) return hl__bad();
    return hl__finish(g, m, hl_lt(g, hl_scalar(g, 0.5f, HL_F32), neq_count(g, a, b)));
}

/* erf by Abramowitz & Stegun 7.1.26: sign(x) * (1 - poly(t) * exp(-x^2)), t = 1/(1+p|x|) */
static hl_t erf_approx(hl_graph *g, hl_t x)
{
    const double P = 0.3275911, A1 = 0.254829592, A2 = -0.284496736, A3 = 1.421413741,
                 A4 = -1.453152027, A5 = 1.061405429;
    hl_dtype dt = x.dtype;
    hl_t neg = hl_cast(g, hl_lt(g, x, sc(g, 0.0, dt)), dt);           /* 1 where x < 0 */
    hl_t sign = hl_add_scalar(g, hl_mul_scalar(g, neg, -2.0f), 1.0f); /* -1 or 1 */
    hl_t ax = hl_mul(g, x, sign);
    hl_t t = hl_recip(g, hl_add_scalar(g, hl_mul_scalar(g, ax, (float)P), 1.0f));
    hl_t poly = hl_add_scalar(g, hl_mul_scalar(g, t, (float)A5), (float)A4);
    poly = hl_add_scalar(g, hl_mul(g, poly, t), (float)A3);
    poly = hl_add_scalar(g, hl_mul(g, poly, t), (float)A2);
    poly = hl_add_scalar(g, hl_mul(g, poly, t), (float)A1);
    poly = hl_mul(g, poly, t);
    hl_t e = hl_exp(g, hl_neg(g, hl_mul(g, x, x)));
    hl_t y = hl_add_scalar(g, hl_neg(g, hl_mul(g, poly, e)), 1.0f);
    return hl_mul(g, y, sign);
}

hl_t hl_gelu(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "gelu", &m) || !need_float(g, x, "gelu")) return hl__finish(g, m, hl__bad());
    hl_t e = erf_approx(g, hl_mul_scalar(g, x, (float)(1.0 / sqrt(2.0))));
    hl_t r = hl_mul(g, hl_mul_scalar(g, x, 0.5f), hl_add_scalar(g, e, 1.0f));
    return hl__finish(g, m, r);
}

hl_t hl_gelu_tanh(hl_graph *g, hl_t x)
{
    uint32_t m;
    if (!begin1(g, x, "gelu_tanh", &m) || !need_float(g, x, "gelu_tanh"))
        return hl__finish(g, m, hl__bad());
    hl_t x3 = hl_mul(g, hl_mul(g, x, x), x);
    hl_t inner =
        hl_mul_scalar(g, hl_add(g, x, hl_mul_scalar(g, x3, 0.044715f)), (float)sqrt(2.0 / PI));
    hl_t r = hl_mul(g, hl_mul_scalar(g, x, 0.5f), hl_add_scalar(g, hl_tanh(g, inner), 1.0f));
    return hl__finish(g, m, r);
}

/* ---- reductions over several axes ---- */

/* Normalises and sorts axes (descending, distinct) into out; false with the error set. */
static bool axes_of(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, const char *fn,
                    uint32_t *out)
{
    if (naxes > x.view.ndim) {
        hl__graph_fail(g, HL_ERR_ARG, "%s: %u axes for a %u-d tensor", fn, naxes, x.view.ndim);
        return false;
    }
    for (uint32_t i = 0; i < naxes; i++) {
        int a = hl__axis(axes[i], x.view.ndim);
        if (a < 0) {
            hl__graph_fail(g, HL_ERR_ARG, "%s: axis %d out of range for %u dims", fn, axes[i],
                           x.view.ndim);
            return false;
        }
        for (uint32_t j = 0; j < i; j++)
            if (out[j] == (uint32_t)a) {
                hl__graph_fail(g, HL_ERR_ARG, "%s: axis %d given twice", fn, a);
                return false;
            }
        out[i] = (uint32_t)a;
    }
    for (uint32_t i = 1; i < naxes; i++) /* descending, so removing one keeps the others */
        for (uint32_t j = i; j > 0 && out[j - 1] < out[j]; j--) {
            uint32_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return true;
}

static hl_t reduce_axes(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim,
                        bool is_max, const char *fn)
{
    uint32_t m, ax[HL_MAX_DIMS];
    if (!begin1(g, x, fn, &m) || !axes_of(g, x, naxes, axes, fn, ax)) return hl__bad();
    hl_t r = x;
    for (uint32_t i = 0; i < naxes; i++)
        r = is_max ? hl_max_reduce(g, r, (int)ax[i]) : hl_sum_reduce(g, r, (int)ax[i]);
    if (keepdim)
        for (uint32_t i = naxes; i-- > 0;)
            r = hl_expand(g, r, (int)ax[i], hl_n(g, 1));
    return hl__finish(g, m, r);
}

hl_t hl_sum(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim)
{
    return reduce_axes(g, x, naxes, axes, keepdim, false, "sum");
}

hl_t hl_max(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim)
{
    return reduce_axes(g, x, naxes, axes, keepdim, true, "max");
}

hl_t hl_mean(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim)
{
    uint32_t m, ax[HL_MAX_DIMS];
    if (!begin1(g, x, "mean", &m) || !need_float(g, x, "mean") ||
        !axes_of(g, x, naxes, axes, "mean", ax))
        return hl__finish(g, m, hl__bad());
    hl_expr_pool *p = hl_graph_exprs(g);
    hl_expr count = hl_e_num(p, 1);
    for (uint32_t i = 0; i < naxes; i++)
        count = hl_e_mul(p, count, x.view.dims[ax[i]]);
    hl_t s = hl_sum(g, x, naxes, axes, keepdim);
    int64_t n;
    hl_t inv;
    if (hl_e_is_num(p, count, &n)) {
        inv = sc(g, 1.0 / (double)n, x.dtype);
    } else { /* a dynamic count: computed at run time from the dims */
        inv = hl_recip(g, hl_cast(g, hl_iota(g, count, hl_n(g, 1)), HL_F32));
        if (x.dtype != HL_F32) inv = hl_cast(g, inv, x.dtype);
        /* the Iota is [1]; read it as the scalar it stands for, or it would broadcast a
           sum over every axis (a scalar) to [1] */
        if (inv.node != HL_NONE) {
            hl_status st = hl_view_squeeze(p, &inv.view, 0, &inv.view, hl__graph_scratch(g));
            if (st) {
                hl__graph_raise_scratch(g, st, "mean");
                inv = hl__bad();
            }
        }
    }
    return hl__finish(g, m, hl_mul(g, s, inv));
}

/* ---- normalisation ---- */

hl_t hl_softmax(hl_graph *g, hl_t x, int axis)
{
    uint32_t m;
    if (!begin1(g, x, "softmax", &m) || !need_float(g, x, "softmax"))
        return hl__finish(g, m, hl__bad());
    hl_t e = hl_exp(g, hl_sub(g, x, hl_max(g, x, 1, &axis, true)));
    return hl__finish(g, m, hl_div(g, e, hl_sum(g, e, 1, &axis, true)));
}

hl_t hl_log_softmax(hl_graph *g, hl_t x, int axis)
{
    uint32_t m;
    if (!begin1(g, x, "log_softmax", &m) || !need_float(g, x, "log_softmax"))
        return hl__finish(g, m, hl__bad());
    hl_t c = hl_sub(g, x, hl_max(g, x, 1, &axis, true));
    hl_t lse = hl_log(g, hl_sum(g, hl_exp(g, c), 1, &axis, true));
    return hl__finish(g, m, hl_sub(g, c, lse));
}

hl_t hl_layer_norm(hl_graph *g, hl_t x, hl_t weight, hl_t bias, float eps)
{
    uint32_t m;
    int last = -1;
    if (!begin1(g, x, "layer_norm", &m) || !need_float(g, x, "layer_norm"))
        return hl__finish(g, m, hl__bad());
    hl_t c = hl_sub(g, x, hl_mean(g, x, 1, &last, true));
    hl_t var = hl_mean(g, hl_mul(g, c, c), 1, &last, true);
    hl_t r = hl_mul(g, c, hl_recip(g, hl_sqrt(g, hl_add_scalar(g, var, eps))));
    if (weight.node != HL_NONE) r = hl_mul(g, r, weight);
    if (bias.node != HL_NONE) r = hl_add(g, r, bias);
    return hl__finish(g, m, r);
}

hl_t hl_rms_norm(hl_graph *g, hl_t x, hl_t weight, float eps)
{
    uint32_t m;
    int last = -1;
    if (!begin1(g, x, "rms_norm", &m) || !need_float(g, x, "rms_norm"))
        return hl__finish(g, m, hl__bad());
    hl_t ms = hl_mean(g, hl_mul(g, x, x), 1, &last, true);
    hl_t r = hl_mul(g, x, hl_recip(g, hl_sqrt(g, hl_add_scalar(g, ms, eps))));
    if (weight.node != HL_NONE) r = hl_mul(g, r, weight);
    return hl__finish(g, m, r);
}

/* ---- linear algebra ---- */

hl_t hl_matmul(hl_graph *g, hl_t a, hl_t b)
{
    uint32_t m;
    if (!begin1(g, a, "matmul", &m) || !hl__check(g, b, "matmul")) return hl__bad();
    lm_err *e = hl__graph_scratch(g);
    if (a.view.ndim == 0 || b.view.ndim == 0) {
        hl__graph_fail(g, HL_ERR_SHAPE, "matmul: operands must have at least 1 dim");
        return hl__finish(g, m, hl__bad());
    }
    bool a_vec = a.view.ndim == 1, b_vec = b.view.ndim == 1;
    if (a_vec) a = hl_expand(g, a, 0, hl_n(g, 1));
    if (b_vec) b = hl_expand(g, b, 1, hl_n(g, 1));
    if (a.node == HL_NONE || b.node == HL_NONE) return hl__finish(g, m, hl__bad());
    uint32_t na = a.view.ndim, nb = b.view.ndim;
    hl_expr k1 = a.view.dims[na - 1], k2 = b.view.dims[nb - 2];
    if (k1 != k2) {
        char sa[160], sb[160];
        const hl_expr_pool *p = hl_graph_exprs(g);
        hl__dims_str(p, na, a.view.dims, sa, sizeof sa);
        hl__dims_str(p, nb, b.view.dims, sb, sizeof sb);
        hl__graph_fail(g, HL_ERR_SHAPE,
                       "matmul: inner dims differ: %s x %s (the last dim of a must equal the "
                       "second-to-last of b)",
                       sa, sb);
        return hl__finish(g, m, hl__bad());
    }
    if (na + 1 > HL_MAX_DIMS || nb + 1 > HL_MAX_DIMS) {
        hl__graph_fail(g, HL_ERR_ARG, "matmul: too many dims (at most %d - 1)", HL_MAX_DIMS);
        return hl__finish(g, m, hl__bad());
    }
    hl_expr mm = a.view.dims[na - 2], nn = b.view.dims[nb - 1];
    /* a[..., m, k] -> [..., m, n, k]; b[..., k, n] -> [..., n, k] -> [..., m, n, k] */
    hl_t ae = hl_expand(g, a, (int)na - 1, nn);
    hl_t bt = hl_transpose(g, b, -1, -2);
    hl_t be = hl_expand(g, bt, (int)nb - 2, mm);
    hl_t r = hl_sum_reduce(g, hl_mul(g, ae, be), -1);
    hl_status st = HL_OK;
    if (r.node != HL_NONE && b_vec)
        st = hl_view_squeeze(hl_graph_exprs(g), &r.view, r.view.ndim - 1, &r.view, e);
    if (!st && r.node != HL_NONE && a_vec)
        st = hl_view_squeeze(hl_graph_exprs(g), &r.view, r.view.ndim - (b_vec ? 1 : 2), &r.view, e);
    if (st) hl__graph_raise_scratch(g, st, "matmul");
    return hl__finish(g, m, r);
}

hl_t hl_embedding(hl_graph *g, hl_t table, hl_t ids)
{
    uint32_t m;
    if (!begin1(g, table, "embedding", &m) || !hl__check(g, ids, "embedding")) return hl__bad();
    if (table.view.ndim != 2 || ids.dtype != HL_INT || ids.view.ndim + 1 > HL_MAX_DIMS) {
        hl__graph_fail(
            g,
            table.view.ndim != 2  ? HL_ERR_SHAPE
            : ids.dtype != HL_INT ? HL_ERR_DTYPE
                                  : HL_ERR_ARG,
            "embedding: needs a 2-d table (got %u dims) and int ids (got %s) with at most "
            "%d dims",
            table.view.ndim, hl_dtype_name(ids.dtype), HL_MAX_DIMS - 1);
        return hl__finish(g, m, hl__bad());
    }
    hl_expr_pool *p = hl_graph_exprs(g);
    hl_expr d = table.view.dims[1];
    hl_t rows = hl_expand(g, ids, -1, d); /* [..., d], the id repeated */
    hl_t width = hl_iota(g, d, hl_n(g, 1));
    hl_expr dims[HL_MAX_DIMS];
    for (uint32_t i = 0; i < rows.view.ndim; i++)
        dims[i] = rows.view.dims[i];
    hl_t col = hl_iota_nd(g, hl_e_mod(p, hl_e_z(p), d), rows.view.ndim, dims);
    hl_t idx = hl_add(g, hl_mul(g, rows, width), col);
    return hl__finish(g, m, hl_gather(g, idx, table));
}

/* ---- attention ---- */

/* s x t mask: 0 where column j <= row i + (t - s), big negative above. */
static hl_t causal_mask2(hl_graph *g, hl_expr s, hl_expr t, hl_dtype dtype)
{
    hl_expr_pool *p = hl_graph_exprs(g);
    hl_expr z = hl_e_z(p);
    hl_expr row = hl_e_div(p, z, t), col = hl_e_mod(p, z, t);
    hl_expr above = hl_e_bin(p, HL_E_LT, hl_e_add(p, row, hl_e_sub(p, t, s)), col);
    hl_expr dims[2] = {s, t};
    hl_t m = hl_cast(g, hl_iota_nd(g, above, 2, dims), HL_F32);
    m = hl_mul(g, m, hl_scalar(g, -1e30f, HL_F32)); /* in f32, so 0 stays 0, never 0*inf */
    if (dtype != HL_F32) m = hl_cast(g, m, dtype);
    return m;
}

hl_t hl_causal_mask(hl_graph *g, hl_expr n, hl_dtype dtype)
{
    uint32_t m;
    if (!hl__begin(g, &m)) return hl__bad();
    return hl__finish(g, m, causal_mask2(g, n, n, dtype));
}

hl_t hl_attention(hl_graph *g, hl_t q, hl_t k, hl_t v, bool causal, float scale)
{
    uint32_t m;
    if (!begin1(g, q, "attention", &m) || !hl__check(g, k, "attention") ||
        !hl__check(g, v, "attention"))
        return hl__bad();
    if (q.view.ndim < 2 || k.view.ndim < 2 || v.view.ndim < 2) {
        hl__graph_fail(g, HL_ERR_SHAPE, "attention: q, k and v need at least 2 dims");
        return hl__finish(g, m, hl__bad());
    }
    if (!need_float(g, q, "attention")) return hl__finish(g, m, hl__bad());
    hl_expr_pool *p = hl_graph_exprs(g);
    hl_expr d = q.view.dims[q.view.ndim - 1];
    if (scale <= 0.0f) {
        int64_t dv;
        if (!hl_e_is_num(p, d, &dv) || dv <= 0) {
            hl__graph_fail(g, HL_ERR_ARG,
                           "attention: the head dim is dynamic; pass the scale explicitly");
            return hl__finish(g, m, hl__bad());
        }
        scale = (float)(1.0 / sqrt((double)dv));
    }
    hl_t scores = hl_mul_scalar(g, hl_matmul(g, q, hl_transpose(g, k, -1, -2)), scale);
    if (causal && scores.node != HL_NONE) {
        hl_expr s = q.view.dims[q.view.ndim - 2], t = k.view.dims[k.view.ndim - 2];
        scores = hl_add(g, scores, causal_mask2(g, s, t, scores.dtype));
    }
    return hl__finish(g, m, hl_matmul(g, hl_softmax(g, scores, -1), v));
}

hl_t hl_rope(hl_graph *g, hl_t x, hl_expr pos_offset, float base)
{
    uint32_t m;
    if (!begin1(g, x, "rope", &m) || !need_float(g, x, "rope")) return hl__finish(g, m, hl__bad());
    hl_expr_pool *p = hl_graph_exprs(g);
    int64_t dv;
    if (x.view.ndim < 2 || !hl_e_is_num(p, x.view.dims[x.view.ndim - 1], &dv) || dv % 2 ||
        !(base > 1.0f)) {
        hl__graph_fail(g, HL_ERR_SHAPE,
                       "rope: needs x[..., seq, head] with a fixed even head dim and base > 1");
        return hl__finish(g, m, hl__bad());
    }
    hl_expr seq = x.view.dims[x.view.ndim - 2], half = hl_e_num(p, dv / 2);
    /* inv_freq[i] = base^(-2i/d) = exp2(i * (-2/d) * log2(base)) */
    hl_t i = hl_arange(g, half, HL_F32);
    hl_t inv = hl_exp2(g, hl_mul_scalar(g, i, (float)(-2.0 / (double)dv * log2((double)base))));
    hl_t pos = hl_cast(g, hl_iota(g, hl_e_add(p, hl_e_z(p), pos_offset), seq), HL_F32);
    hl_t ang = hl_mul(g, hl_expand(g, pos, -1, half), hl_expand(g, inv, 0, seq)); /* [seq, half] */
    hl_t c = hl_cos(g, ang), s = hl_sin(g, ang);
    if (x.dtype != HL_F32) {
        c = hl_cast(g, c, x.dtype);
        s = hl_cast(g, s, x.dtype);
    }
    hl_t x1 = hl_slice(g, x, -1, hl_n(g, 0), half);
    hl_t x2 = hl_slice(g, x, -1, half, hl_n(g, dv));
    hl_t o1 = hl_sub(g, hl_mul(g, x1, c), hl_mul(g, x2, s));
    hl_t o2 = hl_add(g, hl_mul(g, x2, c), hl_mul(g, x1, s));
    return hl__finish(g, m, hl_concat(g, o1, o2, -1));
}
