/* ll_bench.c - the speed of llir's genome loop on every example graph: genomes drawn and
 * repaired per second, and genomes drawn, repaired, built into LLIR and verified per
 * second (the search's inner loop before codegen), with the saturation and space times
 * (wall time, from the compile session's report: session.h).
 *
 *   ll_bench RULES.dsl [SECONDS] GRAPH.json...
 *
 * Each rate is measured over SECONDS (default 1) of the process's CPU time after a
 * warm-up of 20 genomes, and given per CPU second (on a shared machine wall time
 * measures the other jobs too; the wall-time rate is printed beside it). Prints one row
 * per graph (docs/llir.md, "Speed"). */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int die(const char *what, const char *msg)
{
    fprintf(stderr, "ll_bench: %s: %s\n", what, msg);
    return 1;
}

/* Genomes per CPU second over secs: drawn and repaired, and built and verified when
 * build; *wall receives the rate per wall second. */
static double rate(const ll_space *s, ll_genome *gn, double secs, bool build, uint32_t *nodes,
                   double *wall)
{
    lm_pcg32 rng;
    lm_pcg_seed(&rng, 1, 1);
    lm_err err = {0};
    uint64_t n = 0;
    double t0 = 0, w0 = 0;
    for (;;) {
        if (ll_genome_random(gn, s, &rng, &err)) exit(die("random", err.msg));
        if (build) {
            ll_graph *g = ll_graph_from_genome(s, gn, &err);
            if (!g) exit(die("graph", err.msg));
            if (nodes) *nodes = ll_graph_node_count(g);
            ll_graph_free(g);
        }
        if (++n == 20) t0 = cpu_s(), w0 = lm_now_s(); /* warm-up done */
        if (n > 20 && (n & 15) == 0 && cpu_s() - t0 >= secs) break;
    }
    *wall = (double)(n - 20) / (lm_now_s() - w0);
    return (double)(n - 20) / (cpu_s() - t0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ll_bench RULES.dsl [SECONDS] GRAPH.json...\n");
        return 2;
    }
    lm_err err = {0};
    int first = 2;
    double secs = 1.0;
    char *end;
    double v = strtod(argv[2], &end);
    if (*end == 0 && v > 0) secs = v, first = 3;
    printf("%-32s %5s %7s %7s %8s %11s %11s %11s %6s\n", "graph", "hlir", "classes", "sat ms",
           "space ms", "repair/cpu-s", "llir/cpu-s", "llir/wall-s", "nodes");
    for (int i = first; i < argc; i++) {
        lm_err he = {0};
        hl_graph *g = hl_graph_load_json(argv[i], &he);
        if (!g) return die(argv[i], he.msg);
        cs_report rep;
        cs_options co = {.rules_path = argv[1], .report = &rep};
        cs_session *cs = cs_session_new(g, &co, &err);
        if (!cs) return die(cs_stage_name(rep.stage), err.msg);
        const ll_space *s = cs_session_space(cs);
        ll_genome gn;
        if (ll_genome_init(&gn, s, &err)) return die("genome", err.msg);
        uint32_t nodes = 0;
        double w1, w2;
        double r_repair = rate(s, &gn, secs, false, NULL, &w1);
        double r_llir = rate(s, &gn, secs, true, &nodes, &w2);
        ll_space_stats st;
        ll_space_get_stats(s, &st);
        const char *name = strrchr(argv[i], '/');
        printf("%-32s %5u %7u %7.1f %8.1f %11.0f %11.0f %11.0f %6u\n", name ? name + 1 : argv[i],
               hl_graph_node_count(g), st.classes, rep.sat_seconds * 1e3, rep.space_seconds * 1e3, r_repair,
               r_llir, w2, nodes);
        fflush(stdout);
        ll_genome_fini(&gn);
        cs_session_free(cs);
        hl_graph_free(g);
    }
    return 0;
}
