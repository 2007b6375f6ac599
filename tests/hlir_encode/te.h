/* te.h - helpers shared by the encoding tests: engines holding an encoding, serialized
 * bytes, round trips, example graphs, random inputs. Header-only (static functions). */
#ifndef LUMINAL_TESTS_HLIR_ENCODE_TE_H
#define LUMINAL_TESTS_HLIR_ENCODE_TE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include "hlir.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TE_MAX_EXAMPLES 64

/* The engine's serialized e-graph as JSON text (malloc'd). */
static inline char *te_serialized(eg_engine *e)
{
    eg_serialized s;
    lm_err ee = {0};
    ck_assert_msg(eg_serialize(e, NULL, &s, &ee) == 0, "serialize: %s", ee.msg);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(eg_serialized_write_json(e, &s, f, NULL), 0);
    fclose(f);
    eg_serialized_free(&s);
    return buf;
}

/* A new engine holding g encoded through the C API. */
static inline eg_engine *te_encode_c(const hl_graph *g, hl_encoding *enc)
{
    eg_engine *e = eg_engine_new(NULL, NULL);
    hl_error err;
    hl_error_clear(&err);
    hl_encoding local;
    ck_assert_msg(hl_graph_encode(g, e, enc ? enc : &local, &err) == HL_OK, "encode: %s", err.msg);
    if (!enc) hl_encoding_fini(&local);
    return e;
}

/* A new engine that ran the schema and g's program text. */
static inline eg_engine *te_encode_text(const hl_graph *g)
{
    hl_error err;
    hl_error_clear(&err);
    char *text = hl_graph_encode_text(g, true, &err);
    ck_assert_msg(text != NULL, "encode text: %s", err.msg);
    eg_engine *e = eg_engine_new(NULL, NULL);
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e, text, "encoding", &ee) == 0, "run: %s", ee.msg);
    free(text);
    return e;
}

/* decode(encode(g)), asserting success. */
static inline hl_graph *te_roundtrip(const hl_graph *g)
{
    eg_engine *e = te_encode_c(g, NULL);
    hl_error err;
    hl_error_clear(&err);
    hl_graph *d = hl_graph_decode_engine(e, &err);
    ck_assert_msg(d != NULL, "decode: %s", err.msg);
    eg_engine_free(e);
    return d;
}

static inline char *te_json(const hl_graph *g)
{
    hl_error err;
    hl_error_clear(&err);
    char *j = hl_graph_write_json(g, &err);
    ck_assert_msg(j != NULL, "write json: %s", err.msg);
    return j;
}

static int te_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The paths of the example graphs (examples/graphs, *.json) in name order (malloc'd strings); the
 * count. */
static inline int te_examples(char **paths)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/examples/graphs", LUMINAL_SOURCE_DIR);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < TE_MAX_EXAMPLES) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
        char *p = malloc(strlen(dir) + len + 2);
        sprintf(p, "%s/%s", dir, de->d_name);
        paths[n++] = p;
    }
    closedir(d);
    qsort(paths, (size_t)n, sizeof(char *), te_name_cmp);
    return n;
}

static inline hl_graph *te_load(const char *path)
{
    hl_error err;
    hl_error_clear(&err);
    hl_graph *g = hl_graph_load_json(path, &err);
    ck_assert_msg(g != NULL, "%s: %s", path, err.msg);
    return g;
}

/* Seeded inputs for g at its dims' profile values (dims[] receives them). Floats in
 * [-2, 2), Int in [0, 4), Bool 0/1. */
static inline void te_inputs(const hl_graph *g, uint64_t seed, int64_t *dims, hl_tensor *in)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nv = hl_var_count(p);
    int64_t vals[64] = {0};
    bool bound[64] = {0};
    ck_assert_uint_le(nv, 64);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        dims[i] = d->profile;
        vals[d->var] = d->profile;
        bound[d->var] = true;
    }
    hl_env env = {vals, bound, nv};
    uint64_t st = seed * 2654435761u + 1;
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        const hl_node *x = hl_graph_node(g, hl_graph_input(g, i));
        int64_t sh[HL_MAX_DIMS];
        hl_error err;
        hl_error_clear(&err);
        for (uint32_t k = 0; k < x->ndim; k++)
            ck_assert_msg(hl_e_eval(p, x->shape[k], &env, 0, &sh[k], &err) == HL_OK, "%s", err.msg);
        ck_assert_msg(hl_tensor_init(&in[i], x->dtype, x->ndim, sh, &err) == HL_OK, "%s", err.msg);
        for (size_t k = 0; k < in[i].numel; k++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(st >> 11) / 9007199254740992.0;
            double v = x->dtype == HL_BOOL                        ? (u < 0.5)
                       : x->dtype == HL_INT || x->dtype == HL_I64 ? floor(u * 4)
                                                                  : u * 4 - 2;
            hl_tensor_set(&in[i], k, v);
        }
    }
}

#endif
