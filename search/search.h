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
 *
 * The same seed with the cost model gives the same plan, byte for byte; with the GPU the
 * plan follows the measurements, and replaying a search's measurement log reproduces it.
 * docs/search.md describes the search, its options and their defaults.
 */
#ifndef LUMINAL_SEARCH_H
#define LUMINAL_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sr_search sr_search;

/* The GPU evaluator's worker process: `luminal_search --worker ...` enters here before
 * anything else is parsed (sr_worker.c says what the arguments and the pipe protocol are).
 * Returns the process's exit status. */
int sr_worker_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_SEARCH_H */
