/* fuzz.h - genome fuzzing (the fuzz module): the core of `luminal_search --fuzz N`
 * (tools/luminal_search/fuzz.c), shared with the tests (tests/fuzz) and the benches
 * (bench/llir, bench/codegen).
 *
 * fz_run makes the compile session (session.h: the graph's e-graph saturated with the
 * rules, the search space built from it) and checks N distinct valid genomes of it: each is built into LLIR (verified), run on the
 * CPU executor of LLIR (ll_run) at small dims on seeded inputs, and every output is
 * compared with the reference runtime's (hl_run, run once) by llir's comparison and
 * tolerances (ll_compare_outputs). docs/llir.md, "Genome fuzzing", says what is drawn and
 * why; this header says how to call it.
 *
 * Genomes, in the order they are checked (all from PCG32 seeded by the seed, so the same
 * graph, rules, seed and dims give the same genomes in the same order):
 *   1. the most fused genome (ll_genome_most_fused), the search's other two seeds (the
 *      library genome, ll_genome_library, and the fused-stored one,
 *      ll_genome_fused_stored), then the least fused one (ll_genome_least_fused);
 *   2. when the space cannot hold more than N programs (2^log2_programs <= N), every
 *      valid genome, by exhaustive enumeration in class order;
 *   3. otherwise random draws (ll_genome_random) and mutation walks (1 to 3 reached
 *      choices of a recent genome changed, classes the change newly reaches drawn at
 *      random, then ll_genome_repair), half and half; when 256 + N draws in a row give no
 *      new genome, exhaustive enumeration takes over (and may prove the space smaller
 *      than N).
 * Every genome is canonicalized (ll_genome_canonicalize: choices the walk does not reach
 * set to 0) and checked only when its hash is new: "distinct" means distinct canonical
 * genomes, i.e. distinct choices on the classes that make the program.
 */
#ifndef LUMINAL_FUZZ_H
#define LUMINAL_FUZZ_H

#include "llir.h"
#include "session.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FZ_MAX_TOL 16 /* outputs whose tolerance fz_result keeps */

/* Where a genome came from. */
typedef enum fz_origin {
    FZ_FROM_MOST_FUSED = 0,
    FZ_FROM_LEAST_FUSED,
    FZ_FROM_RANDOM,
    FZ_FROM_MUTATION,
    FZ_FROM_ENUMERATION,
    FZ_FROM_LIBRARY,      /* ll_genome_library, one of the search's seeds */
    FZ_FROM_FUSED_STORED, /* ll_genome_fused_stored, another */
    FZ_FROM_COUNT
} fz_origin;
const char *fz_origin_name(fz_origin o); /* "most-fused", "random", ... */

/* Where a genome's check stopped. */
typedef enum fz_stage {
    FZ_PASSED = 0, /* every output agrees with the reference */
    FZ_BUILD,      /* ll_graph_from_genome refused it */
    FZ_VERIFY,     /* ll_graph_verify refused the graph built */
    FZ_RUN,        /* ll_run failed */
    FZ_COMPARE     /* an output disagrees (LM_EMISMATCH) or differs in dtype or dims */
} fz_stage;
const char *fz_stage_name(fz_stage s);

typedef struct fz_options {
    uint64_t n;             /* distinct genomes to check (> 0) */
    uint64_t seed;          /* the inputs (input i: stream i) and the genomes */
    const int64_t *dims;    /* per hl_graph_dim_at; NULL: fz_default_dims */
    const char *rules_path; /* the rules: a file, or a text, or when both are NULL the */
    const char *rules;      /* built-in rules (cs_options: rules_path, rules_text) */
    const char *rules_name; /* names the text in messages; NULL: "<rules>" */
    bool unchecked;         /* TESTS ONLY (--fuzz-no-verify): neither the e-graph dtype
                               check (ll_space_opts) nor ll_graph_verify runs */
    uint64_t mem_limit;     /* the most bytes a reference or executor run may hold; 0:
                               half of this machine's memory */
    FILE *log;              /* the saturation report and progress; NULL: nothing */
    cs_session *session;    /* a compile session of this graph made by the caller (with
                               its space), used instead of making one (the rules and
                               unchecked's dtype check are then the session's); NULL: made
                               and freed by fz_run */
} fz_options;

/* One genome checked, as the callback sees it. Pointers are valid during the call. */
typedef struct fz_case {
    uint64_t index; /* 0, 1, ... in checking order */
    uint64_t hash;  /* of the canonical genome */
    fz_origin origin;
    fz_stage stage;
    int code;                 /* LM_OK, or the failure's lm_code */
    const char *msg;          /* the failure's message ("" when passed) */
    bool built;               /* an LLIR graph exists (also when verification failed) */
    ll_fingerprint fp;        /* of that graph */
    const uint32_t *op_count; /* LLIR nodes per registry op (ll_op_count() entries), when
                                 built; else NULL */
    uint32_t n_outputs;
    const ll_out_cmp *cmp; /* per output, when the comparison ran (stage PASSED or
                              COMPARE); else NULL */
} fz_case;

typedef struct fz_result fz_result;

/* What the caller sees as the fuzz runs (every field may be NULL). */
typedef struct fz_hooks {
    void *ctx;
    /* once, after saturation, the space and the reference run, before the first genome:
     * r holds the saturation report, the space's statistics and the tolerances */
    void (*ready)(void *ctx, const fz_result *r);
    /* once per genome checked, in order; lg is the LLIR graph when one was built */
    void (*each)(void *ctx, const fz_case *c, const hl_graph *g, const ll_space *s,
                 const ll_genome *gn, const ll_graph *lg);
} fz_hooks;

struct fz_result {
    uint64_t checked, passed, failed;
    uint64_t from[FZ_FROM_COUNT]; /* genomes checked per origin */
    uint64_t draws;               /* genomes drawn, duplicates included */
    uint64_t programs;            /* distinct fingerprints among the graphs built */
    bool exhausted;               /* every valid genome of the space was checked */
    double seconds;               /* the genome loop (build, verify, run, compare) */
    double sat_seconds, space_seconds, ref_seconds;
    ll_sat_report sat;
    uint64_t rows;        /* eg_node_count after saturation */
    uint64_t engine_peak; /* eg_mem_peak after building the space */
    ll_space_stats stats;
    uint32_t n_outputs;
    double tol[FZ_MAX_TOL];    /* the tolerance of each output (the first ones) */
    double spread[FZ_MAX_TOL]; /* each output's scale over its RMS, as llir's comparison
                                  takes them (ll_out_cmp.scale / .rms of the reference
                                  against itself): how much larger than the output's own
                                  RMS the size of its terms is (1 where nothing cancels;
                                  infinite for an all-zero output) */
};

/* The inputs of g at dims (per hl_graph_dim_at): input i shaped at dims and filled from
 * (seed, stream i) by hl_graph_fill_input, as every tool fills a graph's inputs. ins has
 * hl_graph_input_count(g) zeroed records; the caller finalizes them (hl_tensor_fini),
 * also after a failure ("input 'x': ...", hlir's error, LM_ENOMEM). */
int fz_inputs(const hl_graph *g, const int64_t *dims, uint64_t seed, hl_tensor *ins,
              lm_err *err);

/* Every dim at min(max(lo, 3), hi): small, so the reference runtime and the executor run
 * in milliseconds (the profile values are workload sizes). */
void fz_default_dims(const hl_graph *g, int64_t *dims);

/* Fuzzes g (see above), calling the hooks (h may be NULL).
 * Returns 0 when the fuzz ran (r filled; whether genomes failed is in r), or an lm_code
 * with err set when it could not: the compile session failed (the graph does not
 * encode, the rules file cannot be read, the rules or a phase fail, the space is refused,
 * the e-graph dtype check among others), the inputs cannot be made or the reference run
 * fails (bad data at these dims), LM_ENOMEM. r is filled as far as it got in both cases. */
int fz_run(const hl_graph *g, const fz_options *o, const fz_hooks *h, fz_result *r,
           lm_err *err);

#endif /* LUMINAL_FUZZ_H */
