/* make_example - saves the fixture's program (pf.h, with its cuBLASLt call) for the
 * example's test, and writes what the example must print for it: the output checksums of
 * llir's executor run directly on the same seeded inputs (examples/program/seeded.h).
 * A Check program (the fixture asserts), told where by its environment:
 *
 *     PG_EXAMPLE_DIR=DIR PG_EXAMPLE_N=N PG_EXAMPLE_SEED=SEED test_program_example_make
 *
 * writes DIR/plan.json, DIR/llir.json, DIR/kernels/ and DIR/expected.txt. */
#include "../../examples/program/seeded.h"
#include "pf.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    ck_assert_msg(v && v[0], "%s is not set", name);
    return v;
}

START_TEST(save_the_example_and_what_it_must_print)
{
    const char *dir = env("PG_EXAMPLE_DIR");
    int64_t n = strtoll(env("PG_EXAMPLE_N"), NULL, 10);
    uint64_t seed = strtoull(env("PG_EXAMPLE_SEED"), NULL, 10);
    pf f;
    pf_make(&f, true);
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_CPU;
    o.name = "example";
    o.egraph_fingerprint = "handmade";
    o.genome_fingerprint = "handmade";
    lm_err e = {0};
    pg_program *p = pg_program_new(&f.plan, f.g, &o, &e);
    ck_assert_msg(p && pg_program_save(p, dir, &e) == 0, "%s", e.msg);
    pg_program_free(p);
    /* the expected output, by llir's executor directly */
    hl_tensor in[3], out[1];
    int64_t dx[2] = {n, 4}, dw[2] = {4, 8};
    lm_err he = {0};
    ck_assert_msg(hl_tensor_init(&in[0], HL_F32, 2, dx, &he) == 0 &&
                      hl_tensor_init(&in[1], HL_F32, 2, dx, &he) == 0 &&
                      hl_tensor_init(&in[2], HL_F32, 2, dw, &he) == 0,
                  "%s", he.msg);
    for (uint32_t i = 0; i < 3; i++)
        ex_fill(in[i].data, in[i].numel, "f32", seed, i);
    ck_assert_msg(ll_run(f.g, &n, in, out, 0, &e) == 0, "%s", e.msg);
    char path[1024];
    snprintf(path, sizeof path, "%s/expected.txt", dir);
    FILE *fo = fopen(path, "w");
    ck_assert_msg(fo != NULL, "cannot write %s", path);
    ex_print_output(fo, "out", "f32", out[0].ndim, out[0].dims, out[0].data, out[0].numel * 4);
    fclose(fo);
    for (uint32_t i = 0; i < 3; i++)
        hl_tensor_fini(&in[i]);
    hl_tensor_fini(&out[0]);
    pf_free(&f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("program_example_make");
    TCase *tc = tcase_create("make");
    tcase_add_test(tc, save_the_example_and_what_it_must_print);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {make_suite, NULL};
