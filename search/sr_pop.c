/* sr_pop.c - the search's population (sr_state.h): the parents and the hall of the best
 * (lists sorted by time, then number), and where genomes come from: the first random,
 * the seeds (most fused, library, fused-stored, least fused), fresh random genomes after
 * a restart, mutants of a parent; and the model's pick among several new genomes when
 * the evaluator measures (docs/search.md, "The algorithm", 3). */
#include "sr_state.h"

#include <math.h>
#include <string.h>

/* Inserts (g, ms, id) into a list sorted by (ms, id), keeping at most cap. */
sr_built *sr__built_new(ll_graph *lg, cg_plan *plan, double modelled_ms, ll_fingerprint fp)
{
    sr_built *b = sr__alloc(1, sizeof *b);
    if (!b) return NULL;
    *b = (sr_built){.refs = 1, .lg = lg, .plan = plan, .modelled_ms = modelled_ms, .fp = fp};
    return b;
}

void sr__built_release(sr_built *b)
{
    if (!b || --b->refs) return;
    cg_plan_free(b->plan);
    ll_graph_free(b->lg);
    sr__free(b);
}

static void member_fini(member *m)
{
    ll_genome_fini(&m->g);
    sr__built_release(m->b);
    m->b = NULL;
}

int sr__member_insert(member *list, uint32_t *n, uint32_t cap, const ll_genome *g, double ms,
                      uint64_t id, sr_built *b, bool *in, lm_err *err)
{
    if (in) *in = false;
    uint32_t at = 0;
    while (at < *n && (list[at].ms < ms || (list[at].ms == ms && list[at].id < id)))
        at++;
    if (at >= cap) return LM_OK;
    ll_genome copy = {0};
    int rc = ll_genome_copy(&copy, g, err); /* first: a failure leaves the list whole */
    if (rc) return rc;
    if (*n == cap) {
        member_fini(&list[cap - 1]);
        (*n)--;
    }
    memmove(&list[at + 1], &list[at], (*n - at) * sizeof *list);
    (*n)++;
    list[at] = (member){.g = copy, .ms = ms, .id = id, .b = b};
    if (b) b->refs++;
    if (in) *in = true;
    return LM_OK;
}

void sr__member_remove(member *list, uint32_t *n, uint32_t i)
{
    member_fini(&list[i]);
    memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof *list);
    (*n)--;
}

void sr__member_clear(member *list, uint32_t *n)
{
    for (uint32_t i = 0; i < *n; i++)
        member_fini(&list[i]);
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

/* Draws a genome into f (a search candidate): the first is random; with fused_start the
 * second to fifth are the most fused, the library, the fused-stored and the least fused
 * genomes;
 * then a fresh random genome after a restart or while no candidate has a time, else a
 * mutant of one of the best. Canonicalized. */
int sr__draw(srch *x, flight *f)
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
int sr__propose(srch *x, flight *best, bool *have)
{
    *have = false;
    for (uint32_t i = 0; i < x->o.proposals; i++) {
        flight c;
        memset(&c, 0, sizeof c);
        double t = lm_now_s();
        int rc = sr__draw(x, &c);
        if (rc) {
            sr__flight_clear(&c);
            return rc;
        }
        bool skip = lm_keyset_has(&x->genomes, c.g.hash, 0) || (*have && c.g.hash == best->g.hash);
        if (skip) x->r->dup_genomes++;
        lm_err e = {0};
        if (!skip) skip = !(c.lg = ll_graph_from_genome(x->s, &c.g, &e));
        if (!skip) {
            if ((rc = sr__fingerprint(c.lg, &c.fp, x->err, "search"))) {
                sr__flight_clear(&c);
                return rc;
            }
            ll_fingerprint fp = c.fp, bp = *have ? best->fp : (ll_fingerprint){0, 0};
            skip = lm_keyset_has(&x->programs, fp.lo, fp.hi) ||
                   (*have && fp.lo == bp.lo && fp.hi == bp.hi);
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
            if (sr__fatal(x, &ce)) e = ce;
        }
        if (sr__fatal(x, &e)) {
            sr__flight_clear(&c);
            return x->err->code;
        }
        if (skip) {
            sr__flight_clear(&c);
            continue;
        }
        if (!*have || c.modelled_ms < best->modelled_ms) {
            if (*have) {
                sr__flight_clear(best);
                x->r->declined++;
            }
            *best = c;
            *have = true;
        } else {
            sr__flight_clear(&c);
            x->r->declined++;
        }
    }
    if (*have && isinf(best->modelled_ms)) best->modelled_ms = NAN;
    return LM_OK;
}
