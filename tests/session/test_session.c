/* test_session.c - the compile session (session.h): what it makes is what the steps make
 * by hand, with every way of giving the rules; its limits and deadline stop it with
 * LM_ELIMIT; every refusal is named and leaves the report filled as far as it got. */
#include "lm_check.h"
#include "session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXAMPLES LUMINAL_SOURCE_DIR "/examples/graphs/"

static hl_graph *load(const char *name)
{
    lm_err err = {0};
    char path[512];
    snprintf(path, sizeof path, EXAMPLES "%s.json", name);
    hl_graph *g = hl_graph_load_json(path, &err);
    ck_assert_msg(g != NULL, "%s: %s", path, err.msg);
    return g;
}

/* The space as egraph-serialize JSON: the bytes two spaces are compared by. */
static char *space_json(const ll_space *s, size_t *len)
{
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(m);
    lm_err err = {0};
    ck_assert_msg(ll_space_write_json(s, m, &err) == LM_OK, "%s", err.msg);
    fclose(m);
    return buf;
}

/* The front half step by step, as every call site wrote it before the session. */
static char *by_hand(const hl_graph *g, const char *rules, const char *name, size_t *len)
{
    lm_err err = {0};
    ll_sat_opts so = {.node_limit = CS_NODE_LIMIT, .mem_limit = lm_mem_available() / 2};
    eg_options eo;
    eg_options_default(&eo);
    ll_sat_engine_options(&so, &eo);
    FILE *null = fopen("/dev/null", "w");
    eo.log = eo.out = null;
    eg_engine *e = eg_engine_new(&eo, &err);
    ck_assert_ptr_nonnull(e);
    hl_encoding enc;
    ck_assert_msg(hl_graph_encode(g, e, &enc, &err) == 0, "%s", err.msg);
    ck_assert_msg(ll_saturate(e, rules, name, &so, NULL, &err) == 0, "%s", err.msg);
    ll_space *s = ll_space_new(e, eg_find(e, enc.root), &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    char *text = space_json(s, len);
    ll_space_free(s);
    hl_encoding_fini(&enc);
    eg_engine_free(e);
    fclose(null);
    return text;
}

START_TEST(builtin_rules_make_the_space_the_steps_make)
{
    static const char *graphs[] = {"softmax_f32_4096x8192", "decode_mlp_bf16",
                                   "attention_bf16"};
    for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++) {
        hl_graph *g = load(graphs[i]);
        lm_err err = {0};
        cs_report rep;
        cs_options o = {.report = &rep};
        cs_session *s = cs_session_new(g, &o, &err);
        ck_assert_msg(s != NULL, "%s: %s", graphs[i], err.msg);
        ck_assert_int_eq(err.code, LM_OK);
        ck_assert_int_eq(rep.stage, CS_DONE);
        ck_assert(!rep.time_up);
        ck_assert(rep.have_stats);
        ck_assert_uint_gt(rep.sat.n_phases, 0);
        ck_assert_uint_eq(rep.rows, eg_node_count(cs_session_engine(s)));
        ck_assert_uint_gt(rep.engine_peak, 0);
        ck_assert_ptr_eq(cs_session_graph(s), g);
        ck_assert_str_eq(cs_session_rules_name(s), cs_rules_builtin_name());
        ll_space_stats st;
        ll_space_get_stats(cs_session_space(s), &st);
        ck_assert_uint_eq(st.classes, rep.stats.classes);
        ck_assert_uint_eq(st.decisions, rep.stats.decisions);
        ck_assert_uint_gt(st.searchable, 0);
        /* the encoding's root, canonical */
        const hl_encoding *enc = cs_session_encoding(s);
        ck_assert_uint_eq(enc->n_nodes, hl_graph_node_count(g));
        ck_assert(cs_session_root(s) == eg_find(cs_session_engine(s), enc->root));
        /* the same bytes as the steps by hand */
        size_t la, lb;
        char *a = space_json(cs_session_space(s), &la);
        char *b = by_hand(g, cs_rules_builtin(), cs_rules_builtin_name(), &lb);
        ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s: the session's space differs",
                      graphs[i]);
        free(a);
        free(b);
        cs_session_free(s);
        hl_graph_free(g);
    }
}
END_TEST

START_TEST(rules_file_and_text_give_the_same_space)
{
    hl_graph *g = load("softmax_f32_4096x8192");
    const char *path = LUMINAL_SOURCE_DIR "/tests/llir/data/rules.dsl";
    lm_err err = {0};
    char *text = lm_read_text(path, 0, NULL, &err);
    ck_assert_msg(text != NULL, "%s", err.msg);
    cs_options of = {.rules_path = path};
    cs_session *a = cs_session_new(g, &of, &err);
    ck_assert_msg(a != NULL, "%s", err.msg);
    ck_assert_str_eq(cs_session_rules_name(a), path);
    cs_options ot = {.rules_text = text, .rules_name = "mine.dsl"};
    cs_session *b = cs_session_new(g, &ot, &err);
    ck_assert_msg(b != NULL, "%s", err.msg);
    ck_assert_str_eq(cs_session_rules_name(b), "mine.dsl");
    cs_options on = {.rules_text = text};
    cs_session *c = cs_session_new(g, &on, &err);
    ck_assert_msg(c != NULL, "%s", err.msg);
    ck_assert_str_eq(cs_session_rules_name(c), "<rules>");
    size_t la, lb, lh;
    char *ja = space_json(cs_session_space(a), &la);
    char *jb = space_json(cs_session_space(b), &lb);
    char *jh = by_hand(g, text, path, &lh);
    ck_assert(la == lb && memcmp(ja, jb, la) == 0);
    ck_assert(la == lh && memcmp(ja, jh, la) == 0);
    /* llir's test rules are not the built-in ones: a different space */
    cs_session *d = cs_session_new(g, NULL, &err);
    ck_assert_msg(d != NULL, "%s", err.msg);
    size_t ld;
    char *jd = space_json(cs_session_space(d), &ld);
    ck_assert(ld != la || memcmp(jd, ja, la) != 0);
    free(ja);
    free(jb);
    free(jh);
    free(jd);
    free(text);
    cs_session_free(a);
    cs_session_free(b);
    cs_session_free(c);
    cs_session_free(d);
    hl_graph_free(g);
}
END_TEST

START_TEST(refusals_are_named)
{
    hl_graph *g = load("softmax_f32_4096x8192");
    cs_report rep;
    /* no graph */
    lm_err err = {0};
    ck_assert_ptr_null(cs_session_new(NULL, NULL, &err));
    ck_assert_int_eq(err.code, LM_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "no graph"));
    /* both a file and a text */
    lm_err_clear(&err);
    cs_options both = {.rules_path = "x.dsl", .rules_text = "", .report = &rep};
    ck_assert_ptr_null(cs_session_new(g, &both, &err));
    ck_assert_int_eq(err.code, LM_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "x.dsl"));
    ck_assert_int_eq(rep.stage, CS_STAGE_SETUP);
    /* a rules file that is not there */
    lm_err_clear(&err);
    cs_options missing = {.rules_path = "/nonexistent/rules.dsl", .report = &rep};
    ck_assert_ptr_null(cs_session_new(g, &missing, &err));
    ck_assert_int_eq(err.code, LM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/rules.dsl"));
    ck_assert_int_eq(rep.stage, CS_STAGE_SETUP);
    /* a rules text the engine refuses: located in it, by its name */
    lm_err_clear(&err);
    cs_options bad = {.rules_text = "(datatype", .rules_name = "bad.dsl", .report = &rep};
    ck_assert_ptr_null(cs_session_new(g, &bad, &err));
    ck_assert_int_ne(err.code, LM_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.dsl"));
    ck_assert_int_eq(rep.stage, CS_STAGE_SATURATE);
    ck_assert(!rep.have_stats);
    /* rules with no phase table */
    lm_err_clear(&err);
    cs_options nophase = {.rules_text = "(relation other (i64))", .report = &rep};
    ck_assert_ptr_null(cs_session_new(g, &nophase, &err));
    ck_assert_int_eq(err.code, LM_EVERIFY);
    ck_assert_int_eq(rep.stage, CS_STAGE_SATURATE);
    hl_graph_free(g);
}
END_TEST

START_TEST(limits_stop_with_elimit)
{
    hl_graph *g = load("decode_mlp_bf16");
    cs_report rep;
    /* a node limit below what saturation makes: a phase names it */
    lm_err err = {0};
    cs_options small = {.node_limit = 50, .report = &rep};
    ck_assert_ptr_null(cs_session_new(g, &small, &err));
    ck_assert_int_eq(err.code, LM_ELIMIT);
    ck_assert_int_eq(rep.stage, CS_STAGE_SATURATE);
    ck_assert_uint_ge(rep.sat.n_phases, 1);
    ck_assert(!rep.time_up);
    /* a deadline already past: nothing saturates */
    lm_err_clear(&err);
    cs_options past = {.deadline_s = lm_now_s() - 1.0, .report = &rep};
    ck_assert_ptr_null(cs_session_new(g, &past, &err));
    ck_assert_int_eq(err.code, LM_ELIMIT);
    ck_assert(rep.time_up);
    ck_assert_ptr_nonnull(strstr(err.msg, "time limit"));
    ck_assert_uint_eq(rep.sat.n_phases, 0);
    /* a deadline far ahead changes nothing */
    lm_err_clear(&err);
    cs_options ahead = {.deadline_s = lm_now_s() + 3600.0, .report = &rep};
    cs_session *s = cs_session_new(g, &ahead, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert(!rep.time_up);
    cs_session_free(s);
    hl_graph_free(g);
}
END_TEST

START_TEST(no_space_leaves_the_engine_to_the_caller)
{
    hl_graph *g = load("softmax_f32_4096x8192");
    lm_err err = {0};
    cs_report rep;
    cs_options o = {.no_space = true, .report = &rep};
    cs_session *s = cs_session_new(g, &o, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_ptr_null(cs_session_space(s));
    ck_assert_int_eq(rep.stage, CS_DONE);
    ck_assert(!rep.have_stats);
    ll_space *mine = ll_space_new(cs_session_engine(s), cs_session_root(s), &err);
    ck_assert_msg(mine != NULL, "%s", err.msg);
    size_t la, lb;
    char *a = space_json(mine, &la);
    char *b = by_hand(g, cs_rules_builtin(), cs_rules_builtin_name(), &lb);
    ck_assert(la == lb && memcmp(a, b, la) == 0);
    free(a);
    free(b);
    ll_space_free(mine);
    cs_session_free(s);
    cs_session_free(NULL);
    hl_graph_free(g);
}
END_TEST

START_TEST(the_log_gets_the_saturation_report)
{
    hl_graph *g = load("softmax_f32_4096x8192");
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(m);
    lm_err err = {0};
    cs_options o = {.log = m};
    cs_session *s = cs_session_new(g, &o, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    fclose(m);
    ck_assert_ptr_nonnull(strstr(buf, "phase 0 "));
    ck_assert_ptr_nonnull(strstr(buf, "saturation: "));
    free(buf);
    /* and on failure too: the phases that ran */
    buf = NULL;
    m = open_memstream(&buf, &len);
    cs_options small = {.log = m, .node_limit = 50};
    lm_err_clear(&err);
    ck_assert_ptr_null(cs_session_new(g, &small, &err));
    fclose(m);
    ck_assert_ptr_nonnull(strstr(buf, "phase 0 "));
    free(buf);
    cs_session_free(s);
    hl_graph_free(g);
}
END_TEST

/* Fails the counted door's requests i = 0, stride, 2 stride, ... of a session made with o
 * (every module's door counts: lm_mem_fail_after): a clean LM_ENOMEM each time (or the
 * failure absorbed and the session whole), nothing left behind (ASan checks). Returns how
 * many requests a whole session makes. */
static uint64_t oom_walk(const hl_graph *g, const cs_options *base, long stride)
{
    lm_err e0 = {0};
    lm_mem_stats_reset();
    cs_session *whole = cs_session_new(g, base, &e0);
    uint64_t calls = 0;
    lm_mem_stats(&calls, NULL);
    ck_assert_msg(whole != NULL, "%s", e0.msg);
    cs_session_free(whole);
    ck_assert_uint_ge(calls, 1);
    uint64_t failed = 0, tried = 0;
    for (long i = 0; i < (long)calls; i += stride) {
        lm_err err = {0};
        cs_report rep;
        cs_options o = *base;
        o.report = &rep;
        lm_mem_fail_after(i);
        cs_session *s = cs_session_new(g, &o, &err);
        bool fired = lm_mem_fail_fired();
        lm_mem_fail_after(-1);
        ck_assert_msg(fired, "request %ld of %" PRIu64 " was not made", i, calls);
        tried++;
        if (s) { /* the failure was absorbed (a cache, a fallback): the session is whole */
            ck_assert_int_eq(rep.stage, CS_DONE);
            cs_session_free(s);
            continue;
        }
        failed++;
        ck_assert_msg(err.code == LM_ENOMEM, "request %ld (%s): %s (%s)", i,
                      cs_stage_name(rep.stage), err.msg, lm_code_ident(err.code));
        ck_assert_int_ne(rep.stage, CS_DONE);
    }
    /* one past the last request: nothing fails */
    lm_err err = {0};
    lm_mem_fail_after((long)calls);
    cs_session *s = cs_session_new(g, base, &err);
    ck_assert(!lm_mem_fail_fired());
    lm_mem_fail_after(-1);
    ck_assert_msg(s != NULL, "%s", err.msg);
    cs_session_free(s);
    ck_assert_uint_ge(failed, tried / 2);
    return calls;
}

/* Every request of a session, in turn, with llir's small test rules (the session's code
 * path is the same whatever the rules: the engine, the encoding, the rules, the registry,
 * the phases, the space); with the built-in rules (~30 000 requests) a deterministic
 * sample of them. */
START_TEST(each_allocation_failed_in_turn)
{
    hl_graph *g = load("softmax_f32_4096x8192");
    cs_options small = {.rules_path = LUMINAL_SOURCE_DIR "/tests/llir/data/rules.dsl"};
    uint64_t n = oom_walk(g, &small, 1);
    ck_assert_uint_gt(n, 1000);
    cs_options builtin = {0};
    ck_assert_uint_gt(oom_walk(g, &builtin, 211), n);
    hl_graph_free(g);
}
END_TEST

START_TEST(names)
{
    ck_assert_str_eq(cs_stage_name(CS_STAGE_SETUP), "setup");
    ck_assert_str_eq(cs_stage_name(CS_STAGE_SPACE), "space");
    ck_assert_str_eq(cs_stage_name(CS_DONE), "done");
    ck_assert_str_eq(cs_stage_name((cs_stage)99), "?");
    ck_assert_ptr_nonnull(strstr(cs_rules_builtin(), "phase"));
    ck_assert_ptr_nonnull(strstr(cs_rules_builtin_name(), ".dsl"));
}
END_TEST

static Suite *session_suite(void)
{
    Suite *s = suite_create("session");
    TCase *t = tcase_create("session");
    tcase_set_timeout(t, 900);
    tcase_add_test(t, builtin_rules_make_the_space_the_steps_make);
    tcase_add_test(t, rules_file_and_text_give_the_same_space);
    tcase_add_test(t, refusals_are_named);
    tcase_add_test(t, limits_stop_with_elimit);
    tcase_add_test(t, no_space_leaves_the_engine_to_the_caller);
    tcase_add_test(t, the_log_gets_the_saturation_report);
    tcase_add_test(t, each_allocation_failed_in_turn);
    tcase_add_test(t, names);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {session_suite, NULL};
