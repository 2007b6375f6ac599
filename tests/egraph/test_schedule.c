/* test_schedule.c: run, run-schedule (saturate, seq, repeat, :until), limits. */
#include "test_eg.h"
#include "base.h" /* lm_now_s */

START_TEST(repeat_and_saturate_alternate_rulesets)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation left (i64)) (relation right (i64)) (left 0) (right 0)"
             "(ruleset L) (rule ((left x) (right x)) ((left (+ x 1))) :ruleset L)"
             "(ruleset R) (rule ((left x) (right y) (= x (+ y 1))) ((right x)) :ruleset R)"
             "(run-schedule (repeat 10 (saturate R) (saturate L)))"
             "(check (left 10)) (check (right 9)) (fail (check (left 11)))");
    ck_assert_uint_eq(t_size(e, "left"), 11);
    ck_assert_uint_eq(t_size(e, "right"), 10);
    eg_engine_free(e);
}
END_TEST

START_TEST(run_stops_when_saturated)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation R (i64)) (R 0) (rule ((R x) (< x 5)) ((R (+ x 1)))) (run 100)");
    ck_assert_uint_eq(t_size(e, "R"), 6);
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_SATURATED);
    eg_engine_free(e);
}
END_TEST

START_TEST(run_n_stops_after_n_iterations)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation R (i64)) (R 0) (rule ((R x)) ((R (+ x 1)))) (run 3)");
    ck_assert_uint_eq(t_size(e, "R"), 4);
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_ITERATIONS);
    eg_engine_free(e);
}
END_TEST

START_TEST(until_stops_before_the_next_iteration)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation R (i64)) (R 0) (rule ((R x)) ((R (+ x 1)))) (run 100 :until (R 4))");
    ck_assert_uint_eq(t_size(e, "R"), 5);
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_UNTIL);
    eg_engine_free(e);
}
END_TEST

START_TEST(node_limit_stops_growth_cleanly)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.node_limit = 50;
    o.log = tmpfile();
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(relation R (i64)) (R 0) (rule ((R x)) ((R (+ x 1)))) (run 1000)");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_NODE_LIMIT);
    ck_assert_uint_ge(t_size(e, "R"), 50);
    ck_assert_uint_lt(t_size(e, "R"), 100);
    eg_engine_free(e);
    fclose(o.log);
}
END_TEST

START_TEST(node_limit_stops_inside_one_large_iteration)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.node_limit = 3000;
    o.log = tmpfile();
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(relation A (i64)) (relation P (i64 i64)) (A 0) (ruleset grow)"
             "(rule ((A x) (< x 99)) ((A (+ x 1))) :ruleset grow)"
             "(run-schedule (saturate grow))"
             "(rule ((A x) (A y)) ((P x y)))"
             "(run 1)");
    ck_assert_uint_eq(t_size(e, "A"), 100);
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_NODE_LIMIT);
    ck_assert_uint_ge(t_size(e, "P"), 2900);
    ck_assert_uint_lt(t_size(e, "P"), 10000);
    ck_assert_uint_ge(eg_node_count(e), o.node_limit); /* what the stop line reports */
    lm_err err = {0};
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
    fclose(o.log);
}
END_TEST

/* A program that grows without bound (each S term makes two more) under a memory limit:
 * the run stops with EG_STOP_MEM_LIMIT and the message, the rows made so far stay, the
 * database is consistent, and the commands after the run still execute. */
START_TEST(mem_limit_stops_unbounded_growth_cleanly)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.mem_limit = 4u << 20;
    o.log = tmpfile();
    ck_assert_ptr_nonnull(o.log);
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(datatype N (Z) (S N) (P N N)) (Z)"
             "(rule ((= x (S y))) ((P x y) (S (S x))))"
             "(rule ((= x (Z))) ((S x)))"
             "(run 1000000)"
             "(relation after (i64)) (after 1)");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_MEM_LIMIT);
    /* stopped at the limit, not far past it: one check interval at most */
    ck_assert_uint_ge(eg_mem_bytes(e), o.mem_limit);
    ck_assert_uint_lt(eg_mem_peak(e), 2 * o.mem_limit);
    ck_assert_uint_gt(t_size(e, "S"), 1000);
    ck_assert_uint_eq(t_size(e, "after"), 1);
    lm_err err = {0};
    ck_assert_int_eq(eg_rebuild(e, &err), 0);
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    char log[512] = {0};
    rewind(o.log);
    size_t n = fread(log, 1, sizeof log - 1, o.log);
    ck_assert_uint_gt(n, 0);
    ck_assert_msg(strstr(log, "run stopped: memory limit reached") != NULL, "log: %s", log);
    ck_assert_msg(strstr(log, "results so far kept") != NULL, "log: %s", log);
    eg_engine_free(e);
    fclose(o.log);
}
END_TEST

/* The limit also cuts one exploding iteration short (checked between matches). */
START_TEST(mem_limit_stops_inside_one_large_iteration)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.mem_limit = 1u << 20;
    o.log = tmpfile();
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(relation A (i64)) (relation P (i64 i64)) (A 0) (ruleset grow)"
             "(rule ((A x) (< x 999)) ((A (+ x 1))) :ruleset grow)"
             "(run-schedule (saturate grow))"
             "(rule ((A x) (A y)) ((P x y)))"
             "(run 1)");
    ck_assert_uint_eq(t_size(e, "A"), 1000);
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_MEM_LIMIT);
    ck_assert_uint_gt(t_size(e, "P"), 0);
    ck_assert_uint_lt(t_size(e, "P"), 1000000);
    lm_err err = {0};
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
    fclose(o.log);
}
END_TEST

/* The count is the engine's own: it grows with the tables, and two engines do not see
 * each other's memory. */
START_TEST(mem_count_is_per_engine)
{
    eg_engine *a = t_engine(), *b = t_engine();
    uint64_t b0 = eg_mem_bytes(b);
    T_RUN(a, "(relation R (i64)) (R 0) (rule ((R x) (< x 5000)) ((R (+ x 1)))) (run 100000)");
    ck_assert_uint_gt(eg_mem_bytes(a), 5000 * 8);
    ck_assert_uint_ge(eg_mem_peak(a), eg_mem_bytes(a));
    ck_assert_uint_eq(eg_mem_bytes(b), b0);
    eg_engine_free(a);
    eg_engine_free(b);
}
END_TEST

/* Issue 21, fault 3: the node limit counts rows, not pending writes. A relation that a
 * rule derives from every pair of a thousand uses is one row, queued once (not a million
 * pending inserts, 40 MB), and the run is not stopped "at the node limit" with 2 000 rows
 * of a 5 000 limit. */
START_TEST(node_limit_counts_rows_and_repeated_inserts_are_queued_once)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.node_limit = 5000;
    o.log = tmpfile();
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(relation A (i64)) (relation use (i64 i64)) (relation multi (i64)) (A 0)"
             "(ruleset grow) (rule ((A x) (< x 999)) ((A (+ x 1))) :ruleset grow)"
             "(run-schedule (saturate grow))"
             "(ruleset uses) (rule ((A c)) ((use 0 c)) :ruleset uses) (run uses 1)");
    ck_assert_uint_eq(t_size(e, "use"), 1000);
    uint64_t before = eg_mem_peak(e);
    T_RUN(e, "(rule ((use x c1) (use x c2) (!= c1 c2)) ((multi x))) (run 1)");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_ITERATIONS);
    ck_assert_uint_eq(t_size(e, "multi"), 1);
    ck_assert_uint_lt(eg_mem_peak(e), before + (4u << 20));
    lm_err err = {0};
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
    fclose(o.log);
}
END_TEST

/* Issue 21, fault 5: the time limit bounds the whole iteration, applying its writes
 * included: a cross product of 2000 values (4 million pending rows) under a 0.3 s limit
 * stops within a fraction of the limit past it, and the database stays consistent. */
START_TEST(time_limit_bounds_the_writes_of_one_iteration)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.time_limit_s = 0.3;
    o.log = tmpfile();
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(relation A (i64)) (relation P (i64 i64)) (A 0) (ruleset grow)"
             "(rule ((A x) (< x 1999)) ((A (+ x 1))) :ruleset grow)"
             "(run-schedule (saturate grow))"
             "(rule ((A x) (A y)) ((P x y)))");
    ck_assert_uint_eq(t_size(e, "A"), 2000);
    double t0 = lm_now_s();
    T_RUN(e, "(run 1)");
    double dt = lm_now_s() - t0;
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_TIME_LIMIT);
    ck_assert_msg(dt < o.time_limit_s + 0.3, "the run took %.3f s under a %.1f s limit", dt,
                  o.time_limit_s);
    ck_assert_uint_lt(t_size(e, "P"), 4000000);
    lm_err err = {0};
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
    fclose(o.log);
}
END_TEST

/* Issue 21, fault 5: a string that triples every iteration is refused before its
 * allocation would pass the memory limit, inside the iteration (it used to reach three
 * times the limit: the string and its interned copy). */
START_TEST(mem_limit_stops_a_growing_string_before_it_is_made)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.mem_limit = 32u << 20;
    o.log = tmpfile();
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(relation S (String)) (S \"ab\") (rule ((S s)) ((S (+ s s s)))) (run 40)"
             "(relation after (i64)) (after 1)");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_MEM_LIMIT);
    ck_assert_uint_le(eg_mem_peak(e), o.mem_limit);
    ck_assert_uint_gt(t_size(e, "S"), 10);
    ck_assert_uint_eq(t_size(e, "after"), 1);
    char log[512] = {0};
    rewind(o.log);
    ck_assert_uint_gt(fread(log, 1, sizeof log - 1, o.log), 0);
    ck_assert_msg(strstr(log, "run stopped: memory limit reached (a primitive asked for") != NULL,
                  "log: %s", log);
    lm_err err = {0};
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
    fclose(o.log);
}
END_TEST

/* unstable-combined-ruleset (issue 26): one iteration runs its members' rules as they
 * are when it runs (a rule added to a member later is included); combined rulesets
 * nest; a rule cannot be added to one (a run-time failure, as in egglog). */
START_TEST(combined_rulesets_run_their_members_rules)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation number (i64))"
             "(ruleset r1) (rule () ((number 1)) :ruleset r1)"
             "(ruleset r2) (rule () ((number 2)) :ruleset r2)"
             "(unstable-combined-ruleset r12 r1 r2)"
             "(rule () ((number 3)) :ruleset r2)"
             "(fail (rule () ((number 4)) :ruleset r12))"
             "(ruleset r5) (rule () ((number 5)) :ruleset r5)"
             "(unstable-combined-ruleset r125 r12 r5)"
             "(run-schedule r125)"
             "(check (number 1)) (check (number 2)) (check (number 3)) (check (number 5))"
             "(fail (check (number 4)))");
    ck_assert_uint_eq(t_size(e, "number"), 4);
    /* one iteration: the members' rules see the same database */
    T_RUN(e, "(relation edge (i64 i64)) (relation path (i64 i64))"
             "(ruleset p1) (rule ((edge x y)) ((path x y)) :ruleset p1)"
             "(ruleset p2) (rule ((path x y) (edge y z)) ((path x z)) :ruleset p2)"
             "(unstable-combined-ruleset both p1 p2)"
             "(edge 0 1) (edge 1 2) (edge 2 3) (run both 1)");
    ck_assert_uint_eq(t_size(e, "path"), 3);
    T_RUN(e, "(run both 1)");
    ck_assert_uint_eq(t_size(e, "path"), 5);
    lm_err err = t_fail(e, "(unstable-combined-ruleset bad p1 nope)");
    ck_assert_msg(strstr(err.msg, "bad.egg:1:35: unknown ruleset 'nope'") != NULL, "%s", err.msg);
    err = t_fail(e, "(unstable-combined-ruleset both p1)");
    ck_assert_msg(strstr(err.msg, "ruleset 'both' is already defined") != NULL, "%s", err.msg);
    eg_engine_free(e);
}
END_TEST

START_TEST(rulesets_run_only_their_rules)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation A (i64)) (relation B (i64)) (ruleset only-b)"
             "(rule ((A x)) ((B x)) :ruleset only-b)"
             "(rule ((A x)) ((A (+ x 10))))"
             "(A 1) (run only-b 1)");
    ck_assert_uint_eq(t_size(e, "A"), 1);
    ck_assert_uint_eq(t_size(e, "B"), 1);
    eg_engine_free(e);
}
END_TEST

Suite *schedule_suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("schedule");
    tcase_add_test(tc, repeat_and_saturate_alternate_rulesets);
    tcase_add_test(tc, run_stops_when_saturated);
    tcase_add_test(tc, run_n_stops_after_n_iterations);
    tcase_add_test(tc, until_stops_before_the_next_iteration);
    tcase_add_test(tc, node_limit_stops_growth_cleanly);
    tcase_add_test(tc, rulesets_run_only_their_rules);
    tcase_add_test(tc, combined_rulesets_run_their_members_rules);
    tcase_add_test(tc, node_limit_stops_inside_one_large_iteration);
    tcase_add_test(tc, node_limit_counts_rows_and_repeated_inserts_are_queued_once);
    tcase_add_test(tc, time_limit_bounds_the_writes_of_one_iteration);
    tcase_add_test(tc, mem_limit_stops_a_growing_string_before_it_is_made);
    tcase_add_test(tc, mem_limit_stops_unbounded_growth_cleanly);
    tcase_add_test(tc, mem_limit_stops_inside_one_large_iteration);
    tcase_add_test(tc, mem_count_is_per_engine);
    suite_add_tcase(s, tc);
    return s;
}
