/* ll_copy.c - the expressions a node holds (ll__node_exprs, one list for the copy and the
 * binary form) and ll_graph_copy, a deep copy of a graph with no text round trip.
 *
 * The copy has its own expression pool: every expression a node refers to is rebuilt in
 * it once (a memo per id of the source pool), variables by name, so ids may differ from
 * the source's but every expression is structurally the same and the copy writes the
 * same LLIR file and has the same fingerprint. Names, the origin table, the dims and the
 * interface lists are copied; nothing is shared with the source.
 */
#include "ll_build.h"
#include "ll_int.h"

#include <assert.h>
#include <string.h>

bool ll__node_has_mm(const ll_node *n)
{
    if (n->kind == LL_LIBRARY) return true;
    static _Thread_local ll_op kmatmul = LL_OP_NONE;
    if (kmatmul == LL_OP_NONE) kmatmul = ll_op_find("KMatmul");
    return n->op == kmatmul;
}

static void add_view(hl_view *v, bool all, hl_expr **out, uint32_t *k)
{
    uint32_t nd = all ? HL_MAX_DIMS : (v->ndim <= HL_MAX_DIMS ? v->ndim : 0);
    for (uint32_t i = 0; i < nd; i++)
        out[(*k)++] = &v->dims[i];
    for (uint32_t i = 0; i < nd; i++)
        out[(*k)++] = &v->strides[i];
}

uint32_t ll__node_exprs(ll_node *n, bool all, hl_expr **out)
{
    uint32_t k = 0;
    uint32_t nd = all ? HL_MAX_DIMS : (n->ndim <= HL_MAX_DIMS ? n->ndim : 0);
    for (uint32_t i = 0; i < nd; i++)
        out[k++] = &n->shape[i];
    hl_node *p = &n->prim;
    if (all || p->op < HL_OP_COUNT) {
        nd = all ? HL_MAX_DIMS : (p->ndim <= HL_MAX_DIMS ? p->ndim : 0);
        for (uint32_t i = 0; i < nd; i++)
            out[k++] = &p->shape[i];
        uint32_t ni = all ? HL_MAX_INPUTS : (p->n_in <= HL_MAX_INPUTS ? p->n_in : 0);
        for (uint32_t i = 0; i < ni; i++)
            add_view(&p->in[i].view, all, out, &k);
        if (all || p->op == HL_OP_IOTA) {
            out[k++] = &p->iota_expr;
            out[k++] = &p->iota_len;
        }
    }
    if (all || ll__node_has_mm(n)) {
        ll_matmul *m = &n->mm;
        hl_expr *mm[] = {&m->m,   &m->n,   &m->k,        &m->batch,
                         &m->lda, &m->ldb, &m->stride_a, &m->stride_b};
        for (uint32_t i = 0; i < 8; i++)
            out[k++] = mm[i];
    }
    if (all || ll_op_is_attn(n->op)) {
        ll_attn *a = &n->at;
        out[k++] = &a->sq;
        out[k++] = &a->skv;
        out[k++] = &a->d;
        add_view(&a->q, all, out, &k);
        add_view(&a->k, all, out, &k);
        add_view(&a->v, all, out, &k);
        add_view(&a->mask, all, out, &k);
    }
    assert(k <= LL__NODE_EXPRS);
    return k;
}

static int copy_fail(lm_err *err, const hl_expr_pool *p, uint32_t id)
{
    if (hl_expr_pool_failed(p)) return ll__oom(err, "ll_graph_copy");
    return ll__fail(err, LM_EVERIFY, NULL,
                    "ll_graph_copy: an expression of node %u cannot be rebuilt in the copy's "
                    "pool (its value overflows int64)",
                    id);
}

ll_graph *ll_graph_copy(const ll_graph *src, lm_err *err)
{
    if (lm_err_is_set(err)) return NULL;
    if (!src) {
        ll__fail(err, LM_EARG, NULL, "ll_graph_copy: no graph given");
        return NULL;
    }
    ll_graph *g = ll__graph_alloc(err);
    if (!g) return NULL;
    uint32_t ne = hl_expr_count(src->pool);
    hl_expr *memo = ll__alloc(ne ? ne : 1, sizeof(hl_expr));
    if (!memo) goto oom;
    for (uint32_t i = 0; i < ne; i++)
        memo[i] = HL_NONE;
    for (uint32_t i = 0; i < src->n_dims; i++) {
        const hl_dim *d = &src->dims[i];
        if (ll__graph_add_dim(g, hl_var_name(src->pool, d->var), d->lo, d->hi, d->profile, err) ==
            LM_NONE)
            goto fail;
        if (d->expr < ne) memo[d->expr] = g->dims[i].expr;
    }
    for (uint32_t i = 0; i < src->n_origins; i++) {
        uint32_t o = ll__graph_intern_origin(g, src->origins[i]);
        if (o == LM_NONE) goto oom;
        assert(o == i); /* the source's table holds each text once */
    }
    uint32_t nn = src->n_nodes;
    g->nodes = ll__alloc(nn ? nn : 1, sizeof(ll_node));
    g->inputs = ll__alloc(src->n_inputs ? src->n_inputs : 1, sizeof(uint32_t));
    g->outputs = ll__alloc(src->n_outputs ? src->n_outputs : 1, sizeof(uint32_t));
    if (!g->nodes || !g->inputs || !g->outputs) goto oom;
    g->cap = nn ? nn : 1;
    for (uint32_t id = 0; id < nn; id++) {
        ll_node *n = &g->nodes[id];
        *n = src->nodes[id];
        n->prim.name = NULL;
        g->n_nodes = id + 1; /* from here on ll_graph_free frees its name */
        if (src->nodes[id].prim.name && !(n->prim.name = ll__strdup(src->nodes[id].prim.name)))
            goto oom;
        hl_expr *slot[LL__NODE_EXPRS];
        uint32_t k = ll__node_exprs(n, true, slot);
        for (uint32_t j = 0; j < k; j++) {
            hl_expr e = *slot[j];
            if (e == HL_NONE || e >= ne) continue; /* "no expression" stays so */
            hl_expr c = ll__expr_copy(g->pool, src->pool, e, memo);
            if (c == HL_NONE) {
                copy_fail(err, g->pool, id);
                goto fail;
            }
            *slot[j] = c;
        }
    }
    memcpy(g->inputs, src->inputs, (size_t)src->n_inputs * sizeof(uint32_t));
    memcpy(g->outputs, src->outputs, (size_t)src->n_outputs * sizeof(uint32_t));
    g->n_inputs = src->n_inputs;
    g->n_outputs = src->n_outputs;
    g->finished = src->finished;
    ll__free(memo);
    return g;
oom:
    ll__oom(err, "ll_graph_copy");
fail:
    ll__free(memo);
    ll_graph_free(g);
    return NULL;
}
