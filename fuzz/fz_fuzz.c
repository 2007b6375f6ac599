/* fz_fuzz.c - genome fuzzing (fuzz.h): fz_run.
 *
 * The compile session (session.h) encodes the graph in an engine, saturates it with the
 * rules and reads the search space from it; the reference runtime runs once on seeded
 * inputs at small dims; then N distinct valid genomes are drawn (fuzz.h says in which
 * order), and each is built into LLIR, verified, run on the CPU executor and compared
 * output by output with the reference within llir's tolerances (docs/llir.md). Every
 * random choice comes from one PCG32 stream of the seed, so the same graph, rules, seed
 * and dims give the same genomes in the same order and the same result, byte for byte.
 */
#include "fz_int.h"
#include "lm_keyset.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FZ_STREAM 0x67656e6f6d65ull /* "genome": inputs use streams 0 .. inputs-1 */
#define FZ_RING 64                  /* recent genomes a mutation walk may start from */
#define FZ_MAX_MUTATIONS 3          /* choices one mutation changes, at most */
#define FZ_STALL                                                                                   \
    256                          /* draws in a row without a new genome (+ N) before               \
                                    exhaustive enumeration takes over */
#define FZ_ENUM_STEPS 4000000ull /* walks exhaustive enumeration may take */

const char *fz_origin_name(fz_origin o)
{
    static const char *names[] = {"most-fused",  "least-fused", "random",      "mutation",
                                  "enumeration", "library",     "fused-stored"};
    return o < FZ_FROM_COUNT ? names[o] : "?";
}

const char *fz_stage_name(fz_stage s)
{
    static const char *names[] = {"passed", "build", "verify", "run", "compare"};
    return s <= FZ_COMPARE ? names[s] : "?";
}

void fz_default_dims(const hl_graph *g, int64_t *dims)
{
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        int64_t v = d->lo > 3 ? d->lo : 3;
        dims[i] = v < d->hi ? v : d->hi;
    }
}

/* ==================================================================================
 * The reference run (hlir reports through lm_err, as llir does)
 * ================================================================================== */

static int hx_run(const hl_graph *g, const int64_t *dims, const hl_tensor *ins, hl_tensor *outs,
                  uint64_t mem_limit, lm_err *err)
{
    lm_err he = {0};
    hl_run_opts ro = {.mem_limit = mem_limit};
    if (hl_run(g, dims, ins, outs, &ro, &he) != 0) {
        lm_err_prefix(&he, "the reference run");
        lm_err_copy(err, &he);
        return he.code;
    }
    return LM_OK;
}

/* ==================================================================================
 * The fuzzer
 * ================================================================================== */

typedef struct fz {
    const hl_graph *g;
    const fz_options *o;
    fz_hooks h;
    fz_result *r;
    lm_err *err;

    cs_session *cs; /* made here (freed here), or the caller's (fz_options.session) */
    bool own_cs;
    cs_report cs_rep;
    const ll_space *s;
    uint32_t ns;
    int64_t *dims;  /* per hlir dim */
    int64_t *ldims; /* per LLIR dim (the space's, by name) */
    uint32_t n_ldims;
    uint32_t ni, no;
    hl_tensor *ins, *ref, *mag, *cand;
    ll_out_cmp *cmp;
    uint32_t *op_count;
    uint64_t mem_limit;

    lm_pcg32 rng;
    lm_keyset seen;     /* canonical genome hashes (64-bit keys) */
    lm_keyset programs; /* fingerprints */
    ll_genome ring[FZ_RING];
    uint32_t ring_n, ring_last;
    uint32_t *order; /* scratch: a walk's classes */
    uint8_t *mark;   /* scratch: per class */
    double next_progress, t0;
} fz;

/* The LLIR graph's dim values, by name from the hlir graph's (once: every graph of the
 * space has the space's dims). */
static int map_dims(fz *f, const ll_graph *lg)
{
    if (f->ldims) return LM_OK;
    f->n_ldims = ll_graph_dim_count(lg);
    f->ldims = fz__zalloc(f->n_ldims ? f->n_ldims : 1, sizeof *f->ldims);
    if (!f->ldims) return fz__fail(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    const hl_expr_pool *p = hl_graph_exprs_c(f->g);
    for (uint32_t i = 0; i < f->n_ldims; i++) {
        const char *name = ll_graph_dim_name(lg, i);
        uint32_t k = 0;
        while (k < hl_graph_dim_count(f->g) &&
               strcmp(hl_var_name(p, hl_graph_dim_at(f->g, k)->var), name) != 0)
            k++;
        if (k == hl_graph_dim_count(f->g))
            return fz__fail(f->err, LM_EDIM, NULL,
                              "fuzz: the LLIR graph has a dim '%s' the graph does not declare",
                              name);
        f->ldims[i] = f->dims[k];
    }
    if (ll_graph_input_count(lg) != f->ni)
        return fz__fail(f->err, LM_EVERIFY, NULL,
                          "fuzz: the LLIR graph has %u inputs, the graph %u",
                          ll_graph_input_count(lg), f->ni);
    return LM_OK;
}

static void free_cand(fz *f)
{
    for (uint32_t i = 0; i < f->no; i++)
        hl_tensor_fini(&f->cand[i]);
}

static void progress(fz *f, bool last)
{
    if (!f->o->log) return;
    double now = lm_now_s();
    if (!last && now < f->next_progress) return;
    f->next_progress = now + 2.0;
    fprintf(f->o->log,
            "fuzz: %" PRIu64 " of %" PRIu64 " genomes checked, %" PRIu64 " failed, %.1f s%s",
            f->r->checked, f->o->n, f->r->failed, now - f->t0,
            last                        ? "\n"
            : isatty(fileno(f->o->log)) ? "\r"
                                        : "\n");
    fflush(f->o->log);
}

/* Builds, verifies, runs and compares one canonical genome; calls the callback. Returns
 * nonzero only for a setup failure (the dims) or for running out of memory at any stage:
 * a genome that fails is a result, not an error, but memory running out says nothing
 * about the genome. */
static int check_genome(fz *f, const ll_genome *gn, fz_origin origin)
{
    fz_case c = {.index = f->r->checked, .hash = gn->hash, .origin = origin, .msg = ""};
    lm_err err = {0};
    ll_graph *lg = ll_graph_from_genome_unverified(f->s, gn, &err);
    if (!lg) {
        c.stage = FZ_BUILD;
    } else {
        int rc = map_dims(f, lg);
        if (rc) {
            ll_graph_free(lg);
            return rc;
        }
        c.built = true;
        c.fp = ll_graph_fingerprint(lg);
        if (lm_keyset_add(&f->programs, c.fp.lo, c.fp.hi) < 0) {
            ll_graph_free(lg);
            return fz__fail(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
        }
        memset(f->op_count, 0, ll_op_count() * sizeof *f->op_count);
        for (uint32_t i = 0; i < ll_graph_node_count(lg); i++)
            f->op_count[ll_graph_node(lg, i)->op]++;
        c.op_count = f->op_count;
        if (!f->o->unchecked && ll_graph_verify(lg, &err) != 0)
            c.stage = FZ_VERIFY;
        else if (ll_run(lg, f->ldims, f->ins, f->cand, f->mem_limit, &err) != 0)
            c.stage = FZ_RUN;
        else {
            memset(f->cmp, 0, f->no * sizeof *f->cmp);
            if (ll_compare_outputs_scaled(f->g, f->dims, f->cand, f->ref, f->mag, f->cmp, &err) !=
                0)
                c.stage = FZ_COMPARE;
            c.n_outputs = f->no;
            c.cmp = f->cmp;
            free_cand(f);
        }
    }
    if (err.code == LM_ENOMEM) {
        ll_graph_free(lg);
        lm_err_prefix(&err, "fuzz: genome %016" PRIx64 " (%s)", gn->hash, fz_stage_name(c.stage));
        lm_err_copy(f->err, &err);
        return LM_ENOMEM;
    }
    c.code = err.code;
    c.msg = err.msg;
    f->r->checked++;
    f->r->from[origin]++;
    if (c.stage == FZ_PASSED)
        f->r->passed++;
    else
        f->r->failed++;
    if (f->h.each) f->h.each(f->h.ctx, &c, f->g, f->s, gn, lg);
    ll_graph_free(lg);
    progress(f, false);
    return LM_OK;
}

/* Canonicalizes gn and checks it when it is new; *fresh tells whether it was. */
static int offer(fz *f, ll_genome *gn, fz_origin origin, bool *fresh)
{
    *fresh = false;
    f->r->draws++;
    int rc = ll_genome_canonicalize(gn, f->s, f->err);
    if (rc) return rc;
    int added = lm_keyset_add(&f->seen, gn->hash, 0);
    if (added < 0) return fz__fail(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    if (!added) return LM_OK;
    *fresh = true;
    /* the ring of recent genomes, for mutation walks */
    uint32_t slot = f->ring_n < FZ_RING ? f->ring_n++ : (f->ring_last + 1) % FZ_RING;
    if ((rc = ll_genome_copy(&f->ring[slot], gn, f->err))) return rc;
    f->ring_last = slot;
    return check_genome(f, gn, origin);
}

/* A mutation walk's next genome: a recent genome with 1 to FZ_MAX_MUTATIONS of its
 * reached choices changed; classes the change newly reaches get random choices (so a
 * structural change does not always take their choice 0, as canonicalization left it);
 * then repaired. false when the parent has no reached class with a choice to make. */
static int mutate(fz *f, ll_genome *child, bool *made)
{
    *made = false;
    uint32_t pick = lm_pcg_below(&f->rng, 2) ? f->ring_last : lm_pcg_below(&f->rng, f->ring_n);
    int rc = ll_genome_copy(child, &f->ring[pick], f->err);
    uint32_t n = 0;
    if (!rc) rc = ll_genome_reached(child, f->s, f->order, &n, f->err);
    if (rc) return rc;
    memset(f->mark, 0, f->ns);
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++) {
        f->mark[f->order[i]] = 1;
        if (ll_space_choice_count(f->s, f->order[i]) > 1) f->order[nd++] = f->order[i];
    }
    if (!nd) return LM_OK;
    uint32_t k = 1 + lm_pcg_below(&f->rng, FZ_MAX_MUTATIONS);
    for (uint32_t m = 0; m < k; m++) {
        uint32_t c = f->order[lm_pcg_below(&f->rng, nd)];
        uint32_t cnt = ll_space_choice_count(f->s, c);
        ll_genome_set(child, f->s, c,
                      (child->choice[c] + 1 + lm_pcg_below(&f->rng, cnt - 1)) % cnt);
    }
    for (bool grew = true; grew;) { /* newly reached classes, until none is left */
        grew = false;
        if ((rc = ll_genome_reached(child, f->s, f->order, &n, f->err))) return rc;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t c = f->order[i];
            if (f->mark[c]) continue;
            f->mark[c] = 1;
            grew = true;
            uint32_t cnt = ll_space_choice_count(f->s, c);
            if (cnt > 1) ll_genome_set(child, f->s, c, lm_pcg_below(&f->rng, cnt));
        }
    }
    if ((rc = ll_genome_repair(child, f->s, &f->rng, f->err))) return rc;
    *made = true;
    return LM_OK;
}

/* ---- exhaustive enumeration ---- */

typedef struct en {
    fz *f;
    ll_genome g;    /* the partial genome */
    ll_genome leaf; /* scratch */
    uint8_t *decided;
    uint32_t *order;
    uint64_t steps;
    bool stopped; /* the step budget ran out, or enough genomes were checked */
} en;

static int enum_rec(en *x)
{
    fz *f = x->f;
    if (f->r->checked >= f->o->n || ++x->steps > FZ_ENUM_STEPS) {
        x->stopped = true;
        return LM_OK;
    }
    uint32_t n = 0;
    int rc = ll_genome_reached(&x->g, f->s, x->order, &n, f->err);
    if (rc) return rc;
    uint32_t c = LM_NONE;
    for (uint32_t i = 0; i < n && c == LM_NONE; i++)
        if (!x->decided[x->order[i]]) c = x->order[i];
    if (c == LM_NONE) { /* every reached class is decided: a genome */
        lm_err verr = {0};
        if (ll_genome_validate(&x->g, f->s, &verr) != 0) return LM_OK; /* a cycle */
        if ((rc = ll_genome_copy(&x->leaf, &x->g, f->err))) return rc;
        bool fresh;
        return offer(f, &x->leaf, FZ_FROM_ENUMERATION, &fresh);
    }
    uint32_t keep = x->g.choice[c];
    x->decided[c] = 1;
    for (uint32_t j = 0; j < ll_space_choice_count(f->s, c) && !rc && !x->stopped; j++) {
        ll_genome_set(&x->g, f->s, c, j);
        rc = enum_rec(x);
    }
    x->decided[c] = 0;
    ll_genome_set(&x->g, f->s, c, keep);
    return rc;
}

/* Checks every valid genome not checked yet, in enumeration order, until N are checked;
 * r->exhausted when the enumeration completed. */
static int enumerate(fz *f)
{
    en x = {.f = f};
    int rc = ll_genome_init(&x.g, f->s, f->err);
    if (!rc) rc = ll_genome_init(&x.leaf, f->s, f->err);
    x.decided = fz__zalloc(f->ns ? f->ns : 1, 1);
    x.order = fz__alloc(f->ns ? f->ns : 1, sizeof *x.order);
    if (!rc && (!x.decided || !x.order))
        rc = fz__fail(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    if (!rc) rc = enum_rec(&x);
    if (!rc && !x.stopped) f->r->exhausted = true;
    ll_genome_fini(&x.g);
    ll_genome_fini(&x.leaf);
    fz__free(x.decided);
    fz__free(x.order);
    return rc;
}

/* The genomes, in the order of fuzz.h. */
static int draw_all(fz *f)
{
    ll_genome gn = {0};
    int rc = ll_genome_init(&gn, f->s, f->err);
    bool fresh;
    if (!rc) rc = ll_genome_most_fused(&gn, f->s, f->err);
    if (!rc) rc = offer(f, &gn, FZ_FROM_MOST_FUSED, &fresh);
    /* the search's other seeds (docs/search.md) */
    if (!rc && f->r->checked < f->o->n) rc = ll_genome_library(&gn, f->s, f->err);
    if (!rc && f->r->checked < f->o->n) rc = offer(f, &gn, FZ_FROM_LIBRARY, &fresh);
    if (!rc && f->r->checked < f->o->n) rc = ll_genome_fused_stored(&gn, f->s, f->err);
    if (!rc && f->r->checked < f->o->n) rc = offer(f, &gn, FZ_FROM_FUSED_STORED, &fresh);
    if (!rc && f->r->checked < f->o->n) rc = ll_genome_least_fused(&gn, f->s, f->err);
    if (!rc && f->r->checked < f->o->n) rc = offer(f, &gn, FZ_FROM_LEAST_FUSED, &fresh);
    bool small = f->r->stats.log2_programs <= log2((double)f->o->n);
    if (!rc && small) rc = enumerate(f);
    uint64_t stall = 0;
    while (!rc && !small && f->r->checked < f->o->n) {
        bool made = false;
        fz_origin from = FZ_FROM_RANDOM;
        if (lm_pcg_below(&f->rng, 2)) {
            rc = mutate(f, &gn, &made);
            from = FZ_FROM_MUTATION;
        }
        if (!rc && !made) {
            rc = ll_genome_random(&gn, f->s, &f->rng, f->err);
            from = FZ_FROM_RANDOM;
        }
        if (!rc) rc = offer(f, &gn, from, &fresh);
        stall = fresh ? 0 : stall + 1;
        if (!rc && stall > FZ_STALL + f->o->n) {
            rc = enumerate(f);
            break;
        }
    }
    ll_genome_fini(&gn);
    return rc;
}

/* Each output's scale over its RMS, as llir's comparison takes them (ll_out_cmp): the
 * reference compared with itself, which agrees everywhere but where it is not finite. */
static int spreads(fz *f)
{
    lm_err ce = {0};
    memset(f->cmp, 0, f->no * sizeof *f->cmp);
    int rc = ll_compare_outputs_scaled(f->g, f->dims, f->ref, f->ref, f->mag, f->cmp, &ce);
    if (rc && rc != LM_EMISMATCH) {
        lm_err_copy(f->err, &ce);
        return rc;
    }
    for (uint32_t i = 0; i < f->no && i < FZ_MAX_TOL; i++) {
        const ll_out_cmp *m = &f->cmp[i];
        f->r->spread[i] = m->rms > 0 ? m->scale / m->rms : INFINITY;
    }
    return LM_OK;
}

static int setup(fz *f)
{
    const fz_options *o = f->o;
    fz_result *r = f->r;
    uint32_t nd = hl_graph_dim_count(f->g);
    f->ni = hl_graph_input_count(f->g);
    f->no = hl_graph_output_count(f->g);
    f->dims = fz__zalloc(nd ? nd : 1, sizeof *f->dims);
    f->ins = fz__zalloc(f->ni ? f->ni : 1, sizeof *f->ins);
    f->ref = fz__zalloc(f->no ? f->no : 1, sizeof *f->ref);
    f->mag = fz__zalloc(f->no ? f->no : 1, sizeof *f->mag);
    f->cand = fz__zalloc(f->no ? f->no : 1, sizeof *f->cand);
    f->cmp = fz__zalloc(f->no ? f->no : 1, sizeof *f->cmp);
    f->op_count = fz__zalloc(ll_op_count(), sizeof *f->op_count);
    if (!f->dims || !f->ins || !f->ref || !f->mag || !f->cand || !f->cmp || !f->op_count)
        return fz__fail(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    if (o->dims)
        memcpy(f->dims, o->dims, nd * sizeof *f->dims);
    else
        fz_default_dims(f->g, f->dims);
    f->mem_limit = o->mem_limit ? o->mem_limit : lm_mem_available() / 2;

    /* the front half (session.h): saturation and the space */
    cs_options co = {.rules_path = o->rules_path,
                     .rules_text = o->rules,
                     .rules_name = o->rules_name,
                     .log = o->log,
                     .skip_dtype_check = o->unchecked,
                     .report = &f->cs_rep};
    if (o->session) {
        if (cs_session_graph(o->session) != f->g || !cs_session_space(o->session))
            return fz__fail(f->err, LM_EARG, NULL,
                            "fz_run: the session given is not of this graph or has no space");
        f->cs = o->session;
        f->cs_rep = *cs_session_report(o->session);
    } else {
        f->cs = cs_session_new(f->g, &co, f->err);
        f->own_cs = true;
    }
    r->sat = f->cs_rep.sat;
    r->sat_seconds = f->cs_rep.sat_seconds;
    r->space_seconds = f->cs_rep.space_seconds;
    r->rows = f->cs_rep.rows;
    r->engine_peak = f->cs_rep.engine_peak;
    if (!f->cs) return f->err->code;
    f->s = cs_session_space(f->cs);
    r->stats = f->cs_rep.stats;
    f->ns = ll_space_class_count(f->s);
    f->order = fz__alloc(f->ns ? f->ns : 1, sizeof *f->order);
    f->mark = fz__alloc(f->ns ? f->ns : 1, 1);
    if (!f->order || !f->mark) return fz__fail(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");

    /* the reference, once */
    r->n_outputs = f->no;
    double tol[FZ_MAX_TOL];
    double *tolp = f->no <= FZ_MAX_TOL ? tol : fz__zalloc(f->no, sizeof *tolp);
    if (!tolp) return fz__fail(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    int rc = ll_output_tolerances(f->g, f->dims, tolp, f->err);
    for (uint32_t i = 0; !rc && i < f->no && i < FZ_MAX_TOL; i++)
        r->tol[i] = tolp[i];
    if (tolp != tol) fz__free(tolp);
    if (rc) return rc;
    if ((rc = fz_inputs(f->g, f->dims, o->seed, f->ins, f->err))) return rc;
    double t = lm_now_s();
    rc = hx_run(f->g, f->dims, f->ins, f->ref, f->mem_limit, f->err);
    if (!rc) rc = ll_output_magnitudes(f->g, f->dims, f->ins, f->mag, f->err);
    r->ref_seconds = lm_now_s() - t;
    if (!rc) rc = spreads(f);
    return rc;
}

static void teardown(fz *f)
{
    for (uint32_t i = 0; f->ins && i < f->ni; i++)
        hl_tensor_fini(&f->ins[i]);
    for (uint32_t i = 0; f->ref && i < f->no; i++)
        hl_tensor_fini(&f->ref[i]);
    for (uint32_t i = 0; f->mag && i < f->no; i++)
        hl_tensor_fini(&f->mag[i]);
    for (uint32_t i = 0; i < f->ring_n; i++)
        ll_genome_fini(&f->ring[i]);
    lm_keyset_fini(&f->seen);
    lm_keyset_fini(&f->programs);
    fz__free(f->ins);
    fz__free(f->ref);
    fz__free(f->mag);
    fz__free(f->cand);
    fz__free(f->cmp);
    fz__free(f->op_count);
    fz__free(f->dims);
    fz__free(f->ldims);
    fz__free(f->order);
    fz__free(f->mark);
    if (f->own_cs) cs_session_free(f->cs);
}

int fz_run(const hl_graph *g, const fz_options *o, const fz_hooks *h,
                  fz_result *r, lm_err *err)
{
    memset(r, 0, sizeof *r);
    if (!g || !o || o->n == 0)
        return fz__fail(err, LM_EARG, NULL, "fz_run: no graph, or no genomes asked for");
    fz f = {.g = g, .o = o, .r = r, .err = err};
    if (h) f.h = *h;
    lm_pcg_seed(&f.rng, o->seed, FZ_STREAM);
    int rc = setup(&f);
    if (!rc && f.h.ready) f.h.ready(f.h.ctx, r);
    if (!rc) {
        f.t0 = lm_now_s();
        f.next_progress = f.t0 + 2.0;
        rc = draw_all(&f);
        r->seconds = lm_now_s() - f.t0;
        r->programs = f.programs.n;
        progress(&f, true);
    }
    teardown(&f);
    return rc;
}

