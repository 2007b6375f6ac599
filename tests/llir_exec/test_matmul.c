/* test_matmul.c - KMatmul and Blas against a triple loop written here: every order of A
 * and B, leading dims larger than the matrix, batches with a broadcast operand (stride
 * 0), alpha, beta with a residual, bias, gelu, bf16 and f32; and the matmul the lowering
 * derives from an hl_matmul's Mul + Sum, with transposed operands. */
#include "ll_build.h"
#include "ll_lower.h"
#include "tx.h"

#include <stdio.h>

/* ---- the triple loop ---- */

typedef struct mm_case {
    int64_t m, n, k, batch, lda, ldb, sa, sb;
    ll_order oa, ob;
    double alpha;
    bool residual, bias, gelu;
    hl_dtype ta, tb, tc, tbias, td;
} mm_case;

static float elem(const hl_tensor *t, int64_t i)
{
    return (float)hl_tensor_get(t, (size_t)i);
}

static float gelu_ref(float x)
{
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

/* D[b, i, j] as the contract of ll_matmul states it. */
static float expected(const mm_case *c, const hl_tensor *A, const hl_tensor *B, const hl_tensor *C,
                      const hl_tensor *bias, int64_t b, int64_t i, int64_t j)
{
    float acc = 0.0f;
    for (int64_t k = 0; k < c->k; k++) {
        int64_t pa = b * c->sa + (c->oa == LL_ROW_MAJOR ? i * c->lda + k : i + k * c->lda);
        int64_t pb = b * c->sb + (c->ob == LL_ROW_MAJOR ? k * c->ldb + j : k + j * c->ldb);
        acc = fmaf(elem(A, pa), elem(B, pb), acc); /* the exact product, one rounding */
    }
    float t = (float)c->alpha * acc;
    if (c->residual) t += elem(C, (b * c->m + i) * c->n + j);
    if (c->bias) t += elem(bias, j);
    if (c->gelu) t = gelu_ref(t);
    return hl_round_to(c->td, t);
}

/* ---- building the node by hand ---- */

static uint32_t push(ll_graph *g, const ll_node *n)
{
    lm_err e = {0};
    uint32_t id = ll__graph_push(g, n, &e);
    ck_assert_msg(id != LM_NONE, "%s", e.msg);
    return id;
}

static uint32_t push_input(ll_graph *g, uint32_t index, hl_dtype dt, int64_t len)
{
    ll_node n;
    ll__node_init(&n, LL_INPUT, ll_op_find("Input"));
    char name[16];
    snprintf(name, sizeof name, "in%u", index);
    n.dtype = dt;
    n.ndim = 1;
    n.shape[0] = hl_e_num(ll__graph_pool(g), len);
    n.prim.name = name;
    n.prim.index = index;
    return push(g, &n);
}

static uint32_t push_output(ll_graph *g, uint32_t src, hl_dtype dt, uint32_t ndim,
                            const hl_expr *dims)
{
    ll_node n;
    ll__node_init(&n, LL_OUTPUT, ll_op_find("Output"));
    n.dtype = dt;
    n.ndim = ndim;
    memcpy(n.shape, dims, ndim * sizeof *dims);
    n.n_in = 1;
    n.in[0] = src;
    n.in_dtype[0] = dt;
    n.prim.name = "d";
    n.prim.index = 0;
    hl_error he;
    hl_error_clear(&he);
    ck_assert(hl_view_contiguous(ll__graph_pool(g), ndim, dims, &n.prim.in[0].view, &he) == 0);
    return push(g, &n);
}

/* Elements an operand needs to hold every position the case reads. */
static int64_t reach(int64_t batch, int64_t stride, int64_t rows, int64_t cols, int64_t ld,
                     ll_order o)
{
    return (batch - 1) * stride +
           (o == LL_ROW_MAJOR ? (rows - 1) * ld + cols : (cols - 1) * ld + rows);
}

/* A graph of inputs A, B, [C], [bias] and one Blas (or KMatmul) node, and its output;
 * A is declared `short_a` elements shorter than the case reads. */
static ll_graph *case_graph(const mm_case *c, bool blas, int64_t *len, int64_t short_a)
{
    lm_err e = {0};
    ll_graph *g = ll__graph_alloc(&e);
    ck_assert_ptr_nonnull(g);
    hl_expr_pool *p = ll__graph_pool(g);
    len[0] = reach(c->batch, c->sa, c->m, c->k, c->lda, c->oa) - short_a;
    len[1] = reach(c->batch, c->sb, c->k, c->n, c->ldb, c->ob);
    len[2] = c->batch * c->m * c->n;
    len[3] = c->n;
    uint32_t in[4], nin = 0;
    in[nin] = push_input(g, nin, c->ta, len[0]), nin++;
    in[nin] = push_input(g, nin, c->tb, len[1]), nin++;
    if (c->residual) in[nin] = push_input(g, nin, c->tc, len[2]), nin++;
    if (c->bias) in[nin] = push_input(g, nin, c->tbias, len[3]), nin++;
    ll_node n;
    ll__node_init(&n, blas ? LL_LIBRARY : LL_KERNEL, ll_op_find(blas ? "Blas" : "KMatmul"));
    n.dtype = c->td;
    n.ndim = 3;
    hl_expr dims[3] = {hl_e_num(p, c->batch), hl_e_num(p, c->m), hl_e_num(p, c->n)};
    memcpy(n.shape, dims, sizeof dims);
    n.n_in = nin;
    hl_dtype types[4] = {c->ta, c->tb, c->residual ? c->tc : c->tbias, c->tbias};
    for (uint32_t i = 0; i < nin; i++) {
        n.in[i] = in[i];
        n.in_dtype[i] = types[i];
    }
    ll_matmul *mm = &n.mm;
    mm->m = hl_e_num(p, c->m);
    mm->n = hl_e_num(p, c->n);
    mm->k = hl_e_num(p, c->k);
    mm->batch = hl_e_num(p, c->batch);
    mm->lda = hl_e_num(p, c->lda);
    mm->ldb = hl_e_num(p, c->ldb);
    mm->stride_a = hl_e_num(p, c->sa);
    mm->stride_b = hl_e_num(p, c->sb);
    mm->order_a = c->oa;
    mm->order_b = c->ob;
    mm->alpha = c->alpha;
    mm->beta = c->residual ? 1.0 : 0.0;
    mm->epilogue = (c->bias ? LL_EPI_BIAS : 0) | (c->gelu ? LL_EPI_GELU : 0);
    mm->type_a = c->ta;
    mm->type_b = c->tb;
    mm->type_c = c->tc;
    mm->type_d = c->td;
    mm->type_bias = c->tbias;
    uint32_t id = push(g, &n);
    push_output(g, id, c->td, 3, dims);
    ck_assert_msg(ll__graph_finish(g, &e) == 0, "%s", e.msg);
    return g;
}

static void check_case(const mm_case *c, bool blas, uint64_t seed)
{
    int64_t len[4];
    ll_graph *g = case_graph(c, blas, len, 0);
    hl_tensor in[4], out;
    hl_dtype types[4] = {c->ta, c->tb, c->residual ? c->tc : c->tbias, c->tbias};
    int64_t lens[4] = {len[0], len[1], c->residual ? len[2] : len[3], len[3]};
    uint32_t nin = ll_graph_input_count(g);
    for (uint32_t i = 0; i < nin; i++) {
        hl_error he;
        hl_error_clear(&he);
        ck_assert(hl_tensor_init(&in[i], types[i], 1, &lens[i], &he) == 0);
        hl_tensor_fill_random(&in[i], seed, i);
    }
    tx_ll(g, NULL, in, &out);
    ck_assert_uint_eq((uint64_t)out.numel, (uint64_t)(c->batch * c->m * c->n));
    ck_assert_int_eq(out.dtype, c->td);
    const hl_tensor *C = c->residual ? &in[2] : NULL;
    const hl_tensor *bias = c->bias ? &in[c->residual ? 3 : 2] : NULL;
    size_t o = 0;
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t j = 0; j < c->n; j++, o++) {
                float want = expected(c, &in[0], &in[1], C, bias, b, i, j);
                float got = (float)hl_tensor_get(&out, o);
                ck_assert_msg(got == want || (isnan(got) && isnan(want)),
                              "orders %d%d batch %lld: D[%lld, %lld, %lld] = %.9g, want %.9g",
                              c->oa, c->ob, (long long)c->batch, (long long)b, (long long)i,
                              (long long)j, got, want);
            }
    tx_free(in, nin);
    hl_tensor_fini(&out);
    ll_graph_free(g);
}

/* The plain case: M 5, N 6, K 7, leading dims padded past the matrix, batch 3. */
static mm_case base_case(ll_order oa, ll_order ob, hl_dtype dt)
{
    mm_case c = {0};
    c.m = 5, c.n = 6, c.k = 7, c.batch = 3;
    c.oa = oa, c.ob = ob;
    c.lda = oa == LL_ROW_MAJOR ? c.k + 2 : c.m + 1;
    c.ldb = ob == LL_ROW_MAJOR ? c.n + 3 : c.k + 1;
    c.sa = (oa == LL_ROW_MAJOR ? c.m : c.k) * c.lda;
    c.sb = (ob == LL_ROW_MAJOR ? c.k : c.n) * c.ldb;
    c.alpha = 1.0;
    c.ta = c.tb = c.tc = c.tbias = c.td = dt;
    return c;
}

START_TEST(every_order_combination_matches_the_loop)
{
    hl_dtype dts[2] = {HL_F32, HL_BF16};
    for (int d = 0; d < 2; d++)
        for (int oa = 0; oa < 2; oa++)
            for (int ob = 0; ob < 2; ob++) {
                mm_case c = base_case((ll_order)oa, (ll_order)ob, dts[d]);
                check_case(&c, true, 1);
                check_case(&c, false, 2); /* KMatmul: the same contract, beta 0 */
            }
}
END_TEST

START_TEST(a_broadcast_batch_reads_one_matrix)
{
    for (int which = 0; which < 2; which++) {
        mm_case c = base_case(LL_ROW_MAJOR, LL_COL_MAJOR, HL_BF16);
        if (which == 0)
            c.sa = 0; /* every batch multiplies the same A */
        else
            c.sb = 0;
        check_case(&c, true, 3);
    }
}
END_TEST

START_TEST(alpha_residual_bias_and_gelu_in_f32_then_one_rounding)
{
    for (int d = 0; d < 2; d++)
        for (int epi = 0; epi < 4; epi++) {
            mm_case c = base_case(LL_COL_MAJOR, LL_ROW_MAJOR, d ? HL_BF16 : HL_F32);
            c.alpha = 0.125; /* exact in every dtype */
            c.residual = true;
            c.bias = epi & 1;
            c.gelu = (epi & 2) != 0;
            check_case(&c, true, 4 + (uint64_t)epi);
            c.residual = false;
            check_case(&c, true, 8 + (uint64_t)epi);
        }
    /* mixed dtypes: bf16 operands, an f32 residual and bias, an f32 result */
    mm_case c = base_case(LL_ROW_MAJOR, LL_ROW_MAJOR, HL_BF16);
    c.residual = c.bias = c.gelu = true;
    c.tc = c.tbias = c.td = HL_F32;
    c.alpha = 0.7; /* as the node holds it */
    check_case(&c, true, 12);
}
END_TEST

START_TEST(a_matmul_reaching_outside_an_operand_fails)
{
    /* A declared one element shorter than lda and stride_a reach */
    mm_case c = base_case(LL_ROW_MAJOR, LL_ROW_MAJOR, HL_F32);
    int64_t len[4];
    ll_graph *g = case_graph(&c, true, len, 1);
    hl_tensor in[2], out;
    for (int i = 0; i < 2; i++) {
        hl_error he;
        hl_error_clear(&he);
        ck_assert(hl_tensor_init(&in[i], HL_F32, 1, &len[i], &he) == 0);
    }
    lm_err e = {0};
    ck_assert_int_eq(ll_run(g, NULL, in, &out, 0, &e), LM_ERUNTIME);
    char want[96];
    snprintf(want, sizeof want, "A reaches element %lld of a buffer of %lld elements",
             (long long)len[0], (long long)len[0]);
    ck_assert_msg(strstr(e.msg, want) && strstr(e.msg, "(Blas library call"), "%s", e.msg);
    ck_assert_ptr_null(out.data);
    tx_free(in, 2);
    ll_graph_free(g);
}
END_TEST

/* ---- the matmul the lowering derives from hl_matmul ---- */

/* a [batch?, M, K] (or stored transposed) times b [K, N] (or stored transposed). */
static hl_graph *hl_mm_graph(bool ta, bool tb, bool batched, hl_dtype dt, uint32_t *sum)
{
    const int64_t M = 3, N = 5, K = 4, Bt = 2;
    hl_graph *g = hl_graph_new();
    hl_expr da[3], db[2];
    uint32_t na = 0;
    if (batched) da[na++] = hl_n(g, Bt);
    da[na++] = hl_n(g, ta ? K : M);
    da[na++] = hl_n(g, ta ? M : K);
    db[0] = hl_n(g, tb ? N : K);
    db[1] = hl_n(g, tb ? K : N);
    hl_t a = hl_input(g, "a", dt, na, da), b = hl_input(g, "b", dt, 2, db);
    if (ta) a = hl_transpose(g, a, -1, -2);
    if (tb) b = hl_transpose(g, b, -1, -2);
    hl_t c = hl_matmul(g, a, b);
    *sum = c.node;
    hl_output(g, "c", c);
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    return g;
}

static ll_graph *lower_mm(const hl_graph *g, uint32_t sum, ll_lower_impl how,
                          const ll_lower_blas *extra)
{
    uint32_t n = hl_graph_node_count(g);
    ll_lower_impl *impl = calloc(n, sizeof *impl);
    ll_lower_blas *bl = calloc(n, sizeof *bl);
    impl[hl_graph_node(g, sum)->in[0].node] = LL_LOWER_INLINE;
    impl[sum] = how;
    if (extra) bl[sum] = *extra;
    ll_lower_plan plan = {impl, bl};
    lm_err e = {0};
    ll_graph *lg = ll__lower_hlir(g, &plan, &e);
    ck_assert_msg(lg != NULL, "%s", e.msg);
    free(impl);
    free(bl);
    return lg;
}

static int64_t eval(const ll_graph *g, hl_expr e)
{
    int64_t v;
    hl_error he;
    hl_error_clear(&he);
    ck_assert(hl_e_eval(ll_graph_exprs(g), e, NULL, 0, &v, &he) == 0);
    return v;
}

START_TEST(the_lowering_derives_orders_and_leading_dims)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int batched = 0; batched < 2; batched++) {
                uint32_t sum;
                hl_graph *g = hl_mm_graph(ta, tb, batched, HL_F32, &sum);
                ll_graph *lg = lower_mm(g, sum, LL_LOWER_MATMUL, NULL);
                const ll_node *mn = NULL;
                for (uint32_t id = 0; id < ll_graph_node_count(lg); id++)
                    if (ll_graph_node(lg, id)->kind == LL_KERNEL) mn = ll_graph_node(lg, id);
                ck_assert_ptr_nonnull(mn);
                ck_assert_str_eq(ll_op_get(mn->op)->name, "KMatmul");
                const ll_matmul *mm = &mn->mm;
                ck_assert_int_eq(mm->order_a, ta ? LL_COL_MAJOR : LL_ROW_MAJOR);
                ck_assert_int_eq(mm->order_b, tb ? LL_COL_MAJOR : LL_ROW_MAJOR);
                ck_assert_int_eq(eval(lg, mm->m), 3);
                ck_assert_int_eq(eval(lg, mm->n), 5);
                ck_assert_int_eq(eval(lg, mm->k), 4);
                ck_assert_int_eq(eval(lg, mm->lda), ta ? 3 : 4);
                ck_assert_int_eq(eval(lg, mm->ldb), tb ? 4 : 5);
                ck_assert_int_eq(eval(lg, mm->batch), batched ? 2 : 1);
                ck_assert_int_eq(eval(lg, mm->stride_a), batched ? 12 : 0);
                ck_assert_int_eq(eval(lg, mm->stride_b), 0); /* b is broadcast */
                ck_assert(mm->beta == 0.0 && mm->alpha == 1.0 && mm->epilogue == LL_EPI_NONE);
                /* the product against a loop over the logical matrices */
                hl_tensor in[2], got;
                tx_inputs(g, NULL, 5, in);
                tx_ll(lg, NULL, in, &got);
                size_t o = 0;
                for (int64_t b = 0; b < (batched ? 2 : 1); b++)
                    for (int64_t i = 0; i < 3; i++)
                        for (int64_t j = 0; j < 5; j++, o++) {
                            float acc = 0.0f;
                            for (int64_t k = 0; k < 4; k++) {
                                int64_t pa = b * 12 + (ta ? k * 3 + i : i * 4 + k);
                                int64_t pb = tb ? j * 4 + k : k * 5 + j;
                                acc = fmaf(elem(&in[0], pa), elem(&in[1], pb), acc);
                            }
                            ck_assert_msg((float)hl_tensor_get(&got, o) == acc,
                                          "ta %d tb %d batched %d: element %zu", ta, tb, batched,
                                          o);
                        }
                tx_free(in, 2);
                hl_tensor_fini(&got);
                ll_graph_free(lg);
                hl_graph_free(g);
            }
}
END_TEST

START_TEST(a_lowered_blas_with_extras_matches_the_loop)
{
    /* c = gelu(0.5 * a b + r + bias) with a bf16 [2, 3, 4], b [4, 5] */
    const int64_t M = 3, N = 5, K = 4, Bt = 2;
    hl_graph *g = hl_graph_new();
    hl_expr da[3] = {hl_n(g, Bt), hl_n(g, M), hl_n(g, K)}, db[2] = {hl_n(g, K), hl_n(g, N)};
    hl_expr dr[3] = {hl_n(g, Bt), hl_n(g, M), hl_n(g, N)}, dbias[1] = {hl_n(g, N)};
    hl_t a = hl_input(g, "a", HL_BF16, 3, da), b = hl_input(g, "b", HL_BF16, 2, db);
    hl_t r = hl_input(g, "r", HL_BF16, 3, dr), bias = hl_input(g, "bias", HL_F32, 1, dbias);
    hl_t c = hl_matmul(g, a, b);
    hl_output(g, "c", c);
    ck_assert(hl_graph_error(g)->code == 0);
    ll_lower_blas x = {0.5, HL_BF16, r.node, bias.node, true};
    ll_graph *lg = lower_mm(g, c.node, LL_LOWER_BLAS, &x);
    hl_tensor in[4], got;
    tx_inputs(g, NULL, 6, in);
    tx_ll(lg, NULL, in, &got);
    ck_assert_int_eq(got.dtype, HL_BF16);
    size_t o = 0;
    for (int64_t bb = 0; bb < Bt; bb++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++, o++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < K; k++)
                    acc = fmaf(elem(&in[0], (bb * M + i) * K + k), elem(&in[1], k * N + j), acc);
                float t = gelu_ref(0.5f * acc + elem(&in[2], (int64_t)o) + elem(&in[3], j));
                ck_assert_msg((float)hl_tensor_get(&got, o) == hl_round_to(HL_BF16, t),
                              "element %zu", o);
            }
    tx_free(in, 4);
    hl_tensor_fini(&got);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

START_TEST(a_mul_that_is_no_matmul_is_refused)
{
    /* an elementwise a * b summed: A's stride along N is not 0 */
    hl_graph *g = hl_graph_new();
    hl_expr d[3] = {hl_n(g, 2), hl_n(g, 3), hl_n(g, 4)};
    hl_t a = hl_input(g, "a", HL_F32, 3, d), b = hl_input(g, "b", HL_F32, 3, d);
    hl_t s = hl_sum_reduce(g, hl_mul(g, a, b), 2);
    hl_output(g, "s", s);
    uint32_t n = hl_graph_node_count(g);
    ll_lower_impl *impl = calloc(n, sizeof *impl);
    impl[hl_graph_node(g, s.node)->in[0].node] = LL_LOWER_INLINE;
    impl[s.node] = LL_LOWER_MATMUL;
    ll_lower_plan plan = {impl, NULL};
    lm_err e = {0};
    ck_assert_ptr_null(ll__lower_hlir(g, &plan, &e));
    ck_assert_int_eq(e.code, LM_EARG);
    ck_assert_msg(strstr(e.msg, "is not A[m, k]"), "%s", e.msg);
    free(impl);
    hl_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llir_exec_matmul");
    TCase *t = tcase_create("matmul");
    tcase_add_test(t, every_order_combination_matches_the_loop);
    tcase_add_test(t, a_broadcast_batch_reads_one_matrix);
    tcase_add_test(t, alpha_residual_bias_and_gelu_in_f32_then_one_rounding);
    tcase_add_test(t, a_matmul_reaching_outside_an_operand_fails);
    tcase_add_test(t, the_lowering_derives_orders_and_leading_dims);
    tcase_add_test(t, a_lowered_blas_with_extras_matches_the_loop);
    tcase_add_test(t, a_mul_that_is_no_matmul_is_refused);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
