/* llir.h - the low-level graph of chosen implementations: the one public header of llir/.
 *
 * After saturation the e-graph holds, for every tensor of the user's graph, every way the
 * rules know of computing it: standalone kernels, fused regions, the generic matmul
 * kernel, cuBLASLt calls. This module turns that into programs:
 *
 *   registry   one entry per backend constructor of rules.dsl: its fields, inputs,
 *              dialect, the dtype contract of every input and output. Loading the rules
 *              is refused, naming the constructor, when rules and registry disagree.
 *   space      the search space read from a saturated engine (no text round trip): the
 *              searchable classes (sorts IR, IList, OpKind) and their nodes in dense,
 *              deterministic order, the canonical node of every other class
 *   genome     one choice per searchable class: validation, repair, an O(1) hash
 *   graph      the LLIR graph a genome picks: top-level nodes (inputs, kernels, fused
 *              regions, library calls, outputs) and the interior nodes of regions, every
 *              one checked by the verifier; a 128-bit fingerprint
 *   executor   a CPU executor of LLIR with each op's own semantics (bf16/f16 storage, f32
 *              accumulation where the GPU accumulates in f32, a library matmul as the
 *              library computes it, a fused region as its composition in f32)
 *
 * The design, the vocabulary and the precision rules are in docs/llir.md; the rules that
 * create the backend nodes are rules.dsl (docs/rules.md).
 *
 * Semantics of a node. Every kernel and fused op computes exactly one HLIR primitive
 * (hlir.h, docs/hlir.md) and carries it as an hl_node: its op, output dtype and shape, and
 * the view through which it reads each input. So the LLIR says *how* (which kernel, which
 * region, which library call) and the embedded primitive says *what*, in the reference
 * runtime's own terms. Matmuls (the generic kernel and cuBLASLt) carry an ll_matmul.
 *
 * Errors go through base's lm_err (docs/architecture.md): codes LM_*, sticky, located.
 * Ids are dense uint32_t; nothing depends on addresses or hash order, so the same engine
 * and genome give the same LLIR byte for byte.
 */
#ifndef LUMINAL_LLIR_H
#define LUMINAL_LLIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base.h"
#include "egraph.h"
#include "hlir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * The op registry
 * ================================================================================== */

/* What a constructor is, for the search and the code generator. */
typedef enum ll_dialect {
    LL_D_IO = 0,   /* Input, Output, OutputJoin: the graph's interface */
    LL_D_HLIR,     /* an HLIR primitive (Add, Sum, ...): never part of a program; the
                      cleanup rules subsume them where a backend alternative exists */
    LL_D_KERNEL,   /* a standalone kernel: one launch computing one primitive (K*), or
                      the generic matmul kernel (KMatmul) */
    LL_D_REGION,   /* FStore: the root of a fused region: one launch that evaluates the
                      region's interior and stores the result */
    LL_D_FUSED,    /* F*: a primitive evaluated inside a region, in registers */
    LL_D_LOAD,     /* FLoad: inside a region, a read of a tensor another node stored */
    LL_D_INLINE,   /* FInl: inside a region, "compute this value here" (elided in LLIR) */
    LL_D_LIBRARY,  /* Blas: a cuBLASLt matmul with its epilogue */
    LL_D_COUNT
} ll_dialect;

/* The sort of one field of a constructor. */
typedef enum ll_field_sort {
    LL_F_ELIST = 0, /* a list of Expressions (shape or strides) */
    LL_F_EXPR,      /* one Expression */
    LL_F_DTYPE,     /* a DType */
    LL_F_F64,
    LL_F_I64,
    LL_F_STRING
} ll_field_sort;

/* How the dtype of one operand (or the output) is determined. */
typedef enum ll_dt_rule {
    LL_DT_NONE = 0,  /* no such operand */
    LL_DT_FIELD,     /* the DType field `arg` of the kind */
    LL_DT_FIXED,     /* the dtype `arg` (an hl_dtype) */
    LL_DT_AS_INPUT,  /* the same as input `arg` (IO and plumbing nodes) */
} ll_dt_rule;

typedef struct ll_dt_contract {
    ll_dt_rule rule;
    uint8_t arg;
} ll_dt_contract;

#define LL_MAX_FIELDS 24
#define LL_MAX_IN 4

typedef struct ll_field {
    const char *name; /* "shape", "a_strides", "alpha", ... (docs/llir.md) */
    ll_field_sort sort;
} ll_field;

/* One registered constructor. For Op kinds, `name` is the OpKind constructor; for IO
 * nodes, the IR constructor. inputs is the length of the node's IList (or, for Blas,
 * the largest; the kind's fields say which are present: ll_op_input_count). */
typedef struct ll_op_info {
    const char *name;
    ll_dialect dialect;
    hl_op prim; /* the primitive computed (KAdd, FAdd -> HL_OP_ADD); HL_OP_COUNT for
                   matmuls, plumbing and IO */
    uint8_t n_fields;
    ll_field fields[LL_MAX_FIELDS];
    uint8_t n_inputs;
    ll_dt_contract out;
    ll_dt_contract in[LL_MAX_IN];
} ll_op_info;

typedef uint16_t ll_op; /* an index into the registry */
#define LL_OP_NONE UINT16_MAX

/* The registry: a static table, the same in every process. */
uint32_t ll_op_count(void);
const ll_op_info *ll_op_get(ll_op op); /* op < ll_op_count() (asserted) */
/* The op registered under a constructor name, or LL_OP_NONE. */
ll_op ll_op_find(const char *name);

/* Checks an engine holding the rules against the registry, both ways: every registered
 * constructor is declared with its fields' sorts in order and its sort (IR or OpKind),
 * and every constructor of sort OpKind or IR the rules declare is registered. Fails with
 * LM_EVERIFY naming the constructor and what differs. */
int ll_registry_check(const eg_engine *e, lm_err *err);

/* ==================================================================================
 * Matmuls
 * ================================================================================== */

typedef enum ll_order { LL_ROW_MAJOR = 0, LL_COL_MAJOR = 1 } ll_order;

typedef enum ll_epilogue {
    LL_EPI_NONE = 0,
    LL_EPI_BIAS = 1, /* + bias[n], broadcast over rows */
    LL_EPI_GELU = 2, /* gelu (tanh form) of the result */
    LL_EPI_BIAS_GELU = 3
} ll_epilogue;

/* D[b, m, n] = epi(alpha * sum_k A[b, m, k] B[b, k, n] + beta * C[b, m, n] (+ bias[n]))
 * with exact products accumulated in f32, then rounded to type_d. A is stored with
 * element (m, k) of batch b at b*stride_a + (order_a == row ? m*lda + k : m + k*lda), B
 * likewise with (k, n) and ldb; C and D are contiguous row-major [batch, m, n]. Sizes and
 * strides are expressions of the graph's dims. For the generic kernel (KMatmul) the
 * fields come from the Mul + Sum the rule matched, beta is 0 and there is no epilogue. */
typedef struct ll_matmul {
    hl_expr m, n, k, batch;
    hl_expr lda, ldb, stride_a, stride_b;
    ll_order order_a, order_b;
    double alpha;            /* as the graph computes it: already rounded to alpha_dt */
    double beta;             /* 0 or 1 */
    ll_epilogue epilogue;
    hl_dtype type_a, type_b, type_c, type_d, type_bias;
} ll_matmul;

/* ==================================================================================
 * The search space
 * ================================================================================== */

/* A saturated e-graph, read into dense arrays. Classes of sorts IR, IList and OpKind
 * are searchable: a genome chooses one of their nodes. Every other class (expressions,
 * lists of them, dtypes, literals) is read through its canonical node: the node of
 * least tree size, ties to the lowest index (docs/llir.md). Subsumed nodes, nodes of
 * unregistered HLIR-only kinds and nodes whose child class has no node left are not
 * choices (they were removed by cleanup, or are unreachable). */
typedef struct ll_space ll_space;

typedef struct ll_space_stats {
    uint32_t classes;            /* all classes of the serialization */
    uint32_t searchable;         /* IR, IList and OpKind classes with at least one choice */
    uint32_t reachable;          /* searchable classes reachable from the root */
    uint64_t choices;            /* nodes over the searchable classes */
    double log2_programs;        /* sum over reachable searchable classes of log2(choices):
                                    an upper bound of the number of programs */
    uint32_t pruned;             /* nodes left out because a child class became empty */
    uint32_t per_dialect[LL_D_COUNT]; /* choices per dialect */
} ll_space_stats;

/* Serializes e (which must hold an encoding whose root IR class is `root`, e.g. from
 * hl_graph_encode)
 * and builds the space. Checks: every IR class has a dtype (the `dtype` function), every
 * node's kind is registered or HLIR-only, the root class survives cleanup (else
 * LM_EVERIFY naming the last rule that emptied it). Returns NULL with err set. */
ll_space *ll_space_new(eg_engine *e, eg_value root, lm_err *err);
void ll_space_free(ll_space *s);
void ll_space_get_stats(const ll_space *s, ll_space_stats *out);
/* Choices per op (registry index), e.g. how many KAdd nodes: counts[ll_op_count()]. */
void ll_space_op_counts(const ll_space *s, uint32_t *counts);
/* The printed summary of `luminal_search --emit space`. */
void ll_space_fprint_summary(const ll_space *s, FILE *f);
/* The egraph-serialize JSON (e-graph viewers read it), with the dtype of every IR class
 * and the rule that inserted every node. */
int ll_space_write_json(const ll_space *s, FILE *f, lm_err *err);

/* Searchable classes are numbered 0 .. n-1 in increasing class order. */
uint32_t ll_space_class_count(const ll_space *s);
uint32_t ll_space_choice_count(const ll_space *s, uint32_t cls);
/* The registered op of choice j of searchable class cls (LL_OP_NONE for IList nodes). */
ll_op ll_space_choice_op(const ll_space *s, uint32_t cls, uint32_t j);

/* ==================================================================================
 * Genomes
 * ================================================================================== */

/* One choice per searchable class (an index below ll_space_choice_count). Choices of
 * classes the root does not reach do not matter and are kept as drawn. The hash is the
 * XOR of one 64-bit hash per (class, choice) entry, so a mutation updates it in O(1);
 * ll_genome_rehash recomputes it from scratch (tests compare the two). */
typedef struct ll_genome {
    uint32_t n;
    uint32_t *choice;
    uint64_t hash;
} ll_genome;

int ll_genome_init(ll_genome *g, const ll_space *s, lm_err *err); /* every choice 0 */
void ll_genome_fini(ll_genome *g);
int ll_genome_copy(ll_genome *dst, const ll_genome *src, lm_err *err);
/* Sets one choice, updating the hash in O(1). */
void ll_genome_set(ll_genome *g, const ll_space *s, uint32_t cls, uint32_t choice);
uint64_t ll_genome_rehash(const ll_genome *g, const ll_space *s);

/* Draws every choice uniformly, then repairs. */
int ll_genome_random(ll_genome *g, const ll_space *s, lm_pcg32 *rng, lm_err *err);
/* The genome that fuses the most (FInl, FStore, Blas preferred) and the one that fuses
 * the least (standalone kernels everywhere), both valid. */
int ll_genome_most_fused(ll_genome *g, const ll_space *s, lm_err *err);
int ll_genome_least_fused(ll_genome *g, const ll_space *s, lm_err *err);

/* Checks a genome: every class the root reaches has a valid choice, the chosen nodes
 * form no cycle, every chosen IList has the length its op expects, every chosen kind is
 * a registered backend op (not HLIR-only). LM_EVERIFY naming the class and the problem. */
int ll_genome_validate(const ll_genome *g, const ll_space *s, lm_err *err);
/* Makes a genome valid, deterministically from rng: walking from the root, a choice that
 * closes a cycle or is not a program node is replaced by the first alternative (in a
 * rotation drawn from rng) that is valid. Fails only when no valid program exists. */
int ll_genome_repair(ll_genome *g, const ll_space *s, lm_pcg32 *rng, lm_err *err);

/* ==================================================================================
 * The LLIR graph
 * ================================================================================== */

typedef enum ll_kind {
    LL_INPUT = 0,  /* graph input `index` */
    LL_OUTPUT,     /* graph output `index`: reads in[0] through view[0] */
    LL_KERNEL,     /* a standalone kernel: prim (or mm for KMatmul) */
    LL_REGION,     /* a fused region: its interior nodes have region == this node */
    LL_LIBRARY,    /* a cuBLASLt call: mm */
    LL_FUSED,      /* interior: prim evaluated in registers */
    LL_LOAD        /* interior: reads the top-level node in[0] (a leaf of the region) */
} ll_kind;

/* One node. Top-level nodes (region == LM_NONE) read top-level nodes; interior nodes
 * read interior nodes of their region, except LL_LOAD, which reads a top-level node. A
 * region node's in[0] is its interior root. */
typedef struct ll_node {
    ll_kind kind;
    ll_op op;         /* the registered constructor chosen */
    uint32_t region;  /* LM_NONE for top-level nodes; the region node for interior ones */
    hl_dtype dtype;   /* the output: dtype and logical shape (stored contiguously) */
    uint32_t ndim;
    hl_expr shape[HL_MAX_DIMS];
    uint32_t n_in;    /* inputs: LLIR node ids (for Blas: A, B, then C, then bias) */
    uint32_t in[LL_MAX_IN];
    hl_dtype in_dtype[LL_MAX_IN]; /* the dtype the op's contract reads input i in (the
                         kind's DType fields, ll_op_info.in): the verifier requires the
                         producer's dtype; the executor reads the producer's bytes as
                         this dtype whatever they hold, as the GPU would */
    hl_node prim;     /* LL_KERNEL (not KMatmul), LL_FUSED: the primitive, with
                         prim.in[i].node == in[i] and prim.in[i].view the view input i is
                         read through; LL_OUTPUT: prim.in[0].view, name and index;
                         LL_INPUT: name and index */
    ll_matmul mm;     /* KMatmul and Blas */
    uint32_t eclass;  /* the e-class the node came from (serialization index), or LM_NONE */
    uint32_t enode;   /* the e-node chosen, or LM_NONE */
    uint32_t origin;  /* the rule or command that inserted the e-node (engine provenance) */
} ll_node;

typedef struct ll_graph ll_graph;

/* Builds the LLIR graph a valid genome picks, then verifies it (ll_graph_verify).
 * Top-level nodes come in Kahn order, lowest class first; interior nodes of a region
 * follow their region node. Fails with err naming the class (LM_EVERIFY), or
 * LM_ENOMEM. */
ll_graph *ll_graph_from_genome(const ll_space *s, const ll_genome *g, lm_err *err);

/* The reference lowering: every HLIR node of g as its own standalone kernel (no fusion,
 * no library call), as the rules' kernel lowering would give it. For testing codegen
 * without the e-graph, and the search report's "reference HLIR lowering" row. LLIR node
 * i is HLIR node i (Input and Output nodes as LL_INPUT and LL_OUTPUT, every other node
 * an LL_KERNEL whose op is the K* constructor of its primitive); dims and expressions
 * are copied into the graph's own pool; in_dtype is each producer's dtype; eclass, enode
 * and origin are LM_NONE. ll_run of it gives hl_run's bits. Fails with LM_EARG for a
 * graph holding a builder error, LM_ENOMEM. */
ll_graph *ll_graph_from_hlir(const hl_graph *g, lm_err *err);

void ll_graph_free(ll_graph *g);

/* The graph's expression pool (every hl_expr of its nodes), dims and nodes. */
const hl_expr_pool *ll_graph_exprs(const ll_graph *g);
uint32_t ll_graph_dim_count(const ll_graph *g);
const hl_dim *ll_graph_dim_at(const ll_graph *g, uint32_t i);
const char *ll_graph_dim_name(const ll_graph *g, uint32_t i);
uint32_t ll_graph_node_count(const ll_graph *g);
const ll_node *ll_graph_node(const ll_graph *g, uint32_t id);
uint32_t ll_graph_input_count(const ll_graph *g);
uint32_t ll_graph_input(const ll_graph *g, uint32_t i);   /* node id */
uint32_t ll_graph_output_count(const ll_graph *g);
uint32_t ll_graph_output(const ll_graph *g, uint32_t i);  /* node id */

/* The verifier, run on every graph built: shapes by the primitive's shape rule, every
 * view within the buffer it reads (at every dim value in range), every edge's dtype
 * equal to what the consumer's contract expects, interior nodes only inside their
 * region. A violation is LM_EVERIFY naming the node, the operand, both dtypes and the
 * rule that inserted the node. */
int ll_graph_verify(const ll_graph *g, lm_err *err);

/* 128 bits of XXH3 over the graph's canonical form (nodes, fields, expressions as
 * structure, not ids): two genomes that give one program give one fingerprint. */
typedef struct ll_fingerprint {
    uint64_t lo, hi;
} ll_fingerprint;
ll_fingerprint ll_graph_fingerprint(const ll_graph *g);

/* A readable listing, one line per node, deterministic. */
void ll_graph_dump(const ll_graph *g, FILE *f);

/* ==================================================================================
 * The LLIR file (llir/ll_serial.c)
 * ==================================================================================
 *
 * A graph written as JSON ("luminal-llir", version 1: the dims, then every node with all
 * its fields, expressions in hlir's text form; ll_serial.c documents every key), so that
 * a compiled program can keep its LLIR for the CPU executor. The same graph gives the
 * same bytes, and a graph read back writes the same bytes again. */

/* Writes g as a NUL-terminated JSON string that the caller frees with free(). NULL with
 * err set: LM_ENOMEM; LM_EARG for a NULL graph. */
char *ll_graph_write_json(const ll_graph *g, lm_err *err);

/* Reads a graph from the JSON text text[0..len) (need not be NUL-terminated); source
 * names the text in messages (a file name; NULL gives "<llir>"). Returns the finished
 * graph (free with ll_graph_free), or NULL with err set: LM_EPARSE with
 * "source:line:col" for malformed JSON, and with the path of the offending value
 * ("nodes[3].prim.in[0].strides[1]") for a missing or unknown key, a wrong type, an
 * unknown op, dtype or kind, an expression that does not parse or names something that
 * is not a declared dim, an id out of range or IO indexes that are not 0..k-1;
 * LM_EUNSUPPORTED for another file version; LM_ENOMEM. Never crashes on any input; what
 * the nodes compute is checked when the graph is run (ll_run) or verified. */
ll_graph *ll_graph_read_json(const char *text, size_t len, const char *source, lm_err *err);

/* ==================================================================================
 * The CPU executor
 * ================================================================================== */

/* Runs g on the CPU as the GPU program would compute it (docs/llir.md, "The CPU
 * executor and its precision rules"):
 *   - a standalone kernel: its primitive with exactly the reference runtime's arithmetic
 *     at the node's dtype, so a program of standalone kernels gives hl_run's bits;
 *   - a region: its interior evaluated once per node, float values in f32 (loads
 *     widened, fused float ops not rounded to their storage dtype; a fused Cast rounds,
 *     as a cast does), integer and Bool values in their own dtype, one rounding to the
 *     region's dtype at the store;
 *   - KMatmul and Blas: exact products accumulated in f32 in k order, then alpha, beta *
 *     C, bias, gelu (tanh form) in f32, one rounding to type_d; A and B addressed through
 *     lda, ldb, the orders and the batch strides as cuBLASLt addresses them;
 *   - every operand read in the dtype its consumer's contract names (in_dtype, and the
 *     matmul's types): a producer of another dtype has its bytes reinterpreted, zero past
 *     the end of its buffer, so a wrong dtype rule gives wrong numbers, never a read
 *     outside a buffer.
 * Arguments as hl_run's: dim_values indexed like ll_graph_dim_at (NULL: every dim's
 * profile value), inputs[i] for ll_graph_input(g, i) (borrowed; dtype and dims checked),
 * outputs[i] for ll_graph_output(g, i), filled on success and owned by the caller (free
 * each with hl_tensor_fini). mem_limit > 0 refuses, before allocating any tensor, a run
 * whose live buffers and working memory would exceed it at their peak (buffers are freed
 * after their last reader; the caller's inputs are not counted): LM_ELIMIT naming the
 * largest tensors. Errors name the LLIR node (id, op, kind, dtype, e-class and rule) and
 * the reason: LM_EVERIFY for a node the executor cannot run as built (a region whose
 * root is not inside it, an operand out of order, a primitive that disagrees with the op,
 * a result of another dtype or size than the node's), LM_ERUNTIME for bad data as in
 * hl_run (a Gather index out of range, a matmul reaching outside an operand), LM_EDIM
 * for a dim outside its range, LM_ESHAPE for an input of the wrong dtype or dims,
 * LM_ENOMEM. On failure the outputs hold nothing. g is not modified. */
int ll_run(const ll_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
           hl_tensor *outputs, uint64_t mem_limit, lm_err *err);

/* ==================================================================================
 * Comparing a candidate's outputs with the reference's (genome fuzzing)
 * ==================================================================================
 *
 * Output o of a candidate agrees with the reference runtime's when, elementwise,
 *   |cand - ref| <= tol(o) * max(rms(ref), tiny(dtype))
 * where rms is over the reference output's finite elements and tiny is the dtype's
 * smallest normal (1 for integer dtypes); a NaN or an infinity in the candidate where the
 * reference is finite fails, and where the reference is NaN (or +-inf) the candidate
 * must be NaN (the same infinity). tol(o) is derived in docs/llir.md from the reference's
 * precision rules: the largest sum, over a path of g from an input to output o, of the
 * rounding weight of every node on it (ll_node_rounding_weight); 0 (exact comparison)
 * for an output that no float rounding reaches, e.g. Int, I64 and Bool outputs computed
 * from integers only. */

/* The unit roundoff of a float dtype (2^-24 f32, 2^-11 f16, 2^-8 bf16, 2^-4 E4M3, 2^-3
 * E5M2); 0 for integer dtypes and Bool. */
double ll_unit_roundoff(hl_dtype t);

/* The rounding weight of node id of g at the given dim values (NULL: the profile
 * values): how much, in units of the RMS of the values involved, the node's roundings
 * can make two evaluations differ (docs/llir.md): one ulp, 2 u(f32), for a correctly
 * rounded f32 op (Add, Mul, Mod, Recip, Sqrt), two, 4 u(f32), for Exp2, Log2 and Sin,
 * plus 2 u(dtype) when the result is stored narrower than f32; 2 u(target) for a cast to
 * a float (0 for a float widened to f32); 2 (K - 1) u(f32) for a SumReduce of K terms
 * (its f32 accumulation, in any order), plus 2 u(dtype) when narrower; 0 for everything
 * exact (inputs, constants, integer ops, comparisons, copies, Max). LM_EARG for a bad
 * id, LM_EDIM / LM_EEVAL when K cannot be evaluated. */
int ll_node_rounding_weight(const hl_graph *g, const int64_t *dim_values, uint32_t id,
                            double *out, lm_err *err);

/* tol(o) for every output o of g (tol[0 .. hl_graph_output_count)) at the dim values
 * (NULL: the profile values). */
int ll_output_tolerances(const hl_graph *g, const int64_t *dim_values, double *tol,
                         lm_err *err);

/* What the comparison found for one output. */
typedef struct ll_out_cmp {
    double tol;        /* tol(o), in units of max(rms, tiny) */
    double rms;        /* RMS of the reference's finite elements */
    double max_err;    /* the largest |cand - ref| over finite pairs, in those units; inf
                          when a non-finite value disagrees */
    size_t n_bad;      /* elements outside the tolerance */
    size_t first_bad;  /* the first of them (SIZE_MAX when none) */
    double cand, ref;  /* the two values there */
} ll_out_cmp;

/* Compares cand[0 .. n) with ref[0 .. n) (n = hl_graph_output_count(g); ref as hl_run
 * gave it for g at dim_values) with the tolerances above. per_output (NULL, or n
 * records) receives each output's findings. 0 when every output agrees; LM_EMISMATCH
 * with err naming the first output that does not (its index and name, the first element
 * outside the tolerance with both values, the tolerance and the largest error, in units
 * of RMS); LM_ESHAPE / LM_EDTYPE when an output's dims or dtype differ; LM_EARG. */
int ll_compare_outputs(const hl_graph *g, const int64_t *dim_values, const hl_tensor *cand,
                       const hl_tensor *ref, ll_out_cmp *per_output, lm_err *err);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_LLIR_H */
