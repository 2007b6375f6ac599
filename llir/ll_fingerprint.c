/* ll_fingerprint.c - 128 bits of XXH3 over a graph's canonical form.
 *
 * Expressions enter as structure: every id of the graph's pool gets a 64-bit hash of its
 * kind, its literal or variable name and its operands' hashes, computed once in id order
 * (operands precede their users), so equal expressions hash equal in any pool. Nodes
 * enter in id order with the fields their kind and op give meaning to; the e-class,
 * e-node and origin are left out, so two genomes that pick one program give one
 * fingerprint.
 */
#include "ll_int.h"

#include <xxhash.h>

typedef struct fp {
    XXH3_state_t *st;
    uint64_t *eh; /* per pool id: its structural hash */
    uint32_t n;
} fp;

static void put(fp *f, uint64_t v)
{
    XXH3_128bits_update(f->st, &v, sizeof v);
}

static void put_str(fp *f, const char *s)
{
    put(f, s ? XXH3_64bits(s, strlen(s)) : 0);
}

static void put_expr(fp *f, hl_expr e)
{
    put(f, e < f->n ? f->eh[e] : 0x5eedull);
}

static void put_view(fp *f, const hl_view *v)
{
    put(f, v->ndim);
    for (uint32_t i = 0; i < v->ndim && i < HL_MAX_DIMS; i++) {
        put_expr(f, v->dims[i]);
        put_expr(f, v->strides[i]);
    }
}

static uint64_t bits_f64(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static void put_node(fp *f, const ll_node *nd)
{
    const ll_op_info *o = ll_op_get(nd->op);
    put(f, nd->kind);
    put_str(f, o ? o->name : "?");
    put(f, nd->region);
    put(f, nd->dtype);
    put(f, nd->ndim);
    for (uint32_t i = 0; i < nd->ndim && i < HL_MAX_DIMS; i++)
        put_expr(f, nd->shape[i]);
    put(f, nd->n_in);
    for (uint32_t k = 0; k < nd->n_in && k < LL_MAX_IN; k++) {
        put(f, nd->in[k]);
        put(f, nd->in_dtype[k]);
    }
    const hl_node *p = &nd->prim;
    put(f, p->op);
    switch (p->op) {
    case HL_OP_INPUT:
    case HL_OP_OUTPUT:
        put_str(f, p->name);
        put(f, p->index);
        if (p->op == HL_OP_OUTPUT) put_view(f, &p->in[0].view);
        break;
    case HL_OP_CONSTANT:
        put(f, bits_f64(p->constant));
        break;
    case HL_OP_IOTA:
        put_expr(f, p->iota_expr);
        put_expr(f, p->iota_len);
        break;
    case HL_OP_COUNT:
        break;
    default:
        for (uint32_t k = 0; k < p->n_in && k < HL_MAX_INPUTS; k++)
            put_view(f, &p->in[k].view);
        put(f, p->cast_to);
        put(f, p->axis);
    }
    if (nd->kind == LL_KERNEL && ll_op_is_attn(nd->op)) {
        const ll_attn *a = &nd->at;
        put(f, a->nlead);
        put_expr(f, a->sq);
        put_expr(f, a->skv);
        put_expr(f, a->d);
        put_view(f, &a->q);
        put_view(f, &a->k);
        put_view(f, &a->v);
        put_view(f, &a->mask);
        put(f, a->causal);
        put(f, bits_f64(a->scale));
        put(f, (uint64_t)a->block_q << 32 | a->block_k);
        put(f, (uint64_t)a->warps << 32 | a->stages);
        put(f, a->kv_splits);
    } else if (nd->kind == LL_LIBRARY || (nd->kind == LL_KERNEL && p->op == HL_OP_COUNT)) {
        const ll_matmul *m = &nd->mm;
        hl_expr ex[8] = {m->m, m->n, m->k, m->batch, m->lda, m->ldb, m->stride_a, m->stride_b};
        for (int i = 0; i < 8; i++)
            put_expr(f, ex[i]);
        put(f, m->order_a);
        put(f, m->order_b);
        put(f, bits_f64(m->alpha));
        put(f, bits_f64(m->beta));
        put(f, m->epilogue);
        put(f, (uint64_t)m->type_a << 32 | m->type_b);
        put(f, (uint64_t)m->type_c << 32 | m->type_d);
        put(f, m->type_bias);
    }
}

ll_fingerprint ll_graph_fingerprint(const ll_graph *g)
{
    ll_fingerprint out = {0, 0};
    fp f = {0};
    f.n = hl_expr_count(g->pool);
    f.eh = ll__alloc(f.n, sizeof(uint64_t));
    f.st = XXH3_createState();
    if (!f.eh || !f.st) { /* no memory: a fingerprint nothing else can have */
        ll__free(f.eh);
        XXH3_freeState(f.st);
        out.lo = out.hi = UINT64_MAX;
        return out;
    }
    for (uint32_t id = 0; id < f.n; id++) {
        hl_expr_node e = hl_e_get(g->pool, id);
        uint64_t w[4] = {(uint64_t)e.kind, 0, 0, 0};
        if (e.kind == HL_E_NUM)
            w[1] = (uint64_t)e.value;
        else if (e.kind == HL_E_VAR) {
            const char *nm = hl_var_name(g->pool, e.var);
            w[1] = XXH3_64bits(nm, strlen(nm));
        } else if (e.kind != HL_E_Z) {
            w[2] = f.eh[e.a];
            w[3] = f.eh[e.b];
        }
        f.eh[id] = XXH3_64bits(w, sizeof w);
    }
    XXH3_128bits_reset(f.st);
    put(&f, g->n_dims);
    for (uint32_t i = 0; i < g->n_dims; i++) {
        put_str(&f, hl_var_name(g->pool, g->dims[i].var));
        put(&f, (uint64_t)g->dims[i].lo);
        put(&f, (uint64_t)g->dims[i].hi);
        put(&f, (uint64_t)g->dims[i].profile);
    }
    put(&f, g->n_nodes);
    for (uint32_t i = 0; i < g->n_nodes; i++)
        put_node(&f, &g->nodes[i]);
    put(&f, g->n_inputs);
    for (uint32_t i = 0; i < g->n_inputs; i++)
        put(&f, g->inputs[i]);
    put(&f, g->n_outputs);
    for (uint32_t i = 0; i < g->n_outputs; i++)
        put(&f, g->outputs[i]);
    XXH128_hash_t h = XXH3_128bits_digest(f.st);
    out.lo = h.low64;
    out.hi = h.high64;
    ll__free(f.eh);
    XXH3_freeState(f.st);
    return out;
}
