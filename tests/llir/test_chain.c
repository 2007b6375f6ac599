/* test_chain.c - long chains through llir (issue 21, fault 2; issue 20): building the
 * search space and the most fused genome's LLIR graph of an N-node relu chain (the graph
 * of docs/perf.md's issue 21 section) grow near-linearly in N, and the space build
 * honours its deadline with a true message. */
#include "tl.h"

#include "lm_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The fastest of three: seconds to build the space of env t's engine (and its
 * fingerprint, which the search takes with it), and to build and verify its most fused
 * genome's graph (whose node count goes to *nodes). */
static void time_chain(tl_env *t, double *space_s, double *graph_s, uint32_t *nodes)
{
    *space_s = *graph_s = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        lm_err e = {0};
        double t0 = lm_now_s();
        ll_space *s = ll_space_new(t->e, cs_session_root(t->cs), &e);
        ck_assert_msg(s != NULL, "%s", e.msg);
        char fp[33];
        ck_assert_msg(ll_space_fingerprint(s, fp, &e) == LM_OK, "%s", e.msg);
        double t1 = lm_now_s();
        ll_genome gn;
        ck_assert(ll_genome_init(&gn, s, &e) == LM_OK);
        ck_assert_msg(ll_genome_most_fused(&gn, s, &e) == LM_OK, "%s", e.msg);
        double t2 = lm_now_s();
        ll_graph *g = ll_graph_from_genome(s, &gn, &e); /* built and verified */
        double t3 = lm_now_s();
        ck_assert_msg(g != NULL, "%s", e.msg);
        *nodes = ll_graph_node_count(g);
        if (t1 - t0 < *space_s) *space_s = t1 - t0;
        if (t3 - t2 < *graph_s) *graph_s = t3 - t2;
        ll_graph_free(g);
        ll_genome_fini(&gn);
        ll_space_free(s);
    }
}

START_TEST(a_long_chain_builds_its_space_and_most_fused_graph_in_near_linear_time)
{
    static const uint32_t n[2] = {2000, 16000};
    double space[2], graph[2];
    uint32_t nodes[2];
    for (int i = 0; i < 2; i++) {
        hl_graph *h = tl_relu_chain(n[i]);
        tl_env t;
        tl_build(&t, h, NULL);
        time_chain(&t, &space[i], &graph[i], &nodes[i]);
        fprintf(stderr, "relu chain of %u: space and fingerprint %.4f s, most fused graph (%u nodes) %.4f s\n",
                n[i], space[i], nodes[i], graph[i]);
        tl_fini(&t);
        hl_graph_free(h);
    }
    /* the most fused genome is one region holding the whole chain */
    ck_assert_uint_gt(nodes[1], 7 * nodes[0]);
    /* eight times the nodes: linear is 8x, quadratic 64x; 24x leaves room for caches
       (the larger chain's arrays leave them: about 12x on the development machine) and a
       noisy, shared machine (each time is the fastest of three) */
    ck_assert_msg(space[1] < 24 * space[0] + 0.05, "space: %.4f s at 16000 vs %.4f s at 2000",
                  space[1], space[0]);
    ck_assert_msg(graph[1] < 24 * graph[0] + 0.05, "graph: %.4f s at 16000 vs %.4f s at 2000",
                  graph[1], graph[0]);
    /* and absolutely: about a second each in a release build, more under ASan */
    ck_assert_msg(space[1] < 20 && graph[1] < 20, "space %.3f s, graph %.3f s", space[1],
                  graph[1]);
}
END_TEST

START_TEST(the_space_build_stops_at_its_deadline_with_a_true_message)
{
    hl_graph *h = tl_relu_chain(2000);
    tl_env t;
    tl_build(&t, h, NULL);
    eg_value root = cs_session_root(t.cs);
    /* a deadline already past: stopped at the first check, naming the step */
    ll_space_opts o = {.deadline_s = lm_now_s() - 1};
    lm_err e = {0};
    ll_space *s = ll_space_new_opts(t.e, root, &o, &e);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(e.code, LM_ELIMIT);
    ck_assert_msg(strstr(e.msg, "the time limit ran out while building the search space (step "
                                "'serialize': 0 of ") != NULL,
                  "%s", e.msg);
    /* a deadline inside the build: stopped soon after it */
    lm_err e0 = {0};
    double t0 = lm_now_s();
    s = ll_space_new(t.e, root, &e0);
    double full = lm_now_s() - t0;
    ck_assert_msg(s != NULL, "%s", e0.msg);
    ll_space_free(s);
    o.deadline_s = lm_now_s() + full / 4;
    lm_err e1 = {0};
    t0 = lm_now_s();
    s = ll_space_new_opts(t.e, root, &o, &e1);
    double took = lm_now_s() - t0;
    ck_assert_ptr_null(s);
    ck_assert_int_eq(e1.code, LM_ELIMIT);
    ck_assert_msg(strstr(e1.msg, "the time limit ran out while building the search space") != NULL,
                  "%s", e1.msg);
    ck_assert_msg(took < full, "stopped after %.4f s of a %.4f s build", took, full);
    /* a deadline far ahead changes nothing */
    o.deadline_s = lm_now_s() + 3600;
    lm_err e2 = {0};
    s = ll_space_new_opts(t.e, root, &o, &e2);
    ck_assert_msg(s != NULL, "%s", e2.msg);
    ll_space_free(s);
    tl_fini(&t);
    hl_graph_free(h);
}
END_TEST

static Suite *chain_suite(void)
{
    Suite *s = suite_create("llir_chain");
    TCase *tc = tcase_create("chain");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, a_long_chain_builds_its_space_and_most_fused_graph_in_near_linear_time);
    tcase_add_test(tc, the_space_build_stops_at_its_deadline_with_a_true_message);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {chain_suite, NULL};
