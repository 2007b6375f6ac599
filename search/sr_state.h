/* sr_state.h - the search's state, shared by the files of the search loop (internal to
 * search/; the public contract is search.h, the algorithm docs/search.md):
 *
 *   sr_search.c   sr_search_run: the phases in order, the candidates in flight, results
 *   sr_setup.c    saturation and the space, the evaluator, a replayed log's header
 *   sr_pop.c      the population: parents, the hall of the best, drawing and mutating
 *                 genomes, the model's proposals
 *   sr_winner.c   the checks of the first candidate and the winner, the winner saved
 *   sr_log.c      search.jsonl (one JSON object a line) and the progress lines
 *
 * One srch lives for one sr_search_run. It owns everything it points to except g, the
 * options' strings, r (the caller's report) and err.
 */
#ifndef LUMINAL_SR_STATE_H
#define LUMINAL_SR_STATE_H

#include <jansson.h>

#include "lm_keyset.h"
#include "sr_int.h"

#define SR_STREAM 0x736561726368ull /* "search" */
#define SR_HALL 8                   /* best candidates kept for the winner's check */
#define SR_OVERTIME 5 /* past the time limit, with no time yet: the first genome and 4 seeds */

/* ---- the state ---- */

typedef enum role { ROLE_REFERENCE = 0, ROLE_SEARCH, ROLE_CHECK } role;

/* A measured candidate's program, kept for its check and for saving when it is the
 * first candidate or in the hall of the best: the very LLIR and plan that were
 * evaluated, so that nothing is built again after the loop. Shared by count (the hall
 * and the first candidate may hold one together); sr__built_release frees it with the
 * last holder. */
typedef struct sr_built {
    uint32_t refs;
    ll_graph *lg;
    cg_plan *plan;
    double modelled_ms;
    ll_fingerprint fp; /* lg's */
} sr_built;

typedef struct member { /* a parent, or one of the hall of the best */
    ll_genome g;
    double ms;
    uint64_t id;
    sr_built *b; /* the hall's: its program (a reference held); NULL for parents */
} member;

typedef struct flight { /* a candidate handed to the evaluator */
    bool used;
    uint64_t id;
    role role;
    ll_graph *lg;
    cg_plan *plan;
    ll_fingerprint fp; /* lg's (when lg is built) */
    ll_genome g;
    bool have_genome;
    const char *origin;
    uint64_t parent;
    double modelled_ms;
    bool costed; /* plan and modelled_ms are made (a proposal the model chose) */
    uint32_t kernels;
    bool check;    /* handed over with sr_candidate.check */
    bool borrowed; /* lg and plan belong to an sr_built (a check): not freed here */
} flight;

typedef struct srch {
    const hl_graph *g;
    sr_options o;
    sr_report *r;
    lm_err *err;
    FILE *log; /* search.jsonl, or NULL */
    FILE *pr;  /* progress, or NULL */
    double t0, deadline;
    char log_path[4096], log_tmp[4200]; /* the log, and its name while it is written */

    struct cs_session *cs; /* the compile session: engine, encoding, space */
    const ll_space *s;     /* cs's space */
    uint32_t ns;
    int64_t *dims; /* hlir order */
    uint32_t nd;

    sr_evaluator *ev, *own_ev;
    uint32_t slots;
    flight *fl;
    uint32_t inflight;

    lm_pcg32 rng;
    lm_keyset genomes, programs; /* genome hashes (hash, 0); LLIR fingerprints */
    member pop[64];
    uint32_t pop_n;
    member hall[SR_HALL];
    uint32_t hall_n;
    uint32_t stagnation;
    bool restart_pending;
    uint64_t next_id, done;
    uint64_t submitted_search;
    uint64_t first_id; /* the first search candidate handed over */
    ll_genome first_g; /* its genome, for its check after the search (have_first) */
    sr_built *first_b; /* its program, when it has a time (first_ok) */
    bool have_first, first_ok;
    uint32_t *order;
    uint8_t *mark;

    sr_curve_point *curve;
    uint64_t n_curve, cap_curve;
} srch;

/* ---- sr_search.c ---- */

/* Seconds until the deadline (INFINITY: none). */
double sr__time_left(const srch *x);
/* Frees what f owns and zeroes it. */
void sr__flight_clear(flight *f);
flight *sr__free_slot(srch *x);
/* Out of memory ends the search, whatever part failed: when e holds LM_ENOMEM it is
 * copied into the search's error and returned; otherwise LM_OK (a candidate's other
 * failures are results, recorded and skipped). */
int sr__fatal(srch *x, const lm_err *e);
/* Builds f's LLIR (from its genome unless given), skips a program already seen (*ok
 * false, nothing recorded), numbers it, generates its plan and costs it. *ok false, with
 * the candidate recorded, when it cannot be built or generated. */
int sr__prepare(srch *x, flight *f, bool *ok);
/* Hands f to the evaluator (check: with sr_candidate.check). */
int sr__submit(srch *x, flight *f, bool check);
/* Waits for one result and records it. */
int sr__take_result(srch *x);

/* ---- sr_setup.c ---- */

/* Encodes and saturates the graph, builds the space, fingerprints the e-graph. */
int sr__saturate(srch *x);
/* Opens the evaluator the options ask for (or the caller's), and the flights. */
int sr__open_evaluator(srch *x);
/* The replay's header replaces the search's parameters and dims. */
int sr__apply_header(srch *x, const sr_log_header *h);

/* ---- sr_pop.c ---- */

/* Inserts (g, ms, id) into a list sorted by (ms, id), keeping at most cap; b (may be
 * NULL) is held by the new member (a reference taken), and a member pushed out lets go
 * of its own. *in (may be NULL): it went in. */
int sr__member_insert(member *list, uint32_t *n, uint32_t cap, const ll_genome *g, double ms,
                      uint64_t id, sr_built *b, bool *in, lm_err *err);
/* Removes list[i]. */
void sr__member_remove(member *list, uint32_t *n, uint32_t i);
/* A new sr_built (one reference) that takes lg and plan; NULL (they untouched) when out
 * of memory. */
sr_built *sr__built_new(ll_graph *lg, cg_plan *plan, double modelled_ms, ll_fingerprint fp);
void sr__built_release(sr_built *b); /* accepts NULL */
void sr__member_clear(member *list, uint32_t *n);
/* Draws a genome into f (a search candidate); canonicalized. */
int sr__draw(srch *x, flight *f);
/* The model's pick among up to `proposals` new genomes, in *best (have: one was found). */
int sr__propose(srch *x, flight *best, bool *have);

/* ---- sr_winner.c ---- */

int sr__check_first_and_winner(srch *x);
/* The winner into the report (its kernels costed) and, with out_dir, saved. */
int sr__winner(srch *x);

/* ---- sr_log.c ---- */

void sr__hex64(uint64_t v, char *buf);
void sr__hexfp(ll_fingerprint fp, char *buf);
json_t *sr__jnum(double v); /* a real, or null when not finite */
/* Makes out_dir and opens search.jsonl there (written as .tmp, renamed at the end). */
int sr__open_log(srch *x);
void sr__log_line(srch *x, json_t *obj); /* takes obj */
void sr__log_header(srch *x);
/* One candidate's line: evaluated (res given) or rejected before (why given). */
void sr__log_candidate(srch *x, const flight *f, const sr_result *res, int status,
                       const char *why, bool have_fp, ll_fingerprint fp);
void sr__log_end(srch *x);
void sr__progress(srch *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* LUMINAL_SR_STATE_H */
