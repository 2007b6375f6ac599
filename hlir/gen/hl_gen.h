/* hl_gen.h - a seeded generator of random valid graphs, for fuzzing and round-trip tests
 * (hlir/gen/hl_gen.c). Public. */
#ifndef LUMINAL_HL_GEN_H
#define LUMINAL_HL_GEN_H

#include "hl_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options of the random graph generator. Zero-initialised options are valid and mean
 * the defaults in brackets. */
typedef struct hl_gen_opts {
    uint32_t n_ops;   /* high-level ops to try to add [12] */
    uint32_t max_dim; /* largest static size [6] */
    bool dynamic;     /* also declare a dynamic dim and use it in some shapes */
} hl_gen_opts;

/* Builds a random valid graph from seed: float inputs of random small shapes, then
 * n_ops ops drawn from elementwise unary and binary ops (with broadcasting), reductions,
 * softmax and norms, views (permute, reshape, expand, slice), pad, concat, matmuls,
 * and gathers, embeddings and scatters (whose indexes come from iota expressions, so
 * every index is in range), and one or more outputs. The same seed and options give the same graph.
 * opts may be NULL. Returns the graph or NULL with err set (HL_ERR_NOMEM). Every graph it returns
 * passes hl_graph_check and runs on the reference runtime at any dim value in range. */
hl_graph *hl_graph_generate(uint64_t seed, const hl_gen_opts *opts, lm_err *err);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_GEN_H */
