/* eg_cont.c - the container pool: the values of the container sorts, (Vec T), (Set T),
 * (Map K V), (MultiSet T) and function values (UnstableFn (In...) Out), with egglog's
 * semantics (docs/egraph.md, "Containers"); their primitives and function values are in
 * eg_cont_prim.c.
 *
 * A container value is an id into the engine's container pool: its sort and its contents
 * (a run of values in one flat array), interned by sort and contents, so two containers
 * are equal exactly when their ids are. Contents are kept in normal form: a set's elements
 * sorted by value and unique, a multiset's sorted, a map's (key, value) pairs sorted by
 * key with one pair per key; a vector keeps its order. A container whose elements hold
 * e-class ids is canonical when every element is: eg__cont_canon makes the canonical
 * container (elements canonicalised, then normalised again, so two set elements that
 * became one class collapse), which rebuilding uses like any other column's canonical
 * value, so rows holding containers stay congruent when classes merge. A function value
 * is the index of its target (eg_fnt: a table or a primitive, registered when a call
 * type-checks) followed by its partial arguments.
 */
#include "eg_int.h"

#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t */
#include <xxhash.h>

/* ---- the pool ---- */

static uint64_t cont_hash(uint32_t sort, const eg_value *v, uint32_t n)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, &sort, sizeof sort);
    XXH3_64bits_update(&st, v, n * sizeof *v);
    return XXH3_64bits_digest(&st);
}

const eg_value *eg__cont_elems(const eg_engine *e, eg_value v, uint32_t *n)
{
    static const eg_value none[1] = {0};
    if (v >= e->nconts) {
        *n = 0;
        return none;
    }
    *n = e->cont_len[v];
    return *n ? e->cvals + e->cont_off[v] : none; /* never NULL: memcpy and memcmp */
}

/* Interns contents v[0..n) (canonical and normal) of sort `sort`. v may point into the
 * pool's own array only if it is not reallocated here: callers pass scoped copies. */
static eg_value intern(eg_engine *e, uint32_t sort, const eg_value *v, uint32_t n)
{
    uint64_t h = cont_hash(sort, v, n);
    if (e->cont_nslots == 0 || (e->nconts + 1) * 2 > e->cont_nslots) {
        uint32_t ns = e->cont_nslots ? e->cont_nslots * 2 : 64;
        if (ns < e->cont_nslots) eg__oom(e, SIZE_MAX);
        uint32_t *sl = eg__mcalloc(e, ns, sizeof *sl);
        for (uint32_t i = 0; i < e->nconts; i++) {
            uint32_t j = (uint32_t)e->cont_hash[i] & (ns - 1);
            while (sl[j])
                j = (j + 1) & (ns - 1);
            sl[j] = i + 1;
        }
        eg__mfree(e, e->cont_slots);
        e->cont_slots = sl;
        e->cont_nslots = ns;
    }
    uint32_t j = (uint32_t)h & (e->cont_nslots - 1);
    while (e->cont_slots[j]) {
        uint32_t id = e->cont_slots[j] - 1;
        if (e->cont_hash[id] == h && e->cont_sort[id] == sort && e->cont_len[id] == n &&
            (n == 0 || memcmp(e->cvals + e->cont_off[id], v, n * sizeof *v) == 0))
            return id;
        j = (j + 1) & (e->cont_nslots - 1);
    }
    if (e->ncvals + n > e->capcvals) {
        size_t nc = e->capcvals ? e->capcvals : 256;
        while (nc < e->ncvals + n)
            nc *= 2;
        eg__limit_room(e, nc * sizeof *e->cvals); /* the pool doubles: the memory limit */
        e->cvals = eg__marray(e, e->cvals, nc, sizeof *e->cvals);
        e->capcvals = nc;
    }
    if (e->nconts + 1 > e->capconts) { /* the arrays grow before any is used */
        uint32_t nc = e->capconts ? e->capconts * 2 : 64;
        e->cont_off = eg__marray(e, e->cont_off, nc, sizeof *e->cont_off);
        e->cont_len = eg__marray(e, e->cont_len, nc, sizeof *e->cont_len);
        e->cont_sort = eg__marray(e, e->cont_sort, nc, sizeof *e->cont_sort);
        e->cont_hash = eg__marray(e, e->cont_hash, nc, sizeof *e->cont_hash);
        e->capconts = nc;
    }
    if (n) memcpy(e->cvals + e->ncvals, v, n * sizeof *v);
    uint32_t id = e->nconts;
    e->cont_off[id] = e->ncvals;
    e->cont_len[id] = n;
    e->cont_sort[id] = sort;
    e->cont_hash[id] = h;
    e->ncvals += n;
    e->cont_slots[j] = id + 1;
    e->nconts++;
    return id;
}

static int val_cmp(const void *a, const void *b)
{
    eg_value x = *(const eg_value *)a, y = *(const eg_value *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    eg_value k, v;
    uint32_t at;
} kv;

static int kv_cmp(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Puts v[0..*n) of family f in normal form, in place. */
static void normalize(eg_engine *e, int f, eg_value *v, uint32_t *n)
{
    if (f == CK_SET || f == CK_MULTISET) {
        qsort(v, *n, sizeof *v, val_cmp);
        if (f == CK_SET) {
            uint32_t w = 0;
            for (uint32_t i = 0; i < *n; i++)
                if (!w || v[w - 1] != v[i]) v[w++] = v[i];
            *n = w;
        }
    } else if (f == CK_MAP) {
        uint32_t m = *n / 2;
        if (!m) return;
        kv *p = eg__scoped_alloc(e, m * sizeof *p);
        for (uint32_t i = 0; i < m; i++)
            p[i] = (kv){v[2 * i], v[2 * i + 1], i};
        qsort(p, m, sizeof *p, kv_cmp);
        uint32_t w = 0;
        for (uint32_t i = 0; i < m; i++) {
            /* of equal keys the last written wins (an insert replaces) */
            if (i + 1 < m && p[i + 1].k == p[i].k) continue;
            v[2 * w] = p[i].k;
            v[2 * w + 1] = p[i].v;
            w++;
        }
        *n = 2 * w;
        eg__scoped_free(e, p);
    }
}

/* The sort of element i of contents v of a container of sort `sort`: a map's keys and
 * values alternate; a function value holds its target (not a value: i64, never
 * canonicalised), then the partial arguments, of the target's input sorts. */
static uint32_t elem_sort(const eg_engine *e, uint32_t sort, const eg_value *v, uint32_t i)
{
    const eg_sort *s = &e->sorts[sort];
    if (s->family == CK_FN) {
        if (i == 0 || v[0] >= e->nfnt) return SORT_I64;
        return e->fnt[v[0]].in[i - 1];
    }
    return s->family == CK_MAP && (i & 1) ? s->elem[1] : s->elem[0];
}

/* Makes a container of sort `sort` from v[0..n) (a scoped buffer the caller frees): its
 * elements canonicalised, normalised, interned. */
eg_value eg__cont_make(eg_engine *e, uint32_t sort, eg_value *v, uint32_t n)
{
    const eg_sort *s = &e->sorts[sort];
    if (s->canon)
        for (uint32_t i = 0; i < n; i++)
            v[i] = eg__canon(e, elem_sort(e, sort, v, i), v[i]);
    normalize(e, s->family, v, &n);
    return intern(e, sort, v, n);
}

eg_value eg__cont_canon(eg_engine *e, uint32_t sort, eg_value v)
{
    if (v >= e->nconts || !e->sorts[sort].canon) return v;
    uint32_t n = e->cont_len[v];
    bool stale = false;
    for (uint32_t i = 0; i < n && !stale; i++) {
        const eg_value *all = e->cvals + e->cont_off[v]; /* re-read: canon may grow the pool */
        eg_value x = all[i];
        if (eg__canon(e, elem_sort(e, sort, all, i), x) != x) stale = true;
    }
    if (!stale) return v;
    eg_value *tmp = eg__scoped_alloc(e, (n + 1) * sizeof *tmp);
    if (n) memcpy(tmp, e->cvals + e->cont_off[v], n * sizeof *tmp);
    eg_value r = eg__cont_make(e, sort, tmp, n);
    eg__scoped_free(e, tmp);
    return r;
}

/* ---- extraction and printing ---- */

uint64_t eg__cont_cost(eg_engine *e, uint32_t sort, eg_value v, const uint64_t *cost)
{
    /* egglog: the sum of the elements' costs (an empty container costs 0) */
    uint32_t n;
    const eg_value *x = eg__cont_elems(e, v, &n);
    uint64_t c = 0;
    for (uint32_t i = e->sorts[sort].family == CK_FN; i < n; i++) {
        x = eg__cont_elems(e, v, &n); /* costs never intern, but re-read anyway */
        uint64_t k = eg__child_cost(e, elem_sort(e, sort, x, i), x[i], cost);
        if (k == UINT64_MAX) return UINT64_MAX;
        c = c > UINT64_MAX - k ? UINT64_MAX : c + k;
    }
    return c;
}

void eg__cont_print(eg_engine *e, FILE *f, uint32_t sort, eg_value v,
                    void (*elem)(eg_engine *, FILE *, uint32_t, eg_value, void *), void *ctx)
{
    const eg_sort *s = &e->sorts[sort];
    uint32_t n;
    const eg_value *x = eg__cont_elems(e, v, &n);
    if (s->family == CK_MAP) {
        for (uint32_t i = 0; i < n / 2; i++)
            fputs("(map-insert ", f);
        fputs("(map-empty)", f);
        for (uint32_t i = 0; i < n / 2; i++) {
            fputc(' ', f);
            elem(e, f, s->elem[0], x[2 * i], ctx);
            fputc(' ', f);
            elem(e, f, s->elem[1], x[2 * i + 1], ctx);
            fputc(')', f);
        }
        return;
    }
    if (s->family == CK_FN) {
        fputs("(unstable-fn ", f);
        if (n && x[0] < e->nfnt) eg__print_value(e, f, SORT_STRING, e->fnt[x[0]].name);
        for (uint32_t i = 1; i < n; i++) {
            fputc(' ', f);
            elem(e, f, elem_sort(e, sort, x, i), x[i], ctx);
        }
        fputc(')', f);
        return;
    }
    static const char *const of[] = {"vec-of", "set-of", "", "multiset-of"};
    fprintf(f, "(%s", of[s->family]);
    for (uint32_t i = 0; i < n; i++) {
        fputc(' ', f);
        elem(e, f, s->elem[0], x[i], ctx);
    }
    fputc(')', f);
}
