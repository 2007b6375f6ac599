/* test_pack.c - ll_graph_copy and binary LLIR (ll_graph_pack / ll_graph_unpack), both
 * measured against the LLIR file: over generated graphs and many genomes of the example
 * graphs (the least and most fused, the library one and random ones), the copy and the
 * unpacked graph write the original's JSON byte for byte and have its fingerprint; the
 * copy owns everything (it outlives the original); packing is deterministic; every
 * truncation, every corrupted byte and hostile buffers with a valid checksum are refused
 * without a crash; each allocation failing in turn is a clean LM_ENOMEM. */
#include "../llir/tl.h"
#include "ll_int.h"
#include "llir.h"

#include "../llir_exec/tx.h"
#include "lm_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static char *json_of(const ll_graph *g)
{
    lm_err e = {0};
    char *t = ll_graph_write_json(g, &e);
    ck_assert_msg(t != NULL, "%s", e.msg);
    return t;
}

static void pack(const ll_graph *g, uint8_t **buf, size_t *len)
{
    lm_err e = {0};
    void *b = NULL;
    ck_assert_msg(ll_graph_pack(g, &b, len, &e) == LM_OK, "%s", e.msg);
    ck_assert(b != NULL && *len > 28);
    *buf = b;
}

/* The copy and the unpacked graph of g write g's JSON and have its fingerprint; packing
 * twice, and packing the unpacked graph, give the same bytes. Returns the number of
 * bytes packed. */
static size_t check_graph(const ll_graph *g, const char *what)
{
    char *want = json_of(g);
    ll_fingerprint fp = ll_graph_fingerprint(g);
    lm_err e = {0};

    ll_graph *c = ll_graph_copy(g, &e);
    ck_assert_msg(c != NULL, "%s: %s", what, e.msg);
    char *got = json_of(c);
    ck_assert_msg(strcmp(want, got) == 0, "%s: the copy writes other JSON", what);
    ll_fingerprint fc = ll_graph_fingerprint(c);
    ck_assert(fc.lo == fp.lo && fc.hi == fp.hi);
    ck_assert_msg(ll_graph_verify(c, &e) == LM_OK, "%s: %s", what, e.msg);
    free(got);

    /* the JSON round trip and the copy agree */
    ll_graph *j = ll_graph_read_json(want, strlen(want), what, &e);
    ck_assert_msg(j != NULL, "%s: %s", what, e.msg);
    got = json_of(j);
    ck_assert_str_eq(got, want);
    free(got);
    ll_graph_free(j);

    uint8_t *a, *b;
    size_t la, lb;
    pack(g, &a, &la);
    pack(g, &b, &lb);
    ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s: packing is not deterministic", what);
    free(b);
    ll_graph *u = ll_graph_unpack(a, la, &e);
    ck_assert_msg(u != NULL, "%s: %s", what, e.msg);
    got = json_of(u);
    ck_assert_msg(strcmp(want, got) == 0, "%s: the unpacked graph writes other JSON", what);
    free(got);
    ll_fingerprint fu = ll_graph_fingerprint(u);
    ck_assert(fu.lo == fp.lo && fu.hi == fp.hi);
    pack(u, &b, &lb);
    ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s: repacking gives other bytes", what);
    free(b);
    /* the copy packs to the same bytes as the original */
    pack(c, &b, &lb);
    ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s: the copy packs to other bytes", what);
    free(b);
    free(a);
    ll_graph_free(u);
    ll_graph_free(c);
    free(want);
    return la;
}

START_TEST(generated_graphs_copy_and_pack_to_the_same_json)
{
    for (uint64_t seed = 1; seed <= 60; seed++) {
        hl_gen_opts o = {.n_ops = 12, .max_dim = 5, .dynamic = seed % 2 == 0};
        lm_err he = {0};
        hl_graph *h = hl_graph_generate(seed, &o, &he);
        ck_assert_msg(h != NULL, "%s", he.msg);
        lm_err e = {0};
        ll_graph *g = ll_graph_from_hlir(h, &e);
        ck_assert_msg(g != NULL, "%s", e.msg);
        char what[32];
        snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
        check_graph(g, what);
        ll_graph_free(g);
        hl_graph_free(h);
    }
}
END_TEST

START_TEST(genome_graphs_copy_and_pack_to_the_same_json)
{
    const char *names[] = {"swiglu_mlp_bf16", "layernorm_gelu_f32_4096", "embedding_gather",
                           "causal_attention_bf16", "matmul_f32_2048", "llama_block_bf16"};
    uint32_t graphs = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        hl_graph *h = tl_example(names[i]);
        tl_env t;
        tl_build(&t, h, NULL);
        lm_pcg32 rng;
        lm_pcg_seed(&rng, 29, i);
        for (int which = 0; which < 14; which++) {
            ll_genome gn;
            lm_err e = {0};
            ck_assert(ll_genome_init(&gn, t.s, &e) == LM_OK);
            int rc = which == 0   ? ll_genome_least_fused(&gn, t.s, &e)
                     : which == 1 ? ll_genome_most_fused(&gn, t.s, &e)
                     : which == 2 ? ll_genome_library(&gn, t.s, &e)
                     : which == 3 ? ll_genome_fused_stored(&gn, t.s, &e)
                                  : ll_genome_random(&gn, t.s, &rng, &e);
            ck_assert_msg(rc == LM_OK, "%s", e.msg);
            ll_graph *g = tl_graph(t.s, &gn);
            char what[96];
            snprintf(what, sizeof what, "%s genome %d", names[i], which);
            check_graph(g, what);
            graphs++;
            ll_graph_free(g);
            ll_genome_fini(&gn);
        }
        tl_fini(&t);
        hl_graph_free(h);
    }
    ck_assert_uint_eq(graphs, 6 * 14);
}
END_TEST

START_TEST(the_copy_owns_everything)
{
    hl_graph *h = tl_example("swiglu_mlp_bf16");
    tl_env t;
    tl_build(&t, h, NULL);
    ll_genome gn;
    lm_err e = {0};
    ck_assert(ll_genome_init(&gn, t.s, &e) == LM_OK);
    ck_assert(ll_genome_most_fused(&gn, t.s, &e) == LM_OK);
    ll_graph *g = tl_graph(t.s, &gn);
    char *want = json_of(g);
    ll_graph *c = ll_graph_copy(g, &e);
    ck_assert_msg(c != NULL, "%s", e.msg);
    ck_assert_ptr_ne(ll_graph_exprs(c), ll_graph_exprs(g));
    ll_graph_free(g); /* the copy must not need the original, the space or the engine */
    ll_genome_fini(&gn);
    tl_fini(&t);
    char *got = json_of(c);
    ck_assert_str_eq(got, want);
    for (uint32_t i = 0; i < ll_graph_input_count(c); i++)
        ck_assert_ptr_nonnull(ll_graph_node(c, ll_graph_input(c, i))->prim.name);
    free(got);
    free(want);
    ll_graph_free(c);
    hl_graph_free(h);
}
END_TEST

/* A small packed graph with dims, a region and a library call. */
static ll_graph *small_graph(void)
{
    hl_graph *h = tl_example("swiglu_mlp_bf16");
    tl_env t;
    tl_build(&t, h, NULL);
    ll_genome gn;
    lm_err e = {0};
    ck_assert(ll_genome_init(&gn, t.s, &e) == LM_OK);
    ck_assert(ll_genome_most_fused(&gn, t.s, &e) == LM_OK);
    ll_graph *g = tl_graph(t.s, &gn);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(h);
    return g;
}

static void reseal(uint8_t *b, size_t len)
{
    uint64_t sum = XXH3_64bits(b + 28, len - 28);
    for (uint32_t i = 0; i < 8; i++)
        b[20 + i] = (uint8_t)(sum >> (8 * i));
}

static void expect_refused(const uint8_t *b, size_t len, int code, const char *want)
{
    lm_err e = {0};
    ll_graph *g = ll_graph_unpack(b, len, &e);
    ck_assert_ptr_null(g);
    ck_assert_msg(e.code == code, "code %d (%s), want %d", e.code, e.msg, code);
    if (want) ck_assert_msg(strstr(e.msg, want) != NULL, "\"%s\" lacks \"%s\"", e.msg, want);
}

START_TEST(truncated_and_corrupted_buffers_are_refused)
{
    ll_graph *g = small_graph();
    uint8_t *b;
    size_t len;
    pack(g, &b, &len);
    uint8_t *c = malloc(len + 8);
    /* every truncation */
    for (size_t n = 0; n < len; n++) {
        memcpy(c, b, n);
        expect_refused(c, n, LM_EPARSE, NULL);
    }
    expect_refused(b, 27, LM_EPARSE, "less than the 28 of a header");
    /* bytes appended */
    memcpy(c, b, len);
    c[len] = 0;
    expect_refused(c, len + 1, LM_EPARSE, "bytes appended");
    /* every byte flipped, one at a time: the header's fields or the checksum refuse it */
    for (size_t i = 0; i < len; i++) {
        memcpy(c, b, len);
        c[i] ^= (uint8_t)(1u << (i % 8));
        lm_err e = {0};
        ll_graph *x = ll_graph_unpack(c, len, &e);
        ck_assert_ptr_null(x);
        ck_assert_msg(e.code == LM_EPARSE || (i >= 8 && i < 12 && e.code == LM_EUNSUPPORTED),
                      "byte %zu: %d %s", i, e.code, e.msg);
    }
    memcpy(c, b, len);
    c[0] = 'X';
    expect_refused(c, len, LM_EPARSE, "not binary LLIR");
    memcpy(c, b, len);
    c[8] = 2;
    expect_refused(c, len, LM_EUNSUPPORTED, "version 2");
    memcpy(c, b, len);
    c[len - 1] ^= 0x55;
    expect_refused(c, len, LM_EPARSE, "checksum");
    /* hostile: a node count far beyond the bytes, with a valid checksum */
    free(c);
    free(b);
    ll_graph_free(g);
}
END_TEST

START_TEST(hostile_buffers_with_a_valid_checksum_never_crash)
{
    ll_graph *g = small_graph();
    uint8_t *b;
    size_t len;
    pack(g, &b, &len);
    uint8_t *c = malloc(len);
    lm_pcg32 rng;
    lm_pcg_seed(&rng, 5, 2);
    uint32_t parse = 0, verify = 0, read = 0;
    for (int trial = 0; trial < 4000; trial++) {
        memcpy(c, b, len);
        uint32_t flips = 1 + lm_pcg_below(&rng, 4);
        for (uint32_t f = 0; f < flips; f++) {
            size_t at = 28 + lm_pcg_below(&rng, (uint32_t)(len - 28));
            c[at] = trial % 3 == 0 ? (uint8_t)lm_pcg_below(&rng, 256)
                                   : (uint8_t)(c[at] ^ (1u << lm_pcg_below(&rng, 8)));
        }
        reseal(c, len);
        lm_err e = {0};
        ll_graph *x = ll_graph_unpack(c, len, &e);
        if (!x) {
            ck_assert_msg(e.code == LM_EPARSE || e.code == LM_EVERIFY, "%d %s", e.code, e.msg);
            ck_assert(e.msg[0] != '\0');
            parse += e.code == LM_EPARSE;
            verify += e.code == LM_EVERIFY;
            continue;
        }
        /* what is accepted is a verified graph that writes and packs */
        read++;
        ck_assert_msg(ll_graph_verify(x, &e) == LM_OK, "%s", e.msg);
        char *t = json_of(x);
        free(t);
        ll_graph_free(x);
    }
    ck_assert_uint_gt(parse, 0);
    ck_assert_uint_gt(verify, 0); /* some reach the verifier, which refuses them */
    (void)read;
    free(c);
    free(b);
    ll_graph_free(g);
}
END_TEST

START_TEST(counts_beyond_the_buffer_are_refused_before_allocating)
{
    /* header + dims 0 + origins 0 + exprs 0 + nodes count 2^32-1 */
    uint8_t buf[64] = {'L', 'L', 'I', 'R', 'b', 'i', 'n', '\0', 1, 0, 0, 0};
    size_t n = 28;
    buf[n++] = 0;
    buf[n++] = 0;
    buf[n++] = 0;
    uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    memcpy(buf + n, big, sizeof big);
    n += sizeof big;
    uint64_t pl = n - 28;
    for (uint32_t i = 0; i < 8; i++)
        buf[12 + i] = (uint8_t)(pl >> (8 * i));
    reseal(buf, n);
    expect_refused(buf, n, LM_EPARSE, "nodes count");
    /* an expression count beyond the bytes */
    n = 28;
    buf[n++] = 0;
    buf[n++] = 0;
    memcpy(buf + n, big, sizeof big);
    n += sizeof big;
    pl = n - 28;
    for (uint32_t i = 0; i < 8; i++)
        buf[12 + i] = (uint8_t)(pl >> (8 * i));
    reseal(buf, n);
    expect_refused(buf, n, LM_EPARSE, "exprs count");
    /* a binary expression reading itself */
    n = 28;
    buf[n++] = 0; /* dims */
    buf[n++] = 0; /* origins */
    buf[n++] = 2; /* exprs */
    buf[n++] = HL_E_NUM;
    buf[n++] = 2; /* 1 */
    buf[n++] = HL_E_ADD;
    buf[n++] = 0;
    buf[n++] = 1; /* b = 1: itself */
    buf[n++] = 0; /* nodes */
    pl = n - 28;
    for (uint32_t i = 0; i < 8; i++)
        buf[12 + i] = (uint8_t)(pl >> (8 * i));
    reseal(buf, n);
    expect_refused(buf, n, LM_EPARSE, "exprs[1] b: 1 is out of range [0, 0]");
}
END_TEST

START_TEST(out_of_memory_in_copy_pack_and_unpack_is_an_error)
{
    ll_graph *g = small_graph();
    uint8_t *b;
    size_t len;
    pack(g, &b, &len);
    for (int what = 0; what < 3; what++) {
        bool fired = true;
        long n;
        for (n = 0; fired; n++) {
            lm_err e = {0};
            ll__mem_fail_after(n);
            ll_graph *x = NULL;
            void *pb = NULL;
            size_t pl = 0;
            int rc = 0;
            if (what == 0)
                x = ll_graph_copy(g, &e);
            else if (what == 1)
                rc = ll_graph_pack(g, &pb, &pl, &e);
            else
                x = ll_graph_unpack(b, len, &e);
            fired = ll__mem_fail_fired();
            ll__mem_fail_after(-1);
            if (fired) {
                ck_assert_msg(e.code == LM_ENOMEM, "%d after %ld: %s", what, n, e.msg);
                ck_assert_ptr_null(x);
                ck_assert_ptr_null(pb);
                ck_assert_int_ne(rc == 0 && what == 1, 1);
            } else {
                ck_assert_msg(what == 1 ? rc == 0 : x != NULL, "%s", e.msg);
            }
            ll_graph_free(x);
            free(pb);
        }
        ck_assert_int_gt(n, 3);
    }
    free(b);
    ll_graph_free(g);
}
END_TEST

static Suite *pack_suite(void)
{
    Suite *s = suite_create("llir_pack");
    TCase *tc = tcase_create("pack");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, generated_graphs_copy_and_pack_to_the_same_json);
    tcase_add_test(tc, genome_graphs_copy_and_pack_to_the_same_json);
    tcase_add_test(tc, the_copy_owns_everything);
    tcase_add_test(tc, truncated_and_corrupted_buffers_are_refused);
    tcase_add_test(tc, hostile_buffers_with_a_valid_checksum_never_crash);
    tcase_add_test(tc, counts_beyond_the_buffer_are_refused_before_allocating);
    tcase_add_test(tc, out_of_memory_in_copy_pack_and_unpack_is_an_error);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {pack_suite, NULL};
