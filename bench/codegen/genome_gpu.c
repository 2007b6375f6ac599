/* genome_gpu.c - the GPU genome checker: every genome drawn from an example's search space,
 * generated into CUDA, run on the GPU and compared with the reference runtime.
 *
 * For each graph file: the built-in rules (session.h) saturate its e-graph
 * and the search space is built; genomes are drawn as genome fuzzing begins (fuzz.h):
 * the most fused, the least fused, then random draws, canonicalized, each distinct one
 * taken; each is built into LLIR (ll_graph_from_genome, verified), planned by
 * codegen (cg_plan_new), opened as a program (pg_program_new, PG_BACKEND_GPU, or the CPU
 * backend with --cpu), run at each dim setting on seeded inputs (hl_graph_fill_input) and
 * every output compared with the reference runtime (hl_run on the CPU, once per setting)
 * by llir's comparison with magnitudes (ll_compare_outputs_scaled).
 *
 * Dim settings: "small", every dim at min(max(lo, 3), hi) (fz_default_dims), and
 * "large": from the profile values, the largest dims halved until the graph's element work
 * (the sum over its nodes of their element counts, about what the reference computes) is at
 * most --work (default 2^26), never below the small value. One program runs both settings
 * (the dims are dynamic; its buckets span [lo, the larger value], so the arena is sized
 * for what runs).
 *
 * Robustness: each example runs in a child process (the parent never touches CUDA), so a
 * kernel fault, which poisons CUDA for the process's life, costs only that child: the
 * parent reruns the faulting genome alone in stepwise mode (so the error names the kernel)
 * and then resumes the example after it. Every failure (codegen, opening, running, a
 * disagreement, a fault, a timeout) is printed with the example, the genome and the
 * setting, and the next genome goes on.
 *
 * Output: per example a header, a FAIL line per failure, then
 *   example NAME: G genomes, P passed, F failed (dims small A=3, large A=256)
 * and last `total: G genomes, P passed, F failed over E examples`. Exit 0 when nothing
 * failed, 1 on any failure, 77 without a GPU (or, for --compile-check, without NVRTC), 2 on
 * bad usage.
 *
 * --compile-check: no GPU and no runs; every distinct kernel source of every genome's plan
 * compiled with NVRTC for sm_90 (pg_compile_check): the CI test genome_compile
 * (bench/codegen/CMakeLists.txt). docs/codegen.md, "The GPU genome checker", says how to run it.
 */
#include "codegen.h"
#include "cuda_rt.h"
#include "hlir.h"
#include "egraph.h"
#include "llir.h"
#include "fuzz.h"
#include "session.h"
#include "program.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GG_MAX_DIMS 16
#define GG_MAX_IO 64
#define GG_SETTINGS 2
#define GG_EXIT_NOGPU 77
#define GG_CHILD_FAULT 3 /* a child's exit status: CUDA poisoned at genome `stop` */

typedef struct gg_opts {
    uint64_t n;            /* genomes per example */
    uint64_t seed;
    bool cpu;              /* the CPU backend */
    bool one;              /* one genome (the most fused) per example */
    bool large;            /* run the large setting too */
    double work;           /* element work bound of the large setting */
    bool compile_check;    /* NVRTC only */
    uint32_t arch;         /* --compile-check's architecture */
    uint64_t kernel_budget; /* --compile-check: no random draw after this many sources (0: none) */
    double budget_s;        /* per graph: no new draw after this many seconds (0: none) */
    double timeout_s;      /* per example child */
    bool verbose;
    bool dump;             /* every genome's plan with its CUDA sources (cg_plan_fprint) */
} gg_opts;

/* What a child reports to the parent through a pipe. */
typedef struct gg_report {
    uint64_t genomes, passed, failed;
    uint64_t kernels, compiled; /* --compile-check: kernels seen, distinct sources compiled */
    uint64_t skipped;           /* --compile-check: genomes left out for the kernel budget */
    bool out_of_time;           /* --budget-s stopped the draws */
    uint64_t stop;              /* GG_CHILD_FAULT: the genome whose run poisoned CUDA */
    int status;                 /* 0 ran, GG_CHILD_FAULT, 1 setup failed */
    char setup_msg[LM_ERR_MSG];
    double seconds;
} gg_report;

/* One dim setting of an example: dims, inputs, the reference and its magnitudes. */
typedef struct gg_setting {
    const char *name;
    int64_t dims[GG_MAX_DIMS];
    hl_tensor ins[GG_MAX_IO], ref[GG_MAX_IO], mag[GG_MAX_IO];
    bool ready;
} gg_setting;

/* Distinct kernel sources (--compile-check): open addressing over 64-bit FNV-1a hashes,
 * confirmed by comparing the text. */
typedef struct gg_srcset {
    char **src;
    uint64_t *hash;
    size_t cap, n;
} gg_srcset;

typedef struct gg_child {
    const gg_opts *o;
    const char *path, *name;
    hl_graph *g;
    uint32_t nd;
    gg_setting set[GG_SETTINGS];
    uint32_t n_set;
    uint64_t start;     /* genomes before this index are skipped (a resumed child) */
    uint64_t only;      /* UINT64_MAX, or the one genome to run */
    bool stepwise;      /* run it stepwise (naming a faulting kernel) */
    gg_report *r;
    bool poisoned;      /* CUDA is unusable: stop running genomes */
    gg_srcset seen;
    double t0; /* when the draws started (after the references) */
} gg_child;

/* ==================================================================================
 * Dims, inputs, references
 * ================================================================================== */

static const char *dim_name(const hl_graph *g, uint32_t i)
{
    return hl_var_name(hl_graph_exprs_c(g), hl_graph_dim_at(g, i)->var);
}

static void dims_env(const hl_graph *g, const int64_t *dims, int64_t *byvar, bool *bound,
                     uint32_t nvar)
{
    for (uint32_t v = 0; v < nvar; v++)
        byvar[v] = 0, bound[v] = false;
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        if (d->var < nvar) byvar[d->var] = dims[i], bound[d->var] = true;
    }
}

/* The element work of g at dims: the sum of every node's element count (a matmul's
 * broadcast product counts M*K*N), about what the reference runtime computes. */
static double graph_work(const hl_graph *g, const int64_t *dims)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvar = hl_var_count(p);
    int64_t byvar[256];
    bool bound[256];
    if (nvar > 256) return INFINITY;
    dims_env(g, dims, byvar, bound, nvar);
    hl_env env = {byvar, bound, nvar};
    double w = 0;
    for (uint32_t n = 0; n < hl_graph_node_count(g); n++) {
        const hl_node *x = hl_graph_node(g, n);
        double e = 1;
        for (uint32_t d = 0; d < x->ndim; d++) {
            int64_t v = 0;
            lm_err err = {0};
            if (hl_e_eval(p, x->shape[d], &env, 0, &v, &err) != 0) return INFINITY;
            e *= (double)v;
        }
        w += e;
    }
    return w;
}

/* The large setting: the profile values, the largest dim halved (never below the small
 * value) until the work is at most `work`. */
static void large_dims(const hl_graph *g, const int64_t *small, double work, int64_t *dims)
{
    uint32_t nd = hl_graph_dim_count(g);
    for (uint32_t i = 0; i < nd; i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        dims[i] = d->profile < small[i] ? small[i] : d->profile;
        if (dims[i] > d->hi) dims[i] = d->hi;
    }
    while (graph_work(g, dims) > work) {
        uint32_t big = LM_NONE;
        for (uint32_t i = 0; i < nd; i++)
            if (dims[i] / 2 >= small[i] && (big == LM_NONE || dims[i] > dims[big])) big = i;
        if (big == LM_NONE) break;
        dims[big] /= 2;
    }
}

static int make_inputs(const hl_graph *g, const int64_t *dims, uint64_t seed, hl_tensor *ins,
                       lm_err *err)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvar = hl_var_count(p);
    int64_t byvar[256];
    bool bound[256];
    if (nvar > 256) return lm_err_set(err, LM_ELIMIT, NULL, "more than 256 variables");
    dims_env(g, dims, byvar, bound, nvar);
    hl_env env = {byvar, bound, nvar};
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        const hl_node *in = hl_graph_node(g, hl_graph_input(g, i));
        int64_t shape[HL_MAX_DIMS];
        lm_err he = {0};
        bool ok = true;
        for (uint32_t d = 0; ok && d < in->ndim; d++)
            ok = hl_e_eval(p, in->shape[d], &env, 0, &shape[d], &he) == 0;
        if (ok) ok = hl_tensor_init(&ins[i], in->dtype, in->ndim, shape, &he) == 0;
        if (ok) ok = hl_graph_fill_input(g, i, &ins[i], seed, &he) == 0;
        if (!ok) {
            lm_err_prefix(&he, "input '%s'", in->name);
            lm_err_copy(err, &he);
            return he.code;
        }
    }
    return LM_OK;
}

static void setting_fini(gg_setting *s, const hl_graph *g)
{
    for (uint32_t i = 0; i < hl_graph_input_count(g) && i < GG_MAX_IO; i++)
        hl_tensor_fini(&s->ins[i]);
    for (uint32_t i = 0; i < hl_graph_output_count(g) && i < GG_MAX_IO; i++) {
        hl_tensor_fini(&s->ref[i]);
        hl_tensor_fini(&s->mag[i]);
    }
    s->ready = false;
}

static int setting_prepare(gg_setting *s, const hl_graph *g, uint64_t seed, lm_err *err)
{
    int rc = make_inputs(g, s->dims, seed, s->ins, err);
    lm_err he = {0};
    hl_run_opts ro = {0};
    if (!rc && hl_run(g, s->dims, s->ins, s->ref, &ro, &he) != 0) {
        lm_err_prefix(&he, "the reference run");
        lm_err_copy(err, &he);
        rc = he.code;
    }
    if (!rc) rc = ll_output_magnitudes(g, s->dims, s->ins, s->mag, err);
    s->ready = rc == 0;
    return rc;
}

static void print_dims(const hl_graph *g, const int64_t *dims, FILE *f)
{
    if (!hl_graph_dim_count(g)) fprintf(f, " (no dims)");
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
        fprintf(f, " %s=%lld", dim_name(g, i), (long long)dims[i]);
}

/* ==================================================================================
 * One genome on the GPU (or the CPU backend)
 * ================================================================================== */

static void fail_line(gg_child *c, const fz_case *k, const char *setting, const char *what,
                      const char *msg)
{
    printf("FAIL %s genome %016" PRIx64 " (%s, #%" PRIu64 ")%s%s: %s: %s\n", c->name, k->hash,
           fz_origin_name(k->origin), k->index, setting ? " at " : "", setting ? setting : "",
           what, msg);
    fflush(stdout);
}

/* Runs program p at setting s and compares its outputs; false (printed) on a failure. */
static bool run_setting(gg_child *c, const fz_case *k, pg_program *p, gg_setting *s)
{
    const hl_graph *g = c->g;
    lm_err e = {0};
    for (uint32_t j = 0; j < pg_program_dim_count(p) && !e.code; j++) {
        const char *dn = pg_program_dim_name(p, j);
        uint32_t i = 0;
        while (i < c->nd && strcmp(dim_name(g, i), dn) != 0)
            i++;
        if (i == c->nd)
            lm_err_set(&e, LM_EDIM, NULL, "the program has a dim '%s' the graph does not declare",
                       dn);
        else
            pg_program_set_dim(p, dn, s->dims[i], &e);
    }
    for (uint32_t i = 0; i < hl_graph_input_count(g) && !e.code; i++)
        pg_program_set_input(p, i, s->ins[i].data, s->ins[i].numel * hl_dtype_size(s->ins[i].dtype),
                             &e);
    if (!e.code) pg_program_run(p, &e);
    if (e.code) {
        if (e.code == LM_EFAULT) c->poisoned = true;
        fail_line(c, k, s->name, "run", e.msg);
        return false;
    }
    uint32_t no = hl_graph_output_count(g);
    hl_tensor cand[GG_MAX_IO];
    memset(cand, 0, sizeof cand);
    for (uint32_t i = 0; i < no && !e.code; i++) {
        pg_tensor_info info;
        const void *data = NULL;
        if (pg_program_output_info(p, i, &info, &e) || pg_program_output(p, i, &data, NULL, &e))
            break;
        cand[i].dtype = s->ref[i].dtype;
        cand[i].ndim = info.ndim;
        for (uint32_t d = 0; d < info.ndim && d < HL_MAX_DIMS; d++)
            cand[i].dims[d] = info.dims[d];
        cand[i].numel = (size_t)info.numel;
        cand[i].data = (void *)data;
    }
    if (e.code) {
        fail_line(c, k, s->name, "reading the outputs", e.msg);
        return false;
    }
    ll_out_cmp cmp[GG_MAX_IO];
    memset(cmp, 0, sizeof cmp);
    if (ll_compare_outputs_scaled(g, s->dims, cand, s->ref, s->mag, cmp, &e) == 0) return true;
    bool listed = false;
    for (uint32_t i = 0; i < no; i++) {
        const ll_out_cmp *m = &cmp[i];
        if (!m->n_bad) continue;
        char msg[640];
        snprintf(msg, sizeof msg,
                 "output '%s': element %zu: program %.9g, reference %.9g; error %.3g, "
                 "tolerance %.3g (units of the element's scale; output RMS %.3g, scale %.3g; "
                 "%zu elements outside)",
                 hl_graph_node(g, hl_graph_output(g, i))->name, m->first_bad, m->cand, m->ref,
                 m->max_err, m->tol, m->rms, m->scale, m->n_bad);
        fail_line(c, k, s->name, "compare", msg);
        listed = true;
    }
    if (!listed) fail_line(c, k, s->name, "compare", e.msg);
    return false;
}

/* Program options with buckets spanning [lo, the largest value the settings use]. */
static void program_opts(gg_child *c, const ll_graph *lg, pg_options *o, pg_dim_buckets *db,
                         pg_bucket *bk, char *name, size_t name_size, uint64_t index)
{
    pg_options_default(o);
    o->backend = c->o->cpu ? PG_BACKEND_CPU : PG_BACKEND_GPU;
    o->stepwise = c->stepwise;
    o->compile_threads = 0;
    snprintf(name, name_size, "%s#%" PRIu64, c->name, index);
    o->name = name;
    uint32_t nb = 0;
    for (uint32_t i = 0; i < c->nd && nb < GG_MAX_DIMS; i++) {
        bool used = false;
        for (uint32_t j = 0; j < ll_graph_dim_count(lg) && !used; j++)
            used = strcmp(ll_graph_dim_name(lg, j), dim_name(c->g, i)) == 0;
        if (!used) continue;
        const hl_dim *d = hl_graph_dim_at(c->g, i);
        int64_t hi = d->lo;
        for (uint32_t s = 0; s < c->n_set; s++)
            if (c->set[s].dims[i] > hi) hi = c->set[s].dims[i];
        bk[nb] = (pg_bucket){d->lo, hi};
        db[nb] = (pg_dim_buckets){dim_name(c->g, i), 1, &bk[nb]};
        nb++;
    }
    o->n_buckets = nb;
    o->buckets = nb ? db : NULL;
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* 1 when src is new (added), 0 when seen, -1 out of memory. */
static int srcset_add(gg_srcset *s, const char *src)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        char **ns = calloc(cap, sizeof *ns);
        uint64_t *nh = calloc(cap, sizeof *nh);
        if (!ns || !nh) {
            free(ns);
            free(nh);
            return -1;
        }
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->src[i]) continue;
            size_t j = s->hash[i] & (cap - 1);
            while (ns[j])
                j = (j + 1) & (cap - 1);
            ns[j] = s->src[i], nh[j] = s->hash[i];
        }
        free(s->src);
        free(s->hash);
        s->src = ns, s->hash = nh, s->cap = cap;
    }
    uint64_t h = fnv(src);
    size_t j = h & (s->cap - 1);
    for (; s->src[j]; j = (j + 1) & (s->cap - 1))
        if (s->hash[j] == h && strcmp(s->src[j], src) == 0) return 0;
    size_t len = strlen(src) + 1;
    if (!(s->src[j] = malloc(len))) return -1;
    memcpy(s->src[j], src, len);
    s->hash[j] = h;
    s->n++;
    return 1;
}

static void srcset_fini(gg_srcset *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->src[i]);
    free(s->src);
    free(s->hash);
    memset(s, 0, sizeof *s);
}

/* --compile-check: the plan's kernels through NVRTC when any source is new. */
static bool srcset_has(const gg_srcset *s, const char *src)
{
    if (!s->cap) return false;
    uint64_t h = fnv(src);
    for (size_t j = h & (s->cap - 1); s->src[j]; j = (j + 1) & (s->cap - 1))
        if (s->hash[j] == h && strcmp(s->src[j], src) == 0) return true;
    return false;
}

/* --compile-check: the plan's kernels through NVRTC when any source is new. After the
 * child's first genome, a genome whose new sources would take the graph past
 * --kernel-budget is skipped (*skipped), not compiled. */
static bool compile_genome(gg_child *c, const fz_case *k, const cg_plan *plan, bool *skipped)
{
    uint64_t fresh = 0;
    for (uint32_t i = 0; i < plan->n_kernels; i++)
        fresh += !srcset_has(&c->seen, plan->kernels[i].source);
    if (c->o->kernel_budget && c->r->passed + c->r->failed > 0 &&
        c->r->compiled + fresh > c->o->kernel_budget) {
        *skipped = true;
        return true;
    }
    bool any = false;
    for (uint32_t i = 0; i < plan->n_kernels; i++) {
        int added = srcset_add(&c->seen, plan->kernels[i].source);
        if (added < 0) {
            fail_line(c, k, NULL, "compile check", "out of memory");
            return false;
        }
        any |= added == 1;
        c->r->compiled += (uint64_t)added;
    }
    c->r->kernels += plan->n_kernels;
    if (!any) return true;
    lm_err e = {0};
    if (pg_compile_check(plan, (int)c->o->arch, &e) == 0) return true;
    fail_line(c, k, NULL, "NVRTC", e.msg);
    return false;
}

static bool check_genome(gg_child *c, const fz_case *k, const ll_graph *lg, bool *skipped)
{
    bool ok = true;
    lm_err e = {0};
    cg_plan *plan = cg_plan_new(lg, NULL, &e);
    if (!plan) {
        fail_line(c, k, NULL, "codegen", e.msg);
        return false;
    }
    if (c->o->dump) {
        printf("  %s genome %016" PRIx64 " (%s, #%" PRIu64 "):\n", c->name, k->hash,
               fz_origin_name(k->origin), k->index);
        cg_plan_fprint(plan, true, stdout);
        fflush(stdout);
    }
    if (c->o->compile_check) {
        ok &= compile_genome(c, k, plan, skipped);
        cg_plan_free(plan);
        return ok;
    }
    pg_options o;
    pg_dim_buckets db[GG_MAX_DIMS];
    pg_bucket bk[GG_MAX_DIMS];
    char name[160];
    program_opts(c, lg, &o, db, bk, name, sizeof name, k->index);
    double t_open = lm_now_s();
    pg_program *p = pg_program_new(plan, lg, &o, &e);
    t_open = lm_now_s() - t_open;
    if (!p) {
        if (e.code == LM_EFAULT) c->poisoned = true;
        fail_line(c, k, NULL, "opening the program", e.msg);
        cg_plan_free(plan);
        return false;
    }
    if (c->o->verbose) {
        printf("  %s genome %016" PRIx64 " (%s, #%" PRIu64 "): %u kernels, %u library calls; %s; "
               "opened in %.2f s",
               c->name, k->hash, fz_origin_name(k->origin), k->index, plan->n_kernels,
               plan->n_blas, pg_program_backend_note(p), t_open);
        fflush(stdout);
    }
    for (uint32_t s = 0; s < c->n_set && !c->poisoned; s++) {
        double t = lm_now_s();
        ok &= run_setting(c, k, p, &c->set[s]);
        if (c->o->verbose) {
            printf(", %s %.2f s", c->set[s].name, lm_now_s() - t);
            fflush(stdout);
        }
    }
    if (c->o->verbose) printf("\n");
    pg_program_free(p);
    cg_plan_free(plan);
    return ok;
}

/* One canonical genome, new or not: built into LLIR (verified) and checked. */
static int offer(gg_child *c, const ll_space *sp, ll_genome *gn, fz_origin origin, uint64_t **seenp,
                 uint64_t *n_seen, bool *fresh, lm_err *err)
{
    *fresh = false;
    int rc = ll_genome_canonicalize(gn, sp, err);
    if (rc) return rc;
    uint64_t *seen = *seenp;
    for (uint64_t i = 0; i < *n_seen; i++)
        if (seen[i] == gn->hash) return LM_OK;
    if ((*n_seen & (*n_seen - 1)) == 0 && *n_seen >= 64) { /* full at powers of two */
        uint64_t *more = realloc(seen, 2 * *n_seen * sizeof *seen);
        if (!more) return lm_err_set(err, LM_ENOMEM, NULL, "out of memory");
        *seenp = seen = more;
    }
    seen[(*n_seen)++] = gn->hash;
    *fresh = true;
    fz_case k = {.index = *n_seen - 1, .hash = gn->hash, .origin = origin, .msg = ""};
    if (c->poisoned || k.index < c->start || (c->only != UINT64_MAX && k.index != c->only))
        return LM_OK;
    c->r->genomes++;
    lm_err ge = {0};
    ll_graph *lg = ll_graph_from_genome(sp, gn, &ge);
    bool ok, skipped = false;
    if (!lg) {
        k.stage = FZ_BUILD;
        fail_line(c, &k, NULL, "building the LLIR (ll_graph_from_genome)", ge.msg);
        ok = false;
    } else {
        ok = check_genome(c, &k, lg, &skipped);
    }
    ll_graph_free(lg);
    if (skipped) {
        c->r->genomes--;
        c->r->skipped++;
        *fresh = false; /* for the stall count: over budget is no progress */
    } else if (ok)
        c->r->passed++;
    else
        c->r->failed++;
    if (c->poisoned) c->r->stop = k.index;
    return LM_OK;
}

/* The example's genomes: saturated with the built-in rules, the space built, then the most
 * fused, the library, the fused-stored (the search's seeds), the least fused and random
 * draws (ll_genome_random from PCG32 seeded by the
 * seed), canonicalized, each distinct one checked, until n are, or GG_STALL draws in a row
 * gave nothing new (the space is then taken to hold no more: *exhausted). */
#define GG_STALL 512
static int draw_genomes(gg_child *c, uint64_t n, bool *exhausted, lm_err *err)
{
    *exhausted = false;
    cs_session *cs = cs_session_new(c->g, NULL, err); /* the built-in rules, silent */
    if (!cs) return err->code;
    const ll_space *sp = cs_session_space(cs);
    uint64_t *seen = calloc(64, sizeof *seen), n_seen = 0;
    ll_genome gn = {0};
    int rc = seen ? LM_OK : lm_err_set(err, LM_ENOMEM, NULL, "out of memory");
    if (!rc) rc = ll_genome_init(&gn, sp, err);
    bool fresh;
    if (!rc) rc = ll_genome_most_fused(&gn, sp, err);
    if (!rc) rc = offer(c, sp, &gn, FZ_FROM_MOST_FUSED, &seen, &n_seen, &fresh, err);
    /* the search's other seeds (docs/search.md): what it measures first */
    if (!rc && n_seen < n) rc = ll_genome_library(&gn, sp, err);
    if (!rc && n_seen < n) rc = offer(c, sp, &gn, FZ_FROM_LIBRARY, &seen, &n_seen, &fresh, err);
    if (!rc && n_seen < n) rc = ll_genome_fused_stored(&gn, sp, err);
    if (!rc && n_seen < n) rc = offer(c, sp, &gn, FZ_FROM_FUSED_STORED, &seen, &n_seen, &fresh, err);
    /* --compile-check leaves the least fused genome out: it is the reference lowering's
     * standalone kernels, which test_program_codegen compiles */
    if (!rc && n_seen < n && !c->o->compile_check) rc = ll_genome_least_fused(&gn, sp, err);
    if (!rc && n_seen < n && !c->o->compile_check)
        rc = offer(c, sp, &gn, FZ_FROM_LEAST_FUSED, &seen, &n_seen, &fresh, err);
    lm_pcg32 rng;
    lm_pcg_seed(&rng, c->o->seed, 0x67656e6f6d65ull);
    /* --compile-check's budget: random draws stop once that many sources are compiled */
    uint64_t budget = c->o->compile_check && c->o->kernel_budget ? c->o->kernel_budget : UINT64_MAX;
    /* genomes left out for the kernel budget do not count towards n */
    for (uint64_t stall = 0; !rc && n_seen - c->r->skipped < n && !c->poisoned &&
                             c->r->compiled < budget;) {
        if (c->o->budget_s > 0 && lm_now_s() - c->t0 > c->o->budget_s) {
            c->r->out_of_time = true;
            break;
        }
        rc = ll_genome_random(&gn, sp, &rng, err);
        if (!rc) rc = offer(c, sp, &gn, FZ_FROM_RANDOM, &seen, &n_seen, &fresh, err);
        stall = fresh ? 0 : stall + 1;
        if (c->o->compile_check && c->o->kernel_budget && stall > 32) break; /* over budget */
        if (stall > GG_STALL) {
            *exhausted = true;
            break;
        }
    }
    ll_genome_fini(&gn);
    free(seen);
    cs_session_free(cs);
    return rc;
}

/* ==================================================================================
 * The child: one example (or its rest, or one genome of it)
 * ================================================================================== */

static int child_setup(gg_child *c, lm_err *err)
{
    lm_err he = {0};
    c->g = hl_graph_load_json(c->path, &he);
    if (!c->g) {
        lm_err_copy(err, &he);
        return he.code ? he.code : LM_EIO;
    }
    c->nd = hl_graph_dim_count(c->g);
    if (c->nd > GG_MAX_DIMS || hl_graph_input_count(c->g) > GG_MAX_IO ||
        hl_graph_output_count(c->g) > GG_MAX_IO)
        return lm_err_set(err, LM_ELIMIT, NULL, "more than %d dims or %d inputs or outputs",
                          GG_MAX_DIMS, GG_MAX_IO);
    c->set[0].name = "small";
    fz_default_dims(c->g, c->set[0].dims);
    c->n_set = 1;
    if (c->o->large && !c->o->compile_check && c->nd) {
        c->set[1].name = "large";
        large_dims(c->g, c->set[0].dims, c->o->work, c->set[1].dims);
        if (memcmp(c->set[1].dims, c->set[0].dims, c->nd * sizeof(int64_t)) != 0) c->n_set = 2;
    }
    if (c->o->compile_check) return LM_OK;
    for (uint32_t s = 0; s < c->n_set; s++) {
        int rc = setting_prepare(&c->set[s], c->g, c->o->seed, err);
        if (rc) {
            lm_err_prefix(err, "%s dims", c->set[s].name);
            return rc;
        }
    }
    return LM_OK;
}

static void child_run(gg_child *c)
{
    double t0 = lm_now_s();
    lm_err err = {0};
    int rc = child_setup(c, &err);
    c->t0 = lm_now_s(); /* --budget-s counts the draws, not the references */
    if (c->o->verbose) {
        printf("  %s: set up (saturation, space, references) in %.2f s\n", c->name, c->t0 - t0);
        fflush(stdout);
    }
    if (!rc) {
        uint64_t n = c->o->one ? 1 : c->o->n;
        bool exhausted = false;
        rc = draw_genomes(c, n, &exhausted, &err);
        if (!rc && exhausted && c->only == UINT64_MAX)
            printf("  %s: only %" PRIu64 " distinct valid genomes found (%" PRIu64 " asked; %d "
                   "draws in a row gave no new one)\n",
                   c->name, c->r->genomes + c->start, n, GG_STALL);
    }
    if (rc) {
        c->r->status = 1;
        snprintf(c->r->setup_msg, sizeof c->r->setup_msg, "%s", err.msg);
    } else if (c->poisoned) {
        c->r->status = GG_CHILD_FAULT;
    }
    for (uint32_t s = 0; s < c->n_set; s++)
        if (c->g) setting_fini(&c->set[s], c->g);
    srcset_fini(&c->seen);
    hl_graph_free(c->g);
    c->r->seconds = lm_now_s() - t0;
}

/* Forks a child for (path, start, only, stepwise); fills *r. false when the child died
 * or timed out (r->setup_msg says how). */
static bool run_child(const gg_opts *o, const char *path, const char *name, uint64_t start,
                      uint64_t only, bool stepwise, gg_report *r)
{
    memset(r, 0, sizeof *r);
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(r->setup_msg, sizeof r->setup_msg, "pipe: %s", strerror(errno));
        return false;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->setup_msg, sizeof r->setup_msg, "fork: %s", strerror(errno));
        close(fd[0]), close(fd[1]);
        return false;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a killed parent (a timeout) takes the child along */
        close(fd[0]);
        gg_report cr = {0};
        gg_child c = {.o = o, .path = path, .name = name, .start = start, .only = only,
                      .stepwise = stepwise, .r = &cr};
        child_run(&c);
        fflush(stdout);
        ssize_t w = write(fd[1], &cr, sizeof cr);
        _exit(w == (ssize_t)sizeof cr ? 0 : 1);
    }
    close(fd[1]);
    /* wait, with a deadline */
    double t0 = lm_now_s();
    int status = 0;
    bool done = false, timed_out = false;
    while (!done) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            done = true;
        } else if (w < 0 && errno != EINTR) {
            break;
        } else if (lm_now_s() - t0 > o->timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            timed_out = done = true;
        } else {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    ssize_t got = 0;
    if (done && !timed_out) got = read(fd[0], r, sizeof *r);
    close(fd[0]);
    if (timed_out) {
        snprintf(r->setup_msg, sizeof r->setup_msg, "timed out after %.0f s (killed)",
                 o->timeout_s);
        return false;
    }
    if (done && got == (ssize_t)sizeof *r && WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        /* the report came, then the process ended badly: compute-sanitizer's
         * --error-exitcode does that when it found errors */
        snprintf(r->setup_msg, sizeof r->setup_msg,
                 "the child exited with status %d after its report (a compute-sanitizer "
                 "error?)",
                 WEXITSTATUS(status));
        return false;
    }
    if (!done || got != (ssize_t)sizeof *r || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        memset(r, 0, sizeof *r);
        if (done && WIFSIGNALED(status))
            snprintf(r->setup_msg, sizeof r->setup_msg, "the child died of signal %d",
                     WTERMSIG(status));
        else
            snprintf(r->setup_msg, sizeof r->setup_msg, "the child ended without a report");
        return false;
    }
    return true;
}

/* One example: children until every genome ran, rerunning a faulting genome stepwise. */
static void run_example(const gg_opts *o, const char *path, gg_report *tot)
{
    const char *slash = strrchr(path, '/');
    char name[256];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : path);
    char *dot = strstr(name, ".json");
    if (dot) *dot = 0;
    printf("== %s\n", name);
    fflush(stdout);
    gg_report ex = {0};
    uint64_t start = 0;
    for (;;) {
        gg_report r;
        bool ok = run_child(o, path, name, start, UINT64_MAX, false, &r);
        ex.genomes += r.genomes, ex.passed += r.passed, ex.failed += r.failed;
        ex.kernels += r.kernels, ex.compiled += r.compiled, ex.skipped += r.skipped;
        ex.out_of_time |= r.out_of_time;
        ex.seconds += r.seconds;
        if (!ok || r.status == 1) {
            printf("FAIL %s: %s\n", name, r.setup_msg);
            ex.failed++;
            break;
        }
        if (r.status != GG_CHILD_FAULT) break;
        /* CUDA was poisoned at genome r.stop: rerun it alone, stepwise, to name the kernel
         * (its result is printed, not counted twice), then resume after it */
        printf("  genome #%" PRIu64 " poisoned CUDA; rerunning it stepwise in a fresh process to "
               "name the kernel\n",
               r.stop);
        gg_report d;
        if (!run_child(o, path, name, 0, r.stop, true, &d))
            printf("  stepwise rerun of #%" PRIu64 ": %s\n", r.stop, d.setup_msg);
        start = r.stop + 1;
    }
    printf("example %s: %" PRIu64 " genomes, %" PRIu64 " passed, %" PRIu64 " failed", name,
           ex.genomes, ex.passed, ex.failed);
    if (o->compile_check)
        printf(" (%" PRIu64 " kernels, %" PRIu64 " distinct sources compiled for sm_%u; %" PRIu64
               " genomes over the kernel budget left out)",
               ex.kernels, ex.compiled, o->arch, ex.skipped);
    if (ex.out_of_time) printf(" (the time budget stopped the draws)");
    printf(", %.1f s\n", ex.seconds);
    fflush(stdout);
    tot->genomes += ex.genomes, tot->passed += ex.passed, tot->failed += ex.failed;
    tot->kernels += ex.kernels, tot->compiled += ex.compiled;
}

/* Prints each example's dim settings (in the parent: no CUDA). */
static void print_settings(const gg_opts *o, const char *path)
{
    lm_err e = {0};
    hl_graph *g = hl_graph_load_json(path, &e);
    if (!g) return; /* the child reports it */
    int64_t small[GG_MAX_DIMS], large[GG_MAX_DIMS];
    if (hl_graph_dim_count(g) <= GG_MAX_DIMS) {
        fz_default_dims(g, small);
        printf("dims %s: small", path);
        print_dims(g, small, stdout);
        if (o->large && !o->compile_check && hl_graph_dim_count(g)) {
            large_dims(g, small, o->work, large);
            printf(", large");
            print_dims(g, large, stdout);
            printf(" (work %.3g)", graph_work(g, large));
        }
        printf("\n");
    }
    hl_graph_free(g);
}

/* ==================================================================================
 * The command
 * ================================================================================== */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: genome_gpu [options] GRAPH.json ...\n"
            "  For every graph: saturate its e-graph with the built-in rules, draw N distinct\n"
            "  valid genomes (the most fused, the least fused, then random draws), generate\n"
            "  each into CUDA, run it on the GPU at the small and large dims\n"
            "  on seeded inputs and compare every output with the reference runtime by llir's\n"
            "  tolerances. Exit 0: every genome agreed; 1: a failure; 77: no GPU.\n"
            "options:\n"
            "  --n N            genomes per graph (default 20)\n"
            "  --one            one genome per graph, the most fused (for compute-sanitizer)\n"
            "  --seed S         inputs and genomes (default 1)\n"
            "  --no-large       only the small dims (every dim min(max(lo, 3), hi))\n"
            "  --work W         the large dims: profile values, the largest halved until the\n"
            "                   graph's element work is at most W (default 67108864)\n"
            "  --cpu            the program's CPU backend instead of the GPU (tests the harness)\n"
            "  --compile-check  no GPU, no runs: every distinct kernel source of every genome\n"
            "                   compiled with NVRTC (exit 77 without NVRTC)\n"
            "  --arch A         --compile-check's architecture (default 90)\n"
            "  --kernel-budget K  --compile-check: after a graph's first genome, a genome whose\n"
            "                   new sources would pass K for the graph is left out (default 0:\n"
            "                   none; NVRTC takes about 0.2 to 0.45 s a kernel)\n"
            "  --budget-s S     per graph: no new genome drawn S seconds after the first (the\n"
            "                   references not counted; default 0: none)\n"
            "  --timeout S      seconds per graph before its process is killed (default 600)\n"
            "  --verbose        a line per genome\n"
            "  --dump           every genome's plan and CUDA sources\n");
}

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') return false;
    *v = x;
    return true;
}

/* Is a GPU usable? Asked in a child, so that this process never touches CUDA. */
static int probe(const gg_opts *o)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        lm_err err = {0};
        if (o->compile_check) {
            rt_nvrtc *nv = NULL;
            if (rt_nvrtc_new(NULL, &nv, &err) != 0) {
                printf("genome_gpu: NVRTC cannot be loaded: %s\n", err.msg);
                fflush(stdout);
                _exit(GG_EXIT_NOGPU);
            }
            rt_nvrtc_free(nv);
            _exit(0);
        }
        rt_ctx *ctx = NULL;
        if (rt_ctx_new(NULL, &ctx, &err) != 0) {
            printf("genome_gpu: no GPU: %s\n", err.msg);
            fflush(stdout);
            _exit(GG_EXIT_NOGPU);
        }
        const rt_device_info *d = rt_ctx_device(ctx);
        printf("device: %s, sm_%d%d\n", d->name, d->cc_major, d->cc_minor);
        fflush(stdout);
        int cc = d->cc_major * 10 + d->cc_minor;
        rt_ctx_free(ctx);
        _exit(cc == 90 ? 0 : 3);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 1;
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    gg_opts o = {.n = 20, .seed = 1, .large = true, .work = 67108864.0, .arch = 90,
                 .timeout_s = 600};
    int first = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v;
        bool has = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--n") == 0 && has && parse_u64(argv[i + 1], &v) && v > 0) {
            o.n = v, i++;
        } else if (strcmp(a, "--seed") == 0 && has && parse_u64(argv[i + 1], &v)) {
            o.seed = v, i++;
        } else if (strcmp(a, "--work") == 0 && has && parse_u64(argv[i + 1], &v) && v > 0) {
            o.work = (double)v, i++;
        } else if (strcmp(a, "--arch") == 0 && has && parse_u64(argv[i + 1], &v) && v >= 50 &&
                   v <= 200) {
            o.arch = (uint32_t)v, i++;
        } else if (strcmp(a, "--kernel-budget") == 0 && has && parse_u64(argv[i + 1], &v)) {
            o.kernel_budget = v, i++;
        } else if (strcmp(a, "--budget-s") == 0 && has && parse_u64(argv[i + 1], &v)) {
            o.budget_s = (double)v, i++;
        } else if (strcmp(a, "--timeout") == 0 && has && parse_u64(argv[i + 1], &v) && v > 0) {
            o.timeout_s = (double)v, i++;
        } else if (strcmp(a, "--one") == 0) {
            o.one = true;
        } else if (strcmp(a, "--no-large") == 0) {
            o.large = false;
        } else if (strcmp(a, "--cpu") == 0) {
            o.cpu = true;
        } else if (strcmp(a, "--compile-check") == 0) {
            o.compile_check = true;
        } else if (strcmp(a, "--verbose") == 0) {
            o.verbose = true;
        } else if (strcmp(a, "--dump") == 0) {
            o.dump = true;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "genome_gpu: unknown option or bad value: %s\n", a);
            usage(stderr);
            return 2;
        } else {
            first = i;
            break;
        }
    }
    if (first >= argc) {
        fprintf(stderr, "genome_gpu: no graph files\n");
        usage(stderr);
        return 2;
    }
    if (!o.cpu) {
        int pr = probe(&o);
        if (pr == GG_EXIT_NOGPU) return GG_EXIT_NOGPU;
        if (pr == 3) {
            printf("genome_gpu: the kernels are written for sm_90; this GPU is another\n");
            return GG_EXIT_NOGPU;
        }
        if (pr != 0) {
            printf("genome_gpu: the device probe failed (status %d)\n", pr);
            return 1;
        }
    }
    printf("genome_gpu: %s, %" PRIu64 " genome%s per graph, seed %" PRIu64 "\n",
           o.compile_check ? "NVRTC compile check" : o.cpu ? "CPU backend" : "GPU",
           o.one ? 1 : o.n, (o.one ? 1 : o.n) == 1 ? "" : "s", o.seed);
    for (int i = first; i < argc; i++)
        print_settings(&o, argv[i]);
    double t0 = lm_now_s();
    gg_report tot = {0};
    for (int i = first; i < argc; i++)
        run_example(&o, argv[i], &tot);
    printf("total: %" PRIu64 " genomes, %" PRIu64 " passed, %" PRIu64 " failed over %d graphs",
           tot.genomes, tot.passed, tot.failed, argc - first);
    if (o.compile_check)
        printf("; %" PRIu64 " kernels, %" PRIu64 " distinct sources compiled", tot.kernels,
               tot.compiled);
    printf(" (%.1f s)\n", lm_now_s() - t0);
    return tot.failed || tot.genomes == 0 ? 1 : 0;
}
