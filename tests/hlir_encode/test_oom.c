/* test_oom.c - out of memory while encoding and decoding: failing each hlir allocation
 * in turn (the module's one door, lm_mem_fail_after) never crashes or leaks (the
 * sanitizer build checks), always reports HL_ERR_NOMEM, and every call that completes
 * gives exactly what it gives without failures. */
#define _GNU_SOURCE /* open_memstream, before any system header */
#include "hl_int.h"
#include "te.h"
#include "lm_check.h"

static hl_graph *scenario_graph(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr s = hl_graph_dim(g, "s", 1, 8, 4);
    hl_expr dx[2] = {s, hl_n(g, 4)}, dw[2] = {hl_n(g, 4), hl_n(g, 4)};
    hl_t x = hl_input(g, "x", HL_F32, 2, dx);
    hl_t w = hl_input(g, "w", HL_BF16, 2, dw);
    hl_t y = hl_softmax(g, hl_matmul(g, x, hl_cast(g, w, HL_F32)), -1);
    hl_output(g, "y", hl_sum_reduce(g, y, 0));
    hl_output(g, "z", hl_gather(g, hl_iota(g, hl_e_z(hl_graph_exprs(g)), hl_n(g, 3)), y));
    ck_assert_msg(hl_graph_error(g)->code == HL_OK, "%s", hl_graph_error(g)->msg);
    return g;
}

/* Runs step(n) with the n-th allocation failing, for n = 0, 1, ... until a run needs
 * fewer allocations than n; returns how many were failed in turn. */
static long each_failure(void (*step)(const hl_graph *g, bool *fired), const hl_graph *g)
{
    long n = 0;
    for (;; n++) {
        lm_mem_fail_after(n);
        bool fired = false;
        step(g, &fired);
        lm_mem_fail_after(-1);
        if (!fired) break;
    }
    return n;
}

static char *want_text, *want_bytes, *want_json;

static void text_step(const hl_graph *g, bool *fired)
{
    lm_err err;
    lm_err_clear(&err);
    char *t = hl_graph_encode_text(g, true, &err);
    *fired = lm_mem_fail_fired();
    lm_mem_fail_after(-1);
    if (!t) {
        ck_assert_int_eq(err.code, HL_ERR_NOMEM);
        return;
    }
    ck_assert_str_eq(t, want_text);
    free(t);
}

static void c_step(const hl_graph *g, bool *fired)
{
    eg_engine *e = eg_engine_new(NULL, NULL);
    if (!e) { /* the engine's own allocations fail through the same hook */
        *fired = lm_mem_fail_fired();
        lm_mem_fail_after(-1);
        ck_assert(*fired);
        return;
    }
    lm_err err;
    lm_err_clear(&err);
    hl_encoding enc;
    hl_status st = hl_graph_encode(g, e, &enc, &err);
    *fired = lm_mem_fail_fired();
    lm_mem_fail_after(-1);
    if (st) {
        ck_assert_msg(st == HL_ERR_NOMEM, "status %d: %s", st, err.msg);
        ck_assert_ptr_null(enc.node_class);
    } else {
        char *b = te_serialized(e);
        ck_assert_str_eq(b, want_bytes);
        free(b);
        hl_encoding_fini(&enc);
    }
    eg_engine_free(e);
}

static eg_engine *encoded; /* g's encoding, made without failures */

static void decode_step(const hl_graph *g, bool *fired)
{
    lm_err err;
    lm_err_clear(&err);
    hl_graph *d = hl_graph_decode_engine(encoded, &err);
    *fired = lm_mem_fail_fired();
    lm_mem_fail_after(-1);
    if (!d) {
        ck_assert_msg(err.code == HL_ERR_NOMEM, "status %d: %s", err.code, err.msg);
        if (eg_sort_count(encoded) == 0) { /* the engine's own allocation failed: it is */
            eg_engine_free(encoded);         /* unusable now, so encode again */
            encoded = te_encode_c(g, NULL);
        }
        return;
    }
    char *j = te_json(d);
    ck_assert_str_eq(j, want_json);
    free(j);
    hl_graph_free(d);
}

START_TEST(every_failed_allocation_is_reported_and_recovered)
{
    hl_graph *g = scenario_graph();
    lm_err err;
    lm_err_clear(&err);
    want_text = hl_graph_encode_text(g, true, &err);
    ck_assert_ptr_nonnull(want_text);
    encoded = te_encode_c(g, NULL);
    want_bytes = te_serialized(encoded);
    hl_graph *d = hl_graph_decode_engine(encoded, &err);
    ck_assert_ptr_nonnull(d);
    want_json = te_json(d);
    hl_graph_free(d);
    long nt = each_failure(text_step, g), nc = each_failure(c_step, g),
         nd = each_failure(decode_step, g);
    ck_assert_int_gt(nt, 3);
    ck_assert_int_gt(nc, 3);
    ck_assert_int_gt(nd, 20);
    fprintf(stderr, "failed each allocation in turn: text %ld, C path %ld, decode %ld\n", nt, nc,
            nd);
    free(want_text);
    free(want_bytes);
    free(want_json);
    eg_engine_free(encoded);
    hl_graph_free(g);
}
END_TEST

static Suite *hlir_encode_oom_suite(void)
{
    Suite *s = suite_create("hlir_encode_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, every_failed_allocation_is_reported_and_recovered);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_encode_oom_suite, NULL};
