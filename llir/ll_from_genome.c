/* ll_from_genome.c - the LLIR graph a genome picks (ll_graph_from_genome).
 *
 * Three phases over the chosen nodes (the genome's choice for every searchable class):
 *
 *   collect  from the root: the Outputs (through OutputJoins), then depth-first the
 *            top-level classes they need, each with the top-level classes it reads: a
 *            kernel or library call its IList's entries; a region (FStore) the classes
 *            its interior loads (FLoad), found by walking the interior once (through F*
 *            and FInl) without entering the loaded classes
 *   order    Kahn's algorithm over those classes, the ready class of lowest index first
 *   emit     every Input (the interface, in index order), then each top-level class in
 *            that order: a kernel or library call is one node; a region is its region
 *            node followed by its interior in post-order (inputs before users), one node
 *            per (region, class) - FInl makes none, it continues into the fused form it
 *            names, and FLoad is a leaf reading the top-level node of its class; then
 *            every Output in index order
 *
 * Every walk keeps its own explicit stack, so a deep graph cannot exhaust the C stack;
 * a class met again on the stack is a cycle (an invalid genome), reported. Fields are
 * decoded from the classes' canonical nodes into the graph's own expression pool, each
 * expression class once (ll__expr's memo), by ll_kind.c. The result goes through
 * ll_graph_verify.
 */
#include "ll_kind.h"

#include <math.h>

#include <stdio.h>

enum { NEW = 0, BUSY = 1, DONE = 2 };

typedef struct gb {
    ll__kd k; /* the space, the expression decoder (into g's pool), err, the messages' prefix */
    const ll_genome *gn;
    ll_graph *g;
    uint32_t *top;    /* per class: its top-level node, or LM_NONE */
    uint8_t *tstate;  /* per class: the collect walk's state */
    uint32_t *imemo;  /* per class: interior node of the region istamp names */
    uint32_t *istamp; /* per class: the region (top-level class) the interior marks are for */
    uint8_t *istate;  /* per class: interior walk state, valid when istamp matches */
    uint32_t *dep_off, *dep_n; /* per class: its top-level dependencies in deps[] */
    uint32_t *deps, ndeps, capdeps;
    uint32_t *order, norder;     /* the collected top-level classes */
    uint32_t *outs, nouts;       /* the Output nodes reached */
    uint32_t *stack, *stack_k;   /* the top-level walk's stack: class and next child */
    uint32_t *istack, *istack_k; /* the interior walks' stack */
} gb;

/* ==================================================================================
 * Errors, choices
 * ================================================================================== */

/* The chosen node of serialized class cls, or LM_NONE with the error set. */
static uint32_t chosen(gb *b, uint32_t cls)
{
    const ll_space *s = b->k.s;
    uint32_t si = cls < s->nc ? s->sidx[cls] : LM_NONE;
    if (si == LM_NONE) {
        ll__kd_fail(&b->k, cls, LM_NONE,
                    "the class has no choice (not searchable, or nothing left)");
        return LM_NONE;
    }
    uint32_t j = b->gn->choice[si];
    if (j >= s->cstart[si + 1] - s->cstart[si]) {
        ll__kd_fail(&b->k, cls, LM_NONE, "the genome's choice %u is out of range", j);
        return LM_NONE;
    }
    return s->cnode[s->cstart[si] + j];
}

/* The kind node of an Op node, and its registry entry. */
static uint32_t kind_of(gb *b, uint32_t opnode, const ll_op_info **o)
{
    uint32_t kn = chosen(b, ll__kid(b->k.s, opnode, 0));
    if (kn == LM_NONE) return LM_NONE;
    uint16_t c = b->k.s->code[kn];
    if (c >= ll_op_count()) {
        ll__kd_fail(&b->k, b->k.s->ser.nodes[opnode].eclass, opnode,
                    "its kind is not a registered op");
        return LM_NONE;
    }
    *o = ll_op_get(c);
    return kn;
}

/* The entry classes of an Op's chosen IList (at most LL_MAX_IN). */
static int entries(gb *b, uint32_t opnode, uint32_t *cls, uint32_t *n)
{
    const ll_space *s = b->k.s;
    uint32_t l = ll__kid(s, opnode, 1);
    *n = 0;
    for (;;) {
        uint32_t ln = chosen(b, l);
        if (ln == LM_NONE) return b->k.err->code;
        if (s->code[ln] == LL__C_INIL) return LM_OK;
        if (*n == LL_MAX_IN)
            return ll__kd_fail(&b->k, s->ser.nodes[opnode].eclass, opnode,
                               "the IList has more than %d "
                               "entries",
                               LL_MAX_IN);
        cls[(*n)++] = ll__kid(s, ln, 0);
        l = ll__kid(s, ln, 1);
    }
}

static int push_dep(gb *b, uint32_t c)
{
    if (b->ndeps == b->capdeps &&
        ll__grow((void **)&b->deps, &b->capdeps, b->ndeps + 1, sizeof(uint32_t)))
        return ll__oom(b->k.err, "graph");
    b->deps[b->ndeps++] = c;
    return LM_OK;
}

/* ==================================================================================
 * Collect
 * ================================================================================== */

/* The top-level classes region r's interior loads, appended to deps; the interior walk
 * from fx does not enter them. */
static int region_deps(gb *b, uint32_t r, uint32_t fx)
{
    const ll_space *s = b->k.s;
    uint32_t top = 0;
    b->istamp[fx] = r;
    b->istate[fx] = BUSY;
    b->istack[top] = fx;
    b->istack_k[top++] = 0;
    while (top) {
        uint32_t c = b->istack[top - 1], k = b->istack_k[top - 1];
        uint32_t n = chosen(b, c);
        if (n == LM_NONE) return b->k.err->code;
        const ll_op_info *o = NULL;
        if (s->code[n] != LL__C_OP || kind_of(b, n, &o) == LM_NONE || !ll__interior(o->dialect))
            return lm_err_is_set(b->k.err)
                       ? b->k.err->code
                       : ll__kd_fail(&b->k, c, n, "a region holds a top-level node");
        uint32_t in[LL_MAX_IN], nin;
        int rc = entries(b, n, in, &nin);
        if (rc) return rc;
        if (o->dialect == LL_D_LOAD) {
            if ((rc = push_dep(b, in[0]))) return rc;
            k = nin; /* a leaf */
        }
        if (k == nin) {
            b->istate[c] = DONE;
            top--;
            continue;
        }
        b->istack_k[top - 1] = k + 1;
        uint32_t d = in[k];
        if (b->istamp[d] == r && b->istate[d] == DONE) continue;
        if (b->istamp[d] == r && b->istate[d] == BUSY)
            return ll__kd_fail(&b->k, c, n,
                               "the chosen nodes of the region form a cycle through class c%u", d);
        b->istamp[d] = r;
        b->istate[d] = BUSY;
        b->istack[top] = d;
        b->istack_k[top++] = 0;
    }
    return LM_OK;
}

/* The top-level dependencies of class c (chosen node n), into deps[dep_off[c]..]. */
static int class_deps(gb *b, uint32_t c, uint32_t n)
{
    const ll_space *s = b->k.s;
    b->dep_off[c] = b->ndeps;
    if (s->code[n] != LL__C_OP) return LM_OK; /* an Input */
    const ll_op_info *o = NULL;
    if (kind_of(b, n, &o) == LM_NONE) return b->k.err->code;
    if (ll__interior(o->dialect) || o->dialect == LL_D_HLIR || o->dialect == LL_D_IO)
        return ll__kd_fail(&b->k, c, n, "%s is not a top-level op", o->name);
    uint32_t in[LL_MAX_IN], nin;
    int rc = entries(b, n, in, &nin);
    if (rc) return rc;
    if (o->dialect == LL_D_REGION) {
        if (nin != 1)
            return ll__kd_fail(&b->k, c, n, "FStore takes one input, its IList has %u", nin);
        rc = region_deps(b, c, in[0]);
    } else {
        for (uint32_t k = 0; k < nin && !rc; k++)
            rc = push_dep(b, in[k]);
    }
    b->dep_n[c] = b->ndeps - b->dep_off[c];
    return rc;
}

/* Depth-first from class c over top-level dependencies; every class reached is appended
 * to order[] once. */
static int collect_top(gb *b, uint32_t c0)
{
    const ll_space *s = b->k.s;
    if (b->tstate[c0] == DONE) return LM_OK;
    uint32_t top = 0;
    b->stack[top] = c0;
    b->stack_k[top++] = 0;
    b->tstate[c0] = BUSY;
    while (top) {
        uint32_t c = b->stack[top - 1], k = b->stack_k[top - 1];
        if (k == 0 && b->dep_off[c] == LM_NONE) {
            uint32_t n = chosen(b, c);
            if (n == LM_NONE) return b->k.err->code;
            uint16_t code = s->code[n];
            if (code != LL__C_OP && code != ll_op_find("Input"))
                return ll__kd_fail(&b->k, c, n,
                                   "an op reads class c%u, which is not a stored tensor", c);
            int rc = class_deps(b, c, n);
            if (rc) return rc;
        }
        if (k == b->dep_n[c]) {
            b->tstate[c] = DONE;
            b->order[b->norder++] = c;
            top--;
            continue;
        }
        b->stack_k[top - 1] = k + 1;
        uint32_t d = b->deps[b->dep_off[c] + k];
        if (b->tstate[d] == DONE) continue;
        if (b->tstate[d] == BUSY)
            return ll__kd_fail(&b->k, c, LM_NONE, "the chosen nodes form a cycle through class c%u",
                               d);
        b->tstate[d] = BUSY;
        b->stack[top] = d;
        b->stack_k[top++] = 0;
    }
    return LM_OK;
}

/* The Outputs under the root (OutputJoin trees), then everything they read. */
static int collect(gb *b)
{
    const ll_space *s = b->k.s;
    ll_op op_out = ll_op_find("Output"), op_join = ll_op_find("OutputJoin");
    uint32_t top = 0;
    b->stack[top++] = s->root_class;
    while (top) {
        uint32_t c = b->stack[--top];
        uint32_t n = chosen(b, c);
        if (n == LM_NONE) return b->k.err->code;
        if (s->code[n] == op_join) {
            if (top + 2 > s->nc) return ll__kd_fail(&b->k, c, n, "the OutputJoins form a cycle");
            b->stack[top++] = ll__kid(s, n, 1);
            b->stack[top++] = ll__kid(s, n, 0);
        } else if (s->code[n] == op_out) {
            if (b->nouts == s->nc) return ll__kd_fail(&b->k, c, n, "the OutputJoins form a cycle");
            b->outs[b->nouts++] = n;
        } else {
            return ll__kd_fail(&b->k, c, n, "the root holds %s, not an Output or OutputJoin",
                               s->ser.nodes[n].op);
        }
    }
    for (uint32_t i = 0; i < b->nouts; i++) {
        int rc = collect_top(b, ll__kid(s, b->outs[i], 0));
        if (rc) return rc;
    }
    return LM_OK;
}

/* ==================================================================================
 * Order: Kahn, lowest class first
 * ================================================================================== */

static int kahn(gb *b)
{
    const ll_space *s = b->k.s;
    uint32_t nc = s->nc, n = b->norder;
    uint32_t *indeg = ll__zalloc(nc, sizeof(uint32_t));
    uint32_t *ustart = ll__zalloc((size_t)nc + 1, sizeof(uint32_t));
    uint32_t *users = ll__alloc(b->ndeps, sizeof(uint32_t));
    uint32_t *pos = ll__alloc((size_t)nc + 1, sizeof(uint32_t));
    uint64_t *heap = ll__alloc(n, sizeof(uint64_t));
    uint32_t *out = ll__alloc(n, sizeof(uint32_t));
    int rc = LM_OK;
    if (!indeg || !ustart || !users || !pos || !heap || !out) {
        rc = ll__oom(b->k.err, "graph");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = b->order[i];
        for (uint32_t k = 0; k < b->dep_n[c]; k++) {
            uint32_t d = b->deps[b->dep_off[c] + k];
            indeg[c]++;
            ustart[d + 1]++;
        }
    }
    for (uint32_t c = 0; c < nc; c++)
        ustart[c + 1] += ustart[c];
    memcpy(pos, ustart, ((size_t)nc + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = b->order[i];
        for (uint32_t k = 0; k < b->dep_n[c]; k++)
            users[pos[b->deps[b->dep_off[c] + k]]++] = c;
    }
    uint32_t nh = 0, no = 0;
    for (uint32_t i = 0; i < n; i++)
        if (indeg[b->order[i]] == 0) ll__heap_push(heap, &nh, b->order[i]);
    while (nh) {
        uint32_t c = (uint32_t)ll__heap_pop(heap, &nh);
        out[no++] = c;
        for (uint32_t u = ustart[c]; u < ustart[c + 1]; u++)
            if (--indeg[users[u]] == 0) ll__heap_push(heap, &nh, users[u]);
    }
    memcpy(b->order, out, (size_t)no * sizeof(uint32_t));
    b->norder = no; /* collect_top refused cycles, so no == n */
done:
    ll__free(indeg);
    ll__free(ustart);
    ll__free(users);
    ll__free(pos);
    ll__free(heap);
    ll__free(out);
    return rc;
}

/* ==================================================================================
 * Emit: nodes and their fields
 * ================================================================================== */

static int new_node(gb *b, ll_kind kind, ll_op op, uint32_t cls, uint32_t enode, uint32_t *id)
{
    ll_graph *g = b->g;
    if (g->n_nodes == UINT32_MAX - 1 ||
        ll__grow((void **)&g->nodes, &g->cap, g->n_nodes + 1, sizeof(ll_node)))
        return ll__oom(b->k.err, "graph");
    ll_node *nd = &g->nodes[g->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->kind = kind;
    nd->op = op;
    nd->region = LM_NONE;
    nd->prim.op = HL_OP_COUNT;
    nd->eclass = cls;
    nd->enode = enode;
    nd->origin = LM_NONE;
    uint32_t eo = enode == LM_NONE ? LM_NONE : ll__eg_origin(b->k.s->e, &b->k.s->ser, enode);
    if (eo != LM_NONE) {
        char ob[160];
        nd->origin = ll__graph_intern_origin(g, ll__eg_origin_text(b->k.s->e, eo, ob, sizeof ob));
        if (nd->origin == LM_NONE) return ll__oom(b->k.err, "graph origins");
    }
    *id = g->n_nodes++;
    return LM_OK;
}

/* The node of a K*, KMatmul, Blas, F* kind: fields, dtypes and inputs (ids in in_ids). */
static int op_node(gb *b, uint32_t cls, uint32_t n, uint32_t kn, const ll_op_info *o, ll_kind kind,
                   uint32_t region, const uint32_t *in_ids, uint32_t nin, uint32_t *id)
{
    int rc = new_node(b, kind, b->k.s->code[kn], cls, n, id);
    if (rc) return rc;
    ll_node *nd = &b->g->nodes[*id];
    nd->region = region;
    nd->n_in = nin;
    hl_dtype in_as = nin ? b->g->nodes[in_ids[0]].dtype : HL_F32;
    if ((rc = ll__kind_contract(&b->k, cls, kn, o, o->out, in_as, &nd->dtype))) return rc;
    for (uint32_t k = 0; k < nin; k++) {
        uint32_t slot = k;
        if (o->dialect == LL_D_LIBRARY && k >= 2)
            slot = k == 2 && ll__kind_f64(&b->k, kn, 12) == 1.0 ? 2 : 3;
        nd->in[k] = in_ids[k];
        rc = ll__kind_contract(&b->k, cls, kn, o, o->in[slot], b->g->nodes[in_ids[k]].dtype,
                               &nd->in_dtype[k]);
        if (rc) return rc;
    }
    if ((rc = ll__kind_fields(&b->k, cls, kn, o, nd, nin))) return rc;
    for (uint32_t k = 0; k < nin && o->prim != HL_OP_COUNT; k++)
        nd->prim.in[k].node = in_ids[k];
    return LM_OK;
}

/* The interior of region r (top-level class c, region node rid) from class fx, in
 * post-order; *root receives the interior root's id. */
static int emit_interior(gb *b, uint32_t c, uint32_t rid, uint32_t fx, uint32_t *root)
{
    const ll_space *s = b->k.s;
    uint32_t stamp = s->nc + c; /* distinct from region_deps's stamps (c) */
    uint32_t top = 0;
    b->istamp[fx] = stamp;
    b->istate[fx] = BUSY;
    b->istack[top] = fx;
    b->istack_k[top++] = 0;
    while (top) {
        uint32_t x = b->istack[top - 1], k = b->istack_k[top - 1];
        uint32_t n = chosen(b, x);
        const ll_op_info *o = NULL;
        uint32_t kn = n == LM_NONE ? LM_NONE : kind_of(b, n, &o);
        if (kn == LM_NONE) return b->k.err->code;
        uint32_t in[LL_MAX_IN], nin;
        int rc = entries(b, n, in, &nin);
        if (rc) return rc;
        uint32_t nkids = o->dialect == LL_D_LOAD ? 0 : nin;
        if (k < nkids) {
            b->istack_k[top - 1] = k + 1;
            uint32_t d = in[k];
            if (b->istamp[d] == stamp && b->istate[d] == DONE) continue;
            if (b->istamp[d] == stamp)
                return ll__kd_fail(&b->k, x, n, "the chosen nodes of the region form a cycle");
            b->istamp[d] = stamp;
            b->istate[d] = BUSY;
            b->istack[top] = d;
            b->istack_k[top++] = 0;
            continue;
        }
        uint32_t id;
        if (o->dialect == LL_D_INLINE) {
            id = b->imemo[in[0]];
        } else if (o->dialect == LL_D_LOAD) {
            uint32_t src = b->top[in[0]];
            if (src == LM_NONE)
                return ll__kd_fail(&b->k, x, n, "FLoad reads class c%u, not built", in[0]);
            if ((rc = new_node(b, LL_LOAD, s->code[kn], x, n, &id))) return rc;
            ll_node *nd = &b->g->nodes[id];
            const ll_node *sn = &b->g->nodes[src];
            nd->region = rid;
            nd->n_in = 1;
            nd->in[0] = src;
            if ((rc = ll__kind_contract(&b->k, x, kn, o, o->out, sn->dtype, &nd->dtype))) return rc;
            if ((rc = ll__kind_contract(&b->k, x, kn, o, o->in[0], sn->dtype, &nd->in_dtype[0])))
                return rc;
            nd->ndim = sn->ndim;
            memcpy(nd->shape, sn->shape, sizeof nd->shape);
        } else {
            uint32_t ids[LL_MAX_IN];
            for (uint32_t j = 0; j < nin; j++)
                ids[j] = b->imemo[in[j]];
            if ((rc = op_node(b, x, n, kn, o, LL_FUSED, rid, ids, nin, &id))) return rc;
        }
        b->imemo[x] = id;
        b->istate[x] = DONE;
        top--;
    }
    *root = b->imemo[fx];
    return LM_OK;
}

static int emit_top(gb *b, uint32_t c)
{
    const ll_space *s = b->k.s;
    uint32_t n = chosen(b, c);
    if (n == LM_NONE) return b->k.err->code;
    if (s->code[n] != LL__C_OP) { /* an Input: the node made for it */
        int64_t idx = eg_value_as_i64(s->ser.class_value[ll__kid(s, n, 0)]);
        b->top[c] = (uint32_t)idx;
        return LM_OK;
    }
    const ll_op_info *o = NULL;
    uint32_t kn = kind_of(b, n, &o);
    if (kn == LM_NONE) return b->k.err->code;
    uint32_t in[LL_MAX_IN], nin, id;
    int rc = entries(b, n, in, &nin);
    if (rc) return rc;
    if (o->dialect == LL_D_REGION) {
        if ((rc = new_node(b, LL_REGION, s->code[kn], c, n, &id))) return rc;
        uint32_t root = LM_NONE;
        if ((rc = emit_interior(b, c, id, in[0], &root))) return rc;
        ll_node *nd = &b->g->nodes[id];
        const ll_node *rn = &b->g->nodes[root];
        nd->n_in = 1;
        nd->in[0] = root;
        if ((rc = ll__kind_contract(&b->k, c, kn, o, o->out, rn->dtype, &nd->dtype))) return rc;
        if ((rc = ll__kind_contract(&b->k, c, kn, o, o->in[0], rn->dtype, &nd->in_dtype[0])))
            return rc;
        nd->ndim = rn->ndim;
        memcpy(nd->shape, rn->shape, sizeof nd->shape);
    } else {
        uint32_t ids[LL_MAX_IN];
        for (uint32_t k = 0; k < nin; k++) {
            ids[k] = b->top[in[k]];
            if (ids[k] == LM_NONE)
                return ll__kd_fail(&b->k, c, n, "input class c%u is not built", in[k]);
        }
        ll_kind kind = o->dialect == LL_D_LIBRARY ? LL_LIBRARY : LL_KERNEL;
        if ((rc = op_node(b, c, n, kn, o, kind, LM_NONE, ids, nin, &id))) return rc;
    }
    b->top[c] = id;
    return LM_OK;
}

static int emit_inputs(gb *b)
{
    const ll_space *s = b->k.s;
    ll_op op = ll_op_find("Input");
    const ll_op_info *o = ll_op_get(op);
    for (uint32_t i = 0; i < s->n_inputs; i++) {
        uint32_t n = s->input_node[i], cls = s->ser.nodes[n].eclass, id;
        int rc = new_node(b, LL_INPUT, op, cls, n, &id);
        if (rc) return rc;
        ll_node *nd = &b->g->nodes[id];
        nd->prim.op = HL_OP_INPUT;
        nd->prim.index = i;
        if ((rc = ll__kind_dtype(&b->k, cls, n, 2, o, &nd->dtype))) return rc;
        nd->prim.dtype = nd->dtype;
        if ((rc = ll__kind_elist(&b->k, n, 3, o, &nd->ndim, nd->shape))) return rc;
        nd = &b->g->nodes[id];
        nd->prim.ndim = nd->ndim;
        memcpy(nd->prim.shape, nd->shape, sizeof nd->shape);
        nd->prim.name = ll__strdup(eg_value_as_string(s->e, s->ser.class_value[ll__kid(s, n, 1)]));
        if (!nd->prim.name) return ll__oom(b->k.err, "graph");
        b->g->inputs[i] = id;
    }
    return LM_OK;
}

static int out_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return *x < *y ? -1 : *x > *y;
}

static int emit_outputs(gb *b)
{
    const ll_space *s = b->k.s;
    ll_op op = ll_op_find("Output");
    const ll_op_info *o = ll_op_get(op);
    uint64_t *key = ll__alloc(b->nouts, sizeof(uint64_t));
    b->g->outputs = ll__alloc(b->nouts, sizeof(uint32_t));
    if (!key || !b->g->outputs) {
        ll__free(key);
        return ll__oom(b->k.err, "graph");
    }
    int rc = LM_OK;
    for (uint32_t i = 0; i < b->nouts && !rc; i++) {
        uint32_t n = b->outs[i];
        int64_t idx = eg_value_as_i64(s->ser.class_value[ll__kid(s, n, 1)]);
        if (idx < 0 || idx >= (int64_t)b->nouts)
            rc = ll__kd_fail(&b->k, s->ser.nodes[n].eclass, n, "Output index %lld out of 0..%u",
                             (long long)idx, b->nouts - 1);
        key[i] = (uint64_t)idx << 32 | n;
    }
    if (!rc) qsort(key, b->nouts, sizeof(uint64_t), out_cmp);
    for (uint32_t i = 0; i < b->nouts && !rc; i++) {
        uint32_t n = (uint32_t)key[i], cls = s->ser.nodes[n].eclass, id;
        if ((key[i] >> 32) != i) {
            rc = ll__kd_fail(&b->k, cls, n, "two Outputs have index %u", (uint32_t)(key[i] >> 32));
            break;
        }
        uint32_t src = b->top[ll__kid(s, n, 0)];
        if ((rc = new_node(b, LL_OUTPUT, op, cls, n, &id))) break;
        ll_node *nd = &b->g->nodes[id];
        nd->prim.op = HL_OP_OUTPUT;
        nd->prim.index = i;
        nd->n_in = nd->prim.n_in = 1;
        nd->in[0] = nd->prim.in[0].node = src;
        nd->dtype = nd->in_dtype[0] = nd->prim.dtype = b->g->nodes[src].dtype;
        if ((rc = ll__kind_view(&b->k, cls, n, o, 3, 4, &nd->prim.in[0].view))) break;
        nd = &b->g->nodes[id];
        nd->ndim = nd->prim.ndim = nd->prim.in[0].view.ndim;
        memcpy(nd->shape, nd->prim.in[0].view.dims, sizeof nd->shape);
        memcpy(nd->prim.shape, nd->shape, sizeof nd->shape);
        nd->prim.name = ll__strdup(eg_value_as_string(s->e, s->ser.class_value[ll__kid(s, n, 2)]));
        if (!nd->prim.name) rc = ll__oom(b->k.err, "graph");
        b->g->outputs[i] = id;
        b->g->n_outputs = i + 1;
    }
    ll__free(key);
    return rc;
}

/* ==================================================================================
 * The space's check of every kind's fields
 * ================================================================================== */

/* ==================================================================================
 * Entry points
 * ================================================================================== */

static int setup(gb *b)
{
    const ll_space *s = b->k.s;
    ll_graph *g = b->g;
    uint32_t nc = s->nc;
    g->pool = hl_expr_pool_new();
    g->dims = ll__zalloc(s->n_dims, sizeof(hl_dim));
    g->inputs = ll__alloc(s->n_inputs, sizeof(uint32_t));
    b->k.xd.memo = ll__alloc(nc, sizeof(hl_expr));
    b->top = ll__alloc(nc, sizeof(uint32_t));
    b->tstate = ll__zalloc(nc, 1);
    b->imemo = ll__alloc(nc, sizeof(uint32_t));
    b->istamp = ll__alloc(nc, sizeof(uint32_t));
    b->istate = ll__zalloc(nc, 1);
    b->dep_off = ll__alloc(nc, sizeof(uint32_t));
    b->dep_n = ll__zalloc(nc, sizeof(uint32_t));
    b->order = ll__alloc(nc, sizeof(uint32_t));
    b->outs = ll__alloc(nc, sizeof(uint32_t));
    b->stack = ll__alloc((size_t)nc + 1, sizeof(uint32_t));
    b->stack_k = ll__alloc((size_t)nc + 1, sizeof(uint32_t));
    b->istack = ll__alloc((size_t)nc + 1, sizeof(uint32_t));
    b->istack_k = ll__alloc((size_t)nc + 1, sizeof(uint32_t));
    if (!b->istack || !b->istack_k) return ll__oom(b->k.err, "graph");
    if (!g->pool || !g->dims || !g->inputs || !b->k.xd.memo || !b->top || !b->tstate || !b->imemo ||
        !b->istamp || !b->istate || !b->dep_off || !b->dep_n || !b->order || !b->outs ||
        !b->stack || !b->stack_k)
        return ll__oom(b->k.err, "graph");
    for (uint32_t c = 0; c < nc; c++) {
        b->k.xd.memo[c] = HL_NONE;
        b->top[c] = LM_NONE;
        b->istamp[c] = LM_NONE;
        b->dep_off[c] = LM_NONE;
    }
    b->k.xd.s = s;
    b->k.xd.p = g->pool;
    b->k.xd.err = b->k.err;
    /* dims first, so pool variable i is dim i */
    for (uint32_t i = 0; i < s->n_dims; i++) {
        const ll__dim *d = &s->dims[i];
        hl_expr v = hl_e_var(g->pool, d->name);
        if (v == HL_NONE) return ll__oom(b->k.err, "graph");
        g->dims[i] = (hl_dim){hl_e_get(g->pool, v).var, v, d->lo, d->hi, d->profile};
    }
    g->n_dims = s->n_dims;
    g->n_inputs = s->n_inputs;
    return LM_OK;
}

static ll_graph *build_graph(const ll_space *s, const ll_genome *gn, bool verify, lm_err *err)
{
    if (!s || !gn || gn->n != s->ns) {
        ll__fail(err, LM_EARG, NULL, "ll_graph_from_genome: the genome is not of this space");
        return NULL;
    }
    ll_graph *g = ll__zalloc(1, sizeof *g);
    if (!g) {
        ll__oom(err, "graph");
        return NULL;
    }
    gb b = {.k = {.s = s, .err = err, .what = "graph"}, .gn = gn, .g = g};
    int rc = setup(&b);
    if (!rc) rc = collect(&b);
    if (!rc) rc = kahn(&b);
    if (!rc) rc = emit_inputs(&b);
    for (uint32_t i = 0; i < b.norder && !rc; i++)
        rc = emit_top(&b, b.order[i]);
    if (!rc) rc = emit_outputs(&b);
    ll__free(b.k.xd.memo);
    ll__free(b.top);
    ll__free(b.tstate);
    ll__free(b.imemo);
    ll__free(b.istamp);
    ll__free(b.istate);
    ll__free(b.dep_off);
    ll__free(b.dep_n);
    ll__free(b.deps);
    ll__free(b.order);
    ll__free(b.outs);
    ll__free(b.stack);
    ll__free(b.stack_k);
    ll__free(b.istack);
    ll__free(b.istack_k);
    if (!rc && verify) rc = ll_graph_verify(g, err);
    if (rc) {
        ll_graph_free(g);
        return NULL;
    }
    return g;
}

ll_graph *ll_graph_from_genome(const ll_space *s, const ll_genome *gn, lm_err *err)
{
    return build_graph(s, gn, true, err);
}

ll_graph *ll_graph_from_genome_unverified(const ll_space *s, const ll_genome *gn, lm_err *err)
{
    return build_graph(s, gn, false, err);
}
