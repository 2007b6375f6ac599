/* pg_gpu_layout.c - the GPU backend's layout of a variant (pg_gpu.c has the rest):
 *
 *   layout    per variant, at its bucket's maximum dims: intermediates, kernels'
 *             workspaces and outputs planned into one arena by rt_arena_plan, library-call
 *             workspaces after them by rt_matmul_workspace_plan, inputs in device buffers
 *             of their own, also sized for the bucket's maximum
 *   deps      step j waits on an earlier step i when both touch a byte of the same
 *             memory and one of them writes it, transitively reduced
 */
#include "pg_gpu.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One memory access of a step: space 0 is the arena, 1 + i input i. */
typedef struct access {
    uint32_t space;
    uint64_t lo, hi; /* [lo, hi) */
    bool write;
} access;

#define MAX_ACCESS (CG_MAX_PARAMS + 8)

static uint32_t step_accesses(const pg_program *p, const pg_variant *v, uint32_t s, access *a)
{
    const cg_plan *pl = &p->plan;
    uint32_t n = 0;
    uint32_t bufs[CG_MAX_PARAMS + 8];
    bool wr[CG_MAX_PARAMS + 8];
    uint32_t nb = 0;
    if (pl->steps[s].kind == CG_STEP_KERNEL) {
        const cg_kernel *k = &pl->kernels[pl->steps[s].index];
        for (uint32_t j = 0; j < k->n_params; j++)
            if (k->params[j].kind == CG_P_BUFFER) {
                bufs[nb] = k->params[j].buf;
                wr[nb++] = k->params[j].written || pl->buffers[k->params[j].buf].first_step == s;
            }
    } else {
        const cg_blas *b = &pl->blas[pl->steps[s].index];
        uint32_t r[4] = {b->a, b->b, b->c, b->bias};
        for (int j = 0; j < 4; j++)
            if (r[j] != LM_NONE) bufs[nb] = r[j], wr[nb++] = false;
        bufs[nb] = b->d, wr[nb++] = true;
    }
    for (uint32_t j = 0; j < nb; j++) {
        const cg_buffer *x = &pl->buffers[bufs[j]];
        if (x->kind == CG_BUF_INPUT) {
            a[n++] = (access){1 + x->index, 0, UINT64_MAX, false};
        } else if (v->buf_abuf[bufs[j]] != LM_NONE) {
            uint32_t e = v->buf_abuf[bufs[j]];
            if (!v->abuf[e].bytes) continue;
            a[n++] = (access){0, v->aoff[e], v->aoff[e] + v->abuf[e].bytes,
                              wr[j] && x->kind != CG_BUF_INPUT};
        }
    }
    return n;
}

static bool conflict(const access *a, uint32_t na, const access *b, uint32_t nb)
{
    for (uint32_t i = 0; i < na; i++)
        for (uint32_t j = 0; j < nb; j++)
            if (a[i].space == b[j].space && a[i].lo < b[j].hi && b[j].lo < a[i].hi &&
                (a[i].write || b[j].write))
                return true;
    return false;
}

/* deps of every step from the layout, and the library calls' workspace plan. */
static int plan_deps_and_workspaces(pg_program *p, pg_variant *v, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    uint32_t n = pl->n_steps, words = (n + 63) / 64;
    uint64_t *reach = pg__alloc((size_t)n * words + 1, sizeof *reach);
    access(*acc)[MAX_ACCESS] = pg__alloc(n + 1, sizeof *acc);
    uint32_t *nacc = pg__alloc(n + 1, sizeof *nacc);
    uint32_t *tmp = pg__alloc(n + 1, sizeof *tmp);
    if (!reach || !acc || !nacc || !tmp) goto oom;
    for (uint32_t s = 0; s < n; s++)
        nacc[s] = step_accesses(p, v, s, acc[s]);
    for (uint32_t s = 0; s < n; s++) {
        pg__free(v->deps[s]);
        v->deps[s] = NULL;
        v->ndeps[s] = 0;
    }
    for (uint32_t j = 0; j < n; j++) {
        uint64_t *rj = reach + (size_t)j * words;
        uint32_t nd = 0;
        for (uint32_t i = j; i-- > 0;) {
            if (rj[i / 64] >> (i % 64) & 1) continue; /* already waited on through another */
            if (!conflict(acc[i], nacc[i], acc[j], nacc[j])) continue;
            tmp[nd++] = i;
            const uint64_t *ri = reach + (size_t)i * words;
            for (uint32_t w = 0; w < words; w++)
                rj[w] |= ri[w];
            rj[i / 64] |= (uint64_t)1 << (i % 64);
        }
        if (nd) {
            v->deps[j] = pg__alloc(nd, sizeof *v->deps[j]);
            if (!v->deps[j]) goto oom;
            for (uint32_t d = 0; d < nd; d++) /* ascending */
                v->deps[j][d] = tmp[nd - 1 - d];
            v->ndeps[j] = nd;
        }
    }
    /* workspaces: calls numbered in step order; a pair for every call that (transitively)
     * depends on an earlier one */
    uint32_t ncalls = 0;
    for (uint32_t s = 0; s < n; s++)
        ncalls += pl->steps[s].kind == CG_STEP_BLAS;
    v->ws_peak = 0;
    if (ncalls) {
        uint32_t *call_step = pg__alloc(ncalls, sizeof *call_step);
        uint64_t *sizes = pg__alloc(ncalls, sizeof *sizes), *offs = pg__alloc(ncalls, sizeof *offs);
        size_t maxp = (size_t)ncalls * (ncalls - 1) / 2 + 1;
        rt_arena_pair *pairs = pg__alloc(maxp, sizeof *pairs);
        if (!call_step || !sizes || !offs || !pairs) {
            pg__free(call_step), pg__free(sizes), pg__free(offs), pg__free(pairs);
            goto oom;
        }
        uint32_t c = 0, np = 0;
        for (uint32_t s = 0; s < n; s++)
            if (pl->steps[s].kind == CG_STEP_BLAS)
                call_step[c] = s, sizes[c] = v->ws_planned[s], c++;
        for (uint32_t b = 0; b < ncalls; b++)
            for (uint32_t a = 0; a < b; a++) {
                uint32_t sa = call_step[a], sb = call_step[b];
                if (reach[(size_t)sb * words + sa / 64] >> (sa % 64) & 1)
                    pairs[np++] = (rt_arena_pair){a, b};
            }
        lm_err we = {0};
        int rc = rt_matmul_workspace_plan(sizes, ncalls, pairs, np, offs, &v->ws_peak, &we);
        for (uint32_t i = 0; !rc && i < ncalls; i++)
            v->ws_off[call_step[i]] = offs[i];
        pg__free(call_step), pg__free(sizes), pg__free(offs), pg__free(pairs);
        if (rc) {
            lm_err_copy(err, &we);
            pg__wrap(err, p->name, "planning workspaces");
            pg__free(reach), pg__free(acc), pg__free(nacc), pg__free(tmp);
            return err->code;
        }
    }
    pg__free(reach), pg__free(acc), pg__free(nacc), pg__free(tmp);
    return 0;
oom:
    pg__free(reach), pg__free(acc), pg__free(nacc), pg__free(tmp);
    return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory ordering the steps");
}

void pg__gpu_variant_fini(pg_program *p, pg_variant *v)
{
    rt_exec_free(v->exec);
    rt_graph_free(v->graph);
    for (uint32_t s = 0; v->deps && s < p->plan.n_steps; s++)
        pg__free(v->deps[s]);
    pg__free(v->deps);
    pg__free(v->ndeps);
    pg__free(v->planned);
    pg__free(v->ws_planned);
    pg__free(v->abuf);
    pg__free(v->aoff);
    pg__free(v->buf_abuf);
    pg__free(v->ws_off);
    pg__free(v->node);
    pg__free(v->held);
    pg__free(v->bl);
    pg__free(v->stamp_dims);
    memset(v, 0, sizeof *v);
}

/* The arena layout of variant v from v->planned. */
int pg__gpu_layout(pg_program *p, pg_gpu *g, pg_variant *v, uint32_t vi, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    uint32_t last = pl->n_steps ? pl->n_steps - 1 : 0;
    uint32_t *entry_of_slot = pg__alloc(pl->n_buffers + 1, sizeof *entry_of_slot);
    if (!entry_of_slot) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
    for (uint32_t b = 0; b < pl->n_buffers; b++)
        entry_of_slot[b] = LM_NONE;
    v->n_abuf = 0;
    for (uint32_t b = 0; b < pl->n_buffers; b++)
        v->buf_abuf[b] = LM_NONE;
    for (uint32_t i = 0; i < pl->n_blas; i++) /* library calls' workspaces: planned apart */
        if (pl->blas[i].workspace != LM_NONE) entry_of_slot[pl->blas[i].workspace] = LM_NONE - 1;
    for (uint32_t b = 0; b < pl->n_buffers; b++) {
        const cg_buffer *x = &pl->buffers[b];
        if (x->kind == CG_BUF_INPUT || entry_of_slot[b] == LM_NONE - 1) continue;
        uint32_t s = p->slot[b];
        /* the slot is a temporary that owns its memory (pg__plan_inplace), or b's own */
        assert(s < pl->n_buffers && p->slot[s] == s);
        assert(s == b || (pl->buffers[s].kind == CG_BUF_TEMP && x->kind == CG_BUF_TEMP));
        uint32_t e = entry_of_slot[s];
        uint32_t first = x->kind == CG_BUF_OUTPUT ? 0 : x->first_step;
        uint32_t lst = x->kind == CG_BUF_OUTPUT ? last : x->last_step;
        if (e == LM_NONE) {
            e = entry_of_slot[s] = v->n_abuf++;
            v->abuf[e] = (rt_arena_buf){v->planned[b], first, lst};
        } else {
            rt_arena_buf *a = &v->abuf[e];
            if (v->planned[b] > a->bytes) a->bytes = v->planned[b];
            if (first < a->first) a->first = first;
            if (lst > a->last) a->last = lst;
        }
        v->buf_abuf[b] = e;
    }
    pg__free(entry_of_slot);
    lm_err ae = {0};
    if (rt_arena_plan(v->abuf, v->n_abuf, NULL, 0, v->aoff, &v->data_peak, &ae)) {
        lm_err_copy(err, &ae);
        pg__wrap(err, p->name, "planning the arena of variant %u", vi);
        return err->code;
    }
    if (plan_deps_and_workspaces(p, v, err)) return err->code;
    v->ws_base = (v->data_peak + RT_ARENA_ALIGN - 1) / RT_ARENA_ALIGN * RT_ARENA_ALIGN;
    v->total = v->ws_base + v->ws_peak;
    if (v->total < RT_ARENA_ALIGN) v->total = RT_ARENA_ALIGN;
    size_t dev_mem = rt_ctx_device(g->ctx)->total_mem;
    if (v->total > dev_mem) {
        uint32_t big = 0;
        for (uint32_t e = 1; e < v->n_abuf; e++)
            if (v->abuf[e].bytes > v->abuf[big].bytes) big = e;
        uint32_t bb = LM_NONE;
        for (uint32_t b = 0; b < pl->n_buffers && bb == LM_NONE; b++)
            if (v->buf_abuf[b] == big) bb = b;
        return pg__fail(err, LM_ELIMIT, pg__at(p->name),
                        "variant %u needs an arena of %llu bytes, more than the device's %zu "
                        "(the largest buffer: %u of LLIR node %u, %llu bytes); use smaller "
                        "dims or buckets",
                        vi, (unsigned long long)v->total, dev_mem, bb,
                        bb == LM_NONE ? LM_NONE : pl->buffers[bb].llir_node,
                        (unsigned long long)(v->n_abuf ? v->abuf[big].bytes : 0));
    }
    v->graph_dirty = true;
    return 0;
}

int pg__gpu_variant_alloc(pg_program *p, pg_variant *v, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    uint32_t nb = pl->n_buffers + 1, ns = pl->n_steps + 1;
    v->planned = pg__alloc(nb, sizeof *v->planned);
    v->ws_planned = pg__alloc(ns, sizeof *v->ws_planned);
    v->abuf = pg__alloc(nb, sizeof *v->abuf);
    v->aoff = pg__alloc(nb, sizeof *v->aoff);
    v->buf_abuf = pg__alloc(nb, sizeof *v->buf_abuf);
    v->ws_off = pg__alloc(ns, sizeof *v->ws_off);
    v->deps = pg__alloc(ns, sizeof *v->deps);
    v->ndeps = pg__alloc(ns, sizeof *v->ndeps);
    v->node = pg__alloc(ns, sizeof *v->node);
    v->held = pg__alloc(ns, sizeof *v->held);
    v->bl = pg__alloc(ns, sizeof *v->bl);
    v->stamp_dims = pg__alloc(pl->n_dims + 1, sizeof *v->stamp_dims);
    if (!v->planned || !v->ws_planned || !v->abuf || !v->aoff || !v->buf_abuf || !v->ws_off ||
        !v->deps || !v->ndeps || !v->node || !v->held || !v->bl || !v->stamp_dims) {
        pg__gpu_variant_fini(p, v);
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory laying out a variant");
    }
    return 0;
}

