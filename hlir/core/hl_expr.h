/* hl_expr.h - symbolic integer expressions: the hash-consed pool, the simplifying
 * constructors, evaluation, and the text form (hlir/core/hl_expr*.c). Public. */
#ifndef LUMINAL_HL_EXPR_H
#define LUMINAL_HL_EXPR_H

#include "hl_core.h"

#ifdef __cplusplus
extern "C" {
#endif

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
hl_status hl_expr_pool_check(const hl_expr_pool *p, lm_err *err);

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

/* Copies expression e of src into dst as it is, without simplifying (src's canonical form
 * is canonical in any pool: the order inside sums and products is structural), naming
 * its variables by name. memo, when not NULL, has hl_expr_count(src) entries that the
 * caller set to HL_NONE; it remembers each copy, so shared subexpressions and repeated
 * calls copy once. With HL_COPY_KNOWN_VARS a variable that dst does not already hold
 * gives HL_NONE instead of being added (a plan's variables are exactly its dims).
 * HL_NONE for HL_NONE or an id that is not src's, or when dst cannot allocate (then dst
 * is marked failed). */
enum { HL_COPY_KNOWN_VARS = 1 };
hl_expr hl_expr_copy(hl_expr_pool *dst, const hl_expr_pool *src, hl_expr e, hl_expr *memo,
                     unsigned flags);

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
                    lm_err *err);

/* Text form: infix + - * / % with usual precedence, `a >= b`, `a < b`, `a & b`,
 * `a | b` (lowest), and calls min(a,b), max(a,b), cdiv(a,b); variables by name, z for the
 * index variable. hl_e_print writes at most cap bytes including the terminating NUL and
 * returns the length the full text needs (as snprintf). hl_e_fprint prints to f. */
size_t hl_e_print(const hl_expr_pool *p, hl_expr e, char *buf, size_t cap);
void hl_e_fprint(const hl_expr_pool *p, hl_expr e, FILE *f);

/* Parses the text form (whitespace allowed, integer literals fit int64) into a simplified
 * expression. Returns 0 and sets *out, or HL_ERR_PARSE with the column and the reason in
 * err (a syntax error, a value that overflows int64, nesting deeper than
 * HL_E_MAX_PARSE_DEPTH; HL_ERR_NOMEM
 * on OOM). Variables are interned into p as they appear. Parsing what hl_e_print wrote
 * gives the same id back, except for a product of sums too large to multiply out (more
 * than 16 terms, or a coefficient past int64; never a shape), which gives an equal value
 * or, when the expression holds a number beyond +-2^31, may be refused as overflowing
 * int64: the text regroups the product, and a partial product may overflow where the
 * original grouping did not. */
hl_status hl_e_parse(hl_expr_pool *p, const char *text, hl_expr *out, lm_err *err);

#define HL_E_MAX_PARSE_DEPTH 200 /* nesting hl_e_parse accepts */
#define HL_E_MAX_NODES 4096      /* the largest expression tree a pool accepts */

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_EXPR_H */
