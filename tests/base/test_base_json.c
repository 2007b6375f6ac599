/* test_base_json.c - the one JSON writer (lm_json.h): its layout, escaping and numbers
 * are jansson's json_dumps (the reader the project keeps), checked byte for byte on
 * random documents of every kind of value in every layout; the text reads back to the
 * values written (doubles exactly, floats exactly as floats); misuse, invalid UTF-8,
 * infinities, forced allocation failures and a failed write fail the writer with a
 * clear error and never a crash. */
#include "base.h"
#include "lm_check.h"
#include "lm_json.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- random documents, written both ways ---- */

static const char *const STRINGS[] = {
    "",       "plain",  "with \"quotes\" and \\", "tab\tnew\nline\rff\fbs\b", "ctl\x01\x1f",
    "caf\xc3\xa9", "\xe2\x82\xac euro", "\xf0\x9f\x98\x80 smile", "slash / ok", "del\x7f",
};
#define N_STRINGS (sizeof STRINGS / sizeof STRINGS[0])

static double rand_double(lm_pcg32 *r)
{
    switch (lm_pcg_below(r, 6)) {
    case 0: return (double)(int32_t)lm_pcg_next(r);
    case 1: return lm_pcg_unit(r);
    case 2: return (lm_pcg_unit(r) - 0.5) * 1e-7;
    case 3: return lm_pcg_unit(r) * 1e22;
    case 4: return 0.1 * lm_pcg_below(r, 100);
    default: return ldexp(lm_pcg_unit(r), (int)lm_pcg_below(r, 200) - 100);
    }
}

/* Writes a random value of at most depth levels with w and builds the same in jansson. */
static json_t *gen(lm_pcg32 *r, lm_json *w, int depth, int digits)
{
    uint32_t kind = lm_pcg_below(r, depth > 0 ? 9 : 7);
    switch (kind) {
    case 0: lm_json_null(w); return json_null();
    case 1: {
        bool b = lm_pcg_below(r, 2);
        lm_json_bool(w, b);
        return json_boolean(b);
    }
    case 2: {
        uint64_t bits = (uint64_t)lm_pcg_next(r) << 32 | lm_pcg_next(r);
        int64_t v = (int64_t)(bits >> (1 + lm_pcg_below(r, 63))) * (lm_pcg_below(r, 2) ? 1 : -1);
        lm_json_int(w, v);
        return json_integer(v);
    }
    case 3:
    case 4: {
        double d = rand_double(r);
        lm_json_real(w, d, digits);
        return json_real(d);
    }
    case 5:
    case 6: {
        const char *s = STRINGS[lm_pcg_below(r, N_STRINGS)];
        lm_json_str(w, s);
        return json_string(s);
    }
    case 7: {
        json_t *a = json_array();
        lm_json_arr(w);
        for (uint32_t i = 0, n = lm_pcg_below(r, 4); i < n; i++)
            json_array_append_new(a, gen(r, w, depth - 1, digits));
        lm_json_arr_end(w);
        return a;
    }
    default: {
        json_t *o = json_object();
        lm_json_obj(w);
        for (uint32_t i = 0, n = lm_pcg_below(r, 4); i < n; i++) {
            char key[32];
            snprintf(key, sizeof key, "k%u%s", i, STRINGS[lm_pcg_below(r, N_STRINGS)]);
            lm_json_key(w, key);
            json_object_set_new(o, key, gen(r, w, depth - 1, digits));
        }
        lm_json_obj_end(w);
        return o;
    }
    }
}

START_TEST(random_documents_are_janssons_bytes)
{
    lm_pcg32 r;
    lm_pcg_seed(&r, 20, 1);
    for (int it = 0; it < 3000; it++) {
        unsigned indent = lm_pcg_below(&r, 4);
        int digits = it % 3 == 0 ? 9 : 17;
        lm_json w;
        lm_json_init_buf(&w, indent, UINT32_MAX);
        json_t *j = gen(&r, &w, 4, digits);
        size_t flags = JSON_ENSURE_ASCII | JSON_ENCODE_ANY | JSON_REAL_PRECISION(digits) |
                       (indent ? JSON_INDENT(indent) : JSON_COMPACT);
        char *want = json_dumps(j, flags);
        lm_err e = {0};
        size_t len = 0;
        char *got = lm_json_take(&w, &len, &e);
        ck_assert_msg(got, "%s", e.msg);
        ck_assert_str_eq(got, want);
        ck_assert_uint_eq(len, strlen(want));
        free(want);
        free(got);
        json_decref(j);
    }
}
END_TEST

/* The outer levels on lines, deeper ones compact: each element of an array on a line of
 * its own, printed compactly (the graph file's layout). */
START_TEST(outer_levels_on_lines_inner_compact)
{
    lm_json w;
    lm_json_init_buf(&w, 2, 2);
    lm_json_obj(&w);
    lm_json_kstr(&w, "format", "x");
    lm_json_key(&w, "list");
    lm_json_arr(&w);
    for (int i = 0; i < 2; i++) {
        lm_json_obj(&w);
        lm_json_kint(&w, "a", i);
        lm_json_key(&w, "b");
        lm_json_arr(&w);
        lm_json_f32(&w, 0.1f);
        lm_json_f32(&w, 1e6f);
        lm_json_arr_end(&w);
        lm_json_obj_end(&w);
    }
    lm_json_arr_end(&w);
    lm_json_key(&w, "empty");
    lm_json_arr(&w);
    lm_json_arr_end(&w);
    lm_json_obj_end(&w);
    lm_json_raw(&w, "\n");
    lm_err e = {0};
    char *t = lm_json_take(&w, NULL, &e);
    ck_assert_str_eq(t, "{\n  \"format\": \"x\",\n  \"list\": [\n    {\"a\":0,\"b\":[0.1,1000000.0]},"
                        "\n    {\"a\":1,\"b\":[0.1,1000000.0]}\n  ],\n  \"empty\": []\n}\n");
    free(t);
}
END_TEST

/* Doubles read back exactly; floats read back exactly as floats, in the fewest digits. */
START_TEST(numbers_read_back)
{
    lm_pcg32 r;
    lm_pcg_seed(&r, 7, 3);
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = (uint64_t)lm_pcg_next(&r) << 32 | lm_pcg_next(&r);
        double d;
        memcpy(&d, &bits, sizeof d);
        float f;
        uint32_t fb = lm_pcg_next(&r);
        memcpy(&f, &fb, sizeof f);
        if (!isfinite(d) || !isfinite(f)) continue;
        lm_json w;
        lm_json_init_buf(&w, 0, 0);
        lm_json_arr(&w);
        lm_json_f64(&w, d);
        lm_json_f32(&w, f);
        lm_json_arr_end(&w);
        lm_err e = {0};
        char *t = lm_json_take(&w, NULL, &e);
        ck_assert_msg(t, "%s", e.msg);
        char *end = NULL;
        ck_assert(strtod(t + 1, &end) == d);
        ck_assert_int_eq(*end, ',');
        ck_assert(strtof(end + 1, NULL) == f);
        json_error_t je;
        json_t *j = json_loads(t, 0, &je);
        ck_assert_msg(j && json_is_real(json_array_get(j, 0)) &&
                          json_is_real(json_array_get(j, 1)),
                      "%s", t); /* always a real, never an integer */
        json_decref(j);
        free(t);
    }
    lm_json w;
    lm_json_init_buf(&w, 0, 0);
    lm_json_arr(&w);
    lm_json_f32(&w, 0.1f);
    lm_json_f32(&w, 3.0f);
    lm_json_f64(&w, 1e20);
    lm_json_f64(&w, -2.5e-5);
    lm_json_real(&w, 1.0 / 3.0, 4);
    lm_json_uint(&w, UINT64_MAX);
    lm_json_int(&w, INT64_MIN);
    lm_json_arr_end(&w);
    lm_err e = {0};
    char *t = lm_json_take(&w, NULL, &e);
    ck_assert_str_eq(t, "[0.1,3.0,1e20,-2.5000000000000001e-5,0.3333,18446744073709551615,"
                        "-9223372036854775808]");
    free(t);
}
END_TEST

static void expect_fail(lm_json *w, int code, const char *needle)
{
    lm_err e = {0};
    char *t = lm_json_take(w, NULL, &e);
    ck_assert(lm_json_failed(w));
    ck_assert_ptr_null(t);
    ck_assert_int_eq(e.code, code);
    ck_assert_msg(strstr(e.msg, needle), "'%s' lacks '%s'", e.msg, needle);
}

START_TEST(misuse_fails_clearly)
{
    lm_json w;
    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_obj(&w);
    lm_json_int(&w, 3); /* no key */
    lm_json_kint(&w, "later", 4); /* sticky: nothing more happens */
    expect_fail(&w, LM_EARG, "in an object without a key");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_arr(&w);
    lm_json_key(&w, "k");
    expect_fail(&w, LM_EARG, "a key in an array");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_arr(&w);
    lm_json_obj_end(&w);
    expect_fail(&w, LM_EARG, "closing an object that is not open");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_obj(&w);
    lm_json_key(&w, "k");
    lm_json_obj_end(&w);
    expect_fail(&w, LM_EARG, "has no value");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_arr(&w);
    expect_fail(&w, LM_EARG, "1 containers are still open");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    expect_fail(&w, LM_EARG, "nothing was written");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_int(&w, 1);
    lm_json_int(&w, 2);
    expect_fail(&w, LM_EARG, "after the outermost value was complete");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_arr(&w);
    lm_json_f64(&w, INFINITY);
    expect_fail(&w, LM_EARG, "an infinity has no JSON form");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_arr(&w);
    lm_json_f32(&w, NAN);
    expect_fail(&w, LM_EARG, "NaN has no JSON form");

    lm_json_init_buf(&w, 1, UINT32_MAX);
    lm_json_arr(&w);
    lm_json_str(&w, "ok\xc3(");
    expect_fail(&w, LM_EARG, "not valid UTF-8");
    const char *bad[] = {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lm_json_init_buf(&w, 0, 0);
        lm_json_str(&w, bad[i]);
        expect_fail(&w, LM_EARG, "not valid UTF-8");
    }

    lm_json_init_buf(&w, 0, 0);
    for (int i = 0; i < LM_JSON_DEPTH + 1; i++)
        lm_json_arr(&w);
    expect_fail(&w, LM_ELIMIT, "nested");
}
END_TEST

/* Every allocation of a writer failed in turn: a clean LM_ENOMEM each time, no leak. */
START_TEST(allocation_failures_are_clean)
{
    int fired = 0;
    for (long n = 0;; n++) {
        lm_json w;
        lm_json_init_buf(&w, 1, UINT32_MAX);
        lm_mem_fail_after(n);
        lm_json_arr(&w);
        for (int i = 0; i < 500; i++)
            lm_json_str(&w, "a string long enough to make the buffer grow a few times");
        lm_json_arr_end(&w);
        bool hit = lm_mem_fail_fired();
        lm_mem_fail_after(-1);
        lm_err e = {0};
        char *t = lm_json_take(&w, NULL, &e);
        if (!hit) {
            ck_assert_ptr_nonnull(t);
            free(t);
            break;
        }
        fired++;
        ck_assert_ptr_null(t);
        ck_assert_int_eq(e.code, LM_ENOMEM);
        ck_assert_ptr_nonnull(strstr(e.msg, "out of memory"));
    }
    ck_assert_int_ge(fired, 5); /* the buffer grew from 1 KiB past 32 KiB */
}
END_TEST

START_TEST(file_writers_write_and_report_failures)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    lm_json w;
    lm_json_init_file(&w, f, 1, UINT32_MAX);
    lm_json_obj(&w);
    lm_json_kstr(&w, "a", "b");
    lm_json_obj_end(&w);
    lm_err e = {0};
    ck_assert_int_eq(lm_json_close(&w, &e), 0);
    rewind(f);
    char buf[64] = {0};
    ck_assert_uint_eq(fread(buf, 1, sizeof buf - 1, f), 13);
    ck_assert_str_eq(buf, "{\n \"a\": \"b\"\n}");
    fclose(f);
    /* a write that fails: /dev/full refuses every byte (at the flush at the latest) */
    f = fopen("/dev/full", "w");
    if (f) {
        lm_json_init_file(&w, f, 1, UINT32_MAX);
        lm_json_arr(&w);
        for (int i = 0; i < 10000; i++)
            lm_json_int(&w, i);
        lm_json_arr_end(&w);
        ck_assert_int_eq(lm_json_close(&w, &e), LM_EIO);
        ck_assert_ptr_nonnull(strstr(e.msg, "the write failed"));
        fclose(f);
    }
    lm_err_clear(&e);
    lm_json_init_file(&w, NULL, 1, 1);
    ck_assert_int_eq(lm_json_close(&w, &e), LM_EARG);
}
END_TEST

static Suite *json_suite(void)
{
    Suite *s = suite_create("base_json");
    TCase *tc = tcase_create("json");
    tcase_add_test(tc, random_documents_are_janssons_bytes);
    tcase_add_test(tc, outer_levels_on_lines_inner_compact);
    tcase_add_test(tc, numbers_read_back);
    tcase_add_test(tc, misuse_fails_clearly);
    tcase_add_test(tc, allocation_failures_are_clean);
    tcase_add_test(tc, file_writers_write_and_report_failures);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {json_suite, NULL};
