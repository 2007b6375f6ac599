/* tcg_graphs.c - the hand-built test graphs (tcg.h). Each is built with hlir's builder,
 * so the reference runtime defines its meaning; lowered fused (tcg_case_init) it becomes
 * a region, a row region, a KMatmul or a Blas call. */
#include "tcg.h"

#include <check.h>
#include <stdio.h>

typedef hl_graph *(*builder)(void);

static hl_expr N(hl_graph *g, int64_t v)
{
    return hl_n(g, v);
}

static hl_t in2(hl_graph *g, const char *name, hl_dtype dt, hl_expr a, hl_expr b)
{
    hl_expr d[2] = {a, b};
    return hl_input(g, name, dt, 2, d);
}

static hl_t in1(hl_graph *g, const char *name, hl_dtype dt, hl_expr a)
{
    return hl_input(g, name, dt, 1, &a);
}

static hl_graph *done(hl_graph *g)
{
    ck_assert_msg(hl_graph_error(g)->code == 0, "builder: %s", hl_graph_error(g)->msg);
    return g;
}

/* elementwise: exp(x)*y + sin(x)/(1+y*y) with y broadcast along rows, in dtype dt */
static hl_graph *chain(hl_dtype dt, int64_t r, int64_t c)
{
    hl_graph *g = hl_graph_new();
    hl_t x = in2(g, "x", dt, N(g, r), N(g, c)), y = in1(g, "y", dt, N(g, c));
    hl_expr d[2] = {N(g, r), N(g, c)};
    hl_t yb = hl_broadcast_to(g, y, 2, d);
    hl_t t = hl_add(g, hl_mul(g, hl_exp(g, x), yb),
                    hl_div(g, hl_sin(g, x), hl_add_scalar(g, hl_mul(g, yb, yb), 1.0f)));
    hl_output(g, "out", t);
    return done(g);
}

static hl_graph *chain_f32(void) { return chain(HL_F32, 7, 33); }
static hl_graph *chain_bf16(void) { return chain(HL_BF16, 5, 40); }
static hl_graph *chain_f16(void) { return chain(HL_F16, 3, 17); }

/* a permuted read: out[i, j, k] = a[i, j, k] * b[k, i, j] + c[j] (b read transposed) */
static hl_graph *permuted(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr da[3] = {N(g, 3), N(g, 5), N(g, 7)}, db[3] = {N(g, 7), N(g, 3), N(g, 5)};
    hl_t a = hl_input(g, "a", HL_F32, 3, da), b = hl_input(g, "b", HL_F32, 3, db);
    hl_t c = in1(g, "c", HL_F32, N(g, 5));
    uint32_t perm[3] = {1, 2, 0};
    hl_t bt = hl_permute(g, b, perm);
    hl_t cb = hl_broadcast_to(g, hl_expand(g, c, 1, N(g, 1)), 3, da);
    hl_output(g, "out", hl_add(g, hl_mul(g, a, bt), cb));
    return done(g);
}

/* a dynamic flat chain, and dims of 1 */
static hl_graph *dynamic_flat(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr L = hl_graph_dim(g, "L", 1, 1 << 20, 37);
    hl_t x = in1(g, "x", HL_F32, L), y = in1(g, "y", HL_F32, L);
    hl_output(g, "out", hl_add(g, hl_mul(g, hl_exp2(g, x), y), hl_sqrt(g, hl_mul(g, y, y))));
    return done(g);
}

static hl_graph *ones(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[3] = {N(g, 1), N(g, 1), N(g, 5)};
    hl_t x = hl_input(g, "x", HL_F32, 3, d);
    hl_t s = hl_softmax(g, x, -1);
    hl_output(g, "out", hl_add(g, s, hl_mul_scalar(g, x, 2.0f)));
    return done(g);
}

/* row regions */
static hl_graph *softmax_g(hl_dtype dt, int64_t r, int64_t c, bool dyn)
{
    hl_graph *g = hl_graph_new();
    hl_expr R = dyn ? hl_graph_dim(g, "R", 1, 4096, r) : N(g, r);
    hl_expr C = N(g, c);
    hl_t x = in2(g, "x", dt, R, C);
    hl_output(g, "out", hl_softmax(g, x, -1));
    return done(g);
}

static hl_graph *softmax_f32_33(void) { return softmax_g(HL_F32, 5, 33, false); }
static hl_graph *softmax_f32_1(void) { return softmax_g(HL_F32, 3, 1, false); }
static hl_graph *softmax_bf16_1000(void) { return softmax_g(HL_BF16, 3, 1000, true); }
static hl_graph *softmax_f32_2050(void) { return softmax_g(HL_F32, 2, 2050, true); }
static hl_graph *softmax_f16_8192(void) { return softmax_g(HL_F16, 2, 8192, false); }

static hl_graph *softmax_dyn_cols(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr R = hl_graph_dim(g, "R", 1, 64, 3), C = hl_graph_dim(g, "C", 1, 8192, 23);
    hl_t x = in2(g, "x", HL_F32, R, C);
    hl_output(g, "out", hl_softmax(g, x, -1));
    return done(g);
}

static hl_graph *rmsnorm_g(hl_dtype dt, int64_t c)
{
    hl_graph *g = hl_graph_new();
    hl_expr R = hl_graph_dim(g, "R", 1, 1024, 4);
    hl_t x = in2(g, "x", dt, R, N(g, c)), w = in1(g, "w", dt, N(g, c));
    hl_output(g, "out", hl_rms_norm(g, x, w, 1e-5f));
    return done(g);
}

static hl_graph *rmsnorm_f32_4096(void) { return rmsnorm_g(HL_F32, 4096); }
static hl_graph *rmsnorm_bf16_100(void) { return rmsnorm_g(HL_BF16, 100); }

static hl_graph *layernorm_gelu(hl_dtype dt, int64_t c)
{
    hl_graph *g = hl_graph_new();
    hl_expr R = hl_graph_dim(g, "R", 1, 1024, 3);
    hl_t x = in2(g, "x", dt, R, N(g, c)), w = in1(g, "w", dt, N(g, c)), b = in1(g, "b", dt, N(g, c));
    hl_output(g, "out", hl_gelu(g, hl_layer_norm(g, x, w, b, 1e-5f)));
    return done(g);
}

static hl_graph *layernorm_f32_257(void) { return layernorm_gelu(HL_F32, 257); }
static hl_graph *layernorm_bf16_4096(void) { return layernorm_gelu(HL_BF16, 4096); }

/* reductions that are not row-aligned: over the first axis, the middle axis, and the
 * last axis of a transposed view */
static hl_graph *column_sum(void)
{
    hl_graph *g = hl_graph_new();
    hl_t x = in2(g, "x", HL_F32, N(g, 9), N(g, 13));
    int ax = 0;
    hl_output(g, "sum0", hl_sum(g, x, 1, &ax, false));
    hl_output(g, "max0", hl_max(g, x, 1, &ax, true));
    return done(g);
}

static hl_graph *middle_max(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[3] = {N(g, 3), N(g, 11), N(g, 5)};
    hl_t x = hl_input(g, "x", HL_BF16, 3, d);
    int ax = 1;
    hl_t m = hl_max(g, x, 1, &ax, true);
    hl_output(g, "out", hl_sub(g, x, m));
    return done(g);
}

static hl_graph *transposed_softmax(void)
{
    hl_graph *g = hl_graph_new();
    hl_t x = in2(g, "x", HL_F32, N(g, 6), N(g, 10));
    hl_output(g, "out", hl_log_softmax(g, hl_transpose(g, x, 0, 1), -1));
    return done(g);
}

/* a full reduction to a scalar */
static hl_graph *total_sum(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr L = hl_graph_dim(g, "L", 1, 100000, 3001);
    hl_t x = in1(g, "x", HL_F32, L);
    int ax = 0;
    hl_output(g, "mean", hl_mean(g, hl_mul(g, x, x), 1, &ax, false));
    return done(g);
}

/* integers, bools, casts and fp8 */
static hl_graph *integers(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr R = hl_graph_dim(g, "R", 1, 100, 7);
    hl_expr d[2] = {R, N(g, 6)};
    hl_t io = hl_iota_nd(g, hl_e_add(hl_graph_exprs(g), hl_e_z(hl_graph_exprs(g)), hl_n(g, -5)), 2, d);
    hl_t x = in2(g, "x", HL_INT, R, N(g, 6));
    hl_t m = hl_mod(g, hl_mul(g, io, x), hl_add(g, x, hl_full(g, 3.0f, HL_INT, 2, d)));
    hl_t l = hl_cast(g, hl_lt(g, m, x), HL_INT);
    hl_t s = hl_add(g, m, l);
    hl_output(g, "i", s);
    hl_output(g, "l", hl_cast(g, s, HL_I64));
    hl_output(g, "f", hl_mul_scalar(g, hl_cast(g, s, HL_F32), 0.25f));
    int ax = 1;
    hl_output(g, "rowsum", hl_sum(g, s, 1, &ax, false));
    return done(g);
}

static hl_graph *fp8(void)
{
    hl_graph *g = hl_graph_new();
    hl_t x = in2(g, "x", HL_F32, N(g, 4), N(g, 37));
    hl_t big = hl_mul_scalar(g, x, 600.0f);
    hl_output(g, "e4m3", hl_cast(g, big, HL_F8E4M3));
    hl_output(g, "e5m2", hl_cast(g, hl_mul_scalar(g, x, 70000.0f), HL_F8E5M2));
    hl_t back = hl_cast(g, hl_cast(g, big, HL_F8E4M3), HL_F32);
    hl_output(g, "round", hl_add(g, back, x));
    hl_output(g, "bool", hl_cast(g, hl_lt(g, x, hl_scalar(g, 0.0f, HL_F32)), HL_BOOL));
    return done(g);
}

static hl_graph *f16_casts(void)
{
    hl_graph *g = hl_graph_new();
    hl_t x = in2(g, "x", HL_F32, N(g, 3), N(g, 9));
    hl_t h = hl_cast(g, hl_mul_scalar(g, x, 70000.0f), HL_F16);
    hl_output(g, "h", h);
    hl_output(g, "b", hl_cast(g, hl_mul_scalar(g, x, 1e-40f), HL_BF16));
    hl_output(g, "hi", hl_cast(g, h, HL_INT));
    return done(g);
}

/* matmuls: batched with a broadcast batch, transposed b, odd sizes */
static hl_graph *matmul_g(hl_dtype dt, int64_t m, int64_t k, int64_t n, bool bt, bool batch)
{
    hl_graph *g = hl_graph_new();
    hl_t a, b;
    if (batch) {
        hl_expr da[3] = {N(g, 3), N(g, m), N(g, k)};
        a = hl_input(g, "a", dt, 3, da);
    } else {
        a = in2(g, "a", dt, N(g, m), N(g, k));
    }
    if (bt)
        b = hl_transpose(g, in2(g, "b", dt, N(g, n), N(g, k)), 0, 1);
    else
        b = in2(g, "b", dt, N(g, k), N(g, n));
    hl_output(g, "c", hl_matmul(g, a, b));
    return done(g);
}

static hl_graph *matmul_f32_odd(void) { return matmul_g(HL_F32, 67, 33, 70, false, false); }
static hl_graph *matmul_bf16_bt(void) { return matmul_g(HL_BF16, 5, 100, 129, true, true); }
static hl_graph *matmul_f16_1(void) { return matmul_g(HL_F16, 1, 17, 1, false, true); }

static hl_graph *matmul_dyn(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr M = hl_graph_dim(g, "M", 1, 4096, 65), K = hl_graph_dim(g, "K", 1, 4096, 18);
    hl_t a = in2(g, "a", HL_F32, M, K), b = in2(g, "b", HL_F32, K, N(g, 3));
    hl_t a2 = hl_transpose(g, in2(g, "at", HL_F32, K, M), 0, 1);
    hl_output(g, "c", hl_matmul(g, a, b));
    hl_output(g, "d", hl_matmul(g, a2, b));
    return done(g);
}

/* gathers and scatters */
static hl_graph *gathers(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr B = hl_graph_dim(g, "B", 1, 64, 5);
    hl_t table = in2(g, "table", HL_BF16, N(g, 4), N(g, 6));
    hl_t ids = in1(g, "ids", HL_INT, B);
    hl_t e = hl_embedding(g, table, ids);
    hl_output(g, "emb", e);
    hl_t x = in2(g, "x", HL_F32, N(g, 5), N(g, 7));
    hl_output(g, "slice", hl_slice(g, x, 1, N(g, 2), N(g, 6)));
    hl_output(g, "pad", hl_pad(g, x, 0, N(g, 1), N(g, 2), -3.0f));
    hl_output(g, "cat", hl_concat(g, x, hl_mul_scalar(g, x, 2.0f), 1));
    return done(g);
}

static const struct {
    const char *name;
    builder fn;
} HAND[] = {
    {"chain_f32", chain_f32},
    {"chain_bf16", chain_bf16},
    {"chain_f16", chain_f16},
    {"permuted", permuted},
    {"dynamic_flat", dynamic_flat},
    {"ones", ones},
    {"softmax_f32_33", softmax_f32_33},
    {"softmax_f32_1", softmax_f32_1},
    {"softmax_bf16_1000", softmax_bf16_1000},
    {"softmax_f32_2050", softmax_f32_2050},
    {"softmax_f16_8192", softmax_f16_8192},
    {"softmax_dyn_cols", softmax_dyn_cols},
    {"rmsnorm_f32_4096", rmsnorm_f32_4096},
    {"rmsnorm_bf16_100", rmsnorm_bf16_100},
    {"layernorm_gelu_f32_257", layernorm_f32_257},
    {"layernorm_gelu_bf16_4096", layernorm_bf16_4096},
    {"column_sum", column_sum},
    {"middle_max", middle_max},
    {"transposed_log_softmax", transposed_softmax},
    {"total_mean", total_sum},
    {"integers", integers},
    {"fp8", fp8},
    {"f16_casts", f16_casts},
    {"matmul_f32_odd", matmul_f32_odd},
    {"matmul_bf16_bt_batch", matmul_bf16_bt},
    {"matmul_f16_1", matmul_f16_1},
    {"matmul_dyn", matmul_dyn},
    {"gathers", gathers},
};

uint32_t tcg_hand_count(void)
{
    return sizeof HAND / sizeof HAND[0];
}

hl_graph *tcg_hand(uint32_t i, const char **name)
{
    *name = HAND[i].name;
    return HAND[i].fn();
}
