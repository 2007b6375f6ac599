/* codegen.h - CUDA C for LLIR programs: the one public header of codegen/.
 *
 * codegen turns a verified LLIR graph (llir.h) into a plan: pure data that says what
 * to run, with nothing of the GPU in it. Every kernel node and fused region becomes one
 * CUDA C module holding one kernel (`extern "C" __global__ void lm_kernel(...)`), written
 * for Hopper (sm_90): 128-bit vector loads and stores where strides and alignment allow,
 * grid-stride loops, warp or block row reductions, f32 accumulation for bf16/f16/fp8
 * storage, index arithmetic in 32 bits where the bounds prove it fits, dynamic dims as
 * kernel parameters and launch geometry as expressions of the dims. Every library call
 * becomes a cuBLASLt spec whose sizes are expressions of the dims. Every tensor the
 * program stores is a buffer with a live range.
 *
 * The program/ module plans the arena, builds the CUDA graph and runs the plan on
 * cuda_rt; the search compiles the modules with NVRTC and measures it.
 *
 * Determinism: the same LLIR gives the same plan and the same sources, byte for byte,
 * so NVRTC's cache (keyed by source) hits across candidates that share a kernel.
 *
 * Errors through base's lm_err; a kernel that cannot be generated names the LLIR node.
 * docs/codegen.md describes the kernels, the plan and its file format.
 */
#ifndef LUMINAL_CODEGEN_H
#define LUMINAL_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base.h"
#include "hlir.h"
#include "llir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A buffer the program stores: a graph input, a graph output, an intermediate (planned
 * into the arena by live range), or a library call's workspace. Sizes are expressions of
 * the graph's dims, in the plan's expression pool. */
typedef enum cg_buf_kind { CG_BUF_INPUT = 0, CG_BUF_OUTPUT, CG_BUF_TEMP, CG_BUF_WORKSPACE } cg_buf_kind;

/* The workspace a cuBLASLt call is given (bytes); program/ may hand it less, down to
 * what the prepared call asks for. */
#define CG_BLAS_WORKSPACE_BYTES (32u << 20)

/* Inputs and outputs are the caller's memory and never share storage; temps and
 * workspaces are planned into the arena by [first_step, last_step]: two buffers whose
 * ranges overlap must not share bytes. Steps are indexes into cg_plan.steps. */
typedef struct cg_buffer {
    cg_buf_kind kind;
    uint32_t index;      /* input or output index for CG_BUF_INPUT / CG_BUF_OUTPUT, else
                            LM_NONE */
    hl_dtype dtype;      /* element type (a blas workspace: HL_BOOL, i.e. bytes) */
    hl_expr numel;       /* elements, an expression of the dims (>= 1) */
    hl_expr bytes;       /* numel * the dtype's size */
    uint32_t first_step; /* live from the step that writes it (inputs: 0) ... */
    uint32_t last_step;  /* ... to the last step that reads it (outputs: the last step) */
    uint32_t llir_node;  /* the node that stores it (inputs: the Input node; a workspace:
                            the node it serves) */
} cg_buffer;

/* One kernel parameter. */
typedef enum cg_param_kind {
    CG_P_BUFFER = 0, /* a pointer: the address of buffer `buf` */
    CG_P_DIM,        /* an int64: the value of dynamic dim `dim` */
} cg_param_kind;

typedef struct cg_param {
    cg_param_kind kind;
    uint32_t buf;  /* CG_P_BUFFER */
    uint32_t dim;  /* CG_P_DIM */
    bool written;  /* CG_P_BUFFER: the kernel stores into it (else reads it only) */
} cg_param;

#define CG_MAX_PARAMS 48

/* One kernel: its module's source (one kernel named lm_kernel per module), launch
 * geometry and parameters. The kernel's parameters are, in order, params[0..n_params):
 * a buffer is a pointer (`T *__restrict__`, T the buffer's storage type), a dim a `long
 * long` holding the dim's value. Launch with grid (the expressions evaluated at the
 * run's dim values; each is >= 1 and within CUDA's limits: x < 2^31, y and z <= 65535)
 * and block and shared_bytes of dynamic shared memory (0 for every template but the fused
 * attention kernel's, which takes up to 160 KiB; cuda_rt raises the kernel's limit past
 * 48 KiB before the launch or the graph node, RT_SHARED_DEFAULT). Every
 * kernel is correct for any grid of at least one block (grid-stride loops), so program/
 * may also launch fewer blocks. */
typedef struct cg_kernel {
    char *source;            /* owned; NUL-terminated CUDA C */
    uint32_t llir_node;      /* the LLIR node (kernel, region or output copy) it computes */
    hl_expr grid[3];         /* blocks, as expressions of the dims */
    uint32_t block[3];       /* threads per block */
    uint32_t shared_bytes;   /* dynamic shared memory */
    uint32_t n_params;
    cg_param params[CG_MAX_PARAMS];
    const char *template_name; /* "elementwise", "elementwise-loop", "row-warp", "row-block",
                                  "copy", "gather", "scatter-init", "scatter-mark",
                                  "scatter-apply", "matmul", "attention",
                                  "attention-combine" (static) */
    hl_expr ops;             /* the values one launch evaluates (loads, iotas, ops and
                                reduction steps, each as often as the loops around it run),
                                an expression of the dims; HL_NONE where not counted
                                (gather, scatter, matmul; a plan read from a file). The
                                cost model's work (search/sr_cost.c) */
    hl_expr strided;         /* of them, the loads whose neighbouring lanes read addresses
                                more than one element apart, at the dims' profile values
                                (the row template's lanes split each loop: one step of the
                                load's loop; the elementwise template's take consecutive
                                elements): each lane reads a sector. HL_NONE where ops is.
                                The cost model's uncoalesced traffic */
    hl_expr divs32, divs64;  /* the integer divisions and modulos by a dim (not a literal,
                                which the compiler turns into a multiply) that the loads'
                                index arithmetic evaluates per launch, in 32-bit and in
                                64-bit arithmetic (a 64-bit division is a long subroutine
                                on the GPU). HL_NONE where ops is */
} cg_kernel;

/* One cuBLASLt call: the matmul of an LLIR Blas node (ll_matmul's semantics), its
 * expressions copied into the plan's pool. program/ turns it into an rt_matmul_spec at
 * the run's dims. */
typedef struct cg_blas {
    uint32_t llir_node;
    ll_matmul mm;              /* expressions in cg_plan.exprs */
    uint32_t a, b, c, d, bias; /* buffers (LM_NONE when absent) */
    uint32_t workspace;        /* buffer (CG_BUF_WORKSPACE) */
} cg_blas;

/* One step of the program, in execution order; each depends on the steps that wrote
 * the buffers it reads. */
typedef enum cg_step_kind { CG_STEP_KERNEL = 0, CG_STEP_BLAS } cg_step_kind;
typedef struct cg_step {
    cg_step_kind kind;
    uint32_t index; /* into kernels or blas */
} cg_step;

typedef struct cg_plan {
    hl_expr_pool *exprs; /* owned: every expression of the plan */
    uint32_t n_dims;     /* the graph's dynamic dims, in order */
    hl_dim *dims;        /* owned copies (expr and var in exprs) */
    char **dim_names;    /* owned */
    uint32_t n_buffers;
    cg_buffer *buffers;
    uint32_t n_kernels;
    cg_kernel *kernels;
    uint32_t n_blas;
    cg_blas *blas;
    uint32_t n_steps;
    cg_step *steps;
    uint32_t n_inputs, n_outputs;
    uint32_t *input_buf;  /* buffer of input i */
    uint32_t *output_buf; /* buffer of output i */
    uint32_t n_nodes;     /* the LLIR graph's nodes */
    uint32_t *node_buf;   /* the buffer each top-level LLIR node is stored in (LM_NONE for
                             Output nodes that alias or copy, and interior nodes) */
} cg_plan;

/* Generation options. Zero-initialised options are valid and mean the defaults. */
typedef struct cg_options {
    int arch; /* compute capability as major*10+minor; default 90 */
} cg_options;

/* Writes the plan of a verified LLIR graph. NULL with err naming the LLIR node on
 * failure (LM_EUNSUPPORTED for an op no template covers, LM_ENOMEM); opt may be NULL.
 * The result depends on nothing but g and opt: the same graph gives the same plan and
 * the same sources, byte for byte (cg_plan_fprint shows it). */
cg_plan *cg_plan_new(const ll_graph *g, const cg_options *opt, lm_err *err);
/* Frees the plan and everything it owns. Accepts NULL. */
void cg_plan_free(cg_plan *p);

/* A readable, deterministic listing of the whole plan: dims, buffers with live ranges,
 * steps with grids and parameters, and (with sources) every kernel's source. */
void cg_plan_fprint(const cg_plan *p, bool sources, FILE *f);

/* Compiling the kernels with NVRTC (a CI check that needs no GPU) is done where cuda_rt
 * may be used: program/, and tests/codegen/test_cg_compile.c. */

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_CODEGEN_H */
