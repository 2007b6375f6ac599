/* eg_engine.c: the engine value: creation and teardown, interned strings, the
 * union-find over e-class ids, name lookup, and the one place errors are raised. */
#include "eg_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

/* A hash index from names to dense indexes (tables, globals). Entries are only ever
 * appended to what it indexes, except by pop, which resets it; so the index catches up
 * lazily on lookup by adding the entries it has not seen. A later entry with the same
 * name replaces an earlier one (the newest definition wins). */
typedef struct name_map {
    uint32_t *slots; /* index + 1, 0 = empty */
    uint32_t nslots, nindexed;
} name_map;

double eg__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void eg_options_default(eg_options *o)
{
    memset(o, 0, sizeof *o);
}

static void add_sort(eg_engine *e, const char *name, sort_kind k)
{
    EG_GROW(e->sorts, e->capsorts, e->nsorts + 1);
    e->sorts[e->nsorts].name = eg__strdup(name);
    e->sorts[e->nsorts].kind = k;
    e->sorts[e->nsorts].pair_prims = NULL;
    e->sorts[e->nsorts].canon = false;
    e->nsorts++;
}

eg_engine *eg_engine_new(const eg_options *opt)
{
    eg_engine *e = eg__calloc(1, sizeof *e);
    if (opt)
        e->opt = *opt;
    else
        eg_options_default(&e->opt);
    e->out = e->opt.out ? e->opt.out : stdout;
    e->log = e->opt.log ? e->opt.log : stderr;
    add_sort(e, "Unit", SK_UNIT);
    add_sort(e, "bool", SK_BOOL);
    add_sort(e, "i64", SK_I64);
    add_sort(e, "f64", SK_F64);
    add_sort(e, "String", SK_STRING);
    EG_GROW(e->rulesets, e->caprulesets, 1);
    memset(&e->rulesets[0], 0, sizeof e->rulesets[0]);
    e->rulesets[0].name = eg__strdup("");
    e->nrulesets = 1;
    e->ts = 1;
    e->tmap = eg__calloc(1, sizeof(name_map));
    e->gmap = eg__calloc(1, sizeof(name_map));
    return e;
}

void eg__frame_free(eg_engine *e, frame *f)
{
    for (uint32_t i = 0; i < f->ntables; i++)
        eg__table_fini(&f->tables[i]);
    eg__free(f->tables);
    eg__mfree(&e->mem, f->uf);
    for (uint32_t i = 0; i < f->nglobals; i++)
        eg__free(f->globals[i].name);
    eg__free(f->globals);
    eg__free(f->rule_seen);
}

static void rule_fini(rule *r)
{
    eg__free(r->name);
    eg__query_free(&r->q);
    eg__actions_free(r->acts, r->nacts);
}

/* Sanitizer builds (gcc or clang) check the memory account at eg_engine_free. */
#if defined(LUMINAL_SANITIZE) || defined(__SANITIZE_ADDRESS__)
#define EG_CHECK_ACCOUNT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EG_CHECK_ACCOUNT 1
#endif
#endif

void eg_engine_free(eg_engine *e)
{
    if (!e) return;
    for (uint32_t i = 0; i < e->nsorts; i++) {
        eg__free(e->sorts[i].name);
        eg__free(e->sorts[i].pair_prims);
    }
    eg__free(e->sorts);
    eg__mfree(&e->mem, e->pairs);
    eg__mfree(&e->mem, e->pair_hash);
    eg__mfree(&e->mem, e->pair_slots);
    for (uint32_t i = 0; i < e->ntables; i++) {
        eg__table_fini(&e->tables[i]);
        eg__free(e->tables[i].name);
        eg__free(e->tables[i].in_sort);
        eg__aexpr_free(e->tables[i].merge_expr);
    }
    eg__free(e->tables);
    for (uint32_t i = 0; i < e->nrules; i++)
        rule_fini(&e->rules[i]);
    eg__free(e->rules);
    for (uint32_t i = 0; i < e->nrulesets; i++) {
        eg__free(e->rulesets[i].name);
        eg__free(e->rulesets[i].rules);
    }
    eg__free(e->rulesets);
    for (uint32_t i = 0; i < e->nglobals; i++)
        eg__free(e->globals[i].name);
    eg__free(e->globals);
    eg__free(e->tmap->slots);
    eg__free(e->tmap);
    eg__free(e->gmap->slots);
    eg__free(e->gmap);
    for (uint32_t i = 0; i < e->nstrs; i++)
        eg__mfree(&e->mem, e->strs[i]);
    eg__mfree(&e->mem, e->strs);
    eg__mfree(&e->mem, e->str_hash);
    eg__mfree(&e->mem, e->str_slots);
    eg__mfree(&e->mem, e->uf);
    eg__mfree(&e->mem, e->pend);
    eg__mfree(&e->mem, e->pend_vals);
    eg__uses_drop(e);
    eg__mfree(&e->mem, e->dirty);
    eg__mfree(&e->mem, e->seeds);
    eg__mfree(&e->mem, e->heap);
    for (uint32_t i = 0; i < e->nframes; i++)
        eg__frame_free(e, &e->frames[i]);
    eg__free(e->frames);
    for (uint32_t i = 0; i < e->nprogs; i++)
        eg__sx_free(e->progs[i]);
    eg__free(e->progs);
    for (uint32_t i = 0; i < e->nfiles; i++)
        eg__free(e->files[i]);
    eg__free(e->files);
#if defined(EG_CHECK_ACCOUNT)
    /* every counted block was freed through the account: it must come back to zero */
    if (e->mem.bytes != 0 || e->mem.underflow) {
        fprintf(stderr, "egraph: memory account off by %zu bytes at engine free%s\n", e->mem.bytes,
                e->mem.underflow ? " (a block freed outside its account)" : "");
        abort();
    }
#endif
    eg__free(e);
}

/* ---- errors: raised here and only here ---- */

static void vformat(eg_error *err, const sx *at, const char *fmt, va_list ap)
{
    size_t off = 0;
    if (at) {
        int k = snprintf(err->msg, sizeof err->msg, "%s:%u:%u: ", at->file ? at->file : "<input>",
                         at->line, at->col);
        off = k > 0 && (size_t)k < sizeof err->msg ? (size_t)k : 0;
    }
    vsnprintf(err->msg + off, sizeof err->msg - off, fmt, ap);
}

void eg__errorf(eg_error *err, const sx *at, const char *fmt, ...)
{
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    vformat(err, at, fmt, ap);
    va_end(ap);
}

int eg__fail(eg_engine *e, const sx *at, const char *fmt, ...)
{
    if (e->err) {
        va_list ap;
        va_start(ap, fmt);
        vformat(e->err, at, fmt, ap);
        va_end(ap);
        if (!e->err->code) e->err->code = EG_ERR_TYPE;
    }
    return -1;
}

/* Raises an error out of the current command (code taken from e->err->code, set by the
 * caller before, or EG_ERR_RUNTIME). The command boundary (eg__command's caller) frees
 * the command's scratch and restores a usable state. */
void eg__throw(eg_engine *e, const sx *at, const char *fmt, ...)
{
    va_list ap;
    if (!at) at = e->cur_at;
    va_start(ap, fmt);
    vformat(e->err, at, fmt, ap);
    va_end(ap);
    if (!e->err->code) e->err->code = EG_ERR_RUNTIME;
    longjmp(*e->jmp, 1);
}

/* ---- strings ---- */

uint32_t eg__intern(eg_engine *e, const char *s, size_t n)
{
    uint64_t h = XXH3_64bits(s, n);
    if (e->str_nslots == 0 || (e->nstrs + 1) * 2 > e->str_nslots) {
        uint32_t ns = e->str_nslots ? e->str_nslots * 2 : 64;
        uint32_t *sl = eg__mcalloc(&e->mem, ns, sizeof *sl);
        for (uint32_t i = 0; i < e->nstrs; i++) {
            uint32_t j = (uint32_t)e->str_hash[i] & (ns - 1);
            while (sl[j])
                j = (j + 1) & (ns - 1);
            sl[j] = i + 1;
        }
        eg__mfree(&e->mem, e->str_slots);
        e->str_slots = sl;
        e->str_nslots = ns;
    }
    uint32_t j = (uint32_t)h & (e->str_nslots - 1);
    while (e->str_slots[j]) {
        uint32_t id = e->str_slots[j] - 1;
        if (e->str_hash[id] == h && strlen(e->strs[id]) == n && memcmp(e->strs[id], s, n) == 0)
            return id;
        j = (j + 1) & (e->str_nslots - 1);
    }
    EG_MGROW(&e->mem, e->strs, e->capstrs, e->nstrs + 1);
    e->str_hash = eg__marray(&e->mem, e->str_hash, e->capstrs, sizeof *e->str_hash);
    e->strs[e->nstrs] = eg__mstrndup(&e->mem, s, n);
    e->str_hash[e->nstrs] = h;
    e->str_slots[j] = e->nstrs + 1;
    return e->nstrs++;
}

const char *eg__str(const eg_engine *e, uint32_t id)
{
    return id < e->nstrs ? e->strs[id] : "";
}

/* ---- union-find ---- */

uint32_t eg__new_id(eg_engine *e)
{
    EG_MGROW(&e->mem, e->uf, e->capids, e->nids + 1);
    e->uf[e->nids] = e->nids;
    return e->nids++;
}

/* Unions the sets of a and b; the smaller root id becomes the root, so the result never
 * depends on argument order. Returns true if two sets were merged. */
bool eg__union(eg_engine *e, uint32_t a, uint32_t b)
{
    a = eg__find(e, a);
    b = eg__find(e, b);
    if (a == b) return false;
    if (a > b) {
        uint32_t t = a;
        a = b;
        b = t;
    }
    e->uf[b] = a;
    if (e->dirty_off) {
        e->dirty_lost = true;
    } else { /* an indexed rebuild visits the rows that hold b */
        EG_MGROW(&e->mem, e->dirty, e->capdirty, (size_t)e->ndirty + 1);
        e->dirty[e->ndirty++] = b;
    }
    e->unions++;
    e->changed = true;
    return true;
}

/* ---- names ---- */

int32_t eg__sort_find(const eg_engine *e, const char *name)
{
    for (uint32_t i = 0; i < e->nsorts; i++)
        if (strcmp(e->sorts[i].name, name) == 0) return (int32_t)i;
    return -1;
}

typedef const char *(*name_of_fn)(const eg_engine *e, uint32_t i);

static const char *table_name_of(const eg_engine *e, uint32_t i)
{
    return e->tables[i].name;
}

static const char *global_name_of(const eg_engine *e, uint32_t i)
{
    return e->globals[i].name;
}

static void map_put(name_map *m, const eg_engine *e, name_of_fn name_of, uint32_t i)
{
    const char *nm = name_of(e, i);
    uint32_t j = (uint32_t)XXH3_64bits(nm, strlen(nm)) & (m->nslots - 1);
    while (m->slots[j] && strcmp(name_of(e, m->slots[j] - 1), nm) != 0)
        j = (j + 1) & (m->nslots - 1);
    m->slots[j] = i + 1;
}

static int32_t map_find(name_map *m, const eg_engine *e, name_of_fn name_of, uint32_t count,
                        const char *name)
{
    if (m->nindexed > count) m->nindexed = 0, memset(m->slots, 0, m->nslots * sizeof(uint32_t));
    if (m->nindexed < count) {
        if ((uint64_t)count * 2 > m->nslots) {
            uint32_t ns = m->nslots ? m->nslots : 64;
            while ((uint64_t)count * 2 > ns)
                ns *= 2;
            eg__free(m->slots);
            m->slots = eg__calloc(ns, sizeof(uint32_t));
            m->nslots = ns;
            m->nindexed = 0;
        }
        while (m->nindexed < count)
            map_put(m, e, name_of, m->nindexed++);
    }
    if (!m->nslots) return -1;
    uint32_t j = (uint32_t)XXH3_64bits(name, strlen(name)) & (m->nslots - 1);
    while (m->slots[j]) {
        uint32_t i = m->slots[j] - 1;
        if (strcmp(name_of(e, i), name) == 0) return (int32_t)i;
        j = (j + 1) & (m->nslots - 1);
    }
    return -1;
}

void eg__names_reset(eg_engine *e)
{
    e->tmap->nindexed = 0;
    e->gmap->nindexed = 0;
    if (e->tmap->nslots) memset(e->tmap->slots, 0, e->tmap->nslots * sizeof(uint32_t));
    if (e->gmap->nslots) memset(e->gmap->slots, 0, e->gmap->nslots * sizeof(uint32_t));
}

int32_t eg__table_find(const eg_engine *e, const char *name)
{
    return map_find(e->tmap, e, table_name_of, e->ntables, name);
}

int32_t eg__global_find(const eg_engine *e, const char *name)
{
    return map_find(e->gmap, e, global_name_of, e->nglobals, name);
}

int32_t eg__ruleset_find(const eg_engine *e, const char *name)
{
    for (uint32_t i = 0; i < e->nrulesets; i++)
        if (strcmp(e->rulesets[i].name, name) == 0) return (int32_t)i;
    return -1;
}
