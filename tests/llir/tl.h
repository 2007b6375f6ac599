/* tl.h - helpers shared by llir's tests: the test rules, engines holding an encoded and
 * saturated graph, spaces, example graphs. Header-only (static functions). The tests
 * are white-box where they plant faults (they read llir's private header). */
#ifndef LUMINAL_TESTS_LLIR_TL_H
#define LUMINAL_TESTS_LLIR_TL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include "ll_int.h"
#include "session.h"

#include "lm_check.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TL_DATA LUMINAL_SOURCE_DIR "/tests/llir/data"
#define TL_EXAMPLES LUMINAL_SOURCE_DIR "/examples/graphs"
#define TL_MAX_EXAMPLES 64

static inline char *tl_read(const char *path)
{
    lm_err err = {0};
    char *t = lm_read_file(path, 0, NULL, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    return t;
}

/* The test rules, with every (phase ...) fact removed when strip_phases. */
static inline char *tl_rules(bool strip_phases)
{
    char *t = tl_read(TL_DATA "/rules.dsl");
    if (!strip_phases) return t;
    for (char *p = t; (p = strstr(p, "\n(phase ")) != NULL;) {
        char *e = strchr(p + 1, '\n');
        memset(p + 1, ' ', (size_t)(e - p - 1)); /* blank the line, keep the length */
        p = e;
    }
    return t;
}

/* a + b, malloc'd. */
static inline char *tl_cat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *r = malloc(na + nb + 2);
    ck_assert_ptr_nonnull(r);
    memcpy(r, a, na);
    r[na] = '\n';
    memcpy(r + na + 1, b, nb + 1);
    return r;
}

/* s with the first occurrence of from replaced by to, malloc'd (from must occur). */
static inline char *tl_replace(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    ck_assert_msg(p != NULL, "'%s' not found", from);
    size_t n = strlen(s), nf = strlen(from), nt = strlen(to);
    char *r = malloc(n - nf + nt + 1);
    ck_assert_ptr_nonnull(r);
    memcpy(r, s, (size_t)(p - s));
    memcpy(r + (p - s), to, nt);
    memcpy(r + (p - s) + nt, p + nf, n - (size_t)(p - s) - nf + 1);
    return r;
}

static inline hl_graph *tl_load(const char *path)
{
    lm_err he = {0};
    hl_graph *g = hl_graph_load_json(path, &he);
    ck_assert_msg(g != NULL, "%s: %s", path, he.msg);
    return g;
}

/* The chain of n relu nodes over one input x[L] (docs/perf.md, "Issue 21"). */
static inline hl_graph *tl_relu_chain(uint32_t n)
{
    size_t cap = 256 + (size_t)n * 80, len = 0;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    len += (size_t)snprintf(t + len, cap - len,
                            "{\"format\": \"luminal-graph\", \"version\": 1, \"name\": \"chain\", "
                            "\"dims\": [{\"name\": \"L\", \"min\": 1, \"max\": 4096, \"profile\": "
                            "1024}], \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", "
                            "\"shape\": [\"L\"]}], \"nodes\": [");
    for (uint32_t i = 0; i < n; i++) {
        char prev[16];
        if (i)
            snprintf(prev, sizeof prev, "r%u", i - 1);
        else
            snprintf(prev, sizeof prev, "x");
        len += (size_t)snprintf(t + len, cap - len,
                                "%s{\"name\": \"r%u\", \"op\": \"relu\", \"inputs\": [\"%s\"]}",
                                i ? ", " : "", i, prev);
    }
    len += (size_t)snprintf(t + len, cap - len, "], \"outputs\": [\"r%u\"]}", n - 1);
    ck_assert_uint_lt(len, cap);
    lm_err e = {0};
    hl_graph *g = hl_graph_read_json(t, len, "chain", &e);
    ck_assert_msg(g != NULL, "%s", e.msg);
    free(t);
    return g;
}

static inline hl_graph *tl_example(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", TL_EXAMPLES, name);
    return tl_load(path);
}

/* The example graph files, sorted by name; returns their count. */
static inline uint32_t tl_examples(char names[][256], uint32_t max)
{
    DIR *d = opendir(TL_EXAMPLES);
    ck_assert_ptr_nonnull(d);
    uint32_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 6 || l > 120 || strcmp(de->d_name + l - 5, ".json") != 0 || n == max) continue;
        ck_assert_uint_lt(strlen(TL_EXAMPLES) + l + 2, 256);
        memcpy(names[n], TL_EXAMPLES "/", strlen(TL_EXAMPLES) + 1);
        memcpy(names[n] + strlen(TL_EXAMPLES) + 1, de->d_name, l + 1);
        n++;
    }
    closedir(d);
    qsort(names, n, 256, (int (*)(const void *, const void *))strcmp);
    return n;
}

/* An engine holding g encoded and saturated with rules (which may be NULL: the test
 * rules), made by the compile session (session.h) without its space, and the space built
 * here (tests change it in place). */
typedef struct tl_env {
    cs_session *cs;
    eg_engine *e;
    ll_sat_report rep;
    ll_space *s;
} tl_env;

/* Builds the environment; returns the first failure's code with err filled (the
 * environment then holds what was built; free it with tl_fini). */
static inline int tl_try(tl_env *t, const hl_graph *g, const char *rules, lm_err *err)
{
    memset(t, 0, sizeof *t);
    cs_report rep;
    cs_options o = {.rules_path = rules ? NULL : TL_DATA "/rules.dsl",
                    .rules_text = rules,
                    .rules_name = "rules.dsl",
                    .no_space = true,
                    .report = &rep};
    t->cs = cs_session_new(g, &o, err);
    t->rep = rep.sat;
    if (!t->cs) return err->code;
    t->e = cs_session_engine(t->cs);
    t->s = ll_space_new(t->e, cs_session_root(t->cs), err);
    return t->s ? LM_OK : err->code;
}

static inline void tl_build(tl_env *t, const hl_graph *g, const char *rules)
{
    lm_err err = {0};
    int rc = tl_try(t, g, rules, &err);
    ck_assert_msg(rc == LM_OK, "%s", err.msg);
}

static inline void tl_fini(tl_env *t)
{
    ll_space_free(t->s);
    cs_session_free(t->cs);
    memset(t, 0, sizeof *t);
}

/* The graph a genome picks, asserting it builds (and so verifies). */
static inline ll_graph *tl_graph(const ll_space *s, const ll_genome *g)
{
    lm_err err = {0};
    ll_graph *lg = ll_graph_from_genome(s, g, &err);
    ck_assert_msg(lg != NULL, "%s", err.msg);
    return lg;
}

/* Text written by f(x, stream) into a malloc'd string. */
static inline char *tl_dump(const ll_graph *g)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ck_assert_ptr_nonnull(f);
    ll_graph_dump(g, f);
    fclose(f);
    return buf;
}

#endif /* LUMINAL_TESTS_LLIR_TL_H */
