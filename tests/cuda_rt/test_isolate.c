/* test_isolate.c: rt_isolated_run confines faults, crashes and hangs to a child process,
 * and a fault the driver keeps makes rt_ctx_reset say so (mock driver). */
#include "cuda_rt.h"
#include "lm_check.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the isolated work does. */
typedef enum job_kind { JOB_OK, JOB_FAULT, JOB_KILLED, JOB_HANG, JOB_ERROR } job_kind;

typedef struct job {
    rt_mock *mock;
    job_kind what;
    uint32_t input[4];
} job;

static int work(rt_ctx *ctx, void *user, void *out, size_t out_size, lm_err *err)
{
    job *j = user;
    uint32_t *o = out;
    rt_buf b = {0};
    switch (j->what) {
    case JOB_OK:
        if (rt_buf_reserve(ctx, &b, 4096, NULL, err)) return err->code;
        for (size_t i = 0; i < out_size / 4; i++)
            o[i] = j->input[i % 4] * 2; /* the child sees the caller's memory */
        rt_buf_release(ctx, &b);
        return 0;
    case JOB_FAULT:
        rt_mock_fail(j->mock, "cuStreamSynchronize", 0, 700);
        return rt_ctx_sync(ctx, err);
    case JOB_KILLED:
        raise(SIGKILL);
        return 0;
    case JOB_HANG:
        sleep(30);
        return 0;
    case JOB_ERROR:
        break;
    }
    return rt_buf_reserve(ctx, &b, (size_t)300 << 30, NULL, err); /* more than the device has */
}

/* Runs work of kind `what` in a child (no result bytes) on a fresh mock, expects `rc`,
 * and returns the error that came back. */
static lm_err run_failing(job_kind what, double timeout_ms, int rc)
{
    rt_mock *m = rt_mock_new(NULL);
    ck_assert_ptr_nonnull(m);
    job j = {m, what, {0}};
    lm_err err = {0};
    ck_assert_int_eq(rt_isolated_run(NULL, m, work, &j, NULL, 0, timeout_ms, &err), rc);
    rt_mock_free(m);
    return err;
}

START_TEST(isolated_run_returns_the_childs_results)
{
    rt_mock *m = rt_mock_new(NULL);
    job j = {m, JOB_OK, {1, 2, 3, 4}};
    uint32_t out[8] = {0};
    lm_err err = {0};
    ck_assert_msg(rt_isolated_run(NULL, m, work, &j, out, sizeof out, 10000, &err) == 0, "%s",
                  err.msg);
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(out[i], j.input[i % 4] * 2);
    ck_assert_uint_eq(rt_mock_calls(m), 0); /* the child worked on its own copy */
    rt_mock_free(m);
}
END_TEST

START_TEST(isolated_fault_comes_back_as_an_error)
{
    rt_mock *m = rt_mock_new(NULL);
    job j = {m, JOB_FAULT, {0}};
    uint32_t out[2] = {7, 7};
    lm_err err = {0};
    ck_assert_int_eq(rt_isolated_run(NULL, m, work, &j, out, sizeof out, 10000, &err), RT_EFAULT);
    ck_assert_ptr_nonnull(strstr(err.msg, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    ck_assert_ptr_nonnull(strstr(err.msg, "child process"));
    ck_assert_uint_eq(out[0], 7); /* untouched on failure */
    /* the caller goes on: another isolated run works */
    lm_err_clear(&err);
    j.what = JOB_OK;
    ck_assert_int_eq(rt_isolated_run(NULL, m, work, &j, out, sizeof out, 10000, &err), 0);
    rt_mock_free(m);
}
END_TEST

START_TEST(isolated_crash_is_reported_with_its_signal)
{
    lm_err err = run_failing(JOB_KILLED, 10000, RT_EFAULT);
    ck_assert_msg(strstr(err.msg, "signal 9") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(isolated_hang_is_killed_at_the_timeout)
{
    lm_err err = run_failing(JOB_HANG, 300, RT_ETIMEOUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "300 ms"));
}
END_TEST

START_TEST(isolated_error_keeps_its_code_and_message)
{
    lm_err err = run_failing(JOB_ERROR, 10000, RT_EDRIVER);
    ck_assert_ptr_nonnull(strstr(err.msg, "CUDA_ERROR_OUT_OF_MEMORY"));
}
END_TEST

START_TEST(reset_says_when_the_driver_keeps_the_fault)
{
    rt_mock_config cfg;
    rt_mock_config_default(&cfg);
    cfg.fault_survives_reset = true;
    rt_mock *m = rt_mock_new(&cfg);
    rt_ctx *ctx;
    lm_err err = {0};
    ck_assert_int_eq(rt_ctx_new_mock(m, NULL, &ctx, &err), 0);
    rt_mock_fail(m, "cuStreamSynchronize", 0, 700);
    ck_assert_int_eq(rt_ctx_sync(ctx, &err), RT_EFAULT);
    lm_err_clear(&err);
    ck_assert_int_eq(rt_ctx_reset(ctx, &err), RT_EFAULT);
    ck_assert_ptr_nonnull(strstr(err.msg, "for the life of the process"));
    ck_assert_ptr_nonnull(strstr(err.msg, "rt_isolated_run"));
    lm_err_clear(&err);
    rt_buf b = {0};
    ck_assert_int_eq(rt_buf_reserve(ctx, &b, 16, NULL, &err), RT_EFAULT); /* still refused */
    rt_ctx_free(ctx);
    rt_mock_free(m);
}
END_TEST

static Suite *cuda_rt_isolate_suite(void)
{
    Suite *s = suite_create("cuda_rt_isolate");
    TCase *tc = tcase_create("isolate");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, isolated_run_returns_the_childs_results);
    tcase_add_test(tc, isolated_fault_comes_back_as_an_error);
    tcase_add_test(tc, isolated_crash_is_reported_with_its_signal);
    tcase_add_test(tc, isolated_hang_is_killed_at_the_timeout);
    tcase_add_test(tc, isolated_error_keeps_its_code_and_message);
    tcase_add_test(tc, reset_says_when_the_driver_keeps_the_fault);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {cuda_rt_isolate_suite, NULL};
