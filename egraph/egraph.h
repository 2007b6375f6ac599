/* egraph.h: the e-graph engine and its rules language (the egglog core language).
 *
 * An engine (eg_engine) is a value: a database of tables (one per constructor, function
 * and relation), a union-find over e-class ids, rules grouped in rulesets, and globals.
 * It holds no global state, so any number of engines can live in one process. Programs
 * in the rules language (see docs/egraph.md) are run with eg_run_text / eg_run_file; C
 * code can also add terms and unions, run schedules, read tables and globals, extract
 * terms and serialize the e-graph.
 *
 * Errors: the project's one error record, lm_err (base.h). Every function that can fail
 * returns 0 or a positive code (eg_code, whose values are base's lm_code values) and
 * fills the caller's record (err may be NULL). The record's message begins with the input
 * location "file:line:col: ", which is also kept in its file, line and col fields; C API
 * misuse names the function instead ("eg_set: ..."). Records are sticky: a call never
 * clears one, and an error raised into a record that already holds one keeps the first
 * (and the call returns that first code), so a chain of calls is checked once at its end.
 * A failed command leaves the engine usable: the commands before it keep their effects.
 *
 * Determinism: the same program gives the same database, the same ids and the same
 * serialized bytes on every run; nothing depends on addresses or hash order.
 *
 * Memory: all allocation goes through one door (eg_mem.c, mimalloc when available). A
 * failed allocation is an error, never an abort: the call that made it returns LM_ENOMEM
 * (a command stops where the allocation failed). Since that may be in the middle of a
 * rebuild, the engine is then marked failed: every later call except eg_engine_free
 * answers LM_ENOMEM at once (functions without an error record return 0, NULL or false),
 * and eg_engine_free still frees everything. eg_engine_new returns NULL with LM_ENOMEM.
 * Bound growth before the machine's memory runs out with eg_options.mem_limit and
 * node_limit: a run that reaches them stops cleanly and keeps its results so far.
 * eg_options.fail_alloc makes the N-th allocation fail, for tests.
 *
 * Threading: an engine must be used by one thread at a time.
 */
#ifndef EGRAPH_H
#define EGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eg_engine eg_engine;

/* A value of any sort: an i64, the bits of an f64, an interned string id, a bool (0/1),
 * Unit (0), an interned pair id (for (Pair A B) sorts) or an e-class id (for user sorts).
 * Its sort gives its meaning. */
typedef uint64_t eg_value;

/* The most inputs a table (constructor, function, relation) may have, and the most
 * arguments of a primitive call; a table has at most EG_MAX_COLS columns with its output.
 * A declaration or call past it is refused with EG_ERR_LIMIT. */
#define EG_MAX_ARGS 63
#define EG_MAX_COLS (EG_MAX_ARGS + 1)

/* The codes the engine raises: base's lm_code values under the engine's names. */
typedef enum eg_code {
    EG_OK = LM_OK,
    EG_ERR_NOMEM = LM_ENOMEM,     /* an allocation failed: the engine is now unusable */
    EG_ERR_ARG = LM_EARG,         /* bad argument to a C API function */
    EG_ERR_PARSE = LM_EPARSE,     /* malformed s-expression, a bad option value */
    EG_ERR_IO = LM_EIO,           /* a program, include or input file cannot be read */
    EG_ERR_LIMIT = LM_ELIMIT,     /* more columns, arguments or nesting than supported */
    EG_ERR_TYPE = LM_ETYPE,       /* type error, unbound name, wrong arity, ungrounded var */
    EG_ERR_RUNTIME = LM_ERUNTIME, /* failed check, panic, primitive failure, merge conflict */
    EG_ERR_VERIFY = LM_EVERIFY,   /* eg_check_invariants found a broken invariant */
} eg_code;

/* Why a run stopped. */
typedef enum eg_stop_reason {
    EG_STOP_SATURATED = 0,  /* an iteration changed nothing */
    EG_STOP_ITERATIONS = 1, /* the requested number of iterations ran */
    EG_STOP_UNTIL = 2,      /* the :until condition held */
    EG_STOP_NODE_LIMIT = 3, /* eg_options.node_limit reached */
    EG_STOP_ITER_LIMIT = 4, /* eg_options.iter_limit reached */
    EG_STOP_TIME_LIMIT = 5, /* eg_options.time_limit_s reached */
    EG_STOP_MEM_LIMIT = 6,  /* eg_options.mem_limit reached */
} eg_stop_reason;

/* How the engine rebuilds after top-level commands (see docs/egraph.md). Results are
 * identical in every mode; the choice is for tests. */
typedef enum eg_rebuild_mode {
    EG_REBUILD_AUTO = 0,    /* the index of e-class uses when few classes merged */
    EG_REBUILD_INDEXED = 1, /* the index whenever it applies */
    EG_REBUILD_FULL = 2,    /* full passes only */
} eg_rebuild_mode;

/* Engine options. Start from eg_options_default and change fields.
 *
 * The limits: node_limit and mem_limit hold at every moment (each run checks them before
 * every iteration and inside one); iter_limit counts the iterations of the whole program
 * (the engine's life); time_limit_s bounds each top-level command that runs rules: a
 * (run ...), a whole (run-schedule ...) with all its saturate and repeat loops, or one
 * eg_run_schedule call. A command stopped by a limit keeps what it made, reports the stop
 * on log ("run stopped: ...; results so far kept") and the program goes on. */
typedef struct eg_options {
    bool naive;              /* every rule re-matches the whole database each iteration (the
                                reference semi-naive evaluation is tested against) */
    bool snapshot;           /* print only what the conformance snapshots hold (print-size,
                                extraction costs); everything else goes to log or nowhere */
    bool progress;           /* after each iteration, print a progress line (iterations, rows)
                                on log, overwriting the previous one ('\r') */
    uint64_t node_limit;     /* stop runs when the total row count reaches this; 0 = none */
    uint64_t mem_limit;      /* stop runs when the engine's counted memory (eg_mem_bytes:
                                tables, indexes, union-find, interned values, pending writes,
                                join buffers, push frames) reaches this many bytes; 0 = none.
                                Checked where node_limit is, so a run may overshoot it by what
                                one check interval allocates (at most 4096 matches' worth) */
    uint64_t iter_limit;     /* stop runs once the program ran this many iterations; 0 = none */
    double time_limit_s;     /* stop a command that runs rules after this much wall time;
                                0 = none */
    eg_rebuild_mode rebuild; /* rebuilding after top-level commands; default automatic */
    uint64_t fail_alloc;     /* testing: the engine's fail_alloc-th allocation (1 = the first,
                                counted from eg_engine_new, see eg_alloc_count) fails as if
                                memory were exhausted; 0 = never */
    FILE *out;               /* command output (print-size, extract, ...); NULL = stdout */
    FILE *log;               /* reports and diagnostics; NULL = stderr */
} eg_options;

/* Fills o with the defaults (semi-naive, no limits, stdout/stderr). Cannot fail. */
void eg_options_default(eg_options *o);

/* Creates an engine with the built-in sorts (Unit, bool, i64, f64, String, BigInt, BigRat)
 * and the default ruleset. opt may be NULL for the defaults; it is copied. The caller owns the
 * result and frees it with eg_engine_free. NULL with LM_ENOMEM when memory is exhausted. */
eg_engine *eg_engine_new(const eg_options *opt, lm_err *err);

/* Frees the engine and everything it owns, also after an out-of-memory failure. Accepts
 * NULL. Cannot fail. */
void eg_engine_free(eg_engine *e);

/* The time limit of the commands that run rules from now on (eg_options.time_limit_s: 0 =
 * none; a negative or NaN value counts as 0), and the one in force. A driver that runs
 * several schedules under one budget (llir's saturation, phase by phase) gives each what
 * is left of it. Cannot fail. */
void eg_engine_set_time_limit(eg_engine *e, double seconds);
double eg_engine_time_limit(const eg_engine *e);

/* Runs every command of a program, in order. filename is used in error locations and
 * may be NULL ("<input>"). Stops at the first failing command and returns its code,
 * leaving the effects of the commands before it. include/input paths are relative to the
 * current working directory. */
int eg_run_text(eg_engine *e, const char *text, const char *filename, lm_err *err);

/* Reads the file and runs it as eg_run_text does; "-" reads standard input. A missing or
 * unreadable file, or a directory, is EG_ERR_IO. */
int eg_run_file(eg_engine *e, const char *path, lm_err *err);

/* ---- names and sorts ---- */

/* The id of the sort or table (constructor, function, relation) named name, or -1. */
int eg_sort_lookup(const eg_engine *e, const char *name);
int eg_table_lookup(const eg_engine *e, const char *name);

/* The number of sorts (ids are dense, 0 .. count-1: Unit, bool, i64, f64, String,
 * BigInt, BigRat, then the program's sorts in declaration order), and a sort's name
 * (borrowed, valid while the engine lives; NULL for a bad id). */
size_t eg_sort_count(const eg_engine *e);
const char *eg_sort_name(const eg_engine *e, int sort);
/* Whether values of the sort are e-class ids (a sort declared with sort or datatype). */
bool eg_sort_is_eclass(const eg_engine *e, int sort);

/* The sort of column col of a table: col < arity is an input, col == arity the output
 * (a relation's output is Unit). -1 for a bad table or column. */
int eg_table_column_sort(const eg_engine *e, int table, size_t col);

/* The value and sort of the global named name (as written in the program: "$x" or "x"),
 * canonical at the time of the call. Either out pointer may be NULL. EG_ERR_ARG when no
 * global has that name. */
int eg_global_get(eg_engine *e, const char *name, int *sort, eg_value *value, lm_err *err);

/* Makes values of the built-in sorts. eg_value_string interns s (copied) and can fail
 * only when memory is exhausted. */
eg_value eg_value_i64(int64_t v);
eg_value eg_value_f64(double v);
eg_value eg_value_bool(bool v);
int eg_value_string(eg_engine *e, const char *s, eg_value *out, lm_err *err);
int64_t eg_value_as_i64(eg_value v);
double eg_value_as_f64(eg_value v);
/* The text of an interned string value; borrowed, valid while the engine lives ("" for a
 * value that is not an interned string). */
const char *eg_value_as_string(const eg_engine *e, eg_value v);

/* ---- building terms from C ---- */

/* Adds (or finds) the term table(args...) for a constructor, or inserts the row for a
 * relation, and stores the result (the e-class id, or 0 for a relation) in *out (may be
 * NULL). args must have the table's arity and sorts. The database is rebuilt lazily: call
 * eg_rebuild before reading tables if unions were made. Rows made here have the origin
 * EG_ORIGIN_API. */
int eg_add_term(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_value *out,
                lm_err *err);

/* Sets a function's value for args (merging with an existing value per :merge). */
int eg_set(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_value value,
           lm_err *err);

/* Unions two e-classes of the same user sort. */
int eg_union(eg_engine *e, eg_value a, eg_value b, lm_err *err);

/* The canonical id of an e-class value (other values are returned unchanged). */
eg_value eg_find(eg_engine *e, eg_value v);

/* Restores the database invariants (canonical rows, congruence). Fails only on a merge
 * conflict of a :no-merge function or a failing :merge expression (EG_ERR_RUNTIME), or
 * when memory is exhausted. */
int eg_rebuild(eg_engine *e, lm_err *err);

/* Runs a schedule given as text in the rules language, e.g. "(saturate (run))" or
 * "(repeat 3 rules)", as one command (time_limit_s bounds the whole call). *why (may be
 * NULL) receives the stop reason of the last run. */
int eg_run_schedule(eg_engine *e, const char *schedule, eg_stop_reason *why, lm_err *err);

/* ---- reading tables ---- */

/* Number of tables, and each one's name (borrowed), arity (inputs), whether it has an
 * output column, and its live row count. Table ids are dense, in declaration order. */
size_t eg_table_count(const eg_engine *e);
const char *eg_table_name(const eg_engine *e, int table);
size_t eg_table_arity(const eg_engine *e, int table);
bool eg_table_has_output(const eg_engine *e, int table);
size_t eg_table_size(const eg_engine *e, int table);

/* What a reader learns about a row besides its values. */
#define EG_ROW_SUBSUMED 1u /* the row is subsumed: rules do not match it, extraction skips it */
typedef struct eg_row_info {
    uint32_t flags;  /* EG_ROW_SUBSUMED or 0 */
    uint32_t origin; /* who inserted the row: see eg_origin_get */
} eg_row_info;

/* Reads the i-th live row (in row order) into cols (arity + has_output values) and, when
 * info is not NULL, its flags and origin. EG_ERR_ARG if the table or i is out of range.
 * O(1) when the table holds no dead rows (after eg_rebuild most do not), else O(rows); to
 * read a whole table use eg_table_next_row. */
int eg_table_row(const eg_engine *e, int table, size_t i, eg_value *cols, eg_row_info *info,
                 lm_err *err);

/* Iterates the live rows of a table in row order: start with *cursor = 0; each call reads
 * the next live row into cols (and info, when not NULL) and returns true, or returns false
 * at the end or on an error (a bad table or cursor: EG_ERR_ARG in err). The table must not
 * change during the iteration:
 *
 *     size_t cur = 0;
 *     while (eg_table_next_row(e, t, &cur, cols, &info, &err)) { ... }
 *     if (err.code) ...
 */
bool eg_table_next_row(const eg_engine *e, int table, size_t *cursor, eg_value *cols,
                       eg_row_info *info, lm_err *err);

/* ---- provenance: who inserted each row ---- */

typedef enum eg_origin_kind {
    EG_ORIGIN_API = 0,     /* the C API (eg_add_term, eg_set): origin id 0 */
    EG_ORIGIN_COMMAND = 1, /* a top-level command of a program (a let, an action, input) */
    EG_ORIGIN_RULE = 2,    /* a rule, rewrite or birewrite, while a run applied it */
} eg_origin_kind;

typedef struct eg_origin {
    eg_origin_kind kind;
    const char *name; /* a rule: its :name, or "file:line:col" of its text; a command: its
                         head ("let", "union", "input", ...); the API: "api". Borrowed */
    const char *file; /* the program text's file name, or NULL for the API; borrowed */
    uint32_t line, col;
} eg_origin;

/* Describes origin id origin (from eg_row_info, eg_row_origin or a serialized node). A
 * row keeps the origin of the rule or command that first inserted it; rebuilding keeps it
 * when it re-inserts the row canonically; a function row whose value a merge changed has
 * the origin of the write that changed it. Every row costs 4 bytes for it. EG_ERR_ARG for
 * an id the engine never handed out. The strings stay valid while the engine lives. */
int eg_origin_get(const eg_engine *e, uint32_t origin, eg_origin *out, lm_err *err);

/* The origin of the live row of table with inputs args (canonicalized first); EG_ERR_ARG
 * when the table has no such row. */
int eg_row_origin(eg_engine *e, int table, const eg_value *args, size_t nargs, uint32_t *origin,
                  lm_err *err);

/* ---- extraction ---- */

/* Extracts the cheapest term (tree cost: each node's :cost, default 1, plus its
 * children; literals cost 1) of value v of the given sort. *term receives the term as
 * text (free it with eg_string_free), *cost its cost. Either may be NULL. */
int eg_extract(eg_engine *e, int sort, eg_value v, char **term, uint64_t *cost, lm_err *err);
/* Frees a string returned by the engine. Accepts NULL. */
void eg_string_free(char *s);

/* ---- serialization ---- */

/* A plain snapshot of the e-graph. Classes are dense, 0..n_classes-1: first every e-class
 * that has a constructor node, in increasing canonical id order, then one class per
 * distinct literal child (i64, f64, String, bool, Unit, pair), in first-use order. Nodes
 * are every live constructor row, in table order then row order, each with its operator
 * (table name), its class and its child classes; then one literal node per literal class
 * (table UINT32_MAX, op = the sort name, with its sort and payload). Relations are not
 * nodes; functions of one e-class input can be included per class (eg_serialize_opts). */
typedef struct eg_snode {
    uint32_t table;       /* table id, or UINT32_MAX for a literal node */
    const char *op;       /* table name, or the literal's sort name; borrowed from the engine */
    uint32_t eclass;      /* the class this node belongs to */
    uint32_t sort;        /* sort of the literal (literal nodes only) */
    eg_value literal;     /* literal payload (literal nodes only) */
    uint32_t child_start; /* children are children[child_start .. child_start+nchildren) */
    uint32_t nchildren;
    uint64_t cost; /* the node's own cost */
    bool subsumed;
    uint32_t origin; /* who inserted the row (eg_origin_get); 0 for literal nodes */
} eg_snode;

/* The value of an included function for one class: func(class) = value. */
typedef struct eg_sfval {
    uint32_t eclass;      /* the class (the function's input) */
    uint32_t func;        /* index into func_table */
    uint32_t sort;        /* the function's output sort */
    eg_value value;       /* the output value (canonical for e-class outputs) */
    uint32_t value_class; /* for an e-class output: its class in this snapshot, or
                             UINT32_MAX when the class has no node; else UINT32_MAX */
} eg_sfval;

typedef struct eg_serialized {
    uint32_t n_classes;
    uint32_t *class_sort;  /* sort id per class */
    uint64_t *class_value; /* the engine value (e-class id or literal) per class */
    uint32_t n_nodes;
    eg_snode *nodes;
    uint32_t *children; /* class ids */
    uint32_t n_roots;
    uint32_t *roots; /* class ids of the requested roots */
    uint32_t n_funcs;
    uint32_t *func_table; /* table ids of the included functions, in table order */
    uint32_t n_fvals;
    eg_sfval *fvals;   /* sorted by class, then by function */
    bool with_origins; /* eg_serialize_opts.origins: the JSON names each node's origin */
} eg_serialized;

/* What eg_serialize includes besides nodes and classes. */
typedef struct eg_serialize_opts {
    const eg_value *roots; /* roots[i] of sort root_sorts[i] are marked as roots; a root */
    const int *root_sorts; /* that is not an e-class of this engine with at least one node */
    size_t nroots;         /* is skipped, so n_roots <= nroots */
    const int *functions;  /* table ids of functions whose one input is an e-class sort, */
    size_t nfunctions;     /* included per class (EG_ERR_ARG for any other table) */
    bool all_functions;    /* include every function whose one input is an e-class sort */
    bool origins;          /* eg_serialized_write_json writes each node's "origin" */
} eg_serialize_opts;

/* Serializes the e-graph (after a rebuild). opt may be NULL (no roots, no functions). The
 * caller frees out with eg_serialized_free (also after a failure, when out holds what was
 * made so far or is zeroed). */
int eg_serialize(eg_engine *e, const eg_serialize_opts *opt, eg_serialized *out, lm_err *err);
void eg_serialized_free(eg_serialized *s);

/* Writes s as JSON in the egraph-serialize format (extraction-gym): {"nodes": {id:
 * {"op", "children", "eclass", "cost", "subsumed" (only when true), "origin" (only with
 * eg_serialize_opts.origins, constructor nodes)}},
 * "root_eclasses": [...], "class_data": {class: {"type": sort, function: value ...}}}.
 * Node ids are "n<index>", class ids "c<index>"; a child is named by the first node of its
 * class. "origin" is the origin's name (a command's as "head file:line:col"). A function
 * value is a JSON number (i64, finite f64), string (String, other f64, pairs), true/false
 * (bool), null (Unit, or an e-class with no node) or the class id "c<k>" (e-classes).
 * EG_ERR_IO when writing fails. */
int eg_serialized_write_json(eg_engine *e, const eg_serialized *s, FILE *f, lm_err *err);

/* ---- statistics and checks ---- */

/* Prints per-ruleset and per-rule time and matches, iterations, rebuild passes (full and
 * indexed), table sizes, and the engine's counted memory now and at its peak. */
void eg_print_stats(const eg_engine *e, FILE *f);

/* The same statistics as one JSON object: {"iterations", "search_s", "rebuild_s",
 * "rulesets": [{"name", "iterations", "time_s", "matches", "rules": [{"name", "time_s",
 * "matches"}]}], "tables": [{"name", "rows"}], "rows", "mem_bytes", "mem_peak_bytes"}
 * (the counted memory of eg_mem_bytes / eg_mem_peak). */
void eg_print_stats_json(const eg_engine *e, FILE *f);

/* Debug dump: every table with its live rows (raw values, e-class ids as "#id" after
 * find, the row's timestamp and flags), then the number of e-classes. For debugging
 * only; the format may change. */
void eg_dump(eg_engine *e, FILE *f);

/* Total live rows over all tables (the e-node count). */
uint64_t eg_node_count(const eg_engine *e);

/* The bytes the engine's counted memory (see eg_options.mem_limit) holds now, and the
 * most it has held since the engine was created. */
uint64_t eg_mem_bytes(const eg_engine *e);
uint64_t eg_mem_peak(const eg_engine *e);

/* Allocations the engine has made (or tried) since eg_engine_new; with
 * eg_options.fail_alloc, a test can fail each of them in turn. */
uint64_t eg_alloc_count(const eg_engine *e);

/* The stop reason of the most recent run. */
eg_stop_reason eg_last_stop(const eg_engine *e);

/* Debug check, slow: rebuilds the key index of every table from scratch and compares,
 * checks that rows are canonical and keys unique (after eg_rebuild). Returns 0 or
 * EG_ERR_VERIFY with a description of the first violation. */
int eg_check_invariants(eg_engine *e, lm_err *err);

#ifdef __cplusplus
}
#endif
#endif
