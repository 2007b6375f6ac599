/* ll_build.c - the internal builder of ll_graph values (ll_build.h): how the HLIR
 * lowering, the tests and the program loader create graphs. ll_graph_from_genome
 * (ll_from_genome.c) fills the same struct directly. */
#include "ll_build.h"
#include "ll_int.h"

ll_graph *ll__graph_alloc(lm_err *err)
{
    ll_graph *g = ll__zalloc(1, sizeof *g);
    if (g) g->pool = hl_expr_pool_new();
    if (!g || !g->pool) {
        ll__free(g);
        ll__fail(err, LM_ENOMEM, NULL, "llir graph: out of memory");
        return NULL;
    }
    return g;
}

hl_expr_pool *ll__graph_pool(ll_graph *g)
{
    return g->pool;
}

void ll__node_empty(ll_node *n)
{
    memset(n, 0, sizeof *n);
    n->region = LM_NONE;
    for (uint32_t i = 0; i < LL_MAX_IN; i++)
        n->in[i] = LM_NONE;
    n->prim.op = HL_OP_COUNT;
    n->prim.iota_expr = n->prim.iota_len = HL_NONE;
    ll_matmul *m = &n->mm;
    m->m = m->n = m->k = m->batch = HL_NONE;
    m->lda = m->ldb = m->stride_a = m->stride_b = HL_NONE;
    m->alpha = 1.0;
    n->eclass = n->enode = n->origin = LM_NONE;
}

/* Grows *arr (of *cap elements of size bytes) to hold need; 0, or -1 leaving it as is. */
static int grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return 0;
    uint64_t c = *cap ? (uint64_t)*cap * 2 : 16;
    if (c < need) c = need;
    if (c > UINT32_MAX - 1) c = UINT32_MAX - 1;
    if (c < need) return -1;
    void *p = ll__alloc((size_t)c, size);
    if (!p) return -1;
    if (*arr) memcpy(p, *arr, (size_t)*cap * size);
    ll__free(*arr);
    *arr = p;
    *cap = (uint32_t)c;
    return 0;
}

uint32_t ll__graph_add_dim(ll_graph *g, const char *name, int64_t lo, int64_t hi, int64_t profile,
                           lm_err *err)
{
    if (g->finished || g->n_nodes) {
        ll__fail(err, LM_EARG, NULL, "llir graph: dim '%s' declared after the first node",
                 name ? name : "");
        return LM_NONE;
    }
    if (!name || !hl_var_name_valid(name)) {
        ll__fail(err, LM_EARG, NULL, "llir graph: '%s' is not a valid dim name",
                 name ? name : "(null)");
        return LM_NONE;
    }
    for (uint32_t i = 0; i < g->n_dims; i++)
        if (strcmp(hl_var_name(g->pool, g->dims[i].var), name) == 0) {
            ll__fail(err, LM_EARG, NULL, "llir graph: dim '%s' declared twice", name);
            return LM_NONE;
        }
    if (lo < 1 || hi < lo || profile < lo || profile > hi) {
        ll__fail(err, LM_EARG, NULL,
                 "llir graph: dim '%s' needs 1 <= lo <= profile <= hi, given [%lld, %lld] "
                 "profile %lld",
                 name, (long long)lo, (long long)hi, (long long)profile);
        return LM_NONE;
    }
    void *arr = g->dims;
    if (grow(&arr, &g->cap_dims, g->n_dims + 1, sizeof(hl_dim))) goto oom;
    g->dims = arr;
    hl_expr e = hl_e_var(g->pool, name);
    if (e == HL_NONE) goto oom;
    hl_dim d = {hl_e_get(g->pool, e).var, e, lo, hi, profile};
    g->dims[g->n_dims] = d;
    return g->n_dims++;
oom:
    ll__fail(err, LM_ENOMEM, NULL, "llir graph: out of memory declaring dim '%s'", name);
    return LM_NONE;
}

uint32_t ll__graph_push(ll_graph *g, const ll_node *n, lm_err *err)
{
    uint32_t id = g->n_nodes;
    if (g->finished) {
        ll__fail(err, LM_EARG, NULL, "llir graph: node pushed after the graph was finished");
        return LM_NONE;
    }
    if (id >= UINT32_MAX - 2) {
        ll__fail(err, LM_ELIMIT, NULL, "llir graph: too many nodes");
        return LM_NONE;
    }
    if ((unsigned)n->kind > LL_LOAD || (unsigned)n->dtype >= HL_DTYPE_COUNT ||
        n->n_in > LL_MAX_IN || n->ndim > HL_MAX_DIMS) {
        ll__fail(err, LM_EARG, NULL,
                 "llir graph: node %u: kind %d, dtype %d, %u inputs or %u dims out of range", id,
                 (int)n->kind, (int)n->dtype, n->n_in, n->ndim);
        return LM_NONE;
    }
    for (uint32_t i = 0; i < n->n_in; i++)
        if ((unsigned)n->in_dtype[i] >= HL_DTYPE_COUNT) {
            ll__fail(err, LM_EARG, NULL, "llir graph: node %u: input %u's dtype is out of range",
                     id, i);
            return LM_NONE;
        }
    void *arr = g->nodes;
    if (grow(&arr, &g->cap, id + 1, sizeof(ll_node))) goto oom;
    g->nodes = arr;
    ll_node c = *n;
    c.prim.name = NULL;
    if ((n->kind == LL_INPUT || n->kind == LL_OUTPUT) && n->prim.name) {
        size_t len = strlen(n->prim.name) + 1;
        c.prim.name = ll__alloc(len, 1);
        if (!c.prim.name) goto oom;
        memcpy(c.prim.name, n->prim.name, len);
    }
    g->nodes[id] = c;
    g->n_nodes++;
    return id;
oom:
    ll__fail(err, LM_ENOMEM, NULL, "llir graph: out of memory pushing node %u", id);
    return LM_NONE;
}

/* Fills ids[0..count) with the nodes of `kind` ordered by prim.index, which must be
 * 0..count-1 once each. */
static int order_io(ll_graph *g, ll_kind kind, uint32_t count, uint32_t *ids, lm_err *err)
{
    for (uint32_t i = 0; i < count; i++)
        ids[i] = LM_NONE;
    for (uint32_t id = 0; id < g->n_nodes; id++) {
        const ll_node *n = &g->nodes[id];
        if (n->kind != kind) continue;
        uint32_t k = n->prim.index;
        if (k >= count || ids[k] != LM_NONE)
            return ll__fail(err, LM_EARG, NULL,
                            "llir graph: node %u (%s): index %u is out of range or repeated "
                            "(%u such nodes)",
                            id, ll__kind_name(kind), k, count);
        ids[k] = id;
    }
    return 0;
}

int ll__graph_finish(ll_graph *g, lm_err *err)
{
    if (g->finished) return ll__fail(err, LM_EARG, NULL, "llir graph: finished twice");
    uint32_t ni = 0, no = 0;
    for (uint32_t id = 0; id < g->n_nodes; id++) {
        const ll_node *n = &g->nodes[id];
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->in[i] >= g->n_nodes)
                return ll__fail(err, LM_EARG, NULL,
                                "llir graph: node %u: input %u refers to node %u of %u", id, i,
                                n->in[i], g->n_nodes);
        if (n->region != LM_NONE && n->region >= g->n_nodes)
            return ll__fail(err, LM_EARG, NULL, "llir graph: node %u: region %u of %u", id,
                            n->region, g->n_nodes);
        ni += n->kind == LL_INPUT;
        no += n->kind == LL_OUTPUT;
    }
    uint32_t *in = ll__alloc(ni ? ni : 1, sizeof(uint32_t));
    uint32_t *out = ll__alloc(no ? no : 1, sizeof(uint32_t));
    if (!in || !out) {
        ll__free(in);
        ll__free(out);
        return ll__fail(err, LM_ENOMEM, NULL, "llir graph: out of memory");
    }
    int rc = order_io(g, LL_INPUT, ni, in, err);
    if (!rc) rc = order_io(g, LL_OUTPUT, no, out, err);
    if (rc) {
        ll__free(in);
        ll__free(out);
        return rc;
    }
    g->inputs = in;
    g->n_inputs = ni;
    g->outputs = out;
    g->n_outputs = no;
    g->finished = true;
    return 0;
}


uint32_t ll__graph_add_origin(ll_graph *g, const char *name, lm_err *err)
{
    uint32_t o = ll__graph_intern_origin(g, name ? name : "");
    if (o == LM_NONE) ll__fail(err, LM_ENOMEM, NULL, "llir graph: out of memory for an origin");
    return o;
}
