/* ll_exec_mm.c - KMatmul and Blas as the GPU computes them (ll_matmul in llir.h):
 *
 *   D[b, i, j] = epi(alpha * acc + beta * C[b, i, j] (+ bias[j])),
 *   acc = sum over kk = 0 .. K-1, in that order, of A[b, i, kk] * B[b, kk, j]
 *
 * Every operand is read in the dtype the node names (type_a, type_b, type_c, type_bias:
 * a producer of another dtype is reinterpreted, ll__x_operand) and widened to f32. Each
 * product is exact and added to the f32 accumulator with one rounding: acc = fmaf(a, b,
 * acc), which is what a tensor core or an FMA loop gives (for bf16, f16 and FP8
 * operands the product is exact in f32 anyway, so this equals acc += a * b). Then, in
 * f32: t = alpha * acc (alpha as the node holds it, already rounded to alpha_dt), t = t +
 * C when beta is 1, t = t + bias[j], t = gelu(t) in its tanh form, and one rounding to
 * type_d. A and B are addressed as cuBLASLt addresses them: element (i, kk) of batch b of
 * A at b*stride_a + (row-major ? i*lda + kk : i + kk*lda), B's (kk, j) likewise with ldb;
 * C and D are contiguous row-major [batch, M, N]. A position outside an operand's buffer
 * is an error, as a view reaching outside its producer is in the reference. */
#include "ll_exec_int.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

typedef struct mm_sizes {
    int64_t m, n, k, batch, lda, ldb, sa, sb;
} mm_sizes;

static int field(ll_exec *x, uint32_t id, hl_expr e, const char *name, int64_t *out)
{
    if (e == HL_NONE || e >= hl_expr_count(x->p))
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id, "its matmul has no %s", name);
    char what[240];
    ll__node_desc(x->g, id, what, sizeof what);
    size_t len = strlen(what);
    snprintf(what + len, sizeof what - len, ": the matmul's %s", name);
    if (ll__hl_eval(x->p, e, &x->env, 0, out, what, x->err)) return x->err->code;
    if (*out < 0)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "the matmul's %s is negative (%" PRId64 ")", name, *out);
    return 0;
}

static uint32_t operand_count(const ll_matmul *mm)
{
    return 2u + (mm->beta != 0.0) + ((mm->epilogue & LL_EPI_BIAS) != 0);
}

/* The dtype input i is read in. */
static hl_dtype operand_dtype(const ll_matmul *mm, uint32_t i)
{
    if (i == 0) return mm->type_a;
    if (i == 1) return mm->type_b;
    if (i == 2 && mm->beta != 0.0) return mm->type_c;
    return mm->type_bias;
}

size_t ll__x_matmul_work(const ll_exec *x, uint32_t id)
{
    const ll_node *n = ll_graph_node(x->g, id);
    size_t w = 0;
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t s = n->in[i];
        size_t b =
            x->numel[s] * 4 + ll__x_operand_bytes(x, s, operand_dtype(&n->mm, i), x->numel[s]);
        w = w > SIZE_MAX - b ? SIZE_MAX : w + b;
    }
    return w;
}

/* Input i of node id as f32 values (*out, count elements; the caller frees it). */
static int decode(ll_exec *x, uint32_t id, uint32_t i, float **out, size_t *count)
{
    const ll_node *n = ll_graph_node(x->g, id);
    uint32_t src = n->in[i];
    hl_dtype rdt = operand_dtype(&n->mm, i);
    if ((unsigned)rdt >= HL_DTYPE_COUNT)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id, "operand %u has no dtype", i);
    if (n->in_dtype[i] != rdt)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "operand %u: the node reads %s but its matmul says %s", i,
                             hl_dtype_name(n->in_dtype[i]), hl_dtype_name(rdt));
    return ll__x_operand_f32(x, id, src, rdt, out, count);
}

/* Checks that the farthest element of A (or B) lies inside its `have` elements. */
static int check_reach(ll_exec *x, uint32_t id, const char *what, int64_t batch, int64_t stride,
                       int64_t rows, int64_t cols, int64_t ld, ll_order order, size_t have)
{
    if (batch == 0 || rows == 0 || cols == 0) return 0;
    int64_t far, t;
    bool ovf = __builtin_mul_overflow(batch - 1, stride, &far);
    if (order == LL_ROW_MAJOR)
        ovf = ovf || __builtin_mul_overflow(rows - 1, ld, &t) ||
              __builtin_add_overflow(far, t, &far) || __builtin_add_overflow(far, cols - 1, &far);
    else
        ovf = ovf || __builtin_mul_overflow(cols - 1, ld, &t) ||
              __builtin_add_overflow(far, t, &far) || __builtin_add_overflow(far, rows - 1, &far);
    if (ovf || (uint64_t)far >= (uint64_t)have)
        return ll__fail_node(x->err, LM_ERUNTIME, x->g, id,
                             "%s reaches element %" PRId64 "%s of a buffer of %zu elements", what,
                             far, ovf ? " (overflowing)" : "", have);
    return 0;
}

static float gelu_tanh(float t)
{
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * t * (1.0f + tanhf(k * (t + 0.044715f * t * t * t)));
}

int ll__x_matmul(ll_exec *x, uint32_t id)
{
    const ll_node *n = ll_graph_node(x->g, id);
    const ll_matmul *mm = &n->mm;
    mm_sizes s;
    int rc;
    if ((rc = field(x, id, mm->m, "M", &s.m)) || (rc = field(x, id, mm->n, "N", &s.n)) ||
        (rc = field(x, id, mm->k, "K", &s.k)) ||
        (rc = field(x, id, mm->batch, "batch", &s.batch)) ||
        (rc = field(x, id, mm->lda, "lda", &s.lda)) ||
        (rc = field(x, id, mm->ldb, "ldb", &s.ldb)) ||
        (rc = field(x, id, mm->stride_a, "stride_a", &s.sa)) ||
        (rc = field(x, id, mm->stride_b, "stride_b", &s.sb)))
        return rc;
    if (mm->beta != 0.0 && mm->beta != 1.0)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id, "beta is %g, not 0 or 1", mm->beta);
    if ((unsigned)mm->epilogue > LL_EPI_BIAS_GELU || (unsigned)mm->order_a > LL_COL_MAJOR ||
        (unsigned)mm->order_b > LL_COL_MAJOR)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id, "epilogue or order out of range");
    if (n->n_in != operand_count(mm))
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "reads %u nodes, but its beta and epilogue need %u", n->n_in,
                             operand_count(mm));
    if (mm->type_d != n->dtype)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id, "writes %s but the node is %s",
                             hl_dtype_name(mm->type_d), hl_dtype_name(n->dtype));
    int64_t total;
    if (__builtin_mul_overflow(s.batch, s.m, &total) ||
        __builtin_mul_overflow(total, s.n, &total) || (uint64_t)total != (uint64_t)x->numel[id])
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "computes batch %" PRId64 " x %" PRId64 " x %" PRId64
                             " elements, but the node holds %zu",
                             s.batch, s.m, s.n, x->numel[id]);
    float *op[LL_MAX_IN] = {NULL};
    size_t cnt[LL_MAX_IN] = {0};
    hl_tensor out;
    memset(&out, 0, sizeof out);
    for (uint32_t i = 0; i < n->n_in && !rc; i++)
        rc = decode(x, id, i, &op[i], &cnt[i]);
    if (!rc) rc = check_reach(x, id, "A", s.batch, s.sa, s.m, s.k, s.lda, mm->order_a, cnt[0]);
    if (!rc) rc = check_reach(x, id, "B", s.batch, s.sb, s.k, s.n, s.ldb, mm->order_b, cnt[1]);
    const float *A = op[0], *B = op[1], *C = NULL, *bias = NULL;
    uint32_t next = 2;
    if (!rc && mm->beta != 0.0) {
        C = op[next];
        if (cnt[next++] < (size_t)total)
            rc = ll__fail_node(x->err, LM_ERUNTIME, x->g, id,
                               "C holds %zu elements, fewer than the %" PRId64 " of D",
                               cnt[next - 1], total);
    }
    if (!rc && (mm->epilogue & LL_EPI_BIAS)) {
        bias = op[next];
        if (cnt[next] < (size_t)s.n)
            rc = ll__fail_node(x->err, LM_ERUNTIME, x->g, id,
                               "the bias holds %zu elements, fewer than N = %" PRId64, cnt[next],
                               s.n);
    }
    if (!rc && ll__hl_tensor_init(&out, mm->type_d, n->ndim, ll__x_dims(x, id), x->err))
        rc = ll__fail_node(x->err, x->err->code, x->g, id, "allocating the result");
    if (rc) goto done;
    const float alpha = (float)mm->alpha;
    const bool gelu = (mm->epilogue & LL_EPI_GELU) != 0;
    size_t o = 0;
    for (int64_t b = 0; b < s.batch; b++)
        for (int64_t i = 0; i < s.m; i++)
            for (int64_t j = 0; j < s.n; j++, o++) {
                const float *pa = A + b * s.sa, *pb = B + b * s.sb;
                float acc = 0.0f;
                for (int64_t kk = 0; kk < s.k; kk++) {
                    float av =
                        mm->order_a == LL_ROW_MAJOR ? pa[i * s.lda + kk] : pa[i + kk * s.lda];
                    float bv =
                        mm->order_b == LL_ROW_MAJOR ? pb[kk * s.ldb + j] : pb[kk + j * s.ldb];
                    acc = fmaf(av, bv, acc);
                }
                float t = alpha * acc;
                if (C) t = t + C[o];
                if (bias) t = t + bias[j];
                if (gelu) t = gelu_tanh(t);
                hl_tensor_set(&out, o, (double)t);
            }
    x->buf[id] = out;
    x->owned[id] = true;
done:
    for (uint32_t i = 0; i < LL_MAX_IN; i++)
        ll__free(op[i]);
    return rc;
}
