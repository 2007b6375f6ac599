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
    const char *graph;  /* --graph FILE */
    const char *emit;   /* --emit KIND, or NULL */
    bool reference;     /* --reference */
    uint64_t seed;      /* --seed N (default 0) */
    uint64_t mem_limit; /* --mem-limit BYTES (0: the machine's memory) */
    bool json;          /* --json */
    bool quiet;         /* --quiet */
    uint32_t n_dims;    /* --dim NAME=V, in order given */
    const char *dim_name[LS_MAX_DIM_ARGS];
    int64_t dim_value[LS_MAX_DIM_ARGS];
} ls_opts;

/* Runs the reference runtime on seeded random inputs and prints one report line (or one
 * JSON object) per output: name, dtype, shape, sum, max |x| and the XXH3-64 hash of the
 * output's bytes. Dims take their profile values unless --dim sets them. */
int ls_reference(const hl_graph *g, const ls_opts *o);

#endif /* LUMINAL_LS_INT_H */
