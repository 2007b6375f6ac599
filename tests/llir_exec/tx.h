/* tx.h - helpers shared by the executor's tests: inputs for a graph, running the
 * reference and the executor, comparing bits. Header-only (static functions), so each
 * test stays one file. */
#ifndef LUMINAL_TESTS_LLIR_EXEC_TX_H
#define LUMINAL_TESTS_LLIR_EXEC_TX_H

#include "llir.h"

#include "lm_check.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TX_MAX_IO 16

/* Every dim of g at `v` clamped to its range (v <= 0: the profile value). */
static inline void tx_dims(const hl_graph *g, int64_t v, int64_t *out)
{
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        int64_t x = v > 0 ? v : d->profile;
        out[i] = x < d->lo ? d->lo : x > d->hi ? d->hi : x;
    }
}

/* Evaluates the shape of HLIR node id at dims (indexed like hl_graph_dim_at). */
static inline void tx_shape(const hl_graph *g, uint32_t id, const int64_t *dims, int64_t *out)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    int64_t vals[64] = {0};
    bool bound[64] = {false};
    ck_assert_uint_le(hl_var_count(p), 64);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        vals[hl_graph_dim_at(g, i)->var] = dims[i];
        bound[hl_graph_dim_at(g, i)->var] = true;
    }
    hl_env env = {vals, bound, hl_var_count(p)};
    const hl_node *n = hl_graph_node(g, id);
    for (uint32_t d = 0; d < n->ndim; d++) {
        hl_error e;
        hl_error_clear(&e);
        ck_assert_msg(hl_e_eval(p, n->shape[d], &env, 0, &out[d], &e) == 0, "%s", e.msg);
    }
}

/* Seeded inputs of g at dims: input i from stream i, as luminal_search --reference. */
static inline void tx_inputs(const hl_graph *g, const int64_t *dims, uint64_t seed, hl_tensor *in)
{
    ck_assert_uint_le(hl_graph_input_count(g), TX_MAX_IO);
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        uint32_t id = hl_graph_input(g, i);
        const hl_node *n = hl_graph_node(g, id);
        int64_t shape[HL_MAX_DIMS];
        tx_shape(g, id, dims, shape);
        hl_error e;
        hl_error_clear(&e);
        ck_assert_msg(hl_tensor_init(&in[i], n->dtype, n->ndim, shape, &e) == 0, "%s", e.msg);
        hl_tensor_fill_random(&in[i], seed, i);
    }
}

static inline void tx_free(hl_tensor *t, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        hl_tensor_fini(&t[i]);
}

static inline void tx_ref(const hl_graph *g, const int64_t *dims, const hl_tensor *in,
                          hl_tensor *out)
{
    ck_assert_uint_le(hl_graph_output_count(g), TX_MAX_IO);
    hl_error e;
    hl_error_clear(&e);
    ck_assert_msg(hl_run(g, dims, in, out, &e) == 0, "reference: %s", e.msg);
}

static inline void tx_ll(const ll_graph *g, const int64_t *dims, const hl_tensor *in,
                         hl_tensor *out)
{
    lm_err e = {0};
    ck_assert_msg(ll_run(g, dims, in, out, 0, &e) == 0, "ll_run: %s", e.msg);
}

/* Whether two tensors hold the same dtype, dims and bytes. */
static inline bool tx_same_bits(const hl_tensor *a, const hl_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->numel != b->numel) return false;
    for (uint32_t d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return a->numel == 0 || memcmp(a->data, b->data, a->numel * hl_dtype_size(a->dtype)) == 0;
}

/* The index of the first element whose bytes differ (numel when none). */
static inline size_t tx_first_diff(const hl_tensor *a, const hl_tensor *b)
{
    size_t es = hl_dtype_size(a->dtype);
    for (size_t i = 0; i < a->numel && i < b->numel; i++)
        if (memcmp((const char *)a->data + i * es, (const char *)b->data + i * es, es)) return i;
    return a->numel;
}

/* Asserts every output of ll_run on the lowering of g equals hl_run's bit for bit. */
static inline void tx_expect_same(const hl_graph *g, const ll_graph *lg, const int64_t *dims,
                                  uint64_t seed, const char *what)
{
    hl_tensor in[TX_MAX_IO], ref[TX_MAX_IO], got[TX_MAX_IO];
    tx_inputs(g, dims, seed, in);
    tx_ref(g, dims, in, ref);
    tx_ll(lg, dims, in, got);
    uint32_t no = hl_graph_output_count(g);
    ck_assert_uint_eq(ll_graph_output_count(lg), no);
    for (uint32_t o = 0; o < no; o++) {
        size_t i = tx_first_diff(&got[o], &ref[o]);
        ck_assert_msg(tx_same_bits(&got[o], &ref[o]),
                      "%s: output %u differs from the reference at element %zu of %zu: %.9g vs "
                      "%.9g",
                      what, o, i, ref[o].numel, i < got[o].numel ? hl_tensor_get(&got[o], i) : 0.0,
                      i < ref[o].numel ? hl_tensor_get(&ref[o], i) : 0.0);
    }
    tx_free(in, hl_graph_input_count(g));
    tx_free(ref, no);
    tx_free(got, no);
}

#endif /* LUMINAL_TESTS_LLIR_EXEC_TX_H */
