/* sr_eval.h - how the search hands candidates to what measures them (internal to search/).
 *
 * An evaluator takes candidates (an LLIR graph and its codegen plan) and gives back one
 * result per candidate: a time, or the reason it has none. The search keeps up to
 * slots() candidates in flight (one per GPU worker; 1 for the cost model) and takes
 * results in the order they finish. Two evaluators exist:
 *
 *   sr_cost_model_new  (sr_cost.c)   the analytic model: no GPU, times are modelled
 *   sr_gpu_new         (sr_gpu.c)    worker processes, one per visible GPU, that own the
 *                                    CUDA contexts; times are CUDA-graph replays measured
 *                                    with events (median of trials)
 *
 * A candidate's failure (it does not compile, faults, writes NaN/Inf, needs more memory
 * than the budget, is stopped as too slow, disagrees with the reference) is a result with
 * a status other than SR_OK and a reason, never an error of the evaluator: only the
 * evaluator's own failure (it cannot start a worker at all, out of memory here) returns
 * an error code.
 */
#ifndef LUMINAL_SR_EVAL_H
#define LUMINAL_SR_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base.h"
#include "codegen.h"
#include "hlir.h"
#include "llir.h"

typedef enum sr_status {
    SR_OK = 0,         /* measured (or modelled): ms holds the time */
    SR_COMPILE_FAILED, /* codegen or NVRTC refused it */
    SR_FAULT,          /* it faulted the GPU, or its worker died running it */
    SR_NONFINITE,      /* an output holds NaN or Inf */
    SR_OUT_OF_MEMORY,  /* it needs more device memory than the budget */
    SR_TOO_SLOW,       /* stopped early: already slower than the cutoff */
    SR_TIMEOUT,        /* ran past the per-candidate time limit */
    SR_WRONG,          /* checked against the reference runtime and disagreed */
    SR_ERROR,          /* anything else; why says what */
    SR_STATUS_COUNT
} sr_status;

/* "ok", "compile-failed", "fault", "nonfinite", "out-of-memory", "too-slow", "timeout",
 * "wrong", "error"; the names the search log and --json use. */
const char *sr_status_name(sr_status s);

typedef struct sr_candidate {
    uint64_t id;          /* the search's number for it (results carry it back) */
    const ll_graph *llir; /* borrowed until its result comes back */
    const cg_plan *plan;  /* borrowed likewise: codegen's plan of llir */
    double cutoff_ms;     /* stop early once it is slower than this (0: never) */
    bool costed;          /* modelled_ms is the cost model's time of plan at the
                             evaluator's dims (the search costed it already: the cost
                             model answers with it instead of costing the plan again) */
    double modelled_ms;
    bool check;           /* also compare its outputs with the reference runtime at the
                             evaluator's dims and seed (the first candidate and the winner) */
} sr_candidate;

typedef struct sr_result {
    uint64_t id;
    sr_status status;
    double ms;         /* SR_OK: median time of one call, milliseconds */
    double compile_s;  /* seconds spent compiling it (outside the timed region) */
    int gpu;           /* the device it ran on (its index among the visible ones); -1 when
                          modelled */
    uint32_t trials;   /* replays timed */
    bool checked;      /* compared with the reference (and agreed, unless SR_WRONG) */
    char why[256];     /* the reason when status != SR_OK, else "" */
} sr_result;

typedef struct sr_evaluator sr_evaluator;
typedef struct sr_evaluator_ops {
    const char *name; /* "gpu", "cost-model" */
    bool measured;    /* times are measurements; false: modelled */
    /* candidates that may be in flight at once (>= 1) */
    uint32_t (*slots)(sr_evaluator *ev);
    /* hands over one candidate; at most slots() may be in flight */
    int (*submit)(sr_evaluator *ev, const sr_candidate *c, lm_err *err);
    /* waits for one in-flight candidate to finish and writes its result; LM_EARG
     * when none is in flight (no error set) */
    int (*next)(sr_evaluator *ev, sr_result *out, lm_err *err);
    void (*free)(sr_evaluator *ev);
} sr_evaluator_ops;

struct sr_evaluator {
    const sr_evaluator_ops *ops;
};

/* What an evaluator measures at: the graph (borrowed, outlives the evaluator), the dim
 * values (hl_graph_dim_at order, copied), and the seed of the inputs
 * (hl_graph_fill_input). */
typedef struct sr_eval_setup {
    const hl_graph *graph;
    const char *graph_path; /* the graph's file, for messages (NULL or "-": none); the GPU
                               workers get the graph itself in their setup */
    const int64_t *dims;
    uint64_t seed;
} sr_eval_setup;

#endif /* LUMINAL_SR_EVAL_H */
