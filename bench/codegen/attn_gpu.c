/* attn_gpu.c - the fused attention template (codegen/cg_attn.c) on its own: specs built
 * directly (numeric expressions, and one dynamic dim), compiled, checked and timed.
 *
 *   attn_gpu --compile-check    no GPU: every tile of cg__attn_tiles at head dims 64 and
 *                               128, bf16 causal and f16 masked non-causal, plus a dynamic-
 *                               dim spec, generated (twice: the bytes must agree) and
 *                               compiled with NVRTC for sm_90; unsupported specs must fail
 *                               naming the node. 77 without NVRTC. The CI test attn_compile.
 *   attn_gpu [--check-only] [--quick] [--results FILE]
 *                               on a GPU: the correctness cases (below) with every tile,
 *                               then the timed workloads with every tile. Prints one line
 *                               per case and per (workload, tile), and writes
 *                               "RESULT workload tile single_ms b2b_ms tflops" lines to FILE
 *                               (bench/codegen/attn_torch.py joins them with torch's SDPA).
 *   attn_gpu --precompile       every source of the GPU run compiled into
 *                               $LUMINAL_KERNEL_CACHE (scripts/attn_gpu.sh prepare).
 *   attn_gpu --dump WORKLOAD BQ BK WARPS STAGES SPLITS
 *                               the CUDA C of a workload's spec with that tile.
 *
 * Correctness: q, k, v ~ N(0, 1) rounded to the dtype, scale 1/sqrt(D), optional additive
 * mask ~ U(-2, 0) with some -inf (one row wholly -inf); the output is poisoned (NaN)
 * before the launch. Reference: f64 softmax attention over the rounded inputs; a row with
 * no visible key is 0. Bound per element (docs/codegen.md, "Fused attention"):
 *   |o - ref| <= u * (|ref| + max_j |v_j|) + 1e-4 * max|v|,
 * u the dtype's unit roundoff (2^-8 bf16, 2^-11 f16): the output is rounded once (u |o|)
 * and P is rounded to the dtype before P V (at most u * max|v| after the division by l,
 * which sums the unrounded P); the last term covers f32 accumulation and ex2.approx.
 *
 * Timing: each kernel (or split + combine) is a CUDA graph; single = the median of
 * 30 one-replay trials, b2b = the median of 10 trials of 20 replays, by events
 * (rt_exec_time). FLOPs: 4 * n_bh * sq * skv * D, halved when causal (= 2 B H S^2 D).
 * Exit 0 when every check passed, 1 otherwise, 77 without a GPU (or NVRTC). */
#include "cg_attn.h"
#include "cuda_rt.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_SKIP 77

/* ---- a spec built by hand ------------------------------------------------------------ */

typedef struct acase {
    const char *name;
    hl_dtype dt;
    uint32_t d;
    bool causal, mask;
    uint32_t nbh, group; /* query heads; query heads per K/V head (GQA) */
    uint32_t sq, skv;
    bool dyn;            /* sq = skv = the dynamic dim S */
} acase;

typedef struct actx {
    cg_plan plan;
    hl_dim dim[1];
    uint32_t var_dim[4];
    cg_dims dims;
    cg_options opt;
    lm_err err;
    cg_ctx c;
    cg_attn_spec s;
} actx;

static void actx_free(actx *a)
{
    hl_expr_pool_free(a->plan.exprs);
    a->plan.exprs = NULL;
}

/* Spec of case cs with tile t: q [nbh][sq][D], k and v [nbh/group][skv][D], o like q,
 * mask [nbh][sq][skv] f32; buffers q 0, k 1, v 2, o 3, mask 4, workspace 5. */
static bool actx_init(actx *a, const acase *cs, cg_attn_tile t)
{
    memset(a, 0, sizeof *a);
    hl_expr_pool *p = hl_expr_pool_new();
    if (!p) return false;
    a->plan.exprs = p;
    hl_expr sq, skv;
    if (cs->dyn) {
        hl_expr S = hl_e_var(p, "S");
        a->dim[0] = (hl_dim){hl_var_find(p, "S"), S, 1, 8192, 1024};
        a->dims.n = 1;
        a->dims.dims = a->dim;
        a->dims.nvars = hl_var_count(p);
        for (uint32_t i = 0; i < 4; i++) a->var_dim[i] = LM_NONE;
        a->var_dim[a->dim[0].var] = 0;
        a->dims.var_dim = a->var_dim;
        sq = skv = S;
    } else {
        a->dims.var_dim = a->var_dim;
        sq = hl_e_num(p, cs->sq);
        skv = hl_e_num(p, cs->skv);
    }
    a->c.plan = &a->plan;
    a->c.d = &a->dims;
    a->c.opt = &a->opt;
    a->c.err = &a->err;
    cg_attn_spec *s = &a->s;
    hl_expr z = hl_e_z(p), D = hl_e_num(p, cs->d);
    s->llir_node = 7;
    s->dtype = cs->dt;
    s->head_dim = cs->d;
    s->causal = cs->causal;
    s->has_mask = cs->mask;
    s->mask_dtype = HL_F32;
    s->scale = (float)(1.0 / sqrt((double)cs->d));
    s->n_bh = hl_e_num(p, cs->nbh);
    s->sq = sq;
    s->skv = skv;
    s->q_base = s->o_base = hl_e_mul(p, z, hl_e_mul(p, sq, D));
    hl_expr kvh = hl_e_div(p, z, hl_e_num(p, cs->group));
    s->k_base = s->v_base = hl_e_mul(p, kvh, hl_e_mul(p, skv, D));
    s->q_row = s->k_row = s->v_row = s->o_row = D;
    s->m_base = cs->mask ? hl_e_mul(p, z, hl_e_mul(p, sq, skv)) : HL_NONE;
    s->m_row = cs->mask ? skv : HL_NONE;
    s->m_col = cs->mask ? hl_e_num(p, 1) : HL_NONE;
    s->q_buf = 0, s->k_buf = 1, s->v_buf = 2, s->o_buf = 3;
    s->m_buf = cs->mask ? 4 : LM_NONE;
    s->ws_buf = t.kv_splits > 1 ? 5 : LM_NONE;
    s->tile = t;
    return !hl_expr_pool_failed(p);
}

static void tile_name(const cg_attn_tile *t, char *buf, size_t cap)
{
    snprintf(buf, cap, "q%u/k%u/w%u/s%u/x%u", t->block_q, t->block_k, t->warps, t->stages,
             t->kv_splits);
}

/* ---- --compile-check ------------------------------------------------------------------ */

static int compile_check(void)
{
    lm_err err = {0};
    rt_nvrtc *nv = NULL;
    if (rt_nvrtc_new(NULL, &nv, &err)) {
        printf("attn_gpu: NVRTC cannot be loaded: %s\n", err.msg);
        return EXIT_SKIP;
    }
    int fails = 0, compiled = 0;
    static const acase forms[] = {
        {"bf16 causal", HL_BF16, 0, true, false, 4, 2, 100, 100, false},
        {"f16 masked", HL_F16, 0, false, true, 4, 1, 33, 70, false},
    };
    for (uint32_t di = 0; di < 2; di++) {
        uint32_t d = di ? 128 : 64;
        cg_attn_tile tiles[64];
        uint32_t nt = cg__attn_tiles(d, HL_BF16, tiles, 64);
        for (uint32_t fi = 0; fi < 2; fi++)
            for (uint32_t ti = 0; ti < nt; ti++) {
                acase cs = forms[fi];
                cs.d = d;
                char tn[64];
                tile_name(&tiles[ti], tn, sizeof tn);
                actx a, a2;
                cg_kernel k[2], k2[2];
                uint32_t n = 0, n2 = 0;
                if (!actx_init(&a, &cs, tiles[ti]) || !actx_init(&a2, &cs, tiles[ti])) {
                    printf("FAIL %s D=%u %s: out of memory\n", cs.name, d, tn);
                    return 1;
                }
                if (cg__attn_kernels(&a.c, &a.s, k, &n) || cg__attn_kernels(&a2.c, &a2.s, k2, &n2)) {
                    printf("FAIL %s D=%u %s: generation: %s%s\n", cs.name, d, tn, a.err.msg, a2.err.msg);
                    fails++;
                    actx_free(&a), actx_free(&a2);
                    continue;
                }
                bool same = n == n2 && n == (tiles[ti].kv_splits > 1 ? 2u : 1u);
                for (uint32_t i = 0; i < n && same; i++) same = strcmp(k[i].source, k2[i].source) == 0;
                if (!same) {
                    printf("FAIL %s D=%u %s: two generations differ (or kernel count %u)\n", cs.name, d,
                           tn, n);
                    fails++;
                }
                for (uint32_t i = 0; i < n; i++) {
                    rt_cubin bin = {0};
                    lm_err e = {0};
                    if (rt_nvrtc_compile(nv, k[i].source, "attn", 90, NULL, 0, &bin, &e)) {
                        printf("FAIL %s D=%u %s kernel %u: %s\n", cs.name, d, tn, i, e.msg);
                        fails++;
                    } else {
                        compiled++;
                    }
                    rt_cubin_fini(&bin);
                }
                for (uint32_t i = 0; i < n; i++) free(k[i].source), free(k2[i].source);
                actx_free(&a), actx_free(&a2);
            }
    }
    /* a dynamic dim: S becomes a kernel parameter */
    {
        acase cs = {"dyn", HL_BF16, 128, true, false, 8, 1, 0, 0, true};
        cg_attn_tile t = {64, 64, 4, 2, 4};
        actx a;
        cg_kernel k[2];
        uint32_t n = 0;
        if (!actx_init(&a, &cs, t) || cg__attn_kernels(&a.c, &a.s, k, &n)) {
            printf("FAIL dynamic S: %s\n", a.err.msg);
            fails++;
        } else {
            for (uint32_t i = 0; i < n; i++) {
                bool has_dim = k[i].n_params > 0 && k[i].params[k[i].n_params - 1].kind == CG_P_DIM;
                rt_cubin bin = {0};
                lm_err e = {0};
                if (!has_dim || rt_nvrtc_compile(nv, k[i].source, "attn", 90, NULL, 0, &bin, &e)) {
                    printf("FAIL dynamic S kernel %u: %s\n", i, has_dim ? e.msg : "S is no parameter");
                    fails++;
                } else {
                    compiled++;
                }
                rt_cubin_fini(&bin);
                free(k[i].source);
            }
        }
        actx_free(&a);
    }
    /* what no variant covers fails naming the node */
    {
        static const struct {
            uint32_t d;
            hl_dtype dt;
            cg_attn_tile t;
            const char *want;
        } bad[] = {
            {96, HL_BF16, {64, 64, 4, 2, 1}, "head dims 64 and 128"},
            {64, HL_F32, {64, 64, 4, 2, 1}, "bf16 or f16"},
            {64, HL_BF16, {64, 64, 8, 2, 1}, "no kernel for the tile"},
            {128, HL_BF16, {64, 128, 4, 2, 1}, "no kernel for the tile"},
        };
        for (uint32_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            acase cs = {"bad", bad[i].dt, bad[i].d, true, false, 2, 1, 16, 16, false};
            actx a;
            cg_kernel k[2];
            uint32_t n = 5;
            actx_init(&a, &cs, bad[i].t);
            int rc = cg__attn_kernels(&a.c, &a.s, k, &n);
            if (rc != LM_EUNSUPPORTED || n != 0 || !strstr(a.err.msg, bad[i].want) ||
                !strstr(a.err.msg, "7")) {
                printf("FAIL unsupported case %u: rc %d n %u: %s\n", i, rc, n, a.err.msg);
                fails++;
            }
            actx_free(&a);
        }
    }
    rt_nvrtc_free(nv);
    printf("attn compile check: %d kernels compiled for sm_90, %d failures\n", compiled, fails);
    return fails ? 1 : 0;
}

/* ---- data and the reference ------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double nrand(void)
{
    return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand());
}

static uint16_t to_st(hl_dtype t, float x)
{
    return t == HL_F16 ? hl_f32_to_f16(x) : hl_f32_to_bf16(x);
}
static float from_st(hl_dtype t, uint16_t h)
{
    return t == HL_F16 ? hl_f16_to_f32(h) : hl_bf16_to_f32(h);
}

typedef struct adata {
    size_t nq, nkv, nm;
    uint16_t *q, *k, *v;
    float *m;
} adata;

static void data_make(adata *x, const acase *cs)
{
    uint32_t nkvh = cs->nbh / cs->group;
    x->nq = (size_t)cs->nbh * cs->sq * cs->d;
    x->nkv = (size_t)nkvh * cs->skv * cs->d;
    x->nm = cs->mask ? (size_t)cs->nbh * cs->sq * cs->skv : 0;
    x->q = malloc(x->nq * 2);
    x->k = malloc(x->nkv * 2);
    x->v = malloc(x->nkv * 2);
    x->m = malloc((x->nm ? x->nm : 1) * 4);
    if (!x->q || !x->k || !x->v || !x->m) {
        fprintf(stderr, "attn_gpu: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < x->nq; i++) x->q[i] = to_st(cs->dt, (float)nrand());
    for (size_t i = 0; i < x->nkv; i++) x->k[i] = to_st(cs->dt, (float)nrand());
    for (size_t i = 0; i < x->nkv; i++) x->v[i] = to_st(cs->dt, (float)nrand());
    for (size_t i = 0; i < x->nm; i++) x->m[i] = urand() < 0.1 ? -INFINITY : (float)(-2.0 * urand());
    if (x->nm && cs->sq > 1) /* query row 1 of head 0 sees no key */
        for (uint32_t j = 0; j < cs->skv; j++) x->m[(size_t)1 * cs->skv + j] = -INFINITY;
}

static void data_free(adata *x)
{
    free(x->q), free(x->k), free(x->v), free(x->m);
}

/* f64 reference; ref [nbh][sq][D] */
static void reference(const acase *cs, const adata *x, float scale, double *ref)
{
    uint32_t D = cs->d;
    double *s = malloc(sizeof *s * cs->skv);
    for (uint32_t bh = 0; bh < cs->nbh; bh++) {
        uint32_t kh = bh / cs->group;
        for (uint32_t i = 0; i < cs->sq; i++) {
            double mx = -INFINITY;
            for (uint32_t j = 0; j < cs->skv; j++) {
                double acc = 0;
                for (uint32_t c = 0; c < D; c++)
                    acc += (double)from_st(cs->dt, x->q[((size_t)bh * cs->sq + i) * D + c]) *
                           from_st(cs->dt, x->k[((size_t)kh * cs->skv + j) * D + c]);
                acc *= scale;
                if (cs->mask) acc += x->m[((size_t)bh * cs->sq + i) * cs->skv + j];
                if (cs->causal && (int64_t)j > (int64_t)i + ((int64_t)cs->skv - cs->sq)) acc = -INFINITY;
                s[j] = acc;
                if (acc > mx) mx = acc;
            }
            double *o = ref + ((size_t)bh * cs->sq + i) * D;
            for (uint32_t c = 0; c < D; c++) o[c] = 0;
            if (mx == -INFINITY) continue;
            double l = 0;
            for (uint32_t j = 0; j < cs->skv; j++) {
                double p = exp(s[j] - mx);
                l += p;
                if (p == 0) continue;
                for (uint32_t c = 0; c < D; c++)
                    o[c] += p * from_st(cs->dt, x->v[((size_t)kh * cs->skv + j) * D + c]);
            }
            for (uint32_t c = 0; c < D; c++) o[c] /= l;
        }
    }
    free(s);
}

/* ---- running on the GPU ------------------------------------------------------------ */

typedef struct arun {
    rt_ctx *ctx;
    rt_buf buf[6];
    rt_kernel *kern[2];
    uint32_t nk;
    cg_kernel k[2];
    rt_dptr ptr[6];
    int64_t dimval;
    const void *args[2][CG_MAX_PARAMS];
    size_t sizes[2][CG_MAX_PARAMS];
    rt_launch l[2];
} arun;

static int eval_grid(actx *a, hl_expr e, int64_t sval, uint32_t *out)
{
    int64_t vals[4] = {sval, sval, sval, sval};
    hl_env env = {vals, NULL, hl_var_count(a->plan.exprs)};
    int64_t v;
    lm_err e2 = {0};
    if (hl_e_eval(a->plan.exprs, e, &env, 0, &v, &e2)) return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Generates, compiles and prepares the launches of a's spec over buffers sized for cs. */
static int arun_prepare(arun *r, actx *a, const acase *cs, lm_err *err)
{
    if (cg__attn_kernels(&a->c, &a->s, r->k, &r->nk)) {
        lm_err_copy(err, &a->err);
        return 1;
    }
    size_t bytes[6] = {(size_t)cs->nbh * cs->sq * cs->d * 2, (size_t)cs->nbh / cs->group * cs->skv * cs->d * 2,
                       (size_t)cs->nbh / cs->group * cs->skv * cs->d * 2, (size_t)cs->nbh * cs->sq * cs->d * 2,
                       cs->mask ? (size_t)cs->nbh * cs->sq * cs->skv * 4 : 4,
                       (size_t)cs->nbh * a->s.tile.kv_splits * cs->sq * (cs->d + 2) * 4};
    for (int i = 0; i < 6; i++) {
        if (rt_buf_reserve(r->ctx, &r->buf[i], bytes[i], NULL, err)) return 1;
        r->ptr[i] = r->buf[i].ptr;
    }
    r->dimval = cs->sq;
    for (uint32_t i = 0; i < r->nk; i++) {
        if (rt_kernel_get(r->ctx, r->k[i].source, "lm_kernel", NULL, 0, &r->kern[i], err)) return 1;
        const cg_kernel *k = &r->k[i];
        for (uint32_t j = 0; j < k->n_params; j++) {
            r->args[i][j] = k->params[j].kind == CG_P_BUFFER ? (const void *)&r->ptr[k->params[j].buf]
                                                             : (const void *)&r->dimval;
            r->sizes[i][j] = 8;
        }
        rt_launch *l = &r->l[i];
        memset(l, 0, sizeof *l);
        l->kernel = r->kern[i];
        for (int g = 0; g < 3; g++)
            if (eval_grid(a, k->grid[g], cs->sq, &l->grid[g])) {
                lm_err_set(err, LM_EARG, NULL, "grid does not evaluate");
                return 1;
            }
        memcpy(l->block, k->block, sizeof l->block);
        l->shared_bytes = k->shared_bytes;
        l->nargs = k->n_params;
        l->args = r->args[i];
        l->sizes = r->sizes[i];
    }
    return 0;
}

static void arun_fini(arun *r)
{
    for (int i = 0; i < 6; i++) rt_buf_release(r->ctx, &r->buf[i]);
    for (uint32_t i = 0; i < r->nk; i++) free(r->k[i].source);
    r->nk = 0;
}

static int upload(arun *r, const acase *cs, const adata *x, lm_err *err)
{
    return rt_copy_htod(r->ctx, r->ptr[0], x->q, x->nq * 2, err) ||
           rt_copy_htod(r->ctx, r->ptr[1], x->k, x->nkv * 2, err) ||
           rt_copy_htod(r->ctx, r->ptr[2], x->v, x->nkv * 2, err) ||
           (cs->mask && rt_copy_htod(r->ctx, r->ptr[4], x->m, x->nm * 4, err));
}

/* One correctness case with one tile: 0 passed, 1 failed. */
static int check_case(rt_ctx *ctx, const acase *cs, cg_attn_tile t, const adata *x, const double *ref,
                      double *worst_ratio)
{
    char tn[64];
    tile_name(&t, tn, sizeof tn);
    actx a;
    arun r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    lm_err err = {0};
    int rc = 1;
    uint16_t *o = malloc((size_t)cs->nbh * cs->sq * cs->d * 2);
    if (!o || !actx_init(&a, cs, t)) {
        printf("FAIL %s %s: out of memory\n", cs->name, tn);
        free(o);
        return 1;
    }
    if (arun_prepare(&r, &a, cs, &err) || upload(&r, cs, x, &err) ||
        rt_memset8(ctx, r.ptr[3], 0xff, (size_t)cs->nbh * cs->sq * cs->d * 2, &err) ||
        rt_memset8(ctx, r.ptr[5], 0xff, r.buf[5].bytes, &err)) {
        printf("FAIL %s %s: %s\n", cs->name, tn, err.msg);
        goto out;
    }
    for (uint32_t i = 0; i < r.nk; i++)
        if (rt_launch_kernel(ctx, &r.l[i], &err)) {
            printf("FAIL %s %s: %s\n", cs->name, tn, err.msg);
            goto out;
        }
    if (rt_ctx_sync(ctx, &err) ||
        rt_copy_dtoh(ctx, o, r.ptr[3], (size_t)cs->nbh * cs->sq * cs->d * 2, &err) ||
        rt_ctx_sync(ctx, &err)) {
        printf("FAIL %s %s: %s\n", cs->name, tn, err.msg);
        goto out;
    }
    {
        double u = cs->dt == HL_F16 ? ldexp(1.0, -11) : ldexp(1.0, -8);
        size_t n = (size_t)cs->nbh * cs->sq * cs->d;
        double vmax = 0, worst = 0;
        size_t wi = 0;
        for (size_t i = 0; i < x->nkv; i++) vmax = fmax(vmax, fabs(from_st(cs->dt, x->v[i])));
        bool ok = true;
        for (size_t i = 0; i < n; i++) {
            double got = from_st(cs->dt, o[i]);
            double bound = u * (fabs(ref[i]) + vmax) + 1e-4 * vmax;
            double e = fabs(got - ref[i]);
            if (!(e <= bound)) ok = false; /* NaN fails */
            double ratio = isnan(got) ? INFINITY : e / bound;
            if (ratio > worst) worst = ratio, wi = i;
        }
        if (worst > *worst_ratio) *worst_ratio = worst;
        if (!ok) {
            size_t row = wi / cs->d;
            printf("FAIL %s %s: element %zu (bh %zu, row %zu, col %zu) = %g, reference %g "
                   "(error %.3g x the bound)\n",
                   cs->name, tn, wi, row / cs->sq, row % cs->sq, wi % cs->d,
                   (double)from_st(cs->dt, o[wi]), ref[wi], worst);
            goto out;
        }
    }
    rc = 0;
out:
    arun_fini(&r);
    actx_free(&a);
    free(o);
    return rc;
}

static const acase CASES[] = {
    /* name                dt   D    causal mask  nbh grp sq   skv  dyn */
    {"causal S=1", HL_BF16, 64, true, false, 3, 1, 1, 1, false},
    {"causal S=77", HL_BF16, 64, true, false, 4, 1, 77, 77, false},
    {"causal S=200 D128", HL_BF16, 128, true, false, 2, 1, 200, 200, false},
    {"causal sq<skv", HL_BF16, 128, true, false, 2, 1, 37, 300, false},
    {"causal sq>skv", HL_BF16, 64, true, false, 2, 1, 90, 40, false},
    {"non-causal", HL_BF16, 64, false, false, 3, 1, 65, 129, false},
    {"mask", HL_BF16, 128, false, true, 2, 1, 50, 97, false},
    {"mask causal f16", HL_F16, 64, true, true, 2, 1, 70, 70, false},
    {"gqa decode", HL_BF16, 128, false, false, 8, 4, 1, 1000, false},
    {"gqa causal", HL_BF16, 64, true, false, 6, 3, 33, 33, false},
    {"f16 D128", HL_F16, 128, true, false, 2, 1, 130, 130, false},
    {"dynamic S", HL_BF16, 128, true, false, 3, 1, 150, 150, true},
};

static bool quick;

static int run_checks(rt_ctx *ctx)
{
    int fails = 0, runs = 0;
    for (uint32_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const acase *cs = &CASES[ci];
        adata x;
        data_make(&x, cs);
        double *ref = malloc(sizeof *ref * cs->nbh * cs->sq * cs->d);
        reference(cs, &x, (float)(1.0 / sqrt((double)cs->d)), ref);
        cg_attn_tile tiles[64];
        uint32_t nt = cg__attn_tiles(cs->d, cs->dt, tiles, 64);
        int cf = 0;
        double worst = 0;
        for (uint32_t ti = 0; ti < nt; ti++) {
            /* --quick (under the sanitizers): the first and last single-pass tiles and the
               last split tile */
            if (quick && ti != 0 && ti != nt - 1 && !(ti + 1 < nt && tiles[ti + 1].kv_splits > 1 &&
                                                      tiles[ti].kv_splits == 1))
                continue;
            cf += check_case(ctx, cs, tiles[ti], &x, ref, &worst);
            runs++;
        }
        printf("check %-20s D=%-3u nbh %u/%u sq %u skv %u: %u tiles, %d failed; worst error %.3f x "
               "the bound\n",
               cs->name, cs->d, cs->nbh, cs->nbh / cs->group, cs->sq, cs->skv, nt, cf, worst);
        fails += cf;
        free(ref);
        data_free(&x);
    }
    printf("checks: %d runs, %d failed\n", runs, fails);
    return fails;
}

/* ---- timing ------------------------------------------------------------------------------ */

static int time_case(rt_ctx *ctx, const acase *cs, cg_attn_tile t, FILE *res)
{
    char tn[64];
    tile_name(&t, tn, sizeof tn);
    actx a;
    arun r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    lm_err err = {0};
    adata x;
    data_make(&x, cs);
    rt_graph *g = NULL;
    rt_exec *e = NULL;
    int rc = 1;
    actx_init(&a, cs, t);
    if (arun_prepare(&r, &a, cs, &err) || upload(&r, cs, &x, &err) || rt_graph_new(ctx, &g, &err)) {
        printf("FAIL time %s %s: %s\n", cs->name, tn, err.msg);
        goto out;
    }
    uint32_t prev = 0;
    for (uint32_t i = 0; i < r.nk; i++) {
        uint32_t node;
        if (rt_graph_add_kernel(g, &r.l[i], i ? &prev : NULL, i ? 1 : 0, &node, &err)) {
            printf("FAIL time %s %s: %s\n", cs->name, tn, err.msg);
            goto out;
        }
        prev = node;
    }
    rt_timing t1, t20;
    rt_time_opts o;
    rt_time_opts_default(&o);
    o.warmup = 5;
    o.trials = 30;
    o.reps = 1;
    if (rt_exec_new(g, &e, &err) || rt_exec_time(e, &o, &t1, &err)) {
        printf("FAIL time %s %s: %s\n", cs->name, tn, err.msg);
        goto out;
    }
    o.trials = 10;
    o.reps = 20;
    if (rt_exec_time(e, &o, &t20, &err)) {
        printf("FAIL time %s %s: %s\n", cs->name, tn, err.msg);
        goto out;
    }
    {
        double flops = 4.0 * cs->nbh * (double)cs->sq * cs->skv * cs->d * (cs->causal ? 0.5 : 1.0);
        printf("time %-22s %-18s single %.4f ms  b2b %.4f ms  %.1f TFLOP/s (b2b)\n", cs->name, tn,
               t1.median_ms, t20.median_ms, flops / (t20.median_ms * 1e-3) / 1e12);
        if (res)
            fprintf(res, "RESULT %s %s %.5f %.5f %.2f\n", cs->name, tn, t1.median_ms, t20.median_ms,
                    flops / (t20.median_ms * 1e-3) / 1e12);
    }
    rc = 0;
out:
    rt_exec_free(e);
    rt_graph_free(g);
    arun_fini(&r);
    actx_free(&a);
    data_free(&x);
    return rc;
}

static const acase WORKLOADS[] = {
    {"causal_S1024_D64", HL_BF16, 64, true, false, 32, 1, 1024, 1024, false},
    {"causal_S4096_D64", HL_BF16, 64, true, false, 32, 1, 4096, 4096, false},
    {"causal_S1024_D128", HL_BF16, 128, true, false, 32, 1, 1024, 1024, false},
    {"causal_S4096_D128", HL_BF16, 128, true, false, 32, 1, 4096, 4096, false},
    {"decode_kv4096_gqa", HL_BF16, 128, false, false, 32, 4, 1, 4096, false},
};

/* --precompile: every source the GPU run uses (each check case and workload with each
 * tile) compiled for sm_90 with $LUMINAL_KERNEL_CACHE set, so the GPU machine reads the
 * CUBINs from that folder (carried along) instead of spending its time in NVRTC. */
static int precompile_all(void)
{
    lm_err err = {0};
    rt_nvrtc *nv = NULL;
    if (rt_nvrtc_new(NULL, &nv, &err)) {
        printf("attn_gpu: NVRTC cannot be loaded: %s\n", err.msg);
        return EXIT_SKIP;
    }
    uint32_t nc = sizeof CASES / sizeof CASES[0], nw = sizeof WORKLOADS / sizeof WORKLOADS[0];
    int n_ok = 0, fails = 0;
    for (uint32_t ci = 0; ci < nc + nw; ci++) {
        const acase *cs = ci < nc ? &CASES[ci] : &WORKLOADS[ci - nc];
        cg_attn_tile tiles[64];
        uint32_t nt = cg__attn_tiles(cs->d, cs->dt, tiles, 64);
        for (uint32_t ti = 0; ti < nt; ti++) {
            if (ci >= nc && cs->sq > 1 && tiles[ti].kv_splits > 1) continue;
            actx a;
            cg_kernel k[2];
            uint32_t n = 0;
            if (!actx_init(&a, cs, tiles[ti]) || cg__attn_kernels(&a.c, &a.s, k, &n)) {
                printf("FAIL precompile %s: %s\n", cs->name, a.err.msg);
                fails++;
                actx_free(&a);
                continue;
            }
            for (uint32_t i = 0; i < n; i++) {
                rt_cubin bin = {0};
                lm_err e = {0};
                if (rt_nvrtc_compile(nv, k[i].source, "attn", 90, NULL, 0, &bin, &e)) {
                    printf("FAIL precompile %s: %s\n", cs->name, e.msg);
                    fails++;
                } else {
                    n_ok++;
                }
                rt_cubin_fini(&bin);
                free(k[i].source);
            }
            actx_free(&a);
        }
    }
    rt_nvrtc_free(nv);
    printf("attn_gpu: %d kernels precompiled, %d failures\n", n_ok, fails);
    return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
    bool check_only = false, ccheck = false, precompile = false;
    const char *results = NULL, *only = NULL, *dump = NULL;
    cg_attn_tile dump_tile = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--compile-check")) ccheck = true;
        else if (!strcmp(argv[i], "--check-only")) check_only = true;
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--precompile")) precompile = true;
        else if (!strcmp(argv[i], "--results") && i + 1 < argc) results = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 6 < argc) {
            dump = argv[++i];
            dump_tile.block_q = (uint32_t)atoi(argv[++i]);
            dump_tile.block_k = (uint32_t)atoi(argv[++i]);
            dump_tile.warps = (uint32_t)atoi(argv[++i]);
            dump_tile.stages = (uint32_t)atoi(argv[++i]);
            dump_tile.kv_splits = (uint32_t)atoi(argv[++i]);
        }
        else {
            fprintf(stderr, "usage: attn_gpu [--compile-check | --precompile] [--check-only] [--quick] [--results FILE] "
                            "[--only WORKLOAD-PREFIX] [--dump WORKLOAD BQ BK WARPS STAGES SPLITS]\n");
            return 2;
        }
    }
    if (ccheck) return compile_check();
    if (precompile) return precompile_all();
    if (dump) { /* the sources of one workload's spec with one tile */
        for (uint32_t wi = 0; wi < sizeof WORKLOADS / sizeof WORKLOADS[0]; wi++) {
            if (strcmp(WORKLOADS[wi].name, dump)) continue;
            actx a;
            cg_kernel k[2];
            uint32_t n = 0;
            if (!actx_init(&a, &WORKLOADS[wi], dump_tile) || cg__attn_kernels(&a.c, &a.s, k, &n)) {
                fprintf(stderr, "attn_gpu: %s\n", a.err.msg);
                return 1;
            }
            for (uint32_t i = 0; i < n; i++) {
                printf("// kernel %u: grid %s, block %u, shared %u bytes\n%s", i,
                       "(see spec)", k[i].block[0], k[i].shared_bytes, k[i].source);
                free(k[i].source);
            }
            actx_free(&a);
            return 0;
        }
        fprintf(stderr, "attn_gpu: no workload %s\n", dump);
        return 2;
    }
    rt_options opt;
    rt_options_default(&opt);
    rt_ctx *ctx = NULL;
    lm_err err = {0};
    if (rt_ctx_new(&opt, &ctx, &err)) {
        printf("attn_gpu: %s\n", err.msg);
        return EXIT_SKIP;
    }
    printf("device: %s\n", rt_ctx_device(ctx)->name);
    int fails = run_checks(ctx);
    FILE *res = results ? fopen(results, "w") : NULL;
    if (!check_only)
        for (uint32_t wi = 0; wi < sizeof WORKLOADS / sizeof WORKLOADS[0]; wi++) {
            const acase *cs = &WORKLOADS[wi];
            if (only && strncmp(cs->name, only, strlen(only))) continue;
            cg_attn_tile tiles[64];
            uint32_t nt = cg__attn_tiles(cs->d, cs->dt, tiles, 64);
            for (uint32_t ti = 0; ti < nt; ti++) {
                if (cs->sq > 1 && tiles[ti].kv_splits > 1) continue; /* splits: decode */
                fails += time_case(ctx, cs, tiles[ti], res);
            }
        }
    if (res) fclose(res);
    rt_ctx_free(ctx);
    printf("attn_gpu: %s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
