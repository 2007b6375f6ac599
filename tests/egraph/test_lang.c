/* test_lang.c: the language as egglog defines it, limits over whole commands, and the
 * C API the compiler reads the engine through (column sorts, globals, row flags,
 * functions in the serialization, wide input lines, provenance).
 *
 * The expected values of the primitive and command tests are egglog's own results for
 * the same programs (egglog 13.2, the PyPI package), checked when the tests were written. */
#include <stdlib.h>
#include <unistd.h>

#include "test_eg.h"

/* An engine with limits whose log goes to a temporary file, kept for reading. */
static eg_engine *limited_engine(double time_s, uint64_t iters, uint64_t nodes, FILE **log)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = true;
    o.time_limit_s = time_s;
    o.iter_limit = iters;
    o.node_limit = nodes;
    o.log = *log = tmpfile();
    ck_assert_ptr_nonnull(*log);
    return eg_engine_new(&o, NULL);
}

static char *read_log(FILE *f)
{
    static char buf[8192];
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    return buf;
}

/* R grows by one row per iteration forever: a schedule over it never saturates. */
static const char *GROWS = "(relation R (i64)) (R 0) (ruleset g)"
                           "(rule ((R x)) ((R (+ x 1))) :ruleset g)";

/* ---- limits bound whole commands, and schedules report the stop ---- */

static void time_limit_bounds(const char *schedule)
{
    FILE *log;
    eg_engine *e = limited_engine(0.3, 0, 0, &log);
    T_RUN(e, GROWS);
    double t0 = lm_now_s();
    T_RUN(e, schedule);
    double dt = lm_now_s() - t0;
    ck_assert_msg(dt < 5.0, "%s ran %.1f s under a 0.3 s time limit", schedule, dt);
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_TIME_LIMIT);
    ck_assert_ptr_nonnull(strstr(read_log(log), "run stopped: time limit reached"));
    eg_engine_free(e);
    fclose(log);
}

START_TEST(time_limit_bounds_a_whole_saturate)
{
    time_limit_bounds("(run-schedule (saturate g))");
}
END_TEST

START_TEST(time_limit_bounds_a_whole_repeat)
{
    time_limit_bounds("(run-schedule (repeat 1000000000 g))");
}
END_TEST

START_TEST(time_limit_bounds_one_api_schedule_call)
{
    FILE *log;
    eg_engine *e = limited_engine(0.3, 0, 0, &log);
    T_RUN(e, GROWS);
    eg_stop_reason why;
    lm_err err = {0};
    double t0 = lm_now_s();
    ck_assert_int_eq(eg_run_schedule(e, "(saturate g)", &why, &err), 0);
    ck_assert_msg(lm_now_s() - t0 < 5.0, "eg_run_schedule was not bounded");
    ck_assert_int_eq(why, EG_STOP_TIME_LIMIT);
    eg_engine_free(e);
    fclose(log);
}
END_TEST

START_TEST(iteration_limit_stops_a_schedule_and_says_so)
{
    FILE *log;
    eg_engine *e = limited_engine(0, 5, 0, &log);
    T_RUN(e, GROWS);
    T_RUN(e, "(run-schedule (saturate g))");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_ITER_LIMIT);
    ck_assert_uint_eq(t_size(e, "R"), 6);
    const char *l = read_log(log);
    ck_assert_msg(strstr(l, "run stopped: iteration limit reached (6 rows, 5 iterations); "
                            "results so far kept") != NULL,
                  "log: %s", l);
    eg_engine_free(e);
    fclose(log);
}
END_TEST

START_TEST(node_limit_stops_a_schedule_and_says_so)
{
    FILE *log;
    eg_engine *e = limited_engine(0, 0, 50, &log);
    T_RUN(e, GROWS);
    T_RUN(e, "(run-schedule (repeat 1000 (seq g g)))");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_NODE_LIMIT);
    ck_assert_ptr_nonnull(strstr(read_log(log), "run stopped: node limit reached"));
    eg_engine_free(e);
    fclose(log);
}
END_TEST

/* A limit that stopped one command does not stop the next one before it starts. */
START_TEST(a_limit_stop_does_not_carry_over_to_the_next_schedule)
{
    FILE *log;
    eg_engine *e = limited_engine(0.2, 0, 0, &log);
    T_RUN(e, GROWS);
    T_RUN(e, "(run-schedule (saturate g))");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_TIME_LIMIT);
    T_RUN(e, "(relation Q (i64)) (ruleset h) (rule ((R 0)) ((Q 1)) :ruleset h)"
             "(run-schedule (saturate h))"
             "(check (Q 1))");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_SATURATED);
    eg_engine_free(e);
    fclose(log);
}
END_TEST

/* ---- egglog's primitives ---- */

START_TEST(i64_arithmetic_fails_on_overflow_as_in_egglog)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(check (= (+ 9223372036854775806 1) 9223372036854775807))"
             "(fail (let $a (+ 9223372036854775807 1)))"
             "(fail (let $b (- -9223372036854775807 2)))"
             "(fail (let $c (* 4611686018427387904 2)))"
             "(check (= (/ -9223372036854775807 -1) 9223372036854775807))"
             "(fail (let $d (/ 7 0)))"
             "(fail (let $e (% 7 0)))"
             "(check (= (<< 1 63) -9223372036854775808))"
             "(fail (let $f (<< 1 64)))"
             "(fail (let $g (<< 1 -1)))"
             "(fail (let $h (>> 8 64)))"
             "(check (= (>> -8 1) -4))"
             /* an overflowing primitive in a query makes the row not match */
             "(relation R (i64)) (R 9223372036854775807) (R 1) (relation S (i64))"
             "(rule ((R x) (= y (+ x 1))) ((S y)))"
             "(run 1) (check (S 2)) (fail (check (S -9223372036854775808)))");
    ck_assert_uint_eq(t_size(e, "S"), 1);
    eg_engine_free(e);
}
END_TEST

/* Issue 21, fault 12: negation and abs of INT64_MIN overflow like (- 0 x), with the same
 * message, in actions and in queries. */
START_TEST(i64_negation_fails_on_overflow_like_subtraction)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(check (= (- 5) -5)) (check (= (neg -7) 7)) (check (= (abs -7) 7))"
             "(check (= (abs 7) 7)) (check (= (- -9223372036854775807) 9223372036854775807))"
             "(relation R (i64)) (R -9223372036854775808) (R 3) (relation S (i64))"
             "(rule ((R x) (= y (abs x))) ((S y))) (run 1) (check (S 3))");
    ck_assert_uint_eq(t_size(e, "S"), 1);
    static const char *const neg[] = {"(let $a (- -9223372036854775808))",
                                       "(let $a (neg -9223372036854775808))",
                                       "(let $a (abs -9223372036854775808))",
                                       "(let $a (- 0 -9223372036854775808))",
                                       "(let $a (/ -9223372036854775808 -1))"};
    for (size_t i = 0; i < sizeof neg / sizeof *neg; i++) {
        lm_err err = t_fail(e, neg[i]);
        ck_assert_msg(strstr(err.msg, "failed: integer overflow") != NULL, "%s: %s", neg[i],
                      err.msg);
    }
    eg_engine_free(e);
}
END_TEST

/* Issue 26: a relation row is a value of its own, as in egglog (each relation is a
 * constructor of a sort of its own): two rows are equal only when they are one row. */
START_TEST(relation_rows_are_equal_only_to_themselves)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation myrel (i64)) (relation other (i64)) (relation hit (i64))"
             "(myrel 1) (myrel 2) (other 1)"
             "(rule ((= (myrel 1) (myrel 2))) ((hit 1)))"
             "(rule ((= (myrel 1) (myrel 1))) ((hit 2)))"
             "(rule ((= (myrel x) (myrel y))) ((hit (+ 10 (+ x y)))))"
             "(rule ((= (myrel 1) (other 1))) ((hit 3)))"
             "(rule ((= u (myrel 1)) (= u (myrel 2))) ((hit 4)))"
             "(rule ((= u (myrel x)) (= u (myrel y))) ((hit (+ 100 (+ x y)))))"
             "(run 1)"
             "(check (hit 2)) (check (hit 12)) (check (hit 14)) (check (hit 102)) (check (hit 104))"
             "(fail (check (hit 1))) (fail (check (hit 3))) (fail (check (hit 4)))"
             "(fail (check (hit 13)))"
             "(fail (check (= (myrel 1) (myrel 2)))) (check (= (myrel 2) (myrel 2)))");
    ck_assert_uint_eq(t_size(e, "hit"), 5);
    eg_engine_free(e);
}
END_TEST

/* Issue 26: BigInt and BigRat (GMP), egglog's primitives; a value is its canonical text,
 * so equal numbers are one value (table keys included). */
START_TEST(bigint_and_bigrat_behave_as_in_egglog)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(check (= (* (bigint 9223372036854775807) (bigint 2))"
             "          (from-string \"18446744073709551614\")))"
             "(check (= (from-string \"007\") (bigint 7))) (check (= (from-string \"-0\") (bigint 0)))"
             "(fail (let $a (from-string \"12x\"))) (fail (let $b (from-string \"\")))"
             "(check (= (/ (bigint -7) (bigint 2)) (bigint -3)))"
             "(check (= (% (bigint -7) (bigint 2)) (bigint -1)))"
             "(fail (let $c (/ (bigint 1) (bigint 0))))"
             "(check (= (<< (bigint 1) 100) (from-string \"1267650600228229401496703205376\")))"
             "(check (= (>> (bigint -7) 1) (bigint -4)))"
             "(fail (let $d (<< (bigint 1) 4000000)))"
             "(check (= (bits (bigint 255)) (bigint 8))) (check (= (not-Z (bigint 0)) (bigint -1)))"
             "(check (= (& (bigint 12) (bigint 10)) (bigint 8)))"
             "(check (< (bigint 2) (from-string \"100000000000000000000\")))"
             "(check (= (bool-< (bigint 3) (bigint 2)) false))"
             "(check (= (max (bigint 3) (bigint -9)) (bigint 3)))"
             "(check (= (to-string (from-string \"+42\")) \"42\"))"
             /* rationals: lowest terms, positive denominator */
             "(check (= (bigrat (bigint 2) (bigint -4)) (bigrat (bigint -1) (bigint 2))))"
             "(fail (let $e (bigrat (bigint 1) (bigint 0))))"
             "(check (= (+ (bigrat (bigint 1) (bigint 3)) (bigrat (bigint 1) (bigint 6)))"
             "          (bigrat (bigint 1) (bigint 2))))"
             "(fail (let $f (/ (bigrat (bigint 1) (bigint 3)) (bigrat (bigint 0) (bigint 5)))))"
             "(check (= (round (bigrat (bigint -5) (bigint 2))) (bigrat (bigint -3) (bigint 1))))"
             "(check (= (floor (bigrat (bigint -5) (bigint 2))) (bigrat (bigint -3) (bigint 1))))"
             "(check (= (ceil (bigrat (bigint -5) (bigint 2))) (bigrat (bigint -2) (bigint 1))))"
             "(check (= (pow (bigrat (bigint 2) (bigint 3)) (bigrat (bigint -2) (bigint 1)))"
             "          (bigrat (bigint 9) (bigint 4))))"
             "(fail (let $g (pow (bigrat (bigint 0) (bigint 1)) (bigrat (bigint -1) (bigint 1)))))"
             "(check (= (sqrt (bigrat (bigint 4) (bigint 9))) (bigrat (bigint 2) (bigint 3))))"
             "(fail (let $h (sqrt (bigrat (bigint 2) (bigint 1)))))"
             "(check (= (numer (bigrat (bigint 6) (bigint 4))) (bigint 3)))"
             "(check (= (denom (bigrat (bigint 6) (bigint 4))) (bigint 2)))"
             "(check (= (to-i64 (bigrat (bigint 8) (bigint 2))) 4))"
             "(fail (let $i (to-i64 (bigrat (bigint 1) (bigint 2)))))"
             "(check (= (to-f64 (bigrat (bigint 1) (bigint 4))) 0.25))"
             "(check (< (bigrat (bigint 1) (bigint 3)) (bigrat (bigint 1) (bigint 2))))"
             /* as a table key: one row per number */
             "(function half (BigRat) i64 :merge (max old new))"
             "(set (half (bigrat (bigint 1) (bigint 2))) 1)"
             "(set (half (bigrat (bigint 2) (bigint 4))) 2)");
    ck_assert_uint_eq(t_size(e, "half"), 1);
    eg_engine_free(e);
}
END_TEST

/* egglog compares the stored and the new value as they stand before running a :merge:
 * a stored id (B) whose class was merged into another (A, the root) in this iteration is
 * not the new canonical one, so the merge runs (egglog's eggcc-extraction counts these
 * terms); an equal id does not. */
START_TEST(merge_compares_values_as_they_stand)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype T (A) (B) (Pick T T))"
             "(function f () T :merge (Pick old new))"
             "(let $a (A)) (let $b (B)) (set (f) $b)"
             "(set (f) $b)" /* the same id: no merge */
             "(rule ((= x (B)) (= y (A))) ((union x y) (set (f) y)))"
             "(run 1)");
    ck_assert_uint_eq(t_size(e, "Pick"), 1);
    eg_engine_free(e);
}
END_TEST

START_TEST(f64_primitives_behave_as_in_egglog)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(fail (let $a (/ 1.0 0.0)))"
             "(fail (let $b (% 1.0 0.0)))"
             "(check (= (to-i64 1e30) 9223372036854775807))"
             "(check (= (to-i64 -1e30) -9223372036854775808))"
             "(check (= (to-i64 NaN) 0))"
             "(check (= (to-i64 -2.7) -2))"
             "(check (= (to-string 100.0) \"100.0\"))"
             "(check (= (to-string 1e20) \"1e20\"))"
             "(check (= (to-string 1e16) \"1e16\"))"
             "(check (= (to-string 1234567890123456.0) \"1234567890123456.0\"))"
             "(check (= (to-string 12345678901234567.0) \"1.2345678901234568e16\"))"
             "(check (= (to-string 0.0001) \"0.0001\"))"
             "(check (= (to-string 0.00001) \"1e-5\"))"
             "(check (= (to-string -2.5e-10) \"-2.5e-10\"))"
             "(check (= (to-string 1.2) \"1.2\"))"
             "(check (= (min 1.0 NaN) 1.0))"
             "(check (= (max 2.0 1.0) 2.0))");
    eg_engine_free(e);
}
END_TEST

START_TEST(string_primitives_behave_as_in_egglog)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(check (= (replace \"abc\" \"\" \"x\") \"xaxbxcx\"))"
             "(check (= (replace \"aaa\" \"a\" \"bb\") \"bbbbbb\"))"
             "(check (= (count-matches \"abc\" \"\") 4))"
             "(check (= (count-matches \"h\xc3\xa9llo\" \"\") 6))"
             "(check (= (count-matches \"aaa\" \"aa\") 1))"
             "(check (= (+ \"a\" \"b\" \"c\") \"abc\"))");
    eg_engine_free(e);
}
END_TEST

START_TEST(bool_and_generic_primitives_behave_as_in_egglog)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(check (= (or) false))"
             "(check (= (or false false true) true))"
             "(check (= (and true false) false))"
             "(check (guard true))"
             "(fail (check (guard false)))"
             "(check (value-eq 1 1))"
             "(fail (check (value-eq 1 2)))"
             "(check (= (bool-!= 1 2) true))"
             "(check (= (bool-!= \"a\" \"a\") false))"
             "(check (= (ordering-min 2 5) 2))"
             "(check (= (ordering-max 2 5) 5))"
             "(check (= (ordering-min true false) false))"
             "(datatype M (Num i64)) (let $a (Num 5)) (let $b (Num 7))"
             "(check (= (ordering-min $b $a) $a))"
             "(check (!= $a $b))"
             /* guard over a bool comparison filters matches in a query */
             "(relation R (i64)) (R 1) (R 2) (R 3)"
             "(rule ((R x) (guard (bool-< x 2))) ((R 10)))"
             "(run 1)");
    ck_assert_uint_eq(t_size(e, "R"), 4);
    lm_err err = t_fail(e, "(check (= (and true true true) true))"); /* and is binary */
    ck_assert_int_eq(err.code, EG_ERR_TYPE);
    eg_engine_free(e);
}
END_TEST

/* ---- command semantics ---- */

START_TEST(fail_does_not_accept_a_type_error)
{
    eg_engine *e = t_engine();
    lm_err err = t_fail(e, "(fail (check (= 1 \"a\")))");
    ck_assert_int_eq(err.code, EG_ERR_TYPE);
    ck_assert_msg(strstr(err.msg, "bad.egg:1:") != NULL, "%s", err.msg);
    err = t_fail(e, "(fail (check (foo 1)))");
    ck_assert_int_eq(err.code, EG_ERR_TYPE);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown function or primitive 'foo'"));
    err = t_fail(e, "(relation R (i64)) (fail (R \"x\"))");
    ck_assert_int_eq(err.code, EG_ERR_TYPE);
    /* run-time failures are what fail accepts */
    T_RUN(e, "(fail (check (R 1))) (fail (check (< 2 1))) (fail (let $z (/ 1 0)))");
    eg_engine_free(e);
}
END_TEST

START_TEST(merge_with_an_equal_value_does_not_run)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype T (L i64) (Both T T))"
             "(function f (i64) T :merge (Both old new))"
             "(set (f 0) (L 1)) (set (f 0) (L 1))");
    ck_assert_uint_eq(t_size(e, "Both"), 0);
    T_RUN(e, "(set (f 0) (L 2)) (check (= (f 0) (Both (L 1) (L 2))))");
    ck_assert_uint_eq(t_size(e, "Both"), 1);
    eg_engine_free(e);
}
END_TEST

/* Two keys merged by a union whose values became equal by another union: egglog sees
 * one value and builds no merge term. */
START_TEST(merge_of_values_equal_after_rebuilding_does_not_run)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype T (L i64) (Both T T)) (datatype K (A i64))"
             "(function f (K) T :merge (Both old new))"
             "(set (f (A 1)) (L 1)) (set (f (A 2)) (L 2))"
             "(union (L 1) (L 2)) (union (A 1) (A 2))");
    ck_assert_uint_eq(t_size(e, "Both"), 0);
    ck_assert_uint_eq(t_size(e, "f"), 1);
    lm_err err = {0};
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
}
END_TEST

/* ---- the C API the compiler reads ---- */

START_TEST(column_sorts_and_sort_names_are_readable)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype IR (Op String IR)) (datatype DType (F32))"
             "(function dtype (IR) DType :merge old) (relation seen (IR i64))");
    int dt = eg_table_lookup(e, "dtype"), op = eg_table_lookup(e, "Op");
    int seen = eg_table_lookup(e, "seen");
    ck_assert_str_eq(eg_sort_name(e, eg_table_column_sort(e, dt, 0)), "IR");
    ck_assert_str_eq(eg_sort_name(e, eg_table_column_sort(e, dt, 1)), "DType");
    ck_assert_str_eq(eg_sort_name(e, eg_table_column_sort(e, op, 0)), "String");
    ck_assert_str_eq(eg_sort_name(e, eg_table_column_sort(e, op, 2)), "IR");
    ck_assert_str_eq(eg_sort_name(e, eg_table_column_sort(e, seen, 1)), "i64");
    ck_assert_str_eq(eg_sort_name(e, eg_table_column_sort(e, seen, 2)), "Unit");
    ck_assert_int_eq(eg_table_column_sort(e, seen, 3), -1);
    ck_assert_int_eq(eg_table_column_sort(e, 99, 0), -1);
    ck_assert(eg_sort_is_eclass(e, eg_sort_lookup(e, "IR")));
    ck_assert(!eg_sort_is_eclass(e, eg_sort_lookup(e, "i64")));
    ck_assert_ptr_null(eg_sort_name(e, 999));
    ck_assert_uint_eq(eg_sort_count(e), 9); /* seven built-in sorts, IR, DType */
    eg_engine_free(e);
}
END_TEST

START_TEST(globals_are_readable_by_name)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64)) (let root (Num 1)) (let $n 42) (let $s \"hi\")"
             "(union root (Num 0))");
    lm_err err = {0};
    int sort;
    eg_value v;
    ck_assert_int_eq(eg_global_get(e, "root", &sort, &v, &err), 0);
    ck_assert_str_eq(eg_sort_name(e, sort), "M");
    eg_value zero = eg_value_i64(0), n0;
    ck_assert_int_eq(eg_add_term(e, eg_table_lookup(e, "Num"), &zero, 1, &n0, &err), 0);
    ck_assert_uint_eq(v, eg_find(e, n0)); /* canonical: the union made it (Num 0)'s class */
    ck_assert_int_eq(eg_global_get(e, "$n", &sort, &v, &err), 0);
    ck_assert_int_eq(sort, eg_sort_lookup(e, "i64"));
    ck_assert_int_eq(eg_value_as_i64(v), 42);
    ck_assert_int_eq(eg_global_get(e, "$s", NULL, &v, &err), 0);
    ck_assert_str_eq(eg_value_as_string(e, v), "hi");
    ck_assert_int_eq(eg_global_get(e, "nope", &sort, &v, &err), EG_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "eg_global_get: no global named 'nope'"));
    eg_engine_free(e);
}
END_TEST

START_TEST(readers_see_whether_a_row_is_subsumed)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64) (Neg M)) (Neg (Num 1)) (Neg (Num 2)) (subsume (Neg (Num 2)))");
    int neg = eg_table_lookup(e, "Neg");
    eg_value row[2];
    eg_row_info info;
    lm_err err = {0};
    size_t cur = 0;
    int n = 0, subsumed = 0;
    while (eg_table_next_row(e, neg, &cur, row, &info, &err)) {
        n++;
        if (info.flags & EG_ROW_SUBSUMED) subsumed++;
    }
    ck_assert_int_eq(err.code, 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(subsumed, 1);
    ck_assert_int_eq(eg_table_row(e, neg, 1, row, &info, &err), 0);
    ck_assert_uint_eq(info.flags, EG_ROW_SUBSUMED);
    ck_assert_int_eq(eg_table_row(e, neg, 0, row, &info, &err), 0);
    ck_assert_uint_eq(info.flags, 0);
    /* a bad table is an error in the record, and the loop ends */
    cur = 0;
    ck_assert(!eg_table_next_row(e, 99, &cur, row, &info, &err));
    ck_assert_int_eq(err.code, EG_ERR_ARG);
    eg_engine_free(e);
}
END_TEST

static char *json_of(eg_engine *e, const eg_serialized *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(eg_serialized_write_json(e, s, f, NULL), 0);
    fclose(f);
    return buf;
}

START_TEST(function_values_are_serialized_per_class)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype DType (F32) (BF16)) (datatype IR (In String) (Add IR IR))"
             "(function dtype (IR) DType :merge old) (function size (IR) i64 :merge (max old new))"
             "(function pairf (IR IR) i64 :merge old)"
             "(let $a (In \"a\")) (let $b (In \"b\")) (let $s (Add $a $b))"
             "(set (dtype $a) (F32)) (set (dtype $s) (BF16)) (set (size $s) 64)"
             "(set (pairf $a $b) 1)");
    int dtype = eg_table_lookup(e, "dtype");
    eg_serialize_opts so = {.functions = &dtype, .nfunctions = 1};
    eg_serialized s;
    lm_err err = {0};
    ck_assert_msg(eg_serialize(e, &so, &s, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(s.n_funcs, 1);
    ck_assert_uint_eq(s.func_table[0], (uint32_t)dtype);
    ck_assert_uint_eq(s.n_fvals, 2);
    for (uint32_t i = 0; i < s.n_fvals; i++) {
        const eg_sfval *fv = &s.fvals[i];
        ck_assert_uint_lt(fv->value_class, s.n_classes);
        /* the value's class holds the DType node */
        const char *op = NULL;
        for (uint32_t k = 0; k < s.n_nodes; k++)
            if (s.nodes[k].eclass == fv->value_class) op = s.nodes[k].op;
        ck_assert_ptr_nonnull(op);
        ck_assert(strcmp(op, "F32") == 0 || strcmp(op, "BF16") == 0);
    }
    char *j = json_of(e, &s);
    ck_assert_ptr_nonnull(strstr(j, "\"type\":\"IR\",\"dtype\":\"c"));
    free(j);
    eg_serialized_free(&s);
    /* all functions of one e-class input: dtype and size, not pairf */
    eg_serialize_opts all = {.all_functions = true};
    ck_assert_int_eq(eg_serialize(e, &all, &s, &err), 0);
    ck_assert_uint_eq(s.n_funcs, 2);
    j = json_of(e, &s);
    ck_assert_ptr_nonnull(strstr(j, "\"size\":64"));
    ck_assert_ptr_null(strstr(j, "pairf"));
    free(j);
    eg_serialized_free(&s);
    /* a function of two inputs cannot be serialized per class */
    int pairf = eg_table_lookup(e, "pairf");
    eg_serialize_opts bad = {.functions = &pairf, .nfunctions = 1};
    ck_assert_int_eq(eg_serialize(e, &bad, &s, &err), EG_ERR_ARG);
    eg_serialized_free(&s);
    eg_engine_free(e);
}
END_TEST

START_TEST(input_reads_lines_wider_than_32_fields)
{
    char path[] = "/tmp/eg_wide_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    for (int line = 0; line < 3; line++)
        for (int c = 0; c < 40; c++)
            fprintf(f, "%d%c", line * 100 + c, c == 39 ? '\n' : '\t');
    fclose(f);
    char prog[1024];
    int o = snprintf(prog, sizeof prog, "(relation wide (");
    for (int c = 0; c < 40; c++)
        o += snprintf(prog + o, sizeof prog - (size_t)o, "i64 ");
    snprintf(prog + o, sizeof prog - (size_t)o,
             "))\n(input wide \"%s\")\n(relation narrow (i64 i64))", path);
    eg_engine *e = t_engine();
    T_RUN(e, prog);
    ck_assert_uint_eq(t_size(e, "wide"), 3);
    eg_value row[40];
    ck_assert_int_eq(eg_table_row(e, eg_table_lookup(e, "wide"), 2, row, NULL, NULL), 0);
    ck_assert_int_eq(eg_value_as_i64(row[39]), 239);
    /* a line of another width is refused with its true field count */
    snprintf(prog, sizeof prog, "(input narrow \"%s\")", path);
    lm_err err = t_fail(e, prog);
    ck_assert_msg(strstr(err.msg, "input line 1 has 40 fields; narrow needs 2") != NULL, "%s",
                  err.msg);
    remove(path);
    eg_engine_free(e);
}
END_TEST

START_TEST(rows_remember_the_rule_or_command_that_made_them)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64) (Neg M) (Twice M))\n"
             "(let $g (Neg (Num 1)))\n"
             "(rewrite (Neg x) (Twice x) :name \"neg-to-twice\")\n"
             "(rule ((Twice x)) ((Neg (Neg x))))\n"
             "(run 2)\n");
    int num = eg_table_lookup(e, "Num"), twice = eg_table_lookup(e, "Twice");
    int neg = eg_table_lookup(e, "Neg");
    lm_err err = {0};
    eg_value one = eg_value_i64(1), n1, t1, nn;
    ck_assert_int_eq(eg_add_term(e, num, &one, 1, &n1, &err), 0);
    uint32_t origin;
    eg_origin o;
    /* (Num 1) came from the let on line 2 */
    ck_assert_int_eq(eg_row_origin(e, num, &n1, 0, &origin, &err), EG_ERR_ARG); /* arity */
    lm_err_clear(&err);
    ck_assert_int_eq(eg_row_origin(e, num, &one, 1, &origin, &err), 0);
    ck_assert_int_eq(eg_origin_get(e, origin, &o, &err), 0);
    ck_assert_int_eq(o.kind, EG_ORIGIN_COMMAND);
    ck_assert_str_eq(o.name, "let");
    ck_assert_uint_eq(o.line, 2);
    /* (Twice (Num 1)) came from the named rewrite */
    ck_assert_int_eq(eg_add_term(e, twice, &n1, 1, &t1, &err), 0);
    ck_assert_int_eq(eg_row_origin(e, twice, &n1, 1, &origin, &err), 0);
    ck_assert_int_eq(eg_origin_get(e, origin, &o, &err), 0);
    ck_assert_int_eq(o.kind, EG_ORIGIN_RULE);
    ck_assert_str_eq(o.name, "neg-to-twice");
    ck_assert_uint_eq(o.line, 3);
    /* (Neg (Neg (Num 1))) came from the unnamed rule, named by its position */
    eg_value neg1;
    ck_assert_int_eq(eg_add_term(e, neg, &n1, 1, &neg1, &err), 0);
    ck_assert_int_eq(eg_row_origin(e, neg, &neg1, 1, &origin, &err), 0);
    ck_assert_int_eq(eg_origin_get(e, origin, &o, &err), 0);
    ck_assert_int_eq(o.kind, EG_ORIGIN_RULE);
    ck_assert_str_eq(o.name, "test.egg:4:1");
    /* terms made from C have the API's origin */
    eg_value seven = eg_value_i64(7);
    ck_assert_int_eq(eg_add_term(e, num, &seven, 1, &nn, &err), 0);
    ck_assert_int_eq(eg_row_origin(e, num, &seven, 1, &origin, &err), 0);
    ck_assert_uint_eq(origin, 0);
    ck_assert_int_eq(eg_origin_get(e, 0, &o, &err), 0);
    ck_assert_int_eq(o.kind, EG_ORIGIN_API);
    /* and the JSON names them when asked to */
    eg_serialize_opts so = {.origins = true};
    eg_serialized s;
    ck_assert_int_eq(eg_serialize(e, &so, &s, &err), 0);
    char *j = json_of(e, &s);
    ck_assert_ptr_nonnull(strstr(j, "\"op\":\"Twice\",\"children\":[\"n"));
    ck_assert_ptr_nonnull(strstr(j, "\"origin\":\"neg-to-twice\""));
    ck_assert_ptr_nonnull(strstr(j, "\"origin\":\"let test.egg:2:1\""));
    ck_assert_ptr_nonnull(strstr(j, "\"origin\":\"api\""));
    free(j);
    eg_serialized_free(&s);
    ck_assert_int_eq(eg_origin_get(e, 99999, &o, &err), EG_ERR_ARG);
    eg_engine_free(e);
    /* a rebuild keeps a row's origin when it makes the row canonical: W's child (A 2)
     * stops being a root, so the row is re-inserted over (A 1)'s class */
    e = t_engine();
    T_RUN(e, "(datatype M (A i64) (W M)) (A 1) (A 2)"
             "(rule ((= a (A 2))) ((W a)) :name \"wrap\") (run 1) (union (A 1) (A 2))");
    lm_err_clear(&err);
    int w = eg_table_lookup(e, "W"), a = eg_table_lookup(e, "A");
    eg_value a1;
    ck_assert_int_eq(eg_add_term(e, a, &one, 1, &a1, &err), 0);
    ck_assert_int_eq(eg_row_origin(e, w, &a1, 1, &origin, &err), 0);
    ck_assert_int_eq(eg_origin_get(e, origin, &o, &err), 0);
    ck_assert_str_eq(o.name, "wrap");
    eg_engine_free(e);
}
END_TEST

/* A file that includes itself is refused with a located error (it overflowed the stack). */
START_TEST(a_file_that_includes_itself_is_an_error)
{
    char path[] = "/tmp/eg_self_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "; includes itself\n(include \"%s\")\n", path);
    fclose(f);
    eg_engine *e = t_engine();
    lm_err err = {0};
    ck_assert_int_eq(eg_run_file(e, path, &err), EG_ERR_LIMIT);
    ck_assert_msg(strstr(err.msg, ":2:1: commands nested too deeply") != NULL, "%s", err.msg);
    /* the engine is usable afterwards */
    T_RUN(e, "(relation Q (i64)) (Q 1) (check (Q 1))");
    remove(path);
    eg_engine_free(e);
}
END_TEST

/* Records are sticky: the first error stays, later ones do not replace it. */
START_TEST(error_records_keep_the_first_error)
{
    eg_engine *e = t_engine();
    lm_err err = {0};
    ck_assert_int_eq(eg_run_text(e, "(check (= 1 2))", "first.egg", &err), EG_ERR_RUNTIME);
    ck_assert_int_eq(eg_run_text(e, "(frobnicate)", "second.egg", &err), EG_ERR_RUNTIME);
    ck_assert_ptr_nonnull(strstr(err.msg, "first.egg:1:1: check failed"));
    ck_assert_str_eq(err.file, "first.egg");
    ck_assert_uint_eq(err.line, 1);
    ck_assert_uint_eq(err.col, 1);
    lm_err_clear(&err);
    ck_assert_int_eq(eg_run_text(e, "(relation R (i64))\n  (R \"x\")", "third.egg", &err),
                     EG_ERR_TYPE);
    ck_assert_str_eq(err.file, "third.egg");
    ck_assert_uint_eq(err.line, 2);
    ck_assert_uint_eq(err.col, 6);
    eg_engine_free(e);
}
END_TEST

Suite *lang_suite(void)
{
    Suite *s = suite_create("lang");
    TCase *lim = tcase_create("limits");
    tcase_add_test(lim, time_limit_bounds_a_whole_saturate);
    tcase_add_test(lim, time_limit_bounds_a_whole_repeat);
    tcase_add_test(lim, time_limit_bounds_one_api_schedule_call);
    tcase_add_test(lim, iteration_limit_stops_a_schedule_and_says_so);
    tcase_add_test(lim, node_limit_stops_a_schedule_and_says_so);
    tcase_add_test(lim, a_limit_stop_does_not_carry_over_to_the_next_schedule);
    suite_add_tcase(s, lim);
    TCase *lang = tcase_create("egglog");
    tcase_add_test(lang, i64_arithmetic_fails_on_overflow_as_in_egglog);
    tcase_add_test(lang, i64_negation_fails_on_overflow_like_subtraction);
    tcase_add_test(lang, relation_rows_are_equal_only_to_themselves);
    tcase_add_test(lang, bigint_and_bigrat_behave_as_in_egglog);
    tcase_add_test(lang, merge_compares_values_as_they_stand);
    tcase_add_test(lang, f64_primitives_behave_as_in_egglog);
    tcase_add_test(lang, string_primitives_behave_as_in_egglog);
    tcase_add_test(lang, bool_and_generic_primitives_behave_as_in_egglog);
    tcase_add_test(lang, fail_does_not_accept_a_type_error);
    tcase_add_test(lang, merge_with_an_equal_value_does_not_run);
    tcase_add_test(lang, merge_of_values_equal_after_rebuilding_does_not_run);
    suite_add_tcase(s, lang);
    TCase *api = tcase_create("api");
    tcase_add_test(api, column_sorts_and_sort_names_are_readable);
    tcase_add_test(api, globals_are_readable_by_name);
    tcase_add_test(api, readers_see_whether_a_row_is_subsumed);
    tcase_add_test(api, function_values_are_serialized_per_class);
    tcase_add_test(api, input_reads_lines_wider_than_32_fields);
    tcase_add_test(api, rows_remember_the_rule_or_command_that_made_them);
    tcase_add_test(api, error_records_keep_the_first_error);
    tcase_add_test(api, a_file_that_includes_itself_is_an_error);
    suite_add_tcase(s, api);
    return s;
}
