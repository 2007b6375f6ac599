/* test_rebuild.c: rebuilding after top-level commands from the index of e-class uses
 * (eg_rebuild.c) does the work of the merged classes only, and gives the same database,
 * row for row, as full rebuilding. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>

#include "test_eg.h"

/* n leaves, n nodes over neighbouring leaves, n alias leaves, then n unions, each its
 * own command (as bench/egraph/gen_unions.py writes it). */
static char *unions_program(int n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    fprintf(f, "(datatype T (Leaf i64) (Node T T))\n(function w (T) i64 :merge (min old new))\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "(Node (Leaf %d) (Leaf %d))\n(set (w (Leaf %d)) %d)\n", i, (i + 1) % n, i,
                n - i);
    for (int i = 0; i < n; i++)
        fprintf(f, "(Leaf %d)\n", n + i);
    for (int i = 0; i < n; i++) {
        if (i % 2 == 0)
            fprintf(f, "(union (Leaf %d) (Leaf %d))\n", i, (i + 1) % n);
        else
            fprintf(f, "(union (Leaf %d) (Leaf %d))\n", n + i, i);
        if (i % 3 == 0) /* a congruence: nodes over merged leaves become one */
            fprintf(f, "(union (Leaf %d) (Leaf %d))\n", i, (i + 2) % n);
    }
    fclose(f);
    return buf;
}

/* Runs text with the given rebuild mode; returns eg_dump's text and the stats. */
static void run_mode(const char *text, eg_rebuild_mode mode, char **dump, char **stats)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.rebuild = mode;
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, text);
    lm_err err = {0};
    ck_assert_int_eq(eg_rebuild(e, &err), 0);
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    size_t n;
    FILE *f = open_memstream(dump, &n);
    eg_dump(e, f);
    fclose(f);
    f = open_memstream(stats, &n);
    eg_print_stats(e, f);
    fclose(f);
    eg_engine_free(e);
}

static unsigned long long passes(const char *stats, const char *kind)
{
    const char *p = strstr(stats, "rebuild passes: ");
    ck_assert_ptr_nonnull(p);
    unsigned long long full, indexed;
    ck_assert_int_eq(sscanf(p, "rebuild passes: %llu full, %llu indexed", &full, &indexed), 2);
    return strcmp(kind, "full") == 0 ? full : indexed;
}

START_TEST(top_level_unions_rebuild_from_the_index_with_the_same_result)
{
    char *text = unions_program(3000);
    char *d_auto, *s_auto, *d_full, *s_full, *d_idx, *s_idx;
    run_mode(text, EG_REBUILD_AUTO, &d_auto, &s_auto);
    run_mode(text, EG_REBUILD_FULL, &d_full, &s_full);
    run_mode(text, EG_REBUILD_INDEXED, &d_idx, &s_idx);
    /* the automatic mode used the index for the unions, the full mode never did */
    ck_assert_uint_ge(passes(s_auto, "indexed"), 3000);
    ck_assert_uint_eq(passes(s_full, "indexed"), 0);
    ck_assert_uint_ge(passes(s_full, "full"), 3000);
    /* and every table holds the same rows, in the same order, with the same ids */
    ck_assert_msg(strcmp(d_auto, d_full) == 0, "automatic and full rebuilding differ");
    ck_assert_msg(strcmp(d_idx, d_full) == 0, "indexed and full rebuilding differ");
    ck_assert_ptr_nonnull(strstr(d_full, "table Node"));
    free(text);
    free(d_auto);
    free(s_auto);
    free(d_full);
    free(s_full);
    free(d_idx);
    free(s_idx);
}
END_TEST

/* Merges made while an indexed pass re-inserts rows (a :no-merge conflict) stop the
 * command with an error; the next rebuild still restores every invariant. */
START_TEST(an_error_inside_an_indexed_pass_leaves_a_rebuildable_database)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    o.rebuild = EG_REBUILD_INDEXED;
    eg_engine *e = eg_engine_new(&o, NULL);
    T_RUN(e, "(datatype T (Leaf i64) (Node T T)) (function c (T) i64 :no-merge)"
             "(Node (Leaf 1) (Leaf 2)) (Node (Leaf 3) (Leaf 4)) (Node (Leaf 5) (Leaf 6))"
             "(set (c (Leaf 1)) 10) (set (c (Leaf 3)) 20)");
    lm_err err = t_fail(e, "(union (Leaf 1) (Leaf 3))");
    ck_assert_int_eq(err.code, EG_ERR_RUNTIME);
    T_RUN(e, "(union (Leaf 2) (Leaf 4)) (union (Leaf 5) (Leaf 6))");
    ck_assert_int_eq(eg_rebuild(e, &err), 0);
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    /* congruence: Node(1,2) and Node(3,4) have merged children, so they are one row */
    ck_assert_uint_eq(t_size(e, "Node"), 2);
    eg_engine_free(e);
}
END_TEST

/* Timestamps are kept by epoch (eg_table.c): compaction, which moves the rows, must keep
 * each row's timestamp, so that semi-naive matching after it sees exactly the new rows. A
 * rule counts its matches in cnt: 100 Node rows match once; the unions collapse them into
 * one old row (99 dead rows: the table is compacted), which must not match again; a Node
 * made afterwards matches once. */
START_TEST(compaction_keeps_each_rows_timestamp)
{
    eg_engine *e = t_engine();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    fprintf(f, "(datatype T (Leaf i64) (Node T T))\n(function cnt () i64 :merge (+ old new))\n"
               "(rule ((Node a b)) ((set (cnt) 1)))\n");
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 10; j++)
            fprintf(f, "(Node (Leaf %d) (Leaf %d))\n", i, j);
    fprintf(f, "(run 1)\n(check (= (cnt) 100))\n");
    for (int k = 1; k < 10; k++)
        fprintf(f, "(union (Leaf 0) (Leaf %d))\n", k);
    fclose(f);
    T_RUN(e, buf);
    free(buf);
    lm_err err = {0};
    ck_assert_int_eq(eg_rebuild(e, &err), 0);
    ck_assert_uint_eq(t_size(e, "Node"), 1);
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    /* the one Node row left is old: the next run matches nothing */
    T_RUN(e, "(run 1) (check (= (cnt) 100))");
    /* a new row after the compaction is new to the rule: one match */
    T_RUN(e, "(Node (Leaf 50) (Leaf 51)) (run 1) (check (= (cnt) 101))");
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    /* push copies the epochs, pop restores them */
    T_RUN(e, "(push) (Node (Leaf 60) (Leaf 61)) (run 1) (check (= (cnt) 102)) (pop)"
             "(Node (Leaf 70) (Leaf 71)) (run 1) (check (= (cnt) 102))");
    ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s", err.msg);
    eg_engine_free(e);
}
END_TEST

Suite *rebuild_suite(void)
{
    Suite *s = suite_create("rebuild");
    TCase *tc = tcase_create("rebuild");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, top_level_unions_rebuild_from_the_index_with_the_same_result);
    tcase_add_test(tc, an_error_inside_an_indexed_pass_leaves_a_rebuildable_database);
    tcase_add_test(tc, compaction_keeps_each_rows_timestamp);
    suite_add_tcase(s, tc);
    return s;
}
