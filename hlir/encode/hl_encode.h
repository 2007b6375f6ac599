/* hl_encode.h - an HLIR graph written into the e-graph engine (egraph.h) and read back
 * (hlir/encode/; the format is docs/encoding.md). Public. */
#ifndef LUMINAL_HL_ENCODE_H
#define LUMINAL_HL_ENCODE_H

#include "egraph.h"
#include "hl_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A graph written into an e-graph engine (egraph.h) in Luminal's shape, and read back.
 * Owned by hlir/encode*.c; the sorts are in hlir/encode.egg, the format in
 * docs/encoding.md. In short: every node becomes an IR term, (Op <kind> <IList of
 * inputs>) for compute ops with the views it reads through as EList fields, (Input
 * index name dtype shape) and (Output producer index name shape strides) for the ends;
 * (OutputJoin o0 (OutputJoin o1 ...)) is the root; (Dim index name lo hi profile)
 * declares each dynamic dim. Nodes are written in Kahn order, lowest id first, and the
 * C path adds terms in exactly the order the engine evaluates the program text, so both
 * paths give the same e-graph, byte for byte once serialized.
 *
 * The encoding functions take the graph as const but may add expressions (contiguous
 * strides) to its hash-consed pool; nodes, views and existing ids never change. */

/* The schema (the text of hlir/encode.egg): datatypes Expression, EList, DType, DimDecl,
 * IR, OpKind, IList and the functions dtype, lower, upper. Static; never NULL. */
const char *hl_encode_schema(void);

/* The dtype_prop ruleset (the text of hlir/encode_dtype.egg): rules that set (dtype e)
 * of every IR term by HLIR's dtype rule per op, for terms that rewrites add (the encoder
 * sets the dtype of the terms it writes itself). Run (saturate dtype_prop). Static. */
const char *hl_encode_dtype_rules(void);

/* Makes sure e knows the schema: runs it (and the dtype_prop ruleset) when e has none of
 * its tables, does nothing when every constructor is already declared with its arity,
 * and fails with HL_ERR_ARG naming the table when e declares some names differently. */
hl_status hl_encode_declare(eg_engine *e, lm_err *err);

/* What hl_graph_encode added: the root IR e-class and each node's IR e-class (node_class
 * is indexed by node id and owned by the record; free it with hl_encoding_fini). */
typedef struct hl_encoding {
    eg_value root;
    uint32_t n_nodes;
    eg_value *node_class;
} hl_encoding;

/* Adds g to e through the engine's C API (declaring the schema first when needed):
 * the dims, then every node in Kahn order with its dtype set, then the root. HL_OK with
 * *out filled, or an error in err (HL_ERR_ARG for a graph holding a builder error, a
 * graph without outputs, or an engine that rejects a term; HL_ERR_NOMEM) with *out
 * zeroed; terms added before a failure stay in e. */
hl_status hl_graph_encode(const hl_graph *g, eg_engine *e, hl_encoding *out, lm_err *err);
/* Frees what the record owns and zeroes it. Accepts NULL. */
void hl_encoding_fini(hl_encoding *enc);

/* The same encoding as program text, one command per line: (let dI (Dim ...)) and the
 * dims' lower/upper facts, then (let tK <term>) and (set (dtype tK) <dtype>) for node K
 * in Kahn order, then (let root ...). Preceded by the schema and the dtype_prop ruleset
 * when with_schema is true. Running it in an engine gives what hl_graph_encode gives.
 * Returns a NUL-terminated string the caller frees with free(), or NULL with err set
 * (as hl_graph_encode). */
char *hl_graph_encode_text(const hl_graph *g, bool with_schema, lm_err *err);
/* Writes the schema, the dtype_prop ruleset and the program text to f (what
 * `luminal_search --emit egraph` prints). HL_ERR_IO when writing fails. */
hl_status hl_graph_fprint_egraph(const hl_graph *g, FILE *f, lm_err *err);

/* Reads a graph back out of a serialized e-graph (eg_serialize of an engine holding an
 * encoding; e supplies the strings). choice, when not NULL, names for every class the
 * index of its chosen node in s->nodes (UINT32_MAX: let the decoder choose); the decoder
 * chooses, per class, the node of least tree size among those it can read (lowest index
 * on ties), which never forms a cycle. The result has every Dim in index order, every
 * Input node in index order (chosen or not: inputs are the graph's interface), then the
 * compute nodes the outputs reach in Kahn order with the lowest class first (for an
 * encoding read straight back, the graph's own order), then every Output in index
 * order. Reductions read the reduced dim last (the encoding keeps the dim, not its
 * position). Returns the graph (free with hl_graph_free) or NULL with err naming the
 * class, the node and the reason (HL_ERR_PARSE for a malformed or unreadable e-graph,
 * the builder's code for a node the graph rejects, HL_ERR_NOMEM). */
hl_graph *hl_graph_decode(const eg_engine *e, const eg_serialized *s, const uint32_t *choice,
                          lm_err *err);
/* Rebuilds and serializes e, then decodes it with the decoder's own choices. */
hl_graph *hl_graph_decode_engine(eg_engine *e, lm_err *err);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_ENCODE_H */
