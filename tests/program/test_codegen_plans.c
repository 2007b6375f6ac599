/* test_codegen_plans.c - programs from codegen's plans (cg_plan_new), not hand-made ones:
 * every kernel of the example graphs' plans compiles for sm_90 (pg_compile_check, the CI
 * compile check), programs open on the mock driver (compiled, laid out, one graph), run on
 * the mock and on the CPU, and save and load to the same bytes; the CPU backend's outputs
 * equal the reference runtime's where llir's executor gives hl_run's bits (standalone
 * kernels). Skipped without NVRTC. */
#include "../llir_exec/tx.h"
#include "pf_dir.h"
#include "pg_gpu.h"
#include "pg_int.h"

/* The LLIR of h with every node a standalone kernel, and its plan. */
static cg_plan *plan_of(const hl_graph *h, ll_graph **g, lm_err *e)
{
    *g = ll_graph_from_hlir(h, e);
    if (!*g) return NULL;
    return cg_plan_new(*g, NULL, e);
}

START_TEST(every_kernel_of_the_examples_compiles_for_sm_90)
{
    const char *names[] = {"llama_block_bf16", "causal_attention_bf16",
                           "embedding_gather", "primitives_strided",
                           "swiglu_mlp_bf16",  "layernorm_gelu_f32_4096"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/graphs/%s.json", LUMINAL_SOURCE_DIR, names[i]);
        lm_err he = {0};
        hl_graph *h = hl_graph_load_json(path, &he);
        ck_assert_msg(h, "%s", he.msg);
        ll_graph *g;
        lm_err e = {0};
        cg_plan *plan = plan_of(h, &g, &e);
        ck_assert_msg(plan, "%s: %s", names[i], e.msg);
        double t0 = lm_now_s();
        ck_assert_msg(pg_compile_check(plan, 90, &e) == 0, "%s: %s", names[i], e.msg);
        printf("%s: %u kernels compiled for sm_90 in %.1f s\n", names[i], plan->n_kernels,
               lm_now_s() - t0);
        /* and the program opens on the mock: checked, compiled, nothing run */
        rt_mock *m = rt_mock_new(NULL);
        pg_options o;
        pg_options_default(&o);
        o.mock = m;
        o.backend = PG_BACKEND_GPU;
        o.name = names[i];
        pg_program *p = pg_program_new(plan, g, &o, &e);
        ck_assert_msg(p, "%s: %s", names[i], e.msg);
        ck_assert_uint_eq(pg_program_input_count(p), hl_graph_input_count(h));
        pg_program_free(p);
        ck_assert_uint_eq(rt_mock_live_objects(m), 0);
        rt_mock_free(m);
        cg_plan_free(plan);
        ll_graph_free(g);
        hl_graph_free(h);
    }
}
END_TEST

/* Sets every input of p from t[] (the reference's seeded inputs). */
static void set_inputs(pg_program *p, const hl_tensor *t, uint32_t n)
{
    lm_err e = {0};
    for (uint32_t i = 0; i < n; i++)
        ck_assert_msg(
            pg_program_set_input(p, i, t[i].data, t[i].numel * hl_dtype_size(t[i].dtype), &e) == 0,
            "%s", e.msg);
}

START_TEST(generated_graphs_run_on_the_mock_and_the_cpu_and_save_to_the_same_bytes)
{
    uint32_t ran = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        hl_gen_opts go = {.n_ops = 8, .max_dim = 5, .dynamic = seed % 2 == 0};
        lm_err he = {0};
        hl_graph *h = hl_graph_generate(seed, &go, &he);
        ck_assert_msg(h, "%s", he.msg);
        ll_graph *g = NULL;
        lm_err e = {0};
        cg_plan *plan = plan_of(h, &g, &e);
        if (!plan) { /* a primitive no template covers yet: say so, go on */
            ck_assert_msg(e.code == LM_EUNSUPPORTED, "seed %llu: %s", (unsigned long long)seed,
                          e.msg);
            printf("seed %llu: not planned: %s\n", (unsigned long long)seed, e.msg);
            ll_graph_free(g);
            hl_graph_free(h);
            continue;
        }
        int64_t dims[8];
        tx_dims(h, 0, dims);
        hl_tensor in[TX_MAX_IO], ref[TX_MAX_IO];
        tx_inputs(h, dims, seed, in);
        tx_ref(h, dims, in, ref);
        /* the mock: compiled, laid out, one graph launched */
        rt_mock *m = rt_mock_new(NULL);
        pg_options o;
        pg_options_default(&o);
        o.mock = m;
        o.backend = PG_BACKEND_GPU;
        pg_program *gp = pg_program_new(plan, g, &o, &e);
        ck_assert_msg(gp, "seed %llu: %s", (unsigned long long)seed, e.msg);
        for (uint32_t d = 0; d < hl_graph_dim_count(h); d++)
            ck_assert_int_eq(pg_program_set_dim(gp, pg_program_dim_name(gp, d), dims[d], &e), 0);
        set_inputs(gp, in, hl_graph_input_count(h));
        ck_assert_msg(pg_program_run(gp, &e) == 0, "seed %llu: %s", (unsigned long long)seed,
                      e.msg);
        pg_variant *v = &gp->gpu->var[0];
        ck_assert_uint_eq(rt_graph_node_count(v->graph), plan->n_steps);
        lm_err ce = {0};
        ck_assert_msg(rt_arena_check(v->abuf, v->n_abuf, NULL, 0, v->aoff, v->data_peak, &ce) == 0,
                      "%s", ce.msg);
        ck_assert_uint_eq(rt_mock_count_since(m, "cuGraphLaunch", 0), 1);
        /* the CPU: the reference's bits (standalone kernels) */
        o.backend = PG_BACKEND_CPU;
        o.mock = NULL;
        pg_program *cp = pg_program_new(plan, g, &o, &e);
        ck_assert_msg(cp, "%s", e.msg);
        for (uint32_t d = 0; d < hl_graph_dim_count(h); d++)
            ck_assert_int_eq(pg_program_set_dim(cp, pg_program_dim_name(cp, d), dims[d], &e), 0);
        set_inputs(cp, in, hl_graph_input_count(h));
        ck_assert_msg(pg_program_run(cp, &e) == 0, "%s", e.msg);
        for (uint32_t k = 0; k < hl_graph_output_count(h); k++) {
            const void *out;
            size_t bytes;
            ck_assert_int_eq(pg_program_output(cp, k, &out, &bytes, &e), 0);
            ck_assert_uint_eq(bytes, ref[k].numel * hl_dtype_size(ref[k].dtype));
            ck_assert_msg(memcmp(out, ref[k].data, bytes) == 0, "seed %llu output %u",
                          (unsigned long long)seed, k);
        }
        /* saved, loaded, saved: the same bytes */
        tmp t;
        tmp_make(&t);
        ck_assert_msg(pg_program_save(gp, t.a, &e) == 0, "%s", e.msg);
        pg_program *lp = cpu_load(t.a);
        ck_assert_msg(pg_program_save(lp, t.b, &e) == 0, "%s", e.msg);
        same_dirs(t.a, t.b);
        pg_program_free(lp);
        rm_tree(t.root);
        pg_program_free(cp);
        pg_program_free(gp);
        rt_mock_free(m);
        tx_free(in, hl_graph_input_count(h));
        tx_free(ref, hl_graph_output_count(h));
        cg_plan_free(plan);
        ll_graph_free(g);
        hl_graph_free(h);
        ran++;
    }
    ck_assert_uint_ge(ran, 8);
}
END_TEST

static Suite *codegen_plans_suite(void)
{
    Suite *s = suite_create("program_codegen_plans");
    rt_nvrtc *nv = NULL;
    lm_err e = {0};
    if (rt_nvrtc_new(NULL, &nv, &e) != 0) lm_check_skip("NVRTC cannot be loaded: %s", e.msg);
    rt_nvrtc_free(nv);
    TCase *tc = tcase_create("plans");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, every_kernel_of_the_examples_compiles_for_sm_90);
    tcase_add_test(tc, generated_graphs_run_on_the_mock_and_the_cpu_and_save_to_the_same_bytes);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {codegen_plans_suite, NULL};
