/* rt_graph.c: CUDA graphs: kernel nodes, captured library calls, instantiation, in-place
 * parameter updates mirrored on the source graph, whole-graph updates with fallback to
 * re-instantiation, and the one graph launch site (rt_exec_launch).
 *
 * Node ids are dense, in insertion order. Each node keeps its "sinks": the driver nodes a
 * dependent must wait on (the kernel node itself; the child-graph node; or, for work
 * captured straight into the graph, the capture's tail). A kernel node keeps a copy of
 * its launch and argument bytes, so the source graph can be mirrored and read back.
 */
#include "rt_int.h"

#include <string.h>

/* A node is a kernel of ours or library work captured from the stream. */
typedef enum gkind { GN_KERNEL, GN_CAPTURED } gkind;

typedef struct gnode {
    gkind kind;
    CUgraphNode cu;     /* the kernel or child node; NULL for captured-into-graph */
    CUgraphNode *sinks; /* owned */
    uint32_t nsinks;
    /* kernel nodes */
    rt_kernel *kernel;
    uint32_t grid[3], block[3], shared;
    uint32_t nargs;
    uint32_t *arg_off, *arg_size; /* owned, nargs each */
    unsigned char *argbuf;        /* owned */
} gnode;

struct rt_graph {
    rt_ctx *ctx;
    uint32_t gen;
    CUgraph g;
    gnode *nodes;
    uint32_t n, cap;
    uint32_t execs; /* execs instantiated from (and owned by) this graph */
    bool broken;    /* a failed capture left nodes behind */
};

struct rt_exec {
    rt_graph *graph;
    CUgraphExec e;
    uint32_t gen;
};

CUgraph rt__graph_cu(const rt_graph *g)
{
    return g->g;
}
CUgraphExec rt__exec_cu(const rt_exec *e)
{
    return e ? e->e : NULL;
}
rt_ctx *rt__exec_ctx(const rt_exec *e)
{
    return e->graph->ctx;
}
CUgraphNode rt__graph_cu_node(const rt_graph *g, uint32_t node)
{
    if (node >= g->n) return NULL;
    const gnode *n = &g->nodes[node];
    return n->cu ? n->cu : (n->nsinks ? n->sinks[0] : NULL);
}
uint32_t rt_graph_node_count(const rt_graph *g)
{
    return g->n;
}

static int graph_usable(const rt_graph *g, lm_err *err)
{
    if (rt__ctx_usable(g->ctx, err)) return err->code;
    if (g->gen != g->ctx->gen)
        return RT_FAIL(err, RT_ESTALE,
                       "graph made before rt_ctx_reset (generation %u, now %u); fix: free it and "
                       "build it again",
                       g->gen, g->ctx->gen);
    if (g->broken)
        return RT_FAIL(err, RT_EARG,
                       "graph was left with partial nodes by a failed capture; fix: free it and "
                       "rebuild it");
    return 0;
}

int rt_graph_new(rt_ctx *ctx, rt_graph **out, lm_err *err)
{
    *out = NULL;
    if (rt__ctx_usable(ctx, err)) return err->code;
    rt_graph *g = rt__alloc(1, sizeof *g);
    if (!g) return RT_FAIL(err, RT_ENOMEM, "out of memory creating a graph");
    if (RT_CU(ctx, err, ctx->drv.graph_create(ctx->drv.self, &g->g, 0), "cuGraphCreate")) {
        rt__free(g);
        return err->code;
    }
    g->ctx = ctx;
    g->gen = ctx->gen;
    *out = g;
    return 0;
}

static void node_fini(gnode *n)
{
    rt__free(n->sinks);
    rt__free(n->arg_off);
    rt__free(n->arg_size);
    rt__free(n->argbuf);
}

void rt_graph_free(rt_graph *g)
{
    if (!g) return;
    if (g->gen == g->ctx->gen && !g->ctx->poisoned)
        g->ctx->drv.graph_destroy(g->ctx->drv.self, g->g);
    for (uint32_t i = 0; i < g->n; i++)
        node_fini(&g->nodes[i]);
    rt__free(g->nodes);
    rt__free(g);
}

/* Driver nodes that a node depending on deps[] must wait on. *out is owned by caller. */
static int gather_deps(const rt_graph *g, const uint32_t *deps, uint32_t ndeps, CUgraphNode **out,
                       size_t *nout, lm_err *err)
{
    size_t total = 0;
    for (uint32_t i = 0; i < ndeps; i++) {
        if (deps[i] >= g->n)
            return RT_FAIL(err, RT_EARG,
                           "graph dependency %u names node %u, but the graph has %u nodes", i,
                           deps[i], g->n);
        total += g->nodes[deps[i]].nsinks;
    }
    *out = rt__alloc(total + 1, sizeof **out);
    if (!*out) return RT_FAIL(err, RT_ENOMEM, "out of memory gathering dependencies");
    size_t k = 0;
    for (uint32_t i = 0; i < ndeps; i++)
        for (uint32_t j = 0; j < g->nodes[deps[i]].nsinks; j++) {
            CUgraphNode c = g->nodes[deps[i]].sinks[j];
            bool dup = false;
            for (size_t x = 0; x < k; x++)
                dup |= (*out)[x] == c;
            if (!dup) (*out)[k++] = c;
        }
    *nout = k;
    return 0;
}

/* Packs the arguments (RT_ARG_ALIGN-aligned each) into fresh storage. */
static int pack_args(const rt_launch *l, unsigned char **buf, uint32_t **off, uint32_t **size,
                     lm_err *err)
{
    size_t total = 0;
    for (uint32_t i = 0; i < l->nargs; i++)
        total += rt__arg_slot(l->sizes[i]);
    *buf = rt__alloc(total + RT_ARG_ALIGN, 1);
    *off = rt__alloc(l->nargs + 1, sizeof **off);
    *size = rt__alloc(l->nargs + 1, sizeof **size);
    if (!*buf || !*off || !*size) {
        rt__free(*buf), rt__free(*off), rt__free(*size);
        return RT_FAIL(err, RT_ENOMEM, "out of memory copying kernel arguments");
    }
    size_t at = 0;
    for (uint32_t i = 0; i < l->nargs; i++) {
        memcpy(*buf + at, l->args[i], l->sizes[i]);
        (*off)[i] = (uint32_t)at;
        (*size)[i] = (uint32_t)l->sizes[i];
        at += rt__arg_slot(l->sizes[i]);
    }
    return 0;
}

static void fill_params(CUDA_KERNEL_NODE_PARAMS *p, void **params, const rt_launch *l,
                        unsigned char *buf, const uint32_t *off)
{
    memset(p, 0, sizeof *p);
    for (uint32_t i = 0; i < l->nargs; i++)
        params[i] = buf + off[i];
    p->func = rt__kernel_fn(l->kernel);
    p->gridDimX = l->grid[0];
    p->gridDimY = l->grid[1];
    p->gridDimZ = l->grid[2];
    p->blockDimX = l->block[0];
    p->blockDimY = l->block[1];
    p->blockDimZ = l->block[2];
    p->sharedMemBytes = l->shared_bytes;
    p->kernelParams = params;
}

static int reserve_node(rt_graph *g, lm_err *err)
{
    if (g->n < g->cap) return 0;
    uint32_t cap = g->cap ? g->cap * 2 : 16;
    gnode *nodes = rt__realloc(g->nodes, cap, sizeof *nodes);
    if (!nodes) return RT_FAIL(err, RT_ENOMEM, "out of memory growing a graph to %u nodes", cap);
    g->nodes = nodes;
    g->cap = cap;
    return 0;
}

int rt_graph_add_kernel(rt_graph *g, const rt_launch *l, const uint32_t *deps, uint32_t ndeps,
                        uint32_t *node, lm_err *err)
{
    if (graph_usable(g, err) || rt__launch_check(l, "kernel node", err) ||
        rt__kernel_shared(g->ctx, l, err) || reserve_node(g, err))
        return err->code;
    CUgraphNode *dn = NULL;
    size_t ndn = 0;
    if (gather_deps(g, deps, ndeps, &dn, &ndn, err)) return err->code;
    gnode n;
    memset(&n, 0, sizeof n);
    n.sinks = rt__alloc(1, sizeof *n.sinks);
    if (!n.sinks || pack_args(l, &n.argbuf, &n.arg_off, &n.arg_size, err)) {
        rt__free(dn);
        rt__free(n.sinks);
        if (!lm_err_is_set(err)) RT_FAIL(err, RT_ENOMEM, "out of memory adding a node");
        return err ? (int)err->code : RT_ENOMEM;
    }
    void *params[RT_MAX_KERNEL_ARGS + 1];
    CUDA_KERNEL_NODE_PARAMS p;
    fill_params(&p, params, l, n.argbuf, n.arg_off);
    rt_ctx *ctx = g->ctx;
    CUresult r = ctx->drv.graph_add_kernel(ctx->drv.self, &n.cu, g->g, dn, ndn, &p);
    rt__free(dn);
    if (RT_CU(ctx, err, r,
              "cuGraphAddKernelNode(%s, node %u, %zu deps, grid %ux%ux%u, block %ux%ux%u)",
              rt__kernel_name(l->kernel), g->n, ndn, l->grid[0], l->grid[1], l->grid[2],
              l->block[0], l->block[1], l->block[2])) {
        node_fini(&n);
        return err->code;
    }
    n.kind = GN_KERNEL;
    n.sinks[0] = n.cu;
    n.nsinks = 1;
    n.kernel = l->kernel;
    memcpy(n.grid, l->grid, sizeof n.grid);
    memcpy(n.block, l->block, sizeof n.block);
    n.shared = l->shared_bytes;
    n.nargs = l->nargs;
    g->nodes[g->n] = n;
    if (node) *node = g->n;
    g->n++;
    return 0;
}

int rt_graph_add_captured(rt_graph *g, rt_capture_fn fn, void *user, const uint32_t *deps,
                          uint32_t ndeps, uint32_t *node, lm_err *err)
{
    if (graph_usable(g, err) || reserve_node(g, err)) return err->code;
    CUgraphNode *dn = NULL;
    size_t ndn = 0;
    if (gather_deps(g, deps, ndeps, &dn, &ndn, err)) return err->code;
    rt_ctx *ctx = g->ctx;
    rt_drv *d = &ctx->drv;
    bool to_graph = ctx->info.capture_mode == RT_CAPTURE_TO_GRAPH;
    CUresult r = to_graph
                     ? d->capture_begin_to_graph(d->self, ctx->stream, g->g, dn, NULL, ndn,
                                                 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                     : d->capture_begin(d->self, ctx->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (RT_CU(ctx, err, r, "%s(node %u, %zu deps)",
              to_graph ? "cuStreamBeginCaptureToGraph" : "cuStreamBeginCapture", g->n, ndn)) {
        rt__free(dn);
        return err->code;
    }
    lm_err fn_err;
    lm_err_clear(&fn_err);
    int frc = fn(ctx, user, &fn_err);
    /* The tail of the capture, read before it ends (only meaningful in to-graph mode). */
    CUgraphNode *tail = NULL;
    size_t ntail = 0;
    bool added = false;
    if (to_graph) {
        CUstreamCaptureStatus cs;
        const CUgraphNode *t = NULL;
        size_t nt = 0;
        if (d->capture_info(d->self, ctx->stream, &cs, NULL, NULL, &t, NULL, &nt) == CUDA_SUCCESS) {
            tail = rt__alloc(nt + 1, sizeof *tail);
            if (tail) {
                memcpy(tail, t, nt * sizeof *t);
                ntail = nt;
            }
            added = nt != ndn;
            for (size_t i = 0; !added && i < nt; i++)
                added = t[i] != dn[i];
        } else {
            added = true; /* unknown: assume the worst */
        }
    }
    CUgraph captured = NULL;
    CUresult er = d->capture_end(d->self, ctx->stream, &captured); /* always ended */
    if (frc || fn_err.code) {
        if (!to_graph && captured) d->graph_destroy(d->self, captured);
        if (to_graph && added) g->broken = true;
        rt__free(dn);
        rt__free(tail);
        return rt__fail(err, fn_err.code ? fn_err.code : frc, rt__at(__FILE__, __LINE__),
                        "captured work for graph node %u failed (capture ended%s): %s", g->n,
                        to_graph && added ? "; graph marked broken" : "", fn_err.msg);
    }
    if (er != CUDA_SUCCESS) {
        if (to_graph && added) g->broken = true;
        rt__free(dn);
        rt__free(tail);
        return RT_CU(ctx, err, er,
                     "cuStreamEndCapture(node %u): the captured work did something "
                     "capture forbids",
                     g->n);
    }
    gnode n;
    memset(&n, 0, sizeof n);
    n.kind = GN_CAPTURED;
    if (to_graph) {
        if (!tail) {
            rt__free(dn);
            g->broken = true;
            return RT_FAIL(err, RT_ENOMEM, "out of memory recording a capture's tail");
        }
        n.sinks = tail;
        n.nsinks = (uint32_t)ntail;
    } else {
        rt__free(tail);
        n.sinks = rt__alloc(1, sizeof *n.sinks);
        CUresult ar = n.sinks ? d->graph_add_child(d->self, &n.cu, g->g, dn, ndn, captured)
                              : CUDA_ERROR_OUT_OF_MEMORY;
        d->graph_destroy(d->self, captured); /* the child node holds its own copy */
        if (RT_CU(ctx, err, ar, "cuGraphAddChildGraphNode(node %u, %zu deps)", g->n, ndn)) {
            rt__free(n.sinks);
            rt__free(dn);
            return err->code;
        }
        n.sinks[0] = n.cu;
        n.nsinks = 1;
    }
    rt__free(dn);
    g->nodes[g->n] = n;
    if (node) *node = g->n;
    g->n++;
    return 0;
}

int rt_graph_kernel_arg(const rt_graph *g, uint32_t node, uint32_t arg, void *out, size_t size,
                        lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (node >= g->n || g->nodes[node].kind != GN_KERNEL)
        return RT_FAIL(err, RT_EARG, "graph node %u is not a kernel node (graph has %u nodes)",
                       node, g->n);
    const gnode *n = &g->nodes[node];
    if (arg >= n->nargs || size != n->arg_size[arg])
        return RT_FAIL(err, RT_EARG,
                       "graph node %u: argument %u of size %zu asked, node has %u arguments%s",
                       node, arg, size, n->nargs, arg < n->nargs ? " of another size" : "");
    memcpy(out, n->argbuf + n->arg_off[arg], size);
    return 0;
}

int rt_exec_new(rt_graph *g, rt_exec **out, lm_err *err)
{
    *out = NULL;
    if (graph_usable(g, err)) return err->code;
    rt_exec *e = rt__alloc(1, sizeof *e);
    if (!e) return RT_FAIL(err, RT_ENOMEM, "out of memory instantiating a graph");
    rt_ctx *ctx = g->ctx;
    if (RT_CU(ctx, err, ctx->drv.graph_instantiate(ctx->drv.self, &e->e, g->g, 0),
              "cuGraphInstantiateWithFlags(%u nodes)", g->n)) {
        rt__free(e);
        return err->code;
    }
    e->graph = g;
    e->gen = ctx->gen;
    g->execs++;
    *out = e;
    return 0;
}

void rt_exec_free(rt_exec *e)
{
    if (!e) return;
    rt_ctx *ctx = e->graph->ctx;
    if (e->gen == ctx->gen && !ctx->poisoned) ctx->drv.exec_destroy(ctx->drv.self, e->e);
    e->graph->execs--;
    rt__free(e);
}

static int exec_usable(const rt_exec *e, lm_err *err)
{
    rt_ctx *ctx = e->graph->ctx;
    if (rt__ctx_usable(ctx, err)) return err->code;
    if (e->gen != ctx->gen)
        return RT_FAIL(err, RT_ESTALE,
                       "executable graph made before rt_ctx_reset; fix: free it and instantiate "
                       "again");
    return 0;
}

int rt_exec_set_kernel(rt_exec *e, uint32_t node, const rt_launch *l, lm_err *err)
{
    if (exec_usable(e, err) || rt__launch_check(l, "kernel node", err) ||
        rt__kernel_shared(e->graph->ctx, l, err))
        return err->code;
    rt_graph *g = e->graph;
    if (node >= g->n || g->nodes[node].kind != GN_KERNEL)
        return RT_FAIL(err, RT_EARG, "graph node %u is not a kernel node (graph has %u nodes)",
                       node, g->n);
    gnode *n = &g->nodes[node];
    if (rt__kernel_fn(l->kernel) != rt__kernel_fn(n->kernel))
        return RT_FAIL(err, RT_EARG,
                       "graph node %u: kernel %s cannot be swapped for %s in place; fix: build a "
                       "new graph and rt_exec_update",
                       node, rt__kernel_name(n->kernel), rt__kernel_name(l->kernel));
    unsigned char *buf;
    uint32_t *off, *size;
    if (pack_args(l, &buf, &off, &size, err)) return err->code;
    void *params[RT_MAX_KERNEL_ARGS + 1];
    CUDA_KERNEL_NODE_PARAMS p;
    fill_params(&p, params, l, buf, off);
    rt_ctx *ctx = g->ctx;
    rt_drv *d = &ctx->drv;
    if (RT_CU(ctx, err, d->exec_kernel_set(d->self, e->e, n->cu, &p),
              "cuGraphExecKernelNodeSetParams(node %u, %s, grid %ux%ux%u)", node,
              rt__kernel_name(l->kernel), l->grid[0], l->grid[1], l->grid[2])) {
        rt__free(buf), rt__free(off), rt__free(size);
        return err->code;
    }
    CUresult mr = d->graph_kernel_set(d->self, n->cu, &p);
    if (mr != CUDA_SUCCESS) {
        /* put the exec back so that the two still agree */
        rt_launch old = *l;
        const void *old_args[RT_MAX_KERNEL_ARGS + 1];
        for (uint32_t i = 0; i < n->nargs; i++)
            old_args[i] = n->argbuf + n->arg_off[i];
        void *old_params[RT_MAX_KERNEL_ARGS + 1];
        memcpy(old.grid, n->grid, sizeof old.grid);
        memcpy(old.block, n->block, sizeof old.block);
        old.shared_bytes = n->shared;
        old.nargs = n->nargs;
        old.args = old_args;
        CUDA_KERNEL_NODE_PARAMS op;
        fill_params(&op, old_params, &old, n->argbuf, n->arg_off);
        d->exec_kernel_set(d->self, e->e, n->cu, &op);
        rt__free(buf), rt__free(off), rt__free(size);
        return RT_CU(ctx, err, mr, "cuGraphKernelNodeSetParams(node %u, mirroring the exec)", node);
    }
    rt__free(n->argbuf), rt__free(n->arg_off), rt__free(n->arg_size);
    n->argbuf = buf;
    n->arg_off = off;
    n->arg_size = size;
    n->nargs = l->nargs;
    memcpy(n->grid, l->grid, sizeof n->grid);
    memcpy(n->block, l->block, sizeof n->block);
    n->shared = l->shared_bytes;
    return 0;
}

int rt_exec_update(rt_exec *e, rt_graph *src, rt_update_kind *how, lm_err *err)
{
    if (exec_usable(e, err) || graph_usable(src, err)) return err->code;
    rt_ctx *ctx = e->graph->ctx;
    if (src->ctx != ctx)
        return RT_FAIL(err, RT_EARG, "exec update: the new graph belongs to another context");
    rt_drv *d = &ctx->drv;
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    CUresult r = d->exec_update(d->self, e->e, src->g, &info);
    if (r == CUDA_SUCCESS) {
        e->graph->execs--;
        src->execs++;
        e->graph = src;
        if (how) *how = RT_UPDATE_IN_PLACE;
        return 0;
    }
    if (r != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
        return RT_CU(ctx, err, r, "cuGraphExecUpdate(%u nodes)", src->n);
    /* Refused (topology or node types changed): instantiate afresh, then swap. */
    CUgraphExec fresh = NULL;
    if (RT_CU(ctx, err, d->graph_instantiate(d->self, &fresh, src->g, 0),
              "cuGraphInstantiateWithFlags(%u nodes, after cuGraphExecUpdate refused with result "
              "%d)",
              src->n, (int)info.result))
        return err->code;
    d->exec_destroy(d->self, e->e);
    e->e = fresh;
    e->graph->execs--;
    src->execs++;
    e->graph = src;
    if (how) *how = RT_UPDATE_REINSTANTIATED;
    return 0;
}

int rt_exec_launch(rt_exec *e, lm_err *err)
{
    if (exec_usable(e, err)) return err->code;
    rt_ctx *ctx = e->graph->ctx;
    return RT_CU(ctx, err, ctx->drv.graph_launch(ctx->drv.self, e->e, ctx->stream),
                 "cuGraphLaunch(%u nodes)", e->graph->n);
}
