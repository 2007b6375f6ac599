/* hlir.h - the high-level tensor graph: the hlir module's umbrella header.
 *
 * The compiler's input is a graph of Luminal's primitive tensor ops. The module's parts
 * each have a folder and a public header; this header includes them all, so a user of
 * the module includes hlir.h (or just the part it needs):
 *
 *   core/hl_core.h     status codes, dtypes and their conversions (round to nearest even,
 *                      as the GPU)
 *   core/hl_expr.h     symbolic integers (numbers, named dynamic dims, the index variable
 *                      z), hash-consed in a pool and simplified on construction, so two
 *                      equal strides are the same id
 *   core/hl_view.h     views (shape trackers): dims plus one stride expression in z per dim
 *   core/hl_graph.h    nodes of primitive ops; each node reads each input through a view;
 *                      the checked primitive door, the checker, the dump
 *   builder/hl_build.h the builder: high-level ops (matmul, softmax, attention, ...)
 *                      lowered to primitives
 *   json/hl_json.h     the JSON graph format: reader and canonical writer
 *   gen/hl_gen.h       the seeded generator of random valid graphs
 *   ref/hl_ref.h       the CPU reference interpreter, the oracle for every backend
 *   encode/hl_encode.h the e-graph encoding, its vocabulary, and decoding
 *
 * Semantics and dtype rules of every primitive are in docs/hlir.md; why the module is cut
 * this way is there too ("Files").
 *
 * Errors: every fallible call reports through an lm_err record (code, node id, message
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

#include "hl_core.h"
#include "hl_expr.h"
#include "hl_view.h"
#include "hl_graph.h"
#include "hl_build.h"
#include "hl_json.h"
#include "hl_gen.h"
#include "hl_ref.h"
#include "hl_encode.h"

#endif /* LUMINAL_HLIR_H */
