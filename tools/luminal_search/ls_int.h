/* ls_int.h - internals shared by luminal_search's files.
 *
 * main.c parses the command line into an ls_opts and dispatches; each action is a
 * function taking the loaded graph and the options, printing to stdout, and returning
 * the process exit status (0 ok, 1 failure with a message on stderr). */
#ifndef LUMINAL_LS_INT_H
#define LUMINAL_LS_INT_H

#include "hlir.h"

#include <stdbool.h>
#include <stdint.h>

#define LS_MAX_DIM_ARGS 16

typedef struct ls_opts {
    const char *graph;   /* --graph FILE */
    const char *emit;    /* --emit KIND, or NULL */
    const char *rules;   /* --rules FILE, or NULL: the built-in rules */
    bool reference;      /* --reference */
    uint64_t fuzz;       /* --fuzz N (0: not asked) */
    bool fuzz_no_verify; /* --fuzz-no-verify (tests only) */
    uint64_t seed;       /* --seed N (default 0) */
    uint64_t mem_limit;  /* --mem-limit BYTES (0: the machine's memory) */
    bool json;           /* --json */
    bool quiet;          /* --quiet */
    /* the search (ls_search.c) */
    bool search;             /* any of the search's options given */
    uint64_t limit;          /* --limit N (0: not given; default 20) */
    const char *out;         /* --out DIR */
    bool cost_model;         /* --cost-model */
    bool gpu;                /* --gpu */
    const char *replay;      /* --replay-measurements FILE */
    double time_limit;       /* --time-limit S (< 0: not given) */
    double cutoff;           /* --cutoff F (< 0: not given) */
    double screen;           /* --screen F (< 0: not given) */
    int64_t keep_best;       /* --keep-best N (< 0: not given) */
    int64_t mutations;       /* --mutations N (< 0: not given) */
    int64_t restart_after;   /* --restart-after N (< 0: not given) */
    int64_t proposals;       /* --proposals N (< 0: not given) */
    bool no_fused_start;     /* --no-fused-start */
    int64_t workers;         /* --workers N (< 0: not given) */
    uint32_t n_dims;     /* --dim NAME=V, in order given */
    const char *dim_name[LS_MAX_DIM_ARGS];
    int64_t dim_value[LS_MAX_DIM_ARGS];
} ls_opts;

/* The dims to run g at (dims.c), per hl_graph_dim_at: the profile values, or with small
 * the fuzzer's small ones (fz_default_dims), then each --dim NAME=V. -1 with a message on
 * stderr for a --dim the graph does not declare or outside its range. */
int ls_dims(const hl_graph *g, const ls_opts *o, bool small, int64_t *vals);

/* Runs the reference runtime on seeded random inputs and prints one report line (or one
 * JSON object) per output: name, dtype, shape, sum, max |x| and the XXH3-64 hash of the
 * output's bytes. Dims take their profile values unless --dim sets them. */
int ls_reference(const hl_graph *g, const ls_opts *o);

/* --fuzz N (fuzz.c): N distinct valid genomes of the graph's search space, each built,
 * verified, run on the CPU executor of LLIR and compared with the reference runtime
 * (the fuzz module, fuzz.h); the disagreements, then `N passed, M failed`. Exit status 1 when a genome
 * failed, or when fewer than N distinct valid genomes were found without proving that the
 * space holds no more. */
int ls_fuzz(const hl_graph *g, const ls_opts *o);

/* --emit space and --emit space-json (space.c): the graph saturated with the rules and
 * the search space's summary (or, with --json, its statistics as one JSON object), or
 * the e-graph as egraph-serialize JSON with the dtype of every IR class. */
int ls_emit_space(const hl_graph *g, const ls_opts *o);
int ls_emit_space_json(const hl_graph *g, const ls_opts *o);

/* The search (ls_search.c): saturate, search, save into --out, print the summary table
 * (or, with --json, the summary object). Progress on stderr unless --quiet. Exit status
 * 0 with a winner, 1 when the search could not run or no candidate has a time. */
int ls_search(const hl_graph *g, const ls_opts *o);

#endif /* LUMINAL_LS_INT_H */
