/* cg_plan.c - the plan of an LLIR graph: buffers, kernels, library calls, steps.
 *
 * Top-level nodes come in topological order (their ids), and so do the steps: one per
 * kernel (three for a Scatter) and one per cuBLASLt call. Buffers:
 *
 *   input i        the caller's tensor (CG_BUF_INPUT)
 *   output i       the caller's tensor (CG_BUF_OUTPUT). An Output node whose view is the
 *                  identity of a computed producer (not an input, not already some other
 *                  output's) aliases it: the producer stores straight into the output
 *                  buffer. Any other Output gets a copy kernel (view applied).
 *   temp           every other computed node (CG_BUF_TEMP)
 *   workspace      Scatter's winner array, a cuBLASLt call's workspace
 *
 * Live ranges: a buffer is live from the step that writes it to the last step that
 * reads it (a kernel reads the buffers of its const parameters); inputs from step 0,
 * outputs to the last step.
 *
 * Expressions: everything the plan says is in its own pool (cg_plan.exprs), copied from
 * the LLIR graph's pool structure by structure, so the plan outlives the graph. */
#include "cg_attn_glue.h"
#include "cg_int.h"

#include <inttypes.h>
#include <stdio.h>

static bool is_matmul_kernel(const ll_node *n)
{
    if (n->kind != LL_KERNEL) return false;
    const ll_op_info *oi = ll_op_get(n->op);
    return oi && oi->dialect == LL_D_KERNEL && oi->prim == HL_OP_COUNT;
}

void cg_plan_free(cg_plan *p)
{
    if (!p) return;
    for (uint32_t i = 0; i < p->n_kernels; i++)
        cg__free(p->kernels[i].source);
    for (uint32_t i = 0; i < p->n_dims; i++)
        cg__free(p->dim_names ? p->dim_names[i] : NULL);
    cg__free(p->dim_names);
    cg__free(p->dims);
    cg__free(p->buffers);
    cg__free(p->kernels);
    cg__free(p->blas);
    cg__free(p->steps);
    cg__free(p->input_buf);
    cg__free(p->output_buf);
    cg__free(p->node_buf);
    hl_expr_pool_free(p->exprs);
    cg__free(p);
}

typedef struct build {
    cg_plan *p;
    cg_ctx c;
    cg_dims d;
    uint32_t bcap, kcap, blcap, scap;
    lm_err *err;
} build;

static uint32_t add_buffer(build *b, cg_buf_kind kind, uint32_t index, hl_dtype dt, hl_expr numel,
                           uint32_t node)
{
    cg_plan *p = b->p;
    if (!cg__grow((void **)&p->buffers, &b->bcap, p->n_buffers + 1, sizeof *p->buffers)) {
        cg__fail(b->err, LM_ENOMEM, cg__at(node), "out of memory");
        return LM_NONE;
    }
    cg_buffer *x = &p->buffers[p->n_buffers];
    x->kind = kind;
    x->index = index;
    x->dtype = dt;
    x->numel = numel;
    x->bytes = hl_e_mul(p->exprs, numel, hl_e_num(p->exprs, (int64_t)hl_dtype_size(dt)));
    x->first_step = kind == CG_BUF_INPUT ? 0 : UINT32_MAX;
    x->last_step = 0;
    x->llir_node = node;
    if (numel == HL_NONE || x->bytes == HL_NONE) {
        cg__fail(b->err, LM_EUNSUPPORTED, cg__at(node), "a buffer's size overflows int64");
        return LM_NONE;
    }
    return p->n_buffers++;
}

static hl_expr shape_numel(build *b, const ll_node *n)
{
    hl_expr_pool *p = b->p->exprs;
    hl_expr e = hl_e_num(p, 1);
    for (uint32_t i = 0; i < n->ndim; i++)
        e = hl_e_mul(p, e, hl_expr_copy(p, ll_graph_exprs(b->c.g), n->shape[i], b->c.memo, 0));
    return e;
}

static cg_kernel *new_kernel(build *b, uint32_t node)
{
    cg_plan *p = b->p;
    if (!cg__grow((void **)&p->kernels, &b->kcap, p->n_kernels + 1, sizeof *p->kernels)) {
        cg__fail(b->err, LM_ENOMEM, cg__at(node), "out of memory");
        return NULL;
    }
    cg_kernel *k = &p->kernels[p->n_kernels];
    memset(k, 0, sizeof *k);
    k->llir_node = node;
    k->ops = k->strided = k->divs32 = k->divs64 = HL_NONE;
    return k;
}

static int add_step(build *b, cg_step_kind kind, uint32_t index, uint32_t node)
{
    cg_plan *p = b->p;
    if (!cg__grow((void **)&p->steps, &b->scap, p->n_steps + 1, sizeof *p->steps))
        return cg__fail(b->err, LM_ENOMEM, cg__at(node), "out of memory");
    p->steps[p->n_steps].kind = kind;
    p->steps[p->n_steps].index = index;
    p->n_steps++;
    return 0;
}

static void touch(cg_plan *p, uint32_t buf, uint32_t step, bool write)
{
    if (buf == LM_NONE) return;
    cg_buffer *x = &p->buffers[buf];
    if (write && x->first_step == UINT32_MAX) x->first_step = step;
    if (x->first_step == UINT32_MAX) x->first_step = step;
    if (step > x->last_step) x->last_step = step;
}

/* Adds the kernel just written (the last in p->kernels) as a step. */
static int kernel_step(build *b, uint32_t node)
{
    cg_plan *p = b->p;
    uint32_t ki = p->n_kernels++;
    uint32_t step = p->n_steps;
    int rc = add_step(b, CG_STEP_KERNEL, ki, node);
    if (rc) return rc;
    const cg_kernel *k = &p->kernels[ki];
    for (uint32_t i = 0; i < k->n_params; i++)
        if (k->params[i].kind == CG_P_BUFFER) touch(p, k->params[i].buf, step, k->params[i].written);
    return 0;
}

static bool identity_view(build *b, const ll_node *prod, const hl_view *lv)
{
    hl_expr_pool *p = b->p->exprs;
    const hl_expr_pool *lp = ll_graph_exprs(b->c.g);
    if (lv->ndim != prod->ndim) return false;
    hl_view v;
    v.ndim = lv->ndim;
    for (uint32_t i = 0; i < lv->ndim; i++) {
        v.dims[i] = hl_expr_copy(p, lp, lv->dims[i], b->c.memo, 0);
        v.strides[i] = hl_expr_copy(p, lp, lv->strides[i], b->c.memo, 0);
        if (v.dims[i] != hl_expr_copy(p, lp, prod->shape[i], b->c.memo, 0)) return false;
        if (v.dims[i] == HL_NONE || v.strides[i] == HL_NONE) return false;
    }
    return hl_view_is_contiguous(p, &v);
}

static int copy_matmul(build *b, const ll_matmul *src, ll_matmul *dst)
{
    hl_expr_pool *p = b->p->exprs;
    const hl_expr_pool *lp = ll_graph_exprs(b->c.g);
    *dst = *src;
    hl_expr *f[8] = {&dst->m, &dst->n, &dst->k, &dst->batch,
                     &dst->lda, &dst->ldb, &dst->stride_a, &dst->stride_b};
    for (int i = 0; i < 8; i++) {
        *f[i] = hl_expr_copy(p, lp, *f[i], b->c.memo, 0);
        if (*f[i] == HL_NONE) return LM_ENOMEM;
    }
    return 0;
}

/* ---- the fused attention (KAttn, KAttnMask): the spec of codegen/cg_attn.h ---- */

/* The base of a view (LLIR pool) at leading index z = bh, flattened over the leading dims
 * lead[0 .. nl) (plan pool), and its row and column strides' coefficients. */
static int attn_view(build *b, uint32_t id, const char *name, const hl_view *v, uint32_t nl,
                     const hl_expr *lead, hl_expr n_bh, hl_expr *base, hl_expr *row, hl_expr *col)
{
    hl_expr_pool *p = b->p->exprs;
    const hl_expr_pool *lp = ll_graph_exprs(b->c.g);
    int64_t zb = 0;
    if (!hl_e_is_num(p, n_bh, &zb)) zb = 0;
    hl_expr z = hl_e_z(p), inner = hl_e_num(p, 1), acc = hl_e_num(p, 0);
    for (uint32_t i = nl; i-- > 0;) {
        hl_expr st = hl_expr_copy(p, lp, v->strides[i], b->c.memo, 0);
        hl_expr idx = hl_e_div(p, z, inner);
        if (i) idx = hl_e_mod(p, idx, lead[i]);
        hl_expr at = hl_e_subst_z(p, st, idx, zb);
        acc = hl_e_add(p, acc, at);
        inner = hl_e_mul(p, inner, lead[i]);
        if (acc == HL_NONE || inner == HL_NONE)
            return cg__fail(b->err, LM_EUNSUPPORTED, cg__at(id),
                            "attention: %s's base overflows int64 or memory ran out", name);
    }
    *base = acc;
    hl_expr rs = hl_expr_copy(p, lp, v->strides[nl], b->c.memo, 0);
    hl_expr cs = hl_expr_copy(p, lp, v->strides[nl + 1], b->c.memo, 0);
    hl_expr rn = hl_expr_copy(p, lp, v->dims[nl], b->c.memo, 0);
    hl_expr cn = hl_expr_copy(p, lp, v->dims[nl + 1], b->c.memo, 0);
    *row = hl_stride_coef(p, rs, rn);
    *col = hl_stride_coef(p, cs, cn);
    if (*row == HL_NONE || *col == HL_NONE)
        return cg__fail(b->err, LM_EUNSUPPORTED, cg__at(id),
                        "attention: %s's row or column stride is not linear in z (the fused "
                        "kernel addresses base + row * r + col * c)",
                        name);
    return 0;
}

/* The spec of attention node id, but its buffers. */
static int attn_fill(build *b, uint32_t id, cg_attn_spec *out)
{
    cg_plan *p = b->p;
    hl_expr_pool *px = p->exprs;
    const ll_node *n = ll_graph_node(b->c.g, id);
    const ll_attn *at = &n->at;
    const hl_expr_pool *lp = ll_graph_exprs(b->c.g);
    bool has_mask = n->n_in == 4;
    if (n->n_in != (has_mask ? 4u : 3u) || at->nlead + 2 > HL_MAX_DIMS)
        return cg__fail(b->err, LM_EVERIFY, cg__at(id), "an attention node with %u inputs", n->n_in);
    cg_attn_spec s;
    memset(&s, 0, sizeof s);
    s.llir_node = id;
    s.dtype = n->dtype;
    int64_t hd;
    hl_expr d = hl_expr_copy(px, lp, at->d, b->c.memo, 0);
    if (!hl_e_is_num(px, d, &hd) || (hd != 64 && hd != 128))
        return cg__fail(b->err, LM_EUNSUPPORTED, cg__at(id),
                        "attention: the fused kernel takes head dims 64 and 128; this one is "
                        "not (the unfused program computes it)");
    if (n->dtype != HL_BF16 && n->dtype != HL_F16)
        return cg__fail(b->err, LM_EUNSUPPORTED, cg__at(id),
                        "attention: the fused kernel takes bf16 or f16, not %s (the unfused "
                        "program computes it)",
                        hl_dtype_name(n->dtype));
    s.head_dim = (uint32_t)hd;
    s.causal = at->causal;
    s.has_mask = has_mask;
    s.mask_dtype = has_mask ? n->in_dtype[3] : HL_F32;
    s.scale = (float)at->scale;
    hl_expr lead[HL_MAX_DIMS];
    s.n_bh = hl_e_num(px, 1);
    for (uint32_t i = 0; i < at->nlead; i++) {
        lead[i] = hl_expr_copy(px, lp, at->q.dims[i], b->c.memo, 0);
        s.n_bh = hl_e_mul(px, s.n_bh, lead[i]);
    }
    s.sq = hl_expr_copy(px, lp, at->sq, b->c.memo, 0);
    s.skv = hl_expr_copy(px, lp, at->skv, b->c.memo, 0);
    if (s.n_bh == HL_NONE || s.sq == HL_NONE || s.skv == HL_NONE)
        return cg__fail(b->err, LM_EUNSUPPORTED, cg__at(id), "attention: a size overflows int64");
    hl_expr qc, kc, vc, one = hl_e_num(px, 1);
    int rc = attn_view(b, id, "q", &at->q, at->nlead, lead, s.n_bh, &s.q_base, &s.q_row, &qc);
    if (!rc) rc = attn_view(b, id, "k", &at->k, at->nlead, lead, s.n_bh, &s.k_base, &s.k_row, &kc);
    if (!rc) rc = attn_view(b, id, "v", &at->v, at->nlead, lead, s.n_bh, &s.v_base, &s.v_row, &vc);
    if (!rc && has_mask)
        rc = attn_view(b, id, "the mask", &at->mask, at->nlead, lead, s.n_bh, &s.m_base, &s.m_row,
                       &s.m_col);
    if (rc) return rc;
    if (qc != one || kc != one || vc != one)
        return cg__fail(b->err, LM_EUNSUPPORTED, cg__at(id),
                        "attention: the head dim of q, k and v must be contiguous (stride 1) "
                        "for the fused kernel");
    /* the output: contiguous [lead.., Sq, D] */
    s.o_row = d;
    s.o_base = hl_e_mul(px, hl_e_z(px), hl_e_mul(px, s.sq, d));
    if (s.o_base == HL_NONE) return cg__fail(b->err, LM_EUNSUPPORTED, cg__at(id), "attention: overflow");
    s.q_buf = s.k_buf = s.v_buf = s.o_buf = s.m_buf = s.ws_buf = LM_NONE;
    s.tile = (cg_attn_tile){at->block_q, at->block_k, at->warps, at->stages, at->kv_splits};
    *out = s;
    return 0;
}

int cg__attn_spec_of(const ll_graph *g, uint32_t node, hl_expr_pool **pool, cg_attn_spec *out,
                     lm_err *err)
{
    *pool = NULL;
    const ll_node *n = ll_graph_node(g, node);
    if (!n || n->kind != LL_KERNEL || !ll_op_is_attn(n->op))
        return cg__fail(err, LM_EARG, cg__at(node), "cg__attn_spec_of: not an attention node");
    build b;
    memset(&b, 0, sizeof b);
    cg_plan pl;
    memset(&pl, 0, sizeof pl);
    const hl_expr_pool *lp = ll_graph_exprs(g);
    pl.exprs = hl_expr_pool_new();
    b.c.memo = cg__alloc(hl_expr_count(lp) ? hl_expr_count(lp) : 1, sizeof *b.c.memo);
    if (!pl.exprs || !b.c.memo) {
        hl_expr_pool_free(pl.exprs);
        cg__free(b.c.memo);
        return cg__fail(err, LM_ENOMEM, cg__at(node), "out of memory");
    }
    for (uint32_t i = 0; i < hl_expr_count(lp); i++)
        b.c.memo[i] = HL_NONE;
    b.p = &pl;
    b.err = err;
    b.c.plan = &pl;
    b.c.g = g;
    b.c.err = err;
    int rc = attn_fill(&b, node, out);
    cg__free(b.c.memo);
    if (rc) {
        hl_expr_pool_free(pl.exprs);
        return rc;
    }
    *pool = pl.exprs;
    return 0;
}

static int plan_attn(build *b, uint32_t id)
{
    cg_plan *p = b->p;
    const ll_node *n = ll_graph_node(b->c.g, id);
    const ll_attn *at = &n->at;
    bool has_mask = n->n_in == 4;
    cg_attn_spec s;
    int rc = attn_fill(b, id, &s);
    if (rc) return rc;
    const uint32_t *buf_of = p->node_buf;
    s.q_buf = buf_of[n->in[0]];
    s.k_buf = buf_of[n->in[1]];
    s.v_buf = buf_of[n->in[2]];
    s.m_buf = has_mask ? buf_of[n->in[3]] : LM_NONE;
    s.o_buf = buf_of[id];
    s.ws_buf = LM_NONE;
    if (at->kv_splits > 1) {
        hl_expr ws = cg__attn_workspace(&b->c, &s);
        if (ws == HL_NONE)
            return cg__fail(b->err, LM_EUNSUPPORTED, cg__at(id), "attention: the workspace overflows");
        s.ws_buf = add_buffer(b, CG_BUF_WORKSPACE, LM_NONE, HL_F32, ws, id);
        if (s.ws_buf == LM_NONE) return b->err->code;
    }
    cg_kernel ks[2];
    memset(ks, 0, sizeof ks);
    uint32_t nk = 0;
    if ((rc = cg__attn_kernels(&b->c, &s, ks, &nk))) {
        for (uint32_t i = 0; i < 2; i++)
            cg__free(ks[i].source);
        return rc;
    }
    for (uint32_t i = 0; i < nk; i++) {
        cg_kernel *k = new_kernel(b, id);
        if (!k) {
            for (uint32_t j = i; j < nk; j++)
                cg__free(ks[j].source);
            return b->err->code;
        }
        *k = ks[i];
        if ((rc = kernel_step(b, id))) {
            for (uint32_t j = i + 1; j < nk; j++)
                cg__free(ks[j].source);
            return rc;
        }
    }
    return 0;
}

static int plan_node(build *b, uint32_t id, const uint32_t *alias_out)
{
    cg_plan *p = b->p;
    const ll_graph *g = b->c.g;
    const ll_node *n = ll_graph_node(g, id);
    int rc = 0;
    uint32_t *buf_of = p->node_buf;
    switch (n->kind) {
    case LL_INPUT:
    case LL_FUSED:
    case LL_LOAD:
        return 0;
    case LL_OUTPUT: {
        if (alias_out[id] != LM_NONE) return 0; /* the producer stored into it */
        uint32_t ob = p->output_buf[n->prim.index];
        if (n->n_in < 1 || buf_of[n->in[0]] == LM_NONE)
            return cg__fail(b->err, LM_EVERIFY, cg__at(id), "an Output without a stored producer");
        cg_kernel *k = new_kernel(b, id);
        if (!k) return b->err->code;
        if ((rc = cg__copy_kernel(&b->c, id, ob, k))) return rc;
        return kernel_step(b, id);
    }
    case LL_KERNEL:
    case LL_REGION:
    case LL_LIBRARY:
        break;
    }
    uint32_t ob = buf_of[id];
    if (n->kind == LL_LIBRARY) {
        if (!cg__grow((void **)&p->blas, &b->blcap, p->n_blas + 1, sizeof *p->blas))
            return cg__fail(b->err, LM_ENOMEM, cg__at(id), "out of memory");
        cg_blas *bl = &p->blas[p->n_blas];
        memset(bl, 0, sizeof *bl);
        bl->llir_node = id;
        if (copy_matmul(b, &n->mm, &bl->mm))
            return cg__fail(b->err, LM_ENOMEM, cg__at(id), "out of memory or an overflowing expression");
        uint32_t nin = n->n_in;
        bool has_c = n->mm.beta != 0.0;
        bool has_bias = n->mm.epilogue == LL_EPI_BIAS || n->mm.epilogue == LL_EPI_BIAS_GELU;
        if (nin != 2u + has_c + has_bias)
            return cg__fail(b->err, LM_EVERIFY, cg__at(id), "a Blas node with %u inputs (beta %g, epilogue %d)",
                            nin, n->mm.beta, (int)n->mm.epilogue);
        bl->a = buf_of[n->in[0]];
        bl->b = buf_of[n->in[1]];
        bl->c = has_c ? buf_of[n->in[2]] : LM_NONE;
        bl->bias = has_bias ? buf_of[n->in[2 + has_c]] : LM_NONE;
        bl->d = ob;
        bl->workspace = add_buffer(b, CG_BUF_WORKSPACE, LM_NONE, HL_BOOL,
                                   hl_e_num(p->exprs, CG_BLAS_WORKSPACE_BYTES), id);
        if (bl->workspace == LM_NONE) return b->err->code;
        uint32_t bi = p->n_blas++;
        uint32_t step = p->n_steps;
        if ((rc = add_step(b, CG_STEP_BLAS, bi, id))) return rc;
        touch(p, bl->a, step, false);
        touch(p, bl->b, step, false);
        touch(p, bl->c, step, false);
        touch(p, bl->bias, step, false);
        touch(p, bl->d, step, true);
        touch(p, bl->workspace, step, true);
        return 0;
    }
    if (n->kind == LL_KERNEL && ll_op_is_attn(n->op)) return plan_attn(b, id);
    if (is_matmul_kernel(n)) {
        cg_kernel *k = new_kernel(b, id);
        if (!k) return b->err->code;
        if ((rc = cg__matmul_kernel(&b->c, id, ob, k))) return rc;
        return kernel_step(b, id);
    }
    if (n->kind == LL_KERNEL && n->prim.op == HL_OP_GATHER) {
        cg_kernel *k = new_kernel(b, id);
        if (!k) return b->err->code;
        if ((rc = cg__gather_kernel(&b->c, id, ob, k))) return rc;
        return kernel_step(b, id);
    }
    if (n->kind == LL_KERNEL && n->prim.op == HL_OP_SCATTER) {
        /* the winners: one per destination element, as wide as the source's count needs */
        hl_expr numel = shape_numel(b, n);
        cg_vg tmp = {0};
        tmp.p = p->exprs;
        tmp.g = g;
        tmp.memo = b->c.memo;
        hl_expr inum = hl_e_num(p->exprs, 1);
        for (uint32_t i = 0; i < n->prim.in[1].view.ndim; i++)
            inum = hl_e_mul(p->exprs, inum, cg__x(&tmp, n->prim.in[1].view.dims[i]));
        int64_t imax = cg__expr_max(p->exprs, &b->d, inum, 0);
        uint32_t ws = add_buffer(b, CG_BUF_WORKSPACE, LM_NONE, imax < INT32_MAX ? HL_INT : HL_I64,
                                 numel, id);
        if (ws == LM_NONE) return b->err->code;
        cg_kernel ks[3];
        memset(ks, 0, sizeof ks);
        for (int i = 0; i < 3; i++)
            ks[i].ops = ks[i].strided = ks[i].divs32 = ks[i].divs64 = HL_NONE;
        rc = cg__scatter_kernels(&b->c, id, ob, ws, ks);
        if (rc) {
            for (int i = 0; i < 3; i++)
                cg__free(ks[i].source);
            return rc;
        }
        for (int i = 0; i < 3; i++) {
            cg_kernel *k = new_kernel(b, id);
            if (!k) {
                for (int j = i; j < 3; j++)
                    cg__free(ks[j].source);
                return b->err->code;
            }
            *k = ks[i];
            if ((rc = kernel_step(b, id))) {
                for (int j = i + 1; j < 3; j++)
                    cg__free(ks[j].source);
                return rc;
            }
        }
        return 0;
    }
    cg_kernel *k = new_kernel(b, id);
    if (!k) return b->err->code;
    if ((rc = cg__region_kernel(&b->c, id, ob, k))) {
        cg__free(k->source);
        k->source = NULL;
        return rc;
    }
    return kernel_step(b, id);
}

cg_plan *cg_plan_new(const ll_graph *g, const cg_options *opt, lm_err *err)
{
    if (!g) {
        cg__fail(err, LM_EARG, NULL, "cg_plan_new: no graph");
        return NULL;
    }
    cg_options dflt = {0};
    if (!opt) opt = &dflt;
    build b;
    memset(&b, 0, sizeof b);
    b.err = err;
    cg_plan *p = cg__alloc(1, sizeof *p);
    if (!p) {
        cg__fail(err, LM_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    b.p = p;
    p->exprs = hl_expr_pool_new();
    const hl_expr_pool *lp = ll_graph_exprs(g);
    uint32_t nn = ll_graph_node_count(g);
    p->n_nodes = nn;
    p->n_dims = ll_graph_dim_count(g);
    p->n_inputs = ll_graph_input_count(g);
    p->n_outputs = ll_graph_output_count(g);
    p->dims = cg__alloc(p->n_dims, sizeof *p->dims);
    p->dim_names = cg__alloc(p->n_dims, sizeof *p->dim_names);
    p->input_buf = cg__alloc(p->n_inputs, sizeof *p->input_buf);
    p->output_buf = cg__alloc(p->n_outputs, sizeof *p->output_buf);
    p->node_buf = cg__alloc(nn, sizeof *p->node_buf);
    b.c.memo = cg__alloc(hl_expr_count(lp), sizeof *b.c.memo);
    uint32_t *alias_out = cg__alloc(nn, sizeof *alias_out);
    if (!p->exprs || !p->dims || !p->dim_names || !p->input_buf || !p->output_buf ||
        !p->node_buf || !b.c.memo || !alias_out) {
        cg__fail(err, LM_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < hl_expr_count(lp); i++)
        b.c.memo[i] = HL_NONE;
    for (uint32_t i = 0; i < nn; i++)
        p->node_buf[i] = alias_out[i] = LM_NONE;
    /* dims: their variables first, in order */
    for (uint32_t i = 0; i < p->n_dims; i++) {
        const hl_dim *ld = ll_graph_dim_at(g, i);
        const char *name = ll_graph_dim_name(g, i);
        p->dim_names[i] = cg__strdup(name ? name : "");
        hl_expr v = name ? hl_e_var(p->exprs, name) : HL_NONE;
        if (!p->dim_names[i] || v == HL_NONE) {
            cg__fail(err, LM_ENOMEM, NULL, "out of memory copying dim %u", i);
            goto fail;
        }
        p->dims[i] = *ld;
        p->dims[i].expr = v;
        p->dims[i].var = hl_e_get(p->exprs, v).var;
    }
    b.d.n = p->n_dims;
    b.d.dims = p->dims;
    b.d.nvars = hl_var_count(p->exprs);
    b.d.var_dim = cg__alloc(b.d.nvars, sizeof *b.d.var_dim);
    if (!b.d.var_dim) {
        cg__fail(err, LM_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    for (uint32_t v = 0; v < b.d.nvars; v++)
        b.d.var_dim[v] = LM_NONE;
    for (uint32_t i = 0; i < p->n_dims; i++)
        b.d.var_dim[p->dims[i].var] = i;
    b.c.plan = p;
    b.c.g = g;
    b.c.d = &b.d;
    b.c.buf_of = p->node_buf;
    b.c.opt = opt;
    b.c.err = err;
    /* which outputs alias their producer */
    for (uint32_t i = 0; i < p->n_outputs; i++) {
        uint32_t oid = ll_graph_output(g, i);
        const ll_node *o = ll_graph_node(g, oid);
        if (o->n_in < 1) {
            cg__fail(err, LM_EVERIFY, cg__at(oid), "an Output without an input");
            goto fail;
        }
        uint32_t pid = o->in[0];
        const ll_node *pr = ll_graph_node(g, pid);
        bool computed = pr->kind == LL_KERNEL || pr->kind == LL_REGION || pr->kind == LL_LIBRARY;
        if (computed && alias_out[pid] == LM_NONE && identity_view(&b, pr, &o->prim.in[0].view)) {
            alias_out[pid] = i;
            alias_out[oid] = i;
        }
    }
    /* buffers: inputs, outputs, then every computed node in order */
    for (uint32_t i = 0; i < p->n_inputs; i++) {
        uint32_t id = ll_graph_input(g, i);
        const ll_node *n = ll_graph_node(g, id);
        uint32_t bi = add_buffer(&b, CG_BUF_INPUT, i, n->dtype, shape_numel(&b, n), id);
        if (bi == LM_NONE) goto fail;
        p->input_buf[i] = bi;
        p->node_buf[id] = bi;
    }
    for (uint32_t i = 0; i < p->n_outputs; i++) {
        uint32_t id = ll_graph_output(g, i);
        const ll_node *n = ll_graph_node(g, id);
        uint32_t pid = n->in[0];
        uint32_t store = alias_out[id] != LM_NONE ? pid : id;
        uint32_t bi = add_buffer(&b, CG_BUF_OUTPUT, i, n->dtype, shape_numel(&b, n), store);
        if (bi == LM_NONE) goto fail;
        p->output_buf[i] = bi;
        if (alias_out[id] != LM_NONE) p->node_buf[pid] = bi;
    }
    for (uint32_t id = 0; id < nn; id++) {
        const ll_node *n = ll_graph_node(g, id);
        if (n->region != LM_NONE || p->node_buf[id] != LM_NONE) continue;
        if (n->kind != LL_KERNEL && n->kind != LL_REGION && n->kind != LL_LIBRARY) continue;
        uint32_t bi = add_buffer(&b, CG_BUF_TEMP, LM_NONE, n->dtype, shape_numel(&b, n), id);
        if (bi == LM_NONE) goto fail;
        p->node_buf[id] = bi;
    }
    /* steps */
    for (uint32_t id = 0; id < nn; id++) {
        const ll_node *n = ll_graph_node(g, id);
        if (n->region != LM_NONE) continue;
        if (plan_node(&b, id, alias_out)) goto fail;
    }
    uint32_t last = p->n_steps ? p->n_steps - 1 : 0;
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        cg_buffer *x = &p->buffers[i];
        if (x->first_step == UINT32_MAX) x->first_step = 0; /* never written: an input */
        if (x->kind == CG_BUF_OUTPUT) x->last_step = last;
        if (x->last_step < x->first_step) x->last_step = x->first_step;
    }
    if (hl_expr_pool_failed(p->exprs)) {
        cg__fail(err, LM_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    cg__free(alias_out);
    cg__free(b.c.memo);
    cg__free(b.d.var_dim);
    return p;
fail:
    cg__free(alias_out);
    cg__free(b.c.memo);
    cg__free(b.d.var_dim);
    cg_plan_free(p);
    return NULL;
}

/* ---- the listing ------------------------------------------------------------------------ */

static const char *kind_name(cg_buf_kind k)
{
    static const char *n[] = {"input", "output", "temp", "workspace"};
    return (unsigned)k < 4 ? n[k] : "?";
}

void cg_plan_fprint(const cg_plan *p, bool sources, FILE *f)
{
    fprintf(f, "plan: %u dims, %u buffers, %u kernels, %u blas, %u steps\n", p->n_dims,
            p->n_buffers, p->n_kernels, p->n_blas, p->n_steps);
    for (uint32_t i = 0; i < p->n_dims; i++)
        fprintf(f, "dim %u %s in [%" PRId64 ", %" PRId64 "] profile %" PRId64 "\n", i,
                p->dim_names[i], p->dims[i].lo, p->dims[i].hi, p->dims[i].profile);
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const cg_buffer *x = &p->buffers[i];
        fprintf(f, "buffer %u %s", i, kind_name(x->kind));
        if (x->index != LM_NONE) fprintf(f, " %u", x->index);
        fprintf(f, " %s numel ", hl_dtype_name(x->dtype));
        hl_e_fprint(p->exprs, x->numel, f);
        fprintf(f, " steps [%u, %u] node %%%u\n", x->first_step, x->last_step, x->llir_node);
    }
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const cg_step *st = &p->steps[s];
        if (st->kind == CG_STEP_BLAS) {
            const cg_blas *bl = &p->blas[st->index];
            fprintf(f, "step %u blas %u node %%%u a %u b %u c %d d %u bias %d ws %u m ", s,
                    st->index, bl->llir_node, bl->a, bl->b, bl->c == LM_NONE ? -1 : (int)bl->c,
                    bl->d, bl->bias == LM_NONE ? -1 : (int)bl->bias, bl->workspace);
            hl_e_fprint(p->exprs, bl->mm.m, f);
            fprintf(f, " n ");
            hl_e_fprint(p->exprs, bl->mm.n, f);
            fprintf(f, " k ");
            hl_e_fprint(p->exprs, bl->mm.k, f);
            fprintf(f, "\n");
            continue;
        }
        const cg_kernel *k = &p->kernels[st->index];
        fprintf(f, "step %u kernel %u node %%%u %s grid (", s, st->index, k->llir_node,
                k->template_name ? k->template_name : "?");
        for (int i = 0; i < 3; i++) {
            if (i) fprintf(f, ", ");
            hl_e_fprint(p->exprs, k->grid[i], f);
        }
        fprintf(f, ") block (%u, %u, %u) params", k->block[0], k->block[1], k->block[2]);
        for (uint32_t i = 0; i < k->n_params; i++) {
            if (k->params[i].kind == CG_P_BUFFER)
                fprintf(f, " buf%u", k->params[i].buf);
            else
                fprintf(f, " dim%u", k->params[i].dim);
        }
        fprintf(f, "\n");
        if (sources) fprintf(f, "%s", k->source);
    }
}
