/* sr_setup.c - what the search needs before its first candidate (sr_state.h): the
 * graph encoded and saturated with the rules, the space read from the e-graph and
 * fingerprinted, the evaluator opened (the GPU workers, the cost model, a replay or the
 * caller's), and a replayed log's header applied to the options. */
#include "sr_state.h"

#include "session.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef LUMINAL_HAVE_SR_GPU
#include "sr_gpu.h"
#endif

/* The space, its statistics and the e-graph's fingerprint into the report; the
 * mutation's scratch arrays. */
static int use_space(srch *x, const cs_report *rep)
{
    double t = lm_now_s();
    x->r->classes = rep->stats.classes;
    x->r->decisions = rep->stats.decisions;
    x->r->log2_programs = rep->stats.log2_programs;
    x->ns = ll_space_class_count(x->s);
    x->order = sr__alloc(x->ns ? x->ns : 1, sizeof *x->order);
    x->mark = sr__alloc(x->ns ? x->ns : 1, 1);
    if (!x->order || !x->mark) return sr__oom(x->err, "search");
    /* hashed from the space's arrays, no serialization written */
    int rc = ll_space_fingerprint(x->s, x->r->egraph_fingerprint, x->err);
    x->r->t.space += lm_now_s() - t;
    if (rc) return rc;
    sr__progress(x, "space: %u classes, %u decisions, log2 programs %.1f (%.3f s)",
                 rep->stats.classes, rep->stats.decisions, rep->stats.log2_programs,
                 x->r->t.space);
    return LM_OK;
}

int sr__saturate(srch *x)
{
    if (x->o.session) { /* the caller's front half */
        const cs_report *rep = cs_session_report(x->o.session);
        x->s = cs_session_space(x->o.session);
        if (!x->s || cs_session_graph(x->o.session) != x->g)
            return sr__fail(x->err, LM_EARG, NULL,
                            "search: the given compile session %s",
                            x->s ? "is of another graph" : "has no space (no_space)");
        x->r->rows = rep->rows;
        sr__progress(x, "saturate: %" PRIu64 " rows (the caller's compile session)",
                     x->r->rows);
        return use_space(x, rep);
    }
    /* --time-limit covers the front half: its deadline bounds saturation (before each
     * phase and inside each) and the space build (the session's deadline) */
    if (isfinite(sr__time_left(x)) && sr__time_left(x) <= 0) {
        x->r->time_up = true;
        return sr__fail(x->err, LM_ELIMIT, NULL,
                        "search: the time limit (%g s) passed before saturation began",
                        x->o.time_limit_s);
    }
    cs_report rep;
    cs_options co = {.rules_text = x->o.rules,
                     .rules_name = x->o.rules_name,
                     .deadline_s = x->deadline,
                     .mem_limit = x->o.sat_mem_limit,
                     .report = &rep};
    memset(&rep, 0, sizeof rep);
    x->cs = cs_session_new(x->g, &co, x->err);
    x->r->t.saturate = rep.encode_seconds + rep.sat_seconds;
    x->r->t.space = rep.space_seconds;
    x->r->rows = rep.rows;
    if (!x->cs) {
        if (rep.time_up) {
            x->r->time_up = true;
            lm_err_prefix(x->err, "search: --time-limit %g s passed during %s (%.3f s)",
                          x->o.time_limit_s,
                          rep.stage == CS_STAGE_SPACE ? "the space build" : "saturation",
                          x->r->t.saturate + x->r->t.space);
        }
        return x->err->code ? x->err->code : sr__fail(x->err, LM_ERUNTIME, NULL, "search: no session");
    }
    sr__progress(x, "saturate: %" PRIu64 " rows after %u phases (%.3f s)", x->r->rows,
                 rep.sat.n_phases, x->r->t.saturate);
    x->s = cs_session_space(x->cs);
    return use_space(x, &rep);
}

int sr__open_evaluator(srch *x)
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
            int n = sr_gpu_count(&pe);
            k = n > 0 ? SR_EVAL_GPU : SR_EVAL_COST_MODEL;
            if (n > 0)
                snprintf(x->r->note, sizeof x->r->note, "%d GPU%s visible", n, n == 1 ? "" : "s");
            else
                snprintf(x->r->note, sizeof x->r->note, "no GPU visible%s%.100s",
                         pe.code ? ": " : "", pe.code ? pe.msg : "");
        }
        if (k == SR_EVAL_GPU) {
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
            return sr__fail(x->err, LM_EUNSUPPORTED, NULL,
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
    x->fl = sr__zalloc(x->slots, sizeof *x->fl);
    if (!x->fl) return sr__oom(x->err, "search");
    sr__progress(x, "evaluator: %s, %u slot%s (%s; %s)", x->r->evaluator, x->slots,
             x->slots == 1 ? "" : "s", x->r->measured ? "measured" : "modelled, not measured",
             x->r->note);
    return LM_OK;
}

/* The replay's header replaces the search's parameters and dims. */
int sr__apply_header(srch *x, const sr_log_header *h)
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
            return sr__fail(x->err, LM_EARG, NULL,
                              "search: the replayed log has no value of dim '%s': is it the log "
                              "of another graph?",
                              name);
        /* as --dim NAME=V is checked: within the graph's range */
        const hl_dim *d = hl_graph_dim_at(x->g, i);
        if (x->dims[i] < d->lo || x->dims[i] > d->hi)
            return sr__fail(x->err, LM_EARG, NULL,
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
