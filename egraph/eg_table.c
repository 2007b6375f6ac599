/* eg_table.c: one table of the database: append-only rows, the primary key index, and
 * the secondary indexes that joins use during one search phase.
 *
 * Secondary index layout (CSR): a hash table of groups keyed by the values of the
 * columns in `mask`; group g's rows are rows[gstart[g] .. gstart[g+1]), in row order.
 * An index covers rows [0, hi) and is valid while the table's version is unchanged
 * (rows only die between search phases, never during one). */
#include "eg_internal.h"

#include <string.h>
#include <xxhash.h>

void eg__table_init(eg_table *t)
{
    t->cols = NULL;
    t->ts = NULL;
    t->flags = NULL;
    t->khash = NULL;
    t->slotpos = NULL;
    t->nrows = t->cap = t->nlive = 0;
    t->slots = NULL;
    t->nslots = t->nused = 0;
    t->six = NULL;
    t->nsix = t->capsix = 0;
    t->version = 0;
}

static void six_free(eg_table *t, sindex *ix)
{
    eg__free(ix->slots);
    eg__free(ix->gfirst);
    eg__free(ix->gstart);
    eg__free(ix->rows);
    eg__mem_sub(t->mem, ix->bytes);
}

void eg__table_clear_six(eg_table *t)
{
    for (uint32_t i = 0; i < t->nsix; i++)
        six_free(t, &t->six[i]);
    t->nsix = 0;
}

void eg__table_fini(eg_table *t)
{
    eg__mfree(t->mem, t->cols);
    eg__mfree(t->mem, t->ts);
    eg__mfree(t->mem, t->flags);
    eg__mfree(t->mem, t->khash);
    eg__mfree(t->mem, t->slotpos);
    eg__mfree(t->mem, t->slots);
    eg__table_clear_six(t);
    eg__mfree(t->mem, t->six);
    t->cols = NULL;
    t->ts = NULL;
    t->flags = NULL;
    t->khash = NULL;
    t->slotpos = NULL;
    t->slots = NULL;
    t->six = NULL;
    t->nrows = t->cap = t->nlive = t->nslots = t->nused = t->nsix = t->capsix = 0;
}

void eg__table_copy(eg_table *dst, const eg_table *src)
{
    *dst = *src;
    size_t nc = (size_t)src->ncols;
    dst->cap = src->nrows;
    eg_mem_acct *m = src->mem;
    dst->cols = eg__marray(m, NULL, (size_t)src->nrows * nc + 1, sizeof(eg_value));
    dst->ts = eg__marray(m, NULL, src->nrows + 1, sizeof(uint32_t));
    dst->flags = eg__marray(m, NULL, src->nrows + 1, 1);
    dst->khash = eg__marray(m, NULL, src->nrows + 1, sizeof(uint64_t));
    dst->slotpos = eg__marray(m, NULL, src->nrows + 1, sizeof(uint32_t));
    dst->slots = eg__marray(m, NULL, src->nslots + 1, sizeof(uint64_t));
    if (src->nrows) {
        memcpy(dst->cols, src->cols, (size_t)src->nrows * nc * sizeof(eg_value));
        memcpy(dst->ts, src->ts, src->nrows * sizeof(uint32_t));
        memcpy(dst->flags, src->flags, src->nrows);
        memcpy(dst->khash, src->khash, src->nrows * sizeof(uint64_t));
        memcpy(dst->slotpos, src->slotpos, src->nrows * sizeof(uint32_t));
    }
    if (src->nslots) memcpy(dst->slots, src->slots, src->nslots * sizeof(uint64_t));

    dst->six = NULL;
    dst->nsix = dst->capsix = 0;
}

uint64_t eg__key_hash(const eg_value *key, uint32_t n)
{
    return XXH3_64bits(key, (size_t)n * sizeof(eg_value));
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

static void rehash(eg_table *t, uint32_t ns)
{
    uint64_t *sl = eg__mcalloc(t->mem, ns, sizeof *sl);
    for (uint32_t r = 0; r < t->nrows; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        uint32_t j = (uint32_t)t->khash[r] & (ns - 1);
        while (sl[j])
            j = (j + 1) & (ns - 1);
        sl[j] = slot_of(t->khash[r], r);
        t->slotpos[r] = j;
    }
    eg__mfree(t->mem, t->slots);
    t->slots = sl;
    t->nslots = ns;
    t->nused = t->nlive;
}

uint32_t eg__table_append(eg_engine *e, eg_table *t, const eg_value *row, uint64_t h, uint8_t flags)
{
    if (t->nrows + 1 > t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 16;
        eg_mem_acct *m = t->mem;
        t->cols = eg__marray(m, t->cols, (size_t)nc * (t->ncols ? t->ncols : 1), sizeof(eg_value));
        t->ts = eg__marray(m, t->ts, nc, sizeof(uint32_t));
        t->flags = eg__marray(m, t->flags, nc, 1);
        t->khash = eg__marray(m, t->khash, nc, sizeof(uint64_t));
        t->slotpos = eg__marray(m, t->slotpos, nc, sizeof(uint32_t));
        t->cap = nc;
    }
    if (t->nslots == 0 || (t->nused + 1) * 2 > t->nslots) {
        uint32_t ns = 16;
        while ((t->nlive + 1) * 4 > ns)
            ns *= 2; /* live load <= 1/4 after a rehash */
        rehash(t, ns);
    }
    uint32_t r = t->nrows++;
    memcpy(t->cols + (size_t)r * t->ncols, row, t->ncols * sizeof(eg_value));
    t->ts[r] = e->ts;
    t->flags[r] = flags;
    t->khash[r] = h;
    uint32_t j = (uint32_t)h & (t->nslots - 1);
    while (t->slots[j] != 0 && t->slots[j] != SLOT_DELETED)
        j = (j + 1) & (t->nslots - 1);
    if (t->slots[j] == 0) t->nused++;
    t->slots[j] = slot_of(h, r);
    t->slotpos[r] = j;
    t->nlive++;
    if (e->uses_on && t->has_eq) eg__uses_add_row(e, t, r);
    return r;
}

void eg__table_kill(eg_table *t, uint32_t r)
{
    if (t->flags[r] & RF_DEAD) return;
    uint32_t j = t->slotpos[r];
    if ((uint32_t)t->slots[j] != r + 1 || t->slots[j] == SLOT_DELETED) { /* not expected */
        j = (uint32_t)t->khash[r] & (t->nslots - 1);
        while ((uint32_t)t->slots[j] != r + 1 || t->slots[j] == SLOT_DELETED)
            j = (j + 1) & (t->nslots - 1);
    }
    t->slots[j] = SLOT_DELETED;
    t->flags[r] |= RF_DEAD;
    t->nlive--;
    t->version++;
}

/* Drops dead rows, keeping the order (and so the timestamp order) of the live ones. */
void eg__table_compact(eg_table *t)
{
    if (t->nlive == t->nrows) return;
    uint32_t w = 0;
    for (uint32_t r = 0; r < t->nrows; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        if (w != r) {
            memmove(t->cols + (size_t)w * t->ncols, t->cols + (size_t)r * t->ncols,
                    t->ncols * sizeof(eg_value));
            t->ts[w] = t->ts[r];
            t->flags[w] = t->flags[r];
            t->khash[w] = t->khash[r];
        }
        w++;
    }
    t->nrows = w;
    t->version++;
    uint32_t ns = 16;
    while ((t->nlive + 1) * 4 > ns)
        ns *= 2;
    rehash(t, ns);
}

/* The first row whose timestamp is >= ts (rows are in timestamp order). */
uint32_t eg__table_first_ts(const eg_table *t, uint32_t ts)
{
    uint32_t lo = 0, hi = t->nrows;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->ts[mid] < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t masked_hash(const eg_value *row, uint32_t mask, uint32_t ncols)
{
    eg_value k[32];
    uint32_t n = 0;
    for (uint32_t c = 0; c < ncols; c++)
        if (mask >> c & 1) k[n++] = row[c];
    return XXH3_64bits(k, n * sizeof(eg_value));
}

static bool masked_eq(const eg_value *a, const eg_value *b, uint32_t mask, uint32_t ncols)
{
    for (uint32_t c = 0; c < ncols; c++)
        if ((mask >> c & 1) && a[c] != b[c]) return false;
    return true;
}

const sindex *eg__table_six(eg_table *t, uint32_t mask, uint32_t hi)
{
    for (uint32_t i = 0; i < t->nsix; i++) {
        sindex *ix = &t->six[i];
        if (ix->mask == mask && ix->hi == hi && ix->version == t->version) return ix;
    }
    /* drop stale indexes of this mask */
    for (uint32_t i = 0; i < t->nsix;) {
        if (t->six[i].mask == mask) {
            six_free(t, &t->six[i]);
            t->six[i] = t->six[--t->nsix];
        } else {
            i++;
        }
    }
    EG_MGROW(t->mem, t->six, t->capsix, t->nsix + 1);
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
    ix->slots = eg__calloc(ns, sizeof(uint32_t));
    ix->nslots = ns;
    uint32_t *grp = eg__array(NULL, hi + 1, sizeof(uint32_t)); /* row -> group; freed below */
    uint32_t *cnt = NULL, capg = 0, ng = 0;
    uint64_t *gh = NULL;
    uint32_t capgh = 0;
    for (uint32_t r = 0; r < hi; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        const eg_value *row = t->cols + (size_t)r * t->ncols;
        uint64_t h = masked_hash(row, mask, t->ncols);
        uint32_t j = (uint32_t)h & (ns - 1);
        uint32_t g = UINT32_MAX;
        while (ix->slots[j]) {
            uint32_t c = ix->slots[j] - 1;
            if (gh[c] == h &&
                masked_eq(t->cols + (size_t)ix->gfirst[c] * t->ncols, row, mask, t->ncols)) {
                g = c;
                break;
            }
            j = (j + 1) & (ns - 1);
        }
        if (g == UINT32_MAX) {
            EG_GROW(cnt, capg, ng + 1);
            EG_GROW(gh, capgh, ng + 1);
            ix->gfirst = eg__array(ix->gfirst, capg, sizeof(uint32_t));
            g = ng++;
            cnt[g] = 0;
            gh[g] = h;
            ix->gfirst[g] = r;
            ix->slots[j] = g + 1;
        }
        cnt[g]++;
        grp[r] = g;
    }
    ix->ngroups = ng;
    ix->gstart = eg__array(NULL, ng + 1, sizeof(uint32_t));
    uint32_t acc = 0;
    for (uint32_t g = 0; g < ng; g++) {
        ix->gstart[g] = acc;
        acc += cnt[g];
        cnt[g] = ix->gstart[g];
    }
    ix->gstart[ng] = acc;
    ix->rows = eg__array(NULL, acc + 1, sizeof(uint32_t));
    ix->bytes = ((size_t)ns + capg + ng + 1 + acc + 1) * sizeof(uint32_t);
    eg__mem_add(t->mem, ix->bytes);
    for (uint32_t r = 0; r < hi; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        ix->rows[cnt[grp[r]]++] = r;
    }
    eg__free(cnt); /* the work arrays above are not counted: they live only in this call */
    eg__free(grp);
    eg__free(gh);
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
