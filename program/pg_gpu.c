/* pg_gpu.c - the GPU backend: a plan run through cuda_rt.
 *
 *   open      context (mock or real), architecture check, every kernel compiled once
 *   layout    (pg_gpu_layout.c) per variant, at its bucket's maximum dims: intermediates, kernels'
 *             workspaces (Scatter's winners) and outputs planned into one arena by
 *             rt_arena_plan (intervals [first_step, last_step]; outputs over every step,
 *             so they never share memory; in-place groups as one entry), library-call
 *             workspaces after them by rt_matmul_workspace_plan (two
 *             calls share workspace bytes only when one depends on the other); inputs in
 *             device buffers of their own, also sized for the bucket's maximum
 *   deps      (pg_gpu_layout.c) step j waits on an earlier step i when both touch a byte of the same
 *             memory and one of them writes it (so buffers that share arena bytes are
 *             ordered too), transitively reduced
 *   graph     every step one node, in step order: kernels as kernel nodes, library calls
 *             captured by rt_graph_add_captured into the same graph; one graph per
 *             variant, instantiated once
 *   refresh   before a launch: nothing when neither the dims nor any address changed;
 *             else every kernel node whose grid or arguments differ is set in place
 *             (rt_exec_set_kernel), and when a library call's sizes or pointers change
 *             (re-prepared) or the layout had to grow, the graph is built again and the
 *             exec updated (rt_exec_update: in place, or instantiated again when the
 *             driver refuses)
 *   run       uploads of changed inputs, one graph launch, one sync; or, stepwise, each
 *             step launched alone with a sync after it
 *
 * Copies inside the graph are kernels (codegen's "copy" template), never memcpy nodes:
 * on the H200 a memcpy node moves 2.7 TB/s, a copy kernel 4.2 TB/s (docs/cuda_rt.md).
 */
#include "pg_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pg__gpu_available(void)
{
    return true;
}

/* ==================================================================================
 * Open and close
 * ================================================================================== */

static void gpu_free(pg_program *p, pg_gpu *g)
{
    if (!g) return;
    for (uint32_t v = 0; g->var && v < p->n_variants; v++)
        pg__gpu_variant_fini(p, &g->var[v]);
    pg__free(g->var);
    for (uint32_t i = 0; g->in_buf && i < p->plan.n_inputs; i++)
        rt_buf_release(g->ctx, &g->in_buf[i]);
    if (g->ctx) rt_buf_release(g->ctx, &g->arena);
    pg__free(g->in_buf);
    pg__free(g->in_valid);
    pg__free(g->in_addr);
    pg__free(g->kern);
    if (g->own_ctx) rt_ctx_free(g->ctx);
    pg__free(g);
}

void pg__gpu_close(pg_program *p)
{
    gpu_free(p, p->gpu);
    p->gpu = NULL;
}

/* A backend state on ctx (owned or not), kernels compiled. */
static int gpu_new(pg_program *p, rt_ctx *ctx, bool own, pg_gpu **out, lm_err *err)
{
    *out = NULL;
    pg_gpu *g = pg__alloc(1, sizeof *g);
    if (!g) {
        if (own) rt_ctx_free(ctx);
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory opening the GPU");
    }
    g->ctx = ctx;
    g->own_ctx = own;
    g->kern = pg__alloc(p->plan.n_kernels, sizeof *g->kern);
    g->in_buf = pg__alloc(p->plan.n_inputs, sizeof *g->in_buf);
    g->in_valid = pg__alloc(p->plan.n_inputs, sizeof *g->in_valid);
    g->in_addr = pg__alloc(p->plan.n_inputs, sizeof *g->in_addr);
    g->var = pg__alloc(p->n_variants, sizeof *g->var);
    if (!g->kern || !g->in_buf || !g->in_valid || !g->in_addr || !g->var) {
        gpu_free(p, g);
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory opening the GPU");
    }
    const rt_device_info *dev = rt_ctx_device(ctx);
    int arch = dev->cc_major * 10 + dev->cc_minor;
    if (arch != p->arch) {
        pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name),
                 "the plan was written for sm_%d; this GPU (%s) is sm_%d: compile the program "
                 "for it (or run it with PG_BACKEND_CPU)",
                 p->arch, dev->name, arch);
        gpu_free(p, g);
        return err->code;
    }
    if (pg__compile_kernels(p, ctx, g->kern, &g->compiled, &g->cache_hits, err)) {
        gpu_free(p, g);
        return err->code;
    }
    *out = g;
    return 0;
}

int pg__gpu_open(pg_program *p, lm_err *err)
{
    rt_ctx *ctx = NULL;
    lm_err ce = {0};
    int rc =
        p->mock ? rt_ctx_new_mock(p->mock, p->rt_opt, &ctx, &ce) : rt_ctx_new(p->rt_opt, &ctx, &ce);
    if (rc) {
        lm_err_copy(err, &ce);
        pg__wrap(err, p->name, "opening the GPU");
        return err->code;
    }
    pg_gpu *g;
    if (gpu_new(p, ctx, true, &g, err)) return err->code;
    p->gpu = g;
    p->backend = PG_BACKEND_GPU;
    p->count.kernels_compiled += g->compiled;
    p->count.kernel_cache_hits += g->cache_hits;
    const rt_device_info *dev = rt_ctx_device(ctx);
    snprintf(p->note, sizeof p->note,
             "GPU: %.120s, sm_%d%d, %u kernels (%llu compiled, %llu "
             "from the module cache)%s",
             dev->name, dev->cc_major, dev->cc_minor, p->plan.n_kernels,
             (unsigned long long)g->compiled, (unsigned long long)g->cache_hits,
             p->stepwise ? ", stepwise" : "");
    return 0;
}

int pg__gpu_host_alloc(pg_program *p, size_t bytes, void **out, bool *pinned, lm_err *err)
{
    *out = NULL;
    *pinned = false;
    if (p->gpu && p->gpu->own_ctx) {
        lm_err e = {0};
        if (rt_host_alloc(p->gpu->ctx, bytes, out, &e) == 0) {
            *pinned = true;
            return 0;
        }
        lm_err_copy(err, &e);
        pg__wrap(err, p->name, "pinned staging of %zu bytes", bytes);
        return err->code;
    }
    *out = pg__alloc(bytes, 1);
    if (!*out) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory (%zu bytes)", bytes);
    return 0;
}

void pg__gpu_host_free(pg_program *p, void *host, bool pinned)
{
    if (!host) return;
    if (pinned && p->gpu)
        rt_host_free(p->gpu->ctx, host);
    else
        pg__free(host);
}

/* ==================================================================================
 * Sizes, addresses and launches
 * ================================================================================== */

/* The dims at the largest values of variant v. */
static void bucket_max(const pg_program *p, uint32_t v, int64_t *vals)
{
    for (uint32_t d = 0; d < p->plan.n_dims; d++)
        vals[d] = pg__variant_hi(p, v, d);
}

static uint64_t buffer_addr(const pg_program *p, const pg_gpu *g, const pg_variant *v, uint32_t b)
{
    const cg_buffer *x = &p->plan.buffers[b];
    if (x->kind == CG_BUF_INPUT)
        return p->in[x->index].device ? p->in[x->index].dptr : g->in_buf[x->index].ptr;
    if (!v->buf_abuf || v->buf_abuf[b] == LM_NONE || !g->arena.ptr) return 0;
    return g->arena.ptr + v->aoff[v->buf_abuf[b]];
}

uint64_t pg__gpu_buffer_addr(const pg_program *p, uint32_t v, uint32_t b)
{
    if (!p->gpu || v >= p->n_variants || b >= p->plan.n_buffers) return 0;
    return buffer_addr(p, p->gpu, &p->gpu->var[v], b);
}

/* The launch kernel step s needs at the current dims and addresses. */
static int desired_kernel(pg_program *p, pg_gpu *g, pg_variant *v, uint32_t s, pg_launch *l,
                          lm_err *err)
{
    const cg_plan *pl = &p->plan;
    uint32_t k = pl->steps[s].index;
    const cg_kernel *kk = &pl->kernels[k];
    memset(l, 0, sizeof *l);
    static const int64_t limit[3] = {2147483647, 65535, 65535};
    for (int d = 0; d < 3; d++) {
        char what[128], desc[96];
        pg__kernel_desc(pl, k, desc, sizeof desc);
        snprintf(what, sizeof what, "%s: grid.%c", desc, "xyz"[d]);
        int64_t x;
        if (pg__eval(pl, kk->grid[d], p->dim_val, &x, p->name, what, err)) return err->code;
        if (x < 1 || x > limit[d])
            return pg__fail(err, LM_EARG, pg__at(p->name),
                            "%s = %lld at the current dims; CUDA takes 1 .. %lld", what,
                            (long long)x, (long long)limit[d]);
        l->grid[d] = (uint32_t)x;
    }
    l->nargs = kk->n_params;
    for (uint32_t j = 0; j < kk->n_params; j++) {
        const cg_param *q = &kk->params[j];
        if (q->kind == CG_P_DIM)
            memcpy(&l->args[j], &p->dim_val[q->dim], sizeof l->args[j]);
        else
            l->args[j] = buffer_addr(p, g, v, q->buf);
    }
    return 0;
}

static int make_launch(const pg_program *p, const pg_gpu *g, uint32_t s, const pg_launch *h,
                       rt_launch *l, const void **argp, size_t *sizes)
{
    const cg_kernel *kk = &p->plan.kernels[p->plan.steps[s].index];
    memset(l, 0, sizeof *l);
    l->kernel = g->kern[p->plan.steps[s].index];
    memcpy(l->grid, h->grid, sizeof l->grid);
    memcpy(l->block, kk->block, sizeof l->block);
    l->shared_bytes = kk->shared_bytes;
    l->nargs = h->nargs;
    for (uint32_t j = 0; j < h->nargs; j++) {
        argp[j] = &h->args[j];
        sizes[j] = sizeof h->args[j];
    }
    l->args = argp;
    l->sizes = sizes;
    return 0;
}

static bool rt_type(hl_dtype t, rt_dtype *out)
{
    switch (t) {
    case HL_F32:
        *out = RT_F32;
        return true;
    case HL_F16:
        *out = RT_F16;
        return true;
    case HL_BF16:
        *out = RT_BF16;
        return true;
    case HL_F8E4M3:
        *out = RT_F8_E4M3;
        return true;
    case HL_F8E5M2:
        *out = RT_F8_E5M2;
        return true;
    default:
        return false;
    }
}

/* The cuBLASLt problem and pointers of library-call step s at the current dims. */
static int desired_blas(pg_program *p, pg_gpu *g, pg_variant *v, uint32_t s, rt_matmul_spec *sp,
                        rt_matmul_args *a, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    uint32_t i = pl->steps[s].index;
    const cg_blas *b = &pl->blas[i];
    const ll_matmul *m = &b->mm;
    char what[96];
    snprintf(what, sizeof what, "library call %u (LLIR node %u)", i, b->llir_node);
    int64_t M, N, K, B, lda, ldb, sa, sb;
    if (pg__eval(pl, m->m, p->dim_val, &M, p->name, what, err) ||
        pg__eval(pl, m->n, p->dim_val, &N, p->name, what, err) ||
        pg__eval(pl, m->k, p->dim_val, &K, p->name, what, err) ||
        pg__eval(pl, m->batch, p->dim_val, &B, p->name, what, err) ||
        pg__eval(pl, m->lda, p->dim_val, &lda, p->name, what, err) ||
        pg__eval(pl, m->ldb, p->dim_val, &ldb, p->name, what, err) ||
        pg__eval(pl, m->stride_a, p->dim_val, &sa, p->name, what, err) ||
        pg__eval(pl, m->stride_b, p->dim_val, &sb, p->name, what, err))
        return err->code;
    if (B < 1 || B > INT32_MAX || M < 1 || N < 1 || K < 1 || M > INT64_MAX / N)
        return pg__fail(err, LM_EARG, pg__at(p->name), "%s: sizes m=%lld n=%lld k=%lld batch=%lld", what,
                        (long long)M, (long long)N, (long long)K, (long long)B);
    memset(sp, 0, sizeof *sp);
    sp->m = M, sp->n = N, sp->k = K, sp->batch = (int32_t)B;
    sp->stride_a = sa, sp->stride_b = sb, sp->stride_c = sp->stride_d = M * N;
    sp->order_a = m->order_a == LL_ROW_MAJOR ? RT_ROW_MAJOR : RT_COL_MAJOR;
    sp->order_b = m->order_b == LL_ROW_MAJOR ? RT_ROW_MAJOR : RT_COL_MAJOR;
    sp->order_d = RT_ROW_MAJOR;
    sp->lda = lda, sp->ldb = ldb, sp->ldc = sp->ldd = N;
    if (!rt_type(m->type_a, &sp->type_a) || !rt_type(m->type_b, &sp->type_b) ||
        !rt_type(b->c == LM_NONE ? m->type_d : m->type_c, &sp->type_c) ||
        !rt_type(m->type_d, &sp->type_d) || !rt_type(m->type_bias, &sp->type_bias))
        return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name), "%s: a dtype cuBLASLt does not take", what);
    sp->compute = RT_COMPUTE_F32;
    sp->alpha = (float)m->alpha;
    sp->beta = (float)m->beta;
    static const rt_epilogue epi[] = {RT_EPI_NONE, RT_EPI_BIAS, RT_EPI_GELU, RT_EPI_BIAS_GELU};
    sp->epilogue = epi[m->epilogue];
    lm_err ce = {0};
    if (rt_matmul_spec_check(sp, &ce)) {
        lm_err_copy(err, &ce);
        pg__wrap(err, p->name, "%s", what);
        return err->code;
    }
    memset(a, 0, sizeof *a);
    a->a = buffer_addr(p, g, v, b->a);
    a->b = buffer_addr(p, g, v, b->b);
    a->d = buffer_addr(p, g, v, b->d);
    a->c = b->c == LM_NONE ? a->d : buffer_addr(p, g, v, b->c);
    a->bias = b->bias == LM_NONE ? 0 : buffer_addr(p, g, v, b->bias);
    a->workspace = g->arena.ptr ? g->arena.ptr + v->ws_base + v->ws_off[s] : 0;
    a->workspace_bytes = (size_t)v->ws_planned[s];
    return 0;
}

/* ==================================================================================
 * Graph
 * ================================================================================== */

typedef struct capture_job {
    rt_matmul *mm;
    const rt_matmul_args *args;
} capture_job;

static int capture_blas(rt_ctx *ctx, void *user, lm_err *err)
{
    capture_job *j = user;
    return rt_matmul_enqueue(ctx, j->mm, j->args, err);
}

/* "step 4: kernel 3 (template 'elementwise', LLIR node 7)" or "step 5: library call 1
 * (LLIR node 9)". */
static void step_desc(const cg_plan *pl, uint32_t s, char *buf, size_t cap)
{
    char d[112];
    if (pl->steps[s].kind == CG_STEP_KERNEL)
        pg__kernel_desc(pl, pl->steps[s].index, d, sizeof d);
    else
        snprintf(d, sizeof d, "library call %u (LLIR node %u)", pl->steps[s].index,
                 pl->blas[pl->steps[s].index].llir_node);
    snprintf(buf, cap, "step %u: %s", s, d);
}

/* Builds the source graph of v from held[] and bl[]; *out receives it. */
static int build_graph(pg_program *p, pg_gpu *g, pg_variant *v, rt_graph **out, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    rt_graph *gr = NULL;
    lm_err e = {0};
    if (rt_graph_new(g->ctx, &gr, &e)) goto fail;
    for (uint32_t s = 0; s < pl->n_steps; s++) {
        uint32_t deps[1024];
        uint32_t nd = v->ndeps[s];
        uint32_t *dp = nd <= 1024 ? deps : pg__alloc(nd, sizeof *dp);
        if (!dp) {
            rt_graph_free(gr);
            return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory building the graph");
        }
        for (uint32_t d = 0; d < nd; d++)
            dp[d] = v->node[v->deps[s][d]];
        int rc;
        if (pl->steps[s].kind == CG_STEP_KERNEL) {
            rt_launch l;
            const void *argp[CG_MAX_PARAMS];
            size_t sizes[CG_MAX_PARAMS];
            make_launch(p, g, s, &v->held[s], &l, argp, sizes);
            rc = rt_graph_add_kernel(gr, &l, dp, nd, &v->node[s], &e);
        } else {
            capture_job j = {v->bl[s].mm, &v->bl[s].args};
            rc = rt_graph_add_captured(gr, capture_blas, &j, dp, nd, &v->node[s], &e);
        }
        if (dp != deps) pg__free(dp);
        if (rc) {
            char d[160];
            step_desc(pl, s, d, sizeof d);
            lm_err_copy(err, &e);
            pg__wrap(err, p->name, "building the graph at %s", d);
            rt_graph_free(gr);
            return err->code;
        }
    }
    *out = gr;
    p->count.graphs_built++;
    return 0;
fail:
    lm_err_copy(err, &e);
    pg__wrap(err, p->name, "building the graph");
    return err->code;
}

static bool same_launch(const pg_launch *a, const pg_launch *b)
{
    return memcmp(a->grid, b->grid, sizeof a->grid) == 0 && a->nargs == b->nargs &&
           memcmp(a->args, b->args, a->nargs * sizeof a->args[0]) == 0;
}

static bool same_args(const rt_matmul_args *a, const rt_matmul_args *b)
{
    return a->a == b->a && a->b == b->b && a->c == b->c && a->d == b->d && a->bias == b->bias &&
           a->workspace == b->workspace && a->workspace_bytes == b->workspace_bytes;
}

/* Brings variant vi up to date with the current dims and addresses (see the top). */
static int refresh(pg_program *p, pg_gpu *g, uint32_t vi, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    pg_variant *v = &g->var[vi];
    if (v->built && v->stamped && !v->graph_dirty && v->stamp_epoch == g->epoch &&
        memcmp(v->stamp_dims, p->dim_val, pl->n_dims * sizeof *p->dim_val) == 0)
        return 0;
    v->stamped = false;
    int64_t maxd[64];
    bucket_max(p, vi, maxd);
    bool fresh = !v->planned;
    if (fresh && pg__gpu_variant_alloc(p, v, err)) return err->code;
    bool grow = fresh;
    /* sizes: the bucket's maximum, and at least the current dims' */
    for (uint32_t b = 0; b < pl->n_buffers; b++) {
        const cg_buffer *x = &pl->buffers[b];
        if (x->kind == CG_BUF_INPUT) continue; /* (a library call's workspace: unused) */
        uint64_t now, top = 0;
        if (pg__buffer_bytes(pl, b, p->dim_val, &now, p->name, err)) return err->code;
        if (fresh && pg__buffer_bytes(pl, b, maxd, &top, p->name, err)) return err->code;
        uint64_t want = now > top ? now : top;
        if (want > v->planned[b]) {
            grow |= !fresh;
            v->planned[b] = want;
        }
    }
    /* library calls: prepared for the current sizes (again when they change) */
    bool blas_changed = false;
    for (uint32_t s = 0; s < pl->n_steps; s++) {
        if (pl->steps[s].kind != CG_STEP_BLAS) continue;
        rt_matmul_spec sp;
        rt_matmul_args a;
        if (desired_blas(p, g, v, s, &sp, &a, err)) return err->code;
        pg_blas_state *bs = &v->bl[s];
        if (!bs->valid || !rt_matmul_spec_equal(&sp, &bs->spec)) {
            lm_err me = {0};
            rt_matmul *mm;
            if (rt_matmul_prepare(g->ctx, &sp, &mm, &me)) {
                char d[160];
                step_desc(pl, s, d, sizeof d);
                lm_err_copy(err, &me);
                pg__wrap(err, p->name, "preparing %s", d);
                return err->code;
            }
            p->count.blas_prepares++;
            bs->spec = sp;
            bs->mm = mm;
            bs->valid = true;
            blas_changed = true;
            /* the workspace the prepared call asks for (the plan's workspace buffer is
             * an upper bound, CG_BLAS_WORKSPACE_BYTES; cuBLASLt asks for at most the
             * context's blas_workspace_max) */
            uint64_t need = rt_matmul_workspace(mm);
            if (need > v->ws_planned[s]) {
                grow |= !fresh;
                v->ws_planned[s] = need;
            }
        }
    }
    if (grow || fresh) {
        if (!fresh) p->count.layout_replans++;
        if (pg__gpu_layout(p, g, v, vi, err)) return err->code;
    }
    /* memory: the arena (shared by the variants) and the inputs' buffers */
    uint64_t need = v->total;
    for (uint32_t w = 0; w < p->n_variants; w++)
        if (g->var[w].planned && g->var[w].total > need) need = g->var[w].total;
    bool moved = false;
    lm_err me = {0};
    if (rt_buf_reserve(g->ctx, &g->arena, (size_t)need, &moved, &me)) {
        lm_err_copy(err, &me);
        pg__wrap(err, p->name,
                 "allocating the arena (%llu bytes, variant %u); the program stays usable: "
                 "free device memory or use smaller dims, then run again",
                 (unsigned long long)need, vi);
        return err->code;
    }
    if (moved) {
        p->count.arena_allocs++;
        g->epoch++;
    }
    for (uint32_t i = 0; i < pl->n_inputs; i++) {
        if (p->in[i].device) continue;
        uint32_t b = pl->input_buf[i];
        uint64_t now, top;
        if (pg__buffer_bytes(pl, b, p->dim_val, &now, p->name, err) ||
            pg__buffer_bytes(pl, b, maxd, &top, p->name, err))
            return err->code;
        uint64_t want = now > top ? now : top;
        if (want < 1) want = 1;
        bool mv = false;
        if (rt_buf_reserve(g->ctx, &g->in_buf[i], (size_t)want, &mv, &me)) {
            lm_err_copy(err, &me);
            pg__wrap(err, p->name,
                     "allocating input '%s' (%llu bytes); the program stays usable: free "
                     "device memory or use smaller dims, then run again",
                     p->inputs[i].name, (unsigned long long)want);
            return err->code;
        }
        if (mv) {
            g->in_valid[i] = false;
            g->epoch++;
        }
    }
    for (uint32_t i = 0; i < pl->n_inputs; i++) /* the addresses the nodes get now */
        g->in_addr[i] = p->in[i].device ? p->in[i].dptr : g->in_buf[i].ptr;
    /* what every node needs now */
    bool rebuild = !v->graph || v->graph_dirty || blas_changed;
    for (uint32_t s = 0; s < pl->n_steps; s++)
        if (pl->steps[s].kind == CG_STEP_BLAS) {
            rt_matmul_spec sp;
            rt_matmul_args a;
            if (desired_blas(p, g, v, s, &sp, &a, err)) return err->code;
            if (!same_args(&a, &v->bl[s].args)) {
                v->bl[s].args = a;
                rebuild = true;
            }
        }
    pg_launch *want = pg__alloc(pl->n_steps + 1, sizeof *want);
    if (!want) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
    for (uint32_t s = 0; s < pl->n_steps; s++)
        if (pl->steps[s].kind == CG_STEP_KERNEL && desired_kernel(p, g, v, s, &want[s], err)) {
            pg__free(want);
            return err->code;
        }
    if (rebuild) {
        pg_launch *old = v->held;
        v->held = want;
        rt_graph *gr = NULL;
        if (build_graph(p, g, v, &gr, err)) {
            v->held = old;
            pg__free(want);
            return err->code;
        }
        lm_err xe = {0};
        if (!v->exec) {
            if (rt_exec_new(gr, &v->exec, &xe)) {
                rt_graph_free(gr);
                v->held = old;
                pg__free(want);
                lm_err_copy(err, &xe);
                pg__wrap(err, p->name, "instantiating the graph of variant %u", vi);
                return err->code;
            }
            p->count.instantiations++;
        } else {
            rt_update_kind how;
            if (rt_exec_update(v->exec, gr, &how, &xe)) {
                rt_graph_free(gr);
                v->held = old;
                pg__free(want);
                lm_err_copy(err, &xe);
                pg__wrap(err, p->name, "updating the graph of variant %u", vi);
                return err->code;
            }
            if (how == RT_UPDATE_IN_PLACE)
                p->count.graph_updates++;
            else
                p->count.reinstantiations++;
        }
        rt_graph_free(v->graph);
        v->graph = gr;
        pg__free(old);
        v->graph_dirty = false;
    } else {
        for (uint32_t s = 0; s < pl->n_steps; s++) {
            if (pl->steps[s].kind != CG_STEP_KERNEL || same_launch(&want[s], &v->held[s])) continue;
            rt_launch l;
            const void *argp[CG_MAX_PARAMS];
            size_t sizes[CG_MAX_PARAMS];
            make_launch(p, g, s, &want[s], &l, argp, sizes);
            lm_err ke = {0};
            if (rt_exec_set_kernel(v->exec, v->node[s], &l, &ke)) {
                char d[160];
                step_desc(pl, s, d, sizeof d);
                lm_err_copy(err, &ke);
                pg__wrap(err, p->name, "updating %s in place", d);
                pg__free(want);
                return err->code;
            }
            v->held[s] = want[s];
            p->count.kernel_node_updates++;
        }
        pg__free(want);
    }
    v->built = true;
    v->stamped = true;
    v->stamp_epoch = g->epoch;
    memcpy(v->stamp_dims, p->dim_val, pl->n_dims * sizeof *p->dim_val);
    return 0;
}

/* ==================================================================================
 * Running
 * ================================================================================== */

/* After a failed launch or sync: what the error means for the process. */
static void explain(pg_program *p, lm_err *err, const char *where)
{
    if (err->code == LM_EFAULT)
        pg__wrap(err, p->name,
                 "%s faulted; the CUDA context is poisoned and this process must be restarted "
                 "(an illegal address cannot be recovered in process). To name the kernel: in "
                 "a fresh process load the program with defer_gpu and call "
                 "pg_program_diagnose, or run with stepwise",
                 where);
    else
        pg__wrap(err, p->name, "%s failed; the program stays usable", where);
}

/* Runs the steps of variant v one by one with a sync after each. *failed receives the
 * step that failed (LM_NONE when none). */
static int run_stepwise(pg_program *p, pg_gpu *g, pg_variant *v, uint32_t *failed, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    *failed = LM_NONE;
    for (uint32_t s = 0; s < pl->n_steps; s++) {
        lm_err e = {0};
        if (pl->steps[s].kind == CG_STEP_KERNEL) {
            rt_launch l;
            const void *argp[CG_MAX_PARAMS];
            size_t sizes[CG_MAX_PARAMS];
            make_launch(p, g, s, &v->held[s], &l, argp, sizes);
            rt_launch_kernel(g->ctx, &l, &e);
        } else {
            rt_matmul_enqueue(g->ctx, v->bl[s].mm, &v->bl[s].args, &e);
        }
        rt_ctx_sync(g->ctx, &e);
        if (e.code) {
            *failed = s;
            char d[160];
            step_desc(pl, s, d, sizeof d);
            lm_err_copy(err, &e);
            explain(p, err, d);
            return err->code;
        }
    }
    return 0;
}

static int upload_inputs(pg_program *p, pg_gpu *g, lm_err *err)
{
    for (uint32_t i = 0; i < p->plan.n_inputs; i++) {
        pg_in_state *st = &p->in[i];
        if (st->device || (!st->dirty && g->in_valid[i])) continue;
        lm_err e = {0};
        if (rt_copy_htod(g->ctx, g->in_buf[i].ptr, st->host, st->bytes, &e)) {
            lm_err_copy(err, &e);
            explain(p, err, "uploading an input");
            return err->code;
        }
        g->in_valid[i] = true;
        p->count.uploads++;
        p->count.bytes_uploaded += st->bytes;
    }
    return 0;
}

/* Device inputs whose address changed since the nodes were given them bump the epoch. */
static void note_input_addresses(pg_program *p, pg_gpu *g)
{
    for (uint32_t i = 0; i < p->plan.n_inputs; i++) {
        uint64_t a = p->in[i].device ? p->in[i].dptr : g->in_buf[i].ptr;
        if (a != g->in_addr[i]) {
            g->in_addr[i] = a;
            g->epoch++;
        }
    }
}

int pg__gpu_run(pg_program *p, uint32_t vi, lm_err *err)
{
    pg_gpu *g = p->gpu;
    note_input_addresses(p, g); /* device inputs given new addresses */
    if (refresh(p, g, vi, err) || upload_inputs(p, g, err)) return err->code;
    g->cur = vi;
    pg_variant *v = &g->var[vi];
    if (p->stepwise) {
        uint32_t failed;
        return run_stepwise(p, g, v, &failed, err);
    }
    lm_err e = {0};
    if (rt_exec_launch(v->exec, &e) || rt_ctx_sync(g->ctx, &e)) {
        char where[128];
        snprintf(where, sizeof where, "the graph replay (variant %u, %u steps)", vi,
                 p->plan.n_steps);
        lm_err_copy(err, &e);
        explain(p, err, where);
        return err->code;
    }
    return 0;
}

int pg__gpu_time(pg_program *p, uint32_t vi, uint32_t warmup, uint32_t trials, uint32_t reps,
                 double timeout_ms, double *median, double *lo, double *hi, lm_err *err)
{
    pg_gpu *g = p->gpu;
    note_input_addresses(p, g);
    if (refresh(p, g, vi, err) || upload_inputs(p, g, err)) return err->code;
    g->cur = vi;
    rt_time_opts o;
    rt_time_opts_default(&o);
    o.warmup = warmup;
    o.trials = trials;
    o.reps = reps;
    if (timeout_ms > 0) o.timeout_ms = timeout_ms;
    rt_timing t;
    lm_err e = {0};
    if (rt_exec_time(g->var[vi].exec, &o, &t, &e)) {
        lm_err_copy(err, &e);
        explain(p, err, "timing the graph replay");
        return err->code;
    }
    *median = t.median_ms;
    *lo = t.min_ms;
    *hi = t.max_ms;
    return 0;
}

int pg__gpu_download(pg_program *p, uint32_t i, lm_err *err)
{
    pg_gpu *g = p->gpu;
    pg_out_state *st = &p->out[i];
    if (st->bytes > st->cap || !st->host) {
        void *h;
        bool pinned;
        if (pg__gpu_host_alloc(p, st->bytes ? st->bytes : 1, &h, &pinned, err)) return err->code;
        pg__gpu_host_free(p, st->host, st->pinned);
        st->host = h;
        st->pinned = pinned;
        st->cap = st->bytes ? st->bytes : 1;
    }
    uint64_t a = buffer_addr(p, g, &g->var[g->cur], p->plan.output_buf[i]);
    lm_err e = {0};
    if (rt_copy_dtoh(g->ctx, st->host, a, st->bytes, &e) || rt_ctx_sync(g->ctx, &e)) {
        lm_err_copy(err, &e);
        explain(p, err, "reading an output back");
        return err->code;
    }
    p->count.downloads++;
    p->count.bytes_downloaded += st->bytes;
    return 0;
}

int pg__gpu_output_device(pg_program *p, uint32_t i, uint64_t *dptr, lm_err *err)
{
    (void)err;
    pg_gpu *g = p->gpu;
    *dptr = buffer_addr(p, g, &g->var[g->cur], p->plan.output_buf[i]);
    return 0;
}

/* ==================================================================================
 * Diagnosis in a child process
 * ================================================================================== */

typedef struct diag_rec {
    int32_t faulted, code;
    uint32_t step;
    char msg[LM_ERR_MSG];
} diag_rec;

static int diag_child(rt_ctx *ctx, void *user, void *out, size_t out_size, lm_err *err)
{
    (void)out_size;
    pg_program *p = user; /* the child's copy: free to change */
    diag_rec *rec = out;
    rec->step = LM_NONE;
    p->gpu = NULL; /* the parent's (mock) state is not ours: never freed here */
    for (uint32_t i = 0; i < p->plan.n_inputs; i++)
        p->in[i].dirty = true;
    pg_gpu *g;
    if (gpu_new(p, ctx, false, &g, err)) return err->code;
    p->gpu = g;
    uint32_t vi = pg__variant_of(p, p->dim_val, err);
    if (vi == LM_NONE) return err->code;
    if (refresh(p, g, vi, err) || upload_inputs(p, g, err)) return err->code;
    lm_err se = {0};
    uint32_t failed;
    if (run_stepwise(p, g, &g->var[vi], &failed, &se)) {
        rec->faulted = 1;
        rec->code = se.code;
        rec->step = failed;
        memcpy(rec->msg, se.msg, sizeof rec->msg);
    }
    return 0; /* the record carries what happened; the process ends without freeing */
}

int pg__gpu_diagnose(pg_program *p, double timeout_ms, pg_diagnosis *out, lm_err *err)
{
    if (p->gpu && !p->mock)
        return pg__fail(err, LM_EARG, pg__at(p->name),
                        "diagnose: this process has opened the GPU already, and a forked child "
                        "cannot use its CUDA; in a fresh process, load the program with "
                        "defer_gpu, set the inputs and diagnose before the first run");
    diag_rec *rec = pg__alloc(1, sizeof *rec);
    if (!rec) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
    lm_err e = {0};
    if (rt_isolated_run(p->rt_opt, p->mock, diag_child, p, rec, sizeof *rec, timeout_ms, &e)) {
        pg__free(rec);
        lm_err_copy(err, &e);
        pg__wrap(err, p->name, "diagnose (the steps one by one in a child process)");
        return err->code;
    }
    out->faulted = rec->faulted != 0;
    out->step = rec->step;
    out->code = rec->code;
    memcpy(out->msg, rec->msg, sizeof out->msg);
    out->msg[sizeof out->msg - 1] = '\0';
    if (out->faulted && out->step < p->plan.n_steps) {
        const cg_step *st = &p->plan.steps[out->step];
        if (st->kind == CG_STEP_KERNEL) {
            const cg_kernel *k = &p->plan.kernels[st->index];
            out->kernel = st->index;
            out->llir_node = k->llir_node;
            snprintf(out->template_name, sizeof out->template_name, "%s",
                     k->template_name ? k->template_name : "?");
        } else {
            out->llir_node = p->plan.blas[st->index].llir_node;
            snprintf(out->template_name, sizeof out->template_name, "cublasLt");
        }
    }
    pg__free(rec);
    return 0;
}
