/* eg_internal.h: the engine's private structures, shared by the egraph/ files only.
 *
 * The database is a set of tables, one per constructor, function or relation. A table
 * stores its rows row-major in one value array (inputs first, then the output column if
 * the table has one), with three parallel arrays: the row's timestamp, its flags (dead,
 * subsumed) and the hash of its key. Rows are only ever appended; a row that changes is
 * killed and a new row appended, so timestamps are non-decreasing along the array and
 * "rows new since time T" is a suffix found by binary search. The primary index maps a
 * key (the input columns) to its one live row.
 *
 *     row r:  cols[r*ncols .. r*ncols+n_in-1] = inputs, cols[r*ncols+n_in] = output
 *             ts[r]  flags[r]  khash[r]
 *
 * E-class ids of all user sorts share one dense id space and one union-find (uf[]); the
 * root of a set is always its smallest id, so the choice never depends on order.
 *
 * Invariant after eg__rebuild (the "clean" window): every live row holds canonical ids
 * only, no two live rows of a table share a key, and every pending buffer is empty.
 */
#ifndef EG_INTERNAL_H
#define EG_INTERNAL_H

#include "egraph.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- memory: the one door (eg_mem.c) ---- */
void *eg__alloc(size_t n); /* aborts on OOM with a message */
void *eg__calloc(size_t n, size_t size);
void *eg__realloc(void *p, size_t n);
void *eg__array(void *p, size_t n, size_t size); /* overflow-checked realloc */
void eg__free(void *p);
char *eg__strdup(const char *s);
char *eg__strndup(const char *s, size_t n);

/* The account of one engine's counted memory (eg_mem.c): bytes held now and at most. */
typedef struct {
    size_t bytes, peak;
    bool underflow; /* a block was freed through an account it was not counted in */
} eg_mem_acct;
void *eg__mcalloc(eg_mem_acct *m, size_t n, size_t size);
void *eg__marray(eg_mem_acct *m, void *p, size_t n, size_t size); /* counted eg__array */
void eg__mfree(eg_mem_acct *m, void *p);
char *eg__mstrndup(eg_mem_acct *m, const char *s, size_t n);
/* Counts (or uncounts) bytes held in blocks allocated uncounted, for structures that are
 * built in many small steps and held as a whole (a join index). */
void eg__mem_add(eg_mem_acct *m, size_t bytes);
void eg__mem_sub(eg_mem_acct *m, size_t bytes);

/* Growable array helper: ensures cap >= need (in elements). */
#define EG_GROW(ptr, cap, need)                                                                    \
    do {                                                                                           \
        if ((size_t)(need) > (size_t)(cap)) {                                                      \
            size_t nc_ = (cap) ? (size_t)(cap)*2 : 8;                                              \
            while (nc_ < (size_t)(need))                                                           \
                nc_ *= 2;                                                                          \
            (ptr) = eg__array((ptr), nc_, sizeof(*(ptr)));                                         \
            (cap) = nc_;                                                                           \
        }                                                                                          \
    } while (0)

/* EG_GROW through the account m. */
#define EG_MGROW(m, ptr, cap, need)                                                                \
    do {                                                                                           \
        if ((size_t)(need) > (size_t)(cap)) {                                                      \
            size_t nc_ = (cap) ? (size_t)(cap)*2 : 8;                                              \
            while (nc_ < (size_t)(need))                                                           \
                nc_ *= 2;                                                                          \
            (ptr) = eg__marray((m), (ptr), nc_, sizeof(*(ptr)));                                   \
            (cap) = nc_;                                                                           \
        }                                                                                          \
    } while (0)

/* ---- s-expressions (eg_sexp.c) ---- */
typedef enum { SX_LIST, SX_SYM, SX_INT, SX_FLOAT, SX_STR } sx_kind;

typedef struct sx {
    sx_kind kind;
    uint32_t line, col;
    const char *file; /* borrowed: owned by the engine's file-name list */
    char *text;       /* SYM / STR: owned */
    int64_t i;
    double f;
    struct sx **items; /* LIST: owned */
    uint32_t n;
} sx;

/* Parses all top-level forms of text. Returns 0, or -1 with err filled. */
int eg__sx_parse(const char *text, const char *file, sx ***out, uint32_t *n, eg_error *err);
void eg__sx_free(sx *s);
bool eg__sx_is(const sx *s, const char *sym);

/* ---- sorts ---- */
typedef enum { SK_UNIT, SK_BOOL, SK_I64, SK_F64, SK_STRING, SK_EQ, SK_PAIR } sort_kind;

typedef struct eg_prim eg_prim;

typedef struct {
    char *name;
    sort_kind kind;
    /* SK_PAIR: element sorts and the sort's own primitives (pair, pair-first, pair-second) */
    uint32_t elem[2];
    eg_prim *pair_prims; /* owned, 3 entries */
    bool canon;          /* values may change when classes merge: an e-class, or a pair
                            holding one; rebuilding re-canonicalizes such columns */
} eg_sort;

enum { SORT_UNIT = 0, SORT_BOOL, SORT_I64, SORT_F64, SORT_STRING, SORT_NBUILTIN };

/* ---- tables ---- */
typedef enum { TK_CONSTRUCTOR, TK_FUNCTION, TK_RELATION } table_kind;
typedef enum { MG_UNION, MG_NONE, MG_EXPR } merge_kind;

enum { RF_DEAD = 1, RF_SUBSUMED = 2 };

struct aexpr;

typedef struct {
    uint32_t mask;    /* columns in the key */
    uint32_t hi;      /* rows [0, hi) indexed */
    uint64_t version; /* table version when built */
    uint32_t *slots;  /* group id + 1, 0 = empty */
    uint32_t nslots;
    uint32_t *gfirst; /* per group: a row holding its key */
    uint32_t *gstart; /* per group: start in rows[] (ngroups + 1 entries) */
    uint32_t ngroups;
    uint32_t *rows;
    size_t bytes; /* what its arrays hold, as counted in the engine's account */
} sindex;

typedef struct eg_table {
    eg_mem_acct *mem; /* the engine's account: storage and indexes are counted there */
    char *name;
    uint32_t id;
    table_kind kind;
    uint32_t n_in;
    bool has_out;
    uint32_t ncols;
    uint32_t *in_sort;
    uint32_t out_sort;
    merge_kind merge;
    struct aexpr *merge_expr; /* MG_EXPR: vars 0 = old, 1 = new */
    uint32_t merge_nvars;
    uint64_t cost;
    bool hidden; /* :internal-hidden (not in print-size) */
    bool unextractable;
    bool has_eq; /* any eq-sort column */
    /* storage */
    eg_value *cols;
    uint32_t *ts;
    uint8_t *flags;
    uint64_t *khash;
    uint32_t *slotpos; /* per row: its slot in the primary index (valid while live) */
    uint32_t nrows, cap, nlive;
    uint32_t hi;      /* rows visible to the current search phase; UINT32_MAX: all */
    uint64_t version; /* bumped whenever a row dies */
    /* primary index: open addressing, linear probing; a slot holds the key hash's high
     * 32 bits above (row + 1); 0 is empty, SLOT_DELETED a removed entry */
    uint64_t *slots;
    uint32_t nslots, nused;
    /* secondary indexes cached for one search phase */
    sindex *six;
    uint32_t nsix, capsix;
} eg_table;

/* ---- primitives (eg_prim.c) ---- */
typedef enum { PR_OK = 0, PR_FAIL = 1 } prim_status;

struct eg_prim {
    const char *name;
    int nargs;     /* -1: variadic (>= 1) */
    uint32_t arg;  /* sort of every argument (builtin sorts) */
    uint32_t arg2; /* sort of second argument when different, else same as arg */
    uint32_t ret;
    int op;
};

const eg_prim *eg__prim_find(const char *name, const uint32_t *arg_sorts, uint32_t nargs,
                             bool *name_known);
const eg_prim *eg__prim_eq(void);
/* Resolves a primitive by name and argument sorts, including the primitives of pair
 * sorts declared in engine e. */
const eg_prim *eg__prim_resolve(const struct eg_engine *e, const char *name,
                                const uint32_t *arg_sorts, uint32_t nargs, bool *name_known);
void eg__pair_prims_init(eg_sort *s, uint32_t self);
enum { EG_OP_PAIR = 1000, EG_OP_PAIR_FIRST, EG_OP_PAIR_SECOND };
struct eg_engine;
prim_status eg__prim_call(struct eg_engine *e, const eg_prim *p, const eg_value *args,
                          uint32_t nargs, eg_value *out, const char **why);

/* ---- expressions used by actions (and merges) ---- */
typedef enum { AE_VAR, AE_CONST, AE_GLOBAL, AE_PRIM, AE_TABLE } aexpr_kind;

typedef struct aexpr {
    aexpr_kind kind;
    uint32_t sort;
    uint32_t var;    /* AE_VAR */
    eg_value c;      /* AE_CONST */
    uint32_t global; /* AE_GLOBAL */
    const eg_prim *prim;
    uint32_t table; /* AE_TABLE */
    struct aexpr **args;
    uint32_t nargs;
    const sx *at; /* source, for run-time errors */
} aexpr;

typedef enum { AC_LET, AC_SET, AC_UNION, AC_DELETE, AC_SUBSUME, AC_PANIC, AC_EXPR } action_kind;

typedef struct {
    action_kind kind;
    uint32_t var;   /* AC_LET */
    uint32_t table; /* AC_SET / AC_DELETE / AC_SUBSUME */
    aexpr **args;   /* table args */
    uint32_t nargs;
    aexpr *a, *b; /* LET: a; SET: b value; UNION: a,b; EXPR: a */
    char *msg;    /* PANIC */
    const sx *at;
} action;

/* ---- queries ---- */
typedef struct {
    uint32_t table;
    uint32_t ncols;
    uint32_t *var; /* per column: query variable */
} q_atom;

typedef struct {
    const eg_prim *prim;
    uint32_t *args;
    uint32_t nargs;
    uint32_t res; /* variable receiving (or compared with) the result */
    const sx *at; /* the call, for messages */
} q_prim;

typedef struct {
    uint32_t nvars;
    uint32_t *var_sort;
    char **var_name;
    bool *is_const;
    eg_value *const_val;
    int32_t *const_global; /* >= 0: variable is the value of that global */
    q_atom *atoms;
    uint32_t natoms;
    q_prim *prims;
    uint32_t nprims;
    bool never; /* contradictory constants: no match */
} query;

typedef struct {
    char *name;
    uint32_t ruleset;
    query q;
    action *acts;
    uint32_t nacts;
    uint32_t nslots; /* variables incl. action lets */
    bool naive;
    uint32_t seen; /* rows with ts >= seen are new to this rule */
    /* stats */
    double time_s;
    uint64_t matches;
    const sx *at;
} rule;

typedef struct {
    char *name;
    uint32_t *rules;
    uint32_t nrules, caprules;
    double time_s;
    uint64_t matches;
    uint32_t iterations;
} ruleset;

typedef struct {
    char *name;
    uint32_t sort;
    eg_value val;
} global;

typedef struct {
    uint32_t table;
    size_t off; /* its values: pend_vals[off ..] (ncols or n_in of them) */
    uint8_t op; /* 0 set, 1 delete, 2 subsume, 3 relation insert */
} pending_op;

/* Saved state for push/pop. */
typedef struct {
    eg_table *tables; /* shallow struct copies with deep-copied storage */
    uint32_t ntables;
    uint32_t *uf;
    uint32_t nids;
    global *globals;
    uint32_t nglobals;
    uint32_t nsorts, nrules, nrulesets;
    uint32_t *rule_seen;
    uint32_t ts;
} frame;

#define EG_SCOPED_DEPTH 16 /* scoped work buffers open at once, at most */

struct eg_engine {
    eg_options opt;
    eg_mem_acct mem; /* counted memory (eg_mem.c) */
    /* sorts, tables, rules */
    eg_sort *sorts;
    uint32_t nsorts, capsorts;
    eg_table *tables;
    uint32_t ntables, captables;
    rule *rules;
    uint32_t nrules, caprules;
    ruleset *rulesets;
    uint32_t nrulesets, caprulesets;
    global *globals;
    uint32_t nglobals, capglobals;
    /* strings */
    char **strs;
    uint64_t *str_hash;
    uint32_t nstrs, capstrs;
    uint32_t *str_slots;
    uint32_t str_nslots;
    /* interned pair values: id -> (first, second) */
    eg_value *pairs;
    uint64_t *pair_hash;
    uint32_t npairs, cappairs;
    uint32_t *pair_slots;
    uint32_t pair_nslots;
    /* union-find over e-class ids */
    uint32_t *uf;
    uint32_t nids, capids;
    uint64_t unions;       /* successful unions, ever */
    uint64_t canon_unions; /* value of unions when every row was last made canonical */
    /* rebuilding (eg_rebuild.c) */
    uint32_t *dirty; /* ids that stopped being roots since the current pass began */
    uint32_t ndirty, capdirty;
    uint32_t *seeds; /* the same, for the pass being made */
    uint32_t nseeds, capseeds;
    bool pass_open;     /* a rebuild pass began and has not finished (an error stopped it) */
    bool dirty_off;     /* during runs: unions are not listed in dirty ... */
    bool dirty_lost;    /* ... and when one was not, the next pass must be a full one */
    bool uses_on;       /* the uses index exists and is kept up to date */
    uint32_t *use_head; /* per id: its first use, UINT32_MAX none */
    uint32_t nuse_head, capuse_head;
    uint32_t *use_next; /* per use: the id's next use */
    uint64_t *use_key;  /* per use: table << 32 | row */
    uint32_t nuse, capuse, nuse_built;
    uint64_t *heap; /* candidate rows of an indexed pass */
    uint32_t nheap, capheap;
    uint64_t passes_full, passes_indexed; /* statistics */
    /* time */
    uint32_t ts;
    bool changed;
    bool in_search;
    /* pending writes (sets, deletes, subsumes) */
    pending_op *pend;
    uint32_t npend, cappend;
    eg_value *pend_vals; /* the values of all pending ops, one flat buffer */
    size_t npend_vals, cappend_vals;
    /* name indexes for tables and globals (eg_engine.c), kept up to date lazily */
    struct name_map *tmap, *gmap;
    /* push/pop */
    frame *frames;
    uint32_t nframes, capframes;
    /* files: names kept alive for sx locations; parsed programs kept for rules */
    char **files;
    uint32_t nfiles, capfiles;
    sx **progs;
    uint32_t nprogs, capprogs;
    /* error state for the command being run */
    void *cc; /* compile scratch of the current command, freed if it fails */
    /* scoped work buffers (eg__scoped_alloc): live while a phase of a command runs; a
     * rule action may throw from inside a join, and the command boundary frees those a
     * throw left behind */
    void *scoped[EG_SCOPED_DEPTH];
    uint32_t nscoped;
    const sx *cur_at; /* the command being run: the location of errors that have none */
    eg_error *err;
    jmp_buf *jmp;
    /* statistics */
    uint64_t iterations;
    double search_s, apply_s, rebuild_s;
    eg_stop_reason last_stop;
    double run_start;    /* when the current run began (time limit) */
    int limit_stop;      /* a limit cut the current iteration short: its reason, or 0 */
    uint64_t match_tick; /* matches since the last limit check */
    /* output */
    FILE *out;
    FILE *log;
};

/* ---- engine internals ---- */
int eg__fail(struct eg_engine *e, const sx *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void eg__errorf(eg_error *err, const sx *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
_Noreturn void eg__throw(struct eg_engine *e, const sx *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

uint32_t eg__intern(struct eg_engine *e, const char *s, size_t n);
const char *eg__str(const struct eg_engine *e, uint32_t id);
uint32_t eg__new_id(struct eg_engine *e);
static inline uint32_t eg__find(struct eg_engine *e, uint32_t x)
{
    uint32_t *uf = e->uf;
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}
bool eg__union(struct eg_engine *e, uint32_t a, uint32_t b);
int32_t eg__sort_find(const struct eg_engine *e, const char *name);
int32_t eg__table_find(const struct eg_engine *e, const char *name);
int32_t eg__global_find(const struct eg_engine *e, const char *name);
int32_t eg__ruleset_find(const struct eg_engine *e, const char *name);
/* Forgets the name indexes (after pop removed tables or globals); rebuilt on next use. */
void eg__names_reset(struct eg_engine *e);
static inline bool eg__needs_canon(const struct eg_engine *e, uint32_t sort)
{
    return e->sorts[sort].canon;
}
static inline bool eg__is_eq(const struct eg_engine *e, uint32_t sort)
{
    return e->sorts[sort].kind == SK_EQ;
}
double eg__now(void);

/* ---- tables (eg_table.c) ---- */
void eg__table_init(eg_table *t);
void eg__table_fini(eg_table *t);
uint64_t eg__key_hash(const eg_value *key, uint32_t n);
int64_t eg__table_lookup(const eg_table *t, const eg_value *key, uint64_t h);
uint32_t eg__table_append(struct eg_engine *e, eg_table *t, const eg_value *row, uint64_t h,
                          uint8_t flags);
void eg__table_kill(eg_table *t, uint32_t r);
void eg__table_compact(eg_table *t);
void eg__table_clear_six(eg_table *t);
const sindex *eg__table_six(eg_table *t, uint32_t mask, uint32_t hi);
int64_t eg__six_lookup(const eg_table *t, const sindex *ix, const eg_value *vals_by_col);
uint32_t eg__table_first_ts(const eg_table *t, uint32_t ts);
void eg__table_copy(eg_table *dst, const eg_table *src);

/* Inserts a row with merge semantics. row: ncols values, already canonical. */
void eg__insert(struct eg_engine *e, eg_table *t, const eg_value *row, bool subsumed);
/* Constructor lookup-or-insert: returns the output value for the key. */
eg_value eg__lookup_or_insert(struct eg_engine *e, eg_table *t, eg_value *key);

/* ---- compile (eg_compile.c) ---- */
int eg__run_program(struct eg_engine *e, uint32_t first, uint32_t n);
int eg__command(struct eg_engine *e, const sx *form);
void eg__query_free(query *q);
void eg__aexpr_free(aexpr *a);
void eg__actions_free(action *acts, uint32_t n);

/* ---- execution (eg_exec.c) ---- */
typedef bool (*match_fn)(struct eg_engine *e, void *ctx, eg_value *vals);
/* Runs q over the visible rows; naive: one join over all rows, else one semi-naive join
 * per atom (that atom over rows with ts >= seen). fn returns false to stop. */
void eg__query_run(struct eg_engine *e, query *q, bool naive, uint32_t seen, bool subsumed_ok,
                   eg_value *vals, match_fn fn, void *ctx);
eg_value eg__eval(struct eg_engine *e, const aexpr *a, eg_value *vals);
void eg__exec_actions(struct eg_engine *e, const action *acts, uint32_t n, eg_value *vals);
/* Rebuilding (eg_rebuild.c). eg__rebuild may use the index of e-class uses (for rebuilds
 * after top-level commands); eg__rebuild_full always makes full passes (after iterations). */
void eg__rebuild(struct eg_engine *e);
void eg__rebuild_full(struct eg_engine *e);
void eg__rebuild_reset(struct eg_engine *e); /* pop restored the tables: forget the index */
void eg__uses_drop(struct eg_engine *e);
void eg__uses_add_row(struct eg_engine *e, const eg_table *t, uint32_t r);
/* Debug check, slow: when the uses index exists, every e-class cell of every live row is
 * in it. Returns 0, or -1 with a description in why. */
int eg__uses_check(struct eg_engine *e, char *why, size_t n);
void eg__flush_pending(struct eg_engine *e);
eg_stop_reason eg__run_ruleset(struct eg_engine *e, uint32_t rs, uint64_t n, query *until,
                               bool *changed);
eg_value eg__canon(struct eg_engine *e, uint32_t sort, eg_value v);

/* ---- extraction & output (eg_extract.c) ---- */
uint64_t *eg__extract_costs(struct eg_engine *e, uint32_t **best_row, uint32_t **best_tab);
void eg__print_value(struct eg_engine *e, FILE *f, uint32_t sort, eg_value v);
void eg__print_term(struct eg_engine *e, FILE *f, uint32_t sort, eg_value v, const uint64_t *cost,
                    const uint32_t *best_row, const uint32_t *best_tab);
uint64_t eg__value_cost(struct eg_engine *e, uint32_t sort, eg_value v, const uint64_t *cost);

/* ---- push / pop ---- */
void eg__push(struct eg_engine *e);
int eg__pop(struct eg_engine *e);
void eg__frame_free(struct eg_engine *e, frame *f);

/* Scoped work buffers: zeroed memory that a phase of a command (an iteration, a query
 * run) owns. Freed in LIFO order by eg__scoped_free; if the command throws, the command
 * boundary frees every buffer opened since it began (eg__scoped_unwind). */
void *eg__scoped_alloc(eg_engine *e, size_t bytes);
void eg__scoped_free(eg_engine *e, void *p);
void eg__scoped_unwind(eg_engine *e, uint32_t mark);

#endif
