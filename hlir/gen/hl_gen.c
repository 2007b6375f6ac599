/* hl_gen.c - a seeded generator of random valid graphs, for fuzzing and round-trip tests.
 *
 * The generator keeps a pool of tensor handles (the inputs, then every result) and adds
 * ops drawn at random through the builder: unary and binary elementwise ops (binary
 * operands are picked so numpy broadcasting applies), reductions, softmax and norms,
 * views, pad, concat, matmuls against fresh weight inputs, and gathers, embeddings and
 * scatters whose indexes are iota expressions taken modulo the indexed element count, so
 * every index is in range at any dim value. A draw the builder refuses is undone by the builder
 * itself (its calls are atomic), the error is cleared and the draw skipped, so the result is valid
 * by construction; hl_graph_check confirms it before the graph is returned.
 *
 * Randomness is base's PCG32 (lm_pcg_*), seeded from the caller's seed only: the
 * same seed and options give the same graph.
 */
#include "hl_int.h"
#include "hl_build.h"
#include "hl_gen.h"

#include <stdio.h>

#define GEN_MAX_POOL 256
#define GEN_MAX_NUMEL 4096 /* elements of any generated tensor, dims at their max */
#define GEN_MAX_DIM 64     /* the largest max_dim option taken */

typedef struct gen {
    hl_graph *g;
    hl_expr_pool *p;
    lm_pcg32 rng;
    hl_gen_opts o;
    hl_expr dyn;     /* the dynamic dim, or HL_NONE */
    int64_t dyn_max; /* its max */
    hl_t pool[GEN_MAX_POOL];
    uint32_t n_pool;
    uint32_t n_inputs;
} gen;

/* Element count of dims with the dynamic dim at its max; INT64_MAX when unknown or over
 * GEN_MAX_NUMEL. */
static int64_t numel_max(gen *s, uint32_t ndim, const hl_expr *dims)
{
    int64_t n = 1;
    for (uint32_t d = 0; d < ndim; d++) {
        int64_t x;
        if (!hl_e_is_num(s->p, dims[d], &x)) x = dims[d] == s->dyn ? s->dyn_max : INT64_MAX;
        if (x == INT64_MAX || x > GEN_MAX_NUMEL) return INT64_MAX;
        n *= x;
        if (n > GEN_MAX_NUMEL) return INT64_MAX;
    }
    return n;
}

static hl_expr rand_dim(gen *s)
{
    if (s->dyn != HL_NONE && lm_pcg_below(&s->rng, 4) == 0) return s->dyn;
    return hl_n(s->g, 1 + (int64_t)lm_pcg_below(&s->rng, s->o.max_dim));
}

static void keep(gen *s, hl_t t)
{
    if (t.node == HL_NONE) {
        hl_graph_clear_error(s->g); /* the builder undid the call; skip this draw */
        return;
    }
    if (numel_max(s, t.view.ndim, t.view.dims) == INT64_MAX || s->n_pool == GEN_MAX_POOL) return;
    s->pool[s->n_pool++] = t;
}

static hl_t new_input(gen *s, uint32_t ndim, const hl_expr *dims)
{
    char name[16];
    snprintf(name, sizeof name, "in%u", s->n_inputs++);
    return hl_input(s->g, name, HL_F32, ndim, dims);
}

static hl_t pick(gen *s)
{
    return s->pool[lm_pcg_below(&s->rng, s->n_pool)];
}

/* Whether b broadcasts against a (numpy rules, dims compared by id). */
static bool broadcastable(const hl_expr_pool *p, const hl_view *a, const hl_view *b)
{
    uint32_t n = a->ndim < b->ndim ? a->ndim : b->ndim;
    for (uint32_t i = 1; i <= n; i++) {
        hl_expr x = a->dims[a->ndim - i], y = b->dims[b->ndim - i];
        int64_t v;
        if (x == y || (hl_e_is_num(p, x, &v) && v == 1) || (hl_e_is_num(p, y, &v) && v == 1))
            continue;
        return false;
    }
    return true;
}

/* A float partner for a binary op on a: a broadcastable pool member, or a constant. */
static hl_t partner(gen *s, hl_t a)
{
    uint32_t start = lm_pcg_below(&s->rng, s->n_pool);
    for (uint32_t k = 0; k < s->n_pool; k++) {
        hl_t b = s->pool[(start + k) % s->n_pool];
        if (b.dtype == a.dtype && broadcastable(s->p, &a.view, &b.view)) return b;
    }
    return hl_scalar(s->g, 0.5f + (float)lm_pcg_below(&s->rng, 4), a.dtype);
}

static void add_unary(gen *s, hl_t x)
{
    switch (lm_pcg_below(&s->rng, 10)) {
    case 0:
        keep(s, hl_sin(s->g, x));
        break;
    case 1:
        keep(s, hl_exp2(s->g, hl_mul_scalar(s->g, x, 0.25f)));
        break;
    case 2:
        keep(s, hl_tanh(s->g, x));
        break;
    case 3:
        keep(s, hl_sigmoid(s->g, x));
        break;
    case 4:
        keep(s, hl_neg(s->g, x));
        break;
    case 5:
        keep(s, hl_silu(s->g, x));
        break;
    case 6:
        keep(s, hl_relu(s->g, x));
        break;
    case 7:
        keep(s, hl_sqrt(s->g, hl_add_scalar(s->g, hl_mul(s->g, x, x), 1.0f)));
        break;
    case 8:
        keep(s, hl_log(s->g, hl_add_scalar(s->g, hl_mul(s->g, x, x), 1.0f)));
        break;
    default:
        keep(s, hl_cast(s->g, hl_cast(s->g, x, HL_BF16), HL_F32));
        break;
    }
}

static void add_binary(gen *s, hl_t a)
{
    hl_t b = partner(s, a);
    if (lm_pcg_below(&s->rng, 2)) { /* either operand order */
        hl_t t = a;
        a = b;
        b = t;
    }
    switch (lm_pcg_below(&s->rng, 7)) {
    case 0:
        keep(s, hl_add(s->g, a, b));
        break;
    case 6:
        keep(s, hl_mod(s->g, a, hl_add_scalar(s->g, hl_mul(s->g, b, b), 1.0f)));
        break;
    case 1:
        keep(s, hl_mul(s->g, a, b));
        break;
    case 2:
        keep(s, hl_sub(s->g, a, b));
        break;
    case 3:
        keep(s, hl_maximum(s->g, a, b));
        break;
    case 4:
        keep(s, hl_where(s->g, hl_lt(s->g, a, b), a, b));
        break;
    default:
        keep(s, hl_div(s->g, a, hl_add_scalar(s->g, hl_mul(s->g, b, b), 1.0f)));
        break;
    }
}

static void add_reduce(gen *s, hl_t x)
{
    if (x.view.ndim == 0) return;
    int axis = (int)lm_pcg_below(&s->rng, x.view.ndim);
    bool keepdim = lm_pcg_below(&s->rng, 2);
    switch (lm_pcg_below(&s->rng, 6)) {
    case 0:
        keep(s, hl_sum(s->g, x, 1, &axis, keepdim));
        break;
    case 1:
        keep(s, hl_max(s->g, x, 1, &axis, keepdim));
        break;
    case 2:
        keep(s, hl_mean(s->g, x, 1, &axis, keepdim));
        break;
    case 3:
        keep(s, hl_softmax(s->g, x, axis));
        break;
    case 4: {
        hl_t none = x;
        none.node = HL_NONE;
        keep(s, hl_rms_norm(s->g, x, none, 1e-5f));
        break;
    }
    default: {
        hl_t none = x;
        none.node = HL_NONE;
        keep(s, hl_layer_norm(s->g, x, none, none, 1e-5f));
        break;
    }
    }
}

static void add_view(gen *s, hl_t x)
{
    uint32_t nd = x.view.ndim;
    switch (lm_pcg_below(&s->rng, 4)) {
    case 0: { /* permute: reverse the dims */
        if (nd < 2) return;
        uint32_t perm[HL_MAX_DIMS];
        for (uint32_t i = 0; i < nd; i++)
            perm[i] = nd - 1 - i;
        keep(s, hl_permute(s->g, x, perm));
        break;
    }
    case 1: { /* reshape: merge the last two dims when both are numbers */
        int64_t a, b;
        if (nd < 2 || !hl_e_is_num(s->p, x.view.dims[nd - 2], &a) ||
            !hl_e_is_num(s->p, x.view.dims[nd - 1], &b))
            return;
        hl_expr dims[HL_MAX_DIMS];
        for (uint32_t i = 0; i + 2 < nd; i++)
            dims[i] = x.view.dims[i];
        dims[nd - 2] = hl_n(s->g, a * b);
        keep(s, hl_reshape(s->g, x, nd - 1, dims));
        break;
    }
    case 2: { /* expand: a new broadcast dim, then an op so it is read */
        if (nd >= 4) return;
        hl_t e = hl_expand(s->g, x, (int)lm_pcg_below(&s->rng, nd + 1), hl_n(s->g, 2));
        keep(s, hl_add_scalar(s->g, e, 1.0f));
        break;
    }
    default: { /* slice a number dim of size >= 2 */
        if (nd == 0) return;
        int axis = (int)lm_pcg_below(&s->rng, nd);
        int64_t len;
        if (!hl_e_is_num(s->p, x.view.dims[axis], &len) || len < 2) return;
        int64_t start = lm_pcg_below(&s->rng, 2);
        keep(s, hl_slice(s->g, x, axis, hl_n(s->g, start), hl_n(s->g, len - 1 + start)));
        break;
    }
    }
}

static void add_matmul(gen *s, hl_t a)
{
    if (a.view.ndim < 1 || a.view.ndim > 3) return;
    hl_expr dims[2] = {a.view.dims[a.view.ndim - 1], rand_dim(s)};
    hl_t w = new_input(s, 2, dims);
    keep(s, hl_matmul(s->g, a, w));
}

static void add_gather(gen *s, hl_t data)
{
    hl_expr n = hl_view_numel(s->p, &data.view);
    hl_expr z = hl_e_z(s->p);
    int64_t k = 1 + lm_pcg_below(&s->rng, 5), c = lm_pcg_below(&s->rng, 7);
    hl_expr e = hl_e_mod(s->p, hl_e_add(s->p, hl_e_mul(s->p, z, hl_n(s->g, k)), hl_n(s->g, c)), n);
    hl_expr dims[2] = {rand_dim(s), rand_dim(s)};
    uint32_t nd = 1 + lm_pcg_below(&s->rng, 2);
    hl_t idx = hl_iota_nd(s->g, e, nd, dims);
    keep(s, hl_gather(s->g, idx, data));
}

/* Pad, concat, embedding or scatter: the builder ops made of several primitives. */
static void add_misc(gen *s, hl_t x)
{
    uint32_t nd = x.view.ndim;
    switch (lm_pcg_below(&s->rng, 4)) {
    case 0: /* pad an axis */
        if (nd == 0) return;
        keep(s,
             hl_pad(s->g, x, (int)lm_pcg_below(&s->rng, nd), hl_n(s->g, lm_pcg_below(&s->rng, 3)),
                    hl_n(s->g, 1 + lm_pcg_below(&s->rng, 2)), -1.0f));
        break;
    case 1: /* concat with itself */
        if (nd == 0) return;
        keep(s, hl_concat(s->g, x, hl_neg(s->g, x), (int)lm_pcg_below(&s->rng, nd)));
        break;
    case 2: { /* embedding: rows of a 2-D tensor picked by iota ids */
        int64_t rows;
        if (nd != 2 || !hl_e_is_num(s->p, x.view.dims[0], &rows)) return;
        hl_expr z = hl_e_z(s->p);
        hl_expr e = hl_e_mod(s->p, hl_e_add(s->p, hl_e_mul(s->p, z, hl_n(s->g, 3)), hl_n(s->g, 1)),
                             hl_n(s->g, rows));
        hl_expr dims[1] = {rand_dim(s)};
        keep(s, hl_embedding(s->g, x, hl_iota_nd(s->g, e, 1, dims)));
        break;
    }
    default: { /* scatter a constant into x at iota positions */
        hl_expr n = hl_view_numel(s->p, &x.view);
        hl_expr z = hl_e_z(s->p);
        hl_expr e = hl_e_mod(s->p, hl_e_mul(s->p, z, hl_n(s->g, 2)), n);
        hl_expr dims[1] = {hl_n(s->g, 1 + lm_pcg_below(&s->rng, 3))};
        hl_t idx = hl_iota_nd(s->g, e, 1, dims);
        hl_t src = hl_full(s->g, 2.0f, x.dtype, 1, dims);
        keep(s, hl_scatter(s->g, x, idx, src));
        break;
    }
    }
}

hl_graph *hl_graph_generate(uint64_t seed, const hl_gen_opts *opts, lm_err *err)
{
    gen s;
    memset(&s, 0, sizeof s);
    if (opts) s.o = *opts;
    if (s.o.n_ops == 0) s.o.n_ops = 12;
    if (s.o.max_dim == 0) s.o.max_dim = 6;
    if (s.o.max_dim > GEN_MAX_DIM) s.o.max_dim = GEN_MAX_DIM;
    lm_pcg_seed(&s.rng, seed, 0x9e3779b97f4a7c15ULL);
    s.g = hl_graph_new();
    if (!s.g) {
        hl__fail(err, HL_ERR_NOMEM, NULL, "generate: out of memory");
        return NULL;
    }
    s.p = hl_graph_exprs(s.g);
    s.dyn = HL_NONE;
    if (s.o.dynamic) {
        s.dyn_max = 2 + lm_pcg_below(&s.rng, 6);
        s.dyn = hl_graph_dim(s.g, "N", 1, s.dyn_max, 1 + lm_pcg_below(&s.rng, (uint32_t)s.dyn_max));
    }
    uint32_t n_in = 1 + lm_pcg_below(&s.rng, 3);
    for (uint32_t i = 0; i < n_in; i++) {
        uint32_t nd = 1 + lm_pcg_below(&s.rng, 3);
        hl_expr dims[HL_MAX_DIMS];
        /* an input over GEN_MAX_NUMEL (which the pool would not take, leaving it empty when
           every input is) is drawn again, a dim fewer each time */
        for (uint32_t try_nd = nd;; try_nd--) {
            nd = try_nd;
            for (uint32_t d = 0; d < nd; d++)
                dims[d] = rand_dim(&s);
            if (nd == 1 || numel_max(&s, nd, dims) != INT64_MAX) break;
        }
        keep(&s, new_input(&s, nd, dims));
    }
    for (uint32_t i = 0; i < s.o.n_ops && s.n_pool; i++) {
        hl_t x = s.n_pool > 1 && lm_pcg_below(&s.rng, 3) ? s.pool[s.n_pool - 1] : pick(&s);
        switch (lm_pcg_below(&s.rng, 11)) {
        case 0:
        case 1:
            add_unary(&s, x);
            break;
        case 2:
        case 3:
            add_binary(&s, x);
            break;
        case 4:
        case 5:
            add_reduce(&s, x);
            break;
        case 6:
        case 7:
            add_view(&s, x);
            break;
        case 8:
            add_matmul(&s, x);
            break;
        case 9:
            add_misc(&s, x);
            break;
        default:
            add_gather(&s, x);
            break;
        }
    }
    /* Outputs: the last result, and sometimes one more. */
    uint32_t n_out = 1 + (s.n_pool > 2 ? lm_pcg_below(&s.rng, 2) : 0);
    for (uint32_t i = 0; i < n_out; i++) {
        hl_t t = i == 0 ? s.pool[s.n_pool - 1] : pick(&s);
        char name[16];
        snprintf(name, sizeof name, "out%u", i);
        if (hl_output(s.g, name, t) == HL_NONE) break;
    }
    lm_err e;
    lm_err_clear(&e);
    if (hl_graph_error(s.g)->code != HL_OK) {
        hl__fail(err, hl_graph_error(s.g)->code, NULL, "generate (seed %llu): %s",
                 (unsigned long long)seed, hl_graph_error(s.g)->msg);
        hl_graph_free(s.g);
        return NULL;
    }
    if (hl_graph_check(s.g, &e) != HL_OK) {
        hl__fail(err, e.code, NULL, "generate (seed %llu): invalid graph: %s",
                 (unsigned long long)seed, e.msg);
        hl_graph_free(s.g);
        return NULL;
    }
    return s.g;
}
