/* test_oom.c: running out of memory is an error, never an abort or a leak.
 *
 * eg_options.fail_alloc makes the engine's N-th allocation fail. A real program (sorts,
 * datatypes, functions with merges, rules and rewrites, runs, extraction, push/pop, input
 * through the C API, serialization) is run once to count its allocations, then again with
 * the N-th one failing, for every N. Each time the engine must stop with LM_ENOMEM and a
 * message, then refuse every later call at once (or, when the failed allocation was one
 * that may fail quietly, the growth of the name index, succeed with a usable engine), and
 * eg_engine_free must free everything: under the
 * sanitizer build, LeakSanitizer fails the test if any path loses memory, and ASan if any
 * touches freed or half-made structures. */
#include <stdlib.h>

#include "test_eg.h"

static const char *PROGRAM =
    "(datatype Math (Num i64) (Var String) (Add Math Math) (Mul Math Math :cost 3))\n"
    "(sort P (Pair Math i64))\n"
    "(relation seen (P))\n"
    "(function size (Math) i64 :merge (min old new))\n"
    "(function best (Math) Math :merge (Add old new))\n"
    "(ruleset arith)\n"
    "(rewrite (Add a b) (Add b a) :ruleset arith)\n"
    "(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)) :ruleset arith)\n"
    "(rewrite (Add (Num a) (Num b)) (Num (+ a b)) :ruleset arith)\n"
    "(rule ((= e (Add a b)) (= (size a) sa) (= (size b) sb)) ((set (size e) (+ 1 (+ sa sb)))) "
    ":ruleset arith :name \"size-add\")\n"
    "(rule ((= e (Num n))) ((set (size e) 1) (seen (pair e n))) :ruleset arith)\n"
    "(let $x (Var \"x\"))\n"
    "(let $t (Mul $x (Add (Num 1) (Num 2))))\n"
    "(set (size $x) 1)\n"
    "(set (best $x) (Num 7)) (set (best $x) (Num 8))\n"
    "(push)\n"
    "(run-schedule (repeat 4 (saturate arith)))\n"
    "(check (= $t (Add (Mul $x (Num 2)) (Mul $x (Num 1)))))\n"
    "(extract $t)\n"
    "(extract $t 3)\n"
    "(print-size)\n"
    "(pop)\n"
    "(union (Num 1) (Num 2))\n"
    "(sort MS (Set Math)) (sort MV (Vec MS)) (sort MM (Map i64 Math)) (sort MB (MultiSet Math))\n"
    "(constructor Group (MV) Math)\n"
    "(let $g (Group (vec-of (set-of (Num 1) (Num 2) $x) (set-empty))))\n"
    "(let $m (map-insert (map-insert (map-empty) 2 (Num 5)) 1 $x))\n"
    "(let $b (multiset-sum (multiset-of (Num 5) $x) (multiset-single (Num 6) 2)))\n"
    "(union (Num 5) (Num 6))\n"
    "(extract $g)\n"
    "(sort MF (UnstableFn (Math) Math)) (sort MVec (Vec Math))\n"
    "(let $f (unstable-fn \"Add\" (Num 1)))\n"
    "(let $fv (unstable-vec-map $f (vec-of (Num 7) $x)))\n"
    "(let $big (* (from-string \"123456789012345678901234567890\") (bigint 7)))\n"
    "(let $rat (+ (bigrat $big (bigint 3)) (bigrat (bigint 1) (bigint 6))))\n"
    "(fail (check (= (Num 3) (Num 4))))\n"
    "(run arith 2)\n";

/* Runs the whole scenario on e: the program, then C API calls. Returns the first error
 * code (0 when everything succeeded), with its message in err. */
static int scenario(eg_engine *e, lm_err *err)
{
    int rc = eg_run_text(e, PROGRAM, "oom.egg", err);
    if (rc) return rc;
    int num = eg_table_lookup(e, "Num"), add = eg_table_lookup(e, "Add");
    eg_value k = eg_value_i64(40), a, b, args[2];
    if ((rc = eg_add_term(e, num, &k, 1, &a, err))) return rc;
    k = eg_value_i64(41);
    if ((rc = eg_add_term(e, num, &k, 1, &b, err))) return rc;
    args[0] = a, args[1] = b;
    if ((rc = eg_add_term(e, add, args, 2, &a, err))) return rc;
    k = eg_value_i64(81); /* what the rules will find too: saturation stays finite */
    if ((rc = eg_add_term(e, num, &k, 1, &b, err))) return rc;
    if ((rc = eg_union(e, a, b, err))) return rc;
    if ((rc = eg_rebuild(e, err))) return rc;
    eg_value s;
    if ((rc = eg_value_string(e, "a fresh string", &s, err))) return rc;
    if ((rc = eg_run_schedule(e, "(repeat 2 arith)", NULL, err))) return rc;
    char *term = NULL;
    rc = eg_extract(e, eg_sort_lookup(e, "Math"), a, &term, NULL, err);
    eg_string_free(term);
    if (rc) return rc;
    eg_serialized ser;
    eg_serialize_opts so = {.all_functions = true, .origins = true};
    rc = eg_serialize(e, &so, &ser, err);
    if (!rc) {
        FILE *f = tmpfile();
        ck_assert_ptr_nonnull(f);
        rc = eg_serialized_write_json(e, &ser, f, err);
        fclose(f);
    }
    eg_serialized_free(&ser);
    if (rc) return rc;
    return eg_check_invariants(e, err);
}

static eg_engine *engine_failing_at(uint64_t n, FILE *sink, lm_err *err)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = true;
    o.out = o.log = sink;
    o.fail_alloc = n;
    return eg_engine_new(&o, err);
}

/* Every call on a failed engine answers LM_ENOMEM at once (or an empty result). */
static void expect_refusals(eg_engine *e)
{
    lm_err err = {0};
    ck_assert_int_eq(eg_run_text(e, "(relation R (i64))", "after.egg", &err), LM_ENOMEM);
    ck_assert_ptr_nonnull(strstr(err.msg, "out of memory"));
    lm_err_clear(&err);
    ck_assert_int_eq(eg_rebuild(e, &err), LM_ENOMEM);
    lm_err_clear(&err);
    eg_value v;
    ck_assert_int_eq(eg_value_string(e, "x", &v, &err), LM_ENOMEM);
    lm_err_clear(&err);
    eg_serialized s;
    ck_assert_int_eq(eg_serialize(e, NULL, &s, &err), LM_ENOMEM);
    eg_serialized_free(&s);
    lm_err_clear(&err);
    ck_assert_int_eq(eg_check_invariants(e, &err), LM_ENOMEM);
    ck_assert_int_eq(eg_table_lookup(e, "Num"), -1);
    ck_assert_uint_eq(eg_table_count(e), 0);
}

START_TEST(failed_allocations_anywhere_give_a_clean_error)
{
    FILE *sink = tmpfile();
    ck_assert_ptr_nonnull(sink);
    /* the count of a whole successful scenario */
    lm_err err = {0};
    eg_engine *e = engine_failing_at(0, sink, &err);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(scenario(e, &err) == 0, "the scenario fails without injection: %s", err.msg);
    uint64_t total = eg_alloc_count(e);
    eg_engine_free(e);
    ck_assert_uint_gt(total, 500);
    uint64_t tried = 0, failed_new = 0, failed_run = 0;
    for (uint64_t n = 1; n <= total + 1; n++) {
        lm_err_clear(&err);
        e = engine_failing_at(n, sink, &err);
        tried++;
        if (!e) { /* the engine itself could not be made */
            ck_assert_int_eq(err.code, LM_ENOMEM);
            failed_new++;
            continue;
        }
        int rc = scenario(e, &err);
        if (n <= total && rc != 0) {
            ck_assert_msg(rc == LM_ENOMEM,
                          "allocation %llu of %llu failed, but the scenario "
                          "returned %d: %s",
                          (unsigned long long)n, (unsigned long long)total, rc, err.msg);
            ck_assert_int_eq(err.code, LM_ENOMEM);
            ck_assert_ptr_nonnull(strstr(err.msg, "out of memory"));
            expect_refusals(e);
            failed_run++;
        } else if (n <= total) { /* a quiet failure: the engine must still be whole */
            ck_assert_uint_gt(eg_table_count(e), 0);
            ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
        } else {
            ck_assert_msg(rc == 0, "no allocation failed, but: %s", err.msg);
        }
        eg_engine_free(e);
    }
    ck_assert_uint_gt(failed_new, 0);
    ck_assert_uint_gt(failed_run, total * 9 / 10); /* nearly every allocation is fatal */
    ck_assert_uint_eq(tried, total + 1);
    fclose(sink);
}
END_TEST

/* A failed allocation inside a rule's action, deep in an iteration, leaves a consistent
 * engine to free, and the stop is an error, not a limit stop. */
START_TEST(failed_allocation_inside_a_run_is_an_error)
{
    FILE *sink = tmpfile();
    lm_err err = {0};
    eg_engine *e = engine_failing_at(0, sink, &err);
    T_RUN(e, "(relation R (i64))");
    uint64_t before = eg_alloc_count(e);
    eg_engine_free(e);
    /* fail well inside the growth of R during the run */
    e = engine_failing_at(before + 200, sink, &err);
    ck_assert_ptr_nonnull(e);
    int rc = eg_run_text(e,
                         "(relation R (i64)) (R 0) (rule ((R x) (< x 100000)) ((R (+ x 1))))"
                         "(run 100000)",
                         "grow.egg", &err);
    ck_assert_int_eq(rc, LM_ENOMEM);
    ck_assert_ptr_nonnull(strstr(err.msg, "grow.egg:1:"));
    expect_refusals(e);
    eg_engine_free(e);
    fclose(sink);
}
END_TEST

Suite *oom_suite(void)
{
    Suite *s = suite_create("oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, failed_allocations_anywhere_give_a_clean_error);
    tcase_add_test(tc, failed_allocation_inside_a_run_is_an_error);
    suite_add_tcase(s, tc);
    return s;
}
