/* test_cg_chain.c - codegen of a long fused chain (issue 21, fault 2): the plan of the most
 * fused genome of an N-node relu chain (one region holding the whole chain, each relu
 * x * (0 < x), which reads its producer twice) is built in bounded time. Before the value
 * graph (cg_val.c) found values through a table and built each (node, position) once, a
 * 1000-node chain did not finish in minutes. */
#include "../llir/tl.h"
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>


/* The most fused genome's LLIR graph of an n-node relu chain (its node count into
 * *nodes), and the fastest of three cg_plan_new on it in seconds; the plan's listing
 * with sources into *listing (malloc'd). */
static double plan_chain(uint32_t n, uint32_t *nodes, char **listing)
{
    hl_graph *h = tl_relu_chain(n);
    tl_env t;
    tl_build(&t, h, NULL);
    lm_err e = {0};
    ll_genome gn;
    ck_assert(ll_genome_init(&gn, t.s, &e) == LM_OK);
    ck_assert_msg(ll_genome_most_fused(&gn, t.s, &e) == LM_OK, "%s", e.msg);
    ll_graph *g = tl_graph(t.s, &gn);
    *nodes = ll_graph_node_count(g);
    double best = 1e30;
    *listing = NULL;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = lm_now_s();
        cg_plan *p = cg_plan_new(g, NULL, &e);
        double t1 = lm_now_s();
        ck_assert_msg(p != NULL, "chain of %u: %s", n, e.msg);
        if (t1 - t0 < best) best = t1 - t0;
        if (!*listing) {
            size_t sz = 0;
            FILE *f = open_memstream(listing, &sz);
            ck_assert_ptr_nonnull(f);
            cg_plan_fprint(p, true, f);
            fclose(f);
        }
        cg_plan_free(p);
    }
    ll_graph_free(g);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(h);
    return best;
}

/* How many times s occurs in text. */
static uint32_t count(const char *text, const char *s)
{
    uint32_t n = 0;
    for (const char *p = strstr(text, s); p; p = strstr(p + 1, s))
        n++;
    return n;
}

START_TEST(a_long_fused_chain_is_planned_in_near_linear_time)
{
    static const uint32_t n[2] = {250, 1000};
    double s[2];
    uint32_t nodes[2];
    char *text[2];
    for (int i = 0; i < 2; i++) {
        s[i] = plan_chain(n[i], &nodes[i], &text[i]);
        fprintf(stderr, "relu chain of %u: most fused graph %u nodes, cg_plan_new %.4f s\n", n[i],
                nodes[i], s[i]);
        if (getenv("TCG_SHOW")) fputs(text[i], stderr);
    }
    /* the most fused genome is one region holding the whole chain: one kernel, whose
       source computes every relu (a multiply each, in each of its loops) */
    ck_assert_uint_gt(nodes[1], 3 * nodes[0]);
    for (int i = 0; i < 2; i++) {
        ck_assert_uint_eq(count(text[i], "__global__"), 1);
        ck_assert_uint_ge(count(text[i], "__fmul_rn("), n[i]);
        free(text[i]);
    }
    /* about 0.4 s at 1000 in a release build (cg_emit.c's emission is still quadratic in
       the chain's depth); minutes before */
    ck_assert_msg(s[1] < 10, "cg_plan_new at %u: %.3f s", n[1], s[1]);
}
END_TEST

/* cg_plan_new on a graph, on a thread of its own with a small stack. */
typedef struct {
    ll_graph *g;
    cg_plan *p;
    lm_err e;
} plan_job;

static void *plan_thread(void *arg)
{
    plan_job *j = arg;
    j->p = cg_plan_new(j->g, NULL, &j->e);
    return NULL;
}

/* The emission of a fused chain used to recurse once per op of the chain: 4,000 relus
 * overflowed the main thread's 8 MB stack (a crash of the whole search). Now the depth of
 * the chain costs no C stack: the 1,000-relu chain (about 2,000 ops deep) plans in a
 * thread of 1 MB, which the recursion overflowed. */
START_TEST(a_long_fused_chain_needs_no_deep_stack)
{
    hl_graph *h = tl_relu_chain(1000);
    tl_env t;
    tl_build(&t, h, NULL);
    lm_err e = {0};
    ll_genome gn;
    ck_assert(ll_genome_init(&gn, t.s, &e) == LM_OK);
    ck_assert_msg(ll_genome_most_fused(&gn, t.s, &e) == LM_OK, "%s", e.msg);
    plan_job j = {.g = tl_graph(t.s, &gn)};
    pthread_attr_t at;
    pthread_t th;
    ck_assert_int_eq(pthread_attr_init(&at), 0);
    ck_assert_int_eq(pthread_attr_setstacksize(&at, (size_t)1 << 20), 0);
    ck_assert_int_eq(pthread_create(&th, &at, plan_thread, &j), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&at);
    ck_assert_msg(j.p != NULL, "%s", j.e.msg);
    cg_plan_free(j.p);
    ll_graph_free(j.g);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(h);
}
END_TEST

static Suite *cg_chain_suite(void)
{
    Suite *s = suite_create("cg_chain");
    TCase *tc = tcase_create("chain");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, a_long_fused_chain_is_planned_in_near_linear_time);
    tcase_add_test(tc, a_long_fused_chain_needs_no_deep_stack);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {cg_chain_suite, NULL};
