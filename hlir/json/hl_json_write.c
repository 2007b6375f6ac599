/* hl_json_write.c - the JSON graph writer: a graph in canonical form.
 *
 * The canonical form (docs/graph-json.md) is the graph's primitives exactly: the dims;
 * the inputs in order; every other node except outputs, in id order, named "%k" where
 * k is its canonical number (inputs are 0..ni-1, then the nodes, then the outputs); each
 * node input written as an explicit view; the outputs as {name, tensor, shape, strides}.
 * One array element per line, each element printed compactly by jansson with keys in a
 * fixed order, so the bytes depend only on the graph. Reading the text gives nodes in
 * canonical-number order, so a graph read from canonical text writes the same bytes.
 */
#include "json/hl_json_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct wbuf {
    char *p;
    size_t len, cap;
    bool failed;
} wbuf;

static void put(wbuf *b, const char *s)
{
    if (b->failed) return;
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *q = hl__realloc(b->p, cap, 1);
        if (!q) {
            b->failed = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

/* Appends the compact dump of v (and drops v). */
static void put_json(wbuf *b, json_t *v)
{
    if (!v) {
        b->failed = true;
        return;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(9) | JSON_ENSURE_ASCII);
    json_decref(v);
    if (!s) {
        b->failed = true;
        return;
    }
    put(b, s);
    free(s);
}

static json_t *expr_json(const hl_expr_pool *p, hl_expr e)
{
    int64_t v;
    if (hl_e_is_num(p, e, &v)) return json_integer((json_int_t)v);
    size_t need = hl_e_print(p, e, NULL, 0);
    char *s = hl__alloc(need + 1, 1);
    if (!s) return NULL;
    hl_e_print(p, e, s, need + 1);
    json_t *j = json_string(s);
    hl__free(s);
    return j;
}

static json_t *exprs_json(const hl_expr_pool *p, uint32_t n, const hl_expr *es)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, expr_json(p, es[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* The shortest decimal that reads back as x (as f32), as a JSON value. */
static json_t *float_json(float x)
{
    if (isnan(x)) return json_string("nan");
    if (isinf(x)) return json_string(x > 0 ? "inf" : "-inf");
    char buf[32];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)x);
        if (strtof(buf, NULL) == x) break;
    }
    return json_real(strtod(buf, NULL));
}

/* An input's initialisation, {"uniform": [lo, hi]}: float bounds (f32 values) as the
 * shortest decimal that reads back to them, integer bounds as integers. */
static json_t *init_json(hl_dtype dt, const hl_init *init)
{
    json_t *lo, *hi;
    if (hl_dtype_is_float(dt)) {
        lo = float_json((float)init->lo);
        hi = float_json((float)init->hi);
    } else {
        lo = json_integer((json_int_t)init->lo);
        hi = json_integer((json_int_t)init->hi);
    }
    return json_pack("{s:[o,o]}", "uniform", lo, hi);
}

static const char *prim_json_name(hl_op op)
{
    switch (op) {
    case HL_OP_CONSTANT:
        return "constant";
    case HL_OP_IOTA:
        return "iota";
    case HL_OP_CAST:
        return "cast";
    case HL_OP_EXP2:
        return "exp2";
    case HL_OP_LOG2:
        return "log2";
    case HL_OP_SIN:
        return "sin";
    case HL_OP_RECIP:
        return "recip";
    case HL_OP_SQRT:
        return "sqrt";
    case HL_OP_ADD:
        return "add";
    case HL_OP_MUL:
        return "mul";
    case HL_OP_MOD:
        return "mod";
    case HL_OP_LESS_THAN:
        return "less_than";
    case HL_OP_GATHER:
        return "gather";
    case HL_OP_SCATTER:
        return "scatter";
    case HL_OP_SUM_REDUCE:
        return "sum_reduce";
    case HL_OP_MAX_REDUCE:
        return "max_reduce";
    default:
        return NULL;
    }
}

typedef struct writer {
    const hl_graph *g;
    const hl_expr_pool *p;
    uint32_t *num; /* canonical number of each node id */
} writer;

/* The name a node is referred to by: an input's own name, else "%k". */
static json_t *ref_name(const writer *w, uint32_t id)
{
    const hl_node *n = hl_graph_node(w->g, id);
    if (n->op == HL_OP_INPUT) return json_string(n->name);
    char buf[16];
    snprintf(buf, sizeof buf, "%%%u", w->num[id]);
    return json_string(buf);
}

static json_t *view_json(const writer *w, const hl_in *in)
{
    json_t *o = json_object();
    if (!o) return NULL;
    if (json_object_set_new(o, "tensor", ref_name(w, in->node)) ||
        json_object_set_new(o, "shape", exprs_json(w->p, in->view.ndim, in->view.dims)) ||
        json_object_set_new(o, "strides", exprs_json(w->p, in->view.ndim, in->view.strides))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *node_json(const writer *w, uint32_t id)
{
    const hl_node *n = hl_graph_node(w->g, id);
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = json_object_set_new(o, "name", ref_name(w, id));
    bad |= json_object_set_new(o, "op", json_string(prim_json_name(n->op)));
    if (n->n_in) {
        json_t *ins = json_array();
        for (uint32_t j = 0; ins && j < n->n_in; j++)
            bad |= json_array_append_new(ins, view_json(w, &n->in[j]));
        bad |= json_object_set_new(o, "inputs", ins);
    }
    switch (n->op) {
    case HL_OP_CONSTANT:
        bad |= json_object_set_new(o, "value", float_json(n->constant));
        break;
    case HL_OP_IOTA:
        bad |= json_object_set_new(o, "expr", expr_json(w->p, n->iota_expr));
        bad |= json_object_set_new(o, "len", expr_json(w->p, n->iota_len));
        break;
    case HL_OP_CAST:
        bad |= json_object_set_new(o, "dtype", json_string(hl_dtype_name(n->cast_to)));
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        bad |= json_object_set_new(o, "axis", json_integer(n->axis));
        break;
    default:
        break;
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static void write_all(wbuf *b, const writer *w, const uint32_t *order, uint32_t ni, uint32_t nn,
                      uint32_t no)
{
    const hl_graph *g = w->g;
    put(b, "{\n  \"format\": \"luminal-graph\",\n  \"version\": 1,\n  \"dims\": [");
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        put(b, i ? ",\n    " : "\n    ");
        put_json(b, json_pack("{s:s, s:I, s:I, s:I}", "name", hl_var_name(w->p, d->var), "min",
                              (json_int_t)d->lo, "max", (json_int_t)d->hi, "profile",
                              (json_int_t)d->profile));
    }
    put(b, hl_graph_dim_count(g) ? "\n  ],\n  \"inputs\": [" : "],\n  \"inputs\": [");
    for (uint32_t i = 0; i < ni; i++) {
        const hl_node *n = hl_graph_node(g, order[i]);
        put(b, i ? ",\n    " : "\n    ");
        json_t *o = json_pack("{s:s, s:s, s:o}", "name", n->name, "dtype", hl_dtype_name(n->dtype),
                              "shape", exprs_json(w->p, n->ndim, n->shape));
        hl_init init = hl_graph_input_init(g, i);
        if (o && init.kind == HL_INIT_UNIFORM &&
            json_object_set_new(o, "init", init_json(n->dtype, &init)) != 0) {
            json_decref(o);
            o = NULL;
        }
        put_json(b, o);
    }
    put(b, ni ? "\n  ],\n  \"nodes\": [" : "],\n  \"nodes\": [");
    for (uint32_t i = 0; i < nn; i++) {
        put(b, i ? ",\n    " : "\n    ");
        put_json(b, node_json(w, order[ni + i]));
    }
    put(b, nn ? "\n  ],\n  \"outputs\": [" : "],\n  \"outputs\": [");
    for (uint32_t i = 0; i < no; i++) {
        const hl_node *n = hl_graph_node(g, order[ni + nn + i]);
        put(b, i ? ",\n    " : "\n    ");
        json_t *o = view_json(w, &n->in[0]);
        json_t *named = o ? json_pack("{s:s}", "name", n->name) : NULL;
        if (named && json_object_update(named, o) != 0) {
            json_decref(named);
            named = NULL;
        }
        json_decref(o);
        put_json(b, named);
    }
    put(b, no ? "\n  ]\n}\n" : "]\n}\n");
}

char *hl_graph_write_json(const hl_graph *g, lm_err *err)
{
    if (hl_graph_error(g)->code != HL_OK) {
        hl__fail(err, HL_ERR_ARG, NULL, "cannot write a graph that holds a builder error: %s",
                 hl_graph_error(g)->msg);
        return NULL;
    }
    uint32_t total = hl_graph_node_count(g);
    uint32_t ni = hl_graph_input_count(g), no = hl_graph_output_count(g);
    if (no == 0) { /* the format requires one, so the text would not read back */
        hl__fail(err, HL_ERR_ARG, NULL,
                 "cannot write a graph without outputs (mark one "
                 "with hl_output)");
        return NULL;
    }
    writer w = {g, hl_graph_exprs_c(g), hl__alloc(total, sizeof(uint32_t))};
    uint32_t *order = hl__alloc(total, sizeof(uint32_t));
    char *out = NULL;
    if (!w.num || !order) {
        hl__fail(err, HL_ERR_NOMEM, NULL, "out of memory writing the graph");
        goto done;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < ni; i++) {
        uint32_t id = hl_graph_input(g, i);
        const char *name = hl_graph_node(g, id)->name;
        if (!hl__json_name_valid(name) || name[0] == '%') {
            lm_loc at = {.node = name, .node_id = id};
            hl__fail(err, HL_ERR_ARG, &at,
                     "input %u's name \"%.40s\" cannot be written (names are 1-63 characters "
                     "of [A-Za-z0-9_.-], not starting with %%)",
                     i, name);
            goto done;
        }
        order[k++] = id;
    }
    for (uint32_t id = 0; id < total; id++) {
        hl_op op = hl_graph_node(g, id)->op;
        if (op != HL_OP_INPUT && op != HL_OP_OUTPUT) order[k++] = id;
    }
    uint32_t nn = k - ni;
    for (uint32_t i = 0; i < no; i++) {
        uint32_t id = hl_graph_output(g, i);
        const char *name = hl_graph_node(g, id)->name;
        if (!hl__json_name_valid(name)) {
            lm_loc at = {.node = name, .node_id = id};
            hl__fail(err, HL_ERR_ARG, &at,
                     "output %u's name \"%.40s\" cannot be written (1-63 characters of "
                     "[A-Za-z0-9_.%%-])",
                     i, name);
            goto done;
        }
        order[k++] = id;
    }
    if (k != total) {
        hl__fail(err, HL_ERR_ARG, NULL,
                 "graph lists %u inputs and %u outputs of %u nodes "
                 "inconsistently",
                 ni, no, total);
        goto done;
    }
    for (uint32_t i = 0; i < total; i++)
        w.num[order[i]] = i;
    wbuf b = {NULL, 0, 0, false};
    write_all(&b, &w, order, ni, nn, no);
    if (b.failed) {
        hl__free(b.p);
        hl__fail(err, HL_ERR_NOMEM, NULL, "out of memory writing the graph");
        goto done;
    }
    out = b.p;
done:
    hl__free(w.num);
    hl__free(order);
    return out;
}

hl_status hl_graph_fwrite_json(const hl_graph *g, FILE *f, lm_err *err)
{
    char *s = hl_graph_write_json(g, err);
    if (!s) return err ? err->code : HL_ERR_NOMEM;
    size_t n = strlen(s);
    bool ok = fwrite(s, 1, n, f) == n && fflush(f) == 0;
    free(s);
    if (!ok) return hl__fail(err, HL_ERR_IO, NULL, "cannot write the graph: write failed");
    return HL_OK;
}
