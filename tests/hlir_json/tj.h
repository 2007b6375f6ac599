/* tj.h - helpers shared by the JSON graph format tests: reading files and strings,
 * listing the example graphs, seeded inputs, running graphs and comparing outputs.
 * Header-only (static functions) so each test program stays one file. */
#ifndef LUMINAL_TESTS_HLIR_JSON_TJ_H
#define LUMINAL_TESTS_HLIR_JSON_TJ_H

#include "hl_fixtures.h"
#include "hlir.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TJ_EXAMPLES LUMINAL_SOURCE_DIR "/examples/graphs"

/* The whole file at path, NUL-terminated; *len its length. Asserts success. */
static inline char *tj_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

/* The example graphs' file names (*.json), sorted; *n their count. Fails the test when the
 * folder cannot be read or holds another number of graphs than
 * examples/graphs/README.md lists. Free with tj_free_list. */
static inline char **tj_examples(size_t *n)
{
    size_t want = hl_fixture_examples_expected(LUMINAL_SOURCE_DIR);
    char **paths = hl_fixture_examples(LUMINAL_SOURCE_DIR, n);
    ck_assert_msg(paths != NULL, "cannot open %s", TJ_EXAMPLES);
    ck_assert_msg(want > 0 && *n == want,
                  "found %zu example graphs; examples/graphs/README.md lists %zu", *n, want);
    for (size_t i = 0; i < *n; i++) { /* keep the file names */
        const char *base = strrchr(paths[i], '/') + 1;
        memmove(paths[i], base, strlen(base) + 1);
    }
    return paths;
}

static inline void tj_free_list(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static inline hl_graph *tj_load_example(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TJ_EXAMPLES, name);
    lm_err e;
    lm_err_clear(&e);
    hl_graph *g = hl_graph_load_json(path, &e);
    ck_assert_msg(g != NULL, "%s: %s", name, e.msg);
    return g;
}

/* Reads text (asserting success). */
static inline hl_graph *tj_read(const char *text)
{
    lm_err e;
    lm_err_clear(&e);
    hl_graph *g = hl_graph_read_json(text, strlen(text), "t.json", &e);
    ck_assert_msg(g != NULL, "rejected: %s", e.msg);
    return g;
}

/* Writes g (asserting success); free() the result. */
static inline char *tj_write(const hl_graph *g)
{
    lm_err e;
    lm_err_clear(&e);
    char *s = hl_graph_write_json(g, &e);
    ck_assert_msg(s != NULL, "write failed: %s", e.msg);
    return s;
}

/* hl_graph_dump into a string; free() the result. */
static inline char *tj_dump(const hl_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    hl_graph_dump(g, f);
    fclose(f);
    return buf;
}

/* Dim values: every dim at min(v, its max), at least its min. vals has one per dim. */
static inline void tj_dims(const hl_graph *g, int64_t v, int64_t *vals)
{
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        vals[i] = v < d->lo ? d->lo : v > d->hi ? d->hi : v;
    }
}

/* Value of shape expression e under dims vals (by declaration order). */
static inline int64_t tj_eval(const hl_graph *g, hl_expr e, const int64_t *vals)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvar = hl_var_count(p);
    int64_t byvar[64] = {0};
    bool bound[64] = {false};
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        if (d->var < 64) {
            byvar[d->var] = vals[i];
            bound[d->var] = true;
        }
    }
    hl_env env = {byvar, bound, nvar < 64 ? nvar : 64};
    int64_t out = 0;
    lm_err err;
    lm_err_clear(&err);
    ck_assert_msg(hl_e_eval(p, e, &env, 0, &out, &err) == HL_OK, "%s", err.msg);
    return out;
}

/* The largest node of g (elements) under dims vals. */
static inline int64_t tj_largest_node(const hl_graph *g, const int64_t *vals)
{
    int64_t best = 0;
    for (uint32_t i = 0; i < hl_graph_node_count(g); i++) {
        const hl_node *n = hl_graph_node(g, i);
        int64_t k = 1;
        for (uint32_t d = 0; d < n->ndim; d++)
            k *= tj_eval(g, n->shape[d], vals);
        if (k > best) best = k;
    }
    return best;
}

/* Inputs of g under dims vals, filled from seed as every tool fills a graph's inputs
 * (hl_graph_fill_input: each input's init, or floats in [-1, 1) and ints in [0, 4)).
 * Caller frees with tj_free_tensors(in, hl_graph_input_count). */
static inline hl_tensor *tj_inputs(const hl_graph *g, const int64_t *vals, uint64_t seed)
{
    uint32_t n = hl_graph_input_count(g);
    hl_tensor *in = calloc(n ? n : 1, sizeof *in);
    for (uint32_t i = 0; i < n; i++) {
        const hl_node *nd = hl_graph_node(g, hl_graph_input(g, i));
        int64_t dims[HL_MAX_DIMS];
        for (uint32_t d = 0; d < nd->ndim; d++)
            dims[d] = tj_eval(g, nd->shape[d], vals);
        lm_err err;
        lm_err_clear(&err);
        ck_assert_msg(hl_tensor_init(&in[i], nd->dtype, nd->ndim, dims, &err) == HL_OK, "%s",
                      err.msg);
        ck_assert_msg(hl_graph_fill_input(g, i, &in[i], seed, &err) == HL_OK, "%s", err.msg);
    }
    return in;
}

static inline void tj_free_tensors(hl_tensor *t, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        hl_tensor_fini(&t[i]);
    free(t);
}

/* Runs g; outputs are returned (free with tj_free_tensors(out, output count)). */
static inline hl_tensor *tj_run(const hl_graph *g, const int64_t *vals, const hl_tensor *in)
{
    uint32_t n = hl_graph_output_count(g);
    hl_tensor *out = calloc(n ? n : 1, sizeof *out);
    lm_err err;
    lm_err_clear(&err);
    ck_assert_msg(hl_run(g, vals, in, out, NULL, &err) == HL_OK, "run failed: %s", err.msg);
    return out;
}

/* Asserts both output lists hold the same dtypes, dims and bytes. */
static inline void tj_same_outputs(const hl_tensor *a, const hl_tensor *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_int_eq(a[i].dtype, b[i].dtype);
        ck_assert_uint_eq(a[i].ndim, b[i].ndim);
        ck_assert_uint_eq(a[i].numel, b[i].numel);
        for (uint32_t d = 0; d < a[i].ndim; d++)
            ck_assert_int_eq(a[i].dims[d], b[i].dims[d]);
        ck_assert_msg(memcmp(a[i].data, b[i].data, a[i].numel * hl_dtype_size(a[i].dtype)) == 0,
                      "output %u differs", i);
    }
}

#endif /* LUMINAL_TESTS_HLIR_JSON_TJ_H */
