/* ll_verify.c - the LLIR verifier, run on every graph built.
 *
 * Structure (one pass in id order): every node's kind agrees with its op's dialect;
 * top-level nodes read earlier top-level nodes; a region's interior follows it at once
 * and reads only its own region's earlier nodes (a load reads an earlier top-level
 * node); the region's input is an interior node of it, and every interior node is used.
 *
 * Types and shapes: every input's dtype is what the node's contract reads it as
 * (in_dtype, from the op's fields), each primitive's own dtype and shape rules hold
 * (hlir.h's table), matmuls agree with their fields.
 *
 * Reach: at each setting of the dims (the corners of their box and the profile values)
 * every expression of the pool is evaluated once, and every view's positions are bounded
 * per dim: exactly where interval arithmetic is exact (an affine stride), else by an
 * enclosure that is accepted when it fits, and otherwise by evaluating every position of
 * that dim (up to a budget). A view is refused only on an exact range that leaves the
 * buffer, so a valid view is never refused.
 */
#include "ll_int.h"

#include <inttypes.h>
#include <stdio.h>

#define SCAN_DIM_MAX ((int64_t)1 << 20)
#define SCAN_BUDGET ((int64_t)1 << 22)
#define MAX_CORNER_DIMS 6

typedef struct vr {
    const ll_graph *g;
    lm_err *err;
    ll__eval ev;
    const char *setting; /* the current setting, for messages */
    int64_t scan_left;
    char where[192];
} vr;

static const char *KIND[] = {"Input", "Output", "kernel", "region", "library", "fused", "load"};

static int vfail(vr *v, uint32_t id, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int vfail(vr *v, uint32_t id, const char *fmt, ...)
{
    char msg[LM_ERR_MSG / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const ll_node *nd = &v->g->nodes[id];
    lm_loc loc = {.node = ll__op_name(nd->op), .node_id = id};
    return ll__fail(v->err, LM_EVERIFY, &loc, "verify: node %u (%s %s, class c%u): %s; %s", id,
                    nd->kind <= LL_LOAD ? KIND[nd->kind] : "?", ll__op_name(nd->op), nd->eclass,
                    msg, ll_graph_origin(v->g, nd->origin));
}

static bool same_dims(uint32_t na, const hl_expr *a, uint32_t nb, const hl_expr *b)
{
    if (na != nb) return false;
    for (uint32_t i = 0; i < na; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static bool top_level(ll_kind k)
{
    return k == LL_INPUT || k == LL_OUTPUT || k == LL_KERNEL || k == LL_REGION || k == LL_LIBRARY;
}

static ll_dialect dialect_of_kind(ll_kind k)
{
    switch (k) {
    case LL_INPUT:
    case LL_OUTPUT:
        return LL_D_IO;
    case LL_KERNEL:
        return LL_D_KERNEL;
    case LL_REGION:
        return LL_D_REGION;
    case LL_LIBRARY:
        return LL_D_LIBRARY;
    case LL_FUSED:
        return LL_D_FUSED;
    default:
        return LL_D_LOAD;
    }
}

/* ==================================================================================
 * Structure
 * ================================================================================== */

static int check_structure(vr *v)
{
    const ll_graph *g = v->g;
    uint32_t region = LM_NONE;
    uint8_t *used = ll__zalloc(g->n_nodes, 1);
    if (!used) return ll__oom(v->err, "verify");
    int rc = LM_OK;
    for (uint32_t id = 0; id < g->n_nodes && !rc; id++) {
        const ll_node *nd = &g->nodes[id];
        if ((unsigned)nd->kind > LL_LOAD || nd->op >= ll_op_count()) {
            rc = vfail(v, id, "unknown kind or op");
            break;
        }
        const ll_op_info *o = ll_op_get(nd->op);
        if (o->dialect != dialect_of_kind(nd->kind)) {
            rc = vfail(v, id, "a %s node of a %s op", KIND[nd->kind], o->name);
            break;
        }
        if (nd->n_in > LL_MAX_IN) {
            rc = vfail(v, id, "%u inputs", nd->n_in);
            break;
        }
        if (nd->kind == LL_REGION)
            region = id;
        else if (top_level(nd->kind))
            region = LM_NONE;
        if (top_level(nd->kind) && nd->region != LM_NONE) {
            rc = vfail(v, id, "a top-level node inside region %u", nd->region);
            break;
        }
        if (!top_level(nd->kind) && (region == LM_NONE || nd->region != region)) {
            rc = vfail(v, id, "an interior node outside its region (region %u, the nodes follow %s)",
                       nd->region, region == LM_NONE ? "no region" : "another region");
            break;
        }
        for (uint32_t k = 0; k < nd->n_in && !rc; k++) {
            uint32_t p = nd->in[k];
            if (p >= g->n_nodes) {
                rc = vfail(v, id, "input %u is node %u, not in the graph", k, p);
                break;
            }
            const ll_node *pn = &g->nodes[p];
            if (pn->kind == LL_OUTPUT)
                rc = vfail(v, id, "input %u reads an Output", k);
            else if (nd->kind == LL_REGION && (p <= id || pn->region != id))
                rc = vfail(v, id, "the region's root (node %u) is not one of its interior nodes",
                           p);
            else if (nd->kind != LL_REGION && p >= id)
                rc = vfail(v, id, "input %u is node %u, not an earlier node", k, p);
            else if (nd->kind == LL_FUSED && pn->region != nd->region)
                rc = vfail(v, id, "input %u reads node %u of another region or the top level", k,
                           p);
            else if (nd->kind != LL_FUSED && nd->kind != LL_REGION && !top_level(pn->kind))
                rc = vfail(v, id, "input %u reads node %u, an interior node of region %u", k, p,
                           pn->region);
            else if (nd->kind == LL_LOAD && p >= nd->region)
                rc = vfail(v, id, "it loads node %u, which comes after its region", p);
            if (!rc && !top_level(pn->kind)) used[p] = 1;
        }
    }
    /* every interior node is read (the region's root by the region) */
    for (uint32_t id = 0; id < g->n_nodes && !rc; id++) {
        const ll_node *nd = &g->nodes[id];
        if (!top_level(nd->kind) && !used[id])
            rc = vfail(v, id, "an interior node of region %u that nothing reads", nd->region);
    }
    ll__free(used);
    if (rc) return rc;
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t id = g->inputs[i];
        if (id >= g->n_nodes || g->nodes[id].kind != LL_INPUT || g->nodes[id].prim.index != i)
            return ll__fail(v->err, LM_EVERIFY, NULL, "verify: input %u is not an Input node", i);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t id = g->outputs[i];
        if (id >= g->n_nodes || g->nodes[id].kind != LL_OUTPUT || g->nodes[id].prim.index != i)
            return ll__fail(v->err, LM_EVERIFY, NULL, "verify: output %u is not an Output node", i);
    }
    return LM_OK;
}

/* ==================================================================================
 * Dtypes and shapes
 * ================================================================================== */

static const char *operand_name(const ll_node *nd, uint32_t k)
{
    const ll_op_info *o = ll_op_get(nd->op);
    static const char *mm[] = {"a", "b", "c", "bias"};
    if (o->dialect == LL_D_LIBRARY) {
        if (k < 2) return mm[k];
        return k == 2 && nd->mm.beta == 1.0 ? "c" : "bias";
    }
    switch (o->prim) {
    case HL_OP_GATHER:
        return k == 0 ? "indexes" : "data";
    case HL_OP_SCATTER:
        return k == 0 ? "dest" : k == 1 ? "indexes" : "src";
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
        return k == 0 ? "a" : "b";
    case HL_OP_COUNT:
        if (ll_op_is_attn(nd->op)) {
            static const char *at[] = {"q", "k", "v", "mask"};
            return k < 4 ? at[k] : "x";
        }
        return o->dialect == LL_D_KERNEL ? (k == 0 ? "a" : "b") : "x";
    default:
        return "x";
    }
}

/* KAttn, KAttnMask: q, k, v (and the mask) in the node's dtype, the views' dims those of
 * the node's sizes, the output [L.., Sq, D]. */
static int check_attn(vr *v, uint32_t id)
{
    const ll_node *nd = &v->g->nodes[id];
    const ll_attn *at = &nd->at;
    uint32_t want = ll_op_get(nd->op)->n_inputs, nl = at->nlead;
    if (nd->n_in != want) return vfail(v, id, "%s reads %u inputs, not %u", ll_op_get(nd->op)->name, want, nd->n_in);
    for (uint32_t k = 0; k < nd->n_in; k++)
        if (nd->in_dtype[k] != nd->dtype)
            return vfail(v, id, "attention reads its operand %u in %s, not its dtype %s", k,
                         hl_dtype_name(nd->in_dtype[k]), hl_dtype_name(nd->dtype));
    if (!hl_dtype_is_float(nd->dtype)) return vfail(v, id, "attention computes a float dtype");
    if (nl + 2 > HL_MAX_DIMS || nd->ndim != nl + 2 || at->q.ndim != nl + 2 || at->k.ndim != nl + 2 ||
        at->v.ndim != nl + 2 || at->mask.ndim != (want == 4 ? nl + 2 : 0u))
        return vfail(v, id, "attention's views do not have the %u leading dims and two more", nl);
    for (uint32_t i = 0; i < nl; i++)
        if (at->q.dims[i] != nd->shape[i] || at->k.dims[i] != nd->shape[i] ||
            at->v.dims[i] != nd->shape[i] || (want == 4 && at->mask.dims[i] != nd->shape[i]))
            return vfail(v, id, "attention's leading dim %u differs between its views", i);
    if (nd->shape[nl] != at->sq || nd->shape[nl + 1] != at->d || at->q.dims[nl] != at->sq ||
        at->q.dims[nl + 1] != at->d || at->k.dims[nl] != at->skv || at->k.dims[nl + 1] != at->d ||
        at->v.dims[nl] != at->skv || at->v.dims[nl + 1] != at->d ||
        (want == 4 && (at->mask.dims[nl] != at->sq || at->mask.dims[nl + 1] != at->skv)))
        return vfail(v, id, "attention's views are not q [.., Sq, D], k and v [.., Skv, D], "
                            "mask [.., Sq, Skv] and its output [.., Sq, D]");
    if (at->kv_splits < 1 || at->block_q < 1 || at->block_k < 1 || at->warps < 1 || at->stages < 1)
        return vfail(v, id, "attention's tile has a zero field");
    return LM_OK;
}

static int check_edge_dtypes(vr *v, uint32_t id)
{
    const ll_node *nd = &v->g->nodes[id];
    for (uint32_t k = 0; k < nd->n_in; k++) {
        hl_dtype have = v->g->nodes[nd->in[k]].dtype;
        if (have != nd->in_dtype[k])
            return vfail(v, id,
                         "operand %u (%s) is node %u of dtype %s, but the op's contract reads it "
                         "as %s",
                         k, operand_name(nd, k), nd->in[k], hl_dtype_name(have),
                         hl_dtype_name(nd->in_dtype[k]));
    }
    return LM_OK;
}

/* hlir's dtype and shape rules for a primitive (hlir.h's table). */
static int check_prim(vr *v, uint32_t id)
{
    const ll_node *nd = &v->g->nodes[id];
    const hl_node *p = &nd->prim;
    const ll_op_info *o = ll_op_get(nd->op);
    if (p->op != o->prim) return vfail(v, id, "its primitive is %s, its op computes %s",
                                       hl_op_name(p->op), hl_op_name(o->prim));
    if (p->n_in != nd->n_in || p->dtype != nd->dtype || p->ndim != nd->ndim ||
        !same_dims(p->ndim, p->shape, nd->ndim, nd->shape))
        return vfail(v, id, "its primitive's inputs, dtype or shape differ from the node's");
    for (uint32_t k = 0; k < nd->n_in; k++)
        if (p->in[k].node != nd->in[k])
            return vfail(v, id, "its primitive's input %u is not the node's", k);
    const hl_view *v0 = &p->in[0].view, *v1 = &p->in[1].view, *v2 = &p->in[2].view;
    hl_dtype d0 = nd->in_dtype[0];
    switch (p->op) {
    case HL_OP_CONSTANT:
        if (nd->dtype != HL_F32 || nd->ndim != 0) return vfail(v, id, "a Constant is an f32 scalar");
        break;
    case HL_OP_IOTA:
        if (nd->dtype != HL_INT || nd->ndim != 1 || nd->shape[0] != p->iota_len)
            return vfail(v, id, "an Iota is an int tensor [len]");
        break;
    case HL_OP_CAST:
        if (p->cast_to != nd->dtype) return vfail(v, id, "a Cast's target is its dtype");
        if (!same_dims(nd->ndim, nd->shape, v0->ndim, v0->dims))
            return vfail(v, id, "its shape is not its input view's dims");
        break;
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
        if (!hl_dtype_is_float(d0) || nd->dtype != d0)
            return vfail(v, id, "%s takes a float input and gives its dtype (%s -> %s)",
                         hl_op_name(p->op), hl_dtype_name(d0), hl_dtype_name(nd->dtype));
        if (!same_dims(nd->ndim, nd->shape, v0->ndim, v0->dims))
            return vfail(v, id, "its shape is not its input view's dims");
        break;
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN: {
        bool lt = p->op == HL_OP_LESS_THAN;
        if (nd->in_dtype[1] != d0 || (!lt && (d0 == HL_BOOL || nd->dtype != d0)) ||
            (lt && nd->dtype != HL_BOOL))
            return vfail(v, id, "%s's dtypes break its rule (%s, %s -> %s)", hl_op_name(p->op),
                         hl_dtype_name(d0), hl_dtype_name(nd->in_dtype[1]),
                         hl_dtype_name(nd->dtype));
        if (!same_dims(v0->ndim, v0->dims, v1->ndim, v1->dims))
            return vfail(v, id, "its two input views have different dims");
        if (!same_dims(nd->ndim, nd->shape, v0->ndim, v0->dims))
            return vfail(v, id, "its shape is not its input views' dims");
        break;
    }
    case HL_OP_GATHER:
        if (d0 != HL_INT || nd->dtype != nd->in_dtype[1])
            return vfail(v, id, "a Gather reads int indexes and gives its data's dtype");
        if (!same_dims(nd->ndim, nd->shape, v0->ndim, v0->dims))
            return vfail(v, id, "its shape is not its indexes' view dims");
        break;
    case HL_OP_SCATTER:
        if (nd->in_dtype[1] != HL_INT || nd->dtype != d0 || nd->in_dtype[2] != d0)
            return vfail(v, id, "a Scatter reads int indexes and a src of dest's dtype");
        if (!same_dims(v1->ndim, v1->dims, v2->ndim, v2->dims))
            return vfail(v, id, "its indexes and src views have different dims");
        if (!same_dims(nd->ndim, nd->shape, v0->ndim, v0->dims))
            return vfail(v, id, "its shape is not its dest view's dims");
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE: {
        if (d0 == HL_BOOL || nd->dtype != d0)
            return vfail(v, id, "a reduction gives its input's dtype, not bool");
        if (p->axis >= v0->ndim || nd->ndim + 1 != v0->ndim)
            return vfail(v, id, "the reduced axis %u is not a dim of its %u-d view", p->axis,
                         v0->ndim);
        for (uint32_t i = 0, j = 0; i < v0->ndim; i++)
            if (i != p->axis && v0->dims[i] != nd->shape[j++])
                return vfail(v, id, "its shape is not its view's dims without the reduced axis");
        break;
    }
    default:
        return vfail(v, id, "not a primitive");
    }
    return LM_OK;
}

static int check_node(vr *v, uint32_t id)
{
    const ll_graph *g = v->g;
    const ll_node *nd = &g->nodes[id];
    int rc = check_edge_dtypes(v, id);
    if (rc) return rc;
    const ll_op_info *o = ll_op_get(nd->op);
    switch (nd->kind) {
    case LL_INPUT:
        if (nd->n_in != 0 || nd->prim.op != HL_OP_INPUT || !nd->prim.name)
            return vfail(v, id, "an Input reads nothing and has a name");
        break;
    case LL_OUTPUT: {
        const hl_view *vw = &nd->prim.in[0].view;
        if (nd->n_in != 1 || nd->prim.op != HL_OP_OUTPUT || !nd->prim.name ||
            nd->prim.in[0].node != nd->in[0])
            return vfail(v, id, "an Output reads one node and has a name");
        if (nd->dtype != g->nodes[nd->in[0]].dtype)
            return vfail(v, id, "an Output has its producer's dtype");
        if (!same_dims(nd->ndim, nd->shape, vw->ndim, vw->dims))
            return vfail(v, id, "its shape is not its view's dims");
        break;
    }
    case LL_KERNEL:
    case LL_FUSED:
        if (o->prim != HL_OP_COUNT) return check_prim(v, id);
        if (ll_op_is_attn(nd->op)) return check_attn(v, id);
        /* KMatmul */
        if (nd->n_in != 2 || nd->mm.type_a != nd->in_dtype[0] || nd->mm.type_b != nd->in_dtype[1] ||
            nd->mm.type_d != nd->dtype)
            return vfail(v, id, "KMatmul reads a and b and writes d in the dtypes of its fields");
        if (nd->ndim < 2 || nd->shape[nd->ndim - 2] != nd->mm.m || nd->shape[nd->ndim - 1] != nd->mm.n)
            return vfail(v, id, "KMatmul's shape does not end in [M, N]");
        break;
    case LL_LIBRARY: {
        uint32_t want = ll_op_input_count(nd->op, nd->mm.beta, nd->mm.epilogue);
        if (nd->n_in != want)
            return vfail(v, id, "Blas with beta %g and epilogue %d reads %u inputs, not %u",
                         nd->mm.beta, nd->mm.epilogue, want, nd->n_in);
        hl_dtype t[4] = {nd->mm.type_a, nd->mm.type_b,
                         nd->mm.beta == 1.0 ? nd->mm.type_c : nd->mm.type_bias, nd->mm.type_bias};
        for (uint32_t k = 0; k < nd->n_in; k++)
            if (t[k] != nd->in_dtype[k])
                return vfail(v, id, "operand %u's contract dtype is not the field's", k);
        if (nd->mm.type_d != nd->dtype) return vfail(v, id, "Blas writes its DTd");
        if (nd->ndim < 2 || nd->shape[nd->ndim - 2] != nd->mm.m || nd->shape[nd->ndim - 1] != nd->mm.n)
            return vfail(v, id, "Blas's shape does not end in [M, N]");
        break;
    }
    case LL_REGION: {
        if (nd->n_in != 1 || nd->dtype != nd->in_dtype[0])
            return vfail(v, id, "a region stores its root's value in its own dtype");
        const ll_node *root = &g->nodes[nd->in[0]];
        if (!same_dims(nd->ndim, nd->shape, root->ndim, root->shape))
            return vfail(v, id, "a region's shape is its root's");
        break;
    }
    case LL_LOAD: {
        if (nd->n_in != 1 || nd->dtype != nd->in_dtype[0])
            return vfail(v, id, "a load reads one node in its own dtype");
        const ll_node *src = &g->nodes[nd->in[0]];
        if (!same_dims(nd->ndim, nd->shape, src->ndim, src->shape))
            return vfail(v, id, "a load has the shape of the node it loads");
        break;
    }
    }
    return LM_OK;
}

/* ==================================================================================
 * Reach
 * ================================================================================== */

/* The element count of a shape at the current setting; -1 when it cannot be evaluated. */
static int64_t numel(vr *v, uint32_t n, const hl_expr *dims)
{
    int64_t c = 1;
    for (uint32_t i = 0; i < n; i++) {
        int64_t d;
        if (!ll__eval_at(&v->ev, dims[i], 0, &d) || d < 0) return -1;
        if (__builtin_mul_overflow(c, d, &c)) return -1;
    }
    return c;
}

/* Checks that view vw of node id's operand k stays inside node src's buffer. */
static int check_view(vr *v, uint32_t id, uint32_t k, const hl_view *vw, uint32_t src)
{
    const ll_node *sn = &v->g->nodes[src];
    int64_t size = numel(v, sn->ndim, sn->shape);
    if (size < 0) return LM_OK; /* cannot be evaluated here (overflow at a wide dim) */
    int64_t dn[HL_MAX_DIMS], lo[HL_MAX_DIMS], hi[HL_MAX_DIMS];
    int exact[HL_MAX_DIMS];
    for (uint32_t d = 0; d < vw->ndim; d++) {
        if (!ll__eval_at(&v->ev, vw->dims[d], 0, &dn[d])) return LM_OK;
        if (dn[d] < 0)
            return vfail(v, id, "operand %u's view has dim %u of size %" PRId64 " at %s", k, d,
                         dn[d], v->setting);
        if (dn[d] == 0) return LM_OK; /* reads nothing */
    }
    for (int pass = 0; pass < 2; pass++) {
        int64_t tlo = 0, thi = 0;
        bool all_exact = true;
        for (uint32_t d = 0; d < vw->ndim; d++) {
            if (pass == 0) {
                exact[d] = ll__eval_range(&v->ev, vw->strides[d], dn[d], &lo[d], &hi[d]);
                if (exact[d] < 0) return LM_OK; /* cannot be evaluated: not ours to refuse */
            }
            all_exact &= exact[d] == 1;
            if (__builtin_add_overflow(tlo, lo[d], &tlo) || __builtin_add_overflow(thi, hi[d], &thi))
                return LM_OK;
        }
        if (tlo >= 0 && thi < size) return LM_OK;
        if (all_exact)
            return vfail(v, id,
                         "operand %u (%s) reads positions %" PRId64 "..%" PRId64
                         " of node %u, which has %" PRId64 " elements, at %s",
                         k, operand_name(&v->g->nodes[id], k), tlo, thi, src, size, v->setting);
        if (pass == 1) break;
        /* tighten the inexact dims by evaluating every position, within the budget */
        for (uint32_t d = 0; d < vw->ndim; d++) {
            if (exact[d] == 1) continue;
            if (dn[d] > SCAN_DIM_MAX || dn[d] > v->scan_left) return LM_OK;
            v->scan_left -= dn[d];
            if (!ll__eval_scan(&v->ev, vw->strides[d], dn[d], &lo[d], &hi[d])) return LM_OK;
            exact[d] = 1;
        }
    }
    return LM_OK;
}

/* The reach of a matmul operand: sum over (extent, stride) of the extremes of
 * stride * [0, extent). */
static int check_mm_operand(vr *v, uint32_t id, uint32_t k, hl_expr batch, hl_expr sb,
                            hl_expr rows, hl_expr cols, hl_expr ld, ll_order order)
{
    hl_expr ext[3] = {batch, rows, cols};
    int64_t ev_ext[3], st[3];
    for (int i = 0; i < 3; i++)
        if (!ll__eval_at(&v->ev, ext[i], 0, &ev_ext[i])) return LM_OK;
    if (!ll__eval_at(&v->ev, sb, 0, &st[0]) || !ll__eval_at(&v->ev, ld, 0, &st[1])) return LM_OK;
    st[2] = 1;
    if (order == LL_COL_MAJOR) {
        st[2] = st[1];
        st[1] = 1;
    }
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < 3; i++) {
        if (ev_ext[i] <= 0) return LM_OK;
        int64_t t;
        if (__builtin_mul_overflow(st[i], ev_ext[i] - 1, &t)) return LM_OK;
        if (__builtin_add_overflow(lo, t < 0 ? t : 0, &lo) ||
            __builtin_add_overflow(hi, t > 0 ? t : 0, &hi))
            return LM_OK;
    }
    uint32_t src = v->g->nodes[id].in[k];
    const ll_node *sn = &v->g->nodes[src];
    int64_t size = numel(v, sn->ndim, sn->shape);
    if (size >= 0 && (lo < 0 || hi >= size))
        return vfail(v, id,
                     "operand %u (%s) reads positions %" PRId64 "..%" PRId64
                     " of node %u, which has %" PRId64 " elements, at %s",
                     k, k ? "b" : "a", lo, hi, src, size, v->setting);
    return LM_OK;
}

static int check_matmul(vr *v, uint32_t id)
{
    const ll_node *nd = &v->g->nodes[id];
    const ll_matmul *mm = &nd->mm;
    int rc = check_mm_operand(v, id, 0, mm->batch, mm->stride_a, mm->m, mm->k, mm->lda,
                              mm->order_a);
    if (!rc)
        rc = check_mm_operand(v, id, 1, mm->batch, mm->stride_b, mm->k, mm->n, mm->ldb,
                              mm->order_b);
    if (rc) return rc;
    int64_t b, m, n;
    if (!ll__eval_at(&v->ev, mm->batch, 0, &b) || !ll__eval_at(&v->ev, mm->m, 0, &m) ||
        !ll__eval_at(&v->ev, mm->n, 0, &n))
        return LM_OK;
    int64_t d, own = numel(v, nd->ndim, nd->shape);
    if (__builtin_mul_overflow(b, m, &d) || __builtin_mul_overflow(d, n, &d) || own < 0) return LM_OK;
    if (own != d)
        return vfail(v, id, "it writes %" PRId64 " elements (batch*M*N) into a shape of %" PRId64
                            " at %s",
                     d, own, v->setting);
    for (uint32_t k = 2; k < nd->n_in; k++) {
        const ll_node *sn = &v->g->nodes[nd->in[k]];
        int64_t size = numel(v, sn->ndim, sn->shape);
        bool is_c = k == 2 && mm->beta == 1.0;
        int64_t need = is_c ? d : n;
        if (size >= 0 && size < need)
            return vfail(v, id, "operand %u (%s) has %" PRId64 " elements, it reads %" PRId64
                                " at %s",
                         k, is_c ? "c" : "bias", size, need, v->setting);
    }
    return LM_OK;
}

static int check_reach(vr *v)
{
    const ll_graph *g = v->g;
    for (uint32_t id = 0; id < g->n_nodes; id++) {
        const ll_node *nd = &g->nodes[id];
        int rc = LM_OK;
        if (nd->kind == LL_OUTPUT) {
            rc = check_view(v, id, 0, &nd->prim.in[0].view, nd->in[0]);
        } else if ((nd->kind == LL_KERNEL || nd->kind == LL_FUSED) && nd->prim.op != HL_OP_COUNT) {
            for (uint32_t k = 0; k < nd->n_in && !rc; k++)
                rc = check_view(v, id, k, &nd->prim.in[k].view, nd->in[k]);
        } else if (nd->kind == LL_KERNEL && ll_op_is_attn(nd->op)) {
            const ll_attn *at = &nd->at;
            const hl_view *vw[4] = {&at->q, &at->k, &at->v, &at->mask};
            for (uint32_t k = 0; k < nd->n_in && k < 4 && !rc; k++)
                rc = check_view(v, id, k, vw[k], nd->in[k]);
        } else if (nd->kind == LL_LIBRARY || nd->kind == LL_KERNEL) {
            rc = check_matmul(v, id);
        }
        if (rc) return rc;
    }
    return LM_OK;
}

/* The settings: every corner of the dims' box (all of them for up to
 * MAX_CORNER_DIMS dims, else all at lo and all at hi), then the profile values. */
static int check_settings(vr *v)
{
    const ll_graph *g = v->g;
    uint32_t nd = g->n_dims, nvar = hl_var_count(g->pool);
    uint32_t ncorner = nd <= MAX_CORNER_DIMS ? 1u << nd : 2;
    int64_t *val = ll__alloc(nvar ? nvar : 1, sizeof(int64_t));
    int64_t *prev = ll__alloc(nvar ? nvar : 1, sizeof(int64_t));
    if (!val || !prev) {
        ll__free(val);
        ll__free(prev);
        return ll__oom(v->err, "verify");
    }
    int rc = LM_OK;
    bool have_prev = false;
    for (uint32_t s = 0; s <= ncorner && !rc; s++) {
        for (uint32_t i = 0; i < nvar; i++)
            val[i] = 1;
        size_t o = 0;
        for (uint32_t i = 0; i < nd; i++) {
            const hl_dim *d = &g->dims[i];
            int64_t x = s == ncorner ? d->profile
                        : nd <= MAX_CORNER_DIMS ? ((s >> i) & 1 ? d->hi : d->lo)
                                                : (s ? d->hi : d->lo);
            val[d->var] = x;
            if (o < sizeof v->where - 32)
                o += (size_t)snprintf(v->where + o, sizeof v->where - o, "%s%s=%" PRId64,
                                      i ? ", " : "", hl_var_name(g->pool, d->var), x);
        }
        if (nd == 0) snprintf(v->where, sizeof v->where, "the static sizes");
        if (have_prev && memcmp(val, prev, nvar * sizeof(int64_t)) == 0) continue;
        memcpy(prev, val, nvar * sizeof(int64_t));
        have_prev = true;
        v->setting = v->where;
        rc = ll__eval_init(&v->ev, g->pool, val, v->err);
        if (!rc) rc = check_reach(v);
        ll__eval_fini(&v->ev);
    }
    ll__free(val);
    ll__free(prev);
    return rc;
}

int ll_graph_verify(const ll_graph *g, lm_err *err)
{
    if (!g) return ll__fail(err, LM_EARG, NULL, "ll_graph_verify: no graph");
    vr v = {.g = g, .err = err, .scan_left = SCAN_BUDGET};
    int rc = check_structure(&v);
    for (uint32_t id = 0; id < g->n_nodes && !rc; id++)
        rc = check_node(&v, id);
    if (!rc) rc = check_settings(&v);
    return rc;
}
