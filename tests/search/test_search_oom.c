/* test_search_oom.c - every allocation of a small search fails in turn (base's test
 * hook lm_mem_fail_after, shared by every module) and each failure is a clean error:
 * sr_search_run returns LM_ENOMEM with a message, nothing crashes, and (under ASan, the
 * build-san tree) nothing leaks. The search is a tiny graph, the cost model, a few
 * candidates and an output directory, so that saturation, the space, the evaluator, the
 * loop, the log, the winner and the save are all on the path. */
#include "lm_check.h"
#include "session.h"
#include "search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* y = exp2(a + b) * a: one elementwise chain, so the space has fusion choices. */
static const char TINY[] =
    "{\"format\": \"luminal-graph\", \"version\": 1, \"name\": \"tiny\",\n"
    " \"inputs\": [{\"name\": \"a\", \"dtype\": \"f32\", \"shape\": [8]},\n"
    "            {\"name\": \"b\", \"dtype\": \"f32\", \"shape\": [8]}],\n"
    " \"nodes\": [{\"name\": \"s\", \"op\": \"add\", \"inputs\": [\"a\", \"b\"]},\n"
    "           {\"name\": \"e\", \"op\": \"exp2\", \"inputs\": [\"s\"]},\n"
    "           {\"name\": \"y\", \"op\": \"mul\", \"inputs\": [\"e\", \"a\"]}],\n"
    " \"outputs\": [\"y\"]}\n";

static void rmtree(const char *d)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(each_allocation_failure_of_a_search_is_a_clean_error)
{
    lm_err e = {0};
    hl_graph *g = hl_graph_read_json(TINY, strlen(TINY), "tiny", &e);
    ck_assert_msg(g, "%s", e.msg);
    char dir[] = "/tmp/sr_oomXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[64];
    snprintf(out, sizeof out, "%s/out", dir);
    sr_options o;
    sr_options_default(&o);
    o.rules = cs_rules_builtin();
    o.rules_name = cs_rules_builtin_name();
    o.out_dir = out;
    o.limit = 3;
    o.evaluator = SR_EVAL_COST_MODEL;
    o.time_limit_s = 0;

    /* the whole search once, to know it succeeds and how many requests it makes */
    lm_mem_stats_reset();
    sr_report r;
    int rc = sr_search_run(g, &o, &r, &e);
    uint64_t calls = 0;
    lm_mem_stats(&calls, NULL);
    ck_assert_msg(rc == 0, "the search without failures: %s", e.msg);
    ck_assert_uint_eq(r.evaluated, 3);
    sr_report_fini(&r);
    ck_assert_uint_gt(calls, 0);

    long n = 0;
    for (;; n++) {
        lm_err fe = {0};
        lm_mem_fail_after(n);
        rc = sr_search_run(g, &o, &r, &fe);
        bool fired = lm_mem_fail_fired();
        lm_mem_fail_after(-1);
        sr_report_fini(&r);
        if (!fired) {
            ck_assert_msg(rc == 0, "no failure fired at %ld, yet: %s", n, fe.msg);
            break;
        }
        ck_assert_msg(rc == LM_ENOMEM,
                      "allocation %ld of %llu failed: the search returned %d (%s), not "
                      "LM_ENOMEM",
                      n, (unsigned long long)calls, rc, fe.msg);
        ck_assert_msg(fe.code == LM_ENOMEM && strstr(fe.msg, "out of memory"),
                      "allocation %ld: the error says '%s'", n, fe.msg);
    }
    /* every request of the search was failed once */
    ck_assert_uint_ge((uint64_t)n, calls);
    rmtree(dir);
    hl_graph_free(g);
}
END_TEST

static Suite *oom_suite(void)
{
    Suite *s = suite_create("search_oom");
    TCase *t = tcase_create("oom");
    tcase_set_timeout(t, 1200);
    tcase_add_test(t, each_allocation_failure_of_a_search_is_a_clean_error);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {oom_suite, NULL};
