/* ll_space.c - the search space read from a saturated engine.
 *
 * ll_space_new serializes the engine (eg_serialize: dense classes, nodes with children)
 * and derives, in this order:
 *
 *   codes      every node's constructor: a registry op or one of the encoding's own
 *              (Op, ICons, Expression and EList constructors, DTypes, Dim); a constructor
 *              of sort IR or OpKind the registry does not know is an error
 *   canon      the canonical node of every class that is not searchable: least tree size
 *              among the nodes llir reads (eg_serial_extract, which the hlir decoder uses
 *              too: ties to the lowest index), so its choices never form a cycle
 *   dtypes     of DType classes (their canonical node) and IR classes (the `dtype`
 *              function, read from its table)
 *   dims       every Dim, in index order, then every MVar no Dim declares
 *   contexts   of OpKind classes (by their kinds' dialect), IR classes (by their nodes),
 *              IList classes (by their entries), and lengths of IList classes; a class
 *              that mixes contexts, ops or lengths, and an Op whose IList does not fit its
 *              kind, is an error naming it
 *   choices    the candidate nodes of every searchable class (not subsumed, not of an
 *              HLIR kind, every non-searchable child readable), then the least height of
 *              every class by Knuth's generalisation of Dijkstra over height(node) =
 *              1 + max(height of its searchable children): a class with no finite height
 *              has no acyclic program, and a candidate reading one is pruned. The node
 *              that gives a class its height is its `safe` choice; safe choices form no
 *              cycle (every child's height is lower), which genome repair falls back on.
 *   numbering  searchable classes in class order, choices in node order, children
 *   check      the e-graph dtype check (ll_space_dtype.c), then the root
 *
 * Everything iterates arrays in index order, so one engine gives one space.
 */
#include "ll_kind.h"

#include "eg_serial.h"

#include <math.h>
#include <stdio.h>

#define INF UINT32_MAX

typedef struct build {
    ll_space *s;
    lm_err *err;
    int sort_ir, sort_ilist, sort_opkind, sort_expr, sort_elist, sort_dtype, sort_dim;
    uint32_t *id2cls;   /* engine e-class id -> class, or LM_NONE */
    uint32_t n_ids;
    uint8_t *cand;      /* per node: 1 when a candidate choice */
    uint32_t *height;   /* per class */
    uint32_t *kind_op;  /* per OpKind class: its one backend op, or LL_OP_NONE */
    bool skip_dtype_check; /* ll_space_opts: tests only */
    double deadline;       /* ll_space_opts.deadline_s; 0: none */
} build;

/* LM_ELIMIT when the deadline has passed: at item i of n (classes or nodes, what) of
 * step `step`. Checks the clock only every 4096 items (i % 4096 == 0). */
static int over(build *b, const char *step, uint32_t i, uint32_t n, const char *what)
{
    if (b->deadline <= 0 || (i & 4095) != 0 || lm_now_s() <= b->deadline) return LM_OK;
    return ll__fail(b->err, LM_ELIMIT, NULL,
                    "the time limit ran out while building the search space (step '%s': %u of "
                    "%u %s)",
                    step, i, n, what);
}

/* ==================================================================================
 * Errors naming classes and nodes
 * ================================================================================== */

static int vfail(build *b, uint32_t cls, uint32_t node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int vfail(build *b, uint32_t cls, uint32_t node, const char *fmt, ...)
{
    char msg[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const eg_serialized *ser = &b->s->ser;
    lm_loc loc = {.node_id = cls};
    if (node != LM_NONE && node < ser->n_nodes) loc.node = ser->nodes[node].op;
    if (node != LM_NONE)
        return ll__fail(b->err, LM_EVERIFY, &loc, "space: class c%u, node n%u: %s", cls, node, msg);
    return ll__fail(b->err, LM_EVERIFY, &loc, "space: class c%u: %s", cls, msg);
}

/* ==================================================================================
 * Codes, class kinds, nodes per class
 * ================================================================================== */

static int assign_codes(build *b)
{
    ll_space *s = b->s;
    const eg_serialized *ser = &s->ser;
    size_t nt = eg_table_count(s->e);
    uint16_t *tcode = ll__alloc(nt, sizeof(uint16_t));
    uint32_t *tarity = ll__alloc(nt, sizeof(uint32_t));
    if (!tcode || !tarity) {
        ll__free(tcode);
        ll__free(tarity);
        return ll__oom(b->err, "space");
    }
    for (size_t t = 0; t < nt; t++)
        tcode[t] = ll__ctor_code(eg_table_name(s->e, (int)t), &tarity[t]);
    int rc = LM_OK;
    for (uint32_t i = 0; i < s->nn && !rc; i++) {
        const eg_snode *n = &ser->nodes[i];
        uint32_t cls = n->eclass;
        int so = (int)ser->class_sort[cls];
        if (n->table == UINT32_MAX) {
            s->code[i] = LL__C_LITERAL;
            continue;
        }
        uint16_t c = n->table < nt ? tcode[n->table] : LL__C_UNKNOWN;
        bool is_ir = so == b->sort_ir, is_kind = so == b->sort_opkind;
        if (c == LL__C_UNKNOWN && (is_ir || is_kind))
            rc = vfail(b, cls, i,
                       "constructor %s of sort %s is not in llir's registry (docs/llir.md); "
                       "register it in llir/ll_registry.c or remove it from the rules",
                       n->op, is_ir ? "IR" : "OpKind");
        else if (c != LL__C_UNKNOWN && n->nchildren != tarity[n->table])
            rc = vfail(b, cls, i, "constructor %s has %u fields; llir reads it with %u", n->op,
                       n->nchildren, tarity[n->table]);
        else if (c < ll_op_count()) {
            bool io = ll_op_get(c)->dialect == LL_D_IO;
            if ((io && !is_ir) || (!io && !is_kind))
                rc = vfail(b, cls, i, "constructor %s is of another sort than llir's registry says (%s)",
                           n->op, io ? "IR" : "OpKind");
        } else if ((c == LL__C_OP && !is_ir) ||
                   ((c == LL__C_ICONS || c == LL__C_INIL) && so != b->sort_ilist))
            rc = vfail(b, cls, i, "constructor %s is of another sort than the encoding's", n->op);
        s->code[i] = c;
    }
    ll__free(tcode);
    ll__free(tarity);
    return rc;
}

static uint8_t kind_of_sort(const build *b, int so)
{
    if (so == b->sort_ir) return LL__K_IR;
    if (so == b->sort_ilist) return LL__K_ILIST;
    if (so == b->sort_opkind) return LL__K_OPKIND;
    if (so == b->sort_expr) return LL__K_EXPR;
    if (so == b->sort_elist) return LL__K_ELIST;
    if (so == b->sort_dtype) return LL__K_DTYPE;
    if (so == b->sort_dim) return LL__K_DIM;
    if (so == b->s->sort_i64 || so == b->s->sort_f64 || so == b->s->sort_str) return LL__K_LIT;
    return LL__K_OTHER;
}

static int index_classes(build *b)
{
    ll_space *s = b->s;
    const eg_serialized *ser = &s->ser;
    for (uint32_t c = 0; c < s->nc; c++)
        s->ckind[c] = kind_of_sort(b, (int)ser->class_sort[c]);
    /* nodes per class, CSR, in node order */
    for (uint32_t i = 0; i < s->nn; i++)
        s->nstart[ser->nodes[i].eclass + 1]++;
    for (uint32_t c = 0; c < s->nc; c++)
        s->nstart[c + 1] += s->nstart[c];
    uint32_t *pos = ll__alloc(s->nc + 1, sizeof(uint32_t));
    if (!pos) return ll__oom(b->err, "space");
    memcpy(pos, s->nstart, (s->nc + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < s->nn; i++)
        s->nlist[pos[ser->nodes[i].eclass]++] = i;
    ll__free(pos);
    /* engine e-class ids -> classes (literal classes hold values, not ids) */
    uint32_t max_id = 0;
    for (uint32_t c = 0; c < s->nc; c++)
        if (s->ckind[c] != LL__K_LIT && ser->class_value[c] + 1 > max_id)
            max_id = (uint32_t)(ser->class_value[c] + 1);
    b->n_ids = max_id;
    b->id2cls = ll__alloc(max_id + 1, sizeof(uint32_t));
    if (!b->id2cls) return ll__oom(b->err, "space");
    for (uint32_t i = 0; i <= max_id; i++)
        b->id2cls[i] = LM_NONE;
    for (uint32_t c = 0; c < s->nc; c++)
        if (s->ckind[c] != LL__K_LIT && s->ckind[c] != LL__K_OTHER)
            b->id2cls[ser->class_value[c]] = c;
    return LM_OK;
}

/* ==================================================================================
 * Canonical nodes of the classes that are not searchable
 * ================================================================================== */

static bool readable(const ll_space *s, uint32_t n)
{
    const eg_snode *nd = &s->ser.nodes[n];
    uint16_t c = s->code[n];
    if (nd->subsumed || c == LL__C_HELPER || c == LL__C_UNKNOWN || c == LL__C_LITERAL) return false;
    if (c == LL__C_MFLOAT) {
        double v = eg_value_as_f64(s->ser.class_value[ll__kid(s, n, 0)]);
        return isfinite(v) && v == floor(v) && fabs(v) < 9e18;
    }
    return true;
}

static bool searchable_kind(uint8_t k)
{
    return k == LL__K_IR || k == LL__K_ILIST || k == LL__K_OPKIND;
}

/* Serialized node n may be a canonical node: a node llir reads (or a literal) of a class
 * that is not searchable. */
static bool canon_usable(void *ctx, uint32_t n)
{
    const ll_space *s = ctx;
    if (searchable_kind(s->ckind[s->ser.nodes[n].eclass])) return false;
    return s->code[n] == LL__C_LITERAL || readable(s, n);
}

/* The canonical node of every class that is not searchable: least tree size, ties to
 * the lowest index (eg_serial_extract, the extractor hlir's decoder uses too). */
static int choose_canonical(build *b)
{
    ll_space *s = b->s;
    uint64_t *work = ll__alloc(eg_serial_extract_work(&s->ser), sizeof(uint64_t));
    uint64_t *cost = ll__alloc(s->nc, sizeof(uint64_t));
    int rc = LM_OK;
    if (!work || !cost)
        rc = ll__oom(b->err, "space");
    else
        eg_serial_extract(&s->ser, canon_usable, s, cost, s->canon, work);
    ll__free(work);
    ll__free(cost);
    return rc;
}

/* ==================================================================================
 * Dtypes, dims, inputs
 * ================================================================================== */

static int read_dtypes(build *b)
{
    ll_space *s = b->s;
    for (uint32_t c = 0; c < s->nc; c++) {
        s->dtype[c] = -1;
        if (s->ckind[c] == LL__K_DTYPE && s->canon[c] != LM_NONE) {
            uint16_t k = s->code[s->canon[c]];
            if (k >= LL__C_DT && k < LL__C_DT_END) s->dtype[c] = (int8_t)(k - LL__C_DT);
        }
    }
    int t = eg_table_lookup(s->e, "dtype");
    if (t < 0 || eg_table_arity(s->e, t) != 1)
        return ll__fail(b->err, LM_EVERIFY, NULL,
                        "space: the engine has no function (dtype IR) -> DType; it must hold "
                        "the encoding's schema (hlir/encode.egg)");
    size_t cur = 0;
    eg_value cols[2];
    while (ll__eg_next_row(s->e, t, &cur, cols)) {
        eg_value ir = eg_find(s->e, cols[0]), dt = eg_find(s->e, cols[1]);
        if (ir >= b->n_ids || dt >= b->n_ids) continue;
        uint32_t ci = b->id2cls[ir], cd = b->id2cls[dt];
        if (ci == LM_NONE || cd == LM_NONE || s->ckind[ci] != LL__K_IR) continue;
        s->dtype[ci] = s->dtype[cd];
    }
    return LM_OK;
}

typedef struct idx_node {
    int64_t index;
    uint32_t node;
} idx_node;

static int idx_cmp(const void *a, const void *b)
{
    const idx_node *x = a, *y = b;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Every node of code c sorted by its i64 child `field`, checked to number 0, 1, 2... */
static int collect_indexed(build *b, uint16_t c, uint32_t field, const char *what, idx_node **out,
                           uint32_t *count)
{
    ll_space *s = b->s;
    uint32_t n = 0;
    *out = NULL;
    *count = 0;
    for (uint32_t i = 0; i < s->nn; i++)
        n += s->code[i] == c;
    idx_node *v = ll__alloc(n, sizeof *v);
    if (!v) return ll__oom(b->err, "space");
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->nn; i++) {
        if (s->code[i] != c) continue;
        uint32_t fc = ll__kid(s, i, field);
        if (!ll__lit_is(s, fc, s->sort_i64)) {
            ll__free(v);
            return vfail(b, s->ser.nodes[i].eclass, i, "%s: the index is not an i64", what);
        }
        v[k++] = (idx_node){ll__lit_i64(s, fc), i};
    }
    qsort(v, n, sizeof *v, idx_cmp);
    for (uint32_t i = 0; i < n; i++)
        if (v[i].index != (int64_t)i) {
            uint32_t node = v[i].node;
            long long found = (long long)v[i].index;
            ll__free(v);
            return vfail(b, s->ser.nodes[node].eclass, node,
                         "%s indexes must be 0, 1, 2, ...; found %lld at position %u", what, found,
                         i);
        }
    *out = v;
    *count = n;
    return LM_OK;
}

static int read_dims(build *b)
{
    ll_space *s = b->s;
    idx_node *v;
    uint32_t n;
    int rc = collect_indexed(b, LL__C_DIM, 0, "Dim", &v, &n);
    if (rc) return rc;
    uint32_t nvar = 0;
    for (uint32_t i = 0; i < s->nn; i++)
        nvar += s->code[i] == LL__C_MVAR;
    s->dims = ll__zalloc((size_t)n + nvar, sizeof(ll__dim));
    if (!s->dims) {
        ll__free(v);
        return ll__oom(b->err, "space");
    }
    for (uint32_t i = 0; i < n && !rc; i++) {
        uint32_t node = v[i].node, cls = s->ser.nodes[node].eclass;
        uint32_t f[5];
        for (uint32_t k = 0; k < 5; k++)
            f[k] = ll__kid(s, node, k);
        if (!ll__lit_is(s, f[1], s->sort_str) || !ll__lit_is(s, f[2], s->sort_i64) ||
            !ll__lit_is(s, f[3], s->sort_i64) || !ll__lit_is(s, f[4], s->sort_i64)) {
            rc = vfail(b, cls, node, "Dim is (Dim index name lo hi profile)");
            break;
        }
        ll__dim *d = &s->dims[s->n_dims];
        d->name = eg_value_as_string(s->e, s->ser.class_value[f[1]]);
        d->lo = ll__lit_i64(s, f[2]);
        d->hi = ll__lit_i64(s, f[3]);
        d->profile = ll__lit_i64(s, f[4]);
        d->declared = true;
        if (!hl_var_name_valid(d->name))
            rc = vfail(b, cls, node, "Dim '%s': not a valid dim name", d->name);
        else if (d->lo < 1 || d->lo > d->hi || d->profile < d->lo || d->profile > d->hi)
            rc = vfail(b, cls, node, "Dim '%s': needs 1 <= lo <= profile <= hi, has lo %lld, hi "
                                     "%lld, profile %lld",
                       d->name, (long long)d->lo, (long long)d->hi, (long long)d->profile);
        for (uint32_t j = 0; j < s->n_dims && !rc; j++)
            if (strcmp(s->dims[j].name, d->name) == 0)
                rc = vfail(b, cls, node, "Dim '%s' is declared twice", d->name);
        if (!rc) s->n_dims++;
    }
    ll__free(v);
    /* names only an MVar gives (a graph Luminal encoded): the widest range, profiled at 1 */
    for (uint32_t i = 0; i < s->nn && !rc; i++) {
        if (s->code[i] != LL__C_MVAR) continue;
        uint32_t fc = ll__kid(s, i, 0);
        if (!ll__lit_is(s, fc, s->sort_str))
            return vfail(b, s->ser.nodes[i].eclass, i, "MVar's name is not a String");
        const char *name = eg_value_as_string(s->e, s->ser.class_value[fc]);
        bool known = false;
        for (uint32_t j = 0; j < s->n_dims && !known; j++)
            known = strcmp(s->dims[j].name, name) == 0;
        if (known) continue;
        if (!hl_var_name_valid(name))
            return vfail(b, s->ser.nodes[i].eclass, i, "MVar '%s': not a valid dim name", name);
        s->dims[s->n_dims++] = (ll__dim){name, 1, INT32_MAX, 1, false};
    }
    return rc;
}

static int read_inputs(build *b)
{
    ll_space *s = b->s;
    idx_node *v;
    uint32_t n;
    int rc = collect_indexed(b, ll_op_find("Input"), 0, "Input", &v, &n);
    if (rc) return rc;
    s->input_node = ll__alloc(n, sizeof(uint32_t));
    if (!s->input_node) {
        ll__free(v);
        return ll__oom(b->err, "space");
    }
    for (uint32_t i = 0; i < n; i++)
        s->input_node[i] = v[i].node;
    s->n_inputs = n;
    ll__free(v);
    return LM_OK;
}

/* ==================================================================================
 * Contexts, ops of kind classes, lengths of lists
 * ================================================================================== */

static uint8_t ctx_of_dialect(ll_dialect d)
{
    if (d == LL_D_KERNEL || d == LL_D_REGION || d == LL_D_LIBRARY) return LL__X_TOP;
    if (ll__interior(d)) return LL__X_REGION;
    return LL__X_NONE;
}

/* The context the inputs of a kind of dialect d are read in. */
static uint8_t input_ctx(ll_dialect d)
{
    return d == LL_D_KERNEL || d == LL_D_LIBRARY || d == LL_D_LOAD ? LL__X_TOP : LL__X_REGION;
}

static const char *ctx_name(uint8_t x)
{
    switch (x) {
    case LL__X_NONE:
        return "no context";
    case LL__X_TOP:
        return "top-level";
    case LL__X_REGION:
        return "region";
    case LL__X_SINK:
        return "sink";
    default:
        return "mixed";
    }
}

static bool backend_kind(const ll_space *s, uint32_t n)
{
    uint16_t c = s->code[n];
    if (c >= ll_op_count() || s->ser.nodes[n].subsumed) return false;
    ll_dialect d = ll_op_get(c)->dialect;
    return d != LL_D_IO && d != LL_D_HLIR;
}

static int kind_contexts(build *b)
{
    ll_space *s = b->s;
    for (uint32_t c = 0; c < s->nc; c++) {
        b->kind_op[c] = LL_OP_NONE;
        if (s->ckind[c] != LL__K_OPKIND) continue;
        uint32_t first = LM_NONE;
        for (uint32_t k = s->nstart[c]; k < s->nstart[c + 1]; k++) {
            uint32_t n = s->nlist[k];
            if (!backend_kind(s, n)) continue;
            if (first == LM_NONE) {
                first = n;
                b->kind_op[c] = s->code[n];
                s->ctx[c] = ctx_of_dialect(ll_op_get(s->code[n])->dialect);
            } else if (s->code[n] != s->code[first]) {
                return vfail(b, c, n,
                             "the OpKind class holds %s (n%u) and %s: a rule made two kinds equal; "
                             "an OpKind class is one op",
                             s->ser.nodes[first].op, first, s->ser.nodes[n].op);
            }
        }
    }
    return LM_OK;
}

/* The context of IR node n's own value (LL__X_NONE for an Op of an HLIR-only kind). */
static uint8_t ir_node_ctx(const build *b, uint32_t n)
{
    const ll_space *s = b->s;
    uint16_t c = s->code[n];
    if (c == LL__C_OP) return s->ctx[ll__kid(s, n, 0)];
    if (c < ll_op_count()) {
        const char *nm = ll_op_get(c)->name;
        return strcmp(nm, "Input") == 0 ? LL__X_TOP : LL__X_SINK;
    }
    return LL__X_NONE;
}

/* "Op FLoad" for an Op node (its kind's op), else the constructor. */
static const char *label(const build *b, uint32_t n, char *buf, size_t cap)
{
    const ll_space *s = b->s;
    if (s->code[n] != LL__C_OP) return s->ser.nodes[n].op;
    uint32_t op = b->kind_op[ll__kid(s, n, 0)];
    snprintf(buf, cap, "Op %s", op == LL_OP_NONE ? "?" : ll_op_get((ll_op)op)->name);
    return buf;
}

static int ir_contexts(build *b)
{
    ll_space *s = b->s;
    for (uint32_t c = 0; c < s->nc; c++) {
        if (s->ckind[c] != LL__K_IR) continue;
        uint32_t first = LM_NONE;
        for (uint32_t k = s->nstart[c]; k < s->nstart[c + 1]; k++) {
            uint32_t n = s->nlist[k];
            if (s->ser.nodes[n].subsumed) continue;
            uint8_t x = ir_node_ctx(b, n);
            if (x == LL__X_NONE) continue;
            if (first == LM_NONE) {
                first = n;
                s->ctx[c] = x;
            } else if (x != s->ctx[c]) {
                char l1[48], l2[48];
                return vfail(b, c, n,
                             "the class holds a %s node (n%u, %s) and a %s node (%s): a rule made a "
                             "region value equal to a stored tensor (docs/llir.md, fused regions)",
                             ctx_name(s->ctx[c]), first, label(b, first, l1, sizeof l1),
                             ctx_name(x), label(b, n, l2, sizeof l2));
            }
        }
    }
    return LM_OK;
}

enum { NEW = 0, BUSY = 1, DONE = 2 };

/* Length and entry context of IList class c (recursive over the list's tail; lists are
 * short). state per class. */
static int list_info(build *b, uint8_t *state, uint32_t c)
{
    ll_space *s = b->s;
    if (state[c] == DONE) return LM_OK;
    if (state[c] == BUSY) return vfail(b, c, LM_NONE, "the IList is cyclic");
    state[c] = BUSY;
    uint32_t len = LM_NONE;
    uint8_t x = LL__X_NONE;
    for (uint32_t k = s->nstart[c]; k < s->nstart[c + 1]; k++) {
        uint32_t n = s->nlist[k], l;
        uint8_t nx = LL__X_NONE;
        if (s->code[n] == LL__C_INIL) {
            l = 0;
        } else if (s->code[n] == LL__C_ICONS) {
            uint32_t rest = ll__kid(s, n, 1);
            int rc = list_info(b, state, rest);
            if (rc) return rc;
            l = s->len[rest] + 1;
            uint32_t head = ll__kid(s, n, 0);
            nx = s->ctx[head] | s->ctx[rest];
        } else {
            continue;
        }
        if (len == LM_NONE) {
            len = l;
            x = nx;
        } else if (len != l) {
            return vfail(b, c, n, "the IList class holds lists of %u and %u entries", len, l);
        } else {
            x |= nx;
        }
    }
    s->len[c] = len == LM_NONE ? 0 : len;
    s->ctx[c] = x;
    state[c] = DONE;
    return LM_OK;
}

static int list_contexts(build *b)
{
    ll_space *s = b->s;
    uint8_t *state = ll__zalloc(s->nc, 1);
    if (!state) return ll__oom(b->err, "space");
    int rc = LM_OK;
    for (uint32_t c = 0; c < s->nc && !rc; c++)
        if (s->ckind[c] == LL__K_ILIST) rc = list_info(b, state, c);
    ll__free(state);
    if (rc) return rc;
    /* every Op node's IList fits its kind: the entries' context and the count; an Output
     * reads a stored tensor, an OutputJoin sinks */
    ll_op op_out = ll_op_find("Output"), op_join = ll_op_find("OutputJoin");
    for (uint32_t n = 0; n < s->nn; n++) {
        if ((s->code[n] == op_out || s->code[n] == op_join) && !s->ser.nodes[n].subsumed) {
            uint8_t want = s->code[n] == op_out ? LL__X_TOP : LL__X_SINK;
            for (uint32_t k = 0; k < ll_op_get(s->code[n])->n_inputs; k++) {
                uint8_t x = s->ctx[ll__kid(s, n, k)];
                if (x != LL__X_NONE && x != want)
                    return vfail(b, s->ser.nodes[n].eclass, n, "%s reads class c%u, a %s class",
                                 s->ser.nodes[n].op, ll__kid(s, n, k), ctx_name(x));
            }
        }
        if (s->code[n] != LL__C_OP || s->ser.nodes[n].subsumed) continue;
        uint32_t kc = ll__kid(s, n, 0), lc = ll__kid(s, n, 1);
        ll_op op = b->kind_op[kc];
        if (op == LL_OP_NONE) continue; /* an HLIR node: the encoding's, checked by hlir */
        const ll_op_info *o = ll_op_get(op);
        uint8_t want = input_ctx(o->dialect);
        if (s->ctx[lc] != LL__X_NONE && s->ctx[lc] != want)
            return vfail(b, s->ser.nodes[n].eclass, n,
                         "(Op %s ...) reads %s values, but %s reads %s values (docs/llir.md)",
                         o->name, ctx_name(s->ctx[lc]), o->name, ctx_name(want));
        uint32_t kn = LM_NONE;
        for (uint32_t k = s->nstart[kc]; k < s->nstart[kc + 1] && kn == LM_NONE; k++)
            if (backend_kind(s, s->nlist[k])) kn = s->nlist[k];
        uint32_t want_n = ll__kind_inputs(s, kn);
        if (s->len[lc] != want_n)
            return vfail(b, s->ser.nodes[n].eclass, n, "%s takes %u inputs; its IList has %u",
                         o->name, want_n, s->len[lc]);
    }
    return LM_OK;
}

/* ==================================================================================
 * Candidates and heights
 * ================================================================================== */

/* Whether node n may be a choice of its (searchable) class, before heights. */
static bool candidate(build *b, uint32_t n)
{
    ll_space *s = b->s;
    const eg_snode *nd = &s->ser.nodes[n];
    uint16_t c = s->code[n];
    uint8_t k = s->ckind[nd->eclass];
    if (nd->subsumed) {
        s->stats.subsumed++;
        return false;
    }
    if (k == LL__K_OPKIND) {
        if (c >= ll_op_count()) return false;
        ll_dialect d = ll_op_get(c)->dialect;
        if (d == LL_D_HLIR) {
            s->stats.hlir_only++;
            return false;
        }
        if (d == LL_D_IO) return false;
    } else if (k == LL__K_IR) {
        if (c == LL__C_OP) {
            if (b->kind_op[ll__kid(s, n, 0)] == LL_OP_NONE) {
                s->stats.hlir_only++;
                return false;
            }
        } else if (c >= ll_op_count()) {
            return false;
        }
    } else if (c != LL__C_ICONS && c != LL__C_INIL) {
        return false;
    }
    /* every child that is not searchable has a canonical node */
    for (uint32_t j = 0; j < nd->nchildren; j++) {
        uint32_t cc = ll__kid(s, n, j);
        if (!searchable_kind(s->ckind[cc]) && s->canon[cc] == LM_NONE) {
            s->stats.pruned++;
            return false;
        }
    }
    return true;
}

static int heights(build *b)
{
    ll_space *s = b->s;
    const eg_serialized *ser = &s->ser;
    int rc = LM_OK;
    uint32_t *pending = ll__zalloc(s->nn, sizeof(uint32_t)); /* per node: child occurrences */
    uint32_t *val = ll__zalloc(s->nn, sizeof(uint32_t));     /* per node: max child height */
    uint32_t *ustart = ll__zalloc((size_t)s->nc + 1, sizeof(uint32_t)); /* uses per class */
    uint32_t *users = NULL, *pos = NULL;
    uint64_t *heap = NULL;
    uint32_t nuse = 0, nh = 0;
    if (!pending || !val || !ustart) goto oom;
    for (uint32_t n = 0; n < s->nn; n++) {
        if (!b->cand[n]) continue;
        for (uint32_t j = 0; j < ser->nodes[n].nchildren; j++) {
            uint32_t cc = ll__kid(s, n, j);
            if (!searchable_kind(s->ckind[cc])) continue;
            pending[n]++;
            ustart[cc + 1]++;
            nuse++;
        }
    }
    for (uint32_t c = 0; c < s->nc; c++)
        ustart[c + 1] += ustart[c];
    users = ll__alloc(nuse, sizeof(uint32_t));
    pos = ll__alloc(s->nc + 1, sizeof(uint32_t));
    heap = ll__alloc((size_t)s->nn + 1, sizeof(uint64_t));
    if (!users || !pos || !heap) goto oom;
    memcpy(pos, ustart, (s->nc + 1) * sizeof(uint32_t));
    for (uint32_t n = 0; n < s->nn; n++) {
        if (!b->cand[n]) continue;
        for (uint32_t j = 0; j < ser->nodes[n].nchildren; j++) {
            uint32_t cc = ll__kid(s, n, j);
            if (searchable_kind(s->ckind[cc])) users[pos[cc]++] = n;
        }
    }
    for (uint32_t c = 0; c < s->nc; c++) {
        b->height[c] = INF;
        s->canon[c] = searchable_kind(s->ckind[c]) ? LM_NONE : s->canon[c];
    }
    for (uint32_t n = 0; n < s->nn; n++)
        if (b->cand[n] && pending[n] == 0) ll__heap_push(heap, &nh, (uint64_t)1 << 32 | n);
    for (uint32_t done = 0; nh; done++) {
        if ((rc = over(b, "heights", done, s->nn, "nodes"))) goto done;
        uint64_t key = ll__heap_pop(heap, &nh);
        uint32_t n = (uint32_t)key, h = (uint32_t)(key >> 32);
        uint32_t c = ser->nodes[n].eclass;
        if (b->height[c] != INF) continue;
        b->height[c] = h;
        s->canon[c] = n; /* the safe choice, kept here until numbering */
        for (uint32_t u = ustart[c]; u < ustart[c + 1]; u++) {
            uint32_t m = users[u];
            if (h > val[m]) val[m] = h;
            if (--pending[m] == 0 && val[m] + 1 < INF)
                ll__heap_push(heap, &nh, (uint64_t)(val[m] + 1) << 32 | m);
        }
    }
    /* a candidate reading a class of no finite height is pruned (it could only be part of a
     * cycle) */
    for (uint32_t n = 0; n < s->nn; n++)
        if (b->cand[n] && pending[n] != 0) {
            b->cand[n] = 0;
            s->stats.pruned++;
        }
    goto done;
oom:
    rc = ll__oom(b->err, "space");
done:
    ll__free(pending);
    ll__free(val);
    ll__free(ustart);
    ll__free(users);
    ll__free(pos);
    ll__free(heap);
    return rc;
}

/* ==================================================================================
 * Numbering
 * ================================================================================== */

static int number(build *b)
{
    ll_space *s = b->s;
    const eg_serialized *ser = &s->ser;
    uint32_t ns = 0, nch = 0, nkid = 0;
    for (uint32_t c = 0; c < s->nc; c++) {
        s->sidx[c] = LM_NONE;
        if (!searchable_kind(s->ckind[c]) || b->height[c] == INF) continue;
        s->sidx[c] = ns++;
        for (uint32_t k = s->nstart[c]; k < s->nstart[c + 1]; k++) {
            uint32_t n = s->nlist[k];
            if (!b->cand[n]) continue;
            nch++;
            for (uint32_t j = 0; j < ser->nodes[n].nchildren; j++)
                nkid += searchable_kind(s->ckind[ll__kid(s, n, j)]);
        }
    }
    s->ns = ns;
    s->nch = nch;
    s->scls = ll__alloc(ns, sizeof(uint32_t));
    s->cstart = ll__alloc((size_t)ns + 1, sizeof(uint32_t));
    s->safe = ll__alloc(ns, sizeof(uint32_t));
    s->reach = ll__zalloc(ns, 1);
    s->cnode = ll__alloc(nch, sizeof(uint32_t));
    s->cop = ll__alloc(nch, sizeof(ll_op));
    s->kstart = ll__alloc((size_t)nch + 1, sizeof(uint32_t));
    s->kids = ll__alloc(nkid, sizeof(uint32_t));
    if (!s->scls || !s->cstart || !s->safe || !s->reach || !s->cnode || !s->cop || !s->kstart ||
        !s->kids)
        return ll__oom(b->err, "space");
    uint32_t si = 0, ci = 0, ki = 0;
    for (uint32_t c = 0; c < s->nc; c++) {
        if (s->sidx[c] == LM_NONE) continue;
        s->scls[si] = c;
        s->cstart[si] = ci;
        s->safe[si] = LM_NONE;
        for (uint32_t k = s->nstart[c]; k < s->nstart[c + 1]; k++) {
            uint32_t n = s->nlist[k];
            if (!b->cand[n]) continue;
            if (n == s->canon[c]) s->safe[si] = ci - s->cstart[si];
            s->cnode[ci] = n;
            uint16_t code = s->code[n];
            s->cop[ci] = code < ll_op_count() ? code
                         : code == LL__C_OP   ? (ll_op)b->kind_op[ll__kid(s, n, 0)]
                                              : LL_OP_NONE;
            s->kstart[ci] = ki;
            for (uint32_t j = 0; j < ser->nodes[n].nchildren; j++) {
                uint32_t cc = ll__kid(s, n, j);
                if (searchable_kind(s->ckind[cc])) s->kids[ki++] = s->sidx[cc];
            }
            ci++;
        }
        si++;
    }
    s->cstart[ns] = ci;
    s->kstart[nch] = ki;
    for (uint32_t c = 0; c < s->nc; c++)
        if (searchable_kind(s->ckind[c])) s->canon[c] = LM_NONE;
    return LM_OK;
}

/* ==================================================================================
 * The root, reachability, statistics
 * ================================================================================== */

static int root_fail(build *b, uint32_t rc_cls)
{
    const ll_space *s = b->s;
    char why[LM_ERR_MSG / 2];
    size_t o = 0;
    why[0] = 0;
    for (uint32_t k = s->nstart[rc_cls]; k < s->nstart[rc_cls + 1] && o < sizeof why - 64; k++) {
        uint32_t n = s->nlist[k];
        o += (size_t)snprintf(why + o, sizeof why - o, "%s n%u (%s)", o ? "," : "", n,
                              s->ser.nodes[n].op);
    }
    return vfail(b, rc_cls, LM_NONE,
                 "the root has no program left: every node of the class [%s] is subsumed, of an "
                 "HLIR kind with no backend alternative, or reads a class with no program "
                 "(a cleanup rule removed the last alternative)",
                 why);
}

static void reach_and_stats(build *b)
{
    ll_space *s = b->s;
    uint32_t *stack = b->height; /* reused: no longer needed */
    uint32_t top = 0;
    s->reach[s->root_s] = 1;
    stack[top++] = s->root_s;
    while (top) {
        uint32_t c = stack[--top];
        for (uint32_t j = s->cstart[c]; j < s->cstart[c + 1]; j++)
            for (uint32_t k = s->kstart[j]; k < s->kstart[j + 1]; k++) {
                uint32_t d = s->kids[k];
                if (!s->reach[d]) {
                    s->reach[d] = 1;
                    stack[top++] = d;
                }
            }
    }
    s->stats.classes = s->nc;
    s->stats.searchable = s->ns;
    s->stats.choices = s->nch;
    for (uint32_t c = 0; c < s->ns; c++) {
        uint32_t n = s->cstart[c + 1] - s->cstart[c];
        if (!s->reach[c]) continue;
        s->stats.reachable++;
        if (n > 1) s->stats.decisions++;
        s->stats.log2_programs += log2((double)n);
    }
    /* alternatives are counted where they are chosen: in IR classes (an OpKind class's
     * node is the same alternative again) */
    for (uint32_t c = 0; c < s->ns; c++) {
        if (s->ckind[s->scls[c]] != LL__K_IR) continue;
        for (uint32_t j = s->cstart[c]; j < s->cstart[c + 1]; j++) {
            if (s->cop[j] == LL_OP_NONE) continue;
            s->op_counts[s->cop[j]]++;
            s->stats.per_dialect[ll_op_get(s->cop[j])->dialect]++;
        }
    }
}

/* ==================================================================================
 * Entry points
 * ================================================================================== */

static int build_space(build *b, eg_value root)
{
    ll_space *s = b->s;
    eg_engine *e = s->e;
    b->sort_ir = eg_sort_lookup(e, "IR");
    b->sort_ilist = eg_sort_lookup(e, "IList");
    b->sort_opkind = eg_sort_lookup(e, "OpKind");
    b->sort_expr = eg_sort_lookup(e, "Expression");
    b->sort_elist = eg_sort_lookup(e, "EList");
    b->sort_dtype = eg_sort_lookup(e, "DType");
    b->sort_dim = eg_sort_lookup(e, "DimDecl");
    s->sort_i64 = eg_sort_lookup(e, "i64");
    s->sort_f64 = eg_sort_lookup(e, "f64");
    s->sort_str = eg_sort_lookup(e, "String");
    if (b->sort_ir < 0 || b->sort_ilist < 0 || b->sort_opkind < 0 || b->sort_expr < 0 ||
        b->sort_elist < 0 || b->sort_dtype < 0)
        return ll__fail(b->err, LM_EARG, NULL,
                        "space: the engine does not hold the encoding's sorts (hlir/encode.egg)");
    int rc = ll__eg_serialize(e, root, b->sort_ir, &s->ser, b->err);
    if (rc) return rc;
    if (s->ser.n_roots != 1)
        return ll__fail(b->err, LM_EARG, NULL, "space: the root value is not an IR class of the "
                                               "engine");
    s->nc = s->ser.n_classes;
    s->nn = s->ser.n_nodes;
    s->root_class = s->ser.roots[0];
    s->code = ll__alloc(s->nn, sizeof(uint16_t));
    s->ckind = ll__alloc(s->nc, 1);
    s->dtype = ll__alloc(s->nc, 1);
    s->ctx = ll__zalloc(s->nc, 1);
    s->len = ll__zalloc(s->nc, sizeof(uint32_t));
    s->canon = ll__alloc(s->nc, sizeof(uint32_t));
    s->sidx = ll__alloc(s->nc, sizeof(uint32_t));
    s->nstart = ll__zalloc((size_t)s->nc + 1, sizeof(uint32_t));
    s->nlist = ll__alloc(s->nn, sizeof(uint32_t));
    s->op_counts = ll__zalloc(ll_op_count(), sizeof(uint32_t));
    b->cand = ll__alloc(s->nn, 1);
    b->height = ll__alloc(s->nc, sizeof(uint32_t));
    b->kind_op = ll__alloc(s->nc, sizeof(uint32_t));
    if (!s->code || !s->ckind || !s->dtype || !s->ctx || !s->len || !s->canon || !s->sidx ||
        !s->nstart || !s->nlist || !s->op_counts || !b->cand || !b->height ||
        !b->kind_op)
        return ll__oom(b->err, "space");
    if ((rc = over(b, "serialize", 0, s->nc, "classes"))) return rc;
    if ((rc = assign_codes(b))) return rc;
    if ((rc = index_classes(b))) return rc;
    if ((rc = over(b, "canonical nodes", 0, s->nc, "classes"))) return rc;
    if ((rc = choose_canonical(b))) return rc;
    if ((rc = read_dtypes(b))) return rc;
    if ((rc = read_dims(b))) return rc;
    if ((rc = read_inputs(b))) return rc;
    if ((rc = over(b, "contexts", 0, s->nc, "classes"))) return rc;
    if ((rc = kind_contexts(b))) return rc;
    if ((rc = ir_contexts(b))) return rc;
    if ((rc = list_contexts(b))) return rc;
    for (uint32_t n = 0; n < s->nn; n++) {
        if ((rc = over(b, "choices", n, s->nn, "nodes"))) return rc;
        b->cand[n] = searchable_kind(s->ckind[s->ser.nodes[n].eclass]) && candidate(b, n);
    }
    if ((rc = heights(b))) return rc;
    if (!b->skip_dtype_check && (rc = ll__space_dtype_check(s, b->deadline, b->err))) return rc;
    if ((rc = over(b, "numbering", 0, s->nc, "classes"))) return rc;
    if (s->ctx[s->root_class] != LL__X_SINK)
        return vfail(b, s->root_class, LM_NONE,
                     "the root is not an Output or OutputJoin class (it is %s)",
                     ctx_name(s->ctx[s->root_class]));
    if (b->height[s->root_class] == INF) return root_fail(b, s->root_class);
    if ((rc = number(b))) return rc;
    s->root_s = s->sidx[s->root_class];
    reach_and_stats(b);
    if ((rc = over(b, "kinds' fields", 0, s->nc, "classes"))) return rc;
    return ll__check_kinds(s, b->err, b->deadline);
}

ll_space *ll_space_new(eg_engine *e, eg_value root, lm_err *err)
{
    return ll_space_new_opts(e, root, NULL, err);
}

ll_space *ll_space_new_opts(eg_engine *e, eg_value root, const ll_space_opts *o, lm_err *err)
{
    if (!e) {
        ll__fail(err, LM_EARG, NULL, "ll_space_new: no engine");
        return NULL;
    }
    ll_space *s = ll__zalloc(1, sizeof *s);
    if (!s) {
        ll__oom(err, "space");
        return NULL;
    }
    s->e = e;
    build b = {.s = s,
               .err = err,
               .skip_dtype_check = o && o->skip_dtype_check,
               .deadline = o ? o->deadline_s : 0};
    int rc = build_space(&b, root);
    ll__free(b.id2cls);
    ll__free(b.cand);
    ll__free(b.height);
    ll__free(b.kind_op);
    if (rc) {
        ll_space_free(s);
        return NULL;
    }
    return s;
}

void ll_space_free(ll_space *s)
{
    if (!s) return;
    eg_serialized_free(&s->ser);
    ll__free(s->code);
    ll__free(s->ckind);
    ll__free(s->dtype);
    ll__free(s->ctx);
    ll__free(s->len);
    ll__free(s->canon);
    ll__free(s->sidx);
    ll__free(s->nstart);
    ll__free(s->nlist);
    ll__free(s->scls);
    ll__free(s->cstart);
    ll__free(s->safe);
    ll__free(s->reach);
    ll__free(s->cnode);
    ll__free(s->cop);
    ll__free(s->kstart);
    ll__free(s->kids);
    ll__free(s->dims);
    ll__free(s->input_node);
    ll__free(s->op_counts);
    ll__free(s);
}
