/* hl_build_int.h - the builder's internals shared by hl_build.c and hl_build_nn.c (not
 * public). */
#ifndef LUMINAL_HL_BUILD_INT_H
#define LUMINAL_HL_BUILD_INT_H

#include "core/hl_expr_int.h"
#include "core/hl_graph_int.h"
#include "hl_build.h"

/* Builder internals shared by hl_build.c and hl_build_nn.c. Every public builder function
 * opens with hl__begin (false: an error is already set, return hl__bad()) and returns
 * through hl__finish, which undoes the nodes it added if it failed. */
hl_t hl__bad(void);
bool hl__begin(hl_graph *g, uint32_t *mark);
hl_t hl__finish(hl_graph *g, uint32_t mark, hl_t r);
/* Checks that x is a live handle of g; sets the graph's error naming fn if not. */
bool hl__check(hl_graph *g, hl_t x, const char *fn);
/* The handle reading node id's output contiguously. */
hl_t hl__out(hl_graph *g, uint32_t id);
/* Broadcasts a and b to one shape (numpy rules); false with the error set. */
bool hl__broadcast2(hl_graph *g, hl_t *a, hl_t *b, const char *fn);

#endif /* LUMINAL_HL_BUILD_INT_H */
