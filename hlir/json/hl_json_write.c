/* hl_json_write.c - the JSON graph writer: a graph in canonical form, through base's
 * one JSON writer (lm_json.h).
 *
 * The canonical form (docs/graph-json.md) is the graph's primitives exactly: the dims;
 * the inputs in order; every other node except outputs, in id order, named "%k" where
 * k is its canonical number (inputs are 0..ni-1, then the nodes, then the outputs); each
 * node input written as an explicit view; the outputs as {name, tensor, shape, strides}.
 * One array element per line, each element printed compactly with keys in a fixed order,
 * so the bytes depend only on the graph. Reading the text gives nodes in
 * canonical-number order, so a graph read from canonical text writes the same bytes.
 */
#include "json/hl_json_int.h"
#include "lm_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* An expression: an integer when it is a number, else its text. */
static void expr_json(lm_json *j, const hl_expr_pool *p, hl_expr e)
{
    int64_t v;
    if (hl_e_is_num(p, e, &v)) {
        lm_json_int(j, v);
        return;
    }
    size_t need = hl_e_print(p, e, NULL, 0);
    char *s = hl__alloc(need + 1, 1);
    if (!s) {
        lm_json_fail(j, LM_ENOMEM, "out of memory printing an expression");
        return;
    }
    hl_e_print(p, e, s, need + 1);
    lm_json_str(j, s);
    hl__free(s);
}

static void exprs_json(lm_json *j, const char *key, const hl_expr_pool *p, uint32_t n,
                       const hl_expr *es)
{
    lm_json_key(j, key);
    lm_json_arr(j);
    for (uint32_t i = 0; i < n; i++)
        expr_json(j, p, es[i]);
    lm_json_arr_end(j);
}

/* The shortest decimal that reads back as x (as f32), or "nan", "inf", "-inf". */
static void float_json(lm_json *j, float x)
{
    if (isnan(x))
        lm_json_str(j, "nan");
    else if (isinf(x))
        lm_json_str(j, x > 0 ? "inf" : "-inf");
    else
        lm_json_f32(j, x);
}

/* An input's initialisation, {"uniform": [lo, hi]}: float bounds (f32 values) as the
 * shortest decimal that reads back to them, integer bounds as integers. */
static void init_json(lm_json *j, hl_dtype dt, const hl_init *init)
{
    lm_json_key(j, "init");
    lm_json_obj(j);
    lm_json_key(j, "uniform");
    lm_json_arr(j);
    if (hl_dtype_is_float(dt)) {
        float_json(j, (float)init->lo);
        float_json(j, (float)init->hi);
    } else {
        lm_json_int(j, (int64_t)init->lo);
        lm_json_int(j, (int64_t)init->hi);
    }
    lm_json_arr_end(j);
    lm_json_obj_end(j);
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
    lm_json *j;
} writer;

/* The name a node is referred to by: an input's own name, else "%k". */
static void ref_name(const writer *w, const char *key, uint32_t id)
{
    const hl_node *n = hl_graph_node(w->g, id);
    lm_json_key(w->j, key);
    if (n->op == HL_OP_INPUT) {
        lm_json_str(w->j, n->name);
        return;
    }
    char buf[16];
    snprintf(buf, sizeof buf, "%%%u", w->num[id]);
    lm_json_str(w->j, buf);
}

/* An input's view, {"tensor", "shape", "strides"} (the members only). */
static void view_json(const writer *w, const hl_in *in)
{
    ref_name(w, "tensor", in->node);
    exprs_json(w->j, "shape", w->p, in->view.ndim, in->view.dims);
    exprs_json(w->j, "strides", w->p, in->view.ndim, in->view.strides);
}

static void node_json(const writer *w, uint32_t id)
{
    lm_json *j = w->j;
    const hl_node *n = hl_graph_node(w->g, id);
    lm_json_obj(j);
    ref_name(w, "name", id);
    const char *op = prim_json_name(n->op);
    if (!op) lm_json_fail(j, LM_EARG, "node %u (%s) is not a primitive", id, hl_op_name(n->op));
    lm_json_kstr(j, "op", op);
    if (n->n_in) {
        lm_json_key(j, "inputs");
        lm_json_arr(j);
        for (uint32_t k = 0; k < n->n_in; k++) {
            lm_json_obj(j);
            view_json(w, &n->in[k]);
            lm_json_obj_end(j);
        }
        lm_json_arr_end(j);
    }
    switch (n->op) {
    case HL_OP_CONSTANT:
        lm_json_key(j, "value");
        float_json(j, n->constant);
        break;
    case HL_OP_IOTA:
        lm_json_key(j, "expr");
        expr_json(j, w->p, n->iota_expr);
        lm_json_key(j, "len");
        expr_json(j, w->p, n->iota_len);
        break;
    case HL_OP_CAST:
        lm_json_kstr(j, "dtype", hl_dtype_name(n->cast_to));
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        lm_json_kint(j, "axis", n->axis);
        break;
    default:
        break;
    }
    lm_json_obj_end(j);
}

/* The document: the outer object and its lists on lines (indent 2), each list's
 * elements compact on a line of their own. */
static void write_all(const writer *w, const uint32_t *order, uint32_t ni, uint32_t nn,
                      uint32_t no)
{
    const hl_graph *g = w->g;
    lm_json *j = w->j;
    lm_json_obj(j);
    lm_json_kstr(j, "format", "luminal-graph");
    lm_json_kint(j, "version", 1);
    lm_json_key(j, "dims");
    lm_json_arr(j);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        lm_json_obj(j);
        lm_json_kstr(j, "name", hl_var_name(w->p, d->var));
        lm_json_kint(j, "min", d->lo);
        lm_json_kint(j, "max", d->hi);
        lm_json_kint(j, "profile", d->profile);
        lm_json_obj_end(j);
    }
    lm_json_arr_end(j);
    lm_json_key(j, "inputs");
    lm_json_arr(j);
    for (uint32_t i = 0; i < ni; i++) {
        const hl_node *n = hl_graph_node(g, order[i]);
        lm_json_obj(j);
        lm_json_kstr(j, "name", n->name);
        lm_json_kstr(j, "dtype", hl_dtype_name(n->dtype));
        exprs_json(j, "shape", w->p, n->ndim, n->shape);
        hl_init init = hl_graph_input_init(g, i);
        if (init.kind == HL_INIT_UNIFORM) init_json(j, n->dtype, &init);
        lm_json_obj_end(j);
    }
    lm_json_arr_end(j);
    lm_json_key(j, "nodes");
    lm_json_arr(j);
    for (uint32_t i = 0; i < nn; i++)
        node_json(w, order[ni + i]);
    lm_json_arr_end(j);
    lm_json_key(j, "outputs");
    lm_json_arr(j);
    for (uint32_t i = 0; i < no; i++) {
        const hl_node *n = hl_graph_node(g, order[ni + nn + i]);
        lm_json_obj(j);
        lm_json_kstr(j, "name", n->name);
        view_json(w, &n->in[0]);
        lm_json_obj_end(j);
    }
    lm_json_arr_end(j);
    lm_json_obj_end(j);
    lm_json_raw(j, "\n");
}

/* Appends the ids of g's inputs (or outputs) to order[*k ..], checking that each name
 * can be written: an input's name is a tensor name that does not begin with '%' (the
 * canonical names of the other nodes), an output's any tensor name. */
static hl_status order_io(const hl_graph *g, bool outputs, uint32_t *order, uint32_t *k,
                          lm_err *err)
{
    uint32_t n = outputs ? hl_graph_output_count(g) : hl_graph_input_count(g);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = outputs ? hl_graph_output(g, i) : hl_graph_input(g, i);
        const char *name = hl_graph_node(g, id)->name;
        if (!hl__json_name_valid(name) || (!outputs && name[0] == '%')) {
            lm_loc at = {.node = name, .node_id = id};
            return hl__fail(err, HL_ERR_ARG, &at, "%s %u's name \"%.40s\" cannot be written (%s)",
                            outputs ? "output" : "input", i, name,
                            outputs ? "1-63 characters of [A-Za-z0-9_.%-]"
                                    : "names are 1-63 characters of [A-Za-z0-9_.-], not "
                                      "starting with %");
        }
        order[(*k)++] = id;
    }
    return HL_OK;
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
    lm_json j;
    lm_json_init_buf(&j, 2, 2);
    writer w = {g, hl_graph_exprs_c(g), hl__alloc(total, sizeof(uint32_t)), &j};
    uint32_t *order = hl__alloc(total, sizeof(uint32_t));
    char *out = NULL;
    if (!w.num || !order) {
        hl__fail(err, HL_ERR_NOMEM, NULL, "out of memory writing the graph");
        goto done;
    }
    uint32_t k = 0;
    if (order_io(g, false, order, &k, err)) goto done;
    for (uint32_t id = 0; id < total; id++) {
        hl_op op = hl_graph_node(g, id)->op;
        if (op != HL_OP_INPUT && op != HL_OP_OUTPUT) order[k++] = id;
    }
    uint32_t nn = k - ni;
    if (order_io(g, true, order, &k, err)) goto done;
    if (k != total) {
        hl__fail(err, HL_ERR_ARG, NULL,
                 "graph lists %u inputs and %u outputs of %u nodes "
                 "inconsistently",
                 ni, no, total);
        goto done;
    }
    for (uint32_t i = 0; i < total; i++)
        w.num[order[i]] = i;
    write_all(&w, order, ni, nn, no);
    lm_err je = {0};
    out = lm_json_take(&j, NULL, &je);
    if (!out && je.code == LM_ENOMEM)
        hl__fail(err, HL_ERR_NOMEM, NULL, "out of memory writing the graph");
    else if (!out)
        hl__fail(err, je.code, NULL, "cannot write the graph: %s", je.msg);
done:
    lm_json_close(&j, NULL); /* frees the text of a writer that stopped early */
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
