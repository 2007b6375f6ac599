/* test_fuzz.c - genome fuzzing over small versions of every example graph and graphs from
 * the random graph generator, with the compiler's rules (rules.dsl): every genome checked
 * must agree with the reference runtime within llir's tolerances, and each graph must
 * give the genomes asked or be shown to hold fewer (every genome of it checked).
 *
 * Two sizes of the same test, chosen by TF_SCALE:
 *   full   (ctest fuzz_genomes, label fuzz, run on the optimised build by scripts/test.sh):
 *          500 genomes per example, and 150 more at every dim 1 and 150 at every dim 7 for
 *          each example with dynamic dims; 150 for each of 96 generated graphs (seeds 1-24,
 *          each without and with a dynamic dim, of 12 and of 24 ops); at least 10 000
 *          genomes checked in all;
 *   small  (ctest fuzz_genomes_small, label unit, run under ASan and UBSan): 40 per
 *          example, 20 for each of 16 generated graphs of 12 ops.
 * The examples' static sizes are shrunk (tf.h, TF_SHRINK) so a genome runs in
 * milliseconds; their dynamic dims take the fuzzer's defaults (min(max(lo, 3), hi)). */
#include "tf.h"

typedef struct scale {
    uint64_t per_example;     /* at the fuzzer's default dims (3 where the range allows) */
    uint64_t per_example_dim; /* again at every dim 1, and at every dim 7 */
    uint64_t per_generated;
    uint32_t generated_seeds; /* each without and with a dynamic dim */
    uint32_t op_counts;       /* 1: the generator's 12 ops; 2: also 24 */
    uint64_t at_least;        /* genomes checked in all */
} scale;

static scale the_scale(void)
{
    const char *s = getenv("TF_SCALE");
    if (s && strcmp(s, "full") == 0) return (scale){500, 150, 150, 24, 2, 10000};
    return (scale){40, 0, 20, 8, 1, 600};
}

typedef struct totals {
    uint64_t checked, failed, graphs, exhausted;
    char first[2048];
} totals;

/* Fuzzes g with n genomes; adds to t; the graph must give n genomes or be exhausted. */
static void fuzz_one(const char *what, const hl_graph *g, const char *rules, uint64_t n,
                     uint64_t seed, const int64_t *dims, totals *t)
{
    tf_log log = {.graph = what};
    fz_hooks h = {.ctx = &log, .each = tf_each};
    fz_options o = {
        .n = n, .seed = seed, .dims = dims, .rules = rules, .rules_name = "rules.dsl"};
    fz_result r;
    lm_err err = {0};
    double t0 = lm_now_s();
    int rc = fz_run(g, &o, &h, &r, &err);
    ck_assert_msg(rc == 0, "%s: %s", what, err.msg);
    ck_assert_msg(r.checked == n || r.exhausted,
                  "%s: only %" PRIu64 " of %" PRIu64 " genomes found in %" PRIu64
                  " draws, and the space was not shown to hold fewer",
                  what, r.checked, n, r.draws);
    ck_assert_uint_eq(r.passed + r.failed, r.checked);
    ck_assert_uint_eq(log.failed, r.failed); /* the hook saw every failure */
    ck_assert_uint_ge(r.from[FZ_FROM_MOST_FUSED], 1);
    printf("%-32s %5" PRIu64 " genomes%s, %5" PRIu64 " programs, log2 %.1f, %" PRIu64
           " failed, %.2f s\n",
           what, r.checked, r.exhausted ? " (all)" : "", r.programs, r.stats.log2_programs,
           r.failed, lm_now_s() - t0);
    fflush(stdout);
    t->checked += r.checked;
    t->failed += r.failed;
    t->graphs++;
    t->exhausted += r.exhausted;
    if (r.failed && !t->first[0]) snprintf(t->first, sizeof t->first, "%s", log.first);
}

START_TEST(every_genome_agrees_with_the_reference)
{
    scale sc = the_scale();
    char *rules = tf_rules();
    totals t = {0};
    size_t ne = 0;
    char **paths = hl_fixture_examples(LUMINAL_SOURCE_DIR, &ne);
    ck_assert_msg(paths != NULL, "cannot list examples/graphs");
    /* every example the README lists, no fewer, no more */
    ck_assert_uint_eq(ne, hl_fixture_examples_expected(LUMINAL_SOURCE_DIR));
    ck_assert_uint_ge(ne, 12);
    for (size_t i = 0; i < ne; i++) {
        const char *name = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];
        hl_graph *g = tf_small_example(paths[i]);
        uint64_t el = tf_input_elements(g);
        ck_assert_msg(el <= TF_MAX_INPUT_ELEMENTS,
                      "%s: %" PRIu64 " input elements at small dims: give its static sizes a "
                      "small stand-in in tf.h's TF_SHRINK",
                      name, el);
        fuzz_one(name, g, rules, sc.per_example, 1000 + i, NULL, &t);
        for (int v = 0; v < 2 && sc.per_example_dim && hl_graph_dim_count(g); v++) {
            int64_t dims[64];
            ck_assert_uint_le(hl_graph_dim_count(g), 64);
            for (uint32_t k = 0; k < hl_graph_dim_count(g); k++) {
                const hl_dim *d = hl_graph_dim_at(g, k);
                int64_t x = v ? 7 : 1;
                dims[k] = x < d->lo ? d->lo : x > d->hi ? d->hi : x;
            }
            char what[200];
            snprintf(what, sizeof what, "%s, dims %d", name, v ? 7 : 1);
            fuzz_one(what, g, rules, sc.per_example_dim, 1100 + i, dims, &t);
        }
        hl_graph_free(g);
    }
    hl_fixture_free_list(paths, ne);
    uint64_t examples = t.graphs;
    ck_assert_uint_ge(examples, ne); /* every example was fuzzed */
    for (uint32_t ops = 0; ops < sc.op_counts; ops++)
        for (uint32_t s = 1; s <= sc.generated_seeds; s++)
            for (int dyn = 0; dyn < 2; dyn++) {
                hl_graph *g = tf_generated(s, dyn, ops ? 24 : 0);
                char what[64];
                snprintf(what, sizeof what, "generated %u%s%s", s, dyn ? " (dynamic)" : "",
                         ops ? ", 24 ops" : "");
                fuzz_one(what, g, rules, sc.per_generated, 2000 + s, NULL, &t);
                hl_graph_free(g);
            }
    ck_assert_uint_eq(t.graphs - examples, 2 * sc.generated_seeds * sc.op_counts);
    ck_assert_uint_ge(t.graphs - examples, sc.op_counts == 2 ? 40 : 16);
    printf("in all: %" PRIu64 " graphs and dim settings (%" PRIu64 " fuzzed completely), %" PRIu64
           " genomes, %" PRIu64 " failed\n",
           t.graphs, t.exhausted, t.checked, t.failed);
    ck_assert_msg(t.failed == 0, "%" PRIu64 " genomes failed; the first: %s", t.failed, t.first);
    ck_assert_uint_ge(t.checked, sc.at_least);
    free(rules);
}
END_TEST

/* Generated graphs whose correct genomes failed or whose space was refused before the
 * fixes (tests/fuzz/data/regress, each file says what it reproduces): every genome must
 * pass now; the cancelling ones must still cancel (an output whose scale is far above its
 * RMS), or the file would no longer test the fix. */
START_TEST(the_regressions_pass)
{
    static const struct {
        const char *file;
        bool cancels;
    } cases[] = {{"gen28_dyn_12ops", true},    {"gen59_dyn_12ops", false},
                 {"gen103_dyn_12ops", true},   {"gen111_static_12ops", true},
                 {"gen35_dyn_48ops", true},    {"gen146_dyn_48ops", true},
                 {"gen13_static_48ops", false}};
    char *rules = tf_rules();
    totals t = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/regress/%s.json", TF_DATA, cases[i].file);
        hl_graph *g = tf_load(path);
        tf_log log = {.graph = cases[i].file};
        fz_hooks h = {.ctx = &log, .each = tf_each};
        fz_options o = {.n = the_scale().per_generated * 2, .seed = 1, .rules = rules};
        fz_result r;
        lm_err err = {0};
        ck_assert_msg(fz_run(g, &o, &h, &r, &err) == 0, "%s: %s", cases[i].file, err.msg);
        ck_assert_msg(r.failed == 0, "%s: %s", cases[i].file, log.first);
        ck_assert(r.checked == o.n || r.exhausted);
        double spread = 0;
        for (uint32_t k = 0; k < r.n_outputs && k < FZ_MAX_TOL; k++)
            if (r.spread[k] > spread) spread = r.spread[k];
        if (cases[i].cancels)
            ck_assert_msg(spread > 10, "%s: the largest scale is %.3g times its output's RMS",
                          cases[i].file, spread);
        t.checked += r.checked;
        hl_graph_free(g);
    }
    printf("regressions: %" PRIu64 " genomes, 0 failed\n", t.checked);
    free(rules);
}
END_TEST

/* Attention in every form the rules fuse (tests/rules/attn: the op, hand-written, causal,
 * a mask input, GQA, decode, a KV cache longer than the queries, and the near misses):
 * every genome, with the fused KAttn / KAttnMask or without, agrees with the reference,
 * at the fuzzer's dims, at every dim 1 (one query, one key) and at odd sizes where the
 * query and key lengths differ (S = 5, 13 or 7, T = 7, 37 or 3, within each dim's range); a
 * graph the rules fuse has genomes with the fused node at every setting. */
typedef struct attn_log {
    tf_log log;
    uint64_t fused; /* genomes whose program holds a KAttn or KAttnMask */
} attn_log;

static void attn_each(void *ctx, const fz_case *c, const hl_graph *g, const ll_space *s,
                      const ll_genome *gn, const ll_graph *lg)
{
    attn_log *a = ctx;
    tf_each(&a->log, c, g, s, gn, lg);
    if (c->op_count &&
        (c->op_count[ll_op_find("KAttn")] > 0 || c->op_count[ll_op_find("KAttnMask")] > 0))
        a->fused++;
}

START_TEST(attention_genomes_agree_with_the_reference)
{
    static const struct {
        const char *file;
        bool fused;
    } cases[] = {{"decode", true},          {"exp2_softmax", true},
                 {"gqa", true},             {"handwritten_softmax", true},
                 {"kv_cache_causal", true}, {"mask_input", true},
                 {"miss_causal_short_kv", true}, {"miss_exp2_mask", false},
                 {"miss_head_dim_strided", false}, {"miss_mask_transposed", true},
                 {"miss_softmax_axis", false}, {"op_causal", true},
                 {"op_plain_f32", true}};
    char *rules = tf_rules();
    uint64_t n = the_scale().per_generated * 2, checked = 0, fused = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/rules/attn/%s.json", LUMINAL_SOURCE_DIR,
                 cases[i].file);
        hl_graph *g = tf_load(path);
        uint32_t nd = hl_graph_dim_count(g);
        ck_assert_uint_le(nd, 8);
        for (int v = 0; v < 5; v++) {
            int64_t dims[8];
            for (uint32_t k = 0; k < nd; k++) {
                const hl_dim *d = hl_graph_dim_at(g, k);
                const char *nm = hl_var_name(hl_graph_exprs_c(g), d->var);
                bool t = strcmp(nm, "T") == 0;
                int64_t x = v == 0   ? 3
                            : v == 1 ? 1
                            : v == 2 ? (t ? 7 : 5)
                            : v == 3 ? (t ? 37 : 13)
                                     : (t ? 3 : 7); /* keys fewer than queries */
                dims[k] = x < d->lo ? d->lo : x > d->hi ? d->hi : x;
            }
            attn_log a = {.log = {.graph = cases[i].file}};
            fz_hooks h = {.ctx = &a, .each = attn_each};
            fz_options o = {.n = n, .seed = 7 + (uint64_t)v, .dims = dims, .rules = rules};
            fz_result r;
            lm_err err = {0};
            ck_assert_msg(fz_run(g, &o, &h, &r, &err) == 0, "%s: %s", cases[i].file,
                          err.msg);
            ck_assert_msg(r.failed == 0, "%s (setting %d): %s", cases[i].file, v, a.log.first);
            ck_assert(r.checked == o.n || r.exhausted);
            ck_assert_msg((a.fused > 0) == cases[i].fused,
                          "%s (setting %d): %" PRIu64 " genomes with the fused node", cases[i].file,
                          v, a.fused);
            checked += r.checked;
            fused += a.fused;
        }
        hl_graph_free(g);
    }
    printf("attention: %" PRIu64 " genomes (%" PRIu64 " with the fused node), 0 failed\n",
           checked, fused);
    free(rules);
}
END_TEST

static Suite *fuzz_suite(void)
{
    Suite *s = suite_create("fuzz_genomes");
    TCase *tc = tcase_create("genomes");
    tcase_set_timeout(tc, 3000);
    tcase_add_test(tc, the_regressions_pass);
    tcase_add_test(tc, attention_genomes_agree_with_the_reference);
    tcase_add_test(tc, every_genome_agrees_with_the_reference);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {fuzz_suite, NULL};
