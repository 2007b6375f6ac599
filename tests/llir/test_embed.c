/* test_embed.c - cmake/LmEmbed.cmake (how luminal_search embeds its rules): included
 * files are inlined recursively and the text arrives byte for byte, semicolons, quotes
 * and backslashes included; the embedded program runs in an engine. */
#include "tl.h"

const char *tl_embedded(void);
const char *tl_embedded_name(void);

START_TEST(includes_are_inlined_and_the_text_runs)
{
    const char *t = tl_embedded();
    ck_assert_str_eq(tl_embedded_name(), "tests/llir/data/embed/main.dsl");
    ck_assert_ptr_nonnull(strstr(t, "(datatype E (Num i64))"));
    ck_assert_ptr_nonnull(strstr(t, "(let two (Num 2)) ; semicolons; and \"quotes\" \\ backslashes"));
    ck_assert_ptr_nonnull(strstr(t, "(let three (Num 3))"));
    ck_assert_ptr_nonnull(strstr(t, "; ---- tests/llir/data/embed/part.dsl (included) ----\n"));
    ck_assert_ptr_null(strstr(t, "(include \"tests/"));
    ck_assert_ptr_nonnull(strstr(t, "(include \"mentioned\")")); /* not a line of its own */
    /* the order is the reading order: main, part, leaf, main again */
    ck_assert(strstr(t, "(Num i64)") < strstr(t, "(Num 2)"));
    ck_assert(strstr(t, "(Num 2)") < strstr(t, "(Num 3)"));
    ck_assert(strstr(t, "(Num 3)") < strstr(t, "(Num 1)"));
    eg_engine *e = eg_engine_new(NULL, NULL);
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e, t, "embedded", &ee) == 0, "%s", ee.msg);
    ck_assert_int_ge(eg_table_lookup(e, "Num"), 0);
    ck_assert_uint_eq(eg_table_size(e, eg_table_lookup(e, "Num")), 3);
    eg_engine_free(e);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("llir_embed");
    TCase *tc = tcase_create("embed");
    tcase_add_test(tc, includes_are_inlined_and_the_text_runs);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {make_suite, NULL};
