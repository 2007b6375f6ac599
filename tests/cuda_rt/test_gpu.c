/* test_gpu.c: cuda_rt on a real GPU. Exits 77 (ctest: skipped) with a message where
 * there is no CUDA device.
 *
 * Kernels from NVRTC in graphs, in-place parameter updates, whole-graph updates;
 * cuBLASLt f32, tf32, f16 and bf16 matmuls in all four transpose layouts for both D
 * orders, batched, with every epilogue, against a CPU reference in double; a matmul
 * captured into a graph between kernels; a faulting kernel reported in process (and what
 * reset answers), and confined to a child by rt_isolated_run so that the caller goes on; a runaway
 * kernel stopped by the timing timeout; timing stability. Inputs are fresh random numbers; outputs
 * are poisoned (all bits set) before each run and checked to be fully written.
 */
#include "cuda_rt.h"
#include "lm_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void)
{ /* uniform in [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}
static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f32_to_f16(float f)
{ /* round to nearest even; our values are normal or 0 */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    int32_t e = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t mant = u & 0x7fffff;
    if (e <= 0) return (uint16_t)sign; /* flush tiny values (below 6e-5) to zero */
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)h;
}
static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, mant = h & 0x3ff;
    uint32_t u;
    if (e == 0 && mant == 0)
        u = sign;
    else if (e == 31)
        u = sign | 0x7f800000 | (mant << 13);
    else if (e == 0) { /* subnormal */
        float f = (float)mant / 1024.0f / 16384.0f;
        return sign ? -f : f;
    } else
        u = sign | ((e - 15 + 127) << 23) | (mant << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Quantizes x to type t; stores it at dst[i]; returns the quantized value. */
static float put(void *dst, size_t i, rt_dtype t, float x)
{
    if (t == RT_F32) {
        ((float *)dst)[i] = x;
        return x;
    }
    uint16_t h = t == RT_BF16 ? f32_to_bf16(x) : f32_to_f16(x);
    ((uint16_t *)dst)[i] = h;
    return t == RT_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}
static float get(const void *src, size_t i, rt_dtype t)
{
    if (t == RT_F32) return ((const float *)src)[i];
    uint16_t h = ((const uint16_t *)src)[i];
    return t == RT_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

static rt_ctx *open_ctx(void)
{
    rt_ctx *ctx = NULL;
    lm_err err = {0};
    ck_assert_msg(rt_ctx_new(NULL, &ctx, &err) == 0, "%s", err.msg);
    return ctx;
}

#define OK(call) ck_assert_msg((call) == 0, "%s", err.msg)

/* index of element (r, c) of a stored matrix */
static size_t at(rt_order o, int64_t ld, int64_t r, int64_t c)
{
    return (size_t)(o == RT_ROW_MAJOR ? r * ld + c : r + c * ld);
}
static size_t elems(int64_t rows, int64_t cols, rt_order o, int64_t ld, int64_t stride,
                    int32_t batch)
{
    int64_t span = ld * (o == RT_ROW_MAJOR ? rows : cols);
    return (size_t)((batch - 1) * stride + span);
}

static double gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* Runs one matmul spec on the GPU and checks it against a double-precision reference.
 * Returns the relative Frobenius error. */
static double check_matmul(rt_ctx *ctx, const rt_matmul_spec *s)
{
    lm_err err = {0};
    int64_t m = s->m, n = s->n, k = s->k;
    int64_t ra = s->trans_a ? k : m, ca = s->trans_a ? m : k;
    int64_t rb = s->trans_b ? n : k, cb = s->trans_b ? k : n;
    size_t na = elems(ra, ca, s->order_a, s->lda, s->stride_a, s->batch);
    size_t nb = elems(rb, cb, s->order_b, s->ldb, s->stride_b, s->batch);
    size_t nc = elems(m, n, s->order_d, s->ldc, s->stride_c, s->batch);
    size_t nd = elems(m, n, s->order_d, s->ldd, s->stride_d, s->batch);
    size_t nbias = (size_t)(s->order_d == RT_ROW_MAJOR ? n : m);
    size_t ea = rt_dtype_size(s->type_a), ec = rt_dtype_size(s->type_c),
           ed = rt_dtype_size(s->type_d), eb = rt_dtype_size(s->type_bias);
    void *ha = calloc(na, ea), *hb = calloc(nb, ea), *hc = calloc(nc, ec), *hd = calloc(nd, ed);
    void *hbias = calloc(nbias, eb);
    float *qa = calloc(na, 4), *qb = calloc(nb, 4), *qc = calloc(nc, 4), *qbias = calloc(nbias, 4);
    for (size_t i = 0; i < na; i++)
        qa[i] = put(ha, i, s->type_a, frand());
    for (size_t i = 0; i < nb; i++)
        qb[i] = put(hb, i, s->type_b, frand());
    for (size_t i = 0; i < nc; i++)
        qc[i] = put(hc, i, s->type_c, frand());
    for (size_t i = 0; i < nbias; i++)
        qbias[i] = put(hbias, i, s->type_bias, frand());
    rt_buf A = {0}, B = {0}, C = {0}, D = {0}, BI = {0}, W = {0};
    OK(rt_buf_reserve(ctx, &A, na * ea, NULL, &err));
    OK(rt_buf_reserve(ctx, &B, nb * ea, NULL, &err));
    OK(rt_buf_reserve(ctx, &C, nc * ec, NULL, &err));
    OK(rt_buf_reserve(ctx, &D, nd * ed, NULL, &err));
    OK(rt_buf_reserve(ctx, &BI, nbias * eb, NULL, &err));
    OK(rt_copy_htod(ctx, A.ptr, ha, na * ea, &err));
    OK(rt_copy_htod(ctx, B.ptr, hb, nb * ea, &err));
    OK(rt_copy_htod(ctx, C.ptr, hc, nc * ec, &err));
    OK(rt_copy_htod(ctx, BI.ptr, hbias, nbias * eb, &err));
    OK(rt_memset8(ctx, D.ptr, 0xff, nd * ed, &err)); /* poison: NaN in every float type */
    rt_matmul *mm;
    OK(rt_matmul_prepare(ctx, s, &mm, &err));
    OK(rt_buf_reserve(ctx, &W, rt_matmul_workspace(mm), NULL, &err));
    rt_matmul_args args = {.a = A.ptr,
                           .b = B.ptr,
                           .c = C.ptr,
                           .d = D.ptr,
                           .bias = BI.ptr,
                           .workspace = W.ptr,
                           .workspace_bytes = W.capacity};
    OK(rt_matmul_enqueue(ctx, mm, &args, &err));
    OK(rt_copy_dtoh(ctx, hd, D.ptr, nd * ed, &err));
    OK(rt_ctx_sync(ctx, &err));
    double num = 0, den = 0;
    bool has_bias = s->epilogue == RT_EPI_BIAS || s->epilogue == RT_EPI_BIAS_RELU ||
                    s->epilogue == RT_EPI_BIAS_GELU;
    for (int32_t bt = 0; bt < s->batch; bt++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t p = 0; p < k; p++) {
                    double x = s->trans_a ? qa[bt * s->stride_a + at(s->order_a, s->lda, p, i)]
                                          : qa[bt * s->stride_a + at(s->order_a, s->lda, i, p)];
                    double y = s->trans_b ? qb[bt * s->stride_b + at(s->order_b, s->ldb, j, p)]
                                          : qb[bt * s->stride_b + at(s->order_b, s->ldb, p, j)];
                    acc += x * y;
                }
                double v = s->alpha * acc;
                if (s->beta != 0.0f)
                    v += s->beta * qc[bt * s->stride_c + at(s->order_d, s->ldc, i, j)];
                if (has_bias) v += qbias[s->order_d == RT_ROW_MAJOR ? j : i];
                if (s->epilogue == RT_EPI_RELU || s->epilogue == RT_EPI_BIAS_RELU)
                    v = v > 0 ? v : 0;
                if (s->epilogue == RT_EPI_GELU || s->epilogue == RT_EPI_BIAS_GELU) v = gelu(v);
                double got = get(hd, bt * s->stride_d + at(s->order_d, s->ldd, i, j), s->type_d);
                ck_assert_msg(isfinite(got), "D[%d][%lld][%lld] not written (poison left)", bt,
                              (long long)i, (long long)j);
                num += (got - v) * (got - v);
                den += v * v;
            }
    rt_buf_release(ctx, &A), rt_buf_release(ctx, &B), rt_buf_release(ctx, &C);
    rt_buf_release(ctx, &D), rt_buf_release(ctx, &BI), rt_buf_release(ctx, &W);
    free(ha), free(hb), free(hc), free(hd), free(hbias);
    free(qa), free(qb), free(qc), free(qbias);
    return sqrt(num / (den > 0 ? den : 1));
}

static const char *epi_name[] = {"none", "bias", "relu", "gelu", "bias+relu", "bias+gelu"};

/* Every transpose combination for both D orders (A's order flipped on some), batched with
 * padded leading dimensions, each epilogue, beta on half of them. */
static void matmul_suite(rt_dtype type, rt_compute compute, double tol)
{
    rt_ctx *ctx = open_ctx();
    for (int combo = 0; combo < 8; combo++) {
        rt_matmul_spec s;
        int64_t m = 64, n = 48, k = 40;
        rt_matmul_spec_init(&s, m, n, k, type);
        s.compute = compute;
        s.order_d = combo & 4 ? RT_COL_MAJOR : RT_ROW_MAJOR;
        s.order_a =
            combo % 3 == 0 ? (s.order_d == RT_ROW_MAJOR ? RT_COL_MAJOR : RT_ROW_MAJOR) : s.order_d;
        s.order_b = s.order_d;
        s.trans_a = combo & 1;
        s.trans_b = (combo >> 1) & 1;
        int64_t ra = s.trans_a ? k : m, ca = s.trans_a ? m : k;
        int64_t rb = s.trans_b ? n : k, cb = s.trans_b ? k : n;
        s.lda = (s.order_a == RT_ROW_MAJOR ? ca : ra) + 8;
        s.ldb = (s.order_b == RT_ROW_MAJOR ? cb : rb) + 8;
        s.ldc = s.ldd = (s.order_d == RT_ROW_MAJOR ? n : m) + 8;
        s.batch = 2 + combo % 2;
        s.stride_a = s.lda * (s.order_a == RT_ROW_MAJOR ? ra : ca) + 64;
        s.stride_b = s.ldb * (s.order_b == RT_ROW_MAJOR ? rb : cb) + 64;
        s.stride_c = s.stride_d = s.ldd * (s.order_d == RT_ROW_MAJOR ? m : n) + 64;
        s.epilogue = (rt_epilogue)(combo % 6);
        s.alpha = 1.5f;
        s.beta = combo % 2 ? 0.5f : 0.0f;
        double e = check_matmul(ctx, &s);
        printf("matmul type=%d compute=%d D=%s transA=%d transB=%d A=%s batch=%d epilogue=%s "
               "beta=%.1f: rel err %.2e (tol %.0e)\n",
               type, compute, s.order_d == RT_ROW_MAJOR ? "row" : "col", s.trans_a, s.trans_b,
               s.order_a == RT_ROW_MAJOR ? "row" : "col", s.batch, epi_name[s.epilogue],
               (double)s.beta, e, tol);
        ck_assert_msg(e < tol, "combo %d: relative error %.3e over %.1e", combo, e, tol);
    }
    /* the remaining epilogues on a plain layout so that all six meet every type */
    for (int epi = 0; epi < 6; epi++) {
        rt_matmul_spec s;
        rt_matmul_spec_init(&s, 96, 80, 64, type);
        s.compute = compute;
        s.epilogue = (rt_epilogue)epi;
        double e = check_matmul(ctx, &s);
        ck_assert_msg(e < tol, "epilogue %s: relative error %.3e over %.1e", epi_name[epi], e, tol);
    }
    rt_ctx_free(ctx);
}

START_TEST(gpu_matmul_f32_all_layouts_batched_epilogues)
{
    matmul_suite(RT_F32, RT_COMPUTE_F32, 1e-5);
}
END_TEST
START_TEST(gpu_matmul_tf32_all_layouts_batched_epilogues)
{
    matmul_suite(RT_F32, RT_COMPUTE_TF32, 5e-3);
}
END_TEST
START_TEST(gpu_matmul_f16_all_layouts_batched_epilogues)
{
    matmul_suite(RT_F16, RT_COMPUTE_F32, 1e-2);
}
END_TEST
START_TEST(gpu_matmul_bf16_all_layouts_batched_epilogues)
{
    matmul_suite(RT_BF16, RT_COMPUTE_F32, 2e-2);
}
END_TEST

/* e4m3 byte of x, which must be exactly representable (multiples of 1/4 up to 4 here) */
static uint8_t e4m3(float x)
{
    if (x == 0.0f) return 0;
    uint8_t sign = x < 0 ? 0x80 : 0;
    float a = fabsf(x);
    int e = (int)floorf(log2f(a));
    int m = (int)lrintf((a / ldexpf(1.0f, e) - 1.0f) * 8.0f);
    return (uint8_t)(sign | (uint8_t)((e + 7) << 3) | (uint8_t)m);
}

/* D (bf16, row-major) = scale_a * scale_b * A B with A (m x k) and B stored n x k in e4m3:
 * cuBLASLt's "TN" fp8 form, scales given as device pointers at enqueue. */
START_TEST(gpu_matmul_fp8_e4m3_with_scales)
{
    rt_ctx *ctx = open_ctx();
    lm_err err = {0};
    enum { M = 128, NN = 64, K = 96 };
    uint8_t *ha = malloc(M * K), *hb = malloc(NN * K);
    float *qa = malloc(M * K * 4), *qb = malloc(NN * K * 4);
    uint16_t *hd = malloc(M * NN * 2);
    for (int i = 0; i < M * K; i++) {
        qa[i] = (float)((int)((frand() + 1.0f) * 8.0f) - 8) / 4.0f; /* -2 .. 1.75 by 1/4 */
        ha[i] = e4m3(qa[i]);
    }
    for (int i = 0; i < NN * K; i++) {
        qb[i] = (float)((int)((frand() + 1.0f) * 8.0f) - 8) / 4.0f;
        hb[i] = e4m3(qb[i]);
    }
    float scales[2] = {2.0f, 0.25f};
    rt_buf A = {0}, B = {0}, D = {0}, S = {0}, W = {0};
    OK(rt_buf_reserve(ctx, &A, M * K, NULL, &err));
    OK(rt_buf_reserve(ctx, &B, NN * K, NULL, &err));
    OK(rt_buf_reserve(ctx, &D, M * NN * 2, NULL, &err));
    OK(rt_buf_reserve(ctx, &S, 512, NULL, &err));
    OK(rt_copy_htod(ctx, A.ptr, ha, M * K, &err));
    OK(rt_copy_htod(ctx, B.ptr, hb, NN * K, &err));
    OK(rt_copy_htod(ctx, S.ptr, &scales[0], 4, &err)); /* 256 bytes apart */
    OK(rt_copy_htod(ctx, S.ptr + 256, &scales[1], 4, &err));
    OK(rt_memset8(ctx, D.ptr, 0xff, M * NN * 2, &err));
    rt_matmul_spec s;
    rt_matmul_spec_init(&s, M, NN, K, RT_F8_E4M3);
    s.scale_a = s.scale_b = true;
    rt_matmul *mm;
    OK(rt_matmul_prepare(ctx, &s, &mm, &err));
    OK(rt_buf_reserve(ctx, &W, rt_matmul_workspace(mm) ? rt_matmul_workspace(mm) : 256, NULL,
                      &err));
    rt_matmul_args args = {.a = A.ptr,
                           .b = B.ptr,
                           .d = D.ptr,
                           .scale_a = S.ptr,
                           .scale_b = S.ptr + 256,
                           .workspace = W.ptr,
                           .workspace_bytes = W.capacity};
    OK(rt_matmul_enqueue(ctx, mm, &args, &err));
    OK(rt_copy_dtoh(ctx, hd, D.ptr, M * NN * 2, &err));
    OK(rt_ctx_sync(ctx, &err));
    double num = 0, den = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < NN; j++) {
            double ref = 0;
            for (int p = 0; p < K; p++)
                ref += (double)qa[i * K + p] * qb[j * K + p];
            ref *= 0.5;
            double got = bf16_to_f32(hd[i * NN + j]);
            ck_assert(isfinite(got));
            num += (got - ref) * (got - ref);
            den += ref * ref;
        }
    double rel = sqrt(num / den);
    printf("fp8 e4m3 %dx%dx%d with scales: rel err %.2e\n", M, NN, K, rel);
    ck_assert_msg(rel < 1e-2, "relative error %.3e", rel);
    rt_buf_release(ctx, &A), rt_buf_release(ctx, &B), rt_buf_release(ctx, &D);
    rt_buf_release(ctx, &S), rt_buf_release(ctx, &W);
    free(ha), free(hb), free(qa), free(qb), free(hd);
    rt_ctx_free(ctx);
}
END_TEST

/* ---- kernels and graphs -------------------------------------------------------------- */

static const char *axpy_src =
    "extern \"C\" __global__ void axpy(float *y, const float *x, float a, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void add1(float *y, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] += 1.0f;\n"
    "}\n"
    "extern \"C\" __global__ void poke(float *p) { p[threadIdx.x] = 1.0f; }\n"
    "extern \"C\" __global__ void spin(long long cycles) {\n"
    "  long long t0 = clock64();\n"
    "  while (clock64() - t0 < cycles) { }\n"
    "}\n";

typedef struct axpy_launch {
    rt_dptr y, x;
    float a;
    unsigned n;
    const void *args[4];
    size_t sizes[4];
    rt_launch l;
} axpy_launch;

static void make_axpy(axpy_launch *s, rt_kernel *k, rt_dptr y, rt_dptr x, float a, unsigned n)
{
    s->y = y, s->x = x, s->a = a, s->n = n;
    s->args[0] = &s->y, s->args[1] = &s->x, s->args[2] = &s->a, s->args[3] = &s->n;
    s->sizes[0] = 8, s->sizes[1] = 8, s->sizes[2] = 4, s->sizes[3] = 4;
    memset(&s->l, 0, sizeof s->l);
    s->l.kernel = k;
    s->l.grid[0] = (n + 255) / 256, s->l.grid[1] = s->l.grid[2] = 1;
    s->l.block[0] = 256, s->l.block[1] = s->l.block[2] = 1;
    s->l.nargs = 4;
    s->l.args = s->args;
    s->l.sizes = s->sizes;
}

enum { N = 100000 };

static void expect_y(rt_ctx *ctx, rt_dptr y, const float *x, float factor)
{
    lm_err err = {0};
    float *h = malloc(N * sizeof *h);
    OK(rt_copy_dtoh(ctx, h, y, N * sizeof *h, &err));
    OK(rt_ctx_sync(ctx, &err));
    for (int i = 0; i < N; i++)
        ck_assert_msg(h[i] == factor * x[i], "y[%d] = %g, expected %g", i, (double)h[i],
                      (double)(factor * x[i]));
    free(h);
}

START_TEST(gpu_nvrtc_kernels_in_graph_with_updates_in_place)
{
    rt_ctx *ctx = open_ctx();
    lm_err err = {0};
    rt_kernel *k;
    OK(rt_kernel_get(ctx, axpy_src, "axpy", NULL, 0, &k, &err));
    float *x = malloc(N * sizeof *x), *zero = calloc(N, sizeof *zero);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 1000) - 500.0f; /* exact in float */
    rt_buf X = {0}, Y = {0}, Y2 = {0};
    OK(rt_buf_reserve(ctx, &X, N * 4, NULL, &err));
    OK(rt_buf_reserve(ctx, &Y, N * 4, NULL, &err));
    OK(rt_buf_reserve(ctx, &Y2, N * 4, NULL, &err));
    OK(rt_copy_htod(ctx, X.ptr, x, N * 4, &err));
    OK(rt_copy_htod(ctx, Y.ptr, zero, N * 4, &err));
    rt_graph *g;
    OK(rt_graph_new(ctx, &g, &err));
    axpy_launch l0, l1;
    make_axpy(&l0, k, Y.ptr, X.ptr, 2.0f, N);
    make_axpy(&l1, k, Y.ptr, X.ptr, 3.0f, N);
    uint32_t n0, n1;
    OK(rt_graph_add_kernel(g, &l0.l, NULL, 0, &n0, &err));
    OK(rt_graph_add_kernel(g, &l1.l, &n0, 1, &n1, &err));
    rt_exec *e;
    OK(rt_exec_new(g, &e, &err));
    OK(rt_exec_launch(e, &err));
    expect_y(ctx, Y.ptr, x, 5.0f);
    /* new scalar in place */
    make_axpy(&l1, k, Y.ptr, X.ptr, 10.0f, N);
    OK(rt_exec_set_kernel(e, n1, &l1.l, &err));
    OK(rt_copy_htod(ctx, Y.ptr, zero, N * 4, &err));
    OK(rt_exec_launch(e, &err));
    expect_y(ctx, Y.ptr, x, 12.0f);
    float a;
    OK(rt_graph_kernel_arg(g, n1, 2, &a, sizeof a, &err));
    ck_assert(a == 10.0f); /* mirrored on the source graph */
    /* new pointers in place: both nodes write Y2, Y stays */
    make_axpy(&l0, k, Y2.ptr, X.ptr, 1.0f, N);
    make_axpy(&l1, k, Y2.ptr, X.ptr, 1.0f, N);
    OK(rt_exec_set_kernel(e, n0, &l0.l, &err));
    OK(rt_exec_set_kernel(e, n1, &l1.l, &err));
    OK(rt_copy_htod(ctx, Y2.ptr, zero, N * 4, &err));
    OK(rt_exec_launch(e, &err));
    expect_y(ctx, Y2.ptr, x, 2.0f);
    expect_y(ctx, Y.ptr, x, 12.0f);
    /* whole-graph update, same topology: in place */
    rt_graph *g2;
    OK(rt_graph_new(ctx, &g2, &err));
    make_axpy(&l0, k, Y.ptr, X.ptr, 4.0f, N);
    make_axpy(&l1, k, Y.ptr, X.ptr, 4.0f, N);
    OK(rt_graph_add_kernel(g2, &l0.l, NULL, 0, &n0, &err));
    OK(rt_graph_add_kernel(g2, &l1.l, &n0, 1, &n1, &err));
    rt_update_kind how;
    OK(rt_exec_update(e, g2, &how, &err));
    ck_assert_int_eq(how, RT_UPDATE_IN_PLACE);
    OK(rt_copy_htod(ctx, Y.ptr, zero, N * 4, &err));
    OK(rt_exec_launch(e, &err));
    expect_y(ctx, Y.ptr, x, 8.0f);
    /* topology changed: re-instantiated */
    rt_graph *g3;
    OK(rt_graph_new(ctx, &g3, &err));
    uint32_t prev = 0;
    for (int i = 0; i < 3; i++) {
        uint32_t id;
        OK(rt_graph_add_kernel(g3, &l0.l, i ? &prev : NULL, i ? 1 : 0, &id, &err));
        prev = id;
    }
    OK(rt_exec_update(e, g3, &how, &err));
    ck_assert_int_eq(how, RT_UPDATE_REINSTANTIATED);
    OK(rt_copy_htod(ctx, Y.ptr, zero, N * 4, &err));
    OK(rt_exec_launch(e, &err));
    expect_y(ctx, Y.ptr, x, 12.0f);
    rt_exec_free(e);
    rt_graph_free(g), rt_graph_free(g2), rt_graph_free(g3);
    rt_buf_release(ctx, &X), rt_buf_release(ctx, &Y), rt_buf_release(ctx, &Y2);
    free(x), free(zero);
    rt_ctx_free(ctx);
}
END_TEST

typedef struct mm_job {
    rt_matmul *mm;
    rt_matmul_args args;
} mm_job;

static int enqueue_job(rt_ctx *ctx, void *user, lm_err *err)
{
    mm_job *j = user;
    return rt_matmul_enqueue(ctx, j->mm, &j->args, err);
}

/* kernel (A *= 2 via axpy A = 1*A + A) -> captured matmul D = A B -> kernel (D += 1) */
START_TEST(gpu_matmul_captured_into_graph_between_kernels)
{
    rt_ctx *ctx = open_ctx();
    lm_err err = {0};
    printf("capture mode: %s\n", rt_ctx_device(ctx)->capture_mode == RT_CAPTURE_TO_GRAPH
                                     ? "into the graph"
                                     : "child graph");
    enum { M = 128, NN = 96, K = 64 };
    float *a = malloc(M * K * 4), *b = malloc(K * NN * 4), *d = malloc(M * NN * 4);
    for (int i = 0; i < M * K; i++)
        a[i] = frand();
    for (int i = 0; i < K * NN; i++)
        b[i] = frand();
    rt_buf A = {0}, B = {0}, D = {0}, W = {0};
    OK(rt_buf_reserve(ctx, &A, M * K * 4, NULL, &err));
    OK(rt_buf_reserve(ctx, &B, K * NN * 4, NULL, &err));
    OK(rt_buf_reserve(ctx, &D, M * NN * 4, NULL, &err));
    OK(rt_copy_htod(ctx, A.ptr, a, M * K * 4, &err));
    OK(rt_copy_htod(ctx, B.ptr, b, K * NN * 4, &err));
    OK(rt_memset8(ctx, D.ptr, 0xff, M * NN * 4, &err));
    rt_matmul_spec s;
    rt_matmul_spec_init(&s, M, NN, K, RT_F32);
    mm_job j = {0};
    OK(rt_matmul_prepare(ctx, &s, &j.mm, &err));
    OK(rt_buf_reserve(ctx, &W, rt_matmul_workspace(j.mm), NULL, &err));
    j.args = (rt_matmul_args){
        .a = A.ptr, .b = B.ptr, .d = D.ptr, .workspace = W.ptr, .workspace_bytes = W.capacity};
    rt_kernel *kx, *k1;
    OK(rt_kernel_get(ctx, axpy_src, "axpy", NULL, 0, &kx, &err));
    OK(rt_kernel_get(ctx, axpy_src, "add1", NULL, 0, &k1, &err));
    axpy_launch dbl;
    make_axpy(&dbl, kx, A.ptr, A.ptr, 1.0f, M * K);
    rt_dptr dp = D.ptr;
    unsigned nd = M * NN;
    const void *a1[2] = {&dp, &nd};
    size_t s1[2] = {8, 4};
    rt_launch add = {.kernel = k1,
                     .grid = {(nd + 255) / 256, 1, 1},
                     .block = {256, 1, 1},
                     .nargs = 2,
                     .args = a1,
                     .sizes = s1};
    rt_graph *g;
    OK(rt_graph_new(ctx, &g, &err));
    uint32_t n0, n1, n2;
    OK(rt_graph_add_kernel(g, &dbl.l, NULL, 0, &n0, &err));
    OK(rt_graph_add_captured(g, enqueue_job, &j, &n0, 1, &n1, &err));
    OK(rt_graph_add_kernel(g, &add, &n1, 1, &n2, &err));
    rt_exec *e;
    OK(rt_exec_new(g, &e, &err));
    OK(rt_exec_launch(e, &err));
    OK(rt_copy_dtoh(ctx, d, D.ptr, M * NN * 4, &err));
    OK(rt_ctx_sync(ctx, &err));
    double num = 0, den = 0;
    for (int i = 0; i < M; i++)
        for (int c = 0; c < NN; c++) {
            double acc = 0;
            for (int p = 0; p < K; p++)
                acc += 2.0 * a[i * K + p] * b[p * NN + c];
            double ref = acc + 1.0;
            ck_assert(isfinite(d[i * NN + c]));
            num += (d[i * NN + c] - ref) * (d[i * NN + c] - ref);
            den += ref * ref;
        }
    ck_assert_msg(sqrt(num / den) < 1e-5, "relative error %.3e", sqrt(num / den));
    rt_exec_free(e);
    rt_graph_free(g);
    rt_buf_release(ctx, &A), rt_buf_release(ctx, &B), rt_buf_release(ctx, &D),
        rt_buf_release(ctx, &W);
    free(a), free(b), free(d);
    rt_ctx_free(ctx);
}
END_TEST

START_TEST(gpu_fault_in_process_is_reported_and_reset_answers)
{
    rt_ctx *ctx = open_ctx();
    lm_err err = {0};
    rt_kernel *poke;
    OK(rt_kernel_get(ctx, axpy_src, "poke", NULL, 0, &poke, &err));
    rt_dptr bad = 0x10; /* not a device address */
    const void *args[1] = {&bad};
    size_t sizes[1] = {8};
    rt_launch l = {.kernel = poke,
                   .grid = {1, 1, 1},
                   .block = {32, 1, 1},
                   .nargs = 1,
                   .args = args,
                   .sizes = sizes};
    rt_launch_kernel(ctx, &l, &err); /* asynchronous: the fault shows at the sync */
    int rc = err.code ? (int)err.code : rt_ctx_sync(ctx, &err);
    ck_assert_int_eq(rc, RT_EFAULT);
    printf("fault reported as: %s\n", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    ck_assert_ptr_nonnull(strstr(err.msg, "rt_ctx_reset"));
    lm_err_clear(&err);
    if (rt_ctx_reset(ctx, &err) != 0) {
        /* the driver keeps the fault for the process (seen on driver 580): reset says so */
        printf("reset after the fault: %s\n", err.msg);
        ck_assert_int_eq(err.code, RT_EFAULT);
        ck_assert_ptr_nonnull(strstr(err.msg, "rt_isolated_run"));
        rt_ctx_free(ctx);
        return;
    }
    printf("reset after the fault: recovered\n");
    /* kernels, buffers and cuBLASLt work again */
    rt_kernel *k;
    OK(rt_kernel_get(ctx, axpy_src, "axpy", NULL, 0, &k, &err));
    float *x = malloc(N * 4), *zero = calloc(N, 4);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 77);
    rt_buf X = {0}, Y = {0};
    OK(rt_buf_reserve(ctx, &X, N * 4, NULL, &err));
    OK(rt_buf_reserve(ctx, &Y, N * 4, NULL, &err));
    OK(rt_copy_htod(ctx, X.ptr, x, N * 4, &err));
    OK(rt_copy_htod(ctx, Y.ptr, zero, N * 4, &err));
    axpy_launch al;
    make_axpy(&al, k, Y.ptr, X.ptr, 3.0f, N);
    OK(rt_launch_kernel(ctx, &al.l, &err));
    expect_y(ctx, Y.ptr, x, 3.0f);
    rt_matmul_spec s;
    rt_matmul_spec_init(&s, 64, 64, 64, RT_BF16);
    ck_assert(check_matmul(ctx, &s) < 2e-2);
    rt_buf_release(ctx, &X), rt_buf_release(ctx, &Y);
    free(x), free(zero);
    rt_ctx_free(ctx);
}
END_TEST

/* work for rt_isolated_run: 0 pokes a bad address; 1 runs axpy and a bf16 matmul and
 * returns {wrong elements, matmul relative error} */
static int isolated_work(rt_ctx *ctx, void *user, void *out, size_t out_size, lm_err *err)
{
    int what = *(int *)user;
    double *res = out;
    (void)out_size;
    if (what == 0) {
        rt_kernel *poke;
        if (rt_kernel_get(ctx, axpy_src, "poke", NULL, 0, &poke, err)) return err->code;
        rt_dptr bad = 0x10;
        const void *args[1] = {&bad};
        size_t sizes[1] = {8};
        rt_launch l = {.kernel = poke,
                       .grid = {1, 1, 1},
                       .block = {32, 1, 1},
                       .nargs = 1,
                       .args = args,
                       .sizes = sizes};
        if (rt_launch_kernel(ctx, &l, err)) return err->code;
        return rt_ctx_sync(ctx, err);
    }
    rt_kernel *k;
    if (rt_kernel_get(ctx, axpy_src, "axpy", NULL, 0, &k, err)) return err->code;
    float *x = malloc(N * 4), *y = calloc(N, 4);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 77);
    rt_buf X = {0}, Y = {0};
    axpy_launch al;
    int rc = rt_buf_reserve(ctx, &X, N * 4, NULL, err) ||
             rt_buf_reserve(ctx, &Y, N * 4, NULL, err) || rt_copy_htod(ctx, X.ptr, x, N * 4, err) ||
             rt_copy_htod(ctx, Y.ptr, y, N * 4, err);
    if (!rc) {
        make_axpy(&al, k, Y.ptr, X.ptr, 3.0f, N);
        rc = rt_launch_kernel(ctx, &al.l, err) || rt_copy_dtoh(ctx, y, Y.ptr, N * 4, err) ||
             rt_ctx_sync(ctx, err);
    }
    if (!rc) {
        res[0] = 0;
        for (int i = 0; i < N; i++)
            res[0] += y[i] != 3.0f * x[i];
        rt_matmul_spec s;
        rt_matmul_spec_init(&s, 64, 64, 64, RT_BF16);
        res[1] = check_matmul(ctx, &s);
    }
    rt_buf_release(ctx, &X), rt_buf_release(ctx, &Y);
    free(x), free(y);
    return rc ? (int)err->code : 0;
}

/* The caller never touches CUDA: a faulting run comes back as an error and the next one
 * works, because each ran in a child of its own. */
START_TEST(gpu_fault_in_isolated_run_leaves_the_caller_usable)
{
    lm_err err = {0};
    int what = 0;
    double res[2] = {-1, -1};
    ck_assert_int_eq(
        rt_isolated_run(NULL, NULL, isolated_work, &what, res, sizeof res, 60000, &err), RT_EFAULT);
    printf("isolated fault: %s\n", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    lm_err_clear(&err);
    what = 1;
    ck_assert_msg(rt_isolated_run(NULL, NULL, isolated_work, &what, res, sizeof res, 60000, &err) ==
                      0,
                  "%s", err.msg);
    ck_assert(res[0] == 0);
    ck_assert_msg(res[1] < 2e-2, "matmul relative error %.3e", res[1]);
}
END_TEST

START_TEST(gpu_runaway_kernel_hits_the_timing_timeout)
{
    rt_ctx *ctx = open_ctx();
    lm_err err = {0};
    rt_kernel *spin;
    OK(rt_kernel_get(ctx, axpy_src, "spin", NULL, 0, &spin, &err));
    long long cycles = 2000000000LL; /* about a second at 2 GHz */
    const void *args[1] = {&cycles};
    size_t sizes[1] = {8};
    rt_launch l = {.kernel = spin,
                   .grid = {1, 1, 1},
                   .block = {1, 1, 1},
                   .nargs = 1,
                   .args = args,
                   .sizes = sizes};
    rt_graph *g;
    OK(rt_graph_new(ctx, &g, &err));
    OK(rt_graph_add_kernel(g, &l, NULL, 0, NULL, &err));
    rt_exec *e;
    OK(rt_exec_new(g, &e, &err));
    rt_time_opts o = {.warmup = 0, .trials = 3, .reps = 1, .timeout_ms = 200};
    rt_timing t;
    ck_assert_int_eq(rt_exec_time(e, &o, &t, &err), RT_ETIMEOUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "200 ms"));
    lm_err_clear(&err);
    rt_exec_free(e);
    rt_graph_free(g);
    OK(rt_ctx_reset(ctx, &err));
    OK(rt_ctx_sync(ctx, &err));
    rt_ctx_free(ctx);
}
END_TEST

START_TEST(gpu_timing_is_stable)
{
    rt_ctx *ctx = open_ctx();
    lm_err err = {0};
    rt_kernel *k;
    OK(rt_kernel_get(ctx, axpy_src, "axpy", NULL, 0, &k, &err));
    unsigned n = 64u << 20; /* 256 MiB per vector: far past L2 */
    rt_buf X = {0}, Y = {0};
    OK(rt_buf_reserve(ctx, &X, (size_t)n * 4, NULL, &err));
    OK(rt_buf_reserve(ctx, &Y, (size_t)n * 4, NULL, &err));
    OK(rt_memset8(ctx, X.ptr, 0, (size_t)n * 4, &err));
    OK(rt_memset8(ctx, Y.ptr, 0, (size_t)n * 4, &err));
    axpy_launch al;
    make_axpy(&al, k, Y.ptr, X.ptr, 1.0f, n);
    rt_graph *g;
    OK(rt_graph_new(ctx, &g, &err));
    OK(rt_graph_add_kernel(g, &al.l, NULL, 0, NULL, &err));
    rt_exec *e;
    OK(rt_exec_new(g, &e, &err));
    rt_time_opts o = {.warmup = 5, .trials = 21, .reps = 3, .timeout_ms = 10000};
    rt_timing t1, t2;
    OK(rt_exec_time(e, &o, &t1, &err));
    OK(rt_exec_time(e, &o, &t2, &err));
    printf("axpy 256 MiB: median %.4f ms (min %.4f max %.4f), again %.4f ms\n", t1.median_ms,
           t1.min_ms, t1.max_ms, t2.median_ms);
    ck_assert(t1.median_ms > 0.05); /* 768 MiB moved cannot take under 50 us */
    ck_assert(t1.max_ms / t1.min_ms < 1.5);
    double r = t1.median_ms / t2.median_ms;
    ck_assert_msg(r > 0.9 && r < 1.1, "medians %.4f and %.4f differ by over 10%%", t1.median_ms,
                  t2.median_ms);
    rt_exec_free(e);
    rt_graph_free(g);
    rt_buf_release(ctx, &X), rt_buf_release(ctx, &Y);
    rt_ctx_free(ctx);
}
END_TEST

/* Is there a device? Asked in a child process: CUDA initialized in this process would be
 * unusable in the children Check forks for each test. */
static int probe_device(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        rt_ctx *ctx = NULL;
        lm_err err = {0};
        if (rt_ctx_new(NULL, &ctx, &err) != 0) {
            printf("skip: %s\n", err.msg);
            fflush(stdout);
            _exit(LM_CHECK_SKIP); /* not exit: nothing of CUDA's may run its exit handlers */
        }
        const rt_device_info *d = rt_ctx_device(ctx);
        printf("device: %s, sm_%d%d, %d SMs, driver %d, capture mode %s\n", d->name, d->cc_major,
               d->cc_minor, d->sm_count, d->driver_version,
               d->capture_mode == RT_CAPTURE_TO_GRAPH ? "to-graph" : "child-graph");
        fflush(stdout);
        rt_ctx_free(ctx);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 1;
    return WEXITSTATUS(status);
}

/* Without a device the program checks nothing: skipped (exit 77, the probe said why). */
static Suite *cuda_rt_gpu_suite(void)
{
    int probe = probe_device();
    if (probe == LM_CHECK_SKIP) exit(LM_CHECK_SKIP);
    if (probe != 0) {
        printf("device probe failed (status %d)\n", probe);
        return NULL;
    }
    Suite *s = suite_create("cuda_rt_gpu");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gpu_nvrtc_kernels_in_graph_with_updates_in_place);
    tcase_add_test(tc, gpu_matmul_f32_all_layouts_batched_epilogues);
    tcase_add_test(tc, gpu_matmul_tf32_all_layouts_batched_epilogues);
    tcase_add_test(tc, gpu_matmul_f16_all_layouts_batched_epilogues);
    tcase_add_test(tc, gpu_matmul_bf16_all_layouts_batched_epilogues);
    tcase_add_test(tc, gpu_matmul_captured_into_graph_between_kernels);
    tcase_add_test(tc, gpu_matmul_fp8_e4m3_with_scales);
    tcase_add_test(tc, gpu_fault_in_process_is_reported_and_reset_answers);
    tcase_add_test(tc, gpu_fault_in_isolated_run_leaves_the_caller_usable);
    tcase_add_test(tc, gpu_runaway_kernel_hits_the_timing_timeout);
    tcase_add_test(tc, gpu_timing_is_stable);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {cuda_rt_gpu_suite, NULL};
