/* ll_graph.c - the LLIR graph a genome picks.
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
 * expression class once (ll__expr's memo). The result goes through ll_graph_verify.
 */
#include "ll_int.h"

#include <math.h>

#include <stdio.h>

enum { NEW = 0, BUSY = 1, DONE = 2 };

typedef struct gb {
    const ll_space *s;
    const ll_genome *gn;
    ll_graph *g;
    lm_err *err;
    ll__xdec xd;
    uint32_t *top;    /* per class: its top-level node, or LM_NONE */
    uint8_t *tstate;  /* per class: the collect walk's state */
    uint32_t *imemo;  /* per class: interior node of the region istamp names */
    uint32_t *istamp; /* per class: the region (top-level class) the interior marks are for */
    uint8_t *istate;  /* per class: interior walk state, valid when istamp matches */
    uint32_t *dep_off, *dep_n; /* per class: its top-level dependencies in deps[] */
    uint32_t *deps, ndeps, capdeps;
    uint32_t *order, norder;   /* the collected top-level classes */
    uint32_t *outs, nouts;     /* the Output nodes reached */
    uint32_t *stack, *stack_k;   /* the top-level walk's stack: class and next child */
    uint32_t *istack, *istack_k; /* the interior walks' stack */
    const char *what;            /* the messages' prefix */
} gb;

/* ==================================================================================
 * Errors, choices
 * ================================================================================== */

static int gfail(gb *b, uint32_t cls, uint32_t node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int gfail(gb *b, uint32_t cls, uint32_t node, const char *fmt, ...)
{
    char msg[LM_ERR_MSG / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lm_loc loc = {.node_id = cls};
    if (node != LM_NONE) {
        loc.node = b->s->ser.nodes[node].op;
        return ll__fail(b->err, LM_EVERIFY, &loc, "%s: class c%u (node n%u, %s): %s", b->what, cls,
                        node, b->s->ser.nodes[node].op, msg);
    }
    return ll__fail(b->err, LM_EVERIFY, &loc, "%s: class c%u: %s", b->what, cls, msg);
}

/* The chosen node of serialized class cls, or LM_NONE with the error set. */
static uint32_t chosen(gb *b, uint32_t cls)
{
    const ll_space *s = b->s;
    uint32_t si = cls < s->nc ? s->sidx[cls] : LM_NONE;
    if (si == LM_NONE) {
        gfail(b, cls, LM_NONE, "the class has no choice (not searchable, or nothing left)");
        return LM_NONE;
    }
    uint32_t j = b->gn->choice[si];
    if (j >= s->cstart[si + 1] - s->cstart[si]) {
        gfail(b, cls, LM_NONE, "the genome's choice %u is out of range", j);
        return LM_NONE;
    }
    return s->cnode[s->cstart[si] + j];
}

/* The kind node of an Op node, and its registry entry. */
static uint32_t kind_of(gb *b, uint32_t opnode, const ll_op_info **o)
{
    uint32_t kn = chosen(b, ll__kid(b->s, opnode, 0));
    if (kn == LM_NONE) return LM_NONE;
    uint16_t c = b->s->code[kn];
    if (c >= ll_op_count()) {
        gfail(b, b->s->ser.nodes[opnode].eclass, opnode, "its kind is not a registered op");
        return LM_NONE;
    }
    *o = ll_op_get(c);
    return kn;
}

/* The entry classes of an Op's chosen IList (at most LL_MAX_IN). */
static int entries(gb *b, uint32_t opnode, uint32_t *cls, uint32_t *n)
{
    const ll_space *s = b->s;
    uint32_t l = ll__kid(s, opnode, 1);
    *n = 0;
    for (;;) {
        uint32_t ln = chosen(b, l);
        if (ln == LM_NONE) return b->err->code;
        if (s->code[ln] == LL__C_INIL) return LM_OK;
        if (*n == LL_MAX_IN)
            return gfail(b, s->ser.nodes[opnode].eclass, opnode, "the IList has more than %d "
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
        return ll__oom(b->err, "graph");
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
    const ll_space *s = b->s;
    uint32_t top = 0;
    b->istamp[fx] = r;
    b->istate[fx] = BUSY;
    b->istack[top] = fx;
    b->istack_k[top++] = 0;
    while (top) {
        uint32_t c = b->istack[top - 1], k = b->istack_k[top - 1];
        uint32_t n = chosen(b, c);
        if (n == LM_NONE) return b->err->code;
        const ll_op_info *o = NULL;
        if (s->code[n] != LL__C_OP || kind_of(b, n, &o) == LM_NONE || !ll__interior(o->dialect))
            return lm_err_is_set(b->err) ? b->err->code
                                         : gfail(b, c, n, "a region holds a top-level node");
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
            return gfail(b, c, n, "the chosen nodes of the region form a cycle through class c%u",
                         d);
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
    const ll_space *s = b->s;
    b->dep_off[c] = b->ndeps;
    if (s->code[n] != LL__C_OP) return LM_OK; /* an Input */
    const ll_op_info *o = NULL;
    if (kind_of(b, n, &o) == LM_NONE) return b->err->code;
    if (ll__interior(o->dialect) || o->dialect == LL_D_HLIR || o->dialect == LL_D_IO)
        return gfail(b, c, n, "%s is not a top-level op", o->name);
    uint32_t in[LL_MAX_IN], nin;
    int rc = entries(b, n, in, &nin);
    if (rc) return rc;
    if (o->dialect == LL_D_REGION) {
        if (nin != 1) return gfail(b, c, n, "FStore takes one input, its IList has %u", nin);
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
    const ll_space *s = b->s;
    if (b->tstate[c0] == DONE) return LM_OK;
    uint32_t top = 0;
    b->stack[top] = c0;
    b->stack_k[top++] = 0;
    b->tstate[c0] = BUSY;
    while (top) {
        uint32_t c = b->stack[top - 1], k = b->stack_k[top - 1];
        if (k == 0 && b->dep_off[c] == LM_NONE) {
            uint32_t n = chosen(b, c);
            if (n == LM_NONE) return b->err->code;
            uint16_t code = s->code[n];
            if (code != LL__C_OP && code != ll_op_find("Input"))
                return gfail(b, c, n, "an op reads class c%u, which is not a stored tensor", c);
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
            return gfail(b, c, LM_NONE, "the chosen nodes form a cycle through class c%u", d);
        b->tstate[d] = BUSY;
        b->stack[top] = d;
        b->stack_k[top++] = 0;
    }
    return LM_OK;
}

/* The Outputs under the root (OutputJoin trees), then everything they read. */
static int collect(gb *b)
{
    const ll_space *s = b->s;
    ll_op op_out = ll_op_find("Output"), op_join = ll_op_find("OutputJoin");
    uint32_t top = 0;
    b->stack[top++] = s->root_class;
    while (top) {
        uint32_t c = b->stack[--top];
        uint32_t n = chosen(b, c);
        if (n == LM_NONE) return b->err->code;
        if (s->code[n] == op_join) {
            if (top + 2 > s->nc) return gfail(b, c, n, "the OutputJoins form a cycle");
            b->stack[top++] = ll__kid(s, n, 1);
            b->stack[top++] = ll__kid(s, n, 0);
        } else if (s->code[n] == op_out) {
            if (b->nouts == s->nc) return gfail(b, c, n, "the OutputJoins form a cycle");
            b->outs[b->nouts++] = n;
        } else {
            return gfail(b, c, n, "the root holds %s, not an Output or OutputJoin",
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
    const ll_space *s = b->s;
    uint32_t nc = s->nc, n = b->norder;
    uint32_t *indeg = ll__zalloc(nc, sizeof(uint32_t));
    uint32_t *ustart = ll__zalloc((size_t)nc + 1, sizeof(uint32_t));
    uint32_t *users = ll__alloc(b->ndeps, sizeof(uint32_t));
    uint32_t *pos = ll__alloc((size_t)nc + 1, sizeof(uint32_t));
    uint64_t *heap = ll__alloc(n, sizeof(uint64_t));
    uint32_t *out = ll__alloc(n, sizeof(uint32_t));
    int rc = LM_OK;
    if (!indeg || !ustart || !users || !pos || !heap || !out) {
        rc = ll__oom(b->err, "graph");
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
        return ll__oom(b->err, "graph");
    ll_node *nd = &g->nodes[g->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->kind = kind;
    nd->op = op;
    nd->region = LM_NONE;
    nd->prim.op = HL_OP_COUNT;
    nd->eclass = cls;
    nd->enode = enode;
    nd->origin = LM_NONE;
    uint32_t eo = enode == LM_NONE ? LM_NONE : ll__eg_origin(b->s->e, &b->s->ser, enode);
    if (eo != LM_NONE) {
        char ob[160];
        nd->origin = ll__graph_intern_origin(g, ll__eg_origin_text(b->s->e, eo, ob, sizeof ob));
        if (nd->origin == LM_NONE) return ll__oom(b->err, "graph origins");
    }
    *id = g->n_nodes++;
    return LM_OK;
}

static int field_elist(gb *b, uint32_t kn, uint32_t f, const ll_op_info *o, uint32_t *n,
                       hl_expr *out)
{
    return ll__elist(&b->xd, ll__kid(b->s, kn, f), o->fields[f].name, n, out);
}

static int field_expr(gb *b, uint32_t kn, uint32_t f, hl_expr *out)
{
    return ll__expr(&b->xd, ll__kid(b->s, kn, f), out);
}

static int field_dtype(gb *b, uint32_t cls, uint32_t kn, uint32_t f, const ll_op_info *o,
                       hl_dtype *out)
{
    int d = ll__dtype_of(b->s, ll__kid(b->s, kn, f));
    if (d < 0) return gfail(b, cls, kn, "field '%s' is not a readable DType", o->fields[f].name);
    *out = (hl_dtype)d;
    return LM_OK;
}

static int64_t field_i64(gb *b, uint32_t kn, uint32_t f)
{
    return eg_value_as_i64(b->s->ser.class_value[ll__kid(b->s, kn, f)]);
}

static double field_f64(gb *b, uint32_t kn, uint32_t f)
{
    return eg_value_as_f64(b->s->ser.class_value[ll__kid(b->s, kn, f)]);
}

/* A field's dtype contract, evaluated. */
static int contract(gb *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_dt_contract ct,
                    hl_dtype as_input, hl_dtype *out)
{
    switch (ct.rule) {
    case LL_DT_FIELD:
        return field_dtype(b, cls, kn, ct.arg, o, out);
    case LL_DT_FIXED:
        *out = (hl_dtype)ct.arg;
        return LM_OK;
    default:
        *out = as_input;
        return LM_OK;
    }
}

static hl_expr pool_fail(gb *b, uint32_t cls, uint32_t kn)
{
    if (hl_expr_pool_failed(b->g->pool)) ll__oom(b->err, "graph expressions");
    else
        gfail(b, cls, kn, "an expression built from the fields overflows int64");
    return HL_NONE;
}

/* The contiguous strides of dims[0..n) in the graph's pool (as hl_view_contiguous builds
 * them). */
static int contiguous(gb *b, uint32_t cls, uint32_t kn, uint32_t n, const hl_expr *dims,
                      hl_expr *out)
{
    hl_expr_pool *p = b->g->pool;
    hl_expr inner = hl_e_num(p, 1), z = hl_e_z(p);
    for (uint32_t i = n; i-- > 0;) {
        out[i] = hl_e_mul(p, z, inner);
        inner = hl_e_mul(p, inner, dims[i]);
        if (out[i] == HL_NONE || inner == HL_NONE) {
            pool_fail(b, cls, kn);
            return b->err->code;
        }
    }
    return LM_OK;
}

static int check_out_strides(gb *b, uint32_t cls, uint32_t kn, const ll_op_info *o, uint32_t f,
                             uint32_t n, const hl_expr *dims)
{
    hl_expr got[HL_MAX_DIMS], want[HL_MAX_DIMS];
    uint32_t m;
    int rc = field_elist(b, kn, f, o, &m, got);
    if (!rc) rc = contiguous(b, cls, kn, n, dims, want);
    if (rc) return rc;
    if (m != n)
        return gfail(b, cls, kn, "%s has %u entries for %u dims", o->fields[f].name, m, n);
    for (uint32_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return gfail(b, cls, kn,
                         "%s[%u] is not the contiguous stride: every stored tensor and every value "
                         "of a region is contiguous",
                         o->fields[f].name, i);
    return LM_OK;
}

static void set_view(hl_view *v, uint32_t n, const hl_expr *dims, const hl_expr *strides)
{
    v->ndim = n;
    for (uint32_t i = 0; i < n; i++) {
        v->dims[i] = dims[i];
        v->strides[i] = strides[i];
    }
}

/* A view field pair: dims (field fd) and strides (field fs), equally long. */
static int view_fields(gb *b, uint32_t cls, uint32_t kn, const ll_op_info *o, uint32_t fd,
                       uint32_t fs, hl_view *v)
{
    hl_expr d[HL_MAX_DIMS], st[HL_MAX_DIMS];
    uint32_t nd, ns;
    int rc = field_elist(b, kn, fd, o, &nd, d);
    if (!rc) rc = field_elist(b, kn, fs, o, &ns, st);
    if (rc) return rc;
    if (nd != ns)
        return gfail(b, cls, kn, "%s has %u entries for the %u of %s", o->fields[fs].name, ns, nd,
                     o->fields[fd].name);
    set_view(v, nd, d, st);
    return LM_OK;
}

/* The primitive of a K* or F* kind node kn: views, shape, fields (not input ids). */
static int decode_prim(gb *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd)
{
    hl_node *pr = &nd->prim;
    pr->op = o->prim;
    pr->n_in = o->n_inputs;
    int rc = LM_OK;
    hl_view *v0 = &pr->in[0].view, *v1 = &pr->in[1].view, *v2 = &pr->in[2].view;
    switch (o->prim) {
    case HL_OP_CONSTANT:
        pr->constant = (float)field_f64(b, kn, 0);
        pr->ndim = 0;
        break;
    case HL_OP_IOTA:
        rc = field_expr(b, kn, 0, &pr->iota_expr);
        if (!rc) rc = field_expr(b, kn, 1, &pr->iota_len);
        pr->ndim = 1;
        pr->shape[0] = pr->iota_len;
        break;
    case HL_OP_CAST:
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
        rc = view_fields(b, cls, kn, o, 0, 1, v0);
        if (!rc) rc = check_out_strides(b, cls, kn, o, 2, v0->ndim, v0->dims);
        pr->ndim = v0->ndim;
        memcpy(pr->shape, v0->dims, sizeof pr->shape);
        break;
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
        rc = view_fields(b, cls, kn, o, 0, 1, v0);
        if (!rc) rc = view_fields(b, cls, kn, o, 0, 2, v1);
        if (!rc) rc = check_out_strides(b, cls, kn, o, 3, v0->ndim, v0->dims);
        pr->ndim = v0->ndim;
        memcpy(pr->shape, v0->dims, sizeof pr->shape);
        break;
    case HL_OP_GATHER:
        rc = view_fields(b, cls, kn, o, 0, 1, v0);
        if (!rc) rc = view_fields(b, cls, kn, o, 2, 3, v1);
        pr->ndim = v0->ndim;
        memcpy(pr->shape, v0->dims, sizeof pr->shape);
        break;
    case HL_OP_SCATTER:
        rc = view_fields(b, cls, kn, o, 0, 1, v0);
        if (!rc) rc = view_fields(b, cls, kn, o, 2, 3, v1);
        if (!rc) rc = view_fields(b, cls, kn, o, 2, 4, v2);
        pr->ndim = v0->ndim;
        memcpy(pr->shape, v0->dims, sizeof pr->shape);
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE: {
        rc = view_fields(b, cls, kn, o, 0, 2, v0);
        if (!rc && v0->ndim == HL_MAX_DIMS)
            rc = gfail(b, cls, kn, "a reduction's input has at most %d dims", HL_MAX_DIMS);
        if (!rc) rc = field_expr(b, kn, 1, &v0->dims[v0->ndim]);
        if (!rc) rc = field_expr(b, kn, 3, &v0->strides[v0->ndim]);
        if (rc) break;
        pr->ndim = v0->ndim;
        memcpy(pr->shape, v0->dims, sizeof pr->shape);
        pr->axis = v0->ndim; /* the reduced dim is kept last */
        v0->ndim++;
        rc = check_out_strides(b, cls, kn, o, 4, pr->ndim, pr->shape);
        break;
    }
    default:
        rc = gfail(b, cls, kn, "%s computes no primitive", o->name);
    }
    if (rc) return rc;
    if (o->prim == HL_OP_CAST) pr->cast_to = nd->dtype;
    pr->dtype = nd->dtype;
    nd->ndim = pr->ndim;
    memcpy(nd->shape, pr->shape, sizeof nd->shape);
    return LM_OK;
}

/* The z-coefficient c of a stride s = c*z (c free of z; 0 for a broadcast) over a dim
 * of size n, or HL_NONE when s is not of that form. A stride is first simplified with
 * z < n when n is a number: a merged stride such as 64*S*(z/64) + z%64 is z over 64. */
static hl_expr coefficient(hl_expr_pool *p, hl_expr s, hl_expr n)
{
    int64_t nv;
    if (hl_e_is_num(p, n, &nv) && nv > 0) s = hl_e_subst_z(p, s, hl_e_z(p), nv);
    if (s == HL_NONE) return HL_NONE;
    hl_expr c = hl_e_subst_z(p, s, hl_e_num(p, 1), 0);
    if (c == HL_NONE || hl_e_has_z(p, c)) return HL_NONE;
    return hl_e_mul(p, c, hl_e_z(p)) == s ? c : HL_NONE;
}

static bool is_num(const hl_expr_pool *p, hl_expr e, int64_t v)
{
    int64_t x;
    return hl_e_is_num(p, e, &x) && x == v;
}

/* One operand of a KMatmul: its rows (r: M for a, K for b) and columns (c: K for a, N
 * for b) strides and the broadcast dim (which must have stride 0). */
static int matmul_operand(gb *b, uint32_t cls, uint32_t kn, const char *name, hl_expr rows,
                          hl_expr cols, hl_expr sr, hl_expr sc, hl_expr sbc, ll_order *order,
                          hl_expr *ld)
{
    hl_expr_pool *p = b->g->pool;
    hl_expr cr = coefficient(p, sr, rows), cc = coefficient(p, sc, cols);
    hl_expr cb = coefficient(p, sbc, hl_e_num(p, 2)); /* only 0 is accepted */
    if (cr == HL_NONE || cc == HL_NONE || cb == HL_NONE) {
        char t[3][96];
        hl_e_print(p, sr, t[0], sizeof t[0]);
        hl_e_print(p, sc, t[1], sizeof t[1]);
        hl_e_print(p, sbc, t[2], sizeof t[2]);
        return gfail(b, cls, kn,
                     "KMatmul: %s is not read with strides linear in z (rows %s, columns %s, "
                     "broadcast %s)",
                     name, t[0], t[1], t[2]);
    }
    if (!is_num(p, cb, 0))
        return gfail(b, cls, kn, "KMatmul: %s is not broadcast along the other operand's dim "
                                 "(its stride there is not 0)",
                     name);
    if (is_num(p, cc, 1) || is_num(p, cols, 1)) {
        *order = LL_ROW_MAJOR;
        *ld = cr;
    } else if (is_num(p, cr, 1) || is_num(p, rows, 1)) {
        *order = LL_COL_MAJOR;
        *ld = cc;
    } else {
        char t[4][96];
        hl_e_print(p, sr, t[0], sizeof t[0]);
        hl_e_print(p, rows, t[1], sizeof t[1]);
        hl_e_print(p, sc, t[2], sizeof t[2]);
        hl_e_print(p, cols, t[3], sizeof t[3]);
        return gfail(b, cls, kn,
                     "KMatmul: %s is read neither row- nor column-major (no unit stride: "
                     "stride %s over %s rows, %s over %s columns)",
                     name, t[0], t[1], t[2], t[3]);
    }
    return LM_OK;
}

/* The batch stride of an operand over batch dims [0, nb): one stride for all (the dims
 * collapse), or an error. */
static int batch_stride(gb *b, uint32_t cls, uint32_t kn, const char *name, uint32_t nb,
                        const hl_expr *sh, const hl_expr *st, hl_expr *out)
{
    hl_expr_pool *p = b->g->pool;
    hl_expr inner_c = HL_NONE, inner_n = HL_NONE;
    *out = hl_e_num(p, 0);
    for (uint32_t i = nb; i-- > 0;) {
        if (is_num(p, sh[i], 1)) continue;
        hl_expr c = coefficient(p, st[i], sh[i]);
        if (c == HL_NONE)
            return gfail(b, cls, kn, "KMatmul: %s's batch stride %u is not linear in z", name, i);
        if (inner_c == HL_NONE) {
            *out = c;
        } else {
            hl_expr want = hl_e_mul(p, inner_c, inner_n);
            if (want == HL_NONE) return pool_fail(b, cls, kn), b->err->code;
            if (c != want)
                return gfail(b, cls, kn, "KMatmul: %s's batch dims cannot be read with one stride",
                             name);
        }
        inner_c = c;
        inner_n = sh[i];
    }
    return LM_OK;
}

static int decode_kmatmul(gb *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd)
{
    hl_expr_pool *p = b->g->pool;
    hl_expr sh[HL_MAX_DIMS], as[HL_MAX_DIMS], bs[HL_MAX_DIMS];
    uint32_t n, na, nbs;
    int rc = field_elist(b, kn, 0, o, &n, sh);
    if (!rc) rc = field_elist(b, kn, 1, o, &na, as);
    if (!rc) rc = field_elist(b, kn, 2, o, &nbs, bs);
    if (rc) return rc;
    if (n < 3 || na != n || nbs != n)
        return gfail(b, cls, kn, "KMatmul: the shape is [batch..., M, N, K] (%u dims) with as "
                                 "many strides for a and b (%u, %u)",
                     n, na, nbs);
    uint32_t nb = n - 3, im = n - 3, in = n - 2, ik = n - 1;
    ll_matmul *mm = &nd->mm;
    mm->m = sh[im];
    mm->n = sh[in];
    mm->k = sh[ik];
    rc = matmul_operand(b, cls, kn, "a", sh[im], sh[ik], as[im], as[ik], as[in], &mm->order_a,
                        &mm->lda);
    if (!rc)
        rc = matmul_operand(b, cls, kn, "b", sh[ik], sh[in], bs[ik], bs[in], bs[im], &mm->order_b,
                            &mm->ldb);
    if (!rc) rc = batch_stride(b, cls, kn, "a", nb, sh, as, &mm->stride_a);
    if (!rc) rc = batch_stride(b, cls, kn, "b", nb, sh, bs, &mm->stride_b);
    if (rc) return rc;
    hl_expr batch = hl_e_num(p, 1);
    for (uint32_t i = 0; i < nb; i++)
        batch = hl_e_mul(p, batch, sh[i]);
    if (batch == HL_NONE) return pool_fail(b, cls, kn), b->err->code;
    mm->batch = batch;
    mm->alpha = 1.0;
    mm->beta = 0.0;
    mm->epilogue = LL_EPI_NONE;
    mm->type_a = mm->type_b = mm->type_c = mm->type_d = mm->type_bias = nd->dtype;
    nd->ndim = n - 1;
    memcpy(nd->shape, sh, (n - 1) * sizeof(hl_expr));
    return check_out_strides(b, cls, kn, o, 3, nd->ndim, nd->shape);
}

static int decode_blas(gb *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd,
                       uint32_t nin)
{
    hl_expr_pool *p = b->g->pool;
    ll_matmul *mm = &nd->mm;
    hl_expr *ex[8] = {&mm->m, &mm->n, &mm->k, &mm->batch, &mm->lda, &mm->ldb, &mm->stride_a,
                      &mm->stride_b};
    for (uint32_t f = 0; f < 8; f++) {
        int rc = field_expr(b, kn, f, ex[f]);
        if (rc) return rc;
    }
    int64_t oa = field_i64(b, kn, 8), ob = field_i64(b, kn, 9), epi = field_i64(b, kn, 13);
    double beta = field_f64(b, kn, 12), alpha = field_f64(b, kn, 10);
    if ((oa != 0 && oa != 1) || (ob != 0 && ob != 1))
        return gfail(b, cls, kn, "Blas: order_a and order_b are 0 (row-major) or 1 (column-major), "
                                 "not %lld and %lld",
                     (long long)oa, (long long)ob);
    if (beta != 0.0 && beta != 1.0)
        return gfail(b, cls, kn, "Blas: beta is 0 or 1, not %g", beta);
    if (epi < 0 || epi > 3)
        return gfail(b, cls, kn, "Blas: epilogue is 0 to 3, not %lld", (long long)epi);
    hl_dtype adt = HL_F32;
    int rc = field_dtype(b, cls, kn, 11, o, &adt);
    if (!rc) rc = field_dtype(b, cls, kn, 14, o, &mm->type_a);
    if (!rc) rc = field_dtype(b, cls, kn, 15, o, &mm->type_b);
    if (!rc) rc = field_dtype(b, cls, kn, 16, o, &mm->type_c);
    if (!rc) rc = field_dtype(b, cls, kn, 17, o, &mm->type_d);
    if (!rc) rc = field_dtype(b, cls, kn, 18, o, &mm->type_bias);
    if (rc) return rc;
    mm->order_a = (ll_order)oa;
    mm->order_b = (ll_order)ob;
    mm->alpha = hl_round_to(adt, (float)alpha);
    mm->beta = beta;
    mm->epilogue = (ll_epilogue)epi;
    uint32_t want = ll_op_input_count(nd->op, beta, epi);
    if (nin != want)
        return gfail(b, cls, kn, "Blas with beta %g and epilogue %lld takes %u inputs, its IList "
                                 "has %u",
                     beta, (long long)epi, want, nin);
    nd->ndim = 0;
    if (!is_num(p, mm->batch, 1)) nd->shape[nd->ndim++] = mm->batch;
    nd->shape[nd->ndim++] = mm->m;
    nd->shape[nd->ndim++] = mm->n;
    return LM_OK;
}

/* A KAttn or KAttnMask node: the scores' shape [L.., Sq, Skv, D] with q's and k's strides
 * in it (q with 0 along Skv, k with 0 along Sq), v's strides in the P V shape
 * [L.., Sq, D, Skv] (0 along Sq), the output's contiguous strides, the mask's strides in
 * [L.., Sq, Skv] (KAttnMask), then causal, scale, scale_dt, base2, DT and the tile. */
static int decode_attn(gb *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd,
                       uint32_t nin)
{
    hl_expr_pool *p = b->g->pool;
    hl_expr sh[HL_MAX_DIMS], qs[HL_MAX_DIMS], ks[HL_MAX_DIMS], vs[HL_MAX_DIMS], ms[HL_MAX_DIMS];
    uint32_t n, nq, nk, nv, nm = 0;
    bool mask = o->n_inputs == 4;
    uint32_t f = mask ? 6 : 5; /* the first field after the lists */
    if (nin != o->n_inputs)
        return gfail(b, cls, kn, "%s takes %u inputs, its IList has %u", o->name, o->n_inputs, nin);
    int rc = field_elist(b, kn, 0, o, &n, sh);
    if (!rc) rc = field_elist(b, kn, 1, o, &nq, qs);
    if (!rc) rc = field_elist(b, kn, 2, o, &nk, ks);
    if (!rc) rc = field_elist(b, kn, 3, o, &nv, vs);
    if (!rc && mask) rc = field_elist(b, kn, 5, o, &nm, ms);
    if (rc) return rc;
    if (n < 3 || nq != n || nk != n || nv != n || (mask && nm != n - 1))
        return gfail(b, cls, kn, "%s: the shape is [lead..., Sq, Skv, D] (%u dims) with as many "
                                 "strides for q, k and v (%u, %u, %u)%s",
                     o->name, n, nq, nk, nv, mask ? " and one fewer for the mask" : "");
    uint32_t nl = n - 3, iq = nl, ik = nl + 1, id = nl + 2;
    if (!is_num(p, qs[ik], 0) || !is_num(p, ks[iq], 0) || !is_num(p, vs[iq], 0))
        return gfail(b, cls, kn, "%s: q must be read with stride 0 along the keys, k and v with "
                                 "stride 0 along the queries",
                     o->name);
    ll_attn *at = &nd->at;
    memset(at, 0, sizeof *at);
    at->nlead = nl;
    at->sq = sh[iq];
    at->skv = sh[ik];
    at->d = sh[id];
    hl_expr dq[HL_MAX_DIMS], dk[HL_MAX_DIMS], sqv[HL_MAX_DIMS], skv[HL_MAX_DIMS], svv[HL_MAX_DIMS];
    for (uint32_t i = 0; i < nl; i++) {
        dq[i] = dk[i] = sh[i];
        sqv[i] = qs[i];
        skv[i] = ks[i];
        svv[i] = vs[i];
    }
    dq[nl] = sh[iq], dq[nl + 1] = sh[id];
    dk[nl] = sh[ik], dk[nl + 1] = sh[id];
    sqv[nl] = qs[iq], sqv[nl + 1] = qs[id];
    skv[nl] = ks[ik], skv[nl + 1] = ks[id];
    svv[nl] = vs[nl + 2], svv[nl + 1] = vs[nl + 1]; /* v's P V strides: [.., 0, c, j] */
    set_view(&at->q, nl + 2, dq, sqv);
    set_view(&at->k, nl + 2, dk, skv);
    set_view(&at->v, nl + 2, dk, svv);
    if (mask) {
        hl_expr dm[HL_MAX_DIMS];
        for (uint32_t i = 0; i < nl + 2; i++)
            dm[i] = sh[i];
        set_view(&at->mask, nl + 2, dm, ms);
    }
    int64_t causal = field_i64(b, kn, f), base2 = field_i64(b, kn, f + 3), t[5];
    double scale = field_f64(b, kn, f + 1);
    for (uint32_t i = 0; i < 5; i++)
        t[i] = field_i64(b, kn, f + 5 + i);
    if (causal != 0 && causal != 1)
        return gfail(b, cls, kn, "%s: causal is 0 or 1, not %lld", o->name, (long long)causal);
    if (base2 != 0 && base2 != 1)
        return gfail(b, cls, kn, "%s: base2 is 0 or 1, not %lld", o->name, (long long)base2);
    if (!(scale > 0.0) || !isfinite(scale))
        return gfail(b, cls, kn, "%s: the scale must be finite and > 0, not %g", o->name, scale);
    for (uint32_t i = 0; i < 5; i++)
        if (t[i] < 1 || t[i] > 1024)
            return gfail(b, cls, kn, "%s: tile field %s is %lld, not in [1, 1024]", o->name,
                         o->fields[f + 5 + i].name, (long long)t[i]);
    hl_dtype sdt = HL_F32;
    if ((rc = field_dtype(b, cls, kn, f + 2, o, &sdt))) return rc;
    at->causal = causal != 0;
    /* the scale as the graph rounded it; a softmax in base 2 is the softmax of its scores
     * times ln 2 (2^x = e^(x ln 2)), so the node's e-based scale is that much smaller */
    at->scale = hl_round_to(sdt, (float)scale) * (base2 ? 0.6931471805599453 : 1.0);
    at->block_q = (uint32_t)t[0];
    at->block_k = (uint32_t)t[1];
    at->warps = (uint32_t)t[2];
    at->stages = (uint32_t)t[3];
    at->kv_splits = (uint32_t)t[4];
    nd->ndim = nl + 2;
    memcpy(nd->shape, dq, (nl + 2) * sizeof(hl_expr));
    return check_out_strides(b, cls, kn, o, 4, nd->ndim, nd->shape);
}

/* The fields of a K*, KMatmul, Blas or F* kind node kn into nd (its dtype set). */
static int decode_fields(gb *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd,
                         uint32_t nin)
{
    if (o->dialect == LL_D_LIBRARY) return decode_blas(b, cls, kn, o, nd, nin);
    if (ll_op_is_attn(nd->op)) return decode_attn(b, cls, kn, o, nd, nin);
    if (o->prim == HL_OP_COUNT) return decode_kmatmul(b, cls, kn, o, nd);
    if (nin != o->n_inputs)
        return gfail(b, cls, kn, "%s takes %u inputs, its IList has %u", o->name, o->n_inputs, nin);
    return decode_prim(b, cls, kn, o, nd);
}

/* The node of a K*, KMatmul, Blas, F* kind: fields, dtypes and inputs (ids in in_ids). */
static int op_node(gb *b, uint32_t cls, uint32_t n, uint32_t kn, const ll_op_info *o,
                   ll_kind kind, uint32_t region, const uint32_t *in_ids, uint32_t nin,
                   uint32_t *id)
{
    int rc = new_node(b, kind, b->s->code[kn], cls, n, id);
    if (rc) return rc;
    ll_node *nd = &b->g->nodes[*id];
    nd->region = region;
    nd->n_in = nin;
    hl_dtype in_as = nin ? b->g->nodes[in_ids[0]].dtype : HL_F32;
    if ((rc = contract(b, cls, kn, o, o->out, in_as, &nd->dtype))) return rc;
    for (uint32_t k = 0; k < nin; k++) {
        uint32_t slot = k;
        if (o->dialect == LL_D_LIBRARY && k >= 2)
            slot = k == 2 && field_f64(b, kn, 12) == 1.0 ? 2 : 3;
        nd->in[k] = in_ids[k];
        rc = contract(b, cls, kn, o, o->in[slot], b->g->nodes[in_ids[k]].dtype, &nd->in_dtype[k]);
        if (rc) return rc;
    }
    if ((rc = decode_fields(b, cls, kn, o, nd, nin))) return rc;
    for (uint32_t k = 0; k < nin && o->prim != HL_OP_COUNT; k++)
        nd->prim.in[k].node = in_ids[k];
    return LM_OK;
}

/* The interior of region r (top-level class c, region node rid) from class fx, in
 * post-order; *root receives the interior root's id. */
static int emit_interior(gb *b, uint32_t c, uint32_t rid, uint32_t fx, uint32_t *root)
{
    const ll_space *s = b->s;
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
        if (kn == LM_NONE) return b->err->code;
        uint32_t in[LL_MAX_IN], nin;
        int rc = entries(b, n, in, &nin);
        if (rc) return rc;
        uint32_t nkids = o->dialect == LL_D_LOAD ? 0 : nin;
        if (k < nkids) {
            b->istack_k[top - 1] = k + 1;
            uint32_t d = in[k];
            if (b->istamp[d] == stamp && b->istate[d] == DONE) continue;
            if (b->istamp[d] == stamp)
                return gfail(b, x, n, "the chosen nodes of the region form a cycle");
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
            if (src == LM_NONE) return gfail(b, x, n, "FLoad reads class c%u, not built", in[0]);
            if ((rc = new_node(b, LL_LOAD, s->code[kn], x, n, &id))) return rc;
            ll_node *nd = &b->g->nodes[id];
            const ll_node *sn = &b->g->nodes[src];
            nd->region = rid;
            nd->n_in = 1;
            nd->in[0] = src;
            if ((rc = contract(b, x, kn, o, o->out, sn->dtype, &nd->dtype))) return rc;
            if ((rc = contract(b, x, kn, o, o->in[0], sn->dtype, &nd->in_dtype[0]))) return rc;
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
    const ll_space *s = b->s;
    uint32_t n = chosen(b, c);
    if (n == LM_NONE) return b->err->code;
    if (s->code[n] != LL__C_OP) { /* an Input: the node made for it */
        int64_t idx = eg_value_as_i64(s->ser.class_value[ll__kid(s, n, 0)]);
        b->top[c] = (uint32_t)idx;
        return LM_OK;
    }
    const ll_op_info *o = NULL;
    uint32_t kn = kind_of(b, n, &o);
    if (kn == LM_NONE) return b->err->code;
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
        if ((rc = contract(b, c, kn, o, o->out, rn->dtype, &nd->dtype))) return rc;
        if ((rc = contract(b, c, kn, o, o->in[0], rn->dtype, &nd->in_dtype[0]))) return rc;
        nd->ndim = rn->ndim;
        memcpy(nd->shape, rn->shape, sizeof nd->shape);
    } else {
        uint32_t ids[LL_MAX_IN];
        for (uint32_t k = 0; k < nin; k++) {
            ids[k] = b->top[in[k]];
            if (ids[k] == LM_NONE) return gfail(b, c, n, "input class c%u is not built", in[k]);
        }
        ll_kind kind = o->dialect == LL_D_LIBRARY ? LL_LIBRARY : LL_KERNEL;
        if ((rc = op_node(b, c, n, kn, o, kind, LM_NONE, ids, nin, &id))) return rc;
    }
    b->top[c] = id;
    return LM_OK;
}

static int emit_inputs(gb *b)
{
    const ll_space *s = b->s;
    ll_op op = ll_op_find("Input");
    const ll_op_info *o = ll_op_get(op);
    for (uint32_t i = 0; i < s->n_inputs; i++) {
        uint32_t n = s->input_node[i], cls = s->ser.nodes[n].eclass, id;
        int rc = new_node(b, LL_INPUT, op, cls, n, &id);
        if (rc) return rc;
        ll_node *nd = &b->g->nodes[id];
        nd->prim.op = HL_OP_INPUT;
        nd->prim.index = i;
        if ((rc = field_dtype(b, cls, n, 2, o, &nd->dtype))) return rc;
        nd->prim.dtype = nd->dtype;
        if ((rc = field_elist(b, n, 3, o, &nd->ndim, nd->shape))) return rc;
        nd = &b->g->nodes[id];
        nd->prim.ndim = nd->ndim;
        memcpy(nd->prim.shape, nd->shape, sizeof nd->shape);
        nd->prim.name =
            ll__strdup(eg_value_as_string(s->e, s->ser.class_value[ll__kid(s, n, 1)]));
        if (!nd->prim.name) return ll__oom(b->err, "graph");
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
    const ll_space *s = b->s;
    ll_op op = ll_op_find("Output");
    const ll_op_info *o = ll_op_get(op);
    uint64_t *key = ll__alloc(b->nouts, sizeof(uint64_t));
    b->g->outputs = ll__alloc(b->nouts, sizeof(uint32_t));
    if (!key || !b->g->outputs) {
        ll__free(key);
        return ll__oom(b->err, "graph");
    }
    int rc = LM_OK;
    for (uint32_t i = 0; i < b->nouts && !rc; i++) {
        uint32_t n = b->outs[i];
        int64_t idx = eg_value_as_i64(s->ser.class_value[ll__kid(s, n, 1)]);
        if (idx < 0 || idx >= (int64_t)b->nouts)
            rc = gfail(b, s->ser.nodes[n].eclass, n, "Output index %lld out of 0..%u",
                       (long long)idx, b->nouts - 1);
        key[i] = (uint64_t)idx << 32 | n;
    }
    if (!rc) qsort(key, b->nouts, sizeof(uint64_t), out_cmp);
    for (uint32_t i = 0; i < b->nouts && !rc; i++) {
        uint32_t n = (uint32_t)key[i], cls = s->ser.nodes[n].eclass, id;
        if ((key[i] >> 32) != i) {
            rc = gfail(b, cls, n, "two Outputs have index %u", (uint32_t)(key[i] >> 32));
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
        if ((rc = view_fields(b, cls, n, o, 3, 4, &nd->prim.in[0].view))) break;
        nd = &b->g->nodes[id];
        nd->ndim = nd->prim.ndim = nd->prim.in[0].view.ndim;
        memcpy(nd->shape, nd->prim.in[0].view.dims, sizeof nd->shape);
        memcpy(nd->prim.shape, nd->shape, sizeof nd->shape);
        nd->prim.name =
            ll__strdup(eg_value_as_string(s->e, s->ser.class_value[ll__kid(s, n, 2)]));
        if (!nd->prim.name) rc = ll__oom(b->err, "graph");
        b->g->outputs[i] = id;
        b->g->n_outputs = i + 1;
    }
    ll__free(key);
    return rc;
}

/* ==================================================================================
 * The space's check of every kind's fields
 * ================================================================================== */

int ll__check_kinds(const ll_space *s, lm_err *err, double deadline)
{
    ll_graph g = {0};
    gb b = {.s = s, .g = &g, .err = err, .what = "space: a kind's fields"};
    g.pool = hl_expr_pool_new();
    b.xd.memo = ll__alloc(s->nc, sizeof(hl_expr));
    int rc = LM_OK;
    if (!g.pool || !b.xd.memo) rc = ll__oom(err, "space");
    for (uint32_t c = 0; c < s->nc && !rc; c++)
        b.xd.memo[c] = HL_NONE;
    b.xd.s = s;
    b.xd.p = g.pool;
    b.xd.err = err;
    for (uint32_t i = 0; i < s->n_dims && !rc; i++)
        if (hl_e_var(g.pool, s->dims[i].name) == HL_NONE) rc = ll__oom(err, "space");
    for (uint32_t j = 0; j < s->nch && !rc; j++) {
        if (deadline > 0 && (j & 4095) == 0 && lm_now_s() > deadline) {
            rc = ll__fail(err, LM_ELIMIT, NULL,
                          "the time limit ran out while building the search space (step "
                          "'kinds' fields': %u of %u choices)",
                          j, s->nch);
            break;
        }
        uint32_t kn = s->cnode[j], cls = s->ser.nodes[kn].eclass;
        if (s->ckind[cls] != LL__K_OPKIND || s->cop[j] == LL_OP_NONE) continue;
        const ll_op_info *o = ll_op_get(s->cop[j]);
        ll_node nd;
        memset(&nd, 0, sizeof nd);
        nd.op = s->cop[j];
        rc = contract(&b, cls, kn, o, o->out, HL_F32, &nd.dtype);
        for (uint32_t k = 0; k < o->n_inputs && !rc; k++)
            rc = contract(&b, cls, kn, o, o->in[k], HL_F32, &nd.in_dtype[k]);
        if (!rc && (o->dialect == LL_D_KERNEL || o->dialect == LL_D_LIBRARY ||
                    o->dialect == LL_D_FUSED))
            rc = decode_fields(&b, cls, kn, o, &nd, ll__kind_inputs(s, kn));
    }
    ll__free(b.xd.memo);
    hl_expr_pool_free(g.pool);
    return rc;
}

/* ==================================================================================
 * Entry points
 * ================================================================================== */

static int setup(gb *b)
{
    const ll_space *s = b->s;
    ll_graph *g = b->g;
    uint32_t nc = s->nc;
    g->pool = hl_expr_pool_new();
    g->dims = ll__zalloc(s->n_dims, sizeof(hl_dim));
    g->inputs = ll__alloc(s->n_inputs, sizeof(uint32_t));
    b->xd.memo = ll__alloc(nc, sizeof(hl_expr));
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
    if (!b->istack || !b->istack_k) return ll__oom(b->err, "graph");
    if (!g->pool || !g->dims || !g->inputs || !b->xd.memo || !b->top || !b->tstate || !b->imemo ||
        !b->istamp || !b->istate || !b->dep_off || !b->dep_n || !b->order || !b->outs ||
        !b->stack || !b->stack_k)
        return ll__oom(b->err, "graph");
    for (uint32_t c = 0; c < nc; c++) {
        b->xd.memo[c] = HL_NONE;
        b->top[c] = LM_NONE;
        b->istamp[c] = LM_NONE;
        b->dep_off[c] = LM_NONE;
    }
    b->xd.s = s;
    b->xd.p = g->pool;
    b->xd.err = b->err;
    /* dims first, so pool variable i is dim i */
    for (uint32_t i = 0; i < s->n_dims; i++) {
        const ll__dim *d = &s->dims[i];
        hl_expr v = hl_e_var(g->pool, d->name);
        if (v == HL_NONE) return ll__oom(b->err, "graph");
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
    gb b = {.s = s, .gn = gn, .g = g, .err = err, .what = "graph"};
    int rc = setup(&b);
    if (!rc) rc = collect(&b);
    if (!rc) rc = kahn(&b);
    if (!rc) rc = emit_inputs(&b);
    for (uint32_t i = 0; i < b.norder && !rc; i++)
        rc = emit_top(&b, b.order[i]);
    if (!rc) rc = emit_outputs(&b);
    ll__free(b.xd.memo);
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

void ll_graph_free(ll_graph *g)
{
    if (!g) return;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        ll__free(g->nodes[i].prim.name);
    ll__free(g->nodes);
    ll__free(g->dims);
    ll__free(g->inputs);
    ll__free(g->outputs);
    for (uint32_t i = 0; i < g->n_origins; i++)
        ll__free(g->origins[i]);
    ll__free(g->origins);
    hl_expr_pool_free(g->pool);
    ll__free(g);
}

uint32_t ll__graph_intern_origin(ll_graph *g, const char *name)
{
    for (uint32_t i = 0; i < g->n_origins; i++)
        if (strcmp(g->origins[i], name) == 0) return i;
    if (g->n_origins == UINT32_MAX - 1 ||
        ll__grow((void **)&g->origins, &g->cap_origins, g->n_origins + 1, sizeof(char *)))
        return LM_NONE;
    char *c = ll__strdup(name);
    if (!c) return LM_NONE;
    g->origins[g->n_origins] = c;
    return g->n_origins++;
}

const char *ll_graph_origin(const ll_graph *g, uint32_t origin)
{
    if (!g || origin >= g->n_origins) return "origin unknown";
    return g->origins[origin];
}

const hl_expr_pool *ll_graph_exprs(const ll_graph *g)
{
    return g->pool;
}

uint32_t ll_graph_dim_count(const ll_graph *g)
{
    return g->n_dims;
}

const hl_dim *ll_graph_dim_at(const ll_graph *g, uint32_t i)
{
    return i < g->n_dims ? &g->dims[i] : NULL;
}

const char *ll_graph_dim_name(const ll_graph *g, uint32_t i)
{
    return i < g->n_dims ? hl_var_name(g->pool, g->dims[i].var) : NULL;
}

uint32_t ll_graph_node_count(const ll_graph *g)
{
    return g->n_nodes;
}

const ll_node *ll_graph_node(const ll_graph *g, uint32_t id)
{
    return id < g->n_nodes ? &g->nodes[id] : NULL;
}

uint32_t ll_graph_input_count(const ll_graph *g)
{
    return g->n_inputs;
}

uint32_t ll_graph_input(const ll_graph *g, uint32_t i)
{
    return i < g->n_inputs ? g->inputs[i] : LM_NONE;
}

uint32_t ll_graph_output_count(const ll_graph *g)
{
    return g->n_outputs;
}

uint32_t ll_graph_output(const ll_graph *g, uint32_t i)
{
    return i < g->n_outputs ? g->outputs[i] : LM_NONE;
}
