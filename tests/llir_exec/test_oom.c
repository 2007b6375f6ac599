/* test_oom.c - out of memory anywhere in the lowering or a run is LM_ENOMEM, never a
 * crash or a leak (LeakSanitizer checks the latter under the sanitizers): each
 * allocation of llir's door and of hlir's (which the executor's kernels, regions and
 * expression pools allocate through) is failed in turn. */
#include "hl_int.h"
#include "ll_lower.h"
#include "ll_int.h"
#include "tx.h"

/* x f32 [4, 6], w f32 [6, 3], idx Int [5]: h = exp2(x) * x in a region, m = h @ w as a
 * KMatmul, s = sum(m, 1) and g = gather(idx, x) as kernels; outputs m, s, g. */
static hl_graph *graph(ll_lower_impl **impl_out)
{
    hl_graph *g = hl_graph_new();
    hl_expr dx[2] = {hl_n(g, 4), hl_n(g, 6)}, dw[2] = {hl_n(g, 6), hl_n(g, 3)};
    hl_expr di[1] = {hl_n(g, 5)};
    hl_t x = hl_input(g, "x", HL_F32, 2, dx), w = hl_input(g, "w", HL_F32, 2, dw);
    hl_t idx = hl_input(g, "idx", HL_INT, 1, di);
    hl_t e = hl_exp2(g, x);
    hl_t h = hl_mul(g, e, x);
    hl_t m = hl_matmul(g, h, w);
    hl_output(g, "m", m);
    hl_output(g, "s", hl_sum_reduce(g, m, 1));
    hl_output(g, "g", hl_gather(g, idx, x));
    ck_assert(hl_graph_error(g)->code == 0);
    ll_lower_impl *impl = calloc(hl_graph_node_count(g), sizeof *impl);
    impl[e.node] = LL_LOWER_INLINE;
    impl[h.node] = LL_LOWER_REGION;
    impl[hl_graph_node(g, m.node)->in[0].node] = LL_LOWER_INLINE;
    impl[m.node] = LL_LOWER_MATMUL;
    *impl_out = impl;
    return g;
}

typedef struct hook {
    void (*fail_after)(long);
    bool (*fired)(void);
    const char *name;
} hook;

static const hook HOOKS[2] = {{ll__mem_fail_after, ll__mem_fail_fired, "llir"},
                              {hl__mem_fail_after, hl__mem_fail_fired, "hlir"}};

START_TEST(every_failed_allocation_of_the_lowering_is_enomem)
{
    ll_lower_impl *impl;
    hl_graph *g = graph(&impl);
    ll_lower_plan plan = {impl, NULL};
    for (int h = 0; h < 2; h++) {
        long k = 0;
        for (;; k++) {
            lm_err e = {0};
            HOOKS[h].fail_after(k);
            ll_graph *lg = ll__lower_hlir(g, &plan, &e);
            bool fired = HOOKS[h].fired();
            HOOKS[h].fail_after(-1);
            if (!fired) {
                ck_assert_msg(lg != NULL, "%s", e.msg);
                ll_graph_free(lg);
                break;
            }
            ck_assert_msg(lg == NULL && e.code == LM_ENOMEM, "%s allocation %ld: code %d: %s",
                          HOOKS[h].name, k, e.code, e.msg);
        }
        ck_assert_int_gt(k, 3); /* the loop did fail allocations */
    }
    free(impl);
    hl_graph_free(g);
}
END_TEST

START_TEST(every_failed_allocation_of_a_run_is_enomem)
{
    ll_lower_impl *impl;
    hl_graph *g = graph(&impl);
    ll_lower_plan plan = {impl, NULL};
    lm_err e = {0};
    ll_graph *lg = ll__lower_hlir(g, &plan, &e);
    ck_assert_ptr_nonnull(lg);
    hl_tensor in[3], want[3];
    tx_inputs(g, NULL, 2, in);
    tx_ll(lg, NULL, in, want);
    for (int h = 0; h < 2; h++) {
        long k = 0;
        for (;; k++) {
            hl_tensor out[3];
            lm_err_clear(&e);
            HOOKS[h].fail_after(k);
            int rc = ll_run(lg, NULL, in, out, 0, &e);
            bool fired = HOOKS[h].fired();
            HOOKS[h].fail_after(-1);
            if (!fired) {
                ck_assert_msg(rc == 0, "%s", e.msg);
                for (int o = 0; o < 3; o++)
                    ck_assert(tx_same_bits(&out[o], &want[o]));
                tx_free(out, 3);
                break;
            }
            ck_assert_msg(rc == LM_ENOMEM && e.code == LM_ENOMEM, "%s allocation %ld: code %d: %s",
                          HOOKS[h].name, k, rc, e.msg);
            for (int o = 0; o < 3; o++)
                ck_assert_ptr_null(out[o].data);
        }
        ck_assert_int_gt(k, 10);
    }
    tx_free(in, 3);
    tx_free(want, 3);
    free(impl);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llir_exec_oom");
    TCase *t = tcase_create("oom");
    tcase_add_test(t, every_failed_allocation_of_the_lowering_is_enomem);
    tcase_add_test(t, every_failed_allocation_of_a_run_is_enomem);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
