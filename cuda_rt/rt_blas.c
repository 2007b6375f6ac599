/* rt_blas.c: prepared cuBLASLt matmuls, the heuristic cache, enqueue, workspace planning.
 *
 * Prepare does everything that may allocate or talk to the heuristic: descriptors,
 * layouts, the algorithm and the workspace size. Enqueue only sets pointer attributes
 * (host-side writes into the descriptor) and calls cublasLtMatmul, so it never
 * allocates, copies or synchronizes and can be captured into a graph.
 *
 * Two caches:
 *  - the heuristic cache (rt_blas_cache), keyed by (spec, device, cuBLASLt version,
 *    workspace cap); it holds no driver object, so it survives resets and can be shared
 *    between contexts;
 *  - the prepared matmuls of a context, keyed by spec; they die with the context's
 *    primary context (reset) because they hang off its cuBLASLt handle.
 * Both are scanned in insertion order (hash first, then field by field).
 */
#include "rt_int.h"

#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

enum {
    BLAS_CACHE_FIRST_CAP = 16, /* entries of a cache's (or prepared list's) first block */
    TUNE_ROUNDS = 2,           /* rounds over every offer (see rt_matmul_tune) */
    TUNE_WARMUP = 2,           /* calls before an algorithm's trials */
    TUNE_TRIALS = 3,           /* timed trials per algorithm and round; the median counts */
    TUNE_CALLS = 20,           /* calls per trial */
};

typedef struct heur_entry {
    rt_matmul_spec spec;
    uint64_t hash;
    uint64_t device;
    size_t version;
    size_t ws_max;
    cublasLtMatmulAlgo_t algo;
    size_t ws_size;
} heur_entry;

struct rt_blas_cache {
    heur_entry *e;
    uint32_t n, cap;
};

struct rt_matmul {
    rt_matmul_spec spec;
    uint64_t hash;
    uint32_t gen;
    rt_lt_problem p;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulAlgo_t algo;
    size_t ws_size;
    float alpha, beta;
};

struct rt_blas_state {
    cublasLtHandle_t handle;
    rt_matmul **mm;
    uint32_t n, cap;
};

rt_blas_cache *rt_blas_cache_new(void)
{
    return rt__alloc(1, sizeof(rt_blas_cache));
}

void rt_blas_cache_free(rt_blas_cache *c)
{
    if (!c) return;
    rt__free(c->e);
    rt__free(c);
}

size_t rt_matmul_workspace(const rt_matmul *mm)
{
    return mm->ws_size;
}
const rt_matmul_spec *rt_matmul_get_spec(const rt_matmul *mm)
{
    return &mm->spec;
}

void rt_blas_stats_get(const rt_ctx *ctx, rt_blas_stats *out)
{
    *out = ctx->blas_stats;
}

static uint64_t device_key(const rt_ctx *ctx)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, ctx->info.name, strlen(ctx->info.name));
    int v[3] = {ctx->info.cc_major, ctx->info.cc_minor, ctx->info.sm_count};
    XXH3_64bits_update(&st, v, sizeof v);
    return XXH3_64bits_digest(&st);
}

static void mm_destroy(rt_ctx *ctx, rt_matmul *mm)
{
    rt_blaslib *b = &ctx->blaslib;
    if (mm->la) b->layout_destroy(b->self, mm->la);
    if (mm->lb) b->layout_destroy(b->self, mm->lb);
    if (mm->lc) b->layout_destroy(b->self, mm->lc);
    if (mm->ld) b->layout_destroy(b->self, mm->ld);
    if (mm->desc) b->desc_destroy(b->self, mm->desc);
    rt__free(mm);
}

void rt__blas_drop(rt_ctx *ctx, bool destroy)
{
    rt_blas_state *s = ctx->blas;
    if (!s) return;
    for (uint32_t i = 0; i < s->n; i++) {
        if (destroy)
            mm_destroy(ctx, s->mm[i]);
        else
            rt__free(s->mm[i]);
    }
    if (destroy && s->handle) ctx->blaslib.destroy(ctx->blaslib.self, s->handle);
    rt__free(s->mm);
    rt__free(s);
    ctx->blas = NULL;
}

static int lt_check(lm_err *err, cublasStatus_t st, const char *file, int line, const char *call,
                    const rt_matmul_spec *s)
{
    if (st == CUBLAS_STATUS_SUCCESS) return 0;
    return rt__fail(err, RT_EBLAS, rt__at(file, line),
                    "%s failed: %s (%d) for matmul m=%lld n=%lld k=%lld batch=%d; fix: %s", call,
                    rt__blas_status_name(st), (int)st, (long long)s->m, (long long)s->n,
                    (long long)s->k, s->batch,
                    st == CUBLAS_STATUS_NOT_SUPPORTED
                        ? "this type/layout/epilogue combination is not supported by cuBLASLt "
                          "on this device: change the spec"
                    : st == CUBLAS_STATUS_INVALID_VALUE
                        ? "check leading dimensions, strides and pointer alignment (256 bytes)"
                        : "see the cuBLASLt documentation for this status");
}
#define LT(err, st, call, spec) lt_check((err), (st), __FILE__, __LINE__, (call), (spec))

static int make_layout(rt_ctx *ctx, const rt_lt_operand *o, int32_t batch,
                       cublasLtMatrixLayout_t *l, const char *which, const rt_matmul_spec *s,
                       lm_err *err)
{
    rt_blaslib *b = &ctx->blaslib;
    char call[96];
    snprintf(call, sizeof call, "cublasLtMatrixLayoutCreate(%s %llux%llu ld %lld)", which,
             (unsigned long long)o->rows, (unsigned long long)o->cols, (long long)o->ld);
    if (LT(err, b->layout_create(b->self, l, o->type, o->rows, o->cols, o->ld), call, s))
        return err->code;
    if (batch > 1) {
        int64_t stride = o->stride;
        if (LT(err,
               b->layout_set(b->self, *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch),
               "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", s) ||
            LT(err,
               b->layout_set(b->self, *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                             sizeof stride),
               "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", s))
            return err->code;
    }
    return 0;
}

/* The cache's entry for mm on this device, library version and workspace cap, or NULL. */
static heur_entry *cache_find(const rt_ctx *ctx, const rt_matmul *mm)
{
    rt_blas_cache *c = ctx->blas_cache;
    uint64_t dev = device_key(ctx);
    for (uint32_t i = 0; i < c->n; i++) {
        heur_entry *e = &c->e[i];
        if (e->hash == mm->hash && e->device == dev && e->version == ctx->blaslib.version &&
            e->ws_max == ctx->opt.blas_workspace_max && rt_matmul_spec_equal(&e->spec, &mm->spec))
            return e;
    }
    return NULL;
}

/* The one heuristic query: up to `requested` algorithms for mm's descriptors whose
 * workspace fits ws_cap bytes, into res[0..*got). `call` names the query in messages. */
static int heuristic(rt_ctx *ctx, rt_matmul *mm, uint64_t ws_cap, int requested,
                     cublasLtMatmulHeuristicResult_t *res, int *got, const char *call, lm_err *err)
{
    rt_blaslib *b = &ctx->blaslib;
    const rt_matmul_spec *s = &mm->spec;
    cublasLtMatmulPreference_t pref = NULL;
    *got = 0;
    if (LT(err, b->pref_create(b->self, &pref), "cublasLtMatmulPreferenceCreate", s))
        return err->code;
    ctx->blas_stats.heuristic_calls++;
    int rc = LT(err,
                b->pref_set(b->self, pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_cap,
                            sizeof ws_cap),
                "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", s);
    if (!rc)
        rc = LT(err,
                b->heuristic(b->self, ctx->blas->handle, mm->desc, mm->la, mm->lb, mm->lc, mm->ld,
                             pref, requested, res, got),
                call, s);
    b->pref_destroy(b->self, pref);
    return rc;
}

/* The algorithm for mm, from the cache or the heuristic. */
static int choose_algo(rt_ctx *ctx, rt_matmul *mm, lm_err *err)
{
    const heur_entry *hit = cache_find(ctx, mm);
    if (hit) {
        mm->algo = hit->algo;
        mm->ws_size = hit->ws_size;
        ctx->blas_stats.heuristic_hits++;
        return 0;
    }
    rt_blas_cache *c = ctx->blas_cache;
    if (c->n == c->cap) { /* grow first, so a failure leaves the cache as it was */
        uint32_t cap = c->cap ? c->cap * 2 : BLAS_CACHE_FIRST_CAP;
        heur_entry *e = rt__realloc(c->e, cap, sizeof *e);
        if (!e) return RT_FAIL(err, RT_ENOMEM, "out of memory growing the heuristic cache");
        c->e = e;
        c->cap = cap;
    }
    const rt_matmul_spec *s = &mm->spec;
    size_t ws_max = ctx->opt.blas_workspace_max;
    cublasLtMatmulHeuristicResult_t res[1];
    int got = 0;
    if (heuristic(ctx, mm, ws_max, 1, res, &got, "cublasLtMatmulAlgoGetHeuristic", err))
        return err->code;
    if (got < 1 || res[0].state != CUBLAS_STATUS_SUCCESS)
        return RT_FAIL(err, RT_EBLAS,
                       "cublasLtMatmulAlgoGetHeuristic found no algorithm for m=%lld n=%lld k=%lld "
                       "batch=%d within a %zu-byte workspace; fix: raise blas_workspace_max or "
                       "change the types, layouts or epilogue",
                       (long long)s->m, (long long)s->n, (long long)s->k, s->batch, ws_max);
    mm->algo = res[0].algo;
    mm->ws_size = res[0].workspaceSize;
    c->e[c->n++] = (heur_entry){mm->spec, mm->hash, device_key(ctx), ctx->blaslib.version,
                                ws_max,   mm->algo, mm->ws_size};
    return 0;
}

static int build(rt_ctx *ctx, rt_matmul *mm, lm_err *err)
{
    rt_blaslib *b = &ctx->blaslib;
    const rt_matmul_spec *s = &mm->spec;
    rt_lt_problem *p = &mm->p;
    if (LT(err, b->desc_create(b->self, &mm->desc, p->compute, CUDA_R_32F),
           "cublasLtMatmulDescCreate", s))
        return err->code;
    int32_t ta = p->a.op, tb = p->b.op, epi = p->epilogue;
    if (LT(err, b->desc_set(b->self, mm->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
           "cublasLtMatmulDescSetAttribute(TRANSA)", s) ||
        LT(err, b->desc_set(b->self, mm->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
           "cublasLtMatmulDescSetAttribute(TRANSB)", s) ||
        LT(err, b->desc_set(b->self, mm->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
           "cublasLtMatmulDescSetAttribute(EPILOGUE)", s))
        return err->code;
    if (rt__epi_has_bias(s->epilogue)) {
        int32_t bt = p->bias_type;
        if (LT(err,
               b->desc_set(b->self, mm->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt),
               "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)", s))
            return err->code;
    }
    /* fp8 scales: the heuristic must see a scaled problem (an algorithm chosen without
     * them is refused once they are set), so placeholders stand in until enqueue. */
    const void *placeholder = (const void *)(uintptr_t)256;
    bool sa = p->swapped ? s->scale_b : s->scale_a, sb = p->swapped ? s->scale_a : s->scale_b;
    if ((sa && LT(err,
                  b->desc_set(b->self, mm->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder,
                              sizeof placeholder),
                  "cublasLtMatmulDescSetAttribute(A_SCALE)", s)) ||
        (sb && LT(err,
                  b->desc_set(b->self, mm->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder,
                              sizeof placeholder),
                  "cublasLtMatmulDescSetAttribute(B_SCALE)", s)) ||
        (s->scale_d && LT(err,
                          b->desc_set(b->self, mm->desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
                                      &placeholder, sizeof placeholder),
                          "cublasLtMatmulDescSetAttribute(D_SCALE)", s)))
        return err->code;
    if (make_layout(ctx, &p->a, s->batch, &mm->la, "A", s, err) ||
        make_layout(ctx, &p->b, s->batch, &mm->lb, "B", s, err) ||
        make_layout(ctx, &p->c, s->batch, &mm->lc, "C", s, err) ||
        make_layout(ctx, &p->d, s->batch, &mm->ld, "D", s, err))
        return err->code;
    return choose_algo(ctx, mm, err);
}

int rt_matmul_prepare(rt_ctx *ctx, const rt_matmul_spec *s, rt_matmul **out, lm_err *err)
{
    *out = NULL;
    if (rt__ctx_usable(ctx, err) || rt_matmul_spec_check(s, err)) return err->code;
    bool fp8 = s->type_a == RT_F8_E4M3 || s->type_a == RT_F8_E5M2;
    int cc = ctx->info.cc_major * 10 + ctx->info.cc_minor;
    if (fp8 && cc < 89)
        return RT_FAIL(
            err, RT_EUNSUPPORTED,
            "fp8 matmul needs compute capability 8.9 or newer; this device (%s) is %d.%d",
            ctx->info.name, ctx->info.cc_major, ctx->info.cc_minor);
    if (rt__ctx_blas(ctx, err)) return err->code;
    if (!ctx->blas) {
        rt_blas_state *st = rt__alloc(1, sizeof *st);
        if (!st) return RT_FAIL(err, RT_ENOMEM, "out of memory for cuBLASLt state");
        cublasStatus_t cs = ctx->blaslib.create(ctx->blaslib.self, &st->handle);
        if (cs != CUBLAS_STATUS_SUCCESS) {
            rt__free(st);
            return LT(err, cs, "cublasLtCreate", s);
        }
        ctx->blas = st;
    }
    rt_blas_state *st = ctx->blas;
    uint64_t h = rt_matmul_spec_hash(s);
    for (uint32_t i = 0; i < st->n; i++)
        if (st->mm[i]->hash == h && rt_matmul_spec_equal(&st->mm[i]->spec, s)) {
            ctx->blas_stats.prepared_hits++;
            *out = st->mm[i];
            return 0;
        }
    if (st->n == st->cap) {
        uint32_t cap = st->cap ? st->cap * 2 : BLAS_CACHE_FIRST_CAP;
        rt_matmul **mm = rt__realloc(st->mm, cap, sizeof *mm);
        if (!mm) return RT_FAIL(err, RT_ENOMEM, "out of memory growing the prepared matmuls");
        st->mm = mm;
        st->cap = cap;
    }
    rt_matmul *mm = rt__alloc(1, sizeof *mm);
    if (!mm) return RT_FAIL(err, RT_ENOMEM, "out of memory preparing a matmul");
    mm->spec = *s;
    mm->hash = h;
    mm->gen = ctx->gen;
    mm->alpha = s->alpha;
    mm->beta = s->beta;
    rt__lt_problem(s, &mm->p);
    if (build(ctx, mm, err)) {
        mm_destroy(ctx, mm);
        return err->code;
    }
    st->mm[st->n++] = mm;
    ctx->blas_stats.prepared_misses++;
    *out = mm;
    return 0;
}

/* Refuses work on a poisoned context or a matmul prepared before a reset. */
static int mm_usable(rt_ctx *ctx, const rt_matmul *mm, lm_err *err)
{
    if (rt__ctx_usable(ctx, err)) return err->code;
    if (mm->gen != ctx->gen)
        return RT_FAIL(err, RT_ESTALE,
                       "matmul prepared before rt_ctx_reset; fix: prepare it again");
    return 0;
}

int rt_matmul_enqueue(rt_ctx *ctx, rt_matmul *mm, const rt_matmul_args *a, lm_err *err)
{
    if (mm_usable(ctx, mm, err)) return err->code;
    const rt_matmul_spec *s = &mm->spec;
    const char *missing = !a->a                                         ? "a"
                          : !a->b                                       ? "b"
                          : !a->d                                       ? "d"
                          : (s->beta != 0.0f && !a->c)                  ? "c (beta is not 0)"
                          : (rt__epi_has_bias(s->epilogue) && !a->bias) ? "bias"
                          : (s->scale_a && !a->scale_a)                 ? "scale_a"
                          : (s->scale_b && !a->scale_b)                 ? "scale_b"
                          : (s->scale_d && !a->scale_d)                 ? "scale_d"
                                                                        : NULL;
    if (missing)
        return RT_FAIL(err, RT_EARG, "matmul enqueue: pointer %s is missing (m=%lld n=%lld k=%lld)",
                       missing, (long long)s->m, (long long)s->n, (long long)s->k);
    if (mm->ws_size && (a->workspace_bytes < mm->ws_size || !a->workspace))
        return RT_FAIL(err, RT_EARG,
                       "matmul enqueue: workspace of %zu bytes at 0x%llx given, %zu needed; fix: "
                       "pass rt_matmul_workspace() bytes",
                       a->workspace_bytes, (unsigned long long)a->workspace, mm->ws_size);
    rt_blaslib *b = &ctx->blaslib;
    if (rt__epi_has_bias(s->epilogue)) {
        const void *bp = (const void *)(uintptr_t)a->bias;
        if (LT(err,
               b->desc_set(b->self, mm->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp),
               "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", s))
            return err->code;
    }
    /* cuBLASLt's A is our B when the problem was transposed for a row-major D */
    rt_dptr la = mm->p.swapped ? a->b : a->a, lb = mm->p.swapped ? a->a : a->b;
    bool sa = mm->p.swapped ? s->scale_b : s->scale_a, sb = mm->p.swapped ? s->scale_a : s->scale_b;
    rt_dptr pa = mm->p.swapped ? a->scale_b : a->scale_a,
            pb = mm->p.swapped ? a->scale_a : a->scale_b;
    struct {
        bool on;
        cublasLtMatmulDescAttributes_t attr;
        rt_dptr p;
        const char *name;
    } scales[3] = {
        {sa, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, pa, "cublasLtMatmulDescSetAttribute(A_SCALE)"},
        {sb, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, pb, "cublasLtMatmulDescSetAttribute(B_SCALE)"},
        {s->scale_d, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, a->scale_d,
         "cublasLtMatmulDescSetAttribute(D_SCALE)"},
    };
    for (int i = 0; i < 3; i++) {
        if (!scales[i].on) continue;
        const void *sp = (const void *)(uintptr_t)scales[i].p;
        if (LT(err, b->desc_set(b->self, mm->desc, scales[i].attr, &sp, sizeof sp), scales[i].name,
               s))
            return err->code;
    }
    rt_dptr c = a->c ? a->c : a->d;
    cublasStatus_t st =
        b->matmul(b->self, ctx->blas->handle, mm->desc, &mm->alpha, (const void *)(uintptr_t)la,
                  mm->la, (const void *)(uintptr_t)lb, mm->lb, &mm->beta,
                  (const void *)(uintptr_t)c, mm->lc, (void *)(uintptr_t)a->d, mm->ld, &mm->algo,
                  (void *)(uintptr_t)a->workspace, a->workspace_bytes, ctx->stream);
    return LT(err, st, "cublasLtMatmul", s);
}

int rt_matmul_workspace_plan(const uint64_t *sizes, uint32_t n, const rt_arena_pair *deps,
                             uint32_t ndeps, uint64_t *offsets, uint64_t *peak, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    *peak = 0;
    for (uint32_t i = 0; i < ndeps; i++)
        if (deps[i].a >= deps[i].b || deps[i].b >= n)
            return RT_FAIL(
                err, RT_EARG,
                "workspace plan: dependency %u (%u -> %u) must go from a lower to a higher "
                "call below %u",
                i, deps[i].a, deps[i].b, n);
    if (n == 0) return 0;
    /* reach[i] = calls reachable from i; calls are topologically numbered */
    size_t words = ((size_t)n + 63) / 64;
    uint64_t *reach = rt__alloc((size_t)n * words, sizeof *reach);
    rt_arena_buf *bufs = rt__alloc(n, sizeof *bufs);
    rt_arena_pair *pairs = NULL;
    if (!reach || !bufs) {
        rt__free(reach);
        rt__free(bufs);
        return RT_FAIL(err, RT_ENOMEM, "out of memory planning %u workspaces", n);
    }
    for (uint32_t i = n; i-- > 0;) {
        for (uint32_t d = 0; d < ndeps; d++) {
            if (deps[d].a != i) continue;
            uint32_t j = deps[d].b;
            reach[(size_t)i * words + j / 64] |= (uint64_t)1 << (j % 64);
            for (size_t w = 0; w < words; w++)
                reach[(size_t)i * words + w] |= reach[(size_t)j * words + w];
        }
    }
    size_t npairs = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            npairs += !(reach[(size_t)i * words + j / 64] >> (j % 64) & 1);
    if (npairs > UINT32_MAX || !(pairs = rt__alloc(npairs + 1, sizeof *pairs))) {
        rt__free(reach);
        rt__free(bufs);
        return RT_FAIL(err, RT_ENOMEM, "out of memory for %zu workspace conflicts", npairs);
    }
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        bufs[i] = (rt_arena_buf){sizes[i], i, i};
        for (uint32_t j = i + 1; j < n; j++)
            if (!(reach[(size_t)i * words + j / 64] >> (j % 64) & 1))
                pairs[k++] = (rt_arena_pair){i, j};
    }
    int rc = rt_arena_plan(bufs, n, pairs, (uint32_t)npairs, offsets, peak, err);
    rt__free(reach);
    rt__free(bufs);
    rt__free(pairs);
    return rc;
}

int rt_blas_info(rt_ctx *ctx, char *path, size_t path_size, size_t *version, lm_err *err)
{
    if (rt__ctx_usable(ctx, err) || rt__ctx_blas(ctx, err)) return err->code;
    if (path && path_size) snprintf(path, path_size, "%s", ctx->blaslib.lib);
    if (version) *version = ctx->blaslib.version;
    return 0;
}

/* Times one algorithm: TUNE_WARMUP calls, then TUNE_TRIALS (3) trials of TUNE_CALLS
 * (sustained, as a graph replays it), median per call (ms). */
static int time_algo(rt_ctx *ctx, rt_matmul *mm, const rt_matmul_args *a, CUevent ev[2], double *ms,
                     lm_err *err)
{
    rt_drv *d = &ctx->drv;
    double t[TUNE_TRIALS];
    for (int w = 0; w < TUNE_WARMUP; w++)
        if (rt_matmul_enqueue(ctx, mm, a, err)) return err->code;
    for (int trial = 0; trial < TUNE_TRIALS; trial++) {
        if (RT_CU(ctx, err, d->event_record(d->self, ev[0], ctx->stream), "cuEventRecord"))
            return err->code;
        for (int r = 0; r < TUNE_CALLS; r++)
            if (rt_matmul_enqueue(ctx, mm, a, err)) return err->code;
        float f = 0;
        if (RT_CU(ctx, err, d->event_record(d->self, ev[1], ctx->stream), "cuEventRecord") ||
            RT_CU(ctx, err, d->event_sync(d->self, ev[1]), "cuEventSynchronize(matmul tuning)") ||
            RT_CU(ctx, err, d->event_elapsed(d->self, &f, ev[0], ev[1]), "cuEventElapsedTime"))
            return err->code;
        t[trial] = (double)f / TUNE_CALLS;
    }
    double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    *ms = t[2] < lo ? lo : t[2] > hi ? hi : t[2];
    return 0;
}

/* Can offer i of the heuristic run within the caller's workspace? */
static bool offer_fits(const cublasLtMatmulHeuristicResult_t *r, size_t workspace_bytes)
{
    return r->state == CUBLAS_STATUS_SUCCESS && r->workspaceSize <= workspace_bytes;
}

int rt_matmul_tune(rt_ctx *ctx, rt_matmul *mm, const rt_matmul_args *a, uint32_t max_algos,
                   rt_matmul_tuning *out, lm_err *err)
{
    if (mm_usable(ctx, mm, err)) return err->code;
    if (max_algos < 1 || max_algos > RT_MAX_TUNE_ALGOS)
        return RT_FAIL(err, RT_EARG, "matmul tune: max_algos %u must be in 1..%d", max_algos,
                       RT_MAX_TUNE_ALGOS);
    rt_drv *d = &ctx->drv;
    cublasLtMatmulHeuristicResult_t res[RT_MAX_TUNE_ALGOS];
    int got = 0;
    int rc = heuristic(ctx, mm, a->workspace_bytes, (int)max_algos, res, &got,
                       "cublasLtMatmulAlgoGetHeuristic(tuning)", err);
    if (rc) return rc;
    CUevent ev[2] = {0};
    for (int i = 0; i < 2; i++)
        if (RT_CU(ctx, err, d->event_create(d->self, &ev[i], CU_EVENT_DEFAULT), "cuEventCreate")) {
            if (i) d->event_destroy(d->self, ev[0]);
            return err->code;
        }
    cublasLtMatmulAlgo_t keep_algo = mm->algo;
    size_t keep_ws = mm->ws_size;
    double first = 0, best = 0, cur = -1, ms_of[RT_MAX_TUNE_ALGOS];
    int chosen = -1, tried = 0;
    /* Two rounds over prepare's algorithm and every offer, each keeping its better time:
     * sustained runs heat the chip and slow it, and a single pass in order would favour
     * whoever ran first. */
    for (int round = 0; !rc && round < TUNE_ROUNDS; round++) {
        mm->algo = keep_algo;
        mm->ws_size = keep_ws;
        double ms;
        rc = time_algo(ctx, mm, a, ev, &ms, err);
        if (!rc && (cur < 0 || ms < cur)) cur = ms;
        for (int i = 0; !rc && i < got; i++) {
            if (!offer_fits(&res[i], a->workspace_bytes)) continue;
            mm->algo = res[i].algo;
            mm->ws_size = res[i].workspaceSize;
            rc = time_algo(ctx, mm, a, ev, &ms, err);
            if (rc) break;
            if (round == 0) {
                ms_of[i] = ms;
                tried++;
            } else if (ms < ms_of[i]) {
                ms_of[i] = ms;
            }
        }
    }
    for (int i = 0; !rc && i < got; i++) {
        if (!offer_fits(&res[i], a->workspace_bytes)) continue;
        if (first == 0) first = ms_of[i];
        if (chosen < 0 || ms_of[i] < best) chosen = i, best = ms_of[i];
    }
    d->event_destroy(d->self, ev[0]);
    d->event_destroy(d->self, ev[1]);
    if (rc || chosen < 0 || best >= cur) {
        mm->algo = keep_algo;
        mm->ws_size = keep_ws;
        if (!rc) chosen = -1, best = cur;
    } else {
        mm->algo = res[chosen].algo;
        mm->ws_size = res[chosen].workspaceSize;
        /* the cache remembers the measured choice for this spec, device, version and cap */
        heur_entry *hit = cache_find(ctx, mm);
        if (hit) {
            hit->algo = mm->algo;
            hit->ws_size = mm->ws_size;
        }
    }
    if (out) {
        out->offered = (uint32_t)got;
        out->tried = (uint32_t)tried;
        out->chosen = chosen;
        out->prepared_ms = cur;
        out->first_ms = first;
        out->best_ms = best;
    }
    return rc;
}
