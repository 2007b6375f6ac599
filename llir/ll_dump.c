/* ll_dump.c - a readable listing of an LLIR graph, one line per node, deterministic. */
#include "ll_int.h"

#include <inttypes.h>
#include <stdio.h>

static void dims(const ll_graph *g, uint32_t n, const hl_expr *d, FILE *f)
{
    fputc('[', f);
    for (uint32_t i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        hl_e_fprint(g->pool, d[i], f);
    }
    fputc(']', f);
}

static void matmul(const ll_graph *g, const ll_matmul *m, FILE *f)
{
    static const char *name[] = {"m", "n", "k", "batch", "lda", "ldb", "stride_a", "stride_b"};
    hl_expr ex[8] = {m->m, m->n, m->k, m->batch, m->lda, m->ldb, m->stride_a, m->stride_b};
    for (int i = 0; i < 8; i++) {
        fprintf(f, " %s=", name[i]);
        hl_e_fprint(g->pool, ex[i], f);
    }
    fprintf(f, " a:%s%s b:%s%s alpha=%.9g beta=%g epi=%d", hl_dtype_name(m->type_a),
            m->order_a == LL_COL_MAJOR ? "/col" : "", hl_dtype_name(m->type_b),
            m->order_b == LL_COL_MAJOR ? "/col" : "", m->alpha, m->beta, (int)m->epilogue);
}

static void attn(const ll_graph *g, const ll_node *nd, FILE *f)
{
    static const char *name[] = {"q", "k", "v", "mask"};
    const ll_attn *a = &nd->at;
    const hl_view *vw[4] = {&a->q, &a->k, &a->v, &a->mask};
    for (uint32_t k = 0; k < nd->n_in && k < 4; k++) {
        fprintf(f, " (%s %%%u ", name[k], nd->in[k]);
        dims(g, vw[k]->ndim, vw[k]->dims, f);
        fputc(':', f);
        dims(g, vw[k]->ndim, vw[k]->strides, f);
        fputc(')', f);
    }
    fprintf(f, " causal=%d scale=%.9g tile=%ux%u/%uw/%us split=%u", (int)a->causal, a->scale,
            a->block_q, a->block_k, a->warps, a->stages, a->kv_splits);
}

void ll_graph_dump(const ll_graph *g, FILE *f)
{
    for (uint32_t i = 0; i < g->n_dims; i++)
        fprintf(f, "dim %s in [%" PRId64 ", %" PRId64 "] at %" PRId64 "\n",
                hl_var_name(g->pool, g->dims[i].var), g->dims[i].lo, g->dims[i].hi,
                g->dims[i].profile);
    for (uint32_t id = 0; id < g->n_nodes; id++) {
        const ll_node *nd = &g->nodes[id];
        const hl_node *p = &nd->prim;
        fprintf(f, "%s%%%u = %s %s ", nd->region == LM_NONE ? "" : "    ", id,
                ll__op_name(nd->op), hl_dtype_name(nd->dtype));
        dims(g, nd->ndim, nd->shape, f);
        switch (nd->kind) {
        case LL_INPUT:
            fprintf(f, " \"%s\" #%u", p->name ? p->name : "", p->index);
            break;
        case LL_OUTPUT:
            fprintf(f, " \"%s\" #%u (%%%u ", p->name ? p->name : "", p->index, nd->in[0]);
            hl_view_fprint(g->pool, &p->in[0].view, f);
            fputc(')', f);
            break;
        case LL_REGION:
            fprintf(f, " <- %%%u", nd->in[0]);
            break;
        case LL_LOAD:
            fprintf(f, " <- %%%u", nd->in[0]);
            break;
        case LL_LIBRARY:
            for (uint32_t k = 0; k < nd->n_in; k++)
                fprintf(f, " %%%u", nd->in[k]);
            matmul(g, &nd->mm, f);
            break;
        case LL_KERNEL:
        case LL_FUSED:
            if (ll_op_is_attn(nd->op)) {
                attn(g, nd, f);
                break;
            }
            if (p->op == HL_OP_COUNT) {
                fprintf(f, " %%%u %%%u", nd->in[0], nd->in[1]);
                matmul(g, &nd->mm, f);
                break;
            }
            if (p->op == HL_OP_CONSTANT) fprintf(f, " %.9g", (double)p->constant);
            if (p->op == HL_OP_IOTA) {
                fputs(" z:=", f);
                hl_e_fprint(g->pool, p->iota_expr, f);
            }
            for (uint32_t k = 0; k < nd->n_in; k++) {
                fprintf(f, " (%%%u %s ", nd->in[k], hl_dtype_name(nd->in_dtype[k]));
                hl_view_fprint(g->pool, &p->in[k].view, f);
                fputc(')', f);
            }
            if (p->op == HL_OP_SUM_REDUCE || p->op == HL_OP_MAX_REDUCE)
                fprintf(f, " axis %u", p->axis);
            break;
        }
        fputc('\n', f);
    }
}
