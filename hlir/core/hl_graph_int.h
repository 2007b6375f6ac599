/* hl_graph_int.h - the graph's internals that the builder needs (not public). */
#ifndef LUMINAL_HL_GRAPH_INT_H
#define LUMINAL_HL_GRAPH_INT_H

#include "hl_int.h"

/* The builder's sticky error record, which builder calls raise into. */
hl_error *hl__graph_err(hl_graph *g);
/* Removes nodes with id >= n (used to undo a failed builder call). */
void hl__graph_truncate(hl_graph *g, uint32_t n);

#endif /* LUMINAL_HL_GRAPH_INT_H */
