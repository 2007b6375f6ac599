/* ll_driver.c - a small driver over llir for the determinism test: loads a JSON graph,
 * encodes it, saturates it with a rules file, builds the space, and prints the space's
 * summary, then for genomes 0 .. N-1 drawn from the seed (after the least and the most
 * fused one): the genome, the LLIR graph's fingerprint and its dump. Two fresh processes
 * given the same arguments must print the same bytes (tests/llir/twice.sh).
 *
 *   ll_driver GRAPH.json RULES.dsl SEED N
 */
#include "session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int die(const char *what, const char *msg)
{
    fprintf(stderr, "ll_driver: %s: %s\n", what, msg);
    return 1;
}

static int show(const ll_space *s, const ll_genome *g, const char *what)
{
    lm_err err = {0};
    printf("== %s\n", what);
    ll_genome_fprint(g, s, stdout);
    if (ll_genome_validate(g, s, &err)) return die("validate", err.msg);
    ll_graph *lg = ll_graph_from_genome(s, g, &err);
    if (!lg) return die("graph", err.msg);
    ll_fingerprint fp = ll_graph_fingerprint(lg);
    printf("fingerprint %016" PRIx64 "%016" PRIx64 "\n", fp.hi, fp.lo);
    ll_graph_dump(lg, stdout);
    ll_graph_free(lg);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: ll_driver GRAPH.json RULES.dsl SEED N\n");
        return 2;
    }
    uint64_t seed = strtoull(argv[3], NULL, 10);
    long n = strtol(argv[4], NULL, 10);
    lm_err he = {0};
    hl_graph *g = hl_graph_load_json(argv[1], &he);
    if (!g) return die("graph", he.msg);
    lm_err err = {0};
    int rc = 1;
    ll_genome gn = {0};
    cs_report rep;
    cs_options o = {.rules_path = argv[2], .report = &rep};
    cs_session *cs = cs_session_new(g, &o, &err);
    if (!cs) {
        die(cs_stage_name(rep.stage), err.msg);
        hl_graph_free(g);
        return 1;
    }
    const ll_space *s = cs_session_space(cs);
    ll_space_fprint_summary(s, stdout);
    if (ll_genome_init(&gn, s, &err)) {
        die("genome", err.msg);
        goto done;
    }
    if (ll_genome_least_fused(&gn, s, &err) || show(s, &gn, "least fused")) goto done;
    if (ll_genome_most_fused(&gn, s, &err) || show(s, &gn, "most fused")) goto done;
    lm_pcg32 rng;
    lm_pcg_seed(&rng, seed, 9);
    for (long i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "random %ld", i);
        if (ll_genome_random(&gn, s, &rng, &err)) {
            die("random", err.msg);
            goto done;
        }
        if (show(s, &gn, what)) goto done;
    }
    rc = 0;
done:
    if (err.code) fprintf(stderr, "ll_driver: %s\n", err.msg);
    ll_genome_fini(&gn);
    cs_session_free(cs);
    hl_graph_free(g);
    return rc;
}
