/* test_core.c: union-find, hash-consing, rebuilding, merges, subsume, delete, extraction,
 * push/pop. Invariants are checked (eg_check_invariants) after every rebuild. */
#include <stdlib.h>

#include "test_eg.h"

static void invariants(eg_engine *e)
{
    lm_err err = {0};
    ck_assert_int_eq(eg_rebuild(e, &err), 0);
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
}

START_TEST(hash_consing_returns_the_same_class)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64) (Add M M))");
    int num = eg_table_lookup(e, "Num"), add = eg_table_lookup(e, "Add");
    eg_value one = eg_value_i64(1), a, b, s1, s2;
    ck_assert_int_eq(eg_add_term(e, num, &one, 1, &a, NULL), 0);
    ck_assert_int_eq(eg_add_term(e, num, &one, 1, &b, NULL), 0);
    ck_assert_uint_eq(a, b);
    eg_value args[2] = {a, b};
    ck_assert_int_eq(eg_add_term(e, add, args, 2, &s1, NULL), 0);
    ck_assert_int_eq(eg_add_term(e, add, args, 2, &s2, NULL), 0);
    ck_assert_uint_eq(s1, s2);
    ck_assert_uint_eq(t_size(e, "Num"), 1);
    ck_assert_uint_eq(t_size(e, "Add"), 1);
    invariants(e);
    eg_engine_free(e);
}
END_TEST

START_TEST(union_of_equal_roots_is_noop_and_root_is_smallest_id)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64))");
    int num = eg_table_lookup(e, "Num");
    eg_value v[3];
    for (int i = 0; i < 3; i++) {
        eg_value k = eg_value_i64(i);
        eg_add_term(e, num, &k, 1, &v[i], NULL);
    }
    ck_assert_int_eq(eg_union(e, v[2], v[1], NULL), 0);
    ck_assert_uint_eq(eg_find(e, v[2]), v[1] < v[2] ? v[1] : v[2]);
    ck_assert_int_eq(eg_union(e, v[1], v[2], NULL), 0); /* already one class */
    ck_assert_uint_eq(eg_find(e, v[1]), eg_find(e, v[2]));
    ck_assert_uint_ne(eg_find(e, v[0]), eg_find(e, v[1]));
    ck_assert_int_eq(eg_union(e, v[0], 999999, NULL), EG_ERR_ARG);
    eg_engine_free(e);
}
END_TEST

START_TEST(rebuild_restores_congruence_after_unions)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Var String) (F M) (G M))"
             "(let $a (Var \"a\")) (let $b (Var \"b\"))"
             "(let $ga (G (F $a))) (let $gb (G (F $b)))"
             "(fail (check (= $ga $gb)))"
             "(union $a $b)"
             "(check (= (F $a) (F $b)))"
             "(check (= $ga $gb))");
    ck_assert_uint_eq(t_size(e, "F"), 1);
    ck_assert_uint_eq(t_size(e, "G"), 1);
    ck_assert_uint_eq(t_size(e, "Var"), 2);
    invariants(e);
    eg_engine_free(e);
}
END_TEST

START_TEST(merge_min_keeps_the_smallest_value)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(function lo (i64) i64 :merge (min old new))"
             "(set (lo 1) 10) (set (lo 1) 3) (set (lo 1) 7)"
             "(check (= (lo 1) 3))");
    ck_assert_uint_eq(t_size(e, "lo"), 1);
    eg_engine_free(e);
}
END_TEST

/* A primitive-valued function's :merge runs on every write to a key that has a value,
 * equal values too (egglog 13.2: the program below prints 2, 3, 5): two top-level sets,
 * a rule firing once, a rule firing twice in one iteration. */
START_TEST(primitive_merge_runs_on_equal_values)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(function cnt () i64 :merge (+ old new))"
             "(set (cnt) 1) (set (cnt) 1) (check (= (cnt) 2))"
             "(relation go (i64)) (rule ((go x)) ((set (cnt) 1)))"
             "(go 1) (run 1) (check (= (cnt) 3))"
             "(go 2) (go 3) (run 1) (check (= (cnt) 5))");
    invariants(e);
    eg_engine_free(e);
}
END_TEST

START_TEST(merge_runs_when_rebuild_merges_keys)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype N (Node i64))"
             "(function dist (N N) i64 :merge (min old new))"
             "(set (dist (Node 2) (Node 3)) 1) (set (dist (Node 0) (Node 1)) 2)"
             "(union (Node 0) (Node 2)) (union (Node 1) (Node 3))"
             "(check (= (dist (Node 0) (Node 1)) 1))");
    ck_assert_uint_eq(t_size(e, "dist"), 1);
    invariants(e);
    eg_engine_free(e);
}
END_TEST

START_TEST(no_merge_conflict_is_a_runtime_error)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(function f (i64) i64 :no-merge) (set (f 1) 1)");
    lm_err err = t_fail(e, "(set (f 1) 2)");
    ck_assert_int_eq(err.code, EG_ERR_RUNTIME);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.egg:1:1: function f has no :merge"));
    /* the engine stays usable and keeps the first value */
    T_RUN(e, "(check (= (f 1) 1))");
    eg_engine_free(e);
}
END_TEST

START_TEST(subsumed_rows_are_not_matched_but_are_checked)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64) (Mul M M) (Add M M))"
             "(rewrite (Mul (Num 3) x) (Add x x) :subsume)"
             "(let $x (Mul (Num 3) (Num 2)))"
             "(run 1)"
             "(check (Mul (Num 3) (Num 2)))"
             "(rule ((Mul a b)) ((Num 77)))"
             "(run 1)"
             "(fail (check (Num 77)))");
    ck_assert_uint_eq(t_size(e, "Mul"), 1);
    ck_assert_uint_eq(t_size(e, "Add"), 1);
    eg_engine_free(e);
}
END_TEST

START_TEST(delete_removes_the_row)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(function foo (i64) i64 :no-merge) (set (foo 1) 7) (set (foo 2) 8)"
             "(delete (foo 1))"
             "(fail (check (foo 1)))"
             "(check (= (foo 2) 8))");
    ck_assert_uint_eq(t_size(e, "foo"), 1);
    invariants(e);
    eg_engine_free(e);
}
END_TEST

START_TEST(extraction_counts_node_costs_and_literals)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype E (Num i64) (Add E E :cost 5) (Big E :cost 100))"
             "(let $t (Add (Num 1) (Num 2)))"
             "(union $t (Big (Num 3)))");
    int sort = eg_sort_lookup(e, "E");
    int add = eg_table_lookup(e, "Add");
    eg_value row[3];
    ck_assert_int_eq(eg_table_row(e, add, 0, row, NULL, NULL), 0);
    char *term = NULL;
    uint64_t cost = 0;
    ck_assert_int_eq(eg_extract(e, sort, row[2], &term, &cost, NULL), 0);
    /* Add(5) + Num(1 + literal 1) * 2 = 9, cheaper than Big(100) + 2 */
    ck_assert_uint_eq(cost, 9);
    ck_assert_str_eq(term, "(Add (Num 1) (Num 2))");
    eg_string_free(term);
    eg_engine_free(e);
}
END_TEST

START_TEST(push_pop_restores_tables_and_declarations)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(function foo () i64 :merge (max old new)) (set (foo) 1)"
             "(push) (set (foo) 2) (relation tmp (i64)) (tmp 1) (check (= (foo) 2)) (pop)"
             "(check (= (foo) 1))");
    ck_assert_int_eq(eg_table_lookup(e, "tmp"), -1);
    lm_err err = t_fail(e, "(pop)");
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.egg:1:1:"));
    eg_engine_free(e);
}
END_TEST

START_TEST(delete_and_insert_in_one_iteration_keeps_the_row)
{
    /* egglog applies an iteration's deletes before its inserts, whatever the rule order */
    eg_engine *e = t_engine();
    T_RUN(e, "(relation R (i64)) (relation T (i64)) (T 1)"
             "(rule ((T x)) ((delete (R x))))"
             "(rule ((T x)) ((R x)))"
             "(run 1)");
    ck_assert_uint_eq(t_size(e, "R"), 1);
    eg_engine_free(e);
}
END_TEST

START_TEST(function_without_merge_behaviour_is_refused)
{
    eg_engine *e = t_engine();
    lm_err err = t_fail(e, "(function f (i64) i64)");
    ck_assert_int_eq(err.code, EG_ERR_TYPE);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.egg:1:1: function f must say how values merge"));
    eg_engine_free(e);
}
END_TEST

START_TEST(merge_expression_may_build_terms)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype T (L i64) (Both T T))"
             "(function f (i64) T :merge (Both old new))"
             "(set (f 0) (L 1)) (set (f 0) (L 2))"
             "(check (= (f 0) (Both (L 1) (L 2))))");
    ck_assert_uint_eq(t_size(e, "Both"), 1);
    ck_assert_uint_eq(t_size(e, "f"), 1);
    invariants(e);
    eg_engine_free(e);
}
END_TEST

START_TEST(pairs_holding_eclasses_are_rebuilt)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64)) (sort MP (Pair M i64)) (relation R (MP))"
             "(R (pair (Num 1) 42)) (R (pair (Num 2) 42))");
    ck_assert_uint_eq(t_size(e, "R"), 2);
    T_RUN(e, "(union (Num 1) (Num 2)) (check (R (pair (Num 2) 42)))"
             "(let $p (pair (Num 1) 7)) (check (= (pair-first $p) (Num 2)))");
    ck_assert_uint_eq(t_size(e, "R"), 1);
    invariants(e);
    eg_engine_free(e);
}
END_TEST

START_TEST(many_globals_compile_in_linear_time)
{
    /* names are hashed: 20000 globals each naming two earlier ones must not be quadratic */
    size_t cap = 2000000, n = 0;
    char *prog = malloc(cap);
    n += (size_t)snprintf(prog + n, cap - n, "(datatype E (Leaf i64) (Node E E))\n");
    n += (size_t)snprintf(prog + n, cap - n, "(let $g0 (Leaf 0)) (let $g1 (Leaf 1))\n");
    for (int i = 2; i < 20000; i++)
        n += (size_t)snprintf(prog + n, cap - n, "(let $g%d (Node $g%d $g%d))\n", i, i / 2, i - 1);
    eg_engine *e = t_engine();
    T_RUN(e, prog);
    ck_assert_uint_eq(t_size(e, "Node"), 19998);
    /* a global removed by pop is forgotten; a new one of the same name can be defined */
    T_RUN(e, "(push) (let $late (Leaf 7)) (pop) (let $late (Leaf 8)) (check (= $late (Leaf 8)))");
    free(prog);
    eg_engine_free(e);
}
END_TEST

Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, hash_consing_returns_the_same_class);
    tcase_add_test(tc, union_of_equal_roots_is_noop_and_root_is_smallest_id);
    tcase_add_test(tc, rebuild_restores_congruence_after_unions);
    tcase_add_test(tc, merge_min_keeps_the_smallest_value);
    tcase_add_test(tc, merge_runs_when_rebuild_merges_keys);
    tcase_add_test(tc, primitive_merge_runs_on_equal_values);
    tcase_add_test(tc, no_merge_conflict_is_a_runtime_error);
    tcase_add_test(tc, subsumed_rows_are_not_matched_but_are_checked);
    tcase_add_test(tc, delete_removes_the_row);
    tcase_add_test(tc, extraction_counts_node_costs_and_literals);
    tcase_add_test(tc, push_pop_restores_tables_and_declarations);
    tcase_add_test(tc, delete_and_insert_in_one_iteration_keeps_the_row);
    tcase_add_test(tc, function_without_merge_behaviour_is_refused);
    tcase_add_test(tc, merge_expression_may_build_terms);
    tcase_add_test(tc, pairs_holding_eclasses_are_rebuilt);
    tcase_add_test(tc, many_globals_compile_in_linear_time);
    suite_add_tcase(s, tc);
    return s;
}
