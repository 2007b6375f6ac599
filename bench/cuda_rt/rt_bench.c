/* rt_bench.c: the cuda_rt measurements on a real GPU (docs/perf.md, "CUDA runtime").
 *
 *  1. copy: our NVRTC copy kernels' bandwidth against the measured device-to-device copy
 *     ceiling: the fastest of a driver memcpy captured into a graph, the same memcpy on
 *     the stream, and torch's copy_ (given with --torch); 1 GiB, bytes read plus bytes
 *     written over time;
 *  2. matmul: cuBLASLt bf16 4096^3 and 8192^3 through the prepared path, captured into a
 *     graph and timed as replays, next to torch.matmul's rate when given --torch FILE
 *     (lines "<size> <tflops>", written by torch_matmul.py in the same run);
 *  3. graph replay cost per kernel node for chains of 1, 10, 100 and 1000 empty kernels
 *     (GPU time by events, and host wall time per node), next to individual launches
 *     (host wall time per launch, launch and sync included).
 * All timings: warm-up, then the median of trials (rt_exec_time). Inputs stay resident.
 * Prints a table; exits 2 with a message where there is no GPU.
 */
#include "cuda_rt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static lm_err err;
static void die(const char *what)
{
    fprintf(stderr, "rt_bench: %s: %s\n", what, err.msg);
    exit(1);
}
#define CK(call)                                                                                   \
    do {                                                                                           \
        if ((call) != 0) die(#call);                                                               \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *copy_src =
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "copy_v4(const uint4 *__restrict__ s, uint4 *__restrict__ d, unsigned long long n) {\n"
    "  unsigned long long i = blockIdx.x * 256ull + threadIdx.x;\n"
    "  if (i < n) d[i] = s[i];\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "copy_v4x4(const uint4 *__restrict__ s, uint4 *__restrict__ d, unsigned long long n) {\n"
    "  unsigned long long stride = gridDim.x * 256ull;\n"
    "  unsigned long long i = blockIdx.x * 256ull + threadIdx.x;\n"
    "  for (; i + 3 * stride < n; i += 4 * stride) {\n"
    "    uint4 a = s[i], b = s[i + stride], c = s[i + 2 * stride], e = s[i + 3 * stride];\n"
    "    d[i] = a; d[i + stride] = b; d[i + 2 * stride] = c; d[i + 3 * stride] = e;\n"
    "  }\n"
    "  for (; i < n; i += stride) d[i] = s[i];\n"
    "}\n"
    "extern \"C\" __global__ void empty(void) { }\n";

typedef struct copy_job {
    rt_dptr dst, src;
    size_t bytes;
} copy_job;

static int capture_memcpy(rt_ctx *ctx, void *user, lm_err *e)
{
    copy_job *j = user;
    return rt_copy_dtod(ctx, j->dst, j->src, j->bytes, e);
}

static rt_exec *graph_of(rt_ctx *ctx, rt_graph **g, const rt_launch *l, unsigned chain)
{
    CK(rt_graph_new(ctx, g, &err));
    uint32_t prev = 0;
    for (unsigned i = 0; i < chain; i++) {
        uint32_t id;
        CK(rt_graph_add_kernel(*g, l, i ? &prev : NULL, i ? 1 : 0, &id, &err));
        prev = id;
    }
    rt_exec *e;
    CK(rt_exec_new(*g, &e, &err));
    return e;
}

/* checks that dst holds byte v at its start and end (copy really ran) */
static void check_bytes(rt_ctx *ctx, rt_dptr dst, size_t bytes, unsigned char v)
{
    static unsigned char h[1 << 20];
    size_t offs[2] = {0, bytes - sizeof h};
    for (int i = 0; i < 2; i++) {
        CK(rt_copy_dtoh(ctx, h, dst + offs[i], sizeof h, &err));
        CK(rt_ctx_sync(ctx, &err));
        for (size_t k = 0; k < sizeof h; k++)
            if (h[k] != v) {
                fprintf(stderr, "rt_bench: copy check failed at byte %zu\n", offs[i] + k);
                exit(1);
            }
    }
}

static uint16_t bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

typedef struct mm_job {
    rt_matmul *mm;
    rt_matmul_args args;
} mm_job;

static int enqueue_mm(rt_ctx *ctx, void *user, lm_err *e)
{
    mm_job *j = user;
    return rt_matmul_enqueue(ctx, j->mm, &j->args, e);
}

int main(int argc, char **argv)
{
    const char *torch_file = NULL, *results_file = NULL;
    bool only_matmul = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--torch") == 0 && i + 1 < argc)
            torch_file = argv[++i];
        else if (strcmp(argv[i], "--results") == 0 && i + 1 < argc)
            results_file = argv[++i];
        else if (strcmp(argv[i], "--only-matmul") == 0)
            only_matmul = true;
        else {
            fprintf(stderr, "usage: rt_bench [--torch FILE] [--results FILE] [--only-matmul]\n");
            return 2;
        }
    }
    FILE *res = results_file ? fopen(results_file, "a") : NULL;
    if (results_file && !res) {
        fprintf(stderr, "rt_bench: cannot open %s\n", results_file);
        return 2;
    }
    rt_ctx *ctx;
    if (rt_ctx_new(NULL, &ctx, &err) != 0) {
        fprintf(stderr, "rt_bench: %s\n", err.msg);
        return 2;
    }
    const rt_device_info *dev = rt_ctx_device(ctx);
    printf("device: %s sm_%d%d, %d SMs, driver %d, capture mode %s\n", dev->name, dev->cc_major,
           dev->cc_minor, dev->sm_count, dev->driver_version,
           dev->capture_mode == RT_CAPTURE_TO_GRAPH ? "to-graph" : "child-graph");

    char blas_path[512];
    size_t blas_version = 0;
    CK(rt_blas_info(ctx, blas_path, sizeof blas_path, &blas_version, &err));
    printf("cuBLASLt: %s (version %zu)\n", blas_path, blas_version);

    /* ---- 1. copy ------------------------------------------------------------------- */
    rt_timing t;
    double ceiling = 0, kbw[2] = {0, 0};
    const char *ceiling_name = "-";
    const char *names[2] = {"copy_v4", "copy_v4x4"};
    if (!only_matmul) {
        size_t bytes = (size_t)1 << 30;
        rt_buf S = {0}, D = {0};
        CK(rt_buf_reserve(ctx, &S, bytes, NULL, &err));
        CK(rt_buf_reserve(ctx, &D, bytes, NULL, &err));
        rt_time_opts to = {.warmup = 3, .trials = 15, .reps = 3, .timeout_ms = 30000};
        copy_job cj = {D.ptr, S.ptr, bytes};
        CK(rt_memset8(ctx, S.ptr, 0x11, bytes, &err));
        CK(rt_memset8(ctx, D.ptr, 0x00, bytes, &err));
        rt_graph *gm;
        CK(rt_graph_new(ctx, &gm, &err));
        CK(rt_graph_add_captured(gm, capture_memcpy, &cj, NULL, 0, NULL, &err));
        rt_exec *em;
        CK(rt_exec_new(gm, &em, &err));
        CK(rt_exec_time(em, &to, &t, &err));
        check_bytes(ctx, D.ptr, bytes, 0x11);
        double memcpy_graph = 2.0 * (double)bytes / (t.median_ms * 1e-3) / 1e9; /* GB/s */
        printf("d2d memcpy captured in a graph: %.4f ms median (%.4f..%.4f) -> %.0f GB/s\n",
               t.median_ms, t.min_ms, t.max_ms, memcpy_graph);
        rt_exec_free(em);
        rt_graph_free(gm);
        /* the same memcpy on the stream (the driver may pick another engine than for a graph
         * node): host wall time over 20 copies, median of 7 */
        double wall[7];
        for (int w = 0; w < 7; w++) {
            CK(rt_copy_dtod(ctx, D.ptr, S.ptr, bytes, &err));
            CK(rt_ctx_sync(ctx, &err));
            double t0 = now_s();
            for (int q = 0; q < 20; q++)
                CK(rt_copy_dtod(ctx, D.ptr, S.ptr, bytes, &err));
            CK(rt_ctx_sync(ctx, &err));
            wall[w] = (now_s() - t0) / 20;
        }
        for (int a = 0; a < 7; a++)
            for (int b = a + 1; b < 7; b++)
                if (wall[b] < wall[a]) {
                    double x = wall[a];
                    wall[a] = wall[b];
                    wall[b] = x;
                }
        double memcpy_stream = 2.0 * (double)bytes / wall[3] / 1e9;
        printf("d2d memcpy on the stream: %.4f ms median -> %.0f GB/s\n", wall[3] * 1e3,
               memcpy_stream);
        double torch_copy = 0;
        if (torch_file) {
            FILE *f = fopen(torch_file, "r");
            char kind[32];
            int sz;
            double v;
            while (f && fscanf(f, "%31s %d %lf", kind, &sz, &v) == 3)
                if (strcmp(kind, "copy") == 0) torch_copy = v;
            if (f) fclose(f);
            if (torch_copy > 0) printf("torch d2d copy_: %.0f GB/s\n", torch_copy);
        }
        /* the ceiling: the fastest device-to-device copy measured in this run */
        ceiling = memcpy_graph;
        ceiling_name = "memcpy graph node";
        if (memcpy_stream > ceiling) ceiling = memcpy_stream, ceiling_name = "cuMemcpyDtoDAsync";
        if (torch_copy > ceiling) ceiling = torch_copy, ceiling_name = "torch copy_";

        unsigned long long n16 = bytes / 16;
        for (int v = 0; v < 2; v++) {
            rt_kernel *k;
            CK(rt_kernel_get(ctx, copy_src, names[v], NULL, 0, &k, &err));
            unsigned grid = v == 0 ? (unsigned)((n16 + 255) / 256) : (unsigned)dev->sm_count * 8;
            const void *args[3] = {&S.ptr, &D.ptr, &n16};
            size_t sizes[3] = {8, 8, 8};
            rt_launch l = {.kernel = k,
                           .grid = {grid, 1, 1},
                           .block = {256, 1, 1},
                           .nargs = 3,
                           .args = args,
                           .sizes = sizes};
            unsigned char pat = (unsigned char)(0x22 + v);
            CK(rt_memset8(ctx, S.ptr, pat, bytes, &err));
            CK(rt_memset8(ctx, D.ptr, 0, bytes, &err));
            rt_graph *g;
            rt_exec *e = graph_of(ctx, &g, &l, 1);
            CK(rt_exec_time(e, &to, &t, &err));
            check_bytes(ctx, D.ptr, bytes, pat);
            kbw[v] = 2.0 * (double)bytes / (t.median_ms * 1e-3) / 1e9;
            printf("%s grid %u: %.4f ms median (%.4f..%.4f) -> %.0f GB/s = %.3f of ceiling\n",
                   names[v], grid, t.median_ms, t.min_ms, t.max_ms, kbw[v], kbw[v] / ceiling);
            rt_exec_free(e);
            rt_graph_free(g);
        }
        rt_buf_release(ctx, &S);
        rt_buf_release(ctx, &D);
        if (res) {
            fprintf(res, "ceiling %s %.1f\n", ceiling_name, ceiling);
            for (int v = 0; v < 2; v++)
                fprintf(res, "copykernel %s %.1f\n", names[v], kbw[v]);
        }
    } /* !only_matmul */

    /* ---- 2. matmul -------------------------------------------------------------------- */
    int sizes_mm[2] = {4096, 8192};
    double ours[2] = {0, 0}, theirs[2] = {0, 0};
    if (torch_file) {
        FILE *f = fopen(torch_file, "r");
        char kind[32];
        int sz;
        double tf;
        while (f && fscanf(f, "%31s %d %lf", kind, &sz, &tf) == 3)
            for (int i = 0; i < 2; i++)
                if (strcmp(kind, "matmul") == 0 && sizes_mm[i] == sz) theirs[i] = tf;
        if (f) fclose(f);
    }
    for (int i = 0; i < 2; i++) {
        int64_t n = sizes_mm[i];
        size_t elems = (size_t)n * (size_t)n;
        uint16_t *ha = malloc(elems * 2), *hb = malloc(elems * 2), *hd = malloc(elems * 2);
        uint64_t r = 0x1234567 + (uint64_t)i;
        for (size_t q = 0; q < elems; q++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            ha[q] = bf16((float)((r >> 40) & 0xffff) / 32768.0f - 1.0f);
            hb[q] = bf16((float)((r >> 20) & 0xffff) / 32768.0f - 1.0f);
        }
        rt_buf A = {0}, B = {0}, Dm = {0}, W = {0};
        CK(rt_buf_reserve(ctx, &A, elems * 2, NULL, &err));
        CK(rt_buf_reserve(ctx, &B, elems * 2, NULL, &err));
        CK(rt_buf_reserve(ctx, &Dm, elems * 2, NULL, &err));
        CK(rt_copy_htod(ctx, A.ptr, ha, elems * 2, &err));
        CK(rt_copy_htod(ctx, B.ptr, hb, elems * 2, &err));
        rt_matmul_spec s;
        rt_matmul_spec_init(&s, n, n, n, RT_BF16);
        mm_job j;
        CK(rt_matmul_prepare(ctx, &s, &j.mm, &err));
        CK(rt_buf_reserve(ctx, &W, (size_t)32 << 20, NULL, &err));
        j.args = (rt_matmul_args){
            .a = A.ptr, .b = B.ptr, .d = Dm.ptr, .workspace = W.ptr, .workspace_bytes = W.capacity};
        /* the same thermal start as torch_matmul.py gives its runs: an idle pause */
        sleep(2);
        rt_graph *g;
        CK(rt_graph_new(ctx, &g, &err));
        CK(rt_graph_add_captured(g, enqueue_mm, &j, NULL, 0, NULL, &err));
        rt_exec *e;
        CK(rt_exec_new(g, &e, &err));
        rt_time_opts mo = {.warmup = 10, .trials = 20, .reps = 5, .timeout_ms = 60000};
        CK(rt_exec_time(e, &mo, &t, &err));
        ours[i] = 2.0 * (double)n * (double)n * (double)n / (t.median_ms * 1e-3) / 1e12;
        /* spot-check 64 entries against a double-precision dot product */
        CK(rt_copy_dtoh(ctx, hd, Dm.ptr, elems * 2, &err));
        CK(rt_ctx_sync(ctx, &err));
        double num = 0, den = 0;
        for (int q = 0; q < 64; q++) {
            size_t row = (size_t)(q * 7919) % (size_t)n, col = (size_t)(q * 104729) % (size_t)n;
            double ref = 0;
            for (int64_t p = 0; p < n; p++)
                ref += (double)from_bf16(ha[row * (size_t)n + (size_t)p]) *
                       from_bf16(hb[(size_t)p * (size_t)n + col]);
            double got = from_bf16(hd[row * (size_t)n + col]);
            num += (got - ref) * (got - ref);
            den += ref * ref;
        }
        double rel = sqrt(num / den);
        printf("bf16 %lld^3 (workspace %zu B): %.4f ms median (%.4f..%.4f) -> %.1f TFLOP/s, spot "
               "rel err %.1e\n",
               (long long)n, rt_matmul_workspace(j.mm), t.median_ms, t.min_ms, t.max_ms, ours[i],
               rel);
        if (!(rel < 2e-2)) {
            fprintf(stderr, "rt_bench: matmul result wrong (rel err %.3e)\n", rel);
            return 1;
        }
        if (res) fprintf(res, "matmul %lld %.2f\n", (long long)n, ours[i]);
        rt_exec_free(e);
        rt_graph_free(g);
        rt_buf_release(ctx, &A), rt_buf_release(ctx, &B), rt_buf_release(ctx, &Dm);
        rt_buf_release(ctx, &W);
        free(ha), free(hb), free(hd);
    }

    if (only_matmul) {
        if (res) fclose(res);
        rt_ctx_free(ctx);
        return 0;
    }
    /* ---- 3. graph replay vs individual launches ----------------------------------------- */
    rt_kernel *ek;
    CK(rt_kernel_get(ctx, copy_src, "empty", NULL, 0, &ek, &err));
    rt_launch el = {.kernel = ek, .grid = {1, 1, 1}, .block = {32, 1, 1}};
    unsigned chains[4] = {1, 10, 100, 1000};
    double per_node_ev[4], per_node_wall[4], per_launch[4];
    for (int c = 0; c < 4; c++) {
        unsigned len = chains[c];
        rt_graph *g;
        rt_exec *e = graph_of(ctx, &g, &el, len);
        unsigned reps = len >= 1000 ? 5 : 5000 / len;
        rt_time_opts go = {.warmup = 10, .trials = 21, .reps = reps, .timeout_ms = 30000};
        CK(rt_exec_time(e, &go, &t, &err));
        per_node_ev[c] = t.median_ms * 1e3 / len;
        /* host wall time of replays (launch cost included), median of 11 */
        double walls[11];
        for (int w = 0; w < 11; w++) {
            double t0 = now_s();
            for (unsigned q = 0; q < reps; q++)
                CK(rt_exec_launch(e, &err));
            CK(rt_ctx_sync(ctx, &err));
            walls[w] = (now_s() - t0) * 1e6 / ((double)reps * len);
        }
        for (int a = 0; a < 11; a++)
            for (int b = a + 1; b < 11; b++)
                if (walls[b] < walls[a]) {
                    double x = walls[a];
                    walls[a] = walls[b];
                    walls[b] = x;
                }
        per_node_wall[c] = walls[5];
        /* the same kernels launched one by one */
        double lw[11];
        for (int w = 0; w < 11; w++) {
            double t0 = now_s();
            for (unsigned q = 0; q < reps * len; q++)
                CK(rt_launch_kernel(ctx, &el, &err));
            CK(rt_ctx_sync(ctx, &err));
            lw[w] = (now_s() - t0) * 1e6 / ((double)reps * len);
        }
        for (int a = 0; a < 11; a++)
            for (int b = a + 1; b < 11; b++)
                if (lw[b] < lw[a]) {
                    double x = lw[a];
                    lw[a] = lw[b];
                    lw[b] = x;
                }
        per_launch[c] = lw[5];
        if (res)
            fprintf(res, "replay %u %.4f %.4f %.4f\n", len, per_node_ev[c], per_node_wall[c],
                    per_launch[c]);
        printf("chain %4u: replay %.3f us/node (events), %.3f us/node (wall); individual launches "
               "%.3f us/launch (wall)\n",
               len, per_node_ev[c], per_node_wall[c], per_launch[c]);
        rt_exec_free(e);
        rt_graph_free(g);
    }

    /* ---- summary ------------------------------------------------------------------------- */
    printf("\n== cuda_rt measurements (%s) ==\n", dev->name);
    printf("| measurement | ours | anchor | ratio | goal |\n|---|---|---|---|---|\n");
    int best = kbw[1] > kbw[0];
    printf("| NVRTC copy kernel (%s), 1 GiB | %.0f GB/s | fastest d2d copy (%s) %.0f GB/s | %.3f "
           "| >= 0.90 |\n",
           names[best], kbw[best], ceiling_name, ceiling, kbw[best] / ceiling);
    for (int i = 0; i < 2; i++) {
        if (theirs[i] > 0)
            printf(
                "| cuBLASLt bf16 %d^3 (prepared, graph) | %.1f TFLOP/s | torch.matmul %.1f TFLOP/s "
                "| %.3f | >= 0.97 |\n",
                sizes_mm[i], ours[i], theirs[i], ours[i] / theirs[i]);
        else
            printf(
                "| cuBLASLt bf16 %d^3 (prepared, graph) | %.1f TFLOP/s | torch.matmul not run | - "
                "| >= 0.97 |\n",
                sizes_mm[i], ours[i]);
    }
    for (int c = 0; c < 4; c++)
        printf("| graph replay, chain of %u empty kernels | %.3f us/node (events), %.3f (wall) | "
               "individual launches %.3f us | %.2f | <= 1 us/node |\n",
               chains[c], per_node_ev[c], per_node_wall[c], per_launch[c],
               per_node_wall[c] / per_launch[c]);
    if (res) fclose(res);
    rt_ctx_free(ctx);
    return 0;
}
