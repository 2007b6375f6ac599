/* test_tool.c - `luminal_search --graph G --emit egraph` prints the schema and the
 * program text of G's encoding, which an engine runs to the same e-graph as the C path. */
#include "te.h"
#include "lm_check.h"

/* Runs the command, returns its stdout (malloc'd) and exit status. */
static char *run(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    *status = pclose(p);
    return buf;
}

START_TEST(emit_egraph_prints_the_encoding_of_the_graph)
{
    char *paths[TE_MAX_EXAMPLES];
    int n = te_examples(paths);
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n; i++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "'%s' --graph '%s' --emit egraph", LS_BIN, paths[i]);
        int status;
        char *out = run(cmd, &status);
        ck_assert_msg(status == 0, "%s exited with %d", cmd, status);
        hl_graph *g = te_load(paths[i]);
        hl_error err;
        hl_error_clear(&err);
        char *want = hl_graph_encode_text(g, true, &err);
        ck_assert_ptr_nonnull(want);
        ck_assert_msg(strcmp(out, want) == 0, "%s: --emit egraph differs from the encoding",
                      paths[i]);
        /* the printed program builds what the C path builds */
        eg_engine *a = eg_engine_new(NULL, NULL);
        lm_err ee = {0};
        ck_assert_msg(eg_run_text(a, out, "emitted", &ee) == 0, "%s", ee.msg);
        eg_engine *b = te_encode_c(g, NULL);
        char *ja = te_serialized(a), *jb = te_serialized(b);
        ck_assert_str_eq(ja, jb);
        free(ja);
        free(jb);
        eg_engine_free(a);
        eg_engine_free(b);
        free(want);
        free(out);
        hl_graph_free(g);
        free(paths[i]);
    }
}
END_TEST

START_TEST(emit_egraph_is_listed_in_the_help)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' --help", LS_BIN);
    int status;
    char *out = run(cmd, &status);
    ck_assert_ptr_nonnull(strstr(out, "--emit egraph"));
    free(out);
}
END_TEST

static Suite *hlir_encode_tool_suite(void)
{
    Suite *s = suite_create("hlir_encode_tool");
    TCase *tc = tcase_create("tool");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, emit_egraph_prints_the_encoding_of_the_graph);
    tcase_add_test(tc, emit_egraph_is_listed_in_the_help);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_encode_tool_suite, NULL};
