/* eg_rebuild.c: rebuilding, which restores the database invariants after unions: every
 * live row canonical, no two live rows of a table with one key (congruence).
 *
 * A rebuild runs passes until no union happened since the rows were last canonical. A
 * pass visits the tables in order and each table's rows in order, up to the row count
 * the table had when the pass reached it; every live row that holds a non-canonical id
 * (a stale row) is killed and re-inserted canonically, which may merge it with the row
 * already holding its key and so make more unions (handled by the next pass).
 *
 * The full pass reads every row of every table that holds e-class ids: its cost is the
 * database size. That is right for a rebuild after an iteration, which usually made many
 * unions, but wrong for a top-level (union a b) command, which made one. So a rebuild
 * outside a run may make the same pass from an index instead: the uses of each e-class
 * id (the rows holding it in an e-class column) and the list of ids that stopped being
 * roots since the rows were last canonical (e->dirty). A row can only be stale if it
 * holds such an id, so the candidates are their uses; they are visited in the full
 * pass's (table, row) order through a min-heap, and each is re-checked before it is
 * re-inserted. Unions made during the pass add their ids' uses that lie ahead of the pass
 * position to the heap, exactly the rows the full pass would still reach, and the ids
 * stay in the dirty list for the next pass, which covers the rows behind. (During runs,
 * whose rebuilds are full passes, merged ids are not listed at all.) The indexed
 * pass thus kills and re-inserts the same rows in the same order as the full pass: same
 * rows, same ids, same results. Its cost is the uses of the merged classes.
 *
 * The index costs memory (12 bytes per e-class cell) and a little per appended row, so it
 * exists only while it pays: it is built by the first indexed rebuild, kept up to date by
 * eg__table_append while it exists, and dropped when a run starts, when a table is
 * compacted (row numbers change), by pop, and when dead rows' entries outnumber the live
 * ones. Pairs holding e-class ids are not indexed: an engine with such columns always
 * rebuilds with full passes. */
#include "eg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_USE UINT32_MAX

/* The stale checks run once per row of every full pass: keep them inlined. */
#if defined(__GNUC__)
#define HOT_INLINE static inline __attribute__((always_inline))
#else
#define HOT_INLINE static inline
#endif

HOT_INLINE bool col_stale(eg_engine *e, uint32_t sort, eg_value v)
{
    const eg_sort *s = &e->sorts[sort];
    if (!s->canon) return false;
    if (s->kind == SK_EQ) return e->uf[v] != v;
    return eg__canon(e, sort, v) != v;
}

HOT_INLINE bool row_stale(eg_engine *e, const eg_table *t, const eg_value *row)
{
    for (uint32_t c = 0; c < t->n_in; c++)
        if (col_stale(e, t->in_sort[c], row[c])) return true;
    return t->has_out && col_stale(e, t->out_sort, row[t->n_in]);
}

/* Kills row r of table ti and re-inserts it canonically. */
static void reinsert(eg_engine *e, uint32_t ti, uint32_t r)
{
    eg_table *t = &e->tables[ti];
    eg_value tmp[EG_MAX_COLS];
    memcpy(tmp, t->cols + (size_t)r * t->ncols, t->ncols * sizeof(eg_value));
    bool sub = t->flags[r] & RF_SUBSUMED;
    uint32_t origin = t->origin[r]; /* the row is the same node, made canonical */
    eg__table_kill(t, r);
    eg__insert(e, t, tmp, sub, origin);
}

/* ---- the uses index ---- */

void eg__uses_drop(eg_engine *e)
{
    eg__mfree(e, e->use_head);
    eg__mfree(e, e->use_next);
    eg__mfree(e, e->use_key);
    e->use_head = e->use_next = NULL;
    e->use_key = NULL;
    e->nuse_head = e->capuse_head = 0;
    e->nuse = e->capuse = e->nuse_built = 0;
    e->uses_on = false;
}

static void use_add(eg_engine *e, uint32_t id, uint64_t key)
{
    if (id >= e->nuse_head) {
        EG_MGROW(e, e->use_head, e->capuse_head, (size_t)e->nids + 1);
        for (uint32_t i = e->nuse_head; i < e->capuse_head; i++)
            e->use_head[i] = NO_USE;
        e->nuse_head = e->capuse_head;
    }
    if (e->nuse + 1 > e->capuse) {
        uint32_t nc = e->capuse ? e->capuse * 2 : 1024;
        e->use_next = eg__marray(e, e->use_next, nc, sizeof(uint32_t));
        e->use_key = eg__marray(e, e->use_key, nc, sizeof(uint64_t));
        e->capuse = nc;
    }
    e->use_next[e->nuse] = e->use_head[id];
    e->use_key[e->nuse] = key;
    e->use_head[id] = e->nuse++;
}

/* Adds the uses of row r of table t (an id held twice by the row is added once). */
void eg__uses_add_row(eg_engine *e, const eg_table *t, uint32_t r)
{
    const eg_value *row = t->cols + (size_t)r * t->ncols;
    uint64_t key = (uint64_t)t->id << 32 | r;
    for (uint32_t c = 0; c < t->ncols; c++) {
        uint32_t s = c < t->n_in ? t->in_sort[c] : t->out_sort;
        if (e->sorts[s].kind != SK_EQ) continue;
        bool seen = false;
        for (uint32_t k = 0; k < c && !seen; k++)
            seen = row[k] == row[c] &&
                   e->sorts[k < t->n_in ? t->in_sort[k] : t->out_sort].kind == SK_EQ;
        if (!seen) use_add(e, (uint32_t)row[c], key);
    }
}

static void uses_build(eg_engine *e)
{
    eg__uses_drop(e);
    e->uses_on = true;
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        const eg_table *t = &e->tables[ti];
        if (!t->has_eq) continue;
        for (uint32_t r = 0; r < t->nrows; r++)
            if (!(t->flags[r] & RF_DEAD)) eg__uses_add_row(e, t, r);
    }
    e->nuse_built = e->nuse;
}

typedef struct {
    uint32_t id;
    uint64_t key;
} use_pair;

static int pair_cmp(const void *a, const void *b)
{
    const use_pair *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Recomputes the uses the slow way (every e-class cell of every live row) and looks each
 * up in a sorted copy of the index. */
int eg__uses_check(eg_engine *e, char *why, size_t n)
{
    if (!e->uses_on) return 0;
    use_pair *all = eg__scoped_alloc(e, ((size_t)e->nuse + 1) * sizeof *all);
    size_t m = 0;
    for (uint32_t id = 0; id < e->nuse_head; id++)
        for (uint32_t u = e->use_head[id]; u != NO_USE; u = e->use_next[u])
            all[m++] = (use_pair){id, e->use_key[u]};
    qsort(all, m, sizeof *all, pair_cmp);
    int rc = 0;
    for (uint32_t ti = 0; ti < e->ntables && !rc; ti++) {
        const eg_table *t = &e->tables[ti];
        if (!t->has_eq) continue;
        for (uint32_t r = 0; r < t->nrows && !rc; r++) {
            if (t->flags[r] & RF_DEAD) continue;
            for (uint32_t c = 0; c < t->ncols && !rc; c++) {
                uint32_t s = c < t->n_in ? t->in_sort[c] : t->out_sort;
                if (e->sorts[s].kind != SK_EQ) continue;
                use_pair want = {(uint32_t)t->cols[(size_t)r * t->ncols + c],
                                 (uint64_t)ti << 32 | r};
                if (!bsearch(&want, all, m, sizeof *all, pair_cmp)) {
                    snprintf(why, n, "the rebuild index lacks table %s row %u column %u", t->name,
                             r, c);
                    rc = -1;
                }
            }
        }
    }
    eg__scoped_free(e, all);
    return rc;
}

/* ---- the candidate heap: (table, row) keys, smallest first ---- */

static void heap_push(eg_engine *e, uint64_t k)
{
    EG_MGROW(e, e->heap, e->capheap, (size_t)e->nheap + 1);
    uint64_t *h = e->heap;
    uint32_t i = e->nheap++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h[p] <= k) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = k;
}

static uint64_t heap_pop(eg_engine *e)
{
    uint64_t *h = e->heap;
    uint64_t top = h[0], k = h[--e->nheap];
    uint32_t n = e->nheap, i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1] < h[c]) c++;
        if (k <= h[c]) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = k;
    return top;
}

/* Pushes the uses of id that lie after the pass position pos. */
static void push_uses(eg_engine *e, uint32_t id, uint64_t pos, bool started)
{
    if (id >= e->nuse_head) return;
    for (uint32_t u = e->use_head[id]; u != NO_USE; u = e->use_next[u])
        if (!started || e->use_key[u] > pos) heap_push(e, e->use_key[u]);
}

/* ---- passes ---- */

static void full_pass(eg_engine *e)
{
    /* a row is stale when one of its ids is not a root (uf[v] != v): no find needed; the
     * re-insert's finds shorten the paths they walk */
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        const eg_table *t = &e->tables[ti];
        if (!t->has_eq) continue;
        uint32_t n = t->nrows;
        /* the columns to test: a table whose only canonicalised columns are e-classes
         * (the common case) is tested with one load per such column */
        uint32_t eqc[EG_MAX_COLS], neq = 0;
        bool other = false;
        for (uint32_t c = 0; c < t->ncols; c++) {
            const eg_sort *so = &e->sorts[eg__col_sort(t, c)];
            if (so->kind == SK_EQ)
                eqc[neq++] = c;
            else if (so->canon)
                other = true;
        }
        for (uint32_t r = 0; r < n; r++) {
            if (t->flags[r] & RF_DEAD) continue;
            const eg_value *row = t->cols + (size_t)r * t->ncols;
            if (other) {
                if (!row_stale(e, t, row)) continue;
            } else {
                const uint32_t *uf = e->uf;
                uint32_t k = 0;
                while (k < neq && uf[row[eqc[k]]] == row[eqc[k]])
                    k++;
                if (k == neq) continue;
            }
            reinsert(e, ti, r); /* may grow the table's arrays: t's pointers are re-read */
        }
    }
}

/* The full pass's work, from the index: seeds are the ids that stopped being roots
 * before the pass began (e->seeds). */
static void indexed_pass(eg_engine *e)
{
    e->nheap = 0;
    for (uint32_t i = 0; i < e->nseeds; i++)
        push_uses(e, e->seeds[i], 0, false);
    uint32_t seen_dirty = e->ndirty; /* unions made during this pass start here */
    uint64_t pos = 0, last = UINT64_MAX;
    bool started = false;
    uint32_t cur_t = UINT32_MAX, limit = 0;
    while (e->nheap) {
        uint64_t k = heap_pop(e);
        if (k == last) continue; /* an id held twice, or two merged ids, in one row */
        last = k;
        uint32_t ti = (uint32_t)(k >> 32), r = (uint32_t)k;
        if (ti != cur_t) { /* the full pass reaches table ti now: its rows so far */
            cur_t = ti;
            limit = e->tables[ti].nrows;
        }
        pos = k;
        started = true;
        const eg_table *t = &e->tables[ti];
        if (r >= limit || (t->flags[r] & RF_DEAD)) continue;
        if (!row_stale(e, t, t->cols + (size_t)r * t->ncols)) continue;
        reinsert(e, ti, r);
        while (seen_dirty < e->ndirty) /* unions the re-insert made */
            push_uses(e, e->dirty[seen_dirty++], pos, started);
    }
}

/* Whether this pass should use the index: outside runs, when the engine has no pair
 * columns holding e-class ids, and when the merged ids are few next to the rows. */
static bool want_index(eg_engine *e, bool allow)
{
    if (!allow || e->opt.rebuild == EG_REBUILD_FULL) return false;
    uint64_t rows = 0;
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        const eg_table *t = &e->tables[ti];
        if (!t->has_eq) continue;
        for (uint32_t c = 0; c < t->ncols; c++) {
            const eg_sort *s = &e->sorts[c < t->n_in ? t->in_sort[c] : t->out_sort];
            if (s->canon && s->kind != SK_EQ) return false; /* a pair holding ids */
        }
        rows += t->nlive;
    }
    if (e->opt.rebuild == EG_REBUILD_INDEXED) return true;
    if (e->uses_on) {
        /* rebuild the index when dead rows' entries dominate it */
        if (e->nuse > 3 * (uint64_t)e->nuse_built + 65536) uses_build(e);
        return (uint64_t)e->nseeds * 4 < rows;
    }
    return rows >= EG_INDEX_MIN_ROWS && (uint64_t)e->nseeds * EG_INDEX_SEED_RATIO < rows;
}

static void rebuild(eg_engine *e, bool allow_index)
{
    for (;;) {
        eg__flush_pending(e);
        if (e->unions == e->canon_unions && !e->pass_open) {
            e->ndirty = 0; /* every row is canonical: no id needs visiting */
            e->dirty_lost = false;
            break;
        }
        /* a full pass when an error stopped a pass part-way, or when a union was not
         * listed (made during a run) */
        bool must_scan = e->pass_open || e->dirty_lost;
        e->dirty_lost = false;
        e->canon_unions = e->unions;
        /* the ids merged since the last pass began are this pass's seeds */
        uint32_t *t = e->seeds;
        uint32_t tc = e->capseeds;
        e->seeds = e->dirty;
        e->capseeds = e->capdirty;
        e->nseeds = e->ndirty;
        e->dirty = t;
        e->capdirty = tc;
        e->ndirty = 0;
        e->pass_open = true;
        if (!must_scan && want_index(e, allow_index)) {
            if (!e->uses_on) uses_build(e);
            indexed_pass(e);
            e->passes_indexed++;
        } else {
            if (e->uses_on) eg__uses_drop(e);
            full_pass(e);
            e->passes_full++;
        }
        e->pass_open = false;
        /* merges during the pass may have made more unions: then the loop runs again */
    }
    e->nseeds = 0;
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        eg_table *t = &e->tables[ti];
        if (t->nrows - t->nlive > t->nrows / 2 && t->nrows > 64) {
            eg__table_compact(e, t);
            if (e->uses_on && t->has_eq) eg__uses_drop(e); /* row numbers changed */
        }
    }
}

void eg__rebuild(eg_engine *e)
{
    rebuild(e, true);
}

void eg__rebuild_full(eg_engine *e)
{
    rebuild(e, false);
}

void eg__rebuild_reset(eg_engine *e)
{
    eg__uses_drop(e);
    e->ndirty = 0;
    e->nseeds = 0;
    e->pass_open = false;
    e->dirty_lost = false;
}
