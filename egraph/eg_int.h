/* eg_int.h: the engine's private structures, shared by the egraph/ files only.
 *
 * The database is a set of tables, one per constructor, function or relation. A table
 * stores its rows row-major in one value array (inputs first, then the output column if
 * the table has one), with three parallel arrays: the row's timestamp, its flags (dead,
 * subsumed) and its origin; the key's hash is recomputed from the row when needed. Rows are only
 * ever appended; a row that changes is killed and a new row appended, so timestamps are
 * non-decreasing along the array and "rows new since time T" is a suffix found by binary search.
 * The primary index maps a key (the input columns) to its one live row.
 *
 *     row r:  cols[r*ncols .. r*ncols+n_in-1] = inputs, cols[r*ncols+n_in] = output
 *             flags[r]  origin[r]  (timestamps: one per run of rows, ep_ts/ep_row)
 *
 * E-class ids of all user sorts share one dense id space and one union-find (uf[]); the
 * root of a set is always its smallest id, so the choice never depends on order.
 *
 * Invariant after eg__rebuild (the "clean" window): every live row holds canonical ids
 * only, no two live rows of a table share a key, and every pending buffer is empty.
 */
#ifndef EG_INT_H
#define EG_INT_H

#include "egraph.h"

#include <assert.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
/* every hash of the engine is XXH3 compiled into the caller (eg__key_hash) */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- memory: the one door (eg_mem.c) ----
 *
 * Every allocation of the engine goes through these functions. They count allocations
 * (eg_options.fail_alloc fails the N-th), check sizes for overflow and, when memory is
 * exhausted, raise LM_ENOMEM out of the current command with eg__throw after marking the
 * engine failed (eg__oom). They must therefore only be called inside a command or API
 * boundary (e->jmp set). A failed realloc (eg__array) leaves the old block as it was.
 * The eg__m* variants also count the block in the engine's memory account (mem_limit).
 * Freed blocks need no engine. */
void *eg__alloc(eg_engine *e, size_t n);
void *eg__calloc(eg_engine *e, size_t n, size_t size);
void *eg__array(eg_engine *e, void *p, size_t n, size_t size); /* overflow-checked realloc */
char *eg__strdup(eg_engine *e, const char *s);
char *eg__strndup(eg_engine *e, const char *s, size_t n);
void eg__free(void *p);
/* Like eg__calloc but returns NULL instead of raising (growth that is only an
 * optimisation, such as the name index, may fail quietly). */
void *eg__try_calloc(eg_engine *e, size_t n, size_t size);
/* Marks the engine failed and raises LM_ENOMEM (asking for n bytes). */
_Noreturn void eg__oom(eg_engine *e, size_t n);

/* The account of one engine's counted memory (eg_mem.c): bytes held now and at most. */
typedef struct {
    size_t bytes, peak;
    bool underflow; /* a block was freed through an account it was not counted in */
} eg_mem_acct;
void *eg__mcalloc(eg_engine *e, size_t n, size_t size);
void *eg__marray(eg_engine *e, void *p, size_t n, size_t size); /* counted eg__array */
void eg__mfree(eg_engine *e, void *p);
char *eg__mstrndup(eg_engine *e, const char *s, size_t n);
/* Counts (or uncounts) bytes held in blocks allocated uncounted, for structures that are
 * built in many small steps and held as a whole (a join index). */
void eg__mem_add(eg_engine *e, size_t bytes);
void eg__mem_sub(eg_engine *e, size_t bytes);

/* Bump allocation for memory that lives as long as the engine (parsed programs: rules
 * keep pointers into them). Never freed one by one; eg__arena_free frees all. */
typedef struct eg_arena_block {
    struct eg_arena_block *next;
    size_t used, cap;
    max_align_t data[];
} eg_arena_block;
void *eg__arena_alloc(eg_engine *e, size_t n);
void eg__arena_free(eg_engine *e);

/* Growable array helper: ensures cap >= need (in elements). ptr changes only when the
 * allocation succeeded, cap only after ptr. */
#define EG_GROW(e, ptr, cap, need)                                                                 \
    do {                                                                                           \
        if ((size_t)(need) > (size_t)(cap)) {                                                      \
            size_t nc_ = (cap) ? (size_t)(cap)*2 : 8;                                              \
            while (nc_ < (size_t)(need))                                                           \
                nc_ *= 2;                                                                          \
            (ptr) = eg__array((e), (ptr), nc_, sizeof(*(ptr)));                                    \
            (cap) = nc_;                                                                           \
        }                                                                                          \
    } while (0)

/* EG_GROW through the engine's memory account. */
#define EG_MGROW(e, ptr, cap, need)                                                                \
    do {                                                                                           \
        if ((size_t)(need) > (size_t)(cap)) {                                                      \
            size_t nc_ = (cap) ? (size_t)(cap)*2 : 8;                                              \
            while (nc_ < (size_t)(need))                                                           \
                nc_ *= 2;                                                                          \
            (ptr) = eg__marray((e), (ptr), nc_, sizeof(*(ptr)));                                   \
            (cap) = nc_;                                                                           \
        }                                                                                          \
    } while (0)

/* ---- s-expressions (eg_sexp.c) ---- */
typedef enum { SX_LIST, SX_SYM, SX_INT, SX_FLOAT, SX_STR } sx_kind;

/* Parsed forms live in the engine's arena as long as the engine (rules keep pointers to
 * their source for error locations and provenance). */
typedef struct sx {
    sx_kind kind;
    uint32_t line, col;
    const char *file; /* borrowed: owned by the engine's file-name list */
    char *text;       /* SYM / STR (arena) */
    int64_t i;
    double f;
    struct sx **items; /* LIST (arena) */
    uint32_t n;
} sx;

/* Parses all top-level forms of text and appends them to e->progs; *first receives the
 * index of the first. Raises LM_EPARSE (or LM_ELIMIT for nesting past EG_MAX_DEPTH) with
 * the location of the problem. */
void eg__sx_parse(eg_engine *e, const char *text, const char *file, uint32_t *first, uint32_t *n);
bool eg__sx_is(const sx *s, const char *sym);
/* The head symbol of a list form, or NULL. */
const char *eg__sx_head(const sx *s);
#define EG_MAX_DEPTH 2000 /* lists nested deeper are refused (the reader recurses) */
#define EG_MAX_DEPTH_TEXT "2000"

/* ---- sorts ---- */
typedef enum {
    SK_UNIT,
    SK_BOOL,
    SK_I64,
    SK_F64,
    SK_STRING,
    SK_EQ,
    SK_PAIR,
    SK_CONT,
    SK_BIGINT,
    SK_BIGRAT
} sort_kind;
/* container families (SK_CONT, eg_cont.c) */
enum { CK_VEC, CK_SET, CK_MAP, CK_MULTISET, CK_FN };

typedef struct eg_prim eg_prim;

typedef struct {
    char *name;
    sort_kind kind;
    /* SK_PAIR: element sorts and the sort's own primitives (pair, pair-first, pair-second) */
    uint32_t elem[2];
    eg_prim *pair_prims; /* owned, 3 entries */
    /* SK_CONT: the family (CK_*), elem[0] the element (a map's key), elem[1] a map's
     * value, and the sort's own primitives */
    uint8_t family;
    struct eg_cprim *cont_prims; /* owned */
    uint32_t ncont_prims;
    /* CK_FN, (UnstableFn (inputs...) output): the inputs (owned) and the output */
    uint32_t *fn_in;
    uint32_t fn_nin, fn_out;
    bool canon; /* values may change when classes merge: an e-class, or a pair
                   holding one; rebuilding re-canonicalizes such columns */
} eg_sort;

enum {
    SORT_UNIT = 0,
    SORT_BOOL,
    SORT_I64,
    SORT_F64,
    SORT_STRING,
    SORT_BIGINT,
    SORT_BIGRAT,
    SORT_NBUILTIN
};

/* ---- tables ---- */
typedef enum { TK_CONSTRUCTOR, TK_FUNCTION, TK_RELATION } table_kind;
typedef enum { MG_UNION, MG_NONE, MG_EXPR } merge_kind;

enum { RF_DEAD = 1, RF_SUBSUMED = 2 };

struct aexpr;

/* A column set: bit c for column c (tables have at most EG_MAX_COLS columns). */
typedef uint64_t colmask;

typedef struct {
    colmask mask;     /* columns in the key */
    uint32_t hi;      /* rows [0, hi) indexed */
    uint64_t version; /* table version when built */
    uint32_t *slots;  /* group id + 1, 0 = empty */
    uint32_t nslots;
    uint32_t *gfirst; /* per group: a row holding its key */
    uint32_t *gstart; /* per group: start in rows[] (ngroups + 1 entries) */
    uint32_t ngroups;
    uint32_t *rows;
    size_t bytes; /* what its arrays hold, as counted in the engine's account */
    /* work arrays while it is being built (kept here, not in locals, so that an
     * out-of-memory failure part-way frees them with the index) */
    uint32_t *w_grp, *w_cnt;
    uint64_t *w_hash;
} sindex;

typedef struct eg_table {
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
    /* timestamps, by epoch: rows are appended in timestamp order, so a table keeps one
     * (timestamp, first row) pair per run of rows with the same timestamp, not a
     * timestamp per row; eg__row_ts and eg__table_first_ts read them */
    uint32_t *ep_ts, *ep_row;
    uint32_t nep, capep;
    uint8_t *flags;
    uint32_t *origin; /* per row: who inserted it (an origin id, eg_origin_get) */
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

#define SORT_ANY UINT32_MAX /* a primitive over every sort (both arguments of one sort) */

struct eg_prim {
    const char *name;
    int nargs;     /* -1: variadic (>= 1), -2: variadic (>= 0) */
    uint32_t arg;  /* sort of every argument (builtin sorts), or SORT_ANY */
    uint32_t arg2; /* sort of second argument when different, else same as arg */
    uint32_t ret;  /* result sort; SORT_ANY: the arguments' sort */
    int op;
};

const eg_prim *eg__prim_eq(void);
/* Resolves a primitive by name and argument sorts, including the primitives of pair
 * sorts declared in engine e. */
const eg_prim *eg__prim_resolve(const eg_engine *e, const char *name, const uint32_t *arg_sorts,
                                uint32_t nargs, bool *name_known);
void eg__pair_prims_init(eg_engine *e, eg_sort *s, uint32_t self);
/* The result sort of p applied to arguments of sort arg0 (for SORT_ANY results). */
uint32_t eg__prim_ret(const eg_prim *p, uint32_t arg0);
/* The pair with canonical elements (interning it if new). */
eg_value eg__pair_canon(eg_engine *e, uint32_t sort, eg_value v);
/* Writes d as egglog writes an f64 (Rust's Debug form: "1.0", "0.1", "1e20", "NaN"). */
void eg__fmt_f64(double d, char *buf, size_t n);
enum { EG_OP_PAIR = 1000, EG_OP_PAIR_FIRST, EG_OP_PAIR_SECOND, EG_OP_CONT = 1100 };

/* ---- big numbers (eg_big.c): a value is the interned text of its canonical form ---- */
enum {
    EG_OP_Z_FROM_I64 = 900,
    EG_OP_Z_FROM_STRING,
    EG_OP_Z_ADD,
    EG_OP_Z_SUB,
    EG_OP_Z_MUL,
    EG_OP_Z_DIV,
    EG_OP_Z_MOD,
    EG_OP_Z_AND,
    EG_OP_Z_OR,
    EG_OP_Z_XOR,
    EG_OP_Z_SHL,
    EG_OP_Z_SHR,
    EG_OP_Z_NOT,
    EG_OP_Z_BITS,
    EG_OP_Z_LT,
    EG_OP_Z_GT,
    EG_OP_Z_LE,
    EG_OP_Z_GE,
    EG_OP_Z_BLT,
    EG_OP_Z_BGT,
    EG_OP_Z_BLE,
    EG_OP_Z_BGE,
    EG_OP_Z_BEQ,
    EG_OP_Z_MIN,
    EG_OP_Z_MAX,
    EG_OP_Z_TO_STRING,
    EG_OP_Q_FIRST,
    EG_OP_Q_ADD = EG_OP_Q_FIRST,
    EG_OP_Q_SUB,
    EG_OP_Q_MUL,
    EG_OP_Q_DIV,
    EG_OP_Q_MIN,
    EG_OP_Q_MAX,
    EG_OP_Q_NEG,
    EG_OP_Q_ABS,
    EG_OP_Q_FLOOR,
    EG_OP_Q_CEIL,
    EG_OP_Q_ROUND,
    EG_OP_Q_MAKE,
    EG_OP_Q_NUMER,
    EG_OP_Q_DENOM,
    EG_OP_Q_TO_F64,
    EG_OP_Q_TO_I64,
    EG_OP_Q_POW,
    EG_OP_Q_LOG,
    EG_OP_Q_SQRT,
    EG_OP_Q_CBRT,
    EG_OP_Q_LT, /* the predicates come last (eg_big.c) */
    EG_OP_Q_GT,
    EG_OP_Q_LE,
    EG_OP_Q_GE,
    EG_OP_BIG_END
};
prim_status eg__big_call(eg_engine *e, int op, const eg_value *args, uint32_t nargs, eg_value *out,
                         const char **why);
void eg__big_print(const eg_engine *e, FILE *f, uint32_t sort, eg_value v);

/* ---- containers (eg_cont.c) ---- */
/* The target of a function value: a table or a primitive of n_in inputs, the first
 * npartial of them given by the value (eg_cont.c). */
typedef struct eg_fnt {
    uint32_t fsort; /* the UnstableFn sort */
    uint32_t name;  /* interned name */
    uint32_t npartial;
    int32_t table; /* >= 0: a table */
    const eg_prim *prim;
    uint32_t n_in;
    uint32_t in[EG_MAX_ARGS];
    uint32_t out;
} eg_fnt;

/* A container sort's primitive (op >= EG_OP_CONT): an eg_prim, its signature and sort. */
typedef struct eg_cprim {
    eg_prim base;
    const char *sig;
    uint32_t owner;
} eg_cprim;
int eg__cont_family(const char *name); /* "Vec" -> CK_VEC, ..., or -1 */
bool eg__cont_prim_name(const char *name);
void eg__cont_prims_init(eg_engine *e, uint32_t self);
/* Resolves a container primitive by name, argument sorts (NOSORT: not known yet) and
 * result sort (NOSORT: any); *ambiguous when several container sorts fit. */
const eg_prim *eg__cont_resolve(const eg_engine *e, const char *name, const uint32_t *sorts,
                                uint32_t nargs, uint32_t want, bool *known, bool *ambiguous);
uint32_t eg__cont_arg_sort(const eg_engine *e, const eg_prim *p, uint32_t i);
uint32_t eg__cont_ret(const eg_engine *e, const eg_prim *p); /* p's result sort */
/* unstable-fn "name" with partial arguments of sorts ps (NOSORT: unknown): the function
 * sort (want, or the one whose signature the target fits) and its unstable-fn primitive;
 * partial_sorts gets the target's sorts for them. Registers the target once every partial
 * sort is known. NULL when none fits (*ambiguous when several do). */
const eg_prim *eg__fn_resolve(eg_engine *e, const char *name, const uint32_t *ps, uint32_t np,
                              uint32_t want, uint32_t *partial_sorts, bool *ambiguous);
prim_status eg__cont_call(eg_engine *e, const eg_prim *p, const eg_value *args, uint32_t nargs,
                          eg_value *out, const char **why);
eg_value eg__cont_canon(eg_engine *e, uint32_t sort, eg_value v);
/* Makes a container of sort `sort` from v[0..n) (a scoped buffer the caller frees): its
 * elements canonicalised, normalised, interned (eg_cont.c, the pool). */
eg_value eg__cont_make(eg_engine *e, uint32_t sort, eg_value *v, uint32_t n);
const eg_value *eg__cont_elems(const eg_engine *e, eg_value v, uint32_t *n);
uint64_t eg__cont_cost(eg_engine *e, uint32_t sort, eg_value v, const uint64_t *cost);
void eg__cont_print(eg_engine *e, FILE *f, uint32_t sort, eg_value v,
                    void (*elem)(eg_engine *, FILE *, uint32_t, eg_value, void *), void *ctx);
prim_status eg__prim_call(eg_engine *e, const eg_prim *p, const eg_value *args, uint32_t nargs,
                          eg_value *out, const char **why);

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
    uint32_t seen;   /* rows with ts >= seen are new to this rule */
    uint32_t origin; /* the origin id of the rows its actions insert */
    /* stats */
    double time_s;
    uint64_t matches;
    const sx *at;
} rule;

typedef struct {
    char *name;
    uint32_t *rules;
    uint32_t nrules, caprules;
    /* (unstable-combined-ruleset name members...): the member rulesets, each declared
     * before it; running it runs their rules as one ruleset, as they are at that moment */
    bool combined;
    uint32_t *members;
    uint32_t nmembers;
    double time_s;
    uint64_t matches;
    uint32_t iterations;
} ruleset;

typedef struct {
    char *name;
    uint32_t sort;
    eg_value val;
} global;

typedef enum { PEND_SET, PEND_DELETE, PEND_SUBSUME, PEND_INSERT } pend_kind;

typedef struct {
    uint32_t table;
    uint32_t origin; /* the rule that made the write */
    size_t off;      /* its values: pend_vals[off ..] (ncols or n_in of them) */
    uint8_t op;      /* a pend_kind */
} pending_op;

/* Saved state for push/pop. Counts cover only what is complete, so a frame that an
 * out-of-memory failure interrupted is still freed correctly. */
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

/* Who inserted rows (eg_origin_get). Id 0 is the C API. */
typedef struct {
    eg_origin_kind kind;
    const sx *at; /* the rule's or command's form (NULL for the API) */
    char *name;   /* owned */
} origin_rec;

/* A position in the tables: table, then row. */
typedef struct {
    uint32_t table, row;
} eg_rowpos;

#define EG_SCOPED_DEPTH 32 /* scoped work buffers open at once, at most */
#define EG_MAX_NESTING 64  /* commands inside commands (include, fail), at most */

/* What a command owns while it runs, freed by its boundary when it ends or fails
 * (eg_cmd.c). */
typedef struct {
    query *q;
    action *acts;
    uint32_t nacts;
    aexpr *ex;
    eg_value *vals;
    char *text;    /* a file's contents (lm_read_file: free()) */
    char **fields; /* input: the fields of one line */
    uint32_t capfields;
} eg_scratch;
/* Inside an iteration the node, memory and time limits are checked every this many
 * matches, and the time limit also every this many rows a join visits. */
#define EG_LIMIT_CHECK_MATCHES 4096
#define EG_LIMIT_CHECK_VISITS (1u << 20)
/* Rebuilding after a top-level command uses the index of e-class uses when at least
 * EG_INDEX_MIN_ROWS rows hold e-class ids and the merged ids are fewer than 1 in
 * EG_INDEX_SEED_RATIO of them (docs/egraph.md). */
#define EG_INDEX_MIN_ROWS 4096
#define EG_INDEX_SEED_RATIO 64
#define ORIGIN_PENDING UINT32_MAX /* the command's origin is registered at its first row */

struct eg_engine {
    eg_options opt;
    eg_mem_acct mem; /* counted memory (eg_mem.c) */
    uint64_t nalloc; /* allocations made or tried (eg_options.fail_alloc) */
    bool failed;     /* an allocation failed: every call but eg_engine_free refuses */
    size_t failed_bytes;
    eg_arena_block *arena; /* parsed programs (eg__arena_alloc) */
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
    size_t *str_len; /* the length of each string, without its NUL */
    uint32_t nstrs, capstrs;
    uint32_t *str_slots;
    uint32_t str_nslots;
    /* interned pair values: id -> (first, second) */
    eg_value *pairs;
    uint64_t *pair_hash;
    uint32_t npairs, cappairs;
    uint32_t *pair_slots;
    uint32_t pair_nslots;
    /* interned containers: id -> sort, contents cvals[cont_off .. + cont_len) */
    eg_value *cvals;
    size_t ncvals, capcvals;
    uint64_t *cont_off, *cont_hash;
    uint32_t *cont_len, *cont_sort;
    uint32_t nconts, capconts;
    uint32_t *cont_slots;
    char *bigbuf;                          /* big numbers' result text (eg_big.c) */
    eg_value merge_raw_old, merge_raw_new; /* eg__insert -> merge_values */
    uint32_t cont_nslots;
    /* the targets of function values (unstable-fn), registered when a call type-checks */
    struct eg_fnt *fnt;
    uint32_t nfnt, capfnt;
    bool in_query_prim; /* a primitive runs for a query (unstable-app looks up, never adds) */
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
    /* files: names kept alive for sx locations; parsed programs (in the arena) */
    char **files;
    uint32_t nfiles, capfiles;
    sx **progs;
    uint32_t nprogs, capprogs;
    sx **sxstack; /* the reader's stack of list items being read */
    uint32_t nsxstack, capsxstack;
    /* provenance */
    origin_rec *origins;
    uint32_t norigins, caporigins;
    uint32_t cur_origin; /* the origin of rows inserted now, or ORIGIN_PENDING */
    /* error state for the command being run */
    void *cc; /* compile scratch of the current command, freed if it fails */
    eg_scratch scratch[EG_MAX_NESTING]; /* per nesting level of commands (eg_cmd.c) */
    uint32_t depth;
    /* scoped work buffers (eg__scoped_alloc): live while a phase of a command runs; a
     * rule action may throw from inside a join, and the command boundary frees those a
     * throw left behind */
    void *scoped[EG_SCOPED_DEPTH];
    uint32_t nscoped;
    const sx *cur_at; /* the command being run: the location of errors that have none */
    lm_err *err;      /* the caller's record (may be NULL) */
    int thrown;       /* the code the last eg__throw returned */
    jmp_buf *jmp;     /* the innermost boundary (NULL outside commands and API calls) */
    /* statistics */
    uint64_t iterations;
    double search_s, apply_s, rebuild_s;
    eg_stop_reason last_stop;
    bool limit_stopped;  /* a limit stopped a run of the current top-level command */
    double cmd_start;    /* when the current top-level command began (time limit) */
    int limit_stop;      /* a limit cut the current iteration short: its reason, or 0 */
    uint64_t match_tick; /* matches since the last limit check */
    jmp_buf *stop_jmp;   /* while an iteration's search runs: where a limit reached inside
                          * a long primitive stops it (eg__limit_poll) */
    /* the relation inserts pending in this iteration, by key (open addressing over
     * e->pend indices + 1): a row inserted by many matches is queued once */
    uint32_t *pset;
    size_t limit_ask; /* the allocation a memory-limit stop refused (eg__limit_room), or 0 */
    uint32_t npset_slots, npset_used;
    /* output */
    FILE *out;
    FILE *log;
};

/* ---- errors: the door (eg_err.c) ----
 *
 * eg__failv is the engine's one door for errors: every error of the engine is recorded by
 * it, and it ends in base's lm_err_setv (a breakpoint there stops at every error). It
 * records code, the location loc (the project's lm_loc; NULL when none) and the message in
 * err (sticky: a record that holds an error keeps it) and returns the code recorded.
 * eg__fail is its printf form, for API misuse outside commands; eg__throw is the same
 * door for errors inside a command or API call: it records into the call's record
 * (e->err; a NULL loc becomes the current command's) and unwinds to the innermost
 * boundary (e->jmp), which frees the command's scratch.
 *
 * eg__loc turns a form's position into an lm_loc in buf (file, line, col; NULL for a NULL
 * form); EG_LOC(form) does so into a temporary that lives as long as the enclosing call's
 * full expression: eg__throw(e, LM_ETYPE, EG_LOC(s), "..."). */
const lm_loc *eg__loc(lm_loc *buf, const sx *at);
#define EG_LOC(at) eg__loc(&(lm_loc){.node_id = LM_NONE}, (at))
int eg__failv(lm_err *err, int code, const lm_loc *loc, const char *fmt, va_list ap);
int eg__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
_Noreturn void eg__throw(eg_engine *e, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* API boundaries (eg_api.c): runs fn(e, ctx) with e->err = err and a jmp boundary;
 * returns 0 or the code raised. Refuses at once (LM_ENOMEM) on a failed engine. */
typedef void (*eg_guarded_fn)(eg_engine *e, void *ctx);
int eg__guard(eg_engine *e, lm_err *err, const char *fn, eg_guarded_fn body, void *ctx);

uint32_t eg__intern(eg_engine *e, const char *s, size_t n);
uint32_t eg__intern_hashed(eg_engine *e, const char *s, size_t n, uint64_t h, char *owned);
size_t eg__str_len(const eg_engine *e, uint32_t id);
const char *eg__str(const eg_engine *e, uint32_t id);
uint32_t eg__new_id(eg_engine *e);
static inline uint32_t eg__find(eg_engine *e, uint32_t x)
{
    uint32_t *uf = e->uf;
    assert(x < e->nids);
    while (uf[x] != x) {
        assert(uf[x] < x); /* a parent is smaller: the root is the set's smallest id */
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}
bool eg__union(eg_engine *e, uint32_t a, uint32_t b);
int32_t eg__sort_find(const eg_engine *e, const char *name);
int32_t eg__table_find(const eg_engine *e, const char *name);
int32_t eg__global_find(const eg_engine *e, const char *name);
int32_t eg__ruleset_find(const eg_engine *e, const char *name);
/* The name indexes of tables and globals (eg_names.c): made with the engine, freed with
 * it; eg__names_reset forgets them (after pop removed tables or globals), rebuilt on next
 * use. */
void eg__names_new(eg_engine *e);
void eg__names_free(eg_engine *e);
void eg__names_reset(eg_engine *e);
static inline bool eg__needs_canon(const eg_engine *e, uint32_t sort)
{
    return e->sorts[sort].canon;
}
static inline bool eg__is_eq(const eg_engine *e, uint32_t sort)
{
    return e->sorts[sort].kind == SK_EQ;
}
/* The sort of column c of t (inputs, then the output). */
static inline uint32_t eg__col_sort(const eg_table *t, uint32_t c)
{
    return c < t->n_in ? t->in_sort[c] : t->out_sort;
}
/* Registers an origin (kind, form, name copied) and returns its id. */
uint32_t eg__origin_new(eg_engine *e, eg_origin_kind kind, const sx *at, const char *name);
/* Registers the current command's origin and makes it the origin of rows inserted now:
 * eg__table_append calls it for the first row a command appends (the callers pass
 * e->cur_origin, which is ORIGIN_PENDING until then), so a command that only finds
 * existing rows registers nothing. */
uint32_t eg__origin_command(eg_engine *e);
/* Keeps a file name alive for the locations of forms parsed from it. */
const char *eg__keep_file(eg_engine *e, const char *name);

/* ---- tables (eg_table.c) ---- */
void eg__table_init(eg_table *t);
void eg__table_fini(eg_engine *e, eg_table *t);
/* The hash of a key of n values (XXH3, compiled inline: keys are a few words, and the
 * call into the library cost more than the hash). */
static inline uint64_t eg__key_hash(const eg_value *key, uint32_t n)
{
    return XXH3_64bits(key, (size_t)n * sizeof(eg_value));
}
int64_t eg__table_lookup(const eg_table *t, const eg_value *key, uint64_t h);
uint32_t eg__table_append(eg_engine *e, eg_table *t, const eg_value *row, uint64_t h, uint8_t flags,
                          uint32_t origin);
void eg__table_kill(eg_table *t, uint32_t r);
void eg__table_compact(eg_engine *e, eg_table *t);
void eg__table_clear_six(eg_engine *e, eg_table *t);
const sindex *eg__table_six(eg_engine *e, eg_table *t, colmask mask, uint32_t hi);
int64_t eg__six_lookup(const eg_table *t, const sindex *ix, const eg_value *vals_by_col);
uint32_t eg__table_first_ts(const eg_table *t, uint32_t ts);
/* The timestamp of row r (r < nrows). */
uint32_t eg__row_ts(const eg_table *t, uint32_t r);
void eg__table_copy(eg_engine *e, eg_table *dst, const eg_table *src);
/* Moves src's storage (a push frame's) into dst, whose storage was freed; src keeps none. */
void eg__table_take(eg_table *dst, eg_table *src);
/* Steps pos to the next live row at or after it (rows of every table, in table order,
 * then row order) that is not subsumed and belongs to an extractable constructor; false at
 * the end. The walk of extraction and of (extract e n). */
bool eg__next_extractable(const eg_engine *e, eg_rowpos *pos);

/* Inserts a row with merge semantics. row: ncols values. */
void eg__insert(eg_engine *e, eg_table *t, const eg_value *row, bool subsumed, uint32_t origin);
/* Constructor lookup-or-insert: returns the output value for the key. */
eg_value eg__lookup_or_insert(eg_engine *e, eg_table *t, eg_value *key, uint32_t origin);

/* ---- commands and compiling (eg_cmd.c, eg_compile.c, eg_decl.c) ---- */
int eg__run_program(eg_engine *e, uint32_t first, uint32_t n);
/* What a boundary does when a command or call failed: frees the compile scratch and the
 * scoped buffers opened since smark, drops pending writes, ends the search phase. */
void eg__unwind(eg_engine *e, uint32_t smark);
/* Runs one parsed form as a top-level command under its own boundary; 0 or its code. */
int eg__command(eg_engine *e, const sx *form);
/* A declaration or rule (sort, datatype, function, rule, rewrite, ...): true when s was
 * one and has been run. */
bool eg__declare(eg_engine *e, const sx *s);
/* Compiles facts into a query (check, :until); the caller owns the result. */
query *eg__compile_facts(eg_engine *e, const sx *const *facts, uint32_t n);
/* Compiles top-level actions; returns them with their slot count. */
action *eg__compile_actions(eg_engine *e, const sx *const *acts, uint32_t n, uint32_t *nacts,
                            uint32_t *nslots);
/* Compiles one expression with no variables (globals allowed). */
aexpr *eg__compile_expr(eg_engine *e, const sx *s);
/* Frees the compile scratch of a command that failed. */
void eg__cc_abort(eg_engine *e);
void eg__query_free(query *q);
void eg__aexpr_free(aexpr *a);
void eg__actions_free(action *acts, uint32_t n);

/* ---- execution (eg_exec.c) ---- */
typedef bool (*match_fn)(eg_engine *e, void *ctx, eg_value *vals);
/* Runs q over the visible rows; naive: one join over all rows, else one semi-naive join
 * per atom (that atom over rows with ts >= seen). fn returns false to stop. */
void eg__query_run(eg_engine *e, query *q, bool naive, uint32_t seen, bool subsumed_ok,
                   eg_value *vals, match_fn fn, void *ctx);
eg_value eg__eval(eg_engine *e, const aexpr *a, eg_value *vals);
void eg__exec_actions(eg_engine *e, const action *acts, uint32_t n, eg_value *vals);
/* Rebuilding (eg_rebuild.c). eg__rebuild may use the index of e-class uses (for rebuilds
 * after top-level commands); eg__rebuild_full always makes full passes (after iterations). */
void eg__rebuild(eg_engine *e);
void eg__rebuild_full(eg_engine *e);
void eg__rebuild_reset(eg_engine *e); /* pop restored the tables: forget the index */
void eg__uses_drop(eg_engine *e);
void eg__uses_add_row(eg_engine *e, const eg_table *t, uint32_t r);
/* Debug check, slow: when the uses index exists, every e-class cell of every live row is
 * in it. Returns 0, or -1 with a description in why. */
int eg__uses_check(eg_engine *e, char *why, size_t n);
void eg__flush_pending(eg_engine *e);
/* (set (table row...) value) from a primitive: pending in a search, else at once. */
void eg__stage_set(eg_engine *e, uint32_t table, const eg_value *row);
uint32_t eg__ruleset_flatten(const eg_engine *e, uint32_t rs, uint32_t *out, uint8_t *seen,
                             uint32_t n);
/* The limits inside an iteration (eg_exec.c). eg__limits_hit says whether the node
 * (rows), memory or time limit is reached and records which in e->limit_stop.
 * eg__limit_poll, for primitives that may run long (string building), stops the
 * iteration's search at once when a limit is reached; eg__limit_room does so before an
 * allocation of `bytes` would pass the memory limit. Both do nothing outside a search. */
bool eg__limits_hit(eg_engine *e);
void eg__limit_poll(eg_engine *e);
void eg__limit_room(eg_engine *e, size_t bytes);
eg_stop_reason eg__run_ruleset(eg_engine *e, uint32_t rs, uint64_t n, query *until, bool *changed);
/* The canonical form of value v of sort `sort`: its root for an e-class, the canonical
 * pair or container for one holding e-classes (eg__canon_slow), v itself otherwise.
 * Inline: every action argument and key column passes through it. */
eg_value eg__canon_slow(eg_engine *e, uint32_t sort, eg_value v);
static inline eg_value eg__canon(eg_engine *e, uint32_t sort, eg_value v)
{
    const eg_sort *s = &e->sorts[sort];
    if (!s->canon) return v;
    if (s->kind == SK_EQ) return eg__find(e, (uint32_t)v);
    return eg__canon_slow(e, sort, v);
}

/* ---- extraction & output (eg_extract.c) ---- */
/* The cheapest node of every e-class: cost[id] (UINT64_MAX: none) and where it is
 * (table tab[id], row row[id]). Scoped buffers: free with eg__costs_free, LIFO. */
typedef struct {
    uint64_t *cost;
    uint32_t *row, *tab;
} eg_costs;
void eg__costs_compute(eg_engine *e, eg_costs *c);
void eg__costs_free(eg_engine *e, eg_costs *c);
/* The cost of row's node (t's :cost plus its children), UINT64_MAX if a child has none. */
uint64_t eg__node_cost(eg_engine *e, const eg_table *t, const eg_value *row, const uint64_t *cost);
void eg__print_value(eg_engine *e, FILE *f, uint32_t sort, eg_value v);
/* Writes s as a JSON string (quoted, escaped): the one escaper of the engine's JSON
 * outputs (the serialized e-graph, the statistics). */
void eg__json_str(FILE *f, const char *s);
void eg__print_term(eg_engine *e, FILE *f, uint32_t sort, eg_value v, const eg_costs *c);
uint64_t eg__value_cost(eg_engine *e, uint32_t sort, eg_value v, const uint64_t *cost);
/* The cost of a child of this sort: its class's, a container's elements' sum, else 1. */
uint64_t eg__child_cost(eg_engine *e, uint32_t sort, eg_value v, const uint64_t *cost);

/* ---- push / pop (eg_cmd.c) ---- */
void eg__push(eg_engine *e);
int eg__pop(eg_engine *e);
void eg__frame_free(eg_engine *e, frame *f);

/* Scoped work buffers: zeroed, counted memory that a phase of a command (an iteration, a
 * query run, an extraction) owns. Freed in LIFO order by eg__scoped_free; if the command
 * throws, the command boundary frees every buffer opened since it began
 * (eg__scoped_unwind). eg__scoped_grow reallocates the top-most-but-any buffer p to n
 * elements of size bytes (new space zeroed is not promised). */
void *eg__scoped_alloc(eg_engine *e, size_t bytes);
void *eg__scoped_grow(eg_engine *e, void *p, size_t n, size_t size);
void eg__scoped_free(eg_engine *e, void *p);
/* eg__scoped_alloc without zeroing; eg__scoped_release unregisters the top-most buffer p
 * without freeing it (its new owner frees it). */
void *eg__scoped_alloc_raw(eg_engine *e, size_t bytes);
void eg__scoped_release(eg_engine *e, void *p);
void eg__scoped_unwind(eg_engine *e, uint32_t mark);

/* The time, for limits and statistics (base's monotonic clock). */
static inline double eg__now(void)
{
    return lm_now_s();
}

#endif
