/* test_builder.c - every high-level builder op, run on the reference runtime and checked
 * against values computed independently here in double precision (and some by hand);
 * view ops; errors from bad shapes and dtypes, and that a failed call changes nothing. */
#include "th.h"
#include "lm_check.h"

static const hl_t HL_T_NONE = {.node = HL_NONE};

static hl_graph *G;
static void setup(void)
{
    G = hl_graph_new();
}
static void teardown(void)
{
    hl_graph_free(G);
}

static hl_t in_nd(const char *name, hl_dtype dt, uint32_t nd, const int64_t *dims)
{
    hl_expr d[HL_MAX_DIMS];
    for (uint32_t i = 0; i < nd; i++)
        d[i] = hl_n(G, dims[i]);
    return hl_input(G, name, dt, nd, d);
}

/* Runs G (inputs filled from vals in order) and returns output k's values in got. */
static void run_all(const double *const *vals, hl_tensor *out)
{
    th_graph_ok(G);
    hl_tensor in[8];
    uint32_t ni = hl_graph_input_count(G);
    for (uint32_t i = 0; i < ni; i++) {
        const hl_node *nd = hl_graph_node(G, hl_graph_input(G, i));
        int64_t dims[HL_MAX_DIMS];
        for (uint32_t d = 0; d < nd->ndim; d++)
            ck_assert(hl_e_is_num(hl_graph_exprs(G), nd->shape[d], &dims[d]));
        in[i] = th_tensor(nd->dtype, nd->ndim, dims, vals[i]);
    }
    th_run(G, NULL, in, out);
    th_free(in, ni);
}

static void check1(const double *const *vals, const double *want, size_t n, double tol)
{
    hl_tensor out[1];
    run_all(vals, out);
    th_expect(&out[0], want, n, tol);
    th_free(out, 1);
}

/* ---- elementwise ---- */

typedef hl_t (*unop)(hl_graph *, hl_t);
static const double XS[] = {-6, -2.5, -1, -0.3, 0, 0.2, 0.7, 1, 2.25, 5};
#define NX (sizeof XS / sizeof *XS)

static void unary_case(unop f, double (*ref)(double), double tol, bool positive)
{
    int64_t d[1] = {NX};
    hl_t x = in_nd("x", HL_F32, 1, d);
    hl_output(G, "y", f(G, x));
    double xv[NX], want[NX];
    for (size_t i = 0; i < NX; i++) {
        xv[i] = (float)(positive ? fabs(XS[i]) + 0.125 : XS[i]); /* what the f32 input holds */
        want[i] = ref(xv[i]);
    }
    const double *v[] = {xv};
    check1(v, want, NX, tol);
}

static double r_neg(double x)
{
    return -x;
}
static double r_sigmoid(double x)
{
    return 1 / (1 + exp(-x));
}
static double r_silu(double x)
{
    return x / (1 + exp(-x));
}
static double r_gelu(double x)
{
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}
static double r_gelu_tanh(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double r_relu(double x)
{
    return x > 0 ? x : 0;
}

START_TEST(neg_negates)
{
    unary_case(hl_neg, r_neg, 0, false);
}
END_TEST
START_TEST(exp_matches_libm)
{
    unary_case(hl_exp, exp, 1e-6, false);
}
END_TEST
START_TEST(log_matches_libm)
{
    unary_case(hl_log, log, 1e-6, true);
}
END_TEST
START_TEST(cos_matches_libm)
{
    unary_case(hl_cos, cos, 1e-6, false);
}
END_TEST
START_TEST(sigmoid_matches_its_definition)
{
    unary_case(hl_sigmoid, r_sigmoid, 1e-6, false);
}
END_TEST
START_TEST(silu_matches_its_definition)
{
    unary_case(hl_silu, r_silu, 1e-6, false);
}
END_TEST
START_TEST(tanh_matches_libm)
{
    unary_case(hl_tanh, tanh, 1e-6, false);
}
END_TEST
START_TEST(gelu_matches_the_erf_form)
{
    unary_case(hl_gelu, r_gelu, 1e-6, false);
}
END_TEST
START_TEST(gelu_tanh_matches_the_tanh_form)
{
    unary_case(hl_gelu_tanh, r_gelu_tanh, 1e-6, false);
}
END_TEST
START_TEST(relu_clamps_negatives)
{
    unary_case(hl_relu, r_relu, 0, false);
}
END_TEST

START_TEST(sub_div_maximum_minimum_by_hand)
{
    int64_t d[1] = {4};
    hl_t a = in_nd("a", HL_F32, 1, d), b = in_nd("b", HL_F32, 1, d);
    hl_output(G, "sub", hl_sub(G, a, b));
    hl_output(G, "div", hl_div(G, a, b));
    hl_output(G, "max", hl_maximum(G, a, b));
    hl_output(G, "min", hl_minimum(G, a, b));
    double av[] = {1, -2, 3, 4}, bv[] = {4, 2, -2, 4};
    const double *v[] = {av, bv};
    hl_tensor out[4];
    run_all(v, out);
    th_expect(&out[0], (double[]){-3, -4, 5, 0}, 4, 0);
    th_expect(&out[1], (double[]){0.25, -1, -1.5, 1}, 4, 1e-7);
    th_expect(&out[2], (double[]){4, 2, 3, 4}, 4, 0);
    th_expect(&out[3], (double[]){1, -2, -2, 4}, 4, 0);
    th_free(out, 4);
}
END_TEST

START_TEST(comparisons_give_bool_masks)
{
    int64_t d[1] = {3};
    hl_t a = in_nd("a", HL_F32, 1, d), b = in_nd("b", HL_F32, 1, d);
    hl_t r[6] = {hl_lt(G, a, b), hl_gt(G, a, b), hl_le(G, a, b),
                 hl_ge(G, a, b), hl_eq(G, a, b), hl_ne(G, a, b)};
    const char *names[6] = {"lt", "gt", "le", "ge", "eq", "ne"};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(r[i].dtype, HL_BOOL);
        hl_output(G, names[i], r[i]);
    }
    double av[] = {1, 2, 3}, bv[] = {2, 2, 2};
    const double *v[] = {av, bv};
    hl_tensor out[6];
    run_all(v, out);
    double want[6][3] = {{1, 0, 0}, {0, 0, 1}, {1, 1, 0}, {0, 1, 1}, {0, 1, 0}, {1, 0, 1}};
    for (int i = 0; i < 6; i++)
        th_expect(&out[i], want[i], 3, 0);
    th_free(out, 6);
}
END_TEST

START_TEST(where_selects_by_mask)
{
    int64_t d[1] = {4};
    hl_t a = in_nd("a", HL_F32, 1, d), b = in_nd("b", HL_F32, 1, d);
    hl_output(G, "y", hl_where(G, hl_lt(G, a, b), a, b));
    double av[] = {1, 5, -3, 2}, bv[] = {2, 4, -4, 2};
    const double *v[] = {av, bv};
    check1(v, (double[]){1, 4, -4, 2}, 4, 0);
}
END_TEST

/* ---- reductions ---- */

START_TEST(sum_max_mean_over_several_axes)
{
    int64_t d[3] = {2, 3, 4};
    hl_t x = in_nd("x", HL_F32, 3, d);
    int ax02[2] = {0, 2}, ax1[1] = {-2};
    hl_t s = hl_sum(G, x, 2, ax02, false);
    hl_t m = hl_max(G, x, 2, ax02, true);
    hl_t mean = hl_mean(G, x, 1, ax1, false);
    ck_assert_uint_eq(s.view.ndim, 1);
    ck_assert_uint_eq(m.view.ndim, 3);
    hl_output(G, "s", s);
    hl_output(G, "m", m);
    hl_output(G, "mean", mean);
    double xv[24];
    for (int i = 0; i < 24; i++)
        xv[i] = (i * 7) % 11 - 5;
    const double *v[] = {xv};
    hl_tensor out[3];
    run_all(v, out);
    double ws[3] = {0}, wm[3] = {-1e9, -1e9, -1e9}, wmean[8] = {0};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++) {
                double xx = xv[a * 12 + b * 4 + c];
                ws[b] += xx;
                if (xx > wm[b]) wm[b] = xx;
                wmean[a * 4 + c] += xx / 3;
            }
    th_expect(&out[0], ws, 3, 0);
    th_expect(&out[1], wm, 3, 0);
    th_expect(&out[2], wmean, 8, 1e-6);
    th_free(out, 3);
}
END_TEST

START_TEST(mean_over_a_dynamic_dim_divides_at_run_time)
{
    hl_expr s = hl_graph_dim(G, "s", 1, 10, 3);
    hl_expr d[1] = {s};
    hl_t x = hl_input(G, "x", HL_F32, 1, d);
    int ax[1] = {0};
    hl_output(G, "m", hl_mean(G, x, 1, ax, false));
    th_graph_ok(G);
    int64_t sv = 5, dims[1] = {5};
    hl_tensor in[1] = {th_tensor(HL_F32, 1, dims, (double[]){1, 2, 3, 4, 10})}, out[1];
    th_run(G, &sv, in, out);
    th_expect(&out[0], (double[]){4}, 1, 1e-7);
    th_free(out, 1);
    th_free(in, 1);
}
END_TEST

/* Asserts t's view has exactly the dims want[0..n) (as expressions of G). */
static void dims_are(hl_t t, uint32_t n, const hl_expr *want, const char *what)
{
    ck_assert_msg(t.node != HL_NONE, "%s: %s", what, hl_graph_error(G)->msg);
    ck_assert_msg(t.view.ndim == n, "%s: %u dims, want %u", what, t.view.ndim, n);
    for (uint32_t i = 0; i < n; i++)
        ck_assert_msg(t.view.dims[i] == want[i], "%s: dim %u differs", what, i);
}

/* Reducing every axis gives a scalar whether the element count is static or a dynamic
 * dim (mean's 1/count is then computed at run time and must not add a dim of its own);
 * keepdim keeps every axis as 1; the normalisations keep their input's shape. */
START_TEST(reductions_of_a_dynamic_count_keep_their_shape)
{
    hl_expr s = hl_graph_dim(G, "s", 1, 10, 3);
    hl_expr one = hl_n(G, 1), four = hl_n(G, 4);
    hl_expr d[2] = {s, four}, dt[2] = {four, s};
    hl_t x = hl_input(G, "x", HL_F32, 2, d);    /* [s, 4] */
    hl_t xt = hl_input(G, "xt", HL_F32, 2, dt); /* [4, s] */
    int all[2] = {0, 1}, ax0[1] = {0};
    hl_expr ones[2] = {one, one}, row[2] = {one, four};
    hl_t mean = hl_mean(G, x, 2, all, false);
    dims_are(hl_sum(G, x, 2, all, false), 0, NULL, "sum over all axes");
    dims_are(hl_max(G, x, 2, all, false), 0, NULL, "max over all axes");
    dims_are(mean, 0, NULL, "mean over all axes");
    dims_are(hl_mean(G, x, 2, all, true), 2, ones, "mean over all axes, keepdim");
    dims_are(hl_mean(G, x, 1, ax0, false), 1, &four, "mean over the dynamic axis");
    dims_are(hl_mean(G, x, 1, ax0, true), 2, row, "mean over the dynamic axis, keepdim");
    dims_are(hl_softmax(G, xt, -1), 2, dt, "softmax over a dynamic axis");
    dims_are(hl_log_softmax(G, xt, -1), 2, dt, "log_softmax over a dynamic axis");
    dims_are(hl_layer_norm(G, xt, HL_T_NONE, HL_T_NONE, 1e-5f), 2, dt, "layer_norm");
    dims_are(hl_rms_norm(G, xt, HL_T_NONE, 1e-5f), 2, dt, "rms_norm");
    hl_output(G, "mean", mean);
    th_graph_ok(G);
    /* the run gives the scalar, with the right value */
    int64_t sv = 2, dx[2] = {2, 4}, dxt[2] = {4, 2};
    hl_tensor in[2] = {th_tensor(HL_F32, 2, dx, (double[]){1, 2, 3, 4, 5, 6, 7, 8}),
                       th_tensor(HL_F32, 2, dxt, NULL)},
              out[1];
    th_run(G, &sv, in, out);
    ck_assert_uint_eq(out[0].ndim, 0);
    th_expect(&out[0], (double[]){4.5}, 1, 1e-7);
    th_free(out, 1);
    th_free(in, 2);
}
END_TEST

/* The same over a static count, which was right before: a scalar too. */
START_TEST(mean_of_a_static_count_is_a_scalar)
{
    int64_t d[2] = {3, 4};
    hl_t x = in_nd("x", HL_F32, 2, d);
    int all[2] = {0, 1};
    dims_are(hl_mean(G, x, 2, all, false), 0, NULL, "mean over all axes");
}
END_TEST

static void softmax_ref(const double *x, int n, double *y, bool logf_)
{
    double m = -INFINITY, s = 0;
    for (int i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - m);
    for (int i = 0; i < n; i++)
        y[i] = logf_ ? x[i] - m - log(s) : exp(x[i] - m) / s;
}

START_TEST(softmax_and_log_softmax_rows)
{
    int64_t d[2] = {3, 5};
    hl_t x = in_nd("x", HL_F32, 2, d);
    hl_output(G, "sm", hl_softmax(G, x, -1));
    hl_output(G, "lsm", hl_log_softmax(G, x, 1));
    hl_output(G, "sm0", hl_softmax(G, x, 0));
    double xv[15];
    uint64_t st = 3;
    for (int i = 0; i < 15; i++)
        xv[i] = th_rand(&st, -4, 4);
    xv[0] = 80; /* large values must not overflow */
    const double *v[] = {xv};
    hl_tensor out[3];
    run_all(v, out);
    double w[15], wl[15], w0[15];
    for (int r = 0; r < 3; r++) {
        softmax_ref(xv + 5 * r, 5, w + 5 * r, false);
        softmax_ref(xv + 5 * r, 5, wl + 5 * r, true);
    }
    for (int c = 0; c < 5; c++) {
        double col[3] = {xv[c], xv[5 + c], xv[10 + c]}, y[3];
        softmax_ref(col, 3, y, false);
        for (int r = 0; r < 3; r++)
            w0[5 * r + c] = y[r];
    }
    th_expect(&out[0], w, 15, 1e-6);
    th_expect(&out[1], wl, 15, 1e-5);
    th_expect(&out[2], w0, 15, 1e-6);
    th_free(out, 3);
}
END_TEST

START_TEST(layer_norm_and_rms_norm_rows)
{
    int64_t d[2] = {2, 4}, dw[1] = {4};
    hl_t x = in_nd("x", HL_F32, 2, d), w = in_nd("w", HL_F32, 1, dw), b = in_nd("b", HL_F32, 1, dw);
    hl_output(G, "ln", hl_layer_norm(G, x, w, b, 1e-5f));
    hl_output(G, "rms", hl_rms_norm(G, x, w, 1e-6f));
    hl_output(G, "ln_plain", hl_layer_norm(G, x, HL_T_NONE, HL_T_NONE, 1e-5f));
    double xv[] = {1, 2, 3, 4, -1, 0.5, 8, 2}, wv[] = {1, 0.5, 2, -1}, bv[] = {0, 1, -1, 0.25};
    const double *v[] = {xv, wv, bv};
    hl_tensor out[3];
    run_all(v, out);
    double wl[8], wr[8], wp[8];
    for (int r = 0; r < 2; r++) {
        const double *row = xv + 4 * r;
        double mu = 0, var = 0, ms = 0;
        for (int i = 0; i < 4; i++)
            mu += row[i] / 4;
        for (int i = 0; i < 4; i++)
            var += (row[i] - mu) * (row[i] - mu) / 4;
        for (int i = 0; i < 4; i++)
            ms += row[i] * row[i] / 4;
        for (int i = 0; i < 4; i++) {
            wp[4 * r + i] = (row[i] - mu) / sqrt(var + 1e-5);
            wl[4 * r + i] = wp[4 * r + i] * wv[i] + bv[i];
            wr[4 * r + i] = row[i] / sqrt(ms + 1e-6) * wv[i];
        }
    }
    th_expect(&out[0], wl, 8, 1e-5);
    th_expect(&out[1], wr, 8, 1e-5);
    th_expect(&out[2], wp, 8, 1e-5);
    th_free(out, 3);
}
END_TEST

/* ---- linear algebra ---- */

START_TEST(matmul_2d_by_hand)
{
    int64_t da[2] = {2, 3}, db[2] = {3, 2};
    hl_t a = in_nd("a", HL_F32, 2, da), b = in_nd("b", HL_F32, 2, db);
    hl_t c = hl_matmul(G, a, b);
    ck_assert_uint_eq(c.view.ndim, 2);
    hl_output(G, "c", c);
    double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {7, 8, 9, 10, 11, 12};
    const double *v[] = {av, bv};
    check1(v, (double[]){58, 64, 139, 154}, 4, 0);
}
END_TEST

START_TEST(matmul_batched_broadcasts_batch_dims)
{
    int64_t da[3] = {2, 3, 4}, db[2] = {4, 5};
    hl_t a = in_nd("a", HL_F32, 3, da), b = in_nd("b", HL_F32, 2, db);
    hl_t c = hl_matmul(G, a, b);
    ck_assert_uint_eq(c.view.ndim, 3);
    hl_output(G, "c", c);
    double av[24], bv[20], want[30];
    uint64_t st = 11;
    for (int i = 0; i < 24; i++)
        av[i] = th_rand(&st, -1, 1);
    for (int i = 0; i < 20; i++)
        bv[i] = th_rand(&st, -1, 1);
    for (int bt = 0; bt < 2; bt++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++) {
                double s = 0;
                for (int k = 0; k < 4; k++)
                    s += av[bt * 12 + i * 4 + k] * bv[k * 5 + j];
                want[bt * 15 + i * 5 + j] = s;
            }
    const double *v[] = {av, bv};
    check1(v, want, 30, 1e-6);
}
END_TEST

START_TEST(matmul_with_vectors_drops_their_dim)
{
    int64_t dm[2] = {2, 3}, dv[1] = {3}, dw[1] = {2};
    hl_t m = in_nd("m", HL_F32, 2, dm), v = in_nd("v", HL_F32, 1, dv),
         w = in_nd("w", HL_F32, 1, dw);
    hl_t mv = hl_matmul(G, m, v), wm = hl_matmul(G, w, m);
    ck_assert_uint_eq(mv.view.ndim, 1);
    ck_assert_uint_eq(wm.view.ndim, 1);
    hl_output(G, "mv", mv);
    hl_output(G, "wm", wm);
    double mvv[] = {1, 2, 3, 4, 5, 6}, vv[] = {1, 0, -1}, wv[] = {2, -1};
    const double *vals[] = {mvv, vv, wv};
    hl_tensor out[2];
    run_all(vals, out);
    th_expect(&out[0], (double[]){-2, -2}, 2, 0);
    th_expect(&out[1], (double[]){-2, -1, 0}, 3, 0);
    th_free(out, 2);
}
END_TEST

START_TEST(embedding_picks_rows)
{
    int64_t dt[2] = {4, 3}, di[2] = {2, 2};
    hl_t table = in_nd("t", HL_F32, 2, dt), ids = in_nd("i", HL_INT, 2, di);
    hl_t e = hl_embedding(G, table, ids);
    ck_assert_uint_eq(e.view.ndim, 3);
    hl_output(G, "e", e);
    double tv[12], iv[] = {3, 0, 1, 3};
    for (int i = 0; i < 12; i++)
        tv[i] = 10 * (i / 3) + i % 3;
    const double *v[] = {tv, iv};
    check1(v, (double[]){30, 31, 32, 0, 1, 2, 10, 11, 12, 30, 31, 32}, 12, 0);
}
END_TEST

/* ---- views and data movement ---- */

START_TEST(slice_from_zero_is_a_view_and_with_offset_a_gather)
{
    int64_t d[2] = {3, 4};
    hl_t x = in_nd("x", HL_F32, 2, d);
    uint32_t before = hl_graph_node_count(G);
    hl_t a = hl_slice(G, x, 1, hl_n(G, 0), hl_n(G, 2));
    ck_assert_uint_eq(hl_graph_node_count(G), before); /* no node */
    hl_t b = hl_slice(G, x, 1, hl_n(G, 1), hl_n(G, 4));
    hl_t c = hl_slice(G, x, 0, hl_n(G, 2), hl_n(G, 3));
    hl_output(G, "a", a);
    hl_output(G, "b", b);
    hl_output(G, "c", c);
    double xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = i;
    const double *v[] = {xv};
    hl_tensor out[3];
    run_all(v, out);
    th_expect(&out[0], (double[]){0, 1, 4, 5, 8, 9}, 6, 0);
    th_expect(&out[1], (double[]){1, 2, 3, 5, 6, 7, 9, 10, 11}, 9, 0);
    th_expect(&out[2], (double[]){8, 9, 10, 11}, 4, 0);
    th_free(out, 3);
}
END_TEST

START_TEST(pad_fills_both_sides)
{
    int64_t d[2] = {2, 2};
    hl_t x = in_nd("x", HL_F32, 2, d);
    hl_output(G, "p", hl_pad(G, x, 1, hl_n(G, 1), hl_n(G, 2), -1.0f));
    double xv[] = {1, 2, 3, 4};
    const double *v[] = {xv};
    check1(v, (double[]){-1, 1, 2, -1, -1, -1, 3, 4, -1, -1}, 10, 0);
}
END_TEST

START_TEST(pad_keeps_infinities_exact)
{
    int64_t d[1] = {2};
    hl_t x = in_nd("x", HL_F32, 1, d);
    hl_output(G, "p", hl_pad(G, x, 0, hl_n(G, 1), hl_n(G, 0), 0.0f));
    double xv[] = {INFINITY, -INFINITY};
    const double *v[] = {xv};
    check1(v, (double[]){0, INFINITY, -INFINITY}, 3, 0);
}
END_TEST

START_TEST(concat_joins_along_an_axis)
{
    int64_t da[2] = {2, 1}, db[2] = {2, 2};
    hl_t a = in_nd("a", HL_F32, 2, da), b = in_nd("b", HL_F32, 2, db);
    hl_output(G, "c1", hl_concat(G, a, b, 1));
    hl_output(G, "c0", hl_concat(G, hl_transpose(G, b, 0, 1), hl_transpose(G, a, 0, 1), 0));
    double av[] = {1, 2}, bv[] = {3, 4, 5, 6};
    const double *v[] = {av, bv};
    hl_tensor out[2];
    run_all(v, out);
    th_expect(&out[0], (double[]){1, 3, 4, 2, 5, 6}, 6, 0);
    th_expect(&out[1], (double[]){3, 5, 4, 6, 1, 2}, 6, 0);
    th_free(out, 2);
}
END_TEST

START_TEST(permute_reshape_expand_broadcast)
{
    int64_t d[3] = {2, 3, 2};
    hl_t x = in_nd("x", HL_F32, 3, d);
    uint32_t perm[3] = {2, 0, 1};
    hl_t p = hl_permute(G, x, perm); /* [2, 2, 3] */
    hl_expr r6[2] = {hl_n(G, 2), hl_n(G, 6)};
    uint32_t before = hl_graph_node_count(G);
    hl_t flat = hl_reshape(G, x, 2, r6); /* contiguous: a view */
    ck_assert_uint_eq(hl_graph_node_count(G), before);
    hl_t pr = hl_reshape(G, p, 2, (hl_expr[]){hl_n(G, 4), hl_n(G, 3)}); /* merge dims 0,1: view */
    hl_t pflat = hl_reshape(G, p, 1, (hl_expr[]){hl_n(G, 12)});         /* needs a copy */
    hl_t e =
        hl_broadcast_to(G, hl_reshape(G, x, 3, (hl_expr[]){hl_n(G, 1), hl_n(G, 6), hl_n(G, 2)}), 3,
                        (hl_expr[]){hl_n(G, 2), hl_n(G, 6), hl_n(G, 2)});
    hl_output(G, "p", p);
    hl_output(G, "flat", flat);
    hl_output(G, "pr", pr);
    hl_output(G, "pflat", pflat);
    hl_output(G, "e", hl_sum_reduce(G, e, 0));
    double xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = i;
    const double *v[] = {xv};
    hl_tensor out[5];
    run_all(v, out);
    double wp[12];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++)
                wp[a * 6 + b * 3 + c] = xv[b * 6 + c * 2 + a];
    th_expect(&out[0], wp, 12, 0);
    th_expect(&out[1], xv, 12, 0);
    th_expect(&out[2], wp, 12, 0);
    th_expect(&out[3], wp, 12, 0);
    double we[12];
    for (int i = 0; i < 12; i++)
        we[i] = 2 * xv[i];
    th_expect(&out[4], we, 12, 0);
    th_free(out, 5);
}
END_TEST

/* ---- attention ---- */

START_TEST(causal_mask_is_zero_on_and_below_the_diagonal)
{
    hl_output(G, "m", hl_causal_mask(G, hl_n(G, 3), HL_F32));
    double want[9] = {0, -1e30, -1e30, 0, 0, -1e30, 0, 0, 0};
    check1(NULL, want, 9, 1e-6);
}
END_TEST

START_TEST(causal_mask_in_f16_is_minus_inf_not_nan)
{
    hl_output(G, "m", hl_causal_mask(G, hl_n(G, 2), HL_F16));
    hl_output(G, "b", hl_causal_mask(G, hl_n(G, 2), HL_BF16));
    hl_tensor out[2];
    run_all(NULL, out);
    th_expect(&out[0], (double[]){0, -INFINITY, 0, 0}, 4, 0);
    th_expect(&out[1], (double[]){0, -1e30, 0, 0}, 4, 1e-2); /* bf16 has f32's range */
    th_free(out, 2);
}
END_TEST

static void attention_ref(const double *q, const double *k, const double *v, int s, int t, int d,
                          int e, bool causal, double *out)
{
    for (int i = 0; i < s; i++) {
        double sc[16], y[16];
        for (int j = 0; j < t; j++) {
            double acc = 0;
            for (int c = 0; c < d; c++)
                acc += q[i * d + c] * k[j * d + c];
            sc[j] = acc / sqrt((double)d);
            if (causal && j > i + (t - s)) sc[j] = -INFINITY;
        }
        softmax_ref(sc, t, y, false);
        for (int c = 0; c < e; c++) {
            double acc = 0;
            for (int j = 0; j < t; j++)
                acc += y[j] * v[j * e + c];
            out[i * e + c] = acc;
        }
    }
}

START_TEST(attention_matches_the_definition)
{
    int64_t dq[3] = {2, 3, 4}, dk[3] = {2, 5, 4}, dv[3] = {2, 5, 2};
    hl_t q = in_nd("q", HL_F32, 3, dq), k = in_nd("k", HL_F32, 3, dk),
         v = in_nd("v", HL_F32, 3, dv);
    hl_output(G, "full", hl_attention(G, q, k, v, false, 0));
    hl_output(G, "causal", hl_attention(G, q, k, v, true, 0));
    double qv[24], kv[40], vv[20];
    uint64_t st = 5;
    for (int i = 0; i < 24; i++)
        qv[i] = th_rand(&st, -1, 1);
    for (int i = 0; i < 40; i++)
        kv[i] = th_rand(&st, -1, 1);
    for (int i = 0; i < 20; i++)
        vv[i] = th_rand(&st, -1, 1);
    const double *vals[] = {qv, kv, vv};
    hl_tensor out[2];
    run_all(vals, out);
    double wf[12], wc[12];
    for (int h = 0; h < 2; h++) {
        attention_ref(qv + 12 * h, kv + 20 * h, vv + 10 * h, 3, 5, 4, 2, false, wf + 6 * h);
        attention_ref(qv + 12 * h, kv + 20 * h, vv + 10 * h, 3, 5, 4, 2, true, wc + 6 * h);
    }
    th_expect(&out[0], wf, 12, 1e-5);
    th_expect(&out[1], wc, 12, 1e-5);
    th_free(out, 2);
}
END_TEST

START_TEST(rope_rotates_pairs_by_position)
{
    int64_t d[3] = {2, 3, 4};
    hl_t x = in_nd("x", HL_F32, 3, d);
    hl_output(G, "r", hl_rope(G, x, hl_n(G, 2), 10000.0f));
    double xv[24];
    uint64_t st = 9;
    for (int i = 0; i < 24; i++)
        xv[i] = th_rand(&st, -1, 1);
    double want[24];
    for (int h = 0; h < 2; h++)
        for (int s = 0; s < 3; s++)
            for (int i = 0; i < 2; i++) {
                double ang = (s + 2) * pow(10000.0, -2.0 * i / 4);
                double a = xv[h * 12 + s * 4 + i], b = xv[h * 12 + s * 4 + i + 2];
                want[h * 12 + s * 4 + i] = a * cos(ang) - b * sin(ang);
                want[h * 12 + s * 4 + i + 2] = b * cos(ang) + a * sin(ang);
            }
    const double *v[] = {xv};
    check1(v, want, 24, 1e-6);
}
END_TEST

/* ---- dynamic shapes through the builder ---- */

START_TEST(slice_pad_concat_with_a_dynamic_dim)
{
    hl_expr s = hl_graph_dim(G, "s", 2, 8, 4);
    hl_expr d[1] = {s};
    hl_t x = hl_input(G, "x", HL_F32, 1, d);
    hl_t tail = hl_slice(G, x, 0, hl_n(G, 1), s);                   /* x[1:] */
    hl_t padded = hl_pad(G, tail, 0, hl_n(G, 0), hl_n(G, 1), 9.0f); /* x[1:] + [9] */
    hl_output(G, "y", hl_concat(G, padded, x, 0));
    th_graph_ok(G);
    int64_t sv = 3, dims[1] = {3};
    hl_tensor in[1] = {th_tensor(HL_F32, 1, dims, (double[]){1, 2, 3})}, out[1];
    th_run(G, &sv, in, out);
    th_expect(&out[0], (double[]){2, 3, 9, 1, 2, 3}, 6, 0);
    th_free(out, 1);
    th_free(in, 1);
}
END_TEST

/* ---- errors ---- */

START_TEST(shape_mismatch_is_reported_and_changes_nothing)
{
    int64_t da[2] = {2, 3}, db[2] = {2, 4};
    hl_t a = in_nd("a", HL_F32, 2, da), b = in_nd("b", HL_F32, 2, db);
    uint32_t n = hl_graph_node_count(G);
    hl_t c = hl_softmax(G, hl_add(G, a, b), -1);
    ck_assert_uint_eq(c.node, HL_NONE);
    ck_assert_uint_eq(hl_graph_node_count(G), n);
    const lm_err *e = hl_graph_error(G);
    ck_assert_int_eq(e->code, HL_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(e->msg, "[2, 3]"));
    ck_assert_ptr_nonnull(strstr(e->msg, "[2, 4]"));
    /* sticky: later calls do nothing */
    ck_assert_uint_eq(hl_exp(G, a).node, HL_NONE);
    ck_assert_uint_eq(hl_graph_node_count(G), n);
    hl_graph_clear_error(G);
    ck_assert_uint_ne(hl_exp(G, a).node, HL_NONE);
}
END_TEST

START_TEST(failed_high_level_op_removes_its_partial_nodes)
{
    int64_t dq[2] = {3, 4}, dk[2] = {5, 3};
    hl_t q = in_nd("q", HL_F32, 2, dq), k = in_nd("k", HL_F32, 2, dk);
    uint32_t n = hl_graph_node_count(G);
    /* v's last-but-one dim differs from k's: fails in the second matmul, after nodes */
    hl_t v = in_nd("v", HL_F32, 2, (int64_t[]){4, 2});
    n = hl_graph_node_count(G);
    ck_assert_uint_eq(hl_attention(G, q, hl_transpose(G, k, 0, 1), v, false, 0).node, HL_NONE);
    ck_assert_int_eq(hl_graph_error(G)->code, HL_ERR_SHAPE);
    ck_assert_uint_eq(hl_graph_node_count(G), n);
}
END_TEST

START_TEST(dtype_mismatch_is_reported)
{
    int64_t d[1] = {2};
    hl_t a = in_nd("a", HL_F32, 1, d), b = in_nd("b", HL_F16, 1, d);
    ck_assert_uint_eq(hl_mul(G, a, b).node, HL_NONE);
    ck_assert_int_eq(hl_graph_error(G)->code, HL_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(hl_graph_error(G)->msg, "f16"));
}
END_TEST

START_TEST(float_only_ops_reject_int)
{
    int64_t d[1] = {2};
    hl_t a = in_nd("a", HL_INT, 1, d);
    ck_assert_uint_eq(hl_exp2(G, a).node, HL_NONE);
    ck_assert_int_eq(hl_graph_error(G)->code, HL_ERR_DTYPE);
    hl_graph_clear_error(G);
    ck_assert_uint_eq(hl_softmax(G, a, 0).node, HL_NONE);
    ck_assert_int_eq(hl_graph_error(G)->code, HL_ERR_DTYPE);
}
END_TEST

START_TEST(bad_axes_and_names_are_reported)
{
    int64_t d[2] = {2, 2};
    hl_t a = in_nd("a", HL_F32, 2, d);
    ck_assert_uint_eq(hl_sum_reduce(G, a, 2).node, HL_NONE);
    ck_assert_int_eq(hl_graph_error(G)->code, HL_ERR_ARG);
    hl_graph_clear_error(G);
    ck_assert_uint_eq(in_nd("a", HL_F32, 2, d).node, HL_NONE); /* duplicate input name */
    ck_assert_ptr_nonnull(strstr(hl_graph_error(G)->msg, "'a'"));
    hl_graph_clear_error(G);
    int twice[2] = {0, -2};
    ck_assert_uint_eq(hl_sum(G, a, 2, twice, false).node, HL_NONE);
    hl_graph_clear_error(G);
    ck_assert_uint_eq(hl_reshape(G, a, 1, (hl_expr[]){hl_n(G, 5)}).node, HL_NONE);
    ck_assert_int_eq(hl_graph_error(G)->code, HL_ERR_SHAPE);
    hl_graph_clear_error(G);
    ck_assert_uint_eq(hl_slice(G, a, 0, hl_n(G, 1), hl_n(G, 3)).node, HL_NONE);
    ck_assert_int_eq(hl_graph_error(G)->code, HL_ERR_SHAPE);
}
END_TEST

START_TEST(undeclared_dim_in_an_input_is_reported)
{
    hl_expr_pool *p = hl_graph_exprs(G);
    hl_expr d[1] = {hl_e_var(p, "batch")};
    ck_assert_uint_eq(hl_input(G, "x", HL_F32, 1, d).node, HL_NONE);
    ck_assert_int_eq(hl_graph_error(G)->code, HL_ERR_DIM);
    ck_assert_ptr_nonnull(strstr(hl_graph_error(G)->msg, "'batch'"));
}
END_TEST

START_TEST(dump_lists_every_node)
{
    int64_t d[1] = {3};
    hl_t x = in_nd("x", HL_F32, 1, d);
    hl_output(G, "y", hl_exp(G, x));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    hl_graph_dump(G, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "%0 = Input f32 [3] name=\"x\""));
    ck_assert_ptr_nonnull(strstr(buf, "Exp2 f32 [3]"));
    ck_assert_ptr_nonnull(strstr(buf, "Output f32 [3] name=\"y\""));
    ck_assert_ptr_nonnull(strstr(buf, "[3]:[z]"));
    free(buf);
}
END_TEST

START_TEST(same_calls_give_the_same_dump)
{
    char *bufs[2];
    for (int r = 0; r < 2; r++) {
        hl_graph *g = hl_graph_new();
        hl_expr s = hl_graph_dim(g, "s", 1, 64, 8);
        hl_expr d[2] = {s, hl_n(g, 8)};
        hl_t x = hl_input(g, "x", HL_F32, 2, d);
        hl_output(g, "y", hl_rope(g, hl_softmax(g, x, -1), hl_n(g, 0), 10000.0f));
        size_t len;
        FILE *f = open_memstream(&bufs[r], &len);
        hl_graph_dump(g, f);
        fclose(f);
        hl_graph_free(g);
    }
    ck_assert_str_eq(bufs[0], bufs[1]);
    free(bufs[0]);
    free(bufs[1]);
}
END_TEST

START_TEST(where_broadcasts_mask_and_branches)
{
    int64_t dm[1] = {4}, da[2] = {3, 4};
    hl_t m = in_nd("m", HL_F32, 1, dm), a = in_nd("a", HL_F32, 2, da);
    hl_t y = hl_where(G, hl_lt(G, m, hl_scalar(G, 0.0f, HL_F32)), a, hl_scalar(G, 7.0f, HL_F32));
    ck_assert_uint_eq(y.view.ndim, 2);
    hl_output(G, "y", y);
    double mv[] = {-1, 1, -1, 1}, av[12];
    for (int i = 0; i < 12; i++)
        av[i] = i;
    const double *v[] = {mv, av};
    check1(v, (double[]){0, 7, 2, 7, 4, 7, 6, 7, 8, 7, 10, 7}, 12, 0);
}
END_TEST

START_TEST(sources_iota_arange_full_contiguous)
{
    hl_expr_pool *p = hl_graph_exprs(G);
    hl_expr d23[2] = {hl_n(G, 2), hl_n(G, 3)};
    /* element (i, j) of the 2 x 3 iota is 10*i + j: z = 3*i + j */
    hl_expr e = hl_e_add(p, hl_e_mul(p, hl_e_div(p, hl_e_z(p), hl_n(G, 3)), hl_n(G, 10)),
                         hl_e_mod(p, hl_e_z(p), hl_n(G, 3)));
    hl_t io = hl_iota_nd(G, e, 2, d23);
    ck_assert_int_eq(io.dtype, HL_INT);
    hl_t ar = hl_arange(G, hl_n(G, 4), HL_F16);
    ck_assert_int_eq(ar.dtype, HL_F16);
    hl_t fu = hl_full(G, 2.5f, HL_BF16, 2, d23);
    ck_assert_uint_eq(fu.view.strides[0], hl_n(G, 0)); /* a broadcast view, no copy */
    uint32_t before = hl_graph_node_count(G);
    hl_t same = hl_contiguous(G, io);
    ck_assert_uint_eq(hl_graph_node_count(G), before); /* already contiguous */
    hl_t copy = hl_contiguous(G, hl_transpose(G, io, 0, 1));
    ck_assert_uint_eq(hl_graph_node_count(G), before + 1);
    ck_assert(hl_view_is_contiguous(p, &copy.view));
    hl_output(G, "io", same);
    hl_output(G, "ar", ar);
    hl_output(G, "fu", fu);
    hl_output(G, "copy", copy);
    hl_tensor out[4];
    run_all(NULL, out);
    th_expect(&out[0], (double[]){0, 1, 2, 10, 11, 12}, 6, 0);
    th_expect(&out[1], (double[]){0, 1, 2, 3}, 4, 0);
    th_expect(&out[2], (double[]){2.5, 2.5, 2.5, 2.5, 2.5, 2.5}, 6, 0);
    th_expect(&out[3], (double[]){0, 10, 1, 11, 2, 12}, 6, 0);
    ck_assert_int_eq(out[1].dtype, HL_F16);
    th_free(out, 4);
}
END_TEST

START_TEST(reshape_with_a_dynamic_dim)
{
    hl_expr_pool *p = hl_graph_exprs(G);
    hl_expr s = hl_graph_dim(G, "s", 1, 16, 2);
    hl_expr d[3] = {s, hl_n(G, 2), hl_n(G, 3)};
    hl_t x = hl_input(G, "x", HL_F32, 3, d);
    uint32_t before = hl_graph_node_count(G);
    hl_expr flat[2] = {hl_e_mul(p, s, hl_n(G, 2)), hl_n(G, 3)};
    hl_t r = hl_reshape(G, x, 2, flat); /* merge: a view */
    ck_assert_uint_eq(hl_graph_node_count(G), before);
    hl_expr back[3] = {s, hl_n(G, 6), hl_n(G, 1)};
    hl_t r2 = hl_reshape(G, r, 3, back); /* merge and split again, still a view */
    ck_assert_uint_eq(hl_graph_node_count(G), before);
    hl_t t = hl_transpose(G, x, 0, 2); /* [3, 2, s] */
    hl_expr tflat[1] = {hl_e_mul(p, s, hl_n(G, 6))};
    hl_t tf = hl_reshape(G, t, 1, tflat); /* needs a copy */
    ck_assert_uint_eq(hl_graph_node_count(G), before + 1);
    hl_output(G, "r", r);
    hl_output(G, "r2", r2);
    hl_output(G, "tf", tf);
    th_graph_ok(G);
    for (int64_t sv = 1; sv <= 4; sv += 3) {
        int64_t dims[3] = {sv, 2, 3};
        double xv[24];
        for (int i = 0; i < 24; i++)
            xv[i] = i;
        hl_tensor in[1] = {th_tensor(HL_F32, 3, dims, xv)}, out[3];
        th_run(G, &sv, in, out);
        th_expect(&out[0], xv, (size_t)(6 * sv), 0);
        th_expect(&out[1], xv, (size_t)(6 * sv), 0);
        double want[24];
        for (int64_t c = 0; c < 3; c++)
            for (int64_t b = 0; b < 2; b++)
                for (int64_t a = 0; a < sv; a++)
                    want[(c * 2 + b) * sv + a] = xv[a * 6 + b * 3 + c];
        th_expect(&out[2], want, (size_t)(6 * sv), 0);
        th_free(out, 3);
        th_free(in, 1);
    }
}
END_TEST

static Suite *hlir_builder_suite(void)
{
    Suite *s = suite_create("hlir_builder");
    TCase *tc = tcase_create("builder");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, neg_negates);
    tcase_add_test(tc, exp_matches_libm);
    tcase_add_test(tc, log_matches_libm);
    tcase_add_test(tc, cos_matches_libm);
    tcase_add_test(tc, sigmoid_matches_its_definition);
    tcase_add_test(tc, silu_matches_its_definition);
    tcase_add_test(tc, tanh_matches_libm);
    tcase_add_test(tc, gelu_matches_the_erf_form);
    tcase_add_test(tc, gelu_tanh_matches_the_tanh_form);
    tcase_add_test(tc, relu_clamps_negatives);
    tcase_add_test(tc, sub_div_maximum_minimum_by_hand);
    tcase_add_test(tc, comparisons_give_bool_masks);
    tcase_add_test(tc, where_selects_by_mask);
    tcase_add_test(tc, where_broadcasts_mask_and_branches);
    tcase_add_test(tc, sources_iota_arange_full_contiguous);
    tcase_add_test(tc, reshape_with_a_dynamic_dim);
    tcase_add_test(tc, sum_max_mean_over_several_axes);
    tcase_add_test(tc, mean_over_a_dynamic_dim_divides_at_run_time);
    tcase_add_test(tc, reductions_of_a_dynamic_count_keep_their_shape);
    tcase_add_test(tc, mean_of_a_static_count_is_a_scalar);
    tcase_add_test(tc, softmax_and_log_softmax_rows);
    tcase_add_test(tc, layer_norm_and_rms_norm_rows);
    tcase_add_test(tc, matmul_2d_by_hand);
    tcase_add_test(tc, matmul_batched_broadcasts_batch_dims);
    tcase_add_test(tc, matmul_with_vectors_drops_their_dim);
    tcase_add_test(tc, embedding_picks_rows);
    tcase_add_test(tc, slice_from_zero_is_a_view_and_with_offset_a_gather);
    tcase_add_test(tc, pad_fills_both_sides);
    tcase_add_test(tc, pad_keeps_infinities_exact);
    tcase_add_test(tc, concat_joins_along_an_axis);
    tcase_add_test(tc, permute_reshape_expand_broadcast);
    tcase_add_test(tc, causal_mask_is_zero_on_and_below_the_diagonal);
    tcase_add_test(tc, causal_mask_in_f16_is_minus_inf_not_nan);
    tcase_add_test(tc, attention_matches_the_definition);
    tcase_add_test(tc, rope_rotates_pairs_by_position);
    tcase_add_test(tc, slice_pad_concat_with_a_dynamic_dim);
    tcase_add_test(tc, shape_mismatch_is_reported_and_changes_nothing);
    tcase_add_test(tc, failed_high_level_op_removes_its_partial_nodes);
    tcase_add_test(tc, dtype_mismatch_is_reported);
    tcase_add_test(tc, float_only_ops_reject_int);
    tcase_add_test(tc, bad_axes_and_names_are_reported);
    tcase_add_test(tc, undeclared_dim_in_an_input_is_reported);
    tcase_add_test(tc, dump_lists_every_node);
    tcase_add_test(tc, same_calls_give_the_same_dump);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_builder_suite, NULL};
