/* ll_magnitude.c - the magnitude of every output of an HLIR graph: for each element, the
 * size of the terms its value is made of (docs/llir.md, "The scale of the comparison").
 *
 * Rounding moves a value in proportion to the terms being added, not to their sum: x +
 * (-x) is exactly 0 in the reference, while a candidate that computed the two x's with
 * different roundings (a matmul's FMA against rounded products, a region against a
 * stored tensor) gives a few ulps of x. Measured in units of the output's own RMS, 0,
 * such a correct candidate is infinitely wrong. The magnitude M carries the size of the
 * terms through the graph where they cancel. It is computed by the reference runtime on
 * the magnitude graph of g, built here: a copy of g's nodes (their values V) and, per
 * node n, a node M(n) of n's shape in f32 (the copy's values are the reference's up to
 * rounding: a bf16 Mul that the magnitudes read too is no longer fused into its Sum by the
 * reference runtime, so its products are rounded; sizes need no more):
 *
 *   a node no rounding reaches (path weight 0:
 *   integers, comparisons, constants, masks)                   |V|
 *   Add                                                        max(|V|, sqrt(M(a)^2 + M(b)^2))
 *   SumReduce                                                  max(|V|, sqrt(sum of M(x)^2))
 *   Mul                                                        max(|V|, M(a) M(b))
 *   Mod (a float a - b floor(a/b))                             max(|V|, sqrt(M(a)^2 +
 *                                                              (M(b) (1 + |a/b|))^2))
 *   Cast to a float                                            max(|V|, M(x) through n's view)
 *   Gather, Scatter                                            the same op over the M's
 *   MaxReduce                                                  the largest M(x) among the
 *                                                              elements equal to the max
 *   Input, Cast to an integer, LessThan, Exp2, Log2, Sin,
 *   Recip, Sqrt                                                |V|
 *
 * (|V| is sqrt(V V) in f32.) So M = |V| wherever nothing cancels, and the comparison is
 * what it was there; M grows only where terms cancel, and keeps that size through the
 * products, copies and selections that follow (x - x, times 5, is measured against 5
 * |x|). Sums take the root of the sum of squares of their terms' magnitudes, the size
 * independent roundings add up to, rather than the sum of their magnitudes, the worst
 * case: that one is sqrt(K) times a random-signed dot product's value, and compounding
 * it through a network's layers made the Llama block's scale 10^29 times its RMS. The
 * transcendental functions and reciprocals restart at |V|: the model of the tolerance
 * passes an input's relative error to their output with gain 1 (docs/llir.md), and
 * following their derivatives instead (exp2 amplifies an absolute error of its argument
 * into a relative error of its value) gave the Llama block a scale 10^4 times its RMS, a
 * check of nothing. The tolerance's other heuristics stay what they were.
 *
 * Every factor that may be infinite is saturated at 2^60 before it multiplies or is
 * squared (sat), so 0 inf never makes a NaN and no square overflows: a masked score
 * (-1e30, or -inf in f16) has a huge magnitude but an exp2 of 0, whose magnitude is 0.
 * Where the bound is infinite (an overflow) M is inf and the comparison leaves the
 * element unbounded. */
#include "ll_int.h"

#include <math.h>
#include <string.h>

typedef struct mg {
    const hl_graph *g;
    const double *w; /* per node: ll__path_weights (0: computed exactly by every candidate) */
    hl_graph *h;
    hl_expr *memo; /* per expression of g's pool: its copy in h's, HL_NONE until made */
    uint32_t *V, *M;
    bool *defer; /* per node of g: a Mul whose one reader is a SumReduce (a matmul's
                    product); its M is not built, the reduce's is built from its factors */
    lm_err *err;
} mg;

static hl_expr cp(mg *m, hl_expr e)
{
    return e == HL_NONE ? HL_NONE
                        : ll__expr_copy(hl_graph_exprs(m->h), hl_graph_exprs_c(m->g), e, m->memo);
}

/* n's spec with expressions in h's pool and inputs ins[] (views kept). */
static void spec_of(mg *m, const hl_node *n, const uint32_t *ins, hl_node *spec)
{
    *spec = *n;
    spec->name = n->op == HL_OP_INPUT || n->op == HL_OP_OUTPUT ? n->name : NULL;
    for (uint32_t d = 0; d < n->ndim && d < HL_MAX_DIMS; d++)
        spec->shape[d] = cp(m, n->shape[d]);
    for (uint32_t i = 0; i < n->n_in && i < HL_MAX_INPUTS; i++) {
        spec->in[i].node = ins[i];
        for (uint32_t d = 0; d < n->in[i].view.ndim && d < HL_MAX_DIMS; d++) {
            spec->in[i].view.dims[d] = cp(m, n->in[i].view.dims[d]);
            spec->in[i].view.strides[d] = cp(m, n->in[i].view.strides[d]);
        }
    }
    if (n->op == HL_OP_IOTA) {
        spec->iota_expr = cp(m, n->iota_expr);
        spec->iota_len = cp(m, n->iota_len);
    }
}

static uint32_t add(mg *m, const hl_node *spec)
{
    return hl_graph_add(m->h, spec);
}

static hl_t f32(mg *m, hl_t t)
{
    return t.dtype == HL_F32 ? t : hl_cast(m->h, t, HL_F32);
}

static hl_t absv(mg *m, hl_t t)
{
    hl_t c = f32(m, t);
    return hl_sqrt(m->h, hl_mul(m->h, c, c));
}

static hl_t num(mg *m, float v)
{
    return hl_scalar(m->h, v, HL_F32);
}

/* min(t, 2^60) without a min op and without NaN: 1 / (1 / t + 2^-60), for t >= 0 (0
 * stays 0, inf becomes 2^60, anything up to 2^36 is kept to the last bit of f32). A
 * factor that may be infinite (1 / 0, a -inf mask's magnitude) is passed through it
 * before it multiplies something that may be 0, so that 0 inf never makes a NaN, and
 * before it is squared, so that a square never overflows. */
static hl_t sat(mg *m, hl_t t)
{
    return hl_recip(m->h, hl_add(m->h, hl_recip(m->h, t), num(m, 0x1p-60f)));
}

/* The larger of a and b (both >= 0), elementwise: (a + b + |a - b|) / 2, after sat. */
static hl_t vmax(mg *m, hl_t a, hl_t b)
{
    hl_t sa = sat(m, a), sb = sat(m, b);
    hl_t d = hl_add(m->h, sa, hl_mul(m->h, sb, num(m, -1.0f)));
    hl_t ad = hl_sqrt(m->h, hl_mul(m->h, d, d));
    return hl_mul(m->h, hl_add(m->h, hl_add(m->h, sa, sb), ad), num(m, 0.5f));
}

static hl_t sq(mg *m, hl_t t)
{
    hl_t s = sat(m, t);
    return hl_mul(m->h, s, s);
}

/* Input k of n (its V or its M) read through n's view k, as an f32 node of that view's
 * dims: a Cast to f32 with the view. */
static hl_t through(mg *m, const hl_node *n, uint32_t k, bool magnitude)
{
    hl_node spec;
    memset(&spec, 0, sizeof spec);
    spec.op = HL_OP_CAST;
    spec.cast_to = HL_F32;
    spec.dtype = HL_F32;
    spec.n_in = 1;
    uint32_t src = (magnitude ? m->M : m->V)[n->in[k].node];
    hl_node tmp = *n;
    tmp.n_in = 1;
    tmp.in[0] = n->in[k];
    hl_node full;
    spec_of(m, &tmp, &src, &full);
    spec.in[0] = full.in[0];
    return hl_node_tensor(m->h, add(m, &spec));
}

/* M of a SumReduce n over a deferred Mul x = a b (a matmul's product): the root of the sum
 * of squares of M(x) = M(a) M(b), computed as SumReduce(Mul(sq M(a), sq M(b))) with x's
 * views on the squares, so that this Mul too is read by its reduce alone and the reference
 * runtime runs the pair fused, as it runs x with its reduce: neither the product nor its
 * magnitude is materialised at the broadcast shape (for a Llama block's matmuls that took
 * minutes and gigabytes). It leaves out max(|V(x)|, ...) on the product, which differs from
 * M(a) M(b) by the product's rounding only; a square product past f32's range is inf, so
 * the element's bound is infinite, as any overflowing bound is. */
static hl_t product_sum_magnitude(mg *m, const hl_node *n, hl_t av)
{
    const hl_node *x = hl_graph_node(m->g, n->in[0].node);
    uint32_t q[2];
    for (uint32_t k = 0; k < 2; k++)
        q[k] = sq(m, hl_node_tensor(m->h, m->M[x->in[k].node])).node;
    hl_node spec;
    spec_of(m, x, q, &spec);
    spec.dtype = HL_F32;
    uint32_t p = add(m, &spec);
    spec_of(m, n, &p, &spec);
    spec.dtype = HL_F32;
    hl_t s2 = hl_node_tensor(m->h, add(m, &spec));
    return vmax(m, hl_sqrt(m->h, s2), av);
}

/* M(n), given V(n) and the M and V of n's inputs. */
static uint32_t magnitude_of(mg *m, uint32_t id)
{
    const hl_node *n = hl_graph_node(m->g, id);
    hl_graph *h = m->h;
    hl_t v = hl_node_tensor(h, m->V[id]);
    hl_t av = absv(m, v);
    uint32_t ins[HL_MAX_INPUTS] = {0};
    hl_node spec;
    if (m->w[id] == 0.0) return av.node; /* exact: no error, its size is its value */
    switch (n->op) {
    case HL_OP_CAST:
        if (!hl_dtype_is_float(n->cast_to)) return av.node;
        return vmax(m, through(m, n, 0, true), av).node; /* the rounded value may be larger */
    case HL_OP_ADD: { /* the root of the sum of squares of the terms' magnitudes */
        hl_t rs =
            hl_sqrt(h, hl_add(h, sq(m, through(m, n, 0, true)), sq(m, through(m, n, 1, true))));
        return vmax(m, rs, av).node;
    }
    case HL_OP_SUM_REDUCE: {
        if (m->defer[n->in[0].node]) return product_sum_magnitude(m, n, av).node;
        hl_t s2 = sq(m, through(m, n, 0, true)); /* the view's dims, the axis among them */
        return vmax(m, hl_sqrt(h, hl_sum_reduce(h, s2, (int)n->axis)), av).node;
    }
    case HL_OP_MUL: /* a cancelled factor scales the product's terms */
        return vmax(m, hl_mul(h, sat(m, through(m, n, 0, true)), sat(m, through(m, n, 1, true))),
                    av)
            .node;
    case HL_OP_MOD: { /* a float a - b floor(a/b): a subtraction of a and q b */
        if (!hl_dtype_is_float(n->dtype)) return av.node;
        hl_t ma = through(m, n, 0, true), mb = through(m, n, 1, true);
        hl_t a = through(m, n, 0, false), b = through(m, n, 1, false);
        hl_t q =
            hl_add(h, num(m, 1.0f), hl_mul(h, sat(m, absv(m, a)), sat(m, absv(m, hl_recip(h, b)))));
        hl_t qb = hl_mul(h, sat(m, mb), sat(m, q));
        return vmax(m, hl_sqrt(h, hl_add(h, sq(m, ma), sq(m, qb))), av).node;
    }
    case HL_OP_GATHER:
        ins[0] = m->V[n->in[0].node];
        ins[1] = m->M[n->in[1].node];
        spec_of(m, n, ins, &spec);
        return add(m, &spec);
    case HL_OP_SCATTER:
        ins[0] = m->M[n->in[0].node];
        ins[1] = m->V[n->in[1].node];
        ins[2] = m->M[n->in[2].node];
        spec_of(m, n, ins, &spec);
        return add(m, &spec);
    case HL_OP_MAX_REDUCE: {
        /* the max moves with the element that is the max, not with the largest magnitude
         * (a -1e30 mask has a huge magnitude and is never the max): the largest magnitude
         * among the elements equal to the max */
        hl_t x = through(m, n, 0, false), mx = through(m, n, 0, true);
        hl_t top =
            hl_expand(h, f32(m, v), (int)n->axis,
                      n->in[0].view.ndim > n->axis ? cp(m, n->in[0].view.dims[n->axis]) : HL_NONE);
        hl_t below = hl_cast(h, hl_lt(h, x, top), HL_F32); /* 1 where x < max */
        hl_t at_max = hl_add(h, num(m, 1.0f), hl_mul(h, below, num(m, -1.0f)));
        return hl_max_reduce(h, hl_mul(h, sat(m, mx), at_max), (int)n->axis).node;
    }
    default: /* Input, Constant, Iota, LessThan, Exp2, Log2, Sin, Recip, Sqrt */
        return av.node;
    }
}

static int build(mg *m)
{
    const hl_graph *g = m->g;
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        hl_graph_dim(m->h, hl_var_name(p, d->var), d->lo, d->hi, d->profile);
    }
    uint32_t n = hl_graph_node_count(g);
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        hl_node spec;
        if (nd->op == HL_OP_OUTPUT) { /* the output's magnitude, through its view */
            uint32_t src = m->M[nd->in[0].node];
            spec_of(m, nd, &src, &spec);
            add(m, &spec);
        } else {
            uint32_t ins[HL_MAX_INPUTS];
            for (uint32_t i = 0; i < nd->n_in && i < HL_MAX_INPUTS; i++)
                ins[i] = m->V[nd->in[i].node];
            spec_of(m, nd, ins, &spec);
            m->V[id] = add(m, &spec);
            if (m->V[id] != HL_NONE && !m->defer[id]) m->M[id] = magnitude_of(m, id);
        }
        if (hl_graph_error(m->h)->code != 0 || hl_expr_pool_failed(hl_graph_exprs(m->h))) break;
    }
    if (hl_expr_pool_failed(hl_graph_exprs(m->h)))
        return ll__fail(m->err, LM_ENOMEM, NULL, "magnitudes: out of memory");
    return ll__hl_graph_status(m->h, "magnitudes: building the magnitude graph", m->err);
}

int ll_output_magnitudes(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
                         hl_tensor *mag, lm_err *err)
{
    if (!g || !mag || (hl_graph_input_count(g) && !inputs))
        return ll__fail(err, LM_EARG, NULL, "ll_output_magnitudes: no graph, inputs or outputs");
    if (hl_graph_error(g)->code != 0)
        return ll__fail(err, LM_EARG, NULL,
                        "ll_output_magnitudes: the graph holds a builder error");
    uint32_t n = hl_graph_node_count(g);
    mg m = {.g = g, .err = err};
    m.h = hl_graph_new();
    m.memo = ll__alloc(hl_expr_count(hl_graph_exprs_c(g)) + 1, sizeof(hl_expr));
    m.V = ll__alloc(n ? n : 1, sizeof(uint32_t));
    m.M = ll__alloc(n ? n : 1, sizeof(uint32_t));
    double *w = ll__zalloc(n ? n : 1, sizeof(double));
    uint32_t *readers = ll__zalloc(n ? n : 1, sizeof(uint32_t));
    m.defer = ll__zalloc(n ? n : 1, sizeof(bool));
    m.w = w;
    int rc = 0;
    if (!m.h || !m.memo || !m.V || !m.M || !w || !readers || !m.defer)
        rc = ll__fail(err, LM_ENOMEM, NULL, "magnitudes: out of memory");
    if (!rc) rc = ll__path_weights(g, dim_values, w, err);
    for (uint32_t id = 0; !rc && id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        for (uint32_t i = 0; i < nd->n_in && i < HL_MAX_INPUTS; i++)
            readers[nd->in[i].node]++;
    }
    for (uint32_t id = 0; !rc && id < n; id++) { /* the Mul read by one SumReduce only */
        const hl_node *nd = hl_graph_node(g, id);
        if (nd->op != HL_OP_SUM_REDUCE || nd->n_in < 1) continue;
        uint32_t x = nd->in[0].node;
        const hl_node *xn = hl_graph_node(g, x);
        m.defer[x] = xn->op == HL_OP_MUL && xn->n_in == 2 && readers[x] == 1 && w[x] != 0.0 &&
                     w[id] != 0.0;
    }
    if (!rc) {
        for (uint32_t i = 0; i <= hl_expr_count(hl_graph_exprs_c(g)); i++)
            m.memo[i] = HL_NONE;
        for (uint32_t i = 0; i < n; i++)
            m.V[i] = m.M[i] = HL_NONE;
        rc = build(&m);
    }
    if (!rc) rc = ll__hl_run(m.h, dim_values, inputs, mag, "magnitudes", err);
    hl_graph_free(m.h);
    ll__free(m.memo);
    ll__free(m.V);
    ll__free(m.M);
    ll__free(w);
    ll__free(readers);
    ll__free(m.defer);
    return rc;
}
