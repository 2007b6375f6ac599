/* ll_driver.c - a small driver over llir for the determinism test: loads a JSON graph,
 * encodes it, saturates it with a rules file, builds the space, and prints the space's
 * summary, then for genomes 0 .. N-1 drawn from the seed (after the least and the most
 * fused one): the genome, the LLIR graph's fingerprint and its dump. Two fresh processes
 * given the same arguments must print the same bytes (tests/llir/twice.sh).
 *
 *   ll_driver GRAPH.json RULES.dsl SEED N
 */
#include "llir.h"

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
    hl_error he;
    hl_error_clear(&he);
    hl_graph *g = hl_graph_load_json(argv[1], &he);
    if (!g) return die("graph", he.msg);
    lm_err err = {0};
    char *rules = lm_read_file(argv[2], 0, NULL, &err);
    if (!rules) return die("rules", err.msg);
    eg_engine *e = eg_engine_new(NULL, NULL);
    hl_encoding enc;
    int rc = 1;
    ll_space *s = NULL;
    ll_genome gn = {0};
    if (hl_graph_encode(g, e, &enc, &he) != HL_OK) {
        die("encode", he.msg);
        goto done;
    }
    ll_sat_report rep;
    if (ll_saturate(e, rules, argv[2], NULL, &rep, &err)) {
        die("saturate", err.msg);
        goto done;
    }
    s = ll_space_new(e, eg_find(e, enc.root), &err);
    if (!s) {
        die("space", err.msg);
        goto done;
    }
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
    ll_space_free(s);
    hl_encoding_fini(&enc);
    eg_engine_free(e);
    free(rules);
    hl_graph_free(g);
    return rc;
}
