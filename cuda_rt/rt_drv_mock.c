/* rt_drv_mock.c: a mock driver and a mock cuBLASLt that record their calls.
 *
 * The sibling of rt_drv_cuda.c: it fills the same rt_drv and rt_blaslib tables, with `self`
 * pointing at an rt_mock. Nothing runs and device memory is not backed; what is modelled
 * is the state the runtime's logic depends on:
 *   - graphs as node lists (kind, gridDim.x, function), execs as copies of them;
 *     cuGraphExecUpdate refuses when the node count or kinds differ (or when configured);
 *   - stream capture: begin (fresh or into an existing graph), captured launches and
 *     matmuls become nodes, end returns the graph, capture info returns the tail;
 *   - a sticky fault: once a call is made to fail with CUDA_ERROR_ILLEGAL_ADDRESS, every
 *     driver call returns it until cuDevicePrimaryCtxReset, which also destroys every
 *     object of the context, as the real driver does;
 *   - events: elapsed time = launches recorded between them * event_ms_per_launch.
 * The mock's own bookkeeping uses calloc/realloc directly, not the module's door, so it
 * never shows in rt_debug_host_allocs (tests use that counter on the runtime's paths).
 */
#include "rt_int.h"

#include <stdlib.h>
#include <string.h>

/* What a mock graph node stands for. */
typedef enum mkind { MK_KERNEL, MK_CHILD, MK_BLAS } mkind;

enum { MOCK_MAX_EVENTS = 1024 }; /* events one mock hands out in its life */

typedef struct mgraph mgraph;

typedef struct mnode {
    mgraph *owner;
    uint32_t index; /* position in owner->nodes */
    mkind kind;
    uint32_t grid_x;
    CUfunction fn;
} mnode;

struct mgraph {
    mnode **nodes;
    uint32_t n, cap;
    bool live;
};

typedef struct mexec {
    mgraph *from;
    mnode *nodes; /* copies */
    uint32_t n;
    bool live;
} mexec;

typedef struct mrule {
    const char *name;
    uint32_t nth;
    int status;
    bool used;
} mrule;

typedef struct malloc_rec {
    CUdeviceptr p;
    size_t bytes;
} malloc_rec;

struct rt_mock {
    rt_mock_config cfg;
    const char **calls;
    uint32_t ncalls, calls_cap;
    mrule *rules;
    uint32_t nrules, rules_cap;
    CUresult sticky;
    /* objects (kept until rt_mock_free; `live` says whether destroyed) */
    mgraph **graphs;
    uint32_t ngraphs, graphs_cap;
    mexec **execs;
    uint32_t nexecs, execs_cap;
    int live_misc; /* modules, events, streams, cuBLASLt objects */
    /* functions whose dynamic shared memory limit was raised (cuFuncSetAttribute with
       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES): a launch or kernel node asking
       for more than the limit (48 KiB unless raised) fails, as on the device */
    CUfunction *shm_fn;
    int *shm_max;
    uint32_t nshm, shm_cap;
    malloc_rec *allocs;
    uint32_t nallocs, allocs_cap;
    CUdeviceptr next_addr;
    uint64_t launches;
    uint64_t event_stamp[MOCK_MAX_EVENTS];
    uint32_t nevents;
    uintptr_t next_handle;
    /* capture */
    bool capturing;
    mgraph *cap_graph;
    CUgraphNode *tail;
    uint32_t ntail, tail_cap;
};

/* ---- bookkeeping ------------------------------------------------------------------ */

static void *grow(void *p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap) return p;
    uint32_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (!q) abort(); /* the mock is a test double: out of memory here is fatal */
    *cap = c;
    return q;
}

/* Records the call; returns the injected status for it, or 0. */
static int record(rt_mock *m, const char *name)
{
    m->calls = grow(m->calls, &m->calls_cap, m->ncalls + 1, sizeof *m->calls);
    m->calls[m->ncalls++] = name;
    for (uint32_t i = 0; i < m->nrules; i++) {
        mrule *r = &m->rules[i];
        if (r->used || strcmp(r->name, name) != 0) continue;
        if (r->nth > 0) {
            r->nth--;
            continue;
        }
        r->used = true;
        return r->status;
    }
    return 0;
}

/* A driver call: recorded; injected failure, then sticky state, win. */
static CUresult drv_call(rt_mock *m, const char *name)
{
    int st = record(m, name);
    if (st == CUDA_ERROR_ILLEGAL_ADDRESS) m->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    if (st) return (CUresult)st;
    return m->sticky;
}

static void *handle(rt_mock *m)
{
    return (void *)(m->next_handle += 64);
}

static mgraph *new_graph(rt_mock *m)
{
    mgraph *g = calloc(1, sizeof *g);
    if (!g) abort();
    g->live = true;
    m->graphs = grow(m->graphs, &m->graphs_cap, m->ngraphs + 1, sizeof *m->graphs);
    m->graphs[m->ngraphs++] = g;
    return g;
}

static mnode *add_node(mgraph *g, mkind kind, uint32_t grid_x, CUfunction fn)
{
    mnode *n = calloc(1, sizeof *n);
    if (!n) abort();
    n->owner = g;
    n->index = g->n;
    n->kind = kind;
    n->grid_x = grid_x;
    n->fn = fn;
    g->nodes = grow(g->nodes, &g->cap, g->n + 1, sizeof *g->nodes);
    g->nodes[g->n++] = n;
    return n;
}

static void set_tail(rt_mock *m, const CUgraphNode *deps, size_t n)
{
    m->tail = grow(m->tail, &m->tail_cap, (uint32_t)n + 1, sizeof *m->tail);
    for (size_t i = 0; i < n; i++)
        m->tail[i] = deps[i];
    m->ntail = (uint32_t)n;
}

/* A launch or matmul on the stream: a node when capturing, a counted launch otherwise. */
static void stream_work(rt_mock *m, mkind kind, uint32_t grid_x, CUfunction fn)
{
    if (m->capturing) {
        mnode *n = add_node(m->cap_graph, kind, grid_x, fn);
        CUgraphNode h = (CUgraphNode)n;
        set_tail(m, &h, 1);
    } else {
        m->launches++;
    }
}

/* ---- the driver ------------------------------------------------------------------- */

#define M(s) ((rt_mock *)(s))

static CUresult m_init(void *s, unsigned f)
{
    (void)f;
    CUresult r = drv_call(M(s), "cuInit");
    if (r) return r;
    return M(s)->cfg.device_count > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}
static CUresult m_driver_version(void *s, int *v)
{
    *v = 13000;
    return drv_call(M(s), "cuDriverGetVersion");
}
static CUresult m_device_count(void *s, int *n)
{
    *n = M(s)->cfg.device_count;
    return drv_call(M(s), "cuDeviceGetCount");
}
static CUresult m_device_get(void *s, CUdevice *d, int o)
{
    CUresult r = drv_call(M(s), "cuDeviceGet");
    if (r) return r;
    if (o < 0 || o >= M(s)->cfg.device_count) return CUDA_ERROR_INVALID_DEVICE;
    *d = o;
    return CUDA_SUCCESS;
}
static CUresult m_device_attr(void *s, int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    rt_mock *m = M(s);
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = m->cfg.cc_major;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = m->cfg.cc_minor;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        *v = 50 << 20;
        break;
    default:
        *v = 0;
        break;
    }
    return drv_call(m, "cuDeviceGetAttribute");
}
static CUresult m_device_name(void *s, char *name, int len, CUdevice d)
{
    (void)d;
    if (len > 0) {
        strncpy(name, "Mock H200", (size_t)len - 1);
        name[len - 1] = '\0';
    }
    return drv_call(M(s), "cuDeviceGetName");
}
static CUresult m_device_total_mem(void *s, size_t *b, CUdevice d)
{
    (void)d;
    *b = (size_t)141 << 30;
    return drv_call(M(s), "cuDeviceTotalMem");
}
static CUresult m_primary_retain(void *s, CUcontext *c, CUdevice d)
{
    (void)d;
    *c = (CUcontext)handle(M(s));
    return drv_call(M(s), "cuDevicePrimaryCtxRetain");
}
static CUresult m_primary_release(void *s, CUdevice d)
{
    (void)d;
    record(M(s), "cuDevicePrimaryCtxRelease");
    return CUDA_SUCCESS;
}
static CUresult m_primary_reset(void *s, CUdevice d)
{
    (void)d;
    rt_mock *m = M(s);
    int st = record(m, "cuDevicePrimaryCtxReset");
    if (st) return (CUresult)st;
    if (!m->cfg.fault_survives_reset) m->sticky = CUDA_SUCCESS;
    for (uint32_t i = 0; i < m->ngraphs; i++)
        m->graphs[i]->live = false;
    for (uint32_t i = 0; i < m->nexecs; i++)
        m->execs[i]->live = false;
    m->nallocs = 0;
    m->live_misc = 0;
    m->capturing = false;
    return CUDA_SUCCESS;
}
static CUresult m_ctx_set_current(void *s, CUcontext c)
{
    (void)c;
    return drv_call(M(s), "cuCtxSetCurrent");
}
static CUresult m_ctx_sync(void *s)
{
    return drv_call(M(s), "cuCtxSynchronize");
}
static CUresult m_stream_create(void *s, CUstream *st, unsigned f)
{
    (void)f;
    CUresult r = drv_call(M(s), "cuStreamCreate");
    if (r) return r;
    *st = (CUstream)handle(M(s));
    M(s)->live_misc++;
    return CUDA_SUCCESS;
}
static CUresult m_stream_destroy(void *s, CUstream st)
{
    (void)st;
    record(M(s), "cuStreamDestroy");
    M(s)->live_misc--;
    return CUDA_SUCCESS;
}
static CUresult m_stream_sync(void *s, CUstream st)
{
    (void)st;
    return drv_call(M(s), "cuStreamSynchronize");
}
static CUresult m_mem_alloc(void *s, CUdeviceptr *p, size_t bytes)
{
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuMemAlloc");
    if (r) return r;
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (bytes > ((size_t)141 << 30)) return CUDA_ERROR_OUT_OF_MEMORY;
    if (m->next_addr == 0) m->next_addr = 0x7f0000000000ull;
    *p = m->next_addr;
    m->next_addr += (bytes + 0xfffff) & ~(CUdeviceptr)0xfffff;
    m->allocs = grow(m->allocs, &m->allocs_cap, m->nallocs + 1, sizeof *m->allocs);
    m->allocs[m->nallocs++] = (malloc_rec){*p, bytes};
    return CUDA_SUCCESS;
}
static CUresult m_mem_free(void *s, CUdeviceptr p)
{
    rt_mock *m = M(s);
    record(m, "cuMemFree");
    for (uint32_t i = 0; i < m->nallocs; i++)
        if (m->allocs[i].p == p) {
            m->allocs[i] = m->allocs[--m->nallocs];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
}
static CUresult m_host_alloc(void *s, void **p, size_t bytes)
{
    CUresult r = drv_call(M(s), "cuMemAllocHost");
    if (r) return r;
    *p = calloc(1, bytes ? bytes : 1);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult m_host_free(void *s, void *p)
{
    record(M(s), "cuMemFreeHost");
    free(p);
    return CUDA_SUCCESS;
}
static CUresult m_copy_htod(void *s, CUdeviceptr d, const void *h, size_t n, CUstream st)
{
    (void)d, (void)h, (void)n, (void)st;
    return drv_call(M(s), "cuMemcpyHtoDAsync");
}
static CUresult m_copy_dtoh(void *s, void *h, CUdeviceptr d, size_t n, CUstream st)
{
    (void)d, (void)st;
    memset(h, 0, n);
    return drv_call(M(s), "cuMemcpyDtoHAsync");
}
static CUresult m_copy_dtod(void *s, CUdeviceptr d, CUdeviceptr x, size_t n, CUstream st)
{
    (void)d, (void)x, (void)n, (void)st;
    return drv_call(M(s), "cuMemcpyDtoDAsync");
}
static CUresult m_memset8(void *s, CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
    (void)d, (void)v, (void)n, (void)st;
    return drv_call(M(s), "cuMemsetD8Async");
}
static CUresult m_module_load(void *s, CUmodule *mod, const void *img)
{
    (void)img;
    CUresult r = drv_call(M(s), "cuModuleLoadData");
    if (r) return r;
    *mod = (CUmodule)handle(M(s));
    M(s)->live_misc++;
    return CUDA_SUCCESS;
}
static CUresult m_module_unload(void *s, CUmodule mod)
{
    (void)mod;
    record(M(s), "cuModuleUnload");
    M(s)->live_misc--;
    return CUDA_SUCCESS;
}
static CUresult m_module_func(void *s, CUfunction *f, CUmodule mod, const char *n)
{
    (void)mod, (void)n;
    CUresult r = drv_call(M(s), "cuModuleGetFunction");
    if (r) return r;
    *f = (CUfunction)handle(M(s));
    return CUDA_SUCCESS;
}
#define MOCK_SHM_DEFAULT 49152  /* bytes a block may take without the attribute */
#define MOCK_SHM_OPTIN 232448   /* the most it may be raised to (sm_90: 227 KiB) */

static int shm_limit(const rt_mock *m, CUfunction f)
{
    for (uint32_t i = 0; i < m->nshm; i++)
        if (m->shm_fn[i] == f) return m->shm_max[i];
    return MOCK_SHM_DEFAULT;
}

static CUresult m_launch(void *s, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned shm, CUstream st, void **p, void **e)
{
    (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)st, (void)p, (void)e;
    CUresult r = drv_call(M(s), "cuLaunchKernel");
    if (r) return r;
    if ((int)shm > shm_limit(M(s), f)) return CUDA_ERROR_INVALID_VALUE;
    stream_work(M(s), MK_KERNEL, gx, f);
    return CUDA_SUCCESS;
}
static CUresult m_graph_create(void *s, CUgraph *g, unsigned f)
{
    (void)f;
    CUresult r = drv_call(M(s), "cuGraphCreate");
    if (r) return r;
    *g = (CUgraph)new_graph(M(s));
    return CUDA_SUCCESS;
}
static CUresult m_graph_destroy(void *s, CUgraph g)
{
    record(M(s), "cuGraphDestroy");
    ((mgraph *)g)->live = false;
    return CUDA_SUCCESS;
}
static CUresult m_graph_add_kernel(void *s, CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                   size_t nd, const CUDA_KERNEL_NODE_PARAMS *p)
{
    (void)d, (void)nd;
    CUresult r = drv_call(M(s), "cuGraphAddKernelNode");
    if (r) return r;
    if (!p->func || p->gridDimX == 0 || p->blockDimX == 0) return CUDA_ERROR_INVALID_VALUE;
    if ((int)p->sharedMemBytes > shm_limit(M(s), p->func)) return CUDA_ERROR_INVALID_VALUE;
    *n = (CUgraphNode)add_node((mgraph *)g, MK_KERNEL, p->gridDimX, p->func);
    return CUDA_SUCCESS;
}
static CUresult m_graph_add_child(void *s, CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                  size_t nd, CUgraph c)
{
    (void)d, (void)nd, (void)c;
    CUresult r = drv_call(M(s), "cuGraphAddChildGraphNode");
    if (r) return r;
    *n = (CUgraphNode)add_node((mgraph *)g, MK_CHILD, ((mgraph *)c)->n, NULL);
    return CUDA_SUCCESS;
}
static CUresult m_graph_kernel_set(void *s, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = drv_call(M(s), "cuGraphKernelNodeSetParams");
    if (r) return r;
    if ((int)p->sharedMemBytes > shm_limit(M(s), p->func)) return CUDA_ERROR_INVALID_VALUE;
    ((mnode *)n)->grid_x = p->gridDimX;
    return CUDA_SUCCESS;
}
static mexec *exec_from(rt_mock *m, mgraph *g)
{
    mexec *e = calloc(1, sizeof *e);
    if (!e) abort();
    e->live = true;
    e->from = g;
    e->n = g->n;
    e->nodes = calloc(g->n ? g->n : 1, sizeof *e->nodes);
    if (!e->nodes) abort();
    for (uint32_t i = 0; i < g->n; i++)
        e->nodes[i] = *g->nodes[i];
    m->execs = grow(m->execs, &m->execs_cap, m->nexecs + 1, sizeof *m->execs);
    m->execs[m->nexecs++] = e;
    return e;
}
static CUresult m_graph_instantiate(void *s, CUgraphExec *e, CUgraph g, unsigned long long f)
{
    (void)f;
    CUresult r = drv_call(M(s), "cuGraphInstantiateWithFlags");
    if (r) return r;
    *e = (CUgraphExec)exec_from(M(s), (mgraph *)g);
    return CUDA_SUCCESS;
}
static CUresult m_exec_destroy(void *s, CUgraphExec e)
{
    record(M(s), "cuGraphExecDestroy");
    ((mexec *)e)->live = false;
    return CUDA_SUCCESS;
}
static CUresult m_exec_kernel_set(void *s, CUgraphExec e, CUgraphNode n,
                                  const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = drv_call(M(s), "cuGraphExecKernelNodeSetParams");
    if (r) return r;
    if ((int)p->sharedMemBytes > shm_limit(M(s), p->func)) return CUDA_ERROR_INVALID_VALUE;
    mexec *x = (mexec *)e;
    mnode *sn = (mnode *)n;
    if (sn->owner != x->from || sn->index >= x->n) return CUDA_ERROR_INVALID_VALUE;
    x->nodes[sn->index].grid_x = p->gridDimX;
    return CUDA_SUCCESS;
}
static CUresult m_exec_update(void *s, CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuGraphExecUpdate");
    if (r) return r;
    mexec *x = (mexec *)e;
    mgraph *ng = (mgraph *)g;
    bool same = !m->cfg.refuse_exec_update && ng->n == x->n;
    for (uint32_t i = 0; same && i < ng->n; i++)
        same = ng->nodes[i]->kind == x->nodes[i].kind;
    if (!same) {
        if (info) info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    for (uint32_t i = 0; i < ng->n; i++)
        x->nodes[i] = *ng->nodes[i];
    x->from = ng;
    if (info) info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return CUDA_SUCCESS;
}
static CUresult m_graph_launch(void *s, CUgraphExec e, CUstream st)
{
    (void)e, (void)st;
    CUresult r = drv_call(M(s), "cuGraphLaunch");
    if (r) return r;
    M(s)->launches++;
    return CUDA_SUCCESS;
}
static CUresult m_capture_begin(void *s, CUstream st, CUstreamCaptureMode mode)
{
    (void)st, (void)mode;
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuStreamBeginCapture");
    if (r) return r;
    if (m->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    m->capturing = true;
    m->cap_graph = new_graph(m);
    m->ntail = 0;
    return CUDA_SUCCESS;
}
static CUresult m_capture_begin_to_graph(void *s, CUstream st, CUgraph g, const CUgraphNode *d,
                                         const CUgraphEdgeData *e, size_t nd,
                                         CUstreamCaptureMode mode)
{
    (void)st, (void)e, (void)mode;
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuStreamBeginCaptureToGraph");
    if (r) return r;
    if (m->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    m->capturing = true;
    m->cap_graph = (mgraph *)g;
    set_tail(m, d, nd);
    return CUDA_SUCCESS;
}
static CUresult m_capture_end(void *s, CUstream st, CUgraph *g)
{
    (void)st;
    rt_mock *m = M(s);
    int inj = record(m, "cuStreamEndCapture");
    if (!m->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    m->capturing = false; /* the real driver ends the capture even when it reports failure */
    *g = (CUgraph)m->cap_graph;
    m->cap_graph = NULL;
    if (inj) {
        ((mgraph *)*g)->live = false;
        *g = NULL;
        return (CUresult)inj;
    }
    return m->sticky;
}
static CUresult m_capture_info(void *s, CUstream st, CUstreamCaptureStatus *cs, cuuint64_t *id,
                               CUgraph *g, const CUgraphNode **d, const CUgraphEdgeData **e,
                               size_t *nd)
{
    (void)st;
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuStreamGetCaptureInfo");
    if (r) return r;
    if (cs) *cs = m->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (id) *id = 1;
    if (g) *g = (CUgraph)m->cap_graph;
    if (d) *d = m->tail;
    if (e) *e = NULL;
    if (nd) *nd = m->ntail;
    return CUDA_SUCCESS;
}
static CUresult m_event_create(void *s, CUevent *ev, unsigned f)
{
    (void)f;
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuEventCreate");
    if (r) return r;
    if (m->nevents >= MOCK_MAX_EVENTS) return CUDA_ERROR_OUT_OF_MEMORY;
    *ev = (CUevent)(uintptr_t)(++m->nevents); /* index into event_stamp */
    m->live_misc++;
    return CUDA_SUCCESS;
}
static CUresult m_event_destroy(void *s, CUevent ev)
{
    (void)ev;
    record(M(s), "cuEventDestroy");
    M(s)->live_misc--;
    return CUDA_SUCCESS;
}
static CUresult m_event_record(void *s, CUevent ev, CUstream st)
{
    (void)st;
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuEventRecord");
    if (r) return r;
    m->event_stamp[(uintptr_t)ev - 1] = m->launches;
    return CUDA_SUCCESS;
}
static CUresult m_event_query(void *s, CUevent ev)
{
    (void)ev;
    return drv_call(M(s), "cuEventQuery");
}
static CUresult m_event_sync(void *s, CUevent ev)
{
    (void)ev;
    return drv_call(M(s), "cuEventSynchronize");
}
static CUresult m_event_elapsed(void *s, float *ms, CUevent a, CUevent b)
{
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuEventElapsedTime");
    if (r) return r;
    uint64_t n = m->event_stamp[(uintptr_t)b - 1] - m->event_stamp[(uintptr_t)a - 1];
    *ms = (float)n * m->cfg.event_ms_per_launch;
    return CUDA_SUCCESS;
}
static CUresult m_func_set_attr(void *s, CUfunction f, CUfunction_attribute a, int v)
{
    rt_mock *m = M(s);
    CUresult r = drv_call(m, "cuFuncSetAttribute");
    if (r) return r;
    if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_SUCCESS;
    if (!f || v < 0 || v > MOCK_SHM_OPTIN) return CUDA_ERROR_INVALID_VALUE;
    for (uint32_t i = 0; i < m->nshm; i++)
        if (m->shm_fn[i] == f) {
            m->shm_max[i] = v;
            return CUDA_SUCCESS;
        }
    uint32_t cap = m->shm_cap;
    m->shm_fn = grow(m->shm_fn, &m->shm_cap, m->nshm + 1, sizeof *m->shm_fn);
    m->shm_max = grow(m->shm_max, &cap, m->nshm + 1, sizeof *m->shm_max);
    m->shm_fn[m->nshm] = f;
    m->shm_max[m->nshm++] = v;
    return CUDA_SUCCESS;
}

/* ---- cuBLASLt --------------------------------------------------------------------- */

static cublasStatus_t blas_call(rt_mock *m, const char *name)
{
    return (cublasStatus_t)record(m, name);
}
static cublasStatus_t b_create(void *s, cublasLtHandle_t *h)
{
    cublasStatus_t st = blas_call(M(s), "cublasLtCreate");
    if (st) return st;
    *h = (cublasLtHandle_t)handle(M(s));
    M(s)->live_misc++;
    return st;
}
static cublasStatus_t b_destroy(void *s, cublasLtHandle_t h)
{
    (void)h;
    M(s)->live_misc--;
    return blas_call(M(s), "cublasLtDestroy");
}
static cublasStatus_t b_desc_create(void *s, cublasLtMatmulDesc_t *d, cublasComputeType_t c,
                                    cudaDataType_t t)
{
    (void)c, (void)t;
    cublasStatus_t st = blas_call(M(s), "cublasLtMatmulDescCreate");
    if (st) return st;
    *d = (cublasLtMatmulDesc_t)handle(M(s));
    M(s)->live_misc++;
    return st;
}
static cublasStatus_t b_desc_destroy(void *s, cublasLtMatmulDesc_t d)
{
    (void)d;
    M(s)->live_misc--;
    return blas_call(M(s), "cublasLtMatmulDescDestroy");
}
static cublasStatus_t b_desc_set(void *s, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                 const void *b, size_t n)
{
    (void)d, (void)a, (void)b, (void)n;
    return blas_call(M(s), "cublasLtMatmulDescSetAttribute");
}
static cublasStatus_t b_layout_create(void *s, cublasLtMatrixLayout_t *l, cudaDataType_t t,
                                      uint64_t r, uint64_t c, int64_t ld)
{
    (void)t, (void)r, (void)c, (void)ld;
    cublasStatus_t st = blas_call(M(s), "cublasLtMatrixLayoutCreate");
    if (st) return st;
    *l = (cublasLtMatrixLayout_t)handle(M(s));
    M(s)->live_misc++;
    return st;
}
static cublasStatus_t b_layout_destroy(void *s, cublasLtMatrixLayout_t l)
{
    (void)l;
    M(s)->live_misc--;
    return blas_call(M(s), "cublasLtMatrixLayoutDestroy");
}
static cublasStatus_t b_layout_set(void *s, cublasLtMatrixLayout_t l,
                                   cublasLtMatrixLayoutAttribute_t a, const void *b, size_t n)
{
    (void)l, (void)a, (void)b, (void)n;
    return blas_call(M(s), "cublasLtMatrixLayoutSetAttribute");
}
static cublasStatus_t b_pref_create(void *s, cublasLtMatmulPreference_t *p)
{
    cublasStatus_t st = blas_call(M(s), "cublasLtMatmulPreferenceCreate");
    if (st) return st;
    *p = (cublasLtMatmulPreference_t)handle(M(s));
    M(s)->live_misc++;
    return st;
}
static cublasStatus_t b_pref_destroy(void *s, cublasLtMatmulPreference_t p)
{
    (void)p;
    M(s)->live_misc--;
    return blas_call(M(s), "cublasLtMatmulPreferenceDestroy");
}
static cublasStatus_t b_pref_set(void *s, cublasLtMatmulPreference_t p,
                                 cublasLtMatmulPreferenceAttributes_t a, const void *b, size_t n)
{
    (void)p, (void)a, (void)b, (void)n;
    return blas_call(M(s), "cublasLtMatmulPreferenceSetAttribute");
}
static cublasStatus_t b_heuristic(void *s, cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                  cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                  cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
                                  cublasLtMatmulPreference_t p, int req,
                                  cublasLtMatmulHeuristicResult_t *res, int *ret)
{
    (void)h, (void)d, (void)a, (void)b, (void)c, (void)dl, (void)p;
    cublasStatus_t st = blas_call(M(s), "cublasLtMatmulAlgoGetHeuristic");
    if (st) {
        *ret = 0;
        return st;
    }
    if (req < 1) return CUBLAS_STATUS_INVALID_VALUE;
    memset(&res[0], 0, sizeof res[0]);
    res[0].algo.data[0] = 42;
    res[0].workspaceSize = M(s)->cfg.heuristic_workspace;
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].wavesCount = 1.0f;
    *ret = 1;
    return CUBLAS_STATUS_SUCCESS;
}
static cublasStatus_t b_matmul(void *s, cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                               const void *alpha, const void *A, cublasLtMatrixLayout_t ad,
                               const void *B, cublasLtMatrixLayout_t bd, const void *beta,
                               const void *C, cublasLtMatrixLayout_t cd, void *D,
                               cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t *algo,
                               void *ws, size_t wsb, CUstream st)
{
    (void)h, (void)d, (void)alpha, (void)A, (void)ad, (void)B, (void)bd, (void)beta, (void)C;
    (void)cd, (void)D, (void)dd, (void)algo, (void)ws, (void)wsb, (void)st;
    rt_mock *m = M(s);
    cublasStatus_t r = blas_call(m, "cublasLtMatmul");
    if (r) return r;
    if (m->sticky) return CUBLAS_STATUS_EXECUTION_FAILED;
    stream_work(m, MK_BLAS, 1, NULL);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- public mock API ---------------------------------------------------------------- */

void rt_mock_config_default(rt_mock_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->device_count = 1;
    cfg->cc_major = 9;
    cfg->cc_minor = 0;
    cfg->capture_to_graph = true;
    cfg->refuse_exec_update = false;
    cfg->blas_version = 130100;
    cfg->heuristic_workspace = (size_t)4 << 20;
    cfg->event_ms_per_launch = 0.01f;
}

rt_mock *rt_mock_new(const rt_mock_config *cfg)
{
    rt_mock *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (cfg)
        m->cfg = *cfg;
    else
        rt_mock_config_default(&m->cfg);
    m->next_handle = 0x1000;
    return m;
}

void rt_mock_free(rt_mock *m)
{
    if (!m) return;
    for (uint32_t i = 0; i < m->ngraphs; i++) {
        for (uint32_t j = 0; j < m->graphs[i]->n; j++)
            free(m->graphs[i]->nodes[j]);
        free(m->graphs[i]->nodes);
        free(m->graphs[i]);
    }
    for (uint32_t i = 0; i < m->nexecs; i++) {
        free(m->execs[i]->nodes);
        free(m->execs[i]);
    }
    free(m->graphs);
    free(m->execs);
    free(m->calls);
    free(m->rules);
    free(m->allocs);
    free(m->shm_fn);
    free(m->shm_max);
    free(m->tail);
    free(m);
}

uint32_t rt_mock_calls(const rt_mock *m)
{
    return m->ncalls;
}

const char *rt_mock_call_name(const rt_mock *m, uint32_t i)
{
    return i < m->ncalls ? m->calls[i] : "";
}

uint32_t rt_mock_count_since(const rt_mock *m, const char *name, uint32_t from)
{
    uint32_t c = 0;
    for (uint32_t i = from; i < m->ncalls; i++)
        c += strcmp(m->calls[i], name) == 0;
    return c;
}

void rt_mock_fail(rt_mock *m, const char *name, uint32_t nth, int status)
{
    m->rules = grow(m->rules, &m->rules_cap, m->nrules + 1, sizeof *m->rules);
    m->rules[m->nrules++] = (mrule){name, nth, status, false};
}

bool rt_mock_capturing(const rt_mock *m)
{
    return m->capturing;
}

uint32_t rt_mock_live_allocs(const rt_mock *m)
{
    return m->nallocs;
}

uint32_t rt_mock_live_objects(const rt_mock *m)
{
    uint32_t n = (uint32_t)(m->live_misc > 0 ? m->live_misc : 0);
    for (uint32_t i = 0; i < m->ngraphs; i++)
        n += m->graphs[i]->live;
    for (uint32_t i = 0; i < m->nexecs; i++)
        n += m->execs[i]->live;
    return n;
}

uint32_t rt_mock_kernel_grid_x(const rt_mock *m, const rt_graph *graph, const rt_exec *exec,
                               uint32_t node)
{
    (void)m;
    mnode *n = (mnode *)rt__graph_cu_node(graph, node);
    if (!n) return 0;
    if (!exec) return n->grid_x;
    mexec *x = (mexec *)rt__exec_cu(exec);
    if (!x || x->from != n->owner || n->index >= x->n) return 0;
    return x->nodes[n->index].grid_x;
}

void rt__mock_fill(rt_mock *m, rt_drv *d, rt_blaslib *b)
{
    memset(d, 0, sizeof *d);
    d->self = m;
    strcpy(d->lib, "mock");
    d->version = 13000;
    d->init = m_init;
    d->driver_version = m_driver_version;
    d->device_count = m_device_count;
    d->device_get = m_device_get;
    d->device_attr = m_device_attr;
    d->device_name = m_device_name;
    d->device_total_mem = m_device_total_mem;
    d->primary_retain = m_primary_retain;
    d->primary_release = m_primary_release;
    d->primary_reset = m_primary_reset;
    d->ctx_set_current = m_ctx_set_current;
    d->ctx_sync = m_ctx_sync;
    d->stream_create = m_stream_create;
    d->stream_destroy = m_stream_destroy;
    d->stream_sync = m_stream_sync;
    d->mem_alloc = m_mem_alloc;
    d->mem_free = m_mem_free;
    d->host_alloc = m_host_alloc;
    d->host_free = m_host_free;
    d->copy_htod = m_copy_htod;
    d->copy_dtoh = m_copy_dtoh;
    d->copy_dtod = m_copy_dtod;
    d->memset8 = m_memset8;
    d->module_load = m_module_load;
    d->module_unload = m_module_unload;
    d->module_func = m_module_func;
    d->launch = m_launch;
    d->graph_create = m_graph_create;
    d->graph_destroy = m_graph_destroy;
    d->graph_add_kernel = m_graph_add_kernel;
    d->graph_add_child = m_graph_add_child;
    d->graph_kernel_set = m_graph_kernel_set;
    d->graph_instantiate = m_graph_instantiate;
    d->exec_destroy = m_exec_destroy;
    d->exec_kernel_set = m_exec_kernel_set;
    d->exec_update = m_exec_update;
    d->graph_launch = m_graph_launch;
    d->capture_begin = m_capture_begin;
    d->capture_begin_to_graph = m->cfg.capture_to_graph ? m_capture_begin_to_graph : NULL;
    d->capture_end = m_capture_end;
    d->capture_info = m_capture_info;
    d->event_create = m_event_create;
    d->event_destroy = m_event_destroy;
    d->event_record = m_event_record;
    d->event_query = m_event_query;
    d->event_sync = m_event_sync;
    d->event_elapsed = m_event_elapsed;
    d->func_set_attr = m_func_set_attr;
    d->error_name = NULL; /* the runtime's own table names errors */
    d->error_string = NULL;

    memset(b, 0, sizeof *b);
    b->self = m;
    strcpy(b->lib, "mock");
    b->version = m->cfg.blas_version;
    b->create = b_create;
    b->destroy = b_destroy;
    b->desc_create = b_desc_create;
    b->desc_destroy = b_desc_destroy;
    b->desc_set = b_desc_set;
    b->layout_create = b_layout_create;
    b->layout_destroy = b_layout_destroy;
    b->layout_set = b_layout_set;
    b->pref_create = b_pref_create;
    b->pref_destroy = b_pref_destroy;
    b->pref_set = b_pref_set;
    b->heuristic = b_heuristic;
    b->matmul = b_matmul;
}
