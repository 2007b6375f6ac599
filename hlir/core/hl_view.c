/* hl_view.c - shape trackers: dims plus one stride expression in z per dim.
 *
 * A view maps logical coordinates to a flat buffer position: position =
 * sum_d strides[d][z := i_d]. Every change here only rewrites dims and strides; no data
 * moves. Views are values: each function computes into a local copy and writes *out
 * only on success, so out may alias v and a failure changes nothing. */
#include "core/hl_expr_int.h"

static hl_status bad_axis(lm_err *err, const char *fn, int64_t axis, uint32_t ndim)
{
    return hl__fail(err, HL_ERR_ARG, NULL, "%s: axis %lld is out of range for a %u-d view", fn,
                    (long long)axis, ndim);
}

static hl_status oom(lm_err *err, const char *fn)
{
    return hl__fail(err, HL_ERR_NOMEM, NULL, "%s: out of memory", fn);
}

/* A constructor gave HL_NONE: out of memory, or a size or stride that overflows int64. */
static hl_status none_err(hl_expr_pool *p, lm_err *err, const char *fn)
{
    if (hl_expr_pool_failed(p)) return oom(err, fn);
    return hl__fail(err, HL_ERR_EVAL, NULL, "%s: a size or stride cannot be built (%s)", fn,
                    hl__none_reason(p));
}

/* An operand that is not an expression of p: out of memory if it is HL_NONE from a
 * constructor that failed, else a caller's mistake. */
static hl_status bad_expr(hl_expr_pool *p, hl_expr e, lm_err *err, const char *fn, const char *what)
{
    if (e == HL_NONE && hl_expr_pool_failed(p)) return oom(err, fn);
    return hl__fail(err, HL_ERR_ARG, NULL, "%s: %s is not a valid expression", fn, what);
}

hl_status hl_view_contiguous(hl_expr_pool *p, uint32_t ndim, const hl_expr *dims, hl_view *out,
                             lm_err *err)
{
    if (ndim > HL_MAX_DIMS)
        return hl__fail(err, HL_ERR_ARG, NULL, "a view has at most %d dims, not %u", HL_MAX_DIMS,
                        ndim);
    hl_view r = {0};
    r.ndim = ndim;
    hl_expr inner = hl_e_num(p, 1), z = hl_e_z(p);
    for (uint32_t i = ndim; i-- > 0;) {
        if (dims[i] == HL_NONE || dims[i] >= hl_expr_count(p))
            return bad_expr(p, dims[i], err, "contiguous", "a dim");
        r.dims[i] = dims[i];
        r.strides[i] = hl_e_mul(p, z, inner);
        inner = hl_e_mul(p, inner, dims[i]);
        if (r.strides[i] == HL_NONE) return none_err(p, err, "contiguous");
    }
    if (inner == HL_NONE) return none_err(p, err, "contiguous");
    *out = r;
    return HL_OK;
}

hl_status hl_view_permute(hl_expr_pool *p, const hl_view *v, const uint32_t *perm, hl_view *out,
                          lm_err *err)
{
    (void)p;
    bool seen[HL_MAX_DIMS] = {0};
    hl_view r = *v;
    for (uint32_t i = 0; i < v->ndim; i++) {
        if (perm[i] >= v->ndim || seen[perm[i]])
            return hl__fail(err, HL_ERR_ARG, NULL,
                            "permute: entry %u (%u) makes the order not a permutation of 0..%u", i,
                            perm[i], v->ndim ? v->ndim - 1 : 0);
        seen[perm[i]] = true;
        r.dims[i] = v->dims[perm[i]];
        r.strides[i] = v->strides[perm[i]];
    }
    *out = r;
    return HL_OK;
}

hl_status hl_view_expand(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                         hl_view *out, lm_err *err)
{
    if (axis > v->ndim) return bad_axis(err, "expand", axis, v->ndim);
    if (v->ndim >= HL_MAX_DIMS)
        return hl__fail(err, HL_ERR_ARG, NULL, "expand: a view has at most %d dims", HL_MAX_DIMS);
    if (size == HL_NONE || size >= hl_expr_count(p))
        return bad_expr(p, size, err, "expand", "size");
    hl_view r = {0};
    r.ndim = v->ndim + 1;
    for (uint32_t i = 0, j = 0; i < r.ndim; i++) {
        if (i == axis) {
            r.dims[i] = size;
            r.strides[i] = hl_e_num(p, 0);
        } else {
            r.dims[i] = v->dims[j];
            r.strides[i] = v->strides[j++];
        }
    }
    if (r.strides[axis] == HL_NONE) return oom(err, "expand");
    *out = r;
    return HL_OK;
}

hl_status hl_view_broadcast(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                            hl_view *out, lm_err *err)
{
    if (axis >= v->ndim) return bad_axis(err, "broadcast", axis, v->ndim);
    if (size == HL_NONE || size >= hl_expr_count(p))
        return bad_expr(p, size, err, "broadcast", "size");
    int64_t d;
    if (!hl_e_is_num(p, v->dims[axis], &d) || d != 1) {
        char txt[96];
        hl_e_print(p, v->dims[axis], txt, sizeof txt);
        return hl__fail(err, HL_ERR_SHAPE, NULL,
                        "broadcast: dim %u has size %s; only size 1 can be broadcast", axis, txt);
    }
    hl_view r = *v;
    r.dims[axis] = size;
    r.strides[axis] = hl_e_num(p, 0);
    if (r.strides[axis] == HL_NONE) return oom(err, "broadcast");
    *out = r;
    return HL_OK;
}

hl_status hl_view_merge(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_view *out, lm_err *err)
{
    if (axis + 1 >= v->ndim) return bad_axis(err, "merge", axis, v->ndim);
    hl_expr inner = v->dims[axis + 1], z = hl_e_z(p);
    hl_expr outer_part = hl_e_subst_z(p, v->strides[axis], hl_e_div(p, z, inner), 0);
    hl_expr inner_part = hl_e_subst_z(p, v->strides[axis + 1], hl_e_mod(p, z, inner), 0);
    hl_expr stride = hl_e_add(p, outer_part, inner_part);
    hl_expr size = hl_e_mul(p, v->dims[axis], inner);
    if (stride == HL_NONE || size == HL_NONE) return none_err(p, err, "merge");
    hl_view r = *v;
    r.dims[axis] = size;
    r.strides[axis] = stride;
    for (uint32_t i = axis + 1; i + 1 < v->ndim; i++) {
        r.dims[i] = v->dims[i + 1];
        r.strides[i] = v->strides[i + 1];
    }
    r.ndim = v->ndim - 1;
    r.dims[r.ndim] = r.strides[r.ndim] = 0;
    *out = r;
    return HL_OK;
}

/* The coefficient k when s is k*z with k free of z (or s is 0: k = 0); else HL_NONE. */
static hl_expr linear_coef(hl_expr_pool *p, hl_expr s)
{
    if (!hl_e_has_z(p, s)) {
        int64_t v;
        return (hl_e_is_num(p, s, &v) && v == 0) ? s : HL_NONE;
    }
    hl_expr z = hl_e_z(p);
    hl_expr k = hl_e_subst_z(p, s, hl_e_num(p, 1), 0);
    if (k == HL_NONE || hl_e_has_z(p, k)) return HL_NONE;
    return hl_e_mul(p, z, k) == s ? k : HL_NONE; /* canonical forms compare by id */
}

hl_status hl_view_split(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr inner,
                        hl_view *out, lm_err *err)
{
    if (axis >= v->ndim) return bad_axis(err, "split", axis, v->ndim);
    if (inner == HL_NONE || inner >= hl_expr_count(p))
        return bad_expr(p, inner, err, "split", "inner");
    if (v->ndim >= HL_MAX_DIMS)
        return hl__fail(err, HL_ERR_ARG, NULL, "split: a view has at most %d dims", HL_MAX_DIMS);
    int64_t n, m;
    if (hl_e_is_num(p, inner, &m) && m <= 0)
        return hl__fail(err, HL_ERR_SHAPE, NULL, "split: inner size %lld is not positive",
                        (long long)m);
    if (hl_e_is_num(p, v->dims[axis], &n) && hl_e_is_num(p, inner, &m) && n % m != 0)
        return hl__fail(err, HL_ERR_SHAPE, NULL,
                        "split: dim %u of size %lld is not divisible by %lld", axis, (long long)n,
                        (long long)m);
    hl_expr k = linear_coef(p, v->strides[axis]);
    if (k == HL_NONE) {
        char txt[128];
        hl_e_print(p, v->strides[axis], txt, sizeof txt);
        return hl__fail(err, HL_ERR_VIEW, NULL,
                        "split: dim %u has the non-linear stride %s; copy the tensor contiguous "
                        "first",
                        axis, txt);
    }
    hl_expr z = hl_e_z(p);
    hl_expr outer_size = hl_e_div(p, v->dims[axis], inner);
    hl_expr outer_stride = hl_e_mul(p, z, hl_e_mul(p, k, inner));
    hl_expr inner_stride = hl_e_mul(p, z, k);
    if (outer_size == HL_NONE || outer_stride == HL_NONE || inner_stride == HL_NONE)
        return none_err(p, err, "split");
    hl_view r = {0};
    r.ndim = v->ndim + 1;
    for (uint32_t i = 0, j = 0; i < r.ndim; i++, j++) {
        if (i == axis) {
            r.dims[i] = outer_size;
            r.strides[i] = outer_stride;
            i++;
            r.dims[i] = inner;
            r.strides[i] = inner_stride;
        } else {
            r.dims[i] = v->dims[j];
            r.strides[i] = v->strides[j];
        }
    }
    *out = r;
    return HL_OK;
}

hl_status hl_view_slice(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                        hl_view *out, lm_err *err)
{
    if (axis >= v->ndim) return bad_axis(err, "slice", axis, v->ndim);
    if (size == HL_NONE || size >= hl_expr_count(p)) return bad_expr(p, size, err, "slice", "size");
    int64_t a, b;
    if (hl_e_is_num(p, size, &b) && b < 0)
        return hl__fail(err, HL_ERR_SHAPE, NULL, "slice: size %lld is negative", (long long)b);
    if (hl_e_is_num(p, v->dims[axis], &a) && hl_e_is_num(p, size, &b) && b > a)
        return hl__fail(err, HL_ERR_SHAPE, NULL, "slice: size %lld exceeds dim %u of size %lld",
                        (long long)b, axis, (long long)a);
    hl_view r = *v;
    r.dims[axis] = size;
    *out = r;
    return HL_OK;
}

hl_status hl_view_squeeze(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_view *out,
                          lm_err *err)
{
    if (axis >= v->ndim) return bad_axis(err, "squeeze", axis, v->ndim);
    int64_t d;
    if (!hl_e_is_num(p, v->dims[axis], &d) || d != 1)
        return hl__fail(err, HL_ERR_SHAPE, NULL, "squeeze: dim %u does not have size 1", axis);
    hl_view r = *v;
    for (uint32_t i = axis; i + 1 < v->ndim; i++) {
        r.dims[i] = v->dims[i + 1];
        r.strides[i] = v->strides[i + 1];
    }
    r.ndim = v->ndim - 1;
    r.dims[r.ndim] = r.strides[r.ndim] = 0;
    *out = r;
    return HL_OK;
}

hl_expr hl_view_numel(hl_expr_pool *p, const hl_view *v)
{
    hl_expr n = hl_e_num(p, 1);
    for (uint32_t i = 0; i < v->ndim; i++)
        n = hl_e_mul(p, n, v->dims[i]);
    return n;
}

hl_expr hl_view_index(hl_expr_pool *p, const hl_view *v)
{
    hl_expr z = hl_e_z(p), idx = hl_e_num(p, 0), inner = hl_e_num(p, 1);
    for (uint32_t i = v->ndim; i-- > 0;) {
        hl_expr coord = hl_e_mod(p, hl_e_div(p, z, inner), v->dims[i]);
        if (i == 0) coord = hl_e_div(p, z, inner); /* the outermost needs no wrap */
        idx = hl_e_add(p, idx, hl_e_subst_z(p, v->strides[i], coord, 0));
        inner = hl_e_mul(p, inner, v->dims[i]);
    }
    return idx;
}

bool hl_view_is_contiguous(hl_expr_pool *p, const hl_view *v)
{
    hl_view c;
    if (hl_view_contiguous(p, v->ndim, v->dims, &c, NULL) != HL_OK) return false;
    for (uint32_t i = 0; i < v->ndim; i++) {
        int64_t d;
        if (hl_e_is_num(p, v->dims[i], &d) && d == 1) continue; /* any stride reads index 0 */
        if (c.strides[i] != v->strides[i]) return false;
    }
    return true;
}

bool hl_view_equal(const hl_view *a, const hl_view *b)
{
    if (a->ndim != b->ndim) return false;
    for (uint32_t i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i] || a->strides[i] != b->strides[i]) return false;
    return true;
}

void hl__dims_fprint(const hl_expr_pool *p, uint32_t ndim, const hl_expr *dims, FILE *f)
{
    fputc('[', f);
    for (uint32_t i = 0; i < ndim; i++) {
        if (i) fputs(", ", f);
        hl_e_fprint(p, dims[i], f);
    }
    fputc(']', f);
}

void hl__dims_str(const hl_expr_pool *p, uint32_t ndim, const hl_expr *dims, char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap) return;
    buf[0] = '\0';
    if (len + 1 < cap) buf[len++] = '[';
    for (uint32_t i = 0; i < ndim && len < cap; i++) {
        if (i && len + 2 < cap) {
            buf[len++] = ',';
            buf[len++] = ' ';
        }
        size_t n = hl_e_print(p, dims[i], buf + len, cap - len);
        len = (len + n < cap) ? len + n : cap - 1;
    }
    if (len + 1 < cap) buf[len++] = ']';
    buf[len < cap ? len : cap - 1] = '\0';
}

void hl_view_fprint(const hl_expr_pool *p, const hl_view *v, FILE *f)
{
    hl__dims_fprint(p, v->ndim, v->dims, f);
    fputc(':', f);
    hl__dims_fprint(p, v->ndim, v->strides, f);
}

hl_expr hl_stride_coef(hl_expr_pool *p, hl_expr s, hl_expr n)
{
    int64_t nv;
    if (hl_e_is_num(p, n, &nv) && nv > 0) s = hl_e_subst_z(p, s, hl_e_z(p), nv);
    if (s == HL_NONE) return HL_NONE;
    hl_expr c = hl_e_subst_z(p, s, hl_e_num(p, 1), 0);
    if (c == HL_NONE || hl_e_has_z(p, c)) return HL_NONE;
    return hl_e_mul(p, c, hl_e_z(p)) == s ? c : HL_NONE;
}

bool hl_numel_of(uint32_t ndim, const int64_t *dims, size_t *out)
{
    size_t n = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        if (dims[i] < 0) return false;
        if (dims[i] && n > SIZE_MAX / (size_t)dims[i]) return false;
        n *= (size_t)dims[i];
    }
    *out = n;
    return true;
}
