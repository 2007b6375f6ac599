/* sr_replay.c - the replay evaluator: a previous search's results, from its log.
 *
 * The log (search.jsonl, docs/search.md "The log") holds a header (the search's
 * parameters, dims and slots) and one line per candidate; an evaluated candidate's line
 * has its LLIR fingerprint, whether it was checked against the reference, its result and
 * `done`, the order its result arrived in. Given the same graph, rules and parameters
 * the search makes the same candidates as long as it gets the same results in the same
 * order, so this evaluator answers each candidate with the result logged for its
 * fingerprint and check flag (and whether it is the reference lowering), and, of the candidates in
 * flight, always finishes the one the log saw finish first. A candidate the log does not hold
 * (another graph, other rules, a log cut short) is SR_ERROR and the replay is marked as diverged.
 */
#include "sr_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    uint64_t lo, hi; /* fingerprint */
    bool check;
    bool reference; /* the reference lowering (the search hands it over as id 0) */
    bool used;      /* answered already */
    uint64_t done;
    sr_result res; /* id filled at submission */
} entry;

typedef struct pending {
    uint64_t id;
    int64_t entry; /* -1: not in the log */
} pending;

typedef struct replay_ev {
    sr_evaluator base;
    sr_evaluator_ops ops;
    char name[48];
    entry *e;
    size_t n;
    pending *fl;
    uint32_t slots, inflight;
    bool diverged;
} replay_ev;

static uint32_t rp_slots(sr_evaluator *ev)
{
    return ((replay_ev *)ev)->slots;
}

static int parse_fp(const char *s, uint64_t *lo, uint64_t *hi)
{
    if (!s || strlen(s) != 32) return -1;
    char a[17], b[17];
    memcpy(a, s, 16), a[16] = 0;
    memcpy(b, s + 16, 16), b[16] = 0;
    char *end;
    *hi = strtoull(a, &end, 16);
    if (*end) return -1;
    *lo = strtoull(b, &end, 16);
    return *end ? -1 : 0;
}

static int rp_submit(sr_evaluator *ev, const sr_candidate *c, lm_err *err)
{
    replay_ev *r = (replay_ev *)ev;
    if (r->inflight >= r->slots)
        return sr__fail(err, LM_EARG, NULL, "replay: more candidates in flight than slots");
    ll_fingerprint fp;
    if (sr__fingerprint(c->llir, &fp, err, "replay")) return err->code;
    int64_t at = -1;
    for (size_t i = 0; i < r->n && at < 0; i++)
        if (!r->e[i].used && r->e[i].lo == fp.lo && r->e[i].hi == fp.hi &&
            r->e[i].check == c->check && r->e[i].reference == (c->id == 0))
            at = (int64_t)i;
    if (at < 0)
        r->diverged = true;
    else
        r->e[at].used = true;
    r->fl[r->inflight++] = (pending){c->id, at};
    return LM_OK;
}

static int rp_next(sr_evaluator *ev, sr_result *out, lm_err *err)
{
    (void)err;
    replay_ev *r = (replay_ev *)ev;
    if (!r->inflight) return LM_EARG;
    /* the one the log saw finish first; those it lacks last, in submission order */
    uint32_t best = 0;
    for (uint32_t i = 1; i < r->inflight; i++) {
        int64_t a = r->fl[i].entry, b = r->fl[best].entry;
        if (a >= 0 && (b < 0 || r->e[a].done < r->e[b].done)) best = i;
    }
    pending p = r->fl[best];
    memmove(&r->fl[best], &r->fl[best + 1], (r->inflight - best - 1) * sizeof *r->fl);
    r->inflight--;
    if (p.entry < 0) {
        memset(out, 0, sizeof *out);
        out->status = SR_ERROR;
        out->gpu = -1;
        snprintf(out->why, sizeof out->why, "not in the replayed log");
    } else {
        *out = r->e[p.entry].res;
    }
    out->id = p.id;
    return LM_OK;
}

static void rp_free(sr_evaluator *ev)
{
    replay_ev *r = (replay_ev *)ev;
    if (!r) return;
    free(r->e);
    free(r->fl);
    free(r);
}

bool sr_replay_diverged(const sr_evaluator *ev)
{
    return ((const replay_ev *)ev)->diverged;
}

static sr_status status_of(const char *name)
{
    for (int i = 0; i < SR_STATUS_COUNT; i++)
        if (name && strcmp(sr_status_name((sr_status)i), name) == 0) return (sr_status)i;
    return SR_STATUS_COUNT;
}

static double num(json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* An integer field of the header in [lo, hi]; missing is an error unless dflt_ok (then
 * *out = dflt). A log is input: every field is checked as the command line checks the
 * option it records. */
static int hdr_int(json_t *o, const char *key, int64_t lo, int64_t hi, bool dflt_ok, int64_t dflt,
                   int64_t *out, const char *path, lm_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v && dflt_ok) {
        *out = dflt;
        return LM_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return sr__fail(err, LM_EPARSE, NULL,
                          "%s:1: the header's \"%s\" must be an integer from %" PRId64
                          " to %" PRId64,
                          path, key, lo, hi);
    *out = json_integer_value(v);
    return LM_OK;
}

static int hdr_num(json_t *o, const char *key, double lo, double hi, bool dflt_ok, double dflt,
                   double *out, const char *path, lm_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v && dflt_ok) {
        *out = dflt;
        return LM_OK;
    }
    double x = num(v);
    if (!(x >= lo && x <= hi))
        return sr__fail(err, LM_EPARSE, NULL,
                          "%s:1: the header's \"%s\" must be a number from %g to %g", path, key,
                          lo, hi);
    *out = x;
    return LM_OK;
}

static int read_header(json_t *o, sr_log_header *h, const char *path, lm_err *err)
{
    const char *fmt = json_string_value(json_object_get(o, "format"));
    if (!fmt || strcmp(fmt, "luminal-search-log") != 0 ||
        json_integer_value(json_object_get(o, "version")) != 1)
        return sr__fail(err, LM_EPARSE, NULL,
                          "%s:1: not a search log of this version (format luminal-search-log, "
                          "version 1)",
                          path);
    const char *ev = json_string_value(json_object_get(o, "evaluator"));
    snprintf(h->evaluator, sizeof h->evaluator, "%s", ev ? ev : "?");
    h->measured = json_is_true(json_object_get(o, "measured"));
    int64_t slots = 0, seed = 0, limit = 0, draws = 0, keep = 0, mut = 0, restart = 0, prop = 0;
    const int64_t small = (int64_t)SR_MAX_SMALL, lim = (int64_t)SR_MAX_LIMIT;
    if (hdr_int(o, "slots", 1, small, false, 0, &slots, path, err) ||
        hdr_int(o, "seed", 0, INT64_MAX, false, 0, &seed, path, err) ||
        hdr_int(o, "limit", 1, lim, false, 0, &limit, path, err) ||
        hdr_int(o, "max_draws", 0, (1000 + 200 * lim) * small, false, 0, &draws, path, err) ||
        hdr_int(o, "keep_best", 1, small, false, 0, &keep, path, err) ||
        hdr_int(o, "max_mutations", 1, small, false, 0, &mut, path, err) ||
        hdr_int(o, "restart_after", 0, small, false, 0, &restart, path, err) ||
        /* 1 in a log that predates the proposals */
        hdr_int(o, "proposals", 1, small, true, 1, &prop, path, err) ||
        hdr_num(o, "cutoff_factor", 0, SR_MAX_FACTOR, false, 0, &h->cutoff_factor, path, err) ||
        /* 0 in a log that predates the screen */
        hdr_num(o, "screen_factor", 0, SR_MAX_FACTOR, true, 0, &h->screen_factor, path, err))
        return err->code;
    h->slots = (uint32_t)slots;
    h->seed = (uint64_t)seed;
    h->limit = (uint64_t)limit;
    h->max_draws = (uint64_t)draws;
    h->keep_best = (uint32_t)keep;
    h->max_mutations = (uint32_t)mut;
    h->restart_after = (uint32_t)restart;
    h->proposals = (uint32_t)prop;
    h->fused_start = json_is_true(json_object_get(o, "fused_start"));
    json_t *dims = json_object_get(o, "dims");
    if (dims && !json_is_object(dims))
        return sr__fail(err, LM_EPARSE, NULL, "%s:1: the header's \"dims\" is not an object",
                          path);
    const char *k;
    json_t *v;
    json_object_foreach(dims, k, v)
    {
        if (h->n_dims == 32 || strlen(k) >= sizeof h->dim_names[0])
            return sr__fail(err, LM_EPARSE, NULL, "%s:1: too many dims or a name too long", path);
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return sr__fail(err, LM_EPARSE, NULL,
                              "%s:1: the header's dim '%s' is not a positive integer", path, k);
        snprintf(h->dim_names[h->n_dims], sizeof h->dim_names[0], "%s", k);
        h->dims[h->n_dims++] = json_integer_value(v);
    }
    return LM_OK;
}

sr_evaluator *sr_replay_new(const char *path, sr_log_header *h, lm_err *err)
{
    memset(h, 0, sizeof *h);
    /* the whole log, bounded, text (a NUL byte is refused with its place) */
    size_t total = 0;
    char *text = lm_read_text(path, SR_LOG_MAX_BYTES, &total, err);
    if (!text) {
        lm_err_prefix(err, "replay");
        return NULL;
    }
    replay_ev *r = sr__zalloc(1, sizeof *r);
    if (!r) {
        free(text);
        sr__oom(err, "replay");
        return NULL;
    }
    size_t cap_e = 0, len;
    uint64_t lineno = 0;
    bool have_header = false;
    int rc = LM_OK;
    for (char *line = text, *next; !rc && line < text + total; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + total - line));
        next = nl ? nl + 1 : text + total;
        len = (size_t)(next - line);
        lineno++;
        json_error_t je;
        json_t *o = json_loadb(line, (size_t)len, 0, &je);
        if (!o) {
            rc = sr__fail(err, LM_EPARSE, NULL, "%s:%" PRIu64 ": %s", path, lineno, je.text);
            break;
        }
        const char *type = json_string_value(json_object_get(o, "type"));
        if (!have_header) {
            if (!type || strcmp(type, "header") != 0)
                rc = sr__fail(err, LM_EPARSE, NULL,
                                "%s:%" PRIu64 ": the first line is not the header", path, lineno);
            else
                rc = read_header(o, h, path, err);
            have_header = true;
        } else if (type && strcmp(type, "candidate") == 0 &&
                   json_is_true(json_object_get(o, "evaluated"))) {
            entry e;
            memset(&e, 0, sizeof e);
            const char *role = json_string_value(json_object_get(o, "role"));
            sr_status st = status_of(json_string_value(json_object_get(o, "status")));
            if (parse_fp(json_string_value(json_object_get(o, "fingerprint")), &e.lo, &e.hi) ||
                st == SR_STATUS_COUNT || !role || !json_is_integer(json_object_get(o, "done"))) {
                rc = sr__fail(err, LM_EPARSE, NULL,
                                "%s:%" PRIu64 ": an evaluated candidate needs fingerprint, status, "
                                "role and done",
                                path, lineno);
            } else {
                e.check = json_is_true(json_object_get(o, "check"));
                e.reference = strcmp(role, "reference") == 0;
                e.done = (uint64_t)json_integer_value(json_object_get(o, "done"));
                e.res.status = st;
                double ms = num(json_object_get(o, "ms"));
                e.res.ms = isnan(ms) ? 0 : ms;
                e.res.compile_s = num(json_object_get(o, "compile_s"));
                if (isnan(e.res.compile_s)) e.res.compile_s = 0;
                e.res.gpu = (int)json_integer_value(json_object_get(o, "gpu"));
                e.res.trials = (uint32_t)json_integer_value(json_object_get(o, "trials"));
                e.res.checked = json_is_true(json_object_get(o, "checked"));
                const char *why = json_string_value(json_object_get(o, "why"));
                snprintf(e.res.why, sizeof e.res.why, "%s", why ? why : "");
                if (strcmp(role, "search") == 0) h->search_evaluated++;
                if (r->n == cap_e) {
                    cap_e = cap_e ? cap_e * 2 : 64;
                    entry *ne = sr__realloc(r->e, cap_e, sizeof *ne);
                    if (!ne) {
                        rc = sr__oom(err, "replay");
                        json_decref(o);
                        break;
                    }
                    r->e = ne;
                }
                r->e[r->n++] = e;
            }
        }
        json_decref(o);
    }
    free(text);
    if (!rc && !have_header) rc = sr__fail(err, LM_EPARSE, NULL, "%s: an empty log", path);
    if (!rc) {
        r->slots = h->slots;
        r->fl = sr__zalloc(r->slots, sizeof *r->fl);
        if (!r->fl) rc = sr__oom(err, "replay");
    }
    if (rc) {
        rp_free(&r->base);
        return NULL;
    }
    snprintf(r->name, sizeof r->name, "replay of %s", h->evaluator);
    r->ops = (sr_evaluator_ops){.name = r->name,
                                .measured = h->measured,
                                .slots = rp_slots,
                                .submit = rp_submit,
                                .next = rp_next,
                                .free = rp_free};
    r->base.ops = &r->ops;
    return &r->base;
}
