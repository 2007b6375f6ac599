/* sr_gpu_driver.c - the GPU evaluator's test driver (target sr_gpu_driver):
 *
 *   sr_gpu_driver --worker ...          the worker process (sr_worker_main), as
 *                                       `luminal_search --worker` is; the tests and
 *                                       the measurement below start it so
 *   sr_gpu_driver --measure --graph G [--genomes N] [--repeat R] [--seed S]
 *                 [--dim NAME=V ...] [--workers K] [--cpu] [--trials T] [--cache-dir D]
 *                                       saturates G with the built-in rules, takes N
 *                                       distinct genomes (the most fused, the least
 *                                       fused, then random ones; default 20), measures
 *                                       them through the evaluator's pool (the first
 *                                       checked against the reference), then the fastest
 *                                       R more times (default 5, the timing noise) and
 *                                       checked; one line per candidate and a summary on
 *                                       stdout; the pool's log on stderr. Exit 0 when
 *                                       the fastest agreed with the reference, 1 when a
 *                                       candidate was wrong or none was measured, 2 for
 *                                       bad arguments or a setup failure.
 *
 * It is a test tool: the search (luminal_search) does this for real.
 */
#include "egraph.h"
#include "search.h"
#include "session.h"
#include "sr_gpu.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *status_word(sr_status s)
{
    static const char *w[] = {"ok",       "compile-failed", "fault", "nonfinite", "out-of-memory",
                              "too-slow", "timeout",        "wrong", "error"};
    return s < SR_STATUS_COUNT ? w[s] : "?";
}

typedef struct opts {
    const char *graph, *cache_dir;
    uint32_t genomes, repeat, workers, trials;
    uint64_t seed;
    bool cpu;
    const char *dim_names[8];
    int64_t dim_values[8];
    uint32_t n_dims;
} opts;

static int usage(const char *why)
{
    fprintf(stderr,
            "sr_gpu_driver: %s\nusage: sr_gpu_driver --worker ... | --measure --graph G "
            "[--genomes N] [--repeat R] [--seed S] [--dim NAME=V] [--workers K] [--cpu] "
            "[--trials T] [--cache-dir D]\n",
            why);
    return 2;
}

typedef struct cand {
    ll_graph *g;
    cg_plan *plan;
    uint64_t hash;
} cand;

/* The candidates: N distinct canonical genomes that build, verify and plan. */
static int make_candidates(const hl_graph *h, const opts *o, cand *cs, uint32_t *n, lm_err *err)
{
    cs_session *x = cs_session_new(h, NULL, err); /* the built-in rules, silent */
    if (!x) return err->code;
    const ll_space *s = cs_session_space(x);
    ll_genome gn = {0};
    int rc = ll_genome_init(&gn, s, err);
    lm_pcg32 rng;
    lm_pcg_seed(&rng, o->seed, 0x636e6473);
    uint32_t want = *n, got = 0, tries = 0;
    while (!rc && got < want && tries < want * 50 + 100) {
        tries++;
        if (tries == 1)
            rc = ll_genome_most_fused(&gn, s, err);
        else if (tries == 2)
            rc = ll_genome_least_fused(&gn, s, err);
        else
            rc = ll_genome_random(&gn, s, &rng, err);
        if (!rc) rc = ll_genome_canonicalize(&gn, s, err);
        if (rc) break;
        bool seen = false;
        for (uint32_t i = 0; i < got; i++)
            seen |= cs[i].hash == gn.hash;
        if (seen) continue;
        lm_err ge = {0};
        ll_graph *g = ll_graph_from_genome(s, &gn, &ge);
        cg_plan *plan = g ? cg_plan_new(g, NULL, &ge) : NULL;
        if (!plan) {
            fprintf(stderr, "genome %016" PRIx64 " skipped: %s\n", gn.hash, ge.msg);
            ll_graph_free(g);
            continue;
        }
        cs[got++] = (cand){g, plan, gn.hash};
    }
    *n = got;
    ll_genome_fini(&gn);
    cs_session_free(x);
    return rc;
}

static void print_result(const char *what, const sr_result *r)
{
    printf("%-10s id %3" PRIu64 "  gpu %d  %-14s %10.4f ms  compile %6.3f s  trials %3u%s%s%s\n",
           what, r->id, r->gpu, status_word(r->status), r->ms, r->compile_s, r->trials,
           r->checked ? "  checked" : "", r->why[0] ? "  " : "", r->why);
}

static int measure(const opts *o)
{
    lm_err err = {0};
    hl_graph *h = hl_graph_load_json(o->graph, &err);
    if (!h) {
        fprintf(stderr, "sr_gpu_driver: %s\n", err.msg);
        return 2;
    }
    uint32_t nd = hl_graph_dim_count(h);
    int64_t dims[16];
    if (nd > 16) return usage("too many dims");
    const hl_expr_pool *p = hl_graph_exprs_c(h);
    for (uint32_t i = 0; i < nd; i++) {
        dims[i] = hl_graph_dim_at(h, i)->profile;
        for (uint32_t k = 0; k < o->n_dims; k++)
            if (strcmp(o->dim_names[k], hl_var_name(p, hl_graph_dim_at(h, i)->var)) == 0)
                dims[i] = o->dim_values[k];
    }
    double t0 = lm_now_s();
    cand *cs = calloc(o->genomes, sizeof *cs);
    uint32_t n = o->genomes;
    int rc = cs ? make_candidates(h, o, cs, &n, &err) : LM_ENOMEM;
    double t_space = lm_now_s() - t0;
    if (rc) {
        fprintf(stderr, "sr_gpu_driver: %s\n", err.msg);
        free(cs);
        hl_graph_free(h);
        return 2;
    }
    printf("graph %s: %u candidates in %.2f s (saturation, space, genomes, plans)\n", o->graph, n,
           t_space);
    sr_gpu_opts go;
    sr_gpu_opts_default(&go);
    go.worker_exe = "/proc/self/exe";
    go.backend_cpu = o->cpu;
    go.workers = o->workers;
    go.cache_dir = o->cache_dir;
    if (o->trials) go.trials = o->trials;
    go.log = stderr;
    sr_eval_setup su = {h, o->graph, dims, o->seed};
    t0 = lm_now_s();
    sr_evaluator *ev = sr_gpu_new(&su, &go, &err);
    if (!ev) {
        fprintf(stderr, "sr_gpu_driver: %s\n", err.msg);
        rc = 2;
        goto done;
    }
    uint32_t slots = ev->ops->slots(ev);
    printf("pool: %u worker%s, started in %.2f s\n", slots, slots == 1 ? "" : "s", lm_now_s() - t0);
    uint32_t counts[SR_STATUS_COUNT] = {0};
    double best = INFINITY, compile = 0;
    uint32_t best_i = UINT32_MAX, next = 0, done_n = 0;
    bool wrong = false;
    t0 = lm_now_s();
    while (done_n < n) {
        while (next < n && next - done_n < slots) {
            sr_candidate c = {.id = next,
                              .llir = cs[next].g,
                              .plan = cs[next].plan,
                              .cutoff_ms = 0,
                              .check = next == 0};
            if (ev->ops->submit(ev, &c, &err)) goto fail;
            next++;
        }
        sr_result r;
        if (ev->ops->next(ev, &r, &err)) goto fail;
        done_n++;
        counts[r.status]++;
        compile += r.compile_s;
        wrong |= r.status == SR_WRONG;
        print_result("candidate", &r);
        if (r.status == SR_OK && r.ms < best) best = r.ms, best_i = (uint32_t)r.id;
    }
    double t_measure = lm_now_s() - t0;
    double rep_min = INFINITY, rep_max = 0;
    if (best_i != UINT32_MAX) {
        for (uint32_t k = 0; k <= o->repeat; k++) {
            sr_candidate c = {.id = best_i,
                              .llir = cs[best_i].g,
                              .plan = cs[best_i].plan,
                              .cutoff_ms = 0,
                              .check = k == o->repeat};
            sr_result r;
            if (ev->ops->submit(ev, &c, &err) || ev->ops->next(ev, &r, &err)) goto fail;
            print_result(k == o->repeat ? "winner" : "again", &r);
            wrong |= r.status == SR_WRONG;
            if (r.status == SR_OK) {
                rep_min = fmin(rep_min, r.ms);
                rep_max = fmax(rep_max, r.ms);
            }
            if (k == o->repeat && !(r.status == SR_OK && r.checked)) wrong = true;
        }
    }
    sr_gpu_stats st;
    sr_gpu_get_stats(ev, &st);
    printf("summary: %u candidates measured in %.2f s on %u worker%s (%.3f s compiling in all); ",
           n, t_measure, slots, slots == 1 ? "" : "s", compile);
    for (int s = 0; s < SR_STATUS_COUNT; s++)
        if (counts[s]) printf("%s %u, ", status_word((sr_status)s), counts[s]);
    printf("best %.4f ms (candidate %d); the best measured %u more times: %.4f .. %.4f ms "
           "(spread %.2f %%); CUBINs compiled %" PRIu64 ", read from the disk cache %" PRIu64
           "; workers restarted %" PRIu64 "\n",
           best, best_i == UINT32_MAX ? -1 : (int)best_i, o->repeat + 1, rep_min, rep_max,
           rep_max > 0 && isfinite(rep_min) ? 100.0 * (rep_max - rep_min) / rep_min : 0.0,
           st.compiled, st.disk_hits, st.restarts);
    rc = best_i == UINT32_MAX || wrong ? 1 : 0;
    goto done;
fail:
    fprintf(stderr, "sr_gpu_driver: %s\n", err.msg);
    rc = 2;
done:
    if (ev) ev->ops->free(ev);
    for (uint32_t i = 0; i < n; i++) {
        cg_plan_free(cs[i].plan);
        ll_graph_free(cs[i].g);
    }
    free(cs);
    hl_graph_free(h);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0) return sr_worker_main(argc, argv);
    if (argc < 2 || strcmp(argv[1], "--measure") != 0) return usage("--worker or --measure first");
    opts o = {.genomes = 20, .repeat = 5, .seed = 1};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--cpu") == 0) {
            o.cpu = true;
            continue;
        }
        if (!v) return usage("an option lacks its value");
        i++;
        if (strcmp(a, "--graph") == 0)
            o.graph = v;
        else if (strcmp(a, "--genomes") == 0)
            o.genomes = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--repeat") == 0)
            o.repeat = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--seed") == 0)
            o.seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--workers") == 0)
            o.workers = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--trials") == 0)
            o.trials = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--cache-dir") == 0)
            o.cache_dir = v;
        else if (strcmp(a, "--dim") == 0) {
            const char *eq = strchr(v, '=');
            if (!eq || o.n_dims == 8) return usage("--dim takes NAME=V");
            o.dim_names[o.n_dims] = strndup(v, (size_t)(eq - v));
            o.dim_values[o.n_dims++] = strtoll(eq + 1, NULL, 10);
        } else
            return usage("unknown option");
    }
    if (!o.graph || o.genomes == 0) return usage("--measure needs --graph and --genomes >= 1");
    int rc = measure(&o);
    for (uint32_t k = 0; k < o.n_dims; k++)
        free((void *)o.dim_names[k]);
    return rc;
}
