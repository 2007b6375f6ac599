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
        return lm_err_set(err, LM_EARG, NULL, "replay: more candidates in flight than slots");
    ll_fingerprint fp = ll_graph_fingerprint(c->llir);
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

static int read_header(json_t *o, sr_log_header *h, const char *path, lm_err *err)
{
    const char *fmt = json_string_value(json_object_get(o, "format"));
    if (!fmt || strcmp(fmt, "luminal-search-log") != 0 ||
        json_integer_value(json_object_get(o, "version")) != 1)
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s:1: not a search log of this version (format luminal-search-log, "
                          "version 1)",
                          path);
    const char *ev = json_string_value(json_object_get(o, "evaluator"));
    snprintf(h->evaluator, sizeof h->evaluator, "%s", ev ? ev : "?");
    h->measured = json_is_true(json_object_get(o, "measured"));
    h->slots = (uint32_t)json_integer_value(json_object_get(o, "slots"));
    h->seed = (uint64_t)json_integer_value(json_object_get(o, "seed"));
    h->limit = (uint64_t)json_integer_value(json_object_get(o, "limit"));
    h->max_draws = (uint64_t)json_integer_value(json_object_get(o, "max_draws"));
    h->keep_best = (uint32_t)json_integer_value(json_object_get(o, "keep_best"));
    h->max_mutations = (uint32_t)json_integer_value(json_object_get(o, "max_mutations"));
    h->restart_after = (uint32_t)json_integer_value(json_object_get(o, "restart_after"));
    h->cutoff_factor = num(json_object_get(o, "cutoff_factor"));
    h->fused_start = json_is_true(json_object_get(o, "fused_start"));
    h->screen_factor = num(json_object_get(o, "screen_factor"));
    if (isnan(h->screen_factor)) h->screen_factor = 0; /* written before the screen existed */
    json_t *pj = json_object_get(o, "proposals");
    h->proposals = json_is_integer(pj) ? (uint32_t)json_integer_value(pj) : 1;
    if (h->slots < 1 || isnan(h->cutoff_factor))
        return lm_err_set(err, LM_EPARSE, NULL, "%s:1: the header lacks slots or cutoff_factor",
                          path);
    json_t *dims = json_object_get(o, "dims");
    const char *k;
    json_t *v;
    json_object_foreach(dims, k, v)
    {
        if (h->n_dims == 32 || strlen(k) >= sizeof h->dim_names[0])
            return lm_err_set(err, LM_EPARSE, NULL, "%s:1: too many dims or a name too long", path);
        snprintf(h->dim_names[h->n_dims], sizeof h->dim_names[0], "%s", k);
        h->dims[h->n_dims++] = json_integer_value(v);
    }
    return LM_OK;
}

sr_evaluator *sr_replay_new(const char *path, sr_log_header *h, lm_err *err)
{
    memset(h, 0, sizeof *h);
    FILE *f = fopen(path, "r");
    if (!f) {
        lm_err_set(err, LM_EIO, NULL, "replay: cannot read '%s'", path);
        return NULL;
    }
    replay_ev *r = calloc(1, sizeof *r);
    if (!r) {
        fclose(f);
        lm_err_set(err, LM_ENOMEM, NULL, "replay: out of memory");
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0, cap_e = 0;
    ssize_t len;
    uint64_t lineno = 0;
    bool have_header = false;
    int rc = LM_OK;
    while (!rc && (len = getline(&line, &cap, f)) > 0) {
        lineno++;
        json_error_t je;
        json_t *o = json_loadb(line, (size_t)len, 0, &je);
        if (!o) {
            rc = lm_err_set(err, LM_EPARSE, NULL, "%s:%" PRIu64 ": %s", path, lineno, je.text);
            break;
        }
        const char *type = json_string_value(json_object_get(o, "type"));
        if (!have_header) {
            if (!type || strcmp(type, "header") != 0)
                rc = lm_err_set(err, LM_EPARSE, NULL,
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
                rc = lm_err_set(err, LM_EPARSE, NULL,
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
                    entry *ne = realloc(r->e, cap_e * sizeof *ne);
                    if (!ne) {
                        rc = lm_err_set(err, LM_ENOMEM, NULL, "replay: out of memory");
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
    free(line);
    fclose(f);
    if (!rc && !have_header) rc = lm_err_set(err, LM_EPARSE, NULL, "%s: an empty log", path);
    if (!rc) {
        r->slots = h->slots;
        r->fl = calloc(r->slots, sizeof *r->fl);
        if (!r->fl) rc = lm_err_set(err, LM_ENOMEM, NULL, "replay: out of memory");
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
