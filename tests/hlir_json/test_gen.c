/* test_gen.c - the seeded random-graph generator: its graphs are valid, survive a JSON
 * round trip byte for byte, and run on the reference runtime to the same bytes before
 * and after the round trip, with the dynamic dim at its profile value, max and min. */
#include "tj.h"
#include "lm_check.h"

static hl_graph *gen(uint64_t seed, bool dynamic, uint32_t n_ops)
{
    hl_gen_opts o = {n_ops, 6, dynamic};
    lm_err e;
    lm_err_clear(&e);
    hl_graph *g = hl_graph_generate(seed, &o, &e);
    ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, e.msg);
    return g;
}

/* Generated graphs load, write, reload (same bytes) and run to the same outputs. */
START_TEST(generated_graphs_round_trip_and_run)
{
    uint32_t ops_seen[HL_OP_COUNT] = {0};
    for (uint64_t seed = 0; seed < 120; seed++) {
        hl_graph *g1 = gen(seed, seed % 2 == 1, 14);
        lm_err e;
        lm_err_clear(&e);
        ck_assert_msg(hl_graph_check(g1, &e) == HL_OK, "seed %llu: %s", (unsigned long long)seed,
                      e.msg);
        for (uint32_t i = 0; i < hl_graph_node_count(g1); i++)
            ops_seen[hl_graph_node(g1, i)->op]++;
        char *s1 = tj_write(g1);
        hl_graph *g2 = tj_read(s1);
        char *s2 = tj_write(g2);
        ck_assert_msg(strcmp(s1, s2) == 0, "seed %llu: rewrite differs", (unsigned long long)seed);
        for (int setting = 0; setting < 3; setting++) {
            int64_t vals[4];
            for (uint32_t d = 0; d < hl_graph_dim_count(g1); d++) {
                const hl_dim *dim = hl_graph_dim_at(g1, d);
                vals[d] = setting == 0 ? dim->profile : setting == 1 ? dim->hi : dim->lo;
            }
            hl_tensor *in = tj_inputs(g1, vals, seed);
            hl_tensor *o1 = tj_run(g1, vals, in), *o2 = tj_run(g2, vals, in);
            tj_same_outputs(o1, o2, hl_graph_output_count(g1));
            tj_free_tensors(o1, hl_graph_output_count(g1));
            tj_free_tensors(o2, hl_graph_output_count(g1));
            tj_free_tensors(in, hl_graph_input_count(g1));
        }
        free(s1);
        free(s2);
        hl_graph_free(g1);
        hl_graph_free(g2);
    }
    /* the generator reaches every primitive */
    for (int op = 0; op < HL_OP_COUNT; op++)
        ck_assert_msg(ops_seen[op] > 0, "no generated graph used %s", hl_op_name((hl_op)op));
}
END_TEST

START_TEST(same_seed_gives_same_graph)
{
    hl_graph *a = gen(77, true, 20), *b = gen(77, true, 20);
    char *sa = tj_write(a), *sb = tj_write(b);
    ck_assert_str_eq(sa, sb);
    free(sa);
    free(sb);
    hl_graph_free(a);
    hl_graph_free(b);
}
END_TEST

START_TEST(different_seeds_give_different_graphs)
{
    char *texts[10];
    for (int i = 0; i < 10; i++) {
        hl_graph *g = gen((uint64_t)i + 1000, false, 12);
        texts[i] = tj_write(g);
        hl_graph_free(g);
    }
    int distinct = 0;
    for (int i = 0; i < 10; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= strcmp(texts[i], texts[j]) == 0;
        distinct += !seen;
    }
    ck_assert_int_ge(distinct, 9);
    for (int i = 0; i < 10; i++)
        free(texts[i]);
}
END_TEST

START_TEST(null_options_use_defaults)
{
    lm_err e;
    lm_err_clear(&e);
    hl_graph *g = hl_graph_generate(5, NULL, &e);
    ck_assert_msg(g != NULL, "%s", e.msg);
    ck_assert_uint_ge(hl_graph_output_count(g), 1);
    ck_assert_uint_eq(hl_graph_dim_count(g), 0);
    hl_graph_free(g);
}
END_TEST

/* With the largest dims the generator takes, inputs are often too large for its pool
 * (GEN_MAX_NUMEL); it draws them again, so every seed still gives a valid graph with an
 * output (seed 2 of the --dynamic --ops 40 --max-dim 64 setting crashed before). */
START_TEST(the_largest_dims_still_give_a_graph)
{
    for (uint64_t seed = 0; seed < 64; seed++) {
        hl_gen_opts o = {40, 64, seed % 2 == 0};
        lm_err e;
        lm_err_clear(&e);
        hl_graph *g = hl_graph_generate(seed, &o, &e);
        ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, e.msg);
        ck_assert_uint_ge(hl_graph_output_count(g), 1);
        ck_assert_int_eq(hl_graph_check(g, &e), HL_OK);
        hl_graph_free(g);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hlir_json_gen");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, generated_graphs_round_trip_and_run);
    tcase_add_test(tc, same_seed_gives_same_graph);
    tcase_add_test(tc, different_seeds_give_different_graphs);
    tcase_add_test(tc, null_options_use_defaults);
    tcase_add_test(tc, the_largest_dims_still_give_a_graph);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
