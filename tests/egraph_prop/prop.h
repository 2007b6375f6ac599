/* prop.h: private header of the engine's property test (tests/egraph_prop).
 *
 * prop_gen.c writes a random rule program from a seed (PCG32), recording its schema;
 * prop_canon.c computes an id-independent canonical form of an engine's database, so
 * that two databases that differ only in e-class numbering compare equal. */
#ifndef PROP_H
#define PROP_H

#include <stddef.h>
#include <stdint.h>

#include "egraph.h"

/* PCG32 (O'Neill), the project's generator for every random choice. */
typedef struct {
    uint64_t state, inc;
} pg_rng;
void pg_rng_seed(pg_rng *r, uint64_t seed, uint64_t stream);
uint32_t pg_rng_next(pg_rng *r);
/* Uniform in [0, n), n > 0. */
uint32_t pg_rng_below(pg_rng *r, uint32_t n);

/* A growable NUL-terminated string. */
typedef struct {
    char *s;
    size_t len, cap;
} pg_buf;
void pg_buf_printf(pg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pg_buf_free(pg_buf *b);

/* Column kinds of a generated table: PG_I64 or a datatype index (0, 1, ...). */
enum { PG_I64 = -1 };
enum { PG_MAX_COLS = 4, PG_MAX_TABLES = 16 };

typedef struct {
    char name[24];
    int ncols;            /* inputs plus the output column, if any */
    int col[PG_MAX_COLS]; /* PG_I64 or a datatype index */
} pg_table;

/* What the generator declared: the tables the canonical form reads. */
typedef struct {
    size_t schedule_at; /* offset in the program text where the schedule starts */
    int two_rulesets;   /* 1: rules are in rulesets rs0 and rs1; 0: the default one */
    int iterations;     /* the schedule's repeat count */
    int ndatatypes;
    int ntables;
    pg_table tables[PG_MAX_TABLES];
} pg_schema;

/* Writes a random, well-typed program for seed into *text (caller frees with
 * pg_buf_free) and its schema into *schema. The program uses datatypes (mutually
 * recursive when there are two), a :merge min function and a relation, rewrites with
 * :when guards, rules with several atoms, shared variables, constants, primitive
 * bindings and comparisons, a random set of starting terms, unions and facts, and a
 * bounded schedule. Every action is idempotent, so semi-naive and naive evaluation must
 * agree. Cannot fail. */
void pg_generate(uint64_t seed, pg_buf *text, pg_schema *schema);

/* The canonical form of a database: for every row of every schema table, a hash of the
 * table and its columns where e-classes are replaced by labels from colour refinement
 * (Weisfeiler-Lehman over the row hypergraph), sorted. Two databases equal up to
 * renaming of e-classes give equal forms; any difference in rows, literals, function
 * values or class structure changes the form (up to 64-bit hash collisions and the
 * rare graphs colour refinement cannot tell apart). */
typedef struct {
    size_t nrows;
    uint64_t *rows; /* sorted row hashes */
    size_t nclasses;
    uint64_t *classes; /* sorted class labels */
} pg_canon;

/* Computes the canonical form of e's database (rebuilds e first). Returns 0, or an
 * engine error code with err filled. The caller frees out with pg_canon_free. */
int pg_canonicalize(eg_engine *e, const pg_schema *schema, pg_canon *out, lm_err *err);
void pg_canon_free(pg_canon *c);
/* 1 when a and b are equal. */
int pg_canon_equal(const pg_canon *a, const pg_canon *b);

#endif
