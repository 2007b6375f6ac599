/* ll_int.h - what llir's files share: the allocation door, the error door, the engine
 * adapter, the space's layout, the graph's layout, and what the executor, the HLIR
 * lowering and the comparison share (nodes in messages, the hlir adapters).
 *
 * Memory goes through ll__alloc and friends (LM_MEM_DOOR below), which check sizes for overflow
 * and return NULL on failure; callers turn NULL into LM_ENOMEM and leave their
 * structure as it was. Errors go through ll__fail (ll_err.c), which ends in lm_err_setv.
 *
 * Every call into the engine that can fail goes through ll_eg.c, which adds the context
 * of the call (the phase, the schedule) to the engine's lm_err. llir calls no fallible hlir
 * function: expressions are built with the hl_e_* constructors (HL_NONE on failure)
 * and evaluated by llir's own evaluator (ll_expr.c).
 */
#ifndef LUMINAL_LL_INT_H
#define LUMINAL_LL_INT_H

#include "llir.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ==================================================================================
 * Memory and errors
 * ================================================================================== */

/* The one allocation door, over base's (base.h, "Memory"): ll__alloc(n, size) gives n *
 * size bytes, NULL on overflow or failure, never NULL for n == 0; ll__realloc leaves p
 * untouched on failure; ll__grow doubles (lm_grow), 0 or -1 with *arr and *cap untouched.
 * Tests fail the n-th allocation with lm_mem_fail_after. */
LM_MEM_DOOR(ll)

/* The door every llir error goes through: lm_err_setv with the location. */
int ll__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
int ll__oom(lm_err *err, const char *where);
/* ll__fail with "prefix: " before the message fmt formats from ap (the first error wins:
 * nothing happens when err is already set). What every located failure of llir's files
 * (a node, a class, a field) ends in. */
int ll__vfail_prefix(lm_err *err, int code, const lm_loc *loc, const char *prefix, const char *fmt,
                     va_list ap);

/* ==================================================================================
 * The engine adapter (ll_eg.c)
 * ================================================================================== */

/* eg_run_text; the engine's message, its code as an lm_code. */
int ll__eg_run_text(eg_engine *e, const char *text, const char *name, lm_err *err);
/* eg_run_schedule; what names the schedule in a message ("phase 'fuse'"). */
int ll__eg_run_schedule(eg_engine *e, const char *sched, const char *what, eg_stop_reason *why,
                        lm_err *err);
/* eg_serialize with one root of sort root_sort (the caller frees out). */
int ll__eg_serialize(eg_engine *e, eg_value root, int root_sort, eg_serialized *out, lm_err *err);
/* The next live row of a table (eg_table_next_row): true with cols filled, false at the
 * end. */
bool ll__eg_next_row(const eg_engine *e, int table, size_t *cursor, eg_value *cols);
/* eg_serialized_write_json into a malloc'd string (free with free()). */
char *ll__eg_json(eg_engine *e, const eg_serialized *s, lm_err *err);
/* The provenance of serialized node n: LM_NONE until the engine has eg_row_origin, and
 * its text ("origin unknown" for LM_NONE). */
uint32_t ll__eg_origin(const eg_engine *e, const eg_serialized *s, uint32_t n);
const char *ll__eg_origin_text(const eg_engine *e, uint32_t origin, char *buf, size_t cap);

/* ==================================================================================
 * Constructors the space reads
 * ==================================================================================
 *
 * Every serialized node gets a code: a registry op (0 .. ll_op_count()-1), or
 * LL__C_ENC + c for constructor c of hlir's encoding vocabulary (hl_enc_ctor, the one
 * table of the encoding's constructors, hl_encode.h) that is not a registered op: the
 * encoding's structure (Op, ICons, INil), expressions, lists, dtypes, Dim; then codes for
 * literals, the rules-only helpers and constructors of other sorts. */

enum {
    LL__C_ENC = 0x1000,
    LL__C_OP = LL__C_ENC + HL_ENC_OP, /* (Op OpKind IList) */
    LL__C_ICONS = LL__C_ENC + HL_ENC_ICONS,
    LL__C_INIL = LL__C_ENC + HL_ENC_INIL,
    LL__C_MNUM = LL__C_ENC + HL_ENC_MNUM,
    LL__C_MFLOAT = LL__C_ENC + HL_ENC_MFLOAT,
    LL__C_MITER = LL__C_ENC + HL_ENC_MITER,
    LL__C_MVAR = LL__C_ENC + HL_ENC_MVAR,
    LL__C_MFLOORTO = LL__C_ENC + HL_ENC_MFLOORTO,
    LL__C_ECONS = LL__C_ENC + HL_ENC_ECONS,
    LL__C_ENIL = LL__C_ENC + HL_ENC_ENIL,
    LL__C_DT = LL__C_ENC + HL_ENC_F32, /* LL__C_DT + hl_dtype: (F32) (F16) (Bf16) ... */
    LL__C_DT_END = LL__C_DT + HL_DTYPE_COUNT,
    LL__C_DIM = LL__C_ENC + HL_ENC_DIM,
    LL__C_LITERAL = LL__C_ENC + HL_ENC_COUNT, /* a literal node (i64, f64, String, ...) */
    LL__C_HELPER,  /* a rules-only helper llir does not read (MReplace, RowMajor, ...) */
    LL__C_UNKNOWN  /* a constructor of another sort (a rules' own helper datatype) */
};
_Static_assert(HL_ENC_F8E5M2 - HL_ENC_F32 + 1 == HL_DTYPE_COUNT,
               "the vocabulary lists the DTypes in hl_dtype order");

/* The hl_expr_kind of a binary Expression code (MAdd .. MLt), or HL_E_KIND_COUNT. */
static inline hl_expr_kind ll__code_binary(uint16_t c)
{
    if (c < LL__C_ENC || c >= LL__C_ENC + HL_ENC_COUNT) return HL_E_KIND_COUNT;
    const hl_enc_info *in = &hl_enc_vocab[c - LL__C_ENC];
    return in->sort == HL_SORT_EXPRESSION && in->arity == 2 && in->expr >= HL_E_ADD &&
                   in->expr < HL_E_KIND_COUNT
               ? in->expr
               : HL_E_KIND_COUNT;
}

/* The constructor code of a table name and its expected arity (children), or
 * LL__C_UNKNOWN; registry names give their op. */
uint16_t ll__ctor_code(const char *name, uint32_t *arity);
/* The arity (columns) of a registered op: its fields, plus for Op kinds nothing (the
 * inputs are in the IList). */
uint32_t ll__op_arity(ll_op op);
/* True for dialects of nodes inside a region (FUSED, LOAD, INLINE). */
static inline bool ll__interior(ll_dialect d)
{
    return d == LL_D_FUSED || d == LL_D_LOAD || d == LL_D_INLINE;
}

/* ==================================================================================
 * The space (ll_space.c builds it, ll_space_dtype.c checks its dtypes, ll_space_read.c
 * reads it, ll_space_print.c prints it)
 * ==================================================================================
 *
 *   per serialized class  ckind (what it is), sidx (its searchable index or LM_NONE),
 *                         canon (canonical node of a non-searchable class), dtype (of an
 *                         IR class: the `dtype` function; of a DType class: its value),
 *                         ctx (IR: its context; IList: its entries' context), len (IList)
 *   per searchable class  scls (its class), cstart (its choices: cstart[i] .. cstart[i+1]
 *                         into the choice arrays), safe (the acyclic choice of least
 *                         height), reach (reachable from the root)
 *   per choice            cnode (the serialized node), cop (its op), kstart/kids (the
 *                         searchable classes it reads, in child order)
 */

enum { LL__K_IR = 0, LL__K_ILIST, LL__K_OPKIND, LL__K_EXPR, LL__K_ELIST, LL__K_DTYPE,
       LL__K_DIM, LL__K_LIT, LL__K_OTHER };

/* Contexts of IR classes, as bits (a union of two is a mix). */
enum { LL__X_NONE = 0, LL__X_TOP = 1, LL__X_REGION = 2, LL__X_SINK = 4 };

typedef struct ll__dim {
    const char *name; /* borrowed from the engine (or the space's names) */
    int64_t lo, hi, profile;
    bool declared; /* false: an MVar no Dim declares, given [1, 2^31-1] at 1 */
} ll__dim;

struct ll_space {
    eg_engine *e; /* borrowed */
    eg_serialized ser;
    uint32_t nc, nn; /* classes, nodes */
    int sort_i64, sort_f64, sort_str;
    uint16_t *code;  /* per node */
    uint8_t *ckind;  /* per class */
    int8_t *dtype;   /* per class, -1 when none */
    uint8_t *ctx;    /* per class */
    uint32_t *len;   /* per IList class: its length */
    uint32_t *canon; /* per class */
    uint32_t *sidx;  /* per class */
    uint32_t *nstart, *nlist; /* per class: its nodes (CSR over nlist) */

    uint32_t ns;     /* searchable classes */
    uint32_t *scls;
    uint32_t *cstart;
    uint32_t *safe;
    uint8_t *reach;
    uint32_t nch;    /* choices */
    uint32_t *cnode;
    ll_op *cop;
    uint32_t *kstart, *kids;
    uint32_t root_class, root_s;

    uint32_t n_dims;
    ll__dim *dims;
    uint32_t n_inputs;
    uint32_t *input_node; /* per input index: its Input node */

    ll_space_stats stats;
    uint32_t *op_counts; /* per registered op: its choices */
};

static inline uint32_t ll__kid(const ll_space *s, uint32_t node, uint32_t k)
{
    return s->ser.children[s->ser.nodes[node].child_start + k];
}

/* Whether serialized class cls is a literal of the given sort, and an i64 literal's value. */
static inline bool ll__lit_is(const ll_space *s, uint32_t cls, int sort)
{
    return cls < s->nc && (int)s->ser.class_sort[cls] == sort;
}
static inline int64_t ll__lit_i64(const ll_space *s, uint32_t cls)
{
    return eg_value_as_i64(s->ser.class_value[cls]);
}

/* The e-graph dtype check of ll_space_new (ll_space_dtype.c), on a space whose codes,
 * dtypes, contexts and lists are read: LM_EVERIFY naming the node; LM_ELIMIT past deadline
 * (lm_now_s; 0: none). */
int ll__space_dtype_check(const ll_space *s, double deadline, lm_err *err);

/* LM_EVERIFY naming serialized class cls of s and, unless LM_NONE, its node and the
 * node's constructor, after what ("space", "graph", "space: a kind's fields")
 * (ll_node_text.c). */
int ll__space_fail(const ll_space *s, lm_err *err, const char *what, uint32_t cls, uint32_t node,
                   const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

/* The dialect of a choice (its op's; LL_D_COUNT for IList nodes). */
ll_dialect ll__choice_dialect(const ll_space *s, uint32_t choice);
/* Tests only: the genome repair walk's step budget (0: the default), thread-local. */
void ll__genome_repair_budget(uint64_t steps);
/* The number of inputs an Op node's kind takes (Blas: from its beta and epilogue). */
uint32_t ll__kind_inputs(const ll_space *s, uint32_t kind_node);

/* ==================================================================================
 * Expressions (ll_expr.c)
 * ================================================================================== */

/* Decodes the canonical form of class cls (an Expression) into pool p, memoised in
 * memo[] (per class, HL_NONE when not yet decoded). LM_EVERIFY naming the class for a
 * value that overflows int64, LM_ENOMEM. */
typedef struct ll__xdec {
    const ll_space *s;
    hl_expr_pool *p;
    hl_expr *memo;
    lm_err *err;
} ll__xdec;
int ll__expr(ll__xdec *d, uint32_t cls, hl_expr *out);
/* An EList of at most HL_MAX_DIMS entries. */
int ll__elist(ll__xdec *d, uint32_t cls, const char *field, uint32_t *n, hl_expr *out);
/* The dtype of DType class cls, or -1. */
static inline int ll__dtype_of(const ll_space *s, uint32_t cls)
{
    return cls < s->nc && s->ckind[cls] == LL__K_DTYPE ? s->dtype[cls] : -1;
}

/* Values of expressions at one setting of the dims, for the verifier: every z-free
 * expression of the pool evaluated once (val[id], ok[id] false when it overflows or
 * divides by zero); z-dependent ones bounded over a range of z. */
typedef struct ll__eval {
    const hl_expr_pool *p;
    const int64_t *dimv; /* per pool variable */
    uint32_t n;          /* expressions evaluated */
    int64_t *val;
    uint8_t *ok;
} ll__eval;
int ll__eval_init(ll__eval *ev, const hl_expr_pool *p, const int64_t *dimv, lm_err *err);
void ll__eval_fini(ll__eval *ev);
/* The value of e at z (e may hold z). false when it cannot be evaluated. */
bool ll__eval_at(const ll__eval *ev, hl_expr e, int64_t z, int64_t *out);
/* Bounds of e over z in [0, n) (n >= 1) by interval arithmetic: 1 when *lo and *hi are
 * the exact least and greatest values, 0 when they only enclose them, -1 when some value
 * cannot be evaluated (overflow, a possible division by zero). */
int ll__eval_range(const ll__eval *ev, hl_expr e, int64_t n, int64_t *lo, int64_t *hi);
/* The exact least and greatest values by evaluating every z in [0, n); false when some
 * value cannot be evaluated. O(n) evaluations. */
bool ll__eval_scan(const ll__eval *ev, hl_expr e, int64_t n, int64_t *lo, int64_t *hi);

/* ==================================================================================
 * The graph (ll_graph.c: the type; ll_build.c, ll_from_genome.c and ll_copy.c make it)
 * ================================================================================== */

struct ll_graph {
    hl_expr_pool *pool;
    uint32_t n_dims, cap_dims;
    hl_dim *dims;
    uint32_t n_nodes, cap;
    ll_node *nodes;
    uint32_t n_inputs, n_outputs;
    uint32_t *inputs, *outputs;
    uint32_t n_origins, cap_origins; /* the rules and commands nodes came from: */
    char **origins;                  /* ll_node.origin indexes this table */
    bool finished; /* ll_build.c: no more pushes */
};

/* The index of origin text `name` in g's table, added when new; LM_NONE when out of
 * memory (the caller raises LM_ENOMEM). */
uint32_t ll__graph_intern_origin(ll_graph *g, const char *name);

/* Decodes the fields of every backend kind that is a choice of s once (into a scratch
 * pool): out_strides contiguous, KMatmul strides a matmul, Blas fields in range, DType
 * fields readable. LM_EVERIFY naming the kind's class and node (ll_kind.c); LM_ELIMIT past
 * deadline (lm_now_s; 0: none), checked every 4096 choices. */
int ll__check_kinds(const ll_space *s, lm_err *err, double deadline);

/* The expressions node n refers to (ll_copy.c), as pointers into *n, into out (room for
 * LL__NODE_EXPRS): with all, every hl_expr field of the struct whatever it holds; without,
 * the ones that mean something for the node: its shape, its primitive's shape, views and
 * Iota fields (when it carries a primitive), its matmul (ll__node_has_mm), its attention
 * (ll_op_is_attn), each list as long as its count. The one list the copy, the binary form
 * and its reader walk. Returns how many. */
#define LL__NODE_EXPRS (2 * HL_MAX_DIMS + HL_MAX_INPUTS * 2 * HL_MAX_DIMS + 2 + 8 + 3 + 4 * 2 * HL_MAX_DIMS)
uint32_t ll__node_exprs(ll_node *n, bool all, hl_expr **out);
/* Whether n carries an ll_matmul (a library call or KMatmul). */
bool ll__node_has_mm(const ll_node *n);

/* llir's one binary min-heap of 64-bit keys (h has room for every key pushed): Kahn's
 * order over classes (ll_from_genome.c) and the space's heights ((height, node) packed). */
static inline void ll__heap_push(uint64_t *h, uint32_t *n, uint64_t key)
{
    assert(*n < UINT32_MAX);
    uint32_t i = (*n)++;
    h[i] = key;
    while (i > 0 && h[(i - 1) / 2] > h[i]) {
        uint32_t p = (i - 1) / 2;
        uint64_t t = h[p];
        h[p] = h[i];
        h[i] = t;
        i = p;
    }
}

static inline uint64_t ll__heap_pop(uint64_t *h, uint32_t *n)
{
    assert(*n > 0);
    uint64_t top = h[0];
    h[0] = h[--(*n)];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && h[l] < h[m]) m = l;
        if (r < *n && h[r] < h[m]) m = r;
        if (m == i) break;
        uint64_t t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
    return top;
}

/* The text of an op for messages and dumps. */
const char *ll__op_name(ll_op op);

/* ==================================================================================
 * Nodes in messages, hlir adapters, comparison and small helpers (what the executor, the
 * HLIR lowering and the comparison share)
 * ==================================================================================
 *
 * The hlir adapters (ll__hl_*) are the only code of llir that sees hlir's error record:
 * each checks hlir's code with `!= 0`, copies its message and gives the matching lm_code,
 * so the conversion of hlir to base's lm_err touches only ll_hl.c. */

/* ---- nodes in messages (ll_node_text.c) ---- */

/* As ll__fail, with the message prefixed by the node's description (ll__node_desc), and
 * loc naming the node id. */
int ll__fail_node(lm_err *err, int code, const ll_graph *g, uint32_t id, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* "llir node 7 (KAdd kernel, f32, e-class 31, rule 4)": the node's id, op, kind, dtype
 * and provenance (e-class and engine rule, "from hlir" when it has none). */
void ll__node_desc(const ll_graph *g, uint32_t id, char *buf, size_t cap);

/* The primitive op computes (HL_OP_COUNT for matmuls, plumbing, IO and unknown ops;
 * ll_registry.c). */
hl_op ll__op_prim(ll_op op);
const char *ll__kind_name(ll_kind k);

/* ---- hlir adapters (ll_hl.c) ---- */

/* Each calls the hlir function of the same name and, on failure, raises into err the
 * matching lm_code with hlir's message prefixed by `what` (may be NULL). */
int ll__hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
               hl_tensor *outputs, const char *what, lm_err *err);
int ll__hl_tensor_init(hl_tensor *t, hl_dtype dtype, uint32_t ndim, const int64_t *dims,
                       lm_err *err);
int ll__hl_eval(const hl_expr_pool *p, hl_expr e, const hl_env *env, int64_t z, int64_t *out,
                const char *what, lm_err *err);
/* The builder's sticky error of g, if any, raised with `what` as prefix; 0 otherwise. */
int ll__hl_graph_status(const hl_graph *g, const char *what, lm_err *err);

/* ---- the comparison (ll_compare.c) ---- */

/* w[id] for every node of g: the largest sum of rounding weights over the paths from an
 * input to the node (ll_output_tolerances reads it at the outputs); 0 for a node every
 * correct candidate computes exactly as the reference does. */
int ll__path_weights(const hl_graph *g, const int64_t *dim_values, double *w, lm_err *err);

/* ---- expressions ---- */

/* Copies expression e of pool src into pool dst, variables by name (dst must already
 * know them: as declared dims of the graph dst belongs to). memo, when not NULL, has one
 * entry per id of src, HL_NONE where not yet copied, and is filled as a cache. Returns
 * HL_NONE when dst cannot build it (out of memory, or a folded constant overflows). */
hl_expr ll__expr_copy(hl_expr_pool *dst, const hl_expr_pool *src, hl_expr e, hl_expr *memo);

/* Element count of dims[0..ndim) (int64 values); false on a negative dim or overflow. */
bool ll__numel(uint32_t ndim, const int64_t *dims, size_t *out);

#endif /* LUMINAL_LL_INT_H */
