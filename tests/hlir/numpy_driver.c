/* numpy_driver.c - builds a set of graphs, runs each on the reference runtime with seeded
 * random inputs, and writes inputs and outputs for numpy_check.py, which recomputes every
 * output with numpy and compares.
 *
 * Usage: hlir_numpy_driver OUTDIR. Writes OUTDIR/manifest.json:
 *   {"cases": [{"name": N, "inputs": [T...], "outputs": [T...]}]}
 * where each T is {"file": F, "shape": [...], "dtype": "f32"|...} and F holds the
 * elements as little-endian float64 (exactly the values the runtime saw or produced).
 * Input values: each input gets an init (names starting "pos" [0.1, 4), "ids" ints in
 * [0, 10), other floats [-3, 3)) and is filled by hl_graph_fill_input, as every tool fills
 * a graph's inputs; the seed is the case's number. */
#include "hlir.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *OUT;
static json_t *CASES;
static uint64_t CASE_NO; /* the seed of the next case's inputs */

static json_t *write_tensor(const char *file, const hl_tensor *t)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", OUT, file);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    for (size_t i = 0; i < t->numel; i++) {
        double v = hl_tensor_get(t, i);
        fwrite(&v, sizeof v, 1, f);
    }
    fclose(f);
    json_t *shape = json_array();
    for (uint32_t d = 0; d < t->ndim; d++)
        json_array_append_new(shape, json_integer(t->dims[d]));
    return json_pack("{s:s, s:o, s:s}", "file", file, "shape", shape, "dtype",
                     hl_dtype_name(t->dtype));
}

static void emit(const char *name, hl_graph *g)
{
    const lm_err *be = hl_graph_error(g);
    if (be->code) {
        fprintf(stderr, "case %s: builder error: %s\n", name, be->msg);
        exit(1);
    }
    lm_err err;
    lm_err_clear(&err);
    if (hl_graph_check(g, &err)) {
        fprintf(stderr, "case %s: check: %s\n", name, err.msg);
        exit(1);
    }
    uint32_t ni = hl_graph_input_count(g), no = hl_graph_output_count(g);
    hl_tensor in[8], out[8];
    json_t *jin = json_array(), *jout = json_array();
    for (uint32_t i = 0; i < ni; i++) {
        const hl_node *nd = hl_graph_node(g, hl_graph_input(g, i));
        int64_t dims[HL_MAX_DIMS];
        for (uint32_t d = 0; d < nd->ndim; d++)
            if (!hl_e_is_num(hl_graph_exprs_c(g), nd->shape[d], &dims[d])) exit(2);
        if (hl_tensor_init(&in[i], nd->dtype, nd->ndim, dims, &err)) exit(2);
        hl_init init = {HL_INIT_UNIFORM, -3, 3};
        if (strncmp(nd->name, "ids", 3) == 0) init = (hl_init){HL_INIT_UNIFORM, 0, 10};
        if (strncmp(nd->name, "pos", 3) == 0) init = (hl_init){HL_INIT_UNIFORM, 0.1, 4};
        if (hl_graph_set_input_init(g, i, &init) ||
            hl_graph_fill_input(g, i, &in[i], CASE_NO, &err)) {
            fprintf(stderr, "case %s: input %u: %s%s\n", name, i, hl_graph_error(g)->msg, err.msg);
            exit(1);
        }
        char file[256];
        snprintf(file, sizeof file, "%s_in%u.bin", name, i);
        json_array_append_new(jin, write_tensor(file, &in[i]));
    }
    if (hl_run(g, NULL, in, out, NULL, &err)) {
        fprintf(stderr, "case %s: run: %s\n", name, err.msg);
        exit(1);
    }
    for (uint32_t i = 0; i < no; i++) {
        char file[256];
        snprintf(file, sizeof file, "%s_out%u.bin", name, i);
        json_array_append_new(jout, write_tensor(file, &out[i]));
        hl_tensor_fini(&out[i]);
    }
    for (uint32_t i = 0; i < ni; i++)
        hl_tensor_fini(&in[i]);
    json_array_append_new(
        CASES, json_pack("{s:s, s:o, s:o}", "name", name, "inputs", jin, "outputs", jout));
    CASE_NO++;
    hl_graph_free(g);
}

static hl_t inp(hl_graph *g, const char *name, hl_dtype dt, uint32_t n, const int64_t *dims)
{
    hl_expr d[HL_MAX_DIMS];
    for (uint32_t i = 0; i < n; i++)
        d[i] = hl_n(g, dims[i]);
    return hl_input(g, name, dt, n, d);
}

typedef hl_t (*unop)(hl_graph *, hl_t);

static void unary_cases(void)
{
    struct {
        const char *name;
        unop f;
        bool pos;
    } ops[] = {{"exp", hl_exp, false},
               {"log", hl_log, true},
               {"sin", hl_sin, false},
               {"cos", hl_cos, false},
               {"sigmoid", hl_sigmoid, false},
               {"silu", hl_silu, false},
               {"tanh", hl_tanh, false},
               {"gelu", hl_gelu, false},
               {"gelu_tanh", hl_gelu_tanh, false},
               {"relu", hl_relu, false},
               {"neg", hl_neg, false},
               {"sqrt", hl_sqrt, true},
               {"recip", hl_recip, true},
               {"exp2", hl_exp2, false},
               {"log2", hl_log2, true}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        hl_graph *g = hl_graph_new();
        int64_t d[1] = {257};
        hl_t x = inp(g, ops[i].pos ? "pos" : "x", HL_F32, 1, d);
        hl_output(g, "y", ops[i].f(g, x));
        char name[64];
        snprintf(name, sizeof name, "unary_%s", ops[i].name);
        emit(name, g);
    }
}

typedef hl_t (*binop)(hl_graph *, hl_t, hl_t);

static void binary_cases(void)
{
    struct {
        const char *name;
        binop f;
    } ops[] = {{"add", hl_add},         {"sub", hl_sub},         {"mul", hl_mul}, {"div", hl_div},
               {"maximum", hl_maximum}, {"minimum", hl_minimum}, {"lt", hl_lt},   {"gt", hl_gt},
               {"le", hl_le},           {"ge", hl_ge},           {"eq", hl_eq},   {"ne", hl_ne}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        hl_graph *g = hl_graph_new();
        hl_t a = inp(g, "a", HL_F32, 3, (int64_t[]){4, 1, 5});
        hl_t b = inp(g, "b", HL_F32, 2, (int64_t[]){3, 1});
        if (strcmp(ops[i].name, "eq") == 0 || strcmp(ops[i].name, "ne") == 0 ||
            strcmp(ops[i].name, "le") == 0 || strcmp(ops[i].name, "ge") == 0) {
            /* make equal values likely: round to halves */
            a = hl_mul_scalar(g, hl_cast(g, hl_cast(g, hl_mul_scalar(g, a, 2.0f), HL_INT), HL_F32),
                              0.5f);
            b = hl_mul_scalar(g, hl_cast(g, hl_cast(g, hl_mul_scalar(g, b, 2.0f), HL_INT), HL_F32),
                              0.5f);
        }
        hl_output(g, "y", ops[i].f(g, a, b));
        char name[64];
        snprintf(name, sizeof name, "binary_%s", ops[i].name);
        emit(name, g);
    }
}

static void other_cases(void)
{
    hl_graph *g;
    int ax02[2] = {0, 2}, ax1[1] = {1};

    g = hl_graph_new();
    hl_t m = inp(g, "a", HL_F32, 2, (int64_t[]){3, 4});
    hl_t x = inp(g, "b", HL_F32, 2, (int64_t[]){3, 4});
    hl_output(g, "y", hl_where(g, hl_lt(g, m, hl_scalar(g, 0.0f, HL_F32)), x, m));
    emit("where", g);

    g = hl_graph_new();
    x = inp(g, "x", HL_F32, 3, (int64_t[]){3, 4, 5});
    hl_output(g, "sum02", hl_sum(g, x, 2, ax02, false));
    hl_output(g, "max02k", hl_max(g, x, 2, ax02, true));
    hl_output(g, "mean1", hl_mean(g, x, 1, ax1, false));
    emit("reduce", g);

    g = hl_graph_new();
    x = inp(g, "x", HL_F32, 3, (int64_t[]){4, 7, 3});
    hl_output(g, "sm", hl_softmax(g, x, 1));
    hl_output(g, "lsm", hl_log_softmax(g, x, -1));
    emit("softmax", g);

    g = hl_graph_new();
    x = inp(g, "x", HL_F32, 2, (int64_t[]){6, 16});
    hl_t w = inp(g, "w", HL_F32, 1, (int64_t[]){16});
    hl_t b = inp(g, "b", HL_F32, 1, (int64_t[]){16});
    hl_output(g, "ln", hl_layer_norm(g, x, w, b, 1e-5f));
    hl_output(g, "rms", hl_rms_norm(g, x, w, 1e-6f));
    emit("norms", g);

    g = hl_graph_new();
    hl_t a = inp(g, "a", HL_F32, 4, (int64_t[]){2, 1, 3, 4});
    b = inp(g, "b", HL_F32, 3, (int64_t[]){5, 4, 6});
    hl_output(g, "c", hl_matmul(g, a, b));
    emit("matmul_batched", g);

    g = hl_graph_new();
    a = inp(g, "a", HL_F32, 2, (int64_t[]){48, 64});
    b = inp(g, "b", HL_F32, 2, (int64_t[]){64, 40});
    hl_output(g, "c", hl_matmul(g, a, b));
    emit("matmul_2d", g);

    g = hl_graph_new();
    hl_t q = inp(g, "q", HL_F32, 3, (int64_t[]){2, 6, 8});
    hl_t k = inp(g, "k", HL_F32, 3, (int64_t[]){2, 6, 8});
    hl_t v = inp(g, "v", HL_F32, 3, (int64_t[]){2, 6, 8});
    hl_output(g, "o", hl_attention(g, q, k, v, true, 0));
    emit("attention_causal", g);

    g = hl_graph_new();
    x = inp(g, "x", HL_F32, 3, (int64_t[]){2, 5, 8});
    hl_output(g, "r", hl_rope(g, x, hl_n(g, 3), 10000.0f));
    emit("rope", g);

    g = hl_graph_new();
    hl_t t = inp(g, "table", HL_F32, 2, (int64_t[]){10, 4});
    hl_t ids = inp(g, "ids", HL_INT, 2, (int64_t[]){3, 2});
    hl_output(g, "e", hl_embedding(g, t, ids));
    emit("embedding", g);

    g = hl_graph_new();
    x = inp(g, "x", HL_F32, 3, (int64_t[]){3, 4, 5});
    hl_output(g, "slice", hl_slice(g, x, 1, hl_n(g, 1), hl_n(g, 3)));
    hl_output(g, "pad", hl_pad(g, x, 2, hl_n(g, 2), hl_n(g, 1), 0.5f));
    hl_output(g, "concat", hl_concat(g, x, hl_slice(g, x, 2, hl_n(g, 1), hl_n(g, 3)), 2));
    emit("movement", g);

    g = hl_graph_new();
    x = inp(g, "x", HL_F32, 3, (int64_t[]){2, 3, 4});
    hl_t p = hl_permute(g, x, (uint32_t[]){2, 0, 1});
    hl_output(g, "r", hl_reshape(g, p, 2, (hl_expr[]){hl_n(g, 8), hl_n(g, 3)}));
    emit("permute_reshape", g);

    hl_dtype low[2] = {HL_BF16, HL_F16};
    for (int i = 0; i < 2; i++) { /* every node rounds its result to the storage format */
        g = hl_graph_new();
        a = inp(g, "a", low[i], 1, (int64_t[]){257});
        b = inp(g, "b", low[i], 1, (int64_t[]){257});
        hl_t c = inp(g, "c", low[i], 1, (int64_t[]){257});
        hl_t ab = hl_mul(g, a, b);
        hl_output(g, "y", hl_recip(g, hl_add(g, ab, c)));
        hl_output(g, "s", hl_sum_reduce(g, hl_expand(g, ab, 0, hl_n(g, 3)), 0));
        emit(i == 0 ? "chain_bf16" : "chain_f16", g);
    }

    g = hl_graph_new();
    x = inp(g, "x", HL_F32, 1, (int64_t[]){512});
    /* scale into f16's subnormal, normal and overflow ranges */
    hl_t sx = hl_mul(g, hl_exp2(g, hl_mul_scalar(g, x, 9.0f)), x);
    hl_output(g, "src", sx);
    hl_output(g, "h", hl_cast(g, hl_cast(g, sx, HL_F16), HL_F32));
    hl_output(g, "tiny", hl_cast(g, hl_cast(g, hl_mul_scalar(g, sx, 1e-9f), HL_F16), HL_F32));
    emit("cast_f16", g);
}

/* Low-precision reductions: each is checked bit for bit against numpy following the
 * reference's rules (docs/hlir.md, "Precision"): a SumReduce adds its inputs in f32 in
 * index order and rounds once; a Mul read only by a SumReduce (a matmul, a dot product, a
 * norm's sum of squares) gives exact products to that f32 sum; every other node rounds
 * its result to its dtype. */
static void low_precision_cases(void)
{
    hl_graph *g;
    hl_dtype low[2] = {HL_BF16, HL_F16};
    const char *sfx[2] = {"bf16", "f16"};
    int last[1] = {-1}, first[1] = {0};
    for (int i = 0; i < 2; i++) {
        char name[64];
        hl_dtype t = low[i];
        /* a[m, k] @ b[k, n]: the batched kernel, b streamed by rows */
        g = hl_graph_new(); /* inputs made one per statement: in order, a then b */
        hl_t a = inp(g, "a", t, 2, (int64_t[]){17, 40});
        hl_t b = inp(g, "b", t, 2, (int64_t[]){40, 24});
        hl_output(g, "c", hl_matmul(g, a, b));
        snprintf(name, sizeof name, "matmul_%s", sfx[i]);
        emit(name, g);
        /* a @ b^T: b packed first (the q k^T layout) */
        g = hl_graph_new();
        a = inp(g, "a", t, 2, (int64_t[]){9, 40});
        b = inp(g, "b", t, 2, (int64_t[]){24, 40});
        hl_output(g, "c", hl_matmul(g, a, hl_transpose(g, b, 0, 1)));
        snprintf(name, sizeof name, "matmul_bt_%s", sfx[i]);
        emit(name, g);
        /* sum(a * b) along rows: the fused loop without the matmul layout */
        g = hl_graph_new();
        a = inp(g, "a", t, 2, (int64_t[]){6, 33});
        b = inp(g, "b", t, 2, (int64_t[]){6, 33});
        hl_output(g, "d", hl_sum(g, hl_mul(g, a, b), 1, last, false));
        snprintf(name, sizeof name, "dot_rows_%s", sfx[i]);
        emit(name, g);
        /* plain reductions: along rows, down columns (row by row), max, mean */
        g = hl_graph_new();
        hl_t x = inp(g, "x", t, 2, (int64_t[]){5, 37});
        hl_output(g, "sum", hl_sum(g, x, 1, last, false));
        hl_output(g, "sum0", hl_sum(g, x, 1, first, false));
        hl_output(g, "max", hl_max(g, x, 1, last, false));
        hl_output(g, "mean", hl_mean(g, x, 1, last, false));
        snprintf(name, sizeof name, "reduce_%s", sfx[i]);
        emit(name, g);
        /* softmax and the norms, as the primitives they are built from */
        g = hl_graph_new();
        x = inp(g, "x", t, 2, (int64_t[]){16, 256});
        hl_output(g, "softmax", hl_softmax(g, x, -1));
        hl_output(g, "rms", hl_rms_norm(g, x, (hl_t){.node = HL_NONE}, 1e-5f));
        hl_output(g, "ln",
                  hl_layer_norm(g, x, (hl_t){.node = HL_NONE}, (hl_t){.node = HL_NONE}, 1e-5f));
        snprintf(name, sizeof name, "norms_%s", sfx[i]);
        emit(name, g);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    OUT = argv[1];
    CASES = json_array();
    unary_cases();
    binary_cases();
    other_cases();
    low_precision_cases();
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.json", OUT);
    json_t *root = json_pack("{s:o}", "cases", CASES);
    if (json_dump_file(root, path, JSON_INDENT(1) | JSON_SORT_KEYS)) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    json_decref(root);
    return 0;
}
