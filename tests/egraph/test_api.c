/* test_api.c: the C API: two engines in one process, determinism of the serialized
 * e-graph, the plain serialized structure, reading rows. */
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_eg.h"

static const char *prog = "(datatype M (Num i64) (Var String) (Add M M) (Mul M M))"
                          "(rewrite (Add a b) (Add b a))"
                          "(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))"
                          "(rewrite (Add (Num a) (Num b)) (Num (+ a b)))"
                          "(let $e (Mul (Var \"x\") (Add (Num 1) (Num 2))))"
                          "(run 5)";

static char *serialize_json(eg_engine *e)
{
    int sort = eg_sort_lookup(e, "M");
    int mul = eg_table_lookup(e, "Mul");
    eg_value row[3];
    ck_assert_int_eq(eg_table_row(e, mul, 0, row, NULL, NULL), 0);
    eg_serialized s;
    eg_value root = row[2];
    eg_serialize_opts so = {.roots = &root, .root_sorts = &sort, .nroots = 1};
    ck_assert_int_eq(eg_serialize(e, &so, &s, NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(eg_serialized_write_json(e, &s, f, NULL), 0);
    fclose(f);
    eg_serialized_free(&s);
    return buf;
}

START_TEST(same_program_gives_same_serialized_bytes)
{
    eg_engine *a = t_engine(), *b = t_engine();
    T_RUN(a, prog);
    T_RUN(b, prog);
    char *ja = serialize_json(a), *jb = serialize_json(b);
    ck_assert_str_eq(ja, jb);
    ck_assert_ptr_nonnull(strstr(ja, "\"root_eclasses\":[\"c"));
    free(ja);
    free(jb);
    eg_engine_free(a);
    eg_engine_free(b);
}
END_TEST

/* The serialized e-graph's strings go through the engine's one JSON escaper: a String
 * value with a quote, a backslash and a tab (printed as egglog prints it, then escaped as
 * JSON) comes out escaped, and the JSON holds no raw control byte. */
START_TEST(serialized_strings_are_escaped)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Var String))"
             "(Var \"a\\\"b\\\\c\\td\")");
    eg_serialized s;
    ck_assert_int_eq(eg_serialize(e, NULL, &s, NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(eg_serialized_write_json(e, &s, f, NULL), 0);
    fclose(f);
    eg_serialized_free(&s);
    const char *want = "\"\\\"a\\\\\\\"b\\\\\\\\c\\u0009d\\\"\"";
    ck_assert_msg(strstr(buf, want) != NULL, "no %s in %s", want, buf);
    for (size_t i = 0; i < len; i++)
        ck_assert_msg((unsigned char)buf[i] >= 0x20 || buf[i] == '\n', "raw control byte at %zu", i);
    free(buf);
    eg_engine_free(e);
}
END_TEST

START_TEST(two_engines_do_not_interfere)
{
    eg_engine *a = t_engine(), *b = t_engine();
    T_RUN(a, "(relation R (i64)) (R 1) (R 2)");
    T_RUN(b, "(relation R (i64)) (R 7)");
    T_RUN(a, "(R 3)");
    ck_assert_uint_eq(t_size(a, "R"), 3);
    ck_assert_uint_eq(t_size(b, "R"), 1);
    eg_value s1, s2;
    ck_assert_int_eq(eg_value_string(a, "hello", &s1, NULL), 0);
    ck_assert_int_eq(eg_value_string(b, "other", &s2, NULL), 0);
    ck_assert_str_eq(eg_value_as_string(a, s1), "hello");
    ck_assert_str_eq(eg_value_as_string(b, s2), "other");
    eg_engine_free(a);
    eg_engine_free(b);
}
END_TEST

START_TEST(serialized_structure_has_dense_classes_and_children)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64) (Add M M)) (let $t (Add (Num 1) (Num 1)))");
    eg_serialized s;
    ck_assert_int_eq(eg_serialize(e, NULL, &s, NULL), 0);
    /* classes: Num 1, Add; literal class: 1 */
    ck_assert_uint_eq(s.n_classes, 3);
    ck_assert_uint_eq(s.n_nodes, 3);
    const eg_snode *add = NULL;
    for (uint32_t i = 0; i < s.n_nodes; i++)
        if (s.nodes[i].op && strcmp(s.nodes[i].op, "Add") == 0) add = &s.nodes[i];
    ck_assert_ptr_nonnull(add);
    ck_assert_uint_eq(add->nchildren, 2);
    uint32_t c0 = s.children[add->child_start], c1 = s.children[add->child_start + 1];
    ck_assert_uint_eq(c0, c1);
    ck_assert_uint_lt(c0, s.n_classes);
    ck_assert_uint_ne(c0, add->eclass);
    eg_serialized_free(&s);
    eg_engine_free(e);
}
END_TEST

START_TEST(terms_added_from_c_are_matched_by_rules)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64) (Neg M)) (rewrite (Neg (Neg x)) x)");
    int num = eg_table_lookup(e, "Num"), neg = eg_table_lookup(e, "Neg");
    eg_value k = eg_value_i64(5), n5, m1, m2;
    ck_assert_int_eq(eg_add_term(e, num, &k, 1, &n5, NULL), 0);
    ck_assert_int_eq(eg_add_term(e, neg, &n5, 1, &m1, NULL), 0);
    ck_assert_int_eq(eg_add_term(e, neg, &m1, 1, &m2, NULL), 0);
    eg_stop_reason why;
    lm_err err = {0};
    ck_assert_msg(eg_run_schedule(e, "(saturate (run))", &why, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(why, EG_STOP_SATURATED);
    ck_assert_uint_eq(eg_find(e, m2), eg_find(e, n5));
    ck_assert_int_eq(eg_add_term(e, neg, &k, 2, &m1, &err), EG_ERR_ARG);
    eg_engine_free(e);
}
END_TEST

START_TEST(rows_are_readable_in_order)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(function f (i64) i64 :no-merge) (set (f 1) 10) (set (f 2) 20)");
    int f = eg_table_lookup(e, "f");
    ck_assert_uint_eq(eg_table_arity(e, f), 1);
    ck_assert_int_eq(eg_table_has_output(e, f), 1);
    eg_value row[2];
    ck_assert_int_eq(eg_table_row(e, f, 1, row, NULL, NULL), 0);
    ck_assert_int_eq(eg_value_as_i64(row[0]), 2);
    ck_assert_int_eq(eg_value_as_i64(row[1]), 20);
    ck_assert_int_eq(eg_table_row(e, f, 2, row, NULL, NULL), EG_ERR_ARG);
    /* after a delete the table has a dead row: both readers skip it */
    T_RUN(e, "(set (f 3) 30) (delete (f 1))");
    ck_assert_int_eq(eg_table_row(e, f, 0, row, NULL, NULL), 0);
    ck_assert_int_eq(eg_value_as_i64(row[0]), 2);
    size_t cursor = 0;
    int64_t keys = 0, n = 0;
    while (eg_table_next_row(e, f, &cursor, row, NULL, NULL)) {
        keys = keys * 10 + eg_value_as_i64(row[0]);
        n++;
    }
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(keys, 23);
    eg_engine_free(e);
}
END_TEST

/* Runs every conformance program of one folder (not the two large ones) and checks the
 * database invariants afterwards: canonical rows, keys found by the memo, live counts. */
static int run_folder_checking_invariants(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **names = NULL;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".egg") != 0) continue;
        if (strstr(de->d_name, "math-microbenchmark") || strstr(de->d_name, "llama")) continue;
        names = realloc(names, (size_t)(n + 1) * sizeof *names);
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        eg_engine *e = t_engine();
        lm_err err = {0};
        int rc = eg_run_file(e, path, &err);
        ck_assert_msg(rc == 0, "%s: %s", names[i], err.msg);
        ck_assert_int_eq(eg_rebuild(e, &err), 0);
        ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s: %s", names[i], err.msg);
        eg_engine_free(e);
        free(names[i]);
    }
    free(names);
    return n;
}

START_TEST(conformance_programs_keep_invariants)
{
    char root[4096];
    snprintf(root, sizeof root, "%s/conformance/egglog", lm_check_shared_dir());
    /* include and input paths are relative to this folder */
    ck_assert_msg(chdir(root) == 0, "cannot enter %s", root);
    int a = run_folder_checking_invariants("tests");
    int b = run_folder_checking_invariants("tests/web-demo");
    ck_assert_int_ge(a + b, 40);
}
END_TEST

START_TEST(dump_lists_tables_rows_and_classes)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64) (Add M M)) (let $t (Add (Num 1) (Num 2)))"
             "(union (Num 1) (Num 2))");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    eg_dump(e, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "table Add (constructor, 2 inputs + output): 1 live"));
    ck_assert_ptr_nonnull(strstr(buf, "e-classes: 2 (of 3 ids)"));
    free(buf);
    eg_engine_free(e);
}
END_TEST

START_TEST(api_misuse_is_an_argument_error_not_a_crash)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Num i64)) (function f (i64) M :merge old) (relation R (i64))");
    int f = eg_table_lookup(e, "f"), num = eg_table_lookup(e, "Num");
    eg_value k = eg_value_i64(1), out;
    lm_err err = {0};
    ck_assert_int_eq(eg_set(e, f, &k, 1, 123456, &err), EG_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "eg_set"));
    ck_assert_int_eq(eg_add_term(e, 99, &k, 1, &out, &err), EG_ERR_ARG);
    ck_assert_int_eq(eg_add_term(e, f, &k, 1, &out, &err), EG_ERR_ARG);
    ck_assert_int_eq(eg_add_term(e, num, &k, 1, &out, &err), 0);
    ck_assert_int_eq(eg_extract(e, 99, out, NULL, NULL, &err), EG_ERR_ARG);
    eg_value roots[2] = {out, 777777};
    int sorts[2] = {eg_sort_lookup(e, "M"), eg_sort_lookup(e, "M")};
    eg_serialized s;
    eg_serialize_opts so = {.roots = roots, .root_sorts = sorts, .nroots = 2};
    ck_assert_int_eq(eg_serialize(e, &so, &s, &err), 0);
    ck_assert_uint_eq(s.n_roots, 1);
    eg_serialized_free(&s);
    ck_assert_int_eq(eg_table_lookup(e, "nope"), -1);
    ck_assert_ptr_null(eg_table_name(e, 42));
    eg_engine_free(e);
}
END_TEST

Suite *api_suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("api");
    tcase_add_test(tc, same_program_gives_same_serialized_bytes);
    tcase_add_test(tc, two_engines_do_not_interfere);
    tcase_add_test(tc, serialized_strings_are_escaped);
    tcase_add_test(tc, serialized_structure_has_dense_classes_and_children);
    tcase_add_test(tc, terms_added_from_c_are_matched_by_rules);
    tcase_add_test(tc, rows_are_readable_in_order);
    tcase_add_test(tc, dump_lists_tables_rows_and_classes);
    tcase_add_test(tc, api_misuse_is_an_argument_error_not_a_crash);
    suite_add_tcase(s, tc);
    return s;
}

/* The tests that read egglog's programs in ../shared: the program that runs them
 * (egraph_shared) is skipped, not passed, where they are missing. */
Suite *api_shared_suite(void)
{
    char root[4096];
    snprintf(root, sizeof root, "%s/conformance/egglog", lm_check_shared_dir());
    lm_check_require_dir(root, "egglog's conformance programs");
    Suite *s = suite_create("api_shared");
    TCase *slow = tcase_create("conformance-invariants");
    tcase_set_timeout(slow, 600);
    tcase_add_test(slow, conformance_programs_keep_invariants);
    suite_add_tcase(s, slow);
    return s;
}
