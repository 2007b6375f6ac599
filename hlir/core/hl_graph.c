/* hl_graph.c - the graph: nodes of primitive ops, dynamic dims, inputs and outputs, the
 * checked primitive door (hl_graph_add), the invariant checker and the debug dump.
 *
 * Invariants (hl_graph_check recomputes them):
 *   - every input edge names an earlier node, so id order is a topological order;
 *   - each node's shape and dtype follow from its op, its inputs' views and dtypes;
 *   - every view's dims are the dims the op reads (see the table in hlir.h) and every
 *     expression is an id of the graph's pool whose variables are declared dims;
 *   - Input names are unique among inputs, Output names among outputs;
 *   - every input's initialisation (inits[i] for input i) is valid for its dtype;
 *   - every node's origin is HL_NONE or one of the graph's origins.
 *
 * It also holds the doors that locate an error at a graph node or at the builder's
 * current origin (hl__fail_node, hl__graph_fail): they build the lm_loc and call
 * hl__fail. */
#include "core/hl_expr_int.h"
#include "core/hl_graph_int.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>

struct hl_graph {
    hl_expr_pool *pool;
    hl_node *nodes;
    uint32_t n, cap;
    hl_dim *dims;
    uint32_t ndims, dcap;
    uint32_t *inputs, n_inputs, icap;
    hl_init *inits; /* per input, in input order; capacity initcap */
    uint32_t initcap;
    uint32_t *outputs, n_outputs, ocap;
    char *source;       /* owned; NULL when none */
    hl_origin *origins; /* owned, with their strings */
    uint32_t n_origins, orcap;
    uint32_t cur_origin;     /* the origin of the nodes being added, or HL_NONE */
    lm_err err;              /* the builder's sticky error */
    char reason[LM_ERR_MSG]; /* its message without the location prefix (for readers) */
    lm_err scratch;          /* for the pool-level calls a builder call makes (hl__graph_scratch) */
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
    lm_err_clear(&g->err);
    g->cur_origin = HL_NONE;
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
    hl__free(g->inits);
    hl__free(g->outputs);
    for (uint32_t i = 0; i < g->n_origins; i++) {
        hl__free((char *)g->origins[i].name);
        hl__free((char *)g->origins[i].op);
    }
    hl__free(g->origins);
    hl__free(g->source);
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
const lm_err *hl_graph_error(const hl_graph *g)
{
    return &g->err;
}
void hl_graph_clear_error(hl_graph *g)
{
    lm_err_clear(&g->err);
    g->reason[0] = '\0';
}
lm_err *hl__graph_err(hl_graph *g)
{
    return &g->err;
}
lm_err *hl__graph_scratch(hl_graph *g)
{
    lm_err_clear(&g->scratch);
    return &g->scratch;
}

hl_status hl__graph_raise_scratch(hl_graph *g, int code, const char *what)
{
    if (g->scratch.code == HL_OK) return hl__graph_fail(g, code, "%.60s: failed", what);
    return hl__graph_fail(g, code, "%.60s: %s", what, g->scratch.msg);
}

/* ---- origins and locations ---- */

hl_status hl_graph_set_source(hl_graph *g, const char *source)
{
    char *copy = NULL;
    if (source && !(copy = hl__strdup(source)))
        return hl__graph_fail(g, HL_ERR_NOMEM, "out of memory naming the graph's source");
    hl__free(g->source);
    g->source = copy;
    return HL_OK;
}

const char *hl_graph_source(const hl_graph *g)
{
    return g->source;
}

uint32_t hl_graph_begin_origin(hl_graph *g, const char *name, const char *op, uint32_t line,
                               uint32_t col)
{
    g->cur_origin = HL_NONE;
    if (!name) {
        hl__graph_fail(g, HL_ERR_ARG, "an origin needs the user's node name");
        return HL_NONE;
    }
    void *arr = g->origins;
    char *n = hl__strdup(name), *o = hl__strdup(op ? op : "");
    if (!n || !o || hl__grow(&arr, &g->orcap, g->n_origins + 1, sizeof(hl_origin))) {
        hl__free(n);
        hl__free(o);
        hl__graph_fail(g, HL_ERR_NOMEM, "out of memory recording node '%.64s'", name);
        return HL_NONE;
    }
    g->origins = arr;
    g->origins[g->n_origins] = (hl_origin){n, o, line, col};
    g->cur_origin = g->n_origins++;
    return g->cur_origin;
}

void hl_graph_end_origin(hl_graph *g)
{
    g->cur_origin = HL_NONE;
}

const hl_origin *hl_graph_node_origin(const hl_graph *g, uint32_t id)
{
    assert(id < g->n);
    uint32_t o = g->nodes[id].origin;
    return o < g->n_origins ? &g->origins[o] : NULL;
}

bool hl__same_op(const char *user, hl_op op)
{
    const char *p = hl_op_name(op);
    for (;;) {
        while (*user == '_')
            user++;
        if (!*user || !*p) return !*user && !*p;
        char a = *user, b = *p;
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
        if (a != b) return false;
        user++;
        p++;
    }
}

hl_status hl__fail_node(const hl_graph *g, lm_err *err, int code, uint32_t id, hl_op op,
                        const char *fmt, ...)
{
    uint32_t o = id < g->n ? g->nodes[id].origin : g->cur_origin;
    const hl_origin *org = o < g->n_origins ? &g->origins[o] : NULL;
    lm_loc loc = {.file = g->source, .node_id = id};
    char what[192];
    if (org) {
        loc.node = org->name;
        loc.line = org->line;
        loc.col = org->col;
        if (hl__same_op(org->op, op))
            snprintf(what, sizeof what, "%.64s", org->op);
        else
            snprintf(what, sizeof what, "%.64s (lowered to %s)", org->op, hl_op_name(op));
    } else {
        if (id < g->n && (op == HL_OP_INPUT || op == HL_OP_OUTPUT)) loc.node = g->nodes[id].name;
        snprintf(what, sizeof what, "node %u (%s)", id, hl_op_name(op));
    }
    char msg[LM_ERR_MSG - 200]; /* with what and ": ", it fits the record */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (err == &g->err && g->err.code == HL_OK) /* g's own record: g is not const storage */
        snprintf(((hl_graph *)g)->reason, sizeof g->reason, "%s: %s", what, msg);
    return hl__fail(err, code, &loc, "%s: %s", what, msg);
}

hl_status hl__graph_fail(hl_graph *g, int code, const char *fmt, ...)
{
    const hl_origin *org = g->cur_origin < g->n_origins ? &g->origins[g->cur_origin] : NULL;
    lm_loc loc = {.file = org ? g->source : NULL, .node_id = HL_NONE};
    if (org) {
        loc.node = org->name;
        loc.line = org->line;
        loc.col = org->col;
    }
    va_list ap;
    va_start(ap, fmt);
    if (g->err.code == HL_OK) {
        va_list aq;
        va_copy(aq, ap);
        vsnprintf(g->reason, sizeof g->reason, fmt, aq);
        va_end(aq);
    }
    hl_status st = hl__failv(&g->err, code, &loc, fmt, ap);
    va_end(ap);
    return st;
}

const char *hl__graph_error_reason(const hl_graph *g)
{
    return g->err.code ? g->reason : "";
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
        return hl__graph_fail(g, HL_ERR_ARG,
                              "dim name '%.64s' is not valid: use letters, digits and _, not "
                              "starting with a digit, and not z, min, max or cdiv",
                              name ? name : "(null)"),
               HL_NONE;
    if (hl_graph_dim_find(g, name))
        return hl__graph_fail(g, HL_ERR_ARG, "dim '%s' is declared twice", name), HL_NONE;
    if (lo < 1 || hi < lo || profile < lo || profile > hi)
        return hl__graph_fail(g, HL_ERR_ARG,
                              "dim '%s': range [%lld, %lld] with profile value %lld is not valid "
                              "(need 1 <= lo <= profile <= hi)",
                              name, (long long)lo, (long long)hi, (long long)profile),
               HL_NONE;
    void *arr = g->dims;
    if (hl__grow(&arr, &g->dcap, g->ndims + 1, sizeof(hl_dim)))
        return hl__graph_fail(g, HL_ERR_NOMEM, "out of memory declaring dim"), HL_NONE;
    g->dims = arr;
    hl_expr e = hl_e_var(g->pool, name);
    if (e == HL_NONE)
        return hl__graph_fail(g, HL_ERR_NOMEM, "out of memory declaring dim"), HL_NONE;
    g->dims[g->ndims++] = (hl_dim){hl_e_get(g->pool, e).var, e, lo, hi, profile};
    return e;
}

/* ---- inputs' initialisation ---- */

/* x rounded to f32. Through a volatile float: GCC 12.2 at -O2 (its SLP vectorizer)
 * compiles the pair `out->lo = (double)(float)lo; out->hi = (double)(float)hi;` into a
 * plain copy of both doubles, dropping the rounding. */
static double to_f32(double x)
{
    volatile float f = (float)x;
    return (double)f;
}

/* Checks init for an input of dtype dt (hl_graph.h gives the rules); fills *out with it as
 * it is stored (float bounds rounded to f32, DEFAULT's bounds zero). HL_OK, or HL_ERR_ARG
 * with the reason in why, which begins with the range ("uniform [lo, hi): ..."). */
static hl_status init_check(hl_dtype dt, const hl_init *in, hl_init *out, char *why, size_t cap)
{
    if ((unsigned)in->kind >= HL_INIT_KIND_COUNT) {
        snprintf(why, cap, "kind %d is not an initialisation", (int)in->kind);
        return HL_ERR_ARG;
    }
    *out = *in;
    if (in->kind == HL_INIT_DEFAULT) {
        out->lo = out->hi = 0.0;
        return HL_OK;
    }
    double lo = in->lo, hi = in->hi;
    char rg[96];
    if (hl_dtype_is_float(dt))
        snprintf(rg, sizeof rg, "uniform [%.9g, %.9g)", lo, hi);
    else
        snprintf(rg, sizeof rg, "uniform [%.17g, %.17g)", lo, hi);
    if (!isfinite(lo) || !isfinite(hi)) {
        snprintf(why, cap, "%s: the bounds must be finite numbers", rg);
        return HL_ERR_ARG;
    }
    if (hl_dtype_is_float(dt)) {
        double mx = hl__dtype_float_max(dt);
        if (fabs(lo) > mx || fabs(hi) > mx) {
            snprintf(why, cap, "%s: a bound is beyond the largest finite %s (%.9g)", rg,
                     hl_dtype_name(dt), mx);
            return HL_ERR_ARG;
        }
        out->lo = to_f32(lo);
        out->hi = to_f32(hi);
        if (!(out->lo < out->hi)) {
            snprintf(why, cap, "%s: lo must be below hi%s", rg,
                     lo < hi ? " (they are equal as f32, which the bounds are kept in)" : "");
            return HL_ERR_ARG;
        }
        return HL_OK;
    }
    if (lo != floor(lo) || hi != floor(hi)) {
        snprintf(why, cap, "%s: the bounds must be integers (the input is %s)", rg,
                 hl_dtype_name(dt));
        return HL_ERR_ARG;
    }
    if (!(lo < hi)) {
        snprintf(why, cap, "%s: lo must be below hi", rg);
        return HL_ERR_ARG;
    }
    double dmin = dt == HL_BOOL ? 0.0 : dt == HL_INT ? -2147483648.0 : -(double)HL_INIT_MAX_INT;
    double dmax = dt == HL_BOOL ? 2.0 : dt == HL_INT ? 2147483648.0 : (double)HL_INIT_MAX_INT;
    if (lo < dmin || hi > dmax) {
        snprintf(why, cap, "%s: the values must fit the input's dtype %s (lo >= %.0f, hi <= %.0f)",
                 rg, hl_dtype_name(dt), dmin, dmax);
        return HL_ERR_ARG;
    }
    return HL_OK;
}

hl_status hl_graph_set_input_init(hl_graph *g, uint32_t i, const hl_init *init)
{
    if (g->err.code) return (hl_status)g->err.code;
    if (!init) return hl__graph_fail(g, HL_ERR_ARG, "an input's init needs a record");
    if (i >= g->n_inputs)
        return hl__graph_fail(g, HL_ERR_ARG, "input %u: the graph has %u inputs", i, g->n_inputs);
    const hl_node *nd = &g->nodes[g->inputs[i]];
    char why[200];
    hl_init st;
    if (init_check(nd->dtype, init, &st, why, sizeof why) != HL_OK)
        return hl__graph_fail(g, HL_ERR_ARG, "input '%.64s' (%s): init %s", nd->name,
                              hl_dtype_name(nd->dtype), why);
    g->inits[i] = st;
    return HL_OK;
}

hl_init hl_graph_input_init(const hl_graph *g, uint32_t i)
{
    assert(i < g->n_inputs);
    return g->inits[i];
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
bool hl_op_is_elementwise(hl_op op)
{
    switch (op) {
    case HL_OP_CAST:
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
        return true;
    default:
        return false;
    }
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
                          lm_err *err)
{
    const hl_expr_pool *p = g->pool;
    hl_op op = spec->op;
    if ((unsigned)op >= HL_OP_COUNT)
        return hl__fail_node(g, err, HL_ERR_ARG, id, op, "unknown op %d", (int)op);
    if (spec->n_in != OP_ARITY[op])
        return hl__fail_node(g, err, HL_ERR_ARG, id, op, "takes %u inputs, given %u", OP_ARITY[op],
                             spec->n_in);
    char why[160];
    const hl_node *in[HL_MAX_INPUTS] = {0};
    for (uint32_t i = 0; i < spec->n_in; i++) {
        const hl_in *e = &spec->in[i];
        if (e->node >= id)
            return hl__fail_node(g, err, HL_ERR_ARG, id, op,
                                 "input %u refers to node %u, which is not an earlier "
                                 "node",
                                 i, e->node);
        in[i] = &g->nodes[e->node];
        if (in[i]->op == HL_OP_OUTPUT)
            return hl__fail_node(g, err, HL_ERR_ARG, id, op, "input %u is an Output node", i);
        if (e->view.ndim > HL_MAX_DIMS)
            return hl__fail_node(g, err, HL_ERR_ARG, id, op, "input %u view has %u dims", i,
                                 e->view.ndim);
        for (uint32_t d = 0; d < e->view.ndim; d++) {
            hl_status st = expr_ok(g, e->view.dims[d], why, sizeof why);
            if (!st) st = expr_ok(g, e->view.strides[d], why, sizeof why);
            if (st)
                return hl__fail_node(g, err, st, id, op, "input %u view, dim %u: %s", i, d, why);
        }
    }
    hl_node r = *spec;
    r.ndim = 0;
    /* dtype and shape per op */
    switch (op) {
    case HL_OP_INPUT:
        if ((unsigned)spec->dtype >= HL_DTYPE_COUNT)
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op, "invalid dtype");
        if (spec->ndim > HL_MAX_DIMS)
            return hl__fail_node(g, err, HL_ERR_ARG, id, op, "%u dims (at most %d)", spec->ndim,
                                 HL_MAX_DIMS);
        for (uint32_t d = 0; d < spec->ndim; d++) {
            hl_status st = expr_ok(g, spec->shape[d], why, sizeof why);
            if (st) return hl__fail_node(g, err, st, id, op, "dim %u: %s", d, why);
            if (hl_e_has_z(p, spec->shape[d]))
                return hl__fail_node(g, err, HL_ERR_SHAPE, id, op, "dim %u uses z", d);
            /* every declared dim is >= 1, so this range is what the dim can be */
            hl__range rg = hl__e_range(p, spec->shape[d], 0);
            if (!rg.hi_inf && rg.hi < 0)
                return hl__fail_node(g, err, HL_ERR_SHAPE, id, op,
                                     "dim %u is negative (at most %" PRId64 ")", d, rg.hi);
        }
        r.ndim = spec->ndim;
        memcpy(r.shape, spec->shape, sizeof r.shape);
        if (!spec->name || !spec->name[0])
            return hl__fail_node(g, err, HL_ERR_ARG, id, op, "needs a name");
        break;
    case HL_OP_OUTPUT:
        if (!spec->name || !spec->name[0])
            return hl__fail_node(g, err, HL_ERR_ARG, id, op, "needs a name");
        r.dtype = in[0]->dtype;
        break;
    case HL_OP_CONSTANT:
        r.dtype = HL_F32;
        break;
    case HL_OP_IOTA: {
        hl_status st = expr_ok(g, spec->iota_expr, why, sizeof why);
        if (!st) st = expr_ok(g, spec->iota_len, why, sizeof why);
        if (st) return hl__fail_node(g, err, st, id, op, "%s", why);
    }
        if (hl_e_has_z(p, spec->iota_len))
            return hl__fail_node(g, err, HL_ERR_SHAPE, id, op, "the length uses z");
        r.dtype = HL_INT;
        r.ndim = 1;
        r.shape[0] = spec->iota_len;
        break;
    case HL_OP_CAST:
        if ((unsigned)spec->cast_to >= HL_DTYPE_COUNT)
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op, "invalid target dtype");
        r.dtype = spec->cast_to;
        break;
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
        if (!hl_dtype_is_float(in[0]->dtype))
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op,
                                 "needs a float input, node %u is %s; cast it first",
                                 spec->in[0].node, hl_dtype_name(in[0]->dtype));
        r.dtype = in[0]->dtype;
        break;
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
        if (in[0]->dtype != in[1]->dtype)
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op,
                                 "input dtypes differ (%s and %s); cast one of them",
                                 hl_dtype_name(in[0]->dtype), hl_dtype_name(in[1]->dtype));
        if (op != HL_OP_LESS_THAN && in[0]->dtype == HL_BOOL)
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op, "Bool inputs; cast to a number");
        if (!dims_equal(spec->in[0].view.ndim, spec->in[0].view.dims, spec->in[1].view.ndim,
                        spec->in[1].view.dims)) {
            char a[160], b[160];
            hl__dims_str(p, spec->in[0].view.ndim, spec->in[0].view.dims, a, sizeof a);
            hl__dims_str(p, spec->in[1].view.ndim, spec->in[1].view.dims, b, sizeof b);
            return hl__fail_node(g, err, HL_ERR_SHAPE, id, op, "input shapes %s and %s differ", a,
                                 b);
        }
        r.dtype = op == HL_OP_LESS_THAN ? HL_BOOL : in[0]->dtype;
        break;
    case HL_OP_GATHER:
        if (in[0]->dtype != HL_INT)
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op, "indexes must be int, not %s",
                                 hl_dtype_name(in[0]->dtype));
        r.dtype = in[1]->dtype;
        break;
    case HL_OP_SCATTER:
        if (in[1]->dtype != HL_INT)
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op, "indexes must be int, not %s",
                                 hl_dtype_name(in[1]->dtype));
        if (in[0]->dtype != in[2]->dtype)
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op, "dest is %s but src is %s",
                                 hl_dtype_name(in[0]->dtype), hl_dtype_name(in[2]->dtype));
        if (!dims_equal(spec->in[1].view.ndim, spec->in[1].view.dims, spec->in[2].view.ndim,
                        spec->in[2].view.dims))
            return hl__fail_node(g, err, HL_ERR_SHAPE, id, op, "indexes and src shapes differ");
        r.dtype = in[0]->dtype;
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        if (in[0]->dtype == HL_BOOL)
            return hl__fail_node(g, err, HL_ERR_DTYPE, id, op, "Bool input; cast to a number");
        if (spec->axis >= spec->in[0].view.ndim)
            return hl__fail_node(g, err, HL_ERR_ARG, id, op, "axis %u out of range for %u dims",
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
        hl__graph_fail(g, HL_ERR_ARG, "graph has too many nodes");
        return HL_NONE;
    }
    hl_node r;
    if (validate(g, g->n, spec, &r, &g->err) != HL_OK) return HL_NONE;
    bool io = r.op == HL_OP_INPUT || r.op == HL_OP_OUTPUT;
    if (io && name_taken(g, r.op, r.name, g->n)) {
        hl__fail_node(g, &g->err, HL_ERR_ARG, g->n, r.op, "the name '%s' is already used", r.name);
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
        if (r.op == HL_OP_INPUT) {
            void *in = g->inits;
            if (hl__grow(&in, &g->initcap, cnt + 1, sizeof(hl_init))) goto oom;
            g->inits = in;
        }
        r.name = hl__strdup(spec->name);
        if (!r.name) goto oom;
        if (r.op == HL_OP_INPUT) {
            r.index = g->n_inputs;
            g->inits[g->n_inputs] = (hl_init){HL_INIT_DEFAULT, 0.0, 0.0};
            g->inputs[g->n_inputs++] = g->n;
        } else {
            r.index = g->n_outputs;
            g->outputs[g->n_outputs++] = g->n;
        }
    }
    r.origin = g->cur_origin;
    g->nodes[g->n] = r;
    return g->n++;
oom:
    hl__fail_node(g, &g->err, HL_ERR_NOMEM, g->n, r.op, "out of memory adding the node");
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

hl_status hl_graph_check(const hl_graph *g, lm_err *err)
{
    hl_status pst = hl_expr_pool_check(g->pool, err);
    if (pst) return pst;
    for (uint32_t id = 0; id < g->n; id++) {
        const hl_node *nd = &g->nodes[id];
        hl_node r;
        hl_status st = validate(g, id, nd, &r, err);
        if (st) return st;
        if (r.dtype != nd->dtype || !dims_equal(r.ndim, r.shape, nd->ndim, nd->shape))
            return hl__fail_node(g, err, HL_ERR_SHAPE, id, nd->op,
                                 "stored dtype or shape disagrees with its op");
        if (nd->origin != HL_NONE && nd->origin >= g->n_origins)
            return hl__fail(err, HL_ERR_ARG, NULL,
                            "node %u: origin %u is not one of the graph's %u", id, nd->origin,
                            g->n_origins);
        if (nd->op == HL_OP_INPUT || nd->op == HL_OP_OUTPUT) {
            const uint32_t *ids = nd->op == HL_OP_INPUT ? g->inputs : g->outputs;
            uint32_t cnt = nd->op == HL_OP_INPUT ? g->n_inputs : g->n_outputs;
            if (nd->index >= cnt || ids[nd->index] != id)
                return hl__fail_node(g, err, HL_ERR_ARG, id, nd->op,
                                     "index %u is not its list position", nd->index);
            if (name_taken(g, nd->op, nd->name, id))
                return hl__fail_node(g, err, HL_ERR_ARG, id, nd->op, "name '%s' used twice",
                                     nd->name);
        }
        if (nd->op == HL_OP_INPUT) {
            char why[200];
            hl_init kept;
            const hl_init *have = &g->inits[nd->index];
            if (init_check(nd->dtype, have, &kept, why, sizeof why) != HL_OK)
                return hl__fail_node(g, err, HL_ERR_ARG, id, nd->op, "init %s", why);
            if (have->kind == HL_INIT_UNIFORM && (kept.lo != have->lo || kept.hi != have->hi))
                return hl__fail_node(g, err, HL_ERR_ARG, id, nd->op,
                                     "init bounds are not stored as the rules say");
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
            if (nd->op == HL_OP_INPUT && g->inits[nd->index].kind == HL_INIT_UNIFORM)
                fprintf(f, " init=uniform[%.9g, %.9g)", g->inits[nd->index].lo,
                        g->inits[nd->index].hi);
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
