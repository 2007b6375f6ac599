/* test_mock_runtime.c: the runtime's logic against the mock driver and mock cuBLASLt:
 * opening, errors and reset, memory, kernels and the module cache, graphs (capture,
 * mirroring, update fallback), prepared matmuls and their caches, timing. */
#include "cuda_rt.h"
#include "lm_check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *k_src = "extern \"C\" __global__ void scale(float *x, float a, unsigned n) {\n"
                           "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                           "  if (i < n) x[i] *= a;\n"
                           "}\n";

typedef struct fixture {
    rt_mock *mock;
    rt_ctx *ctx;
    lm_err err;
} fixture;

static void open_with(fixture *f, const rt_mock_config *cfg)
{
    memset(f, 0, sizeof *f);
    f->mock = rt_mock_new(cfg);
    ck_assert_ptr_nonnull(f->mock);
    ck_assert_msg(rt_ctx_new_mock(f->mock, NULL, &f->ctx, &f->err) == 0, "%s", f->err.msg);
}

static void close_all(fixture *f)
{
    rt_ctx_free(f->ctx);
    ck_assert_uint_eq(rt_mock_live_allocs(f->mock), 0);
    ck_assert_uint_eq(rt_mock_live_objects(f->mock), 0);
    rt_mock_free(f->mock);
}

/* Frees what a test made on f (any may be NULL: every _free accepts NULL), then closes f
 * checking that nothing is left on the mock. */
static void close_with(fixture *f, rt_exec *e, rt_graph *g1, rt_graph *g2)
{
    rt_exec_free(e);
    rt_graph_free(g1);
    rt_graph_free(g2);
    close_all(f);
}

static rt_exec *instantiate(fixture *f, rt_graph *g)
{
    rt_exec *e = NULL;
    ck_assert_msg(rt_exec_new(g, &e, &f->err) == 0, "%s", f->err.msg);
    return e;
}

static rt_kernel *get_scale(fixture *f)
{
    rt_kernel *k = NULL;
    ck_assert_msg(rt_kernel_get(f->ctx, k_src, "scale", NULL, 0, &k, &f->err) == 0, "%s",
                  f->err.msg);
    return k;
}

/* a launch of scale over x with factor a */
typedef struct scale_launch {
    rt_dptr x;
    float a;
    unsigned n;
    const void *args[3];
    size_t sizes[3];
    rt_launch l;
} scale_launch;

static void make_launch(scale_launch *s, rt_kernel *k, rt_dptr x, float a, unsigned n,
                        unsigned grid)
{
    s->x = x, s->a = a, s->n = n;
    s->args[0] = &s->x, s->args[1] = &s->a, s->args[2] = &s->n;
    s->sizes[0] = sizeof s->x, s->sizes[1] = sizeof s->a, s->sizes[2] = sizeof s->n;
    memset(&s->l, 0, sizeof s->l);
    s->l.kernel = k;
    s->l.grid[0] = grid, s->l.grid[1] = 1, s->l.grid[2] = 1;
    s->l.block[0] = 256, s->l.block[1] = 1, s->l.block[2] = 1;
    s->l.nargs = 3;
    s->l.args = s->args;
    s->l.sizes = s->sizes;
}

/* ---- opening and errors ---------------------------------------------------------- */

START_TEST(open_without_device_says_no_cuda_device)
{
    rt_mock_config cfg;
    rt_mock_config_default(&cfg);
    cfg.device_count = 0;
    rt_mock *m = rt_mock_new(&cfg);
    rt_ctx *ctx = (rt_ctx *)1;
    lm_err err = {0};
    ck_assert_int_eq(rt_ctx_new_mock(m, NULL, &ctx, &err), RT_ENODEV);
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strncmp(err.msg, "no CUDA device: ", 16) == 0, "%s", err.msg);
    ck_assert_uint_eq(rt_mock_live_objects(m), 0);
    rt_mock_free(m);
}
END_TEST

START_TEST(open_real_driver_works_or_says_no_cuda_device)
{
    rt_ctx *ctx = NULL;
    lm_err err = {0};
    int rc = rt_ctx_new(NULL, &ctx, &err);
    if (rc == 0) {
        ck_assert_int_gt(rt_ctx_device(ctx)->cc_major, 0);
        rt_ctx_free(ctx);
    } else {
        ck_assert_int_eq(rc, RT_ENODEV);
        ck_assert_msg(strncmp(err.msg, "no CUDA device: ", 16) == 0, "%s", err.msg);
    }
}
END_TEST

START_TEST(open_reports_device_and_probes_capture)
{
    fixture f;
    open_with(&f, NULL);
    const rt_device_info *d = rt_ctx_device(f.ctx);
    ck_assert_int_eq(d->cc_major, 9);
    ck_assert_int_eq(d->sm_count, 132);
    ck_assert_int_eq(d->capture_mode, RT_CAPTURE_TO_GRAPH);
    close_all(&f);
    rt_mock_config cfg;
    rt_mock_config_default(&cfg);
    cfg.capture_to_graph = false;
    open_with(&f, &cfg);
    ck_assert_int_eq(rt_ctx_device(f.ctx)->capture_mode, RT_CAPTURE_CHILD_GRAPH);
    close_all(&f);
}
END_TEST

START_TEST(out_of_memory_message_names_call_sizes_and_fix)
{
    fixture f;
    open_with(&f, NULL);
    rt_buf b = {0};
    bool moved = true;
    ck_assert_int_eq(rt_buf_reserve(f.ctx, &b, (size_t)200 << 30, &moved, &f.err), RT_EDRIVER);
    ck_assert_msg(strstr(f.err.msg, "cuMemAlloc(bytes=") != NULL, "%s", f.err.msg);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "CUDA_ERROR_OUT_OF_MEMORY"));
    ck_assert_ptr_nonnull(strstr(f.err.msg, "214748364800")); /* the size asked */
    ck_assert_ptr_nonnull(strstr(f.err.msg, "fix:"));
    ck_assert_ptr_nonnull(strstr(f.err.msg, "[cuda_rt/rt_mem.c:"));
    ck_assert(!moved);
    ck_assert_uint_eq(b.ptr, 0); /* unchanged on failure */
    close_all(&f);
}
END_TEST

START_TEST(illegal_address_poisons_until_reset)
{
    fixture f;
    open_with(&f, NULL);
    rt_buf b = {0};
    ck_assert_int_eq(rt_buf_reserve(f.ctx, &b, 1024, NULL, &f.err), 0);
    rt_mock_fail(f.mock, "cuStreamSynchronize", 0, 700 /* CUDA_ERROR_ILLEGAL_ADDRESS */);
    ck_assert_int_eq(rt_ctx_sync(f.ctx, &f.err), RT_EFAULT);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    ck_assert_ptr_nonnull(strstr(f.err.msg, "rt_ctx_reset"));
    lm_err_clear(&f.err);
    rt_buf c = {0};
    ck_assert_int_eq(rt_buf_reserve(f.ctx, &c, 1024, NULL, &f.err), RT_EFAULT);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "poisoned"));
    lm_err_clear(&f.err);
    ck_assert_msg(rt_ctx_reset(f.ctx, &f.err) == 0, "%s", f.err.msg);
    ck_assert_uint_eq(rt_ctx_generation(f.ctx), 1);
    /* the old buffer is stale; a new one works */
    ck_assert_int_eq(rt_buf_reserve(f.ctx, &b, 4096, NULL, &f.err), RT_ESTALE);
    lm_err_clear(&f.err);
    rt_buf_release(f.ctx, &b);
    ck_assert_int_eq(rt_buf_reserve(f.ctx, &c, 1024, NULL, &f.err), 0);
    ck_assert_int_eq(rt_ctx_sync(f.ctx, &f.err), 0);
    rt_buf_release(f.ctx, &c);
    close_all(&f);
}
END_TEST

/* Heap objects come and go in pairs, _new and _free, and every _free accepts NULL (a
 * crash here fails the test); a record in caller storage is finished by _fini. */
START_TEST(every_free_accepts_null)
{
    rt_mock_free(NULL);
    rt_ctx_free(NULL);
    rt_graph_free(NULL);
    rt_exec_free(NULL);
    rt_blas_cache_free(NULL);
    rt_nvrtc_free(NULL);
    rt_cubin_fini(NULL);
    rt_cubin c = {0};
    rt_cubin_fini(&c);
    ck_assert_ptr_null(c.data);
    ck_assert_ptr_null(c.log);
}
END_TEST

/* ---- memory ------------------------------------------------------------------------- */

START_TEST(buffer_keeps_its_address_while_sizes_fit)
{
    fixture f;
    open_with(&f, NULL);
    rt_buf b = {0};
    bool moved = false;
    ck_assert_int_eq(rt_buf_reserve(f.ctx, &b, 1000, &moved, &f.err), 0);
    ck_assert(moved);
    rt_dptr p = b.ptr;
    ck_assert_uint_eq(p % 256, 0);
    ck_assert_int_eq(rt_buf_reserve(f.ctx, &b, 1 << 20, &moved, &f.err), 0);
    ck_assert(!moved);
    ck_assert_uint_eq(b.ptr, p);
    ck_assert_int_eq(rt_buf_reserve(f.ctx, &b, 10 << 20, &moved, &f.err), 0);
    ck_assert(moved);
    ck_assert_uint_eq(rt_mock_live_allocs(f.mock), 1); /* the old one was freed */
    rt_buf_release(f.ctx, &b);
    close_all(&f);
}
END_TEST

/* ---- kernels -------------------------------------------------------------------------- */

START_TEST(module_cache_compiles_once_per_source_and_options)
{
    fixture f;
    open_with(&f, NULL);
    rt_kernel *a = get_scale(&f), *b = get_scale(&f);
    ck_assert_ptr_eq(a, b);
    uint64_t hits, misses;
    rt_kernel_cache_stats(f.ctx, &hits, &misses);
    ck_assert_uint_eq(hits, 1);
    ck_assert_uint_eq(misses, 1);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuModuleLoadData", 0), 1);
    const char *opts[] = {"-DFOO=1"};
    rt_kernel *c = NULL;
    ck_assert_int_eq(rt_kernel_get(f.ctx, k_src, "scale", opts, 1, &c, &f.err), 0);
    ck_assert_ptr_ne(a, c);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuModuleLoadData", 0), 2);
    close_all(&f);
}
END_TEST

START_TEST(module_compiled_apart_is_loaded_into_the_cache_once)
{
    fixture f;
    open_with(&f, NULL);
    rt_nvrtc *nv = NULL;
    ck_assert_msg(rt_nvrtc_new(NULL, &nv, &f.err) == 0, "%s", f.err.msg);
    rt_cubin bin;
    ck_assert_msg(rt_nvrtc_compile(nv, k_src, "scale", 90, NULL, 0, &bin, &f.err) == 0, "%s",
                  f.err.msg);
    rt_kernel *a = NULL, *b = NULL, *c = NULL;
    ck_assert_msg(rt_kernel_load(f.ctx, k_src, "scale", NULL, 0, &bin, &a, &f.err) == 0, "%s",
                  f.err.msg);
    /* the same key again, by load and by get: hits, nothing compiled or loaded again */
    ck_assert_int_eq(rt_kernel_load(f.ctx, k_src, "scale", NULL, 0, NULL, &b, &f.err), 0);
    ck_assert_int_eq(rt_kernel_get(f.ctx, k_src, "scale", NULL, 0, &c, &f.err), 0);
    ck_assert_ptr_eq(a, b);
    ck_assert_ptr_eq(a, c);
    uint64_t hits, misses;
    rt_kernel_cache_stats(f.ctx, &hits, &misses);
    ck_assert_uint_eq(hits, 2);
    ck_assert_uint_eq(misses, 1);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuModuleLoadData", 0), 1);
    /* another key with no image is refused */
    const char *opts[] = {"-DFOO=1"};
    ck_assert_int_eq(rt_kernel_load(f.ctx, k_src, "scale", opts, 1, NULL, &b, &f.err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "no CUBIN"));
    rt_cubin_fini(&bin);
    rt_nvrtc_free(nv);
    close_all(&f);
}
END_TEST

START_TEST(launch_with_zero_grid_is_rejected)
{
    fixture f;
    open_with(&f, NULL);
    scale_launch s;
    make_launch(&s, get_scale(&f), 0x1000, 2.0f, 10, 0);
    ck_assert_int_eq(rt_launch_kernel(f.ctx, &s.l, &f.err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "grid 0x1x1"));
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuLaunchKernel", 0), 0);
    close_all(&f);
}
END_TEST

/* More than 48 KiB of dynamic shared memory: the kernel's limit is raised (once per size)
 * before a direct launch, a kernel node and a node update; the mock, like the device,
 * refuses a launch past the limit, so without the attribute each of these would fail. */
START_TEST(large_dynamic_shared_memory_raises_the_kernel_limit_first)
{
    fixture f;
    open_with(&f, NULL);
    scale_launch s;
    make_launch(&s, get_scale(&f), 0x1000, 2.0f, 10, 1);
    s.l.shared_bytes = RT_SHARED_DEFAULT; /* the default: no attribute */
    ck_assert_msg(rt_launch_kernel(f.ctx, &s.l, &f.err) == 0, "%s", f.err.msg);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuFuncSetAttribute", 0), 0);
    s.l.shared_bytes = 96u << 10;
    ck_assert_msg(rt_launch_kernel(f.ctx, &s.l, &f.err) == 0, "%s", f.err.msg);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuFuncSetAttribute", 0), 1);
    ck_assert_msg(rt_launch_kernel(f.ctx, &s.l, &f.err) == 0, "%s", f.err.msg);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuFuncSetAttribute", 0), 1); /* once */
    rt_graph *g;
    ck_assert_int_eq(rt_graph_new(f.ctx, &g, &f.err), 0);
    s.l.shared_bytes = 128u << 10; /* more: raised again, before the node is added */
    uint32_t n0;
    ck_assert_msg(rt_graph_add_kernel(g, &s.l, NULL, 0, &n0, &f.err) == 0, "%s", f.err.msg);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuFuncSetAttribute", 0), 2);
    rt_exec *e = instantiate(&f, g);
    s.l.shared_bytes = 200u << 10;
    ck_assert_msg(rt_exec_set_kernel(e, n0, &s.l, &f.err) == 0, "%s", f.err.msg);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuFuncSetAttribute", 0), 3);
    /* past what the device gives a block: the error names the call and the kernel */
    s.l.shared_bytes = 240u << 10;
    ck_assert_int_ne(rt_launch_kernel(f.ctx, &s.l, &f.err), 0);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "MAX_DYNAMIC_SHARED_SIZE_BYTES"));
    ck_assert_ptr_nonnull(strstr(f.err.msg, "scale"));
    close_with(&f, e, g, NULL);
}
END_TEST

/* ---- graphs ---------------------------------------------------------------------------- */

START_TEST(set_kernel_updates_exec_and_mirrors_source)
{
    fixture f;
    open_with(&f, NULL);
    rt_graph *g;
    ck_assert_int_eq(rt_graph_new(f.ctx, &g, &f.err), 0);
    scale_launch s;
    make_launch(&s, get_scale(&f), 0x1000, 2.0f, 100, 1);
    uint32_t n0, n1;
    ck_assert_int_eq(rt_graph_add_kernel(g, &s.l, NULL, 0, &n0, &f.err), 0);
    ck_assert_int_eq(rt_graph_add_kernel(g, &s.l, &n0, 1, &n1, &f.err), 0);
    rt_exec *e = instantiate(&f, g);
    uint32_t loads = rt_mock_count_since(f.mock, "cuGraphInstantiateWithFlags", 0);
    scale_launch t;
    make_launch(&t, s.l.kernel, 0x2000, 3.0f, 1000, 4);
    ck_assert_msg(rt_exec_set_kernel(e, n1, &t.l, &f.err) == 0, "%s", f.err.msg);
    ck_assert_uint_eq(rt_mock_kernel_grid_x(f.mock, g, e, n1), 4);
    ck_assert_uint_eq(rt_mock_kernel_grid_x(f.mock, g, NULL, n1), 4); /* mirrored */
    ck_assert_uint_eq(rt_mock_kernel_grid_x(f.mock, g, e, n0), 1);    /* untouched */
    rt_dptr x;
    float a;
    ck_assert_int_eq(rt_graph_kernel_arg(g, n1, 0, &x, sizeof x, &f.err), 0);
    ck_assert_int_eq(rt_graph_kernel_arg(g, n1, 1, &a, sizeof a, &f.err), 0);
    ck_assert_uint_eq(x, 0x2000);
    ck_assert(a == 3.0f);
    /* in place: no new instantiation */
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuGraphInstantiateWithFlags", 0), loads);
    close_with(&f, e, g, NULL);
}
END_TEST

START_TEST(set_kernel_failure_leaves_both_graphs_as_they_were)
{
    fixture f;
    open_with(&f, NULL);
    rt_graph *g;
    ck_assert_int_eq(rt_graph_new(f.ctx, &g, &f.err), 0);
    scale_launch s, t;
    make_launch(&s, get_scale(&f), 0x1000, 2.0f, 100, 1);
    uint32_t n0;
    ck_assert_int_eq(rt_graph_add_kernel(g, &s.l, NULL, 0, &n0, &f.err), 0);
    rt_exec *e = instantiate(&f, g);
    make_launch(&t, s.l.kernel, 0x2000, 3.0f, 1000, 4);
    rt_mock_fail(f.mock, "cuGraphKernelNodeSetParams", 0, 1 /* CUDA_ERROR_INVALID_VALUE */);
    ck_assert_int_eq(rt_exec_set_kernel(e, n0, &t.l, &f.err), RT_EDRIVER);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "cuGraphKernelNodeSetParams"));
    ck_assert_uint_eq(rt_mock_kernel_grid_x(f.mock, g, e, n0), 1);
    ck_assert_uint_eq(rt_mock_kernel_grid_x(f.mock, g, NULL, n0), 1);
    rt_dptr x;
    lm_err err2 = {0};
    ck_assert_int_eq(rt_graph_kernel_arg(g, n0, 0, &x, sizeof x, &err2), 0);
    ck_assert_uint_eq(x, 0x1000);
    close_with(&f, e, g, NULL);
}
END_TEST

static void build_chain(fixture *f, rt_graph **g, unsigned len, unsigned grid)
{
    ck_assert_int_eq(rt_graph_new(f->ctx, g, &f->err), 0);
    scale_launch s;
    make_launch(&s, get_scale(f), 0x1000, 2.0f, 100, grid);
    uint32_t prev = 0;
    for (unsigned i = 0; i < len; i++) {
        uint32_t id;
        ck_assert_int_eq(rt_graph_add_kernel(*g, &s.l, i ? &prev : NULL, i ? 1 : 0, &id, &f->err),
                         0);
        prev = id;
    }
}

START_TEST(exec_update_in_place_when_topology_is_the_same)
{
    fixture f;
    open_with(&f, NULL);
    rt_graph *g1, *g2;
    build_chain(&f, &g1, 3, 1);
    build_chain(&f, &g2, 3, 7);
    rt_exec *e = instantiate(&f, g1);
    rt_update_kind how;
    ck_assert_int_eq(rt_exec_update(e, g2, &how, &f.err), 0);
    ck_assert_int_eq(how, RT_UPDATE_IN_PLACE);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuGraphInstantiateWithFlags", 0), 1);
    ck_assert_uint_eq(rt_mock_kernel_grid_x(f.mock, g2, e, 2), 7);
    close_with(&f, e, g1, g2);
}
END_TEST

START_TEST(exec_update_falls_back_to_reinstantiation_when_refused)
{
    fixture f;
    open_with(&f, NULL);
    rt_graph *g1, *g2;
    build_chain(&f, &g1, 3, 1);
    build_chain(&f, &g2, 5, 2); /* topology changed */
    rt_exec *e = instantiate(&f, g1);
    uint32_t mark = rt_mock_calls(f.mock);
    rt_update_kind how;
    ck_assert_msg(rt_exec_update(e, g2, &how, &f.err) == 0, "%s", f.err.msg);
    ck_assert_int_eq(how, RT_UPDATE_REINSTANTIATED);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuGraphExecUpdate", mark), 1);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuGraphInstantiateWithFlags", mark), 1);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuGraphExecDestroy", mark), 1);
    ck_assert_uint_eq(rt_mock_kernel_grid_x(f.mock, g2, e, 4), 2);
    ck_assert_int_eq(rt_exec_launch(e, &f.err), 0);
    close_with(&f, e, g1, g2);
}
END_TEST

/* ---- matmuls ---------------------------------------------------------------------------- */

typedef struct mm_job {
    rt_matmul *mm;
    rt_matmul_args args;
    int times;
} mm_job;

static int enqueue_job(rt_ctx *ctx, void *user, lm_err *err)
{
    mm_job *j = user;
    for (int i = 0; i < j->times; i++)
        if (rt_matmul_enqueue(ctx, j->mm, &j->args, err)) return err->code;
    return 0;
}

static void prepare_job(fixture *f, mm_job *j, rt_epilogue epi)
{
    rt_matmul_spec s;
    rt_matmul_spec_init(&s, 256, 128, 64, RT_BF16);
    s.epilogue = epi;
    memset(j, 0, sizeof *j);
    ck_assert_msg(rt_matmul_prepare(f->ctx, &s, &j->mm, &f->err) == 0, "%s", f->err.msg);
    j->args = (rt_matmul_args){.a = 0x10000,
                               .b = 0x20000,
                               .d = 0x30000,
                               .bias = 0x40000,
                               .workspace = 0x50000,
                               .workspace_bytes = rt_matmul_workspace(j->mm)};
    j->times = 1;
}

START_TEST(prepare_reuses_matmul_and_heuristic_for_equal_spec)
{
    fixture f;
    open_with(&f, NULL);
    mm_job a, b;
    prepare_job(&f, &a, RT_EPI_NONE);
    prepare_job(&f, &b, RT_EPI_NONE);
    ck_assert_ptr_eq(a.mm, b.mm);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cublasLtMatmulAlgoGetHeuristic", 0), 1);
    ck_assert_uint_eq(rt_matmul_workspace(a.mm), 4 << 20);
    mm_job c;
    prepare_job(&f, &c, RT_EPI_RELU);
    ck_assert_ptr_ne(a.mm, c.mm);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cublasLtMatmulAlgoGetHeuristic", 0), 2);
    rt_blas_stats st;
    rt_blas_stats_get(f.ctx, &st);
    ck_assert_uint_eq(st.prepared_hits, 1);
    ck_assert_uint_eq(st.prepared_misses, 2);
    ck_assert_uint_eq(st.heuristic_calls, 2);
    close_all(&f);
}
END_TEST

START_TEST(heuristic_cache_is_keyed_by_library_version)
{
    rt_blas_cache *cache = rt_blas_cache_new();
    rt_options opt;
    rt_options_default(&opt);
    opt.blas_cache = cache;
    rt_mock_config cfg;
    rt_mock_config_default(&cfg);
    size_t versions[3] = {130100, 130100, 130200};
    uint32_t expect_calls[3] = {1, 0, 1};
    for (int i = 0; i < 3; i++) {
        cfg.blas_version = versions[i];
        rt_mock *m = rt_mock_new(&cfg);
        rt_ctx *ctx;
        lm_err err = {0};
        ck_assert_int_eq(rt_ctx_new_mock(m, &opt, &ctx, &err), 0);
        rt_matmul_spec s;
        rt_matmul_spec_init(&s, 512, 512, 512, RT_F16);
        rt_matmul *mm;
        ck_assert_int_eq(rt_matmul_prepare(ctx, &s, &mm, &err), 0);
        ck_assert_msg(rt_mock_count_since(m, "cublasLtMatmulAlgoGetHeuristic", 0) ==
                          expect_calls[i],
                      "context %d", i);
        rt_ctx_free(ctx);
        rt_mock_free(m);
    }
    rt_blas_cache_free(cache);
}
END_TEST

START_TEST(heuristic_cache_survives_reset_but_descriptors_are_rebuilt)
{
    fixture f;
    open_with(&f, NULL);
    mm_job a;
    prepare_job(&f, &a, RT_EPI_BIAS);
    ck_assert_int_eq(rt_ctx_reset(f.ctx, &f.err), 0); /* a.mm is gone with the context */
    uint32_t mark = rt_mock_calls(f.mock);
    mm_job b;
    prepare_job(&f, &b, RT_EPI_BIAS);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cublasLtMatmulAlgoGetHeuristic", mark), 0);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cublasLtMatmulDescCreate", mark), 1);
    ck_assert_int_eq(rt_matmul_enqueue(f.ctx, b.mm, &b.args, &f.err), 0);
    close_all(&f);
}
END_TEST

START_TEST(tune_times_the_offers_and_keeps_the_prepared_choice_when_no_faster)
{
    fixture f;
    open_with(&f, NULL);
    mm_job j;
    prepare_job(&f, &j, RT_EPI_NONE);
    uint32_t mark = rt_mock_calls(f.mock);
    rt_matmul_tuning t;
    ck_assert_msg(rt_matmul_tune(f.ctx, j.mm, &j.args, 4, &t, &f.err) == 0, "%s", f.err.msg);
    ck_assert_uint_eq(t.offered, 1); /* the mock offers one algorithm */
    ck_assert_uint_eq(t.tried, 1);
    ck_assert_int_eq(t.chosen, -1); /* equal time: prepare's choice stays */
    /* two rounds over prepare's algorithm and the offer: 2 warm-up + 3 x 20 timed each */
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cublasLtMatmul", mark), 2 * 2 * 62);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cublasLtMatmulAlgoGetHeuristic", mark), 1);
    ck_assert_int_eq(rt_matmul_tune(f.ctx, j.mm, &j.args, 0, &t, &f.err), RT_EARG);
    close_all(&f);
}
END_TEST

START_TEST(blas_info_names_the_library_and_version)
{
    rt_mock_config cfg;
    rt_mock_config_default(&cfg);
    cfg.blas_version = 120905;
    fixture f;
    open_with(&f, &cfg);
    char path[64];
    size_t version = 0;
    ck_assert_int_eq(rt_blas_info(f.ctx, path, sizeof path, &version, &f.err), 0);
    ck_assert_str_eq(path, "mock");
    ck_assert_uint_eq(version, 120905);
    close_all(&f);
}
END_TEST

/* DESIGN: exactly one place in the code launches graphs. Counted in every source of the
 * module but the two driver tables (rt_drv_*.c), which only forward the call. */
START_TEST(only_rt_exec_launch_launches_graphs)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cuda_rt", LUMINAL_SOURCE_DIR);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot list %s", dir);
    int calls = 0, files = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 3 || strcmp(de->d_name + len - 2, ".c") != 0 ||
            strncmp(de->d_name, "rt_drv_", 7) == 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *fp = fopen(path, "r");
        ck_assert_msg(fp != NULL, "cannot read %s", path);
        files++;
        char line[1024];
        while (fgets(line, sizeof line, fp))
            if (strstr(line, "graph_launch(")) {
                calls++;
                ck_assert_msg(strcmp(de->d_name, "rt_graph.c") == 0, "a graph launch in %s",
                              de->d_name);
            }
        fclose(fp);
    }
    closedir(d);
    ck_assert_int_ge(files, 10);
    ck_assert_int_eq(calls, 1);
}
END_TEST

START_TEST(enqueue_never_allocates_copies_or_synchronizes)
{
    fixture f;
    open_with(&f, NULL);
    mm_job j;
    prepare_job(&f, &j, RT_EPI_BIAS_GELU);
    uint32_t mark = rt_mock_calls(f.mock);
    uint64_t allocs = rt_debug_host_allocs();
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(rt_matmul_enqueue(f.ctx, j.mm, &j.args, &f.err), 0);
    ck_assert_uint_eq(rt_debug_host_allocs(), allocs);
    const char *forbidden[] = {"cuMemAlloc",
                               "cuMemAllocHost",
                               "cuMemFree",
                               "cuMemcpyHtoDAsync",
                               "cuMemcpyDtoHAsync",
                               "cuMemcpyDtoDAsync",
                               "cuMemsetD8Async",
                               "cuStreamSynchronize",
                               "cuCtxSynchronize",
                               "cuEventSynchronize",
                               "cublasLtMatmulAlgoGetHeuristic",
                               "cublasLtMatmulDescCreate",
                               "cublasLtMatrixLayoutCreate"};
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0]; i++)
        ck_assert_msg(rt_mock_count_since(f.mock, forbidden[i], mark) == 0, "%s inside enqueue",
                      forbidden[i]);
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cublasLtMatmul", mark), 5);
    close_all(&f);
}
END_TEST

START_TEST(enqueue_rejects_short_workspace_and_missing_bias)
{
    fixture f;
    open_with(&f, NULL);
    mm_job j;
    prepare_job(&f, &j, RT_EPI_BIAS);
    j.args.workspace_bytes = 100;
    ck_assert_int_eq(rt_matmul_enqueue(f.ctx, j.mm, &j.args, &f.err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "4194304 needed"));
    lm_err_clear(&f.err);
    j.args.workspace_bytes = 4 << 20;
    j.args.bias = 0;
    ck_assert_int_eq(rt_matmul_enqueue(f.ctx, j.mm, &j.args, &f.err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "bias"));
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cublasLtMatmul", 0), 0);
    close_all(&f);
}
END_TEST

static void capture_ends_on_failure(bool to_graph)
{
    rt_mock_config cfg;
    rt_mock_config_default(&cfg);
    cfg.capture_to_graph = to_graph;
    fixture f;
    open_with(&f, &cfg);
    mm_job j;
    prepare_job(&f, &j, RT_EPI_NONE);
    rt_graph *g;
    ck_assert_int_eq(rt_graph_new(f.ctx, &g, &f.err), 0);
    uint32_t mark = rt_mock_calls(f.mock);
    rt_mock_fail(f.mock, "cublasLtMatmul", 0, 13 /* CUBLAS_STATUS_EXECUTION_FAILED */);
    uint32_t node;
    ck_assert_int_eq(rt_graph_add_captured(g, enqueue_job, &j, NULL, 0, &node, &f.err), RT_EBLAS);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "cublasLtMatmul failed"));
    ck_assert_ptr_nonnull(strstr(f.err.msg, "CUBLAS_STATUS_EXECUTION_FAILED"));
    ck_assert_ptr_nonnull(strstr(f.err.msg, "m=256 n=128 k=64"));
    ck_assert(!rt_mock_capturing(f.mock));
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuStreamEndCapture", mark), 1);
    ck_assert_uint_eq(rt_graph_node_count(g), 0);
    /* nothing was captured, so the graph stays usable */
    lm_err_clear(&f.err);
    ck_assert_msg(rt_graph_add_captured(g, enqueue_job, &j, NULL, 0, &node, &f.err) == 0, "%s",
                  f.err.msg);
    ck_assert_uint_eq(rt_graph_node_count(g), 1);
    /* a failure after work was captured: ended too; in to-graph mode the graph is broken */
    j.times = 2;
    rt_mock_fail(f.mock, "cublasLtMatmul", 1, 13);
    mark = rt_mock_calls(f.mock);
    ck_assert_int_eq(rt_graph_add_captured(g, enqueue_job, &j, &node, 1, NULL, &f.err), RT_EBLAS);
    ck_assert(!rt_mock_capturing(f.mock));
    ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuStreamEndCapture", mark), 1);
    lm_err_clear(&f.err);
    rt_exec *e = NULL;
    int rc = rt_exec_new(g, &e, &f.err);
    if (to_graph) {
        ck_assert_int_eq(rc, RT_EARG);
        ck_assert_ptr_nonnull(strstr(f.err.msg, "rebuild"));
    } else {
        ck_assert_int_eq(rc, 0);
        rt_exec_free(e);
    }
    rt_graph_free(g);
    close_all(&f);
}

START_TEST(capture_is_ended_when_enqueue_fails_into_graph)
{
    capture_ends_on_failure(true);
}
END_TEST
START_TEST(capture_is_ended_when_enqueue_fails_child_graph)
{
    capture_ends_on_failure(false);
}
END_TEST

START_TEST(captured_matmul_becomes_a_node_in_either_mode)
{
    for (int mode = 0; mode < 2; mode++) {
        rt_mock_config cfg;
        rt_mock_config_default(&cfg);
        cfg.capture_to_graph = mode == 0;
        fixture f;
        open_with(&f, &cfg);
        mm_job j;
        prepare_job(&f, &j, RT_EPI_NONE);
        rt_graph *g;
        ck_assert_int_eq(rt_graph_new(f.ctx, &g, &f.err), 0);
        scale_launch s;
        make_launch(&s, get_scale(&f), 0x1000, 2.0f, 100, 1);
        uint32_t k0, mm, k1;
        ck_assert_int_eq(rt_graph_add_kernel(g, &s.l, NULL, 0, &k0, &f.err), 0);
        ck_assert_int_eq(rt_graph_add_captured(g, enqueue_job, &j, &k0, 1, &mm, &f.err), 0);
        ck_assert_int_eq(rt_graph_add_kernel(g, &s.l, &mm, 1, &k1, &f.err), 0);
        ck_assert_uint_eq(rt_graph_node_count(g), 3);
        ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuGraphAddChildGraphNode", 0), mode == 1);
        rt_exec *e = instantiate(&f, g);
        ck_assert_int_eq(rt_exec_launch(e, &f.err), 0);
        close_with(&f, e, g, NULL);
    }
}
END_TEST

START_TEST(stale_graph_is_refused_after_reset)
{
    fixture f;
    open_with(&f, NULL);
    rt_graph *g;
    ck_assert_int_eq(rt_graph_new(f.ctx, &g, &f.err), 0);
    ck_assert_int_eq(rt_ctx_reset(f.ctx, &f.err), 0);
    rt_exec *e;
    ck_assert_int_eq(rt_exec_new(g, &e, &f.err), RT_ESTALE);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "before rt_ctx_reset"));
    rt_graph_free(g);
    close_all(&f);
}
END_TEST

/* ---- timing ---------------------------------------------------------------------------- */

START_TEST(timing_launches_every_time_and_reports_median)
{
    fixture f;
    open_with(&f, NULL);
    rt_graph *g;
    build_chain(&f, &g, 2, 1);
    rt_exec *e = instantiate(&f, g);
    rt_time_opts o = {.warmup = 2, .trials = 5, .reps = 3, .timeout_ms = 1000};
    for (int round = 0; round < 2; round++) {
        uint32_t mark = rt_mock_calls(f.mock);
        rt_timing t;
        ck_assert_msg(rt_exec_time(e, &o, &t, &f.err) == 0, "%s", f.err.msg);
        ck_assert_uint_eq(rt_mock_count_since(f.mock, "cuGraphLaunch", mark), 2 + 5 * 3);
        ck_assert_double_eq_tol(t.median_ms, 0.01, 1e-6); /* mock: 0.01 ms per launch */
        ck_assert_uint_eq(t.trials, 5);
    }
    rt_time_opts bad = {.warmup = 0, .trials = 0, .reps = 1, .timeout_ms = 1};
    rt_timing t;
    ck_assert_int_eq(rt_exec_time(e, &bad, &t, &f.err), RT_EARG);
    close_with(&f, e, g, NULL);
}
END_TEST

START_TEST(timing_failure_reports_the_event_call)
{
    fixture f;
    open_with(&f, NULL);
    rt_graph *g;
    build_chain(&f, &g, 1, 1);
    rt_exec *e = instantiate(&f, g);
    rt_mock_fail(f.mock, "cuEventElapsedTime", 2, 1);
    rt_timing t;
    ck_assert_int_eq(rt_exec_time(e, NULL, &t, &f.err), RT_EDRIVER);
    ck_assert_ptr_nonnull(strstr(f.err.msg, "cuEventElapsedTime(trial 2)"));
    close_with(&f, e, g, NULL);
}
END_TEST

static Suite *cuda_rt_mock_suite(void)
{
    Suite *s = suite_create("cuda_rt_mock");
    TCase *tc = tcase_create("mock");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, open_without_device_says_no_cuda_device);
    tcase_add_test(tc, large_dynamic_shared_memory_raises_the_kernel_limit_first);
    tcase_add_test(tc, open_real_driver_works_or_says_no_cuda_device);
    tcase_add_test(tc, open_reports_device_and_probes_capture);
    tcase_add_test(tc, out_of_memory_message_names_call_sizes_and_fix);
    tcase_add_test(tc, illegal_address_poisons_until_reset);
    tcase_add_test(tc, every_free_accepts_null);
    tcase_add_test(tc, buffer_keeps_its_address_while_sizes_fit);
    tcase_add_test(tc, module_cache_compiles_once_per_source_and_options);
    tcase_add_test(tc, module_compiled_apart_is_loaded_into_the_cache_once);
    tcase_add_test(tc, launch_with_zero_grid_is_rejected);
    tcase_add_test(tc, set_kernel_updates_exec_and_mirrors_source);
    tcase_add_test(tc, set_kernel_failure_leaves_both_graphs_as_they_were);
    tcase_add_test(tc, exec_update_in_place_when_topology_is_the_same);
    tcase_add_test(tc, exec_update_falls_back_to_reinstantiation_when_refused);
    tcase_add_test(tc, prepare_reuses_matmul_and_heuristic_for_equal_spec);
    tcase_add_test(tc, heuristic_cache_is_keyed_by_library_version);
    tcase_add_test(tc, heuristic_cache_survives_reset_but_descriptors_are_rebuilt);
    tcase_add_test(tc, tune_times_the_offers_and_keeps_the_prepared_choice_when_no_faster);
    tcase_add_test(tc, blas_info_names_the_library_and_version);
    tcase_add_test(tc, only_rt_exec_launch_launches_graphs);
    tcase_add_test(tc, enqueue_never_allocates_copies_or_synchronizes);
    tcase_add_test(tc, enqueue_rejects_short_workspace_and_missing_bias);
    tcase_add_test(tc, capture_is_ended_when_enqueue_fails_into_graph);
    tcase_add_test(tc, capture_is_ended_when_enqueue_fails_child_graph);
    tcase_add_test(tc, captured_matmul_becomes_a_node_in_either_mode);
    tcase_add_test(tc, stale_graph_is_refused_after_reset);
    tcase_add_test(tc, timing_launches_every_time_and_reports_median);
    tcase_add_test(tc, timing_failure_reports_the_event_call);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {cuda_rt_mock_suite, NULL};
