/* ll_build.h - the internal interface that builds an ll_graph: the only way the HLIR
 * lowering, the tests and (after the merge) the genome builder create graphs. Not public.
 *
 * A graph is built in four steps: allocate it, declare its dynamic dims (before any node
 * uses them), push its nodes in order, finish it. Everything is read back through the
 * public accessors of llir.h (ll_graph_node, ...), which are valid once the graph is
 * finished. The builder checks only what keeps the structure sound (ids in range, IO
 * indexes dense); whether the nodes make sense is the verifier's and the executor's
 * business, so a test can build a deliberately wrong graph.
 *
 * Expressions of the nodes must be ids of the graph's own pool (ll__graph_pool); a dim
 * is a variable of that pool. */
#ifndef LUMINAL_LL_BUILD_H
#define LUMINAL_LL_BUILD_H

#include "llir.h"

/* An empty graph with an empty expression pool; NULL with LM_ENOMEM in err. Free with
 * ll_graph_free. */
ll_graph *ll__graph_alloc(lm_err *err);

/* The graph's pool, for building the expressions of the nodes about to be pushed. */
hl_expr_pool *ll__graph_pool(ll_graph *g);

/* Declares dynamic dim `name` (a valid variable name, unique in the graph) with range
 * [lo, hi] (1 <= lo <= hi) and profiling value (lo <= profile <= hi). Returns its index
 * (ll_graph_dim_at), or LM_NONE with err set (LM_EARG for a bad name, duplicate or range,
 * LM_ENOMEM). Dims come before the first node. */
uint32_t ll__graph_add_dim(ll_graph *g, const char *name, int64_t lo, int64_t hi, int64_t profile,
                           lm_err *err);

/* The empty node: no inputs, no region, no primitive (prim.op HL_OP_COUNT), no matmul
 * (its expressions "none", alpha 1), no attention, no provenance: what the readers of
 * the LLIR file and of binary LLIR start every node from. */
void ll__node_empty(ll_node *n);

/* Appends a copy of *n and returns its id (the node count before the call), or LM_NONE
 * with err set: LM_EARG for a kind or dtype out of range, more than LL_MAX_IN inputs or
 * HL_MAX_DIMS dims, pushing after ll__graph_finish; LM_ENOMEM. Input and region ids may
 * refer forward (a region node's in[0] is its root, pushed after it): ll__graph_finish
 * checks them. prim.name (LL_INPUT and LL_OUTPUT) is copied; the copy is what
 * ll_graph_node shows. */
uint32_t ll__graph_push(ll_graph *g, const ll_node *n, lm_err *err);

/* The index of origin text `name` ("rule 'fuse-add'") in the graph's origin table, for
 * ll_node.origin (ll_graph_origin gives the text back); LM_NONE with LM_ENOMEM in err. */
uint32_t ll__graph_add_origin(ll_graph *g, const char *name, lm_err *err);

/* Ends the building: every id a node refers to exists, the LL_INPUT nodes' prim.index
 * values are 0..k-1 once each, and so are the LL_OUTPUT nodes'; they become
 * ll_graph_input(i) and ll_graph_output(i). LM_EARG naming the node otherwise. */
int ll__graph_finish(ll_graph *g, lm_err *err);

#endif /* LUMINAL_LL_BUILD_H */
