/* fuzz.c - genome fuzzing: ls_fuzz_graph (ls_fuzz.h) and `luminal_search --fuzz N`.
 *
 * The graph is encoded in an engine and saturated with the rules; the search space is
 * read from it; the reference runtime runs once on seeded inputs at small dims; then N
 * distinct valid genomes are drawn (ls_fuzz.h says in which order), and each is built
 * into LLIR, verified, run on the CPU executor and compared output by output with the
 * reference within llir's tolerances (docs/llir.md). Every random choice comes from one
 * PCG32 stream of the seed, so the same graph, rules, seed and dims give the same genomes
 * in the same order and the same output, byte for byte.
 *
 * Printing (the command): a header (dims, space, the tolerance of every output), one
 * FAIL line per disagreeing output of a genome (its hash, where it came from, the output,
 * the first element outside the tolerance with both values, the error and the tolerance
 * in RMS units) followed by the ops the genome's program uses, and last exactly
 * `N passed, M failed`. Timing (genomes per second) goes to stderr, so stdout depends
 * on nothing but the inputs. --json prints one object instead.
 */
#include "ls_fuzz.h"
#include "ls_int.h"
#include "session.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FZ_STREAM 0x67656e6f6d65ull /* "genome": inputs use streams 0 .. inputs-1 */
#define FZ_RING 64                  /* recent genomes a mutation walk may start from */
#define FZ_MAX_MUTATIONS 3          /* choices one mutation changes, at most */
#define FZ_STALL                                                                                   \
    256                          /* draws in a row without a new genome (+ N) before               \
                                    exhaustive enumeration takes over */
#define FZ_ENUM_STEPS 4000000ull /* walks exhaustive enumeration may take */

const char *ls_origin_name(ls_origin o)
{
    static const char *names[] = {"most-fused",  "least-fused", "random",      "mutation",
                                  "enumeration", "library",     "fused-stored"};
    return o < LS_FROM_COUNT ? names[o] : "?";
}

const char *ls_stage_name(ls_stage s)
{
    static const char *names[] = {"passed", "build", "verify", "run", "compare"};
    return s <= LS_COMPARE ? names[s] : "?";
}

void ls_fuzz_default_dims(const hl_graph *g, int64_t *dims)
{
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        int64_t v = d->lo > 3 ? d->lo : 3;
        dims[i] = v < d->hi ? v : d->hi;
    }
}

/* ==================================================================================
 * The calls into hlir that can fail (hlir reports through lm_err, as llir does)
 * ================================================================================== */

/* The inputs of g at dims: input i filled from (seed, stream i). */
static int hx_inputs(const hl_graph *g, const int64_t *dims, uint64_t seed, hl_tensor *ins,
                     lm_err *err)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvar = hl_var_count(p);
    int64_t *byvar = calloc(nvar ? nvar : 1, sizeof *byvar);
    bool *bound = calloc(nvar ? nvar : 1, sizeof *bound);
    if (!byvar || !bound) {
        free(byvar);
        free(bound);
        return lm_err_set(err, LM_ENOMEM, NULL, "inputs: out of memory");
    }
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        if (d->var < nvar) byvar[d->var] = dims[i], bound[d->var] = true;
    }
    hl_env env = {byvar, bound, nvar};
    lm_err he = {0};
    for (uint32_t i = 0; i < hl_graph_input_count(g) && !he.code; i++) {
        const hl_node *in = hl_graph_node(g, hl_graph_input(g, i));
        int64_t shape[HL_MAX_DIMS];
        bool ok = true;
        for (uint32_t d = 0; ok && d < in->ndim; d++)
            ok = hl_e_eval(p, in->shape[d], &env, 0, &shape[d], &he) == 0;
        if (ok) ok = hl_tensor_init(&ins[i], in->dtype, in->ndim, shape, &he) == 0;
        if (ok) ok = hl_graph_fill_input(g, i, &ins[i], seed, &he) == 0;
        if (!ok) lm_err_prefix(&he, "input '%s'", in->name);
    }
    free(byvar);
    free(bound);
    lm_err_copy(err, &he);
    return he.code;
}

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
 * Sets of 64- and 128-bit keys (open addressing; hashes are already mixed)
 * ================================================================================== */

typedef struct keyset {
    uint64_t *lo, *hi; /* hi NULL: 64-bit keys */
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
    while (k->used[i] && !(k->lo[i] == lo && (!k->hi || k->hi[i] == hi)))
        i = (i + 1) & m;
    return i;
}

/* 1 when inserted, 0 when present, -1 out of memory. */
static int keyset_add(keyset *k, bool wide, uint64_t lo, uint64_t hi)
{
    if ((k->n + 1) * 2 > k->cap) {
        keyset big = {0};
        big.cap = k->cap ? k->cap * 2 : 1024;
        big.lo = malloc(big.cap * sizeof *big.lo);
        big.hi = wide ? malloc(big.cap * sizeof *big.hi) : NULL;
        big.used = calloc(big.cap, 1);
        if (!big.lo || (wide && !big.hi) || !big.used) {
            keyset_fini(&big);
            return -1;
        }
        for (size_t i = 0; i < k->cap; i++) {
            if (!k->used[i]) continue;
            size_t j = keyset_slot(&big, k->lo[i], wide ? k->hi[i] : 0);
            big.used[j] = 1;
            big.lo[j] = k->lo[i];
            if (wide) big.hi[j] = k->hi[i];
        }
        big.n = k->n;
        keyset_fini(k);
        *k = big;
    }
    size_t i = keyset_slot(k, lo, hi);
    if (k->used[i]) return 0;
    k->used[i] = 1;
    k->lo[i] = lo;
    if (wide) k->hi[i] = hi;
    k->n++;
    return 1;
}

/* ==================================================================================
 * The fuzzer
 * ================================================================================== */

typedef struct fz {
    const hl_graph *g;
    const ls_fuzz_opts *o;
    ls_fuzz_hooks h;
    ls_fuzz_result *r;
    lm_err *err;

    cs_session *cs;
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
    keyset seen;     /* canonical genome hashes */
    keyset programs; /* fingerprints */
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
    f->ldims = calloc(f->n_ldims ? f->n_ldims : 1, sizeof *f->ldims);
    if (!f->ldims) return lm_err_set(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    const hl_expr_pool *p = hl_graph_exprs_c(f->g);
    for (uint32_t i = 0; i < f->n_ldims; i++) {
        const char *name = ll_graph_dim_name(lg, i);
        uint32_t k = 0;
        while (k < hl_graph_dim_count(f->g) &&
               strcmp(hl_var_name(p, hl_graph_dim_at(f->g, k)->var), name) != 0)
            k++;
        if (k == hl_graph_dim_count(f->g))
            return lm_err_set(f->err, LM_EDIM, NULL,
                              "fuzz: the LLIR graph has a dim '%s' the graph does not declare",
                              name);
        f->ldims[i] = f->dims[k];
    }
    if (ll_graph_input_count(lg) != f->ni)
        return lm_err_set(f->err, LM_EVERIFY, NULL,
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
 * nonzero only for a setup failure (out of memory, the dims): a genome that fails is a
 * result, not an error. */
static int check_genome(fz *f, const ll_genome *gn, ls_origin origin)
{
    ls_fuzz_case c = {.index = f->r->checked, .hash = gn->hash, .origin = origin, .msg = ""};
    lm_err err = {0};
    ll_graph *lg = ll_graph_from_genome_unverified(f->s, gn, &err);
    if (!lg) {
        c.stage = LS_BUILD;
    } else {
        int rc = map_dims(f, lg);
        if (rc) {
            ll_graph_free(lg);
            return rc;
        }
        c.built = true;
        c.fp = ll_graph_fingerprint(lg);
        if (keyset_add(&f->programs, true, c.fp.lo, c.fp.hi) < 0) {
            ll_graph_free(lg);
            return lm_err_set(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
        }
        memset(f->op_count, 0, ll_op_count() * sizeof *f->op_count);
        for (uint32_t i = 0; i < ll_graph_node_count(lg); i++)
            f->op_count[ll_graph_node(lg, i)->op]++;
        c.op_count = f->op_count;
        if (!f->o->unchecked && ll_graph_verify(lg, &err) != 0)
            c.stage = LS_VERIFY;
        else if (ll_run(lg, f->ldims, f->ins, f->cand, f->mem_limit, &err) != 0)
            c.stage = LS_RUN;
        else {
            memset(f->cmp, 0, f->no * sizeof *f->cmp);
            if (ll_compare_outputs_scaled(f->g, f->dims, f->cand, f->ref, f->mag, f->cmp, &err) !=
                0)
                c.stage = LS_COMPARE;
            c.n_outputs = f->no;
            c.cmp = f->cmp;
            free_cand(f);
        }
    }
    c.code = err.code;
    c.msg = err.msg;
    f->r->checked++;
    f->r->from[origin]++;
    if (c.stage == LS_PASSED)
        f->r->passed++;
    else
        f->r->failed++;
    if (f->h.each) f->h.each(f->h.ctx, &c, f->g, f->s, gn, lg);
    ll_graph_free(lg);
    progress(f, false);
    return LM_OK;
}

/* Canonicalizes gn and checks it when it is new; *fresh tells whether it was. */
static int offer(fz *f, ll_genome *gn, ls_origin origin, bool *fresh)
{
    *fresh = false;
    f->r->draws++;
    int rc = ll_genome_canonicalize(gn, f->s, f->err);
    if (rc) return rc;
    int added = keyset_add(&f->seen, false, gn->hash, 0);
    if (added < 0) return lm_err_set(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
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
        return offer(f, &x->leaf, LS_FROM_ENUMERATION, &fresh);
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
    x.decided = calloc(f->ns ? f->ns : 1, 1);
    x.order = malloc((f->ns ? f->ns : 1) * sizeof *x.order);
    if (!rc && (!x.decided || !x.order))
        rc = lm_err_set(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    if (!rc) rc = enum_rec(&x);
    if (!rc && !x.stopped) f->r->exhausted = true;
    ll_genome_fini(&x.g);
    ll_genome_fini(&x.leaf);
    free(x.decided);
    free(x.order);
    return rc;
}

/* The genomes, in the order of ls_fuzz.h. */
static int draw_all(fz *f)
{
    ll_genome gn = {0};
    int rc = ll_genome_init(&gn, f->s, f->err);
    bool fresh;
    if (!rc) rc = ll_genome_most_fused(&gn, f->s, f->err);
    if (!rc) rc = offer(f, &gn, LS_FROM_MOST_FUSED, &fresh);
    /* the search's other seeds (docs/search.md) */
    if (!rc && f->r->checked < f->o->n) rc = ll_genome_library(&gn, f->s, f->err);
    if (!rc && f->r->checked < f->o->n) rc = offer(f, &gn, LS_FROM_LIBRARY, &fresh);
    if (!rc && f->r->checked < f->o->n) rc = ll_genome_fused_stored(&gn, f->s, f->err);
    if (!rc && f->r->checked < f->o->n) rc = offer(f, &gn, LS_FROM_FUSED_STORED, &fresh);
    if (!rc && f->r->checked < f->o->n) rc = ll_genome_least_fused(&gn, f->s, f->err);
    if (!rc && f->r->checked < f->o->n) rc = offer(f, &gn, LS_FROM_LEAST_FUSED, &fresh);
    bool small = f->r->stats.log2_programs <= log2((double)f->o->n);
    if (!rc && small) rc = enumerate(f);
    uint64_t stall = 0;
    while (!rc && !small && f->r->checked < f->o->n) {
        bool made = false;
        ls_origin from = LS_FROM_RANDOM;
        if (lm_pcg_below(&f->rng, 2)) {
            rc = mutate(f, &gn, &made);
            from = LS_FROM_MUTATION;
        }
        if (!rc && !made) {
            rc = ll_genome_random(&gn, f->s, &f->rng, f->err);
            from = LS_FROM_RANDOM;
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

static double rms(const hl_tensor *t)
{
    double ss = 0;
    size_t n = 0;
    for (size_t i = 0; i < t->numel; i++) {
        double v = hl_tensor_get(t, i);
        if (isfinite(v)) ss += v * v, n++;
    }
    return n ? sqrt(ss / (double)n) : 0.0;
}

static int setup(fz *f)
{
    const ls_fuzz_opts *o = f->o;
    ls_fuzz_result *r = f->r;
    uint32_t nd = hl_graph_dim_count(f->g);
    f->ni = hl_graph_input_count(f->g);
    f->no = hl_graph_output_count(f->g);
    f->dims = calloc(nd ? nd : 1, sizeof *f->dims);
    f->ins = calloc(f->ni ? f->ni : 1, sizeof *f->ins);
    f->ref = calloc(f->no ? f->no : 1, sizeof *f->ref);
    f->mag = calloc(f->no ? f->no : 1, sizeof *f->mag);
    f->cand = calloc(f->no ? f->no : 1, sizeof *f->cand);
    f->cmp = calloc(f->no ? f->no : 1, sizeof *f->cmp);
    f->op_count = calloc(ll_op_count(), sizeof *f->op_count);
    if (!f->dims || !f->ins || !f->ref || !f->mag || !f->cand || !f->cmp || !f->op_count)
        return lm_err_set(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    if (o->dims)
        memcpy(f->dims, o->dims, nd * sizeof *f->dims);
    else
        ls_fuzz_default_dims(f->g, f->dims);
    f->mem_limit = o->mem_limit ? o->mem_limit : lm_mem_available() / 2;

    /* the front half (session.h): saturation and the space */
    cs_options co = {.rules_text = o->rules,
                     .rules_name = o->rules_name,
                     .log = o->log,
                     .skip_dtype_check = o->unchecked,
                     .report = &f->cs_rep};
    f->cs = cs_session_new(f->g, &co, f->err);
    r->sat = f->cs_rep.sat;
    r->sat_seconds = f->cs_rep.sat_seconds;
    r->space_seconds = f->cs_rep.space_seconds;
    r->rows = f->cs_rep.rows;
    r->engine_peak = f->cs_rep.engine_peak;
    if (!f->cs) return f->err->code;
    f->s = cs_session_space(f->cs);
    r->stats = f->cs_rep.stats;
    f->ns = ll_space_class_count(f->s);
    f->order = malloc((f->ns ? f->ns : 1) * sizeof *f->order);
    f->mark = malloc(f->ns ? f->ns : 1);
    if (!f->order || !f->mark) return lm_err_set(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");

    /* the reference, once */
    r->n_outputs = f->no;
    double tol[LS_FUZZ_MAX_TOL];
    double *tolp = f->no <= LS_FUZZ_MAX_TOL ? tol : calloc(f->no, sizeof *tolp);
    if (!tolp) return lm_err_set(f->err, LM_ENOMEM, NULL, "fuzz: out of memory");
    int rc = ll_output_tolerances(f->g, f->dims, tolp, f->err);
    for (uint32_t i = 0; !rc && i < f->no && i < LS_FUZZ_MAX_TOL; i++)
        r->tol[i] = tolp[i];
    if (tolp != tol) free(tolp);
    if (rc) return rc;
    if ((rc = hx_inputs(f->g, f->dims, o->seed, f->ins, f->err))) return rc;
    double t = lm_now_s();
    rc = hx_run(f->g, f->dims, f->ins, f->ref, f->mem_limit, f->err);
    if (!rc) rc = ll_output_magnitudes(f->g, f->dims, f->ins, f->mag, f->err);
    r->ref_seconds = lm_now_s() - t;
    for (uint32_t i = 0; !rc && i < f->no && i < LS_FUZZ_MAX_TOL; i++) {
        double a = rms(&f->ref[i]), b = rms(&f->mag[i]);
        r->spread[i] = a > 0 ? b / a : b > 0 ? INFINITY : 1.0;
    }
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
    keyset_fini(&f->seen);
    keyset_fini(&f->programs);
    free(f->ins);
    free(f->ref);
    free(f->mag);
    free(f->cand);
    free(f->cmp);
    free(f->op_count);
    free(f->dims);
    free(f->ldims);
    free(f->order);
    free(f->mark);
    cs_session_free(f->cs);
}

int ls_fuzz_graph(const hl_graph *g, const ls_fuzz_opts *o, const ls_fuzz_hooks *h,
                  ls_fuzz_result *r, lm_err *err)
{
    memset(r, 0, sizeof *r);
    if (!g || !o || !o->rules || o->n == 0)
        return lm_err_set(err, LM_EARG, NULL, "ls_fuzz_graph: no graph, rules or genomes");
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

/* ==================================================================================
 * The command: luminal_search --fuzz N
 * ================================================================================== */

typedef struct cli {
    const ls_opts *o;
    const hl_graph *g;
    const int64_t *dims;
    json_t *genomes, *failures; /* --json */
} cli;

static json_t *jnum(double v)
{
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static void print_ops(const ls_fuzz_case *c, FILE *out)
{
    fprintf(out, "  ops:");
    bool any = false;
    for (uint32_t op = 0; c->op_count && op < ll_op_count(); op++)
        if (c->op_count[op]) {
            fprintf(out, "%s %s %u", any ? "," : "", ll_op_get((ll_op)op)->name, c->op_count[op]);
            any = true;
        }
    fprintf(out, "%s\n", any ? "" : " (no LLIR graph was built)");
}

static json_t *ops_json(const ls_fuzz_case *c)
{
    json_t *ops = json_object();
    for (uint32_t op = 0; c->op_count && op < ll_op_count(); op++)
        if (c->op_count[op])
            json_object_set_new(ops, ll_op_get((ll_op)op)->name, json_integer(c->op_count[op]));
    return ops;
}

static const char *out_name(const hl_graph *g, uint32_t i)
{
    return hl_graph_node(g, hl_graph_output(g, i))->name;
}

static void on_case(void *ctx, const ls_fuzz_case *c, const hl_graph *g, const ll_space *s,
                    const ll_genome *gn, const ll_graph *lg)
{
    (void)s, (void)gn, (void)lg;
    cli *k = ctx;
    char hash[24], fp[40];
    snprintf(hash, sizeof hash, "%016" PRIx64, c->hash);
    snprintf(fp, sizeof fp, "%016" PRIx64 "%016" PRIx64, c->fp.hi, c->fp.lo);
    if (k->o->json) {
        json_array_append_new(k->genomes,
                              json_pack("{s:s, s:s, s:s?, s:s}", "hash", hash, "origin",
                                        ls_origin_name(c->origin), "fingerprint",
                                        c->built ? fp : NULL, "result", ls_stage_name(c->stage)));
    }
    if (c->stage == LS_PASSED) return;
    /* a disagreement: one entry per output outside its tolerance, or the error */
    bool listed = false;
    for (uint32_t i = 0; c->cmp && i < c->n_outputs; i++) {
        const ll_out_cmp *m = &c->cmp[i];
        if (m->n_bad == 0) continue;
        listed = true;
        if (k->o->json) {
            json_array_append_new(
                k->failures,
                json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                          "hash", hash, "origin", ls_origin_name(c->origin), "stage",
                          ls_stage_name(c->stage), "output", out_name(g, i), "first_bad",
                          (json_int_t)m->first_bad, "n_bad", (json_int_t)m->n_bad, "candidate",
                          jnum(m->cand), "reference", jnum(m->ref), "error", jnum(m->max_err),
                          "tolerance", jnum(m->tol), "rms", jnum(m->rms), "scale", jnum(m->scale),
                          "ops", ops_json(c)));
        } else {
            double d = fabs(m->cand - m->ref);
            printf("FAIL genome %s (%s, #%" PRIu64 "): output '%s': element %zu: candidate %.9g, "
                   "reference %.9g, %.3g RMS apart; error %.3g, tolerance %.3g, in units of the "
                   "element's scale (output RMS %.3g, scale %.3g; %zu elements outside)\n",
                   hash, ls_origin_name(c->origin), c->index, out_name(g, i), m->first_bad,
                   m->cand, m->ref, m->rms > 0 ? d / m->rms : INFINITY, m->max_err, m->tol,
                   m->rms, m->scale, m->n_bad);
        }
    }
    if (!listed) {
        if (k->o->json)
            json_array_append_new(k->failures, json_pack("{s:s, s:s, s:s, s:s, s:o}", "hash", hash,
                                                         "origin", ls_origin_name(c->origin),
                                                         "stage", ls_stage_name(c->stage),
                                                         "message", c->msg, "ops", ops_json(c)));
        else
            printf("FAIL genome %s (%s, #%" PRIu64 "): %s: %s\n", hash, ls_origin_name(c->origin),
                   c->index, ls_stage_name(c->stage), c->msg);
    }
    if (!k->o->json) print_ops(c, stdout);
    fflush(stdout);
}

/* The dims: small defaults, then --dim NAME=V. */
static int cli_dims(const hl_graph *g, const ls_opts *o, int64_t *vals)
{
    ls_fuzz_default_dims(g, vals);
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    for (uint32_t k = 0; k < o->n_dims; k++) {
        uint32_t i = 0;
        while (i < hl_graph_dim_count(g) &&
               strcmp(hl_var_name(p, hl_graph_dim_at(g, i)->var), o->dim_name[k]) != 0)
            i++;
        if (i == hl_graph_dim_count(g)) {
            fprintf(stderr, "luminal_search: --dim %s: the graph declares no dim of that name\n",
                    o->dim_name[k]);
            return -1;
        }
        const hl_dim *d = hl_graph_dim_at(g, i);
        if (o->dim_value[k] < d->lo || o->dim_value[k] > d->hi) {
            fprintf(stderr,
                    "luminal_search: --dim %s=%lld: outside the declared range [%lld, %lld]\n",
                    o->dim_name[k], (long long)o->dim_value[k], (long long)d->lo, (long long)d->hi);
            return -1;
        }
        vals[i] = o->dim_value[k];
    }
    return 0;
}

static void print_header(void *ctx, const ls_fuzz_result *r)
{
    cli *k = ctx;
    const ls_opts *o = k->o;
    if (o->json) return;
    const hl_graph *g = k->g;
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    printf("fuzz %s: %" PRIu64 " genomes, seed %" PRIu64 ", dims", o->graph, o->fuzz, o->seed);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
        printf(" %s=%lld", hl_var_name(p, hl_graph_dim_at(g, i)->var), (long long)k->dims[i]);
    printf("%s\n", hl_graph_dim_count(g) ? "" : " (none)");
    if (o->fuzz_no_verify)
        printf("unchecked: the e-graph dtype check and the LLIR verifier are off "
               "(--fuzz-no-verify, for tests)\n");
    const ll_space_stats *st = &r->stats;
    printf("space: %u classes, %u searchable, %u reachable, %u decisions, %" PRIu64
           " choices, log2 programs %.1f\n",
           st->classes, st->searchable, st->reachable, st->decisions, st->choices,
           st->log2_programs);
    for (uint32_t i = 0; i < r->n_outputs && i < LS_FUZZ_MAX_TOL; i++) {
        const hl_node *n = hl_graph_node(g, hl_graph_output(g, i));
        printf("output %u '%s' %s: tolerance %.3g of its scale (the scale is %.3g times its "
               "RMS)\n",
               i, n->name, hl_dtype_name(n->dtype), r->tol[i], r->spread[i]);
    }
    fflush(stdout);
}

static int print_json(const cli *k, const ls_fuzz_result *r)
{
    const hl_graph *g = k->g;
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    json_t *dims = json_object(), *tols = json_array();
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
        json_object_set_new(dims, hl_var_name(p, hl_graph_dim_at(g, i)->var),
                            json_integer(k->dims[i]));
    for (uint32_t i = 0; i < r->n_outputs && i < LS_FUZZ_MAX_TOL; i++)
        json_array_append_new(tols,
                              json_pack("{s:s, s:o, s:o}", "output", out_name(g, i), "tolerance",
                                        jnum(r->tol[i]), "scale_over_rms", jnum(r->spread[i])));
    const ll_space_stats *st = &r->stats;
    json_t *space = json_pack("{s:i, s:i, s:i, s:i, s:I, s:o}", "classes", (int)st->classes,
                              "searchable", (int)st->searchable, "reachable", (int)st->reachable,
                              "decisions", (int)st->decisions, "choices", (json_int_t)st->choices,
                              "log2_programs", jnum(st->log2_programs));
    json_t *from = json_object();
    for (int i = 0; i < LS_FROM_COUNT; i++)
        json_object_set_new(from, ls_origin_name((ls_origin)i),
                            json_integer((json_int_t)r->from[i]));
    json_t *doc = json_pack(
        "{s:s, s:I, s:I, s:b, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:b, s:o, s:o}", "graph",
        k->o->graph, "seed", (json_int_t)k->o->seed, "asked", (json_int_t)k->o->fuzz, "unchecked",
        k->o->fuzz_no_verify, "dims", dims, "space", space, "tolerances", tols, "from", from,
        "checked", (json_int_t)r->checked, "passed", (json_int_t)r->passed, "failed",
        (json_int_t)r->failed, "programs", (json_int_t)r->programs, "exhausted", r->exhausted,
        "genomes", k->genomes, "failures", k->failures);
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(doc);
    if (!text) {
        fprintf(stderr, "luminal_search: --fuzz: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

int ls_fuzz(const hl_graph *g, const ls_opts *o)
{
    lm_err err = {0};
    char *own = NULL;
    const char *rules = cs_rules_builtin(), *name = cs_rules_builtin_name();
    if (o->rules) {
        own = lm_read_text(o->rules, CS_RULES_MAX_BYTES, NULL, &err);
        if (!own) {
            fprintf(stderr, "luminal_search: --fuzz: %s\n", err.msg);
            return 1;
        }
        rules = own;
        name = o->rules;
    }
    uint32_t nd = hl_graph_dim_count(g);
    int64_t *dims = calloc(nd ? nd : 1, sizeof *dims);
    if (!dims || cli_dims(g, o, dims) != 0) {
        if (!dims) fprintf(stderr, "luminal_search: --fuzz: out of memory\n");
        free(dims);
        free(own);
        return 1;
    }
    ls_fuzz_opts fo = {.n = o->fuzz,
                       .seed = o->seed,
                       .dims = dims,
                       .rules = rules,
                       .rules_name = name,
                       .unchecked = o->fuzz_no_verify,
                       .mem_limit = o->mem_limit,
                       .log = o->quiet ? NULL : stderr};
    cli k = {.o = o, .g = g, .dims = dims};
    if (o->json) {
        k.genomes = json_array();
        k.failures = json_array();
    }
    ls_fuzz_hooks h = {.ctx = &k, .ready = print_header, .each = on_case};
    ls_fuzz_result r;
    int rc = ls_fuzz_graph(g, &fo, &h, &r, &err);
    int status = 1;
    if (rc) {
        fprintf(stderr, "luminal_search: --fuzz: %s\n", err.msg);
        json_decref(k.genomes);
        json_decref(k.failures);
    } else {
        bool enough = r.checked == o->fuzz || r.exhausted;
        status = r.failed == 0 && enough ? 0 : 1;
        if (o->json) {
            if (print_json(&k, &r)) status = 1;
        } else {
            if (r.exhausted && r.checked < o->fuzz)
                printf("space exhausted: only %" PRIu64 " distinct valid genomes exist (%" PRIu64
                       " asked); every one was checked\n",
                       r.checked, o->fuzz);
            else if (!enough)
                printf("only %" PRIu64 " distinct valid genomes found (%" PRIu64
                       " asked) in %" PRIu64 " draws, and the enumeration of the space stopped "
                       "before its end\n",
                       r.checked, o->fuzz, r.draws);
            printf("%" PRIu64 " distinct programs; genomes by origin:", r.programs);
            for (int i = 0; i < LS_FROM_COUNT; i++)
                printf("%s %s %" PRIu64, i ? "," : "", ls_origin_name((ls_origin)i), r.from[i]);
            printf("\n%" PRIu64 " passed, %" PRIu64 " failed\n", r.passed, r.failed);
        }
        if (!o->quiet)
            fprintf(stderr,
                    "luminal_search: --fuzz: %" PRIu64 " genomes in %.2f s: %.0f genomes/s "
                    "(saturation %.3f s, space %.3f s, reference %.3f s)\n",
                    r.checked, r.seconds, r.seconds > 0 ? (double)r.checked / r.seconds : 0.0,
                    r.sat_seconds, r.space_seconds, r.ref_seconds);
    }
    free(dims);
    free(own);
    return status;
}
