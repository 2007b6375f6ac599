/* hl_build.h - the builder: tensor handles, the primitives with broadcasting, view ops and
 * the high-level ops lowered to primitives (hlir/builder/). Public. */
#ifndef LUMINAL_HL_BUILD_H
#define LUMINAL_HL_BUILD_H

#include "hl_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * The builder
 * ==================================================================================
 *
 * A tensor handle is a node plus the view through which later ops read it. Handles are
 * values; views are changed without adding nodes. A handle whose node is HL_NONE is the
 * invalid tensor that failed calls return (the graph's error says why); passing it on
 * is harmless, as every builder call returns the invalid tensor once the error is set.
 *
 * Binary ops broadcast as numpy does: shapes align at the right, a missing or size-1 dim
 * stretches to the other size; otherwise HL_ERR_SHAPE. Both operands must have the same
 * dtype (no implicit promotion; use hl_cast): otherwise HL_ERR_DTYPE. Axes are
 * 0..ndim-1; a negative axis counts from the end (-1 is the last).
 */

typedef struct hl_t {
    uint32_t node;
    hl_dtype dtype;
    hl_view view;
} hl_t;

/* Expression helpers on the graph's pool. */
hl_expr hl_n(hl_graph *g, int64_t v);
/* The handle that reads node id's output contiguously (for a node made by hl_graph_add);
 * the invalid tensor if id is not a node of g or is an Output. Sets no error. */
hl_t hl_node_tensor(hl_graph *g, uint32_t id);

/* --- sources and sinks --- */
/* A graph input named name (unique) with dims[0..ndim). */
hl_t hl_input(hl_graph *g, const char *name, hl_dtype dtype, uint32_t ndim, const hl_expr *dims);
/* Marks t as graph output name (unique). Returns the Output node id or HL_NONE. */
uint32_t hl_output(hl_graph *g, const char *name, hl_t t);
/* A Constant (F32 scalar), cast to dtype when dtype is not F32. */
hl_t hl_scalar(hl_graph *g, float value, hl_dtype dtype);
/* value broadcast to dims[0..ndim). */
hl_t hl_full(hl_graph *g, float value, hl_dtype dtype, uint32_t ndim, const hl_expr *dims);
/* The primitive Iota: Int tensor [len], element i = expr[z := i]. */
hl_t hl_iota(hl_graph *g, hl_expr expr, hl_expr len);
/* An Int tensor of dims[0..ndim) whose element at row-major position z is expr (an
 * expression in z): Iota plus splits. */
hl_t hl_iota_nd(hl_graph *g, hl_expr expr, uint32_t ndim, const hl_expr *dims);
/* The contiguous 0, 1, ..., n-1 as dtype. */
hl_t hl_arange(hl_graph *g, hl_expr n, hl_dtype dtype);

/* --- primitives with broadcasting --- */
hl_t hl_cast(hl_graph *g, hl_t x, hl_dtype to);
hl_t hl_exp2(hl_graph *g, hl_t x);
hl_t hl_log2(hl_graph *g, hl_t x);
hl_t hl_sin(hl_graph *g, hl_t x);
hl_t hl_recip(hl_graph *g, hl_t x);
hl_t hl_sqrt(hl_graph *g, hl_t x);
hl_t hl_add(hl_graph *g, hl_t a, hl_t b);
hl_t hl_mul(hl_graph *g, hl_t a, hl_t b);
hl_t hl_mod(hl_graph *g, hl_t a, hl_t b);
hl_t hl_lt(hl_graph *g, hl_t a, hl_t b);
/* Gather: result has indexes' shape; element i = element indexes[i] of data, counting
 * data's elements row-major through its view. indexes must be Int. */
hl_t hl_gather(hl_graph *g, hl_t indexes, hl_t data);
/* Scatter: a copy of dest with dest[indexes[i]] = src[i] (row-major element numbers of
 * dest; later i win). indexes Int; src the same dims as indexes, same dtype as dest. */
hl_t hl_scatter(hl_graph *g, hl_t dest, hl_t indexes, hl_t src);
/* One-axis reductions; the axis disappears. */
hl_t hl_sum_reduce(hl_graph *g, hl_t x, int axis);
hl_t hl_max_reduce(hl_graph *g, hl_t x, int axis);

/* --- views (no nodes unless a copy is needed) --- */
hl_t hl_permute(hl_graph *g, hl_t x, const uint32_t *perm);
hl_t hl_transpose(hl_graph *g, hl_t x, int a, int b);
/* Inserts a broadcast dim of size at position axis (0..ndim; negative counts from the
 * end so -1 appends). */
hl_t hl_expand(hl_graph *g, hl_t x, int axis, hl_expr size);
/* Broadcasts x to dims[0..ndim) with numpy's rules. */
hl_t hl_broadcast_to(hl_graph *g, hl_t x, uint32_t ndim, const hl_expr *dims);
/* New dims with the same element count: the two products must be equal expressions
 * (HL_ERR_SHAPE otherwise, including counts that cannot be proven equal). Merges and
 * splits the view when the strides allow it (size-1 dims come and go freely), else
 * copies x contiguous first (an identity Cast) and reshapes the copy. */
hl_t hl_reshape(hl_graph *g, hl_t x, uint32_t ndim, const hl_expr *dims);
/* A contiguous copy (an identity Cast) unless x already is contiguous. */
hl_t hl_contiguous(hl_graph *g, hl_t x);
/* Elements [start, end) of axis; a view when start is 0, else a Gather. */
hl_t hl_slice(hl_graph *g, hl_t x, int axis, hl_expr start, hl_expr end);
/* Pads axis with before and after elements of value. */
hl_t hl_pad(hl_graph *g, hl_t x, int axis, hl_expr before, hl_expr after, float value);
/* Joins a and b along axis (other dims equal). */
hl_t hl_concat(hl_graph *g, hl_t a, hl_t b, int axis);

/* --- elementwise --- */
hl_t hl_neg(hl_graph *g, hl_t x);
hl_t hl_sub(hl_graph *g, hl_t a, hl_t b);
hl_t hl_div(hl_graph *g, hl_t a, hl_t b);
hl_t hl_add_scalar(hl_graph *g, hl_t x, float v);
hl_t hl_mul_scalar(hl_graph *g, hl_t x, float v);
hl_t hl_exp(hl_graph *g, hl_t x);
hl_t hl_log(hl_graph *g, hl_t x);
hl_t hl_cos(hl_graph *g, hl_t x);
hl_t hl_sigmoid(hl_graph *g, hl_t x);
hl_t hl_silu(hl_graph *g, hl_t x);
hl_t hl_tanh(hl_graph *g, hl_t x);
/* gelu: x * Phi(x) with erf (exact form); gelu_tanh: the tanh approximation. */
hl_t hl_gelu(hl_graph *g, hl_t x);
hl_t hl_gelu_tanh(hl_graph *g, hl_t x);
hl_t hl_relu(hl_graph *g, hl_t x);
hl_t hl_maximum(hl_graph *g, hl_t a, hl_t b);
hl_t hl_minimum(hl_graph *g, hl_t a, hl_t b);
/* Comparisons give Bool. */
hl_t hl_gt(hl_graph *g, hl_t a, hl_t b);
hl_t hl_le(hl_graph *g, hl_t a, hl_t b);
hl_t hl_ge(hl_graph *g, hl_t a, hl_t b);
hl_t hl_eq(hl_graph *g, hl_t a, hl_t b);
hl_t hl_ne(hl_graph *g, hl_t a, hl_t b);
/* mask ? a : b, as a*m + b*(1-m) with m = cast(mask): so an inf or NaN in the branch
 * not taken still reaches the result as NaN (as in Luminal). mask is Bool. */
hl_t hl_where(hl_graph *g, hl_t mask, hl_t a, hl_t b);

/* --- reductions over several axes (keepdim false removes them) --- */
hl_t hl_sum(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim);
hl_t hl_max(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim);
hl_t hl_mean(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim);

/* --- normalisation and friends (over one axis, shape kept) --- */
hl_t hl_softmax(hl_graph *g, hl_t x, int axis);
hl_t hl_log_softmax(hl_graph *g, hl_t x, int axis);
/* Over the last axis: (x - mean) / sqrt(var + eps) * weight + bias; weight and bias may
 * be invalid handles (node HL_NONE) to leave them out. */
hl_t hl_layer_norm(hl_graph *g, hl_t x, hl_t weight, hl_t bias, float eps);
/* Over the last axis: x / sqrt(mean(x^2) + eps) * weight (weight optional as above). */
hl_t hl_rms_norm(hl_graph *g, hl_t x, hl_t weight, float eps);

/* --- linear algebra --- */
/* a[..., m, k] x b[..., k, n] -> [..., m, n] with batch dims broadcast; a 1-D operand
 * is treated as numpy does (prepended / appended dim, removed after). */
hl_t hl_matmul(hl_graph *g, hl_t a, hl_t b);
/* table[vocab, d] rows picked by ids (Int, any shape) -> ids.shape + [d]. */
hl_t hl_embedding(hl_graph *g, hl_t table, hl_t ids);

/* --- attention --- */
/* An n x n tensor of dtype with 0 on and below the diagonal and -1e30 above (-inf once
 * rounded to f16 storage; the most negative finite value in the saturating FP8 formats),
 * to add to attention scores. */
hl_t hl_causal_mask(hl_graph *g, hl_expr n, hl_dtype dtype);
/* softmax(q k^T * scale [+ causal mask]) v over the last two dims: q[..., s, d],
 * k[..., t, d], v[..., t, e] -> [..., s, e]. scale <= 0 means 1/sqrt(d). */
hl_t hl_attention(hl_graph *g, hl_t q, hl_t k, hl_t v, bool causal, float scale);
/* Rotary embedding (rotate-half form) of x[..., s, d] (d even): position of row j is
 * pos_offset + j; pair (x_i, x_{i+d/2}) is rotated by angle pos * base^(-2i/d). */
hl_t hl_rope(hl_graph *g, hl_t x, hl_expr pos_offset, float base);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_BUILD_H */
