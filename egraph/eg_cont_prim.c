/* eg_cont_prim.c - the primitives of the container sorts and function values (the pool
 * they make values in is eg_cont.c; docs/egraph.md, "Containers").
 *
 * Primitives are per container sort: each sort owns one eg_prim per name of its family,
 * with a signature string (eg_prim.sig) that resolution reads: argument letters, then '>'
 * and the result letter. C the container sort, E its element (a map's key), V a map's
 * value, I i64, U Unit (a predicate that fails when false); '*' before a letter: any number
 * of arguments of that sort. A function value is the index of its target (eg_fnt: a table
 * or a primitive, registered when a call type-checks) followed by its partial arguments.
 */
#include "eg_int.h"
#include "eg_compile.h" /* NOSORT */

#include <stdlib.h>
#include <string.h>

enum {
    OP_VEC_EMPTY = EG_OP_CONT,
    OP_VEC_OF,
    OP_VEC_APPEND,
    OP_VEC_PUSH,
    OP_VEC_POP,
    OP_VEC_LENGTH,
    OP_VEC_CONTAINS,
    OP_VEC_NOT_CONTAINS,
    OP_VEC_GET,
    OP_VEC_SET,
    OP_VEC_REMOVE,
    OP_VEC_RANGE,
    OP_VEC_UNION,
    OP_SET_EMPTY,
    OP_SET_OF,
    OP_SET_INSERT,
    OP_SET_REMOVE,
    OP_SET_GET,
    OP_SET_LENGTH,
    OP_SET_CONTAINS,
    OP_SET_NOT_CONTAINS,
    OP_SET_UNION,
    OP_SET_DIFF,
    OP_SET_INTERSECT,
    OP_MAP_EMPTY,
    OP_MAP_INSERT,
    OP_MAP_GET,
    OP_MAP_REMOVE,
    OP_MAP_LENGTH,
    OP_MAP_CONTAINS,
    OP_MAP_NOT_CONTAINS,
    OP_MS_OF,
    OP_MS_SINGLE,
    OP_MS_INSERT,
    OP_MS_REMOVE,
    OP_MS_LENGTH,
    OP_MS_CONTAINS,
    OP_MS_NOT_CONTAINS,
    OP_MS_COUNT,
    OP_MS_SUM,
    OP_MS_INTERSECTION,
    OP_MS_SUBTRACT,
    OP_MS_PICK,
    OP_FN_MAKE,
    OP_FN_APP,
    OP_FN_VEC_MAP,
    OP_FN_MS_MAP,
    OP_FN_FILL_INDEX,
};

typedef struct {
    uint8_t family;
    const char *name;
    const char *sig;
    int op;
} cont_prim_def;

static const cont_prim_def DEFS[] = {
    {CK_VEC, "vec-empty", ">C", OP_VEC_EMPTY},
    {CK_VEC, "vec-of", "*E>C", OP_VEC_OF},
    {CK_VEC, "vec-append", "*C>C", OP_VEC_APPEND},
    {CK_VEC, "vec-push", "CE>C", OP_VEC_PUSH},
    {CK_VEC, "vec-pop", "C>C", OP_VEC_POP},
    {CK_VEC, "vec-length", "C>I", OP_VEC_LENGTH},
    {CK_VEC, "vec-contains", "CE>U", OP_VEC_CONTAINS},
    {CK_VEC, "vec-not-contains", "CE>U", OP_VEC_NOT_CONTAINS},
    {CK_VEC, "vec-get", "CI>E", OP_VEC_GET},
    {CK_VEC, "vec-set", "CIE>C", OP_VEC_SET},
    {CK_VEC, "vec-remove", "CI>C", OP_VEC_REMOVE},
    {CK_VEC, "vec-range", "I>C", OP_VEC_RANGE},
    {CK_VEC, "vec-union", "CC>C", OP_VEC_UNION},
    {CK_SET, "set-empty", ">C", OP_SET_EMPTY},
    {CK_SET, "set-of", "*E>C", OP_SET_OF},
    {CK_SET, "set-insert", "CE>C", OP_SET_INSERT},
    {CK_SET, "set-remove", "CE>C", OP_SET_REMOVE},
    {CK_SET, "set-get", "CI>E", OP_SET_GET},
    {CK_SET, "set-length", "C>I", OP_SET_LENGTH},
    {CK_SET, "set-contains", "CE>U", OP_SET_CONTAINS},
    {CK_SET, "set-not-contains", "CE>U", OP_SET_NOT_CONTAINS},
    {CK_SET, "set-union", "CC>C", OP_SET_UNION},
    {CK_SET, "set-diff", "CC>C", OP_SET_DIFF},
    {CK_SET, "set-intersect", "CC>C", OP_SET_INTERSECT},
    {CK_MAP, "map-empty", ">C", OP_MAP_EMPTY},
    {CK_MAP, "map-insert", "CEV>C", OP_MAP_INSERT},
    {CK_MAP, "map-get", "CE>V", OP_MAP_GET},
    {CK_MAP, "map-remove", "CE>C", OP_MAP_REMOVE},
    {CK_MAP, "map-length", "C>I", OP_MAP_LENGTH},
    {CK_MAP, "map-contains", "CE>U", OP_MAP_CONTAINS},
    {CK_MAP, "map-not-contains", "CE>U", OP_MAP_NOT_CONTAINS},
    {CK_MULTISET, "multiset-of", "*E>C", OP_MS_OF},
    {CK_MULTISET, "multiset-single", "EI>C", OP_MS_SINGLE},
    {CK_MULTISET, "multiset-insert", "CE>C", OP_MS_INSERT},
    {CK_MULTISET, "multiset-remove", "CE>C", OP_MS_REMOVE},
    {CK_MULTISET, "multiset-length", "C>I", OP_MS_LENGTH},
    {CK_MULTISET, "multiset-contains", "CE>U", OP_MS_CONTAINS},
    {CK_MULTISET, "multiset-not-contains", "CE>U", OP_MS_NOT_CONTAINS},
    {CK_MULTISET, "multiset-count", "CE>I", OP_MS_COUNT},
    {CK_MULTISET, "multiset-sum", "CC>C", OP_MS_SUM},
    {CK_MULTISET, "multiset-intersection", "CC>C", OP_MS_INTERSECTION},
    {CK_MULTISET, "multiset-subtract", "CC>C", OP_MS_SUBTRACT},
    {CK_MULTISET, "multiset-pick", "C>E", OP_MS_PICK},
    /* function values: the signatures are the sort's own (fn_sig) */
    {CK_FN, "unstable-fn", "", OP_FN_MAKE},
    {CK_FN, "unstable-app", "", OP_FN_APP},
    {CK_FN, "unstable-vec-map", "", OP_FN_VEC_MAP},
    {CK_FN, "unstable-multiset-map", "", OP_FN_MS_MAP},
    {CK_FN, "unstable-multiset-fill-index", "", OP_FN_FILL_INDEX},
};
#define NDEFS (sizeof DEFS / sizeof DEFS[0])

static const char *const FAMILY[] = {"Vec", "Set", "Map", "MultiSet", "UnstableFn"};

int eg__cont_family(const char *name)
{
    for (int f = 0; f < (int)(sizeof FAMILY / sizeof FAMILY[0]); f++)
        if (strcmp(FAMILY[f], name) == 0) return f;
    return -1;
}

bool eg__cont_prim_name(const char *name)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (strcmp(DEFS[i].name, name) == 0) return true;
    return false;
}

/* The sort that signature letter l stands for in container sort `self`. */
static uint32_t letter_sort(const eg_engine *e, uint32_t self, char l)
{
    const eg_sort *s = &e->sorts[self];
    switch (l) {
    case 'C':
        return self;
    case 'E':
        return s->elem[0];
    case 'V':
        return s->elem[1];
    case 'I':
        return SORT_I64;
    case 'U':
        return SORT_UNIT;
    }
    return NOSORT;
}

void eg__cont_prims_init(eg_engine *e, uint32_t self)
{
    eg_sort *s = &e->sorts[self];
    uint32_t n = 0;
    for (size_t i = 0; i < NDEFS; i++)
        if (DEFS[i].family == s->family) n++;
    /* vec-range makes a vector of i64 only */
    eg_cprim *p = eg__calloc(e, n + 1, sizeof(eg_cprim));
    s->cont_prims = p;
    for (size_t i = 0; i < NDEFS; i++) {
        const cont_prim_def *d = &DEFS[i];
        if (d->family != s->family) continue;
        if (d->op == OP_VEC_RANGE && s->elem[0] != SORT_I64) continue;
        eg_cprim *q = &p[s->ncont_prims++];
        if (d->family == CK_FN) {
            q->base.name = d->name;
            q->base.nargs = d->op == OP_FN_APP    ? (int)(1 + s->fn_nin)
                            : d->op == OP_FN_MAKE ? -2
                                                  : 2;
            q->base.arg = q->base.arg2 = NOSORT;
            q->base.ret = d->op == OP_FN_APP ? s->fn_out : d->op == OP_FN_MAKE ? self : NOSORT;
            q->base.op = d->op;
            q->sig = d->sig;
            q->owner = self;
            continue;
        }
        const char *gt = strchr(d->sig, '>');
        q->base.name = d->name;
        q->base.nargs = d->sig[0] == '*' ? -2 : (int)(gt - d->sig);
        q->base.arg = q->base.arg2 = NOSORT;
        q->base.ret = letter_sort(e, self, gt[1]);
        q->base.op = d->op;
        q->sig = d->sig;
        q->owner = self;
    }
}

static uint32_t arg_sort(const eg_engine *e, const eg_prim *bp, uint32_t i);

/* The first container sort of family f whose elements are of sort el, or NOSORT. */
static uint32_t cont_of(const eg_engine *e, int f, uint32_t el)
{
    for (uint32_t i = 0; i < e->nsorts; i++)
        if (e->sorts[i].kind == SK_CONT && e->sorts[i].family == f && e->sorts[i].elem[0] == el)
            return i;
    return NOSORT;
}

/* The family a mapping primitive maps over. */
static int map_family(int op)
{
    return op == OP_FN_VEC_MAP ? CK_VEC : CK_MULTISET;
}

/* The argument sorts of a function sort's primitives: unstable-app takes the function
 * and its inputs; unstable-vec-map a function of one input and a vector of that input's
 * sort (giving a vector of the output's); unstable-fn's are checked against its target. */
static uint32_t fn_arg_sort(const eg_engine *e, const eg_cprim *p, uint32_t i)
{
    const eg_sort *s = &e->sorts[p->owner];
    if (p->base.op == OP_FN_APP)
        return i == 0 ? p->owner : i <= s->fn_nin ? s->fn_in[i - 1] : NOSORT;
    if (p->base.op == OP_FN_FILL_INDEX) {
        /* (fill-index ms f): f of sort (M X) -> i64, M the multiset sort of X */
        if (s->fn_nin != 2 || s->fn_out != SORT_I64 ||
            cont_of(e, CK_MULTISET, s->fn_in[1]) != s->fn_in[0])
            return NOSORT;
        return i == 0 ? s->fn_in[0] : i == 1 ? p->owner : NOSORT;
    }
    if (p->base.op == OP_FN_VEC_MAP || p->base.op == OP_FN_MS_MAP) {
        if (s->fn_nin != 1) return NOSORT;
        return i == 0   ? p->owner
               : i == 1 ? cont_of(e, map_family(p->base.op), s->fn_in[0])
                        : NOSORT;
    }
    return NOSORT;
}

/* The result sort of p (a vector map's depends on the sorts declared). */
static uint32_t ret_sort(const eg_engine *e, const eg_prim *p)
{
    if (p->op == OP_FN_VEC_MAP || p->op == OP_FN_MS_MAP) {
        const eg_sort *s = &e->sorts[((const eg_cprim *)p)->owner];
        return s->fn_nin == 1 ? cont_of(e, map_family(p->op), s->fn_out) : NOSORT;
    }
    if (p->op == OP_FN_FILL_INDEX) return arg_sort(e, p, 0) == NOSORT ? NOSORT : SORT_UNIT;
    return p->ret;
}

uint32_t eg__cont_ret(const eg_engine *e, const eg_prim *p)
{
    return ret_sort(e, p);
}

/* The sort of argument i of p (NOSORT past a fixed arity). */
static uint32_t arg_sort(const eg_engine *e, const eg_prim *bp, uint32_t i)
{
    const eg_cprim *p = (const eg_cprim *)bp;
    if (bp->op >= OP_FN_MAKE) return fn_arg_sort(e, p, i);
    if (p->sig[0] == '*') return letter_sort(e, p->owner, p->sig[1]);
    const char *gt = strchr(p->sig, '>');
    if (i >= (uint32_t)(gt - p->sig)) return NOSORT;
    return letter_sort(e, p->owner, p->sig[i]);
}

uint32_t eg__cont_arg_sort(const eg_engine *e, const eg_prim *p, uint32_t i)
{
    return arg_sort(e, p, i);
}

/* Whether p can take arguments of the given sorts (NOSORT: not known yet) and give
 * `want` (NOSORT: any); *pinned says whether something known fixed the container sort
 * (a known argument or result of that sort, or of an element sort only this sort has
 * among the candidates: decided by the caller). */
static bool sig_fits(const eg_engine *e, const eg_cprim *cp, const uint32_t *sorts, uint32_t nargs,
                     uint32_t want, bool *pinned)
{
    const eg_prim *p = &cp->base;
    *pinned = false;
    if (p->nargs >= 0 && (uint32_t)p->nargs != nargs) return false;
    for (uint32_t i = 0; i < nargs; i++) {
        if (sorts[i] == NOSORT) continue;
        if (sorts[i] != arg_sort(e, p, i)) return false;
        if (sorts[i] == cp->owner) *pinned = true;
    }
    if (want != NOSORT) {
        if (want != ret_sort(e, p)) return false;
        if (want == cp->owner) *pinned = true;
    }
    return true;
}

const eg_prim *eg__cont_resolve(const eg_engine *e, const char *name, const uint32_t *sorts,
                                uint32_t nargs, uint32_t want, bool *known, bool *ambiguous)
{
    *ambiguous = false;
    const eg_prim *first = NULL, *pinned_hit = NULL;
    uint32_t nfit = 0;
    for (uint32_t si = 0; si < e->nsorts; si++) {
        const eg_sort *s = &e->sorts[si];
        if (s->kind != SK_CONT) continue;
        for (uint32_t k = 0; k < s->ncont_prims; k++) {
            const eg_prim *p = &s->cont_prims[k].base;
            if (strcmp(p->name, name) != 0) continue;
            *known = true;
            bool pin;
            if (!sig_fits(e, &s->cont_prims[k], sorts, nargs, want, &pin)) continue;
            if (pin && !pinned_hit) pinned_hit = p;
            if (!first) first = p;
            nfit++;
        }
    }
    /* a sort the known sorts name wins; else the one sort that fits (its open arguments
     * then take their sorts from it); several that fit are ambiguous */
    if (pinned_hit) return pinned_hit;
    if (nfit == 1) return first;
    if (nfit > 1) *ambiguous = true;
    return NULL;
}

/* ---- function values ---- */

/* Whether `name` with np partial arguments of sorts ps (NOSORT: not known yet) is a
 * target for the function sort fs; fills *t. A table (constructor, function, relation:
 * output Unit) or a primitive (resolved on the partial and the function's input sorts). */
static bool fn_target(eg_engine *e, uint32_t fs, const char *name, const uint32_t *ps, uint32_t np,
                      eg_fnt *t)
{
    const eg_sort *F = &e->sorts[fs];
    if (np + F->fn_nin > EG_MAX_ARGS) return false;
    memset(t, 0, sizeof *t);
    t->fsort = fs;
    t->npartial = np;
    t->table = -1;
    int32_t ti = eg__table_find(e, name);
    if (ti >= 0) {
        const eg_table *tb = &e->tables[ti];
        if (tb->n_in != np + F->fn_nin) return false;
        for (uint32_t i = 0; i < tb->n_in; i++) {
            uint32_t want = i < np ? ps[i] : F->fn_in[i - np];
            if (want != NOSORT && want != tb->in_sort[i]) return false;
            t->in[i] = tb->in_sort[i];
        }
        t->out = tb->has_out ? tb->out_sort : SORT_UNIT;
        if (t->out != F->fn_out) return false;
        t->table = ti;
        t->n_in = tb->n_in;
        return true;
    }
    uint32_t sorts[EG_MAX_ARGS];
    uint32_t n = np + F->fn_nin;
    for (uint32_t i = 0; i < n; i++)
        sorts[i] = i < np ? ps[i] : F->fn_in[i - np];
    bool known = false, amb = false;
    const eg_prim *p;
    if (eg__cont_prim_name(name)) {
        p = eg__cont_resolve(e, name, sorts, n, F->fn_out, &known, &amb);
        if (!p) return false;
        for (uint32_t i = 0; i < n; i++)
            t->in[i] = arg_sort(e, p, i);
        t->out = ret_sort(e, p);
    } else {
        for (uint32_t i = 0; i < n; i++)
            if (sorts[i] == NOSORT) return false;
        p = eg__prim_resolve(e, name, sorts, n, &known);
        if (!p) return false;
        memcpy(t->in, sorts, n * sizeof *sorts);
        t->out = eg__prim_ret(p, n ? sorts[0] : NOSORT);
    }
    if (t->out != F->fn_out) return false;
    t->prim = p;
    t->n_in = n;
    return true;
}

static uint32_t fn_register(eg_engine *e, const eg_fnt *t)
{
    for (uint32_t k = 0; k < e->nfnt; k++) {
        const eg_fnt *o = &e->fnt[k];
        if (o->fsort == t->fsort && o->name == t->name && o->npartial == t->npartial &&
            o->table == t->table && o->prim == t->prim)
            return k;
    }
    EG_GROW(e, e->fnt, e->capfnt, e->nfnt + 1);
    e->fnt[e->nfnt] = *t;
    return e->nfnt++;
}

const eg_prim *eg__fn_resolve(eg_engine *e, const char *name, const uint32_t *ps, uint32_t np,
                              uint32_t want, uint32_t *partial_sorts, bool *ambiguous)
{
    *ambiguous = false;
    const eg_prim *hit = NULL;
    eg_fnt t, found = {0};
    for (uint32_t fs = 0; fs < e->nsorts; fs++) {
        const eg_sort *F = &e->sorts[fs];
        if (F->kind != SK_CONT || F->family != CK_FN) continue;
        if (want != NOSORT && want != fs) continue;
        if (!fn_target(e, fs, name, ps, np, &t)) continue;
        if (hit) {
            *ambiguous = true;
            return NULL;
        }
        found = t;
        for (uint32_t k = 0; k < F->ncont_prims; k++)
            if (F->cont_prims[k].base.op == OP_FN_MAKE) hit = &F->cont_prims[k].base;
    }
    if (!hit) return NULL;
    for (uint32_t i = 0; i < np; i++)
        partial_sorts[i] = found.in[i];
    bool all = true;
    for (uint32_t i = 0; i < np; i++)
        if (ps[i] == NOSORT) all = false;
    if (all) {
        found.name = eg__intern(e, name, strlen(name));
        fn_register(e, &found);
    }
    return hit;
}

/* Applies target k to args[0..n) (the partial arguments, then the call's). */
static prim_status fn_apply(eg_engine *e, uint32_t k, const eg_value *args, uint32_t n,
                            eg_value *out, const char **why)
{
    if (k >= e->nfnt || n != e->fnt[k].n_in) {
        *why = "not a function value of this sort";
        return PR_FAIL;
    }
    const eg_fnt *t = &e->fnt[k];
    if (t->table < 0) return eg__prim_call(e, t->prim, args, n, out, why);
    if ((uint32_t)t->table >= e->ntables) {
        *why = "the function's table no longer exists";
        return PR_FAIL;
    }
    eg_table *tb = &e->tables[t->table];
    eg_value key[EG_MAX_COLS];
    for (uint32_t i = 0; i < n; i++)
        key[i] = eg__canon(e, tb->in_sort[i], args[i]);
    /* a query only reads (egglog: applying a constructor in a query does not make the
     * term); an action makes a constructor's term or a relation's row */
    bool make_it = !e->in_query_prim && tb->kind != TK_FUNCTION;
    if (make_it) {
        eg_value v = eg__lookup_or_insert(e, tb, key, e->cur_origin);
        *out = tb->has_out ? eg__canon(e, tb->out_sort, v) : 0;
        return PR_OK;
    }
    int64_t r = eg__table_lookup(tb, key, eg__key_hash(key, n));
    if (r < 0) {
        *why = "the function has no value there";
        return PR_FAIL;
    }
    *out = tb->has_out ? eg__canon(e, tb->out_sort, tb->cols[(size_t)r * tb->ncols + n]) : 0;
    return PR_OK;
}

/* ---- the primitives ---- */

static bool has(const eg_value *x, uint32_t n, eg_value v)
{
    for (uint32_t i = 0; i < n; i++)
        if (x[i] == v) return true;
    return false;
}

/* The index of key k in a map's pairs, or -1. */
static int64_t map_find(const eg_value *x, uint32_t n, eg_value k)
{
    for (uint32_t i = 0; i < n / 2; i++)
        if (x[2 * i] == k) return i;
    return -1;
}

static uint32_t count_of(const eg_value *x, uint32_t n, eg_value v)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++)
        c += x[i] == v;
    return c;
}

prim_status eg__cont_call(eg_engine *e, const eg_prim *p, const eg_value *a, uint32_t nargs,
                          eg_value *out, const char **why)
{
    uint32_t self = ((const eg_cprim *)p)->owner;
    const eg_sort *s = &e->sorts[self];
    uint32_t n0 = 0, n1 = 0;
    const eg_value *x = NULL, *y = NULL;
    /* the container arguments' contents */
    if (nargs >= 1 && arg_sort(e, p, 0) == self) x = eg__cont_elems(e, a[0], &n0);
    if (nargs >= 2 && arg_sort(e, p, 1) == self) y = eg__cont_elems(e, a[1], &n1);
    /* the result's contents are built in one scoped buffer, large enough for any op */
    size_t cap = (size_t)n0 + n1 + 2 * (size_t)nargs + 2;
    if ((p->op == OP_FN_VEC_MAP || p->op == OP_FN_MS_MAP) && nargs == 2) {
        uint32_t k;
        eg__cont_elems(e, a[1], &k);
        cap += k;
    }
    if (p->op == OP_VEC_APPEND)
        for (uint32_t i = 0; i < nargs; i++) {
            uint32_t k;
            eg__cont_elems(e, a[i], &k);
            cap += k;
        }
    int64_t range = 0;
    if (p->op == OP_VEC_RANGE || p->op == OP_MS_SINGLE) {
        range = (int64_t)a[p->op == OP_VEC_RANGE ? 0 : 1];
        if (range < 0) range = 0;
        if ((uint64_t)range > (1u << 26)) {
            *why = "size too large";
            return PR_FAIL;
        }
        cap += (size_t)range;
    }
    /* a container that doubles every iteration (vec-append of itself) is bounded like a
     * growing string: the run's memory limit is checked before the allocation */
    eg__limit_room(e, cap * sizeof(eg_value));
    eg_value *w = eg__scoped_alloc(e, cap * sizeof *w);
    uint32_t m = 0;
    prim_status st = PR_OK;
    bool make_result = true;
    switch (p->op) {
    case OP_VEC_EMPTY:
    case OP_SET_EMPTY:
    case OP_MAP_EMPTY:
        break;
    case OP_VEC_OF:
    case OP_SET_OF:
    case OP_MS_OF:
        if (nargs) memcpy(w, a, nargs * sizeof *a);
        m = nargs;
        break;
    case OP_VEC_APPEND:
        for (uint32_t i = 0; i < nargs; i++) {
            uint32_t k;
            const eg_value *z = eg__cont_elems(e, a[i], &k);
            memcpy(w + m, z, k * sizeof *z);
            m += k;
        }
        break;
    case OP_VEC_PUSH:
    case OP_SET_INSERT:
    case OP_MS_INSERT:
        memcpy(w, x, n0 * sizeof *x);
        m = n0;
        w[m++] = a[1];
        break;
    case OP_VEC_POP:
        memcpy(w, x, n0 * sizeof *x);
        m = n0 ? n0 - 1 : 0;
        break;
    case OP_VEC_LENGTH:
    case OP_SET_LENGTH:
    case OP_MS_LENGTH:
        *out = n0;
        make_result = false;
        break;
    case OP_MAP_LENGTH:
        *out = n0 / 2;
        make_result = false;
        break;
    case OP_VEC_CONTAINS:
    case OP_SET_CONTAINS:
    case OP_MS_CONTAINS:
    case OP_VEC_NOT_CONTAINS:
    case OP_SET_NOT_CONTAINS:
    case OP_MS_NOT_CONTAINS: {
        bool in = has(x, n0, a[1]);
        bool want = p->op == OP_VEC_CONTAINS || p->op == OP_SET_CONTAINS || p->op == OP_MS_CONTAINS;
        *out = 0;
        if (in != want) st = PR_FAIL;
        make_result = false;
        break;
    }
    case OP_MAP_CONTAINS:
    case OP_MAP_NOT_CONTAINS:
        *out = 0;
        if ((map_find(x, n0, a[1]) >= 0) != (p->op == OP_MAP_CONTAINS)) st = PR_FAIL;
        make_result = false;
        break;
    case OP_VEC_GET:
    case OP_SET_GET: {
        int64_t i = (int64_t)a[1];
        if (i < 0 || (uint64_t)i >= n0) {
            *why = "index out of range";
            st = PR_FAIL;
        } else {
            *out = x[i];
        }
        make_result = false;
        break;
    }
    case OP_VEC_SET:
    case OP_VEC_REMOVE: {
        int64_t i = (int64_t)a[1];
        if (i < 0 || (uint64_t)i >= n0) {
            *why = "index out of range";
            st = PR_FAIL;
            make_result = false;
            break;
        }
        for (uint32_t k = 0; k < n0; k++) {
            if (k == (uint64_t)i) {
                if (p->op == OP_VEC_SET) w[m++] = a[2];
                continue;
            }
            w[m++] = x[k];
        }
        break;
    }
    case OP_VEC_RANGE:
        for (int64_t i = 0; i < range; i++)
            w[m++] = (eg_value)i;
        break;
    case OP_VEC_UNION:
        /* egglog: unions the vectors' elements pairwise (same length) */
        if (n0 != n1) {
            *why = "vectors of different lengths";
            st = PR_FAIL;
            make_result = false;
            break;
        }
        for (uint32_t i = 0; i < n0; i++) {
            eg_value u = eg__cont_elems(e, a[0], &n0)[i], v = eg__cont_elems(e, a[1], &n1)[i];
            if (u == v) continue;
            if (!eg__is_eq(e, s->elem[0])) {
                *why = "vectors of different primitive elements";
                st = PR_FAIL;
                break;
            }
            eg__union(e, (uint32_t)u, (uint32_t)v);
        }
        if (st == PR_OK) *out = eg__cont_canon(e, self, a[0]);
        make_result = false;
        break;
    case OP_SET_REMOVE:
        for (uint32_t k = 0; k < n0; k++)
            if (x[k] != a[1]) w[m++] = x[k];
        break;
    case OP_MS_REMOVE: {
        bool done = false;
        for (uint32_t k = 0; k < n0; k++) {
            if (!done && x[k] == a[1]) {
                done = true;
                continue;
            }
            w[m++] = x[k];
        }
        if (!done) {
            *why = "the element is not in the multiset";
            st = PR_FAIL;
            make_result = false;
        }
        break;
    }
    case OP_SET_UNION:
    case OP_MS_SUM:
        memcpy(w, x, n0 * sizeof *x);
        memcpy(w + n0, y, n1 * sizeof *y);
        m = n0 + n1;
        break;
    case OP_SET_DIFF:
        for (uint32_t k = 0; k < n0; k++)
            if (!has(y, n1, x[k])) w[m++] = x[k];
        break;
    case OP_SET_INTERSECT:
        for (uint32_t k = 0; k < n0; k++)
            if (has(y, n1, x[k])) w[m++] = x[k];
        break;
    case OP_MS_INTERSECTION:
    case OP_MS_SUBTRACT:
        /* both sorted: the minimum count, or the difference of counts */
        for (uint32_t k = 0; k < n0;) {
            uint32_t j = k;
            while (j < n0 && x[j] == x[k])
                j++;
            uint32_t cx = j - k, cy = count_of(y, n1, x[k]);
            uint32_t keep =
                p->op == OP_MS_INTERSECTION ? (cx < cy ? cx : cy) : (cx > cy ? cx - cy : 0);
            for (uint32_t r = 0; r < keep; r++)
                w[m++] = x[k];
            k = j;
        }
        if (p->op == OP_MS_SUBTRACT)
            for (uint32_t k = 0; k < n1; k++)
                if (count_of(y, n1, y[k]) > count_of(x, n0, y[k])) {
                    *why = "the subtracted multiset is not contained in the first";
                    st = PR_FAIL;
                    make_result = false;
                    break;
                }
        break;
    case OP_MS_SINGLE:
        for (int64_t i = 0; i < range; i++)
            w[m++] = a[0];
        break;
    case OP_MS_COUNT:
        *out = count_of(x, n0, a[1]);
        make_result = false;
        break;
    case OP_MS_PICK:
        if (!n0) {
            *why = "the multiset is empty";
            st = PR_FAIL;
        } else {
            *out = x[0];
        }
        make_result = false;
        break;
    case OP_MAP_INSERT:
        memcpy(w, x, n0 * sizeof *x);
        m = n0;
        w[m++] = a[1];
        w[m++] = a[2];
        break;
    case OP_MAP_GET: {
        int64_t i = map_find(x, n0, a[1]);
        if (i < 0) {
            *why = "the key is not in the map";
            st = PR_FAIL;
        } else {
            *out = x[2 * i + 1];
        }
        make_result = false;
        break;
    }
    case OP_MAP_REMOVE:
        for (uint32_t k = 0; k + 1 < n0; k += 2)
            if (x[k] != a[1]) {
                w[m++] = x[k];
                w[m++] = x[k + 1];
            }
        break;
    case OP_FN_MAKE: {
        /* a[0] the target's name; registered when the call type-checked */
        uint32_t k = UINT32_MAX;
        for (uint32_t i = 0; i < e->nfnt && k == UINT32_MAX; i++)
            if (e->fnt[i].fsort == self && e->fnt[i].name == a[0] &&
                e->fnt[i].npartial == nargs - 1)
                k = i;
        if (k == UINT32_MAX) {
            *why = "no such function";
            st = PR_FAIL;
            make_result = false;
            break;
        }
        w[m++] = k;
        for (uint32_t i = 1; i < nargs; i++)
            w[m++] = a[i];
        break;
    }
    case OP_FN_APP:
    case OP_FN_VEC_MAP:
    case OP_FN_MS_MAP: {
        uint32_t nf;
        const eg_value *f = eg__cont_elems(e, a[0], &nf);
        if (!nf) {
            *why = "not a function value";
            st = PR_FAIL;
            make_result = false;
            break;
        }
        uint32_t k = (uint32_t)f[0], np = nf - 1;
        eg_value full[EG_MAX_COLS];
        if (np >= EG_MAX_ARGS) {
            st = PR_FAIL;
            make_result = false;
            break;
        }
        memcpy(full, f + 1, np * sizeof *f);
        if (p->op == OP_FN_APP) {
            for (uint32_t i = 1; i < nargs && np + i - 1 < EG_MAX_ARGS; i++)
                full[np + i - 1] = a[i];
            st = fn_apply(e, k, full, np + nargs - 1, out, why);
            make_result = false;
            break;
        }
        /* unstable-vec-map, unstable-multiset-map: the elements where the function is
         * defined (egglog's vec map skips the others) */
        uint32_t nv;
        eg__cont_elems(e, a[1], &nv);
        for (uint32_t i = 0; i < nv; i++) {
            full[np] = eg__cont_elems(e, a[1], &nv)[i];
            eg_value r;
            const char *w2;
            if (fn_apply(e, k, full, np + 1, &r, &w2) == PR_OK) w[m++] = r;
        }
        self = ret_sort(e, p);
        break;
    }
    case OP_FN_FILL_INDEX: {
        /* egglog: sets (f ms x) to x's count for every distinct x of ms, through f's
         * table (a constructor or function, not a primitive); stops at the first row that
         * exists already (a fill writes every row of one multiset at once). Actions only. */
        uint32_t nf, nm;
        const eg_value *f = eg__cont_elems(e, a[1], &nf);
        *out = 0;
        make_result = false;
        if (nf != 1 || f[0] >= e->nfnt || e->fnt[f[0]].table < 0 || e->in_query_prim ||
            (uint32_t)e->fnt[f[0]].table >= e->ntables) {
            *why = "needs a function value of a table without partial arguments, in an action";
            st = PR_FAIL;
            break;
        }
        uint32_t ti = (uint32_t)e->fnt[f[0]].table;
        eg__cont_elems(e, a[0], &nm);
        for (uint32_t k = 0; k < nm;) {
            const eg_value *ms = eg__cont_elems(e, a[0], &nm); /* re-read: sets may intern */
            uint32_t j = k;
            while (j < nm && ms[j] == ms[k])
                j++;
            eg_value row[3] = {a[0], ms[k], (eg_value)(int64_t)(j - k)};
            eg_table *tb = &e->tables[ti];
            if (tb->ncols != 3 || eg__table_lookup(tb, row, eg__key_hash(row, 2)) >= 0) break;
            eg__stage_set(e, ti, row);
            k = j;
        }
        break;
    }
    default:
        *why = "unknown container primitive";
        st = PR_FAIL;
        make_result = false;
    }
    if (st == PR_OK && make_result) *out = eg__cont_make(e, self, w, m);
    eg__scoped_free(e, w);
    return st;
}
