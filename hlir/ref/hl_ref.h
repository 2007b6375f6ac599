/* hl_ref.h - the CPU reference interpreter, the oracle every backend is checked against:
 * tensors and hl_run (hlir/ref/). Public. docs/hlir.md states its arithmetic. */
#ifndef LUMINAL_HL_REF_H
#define LUMINAL_HL_REF_H

#include "hl_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * The reference runtime
 * ==================================================================================
 *
 * Executes a graph on the CPU. Arithmetic is f32 for float dtypes (each node's result
 * rounded to its dtype's storage, as on the GPU), int32 (wrapping) for Int, int64 for
 * I64. Nodes run in id order; reductions add in index order in f32 and round once, so
 * results are bit-for-bit deterministic. A Mul whose only reader is a SumReduce reading
 * it whole (a matmul, a dot product, a norm's sum of squares) is a dot product: exact
 * products (f32 holds a product of two bf16 or f16 values exactly) added in f32, as
 * PyTorch and cuBLASLt compute it, and only the sum is rounded. docs/hlir.md
 * ("Precision") gives every rule.
 */

/* A tensor: dtype, dims and a contiguous buffer of elements in the dtype's storage
 * format (f16/bf16 as uint16 bits, FP8 as bytes, Bool as one byte 0/1). Owns data when
 * it came from hl_run (free with hl_tensor_fini); inputs passed to hl_run are borrowed. */
typedef struct hl_tensor {
    hl_dtype dtype;
    uint32_t ndim;
    int64_t dims[HL_MAX_DIMS];
    size_t numel;
    void *data;
} hl_tensor;

/* Allocates a zero-filled tensor. HL_OK or HL_ERR_NOMEM / HL_ERR_ARG in err. */
hl_status hl_tensor_init(hl_tensor *t, hl_dtype dtype, uint32_t ndim, const int64_t *dims,
                         lm_err *err);
/* Frees t's data and zeroes it. Accepts NULL and already-freed tensors. */
void hl_tensor_fini(hl_tensor *t);
/* Element i as f64 / set from f64 (rounded to the dtype's storage). i < numel. */
double hl_tensor_get(const hl_tensor *t, size_t i);
void hl_tensor_set(hl_tensor *t, size_t i, double v);
/* Fills t with numbers drawn from seed on stream (PCG32): floats uniform in [-1, 1) in
 * steps of 2^-23 (then rounded to the dtype), Bool 0 or 1, integers 0 to 3 (in range as
 * indexes of any dim of 4 or more). The same seed and stream give the same bytes on every
 * machine. For a tensor that is not a graph input; a graph's inputs are filled by
 * hl_graph_fill_input, which gives these bytes for an input without an initialisation. */
void hl_tensor_fill_random(hl_tensor *t, uint64_t seed, uint64_t stream);

/* Fills t, the tensor of graph input input_index (its dtype and rank; its dims are those
 * of the run), the way every tool that makes up inputs for a graph must: from PCG32 seed
 * on stream input_index, by the input's initialisation (hl_graph_input_init):
 *   HL_INIT_DEFAULT  hl_tensor_fill_random(t, seed, input_index), byte for byte;
 *   HL_INIT_UNIFORM  floats lo + (hi - lo) * u, u uniform in [0, 1) in steps of 2^-24,
 *                    then rounded to the dtype (so the values lie between lo and hi
 *                    rounded to the dtype, which can be past a bound it cannot hold);
 *                    integers and bools uniform in [lo, hi), one 32-bit draw each
 *                    (two when hi - lo > 2^32).
 * The ranges [-1, 1), [0, 4) and [0, 2) give the default's bytes. HL_OK, or HL_ERR_ARG
 * (no such input, or t is not a tensor of its dtype and rank) naming the input. */
hl_status hl_graph_fill_input(const hl_graph *g, uint32_t input_index, hl_tensor *t, uint64_t seed,
                              lm_err *err);

/* Options of a run. Zero-initialised options are valid and mean the defaults. */
typedef struct hl_run_opts {
    uint64_t mem_limit; /* the most bytes a run may hold at once, its inputs included;
                           0 means the memory this machine has (lm_mem_available), and no
                           check when that is unknown */
    uint32_t threads;   /* the most threads a large matmul-like product is shared among
                           (the results are the same bits for any number); 0 means the
                           machine's online processors, at most 64; 1: none */
} hl_run_opts;

/* What a run holds in memory, computed from the graph and the dim values alone. */
typedef struct hl_run_mem {
    uint64_t input_bytes; /* the inputs' buffers (the caller's, held for the whole run) */
    uint64_t peak_bytes;  /* the most held at once: the inputs, the buffers still to be
                             read, the running node's output, view tables and accumulators */
    uint64_t limit;       /* what it was checked against (0: no check) */
} hl_run_mem;

/* Plans a run of g at dim_values (NULL: the profile values) without allocating a tensor:
 * the dims are checked against their ranges, every shape is evaluated and the buffers
 * are followed through the run's schedule (each freed after its last reader). Fills *out
 * (may be NULL) and returns HL_OK, or HL_ERR_LIMIT when the peak exceeds opts->mem_limit
 * (or, when that is 0, the machine's memory), with a message giving the need, the limit
 * and the largest tensors by the user's names; HL_ERR_DIM, HL_ERR_EVAL or HL_ERR_RUNTIME
 * for dims or shapes that cannot be evaluated. A caller that allocates the inputs (a tool
 * filling them with random numbers) calls it first, so that a run the machine cannot hold
 * is refused before its inputs are allocated; hl_run calls it again itself. */
hl_status hl_run_check_memory(const hl_graph *g, const int64_t *dim_values, const hl_run_opts *opts,
                              hl_run_mem *out, lm_err *err);

/* Runs g. dim_values[i] is the value of hl_graph_dim_at(g, i) (checked against its
 * range; dim_values NULL means every dim's profile value); inputs[i] is the tensor for
 * hl_graph_input(g, i) (dtype and dims checked; borrowed). opts may be NULL (the
 * defaults). Before allocating anything large, the run's memory is checked as
 * hl_run_check_memory does (HL_ERR_LIMIT). On success fills
 * outputs[0 .. hl_graph_output_count) (caller frees each with hl_tensor_fini) and returns
 * HL_OK. On failure returns the status with err naming the node and reason (bad data
 * too: an index out of range, an integer modulo by zero, a view reaching outside its
 * producer), and outputs hold nothing to free. The graph is not modified. */
hl_status hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
                 hl_tensor *outputs, const hl_run_opts *opts, lm_err *err);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_REF_H */
