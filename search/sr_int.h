/* sr_int.h - internals shared by search/'s files and its white-box tests.
 *
 *   sr_cost.c     the analytic cost model: the time of a plan at given dims, per step
 *   sr_replay.c   the replay evaluator: answers from a previous search's log
 *   sr_search.c   the search loop (with sr_setup.c, sr_pop.c, sr_winner.c, sr_log.c;
 *                 their shared state is sr_state.h)
 *   sr_door.c     the error door (sr_door.h: the allocation and error doors)
 *   sr_report.c   the summary: the table and --json
 *   sr_save.c     the output directory: program/, graph.json, report.html
 */
#ifndef LUMINAL_SR_INT_H
#define LUMINAL_SR_INT_H

#include <stdio.h>

#include "search.h"
#include "sr_door.h"
#include "sr_eval.h"

/* ---- dims: values for the expressions of one pool, by dim name ---- */

/* Values for the variables of pool p, bound by name from the hlir graph's dims (values
 * in hl_graph_dim_at order). Every pool variable that names no dim of g stays unbound. */
typedef struct sr_env {
    int64_t *values;
    bool *bound;
    hl_env env;
} sr_env;

int sr_env_init(sr_env *e, const hl_expr_pool *p, const hl_graph *g, const int64_t *dims,
                lm_err *err);
void sr_env_fini(sr_env *e);
/* e evaluated (z = 0), or -1 when it cannot be (unbound, overflow). */
int64_t sr_env_eval(const sr_env *e, const hl_expr_pool *p, hl_expr x);

/* ---- the cost model (sr_cost.c) ---- */

/* The modelled time of plan p (generated from lg) at the dims of g (values in
 * hl_graph_dim_at order): the sum of every step's time plus the replay's fixed cost.
 * rows (may be NULL) receives one row per step, owned by the caller (free()). LM_EEVAL
 * when a size cannot be evaluated at the dims, LM_ENOMEM. */
int sr_cost_plan(const cg_plan *p, const ll_graph *lg, const hl_graph *g, const int64_t *dims,
                 double *ms, sr_kernel_row **rows, uint32_t *n_rows, lm_err *err);

/* The cost model as an evaluator (declared here and in sr_eval.h's comment). One slot;
 * a candidate whose modelled time exceeds its cutoff is SR_TOO_SLOW (with its time). */
sr_evaluator *sr_cost_model_new(const sr_eval_setup *s, lm_err *err);

/* ---- the replay evaluator (sr_replay.c) ---- */

/* What a log's header recorded about the search that wrote it. */
typedef struct sr_log_header {
    char evaluator[32];
    bool measured;
    uint32_t slots;
    uint64_t seed, limit, max_draws;
    uint32_t keep_best, max_mutations, restart_after;
    double cutoff_factor;
    double screen_factor; /* 0 in a log that predates the screen */
    uint32_t proposals;   /* 1 in a log that predates the proposals */
    bool fused_start;
    uint32_t n_dims;
    int64_t dims[32];
    char dim_names[32][64];
    uint64_t search_evaluated; /* search candidates the log holds results of */
} sr_log_header;

/* Reads the log at path and makes an evaluator that answers each candidate with the
 * result recorded for its LLIR fingerprint (and check flag), in the order the log
 * recorded them finishing, with the log's number of slots, so that the search that
 * wrote it is reproduced exactly. A candidate the log lacks is SR_ERROR ("not in the
 * replayed log") and sets the flag sr_replay_diverged reads. hdr receives the header.
 * LM_EIO, LM_EPARSE naming the line, LM_ENOMEM. */
sr_evaluator *sr_replay_new(const char *path, sr_log_header *hdr, lm_err *err);
bool sr_replay_diverged(const sr_evaluator *ev);

/* ---- the output directory (sr_save.c) ---- */

/* Opens PATH.tmp (its name into tmp) for writing; NULL with LM_EIO. */
FILE *sr__open_tmp(const char *path, char *tmp, size_t cap, lm_err *err);
/* Closes f and, when rc is 0 and the close succeeded, renames tmp over path (else removes
 * tmp). Returns the first error. */
int sr__commit_tmp(FILE *f, const char *tmp, const char *path, int rc, lm_err *err);

/* One point of the search curve: after the n-th evaluated search candidate, the best. */
typedef struct sr_curve_point {
    uint64_t n;
    double ms;      /* this candidate's time (NAN: none) */
    double best_ms; /* the best so far (NAN: none yet) */
} sr_curve_point;

/* Writes out_dir/program (pg_program_new on the CPU backend, then pg_program_save),
 * out_dir/graph.json (graph_path's bytes, or g written canonically when graph_path is
 * NULL or "-"). LM_EIO, the program's errors. */
int sr_save_program(const char *out_dir, const cg_plan *plan, const ll_graph *lg, const hl_graph *g,
                    const char *graph_path, const char *egraph_fp, const char *genome_fp,
                    lm_err *err);
/* Writes out_dir/report.html: self-contained (inline SVG and CSS, nothing fetched). */
int sr_save_report(const char *out_dir, const sr_report *r, const char *graph_name,
                   const sr_curve_point *curve, uint64_t n_curve, lm_err *err);

/* "ms" with 4 significant digits, or "-" for NAN, into buf. */
const char *sr_fmt_ms(double ms, char *buf, size_t cap);

#endif /* LUMINAL_SR_INT_H */
