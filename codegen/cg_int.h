/* cg_int.h - what the files of codegen/ share: the error and allocation doors, a growing
 * string, expressions in the plan's pool (copying, printing as C, bounds), and the value
 * graph a region is lowered to before its kernel is written.
 *
 * Pipeline of one kernel (cg_plan.c drives it):
 *
 *   LLIR node ──► cg_vg (cg_val.c): the region (or standalone kernel) as a DAG of values
 *                 (constants, loads at symbolic positions, iotas, ops, reductions), each
 *                 in a scope (the row, the element, a reduction's loop), hash-consed so a
 *                 (node, position) pair is evaluated once
 *             ──► a template (cg_elem.c, cg_row.c) or a special kernel (cg_special.c,
 *                 cg_matmul.c) writes the CUDA C
 *
 * Nothing here depends on addresses or hash order: every table is an array in creation
 * order and every lookup is by content, so the same LLIR gives the same bytes.
 */
#ifndef LUMINAL_CG_INT_H
#define LUMINAL_CG_INT_H

#include "codegen.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ==================================================================================
 * Errors and memory
 * ================================================================================== */

/* The one door every codegen error goes through, with one location argument (loc may be
 * NULL); a location that names an LLIR node by id only (cg__at) is written "node '%%7'".
 * Ends in lm_err_setv. Returns code. */
int cg__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The location of LLIR node `node` (LM_NONE: none), for cg__fail; valid in the
 * enclosing block. */
#define cg__at(node) (&(lm_loc){.node_id = (node)})

/* The one allocation door: n * size bytes, zeroed; NULL on overflow or failure. */
void *cg__alloc(size_t n, size_t size);
/* Grows *p (holding *cap elements of size) to at least need elements; false on failure
 * (then *p and *cap are unchanged). */
bool cg__grow(void **p, uint32_t *cap, uint32_t need, size_t size);
void cg__free(void *p);
char *cg__strdup(const char *s);

/* ==================================================================================
 * A growing string; a failed allocation is sticky (oom) and checked once at the end.
 * ================================================================================== */

typedef struct cg_str {
    char *s;
    size_t len, cap;
    bool oom;
} cg_str;

void cg__str_init(cg_str *b);
void cg__str_fini(cg_str *b);
void cg__str_add(cg_str *b, const char *text);
void cg__str_addf(cg_str *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Takes the text (the caller frees it with free()); NULL when an allocation failed. The
 * string is empty afterwards. */
char *cg__str_take(cg_str *b);

/* ==================================================================================
 * Expressions (cg_expr.c)
 * ================================================================================== */

/* The graph's dims as the generator sees them: for variable var of the plan's pool, its
 * dim index (or LM_NONE) and range. */
typedef struct cg_dims {
    uint32_t n;          /* dims */
    const hl_dim *dims;  /* in the plan's pool */
    uint32_t nvars;      /* variables of the plan's pool when made */
    uint32_t *var_dim;   /* var -> dim index (LM_NONE: not a dim) */
} cg_dims;

/* An interval of int64 values; wide when a bound could not be computed (overflow, a
 * division by an interval holding 0, ...). */
typedef struct cg_range {
    int64_t lo, hi;
    bool wide;
} cg_range;

/* The range of e with z in [0, zmax] and every dim in its declared range. */
cg_range cg__expr_range(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax);

/* The C type an index expression is printed in. */
typedef enum cg_ity { CG_U32 = 0, CG_I64 } cg_ity;
const char *cg__ity_name(cg_ity t);

/* The type e can be printed in: CG_U32 when every subexpression lies in [0, 2^31) for z in
 * [0, zmax], else CG_I64. false when even int64 is not proven (a range is wide). */
bool cg__expr_ity(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax, cg_ity *out);

/* Prints e as a C expression of type t, z written as zname (a C expression of an integer
 * type), dim variables as D<index>; marks used dims in used[dim] (may be NULL). Needs the
 * type from cg__expr_ity (non-negative subexpressions under CG_U32). */
void cg__expr_c(cg_str *b, const hl_expr_pool *p, const cg_dims *d, hl_expr e, cg_ity t,
                const char *zname, int64_t zmax, bool *used);

/* The value of z-free e at the dims' profile values (what the kernel is tuned for); -1
 * when it does not evaluate. */
int64_t cg__expr_profile(const hl_expr_pool *p, const cg_dims *d, hl_expr e);

/* e with every x / b and x % b whose 0 <= x < b is provable (by a symbolic upper bound
 * of x: (x % d) / d, (A*(y % k) + x % A) / (A*k), ...) folded: composing views through
 * permutes of dynamic dims leaves these, which hlir's simplifier (numeric ranges only)
 * keeps. Never fails: e itself when nothing folds (or on OOM). */
hl_expr cg__expr_tidy(hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax);

/* Largest value of e (for z in [0, zmax]); INT64_MAX when not bounded. */
int64_t cg__expr_max(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax);

/* ==================================================================================
 * The value graph (cg_val.c)
 * ================================================================================== */

typedef enum cg_vkind {
    CG_V_CONST = 0, /* an f32 constant */
    CG_V_IOTA,      /* an Iota's value at pos (Int) */
    CG_V_LOAD,      /* element pos of the buffer of top-level node `node` */
    CG_V_OP,        /* an elementwise primitive (op) of operands a[0..na) */
    CG_V_REDUCE     /* SumReduce / MaxReduce (op) of value body over scope body_scope */
} cg_vkind;

/* The register type a value lives in. */
typedef enum cg_rty { CG_R_F32 = 0, CG_R_I32, CG_R_I64, CG_R_BOOL } cg_rty;
cg_rty cg__rty_of(hl_dtype t);
const char *cg__rty_c(cg_rty r);

typedef struct cg_val {
    cg_vkind kind;
    hl_dtype dt;     /* the node's dtype (a load: the stored dtype) */
    cg_rty rt;       /* register type of the value */
    uint32_t scope;  /* the scope whose variable the value depends on (the outermost one) */
    hl_op op;        /* CG_V_OP, CG_V_REDUCE */
    hl_dtype from;   /* CG_V_OP Cast: the source dtype */
    uint32_t na;
    uint32_t a[HL_MAX_INPUTS];
    uint32_t node;   /* CG_V_LOAD: the top-level node read; CG_V_IOTA, CG_V_REDUCE: the node */
    hl_expr pos;     /* CG_V_LOAD, CG_V_IOTA, CG_V_REDUCE: the position, in the scope's z */
    hl_expr iota;    /* CG_V_IOTA: the Iota expression composed with pos */
    float c;         /* CG_V_CONST */
    uint32_t body_scope, body; /* CG_V_REDUCE */
} cg_val;

/* A scope: a variable (printed as z in its expressions) ranging over an index space.
 *   root   the outermost scope (the row in the row template, the element otherwise)
 *   loop   a child: its variable q walks, for one value p of the parent's variable, the
 *          indexes q = (p / inner) * (len * inner) + k * inner + p % inner, k < len; p is
 *          `pos` (an expression in the parent's variable). The element scope of a row is
 *          the loop with pos = z, inner = 1, len = L; a reduction's body is a loop too.
 * q0 (an expression in p: q at k = 0) and pq (p from q) serve hoisting: an expression e
 * in q with e(q) == e(q0(pq(q))) does not depend on k and moves to the parent as
 * e(q0(pos)). */
typedef struct cg_scope {
    uint32_t parent; /* LM_NONE for the root */
    uint32_t depth;
    hl_expr pos, len, inner, q0, pq;
    int64_t zmax;    /* largest value of the variable */
    uint32_t red;    /* the reduction looping over it, or LM_NONE (the element scope) */
} cg_scope;

typedef struct cg_vg {
    hl_expr_pool *p;          /* the plan's pool (borrowed) */
    const cg_dims *d;
    const ll_graph *g;
    hl_expr *memo;            /* LLIR expression -> plan expression (borrowed) */
    uint32_t n, cap;
    cg_val *v;
    uint32_t *ht, hcap;       /* the values by content (cg_val.c): ids, LM_NONE empty */
    struct cg_built *bt;      /* the region nodes built, by (node, position, scope) */
    uint32_t bcap, bn;
    uint32_t ns, scap;
    cg_scope *s;
    uint32_t root;            /* the root value */
    uint32_t elem;            /* the element scope */
    uint32_t row;             /* the row scope, or LM_NONE */
    bool share_elem;          /* aligned row reductions loop over the element scope */
    hl_expr numel;            /* output elements */
    hl_expr L, rows;          /* row length and count (with a row scope) */
    int64_t N;                /* largest number of output elements */
    lm_err *err;
    uint32_t err_node;
} cg_vg;

struct cg_ctx;

/* Builds the value graph of LLIR node `node` (a region, or a standalone elementwise or
 * reduction kernel) stored contiguously: the element scope's variable is the output's flat
 * index. L (an expression, or HL_NONE) makes a row scope above it: rows of L elements,
 * and values that depend only on the row move there. share_elem: see cg_val.c. 0 or an
 * error (LM_EUNSUPPORTED naming the node for an op no template covers, LM_ENOMEM). */
int cg__vg_build(cg_vg *vg, struct cg_ctx *c, uint32_t node, hl_expr L, bool share_elem);
void cg__vg_fini(cg_vg *vg);
/* The work of one launch of the graph's kernel, as expressions of the dims in the plan's
 * pool, into k (cg_kernel): ops, every value reachable from the root (a load, an iota, an
 * op; a reduction once per step of its loop) times the runs of its scope (the rows or the
 * elements, times the lengths of the loops around it); strided, the loads whose lanes
 * read addresses more than one element apart (at the dims' profile values; row: the row
 * template's lanes, which split each loop, else the elementwise template's, one element
 * each); divs32 and divs64, the divisions by a dim in the loads' positions. LM_ENOMEM. */
int cg__vg_ops(cg_vg *vg, bool row, cg_kernel *k);

/* The plan expression of LLIR expression e. */
hl_expr cg__x(cg_vg *vg, hl_expr e);

/* True when a position e (in the element scope's z) moves by one per element along rows
 * of L: e(z) == e((z/L)*L) + z%L. */
bool cg__pos_unit(hl_expr_pool *p, hl_expr e, hl_expr L);
/* True when x is the number 1. */
bool cg__expr_is_one(const hl_expr_pool *p, hl_expr x);

/* Values reachable from v: marks seen[]. */
void cg__vg_mark(const cg_vg *vg, uint32_t v, bool *seen);

/* ==================================================================================
 * Kernel sources
 * ================================================================================== */

/* Writes the helper functions every module starts with (cg_prelude.c). */
void cg__prelude(cg_str *b);

/* The C storage type of a dtype ("float", "unsigned short", ...). */
const char *cg__store_c(hl_dtype t);

/* What a template works with (cg_plan.c fills it). */
typedef struct cg_ctx {
    cg_plan *plan;
    const ll_graph *g;
    cg_dims *d;
    hl_expr *memo;          /* LLIR expr -> plan expr */
    const uint32_t *buf_of; /* top-level node -> buffer (LM_NONE: not stored) */
    const cg_options *opt;
    lm_err *err;
} cg_ctx;

/* One kernel being written: its parameters in order and the dims its code uses. */
typedef struct cg_kw {
    cg_ctx *c;
    uint32_t llir_node;
    uint32_t n_params;
    cg_param params[CG_MAX_PARAMS];
    bool written[CG_MAX_PARAMS];
    hl_dtype pdt[CG_MAX_PARAMS];
    bool *used_dim; /* [dims] */
} cg_kw;

int cg__kw_init(cg_kw *kw, cg_ctx *c, uint32_t node);
void cg__kw_fini(cg_kw *kw);
/* The parameter index of buffer `buf` read or written as dt (adding it); -1 when the
 * list is full (error set). */
int cg__kw_buf(cg_kw *kw, uint32_t buf, hl_dtype dt, bool written);
/* Assembles the module: the prelude, `extern "C" __global__ void lm_kernel(params)` with
 * the used dims as long long parameters copied into D<i> (and U<i>, unsigned) locals,
 * then decls and body; fills k's source and params. 0 or an error. */
int cg__kw_finish(cg_kw *kw, const char *decls, const char *body, uint32_t threads,
                  cg_kernel *k);
/* The same with `pre` (device functions, macros; may be NULL) written between the prelude
 * and the kernel's signature. */
int cg__kw_finish_ex(cg_kw *kw, const char *pre, const char *decls, const char *body,
                     uint32_t threads, cg_kernel *k);

/* Templates: each writes kernel k (source, grid, block, params, template name) for LLIR
 * node `node`, which stores into buffer out_buf. */
int cg__region_kernel(cg_ctx *c, uint32_t node, uint32_t out_buf, cg_kernel *k);
int cg__copy_kernel(cg_ctx *c, uint32_t out_node, uint32_t out_buf, cg_kernel *k);
int cg__gather_kernel(cg_ctx *c, uint32_t node, uint32_t out_buf, cg_kernel *k);
/* Scatter: three kernels (copy dest and clear the winners, mark winners, apply), ws the
 * winner buffer. */
int cg__scatter_kernels(cg_ctx *c, uint32_t node, uint32_t out_buf, uint32_t ws_buf,
                        cg_kernel k[3]);
int cg__matmul_kernel(cg_ctx *c, uint32_t node, uint32_t out_buf, cg_kernel *k);

int cg__emit_elem(cg_ctx *c, cg_vg *vg, uint32_t node, uint32_t out_buf, cg_kernel *k);
int cg__emit_row(cg_ctx *c, cg_vg *vg, uint32_t node, uint32_t out_buf, cg_kernel *k);

/* Index grid expressions: max(1, min(x, cap)). */
hl_expr cg__grid_expr(hl_expr_pool *p, hl_expr x, int64_t cap);

/* ==================================================================================
 * Writing values (cg_emit.c)
 * ================================================================================== */

#define CG_MAX_RED_SLOTS 16

typedef struct cg_name {
    uint32_t val;
    int32_t lane;  /* -1 for values shared by the lanes */
    uint32_t prev; /* the name given to val before this one (any lane), or LM_NONE */
    char text[96];
} cg_name;

typedef struct cg_em {
    cg_ctx *c;
    cg_vg *vg;
    cg_kw *kw;
    cg_str *b;
    uint32_t nn, ncap;
    cg_name *names;
    uint32_t *last;           /* [vg->n]: each value's latest name in names, or LM_NONE */
    uint32_t next_id;
    int indent;
    char (*svar)[48];         /* [vg->ns] C name of each scope's variable */
    /* lanes: values of scope vscope are written once per lane; lane l's variable is
       (z0 + l) */
    uint32_t vscope, lanes;
    char z0[64];
    bool vec;                 /* loads marked in vload are vector loads */
    const bool *vload;        /* [vg->n] */
    /* the row template */
    bool coop;                /* row-scope reductions are computed by the row's threads */
    uint32_t row_threads;
    char tid[32];             /* the thread's index within its row group */
    char *rowbase;            /* C index of the row's first element */
    uint32_t v_elem, v_body;  /* lanes of the element loops and of reduction body loops */
    const bool *body_vec_ok;  /* [vg->ns] */
    uint32_t n_slots;
    cg_rty slot_rt[CG_MAX_RED_SLOTS];
    uint32_t cache_T;         /* 0: no register cache */
    const bool *cache_want;   /* [vg->n] */
    uint8_t *cache_state;     /* [vg->n] 0 not yet, 1 written in the open loop, 2 ready */
    bool in_cache_loop;
    char cache_index[32];
    /* the output */
    int out_param;
    hl_dtype out_dt;
} cg_em;

int cg__em_init(cg_em *e, cg_ctx *c, cg_vg *vg, cg_kw *kw, cg_str *b);
void cg__em_fini(cg_em *e);
void cg__em_line(cg_em *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The C name of value v in lane `lane`, writing the code that computes it (and whatever
 * it needs) first. NULL on error (set). The text is valid until the next call. */
const char *cg__em_val(cg_em *e, uint32_t v, uint32_t lane);
/* Materialises what the values reachable from v need from outside scope `scope`. */
bool cg__em_pre_outer(cg_em *e, uint32_t v, uint32_t scope, uint32_t lane);
/* Pops the names given since mark (leaving a block). */
void cg__em_pop(cg_em *e, uint32_t mark);
/* Stores the root for the current lanes at element z0 (vector store when vec). */
bool cg__em_store_root(cg_em *e, uint32_t lanes);
/* A loop over scope s's elements, spread over the row's threads (see cg_emit.c). */
bool cg__em_space_loop(cg_em *e, uint32_t s, const char *base, uint32_t red, const char *acc);
/* The C text of x printed as a size in type t (no z). false with the error set. */
bool cg__em_len(cg_em *e, hl_expr x, cg_ity t, cg_str *out);
/* C text converting register value `name` to dtype dt's storage. */
void cg__em_store_expr(cg_em *e, char *out, size_t cap, const char *name, cg_rty rt, hl_dtype dt);
/* A reduction's identity, and "acc = combine(acc, x);". */
const char *cg__em_red_init(const cg_val *r);
void cg__em_combine(cg_em *e, const cg_val *r, const char *acc, const char *x);

/* Vector analysis (cg_elem.c): marks in vload the loads of scope s that are unit-stride in
 * rows of len and aligned (provably, or under run-time conditions appended to cond);
 * returns how many, -1 on error. */
int cg__vec_loads(cg_vg *vg, cg_kw *kw, uint32_t s, hl_expr len, uint32_t V, bool *vload,
                  cg_str *cond);
/* Lanes: 16 bytes of the widest of out and the unit loads of scope s, at most 8. */
uint32_t cg__vec_width(cg_vg *vg, uint32_t s, hl_expr len, hl_dtype out);
/* Unit-stride loads of the element scope (for choosing the elementwise row length). */
int cg__elem_score(cg_vg *vg);
/* Row reductions a space loop computes (cg_row.c); > 0 makes a region row-aligned. */
int cg__row_eligible(const cg_vg *vg);

#endif /* LUMINAL_CG_INT_H */
