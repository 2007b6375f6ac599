/* hl_build.c - the builder's core: handles, sources, the primitives with broadcasting, and
 * the view ops (permute, expand, broadcast, reshape, slice, pad, concat).
 *
 * Every public function is atomic: it records the node count on entry (hl__begin) and,
 * if it fails, removes the nodes it added (hl__finish), so a failed call leaves the graph
 * as it was, with the sticky error saying why. */
#include "builder/hl_build_int.h"

/* ---- handles ---- */

hl_t hl__bad(void)
{
    hl_t t;
    memset(&t, 0, sizeof t);
    t.node = HL_NONE;
    return t;
}

bool hl__begin(hl_graph *g, uint32_t *mark)
{
    *mark = hl_graph_node_count(g);
    return hl_graph_error(g)->code == HL_OK;
}

hl_t hl__finish(hl_graph *g, uint32_t mark, hl_t r)
{
    if (hl_graph_error(g)->code == HL_OK && r.node != HL_NONE) return r;
    if (hl_graph_error(g)->code == HL_OK)
        hl__graph_fail(g, HL_ERR_ARG, "internal: builder lost its result");
    hl__graph_truncate(g, mark);
    return hl__bad();
}

bool hl__check(hl_graph *g, hl_t x, const char *fn)
{
    if (hl_graph_error(g)->code) return false;
    if (x.node == HL_NONE || x.node >= hl_graph_node_count(g)) {
        hl__graph_fail(g, HL_ERR_ARG, "%s: the tensor handle is invalid (node %u)", fn, x.node);
        return false;
    }
    const hl_node *nd = hl_graph_node(g, x.node);
    if (nd->op == HL_OP_OUTPUT) {
        hl__graph_fail(g, HL_ERR_ARG, "%s: node %u is an Output and cannot be read", fn, x.node);
        return false;
    }
    if (nd->dtype != x.dtype || x.view.ndim > HL_MAX_DIMS) {
        hl__graph_fail(g, HL_ERR_ARG, "%s: the handle of node %u is corrupt", fn, x.node);
        return false;
    }
    return true;
}

hl_t hl__out(hl_graph *g, uint32_t id)
{
    if (id == HL_NONE) return hl__bad();
    const hl_node *nd = hl_graph_node(g, id);
    hl_t t = hl__bad();
    t.node = id;
    t.dtype = nd->dtype;
    hl_status st =
        hl_view_contiguous(hl_graph_exprs(g), nd->ndim, nd->shape, &t.view, hl__graph_scratch(g));
    if (st) {
        hl__graph_raise_scratch(g, st, hl_op_name(nd->op));
        return hl__bad();
    }
    return t;
}

hl_t hl_node_tensor(hl_graph *g, uint32_t id)
{
    if (id == HL_NONE || id >= hl_graph_node_count(g) || hl_graph_node(g, id)->op == HL_OP_OUTPUT)
        return hl__bad();
    lm_err tmp;
    lm_err_clear(&tmp);
    const hl_node *nd = hl_graph_node(g, id);
    hl_t t = hl__bad();
    t.node = id;
    t.dtype = nd->dtype;
    if (hl_view_contiguous(hl_graph_exprs(g), nd->ndim, nd->shape, &t.view, &tmp)) return hl__bad();
    return t;
}

static hl_t add_node(hl_graph *g, hl_node *spec)
{
    return hl__out(g, hl_graph_add(g, spec));
}

static hl_node spec_of(hl_op op, uint32_t n_in, const hl_t *ins)
{
    hl_node s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.n_in = n_in;
    for (uint32_t i = 0; i < n_in; i++) {
        s.in[i].node = ins[i].node;
        s.in[i].view = ins[i].view;
    }
    return s;
}

/* True when st is HL_OK; otherwise raises the view function's error (recorded in the
 * graph's scratch record) into the graph's, prefixed with fn and located. */
static bool view_ok(hl_graph *g, hl_status st, const char *fn)
{
    if (st == HL_OK) return true;
    hl__graph_raise_scratch(g, st, fn);
    return false;
}

hl_expr hl_n(hl_graph *g, int64_t v)
{
    return hl_e_num(hl_graph_exprs(g), v);
}

/* ---- sources and sinks ---- */

hl_t hl_input(hl_graph *g, const char *name, hl_dtype dtype, uint32_t ndim, const hl_expr *dims)
{
    uint32_t mark;
    if (!hl__begin(g, &mark)) return hl__bad();
    if (ndim > HL_MAX_DIMS) {
        hl__graph_fail(g, HL_ERR_ARG, "input '%s': %u dims (at most %d)", name ? name : "?", ndim,
                       HL_MAX_DIMS);
        return hl__bad();
    }
    hl_node s = spec_of(HL_OP_INPUT, 0, NULL);
    s.dtype = dtype;
    s.ndim = ndim;
    for (uint32_t i = 0; i < ndim; i++)
        s.shape[i] = dims[i];
    s.name = (char *)name;
    return hl__finish(g, mark, add_node(g, &s));
}

uint32_t hl_output(hl_graph *g, const char *name, hl_t t)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, t, "output")) return HL_NONE;
    hl_node s = spec_of(HL_OP_OUTPUT, 1, &t);
    s.name = (char *)name;
    return hl_graph_add(g, &s);
}

hl_t hl_scalar(hl_graph *g, float value, hl_dtype dtype)
{
    uint32_t mark;
    if (!hl__begin(g, &mark)) return hl__bad();
    hl_node s = spec_of(HL_OP_CONSTANT, 0, NULL);
    s.constant = value;
    hl_t c = add_node(g, &s);
    if (dtype != HL_F32 && c.node != HL_NONE) c = hl_cast(g, c, dtype);
    return hl__finish(g, mark, c);
}

hl_t hl_full(hl_graph *g, float value, hl_dtype dtype, uint32_t ndim, const hl_expr *dims)
{
    uint32_t mark;
    if (!hl__begin(g, &mark)) return hl__bad();
    hl_t c = hl_scalar(g, value, dtype);
    for (uint32_t i = 0; i < ndim && c.node != HL_NONE; i++)
        c = hl_expand(g, c, (int)i, dims[i]);
    return hl__finish(g, mark, c);
}

hl_t hl_iota(hl_graph *g, hl_expr expr, hl_expr len)
{
    uint32_t mark;
    if (!hl__begin(g, &mark)) return hl__bad();
    hl_node s = spec_of(HL_OP_IOTA, 0, NULL);
    s.iota_expr = expr;
    s.iota_len = len;
    return hl__finish(g, mark, add_node(g, &s));
}

hl_t hl_iota_nd(hl_graph *g, hl_expr expr, uint32_t ndim, const hl_expr *dims)
{
    uint32_t mark;
    if (!hl__begin(g, &mark)) return hl__bad();
    hl_view v;
    if (!view_ok(g, hl_view_contiguous(hl_graph_exprs(g), ndim, dims, &v, hl__graph_scratch(g)),
                 "iota"))
        return hl__finish(g, mark, hl__bad());
    hl_t t = hl_iota(g, expr, hl_view_numel(hl_graph_exprs(g), &v));
    if (t.node != HL_NONE) t.view = v; /* the flat iota read row-major as dims */
    return hl__finish(g, mark, t);
}

hl_t hl_arange(hl_graph *g, hl_expr n, hl_dtype dtype)
{
    uint32_t mark;
    if (!hl__begin(g, &mark)) return hl__bad();
    hl_t t = hl_iota(g, hl_e_z(hl_graph_exprs(g)), n);
    if (dtype != HL_INT) t = hl_cast(g, t, dtype);
    return hl__finish(g, mark, t);
}

/* ---- primitives ---- */

hl_t hl_cast(hl_graph *g, hl_t x, hl_dtype to)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, x, "cast")) return hl__bad();
    hl_node s = spec_of(HL_OP_CAST, 1, &x);
    s.cast_to = to;
    return hl__finish(g, mark, add_node(g, &s));
}

static hl_t unary(hl_graph *g, hl_op op, hl_t x)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, x, hl_op_name(op))) return hl__bad();
    hl_node s = spec_of(op, 1, &x);
    return hl__finish(g, mark, add_node(g, &s));
}

hl_t hl_exp2(hl_graph *g, hl_t x)
{
    return unary(g, HL_OP_EXP2, x);
}
hl_t hl_log2(hl_graph *g, hl_t x)
{
    return unary(g, HL_OP_LOG2, x);
}
hl_t hl_sin(hl_graph *g, hl_t x)
{
    return unary(g, HL_OP_SIN, x);
}
hl_t hl_recip(hl_graph *g, hl_t x)
{
    return unary(g, HL_OP_RECIP, x);
}
hl_t hl_sqrt(hl_graph *g, hl_t x)
{
    return unary(g, HL_OP_SQRT, x);
}

bool hl__broadcast2(hl_graph *g, hl_t *a, hl_t *b, const char *fn)
{
    hl_expr_pool *p = hl_graph_exprs(g);
    hl_view va = a->view, vb = b->view;
    lm_err *e = hl__graph_scratch(g);
    while (va.ndim < vb.ndim)
        if (hl_view_expand(p, &va, 0, hl_e_num(p, 1), &va, e)) return view_ok(g, HL_ERR_ARG, fn);
    while (vb.ndim < va.ndim)
        if (hl_view_expand(p, &vb, 0, hl_e_num(p, 1), &vb, e)) return view_ok(g, HL_ERR_ARG, fn);
    for (uint32_t i = 0; i < va.ndim; i++) {
        if (va.dims[i] == vb.dims[i]) continue;
        int64_t da = 0, db = 0;
        bool one_a = hl_e_is_num(p, va.dims[i], &da) && da == 1;
        bool one_b = hl_e_is_num(p, vb.dims[i], &db) && db == 1;
        hl_status st = HL_OK;
        if (one_a)
            st = hl_view_broadcast(p, &va, i, vb.dims[i], &va, e);
        else if (one_b)
            st = hl_view_broadcast(p, &vb, i, va.dims[i], &vb, e);
        else {
            char sa[160], sb[160];
            hl__dims_str(p, a->view.ndim, a->view.dims, sa, sizeof sa);
            hl__dims_str(p, b->view.ndim, b->view.dims, sb, sizeof sb);
            hl__graph_fail(
                g, HL_ERR_SHAPE,
                "%s: shapes %s and %s do not broadcast (dim %u from the left after aligning "
                "at the right)",
                fn, sa, sb, i);
            return false;
        }
        if (st) return view_ok(g, st, fn);
    }
    a->view = va;
    b->view = vb;
    return true;
}

static hl_t binary(hl_graph *g, hl_op op, hl_t a, hl_t b)
{
    uint32_t mark;
    const char *fn = hl_op_name(op);
    if (!hl__begin(g, &mark) || !hl__check(g, a, fn) || !hl__check(g, b, fn)) return hl__bad();
    if (!hl__broadcast2(g, &a, &b, fn)) return hl__finish(g, mark, hl__bad());
    hl_t ins[2] = {a, b};
    hl_node s = spec_of(op, 2, ins);
    return hl__finish(g, mark, add_node(g, &s));
}

hl_t hl_add(hl_graph *g, hl_t a, hl_t b)
{
    return binary(g, HL_OP_ADD, a, b);
}
hl_t hl_mul(hl_graph *g, hl_t a, hl_t b)
{
    return binary(g, HL_OP_MUL, a, b);
}
hl_t hl_mod(hl_graph *g, hl_t a, hl_t b)
{
    return binary(g, HL_OP_MOD, a, b);
}
hl_t hl_lt(hl_graph *g, hl_t a, hl_t b)
{
    return binary(g, HL_OP_LESS_THAN, a, b);
}

hl_t hl_gather(hl_graph *g, hl_t indexes, hl_t data)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, indexes, "gather") || !hl__check(g, data, "gather"))
        return hl__bad();
    hl_t ins[2] = {indexes, data};
    hl_node s = spec_of(HL_OP_GATHER, 2, ins);
    return hl__finish(g, mark, add_node(g, &s));
}

hl_t hl_scatter(hl_graph *g, hl_t dest, hl_t indexes, hl_t src)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, dest, "scatter") ||
        !hl__check(g, indexes, "scatter") || !hl__check(g, src, "scatter"))
        return hl__bad();
    hl_t ins[3] = {dest, indexes, src};
    hl_node s = spec_of(HL_OP_SCATTER, 3, ins);
    return hl__finish(g, mark, add_node(g, &s));
}

static hl_t reduce(hl_graph *g, hl_op op, hl_t x, int axis)
{
    uint32_t mark;
    const char *fn = hl_op_name(op);
    if (!hl__begin(g, &mark) || !hl__check(g, x, fn)) return hl__bad();
    int ax = hl__axis(axis, x.view.ndim);
    if (ax < 0) {
        hl__graph_fail(g, HL_ERR_ARG, "%s: axis %d out of range for %u dims", fn, axis,
                       x.view.ndim);
        return hl__bad();
    }
    hl_node s = spec_of(op, 1, &x);
    s.axis = (uint32_t)ax;
    return hl__finish(g, mark, add_node(g, &s));
}

hl_t hl_sum_reduce(hl_graph *g, hl_t x, int axis)
{
    return reduce(g, HL_OP_SUM_REDUCE, x, axis);
}
hl_t hl_max_reduce(hl_graph *g, hl_t x, int axis)
{
    return reduce(g, HL_OP_MAX_REDUCE, x, axis);
}

/* ---- views ---- */

static bool axis_ok(hl_graph *g, int axis, uint32_t ndim, const char *fn, int *out)
{
    *out = hl__axis(axis, ndim);
    if (*out >= 0) return true;
    hl__graph_fail(g, HL_ERR_ARG, "%s: axis %d out of range for %u dims", fn, axis, ndim);
    return false;
}

hl_t hl_permute(hl_graph *g, hl_t x, const uint32_t *perm)
{
    if (!hl__check(g, x, "permute")) return hl__bad();
    if (!view_ok(g,
                 hl_view_permute(hl_graph_exprs(g), &x.view, perm, &x.view, hl__graph_scratch(g)),
                 "permute"))
        return hl__bad();
    return x;
}

hl_t hl_transpose(hl_graph *g, hl_t x, int a, int b)
{
    if (!hl__check(g, x, "transpose")) return hl__bad();
    int ia, ib;
    if (!axis_ok(g, a, x.view.ndim, "transpose", &ia) ||
        !axis_ok(g, b, x.view.ndim, "transpose", &ib))
        return hl__bad();
    uint32_t perm[HL_MAX_DIMS];
    for (uint32_t i = 0; i < x.view.ndim; i++)
        perm[i] = i;
    perm[ia] = (uint32_t)ib;
    perm[ib] = (uint32_t)ia;
    return hl_permute(g, x, perm);
}

hl_t hl_expand(hl_graph *g, hl_t x, int axis, hl_expr size)
{
    if (!hl__check(g, x, "expand")) return hl__bad();
    int ax = axis < 0 ? axis + (int)x.view.ndim + 1 : axis;
    if (ax < 0 || ax > (int)x.view.ndim) {
        hl__graph_fail(g, HL_ERR_ARG, "expand: position %d out of range for %u dims", axis,
                       x.view.ndim);
        return hl__bad();
    }
    if (!view_ok(g,
                 hl_view_expand(hl_graph_exprs(g), &x.view, (uint32_t)ax, size, &x.view,
                                hl__graph_scratch(g)),
                 "expand"))
        return hl__bad();
    return x;
}

hl_t hl_broadcast_to(hl_graph *g, hl_t x, uint32_t ndim, const hl_expr *dims)
{
    if (!hl__check(g, x, "broadcast_to")) return hl__bad();
    hl_expr_pool *p = hl_graph_exprs(g);
    lm_err *e = hl__graph_scratch(g);
    if (ndim < x.view.ndim || ndim > HL_MAX_DIMS) {
        hl__graph_fail(g, HL_ERR_SHAPE, "broadcast_to: cannot broadcast %u dims to %u", x.view.ndim,
                       ndim);
        return hl__bad();
    }
    hl_view v = x.view;
    while (v.ndim < ndim)
        if (!view_ok(g, hl_view_expand(p, &v, 0, hl_e_num(p, 1), &v, e), "broadcast_to"))
            return hl__bad();
    for (uint32_t i = 0; i < ndim; i++) {
        if (v.dims[i] == dims[i]) continue;
        if (!view_ok(g, hl_view_broadcast(p, &v, i, dims[i], &v, e), "broadcast_to"))
            return hl__bad();
    }
    x.view = v;
    return x;
}

hl_t hl_contiguous(hl_graph *g, hl_t x)
{
    if (!hl__check(g, x, "contiguous")) return hl__bad();
    if (hl_view_is_contiguous(hl_graph_exprs(g), &x.view)) return x;
    hl_t c = hl_cast(g, x, x.dtype); /* an identity cast copies exactly */
    return c;
}

/* Reshape by merging and splitting, or false (error HL_ERR_VIEW left for the caller to
 * clear) when the strides do not allow it. */
static hl_status reshape_view(hl_expr_pool *p, const hl_view *in, uint32_t ndim,
                              const hl_expr *dims, hl_view *out, lm_err *e)
{
    /* drop size-1 dims (they hold no position), group the rest by equal products */
    hl_view v = *in;
    for (uint32_t i = v.ndim; i-- > 0;) {
        int64_t d;
        if (hl_e_is_num(p, v.dims[i], &d) && d == 1) {
            hl_status st = hl_view_squeeze(p, &v, i, &v, e);
            if (st) return st;
        }
    }
    hl_expr nd[HL_MAX_DIMS];
    uint32_t nn = 0, ones[HL_MAX_DIMS], nones = 0;
    for (uint32_t i = 0; i < ndim; i++) {
        int64_t d;
        if (hl_e_is_num(p, dims[i], &d) && d == 1)
            ones[nones++] = i;
        else
            nd[nn++] = dims[i];
    }
    hl_view r = {0};
    uint32_t i = 0, j = 0;
    while (i < v.ndim || j < nn) {
        if (i >= v.ndim || j >= nn)
            return hl__fail(e, HL_ERR_VIEW, NULL, "reshape: dims do not group");
        uint32_t i0 = i, j0 = j;
        hl_expr po = v.dims[i++], pn = nd[j++];
        while (po != pn) {
            int64_t a, b;
            bool na = hl_e_is_num(p, po, &a), nb = hl_e_is_num(p, pn, &b);
            if (na && nb ? a < b : i - i0 <= j - j0) {
                if (i >= v.ndim)
                    return hl__fail(e, HL_ERR_VIEW, NULL, "reshape: dims do not group");
                po = hl_e_mul(p, po, v.dims[i++]);
            } else {
                if (j >= nn) return hl__fail(e, HL_ERR_VIEW, NULL, "reshape: dims do not group");
                pn = hl_e_mul(p, pn, nd[j++]);
            }
            if (po == HL_NONE || pn == HL_NONE)
                return hl__fail(e, HL_ERR_NOMEM, NULL, "reshape: out of memory");
        }
        /* merge old dims i0..i-1 into one, then split it into new dims j0..j-1 */
        hl_view grp = {0};
        grp.ndim = i - i0;
        for (uint32_t k = 0; k < grp.ndim; k++) {
            grp.dims[k] = v.dims[i0 + k];
            grp.strides[k] = v.strides[i0 + k];
        }
        while (grp.ndim > 1) {
            hl_status st = hl_view_merge(p, &grp, grp.ndim - 2, &grp, e);
            if (st) return st;
        }
        for (uint32_t k = j0; k + 1 < j; k++) {
            hl_expr inner = hl_e_num(p, 1);
            for (uint32_t m = k + 1; m < j; m++)
                inner = hl_e_mul(p, inner, nd[m]);
            hl_status st = hl_view_split(p, &grp, grp.ndim - 1, inner, &grp, e);
            if (st) return st;
        }
        for (uint32_t k = 0; k < grp.ndim; k++) {
            r.dims[r.ndim] = nd[j0 + k];
            r.strides[r.ndim++] = grp.strides[k];
        }
    }
    for (uint32_t k = 0; k < nones; k++) {
        hl_status st = hl_view_expand(p, &r, ones[k], hl_e_num(p, 1), &r, e);
        if (st) return st;
    }
    *out = r;
    return HL_OK;
}

hl_t hl_reshape(hl_graph *g, hl_t x, uint32_t ndim, const hl_expr *dims)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, x, "reshape")) return hl__bad();
    hl_expr_pool *p = hl_graph_exprs(g);
    lm_err *e = hl__graph_scratch(g);
    if (ndim > HL_MAX_DIMS) {
        hl__graph_fail(g, HL_ERR_ARG, "reshape: %u dims (at most %d)", ndim, HL_MAX_DIMS);
        return hl__bad();
    }
    hl_view target;
    if (!view_ok(g, hl_view_contiguous(p, ndim, dims, &target, e), "reshape")) return hl__bad();
    hl_expr n_old = hl_view_numel(p, &x.view), n_new = hl_view_numel(p, &target);
    if (n_old != n_new) {
        char a[160], b[160];
        hl__dims_str(p, x.view.ndim, x.view.dims, a, sizeof a);
        hl__dims_str(p, ndim, dims, b, sizeof b);
        hl__graph_fail(g, HL_ERR_SHAPE,
                       "reshape: %s and %s do not have the same element count (or it cannot be "
                       "proven)",
                       a, b);
        return hl__bad();
    }
    lm_err tmp;
    lm_err_clear(&tmp);
    hl_view out;
    hl_status st = reshape_view(p, &x.view, ndim, dims, &out, &tmp);
    if (st == HL_OK) {
        x.view = out;
        return x;
    }
    if (st != HL_ERR_VIEW) {
        hl__graph_fail(g, st, "reshape: %s", tmp.msg);
        return hl__bad();
    }
    hl_t c = hl_cast(g, x, x.dtype); /* copy contiguous, then any reshape is a view */
    if (c.node != HL_NONE) c.view = target;
    return hl__finish(g, mark, c);
}

/* The row-major element number, in a view of dims src_dims, of the element whose
 * coordinates are those of row-major position z in dst_dims, shifted along axis by
 * shift (an expression in z). */
static hl_expr shifted_index(hl_expr_pool *p, uint32_t ndim, const hl_expr *dst_dims,
                             const hl_expr *src_dims, uint32_t axis, hl_expr shift)
{
    hl_expr z = hl_e_z(p), idx = hl_e_num(p, 0), inner_dst = hl_e_num(p, 1),
            inner_src = hl_e_num(p, 1);
    for (uint32_t i = ndim; i-- > 0;) {
        hl_expr c = hl_e_div(p, z, inner_dst);
        if (i > 0) c = hl_e_mod(p, c, dst_dims[i]);
        if (i == axis) c = hl_e_add(p, c, shift);
        idx = hl_e_add(p, idx, hl_e_mul(p, c, inner_src));
        inner_dst = hl_e_mul(p, inner_dst, dst_dims[i]);
        inner_src = hl_e_mul(p, inner_src, src_dims[i]);
    }
    return idx;
}

hl_t hl_slice(hl_graph *g, hl_t x, int axis, hl_expr start, hl_expr end)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, x, "slice")) return hl__bad();
    hl_expr_pool *p = hl_graph_exprs(g);
    lm_err *e = hl__graph_scratch(g);
    int ax;
    if (!axis_ok(g, axis, x.view.ndim, "slice", &ax)) return hl__bad();
    hl_expr len = hl_e_sub(p, end, start);
    int64_t vs, ve, vl, vd;
    bool ns = hl_e_is_num(p, start, &vs), nl = hl_e_is_num(p, len, &vl);
    if ((ns && vs < 0) || (nl && vl < 0) ||
        (hl_e_is_num(p, end, &ve) && hl_e_is_num(p, x.view.dims[ax], &vd) && ve > vd)) {
        char a[64], b[64], d[64];
        hl_e_print(p, start, a, sizeof a);
        hl_e_print(p, end, b, sizeof b);
        hl_e_print(p, x.view.dims[ax], d, sizeof d);
        hl__graph_fail(g, HL_ERR_SHAPE, "slice: range [%s, %s) does not fit axis %d of size %s", a,
                       b, ax, d);
        return hl__bad();
    }
    if (ns && vs == 0) {
        if (!view_ok(g, hl_view_slice(p, &x.view, (uint32_t)ax, end, &x.view, e), "slice"))
            return hl__bad();
        return x;
    }
    hl_expr out_dims[HL_MAX_DIMS];
    for (uint32_t i = 0; i < x.view.ndim; i++)
        out_dims[i] = x.view.dims[i];
    out_dims[ax] = len;
    hl_expr idx = shifted_index(p, x.view.ndim, out_dims, x.view.dims, (uint32_t)ax, start);
    hl_t ids = hl_iota_nd(g, idx, x.view.ndim, out_dims);
    return hl__finish(g, mark, hl_gather(g, ids, x));
}

hl_t hl_pad(hl_graph *g, hl_t x, int axis, hl_expr before, hl_expr after, float value)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, x, "pad")) return hl__bad();
    hl_expr_pool *p = hl_graph_exprs(g);
    int ax;
    if (!axis_ok(g, axis, x.view.ndim, "pad", &ax)) return hl__bad();
    int64_t b, a;
    if ((hl_e_is_num(p, before, &b) && b < 0) || (hl_e_is_num(p, after, &a) && a < 0)) {
        hl__graph_fail(g, HL_ERR_SHAPE, "pad: negative padding on axis %d", ax);
        return hl__bad();
    }
    hl_expr out_dims[HL_MAX_DIMS];
    for (uint32_t i = 0; i < x.view.ndim; i++)
        out_dims[i] = x.view.dims[i];
    out_dims[ax] = hl_e_add(p, hl_e_add(p, x.view.dims[ax], before), after);
    /* scatter x's elements into a tensor full of value: exact, no masking arithmetic */
    hl_t dest = hl_full(g, value, x.dtype, x.view.ndim, out_dims);
    hl_expr idx = shifted_index(p, x.view.ndim, x.view.dims, out_dims, (uint32_t)ax, before);
    hl_t ids = hl_iota_nd(g, idx, x.view.ndim, x.view.dims);
    return hl__finish(g, mark, hl_scatter(g, dest, ids, x));
}

hl_t hl_concat(hl_graph *g, hl_t a, hl_t b, int axis)
{
    uint32_t mark;
    if (!hl__begin(g, &mark) || !hl__check(g, a, "concat") || !hl__check(g, b, "concat"))
        return hl__bad();
    hl_expr_pool *p = hl_graph_exprs(g);
    int ax;
    if (!axis_ok(g, axis, a.view.ndim, "concat", &ax)) return hl__bad();
    if (a.dtype != b.dtype) {
        hl__graph_fail(g, HL_ERR_DTYPE, "concat: dtypes %s and %s differ", hl_dtype_name(a.dtype),
                       hl_dtype_name(b.dtype));
        return hl__bad();
    }
    bool same = a.view.ndim == b.view.ndim;
    for (uint32_t i = 0; same && i < a.view.ndim; i++)
        if ((int)i != ax && a.view.dims[i] != b.view.dims[i]) same = false;
    if (!same) {
        char sa[160], sb[160];
        hl__dims_str(p, a.view.ndim, a.view.dims, sa, sizeof sa);
        hl__dims_str(p, b.view.ndim, b.view.dims, sb, sizeof sb);
        hl__graph_fail(g, HL_ERR_SHAPE, "concat: shapes %s and %s must agree except on axis %d", sa,
                       sb, ax);
        return hl__bad();
    }
    hl_expr out_dims[HL_MAX_DIMS];
    for (uint32_t i = 0; i < a.view.ndim; i++)
        out_dims[i] = a.view.dims[i];
    out_dims[ax] = hl_e_add(p, a.view.dims[ax], b.view.dims[ax]);
    hl_t dest = hl_full(g, 0.0f, a.dtype, a.view.ndim, out_dims);
    hl_expr ia = shifted_index(p, a.view.ndim, a.view.dims, out_dims, (uint32_t)ax, hl_e_num(p, 0));
    hl_expr ib =
        shifted_index(p, b.view.ndim, b.view.dims, out_dims, (uint32_t)ax, a.view.dims[ax]);
    hl_t r = hl_scatter(g, dest, hl_iota_nd(g, ia, a.view.ndim, a.view.dims), a);
    r = hl_scatter(g, r, hl_iota_nd(g, ib, b.view.ndim, b.view.dims), b);
    return hl__finish(g, mark, r);
}
