/* test_saved.c - programs saved to a directory and loaded again: the same bytes when saved
 * again, the same results, refusal of another compiler version, format or architecture,
 * located errors for malformed plan files, and corruption that never crashes. */
#include "pf.h"
#include "pf_dir.h"
#include "pg_int.h"

START_TEST(saved_then_loaded_then_saved_again_gives_the_same_bytes)
{
    for (int blas = 0; blas < 2; blas++) {
        pf f;
        pf_make(&f, blas);
        tmp t;
        tmp_make(&t);
        pg_program *p = cpu_new(&f, "saved", true);
        lm_err e = {0};
        ck_assert_msg(pg_program_save(p, t.a, &e) == 0, "%s", e.msg);
        pg_program *q = cpu_load(t.a);
        ck_assert_msg(pg_program_save(q, t.b, &e) == 0, "%s", e.msg);
        same_dirs(t.a, t.b);
        /* saving the same program twice: the same bytes too */
        ck_assert_msg(pg_program_save(p, t.b, &e) == 0, "%s", e.msg);
        same_dirs(t.a, t.b);
        /* what came back */
        ck_assert_str_eq(pg_program_name(q), "saved"); /* the name it was saved under */
        ck_assert_str_eq(pg_program_egraph_fingerprint(q), "eg:0123456789abcdef");
        ck_assert_str_eq(pg_program_genome_fingerprint(q), "genome:fedcba9876543210");
        ck_assert_uint_eq(q->n_variants, 2);
        ck_assert_uint_eq(q->plan.n_steps, p->plan.n_steps);
        ck_assert_uint_eq(q->plan.n_kernels, p->plan.n_kernels);
        for (uint32_t k = 0; k < p->plan.n_kernels; k++) {
            ck_assert_str_eq(q->plan.kernels[k].source, p->plan.kernels[k].source);
            ck_assert_str_eq(q->plan.kernels[k].template_name, p->plan.kernels[k].template_name);
        }
        ck_assert_str_eq(q->inputs[1].name, "y");
        pg_tensor_info info;
        ck_assert_int_eq(pg_program_output_info(q, 0, &info, &e), 0);
        ck_assert_str_eq(info.name, "out");
        ck_assert_str_eq(info.dtype, "f32");
        ck_assert_int_eq(info.dims[1], blas ? 8 : 4);
        /* the same numbers */
        pf_in in;
        pf_inputs(&in, 8, 9);
        pf_set(p, &in);
        pf_set(q, &in);
        ck_assert_msg(pg_program_run(p, &e) == 0 && pg_program_run(q, &e) == 0, "%s", e.msg);
        const void *op, *oq;
        size_t bp, bq;
        ck_assert_int_eq(pg_program_output(p, 0, &op, &bp, &e), 0);
        ck_assert_int_eq(pg_program_output(q, 0, &oq, &bq, &e), 0);
        ck_assert(bp == bq && memcmp(op, oq, bp) == 0);
        /* the plan file holds what docs/codegen.md lists */
        char path[400];
        snprintf(path, sizeof path, "%s/plan.json", t.a);
        size_t len;
        char *text = slurp(path, &len);
        const char *keys[] = {"\"format\": \"luminal-program\"",
                              "\"version\": 1",
                              "\"compiler\": \"luminal-c ",
                              "\"arch\": 90",
                              "\"provenance\"",
                              "\"xxh3_128\"",
                              "\"buckets\"",
                              "\"kernels/k0000.cu\"",
                              "\"steps\"",
                              "\"inputs\"",
                              "\"outputs\"",
                              "\"cdiv(4*n, 128)\""};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            ck_assert_msg(strstr(text, keys[i]) != NULL, "no %s in plan.json", keys[i]);
        free(text);
        pf_inputs_free(&in);
        pg_program_free(q);
        pg_program_free(p);
        rm_tree(t.root);
        pf_free(&f);
    }
}
END_TEST

/* Loads dir with the text of plan.json replaced: expects code and `want` in the message. */
static lm_err load_edited(const tmp *t, const char *from, const char *to, int code,
                          const char *want)
{
    char path[400];
    snprintf(path, sizeof path, "%s/plan.json", t->a);
    size_t len;
    char *text = slurp(path, &len);
    char *at = from ? strstr(text, from) : NULL;
    ck_assert_msg(!from || at, "no '%s' in plan.json", from);
    size_t cap = len + (to ? strlen(to) : 0) + 1;
    char *edited = malloc(cap);
    size_t n = 0;
    if (at) {
        memcpy(edited, text, (size_t)(at - text));
        n = (size_t)(at - text);
        memcpy(edited + n, to, strlen(to));
        n += strlen(to);
        size_t rest = len - (size_t)(at - text) - strlen(from);
        memcpy(edited + n, at + strlen(from), rest);
        n += rest;
    } else {
        memcpy(edited, text, len / 2); /* truncated */
        n = len / 2;
    }
    spit(path, edited, n);
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_CPU;
    lm_err e = {0};
    pg_program *p = pg_program_load(t->a, &o, &e);
    ck_assert_msg(p == NULL, "loaded after '%s' -> '%s'", from ? from : "(truncation)",
                  to ? to : "");
    ck_assert_msg(e.code == code, "code %d, wanted %d: %s", e.code, code, e.msg);
    ck_assert_msg(strstr(e.msg, want) != NULL, "'%s' not in: %s", want, e.msg);
    /* named by its directory while the plan is read, by its saved name after */
    ck_assert_msg(strncmp(e.msg, "program 'prog_a'", 16) == 0 ||
                      strncmp(e.msg, "program 'x'", 11) == 0,
                  "not named: %s", e.msg);
    spit(path, text, len);
    free(text);
    free(edited);
    return e;
}

START_TEST(plans_from_another_version_format_or_malformed_are_refused)
{
    pf f;
    pf_make(&f, true);
    tmp t;
    tmp_make(&t);
    pg_program *p = cpu_new(&f, "x", false);
    lm_err e = {0};
    ck_assert_msg(pg_program_save(p, t.a, &e) == 0, "%s", e.msg);
    pg_program_free(p);
    load_edited(&t, "\"compiler\": \"luminal-c ", "\"compiler\": \"luminal-c 0.0.0-old ",
                LM_EUNSUPPORTED, "compile the program again");
    load_edited(&t, "\"version\": 1", "\"version\": 2", LM_EUNSUPPORTED, "format version 2");
    load_edited(&t, "\"format\": \"luminal-program\"", "\"format\": \"other\"", LM_EPARSE,
                "format");
    lm_err le = load_edited(&t, NULL, NULL, LM_EPARSE, "plan.json:"); /* truncated */
    ck_assert_uint_gt(le.line, 1);
    le = load_edited(&t, "\"steps\": [", "\"steps\": [,", LM_EPARSE, "malformed JSON");
    ck_assert_uint_gt(le.line, 1);
    ck_assert_uint_gt(le.col, 1);
    char want[64];
    snprintf(want, sizeof want, "plan.json:%u:%u:", le.line, le.col);
    ck_assert_msg(strstr(le.msg, want) != NULL, "%s", le.msg);
    load_edited(&t, "\"steps\": [", "\"stepz\": 1, \"steps\": [", LM_EPARSE, "stepz: unknown key");
    load_edited(&t, "\"kernels/k0001.cu\"", "\"../../etc/passwd\"", LM_EPARSE, "kernels[1].source");
    load_edited(&t, "\"kernels/k0001.cu\"", "\"kernels/k9999.cu\"", LM_EIO, "k9999.cu");
    load_edited(&t, "\"cdiv(4*n, 128)\"", "\"cdiv(4*q, 128)\"", LM_EPARSE, "not a dim");
    load_edited(&t, "\"cdiv(4*n, 128)\"", "\"cdiv(4*n, \"", LM_EPARSE, "kernels[0].grid[0]");
    load_edited(&t, "\"cdiv(4*n, 128)\"", "7", LM_EPARSE, "expected an expression");
    load_edited(&t, "\"block\": [\n    128", "\"block\": [\n    0", LM_EPARSE, "block");
    load_edited(&t, "\"xxh3_128\": \"", "\"xxh3_128\": \"0", LM_EPARSE, "does not belong");
    /* a plan that parses but breaks an invariant */
    load_edited(&t, "\"last_step\": 1", "\"last_step\": 17", LM_EVERIFY, "live over steps");
    /* a loaded program keeps its buckets */
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_CPU;
    pg_bucket b[1] = {{1, 2}};
    pg_dim_buckets db = {"n", 1, b};
    o.n_buckets = 1;
    o.buckets = &db;
    lm_err_clear(&e);
    ck_assert_ptr_null(pg_program_load(t.a, &o, &e));
    ck_assert_int_eq(e.code, LM_EARG);
    /* saving where a file is in the way; saving into missing parents */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/plan.json/sub", t.a);
    pg_program *q = cpu_load(t.a);
    lm_err_clear(&e);
    ck_assert_int_eq(pg_program_save(q, bad, &e), LM_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "cannot make the directory"));
    ck_assert_ptr_nonnull(strstr(e.msg, "a file of that name is in the way"));
    lm_err_clear(&e);
    snprintf(bad, sizeof bad, "%s/deep/er/prog", t.root);
    ck_assert_msg(pg_program_save(q, bad, &e) == 0, "%s", e.msg);
    pg_program_free(q);
    /* no directory */
    lm_err_clear(&e);
    o.n_buckets = 0;
    ck_assert_ptr_null(pg_program_load("/nonexistent/prog", &o, &e));
    ck_assert_int_eq(e.code, LM_EIO);
    rm_tree(t.root);
    pf_free(&f);
}
END_TEST

START_TEST(corrupted_plan_files_never_crash)
{
    pf f;
    pf_make(&f, true);
    tmp t;
    tmp_make(&t);
    pg_program *p = cpu_new(&f, "x", true);
    lm_err e = {0};
    ck_assert_msg(pg_program_save(p, t.a, &e) == 0, "%s", e.msg);
    pg_program_free(p);
    char path[400];
    snprintf(path, sizeof path, "%s/plan.json", t.a);
    size_t len;
    char *text = slurp(path, &len);
    char *copy = malloc(len + 1);
    lm_pcg32 r;
    lm_pcg_seed(&r, 5, 2);
    static const char alphabet[] = "0123456789\"{}[],:-nx*/%abcdeklrstuv ";
    uint32_t loaded = 0;
    pf_in in;
    pf_inputs(&in, 8, 1);
    for (int trial = 0; trial < 400; trial++) {
        memcpy(copy, text, len + 1);
        uint32_t flips = 1 + lm_pcg_below(&r, 2);
        for (uint32_t i = 0; i < flips; i++)
            copy[lm_pcg_below(&r, (uint32_t)len)] = alphabet[lm_pcg_below(&r, sizeof alphabet - 1)];
        spit(path, copy, len);
        pg_options o;
        pg_options_default(&o);
        o.backend = PG_BACKEND_CPU;
        lm_err le = {0};
        pg_program *q = pg_program_load(t.a, &o, &le);
        if (!q) {
            ck_assert_int_ne(le.code, 0);
            continue;
        }
        loaded++;
        /* what loads must run or fail cleanly */
        lm_err re = {0};
        for (uint32_t i = 0; i < pg_program_input_count(q) && !re.code; i++) {
            pg_tensor_info info;
            if (pg_program_input_info(q, i, &info, &re)) break;
            void *buf = calloc(1, info.bytes + 1);
            memcpy(buf, in.x, info.bytes < in.nx * 4 ? info.bytes : in.nx * 4);
            pg_program_set_input(q, i, buf, info.bytes, &re);
            free(buf);
        }
        if (!re.code) pg_program_run(q, &re);
        pg_program_free(q);
    }
    ck_assert_uint_gt(loaded, 0);
    pf_inputs_free(&in);
    free(copy);
    free(text);
    rm_tree(t.root);
    pf_free(&f);
}
END_TEST

static Suite *saved_suite(void)
{
    Suite *s = suite_create("program_saved");
    TCase *tc = tcase_create("saved");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, saved_then_loaded_then_saved_again_gives_the_same_bytes);
    tcase_add_test(tc, plans_from_another_version_format_or_malformed_are_refused);
    tcase_add_test(tc, corrupted_plan_files_never_crash);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {saved_suite, NULL};
