/* hl_graph.h - the graph: primitive ops, nodes, dynamic dims, the checked primitive door,
 * the invariant checker and the dump (hlir/core/hl_graph.c). Public. */
#ifndef LUMINAL_HL_GRAPH_H
#define LUMINAL_HL_GRAPH_H

#include "hl_view.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * The graph
 * ================================================================================== */

/* The primitive ops (Luminal's HLIR). Arity, dtype rule and shape rule per op:
 *
 *   op          inputs                 output dtype       output shape
 *   Input       -                      declared           declared dims
 *   Output      x                      dtype(x)           view(x) dims
 *   Constant    -                      F32                scalar (ndim 0)
 *   Iota        -                      Int                [len]; element i = expr[z:=i]
 *   Cast        x                      cast_to            view(x) dims
 *   Exp2 Log2 Sin Recip Sqrt  x (float)  dtype(x)         view(x) dims
 *   Add Mul Mod a, b (same dtype,      dtype(a)           view(a) dims
 *               same view dims; not Bool)
 *   LessThan    a, b (same dtype)      Bool               view(a) dims
 *   Gather      indexes (Int), data    dtype(data)        view(indexes) dims
 *               out[i] = data[ logical element indexes[i] of view(data) ]
 *   Scatter     dest, indexes (Int), src (dtype(dest), view(src) dims = view(indexes))
 *                                      dtype(dest)        view(dest) dims
 *               out = dest; then for i in order: out[ indexes[i] ] = src[i]
 *   SumReduce   x (not Bool)           dtype(x)           view(x) dims without axis
 *   MaxReduce   x (not Bool)           dtype(x)           view(x) dims without axis
 *
 * Every output is stored contiguously. docs/hlir.md gives the arithmetic exactly.
 */
typedef enum hl_op {
    HL_OP_INPUT = 0,
    HL_OP_OUTPUT,
    HL_OP_CONSTANT,
    HL_OP_IOTA,
    HL_OP_CAST,
    HL_OP_EXP2,
    HL_OP_LOG2,
    HL_OP_SIN,
    HL_OP_RECIP,
    HL_OP_SQRT,
    HL_OP_ADD,
    HL_OP_MUL,
    HL_OP_MOD,
    HL_OP_LESS_THAN,
    HL_OP_GATHER,
    HL_OP_SCATTER,
    HL_OP_SUM_REDUCE,
    HL_OP_MAX_REDUCE,
    HL_OP_COUNT
} hl_op;

/* Luminal's names: "Input", "Output", "Constant", "Iota", "Cast", "Exp2", "Log2", "Sin",
 * "Recip", "Sqrt", "Add", "Mul", "Mod", "LessThan", "Gather", "Scatter", "SumReduce",
 * "MaxReduce". hl_op_name never returns NULL; hl_op_parse returns 0 and sets *out, or -1.
 * hl_op_arity is the number of inputs the op takes. hl_op_is_elementwise: the op computes
 * each output element from the same element of each of its inputs (Cast, Exp2, Log2, Sin,
 * Recip, Sqrt, Add, Mul, Mod, LessThan); every input is read through a view of the
 * output's shape. */
const char *hl_op_name(hl_op op);
int hl_op_parse(const char *name, hl_op *out);
uint32_t hl_op_arity(hl_op op);
bool hl_op_is_elementwise(hl_op op);

#define HL_MAX_INPUTS 3

/* One input edge: the producing node and the view this node reads it through. */
typedef struct hl_in {
    uint32_t node;
    hl_view view;
} hl_in;

/* A node. The graph owns it and its name; read it with hl_graph_node. Which fields are
 * meaningful depends on op:
 *   name      Input, Output: the tensor's name (unique among inputs / among outputs)
 *   index     Input: position among the graph's inputs; Output: among its outputs
 *   constant  Constant: the value
 *   iota_expr, iota_len   Iota: element i is iota_expr[z := i], for i < iota_len
 *   cast_to   Cast: the target dtype (also in dtype)
 *   axis      SumReduce, MaxReduce: the reduced dim of the input's view
 * and for every op:
 *   origin    the user's node it was made for (hl_graph_node_origin), HL_NONE for none;
 *             hl_graph_add sets it from the builder's current origin (spec's is ignored)
 */
typedef struct hl_node {
    hl_op op;
    hl_dtype dtype; /* output dtype */
    uint32_t ndim;  /* output rank */
    hl_expr shape[HL_MAX_DIMS];
    uint32_t n_in;
    hl_in in[HL_MAX_INPUTS];
    char *name;
    uint32_t index;
    float constant;
    hl_expr iota_expr, iota_len;
    hl_dtype cast_to;
    uint32_t axis;
    uint32_t origin;
} hl_node;

/* A declared dynamic dimension: its variable in the graph's pool, its inclusive range,
 * and the value to profile with. */
typedef struct hl_dim {
    uint32_t var;
    hl_expr expr;
    int64_t lo, hi, profile;
} hl_dim;

typedef struct hl_graph hl_graph;

/* Creates an empty graph (its own expression pool); NULL when out of memory. */
hl_graph *hl_graph_new(void);
/* Frees the graph, its nodes, names and pool. Accepts NULL. */
void hl_graph_free(hl_graph *g);

/* The graph's expression pool: every hl_expr in the graph's nodes, views and dims is
 * an id in it. Owned by the graph. */
hl_expr_pool *hl_graph_exprs(hl_graph *g);
const hl_expr_pool *hl_graph_exprs_c(const hl_graph *g);

/* The builder's sticky error: code HL_OK while every call has succeeded. After a failed
 * call the graph is as it was before that call (nodes it added are removed), and every
 * later builder call does nothing until hl_graph_clear_error. The error is located at the
 * builder's current origin (below) when there is one: the graph's source file, the
 * user's node name, line and column. */
const lm_err *hl_graph_error(const hl_graph *g);
void hl_graph_clear_error(hl_graph *g);

/* ---- origins: which user node each node was made for ----
 *
 * A reader of a user's graph (the JSON reader) names, before it builds each of the
 * user's nodes, the node it is building: every node added until the next origin comes
 * from it. A high-level op becomes several primitives with one origin, so an error about
 * any of them (the builder's, the reference runtime's) can name the user's node, its op
 * and where it is written ("g.json:7:5: node 'p': pad (lowered to Gather): ...") instead
 * of an internal node number. */
typedef struct hl_origin {
    const char *name;   /* the user's name of the node; owned by the graph */
    const char *op;     /* the user's op ("pad", "matmul", "input"); owned by the graph */
    uint32_t line, col; /* where it is written in the source, 1-based; 0 when unknown */
} hl_origin;

/* Names the text the graph was read from (a file name, "<json>"), for messages; copied.
 * HL_OK, or HL_ERR_NOMEM with the graph's error set. NULL forgets it. */
hl_status hl_graph_set_source(hl_graph *g, const char *source);
/* The source, or NULL when none was named. */
const char *hl_graph_source(const hl_graph *g);
/* Makes every node added from now on come from the user's node name (op, line, col),
 * copied, until the next hl_graph_begin_origin or hl_graph_end_origin. Returns the
 * origin's id, or HL_NONE with the graph's error set (out of memory, or a NULL name). */
uint32_t hl_graph_begin_origin(hl_graph *g, const char *name, const char *op, uint32_t line,
                               uint32_t col);
/* Nodes added from now on have no origin. Cannot fail. */
void hl_graph_end_origin(hl_graph *g);
/* The origin of node id (id < node count, asserted), or NULL when it has none. Valid
 * while the graph lives. */
const hl_origin *hl_graph_node_origin(const hl_graph *g, uint32_t id);

/* Declares a dynamic dim name with range [lo, hi] (1 <= lo <= hi) and profiling value
 * (lo <= profile <= hi); returns its expression (a variable), or HL_NONE with the
 * graph's error set (bad name, duplicate, bad range). */
hl_expr hl_graph_dim(hl_graph *g, const char *name, int64_t lo, int64_t hi, int64_t profile);
uint32_t hl_graph_dim_count(const hl_graph *g);
/* i < hl_graph_dim_count (asserted); in declaration order. */
const hl_dim *hl_graph_dim_at(const hl_graph *g, uint32_t i);
/* The dim declared with this name, or NULL. */
const hl_dim *hl_graph_dim_find(const hl_graph *g, const char *name);

/* Nodes in creation order, which is a topological order (inputs precede users). */
uint32_t hl_graph_node_count(const hl_graph *g);
/* id < node count (asserted). The pointer is valid until the next call that adds nodes. */
const hl_node *hl_graph_node(const hl_graph *g, uint32_t id);
/* Input and Output nodes in declaration order. */
uint32_t hl_graph_input_count(const hl_graph *g);
uint32_t hl_graph_input(const hl_graph *g, uint32_t i);
uint32_t hl_graph_output_count(const hl_graph *g);
uint32_t hl_graph_output(const hl_graph *g, uint32_t i);

/* ---- inputs' initialisation: how seeded test data fills each input ----
 *
 * Not part of what the graph computes: it says what realistic values of an input look
 * like (a weight matrix scaled by its fan-in, a norm's weight around 1, token ids inside
 * the vocabulary), so that every tool that makes up inputs for the graph (the reference
 * run, ref_dump, the tests) makes up the same well-conditioned ones through
 * hl_graph_fill_input (hl_ref.h). The JSON format keeps it as an input's "init"
 * (docs/graph-json.md); the e-graph encoding does not carry it. */
typedef enum hl_init_kind {
    HL_INIT_DEFAULT = 0, /* hl_tensor_fill_random's ranges: floats [-1, 1), ints [0, 4),
                            bool 0 or 1 */
    HL_INIT_UNIFORM,     /* uniform in [lo, hi) */
    HL_INIT_KIND_COUNT
} hl_init_kind;

/* Integer bounds (int, i64, bool inputs) are integers of magnitude at most this, so a
 * double holds them exactly. */
#define HL_INIT_MAX_INT ((int64_t)1 << 53)

/* An input's initialisation. HL_INIT_UNIFORM, by the input's dtype:
 *   floats       lo < hi, both finite and within the dtype's finite range; kept rounded
 *                to f32 (as constants are), lo < hi after that rounding
 *   int, i64     integers, lo < hi, the values [lo, hi) representable in the dtype and
 *                |lo|, |hi| <= HL_INIT_MAX_INT
 *   bool         integers with 0 <= lo < hi <= 2 ([0, 2): 0 or 1; [1, 2): all true)
 * lo and hi are ignored for HL_INIT_DEFAULT. */
typedef struct hl_init {
    hl_init_kind kind;
    double lo, hi;
} hl_init;

/* Sets the initialisation of input i (i < hl_graph_input_count; its position among the
 * inputs, as hl_graph_input). A builder call: does nothing once the graph holds an error;
 * HL_OK, or HL_ERR_ARG with the graph's error set (located at the builder's current
 * origin; the message names the input and says which rule the range breaks). Float bounds
 * are stored rounded to f32. hl_input leaves every input at HL_INIT_DEFAULT. */
hl_status hl_graph_set_input_init(hl_graph *g, uint32_t i, const hl_init *init);
/* The initialisation of input i (i < hl_graph_input_count, asserted). */
hl_init hl_graph_input_init(const hl_graph *g, uint32_t i);

/* The primitive door: adds one node after checking it completely (arity, input ids
 * exist, view ranks and dims agree as the op needs, dtype rule, axis in range, that
 * every expression is in the pool and every variable a declared dim). spec's op, inputs
 * (node, view), and the op's own fields are read; dtype is read for Input, shape/ndim
 * for Input, name for Input and Output; other fields are computed. Returns the new id,
 * or HL_NONE with the graph's error set (the message names the op, the input index and
 * the reason). The name is copied. */
uint32_t hl_graph_add(hl_graph *g, const hl_node *spec);

/* Checks every invariant of the graph from scratch (its expression pool as
 * hl_expr_pool_check does, ids, topological order, shape and dtype rules, unique names).
 * HL_OK or the first violation in err. For tests and debugging; builders keep these
 * invariants by construction. */
hl_status hl_graph_check(const hl_graph *g, lm_err *err);

/* Writes a readable listing: dims, then one line per node, e.g.
 *   %3 = Add f32 [4, 3]  (%1 [4, 3]:[3*z, 0]) (%2 [4, 3]:[3*z, z])
 * Deterministic. */
void hl_graph_dump(const hl_graph *g, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_GRAPH_H */
