/* pg_gpu.h - the GPU backend's state, shared by pg_gpu.c, pg_gpu_layout.c and
 * pg_compile.c, and read by the white-box tests (INTERNALS program). Only in builds with
 * cuda_rt.
 *
 * One context, the kernels compiled once, one arena (an rt_buf) shared by every variant
 * (they never run at once: one stream), one device buffer per input, and per variant
 * (bucket combination) its layout, its graph and executable graph, and the launch each
 * kernel node holds. `epoch` counts address changes (the arena or an input buffer moved, a
 * device input changed): a variant whose stamp is older, or whose dims changed, brings its
 * nodes up to date before its next launch.
 */
#ifndef LUMINAL_PG_GPU_H
#define LUMINAL_PG_GPU_H

#include "cuda_rt.h"
#include "pg_int.h"

/* A kernel step's launch as its graph node holds it: grid and the parameters, each eight
 * bytes (a device address, or a dim's value as a long long). */
typedef struct pg_launch {
    uint32_t grid[3];
    uint32_t nargs;
    uint64_t args[CG_MAX_PARAMS];
} pg_launch;

/* A library-call step: its prepared matmul and the arguments its captured node holds. */
typedef struct pg_blas_state {
    bool valid;
    rt_matmul_spec spec;
    rt_matmul *mm; /* owned by the context */
    rt_matmul_args args;
} pg_blas_state;

typedef struct pg_variant {
    bool built;           /* laid out and given a graph once */
    bool graph_dirty;     /* the layout changed since the graph was built */
    uint64_t *planned;    /* per buffer: bytes planned (the bucket's maximum, or more) */
    uint64_t *ws_planned; /* per step: a library call's workspace bytes */
    /* layout: one arena entry per slot (in-place groups share one), in buffer order */
    uint32_t n_abuf;
    rt_arena_buf *abuf;
    uint64_t *aoff;
    uint32_t *buf_abuf; /* per buffer: its arena entry, LM_NONE for inputs and workspaces */
    uint64_t data_peak, ws_base, ws_peak, total;
    uint64_t *ws_off; /* per step, from ws_base */
    uint32_t **deps;  /* per step: the earlier steps it waits on (transitively reduced) */
    uint32_t *ndeps;
    /* the graph */
    rt_graph *graph;
    rt_exec *exec;
    uint32_t *node;    /* per step: its graph node */
    pg_launch *held;   /* per step: what the node holds (kernel steps) */
    pg_blas_state *bl; /* per step (library-call steps) */
    bool stamped;
    uint64_t stamp_epoch;
    int64_t *stamp_dims;
} pg_variant;

struct pg_gpu {
    rt_ctx *ctx;
    bool own_ctx;
    rt_kernel **kern; /* per plan kernel */
    uint64_t compiled, cache_hits;
    rt_buf arena;
    rt_buf *in_buf;    /* per input */
    bool *in_valid;    /* the device copy holds the host copy's bytes */
    uint64_t *in_addr; /* per input: the address the nodes were last given */
    uint64_t epoch;
    pg_variant *var; /* n_variants */
    uint32_t cur;    /* the variant of the last run */
};

/* Compiles (or finds in the module cache) every kernel of p for ctx's device into
 * kern[n_kernels]: distinct sources once, on p->compile_threads threads (0: up to 4).
 * Errors name the kernel, its template and LLIR node. */
int pg__compile_kernels(pg_program *p, rt_ctx *ctx, rt_kernel **kern, uint64_t *compiled,
                        uint64_t *hits, lm_err *err);

/* pg_gpu_layout.c: allocates variant v's per-step arrays (launches, library-call states,
 * dependencies); and lays variant vi out at its bucket's maximum dims (the arena, the
 * workspaces, the input buffers) and plans its dependencies. */
int pg__gpu_variant_alloc(pg_program *p, pg_variant *v, lm_err *err);
/* Frees what pg__gpu_variant_alloc and the variant's graph hold, and zeroes it. */
void pg__gpu_variant_fini(pg_program *p, pg_variant *v);
int pg__gpu_layout(pg_program *p, pg_gpu *g, pg_variant *v, uint32_t vi, lm_err *err);

/* For tests: the device address of buffer b in variant v as the nodes see it now (0 when
 * unknown). */
uint64_t pg__gpu_buffer_addr(const pg_program *p, uint32_t v, uint32_t b);

#endif /* LUMINAL_PG_GPU_H */
