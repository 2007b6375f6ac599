/* cuda_rt.h: the CUDA layer of luminal-c, the one public header of cuda_rt/.
 *
 * Everything the compiler runs on a GPU goes through this module: the CUDA driver, NVRTC
 * and cuBLASLt loaded at run time (dlopen; nothing links against them, so every binary
 * builds and runs where there is no GPU), device and pinned memory, the arena planner,
 * the NVRTC module cache, CUDA graphs (build, instantiate, update in place, replay),
 * prepared cuBLASLt matmuls and event timing. A mock driver and a mock cuBLASLt (function
 * tables that record their calls) stand in for the real ones in tests.
 *
 * Conventions
 * - Errors are the project's (base/base.h): every function that can fail returns 0 or an
 *   rt_code (whose values are base's lm_code values) and fills a caller-supplied lm_err
 *   with a message that says what was observed (the call, the error name, the sizes),
 *   where (" [cuda_rt/<file>:<line>]" at its end) and how to fix it. The record is
 *   sticky: a function handed an lm_err that already holds an error returns that code at
 *   once and does nothing. The caller empties it (lm_err_clear, or `lm_err err = {0};`).
 * - Objects are values you create and free; two contexts can live in one process. No
 *   global mutable state except the diagnostic counter behind rt_debug_host_allocs().
 * - This header includes no CUDA header: device pointers are rt_dptr (a 64-bit address);
 *   driver objects are opaque.
 * - Everything runs on the context's one stream, in order. A context is used by one
 *   thread at a time.
 */
#ifndef LUMINAL_CUDA_RT_H
#define LUMINAL_CUDA_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

/* ------------------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------------------- */

/* The codes this module raises: base's lm_code values under the module's names, so a code
 * means the same wherever it arrives (lm_code_name() and lm_code_ident() name them). */
typedef enum rt_code {
    RT_OK = LM_OK,
    /* host allocation failed or a size overflowed */
    RT_ENOMEM = LM_ENOMEM,
    /* bad argument: the message names the field */
    RT_EARG = LM_EARG,
    /* the device or library cannot do what was asked */
    RT_EUNSUPPORTED = LM_EUNSUPPORTED,
    /* no CUDA driver or no device: the message starts "no CUDA device: " */
    RT_ENODEV = LM_ENODEV,
    /* a driver call failed */
    RT_EDRIVER = LM_EDRIVER,
    /* a kernel faulted (illegal address, launch failure), or isolated work died: the
     * context is poisoned until rt_ctx_reset(), or for the process where the driver keeps
     * the fault (rt_isolated_run) */
    RT_EFAULT = LM_EFAULT,
    /* NVRTC could not be loaded or failed outside compilation */
    RT_ENVRTC = LM_ENVRTC,
    /* NVRTC rejected the source: the message holds its log and lines */
    RT_ECOMPILE = LM_ECOMPILE,
    /* a cuBLASLt call failed or found no algorithm */
    RT_EBLAS = LM_EBLAS,
    /* timed work did not finish within its timeout */
    RT_ETIMEOUT = LM_ETIMEOUT,
    /* an object made before rt_ctx_reset() was used after it */
    RT_ESTALE = LM_ESTALE
} rt_code;

/* Number of host allocations this module has made in the process so far (an atomic
 * diagnostic counter; tests check that a path allocates nothing). */
uint64_t rt_debug_host_allocs(void);

/* ------------------------------------------------------------------------------------
 * Mock driver and mock cuBLASLt (for tests on machines without a GPU)
 *
 * A mock plays one device: handles are fake, memory is not backed, kernels do not run.
 * Every call is recorded by its CUDA name ("cuMemAlloc", "cublasLtMatmul", ...) in
 * order. Graphs, capture and exec updates are modelled closely enough to test the
 * runtime's logic: capture state, node counts, kernel node grids on both the source
 * and the executable graph, update refusal when topology differs.
 * ---------------------------------------------------------------------------------- */

typedef struct rt_mock rt_mock;

typedef struct rt_mock_config {
    int device_count;           /* 0 plays "no device" */
    int cc_major, cc_minor;     /* compute capability; default 9.0 */
    bool capture_to_graph;      /* cuStreamBeginCaptureToGraph available */
    bool refuse_exec_update;    /* cuGraphExecUpdate always refuses */
    size_t blas_version;        /* what cublasLtGetVersion returns */
    size_t heuristic_workspace; /* workspace size the mock heuristic asks for */
    float event_ms_per_launch;  /* cuEventElapsedTime = launches between events * this */
    bool fault_survives_reset;  /* as observed on driver 580: an illegal-address fault keeps
                                   failing every call after cuDevicePrimaryCtxReset */
} rt_mock_config;

/* Defaults: one sm_90 device, capture into graphs supported, updates accepted,
 * cuBLASLt version 130100, 4 MiB heuristic workspace, 0.01 ms per launch. */
void rt_mock_config_default(rt_mock_config *cfg);

/* Creates a mock; NULL cfg means defaults. Returns NULL only when out of memory. */
rt_mock *rt_mock_new(const rt_mock_config *cfg);
/* Frees the mock. Every context made on it must be freed first. Accepts NULL. */
void rt_mock_free(rt_mock *mock);

/* The recorded calls: count, and the name of call i (i < count). */
uint32_t rt_mock_calls(const rt_mock *mock);
const char *rt_mock_call_name(const rt_mock *mock, uint32_t i);
/* How many calls named `name` were recorded at index `from` or later. */
uint32_t rt_mock_count_since(const rt_mock *mock, const char *name, uint32_t from);
/* Makes the nth (0 = next) future call named `name` return `status` (a CUresult or a
 * cublasStatus_t). A CUDA_ERROR_ILLEGAL_ADDRESS (700) also makes every later driver call
 * return 700 until cuDevicePrimaryCtxReset, as the real driver does. */
void rt_mock_fail(rt_mock *mock, const char *name, uint32_t nth, int status);
/* True while the mock's stream is capturing. */
bool rt_mock_capturing(const rt_mock *mock);
/* Live device allocations and live graphs, graph execs, modules, events. */
uint32_t rt_mock_live_allocs(const rt_mock *mock);
uint32_t rt_mock_live_objects(const rt_mock *mock);
/* The gridDim.x the mock holds for a kernel node, on the source graph (exec=false) or
 * on the executable graph instantiated from it (exec=true); node is the runtime's node
 * id in `graph`. Returns 0 when unknown. */
struct rt_graph;
struct rt_exec;
uint32_t rt_mock_kernel_grid_x(const rt_mock *mock, const struct rt_graph *graph,
                               const struct rt_exec *exec, uint32_t node);

/* ------------------------------------------------------------------------------------
 * Context: one device, its primary context, one stream, the caches
 * ---------------------------------------------------------------------------------- */

typedef struct rt_ctx rt_ctx;
typedef struct rt_blas_cache rt_blas_cache;

#define RT_BLAS_WORKSPACE_DEFAULT ((size_t)32 << 20) /* rt_options.blas_workspace_max */

typedef struct rt_options {
    int device;                /* ordinal; default 0 */
    const char *lib_dir;       /* where to look first for libnvrtc and libcublasLt;
                                  NULL: $LUMINAL_CUDA_LIB_DIR, the loader path,
                                  /usr/local/cuda/lib64 */
    rt_blas_cache *blas_cache; /* borrowed heuristic cache shared between contexts;
                                  NULL: the context keeps its own */
    size_t blas_workspace_max; /* cap for a matmul's workspace; default (and for 0)
                                  RT_BLAS_WORKSPACE_DEFAULT, 32 MiB */
} rt_options;

typedef enum rt_capture_mode {
    RT_CAPTURE_TO_GRAPH,   /* library calls are captured straight into the graph */
    RT_CAPTURE_CHILD_GRAPH /* library calls are captured apart and added as a child node */
} rt_capture_mode;

#define RT_DEVICE_NAME_MAX 256 /* bytes of a device's name, with its NUL */

typedef struct rt_device_info {
    char name[RT_DEVICE_NAME_MAX];
    int ordinal;
    int cc_major, cc_minor;
    int sm_count;
    int l2_bytes;
    size_t total_mem;
    int driver_version;           /* cuDriverGetVersion, e.g. 13000 */
    rt_capture_mode capture_mode; /* chosen by a probe when the context was made */
} rt_device_info;

/* Fills defaults (device 0, no lib_dir, own cache, RT_BLAS_WORKSPACE_DEFAULT cap). */
void rt_options_default(rt_options *opt);

/* Loads libcuda.so.1 (functions through cuGetProcAddress, the driver version recorded),
 * initializes the driver, retains the device's primary context, makes it current on this
 * thread, creates the stream and probes capture support. NVRTC and cuBLASLt load on first
 * use. Where there is no driver or no device, fails with RT_ENODEV and a message that
 * starts "no CUDA device: ". On failure nothing is left allocated and *out is NULL. */
int rt_ctx_new(const rt_options *opt, rt_ctx **out, lm_err *err);

/* Same, on a mock (borrowed; it must outlive the context). NVRTC is still the real one
 * where it can be loaded; module loading and everything else goes to the mock. */
int rt_ctx_new_mock(rt_mock *mock, const rt_options *opt, rt_ctx **out, lm_err *err);

/* Releases everything the context owns (modules, prepared matmuls, stream, its blas
 * cache if it owns one) and the primary context. Buffers, graphs and execs must be freed
 * before. Accepts NULL. */
void rt_ctx_free(rt_ctx *ctx);

/* After a fault (RT_EFAULT) or a timeout the context refuses work. Reset destroys the
 * device's primary context (every allocation, module, graph and stream on it is gone),
 * makes it afresh with a fresh stream, empties the module cache and the prepared matmuls
 * (the heuristic cache stays: its keys still hold) and bumps the generation. Objects made
 * before then answer RT_ESTALE and may only be freed. Can be called any time.
 * This recovers from timeouts and non-sticky errors. After a sticky kernel fault (illegal
 * address, illegal instruction, ...) current drivers keep refusing for the rest of the
 * process (observed on driver 580 / CUDA 13: cuDevicePrimaryCtxRetain still answers
 * CUDA_ERROR_ILLEGAL_ADDRESS after the reset): then reset fails with RT_EFAULT saying
 * so, and work that may fault belongs in rt_isolated_run. */
int rt_ctx_reset(rt_ctx *ctx, lm_err *err);

/* Work run by rt_isolated_run in a child process, on a context of its own; it writes its
 * results into out (out_size bytes, zeroed) and returns 0 or an rt_code with err set. */
typedef int (*rt_isolated_fn)(rt_ctx *ctx, void *user, void *out, size_t out_size, lm_err *err);

/* Runs fn in a forked child process that opens its own context (on `mock` when not NULL,
 * else the real driver with `opt`), so that a kernel fault, a crash or a hang takes only
 * the child: after a sticky fault the driver refuses the rest of the process's life (see
 * rt_ctx_reset). The child sees the caller's memory as it was at the fork, so inputs need
 * no copying; on success the out_size result bytes come back into `out`. The child's
 * error comes back with its message; a child killed by a signal gives RT_EFAULT; past
 * timeout_ms the child is killed and RT_ETIMEOUT returned. Only the calling process must
 * not have used CUDA itself (a forked child cannot use a parent's CUDA). */
int rt_isolated_run(const rt_options *opt, rt_mock *mock, rt_isolated_fn fn, void *user, void *out,
                    size_t out_size, double timeout_ms, lm_err *err);

/* Waits for the stream. A kernel fault surfaces here as RT_EFAULT. */
int rt_ctx_sync(rt_ctx *ctx, lm_err *err);

/* The device the context runs on. Never NULL. */
const rt_device_info *rt_ctx_device(const rt_ctx *ctx);

/* How many times the context was reset. */
uint32_t rt_ctx_generation(const rt_ctx *ctx);

/* ------------------------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------------------- */

typedef uint64_t rt_dptr; /* a device address; 0 is "none" */

/* A device allocation whose address stays put while the sizes asked for fit, so graphs
 * captured over it stay valid. Zero-initialize before first use. */
typedef struct rt_buf {
    rt_dptr ptr;     /* 0 until reserved */
    size_t bytes;    /* size last asked for */
    size_t capacity; /* bytes allocated (>= bytes) */
    uint32_t gen;    /* context generation of the allocation */
} rt_buf;

#define RT_BUF_ROUND ((size_t)2 << 20) /* an rt_buf's capacity is a multiple of this */

/* Makes buf hold at least `bytes`. When it already fits, nothing changes but buf->bytes
 * and *moved (may be NULL) is false; otherwise the old allocation is freed, a new one made
 * (capacity rounded up to RT_BUF_ROUND, 2 MiB) and *moved is true: graphs that use the old
 * address need updating. On failure buf is unchanged. */
int rt_buf_reserve(rt_ctx *ctx, rt_buf *buf, size_t bytes, bool *moved, lm_err *err);
/* Frees the allocation (a stale one is just forgotten) and zeroes buf. */
void rt_buf_release(rt_ctx *ctx, rt_buf *buf);

/* Page-locked host memory, for fast asynchronous copies. */
int rt_host_alloc(rt_ctx *ctx, size_t bytes, void **out, lm_err *err);
void rt_host_free(rt_ctx *ctx, void *p);

/* Copies and memset, enqueued on the context's stream (call rt_ctx_sync before reading
 * host memory a copy writes). Sizes of 0 do nothing. */
int rt_copy_htod(rt_ctx *ctx, rt_dptr dst, const void *src, size_t bytes, lm_err *err);
int rt_copy_dtoh(rt_ctx *ctx, void *dst, rt_dptr src, size_t bytes, lm_err *err);
int rt_copy_dtod(rt_ctx *ctx, rt_dptr dst, rt_dptr src, size_t bytes, lm_err *err);
int rt_memset8(rt_ctx *ctx, rt_dptr dst, uint8_t value, size_t bytes, lm_err *err);

/* ------------------------------------------------------------------------------------
 * Arena planner
 *
 * Given each buffer's size and live interval [first, last] in execution steps, plus
 * conflict pairs (buffers that may be live at once on the GPU although their intervals
 * are disjoint, e.g. inside one captured library call, or on concurrent branches), it
 * assigns offsets in one arena: every offset is a multiple of RT_ARENA_ALIGN, and two
 * buffers overlap in bytes only when their intervals are disjoint and no conflict pair
 * joins them. Greedy: largest first (ties by first step, then id), each at the lowest
 * offset that fits. Deterministic; depends on ids, not addresses.
 * ---------------------------------------------------------------------------------- */

#define RT_ARENA_ALIGN 256u

typedef struct rt_arena_buf {
    uint64_t bytes; /* 0 is allowed: such a buffer gets offset 0 and uses nothing */
    uint32_t first; /* first step it is live at */
    uint32_t last;  /* last step it is live at (>= first) */
} rt_arena_buf;

typedef struct rt_arena_pair {
    uint32_t a, b; /* buffer ids, a != b */
} rt_arena_pair;

/* Plans n buffers; offsets[n] (caller storage) receives the offsets, *peak the arena size
 * (a multiple of RT_ARENA_ALIGN). Bad input (last < first, an id out of range, a pair
 * joining a buffer to itself) fails with RT_EARG naming the buffer or pair index. */
int rt_arena_plan(const rt_arena_buf *bufs, uint32_t n, const rt_arena_pair *pairs, uint32_t npairs,
                  uint64_t *offsets, uint64_t *peak, lm_err *err);

/* Checks a plan from scratch (alignment, bounds, every forbidden overlap) and fails with
 * RT_EARG naming the first offending buffers. */
int rt_arena_check(const rt_arena_buf *bufs, uint32_t n, const rt_arena_pair *pairs,
                   uint32_t npairs, const uint64_t *offsets, uint64_t peak, lm_err *err);

/* ------------------------------------------------------------------------------------
 * NVRTC and kernels
 * ---------------------------------------------------------------------------------- */

typedef struct rt_nvrtc rt_nvrtc;

/* Loads NVRTC (libnvrtc.so.13, .12, or libnvrtc.so from lib_dir, $LUMINAL_CUDA_LIB_DIR,
 * the loader path, /usr/local/cuda/lib64). Fails with RT_ENVRTC naming what was tried. */
int rt_nvrtc_new(const char *lib_dir, rt_nvrtc **out, lm_err *err);
/* Frees the handle (the library stays loaded: unloading CUDA libraries is unsafe). Accepts
 * NULL. */
void rt_nvrtc_free(rt_nvrtc *nv);
/* NVRTC's version, e.g. 13 0. */
void rt_nvrtc_version(const rt_nvrtc *nv, int *major, int *minor);

/* A compiled module, in caller storage: rt_nvrtc_compile fills it, rt_cubin_fini frees
 * what it owns. */
typedef struct rt_cubin {
    void *data; /* owned; the CUBIN image */
    size_t size;
    char *log; /* owned; NVRTC's log (may be "") */
} rt_cubin;

#define RT_NVRTC_MAX_OPTS 60 /* extra options one compilation takes */
#define RT_NVRTC_MIN_ARCH 50 /* sm_50 .. sm_200: the architectures rt_nvrtc_compile takes */
#define RT_NVRTC_MAX_ARCH 200

/* Compiles CUDA C `src` (program name `name`, used in the log) for sm_<arch> (e.g. 90) to
 * CUBIN, with up to RT_NVRTC_MAX_OPTS extra options (may be NULL when nopts is 0). -arch
 * is added here. On a
 * compile error fails with RT_ECOMPILE; the message holds NVRTC's log and, for each line
 * the log names, that source line. On failure *out is zeroed. */
int rt_nvrtc_compile(rt_nvrtc *nv, const char *src, const char *name, int arch,
                     const char *const *opts, uint32_t nopts, rt_cubin *out, lm_err *err);
/* Frees the image and the log and zeroes c. Accepts NULL and a zeroed record. */
void rt_cubin_fini(rt_cubin *c);

/* The on-disk CUBIN cache: when $LUMINAL_KERNEL_CACHE names a folder at rt_nvrtc_new (the
 * context's NVRTC included), rt_nvrtc_compile first looks there for the CUBIN of (NVRTC's
 * version, arch, options, source) and writes what it compiles there (made with its
 * parents; best effort: a folder that cannot be written changes nothing). A file is used
 * only when its whole key is equal. Counts, for this process since it started: CUBINs
 * read from the folder (hits) and written to it (stores). */
void rt_nvrtc_disk_cache_stats(uint64_t *hits, uint64_t *stores);

/* A kernel function owned by the context's module cache (valid until reset or free). */
typedef struct rt_kernel rt_kernel;

/* Gets kernel `fn_name` from `src` compiled with `opts` for the device's exact
 * architecture. The cache is keyed by a hash of source, options and architecture and
 * confirmed by comparing them, so a module is compiled and loaded once. */
int rt_kernel_get(rt_ctx *ctx, const char *src, const char *fn_name, const char *const *opts,
                  uint32_t nopts, rt_kernel **out, lm_err *err);
/* The same cache, filled with a module compiled apart: `bin` is what rt_nvrtc_compile
 * gave for src and opts at the device's exact architecture (e.g. on another thread, with
 * an rt_nvrtc of its own: NVRTC compiles concurrently; loading stays on the context's
 * thread). When (src, opts, architecture) is cached already the cached kernel is returned
 * (a hit) and bin is not used; otherwise bin is loaded and cached (a miss), and stays the
 * caller's. RT_EARG when bin is needed but empty. */
int rt_kernel_load(rt_ctx *ctx, const char *src, const char *fn_name, const char *const *opts,
                   uint32_t nopts, const rt_cubin *bin, rt_kernel **out, lm_err *err);
/* Modules compiled (misses) and found (hits) so far. */
void rt_kernel_cache_stats(const rt_ctx *ctx, uint64_t *hits, uint64_t *misses);

#define RT_MAX_KERNEL_ARGS 64
#define RT_MAX_ARG_BYTES 4096

/* Dynamic shared memory a block gets without asking. A launch, kernel node or node update
 * with more shared_bytes first raises the kernel's limit
 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, once per kernel and size); more than
 * the device allows fails there, naming the kernel. */
#define RT_SHARED_DEFAULT 49152u

/* One kernel launch: args[i] points at the value of parameter i, sizes[i] its size. */
typedef struct rt_launch {
    rt_kernel *kernel;
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_bytes;
    uint32_t nargs;
    const void *const *args;
    const size_t *sizes;
} rt_launch;

/* Launches directly on the stream (not in a graph). */
int rt_launch_kernel(rt_ctx *ctx, const rt_launch *l, lm_err *err);

/* ------------------------------------------------------------------------------------
 * CUDA graphs
 *
 * An rt_graph is a source graph whose nodes have dense ids in insertion order; an
 * rt_exec is an executable graph instantiated from one. rt_exec_launch is the only place
 * in the code that launches a graph.
 * ---------------------------------------------------------------------------------- */

typedef struct rt_graph rt_graph;
typedef struct rt_exec rt_exec;

/* An empty source graph on ctx (cuGraphCreate). On failure *out is NULL. */
int rt_graph_new(rt_ctx *ctx, rt_graph **out, lm_err *err);
/* Accepts NULL. Execs instantiated from the graph must be freed first. */
void rt_graph_free(rt_graph *g);
uint32_t rt_graph_node_count(const rt_graph *g);

/* Adds a kernel node depending on deps[0..ndeps) (node ids of this graph). The argument
 * values are copied. */
int rt_graph_add_kernel(rt_graph *g, const rt_launch *l, const uint32_t *deps, uint32_t ndeps,
                        uint32_t *node, lm_err *err);

/* Library work (cuBLASLt) to be captured: it enqueues on the context's stream. */
typedef int (*rt_capture_fn)(rt_ctx *ctx, void *user, lm_err *err);

/* Captures what fn enqueues and adds it as one node (id) after deps, into the graph
 * directly or as a child graph, as the context's capture_mode says. The capture is always
 * ended, also when fn fails, and fn's error is returned. After a failure the graph is as
 * before, except in RT_CAPTURE_TO_GRAPH mode when fn had already enqueued work: those
 * nodes cannot be taken out, so the graph is marked broken and refuses further use
 * (RT_EARG, "rebuild it"). */
int rt_graph_add_captured(rt_graph *g, rt_capture_fn fn, void *user, const uint32_t *deps,
                          uint32_t ndeps, uint32_t *node, lm_err *err);

/* Reads back argument `arg` of kernel node `node` as the source graph holds it now. */
int rt_graph_kernel_arg(const rt_graph *g, uint32_t node, uint32_t arg, void *out, size_t size,
                        lm_err *err);

/* Instantiates g (cuGraphInstantiateWithFlags) into a new exec. The graph must outlive the
 * exec. On failure *out is NULL. */
int rt_exec_new(rt_graph *g, rt_exec **out, lm_err *err);
/* Accepts NULL. */
void rt_exec_free(rt_exec *e);

/* Sets a kernel node's launch (grid, block, shared bytes, arguments; the kernel must be
 * the same) in place on the exec and mirrors it on the source graph, so a later update or
 * re-instantiation keeps it. On failure neither changes. */
int rt_exec_set_kernel(rt_exec *e, uint32_t node, const rt_launch *l, lm_err *err);

typedef enum rt_update_kind {
    RT_UPDATE_IN_PLACE,      /* cuGraphExecUpdate accepted the new graph */
    RT_UPDATE_REINSTANTIATED /* it refused (topology changed): instantiated afresh */
} rt_update_kind;

/* Makes the exec run `src` (same context): in place where the driver accepts it, else by
 * instantiating src again. Afterwards the exec belongs to src. */
int rt_exec_update(rt_exec *e, rt_graph *src, rt_update_kind *how, lm_err *err);

/* Launches the exec on the stream: the one graph launch site. */
int rt_exec_launch(rt_exec *e, lm_err *err);

/* ------------------------------------------------------------------------------------
 * Timing
 * ---------------------------------------------------------------------------------- */

#define RT_MAX_TRIALS 10000 /* rt_time_opts.trials */

typedef struct rt_time_opts {
    uint32_t warmup;   /* launches before timing; default 3 */
    uint32_t trials;   /* timed trials, 1..RT_MAX_TRIALS; default 10 */
    uint32_t reps;     /* launches per trial; default 1 */
    double timeout_ms; /* wall-clock limit for the whole measurement; default 10000 */
} rt_time_opts;

typedef struct rt_timing {
    double median_ms; /* median over trials of (trial time / reps) */
    double min_ms, max_ms;
    uint32_t trials, reps;
} rt_timing;

void rt_time_opts_default(rt_time_opts *o);

/* Times the exec with CUDA events: warm-up launches, then `trials` trials of `reps`
 * replays each between two events; returns the median per replay. Always runs: nothing is
 * cached. Past the timeout fails with RT_ETIMEOUT (the work may still be running: reset). */
int rt_exec_time(rt_exec *e, const rt_time_opts *o, rt_timing *out, lm_err *err);

/* ------------------------------------------------------------------------------------
 * cuBLASLt matmuls
 *
 * D = epilogue(alpha * op(A) op(B) + beta * C (+ bias)), op(A) m x k, op(B) k x n,
 * C and D m x n, over `batch` matrices at the given element strides.
 * ---------------------------------------------------------------------------------- */

typedef enum rt_dtype { RT_F32, RT_F16, RT_BF16, RT_F8_E4M3, RT_F8_E5M2 } rt_dtype;
typedef enum rt_compute {
    RT_COMPUTE_F32, /* f32 accumulation (the only one for f16, bf16 and fp8 inputs) */
    RT_COMPUTE_TF32 /* f32 inputs multiplied as tf32, f32 accumulation */
} rt_compute;
typedef enum rt_order { RT_COL_MAJOR, RT_ROW_MAJOR } rt_order;
typedef enum rt_epilogue {
    RT_EPI_NONE,
    RT_EPI_BIAS,
    RT_EPI_RELU,
    RT_EPI_GELU,
    RT_EPI_BIAS_RELU,
    RT_EPI_BIAS_GELU
} rt_epilogue;

typedef struct rt_matmul_spec {
    int64_t m, n, k;
    int32_t batch;                                  /* >= 1 */
    int64_t stride_a, stride_b, stride_c, stride_d; /* elements between matrices */
    rt_order order_a, order_b;                      /* storage order of A and B */
    rt_order order_d;                               /* storage order of C and D */
    bool trans_a, trans_b;                   /* op(A) = A^T when trans_a: A is stored k x m */
    int64_t lda, ldb, ldc, ldd;              /* leading dimensions in elements */
    rt_dtype type_a, type_b, type_c, type_d; /* type_c: type of C */
    rt_compute compute;
    float alpha, beta; /* compared and hashed by bits */
    rt_epilogue epilogue;
    rt_dtype type_bias;             /* bias vector type (with a bias epilogue) */
    bool scale_a, scale_b, scale_d; /* fp8 only: device f32 scale pointers given at enqueue */
} rt_matmul_spec;

/* A packed batch-1 problem: all matrices row-major, no transposes, lds and strides packed,
 * A, B, C, D and the bias of `type` (f32 computes in f32), alpha 1, beta 0, no epilogue.
 * For fp8 `type`: C, D and the bias are bf16, and B is stored n x k with trans_b (the
 * "TN" form cuBLASLt needs for fp8); no scales. Cannot fail. */
void rt_matmul_spec_init(rt_matmul_spec *s, int64_t m, int64_t n, int64_t k, rt_dtype type);

/* Field by field (alpha and beta by bits). */
bool rt_matmul_spec_equal(const rt_matmul_spec *a, const rt_matmul_spec *b);
/* xxHash of the fields (not of the struct's bytes, so padding never matters). */
uint64_t rt_matmul_spec_hash(const rt_matmul_spec *s);
/* Validates: sizes, leading dimensions against the stored shapes, strides (with batch > 1:
 * A and B any stride >= 0, so their batches may overlap; C one matrix or more, or 0; D one
 * matrix or more), type and compute combinations, fp8 rules. Fails with RT_EARG naming
 * the field. */
int rt_matmul_spec_check(const rt_matmul_spec *s, lm_err *err);
/* Bytes of one element. */
size_t rt_dtype_size(rt_dtype t);

/* A heuristic cache keyed by spec, device and cuBLASLt version, shareable between
 * contexts (see rt_options.blas_cache). Returns NULL only when out of memory. */
rt_blas_cache *rt_blas_cache_new(void);
/* Every context borrowing the cache must be freed first. Accepts NULL. */
void rt_blas_cache_free(rt_blas_cache *c);

typedef struct rt_matmul rt_matmul; /* prepared; owned by the context */

/* Prepares a matmul: descriptors, layouts, the heuristic's algorithm (from the cache when
 * the spec, device and library version match) and the workspace size it needs. A matmul
 * already prepared for an equal spec is returned again. Valid until reset or free. */
int rt_matmul_prepare(rt_ctx *ctx, const rt_matmul_spec *s, rt_matmul **out, lm_err *err);
/* Workspace bytes enqueue needs (0 allowed). */
size_t rt_matmul_workspace(const rt_matmul *mm);
const rt_matmul_spec *rt_matmul_get_spec(const rt_matmul *mm);

typedef struct rt_matmul_args {
    rt_dptr a, b, c, d;                /* c may equal d; c is read only when beta != 0 */
    rt_dptr bias;                      /* with a bias epilogue */
    rt_dptr scale_a, scale_b, scale_d; /* fp8 scales (device f32) when the spec asks */
    rt_dptr workspace;                 /* at least rt_matmul_workspace() bytes, 256-aligned */
    size_t workspace_bytes;
} rt_matmul_args;

/* Sets the pointers and calls the matmul on the stream. Never allocates, copies or
 * synchronizes, so it can be captured. */
int rt_matmul_enqueue(rt_ctx *ctx, rt_matmul *mm, const rt_matmul_args *a, lm_err *err);

typedef struct rt_matmul_tuning {
    uint32_t offered;   /* algorithms the heuristic offered */
    uint32_t tried;     /* of them, timed (those whose workspace fits) */
    int chosen;         /* index among the offered now in use; -1: prepare's choice kept */
    double prepared_ms; /* per call, prepare's algorithm */
    double first_ms;    /* per call, the heuristic's first offer */
    double best_ms;     /* per call, the algorithm now in use */
} rt_matmul_tuning;

#define RT_MAX_TUNE_ALGOS 32 /* algorithms rt_matmul_tune measures at most */

/* Measures up to max_algos (1..RT_MAX_TUNE_ALGOS) of the heuristic's algorithms on the given
 * buffers (workspace_bytes bounds the workspace they may use) with CUDA events, and keeps the
 * fastest if it beats the one prepare chose; the heuristic cache then remembers it.
 * Runs matmuls (overwrites d) and synchronizes: call it outside captures, before graphs
 * that use mm are built. rt_matmul_workspace() may grow: size workspaces after. */
int rt_matmul_tune(rt_ctx *ctx, rt_matmul *mm, const rt_matmul_args *a, uint32_t max_algos,
                   rt_matmul_tuning *out, lm_err *err);

/* Loads cuBLASLt if needed and reports the file it came from and cublasLtGetVersion(). */
int rt_blas_info(rt_ctx *ctx, char *path, size_t path_size, size_t *version, lm_err *err);

typedef struct rt_blas_stats {
    uint64_t heuristic_calls; /* cublasLtMatmulAlgoGetHeuristic calls */
    uint64_t heuristic_hits;  /* algorithm found in the cache */
    uint64_t prepared_hits;   /* prepare returned an existing matmul */
    uint64_t prepared_misses;
} rt_blas_stats;
void rt_blas_stats_get(const rt_ctx *ctx, rt_blas_stats *out);

/* Plans workspaces for n matmul calls in one graph: call i needs sizes[i] bytes; deps are
 * pairs (a, b) meaning call b depends on call a (directly). Two calls share workspace
 * bytes only when one depends on the other (transitively); calls are numbered in an
 * order consistent with deps (a < b). Offsets are 256-aligned; *peak is the total. */
int rt_matmul_workspace_plan(const uint64_t *sizes, uint32_t n, const rt_arena_pair *deps,
                             uint32_t ndeps, uint64_t *offsets, uint64_t *peak, lm_err *err);

#endif /* LUMINAL_CUDA_RT_H */
