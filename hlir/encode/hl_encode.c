/* hl_encode.c - an HLIR graph written into the e-graph (docs/encoding.md).
 *
 * One walker, two sinks. The walker visits the dims, then the nodes in Kahn order (the
 * ready node of lowest id first), then the root; for each it builds the term of one
 * command in a small term buffer and hands the command to a sink:
 *
 *   text sink    prints "(let tK <term>)" / "(set (dtype tK) <term>)" lines;
 *   engine sink  evaluates the same term tree with eg_add_term / eg_set, arguments left
 *                to right and depth first.
 *
 * The engine evaluates program text in exactly that order (eg__eval: arguments left to
 * right, then the node), and e-class ids are handed out in evaluation order, so the two
 * paths give the same ids and the same serialized bytes. That is why terms are trees
 * here and never shared sub-results: the text repeats sub-terms, so the C path must
 * visit them the same way (hash-consing makes the repeats free).
 */
#include "encode/hl_encode_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* ==================================================================================
 * Term buffer: the term of one command, as a tree of dense indices
 * ================================================================================== */

typedef enum { TM_APP, TM_I64, TM_F64, TM_STR, TM_REF } tm_kind;

typedef struct tm {
    uint8_t kind;   /* tm_kind */
    uint8_t nargs;  /* TM_APP: number of arguments */
    uint16_t ctor;  /* TM_APP: the constructor */
    uint32_t first; /* TM_APP: arguments are args[first .. first+nargs) */
    union {
        int64_t i;     /* TM_I64 */
        double f;      /* TM_F64 */
        const char *s; /* TM_STR: borrowed from the graph or its pool */
        uint32_t ref;  /* TM_REF: the node whose global tK this names */
    } v;
} tm;

typedef struct tbuf {
    tm *t;
    uint32_t n, cap;
    uint32_t *args;
    uint32_t nargs, capargs;
    bool oom; /* sticky: a push failed; every later push returns 0 */
} tbuf;

static void tb_reset(tbuf *b)
{
    b->n = b->nargs = 0;
}

static void tb_fini(tbuf *b)
{
    hl__free(b->t);
    hl__free(b->args);
    memset(b, 0, sizeof *b);
}

static uint32_t tb_push(tbuf *b, tm x)
{
    if (b->oom || hl__grow((void **)&b->t, &b->cap, b->n + 1, sizeof(tm)) != 0) {
        b->oom = true;
        return 0;
    }
    b->t[b->n] = x;
    return b->n++;
}

static uint32_t tb_app(tbuf *b, hl_enc_ctor c, const uint32_t *kids)
{
    uint32_t n = hl_enc_vocab[c].arity;
    if (b->oom || hl__grow((void **)&b->args, &b->capargs, b->nargs + n, sizeof(uint32_t))) {
        b->oom = true;
        return 0;
    }
    tm x = {.kind = TM_APP, .nargs = (uint8_t)n, .ctor = (uint16_t)c, .first = b->nargs};
    for (uint32_t i = 0; i < n; i++)
        b->args[b->nargs++] = kids[i];
    return tb_push(b, x);
}

static uint32_t tb_app0(tbuf *b, hl_enc_ctor c)
{
    return tb_app(b, c, NULL);
}
static uint32_t tb_app1(tbuf *b, hl_enc_ctor c, uint32_t a)
{
    return tb_app(b, c, &a);
}
static uint32_t tb_app2(tbuf *b, hl_enc_ctor c, uint32_t a0, uint32_t a1)
{
    uint32_t k[2] = {a0, a1};
    return tb_app(b, c, k);
}
static uint32_t tb_i64(tbuf *b, int64_t v)
{
    return tb_push(b, (tm){.kind = TM_I64, .v.i = v});
}
static uint32_t tb_f64(tbuf *b, double v)
{
    if (v == 0) v = 0.0; /* the engine keeps one zero (eg_value_f64); so does the text */
    return tb_push(b, (tm){.kind = TM_F64, .v.f = v});
}
static uint32_t tb_str(tbuf *b, const char *s)
{
    return tb_push(b, (tm){.kind = TM_STR, .v.s = s});
}
static uint32_t tb_ref(tbuf *b, uint32_t node)
{
    return tb_push(b, (tm){.kind = TM_REF, .v.ref = node});
}

/* An expression as a term: MNum, MVar, MIter and the binary constructors. */
static uint32_t tb_expr(tbuf *b, const hl_expr_pool *p, hl_expr e)
{
    hl_expr_node x = hl_e_get(p, e);
    switch (x.kind) {
    case HL_E_NUM:
        return tb_app1(b, HL_ENC_MNUM, tb_i64(b, x.value));
    case HL_E_VAR:
        return tb_app1(b, HL_ENC_MVAR, tb_str(b, hl_var_name(p, x.var)));
    case HL_E_Z:
        return tb_app0(b, HL_ENC_MITER);
    default: {
        uint32_t l = tb_expr(b, p, x.a);
        uint32_t r = tb_expr(b, p, x.b);
        return tb_app2(b, hl_enc_of_expr(x.kind), l, r);
    }
    }
}

/* (ECons e0 (ECons e1 ... (ENil))) */
static uint32_t tb_elist(tbuf *b, const hl_expr_pool *p, uint32_t n, const hl_expr *es)
{
    uint32_t items[HL_MAX_DIMS];
    for (uint32_t i = 0; i < n; i++)
        items[i] = tb_expr(b, p, es[i]);
    uint32_t cur = tb_app0(b, HL_ENC_ENIL);
    for (uint32_t i = n; i-- > 0;)
        cur = tb_app2(b, HL_ENC_ECONS, items[i], cur);
    return cur;
}

static uint32_t tb_dtype(tbuf *b, hl_dtype t)
{
    return tb_app0(b, hl_enc_of_dtype(t));
}

/* ==================================================================================
 * Sinks
 * ================================================================================== */

typedef enum { G_DIM = 'd', G_NODE = 't', G_ROOT = 'r' } gkind;

typedef struct sink sink;
struct sink {
    /* (let <k><i> term): k is G_DIM or G_NODE with index i, or G_ROOT */
    hl_status (*let)(sink *s, gkind k, uint32_t i, const tbuf *b, uint32_t term);
    /* (set (fn arg) val) */
    hl_status (*set)(sink *s, hl_enc_ctor fn, const tbuf *b, uint32_t arg, uint32_t val);
    lm_err *err;
};

/* ---- the text sink ---- */

typedef struct tsink {
    sink base;
    char *p;
    size_t len, cap;
    bool oom;
} tsink;

static void put(tsink *s, const char *str, size_t n)
{
    if (s->oom) return;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *q = hl__realloc(s->p, cap, 1);
        if (!q) {
            s->oom = true;
            return;
        }
        s->p = q;
        s->cap = cap;
    }
    memcpy(s->p + s->len, str, n);
    s->len += n;
    s->p[s->len] = 0;
}

static void put_cstr(tsink *s, const char *str)
{
    put(s, str, strlen(str));
}

/* Doubles print so that the reader gives back the same bits: 17 significant digits and
 * always a '.' or an exponent (a bare integer would read as an i64). */
static void put_f64(tsink *s, double d)
{
    char buf[40];
    if (isnan(d)) {
        put_cstr(s, "NaN");
        return;
    }
    if (isinf(d)) {
        put_cstr(s, d < 0 ? "-inf" : "inf");
        return;
    }
    snprintf(buf, sizeof buf, "%.17g", d);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    put_cstr(s, buf);
}

static void put_str(tsink *s, const char *str)
{
    put(s, "\"", 1);
    for (const char *c = str; *c; c++) {
        if (*c == '"' || *c == '\\') {
            char esc[2] = {'\\', *c};
            put(s, esc, 2);
        } else if (*c == '\n') {
            put(s, "\\n", 2);
        } else if (*c == '\t') {
            put(s, "\\t", 2);
        } else {
            put(s, c, 1);
        }
    }
    put(s, "\"", 1);
}

static void put_term(tsink *s, const tbuf *b, uint32_t t)
{
    const tm *x = &b->t[t];
    char buf[32];
    switch (x->kind) {
    case TM_I64:
        snprintf(buf, sizeof buf, "%" PRId64, x->v.i);
        put_cstr(s, buf);
        break;
    case TM_F64:
        put_f64(s, x->v.f);
        break;
    case TM_STR:
        put_str(s, x->v.s);
        break;
    case TM_REF:
        snprintf(buf, sizeof buf, "t%" PRIu32, x->v.ref);
        put_cstr(s, buf);
        break;
    case TM_APP:
        put(s, "(", 1);
        put_cstr(s, hl_enc_vocab[x->ctor].name);
        for (uint32_t i = 0; i < x->nargs; i++) {
            put(s, " ", 1);
            put_term(s, b, b->args[x->first + i]);
        }
        put(s, ")", 1);
        break;
    }
}

static hl_status tsink_let(sink *sk, gkind k, uint32_t i, const tbuf *b, uint32_t term)
{
    tsink *s = (tsink *)sk;
    char buf[48];
    if (k == G_ROOT)
        snprintf(buf, sizeof buf, "(let root ");
    else
        snprintf(buf, sizeof buf, "(let %c%" PRIu32 " ", (char)k, i);
    put_cstr(s, buf);
    put_term(s, b, term);
    put_cstr(s, ")\n");
    return s->oom ? hl__fail(sk->err, HL_ERR_NOMEM, NULL, "encode: out of memory") : HL_OK;
}

static hl_status tsink_set(sink *sk, hl_enc_ctor fn, const tbuf *b, uint32_t arg, uint32_t val)
{
    tsink *s = (tsink *)sk;
    put_cstr(s, "(set (");
    put_cstr(s, hl_enc_vocab[fn].name);
    put(s, " ", 1);
    put_term(s, b, arg);
    put_cstr(s, ") ");
    put_term(s, b, val);
    put_cstr(s, ")\n");
    return s->oom ? hl__fail(sk->err, HL_ERR_NOMEM, NULL, "encode: out of memory") : HL_OK;
}

/* ---- the engine sink ---- */

typedef struct esink {
    sink base;
    eg_engine *e;
    int table[HL_ENC_COUNT]; /* table id of every constructor and function */
    hl_encoding *enc;        /* node_class is filled as nodes are let */
} esink;

/* The code for an engine's refusal: out of memory stays out of memory (the engine is
 * now failed), anything else means the encoding asked for something the engine refused. */
static hl_status engine_code(const lm_err *ee)
{
    return ee->code == LM_ENOMEM ? HL_ERR_NOMEM : HL_ERR_ARG;
}

static hl_status eval(esink *s, const tbuf *b, uint32_t t, eg_value *out)
{
    const tm *x = &b->t[t];
    switch (x->kind) {
    case TM_I64:
        *out = eg_value_i64(x->v.i);
        return HL_OK;
    case TM_F64:
        *out = eg_value_f64(x->v.f);
        return HL_OK;
    case TM_STR: {
        lm_err ee = {0};
        if (eg_value_string(s->e, x->v.s, out, &ee) != 0)
            return hl__fail(s->base.err, engine_code(&ee), NULL,
                            "encode: the e-graph rejected a string: %s", ee.msg);
        return HL_OK;
    }
    case TM_REF:
        *out = s->enc->node_class[x->v.ref];
        return HL_OK;
    case TM_APP:
        break;
    }
    eg_value vals[8];
    for (uint32_t i = 0; i < x->nargs; i++) {
        hl_status st = eval(s, b, b->args[x->first + i], &vals[i]);
        if (st) return st;
    }
    lm_err ee = {0};
    if (eg_add_term(s->e, s->table[x->ctor], vals, x->nargs, out, &ee) != 0)
        return hl__fail(s->base.err, engine_code(&ee), NULL, "encode: the e-graph rejected a %s term: %s",
                        hl_enc_vocab[x->ctor].name, ee.msg);
    return HL_OK;
}

static hl_status esink_let(sink *sk, gkind k, uint32_t i, const tbuf *b, uint32_t term)
{
    esink *s = (esink *)sk;
    eg_value v;
    hl_status st = eval(s, b, term, &v);
    if (st) return st;
    if (k == G_NODE)
        s->enc->node_class[i] = v;
    else if (k == G_ROOT)
        s->enc->root = v;
    return HL_OK;
}

static hl_status esink_set(sink *sk, hl_enc_ctor fn, const tbuf *b, uint32_t arg, uint32_t val)
{
    esink *s = (esink *)sk;
    eg_value a, v;
    hl_status st = eval(s, b, arg, &a);
    if (!st) st = eval(s, b, val, &v);
    if (st) return st;
    lm_err ee = {0};
    if (eg_set(s->e, s->table[fn], &a, 1, v, &ee) != 0)
        return hl__fail(sk->err, engine_code(&ee), NULL,
                        "encode: the e-graph rejected (set (%s ...)): %s", hl_enc_vocab[fn].name,
                        ee.msg);
    return HL_OK;
}

/* ==================================================================================
 * The walker
 * ================================================================================== */

/* Kahn order of g's nodes, lowest ready id first, into order[0 .. n). Creation order is
 * already topological, so this is the id order for every graph the builder makes; it
 * is computed, not assumed, so that the promise survives any future reordering. */
static hl_status kahn_order(const hl_graph *g, uint32_t *order, lm_err *err)
{
    uint32_t n = hl_graph_node_count(g);
    uint32_t *indeg = hl__zalloc(n, sizeof(uint32_t));
    uint32_t *ustart = hl__zalloc((size_t)n + 1, sizeof(uint32_t));
    uint32_t *heap = hl__alloc(n, sizeof(uint32_t));
    uint32_t nedges = 0;
    for (uint32_t i = 0; i < n; i++)
        nedges += hl_graph_node(g, i)->n_in;
    uint32_t *users = hl__alloc(nedges, sizeof(uint32_t));
    hl_status st = HL_OK;
    if (!indeg || !ustart || !heap || !users) {
        st = hl__fail(err, HL_ERR_NOMEM, NULL, "encode: out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        const hl_node *x = hl_graph_node(g, i);
        indeg[i] = x->n_in;
        for (uint32_t k = 0; k < x->n_in; k++)
            ustart[x->in[k].node + 1]++;
    }
    for (uint32_t i = 0; i < n; i++)
        ustart[i + 1] += ustart[i];
    uint32_t *pos = hl__alloc(n, sizeof(uint32_t));
    if (!pos) {
        st = hl__fail(err, HL_ERR_NOMEM, NULL, "encode: out of memory");
        goto done;
    }
    memcpy(pos, ustart, n * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        const hl_node *x = hl_graph_node(g, i);
        for (uint32_t k = 0; k < x->n_in; k++)
            users[pos[x->in[k].node]++] = i;
    }
    hl__free(pos);
    uint32_t nh = 0, nout = 0;
    for (uint32_t i = 0; i < n; i++)
        if (indeg[i] == 0) hl__heap_push(heap, &nh, i);
    while (nh) {
        uint32_t v = hl__heap_pop(heap, &nh);
        order[nout++] = v;
        for (uint32_t k = ustart[v]; k < ustart[v + 1]; k++)
            if (--indeg[users[k]] == 0) hl__heap_push(heap, &nh, users[k]);
    }
    if (nout != n)
        st = hl__fail(err, HL_ERR_ARG, NULL,
                      "encode: the graph has a cycle (%u of %u nodes ordered)", nout, n);
done:
    hl__free(indeg);
    hl__free(ustart);
    hl__free(heap);
    hl__free(users);
    return st;
}

/* The IR term of node id. */
static hl_status node_term(const hl_graph *g, uint32_t id, tbuf *b, uint32_t *out, lm_err *err)
{
    *out = 0;
    hl_expr_pool *p = hl_graph_exprs((hl_graph *)g); /* adds contiguous strides only */
    const hl_node *x = hl_graph_node(g, id);
    const hl_view *v0 = x->n_in > 0 ? &x->in[0].view : NULL;
    if (x->op == HL_OP_INPUT) {
        uint32_t k[4] = {tb_i64(b, x->index), tb_str(b, x->name), tb_dtype(b, x->dtype),
                         tb_elist(b, p, x->ndim, x->shape)};
        *out = tb_app(b, HL_ENC_INPUT, k);
        return HL_OK;
    }
    if (x->op == HL_OP_OUTPUT) {
        uint32_t k[5] = {tb_ref(b, x->in[0].node), tb_i64(b, x->index), tb_str(b, x->name),
                         tb_elist(b, p, v0->ndim, v0->dims), tb_elist(b, p, v0->ndim, v0->strides)};
        *out = tb_app(b, HL_ENC_OUTPUT, k);
        return HL_OK;
    }
    hl_view outv;
    hl_status st = hl_view_contiguous(p, x->ndim, x->shape, &outv, err);
    if (st) return st;
    hl_enc_ctor c = hl_enc_of_op(x->op);
    uint32_t k[5], kind;
    if (hl_op_is_elementwise(x->op)) { /* dims, each input's strides, the output's strides */
        uint32_t ar = hl_op_arity(x->op), j = 0;
        k[j++] = tb_elist(b, p, v0->ndim, v0->dims);
        for (uint32_t i = 0; i < ar; i++)
            k[j++] = tb_elist(b, p, x->in[i].view.ndim, x->in[i].view.strides);
        k[j++] = tb_elist(b, p, outv.ndim, outv.strides);
        if (x->op == HL_OP_CAST) k[j] = tb_dtype(b, x->cast_to);
    } else switch (x->op) {
    case HL_OP_CONSTANT:
        k[0] = tb_f64(b, (double)x->constant);
        break;
    case HL_OP_IOTA:
        k[0] = tb_expr(b, p, x->iota_expr);
        k[1] = tb_expr(b, p, x->iota_len);
        break;
    case HL_OP_GATHER:
        k[0] = tb_elist(b, p, v0->ndim, v0->dims);
        k[1] = tb_elist(b, p, v0->ndim, v0->strides);
        k[2] = tb_elist(b, p, x->in[1].view.ndim, x->in[1].view.dims);
        k[3] = tb_elist(b, p, x->in[1].view.ndim, x->in[1].view.strides);
        break;
    case HL_OP_SCATTER:
        k[0] = tb_elist(b, p, v0->ndim, v0->dims);
        k[1] = tb_elist(b, p, v0->ndim, v0->strides);
        k[2] = tb_elist(b, p, x->in[1].view.ndim, x->in[1].view.dims);
        k[3] = tb_elist(b, p, x->in[1].view.ndim, x->in[1].view.strides);
        k[4] = tb_elist(b, p, x->in[2].view.ndim, x->in[2].view.strides);
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE: {
        hl_expr dims[HL_MAX_DIMS], strides[HL_MAX_DIMS];
        uint32_t n = 0;
        for (uint32_t d = 0; d < v0->ndim; d++)
            if (d != x->axis) {
                dims[n] = v0->dims[d];
                strides[n++] = v0->strides[d];
            }
        k[0] = tb_elist(b, p, n, dims);
        k[1] = tb_expr(b, p, v0->dims[x->axis]);
        k[2] = tb_elist(b, p, n, strides);
        k[3] = tb_expr(b, p, v0->strides[x->axis]);
        k[4] = tb_elist(b, p, outv.ndim, outv.strides);
        break;
    }
    default:
        return hl__fail_node(g, err, HL_ERR_ARG, id, x->op, "encode: unknown op %d", (int)x->op);
    }
    kind = tb_app(b, c, k);
    uint32_t list = tb_app0(b, HL_ENC_INIL);
    for (uint32_t i = x->n_in; i-- > 0;)
        list = tb_app2(b, HL_ENC_ICONS, tb_ref(b, x->in[i].node), list);
    *out = tb_app2(b, HL_ENC_OP, kind, list);
    return HL_OK;
}

static hl_status walk(const hl_graph *g, sink *s, lm_err *err)
{
    const lm_err *ge = hl_graph_error(g);
    if (ge->code != HL_OK)
        return hl__fail(err, HL_ERR_ARG, NULL,
                        "encode: the graph holds a builder error (%s); fix it first", ge->msg);
    uint32_t nout = hl_graph_output_count(g), n = hl_graph_node_count(g);
    if (nout == 0)
        return hl__fail(err, HL_ERR_ARG, NULL,
                        "encode: the graph has no outputs, so there is nothing to compute");
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    tbuf b = {0};
    hl_status st = HL_OK;
    uint32_t *order = hl__alloc(n, sizeof(uint32_t));
    if (!order) {
        st = hl__fail(err, HL_ERR_NOMEM, NULL, "encode: out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < hl_graph_dim_count(g) && !st; i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        const char *name = hl_var_name(p, d->var);
        tb_reset(&b);
        uint32_t k[5] = {tb_i64(&b, i), tb_str(&b, name), tb_i64(&b, d->lo), tb_i64(&b, d->hi),
                         tb_i64(&b, d->profile)};
        uint32_t t = tb_app(&b, HL_ENC_DIM, k);
        uint32_t var = tb_app1(&b, HL_ENC_MVAR, tb_str(&b, name));
        uint32_t lo = tb_i64(&b, d->lo), hi = tb_i64(&b, d->hi);
        if (b.oom) break;
        st = s->let(s, G_DIM, i, &b, t);
        if (!st) st = s->set(s, HL_ENC_FN_LOWER, &b, var, lo);
        if (!st) st = s->set(s, HL_ENC_FN_UPPER, &b, var, hi);
    }
    if (!st && !b.oom) st = kahn_order(g, order, err);
    for (uint32_t i = 0; i < n && !st && !b.oom; i++) {
        uint32_t id = order[i], t;
        tb_reset(&b);
        st = node_term(g, id, &b, &t, err);
        if (st || b.oom) break;
        uint32_t self = tb_ref(&b, id), dt = tb_dtype(&b, hl_graph_node(g, id)->dtype);
        if (b.oom) break;
        st = s->let(s, G_NODE, id, &b, t);
        if (!st) st = s->set(s, HL_ENC_FN_DTYPE, &b, self, dt);
    }
    if (!st && !b.oom) {
        tb_reset(&b);
        uint32_t cur = tb_ref(&b, hl_graph_output(g, nout - 1));
        for (uint32_t i = nout - 1; i-- > 0;)
            cur = tb_app2(&b, HL_ENC_OUTPUTJOIN, tb_ref(&b, hl_graph_output(g, i)), cur);
        if (!b.oom) st = s->let(s, G_ROOT, 0, &b, cur);
    }
    if (!st && b.oom) st = hl__fail(err, HL_ERR_NOMEM, NULL, "encode: out of memory");
done:
    hl__free(order);
    tb_fini(&b);
    return st;
}

/* ==================================================================================
 * Public entry points
 * ================================================================================== */

hl_status hl_encode_declare(eg_engine *e, lm_err *err)
{
    if (!e) return hl__fail(err, HL_ERR_ARG, NULL, "encode: no engine given");
    uint32_t found = 0;
    for (int c = 0; c < HL_ENC_COUNT; c++)
        found += eg_table_lookup(e, hl_enc_vocab[c].name) >= 0;
    if (found == 0) {
        lm_err ee = {0};
        if (eg_run_text(e, hl_encode_schema(), "hlir/encode/encode.egg", &ee) != 0 ||
            eg_run_text(e, hl_encode_dtype_rules(), "hlir/encode/encode_dtype.egg", &ee) != 0)
            return hl__fail(err, engine_code(&ee), NULL, "encode: the schema did not load: %s",
                            ee.msg);
        return HL_OK;
    }
    for (int c = 0; c < HL_ENC_COUNT; c++) {
        int t = eg_table_lookup(e, hl_enc_vocab[c].name);
        if (t < 0 || eg_table_arity(e, t) != hl_enc_vocab[c].arity)
            return hl__fail(err, HL_ERR_ARG, NULL,
                            "encode: the engine already declares some of the encoding's names, "
                            "but %s is %s; load hlir/encode/encode.egg whole or not at all",
                            hl_enc_vocab[c].name,
                            t < 0 ? "missing" : "declared with another arity");
    }
    return HL_OK;
}

void hl_encoding_fini(hl_encoding *enc)
{
    if (!enc) return;
    hl__free(enc->node_class);
    memset(enc, 0, sizeof *enc);
}

hl_status hl_graph_encode(const hl_graph *g, eg_engine *e, hl_encoding *out, lm_err *err)
{
    memset(out, 0, sizeof *out);
    hl_status st = hl_encode_declare(e, err);
    if (st) return st;
    esink s = {.base = {esink_let, esink_set, err}, .e = e, .enc = out};
    for (int c = 0; c < HL_ENC_COUNT; c++)
        s.table[c] = eg_table_lookup(e, hl_enc_vocab[c].name);
    out->n_nodes = hl_graph_node_count(g);
    out->node_class = hl__zalloc(out->n_nodes, sizeof(eg_value));
    if (!out->node_class) {
        out->n_nodes = 0;
        return hl__fail(err, HL_ERR_NOMEM, NULL, "encode: out of memory");
    }
    st = walk(g, &s.base, err);
    if (st) hl_encoding_fini(out);
    return st;
}

char *hl_graph_encode_text(const hl_graph *g, bool with_schema, lm_err *err)
{
    tsink s = {.base = {tsink_let, tsink_set, err}};
    if (with_schema) {
        put_cstr(&s, hl_encode_schema());
        put_cstr(&s, hl_encode_dtype_rules());
    }
    put_cstr(&s, ""); /* an empty graph text is "" rather than NULL */
    hl_status st = walk(g, &s.base, err);
    if (!st && s.oom) st = hl__fail(err, HL_ERR_NOMEM, NULL, "encode: out of memory");
    if (st) {
        hl__free(s.p);
        return NULL;
    }
    return s.p;
}

hl_status hl_graph_fprint_egraph(const hl_graph *g, FILE *f, lm_err *err)
{
    lm_err local;
    lm_err_clear(&local);
    char *text = hl_graph_encode_text(g, true, err ? err : &local);
    if (!text) return err ? err->code : local.code;
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n && fflush(f) == 0;
    hl__free(text);
    return ok ? HL_OK : hl__fail(err, HL_ERR_IO, NULL, "encode: writing the e-graph failed");
}
