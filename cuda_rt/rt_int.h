/* rt_int.h: cuda_rt's private header, shared by the module's files and nobody else.
 *
 * The driver and cuBLASLt are reached only through two function tables, rt_drv and
 * rt_blaslib. Each entry takes `self` first; rt_drv_cuda.c fills the tables with thin
 * wrappers over the functions that cuGetProcAddress / dlsym found, rt_drv_mock.c with the
 * mock's recording implementations. Nothing else in the module knows which one it has.
 */
#ifndef LUMINAL_CUDA_RT_INT_H
#define LUMINAL_CUDA_RT_INT_H

#include "cuda_rt.h"

#include <cuda.h>
#include <cublasLt.h>
#include <stdarg.h>

/* ---- the driver table ---------------------------------------------------------- */

typedef struct rt_drv {
    void *self;
    char lib[64]; /* "libcuda.so.1" or "mock" */
    int version;  /* cuDriverGetVersion */
    CUresult (*init)(void *s, unsigned flags);
    CUresult (*driver_version)(void *s, int *v);
    CUresult (*device_count)(void *s, int *n);
    CUresult (*device_get)(void *s, CUdevice *d, int ordinal);
    CUresult (*device_attr)(void *s, int *v, CUdevice_attribute a, CUdevice d);
    CUresult (*device_name)(void *s, char *name, int len, CUdevice d);
    CUresult (*device_total_mem)(void *s, size_t *bytes, CUdevice d);
    CUresult (*primary_retain)(void *s, CUcontext *c, CUdevice d);
    CUresult (*primary_release)(void *s, CUdevice d);
    CUresult (*primary_reset)(void *s, CUdevice d);
    CUresult (*ctx_set_current)(void *s, CUcontext c);
    CUresult (*ctx_sync)(void *s);
    CUresult (*stream_create)(void *s, CUstream *st, unsigned flags);
    CUresult (*stream_destroy)(void *s, CUstream st);
    CUresult (*stream_sync)(void *s, CUstream st);
    CUresult (*mem_alloc)(void *s, CUdeviceptr *p, size_t bytes);
    CUresult (*mem_free)(void *s, CUdeviceptr p);
    CUresult (*host_alloc)(void *s, void **p, size_t bytes);
    CUresult (*host_free)(void *s, void *p);
    CUresult (*copy_htod)(void *s, CUdeviceptr dst, const void *src, size_t n, CUstream st);
    CUresult (*copy_dtoh)(void *s, void *dst, CUdeviceptr src, size_t n, CUstream st);
    CUresult (*copy_dtod)(void *s, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st);
    CUresult (*memset8)(void *s, CUdeviceptr dst, unsigned char v, size_t n, CUstream st);
    CUresult (*module_load)(void *s, CUmodule *m, const void *image);
    CUresult (*module_unload)(void *s, CUmodule m);
    CUresult (*module_func)(void *s, CUfunction *f, CUmodule m, const char *name);
    CUresult (*launch)(void *s, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shm, CUstream st, void **params,
                       void **extra);
    CUresult (*graph_create)(void *s, CUgraph *g, unsigned flags);
    CUresult (*graph_destroy)(void *s, CUgraph g);
    CUresult (*graph_add_kernel)(void *s, CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
                                 size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p);
    CUresult (*graph_add_child)(void *s, CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
                                size_t ndeps, CUgraph child);
    CUresult (*graph_kernel_set)(void *s, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p);
    CUresult (*graph_instantiate)(void *s, CUgraphExec *e, CUgraph g, unsigned long long fl);
    CUresult (*exec_destroy)(void *s, CUgraphExec e);
    CUresult (*exec_kernel_set)(void *s, CUgraphExec e, CUgraphNode n,
                                const CUDA_KERNEL_NODE_PARAMS *p);
    CUresult (*exec_update)(void *s, CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info);
    CUresult (*graph_launch)(void *s, CUgraphExec e, CUstream st);
    CUresult (*capture_begin)(void *s, CUstream st, CUstreamCaptureMode mode);
    /* NULL where the driver lacks cuStreamBeginCaptureToGraph */
    CUresult (*capture_begin_to_graph)(void *s, CUstream st, CUgraph g, const CUgraphNode *deps,
                                       const CUgraphEdgeData *edata, size_t ndeps,
                                       CUstreamCaptureMode mode);
    CUresult (*capture_end)(void *s, CUstream st, CUgraph *g);
    CUresult (*capture_info)(void *s, CUstream st, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *g, const CUgraphNode **deps, const CUgraphEdgeData **edata,
                             size_t *ndeps);
    CUresult (*event_create)(void *s, CUevent *ev, unsigned flags);
    CUresult (*event_destroy)(void *s, CUevent ev);
    CUresult (*event_record)(void *s, CUevent ev, CUstream st);
    CUresult (*event_query)(void *s, CUevent ev);
    CUresult (*event_sync)(void *s, CUevent ev);
    CUresult (*event_elapsed)(void *s, float *ms, CUevent a, CUevent b);
    CUresult (*func_set_attr)(void *s, CUfunction f, CUfunction_attribute a, int v);
    CUresult (*error_name)(void *s, CUresult r, const char **name);
    CUresult (*error_string)(void *s, CUresult r, const char **str);
} rt_drv;

/* ---- the cuBLASLt table ---------------------------------------------------------- */

typedef struct rt_blaslib {
    void *self;
    char lib[512]; /* the file loaded, or "mock" */
    size_t version;
    cublasStatus_t (*create)(void *s, cublasLtHandle_t *h);
    cublasStatus_t (*destroy)(void *s, cublasLtHandle_t h);
    cublasStatus_t (*desc_create)(void *s, cublasLtMatmulDesc_t *d, cublasComputeType_t ct,
                                  cudaDataType_t scale);
    cublasStatus_t (*desc_destroy)(void *s, cublasLtMatmulDesc_t d);
    cublasStatus_t (*desc_set)(void *s, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                               const void *buf, size_t size);
    cublasStatus_t (*layout_create)(void *s, cublasLtMatrixLayout_t *l, cudaDataType_t t,
                                    uint64_t rows, uint64_t cols, int64_t ld);
    cublasStatus_t (*layout_destroy)(void *s, cublasLtMatrixLayout_t l);
    cublasStatus_t (*layout_set)(void *s, cublasLtMatrixLayout_t l,
                                 cublasLtMatrixLayoutAttribute_t a, const void *buf, size_t size);
    cublasStatus_t (*pref_create)(void *s, cublasLtMatmulPreference_t *p);
    cublasStatus_t (*pref_destroy)(void *s, cublasLtMatmulPreference_t p);
    cublasStatus_t (*pref_set)(void *s, cublasLtMatmulPreference_t p,
                               cublasLtMatmulPreferenceAttributes_t a, const void *buf,
                               size_t size);
    cublasStatus_t (*heuristic)(void *s, cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
                                cublasLtMatmulPreference_t p, int requested,
                                cublasLtMatmulHeuristicResult_t *results, int *returned);
    cublasStatus_t (*matmul)(void *s, cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                             const void *A, cublasLtMatrixLayout_t ad, const void *B,
                             cublasLtMatrixLayout_t bd, const void *beta, const void *C,
                             cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
                             const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes,
                             CUstream st);
} rt_blaslib;

/* rt_drv_cuda.c: the real libraries. Each returns 0, or RT_ENODEV / RT_EBLAS with a message.
 * The handle (dlopen's) is stored in *dl; it is never closed (see rt_ctx_free). */
int rt__drv_load(rt_drv *d, void **dl, lm_err *err);
int rt__blaslib_load(const char *lib_dir, rt_blaslib *b, void **dl, lm_err *err);
void rt__drv_unload(rt_drv *d);
void rt__blaslib_unload(rt_blaslib *b);
/* dlopen the first of names[] found in lib_dir, $LUMINAL_CUDA_LIB_DIR, the loader path,
 * /usr/local/cuda/lib64; `tried` receives what was tried (for messages). */
void *rt__dl_open_any(const char *lib_dir, const char *const *names, char *tried,
                      size_t tried_size);
#define RT_DL_TRIED 1024 /* bytes of the "tried" list rt__dl_open_any writes */
/* A function a library must have: its name and the function-pointer variable (of any
 * type) that receives it. */
typedef struct rt_dl_fn {
    const char *name;
    void *slot;  /* &the variable */
    size_t size; /* sizeof the variable */
} rt_dl_fn;
/* Looks every fns[0..n) up with dlsym (without the object/function pointer cast that
 * -Wpedantic forbids: the address bytes are copied into the variable). Returns the name
 * of the first one missing, or NULL when all were found. */
const char *rt__dl_fns(void *dl, const rt_dl_fn *fns, size_t n);

/* rt_drv_mock.c */
void rt__mock_fill(rt_mock *m, rt_drv *d, rt_blaslib *b);
CUgraphNode rt__graph_cu_node(const rt_graph *g, uint32_t node);
CUgraph rt__graph_cu(const rt_graph *g);
CUgraphExec rt__exec_cu(const rt_exec *e);
rt_ctx *rt__exec_ctx(const rt_exec *e);

/* ---- errors and memory (rt_err.c) ----------------------------------------------------- */

/* The one door every error of the module goes through, with one location argument (loc
 * may be NULL): sets err (if empty) to code and the formatted message, through base's
 * lm_err_set; returns code, or the code err already held (the first error wins). A
 * cuda_rt location is where in cuda_rt the error was raised (rt__at: the source file and
 * line), which ends the message as " [cuda_rt/<file>:<line>]" (it is not a place in the
 * user's input, so it is not recorded as the error's file); a node or field in loc is
 * recorded as usual. RT_FAIL raises at the line it is written on. */
int rt__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The location of a line of cuda_rt's source, for rt__fail; valid in the enclosing block. */
#define rt__at(f, l) (&(lm_loc){.file = (f), .line = (uint32_t)(l), .node_id = LM_NONE})
#define RT_FAIL(err, code, ...) rt__fail((err), (code), rt__at(__FILE__, __LINE__), __VA_ARGS__)

/* Name of a CUresult ("CUDA_ERROR_OUT_OF_MEMORY"), from the driver when it knows, else
 * from a built-in table; never NULL. */
const char *rt__cu_name(const rt_drv *d, CUresult r);
/* Remedy for a CUresult: one sentence, never NULL. */
const char *rt__cu_remedy(CUresult r);
/* True for errors that poison the context (illegal address, launch failure, ...). */
bool rt__cu_sticky(CUresult r);
const char *rt__blas_status_name(cublasStatus_t s);

/* Allocation: the one door; overflow-checked; counts into rt_debug_host_allocs. */
void *rt__alloc(size_t n, size_t size); /* zeroed; NULL on failure or overflow */
void *rt__realloc(void *p, size_t n, size_t size);
void rt__free(void *p);
char *rt__strdup(const char *s);

/* ---- the context ------------------------------------------------------------------- */

typedef struct rt_kernel_entry rt_kernel_entry; /* rt_module.c */
typedef struct rt_blas_state rt_blas_state;     /* rt_blas.c */

struct rt_ctx {
    rt_drv drv;
    void *drv_dl;  /* dlopen handle of libcuda, NULL for the mock */
    rt_mock *mock; /* borrowed, NULL for the real driver */
    rt_options opt;
    char *lib_dir; /* owned copy of opt.lib_dir */
    rt_device_info info;
    CUdevice dev;
    CUcontext cu;
    uint32_t refs; /* primary-context references taken (released by close) */
    CUstream stream;
    uint32_t gen;  /* bumped by reset */
    bool poisoned; /* a sticky fault was seen: only reset helps */
    char poison_msg[256];
    rt_nvrtc *nvrtc;           /* loaded on first use */
    rt_kernel_entry **kernels; /* module cache, in insertion order */
    uint32_t nkernels, kernels_cap;
    uint64_t kernel_hits, kernel_misses;
    rt_blas_state *blas; /* loaded on first use */
    rt_blaslib blaslib;
    void *blas_dl;
    bool blas_loaded;
    rt_blas_cache *blas_cache; /* borrowed or owned (own_cache) */
    rt_blas_stats blas_stats;  /* survive resets */
    bool own_cache;
};

/* Checks a driver result. On failure fills err with "<call> failed: NAME (description)
 * ... fix: ..." where call is the formatted text (the call and its sizes); a sticky fault
 * poisons the context and gives RT_EFAULT. Returns 0 or the code. */
int rt__cu_check(rt_ctx *ctx, lm_err *err, CUresult r, const char *file, int line, const char *fmt,
                 ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
#define RT_CU(ctx, err, res, ...) rt__cu_check((ctx), (err), (res), __FILE__, __LINE__, __VA_ARGS__)

/* Refuses work on a poisoned context (RT_EFAULT) or sticky err. */
int rt__ctx_usable(rt_ctx *ctx, lm_err *err);
/* Loads NVRTC / cuBLASLt on first use. */
int rt__ctx_nvrtc(rt_ctx *ctx, lm_err *err);
int rt__ctx_blas(rt_ctx *ctx, lm_err *err);
/* Drops what depends on the primary context (module cache, prepared matmuls). */
void rt__kernels_drop(rt_ctx *ctx, bool unload);
void rt__blas_drop(rt_ctx *ctx, bool destroy);

/* rt_blas_desc.c: the spec mapped onto cuBLASLt's column-major problem. When D is row-major
 * the problem is transposed (D^T = op(B)^T op(A)^T), so cuBLASLt's A is our B. */
typedef struct rt_lt_operand {
    cudaDataType_t type;
    uint64_t rows, cols; /* of the stored matrix, column-major */
    int64_t ld, stride;
    cublasOperation_t op;
} rt_lt_operand;
typedef struct rt_lt_problem {
    bool swapped; /* cuBLASLt's A is our B */
    rt_lt_operand a, b, c, d;
    cublasComputeType_t compute;
    cublasLtEpilogue_t epilogue;
    cudaDataType_t bias_type;
} rt_lt_problem;
void rt__lt_problem(const rt_matmul_spec *s, rt_lt_problem *p);
cudaDataType_t rt__cuda_type(rt_dtype t);
bool rt__epi_has_bias(rt_epilogue e);

/* rt_module.c */
CUfunction rt__kernel_fn(const rt_kernel *k);
const char *rt__kernel_name(const rt_kernel *k);
/* Checks a launch (a kernel, nonzero grid and block, at most RT_MAX_KERNEL_ARGS arguments
 * of 1..RT_MAX_ARG_BYTES bytes, RT_MAX_ARG_BYTES in all counting each argument's slot);
 * `what` starts the message ("kernel launch", "kernel node"). For direct launches and
 * kernel nodes alike. */
int rt__launch_check(const rt_launch *l, const char *what, lm_err *err);
/* Raises l's kernel's dynamic shared memory limit to l->shared_bytes when that is more than
 * RT_SHARED_DEFAULT and than the limit set so far (before a launch, a kernel node, a node
 * update). */
int rt__kernel_shared(rt_ctx *ctx, const rt_launch *l, lm_err *err);
#define RT_ARG_ALIGN 16 /* each argument's slot in a node's copy is aligned to this */
/* Bytes an argument of `size` bytes takes in a node's copy (a multiple of RT_ARG_ALIGN). */
size_t rt__arg_slot(size_t size);

#endif /* LUMINAL_CUDA_RT_INT_H */
