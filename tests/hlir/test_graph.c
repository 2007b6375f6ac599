/* test_graph.c - the graph's checked primitive door (hl_graph_add): every rule it enforces
 * gives an error naming the node, the op and the reason; dims; op names; the checker. */
#include "th.h"
#include "lm_check.h"

static hl_graph *G;
static void setup(void)
{
    G = hl_graph_new();
}
static void teardown(void)
{
    hl_graph_free(G);
}

static hl_node spec(hl_op op)
{
    hl_node s;
    memset(&s, 0, sizeof s);
    s.op = op;
    return s;
}

static hl_in edge(hl_t t)
{
    hl_in e = {t.node, t.view};
    return e;
}

static hl_t vec(const char *name, hl_dtype dt, int64_t n)
{
    hl_expr d[1] = {hl_n(G, n)};
    return hl_input(G, name, dt, 1, d);
}

/* Adds s, expects failure with code and a message containing want; clears the error. */
static void rejects(const hl_node *s, hl_status code, const char *want)
{
    uint32_t n = hl_graph_node_count(G);
    ck_assert_uint_eq(hl_graph_add(G, s), HL_NONE);
    const lm_err *e = hl_graph_error(G);
    ck_assert_msg(e->code == (int)code, "code %d (%s), want %d", e->code, e->msg, code);
    ck_assert_msg(strstr(e->msg, want) != NULL, "message '%s' lacks '%s'", e->msg, want);
    ck_assert_uint_eq(hl_graph_node_count(G), n);
    hl_graph_clear_error(G);
}

START_TEST(op_names_round_trip_and_arity)
{
    for (int op = 0; op < HL_OP_COUNT; op++) {
        hl_op back;
        ck_assert_int_eq(hl_op_parse(hl_op_name((hl_op)op), &back), 0);
        ck_assert_int_eq(back, op);
    }
    hl_op o;
    ck_assert_int_eq(hl_op_parse("Matmul", &o), -1);
    ck_assert_uint_eq(hl_op_arity(HL_OP_SCATTER), 3);
    ck_assert_uint_eq(hl_op_arity(HL_OP_LESS_THAN), 2);
    ck_assert_uint_eq(hl_op_arity(HL_OP_IOTA), 0);
    ck_assert_str_eq(hl_op_name(HL_OP_SUM_REDUCE), "SumReduce");
}
END_TEST

START_TEST(negative_input_dim_is_rejected)
{
    hl_node s = spec(HL_OP_INPUT);
    s.name = "x";
    s.dtype = HL_F32;
    s.ndim = 2;
    s.shape[0] = hl_n(G, 4);
    s.shape[1] = hl_n(G, -3);
    rejects(&s, HL_ERR_SHAPE, "dim 1 is negative");
}
END_TEST

START_TEST(wrong_arity_is_rejected)
{
    hl_t a = vec("a", HL_F32, 3);
    hl_node s = spec(HL_OP_ADD);
    s.n_in = 1;
    s.in[0] = edge(a);
    rejects(&s, HL_ERR_ARG, "takes 2 inputs, given 1");
}
END_TEST

START_TEST(forward_reference_is_rejected)
{
    hl_node s = spec(HL_OP_EXP2);
    s.n_in = 1;
    s.in[0].node = 7;
    rejects(&s, HL_ERR_ARG, "not an earlier node");
}
END_TEST

START_TEST(reading_an_output_is_rejected)
{
    hl_t a = vec("a", HL_F32, 3);
    uint32_t o = hl_output(G, "o", a);
    hl_node s = spec(HL_OP_EXP2);
    s.n_in = 1;
    s.in[0].node = o;
    s.in[0].view = a.view;
    rejects(&s, HL_ERR_ARG, "is an Output");
}
END_TEST

START_TEST(binary_view_dims_must_agree)
{
    hl_t a = vec("a", HL_F32, 3), b = vec("b", HL_F32, 4);
    hl_node s = spec(HL_OP_MUL);
    s.n_in = 2;
    s.in[0] = edge(a);
    s.in[1] = edge(b);
    rejects(&s, HL_ERR_SHAPE, "input shapes [3] and [4] differ");
}
END_TEST

START_TEST(binary_dtypes_must_agree)
{
    hl_t a = vec("a", HL_F32, 3), b = vec("b", HL_BF16, 3);
    hl_node s = spec(HL_OP_ADD);
    s.n_in = 2;
    s.in[0] = edge(a);
    s.in[1] = edge(b);
    rejects(&s, HL_ERR_DTYPE, "(f32 and bf16)");
}
END_TEST

START_TEST(bool_arithmetic_is_rejected)
{
    hl_t a = vec("a", HL_BOOL, 3);
    hl_node s = spec(HL_OP_ADD);
    s.n_in = 2;
    s.in[0] = edge(a);
    s.in[1] = edge(a);
    rejects(&s, HL_ERR_DTYPE, "Bool");
    s.op = HL_OP_SUM_REDUCE;
    s.n_in = 1;
    rejects(&s, HL_ERR_DTYPE, "Bool");
}
END_TEST

START_TEST(gather_indexes_must_be_int)
{
    hl_t a = vec("a", HL_F32, 3);
    hl_node s = spec(HL_OP_GATHER);
    s.n_in = 2;
    s.in[0] = edge(a);
    s.in[1] = edge(a);
    rejects(&s, HL_ERR_DTYPE, "indexes must be int");
}
END_TEST

START_TEST(scatter_src_must_match_indexes_and_dest)
{
    hl_t d = vec("d", HL_F32, 5), i = vec("i", HL_INT, 2), s3 = vec("s", HL_F32, 3),
         h = vec("h", HL_F16, 2);
    hl_node s = spec(HL_OP_SCATTER);
    s.n_in = 3;
    s.in[0] = edge(d);
    s.in[1] = edge(i);
    s.in[2] = edge(s3);
    rejects(&s, HL_ERR_SHAPE, "indexes and src shapes differ");
    s.in[2] = edge(h);
    rejects(&s, HL_ERR_DTYPE, "dest is f32 but src is f16");
}
END_TEST

START_TEST(reduce_axis_must_be_in_range)
{
    hl_t a = vec("a", HL_F32, 3);
    hl_node s = spec(HL_OP_MAX_REDUCE);
    s.n_in = 1;
    s.in[0] = edge(a);
    s.axis = 1;
    rejects(&s, HL_ERR_ARG, "axis 1 out of range");
}
END_TEST

START_TEST(unary_math_needs_float)
{
    hl_t a = vec("a", HL_INT, 3);
    hl_node s = spec(HL_OP_SQRT);
    s.n_in = 1;
    s.in[0] = edge(a);
    rejects(&s, HL_ERR_DTYPE, "needs a float input");
}
END_TEST

START_TEST(views_may_only_use_declared_dims)
{
    hl_t a = vec("a", HL_F32, 3);
    hl_node s = spec(HL_OP_EXP2);
    s.n_in = 1;
    s.in[0] = edge(a);
    s.in[0].view.dims[0] = hl_e_var(hl_graph_exprs(G), "ghost");
    rejects(&s, HL_ERR_DIM, "'ghost' is not declared");
    s.in[0].view.dims[0] = 123456;
    rejects(&s, HL_ERR_DIM, "not in the graph's pool");
}
END_TEST

START_TEST(iota_length_may_not_use_z)
{
    hl_node s = spec(HL_OP_IOTA);
    s.iota_expr = hl_e_z(hl_graph_exprs(G));
    s.iota_len = s.iota_expr;
    rejects(&s, HL_ERR_SHAPE, "length uses z");
}
END_TEST

START_TEST(names_are_required_and_unique)
{
    vec("a", HL_F32, 3);
    hl_node s = spec(HL_OP_INPUT);
    s.dtype = HL_F32;
    rejects(&s, HL_ERR_ARG, "needs a name");
    s.name = "a";
    rejects(&s, HL_ERR_ARG, "'a' is already used");
    hl_t b = vec("b", HL_F32, 3);
    ck_assert_uint_ne(hl_output(G, "y", b), HL_NONE);
    ck_assert_uint_eq(hl_output(G, "y", b), HL_NONE);
    ck_assert_ptr_nonnull(strstr(hl_graph_error(G)->msg, "'y'"));
}
END_TEST

START_TEST(dims_are_validated)
{
    ck_assert_uint_ne(hl_graph_dim(G, "seq", 1, 4096, 512), HL_NONE);
    ck_assert_uint_eq(hl_graph_dim(G, "seq", 1, 8, 2), HL_NONE);
    ck_assert_ptr_nonnull(strstr(hl_graph_error(G)->msg, "declared twice"));
    hl_graph_clear_error(G);
    ck_assert_uint_eq(hl_graph_dim(G, "n", 0, 8, 2), HL_NONE);
    hl_graph_clear_error(G);
    ck_assert_uint_eq(hl_graph_dim(G, "m", 4, 8, 9), HL_NONE);
    hl_graph_clear_error(G);
    ck_assert_uint_eq(hl_graph_dim(G, "2x", 1, 8, 2), HL_NONE);
    hl_graph_clear_error(G);
    ck_assert_uint_eq(hl_graph_dim_count(G), 1);
    const hl_dim *d = hl_graph_dim_find(G, "seq");
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(d->hi, 4096);
    ck_assert_int_eq(d->profile, 512);
    ck_assert_ptr_null(hl_graph_dim_find(G, "nope"));
}
END_TEST

START_TEST(inputs_and_outputs_are_listed_in_order)
{
    hl_t a = vec("a", HL_F32, 3), b = vec("b", HL_F32, 3);
    hl_output(G, "second", b);
    hl_output(G, "first", a);
    ck_assert_uint_eq(hl_graph_input_count(G), 2);
    ck_assert_uint_eq(hl_graph_input(G, 1), b.node);
    ck_assert_uint_eq(hl_graph_output_count(G), 2);
    const hl_node *o = hl_graph_node(G, hl_graph_output(G, 0));
    ck_assert_str_eq(o->name, "second");
    ck_assert_uint_eq(o->index, 0);
    th_graph_ok(G);
}
END_TEST

START_TEST(explicit_strides_through_the_door_run)
{
    /* a primitive built by hand: Add reading x through a transposed view of itself */
    hl_expr d[2] = {hl_n(G, 2), hl_n(G, 2)};
    hl_t x = hl_input(G, "x", HL_F32, 2, d);
    hl_t xt = hl_transpose(G, x, 0, 1);
    hl_node s = spec(HL_OP_ADD);
    s.n_in = 2;
    s.in[0] = edge(x);
    s.in[1] = edge(xt);
    uint32_t id = hl_graph_add(G, &s);
    ck_assert_uint_ne(id, HL_NONE);
    hl_output(G, "y", hl_node_tensor(G, id));
    th_graph_ok(G);
    int64_t dims[2] = {2, 2};
    hl_tensor in[1] = {th_tensor(HL_F32, 2, dims, (double[]){1, 2, 3, 4})}, out[1];
    th_run(G, NULL, in, out);
    th_expect(&out[0], (double[]){2, 5, 5, 8}, 4, 0);
    th_free(out, 1);
    th_free(in, 1);
}
END_TEST

/* Nodes remember the user's node they were made for; the builder's errors and the
 * reference runtime's name it (file, line, column, name, op), not an internal number. */
START_TEST(origins_name_the_users_node_in_builder_and_runtime_errors)
{
    ck_assert_int_eq(hl_graph_set_source(G, "g.json"), HL_OK);
    hl_expr d3[1] = {hl_n(G, 3)}, d4[1] = {hl_n(G, 4)};
    ck_assert_uint_ne(hl_graph_begin_origin(G, "x", "input", 2, 5), HL_NONE);
    hl_t x = hl_input(G, "x", HL_F32, 1, d3);
    ck_assert_uint_ne(hl_graph_begin_origin(G, "ids", "input", 3, 5), HL_NONE);
    hl_t ids = hl_input(G, "ids", HL_INT, 1, d4);
    ck_assert_uint_ne(hl_graph_begin_origin(G, "g", "take", 7, 9), HL_NONE);
    hl_t gathered = hl_gather(G, ids, x);
    hl_graph_end_origin(G);
    hl_output(G, "y", gathered);
    th_graph_ok(G);
    const hl_origin *o = hl_graph_node_origin(G, gathered.node);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(o->name, "g");
    ck_assert_str_eq(o->op, "take");
    ck_assert_uint_eq(o->line, 7);
    ck_assert_ptr_null(hl_graph_node_origin(G, hl_graph_output(G, 0))); /* after the end */
    /* the runtime: an index out of range */
    int64_t dx[1] = {3}, di[1] = {4};
    hl_tensor in[2] = {th_tensor(HL_F32, 1, dx, NULL),
                       th_tensor(HL_INT, 1, di, (double[]){0, 1, 5, 2})},
              out[1];
    lm_err err = {0};
    ck_assert_int_eq(hl_run(G, NULL, in, out, NULL, &err), HL_ERR_RUNTIME);
    ck_assert_str_eq(err.file, "g.json");
    ck_assert_str_eq(err.node, "g");
    ck_assert_uint_eq(err.line, 7);
    ck_assert_uint_eq(err.col, 9);
    ck_assert_uint_eq(err.node_id, gathered.node);
    ck_assert_msg(strstr(err.msg, "g.json:7:9: node 'g': take (lowered to Gather): index 5") ==
                      err.msg,
                  "%s", err.msg);
    th_free(in, 2);
    /* the builder: a failed call under an origin is located there */
    ck_assert_uint_ne(hl_graph_begin_origin(G, "bad", "add", 9, 3), HL_NONE);
    ck_assert_uint_eq(hl_add(G, x, ids).node, HL_NONE);
    const lm_err *be = hl_graph_error(G);
    ck_assert_str_eq(be->node, "bad");
    ck_assert_uint_eq(be->line, 9);
    ck_assert_msg(strstr(be->msg, "g.json:9:3: node 'bad': ") == be->msg, "%s", be->msg);
}
END_TEST

static Suite *hlir_graph_suite(void)
{
    Suite *s = suite_create("hlir_graph");
    TCase *tc = tcase_create("graph");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, op_names_round_trip_and_arity);
    tcase_add_test(tc, wrong_arity_is_rejected);
    tcase_add_test(tc, negative_input_dim_is_rejected);
    tcase_add_test(tc, forward_reference_is_rejected);
    tcase_add_test(tc, reading_an_output_is_rejected);
    tcase_add_test(tc, binary_view_dims_must_agree);
    tcase_add_test(tc, binary_dtypes_must_agree);
    tcase_add_test(tc, bool_arithmetic_is_rejected);
    tcase_add_test(tc, gather_indexes_must_be_int);
    tcase_add_test(tc, scatter_src_must_match_indexes_and_dest);
    tcase_add_test(tc, reduce_axis_must_be_in_range);
    tcase_add_test(tc, unary_math_needs_float);
    tcase_add_test(tc, views_may_only_use_declared_dims);
    tcase_add_test(tc, iota_length_may_not_use_z);
    tcase_add_test(tc, names_are_required_and_unique);
    tcase_add_test(tc, dims_are_validated);
    tcase_add_test(tc, inputs_and_outputs_are_listed_in_order);
    tcase_add_test(tc, explicit_strides_through_the_door_run);
    tcase_add_test(tc, origins_name_the_users_node_in_builder_and_runtime_errors);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_graph_suite, NULL};
