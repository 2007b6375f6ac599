/* cg_bench.c - the speed of the generated code on the GPU (GPU only; exit 77 without one).
 *
 * 1. Fused kernels: for each of the rmsnorm, softmax, layernorm+gelu and elementwise-chain
 *    example graphs, at their profile dims, the most fused genome's program (the rules
 *    fuse each into one kernel; the count is printed) is timed as a graph replay
 *    (pg_program_time: CUDA events around back-to-back replays, median) and its bytes
 *    moved (every input read once plus every output written once) turned into GB/s. In the
 *    same run, a copy kernel moving the same number of bytes (half read, half written) is
 *    timed the same way (a one-node graph, rt_exec_time), in two forms (one 16-byte vector
 *    per thread; a grid-stride loop over 8 blocks per SM), and the faster is the ceiling:
 *      fused NAME: K kernel(s), B bytes, T ms -> X GB/s; copy of B bytes: C GB/s; X/C = R
 * 2. Decode MLP (decode_mlp_bf16; the most fused genome, then the least fused one, whose
 *    many small kernels are what the figure is about): the replay's median time, and each
 *    step alone: a spin kernel keeps the GPU busy while an event, the step (the kernel
 *    launched directly with its node's arguments, or the prepared cuBLASLt call) and an
 *    event are queued, so the events measure the GPU's time for the step and not the
 *    host's; median of 21. Per node beyond the kernels' own time:
 *      (replay - sum of the steps alone) / steps
 *    printed as `decode_mlp most_fused|least_fused: N steps (K kernels, M library calls), replay R us, steps alone
 *    S us, overhead O us/node (target 0.6)`.
 * Lines starting "RESULT" repeat the numbers in one `key value` form for scripts/gpu.sh.
 *
 *   cg_bench [--graphs DIR] [--trials N] [--mock] [--dump]
 * --dump prints each fused program's plan with its CUDA source (cg_plan_fprint).
 * --mock runs every path on cuda_rt's mock driver (no GPU; the numbers mean nothing): the
 * CPU test of the bench itself.
 */
#include "codegen.h"
#include "cuda_rt.h"
#include "egraph.h"
#include "hlir.h"
#include "llir.h"
#include "session.h"
#include "pg_gpu.h"
#include "program.h"
#include "rt_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CB_NOGPU 77

static const char *const COPY_SRC =
    "extern \"C\" __global__ void copy_v4(const uint4 *__restrict__ s, uint4 *__restrict__ d,\n"
    "    unsigned long long n) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) d[i] = s[i];\n"
    "}\n"
    "extern \"C\" __global__ void copy_loop(const uint4 *__restrict__ s, uint4 *__restrict__ d,\n"
    "    unsigned long long n) {\n"
    "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x) d[i] = s[i];\n"
    "}\n"
    "extern \"C\" __global__ void spin(long long cycles) {\n"
    "  long long t0 = clock64();\n"
    "  while (clock64() - t0 < cycles) { }\n"
    "}\n";

/* ==================================================================================
 * The most fused genome of a graph, as a program at its profile dims
 * ================================================================================== */

static int genome_llir(const hl_graph *g, bool least, ll_graph **out, lm_err *err)
{
    *out = NULL;
    cs_session *cs = cs_session_new(g, NULL, err); /* the built-in rules, silent */
    if (!cs) return err->code;
    const ll_space *sp = cs_session_space(cs);
    ll_genome gn = {0};
    int rc = ll_genome_init(&gn, sp, err);
    if (!rc) rc = least ? ll_genome_least_fused(&gn, sp, err) : ll_genome_most_fused(&gn, sp, err);
    if (!rc && !(*out = ll_graph_from_genome(sp, &gn, err))) rc = err->code;
    ll_genome_fini(&gn);
    cs_session_free(cs);
    return rc;
}

typedef struct cb_prog {
    hl_graph *g;
    ll_graph *lg;
    cg_plan *plan;
    pg_program *p;
    uint64_t bytes; /* inputs + outputs at the profile dims */
} cb_prog;

static void prog_free(cb_prog *b)
{
    pg_program_free(b->p);
    cg_plan_free(b->plan);
    ll_graph_free(b->lg);
    hl_graph_free(b->g);
    memset(b, 0, sizeof *b);
}

/* Loads dir/name.json, builds its most fused program at the profile dims with seeded
 * inputs set, and runs it once. */
static rt_mock *cb_mock; /* --mock: cuda_rt's mock driver (a CPU test of the paths) */
static bool cb_dump;     /* --dump: print each fused program's plan with its sources */

static int prog_open(const char *dir, const char *name, bool least, cb_prog *b, lm_err *err)
{
    memset(b, 0, sizeof *b);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    lm_err he = {0};
    if (!(b->g = hl_graph_load_json(path, &he))) {
        lm_err_copy(err, &he);
        return he.code ? he.code : LM_EIO;
    }
    int rc = genome_llir(b->g, least, &b->lg, err);
    if (!rc && !(b->plan = cg_plan_new(b->lg, NULL, err))) rc = err->code;
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_GPU;
    o.name = name;
    o.no_replay_skip = true;
    o.mock = cb_mock;
    if (!rc && !(b->p = pg_program_new(b->plan, b->lg, &o, err))) rc = err->code;
    /* dims: the profile values (the program starts at them); inputs seeded */
    for (uint32_t i = 0; !rc && i < pg_program_input_count(b->p); i++) {
        pg_tensor_info info;
        if ((rc = pg_program_input_info(b->p, i, &info, err))) break;
        hl_tensor t = {0};
        lm_err te = {0};
        hl_dtype dt = hl_graph_node(b->g, hl_graph_input(b->g, i))->dtype;
        if (hl_tensor_init(&t, dt, info.ndim, info.dims, &te) != 0 ||
            hl_graph_fill_input(b->g, i, &t, 1, &te) != 0) {
            lm_err_copy(err, &te);
            rc = te.code;
        } else {
            rc = pg_program_set_input(b->p, i, t.data, info.bytes, err);
        }
        hl_tensor_fini(&t);
        b->bytes += info.bytes;
    }
    for (uint32_t i = 0; !rc && i < pg_program_output_count(b->p); i++) {
        pg_tensor_info info;
        if (!(rc = pg_program_output_info(b->p, i, &info, err))) b->bytes += info.bytes;
    }
    if (!rc) rc = pg_program_run(b->p, err);
    if (rc) lm_err_prefix(err, "%s", name);
    return rc;
}

/* ==================================================================================
 * The copy ceiling
 * ================================================================================== */

/* GB/s of copying `bytes` in all (bytes/2 read, bytes/2 written) as a one-node graph. */
static int copy_rate(rt_ctx *ctx, uint64_t bytes, uint32_t trials, double *best, lm_err *err)
{
    *best = 0;
    uint64_t half = (bytes / 2 + 15) / 16 * 16;
    unsigned long long n16 = half / 16;
    rt_buf s = {0}, d = {0};
    int rc = rt_buf_reserve(ctx, &s, half, NULL, err);
    if (!rc) rc = rt_buf_reserve(ctx, &d, half, NULL, err);
    if (!rc) rc = rt_memset8(ctx, s.ptr, 0x3c, half, err);
    const char *names[2] = {"copy_v4", "copy_loop"};
    for (int v = 0; v < 2 && !rc; v++) {
        rt_kernel *k = NULL;
        if ((rc = rt_kernel_get(ctx, COPY_SRC, names[v], NULL, 0, &k, err))) break;
        uint32_t grid = v == 0 ? (uint32_t)((n16 + 255) / 256)
                               : (uint32_t)rt_ctx_device(ctx)->sm_count * 8;
        const void *args[3] = {&s.ptr, &d.ptr, &n16};
        size_t sizes[3] = {8, 8, 8};
        rt_launch l = {.kernel = k, .grid = {grid, 1, 1}, .block = {256, 1, 1}, .nargs = 3,
                       .args = args, .sizes = sizes};
        rt_graph *g = NULL;
        rt_exec *e = NULL;
        rt_timing t;
        rt_time_opts to = {.warmup = 5, .trials = trials, .reps = 1, .timeout_ms = 60000};
        if (!(rc = rt_graph_new(ctx, &g, err)) && !(rc = rt_graph_add_kernel(g, &l, NULL, 0, NULL, err)) &&
            !(rc = rt_exec_new(g, &e, err)) && !(rc = rt_exec_time(e, &to, &t, err))) {
            double gbs = 2.0 * (double)half / (t.median_ms * 1e-3) / 1e9;
            printf("  copy %s of %.1f MB: %.4f ms -> %.0f GB/s\n", names[v], 2.0 * half / 1e6,
                   t.median_ms, gbs);
            if (gbs > *best) *best = gbs;
        }
        rt_exec_free(e);
        rt_graph_free(g);
    }
    rt_buf_release(ctx, &s);
    rt_buf_release(ctx, &d);
    return rc;
}

/* ==================================================================================
 * One step alone, timed by events behind a spin kernel
 * ================================================================================== */

typedef struct cb_events {
    rt_ctx *ctx;
    CUevent a, b;
    rt_kernel *spin;
} cb_events;

static int ev_check(cb_events *x, CUresult r, const char *what, lm_err *err)
{
    if (r == CUDA_SUCCESS) return 0;
    return lm_err_set(err, LM_EDRIVER, NULL, "%s failed: %s", what, rt__cu_name(&x->ctx->drv, r));
}

static int step_launch(pg_program *p, uint32_t s, lm_err *err)
{
    pg_gpu *g = p->gpu;
    pg_variant *v = &g->var[g->cur];
    const cg_plan *pl = &p->plan;
    if (pl->steps[s].kind == CG_STEP_BLAS)
        return rt_matmul_enqueue(g->ctx, v->bl[s].mm, &v->bl[s].args, err);
    const cg_kernel *kk = &pl->kernels[pl->steps[s].index];
    const pg_launch *h = &v->held[s];
    const void *argp[CG_MAX_PARAMS];
    size_t sizes[CG_MAX_PARAMS];
    rt_launch l = {.kernel = g->kern[pl->steps[s].index], .shared_bytes = kk->shared_bytes,
                   .nargs = h->nargs, .args = argp, .sizes = sizes};
    memcpy(l.grid, h->grid, sizeof l.grid);
    memcpy(l.block, kk->block, sizeof l.block);
    for (uint32_t j = 0; j < h->nargs; j++)
        argp[j] = &h->args[j], sizes[j] = sizeof h->args[j];
    return rt_launch_kernel(g->ctx, &l, err);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The GPU time of step s alone (ms), median of `reps`. */
static int step_alone(cb_events *x, pg_program *p, uint32_t s, uint32_t reps, double *ms,
                      lm_err *err)
{
    rt_drv *d = &x->ctx->drv;
    double t[64];
    if (reps > 64) reps = 64;
    long long cycles = 200000; /* ~100 us: the host queues the rest meanwhile */
    const void *sa[1] = {&cycles};
    size_t ss[1] = {8};
    rt_launch sl = {.kernel = x->spin, .grid = {1, 1, 1}, .block = {1, 1, 1}, .nargs = 1,
                    .args = sa, .sizes = ss};
    int rc = 0;
    for (uint32_t r = 0; r < reps + 1 && !rc; r++) { /* the first is a warm-up */
        float f = 0;
        if ((rc = rt_launch_kernel(x->ctx, &sl, err))) break;
        if ((rc = ev_check(x, d->event_record(d->self, x->a, x->ctx->stream), "cuEventRecord", err)))
            break;
        if ((rc = step_launch(p, s, err))) break;
        if ((rc = ev_check(x, d->event_record(d->self, x->b, x->ctx->stream), "cuEventRecord", err)))
            break;
        if ((rc = ev_check(x, d->event_sync(d->self, x->b), "cuEventSynchronize", err))) break;
        if ((rc = ev_check(x, d->event_elapsed(d->self, &f, x->a, x->b), "cuEventElapsedTime", err)))
            break;
        if (r) t[r - 1] = f;
    }
    if (rc) return rc;
    qsort(t, reps, sizeof t[0], cmp_dbl);
    *ms = t[reps / 2];
    return 0;
}

/* ==================================================================================
 * The command
 * ================================================================================== */

static int fused(const char *dir, const char *name, uint32_t trials, int *status)
{
    cb_prog b;
    lm_err err = {0};
    if (prog_open(dir, name, false, &b, &err)) {
        printf("fused %s: FAILED: %s\n", name, err.msg);
        prog_free(&b);
        *status = 1;
        return 0;
    }
    if (cb_dump) cg_plan_fprint(b.plan, true, stdout);
    double med = 0, cbest = 0;
    int rc = pg_program_time(b.p, 5, trials, 1, 60000, &med, NULL, NULL, &err);
    if (!rc) rc = copy_rate(b.p->gpu->ctx, b.bytes, trials, &cbest, &err);
    if (rc) {
        printf("fused %s: FAILED timing: %s\n", name, err.msg);
        *status = 1;
    } else {
        double gbs = (double)b.bytes / (med * 1e-3) / 1e9;
        printf("fused %s: %u kernel%s (%s), %.1f MB, %.4f ms -> %.0f GB/s; copy of the same "
               "bytes %.0f GB/s; ratio %.3f%s\n",
               name, b.plan->n_kernels, b.plan->n_kernels == 1 ? "" : "s",
               b.plan->n_kernels ? b.plan->kernels[0].template_name : "-", b.bytes / 1e6, med, gbs,
               cbest, gbs / cbest, gbs / cbest >= 0.85 ? "" : " (below 0.85)");
        printf("RESULT fused_%s_gbs %.1f\nRESULT fused_%s_copy_gbs %.1f\nRESULT fused_%s_ratio "
               "%.3f\nRESULT fused_%s_kernels %u\n",
               name, gbs, name, cbest, name, gbs / cbest, name, b.plan->n_kernels);
    }
    fflush(stdout);
    prog_free(&b);
    return 0;
}

static void decode(const char *dir, bool least, uint32_t trials, int *status)
{
    const char *name = "decode_mlp_bf16";
    const char *which = least ? "least_fused" : "most_fused";
    cb_prog b;
    lm_err err = {0};
    if (prog_open(dir, name, least, &b, &err)) {
        printf("decode_mlp %s: FAILED: %s\n", which, err.msg);
        prog_free(&b);
        *status = 1;
        return;
    }
    double med = 0;
    cb_events x = {.ctx = b.p->gpu->ctx};
    rt_drv *d = &x.ctx->drv;
    int rc = pg_program_time(b.p, 20, trials, 1, 60000, &med, NULL, NULL, &err);
    if (!rc) rc = rt_kernel_get(x.ctx, COPY_SRC, "spin", NULL, 0, &x.spin, &err);
    if (!rc) rc = ev_check(&x, d->event_create(d->self, &x.a, CU_EVENT_DEFAULT), "cuEventCreate", &err);
    if (!rc) rc = ev_check(&x, d->event_create(d->self, &x.b, CU_EVENT_DEFAULT), "cuEventCreate", &err);
    double sum = 0;
    const cg_plan *pl = b.plan;
    for (uint32_t s = 0; !rc && s < pl->n_steps; s++) {
        double ms = 0;
        rc = step_alone(&x, b.p, s, 21, &ms, &err);
        if (!rc) {
            bool blas = pl->steps[s].kind == CG_STEP_BLAS;
            printf("  step %u (%s): %.2f us alone\n", s,
                   blas ? "cuBLASLt" : pl->kernels[pl->steps[s].index].template_name, ms * 1e3);
            sum += ms;
        }
    }
    if (x.a) d->event_destroy(d->self, x.a);
    if (x.b) d->event_destroy(d->self, x.b);
    if (rc) {
        printf("decode_mlp %s: FAILED: %s\n", which, err.msg);
        *status = 1;
    } else {
        double per = (med - sum) * 1e3 / pl->n_steps;
        printf("decode_mlp %s: %u steps (%u kernels, %u library calls), replay %.2f us, steps "
               "alone %.2f us, overhead %.2f us/node (target 0.6)%s\n",
               which, pl->n_steps, pl->n_kernels, pl->n_blas, med * 1e3, sum * 1e3, per,
               per <= 0.6 ? "" : " (above the target)");
        printf("RESULT decode_%s_replay_us %.2f\nRESULT decode_%s_alone_us %.2f\nRESULT "
               "decode_%s_steps %u\nRESULT decode_%s_overhead_us_per_node %.3f\n",
               which, med * 1e3, which, sum * 1e3, which, pl->n_steps, which, per);
    }
    prog_free(&b);
}

int main(int argc, char **argv)
{
    const char *dir = "examples/graphs";
    uint32_t trials = 50;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--graphs") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--dump") == 0)
            cb_dump = true;
        else if (strcmp(argv[i], "--mock") == 0)
            cb_mock = rt_mock_new(NULL);
        else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            trials = (uint32_t)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cg_bench [--graphs DIR] [--trials N] [--mock] [--dump]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    rt_ctx *ctx = NULL;
    lm_err err = {0};
    if ((cb_mock ? rt_ctx_new_mock(cb_mock, NULL, &ctx, &err) : rt_ctx_new(NULL, &ctx, &err)) != 0) {
        printf("cg_bench: no GPU: %s\n", err.msg);
        return CB_NOGPU;
    }
    const rt_device_info *dev = rt_ctx_device(ctx);
    printf("cg_bench: %s, sm_%d%d, %d SMs\n", dev->name, dev->cc_major, dev->cc_minor,
           dev->sm_count);
    int status = 0;
    const char *fused_names[] = {"rmsnorm_f32_8192x4096", "softmax_f32_4096x8192",
                                 "layernorm_gelu_f32_4096", "elementwise_chain_f32_16m"};
    for (size_t i = 0; i < sizeof fused_names / sizeof fused_names[0]; i++)
        fused(dir, fused_names[i], trials, &status);
    decode(dir, false, trials * 4, &status);
    decode(dir, true, trials * 4, &status);
    rt_ctx_free(ctx);
    rt_mock_free(cb_mock);
    return status;
}
