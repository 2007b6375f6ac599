/* test_magnitude.c - the scale of the comparison (docs/llir.md, "The scale of the
 * comparison"): ll_output_magnitudes computes, per element, the size of the terms the
 * value is made of, and ll_compare_outputs_scaled measures a candidate against it, so
 * that a candidate which rounds the terms of a cancelling sum differently passes while
 * a wrong one still fails; without magnitudes the unit is max(|ref[i]|, rms). */
#include "tx.h"

#include <float.h>
#include <stdio.h>

static double at(const hl_tensor *t, size_t i)
{
    return hl_tensor_get(t, i);
}

#define NEAR(a, b)                                                                                 \
    ck_assert_msg(fabs((a) - (b)) <= 1e-5 * fmax(fabs(a), fabs(b)) + 1e-30,                        \
                  "%s = %.9g, %s = %.9g", #a, (double)(a), #b, (double)(b))

/* x [8] f32: c = x + (-1) x (exactly 0), sq = x x, s = sum(x), e = exp2(x), r = 1 / x,
 * q = sqrt(x x + 1), l = log2(x x + 1), sn = sin(x), m = x mod 0.75, b = bf16(x) */
static hl_graph *ops_graph(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 8)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d);
    hl_output(g, "c", hl_add(g, x, hl_mul_scalar(g, x, -1.0f)));
    hl_output(g, "sq", hl_mul(g, x, x));
    hl_output(g, "s", hl_sum_reduce(g, x, 0));
    hl_output(g, "e", hl_exp2(g, x));
    hl_output(g, "r", hl_recip(g, x));
    hl_t x2p1 = hl_add_scalar(g, hl_mul(g, x, x), 1.0f);
    hl_output(g, "q", hl_sqrt(g, x2p1));
    hl_output(g, "l", hl_log2(g, x2p1));
    hl_output(g, "sn", hl_sin(g, x));
    hl_output(g, "m", hl_mod(g, x, hl_full(g, 0.75f, HL_F32, 1, d)));
    hl_output(g, "b", hl_cast(g, x, HL_BF16));
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    return g;
}

START_TEST(each_op_has_its_magnitude)
{
    hl_graph *g = ops_graph();
    hl_tensor in[1], ref[10], mag[10];
    tx_inputs(g, NULL, 3, in);
    tx_ref(g, NULL, in, ref);
    lm_err e = {0};
    ck_assert_msg(ll_output_magnitudes(g, NULL, in, mag, &e) == 0, "%s", e.msg);
    double sum_sq = 0;
    for (size_t i = 0; i < 8; i++)
        sum_sq += at(&in[0], i) * at(&in[0], i);
    for (size_t i = 0; i < 8; i++) {
        double x = at(&in[0], i), ax = fabs(x);
        ck_assert_uint_eq(mag[0].dtype, HL_F32);
        ck_assert_double_eq(at(&ref[0], i), 0.0); /* the reference cancels exactly */
        NEAR(at(&mag[0], i), sqrt(2.0) * ax);     /* Add: the root of the sum of squares */
        NEAR(at(&mag[1], i), x * x);              /* Mul: M(a) M(b) */
        /* the functions restart at |V| */
        for (uint32_t o = 3; o <= 7; o++)
            NEAR(at(&mag[o], i), fabs(at(&ref[o], i)));
        double q = 1 + ax / 0.75, mm = sqrt(x * x + (0.75 * q) * (0.75 * q));
        NEAR(at(&mag[8], i), fmax(mm, fabs(at(&ref[8], i)))); /* Mod: a - q b */
        NEAR(at(&mag[9], i), fmax(ax, fabs(at(&ref[9], i)))); /* a Cast to a float */
    }
    NEAR(at(&mag[2], 0), fmax(sqrt(sum_sq), fabs(at(&ref[2], 0)))); /* Sum */
    tx_free(in, 1);
    tx_free(ref, 10);
    tx_free(mag, 10);
    hl_graph_free(g);
}
END_TEST

/* A cancelled value keeps its terms' size through what follows: (x - x) * 5 is measured
 * against 5 sqrt(2) |x|; a value no rounding reaches (integers, a mask made from them) is
 * its own size. */
START_TEST(a_cancelled_value_keeps_its_size)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 8)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d);
    hl_t c = hl_add(g, x, hl_mul_scalar(g, x, -1.0f));
    hl_output(g, "c5", hl_mul_scalar(g, c, 5.0f));
    hl_t i = hl_iota(g, hl_e_z(hl_graph_exprs(g)), d[0]);
    hl_t mask =
        hl_mul_scalar(g, hl_cast(g, hl_lt(g, i, hl_iota(g, hl_n(g, 3), d[0])), HL_F32), -1e30f);
    hl_output(g, "masked", hl_add(g, x, mask));
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    hl_tensor in[1], ref[2], mag[2];
    tx_inputs(g, NULL, 9, in);
    tx_ref(g, NULL, in, ref);
    lm_err e = {0};
    ck_assert_msg(ll_output_magnitudes(g, NULL, in, mag, &e) == 0, "%s", e.msg);
    for (size_t k = 0; k < 8; k++) {
        double ax = fabs(at(&in[0], k));
        ck_assert_double_eq(at(&ref[0], k), 0.0);
        NEAR(at(&mag[0], k), 5 * sqrt(2.0) * ax);
        /* masked: the first 3 elements x - 1e30, the rest x; the mask is exact, so the
         * unmasked elements keep |x| (a mask's magnitude never leaks into them) */
        double m = at(&mag[1], k);
        if (k < 3)
            ck_assert(m >= 1e18); /* huge (saturated at 2^60) */
        else
            NEAR(m, ax);
    }
    tx_free(in, 1);
    tx_free(ref, 2);
    tx_free(mag, 2);
    hl_graph_free(g);
}
END_TEST

/* Every example at small dims (the bf16 causal attention's -1e30 mask included): the
 * magnitude is never below the value, and finite everywhere. */
START_TEST(the_magnitude_bounds_every_example)
{
    static const char *names[] = {"causal_attention_bf16", "elementwise_chain_f32_16m",
                                  "embedding_gather",      "layernorm_gelu_f32_4096",
                                  "matmul_bf16_4096",      "matmul_f32_2048",
                                  "primitives_strided",    "softmax_f32_4096x8192"};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/graphs/%s.json", LUMINAL_SOURCE_DIR, names[f]);
        lm_err e = {0};
        hl_graph *g = hl_graph_load_json(path, &e);
        ck_assert_msg(g != NULL, "%s", e.msg);
        int64_t dims[16];
        tx_dims(g, 3, dims);
        hl_tensor in[TX_MAX_IO], ref[TX_MAX_IO], mag[TX_MAX_IO];
        tx_inputs(g, dims, 11, in);
        tx_ref(g, dims, in, ref);
        ck_assert_msg(ll_output_magnitudes(g, dims, in, mag, &e) == 0, "%s: %s", names[f], e.msg);
        for (uint32_t o = 0; o < hl_graph_output_count(g); o++) {
            ck_assert_uint_eq(mag[o].numel, ref[o].numel);
            size_t finite = 0;
            for (size_t i = 0; i < ref[o].numel; i++) {
                double r = fabs(at(&ref[o], i)), m = at(&mag[o], i);
                if (!isfinite(r)) continue;
                /* the magnitude graph's own copy of the values rounds a bf16 matmul's
                 * products (its Mul has more readers than the Sum, so the reference does
                 * not fuse them): a few bf16 ulps below the reference's value */
                double slack = ref[o].dtype == HL_F32 ? 1e-5 : 0.05;
                ck_assert_msg(m >= r * (1 - slack) - 1e-30,
                              "%s output %u element %zu: M %.9g < |V| %.9g", names[f], o, i, m, r);
                finite += isfinite(m);
            }
            ck_assert_uint_eq(finite, ref[o].numel); /* no element unbounded */
        }
        tx_free(in, hl_graph_input_count(g));
        tx_free(ref, hl_graph_output_count(g));
        tx_free(mag, hl_graph_output_count(g));
        hl_graph_free(g);
    }
}
END_TEST

/* A candidate of x + (-x) that is off by a few ulps of x (what a candidate that computes
 * the two x's with different roundings gives) passes against the magnitude and fails
 * against the output's own RMS (0); a wrong candidate (2x) fails both. The same holds
 * for a sum whose terms nearly cancel. */
START_TEST(a_cancelling_sum_is_measured_by_its_terms)
{
    hl_graph *g = ops_graph();
    hl_tensor in[1], ref[10], mag[10], cand[10];
    tx_inputs(g, NULL, 5, in);
    tx_ref(g, NULL, in, ref);
    lm_err e = {0};
    ck_assert_int_eq(ll_output_magnitudes(g, NULL, in, mag, &e), 0);
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t o = 0; o < 10; o++) {
            int64_t d = (int64_t)ref[o].numel;
            ck_assert_int_eq(hl_tensor_init(&cand[o], ref[o].dtype, ref[o].ndim, ref[o].dims, &e),
                             0);
            (void)d;
            memcpy(cand[o].data, ref[o].data, ref[o].numel * hl_dtype_size(ref[o].dtype));
        }
        for (size_t i = 0; i < 8; i++) {
            double x = at(&in[0], i);
            /* pass 0: 2 ulps of x; pass 1: 2x, the sign flipped on one term */
            hl_tensor_set(&cand[0], i, pass == 0 ? ldexp(x, -23) : 2 * x);
        }
        ll_out_cmp res[10], old[10];
        lm_err es = {0}, eo = {0};
        int scaled = ll_compare_outputs_scaled(g, NULL, cand, ref, mag, res, &es);
        int plain = ll_compare_outputs(g, NULL, cand, ref, old, &eo);
        ck_assert_int_eq(plain, LM_EMISMATCH); /* 0 is the unit: any difference fails */
        ck_assert_uint_gt(old[0].n_bad, 0);
        if (pass == 0) {
            ck_assert_msg(scaled == 0, "%s", es.msg);
            ck_assert(res[0].max_err > 0 && res[0].max_err <= res[0].tol);
            ck_assert(res[0].scale > 0.1); /* the terms' size, not 0 */
        } else {
            ck_assert_int_eq(scaled, LM_EMISMATCH);
            ck_assert_uint_eq(res[0].n_bad, 8);
            ck_assert(res[0].max_err > 0.5);
            ck_assert_msg(strstr(es.msg, "output 0 'c'") && strstr(es.msg, "of its scale"), "%s",
                          es.msg);
            for (uint32_t o = 1; o < 10; o++)
                ck_assert_uint_eq(res[o].n_bad, 0); /* the others are the reference */
        }
        tx_free(cand, 10);
    }
    /* a magnitude of the wrong size is refused */
    hl_tensor_fini(&mag[3]);
    int64_t one = 1;
    ck_assert_int_eq(hl_tensor_init(&mag[3], HL_F32, 1, &one, &e), 0);
    lm_err_clear(&e);
    ck_assert_int_eq(ll_compare_outputs_scaled(g, NULL, ref, ref, mag, NULL, &e), LM_ESHAPE);
    ck_assert_msg(strstr(e.msg, "magnitude of output 3 'e'") != NULL, "%s", e.msg);
    tx_free(in, 1);
    tx_free(ref, 10);
    tx_free(mag, 10);
    hl_graph_free(g);
}
END_TEST

/* Without magnitudes an element is measured against max(|ref[i]|, rms): an element far
 * above the RMS (x*x has a heavy tail) may differ by its own few ulps. Before, the unit
 * was the RMS alone, and a correct candidate differing by 3.5 ulps of an element 2.3
 * times the RMS was refused (generated graph 59, tests/fuzz/data/regress). */
START_TEST(a_large_element_is_measured_by_its_own_size)
{
    /* y = x x + x x: tolerance 4 u32 (an Add on top of a Mul) */
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 8)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d);
    hl_output(g, "y", hl_add(g, hl_mul(g, x, x), hl_mul(g, x, x)));
    ck_assert(hl_graph_error(g)->code == 0);
    hl_tensor in[1], ref[1], cand[1];
    tx_inputs(g, NULL, 1, in);
    hl_tensor_set(&in[0], 0, 4.0); /* one large element: 32 against an RMS near 11.4 */
    tx_ref(g, NULL, in, ref);
    ck_assert_double_eq(at(&ref[0], 0), 32.0);
    lm_err e = {0};
    ck_assert_int_eq(hl_tensor_init(&cand[0], HL_F32, 1, ref[0].dims, &e), 0);
    memcpy(cand[0].data, ref[0].data, ref[0].numel * 4);
    double tol;
    ck_assert_int_eq(ll_output_tolerances(g, NULL, &tol, &e), 0);
    ck_assert_double_eq(tol, 4 * ldexp(1, -24));
    /* one ulp of 32: half the tolerance of the element, more than the tolerance of the RMS */
    hl_tensor_set(&cand[0], 0, nextafterf(32.0f, 64.0f));
    ll_out_cmp res;
    ck_assert_msg(ll_compare_outputs(g, NULL, cand, ref, &res, &e) == 0, "%s", e.msg);
    ck_assert_double_eq(res.max_err, tol / 2);
    ck_assert(ldexp(1, -18) / res.rms > tol); /* in RMS units it would have failed */
    /* and an error of the element's own scale fails */
    hl_tensor_set(&cand[0], 0, 33.0);
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, &res, &e), LM_EMISMATCH);
    tx_free(in, 1);
    tx_free(ref, 1);
    tx_free(cand, 1);
    hl_graph_free(g);
}
END_TEST

START_TEST(magnitudes_refuse_bad_arguments)
{
    lm_err e = {0};
    hl_tensor mag[1];
    ck_assert_int_eq(ll_output_magnitudes(NULL, NULL, NULL, mag, &e), LM_EARG);
    hl_graph *g = ops_graph();
    lm_err_clear(&e);
    ck_assert_int_eq(ll_output_magnitudes(g, NULL, NULL, mag, &e), LM_EARG);
    hl_graph_free(g);
}
END_TEST

/* A matmul (a Mul read only by its SumReduce) has the magnitude sqrt(sum_k (a_ik b_kj)^2),
 * built from the factors' magnitudes without the product at the broadcast shape: the
 * reference runtime runs the pair fused. */
START_TEST(a_matmul_is_measured_by_its_products)
{
    for (int bf = 0; bf < 2; bf++) {
        hl_dtype dt = bf ? HL_BF16 : HL_F32;
        hl_graph *g = hl_graph_new();
        hl_expr da[2] = {hl_n(g, 5), hl_n(g, 7)}, db[2] = {hl_n(g, 7), hl_n(g, 3)};
        hl_t a = hl_input(g, "a", dt, 2, da), b = hl_input(g, "b", dt, 2, db);
        hl_output(g, "c", hl_matmul(g, a, b));
        ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
        hl_tensor in[2], ref[1], mag[1];
        tx_inputs(g, NULL, 11, in);
        tx_ref(g, NULL, in, ref);
        lm_err e = {0};
        ck_assert_msg(ll_output_magnitudes(g, NULL, in, mag, &e) == 0, "%s", e.msg);
        ck_assert_uint_eq(mag[0].numel, 15);
        for (size_t i = 0; i < 5; i++)
            for (size_t j = 0; j < 3; j++) {
                double s2 = 0;
                for (size_t k = 0; k < 7; k++) {
                    double t = at(&in[0], i * 7 + k) * at(&in[1], k * 3 + j);
                    s2 += t * t;
                }
                double want = fmax(sqrt(s2), fabs(at(&ref[0], i * 3 + j)));
                NEAR(at(&mag[0], i * 3 + j), want);
            }
        tx_free(in, 2);
        tx_free(ref, 1);
        tx_free(mag, 1);
        hl_graph_free(g);
    }
}
END_TEST

static Suite *magnitude_suite(void)
{
    Suite *s = suite_create("llir_exec_magnitude");
    TCase *tc = tcase_create("magnitude");
    tcase_add_test(tc, each_op_has_its_magnitude);
    tcase_add_test(tc, a_cancelled_value_keeps_its_size);
    tcase_add_test(tc, the_magnitude_bounds_every_example);
    tcase_add_test(tc, a_cancelling_sum_is_measured_by_its_terms);
    tcase_add_test(tc, a_large_element_is_measured_by_its_own_size);
    tcase_add_test(tc, magnitudes_refuse_bad_arguments);
    tcase_add_test(tc, a_matmul_is_measured_by_its_products);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {magnitude_suite, NULL};
