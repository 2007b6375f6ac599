/* hl_graph.c - the graph: nodes of primitive ops, dynamic dims, inputs and outputs, the
 * checked primitive door (hl_graph_add), the invariant checker and the debug dump.
 *
 * Invariants (hl_graph_check recomputes them):
 *   - every input edge names an earlier node, so id order is a topological order;
 *   - each node's shape and dtype follow from its op, its inputs' views and dtypes;
 *   - every view's dims are the dims the op reads (see the table in hlir.h) and every
 *     expression is an id of the graph's pool whose variables are declared dims;
 *   - Input names are unique among inputs, Output names among outputs. */
#include "core/hl_expr_int.h"
#include "core/hl_graph_int.h"

#include <assert.h>
#include <inttypes.h>

struct hl_graph {
    hl_expr_pool *pool;
    hl_node *nodes;
    uint32_t n, cap;
    hl_dim *dims;
    uint32_t ndims, dcap;
    uint32_t *inputs, n_inputs, icap;
    uint32_t *outputs, n_outputs, ocap;
    hl_error err; /* the builder's sticky error */
};

hl_graph *hl_graph_new(void)
{
    hl_graph *g = hl__zalloc(1, sizeof *g);
    if (!g) return NULL;
    g->pool = hl_expr_pool_new();
    if (!g->pool) {
        hl__free(g);
        return NULL;
    }
    hl_error_clear(&g->err);
    return g;
}

void hl_graph_free(hl_graph *g)
{
    if (!g) return;
    for (uint32_t i = 0; i < g->n; i++)
        hl__free(g->nodes[i].name);
    hl__free(g->nodes);
    hl__free(g->dims);
    hl__free(g->inputs);
    hl__free(g->outputs);
    hl_expr_pool_free(g->pool);
    hl__free(g);
}

hl_expr_pool *hl_graph_exprs(hl_graph *g)
{
    return g->pool;
}
const hl_expr_pool *hl_graph_exprs_c(const hl_graph *g)
{
    return g->pool;
}
const hl_error *hl_graph_error(const hl_graph *g)
{
    return &g->err;
}
void hl_graph_clear_error(hl_graph *g)
{
    hl_error_clear(&g->err);
}
hl_error *hl__graph_err(hl_graph *g)
{
    return &g->err;
}

uint32_t hl_graph_node_count(const hl_graph *g)
{
    return g->n;
}
const hl_node *hl_graph_node(const hl_graph *g, uint32_t id)
{
    assert(id < g->n);
    return &g->nodes[id];
}
uint32_t hl_graph_input_count(const hl_graph *g)
{
    return g->n_inputs;
}
uint32_t hl_graph_input(const hl_graph *g, uint32_t i)
{
    assert(i < g->n_inputs);
    return g->inputs[i];
}
uint32_t hl_graph_output_count(const hl_graph *g)
{
    return g->n_outputs;
}
uint32_t hl_graph_output(const hl_graph *g, uint32_t i)
{
    assert(i < g->n_outputs);
    return g->outputs[i];
}
uint32_t hl_graph_dim_count(const hl_graph *g)
{
    return g->ndims;
}
const hl_dim *hl_graph_dim_at(const hl_graph *g, uint32_t i)
{
    assert(i < g->ndims);
    return &g->dims[i];
}
const hl_dim *hl_graph_dim_find(const hl_graph *g, const char *name)
{
    if (!name) return NULL;
    for (uint32_t i = 0; i < g->ndims; i++)
        if (strcmp(hl_var_name(g->pool, g->dims[i].var), name) == 0) return &g->dims[i];
    return NULL;
}

hl_expr hl_graph_dim(hl_graph *g, const char *name, int64_t lo, int64_t hi, int64_t profile)
{
    if (g->err.code) return HL_NONE;
    if (!hl_var_name_valid(name))
        return hl_error_set(&g->err, HL_ERR_ARG, HL_NONE,
                            "dim name '%.64s' is not valid: use letters, digits and _, not "
                            "starting with a digit, and not z, min, max or cdiv",
                            name ? name : "(null)"),
               HL_NONE;
    if (hl_graph_dim_find(g, name))
        return hl_error_set(&g->err, HL_ERR_ARG, HL_NONE, "dim '%s' is declared twice", name),
               HL_NONE;
    if (lo < 1 || hi < lo || profile < lo || profile > hi)
        return hl_error_set(&g->err, HL_ERR_ARG, HL_NONE,
                            "dim '%s': range [%lld, %lld] with profile value %lld is not valid "
                            "(need 1 <= lo <= profile <= hi)",
                            name, (long long)lo, (long long)hi, (long long)profile),
               HL_NONE;
    void *arr = g->dims;
    if (hl__grow(&arr, &g->dcap, g->ndims + 1, sizeof(hl_dim)))
        return hl_error_set(&g->err, HL_ERR_NOMEM, HL_NONE, "out of memory declaring dim"), HL_NONE;
    g->dims = arr;
    hl_expr e = hl_e_var(g->pool, name);
    if (e == HL_NONE)
        return hl_error_set(&g->err, HL_ERR_NOMEM, HL_NONE, "out of memory declaring dim"), HL_NONE;
    g->dims[g->ndims++] = (hl_dim){hl_e_get(g->pool, e).var, e, lo, hi, profile};
    return e;
}

/* ---- op table ---- */

static const char *const OP_NAMES[HL_OP_COUNT] = {
    "Input", "Output",   "Constant", "Iota",    "Cast",      "Exp2",
    "Log2",  "Sin",      "Recip",    "Sqrt",    "Add",       "Mul",
    "Mod",   "LessThan", "Gather",   "Scatter", "SumReduce", "MaxReduce"};
static const uint8_t OP_ARITY[HL_OP_COUNT] = {0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 1, 1};

const char *hl_op_name(hl_op op)
{
    return (unsigned)op < HL_OP_COUNT ? OP_NAMES[op] : "?";
}
uint32_t hl_op_arity(hl_op op)
{
    return (unsigned)op < HL_OP_COUNT ? OP_ARITY[op] : 0;
}
int hl_op_parse(const char *name, hl_op *out)
{
    if (!name) return -1;
    for (int i = 0; i < HL_OP_COUNT; i++)
        if (strcmp(name, OP_NAMES[i]) == 0) {
            *out = (hl_op)i;
            return 0;
        }
    return -1;
}

/* ---- validation, shared by hl_graph_add and hl_graph_check ---- */

/* HL_OK when e is a valid id whose variables are all declared dims; else HL_ERR_DIM (or
 * HL_ERR_NOMEM for an expression that could not be built) with the reason in why. */
static hl_status expr_ok(const hl_graph *g, hl_expr e, char *why, size_t cap)
{
    if (e == HL_NONE && hl_expr_pool_failed(g->pool)) {
        snprintf(why, cap, "an expression could not be built (out of memory)");
        return HL_ERR_NOMEM;
    }
    if (e == HL_NONE) {
        snprintf(why, cap, "an expression could not be built (%s)", hl__none_reason(g->pool));
        return HL_ERR_EVAL;
    }
    if (e >= hl_expr_count(g->pool)) {
        snprintf(why, cap, "expression id %u is not in the graph's pool", e);
        return HL_ERR_DIM;
    }
    if (!hl_e_has_var(g->pool, e)) return HL_OK;
    hl_expr_node n = hl_e_get(g->pool, e);
    if (n.kind == HL_E_VAR) {
        for (uint32_t i = 0; i < g->ndims; i++)
            if (g->dims[i].var == n.var) return HL_OK;
        snprintf(why, cap, "dimension '%s' is not declared", hl_var_name(g->pool, n.var));
        return HL_ERR_DIM;
    }
    hl_status st = expr_ok(g, n.a, why, cap);
    return st ? st : expr_ok(g, n.b, why, cap);
}

static bool dims_equal(uint32_t na, const hl_expr *a, uint32_t nb, const hl_expr *b)
{
    if (na != nb) return false;
    for (uint32_t i = 0; i < na; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* Checks spec (a node about to be added as id `id`, or existing node id) and computes
 * its dtype and shape into *out. On failure fills err and returns its code. */
static hl_status validate(const hl_graph *g, uint32_t id, const hl_node *spec, hl_node *out,
                          hl_error *err)
{
    const hl_expr_pool *p = g->pool;
    hl_op op = spec->op;
    if ((unsigned)op >= HL_OP_COUNT)
        return hl_error_set(err, HL_ERR_ARG, id, "node %u: unknown op %d", id, (int)op);
    const char *on = OP_NAMES[op];
    if (spec->n_in != OP_ARITY[op])
        return hl_error_set(err, HL_ERR_ARG, id, "node %u (%s): takes %u inputs, given %u", id, on,
                            OP_ARITY[op], spec->n_in);
    char why[160];
    const hl_node *in[HL_MAX_INPUTS] = {0};
    for (uint32_t i = 0; i < spec->n_in; i++) {
        const hl_in *e = &spec->in[i];
        if (e->node >= id)
            return hl_error_set(err, HL_ERR_ARG, id,
                                "node %u (%s): input %u refers to node %u, which is not an earlier "
                                "node",
                                id, on, i, e->node);
        in[i] = &g->nodes[e->node];
        if (in[i]->op == HL_OP_OUTPUT)
            return hl_error_set(err, HL_ERR_ARG, id, "node %u (%s): input %u is an Output node", id,
                                on, i);
        if (e->view.ndim > HL_MAX_DIMS)
            return hl_error_set(err, HL_ERR_ARG, id, "node %u (%s): input %u view has %u dims", id,
                                on, i, e->view.ndim);
        for (uint32_t d = 0; d < e->view.ndim; d++) {
            hl_status st = expr_ok(g, e->view.dims[d], why, sizeof why);
            if (!st) st = expr_ok(g, e->view.strides[d], why, sizeof why);
            if (st)
                return hl_error_set(err, st, id, "node %u (%s): input %u view, dim %u: %s", id, on,
                                    i, d, why);
        }
    }
    hl_node r = *spec;
    r.ndim = 0;
    /* dtype and shape per op */
    switch (op) {
    case HL_OP_INPUT:
        if ((unsigned)spec->dtype >= HL_DTYPE_COUNT)
            return hl_error_set(err, HL_ERR_DTYPE, id, "node %u (Input): invalid dtype", id);
        if (spec->ndim > HL_MAX_DIMS)
            return hl_error_set(err, HL_ERR_ARG, id, "node %u (Input): %u dims (at most %d)", id,
                                spec->ndim, HL_MAX_DIMS);
        for (uint32_t d = 0; d < spec->ndim; d++) {
            hl_status st = expr_ok(g, spec->shape[d], why, sizeof why);
            if (st) return hl_error_set(err, st, id, "node %u (Input): dim %u: %s", id, d, why);
            if (hl_e_has_z(p, spec->shape[d]))
                return hl_error_set(err, HL_ERR_SHAPE, id, "node %u (Input): dim %u uses z", id, d);
            /* every declared dim is >= 1, so this range is what the dim can be */
            hl__range rg = hl__e_range(p, spec->shape[d], 0);
            if (!rg.hi_inf && rg.hi < 0)
                return hl_error_set(err, HL_ERR_SHAPE, id,
                                    "node %u (Input): dim %u is negative (at most %" PRId64 ")", id,
                                    d, rg.hi);
        }
        r.ndim = spec->ndim;
        memcpy(r.shape, spec->shape, sizeof r.shape);
        if (!spec->name || !spec->name[0])
            return hl_error_set(err, HL_ERR_ARG, id, "node %u (Input): needs a name", id);
        break;
    case HL_OP_OUTPUT:
        if (!spec->name || !spec->name[0])
            return hl_error_set(err, HL_ERR_ARG, id, "node %u (Output): needs a name", id);
        r.dtype = in[0]->dtype;
        break;
    case HL_OP_CONSTANT:
        r.dtype = HL_F32;
        break;
    case HL_OP_IOTA: {
        hl_status st = expr_ok(g, spec->iota_expr, why, sizeof why);
        if (!st) st = expr_ok(g, spec->iota_len, why, sizeof why);
        if (st) return hl_error_set(err, st, id, "node %u (Iota): %s", id, why);
    }
        if (hl_e_has_z(p, spec->iota_len))
            return hl_error_set(err, HL_ERR_SHAPE, id, "node %u (Iota): the length uses z", id);
        r.dtype = HL_INT;
        r.ndim = 1;
        r.shape[0] = spec->iota_len;
        break;
    case HL_OP_CAST:
        if ((unsigned)spec->cast_to >= HL_DTYPE_COUNT)
            return hl_error_set(err, HL_ERR_DTYPE, id, "node %u (Cast): invalid target dtype", id);
        r.dtype = spec->cast_to;
        break;
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
        if (!hl_dtype_is_float(in[0]->dtype))
            return hl_error_set(err, HL_ERR_DTYPE, id,
                                "node %u (%s): needs a float input, node %u is %s; cast it first",
                                id, on, spec->in[0].node, hl_dtype_name(in[0]->dtype));
        r.dtype = in[0]->dtype;
        break;
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
        if (in[0]->dtype != in[1]->dtype)
            return hl_error_set(err, HL_ERR_DTYPE, id,
                                "node %u (%s): input dtypes differ (%s and %s); cast one of them",
                                id, on, hl_dtype_name(in[0]->dtype), hl_dtype_name(in[1]->dtype));
        if (op != HL_OP_LESS_THAN && in[0]->dtype == HL_BOOL)
            return hl_error_set(err, HL_ERR_DTYPE, id,
                                "node %u (%s): Bool inputs; cast to a number", id, on);
        if (!dims_equal(spec->in[0].view.ndim, spec->in[0].view.dims, spec->in[1].view.ndim,
                        spec->in[1].view.dims)) {
            char a[160], b[160];
            hl__dims_str(p, spec->in[0].view.ndim, spec->in[0].view.dims, a, sizeof a);
            hl__dims_str(p, spec->in[1].view.ndim, spec->in[1].view.dims, b, sizeof b);
            return hl_error_set(err, HL_ERR_SHAPE, id,
                                "node %u (%s): input shapes %s and %s differ", id, on, a, b);
        }
        r.dtype = op == HL_OP_LESS_THAN ? HL_BOOL : in[0]->dtype;
        break;
    case HL_OP_GATHER:
        if (in[0]->dtype != HL_INT)
            return hl_error_set(err, HL_ERR_DTYPE, id,
                                "node %u (Gather): indexes must be int, not %s", id,
                                hl_dtype_name(in[0]->dtype));
        r.dtype = in[1]->dtype;
        break;
    case HL_OP_SCATTER:
        if (in[1]->dtype != HL_INT)
            return hl_error_set(err, HL_ERR_DTYPE, id,
                                "node %u (Scatter): indexes must be int, not %s", id,
                                hl_dtype_name(in[1]->dtype));
        if (in[0]->dtype != in[2]->dtype)
            return hl_error_set(err, HL_ERR_DTYPE, id,
                                "node %u (Scatter): dest is %s but src is %s", id,
                                hl_dtype_name(in[0]->dtype), hl_dtype_name(in[2]->dtype));
        if (!dims_equal(spec->in[1].view.ndim, spec->in[1].view.dims, spec->in[2].view.ndim,
                        spec->in[2].view.dims))
            return hl_error_set(err, HL_ERR_SHAPE, id,
                                "node %u (Scatter): indexes and src shapes differ", id);
        r.dtype = in[0]->dtype;
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        if (in[0]->dtype == HL_BOOL)
            return hl_error_set(err, HL_ERR_DTYPE, id, "node %u (%s): Bool input; cast to a number",
                                id, on);
        if (spec->axis >= spec->in[0].view.ndim)
            return hl_error_set(err, HL_ERR_ARG, id,
                                "node %u (%s): axis %u out of range for %u dims", id, on,
                                spec->axis, spec->in[0].view.ndim);
        r.dtype = in[0]->dtype;
        break;
    case HL_OP_COUNT:
        break;
    }
    /* the output shape of ops that read input 0 (or the indexes / dest) through a view */
    if (op != HL_OP_INPUT && op != HL_OP_CONSTANT && op != HL_OP_IOTA) {
        const hl_view *v = &spec->in[0].view;
        r.ndim = 0;
        for (uint32_t d = 0; d < v->ndim; d++) {
            if ((op == HL_OP_SUM_REDUCE || op == HL_OP_MAX_REDUCE) && d == spec->axis) continue;
            r.shape[r.ndim++] = v->dims[d];
        }
    }
    for (uint32_t d = r.ndim; d < HL_MAX_DIMS; d++)
        r.shape[d] = 0;
    *out = r;
    return HL_OK;
}

static bool name_taken(const hl_graph *g, hl_op op, const char *name, uint32_t upto)
{
    const uint32_t *ids = op == HL_OP_INPUT ? g->inputs : g->outputs;
    uint32_t n = op == HL_OP_INPUT ? g->n_inputs : g->n_outputs;
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] < upto && strcmp(g->nodes[ids[i]].name, name) == 0) return true;
    return false;
}

uint32_t hl_graph_add(hl_graph *g, const hl_node *spec)
{
    if (g->err.code) return HL_NONE;
    if (g->n == HL_NONE - 1) {
        hl_error_set(&g->err, HL_ERR_ARG, HL_NONE, "graph has too many nodes");
        return HL_NONE;
    }
    hl_node r;
    if (validate(g, g->n, spec, &r, &g->err) != HL_OK) return HL_NONE;
    bool io = r.op == HL_OP_INPUT || r.op == HL_OP_OUTPUT;
    if (io && name_taken(g, r.op, r.name, g->n)) {
        hl_error_set(&g->err, HL_ERR_ARG, g->n, "node %u (%s): the name '%s' is already used", g->n,
                     hl_op_name(r.op), r.name);
        return HL_NONE;
    }
    /* allocate everything first, then mutate */
    void *nodes = g->nodes;
    if (hl__grow(&nodes, &g->cap, g->n + 1, sizeof(hl_node))) goto oom;
    g->nodes = nodes;
    r.name = NULL;
    if (io) {
        void *arr = r.op == HL_OP_INPUT ? (void *)g->inputs : (void *)g->outputs;
        uint32_t *cap = r.op == HL_OP_INPUT ? &g->icap : &g->ocap;
        uint32_t cnt = r.op == HL_OP_INPUT ? g->n_inputs : g->n_outputs;
        if (hl__grow(&arr, cap, cnt + 1, sizeof(uint32_t))) goto oom;
        if (r.op == HL_OP_INPUT)
            g->inputs = arr;
        else
            g->outputs = arr;
        r.name = hl__strdup(spec->name);
        if (!r.name) goto oom;
        if (r.op == HL_OP_INPUT) {
            r.index = g->n_inputs;
            g->inputs[g->n_inputs++] = g->n;
        } else {
            r.index = g->n_outputs;
            g->outputs[g->n_outputs++] = g->n;
        }
    }
    g->nodes[g->n] = r;
    return g->n++;
oom:
    hl_error_set(&g->err, HL_ERR_NOMEM, g->n, "out of memory adding a %s node", hl_op_name(r.op));
    return HL_NONE;
}

void hl__graph_truncate(hl_graph *g, uint32_t n)
{
    while (g->n > n) {
        hl_node *nd = &g->nodes[--g->n];
        if (nd->op == HL_OP_INPUT) g->n_inputs--;
        if (nd->op == HL_OP_OUTPUT) g->n_outputs--;
        hl__free(nd->name);
        nd->name = NULL;
    }
}

hl_status hl_graph_check(const hl_graph *g, hl_error *err)
{
    hl_status pst = hl_expr_pool_check(g->pool, err);
    if (pst) return pst;
    for (uint32_t id = 0; id < g->n; id++) {
        const hl_node *nd = &g->nodes[id];
        hl_node r;
        hl_status st = validate(g, id, nd, &r, err);
        if (st) return st;
        if (r.dtype != nd->dtype || !dims_equal(r.ndim, r.shape, nd->ndim, nd->shape))
            return hl_error_set(err, HL_ERR_SHAPE, id,
                                "node %u (%s): stored dtype or shape disagrees with its op", id,
                                hl_op_name(nd->op));
        if (nd->op == HL_OP_INPUT || nd->op == HL_OP_OUTPUT) {
            const uint32_t *ids = nd->op == HL_OP_INPUT ? g->inputs : g->outputs;
            uint32_t cnt = nd->op == HL_OP_INPUT ? g->n_inputs : g->n_outputs;
            if (nd->index >= cnt || ids[nd->index] != id)
                return hl_error_set(err, HL_ERR_ARG, id,
                                    "node %u: index %u is not its list position", id, nd->index);
            if (name_taken(g, nd->op, nd->name, id))
                return hl_error_set(err, HL_ERR_ARG, id, "node %u: name '%s' used twice", id,
                                    nd->name);
        }
    }
    return HL_OK;
}

/* ---- dump ---- */

void hl_graph_dump(const hl_graph *g, FILE *f)
{
    const hl_expr_pool *p = g->pool;
    fprintf(f, "hlir graph: %u nodes, %u inputs, %u outputs\n", g->n, g->n_inputs, g->n_outputs);
    for (uint32_t i = 0; i < g->ndims; i++)
        fprintf(f, "dim %s in [%" PRId64 ", %" PRId64 "] profile %" PRId64 "\n",
                hl_var_name(p, g->dims[i].var), g->dims[i].lo, g->dims[i].hi, g->dims[i].profile);
    for (uint32_t id = 0; id < g->n; id++) {
        const hl_node *nd = &g->nodes[id];
        fprintf(f, "%%%u = %s %s ", id, hl_op_name(nd->op), hl_dtype_name(nd->dtype));
        hl__dims_fprint(p, nd->ndim, nd->shape, f);
        switch (nd->op) {
        case HL_OP_INPUT:
        case HL_OP_OUTPUT:
            fprintf(f, " name=\"%s\" index=%u", nd->name, nd->index);
            break;
        case HL_OP_CONSTANT:
            fprintf(f, " value=%.9g", (double)nd->constant);
            break;
        case HL_OP_IOTA:
            fputs(" expr=", f);
            hl_e_fprint(p, nd->iota_expr, f);
            fputs(" len=", f);
            hl_e_fprint(p, nd->iota_len, f);
            break;
        case HL_OP_SUM_REDUCE:
        case HL_OP_MAX_REDUCE:
            fprintf(f, " axis=%u", nd->axis);
            break;
        default:
            break;
        }
        for (uint32_t i = 0; i < nd->n_in; i++) {
            fprintf(f, " (%%%u ", nd->in[i].node);
            hl_view_fprint(p, &nd->in[i].view, f);
            fputc(')', f);
        }
        fputc('\n', f);
    }
}
