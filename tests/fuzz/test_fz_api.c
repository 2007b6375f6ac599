/* test_fz_api.c - the fuzz module's calls (fuzz.h) beside the fuzz itself (test_fuzz.c):
 * how the rules are given (the built-in ones, a file, a text: the same genomes), refusals
 * named, the seeded inputs (fz_inputs) and the spread reported per output. */
#include "tf.h"

#include <math.h>

#define SOFTMAX LUMINAL_SOURCE_DIR "/examples/graphs/softmax_f32_4096x8192.json"

/* The hashes of the genomes checked, in order. */
typedef struct seen {
    uint64_t hash[64];
    uint32_t n;
} seen;

static void record(void *ctx, const fz_case *c, const hl_graph *g, const ll_space *s,
                   const ll_genome *gn, const ll_graph *lg)
{
    (void)g, (void)s, (void)gn, (void)lg;
    seen *x = ctx;
    ck_assert_int_eq(c->stage, FZ_PASSED);
    if (x->n < 64) x->hash[x->n++] = c->hash;
}

static seen run(const hl_graph *g, const fz_options *base)
{
    seen x = {0};
    fz_hooks h = {.ctx = &x, .each = record};
    fz_result r;
    lm_err err = {0};
    ck_assert_msg(fz_run(g, base, &h, &r, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(r.checked, x.n);
    ck_assert_uint_eq(r.failed, 0);
    /* each output's scale over its RMS: at least 1 (the scale is the larger of the two) */
    for (uint32_t i = 0; i < r.n_outputs && i < FZ_MAX_TOL; i++)
        ck_assert_msg(r.spread[i] >= 1.0, "output %u: spread %g", i, r.spread[i]);
    return x;
}

START_TEST(the_rules_given_three_ways_give_the_same_genomes)
{
    hl_graph *g = tf_load(SOFTMAX);
    char *text = tf_read(LUMINAL_SOURCE_DIR "/tests/llir/data/rules.dsl");
    fz_options file = {.n = 12, .seed = 3,
                       .rules_path = LUMINAL_SOURCE_DIR "/tests/llir/data/rules.dsl"};
    fz_options inline_text = {.n = 12, .seed = 3, .rules = text, .rules_name = "t.dsl"};
    seen a = run(g, &file), b = run(g, &inline_text);
    ck_assert_uint_eq(a.n, 12);
    ck_assert_uint_eq(a.n, b.n);
    ck_assert_mem_eq(a.hash, b.hash, a.n * sizeof a.hash[0]);
    /* the built-in rules (none given) are the compiler's: another space */
    fz_options builtin = {.n = 12, .seed = 3};
    seen c = run(g, &builtin);
    ck_assert_uint_eq(c.n, 12);
    ck_assert(memcmp(a.hash, c.hash, a.n * sizeof a.hash[0]) != 0);
    free(text);
    hl_graph_free(g);
}
END_TEST

START_TEST(refusals_are_named)
{
    hl_graph *g = tf_load(SOFTMAX);
    fz_result r;
    lm_err err = {0};
    fz_options none = {.n = 0};
    ck_assert_int_eq(fz_run(g, &none, NULL, &r, &err), LM_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "no genomes"));
    lm_err_clear(&err);
    ck_assert_int_eq(fz_run(NULL, &none, NULL, &r, &err), LM_EARG);
    lm_err_clear(&err);
    fz_options missing = {.n = 4, .rules_path = "/nonexistent/r.dsl"};
    ck_assert_int_eq(fz_run(g, &missing, NULL, &r, &err), LM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/r.dsl"));
    ck_assert_uint_eq(r.checked, 0);
    hl_graph_free(g);
}
END_TEST

START_TEST(inputs_are_seeded_by_stream)
{
    hl_graph *g = tf_load(LUMINAL_SOURCE_DIR "/examples/graphs/decode_mlp_bf16.json");
    uint32_t ni = hl_graph_input_count(g), nd = hl_graph_dim_count(g);
    ck_assert_uint_ge(ni, 2);
    int64_t dims[16];
    ck_assert_uint_le(nd, 16);
    fz_default_dims(g, dims);
    hl_tensor a[16] = {0}, b[16] = {0}, c[16] = {0};
    ck_assert_uint_le(ni, 16);
    lm_err err = {0};
    ck_assert_msg(fz_inputs(g, dims, 5, a, &err) == 0, "%s", err.msg);
    ck_assert_msg(fz_inputs(g, dims, 5, b, &err) == 0, "%s", err.msg);
    ck_assert_msg(fz_inputs(g, dims, 6, c, &err) == 0, "%s", err.msg);
    bool differs = false;
    for (uint32_t i = 0; i < ni; i++) {
        const hl_node *in = hl_graph_node(g, hl_graph_input(g, i));
        ck_assert_int_eq(a[i].dtype, in->dtype);
        ck_assert_uint_eq(a[i].ndim, in->ndim);
        size_t bytes = a[i].numel * hl_dtype_size(a[i].dtype);
        ck_assert_uint_gt(a[i].numel, 0);
        ck_assert_mem_eq(a[i].data, b[i].data, bytes); /* the same seed, the same bytes */
        /* as hl_graph_fill_input fills input i alone */
        hl_tensor t = {0};
        ck_assert_int_eq(hl_tensor_init(&t, a[i].dtype, a[i].ndim, a[i].dims, &err), 0);
        ck_assert_int_eq(hl_graph_fill_input(g, i, &t, 5, &err), 0);
        ck_assert_mem_eq(t.data, a[i].data, bytes);
        hl_tensor_fini(&t);
        differs |= memcmp(a[i].data, c[i].data, bytes) != 0;
    }
    ck_assert(differs); /* another seed, other values */
    for (uint32_t i = 0; i < ni; i++) {
        hl_tensor_fini(&a[i]);
        hl_tensor_fini(&b[i]);
        hl_tensor_fini(&c[i]);
    }
    hl_graph_free(g);
}
END_TEST

/* Every request the fuzz makes of the counted door failed in turn, with the compile
 * session made beforehand (fz_options.session; the session's own requests are failed in
 * turn by tests/session): a clean LM_ENOMEM each time (or the failure absorbed and the
 * fuzz whole, never as a failed genome), nothing left behind. */
START_TEST(each_allocation_failed_in_turn)
{
    hl_graph *g = tf_load(SOFTMAX);
    lm_err e0 = {0};
    cs_session *cs = cs_session_new(g, NULL, &e0);
    ck_assert_msg(cs != NULL, "%s", e0.msg);
    fz_options o = {.n = 3, .seed = 1, .session = cs};
    fz_result r;
    lm_mem_stats_reset();
    ck_assert_msg(fz_run(g, &o, NULL, &r, &e0) == 0, "%s", e0.msg);
    uint64_t calls = 0;
    lm_mem_stats(&calls, NULL);
    ck_assert_uint_eq(r.checked, 3);
    ck_assert_uint_ge(calls, 10);
    uint64_t failed = 0, absorbed = 0;
    long i = 0;
    for (;; i++) {
        lm_err err = {0};
        lm_mem_fail_after(i);
        int rc = fz_run(g, &o, NULL, &r, &err);
        bool fired = lm_mem_fail_fired();
        lm_mem_fail_after(-1);
        if (!fired) {
            ck_assert_msg(rc == 0, "%s", err.msg);
            break;
        }
        if (rc == 0) { /* never as a failed genome: memory says nothing of a genome */
            ck_assert_uint_eq(r.checked, 3);
            ck_assert_uint_eq(r.failed, 0);
            absorbed++;
        } else {
            ck_assert_msg(rc == LM_ENOMEM, "allocation %ld: %s (%s)", i, err.msg,
                          lm_code_ident(rc));
            failed++;
        }
    }
    ck_assert_uint_eq((uint64_t)i, calls);
    ck_assert_uint_eq(failed + absorbed, calls);
    ck_assert_uint_ge(failed, 1);
    /* a session of another graph is refused */
    hl_graph *other = tf_load(LUMINAL_SOURCE_DIR "/examples/graphs/decode_mlp_bf16.json");
    lm_err e1 = {0};
    ck_assert_int_eq(fz_run(other, &o, NULL, &r, &e1), LM_EARG);
    hl_graph_free(other);
    cs_session_free(cs);
    hl_graph_free(g);
}
END_TEST

static Suite *fz_api_suite(void)
{
    Suite *s = suite_create("fuzz_api");
    TCase *t = tcase_create("fuzz_api");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, the_rules_given_three_ways_give_the_same_genomes);
    tcase_add_test(t, refusals_are_named);
    tcase_add_test(t, inputs_are_seeded_by_stream);
    tcase_add_test(t, each_allocation_failed_in_turn);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {fz_api_suite, NULL};
