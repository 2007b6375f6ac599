/* test_errors.c: bad input gets a clear error with its location, never a crash. */
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_eg.h"

static void expect(const char *prog, int code, const char *where, const char *what)
{
    eg_engine *e = t_engine();
    lm_err err = t_fail(e, prog);
    ck_assert_int_eq(err.code, code);
    ck_assert_msg(strstr(err.msg, where) != NULL, "'%s' lacks location '%s'", err.msg, where);
    ck_assert_msg(strstr(err.msg, what) != NULL, "'%s' lacks '%s'", err.msg, what);
    eg_engine_free(e);
}

START_TEST(unclosed_paren_is_a_parse_error)
{
    expect("(datatype M\n  (Num i64)", EG_ERR_PARSE, "bad.egg:1:1:", "unclosed");
}
END_TEST

START_TEST(stray_close_paren_is_a_parse_error)
{
    expect("(relation R (i64)))", EG_ERR_PARSE, "bad.egg:1:19:", "unexpected ')'");
}
END_TEST

START_TEST(unbound_variable_in_action)
{
    expect("(datatype M (Add M M))\n(rule ((= e (Add x y))) ((Add x i)))", EG_ERR_TYPE,
           "bad.egg:2:33:", "unbound variable 'i'");
}
END_TEST

START_TEST(wrong_arity_names_the_function)
{
    expect("(relation R (i64 i64))\n(R 1)", EG_ERR_TYPE, "bad.egg:2:1:", "R takes 2, got 1");
}
END_TEST

START_TEST(set_on_a_constructor_is_refused)
{
    expect("(datatype M (Num i64))\n(set (Num 1) (Num 2))", EG_ERR_TYPE,
           "bad.egg:2:1:", "cannot set Num");
}
END_TEST

START_TEST(division_by_zero_in_an_action)
{
    expect("(relation R (i64))\n(R (/ 1 0))", EG_ERR_RUNTIME, "bad.egg:2:4:", "division by zero");
}
END_TEST

START_TEST(merge_given_twice_is_refused)
{
    expect("(function f (i64) i64 :merge 64 :merge (max old new))", EG_ERR_TYPE,
           "bad.egg:1:33:", "more than once");
}
END_TEST

/* Errors thrown from deep inside a phase (a sort conflict found while finishing a query, a
 * lookup that fails inside a rule's join) unwind to the command boundary: the engine
 * stays usable and, under LeakSanitizer, nothing the phase allocated is lost. */
START_TEST(sort_conflict_in_check_query_is_refused_cleanly)
{
    expect("(check (= x (neg 1.5)) (= x (+ 1 2)))", EG_ERR_TYPE, "bad.egg:1:", "type mismatch");
}
END_TEST

START_TEST(failing_lookup_inside_a_rule_is_refused_cleanly)
{
    eg_engine *e = t_engine();
    lm_err err = t_fail(e, "(function f (i64) i64 :merge (max old new))\n"
                             "(function r (i64) i64 :merge (max old new))\n"
                             "(relation trig (i64))\n"
                             "(rule ((trig x)) ((set (r x) (f x))))\n"
                             "(trig 1)\n"
                             "(run 1)");
    ck_assert_int_eq(err.code, EG_ERR_RUNTIME);
    ck_assert_msg(strstr(err.msg, "bad.egg:4:") && strstr(err.msg, "(f 1)"), "%s", err.msg);
    /* the engine is usable after the failed run */
    ck_assert_int_eq(eg_run_text(e, "(set (f 1) 5)\n(run 1)\n(check (= (r 1) 5))", "ok.egg", &err),
                     0);
    eg_engine_free(e);
}
END_TEST

START_TEST(empty_container_sort_is_refused)
{
    expect("(sort S ())", EG_ERR_TYPE, "bad.egg:1:9:", "container sort");
}
END_TEST

START_TEST(missing_include_file)
{
    expect("(include \"/nonexistent/x.egg\")", EG_ERR_IO, "bad.egg:1:10:", "cannot read");
}
END_TEST

START_TEST(missing_input_file)
{
    expect("(relation R (i64))\n(input R \"/nonexistent/r.csv\")", EG_ERR_IO,
           "bad.egg:2:10:", "cannot read input file");
}
END_TEST

START_TEST(ungrounded_variable)
{
    expect("(relation R (i64))\n(rule ((= x y)) ((R x)))", EG_ERR_TYPE, "bad.egg:2:", "ungrounded");
}
END_TEST

START_TEST(unknown_function)
{
    expect("(frobnicate 1)", EG_ERR_TYPE, "bad.egg:1:1:", "unknown function");
}
END_TEST

START_TEST(input_reads_tab_separated_rows)
{
    char path[] = "/tmp/eg_input_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("1\tone\n2\t\"two\"\n\n3\tthree\n", f);
    fclose(f);
    eg_engine *e = t_engine();
    char prog[512];
    snprintf(prog, sizeof prog,
             "(function name (i64) String :no-merge) (input name \"%s\")"
             "(check (= (name 2) \"two\")) (check (= (name 3) \"three\"))",
             path);
    T_RUN(e, prog);
    ck_assert_uint_eq(t_size(e, "name"), 3);
    snprintf(prog, sizeof prog, "(relation R (i64 i64))\n(input R \"%s\")", path);
    lm_err err = t_fail(e, prog);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot read 'one' as i64"));
    remove(path);
    eg_engine_free(e);
}
END_TEST

START_TEST(misspelled_rule_option_is_refused)
{
    expect("(relation R (i64))\n(rule ((R x)) ((R x)) :ruelset foo)", EG_ERR_TYPE,
           "bad.egg:2:23:", "unknown option :ruelset");
}
END_TEST

/* egglog's one namespace (issue 26): a rule's variable may not take the name of a sort,
 * a table, a ruleset or a global ($a and a are one global's names); each refusal names
 * the variable where it is bound. */
START_TEST(rule_variables_may_not_shadow_declared_names)
{
    expect("(datatype M (Wrap i64))\n(rule ((Wrap 1))\n      ((let Wrap 2)))", EG_ERR_TYPE,
           "bad.egg:3:13:", "variable Wrap shadows the constructor Wrap");
    expect("(datatype M (Wrap i64))\n(rule ((= M (Wrap 1))) ())", EG_ERR_TYPE, "bad.egg:2:11:",
           "variable M shadows the sort M");
    expect("(relation R (i64))\n(ruleset rs)\n(rule ((R rs)) ())", EG_ERR_TYPE, "bad.egg:3:11:",
           "variable rs shadows the ruleset rs");
    expect("(datatype M (Wrap i64))\n(let $a (Wrap 1))\n(rule ((Wrap 1))\n ((let a (Wrap 1))))",
           EG_ERR_TYPE, "bad.egg:4:8:", "variable a conflicts with the global $a");
    expect("(datatype M (Wrap i64))\n(let $a (Wrap 1))\n(rule ((Wrap 1))\n ((let $a (Wrap 2))))",
           EG_ERR_TYPE, "bad.egg:4:8:", "variable $a shadows the global $a");
    /* a rule's names are its own: a global declared later may reuse them */
    eg_engine *e = t_engine();
    T_RUN(e, "(datatype M (Wrap i64))\n(rule ((Wrap 1)) ((let $a (Wrap 1))))\n"
             "(let $a (Wrap 1))\n(rule ((= x (Wrap 1))) ((let y x)))");
    eg_engine_free(e);
}
END_TEST

START_TEST(naive_and_unsafe_seminaive_together_are_refused)
{
    expect("(relation t (i64))\n(rule ((t x)) ((t x)) :naive :unsafe-seminaive)", EG_ERR_TYPE,
           "bad.egg:2:30:", ":naive and :unsafe-seminaive");
    eg_engine *e = t_engine();
    T_RUN(e, "(relation t (i64))\n(rule ((t x)) ((t x)) :naive)\n"
             "(rule ((t x)) ((t x)) :unsafe-seminaive)");
    eg_engine_free(e);
}
END_TEST

START_TEST(failed_check_is_an_error_and_keeps_earlier_effects)
{
    eg_engine *e = t_engine();
    T_RUN(e, "(relation R (i64))");
    lm_err err = t_fail(e, "(R 1)\n(check (R 2))\n(R 3)");
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.egg:2:1: check failed"));
    ck_assert_uint_eq(t_size(e, "R"), 1);
    eg_engine_free(e);
}
END_TEST

/* Every program of fail-typecheck in egglog's suite (conformance/egglog) and in the rest of
 * egglog's tests (conformance/egglog-ext) is refused with a located message. */
static int refuse_all_in(const char *sub)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/conformance/%s/tests/fail-typecheck", lm_check_shared_dir(), sub);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot list %s", dir);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".egg") != 0) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        eg_engine *e = t_engine();
        lm_err err = {0};
        int rc = eg_run_file(e, path, &err);
        ck_assert_msg(rc != 0, "%s/%s was accepted", sub, de->d_name);
        ck_assert_msg(strstr(err.msg, de->d_name) != NULL && strstr(err.msg, ": ") != NULL,
                      "%s: message without location: %s", de->d_name, err.msg);
        eg_engine_free(e);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(every_fail_typecheck_program_is_refused)
{
    ck_assert_int_ge(refuse_all_in("egglog"), 10);
    ck_assert_int_ge(refuse_all_in("egglog-ext"), 15);
}
END_TEST

/* Reads the next line of f into buf (without its newline); 0 at the end. */
static int read_line(FILE *f, char *buf, size_t n)
{
    if (!fgets(buf, (int)n, f)) return 0;
    size_t l = strlen(buf);
    ck_assert_msg(l + 1 < n || buf[l - 1] == '\n', "line too long: %.40s...", buf);
    if (l && buf[l - 1] == '\n') buf[--l] = 0;
    return 1;
}

/* Every program of data/bad_programs.txt (declarations, rules, rewrites, birewrites and
 * merges that fail type checking or compilation part-way, inside rulesets, in :when, in
 * nested expressions; commands that fail at run time) fails with a located message and
 * leaves the engine usable and consistent. Run under ASan in CI, LeakSanitizer fails the
 * test if any error path loses what it allocated. */
START_TEST(every_bad_program_fails_cleanly)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/egraph/data/bad_programs.txt", LUMINAL_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char prelude[4096], line[4096], text[8200];
    prelude[0] = 0;
    int n = 0, lineno = 0;
    while (read_line(f, line, sizeof line)) {
        lineno++;
        if (line[0] == ';' || line[0] == 0) continue;
        if (!prelude[0]) {
            snprintf(prelude, sizeof prelude, "%s", line);
            continue;
        }
        snprintf(text, sizeof text, "%s\n%s\n", prelude, line);
        eg_options o;
        eg_options_default(&o);
        o.snapshot = 1;
        o.node_limit = 20000;
        o.log = tmpfile();
        eg_engine *e = eg_engine_new(&o, NULL);
        lm_err err = {0};
        memset(&err, 0, sizeof err);
        int rc = eg_run_text(e, text, "bad.egg", &err);
        ck_assert_msg(rc > 0 && rc == err.code, "line %d was accepted: %s", lineno, line);
        ck_assert_msg(strncmp(err.msg, "bad.egg:2:", 10) == 0,
                      "line %d: message without the location of the bad line: %s", lineno, err.msg);
        /* the engine is usable and consistent after the failure */
        ck_assert_msg(eg_run_text(e, "(Num 7) (check (Num 7))", "after.egg", &err) == 0,
                      "line %d: engine unusable after the failure: %s", lineno, err.msg);
        ck_assert_int_eq(eg_rebuild(e, &err), 0);
        ck_assert_msg(eg_check_invariants(e, &err) == 0, "line %d: %s", lineno, err.msg);
        eg_engine_free(e);
        fclose(o.log);
        n++;
    }
    fclose(f);
    ck_assert_int_ge(n, 80);
}
END_TEST

/* The fuzzer's past findings (tests/egraph_fuzz/crashes) run through the C API too, so
 * the sanitizer build of the unit tests replays them on every CI run. */
START_TEST(fuzz_findings_run_cleanly)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/egraph_fuzz/crashes", LUMINAL_SOURCE_DIR);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".egg") != 0) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        eg_options o;
        eg_options_default(&o);
        o.snapshot = 1;
        o.node_limit = 500; /* the fuzzer's limits */
        o.iter_limit = 30;
        o.time_limit_s = 5;
        o.out = o.log = tmpfile();
        eg_engine *e = eg_engine_new(&o, NULL);
        lm_err err = {0};
        memset(&err, 0, sizeof err);
        int rc = eg_run_file(e, path, &err);
        ck_assert_msg(rc == 0 || (rc == err.code && strstr(err.msg, de->d_name) != NULL),
                      "%s: %d %s", de->d_name, rc, err.msg);
        ck_assert_int_eq(eg_rebuild(e, &err), 0);
        ck_assert_msg(eg_check_invariants(e, &err) == 0, "%s: %s", de->d_name, err.msg);
        eg_engine_free(e);
        fclose(o.out);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 7);
}
END_TEST

Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("errors");
    tcase_add_test(tc, unclosed_paren_is_a_parse_error);
    tcase_add_test(tc, rule_variables_may_not_shadow_declared_names);
    tcase_add_test(tc, naive_and_unsafe_seminaive_together_are_refused);
    tcase_add_test(tc, stray_close_paren_is_a_parse_error);
    tcase_add_test(tc, unbound_variable_in_action);
    tcase_add_test(tc, wrong_arity_names_the_function);
    tcase_add_test(tc, set_on_a_constructor_is_refused);
    tcase_add_test(tc, division_by_zero_in_an_action);
    tcase_add_test(tc, merge_given_twice_is_refused);
    tcase_add_test(tc, sort_conflict_in_check_query_is_refused_cleanly);
    tcase_add_test(tc, failing_lookup_inside_a_rule_is_refused_cleanly);
    tcase_add_test(tc, empty_container_sort_is_refused);
    tcase_add_test(tc, missing_include_file);
    tcase_add_test(tc, missing_input_file);
    tcase_add_test(tc, ungrounded_variable);
    tcase_add_test(tc, unknown_function);
    tcase_add_test(tc, failed_check_is_an_error_and_keeps_earlier_effects);
    tcase_add_test(tc, misspelled_rule_option_is_refused);
    tcase_add_test(tc, input_reads_tab_separated_rows);
    tcase_add_test(tc, every_bad_program_fails_cleanly);
    tcase_add_test(tc, fuzz_findings_run_cleanly);
    suite_add_tcase(s, tc);
    return s;
}

/* The tests that read egglog's programs in ../shared (see api_shared_suite). */
Suite *errors_shared_suite(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/conformance/egglog/tests/fail-typecheck", lm_check_shared_dir());
    lm_check_require_dir(dir, "egglog's fail-typecheck programs");
    Suite *s = suite_create("errors_shared");
    TCase *tc = tcase_create("errors_shared");
    tcase_add_test(tc, every_fail_typecheck_program_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
