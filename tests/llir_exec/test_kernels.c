/* test_kernels.c - ll_graph_from_hlir and the executor's standalone kernels: a program of
 * standalone kernels reproduces the reference runtime bit for bit, on every example graph
 * and on generated graphs; the lowering's structure; errors name the LLIR node. */
#include "tx.h"

#include <dirent.h>
#include <stdio.h>

/* The examples in examples/graphs/ (the README lists twelve). */
#define N_EXAMPLES 17

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted names of the .json files of dir; returns their count. */
static uint32_t list_json(const char *dir, char **names, uint32_t cap)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    uint32_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) {
            ck_assert_uint_lt(n, cap);
            names[n++] = strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    return n;
}

static hl_graph *load(const char *path)
{
    lm_err e = {0};
    hl_graph *g = hl_graph_load_json(path, &e);
    ck_assert_msg(g != NULL, "%s: %s", path, e.msg);
    return g;
}

static ll_graph *lower(const hl_graph *g)
{
    lm_err e = {0};
    ll_graph *lg = ll_graph_from_hlir(g, &e);
    ck_assert_msg(lg != NULL, "from_hlir: %s", e.msg);
    return lg;
}

/* Examples whose static sizes make every dim at 3 too slow under the sanitizers: the
 * standalone Mul of each matmul materialises its [tokens, 8192, 2048] product (the
 * reference fuses it into the Sum); they run with every dim at its minimum (1). */
static bool big_static(const char *name)
{
    return strcmp(name, "swiglu_mlp_bf16.json") == 0 || strcmp(name, "llama_block_bf16.json") == 0;
}

START_TEST(examples_match_reference_bit_for_bit)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/examples/graphs", LUMINAL_SOURCE_DIR);
    char *names[64];
    uint32_t n = list_json(dir, names, 64);
    ck_assert_uint_eq(n, N_EXAMPLES);
    for (uint32_t i = 0; i < n; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        hl_graph *g = load(path);
        ll_graph *lg = lower(g);
        int64_t dims[16];
        ck_assert_uint_le(hl_graph_dim_count(g), 16);
        tx_dims(g, big_static(names[i]) ? 1 : 3, dims);
        tx_expect_same(g, lg, dims, 7, names[i]);
        ll_graph_free(lg);
        hl_graph_free(g);
        free(names[i]);
    }
}
END_TEST

static void generated(bool dynamic, uint64_t first, uint32_t count)
{
    for (uint64_t seed = first; seed < first + count; seed++) {
        hl_gen_opts o = {0};
        o.dynamic = dynamic;
        lm_err e = {0};
        hl_graph *g = hl_graph_generate(seed, &o, &e);
        ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, e.msg);
        ll_graph *lg = lower(g);
        char what[64];
        snprintf(what, sizeof what, "generated graph %llu%s", (unsigned long long)seed,
                 dynamic ? " (dynamic)" : "");
        int64_t dims[16];
        ck_assert_uint_le(hl_graph_dim_count(g), 16);
        tx_dims(g, 0, dims); /* the profile values */
        tx_expect_same(g, lg, dims, seed, what);
        if (dynamic) {
            ck_assert_uint_eq(ll_graph_dim_count(lg), hl_graph_dim_count(g));
            tx_dims(g, 1, dims); /* every dim at its minimum */
            tx_expect_same(g, lg, dims, seed + 1000, what);
        }
        ll_graph_free(lg);
        hl_graph_free(g);
    }
}

START_TEST(generated_static_graphs_match_reference)
{
    generated(false, 1, 100);
}
END_TEST

START_TEST(generated_dynamic_graphs_match_reference)
{
    generated(true, 1, 100);
}
END_TEST

/* A small graph: x f32 [s, 4], idx Int [3]; y = exp2(x) + x; out0 = sum(y, 1);
 * out1 = gather(idx, x); out2 = (x < y). */
static hl_graph *small_graph(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr s = hl_graph_dim(g, "s", 1, 8, 2);
    hl_expr d2[2] = {s, hl_n(g, 4)}, d1[1] = {hl_n(g, 3)};
    hl_t x = hl_input(g, "x", HL_F32, 2, d2);
    hl_t idx = hl_input(g, "idx", HL_INT, 1, d1);
    hl_t y = hl_add(g, hl_exp2(g, x), x);
    hl_output(g, "sum", hl_sum_reduce(g, y, 1));
    hl_output(g, "gathered", hl_gather(g, idx, x));
    hl_output(g, "less", hl_lt(g, x, y));
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    return g;
}

START_TEST(lowering_keeps_ids_ops_dtypes_and_dims)
{
    hl_graph *g = small_graph();
    ll_graph *lg = lower(g);
    ck_assert_uint_eq(ll_graph_node_count(lg), hl_graph_node_count(g));
    ck_assert_uint_eq(ll_graph_dim_count(lg), 1);
    ck_assert_str_eq(ll_graph_dim_name(lg, 0), "s");
    ck_assert_int_eq(ll_graph_dim_at(lg, 0)->lo, 1);
    ck_assert_int_eq(ll_graph_dim_at(lg, 0)->hi, 8);
    ck_assert_int_eq(ll_graph_dim_at(lg, 0)->profile, 2);
    ck_assert_uint_eq(ll_graph_input_count(lg), 2);
    ck_assert_uint_eq(ll_graph_output_count(lg), 3);
    for (uint32_t id = 0; id < hl_graph_node_count(g); id++) {
        const hl_node *h = hl_graph_node(g, id);
        const ll_node *n = ll_graph_node(lg, id);
        ck_assert_uint_eq(n->region, LM_NONE);
        ck_assert_uint_eq(n->eclass, LM_NONE);
        ck_assert_int_eq(n->dtype, h->dtype);
        ck_assert_uint_eq(n->ndim, h->ndim);
        ck_assert_uint_eq(n->n_in, h->n_in);
        for (uint32_t i = 0; i < h->n_in; i++) {
            ck_assert_uint_eq(n->in[i], h->in[i].node);
            ck_assert_uint_eq(n->prim.in[i].node, h->in[i].node);
            ck_assert_int_eq(n->in_dtype[i], hl_graph_node(g, h->in[i].node)->dtype);
        }
        const char *op = ll_op_get(n->op)->name;
        switch (h->op) {
        case HL_OP_INPUT:
            ck_assert_int_eq(n->kind, LL_INPUT);
            ck_assert_str_eq(op, "Input");
            ck_assert_str_eq(n->prim.name, h->name);
            break;
        case HL_OP_OUTPUT:
            ck_assert_int_eq(n->kind, LL_OUTPUT);
            ck_assert_str_eq(op, "Output");
            ck_assert_uint_eq(n->prim.index, h->index);
            break;
        default: {
            ck_assert_int_eq(n->kind, LL_KERNEL);
            ck_assert_int_eq(n->prim.op, h->op);
            ck_assert_int_eq(ll_op_get(n->op)->prim, h->op);
            ck_assert_int_eq(op[0], 'K');
            break;
        }
        }
    }
    ck_assert_str_eq(ll_op_get(ll_graph_node(lg, 3)->op)->name, "KAdd");
    ck_assert_str_eq(ll_op_get(ll_graph_node(lg, 4)->op)->name, "KSum");
    /* shapes are expressions of the graph's own pool, structurally equal */
    char a[64], b[64];
    const ll_node *x = ll_graph_node(lg, 0);
    hl_e_print(ll_graph_exprs(lg), x->shape[0], a, sizeof a);
    hl_e_print(hl_graph_exprs_c(g), hl_graph_node(g, 0)->shape[0], b, sizeof b);
    ck_assert_str_eq(a, b);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

START_TEST(gather_out_of_range_names_the_llir_node)
{
    hl_graph *g = small_graph();
    ll_graph *lg = lower(g);
    int64_t dims[1] = {2};
    hl_tensor in[2], out[3];
    tx_inputs(g, dims, 3, in);
    ((int32_t *)in[1].data)[1] = 99; /* x has 8 elements */
    lm_err e = {0};
    ck_assert_int_eq(ll_run(lg, dims, in, out, 0, &e), LM_ERUNTIME);
    uint32_t gather = hl_graph_node(g, hl_graph_output(g, 1))->in[0].node;
    char want[64];
    snprintf(want, sizeof want, "llir node %u (KGather kernel", gather);
    ck_assert_msg(strstr(e.msg, want) != NULL, "%s", e.msg);
    ck_assert_msg(strstr(e.msg, "99") && strstr(e.msg, "out of range"), "%s", e.msg);
    for (uint32_t o = 0; o < 3; o++)
        ck_assert_ptr_null(out[o].data);
    tx_free(in, 2);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
    hl_graph *g = small_graph();
    ll_graph *lg = lower(g);
    hl_tensor in[2], out[3];
    int64_t dims[1] = {9}; /* s is at most 8 */
    lm_err e = {0};
    tx_inputs(g, (int64_t[]){2}, 3, in);
    ck_assert_int_eq(ll_run(lg, dims, in, out, 0, &e), LM_EDIM);
    ck_assert_msg(strstr(e.msg, "'s' = 9"), "%s", e.msg);
    lm_err_clear(&e);
    dims[0] = 3; /* the inputs were made for s = 2 */
    ck_assert_int_eq(ll_run(lg, dims, in, out, 0, &e), LM_ESHAPE);
    ck_assert_msg(strstr(e.msg, "input 0 'x' must be f32 [3, 4]"), "%s", e.msg);
    lm_err_clear(&e);
    ck_assert_int_eq(ll_run(lg, dims, NULL, out, 0, &e), LM_EARG);
    tx_free(in, 2);
    /* a graph holding a builder error is not lowered */
    hl_t bad = hl_add(g, hl_node_tensor(g, 0), hl_node_tensor(g, 1)); /* f32 + int */
    ck_assert_uint_eq(bad.node, HL_NONE);
    lm_err_clear(&e);
    ck_assert_ptr_null(ll_graph_from_hlir(g, &e));
    ck_assert_int_eq(e.code, LM_EARG);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llir_exec_kernels");
    TCase *t = tcase_create("kernels");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, lowering_keeps_ids_ops_dtypes_and_dims);
    tcase_add_test(t, gather_out_of_range_names_the_llir_node);
    tcase_add_test(t, bad_arguments_are_refused);
    tcase_add_test(t, generated_static_graphs_match_reference);
    tcase_add_test(t, generated_dynamic_graphs_match_reference);
    tcase_add_test(t, examples_match_reference_bit_for_bit);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
