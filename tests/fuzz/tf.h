/* tf.h - helpers shared by the genome-fuzzing tests: the compiler's rules, example graphs
 * made small (every static size of a workload shrunk by one table, the dynamic dims set
 * by the fuzzer), generated graphs, and a hook that records what failed. Header-only
 * (static functions). */
#ifndef LUMINAL_TESTS_FUZZ_TF_H
#define LUMINAL_TESTS_FUZZ_TF_H

#include "hl_fixtures.h"
#include "lm_check.h"
#include "fuzz.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TF_DATA LUMINAL_SOURCE_DIR "/tests/fuzz/data"
#define TF_MAX_INPUT_ELEMENTS 65536 /* a small example's inputs, all of them, at its dims */

static inline char *tf_read(const char *path)
{
    lm_err err = {0};
    char *t = lm_read_file(path, 0, NULL, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    return t;
}

/* The compiler's rules (rules.dsl has no include: it is embedded as it is). */
static inline char *tf_rules(void)
{
    return tf_read(LUMINAL_SOURCE_DIR "/rules.dsl");
}

/* The workloads' static sizes and their small stand-ins: d 2048 and 4096 become 16,
 * hidden 8192 and softmax's 8192 columns 32, 32 heads of 64 become 2 of 8 (so 2048 =
 * 32 x 64 stays 16 = 2 x 8 in every reshape). */
static const int64_t TF_SHRINK[][2] = {{2048, 16}, {4096, 16}, {8192, 32}, {32, 2}, {64, 8}};

static inline void tf_shrink_shape(json_t *shape)
{
    size_t i;
    json_t *v;
    json_array_foreach(shape, i, v)
    {
        if (!json_is_integer(v)) continue;
        for (size_t k = 0; k < sizeof TF_SHRINK / sizeof TF_SHRINK[0]; k++)
            if (json_integer_value(v) == TF_SHRINK[k][0]) {
                json_integer_set(v, TF_SHRINK[k][1]);
                break;
            }
    }
}

/* Every "shape" array anywhere in the document (inputs, reshapes, explicit views). */
static inline void tf_shrink_all(json_t *j)
{
    if (json_is_object(j)) {
        const char *key;
        json_t *v;
        json_object_foreach(j, key, v)
        {
            if (strcmp(key, "shape") == 0 && json_is_array(v))
                tf_shrink_shape(v);
            else
                tf_shrink_all(v);
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) tf_shrink_all(v);
    }
}

static inline hl_graph *tf_read_graph(const char *text, const char *source)
{
    lm_err he = {0};
    hl_graph *g = hl_graph_read_json(text, strlen(text), source, &he);
    ck_assert_msg(g != NULL, "%s: %s", source, he.msg);
    return g;
}

/* The example graph at path with its static sizes shrunk (TF_SHRINK). */
static inline hl_graph *tf_small_example(const char *path)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    ck_assert_msg(doc != NULL, "%s:%d: %s", path, je.line, je.text);
    tf_shrink_all(doc);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    ck_assert_ptr_nonnull(text);
    hl_graph *g = tf_read_graph(text, path);
    free(text);
    return g;
}

static inline hl_graph *tf_load(const char *path)
{
    char *text = tf_read(path);
    hl_graph *g = tf_read_graph(text, path);
    free(text);
    return g;
}

/* hl_graph_generate's graph of seed (n_ops 0: the generator's default, 12). */
static inline hl_graph *tf_generated(uint64_t seed, bool dynamic, uint32_t n_ops)
{
    hl_gen_opts go = {.dynamic = dynamic, .n_ops = n_ops};
    lm_err he = {0};
    hl_graph *g = hl_graph_generate(seed, &go, &he);
    ck_assert_msg(g != NULL, "generated graph %" PRIu64 ": %s", seed, he.msg);
    return g;
}

/* The elements of g's inputs at the fuzzer's default dims. */
static inline uint64_t tf_input_elements(const hl_graph *g)
{
    int64_t dims[64];
    ck_assert_uint_le(hl_graph_dim_count(g), 64);
    fz_default_dims(g, dims);
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    int64_t vals[64] = {0};
    bool bound[64] = {false};
    ck_assert_uint_le(hl_var_count(p), 64);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        vals[hl_graph_dim_at(g, i)->var] = dims[i];
        bound[hl_graph_dim_at(g, i)->var] = true;
    }
    hl_env env = {vals, bound, hl_var_count(p)};
    uint64_t total = 0;
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        const hl_node *n = hl_graph_node(g, hl_graph_input(g, i));
        uint64_t el = 1;
        for (uint32_t d = 0; d < n->ndim; d++) {
            int64_t v = 0;
            lm_err he = {0};
            ck_assert_msg(hl_e_eval(p, n->shape[d], &env, 0, &v, &he) == 0, "%s", he.msg);
            el *= (uint64_t)v;
        }
        total += el;
    }
    return total;
}

/* What a fuzz run found: counts, and the first failures in words. */
typedef struct tf_log {
    const char *graph;
    uint64_t failed;
    char first[2048];
} tf_log;

static inline void tf_each(void *ctx, const fz_case *c, const hl_graph *g, const ll_space *s,
                           const ll_genome *gn, const ll_graph *lg)
{
    (void)s, (void)gn, (void)lg;
    tf_log *t = ctx;
    if (c->stage == FZ_PASSED) return;
    char line[1024];
    int n = snprintf(line, sizeof line, "%s: genome %016" PRIx64 " (%s, #%" PRIu64 "): %s: %s",
                     t->graph, c->hash, fz_origin_name(c->origin), c->index,
                     fz_stage_name(c->stage), c->msg);
    for (uint32_t i = 0; c->cmp && i < c->n_outputs && n < (int)sizeof line - 160; i++)
        if (c->cmp[i].n_bad)
            n += snprintf(line + n, sizeof line - (size_t)n,
                          " [output '%s': element %zu: %.9g vs %.9g, error %.3g RMS, tol %.3g]",
                          hl_graph_node(g, hl_graph_output(g, i))->name, c->cmp[i].first_bad,
                          c->cmp[i].cand, c->cmp[i].ref, c->cmp[i].max_err, c->cmp[i].tol);
    fprintf(stderr, "FAIL %s\n", line);
    if (t->failed++ == 0) snprintf(t->first, sizeof t->first, "%s", line);
}

#endif /* LUMINAL_TESTS_FUZZ_TF_H */
