/* test_runtime.c - the reference runtime, primitive by primitive, against values worked
 * out by hand; views (broadcast, permute, slice) as inputs; dynamic dims; determinism;
 * bad inputs and bad data give errors naming the node. */
#include "th.h"
#include "lm_check.h"

#include <stdint.h>

static hl_graph *G;
static void setup(void)
{
    G = hl_graph_new();
}
static void teardown(void)
{
    hl_graph_free(G);
}

static hl_t in2(const char *name, hl_dtype dt, int64_t a, int64_t b)
{
    hl_expr d[2] = {hl_n(G, a), hl_n(G, b)};
    return hl_input(G, name, dt, 2, d);
}
static hl_t in1(const char *name, hl_dtype dt, int64_t a)
{
    hl_expr d[1] = {hl_n(G, a)};
    return hl_input(G, name, dt, 1, d);
}

/* Runs G with up to 3 inputs given as arrays and checks its single output. */
static void run1(const double *const *vals, const double *want, size_t n, double tol)
{
    th_graph_ok(G);
    hl_tensor in[3];
    uint32_t ni = hl_graph_input_count(G);
    for (uint32_t i = 0; i < ni; i++) {
        const hl_node *nd = hl_graph_node(G, hl_graph_input(G, i));
        int64_t dims[HL_MAX_DIMS];
        for (uint32_t d = 0; d < nd->ndim; d++)
            ck_assert(hl_e_is_num(hl_graph_exprs(G), nd->shape[d], &dims[d]));
        in[i] = th_tensor(nd->dtype, nd->ndim, dims, vals[i]);
    }
    hl_tensor out[1];
    th_run(G, NULL, in, out);
    th_expect(&out[0], want, n, tol);
    th_free(out, 1);
    th_free(in, ni);
}

START_TEST(constant_is_an_f32_scalar)
{
    hl_t c = hl_scalar(G, 2.5f, HL_F32);
    ck_assert_uint_eq(c.view.ndim, 0);
    hl_output(G, "c", c);
    double want[] = {2.5};
    run1(NULL, want, 1, 0);
}
END_TEST

START_TEST(iota_evaluates_its_expression_at_each_index)
{
    hl_expr_pool *p = hl_graph_exprs(G);
    hl_expr e = hl_e_add(p, hl_e_mul(p, hl_e_z(p), hl_n(G, 2)), hl_n(G, 1));
    hl_t t = hl_iota(G, e, hl_n(G, 5));
    ck_assert_int_eq(t.dtype, HL_INT);
    hl_output(G, "i", t);
    double want[] = {1, 3, 5, 7, 9};
    run1(NULL, want, 5, 0);
}
END_TEST

START_TEST(cast_float_to_int_truncates_and_saturates)
{
    hl_t x = in1("x", HL_F32, 5);
    hl_output(G, "y", hl_cast(G, x, HL_INT));
    double xv[] = {1.7, -1.7, 3e10, -3e10, NAN};
    double want[] = {1, -1, 2147483647.0, -2147483648.0, 0};
    const double *v[] = {xv};
    run1(v, want, 5, 0);
}
END_TEST

START_TEST(cast_to_bool_and_back)
{
    hl_t x = in1("x", HL_F32, 4);
    hl_output(G, "y", hl_cast(G, hl_cast(G, x, HL_BOOL), HL_F32));
    double xv[] = {0.0, -0.0, 0.25, -3};
    double want[] = {0, 0, 1, 1};
    const double *v[] = {xv};
    run1(v, want, 4, 0);
}
END_TEST

START_TEST(cast_to_f16_rounds_to_nearest_even)
{
    hl_t x = in1("x", HL_F32, 3);
    hl_output(G, "y", hl_cast(G, hl_cast(G, x, HL_F16), HL_F32));
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even gives 1 */
    double xv[] = {1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048, 70000};
    double want[] = {1.0, 1.0 + 4.0 / 2048, INFINITY};
    const double *v[] = {xv};
    run1(v, want, 3, 0);
}
END_TEST

START_TEST(unary_primitives_match_libm)
{
    hl_t x = in1("x", HL_F32, 3);
    hl_t s = hl_add(G, hl_add(G, hl_exp2(G, x), hl_log2(G, x)), hl_sin(G, x));
    hl_output(G, "y", hl_add(G, hl_add(G, s, hl_recip(G, x)), hl_sqrt(G, x)));
    double xv[] = {1, 4, 0.5};
    double want[3];
    for (int i = 0; i < 3; i++)
        want[i] = exp2(xv[i]) + log2(xv[i]) + sin(xv[i]) + 1 / xv[i] + sqrt(xv[i]);
    const double *v[] = {xv};
    run1(v, want, 3, 1e-6);
}
END_TEST

START_TEST(unary_edge_values)
{
    hl_t x = in1("x", HL_F32, 4);
    hl_output(G, "y", hl_recip(G, x));
    double xv[] = {0.0, -0.0, INFINITY, 2};
    double want[] = {INFINITY, -INFINITY, 0, 0.5};
    const double *v[] = {xv};
    run1(v, want, 4, 0);
}
END_TEST

START_TEST(binary_ops_broadcast_a_row)
{
    hl_t a = in2("a", HL_F32, 2, 3), b = in1("b", HL_F32, 3);
    hl_output(G, "y", hl_add(G, hl_mul(G, a, b), b));
    double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {10, 20, 30};
    double want[] = {20, 60, 120, 50, 120, 210};
    const double *v[] = {av, bv};
    run1(v, want, 6, 0);
}
END_TEST

START_TEST(int_arithmetic_wraps_and_mod_truncates)
{
    hl_t a = in1("a", HL_INT, 3), b = in1("b", HL_INT, 3);
    hl_output(G, "s", hl_add(G, a, b));
    hl_output(G, "m", hl_mod(G, a, b));
    th_graph_ok(G);
    int64_t d[1] = {3};
    double av[] = {2147483647.0, -7, 7}, bv[] = {1, 3, -3};
    hl_tensor in[2] = {th_tensor(HL_INT, 1, d, av), th_tensor(HL_INT, 1, d, bv)}, out[2];
    th_run(G, NULL, in, out);
    double ws[] = {-2147483648.0, -4, 4}, wm[] = {0, -1, 1};
    th_expect(&out[0], ws, 3, 0);
    th_expect(&out[1], wm, 3, 0);
    th_free(out, 2);
    th_free(in, 2);
}
END_TEST

START_TEST(float_mod_is_fmod)
{
    hl_t a = in1("a", HL_F32, 2), b = in1("b", HL_F32, 2);
    hl_output(G, "m", hl_mod(G, a, b));
    double av[] = {-7.5, 7.5}, bv[] = {2, -2}, want[] = {-1.5, 1.5};
    const double *v[] = {av, bv};
    run1(v, want, 2, 0);
}
END_TEST

START_TEST(less_than_gives_bool)
{
    hl_t a = in1("a", HL_F32, 4), b = in1("b", HL_F32, 4);
    hl_t lt = hl_lt(G, a, b);
    ck_assert_int_eq(lt.dtype, HL_BOOL);
    hl_output(G, "y", lt);
    double av[] = {1, 2, 3, NAN}, bv[] = {2, 2, 1, 1}, want[] = {1, 0, 0, 0};
    const double *v[] = {av, bv};
    run1(v, want, 4, 0);
}
END_TEST

START_TEST(gather_reads_logical_elements_of_its_view)
{
    hl_t data = in2("d", HL_F32, 2, 3);
    hl_t ids = in1("i", HL_INT, 3);
    hl_output(G, "y", hl_gather(G, ids, hl_transpose(G, data, 0, 1)));
    /* the transposed view reads 10 20 11 21 12 22 */
    double dv[] = {10, 11, 12, 20, 21, 22}, iv[] = {0, 5, 1}, want[] = {10, 22, 20};
    const double *v[] = {dv, iv};
    run1(v, want, 3, 0);
}
END_TEST

START_TEST(scatter_writes_in_order_later_wins)
{
    hl_t dest = hl_full(G, 0.0f, HL_F32, 1, (hl_expr[]){hl_n(G, 5)});
    hl_t ids = in1("i", HL_INT, 3), src = in1("s", HL_F32, 3);
    hl_output(G, "y", hl_scatter(G, dest, ids, src));
    double iv[] = {4, 0, 4}, sv[] = {1, 2, 3}, want[] = {2, 0, 0, 0, 3};
    const double *v[] = {iv, sv};
    run1(v, want, 5, 0);
}
END_TEST

START_TEST(sum_and_max_reduce_each_axis)
{
    hl_t x = in2("x", HL_F32, 2, 3);
    hl_output(G, "s0", hl_sum_reduce(G, x, 0));
    hl_output(G, "s1", hl_sum_reduce(G, x, 1));
    hl_output(G, "m0", hl_max_reduce(G, x, 0));
    hl_output(G, "m1", hl_max_reduce(G, x, -1));
    th_graph_ok(G);
    int64_t d[2] = {2, 3};
    double xv[] = {1, -5, 3, 4, 2, -6};
    hl_tensor in[1] = {th_tensor(HL_F32, 2, d, xv)}, out[4];
    th_run(G, NULL, in, out);
    th_expect(&out[0], (double[]){5, -3, -3}, 3, 0);
    th_expect(&out[1], (double[]){-1, 0}, 2, 0);
    th_expect(&out[2], (double[]){4, 2, 3}, 3, 0);
    th_expect(&out[3], (double[]){3, 4}, 2, 0);
    th_free(out, 4);
    th_free(in, 1);
}
END_TEST

START_TEST(max_reduce_propagates_nan)
{
    hl_t x = in1("x", HL_F32, 3);
    hl_output(G, "m", hl_max_reduce(G, x, 0));
    double xv[] = {1, NAN, 3}, want[] = {NAN};
    const double *v[] = {xv};
    run1(v, want, 1, 0);
}
END_TEST

START_TEST(reduce_over_a_broadcast_view_counts_repeats)
{
    hl_t x = in1("x", HL_F32, 2);
    hl_output(G, "s", hl_sum_reduce(G, hl_expand(G, x, 0, hl_n(G, 4)), 0));
    double xv[] = {1.5, -2}, want[] = {6, -8};
    const double *v[] = {xv};
    run1(v, want, 2, 0);
}
END_TEST

START_TEST(output_through_a_permuted_view_is_contiguous)
{
    hl_t x = in2("x", HL_F32, 2, 3);
    hl_output(G, "t", hl_transpose(G, x, 0, 1));
    double xv[] = {1, 2, 3, 4, 5, 6}, want[] = {1, 4, 2, 5, 3, 6};
    const double *v[] = {xv};
    run1(v, want, 6, 0);
}
END_TEST

START_TEST(bf16_storage_rounds_every_result)
{
    hl_t a = in1("a", HL_BF16, 2), b = in1("b", HL_BF16, 2);
    hl_output(G, "s", hl_add(G, a, b));
    /* 1 + 2^-8 is a tie between 1 and 1 + 2^-7 in bf16: even wins */
    double av[] = {1, 1}, bv[] = {1.0 / 256, 3.0 / 256}, want[] = {1, 1 + 1.0 / 64};
    const double *v[] = {av, bv};
    run1(v, want, 2, 0);
}
END_TEST

START_TEST(dynamic_dims_take_their_run_values)
{
    hl_expr s = hl_graph_dim(G, "s", 1, 16, 2);
    hl_expr d[2] = {s, hl_n(G, 2)};
    hl_t x = hl_input(G, "x", HL_F32, 2, d);
    hl_output(G, "y", hl_sum_reduce(G, x, 0));
    th_graph_ok(G);
    for (int64_t sv = 1; sv <= 4; sv++) {
        int64_t dims[2] = {sv, 2};
        double xv[8];
        for (int i = 0; i < 8; i++)
            xv[i] = i;
        hl_tensor in[1] = {th_tensor(HL_F32, 2, dims, xv)}, out[1];
        th_run(G, &sv, in, out);
        double w0 = 0, w1 = 0;
        for (int64_t r = 0; r < sv; r++) {
            w0 += (double)(2 * r);
            w1 += (double)(2 * r + 1);
        }
        th_expect(&out[0], (double[]){w0, w1}, 2, 0);
        th_free(out, 1);
        th_free(in, 1);
    }
}
END_TEST

START_TEST(runs_are_bit_for_bit_deterministic)
{
    hl_t x = in2("x", HL_F32, 16, 33);
    hl_output(G, "y", hl_sum_reduce(G, hl_exp2(G, hl_sin(G, x)), 1));
    th_graph_ok(G);
    double xv[16 * 33];
    uint64_t st = 7;
    for (int i = 0; i < 16 * 33; i++)
        xv[i] = th_rand(&st, -3, 3);
    int64_t d[2] = {16, 33};
    hl_tensor in[1] = {th_tensor(HL_F32, 2, d, xv)}, o1[1], o2[1];
    th_run(G, NULL, in, o1);
    th_run(G, NULL, in, o2);
    ck_assert(memcmp(o1[0].data, o2[0].data, 16 * sizeof(float)) == 0);
    th_free(o1, 1);
    th_free(o2, 1);
    th_free(in, 1);
}
END_TEST

START_TEST(wrong_input_shape_is_an_error_naming_the_input)
{
    hl_t x = in2("x", HL_F32, 2, 3);
    hl_output(G, "y", x);
    int64_t d[2] = {3, 2};
    hl_tensor in[1] = {th_tensor(HL_F32, 2, d, NULL)}, out[1];
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(G, NULL, in, out, NULL, &err), HL_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.msg, "'x'"));
    ck_assert_ptr_nonnull(strstr(err.msg, "[2, 3]"));
    ck_assert_ptr_null(out[0].data);
    hl_tensor_fini(&in[0]);
}
END_TEST

START_TEST(wrong_input_dtype_is_an_error)
{
    hl_t x = in1("x", HL_F32, 2);
    hl_output(G, "y", x);
    int64_t d[1] = {2};
    hl_tensor in[1] = {th_tensor(HL_F16, 1, d, NULL)}, out[1];
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(G, NULL, in, out, NULL, &err), HL_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.msg, "f16"));
    hl_tensor_fini(&in[0]);
}
END_TEST

START_TEST(dim_outside_its_range_is_an_error)
{
    hl_expr s = hl_graph_dim(G, "seq", 1, 8, 4);
    hl_t x = hl_input(G, "x", HL_F32, 1, &s);
    hl_output(G, "y", x);
    int64_t bad = 9, d[1] = {9};
    hl_tensor in[1] = {th_tensor(HL_F32, 1, d, NULL)}, out[1];
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(G, &bad, in, out, NULL, &err), HL_ERR_DIM);
    ck_assert_ptr_nonnull(strstr(err.msg, "'seq'"));
    hl_tensor_fini(&in[0]);
}
END_TEST

START_TEST(gather_index_out_of_range_is_an_error_naming_the_node)
{
    hl_t data = in1("d", HL_F32, 3), ids = in1("i", HL_INT, 2);
    hl_t y = hl_gather(G, ids, data);
    hl_output(G, "y", y);
    int64_t d3[1] = {3}, d2[1] = {2};
    double iv[] = {1, 3};
    hl_tensor in[2] = {th_tensor(HL_F32, 1, d3, NULL), th_tensor(HL_INT, 1, d2, iv)}, out[1];
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(G, NULL, in, out, NULL, &err), HL_ERR_RUNTIME);
    ck_assert_uint_eq(err.node_id, y.node);
    ck_assert_ptr_nonnull(strstr(err.msg, "index 3"));
    th_free(in, 2);
}
END_TEST

START_TEST(int_mod_by_zero_is_an_error)
{
    hl_t a = in1("a", HL_INT, 1), b = in1("b", HL_INT, 1);
    hl_output(G, "y", hl_mod(G, a, b));
    int64_t d[1] = {1};
    double av[] = {5}, bv[] = {0};
    hl_tensor in[2] = {th_tensor(HL_INT, 1, d, av), th_tensor(HL_INT, 1, d, bv)}, out[1];
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(G, NULL, in, out, NULL, &err), HL_ERR_RUNTIME);
    ck_assert_ptr_nonnull(strstr(err.msg, "modulo by zero"));
    th_free(in, 2);
}
END_TEST

START_TEST(view_reaching_outside_its_producer_is_an_error)
{
    hl_t x = in1("x", HL_F32, 4);
    hl_node s;
    memset(&s, 0, sizeof s);
    s.op = HL_OP_EXP2;
    s.n_in = 1;
    s.in[0].node = x.node;
    hl_expr_pool *p = hl_graph_exprs(G);
    s.in[0].view.ndim = 1;
    s.in[0].view.dims[0] = hl_n(G, 4);
    s.in[0].view.strides[0] = hl_e_mul(p, hl_e_z(p), hl_n(G, 2)); /* reaches position 6 */
    uint32_t id = hl_graph_add(G, &s);
    ck_assert_uint_ne(id, HL_NONE);
    hl_output(G, "y", hl_node_tensor(G, id));
    th_graph_ok(G);
    int64_t d[1] = {4};
    hl_tensor in[1] = {th_tensor(HL_F32, 1, d, NULL)}, out[1];
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(G, NULL, in, out, NULL, &err), HL_ERR_RUNTIME);
    ck_assert_uint_eq(err.node_id, id);
    ck_assert_ptr_nonnull(strstr(err.msg, "positions 0..6"));
    hl_tensor_fini(&in[0]);
}
END_TEST

/* A Mul read only by a SumReduce that reads it whole is a dot product: exact products,
 * added in f32, the sum rounded once (docs/hlir.md, "Precision"). Exposing the product as
 * an output makes the Mul a node of its own, stored in its dtype; in f32 and int that
 * changes no bit, and in bf16 the fused sum is exactly what the same graph computes with
 * explicit f32 casts (products and sum in f32, one cast of the sum), as PyTorch and
 * cuBLASLt do. A MaxReduce of a Mul takes the max of the stored products either way. */
START_TEST(fused_multiply_reduce_matches_the_separate_nodes_bit_for_bit)
{
    hl_dtype dts[3] = {HL_F32, HL_BF16, HL_INT};
    for (int t = 0; t < 3; t++) {
        hl_tensor outs[3][2];
        for (int variant = 0; variant < 3; variant++) { /* fused, exposed, f32 casts */
            bool expose = variant == 1, casts = variant == 2;
            hl_graph *g = hl_graph_new();
            hl_expr da[2] = {hl_n(g, 5), hl_n(g, 7)}, db[2] = {hl_n(g, 7), hl_n(g, 3)};
            hl_t a = hl_input(g, "a", dts[t], 2, da), b = hl_input(g, "b", dts[t], 2, db);
            hl_t ae = hl_expand(g, a, 1, hl_n(g, 3));
            hl_t be = hl_expand(g, hl_transpose(g, b, 0, 1), 0, hl_n(g, 5));
            hl_t ae32 = casts ? hl_cast(g, ae, HL_F32) : ae,
                 be32 = casts ? hl_cast(g, be, HL_F32) : be;
            hl_t prod = hl_mul(g, ae32, be32); /* read once per Mul node when not exposed */
            hl_t sum = hl_sum_reduce(g, prod, 2);
            hl_output(g, "c", casts ? hl_cast(g, sum, dts[t]) : sum);
            hl_output(g, "m", expose ? prod : hl_max_reduce(g, hl_mul(g, ae, be), 2));
            if (expose) hl_output(g, "m2", hl_max_reduce(g, prod, 2));
            th_graph_ok(g);
            uint64_t st = 99;
            double av[35], bv[21];
            for (int i = 0; i < 35; i++)
                av[i] = th_rand(&st, -20, 20);
            av[3] = NAN; /* a NaN product and an inf one go through the same arithmetic */
            av[9] = INFINITY;
            for (int i = 0; i < 21; i++)
                bv[i] = th_rand(&st, -20, 20);
            int64_t d1[2] = {5, 7}, d2[2] = {7, 3};
            hl_tensor in[2] = {th_tensor(dts[t], 2, d1, av), th_tensor(dts[t], 2, d2, bv)}, out[3];
            th_run(g, NULL, in, out);
            outs[variant][0] = out[0];
            outs[variant][1] = expose ? out[2] : out[1];
            if (expose) hl_tensor_fini(&out[1]);
            th_free(in, 2);
            hl_graph_free(g);
        }
        size_t bytes = 15 * hl_dtype_size(dts[t]);
        int same_sum = dts[t] == HL_BF16 ? 2 : 1; /* what the fused sum equals */
        ck_assert_msg(memcmp(outs[0][0].data, outs[same_sum][0].data, bytes) == 0, "sum, dtype %d",
                      t);
        ck_assert_msg(memcmp(outs[0][1].data, outs[1][1].data, bytes) == 0, "max, dtype %d", t);
        for (int e = 0; e < 3; e++)
            th_free(outs[e], 2);
    }
}
END_TEST

START_TEST(missing_input_or_output_arrays_are_an_error)
{
    hl_t x = in1("x", HL_F32, 2);
    hl_output(G, "y", x);
    hl_tensor out[1];
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(G, NULL, NULL, out, NULL, &err), HL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "1 inputs"));
    int64_t d[1] = {2};
    hl_tensor in[1] = {th_tensor(HL_F32, 1, d, NULL)};
    lm_err_clear(&err);
    ck_assert_int_eq(hl_run(G, NULL, in, NULL, NULL, &err), HL_ERR_ARG);
    hl_tensor_fini(&in[0]);
}
END_TEST

/* The batched kernel: 2 batches of 9 rows, taken 8 at a time, a batch of rows ending
 * where b changes; b stored as [k, n] (read in place) or as [n, k] (as in q k^T, packed
 * first). In f32 it gives the bits of the separate nodes (the product exposed as an
 * output); in bf16 the bits of the same graph with explicit f32 casts. */
START_TEST(fused_batched_matmul_matches_the_separate_nodes_bit_for_bit)
{
    hl_dtype dts[2] = {HL_F32, HL_BF16};
    for (int t = 0; t < 2; t++)
        for (int trans = 0; trans < 2; trans++) {
            hl_tensor outs[2];
            for (int variant = 0; variant < 2; variant++) {
                /* variant 1: exposed product (f32), or explicit f32 casts (bf16) */
                bool expose = variant == 1 && dts[t] == HL_F32;
                bool casts = variant == 1 && dts[t] == HL_BF16;
                hl_graph *g = hl_graph_new();
                hl_expr da[3] = {hl_n(g, 2), hl_n(g, 9), hl_n(g, 7)};
                hl_expr db[3] = {hl_n(g, 2), hl_n(g, trans ? 4 : 7), hl_n(g, trans ? 7 : 4)};
                hl_t a = hl_input(g, "a", dts[t], 3, da), b = hl_input(g, "b", dts[t], 3, db);
                if (casts) {
                    a = hl_cast(g, a, HL_F32);
                    b = hl_cast(g, b, HL_F32);
                }
                hl_t bkn = trans ? hl_transpose(g, b, 1, 2) : b;                   /* [2,7,4] */
                hl_t ae = hl_expand(g, a, 2, hl_n(g, 4));                          /* [2,9,4,7] */
                hl_t be = hl_expand(g, hl_transpose(g, bkn, 1, 2), 1, hl_n(g, 9)); /* [2,9,4,7] */
                hl_t prod = hl_mul(g, ae, be);
                hl_t c = hl_sum_reduce(g, prod, 3);
                hl_output(g, "c", casts ? hl_cast(g, c, dts[t]) : c);
                if (expose) hl_output(g, "p", prod);
                th_graph_ok(g);
                uint64_t st = 7;
                double av[126], bv[56];
                for (int i = 0; i < 126; i++)
                    av[i] = th_rand(&st, -9, 9);
                for (int i = 0; i < 56; i++)
                    bv[i] = th_rand(&st, -9, 9);
                av[40] = NAN;
                int64_t d1[3] = {2, 9, 7}, d2[3] = {2, trans ? 4 : 7, trans ? 7 : 4};
                hl_tensor in[2] = {th_tensor(dts[t], 3, d1, av), th_tensor(dts[t], 3, d2, bv)},
                          out[2];
                th_run(g, NULL, in, out);
                outs[variant] = out[0];
                if (expose) hl_tensor_fini(&out[1]);
                th_free(in, 2);
                hl_graph_free(g);
            }
            ck_assert_uint_eq(outs[0].numel, 72);
            ck_assert_msg(memcmp(outs[0].data, outs[1].data, 72 * hl_dtype_size(dts[t])) == 0,
                          "dtype %d, transposed b %d", t, trans);
            th_free(outs, 2);
        }
}
END_TEST

/* b[x][k][j] of the test below, stored [x][k][j], or [x][j][k] when transposed. */
static double bv_at(const hl_tensor *b, int trans, int x, int k, int j)
{
    enum { K = 300, N = 256 };
    return hl_tensor_get(b, trans ? ((size_t)x * N + j) * K + k : ((size_t)x * K + k) * N + j);
}

/* A product large enough to be shared among threads (2 x 64 rows of 256 over 300 terms:
 * 9.8M multiply-adds, 16 batches) gives the bits of a plain f32 loop in k order on 1, 3, 4
 * and 64 threads, in f32 and bf16, with b read in place or packed (stored [n, k]); and a
 * run allowed more threads plans more memory (an accumulator block per thread). */
START_TEST(a_large_product_gives_the_same_bits_on_any_number_of_threads)
{
    enum { B = 2, M = 64, K = 300, N = 256 };
    static double av[B * M * K], bv[B * K * N];
    uint64_t st = 5;
    for (size_t i = 0; i < B * M * K; i++)
        av[i] = th_rand(&st, -2, 2);
    for (size_t i = 0; i < B * K * N; i++)
        bv[i] = th_rand(&st, -2, 2);
    hl_dtype dts[2] = {HL_F32, HL_BF16};
    for (int t = 0; t < 2; t++)
        for (int trans = 0; trans < 2; trans++) {
            hl_graph *g = hl_graph_new();
            hl_expr da[3] = {hl_n(g, B), hl_n(g, M), hl_n(g, K)};
            hl_expr db[3] = {hl_n(g, B), hl_n(g, trans ? N : K), hl_n(g, trans ? K : N)};
            hl_t a = hl_input(g, "a", dts[t], 3, da), b = hl_input(g, "b", dts[t], 3, db);
            hl_output(g, "c", hl_matmul(g, a, trans ? hl_transpose(g, b, 1, 2) : b));
            th_graph_ok(g);
            int64_t d1[3] = {B, M, K}, d2[3] = {B, trans ? N : K, trans ? K : N};
            hl_tensor in[2] = {th_tensor(dts[t], 3, d1, av), th_tensor(dts[t], 3, d2, NULL)};
            for (int x = 0; x < B; x++) /* b[x][k][j], stored [x][j][k] when transposed */
                for (int k = 0; k < K; k++)
                    for (int j = 0; j < N; j++)
                        hl_tensor_set(&in[1],
                                      trans ? ((size_t)x * N + j) * K + k
                                            : ((size_t)x * K + k) * N + j,
                                      bv[((size_t)x * K + k) * N + j]);
            uint32_t threads[4] = {1, 3, 4, 64};
            hl_run_mem mem[4];
            for (int v = 0; v < 4; v++) {
                hl_run_opts o = {.threads = threads[v]};
                lm_err err = {0};
                ck_assert_int_eq(hl_run_check_memory(g, NULL, &o, &mem[v], &err), HL_OK);
                hl_tensor out[1];
                ck_assert_int_eq(hl_run(g, NULL, in, out, &o, &err), HL_OK);
                ck_assert_uint_eq(out[0].numel, B * M * N);
                for (int x = 0; x < B; x++)
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++) {
                            float acc = 0.0f;
                            for (int k = 0; k < K; k++)
                                acc += (float)hl_tensor_get(&in[0], ((size_t)x * M + i) * K + k) *
                                       (float)bv_at(&in[1], trans, x, k, j);
                            size_t e = ((size_t)x * M + i) * N + j;
                            ck_assert_msg(hl_tensor_get(&out[0], e) ==
                                              (double)hl_round_to(dts[t], acc),
                                          "dtype %d, transposed %d, %u threads, element %zu", t,
                                          trans, threads[v], e);
                        }
                hl_tensor_fini(&out[0]);
            }
            ck_assert_uint_gt(mem[2].peak_bytes, mem[0].peak_bytes);
            ck_assert_uint_eq(mem[3].peak_bytes, mem[2].peak_bytes); /* 4 threads at most */
            th_free(in, 2);
            hl_graph_free(g);
        }
}
END_TEST

/* The fused sum of bf16 products is exact. (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 does not fit
 * bf16 (stored alone it rounds to 1 + 2^-6); with (1 - 2^-7) * 1 added the exact sum is
 * 2 + 2^-7 + 2^-14, just above the midpoint between the bf16 neighbours 2 and 2 + 2^-6,
 * so it rounds up to 2.015625; the sum of the rounded products, 2 + 2^-7, is exactly the
 * midpoint and would round to even: 2. */
START_TEST(fused_bf16_dot_products_are_exact)
{
    hl_expr d[2] = {hl_n(G, 1), hl_n(G, 2)};
    hl_t a = hl_input(G, "a", HL_BF16, 2, d), b = hl_input(G, "b", HL_BF16, 2, d);
    int last = -1;
    hl_output(G, "s", hl_sum(G, hl_mul(G, a, b), 1, &last, false));
    th_graph_ok(G);
    int64_t dims[2] = {1, 2};
    double av[2] = {1.0 + 1.0 / 128, 1.0 - 1.0 / 128}, bv[2] = {1.0 + 1.0 / 128, 1.0};
    hl_tensor in[2] = {th_tensor(HL_BF16, 2, dims, av), th_tensor(HL_BF16, 2, dims, bv)}, out[1];
    ck_assert_double_eq(hl_tensor_get(&in[0], 0), av[0]); /* the inputs are exact in bf16 */
    ck_assert_double_eq(hl_tensor_get(&in[0], 1), av[1]);
    th_run(G, NULL, in, out);
    ck_assert_double_eq(hl_tensor_get(&out[0], 0), 2.015625);
    th_free(out, 1);
    th_free(in, 2);
}
END_TEST

START_TEST(column_reduction_matches_row_reduction_bit_for_bit)
{
    /* reducing axis 0 of x runs row by row over memory; reducing axis 1 of a contiguous
     * copy of x^T runs the simple loop: both add in the same order, so the same bits */
    hl_dtype dts[2] = {HL_F32, HL_BF16};
    for (int t = 0; t < 2; t++) {
        hl_graph *g = hl_graph_new();
        hl_expr d[2] = {hl_n(g, 37), hl_n(g, 5)};
        hl_t x = hl_input(g, "x", dts[t], 2, d);
        hl_t xt = hl_cast(g, hl_transpose(g, x, 0, 1), dts[t]); /* a contiguous [5, 37] copy */
        hl_output(g, "s_col", hl_sum_reduce(g, x, 0));
        hl_output(g, "s_row", hl_sum_reduce(g, xt, 1));
        hl_output(g, "m_col", hl_max_reduce(g, x, 0));
        hl_output(g, "m_row", hl_max_reduce(g, xt, 1));
        th_graph_ok(g);
        uint64_t st = 3;
        double xv[185];
        for (int i = 0; i < 185; i++)
            xv[i] = th_rand(&st, -1000, 1000);
        xv[17] = NAN;
        int64_t dims[2] = {37, 5};
        hl_tensor in[1] = {th_tensor(dts[t], 2, dims, xv)}, out[4];
        th_run(g, NULL, in, out);
        size_t bytes = 5 * hl_dtype_size(dts[t]);
        ck_assert(memcmp(out[0].data, out[1].data, bytes) == 0);
        ck_assert(memcmp(out[2].data, out[3].data, bytes) == 0);
        ck_assert(isnan(hl_tensor_get(&out[2], 2))); /* element 17 is in column 2 */
        th_free(out, 4);
        th_free(in, 1);
        hl_graph_free(g);
    }
}
END_TEST

START_TEST(random_fill_is_deterministic_per_seed_and_stream_and_in_range)
{
    int64_t dims[1] = {4096};
    hl_tensor a, b, c, d, e;
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_tensor_init(&a, HL_F32, 1, dims, &err), HL_OK);
    ck_assert_int_eq(hl_tensor_init(&b, HL_F32, 1, dims, &err), HL_OK);
    ck_assert_int_eq(hl_tensor_init(&c, HL_F32, 1, dims, &err), HL_OK);
    ck_assert_int_eq(hl_tensor_init(&d, HL_INT, 1, dims, &err), HL_OK);
    ck_assert_int_eq(hl_tensor_init(&e, HL_BOOL, 1, dims, &err), HL_OK);
    hl_tensor_fill_random(&a, 7, 0);
    hl_tensor_fill_random(&b, 7, 0);
    hl_tensor_fill_random(&c, 7, 1);
    hl_tensor_fill_random(&d, 7, 0);
    hl_tensor_fill_random(&e, 7, 0);
    ck_assert(memcmp(a.data, b.data, 4096 * sizeof(float)) == 0);
    ck_assert(memcmp(a.data, c.data, 4096 * sizeof(float)) != 0);
    double lo = 1, hi = -1;
    int seen_int[4] = {0}, seen_bool[2] = {0};
    for (size_t i = 0; i < 4096; i++) {
        double v = hl_tensor_get(&a, i);
        ck_assert(v >= -1.0 && v < 1.0);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        double k = hl_tensor_get(&d, i);
        ck_assert(k >= 0 && k <= 3 && k == (int)k);
        seen_int[(int)k]++;
        double f = hl_tensor_get(&e, i);
        ck_assert(f == 0 || f == 1);
        seen_bool[(int)f]++;
    }
    ck_assert(lo < -0.9 && hi > 0.9); /* spread over the range, not stuck */
    for (int k = 0; k < 4; k++)
        ck_assert_int_gt(seen_int[k], 800);
    ck_assert_int_gt(seen_bool[0], 1800);
    ck_assert_int_gt(seen_bool[1], 1800);
    hl_tensor_fini(&a);
    hl_tensor_fini(&b);
    hl_tensor_fini(&c);
    hl_tensor_fini(&d);
    hl_tensor_fini(&e);
}
END_TEST

static Suite *hlir_runtime_suite(void)
{
    Suite *s = suite_create("hlir_runtime");
    TCase *tc = tcase_create("runtime");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, constant_is_an_f32_scalar);
    tcase_add_test(tc, iota_evaluates_its_expression_at_each_index);
    tcase_add_test(tc, cast_float_to_int_truncates_and_saturates);
    tcase_add_test(tc, cast_to_bool_and_back);
    tcase_add_test(tc, cast_to_f16_rounds_to_nearest_even);
    tcase_add_test(tc, unary_primitives_match_libm);
    tcase_add_test(tc, unary_edge_values);
    tcase_add_test(tc, binary_ops_broadcast_a_row);
    tcase_add_test(tc, int_arithmetic_wraps_and_mod_truncates);
    tcase_add_test(tc, float_mod_is_fmod);
    tcase_add_test(tc, less_than_gives_bool);
    tcase_add_test(tc, gather_reads_logical_elements_of_its_view);
    tcase_add_test(tc, scatter_writes_in_order_later_wins);
    tcase_add_test(tc, sum_and_max_reduce_each_axis);
    tcase_add_test(tc, max_reduce_propagates_nan);
    tcase_add_test(tc, reduce_over_a_broadcast_view_counts_repeats);
    tcase_add_test(tc, output_through_a_permuted_view_is_contiguous);
    tcase_add_test(tc, bf16_storage_rounds_every_result);
    tcase_add_test(tc, dynamic_dims_take_their_run_values);
    tcase_add_test(tc, runs_are_bit_for_bit_deterministic);
    tcase_add_test(tc, wrong_input_shape_is_an_error_naming_the_input);
    tcase_add_test(tc, wrong_input_dtype_is_an_error);
    tcase_add_test(tc, dim_outside_its_range_is_an_error);
    tcase_add_test(tc, gather_index_out_of_range_is_an_error_naming_the_node);
    tcase_add_test(tc, int_mod_by_zero_is_an_error);
    tcase_add_test(tc, view_reaching_outside_its_producer_is_an_error);
    tcase_add_test(tc, fused_multiply_reduce_matches_the_separate_nodes_bit_for_bit);
    tcase_add_test(tc, missing_input_or_output_arrays_are_an_error);
    tcase_add_test(tc, fused_batched_matmul_matches_the_separate_nodes_bit_for_bit);
    tcase_add_test(tc, a_large_product_gives_the_same_bits_on_any_number_of_threads);
    tcase_add_test(tc, fused_bf16_dot_products_are_exact);
    tcase_add_test(tc, column_reduction_matches_row_reduction_bit_for_bit);
    tcase_add_test(tc, random_fill_is_deterministic_per_seed_and_stream_and_in_range);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_runtime_suite, NULL};
