/* eg_serial.h - algorithms over the serialized e-graph (eg_serialized, egraph.h): the one
 * least-tree-size extractor that the readers of a serialization (hlir's decoder, llir's
 * search space) share. Public; includes egraph.h. */
#ifndef LUMINAL_EG_SERIAL_H
#define LUMINAL_EG_SERIAL_H

#include "egraph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether serialized node n may be picked (the caller's vocabulary: a constructor it
 * reads, not subsumed, ...). ctx is the caller's. */
typedef bool (*eg_serial_usable)(void *ctx, uint32_t n);

/* The number of uint64_t words of work memory eg_serial_extract needs for s (the caller
 * allocates it through its own module's door, so this file allocates nothing). */
size_t eg_serial_extract_work(const eg_serialized *s);

/* Least tree size extraction over s: for every class c, cost[c] is the least tree size
 * of a term of c built from usable nodes only (a node's size is 1 plus its children's;
 * a usable node without children, such as a literal, is 1), and pick[c] the usable node
 * of c that achieves it, the lowest index among equals; a class no such finite term
 * reaches has cost UINT64_MAX and pick UINT32_MAX (and so has one whose least size would
 * reach UINT64_MAX). Picks never form a cycle: a picked node's children cost less than
 * it. The result is what iterating "cost(c) = min over usable nodes of 1 + sum of the
 * children's costs, ties to the lowest index" to a fixpoint gives, computed by Knuth's
 * generalisation of Dijkstra's algorithm: every class is settled once, cheapest first, in
 * O((nodes + children) log nodes). work holds eg_serial_extract_work(s) words. */
void eg_serial_extract(const eg_serialized *s, eg_serial_usable usable, void *ctx, uint64_t *cost,
                       uint32_t *pick, uint64_t *work);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_EG_SERIAL_H */
