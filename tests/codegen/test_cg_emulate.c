/* test_cg_emulate.c - the generated kernels run on the CPU (cg_emu.h) against the
 * reference runtime: every example graph, generated graphs, hand-built regions. */
#include "tcg.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cases whose buffers exceed this at their smallest dims (the graphs with static 2048 x
 * 8192 weights lowered kernel by kernel materialise [T, 8192, 2048] products) are only
 * compiled under this label; test_cg_emulate_large emulates them. */
#define EMU_BYTES_MAX (48u << 20)

static const char *const EXAMPLES[] = {
    "causal_attention_bf16", "decode_mlp_bf16", "elementwise_chain_f32_16m", "embedding_gather",
    "layernorm_gelu_f32_4096", "llama_block_bf16", "matmul_bf16_4096", "matmul_f32_2048",
    "primitives_strided", "rmsnorm_f32_8192x4096", "softmax_f32_4096x8192", "swiglu_mlp_bf16",
};
#define N_EXAMPLES (sizeof EXAMPLES / sizeof EXAMPLES[0])

static hl_graph *load_example(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/graphs/%s.json", LUMINAL_SOURCE_DIR, name);
    lm_err e = {0};
    hl_graph *g = hl_graph_load_json(path, &e);
    ck_assert_msg(g != NULL, "%s: %s", path, e.msg);
    return g;
}

static void run_cases(tcg_case *cases, uint32_t n)
{
    const cg_plan *plans[256] = {0};
    ck_assert_uint_le(n, 256);
    for (uint32_t i = 0; i < n; i++)
        plans[i] = cases[i].plan;
    char msg[4096];
    tcg_emu *e = tcg_emu_build(plans, n, msg, sizeof msg);
    if (!e && strncmp(msg, "skip:", 5) == 0) {
        fprintf(stderr, "%s\n", msg);
        return;
    }
    ck_assert_msg(e != NULL, "%s", msg);
    uint32_t bad = 0, ran = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *only = getenv("TCG_ONLY");
        if (only && !strstr(cases[i].name, only)) continue;
        uint64_t bytes = tcg_case_bytes(&cases[i]);
        if (bytes > EMU_BYTES_MAX) {
            fprintf(stderr, "  %-40s not emulated: %.0f MB of buffers at its smallest dims\n",
                    cases[i].name, bytes / 1e6);
            continue;
        }
        double t0 = lm_now_s();
        bool ok = tcg_check_case(e, &cases[i], 7, false, msg, sizeof msg);
        fprintf(stderr, "  %-40s %s (%.1f s)\n", cases[i].name, ok ? "ok" : "FAILED", lm_now_s() - t0);
        if (!ok) {
            fprintf(stderr, "%s\n", msg);
            bad++;
        }
        ran++;
    }
    tcg_emu_free(e);
    ck_assert_msg(bad == 0, "%u of %u emulated cases failed", bad, ran);
}

START_TEST(examples_as_standalone_kernels_match_the_reference)
{
    tcg_case cases[N_EXAMPLES];
    char msg[2048];
    for (uint32_t i = 0; i < N_EXAMPLES; i++)
        ck_assert_msg(tcg_case_init(&cases[i], EXAMPLES[i], load_example(EXAMPLES[i]), TCG_KERNELS, 5,
                                    msg, sizeof msg),
                      "%s", msg);
    run_cases(cases, N_EXAMPLES);
    for (uint32_t i = 0; i < N_EXAMPLES; i++)
        tcg_case_free(&cases[i]);
}
END_TEST

START_TEST(examples_fused_match_the_reference)
{
    tcg_case cases[2 * N_EXAMPLES];
    char msg[2048];
    uint32_t n = 0;
    for (int blas = 0; blas < 2; blas++)
        for (uint32_t i = 0; i < N_EXAMPLES; i++) {
            char name[96];
            snprintf(name, sizeof name, "%s/%s", EXAMPLES[i], blas ? "blas" : "fused");
            ck_assert_msg(tcg_case_init(&cases[n], name, load_example(EXAMPLES[i]),
                                        blas ? TCG_BLAS : TCG_FUSED, 5, msg, sizeof msg),
                          "%s", msg);
            n++;
        }
    run_cases(cases, n);
    for (uint32_t i = 0; i < n; i++)
        tcg_case_free(&cases[i]);
}
END_TEST

/* Hand-built regions, row regions, matmuls, gathers and scatters, each lowered kernel by
 * kernel and fused, at their profile dims and at other dim values. */
START_TEST(hand_built_graphs_match_the_reference)
{
    uint32_t nh = tcg_hand_count();
    tcg_case cases[64];
    char msg[2048];
    uint32_t n = 0;
    for (int f = 0; f < 3; f++)
        for (uint32_t i = 0; i < nh && n < 64; i++) {
            const char *name;
            hl_graph *g = tcg_hand(i, &name);
            char cn[96];
            static const char *fs[3] = {"kernels", "fused", "blas"};
            snprintf(cn, sizeof cn, "%s/%s", name, fs[f]);
            if (f == 2 && !strstr(name, "matmul")) {
                hl_graph_free(g);
                continue;
            }
            ck_assert_msg(tcg_case_init(&cases[n], cn, g, (tcg_fuse)f, 0, msg, sizeof msg), "%s", msg);
            n++;
        }
    run_cases(cases, n);
    /* other dim values: 1, and odd sizes */
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < hl_graph_dim_count(cases[i].g); d++) {
            const hl_dim *dim = hl_graph_dim_at(cases[i].g, d);
            cases[i].dims[d] = dim->lo;
        }
    run_cases(cases, n);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < hl_graph_dim_count(cases[i].g); d++) {
            const hl_dim *dim = hl_graph_dim_at(cases[i].g, d);
            int64_t v = dim->profile * 2 + 3;
            cases[i].dims[d] = v > dim->hi ? dim->hi : v;
        }
    run_cases(cases, n);
    for (uint32_t i = 0; i < n; i++)
        tcg_case_free(&cases[i]);
}
END_TEST

/* Graphs of hl_graph_generate (views, broadcasts, reductions, softmax and norms, matmuls,
 * gathers, scatters, pads, concats), kernel by kernel and fused. */
START_TEST(generated_graphs_match_the_reference)
{
    static tcg_case cases[200];
    char msg[2048];
    uint32_t n = 0;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        hl_gen_opts o = {0};
        o.dynamic = seed % 2 == 0;
        for (int f = 0; f < 2; f++) {
            lm_err he = {0};
            hl_graph *g = hl_graph_generate(seed, &o, &he);
            ck_assert_msg(g != NULL, "generate %llu: %s", (unsigned long long)seed, he.msg);
            char name[64];
            snprintf(name, sizeof name, "gen%llu/%s", (unsigned long long)seed, f ? "fused" : "kernels");
            ck_assert_msg(tcg_case_init(&cases[n], name, g, f ? TCG_FUSED : TCG_KERNELS, 0, msg,
                                        sizeof msg),
                          "%s", msg);
            n++;
        }
    }
    run_cases(cases, n);
    for (uint32_t i = 0; i < n; i++)
        tcg_case_free(&cases[i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("codegen_emulate");
    TCase *tc = tcase_create("emulate");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, examples_as_standalone_kernels_match_the_reference);
    tcase_add_test(tc, examples_fused_match_the_reference);
    tcase_add_test(tc, hand_built_graphs_match_the_reference);
    tcase_add_test(tc, generated_graphs_match_the_reference);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
