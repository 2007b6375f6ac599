/* ll_compare.c - the comparison of genome fuzzing: a candidate's outputs against the
 * reference runtime's, with a tolerance per output derived from the reference's
 * precision rules (docs/llir.md, "The CPU executor and its precision rules").
 *
 * The tolerance of an output is the largest sum of rounding weights over the paths of
 * the HLIR graph that reach it: the worst case, to first order, of how far two
 * evaluations that round differently along the way (the reference, which rounds every
 * node to its storage dtype, and a candidate whose regions keep f32 and whose matmuls
 * never round a product) can drift apart, in units of the output's RMS. It is computed
 * once per graph and dim values by one pass in node order (a topological order). */
#include "ll_int.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

double ll_unit_roundoff(hl_dtype t)
{
    switch (t) {
    case HL_F32:
        return ldexp(1.0, -24);
    case HL_F16:
        return ldexp(1.0, -11);
    case HL_BF16:
        return ldexp(1.0, -8);
    case HL_F8E4M3:
        return ldexp(1.0, -4);
    case HL_F8E5M2:
        return ldexp(1.0, -3);
    default:
        return 0.0;
    }
}

/* The smallest normal of a float dtype: below it an RMS means "zero" (1 for integers). */
static double tiny_of(hl_dtype t)
{
    switch (t) {
    case HL_F32:
    case HL_BF16:
        return (double)FLT_MIN;
    case HL_F16:
    case HL_F8E5M2:
        return ldexp(1.0, -14);
    case HL_F8E4M3:
        return ldexp(1.0, -6);
    default:
        return 1.0;
    }
}

/* Dim values by pool variable, for evaluating a reduction's length. */
typedef struct dimenv {
    int64_t *vals;
    bool *bound;
    hl_env env;
} dimenv;

static int dimenv_init(dimenv *d, const hl_graph *g, const int64_t *dim_values, lm_err *err)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nv = hl_var_count(p);
    d->vals = ll__zalloc(nv ? nv : 1, sizeof(int64_t));
    d->bound = ll__zalloc(nv ? nv : 1, sizeof(bool));
    if (!d->vals || !d->bound) {
        ll__free(d->vals);
        ll__free(d->bound);
        return ll__fail(err, LM_ENOMEM, NULL, "comparison: out of memory");
    }
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *dm = hl_graph_dim_at(g, i);
        int64_t v = dim_values ? dim_values[i] : dm->profile;
        if (v < dm->lo || v > dm->hi) {
            ll__free(d->vals);
            ll__free(d->bound);
            return ll__fail(err, LM_EDIM, NULL,
                            "comparison: dim '%s' = %" PRId64 " is outside its range [%" PRId64
                            ", %" PRId64 "]",
                            hl_var_name(p, dm->var), v, dm->lo, dm->hi);
        }
        d->vals[dm->var] = v;
        d->bound[dm->var] = true;
    }
    d->env = (hl_env){d->vals, d->bound, nv};
    return 0;
}

static void dimenv_fini(dimenv *d)
{
    ll__free(d->vals);
    ll__free(d->bound);
}

static int weight(const hl_graph *g, const dimenv *d, uint32_t id, double *out, lm_err *err)
{
    const hl_node *n = hl_graph_node(g, id);
    const double u32 = ll_unit_roundoff(HL_F32);
    /* an op computed in f32 rounds once in f32 and, stored narrower, once more */
    const double store = n->dtype == HL_F32 ? 0.0 : 2.0 * ll_unit_roundoff(n->dtype);
    *out = 0.0;
    switch (n->op) {
    case HL_OP_CAST: {
        hl_dtype from = hl_graph_node(g, n->in[0].node)->dtype;
        bool exact =
            !hl_dtype_is_float(n->cast_to) || (n->cast_to == HL_F32 && hl_dtype_is_float(from));
        *out = exact ? 0.0 : 2.0 * ll_unit_roundoff(n->cast_to);
        return 0;
    }
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_RECIP:
    case HL_OP_SQRT: /* correctly rounded in f32: one ulp between two evaluations */
        if (hl_dtype_is_float(n->dtype)) *out = 2.0 * u32 + store;
        return 0;
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN: /* within one ulp of the exact value in libm: two ulps apart */
        *out = 4.0 * u32 + store;
        return 0;
    case HL_OP_SUM_REDUCE: {
        if (!hl_dtype_is_float(n->dtype)) return 0;
        char what[96];
        snprintf(what, sizeof what, "comparison: the length of SumReduce node %u", id);
        int64_t k;
        if (ll__hl_eval(hl_graph_exprs_c(g), n->in[0].view.dims[n->axis], &d->env, 0, &k, what,
                        err))
            return err->code;
        *out = 2.0 * (double)(k > 1 ? k - 1 : 0) * u32 + store;
        return 0;
    }
    default: /* inputs, constants, iota, comparisons, copies, max: exact */
        return 0;
    }
}

int ll_node_rounding_weight(const hl_graph *g, const int64_t *dim_values, uint32_t id, double *out,
                            lm_err *err)
{
    *out = 0.0;
    if (id >= hl_graph_node_count(g))
        return ll__fail(err, LM_EARG, NULL, "comparison: no node %u", id);
    dimenv d;
    int rc = dimenv_init(&d, g, dim_values, err);
    if (rc) return rc;
    rc = weight(g, &d, id, out, err);
    dimenv_fini(&d);
    return rc;
}

int ll__path_weights(const hl_graph *g, const int64_t *dim_values, double *w, lm_err *err)
{
    uint32_t n = hl_graph_node_count(g);
    dimenv d;
    int rc = dimenv_init(&d, g, dim_values, err);
    if (rc) return rc;
    for (uint32_t id = 0; id < n && !rc; id++) { /* ids are a topological order */
        const hl_node *nd = hl_graph_node(g, id);
        double c, in = 0.0;
        rc = weight(g, &d, id, &c, err);
        for (uint32_t i = 0; i < nd->n_in; i++)
            if (w[nd->in[i].node] > in) in = w[nd->in[i].node];
        w[id] = in + c;
    }
    dimenv_fini(&d);
    return rc;
}

int ll_output_tolerances(const hl_graph *g, const int64_t *dim_values, double *tol, lm_err *err)
{
    uint32_t n = hl_graph_node_count(g);
    double *w = ll__zalloc(n ? n : 1, sizeof(double));
    if (!w) return ll__fail(err, LM_ENOMEM, NULL, "comparison: out of memory");
    int rc = ll__path_weights(g, dim_values, w, err);
    for (uint32_t o = 0; o < hl_graph_output_count(g) && !rc; o++)
        tol[o] = w[hl_graph_output(g, o)];
    ll__free(w);
    return rc;
}

/* Element i of an integer or Bool tensor, exactly. */
static int64_t int_at(const hl_tensor *t, size_t i)
{
    switch (t->dtype) {
    case HL_INT:
        return ((const int32_t *)t->data)[i];
    case HL_I64:
        return ((const int64_t *)t->data)[i];
    default:
        return ((const uint8_t *)t->data)[i] != 0;
    }
}

static bool same_layout(const hl_tensor *a, const hl_tensor *b)
{
    if (a->ndim != b->ndim || a->numel != b->numel) return false;
    for (uint32_t d = 0; d < a->ndim && d < HL_MAX_DIMS; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* The RMS of t's finite elements (0 when none). */
static double rms_of(const hl_tensor *t)
{
    double ss = 0.0;
    size_t finite = 0;
    for (size_t i = 0; i < t->numel; i++) {
        double v = hl_tensor_get(t, i);
        if (isfinite(v)) {
            ss += v * v;
            finite++;
        }
    }
    return finite ? sqrt(ss / (double)finite) : 0.0;
}

/* The unit of element i: the larger of |ref[i]| and its magnitude, at least the output's
 * scale; infinite where the magnitude is not finite (the element is unbounded). */
static double unit_at(const hl_tensor *r, const hl_tensor *mag, size_t i, double scale)
{
    double m = fabs(hl_tensor_get(r, i));
    if (mag) {
        double mm = hl_tensor_get(mag, i);
        if (!(mm <= DBL_MAX)) return INFINITY; /* inf or NaN */
        if (mm > m) m = mm;
    }
    return m > scale ? m : scale;
}

static void compare_one(const hl_tensor *c, const hl_tensor *r, const hl_tensor *mag, double tol,
                        ll_out_cmp *out)
{
    memset(out, 0, sizeof *out);
    out->tol = tol;
    out->first_bad = SIZE_MAX;
    bool is_int = !hl_dtype_is_float(r->dtype);
    out->rms = rms_of(r);
    double s = mag ? rms_of(mag) : out->rms;
    if (s < out->rms) s = out->rms;
    double scale = s > tiny_of(r->dtype) ? s : tiny_of(r->dtype);
    out->scale = scale;
    for (size_t i = 0; i < r->numel; i++) {
        double rv = hl_tensor_get(r, i), cv = hl_tensor_get(c, i), e;
        bool bad;
        if (is_int && tol == 0.0) { /* exact where the reference is exact */
            int64_t a = int_at(c, i), b = int_at(r, i);
            bad = a != b;
            e = bad ? fabs(cv - rv) / scale : 0.0;
        } else if (isfinite(rv)) {
            double unit = unit_at(r, mag, i, scale);
            e = isfinite(cv) ? (isinf(unit) ? 0.0 : fabs(cv - rv) / unit) : INFINITY;
            bad = !(e <= tol);
        } else {
            bad = isnan(rv) ? !isnan(cv) : cv != rv;
            e = bad ? INFINITY : 0.0;
        }
        if (e > out->max_err) out->max_err = e;
        if (bad && out->n_bad++ == 0) {
            out->first_bad = i;
            out->cand = cv;
            out->ref = rv;
        }
    }
}

int ll_compare_outputs(const hl_graph *g, const int64_t *dim_values, const hl_tensor *cand,
                       const hl_tensor *ref, ll_out_cmp *per_output, lm_err *err)
{
    return ll_compare_outputs_scaled(g, dim_values, cand, ref, NULL, per_output, err);
}

int ll_compare_outputs_scaled(const hl_graph *g, const int64_t *dim_values, const hl_tensor *cand,
                              const hl_tensor *ref, const hl_tensor *mag, ll_out_cmp *per_output,
                              lm_err *err)
{
    uint32_t n = hl_graph_output_count(g);
    if (n && (!cand || !ref))
        return ll__fail(err, LM_EARG, NULL, "comparison: %u outputs, no tensors given", n);
    double *tol = ll__zalloc(n ? n : 1, sizeof(double));
    if (!tol) return ll__fail(err, LM_ENOMEM, NULL, "comparison: out of memory");
    int rc = ll_output_tolerances(g, dim_values, tol, err);
    uint32_t failed = LM_NONE;
    ll_out_cmp first = {0};
    for (uint32_t o = 0; o < n && !rc; o++) {
        const hl_node *on = hl_graph_node(g, hl_graph_output(g, o));
        const hl_tensor *c = &cand[o], *r = &ref[o];
        if (c->dtype != r->dtype || r->dtype != on->dtype) {
            rc = ll__fail(err, LM_EDTYPE, NULL,
                          "comparison: output %u '%s' is %s in the candidate and %s in the "
                          "reference (the graph says %s)",
                          o, on->name, hl_dtype_name(c->dtype), hl_dtype_name(r->dtype),
                          hl_dtype_name(on->dtype));
            break;
        }
        if (!same_layout(c, r) || (r->numel && (!c->data || !r->data))) {
            rc = ll__fail(err, LM_ESHAPE, NULL,
                          "comparison: output %u '%s' has %zu elements in %u dims in the "
                          "candidate and %zu in %u dims in the reference",
                          o, on->name, c->numel, c->ndim, r->numel, r->ndim);
            break;
        }
        const hl_tensor *m = mag ? &mag[o] : NULL;
        if (m && (m->dtype != HL_F32 || m->numel != r->numel || (m->numel && !m->data))) {
            rc = ll__fail(err, LM_ESHAPE, NULL,
                          "comparison: the magnitude of output %u '%s' is %zu elements of %s, "
                          "the output %zu",
                          o, on->name, m->numel, hl_dtype_name(m->dtype), r->numel);
            break;
        }
        ll_out_cmp res;
        compare_one(c, r, m, tol[o], &res);
        if (per_output) per_output[o] = res;
        if (res.n_bad && failed == LM_NONE) {
            failed = o;
            first = res;
        }
    }
    if (!rc && failed != LM_NONE) {
        const hl_node *on = hl_graph_node(g, hl_graph_output(g, failed));
        rc = ll__fail(err, LM_EMISMATCH, NULL,
                      "output %u '%s' (%s): %zu of %zu elements differ from the reference "
                      "beyond %.3g of their scale (RMS %.6g, scale %.6g); the first is element "
                      "%zu: candidate %.9g, reference %.9g; the largest difference is %.3g of "
                      "its scale",
                      failed, on->name, hl_dtype_name(on->dtype), first.n_bad, cand[failed].numel,
                      first.tol, first.rms, first.scale, first.first_bad, first.cand, first.ref,
                      first.max_err);
    }
    ll__free(tol);
    return rc;
}
