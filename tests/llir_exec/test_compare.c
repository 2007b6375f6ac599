/* test_compare.c - the comparison of genome fuzzing: the tolerance of an output is the
 * documented sum of rounding weights along its worst path; a legitimately different
 * candidate (fused regions, a matmul with exact products) passes; a candidate with one
 * wrong op (an exp computed as exp2, an add dropped) fails, in f32 and bf16; non-finite
 * values and integers compare exactly. */
#include "ll_lower.h"
#include "tx.h"

#include <float.h>
#include <stdio.h>

/* ---- the tolerance ---- */

START_TEST(tolerance_is_the_sum_of_weights_on_the_worst_path)
{
    /* x bf16 [4, 16]: out0 = sum(exp2(x), 1) (exp2 then a 16-term sum); out1 = x (none);
     * out2 = cast(x, f32) + 1 (an exact widening, then one f32 add) */
    hl_graph *g = hl_graph_new();
    hl_expr d[2] = {hl_n(g, 4), hl_n(g, 16)};
    hl_t x = hl_input(g, "x", HL_BF16, 2, d);
    hl_output(g, "sum", hl_sum_reduce(g, hl_exp2(g, x), 1));
    hl_output(g, "x", x);
    hl_output(g, "plus", hl_add_scalar(g, hl_cast(g, x, HL_F32), 1.0f));
    ck_assert(hl_graph_error(g)->code == 0);
    double tol[3];
    lm_err e = {0};
    ck_assert_int_eq(ll_output_tolerances(g, NULL, tol, &e), 0);
    const double u32 = ldexp(1, -24), ub = ldexp(1, -8);
    ck_assert_double_eq(ll_unit_roundoff(HL_F32), u32);
    ck_assert_double_eq(ll_unit_roundoff(HL_BF16), ub);
    ck_assert_double_eq(ll_unit_roundoff(HL_INT), 0.0);
    double exp2w = 4 * u32 + 2 * ub, sumw = 2 * 15 * u32 + 2 * ub;
    ck_assert_double_eq_tol(tol[0], exp2w + sumw, 1e-15);
    ck_assert_double_eq(tol[1], 0.0);
    ck_assert_double_eq_tol(tol[2], 2 * u32, 1e-18);
    double w;
    ck_assert_int_eq(ll_node_rounding_weight(g, NULL, 1, &w, &e), 0); /* the exp2 */
    ck_assert_double_eq_tol(w, exp2w, 1e-15);
    hl_graph_free(g);
}
END_TEST

START_TEST(a_reduction_weight_grows_with_its_length)
{
    hl_graph *g = hl_graph_new();
    hl_expr k = hl_graph_dim(g, "k", 1, 1000, 10);
    hl_expr d[2] = {hl_n(g, 3), k};
    hl_output(g, "s", hl_sum_reduce(g, hl_input(g, "x", HL_F32, 2, d), 1));
    double t10, t100;
    lm_err e = {0};
    ck_assert_int_eq(ll_output_tolerances(g, NULL, &t10, &e), 0);
    ck_assert_int_eq(ll_output_tolerances(g, (int64_t[]){100}, &t100, &e), 0);
    ck_assert_double_eq_tol(t10, 2 * 9 * ldexp(1, -24), 1e-18);
    ck_assert_double_eq_tol(t100, 2 * 99 * ldexp(1, -24), 1e-18);
    ck_assert_int_eq(ll_output_tolerances(g, (int64_t[]){1001}, &t100, &e), LM_EDIM);
    hl_graph_free(g);
}
END_TEST

/* ---- a family of graphs with planted errors ---- */

typedef enum variant { V_OK = 0, V_EXP2, V_DROP_ADD } variant;

typedef struct fam {
    uint32_t probs, mm_sum, final; /* node ids: the softmax, the matmul's Sum, the last op */
} fam;

/* probs = softmax(2 * rms_norm(x, w)) over the last axis, exp as exp2(x * log2 e);
 * final = gelu_tanh(probs @ w2) + bias. V_EXP2 computes the exp as exp2(x) (no log2 e),
 * V_DROP_ADD leaves "+ bias" out. */
static hl_graph *family(hl_dtype dt, variant v, fam *ids)
{
    hl_graph *g = hl_graph_new();
    hl_expr dx[2] = {hl_n(g, 6), hl_n(g, 16)}, dw[1] = {hl_n(g, 16)};
    hl_expr dw2[2] = {hl_n(g, 16), hl_n(g, 8)}, db[1] = {hl_n(g, 8)};
    hl_t x = hl_input(g, "x", dt, 2, dx), w = hl_input(g, "w", dt, 1, dw);
    hl_t w2 = hl_input(g, "w2", dt, 2, dw2), bias = hl_input(g, "bias", dt, 1, db);
    hl_t z = hl_mul_scalar(g, hl_rms_norm(g, x, w, 1e-5f), 2.0f);
    int ax = 1;
    hl_t dz = hl_sub(g, z, hl_max(g, z, 1, &ax, true));
    hl_t ez = v == V_EXP2 ? hl_exp2(g, dz) : hl_exp(g, dz);
    hl_t probs = hl_div(g, ez, hl_sum(g, ez, 1, &ax, true));
    hl_output(g, "probs", probs);
    hl_t t = hl_matmul(g, probs, w2);
    hl_t u = hl_gelu_tanh(g, t);
    hl_t out = v == V_DROP_ADD ? u : hl_add(g, u, bias);
    hl_output(g, "final", out);
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    ids->probs = probs.node;
    ids->mm_sum = t.node;
    ids->final = out.node;
    return g;
}

/* The genome a search would like: two regions (the softmax, the epilogue) around a
 * KMatmul, everything else inline. */
static ll_graph *fused(const hl_graph *g, const fam *ids)
{
    uint32_t n = hl_graph_node_count(g);
    ll_lower_impl *impl = calloc(n, sizeof *impl);
    for (uint32_t id = 0; id < n; id++) {
        hl_op op = hl_graph_node(g, id)->op;
        impl[id] = (op == HL_OP_INPUT || op == HL_OP_OUTPUT) ? LL_LOWER_KERNEL : LL_LOWER_INLINE;
    }
    impl[ids->probs] = LL_LOWER_REGION;
    impl[ids->final] = LL_LOWER_REGION;
    impl[ids->mm_sum] = LL_LOWER_MATMUL;
    ll_lower_plan plan = {impl, NULL};
    lm_err e = {0};
    ll_graph *lg = ll__lower_hlir(g, &plan, &e);
    ck_assert_msg(lg != NULL, "%s", e.msg);
    free(impl);
    return lg;
}

/* Compares candidate lg (a lowering of some graph with g's inputs and outputs) with
 * hl_run(g) on seed's inputs; returns the code, per-output findings in res. */
static int compare(const hl_graph *g, const ll_graph *lg, uint64_t seed, ll_out_cmp *res, lm_err *e)
{
    hl_tensor in[4], ref[2], cand[2], mag[2];
    tx_inputs(g, NULL, seed, in);
    tx_ref(g, NULL, in, ref);
    tx_ll(lg, NULL, in, cand);
    int rc = ll_compare_outputs(g, NULL, cand, ref, res, e);
    /* against the outputs' magnitudes (what genome fuzzing uses) the verdict is the same */
    lm_err em = {0};
    ck_assert_msg(ll_output_magnitudes(g, NULL, in, mag, &em) == 0, "%s", em.msg);
    ll_out_cmp scaled[2];
    int rs = ll_compare_outputs_scaled(g, NULL, cand, ref, mag, scaled, &em);
    ck_assert_msg(rs == rc, "unscaled %d (%s), scaled %d (%s)", rc, e->msg, rs, em.msg);
    for (int o = 0; o < 2; o++)
        ck_assert_int_eq(scaled[o].n_bad > 0, res[o].n_bad > 0);
    tx_free(mag, 2);
    tx_free(in, 4);
    tx_free(ref, 2);
    tx_free(cand, 2);
    return rc;
}

static void legit_passes(hl_dtype dt)
{
    fam ids;
    hl_graph *g = family(dt, V_OK, &ids);
    ll_graph *lg = fused(g, &ids);
    uint32_t regions = 0, matmuls = 0;
    for (uint32_t id = 0; id < ll_graph_node_count(lg); id++) {
        const ll_node *n = ll_graph_node(lg, id);
        regions += n->kind == LL_REGION;
        matmuls += n->kind == LL_KERNEL && !strcmp(ll_op_get(n->op)->name, "KMatmul");
    }
    ck_assert_uint_eq(regions, 2);
    ck_assert_uint_eq(matmuls, 1);
    bool differs = false;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        ll_out_cmp res[2];
        lm_err e = {0};
        ck_assert_msg(compare(g, lg, seed, res, &e) == 0, "%s seed %llu: %s", hl_dtype_name(dt),
                      (unsigned long long)seed, e.msg);
        for (int o = 0; o < 2; o++) {
            ck_assert(res[o].tol > 0.0 && res[o].max_err <= res[o].tol && res[o].n_bad == 0);
            differs = differs || res[o].max_err > 0.0;
        }
    }
    ck_assert_msg(differs, "the fused candidate equals the reference bit for bit: the test "
                           "would not see a tolerance that is too tight");
    ll_graph_free(lg);
    hl_graph_free(g);
}

START_TEST(a_fused_f32_candidate_passes)
{
    legit_passes(HL_F32);
}
END_TEST

START_TEST(a_fused_bf16_candidate_passes)
{
    legit_passes(HL_BF16);
}
END_TEST

/* The candidate with one wrong op, as standalone kernels and fused, fails on output o. */
static void planted_fails(hl_dtype dt, variant v, uint32_t o)
{
    fam ids, bad_ids;
    hl_graph *g = family(dt, V_OK, &ids);
    hl_graph *bad = family(dt, v, &bad_ids);
    lm_err e = {0};
    ll_graph *cands[2] = {ll_graph_from_hlir(bad, &e), fused(bad, &bad_ids)};
    ck_assert_ptr_nonnull(cands[0]);
    for (int c = 0; c < 2; c++)
        for (uint64_t seed = 1; seed <= 5; seed++) {
            ll_out_cmp res[2];
            lm_err_clear(&e);
            ck_assert_int_eq(compare(g, cands[c], seed, res, &e), LM_EMISMATCH);
            ck_assert_uint_gt(res[o].n_bad, 0);
            ck_assert_uint_lt(res[o].first_bad, SIZE_MAX);
            ck_assert(res[o].max_err > res[o].tol);
            char want[64];
            snprintf(want, sizeof want, "output %u '%s'", o, o ? "final" : "probs");
            ck_assert_msg(strstr(e.msg, want) && strstr(e.msg, "candidate") &&
                              strstr(e.msg, "largest difference"),
                          "%s", e.msg);
            if (v == V_DROP_ADD) ck_assert_uint_eq(res[0].n_bad, 0); /* probs is right */
        }
    ll_graph_free(cands[0]);
    ll_graph_free(cands[1]);
    hl_graph_free(g);
    hl_graph_free(bad);
}

START_TEST(an_exp_computed_as_exp2_is_caught)
{
    planted_fails(HL_F32, V_EXP2, 0);
    planted_fails(HL_BF16, V_EXP2, 0);
}
END_TEST

START_TEST(a_dropped_add_is_caught)
{
    planted_fails(HL_F32, V_DROP_ADD, 1);
    planted_fails(HL_BF16, V_DROP_ADD, 1);
}
END_TEST

/* The examples as a genome that fuses everything it can: every node but Input, Output,
 * Gather and Scatter inside regions, a region root wherever a reader cannot fuse. Each
 * candidate must pass at the examples' small dims (every dim 3; the two graphs with
 * static d 2048 and hidden 8192 at 1, as in test_kernels.c). */
START_TEST(fused_examples_pass_the_comparison)
{
    static const char *names[] = {
        "causal_attention_bf16", "decode_mlp_bf16",         "elementwise_chain_f32_16m",
        "embedding_gather",      "layernorm_gelu_f32_4096", "llama_block_bf16",
        "matmul_bf16_4096",      "matmul_f32_2048",         "primitives_strided",
        "rmsnorm_f32_8192x4096", "softmax_f32_4096x8192",   "swiglu_mlp_bf16"};
    uint32_t narrow_differs = 0;
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/graphs/%s.json", LUMINAL_SOURCE_DIR, names[f]);
        lm_err he = {0};
        hl_graph *g = hl_graph_load_json(path, &he);
        ck_assert_msg(g != NULL, "%s", he.msg);
        uint32_t n = hl_graph_node_count(g);
        ll_lower_impl *impl = calloc(n, sizeof *impl);
        for (uint32_t id = 0; id < n; id++) {
            hl_op op = hl_graph_node(g, id)->op;
            bool fuse = op != HL_OP_INPUT && op != HL_OP_OUTPUT && op != HL_OP_GATHER &&
                        op != HL_OP_SCATTER;
            impl[id] = fuse ? LL_LOWER_INLINE : LL_LOWER_KERNEL;
        }
        for (uint32_t id = 0; id < n; id++) {
            const hl_node *h = hl_graph_node(g, id);
            for (uint32_t i = 0; i < h->n_in; i++)
                if (impl[id] == LL_LOWER_KERNEL && impl[h->in[i].node] == LL_LOWER_INLINE)
                    impl[h->in[i].node] = LL_LOWER_REGION;
        }
        ll_lower_plan plan = {impl, NULL};
        lm_err e = {0};
        ll_graph *lg = ll__lower_hlir(g, &plan, &e);
        ck_assert_msg(lg != NULL, "%s: %s", names[f], e.msg);
        int64_t dims[16];
        bool big = strstr(names[f], "swiglu") || strstr(names[f], "llama");
        tx_dims(g, big ? 1 : 3, dims);
        hl_tensor in[TX_MAX_IO], ref[TX_MAX_IO], cand[TX_MAX_IO];
        ll_out_cmp res[TX_MAX_IO];
        tx_inputs(g, dims, 7, in);
        tx_ref(g, dims, in, ref);
        tx_ll(lg, dims, in, cand);
        ck_assert_msg(ll_compare_outputs(g, dims, cand, ref, res, &e) == 0, "%s: %s", names[f],
                      e.msg);
        for (uint32_t o = 0; o < hl_graph_output_count(g); o++)
            if (res[o].max_err > 0.0 && ref[o].dtype == HL_BF16) narrow_differs++;
        tx_free(in, hl_graph_input_count(g));
        tx_free(ref, hl_graph_output_count(g));
        tx_free(cand, hl_graph_output_count(g));
        free(impl);
        ll_graph_free(lg);
        hl_graph_free(g);
    }
    ck_assert_uint_gt(narrow_differs, 0); /* the bf16 candidates do differ */
}
END_TEST

/* ---- exactness, non-finite values, mismatched layouts ---- */

/* out0 = x * x (f32); out1 = idx + idx (Int, no float upstream: exact). */
static hl_graph *small(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 8)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d), idx = hl_input(g, "idx", HL_INT, 1, d);
    hl_output(g, "sq", hl_mul(g, x, x));
    hl_output(g, "twice", hl_add(g, idx, idx));
    ck_assert(hl_graph_error(g)->code == 0);
    return g;
}

START_TEST(integers_compare_exactly_and_nonfinite_values_must_agree)
{
    hl_graph *g = small();
    hl_tensor in[2], ref[2], cand[2];
    tx_inputs(g, NULL, 1, in);
    tx_ref(g, NULL, in, ref);
    tx_ref(g, NULL, in, cand);
    ll_out_cmp res[2];
    lm_err e = {0};
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, &e), 0);
    ck_assert_double_eq(res[1].tol, 0.0);
    ck_assert_double_eq(res[0].max_err, 0.0);
    /* an integer off by one */
    ((int32_t *)cand[1].data)[3] += 1;
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, &e), LM_EMISMATCH);
    ck_assert_uint_eq(res[1].first_bad, 3);
    ck_assert_uint_eq(res[1].n_bad, 1);
    ck_assert_msg(strstr(e.msg, "output 1 'twice'") && strstr(e.msg, "element 3"), "%s", e.msg);
    ((int32_t *)cand[1].data)[3] -= 1;
    /* a NaN or an inf where the reference is finite */
    float keep = ((float *)cand[0].data)[5];
    ((float *)cand[0].data)[5] = NAN;
    lm_err_clear(&e);
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, &e), LM_EMISMATCH);
    ck_assert_uint_eq(res[0].first_bad, 5);
    ck_assert(isinf(res[0].max_err));
    ((float *)cand[0].data)[5] = INFINITY;
    lm_err_clear(&e);
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, &e), LM_EMISMATCH);
    /* NaN where the reference is NaN agrees; a finite value there does not */
    ((float *)ref[0].data)[5] = NAN;
    ((float *)cand[0].data)[5] = NAN;
    lm_err_clear(&e);
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, &e), 0);
    ((float *)cand[0].data)[5] = keep;
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, &e), LM_EMISMATCH);
    /* a difference within tol * RMS passes, one just beyond it fails */
    ((float *)ref[0].data)[5] = keep;
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, (lm_err_clear(&e), &e)), 0);
    double step = res[0].tol * res[0].rms;
    ck_assert(step > 0.0);
    float r = ((float *)ref[0].data)[2];
    ((float *)cand[0].data)[2] = (float)(r + 0.5 * step);
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, (lm_err_clear(&e), &e)), 0);
    ((float *)cand[0].data)[2] = (float)(r + 4.0 * step);
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, res, (lm_err_clear(&e), &e)),
                     LM_EMISMATCH);
    ck_assert_uint_eq(res[0].first_bad, 2);
    tx_free(in, 2);
    tx_free(ref, 2);
    tx_free(cand, 2);
    hl_graph_free(g);
}
END_TEST

START_TEST(an_output_of_another_dtype_or_shape_is_refused)
{
    hl_graph *g = small();
    hl_tensor in[2], ref[2], cand[2];
    tx_inputs(g, NULL, 1, in);
    tx_ref(g, NULL, in, ref);
    tx_ref(g, NULL, in, cand);
    lm_err e = {0};
    cand[0].dtype = HL_INT;
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, NULL, &e), LM_EDTYPE);
    cand[0].dtype = HL_F32;
    cand[0].dims[0] = 4;
    cand[0].numel = 4;
    lm_err_clear(&e);
    ck_assert_int_eq(ll_compare_outputs(g, NULL, cand, ref, NULL, &e), LM_ESHAPE);
    tx_free(in, 2);
    tx_free(ref, 2);
    tx_free(cand, 2);
    hl_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llir_exec_compare");
    TCase *t = tcase_create("compare");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, tolerance_is_the_sum_of_weights_on_the_worst_path);
    tcase_add_test(t, a_reduction_weight_grows_with_its_length);
    tcase_add_test(t, a_fused_f32_candidate_passes);
    tcase_add_test(t, a_fused_bf16_candidate_passes);
    tcase_add_test(t, an_exp_computed_as_exp2_is_caught);
    tcase_add_test(t, a_dropped_add_is_caught);
    tcase_add_test(t, fused_examples_pass_the_comparison);
    tcase_add_test(t, integers_compare_exactly_and_nonfinite_values_must_agree);
    tcase_add_test(t, an_output_of_another_dtype_or_shape_is_refused);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
