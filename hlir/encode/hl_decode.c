/* hl_decode.c - an HLIR graph read back out of a serialized e-graph.
 *
 * The inverse of hl_encode.c, over eg_serialized (dense classes, nodes with children).
 * Three phases:
 *
 *   choose   one node per class: the readable node of least tree size (egraph's
 *            eg_serial_extract, ties to the lowest node index), unless the caller's
 *            choice names one. A chosen node costs more than each of its children's
 *            classes, so default choices never form a cycle; caller choices may, and
 *            the walk below reports it.
 *   declare  dims (every Dim node), then inputs (every Input node), in index order.
 *   build    the compute nodes the outputs reach, in Kahn order with the lowest class
 *            first (which is the original order for a graph read straight back),
 *            each through hl_graph_add, which checks it completely; then the Outputs.
 *
 * Memos per class (node id, expression) make shared sub-terms one node, which is what
 * the e-graph's hash-consing made them.
 */
#include "encode/hl_encode_int.h"
#include "eg_serial.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>


/* Where a class is in a walk of the chosen nodes (expressions, IR). */
enum { NEW = 0, BUSY, DONE };

typedef struct dec {
    const eg_engine *e;
    const eg_serialized *s;
    hl_graph *g;
    hl_expr_pool *p;
    lm_err *err;
    uint8_t *nctor; /* per node: its hl_enc_ctor, or HL_ENC_NONE (literal, unknown table) */
    uint32_t *pick; /* per class: the chosen node, or UINT32_MAX */
    uint64_t *cost; /* per class: tree size of the chosen node */
    uint8_t *state; /* per class: NEW / BUSY / DONE, for IR and Expression walks */
    uint32_t *memo; /* per class: built node id (IR) or expression id (Expression) */
    int sort_i64, sort_f64, sort_str;
} dec;

static hl_status fail(dec *d, uint32_t cls, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static hl_status fail(dec *d, uint32_t cls, const char *fmt, ...)
{
    char msg[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    uint32_t n = cls < d->s->n_classes ? d->pick[cls] : UINT32_MAX;
    if (n != UINT32_MAX)
        return hl__fail(d->err, HL_ERR_PARSE, NULL, "decode: class c%u (node n%u, %s): %s", cls, n,
                        d->s->nodes[n].op, msg);
    return hl__fail(d->err, HL_ERR_PARSE, NULL, "decode: class c%u: %s", cls, msg);
}

static bool is_literal(const dec *d, uint32_t cls)
{
    int so = (int)d->s->class_sort[cls];
    return so == d->sort_i64 || so == d->sort_f64 || so == d->sort_str;
}

/* ==================================================================================
 * Choosing one node per class
 * ================================================================================== */

/* The vocabulary's row of node n, or NULL for a literal or a table the schema lacks. */
static const hl_enc_info *info(const dec *d, uint32_t n)
{
    return d->nctor[n] < HL_ENC_COUNT ? &hl_enc_vocab[d->nctor[n]] : NULL;
}

/* Constructors the decoder reads: the vocabulary's terms (HL_ENC_ROLE_TERM). The list and
 * replacement helpers of Luminal's base schema are left to rewrite rules: a class holding
 * only those cannot be read. An MFloat is read when it holds an integer. */
static bool readable(const dec *d, uint32_t n)
{
    const hl_enc_info *in = info(d, n);
    if (!in || in->role != HL_ENC_ROLE_TERM) return false;
    if (d->nctor[n] == HL_ENC_MFLOAT) {
        double v = eg_value_as_f64(d->s->class_value[d->s->children[d->s->nodes[n].child_start]]);
        return isfinite(v) && v == floor(v) && fabs(v) < 9e18;
    }
    return true;
}

/* A node choose may pick: a readable term, or a literal of sort i64, f64 or String. */
static bool usable(void *ctx, uint32_t n)
{
    const dec *d = ctx;
    const eg_snode *nd = &d->s->nodes[n];
    if (nd->table == UINT32_MAX) return is_literal(d, nd->eclass);
    return !nd->subsumed && readable(d, n);
}

/* One node per class: least tree size, ties to the lowest index (eg_serial_extract, the
 * extractor llir's search space uses too); a literal class of another sort keeps its
 * literal node as its pick, with no finite cost. */
static hl_status choose(dec *d)
{
    const eg_serialized *s = d->s;
    uint64_t *work = hl__alloc(eg_serial_extract_work(s), sizeof(uint64_t));
    if (!work) return hl__fail(d->err, HL_ERR_NOMEM, NULL, "decode: out of memory");
    eg_serial_extract(s, usable, d, d->cost, d->pick, work);
    hl__free(work);
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (s->nodes[i].table == UINT32_MAX && d->pick[s->nodes[i].eclass] == UINT32_MAX)
            d->pick[s->nodes[i].eclass] = i;
    return HL_OK;
}

/* The chosen node of cls, which must build sort (and, for IR, be an Op or an Input: an
 * op reads a tensor, never an Output or the root). */
static hl_status chosen(dec *d, uint32_t cls, hl_enc_sort sort, const char *what, uint32_t *node)
{
    *node = 0; /* defined on every path; meaningful on success only */
    if (cls >= d->s->n_classes) return fail(d, UINT32_MAX, "child class c%u does not exist", cls);
    uint32_t n = d->pick[cls];
    if (n == UINT32_MAX)
        return fail(d, cls, "no readable node for %s (only rewrite helpers or cycles)", what);
    const hl_enc_info *in = info(d, n);
    if (!in || in->sort != sort ||
        (sort == HL_SORT_IR && d->nctor[n] != HL_ENC_OP && d->nctor[n] != HL_ENC_INPUT))
        return fail(d, cls, "expected %s", what);
    *node = n;
    return HL_OK;
}

static uint32_t kid(const dec *d, uint32_t node, uint32_t k)
{
    return d->s->children[d->s->nodes[node].child_start + k];
}

static hl_status lit(dec *d, uint32_t cls, int sort, const char *what, eg_value *v)
{
    *v = 0;
    if (cls >= d->s->n_classes || (int)d->s->class_sort[cls] != sort)
        return fail(d, cls, "expected a literal %s", what);
    *v = d->s->class_value[cls];
    return HL_OK;
}

/* ==================================================================================
 * Expressions, lists, dtypes
 * ================================================================================== */

static hl_status dim_for(dec *d, const char *name, hl_expr *out, uint32_t cls);

static hl_status expr(dec *d, uint32_t cls, hl_expr *out)
{
    uint32_t n;
    hl_status st = chosen(d, cls, HL_SORT_EXPRESSION, "an Expression", &n);
    if (st) return st;
    if (d->state[cls] == DONE) {
        *out = d->memo[cls];
        return HL_OK;
    }
    if (d->state[cls] == BUSY) return fail(d, cls, "the chosen expressions form a cycle");
    d->state[cls] = BUSY;
    hl_expr r = HL_NONE;
    eg_value v;
    const hl_enc_info *in = info(d, n);
    switch (in->expr) {
    case HL_E_NUM: /* MNum, or an MFloat holding an integer (readable checked it) */
        if (d->nctor[n] == HL_ENC_MFLOAT) {
            st = lit(d, kid(d, n, 0), d->sort_f64, "f64", &v);
            if (!st) r = hl_e_num(d->p, (int64_t)eg_value_as_f64(v));
        } else {
            st = lit(d, kid(d, n, 0), d->sort_i64, "i64", &v);
            if (!st) r = hl_e_num(d->p, eg_value_as_i64(v));
        }
        break;
    case HL_E_Z:
        r = hl_e_z(d->p);
        break;
    case HL_E_VAR:
        st = lit(d, kid(d, n, 0), d->sort_str, "String", &v);
        if (!st) st = dim_for(d, eg_value_as_string(d->e, v), &r, cls);
        break;
    default: { /* the binary kinds, and MFloorTo (no kind of its own) */
        hl_expr a, b;
        st = expr(d, kid(d, n, 0), &a);
        if (!st) st = expr(d, kid(d, n, 1), &b);
        if (st) break;
        if (d->nctor[n] == HL_ENC_MFLOORTO) /* floor(a / b) * b */
            r = hl_e_mul(d->p, hl_e_div(d->p, a, b), b);
        else
            r = hl_e_bin(d->p, in->expr, a, b);
    }
    }
    if (st) return st;
    if (r == HL_NONE) /* the pool marks only allocation failures; the rest is overflow */
        return hl_expr_pool_failed(d->p)
                   ? hl__fail(d->err, HL_ERR_NOMEM, NULL, "decode: out of memory")
                   : fail(d, cls, "the expression's value overflows int64");
    d->state[cls] = DONE;
    d->memo[cls] = r;
    *out = r;
    return HL_OK;
}

/* An EList of at most HL_MAX_DIMS expressions. */
static hl_status elist(dec *d, uint32_t cls, const char *field, uint32_t *n, hl_expr *out)
{
    *n = 0;
    for (;;) {
        uint32_t node;
        hl_status st = chosen(d, cls, HL_SORT_ELIST, field, &node);
        if (st) return st;
        if (d->nctor[node] == HL_ENC_ENIL) return HL_OK; /* else ECons, the one other read */
        if (*n == HL_MAX_DIMS)
            return fail(d, cls, "%s has more than %d entries (a cycle, or too many dims)", field,
                        HL_MAX_DIMS);
        st = expr(d, kid(d, node, 0), &out[(*n)++]);
        if (st) return st;
        cls = kid(d, node, 1);
    }
}

static hl_status dtype(dec *d, uint32_t cls, hl_dtype *out)
{
    uint32_t n;
    hl_status st = chosen(d, cls, HL_SORT_DTYPE, "a DType", &n);
    if (!st) *out = info(d, n)->dtype;
    return st;
}

/* The expression of dynamic dim name; a name no Dim declares (a graph Luminal encoded)
 * is declared here with the widest range, [1, 2^31 - 1], profiled at 1. */
static hl_status dim_for(dec *d, const char *name, hl_expr *out, uint32_t cls)
{
    const hl_dim *dm = hl_graph_dim_find(d->g, name);
    if (dm) {
        *out = dm->expr;
        return HL_OK;
    }
    hl_expr v = hl_graph_dim(d->g, name, 1, INT32_MAX, 1);
    if (v == HL_NONE) {
        const lm_err *ge = hl_graph_error(d->g); /* its code: HL_ERR_ARG, HL_ERR_NOMEM */
        return hl__fail(d->err, ge->code, NULL, "decode: class c%u: dim '%s': %s", cls, name,
                        ge->msg);
    }
    *out = v;
    return HL_OK;
}

/* ==================================================================================
 * Declarations: dims, inputs, outputs (each the chosen node of its class)
 * ================================================================================== */

typedef struct decl {
    int64_t index;
    uint32_t node;
} decl;

static int decl_cmp(const void *a, const void *b)
{
    const decl *x = a, *y = b;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Every node of constructor c, chosen or not, sorted by its index field (child 0 for
 * Dim and Input, child 1 for Output), checked to number 0, 1, 2, ... Declarations are
 * the graph's interface: an input that rules proved equal to something else is still an
 * input the caller passes. */
static hl_status collect(dec *d, hl_enc_ctor c, uint32_t field, decl **out, uint32_t *count)
{
    const eg_serialized *s = d->s;
    uint32_t n = 0;
    *out = NULL;
    *count = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        n += d->nctor[i] == c;
    decl *v = hl__alloc(n, sizeof(decl));
    if (!v) return hl__fail(d->err, HL_ERR_NOMEM, NULL, "decode: out of memory");
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if (d->nctor[i] != c) continue;
        eg_value idx;
        hl_status st = lit(d, kid(d, i, field), d->sort_i64, "index (i64)", &idx);
        if (st) {
            hl__free(v);
            return st;
        }
        v[k++] = (decl){eg_value_as_i64(idx), i};
    }
    qsort(v, n, sizeof(decl), decl_cmp);
    for (uint32_t i = 0; i < n; i++)
        if (v[i].index != (int64_t)i) {
            uint32_t cls = s->nodes[v[i].node].eclass;
            int64_t found = v[i].index;
            hl__free(v);
            return fail(d, cls, "%s indexes must be 0, 1, 2, ...; found %" PRId64 " at position %u",
                        hl_enc_vocab[c].name, found, i);
        }
    *out = v;
    *count = n;
    return HL_OK;
}

static hl_status declare_dims(dec *d)
{
    decl *v;
    uint32_t n;
    hl_status st = collect(d, HL_ENC_DIM, 0, &v, &n);
    for (uint32_t i = 0; i < n && !st; i++) {
        uint32_t node = v[i].node, cls = d->s->nodes[node].eclass;
        eg_value name, lo, hi, prof;
        st = lit(d, kid(d, node, 1), d->sort_str, "name (String)", &name);
        if (!st) st = lit(d, kid(d, node, 2), d->sort_i64, "lo (i64)", &lo);
        if (!st) st = lit(d, kid(d, node, 3), d->sort_i64, "hi (i64)", &hi);
        if (!st) st = lit(d, kid(d, node, 4), d->sort_i64, "profile (i64)", &prof);
        if (st) break;
        if (hl_graph_dim(d->g, eg_value_as_string(d->e, name), eg_value_as_i64(lo),
                         eg_value_as_i64(hi), eg_value_as_i64(prof)) == HL_NONE) {
            const lm_err *ge = hl_graph_error(d->g);
            st = hl__fail(d->err, ge->code, NULL, "decode: class c%u (Dim): %s", cls, ge->msg);
        }
    }
    hl__free(v);
    return st;
}

static hl_status add_node(dec *d, uint32_t cls, const hl_node *spec, uint32_t *id)
{
    *id = hl_graph_add(d->g, spec);
    if (*id == HL_NONE) {
        const lm_err *ge = hl_graph_error(d->g);
        hl__fail(d->err, ge->code, NULL, "decode: class c%u (%s): %s", cls, hl_op_name(spec->op),
                 ge->msg);
        return ge->code;
    }
    return HL_OK;
}

static hl_status declare_inputs(dec *d)
{
    decl *v;
    uint32_t n;
    hl_status st = collect(d, HL_ENC_INPUT, 0, &v, &n);
    for (uint32_t i = 0; i < n && !st; i++) {
        uint32_t node = v[i].node, cls = d->s->nodes[node].eclass, id;
        eg_value name;
        hl_node spec = {.op = HL_OP_INPUT};
        st = lit(d, kid(d, node, 1), d->sort_str, "name (String)", &name);
        if (!st) st = dtype(d, kid(d, node, 2), &spec.dtype);
        if (!st) st = elist(d, kid(d, node, 3), "the input's shape", &spec.ndim, spec.shape);
        if (st) break;
        spec.name = (char *)eg_value_as_string(d->e, name);
        st = add_node(d, cls, &spec, &id);
        if (st) break;
        if (d->pick[cls] == node) { /* ops that read this class read the input */
            d->state[cls] = DONE;
            d->memo[cls] = id;
        }
    }
    hl__free(v);
    return st;
}

/* ==================================================================================
 * Compute nodes
 * ================================================================================== */

static hl_status ir(dec *d, uint32_t cls, uint32_t *id);

/* in.view = (n, dims, strides) */
static void set_view(hl_in *in, uint32_t n, const hl_expr *dims, const hl_expr *strides)
{
    in->view.ndim = n;
    for (uint32_t i = 0; i < n; i++) {
        in->view.dims[i] = dims[i];
        in->view.strides[i] = strides[i];
    }
}

/* An EList field of strides that must pair with n dims. */
static hl_status strides_of(dec *d, uint32_t cls, const char *field, uint32_t n, hl_expr *out)
{
    uint32_t m;
    hl_status st = elist(d, cls, field, &m, out);
    if (!st && m != n) return fail(d, cls, "%s has %u entries for %u dims", field, m, n);
    return st;
}

/* HLIR stores every output contiguously, so out_strides must be the contiguous strides
 * of the output dims. */
static hl_status check_out(dec *d, uint32_t cls, uint32_t field_cls, uint32_t n,
                           const hl_expr *dims)
{
    hl_expr got[HL_MAX_DIMS];
    hl_status st = strides_of(d, field_cls, "out_strides", n, got);
    if (st) return st;
    hl_view cv;
    st = hl_view_contiguous(d->p, n, dims, &cv, d->err);
    if (st) return st;
    for (uint32_t i = 0; i < n; i++)
        if (got[i] != cv.strides[i])
            return fail(d, cls,
                        "out_strides[%u] is not the contiguous stride; HLIR writes every "
                        "output contiguously (a layout rewrite cannot be decoded to HLIR)",
                        i);
    return HL_OK;
}

static hl_status op_node(dec *d, uint32_t cls, uint32_t node, uint32_t *id)
{
    uint32_t kn, kcls = kid(d, node, 0);
    hl_status st = chosen(d, kcls, HL_SORT_OPKIND, "an OpKind", &kn);
    if (st) return st;
    const hl_enc_info *kind = info(d, kn); /* its fields name the messages below */
    const hl_enc_field *f = kind->fields;
    hl_node spec = {0};
    spec.op = kind->op;
    /* the inputs, built first */
    uint32_t lcls = kid(d, node, 1);
    for (;;) {
        uint32_t ln;
        st = chosen(d, lcls, HL_SORT_ILIST, "an IList", &ln);
        if (st) return st;
        if (d->nctor[ln] == HL_ENC_INIL) break;
        if (spec.n_in == hl_op_arity(spec.op))
            return fail(d, cls, "%s takes %u inputs; the IList has more", hl_op_name(spec.op),
                        hl_op_arity(spec.op));
        st = ir(d, kid(d, ln, 0), &spec.in[spec.n_in].node);
        if (st) return st;
        spec.n_in++;
        lcls = kid(d, ln, 1);
    }
    if (spec.n_in != hl_op_arity(spec.op))
        return fail(d, cls, "%s takes %u inputs, the IList has %u", hl_op_name(spec.op),
                    hl_op_arity(spec.op), spec.n_in);
    hl_expr sh[HL_MAX_DIMS], s0[HL_MAX_DIMS], s1[HL_MAX_DIMS], s2[HL_MAX_DIMS];
    hl_expr sh1[HL_MAX_DIMS];
    uint32_t n = 0, n1 = 0;
    eg_value v;
    switch (spec.op) {
    case HL_OP_CONSTANT:
        st = lit(d, kid(d, kn, 0), d->sort_f64, "value (f64)", &v);
        spec.constant = (float)eg_value_as_f64(v);
        break;
    case HL_OP_IOTA:
        st = expr(d, kid(d, kn, 0), &spec.iota_expr);
        if (!st) st = expr(d, kid(d, kn, 1), &spec.iota_len);
        break;
    case HL_OP_CAST:
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
        st = elist(d, kid(d, kn, 0), f[0].name, &n, sh);
        if (!st) st = strides_of(d, kid(d, kn, 1), f[1].name, n, s0);
        if (!st) st = check_out(d, cls, kid(d, kn, 2), n, sh);
        if (!st && spec.op == HL_OP_CAST) st = dtype(d, kid(d, kn, 3), &spec.cast_to);
        if (!st) set_view(&spec.in[0], n, sh, s0);
        break;
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
        st = elist(d, kid(d, kn, 0), f[0].name, &n, sh);
        if (!st) st = strides_of(d, kid(d, kn, 1), f[1].name, n, s0);
        if (!st) st = strides_of(d, kid(d, kn, 2), f[2].name, n, s1);
        if (!st) st = check_out(d, cls, kid(d, kn, 3), n, sh);
        if (!st) set_view(&spec.in[0], n, sh, s0);
        if (!st) set_view(&spec.in[1], n, sh, s1);
        break;
    case HL_OP_GATHER:
        st = elist(d, kid(d, kn, 0), f[0].name, &n, sh);
        if (!st) st = strides_of(d, kid(d, kn, 1), f[1].name, n, s0);
        if (!st) st = elist(d, kid(d, kn, 2), f[2].name, &n1, sh1);
        if (!st) st = strides_of(d, kid(d, kn, 3), f[3].name, n1, s1);
        if (!st) set_view(&spec.in[0], n, sh, s0);
        if (!st) set_view(&spec.in[1], n1, sh1, s1);
        break;
    case HL_OP_SCATTER:
        st = elist(d, kid(d, kn, 0), f[0].name, &n, sh);
        if (!st) st = strides_of(d, kid(d, kn, 1), f[1].name, n, s0);
        if (!st) st = elist(d, kid(d, kn, 2), f[2].name, &n1, sh1);
        if (!st) st = strides_of(d, kid(d, kn, 3), f[3].name, n1, s1);
        if (!st) st = strides_of(d, kid(d, kn, 4), f[4].name, n1, s2);
        if (!st) set_view(&spec.in[0], n, sh, s0);
        if (!st) set_view(&spec.in[1], n1, sh1, s1);
        if (!st) set_view(&spec.in[2], n1, sh1, s2);
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        st = elist(d, kid(d, kn, 0), f[0].name, &n, sh);
        if (!st && n == HL_MAX_DIMS)
            st = fail(d, cls, "a reduction's input has at most %d dims", HL_MAX_DIMS);
        if (!st) st = expr(d, kid(d, kn, 1), &sh[n]);
        if (!st) st = strides_of(d, kid(d, kn, 2), f[2].name, n, s0);
        if (!st) st = expr(d, kid(d, kn, 3), &s0[n]);
        if (!st) st = check_out(d, cls, kid(d, kn, 4), n, sh);
        if (!st) set_view(&spec.in[0], n + 1, sh, s0);
        spec.axis = n; /* the encoding keeps the reduced dim, not its position: put it last */
        break;
    default:
        st = fail(d, cls, "unexpected OpKind");
    }
    if (st) return st;
    return add_node(d, cls, &spec, id);
}

/* The node of IR class cls, built (with everything it reads) on first use. */
static hl_status ir(dec *d, uint32_t cls, uint32_t *id)
{
    uint32_t node;
    hl_status st =
        chosen(d, cls, HL_SORT_IR, "an Op or an Input (an op cannot read an Output)", &node);
    if (st) return st;
    if (d->state[cls] == DONE) {
        *id = d->memo[cls];
        return HL_OK;
    }
    if (d->state[cls] == BUSY) return fail(d, cls, "the chosen nodes form a cycle");
    if (d->nctor[node] == HL_ENC_INPUT) return fail(d, cls, "an Input that was not declared");
    d->state[cls] = BUSY;
    st = op_node(d, cls, node, id);
    if (st) return st;
    d->state[cls] = DONE;
    d->memo[cls] = *id;
    return HL_OK;
}

/* ---- the order of the compute nodes ----
 *
 * The nodes reachable from the outputs are built in Kahn order with the lowest class
 * first among the ready ones. Encoding creates the classes of a graph's nodes in its
 * Kahn order, so a graph read straight back gets its nodes in the order it had (less
 * the nodes no output reads, and with equal nodes merged into one). */

typedef struct reach_t {
    uint8_t *seen;  /* per class: 0 unseen, 1 on the walk's stack, 2 reached */
    uint8_t *nin;   /* per reached Op class: its number of inputs */
    uint32_t *ins;  /* per reached Op class: its input classes, HL_MAX_INPUTS each */
    uint32_t *list; /* the reached Op classes, in walk order */
    uint32_t n;
} reach_t;

static hl_status reach(dec *d, reach_t *r, uint32_t cls)
{
    uint32_t node;
    hl_status st =
        chosen(d, cls, HL_SORT_IR, "an Op or an Input (an op cannot read an Output)", &node);
    if (st) return st;
    if (r->seen[cls] == 2 || d->state[cls] == DONE) return HL_OK;
    if (r->seen[cls] == 1) return fail(d, cls, "the chosen nodes form a cycle");
    if (d->nctor[node] == HL_ENC_INPUT) return fail(d, cls, "an Input that was not declared");
    r->seen[cls] = 1;
    uint32_t lcls = kid(d, node, 1), k = 0;
    for (;;) {
        uint32_t ln;
        st = chosen(d, lcls, HL_SORT_ILIST, "an IList", &ln);
        if (st) return st;
        if (d->nctor[ln] == HL_ENC_INIL) break;
        if (k == HL_MAX_INPUTS) return fail(d, cls, "an IList longer than any op takes");
        uint32_t in = kid(d, ln, 0);
        st = reach(d, r, in);
        if (st) return st;
        r->ins[(size_t)cls * HL_MAX_INPUTS + k++] = in;
        lcls = kid(d, ln, 1);
    }
    r->nin[cls] = (uint8_t)k;
    r->seen[cls] = 2;
    r->list[r->n++] = cls;
    return HL_OK;
}

/* Builds every reached Op class, in Kahn order, lowest class first. */
static hl_status build_reached(dec *d, reach_t *r)
{
    uint32_t nc = d->s->n_classes;
    uint32_t *indeg = hl__zalloc(nc, sizeof(uint32_t));
    uint32_t *ustart = hl__zalloc((size_t)nc + 1, sizeof(uint32_t));
    uint32_t *users = hl__alloc((size_t)r->n * HL_MAX_INPUTS, sizeof(uint32_t));
    uint32_t *pos = hl__alloc(nc, sizeof(uint32_t));
    uint32_t *heap = hl__alloc(r->n, sizeof(uint32_t));
    hl_status st = HL_OK;
    if (!indeg || !ustart || !users || !pos || !heap) {
        st = hl__fail(d->err, HL_ERR_NOMEM, NULL, "decode: out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < r->n; i++) {
        uint32_t c = r->list[i];
        for (uint32_t k = 0; k < r->nin[c]; k++) {
            uint32_t in = r->ins[(size_t)c * HL_MAX_INPUTS + k];
            if (r->seen[in] != 2) continue; /* an Input, built already */
            indeg[c]++;
            ustart[in + 1]++;
        }
    }
    for (uint32_t c = 0; c < nc; c++)
        ustart[c + 1] += ustart[c];
    memcpy(pos, ustart, nc * sizeof(uint32_t));
    for (uint32_t i = 0; i < r->n; i++) {
        uint32_t c = r->list[i];
        for (uint32_t k = 0; k < r->nin[c]; k++) {
            uint32_t in = r->ins[(size_t)c * HL_MAX_INPUTS + k];
            if (r->seen[in] == 2) users[pos[in]++] = c;
        }
    }
    uint32_t nh = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (indeg[r->list[i]] == 0) hl__heap_push(heap, &nh, r->list[i]);
    while (nh && !st) {
        uint32_t c = hl__heap_pop(heap, &nh), id;
        d->state[c] = BUSY;
        st = op_node(d, c, d->pick[c], &id);
        if (st) break;
        d->state[c] = DONE;
        d->memo[c] = id;
        for (uint32_t k = ustart[c]; k < ustart[c + 1]; k++)
            if (--indeg[users[k]] == 0) hl__heap_push(heap, &nh, users[k]);
    }
done:
    hl__free(indeg);
    hl__free(ustart);
    hl__free(users);
    hl__free(pos);
    hl__free(heap);
    return st;
}

static hl_status build_outputs(dec *d)
{
    uint32_t nc = d->s->n_classes;
    decl *v;
    uint32_t n;
    hl_status st = collect(d, HL_ENC_OUTPUT, 1, &v, &n);
    if (!st && n == 0) st = fail(d, UINT32_MAX, "the e-graph holds no Output node");
    reach_t r = {0};
    if (!st) {
        r.seen = hl__zalloc(nc, 1);
        r.nin = hl__zalloc(nc, 1);
        r.ins = hl__alloc((size_t)nc * HL_MAX_INPUTS, sizeof(uint32_t));
        r.list = hl__alloc(nc, sizeof(uint32_t));
        if (!r.seen || !r.nin || !r.ins || !r.list)
            st = hl__fail(d->err, HL_ERR_NOMEM, NULL, "decode: out of memory");
    }
    for (uint32_t i = 0; i < n && !st; i++)
        st = reach(d, &r, kid(d, v[i].node, 0));
    if (!st) st = build_reached(d, &r);
    for (uint32_t i = 0; i < n && !st; i++) {
        uint32_t node = v[i].node, cls = d->s->nodes[node].eclass, id;
        hl_node spec = {.op = HL_OP_OUTPUT, .n_in = 1};
        hl_expr dims[HL_MAX_DIMS], strides[HL_MAX_DIMS];
        uint32_t nd;
        eg_value name;
        st = ir(d, kid(d, node, 0), &spec.in[0].node);
        if (!st) st = lit(d, kid(d, node, 2), d->sort_str, "name (String)", &name);
        if (!st) st = elist(d, kid(d, node, 3), "the output's shape", &nd, dims);
        if (!st) st = strides_of(d, kid(d, node, 4), "the output's strides", nd, strides);
        if (st) break;
        if (!st) set_view(&spec.in[0], nd, dims, strides);
        spec.name = (char *)eg_value_as_string(d->e, name);
        st = add_node(d, cls, &spec, &id);
    }
    hl__free(r.seen);
    hl__free(r.nin);
    hl__free(r.ins);
    hl__free(r.list);
    hl__free(v);
    return st;
}

/* ==================================================================================
 * Entry points
 * ================================================================================== */

hl_graph *hl_graph_decode(const eg_engine *e, const eg_serialized *s, const uint32_t *choice,
                          lm_err *err)
{
    dec d = {.e = e, .s = s, .err = err};
    d.sort_i64 = eg_sort_lookup(e, "i64");
    d.sort_f64 = eg_sort_lookup(e, "f64");
    d.sort_str = eg_sort_lookup(e, "String");
    uint32_t nc = s->n_classes;
    d.g = hl_graph_new();
    d.nctor = hl__alloc(s->n_nodes, 1);
    d.pick = hl__alloc(nc, sizeof(uint32_t));
    d.cost = hl__alloc(nc, sizeof(uint64_t));
    d.state = hl__zalloc(nc, 1);
    d.memo = hl__alloc(nc, sizeof(uint32_t));
    hl_status st = HL_OK;
    if (!d.g || !d.nctor || !d.pick || !d.cost || !d.state || !d.memo) {
        st = hl__fail(err, HL_ERR_NOMEM, NULL, "decode: out of memory");
        goto done;
    }
    d.p = hl_graph_exprs(d.g);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const eg_snode *n = &s->nodes[i];
        hl_enc_ctor c = n->table == UINT32_MAX ? HL_ENC_NONE : hl_enc_find(n->op);
        if (c != HL_ENC_NONE &&
            (hl_enc_vocab[c].role == HL_ENC_ROLE_FUNCTION || n->nchildren != hl_enc_vocab[c].arity))
            c = HL_ENC_NONE; /* a function's row, or a table of that name with another arity */
        d.nctor[i] = (uint8_t)c;
    }
    st = choose(&d);
    for (uint32_t c = 0; choice && c < nc && !st; c++) {
        uint32_t n = choice[c];
        if (n == UINT32_MAX) continue;
        if (n >= s->n_nodes || s->nodes[n].eclass != c)
            st = fail(&d, c, "the caller's choice n%u is not a node of this class", n);
        else if (!readable(&d, n))
            st = fail(&d, c, "the caller's choice n%u (%s) is not a node the decoder reads", n,
                      s->nodes[n].op);
        else
            d.pick[c] = n;
    }
    if (!st) st = declare_dims(&d);
    if (!st) st = declare_inputs(&d);
    if (!st) st = build_outputs(&d);
done:
    hl__free(d.nctor);
    hl__free(d.pick);
    hl__free(d.cost);
    hl__free(d.state);
    hl__free(d.memo);
    if (st) {
        hl_graph_free(d.g);
        return NULL;
    }
    return d.g;
}

hl_graph *hl_graph_decode_engine(eg_engine *e, lm_err *err)
{
    eg_serialized s;
    lm_err ee = {0};
    if (eg_serialize(e, NULL, &s, &ee) != 0) {
        hl__fail(err, HL_ERR_ARG, NULL, "decode: the e-graph did not serialize: %s", ee.msg);
        return NULL;
    }
    hl_graph *g = hl_graph_decode(e, &s, NULL, err);
    eg_serialized_free(&s);
    return g;
}
