/* test_memory.c - the reference runtime's memory budget: a run is planned from the graph
 * and the dim values alone, and a run that would hold more than the limit (the machine's
 * memory, or the caller's) is refused before any tensor is allocated, naming the
 * largest tensors. */
#include "hl_int.h"

#include <inttypes.h>
#include <math.h>
#include "lm_check.h"
#include "th.h"

/* x: f32 [rows, cols] -> y = exp2(x) -> output "y" */
static hl_graph *exp2_graph(int64_t rows, int64_t cols)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[2] = {hl_n(g, rows), hl_n(g, cols)};
    hl_t x = hl_input(g, "x", HL_F32, 2, d);
    hl_output(g, "y", hl_exp2(g, x));
    th_graph_ok(g);
    return g;
}

/* What the plan counts, on a graph small enough to add up by hand: the input (64 bytes);
 * while Exp2 runs, its output (64) and its view's position tables (4 + 4 int64: 64);
 * while Output runs, Exp2's buffer (64, still to be read), its own (64) and its tables
 * (64). */
START_TEST(the_plan_follows_the_schedule)
{
    hl_graph *g = exp2_graph(4, 4);
    hl_run_mem m;
    lm_err err = {0};
    hl_run_opts opts = {.mem_limit = 1 << 20};
    ck_assert_int_eq(hl_run_check_memory(g, NULL, &opts, &m, &err), HL_OK);
    ck_assert_uint_eq(m.input_bytes, 64);
    ck_assert_uint_eq(m.peak_bytes, 64 + 64 + 64 + 64);
    ck_assert_uint_eq(m.limit, 1 << 20);
    /* without a limit of its own, a run is held to the machine's memory */
    ck_assert_int_eq(hl_run_check_memory(g, NULL, NULL, &m, &err), HL_OK);
    ck_assert_uint_eq(m.limit, lm_mem_available());
    hl_graph_free(g);
}
END_TEST

/* A legal graph whose input alone is 4 TiB (2^40 f32): the plan refuses it (no machine
 * this runs on has 12 TiB), and says what it needs and which tensors are largest. */
START_TEST(a_run_bigger_than_the_machine_is_refused)
{
    hl_graph *g = exp2_graph(1 << 20, 1 << 20);
    lm_err err = {0};
    hl_run_mem m;
    lm_mem_stats_reset();
    ck_assert_int_eq(hl_run_check_memory(g, NULL, NULL, &m, &err), HL_ERR_LIMIT);
    ck_assert_uint_eq(m.input_bytes, (uint64_t)4 << 40);
    ck_assert_uint_ge(m.peak_bytes, (uint64_t)12 << 40); /* x, Exp2's buffer, Output's */
    ck_assert_ptr_nonnull(strstr(err.msg, "needs 12.0 TiB at once (4.00 TiB of it inputs)"));
    ck_assert_ptr_nonnull(strstr(err.msg, "the memory this machine has"));
    ck_assert_ptr_nonnull(strstr(err.msg, "'x' (input) f32 [1048576, 1048576] 4.00 TiB"));
    size_t largest;
    lm_mem_stats(NULL, &largest);
    ck_assert_uint_lt(largest, 4096); /* planning allocates bookkeeping only */
    hl_graph_free(g);
}
END_TEST

/* hl_run itself refuses a run over the caller's limit before allocating a tensor: the
 * largest allocation it makes is bookkeeping, not the 16 KiB output, and the outputs
 * hold nothing. The same run under a larger limit computes. */
START_TEST(hl_run_refuses_before_allocating_and_runs_under_a_larger_limit)
{
    hl_graph *g = exp2_graph(64, 64);
    int64_t dims[2] = {64, 64};
    hl_tensor in[1] = {th_tensor(HL_F32, 2, dims, NULL)}, out[1];
    memset(out, 0xAB, sizeof out);
    lm_err err = {0};
    hl_run_opts small = {.mem_limit = 20000}, large = {.mem_limit = 1 << 20};
    lm_mem_stats_reset();
    ck_assert_int_eq(hl_run(g, NULL, in, out, &small, &err), HL_ERR_LIMIT);
    size_t largest;
    lm_mem_stats(NULL, &largest);
    ck_assert_uint_lt(largest, 16384);
    ck_assert_ptr_null(out[0].data);
    ck_assert_ptr_nonnull(strstr(err.msg, "the limit is 19.5 KiB (--mem-limit)"));
    ck_assert_ptr_nonnull(strstr(err.msg, "'y' (output) f32 [64, 64] 16.0 KiB"));
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(g, NULL, in, out, &large, &err), HL_OK);
    ck_assert_uint_eq(out[0].numel, 64 * 64);
    th_free(out, 1);
    th_free(in, 1);
    hl_graph_free(g);
}
END_TEST

/* x: f32 [n] -> sin applied k times -> output "y" */
static hl_graph *sin_chain(int64_t n, int k)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, n)};
    hl_t t = hl_input(g, "x", HL_F32, 1, d);
    for (int i = 0; i < k; i++)
        t = hl_sin(g, t);
    hl_output(g, "y", t);
    th_graph_ok(g);
    return g;
}

/* Allocations through the door for one run of sin_chain(n, k); checks the values. */
static uint64_t chain_allocations(int64_t n, int k)
{
    hl_graph *g = sin_chain(n, k);
    hl_tensor in[1] = {th_tensor(HL_F32, 1, &n, NULL)}, out[1];
    float *x = in[0].data;
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(i % 1000) * 0.01f - 5.0f;
    uint64_t calls;
    lm_mem_stats_reset();
    th_run(g, NULL, in, out);
    lm_mem_stats(&calls, NULL);
    const float *y = out[0].data;
    for (int64_t i = 0; i < n; i++) {
        float want = x[i];
        for (int j = 0; j < k; j++)
            want = sinf(want);
        ck_assert_msg(y[i] == want, "y[%" PRId64 "] = %.9g, sin^%d(x) = %.9g", i, y[i], k, want);
    }
    th_free(out, 1);
    th_free(in, 1);
    hl_graph_free(g);
    return calls;
}

/* A node's output and its input's position table are as large as the tensor; a run
 * recycles those of at least 1 MiB that it freed for its later nodes, so four more nodes
 * of 2 MiB tensors cost fewer fresh allocations than four more of small ones, and every
 * value stays right. */
START_TEST(a_run_recycles_the_large_blocks_it_freed)
{
    int64_t big = (int64_t)1 << 19, small = 64; /* f32: 2 MiB; its table 4 MiB */
    uint64_t big_more = chain_allocations(big, 8) - chain_allocations(big, 4);
    uint64_t small_more = chain_allocations(small, 8) - chain_allocations(small, 4);
    ck_assert_uint_ge(small_more, 8); /* an output and a table per node, at least */
    ck_assert_uint_le(big_more + 8, small_more);
}
END_TEST

/* Dims are checked as a run checks them, and a plan at a larger dim value needs more. */
START_TEST(the_plan_checks_and_uses_the_dim_values)
{
    hl_graph *g = hl_graph_new();
    hl_expr s = hl_graph_dim(g, "s", 1, 1000, 8);
    hl_expr d[2] = {s, hl_n(g, 16)};
    hl_output(g, "y", hl_exp2(g, hl_input(g, "x", HL_F32, 2, d)));
    th_graph_ok(g);
    lm_err err = {0};
    int64_t bad = 1001, small = 2, big = 1000;
    hl_run_mem a, b;
    ck_assert_int_eq(hl_run_check_memory(g, &bad, NULL, &a, &err), HL_ERR_DIM);
    ck_assert_ptr_nonnull(strstr(err.msg, "outside its range"));
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run_check_memory(g, &small, NULL, &a, &err), HL_OK);
    ck_assert_int_eq(hl_run_check_memory(g, &big, NULL, &b, &err), HL_OK);
    ck_assert_uint_eq(a.input_bytes, 2 * 16 * 4);
    ck_assert_uint_eq(b.input_bytes, 1000 * 16 * 4);
    ck_assert_uint_gt(b.peak_bytes, a.peak_bytes);
    hl_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hlir_memory");
    TCase *tc = tcase_create("memory");
    tcase_add_test(tc, the_plan_follows_the_schedule);
    tcase_add_test(tc, a_run_bigger_than_the_machine_is_refused);
    tcase_add_test(tc, hl_run_refuses_before_allocating_and_runs_under_a_larger_limit);
    tcase_add_test(tc, the_plan_checks_and_uses_the_dim_values);
    tcase_add_test(tc, a_run_recycles_the_large_blocks_it_freed);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
