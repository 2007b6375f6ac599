/* ll_exec_operand.c - what every part of the CPU executor shares: reading an operand in
 * the dtype its consumer's contract names (in place, or a reinterpreting copy), and
 * running one primitive through the reference runtime on a small HLIR graph (the
 * "mini" graphs of standalone kernels and region nodes). Below ll_exec.c, ll_exec_mm.c,
 * ll_exec_attn.c and ll_exec_region.c, which call it; it calls none of them. */
#include "ll_exec_int.h"

#include <inttypes.h>
#include <string.h>

/* ---- operands ---- */

size_t ll__x_operand_bytes(const ll_exec *x, uint32_t src, hl_dtype rdt, size_t count)
{
    if (x->buf[src].dtype == rdt && count <= x->buf[src].numel) return 0;
    size_t es = hl_dtype_size(rdt);
    return count > SIZE_MAX / es ? SIZE_MAX : count * es;
}

int ll__x_operand(ll_exec *x, uint32_t id, uint32_t src, hl_dtype rdt, size_t count, hl_tensor *out,
                  bool *copied)
{
    const hl_tensor *b = &x->buf[src];
    *copied = false;
    memset(out, 0, sizeof *out);
    if (!b->data)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "reads llir node %u, which holds no result", src);
    if ((uint64_t)count > (uint64_t)INT64_MAX)
        return ll__fail_node(x->err, LM_ELIMIT, x->g, id, "an operand of %zu elements", count);
    if (b->dtype == rdt && count <= b->numel) {
        out->dtype = rdt;
        out->ndim = 1;
        out->dims[0] = (int64_t)count;
        out->numel = count;
        out->data = b->data;
        return 0;
    }
    /* the producer's bytes as rdt; past its buffer, zeros */
    int64_t d = (int64_t)count;
    if (ll__hl_tensor_init(out, rdt, 1, &d, x->err))
        return ll__fail_node(x->err, x->err->code, x->g, id, "reinterpreting an operand");
    size_t have = b->numel * hl_dtype_size(b->dtype), want = count * hl_dtype_size(rdt);
    memcpy(out->data, b->data, have < want ? have : want);
    *copied = true;
    return 0;
}

/* ---- one-node graphs ---- */

hl_graph *ll__x_mini_new(ll_exec *x, uint32_t id)
{
    hl_graph *hg = hl_graph_new();
    if (!hg) {
        ll__fail_node(x->err, LM_ENOMEM, x->g, id, "out of memory");
        return NULL;
    }
    for (uint32_t i = 0; i < ll_graph_dim_count(x->g); i++) {
        const hl_dim *d = ll_graph_dim_at(x->g, i);
        hl_graph_dim(hg, ll_graph_dim_name(x->g, i), d->lo, d->hi, d->profile);
    }
    if (ll__hl_graph_status(hg, "declaring the dims of a kernel's graph", x->err)) {
        hl_graph_free(hg);
        return NULL;
    }
    return hg;
}

int ll__x_mini_fail(ll_exec *x, uint32_t id, hl_graph *hg)
{
    /* a builder call that could not build an expression (hl_node_tensor's view, say)
     * answers with an invalid handle; out of memory is what it was */
    if (hl_expr_pool_failed(hl_graph_exprs(hg)))
        return ll__fail_node(x->err, LM_ENOMEM, x->g, id, "out of memory");
    char desc[160];
    ll__node_desc(x->g, id, desc, sizeof desc);
    int code = ll__hl_graph_status(hg, desc, x->err);
    return code ? code : ll__fail_node(x->err, LM_EVERIFY, x->g, id, "cannot be built");
}

static int mini_status(ll_exec *x, uint32_t id, hl_graph *hg, uint32_t got, uint32_t *out)
{
    if (got == HL_NONE || hl_graph_error(hg)->code != 0) return ll__x_mini_fail(x, id, hg);
    *out = got;
    return 0;
}

int ll__x_mini_input(ll_exec *x, uint32_t id, hl_graph *hg, uint32_t k, hl_dtype dt, size_t count,
                     uint32_t *out)
{
    char name[24];
    snprintf(name, sizeof name, "in%u", k);
    hl_expr d = hl_n(hg, (int64_t)count);
    hl_t t = hl_input(hg, name, dt, 1, &d);
    return mini_status(x, id, hg, t.node, out);
}

static int mini_expr(ll_exec *x, uint32_t id, hl_graph *hg, hl_expr e, hl_expr *out)
{
    *out = ll__expr_copy(hl_graph_exprs(hg), x->p, e, NULL);
    if (*out != HL_NONE) return 0;
    if (hl_expr_pool_failed(hl_graph_exprs(hg)))
        return ll__fail_node(x->err, LM_ENOMEM, x->g, id, "out of memory");
    return ll__fail_node(x->err, LM_EEVAL, x->g, id,
                         "an expression of the node cannot be "
                         "rebuilt (expression id %u)",
                         e);
}

int ll__x_mini_prim(ll_exec *x, uint32_t id, hl_graph *hg, const hl_node *prim, const uint32_t *ins,
                    uint32_t *out)
{
    hl_node spec = *prim;
    int rc;
    spec.name = prim->op == HL_OP_OUTPUT ? "out" : NULL;
    if ((unsigned)prim->op >= HL_OP_COUNT || prim->n_in != hl_op_arity(prim->op) ||
        prim->n_in > HL_MAX_INPUTS)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "its primitive (op %d with %u inputs) is not a primitive",
                             (int)prim->op, prim->n_in);
    for (uint32_t i = 0; i < prim->n_in; i++) {
        const hl_view *v = &prim->in[i].view;
        if (v->ndim > HL_MAX_DIMS)
            return ll__fail_node(x->err, LM_EVERIFY, x->g, id, "input %u's view has %u dims", i,
                                 v->ndim);
        spec.in[i].node = ins[i];
        for (uint32_t d = 0; d < v->ndim; d++)
            if ((rc = mini_expr(x, id, hg, v->dims[d], &spec.in[i].view.dims[d])) ||
                (rc = mini_expr(x, id, hg, v->strides[d], &spec.in[i].view.strides[d])))
                return rc;
    }
    if (prim->op == HL_OP_IOTA && ((rc = mini_expr(x, id, hg, prim->iota_expr, &spec.iota_expr)) ||
                                   (rc = mini_expr(x, id, hg, prim->iota_len, &spec.iota_len))))
        return rc;
    return mini_status(x, id, hg, hl_graph_add(hg, &spec), out);
}

int ll__x_mini_run(ll_exec *x, uint32_t id, hl_graph *hg, const hl_tensor *ins)
{
    const ll_node *n = ll_graph_node(x->g, id);
    char what[200];
    ll__node_desc(x->g, id, what, sizeof what);
    hl_tensor out;
    memset(&out, 0, sizeof out);
    int rc = ll__hl_run(hg, x->dimv, ins, &out, what, x->err);
    hl_graph_free(hg);
    if (rc) return rc;
    if (out.dtype != n->dtype || out.numel != x->numel[id]) {
        rc = ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                           "computes %zu elements of %s, but the node is %zu elements of %s",
                           out.numel, hl_dtype_name(out.dtype), x->numel[id],
                           hl_dtype_name(n->dtype));
        hl_tensor_fini(&out);
        return rc;
    }
    out.ndim = n->ndim;
    memcpy(out.dims, ll__x_dims(x, id), sizeof out.dims);
    x->buf[id] = out;
    x->owned[id] = true;
    return 0;
}
