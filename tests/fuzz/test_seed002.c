/* test_seed002.c - Luminal's seed-002 bug, caught every way it can be.
 *
 * Luminal fused a cast to f32 into a bf16 cuBLASLt call with beta = 1, so cuBLASLt read
 * the bf16 residual C as f32 and silently corrupted Llama's residual stream. The rule
 * tests/fuzz/data/seed002_rule.dsl does the same here, on cast_f32(a @ b + r) with a, b
 * and r in bf16 (data/seed002_residual.json): it unions the Cast's class with a Blas of
 * beta 1 whose DTc, DTd and DTbias are f32 while its C is r's bf16 class. Asserted:
 *
 *   0. the rules' own guard: with rules.dsl's dtype-check and dtype-guard phases, the
 *      saturation fails in the dtype-guard phase;
 *   a. the e-graph dtype check: without the guard phase (data/seed002_unguarded.dsl),
 *      ll_space_new refuses the space, naming the Blas node, its input 2 (C), both
 *      dtypes, the field DTc and the rule that inserted the node;
 *   b. the LLIR verifier: with the e-graph check skipped (ll_space_opts, tests only),
 *      ll_graph_from_genome refuses the graph of every genome that picks the bad Blas,
 *      naming the node, the operand, both dtypes and the rule;
 *   c. the fuzz: with both skipped (fz_options.unchecked), the CPU executor reads r's
 *      bf16 bytes as f32 as the GPU would, and the comparison with the reference fails
 *      for exactly the genomes whose program holds the bad Blas, and for no other.
 * The rules files include rules.dsl by a path relative to the repository root, where the
 * engine resolves includes: the suite works from there. */
#include "session.h"
#include "tf.h"

#include <unistd.h>

#define GRAPH TF_DATA "/seed002_residual.json"

/* The graph saturated with a rules file by the compile session, without its space (the
 * tests build spaces of their own, with and without the dtype check). */
typedef struct sat {
    hl_graph *g;
    cs_session *cs;
    eg_engine *e;
    eg_value root;
} sat;

static int saturate_rep(sat *x, const char *rules_file, ll_sat_report *rep, lm_err *err)
{
    memset(x, 0, sizeof *x);
    x->g = tf_load(GRAPH);
    cs_report r;
    cs_options o = {.rules_path = rules_file, .no_space = true, .report = &r};
    x->cs = cs_session_new(x->g, &o, err);
    *rep = r.sat;
    if (!x->cs) return err->code;
    x->e = cs_session_engine(x->cs);
    x->root = cs_session_root(x->cs);
    return LM_OK;
}

static int saturate(sat *x, const char *rules_file, lm_err *err)
{
    ll_sat_report rep;
    return saturate_rep(x, rules_file, &rep, err);
}

static void sat_fini(sat *x)
{
    cs_session_free(x->cs);
    hl_graph_free(x->g);
}

#define ASSERT_HAS(msg, part)                                                                      \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' not in: %s", (part), (msg))

/* The bad node: a Blas whose C (operand 2) is read as f32 from a bf16 producer. */
static bool has_bad_blas(const ll_graph *lg)
{
    for (uint32_t i = 0; i < ll_graph_node_count(lg); i++) {
        const ll_node *n = ll_graph_node(lg, i);
        if (n->kind != LL_LIBRARY || n->mm.beta != 1.0 || n->n_in < 3) continue;
        if (n->in_dtype[2] == HL_F32 && ll_graph_node(lg, n->in[2])->dtype == HL_BF16) return true;
    }
    return false;
}

START_TEST(the_rules_own_guard_stops_the_saturation)
{
    sat x;
    lm_err err = {0};
    ck_assert_int_ne(saturate(&x, TF_DATA "/seed002.dsl", &err), 0);
    ASSERT_HAS(err.msg, "phase 'dtype-guard'");
    ASSERT_HAS(err.msg, "dtype-conflict");
    sat_fini(&x);
    /* and the same graph with the compiler's rules alone is fine */
    lm_err ok = {0};
    ck_assert_msg(saturate(&x, LUMINAL_SOURCE_DIR "/rules.dsl", &ok) == 0, "%s", ok.msg);
    ll_space *s = ll_space_new(x.e, x.root, &ok);
    ck_assert_msg(s != NULL, "%s", ok.msg);
    ll_space_free(s);
    sat_fini(&x);
}
END_TEST

START_TEST(a_the_egraph_dtype_check_refuses_the_space)
{
    sat x;
    lm_err err = {0};
    ll_sat_report rep;
    ck_assert_msg(saturate_rep(&x, TF_DATA "/seed002_unguarded.dsl", &rep, &err) == 0, "%s",
                  err.msg);
    /* the guard phase is gone, the check phase ran */
    bool check = false;
    for (uint32_t i = 0; i < rep.n_phases; i++) {
        ck_assert_str_ne(rep.phase[i].name, "dtype-guard");
        check |= strcmp(rep.phase[i].name, "dtype-check") == 0;
    }
    ck_assert(check);
    ll_space *s = ll_space_new(x.e, x.root, &err);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(err.code, LM_EVERIFY);
    ASSERT_HAS(err.msg, "e-graph dtype check");
    ASSERT_HAS(err.msg, "(Op Blas)");
    ASSERT_HAS(err.msg, "reads input 2");
    ASSERT_HAS(err.msg, "bf16) as f32 by its field 'DTc'");
    ck_assert_str_eq(err.node, "Blas");
    /* and the rule that inserted the node (the engine's provenance) */
    ASSERT_HAS(err.msg, "rule 'seed002-cast-folded-over-residual'");
    sat_fini(&x);
}
END_TEST

START_TEST(b_the_llir_verifier_refuses_the_graph)
{
    sat x;
    lm_err err = {0};
    ck_assert_msg(saturate(&x, TF_DATA "/seed002_unguarded.dsl", &err) == 0, "%s", err.msg);
    ll_space_opts so = {.skip_dtype_check = true};
    ll_space *s = ll_space_new_opts(x.e, x.root, &so, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    /* the most fused genome takes the Blas for the output's class */
    ll_genome gn;
    ck_assert_int_eq(ll_genome_init(&gn, s, &err), 0);
    ck_assert_int_eq(ll_genome_most_fused(&gn, s, &err), 0);
    ll_graph *lg = ll_graph_from_genome_unverified(s, &gn, &err);
    ck_assert_msg(lg != NULL, "%s", err.msg);
    ck_assert(has_bad_blas(lg));
    ll_graph_free(lg);
    ck_assert_ptr_null(ll_graph_from_genome(s, &gn, &err));
    ck_assert_int_eq(err.code, LM_EVERIFY);
    ASSERT_HAS(err.msg, "verify: node");
    ASSERT_HAS(err.msg, "Blas");
    ASSERT_HAS(err.msg, "operand 2 (c)");
    ASSERT_HAS(err.msg, "of dtype bf16, but the op's contract reads it as f32");
    ASSERT_HAS(err.msg, "rule 'seed002-cast-folded-over-residual'");
    /* every random genome: the verifier refuses exactly those with the bad Blas */
    lm_pcg32 rng;
    lm_pcg_seed(&rng, 2, 0);
    uint32_t refused = 0, built = 0;
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(ll_genome_random(&gn, s, &rng, &err), 0);
        lm_err e2 = {0};
        ll_graph *u = ll_graph_from_genome_unverified(s, &gn, &e2);
        ck_assert_msg(u != NULL, "%s", e2.msg);
        bool bad = has_bad_blas(u);
        ll_graph_free(u);
        ll_graph *v = ll_graph_from_genome(s, &gn, &e2);
        ck_assert_msg((v == NULL) == bad, "genome %d: bad Blas %d, verifier: %s", i, bad, e2.msg);
        if (v)
            built++;
        else
            refused++;
        ll_graph_free(v);
    }
    ck_assert_uint_gt(refused, 0);
    ck_assert_uint_gt(built, 0);
    ll_genome_fini(&gn);
    ll_space_free(s);
    sat_fini(&x);
}
END_TEST

typedef struct seen {
    uint32_t bad_failed, bad_passed, good_failed, good_passed;
    char first_good_failure[1024];
} seen;

static void on_case(void *ctx, const fz_case *c, const hl_graph *g, const ll_space *s,
                    const ll_genome *gn, const ll_graph *lg)
{
    (void)g, (void)s, (void)gn;
    seen *k = ctx;
    ck_assert_msg(lg != NULL, "genome %" PRIu64 " built no graph: %s", c->index, c->msg);
    bool bad = has_bad_blas(lg);
    bool failed = c->stage != FZ_PASSED;
    if (bad && failed) {
        /* the comparison caught it, as a mismatch far outside the tolerance */
        ck_assert_int_eq(c->stage, FZ_COMPARE);
        ck_assert_int_eq(c->code, LM_EMISMATCH);
        ck_assert_uint_eq(c->n_outputs, 1);
        ck_assert_uint_gt(c->cmp[0].n_bad, 0);
        ck_assert(c->cmp[0].max_err > 10 * c->cmp[0].tol);
        ASSERT_HAS(c->msg, "out");
        k->bad_failed++;
    } else if (bad) {
        k->bad_passed++;
    } else if (failed) {
        if (!k->good_failed++)
            snprintf(k->first_good_failure, sizeof k->first_good_failure, "%s", c->msg);
    } else {
        k->good_passed++;
    }
}

START_TEST(c_the_fuzz_catches_the_misread_residual)
{
    char *rules = tf_read(TF_DATA "/seed002_unguarded.dsl");
    hl_graph *g = tf_load(GRAPH);
    seen k = {0};
    fz_hooks h = {.ctx = &k, .each = on_case};
    fz_options o = {.n = 10000,
                      .seed = 5,
                      .rules = rules,
                      .rules_name = "seed002_unguarded.dsl",
                      .unchecked = true};
    fz_result r;
    lm_err err = {0};
    ck_assert_msg(fz_run(g, &o, &h, &r, &err) == 0, "%s", err.msg);
    /* the space is small: every genome of it was checked */
    ck_assert(r.exhausted);
    ck_assert_uint_eq(r.checked, r.passed + r.failed);
    ck_assert_uint_ge(k.bad_failed, 1);
    ck_assert_uint_eq(k.bad_passed, 0);
    ck_assert_msg(k.good_failed == 0, "a genome without the bad Blas failed: %s",
                  k.first_good_failure);
    ck_assert_uint_gt(k.good_passed, 10);
    ck_assert_uint_eq(r.failed, k.bad_failed);
    /* checked (the default): the space is refused, by the e-graph dtype check */
    o.unchecked = false;
    lm_err e2 = {0};
    ck_assert_int_ne(fz_run(g, &o, NULL, &r, &e2), 0);
    ASSERT_HAS(e2.msg, "e-graph dtype check");
    hl_graph_free(g);
    free(rules);
}
END_TEST

static Suite *seed002_suite(void)
{
    /* the rules include rules.dsl relative to the repository root */
    if (chdir(LUMINAL_SOURCE_DIR) != 0) { /* a broken checkout: fail, do not skip */
        fprintf(stderr, "fuzz_seed002: cannot enter %s\n", LUMINAL_SOURCE_DIR);
        exit(1);
    }
    Suite *s = suite_create("fuzz_seed002");
    TCase *tc = tcase_create("seed002");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, the_rules_own_guard_stops_the_saturation);
    tcase_add_test(tc, a_the_egraph_dtype_check_refuses_the_space);
    tcase_add_test(tc, b_the_llir_verifier_refuses_the_graph);
    tcase_add_test(tc, c_the_fuzz_catches_the_misread_residual);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {seed002_suite, NULL};
