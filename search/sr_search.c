/* sr_search.c - the genetic search (search.h): saturation, the space, the generation
 * loop, the evaluators, the log, the summary.
 *
 * The loop (docs/search.md, "The algorithm"): the reference lowering is evaluated first
 * as the baseline (it is not a candidate). Then, while fewer than `limit` candidates have
 * been handed to the evaluator, the time limit has not passed and the space is not
 * exhausted, the loop keeps the evaluator's slots full: the first candidate is a random
 * genome (ll_genome_random, which repairs), the second and third the most and the
 * least fused ones (fused_start), after a restart a fresh random genome, otherwise a mutant of one
 * of the best keep_best parents (uniformly drawn), with 1 .. max_mutations of its reached decisions
 * changed, the classes the change newly reaches drawn at random, then repaired. Every genome is
 * canonicalized (ll_genome_canonicalize) and skipped when its hash was seen; its LLIR is built and
 * skipped when its fingerprint was seen, so two genomes of one program are measured once. A genome
 * whose LLIR cannot be built, or that codegen refuses, is recorded and skipped without counting
 * towards the limit. Every candidate is costed by the model (its modelled time is logged next to
 * the evaluator's) and handed over with the cutoff best * cutoff_factor. When restart_after results
 * in a row bring no new best, the parents are dropped and the search restarts from a random genome;
 * the best found so far stays the best. With a measuring evaluator the first candidate and the
 * winner are compared with the reference runtime (sr_candidate.check) after the search, each
 * measured again for it; a winner that disagrees gives way to the next best.
 *
 * Determinism: every random choice comes from one PCG32 stream of the seed, and the loop
 * depends on nothing but the results and the order they arrive in, so the cost model
 * (one slot, results in submission order) gives the same search and the same plan byte
 * for byte, and the replay evaluator, which answers from a log in the log's order,
 * reproduces the search that wrote the log. The time limit is the one input that is not
 * a result: a search the time limit stopped is replayed up to where it stopped.
 */
#include "sr_int.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#ifdef LUMINAL_HAVE_SR_GPU
#include "sr_gpu.h"
#endif

#define SR_STREAM 0x736561726368ull /* "search" */
#define SR_NODE_LIMIT 200000000ull  /* saturation rows: as --emit space */
#define SR_HALL 8                   /* best candidates kept for the winner's check */
#define SR_OVERTIME 5 /* past the time limit, with no time yet: the first genome and 4 seeds */

void sr_options_default(sr_options *o)
{
    memset(o, 0, sizeof *o);
    o->limit = 20;
    o->keep_best = 4;
    o->max_mutations = 3;
    o->cutoff_factor = 2.0;
    o->screen_factor = 50.0;
    o->proposals = 8;
    o->restart_after = 8;
    o->time_limit_s = 600;
    o->fused_start = true;
}

void sr_report_fini(sr_report *r)
{
    free(r->kernel_rows);
    r->kernel_rows = NULL;
    r->n_kernel_rows = 0;
}

const char *sr_fmt_ms(double ms, char *buf, size_t cap)
{
    if (isnan(ms))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.4g ms", ms);
    return buf;
}

/* ==================================================================================
 * Sets of 64- and 128-bit keys (open addressing; the keys are hashes already)
 * ================================================================================== */

typedef struct keyset {
    uint64_t *lo, *hi;
    uint8_t *used;
    size_t cap, n;
} keyset;

static void keyset_fini(keyset *k)
{
    free(k->lo);
    free(k->hi);
    free(k->used);
    memset(k, 0, sizeof *k);
}

static size_t keyset_slot(const keyset *k, uint64_t lo, uint64_t hi)
{
    size_t m = k->cap - 1, i = (size_t)(lo ^ (hi * 0x9e3779b97f4a7c15ull)) & m;
    while (k->used[i] && !(k->lo[i] == lo && k->hi[i] == hi))
        i = (i + 1) & m;
    return i;
}

static bool keyset_has(const keyset *k, uint64_t lo, uint64_t hi)
{
    return k->cap && k->used[keyset_slot(k, lo, hi)];
}

/* 1 inserted, 0 present, -1 out of memory. */
static int keyset_add(keyset *k, uint64_t lo, uint64_t hi)
{
    if ((k->n + 1) * 2 > k->cap) {
        keyset big = {0};
        big.cap = k->cap ? k->cap * 2 : 256;
        big.lo = malloc(big.cap * sizeof *big.lo);
        big.hi = malloc(big.cap * sizeof *big.hi);
        big.used = calloc(big.cap, 1);
        if (!big.lo || !big.hi || !big.used) {
            keyset_fini(&big);
            return -1;
        }
        for (size_t i = 0; i < k->cap; i++) {
            if (!k->used[i]) continue;
            size_t j = keyset_slot(&big, k->lo[i], k->hi[i]);
            big.used[j] = 1;
            big.lo[j] = k->lo[i];
            big.hi[j] = k->hi[i];
        }
        big.n = k->n;
        keyset_fini(k);
        *k = big;
    }
    size_t i = keyset_slot(k, lo, hi);
    if (k->used[i]) return 0;
    k->used[i] = 1;
    k->lo[i] = lo;
    k->hi[i] = hi;
    k->n++;
    return 1;
}

/* ==================================================================================
 * The search's state
 * ================================================================================== */

typedef enum role { ROLE_REFERENCE = 0, ROLE_SEARCH, ROLE_CHECK } role;
static const char *ROLE_NAME[] = {"reference", "search", "check"};

typedef struct member { /* a parent, or one of the hall of the best */
    ll_genome g;
    double ms;
    uint64_t id;
} member;

typedef struct flight { /* a candidate handed to the evaluator */
    bool used;
    uint64_t id;
    role role;
    ll_graph *lg;
    cg_plan *plan;
    ll_genome g;
    bool have_genome;
    const char *origin;
    uint64_t parent;
    double modelled_ms;
    bool costed; /* plan and modelled_ms are made (a proposal the model chose) */
    uint32_t kernels;
    bool check; /* handed over with sr_candidate.check */
} flight;

typedef struct srch {
    const hl_graph *g;
    sr_options o;
    sr_report *r;
    lm_err *err;
    FILE *log; /* search.jsonl, or NULL */
    FILE *pr;  /* progress, or NULL */
    double t0, deadline;
    char log_path[4096], log_tmp[4200]; /* the log, and its name while it is written */

    eg_engine *e;
    hl_encoding enc;
    bool have_enc;
    FILE *devnull;
    ll_space *s;
    uint32_t ns;
    int64_t *dims; /* hlir order */
    uint32_t nd;

    sr_evaluator *ev, *own_ev;
    uint32_t slots;
    flight *fl;
    uint32_t inflight;

    lm_pcg32 rng;
    keyset genomes, programs;
    member pop[64];
    uint32_t pop_n;
    member hall[SR_HALL];
    uint32_t hall_n;
    uint32_t stagnation;
    bool restart_pending;
    uint64_t next_id, done;
    uint64_t submitted_search;
    uint64_t first_id; /* the first search candidate handed over */
    ll_genome first_g; /* its genome, for its check after the search (have_first) */
    bool have_first, first_ok;
    uint32_t *order;
    uint8_t *mark;

    sr_curve_point *curve;
    uint64_t n_curve, cap_curve;
} srch;

/* ==================================================================================
 * The log
 * ================================================================================== */

static void hex64(uint64_t v, char *buf)
{
    snprintf(buf, 17, "%016" PRIx64, v);
}
static void hexfp(ll_fingerprint fp, char *buf)
{
    snprintf(buf, 33, "%016" PRIx64 "%016" PRIx64, fp.hi, fp.lo);
}

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static void log_line(srch *x, json_t *obj)
{
    if (!obj) return;
    if (x->log) {
        char *s = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER);
        if (s) {
            fprintf(x->log, "%s\n", s);
            free(s);
        }
        fflush(x->log);
    }
    json_decref(obj);
}

static void log_header(srch *x)
{
    const hl_expr_pool *p = hl_graph_exprs_c(x->g);
    json_t *dims = json_object();
    for (uint32_t i = 0; i < x->nd; i++)
        json_object_set_new(dims, hl_var_name(p, hl_graph_dim_at(x->g, i)->var),
                            json_integer(x->dims[i]));
    json_t *h = json_object();
    json_object_set_new(h, "type", json_string("header"));
    json_object_set_new(h, "format", json_string("luminal-search-log"));
    json_object_set_new(h, "version", json_integer(1));
    json_object_set_new(h, "graph", json_string(x->o.graph_path ? x->o.graph_path : "-"));
    json_object_set_new(h, "evaluator", json_string(x->r->evaluator));
    json_object_set_new(h, "measured", json_boolean(x->r->measured));
    json_object_set_new(h, "slots", json_integer(x->slots));
    json_object_set_new(h, "seed", json_integer((json_int_t)x->o.seed));
    json_object_set_new(h, "limit", json_integer((json_int_t)x->o.limit));
    json_object_set_new(h, "max_draws", json_integer((json_int_t)x->o.max_draws));
    json_object_set_new(h, "keep_best", json_integer(x->o.keep_best));
    json_object_set_new(h, "max_mutations", json_integer(x->o.max_mutations));
    json_object_set_new(h, "cutoff_factor", json_real(x->o.cutoff_factor));
    json_object_set_new(h, "screen_factor", json_real(x->o.screen_factor));
    json_object_set_new(h, "proposals", json_integer(x->o.proposals));
    json_object_set_new(h, "restart_after", json_integer(x->o.restart_after));
    json_object_set_new(h, "fused_start", json_boolean(x->o.fused_start));
    json_object_set_new(h, "time_limit_s", json_real(x->o.time_limit_s));
    json_object_set_new(h, "dims", dims);
    json_object_set_new(h, "egraph", json_string(x->r->egraph_fingerprint));
    log_line(x, h);
}

/* One candidate's line: evaluated (res given) or rejected before (why given). */
static void log_candidate(srch *x, const flight *f, const sr_result *res, int status,
                          const char *why, bool have_fp, ll_fingerprint fp)
{
    char gh[17] = "", fph[33] = "";
    if (f->have_genome) hex64(f->g.hash, gh);
    if (have_fp) hexfp(fp, fph);
    json_t *c = json_object();
    json_object_set_new(c, "type", json_string("candidate"));
    json_object_set_new(c, "n", json_integer((json_int_t)f->id));
    json_object_set_new(c, "role", json_string(ROLE_NAME[f->role]));
    json_object_set_new(c, "origin", json_string(f->origin ? f->origin : ""));
    json_object_set_new(c, "parent", f->parent ? json_integer((json_int_t)f->parent) : json_null());
    json_object_set_new(c, "genome", f->have_genome ? json_string(gh) : json_null());
    json_object_set_new(c, "fingerprint", have_fp ? json_string(fph) : json_null());
    json_object_set_new(c, "evaluated", json_boolean(res != NULL));
    json_object_set_new(c, "done", res ? json_integer((json_int_t)x->done) : json_null());
    json_object_set_new(c, "status", json_string(sr_status_name((sr_status)status)));
    json_object_set_new(c, "ms",
                        res && res->status == SR_OK ? jnum(res->ms)
                        : res && res->ms > 0        ? jnum(res->ms)
                                                    : json_null());
    json_object_set_new(c, "modelled_ms", jnum(f->modelled_ms));
    json_object_set_new(c, "gpu", json_integer(res ? res->gpu : -1));
    json_object_set_new(c, "trials", json_integer(res ? res->trials : 0));
    json_object_set_new(c, "check", json_boolean(f->check));
    json_object_set_new(c, "checked", json_boolean(res && res->checked));
    json_object_set_new(c, "why", json_string(why ? why : ""));
    json_object_set_new(c, "kernels", json_integer(f->kernels));
    json_object_set_new(c, "compile_s", json_real(res ? res->compile_s : 0.0));
    json_object_set_new(c, "best_ms", jnum(x->r->best_ms));
    log_line(x, c);
}

/* ==================================================================================
 * Progress
 * ================================================================================== */

static void progress(srch *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(srch *x, const char *fmt, ...)
{
    if (!x->pr) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(x->pr, "search: ");
    vfprintf(x->pr, fmt, ap);
    fprintf(x->pr, "\n");
    fflush(x->pr);
    va_end(ap);
}

static double time_left(const srch *x)
{
    return x->deadline > 0 ? x->deadline - lm_now_s() : INFINITY;
}

/* ==================================================================================
 * Setup: saturation, the space, the evaluator
 * ================================================================================== */

static int hx(lm_err *he, lm_err *err, const char *what)
{
    lm_err_prefix(he, "%s", what);
    lm_err_copy(err, he);
    return he->code;
}

static int egraph_fingerprint(srch *x)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return lm_err_set(x->err, LM_ENOMEM, NULL, "search: out of memory");
    int rc = ll_space_write_json(x->s, m, x->err);
    fclose(m);
    if (!rc) {
        XXH128_hash_t h = XXH3_128bits(buf, len);
        snprintf(x->r->egraph_fingerprint, sizeof x->r->egraph_fingerprint,
                 "%016" PRIx64 "%016" PRIx64, (uint64_t)h.high64, (uint64_t)h.low64);
    }
    free(buf);
    return rc;
}

static int saturate(srch *x)
{
    double t = lm_now_s();
    uint64_t avail = lm_mem_available();
    ll_sat_opts so = {.node_limit = SR_NODE_LIMIT,
                      .mem_limit = x->o.sat_mem_limit ? x->o.sat_mem_limit : avail / 2};
    /* --time-limit covers saturation: what is left of it bounds the whole saturation (the
     * driver checks it before each phase) and each phase's run (the engine's checks) */
    double left = time_left(x);
    if (isfinite(left)) {
        if (left <= 0) {
            x->r->time_up = true;
            return lm_err_set(x->err, LM_ELIMIT, NULL,
                              "search: the time limit (%g s) passed before saturation began",
                              x->o.time_limit_s);
        }
        so.time_limit_s = left;
    }
    eg_options eo;
    eg_options_default(&eo);
    ll_sat_engine_options(&so, &eo);
    x->devnull = fopen("/dev/null", "w");
    eo.log = x->devnull;
    eo.out = x->devnull;
    x->e = eg_engine_new(&eo, x->err);
    if (!x->e)
        return x->err->code ? x->err->code
                            : lm_err_set(x->err, LM_ENOMEM, NULL, "search: no e-graph engine");
    lm_err he = {0};
    if (hl_graph_encode(x->g, x->e, &x->enc, &he) != 0)
        return hx(&he, x->err, "search: encoding the graph");
    x->have_enc = true;
    ll_sat_report rep;
    int rc = ll_saturate(x->e, x->o.rules, x->o.rules_name, &so, &rep, x->err);
    x->r->t.saturate = lm_now_s() - t;
    x->r->rows = eg_node_count(x->e);
    if (rc && so.time_limit_s > 0 && time_left(x) <= 0) {
        x->r->time_up = true;
        lm_err_prefix(x->err, "search: --time-limit %g s passed during saturation (%.3f s)",
                      x->o.time_limit_s, x->r->t.saturate);
    }
    if (rc) return rc;
    progress(x, "saturate: %" PRIu64 " rows after %u phases (%.3f s)", x->r->rows, rep.n_phases,
             x->r->t.saturate);
    t = lm_now_s();
    x->s = ll_space_new(x->e, eg_find(x->e, x->enc.root), x->err);
    if (!x->s) {
        x->r->t.space = lm_now_s() - t;
        return x->err->code;
    }
    ll_space_stats st;
    ll_space_get_stats(x->s, &st);
    x->r->classes = st.classes;
    x->r->decisions = st.decisions;
    x->r->log2_programs = st.log2_programs;
    x->ns = ll_space_class_count(x->s);
    x->order = malloc((x->ns ? x->ns : 1) * sizeof *x->order);
    x->mark = malloc(x->ns ? x->ns : 1);
    if (!x->order || !x->mark) return lm_err_set(x->err, LM_ENOMEM, NULL, "search: out of memory");
    rc = egraph_fingerprint(x);
    x->r->t.space = lm_now_s() - t;
    if (rc) return rc;
    progress(x, "space: %u classes, %u decisions, log2 programs %.1f (%.3f s)", st.classes,
             st.decisions, st.log2_programs, x->r->t.space);
    return LM_OK;
}

static int open_evaluator(srch *x)
{
    sr_eval_setup setup = {
        .graph = x->g, .graph_path = x->o.graph_path, .dims = x->dims, .seed = x->o.seed};
    if (x->o.ev) {
        x->ev = x->o.ev;
        snprintf(x->r->note, sizeof x->r->note, "given by the caller");
    } else if (x->o.evaluator == SR_EVAL_REPLAY) {
        /* opened before the dims (its header sets them): see sr_search_run */
        x->ev = x->own_ev;
    } else {
        sr_eval_kind k = x->o.evaluator;
#ifdef LUMINAL_HAVE_SR_GPU
        if (k == SR_EVAL_AUTO) {
            lm_err pe = {0};
            int n = (x->o.graph_path && strcmp(x->o.graph_path, "-") != 0) ? sr_gpu_count(&pe) : 0;
            k = n > 0 ? SR_EVAL_GPU : SR_EVAL_COST_MODEL;
            if (n > 0)
                snprintf(x->r->note, sizeof x->r->note, "%d GPU%s visible", n, n == 1 ? "" : "s");
            else if (!x->o.graph_path || strcmp(x->o.graph_path, "-") == 0)
                snprintf(x->r->note, sizeof x->r->note,
                         "the graph came from standard input: the GPU workers need a file");
            else
                snprintf(x->r->note, sizeof x->r->note, "no GPU visible%s%.100s",
                         pe.code ? ": " : "", pe.code ? pe.msg : "");
        }
        if (k == SR_EVAL_GPU) {
            if (!x->o.graph_path || strcmp(x->o.graph_path, "-") == 0)
                return lm_err_set(x->err, LM_EARG, NULL,
                                  "search: the GPU evaluator needs the graph as a file (its "
                                  "workers read it), not standard input");
            sr_gpu_opts go;
            sr_gpu_opts_default(&go);
            go.workers = x->o.gpu_workers;
            go.worker_exe = x->o.worker_exe;
            if (x->o.gpu_timeout_s > 0) go.timeout_s = x->o.gpu_timeout_s;
            go.log = x->pr;
            x->own_ev = sr_gpu_new(&setup, &go, x->err);
            if (!x->own_ev) return x->err->code ? x->err->code : LM_ENODEV;
            if (!x->r->note[0]) snprintf(x->r->note, sizeof x->r->note, "asked for (--gpu)");
        }
#else
        if (k == SR_EVAL_GPU)
            return lm_err_set(x->err, LM_EUNSUPPORTED, NULL,
                              "search: this build has no GPU evaluator (search/sr_gpu.c)");
        if (k == SR_EVAL_AUTO) {
            k = SR_EVAL_COST_MODEL;
            snprintf(x->r->note, sizeof x->r->note,
                     "this build has no GPU evaluator (search/sr_gpu.c)");
        }
#endif
        if (k == SR_EVAL_COST_MODEL) {
            x->own_ev = sr_cost_model_new(&setup, x->err);
            if (!x->own_ev) return x->err->code;
            if (!x->r->note[0]) snprintf(x->r->note, sizeof x->r->note, "asked for (--cost-model)");
        }
        x->ev = x->own_ev;
    }
    if (x->o.evaluator != SR_EVAL_REPLAY || x->o.ev) {
        snprintf(x->r->evaluator, sizeof x->r->evaluator, "%s", x->ev->ops->name);
        x->r->measured = x->ev->ops->measured;
    }
    x->slots = x->ev->ops->slots(x->ev);
    if (x->slots < 1) x->slots = 1;
    x->fl = calloc(x->slots, sizeof *x->fl);
    if (!x->fl) return lm_err_set(x->err, LM_ENOMEM, NULL, "search: out of memory");
    progress(x, "evaluator: %s, %u slot%s (%s; %s)", x->r->evaluator, x->slots,
             x->slots == 1 ? "" : "s", x->r->measured ? "measured" : "modelled, not measured",
             x->r->note);
    return LM_OK;
}

/* ==================================================================================
 * Candidates
 * ================================================================================== */

static void flight_clear(flight *f)
{
    ll_graph_free(f->lg);
    cg_plan_free(f->plan);
    ll_genome_fini(&f->g);
    memset(f, 0, sizeof *f);
}

/* Inserts (g, ms, id) into a list sorted by (ms, id), keeping at most cap. */
static int member_insert(member *list, uint32_t *n, uint32_t cap, const ll_genome *g, double ms,
                         uint64_t id, lm_err *err)
{
    uint32_t at = 0;
    while (at < *n && (list[at].ms < ms || (list[at].ms == ms && list[at].id < id)))
        at++;
    if (at >= cap) return LM_OK;
    if (*n == cap) {
        ll_genome_fini(&list[cap - 1].g);
        (*n)--;
    }
    memmove(&list[at + 1], &list[at], (*n - at) * sizeof *list);
    memset(&list[at], 0, sizeof list[at]);
    (*n)++;
    list[at].ms = ms;
    list[at].id = id;
    return ll_genome_copy(&list[at].g, g, err);
}

static void member_clear(member *list, uint32_t *n)
{
    for (uint32_t i = 0; i < *n; i++)
        ll_genome_fini(&list[i].g);
    *n = 0;
}

/* A mutant of parent: 1 .. max_mutations reached decisions changed, classes the change
 * newly reaches drawn at random, then repaired. *made false when the parent has no
 * decision to change. */
static int mutate(srch *x, const ll_genome *parent, ll_genome *child, bool *made)
{
    *made = false;
    int rc = ll_genome_copy(child, parent, x->err);
    uint32_t n = 0;
    if (!rc) rc = ll_genome_reached(child, x->s, x->order, &n, x->err);
    if (rc) return rc;
    memset(x->mark, 0, x->ns);
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++) {
        x->mark[x->order[i]] = 1;
        if (ll_space_choice_count(x->s, x->order[i]) > 1) x->order[nd++] = x->order[i];
    }
    if (!nd) return LM_OK;
    uint32_t k = 1 + lm_pcg_below(&x->rng, x->o.max_mutations ? x->o.max_mutations : 1);
    for (uint32_t m = 0; m < k; m++) {
        uint32_t c = x->order[lm_pcg_below(&x->rng, nd)];
        uint32_t cnt = ll_space_choice_count(x->s, c);
        ll_genome_set(child, x->s, c,
                      (child->choice[c] + 1 + lm_pcg_below(&x->rng, cnt - 1)) % cnt);
    }
    for (bool grew = true; grew;) {
        grew = false;
        if ((rc = ll_genome_reached(child, x->s, x->order, &n, x->err))) return rc;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t c = x->order[i];
            if (x->mark[c]) continue;
            x->mark[c] = 1;
            grew = true;
            uint32_t cnt = ll_space_choice_count(x->s, c);
            if (cnt > 1) ll_genome_set(child, x->s, c, lm_pcg_below(&x->rng, cnt));
        }
    }
    if ((rc = ll_genome_repair(child, x->s, &x->rng, x->err))) return rc;
    *made = true;
    return LM_OK;
}

static int submit(srch *x, flight *f, bool check)
{
    double cutoff = 0;
    if (f->role == ROLE_SEARCH && x->o.cutoff_factor > 0 && !isnan(x->r->best_ms))
        cutoff = x->r->best_ms * x->o.cutoff_factor;
    sr_candidate c = {
        .id = f->id, .llir = f->lg, .plan = f->plan, .cutoff_ms = cutoff, .check = check};
    double t = lm_now_s();
    int rc = x->ev->ops->submit(x->ev, &c, x->err);
    x->r->t.measure += lm_now_s() - t;
    if (rc) return rc;
    f->used = true;
    f->check = check;
    x->inflight++;
    return LM_OK;
}

/* The model's time the screen compares with: the modelled time of the best measured so
 * far, or before any, of the reference lowering (when it has a time); NAN: none. */
static double screen_base(const srch *x)
{
    if (!isnan(x->r->best_ms)) return x->r->best_modelled_ms;
    return isnan(x->r->reference_ms) ? NAN : x->r->reference_modelled_ms;
}

/* Is f hopeless by the model, so that measuring it would only spend the GPU's time?
 * (A program the model puts 50 times above the best so far is one with a loop nest the
 * fused code recomputes per element: seconds per run where the best takes milliseconds.)
 * Only for a measuring evaluator: the cost model's own cutoff already does this. */
static bool screened(const srch *x, const flight *f)
{
    double base = screen_base(x);
    return x->r->measured && x->o.screen_factor > 0 && isfinite(base) && base > 0 &&
           isfinite(f->modelled_ms) && f->modelled_ms > base * x->o.screen_factor;
}

/* Builds f's LLIR (from its genome unless given), skips a program already seen (*ok
 * false, nothing recorded), numbers it, generates its plan and costs it. *ok false, with
 * the candidate recorded, when it cannot be built or generated. */
static int prepare(srch *x, flight *f, bool *ok)
{
    *ok = false;
    lm_err e = {0};
    double t = lm_now_s();
    if (!f->lg) f->lg = ll_graph_from_genome(x->s, &f->g, &e);
    x->r->t.search += lm_now_s() - t;
    ll_fingerprint fp = {0, 0};
    if (f->lg) fp = ll_graph_fingerprint(f->lg);
    if (f->lg && f->role == ROLE_SEARCH) {
        int added = keyset_add(&x->programs, fp.lo, fp.hi);
        if (added < 0) return lm_err_set(x->err, LM_ENOMEM, NULL, "search: out of memory");
        if (!added) {
            x->r->dup_programs++;
            return LM_OK; /* a program already seen: not recorded, not measured */
        }
    }
    if (f->role == ROLE_SEARCH) f->id = ++x->next_id;
    if (!f->lg) {
        x->r->build_failed++;
        log_candidate(x, f, NULL, SR_ERROR, e.msg, false, fp);
        progress(x, "#%" PRIu64 ": its LLIR could not be built: %s", f->id, e.msg);
        return LM_OK;
    }
    t = lm_now_s();
    if (!f->plan) f->plan = cg_plan_new(f->lg, NULL, &e);
    x->r->t.codegen += lm_now_s() - t;
    if (!f->plan) {
        if (f->role == ROLE_SEARCH) x->r->codegen_failed++;
        log_candidate(x, f, NULL, SR_COMPILE_FAILED, e.msg, true, fp);
        progress(x, "#%" PRIu64 ": codegen refused it: %s", f->id, e.msg);
        return LM_OK;
    }
    f->kernels = f->plan->n_kernels + f->plan->n_blas;
    t = lm_now_s();
    lm_err ce = {0};
    if (!f->costed &&
        sr_cost_plan(f->plan, f->lg, x->g, x->dims, &f->modelled_ms, NULL, NULL, &ce) != 0)
        f->modelled_ms = NAN;
    x->r->t.search += lm_now_s() - t;
    if (f->role == ROLE_SEARCH && screened(x, f)) {
        char why[200], a[32], b[32];
        double base = screen_base(x);
        snprintf(why, sizeof why,
                 "modelled %s, over %g times the model's %s for the %s: not measured",
                 sr_fmt_ms(f->modelled_ms, a, sizeof a), x->o.screen_factor,
                 sr_fmt_ms(base, b, sizeof b),
                 isnan(x->r->best_ms) ? "reference lowering" : "best so far");
        x->r->screened++;
        log_candidate(x, f, NULL, SR_TOO_SLOW, why, true, fp);
        progress(x, "#%" PRIu64 " screened out: %s", f->id, why);
        return LM_OK;
    }
    *ok = true;
    return LM_OK;
}

static flight *free_slot(srch *x)
{
    for (uint32_t i = 0; i < x->slots; i++)
        if (!x->fl[i].used) return &x->fl[i];
    return NULL;
}

/* Draws a genome into f (a search candidate): the first is random; with fused_start the
 * second to fifth are the most fused, the library, the fused-stored and the least fused
 * genomes;
 * then a fresh random genome after a restart or while no candidate has a time, else a
 * mutant of one of the best. Canonicalized. */
static int draw(srch *x, flight *f)
{
    int rc = ll_genome_init(&f->g, x->s, x->err);
    if (rc) return rc;
    f->have_genome = true;
    f->role = ROLE_SEARCH;
    x->r->draws++;
    bool made = false;
    if (x->submitted_search == 0 && x->r->draws == 1) {
        f->origin = "random";
    } else if (x->o.fused_start && x->r->draws == 2) {
        rc = ll_genome_most_fused(&f->g, x->s, x->err);
        f->origin = "most-fused";
        made = true;
    } else if (x->o.fused_start && x->r->draws == 3) {
        rc = ll_genome_library(&f->g, x->s, x->err);
        f->origin = "library";
        made = true;
    } else if (x->o.fused_start && x->r->draws == 4) {
        rc = ll_genome_fused_stored(&f->g, x->s, x->err);
        f->origin = "fused-stored";
        made = true;
    } else if (x->o.fused_start && x->r->draws == 5) {
        rc = ll_genome_least_fused(&f->g, x->s, x->err);
        f->origin = "least-fused";
        made = true;
    } else if (x->restart_pending || x->pop_n == 0) {
        f->origin = x->restart_pending ? "restart" : "random";
        x->restart_pending = false;
    } else {
        const member *p = &x->pop[lm_pcg_below(&x->rng, x->pop_n)];
        rc = mutate(x, &p->g, &f->g, &made);
        f->origin = "mutation";
        f->parent = p->id;
    }
    if (!rc && !made) rc = ll_genome_random(&f->g, x->s, &x->rng, x->err);
    if (!rc) rc = ll_genome_canonicalize(&f->g, x->s, x->err);
    return rc;
}

/* The model's pick among up to `proposals` new genomes (each built, generated and
 * costed): the one with the least modelled time, in *best (have: one was found). Genomes
 * and programs seen before are skipped (and counted as repeats); the others are
 * declined and forgotten (a later draw may bring one back). */
static int propose(srch *x, flight *best, bool *have)
{
    *have = false;
    for (uint32_t i = 0; i < x->o.proposals; i++) {
        flight c;
        memset(&c, 0, sizeof c);
        double t = lm_now_s();
        int rc = draw(x, &c);
        if (rc) {
            flight_clear(&c);
            return rc;
        }
        bool skip = keyset_has(&x->genomes, c.g.hash, 0) || (*have && c.g.hash == best->g.hash);
        if (skip) x->r->dup_genomes++;
        lm_err e = {0};
        if (!skip) skip = !(c.lg = ll_graph_from_genome(x->s, &c.g, &e));
        ll_fingerprint fp = {0, 0}, bp = {0, 0};
        if (!skip) {
            fp = ll_graph_fingerprint(c.lg);
            if (*have) bp = ll_graph_fingerprint(best->lg);
            skip = keyset_has(&x->programs, fp.lo, fp.hi) || (*have && fp.lo == bp.lo && fp.hi == bp.hi);
            if (skip) x->r->dup_programs++;
        }
        x->r->t.search += lm_now_s() - t;
        if (!skip) {
            t = lm_now_s();
            c.plan = cg_plan_new(c.lg, NULL, &e);
            x->r->t.codegen += lm_now_s() - t;
            skip = !c.plan;
        }
        if (!skip) {
            t = lm_now_s();
            lm_err ce = {0};
            if (sr_cost_plan(c.plan, c.lg, x->g, x->dims, &c.modelled_ms, NULL, NULL, &ce) != 0)
                c.modelled_ms = INFINITY;
            c.costed = true;
            x->r->t.search += lm_now_s() - t;
        }
        if (skip) {
            flight_clear(&c);
            continue;
        }
        if (!*have || c.modelled_ms < best->modelled_ms) {
            if (*have) {
                flight_clear(best);
                x->r->declined++;
            }
            *best = c;
            *have = true;
        } else {
            flight_clear(&c);
            x->r->declined++;
        }
    }
    if (*have && isinf(best->modelled_ms)) best->modelled_ms = NAN;
    return LM_OK;
}

/* Draws the next genome and, when it is a new program, hands it over. With a measuring
 * evaluator, after the first five draws, the model proposes: of `proposals` new genomes
 * the one it costs least is measured. */
static int next_candidate(srch *x)
{
    flight *f = free_slot(x);
    memset(f, 0, sizeof *f);
    int rc;
    bool seeding = x->r->draws < (x->o.fused_start ? 5u : 1u);
    if (!seeding && x->r->measured && x->o.proposals > 1) {
        bool have;
        if ((rc = propose(x, f, &have))) return rc;
        if (!have) return LM_OK;
    } else {
        double t = lm_now_s();
        rc = draw(x, f);
        x->r->t.search += lm_now_s() - t;
        if (rc) {
            flight_clear(f);
            return rc;
        }
    }
    int added = keyset_add(&x->genomes, f->g.hash, 0);
    if (added <= 0) {
        flight_clear(f);
        if (added < 0) return lm_err_set(x->err, LM_ENOMEM, NULL, "search: out of memory");
        x->r->dup_genomes++;
        return LM_OK;
    }
    bool ok;
    rc = prepare(x, f, &ok);
    if (rc || !ok) {
        flight_clear(f);
        return rc;
    }
    x->submitted_search++;
    if (x->submitted_search == 1) {
        x->first_id = f->id;
        if ((rc = ll_genome_copy(&x->first_g, &f->g, x->err))) return rc;
        x->have_first = true;
    }
    return submit(x, f, false);
}

/* ==================================================================================
 * Results
 * ================================================================================== */

static void curve_add(srch *x, double ms)
{
    if (x->n_curve == x->cap_curve) {
        uint64_t cap = x->cap_curve ? x->cap_curve * 2 : 64;
        sr_curve_point *c = realloc(x->curve, cap * sizeof *c);
        if (!c) return;
        x->curve = c;
        x->cap_curve = cap;
    }
    x->curve[x->n_curve++] = (sr_curve_point){x->r->evaluated, ms, x->r->best_ms};
}

static int take_result(srch *x)
{
    sr_result res;
    memset(&res, 0, sizeof res);
    double t = lm_now_s();
    int rc = x->ev->ops->next(x->ev, &res, x->err);
    x->r->t.measure += lm_now_s() - t;
    if (rc) {
        if (!x->err->code)
            lm_err_set(x->err, rc, NULL, "search: the evaluator has no candidate in flight");
        return x->err->code;
    }
    flight *f = NULL;
    for (uint32_t i = 0; i < x->slots && !f; i++)
        if (x->fl[i].used && x->fl[i].id == res.id) f = &x->fl[i];
    if (!f)
        return lm_err_set(x->err, LM_ERUNTIME, NULL,
                          "search: the evaluator answered for candidate %" PRIu64
                          ", which is not in flight",
                          res.id);
    x->inflight--;
    x->done++;
    if ((unsigned)res.status >= SR_STATUS_COUNT) res.status = SR_ERROR;
    res.why[sizeof res.why - 1] = 0;
    x->r->t.compile += res.compile_s;
    ll_fingerprint fp = ll_graph_fingerprint(f->lg);
    char buf[32], bbuf[32];
    if (f->role == ROLE_REFERENCE) {
        x->r->reference_ms = res.status == SR_OK ? res.ms : NAN;
        x->r->reference_modelled_ms = f->modelled_ms;
        snprintf(x->r->reference_status, sizeof x->r->reference_status, "%s",
                 sr_status_name(res.status));
        snprintf(x->r->reference_why, sizeof x->r->reference_why, "%s", res.why);
        log_candidate(x, f, &res, res.status, res.why, true, fp);
        progress(x, "reference lowering: %s %s (modelled %s)", sr_status_name(res.status),
                 sr_fmt_ms(x->r->reference_ms, buf, sizeof buf),
                 sr_fmt_ms(f->modelled_ms, bbuf, sizeof bbuf));
    } else if (f->role == ROLE_CHECK) {
        bool first = f->parent == x->first_id;
        if (first)
            x->r->first_checked = res.status == SR_OK && res.checked;
        else
            x->r->winner_checked = res.status == SR_OK && res.checked;
        log_candidate(x, f, &res, res.status, res.why, true, fp);
        progress(x, "%s #%" PRIu64 " checked against the reference: %s%s%s",
                 first ? "first candidate" : "winner", f->parent, sr_status_name(res.status),
                 res.why[0] ? ": " : "", res.why);
        if (res.status != SR_OK) {
            /* it gives way to the next best */
            for (uint32_t i = 0; i < x->hall_n; i++)
                if (x->hall[i].id == f->parent) {
                    ll_genome_fini(&x->hall[i].g);
                    memmove(&x->hall[i], &x->hall[i + 1], (x->hall_n - i - 1) * sizeof *x->hall);
                    x->hall_n--;
                    break;
                }
        }
    } else {
        x->r->evaluated++;
        x->r->by_status[res.status]++;
        if (f->id == x->first_id) x->first_ok = res.status == SR_OK;
        bool better = false;
        if (res.status == SR_OK) {
            x->r->ok++;
            if (f->id == x->first_id) x->r->first_ms = res.ms;
            better = isnan(x->r->best_ms) || res.ms < x->r->best_ms;
            if (better) {
                x->r->best_ms = res.ms;
                x->r->best_modelled_ms = f->modelled_ms;
                x->r->best_n = f->id;
            }
            rc = member_insert(x->pop, &x->pop_n, x->o.keep_best, &f->g, res.ms, f->id, x->err);
            if (!rc) rc = member_insert(x->hall, &x->hall_n, SR_HALL, &f->g, res.ms, f->id, x->err);
            if (rc) return rc;
        }
        log_candidate(x, f, &res, res.status, res.why, true, fp);
        curve_add(x, res.status == SR_OK ? res.ms : NAN);
        x->stagnation = better ? 0 : x->stagnation + 1;
        uint64_t rejected = x->r->evaluated - x->r->ok;
        progress(x,
                 "[%" PRIu64 "/%" PRIu64 "] #%" PRIu64
                 " (%s) %s %s (modelled %s); best %s (#%" PRIu64 "); %" PRIu64
                 " rejected; %.0f s left",
                 x->r->evaluated, x->o.limit, f->id, f->origin, sr_status_name(res.status),
                 sr_fmt_ms(res.status == SR_OK ? res.ms : NAN, buf, sizeof buf),
                 sr_fmt_ms(f->modelled_ms, bbuf, sizeof bbuf),
                 sr_fmt_ms(x->r->best_ms, (char[32]){0}, 32), x->r->best_n, rejected,
                 isfinite(time_left(x)) ? time_left(x) : -1.0);
        if (res.status != SR_OK && res.why[0]) progress(x, "  #%" PRIu64 ": %s", f->id, res.why);
        if (x->o.restart_after && x->stagnation >= x->o.restart_after) {
            member_clear(x->pop, &x->pop_n);
            x->restart_pending = true;
            x->stagnation = 0;
            x->r->restarts++;
            progress(x, "restart: %u results without a new best", x->o.restart_after);
        }
    }
    flight_clear(f);
    return LM_OK;
}

/* ==================================================================================
 * The phases
 * ================================================================================== */

static int reference(srch *x)
{
    flight *f = &x->fl[0];
    memset(f, 0, sizeof *f);
    f->role = ROLE_REFERENCE;
    f->origin = "hlir";
    f->id = 0;
    lm_err e = {0};
    f->lg = ll_graph_from_hlir(x->g, &e);
    if (!f->lg) {
        snprintf(x->r->reference_status, sizeof x->r->reference_status, "error");
        snprintf(x->r->reference_why, sizeof x->r->reference_why, "%.200s", e.msg);
        return LM_OK;
    }
    bool ok;
    int rc = prepare(x, f, &ok);
    if (rc || !ok) {
        snprintf(x->r->reference_status, sizeof x->r->reference_status, "%s",
                 ok ? "error" : "compile-failed");
        flight_clear(f);
        return rc;
    }
    if ((rc = submit(x, f, false))) return rc;
    return take_result(x);
}

static int search_loop(srch *x)
{
    /* the model's proposals draw several genomes per candidate measured */
    uint64_t per = x->r->measured && x->o.proposals > 1 ? x->o.proposals : 1;
    uint64_t max_draws = x->o.max_draws ? x->o.max_draws : (1000 + 200 * x->o.limit) * per;
    x->o.max_draws = max_draws;
    int rc = LM_OK;
    for (;;) {
        while (!rc && x->inflight < x->slots && x->submitted_search < x->o.limit) {
            if (time_left(x) <= 0) {
                if (!x->r->time_up) progress(x, "the time limit is reached");
                x->r->time_up = true;
                /* overtime: while no candidate has a time, the first genome and the seeds
                 * are still handed over, one at a time, so that a search whose limit went
                 * on the reference lowering still ends with a program */
                if (x->hall_n || x->inflight || x->submitted_search >= SR_OVERTIME) break;
            }
            if (x->r->draws >= max_draws) {
                if (!x->r->exhausted)
                    progress(x, "no new program in %" PRIu64 " draws: the space looks exhausted",
                             max_draws);
                x->r->exhausted = true;
                break;
            }
            rc = next_candidate(x);
        }
        if (rc || x->inflight == 0) break;
        rc = take_result(x);
    }
    return rc;
}

/* Measures genome g again as a check of candidate parent against the reference; one that
 * disagrees leaves the hall of the best (take_result). *agreed: it did. */
static int check_one(srch *x, const ll_genome *g, uint64_t parent, bool *agreed)
{
    uint32_t before = x->hall_n;
    flight *f = free_slot(x);
    memset(f, 0, sizeof *f);
    f->role = ROLE_CHECK;
    f->origin = "check";
    f->parent = parent;
    f->id = ++x->next_id;
    int rc = ll_genome_copy(&f->g, g, x->err);
    if (rc) return rc;
    f->have_genome = true;
    bool ok;
    if ((rc = prepare(x, f, &ok))) return rc;
    if (!ok) return lm_err_set(x->err, LM_ERUNTIME, NULL, "search: a checked candidate cannot be built again");
    if ((rc = submit(x, f, true)) || (rc = take_result(x))) return rc;
    *agreed = x->hall_n == before;
    return LM_OK;
}

/* With a measuring evaluator, after the search (so that the reference runtime, which can
 * take the CPU tens of seconds on a large graph, spends none of the search's time): the
 * first candidate compared with the reference, then the winner unless it is the first;
 * a winner that disagrees gives way to the next best. */
static int check_first_and_winner(srch *x)
{
    if (!x->ev->ops->measured) return LM_OK;
    bool agreed = false;
    int rc;
    if (x->have_first && x->first_ok && (rc = check_one(x, &x->first_g, x->first_id, &agreed)))
        return rc;
    for (uint32_t tries = 0; x->hall_n && tries < SR_HALL; tries++) {
        if (x->hall[0].id == x->first_id) {
            x->r->winner_checked = x->r->first_checked;
            return LM_OK;
        }
        member w = x->hall[0];
        if ((rc = check_one(x, &w.g, w.id, &agreed))) return rc;
        if (agreed) return LM_OK;
    }
    return LM_OK;
}

static int winner(srch *x)
{
    if (!x->hall_n) {
        char what[512];
        size_t at = 0;
        what[0] = 0;
        for (uint32_t i = 0; i < SR_STATUS_COUNT; i++)
            if (x->r->by_status[i])
                at += (size_t)snprintf(what + at, at < sizeof what ? sizeof what - at : 0,
                                       "%s%" PRIu64 " %s", at ? ", " : "", x->r->by_status[i],
                                       sr_status_name((sr_status)i));
        return lm_err_set(x->err, LM_ELIMIT, NULL,
                          "search: no candidate has a time (%" PRIu64 " evaluated%s%s; %" PRIu64
                          " whose LLIR could not be built, %" PRIu64 " refused by codegen)",
                          x->r->evaluated, at ? ": " : "", what, x->r->build_failed,
                          x->r->codegen_failed);
    }
    const member *w = &x->hall[0];
    x->r->best_ms = w->ms;
    x->r->best_n = w->id;
    hex64(w->g.hash, x->r->best_genome);
    lm_err e = {0};
    ll_graph *lg = ll_graph_from_genome(x->s, &w->g, &e);
    cg_plan *plan = lg ? cg_plan_new(lg, NULL, &e) : NULL;
    if (!plan) {
        ll_graph_free(lg);
        return lm_err_set(x->err, LM_ERUNTIME, NULL, "search: the winner cannot be built again: %s",
                          e.msg);
    }
    hexfp(ll_graph_fingerprint(lg), x->r->best_fingerprint);
    x->r->winner_kernels = plan->n_kernels;
    x->r->winner_blas = plan->n_blas;
    double ms;
    int rc = sr_cost_plan(plan, lg, x->g, x->dims, &ms, &x->r->kernel_rows, &x->r->n_kernel_rows,
                          x->err);
    if (!rc) x->r->best_modelled_ms = ms;
    if (!rc && x->o.out_dir) {
        double t = lm_now_s();
        char gfp[48];
        snprintf(gfp, sizeof gfp, "%s", x->r->best_genome);
        rc = sr_save_program(x->o.out_dir, plan, lg, x->g, x->o.graph_path,
                             x->r->egraph_fingerprint, gfp, x->err);
        x->r->t.save += lm_now_s() - t;
    }
    cg_plan_free(plan);
    ll_graph_free(lg);
    return rc;
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *c = p + 1; *c; c++)
        if (*c == '/') {
            *c = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
            *c = '/';
        }
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
    struct stat st;
    if (stat(p, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int open_log(srch *x)
{
    if (!x->o.out_dir) return LM_OK;
    if (make_dirs(x->o.out_dir) != 0)
        return lm_err_set(x->err, LM_EIO, NULL, "search: cannot make the directory '%s': %s",
                          x->o.out_dir, strerror(errno));
    /* written as search.jsonl.tmp and renamed when the search ends (srch_fini), so that
     * a replayed log in the same directory is never truncated */
    snprintf(x->log_path, sizeof x->log_path, "%s/search.jsonl", x->o.out_dir);
    x->log = sr__open_tmp(x->log_path, x->log_tmp, sizeof x->log_tmp, x->err);
    return x->log ? LM_OK : x->err->code;
}

static void teardown(srch *x)
{
    for (uint32_t i = 0; x->fl && i < x->slots; i++)
        flight_clear(&x->fl[i]);
    free(x->fl);
    if (x->own_ev) x->own_ev->ops->free(x->own_ev);
    member_clear(x->pop, &x->pop_n);
    member_clear(x->hall, &x->hall_n);
    if (x->have_first) ll_genome_fini(&x->first_g);
    keyset_fini(&x->genomes);
    keyset_fini(&x->programs);
    free(x->order);
    free(x->mark);
    free(x->dims);
    free(x->curve);
    ll_space_free(x->s);
    if (x->have_enc) hl_encoding_fini(&x->enc);
    eg_engine_free(x->e);
    if (x->devnull) fclose(x->devnull);
    if (x->log) {
        lm_err le = {0};
        if (sr__commit_tmp(x->log, x->log_tmp, x->log_path, LM_OK, &le))
            lm_err_copy(x->err, &le);
    }
}

/* The replay's header replaces the search's parameters and dims. */
static int apply_header(srch *x, const sr_log_header *h)
{
    x->o.seed = h->seed;
    x->o.limit = h->search_evaluated < h->limit ? h->search_evaluated : h->limit;
    x->o.max_draws = h->max_draws;
    x->o.keep_best = h->keep_best;
    x->o.max_mutations = h->max_mutations;
    x->o.restart_after = h->restart_after;
    x->o.cutoff_factor = h->cutoff_factor;
    x->o.screen_factor = h->screen_factor;
    x->o.proposals = h->proposals;
    x->o.fused_start = h->fused_start;
    x->o.time_limit_s = 0;
    const hl_expr_pool *p = hl_graph_exprs_c(x->g);
    for (uint32_t i = 0; i < x->nd; i++) {
        const char *name = hl_var_name(p, hl_graph_dim_at(x->g, i)->var);
        bool found = false;
        for (uint32_t k = 0; k < h->n_dims && !found; k++)
            if (strcmp(h->dim_names[k], name) == 0) x->dims[i] = h->dims[k], found = true;
        if (!found)
            return lm_err_set(x->err, LM_EARG, NULL,
                              "search: the replayed log has no value of dim '%s': is it the log "
                              "of another graph?",
                              name);
        /* as --dim NAME=V is checked: within the graph's range */
        const hl_dim *d = hl_graph_dim_at(x->g, i);
        if (x->dims[i] < d->lo || x->dims[i] > d->hi)
            return lm_err_set(x->err, LM_EARG, NULL,
                              "search: the replayed log runs dim '%s' at %" PRId64
                              ", outside the graph's range [%" PRId64 ", %" PRId64
                              "]: is it the log of another graph?",
                              name, x->dims[i], d->lo, d->hi);
    }
    snprintf(x->r->evaluator, sizeof x->r->evaluator, "replay of %s", h->evaluator);
    x->r->measured = h->measured;
    snprintf(x->r->note, sizeof x->r->note, "--replay-measurements");
    return LM_OK;
}

int sr_search_run(const hl_graph *g, const sr_options *o, sr_report *rep, lm_err *err)
{
    memset(rep, 0, sizeof *rep);
    rep->best_ms = rep->first_ms = rep->reference_ms = NAN;
    rep->best_modelled_ms = rep->reference_modelled_ms = NAN;
    snprintf(rep->reference_status, sizeof rep->reference_status, "not run");
    if (!g || !o || !o->rules)
        return lm_err_set(err, LM_EARG, NULL, "sr_search_run: no graph or no rules");
    if (o->evaluator == SR_EVAL_REPLAY && !o->replay_path && !o->ev)
        return lm_err_set(err, LM_EARG, NULL, "sr_search_run: a replay needs the log's path");
    if (o->limit > SR_MAX_LIMIT || o->max_draws > (1000 + 200 * SR_MAX_LIMIT) * SR_MAX_SMALL ||
        o->proposals > SR_MAX_SMALL || o->max_mutations > SR_MAX_SMALL ||
        o->restart_after > SR_MAX_SMALL || !(o->time_limit_s >= 0) ||
        o->time_limit_s > SR_MAX_FACTOR)
        return lm_err_set(err, LM_EARG, NULL,
                          "sr_search_run: a count out of range (limit at most %llu; proposals, "
                          "mutations and restart-after at most %d; time limit 0 to %g s)",
                          (unsigned long long)SR_MAX_LIMIT, SR_MAX_SMALL, SR_MAX_FACTOR);
    srch x = {.g = g, .o = *o, .r = rep, .err = err, .pr = o->progress};
    x.t0 = lm_now_s();
    x.nd = hl_graph_dim_count(g);
    x.dims = calloc(x.nd ? x.nd : 1, sizeof *x.dims);
    if (!x.dims) return lm_err_set(err, LM_ENOMEM, NULL, "search: out of memory");
    for (uint32_t i = 0; i < x.nd; i++)
        x.dims[i] = o->dims ? o->dims[i] : hl_graph_dim_at(g, i)->profile;
    int rc = LM_OK;
    if (o->evaluator == SR_EVAL_REPLAY && !o->ev) {
        sr_log_header h;
        x.own_ev = sr_replay_new(o->replay_path, &h, err);
        rc = x.own_ev ? apply_header(&x, &h) : err->code;
    }
    if (x.o.keep_best < 1) x.o.keep_best = 1;
    if (x.o.keep_best > 64) x.o.keep_best = 64;
    x.deadline = x.o.time_limit_s > 0 ? x.t0 + x.o.time_limit_s : 0;
    rep->seed = x.o.seed;
    rep->limit = x.o.limit;
    lm_pcg_seed(&x.rng, x.o.seed, SR_STREAM);
    if (!rc) rc = saturate(&x);
    if (!rc) rc = open_evaluator(&x);
    if (!rc) rc = open_log(&x);
    if (!rc) {
        if (!x.o.max_draws) x.o.max_draws = 1000 + 200 * x.o.limit;
        log_header(&x);
        rc = reference(&x);
    }
    if (!rc) rc = search_loop(&x);
    if (!rc) rc = check_first_and_winner(&x);
    if (!rc) rc = winner(&x);
    if (x.ev && x.ev == x.own_ev && o->evaluator == SR_EVAL_REPLAY)
        rep->replay_diverged = sr_replay_diverged(x.ev);
    if (x.log) {
        json_t *end = json_pack("{s:s, s:I, s:I, s:o, s:s, s:s}", "type", "end", "evaluated",
                                (json_int_t)rep->evaluated, "ok", (json_int_t)rep->ok, "best_ms",
                                jnum(rep->best_ms), "genome", rep->best_genome, "fingerprint",
                                rep->best_fingerprint);
        log_line(&x, end);
    }
    if (o->out_dir && (rc == LM_OK || rep->evaluated)) {
        double ts = lm_now_s();
        lm_err re = {0};
        const char *gname = o->graph_path ? o->graph_path : "-";
        int rrc = sr_save_report(o->out_dir, rep, gname, x.curve, x.n_curve, &re);
        rep->t.save += lm_now_s() - ts;
        if (rrc && !rc) {
            lm_err_copy(err, &re);
            rc = rrc;
        }
    }
    teardown(&x);
    rep->t.total = lm_now_s() - x.t0;
    return rc;
}

/* ==================================================================================
 * The summary
 * ================================================================================== */

void sr_report_fprint(const sr_report *r, FILE *f)
{
    char a[32], b[32];
    fprintf(f, "evaluator: %s (%s; %s)\n", r->evaluator,
            r->measured ? "measured" : "modelled, not measured", r->note);
    fprintf(f, "  %-22s %12s %12s\n", "", r->measured ? "time" : "modelled", "modelled");
    fprintf(f, "  %-22s %12s %12s   #%" PRIu64 ", genome %s, %u kernels + %u cuBLASLt\n", "winner",
            sr_fmt_ms(r->best_ms, a, sizeof a), sr_fmt_ms(r->best_modelled_ms, b, sizeof b),
            r->best_n, r->best_genome[0] ? r->best_genome : "-", r->winner_kernels, r->winner_blas);
    fprintf(f, "  %-22s %12s\n", "first candidate", sr_fmt_ms(r->first_ms, a, sizeof a));
    fprintf(f, "  %-22s %12s %12s   %s%s%s\n", "reference lowering",
            sr_fmt_ms(r->reference_ms, a, sizeof a),
            sr_fmt_ms(r->reference_modelled_ms, b, sizeof b), r->reference_status,
            r->reference_why[0] ? ": " : "", r->reference_why);
    if (!isnan(r->best_ms) && !isnan(r->reference_ms) && r->best_ms > 0)
        fprintf(f, "  winner vs reference lowering: %.2fx faster\n", r->reference_ms / r->best_ms);
    fprintf(f,
            "candidates: %" PRIu64 " evaluated of the limit %" PRIu64 ", %" PRIu64 " with a time",
            r->evaluated, r->limit, r->ok);
    for (uint32_t i = 1; i < SR_REASONS; i++)
        if (r->by_status[i]) fprintf(f, ", %" PRIu64 " %s", r->by_status[i], sr_reason_name(i));
    fprintf(f,
            "\n  not evaluated: %" PRIu64 " LLIR build failures, %" PRIu64
            " refused by codegen, %" PRIu64 " screened out and %" PRIu64
            " declined by the model, %" PRIu64 " repeated genomes, %" PRIu64
            " repeated programs; %" PRIu64 " draws, %" PRIu64 " restarts%s%s%s\n",
            r->build_failed, r->codegen_failed, r->screened, r->declined, r->dup_genomes,
            r->dup_programs, r->draws,
            r->restarts, r->time_up ? "; stopped by the time limit" : "",
            r->exhausted ? "; the space looks exhausted" : "",
            r->replay_diverged ? "; THE REPLAY DIVERGED from its log" : "");
    fprintf(f, "  checked against the reference runtime: first %s, winner %s\n",
            r->first_checked ? "yes" : "no", r->winner_checked ? "yes" : "no");
    fprintf(f, "space: %" PRIu64 " rows, %u classes, %u decisions, log2 programs %.1f\n", r->rows,
            r->classes, r->decisions, r->log2_programs);
    const sr_phase_times *t = &r->t;
    double tot = t->total > 0 ? t->total : 1;
    fprintf(f,
            "time: total %.3f s: saturate %.3f (%.0f%%), space %.3f (%.0f%%), search %.3f "
            "(%.0f%%), codegen %.3f (%.0f%%), compile %.3f, measure %.3f (%.0f%%), save %.3f "
            "(%.0f%%)\n",
            t->total, t->saturate, 100 * t->saturate / tot, t->space, 100 * t->space / tot,
            t->search, 100 * t->search / tot, t->codegen, 100 * t->codegen / tot, t->compile,
            t->measure, 100 * t->measure / tot, t->save, 100 * t->save / tot);
}

char *sr_report_json(const sr_report *r)
{
    json_t *by = json_object();
    for (uint32_t i = 0; i < SR_REASONS; i++)
        json_object_set_new(by, sr_reason_name(i), json_integer((json_int_t)r->by_status[i]));
    json_t *t = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "saturate",
                          json_real(r->t.saturate), "space", json_real(r->t.space), "search",
                          json_real(r->t.search), "codegen", json_real(r->t.codegen), "compile",
                          json_real(r->t.compile), "measure", json_real(r->t.measure), "save",
                          json_real(r->t.save), "total", json_real(r->t.total));
    json_t *kr = json_array();
    for (uint32_t i = 0; i < r->n_kernel_rows; i++) {
        const sr_kernel_row *k = &r->kernel_rows[i];
        json_array_append_new(kr, json_pack("{s:s, s:i, s:s, s:[I,I,I], s:o, s:o, s:o}", "template",
                                            k->template_name, "llir_node", (int)k->llir_node, "op",
                                            k->llir_op, "grid", (json_int_t)k->grid[0],
                                            (json_int_t)k->grid[1], (json_int_t)k->grid[2], "bytes",
                                            json_real(k->bytes), "flops", json_real(k->flops),
                                            "modelled_us", json_real(k->modelled_us)));
    }
    json_t *o = json_object();
    json_object_set_new(o, "evaluator", json_string(r->evaluator));
    json_object_set_new(o, "measured", json_boolean(r->measured));
    json_object_set_new(o, "note", json_string(r->note));
    json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(o, "limit", json_integer((json_int_t)r->limit));
    json_object_set_new(o, "best_ms", jnum(r->best_ms));
    json_object_set_new(o, "best_modelled_ms", jnum(r->best_modelled_ms));
    json_object_set_new(o, "best_n", json_integer((json_int_t)r->best_n));
    json_object_set_new(o, "best_genome", json_string(r->best_genome));
    json_object_set_new(o, "best_fingerprint", json_string(r->best_fingerprint));
    json_object_set_new(o, "first_ms", jnum(r->first_ms));
    json_object_set_new(o, "reference_ms", jnum(r->reference_ms));
    json_object_set_new(o, "reference_modelled_ms", jnum(r->reference_modelled_ms));
    json_object_set_new(o, "reference_status", json_string(r->reference_status));
    json_object_set_new(o, "evaluated", json_integer((json_int_t)r->evaluated));
    json_object_set_new(o, "ok", json_integer((json_int_t)r->ok));
    json_object_set_new(o, "by_status", by);
    json_object_set_new(o, "build_failed", json_integer((json_int_t)r->build_failed));
    json_object_set_new(o, "codegen_failed", json_integer((json_int_t)r->codegen_failed));
    json_object_set_new(o, "dup_genomes", json_integer((json_int_t)r->dup_genomes));
    json_object_set_new(o, "dup_programs", json_integer((json_int_t)r->dup_programs));
    json_object_set_new(o, "screened", json_integer((json_int_t)r->screened));
    json_object_set_new(o, "declined", json_integer((json_int_t)r->declined));
    json_object_set_new(o, "draws", json_integer((json_int_t)r->draws));
    json_object_set_new(o, "restarts", json_integer((json_int_t)r->restarts));
    json_object_set_new(o, "time_up", json_boolean(r->time_up));
    json_object_set_new(o, "exhausted", json_boolean(r->exhausted));
    json_object_set_new(o, "replay_diverged", json_boolean(r->replay_diverged));
    json_object_set_new(o, "first_checked", json_boolean(r->first_checked));
    json_object_set_new(o, "winner_checked", json_boolean(r->winner_checked));
    json_object_set_new(o, "rows", json_integer((json_int_t)r->rows));
    json_object_set_new(o, "classes", json_integer(r->classes));
    json_object_set_new(o, "decisions", json_integer(r->decisions));
    json_object_set_new(o, "log2_programs", json_real(r->log2_programs));
    json_object_set_new(o, "egraph_fingerprint", json_string(r->egraph_fingerprint));
    json_object_set_new(o, "winner_kernels", json_integer(r->winner_kernels));
    json_object_set_new(o, "winner_blas", json_integer(r->winner_blas));
    json_object_set_new(o, "kernels", kr);
    json_object_set_new(o, "seconds", t);
    char *s = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}
