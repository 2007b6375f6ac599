/* test_oom.c - out of memory: failing each allocation in turn (through the module's one
 * allocation door) while building and running a graph never crashes or leaks (the
 * sanitizer build checks), always reports HL_ERR_NOMEM, and a run that completes gives
 * exactly the bits of a run without failures. */
#include "hl_int.h"
#include "th.h"
#include "lm_check.h"

/* Builds a graph using most of the builder (dims, views, gathers, scatters, reductions,
 * a matmul) and runs it; on success copies the output's bytes to out (64 floats). */
static hl_status scenario(float *out)
{
    hl_status st = HL_OK;
    hl_graph *g = hl_graph_new();
    if (!g) return HL_ERR_NOMEM;
    hl_expr s = hl_graph_dim(g, "s", 1, 8, 4);
    hl_expr dx[2] = {s, hl_n(g, 4)}, dw[2] = {hl_n(g, 4), hl_n(g, 4)};
    hl_t x = hl_input(g, "x", HL_F32, 2, dx);
    hl_t w = hl_input(g, "w", HL_F32, 2, dw);
    hl_t y = hl_softmax(g, hl_matmul(g, x, w), -1);
    y = hl_concat(
        g, y, hl_pad(g, hl_slice(g, y, 1, hl_n(g, 1), hl_n(g, 3)), 1, hl_n(g, 1), hl_n(g, 1), 0.5f),
        0);
    hl_output(g, "y", hl_rms_norm(g, y, (hl_t){.node = HL_NONE}, 1e-6f));
    if ((st = hl_graph_error(g)->code)) {
        if (st != HL_ERR_NOMEM) fprintf(stderr, "builder: %s\n", hl_graph_error(g)->msg);
        hl_graph_free(g);
        return st;
    }
    int64_t dims[2] = {4, 4};
    hl_tensor in[2] = {{0}, {0}}, res[1];
    lm_err err;
    lm_err_clear(&err);
    if (!(st = hl_tensor_init(&in[0], HL_F32, 2, dims, &err)) &&
        !(st = hl_tensor_init(&in[1], HL_F32, 2, dims, &err))) {
        for (size_t i = 0; i < 16; i++) {
            hl_tensor_set(&in[0], i, (double)i / 7 - 1);
            hl_tensor_set(&in[1], i, (double)((i * 5) % 16) / 9 - 0.8);
        }
        int64_t sv = 4;
        st = hl_run(g, &sv, in, res, NULL, &err);
        if (st && st != HL_ERR_NOMEM) fprintf(stderr, "run: %s\n", err.msg);
        if (!st) {
            ck_assert_uint_eq(res[0].numel, 8 * 4);
            memcpy(out, res[0].data, res[0].numel * sizeof(float));
            hl_tensor_fini(&res[0]);
        }
    }
    th_free(in, 2);
    hl_graph_free(g);
    return st;
}

START_TEST(every_failed_allocation_is_reported_and_recovered)
{
    float want[64], got[64];
    ck_assert_int_eq(scenario(want), HL_OK);
    long n = 0;
    for (;; n++) {
        lm_mem_fail_after(n);
        memset(got, 0, sizeof got);
        hl_status st = scenario(got);
        bool fired = lm_mem_fail_fired();
        lm_mem_fail_after(-1);
        if (!fired) { /* the scenario needs fewer than n allocations: all have been failed */
            ck_assert_int_eq(st, HL_OK);
            break;
        }
        ck_assert_msg(st == HL_OK || st == HL_ERR_NOMEM, "allocation %ld: status %d", n, st);
        if (st == HL_OK) ck_assert(memcmp(got, want, 32 * sizeof(float)) == 0);
    }
    ck_assert_int_gt(n, 50); /* the scenario really allocates */
    fprintf(stderr, "failed each of %ld allocations in turn\n", n);
}
END_TEST

/* The simplifier never answers differently for lack of memory: with each of its
 * allocations failed in turn, an expression either comes out exactly as without failures
 * or is HL_NONE with the pool marked failed (a lost term once made a quotient look empty,
 * and a lost factor list hid a d*(y/d) + y%d pair, both giving a valid but less
 * simplified expression). */
START_TEST(the_simplifier_fails_or_gives_the_same_expression)
{
    static const char *const texts[] = {
        "(z*4 + n*8 + 3)/4",  "(z/4)*4 + z%4",          "((z%(4*n))%4 + (z/4)*4)*n",
        "(n*z*6 + 12)%(3*n)", "min(z/2, n)*2 + (z%2)", "(z + n)*(z + 2)/(n + 1)",
    };
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        char want[256], got[256];
        hl_expr_pool *p = hl_expr_pool_new();
        hl_expr e;
        lm_err err = {0};
        ck_assert_int_eq(hl_e_parse(p, texts[t], &e, &err), HL_OK);
        hl_e_print(p, e, want, sizeof want);
        hl_expr_pool_free(p);
        int failed = 0;
        for (long n = 0;; n++) {
            p = hl_expr_pool_new();
            ck_assert_ptr_nonnull(p);
            lm_err_clear(&err);
            lm_mem_fail_after(n);
            hl_status st = hl_e_parse(p, texts[t], &e, &err);
            bool fired = lm_mem_fail_fired();
            lm_mem_fail_after(-1);
            if (st == HL_OK) {
                hl_e_print(p, e, got, sizeof got);
                ck_assert_msg(strcmp(got, want) == 0, "%s with allocation %ld failed: %s, not %s",
                              texts[t], n, got, want);
            } else {
                ck_assert_msg(fired && st == HL_ERR_NOMEM, "%s, allocation %ld: status %d: %s",
                              texts[t], n, st, err.msg);
                failed++;
            }
            hl_expr_pool_free(p);
            if (!fired) break;
        }
        ck_assert_int_gt(failed, 3);
    }
}
END_TEST

START_TEST(pool_survives_a_failed_growth)
{
    hl_expr_pool *p = hl_expr_pool_new();
    hl_expr last = HL_NONE;
    int failures = 0;
    for (int64_t i = 0; i < 2000; i++) {
        lm_mem_fail_after(i % 97 == 0 ? 0 : -1);
        hl_expr e = hl_e_num(p, i);
        lm_mem_fail_after(-1);
        if (e == HL_NONE)
            failures++;
        else
            last = e;
    }
    ck_assert_int_gt(failures, 0);
    ck_assert(hl_expr_pool_failed(p));
    /* everything that was made is still found, and new values still intern */
    ck_assert_uint_eq(hl_e_num(p, 1999), last);
    for (int64_t i = 0; i < 2000; i++)
        ck_assert_uint_ne(hl_e_num(p, i), HL_NONE);
    ck_assert_uint_eq(hl_e_num(p, 5), hl_e_num(p, 5));
    hl_expr_pool_free(p);
}
END_TEST

static Suite *hlir_oom_suite(void)
{
    Suite *s = suite_create("hlir_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, every_failed_allocation_is_reported_and_recovered);
    tcase_add_test(tc, pool_survives_a_failed_growth);
    tcase_add_test(tc, the_simplifier_fails_or_gives_the_same_expression);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_oom_suite, NULL};
