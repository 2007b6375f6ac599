/* ll_middle.c - the compiler's middle, measured on each graph given: saturation with the
 * compiler's rules (time and the engine's peak memory per phase), the e-graph's size,
 * the search space's size, genomes extracted and verified per second (ll_genome_random,
 * then ll_graph_from_genome, which verifies), and genome fuzzing's throughput
 * (fz_run: genomes built, verified, run on the CPU executor and compared).
 *
 *   ll_middle [--rules FILE] [--secs S] [--phases] GRAPH.json...
 *
 * Rates are per CPU second of this process over S seconds (default 2) after a warm-up,
 * with the rate per wall second beside them (on a shared machine wall time counts the
 * other jobs too). Fuzzing runs twice: on the graph as given at the fuzzer's default
 * dims (every dynamic dim min(max(lo, 3), hi); static sizes as they are), and on its small
 * version (the static sizes of the workloads shrunk as tests/fuzz/tf.h's TF_SHRINK does:
 * 2048 and 4096 to 16, 8192 to 32, 32 heads of 64 to 2 of 8), as the CI test runs it.
 * --phases prints every phase of every graph (seconds, rows, bytes and peak after it) on
 * stderr; --sat-only measures only saturation and prints the process's peak RSS (run one
 * graph per process for a graph's own peak).
 * Prints one row per graph (docs/perf.md, "Compiler middle"). Saturation is run five times
 * and the median time kept. */
#include "fuzz.h"
#include "session.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int die(const char *what, const char *msg)
{
    fprintf(stderr, "ll_middle: %s: %s\n", what, msg);
    return 1;
}

/* The static sizes of the workloads and their small stand-ins (tests/fuzz/tf.h). */
static const json_int_t SHRINK[][2] = {{2048, 16}, {4096, 16}, {8192, 32}, {32, 2}, {64, 8}};

static void shrink(json_t *j)
{
    const char *key;
    size_t i;
    json_t *v;
    if (json_is_object(j)) {
        json_object_foreach(j, key, v)
        {
            if (strcmp(key, "shape") == 0 && json_is_array(v)) {
                size_t k;
                json_t *d;
                json_array_foreach(v, k, d) for (size_t s = 0; s < sizeof SHRINK / sizeof SHRINK[0];
                                                 s++) if (json_is_integer(d) &&
                                                          json_integer_value(d) == SHRINK[s][0])
                {
                    json_integer_set(d, SHRINK[s][1]);
                    break;
                }
            } else {
                shrink(v);
            }
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v) shrink(v);
    }
}

static hl_graph *load_small(const char *path, lm_err *err)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) {
        lm_err_set(err, LM_EPARSE, NULL, "%s:%d: %s", path, je.line, je.text);
        return NULL;
    }
    shrink(doc);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    hl_graph *g = text ? hl_graph_read_json(text, strlen(text), path, err) : NULL;
    free(text);
    return g;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Genomes drawn, built into LLIR and verified per CPU second over secs; *wall per wall
 * second. */
static double extract_rate(const ll_space *s, double secs, double *wall, lm_err *err)
{
    ll_genome gn;
    if (ll_genome_init(&gn, s, err)) return -1;
    lm_pcg32 rng;
    lm_pcg_seed(&rng, 1, 1);
    uint64_t n = 0;
    double t0 = 0, w0 = 0;
    for (;;) {
        if (ll_genome_random(&gn, s, &rng, err)) return -1;
        ll_graph *g = ll_graph_from_genome(s, &gn, err);
        if (!g) return -1;
        ll_graph_free(g);
        if (++n == 20) t0 = cpu_s(), w0 = lm_now_s();
        if (n > 20 && (n & 15) == 0 && cpu_s() - t0 >= secs) break;
    }
    ll_genome_fini(&gn);
    *wall = (double)(n - 20) / (lm_now_s() - w0);
    return (double)(n - 20) / (cpu_s() - t0);
}

/* The CPU clock when a fuzz's genome loop starts (its ready hook). */
static void at_ready(void *ctx, const fz_result *r)
{
    (void)r;
    *(double *)ctx = cpu_s();
}

/* Fuzzing throughput: genomes checked (built, verified, run, compared) per CPU second of
 * the genome loop (and per wall second), over runs of fz_run (each its own
 * saturation and reference, not counted) until the loops took secs of CPU; a space smaller
 * than the run asks is fuzzed completely again and again. */
static double fuzz_rate(const hl_graph *g, const char *rules, const char *name, double secs,
                        uint64_t *checked, uint64_t *failed, double *wall, lm_err *err)
{
    uint64_t n = 16, total = 0, bad = 0;
    double cpu = 0, wsum = 0;
    while (cpu < secs) {
        fz_options o = {.n = n, .seed = 1 + total, .rules = rules, .rules_name = name};
        fz_result r;
        double start = 0;
        fz_hooks h = {.ctx = &start, .ready = at_ready};
        if (fz_run(g, &o, &h, &r, err)) return -1;
        cpu += cpu_s() - start;
        wsum += r.seconds;
        total += r.checked;
        bad += r.failed;
        double per = cpu > 0 ? cpu / (double)total : 1e-3;
        uint64_t want = (uint64_t)((secs - cpu) / (per > 1e-6 ? per : 1e-6)) + 1;
        n = want < 16 ? 16 : want > (1u << 20) ? (1u << 20) : want;
    }
    *checked = total;
    *failed = bad;
    *wall = wsum > 0 ? (double)total / wsum : 0;
    return cpu > 0 ? (double)total / cpu : 0;
}

int main(int argc, char **argv)
{
    const char *rules_file = NULL;
    double secs = 2.0;
    bool phases = false, sat_only = false;
    int first = 1;
    while (first < argc && strncmp(argv[first], "--", 2) == 0) {
        if (strcmp(argv[first], "--rules") == 0 && first + 1 < argc)
            rules_file = argv[++first];
        else if (strcmp(argv[first], "--secs") == 0 && first + 1 < argc)
            secs = atof(argv[++first]);
        else if (strcmp(argv[first], "--phases") == 0)
            phases = true;
        else if (strcmp(argv[first], "--sat-only") == 0)
            sat_only = true;
        else
            break;
        first++;
    }
    if (first >= argc || secs <= 0) {
        fprintf(stderr, "usage: ll_middle [--rules FILE] [--secs S] [--phases] [--sat-only] "
                        "GRAPH.json...\n");
        return 2;
    }
    lm_err err = {0};
    char *own = NULL;
    const char *rules = cs_rules_builtin(), *name = cs_rules_builtin_name();
    if (rules_file) {
        own = lm_read_text(rules_file, CS_RULES_MAX_BYTES, NULL, &err);
        if (!own) return die("rules", err.msg);
        rules = own;
        name = rules_file;
    }
    if (!sat_only)
        printf("%-25s %7s %9s %12s %6s %6s %6s %5s %7s %10s %10s %9s %9s %9s %9s\n", "graph",
               "sat ms", "peak KiB", "peak at", "rows", "class", "srch", "chc", "log2", "xv/cpu-s",
               "xv/wall-s", "fz/cpu-s", "fz/wall-s", "fzs/cpu-s", "fzs/wall-s");
    for (int i = first; i < argc; i++) {
        const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        lm_err_clear(&err);
        hl_graph *g = hl_graph_load_json(argv[i], &err);
        if (!g) return die(argv[i], err.msg);
        /* saturation timed alone (the engine made, the graph encoded, saturated: the
         * compile session without the space), five times; then the whole session */
        double t[5];
        cs_options co = {.rules_text = rules, .rules_name = name, .no_space = true};
        for (int k = 0; k < 5; k++) {
            double c0 = cpu_s();
            cs_session *x = cs_session_new(g, &co, &err);
            if (!x) return die(base, err.msg);
            t[k] = cpu_s() - c0;
            cs_session_free(x);
        }
        qsort(t, 5, sizeof t[0], cmp_double);
        co.no_space = false;
        cs_session *x = cs_session_new(g, &co, &err);
        if (!x) return die(base, err.msg);
        const ll_sat_report *rep = &cs_session_report(x)->sat;
        const ll_space_stats st = cs_session_report(x)->stats;
        uint64_t peak = 0;
        char peak_at[LL_PHASE_NAME] = "";
        for (uint32_t k = 0; k < rep->n_phases; k++)
            if (rep->phase[k].peak > peak) {
                peak = rep->phase[k].peak;
                snprintf(peak_at, sizeof peak_at, "%s", rep->phase[k].name);
            }
        uint64_t rows = cs_session_report(x)->rows;
        if (sat_only) { /* the peak RSS then is the saturation's (and loading's) */
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            printf("%s: saturation %.2f ms CPU (median of 5), engine peak %.0f KiB (reached in "
                   "%s), %llu rows, %u classes; process peak RSS %ld KiB\n",
                   base, t[2] * 1e3, (double)peak / 1024.0, peak_at, (unsigned long long)rows,
                   st.classes, ru.ru_maxrss);
            cs_session_free(x);
            hl_graph_free(g);
            continue;
        }
        double xw, xr = extract_rate(cs_session_space(x), secs, &xw, &err);
        if (xr < 0) return die(base, err.msg);
        if (phases) {
            for (uint32_t k = 0; k < rep->n_phases; k++) {
                const ll_phase_report *p = &rep->phase[k];
                fprintf(stderr, "  %s phase %2u %-22s %9.3f ms %6llu rows %8llu B %8llu B peak\n",
                        base, k + 1, p->name, p->seconds * 1e3, (unsigned long long)p->rows,
                        (unsigned long long)p->bytes, (unsigned long long)p->peak);
            }
        }
        cs_session_free(x);
        uint64_t ck, fl, ck2, fl2;
        double fw, fr = fuzz_rate(g, rules, name, secs / 2, &ck, &fl, &fw, &err);
        if (fr < 0) return die(base, err.msg);
        hl_graph *small = load_small(argv[i], &err);
        if (!small) return die(base, err.msg);
        double sw, sr = fuzz_rate(small, rules, name, secs / 2, &ck2, &fl2, &sw, &err);
        if (sr < 0) return die(base, err.msg);
        if (fl || fl2)
            fprintf(stderr, "ll_middle: %s: %llu + %llu genomes FAILED\n", base,
                    (unsigned long long)fl, (unsigned long long)fl2);
        char nm[128];
        snprintf(nm, sizeof nm, "%s", base);
        if (strlen(nm) > 5 && strcmp(nm + strlen(nm) - 5, ".json") == 0) nm[strlen(nm) - 5] = 0;
        printf("%-25.25s %7.2f %9.0f %12.12s %6llu %6u %6u %5llu %7.1f %10.0f %10.0f %9.1f %9.1f "
               "%9.0f "
               "%9.0f\n",
               nm, t[2] * 1e3, (double)peak / 1024.0, peak_at, (unsigned long long)rows, st.classes,
               st.searchable, (unsigned long long)st.choices, st.log2_programs, xr, xw, fr, fw, sr,
               sw);
        fflush(stdout);
        hl_graph_free(small);
        hl_graph_free(g);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS of the process: %ld KiB\n", ru.ru_maxrss);
    free(own);
    return 0;
}
