/* egraph.h: the e-graph engine and its rules language (the egglog subset).
 *
 * An engine (eg_engine) is a value: a database of tables (one per constructor, function
 * and relation), a union-find over e-class ids, rules grouped in rulesets, and globals.
 * It holds no global state, so any number of engines can live in one process. Programs
 * in the rules language (see docs/egraph.md) are run with eg_run_text / eg_run_file; C
 * code can also add terms and unions, run schedules, read tables, extract terms and
 * serialize the e-graph.
 *
 * Errors: every function that can fail returns 0 on success and a negative eg_errcode on
 * failure, and fills the caller's eg_error (when not NULL) with a message that starts
 * with the input location, "file:line:col: ". A failed command leaves the engine usable:
 * the commands before it keep their effects.
 *
 * Determinism: the same program gives the same database, the same ids and the same
 * serialized bytes on every run; nothing depends on addresses or hash order.
 *
 * Memory: all allocation goes through one wrapper (eg_mem.c, mimalloc when available).
 * Running out of memory is not recovered from: the process prints a message and aborts.
 * Use eg_options.mem_limit (or node_limit) to bound growth instead: a run that reaches
 * it stops cleanly and keeps the results so far.
 *
 * Threading: an engine must be used by one thread at a time.
 */
#ifndef EGRAPH_H
#define EGRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eg_engine eg_engine;

/* A value of any sort: an i64, the bits of an f64, an interned string id, a bool (0/1),
 * Unit (0), an interned pair id (for (Pair A B) sorts) or an e-class id (for user sorts).
 * Its sort gives its meaning. */
typedef uint64_t eg_value;

typedef enum {
    EG_OK = 0,
    EG_ERR_PARSE = -1,   /* malformed s-expression */
    EG_ERR_TYPE = -2,    /* type error, unbound name, wrong arity, ungrounded variable */
    EG_ERR_RUNTIME = -3, /* failed check, panic, primitive failure, merge conflict */
    EG_ERR_IO = -4,      /* missing include or input file */
    EG_ERR_ARG = -5,     /* bad argument to a C API function */
} eg_errcode;

/* The error record filled by failing calls. msg holds "file:line:col: message" (or
 * "<api>: message" for C API misuse); it is always NUL-terminated. */
typedef struct {
    int code;
    char msg[1024];
} eg_error;

/* Why a run stopped. */
typedef enum {
    EG_STOP_SATURATED = 0,  /* an iteration changed nothing */
    EG_STOP_ITERATIONS = 1, /* the requested number of iterations ran */
    EG_STOP_UNTIL = 2,      /* the :until condition held */
    EG_STOP_NODE_LIMIT = 3, /* eg_options.node_limit reached */
    EG_STOP_ITER_LIMIT = 4, /* eg_options.iter_limit reached */
    EG_STOP_TIME_LIMIT = 5, /* eg_options.time_limit_s reached */
    EG_STOP_MEM_LIMIT = 6,  /* eg_options.mem_limit reached */
} eg_stop_reason;

/* Engine options. Start from eg_options_default and change fields. */
typedef struct {
    int naive;           /* 1: every rule re-matches the whole database each iteration
                            (for testing semi-naive evaluation against); default 0 */
    int snapshot;        /* 1: print only what the conformance snapshots hold (print-size,
                            extraction costs); everything else goes to log or nowhere */
    uint64_t node_limit; /* stop runs when the total row count exceeds this; 0 = none */
    uint64_t mem_limit;  /* stop runs when the engine's counted memory (eg_mem_bytes:
                            tables, indexes, union-find, interned values, pending writes,
                            join buffers, push frames) reaches this many bytes; 0 = none.
                            Checked where node_limit is, so a run may overshoot it by what
                            one check interval allocates (at most 4096 matches' worth) */
    uint64_t iter_limit; /* stop runs after this many iterations in total; 0 = none */
    double time_limit_s; /* stop runs after this much wall time in one run; 0 = none */
    int rebuild_index;   /* rebuilding after top-level commands: 0 = automatic (an index of
                            e-class uses when few classes merged, see docs/egraph.md),
                            1 = with the index whenever it applies, -1 = never (full
                            passes). Results are identical in every mode; for testing */
    int progress;        /* 1: after each iteration, print a progress line (iterations,
                            rows) on log, overwriting the previous one ('\r') */
    FILE *out;           /* command output (print-size, extract, ...); NULL = stdout */
    FILE *log;           /* reports and diagnostics; NULL = stderr */
} eg_options;

/* Fills o with the defaults (semi-naive, no limits, stdout/stderr). Cannot fail. */
void eg_options_default(eg_options *o);

/* Creates an engine with the built-in sorts (Unit, bool, i64, f64, String) and the
 * default ruleset. opt may be NULL for the defaults; it is copied. The caller owns the
 * result and frees it with eg_engine_free. Aborts only if memory is exhausted. */
eg_engine *eg_engine_new(const eg_options *opt);

/* Frees the engine and everything it owns. Accepts NULL. */
void eg_engine_free(eg_engine *e);

/* Runs every command of a program, in order. filename is used in error locations and
 * may be NULL ("<input>"). Stops at the first failing command and returns its code,
 * leaving the effects of the commands before it. include/input paths are relative to the
 * current working directory. */
int eg_run_text(eg_engine *e, const char *text, const char *filename, eg_error *err);

/* Reads the file and runs it as eg_run_text does. A missing or unreadable file is
 * EG_ERR_IO. */
int eg_run_file(eg_engine *e, const char *path, eg_error *err);

/* ---- names ---- */

/* The id of the sort or table (constructor, function, relation) named name, or -1. */
int eg_sort_lookup(const eg_engine *e, const char *name);
int eg_table_lookup(const eg_engine *e, const char *name);

/* Makes values of the built-in sorts. eg_value_string interns s (copied). */
eg_value eg_value_i64(int64_t v);
eg_value eg_value_f64(double v);
eg_value eg_value_string(eg_engine *e, const char *s);
int64_t eg_value_as_i64(eg_value v);
double eg_value_as_f64(eg_value v);
/* The text of an interned string value; borrowed, valid while the engine lives. */
const char *eg_value_as_string(const eg_engine *e, eg_value v);

/* ---- building terms from C ---- */

/* Adds (or finds) the term table(args...) for a constructor, or inserts the row for a
 * relation, and stores the result (the e-class id, or 0 for a relation) in *out. args
 * must have the table's arity and sorts. The database is rebuilt lazily: call
 * eg_rebuild before reading tables if unions were made. */
int eg_add_term(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_value *out,
                eg_error *err);

/* Sets a function's value for args (merging with an existing value per :merge). */
int eg_set(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_value value,
           eg_error *err);

/* Unions two e-classes of the same user sort. */
int eg_union(eg_engine *e, eg_value a, eg_value b, eg_error *err);

/* The canonical id of an e-class value. */
eg_value eg_find(eg_engine *e, eg_value v);

/* Restores the database invariants (canonical rows, congruence). Cannot fail except on
 * a merge conflict of a :no-merge function (EG_ERR_RUNTIME). */
int eg_rebuild(eg_engine *e, eg_error *err);

/* Runs a schedule given as text in the rules language, e.g. "(saturate (run))" or
 * "(repeat 3 rules)". *why (may be NULL) receives the stop reason of the last run. */
int eg_run_schedule(eg_engine *e, const char *schedule, eg_stop_reason *why, eg_error *err);

/* ---- reading tables ---- */

/* Number of tables, and each one's name (borrowed), arity (inputs), whether it has an
 * output column, and its live row count. Table ids are dense, in declaration order. */
size_t eg_table_count(const eg_engine *e);
const char *eg_table_name(const eg_engine *e, int table);
size_t eg_table_arity(const eg_engine *e, int table);
int eg_table_has_output(const eg_engine *e, int table);
size_t eg_table_size(const eg_engine *e, int table);
/* Reads the i-th live row (in row order) into cols (arity + has_output values).
 * Returns EG_ERR_ARG if i is out of range. O(1) when the table holds no dead rows (after
 * eg_rebuild most do not), else O(rows); to read a whole table use eg_table_next_row. */
int eg_table_row(const eg_engine *e, int table, size_t i, eg_value *cols);

/* Iterates the live rows of a table in row order: start with *cursor = 0; each call
 * reads the next live row into cols and returns 1, or returns 0 at the end (and
 * EG_ERR_ARG for a bad table). The table must not change during the iteration. */
int eg_table_next_row(const eg_engine *e, int table, size_t *cursor, eg_value *cols);

/* ---- extraction ---- */

/* Extracts the cheapest term (tree cost: each node's :cost, default 1, plus its
 * children; literals cost 1) of value v of the given sort. *term receives the term as
 * text (malloc'd; free with eg_string_free), *cost its cost. Either may be NULL. */
int eg_extract(eg_engine *e, int sort, eg_value v, char **term, uint64_t *cost, eg_error *err);
void eg_string_free(char *s);

/* ---- serialization ---- */

/* A plain snapshot of the e-graph. Classes are dense, 0..n_classes-1: first every e-class
 * that has a constructor node, in increasing canonical id order, then one class per
 * distinct literal child (i64, f64, String, bool, Unit, pair), in first-use order. Nodes
 * are every live constructor row, in table order then row order, each with its operator
 * (table name), its class and its child classes; then one literal node per literal class
 * (table UINT32_MAX, op = the sort name, with its sort and payload). Only the tables of
 * constructors are nodes; functions and relations are not part of the serialization. */
typedef struct {
    uint32_t table;       /* table id, or UINT32_MAX for a literal node */
    const char *op;       /* table name, or the literal's sort name; borrowed from the engine */
    uint32_t eclass;      /* the class this node belongs to */
    uint32_t sort;        /* sort of the literal (literal nodes only) */
    eg_value literal;     /* literal payload (literal nodes only) */
    uint32_t child_start; /* children are children[child_start .. child_start+nchildren) */
    uint32_t nchildren;
    uint64_t cost; /* the node's own cost */
    int subsumed;
} eg_snode;

typedef struct {
    uint32_t n_classes;
    uint32_t *class_sort;  /* sort id per class */
    uint64_t *class_value; /* the engine value (e-class id or literal) per class */
    uint32_t n_nodes;
    eg_snode *nodes;
    uint32_t *children; /* class ids */
    uint32_t n_roots;
    uint32_t *roots; /* class ids of the requested roots */
} eg_serialized;

/* Serializes the e-graph (after a rebuild). roots[i] of sort root_sorts[i] are marked as
 * roots (nroots may be 0, then both may be NULL); a root that is not an e-class of this
 * engine with at least one node is skipped, so n_roots <= nroots. The caller frees out with
 * eg_serialized_free (also after a failure, when out is zeroed). */
int eg_serialize(eg_engine *e, const eg_value *roots, const int *root_sorts, size_t nroots,
                 eg_serialized *out, eg_error *err);
void eg_serialized_free(eg_serialized *s);

/* Writes s as JSON in the egraph-serialize format (extraction-gym): {"nodes": {id:
 * {"op", "children", "eclass", "cost", "subsumed" (only when true)}}, "root_eclasses":
 * [...], "class_data": {class: {"type": sort}}}. Node ids are "n<index>", class ids
 * "c<index>"; a child is named by the first node of its class. Returns 0 or EG_ERR_IO. */
int eg_serialized_write_json(const eg_engine *e, const eg_serialized *s, FILE *f);

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

/* The stop reason of the most recent run. */
eg_stop_reason eg_last_stop(const eg_engine *e);

/* Debug check, slow: rebuilds the key index of every table from scratch and compares,
 * checks that rows are canonical and keys unique (after eg_rebuild). Returns 0 or
 * EG_ERR_RUNTIME with a description of the first violation. */
int eg_check_invariants(eg_engine *e, eg_error *err);

#ifdef __cplusplus
}
#endif
#endif
