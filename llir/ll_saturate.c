/* ll_saturate.c - the saturation driver: the rules text, the registry check, then the
 * phases the rules give as facts of (relation phase (i64 String String)), run in order.
 *
 * Limits. The engine stops a run at its own node, memory and time limits (eg_options,
 * fixed when the engine is made: ll_sat_engine_options fills them); the driver checks
 * the whole saturation's totals after every phase and the time left before each, and
 * turns any stop at a limit into LM_ELIMIT naming the phase. The engine's time limit
 * bounds one eg_run_schedule call, not what is left of the whole budget (the engine has
 * no setter for it), so a saturation can overrun its time limit by at most one phase's
 * worth of the whole limit.
 */
#include "ll_int.h"

#include <inttypes.h>
#include <stdio.h>

void ll_sat_engine_options(const ll_sat_opts *o, eg_options *eo)
{
    if (!o || !eo) return;
    eo->node_limit = o->node_limit;
    eo->mem_limit = o->mem_limit;
    eo->time_limit_s = o->time_limit_s;
}

static const char *stop_name(eg_stop_reason r)
{
    switch (r) {
    case EG_STOP_SATURATED:
        return "saturated";
    case EG_STOP_ITERATIONS:
        return "iterations done";
    case EG_STOP_UNTIL:
        return "until held";
    case EG_STOP_NODE_LIMIT:
        return "node limit";
    case EG_STOP_ITER_LIMIT:
        return "iteration limit";
    case EG_STOP_TIME_LIMIT:
        return "time limit";
    case EG_STOP_MEM_LIMIT:
        return "memory limit";
    }
    return "?";
}

typedef struct phase_row {
    int64_t order;
    const char *name, *sched; /* borrowed from the engine */
} phase_row;

static int row_cmp(const void *a, const void *b)
{
    const phase_row *x = a, *y = b;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Reads the phase relation into rows[0..*n), sorted by order. */
static int read_phases(eg_engine *e, phase_row *rows, uint32_t *n, lm_err *err)
{
    lm_loc loc = {.node = "phase", .node_id = LM_NONE};
    *n = 0;
    int t = eg_table_lookup(e, "phase");
    if (t < 0)
        return ll__fail(err, LM_EVERIFY, &loc,
                        "the rules give no schedule: declare (relation phase (i64 String "
                        "String)) and add (phase ORDER \"name\" \"schedule\") facts");
    if (eg_table_arity(e, t) != 3)
        return ll__fail(err, LM_EVERIFY, &loc,
                        "phase has %zu columns; the schedule is (relation phase (i64 String "
                        "String)): order, name, schedule text",
                        eg_table_arity(e, t));
    static const char *const want[3] = {"i64", "String", "String"};
    for (size_t c = 0; c < 3; c++) {
        const char *got = eg_sort_name(e, eg_table_column_sort(e, t, c));
        if (!got || strcmp(got, want[c]) != 0)
            return ll__fail(err, LM_EVERIFY, &loc,
                            "phase's column %zu has sort %s; the schedule is (relation phase "
                            "(i64 String String)): order, name, schedule text",
                            c, got ? got : "?");
    }
    size_t cur = 0;
    eg_value cols[4];
    while (ll__eg_next_row(e, t, &cur, cols)) {
        if (*n == LL_MAX_PHASES)
            return ll__fail(err, LM_EVERIFY, &loc, "more than %d phases", LL_MAX_PHASES);
        phase_row *r = &rows[(*n)++];
        r->order = eg_value_as_i64(cols[0]);
        r->name = eg_value_as_string(e, cols[1]);
        r->sched = eg_value_as_string(e, cols[2]);
        if (!r->name || !r->sched)
            return ll__fail(err, LM_EVERIFY, &loc,
                            "phase row %u does not hold strings; the schedule is (relation "
                            "phase (i64 String String))",
                            *n - 1);
        if (strlen(r->name) >= LL_PHASE_NAME)
            return ll__fail(err, LM_EVERIFY, &loc, "phase name \"%.40s...\" is longer than %d bytes",
                            r->name, LL_PHASE_NAME - 1);
    }
    if (*n == 0)
        return ll__fail(err, LM_EVERIFY, &loc,
                        "the rules declare the phase relation but give no (phase ...) fact");
    qsort(rows, *n, sizeof *rows, row_cmp);
    for (uint32_t i = 1; i < *n; i++)
        if (rows[i].order == rows[i - 1].order)
            return ll__fail(err, LM_EVERIFY, &loc,
                            "phases \"%s\" and \"%s\" have the same order %" PRId64
                            "; give each its own",
                            rows[i - 1].name, rows[i].name, rows[i].order);
    return LM_OK;
}

int ll_saturate(eg_engine *e, const char *rules, const char *rules_name, const ll_sat_opts *o,
                ll_sat_report *rep, lm_err *err)
{
    ll_sat_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    if (!e || !rules) return ll__fail(err, LM_EARG, NULL, "ll_saturate: no engine or no rules");
    ll_sat_opts none = {0};
    if (!o) o = &none;
    double t0 = lm_now_s();
    double engine_limit = eg_engine_time_limit(e);
    int rc = ll__eg_run_text(e, rules, rules_name ? rules_name : "<rules>", err);
    if (!rc) rc = ll_registry_check(e, err);
    phase_row rows[LL_MAX_PHASES];
    uint32_t n = 0;
    if (!rc) rc = read_phases(e, rows, &n, err);
    for (uint32_t i = 0; i < n && !rc; i++) {
        char what[LL_PHASE_NAME + 48];
        snprintf(what, sizeof what, "phase '%s' (%u of %u)", rows[i].name, i + 1, n);
        lm_loc loc = {.node = rows[i].name, .node_id = i};
        double spent = lm_now_s() - t0;
        if (o->time_limit_s > 0 && spent >= o->time_limit_s) {
            rc = ll__fail(err, LM_ELIMIT, &loc,
                          "%s did not start: the saturation's time limit (%.3g s) is spent after "
                          "%.3g s",
                          what, o->time_limit_s, spent);
            break;
        }
        /* each phase's run gets what is left of the saturation's budget, so one phase
         * cannot spend the whole of it again (the engine checks its limit inside joins) */
        if (o->time_limit_s > 0) eg_engine_set_time_limit(e, o->time_limit_s - spent);
        ll_phase_report *p = &rep->phase[rep->n_phases++];
        memcpy(p->name, rows[i].name, strlen(rows[i].name) + 1);
        p->order = rows[i].order;
        double ts = lm_now_s();
        eg_stop_reason why = EG_STOP_SATURATED;
        rc = ll__eg_run_schedule(e, rows[i].sched, what, &why, err);
        p->seconds = lm_now_s() - ts;
        p->stop = why;
        p->rows = eg_node_count(e);
        p->bytes = eg_mem_bytes(e);
        p->peak = eg_mem_peak(e);
        if (rc) break;
        spent = lm_now_s() - t0;
        const char *limit = NULL;
        if (why == EG_STOP_NODE_LIMIT || why == EG_STOP_MEM_LIMIT || why == EG_STOP_TIME_LIMIT ||
            why == EG_STOP_ITER_LIMIT)
            limit = stop_name(why);
        else if (o->node_limit && p->rows >= o->node_limit)
            limit = "node limit";
        else if (o->mem_limit && p->bytes >= o->mem_limit)
            limit = "memory limit";
        else if (o->time_limit_s > 0 && spent > o->time_limit_s)
            limit = "time limit";
        if (limit)
            rc = ll__fail(err, LM_ELIMIT, &loc,
                          "%s reached the %s (node limit %" PRIu64 ", memory limit %" PRIu64
                          " bytes, time limit %.3g s): %" PRIu64 " rows, %" PRIu64
                          " bytes, %.3f s in the phase, %.3f s in all; raise the limit or "
                          "bound the phase's rules",
                          what, limit, o->node_limit, o->mem_limit, o->time_limit_s, p->rows,
                          p->bytes, p->seconds, spent);
    }
    if (o->time_limit_s > 0) eg_engine_set_time_limit(e, engine_limit);
    rep->seconds = lm_now_s() - t0;
    return rc;
}

void ll_sat_report_fprint(const ll_sat_report *rep, FILE *f)
{
    for (uint32_t i = 0; i < rep->n_phases; i++) {
        const ll_phase_report *p = &rep->phase[i];
        fprintf(f,
                "phase %u %-12s %-16s %9.4f s %10" PRIu64 " rows %12" PRIu64 " bytes %12" PRIu64
                " peak\n",
                i, p->name, stop_name(p->stop), p->seconds, p->rows, p->bytes, p->peak);
    }
    fprintf(f, "saturation: %u phases, %.3f s\n", rep->n_phases, rep->seconds);
}
