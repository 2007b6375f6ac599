/* eg_table.c: one table of the database: append-only rows, the primary key index, and
 * the secondary indexes that joins use during one search phase.
 *
 * Secondary index layout (CSR): a hash table of groups keyed by the values of the
 * columns in `mask`; group g's rows are rows[gstart[g] .. gstart[g+1]), in row order.
 * An index covers rows [0, hi) and is valid while the table's version is unchanged
 * (rows only die between search phases, never during one). */
#include "eg_int.h"

#include <assert.h>

#include <string.h>
#include <xxhash.h>

void eg__table_init(eg_table *t)
{
    t->cols = NULL;
    t->ep_ts = t->ep_row = NULL;
    t->nep = t->capep = 0;
    t->flags = NULL;
    t->origin = NULL;
    t->nrows = t->cap = t->nlive = 0;
    t->slots = NULL;
    t->nslots = t->nused = 0;
    t->six = NULL;
    t->nsix = t->capsix = 0;
    t->version = 0;
}

static void six_free(eg_engine *e, sindex *ix)
{
    eg__free(ix->slots);
    eg__free(ix->gfirst);
    eg__free(ix->gstart);
    eg__free(ix->rows);
    eg__free(ix->w_grp);
    eg__free(ix->w_cnt);
    eg__free(ix->w_hash);
    eg__mem_sub(e, ix->bytes);
}

void eg__table_clear_six(eg_engine *e, eg_table *t)
{
    for (uint32_t i = 0; i < t->nsix; i++)
        six_free(e, &t->six[i]);
    t->nsix = 0;
}

void eg__table_fini(eg_engine *e, eg_table *t)
{
    eg__mfree(e, t->cols);
    eg__mfree(e, t->ep_ts);
    eg__mfree(e, t->ep_row);
    eg__mfree(e, t->flags);
    eg__mfree(e, t->origin);
    eg__mfree(e, t->slots);
    eg__table_clear_six(e, t);
    eg__mfree(e, t->six);
    eg__table_init(t);
}

/* The row and index counts of src's storage, which dst now holds (exactly nrows rows). */
static void copy_counts(eg_table *dst, const eg_table *src)
{
    dst->nrows = src->nrows;
    dst->cap = src->nrows;
    dst->nlive = src->nlive;
    dst->nslots = src->nslots;
    dst->nused = src->nused;
}

/* Copies src's storage into dst (for push). dst holds no storage until each array is
 * complete, so a copy cut short by a failed allocation is freed by eg__table_fini. */
void eg__table_copy(eg_engine *e, eg_table *dst, const eg_table *src)
{
    *dst = *src;
    eg__table_init(dst);
    size_t nc = (size_t)src->ncols, n = src->nrows;
    dst->cols = eg__marray(e, NULL, n * nc + 1, sizeof(eg_value));
    dst->ep_ts = eg__marray(e, NULL, (size_t)src->nep + 1, sizeof(uint32_t));
    dst->ep_row = eg__marray(e, NULL, (size_t)src->nep + 1, sizeof(uint32_t));
    dst->flags = eg__marray(e, NULL, n + 1, 1);
    dst->origin = eg__marray(e, NULL, n + 1, sizeof(uint32_t));
    dst->slots = eg__marray(e, NULL, src->nslots + 1, sizeof(uint64_t));
    if (n) {
        memcpy(dst->cols, src->cols, n * nc * sizeof(eg_value));
        memcpy(dst->flags, src->flags, n);
        memcpy(dst->origin, src->origin, n * sizeof(uint32_t));
    }
    if (src->nslots) memcpy(dst->slots, src->slots, src->nslots * sizeof(uint64_t));
    if (src->nep) {
        memcpy(dst->ep_ts, src->ep_ts, src->nep * sizeof(uint32_t));
        memcpy(dst->ep_row, src->ep_row, src->nep * sizeof(uint32_t));
    }
    dst->nep = src->nep;
    dst->capep = src->nep + 1;
    copy_counts(dst, src);
    dst->version = src->version;
}

void eg__table_take(eg_table *dst, eg_table *src)
{
    dst->cols = src->cols;
    dst->ep_ts = src->ep_ts;
    dst->ep_row = src->ep_row;
    dst->nep = src->nep;
    dst->capep = src->capep;
    dst->flags = src->flags;
    dst->origin = src->origin;
    dst->slots = src->slots;
    copy_counts(dst, src);
    dst->version = src->version + 1000003; /* no index built before the push is valid */
    dst->hi = UINT32_MAX;
    dst->six = NULL;
    dst->nsix = dst->capsix = 0;
    eg__table_init(src);
}

#define SLOT_DELETED UINT64_C(0xFFFFFFFF)

static inline uint64_t slot_of(uint64_t h, uint32_t r)
{
    return (h & UINT64_C(0xFFFFFFFF00000000)) | (uint64_t)(r + 1);
}

static inline bool key_eq(const eg_value *a, const eg_value *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

int64_t eg__table_lookup(const eg_table *t, const eg_value *key, uint64_t h)
{
    if (!t->nslots) return -1;
    uint32_t m = t->nslots - 1, j = (uint32_t)h & m;
    uint64_t hi = h & UINT64_C(0xFFFFFFFF00000000);
    for (;;) {
        uint64_t s = t->slots[j];
        if (s == 0) return -1;
        if ((s & UINT64_C(0xFFFFFFFF00000000)) == hi && s != SLOT_DELETED) {
            uint32_t r = (uint32_t)s - 1;
            if (key_eq(t->cols + (size_t)r * t->ncols, key, t->n_in)) return r;
        }
        j = (j + 1) & m;
    }
}

/* The hash of row r's key (its input columns): what its primary index slot is found by. */
static inline uint64_t row_hash(const eg_table *t, uint32_t r)
{
    return eg__key_hash(t->cols + (size_t)r * t->ncols, t->n_in);
}

static void rehash(eg_engine *e, eg_table *t, uint32_t ns)
{
    uint64_t *sl = eg__mcalloc(e, ns, sizeof *sl);
    for (uint32_t r = 0; r < t->nrows; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        uint64_t h = row_hash(t, r);
        uint32_t j = (uint32_t)h & (ns - 1);
        while (sl[j])
            j = (j + 1) & (ns - 1);
        sl[j] = slot_of(h, r);
    }
    eg__mfree(e, t->slots);
    t->slots = sl;
    t->nslots = ns;
    t->nused = t->nlive;
    assert(t->nlive <= t->nrows && t->nused * 2 <= t->nslots); /* live rows are indexed */
}

uint32_t eg__table_append(eg_engine *e, eg_table *t, const eg_value *row, uint64_t h, uint8_t flags,
                          uint32_t origin)
{
    if (t->nrows + 1 > t->cap) { /* each array grows on its own; cap moves after all did */
        if (t->cap > UINT32_MAX / 2) eg__oom(e, SIZE_MAX);
        uint32_t nc = t->cap ? t->cap * 2 : 16;
        t->cols = eg__marray(e, t->cols, (size_t)nc * (t->ncols ? t->ncols : 1), sizeof(eg_value));
        t->flags = eg__marray(e, t->flags, nc, 1);
        t->origin = eg__marray(e, t->origin, nc, sizeof(uint32_t));
        t->cap = nc;
    }
    if (t->nslots == 0 || ((uint64_t)t->nused + 1) * 4 > (uint64_t)t->nslots * 3) {
        uint32_t ns = 16;
        while (((uint64_t)t->nlive + 1) * 2 > ns)
            ns *= 2; /* live load <= 1/2 after a rehash, at most 3/4 with the deleted */
        rehash(e, t, ns);
    }
    /* a row of a newer timestamp opens an epoch; both arrays grow before either is used */
    bool new_epoch = t->nep == 0 || t->ep_ts[t->nep - 1] != e->ts;
    assert(t->nep == 0 || t->ep_ts[t->nep - 1] <= e->ts); /* timestamps never decrease */
    if (new_epoch && t->nep + 1 > t->capep) {
        uint32_t nc = t->capep ? t->capep * 2 : 4;
        t->ep_ts = eg__marray(e, t->ep_ts, nc, sizeof(uint32_t));
        t->ep_row = eg__marray(e, t->ep_row, nc, sizeof(uint32_t));
        t->capep = nc;
    }
    if (origin == ORIGIN_PENDING) origin = eg__origin_command(e); /* the command's first row */
    if (e->uses_on && t->has_eq) { /* its entries first: the row exists only once they do */
        uint32_t r = t->nrows;
        memcpy(t->cols + (size_t)r * t->ncols, row, t->ncols * sizeof(eg_value));
        eg__uses_add_row(e, t, r);
    }
    uint32_t r = t->nrows++;
    memcpy(t->cols + (size_t)r * t->ncols, row, t->ncols * sizeof(eg_value));
    if (new_epoch) {
        t->ep_ts[t->nep] = e->ts;
        t->ep_row[t->nep++] = r;
    }
    t->flags[r] = flags;
    t->origin[r] = origin;
    uint32_t j = (uint32_t)h & (t->nslots - 1);
    while (t->slots[j] != 0 && t->slots[j] != SLOT_DELETED)
        j = (j + 1) & (t->nslots - 1);
    if (t->slots[j] == 0) t->nused++;
    t->slots[j] = slot_of(h, r);
    t->nlive++;
    assert(t->nlive <= t->nrows && t->nrows <= t->cap && t->nused <= t->nslots);
    return r;
}

void eg__table_kill(eg_table *t, uint32_t r)
{
    if (t->flags[r] & RF_DEAD) return;
    /* the row's slot, found from its key's hash (the row is live, so it is indexed) */
    uint32_t j = (uint32_t)row_hash(t, r) & (t->nslots - 1);
    while ((uint32_t)t->slots[j] != r + 1 || t->slots[j] == SLOT_DELETED)
        j = (j + 1) & (t->nslots - 1);
    t->slots[j] = SLOT_DELETED;
    t->flags[r] |= RF_DEAD;
    assert(t->nlive > 0); /* a live row was counted */
    t->nlive--;
    t->version++;
}

/* Drops dead rows, keeping the order (and so the timestamp order) of the live ones. */
void eg__table_compact(eg_engine *e, eg_table *t)
{
    if (t->nlive == t->nrows) return;
    uint32_t w = 0;
    /* the epochs are rewritten in place as the rows move: epoch k of the old rows becomes
     * epoch m <= k of the kept ones (an epoch whose rows all died disappears) */
    uint32_t k = 0, m = 0;
    for (uint32_t r = 0; r < t->nrows; r++) {
        while (k + 1 < t->nep && t->ep_row[k + 1] <= r)
            k++;
        if (t->flags[r] & RF_DEAD) continue;
        if (m == 0 || t->ep_ts[m - 1] != t->ep_ts[k]) {
            t->ep_ts[m] = t->ep_ts[k];
            t->ep_row[m++] = w;
        }
        if (w != r) {
            memmove(t->cols + (size_t)w * t->ncols, t->cols + (size_t)r * t->ncols,
                    t->ncols * sizeof(eg_value));
            t->flags[w] = t->flags[r];
            t->origin[w] = t->origin[r];
        }
        w++;
    }
    t->nep = m;
    assert(w == t->nlive); /* every live row was kept, every dead one dropped */
    t->nrows = w;
    t->version++;
    /* the primary index must be rebuilt (row numbers changed): the old slots are stale, so
     * they are dropped before the new ones are allocated */
    eg__mfree(e, t->slots);
    t->slots = NULL;
    t->nslots = t->nused = 0;
    uint32_t ns = 16;
    while (((uint64_t)t->nlive + 1) * 2 > ns)
        ns *= 2;
    rehash(e, t, ns);
}

/* The first row whose timestamp is >= ts (rows are in timestamp order): the first row of
 * the first epoch at or after ts, or nrows. */
uint32_t eg__table_first_ts(const eg_table *t, uint32_t ts)
{
    uint32_t lo = 0, hi = t->nep;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->ep_ts[mid] < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->nep ? t->ep_row[lo] : t->nrows;
}

uint32_t eg__row_ts(const eg_table *t, uint32_t r)
{
    uint32_t lo = 0, hi = t->nep; /* the last epoch whose first row is <= r */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->ep_row[mid] <= r)
            lo = mid;
        else
            hi = mid;
    }
    assert(t->nep > 0 && t->ep_row[lo] <= r);
    return t->ep_ts[lo];
}

static uint64_t masked_hash(const eg_value *row, colmask mask, uint32_t ncols)
{
    eg_value k[EG_MAX_COLS];
    uint32_t n = 0;
    for (uint32_t c = 0; c < ncols; c++)
        if (mask >> c & 1) k[n++] = row[c];
    return XXH3_64bits(k, n * sizeof(eg_value));
}

static bool masked_eq(const eg_value *a, const eg_value *b, colmask mask, uint32_t ncols)
{
    for (uint32_t c = 0; c < ncols; c++)
        if ((mask >> c & 1) && a[c] != b[c]) return false;
    return true;
}

const sindex *eg__table_six(eg_engine *e, eg_table *t, colmask mask, uint32_t hi)
{
    for (uint32_t i = 0; i < t->nsix; i++) {
        sindex *ix = &t->six[i];
        if (ix->mask == mask && ix->hi == hi && ix->version == t->version) return ix;
    }
    /* drop stale indexes of this mask */
    for (uint32_t i = 0; i < t->nsix;) {
        if (t->six[i].mask == mask) {
            six_free(e, &t->six[i]);
            t->six[i] = t->six[--t->nsix];
        } else {
            i++;
        }
    }
    EG_MGROW(e, t->six, t->capsix, t->nsix + 1);
    sindex *ix = &t->six[t->nsix++];
    memset(ix, 0, sizeof *ix);
    ix->mask = mask;
    ix->hi = hi;
    ix->version = t->version;
    uint32_t ns = 16;
    while (ns < hi * 2)
        ns *= 2;
    /* the index's arrays are counted once, when it is complete (ix->bytes): one search
     * phase builds many small indexes, and counting each growth step costs time */
    ix->slots = eg__calloc(e, ns, sizeof(uint32_t));
    ix->nslots = ns;
    ix->w_grp = eg__array(e, NULL, hi + 1, sizeof(uint32_t)); /* row -> group */
    uint32_t *grp = ix->w_grp;
    uint32_t capg = 0, ng = 0, capgh = 0, capgf = 0;
    for (uint32_t r = 0; r < hi; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        const eg_value *row = t->cols + (size_t)r * t->ncols;
        uint64_t h = masked_hash(row, mask, t->ncols);
        uint32_t j = (uint32_t)h & (ns - 1);
        uint32_t g = UINT32_MAX;
        while (ix->slots[j]) {
            uint32_t c = ix->slots[j] - 1;
            if (ix->w_hash[c] == h &&
                masked_eq(t->cols + (size_t)ix->gfirst[c] * t->ncols, row, mask, t->ncols)) {
                g = c;
                break;
            }
            j = (j + 1) & (ns - 1);
        }
        if (g == UINT32_MAX) {
            EG_GROW(e, ix->w_cnt, capg, ng + 1);
            EG_GROW(e, ix->w_hash, capgh, ng + 1);
            EG_GROW(e, ix->gfirst, capgf, ng + 1);
            g = ng++;
            ix->w_cnt[g] = 0;
            ix->w_hash[g] = h;
            ix->gfirst[g] = r;
            ix->slots[j] = g + 1;
        }
        ix->w_cnt[g]++;
        grp[r] = g;
    }
    uint32_t *cnt = ix->w_cnt;
    ix->ngroups = ng;
    ix->gstart = eg__array(e, NULL, ng + 1, sizeof(uint32_t));
    uint32_t acc = 0;
    for (uint32_t g = 0; g < ng; g++) {
        ix->gstart[g] = acc;
        acc += cnt[g];
        cnt[g] = ix->gstart[g];
    }
    ix->gstart[ng] = acc;
    ix->rows = eg__array(e, NULL, acc + 1, sizeof(uint32_t));
    ix->bytes = ((size_t)ns + capgf + ng + 1 + acc + 1) * sizeof(uint32_t);
    eg__mem_add(e, ix->bytes);
    for (uint32_t r = 0; r < hi; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        ix->rows[cnt[grp[r]]++] = r;
    }
    /* the work arrays are not counted: they live only while the index is built */
    eg__free(ix->w_cnt);
    eg__free(ix->w_grp);
    eg__free(ix->w_hash);
    ix->w_cnt = ix->w_grp = NULL;
    ix->w_hash = NULL;
    return ix;
}

/* Finds the group whose key equals vals_by_col on the mask's columns; -1 if none. */
int64_t eg__six_lookup(const eg_table *t, const sindex *ix, const eg_value *vals_by_col)
{
    uint64_t h = masked_hash(vals_by_col, ix->mask, t->ncols);
    uint32_t j = (uint32_t)h & (ix->nslots - 1);
    while (ix->slots[j]) {
        uint32_t g = ix->slots[j] - 1;
        if (masked_eq(t->cols + (size_t)ix->gfirst[g] * t->ncols, vals_by_col, ix->mask, t->ncols))
            return g;
        j = (j + 1) & (ix->nslots - 1);
    }
    return -1;
}

bool eg__next_extractable(const eg_engine *e, eg_rowpos *pos)
{
    for (; pos->table < e->ntables; pos->table++, pos->row = 0) {
        const eg_table *t = &e->tables[pos->table];
        if (t->kind != TK_CONSTRUCTOR || t->unextractable) continue;
        for (; pos->row < t->nrows; pos->row++)
            if (!(t->flags[pos->row] & (RF_DEAD | RF_SUBSUMED))) return true;
    }
    return false;
}
