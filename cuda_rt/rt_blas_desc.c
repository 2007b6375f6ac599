/* rt_blas_desc.c: the matmul spec: defaults, validation, equality, hashing, and its mapping
 * onto cuBLASLt's column-major problem.
 *
 * Equality and hashing both go through one canonical list of the fields as int64 (floats
 * by their bits), so the two can never disagree and struct padding never matters.
 *
 * Mapping. A stored matrix in row-major order is the column-major storage of its
 * transpose, so for A and B the order folds into the transpose flag:
 * t = trans XOR row_major, and the stored column-major matrix is (t ? k x m : m x k) for
 * A. For D (and C) it cannot fold: a row-major D is computed as the column-major D^T =
 * op(B)^T op(A)^T, i.e. with A and B swapped, m and n swapped and each op flipped.
 */
#include "rt_int.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

size_t rt_dtype_size(rt_dtype t)
{
    switch (t) {
    case RT_F32:
        return 4;
    case RT_F16:
    case RT_BF16:
        return 2;
    case RT_F8_E4M3:
    case RT_F8_E5M2:
        return 1;
    }
    return 0;
}

static bool is_fp8(rt_dtype t)
{
    return t == RT_F8_E4M3 || t == RT_F8_E5M2;
}

static const char *dtype_name(rt_dtype t)
{
    switch (t) {
    case RT_F32:
        return "f32";
    case RT_F16:
        return "f16";
    case RT_BF16:
        return "bf16";
    case RT_F8_E4M3:
        return "f8e4m3";
    case RT_F8_E5M2:
        return "f8e5m2";
    }
    return "?";
}

cudaDataType_t rt__cuda_type(rt_dtype t)
{
    switch (t) {
    case RT_F32:
        return CUDA_R_32F;
    case RT_F16:
        return CUDA_R_16F;
    case RT_BF16:
        return CUDA_R_16BF;
    case RT_F8_E4M3:
        return CUDA_R_8F_E4M3;
    case RT_F8_E5M2:
        return CUDA_R_8F_E5M2;
    }
    return CUDA_R_32F;
}

bool rt__epi_has_bias(rt_epilogue e)
{
    return e == RT_EPI_BIAS || e == RT_EPI_BIAS_RELU || e == RT_EPI_BIAS_GELU;
}

void rt_matmul_spec_init(rt_matmul_spec *s, int64_t m, int64_t n, int64_t k, rt_dtype type)
{
    memset(s, 0, sizeof *s);
    s->m = m, s->n = n, s->k = k;
    s->batch = 1;
    s->order_a = s->order_b = s->order_d = RT_ROW_MAJOR;
    s->type_a = s->type_b = type;
    s->type_c = s->type_d = is_fp8(type) ? RT_BF16 : type;
    s->type_bias = s->type_d;
    s->compute = RT_COMPUTE_F32;
    s->alpha = 1.0f;
    s->beta = 0.0f;
    s->epilogue = RT_EPI_NONE;
    s->lda = k;
    if (is_fp8(type)) { /* fp8 wants B as n x k (cuBLASLt's "TN") */
        s->trans_b = true;
        s->ldb = k;
    } else {
        s->ldb = n;
    }
    s->ldc = s->ldd = n;
    s->stride_a = m * k;
    s->stride_b = k * n;
    s->stride_c = s->stride_d = m * n;
}

enum { NFIELDS = 29 };

static void canon(const rt_matmul_spec *s, int64_t f[NFIELDS])
{
    uint32_t ab, bb;
    memcpy(&ab, &s->alpha, sizeof ab);
    memcpy(&bb, &s->beta, sizeof bb);
    int64_t v[NFIELDS] = {s->m,         s->n,        s->k,        s->batch,   s->stride_a,
                          s->stride_b,  s->stride_c, s->stride_d, s->order_a, s->order_b,
                          s->order_d,   s->trans_a,  s->trans_b,  s->lda,     s->ldb,
                          s->ldc,       s->ldd,      s->type_a,   s->type_b,  s->type_c,
                          s->type_d,    s->compute,  ab,          bb,         s->epilogue,
                          s->type_bias, s->scale_a,  s->scale_b,  s->scale_d};
    memcpy(f, v, sizeof v);
}

bool rt_matmul_spec_equal(const rt_matmul_spec *a, const rt_matmul_spec *b)
{
    int64_t x[NFIELDS], y[NFIELDS];
    canon(a, x);
    canon(b, y);
    return memcmp(x, y, sizeof x) == 0;
}

uint64_t rt_matmul_spec_hash(const rt_matmul_spec *s)
{
    int64_t f[NFIELDS];
    canon(s, f);
    return XXH3_64bits(f, sizeof f);
}

/* Stored matrix rows x cols (row-major reading) and its ld/stride checks. A read-only
 * operand (A, B) may take any batch stride >= 0: its batches may overlap (interleaved heads,
 * stride 0 broadcasts); cuBLASLt states no bound on a batch stride (docs/cuda_rt.md). */
static int check_operand(const char *name, int64_t rows, int64_t cols, rt_order order, int64_t ld,
                         int64_t stride, int32_t batch, bool stride0_ok, bool read_only,
                         lm_err *err)
{
    int64_t need = order == RT_ROW_MAJOR ? cols : rows;
    if (ld < need)
        return RT_FAIL(err, RT_EARG,
                       "matmul spec: ld%s = %lld is below %lld (%s %s stored %lld x %lld); fix: "
                       "ld must be at least the length of the contiguous dimension",
                       name, (long long)ld, (long long)need, name,
                       order == RT_ROW_MAJOR ? "row-major" : "column-major", (long long)rows,
                       (long long)cols);
    int64_t span = ld * (order == RT_ROW_MAJOR ? rows : cols);
    if (batch > 1 && read_only && stride < 0)
        return RT_FAIL(err, RT_EARG,
                       "matmul spec: stride_%s = %lld is negative with batch %d; fix: use >= 0 "
                       "(0 broadcasts; batches of %s may overlap)",
                       name, (long long)stride, batch, name);
    if (batch > 1 && !read_only && stride < span && !(stride0_ok && stride == 0))
        return RT_FAIL(err, RT_EARG,
                       "matmul spec: stride_%s = %lld is below one matrix (%lld elements) with "
                       "batch %d; fix: use >= %lld%s",
                       name, (long long)stride, (long long)span, batch, (long long)span,
                       stride0_ok ? ", or 0 to broadcast" : "");
    return 0;
}

int rt_matmul_spec_check(const rt_matmul_spec *s, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (s->m < 1 || s->n < 1 || s->k < 1 || s->m > INT32_MAX || s->n > INT32_MAX ||
        s->k > INT32_MAX)
        return RT_FAIL(err, RT_EARG, "matmul spec: m=%lld n=%lld k=%lld must be in 1..2^31-1",
                       (long long)s->m, (long long)s->n, (long long)s->k);
    if (s->batch < 1) return RT_FAIL(err, RT_EARG, "matmul spec: batch %d must be >= 1", s->batch);
    if ((unsigned)s->order_a > RT_ROW_MAJOR || (unsigned)s->order_b > RT_ROW_MAJOR ||
        (unsigned)s->order_d > RT_ROW_MAJOR || (unsigned)s->epilogue > RT_EPI_BIAS_GELU ||
        (unsigned)s->compute > RT_COMPUTE_TF32 || (unsigned)s->type_a > RT_F8_E5M2 ||
        (unsigned)s->type_b > RT_F8_E5M2 || (unsigned)s->type_c > RT_F8_E5M2 ||
        (unsigned)s->type_d > RT_F8_E5M2 || (unsigned)s->type_bias > RT_F8_E5M2)
        return RT_FAIL(err, RT_EARG,
                       "matmul spec: an order, type, compute or epilogue field "
                       "holds a value outside its enum");
    if (!isfinite(s->alpha) || !isfinite(s->beta))
        return RT_FAIL(err, RT_EARG, "matmul spec: alpha %g and beta %g must be finite",
                       (double)s->alpha, (double)s->beta);
    rt_dtype a = s->type_a, b = s->type_b, c = s->type_c, d = s->type_d;
    bool fp8 = is_fp8(a) || is_fp8(b);
    if (fp8) {
        if (!is_fp8(a) || !is_fp8(b) || (a == RT_F8_E5M2 && b == RT_F8_E5M2))
            return RT_FAIL(err, RT_EARG,
                           "matmul spec: fp8 needs both A and B in fp8, not both e5m2 (A %s, B %s)",
                           dtype_name(a), dtype_name(b));
        if (is_fp8(c) || !(d == c || is_fp8(d)))
            return RT_FAIL(err, RT_EARG,
                           "matmul spec: with fp8 inputs C must be bf16, f16 or f32 and D the same "
                           "or fp8 (C %s, D %s)",
                           dtype_name(c), dtype_name(d));
        if (s->compute != RT_COMPUTE_F32)
            return RT_FAIL(err, RT_EARG, "matmul spec: fp8 computes in f32 only");
        if (s->type_bias != c)
            return RT_FAIL(err, RT_EARG, "matmul spec: with fp8 the bias type must be C's (%s)",
                           dtype_name(c));
        rt_lt_problem p;
        rt__lt_problem(s, &p);
        if (p.a.op != CUBLAS_OP_T || p.b.op != CUBLAS_OP_N)
            return RT_FAIL(err, RT_EARG,
                           "matmul spec: fp8 needs cuBLASLt's \"TN\" form: for row-major D, A "
                           "m x k untransposed and B stored n x k with trans_b (or the equivalent "
                           "orders)");
    } else {
        if (a != b)
            return RT_FAIL(err, RT_EARG, "matmul spec: A is %s but B is %s; fix: use one type",
                           dtype_name(a), dtype_name(b));
        if (c != d)
            return RT_FAIL(err, RT_EARG, "matmul spec: C is %s but D is %s; fix: use one type",
                           dtype_name(c), dtype_name(d));
        if (a == RT_F32 ? d != RT_F32 : !(d == a || d == RT_F32))
            return RT_FAIL(
                err, RT_EARG, "matmul spec: %s inputs cannot write a %s D; fix: D must be %s%s",
                dtype_name(a), dtype_name(d), dtype_name(a), a == RT_F32 ? "" : " or f32");
        if (s->compute == RT_COMPUTE_TF32 && a != RT_F32)
            return RT_FAIL(err, RT_EARG, "matmul spec: tf32 compute needs f32 inputs (A is %s)",
                           dtype_name(a));
        if (s->scale_a || s->scale_b || s->scale_d)
            return RT_FAIL(err, RT_EARG, "matmul spec: scales are for fp8 inputs only");
        if (rt__epi_has_bias(s->epilogue) && s->type_bias != d)
            return RT_FAIL(err, RT_EARG, "matmul spec: the bias type (%s) must be D's (%s)",
                           dtype_name(s->type_bias), dtype_name(d));
    }
    int64_t m = s->m, n = s->n, k = s->k;
    if (check_operand("a", s->trans_a ? k : m, s->trans_a ? m : k, s->order_a, s->lda, s->stride_a,
                      s->batch, true, true, err) ||
        check_operand("b", s->trans_b ? n : k, s->trans_b ? k : n, s->order_b, s->ldb, s->stride_b,
                      s->batch, true, true, err) ||
        check_operand("c", m, n, s->order_d, s->ldc, s->stride_c, s->batch, true, false, err) ||
        check_operand("d", m, n, s->order_d, s->ldd, s->stride_d, s->batch, false, false, err))
        return err->code;
    return 0;
}

static cublasLtEpilogue_t lt_epilogue(rt_epilogue e)
{
    switch (e) {
    case RT_EPI_NONE:
        return CUBLASLT_EPILOGUE_DEFAULT;
    case RT_EPI_BIAS:
        return CUBLASLT_EPILOGUE_BIAS;
    case RT_EPI_RELU:
        return CUBLASLT_EPILOGUE_RELU;
    case RT_EPI_GELU:
        return CUBLASLT_EPILOGUE_GELU;
    case RT_EPI_BIAS_RELU:
        return CUBLASLT_EPILOGUE_RELU_BIAS;
    case RT_EPI_BIAS_GELU:
        return CUBLASLT_EPILOGUE_GELU_BIAS;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

void rt__lt_problem(const rt_matmul_spec *s, rt_lt_problem *p)
{
    memset(p, 0, sizeof *p);
    bool ta = s->trans_a ^ (s->order_a == RT_ROW_MAJOR);
    bool tb = s->trans_b ^ (s->order_b == RT_ROW_MAJOR);
    /* our operands as column-major stored matrices */
    rt_lt_operand A = {rt__cuda_type(s->type_a),
                       (uint64_t)(ta ? s->k : s->m),
                       (uint64_t)(ta ? s->m : s->k),
                       s->lda,
                       s->stride_a,
                       ta ? CUBLAS_OP_T : CUBLAS_OP_N};
    rt_lt_operand B = {rt__cuda_type(s->type_b),
                       (uint64_t)(tb ? s->n : s->k),
                       (uint64_t)(tb ? s->k : s->n),
                       s->ldb,
                       s->stride_b,
                       tb ? CUBLAS_OP_T : CUBLAS_OP_N};
    bool row = s->order_d == RT_ROW_MAJOR;
    uint64_t dm = (uint64_t)(row ? s->n : s->m), dn = (uint64_t)(row ? s->m : s->n);
    p->c = (rt_lt_operand){rt__cuda_type(s->type_c), dm, dn, s->ldc, s->stride_c, CUBLAS_OP_N};
    p->d = (rt_lt_operand){rt__cuda_type(s->type_d), dm, dn, s->ldd, s->stride_d, CUBLAS_OP_N};
    if (row) { /* D^T = op(B)^T op(A)^T: flip each op and swap */
        p->swapped = true;
        p->a = B;
        p->a.op = tb ? CUBLAS_OP_N : CUBLAS_OP_T;
        p->b = A;
        p->b.op = ta ? CUBLAS_OP_N : CUBLAS_OP_T;
    } else {
        p->a = A;
        p->b = B;
    }
    bool f32in = s->type_a == RT_F32;
    p->compute =
        f32in && s->compute == RT_COMPUTE_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    p->epilogue = lt_epilogue(s->epilogue);
    p->bias_type = rt__cuda_type(s->type_bias);
}
