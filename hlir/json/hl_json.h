/* hl_json.h - the JSON graph format, version 1 (docs/graph-json.md): the reader and the
 * canonical writer (hlir/json/). Public. */
#ifndef LUMINAL_HL_JSON_H
#define LUMINAL_HL_JSON_H

#include "hl_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The format's limits (docs/graph-json.md lists them too). They keep every accepted graph
 * far from int64 overflow and bound the reader's work on hostile input. */
#define HL_JSON_MAX_SIZE ((int64_t)2147483647) /* a literal size or a dim's max */
#define HL_JSON_MAX_NUMEL ((int64_t)1 << 50)   /* elements of one tensor, dims at max */
#define HL_JSON_MAX_NAME 63                    /* characters of a tensor name */
#define HL_JSON_MAX_EXPR_TEXT 512              /* characters of an expression string */
#define HL_JSON_MAX_EXPR_DEPTH 64              /* parenthesis nesting in an expression */
#define HL_JSON_MAX_NODES 1000000u             /* entries of "nodes" */
#define HL_JSON_MAX_DEPTH 32                   /* nesting of JSON objects and arrays */
#define HL_JSON_MAX_BYTES ((size_t)1 << 30)    /* a graph file (hl_graph_load_json) */

/* Reads a graph from the JSON text text[0..len) (need not be NUL-terminated). source
 * names the text in messages (a file name; NULL gives "<json>"). Validates everything and
 * builds the graph through the builder: high-level ops are lowered to primitives, view
 * ops change views, primitives with explicit views are added as written. Returns a new
 * graph (free with hl_graph_free), or NULL with err set: HL_ERR_PARSE for malformed JSON
 * and for every schema violation (unknown op or field, wrong arity or type, dangling
 * reference, cycle), HL_ERR_DIM for an unknown dim, HL_ERR_LIMIT for a document past the
 * format's limits (checked while the text is first scanned, before it is parsed), the
 * builder's code (HL_ERR_SHAPE, HL_ERR_DTYPE, ...) for a rejected op, HL_ERR_ARG for an
 * input's "init" whose range breaks its dtype's rules (hl_graph_set_input_init); the
 * graph keeps every input's "init" (hl_graph_input_init). Every error is located: err's
 * file, line and column (of the entry: the dim, input, node or output object; of the
 * character for malformed JSON), node (the node's name) and field are filled, and the
 * message begins "source:line:col: node 'name': field 'f': ". The graph
 * names source as its source and every node built for a document node has that node as
 * its origin (hl_graph_node_origin), so later errors (the reference runtime's) name it
 * too. Never crashes on any input; HL_ERR_NOMEM when memory runs out. */
hl_graph *hl_graph_read_json(const char *text, size_t len, const char *source, lm_err *err);
/* As hl_graph_read_json on the contents of the file at path, read with lm_read_file: "-"
 * reads standard input (the source is then "<stdin>"); a directory, a missing or
 * unreadable file, or one larger than HL_JSON_MAX_BYTES is HL_ERR_IO naming the path. */
hl_graph *hl_graph_load_json(const char *path, lm_err *err);

/* Writes g in the canonical form (primitives only, every input view explicit, nodes
 * numbered inputs first; see docs/graph-json.md) as a NUL-terminated string that the
 * caller frees with free(). Deterministic: the same graph gives the same bytes, and
 * reading them back gives a graph that writes the same bytes. NULL with err set
 * (HL_ERR_NOMEM, or HL_ERR_ARG when g holds a builder error, has no output, or has an
 * input or output name the format cannot hold). */
char *hl_graph_write_json(const hl_graph *g, lm_err *err);
/* As hl_graph_write_json, to the stream f (HL_ERR_IO when writing fails). */
hl_status hl_graph_fwrite_json(const hl_graph *g, FILE *f, lm_err *err);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_JSON_H */
