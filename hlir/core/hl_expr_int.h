/* hl_expr_int.h - the expression pool's layout, shared by core/hl_expr*.c (not public).
 *
 *   nodes[id]   the node (kind, var, value, a, b); ids in creation order
 *   flags[id]   EF_Z if z occurs in it, EF_VAR if a variable does
 *   size[id]    the number of nodes of its tree (shared subtrees counted each time);
 *               never above HL__EXPR_MAX_SIZE, so every recursive walk is bounded
 *   table       open-addressing hash set of ids keyed by node content (lookup only:
 *               nothing iterates it, so hash order never reaches a result)
 *   vars[i]     interned variable names, in order of first use
 *
 * Invariant: no two ids have equal content (hash-consing), so id equality is structural
 * equality. Constructors in hl_expr_simp.c keep every node they build canonical. */
#ifndef LUMINAL_EXPR_INT_H
#define LUMINAL_EXPR_INT_H

#include "hl_int.h"

enum { EF_Z = 1, EF_VAR = 2 };

/* The largest expression tree a pool accepts. Shapes and strides stay in the tens of
 * nodes; the bound exists so that hostile input (a JSON graph, the parser) cannot make
 * the tree-walking functions (simplifier, range analysis, evaluation) take exponential
 * time through shared subtrees. */
#define HL__EXPR_MAX_SIZE HL_E_MAX_NODES

enum { HL__REFUSED_NONE = 0, HL__REFUSED_OVERFLOW, HL__REFUSED_TOO_LARGE };

/* Records that a constructor gave up because a value overflows int64; returns HL_NONE. */
static inline hl_expr hl__overflow(struct hl_expr_pool *p);

struct hl_expr_pool {
    hl_expr_node *nodes;
    uint8_t *flags;
    uint32_t *size;
    uint32_t n, cap;
    uint32_t *table; /* HL_NONE = empty slot */
    uint32_t tcap;   /* power of two */
    char **vars;
    uint32_t nvars, vcap;
    bool failed;     /* a constructor ran out of memory (sticky) */
    uint8_t refused; /* why the latest HL_NONE that was not OOM: HL__REFUSED_* */
};

/* Interns a node as given (no simplification). HL_NONE on OOM (pool marked failed). */
hl_expr hl__e_mk(hl_expr_pool *p, hl_expr_kind k, hl_expr a, hl_expr b);

/* A closed integer interval; lo_inf / hi_inf mean unbounded on that side. */
typedef struct hl__range {
    int64_t lo, hi;
    bool lo_inf, hi_inf;
} hl__range;

/* The range of e when z lies in [0, zb) (zb <= 0: z unbounded above) and every variable
 * is >= 1. Conservative. */
hl__range hl__e_range(const hl_expr_pool *p, hl_expr e, int64_t zb);

/* The simplifying constructor with a bound on z (see hl_e_subst_z). */
hl_expr hl__e_bin(hl_expr_pool *p, int64_t zb, hl_expr_kind k, hl_expr a, hl_expr b);

static inline hl_expr hl__overflow(hl_expr_pool *p)
{
    p->refused = HL__REFUSED_OVERFLOW;
    return HL_NONE;
}

/* Why the latest constructor returned HL_NONE, as a sentence fragment. */
static inline const char *hl__none_reason(const hl_expr_pool *p)
{
    if (p->failed) return "out of memory";
    if (p->refused == HL__REFUSED_TOO_LARGE) return "the expression exceeds 4096 nodes";
    return "a value overflows int64";
}

static inline const hl_expr_node *hl__en(const hl_expr_pool *p, hl_expr e)
{
    return &p->nodes[e];
}

#endif /* LUMINAL_EXPR_INT_H */
