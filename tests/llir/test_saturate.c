/* test_saturate.c - the saturation driver: phases run in their order with a report each;
 * limits stop a phase and name it; malformed schedules and rules are refused, located. */
#include "tl.h"

/* The test rules with their phases replaced by `phases`. */
static char *rules_with(const char *phases)
{
    char *t = tl_rules(true);
    char *r = tl_cat(t, phases);
    free(t);
    return r;
}

static int saturate(const char *graph, const char *rules, const ll_sat_opts *o, const eg_options *eo,
                    ll_sat_report *rep, lm_err *err)
{
    hl_graph *g = tl_example(graph);
    eg_engine *e = eg_engine_new(eo, NULL);
    lm_err he = {0};
    hl_encoding enc;
    ck_assert_msg(hl_graph_encode(g, e, &enc, &he) == HL_OK, "%s", he.msg);
    int rc = ll_saturate(e, rules, "rules.dsl", o, rep, err);
    hl_encoding_fini(&enc);
    eg_engine_free(e);
    hl_graph_free(g);
    return rc;
}

START_TEST(phases_run_in_order_with_a_report)
{
    char *r = tl_rules(false);
    ll_sat_report rep;
    lm_err err = {0};
    ck_assert_msg(saturate("llama_block_bf16", r, NULL, NULL, &rep, &err) == LM_OK, "%s", err.msg);
    static const char *names[] = {"lower", "fuse", "inline", "matmul", "cleanup"};
    ck_assert_uint_eq(rep.n_phases, 5);
    for (uint32_t i = 0; i < 5; i++) {
        ck_assert_str_eq(rep.phase[i].name, names[i]);
        ck_assert_int_eq(rep.phase[i].order, (int64_t)i);
        ck_assert_int_eq(rep.phase[i].stop, EG_STOP_SATURATED);
        ck_assert(rep.phase[i].seconds >= 0 && rep.phase[i].seconds <= rep.seconds);
        ck_assert_uint_gt(rep.phase[i].bytes, 0);
        ck_assert_uint_ge(rep.phase[i].peak, rep.phase[i].bytes); /* the peak so far */
        if (i) ck_assert_uint_ge(rep.phase[i].rows, rep.phase[i - 1].rows);
        if (i) ck_assert_uint_ge(rep.phase[i].peak, rep.phase[i - 1].peak);
    }
    /* lowering and fusing add rows; the cleanup only subsumes */
    ck_assert_uint_gt(rep.phase[1].rows, rep.phase[0].rows);
    ck_assert_uint_eq(rep.phase[4].rows, rep.phase[3].rows);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ll_sat_report_fprint(&rep, f);
    fclose(f);
    ck_assert_msg(strstr(buf, "phase 2 inline") && strstr(buf, "saturation: 5 phases") &&
                      strstr(buf, " peak\n"),
                  "%s", buf);
    free(buf);
    free(r);
}
END_TEST

START_TEST(phases_run_by_their_order_not_as_written)
{
    char *r = rules_with("(phase 20 \"second\" \"(saturate fuse)\")\n"
                         "(phase -3 \"first\" \"(saturate lower)\")\n"
                         "(phase 99 \"third\" \"(run inline 1)\")\n");
    ll_sat_report rep;
    lm_err err = {0};
    ck_assert_msg(saturate("softmax_f32_4096x8192", r, NULL, NULL, &rep, &err) == LM_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(rep.n_phases, 3);
    ck_assert_str_eq(rep.phase[0].name, "first");
    ck_assert_str_eq(rep.phase[1].name, "second");
    ck_assert_str_eq(rep.phase[2].name, "third");
    ck_assert_int_eq(rep.phase[0].order, -3);
    ck_assert_int_eq(rep.phase[2].stop, EG_STOP_ITERATIONS);
    free(r);
}
END_TEST

START_TEST(a_node_limit_stops_a_phase_and_names_it)
{
    char *r = tl_rules(false);
    ll_sat_report rep;
    lm_err err = {0};
    ck_assert_int_eq(saturate("llama_block_bf16", r, NULL, NULL, &rep, &err), LM_OK);
    uint64_t after_lower = rep.phase[0].rows, after_fuse = rep.phase[1].rows;
    ck_assert_uint_lt(after_lower + 10, after_fuse);
    /* the engine stops the fuse phase at the limit */
    ll_sat_opts o = {.node_limit = after_lower + 10};
    eg_options eo;
    eg_options_default(&eo);
    eo.log = fopen("/dev/null", "w");
    ll_sat_engine_options(&o, &eo);
    ck_assert_uint_eq(eo.node_limit, o.node_limit);
    lm_err e2 = {0};
    ck_assert_int_eq(saturate("llama_block_bf16", r, &o, &eo, &rep, &e2), LM_ELIMIT);
    fclose(eo.log);
    ck_assert_uint_eq(rep.n_phases, 2);
    ck_assert_int_eq(rep.phase[1].stop, EG_STOP_NODE_LIMIT);
    ck_assert_str_eq(e2.node, "fuse");
    ck_assert_msg(strstr(e2.msg, "phase 'fuse' (2 of 5) reached the node limit"), "%s", e2.msg);
    /* an engine without the limit: the driver checks the total after the phase */
    lm_err e3 = {0};
    ck_assert_int_eq(saturate("llama_block_bf16", r, &o, NULL, &rep, &e3), LM_ELIMIT);
    ck_assert_uint_eq(rep.n_phases, 2);
    ck_assert_msg(strstr(e3.msg, "phase 'fuse'") && strstr(e3.msg, "node limit"), "%s", e3.msg);
    free(r);
}
END_TEST

START_TEST(the_time_limit_is_checked_between_phases)
{
    char *r = tl_rules(false);
    ll_sat_opts o = {.time_limit_s = 1e-9};
    ll_sat_report rep;
    lm_err err = {0};
    /* loading the rules already spends more than the whole budget */
    ck_assert_int_eq(saturate("layernorm_gelu_f32_4096", r, &o, NULL, &rep, &err), LM_ELIMIT);
    ck_assert_uint_eq(rep.n_phases, 0);
    ck_assert_str_eq(err.node, "lower");
    ck_assert_msg(strstr(err.msg, "phase 'lower' (1 of 5) did not start: the saturation's time "
                                  "limit"),
                  "%s", err.msg);
    free(r);
}
END_TEST

START_TEST(a_schedule_the_engine_refuses_names_its_phase)
{
    char *r = rules_with("(phase 0 \"lower\" \"(saturate lower)\")\n"
                         "(phase 1 \"bogus\" \"(saturate no_such_ruleset)\")\n");
    ll_sat_report rep;
    lm_err err = {0};
    ck_assert_int_ne(saturate("softmax_f32_4096x8192", r, NULL, NULL, &rep, &err), LM_OK);
    ck_assert_uint_eq(rep.n_phases, 2);
    ck_assert_msg(strstr(err.msg, "phase 'bogus' (2 of 2)") && strstr(err.msg, "no_such_ruleset"),
                  "%s", err.msg);
    free(r);
}
END_TEST

static void expect_schedule_refused(const char *rules, const char *what)
{
    ll_sat_report rep;
    lm_err err = {0};
    ck_assert_int_eq(saturate("softmax_f32_4096x8192", rules, NULL, NULL, &rep, &err), LM_EVERIFY);
    ck_assert_uint_eq(rep.n_phases, 0);
    ck_assert_msg(strstr(err.msg, what), "wanted '%s' in: %s", what, err.msg);
}

START_TEST(malformed_schedules_are_refused)
{
    char *r = rules_with("(phase 1 \"a\" \"(saturate lower)\")\n(phase 1 \"b\" \"(saturate fuse)\")\n");
    expect_schedule_refused(r, "phases \"a\" and \"b\" have the same order 1");
    free(r);
    r = rules_with("");
    expect_schedule_refused(r, "give no (phase ...) fact");
    free(r);
    char *t = tl_rules(true);
    r = tl_replace(t, "(relation phase (i64 String String))", "");
    expect_schedule_refused(r, "declare (relation phase (i64 String String))");
    free(r);
    free(t);
    char name[100];
    memset(name, 'x', sizeof name);
    name[99] = 0;
    char line[200];
    snprintf(line, sizeof line, "(phase 0 \"%s\" \"(saturate lower)\")", name);
    r = rules_with(line);
    expect_schedule_refused(r, "is longer than 63 bytes");
    free(r);
}
END_TEST

START_TEST(rules_the_engine_refuses_are_located)
{
    ll_sat_report rep;
    lm_err err = {0};
    ck_assert_int_ne(saturate("softmax_f32_4096x8192", "(rule ((= ?e (Op ?k ?l)))", NULL, NULL,
                              &rep, &err),
                     LM_OK);
    ck_assert_msg(strstr(err.msg, "rules.dsl:1:"), "%s", err.msg);
    lm_err e2 = {0};
    ck_assert_int_eq(ll_saturate(NULL, "x", NULL, NULL, NULL, &e2), LM_EARG);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("llir_saturate");
    TCase *tc = tcase_create("saturate");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, phases_run_in_order_with_a_report);
    tcase_add_test(tc, phases_run_by_their_order_not_as_written);
    tcase_add_test(tc, a_node_limit_stops_a_phase_and_names_it);
    tcase_add_test(tc, the_time_limit_is_checked_between_phases);
    tcase_add_test(tc, a_schedule_the_engine_refuses_names_its_phase);
    tcase_add_test(tc, malformed_schedules_are_refused);
    tcase_add_test(tc, rules_the_engine_refuses_are_located);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {make_suite, NULL};
