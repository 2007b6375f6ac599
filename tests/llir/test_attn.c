/* test_attn.c - the CPU executor's fused attention (KAttn, KAttnMask; docs/llir.md,
 * "Attention") against an attention written here in f64 from the node's definition, on
 * graphs the compiler's rules fuse (tests/rules/attn): the most fused genome's program
 * holds the fused node and nothing that computes attention otherwise.
 *
 *   - causal, Sq = Skv, at S = 1, 5 and 13 (S not a multiple of any tile);
 *   - causal with a KV cache longer than the queries (bottom-right aligned: query i sees
 *     keys up to i + Skv - Sq), Sq = 3, Skv = 17 and Sq = 16, Skv = 16;
 *   - an additive mask input, one of whose rows is -inf for every key: that row is 0,
 *     never NaN, and the other rows are the softmax over the keys the mask leaves;
 *   - GQA, K and V read through a broadcast view;
 * each element within 2^-6 relative (bf16 and f16 outputs: one rounding of the result and
 * f32 arithmetic before it) of the f64 value, and the program agrees with the reference
 * runtime by llir's comparison wherever the graph is finite. */
#include "tl.h"

#include <math.h>

typedef struct run {
    hl_graph *g;
    tl_env t;
    ll_graph *lg;
    uint32_t attn; /* the fused node */
    int64_t dims[4];
    hl_tensor in[4], out[1];
} run;

static char *compiler_rules(void)
{
    FILE *f = fopen(LUMINAL_SOURCE_DIR "/rules.dsl", "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* Loads tests/rules/attn/NAME.json, saturates it, builds its most fused program and the
 * inputs at the dims (by the graph's dim order), seeded. */
static void run_init(run *r, const char *name, const int64_t *dims)
{
    memset(r, 0, sizeof *r);
    char path[512];
    snprintf(path, sizeof path, "%s/tests/rules/attn/%s.json", LUMINAL_SOURCE_DIR, name);
    r->g = tl_load(path);
    char *rules = compiler_rules();
    lm_err err = {0};
    ck_assert_msg(tl_try(&r->t, r->g, rules, &err) == LM_OK, "%s", err.msg);
    free(rules);
    ll_genome gn;
    ck_assert_int_eq(ll_genome_init(&gn, r->t.s, &err), 0);
    ck_assert_msg(ll_genome_most_fused(&gn, r->t.s, &err) == 0, "%s", err.msg);
    r->lg = tl_graph(r->t.s, &gn);
    ll_genome_fini(&gn);
    r->attn = LM_NONE;
    for (uint32_t i = 0; i < ll_graph_node_count(r->lg); i++) {
        const ll_node *n = ll_graph_node(r->lg, i);
        ck_assert_msg(n->kind != LL_LIBRARY && n->kind != LL_REGION, "%s: a %s beside the fused node",
                      name, ll_op_get(n->op)->name);
        if (n->kind == LL_KERNEL && ll_op_is_attn(n->op)) r->attn = i;
    }
    ck_assert_msg(r->attn != LM_NONE, "%s: no fused attention in the most fused program", name);
    uint32_t nd = hl_graph_dim_count(r->g);
    for (uint32_t i = 0; i < nd; i++)
        r->dims[i] = dims[i];
    for (uint32_t i = 0; i < hl_graph_input_count(r->g); i++) {
        const hl_node *x = hl_graph_node(r->g, hl_graph_input(r->g, i));
        int64_t d[HL_MAX_DIMS];
        for (uint32_t k = 0; k < x->ndim; k++) {
            lm_err e = {0};
            hl_env env = {0};
            int64_t vals[8];
            bool bound[8];
            uint32_t nv = hl_var_count(hl_graph_exprs_c(r->g));
            ck_assert_uint_le(nv, 8);
            for (uint32_t v = 0; v < nv; v++) {
                bound[v] = false;
                for (uint32_t j = 0; j < nd; j++)
                    if (hl_graph_dim_at(r->g, j)->var == v) vals[v] = dims[j], bound[v] = true;
            }
            env = (hl_env){vals, bound, nv};
            ck_assert_int_eq(hl_e_eval(hl_graph_exprs_c(r->g), x->shape[k], &env, 0, &d[k], &e), 0);
        }
        lm_err e = {0};
        ck_assert_int_eq(hl_tensor_init(&r->in[i], x->dtype, x->ndim, d, &e), HL_OK);
        ck_assert_int_eq(hl_graph_fill_input(r->g, i, &r->in[i], 11, &e), HL_OK);
    }
}

static void run_fini(run *r)
{
    for (int i = 0; i < 4; i++)
        hl_tensor_fini(&r->in[i]);
    hl_tensor_fini(&r->out[0]);
    ll_graph_free(r->lg);
    tl_fini(&r->t);
    hl_graph_free(r->g);
}

static void run_exec(run *r)
{
    lm_err err = {0};
    ck_assert_msg(ll_run(r->lg, r->dims, r->in, r->out, 0, &err) == 0, "%s", err.msg);
}

/* The f64 attention of the node's definition over q [L, Sq, D], k and v [L / G, Skv, D]
 * (G query heads per KV head: the inputs as stored), mask [L, Sq, Skv] or NULL; checks
 * every element of the output. Returns the number of fully masked rows seen. */
static int check_f64(const run *r, int64_t nl, int64_t group, int64_t sq, int64_t skv, int64_t d,
                     double scale, bool causal, const hl_tensor *mask)
{
    const hl_tensor *q = &r->in[0], *k = &r->in[1], *v = &r->in[2], *o = &r->out[0];
    ck_assert_uint_eq(o->numel, (size_t)(nl * sq * d));
    int masked_rows = 0;
    double *s = malloc((size_t)skv * sizeof *s);
    ck_assert_ptr_nonnull(s);
    for (int64_t l = 0; l < nl; l++)
        for (int64_t i = 0; i < sq; i++) {
            double m = -INFINITY;
            for (int64_t j = 0; j < skv; j++) {
                double dot = 0;
                for (int64_t c = 0; c < d; c++)
                    dot += hl_tensor_get(q, (size_t)((l * sq + i) * d + c)) *
                           hl_tensor_get(k, (size_t)(((l / group) * skv + j) * d + c));
                s[j] = scale * dot;
                if (mask) s[j] += hl_tensor_get(mask, (size_t)((l * sq + i) * skv + j));
                if (causal && j > i + (skv - sq)) s[j] = -INFINITY;
                if (s[j] > m) m = s[j];
            }
            bool all = !(m > -INFINITY);
            masked_rows += all;
            for (int64_t c = 0; c < d; c++) {
                double num = 0, den = 0;
                for (int64_t j = 0; j < skv && !all; j++) {
                    double p = exp(s[j] - m);
                    den += p;
                    num += p * hl_tensor_get(v, (size_t)(((l / group) * skv + j) * d + c));
                }
                double want = all ? 0.0 : num / den;
                double got = hl_tensor_get(o, (size_t)((l * sq + i) * d + c));
                ck_assert_msg(!isnan(got), "row %lld of head %lld: NaN", (long long)i, (long long)l);
                if (all)
                    ck_assert_msg(got == 0.0, "a fully masked row gives %g, not 0", got);
                else
                    ck_assert_msg(fabs(got - want) <= 0x1p-6 * (fabs(want) + 0.25),
                                  "head %lld, row %lld, col %lld: %.9g, f64 %.9g", (long long)l,
                                  (long long)i, (long long)c, got, want);
            }
        }
    free(s);
    return masked_rows;
}

/* The program agrees with the reference runtime (llir's comparison and tolerances). */
static void agrees_with_the_reference(run *r)
{
    hl_tensor ref[1];
    lm_err err = {0};
    ck_assert_msg(hl_run(r->g, r->dims, r->in, ref, NULL, &err) == HL_OK, "%s", err.msg);
    ll_out_cmp cmp[1];
    ck_assert_msg(ll_compare_outputs(r->g, r->dims, r->out, ref, cmp, &err) == 0, "%s", err.msg);
    hl_tensor_fini(&ref[0]);
}

START_TEST(causal_attention_at_odd_sizes)
{
    static const int64_t sizes[] = {1, 5, 13};
    for (size_t i = 0; i < 3; i++) {
        run r;
        run_init(&r, "op_causal", &sizes[i]);
        ck_assert(ll_graph_node(r.lg, r.attn)->at.causal);
        run_exec(&r);
        ck_assert_int_eq(check_f64(&r, 2, 1, sizes[i], sizes[i], 8, 1 / sqrt(8.0), true, NULL), 0);
        agrees_with_the_reference(&r);
        run_fini(&r);
    }
}
END_TEST

START_TEST(a_kv_cache_longer_than_the_queries_is_aligned_bottom_right)
{
    static const int64_t dims[][2] = {{3, 17}, {16, 16}, {1, 37}};
    for (size_t i = 0; i < 3; i++) {
        run r;
        run_init(&r, "kv_cache_causal", dims[i]);
        ck_assert(ll_graph_node(r.lg, r.attn)->at.causal);
        run_exec(&r);
        ck_assert_int_eq(
            check_f64(&r, 2, 1, dims[i][0], dims[i][1], 8, 1 / sqrt(8.0), true, NULL), 0);
        agrees_with_the_reference(&r);
        run_fini(&r);
    }
}
END_TEST

START_TEST(a_fully_masked_row_is_zero)
{
    int64_t s = 5;
    run r;
    run_init(&r, "mask_input", &s);
    const ll_node *n = ll_graph_node(r.lg, r.attn);
    ck_assert_uint_eq(n->n_in, 4);
    ck_assert(!n->at.causal);
    /* the graph's scale: 0.35355339 rounded to bf16, as the node holds it */
    double scale = n->at.scale;
    ck_assert(fabs(scale - 0.35355339) < 0x1p-8);
    run_exec(&r);
    ck_assert_int_eq(check_f64(&r, 2, 1, s, s, 8, scale, false, &r.in[3]), 0);
    agrees_with_the_reference(&r);
    hl_tensor_fini(&r.out[0]);
    /* head 1, row 2: every key -inf; row 3: all but key 4 */
    for (int64_t j = 0; j < s; j++) {
        hl_tensor_set(&r.in[3], (size_t)((1 * s + 2) * s + j), -INFINITY);
        if (j != 4) hl_tensor_set(&r.in[3], (size_t)((1 * s + 3) * s + j), -INFINITY);
    }
    run_exec(&r);
    ck_assert_int_eq(check_f64(&r, 2, 1, s, s, 8, scale, false, &r.in[3]), 1);
    /* row 3 sees key 4 alone: v's row 4 exactly (rounded) */
    for (int64_t c = 0; c < 8; c++)
        ck_assert_double_eq(hl_tensor_get(&r.out[0], (size_t)((1 * s + 3) * 8 + c)),
                            hl_tensor_get(&r.in[2], (size_t)((1 * s + 4) * 8 + c)));
    run_fini(&r);
}
END_TEST

START_TEST(gqa_reads_k_and_v_through_the_broadcast)
{
    static const int64_t sizes[] = {1, 7};
    for (size_t i = 0; i < 2; i++) {
        run r;
        run_init(&r, "gqa", &sizes[i]);
        run_exec(&r);
        /* q [2, 2, S, 8]: 4 query heads; k, v [2, 1, S, 8]: head h reads KV head h / 2 */
        ck_assert_int_eq(check_f64(&r, 4, 2, sizes[i], sizes[i], 8, 1 / sqrt(8.0), true, NULL), 0);
        agrees_with_the_reference(&r);
        run_fini(&r);
    }
}
END_TEST

static Suite *attn_suite(void)
{
    Suite *s = suite_create("attn");
    TCase *tc = tcase_create("exec");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, causal_attention_at_odd_sizes);
    tcase_add_test(tc, a_kv_cache_longer_than_the_queries_is_aligned_bottom_right);
    tcase_add_test(tc, a_fully_masked_row_is_zero);
    tcase_add_test(tc, gqa_reads_k_and_v_through_the_broadcast);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {attn_suite, NULL};
