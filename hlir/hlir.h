/* hlir.h - the high-level tensor graph: the one public header of the hlir module.
 *
 * The compiler's input is a graph of Luminal's primitive tensor ops. This header holds
 * the whole data model and everything built on it:
 *
 *   dtypes        element types and their conversions (round to nearest even, as the GPU)
 *   expressions   symbolic integers (numbers, named dynamic dims, the index variable z),
 *                 hash-consed in a pool and simplified on construction, so two equal
 *                 strides are the same id
 *   views         shape trackers: dims plus one stride expression in z per dim
 *   graph         nodes of primitive ops; each node reads each input through a view
 *   builder       high-level ops (matmul, softmax, attention, ...) lowered to primitives
 *   runtime       the CPU reference interpreter, the oracle for every backend
 *   dump          a readable listing of a graph, for debugging
 *
 * Semantics and dtype rules of every primitive are in docs/hlir.md.
 *
 * Errors: every fallible call reports through an hl_error record (code, node id, message
 * naming where and why). The graph's builder keeps its error sticky (SQLite's Parse.rc):
 * once a builder call fails, later builder calls do nothing and return an invalid tensor,
 * and hl_graph_error() tells what went wrong first. Nothing reachable from bad input
 * asserts or crashes.
 *
 * Ids are dense uint32_t: expressions index their pool, nodes index their graph. Nothing
 * depends on addresses or hash order, so the same calls give the same ids and bytes.
 */
#ifndef LUMINAL_HLIR_H
#define LUMINAL_HLIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * Errors
 * ================================================================================== */

/* Status codes: 0 is success, every other value names a class of failure. */
typedef enum hl_status {
    HL_OK = 0,
    HL_ERR_NOMEM,   /* an allocation failed; the structure is as it was before the call */
    HL_ERR_ARG,     /* an argument is out of range (axis, arity, null name, ...) */
    HL_ERR_SHAPE,   /* shapes do not agree (or a view change is impossible) */
    HL_ERR_DTYPE,   /* an op does not accept this dtype, or input dtypes differ */
    HL_ERR_DIM,     /* an unknown or unbound dynamic dimension */
    HL_ERR_EVAL,    /* an expression could not be evaluated (division by zero, overflow) */
    HL_ERR_RUNTIME, /* the reference runtime met bad data (index out of range, ...) */
    HL_ERR_PARSE,   /* malformed text (expression syntax, JSON) */
    HL_ERR_IO,      /* a file could not be read or written */
    HL_ERR_VIEW     /* a view change cannot be expressed as strides (caller may copy) */
} hl_status;

#define HL_NONE UINT32_MAX /* "no node" / "no expression" */
#define HL_ERROR_MSG 512

/* An error record. Callers own it (usually on the stack) and zero it with
 * hl_error_clear(). node is the graph node the error is about, or HL_NONE. */
typedef struct hl_error {
    hl_status code;
    uint32_t node;
    char msg[HL_ERROR_MSG];
} hl_error;

/* Resets e to "no error". Accepts NULL. Cannot fail. */
void hl_error_clear(hl_error *e);

/* The one door every hlir error goes through (set a breakpoint here). If e already
 * holds an error, it is kept (the first error wins) and this returns e->code; otherwise
 * the code, node and printf-formatted message are recorded (truncated to fit) and code
 * is returned. e may be NULL: then only code is returned. */
hl_status hl_error_set(hl_error *e, hl_status code, uint32_t node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* A static, human-readable name of a status ("shape mismatch", ...). Never NULL. */
const char *hl_status_name(hl_status s);

/* ==================================================================================
 * DTypes
 * ================================================================================== */

typedef enum hl_dtype {
    HL_F32 = 0,
    HL_F16,
    HL_BF16,
    HL_INT, /* 32-bit signed */
    HL_I64,
    HL_BOOL,
    HL_F8E4M3, /* OCP FP8 E4M3 "fn": bias 7, no infinities, one NaN pattern, max 448 */
    HL_F8E5M2, /* OCP FP8 E5M2: bias 15, IEEE-like, has inf, max finite 57344 */
    HL_DTYPE_COUNT
} hl_dtype;

/* Lower-case names as the JSON format and the dump spell them: "f32", "f16", "bf16",
 * "int", "i64", "bool", "f8e4m3", "f8e5m2". hl_dtype_name never returns NULL ("?" for an
 * out-of-range value). hl_dtype_parse returns 0 and sets *out, or -1 for an unknown
 * name (name may be NULL). */
const char *hl_dtype_name(hl_dtype t);
int hl_dtype_parse(const char *name, hl_dtype *out);

/* Storage size of one element in bytes (Bool is one byte). 0 for an invalid dtype. */
size_t hl_dtype_size(hl_dtype t);
/* True for F32, F16, Bf16 and both FP8 formats. */
bool hl_dtype_is_float(hl_dtype t);

/* Conversions between f32 and the low-precision formats, bit patterns in the low bits.
 * Every f32 -> narrow conversion rounds to nearest, ties to even, keeps subnormals, and
 * keeps the sign of zero; NaN stays NaN (a quiet NaN with the sign kept).
 *   f16, bf16: overflow rounds to +-inf (cvt.rn.f16.f32 / cvt.rn.bf16.f32).
 *   E4M3: no inf; overflow and +-inf saturate to +-448 (cvt.rn.satfinite.e4m3x2.f32).
 *   E5M2: overflow and +-inf saturate to +-57344 (cvt.rn.satfinite.e5m2x2.f32); the
 *         inf bit patterns still decode to inf.
 * The narrow -> f32 direction is exact. None of these can fail. */
uint16_t hl_f32_to_f16(float x);
float hl_f16_to_f32(uint16_t h);
uint16_t hl_f32_to_bf16(float x);
float hl_bf16_to_f32(uint16_t h);
uint8_t hl_f32_to_e4m3(float x);
float hl_e4m3_to_f32(uint8_t b);
uint8_t hl_f32_to_e5m2(float x);
float hl_e5m2_to_f32(uint8_t b);

/* The value x becomes when stored as dtype t and read back as f32 (for Int: truncated
 * toward zero and saturated, NaN -> 0; for Bool: 0 or 1). Cannot fail. */
float hl_round_to(hl_dtype t, float x);

/* ==================================================================================
 * Symbolic integer expressions
 * ==================================================================================
 *
 * An expression is an hl_expr: a dense id into an hl_expr_pool. Pools hash-cons, and
 * every constructor simplifies, so structurally equal canonical forms share one id:
 * compare expressions with ==. Ids are given in creation order; the canonical order
 * inside sums and products is structural (hl_expr_cmp), never by id or address, so the
 * same calls give the same ids and the same printed text in any pool.
 *
 * Values are int64. Division and modulo are floor division / floor modulo (Python's
 * semantics); for the non-negative values that shapes use this is plain C division.
 * Comparisons and and/or give 0 or 1; and/or treat nonzero as true. The simplifier
 * assumes what shapes guarantee: z (an element index) is >= 0 and every variable (a
 * dimension) is >= 1; evaluating at a negative z may disagree with the unsimplified
 * form.
 *
 * Failure: a constructor that cannot allocate returns HL_NONE and marks the pool
 * (hl_expr_pool_failed); one whose folded constant or coefficient would overflow int64,
 * or whose tree would exceed 4096 nodes (no shape comes near; the bound keeps hostile
 * input from making the tree walks exponential), returns HL_NONE without marking it.
 * Every constructor given an HL_NONE operand returns HL_NONE, so a chain of
 * constructions is checked once at its end.
 */

typedef uint32_t hl_expr;
typedef struct hl_expr_pool hl_expr_pool;

typedef enum hl_expr_kind {
    HL_E_NUM = 0, /* integer literal */
    HL_E_VAR,     /* a named dynamic dimension */
    HL_E_Z,       /* the index variable z */
    HL_E_ADD,
    HL_E_SUB, /* never in canonical form: a - b becomes a + (-1)*b */
    HL_E_MUL,
    HL_E_DIV,  /* floor division */
    HL_E_CDIV, /* ceiling division */
    HL_E_MOD,  /* floor modulo */
    HL_E_MIN,
    HL_E_MAX,
    HL_E_AND,
    HL_E_OR,
    HL_E_GE, /* a >= b */
    HL_E_LT, /* a < b */
    HL_E_KIND_COUNT
} hl_expr_kind;

/* Creates an empty pool; NULL when out of memory. Free with hl_expr_pool_free (NULL ok). */
hl_expr_pool *hl_expr_pool_new(void);
void hl_expr_pool_free(hl_expr_pool *p);
/* True once any constructor has failed for lack of memory. */
bool hl_expr_pool_failed(const hl_expr_pool *p);
/* Number of expressions in the pool (ids are 0 .. count-1). */
uint32_t hl_expr_count(const hl_expr_pool *p);
/* Recomputes the pool's invariants from scratch: operands precede their users, no two
 * ids hold equal content, the hash table finds every id, the has-z / has-variable flags
 * are right, and every sum and product is in canonical order. HL_OK, or HL_ERR_ARG
 * naming the first bad id. For tests and debugging. */
hl_status hl_expr_pool_check(const hl_expr_pool *p, hl_error *err);

/* Leaf constructors. hl_e_var interns name (copied); names are 1..63 characters of
 * [A-Za-z0-9_], not starting with a digit, and not "z", "min", "max" or "cdiv" (the text
 * form's words); a bad name gives HL_NONE without marking the pool failed (use
 * hl_var_name_valid to check first). */
hl_expr hl_e_num(hl_expr_pool *p, int64_t v);
hl_expr hl_e_var(hl_expr_pool *p, const char *name);
hl_expr hl_e_z(hl_expr_pool *p);
bool hl_var_name_valid(const char *name);

/* Simplifying binary constructor for any kind from HL_E_ADD to HL_E_LT. What it does:
 * folds constants; flattens sums and products into a canonical order with one constant
 * (last); combines like terms (3*x + x = 4*x) and drops zero terms; multiplies products
 * of sums out (one form per polynomial); pulls the terms a divisor divides out of / and %
 * ((q*d + r)/d = q + r/d, (q*d + r)%d = r%d); applies x/1, x%1 = 0, (x/a)/b = x/(a*b)
 * for positive a, b, (y%(k*d))%d = y%d, and the identity b*(x/b) + x%b = x inside sums
 * (which makes merged contiguous strides fold back to z*inner); decides /, %, min, max
 * and comparisons that a range analysis settles (z >= 0, variables >= 1). Results never
 * depend on argument ids, only on structure. Integer overflow in a coefficient leaves
 * that node unsimplified rather than wrong. */
hl_expr hl_e_bin(hl_expr_pool *p, hl_expr_kind k, hl_expr a, hl_expr b);
hl_expr hl_e_add(hl_expr_pool *p, hl_expr a, hl_expr b);
hl_expr hl_e_sub(hl_expr_pool *p, hl_expr a, hl_expr b);
hl_expr hl_e_mul(hl_expr_pool *p, hl_expr a, hl_expr b);
hl_expr hl_e_div(hl_expr_pool *p, hl_expr a, hl_expr b);
hl_expr hl_e_cdiv(hl_expr_pool *p, hl_expr a, hl_expr b);
hl_expr hl_e_mod(hl_expr_pool *p, hl_expr a, hl_expr b);
hl_expr hl_e_min(hl_expr_pool *p, hl_expr a, hl_expr b);
hl_expr hl_e_max(hl_expr_pool *p, hl_expr a, hl_expr b);

/* Structure of an expression (read-only; valid while the pool lives). For HL_E_NUM,
 * value is the literal; for HL_E_VAR, var is the variable's index (hl_e_var_name gives
 * its name); for binary kinds, a and b are the operands. */
typedef struct hl_expr_node {
    hl_expr_kind kind;
    uint32_t var;
    int64_t value;
    hl_expr a, b;
} hl_expr_node;
/* e must be a valid id of p (asserted). */
hl_expr_node hl_e_get(const hl_expr_pool *p, hl_expr e);

/* Variables: dense indices 0 .. hl_var_count-1 in order of first hl_e_var. hl_var_find
 * returns the index of name or HL_NONE. */
uint32_t hl_var_count(const hl_expr_pool *p);
const char *hl_var_name(const hl_expr_pool *p, uint32_t var);
uint32_t hl_var_find(const hl_expr_pool *p, const char *name);

/* Convenience queries. hl_e_is_num sets *v when e is a literal. hl_e_has_z tells
 * whether z occurs in e; hl_e_has_var whether any dynamic dim does. */
bool hl_e_is_num(const hl_expr_pool *p, hl_expr e, int64_t *v);
bool hl_e_has_z(const hl_expr_pool *p, hl_expr e);
bool hl_e_has_var(const hl_expr_pool *p, hl_expr e);

/* A total structural order on expressions (kind, then literal / variable name, then
 * operands): <0, 0 or >0. Independent of ids, so it orders the same in every pool. */
int hl_expr_cmp(const hl_expr_pool *p, hl_expr a, hl_expr b);

/* Replaces z in e by r and simplifies. z_bound, when > 0, promises that the z of the
 * result (the z occurring in r) lies in [0, z_bound), and the simplifier uses it
 * (x/c = 0 and x%c = x when 0 <= x < c). HL_NONE on OOM or int64 overflow. */
hl_expr hl_e_subst_z(hl_expr_pool *p, hl_expr e, hl_expr r, int64_t z_bound);

/* Values of dynamic dims for evaluation: values[var] for var < n, indexed by the pool's
 * variable index; bound[var] false (or var >= n) means unbound. bound may be NULL when
 * all n are bound. */
typedef struct hl_env {
    const int64_t *values;
    const bool *bound;
    uint32_t n;
} hl_env;

/* Evaluates e with z = zval. Returns 0 and sets *out, or a status with err filled:
 * HL_ERR_DIM for an unbound variable (named), HL_ERR_EVAL for division or modulo by zero
 * or int64 overflow. env may be NULL when e has no variables. */
hl_status hl_e_eval(const hl_expr_pool *p, hl_expr e, const hl_env *env, int64_t zval, int64_t *out,
                    hl_error *err);

/* Text form: infix + - * / % with usual precedence, `a >= b`, `a < b`, `a & b`,
 * `a | b` (lowest), and calls min(a,b), max(a,b), cdiv(a,b); variables by name, z for the
 * index variable. hl_e_print writes at most cap bytes including the terminating NUL and
 * returns the length the full text needs (as snprintf). hl_e_fprint prints to f. */
size_t hl_e_print(const hl_expr_pool *p, hl_expr e, char *buf, size_t cap);
void hl_e_fprint(const hl_expr_pool *p, hl_expr e, FILE *f);

/* Parses the text form (whitespace allowed, integer literals fit int64) into a simplified
 * expression. Returns 0 and sets *out, or HL_ERR_PARSE with the column and the reason in
 * err (a syntax error, a value that overflows int64, nesting deeper than 200; HL_ERR_NOMEM
 * on OOM). Variables are interned into p as they appear. Parsing what hl_e_print wrote
 * gives the same id back, except for a product of sums too large to multiply out (more
 * than 16 terms, or a coefficient past int64; never a shape), which gives an equal value
 * or, when the expression holds a number beyond +-2^31, may be refused as overflowing
 * int64: the text regroups the product, and a partial product may overflow where the
 * original grouping did not. */
hl_status hl_e_parse(hl_expr_pool *p, const char *text, hl_expr *out, hl_error *err);

/* ==================================================================================
 * Views (shape trackers)
 * ==================================================================================
 *
 * A view says how an op reads a tensor stored contiguously in a flat buffer. Logical
 * element (i_0, ..., i_{n-1}) lives at flat position sum_d stride_d[z := i_d]. So a
 * contiguous view has stride_d = z * (product of later dims), a broadcast dim has stride
 * 0, a merged dim has a stride in z / inner and z % inner. Views are plain values (no
 * heap); their expressions live in the pool passed to each function. Views never hold an
 * offset: slices start at zero (an offset slice is a builder op, see hl_slice).
 *
 * Every function returns HL_OK with *out set, or an error in err and *out untouched.
 * out may alias v.
 */

#define HL_MAX_DIMS 8

typedef struct hl_view {
    uint32_t ndim;
    hl_expr dims[HL_MAX_DIMS];
    hl_expr strides[HL_MAX_DIMS]; /* expressions in z */
} hl_view;

/* The contiguous (row-major) view of dims[0..ndim). ndim 0 is a scalar. */
hl_status hl_view_contiguous(hl_expr_pool *p, uint32_t ndim, const hl_expr *dims, hl_view *out,
                             hl_error *err);
/* out.dims[i] = v.dims[perm[i]]; perm must be a permutation of 0..ndim-1. */
hl_status hl_view_permute(hl_expr_pool *p, const hl_view *v, const uint32_t *perm, hl_view *out,
                          hl_error *err);
/* Inserts a new broadcast dim of the given size at position axis (0..ndim), stride 0. */
hl_status hl_view_expand(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                         hl_view *out, hl_error *err);
/* Broadcasts an existing dim of size 1 to size (stride becomes 0). */
hl_status hl_view_broadcast(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                            hl_view *out, hl_error *err);
/* Merges dims axis and axis+1 into one dim of their product size; its stride is
 * s_axis[z := z / d_{axis+1}] + s_{axis+1}[z := z % d_{axis+1}], simplified (so merging
 * contiguous dims gives a contiguous stride again). */
hl_status hl_view_merge(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_view *out,
                        hl_error *err);
/* Splits dim axis into (size / inner, inner). Needs the dim's stride to be linear in z
 * (k * z with k free of z, or 0) and, when both are numbers, size divisible by inner;
 * otherwise HL_ERR_VIEW (the builder then copies the tensor contiguous first). */
hl_status hl_view_split(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr inner,
                        hl_view *out, hl_error *err);
/* Shrinks dim axis to [0, size). When both sizes are numbers, size <= old size is
 * checked (HL_ERR_SHAPE). */
hl_status hl_view_slice(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_expr size,
                        hl_view *out, hl_error *err);
/* Removes a dim of size 1 (HL_ERR_SHAPE if its size is not the number 1). */
hl_status hl_view_squeeze(hl_expr_pool *p, const hl_view *v, uint32_t axis, hl_view *out,
                          hl_error *err);

/* The flat buffer position of logical element z (z counts row-major over v.dims), as an
 * expression in z: sum_d stride_d[z := (z / inner_d) % dim_d]. HL_NONE on OOM or overflow. */
hl_expr hl_view_index(hl_expr_pool *p, const hl_view *v);
/* The number of elements, product of dims (1 for a scalar). HL_NONE on OOM or overflow. */
hl_expr hl_view_numel(hl_expr_pool *p, const hl_view *v);
/* True when the strides equal the contiguous strides of v's dims (ids compare; a dim of
 * size 1 may have any stride). May add those contiguous strides to p. */
bool hl_view_is_contiguous(hl_expr_pool *p, const hl_view *v);
/* True when both views have the same dims and strides. */
bool hl_view_equal(const hl_view *a, const hl_view *b);
/* Prints "[d0, d1]:[s0, s1]" to f. */
void hl_view_fprint(const hl_expr_pool *p, const hl_view *v, FILE *f);

/* ==================================================================================
 * The graph
 * ================================================================================== */

/* The primitive ops (Luminal's HLIR). Arity, dtype rule and shape rule per op:
 *
 *   op          inputs                 output dtype       output shape
 *   Input       -                      declared           declared dims
 *   Output      x                      dtype(x)           view(x) dims
 *   Constant    -                      F32                scalar (ndim 0)
 *   Iota        -                      Int                [len]; element i = expr[z:=i]
 *   Cast        x                      cast_to            view(x) dims
 *   Exp2 Log2 Sin Recip Sqrt  x (float)  dtype(x)         view(x) dims
 *   Add Mul Mod a, b (same dtype,      dtype(a)           view(a) dims
 *               same view dims; not Bool)
 *   LessThan    a, b (same dtype)      Bool               view(a) dims
 *   Gather      indexes (Int), data    dtype(data)        view(indexes) dims
 *               out[i] = data[ logical element indexes[i] of view(data) ]
 *   Scatter     dest, indexes (Int), src (dtype(dest), view(src) dims = view(indexes))
 *                                      dtype(dest)        view(dest) dims
 *               out = dest; then for i in order: out[ indexes[i] ] = src[i]
 *   SumReduce   x (not Bool)           dtype(x)           view(x) dims without axis
 *   MaxReduce   x (not Bool)           dtype(x)           view(x) dims without axis
 *
 * Every output is stored contiguously. docs/hlir.md gives the arithmetic exactly.
 */
typedef enum hl_op {
    HL_OP_INPUT = 0,
    HL_OP_OUTPUT,
    HL_OP_CONSTANT,
    HL_OP_IOTA,
    HL_OP_CAST,
    HL_OP_EXP2,
    HL_OP_LOG2,
    HL_OP_SIN,
    HL_OP_RECIP,
    HL_OP_SQRT,
    HL_OP_ADD,
    HL_OP_MUL,
    HL_OP_MOD,
    HL_OP_LESS_THAN,
    HL_OP_GATHER,
    HL_OP_SCATTER,
    HL_OP_SUM_REDUCE,
    HL_OP_MAX_REDUCE,
    HL_OP_COUNT
} hl_op;

/* Luminal's names: "Input", "Output", "Constant", "Iota", "Cast", "Exp2", "Log2", "Sin",
 * "Recip", "Sqrt", "Add", "Mul", "Mod", "LessThan", "Gather", "Scatter", "SumReduce",
 * "MaxReduce". hl_op_name never returns NULL; hl_op_parse returns 0 and sets *out, or -1.
 * hl_op_arity is the number of inputs the op takes. */
const char *hl_op_name(hl_op op);
int hl_op_parse(const char *name, hl_op *out);
uint32_t hl_op_arity(hl_op op);

#define HL_MAX_INPUTS 3

/* One input edge: the producing node and the view this node reads it through. */
typedef struct hl_in {
    uint32_t node;
    hl_view view;
} hl_in;

/* A node. The graph owns it and its name; read it with hl_graph_node. Which fields are
 * meaningful depends on op:
 *   name      Input, Output: the tensor's name (unique among inputs / among outputs)
 *   index     Input: position among the graph's inputs; Output: among its outputs
 *   constant  Constant: the value
 *   iota_expr, iota_len   Iota: element i is iota_expr[z := i], for i < iota_len
 *   cast_to   Cast: the target dtype (also in dtype)
 *   axis      SumReduce, MaxReduce: the reduced dim of the input's view
 */
typedef struct hl_node {
    hl_op op;
    hl_dtype dtype; /* output dtype */
    uint32_t ndim;  /* output rank */
    hl_expr shape[HL_MAX_DIMS];
    uint32_t n_in;
    hl_in in[HL_MAX_INPUTS];
    char *name;
    uint32_t index;
    float constant;
    hl_expr iota_expr, iota_len;
    hl_dtype cast_to;
    uint32_t axis;
} hl_node;

/* A declared dynamic dimension: its variable in the graph's pool, its inclusive range,
 * and the value to profile with. */
typedef struct hl_dim {
    uint32_t var;
    hl_expr expr;
    int64_t lo, hi, profile;
} hl_dim;

typedef struct hl_graph hl_graph;

/* Creates an empty graph (its own expression pool); NULL when out of memory. */
hl_graph *hl_graph_new(void);
/* Frees the graph, its nodes, names and pool. Accepts NULL. */
void hl_graph_free(hl_graph *g);

/* The graph's expression pool: every hl_expr in the graph's nodes, views and dims is
 * an id in it. Owned by the graph. */
hl_expr_pool *hl_graph_exprs(hl_graph *g);
const hl_expr_pool *hl_graph_exprs_c(const hl_graph *g);

/* The builder's sticky error: code HL_OK while every call has succeeded. After a failed
 * call the graph is as it was before that call (nodes it added are removed), and every
 * later builder call does nothing until hl_graph_clear_error. */
const hl_error *hl_graph_error(const hl_graph *g);
void hl_graph_clear_error(hl_graph *g);

/* Declares a dynamic dim name with range [lo, hi] (1 <= lo <= hi) and profiling value
 * (lo <= profile <= hi); returns its expression (a variable), or HL_NONE with the
 * graph's error set (bad name, duplicate, bad range). */
hl_expr hl_graph_dim(hl_graph *g, const char *name, int64_t lo, int64_t hi, int64_t profile);
uint32_t hl_graph_dim_count(const hl_graph *g);
/* i < hl_graph_dim_count (asserted); in declaration order. */
const hl_dim *hl_graph_dim_at(const hl_graph *g, uint32_t i);
/* The dim declared with this name, or NULL. */
const hl_dim *hl_graph_dim_find(const hl_graph *g, const char *name);

/* Nodes in creation order, which is a topological order (inputs precede users). */
uint32_t hl_graph_node_count(const hl_graph *g);
/* id < node count (asserted). The pointer is valid until the next call that adds nodes. */
const hl_node *hl_graph_node(const hl_graph *g, uint32_t id);
/* Input and Output nodes in declaration order. */
uint32_t hl_graph_input_count(const hl_graph *g);
uint32_t hl_graph_input(const hl_graph *g, uint32_t i);
uint32_t hl_graph_output_count(const hl_graph *g);
uint32_t hl_graph_output(const hl_graph *g, uint32_t i);

/* The primitive door: adds one node after checking it completely (arity, input ids
 * exist, view ranks and dims agree as the op needs, dtype rule, axis in range, that
 * every expression is in the pool and every variable a declared dim). spec's op, inputs
 * (node, view), and the op's own fields are read; dtype is read for Input, shape/ndim
 * for Input, name for Input and Output; other fields are computed. Returns the new id,
 * or HL_NONE with the graph's error set (the message names the op, the input index and
 * the reason). The name is copied. */
uint32_t hl_graph_add(hl_graph *g, const hl_node *spec);

/* Checks every invariant of the graph from scratch (its expression pool as
 * hl_expr_pool_check does, ids, topological order, shape and dtype rules, unique names).
 * HL_OK or the first violation in err. For tests and debugging; builders keep these
 * invariants by construction. */
hl_status hl_graph_check(const hl_graph *g, hl_error *err);

/* Writes a readable listing: dims, then one line per node, e.g.
 *   %3 = Add f32 [4, 3]  (%1 [4, 3]:[3*z, 0]) (%2 [4, 3]:[3*z, z])
 * Deterministic. */
void hl_graph_dump(const hl_graph *g, FILE *f);

/* ==================================================================================
 * The builder
 * ==================================================================================
 *
 * A tensor handle is a node plus the view through which later ops read it. Handles are
 * values; views are changed without adding nodes. A handle whose node is HL_NONE is the
 * invalid tensor that failed calls return (the graph's error says why); passing it on
 * is harmless, as every builder call returns the invalid tensor once the error is set.
 *
 * Binary ops broadcast as numpy does: shapes align at the right, a missing or size-1 dim
 * stretches to the other size; otherwise HL_ERR_SHAPE. Both operands must have the same
 * dtype (no implicit promotion; use hl_cast): otherwise HL_ERR_DTYPE. Axes are
 * 0..ndim-1; a negative axis counts from the end (-1 is the last).
 */

typedef struct hl_t {
    uint32_t node;
    hl_dtype dtype;
    hl_view view;
} hl_t;

/* Expression helpers on the graph's pool. */
hl_expr hl_n(hl_graph *g, int64_t v);
/* The handle that reads node id's output contiguously (for a node made by hl_graph_add);
 * the invalid tensor if id is not a node of g or is an Output. Sets no error. */
hl_t hl_node_tensor(hl_graph *g, uint32_t id);

/* --- sources and sinks --- */
/* A graph input named name (unique) with dims[0..ndim). */
hl_t hl_input(hl_graph *g, const char *name, hl_dtype dtype, uint32_t ndim, const hl_expr *dims);
/* Marks t as graph output name (unique). Returns the Output node id or HL_NONE. */
uint32_t hl_output(hl_graph *g, const char *name, hl_t t);
/* A Constant (F32 scalar), cast to dtype when dtype is not F32. */
hl_t hl_scalar(hl_graph *g, float value, hl_dtype dtype);
/* value broadcast to dims[0..ndim). */
hl_t hl_full(hl_graph *g, float value, hl_dtype dtype, uint32_t ndim, const hl_expr *dims);
/* The primitive Iota: Int tensor [len], element i = expr[z := i]. */
hl_t hl_iota(hl_graph *g, hl_expr expr, hl_expr len);
/* An Int tensor of dims[0..ndim) whose element at row-major position z is expr (an
 * expression in z): Iota plus splits. */
hl_t hl_iota_nd(hl_graph *g, hl_expr expr, uint32_t ndim, const hl_expr *dims);
/* The contiguous 0, 1, ..., n-1 as dtype. */
hl_t hl_arange(hl_graph *g, hl_expr n, hl_dtype dtype);

/* --- primitives with broadcasting --- */
hl_t hl_cast(hl_graph *g, hl_t x, hl_dtype to);
hl_t hl_exp2(hl_graph *g, hl_t x);
hl_t hl_log2(hl_graph *g, hl_t x);
hl_t hl_sin(hl_graph *g, hl_t x);
hl_t hl_recip(hl_graph *g, hl_t x);
hl_t hl_sqrt(hl_graph *g, hl_t x);
hl_t hl_add(hl_graph *g, hl_t a, hl_t b);
hl_t hl_mul(hl_graph *g, hl_t a, hl_t b);
hl_t hl_mod(hl_graph *g, hl_t a, hl_t b);
hl_t hl_lt(hl_graph *g, hl_t a, hl_t b);
/* Gather: result has indexes' shape; element i = element indexes[i] of data, counting
 * data's elements row-major through its view. indexes must be Int. */
hl_t hl_gather(hl_graph *g, hl_t indexes, hl_t data);
/* Scatter: a copy of dest with dest[indexes[i]] = src[i] (row-major element numbers of
 * dest; later i win). indexes Int; src the same dims as indexes, same dtype as dest. */
hl_t hl_scatter(hl_graph *g, hl_t dest, hl_t indexes, hl_t src);
/* One-axis reductions; the axis disappears. */
hl_t hl_sum_reduce(hl_graph *g, hl_t x, int axis);
hl_t hl_max_reduce(hl_graph *g, hl_t x, int axis);

/* --- views (no nodes unless a copy is needed) --- */
hl_t hl_permute(hl_graph *g, hl_t x, const uint32_t *perm);
hl_t hl_transpose(hl_graph *g, hl_t x, int a, int b);
/* Inserts a broadcast dim of size at position axis (0..ndim; negative counts from the
 * end so -1 appends). */
hl_t hl_expand(hl_graph *g, hl_t x, int axis, hl_expr size);
/* Broadcasts x to dims[0..ndim) with numpy's rules. */
hl_t hl_broadcast_to(hl_graph *g, hl_t x, uint32_t ndim, const hl_expr *dims);
/* New dims with the same element count: the two products must be equal expressions
 * (HL_ERR_SHAPE otherwise, including counts that cannot be proven equal). Merges and
 * splits the view when the strides allow it (size-1 dims come and go freely), else
 * copies x contiguous first (an identity Cast) and reshapes the copy. */
hl_t hl_reshape(hl_graph *g, hl_t x, uint32_t ndim, const hl_expr *dims);
/* A contiguous copy (an identity Cast) unless x already is contiguous. */
hl_t hl_contiguous(hl_graph *g, hl_t x);
/* Elements [start, end) of axis; a view when start is 0, else a Gather. */
hl_t hl_slice(hl_graph *g, hl_t x, int axis, hl_expr start, hl_expr end);
/* Pads axis with before and after elements of value. */
hl_t hl_pad(hl_graph *g, hl_t x, int axis, hl_expr before, hl_expr after, float value);
/* Joins a and b along axis (other dims equal). */
hl_t hl_concat(hl_graph *g, hl_t a, hl_t b, int axis);

/* --- elementwise --- */
hl_t hl_neg(hl_graph *g, hl_t x);
hl_t hl_sub(hl_graph *g, hl_t a, hl_t b);
hl_t hl_div(hl_graph *g, hl_t a, hl_t b);
hl_t hl_add_scalar(hl_graph *g, hl_t x, float v);
hl_t hl_mul_scalar(hl_graph *g, hl_t x, float v);
hl_t hl_exp(hl_graph *g, hl_t x);
hl_t hl_log(hl_graph *g, hl_t x);
hl_t hl_cos(hl_graph *g, hl_t x);
hl_t hl_sigmoid(hl_graph *g, hl_t x);
hl_t hl_silu(hl_graph *g, hl_t x);
hl_t hl_tanh(hl_graph *g, hl_t x);
/* gelu: x * Phi(x) with erf (exact form); gelu_tanh: the tanh approximation. */
hl_t hl_gelu(hl_graph *g, hl_t x);
hl_t hl_gelu_tanh(hl_graph *g, hl_t x);
hl_t hl_relu(hl_graph *g, hl_t x);
hl_t hl_maximum(hl_graph *g, hl_t a, hl_t b);
hl_t hl_minimum(hl_graph *g, hl_t a, hl_t b);
/* Comparisons give Bool. */
hl_t hl_gt(hl_graph *g, hl_t a, hl_t b);
hl_t hl_le(hl_graph *g, hl_t a, hl_t b);
hl_t hl_ge(hl_graph *g, hl_t a, hl_t b);
hl_t hl_eq(hl_graph *g, hl_t a, hl_t b);
hl_t hl_ne(hl_graph *g, hl_t a, hl_t b);
/* mask ? a : b, as a*m + b*(1-m) with m = cast(mask): so an inf or NaN in the branch
 * not taken still reaches the result as NaN (as in Luminal). mask is Bool. */
hl_t hl_where(hl_graph *g, hl_t mask, hl_t a, hl_t b);

/* --- reductions over several axes (keepdim false removes them) --- */
hl_t hl_sum(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim);
hl_t hl_max(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim);
hl_t hl_mean(hl_graph *g, hl_t x, uint32_t naxes, const int *axes, bool keepdim);

/* --- normalisation and friends (over one axis, shape kept) --- */
hl_t hl_softmax(hl_graph *g, hl_t x, int axis);
hl_t hl_log_softmax(hl_graph *g, hl_t x, int axis);
/* Over the last axis: (x - mean) / sqrt(var + eps) * weight + bias; weight and bias may
 * be invalid handles (node HL_NONE) to leave them out. */
hl_t hl_layer_norm(hl_graph *g, hl_t x, hl_t weight, hl_t bias, float eps);
/* Over the last axis: x / sqrt(mean(x^2) + eps) * weight (weight optional as above). */
hl_t hl_rms_norm(hl_graph *g, hl_t x, hl_t weight, float eps);

/* --- linear algebra --- */
/* a[..., m, k] x b[..., k, n] -> [..., m, n] with batch dims broadcast; a 1-D operand
 * is treated as numpy does (prepended / appended dim, removed after). */
hl_t hl_matmul(hl_graph *g, hl_t a, hl_t b);
/* table[vocab, d] rows picked by ids (Int, any shape) -> ids.shape + [d]. */
hl_t hl_embedding(hl_graph *g, hl_t table, hl_t ids);

/* --- attention --- */
/* An n x n tensor of dtype with 0 on and below the diagonal and -1e30 above (-inf once
 * rounded to f16 storage; the most negative finite value in the saturating FP8 formats),
 * to add to attention scores. */
hl_t hl_causal_mask(hl_graph *g, hl_expr n, hl_dtype dtype);
/* softmax(q k^T * scale [+ causal mask]) v over the last two dims: q[..., s, d],
 * k[..., t, d], v[..., t, e] -> [..., s, e]. scale <= 0 means 1/sqrt(d). */
hl_t hl_attention(hl_graph *g, hl_t q, hl_t k, hl_t v, bool causal, float scale);
/* Rotary embedding (rotate-half form) of x[..., s, d] (d even): position of row j is
 * pos_offset + j; pair (x_i, x_{i+d/2}) is rotated by angle pos * base^(-2i/d). */
hl_t hl_rope(hl_graph *g, hl_t x, hl_expr pos_offset, float base);

/* ==================================================================================
 * The reference runtime
 * ==================================================================================
 *
 * Executes a graph on the CPU. Arithmetic is f32 for float dtypes (each node's result
 * rounded to its dtype's storage, as on the GPU), int32 (wrapping) for Int, int64 for
 * I64. Nodes run in id order; reductions add in index order, so results are bit-for-bit
 * deterministic.
 */

/* A tensor: dtype, dims and a contiguous buffer of elements in the dtype's storage
 * format (f16/bf16 as uint16 bits, FP8 as bytes, Bool as one byte 0/1). Owns data when
 * it came from hl_run (free with hl_tensor_fini); inputs passed to hl_run are borrowed. */
typedef struct hl_tensor {
    hl_dtype dtype;
    uint32_t ndim;
    int64_t dims[HL_MAX_DIMS];
    size_t numel;
    void *data;
} hl_tensor;

/* Allocates a zero-filled tensor. HL_OK or HL_ERR_NOMEM / HL_ERR_ARG in err. */
hl_status hl_tensor_init(hl_tensor *t, hl_dtype dtype, uint32_t ndim, const int64_t *dims,
                         hl_error *err);
/* Frees t's data and zeroes it. Accepts NULL and already-freed tensors. */
void hl_tensor_fini(hl_tensor *t);
/* Element i as f64 / set from f64 (rounded to the dtype's storage). i < numel. */
double hl_tensor_get(const hl_tensor *t, size_t i);
void hl_tensor_set(hl_tensor *t, size_t i, double v);
/* Fills t with numbers drawn from seed on stream (PCG32): floats uniform in [-1, 1) in
 * steps of 2^-23 (then rounded to the dtype), Bool 0 or 1, integers 0 to 3 (in range as
 * indexes of any dim of 4 or more). The same seed and stream give the same bytes on every
 * machine; the inputs of a reference run are stream i for input i. */
void hl_tensor_fill_random(hl_tensor *t, uint64_t seed, uint64_t stream);

/* Runs g. dim_values[i] is the value of hl_graph_dim_at(g, i) (checked against its
 * range; dim_values NULL means every dim's profile value); inputs[i] is the tensor for
 * hl_graph_input(g, i) (dtype and dims checked; borrowed). On success fills
 * outputs[0 .. hl_graph_output_count) (caller frees each with hl_tensor_fini) and returns
 * HL_OK. On failure returns the status with err naming the node and reason (bad data
 * too: an index out of range, an integer modulo by zero, a view reaching outside its
 * producer), and outputs hold nothing to free. The graph is not modified. */
hl_status hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
                 hl_tensor *outputs, hl_error *err);

/* ---- JSON graph format ---- */
/* The reader and writer of the JSON graph format, version 1 (docs/graph-json.md), and a
 * seeded generator of random valid graphs (for fuzzing and round-trip tests). Owned by
 * hlir/json_*.c and hlir/gen.c. */

/* Reads a graph from the JSON text text[0..len) (need not be NUL-terminated). source
 * names the text in messages (a file name; NULL gives "<json>"). Validates everything and
 * builds the graph through the builder: high-level ops are lowered to primitives, view
 * ops change views, primitives with explicit views are added as written. Returns a new
 * graph (free with hl_graph_free), or NULL with err set: HL_ERR_PARSE with
 * "source:line:col" for malformed JSON and for every schema violation (unknown op or
 * field, wrong arity or type, dangling reference, cycle), HL_ERR_DIM for an unknown dim,
 * the builder's code (HL_ERR_SHAPE, HL_ERR_DTYPE, ...) for a rejected op; every message
 * names the node (nodes[i] 'name'), the field and the reason. Never crashes on any input;
 * HL_ERR_NOMEM when memory runs out. */
hl_graph *hl_graph_read_json(const char *text, size_t len, const char *source, hl_error *err);
/* As hl_graph_read_json on the contents of the file at path (HL_ERR_IO when it cannot be
 * read; messages use path as the source). */
hl_graph *hl_graph_load_json(const char *path, hl_error *err);

/* Writes g in the canonical form (primitives only, every input view explicit, nodes
 * numbered inputs first; see docs/graph-json.md) as a NUL-terminated string that the
 * caller frees with free(). Deterministic: the same graph gives the same bytes, and
 * reading them back gives a graph that writes the same bytes. NULL with err set
 * (HL_ERR_NOMEM, or HL_ERR_ARG when g holds a builder error, has no output, or has an
 * input or output name the format cannot hold). */
char *hl_graph_write_json(const hl_graph *g, hl_error *err);
/* As hl_graph_write_json, to the stream f (HL_ERR_IO when writing fails). */
hl_status hl_graph_fwrite_json(const hl_graph *g, FILE *f, hl_error *err);

/* Options of the random graph generator. Zero-initialised options are valid and mean
 * the defaults in brackets. */
typedef struct hl_gen_opts {
    uint32_t n_ops;   /* high-level ops to try to add [12] */
    uint32_t max_dim; /* largest static size [6] */
    bool dynamic;     /* also declare a dynamic dim and use it in some shapes */
} hl_gen_opts;

/* Builds a random valid graph from seed: float inputs of random small shapes, then
 * n_ops ops drawn from elementwise unary and binary ops (with broadcasting), reductions,
 * softmax and norms, views (permute, reshape, expand, slice), pad, concat, matmuls,
 * and gathers, embeddings and scatters (whose indexes come from iota expressions, so
 * every index is in range), and one or more outputs. The same seed and options give the same graph.
 * opts may be NULL. Returns the graph or NULL with err set (HL_ERR_NOMEM). Every graph it returns
 * passes hl_graph_check and runs on the reference runtime at any dim value in range. */
hl_graph *hl_graph_generate(uint64_t seed, const hl_gen_opts *opts, hl_error *err);
/* ---- end of JSON graph format ---- */

/* ---- E-graph encoding ---- */
/* A graph written into an e-graph engine (egraph.h) in Luminal's shape, and read back.
 * Owned by hlir/encode*.c; the sorts are in hlir/encode.egg, the format in
 * docs/encoding.md. In short: every node becomes an IR term, (Op <kind> <IList of
 * inputs>) for compute ops with the views it reads through as EList fields, (Input
 * index name dtype shape) and (Output producer index name shape strides) for the ends;
 * (OutputJoin o0 (OutputJoin o1 ...)) is the root; (Dim index name lo hi profile)
 * declares each dynamic dim. Nodes are written in Kahn order, lowest id first, and the
 * C path adds terms in exactly the order the engine evaluates the program text, so both
 * paths give the same e-graph, byte for byte once serialized.
 *
 * The encoding functions take the graph as const but may add expressions (contiguous
 * strides) to its hash-consed pool; nodes, views and existing ids never change. */
#include "egraph.h"

/* The schema (the text of hlir/encode.egg): datatypes Expression, EList, DType, DimDecl,
 * IR, OpKind, IList and the functions dtype, lower, upper. Static; never NULL. */
const char *hl_encode_schema(void);

/* The dtype_prop ruleset (the text of hlir/encode_dtype.egg): rules that set (dtype e)
 * of every IR term by HLIR's dtype rule per op, for terms that rewrites add (the encoder
 * sets the dtype of the terms it writes itself). Run (saturate dtype_prop). Static. */
const char *hl_encode_dtype_rules(void);

/* Makes sure e knows the schema: runs it (and the dtype_prop ruleset) when e has none of
 * its tables, does nothing when every constructor is already declared with its arity,
 * and fails with HL_ERR_ARG naming the table when e declares some names differently. */
hl_status hl_encode_declare(eg_engine *e, hl_error *err);

/* What hl_graph_encode added: the root IR e-class and each node's IR e-class (node_class
 * is indexed by node id and owned by the record; free it with hl_encoding_fini). */
typedef struct hl_encoding {
    eg_value root;
    uint32_t n_nodes;
    eg_value *node_class;
} hl_encoding;

/* Adds g to e through the engine's C API (declaring the schema first when needed):
 * the dims, then every node in Kahn order with its dtype set, then the root. HL_OK with
 * *out filled, or an error in err (HL_ERR_ARG for a graph holding a builder error, a
 * graph without outputs, or an engine that rejects a term; HL_ERR_NOMEM) with *out
 * zeroed; terms added before a failure stay in e. */
hl_status hl_graph_encode(const hl_graph *g, eg_engine *e, hl_encoding *out, hl_error *err);
/* Frees what the record owns and zeroes it. Accepts NULL. */
void hl_encoding_fini(hl_encoding *enc);

/* The same encoding as program text, one command per line: (let dI (Dim ...)) and the
 * dims' lower/upper facts, then (let tK <term>) and (set (dtype tK) <dtype>) for node K
 * in Kahn order, then (let root ...). Preceded by the schema and the dtype_prop ruleset
 * when with_schema is true. Running it in an engine gives what hl_graph_encode gives.
 * Returns a NUL-terminated string the caller frees with free(), or NULL with err set
 * (as hl_graph_encode). */
char *hl_graph_encode_text(const hl_graph *g, bool with_schema, hl_error *err);
/* Writes the schema, the dtype_prop ruleset and the program text to f (what
 * `luminal_search --emit egraph` prints). HL_ERR_IO when writing fails. */
hl_status hl_graph_fprint_egraph(const hl_graph *g, FILE *f, hl_error *err);

/* Reads a graph back out of a serialized e-graph (eg_serialize of an engine holding an
 * encoding; e supplies the strings). choice, when not NULL, names for every class the
 * index of its chosen node in s->nodes (UINT32_MAX: let the decoder choose); the decoder
 * chooses, per class, the node of least tree size among those it can read (lowest index
 * on ties), which never forms a cycle. The result has every Dim in index order, every
 * Input node in index order (chosen or not: inputs are the graph's interface), then the
 * compute nodes the outputs reach in Kahn order with the lowest class first (for an
 * encoding read straight back, the graph's own order), then every Output in index
 * order. Reductions read the reduced dim last (the encoding keeps the dim, not its
 * position). Returns the graph (free with hl_graph_free) or NULL with err naming the
 * class, the node and the reason (HL_ERR_PARSE for a malformed or unreadable e-graph,
 * the builder's code for a node the graph rejects, HL_ERR_NOMEM). */
hl_graph *hl_graph_decode(const eg_engine *e, const eg_serialized *s, const uint32_t *choice,
                          hl_error *err);
/* Rebuilds and serializes e, then decodes it with the decoder's own choices. */
hl_graph *hl_graph_decode_engine(eg_engine *e, hl_error *err);
/* ---- end of E-graph encoding ---- */

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HLIR_H */
