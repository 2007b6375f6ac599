/* hl_encode.h - an HLIR graph written into the e-graph engine (egraph.h) and read back
 * (hlir/encode/; the format is docs/encoding.md). Public. */
#ifndef LUMINAL_HL_ENCODE_H
#define LUMINAL_HL_ENCODE_H

#include "egraph.h"
#include "hl_expr.h"
#include "hl_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A graph written into an e-graph engine (egraph.h) in Luminal's shape, and read back.
 * Owned by hlir/encode/; the sorts are in hlir/encode/encode.egg, the format in
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

/* ==================================================================================
 * The vocabulary: every constructor of the encoding, as data
 * ==================================================================================
 *
 * The table hl_enc_info[] states, for every constructor and function of encode.egg, its
 * name, the sort it builds, its fields in order (each with a name, a sort and a meaning)
 * and what it stands for in HLIR (the hl_op of an OpKind or IR variant, the
 * hl_expr_kind of an Expression, the hl_dtype of a DType). The encoder writes terms and
 * the decoder reads them through this table only, and another module (the LLIR, reading
 * a serialized e-graph by constructor name) can do the same: find the constructor of a
 * node with hl_enc_find(op name), then read its children by field position.
 *
 * A test parses encode.egg and checks the table against it (names, sorts, arity, field
 * order), so the two cannot drift apart. */

/* The sorts: the engine's base sorts first, then the schema's datatypes. */
typedef enum hl_enc_sort {
    HL_SORT_I64 = 0,
    HL_SORT_F64,
    HL_SORT_STRING,
    HL_SORT_EXPRESSION, /* symbolic integers; strides are expressions in MIter */
    HL_SORT_ELIST,      /* lists of expressions: shapes and strides */
    HL_SORT_DTYPE,
    HL_SORT_DIMDECL, /* a declared dynamic dimension */
    HL_SORT_IR,      /* a tensor: an op's result, a graph input, an output, the root */
    HL_SORT_OPKIND,  /* what an Op computes, with the views it reads through */
    HL_SORT_ILIST,   /* an op's inputs */
    HL_SORT_COUNT
} hl_enc_sort;

/* Every constructor and function of the schema, in encode.egg's order (the DTypes in
 * hl_dtype order). */
typedef enum hl_enc_ctor {
    /* Expression */
    HL_ENC_MNUM = 0,
    HL_ENC_MFLOAT,
    HL_ENC_MITER,
    HL_ENC_MVAR,
    HL_ENC_MADD,
    HL_ENC_MSUB,
    HL_ENC_MMUL,
    HL_ENC_MCEILDIV,
    HL_ENC_MDIV,
    HL_ENC_MMOD,
    HL_ENC_MMIN,
    HL_ENC_MMAX,
    HL_ENC_MAND,
    HL_ENC_MOR,
    HL_ENC_MGTE,
    HL_ENC_MLT,
    HL_ENC_MFLOORTO,
    HL_ENC_MREPLACE,
    /* EList */
    HL_ENC_ECONS,
    HL_ENC_ENIL,
    HL_ENC_MREPLACELIST,
    HL_ENC_REPLACENTHFROMEND,
    HL_ENC_REMOVENTHFROMEND,
    HL_ENC_ROWMAJOR,
    /* DType, in hl_dtype order */
    HL_ENC_F32,
    HL_ENC_F16,
    HL_ENC_BF16,
    HL_ENC_INT,
    HL_ENC_INT64,
    HL_ENC_BOOL,
    HL_ENC_F8E4M3,
    HL_ENC_F8E5M2,
    /* DimDecl */
    HL_ENC_DIM,
    /* IR */
    HL_ENC_OUTPUTJOIN,
    HL_ENC_OP,
    HL_ENC_INPUT,
    HL_ENC_OUTPUT,
    /* OpKind */
    HL_ENC_CONSTANT,
    HL_ENC_IOTA,
    HL_ENC_CAST,
    HL_ENC_EXP2,
    HL_ENC_LOG2,
    HL_ENC_SIN,
    HL_ENC_RECIP,
    HL_ENC_SQRT,
    HL_ENC_ADD,
    HL_ENC_MUL,
    HL_ENC_MOD,
    HL_ENC_LESSTHAN,
    HL_ENC_GATHER,
    HL_ENC_SCATTER,
    HL_ENC_SUM,
    HL_ENC_MAX,
    /* IList */
    HL_ENC_ICONS,
    HL_ENC_INIL,
    /* functions */
    HL_ENC_FN_DTYPE,
    HL_ENC_FN_LOWER,
    HL_ENC_FN_UPPER,
    HL_ENC_COUNT
} hl_enc_ctor;

#define HL_ENC_NONE HL_ENC_COUNT /* "no constructor" */
#define HL_ENC_MAX_FIELDS 5      /* the most fields a constructor has (Output, Scatter, ...) */

/* What a constructor is for. */
typedef enum hl_enc_role {
    HL_ENC_ROLE_TERM = 0,   /* the encoder writes it and the decoder reads it */
    HL_ENC_ROLE_RULES_ONLY, /* Luminal's rewrite helpers (MReplace, RowMajor, ...): only
                               rules make them, and the decoder does not read them */
    HL_ENC_ROLE_FUNCTION,   /* a function (dtype, lower, upper): a table the encoder sets,
                               not a term; its fields are its arguments, sort its output */
} hl_enc_role;

typedef struct hl_enc_field {
    const char *name;    /* "a_strides" */
    hl_enc_sort sort;    /* HL_SORT_ELIST */
    const char *meaning; /* "the strides through which the op reads its first input" */
} hl_enc_field;

typedef struct hl_enc_info {
    const char *name; /* the constructor's name in the schema, as serialized ("Add") */
    hl_enc_sort sort; /* the sort it builds (a function: its output) */
    hl_enc_role role;
    uint32_t arity; /* number of fields */
    hl_enc_field fields[HL_ENC_MAX_FIELDS];
    hl_op op;          /* OpKind, Input, Output: the hl_op it encodes; HL_OP_COUNT else */
    hl_expr_kind expr; /* Expression: the hl_expr_kind (HL_E_NUM for MNum and MFloat,
                          HL_E_VAR, HL_E_Z, the binary kinds); HL_E_KIND_COUNT else */
    hl_dtype dtype;    /* DType: the hl_dtype; HL_DTYPE_COUNT else */
    const char *meaning;
} hl_enc_info;

/* The vocabulary, indexed by hl_enc_ctor. Static. */
extern const hl_enc_info hl_enc_vocab[HL_ENC_COUNT];

/* The constructor named name (as in a serialized e-graph), or HL_ENC_NONE. */
hl_enc_ctor hl_enc_find(const char *name);
/* The constructor of op: its OpKind for compute ops, HL_ENC_INPUT and HL_ENC_OUTPUT for
 * the ends; HL_ENC_NONE for a value outside hl_op. The inverse is hl_enc_vocab[c].op. */
hl_enc_ctor hl_enc_of_op(hl_op op);
/* The Expression constructor of kind k (MNum, MVar, MIter and the binary kinds;
 * HL_E_SUB gives MSub, which the canonical form never holds); HL_ENC_NONE otherwise. */
hl_enc_ctor hl_enc_of_expr(hl_expr_kind k);
/* The DType constructor of t, or HL_ENC_NONE. */
hl_enc_ctor hl_enc_of_dtype(hl_dtype t);
/* The sort's name in the schema ("Expression", "i64"); "?" outside the enum. */
const char *hl_enc_sort_name(hl_enc_sort s);

/* ==================================================================================
 * Encoding and decoding
 * ================================================================================== */

/* The schema (the text of hlir/encode/encode.egg, embedded at build time): datatypes
 * Expression, EList, DType, DimDecl, IR, OpKind, IList and the functions dtype, lower,
 * upper. Static; never NULL. */
const char *hl_encode_schema(void);

/* The dtype_prop ruleset (the text of hlir/encode/encode_dtype.egg, embedded at build
 * time): rules that set (dtype e)
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
