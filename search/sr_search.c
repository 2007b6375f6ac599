/* sr_search.c - the genetic search (search.h): sr_search_run, the generation loop, the
 * candidates in flight and their results (the other parts: sr_state.h).
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
#include "sr_state.h"

#include "session.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

double sr__time_left(const srch *x)
{
    return x->deadline > 0 ? x->deadline - lm_now_s() : INFINITY;
}

void sr__flight_clear(flight *f)
{
    if (!f->borrowed) {
        ll_graph_free(f->lg);
        cg_plan_free(f->plan);
    }
    ll_genome_fini(&f->g);
    memset(f, 0, sizeof *f);
}

int sr__submit(srch *x, flight *f, bool check)
{
    double cutoff = 0;
    if (f->role == ROLE_SEARCH && x->o.cutoff_factor > 0 && !isnan(x->r->best_ms))
        cutoff = x->r->best_ms * x->o.cutoff_factor;
    sr_candidate c = {
        .id = f->id, .llir = f->lg, .plan = f->plan, .cutoff_ms = cutoff, .check = check,
        .costed = isfinite(f->modelled_ms), .modelled_ms = f->modelled_ms};
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
int sr__fatal(srch *x, const lm_err *e)
{
    if (e->code != LM_ENOMEM) return LM_OK;
    lm_err_copy(x->err, e);
    return x->err->code;
}

int sr__prepare(srch *x, flight *f, bool *ok)
{
    *ok = false;
    lm_err e = {0};
    double t = lm_now_s();
    if (!f->lg) f->lg = ll_graph_from_genome(x->s, &f->g, &e);
    x->r->t.search += lm_now_s() - t;
    if (sr__fatal(x, &e)) return x->err->code;
    if (f->lg && !f->borrowed && sr__fingerprint(f->lg, &f->fp, x->err, "search"))
        return x->err->code;
    ll_fingerprint fp = f->fp;
    if (f->lg && f->role == ROLE_SEARCH) {
        int added = lm_keyset_add(&x->programs, fp.lo, fp.hi);
        if (added < 0) return sr__oom(x->err, "search");
        if (!added) {
            x->r->dup_programs++;
            return LM_OK; /* a program already seen: not recorded, not measured */
        }
    }
    if (f->role == ROLE_SEARCH) f->id = ++x->next_id;
    if (!f->lg) {
        x->r->build_failed++;
        sr__log_candidate(x, f, NULL, SR_ERROR, e.msg, false, fp);
        sr__progress(x, "#%" PRIu64 ": its LLIR could not be built: %s", f->id, e.msg);
        return LM_OK;
    }
    t = lm_now_s();
    if (!f->plan) f->plan = cg_plan_new(f->lg, NULL, &e);
    x->r->t.codegen += lm_now_s() - t;
    if (sr__fatal(x, &e)) return x->err->code;
    if (!f->plan) {
        if (f->role == ROLE_SEARCH) x->r->codegen_failed++;
        sr__log_candidate(x, f, NULL, SR_COMPILE_FAILED, e.msg, true, fp);
        sr__progress(x, "#%" PRIu64 ": codegen refused it: %s", f->id, e.msg);
        return LM_OK;
    }
    f->kernels = f->plan->n_kernels + f->plan->n_blas;
    t = lm_now_s();
    lm_err ce = {0};
    if (!f->costed &&
        sr_cost_plan(f->plan, f->lg, x->g, x->dims, &f->modelled_ms, NULL, NULL, &ce) != 0)
        f->modelled_ms = NAN;
    x->r->t.search += lm_now_s() - t;
    if (sr__fatal(x, &ce)) return x->err->code;
    if (f->role == ROLE_SEARCH && screened(x, f)) {
        char why[200], a[32], b[32];
        double base = screen_base(x);
        snprintf(why, sizeof why,
                 "modelled %s, over %g times the model's %s for the %s: not measured",
                 sr_fmt_ms(f->modelled_ms, a, sizeof a), x->o.screen_factor,
                 sr_fmt_ms(base, b, sizeof b),
                 isnan(x->r->best_ms) ? "reference lowering" : "best so far");
        x->r->screened++;
        sr__log_candidate(x, f, NULL, SR_TOO_SLOW, why, true, fp);
        sr__progress(x, "#%" PRIu64 " screened out: %s", f->id, why);
        return LM_OK;
    }
    *ok = true;
    return LM_OK;
}

flight *sr__free_slot(srch *x)
{
    for (uint32_t i = 0; i < x->slots; i++)
        if (!x->fl[i].used) return &x->fl[i];
    return NULL;
}

/* Draws the next genome and, when it is a new program, hands it over. With a measuring
 * evaluator, after the first five draws, the model proposes: of `proposals` new genomes
 * the one it costs least is measured. */
static int next_candidate(srch *x)
{
    flight *f = sr__free_slot(x);
    memset(f, 0, sizeof *f);
    int rc;
    bool seeding = x->r->draws < (x->o.fused_start ? 5u : 1u);
    if (!seeding && x->r->measured && x->o.proposals > 1) {
        bool have;
        if ((rc = sr__propose(x, f, &have))) return rc;
        if (!have) return LM_OK;
    } else {
        double t = lm_now_s();
        rc = sr__draw(x, f);
        x->r->t.search += lm_now_s() - t;
        if (rc) {
            sr__flight_clear(f);
            return rc;
        }
    }
    int added = lm_keyset_add(&x->genomes, f->g.hash, 0);
    if (added <= 0) {
        sr__flight_clear(f);
        if (added < 0) return sr__oom(x->err, "search");
        x->r->dup_genomes++;
        return LM_OK;
    }
    bool ok;
    rc = sr__prepare(x, f, &ok);
    if (rc || !ok) {
        sr__flight_clear(f);
        return rc;
    }
    x->submitted_search++;
    if (x->submitted_search == 1) {
        x->first_id = f->id;
        if ((rc = ll_genome_copy(&x->first_g, &f->g, x->err))) return rc;
        x->have_first = true;
    }
    return sr__submit(x, f, false);
}

static int curve_add(srch *x, double ms)
{
    if (x->n_curve == x->cap_curve) {
        uint64_t cap = x->cap_curve ? x->cap_curve * 2 : 64;
        sr_curve_point *c = sr__realloc(x->curve, cap, sizeof *c);
        if (!c) return sr__oom(x->err, "search");
        x->curve = c;
        x->cap_curve = cap;
    }
    x->curve[x->n_curve++] = (sr_curve_point){x->r->evaluated, ms, x->r->best_ms};
    return LM_OK;
}

int sr__take_result(srch *x)
{
    sr_result res;
    memset(&res, 0, sizeof res);
    double t = lm_now_s();
    int rc = x->ev->ops->next(x->ev, &res, x->err);
    x->r->t.measure += lm_now_s() - t;
    if (rc) {
        if (!x->err->code)
            sr__fail(x->err, rc, NULL, "search: the evaluator has no candidate in flight");
        return x->err->code;
    }
    flight *f = NULL;
    for (uint32_t i = 0; i < x->slots && !f; i++)
        if (x->fl[i].used && x->fl[i].id == res.id) f = &x->fl[i];
    if (!f)
        return sr__fail(x->err, LM_ERUNTIME, NULL,
                          "search: the evaluator answered for candidate %" PRIu64
                          ", which is not in flight",
                          res.id);
    x->inflight--;
    x->done++;
    if ((unsigned)res.status >= SR_STATUS_COUNT) res.status = SR_ERROR;
    res.why[sizeof res.why - 1] = 0;
    x->r->t.compile += res.compile_s;
    ll_fingerprint fp = f->fp;
    char buf[32], bbuf[32];
    if (f->role == ROLE_REFERENCE) {
        x->r->reference_ms = res.status == SR_OK ? res.ms : NAN;
        x->r->reference_modelled_ms = f->modelled_ms;
        snprintf(x->r->reference_status, sizeof x->r->reference_status, "%s",
                 sr_status_name(res.status));
        snprintf(x->r->reference_why, sizeof x->r->reference_why, "%s", res.why);
        sr__log_candidate(x, f, &res, res.status, res.why, true, fp);
        sr__progress(x, "reference lowering: %s %s (modelled %s)", sr_status_name(res.status),
                 sr_fmt_ms(x->r->reference_ms, buf, sizeof buf),
                 sr_fmt_ms(f->modelled_ms, bbuf, sizeof bbuf));
    } else if (f->role == ROLE_CHECK) {
        bool first = f->parent == x->first_id;
        if (first)
            x->r->first_checked = res.status == SR_OK && res.checked;
        else
            x->r->winner_checked = res.status == SR_OK && res.checked;
        sr__log_candidate(x, f, &res, res.status, res.why, true, fp);
        sr__progress(x, "%s #%" PRIu64 " checked against the reference: %s%s%s",
                 first ? "first candidate" : "winner", f->parent, sr_status_name(res.status),
                 res.why[0] ? ": " : "", res.why);
        if (res.status != SR_OK) {
            /* it gives way to the next best */
            for (uint32_t i = 0; i < x->hall_n; i++)
                if (x->hall[i].id == f->parent) {
                    sr__member_remove(x->hall, &x->hall_n, i);
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
            /* its LLIR and plan are kept (the hall's and the first's) for its check
             * and, if it wins, for saving: the program evaluated is the one saved */
            sr_built *b = sr__built_new(f->lg, f->plan, f->modelled_ms, f->fp);
            if (!b) return sr__oom(x->err, "search");
            f->lg = NULL;
            f->plan = NULL;
            if (f->id == x->first_id) {
                x->first_b = b;
                b->refs++;
            }
            rc = sr__member_insert(x->pop, &x->pop_n, x->o.keep_best, &f->g, res.ms, f->id,
                                   NULL, NULL, x->err);
            if (!rc)
                rc = sr__member_insert(x->hall, &x->hall_n, SR_HALL, &f->g, res.ms, f->id, b,
                                       NULL, x->err);
            sr__built_release(b);
            if (rc) return rc;
        }
        sr__log_candidate(x, f, &res, res.status, res.why, true, fp);
        if ((rc = curve_add(x, res.status == SR_OK ? res.ms : NAN))) {
            sr__flight_clear(f);
            return rc;
        }
        x->stagnation = better ? 0 : x->stagnation + 1;
        uint64_t rejected = x->r->evaluated - x->r->ok;
        sr__progress(x,
                 "[%" PRIu64 "/%" PRIu64 "] #%" PRIu64
                 " (%s) %s %s (modelled %s); best %s (#%" PRIu64 "); %" PRIu64
                 " rejected; %.0f s left",
                 x->r->evaluated, x->o.limit, f->id, f->origin, sr_status_name(res.status),
                 sr_fmt_ms(res.status == SR_OK ? res.ms : NAN, buf, sizeof buf),
                 sr_fmt_ms(f->modelled_ms, bbuf, sizeof bbuf),
                 sr_fmt_ms(x->r->best_ms, (char[32]){0}, 32), x->r->best_n, rejected,
                 isfinite(sr__time_left(x)) ? sr__time_left(x) : -1.0);
        if (res.status != SR_OK && res.why[0]) sr__progress(x, "  #%" PRIu64 ": %s", f->id, res.why);
        if (x->o.restart_after && x->stagnation >= x->o.restart_after) {
            sr__member_clear(x->pop, &x->pop_n);
            x->restart_pending = true;
            x->stagnation = 0;
            x->r->restarts++;
            sr__progress(x, "restart: %u results without a new best", x->o.restart_after);
        }
    }
    sr__flight_clear(f);
    return LM_OK;
}

static int reference(srch *x)
{
    flight *f = &x->fl[0];
    memset(f, 0, sizeof *f);
    f->role = ROLE_REFERENCE;
    f->origin = "hlir";
    f->id = 0;
    if (sr__time_left(x) <= 0) {
        /* the baseline is not needed for a program: past the limit, the time goes to the
         * first candidate only (its codegen alone takes seconds on a long graph) */
        x->r->time_up = true;
        snprintf(x->r->reference_status, sizeof x->r->reference_status, "not run");
        snprintf(x->r->reference_why, sizeof x->r->reference_why,
                 "the time limit passed before it");
        sr__progress(x, "reference lowering: not run, the time limit has passed");
        return LM_OK;
    }
    lm_err e = {0};
    f->lg = ll_graph_from_hlir(x->g, &e);
    if (sr__fatal(x, &e)) return x->err->code;
    if (!f->lg) {
        snprintf(x->r->reference_status, sizeof x->r->reference_status, "error");
        snprintf(x->r->reference_why, sizeof x->r->reference_why, "%.200s", e.msg);
        return LM_OK;
    }
    bool ok;
    int rc = sr__prepare(x, f, &ok);
    if (rc || !ok) {
        snprintf(x->r->reference_status, sizeof x->r->reference_status, "%s",
                 ok ? "error" : "compile-failed");
        sr__flight_clear(f);
        return rc;
    }
    if ((rc = sr__submit(x, f, false))) return rc;
    return sr__take_result(x);
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
            if (sr__time_left(x) <= 0) {
                if (!x->r->time_up) sr__progress(x, "the time limit is reached");
                x->r->time_up = true;
                /* overtime: while no candidate has a time, the first genome and the seeds
                 * are still handed over, one at a time, so that a search whose limit went
                 * on the reference lowering still ends with a program */
                if (x->hall_n || x->inflight || x->submitted_search >= SR_OVERTIME) break;
            }
            if (x->r->draws >= max_draws) {
                if (!x->r->exhausted)
                    sr__progress(x, "no new program in %" PRIu64 " draws: the space looks exhausted",
                             max_draws);
                x->r->exhausted = true;
                break;
            }
            rc = next_candidate(x);
        }
        if (rc || x->inflight == 0) break;
        rc = sr__take_result(x);
    }
    return rc;
}

static void teardown(srch *x)
{
    for (uint32_t i = 0; x->fl && i < x->slots; i++)
        sr__flight_clear(&x->fl[i]);
    free(x->fl);
    if (x->own_ev) x->own_ev->ops->free(x->own_ev);
    sr__member_clear(x->pop, &x->pop_n);
    sr__member_clear(x->hall, &x->hall_n);
    if (x->have_first) ll_genome_fini(&x->first_g);
    sr__built_release(x->first_b);
    lm_keyset_fini(&x->genomes);
    lm_keyset_fini(&x->programs);
    free(x->order);
    free(x->mark);
    free(x->dims);
    free(x->curve);
    cs_session_free(x->cs);
    if (x->log) {
        lm_err le = {0};
        if (sr__commit_tmp(x->log, x->log_tmp, x->log_path, LM_OK, &le))
            lm_err_copy(x->err, &le);
    }
}

int sr_search_run(const hl_graph *g, const sr_options *o, sr_report *rep, lm_err *err)
{
    memset(rep, 0, sizeof *rep);
    rep->best_ms = rep->first_ms = rep->reference_ms = NAN;
    rep->best_modelled_ms = rep->reference_modelled_ms = NAN;
    snprintf(rep->reference_status, sizeof rep->reference_status, "not run");
    if (!g || !o || (!o->rules && !o->session))
        return sr__fail(err, LM_EARG, NULL, "sr_search_run: no graph or no rules");
    if (o->evaluator == SR_EVAL_REPLAY && !o->replay_path && !o->ev)
        return sr__fail(err, LM_EARG, NULL, "sr_search_run: a replay needs the log's path");
    if (o->limit > SR_MAX_LIMIT || o->max_draws > (1000 + 200 * SR_MAX_LIMIT) * SR_MAX_SMALL ||
        o->proposals > SR_MAX_SMALL || o->max_mutations > SR_MAX_SMALL ||
        o->restart_after > SR_MAX_SMALL || !(o->time_limit_s >= 0) ||
        o->time_limit_s > SR_MAX_FACTOR)
        return sr__fail(err, LM_EARG, NULL,
                          "sr_search_run: a count out of range (limit at most %llu; proposals, "
                          "mutations and restart-after at most %d; time limit 0 to %g s)",
                          (unsigned long long)SR_MAX_LIMIT, SR_MAX_SMALL, SR_MAX_FACTOR);
    srch x = {.g = g, .o = *o, .r = rep, .err = err, .pr = o->progress};
    x.t0 = lm_now_s();
    x.nd = hl_graph_dim_count(g);
    x.dims = sr__zalloc(x.nd ? x.nd : 1, sizeof *x.dims);
    if (!x.dims) return sr__oom(err, "search");
    for (uint32_t i = 0; i < x.nd; i++)
        x.dims[i] = o->dims ? o->dims[i] : hl_graph_dim_at(g, i)->profile;
    int rc = LM_OK;
    if (o->evaluator == SR_EVAL_REPLAY && !o->ev) {
        sr_log_header h;
        x.own_ev = sr_replay_new(o->replay_path, &h, err);
        rc = x.own_ev ? sr__apply_header(&x, &h) : err->code;
    }
    if (x.o.keep_best < 1) x.o.keep_best = 1;
    if (x.o.keep_best > 64) x.o.keep_best = 64;
    x.deadline = x.o.time_limit_s > 0 ? x.t0 + x.o.time_limit_s : 0;
    rep->seed = x.o.seed;
    rep->limit = x.o.limit;
    lm_pcg_seed(&x.rng, x.o.seed, SR_STREAM);
    if (!rc) rc = sr__saturate(&x);
    if (!rc) rc = sr__open_evaluator(&x);
    if (!rc) rc = sr__open_log(&x);
    if (!rc) {
        if (!x.o.max_draws) x.o.max_draws = 1000 + 200 * x.o.limit;
        sr__log_header(&x);
        rc = reference(&x);
    }
    if (!rc) rc = search_loop(&x);
    if (!rc) rc = sr__check_first_and_winner(&x);
    if (!rc) rc = sr__winner(&x);
    if (x.ev && x.ev == x.own_ev && o->evaluator == SR_EVAL_REPLAY)
        rep->replay_diverged = sr_replay_diverged(x.ev);
    sr__log_end(&x);
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
