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
    LL_F_STRING,
    LL_F_IR         /* an IR child (only the IO constructors Output and OutputJoin have
                       them: their inputs are columns, not an IList) */
} ll_field_sort;

/* How the dtype of one operand (or the output) is determined. */
typedef enum ll_dt_rule {
    LL_DT_NONE = 0,  /* no such operand (for `out`: the node has no dtype, OutputJoin) */
    LL_DT_FIELD,     /* the DType field `arg` of the kind */
    LL_DT_FIXED,     /* the dtype `arg` (an hl_dtype) */
    LL_DT_AS_INPUT,  /* the same as input `arg` (IO and plumbing nodes, HLIR kinds) */
    LL_DT_ANY,       /* any dtype (an input of Output, of FInl, of an HLIR kind) */
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

/* One registered constructor. For Op kinds, `name` is the OpKind constructor and
 * `fields` are its columns in order; the inputs are the Op's IList, n_inputs long (for
 * Blas the largest: a and b, then c when its field beta is 1, then bias when its
 * epilogue has one, so in[] are the contracts of a, b, c, bias in that order, whichever
 * are present). For the IO constructors, `name` is the IR constructor and `fields` are
 * all its columns, the IR ones (sort LL_F_IR) being its inputs, in order.
 * Op, ICons and INil are the encoding's structure, not registered constructors. */
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
const ll_op_info *ll_op_get(ll_op op); /* NULL for op >= ll_op_count() */
/* The op registered under a constructor name, or LL_OP_NONE. */
ll_op ll_op_find(const char *name);

/* Checks an engine holding the rules against the registry, both ways: every registered
 * constructor is declared with its fields' sorts in order and its sort (IR or OpKind),
 * and every constructor of sort OpKind or IR the rules declare is registered; the
 * encoding's Op, ICons and INil are declared with their arity. Fails with LM_EVERIFY
 * naming the constructor and what differs (a field's sort, the output sort, the arity,
 * a constructor declared but not registered). */
int ll_registry_check(const eg_engine *e, lm_err *err);

/* The number of inputs a node of kind op with these fields has: n_inputs, except for
 * Blas: 2, plus 1 when beta is 1, plus 1 when the epilogue has a bias. */
uint32_t ll_op_input_count(ll_op op, double beta, int64_t epilogue);

/* ==================================================================================
 * Saturation
 * ==================================================================================
 *
 * The rules (rules.dsl) declare the backend constructors and their rules, and give the
 * schedule as facts of a relation `(relation phase (i64 String String))`: (order, name,
 * schedule text), e.g. (phase 1 "fuse" "(saturate fuse)"). ll_saturate runs the rules
 * text in an engine that holds an encoded graph, checks the registry, then runs each
 * phase's schedule with eg_run_schedule in increasing order, timing each and reading the
 * engine's size and counted memory after it. */

#define LL_MAX_PHASES 32
#define LL_PHASE_NAME 64

typedef struct ll_sat_opts {
    uint64_t node_limit; /* rows in the whole e-graph (eg_node_count); 0 = none */
    uint64_t mem_limit;  /* the engine's counted bytes (eg_mem_bytes); 0 = none */
    double time_limit_s; /* wall time of the whole saturation; 0 = none */
} ll_sat_opts;

/* Fills the limits of eo from o, so the engine stops inside a phase that reaches one
 * (node and memory limits hold at every moment; the time limit bounds each phase's one
 * eg_run_schedule call). Create the engine with these options: the driver also checks
 * the totals after every phase and the time left before it, but only the engine can
 * stop a phase in the middle. Other fields of eo are left as they are. */
void ll_sat_engine_options(const ll_sat_opts *o, eg_options *eo);

typedef struct ll_phase_report {
    char name[LL_PHASE_NAME];
    int64_t order;
    eg_stop_reason stop; /* why the phase's last run stopped (the engine tells no
                            iteration count through its API) */
    double seconds;      /* wall time of the phase */
    uint64_t rows;       /* eg_node_count after the phase */
    uint64_t bytes;      /* eg_mem_bytes after the phase */
    uint64_t peak;       /* eg_mem_peak after the phase: the most the engine's counted
                            memory held from its creation to the end of this phase (a
                            phase whose peak exceeds the previous one's reached it) */
} ll_phase_report;

typedef struct ll_sat_report {
    uint32_t n_phases; /* the phases that ran, including one that failed */
    ll_phase_report phase[LL_MAX_PHASES];
    double seconds; /* the whole saturation, loading the rules included */
} ll_sat_report;

/* Runs the rules text (rules_name names it in messages; NULL gives "<rules>") in e,
 * checks the registry (ll_registry_check), reads the phases and runs them in order.
 * o may be NULL (no limits). rep (may be NULL) is filled with what ran, also on failure.
 * Fails with the engine's code for a rules text it refuses (located in the text), with
 * LM_EVERIFY for a registry mismatch or a malformed phase table (no phase relation, no
 * phases, two phases of one order, a name longer than LL_PHASE_NAME - 1 bytes, more
 * than LL_MAX_PHASES), with the engine's code naming the phase for a schedule it
 * refuses, and with LM_ELIMIT naming the phase, the limit and the sizes when a phase
 * reaches a limit (the phases after it do not run; what it made stays in e). */
int ll_saturate(eg_engine *e, const char *rules, const char *rules_name, const ll_sat_opts *o,
                ll_sat_report *rep, lm_err *err);

/* One line per phase (name, stop reason, seconds, rows, bytes, peak bytes) and a total. */
void ll_sat_report_fprint(const ll_sat_report *rep, FILE *f);

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
 * Attention (KAttn, KAttnMask)
 * ================================================================================== */

/* o[l.., i, c] = sum_j softmax_j(s[l.., i, .]) v[l.., j, c],
 *   s[l.., i, j] = scale * sum_d q[l.., i, d] k[l.., j, d]  (+ mask[l.., i, j])
 *                  and -inf where causal and j > i + (skv - sq) (bottom-right aligned),
 * with f32 products and accumulation, an f32 softmax, one rounding to the node's dtype; a
 * row whose every key is masked gives 0. q is read through the view q ([L.., Sq, D]), k
 * and v through k and v ([L.., Skv, D]), the mask through mask ([L.., Sq, Skv]; ndim 0
 * without one); the output is contiguous [L.., Sq, D]. The tile is the kernel's shape
 * (codegen/cg_attn.h), a genome choice that does not change the value. */
typedef struct ll_attn {
    uint32_t nlead;            /* leading dims L (batch, heads) */
    hl_expr sq, skv, d;        /* query rows, keys, head dim */
    hl_view q, k, v, mask;
    bool causal;
    double scale;              /* as the graph computes it: already rounded to scale_dt */
    uint32_t block_q, block_k, warps, stages, kv_splits;
} ll_attn;

/* Whether op is one of the attention constructors (KAttn, KAttnMask). */
bool ll_op_is_attn(ll_op op);

/* ==================================================================================
 * The search space
 * ================================================================================== */

/* A saturated e-graph, read into dense arrays (docs/llir.md, "The search space").
 *
 * Classes of sorts IR, IList and OpKind are searchable: a genome chooses one of their
 * nodes. Every other class (expressions, lists of them, dtypes, literals) is read
 * through its canonical node: the node of least tree size among those llir can read
 * (the rules-only helpers MReplace, RowMajor, ... and subsumed nodes are not), ties to
 * the lowest index. A node is a choice when it is not subsumed, is not of an HLIR kind
 * (those are never part of a program), and every class it reads has a choice (or a
 * canonical node) and a program without a cycle (a finite least height); removing
 * choices is iterated to a fixpoint. Every IR class has a context: top-level (Input,
 * kernels, FStore, Blas), region (F*, FLoad, FInl) or sink (Output, OutputJoin).
 *
 * Searchable classes are numbered 0 .. n-1 in increasing class order, their choices in
 * increasing node order, so the same engine gives the same space byte for byte. The
 * space borrows the engine: it must outlive the space and not change while it lives. */
typedef struct ll_space ll_space;

typedef struct ll_space_stats {
    uint32_t classes;            /* all classes of the serialization */
    uint32_t searchable;         /* IR, IList and OpKind classes with at least one choice */
    uint32_t reachable;          /* searchable classes reachable from the root */
    uint32_t decisions;          /* reachable searchable classes with two or more choices */
    uint64_t choices;            /* nodes over the searchable classes */
    double log2_programs;        /* sum over reachable searchable classes of log2(choices):
                                    an upper bound of the number of programs */
    uint32_t pruned;             /* nodes left out because a child class became empty */
    uint32_t subsumed;           /* nodes of searchable classes left out as subsumed */
    uint32_t hlir_only;          /* nodes of HLIR kinds left out */
    uint32_t per_dialect[LL_D_COUNT]; /* choices of IR classes per dialect (an Op node's is
                                         its kind's) */
} ll_space_stats;

/* Serializes e (which must hold an encoding whose root IR class is `root`, e.g. from
 * hl_graph_encode, and the rules' constructors) and builds the space. Checks, each a
 * LM_EVERIFY naming the class and node:
 *   - every constructor with nodes of sort IR or OpKind is registered (naming it), with
 *     the registry's arity;
 *   - every IR class but the sinks has a dtype (the `dtype` function), and the e-graph
 *     dtype check: every node of an IR class has the class's dtype by its contract (from
 *     its DType fields, its inputs' classes or a fixed dtype), and every input with a
 *     dtype contract reads a class of that dtype; a violation names the node, both
 *     dtypes and the rule that inserted the node;
 *   - a class's choices agree on the context (no class mixes top-level and region
 *     nodes), an OpKind class's choices are one op, an IList class's choices have one
 *     length, and every Op node's IList has as many entries, of the context its kind
 *     reads, as its kind has inputs (a kernel reading a region value is refused);
 *   - the fields of every backend kind that is a choice form its op (out_strides
 *     contiguous, a KMatmul's strides a matmul, Blas's fields in range), decoded once;
 *   - the Dim and Input declarations are well formed;
 *   - the root class survives.
 * A violation names the node and the rule or command that inserted it (the engine's
 * provenance). Returns NULL with err set (LM_ENOMEM too). */
ll_space *ll_space_new(eg_engine *e, eg_value root, lm_err *err);

/* Options of ll_space_new_opts. Zero-initialised options are ll_space_new's. */
typedef struct ll_space_opts {
    /* TESTS ONLY (tests/fuzz's seed-002 test and luminal_search --fuzz-no-verify): leave
     * out the e-graph dtype check, so that a rule that breaks a dtype contract reaches
     * the LLIR verifier and the CPU executor, which must catch it too. The compiler
     * never sets it. Every other check of ll_space_new still runs. */
    bool skip_dtype_check;
    /* The wall-clock moment (lm_now_s) past which the build stops, 0 for none: checked
     * between the build's steps and every 4096 nodes or classes inside them, so the build
     * stops within about a step's slice of it (serializing the engine is one step that is
     * not interrupted). Past it: LM_ELIMIT "the time limit ran out while building the
     * search space (step S: N of M classes)" (or nodes, for a step over nodes). */
    double deadline_s;
} ll_space_opts;

/* ll_space_new with options (o may be NULL: ll_space_new). */
ll_space *ll_space_new_opts(eg_engine *e, eg_value root, const ll_space_opts *o, lm_err *err);
void ll_space_free(ll_space *s);
void ll_space_get_stats(const ll_space *s, ll_space_stats *out);
/* Choices of IR classes per op (registry index), e.g. how many KAdd alternatives:
 * counts[ll_op_count()]. */
void ll_space_op_counts(const ll_space *s, uint32_t *counts);
/* The printed summary of `luminal_search --emit space`: classes, searchable, reachable,
 * choices, log2 of the number of programs, choices per dialect and per op. */
void ll_space_fprint_summary(const ll_space *s, FILE *f);
/* The egraph-serialize JSON (e-graph viewers read it) of the whole e-graph, with
 * "dtype" in the class data of every IR class that has one and the "origin" of every
 * node (the rule or command that inserted it). LM_EIO when writing fails. */
int ll_space_write_json(const ll_space *s, FILE *f, lm_err *err);

/* The fingerprint of the saturated e-graph the space was read from, as 32 hex digits and
 * a NUL in out: XXH3-128 over the serialization's structure (every class's sort and
 * dtype, every node's constructor, class, subsumption, literal payload and children, the
 * root), hashed from the arrays directly, without writing any text: O(size of the
 * e-graph). The same engine gives the same fingerprint. LM_EARG for a NULL space. */
int ll_space_fingerprint(const ll_space *s, char out[33], lm_err *err);

uint32_t ll_space_class_count(const ll_space *s);
uint32_t ll_space_choice_count(const ll_space *s, uint32_t cls);
/* The registered op of choice j of searchable class cls: the constructor of an IO or
 * OpKind node, the kind of an Op node (its OpKind class's choices are one op);
 * LL_OP_NONE for IList nodes. */
ll_op ll_space_choice_op(const ll_space *s, uint32_t cls, uint32_t j);
/* The serialization's index of searchable class cls, and the serialized node of its
 * choice j (the "n<index>" of ll_space_write_json). */
uint32_t ll_space_class_eclass(const ll_space *s, uint32_t cls);
uint32_t ll_space_choice_node(const ll_space *s, uint32_t cls, uint32_t j);
/* The searchable classes that choice j of class cls reads (its children that are
 * searchable, in child order; an Op node reads its OpKind class, then its IList class):
 * their count, and *kids (may be NULL) pointing at them, valid while s lives. 0 for an
 * index out of range. */
uint32_t ll_space_choice_kids(const ll_space *s, uint32_t cls, uint32_t j, const uint32_t **kids);
/* The searchable class of the root, and whether class cls is reachable from it. */
uint32_t ll_space_root(const ll_space *s);
bool ll_space_reachable(const ll_space *s, uint32_t cls);

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
/* Sets one choice, updating the hash in O(1). cls < g->n (asserted); the choice is not
 * checked (validation and repair handle one out of range). */
void ll_genome_set(ll_genome *g, const ll_space *s, uint32_t cls, uint32_t choice);
uint64_t ll_genome_rehash(const ll_genome *g, const ll_space *s);

/* Draws every choice uniformly, then repairs. */
int ll_genome_random(ll_genome *g, const ll_space *s, lm_pcg32 *rng, lm_err *err);
/* The genome that fuses the most (FInl, FStore, Blas preferred) and the one that fuses
 * the least (standalone kernels everywhere), both valid. */
int ll_genome_most_fused(ll_genome *g, const ll_space *s, lm_err *err);
int ll_genome_least_fused(ll_genome *g, const ll_space *s, lm_err *err);
/* The least fused genome, except that every class with a library choice (a contraction
 * on cuBLASLt) takes it: the plain program that the vendor library makes fast, and the
 * search's usual best start on a graph of matmuls (the least fused one materialises
 * their broadcast products, the most fused may recompute a reduction per element). */
int ll_genome_library(ll_genome *g, const ll_space *s, lm_err *err);
/* The most fused genome, except that a region reads a producer that reduces (a
 * contraction, a row's sum or max) from memory, where another node stored it, instead of
 * inlining it: no reduction is recomputed inside another kernel's loops. */
int ll_genome_fused_stored(ll_genome *g, const ll_space *s, lm_err *err);

/* Checks a genome: every choice is below its class's count, and walking from the root
 * over the chosen nodes: no cycle, every chosen IList has the length its op expects,
 * every chosen kind is a registered backend op (not HLIR-only), and region ops (F*,
 * FLoad, FInl) are reached only inside a region (under FStore, F* or FInl) and every
 * other op only outside one. LM_EVERIFY naming the class, the node and the problem. */
int ll_genome_validate(const ll_genome *g, const ll_space *s, lm_err *err);
/* Makes a genome valid, deterministically from rng (NULL: no randomness, alternatives
 * in index order after the current choice): walking from the root, a choice that closes
 * a cycle, or all of whose alternatives below fail, is replaced by the first
 * alternative in a rotation drawn from rng that completes; a walk that takes too long
 * (more than 16 steps per choice of the space) falls back to the space's acyclic
 * choice of least height for every class not yet settled. Classes the walk does not
 * reach keep their choices. Fails only when no valid program exists (the space's root
 * has none, which ll_space_new already refuses). */
int ll_genome_repair(ll_genome *g, const ll_space *s, lm_pcg32 *rng, lm_err *err);

/* The classes the walk from the root over g's choices reaches: *n of them, written in
 * the walk's order (depth first from the root, children in order, each class once) to
 * order[0 .. *n) when order is not NULL (room for ll_space_class_count entries). Only
 * these choices make the program: two genomes that agree on them give one LLIR graph.
 * A choice out of range ends the walk at its class (it is listed, its children are not).
 * LM_EARG for a genome of another space, LM_ENOMEM. */
int ll_genome_reached(const ll_genome *g, const ll_space *s, uint32_t *order, uint32_t *n,
                      lm_err *err);
/* Sets the choice of every class the walk does not reach to 0 (the hash follows), so
 * that two genomes that pick one program become equal, and so do their hashes: the
 * canonical form that genome fuzzing deduplicates by. Validity does not change. LM_EARG,
 * LM_ENOMEM (then g is unchanged). */
int ll_genome_canonicalize(ll_genome *g, const ll_space *s, lm_err *err);

/* One line: the hash, then the choice of every reachable class with two or more. */
void ll_genome_fprint(const ll_genome *g, const ll_space *s, FILE *f);

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
    hl_dtype in_dtype[LL_MAX_IN]; /* the dtype the op's contract reads input i as (KCast:
                         its DTfrom; Blas: DTa, DTb, DTc, DTbias; LL_OUTPUT: its input's) */
    hl_node prim;     /* LL_KERNEL (not KMatmul), LL_FUSED: the primitive, with
                         prim.in[i].node == in[i] and prim.in[i].view the view input i is
                         read through (a reduction's axis is its last dim); LL_OUTPUT:
                         prim.in[0].view, name and index; LL_INPUT: name and index. For
                         the other nodes prim.op is HL_OP_COUNT and prim is zero */
    ll_matmul mm;     /* KMatmul and Blas */
    ll_attn at;       /* KAttn and KAttnMask */
    uint32_t eclass;  /* the e-class the node came from (serialization index), or LM_NONE */
    uint32_t enode;   /* the e-node chosen, or LM_NONE */
    uint32_t origin;  /* the rule or command that inserted the e-node: an index into the
                         graph's origin table (ll_graph_origin), or LM_NONE */
} ll_node;

typedef struct ll_graph ll_graph;

/* Builds the LLIR graph a valid genome picks, then verifies it (ll_graph_verify).
 * Node order: every Input in index order (also inputs nothing reads: they are the
 * program's interface), then the top-level nodes the outputs reach in Kahn order, lowest
 * class first, each region node followed at once by its interior nodes (inputs before
 * users), then every Output in index order. The graph owns everything (its own
 * expression pool, names); it does not refer to s or the engine. Fails with err naming
 * the class and node (LM_EVERIFY for a genome that is not valid or fields that do not
 * form the op: out_strides that are not contiguous, a KMatmul whose strides are not a
 * matmul, a Blas field out of range), or LM_ENOMEM. */
ll_graph *ll_graph_from_genome(const ll_space *s, const ll_genome *g, lm_err *err);
/* TESTS ONLY (tests/fuzz's seed-002 test and luminal_search --fuzz-no-verify): the graph
 * ll_graph_from_genome builds, without running ll_graph_verify on it, so that what the
 * verifier would refuse reaches the CPU executor. The compiler never calls it; a caller
 * may verify the result itself (ll_graph_from_genome is this, then ll_graph_verify). */
ll_graph *ll_graph_from_genome_unverified(const ll_space *s, const ll_genome *g, lm_err *err);

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

/* A deep copy of g: its own expression pool (every expression the nodes refer to rebuilt
 * once, structurally equal; ids may differ), names, origin table, dims and interface
 * lists; nothing is shared with g, and no text is written or parsed. The copy writes the
 * same LLIR file (ll_graph_write_json) and has the same fingerprint. It is not verified
 * again (a copy of an unverified graph stays unverified). NULL with err set: LM_EARG for
 * a NULL graph, LM_ENOMEM. */
ll_graph *ll_graph_copy(const ll_graph *g, lm_err *err);

/* The text of a node's origin (ll_node.origin): the rule ("rule 'fuse-add'") or command
 * that inserted its e-node; "origin unknown" for LM_NONE (a node from HLIR, or an e-graph
 * without provenance). The string lives as long as the graph. */
const char *ll_graph_origin(const ll_graph *g, uint32_t origin);

/* The graph's expression pool (every hl_expr of its nodes), dims and nodes. Indexes out
 * of range give NULL (LM_NONE for the node ids of inputs and outputs). */
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

/* The verifier, run on every graph built: ids and order (inputs before users, a
 * region's interior right after it), shapes by the primitive's shape rule (expressions
 * compare as ids of the graph's pool), each primitive's dtype rule, every edge's dtype
 * equal to what the consumer's contract expects, interior nodes only inside their
 * region, and every view within the buffer it reads. Views are checked at the dims'
 * corner values (every dim at lo or hi, all corners for up to 6 dims, else all at lo
 * and all at hi) and at their profile values, each position range computed exactly
 * (an affine stride by its ends, any other by interval arithmetic, falling back to
 * every position when that bound is not tight enough), so a view of a valid HLIR graph
 * is never refused; a reach that is not monotone in the dims between those points is
 * checked only at them. A violation is LM_EVERIFY naming the node, the operand (both
 * dtypes, or the reach, the buffer's size and the dim values) and the rule that
 * inserted the node. */
int ll_graph_verify(const ll_graph *g, lm_err *err);

/* 128 bits of XXH3 over the graph's canonical form (dims, then every node in order with
 * its fields, expressions as structure, not pool ids; e-class, e-node and origin are
 * left out): two genomes that give one program give one fingerprint. */
typedef struct ll_fingerprint {
    uint64_t lo, hi;
} ll_fingerprint;
ll_fingerprint ll_graph_fingerprint(const ll_graph *g);

/* A readable listing: the dims, then one line per node (interior nodes indented under
 * their region), e.g. `%5 = KAdd f32 [S, 4] (%1 [S, 4]:[4*z, z]) (%2 [S, 4]:[0, z])`.
 * Deterministic; e-classes are not printed, so equal programs dump equal text. */
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
 * Binary LLIR (llir/ll_pack.c)
 * ==================================================================================
 *
 * A graph as bytes, for handing it to another process (the search's GPU worker): a
 * header (the magic "LLIRbin\0", the format version, the payload's length and its XXH3-64
 * checksum), then the dims, the origin table, the expressions the nodes refer to (as
 * structure, operands first) and every node with the fields that mean something for it.
 * The same graph gives the same bytes. ll_graph_unpack of ll_graph_pack's bytes gives a
 * graph that writes the same LLIR file (ll_graph_write_json) and has the same
 * fingerprint. */

#define LL_PACK_VERSION 1

/* Packs g into a buffer from llir's allocation door that the caller frees with free():
 * *buf and *len. LM_EARG for a NULL graph, or a node holding an expression out of its
 * pool or a variable that is not one of the graph's dims; LM_ENOMEM. */
int ll_graph_pack(const ll_graph *g, void **buf, size_t *len, lm_err *err);

/* Reads a graph from buf[0..len) and verifies it (ll_graph_verify). Every byte is
 * checked before it is used: a buffer too short, of another magic, with a checksum that
 * does not match, a count beyond what the buffer can hold, a value out of its range (a
 * kind, an op, a dtype, a node, expression, dim or origin index), an expression that
 * cannot be built, or bytes left over is LM_EPARSE naming the byte offset and the field;
 * another version is LM_EUNSUPPORTED; a graph the verifier refuses is LM_EVERIFY;
 * LM_ENOMEM. Never crashes on any input. */
ll_graph *ll_graph_unpack(const void *buf, size_t len, lm_err *err);

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
 *   |cand[i] - ref[i]| <= tol(o) * max(|ref[i]|, M[i], scale(o))
 *   scale(o) = max(rms(ref), rms(M), tiny(dtype))
 * where M is the output's magnitude (ll_output_magnitudes: the size of the terms each
 * element is made of where they cancel, |ref| where nothing cancels; without magnitudes
 * M is left out), rms is over finite elements and tiny is the dtype's smallest normal (1
 * for integer dtypes); an element whose magnitude is not finite is not bounded. So an
 * element is measured against its own size, never less than the output's RMS, and
 * against the size of its terms where they cancel (docs/llir.md, "The scale of the
 * comparison"). A NaN or an infinity in the candidate where the reference is finite
 * fails, and where the reference is NaN (or +-inf) the candidate must be NaN (the same
 * infinity). tol(o) is derived in docs/llir.md from the reference's
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
    double tol;        /* tol(o), in units of each element's max(|ref[i]|, M[i], scale) */
    double rms;        /* RMS of the reference's finite elements */
    double max_err;    /* the largest |cand - ref| over finite pairs, in those units; inf
                          when a non-finite value disagrees */
    size_t n_bad;      /* elements outside the tolerance */
    size_t first_bad;  /* the first of them (SIZE_MAX when none) */
    double cand, ref;  /* the two values there */
    double scale;      /* scale(o): max(rms, rms(M), tiny) */
} ll_out_cmp;

/* Compares cand[0 .. n) with ref[0 .. n) (n = hl_graph_output_count(g); ref as hl_run
 * gave it for g at dim_values) with the tolerances above. per_output (NULL, or n
 * records) receives each output's findings. 0 when every output agrees; LM_EMISMATCH
 * with err naming the first output that does not (its index and name, the first element
 * outside the tolerance with both values, the tolerance and the largest error, in units
 * of each element's scale, the output's RMS and scale); LM_ESHAPE / LM_EDTYPE when an
 * output's dims or dtype differ; LM_EARG. Without magnitudes (ll_compare_outputs_scaled
 * gives them) an element's unit is max(|ref[i]|, rms, tiny). */
int ll_compare_outputs(const hl_graph *g, const int64_t *dim_values, const hl_tensor *cand,
                       const hl_tensor *ref, ll_out_cmp *per_output, lm_err *err);

/* The magnitude of every output of g at dim_values (NULL: the profile values) on inputs
 * (as hl_run takes them): mag[o], an f32 tensor of output o's dims holding, per element,
 * the size of the terms the element is made of where they cancel (docs/llir.md, "The
 * scale of the comparison"): |value| where nothing cancels, sqrt(M(a)^2 + M(b)^2) for a
 * sum a + b, carried through products, copies and selections, so that a candidate that
 * rounds the terms differently (x + (-x) computed as a few ulps of x) is measured against
 * x's size, not against 0. One run of the reference runtime on g's magnitude graph
 * (llir/ll_magnitude.c gives the rule of every op). The caller frees each with
 * hl_tensor_fini; on failure mag holds nothing. LM_EARG, the reference's errors. */
int ll_output_magnitudes(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
                         hl_tensor *mag, lm_err *err);

/* ll_compare_outputs with the magnitudes of the reference's outputs (mag[0 .. n) from
 * ll_output_magnitudes on the same inputs; NULL: |ref|, which is ll_compare_outputs).
 * LM_ESHAPE also for a magnitude that is not f32 or not of its output's size. */
int ll_compare_outputs_scaled(const hl_graph *g, const int64_t *dim_values, const hl_tensor *cand,
                              const hl_tensor *ref, const hl_tensor *mag, ll_out_cmp *per_output,
                              lm_err *err);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_LLIR_H */
