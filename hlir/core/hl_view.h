/* hl_view.h - views (shape trackers): dims plus one stride expression in z per dim
 * (hlir/core/hl_view.c). Public. */
#ifndef LUMINAL_HL_VIEW_H
#define LUMINAL_HL_VIEW_H

#include "hl_expr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * Views (shape trackers)
 * ==================================================================================
 *
 * A view says how an op reads a tensor stored contiguously in a flat buffer. Logical
 * element (i_0, ..., i_{n-1}) lives at flat position sum_d stride_d[z := i_d]. So a
 * contiguous view has stride_d = z * (product of later dims), a broadcast dim has stride
 * 0, a merged dim has a stride in z / inner and z % inner. Views are plain values (no
 * heap); their expressions live in the pool passed to each function. Views never hold an
 * offset: slices start at zero (an offset slice is a builder op, see hl_slice).
 *
 * Every function returns HL_OK with *out set, or an error in err and *out untouched.
 * out may alias v.
 */

#define HL_MAX_DIMS 8

typedef struct hl_view {
    uint32_t ndim;
    hl_expr dims[HL_MAX_DIMS];
    hl_expr strides[HL_MAX_DIMS]; /* expressions in z */
} hl_view;

/* The z-coefficient c of a stride s = c*z (c free of z; 0 for a broadcast) over a dim of
 * size n, or HL_NONE when s is not of that form. The stride is first simplified with
 * z < n when n is a number: a merged stride such as 64*S*(z/64) + z%64 is z over 64. */
hl_expr hl_stride_coef(hl_expr_pool *p, hl_expr s, hl_expr n);

/* Row-major element count of dims[0..ndim) into *out; false for a negative dim or a
 * size_t overflow. */
bool hl_numel_of(uint32_t ndim, const int64_t *dims, size_t *out);

/* The contiguous (row-major) view of dims[0..ndim). ndim 0 is a scalar. */
hl_status hl_view_contiguous(hl_expr_pool *p, uint32_t ndim, const hl_expr *dims, hl_view *out,
                             lm_err *err);
/* out.dims[i] = v.dims[perm[i]]; perm must be a permutation of 0..ndim-1. */
hl_status hl_view_permute(hl_expr_pool *p, const hl_view *v, const uint32_t *perm, hl_view *out,
                          lm_err *err);
/* Inserts a new broadcast dim of the given size at position axis (0..ndim), stride 0. */
hl_status hl_view_expand(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                         hl_view *out, lm_err *err);
/* Broadcasts an existing dim of size 1 to size (stride becomes 0). */
hl_status hl_view_broadcast(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                            hl_view *out, lm_err *err);
/* Merges dims axis and axis+1 into one dim of their product size; its stride is
 * s_axis[z := z / d_{axis+1}] + s_{axis+1}[z := z % d_{axis+1}], simplified (so merging
 * contiguous dims gives a contiguous stride again). */
hl_status hl_view_merge(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_view *out,
                        lm_err *err);
/* Splits dim axis into (size / inner, inner). Needs the dim's stride to be linear in z
 * (k * z with k free of z, or 0) and, when both are numbers, size divisible by inner;
 * otherwise HL_ERR_VIEW (the builder then copies the tensor contiguous first). */
hl_status hl_view_split(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr inner,
                        hl_view *out, lm_err *err);
/* Shrinks dim axis to [0, size). When both sizes are numbers, size <= old size is
 * checked (HL_ERR_SHAPE). */
hl_status hl_view_slice(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                        hl_view *out, lm_err *err);
/* Removes a dim of size 1 (HL_ERR_SHAPE if its size is not the number 1). */
hl_status hl_view_squeeze(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_view *out,
                          lm_err *err);

/* The flat buffer position of logical element z (z counts row-major over v.dims), as an
 * expression in z: sum_d stride_d[z := (z / inner_d) % dim_d]. HL_NONE on OOM or overflow. */
hl_expr hl_view_index(hl_expr_pool *p, const hl_view *v);
/* The number of elements, product of dims (1 for a scalar). HL_NONE on OOM or overflow. */
hl_expr hl_view_numel(hl_expr_pool *p, const hl_view *v);
/* True when the strides equal the contiguous strides of v's dims (ids compare; a dim of
 * size 1 may have any stride). May add those contiguous strides to p. */
bool hl_view_is_contiguous(hl_expr_pool *p, const hl_view *v);
/* True when both views have the same dims and strides. */
bool hl_view_equal(const hl_view *a, const hl_view *b);
/* Prints "[d0, d1]:[s0, s1]" to f. */
void hl_view_fprint(const hl_expr_pool *p, const hl_view *v, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_VIEW_H */
