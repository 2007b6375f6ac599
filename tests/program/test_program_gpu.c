/* test_program_gpu.c - a compiled program on a real GPU (label gpu; skipped, exit 77,
 * without a device): the fixture's programs (pf.h, with and without a cuBLASLt call, in
 * place and not) agree with the CPU backend over dim changes and buckets, device inputs,
 * timing, a faulting kernel named by pg_program_diagnose from a child while the
 * process that asked goes on, and codegen's plans (standalone kernels and the test rules'
 * most fused genomes) against the reference runtime by llir's tolerances. Every test runs in a
 * process of its own (CK_FORK), which touches CUDA only inside the test. */
#include "../llir/tl.h"
#include "../llir_exec/tx.h"
#include "cuda_rt.h"
#include "pf.h"
#include "pg_int.h"

#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

static pg_program *make(pf *f, pg_backend b, bool inplace, uint32_t nb, const pg_bucket *bk)
{
    pg_options o;
    pg_options_default(&o);
    o.backend = b;
    o.no_inplace = !inplace;
    pg_dim_buckets db = {"n", nb, bk};
    if (nb) {
        o.n_buckets = 1;
        o.buckets = &db;
    }
    lm_err e = {0};
    pg_program *p = pg_program_new(&f->plan, f->g, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    return p;
}

/* Runs both at n on seeded inputs and compares the outputs (relative 1e-5). */
static void agree(pg_program *gpu, pg_program *cpu, int64_t n, uint64_t seed)
{
    lm_err e = {0};
    ck_assert_msg(pg_program_set_dim(gpu, "n", n, &e) == 0 &&
                      pg_program_set_dim(cpu, "n", n, &e) == 0,
                  "%s", e.msg);
    pf_in in;
    pf_inputs(&in, n, seed);
    pf_set(gpu, &in);
    pf_set(cpu, &in);
    ck_assert_msg(pg_program_run(gpu, &e) == 0, "%s", e.msg);
    ck_assert_msg(pg_program_run(cpu, &e) == 0, "%s", e.msg);
    const float *g, *c;
    size_t bg, bc;
    ck_assert_msg(pg_program_output(gpu, 0, (const void **)&g, &bg, &e) == 0, "%s", e.msg);
    ck_assert_msg(pg_program_output(cpu, 0, (const void **)&c, &bc, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(bg, bc);
    for (size_t i = 0; i < bg / 4; i++)
        ck_assert_msg(fabsf(g[i] - c[i]) <= 1e-5f * (1.0f + fabsf(c[i])),
                      "n %lld element %zu: GPU %.9g, CPU %.9g", (long long)n, i, g[i], c[i]);
    pf_inputs_free(&in);
}

START_TEST(gpu_programs_agree_with_the_cpu_over_dim_changes)
{
    for (int blas = 0; blas < 2; blas++)
        for (int inplace = 0; inplace < 2; inplace++) {
            pf f;
            pf_make(&f, blas);
            pg_program *gpu = make(&f, PG_BACKEND_GPU, inplace, 0, NULL);
            pg_program *cpu = make(&f, PG_BACKEND_CPU, false, 0, NULL);
            printf("gpu program (blas %d, in place %d): %s\n", blas, inplace,
                   pg_program_backend_note(gpu));
            const int64_t ns[] = {8, 100, 256, 1, 37};
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
                agree(gpu, cpu, ns[i], 10 + i);
            pg_counters c;
            pg_program_counters(gpu, &c);
            printf("  counters: %llu node updates, %llu graph updates, %llu re-instantiations, "
                   "%llu prepares\n",
                   (unsigned long long)c.kernel_node_updates, (unsigned long long)c.graph_updates,
                   (unsigned long long)c.reinstantiations, (unsigned long long)c.blas_prepares);
            fflush(stdout);
            ck_assert_uint_eq(c.instantiations, 1);
            /* without a library call every dim change is a kernel-node update in place; a
             * matmul whose sizes change is prepared again, and the graph updated whole */
            if (blas)
                ck_assert_uint_eq(c.graph_updates + c.reinstantiations, 4);
            else
                ck_assert_uint_gt(c.kernel_node_updates, 0);
            pg_program_free(gpu);
            pg_program_free(cpu);
            pf_free(&f);
        }
}
END_TEST

START_TEST(gpu_buckets_each_agree_with_the_cpu)
{
    pf f;
    pf_make(&f, true);
    pg_bucket b[2] = {{1, 64}, {65, 256}};
    pg_program *gpu = make(&f, PG_BACKEND_GPU, true, 2, b);
    pg_program *cpu = make(&f, PG_BACKEND_CPU, false, 0, NULL);
    agree(gpu, cpu, 10, 1);
    agree(gpu, cpu, 200, 2);
    agree(gpu, cpu, 64, 3);
    agree(gpu, cpu, 65, 4);
    pg_counters c;
    pg_program_counters(gpu, &c);
    ck_assert_uint_eq(c.instantiations, 2);
    pg_program_free(gpu);
    pg_program_free(cpu);
    pf_free(&f);
}
END_TEST

START_TEST(gpu_device_inputs_and_unchanged_inputs)
{
    pf f;
    pf_make(&f, false);
    pg_program *gpu = make(&f, PG_BACKEND_GPU, true, 0, NULL);
    pg_program *cpu = make(&f, PG_BACKEND_CPU, false, 0, NULL);
    agree(gpu, cpu, 16, 5);
    /* y from device memory of our own (the same primary context) */
    rt_ctx *ctx = NULL;
    lm_err e = {0};
    ck_assert_msg(rt_ctx_new(NULL, &ctx, &e) == 0, "%s", e.msg);
    pf_in in;
    pf_inputs(&in, 16, 6);
    rt_buf y = {0};
    ck_assert_msg(rt_buf_reserve(ctx, &y, in.nx * 4, NULL, &e) == 0, "%s", e.msg);
    ck_assert_msg(rt_copy_htod(ctx, y.ptr, in.y, in.nx * 4, &e) == 0 && rt_ctx_sync(ctx, &e) == 0,
                  "%s", e.msg);
    pf_set(gpu, &in);
    pf_set(cpu, &in);
    ck_assert_msg(pg_program_set_input_device(gpu, 1, y.ptr, in.nx * 4, &e) == 0, "%s", e.msg);
    ck_assert_msg(pg_program_run(gpu, &e) == 0 && pg_program_run(cpu, &e) == 0, "%s", e.msg);
    const float *g, *c;
    size_t bytes;
    ck_assert(pg_program_output(gpu, 0, (const void **)&g, &bytes, &e) == 0);
    ck_assert(pg_program_output(cpu, 0, (const void **)&c, &bytes, &e) == 0);
    for (size_t i = 0; i < bytes / 4; i++)
        ck_assert_msg(fabsf(g[i] - c[i]) <= 1e-5f * (1.0f + fabsf(c[i])), "element %zu", i);
    /* x and w again, unchanged: not uploaded */
    ck_assert(pg_program_set_input(gpu, 0, in.x, in.nx * 4, &e) == 0);
    ck_assert(pg_program_set_input(gpu, 2, in.w, 32 * 4, &e) == 0);
    pg_counters cnt;
    pg_program_counters(gpu, &cnt);
    ck_assert_uint_eq(cnt.uploads_skipped, 2);
    double med;
    ck_assert_msg(pg_program_time(gpu, 3, 20, 1, 10000, &med, NULL, NULL, &e) == 0, "%s", e.msg);
    printf("gpu replay of the 4-step program at n = 16: %.4f ms median of 20\n", med);
    ck_assert(med > 0);
    pf_inputs_free(&in);
    pg_program_free(gpu);
    pg_program_free(cpu);
    rt_buf_release(ctx, &y);
    rt_ctx_free(ctx);
    pf_free(&f);
}
END_TEST

static const char *const FAULTING =
    "extern \"C\" __global__ void lm_kernel(const float *__restrict__ x,\n"
    "    float *__restrict__ out, long long n) {\n"
    "  if (threadIdx.x == 0) *(volatile float *)(out - (1ll << 40)) = x[0];\n"
    "}\n";

START_TEST(gpu_a_faulting_kernel_is_named_by_diagnose_and_in_process)
{
    pf f;
    pf_make(&f, false);
    free(f.plan.kernels[1].source);
    f.plan.kernels[1].source = pf_strdup(FAULTING);
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_GPU;
    o.defer_gpu = true; /* this process has not touched CUDA: the child may */
    lm_err e = {0};
    pg_program *p = pg_program_new(&f.plan, f.g, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(p, &in);
    pg_diagnosis d;
    ck_assert_msg(pg_program_diagnose(p, 60000, &d, &e) == 0, "%s", e.msg);
    printf("diagnosis: %s\n", d.msg);
    ck_assert(d.faulted);
    ck_assert_uint_eq(d.step, 1);
    ck_assert_uint_eq(d.kernel, 1);
    ck_assert_uint_eq(d.llir_node, f.plan.kernels[1].llir_node);
    ck_assert_int_eq(d.code, LM_EFAULT);
    /* now in this process: the replay faults, and the error says what that means */
    ck_assert_int_eq(pg_program_run(p, &e), LM_EFAULT);
    printf("in process: %s\n", e.msg);
    ck_assert_ptr_nonnull(strstr(e.msg, "must be restarted"));
    pg_program_free(p);
    pf_inputs_free(&in);
    pf_free(&f);
}
END_TEST

/* Runs codegen's plan of g (an LLIR graph of hlir graph h) on the GPU at h's profile dims
 * and compares every output with the reference runtime's by llir's tolerances
 * (ll_compare_outputs). Returns false (with a line printed) when codegen cannot plan it. */
static bool gpu_matches_reference(const hl_graph *h, const ll_graph *g, const char *what)
{
    lm_err e = {0};
    cg_plan *plan = cg_plan_new(g, NULL, &e);
    if (!plan) {
        ck_assert_msg(e.code == LM_EUNSUPPORTED, "%s: %s", what, e.msg);
        printf("gpu %s: not planned: %s\n", what, e.msg);
        return false;
    }
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_GPU;
    o.name = what;
    pg_program *p = pg_program_new(plan, g, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    int64_t dims[8];
    tx_dims(h, 0, dims);
    for (uint32_t d = 0; d < hl_graph_dim_count(h); d++)
        ck_assert_int_eq(
            pg_program_set_dim(p, hl_var_name(hl_graph_exprs_c(h), hl_graph_dim_at(h, d)->var),
                               dims[d], &e),
            0);
    hl_tensor in[TX_MAX_IO], ref[TX_MAX_IO], cand[TX_MAX_IO];
    tx_inputs(h, dims, 7, in);
    tx_ref(h, dims, in, ref);
    for (uint32_t i = 0; i < hl_graph_input_count(h); i++)
        ck_assert_msg(pg_program_set_input(p, i, in[i].data,
                                           in[i].numel * hl_dtype_size(in[i].dtype), &e) == 0,
                      "%s", e.msg);
    ck_assert_msg(pg_program_run(p, &e) == 0, "%s: %s", what, e.msg);
    for (uint32_t k = 0; k < hl_graph_output_count(h); k++) {
        pg_tensor_info info;
        const void *data;
        ck_assert(pg_program_output_info(p, k, &info, &e) == 0);
        ck_assert_msg(pg_program_output(p, k, &data, NULL, &e) == 0, "%s", e.msg);
        memset(&cand[k], 0, sizeof cand[k]);
        cand[k].dtype = ref[k].dtype;
        cand[k].ndim = info.ndim;
        memcpy(cand[k].dims, info.dims, sizeof cand[k].dims);
        cand[k].numel = (size_t)info.numel;
        cand[k].data = (void *)data;
    }
    ck_assert_msg(ll_compare_outputs(h, dims, cand, ref, NULL, &e) == 0, "%s: %s", what, e.msg);
    tx_free(in, hl_graph_input_count(h));
    tx_free(ref, hl_graph_output_count(h));
    pg_program_free(p);
    cg_plan_free(plan);
    return true;
}

START_TEST(gpu_codegen_plans_match_the_reference)
{
    uint32_t ok = 0;
    const char *names[] = {"primitives_strided", "embedding_gather"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        hl_graph *h = tl_example(names[i]);
        lm_err e = {0};
        ll_graph *g = ll_graph_from_hlir(h, &e);
        ck_assert_msg(g, "%s", e.msg);
        ok += gpu_matches_reference(h, g, names[i]);
        ll_graph_free(g);
        hl_graph_free(h);
    }
    /* generated graphs, as standalone kernels and as the test rules fuse them most */
    for (uint64_t seed = 1; seed <= 12; seed++) {
        hl_gen_opts go = {.n_ops = 10, .max_dim = 6, .dynamic = seed % 2 == 0};
        lm_err he = {0};
        hl_graph *h = hl_graph_generate(seed, &go, &he);
        ck_assert_msg(h, "%s", he.msg);
        char what[64];
        lm_err e = {0};
        ll_graph *g = ll_graph_from_hlir(h, &e);
        ck_assert_msg(g, "%s", e.msg);
        snprintf(what, sizeof what, "generated %llu, kernels", (unsigned long long)seed);
        ok += gpu_matches_reference(h, g, what);
        ll_graph_free(g);
        tl_env t;
        tl_build(&t, h, NULL);
        ll_genome gn;
        ck_assert(ll_genome_init(&gn, t.s, &e) == LM_OK);
        ck_assert_msg(ll_genome_most_fused(&gn, t.s, &e) == LM_OK, "%s", e.msg);
        g = tl_graph(t.s, &gn);
        snprintf(what, sizeof what, "generated %llu, most fused", (unsigned long long)seed);
        ok += gpu_matches_reference(h, g, what);
        ll_graph_free(g);
        ll_genome_fini(&gn);
        tl_fini(&t);
        hl_graph_free(h);
    }
    printf("gpu codegen plans: %u matched the reference\n", ok);
    ck_assert_uint_ge(ok, 20);
}
END_TEST

/* Is there a device? Asked in a child, as test_cuda_rt_gpu does (CUDA initialized in this
 * process would be unusable in the children Check forks for each test). */
static int probe_device(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        rt_ctx *ctx = NULL;
        lm_err err = {0};
        if (rt_ctx_new(NULL, &ctx, &err) != 0) {
            printf("skip: %s\n", err.msg);
            fflush(stdout);
            _exit(LM_CHECK_SKIP);
        }
        rt_nvrtc *nv = NULL;
        if (rt_nvrtc_new(NULL, &nv, &err) != 0) {
            printf("skip: %s\n", err.msg);
            fflush(stdout);
            _exit(LM_CHECK_SKIP);
        }
        const rt_device_info *d = rt_ctx_device(ctx);
        printf("device: %s, sm_%d%d\n", d->name, d->cc_major, d->cc_minor);
        fflush(stdout);
        _exit(d->cc_major * 10 + d->cc_minor == 90 ? 0 : 3);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 1;
    return WEXITSTATUS(status);
}

static Suite *program_gpu_suite(void)
{
    int probe = probe_device();
    if (probe == LM_CHECK_SKIP) exit(LM_CHECK_SKIP);
    if (probe == 3) lm_check_skip("the fixture's plan is written for sm_90; this GPU is not");
    if (probe != 0) {
        printf("device probe failed (status %d)\n", probe);
        return NULL;
    }
    Suite *s = suite_create("program_gpu");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, gpu_programs_agree_with_the_cpu_over_dim_changes);
    tcase_add_test(tc, gpu_buckets_each_agree_with_the_cpu);
    tcase_add_test(tc, gpu_device_inputs_and_unchanged_inputs);
    tcase_add_test(tc, gpu_a_faulting_kernel_is_named_by_diagnose_and_in_process);
    tcase_add_test(tc, gpu_codegen_plans_match_the_reference);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {program_gpu_suite, NULL};
