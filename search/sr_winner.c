/* sr_winner.c - the end of the search (sr_state.h): with a measuring evaluator the first
 * candidate and the winner measured again and compared with the reference runtime (a
 * winner that disagrees gives way to the next best), then the winner costed for the
 * report and saved. */
#include "sr_state.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Measures candidate parent (genome g, program b: the LLIR and plan it was measured
 * with) again as a check against the reference; one that disagrees leaves the hall of
 * the best (take_result). *agreed: it did. */
static int check_one(srch *x, const ll_genome *g, sr_built *b, uint64_t parent, bool *agreed)
{
    uint32_t before = x->hall_n;
    flight *f = sr__free_slot(x);
    memset(f, 0, sizeof *f);
    f->role = ROLE_CHECK;
    f->origin = "check";
    f->parent = parent;
    f->id = ++x->next_id;
    int rc = ll_genome_copy(&f->g, g, x->err);
    if (rc) return rc;
    f->have_genome = true;
    f->lg = b->lg;
    f->plan = b->plan;
    f->borrowed = true;
    f->costed = true;
    f->modelled_ms = b->modelled_ms;
    f->fp = b->fp;
    bool ok;
    if ((rc = sr__prepare(x, f, &ok))) return rc;
    if (!ok) return sr__fail(x->err, LM_ERUNTIME, NULL, "search: a checked candidate was refused");
    if ((rc = sr__submit(x, f, true)) || (rc = sr__take_result(x))) return rc;
    *agreed = x->hall_n == before;
    return LM_OK;
}

/* With a measuring evaluator, after the search (so that the reference runtime, which can
 * take the CPU tens of seconds on a large graph, spends none of the search's time): the
 * first candidate compared with the reference, then the winner unless it is the first;
 * a winner that disagrees gives way to the next best. */
int sr__check_first_and_winner(srch *x)
{
    if (!x->ev->ops->measured) return LM_OK;
    bool agreed = false;
    int rc;
    if (x->have_first && x->first_ok && (rc = check_one(x, &x->first_g, x->first_b, x->first_id, &agreed)))
        return rc;
    for (uint32_t tries = 0; x->hall_n && tries < SR_HALL; tries++) {
        if (x->hall[0].id == x->first_id) {
            x->r->winner_checked = x->r->first_checked;
            return LM_OK;
        }
        member w = x->hall[0]; /* a check that disagrees removes hall[0] */
        if ((rc = check_one(x, &w.g, w.b, w.id, &agreed))) return rc;
        if (agreed) return LM_OK;
    }
    return LM_OK;
}

int sr__winner(srch *x)
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
        return sr__fail(x->err, LM_ELIMIT, NULL,
                          "search: no candidate has a time (%" PRIu64 " evaluated%s%s; %" PRIu64
                          " whose LLIR could not be built, %" PRIu64 " refused by codegen)",
                          x->r->evaluated, at ? ": " : "", what, x->r->build_failed,
                          x->r->codegen_failed);
    }
    const member *w = &x->hall[0];
    x->r->best_ms = w->ms;
    x->r->best_n = w->id;
    sr__hex64(w->g.hash, x->r->best_genome);
    /* the LLIR and the plan that were evaluated, not built again */
    const ll_graph *lg = w->b->lg;
    const cg_plan *plan = w->b->plan;
    sr__hexfp(w->b->fp, x->r->best_fingerprint);
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
    return rc;
}
