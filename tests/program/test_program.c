/* test_program.c - a compiled program through the whole pipeline on cuda_rt's mock driver
 * (real NVRTC): compiling, the arena, the graph (order, arguments, counts, one graph),
 * dims updating kernel nodes in place, library calls re-prepared, buckets, the input and
 * replay skips, device inputs, faults and out of memory, and the CPU backend. */
#include "pf.h"
#include "pf_dir.h"
#include "pg_gpu.h"
#include "pg_int.h"

#include <unistd.h>

/* ---- helpers ---- */

typedef struct fx {
    pf f;
    rt_mock *mock;
    pg_program *p;
    lm_err err;
} fx;

static pg_program *open_prog(fx *x, bool blas, const pg_options *extra, rt_mock_config *cfg)
{
    memset(x, 0, sizeof *x);
    pf_make(&x->f, blas);
    x->mock = rt_mock_new(cfg);
    ck_assert_ptr_nonnull(x->mock);
    pg_options o;
    if (extra)
        o = *extra;
    else
        pg_options_default(&o);
    o.mock = x->mock;
    o.backend = PG_BACKEND_GPU;
    if (!o.name) o.name = "fx";
    x->p = pg_program_new(&x->f.plan, x->f.g, &o, &x->err);
    return x->p;
}

static void close_prog(fx *x)
{
    pg_program_free(x->p);
    ck_assert_uint_eq(rt_mock_live_allocs(x->mock), 0);
    ck_assert_uint_eq(rt_mock_live_objects(x->mock), 0);
    rt_mock_free(x->mock);
    pf_free(&x->f);
}

static void run_ok(fx *x)
{
    ck_assert_msg(pg_program_run(x->p, &x->err) == 0, "%s", x->err.msg);
}

static void set_n(fx *x, int64_t n, pf_in *in)
{
    ck_assert_msg(pg_program_set_dim(x->p, "n", n, &x->err) == 0, "%s", x->err.msg);
    pf_inputs_free(in);
    pf_inputs(in, n, 3);
    pf_set(x->p, in);
}

static pg_counters counters(const fx *x)
{
    pg_counters c;
    pg_program_counters(x->p, &c);
    return c;
}

/* ---- compiling, the arena, the graph ---- */

START_TEST(compiles_every_kernel_once_and_builds_one_graph_in_step_order)
{
    fx x;
    ck_assert_msg(open_prog(&x, true, NULL, NULL), "%s", x.err.msg);
    ck_assert_int_eq(pg_program_backend(x.p), PG_BACKEND_GPU);
    ck_assert_ptr_nonnull(strstr(pg_program_backend_note(x.p), "GPU: Mock H200"));
    pg_counters c = counters(&x);
    ck_assert_uint_eq(c.kernels_compiled, 3); /* three distinct sources */
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuModuleLoadData", 0), 3);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    uint32_t before = rt_mock_calls(x.mock);
    run_ok(&x);
    /* compiled before the run, nothing during it */
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuModuleLoadData", before), 0);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphLaunch", before), 1);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphInstantiateWithFlags", before), 1);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphAddKernelNode", before), 3);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cublasLtMatmul", before), 1); /* captured */
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuMemcpyHtoDAsync", before), 3);
    c = counters(&x);
    ck_assert_uint_eq(c.graphs_built, 1);
    ck_assert_uint_eq(c.instantiations, 1);
    ck_assert_uint_eq(c.blas_prepares, 1);
    ck_assert_uint_eq(c.replays, 1);
    pg_gpu *g = x.p->gpu;
    pg_variant *v = &g->var[0];
    /* one graph, one node per step, in step order */
    ck_assert_uint_eq(rt_graph_node_count(v->graph), 4);
    for (uint32_t s = 0; s < 4; s++)
        ck_assert_uint_eq(v->node[s], s);
    /* every step waits on the one before (a chain) and on nothing else */
    ck_assert_uint_eq(v->ndeps[0], 0);
    for (uint32_t s = 1; s < 4; s++) {
        ck_assert_uint_eq(v->ndeps[s], 1);
        ck_assert_uint_eq(v->deps[s][0], s - 1);
    }
    /* kernel arguments: buffer addresses and the dim's value */
    uint64_t a;
    lm_err e = {0};
    ck_assert_int_eq(rt_graph_kernel_arg(v->graph, 0, 0, &a, 8, &e), 0);
    ck_assert_uint_eq(a, g->in_buf[0].ptr);
    ck_assert_int_eq(rt_graph_kernel_arg(v->graph, 0, 1, &a, 8, &e), 0);
    ck_assert_uint_eq(a, g->in_buf[1].ptr);
    ck_assert_int_eq(rt_graph_kernel_arg(v->graph, 0, 2, &a, 8, &e), 0);
    ck_assert_uint_eq(a, g->arena.ptr + v->aoff[v->buf_abuf[PF_A]]);
    ck_assert_int_eq(rt_graph_kernel_arg(v->graph, 0, 3, &a, 8, &e), 0);
    ck_assert_uint_eq(a, 8); /* n */
    ck_assert_int_eq(rt_graph_kernel_arg(v->graph, 3, 2, &a, 8, &e), 0);
    ck_assert_uint_eq(a, pg__gpu_buffer_addr(x.p, 0, PF_OUT));
    ck_assert_uint_ne(a, 0);
    /* the library call's workspace lies after the data, inside the arena */
    ck_assert_uint_ge(v->ws_base, v->data_peak);
    ck_assert_uint_eq(v->ws_planned[2], 4u << 20); /* what the mock's heuristic asks */
    ck_assert_uint_ge(g->arena.capacity, v->total);
    /* a second run: one more launch, nothing built */
    pg_program_set_replay_skip(x.p, false);
    before = rt_mock_calls(x.mock);
    run_ok(&x);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphLaunch", before), 1);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphAddKernelNode", before), 0);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuMemcpyHtoDAsync", before), 0);
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

START_TEST(arena_shares_memory_by_live_range_and_keeps_outputs_apart)
{
    pg_options o;
    pg_options_default(&o);
    o.no_inplace = true;
    fx x;
    ck_assert_msg(open_prog(&x, false, &o, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    run_ok(&x);
    pg_variant *v = &x.p->gpu->var[0];
    lm_err e = {0};
    ck_assert_msg(rt_arena_check(v->abuf, v->n_abuf, NULL, 0, v->aoff, v->data_peak, &e) == 0, "%s",
                  e.msg);
    ck_assert_uint_eq(v->n_abuf, 4); /* A, B, C, out */
    /* sized for the bucket's maximum, n = 256 */
    ck_assert_uint_eq(v->abuf[v->buf_abuf[PF_A]].bytes, 256 * 4 * 4);
    uint64_t A = pg__gpu_buffer_addr(x.p, 0, PF_A), B = pg__gpu_buffer_addr(x.p, 0, PF_B);
    uint64_t C = pg__gpu_buffer_addr(x.p, 0, PF_M_OR_C), O = pg__gpu_buffer_addr(x.p, 0, PF_OUT);
    ck_assert_uint_eq(A, C); /* live over [0, 1] and [2, 3]: shared */
    ck_assert_uint_ne(A, B);
    ck_assert_uint_ne(B, C);
    ck_assert(O != A && O != B); /* the output is live throughout: alone */
    ck_assert_uint_eq(v->abuf[v->buf_abuf[PF_OUT]].first, 0);
    ck_assert_uint_eq(v->abuf[v->buf_abuf[PF_OUT]].last, 3);
    /* C reuses A's bytes, so step 2 (writing C) must wait for step 1 (reading A) */
    bool waits = false;
    for (uint32_t d = 0; d < v->ndeps[2]; d++)
        waits |= v->deps[2][d] == 1;
    ck_assert(waits);
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

START_TEST(elementwise_kernels_write_in_place_over_their_dead_inputs)
{
    fx x;
    ck_assert_msg(open_prog(&x, false, NULL, NULL), "%s", x.err.msg);
    /* B over A, C over B; the output never */
    ck_assert_uint_eq(x.p->slot[PF_B], PF_A);
    ck_assert_uint_eq(x.p->slot[PF_M_OR_C], PF_A);
    ck_assert_uint_eq(x.p->slot[PF_OUT], PF_OUT);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    run_ok(&x);
    pg_variant *v = &x.p->gpu->var[0];
    ck_assert_uint_eq(v->n_abuf, 2);
    uint64_t A = pg__gpu_buffer_addr(x.p, 0, PF_A);
    ck_assert_uint_eq(pg__gpu_buffer_addr(x.p, 0, PF_B), A);
    ck_assert_uint_eq(pg__gpu_buffer_addr(x.p, 0, PF_M_OR_C), A);
    ck_assert_uint_ne(pg__gpu_buffer_addr(x.p, 0, PF_OUT), A);
    lm_err e = {0};
    ck_assert_int_eq(rt_arena_check(v->abuf, v->n_abuf, NULL, 0, v->aoff, v->data_peak, &e), 0);
    pf_inputs_free(&in);
    close_prog(&x);

    /* a kernel that is not "elementwise" keeps its output apart */
    pf f;
    pf_make(&f, false);
    f.plan.kernels[1].template_name = "row-warp";
    rt_mock *m = rt_mock_new(NULL);
    pg_options o;
    pg_options_default(&o);
    o.mock = m;
    o.backend = PG_BACKEND_GPU;
    lm_err e2 = {0};
    pg_program *p = pg_program_new(&f.plan, f.g, &o, &e2);
    ck_assert_msg(p, "%s", e2.msg);
    ck_assert_uint_eq(p->slot[PF_B], PF_B);
    ck_assert_uint_eq(p->slot[PF_M_OR_C], PF_B); /* C over B still */
    pg_program_free(p);
    rt_mock_free(m);
    pf_free(&f);
}
END_TEST

/* ---- dims ---- */

START_TEST(a_dim_change_sets_kernel_nodes_in_place)
{
    fx x;
    ck_assert_msg(open_prog(&x, false, NULL, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    run_ok(&x);
    pg_variant *v = &x.p->gpu->var[0];
    ck_assert_uint_eq(rt_mock_kernel_grid_x(x.mock, v->graph, v->exec, 0), 1); /* cdiv(32,128) */
    uint64_t arena = x.p->gpu->arena.ptr;
    set_n(&x, 200, &in);
    uint32_t before = rt_mock_calls(x.mock);
    run_ok(&x);
    ck_assert_uint_eq(rt_mock_kernel_grid_x(x.mock, v->graph, v->exec, 0), 7); /* cdiv(800,128) */
    ck_assert_uint_eq(rt_mock_kernel_grid_x(x.mock, v->graph, NULL, 0), 7);    /* mirrored */
    pg_counters c = counters(&x);
    ck_assert_uint_eq(c.kernel_node_updates, 4); /* every kernel takes n */
    ck_assert_uint_eq(c.graphs_built, 1);
    ck_assert_uint_eq(c.instantiations, 1);
    ck_assert_uint_eq(c.graph_updates, 0);
    ck_assert_uint_eq(c.reinstantiations, 0);
    ck_assert_uint_eq(c.arena_allocs, 1);
    ck_assert_uint_eq(c.layout_replans, 0);
    ck_assert_uint_eq(x.p->gpu->arena.ptr, arena); /* sized for n = 256: it fits */
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphExecKernelNodeSetParams", before), 4);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphInstantiateWithFlags", before), 0);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphExecUpdate", before), 0);
    uint64_t a;
    lm_err e = {0};
    ck_assert_int_eq(rt_graph_kernel_arg(v->graph, 2, 3, &a, 8, &e), 0);
    ck_assert_uint_eq(a, 200);
    /* the same dims again: nothing to update */
    pg_program_set_replay_skip(x.p, false);
    run_ok(&x);
    ck_assert_uint_eq(counters(&x).kernel_node_updates, 4);
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

static void blas_dim_change(bool refuse, uint64_t updates, uint64_t reinst)
{
    rt_mock_config cfg;
    rt_mock_config_default(&cfg);
    cfg.refuse_exec_update = refuse;
    fx x;
    ck_assert_msg(open_prog(&x, true, NULL, &cfg), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    run_ok(&x);
    set_n(&x, 100, &in);
    uint32_t before = rt_mock_calls(x.mock);
    run_ok(&x);
    pg_counters c = counters(&x);
    ck_assert_uint_eq(c.blas_prepares, 2); /* m changed: prepared again */
    ck_assert_uint_eq(c.graphs_built, 2);  /* the captured call changed: graph again */
    ck_assert_uint_eq(c.graph_updates, updates);
    ck_assert_uint_eq(c.reinstantiations, reinst);
    ck_assert_uint_eq(c.instantiations, 1);
    ck_assert_uint_eq(c.arena_allocs, 1);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphExecUpdate", before), 1);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphLaunch", before), 1);
    pg_variant *v = &x.p->gpu->var[0];
    ck_assert_uint_eq(rt_mock_kernel_grid_x(x.mock, v->graph, v->exec, 3), 7); /* cdiv(800,128) */
    pf_inputs_free(&in);
    close_prog(&x);
}

START_TEST(a_dim_change_reprepares_library_calls_and_updates_the_exec)
{
    blas_dim_change(false, 1, 0);
    blas_dim_change(true, 0, 1);
}
END_TEST

START_TEST(buckets_pick_a_variant_refuse_overlaps_and_name_values_outside)
{
    pf f;
    pf_make_hi(&f, false, 1 << 20);
    rt_mock *m = rt_mock_new(NULL);
    pg_options o;
    pg_options_default(&o);
    o.mock = m;
    o.backend = PG_BACKEND_GPU;
    lm_err e = {0};
    /* overlapping buckets are refused */
    pg_bucket bad[2] = {{1, 64}, {60, 256}};
    pg_dim_buckets db = {"n", 2, bad};
    o.n_buckets = 1;
    o.buckets = &db;
    ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
    ck_assert_int_eq(e.code, LM_EARG);
    ck_assert_ptr_nonnull(strstr(e.msg, "overlap"));
    /* an unknown dim, a bucket outside the range */
    lm_err_clear(&e);
    pg_dim_buckets unk = {"q", 2, bad};
    o.buckets = &unk;
    ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
    ck_assert_ptr_nonnull(strstr(e.msg, "'q'"));
    lm_err_clear(&e);
    pg_bucket wide[1] = {{1, 1 << 21}};
    pg_dim_buckets w = {"n", 1, wide};
    o.buckets = &w;
    ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
    ck_assert_ptr_nonnull(strstr(e.msg, "inside the dim's"));
    /* two buckets with a gap */
    lm_err_clear(&e);
    pg_bucket two[2] = {{100, 1 << 20}, {1, 64}}; /* any order */
    pg_dim_buckets ok = {"n", 2, two};
    o.buckets = &ok;
    pg_program *p = pg_program_new(&f.plan, f.g, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    ck_assert_uint_eq(p->n_variants, 2);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(p, &in);
    ck_assert_msg(pg_program_run(p, &e) == 0, "%s", e.msg);
    ck_assert(p->gpu->var[0].built && !p->gpu->var[1].built);
    /* planned for the bucket's maximum, 64 */
    ck_assert_uint_eq(p->gpu->var[0].planned[PF_A], 64 * 16);
    /* a value in no bucket: a clear error, the value kept */
    ck_assert_int_eq(pg_program_set_dim(p, "n", 80, &e), LM_EDIM);
    ck_assert_ptr_nonnull(strstr(e.msg, "[1, 64], [100, 1048576]"));
    lm_err_clear(&e);
    int64_t val;
    ck_assert_int_eq(pg_program_dim_info(p, 0, NULL, NULL, &val, &e), 0);
    ck_assert_int_eq(val, 8);
    ck_assert_int_eq(pg_program_set_dim(p, "n", 1 << 21, &e), LM_EDIM); /* outside the range */
    lm_err_clear(&e);
    /* the other bucket: its own variant, graph and arena plan; 16 MiB per buffer grows the
     * shared arena, which moves */
    uint64_t arena0 = p->gpu->arena.ptr;
    ck_assert_int_eq(pg_program_set_dim(p, "n", 150, &e), 0);
    pf_inputs_free(&in);
    pf_inputs(&in, 150, 2);
    pf_set(p, &in);
    ck_assert_msg(pg_program_run(p, &e) == 0, "%s", e.msg);
    ck_assert(p->gpu->var[1].built);
    ck_assert_uint_eq(p->gpu->var[1].planned[PF_A], (uint64_t)16 << 20);
    pg_counters c;
    pg_program_counters(p, &c);
    ck_assert_uint_eq(c.instantiations, 2);
    ck_assert_uint_eq(c.arena_allocs, 2);
    ck_assert_uint_ne(p->gpu->arena.ptr, arena0);
    uint64_t updates = c.kernel_node_updates;
    /* back to the first: no new graph; its nodes are brought to the moved arena in place */
    ck_assert_int_eq(pg_program_set_dim(p, "n", 10, &e), 0);
    pf_inputs_free(&in);
    pf_inputs(&in, 10, 2);
    pf_set(p, &in);
    ck_assert_msg(pg_program_run(p, &e) == 0, "%s", e.msg);
    pg_program_counters(p, &c);
    ck_assert_uint_eq(c.instantiations, 2);
    ck_assert_uint_eq(c.graphs_built, 2);
    ck_assert_uint_eq(c.reinstantiations, 0);
    ck_assert_uint_eq(c.kernel_node_updates, updates + 4);
    uint64_t a;
    ck_assert_int_eq(rt_graph_kernel_arg(p->gpu->var[0].graph, 0, 2, &a, 8, &e), 0);
    ck_assert_uint_eq(a, pg__gpu_buffer_addr(p, 0, PF_A));
    ck_assert_uint_ge(a, p->gpu->arena.ptr);
    ck_assert_uint_lt(a, p->gpu->arena.ptr + p->gpu->arena.capacity);
    pf_inputs_free(&in);
    pg_program_free(p);
    rt_mock_free(m);
    pf_free(&f);
}
END_TEST

/* ---- inputs and replays ---- */

START_TEST(unchanged_inputs_are_not_uploaded_and_unchanged_runs_are_skipped)
{
    fx x;
    ck_assert_msg(open_prog(&x, false, NULL, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    run_ok(&x);
    pg_counters c = counters(&x);
    ck_assert_uint_eq(c.uploads, 3);
    ck_assert_uint_eq(c.bytes_uploaded, (32 + 32 + 32) * 4);
    /* the same bytes again: not uploaded */
    pf_set(x.p, &in);
    c = counters(&x);
    ck_assert_uint_eq(c.uploads_skipped, 3);
    ck_assert_uint_eq(c.bytes_skipped, 96 * 4);
    /* the outputs are not on the host yet: the run replays */
    uint32_t before = rt_mock_calls(x.mock);
    run_ok(&x);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphLaunch", before), 1);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuMemcpyHtoDAsync", before), 0);
    const void *out;
    size_t bytes;
    ck_assert_int_eq(pg_program_output(x.p, 0, &out, &bytes, &x.err), 0);
    ck_assert_uint_eq(bytes, 32 * 4);
    ck_assert_uint_eq(counters(&x).downloads, 1);
    /* now nothing changed and the outputs are home: skipped */
    before = rt_mock_calls(x.mock);
    run_ok(&x);
    c = counters(&x);
    ck_assert_uint_eq(c.replays_skipped, 1);
    ck_assert_uint_eq(c.replays, 2);
    ck_assert_uint_eq(c.runs, 3);
    ck_assert_uint_eq(rt_mock_calls(x.mock), before); /* not one driver call */
    ck_assert_int_eq(pg_program_output(x.p, 0, &out, &bytes, &x.err), 0);
    ck_assert_uint_eq(counters(&x).downloads, 1); /* still home */
    /* switched off: replays */
    pg_program_set_replay_skip(x.p, false);
    run_ok(&x);
    ck_assert_uint_eq(counters(&x).replays, 3);
    pg_program_set_replay_skip(x.p, true);
    /* one input changed: only it is uploaded */
    in.y[5] += 1.0f;
    pf_set(x.p, &in);
    before = rt_mock_calls(x.mock);
    run_ok(&x);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuMemcpyHtoDAsync", before), 1);
    c = counters(&x);
    ck_assert_uint_eq(c.uploads, 4);
    ck_assert_uint_eq(c.uploads_skipped, 5);
    /* the wrong size for the current dims */
    ck_assert_int_eq(pg_program_set_input(x.p, 0, in.x, 12, &x.err), LM_ESHAPE);
    ck_assert_ptr_nonnull(strstr(x.err.msg, "input 'x' (0) takes 128 bytes"));
    lm_err_clear(&x.err);
    /* dims changed after the inputs: the run names the input */
    ck_assert_int_eq(pg_program_set_dim(x.p, "n", 9, &x.err), 0);
    ck_assert_int_eq(pg_program_run(x.p, &x.err), LM_ESHAPE);
    ck_assert_ptr_nonnull(strstr(x.err.msg, "set the dims first"));
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

START_TEST(device_inputs_go_straight_to_the_kernels)
{
    fx x;
    ck_assert_msg(open_prog(&x, false, NULL, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    ck_assert_int_eq(pg_program_set_input_device(x.p, 1, 0x7e0000000000ull, 128, &x.err), 0);
    uint32_t before = rt_mock_calls(x.mock);
    run_ok(&x);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuMemcpyHtoDAsync", before), 2); /* x, w */
    pg_variant *v = &x.p->gpu->var[0];
    uint64_t a;
    lm_err e = {0};
    ck_assert_int_eq(rt_graph_kernel_arg(v->graph, 0, 1, &a, 8, &e), 0);
    ck_assert_uint_eq(a, 0x7e0000000000ull);
    /* another address: the node is set in place, nothing rebuilt */
    ck_assert_int_eq(pg_program_set_input_device(x.p, 1, 0x7e0000100000ull, 128, &x.err), 0);
    run_ok(&x);
    ck_assert_int_eq(rt_graph_kernel_arg(v->graph, 0, 1, &a, 8, &e), 0);
    ck_assert_uint_eq(a, 0x7e0000100000ull);
    pg_counters c = counters(&x);
    ck_assert_uint_eq(c.kernel_node_updates, 1);
    ck_assert_uint_eq(c.graphs_built, 1);
    /* a device input is never taken as unchanged */
    const void *out;
    ck_assert_int_eq(pg_program_output(x.p, 0, &out, NULL, &x.err), 0);
    run_ok(&x);
    ck_assert_uint_eq(counters(&x).replays_skipped, 0);
    uint64_t od;
    size_t ob;
    ck_assert_int_eq(pg_program_output_device(x.p, 0, &od, &ob, &x.err), 0);
    ck_assert_uint_eq(od, pg__gpu_buffer_addr(x.p, 0, PF_OUT));
    ck_assert_uint_eq(ob, 128);
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

START_TEST(timing_replays_the_graph_with_events_and_compiles_nothing)
{
    fx x;
    ck_assert_msg(open_prog(&x, true, NULL, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    uint32_t before = rt_mock_calls(x.mock);
    double med, lo, hi;
    ck_assert_msg(pg_program_time(x.p, 2, 5, 1, 10000, &med, &lo, &hi, &x.err) == 0, "%s",
                  x.err.msg);
    ck_assert(med > 0 && lo <= med && med <= hi);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphLaunch", before), 7);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuModuleLoadData", before), 0);
    pg_counters c = counters(&x);
    ck_assert_uint_eq(c.timed_replays, 7);
    ck_assert_uint_eq(c.uploads, 3);
    /* the outputs are the last replay's */
    const void *out;
    ck_assert_int_eq(pg_program_output(x.p, 0, &out, NULL, &x.err), 0);
    ck_assert_int_eq(pg_program_time(x.p, 0, 0, 1, 1000, &med, NULL, NULL, &x.err), LM_EARG);
    lm_err_clear(&x.err);
    ck_assert_int_eq(pg_program_time(x.p, 0, 1, 0, 1000, &med, NULL, NULL, &x.err), LM_EARG);
    lm_err_clear(&x.err);
    /* trials of several replays between two events: 1 warm-up + 3 x 4 launches */
    before = rt_mock_calls(x.mock);
    ck_assert_msg(pg_program_time(x.p, 1, 3, 4, 10000, &med, &lo, &hi, &x.err) == 0, "%s",
                  x.err.msg);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuGraphLaunch", before), 13);
    ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuEventRecord", before), 4);
    ck_assert_uint_eq(counters(&x).timed_replays, 7 + 13);
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

/* ---- errors ---- */

START_TEST(a_fault_in_the_replay_says_the_process_must_restart)
{
    fx x;
    ck_assert_msg(open_prog(&x, false, NULL, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    rt_mock_fail(x.mock, "cuStreamSynchronize", 0, 700);
    ck_assert_int_eq(pg_program_run(x.p, &x.err), LM_EFAULT);
    ck_assert_ptr_nonnull(strstr(x.err.msg, "program 'fx'"));
    ck_assert_ptr_nonnull(strstr(x.err.msg, "graph replay"));
    ck_assert_ptr_nonnull(strstr(x.err.msg, "must be restarted"));
    ck_assert_ptr_nonnull(strstr(x.err.msg, "pg_program_diagnose"));
    ck_assert_ptr_nonnull(strstr(x.err.msg, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    const void *out;
    lm_err e = {0};
    ck_assert_int_eq(pg_program_output(x.p, 0, &out, NULL, &e), LM_EARG); /* no outputs */
    pf_inputs_free(&in);
    pg_program_free(x.p);
    rt_mock_free(x.mock);
    pf_free(&x.f);
}
END_TEST

START_TEST(stepwise_runs_name_the_faulting_kernel)
{
    pg_options o;
    pg_options_default(&o);
    o.stepwise = true;
    fx x;
    ck_assert_msg(open_prog(&x, false, &o, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    rt_mock_fail(x.mock, "cuLaunchKernel", 2, 700);
    ck_assert_int_eq(pg_program_run(x.p, &x.err), LM_EFAULT);
    char want[128];
    snprintf(want, sizeof want, "step 2: kernel 2 (template 'elementwise', LLIR node %u)",
             x.f.plan.kernels[2].llir_node);
    ck_assert_msg(strstr(x.err.msg, want) != NULL, "%s", x.err.msg);
    ck_assert_ptr_nonnull(strstr(x.err.msg, "must be restarted"));
    pf_inputs_free(&in);
    pg_program_free(x.p);
    rt_mock_free(x.mock);
    pf_free(&x.f);
}
END_TEST

START_TEST(diagnose_names_the_faulting_kernel_from_a_child_and_the_caller_goes_on)
{
    fx x;
    ck_assert_msg(open_prog(&x, false, NULL, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    /* a clean diagnosis */
    pg_diagnosis d;
    ck_assert_msg(pg_program_diagnose(x.p, 60000, &d, &x.err) == 0, "%s", x.err.msg);
    ck_assert(!d.faulted);
    ck_assert_uint_eq(d.step, LM_NONE);
    rt_mock_fail(x.mock, "cuLaunchKernel", 1, 700); /* the child's second launch */
    ck_assert_msg(pg_program_diagnose(x.p, 60000, &d, &x.err) == 0, "%s", x.err.msg);
    ck_assert(d.faulted);
    ck_assert_uint_eq(d.step, 1);
    ck_assert_uint_eq(d.kernel, 1);
    ck_assert_uint_eq(d.llir_node, x.f.plan.kernels[1].llir_node);
    ck_assert_str_eq(d.template_name, "elementwise");
    ck_assert_int_eq(d.code, LM_EFAULT);
    ck_assert_ptr_nonnull(strstr(d.msg, "step 1: kernel 1"));
    /* the fault stayed in the child: this process runs on */
    run_ok(&x);
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

START_TEST(out_of_device_memory_is_an_error_the_program_survives)
{
    fx x;
    ck_assert_msg(open_prog(&x, true, NULL, NULL), "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    rt_mock_fail(x.mock, "cuMemAlloc", 0, 2); /* CUDA_ERROR_OUT_OF_MEMORY */
    ck_assert_int_eq(pg_program_run(x.p, &x.err), LM_EDRIVER);
    ck_assert_ptr_nonnull(strstr(x.err.msg, "program 'fx'"));
    ck_assert_ptr_nonnull(strstr(x.err.msg, "arena"));
    ck_assert_ptr_nonnull(strstr(x.err.msg, "stays usable"));
    ck_assert_ptr_nonnull(strstr(x.err.msg, "CUDA_ERROR_OUT_OF_MEMORY"));
    lm_err_clear(&x.err);
    run_ok(&x); /* and it runs afterwards */
    ck_assert_uint_eq(counters(&x).replays, 1);
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

START_TEST(bad_plans_are_refused_naming_the_problem)
{
    pf f;
    pf_make(&f, true);
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_CPU;
    lm_err e = {0};
    /* a parameter naming a buffer out of range */
    f.plan.kernels[0].params[0].buf = 99;
    ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
    ck_assert_int_eq(e.code, LM_EVERIFY);
    ck_assert_ptr_nonnull(strstr(e.msg, "kernel 0 parameter 0 names buffer 99"));
    f.plan.kernels[0].params[0].buf = PF_X;
    /* a step naming a kernel that does not exist */
    lm_err_clear(&e);
    f.plan.steps[1].index = 7;
    ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
    ck_assert_ptr_nonnull(strstr(e.msg, "step 1 names kernel 7"));
    f.plan.steps[1].index = 1;
    /* a live range past the last step */
    lm_err_clear(&e);
    f.plan.buffers[PF_A].last_step = 9;
    ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
    ck_assert_ptr_nonnull(strstr(e.msg, "buffer 3 is live over steps [0, 9]"));
    f.plan.buffers[PF_A].last_step = 1;
    /* a workspace given to a kernel */
    lm_err_clear(&e);
    f.plan.kernels[0].params[0].buf = PF_WS;
    ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
    ck_assert_ptr_nonnull(strstr(e.msg, "workspace"));
    f.plan.kernels[0].params[0].buf = PF_X;
    /* a block larger than CUDA allows */
    lm_err_clear(&e);
    f.plan.kernels[2].block[0] = 2048;
    ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
    ck_assert_ptr_nonnull(strstr(e.msg, "more than CUDA allows"));
    f.plan.kernels[2].block[0] = 128;
    /* and the plan as it was is fine */
    lm_err_clear(&e);
    pg_program *p = pg_program_new(&f.plan, f.g, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    pg_program_free(p);
    pf_free(&f);
}
END_TEST

START_TEST(a_grid_past_cudas_limit_names_the_kernel)
{
    fx x;
    pf_make(&x.f, false);
    /* grid.y = n * 1000 reaches past 65535 at n = 100 */
    lm_err he = {0};
    ck_assert_int_eq(hl_e_parse(x.f.plan.exprs, "n*1000", &x.f.plan.kernels[1].grid[1], &he), 0);
    x.mock = rt_mock_new(NULL);
    pg_options o;
    pg_options_default(&o);
    o.mock = x.mock;
    o.backend = PG_BACKEND_GPU;
    memset(&x.err, 0, sizeof x.err);
    x.p = pg_program_new(&x.f.plan, x.f.g, &o, &x.err);
    ck_assert_msg(x.p, "%s", x.err.msg);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(x.p, &in);
    run_ok(&x);
    set_n(&x, 100, &in);
    ck_assert_int_eq(pg_program_run(x.p, &x.err), LM_EARG);
    ck_assert_ptr_nonnull(strstr(x.err.msg, "kernel 1 (template 'elementwise'"));
    ck_assert_ptr_nonnull(strstr(x.err.msg, "grid.y = 100000"));
    pf_inputs_free(&in);
    close_prog(&x);
}
END_TEST

/* ---- compiling ---- */

static const char *const BROKEN =
    "extern \"C\" __global__ void lm_kernel(float *x, long long n) {\n"
    "  long long i = threadIdx.x;\n"
    "  x[i] = undefined_thing * 2.0f;\n"
    "}\n";

START_TEST(compile_check_compiles_every_kernel_for_an_architecture_without_a_gpu)
{
    pf f;
    pf_make(&f, true);
    lm_err e = {0};
    ck_assert_msg(pg_compile_check(&f.plan, 90, &e) == 0, "%s", e.msg);
    ck_assert_msg(pg_compile_check(&f.plan, 80, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(pg_compile_check(&f.plan, 7, &e), LM_EARG);
    lm_err_clear(&e);
    /* a compile error names the kernel and its LLIR node, with the offending line */
    free(f.plan.kernels[1].source);
    f.plan.kernels[1].source = pf_strdup(BROKEN);
    ck_assert_int_eq(pg_compile_check(&f.plan, 90, &e), LM_ECOMPILE);
    char want[96];
    snprintf(want, sizeof want, "kernel 1 (template 'elementwise', LLIR node %u)",
             f.plan.kernels[1].llir_node);
    ck_assert_msg(strstr(e.msg, want) != NULL, "%s", e.msg);
    ck_assert_msg(strstr(e.msg, "sm_90") != NULL, "%s", e.msg);
    ck_assert_msg(strstr(e.msg, "line 3:   x[i] = undefined_thing") != NULL, "%s", e.msg);
    /* a caller's plan may number its dims' variables in any order */
    lm_err_clear(&e);
    free(f.plan.kernels[1].source);
    f.plan.kernels[1].source = pf_strdup(PF_SRC_EXP2);
    hl_dim *dims = calloc(2, sizeof *dims);
    char **names = calloc(2, sizeof *names);
    hl_expr m = hl_e_var(f.plan.exprs, "m"); /* variable 1 */
    dims[0] = (hl_dim){1, m, 1, 9, 2};
    dims[1] = f.plan.dims[0]; /* n, variable 0 */
    names[0] = pf_strdup("m");
    names[1] = f.plan.dim_names[0];
    free(f.plan.dims);
    free(f.plan.dim_names);
    f.plan.dims = dims;
    f.plan.dim_names = names;
    f.plan.n_dims = 2;
    for (uint32_t k = 0; k < f.plan.n_kernels; k++)
        for (uint32_t j = 0; j < f.plan.kernels[k].n_params; j++)
            if (f.plan.kernels[k].params[j].kind == CG_P_DIM) f.plan.kernels[k].params[j].dim = 1;
    ck_assert_msg(pg_compile_check(&f.plan, 90, &e) == 0, "%s", e.msg);
    dims[0].var = 0; /* two dims on one variable */
    ck_assert_int_eq(pg_compile_check(&f.plan, 90, &e), LM_EVERIFY);
    dims[0].var = 1;
    lm_err_clear(&e);
    /* a malformed plan is refused before anything compiles */
    f.plan.steps[0].index = 9;
    ck_assert_int_eq(pg_compile_check(&f.plan, 90, &e), LM_EVERIFY);
    pf_free(&f);
}
END_TEST

START_TEST(kernels_compile_the_same_on_one_thread_or_several_and_report_the_first_error)
{
    for (uint32_t threads = 1; threads <= 3; threads += 2) {
        pg_options o;
        pg_options_default(&o);
        o.compile_threads = threads;
        fx x;
        ck_assert_msg(open_prog(&x, false, &o, NULL), "%s", x.err.msg);
        ck_assert_uint_eq(counters(&x).kernels_compiled, 4);
        ck_assert_uint_eq(rt_mock_count_since(x.mock, "cuModuleLoadData", 0), 4);
        for (uint32_t k = 0; k < 4; k++)
            ck_assert_ptr_nonnull(x.p->gpu->kern[k]);
        close_prog(&x);
        /* two broken kernels: the lower one is named, whatever the threads did */
        pf f;
        pf_make(&f, false);
        for (uint32_t k = 1; k <= 2; k++) {
            free(f.plan.kernels[k].source);
            f.plan.kernels[k].source = pf_strdup(k == 1 ? BROKEN : "this is not CUDA");
        }
        rt_mock *m = rt_mock_new(NULL);
        o.mock = m;
        o.backend = PG_BACKEND_GPU;
        lm_err e = {0};
        ck_assert_ptr_null(pg_program_new(&f.plan, f.g, &o, &e));
        ck_assert_int_eq(e.code, LM_ECOMPILE);
        ck_assert_msg(strstr(e.msg, "kernel 1 (template") != NULL, "%s", e.msg);
        ck_assert_msg(strstr(e.msg, "undefined_thing") != NULL, "%s", e.msg);
        ck_assert_uint_eq(rt_mock_live_objects(m), 0);
        rt_mock_free(m);
        pf_free(&f);
    }
    /* two kernels of one source: compiled once */
    pf f;
    pf_make(&f, false);
    free(f.plan.kernels[3].source);
    f.plan.kernels[3].source = pf_strdup(PF_SRC_MUL4);
    rt_mock *m = rt_mock_new(NULL);
    pg_options o;
    pg_options_default(&o);
    o.mock = m;
    o.backend = PG_BACKEND_GPU;
    lm_err e = {0};
    pg_program *p = pg_program_new(&f.plan, f.g, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    pg_counters c;
    pg_program_counters(p, &c);
    ck_assert_uint_eq(c.kernels_compiled, 3);
    ck_assert_ptr_eq(p->gpu->kern[2], p->gpu->kern[3]);
    pg_program_free(p);
    rt_mock_free(m);
    pf_free(&f);
}
END_TEST

/* ---- saved programs on the GPU ---- */

START_TEST(a_plan_for_another_architecture_is_refused_on_the_gpu)
{
    pf f;
    pf_make(&f, true);
    tmp t;
    tmp_make(&t);
    pg_program *p = cpu_new(&f, "x", false);
    lm_err e = {0};
    ck_assert_msg(pg_program_save(p, t.a, &e) == 0, "%s", e.msg);
    pg_program_free(p);
    rt_mock_config cfg;
    rt_mock_config_default(&cfg);
    cfg.cc_major = 8;
    cfg.cc_minor = 0;
    rt_mock *m = rt_mock_new(&cfg);
    for (int b = 0; b < 2; b++) {
        pg_options o;
        pg_options_default(&o);
        o.mock = m;
        o.backend = b ? PG_BACKEND_AUTO : PG_BACKEND_GPU; /* AUTO does not fall back either */
        lm_err_clear(&e);
        ck_assert_ptr_null(pg_program_load(t.a, &o, &e));
        ck_assert_int_eq(e.code, LM_EUNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(e.msg, "written for sm_90"));
        ck_assert_ptr_nonnull(strstr(e.msg, "is sm_80"));
    }
    rt_mock_free(m);
    /* on an sm_90 mock it loads, compiles and runs; saved again, the same bytes */
    m = rt_mock_new(NULL);
    pg_options o;
    pg_options_default(&o);
    o.mock = m;
    o.backend = PG_BACKEND_GPU;
    lm_err_clear(&e);
    pg_program *q = pg_program_load(t.a, &o, &e);
    ck_assert_msg(q, "%s", e.msg);
    ck_assert_int_eq(pg_program_backend(q), PG_BACKEND_GPU);
    pf_in in;
    pf_inputs(&in, 8, 1);
    pf_set(q, &in);
    ck_assert_msg(pg_program_run(q, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(rt_mock_count_since(m, "cuGraphLaunch", 0), 1);
    ck_assert_msg(pg_program_save(q, t.b, &e) == 0, "%s", e.msg);
    same_dirs(t.a, t.b);
    pf_inputs_free(&in);
    pg_program_free(q);
    rt_mock_free(m);
    /* and on the CPU the architecture does not matter */
    q = cpu_load(t.a);
    pg_program_free(q);
    rm_tree(t.root);
    pf_free(&f);
}
END_TEST
/* ---- the CPU backend ---- */

START_TEST(the_cpu_backend_computes_what_the_llir_executor_does)
{
    for (int blas = 0; blas < 2; blas++) {
        pf f;
        pf_make(&f, blas);
        pg_options o;
        pg_options_default(&o);
        o.backend = PG_BACKEND_CPU;
        lm_err e = {0};
        pg_program *p = pg_program_new(&f.plan, f.g, &o, &e);
        ck_assert_msg(p, "%s", e.msg);
        ck_assert_int_eq(pg_program_backend(p), PG_BACKEND_CPU);
        ck_assert_ptr_nonnull(strstr(pg_program_backend_note(p), "CPU"));
        for (int64_t n = 8; n <= 40; n += 32) {
            ck_assert_int_eq(pg_program_set_dim(p, "n", n, &e), 0);
            pf_in in;
            pf_inputs(&in, n, (uint64_t)n);
            pf_set(p, &in);
            ck_assert_msg(pg_program_run(p, &e) == 0, "%s", e.msg);
            const void *out;
            size_t bytes;
            ck_assert_int_eq(pg_program_output_named(p, "out", &out, &bytes, &e), 0);
            /* directly */
            hl_tensor tin[3], tout[1];
            int64_t dx[2] = {n, 4}, dw[2] = {4, 8};
            lm_err he = {0};
            hl_tensor_init(&tin[0], HL_F32, 2, dx, &he);
            hl_tensor_init(&tin[1], HL_F32, 2, dx, &he);
            hl_tensor_init(&tin[2], HL_F32, 2, dw, &he);
            memcpy(tin[0].data, in.x, in.nx * 4);
            memcpy(tin[1].data, in.y, in.nx * 4);
            memcpy(tin[2].data, in.w, 32 * 4);
            ck_assert_int_eq(ll_run(f.g, &n, tin, tout, 0, &e), 0);
            ck_assert_uint_eq(bytes, tout[0].numel * 4);
            ck_assert(memcmp(out, tout[0].data, bytes) == 0);
            for (int i = 0; i < 3; i++)
                hl_tensor_fini(&tin[i]);
            hl_tensor_fini(&tout[0]);
            pf_inputs_free(&in);
        }
        /* no device memory on the CPU */
        ck_assert_int_eq(pg_program_set_input_device(p, 0, 0x1000, 40 * 16, &e), LM_EUNSUPPORTED);
        lm_err_clear(&e);
        double ms;
        ck_assert_int_eq(pg_program_time(p, 1, 1, 1, 1000, &ms, NULL, NULL, &e), LM_EUNSUPPORTED);
        pg_program_free(p);
        pf_free(&f);
    }
}
END_TEST

START_TEST(auto_runs_on_the_cpu_where_there_is_no_gpu_and_says_why)
{
    pf f;
    pf_make(&f, false);
    pg_options o;
    pg_options_default(&o); /* AUTO, the real driver */
    lm_err e = {0};
    pg_program *p = pg_program_new(&f.plan, f.g, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    if (pg_program_backend(p) == PG_BACKEND_CPU) {
        ck_assert_msg(strncmp(pg_program_backend_note(p), "CPU: ", 5) == 0, "%s",
                      pg_program_backend_note(p));
        ck_assert_msg(strstr(pg_program_backend_note(p), "no CUDA device") ||
                          strstr(pg_program_backend_note(p), "NVRTC") ||
                          strstr(pg_program_backend_note(p), "no GPU runtime"),
                      "%s", pg_program_backend_note(p));
    } else {
        ck_assert_int_eq(pg_program_backend(p), PG_BACKEND_GPU);
    }
    pg_program_free(p);
    pf_free(&f);
}
END_TEST

START_TEST(out_of_host_memory_is_an_error_everywhere)
{
    pf f;
    pf_make(&f, true);
    for (int gpu = 0; gpu < 2; gpu++) {
        bool fired = true;
        for (long n = 0; fired; n++) {
            rt_mock *m = rt_mock_new(NULL);
            pg_options o;
            pg_options_default(&o);
            o.backend = gpu ? PG_BACKEND_GPU : PG_BACKEND_CPU;
            o.mock = m;
            o.compile_threads = 1;
            lm_err e = {0};
            lm_mem_fail_after(n);
            pg_program *p = pg_program_new(&f.plan, f.g, &o, &e);
            int rc = 0;
            if (p) {
                pf_in in;
                pf_inputs(&in, 8, 1);
                rc = pg_program_set_input(p, 0, in.x, 128, &e) ||
                     pg_program_set_input(p, 1, in.y, 128, &e) ||
                     pg_program_set_input(p, 2, in.w, 128, &e) || pg_program_run(p, &e);
                pf_inputs_free(&in);
            }
            fired = lm_mem_fail_fired();
            lm_mem_fail_after(-1);
            if (fired)
                ck_assert_msg(e.code == LM_ENOMEM, "gpu %d, after %ld: %d %s", gpu, n, e.code,
                              e.msg);
            else
                ck_assert_msg(p && rc == 0, "%s", e.msg);
            pg_program_free(p);
            ck_assert_uint_eq(rt_mock_live_allocs(m), 0);
            rt_mock_free(m);
        }
    }
    pf_free(&f);
}
END_TEST

static Suite *program_suite(void)
{
    Suite *s = suite_create("program");
    /* NVRTC compiles the fixture's kernels (the mock loads them) */
    rt_nvrtc *nv = NULL;
    lm_err e = {0};
    if (rt_nvrtc_new(NULL, &nv, &e) != 0) lm_check_skip("NVRTC cannot be loaded: %s", e.msg);
    rt_nvrtc_free(nv);
    TCase *tc = tcase_create("mock");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, compiles_every_kernel_once_and_builds_one_graph_in_step_order);
    tcase_add_test(tc, arena_shares_memory_by_live_range_and_keeps_outputs_apart);
    tcase_add_test(tc, elementwise_kernels_write_in_place_over_their_dead_inputs);
    tcase_add_test(tc, a_dim_change_sets_kernel_nodes_in_place);
    tcase_add_test(tc, a_dim_change_reprepares_library_calls_and_updates_the_exec);
    tcase_add_test(tc, buckets_pick_a_variant_refuse_overlaps_and_name_values_outside);
    tcase_add_test(tc, unchanged_inputs_are_not_uploaded_and_unchanged_runs_are_skipped);
    tcase_add_test(tc, device_inputs_go_straight_to_the_kernels);
    tcase_add_test(tc, timing_replays_the_graph_with_events_and_compiles_nothing);
    tcase_add_test(tc, a_fault_in_the_replay_says_the_process_must_restart);
    tcase_add_test(tc, stepwise_runs_name_the_faulting_kernel);
    tcase_add_test(tc, diagnose_names_the_faulting_kernel_from_a_child_and_the_caller_goes_on);
    tcase_add_test(tc, out_of_device_memory_is_an_error_the_program_survives);
    tcase_add_test(tc, bad_plans_are_refused_naming_the_problem);
    tcase_add_test(tc, a_grid_past_cudas_limit_names_the_kernel);
    tcase_add_test(tc, compile_check_compiles_every_kernel_for_an_architecture_without_a_gpu);
    tcase_add_test(tc,
                   kernels_compile_the_same_on_one_thread_or_several_and_report_the_first_error);
    tcase_add_test(tc, a_plan_for_another_architecture_is_refused_on_the_gpu);
    tcase_add_test(tc, the_cpu_backend_computes_what_the_llir_executor_does);
    tcase_add_test(tc, auto_runs_on_the_cpu_where_there_is_no_gpu_and_says_why);
    tcase_add_test(tc, out_of_host_memory_is_an_error_everywhere);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {program_suite, NULL};
