/* search.h - the genetic search over a saturated e-graph: the one public header of
 * search/.
 *
 * Given a graph, the search saturates an e-graph with the compiler's rules, builds the
 * search space (llir.h), and looks for the fastest program: a random valid first genome,
 * offspring as mutants of the best parents, candidates deduplicated by genome hash and by
 * LLIR fingerprint (two genomes giving one program are measured once), at most `limit`
 * candidates measured, early stop of candidates already slower than the best by a
 * factor, restarts on stagnation, a wall-clock limit. Candidates that fail to compile,
 * fault, produce NaN or Inf or exceed the memory budget are recorded with the reason and
 * skipped; none ends the search.
 *
 * Evaluators: on a GPU, worker processes (one per visible GPU) own the CUDA contexts, so
 * a faulting candidate takes down only its worker, which is restarted; without one, an
 * analytic cost model ranks candidates and the output says the ranking is modelled.
 * Every candidate is also costed by the model, so that measured and modelled times can
 * be compared in the log.
 *
 * The same seed with the cost model gives the same plan, byte for byte; with the GPU the
 * plan follows the measurements, and replaying a search's measurement log
 * (SR_EVAL_REPLAY) reproduces it. docs/search.md describes the search, its options and
 * their defaults, the cost model, the log and the report.
 */
#ifndef LUMINAL_SEARCH_H
#define LUMINAL_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hl_graph;
struct sr_evaluator;
struct cs_session;

/* The GPU evaluator's worker process: `luminal_search --worker ...` enters here before
 * anything else is parsed (sr_worker.c says what the arguments and the pipe protocol are).
 * Returns the process's exit status. */
int sr_worker_main(int argc, char **argv);

/* Which evaluator measures the candidates. */
typedef enum sr_eval_kind {
    SR_EVAL_AUTO = 0,   /* the GPU workers when a GPU is visible (probed without opening
                           CUDA here), else the cost model */
    SR_EVAL_COST_MODEL, /* the analytic model (sr_cost.c): modelled, not measured */
    SR_EVAL_GPU,        /* the GPU workers, or an error */
    SR_EVAL_REPLAY      /* the results recorded in a previous search's log (replay) */
} sr_eval_kind;

/* The results a search records: sr_status of sr_eval.h, by index (SR_REASONS of them);
 * sr_reason_name gives the log's name ("ok", "compile-failed", ...), NULL past the end. */
#define SR_REASONS 9
/* The bounds of the search's counts, the command line's and a replayed log's alike, so
 * that no size computed from them overflows (max_draws is at most
 * (1000 + 200 * SR_MAX_LIMIT) * SR_MAX_SMALL, far below 2^63). */
#define SR_MAX_LIMIT 1000000000ull /* candidates (--limit) */
#define SR_MAX_SMALL 64            /* keep-best, mutations, restart-after, proposals, slots */
#define SR_MAX_FACTOR 1e9          /* cutoff and screen factors, seconds of time limit */
#define SR_LOG_MAX_BYTES ((size_t)1 << 30) /* a search log read by a replay */
const char *sr_reason_name(uint32_t i);

/* Options. sr_options_default fills the documented defaults (docs/search.md). */
typedef struct sr_options {
    const char *rules;       /* the rules text to saturate with (required unless session) */
    const struct cs_session *session; /* the front half made already: a compile session
                                of the same graph (session.h; borrowed, outlives the
                                search), whose engine and space the search uses instead
                                of saturating (rules is then not read); NULL: the search
                                makes its own from rules */
    const char *rules_name;  /* names it in messages (NULL: "<rules>") */
    const char *graph_path;  /* the graph's JSON file: copied into out_dir, read again by
                                GPU workers (NULL or "-": written canonically, no workers) */
    uint64_t limit;          /* candidates measured (handed to the evaluator), at most: 20 */
    uint64_t seed;           /* every random choice of the search: 0 */
    uint32_t keep_best;      /* parents: offspring mutate one of the best keep_best: 4 */
    uint32_t max_mutations;  /* choices one mutation changes, 1 .. this: 3 */
    double cutoff_factor;    /* a candidate already slower than best * this is stopped
                                early (sr_candidate.cutoff_ms); 0: never: 2.0 */
    double screen_factor;    /* with a measuring evaluator, a candidate whose modelled time
                                is over this times the model's time for the best so far
                                (before any best: for the reference lowering) is not
                                measured, but recorded as too-slow; 0: never: 50 */
    uint32_t proposals;      /* with a measuring evaluator, after the first five draws:
                                of this many new genomes, the one the model
                                costs least is measured (1: every draw is measured): 8 */
    uint32_t restart_after;  /* results in a row without a new best before the search
                                restarts from a fresh random genome (0: never): 8 */
    double time_limit_s;     /* wall clock of the whole search, saturation included; no
                                candidate is handed over past it (0: none) unless none
                                has a time yet: then the first genome and the seeds, one
                                at a time, until one has: 600 */
    bool fused_start;        /* the second to fifth draws are the most fused, the library,
                                the fused-stored and the least fused genomes
                                (ll_genome_most_fused, _library, _fused_stored,
                                _least_fused): true */
    uint64_t max_draws;      /* genomes drawn, in all, before the space is taken as
                                exhausted (0: 1000 + 200 * limit, times proposals when
                                the model proposes) */
    const int64_t *dims;     /* the dims measured at (hl_graph_dim_at order; NULL: every
                                dim's profile value); copied */
    uint64_t sat_mem_limit;  /* bytes the saturating engine may hold (0: half the memory) */
    sr_eval_kind evaluator;  /* SR_EVAL_AUTO */
    const char *replay_path; /* SR_EVAL_REPLAY: the search.jsonl to answer from. The log's
                                header gives the seed, limit, dims and the search's
                                parameters, which replace these */
    uint32_t gpu_workers;    /* SR_EVAL_GPU: workers (0: one per visible GPU) */
    double gpu_timeout_s;    /* SR_EVAL_GPU: per candidate (0: the evaluator's default) */
    const char *out_dir;     /* where the program, graph.json, search.jsonl and
                                report.html go (NULL: nothing is written) */
    FILE *progress;          /* phases and results as they come (NULL: silent) */
    struct sr_evaluator *ev; /* TESTS: an evaluator to use instead (borrowed; the search
                                neither frees it nor reads `evaluator`) */
    const char *worker_exe;  /* SR_EVAL_GPU: the workers' executable, started as `EXE
                                --worker ...` (NULL: this process's, /proc/self/exe); a
                                library user whose program is not luminal_search names
                                one (luminal.h) */
} sr_options;

void sr_options_default(sr_options *o);

/* Wall seconds of each phase. compile and measure are the evaluator's (compile_s of its
 * results; the time spent waiting for results, compiles included); search is making
 * candidates (drawing, mutating, deduplicating, building and verifying LLIR, the cost
 * model); codegen is cg_plan_new. */
typedef struct sr_phase_times {
    double saturate, space, search, codegen, compile, measure, save, total;
} sr_phase_times;

/* One kernel of the winner, for the report. */
typedef struct sr_kernel_row {
    char template_name[32]; /* the codegen template, or "cublaslt" */
    uint32_t llir_node;
    char llir_op[32]; /* the LLIR node's constructor (KAdd, FStore, Blas, ...) */
    int64_t grid[3];  /* blocks at the dims (0 for a library call) */
    uint32_t block[3];
    double bytes, flops; /* at the dims */
    double modelled_us;  /* the cost model's time of this step */
} sr_kernel_row;

typedef struct sr_report {
    char evaluator[48]; /* "gpu", "cost-model", "replay of gpu", ... */
    bool measured;      /* times are measurements; false: modelled, not measured */
    char note[160];     /* why this evaluator (the probe's finding) */
    /* the space */
    uint64_t rows; /* the saturated e-graph's rows */
    uint32_t classes, decisions;
    double log2_programs;
    /* candidates */
    uint64_t evaluated;             /* search candidates handed to the evaluator (<= limit) */
    uint64_t ok;                    /* of them, with a time */
    uint64_t by_status[SR_REASONS]; /* search candidates by result (sr_reason_name) */
    uint64_t build_failed;          /* genomes whose LLIR could not be built (recorded) */
    uint64_t codegen_failed;        /* LLIR that codegen refused (recorded, compile-failed) */
    uint64_t dup_genomes;           /* genomes drawn again (after canonicalization) */
    uint64_t dup_programs;          /* new genomes giving a program already seen */
    uint64_t screened;              /* programs the model screened out (recorded, too-slow) */
    uint64_t declined;              /* proposals the model did not pick (not recorded) */
    uint64_t draws, restarts;
    bool time_up;         /* the time limit stopped the search */
    bool exhausted;       /* no new program was found within max_draws */
    bool replay_diverged; /* a replay was asked for a candidate its log lacks */
    /* times, ms (NAN when none) */
    double best_ms, first_ms, reference_ms;
    double best_modelled_ms, reference_modelled_ms;
    char reference_status[24], reference_why[256];
    uint64_t best_n;             /* the winner's number among the search candidates (1-based) */
    char best_genome[17];        /* its genome hash, hex */
    char best_fingerprint[33];   /* its LLIR fingerprint, hex (hi then lo) */
    char egraph_fingerprint[33]; /* ll_space_fingerprint of the saturated e-graph */
    bool first_checked, winner_checked; /* compared with the reference runtime */
    uint32_t winner_kernels, winner_blas;
    uint32_t n_kernel_rows;
    sr_kernel_row *kernel_rows; /* the winner's steps (owned; sr_report_fini) */
    sr_phase_times t;
    uint64_t seed, limit;
} sr_report;

void sr_report_fini(sr_report *r);

/* Runs the search on g (checked, e.g. from hl_graph_load_json). Fills *rep (also on
 * failure, with what was done). Fails only when the search itself cannot run: the rules
 * refused, saturation past a limit, the space refused, no evaluator, out of memory, the
 * output directory not writable, no candidate with a time at all (LM_ELIMIT, saying
 * what every candidate's result was). A candidate's failure is never an error. */
int sr_search_run(const struct hl_graph *g, const sr_options *o, sr_report *rep, lm_err *err);

/* The final table (winner, first candidate, reference lowering, measured / rejected by
 * reason, time per phase), as `luminal_search` prints it. */
void sr_report_fprint(const sr_report *r, FILE *f);

/* The summary as one JSON object (`luminal_search --json`), NUL-terminated, freed by
 * the caller with free(); NULL when out of memory. */
char *sr_report_json(const sr_report *r);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_SEARCH_H */
