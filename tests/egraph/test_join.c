/* test_join.c: rule queries as joins: many atoms, repeated variables, constants,
 * primitives, cyclic queries, and semi-naive evaluation against naive evaluation. */
#include "test_eg.h"

START_TEST(transitive_closure_over_two_atoms)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation edge (i64 i64)) (relation path (i64 i64))"
             "(rule ((edge x y)) ((path x y)))"
             "(rule ((path x y) (edge y z)) ((path x z)))"
             "(edge 1 2) (edge 2 3) (edge 3 4) (edge 4 5)"
             "(run 10)"
             "(check (path 1 5)) (fail (check (path 5 1)))");
    ck_assert_uint_eq(t_size(e, "path"), 10);
    eg_engine_free(e);
}
END_TEST

START_TEST(repeated_variable_within_an_atom_must_agree)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation R (i64 i64)) (relation Loop (i64))"
             "(rule ((R x x)) ((Loop x)))"
             "(R 1 1) (R 1 2) (R 3 3) (run 1)");
    ck_assert_uint_eq(t_size(e, "Loop"), 2);
    T_RUN(e, "(check (Loop 1)) (check (Loop 3)) (fail (check (Loop 2)))");
    eg_engine_free(e);
}
END_TEST

START_TEST(constants_restrict_the_match)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation R (i64 String)) (relation S (i64))"
             "(rule ((R x \"yes\")) ((S x)))"
             "(R 1 \"yes\") (R 2 \"no\") (R 3 \"yes\") (run 1)");
    ck_assert_uint_eq(t_size(e, "S"), 2);
    eg_engine_free(e);
}
END_TEST

START_TEST(primitives_bind_and_filter)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation N (i64)) (relation Sum (i64 i64 i64))"
             "(rule ((N a) (N b) (< a b) (= s (+ a b))) ((Sum a b s)))"
             "(N 1) (N 2) (N 3) (run 1)"
             "(check (Sum 1 2 3)) (check (Sum 2 3 5)) (fail (check (Sum 2 1 3)))");
    ck_assert_uint_eq(t_size(e, "Sum"), 3);
    eg_engine_free(e);
}
END_TEST

START_TEST(primitive_inside_an_atom_argument)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation P (i64 i64)) (relation Q (i64))"
             "(rule ((P a b) (P (+ a 1) c)) ((Q c)))"
             "(P 1 10) (P 2 20) (P 5 50) (run 1)");
    ck_assert_uint_eq(t_size(e, "Q"), 1);
    T_RUN(e, "(check (Q 20))");
    eg_engine_free(e);
}
END_TEST

START_TEST(cyclic_four_atom_query_counts_every_match)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation R (i64 i64)) (relation S (i64 i64)) (relation T (i64 i64))"
             "(relation U (i64 i64)) (relation out (i64 i64 i64 i64))"
             "(rule ((R x y) (S y z) (T z w) (U w x)) ((out x y z w)))"
             "(R 1 2) (R 1 3) (S 2 4) (S 3 4) (T 4 5) (U 5 1) (U 5 9) (run 1)");
    ck_assert_uint_eq(t_size(e, "out"), 2);
    eg_engine_free(e);
}
END_TEST

START_TEST(nested_terms_join_through_eclasses)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64) (Add M M) (Mul M M))"
             "(rewrite (Add (Mul a b) (Mul a c)) (Mul a (Add b c)))"
             "(let $t (Add (Mul (Num 2) (Num 3)) (Mul (Num 2) (Num 4))))"
             "(run 1)"
             "(check (= $t (Mul (Num 2) (Add (Num 3) (Num 4)))))");
    eg_engine_free(e);
}
END_TEST

static const char *closure_prog = "(datatype M (Num i64) (Add M M) (Mul M M))"
                                  "(rewrite (Add a b) (Add b a))"
                                  "(rewrite (Add a (Add b c)) (Add (Add a b) c))"
                                  "(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))"
                                  "(rewrite (Add (Num a) (Num b)) (Num (+ a b)))"
                                  "(relation path (i64 i64)) (relation edge (i64 i64))"
                                  "(rule ((edge x y)) ((path x y)))"
                                  "(rule ((path x y) (edge y z)) ((path x z)))"
                                  "(edge 1 2) (edge 2 3) (edge 3 1) (edge 3 4)"
                                  "(let $t (Mul (Num 2) (Add (Num 1) (Add (Num 3) (Num 4)))))"
                                  "(run 4)";

START_TEST(semi_naive_equals_naive)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    eg_engine *a = eg_engine_new(&o, NULL);
    o.naive = 1;
    eg_engine *b = eg_engine_new(&o, NULL);
    T_RUN(a, closure_prog);
    T_RUN(b, closure_prog);
    ck_assert_uint_eq(eg_table_count(a), eg_table_count(b));
    for (size_t t = 0; t < eg_table_count(a); t++)
        ck_assert_uint_eq(eg_table_size(a, (int)t), eg_table_size(b, (int)t));
    ck_assert_uint_gt(t_size(a, "Add"), 3);
    eg_engine_free(a);
    eg_engine_free(b);
}
END_TEST

Suite *join_suite(void)
{
    Suite *s = suite_create("join");
    TCase *tc = tcase_create("join");
    tcase_add_test(tc, transitive_closure_over_two_atoms);
    tcase_add_test(tc, repeated_variable_within_an_atom_must_agree);
    tcase_add_test(tc, constants_restrict_the_match);
    tcase_add_test(tc, primitives_bind_and_filter);
    tcase_add_test(tc, primitive_inside_an_atom_argument);
    tcase_add_test(tc, cyclic_four_atom_query_counts_every_match);
    tcase_add_test(tc, nested_terms_join_through_eclasses);
    tcase_add_test(tc, semi_naive_equals_naive);
    suite_add_tcase(s, tc);
    return s;
}
