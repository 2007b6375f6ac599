/* hl_json_ops.c - the JSON graph reader's op table: one document node -> builder calls.
 *
 * Each op of docs/graph-json.md has a row: its name, how many inputs it takes, which
 * attribute fields it accepts, and (for Luminal's primitives) the primitive it is. A node
 * whose inputs are all names goes through the builder's function for the op (with
 * broadcasting); a primitive node with at least one view object goes through
 * hl_graph_add exactly as written. The table is the single place that says which fields
 * an op accepts, so unknown fields are rejected uniformly.
 */
#include "json/hl_json_int.h"

#include <math.h>
#include <stdio.h>

typedef enum jop {
    J_NEG,
    J_EXP,
    J_LOG,
    J_EXP2,
    J_LOG2,
    J_SIN,
    J_COS,
    J_SQRT,
    J_RECIP,
    J_SIGMOID,
    J_SILU,
    J_TANH,
    J_RELU,
    J_CONTIGUOUS,
    J_GELU,
    J_ADD,
    J_SUB,
    J_MUL,
    J_DIV,
    J_MOD,
    J_MAXIMUM,
    J_MINIMUM,
    J_LT,
    J_GT,
    J_LE,
    J_GE,
    J_EQ,
    J_NE,
    J_WHERE,
    J_CAST,
    J_CONSTANT,
    J_IOTA,
    J_ARANGE,
    J_SUM,
    J_MAX,
    J_MEAN,
    J_SUM_REDUCE,
    J_MAX_REDUCE,
    J_SOFTMAX,
    J_LOG_SOFTMAX,
    J_LAYER_NORM,
    J_RMS_NORM,
    J_MATMUL,
    J_EMBEDDING,
    J_GATHER,
    J_SCATTER,
    J_CAUSAL_MASK,
    J_ATTENTION,
    J_ROPE,
    J_PERMUTE,
    J_TRANSPOSE,
    J_RESHAPE,
    J_EXPAND,
    J_BROADCAST_TO,
    J_SLICE,
    J_PAD,
    J_CONCAT
} jop;

struct op_row {
    const char *name;
    jop op;
    uint8_t min_in, max_in;
    int prim;          /* the hl_op for primitives, -1 otherwise */
    const char *attrs; /* accepted attribute fields, space-separated */
};
typedef struct op_row op_row;

#define P(x) ((int)(x))
static const op_row OPS[] = {
    {"neg", J_NEG, 1, 1, -1, ""},
    {"exp", J_EXP, 1, 1, -1, ""},
    {"log", J_LOG, 1, 1, -1, ""},
    {"exp2", J_EXP2, 1, 1, P(HL_OP_EXP2), ""},
    {"log2", J_LOG2, 1, 1, P(HL_OP_LOG2), ""},
    {"sin", J_SIN, 1, 1, P(HL_OP_SIN), ""},
    {"cos", J_COS, 1, 1, -1, ""},
    {"sqrt", J_SQRT, 1, 1, P(HL_OP_SQRT), ""},
    {"recip", J_RECIP, 1, 1, P(HL_OP_RECIP), ""},
    {"sigmoid", J_SIGMOID, 1, 1, -1, ""},
    {"silu", J_SILU, 1, 1, -1, ""},
    {"tanh", J_TANH, 1, 1, -1, ""},
    {"relu", J_RELU, 1, 1, -1, ""},
    {"contiguous", J_CONTIGUOUS, 1, 1, -1, ""},
    {"gelu", J_GELU, 1, 1, -1, "approximate"},
    {"add", J_ADD, 2, 2, P(HL_OP_ADD), ""},
    {"sub", J_SUB, 2, 2, -1, ""},
    {"mul", J_MUL, 2, 2, P(HL_OP_MUL), ""},
    {"div", J_DIV, 2, 2, -1, ""},
    {"mod", J_MOD, 2, 2, P(HL_OP_MOD), ""},
    {"maximum", J_MAXIMUM, 2, 2, -1, ""},
    {"minimum", J_MINIMUM, 2, 2, -1, ""},
    {"less_than", J_LT, 2, 2, P(HL_OP_LESS_THAN), ""},
    {"greater_than", J_GT, 2, 2, -1, ""},
    {"less_equal", J_LE, 2, 2, -1, ""},
    {"greater_equal", J_GE, 2, 2, -1, ""},
    {"equal", J_EQ, 2, 2, -1, ""},
    {"not_equal", J_NE, 2, 2, -1, ""},
    {"where", J_WHERE, 3, 3, -1, ""},
    {"cast", J_CAST, 1, 1, P(HL_OP_CAST), "dtype"},
    {"constant", J_CONSTANT, 0, 0, -1, "value dtype shape"},
    {"iota", J_IOTA, 0, 0, -1, "expr len"},
    {"arange", J_ARANGE, 0, 0, -1, "n dtype"},
    {"sum", J_SUM, 1, 1, -1, "axes keepdim"},
    {"max", J_MAX, 1, 1, -1, "axes keepdim"},
    {"mean", J_MEAN, 1, 1, -1, "axes keepdim"},
    {"sum_reduce", J_SUM_REDUCE, 1, 1, P(HL_OP_SUM_REDUCE), "axis"},
    {"max_reduce", J_MAX_REDUCE, 1, 1, P(HL_OP_MAX_REDUCE), "axis"},
    {"softmax", J_SOFTMAX, 1, 1, -1, "axis"},
    {"log_softmax", J_LOG_SOFTMAX, 1, 1, -1, "axis"},
    {"layer_norm", J_LAYER_NORM, 1, 3, -1, "eps"},
    {"rms_norm", J_RMS_NORM, 1, 2, -1, "eps"},
    {"matmul", J_MATMUL, 2, 2, -1, ""},
    {"embedding", J_EMBEDDING, 2, 2, -1, ""},
    {"gather", J_GATHER, 2, 2, P(HL_OP_GATHER), ""},
    {"scatter", J_SCATTER, 3, 3, P(HL_OP_SCATTER), ""},
    {"causal_mask", J_CAUSAL_MASK, 0, 0, -1, "n dtype"},
    {"attention", J_ATTENTION, 3, 3, -1, "causal scale"},
    {"rope", J_ROPE, 1, 1, -1, "base offset"},
    {"permute", J_PERMUTE, 1, 1, -1, "axes"},
    {"transpose", J_TRANSPOSE, 1, 1, -1, "axes"},
    {"reshape", J_RESHAPE, 1, 1, -1, "shape"},
    {"expand", J_EXPAND, 1, 1, -1, "axis size"},
    {"broadcast_to", J_BROADCAST_TO, 1, 1, -1, "shape"},
    {"slice", J_SLICE, 1, 1, -1, "axis start end"},
    {"pad", J_PAD, 1, 1, -1, "axis before after value"},
    {"concat", J_CONCAT, 2, 2, -1, "axis"},
};
#undef P

static const op_row *find_op(const char *name)
{
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (strcmp(OPS[i].name, name) == 0) return &OPS[i];
    return NULL;
}

/* Turns the builder's sticky error into the reader's, naming the node, the fields the
 * builder was given (the inputs and the op's attributes) and the op. */
static hl_status builder_failed(hl__json_reader *r, const struct op_row *row)
{
    const lm_err *ge = hl_graph_error(r->g);
    hl_status code = ge->code ? ge->code : HL_ERR_NOMEM;
    char fields[96] = "inputs";
    size_t len = strlen(fields);
    for (const char *a = row->attrs; *a && len + 4 < sizeof fields; a++) {
        if (a == row->attrs || a[-1] == ' ') {
            memcpy(fields + len, ", ", 2);
            len += 2;
        }
        if (*a != ' ') fields[len++] = *a;
    }
    fields[len] = 0;
    const char *msg = ge->code ? hl__graph_error_reason(r->g) : "out of memory";
    size_t n = strlen(row->name);
    if (strncmp(msg, row->name, n) == 0 && (msg[n] == ':' || msg[n] == ' ')) /* named the op */
        return hl__json_fail(r, code, fields, "%s", msg);
    return hl__json_fail(r, code, fields, "%s: %s", row->name, msg);
}

hl_status hl__json_from_builder(hl__json_reader *r, const char *field)
{
    const lm_err *ge = hl_graph_error(r->g);
    if (!ge->code) return hl__json_fail(r, HL_ERR_NOMEM, field, "out of memory");
    return hl__json_fail(r, ge->code, field, "%s", hl__graph_error_reason(r->g));
}

hl_status hl__json_view(hl__json_reader *r, json_t *obj, const char *label, hl_view *v)
{
    hl_status st = hl__json_check_keys(r, obj, "tensor shape strides name comment");
    if (st) return st;
    uint32_t nd = 0, ns = 0;
    hl_expr dims[HL_MAX_DIMS], strides[HL_MAX_DIMS];
    char f[64];
    json_t *shape = json_object_get(obj, "shape"), *str = json_object_get(obj, "strides");
    if (!shape || !str)
        return hl__json_fail(r, HL_ERR_PARSE, label, "a view needs both \"shape\" and \"strides\"");
    /* Read through a wrapper object so labels say e.g. inputs[1].shape[0]. */
    snprintf(f, sizeof f, "%s.shape", label);
    json_t *tmp = json_pack("{sO}", f, shape);
    if (!tmp) return hl__json_fail(r, HL_ERR_NOMEM, label, "out of memory");
    st = hl__json_get_exprs(r, tmp, f, false, &nd, dims);
    json_decref(tmp);
    if (st) return st;
    snprintf(f, sizeof f, "%s.strides", label);
    tmp = json_pack("{sO}", f, str);
    if (!tmp) return hl__json_fail(r, HL_ERR_NOMEM, label, "out of memory");
    st = hl__json_get_exprs(r, tmp, f, true, &ns, strides);
    json_decref(tmp);
    if (st) return st;
    if (nd != ns)
        return hl__json_fail(r, HL_ERR_SHAPE, label, "%u sizes but %u strides (one stride per dim)",
                             nd, ns);
    snprintf(f, sizeof f, "%s.shape", label);
    if ((st = hl__json_check_dims(r, f, nd, dims))) return st;
    memset(v, 0, sizeof *v);
    v->ndim = nd;
    for (uint32_t i = 0; i < nd; i++) {
        v->dims[i] = dims[i];
        v->strides[i] = strides[i];
    }
    return HL_OK;
}

/* A primitive node written with explicit views: one hl_graph_add. */
static hl_status build_primitive(hl__json_reader *r, hl__json_node *n, const op_row *row, hl_t *out)
{
    hl_node spec;
    memset(&spec, 0, sizeof spec);
    spec.op = (hl_op)row->prim;
    spec.n_in = n->n_ref;
    hl_status st;
    for (uint32_t j = 0; j < n->n_ref; j++) {
        hl_t h = hl__json_ref_handle(r, &n->refs[j]);
        spec.in[j].node = h.node;
        if (n->refs[j].view) {
            char label[32];
            snprintf(label, sizeof label, "inputs[%u]", j);
            if ((st = hl__json_view(r, n->refs[j].view, label, &spec.in[j].view))) return st;
            if ((st = hl__json_check_view_bounds(r, label, &spec.in[j].view, h.node))) return st;
        } else {
            spec.in[j].view = h.view;
        }
    }
    if (row->op == J_CAST) {
        if ((st = hl__json_get_dtype(r, n->obj, "dtype", false, HL_F32, &spec.cast_to))) return st;
        spec.dtype = spec.cast_to;
    }
    if (row->op == J_SUM_REDUCE || row->op == J_MAX_REDUCE) {
        int64_t a;
        int nd = (int)spec.in[0].view.ndim;
        if ((st = hl__json_get_int(r, n->obj, "axis", false, 0, -nd, nd - 1, &a))) return st;
        spec.axis = (uint32_t)(a < 0 ? a + nd : a);
    }
    uint32_t id = hl_graph_add(r->g, &spec);
    if (id == HL_NONE) return builder_failed(r, row);
    const hl_node *made = hl_graph_node(r->g, id);
    out->node = id;
    out->dtype = made->dtype;
    lm_err e;
    lm_err_clear(&e);
    if (hl_view_contiguous(hl_graph_exprs(r->g), made->ndim, made->shape, &out->view, &e))
        return hl__json_fail(r, e.code, NULL, "%s: %s", row->name, e.msg);
    return HL_OK;
}

/* Reads "axes" of permute: a permutation of 0..ndim-1 (negative axes count from the end). */
static hl_status get_perm(hl__json_reader *r, hl__json_node *n, uint32_t ndim, uint32_t *perm)
{
    int axes[HL_MAX_DIMS];
    uint32_t na = 0;
    hl_status st = hl__json_get_axes(r, n->obj, "axes", &na, axes);
    if (st) return st;
    if (na != ndim)
        return hl__json_fail(r, HL_ERR_ARG, "axes", "%u axes for a tensor of %u dims", na, ndim);
    bool used[HL_MAX_DIMS] = {false};
    for (uint32_t i = 0; i < na; i++) {
        int a = hl__axis(axes[i], ndim);
        if (a < 0 || used[a])
            return hl__json_fail(r, HL_ERR_ARG, "axes", "not a permutation of 0..%u",
                                 ndim ? ndim - 1 : 0);
        used[a] = true;
        perm[i] = (uint32_t)a;
    }
    return HL_OK;
}

/* Reads an axis attribute and checks it against ndim (after negative wrap). */
static hl_status get_axis(hl__json_reader *r, hl__json_node *n, const char *f, bool has_def,
                          int def, uint32_t ndim, int *out)
{
    int64_t a;
    int nd = (int)ndim;
    hl_status st = hl__json_get_int(r, n->obj, f, has_def, def, -HL_MAX_DIMS, HL_MAX_DIMS, &a);
    if (st) return st;
    if (hl__axis((int)a, ndim) < 0)
        return hl__json_fail(r, HL_ERR_ARG, f, "axis %lld is out of range for %d dims",
                             (long long)a, nd);
    *out = (int)a;
    return HL_OK;
}

static hl_status one_expr_checked(hl__json_reader *r, hl__json_node *n, const char *f, bool has_def,
                                  int64_t def, hl_expr *out)
{
    hl_status st = hl__json_get_expr(r, n->obj, f, has_def, def, false, out);
    if (st) return st;
    return hl__json_check_dims(r, f, 1, out);
}

hl_status hl__json_build_node(hl__json_reader *r, uint32_t i)
{
    hl__json_node *n = &r->nodes[i];
    hl_graph *g = r->g;
    const op_row *row = find_op(n->op);
    if (!row) return hl__json_fail(r, HL_ERR_PARSE, "op", "unknown op '%.40s'", n->op);
    /* every node built from here on comes from this one (errors and the runtime name it) */
    if (hl_graph_begin_origin(g, n->name, n->op, r->pos.line, r->pos.col) == HL_NONE)
        return hl__json_from_builder(r, NULL);
    char allowed[128];
    snprintf(allowed, sizeof allowed, "name op inputs comment %s", row->attrs);
    hl_status st = hl__json_check_keys(r, n->obj, allowed);
    if (st) return st;
    if (n->n_ref < row->min_in || n->n_ref > row->max_in) {
        if (row->min_in == row->max_in)
            return hl__json_fail(r, HL_ERR_ARG, "inputs", "%s takes %u input%s, got %u", row->name,
                                 row->min_in, row->min_in == 1 ? "" : "s", n->n_ref);
        return hl__json_fail(r, HL_ERR_ARG, "inputs", "%s takes %u to %u inputs, got %u", row->name,
                             row->min_in, row->max_in, n->n_ref);
    }
    bool has_view = false;
    for (uint32_t j = 0; j < n->n_ref; j++)
        has_view |= n->refs[j].view != NULL;
    if (has_view) {
        if (row->prim < 0)
            return hl__json_fail(r, HL_ERR_PARSE, "inputs",
                                 "view inputs are only for primitives (%s is not one)", row->name);
        if ((st = build_primitive(r, n, row, &n->t))) return st;
        return hl__json_check_dims(r, "result", n->t.view.ndim, n->t.view.dims);
    }
    uint32_t mark = hl_graph_node_count(g);
    hl_t x[HL_MAX_INPUTS];
    for (uint32_t j = 0; j < n->n_ref; j++)
        x[j] = hl__json_ref_handle(r, &n->refs[j]);
    uint32_t nd0 = n->n_ref ? x[0].view.ndim : 0;
    hl_t t = {HL_NONE, HL_F32, {0}};
    switch (row->op) {
    case J_NEG:
        t = hl_neg(g, x[0]);
        break;
    case J_EXP:
        t = hl_exp(g, x[0]);
        break;
    case J_LOG:
        t = hl_log(g, x[0]);
        break;
    case J_EXP2:
        t = hl_exp2(g, x[0]);
        break;
    case J_LOG2:
        t = hl_log2(g, x[0]);
        break;
    case J_SIN:
        t = hl_sin(g, x[0]);
        break;
    case J_COS:
        t = hl_cos(g, x[0]);
        break;
    case J_SQRT:
        t = hl_sqrt(g, x[0]);
        break;
    case J_RECIP:
        t = hl_recip(g, x[0]);
        break;
    case J_SIGMOID:
        t = hl_sigmoid(g, x[0]);
        break;
    case J_SILU:
        t = hl_silu(g, x[0]);
        break;
    case J_TANH:
        t = hl_tanh(g, x[0]);
        break;
    case J_RELU:
        t = hl_relu(g, x[0]);
        break;
    case J_CONTIGUOUS:
        t = hl_contiguous(g, x[0]);
        break;
    case J_GELU: {
        const char *mode = "none";
        if (json_object_get(n->obj, "approximate") &&
            (st = hl__json_get_string(r, n->obj, "approximate", &mode)))
            return st;
        if (strcmp(mode, "none") == 0)
            t = hl_gelu(g, x[0]);
        else if (strcmp(mode, "tanh") == 0)
            t = hl_gelu_tanh(g, x[0]);
        else
            return hl__json_fail(r, HL_ERR_PARSE, "approximate",
                                 "expected \"none\" or \"tanh\", got \"%.40s\"", mode);
        break;
    }
    case J_ADD:
        t = hl_add(g, x[0], x[1]);
        break;
    case J_SUB:
        t = hl_sub(g, x[0], x[1]);
        break;
    case J_MUL:
        t = hl_mul(g, x[0], x[1]);
        break;
    case J_DIV:
        t = hl_div(g, x[0], x[1]);
        break;
    case J_MOD:
        t = hl_mod(g, x[0], x[1]);
        break;
    case J_MAXIMUM:
        t = hl_maximum(g, x[0], x[1]);
        break;
    case J_MINIMUM:
        t = hl_minimum(g, x[0], x[1]);
        break;
    case J_LT:
        t = hl_lt(g, x[0], x[1]);
        break;
    case J_GT:
        t = hl_gt(g, x[0], x[1]);
        break;
    case J_LE:
        t = hl_le(g, x[0], x[1]);
        break;
    case J_GE:
        t = hl_ge(g, x[0], x[1]);
        break;
    case J_EQ:
        t = hl_eq(g, x[0], x[1]);
        break;
    case J_NE:
        t = hl_ne(g, x[0], x[1]);
        break;
    case J_WHERE:
        t = hl_where(g, x[0], x[1], x[2]);
        break;
    case J_CAST: {
        hl_dtype to;
        if ((st = hl__json_get_dtype(r, n->obj, "dtype", false, HL_F32, &to))) return st;
        t = hl_cast(g, x[0], to);
        break;
    }
    case J_CONSTANT: {
        float v;
        hl_dtype dt;
        if ((st = hl__json_get_float(r, n->obj, "value", false, 0, &v))) return st;
        if ((st = hl__json_get_dtype(r, n->obj, "dtype", true, HL_F32, &dt))) return st;
        if (json_object_get(n->obj, "shape")) {
            uint32_t nd = 0;
            hl_expr dims[HL_MAX_DIMS];
            if ((st = hl__json_get_exprs(r, n->obj, "shape", false, &nd, dims))) return st;
            if ((st = hl__json_check_dims(r, "shape", nd, dims))) return st;
            t = nd ? hl_full(g, v, dt, nd, dims) : hl_scalar(g, v, dt);
        } else {
            t = hl_scalar(g, v, dt);
        }
        break;
    }
    case J_IOTA: {
        hl_expr e, len;
        if ((st = hl__json_get_expr(r, n->obj, "expr", false, 0, true, &e))) return st;
        if ((st = one_expr_checked(r, n, "len", false, 0, &len))) return st;
        t = hl_iota(g, e, len);
        break;
    }
    case J_ARANGE: {
        hl_expr len;
        hl_dtype dt;
        if ((st = one_expr_checked(r, n, "n", false, 0, &len))) return st;
        if ((st = hl__json_get_dtype(r, n->obj, "dtype", true, HL_INT, &dt))) return st;
        t = hl_arange(g, len, dt);
        break;
    }
    case J_SUM:
    case J_MAX:
    case J_MEAN: {
        int axes[HL_MAX_DIMS];
        uint32_t na = nd0;
        bool keep;
        if (json_object_get(n->obj, "axes")) {
            if ((st = hl__json_get_axes(r, n->obj, "axes", &na, axes))) return st;
            for (uint32_t k = 0; k < na; k++)
                if (hl__axis(axes[k], nd0) < 0)
                    return hl__json_fail(r, HL_ERR_ARG, "axes",
                                         "axis %d is out of range for %u dims", axes[k], nd0);
        } else {
            for (uint32_t k = 0; k < nd0; k++)
                axes[k] = (int)k;
        }
        if ((st = hl__json_get_bool(r, n->obj, "keepdim", false, &keep))) return st;
        if (row->op == J_SUM)
            t = hl_sum(g, x[0], na, axes, keep);
        else if (row->op == J_MAX)
            t = hl_max(g, x[0], na, axes, keep);
        else
            t = hl_mean(g, x[0], na, axes, keep);
        break;
    }
    case J_SUM_REDUCE:
    case J_MAX_REDUCE: {
        int a;
        if ((st = get_axis(r, n, "axis", false, 0, nd0, &a))) return st;
        t = row->op == J_SUM_REDUCE ? hl_sum_reduce(g, x[0], a) : hl_max_reduce(g, x[0], a);
        break;
    }
    case J_SOFTMAX:
    case J_LOG_SOFTMAX: {
        int a;
        if ((st = get_axis(r, n, "axis", true, -1, nd0, &a))) return st;
        t = row->op == J_SOFTMAX ? hl_softmax(g, x[0], a) : hl_log_softmax(g, x[0], a);
        break;
    }
    case J_LAYER_NORM:
    case J_RMS_NORM: {
        float eps;
        if ((st = hl__json_get_float(r, n->obj, "eps", true, 1e-5f, &eps))) return st;
        if (!(eps >= 0) || isinf(eps))
            return hl__json_fail(r, HL_ERR_ARG, "eps", "must be a finite number >= 0");
        hl_t none = {HL_NONE, HL_F32, {0}};
        hl_t w = n->n_ref > 1 ? x[1] : none, b = n->n_ref > 2 ? x[2] : none;
        t = row->op == J_LAYER_NORM ? hl_layer_norm(g, x[0], w, b, eps)
                                    : hl_rms_norm(g, x[0], w, eps);
        break;
    }
    case J_MATMUL:
        t = hl_matmul(g, x[0], x[1]);
        break;
    case J_EMBEDDING:
        t = hl_embedding(g, x[0], x[1]);
        break;
    case J_GATHER:
        t = hl_gather(g, x[0], x[1]);
        break;
    case J_SCATTER:
        t = hl_scatter(g, x[0], x[1], x[2]);
        break;
    case J_CAUSAL_MASK: {
        hl_expr len;
        hl_dtype dt;
        if ((st = one_expr_checked(r, n, "n", false, 0, &len))) return st;
        if ((st = hl__json_get_dtype(r, n->obj, "dtype", true, HL_F32, &dt))) return st;
        hl_expr sq[2] = {len, len};
        if ((st = hl__json_check_dims(r, "n", 2, sq))) return st;
        t = hl_causal_mask(g, len, dt);
        break;
    }
    case J_ATTENTION: {
        bool causal;
        float scale;
        if ((st = hl__json_get_bool(r, n->obj, "causal", false, &causal))) return st;
        if ((st = hl__json_get_float(r, n->obj, "scale", true, 0.0f, &scale))) return st;
        if (json_object_get(n->obj, "scale") && !(scale > 0 && isfinite(scale)))
            return hl__json_fail(r, HL_ERR_ARG, "scale", "must be a finite number > 0");
        t = hl_attention(g, x[0], x[1], x[2], causal, scale);
        break;
    }
    case J_ROPE: {
        float base;
        hl_expr off;
        if ((st = hl__json_get_float(r, n->obj, "base", true, 10000.0f, &base))) return st;
        if (!(base > 0 && isfinite(base)))
            return hl__json_fail(r, HL_ERR_ARG, "base", "must be a finite number > 0");
        if ((st = hl__json_get_expr(r, n->obj, "offset", true, 0, false, &off))) return st;
        t = hl_rope(g, x[0], off, base);
        break;
    }
    case J_PERMUTE: {
        uint32_t perm[HL_MAX_DIMS];
        if ((st = get_perm(r, n, nd0, perm))) return st;
        t = hl_permute(g, x[0], perm);
        break;
    }
    case J_TRANSPOSE: {
        int axes[HL_MAX_DIMS] = {-2, -1};
        uint32_t na = 2;
        if (json_object_get(n->obj, "axes") &&
            (st = hl__json_get_axes(r, n->obj, "axes", &na, axes)))
            return st;
        if (na != 2) return hl__json_fail(r, HL_ERR_ARG, "axes", "transpose swaps exactly 2 axes");
        for (int k = 0; k < 2; k++)
            if (hl__axis(axes[k], nd0) < 0)
                return hl__json_fail(r, HL_ERR_ARG, "axes", "axis %d is out of range for %u dims",
                                     axes[k], nd0);
        t = hl_transpose(g, x[0], axes[0], axes[1]);
        break;
    }
    case J_RESHAPE:
    case J_BROADCAST_TO: {
        uint32_t nd = 0;
        hl_expr dims[HL_MAX_DIMS];
        if ((st = hl__json_get_exprs(r, n->obj, "shape", false, &nd, dims))) return st;
        if ((st = hl__json_check_dims(r, "shape", nd, dims))) return st;
        if (row->op == J_RESHAPE &&
            (st = hl__json_check_same_numel(r, "shape", &x[0].view, nd, dims)))
            return st;
        t = row->op == J_RESHAPE ? hl_reshape(g, x[0], nd, dims)
                                 : hl_broadcast_to(g, x[0], nd, dims);
        break;
    }
    case J_EXPAND: {
        int64_t a;
        hl_expr size;
        if ((st = hl__json_get_int(r, n->obj, "axis", false, 0, -(int64_t)nd0 - 1, nd0, &a)))
            return st;
        if (nd0 >= HL_MAX_DIMS)
            return hl__json_fail(r, HL_ERR_SHAPE, NULL, "expand: the tensor already has %d dims",
                                 HL_MAX_DIMS);
        if ((st = one_expr_checked(r, n, "size", false, 0, &size))) return st;
        t = hl_expand(g, x[0], (int)a, size);
        break;
    }
    case J_SLICE: {
        int a;
        hl_expr s, e;
        if ((st = get_axis(r, n, "axis", false, 0, nd0, &a))) return st;
        if ((st = hl__json_get_expr(r, n->obj, "start", true, 0, false, &s))) return st;
        if ((st = one_expr_checked(r, n, "end", false, 0, &e))) return st;
        hl_expr zero = hl_n(g, 0);
        if ((st = hl__json_check_le(r, "start", zero, s, "start is negative"))) return st;
        if ((st = hl__json_check_le(r, "end", s, e, "end is before start"))) return st;
        if ((st = hl__json_check_le(r, "end", e, x[0].view.dims[hl__axis(a, nd0)],
                                    "end is past the size of the axis")))
            return st;
        t = hl_slice(g, x[0], a, s, e);
        break;
    }
    case J_PAD: {
        int a;
        hl_expr before, after;
        float v;
        if ((st = get_axis(r, n, "axis", false, 0, nd0, &a))) return st;
        if ((st = hl__json_get_expr(r, n->obj, "before", true, 0, false, &before))) return st;
        if ((st = hl__json_get_expr(r, n->obj, "after", true, 0, false, &after))) return st;
        if ((st = hl__json_get_float(r, n->obj, "value", true, 0.0f, &v))) return st;
        hl_expr zero = hl_n(g, 0);
        if ((st = hl__json_check_le(r, "before", zero, before, "negative padding"))) return st;
        if ((st = hl__json_check_le(r, "after", zero, after, "negative padding"))) return st;
        t = hl_pad(g, x[0], a, before, after, v);
        break;
    }
    case J_CONCAT: {
        int a;
        if ((st = get_axis(r, n, "axis", false, 0, nd0, &a))) return st;
        t = hl_concat(g, x[0], x[1], a);
        break;
    }
    }
    if (t.node == HL_NONE) return builder_failed(r, row);
    if ((st = hl__json_check_dims(r, "result", t.view.ndim, t.view.dims))) return st;
    /* Every view the lowering wrote must pass the checks the canonical form's explicit
     * views get when it is read back: sizes in range, reads inside the buffer. */
    for (uint32_t id = mark; id < hl_graph_node_count(g); id++) {
        const hl_node *made = hl_graph_node(g, id);
        for (uint32_t j = 0; j < made->n_in; j++) {
            hl_view v = made->in[j].view;
            if ((st = hl__json_check_dims(r, "inputs", v.ndim, v.dims))) return st;
            if ((st = hl__json_check_view_bounds(r, "inputs", &v, made->in[j].node))) return st;
        }
    }
    n->t = t;
    return HL_OK;
}
