/* test_search.c - the search (search.h) without a GPU: determinism, replay, dedup,
 * failures injected by a test evaluator, an evaluator that fails everything.
 *
 * White-box (INTERNALS search): the fault-injection evaluator implements sr_eval.h's
 * sr_evaluator_ops and is handed to the search through sr_options.ev. */
#define _GNU_SOURCE /* fopencookie, memmem: a progress stream that stalls */
#include "lm_check.h"
#include "search.h"
#include "session.h"
#include "sr_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GRAPH LUMINAL_SOURCE_DIR "/examples/graphs/decode_mlp_bf16.json"
#define SMALL LUMINAL_SOURCE_DIR "/examples/graphs/matmul_f32_2048.json"
#define OTHER LUMINAL_SOURCE_DIR "/examples/graphs/primitives_strided.json"
#define MATMUL_BF16 LUMINAL_SOURCE_DIR "/examples/graphs/matmul_bf16_4096.json"
#define SOFTMAX LUMINAL_SOURCE_DIR "/examples/graphs/softmax_f32_4096x8192.json"

static hl_graph *load(const char *path)
{
    lm_err e = {0};
    hl_graph *g = hl_graph_load_json(path, &e);
    ck_assert_msg(g, "%s", e.msg);
    return g;
}

static char *tmpdir(void)
{
    char *t = strdup("/tmp/sr_testXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t));
    return t;
}

static char *slurp(const char *dir, const char *file, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    lm_err e = {0};
    char *s = lm_read_file(path, 0, len, &e);
    ck_assert_msg(s, "%s", e.msg);
    return s;
}

static void same_file(const char *a, const char *b, const char *file)
{
    size_t la, lb;
    char *x = slurp(a, file, &la), *y = slurp(b, file, &lb);
    ck_assert_msg(la == lb && memcmp(x, y, la) == 0, "%s differs between %s and %s", file, a, b);
    free(x);
    free(y);
}

static void opts(sr_options *o, const char *graph, const char *out, uint64_t seed, uint64_t limit)
{
    sr_options_default(o);
    o->rules = cs_rules_builtin();
    o->rules_name = cs_rules_builtin_name();
    o->graph_path = graph;
    o->out_dir = out;
    o->seed = seed;
    o->limit = limit;
    o->evaluator = SR_EVAL_COST_MODEL;
}

static void run_ok(const hl_graph *g, const sr_options *o, sr_report *r)
{
    lm_err e = {0};
    int rc = sr_search_run(g, o, r, &e);
    ck_assert_msg(rc == 0, "search failed: %s", e.msg);
}

static void rmtree(const char *d)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    ck_assert_int_eq(system(cmd), 0);
}

/* ---- determinism ---- */

START_TEST(same_seed_same_plan_byte_for_byte)
{
    hl_graph *g = load(GRAPH);
    char *a = tmpdir(), *b = tmpdir(), *c = tmpdir();
    sr_options o;
    sr_report ra, rb, rc;
    opts(&o, GRAPH, a, 5, 20);
    run_ok(g, &o, &ra);
    o.out_dir = b;
    run_ok(g, &o, &rb);
    same_file(a, b, "program/plan.json");
    same_file(a, b, "program/llir.json");
    ck_assert_str_eq(ra.best_genome, rb.best_genome);
    ck_assert(ra.best_ms == rb.best_ms);
    ck_assert_uint_eq(ra.evaluated, 20);
    ck_assert(!ra.measured);
    ck_assert_str_eq(ra.evaluator, "cost-model");
    ck_assert(isfinite(ra.reference_ms) && isfinite(ra.first_ms));
    ck_assert(ra.best_ms <= ra.first_ms);
    /* the winner is the least of the candidates' times, by the log */
    size_t len;
    char *log = slurp(a, "search.jsonl", &len);
    double least = INFINITY;
    int lines = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        ck_assert_msg(j, "a log line does not parse: %s", je.text);
        const char *role = json_string_value(json_object_get(j, "role"));
        const char *st = json_string_value(json_object_get(j, "status"));
        if (role && strcmp(role, "search") == 0 && strcmp(st, "ok") == 0) {
            least = fmin(least, json_number_value(json_object_get(j, "ms")));
            /* modelled for every candidate; with the cost model both agree */
            ck_assert(json_number_value(json_object_get(j, "modelled_ms")) ==
                      json_number_value(json_object_get(j, "ms")));
        }
        lines++;
        json_decref(j);
    }
    ck_assert(least == ra.best_ms);
    ck_assert_int_ge(lines, 23); /* header, reference, 20 candidates, end */
    free(log);
    /* another seed searches otherwise (its log differs) */
    o.out_dir = c;
    o.seed = 6;
    run_ok(g, &o, &rc);
    size_t l1, l2;
    char *x = slurp(a, "search.jsonl", &l1), *y = slurp(c, "search.jsonl", &l2);
    ck_assert(l1 != l2 || memcmp(x, y, l1) != 0);
    free(x);
    free(y);
    sr_report_fini(&ra);
    sr_report_fini(&rb);
    sr_report_fini(&rc);
    rmtree(a), rmtree(b), rmtree(c);
    free(a), free(b), free(c);
    hl_graph_free(g);
}
END_TEST

/* ---- replay ---- */

START_TEST(replaying_a_log_gives_the_same_plan)
{
    hl_graph *g = load(GRAPH);
    char *a = tmpdir(), *b = tmpdir();
    sr_options o;
    sr_report ra, rb;
    opts(&o, GRAPH, a, 11, 16);
    o.restart_after = 4; /* restarts happen, and are replayed */
    run_ok(g, &o, &ra);
    ck_assert_uint_ge(ra.restarts, 1);
    char log[1024];
    snprintf(log, sizeof log, "%s/search.jsonl", a);
    sr_options_default(&o);
    o.rules = cs_rules_builtin();
    o.rules_name = cs_rules_builtin_name(); /* origins name it: the e-graph's fingerprint */
    o.graph_path = GRAPH;
    o.out_dir = b;
    o.evaluator = SR_EVAL_REPLAY;
    o.replay_path = log;
    o.seed = 999; /* replaced by the log's */
    run_ok(g, &o, &rb);
    ck_assert(!rb.replay_diverged);
    ck_assert_str_eq(rb.evaluator, "replay of cost-model");
    ck_assert_uint_eq(rb.seed, 11);
    ck_assert_uint_eq(rb.evaluated, ra.evaluated);
    ck_assert_uint_eq(rb.restarts, ra.restarts);
    ck_assert_str_eq(rb.best_genome, ra.best_genome);
    ck_assert(rb.best_ms == ra.best_ms);
    same_file(a, b, "program/plan.json");
    sr_report_fini(&ra);
    sr_report_fini(&rb);
    rmtree(a), rmtree(b);
    free(a), free(b);
    hl_graph_free(g);
}
END_TEST

START_TEST(a_replay_of_another_graph_diverges)
{
    hl_graph *g = load(GRAPH), *h = load(OTHER), *m = load(SMALL);
    char *a = tmpdir(), *b = tmpdir();
    sr_options o;
    sr_report ra, rb;
    opts(&o, GRAPH, a, 1, 5);
    run_ok(g, &o, &ra);
    char log[1024];
    snprintf(log, sizeof log, "%s/search.jsonl", a);
    opts(&o, OTHER, b, 0, 5);
    o.evaluator = SR_EVAL_REPLAY;
    o.replay_path = log;
    lm_err e = {0};
    int rc = sr_search_run(h, &o, &rb, &e);
    /* no result is in the log: nothing has a time, and the report says it diverged */
    ck_assert_int_eq(rc, LM_ELIMIT);
    ck_assert(rb.replay_diverged);
    sr_report_fini(&rb);
    /* a graph with a dim the log does not have is refused, naming the dim */
    lm_err e2 = {0};
    o.graph_path = SMALL;
    ck_assert_int_eq(sr_search_run(m, &o, &rb, &e2), LM_EARG);
    ck_assert_ptr_nonnull(strstr(e2.msg, "no value of dim 'M'"));
    hl_graph_free(m);
    sr_report_fini(&ra);
    sr_report_fini(&rb);
    rmtree(a), rmtree(b);
    free(a), free(b);
    hl_graph_free(g);
    hl_graph_free(h);
}
END_TEST

/* ---- a test evaluator: slots, failures injected, results out of order ---- */

typedef struct fault_ev {
    sr_evaluator base;
    const hl_graph *g;
    uint32_t slots;
    bool fail_all;
    sr_result fl[8];
    uint32_t n;
    uint64_t submitted;
    ll_fingerprint seen[256];
    uint32_t n_seen;
    bool dup; /* a program was submitted twice */
    double stall_s; /* the reference (id 0) takes this long to submit: time passes */
} fault_ev;

static uint32_t f_slots(sr_evaluator *ev)
{
    return ((fault_ev *)ev)->slots;
}

static int f_submit(sr_evaluator *ev, const sr_candidate *c, lm_err *err)
{
    fault_ev *f = (fault_ev *)ev;
    ck_assert_uint_lt(f->n, f->slots);
    if (c->id == 0 && f->stall_s > 0) {
        double until = lm_now_s() + f->stall_s;
        while (lm_now_s() < until)
            usleep(1000);
    }
    ck_assert_ptr_nonnull(c->plan);
    ll_fingerprint fp = ll_graph_fingerprint(c->llir);
    /* a check repeats a candidate, and a candidate may repeat the reference (seen[0]) */
    if (c->id != 0 && !c->check)
        for (uint32_t i = 1; i < f->n_seen; i++)
            if (f->seen[i].lo == fp.lo && f->seen[i].hi == fp.hi) f->dup = true;
    if (f->n_seen < 256) f->seen[f->n_seen++] = fp;
    sr_result *r = &f->fl[f->n++];
    memset(r, 0, sizeof *r);
    r->id = c->id;
    r->gpu = (int)(c->id % f->slots);
    r->trials = 5;
    r->checked = c->check;
    double ms;
    ck_assert_int_eq(sr_cost_plan(c->plan, c->llir, f->g, NULL, &ms, NULL, NULL, err), 0);
    r->ms = ms;
    r->compile_s = 0.001;
    /* every third search candidate fails, with each status in turn */
    static const sr_status FAILS[] = {SR_COMPILE_FAILED, SR_FAULT,   SR_NONFINITE, SR_OUT_OF_MEMORY,
                                      SR_TOO_SLOW,       SR_TIMEOUT, SR_WRONG,     SR_ERROR};
    if (f->fail_all || (c->id > 1 && c->id % 3 == 0 && !c->check)) {
        sr_status s = FAILS[(c->id / 3) % 8];
        if (f->fail_all) s = FAILS[c->id % 8];
        r->status = s;
        r->ms = s == SR_TOO_SLOW ? ms : 0;
        r->checked = false;
        snprintf(r->why, sizeof r->why, "injected %s for candidate %llu", sr_status_name(s),
                 (unsigned long long)c->id);
    }
    f->submitted++;
    return LM_OK;
}

/* the most recently submitted first: out of submission order, as workers finish */
static int f_next(sr_evaluator *ev, sr_result *out, lm_err *err)
{
    (void)err;
    fault_ev *f = (fault_ev *)ev;
    if (!f->n) return LM_EARG;
    *out = f->fl[--f->n];
    return LM_OK;
}

static void f_free(sr_evaluator *ev)
{
    (void)ev;
}

static const sr_evaluator_ops FAULT_OPS = {.name = "fault-injection",
                                           .measured = true,
                                           .slots = f_slots,
                                           .submit = f_submit,
                                           .next = f_next,
                                           .free = f_free};

START_TEST(failures_are_recorded_and_the_search_finishes)
{
    hl_graph *g = load(GRAPH);
    char *a = tmpdir(), *b = tmpdir();
    fault_ev f = {.base = {&FAULT_OPS}, .g = g, .slots = 3};
    sr_options o;
    sr_report r, rr;
    opts(&o, GRAPH, a, 2, 30);
    o.ev = &f.base;
    o.restart_after = 0;
    run_ok(g, &o, &r);
    ck_assert(!f.dup);
    ck_assert_uint_eq(r.evaluated, 30);
    ck_assert_str_eq(r.evaluator, "fault-injection");
    ck_assert(r.measured);
    uint64_t failed = 0;
    for (uint32_t i = 1; i < SR_REASONS; i++)
        failed += r.by_status[i];
    ck_assert_uint_eq(failed + r.ok, r.evaluated);
    /* ids 3, 6, ..., 30 fail with statuses (id / 3) % 8: every status of FAILS at least once */
    for (uint32_t i = 1; i < SR_REASONS; i++)
        ck_assert_msg(r.by_status[i] >= 1, "no candidate recorded as %s", sr_reason_name(i));
    ck_assert(isfinite(r.best_ms));
    ck_assert(r.first_checked);
    ck_assert(r.winner_checked);
    /* the log names every failure with its reason, and the GPU it ran on */
    size_t len;
    char *log = slurp(a, "search.jsonl", &len);
    ck_assert_ptr_nonnull(strstr(log, "\"status\":\"fault\""));
    ck_assert_ptr_nonnull(strstr(log, "injected out-of-memory for candidate"));
    ck_assert_ptr_nonnull(strstr(log, "\"gpu\":2"));
    if (r.best_n != 1) ck_assert_ptr_nonnull(strstr(log, "\"role\":\"check\""));
    /* the checks come after the search, so the reference runtime takes none of its time:
     * the first check follows the last search candidate */
    const char *first_check = strstr(log, "\"role\":\"check\"");
    ck_assert_ptr_nonnull(first_check);
    for (const char *q = log; (q = strstr(q, "\"role\":\"search\"")); q++)
        ck_assert(q < first_check);
    free(log);
    size_t hl;
    char *html = slurp(a, "report.html", &hl);
    ck_assert_ptr_nonnull(strstr(html, "<svg"));
    ck_assert_ptr_null(strstr(html, "http://www.w3.org/1999/xhtml")); /* nothing fetched */
    ck_assert_ptr_null(strstr(html, "<script"));
    free(html);
    /* three slots, results out of order: the replay of this log gives the same search */
    char path[1024];
    snprintf(path, sizeof path, "%s/search.jsonl", a);
    opts(&o, GRAPH, b, 0, 20);
    o.evaluator = SR_EVAL_REPLAY;
    o.replay_path = path;
    run_ok(g, &o, &rr);
    ck_assert(!rr.replay_diverged);
    ck_assert_str_eq(rr.evaluator, "replay of fault-injection");
    ck_assert_uint_eq(rr.evaluated, r.evaluated);
    for (uint32_t i = 0; i < SR_REASONS; i++)
        ck_assert_uint_eq(rr.by_status[i], r.by_status[i]);
    ck_assert_str_eq(rr.best_genome, r.best_genome);
    same_file(a, b, "program/plan.json");
    sr_report_fini(&r);
    sr_report_fini(&rr);
    rmtree(a), rmtree(b);
    free(a), free(b);
    hl_graph_free(g);
}
END_TEST

START_TEST(an_evaluator_failing_everything_is_a_clear_error)
{
    hl_graph *g = load(GRAPH);
    fault_ev f = {.base = {&FAULT_OPS}, .g = g, .slots = 2, .fail_all = true};
    sr_options o;
    sr_report r;
    opts(&o, GRAPH, NULL, 0, 10);
    o.ev = &f.base;
    lm_err e = {0};
    ck_assert_int_eq(sr_search_run(g, &o, &r, &e), LM_ELIMIT);
    ck_assert_uint_eq(r.evaluated, 10);
    ck_assert_ptr_nonnull(strstr(e.msg, "no candidate has a time"));
    ck_assert_ptr_nonnull(strstr(e.msg, "fault"));
    sr_report_fini(&r);
    hl_graph_free(g);
}
END_TEST

/* ---- the time limit ---- */

START_TEST(a_search_out_of_time_still_measures_a_candidate)
{
    /* the limit passes before the first candidate (after saturation: the reference's
     * evaluation stalls past it): the first genome is still measured, and the search
     * ends with it. The limit leaves saturation three times what it took unlimited. */
    hl_graph *g = load(GRAPH);
    fault_ev f0 = {.base = {&FAULT_OPS}, .g = g, .slots = 3};
    sr_options o;
    sr_report r;
    opts(&o, GRAPH, NULL, 0, 2);
    o.ev = &f0.base;
    run_ok(g, &o, &r);
    double sat = r.t.saturate + r.t.space;
    sr_report_fini(&r);
    fault_ev f = {.base = {&FAULT_OPS}, .g = g, .slots = 3};
    opts(&o, GRAPH, NULL, 0, 20);
    o.ev = &f.base;
    o.time_limit_s = 3 * sat + 0.2;
    f.stall_s = o.time_limit_s;
    run_ok(g, &o, &r);
    ck_assert(r.time_up);
    ck_assert_uint_eq(r.evaluated, 1);
    ck_assert(isfinite(r.best_ms));
    ck_assert_uint_eq(r.best_n, 1);
    sr_report_fini(&r);
    /* when every candidate fails, overtime stops after the first genome and 4 seeds */
    fault_ev fa = {.base = {&FAULT_OPS}, .g = g, .slots = 3, .fail_all = true,
                   .stall_s = o.time_limit_s};
    o.ev = &fa.base;
    lm_err e = {0};
    ck_assert_int_ne(sr_search_run(g, &o, &r, &e), 0);
    ck_assert_ptr_nonnull(strstr(e.msg, "no candidate has a time (5 evaluated"));
    sr_report_fini(&r);
    hl_graph_free(g);
}
END_TEST

/* --time-limit covers saturation (issue 21, fault 2): a limit that passes before or
 * during saturation stops the search there, saying so, instead of saturating on. */
/* A progress stream that sleeps when a line names the space, so that the time limit
 * passes right after the space is built: before the reference lowering. */
static ssize_t stall_write(void *cookie, const char *buf, size_t n)
{
    double *stall = cookie;
    if (memmem(buf, n, "space:", 6)) {
        struct timespec ts = {(time_t)*stall, (long)((*stall - (time_t)*stall) * 1e9)};
        nanosleep(&ts, NULL);
    }
    return (ssize_t)n;
}

START_TEST(past_the_time_limit_the_reference_is_not_run)
{
    /* the limit passes after the space: the reference lowering (not needed for a
     * program, and its codegen takes seconds on a long graph) is skipped, the first
     * genome alone is evaluated and saved */
    hl_graph *g = load(GRAPH);
    double stall = 1.0;
    cookie_io_functions_t io = {.write = stall_write};
    FILE *pr = fopencookie(&stall, "w", io);
    ck_assert_ptr_nonnull(pr);
    setvbuf(pr, NULL, _IONBF, 0);
    sr_options o;
    sr_report r;
    char *d = tmpdir();
    opts(&o, GRAPH, d, 0, 20);
    o.progress = pr;
    run_ok(g, &o, &r); /* unlimited, to know how long the front half takes */
    double front = r.t.saturate + r.t.space;
    sr_report_fini(&r);
    stall = 2 * front + 0.5;
    o.time_limit_s = 2 * front + 0.2; /* passes during the stall */
    run_ok(g, &o, &r);
    ck_assert(r.time_up);
    ck_assert_str_eq(r.reference_status, "not run");
    ck_assert(isnan(r.reference_ms));
    ck_assert_uint_eq(r.evaluated, 1);
    ck_assert(isfinite(r.best_ms));
    size_t len;
    char *plan = slurp(d, "program/plan.json", &len);
    ck_assert_uint_gt(len, 0);
    free(plan);
    sr_report_fini(&r);
    fclose(pr);
    rmtree(d);
    free(d);
    hl_graph_free(g);
}
END_TEST

START_TEST(the_time_limit_covers_saturation)
{
    hl_graph *g = load(GRAPH);
    fault_ev f = {.base = {&FAULT_OPS}, .g = g, .slots = 3};
    sr_options o;
    sr_report r;
    opts(&o, GRAPH, NULL, 0, 20);
    o.ev = &f.base;
    o.time_limit_s = 1e-9;
    lm_err e = {0};
    ck_assert_int_eq(sr_search_run(g, &o, &r, &e), LM_ELIMIT);
    ck_assert_msg(strstr(e.msg, "time limit") && strstr(e.msg, "saturation"), "%s", e.msg);
    ck_assert(r.time_up);
    ck_assert_uint_eq(r.evaluated, 0);
    sr_report_fini(&r);
    hl_graph_free(g);
}
END_TEST

/* ---- dedup ---- */

START_TEST(a_program_is_measured_once)
{
    /* a space of few programs: far fewer than the limit exist, each is measured once */
    hl_graph *g = load(SMALL);
    fault_ev f = {.base = {&FAULT_OPS}, .g = g, .slots = 1};
    sr_options o;
    sr_report r;
    opts(&o, SMALL, NULL, 0, 50);
    o.ev = &f.base;
    o.max_draws = 400;
    run_ok(g, &o, &r);
    ck_assert(!f.dup);
    ck_assert(r.exhausted);
    ck_assert_uint_lt(r.evaluated, 50);
    ck_assert_uint_gt(r.evaluated, 1);
    ck_assert_uint_gt(r.dup_genomes + r.dup_programs, 0);
    /* distinct fingerprints submitted == candidates evaluated (+ the reference, + a check) */
    uint32_t distinct = 0;
    for (uint32_t i = 1; i < f.n_seen; i++) {
        bool again = false;
        for (uint32_t j = 1; j < i; j++)
            again |= f.seen[j].lo == f.seen[i].lo && f.seen[j].hi == f.seen[i].hi;
        distinct += !again;
    }
    ck_assert_uint_eq(distinct, r.evaluated);
    sr_report_fini(&r);
    hl_graph_free(g);
}
END_TEST

/* ---- the model's screen ---- */

START_TEST(the_model_screens_out_hopeless_candidates)
{
    /* a measuring evaluator whose times are the model's: with the screen at 1.2, every
       candidate the model puts over 1.2 times the best so far is logged as too-slow, not
       measured, and never reaches the evaluator */
    hl_graph *g = load(GRAPH);
    fault_ev f = {.base = {&FAULT_OPS}, .g = g, .slots = 1};
    char *a = tmpdir();
    sr_options o;
    sr_report r;
    opts(&o, GRAPH, a, 3, 15);
    o.ev = &f.base;
    o.screen_factor = 1.2;
    run_ok(g, &o, &r);
    ck_assert_uint_gt(r.screened, 0);
    ck_assert_msg(r.evaluated == 15 || r.exhausted, "%llu evaluated, exhausted %d, draws %llu", (unsigned long long)r.evaluated, r.exhausted, (unsigned long long)r.draws);
    ck_assert_uint_gt(r.declined, 0);   /* the model picked among proposals */
    char path[1024];
    snprintf(path, sizeof path, "%s/search.jsonl", a);
    FILE *fp = fopen(path, "r");
    ck_assert_ptr_nonnull(fp);
    char line[8192];
    uint64_t screened = 0;
    while (fgets(line, sizeof line, fp)) {
        json_error_t je;
        json_t *c = json_loads(line, 0, &je);
        ck_assert_msg(c, "%s", je.text);
        const char *why = json_string_value(json_object_get(c, "why"));
        if (why && strstr(why, "not measured")) {
            screened++;
            ck_assert(!json_is_true(json_object_get(c, "evaluated")));
            ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "too-slow");
            double m = json_real_value(json_object_get(c, "modelled_ms"));
            json_t *best = json_object_get(c, "best_ms");
            double base = json_is_real(best) ? json_real_value(best) : r.reference_modelled_ms;
            ck_assert_msg(m > 1.2 * base, "screened at %g ms against %g ms", m, base);
            /* it never reached the evaluator */
            const char *fph = json_string_value(json_object_get(c, "fingerprint"));
            for (uint32_t i = 0; i < f.n_seen; i++) {
                char h[33];
                snprintf(h, sizeof h, "%016llx%016llx", (unsigned long long)f.seen[i].hi,
                         (unsigned long long)f.seen[i].lo);
                ck_assert_str_ne(h, fph);
            }
        }
        json_decref(c);
    }
    fclose(fp);
    ck_assert_uint_eq(screened, r.screened);
    sr_report_fini(&r);
    /* the screen off: nothing is screened */
    opts(&o, GRAPH, NULL, 3, 15);
    o.ev = &f.base;
    o.screen_factor = 0;
    f.n_seen = 0;
    run_ok(g, &o, &r);
    ck_assert_uint_eq(r.screened, 0);
    sr_report_fini(&r);
    rmtree(a);
    free(a);
    hl_graph_free(g);
}
END_TEST

/* ---- the cost model ---- */

START_TEST(the_cost_model_answers_with_the_searchs_cost)
{
    /* a candidate the search costed already is not costed again: the evaluator answers
     * with sr_candidate.modelled_ms (and applies the cutoff to it) */
    hl_graph *g = load(GRAPH);
    lm_err e = {0};
    ll_graph *lg = ll_graph_from_hlir(g, &e);
    ck_assert_msg(lg, "%s", e.msg);
    cg_plan *plan = cg_plan_new(lg, NULL, &e);
    ck_assert_msg(plan, "%s", e.msg);
    sr_eval_setup s = {.graph = g};
    sr_evaluator *ev = sr_cost_model_new(&s, &e);
    ck_assert_ptr_nonnull(ev);
    sr_candidate c = {.id = 7, .llir = lg, .plan = plan, .costed = true, .modelled_ms = 123.5};
    sr_result r;
    ck_assert_int_eq(ev->ops->submit(ev, &c, &e), 0);
    ck_assert_int_eq(ev->ops->next(ev, &r, &e), 0);
    ck_assert_int_eq(r.status, SR_OK);
    ck_assert(r.ms == 123.5);
    c.cutoff_ms = 100;
    ck_assert_int_eq(ev->ops->submit(ev, &c, &e), 0);
    ck_assert_int_eq(ev->ops->next(ev, &r, &e), 0);
    ck_assert_int_eq(r.status, SR_TOO_SLOW);
    /* not costed: the evaluator costs the plan itself, as sr_cost_plan does */
    double ms;
    int64_t dims[8];
    ck_assert_uint_le(hl_graph_dim_count(g), 8);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
        dims[i] = hl_graph_dim_at(g, i)->profile;
    ck_assert_int_eq(sr_cost_plan(plan, lg, g, dims, &ms, NULL, NULL, &e), 0);
    c = (sr_candidate){.id = 8, .llir = lg, .plan = plan};
    ck_assert_int_eq(ev->ops->submit(ev, &c, &e), 0);
    ck_assert_int_eq(ev->ops->next(ev, &r, &e), 0);
    ck_assert(r.ms == ms && ms > 0);
    ev->ops->free(ev);
    cg_plan_free(plan);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

START_TEST(the_cost_model_orders_obvious_cases)
{
    /* the reference lowering (a kernel per primitive) costs more than the winner, and a
       bigger problem costs more than a smaller one */
    hl_graph *g = load(GRAPH);
    sr_options o;
    sr_report r;
    opts(&o, GRAPH, NULL, 0, 12);
    run_ok(g, &o, &r);
    ck_assert(r.best_ms < r.reference_ms);
    ck_assert(r.best_ms > 0.001 && r.best_ms < 10);
    ck_assert_uint_gt(r.n_kernel_rows, 0);
    double sum = 0;
    for (uint32_t i = 0; i < r.n_kernel_rows; i++) {
        ck_assert(r.kernel_rows[i].modelled_us > 0);
        sum += r.kernel_rows[i].modelled_us;
    }
    ck_assert(sum / 1000 < r.best_ms); /* plus the replay's own cost */
    sr_report_fini(&r);
    hl_graph_free(g);
}
END_TEST

/* The rules make the fused attention reachable and the model ranks it first: on every
 * attention example, a search of 20 candidates from random genomes only (no seeds)
 * wins with the fused kernel; the decode step's winner splits the KV length (the
 * template's split pass and combine). The Llama block with its seeds keeps the fused
 * attention beside its cuBLASLt calls. */
START_TEST(the_search_finds_the_fused_attention)
{
    static const struct {
        const char *name;
        bool seeds, split;
    } cases[] = {{"causal_attention_bf16", false, false}, {"attention_bf16", false, false},
                 {"attention_mask_bf16", false, false},   {"attention_gqa_bf16", false, false},
                 {"decode_attention_bf16", false, true},  {"llama_block_bf16", true, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/graphs/%s.json", LUMINAL_SOURCE_DIR,
                 cases[i].name);
        hl_graph *g = load(path);
        sr_options o;
        sr_report r;
        opts(&o, path, NULL, 0, 20);
        o.fused_start = cases[i].seeds;
        run_ok(g, &o, &r);
        uint32_t attn = 0, combine = 0;
        for (uint32_t k = 0; k < r.n_kernel_rows; k++) {
            const sr_kernel_row *row = &r.kernel_rows[k];
            if (strncmp(row->llir_op, "KAttn", 5) == 0 && strcmp(row->template_name, "attention") == 0)
                attn++;
            if (strcmp(row->template_name, "attention-combine") == 0) combine++;
        }
        ck_assert_msg(attn == 1, "%s: the winner (%.4g ms modelled) has %u fused attention kernels",
                      cases[i].name, r.best_ms, attn);
        ck_assert_msg((combine == 1) == cases[i].split, "%s: %u combine kernels", cases[i].name,
                      combine);
        sr_report_fini(&r);
        hl_graph_free(g);
    }
}
END_TEST

/* The model's rows of the reference lowering of the graph at path (its profile dims). */
static sr_kernel_row *reference_rows(const char *path, uint32_t *n, double *ms)
{
    hl_graph *g = load(path);
    lm_err e = {0};
    ll_graph *lg = ll_graph_from_hlir(g, &e);
    ck_assert_msg(lg, "%s", e.msg);
    cg_plan *p = cg_plan_new(lg, NULL, &e);
    ck_assert_msg(p, "%s", e.msg);
    sr_kernel_row *rows = NULL;
    ck_assert_int_eq(sr_cost_plan(p, lg, g, NULL, ms, &rows, n, &e), 0);
    cg_plan_free(p);
    ll_graph_free(lg);
    hl_graph_free(g);
    return rows;
}

START_TEST(the_cost_model_counts_loops_and_scattered_loads)
{
    /* the 4096^3 matmul lowered as one reduction kernel: every step of its 4096-long loop
       loads two elements, multiplies and accumulates (4 values a step), and its B operand
       is read down a column, a 32-byte sector a load; softmax reads its rows in order */
    uint32_t n;
    double ms;
    sr_kernel_row *r = reference_rows(MATMUL_BF16, &n, &ms);
    ck_assert_uint_eq(n, 1);
    double mnk = 4096.0 * 4096.0 * 4096.0;
    ck_assert_msg(r[0].flops >= 4 * mnk, "flops %g", r[0].flops);
    ck_assert_msg(r[0].bytes >= 32 * mnk, "bytes %g", r[0].bytes);
    ck_assert_msg(ms > 100, "modelled %g ms", ms); /* measured 745.8 ms on an H100 */
    free(r);
    r = reference_rows(SOFTMAX, &n, &ms);
    double tensor = 4096.0 * 8192.0 * 4;
    for (uint32_t i = 0; i < n; i++)
        ck_assert_msg(r[i].bytes <= 3 * tensor, "step %u: %g bytes", i, r[i].bytes);
    ck_assert_msg(ms < 1, "modelled %g ms", ms); /* measured 0.46 ms on an H100 */
    free(r);
}
END_TEST

static Suite *search_suite(void)
{
    Suite *s = suite_create("search");
    TCase *t = tcase_create("search");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, same_seed_same_plan_byte_for_byte);
    tcase_add_test(t, a_search_out_of_time_still_measures_a_candidate);
    tcase_add_test(t, the_time_limit_covers_saturation);
    tcase_add_test(t, past_the_time_limit_the_reference_is_not_run);
    tcase_add_test(t, replaying_a_log_gives_the_same_plan);
    tcase_add_test(t, a_replay_of_another_graph_diverges);
    tcase_add_test(t, failures_are_recorded_and_the_search_finishes);
    tcase_add_test(t, an_evaluator_failing_everything_is_a_clear_error);
    tcase_add_test(t, a_program_is_measured_once);
    tcase_add_test(t, the_model_screens_out_hopeless_candidates);
    tcase_add_test(t, the_cost_model_orders_obvious_cases);
    tcase_add_test(t, the_cost_model_answers_with_the_searchs_cost);
    tcase_add_test(t, the_search_finds_the_fused_attention);
    tcase_add_test(t, the_cost_model_counts_loops_and_scattered_loads);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {search_suite, NULL};
