/* test_eg.h: helpers shared by the engine's unit tests. */
#ifndef TEST_EG_H
#define TEST_EG_H

#include "lm_check.h"
#include <stdio.h>
#include <string.h>

#include "egraph.h"

/* An engine whose command output goes to a temporary file (kept out of test logs). */
static inline eg_engine *t_engine(void)
{
    eg_options o;
    eg_options_default(&o);
    o.snapshot = 1;
    return eg_engine_new(&o, NULL);
}

/* Runs program text; fails the test with the engine's message on error. */
#define T_RUN(e, text)                                                                             \
    do {                                                                                           \
        lm_err err_ = {0};                                                                         \
        int rc_ = eg_run_text((e), (text), "test.egg", &err_);                                     \
        ck_assert_msg(rc_ == 0, "program failed: %s", err_.msg);                                   \
    } while (0)

static inline size_t t_size(eg_engine *e, const char *table)
{
    int t = eg_table_lookup(e, table);
    ck_assert_msg(t >= 0, "no table %s", table);
    return eg_table_size(e, t);
}

/* Runs text expecting failure; returns the error (code and message). */
static inline lm_err t_fail(eg_engine *e, const char *text)
{
    lm_err err = {0};
    memset(&err, 0, sizeof err);
    int rc = eg_run_text(e, text, "bad.egg", &err);
    ck_assert_msg(rc != 0, "program was expected to fail: %s", text);
    ck_assert_int_eq(rc, err.code);
    return err;
}

Suite *core_suite(void);
Suite *join_suite(void);
Suite *errors_suite(void);
Suite *api_suite(void);
Suite *schedule_suite(void);
Suite *rebuild_suite(void);
/* the tests that need ../shared, run by egraph_shared */
Suite *api_shared_suite(void);
Suite *errors_shared_suite(void);
Suite *oom_suite(void);
Suite *lang_suite(void);
Suite *cont_suite(void);

#endif
