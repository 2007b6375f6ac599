/* prop_canon.c: an id-independent canonical form of an engine's database.
 *
 * Semi-naive and naive evaluation may apply the same matches in different orders, so
 * they may number new e-classes differently while building the same database. To
 * compare them we name every e-class by its structure instead of its id: colour
 * refinement (1-dimensional Weisfeiler-Lehman) over the hypergraph whose hyperedges are
 * table rows. A class starts with its sort as colour; each round, its new colour hashes
 * its old one with the sorted multiset of its occurrences (table, column, and the
 * colours or literals of the row's other columns). Rounds stop when the number of
 * colours stops growing. The form is then the sorted hashes of all rows, with classes
 * replaced by colours, and the sorted colours. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "prop.h"

typedef struct {
    int table;        /* schema table */
    int engine_table; /* engine table id */
    size_t ncols;     /* columns the engine stores */
} tinfo;

static uint64_t hash_words(const uint64_t *w, size_t n)
{
    return XXH3_64bits(w, n * sizeof w[0]);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t count_distinct(uint64_t *tmp, const uint64_t *v, size_t n)
{
    memcpy(tmp, v, n * sizeof v[0]);
    qsort(tmp, n, sizeof tmp[0], cmp_u64);
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || tmp[i] != tmp[i - 1]) d++;
    return d;
}

static int col_is_class(const pg_table *t, size_t c)
{
    return c < (size_t)t->ncols && t->col[c] != PG_I64;
}

static int fail(lm_err *err, const char *msg, const char *name)
{
    if (err) {
        lm_err_set(err, LM_EARG, NULL, "pg_canonicalize: %s %s", msg, name);
    }
    return LM_EARG;
}

int pg_canonicalize(eg_engine *e, const pg_schema *schema, pg_canon *out, lm_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = eg_rebuild(e, err);
    if (rc) return rc;

    /* Read every row once: rows[] holds the columns of all tables back to back. */
    tinfo ti[PG_MAX_TABLES];
    size_t total = 0, nrows = 0;
    for (int t = 0; t < schema->ntables; t++) {
        int et = eg_table_lookup(e, schema->tables[t].name);
        if (et < 0) return fail(err, "no engine table named", schema->tables[t].name);
        size_t nc = eg_table_arity(e, et) + (eg_table_has_output(e, et) ? 1 : 0);
        if (nc < (size_t)schema->tables[t].ncols || nc > PG_MAX_COLS + 1)
            return fail(err, "unexpected column count in", schema->tables[t].name);
        ti[t] = (tinfo){t, et, nc};
        total += eg_table_size(e, et) * nc;
        nrows += eg_table_size(e, et);
    }
    uint64_t *cells = malloc((total + 1) * sizeof *cells);
    uint64_t maxid = 0;
    size_t at = 0;
    for (int t = 0; t < schema->ntables; t++) {
        size_t cursor = 0, n = 0, size = eg_table_size(e, ti[t].engine_table);
        uint64_t row[PG_MAX_COLS + 1];
        lm_err rerr = {0};
        while (eg_table_next_row(e, ti[t].engine_table, &cursor, row, NULL, &rerr)) {
            if (n++ == size) break; /* more rows than eg_table_size says */
            for (size_t c = 0; c < ti[t].ncols; c++) {
                cells[at + c] = row[c];
                if (col_is_class(&schema->tables[t], c)) {
                    cells[at + c] = eg_find(e, row[c]);
                    if (cells[at + c] > maxid) maxid = cells[at + c];
                }
            }
            at += ti[t].ncols;
        }
        if (rerr.code || n != size) {
            free(cells);
            return fail(err, "the row cursor disagrees with eg_table_size for",
                        schema->tables[t].name);
        }
    }

    /* Classes: every id that occurs in a class column, numbered densely. */
    size_t nids = (size_t)maxid + 1;
    int64_t *dense = malloc(nids * sizeof *dense);
    for (size_t i = 0; i < nids; i++)
        dense[i] = -1;
    size_t ncl = 0;
    uint64_t *colour = malloc((nids + 1) * sizeof *colour);
    at = 0;
    for (int t = 0; t < schema->ntables; t++)
        for (size_t i = 0; i < eg_table_size(e, ti[t].engine_table); i++, at += ti[t].ncols)
            for (size_t c = 0; c < ti[t].ncols; c++)
                if (col_is_class(&schema->tables[t], c) && dense[cells[at + c]] < 0) {
                    dense[cells[at + c]] = (int64_t)ncl;
                    colour[ncl++] = 0x1000u + (uint64_t)schema->tables[t].col[c]; /* its sort */
                }

    /* Occurrence lists: for class k, occ[occ_start[k] .. occ_start[k+1]) hold
     * (row cell offset, table, column) triples flattened as three words. */
    size_t *deg = calloc(ncl + 1, sizeof *deg);
    at = 0;
    for (int t = 0; t < schema->ntables; t++)
        for (size_t i = 0; i < eg_table_size(e, ti[t].engine_table); i++, at += ti[t].ncols)
            for (size_t c = 0; c < ti[t].ncols; c++)
                if (col_is_class(&schema->tables[t], c)) deg[dense[cells[at + c]] + 1]++;
    for (size_t k = 0; k < ncl; k++)
        deg[k + 1] += deg[k];
    size_t nocc = deg[ncl];
    size_t *fill = malloc((ncl + 1) * sizeof *fill);
    memcpy(fill, deg, (ncl + 1) * sizeof *fill);
    uint64_t *occ = malloc((3 * nocc + 1) * sizeof *occ);
    at = 0;
    for (int t = 0; t < schema->ntables; t++)
        for (size_t i = 0; i < eg_table_size(e, ti[t].engine_table); i++, at += ti[t].ncols)
            for (size_t c = 0; c < ti[t].ncols; c++)
                if (col_is_class(&schema->tables[t], c)) {
                    size_t slot = fill[dense[cells[at + c]]]++;
                    occ[3 * slot] = at;
                    occ[3 * slot + 1] = (uint64_t)t;
                    occ[3 * slot + 2] = c;
                }

    /* Colour refinement. */
    uint64_t *next = malloc((ncl + 1) * sizeof *next);
    uint64_t *tmp = malloc((nocc + ncl + 1) * sizeof *tmp);
    uint64_t w[PG_MAX_COLS + 4];
    size_t ncolours = count_distinct(tmp, colour, ncl);
    for (size_t round = 0; round < ncl + 1; round++) {
        for (size_t k = 0; k < ncl; k++) {
            size_t n = 0;
            for (size_t o = deg[k]; o < deg[k + 1]; o++) {
                size_t off = occ[3 * o];
                int t = (int)occ[3 * o + 1];
                size_t me = occ[3 * o + 2], m = 0;
                w[m++] = (uint64_t)t;
                w[m++] = me;
                for (size_t c = 0; c < ti[t].ncols; c++) {
                    if (c == me) continue;
                    w[m++] = col_is_class(&schema->tables[t], c) ? colour[dense[cells[off + c]]]
                                                                 : cells[off + c] ^ 0x5bd1e995u;
                }
                tmp[n++] = hash_words(w, m);
            }
            qsort(tmp, n, sizeof tmp[0], cmp_u64);
            tmp[n++] = colour[k];
            next[k] = hash_words(tmp, n);
        }
        memcpy(colour, next, ncl * sizeof *colour);
        size_t d = count_distinct(tmp, colour, ncl);
        if (d <= ncolours && round > 0) break;
        ncolours = d;
    }

    /* The form: sorted row hashes and sorted colours. */
    out->nrows = nrows;
    out->rows = malloc((nrows + 1) * sizeof *out->rows);
    at = 0;
    size_t r = 0;
    for (int t = 0; t < schema->ntables; t++)
        for (size_t i = 0; i < eg_table_size(e, ti[t].engine_table); i++, at += ti[t].ncols) {
            size_t m = 0;
            w[m++] = (uint64_t)t;
            for (size_t c = 0; c < ti[t].ncols; c++)
                w[m++] = col_is_class(&schema->tables[t], c) ? colour[dense[cells[at + c]]]
                                                             : cells[at + c] ^ 0x5bd1e995u;
            out->rows[r++] = hash_words(w, m);
        }
    qsort(out->rows, nrows, sizeof *out->rows, cmp_u64);
    out->nclasses = ncl;
    out->classes = malloc((ncl + 1) * sizeof *out->classes);
    memcpy(out->classes, colour, ncl * sizeof *colour);
    qsort(out->classes, ncl, sizeof *out->classes, cmp_u64);

    free(cells);
    free(dense);
    free(colour);
    free(deg);
    free(fill);
    free(occ);
    free(next);
    free(tmp);
    return 0;
}

void pg_canon_free(pg_canon *c)
{
    free(c->rows);
    free(c->classes);
    memset(c, 0, sizeof *c);
}

int pg_canon_equal(const pg_canon *a, const pg_canon *b)
{
    return a->nrows == b->nrows && a->nclasses == b->nclasses &&
           memcmp(a->rows, b->rows, a->nrows * sizeof a->rows[0]) == 0 &&
           memcmp(a->classes, b->classes, a->nclasses * sizeof a->classes[0]) == 0;
}
