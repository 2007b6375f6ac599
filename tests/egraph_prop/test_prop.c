/* test_prop.c: property tests of the engine on random rule programs.
 *
 *   seminaive_equals_naive: over many seeds, the database reached with semi-naive
 *     evaluation equals, up to e-class numbering, the one reached with naive evaluation
 *     (eg_options.naive), the slow reference; and both print the same sizes and
 *     extraction costs.
 *   seminaive_equals_naive_after_every_step: the same, compared after each step of the
 *     schedule, with both engines stepped in lockstep; eg_check_invariants after each.
 *   same_program_same_bytes: running a program twice gives byte-identical output and
 *     serialized e-graph JSON, in both modes.
 *   canonical_form_*: the comparison itself ignores ids and sees real differences, so
 *     the property above could fail.
 *   generator_*: the programs really exercise the engine (rules fire, features occur).
 *
 * PROP_SEEDS=N in the environment changes the number of seeds (default 200); PROP_SEED0
 * the first seed. A failing seed's program is written to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prop.h"
#include "lm_check.h"

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *s = getenv(name);
    return s && *s ? strtoull(s, NULL, 10) : dflt;
}

static uint64_t nseeds(void)
{
    return env_u64("PROP_SEEDS", 200);
}
static uint64_t seed0(void)
{
    return env_u64("PROP_SEED0", 1);
}

enum { NODE_LIMIT = 3000 }; /* rows; keeps every program small */

/* One run of a program: the engine (kept for inspection), its output bytes, the
 * serialized JSON bytes, the node count before and after the schedule. */
typedef struct {
    eg_engine *e;
    FILE *out, *log;
    char *outbuf, *logbuf;
    size_t outlen, loglen;
    char *json;
    size_t jsonlen;
    uint64_t nodes_before, nodes_after;
    int limited; /* a node limit stopped some run: the database depends on match order */
    int rc;
    lm_err err;
} run;

enum {
    NAIVE = 1,    /* naive evaluation (default: semi-naive) */
    SNAPSHOT = 2, /* print only print-size and extraction costs, which do not depend on ids */
    INDEX = 4,    /* rebuild with the index of e-class uses whenever it applies */
    NO_INDEX = 8, /* rebuild with full passes only */
};

/* Starts a run: an engine writing to memory streams, with the program's declarations,
 * rules and facts (the text before the schedule) run. */
static void run_setup(run *r, const char *text, size_t schedule_at, int flags)
{
    memset(r, 0, sizeof *r);
    eg_options o;
    eg_options_default(&o);
    o.naive = (flags & NAIVE) != 0;
    o.snapshot = (flags & SNAPSHOT) != 0;
    o.rebuild = (flags & INDEX)      ? EG_REBUILD_INDEXED
                : (flags & NO_INDEX) ? EG_REBUILD_FULL
                                     : EG_REBUILD_AUTO;
    o.node_limit = NODE_LIMIT;
    r->out = open_memstream(&r->outbuf, &r->outlen);
    r->log = open_memstream(&r->logbuf, &r->loglen);
    ck_assert_ptr_nonnull(r->out);
    ck_assert_ptr_nonnull(r->log);
    o.out = r->out;
    o.log = r->log;
    r->e = eg_engine_new(&o, NULL);
    char *setup = strndup(text, schedule_at);
    r->rc = eg_run_text(r->e, setup, "prop-setup", &r->err);
    free(setup);
    r->nodes_before = eg_node_count(r->e);
}

/* A node limit can stop a run inside an iteration, after some of its matches and not
 * others; which ones depends on the order of evaluation, so such databases are not
 * compared across modes. */
static int hit_limit(const run *r)
{
    eg_stop_reason why = eg_last_stop(r->e);
    return why == EG_STOP_NODE_LIMIT || why == EG_STOP_TIME_LIMIT || why == EG_STOP_ITER_LIMIT ||
           why == EG_STOP_MEM_LIMIT || eg_node_count(r->e) >= NODE_LIMIT;
}

static void run_program(run *r, const char *text, size_t schedule_at, int flags)
{
    run_setup(r, text, schedule_at, flags);
    if (r->rc == 0) r->rc = eg_run_text(r->e, text + schedule_at, "prop-schedule", &r->err);
    r->nodes_after = eg_node_count(r->e);
    r->limited = hit_limit(r);
    if (r->rc == 0) {
        eg_serialized s;
        r->rc = eg_serialize(r->e, NULL, &s, &r->err);
        if (r->rc == 0) {
            FILE *j = open_memstream(&r->json, &r->jsonlen);
            ck_assert_ptr_nonnull(j);
            ck_assert_int_eq(eg_serialized_write_json(r->e, &s, j, NULL), 0);
            fclose(j);
            eg_serialized_free(&s);
        }
    }
    fflush(r->out);
    fflush(r->log);
}

static void run_free(run *r)
{
    eg_engine_free(r->e);
    fclose(r->out);
    fclose(r->log);
    free(r->outbuf);
    free(r->logbuf);
    free(r->json);
}

static void report(uint64_t seed, const char *what, const char *text, const run *r)
{
    fprintf(stderr, "seed %llu: %s\n--- program ---\n%s--- engine ---\n%s\n",
            (unsigned long long)seed, what, text, r ? r->err.msg : "");
}

START_TEST(seminaive_equals_naive)
{
    uint64_t same_bytes = 0, limited = 0, n = nseeds();
    for (uint64_t seed = seed0(); seed < seed0() + n; seed++) {
        pg_buf text = {0};
        pg_schema sc;
        pg_generate(seed, &text, &sc);
        run semi, naive;
        run_program(&semi, text.s, sc.schedule_at, SNAPSHOT);
        run_program(&naive, text.s, sc.schedule_at, SNAPSHOT | NAIVE);
        if (semi.rc != 0) report(seed, "semi-naive run failed", text.s, &semi);
        ck_assert_msg(semi.rc == 0, "seed %llu: %s", (unsigned long long)seed, semi.err.msg);
        if (naive.rc != 0) report(seed, "naive run failed", text.s, &naive);
        ck_assert_msg(naive.rc == 0, "seed %llu: %s", (unsigned long long)seed, naive.err.msg);

        if (semi.limited || naive.limited) {
            limited++;
            run_free(&semi);
            run_free(&naive);
            pg_buf_free(&text);
            continue;
        }
        pg_canon a, b;
        lm_err err = {0};
        ck_assert_msg(pg_canonicalize(semi.e, &sc, &a, &err) == 0, "%s", err.msg);
        ck_assert_msg(pg_canonicalize(naive.e, &sc, &b, &err) == 0, "%s", err.msg);
        int equal = pg_canon_equal(&a, &b);
        if (!equal) report(seed, "semi-naive and naive databases differ", text.s, NULL);
        ck_assert_msg(equal,
                      "seed %llu: semi-naive and naive differ (%zu vs %zu rows, %zu vs %zu "
                      "classes, %llu vs %llu nodes)",
                      (unsigned long long)seed, a.nrows, b.nrows, a.nclasses, b.nclasses,
                      (unsigned long long)semi.nodes_after, (unsigned long long)naive.nodes_after);
        /* print-size and extraction costs depend only on the database up to renaming */
        ck_assert_msg(semi.outlen > 0, "seed %llu: nothing printed", (unsigned long long)seed);
        int same_out =
            semi.outlen == naive.outlen && memcmp(semi.outbuf, naive.outbuf, semi.outlen) == 0;
        if (!same_out)
            report(seed, "semi-naive and naive print different sizes or costs", text.s, NULL);
        ck_assert_msg(same_out,
                      "seed %llu: output differs:\n--- semi-naive ---\n%.*s--- naive ---\n%.*s",
                      (unsigned long long)seed, (int)semi.outlen, semi.outbuf, (int)naive.outlen,
                      naive.outbuf);
        if (semi.jsonlen == naive.jsonlen && memcmp(semi.json, naive.json, semi.jsonlen) == 0)
            same_bytes++;
        pg_canon_free(&a);
        pg_canon_free(&b);
        run_free(&semi);
        run_free(&naive);
        pg_buf_free(&text);
    }
    fprintf(stderr,
            "seminaive_equals_naive: %llu seeds, %llu not compared (node limit); serialized "
            "bytes identical too in %llu\n",
            (unsigned long long)n, (unsigned long long)limited, (unsigned long long)same_bytes);
    /* The property must be checked on nearly every program, not skipped. */
    ck_assert_msg(limited * 10 <= n, "%llu of %llu programs hit the node limit",
                  (unsigned long long)limited, (unsigned long long)n);
}
END_TEST

/* Semi-naive and naive runs stepped in lockstep, one schedule step at a time, compared
 * after every step: a difference that later iterations would hide is still caught. */
START_TEST(seminaive_equals_naive_after_every_step)
{
    uint64_t n = nseeds() / 2;
    for (uint64_t seed = seed0(); seed < seed0() + n; seed++) {
        pg_buf text = {0};
        pg_schema sc;
        pg_generate(seed, &text, &sc);
        run semi, naive;
        run_setup(&semi, text.s, sc.schedule_at, 0);
        run_setup(&naive, text.s, sc.schedule_at, NAIVE);
        ck_assert_msg(semi.rc == 0 && naive.rc == 0, "seed %llu: %s %s", (unsigned long long)seed,
                      semi.err.msg, naive.err.msg);
        run *both[2] = {&semi, &naive};
        const char *step = sc.two_rulesets ? "(seq (run rs0) (run rs1 2))" : "(run 1)";
        for (int it = 0; it < sc.iterations; it++) {
            for (int m = 0; m < 2; m++) {
                int rc = eg_run_schedule(both[m]->e, step, NULL, &both[m]->err);
                ck_assert_msg(rc == 0, "seed %llu step %d: %s", (unsigned long long)seed, it,
                              both[m]->err.msg);
                /* the engine's own slow check: canonical rows, a key index rebuilt from scratch
                 * that agrees with the live one */
                lm_err ierr = {0};
                ck_assert_int_eq(eg_rebuild(both[m]->e, &ierr), 0);
                rc = eg_check_invariants(both[m]->e, &ierr);
                ck_assert_msg(rc == 0, "seed %llu step %d (%s): %s", (unsigned long long)seed, it,
                              m ? "naive" : "semi-naive", ierr.msg);
            }
            if (hit_limit(&semi) || hit_limit(&naive)) break; /* see hit_limit */
            pg_canon a, b;
            lm_err err = {0};
            ck_assert_msg(pg_canonicalize(semi.e, &sc, &a, &err) == 0, "%s", err.msg);
            ck_assert_msg(pg_canonicalize(naive.e, &sc, &b, &err) == 0, "%s", err.msg);
            int equal = pg_canon_equal(&a, &b);
            if (!equal) report(seed, "semi-naive and naive differ after a step", text.s, NULL);
            ck_assert_msg(equal, "seed %llu: semi-naive and naive differ after step %d",
                          (unsigned long long)seed, it + 1);
            pg_canon_free(&a);
            pg_canon_free(&b);
        }
        run_free(&semi);
        run_free(&naive);
        pg_buf_free(&text);
    }
}
END_TEST

static void expect_same_bytes(uint64_t seed, const char *text, size_t at, int naive)
{
    run a, b;
    run_program(&a, text, at, naive ? NAIVE : 0);
    run_program(&b, text, at, naive ? NAIVE : 0);
    ck_assert_int_eq(a.rc, 0);
    ck_assert_int_eq(b.rc, 0);
    ck_assert_msg(a.outlen > 0, "seed %llu: the program printed nothing", (unsigned long long)seed);
    ck_assert_msg(a.outlen == b.outlen && memcmp(a.outbuf, b.outbuf, a.outlen) == 0,
                  "seed %llu (%s): output differs between two runs", (unsigned long long)seed,
                  naive ? "naive" : "semi-naive");
    ck_assert_msg(a.jsonlen == b.jsonlen && memcmp(a.json, b.json, a.jsonlen) == 0,
                  "seed %llu (%s): serialized e-graph differs between two runs",
                  (unsigned long long)seed, naive ? "naive" : "semi-naive");
    run_free(&a);
    run_free(&b);
}

START_TEST(same_program_same_bytes)
{
    uint64_t n = nseeds() / 2;
    for (uint64_t seed = seed0(); seed < seed0() + n; seed++) {
        pg_buf text = {0};
        pg_schema sc;
        pg_generate(seed, &text, &sc);
        expect_same_bytes(seed, text.s, sc.schedule_at, 0);
        expect_same_bytes(seed, text.s, sc.schedule_at, 1);
        pg_buf_free(&text);
    }
}
END_TEST

/* Rebuilding from the index of e-class uses makes the same passes as full rebuilding:
 * the same output and the same serialized bytes (ids included), in both evaluation modes. */
START_TEST(indexed_rebuild_equals_full_rebuild)
{
    uint64_t n = nseeds() / 2;
    for (uint64_t seed = seed0(); seed < seed0() + n; seed++) {
        pg_buf text = {0};
        pg_schema sc;
        pg_generate(seed, &text, &sc);
        for (int naive = 0; naive < 2; naive++) {
            run a, b;
            run_program(&a, text.s, sc.schedule_at, INDEX | (naive ? NAIVE : 0));
            run_program(&b, text.s, sc.schedule_at, NO_INDEX | (naive ? NAIVE : 0));
            if (a.rc != 0 || b.rc != 0) report(seed, "failed", text.s, a.rc ? &a : &b);
            ck_assert_int_eq(a.rc, 0);
            ck_assert_int_eq(b.rc, 0);
            if (a.outlen != b.outlen || memcmp(a.outbuf, b.outbuf, a.outlen) != 0 ||
                a.jsonlen != b.jsonlen || memcmp(a.json, b.json, a.jsonlen) != 0) {
                report(seed, "indexed and full rebuilding differ", text.s, &a);
                ck_abort_msg("seed %llu: indexed and full rebuilding differ",
                             (unsigned long long)seed);
            }
            run_free(&a);
            run_free(&b);
        }
        pg_buf_free(&text);
    }
}
END_TEST

/* ---- the comparison can fail ---- */

static const char *BASE = "(datatype T0 (L0 i64) (C0_0 T0 T0))\n"
                          "(function F (T0) i64 :merge (min old new))\n"
                          "(relation R (T0 T0))\n";

static pg_schema small_schema(void)
{
    pg_schema sc = {.ndatatypes = 1, .ntables = 4};
    sc.tables[0] = (pg_table){"L0", 2, {PG_I64, 0}};
    sc.tables[1] = (pg_table){"C0_0", 3, {0, 0, 0}};
    sc.tables[2] = (pg_table){"F", 2, {0, PG_I64}};
    sc.tables[3] = (pg_table){"R", 2, {0, 0}};
    return sc;
}

static void canon_of(const char *facts, pg_canon *c, uint64_t *first_leaf_arg)
{
    size_t n = strlen(BASE) + strlen(facts) + 1;
    char *text = malloc(n);
    snprintf(text, n, "%s%s", BASE, facts);
    run r;
    run_program(&r, text, strlen(text), 0);
    ck_assert_msg(r.rc == 0, "%s", r.err.msg);
    pg_schema sc = small_schema();
    lm_err err = {0};
    ck_assert_msg(pg_canonicalize(r.e, &sc, c, &err) == 0, "%s", err.msg);
    eg_value row[2];
    ck_assert_int_eq(eg_table_row(r.e, eg_table_lookup(r.e, "L0"), 0, row, NULL, NULL), 0);
    *first_leaf_arg = row[0];
    run_free(&r);
    free(text);
}

START_TEST(canonical_form_ignores_ids)
{
    pg_canon a, b;
    uint64_t la, lb;
    canon_of("(let a (C0_0 (L0 1) (L0 2)))\n(let b (C0_0 a (L0 1)))\n(R a b)\n(set (F b) 3)\n", &a,
             &la);
    canon_of("(let x (L0 2))\n(let y (L0 1))\n(let a (C0_0 y x))\n(set (F (C0_0 a y)) 3)\n"
             "(R a (C0_0 a y))\n",
             &b, &lb);
    ck_assert_msg(la != lb, "the two programs should number their classes differently");
    ck_assert(pg_canon_equal(&a, &b));
    pg_canon_free(&a);
    pg_canon_free(&b);
}
END_TEST

START_TEST(canonical_form_sees_differences)
{
    static const char *const base = "(let a (C0_0 (L0 1) (L0 2)))\n(let b (C0_0 a (L0 1)))\n";
    static const char *const variants[] = {
        "",                        /* the reference */
        "(union (L0 1) (L0 2))\n", /* one union */
        "(set (F a) 3)\n",         /* a function value */
        "(R a b)\n",               /* a relation row */
        "(R b a)\n",               /* the same row, swapped */
        "(L0 3)\n",                /* one more term */
        "(union a b)\n",           /* a cyclic class */
    };
    size_t nv = sizeof variants / sizeof variants[0];
    pg_canon c[8];
    for (size_t i = 0; i < nv; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", base, variants[i]);
        uint64_t leaf;
        canon_of(text, &c[i], &leaf);
    }
    for (size_t i = 0; i < nv; i++)
        for (size_t j = i + 1; j < nv; j++)
            ck_assert_msg(!pg_canon_equal(&c[i], &c[j]), "variants %zu and %zu compare equal", i,
                          j);
    for (size_t i = 0; i < nv; i++)
        pg_canon_free(&c[i]);
}
END_TEST

/* ---- the generator is worth testing with ---- */

START_TEST(generator_exercises_the_engine)
{
    uint64_t n = nseeds(), grew = 0;
    static const char *const features[] = {
        "datatype*", ":when",   "(R ",      "(= v",         "(F v",  "(!= ",     "(< v",     "(+ v",
        "(union v",  "(set (F", ":ruleset", "run-schedule", ":cost", ":subsume", "birewrite"};
    enum { NF = sizeof features / sizeof features[0] };
    uint64_t seen[NF] = {0};
    for (uint64_t seed = seed0(); seed < seed0() + n; seed++) {
        pg_buf text = {0};
        pg_schema sc;
        pg_generate(seed, &text, &sc);
        for (int f = 0; f < NF; f++)
            if (strstr(text.s, features[f])) seen[f]++;
        run r;
        run_program(&r, text.s, sc.schedule_at, 0);
        ck_assert_int_eq(r.rc, 0);
        if (r.nodes_after > r.nodes_before) grew++;
        run_free(&r);
        pg_buf_free(&text);
    }
    /* Most programs must make rules fire, or the property says little (judged only over
     * enough seeds for the fraction to mean something). */
    if (n < 50) return;
    ck_assert_msg(grew * 2 > n, "only %llu of %llu programs grew the database",
                  (unsigned long long)grew, (unsigned long long)n);
    for (int f = 0; f < NF; f++)
        ck_assert_msg(seen[f] * 20 >= n, "feature %s occurs in only %llu of %llu programs",
                      features[f], (unsigned long long)seen[f], (unsigned long long)n);
}
END_TEST

START_TEST(generator_is_deterministic)
{
    pg_buf a = {0}, b = {0}, c = {0};
    pg_schema sa, sb, scc;
    pg_generate(42, &a, &sa);
    pg_generate(42, &b, &sb);
    pg_generate(43, &c, &scc);
    ck_assert_str_eq(a.s, b.s);
    ck_assert_str_ne(a.s, c.s);
    pg_buf_free(&a);
    pg_buf_free(&b);
    pg_buf_free(&c);
}
END_TEST

static Suite *prop_suite(void)
{
    Suite *s = suite_create("egraph_prop");
    TCase *tc = tcase_create("prop");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, generator_is_deterministic);
    tcase_add_test(tc, canonical_form_ignores_ids);
    tcase_add_test(tc, canonical_form_sees_differences);
    tcase_add_test(tc, generator_exercises_the_engine);
    tcase_add_test(tc, seminaive_equals_naive);
    tcase_add_test(tc, seminaive_equals_naive_after_every_step);
    tcase_add_test(tc, same_program_same_bytes);
    tcase_add_test(tc, indexed_rebuild_equals_full_rebuild);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {prop_suite, NULL};
