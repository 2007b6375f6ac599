/* rt_drv_cuda.c: the real driver and the real cuBLASLt, loaded at run time.
 *
 * libcuda.so.1 is opened with dlopen; only cuGetProcAddress is looked up by name, every
 * other entry point comes from it at the version this module was written against
 * (CUDA_VERSION of the headers), so the ABI of each function matches the prototype we
 * call it through. cuBLASLt is opened the same way (dlsym, its ABI is stable within a
 * major version). The tables' entries are thin wrappers that drop `self`; the sibling
 * file rt_drv_mock.c fills the same tables with the mock.
 */
#define _GNU_SOURCE /* dladdr, to report which library file was loaded */
#include "rt_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dlopen helpers ------------------------------------------------------------------ */

static int dl_sym(void *dl, const char *name, void *fn, size_t fn_size)
{
    void *p = dlsym(dl, name);
    if (!p || fn_size != sizeof p) return -1;
    memcpy(fn, &p, sizeof p); /* object -> function pointer without a pedantic cast */
    return 0;
}

const char *rt__dl_fns(void *dl, const rt_dl_fn *fns, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (dl_sym(dl, fns[i].name, fns[i].slot, fns[i].size) != 0) return fns[i].name;
    return NULL;
}

static void *try_open(const char *dir, const char *name, char *tried, size_t tried_size)
{
    char path[1024];
    if (dir && *dir)
        snprintf(path, sizeof path, "%s/%s", dir, name);
    else
        snprintf(path, sizeof path, "%s", name);
    /* append "path" (", path" after the first) to tried, cut at its end */
    size_t used = strlen(tried);
    const char *parts[2] = {used ? ", " : "", path};
    for (int i = 0; i < 2; i++)
        for (const char *c = parts[i]; *c && used + 1 < tried_size; c++)
            tried[used++] = *c;
    tried[used] = '\0';
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

void *rt__dl_open_any(const char *lib_dir, const char *const *names, char *tried, size_t tried_size)
{
    const char *dirs[4] = {lib_dir, getenv("LUMINAL_CUDA_LIB_DIR"), "", "/usr/local/cuda/lib64"};
    tried[0] = '\0';
    for (int d = 0; d < 4; d++) {
        if (d != 2 && (!dirs[d] || !*dirs[d])) continue;
        for (int i = 0; names[i]; i++) {
            void *h = try_open(dirs[d], names[i], tried, tried_size);
            if (h) return h;
        }
    }
    return NULL;
}

/* ---- the driver ------------------------------------------------------------------- */

/* The raw entry points, typed as the CUDA 12/13 headers declare them. */
typedef struct raw_cuda {
    CUresult (*init)(unsigned);
    CUresult (*driver_version)(int *);
    CUresult (*device_count)(int *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_attr)(int *, CUdevice_attribute, CUdevice);
    CUresult (*device_name)(char *, int, CUdevice);
    CUresult (*device_total_mem)(size_t *, CUdevice);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*primary_release)(CUdevice);
    CUresult (*primary_reset)(CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_sync)(void);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_sync)(CUstream);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*host_alloc)(void **, size_t);
    CUresult (*host_free)(void *);
    CUresult (*copy_htod)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*copy_dtoh)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*copy_dtod)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*module_load)(CUmodule *, const void *);
    CUresult (*module_unload)(CUmodule);
    CUresult (*module_func)(CUfunction *, CUmodule, const char *);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **);
    CUresult (*graph_create)(CUgraph *, unsigned);
    CUresult (*graph_destroy)(CUgraph);
    CUresult (*graph_add_kernel)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                 const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*graph_add_child)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph);
    CUresult (*graph_kernel_set)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*graph_instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*exec_destroy)(CUgraphExec);
    CUresult (*exec_kernel_set)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*exec_update)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*capture_begin)(CUstream, CUstreamCaptureMode);
    CUresult (*capture_begin_to_graph)(CUstream, CUgraph, const CUgraphNode *,
                                       const CUgraphEdgeData *, size_t, CUstreamCaptureMode);
    CUresult (*capture_end)(CUstream, CUgraph *);
    CUresult (*capture_info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                             const CUgraphNode **, const CUgraphEdgeData **, size_t *);
    CUresult (*event_create)(CUevent *, unsigned);
    CUresult (*event_destroy)(CUevent);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_query)(CUevent);
    CUresult (*event_sync)(CUevent);
    CUresult (*event_elapsed)(float *, CUevent, CUevent);
    CUresult (*func_set_attr)(CUfunction, CUfunction_attribute, int);
    CUresult (*error_name)(CUresult, const char **);
    CUresult (*error_string)(CUresult, const char **);
} raw_cuda;

#define R(s) ((raw_cuda *)(s))

static CUresult w_init(void *s, unsigned f)
{
    return R(s)->init(f);
}
static CUresult w_driver_version(void *s, int *v)
{
    return R(s)->driver_version(v);
}
static CUresult w_device_count(void *s, int *n)
{
    return R(s)->device_count(n);
}
static CUresult w_device_get(void *s, CUdevice *d, int o)
{
    return R(s)->device_get(d, o);
}
static CUresult w_device_attr(void *s, int *v, CUdevice_attribute a, CUdevice d)
{
    return R(s)->device_attr(v, a, d);
}
static CUresult w_device_name(void *s, char *n, int l, CUdevice d)
{
    return R(s)->device_name(n, l, d);
}
static CUresult w_device_total_mem(void *s, size_t *b, CUdevice d)
{
    return R(s)->device_total_mem(b, d);
}
static CUresult w_primary_retain(void *s, CUcontext *c, CUdevice d)
{
    return R(s)->primary_retain(c, d);
}
static CUresult w_primary_release(void *s, CUdevice d)
{
    return R(s)->primary_release(d);
}
static CUresult w_primary_reset(void *s, CUdevice d)
{
    return R(s)->primary_reset(d);
}
static CUresult w_ctx_set_current(void *s, CUcontext c)
{
    return R(s)->ctx_set_current(c);
}
static CUresult w_ctx_sync(void *s)
{
    return R(s)->ctx_sync();
}
static CUresult w_stream_create(void *s, CUstream *st, unsigned f)
{
    return R(s)->stream_create(st, f);
}
static CUresult w_stream_destroy(void *s, CUstream st)
{
    return R(s)->stream_destroy(st);
}
static CUresult w_stream_sync(void *s, CUstream st)
{
    return R(s)->stream_sync(st);
}
static CUresult w_mem_alloc(void *s, CUdeviceptr *p, size_t n)
{
    return R(s)->mem_alloc(p, n);
}
static CUresult w_mem_free(void *s, CUdeviceptr p)
{
    return R(s)->mem_free(p);
}
static CUresult w_host_alloc(void *s, void **p, size_t n)
{
    return R(s)->host_alloc(p, n);
}
static CUresult w_host_free(void *s, void *p)
{
    return R(s)->host_free(p);
}
static CUresult w_copy_htod(void *s, CUdeviceptr d, const void *h, size_t n, CUstream st)
{
    return R(s)->copy_htod(d, h, n, st);
}
static CUresult w_copy_dtoh(void *s, void *h, CUdeviceptr d, size_t n, CUstream st)
{
    return R(s)->copy_dtoh(h, d, n, st);
}
static CUresult w_copy_dtod(void *s, CUdeviceptr d, CUdeviceptr x, size_t n, CUstream st)
{
    return R(s)->copy_dtod(d, x, n, st);
}
static CUresult w_memset8(void *s, CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
    return R(s)->memset8(d, v, n, st);
}
static CUresult w_module_load(void *s, CUmodule *m, const void *img)
{
    return R(s)->module_load(m, img);
}
static CUresult w_module_unload(void *s, CUmodule m)
{
    return R(s)->module_unload(m);
}
static CUresult w_module_func(void *s, CUfunction *f, CUmodule m, const char *n)
{
    return R(s)->module_func(f, m, n);
}
static CUresult w_launch(void *s, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned shm, CUstream st, void **p, void **e)
{
    return R(s)->launch(f, gx, gy, gz, bx, by, bz, shm, st, p, e);
}
static CUresult w_graph_create(void *s, CUgraph *g, unsigned f)
{
    return R(s)->graph_create(g, f);
}
static CUresult w_graph_destroy(void *s, CUgraph g)
{
    return R(s)->graph_destroy(g);
}
static CUresult w_graph_add_kernel(void *s, CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                   size_t nd, const CUDA_KERNEL_NODE_PARAMS *p)
{
    return R(s)->graph_add_kernel(n, g, d, nd, p);
}
static CUresult w_graph_add_child(void *s, CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                  size_t nd, CUgraph c)
{
    return R(s)->graph_add_child(n, g, d, nd, c);
}
static CUresult w_graph_kernel_set(void *s, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    return R(s)->graph_kernel_set(n, p);
}
static CUresult w_graph_instantiate(void *s, CUgraphExec *e, CUgraph g, unsigned long long f)
{
    return R(s)->graph_instantiate(e, g, f);
}
static CUresult w_exec_destroy(void *s, CUgraphExec e)
{
    return R(s)->exec_destroy(e);
}
static CUresult w_exec_kernel_set(void *s, CUgraphExec e, CUgraphNode n,
                                  const CUDA_KERNEL_NODE_PARAMS *p)
{
    return R(s)->exec_kernel_set(e, n, p);
}
static CUresult w_exec_update(void *s, CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *i)
{
    return R(s)->exec_update(e, g, i);
}
static CUresult w_graph_launch(void *s, CUgraphExec e, CUstream st)
{
    return R(s)->graph_launch(e, st);
}
static CUresult w_capture_begin(void *s, CUstream st, CUstreamCaptureMode m)
{
    return R(s)->capture_begin(st, m);
}
static CUresult w_capture_begin_to_graph(void *s, CUstream st, CUgraph g, const CUgraphNode *d,
                                         const CUgraphEdgeData *e, size_t nd, CUstreamCaptureMode m)
{
    return R(s)->capture_begin_to_graph(st, g, d, e, nd, m);
}
static CUresult w_capture_end(void *s, CUstream st, CUgraph *g)
{
    return R(s)->capture_end(st, g);
}
static CUresult w_capture_info(void *s, CUstream st, CUstreamCaptureStatus *cs, cuuint64_t *id,
                               CUgraph *g, const CUgraphNode **d, const CUgraphEdgeData **e,
                               size_t *nd)
{
    return R(s)->capture_info(st, cs, id, g, d, e, nd);
}
static CUresult w_event_create(void *s, CUevent *e, unsigned f)
{
    return R(s)->event_create(e, f);
}
static CUresult w_event_destroy(void *s, CUevent e)
{
    return R(s)->event_destroy(e);
}
static CUresult w_event_record(void *s, CUevent e, CUstream st)
{
    return R(s)->event_record(e, st);
}
static CUresult w_event_query(void *s, CUevent e)
{
    return R(s)->event_query(e);
}
static CUresult w_event_sync(void *s, CUevent e)
{
    return R(s)->event_sync(e);
}
static CUresult w_event_elapsed(void *s, float *ms, CUevent a, CUevent b)
{
    return R(s)->event_elapsed(ms, a, b);
}
static CUresult w_func_set_attr(void *s, CUfunction f, CUfunction_attribute a, int v)
{
    return R(s)->func_set_attr(f, a, v);
}
static CUresult w_error_name(void *s, CUresult r, const char **n)
{
    return R(s)->error_name(r, n);
}
static CUresult w_error_string(void *s, CUresult r, const char **n)
{
    return R(s)->error_string(r, n);
}

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

/* Looks `name` up through cuGetProcAddress into *slot (a function pointer of any type). */
static int proc(get_proc_fn gp, const char *name, void *slot, bool optional, lm_err *err)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r = gp(name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    if (r != CUDA_SUCCESS || !p || st != CU_GET_PROC_ADDRESS_SUCCESS) {
        if (optional) return 0;
        return RT_FAIL(err, RT_ENODEV,
                       "no CUDA device: cuGetProcAddress(\"%s\", version %d) found nothing "
                       "(result %d, status %d); fix: install an NVIDIA driver for CUDA %d or newer",
                       name, CUDA_VERSION, (int)r, (int)st, CUDA_VERSION / 1000);
    }
    memcpy(slot, &p, sizeof p);
    return 0;
}

int rt__drv_load(rt_drv *d, void **dl_out, lm_err *err)
{
    *dl_out = NULL;
    char tried[512];
    const char *names[] = {"libcuda.so.1", NULL};
    tried[0] = '\0';
    void *dl = try_open(NULL, names[0], tried, sizeof tried);
    if (!dl)
        return RT_FAIL(err, RT_ENODEV,
                       "no CUDA device: dlopen(\"libcuda.so.1\") failed (%s); fix: run on a "
                       "machine with an NVIDIA GPU and driver, or use the CPU paths",
                       dlerror());
    get_proc_fn gp = NULL;
    if (dl_sym(dl, "cuGetProcAddress_v2", &gp, sizeof gp) != 0) {
        dlclose(dl);
        return RT_FAIL(err, RT_ENODEV,
                       "no CUDA device: libcuda.so.1 has no cuGetProcAddress_v2; fix: install a "
                       "driver for CUDA 12 or newer");
    }
    raw_cuda *r = rt__alloc(1, sizeof *r);
    if (!r) {
        dlclose(dl);
        return RT_FAIL(err, RT_ENOMEM, "out of memory loading the driver table");
    }
    struct {
        const char *name;
        void *slot;
        bool optional;
    } syms[] = {
        {"cuInit", &r->init, false},
        {"cuDriverGetVersion", &r->driver_version, false},
        {"cuDeviceGetCount", &r->device_count, false},
        {"cuDeviceGet", &r->device_get, false},
        {"cuDeviceGetAttribute", &r->device_attr, false},
        {"cuDeviceGetName", &r->device_name, false},
        {"cuDeviceTotalMem", &r->device_total_mem, false},
        {"cuDevicePrimaryCtxRetain", &r->primary_retain, false},
        {"cuDevicePrimaryCtxRelease", &r->primary_release, false},
        {"cuDevicePrimaryCtxReset", &r->primary_reset, false},
        {"cuCtxSetCurrent", &r->ctx_set_current, false},
        {"cuCtxSynchronize", &r->ctx_sync, false},
        {"cuStreamCreate", &r->stream_create, false},
        {"cuStreamDestroy", &r->stream_destroy, false},
        {"cuStreamSynchronize", &r->stream_sync, false},
        {"cuMemAlloc", &r->mem_alloc, false},
        {"cuMemFree", &r->mem_free, false},
        {"cuMemAllocHost", &r->host_alloc, false},
        {"cuMemFreeHost", &r->host_free, false},
        {"cuMemcpyHtoDAsync", &r->copy_htod, false},
        {"cuMemcpyDtoHAsync", &r->copy_dtoh, false},
        {"cuMemcpyDtoDAsync", &r->copy_dtod, false},
        {"cuMemsetD8Async", &r->memset8, false},
        {"cuModuleLoadData", &r->module_load, false},
        {"cuModuleUnload", &r->module_unload, false},
        {"cuModuleGetFunction", &r->module_func, false},
        {"cuLaunchKernel", &r->launch, false},
        {"cuGraphCreate", &r->graph_create, false},
        {"cuGraphDestroy", &r->graph_destroy, false},
        {"cuGraphAddKernelNode", &r->graph_add_kernel, false},
        {"cuGraphAddChildGraphNode", &r->graph_add_child, false},
        {"cuGraphKernelNodeSetParams", &r->graph_kernel_set, false},
        {"cuGraphInstantiateWithFlags", &r->graph_instantiate, false},
        {"cuGraphExecDestroy", &r->exec_destroy, false},
        {"cuGraphExecKernelNodeSetParams", &r->exec_kernel_set, false},
        {"cuGraphExecUpdate", &r->exec_update, false},
        {"cuGraphLaunch", &r->graph_launch, false},
        {"cuStreamBeginCapture", &r->capture_begin, false},
        {"cuStreamBeginCaptureToGraph", &r->capture_begin_to_graph, true},
        {"cuStreamEndCapture", &r->capture_end, false},
        {"cuStreamGetCaptureInfo", &r->capture_info, false},
        {"cuEventCreate", &r->event_create, false},
        {"cuEventDestroy", &r->event_destroy, false},
        {"cuEventRecord", &r->event_record, false},
        {"cuEventQuery", &r->event_query, false},
        {"cuEventSynchronize", &r->event_sync, false},
        {"cuEventElapsedTime", &r->event_elapsed, false},
        {"cuFuncSetAttribute", &r->func_set_attr, false},
        {"cuGetErrorName", &r->error_name, false},
        {"cuGetErrorString", &r->error_string, false},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        if (proc(gp, syms[i].name, syms[i].slot, syms[i].optional, err) != 0) {
            rt__free(r);
            dlclose(dl);
            return err ? err->code : RT_ENODEV;
        }
    }
    memset(d, 0, sizeof *d);
    d->self = r;
    snprintf(d->lib, sizeof d->lib, "libcuda.so.1");
    d->init = w_init;
    d->driver_version = w_driver_version;
    d->device_count = w_device_count;
    d->device_get = w_device_get;
    d->device_attr = w_device_attr;
    d->device_name = w_device_name;
    d->device_total_mem = w_device_total_mem;
    d->primary_retain = w_primary_retain;
    d->primary_release = w_primary_release;
    d->primary_reset = w_primary_reset;
    d->ctx_set_current = w_ctx_set_current;
    d->ctx_sync = w_ctx_sync;
    d->stream_create = w_stream_create;
    d->stream_destroy = w_stream_destroy;
    d->stream_sync = w_stream_sync;
    d->mem_alloc = w_mem_alloc;
    d->mem_free = w_mem_free;
    d->host_alloc = w_host_alloc;
    d->host_free = w_host_free;
    d->copy_htod = w_copy_htod;
    d->copy_dtoh = w_copy_dtoh;
    d->copy_dtod = w_copy_dtod;
    d->memset8 = w_memset8;
    d->module_load = w_module_load;
    d->module_unload = w_module_unload;
    d->module_func = w_module_func;
    d->launch = w_launch;
    d->graph_create = w_graph_create;
    d->graph_destroy = w_graph_destroy;
    d->graph_add_kernel = w_graph_add_kernel;
    d->graph_add_child = w_graph_add_child;
    d->graph_kernel_set = w_graph_kernel_set;
    d->graph_instantiate = w_graph_instantiate;
    d->exec_destroy = w_exec_destroy;
    d->exec_kernel_set = w_exec_kernel_set;
    d->exec_update = w_exec_update;
    d->graph_launch = w_graph_launch;
    d->capture_begin = w_capture_begin;
    d->capture_begin_to_graph = r->capture_begin_to_graph ? w_capture_begin_to_graph : NULL;
    d->capture_end = w_capture_end;
    d->capture_info = w_capture_info;
    d->event_create = w_event_create;
    d->event_destroy = w_event_destroy;
    d->event_record = w_event_record;
    d->event_query = w_event_query;
    d->event_sync = w_event_sync;
    d->event_elapsed = w_event_elapsed;
    d->func_set_attr = w_func_set_attr;
    d->error_name = w_error_name;
    d->error_string = w_error_string;
    *dl_out = dl;
    return 0;
}

void rt__drv_unload(rt_drv *d)
{
    rt__free(d->self);
    d->self = NULL;
}

/* ---- cuBLASLt --------------------------------------------------------------------- */

typedef struct raw_lt {
    cublasStatus_t (*create)(cublasLtHandle_t *);
    cublasStatus_t (*destroy)(cublasLtHandle_t);
    size_t (*get_version)(void);
    cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t);
    cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t);
    cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *,
                               size_t);
    cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t *, cudaDataType_t, uint64_t, uint64_t,
                                    int64_t);
    cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t);
    cublasStatus_t (*layout_set)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
                                 const void *, size_t);
    cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t *);
    cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t);
    cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                               const void *, size_t);
    cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                cublasLtMatmulHeuristicResult_t *, int *);
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                             cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t,
                             const void *, const void *, cublasLtMatrixLayout_t, void *,
                             cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                             cudaStream_t);
} raw_lt;

#define L(s) ((raw_lt *)(s))

static cublasStatus_t l_create(void *s, cublasLtHandle_t *h)
{
    return L(s)->create(h);
}
static cublasStatus_t l_destroy(void *s, cublasLtHandle_t h)
{
    return L(s)->destroy(h);
}
static cublasStatus_t l_desc_create(void *s, cublasLtMatmulDesc_t *d, cublasComputeType_t c,
                                    cudaDataType_t t)
{
    return L(s)->desc_create(d, c, t);
}
static cublasStatus_t l_desc_destroy(void *s, cublasLtMatmulDesc_t d)
{
    return L(s)->desc_destroy(d);
}
static cublasStatus_t l_desc_set(void *s, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                 const void *b, size_t n)
{
    return L(s)->desc_set(d, a, b, n);
}
static cublasStatus_t l_layout_create(void *s, cublasLtMatrixLayout_t *l, cudaDataType_t t,
                                      uint64_t r, uint64_t c, int64_t ld)
{
    return L(s)->layout_create(l, t, r, c, ld);
}
static cublasStatus_t l_layout_destroy(void *s, cublasLtMatrixLayout_t l)
{
    return L(s)->layout_destroy(l);
}
static cublasStatus_t l_layout_set(void *s, cublasLtMatrixLayout_t l,
                                   cublasLtMatrixLayoutAttribute_t a, const void *b, size_t n)
{
    return L(s)->layout_set(l, a, b, n);
}
static cublasStatus_t l_pref_create(void *s, cublasLtMatmulPreference_t *p)
{
    return L(s)->pref_create(p);
}
static cublasStatus_t l_pref_destroy(void *s, cublasLtMatmulPreference_t p)
{
    return L(s)->pref_destroy(p);
}
static cublasStatus_t l_pref_set(void *s, cublasLtMatmulPreference_t p,
                                 cublasLtMatmulPreferenceAttributes_t a, const void *b, size_t n)
{
    return L(s)->pref_set(p, a, b, n);
}
static cublasStatus_t l_heuristic(void *s, cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                  cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                  cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
                                  cublasLtMatmulPreference_t p, int req,
                                  cublasLtMatmulHeuristicResult_t *res, int *ret)
{
    return L(s)->heuristic(h, d, a, b, c, dl, p, req, res, ret);
}
static cublasStatus_t l_matmul(void *s, cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                               const void *alpha, const void *A, cublasLtMatrixLayout_t ad,
                               const void *B, cublasLtMatrixLayout_t bd, const void *beta,
                               const void *C, cublasLtMatrixLayout_t cd, void *D,
                               cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t *algo,
                               void *ws, size_t wsb, CUstream st)
{
    return L(s)->matmul(h, d, alpha, A, ad, B, bd, beta, C, cd, D, dd, algo, ws, wsb,
                        (cudaStream_t)st);
}

int rt__blaslib_load(const char *lib_dir, rt_blaslib *b, void **dl_out, lm_err *err)
{
    *dl_out = NULL;
    char tried[RT_DL_TRIED];
    const char *names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", NULL};
    void *dl = rt__dl_open_any(lib_dir, names, tried, sizeof tried);
    if (!dl)
        return RT_FAIL(err, RT_EBLAS,
                       "cuBLASLt could not be loaded (tried %s); fix: install the CUDA toolkit's "
                       "cuBLAS or set LUMINAL_CUDA_LIB_DIR to the folder holding libcublasLt",
                       tried);
    raw_lt *r = rt__alloc(1, sizeof *r);
    if (!r) {
        dlclose(dl);
        return RT_FAIL(err, RT_ENOMEM, "out of memory loading cuBLASLt");
    }
    const rt_dl_fn fns[] = {
        {"cublasLtCreate", &r->create, sizeof r->create},
        {"cublasLtDestroy", &r->destroy, sizeof r->destroy},
        {"cublasLtGetVersion", &r->get_version, sizeof r->get_version},
        {"cublasLtMatmulDescCreate", &r->desc_create, sizeof r->desc_create},
        {"cublasLtMatmulDescDestroy", &r->desc_destroy, sizeof r->desc_destroy},
        {"cublasLtMatmulDescSetAttribute", &r->desc_set, sizeof r->desc_set},
        {"cublasLtMatrixLayoutCreate", &r->layout_create, sizeof r->layout_create},
        {"cublasLtMatrixLayoutDestroy", &r->layout_destroy, sizeof r->layout_destroy},
        {"cublasLtMatrixLayoutSetAttribute", &r->layout_set, sizeof r->layout_set},
        {"cublasLtMatmulPreferenceCreate", &r->pref_create, sizeof r->pref_create},
        {"cublasLtMatmulPreferenceDestroy", &r->pref_destroy, sizeof r->pref_destroy},
        {"cublasLtMatmulPreferenceSetAttribute", &r->pref_set, sizeof r->pref_set},
        {"cublasLtMatmulAlgoGetHeuristic", &r->heuristic, sizeof r->heuristic},
        {"cublasLtMatmul", &r->matmul, sizeof r->matmul},
    };
    const char *missing = rt__dl_fns(dl, fns, sizeof fns / sizeof fns[0]);
    if (missing) {
        rt__free(r);
        dlclose(dl);
        return RT_FAIL(err, RT_EBLAS, "cuBLASLt (%s) has no %s; fix: use cuBLASLt 12 or 13", tried,
                       missing);
    }
    memset(b, 0, sizeof *b);
    b->self = r;
    snprintf(b->lib, sizeof b->lib, "cublasLt");
    b->version = r->get_version();
    Dl_info info;
    void *sym = dlsym(dl, "cublasLtCreate");
    if (sym && dladdr(sym, &info) && info.dli_fname)
        snprintf(b->lib, sizeof b->lib, "%s", info.dli_fname);
    b->create = l_create;
    b->destroy = l_destroy;
    b->desc_create = l_desc_create;
    b->desc_destroy = l_desc_destroy;
    b->desc_set = l_desc_set;
    b->layout_create = l_layout_create;
    b->layout_destroy = l_layout_destroy;
    b->layout_set = l_layout_set;
    b->pref_create = l_pref_create;
    b->pref_destroy = l_pref_destroy;
    b->pref_set = l_pref_set;
    b->heuristic = l_heuristic;
    b->matmul = l_matmul;
    *dl_out = dl;
    return 0;
}

void rt__blaslib_unload(rt_blaslib *b)
{
    rt__free(b->self);
    b->self = NULL;
}
