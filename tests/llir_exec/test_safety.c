/* test_safety.c - what keeps a run safe: the memory limit refuses before allocating and
 * names the largest tensors; an operand read in a dtype other than its producer's gives
 * wrong numbers (which the comparison catches) but never reads outside a buffer (this
 * program runs under ASan in CI); a graph the executor cannot run is refused, naming the
 * node; runs are deterministic. */
#include "ll_build.h"
#include "ll_lower.h"
#include "tx.h"

#include <stdio.h>

/* ---- the memory limit ---- */

/* c = sum(full(2, [a, b]) * full(3, [a, b]), 1): the Mul, a standalone kernel, is the
 * one big buffer ([a, b] f32); nothing is an input. */
static hl_graph *big_mul(int64_t lo, int64_t hi, int64_t profile)
{
    hl_graph *g = hl_graph_new();
    hl_expr a = hl_graph_dim(g, "a", lo, hi, profile), b = hl_graph_dim(g, "b", lo, hi, profile);
    hl_expr d[2] = {a, b};
    hl_t m = hl_mul(g, hl_full(g, 2.0f, HL_F32, 2, d), hl_full(g, 3.0f, HL_F32, 2, d));
    hl_output(g, "c", hl_sum_reduce(g, m, 1));
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    return g;
}

static uint32_t find_op(const ll_graph *g, const char *name)
{
    for (uint32_t id = 0; id < ll_graph_node_count(g); id++)
        if (strcmp(ll_op_get(ll_graph_node(g, id)->op)->name, name) == 0) return id;
    ck_abort_msg("no %s node", name);
    return LM_NONE;
}

START_TEST(a_run_over_the_memory_limit_names_the_largest_tensor)
{
    hl_graph *g = big_mul(1, 4096, 64);
    lm_err e = {0};
    ll_graph *lg = ll_graph_from_hlir(g, &e);
    ck_assert_ptr_nonnull(lg);
    uint32_t mul = find_op(lg, "KMul");
    int64_t dims[2] = {4, 4096}; /* the Mul holds 4 * 4096 f32: 64 KiB */
    hl_tensor out;
    ck_assert_int_eq(ll_run(lg, dims, NULL, &out, 32 * 1024, &e), LM_ELIMIT);
    char want[96];
    snprintf(want, sizeof want, "the largest tensors: node %u (KMul) f32 [4, 4096] 64.0 KiB", mul);
    ck_assert_msg(strstr(e.msg, want) != NULL, "%s", e.msg);
    ck_assert_msg(strstr(e.msg, "memory limit of 32.0 KiB"), "%s", e.msg);
    ck_assert_ptr_null(out.data);
    /* under a limit the peak fits, the run is the reference's */
    lm_err_clear(&e);
    ck_assert_msg(ll_run(lg, dims, NULL, &out, 1024 * 1024, &e) == 0, "%s", e.msg);
    ck_assert_double_eq(hl_tensor_get(&out, 0), 6.0 * 4096);
    hl_tensor_fini(&out);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

START_TEST(the_limit_refuses_before_allocating)
{
    /* a 2^21 x 2^21 f32 Mul is 16 TiB: allocating it would fail (or abort under ASan);
     * the limit refuses it first */
    int64_t big = (int64_t)1 << 21;
    hl_graph *g = big_mul(1, big, 1);
    lm_err e = {0};
    ll_graph *lg = ll_graph_from_hlir(g, &e);
    int64_t dims[2] = {big, big};
    hl_tensor out;
    ck_assert_int_eq(ll_run(lg, dims, NULL, &out, (uint64_t)1 << 30, &e), LM_ELIMIT);
    ck_assert_msg(strstr(e.msg, "(KMul) f32 [2097152, 2097152] 16384.0 GiB"), "%s", e.msg);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

/* ---- operands read in another dtype ---- */

static uint32_t push(ll_graph *g, const ll_node *n)
{
    lm_err e = {0};
    uint32_t id = ll__graph_push(g, n, &e);
    ck_assert_msg(id != LM_NONE, "%s", e.msg);
    return id;
}

static hl_view contiguous(ll_graph *g, int64_t n)
{
    hl_view v;
    hl_expr d = hl_e_num(ll__graph_pool(g), n);
    hl_error he;
    hl_error_clear(&he);
    ck_assert(hl_view_contiguous(ll__graph_pool(g), 1, &d, &v, &he) == 0);
    return v;
}

static uint32_t push_input(ll_graph *g, hl_dtype dt, int64_t n)
{
    ll_node x;
    ll__node_init(&x, LL_INPUT, ll_op_find("Input"));
    x.dtype = dt;
    x.ndim = 1;
    x.shape[0] = hl_e_num(ll__graph_pool(g), n);
    x.prim.name = "x";
    x.prim.index = 0;
    return push(g, &x);
}

static void push_output(ll_graph *g, uint32_t src, hl_dtype dt, int64_t n)
{
    ll_node o;
    ll__node_init(&o, LL_OUTPUT, ll_op_find("Output"));
    o.dtype = dt;
    o.ndim = 1;
    o.shape[0] = hl_e_num(ll__graph_pool(g), n);
    o.n_in = 1;
    o.in[0] = src;
    o.in_dtype[0] = dt;
    o.prim.name = "y";
    o.prim.in[0].view = contiguous(g, n);
    push(g, &o);
}

/* x (xdt) [n] -> exp2 computed in kdt, reading x as kdt -> y. As a kernel, or as a
 * region whose load reads x as kdt. */
static ll_graph *misread(hl_dtype xdt, hl_dtype kdt, int64_t n, bool region)
{
    lm_err e = {0};
    ll_graph *g = ll__graph_alloc(&e);
    uint32_t x = push_input(g, xdt, n);
    ll_node k;
    if (!region) {
        ll__node_init(&k, LL_KERNEL, ll_op_find("KExp2"));
    } else {
        ll__node_init(&k, LL_REGION, ll_op_find("FStore"));
    }
    k.dtype = kdt;
    k.ndim = 1;
    k.shape[0] = hl_e_num(ll__graph_pool(g), n);
    k.n_in = 1;
    uint32_t r = ll_graph_node_count(g);
    if (!region) {
        k.in[0] = x;
        k.in_dtype[0] = kdt; /* the wrong rule: the producer is xdt */
        k.prim.op = HL_OP_EXP2;
        k.prim.n_in = 1;
        k.prim.in[0].node = x;
        k.prim.in[0].view = contiguous(g, n);
        push(g, &k);
    } else {
        k.in[0] = r + 2; /* the root, after the load */
        k.in_dtype[0] = kdt;
        push(g, &k);
        ll_node ld;
        ll__node_init(&ld, LL_LOAD, ll_op_find("FLoad"));
        ld.region = r;
        ld.dtype = kdt;
        ld.ndim = 1;
        ld.shape[0] = k.shape[0];
        ld.n_in = 1;
        ld.in[0] = x;
        ld.in_dtype[0] = kdt; /* the wrong rule */
        push(g, &ld);
        ll_node f;
        ll__node_init(&f, LL_FUSED, ll_op_find("FExp2"));
        f.region = r;
        f.dtype = kdt;
        f.ndim = 1;
        f.shape[0] = k.shape[0];
        f.n_in = 1;
        f.in[0] = r + 1;
        f.in_dtype[0] = kdt;
        f.prim.op = HL_OP_EXP2;
        f.prim.n_in = 1;
        f.prim.in[0].node = r + 1;
        f.prim.in[0].view = contiguous(g, n);
        push(g, &f);
    }
    push_output(g, r, kdt, n);
    ck_assert_msg(ll__graph_finish(g, &e) == 0, "%s", e.msg);
    return g;
}

/* The same computed right: y = exp2(cast(x, kdt)). */
static hl_graph *meant(hl_dtype xdt, hl_dtype kdt, int64_t n)
{
    hl_graph *g = hl_graph_new();
    hl_expr d = hl_n(g, n);
    hl_output(g, "y", hl_exp2(g, hl_cast(g, hl_input(g, "x", xdt, 1, &d), kdt)));
    return g;
}

START_TEST(reading_a_narrow_buffer_wide_stays_inside_it)
{
    /* bf16 x read as f32: the 2n bytes of x are n/2 f32 values, then zeros */
    const int64_t n = 37;
    for (int region = 0; region < 2; region++) {
        ll_graph *lg = misread(HL_BF16, HL_F32, n, region);
        hl_graph *g = meant(HL_BF16, HL_F32, n);
        hl_tensor x, got, want;
        tx_inputs(g, NULL, 3, &x);
        tx_ll(lg, NULL, &x, &got); /* no error: the GPU would not notice either */
        tx_ref(g, NULL, &x, &want);
        lm_err e = {0};
        ck_assert_int_eq(ll_compare_outputs(g, NULL, &got, &want, NULL, &e), LM_EMISMATCH);
        /* element i is exp2 of the f32 made of bf16 elements 2i, 2i+1; past n/2, exp2(0) */
        const uint16_t *xb = x.data;
        for (int64_t i = 0; i < n; i++) {
            float v = 0.0f;
            if (2 * i + 1 < n) {
                uint32_t bits = (uint32_t)xb[2 * i] | (uint32_t)xb[2 * i + 1] << 16;
                memcpy(&v, &bits, sizeof v);
            } else if (2 * i < n) {
                uint32_t bits = xb[2 * i];
                memcpy(&v, &bits, sizeof v);
            }
            float w = exp2f(v), g2 = (float)hl_tensor_get(&got, (size_t)i);
            ck_assert_msg(g2 == w || (isnan(g2) && isnan(w)), "element %lld", (long long)i);
        }
        hl_tensor_fini(&x);
        hl_tensor_fini(&got);
        hl_tensor_fini(&want);
        ll_graph_free(lg);
        hl_graph_free(g);
    }
}
END_TEST

START_TEST(reading_a_wide_buffer_narrow_reads_its_first_bytes)
{
    /* f32 x read as bf16: the first 2n of its 4n bytes */
    const int64_t n = 16;
    for (int region = 0; region < 2; region++) {
        ll_graph *lg = misread(HL_F32, HL_BF16, n, region);
        hl_graph *g = meant(HL_F32, HL_BF16, n);
        hl_tensor x, got, want;
        tx_inputs(g, NULL, 4, &x);
        tx_ll(lg, NULL, &x, &got);
        tx_ref(g, NULL, &x, &want);
        lm_err e = {0};
        ck_assert_int_eq(ll_compare_outputs(g, NULL, &got, &want, NULL, &e), LM_EMISMATCH);
        const uint16_t *halves = x.data;
        for (int64_t i = 0; i < n; i++) {
            float w = hl_round_to(HL_BF16, exp2f(hl_bf16_to_f32(halves[i])));
            ck_assert_float_eq((float)hl_tensor_get(&got, (size_t)i), w);
        }
        hl_tensor_fini(&x);
        hl_tensor_fini(&got);
        hl_tensor_fini(&want);
        ll_graph_free(lg);
        hl_graph_free(g);
    }
}
END_TEST

START_TEST(a_blas_reading_bf16_as_f32_stays_inside)
{
    /* D [M, N] = A B with A a bf16 buffer [M*K] that the Blas reads as f32 (type_a f32),
     * B f32 [K, N]: A's bytes as f32 are M*K/2 values, then zeros */
    const int64_t M = 3, N = 2, K = 5;
    lm_err e = {0};
    ll_graph *g = ll__graph_alloc(&e);
    hl_expr_pool *p = ll__graph_pool(g);
    ll_node a;
    ll__node_init(&a, LL_INPUT, ll_op_find("Input"));
    a.dtype = HL_BF16, a.ndim = 1, a.shape[0] = hl_e_num(p, M * K);
    a.prim.name = "a", a.prim.index = 0;
    uint32_t ia = push(g, &a);
    ll_node b = a;
    b.dtype = HL_F32, b.shape[0] = hl_e_num(p, K * N);
    b.prim.name = "b", b.prim.index = 1;
    uint32_t ib = push(g, &b);
    ll_node m;
    ll__node_init(&m, LL_LIBRARY, ll_op_find("Blas"));
    m.dtype = HL_F32, m.ndim = 1, m.shape[0] = hl_e_num(p, M * N);
    m.n_in = 2, m.in[0] = ia, m.in[1] = ib;
    m.in_dtype[0] = HL_F32, m.in_dtype[1] = HL_F32; /* A: the wrong rule */
    m.mm.m = hl_e_num(p, M), m.mm.n = hl_e_num(p, N), m.mm.k = hl_e_num(p, K);
    m.mm.batch = hl_e_num(p, 1);
    m.mm.lda = hl_e_num(p, K), m.mm.ldb = hl_e_num(p, N);
    m.mm.stride_a = m.mm.stride_b = hl_e_num(p, 0);
    m.mm.type_a = m.mm.type_b = m.mm.type_c = m.mm.type_d = m.mm.type_bias = HL_F32;
    uint32_t im = push(g, &m);
    push_output(g, im, HL_F32, M * N);
    ck_assert_msg(ll__graph_finish(g, &e) == 0, "%s", e.msg);
    hl_tensor in[2], out;
    int64_t la = M * K, lb = K * N;
    hl_error he;
    hl_error_clear(&he);
    ck_assert(hl_tensor_init(&in[0], HL_BF16, 1, &la, &he) == 0);
    ck_assert(hl_tensor_init(&in[1], HL_F32, 1, &lb, &he) == 0);
    hl_tensor_fill_random(&in[0], 5, 0);
    hl_tensor_fill_random(&in[1], 5, 1);
    tx_ll(g, NULL, in, &out);
    float af[15] = {0}; /* M*K f32 slots over 2*M*K bytes: the second half is zero */
    memcpy(af, in[0].data, (size_t)(M * K) * 2);
    const float *bf = in[1].data;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++)
                acc = fmaf(af[i * K + k], bf[k * N + j], acc);
            float got = (float)hl_tensor_get(&out, (size_t)(i * N + j));
            ck_assert_msg(got == acc || (isnan(got) && isnan(acc)), "D[%lld, %lld]", (long long)i,
                          (long long)j);
        }
    tx_free(in, 2);
    hl_tensor_fini(&out);
    ll_graph_free(g);
}
END_TEST

/* ---- graphs the executor refuses ---- */

START_TEST(a_region_whose_root_is_outside_is_refused)
{
    lm_err e = {0};
    ll_graph *g = ll__graph_alloc(&e);
    uint32_t x = push_input(g, HL_F32, 4);
    ll_node r;
    ll__node_init(&r, LL_REGION, ll_op_find("FStore"));
    r.dtype = HL_F32;
    r.ndim = 1;
    r.shape[0] = hl_e_num(ll__graph_pool(g), 4);
    r.n_in = 1;
    r.in[0] = x; /* a top-level node, not its interior */
    r.in_dtype[0] = HL_F32;
    r.eclass = 17;
    r.origin = ll__graph_add_origin(g, "rule 'planted'", &e);
    uint32_t rid = push(g, &r);
    push_output(g, rid, HL_F32, 4);
    ck_assert_int_eq(ll__graph_finish(g, &e), 0);
    hl_tensor in, out;
    int64_t four = 4;
    hl_error he;
    hl_error_clear(&he);
    ck_assert(hl_tensor_init(&in, HL_F32, 1, &four, &he) == 0);
    ck_assert_int_eq(ll_run(g, NULL, &in, &out, 0, &e), LM_EVERIFY);
    ck_assert_msg(strstr(e.msg, "llir node 1 (FStore region, f32, e-class 17, rule 'planted')") &&
                      strstr(e.msg, "root (node 0) is not one of its interior nodes"),
                  "%s", e.msg);
    ck_assert_uint_eq(e.node_id, 1);
    hl_tensor_fini(&in);
    ll_graph_free(g);
}
END_TEST

START_TEST(a_kernel_reading_a_later_node_is_refused)
{
    lm_err e = {0};
    ll_graph *g = ll__graph_alloc(&e);
    push_input(g, HL_F32, 4);
    ll_node k;
    ll__node_init(&k, LL_KERNEL, ll_op_find("KExp2"));
    k.dtype = HL_F32;
    k.ndim = 1;
    k.shape[0] = hl_e_num(ll__graph_pool(g), 4);
    k.n_in = 1;
    k.in[0] = 2; /* the output, pushed next */
    k.prim.op = HL_OP_EXP2;
    k.prim.n_in = 1;
    k.prim.in[0].view = contiguous(g, 4);
    uint32_t kid = push(g, &k);
    push_output(g, kid, HL_F32, 4);
    ck_assert_int_eq(ll__graph_finish(g, &e), 0);
    hl_tensor in, out;
    int64_t four = 4;
    hl_error he;
    hl_error_clear(&he);
    ck_assert(hl_tensor_init(&in, HL_F32, 1, &four, &he) == 0);
    ck_assert_int_eq(ll_run(g, NULL, &in, &out, 0, &e), LM_EVERIFY);
    ck_assert_msg(strstr(e.msg, "llir node 1 (KExp2 kernel") &&
                      strstr(e.msg, "is not an earlier top-level node"),
                  "%s", e.msg);
    hl_tensor_fini(&in);
    ll_graph_free(g);
}
END_TEST

START_TEST(runs_are_deterministic)
{
    hl_error he;
    hl_error_clear(&he);
    hl_gen_opts o = {0};
    o.dynamic = true;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        hl_graph *g = hl_graph_generate(seed, &o, &he);
        lm_err e = {0};
        ll_graph *lg = ll_graph_from_hlir(g, &e);
        hl_tensor in[TX_MAX_IO], a[TX_MAX_IO], b[TX_MAX_IO];
        int64_t dims[16];
        tx_dims(g, 0, dims);
        tx_inputs(g, dims, seed, in);
        tx_ll(lg, dims, in, a);
        tx_ll(lg, dims, in, b);
        for (uint32_t i = 0; i < ll_graph_output_count(lg); i++)
            ck_assert(tx_same_bits(&a[i], &b[i]));
        tx_free(in, hl_graph_input_count(g));
        tx_free(a, ll_graph_output_count(lg));
        tx_free(b, ll_graph_output_count(lg));
        ll_graph_free(lg);
        hl_graph_free(g);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llir_exec_safety");
    TCase *t = tcase_create("safety");
    tcase_add_test(t, a_run_over_the_memory_limit_names_the_largest_tensor);
    tcase_add_test(t, the_limit_refuses_before_allocating);
    tcase_add_test(t, reading_a_narrow_buffer_wide_stays_inside_it);
    tcase_add_test(t, reading_a_wide_buffer_narrow_reads_its_first_bytes);
    tcase_add_test(t, a_blas_reading_bf16_as_f32_stays_inside);
    tcase_add_test(t, a_region_whose_root_is_outside_is_refused);
    tcase_add_test(t, a_kernel_reading_a_later_node_is_refused);
    tcase_add_test(t, runs_are_deterministic);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
