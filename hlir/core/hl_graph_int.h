/* hl_graph_int.h - the graph's internals that the builder needs (not public). */
#ifndef LUMINAL_HL_GRAPH_INT_H
#define LUMINAL_HL_GRAPH_INT_H

#include "hl_int.h"

/* The builder's sticky error record. Builder calls raise into it through hl__graph_fail,
 * which locates the error at the current origin. */
lm_err *hl__graph_err(hl_graph *g);
hl_status hl__graph_fail(hl_graph *g, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Whether the user's op is the primitive itself ("add" for Add, "sum_reduce" for
 * SumReduce): letters compared without case, underscores skipped. */
bool hl__same_op(const char *user, hl_op op);
/* The builder's error message without its location prefix ("" while there is none), for
 * readers that raise it again with their own location (the JSON reader). */
const char *hl__graph_error_reason(const hl_graph *g);
/* A cleared record for the pool-level calls (views, expressions) a builder call makes; a
 * failure recorded there is raised into the graph's error by the builder, located. Valid
 * until the next hl__graph_scratch. */
lm_err *hl__graph_scratch(hl_graph *g);
/* Raises what the scratch record holds into the graph's error as "what: <its message>"
 * (or "what: failed" when it holds nothing), with code, located as hl__graph_fail. */
hl_status hl__graph_raise_scratch(hl_graph *g, int code, const char *what);
/* Removes nodes with id >= n (used to undo a failed builder call). */
void hl__graph_truncate(hl_graph *g, uint32_t n);

#endif /* LUMINAL_HL_GRAPH_INT_H */
