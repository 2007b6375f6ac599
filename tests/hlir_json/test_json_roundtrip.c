/* test_json_roundtrip.c - the JSON graph format reads, writes and reads back the same
 * graph: every bundled example, explicit-view primitives, dims, constants; and the
 * graphs it reads compute what their text says. */
#include "tj.h"
#include "lm_check.h"

#include <math.h>

/* Every example: load, write, read the text, write again: same bytes, same dump, and
 * the canonical text has only primitives. */
START_TEST(every_example_round_trips_to_identical_bytes)
{
    size_t n;
    char **names = tj_examples(&n);
    ck_assert_uint_ge(n, 10);
    for (size_t i = 0; i < n; i++) {
        hl_graph *g1 = tj_load_example(names[i]);
        lm_err e;
        lm_err_clear(&e);
        ck_assert_msg(hl_graph_check(g1, &e) == HL_OK, "%s: %s", names[i], e.msg);
        char *s1 = tj_write(g1);
        hl_graph *g2 = tj_read(s1);
        char *s2 = tj_write(g2);
        ck_assert_msg(strcmp(s1, s2) == 0, "%s: second write differs", names[i]);
        char *d1 = tj_dump(g1), *d2 = tj_dump(g2);
        ck_assert_msg(strcmp(d1, d2) == 0, "%s: graphs differ:\n%s\nvs\n%s", names[i], d1, d2);
        ck_assert_uint_eq(hl_graph_node_count(g1), hl_graph_node_count(g2));
        ck_assert_ptr_null(strstr(s1, "\"matmul\""));
        ck_assert_ptr_null(strstr(s1, "\"softmax\""));
        free(d1);
        free(d2);
        free(s1);
        free(s2);
        hl_graph_free(g1);
        hl_graph_free(g2);
    }
    tj_free_list(names, n);
}
END_TEST

/* The read-back graph computes the same bytes as the original, on every example small
 * enough to run here (dims at 3; the large static MLPs are run by the slow tool test). */
START_TEST(every_small_example_runs_the_same_after_round_trip)
{
    size_t n;
    char **names = tj_examples(&n);
    size_t ran = 0;
    for (size_t i = 0; i < n; i++) {
        hl_graph *g1 = tj_load_example(names[i]);
        int64_t vals[16];
        tj_dims(g1, 3, vals);
        if (tj_largest_node(g1, vals) > (1 << 18)) {
            hl_graph_free(g1);
            continue;
        }
        char *s = tj_write(g1);
        hl_graph *g2 = tj_read(s);
        hl_tensor *in = tj_inputs(g1, vals, 42);
        hl_tensor *o1 = tj_run(g1, vals, in), *o2 = tj_run(g2, vals, in);
        tj_same_outputs(o1, o2, hl_graph_output_count(g1));
        ran++;
        tj_free_tensors(o1, hl_graph_output_count(g1));
        tj_free_tensors(o2, hl_graph_output_count(g2));
        tj_free_tensors(in, hl_graph_input_count(g1));
        free(s);
        hl_graph_free(g1);
        hl_graph_free(g2);
    }
    ck_assert_uint_ge(ran, 8);
    tj_free_list(names, n);
}
END_TEST

/* primitives_strided.json: y[i] = sum_j (a[i, j] + b[j, i]) + 2 i, by hand. */
START_TEST(explicit_view_primitives_compute_as_written)
{
    hl_graph *g = tj_load_example("primitives_strided.json");
    double a[12], b[12];
    for (int i = 0; i < 12; i++) {
        a[i] = i * 0.5 - 2;
        b[i] = (i % 5) * 0.25;
    }
    int64_t da[2] = {4, 3}, db[2] = {3, 4};
    hl_tensor in[2];
    lm_err e;
    lm_err_clear(&e);
    ck_assert(hl_tensor_init(&in[0], HL_F32, 2, da, &e) == HL_OK);
    ck_assert(hl_tensor_init(&in[1], HL_F32, 2, db, &e) == HL_OK);
    for (int i = 0; i < 12; i++) {
        hl_tensor_set(&in[0], (size_t)i, a[i]);
        hl_tensor_set(&in[1], (size_t)i, b[i]);
    }
    hl_tensor out[1];
    ck_assert_msg(hl_run(g, NULL, in, out, NULL, &e) == HL_OK, "%s", e.msg);
    ck_assert_uint_eq(out[0].numel, 4);
    for (int i = 0; i < 4; i++) {
        double want = 2.0 * i;
        for (int j = 0; j < 3; j++)
            want += a[i * 3 + j] + b[j * 4 + i];
        ck_assert_double_eq_tol(hl_tensor_get(&out[0], (size_t)i), want, 1e-5);
    }
    hl_tensor_fini(&out[0]);
    hl_tensor_fini(&in[0]);
    hl_tensor_fini(&in[1]);
    hl_graph_free(g);
}
END_TEST

/* A high-level graph computes what its ops say: exp(x)*y + sin(x)/(1+y*y). */
START_TEST(elementwise_chain_matches_libm)
{
    hl_graph *g = tj_load_example("elementwise_chain_f32_16m.json");
    int64_t vals[1] = {5};
    hl_tensor *in = tj_inputs(g, vals, 3);
    hl_tensor *out = tj_run(g, vals, in);
    for (size_t i = 0; i < 5; i++) {
        double x = hl_tensor_get(&in[0], i), y = hl_tensor_get(&in[1], i);
        double want = exp(x) * y + sin(x) / (1 + y * y);
        ck_assert_double_eq_tol(hl_tensor_get(&out[0], i), want, 1e-5);
    }
    tj_free_tensors(out, 1);
    tj_free_tensors(in, 2);
    hl_graph_free(g);
}
END_TEST

/* Nodes may be listed in any order: the reader sorts them, earliest ready first. */
START_TEST(nodes_in_any_order_give_the_same_graph)
{
    const char *fwd = "{\"format\":\"luminal-graph\",\"version\":1,"
                      "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,3]}],"
                      "\"nodes\":[{\"name\":\"a\",\"op\":\"exp\",\"inputs\":[\"x\"]},"
                      "{\"name\":\"b\",\"op\":\"softmax\",\"inputs\":[\"a\"]},"
                      "{\"name\":\"c\",\"op\":\"mul\",\"inputs\":[\"a\",\"b\"]}],"
                      "\"outputs\":[\"c\"]}";
    const char *rev = "{\"format\":\"luminal-graph\",\"version\":1,"
                      "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,3]}],"
                      "\"nodes\":[{\"name\":\"c\",\"op\":\"mul\",\"inputs\":[\"a\",\"b\"]},"
                      "{\"name\":\"b\",\"op\":\"softmax\",\"inputs\":[\"a\"]},"
                      "{\"name\":\"a\",\"op\":\"exp\",\"inputs\":[\"x\"]}],"
                      "\"outputs\":[\"c\"]}";
    hl_graph *g1 = tj_read(fwd), *g2 = tj_read(rev);
    char *s1 = tj_write(g1), *s2 = tj_write(g2);
    ck_assert_str_eq(s1, s2);
    free(s1);
    free(s2);
    hl_graph_free(g1);
    hl_graph_free(g2);
}
END_TEST

/* Dims keep their ranges and profile values through a round trip. */
START_TEST(dims_keep_range_and_profile)
{
    hl_graph *g = tj_load_example("swiglu_mlp_bf16.json");
    ck_assert_uint_eq(hl_graph_dim_count(g), 1);
    const hl_dim *d = hl_graph_dim_find(g, "T");
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(d->lo, 1);
    ck_assert_int_eq(d->hi, 4096);
    ck_assert_int_eq(d->profile, 512);
    char *s = tj_write(g);
    ck_assert_ptr_nonnull(strstr(s, "{\"name\":\"T\",\"min\":1,\"max\":4096,\"profile\":512}"));
    hl_graph *g2 = tj_read(s);
    const hl_dim *d2 = hl_graph_dim_find(g2, "T");
    ck_assert_ptr_nonnull(d2);
    ck_assert_int_eq(d2->profile, 512);
    free(s);
    hl_graph_free(g);
    hl_graph_free(g2);
}
END_TEST

/* Constants: the writer's shortest decimal reads back to the same f32 bits, and the
 * values JSON cannot hold are written as strings. */
START_TEST(constants_round_trip_bit_exact)
{
    const float vals[] = {0.1f,   1e-30f,   -0.0f,     3.4028235e38f, 1.0f / 3.0f,
                          1e-45f, INFINITY, -INFINITY, 123456789.0f};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        hl_graph *g = hl_graph_new();
        hl_t c = hl_scalar(g, vals[i], HL_F32);
        ck_assert_uint_ne(hl_output(g, "y", c), HL_NONE);
        char *s = tj_write(g);
        hl_graph *g2 = tj_read(s);
        const hl_node *n = NULL;
        for (uint32_t k = 0; k < hl_graph_node_count(g2); k++)
            if (hl_graph_node(g2, k)->op == HL_OP_CONSTANT) n = hl_graph_node(g2, k);
        ck_assert_ptr_nonnull(n);
        ck_assert_msg(memcmp(&n->constant, &vals[i], sizeof(float)) == 0,
                      "constant %.9g came back as %.9g (%s)", (double)vals[i], (double)n->constant,
                      s);
        free(s);
        hl_graph_free(g);
        hl_graph_free(g2);
    }
    /* NaN is written as "nan" and read back as a NaN */
    hl_graph *g = hl_graph_new();
    ck_assert_uint_ne(hl_output(g, "y", hl_scalar(g, NAN, HL_F32)), HL_NONE);
    char *s = tj_write(g);
    ck_assert_ptr_nonnull(strstr(s, "\"nan\""));
    hl_graph *g2 = tj_read(s);
    ck_assert(isnan(hl_graph_node(g2, 0)->constant));
    free(s);
    hl_graph_free(g);
    hl_graph_free(g2);
}
END_TEST

/* Output objects: a renamed output, and an output reading through an explicit view. */
START_TEST(outputs_may_rename_and_take_a_view)
{
    const char *t = "{\"format\":\"luminal-graph\",\"version\":1,"
                    "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,3]}],"
                    "\"nodes\":[{\"name\":\"a\",\"op\":\"exp2\",\"inputs\":[\"x\"]}],"
                    "\"outputs\":[{\"name\":\"first\",\"tensor\":\"a\"},"
                    "{\"name\":\"col\",\"tensor\":\"a\",\"shape\":[2],\"strides\":[\"3*z\"]}]}";
    hl_graph *g = tj_read(t);
    ck_assert_uint_eq(hl_graph_output_count(g), 2);
    ck_assert_str_eq(hl_graph_node(g, hl_graph_output(g, 1))->name, "col");
    int64_t none[1] = {0};
    hl_tensor *in = tj_inputs(g, none, 9);
    hl_tensor *out = tj_run(g, none, in);
    ck_assert_uint_eq(out[1].numel, 2);
    ck_assert_double_eq_tol(hl_tensor_get(&out[1], 1), exp2(hl_tensor_get(&in[0], 3)), 1e-5);
    tj_free_tensors(out, 2);
    tj_free_tensors(in, 1);
    hl_graph_free(g);
}
END_TEST

/* The writer refuses a graph whose builder failed, with a message. */
START_TEST(writer_refuses_a_graph_with_a_builder_error)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 3)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d);
    hl_t y = hl_input(g, "y", HL_INT, 1, d);
    hl_t bad = hl_add(g, x, y); /* dtype mismatch */
    ck_assert_uint_eq(bad.node, HL_NONE);
    lm_err e;
    lm_err_clear(&e);
    ck_assert_ptr_null(hl_graph_write_json(g, &e));
    ck_assert_int_eq(e.code, HL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(e.msg, "builder error"));
    hl_graph_free(g);
}
END_TEST

/* The writer refuses what the reader would refuse: a graph without outputs. */
START_TEST(writer_refuses_a_graph_without_outputs)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 3)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d);
    ck_assert_uint_ne(hl_exp2(g, x).node, HL_NONE);
    lm_err e;
    lm_err_clear(&e);
    ck_assert_ptr_null(hl_graph_write_json(g, &e));
    ck_assert_int_eq(e.code, HL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(e.msg, "without outputs"));
    hl_graph_free(g);
}
END_TEST

/* The symbolic checks bind every declared dim, however many there are (they once saw
 * only the first 64). */
START_TEST(a_graph_with_many_dims_uses_its_last_one)
{
    char text[8192];
    int k =
        snprintf(text, sizeof text, "{\"format\": \"luminal-graph\", \"version\": 1, \"dims\": [");
    for (int d = 0; d < 70; d++)
        k += snprintf(text + k, sizeof text - (size_t)k,
                      "%s{\"name\": \"d%d\", \"min\": 1, \"max\": 4}", d ? ", " : "", d);
    snprintf(text + k, sizeof text - (size_t)k,
             "], \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"d69\", 2]}], "
             "\"nodes\": [{\"name\": \"y\", \"op\": \"reshape\", \"inputs\": [\"x\"], "
             "\"shape\": [\"2*d69\"]}], \"outputs\": [\"y\"]}");
    hl_graph *g = tj_read(text);
    ck_assert_uint_eq(hl_graph_dim_count(g), 70);
    hl_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hlir_json_roundtrip");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_example_round_trips_to_identical_bytes);
    tcase_add_test(tc, every_small_example_runs_the_same_after_round_trip);
    tcase_add_test(tc, explicit_view_primitives_compute_as_written);
    tcase_add_test(tc, elementwise_chain_matches_libm);
    tcase_add_test(tc, nodes_in_any_order_give_the_same_graph);
    tcase_add_test(tc, dims_keep_range_and_profile);
    tcase_add_test(tc, constants_round_trip_bit_exact);
    tcase_add_test(tc, outputs_may_rename_and_take_a_view);
    tcase_add_test(tc, writer_refuses_a_graph_with_a_builder_error);
    tcase_add_test(tc, writer_refuses_a_graph_without_outputs);
    tcase_add_test(tc, a_graph_with_many_dims_uses_its_last_one);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
