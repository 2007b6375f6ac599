/* test_cont.c: container sorts (Vec, Set, Map, MultiSet) with egglog's semantics:
 * primitives, equality by contents, canonicalisation when classes merge, extraction
 * costs, and the type errors of their primitives. */
#include "test_eg.h"

START_TEST(vec_primitives_behave_as_in_egglog)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(sort IVec (Vec i64))"
             "(check (= (vec-of 1 2) (vec-push (vec-push (vec-empty) 1) 2)))"
             "(check (= (vec-append (vec-of 1 2) (vec-of 3 4)) (vec-of 1 2 3 4)))"
             "(check (= (vec-pop (vec-of 1 2 3)) (vec-of 1 2)))"
             "(check (!= (vec-of 1 2) (vec-of 2 1)))"
             "(check (vec-not-contains (vec-of 1 2 3) 4)) (check (vec-contains (vec-of 1 2 3) 2))"
             "(fail (check (vec-contains (vec-of 1 2 3) 4)))"
             "(check (= (vec-length (vec-of 1 2 3)) 3)) (check (= (vec-length (vec-empty)) 0))"
             "(check (= (vec-get (vec-of 1 2 3) 1) 2)) (fail (let $x (vec-get (vec-of 1) 1)))"
             "(fail (let $y (vec-get (vec-of 1) -1)))"
             "(check (= (vec-set (vec-of 1 2 3) 1 4) (vec-of 1 4 3)))"
             "(check (= (vec-remove (vec-of 1 2 3) 0) (vec-of 2 3)))"
             "(check (= (vec-range 5) (vec-of 0 1 2 3 4)))"
             /* a container in a table, matched by a rule */
             "(function total (IVec) i64 :no-merge) (set (total (vec-of 1 2)) 3)"
             "(relation long (IVec))"
             "(rule ((= n (total v)) (= (vec-length v) 2)) ((long (vec-push v n))))"
             "(run 1) (check (long (vec-of 1 2 3)))");
    ck_assert_uint_eq(t_size(e, "long"), 1);
    eg_engine_free(e);
}
END_TEST

START_TEST(set_map_and_multiset_primitives_behave_as_in_egglog)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(sort IS (Set i64)) (sort IM (Map i64 String)) (sort IMS (MultiSet i64))"
             /* sets: unordered, no duplicates */
             "(check (= (set-of 3 1 2 1) (set-of 1 2 3)))"
             "(check (= (set-insert (set-empty) 2) (set-of 2)))"
             "(check (= (set-length (set-of 3 1 2 1)) 3))"
             "(check (= (set-get (set-of 30 10 20) 0) 10))"
             "(check (set-contains (set-of 1 2) 2)) (check (set-not-contains (set-of 1 2) 3))"
             "(check (= (set-union (set-of 1 2) (set-of 2 3)) (set-of 1 2 3)))"
             "(check (= (set-diff (set-of 1 2 3) (set-of 2)) (set-of 1 3)))"
             "(check (= (set-intersect (set-of 1 2 3) (set-of 2 3 4)) (set-of 2 3)))"
             "(check (= (set-remove (set-of 1 2) 1) (set-of 2)))"
             /* maps: one value per key, the last insert wins, order does not matter */
             "(check (= (map-insert (map-insert (map-empty) 1 \"a\") 2 \"b\")"
             "          (map-insert (map-insert (map-empty) 2 \"b\") 1 \"a\")))"
             "(check (= (map-get (map-insert (map-insert (map-empty) 1 \"a\") 1 \"z\") 1) \"z\"))"
             "(check (= (map-length (map-insert (map-insert (map-empty) 1 \"a\") 1 \"z\")) 1))"
             "(fail (let $g (map-get (map-empty) 1)))"
             "(check (map-contains (map-insert (map-empty) 1 \"a\") 1))"
             "(check (map-not-contains (map-insert (map-empty) 1 \"a\") 2))"
             "(check (= (map-remove (map-insert (map-empty) 1 \"a\") 1) (map-empty)))"
             /* multisets: unordered, with counts */
             "(check (= (multiset-of 2 1 2) (multiset-of 2 2 1)))"
             "(check (!= (multiset-of 1 2) (multiset-of 1 2 2)))"
             "(check (= (multiset-count (multiset-of 2 1 2) 2) 2))"
             "(check (= (multiset-length (multiset-of 2 1 2)) 3))"
             "(check (= (multiset-remove (multiset-of 2 1 2) 2) (multiset-of 1 2)))"
             "(fail (let $r (multiset-remove (multiset-of 1) 2)))"
             "(check (= (multiset-sum (multiset-of 1) (multiset-of 1 2)) (multiset-of 1 1 2)))"
             "(check (= (multiset-intersection (multiset-of 1 1 2) (multiset-of 1 3)) (multiset-of 1)))"
             "(check (= (multiset-subtract (multiset-of 1 1 2) (multiset-of 1)) (multiset-of 1 2)))"
             "(fail (let $s (multiset-subtract (multiset-of 1) (multiset-of 2))))"
             "(check (= (multiset-single 7 3) (multiset-of 7 7 7)))"
             "(check (= (multiset-pick (multiset-of 5)) 5))"
             "(check (multiset-contains (multiset-of 5) 5))"
             "(check (multiset-not-contains (multiset-of 5) 6))");
    eg_engine_free(e);
}
END_TEST

/* Containers of e-classes are canonicalised when classes merge (egglog's
 * container-rebuild, nested-container-dirty-propagation, container-set-collapse): rows
 * that hold them stay congruent, a set's merged elements collapse into one, and a
 * container inside a container follows. */
START_TEST(containers_follow_merged_classes)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype Math (Num i64)) (sort MathVec (Vec Math)) (sort MathSet (Set Math))"
             "(constructor MyVec (MathVec) Math)"
             "(let $v1 (vec-of (Num 1) (Num 2))) (let $v2 (vec-of (Num 2) (Num 2)))"
             "(MyVec $v1)"
             "(check (!= $v1 $v2))"
             "(union (Num 1) (Num 2))"
             "(check (= $v1 $v2)) (check (= (MyVec $v1) (MyVec $v2)))"
             "(let $n3 (Num 3)) (check (= (set-length (set-of (Num 1) (Num 2) (Num 3))) 2))"
             "(let $s (set-of (Num 5) (Num 6))) (union (Num 5) (Num 6))"
             "(check (= (set-length $s) 1)) (check (= $s (set-of (Num 6))))");
    ck_assert_uint_eq(t_size(e, "MyVec"), 1);
    lm_err err = {0};
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    /* nested: rebuilding the inner vector's element makes the outer one new */
    T_RUN(e, "(sort E) (sort VE (Vec E)) (sort VVE (Vec VE))"
             "(constructor b () E) (constructor w (E) E) (constructor p (VVE) E)"
             "(rewrite (w x) x) (rewrite (p (vec-of (vec-of (b)))) (b))"
             "(let $nested (p (vec-of (vec-of (w (b))))))"
             "(run-schedule (saturate (run)))"
             "(check (= $nested (b)))");
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
}
END_TEST

/* vec-union unions the elements pairwise (also as a merge), and fails on lengths that
 * differ (egglog's vec.egg). */
START_TEST(vec_union_unions_the_elements)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(sort X) (sort VX (Vec X)) (constructor a () X) (constructor b () X)"
             "(let $p (vec-of (a))) (let $q (vec-of (b)))"
             "(push) (vec-union $p $q) (check (= $p $q)) (check (= (a) (b))) (pop)"
             "(fail (vec-union (vec-of (a)) (vec-of (b) (a))))"
             "(function ff () VX :merge (vec-union old new))"
             "(set (ff) $p) (set (ff) $q) (check (= (a) (b)))");
    eg_engine_free(e);
}
END_TEST

/* Extraction: a container costs the sum of its elements' costs (egglog's default). */
START_TEST(extraction_costs_a_container_as_its_elements)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.out = tmpfile();
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(datatype Math (Add i64 i64) (Expensive :cost 100)) (sort MathVec (Vec Math))"
             "(let $myvec (vec-of (Expensive)))"
             "(let $cheapvec (vec-of (Add 1 2)))"
             "(constructor VecContainer (MathVec) Math)"
             "(let $c (VecContainer $cheapvec))"
             "(extract $myvec 0)"
             "(union $c (Expensive))"
             "(extract $myvec)"
             "(extract (vec-of (Add 1 2) (Add 3 4)))"
             "(sort IV (Vec i64)) (extract (vec-of 1 2 3)) (extract (vec-pop (vec-of 1)))");
    char buf[512] = {0};
    rewind(o.out);
    ck_assert_uint_gt(fread(buf, 1, sizeof buf - 1, o.out), 0);
    ck_assert_str_eq(buf, "(extraction-costs 100)\n(extraction-costs 4)\n(extraction-costs 6)\n"
                          "(extraction-costs 3)\n(extraction-costs 0)\n");
    eg_engine_free(e);
    fclose(o.out);
}
END_TEST

START_TEST(container_type_errors_are_located)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(sort IV (Vec i64)) (sort SV (Vec String))");
    lm_err err = t_fail(e, "(let $a (vec-of 1 \"x\"))");
    ck_assert_msg(strstr(err.msg, "bad.egg:1:9:") && strstr(err.msg, "vec-of"), "%s", err.msg);
    err = t_fail(e, "(let $b (vec-empty))");
    ck_assert_msg(strstr(err.msg, "bad.egg:1:9:") && strstr(err.msg, "several fit"), "%s", err.msg);
    err = t_fail(e, "(let $c (set-of 1))");
    ck_assert_msg(strstr(err.msg, "bad.egg:1:9:") && strstr(err.msg, "set-of"), "%s", err.msg);
    err = t_fail(e, "(sort M (Map i64))");
    ck_assert_msg(strstr(err.msg, "bad.egg:1:9:") && strstr(err.msg, "(Map KeySort ValueSort)"),
                  "%s", err.msg);
    /* the wanted sort decides (vec-empty), as does a sibling argument */
    T_RUN(e, "(function f () SV :no-merge) (set (f) (vec-empty))"
             "(check (= (vec-length (vec-push (vec-empty) \"s\")) 1))");
    eg_engine_free(e);
}
END_TEST

/* Function values (UnstableFn, egglog's unstable-fn.egg and typed_primitive_unstable_app):
 * a constructor, a function or a primitive, partially applied; applied by unstable-app
 * (in an action a constructor's term is made, in a query only found); mapped over
 * vectors and multisets; typed by their target's signature. */
START_TEST(function_values_apply_their_targets)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype Math (Num i64) (Mul Math Math)) (sort MathFn (UnstableFn (Math) Math))"
             "(constructor square (Math) Math) (rewrite (square x) (Mul x x))"
             "(let $sq (unstable-fn \"square\"))"
             "(let $s3 (unstable-app $sq (Num 3))) (check (= $s3 (square (Num 3))))"
             "(let $dbl (unstable-fn \"Mul\" (Num 2)))"
             "(let $d5 (unstable-app $dbl (Num 5))) (check (= $d5 (Mul (Num 2) (Num 5))))"
             "(check (!= $sq $dbl)) (check (= $dbl (unstable-fn \"Mul\" (Num 2))))"
             /* primitives as targets, and as a merge */
             "(sort I2I (UnstableFn (i64) i64)) (sort IntFn (UnstableFn (i64 i64) i64))"
             "(check (= (unstable-app (unstable-fn \"+\" 1) 2) 3))"
             "(let plus (unstable-fn \"+\")) (check (= (unstable-app plus 2 3) 5))"
             "(function acc () i64 :merge (unstable-app (unstable-fn \"+\" old) new))"
             "(set (acc) 1) (set (acc) 2) (check (= (acc) 3))"
             /* a query finds, an action makes */
             "(sort NumFn (UnstableFn (i64) Math)) (let mk (unstable-fn \"Num\"))"
             "(fail (check (= (unstable-app mk 42) (Num 42)))) (fail (check (Num 42)))"
             "(relation go ()) (go) (rule ((go)) ((let $m (unstable-app mk 99)))) (run 1)"
             "(check (Num 99))"
             /* maps */
             "(sort IV (Vec i64)) (sort IMS (MultiSet i64))"
             "(check (= (unstable-vec-map (unstable-fn \"+\" 10) (vec-of 1 2)) (vec-of 11 12)))"
             "(check (= (unstable-multiset-map (unstable-fn \"*\" 2) (multiset-of 1 1 3))"
             "          (multiset-of 2 2 6)))");
    /* the class of a partial argument follows merges */
    T_RUN(e, "(let $d3 (unstable-fn \"Mul\" (Num 3))) (union (Num 2) (Num 3))"
             "(check (= $dbl $d3))");
    lm_err err = t_fail(e, "(let $a 1)\n(let $b (unstable-fn \"square\" (Num 1)))");
    ck_assert_msg(strstr(err.msg, "bad.egg:2:9:") && strstr(err.msg, "square"), "%s", err.msg);
    err = t_fail(e, "(let $c (unstable-app (unstable-fn \"square\") 10))");
    ck_assert_msg(strstr(err.msg, "bad.egg:1:9:"), "%s", err.msg);
    eg_engine_free(e);
}
END_TEST

/* unstable-multiset-fill-index sets an index function to every element's count, once per
 * multiset (egglog's unsafe-seminaive-read-prim). */
START_TEST(fill_index_writes_the_counts)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype Math (Num i64)) (sort Maths (MultiSet Math))"
             "(function ms-count (Maths Math) i64 :merge (+ old new))"
             "(sort IdxFn (UnstableFn (Maths Math) i64))"
             "(let xs (multiset-of (Num 1) (Num 1) (Num 2)))"
             "(relation go ()) (go)"
             "(rule ((go)) ((unstable-multiset-fill-index xs (unstable-fn \"ms-count\")))"
             "      :unsafe-seminaive)"
             "(run 3)"
             "(check (= 2 (ms-count xs (Num 1)))) (check (= 1 (ms-count xs (Num 2))))"
             "(unstable-multiset-fill-index xs (unstable-fn \"ms-count\"))"
             "(check (= 2 (ms-count xs (Num 1))))"); /* filled once: no second count */
    ck_assert_uint_eq(t_size(e, "ms-count"), 2);
    eg_engine_free(e);
}
END_TEST

/* A vector that doubles every iteration stops at the memory limit before the allocation
 * that would pass it, like a growing string (issue 21's class). */
START_TEST(a_doubling_vector_stops_at_the_memory_limit)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.mem_limit = 16u << 20;
    o.log = tmpfile();
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(sort IV (Vec i64)) (relation R (IV)) (R (vec-of 1 2))"
             "(rule ((R v)) ((R (vec-append v v)))) (run 40)");
    ck_assert_int_eq(eg_last_stop(e), EG_STOP_MEM_LIMIT);
    ck_assert_uint_le(eg_mem_peak(e), o.mem_limit);
    lm_err err = {0};
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
    fclose(o.log);
}
END_TEST

Suite *cont_suite(void)
{
    Suite *s = suite_create("containers");
    TCase *tc = tcase_create("containers");
    tcase_add_test(tc, vec_primitives_behave_as_in_egglog);
    tcase_add_test(tc, set_map_and_multiset_primitives_behave_as_in_egglog);
    tcase_add_test(tc, containers_follow_merged_classes);
    tcase_add_test(tc, vec_union_unions_the_elements);
    tcase_add_test(tc, extraction_costs_a_container_as_its_elements);
    tcase_add_test(tc, container_type_errors_are_located);
    tcase_add_test(tc, function_values_apply_their_targets);
    tcase_add_test(tc, fill_index_writes_the_counts);
    tcase_add_test(tc, a_doubling_vector_stops_at_the_memory_limit);
    suite_add_tcase(s, tc);
    return s;
}
