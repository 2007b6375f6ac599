/* expr_int.h - the expression pool's layout, shared by expr*.c (not public).
 *
 *   nodes[id]   the node (kind, var, value, a, b); ids in creation order
 *   flags[id]   EF_Z if z occurs in it, EF_VAR if a variable does
 *   table       open-addressing hash set of ids keyed by node content (lookup only:
 *               nothing iterates it, so hash order never reaches a result)
 *   vars[i]     interned variable names, in order of first use
 *
 * Invariant: no two ids have equal content (hash-consing), so id equality is structural
 * equality. Constructors in expr_simp.c keep every node they build canonical. */
#ifndef LUMINAL_EXPR_INT_H
#define LUMINAL_EXPR_INT_H

#include "hl_int.h"

enum { EF_Z = 1, EF_VAR = 2 };

struct hl_expr_pool {
    hl_expr_node *nodes;
    uint8_t *flags;
    uint32_t n, cap;
    uint32_t *table; /* HL_NONE = empty slot */
    uint32_t tcap;   /* power of two */
    char **vars;
    uint32_t nvars, vcap;
    bool failed;
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

static inline const hl_expr_node *hl__en(const hl_expr_pool *p, hl_expr e)
{
    return &p->nodes[e];
}

#endif /* LUMINAL_EXPR_INT_H */
