/* ll_exec_region.c - a fused region as the GPU kernel computes it.
 *
 * The interior is a DAG of fused primitives (LL_FUSED) over loads (LL_LOAD) of stored
 * tensors; the kernel evaluates it in registers and stores the root once. So here:
 *   - a load reads its tensor in the dtype its FLoad names and widens a float to f32
 *     (exact);
 *   - every fused float op computes in f32 and its value stays f32: no rounding to the
 *     node's storage dtype, which the value never visits;
 *   - integer and Bool values keep their own dtype (their arithmetic is exact or wraps
 *     the same way in registers);
 *   - a fused Cast is the one interior op that rounds: its result is the target dtype's
 *     value (held as f32 when the target is a float), because rounding is what a cast
 *     computes;
 *   - the root is rounded once, to the region's dtype, at the store.
 * Each interior node is evaluated once (in id order, producers first), as one node of an
 * hlir graph built for the region in which every float node is f32: the reference's
 * f32 arithmetic is exactly "computed in f32, not rounded to storage", so every
 * primitive keeps the reference's semantics and only the storage roundings go. */
#include "ll_exec_int.h"

#include <string.h>

static bool narrow_float(hl_dtype t)
{
    return hl_dtype_is_float(t) && t != HL_F32;
}

/* Adds a Cast of mini node v to dt (reading it contiguously); the cast in *out. */
static int mini_cast(ll_exec *x, uint32_t id, hl_graph *hg, uint32_t v, hl_dtype dt, uint32_t *out)
{
    hl_t t = hl_cast(hg, hl_node_tensor(hg, v), dt);
    if (t.node == HL_NONE) return ll__x_mini_fail(x, id, hg);
    *out = t.node;
    return 0;
}

size_t ll__x_region_work(const ll_exec *x, uint32_t R)
{
    const ll_node *rn = ll_graph_node(x->g, R);
    size_t w = 0;
    for (uint32_t id = R + 1; id < x->n; id++) {
        const ll_node *n = ll_graph_node(x->g, id);
        if (n->region != R) continue;
        size_t c = x->numel[id], b = 0;
        if (n->kind == LL_LOAD) {
            b = ll__x_operand_bytes(x, n->in[0], n->in_dtype[0], c);
            if (narrow_float(n->in_dtype[0])) b += c * 4;
        } else {
            b = c * (hl_dtype_is_float(n->dtype) ? 4 : hl_dtype_size(n->dtype));
            if (n->prim.op == HL_OP_CAST && narrow_float(n->prim.cast_to))
                b += c * hl_dtype_size(n->prim.cast_to);
        }
        w = w > SIZE_MAX - b ? SIZE_MAX : w + b;
    }
    size_t store = x->numel[R] * hl_dtype_size(rn->dtype); /* the rounding Cast */
    return w > SIZE_MAX - store ? SIZE_MAX : w + store;
}

/* Adds fused node id to hg; its value's mini node in x->mini[id]. */
static int add_fused(ll_exec *x, uint32_t id, hl_graph *hg)
{
    const ll_graph *g = x->g;
    const ll_node *n = ll_graph_node(g, id);
    hl_op want = ll__op_prim(n->op);
    if (n->prim.op != want || n->prim.n_in != n->n_in)
        return ll__fail_node(x->err, LM_EVERIFY, g, id,
                             "its op computes %s, its primitive is %s with %u inputs, the node "
                             "has %u",
                             want == HL_OP_COUNT ? "no primitive" : hl_op_name(want),
                             (unsigned)n->prim.op < HL_OP_COUNT ? hl_op_name(n->prim.op) : "none",
                             n->prim.n_in, n->n_in);
    uint32_t ids[LL_MAX_IN];
    for (uint32_t i = 0; i < n->n_in; i++) {
        hl_dtype pd = ll_graph_node(g, n->in[i])->dtype, cd = n->in_dtype[i];
        /* in registers a float is an f32 whatever its storage dtype; an integer is read
         * as itself: there is no byte to reinterpret */
        if (hl_dtype_is_float(pd) != hl_dtype_is_float(cd) || (!hl_dtype_is_float(pd) && pd != cd))
            return ll__fail_node(x->err, LM_EVERIFY, g, id,
                                 "reads input %u (node %u, %s) as %s inside the region", i,
                                 n->in[i], hl_dtype_name(pd), hl_dtype_name(cd));
        ids[i] = x->mini[n->in[i]];
    }
    uint32_t v;
    int rc = ll__x_mini_prim(x, id, hg, &n->prim, ids, &v);
    if (!rc && n->prim.op == HL_OP_CAST && narrow_float(n->prim.cast_to))
        rc = mini_cast(x, id, hg, v, HL_F32, &v); /* the cast's rounding, held as f32 */
    if (rc) return rc;
    hl_dtype md = hl_graph_node(hg, v)->dtype;
    if (hl_dtype_is_float(n->dtype) ? md != HL_F32 : md != n->dtype)
        return ll__fail_node(x->err, LM_EVERIFY, g, id,
                             "computes a %s value inside the region, but the node is %s",
                             hl_dtype_name(md), hl_dtype_name(n->dtype));
    x->mini[id] = v;
    return 0;
}

int ll__x_region(ll_exec *x, uint32_t R)
{
    const ll_graph *g = x->g;
    const ll_node *rn = ll_graph_node(g, R);
    uint32_t nl = 0;
    for (uint32_t id = R + 1; id < x->n; id++) {
        const ll_node *n = ll_graph_node(g, id);
        if (n->region == R && n->kind == LL_LOAD) nl++;
    }
    hl_tensor *ins = ll__zalloc(nl ? nl : 1, sizeof(hl_tensor));
    bool *copied = ll__zalloc(nl ? nl : 1, sizeof(bool));
    hl_graph *hg = NULL;
    int rc = 0;
    uint32_t k = 0;
    if (!ins || !copied) {
        rc = ll__fail_node(x->err, LM_ENOMEM, g, R, "out of memory");
        goto out;
    }
    if (!(hg = ll__x_mini_new(x, R))) {
        rc = x->err->code;
        goto out;
    }
    for (uint32_t id = R + 1; id < x->n && !rc; id++) {
        const ll_node *n = ll_graph_node(g, id);
        if (n->region != R) continue;
        if (n->kind != LL_LOAD) {
            rc = add_fused(x, id, hg);
            continue;
        }
        uint32_t src = n->in[0], v = HL_NONE;
        hl_dtype rdt = n->in_dtype[0];
        size_t cnt = x->numel[id];
        rc = ll__x_operand(x, id, src, rdt, cnt, &ins[k], &copied[k]);
        if (!rc) rc = ll__x_mini_input(x, id, hg, k, rdt, cnt, &v);
        k++;
        if (!rc && narrow_float(rdt)) rc = mini_cast(x, id, hg, v, HL_F32, &v); /* exact */
        x->mini[id] = v;
    }
    uint32_t rv = x->mini[rn->in[0]], o = HL_NONE;
    if (!rc && hl_graph_node(hg, rv)->dtype != rn->dtype)
        rc = mini_cast(x, R, hg, rv, rn->dtype, &rv); /* the one rounding, at the store */
    if (!rc) {
        o = hl_output(hg, "out", hl_node_tensor(hg, rv));
        if (o == HL_NONE) rc = ll__x_mini_fail(x, R, hg);
    }
    if (!rc) {
        rc = ll__x_mini_run(x, R, hg, ins);
        hg = NULL;
    }
out:
    hl_graph_free(hg);
    for (uint32_t i = 0; i < k && copied; i++)
        if (copied[i]) hl_tensor_fini(&ins[i]);
    ll__free(ins);
    ll__free(copied);
    return rc;
}
