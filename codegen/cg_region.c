/* cg_region.c - which template a region or standalone elementwise/reduction kernel gets.
 *
 *   no reduction              elementwise, L chosen for the most unit-stride loads
 *   a row-aligned reduction   row template with L = the output's last dim (softmax,
 *                             rmsnorm, layernorm: the reductions broadcast along the row)
 *                             or L = 1 (each output element is one reduction: a
 *                             standalone KSum / KMax over its input's last axis)
 *   anything else             elementwise with per-element reduction loops (column
 *                             reductions, reductions read through odd views)
 *
 * "Row-aligned" is decided by the value graph: a reduction lands in the row scope exactly
 * when its position depends only on the row (cg_val.c, hoist), and its loop walks its
 * input's innermost axis (inner stride 1). */
#include "cg_int.h"


static int count_reduce(const cg_vg *vg)
{
    int n = 0;
    for (uint32_t i = 0; i < vg->n; i++)
        n += vg->v[i].kind == CG_V_REDUCE;
    return n;
}

/* The output's trailing products: cand[0] = numel, ..., cand[nd-1] = the last dim. */
static uint32_t suffixes(cg_ctx *c, cg_vg *tmp, const ll_node *n, hl_expr *cand)
{
    hl_expr_pool *p = c->plan->exprs;
    if (n->ndim == 0) {
        cand[0] = hl_e_num(p, 1);
        return 1;
    }
    hl_expr acc = hl_e_num(p, 1);
    for (uint32_t i = n->ndim; i-- > 0;) {
        acc = hl_e_mul(p, acc, cg__x(tmp, n->shape[i]));
        cand[i] = acc;
    }
    return n->ndim;
}

/* Emits the kernel of vg with the row or the elementwise template, counts its work
 * (cg_kernel.ops) and frees vg. */
static int emit(cg_ctx *c, cg_vg *vg, bool row, uint32_t node, uint32_t out_buf, cg_kernel *k)
{
    int rc = row ? cg__emit_row(c, vg, node, out_buf, k) : cg__emit_elem(c, vg, node, out_buf, k);
    if (!rc && cg__vg_ops(vg, row, k))
        rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
    cg__vg_fini(vg);
    return rc;
}

/* A failed cg__vg_build leaves what it had allocated in vg: free it, pass rc on. */
static int unbuilt(cg_vg *vg, int rc)
{
    cg__vg_fini(vg);
    return rc;
}

int cg__region_kernel(cg_ctx *c, uint32_t node, uint32_t out_buf, cg_kernel *k)
{
    const ll_node *n = ll_graph_node(c->g, node);
    hl_expr_pool *p = c->plan->exprs;
    cg_vg tmp = {0};
    tmp.p = p;
    tmp.g = c->g;
    tmp.memo = c->memo;
    hl_expr cand[HL_MAX_DIMS];
    uint32_t nc = suffixes(c, &tmp, n, cand);
    for (uint32_t i = 0; i < nc; i++)
        if (cand[i] == HL_NONE) return cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
    hl_expr last = cand[nc - 1], one = hl_e_num(p, 1);
    cg_vg vg;
    int rc = cg__vg_build(&vg, c, node, last, true);
    if (rc) return unbuilt(&vg, rc);
    if (count_reduce(&vg) > 0) {
        if (cg__row_eligible(&vg) > 0) return emit(c, &vg, true, node, out_buf, k);
        cg__vg_fini(&vg);
        if (last != one) {
            rc = cg__vg_build(&vg, c, node, one, true);
            if (rc) return unbuilt(&vg, rc);
            if (cg__row_eligible(&vg) > 0) return emit(c, &vg, true, node, out_buf, k);
            cg__vg_fini(&vg);
        }
        rc = cg__vg_build(&vg, c, node, last, false);
        if (rc) return unbuilt(&vg, rc);
        return emit(c, &vg, false, node, out_buf, k);
    }
    cg__vg_fini(&vg);
    /* elementwise: the row length under which most loads are unit-stride (the largest on
       ties: fewer rows, fewer row values to recompute) */
    int best = -1;
    uint32_t bi = 0;
    for (uint32_t i = 0; i < nc; i++) {
        rc = cg__vg_build(&vg, c, node, cand[i], false);
        if (rc) return unbuilt(&vg, rc);
        int s = cg__elem_score(&vg);
        int64_t lv;
        if (i > 0 && hl_e_is_num(p, cand[i], &lv) && lv % 2) s = -1; /* no vector path */
        cg__vg_fini(&vg);
        if (s > best) {
            best = s;
            bi = i;
        }
    }
    rc = cg__vg_build(&vg, c, node, cand[bi], false);
    if (rc) return unbuilt(&vg, rc);
    return emit(c, &vg, false, node, out_buf, k);
}

int cg__copy_kernel(cg_ctx *c, uint32_t out_node, uint32_t out_buf, cg_kernel *k)
{
    int rc = cg__region_kernel(c, out_node, out_buf, k);
    if (!rc) k->template_name = "copy";
    return rc;
}
