/* test_serial.c - the LLIR file (ll_graph_write_json / ll_graph_read_json): a graph read
 * back writes the same bytes and runs to the same bits; regions, matmuls and library
 * calls keep every field; non-finite constants keep their bits; malformed files are
 * located errors; random corruption never crashes the reader or the executor. */
#include "../llir/tl.h"
#include "ll_build.h"
#include "ll_lower.h"
#include "ll_int.h"
#include "llir.h"

#include "../llir_exec/tx.h"
#include "lm_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes g, reads it back, writes again: same bytes; returns the graph read. */
static ll_graph *round_trip(const ll_graph *g, const char *what)
{
    lm_err e = {0};
    char *a = ll_graph_write_json(g, &e);
    ck_assert_msg(a != NULL, "%s: %s", what, e.msg);
    ll_graph *back = ll_graph_read_json(a, strlen(a), what, &e);
    ck_assert_msg(back != NULL, "%s: %s", what, e.msg);
    char *b = ll_graph_write_json(back, &e);
    ck_assert_msg(b != NULL, "%s: %s", what, e.msg);
    ck_assert_msg(strcmp(a, b) == 0, "%s: the graph read back writes other bytes", what);
    ck_assert_uint_eq(ll_graph_node_count(back), ll_graph_node_count(g));
    ck_assert_uint_eq(ll_graph_input_count(back), ll_graph_input_count(g));
    ck_assert_uint_eq(ll_graph_output_count(back), ll_graph_output_count(g));
    free(a);
    free(b);
    return back;
}

/* Both graphs compute the same bits at dims on seeded inputs of h. */
static void same_run(const hl_graph *h, const ll_graph *x, const ll_graph *y, const int64_t *dims)
{
    hl_tensor in[TX_MAX_IO], ox[TX_MAX_IO], oy[TX_MAX_IO];
    tx_inputs(h, dims, 11, in);
    tx_ll(x, dims, in, ox);
    tx_ll(y, dims, in, oy);
    for (uint32_t o = 0; o < ll_graph_output_count(x); o++)
        ck_assert_msg(tx_same_bits(&ox[o], &oy[o]), "output %u differs after the round trip", o);
    tx_free(in, hl_graph_input_count(h));
    tx_free(ox, ll_graph_output_count(x));
    tx_free(oy, ll_graph_output_count(y));
}

START_TEST(generated_graphs_round_trip_to_the_same_bytes_and_bits)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        hl_gen_opts o = {.n_ops = 10, .max_dim = 5, .dynamic = seed % 2 == 0};
        lm_err he = {0};
        hl_graph *h = hl_graph_generate(seed, &o, &he);
        ck_assert_msg(h != NULL, "%s", he.msg);
        lm_err e = {0};
        ll_graph *g = ll_graph_from_hlir(h, &e);
        ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, e.msg);
        char what[32];
        snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
        ll_graph *back = round_trip(g, what);
        ck_assert_uint_eq(ll_graph_dim_count(back), ll_graph_dim_count(g));
        int64_t dims[8];
        tx_dims(h, 0, dims);
        same_run(h, g, back, dims);
        ll_graph_free(back);
        ll_graph_free(g);
        hl_graph_free(h);
    }
}
END_TEST

START_TEST(example_graphs_round_trip_to_the_same_bytes)
{
    const char *names[] = {"causal_attention_bf16", "llama_block_bf16", "primitives_strided",
                           "embedding_gather", "swiglu_mlp_bf16"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/graphs/%s.json", LUMINAL_SOURCE_DIR, names[i]);
        lm_err he = {0};
        hl_graph *h = hl_graph_load_json(path, &he);
        ck_assert_msg(h != NULL, "%s", he.msg);
        lm_err e = {0};
        ll_graph *g = ll_graph_from_hlir(h, &e);
        ck_assert_msg(g != NULL, "%s: %s", names[i], e.msg);
        ll_graph *back = round_trip(g, names[i]);
        /* the nodes keep their fields: compare a few through the accessors */
        for (uint32_t id = 0; id < ll_graph_node_count(g); id++) {
            const ll_node *a = ll_graph_node(g, id), *b = ll_graph_node(back, id);
            ck_assert_int_eq(a->kind, b->kind);
            ck_assert_int_eq(a->op, b->op);
            ck_assert_int_eq(a->dtype, b->dtype);
            ck_assert_uint_eq(a->ndim, b->ndim);
            ck_assert_uint_eq(a->n_in, b->n_in);
            ck_assert_int_eq(a->prim.op, b->prim.op);
            if (a->prim.op == HL_OP_CONSTANT)
                ck_assert(memcmp(&a->prim.constant, &b->prim.constant, sizeof(float)) == 0);
        }
        ll_graph_free(back);
        ll_graph_free(g);
        hl_graph_free(h);
    }
}
END_TEST

START_TEST(genome_graphs_round_trip_with_their_provenance_and_fingerprint)
{
    const char *names[] = {"swiglu_mlp_bf16", "layernorm_gelu_f32_4096", "embedding_gather",
                           "matmul_f32_2048"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        hl_graph *h = tl_example(names[i]);
        tl_env t;
        tl_build(&t, h, NULL);
        lm_pcg32 rng;
        lm_pcg_seed(&rng, 17, i);
        for (int which = 0; which < 4; which++) {
            ll_genome gn;
            lm_err e = {0};
            ck_assert(ll_genome_init(&gn, t.s, &e) == LM_OK);
            int rc = which == 0   ? ll_genome_least_fused(&gn, t.s, &e)
                     : which == 1 ? ll_genome_most_fused(&gn, t.s, &e)
                                  : ll_genome_random(&gn, t.s, &rng, &e);
            ck_assert_msg(rc == LM_OK, "%s", e.msg);
            ll_graph *g = tl_graph(t.s, &gn);
            ll_graph *back = round_trip(g, names[i]);
            ck_assert_msg(ll_graph_verify(back, &e) == LM_OK, "%s: %s", names[i], e.msg);
            ll_fingerprint a = ll_graph_fingerprint(g), b = ll_graph_fingerprint(back);
            ck_assert(a.lo == b.lo && a.hi == b.hi);
            bool origins = false;
            for (uint32_t id = 0; id < ll_graph_node_count(g); id++) {
                const ll_node *x = ll_graph_node(g, id), *y = ll_graph_node(back, id);
                ck_assert_uint_eq(x->eclass, y->eclass);
                ck_assert_uint_eq(x->enode, y->enode);
                ck_assert_str_eq(ll_graph_origin(g, x->origin), ll_graph_origin(back, y->origin));
                origins |= x->origin != LM_NONE;
            }
            ck_assert(origins); /* the rules' names came through */
            ll_graph_free(back);
            ll_graph_free(g);
            ll_genome_fini(&gn);
        }
        tl_fini(&t);
        hl_graph_free(h);
    }
}
END_TEST

/* a [2, 3, 4] bf16 times b [4, 5] as a library call with alpha, C, bias and gelu, and a
 * region over the result. */
static hl_graph *blas_graph(uint32_t *sum, uint32_t *rnode, uint32_t *bnode, uint32_t *tail)
{
    hl_graph *g = hl_graph_new();
    hl_expr da[3] = {hl_n(g, 2), hl_n(g, 3), hl_n(g, 4)}, db[2] = {hl_n(g, 4), hl_n(g, 5)};
    hl_expr dr[3] = {hl_n(g, 2), hl_n(g, 3), hl_n(g, 5)}, dbias[1] = {hl_n(g, 5)};
    hl_t a = hl_input(g, "a", HL_BF16, 3, da), b = hl_input(g, "b", HL_BF16, 2, db);
    hl_t r = hl_input(g, "r", HL_BF16, 3, dr), bias = hl_input(g, "bias", HL_F32, 1, dbias);
    hl_t c = hl_matmul(g, a, b);
    hl_t y = hl_exp2(g, hl_mul(g, c, c));
    hl_output(g, "c", c);
    hl_output(g, "y", y);
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    *sum = c.node;
    *rnode = r.node;
    *bnode = bias.node;
    *tail = y.node;
    return g;
}

START_TEST(library_calls_and_regions_keep_every_field)
{
    uint32_t sum, rn, bn, tail;
    hl_graph *h = blas_graph(&sum, &rn, &bn, &tail);
    uint32_t n = hl_graph_node_count(h);
    ll_lower_impl *impl = calloc(n, sizeof *impl);
    ll_lower_blas *bl = calloc(n, sizeof *bl);
    impl[hl_graph_node(h, sum)->in[0].node] = LL_LOWER_INLINE;
    impl[sum] = LL_LOWER_BLAS;
    bl[sum] = (ll_lower_blas){0.5, HL_BF16, rn, bn, true};
    impl[hl_graph_node(h, tail)->in[0].node] = LL_LOWER_INLINE; /* the Mul, inside */
    impl[tail] = LL_LOWER_REGION;
    ll_lower_plan plan = {impl, bl};
    lm_err e = {0};
    ll_graph *g = ll__lower_hlir(h, &plan, &e);
    ck_assert_msg(g != NULL, "%s", e.msg);
    ll_graph *back = round_trip(g, "blas");
    uint32_t libs = 0, regions = 0, fused = 0;
    for (uint32_t id = 0; id < ll_graph_node_count(back); id++) {
        const ll_node *a = ll_graph_node(g, id), *b = ll_graph_node(back, id);
        ck_assert_uint_eq(a->region, b->region);
        if (b->kind == LL_LIBRARY) {
            libs++;
            ck_assert(b->mm.alpha == a->mm.alpha && b->mm.beta == a->mm.beta);
            ck_assert_int_eq(b->mm.epilogue, LL_EPI_BIAS_GELU);
            ck_assert_int_eq(b->mm.type_bias, HL_F32);
            ck_assert_int_eq(b->mm.order_a, a->mm.order_a);
            ck_assert_uint_eq(b->n_in, 4);
        }
        regions += b->kind == LL_REGION;
        fused += b->kind == LL_FUSED;
    }
    ck_assert_uint_eq(libs, 1);
    ck_assert_uint_eq(regions, 1);
    ck_assert_uint_ge(fused, 2);
    same_run(h, g, back, NULL);
    ll_graph_free(back);
    ll_graph_free(g);
    free(impl);
    free(bl);
    hl_graph_free(h);
}
END_TEST

START_TEST(non_finite_constants_keep_their_bits)
{
    hl_graph *h = hl_graph_new();
    hl_expr d[1] = {hl_n(h, 4)};
    hl_t x = hl_input(h, "x", HL_F32, 1, d);
    hl_t m = hl_full(h, -INFINITY, HL_F32, 1, d);
    hl_output(h, "y", hl_maximum(h, x, m));
    hl_output(h, "z", hl_add(h, x, hl_full(h, NAN, HL_F32, 1, d)));
    ck_assert(hl_graph_error(h)->code == 0);
    lm_err e = {0};
    ll_graph *g = ll_graph_from_hlir(h, &e);
    ck_assert_msg(g != NULL, "%s", e.msg);
    char *text = ll_graph_write_json(g, &e);
    ck_assert_ptr_nonnull(strstr(text, "\"0xff800000\"")); /* -inf */
    free(text);
    ll_graph *back = round_trip(g, "inf");
    same_run(h, g, back, NULL);
    ll_graph_free(back);
    ll_graph_free(g);
    hl_graph_free(h);
}
END_TEST

/* Reads text and expects code with `want` in the message. */
static lm_err expect_fail(const char *text, int code, const char *want)
{
    lm_err e = {0};
    ll_graph *g = ll_graph_read_json(text, strlen(text), "t.json", &e);
    ck_assert_msg(g == NULL, "read '%s'", text);
    ck_assert_msg(e.code == code, "code %d (%s), wanted %d", e.code, e.msg, code);
    ck_assert_msg(strstr(e.msg, want) != NULL, "'%s' not in: %s", want, e.msg);
    ck_assert_msg(strncmp(e.msg, "t.json", 6) == 0, "not located: %s", e.msg);
    return e;
}

#define HEAD "{\"format\": \"luminal-llir\", \"version\": 1, "
#define DIMS "\"dims\": [{\"name\": \"n\", \"lo\": 1, \"hi\": 8, \"profile\": 2}], "
#define INPUT                                                                                      \
    "{\"id\": 0, \"kind\": \"input\", \"op\": \"Input\", \"dtype\": \"f32\", \"shape\": "          \
    "[\"n\"], \"in\": [], \"in_dtype\": [], \"prim\": {\"op\": \"Input\", \"dtype\": \"f32\", "    \
    "\"shape\": [\"n\"], \"in\": [], \"name\": \"x\", \"index\": 0}}"

START_TEST(a_valid_small_file_reads)
{
    const char *ok = HEAD DIMS "\"nodes\": [" INPUT "]}";
    lm_err e = {0};
    ll_graph *g = ll_graph_read_json(ok, strlen(ok), "t.json", &e);
    ck_assert_msg(g != NULL, "%s", e.msg);
    ck_assert_uint_eq(ll_graph_input_count(g), 1);
    ck_assert_str_eq(ll_graph_node(g, 0)->prim.name, "x");
    ll_graph_free(g);
}
END_TEST

START_TEST(malformed_files_are_located_errors)
{
    lm_err e =
        expect_fail("{\"format\": \"luminal-llir\",\n  \"version\": }", LM_EPARSE, "t.json:2:");
    ck_assert_uint_eq(e.line, 2);
    ck_assert_uint_gt(e.col, 0);
    expect_fail("[]", LM_EPARSE, "must be a JSON object");
    expect_fail("{\"format\": \"other\", \"version\": 1, \"dims\": [], \"nodes\": []}", LM_EPARSE,
                "format");
    expect_fail("{\"format\": \"luminal-llir\", \"version\": 7, \"dims\": [], \"nodes\": []}",
                LM_EUNSUPPORTED, "version 7");
    expect_fail(HEAD DIMS "\"nodes\": [], \"extra\": 1}", LM_EPARSE, "extra: unknown key");
    expect_fail(HEAD "\"dims\": [{\"name\": \"n\", \"lo\": 5, \"hi\": 2, \"profile\": 3}], "
                     "\"nodes\": []}",
                LM_EPARSE, "dims[0]");
    /* an unknown op, a bad expression, an undeclared dim, a wrong id, a dangling input */
    char buf[2048];
    snprintf(buf, sizeof buf, HEAD DIMS "\"nodes\": [%s]}", INPUT);
    char *p = strstr(buf, "\"op\": \"Input\"");
    memcpy(p, "\"op\": \"Nope!\"", 13);
    expect_fail(buf, LM_EPARSE, "nodes[0].op");
    snprintf(buf, sizeof buf, HEAD DIMS "\"nodes\": [%s]}", INPUT);
    p = strstr(buf, "[\"n\"]");
    memcpy(p, "[\"+\"]", 5);
    expect_fail(buf, LM_EPARSE, "nodes[0].shape[0]");
    snprintf(buf, sizeof buf, HEAD DIMS "\"nodes\": [%s]}", INPUT);
    p = strstr(buf, "[\"n\"]");
    memcpy(p, "[\"q\"]", 5);
    expect_fail(buf, LM_EPARSE, "'q', which is not a dim");
    snprintf(buf, sizeof buf, HEAD DIMS "\"nodes\": [%s]}", INPUT);
    p = strstr(buf, "\"id\": 0");
    memcpy(p, "\"id\": 3", 7);
    expect_fail(buf, LM_EPARSE, "listed at position 0");
    snprintf(buf, sizeof buf,
             HEAD DIMS "\"nodes\": [%s, {\"id\": 1, \"kind\": \"kernel\", \"op\": \"KExp2\", "
                       "\"dtype\": \"f32\", \"shape\": [\"n\"], \"in\": [9], \"in_dtype\": "
                       "[\"f32\"]}]}",
             INPUT);
    expect_fail(buf, LM_EPARSE, "nodes");
    /* two inputs with index 0 */
    snprintf(buf, sizeof buf, HEAD DIMS "\"nodes\": [%s, %s]}", INPUT, INPUT);
    p = strstr(buf + strlen(HEAD DIMS) + 20, "\"id\": 0");
    memcpy(p, "\"id\": 1", 7);
    expect_fail(buf, LM_EPARSE, "nodes");
}
END_TEST

START_TEST(corrupted_files_never_crash_the_reader_or_the_executor)
{
    uint32_t sum, rn, bn, tail;
    hl_graph *h = blas_graph(&sum, &rn, &bn, &tail);
    lm_err e = {0};
    ll_graph *g = ll_graph_from_hlir(h, &e);
    ck_assert_msg(g != NULL, "%s", e.msg);
    char *text = ll_graph_write_json(g, &e);
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    lm_pcg32 rng;
    lm_pcg_seed(&rng, 7, 1);
    hl_tensor in[TX_MAX_IO];
    tx_inputs(h, NULL, 3, in);
    uint32_t read = 0, ran = 0;
    static const char alphabet[] = "0123456789\"{}[],:-+*/%nzabcdefxyNul ";
    for (int trial = 0; trial < 1500; trial++) {
        memcpy(copy, text, len + 1);
        uint32_t flips = 1 + lm_pcg_below(&rng, 3);
        for (uint32_t f = 0; f < flips; f++)
            copy[lm_pcg_below(&rng, (uint32_t)len)] =
                alphabet[lm_pcg_below(&rng, sizeof alphabet - 1)];
        lm_err re = {0};
        ll_graph *x = ll_graph_read_json(copy, len, "fuzz", &re);
        if (!x) {
            ck_assert_int_ne(re.code, 0);
            ck_assert(re.msg[0] != '\0');
            continue;
        }
        read++;
        hl_tensor out[TX_MAX_IO];
        lm_err xe = {0};
        if (ll_graph_input_count(x) == hl_graph_input_count(h) &&
            ll_run(x, NULL, in, out, (uint64_t)64 << 20, &xe) == 0) {
            ran++;
            tx_free(out, ll_graph_output_count(x));
        }
        ll_graph_free(x);
    }
    ck_assert_uint_gt(read, 0); /* some flips land in harmless places */
    (void)ran;
    tx_free(in, hl_graph_input_count(h));
    free(copy);
    free(text);
    ll_graph_free(g);
    hl_graph_free(h);
}
END_TEST

START_TEST(out_of_memory_while_reading_is_an_error)
{
    hl_gen_opts o = {.n_ops = 8, .max_dim = 4, .dynamic = true};
    lm_err he = {0};
    hl_graph *h = hl_graph_generate(3, &o, &he);
    lm_err e = {0};
    ll_graph *g = ll_graph_from_hlir(h, &e);
    char *text = ll_graph_write_json(g, &e);
    bool fired = true;
    for (long n = 0; fired; n++) {
        ll__mem_fail_after(n);
        lm_err re = {0};
        ll_graph *x = ll_graph_read_json(text, strlen(text), "oom", &re);
        fired = ll__mem_fail_fired();
        ll__mem_fail_after(-1);
        if (fired) {
            ck_assert_ptr_null(x);
            ck_assert_msg(re.code == LM_ENOMEM, "after %ld allocations: %s", n, re.msg);
        } else {
            ck_assert_msg(x != NULL, "%s", re.msg);
        }
        ll_graph_free(x);
    }
    free(text);
    ll_graph_free(g);
    hl_graph_free(h);
}
END_TEST

static Suite *serial_suite(void)
{
    Suite *s = suite_create("llir_serial");
    TCase *tc = tcase_create("serial");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, generated_graphs_round_trip_to_the_same_bytes_and_bits);
    tcase_add_test(tc, example_graphs_round_trip_to_the_same_bytes);
    tcase_add_test(tc, genome_graphs_round_trip_with_their_provenance_and_fingerprint);
    tcase_add_test(tc, library_calls_and_regions_keep_every_field);
    tcase_add_test(tc, non_finite_constants_keep_their_bits);
    tcase_add_test(tc, a_valid_small_file_reads);
    tcase_add_test(tc, malformed_files_are_located_errors);
    tcase_add_test(tc, corrupted_files_never_crash_the_reader_or_the_executor);
    tcase_add_test(tc, out_of_memory_while_reading_is_an_error);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {serial_suite, NULL};
