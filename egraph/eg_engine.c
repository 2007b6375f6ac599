/* eg_engine.c: the engine value: creation and teardown, interned strings, the
 * union-find over e-class ids, name lookup, provenance records, and the one door every
 * error of the engine goes through (eg__failv). */
#include "eg_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* A hash index from names to dense indexes (tables, globals). Entries are only ever
 * appended to what it indexes, except by pop, which resets it; so the index catches up
 * lazily on lookup by adding the entries it has not seen. A later entry with the same
 * name replaces an earlier one (the newest definition wins). */
typedef struct name_map {
    uint32_t *slots; /* index + 1, 0 = empty */
    uint32_t nslots, nindexed;
} name_map;

void eg_options_default(eg_options *o)
{
    memset(o, 0, sizeof *o);
}

static void add_sort(eg_engine *e, const char *name, sort_kind k)
{
    EG_GROW(e, e->sorts, e->capsorts, e->nsorts + 1);
    eg_sort *s = &e->sorts[e->nsorts];
    memset(s, 0, sizeof *s);
    s->name = eg__strdup(e, name);
    s->kind = k;
    e->nsorts++;
}

static void engine_init(eg_engine *e, void *ctx)
{
    (void)ctx;
    add_sort(e, "Unit", SK_UNIT);
    add_sort(e, "bool", SK_BOOL);
    add_sort(e, "i64", SK_I64);
    add_sort(e, "f64", SK_F64);
    add_sort(e, "String", SK_STRING);
    add_sort(e, "BigInt", SK_BIGINT);
    add_sort(e, "BigRat", SK_BIGRAT);
    EG_GROW(e, e->rulesets, e->caprulesets, 1);
    memset(&e->rulesets[0], 0, sizeof e->rulesets[0]);
    e->rulesets[0].name = eg__strdup(e, "");
    e->nrulesets = 1;
    e->tmap = eg__calloc(e, 1, sizeof(name_map));
    e->gmap = eg__calloc(e, 1, sizeof(name_map));
    eg__origin_new(e, EG_ORIGIN_API, NULL, "api"); /* origin 0: rows made through the C API */
}

eg_engine *eg_engine_new(const eg_options *opt, lm_err *err)
{
    eg_options o;
    if (opt)
        o = *opt;
    else
        eg_options_default(&o);
    /* the engine itself is the first allocation (eg_options.fail_alloc == 1 fails it) */
    eg_engine *e = o.fail_alloc == 1 ? NULL : calloc(1, sizeof *e);
    if (!e) {
        eg__fail(err, LM_ENOMEM, NULL, "eg_engine_new: out of memory (allocating the engine)");
        return NULL;
    }
    e->opt = o;
    e->nalloc = 1;
    e->out = o.out ? o.out : stdout;
    e->log = o.log ? o.log : stderr;
    e->ts = 1;
    e->cur_origin = 0;
    if (eg__guard(e, err, "eg_engine_new", engine_init, NULL) != 0) {
        eg_engine_free(e);
        return NULL;
    }
    return e;
}

void eg__frame_free(eg_engine *e, frame *f)
{
    for (uint32_t i = 0; i < f->ntables; i++)
        eg__table_fini(e, &f->tables[i]);
    eg__free(f->tables);
    eg__mfree(e, f->uf);
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
        eg__free(e->sorts[i].cont_prims);
        eg__free(e->sorts[i].fn_in);
    }
    eg__free(e->sorts);
    eg__mfree(e, e->pairs);
    eg__mfree(e, e->cvals);
    eg__mfree(e, e->bigbuf);
    eg__free(e->fnt);
    eg__mfree(e, e->cont_off);
    eg__mfree(e, e->cont_hash);
    eg__mfree(e, e->cont_len);
    eg__mfree(e, e->cont_sort);
    eg__mfree(e, e->cont_slots);
    eg__mfree(e, e->pair_hash);
    eg__mfree(e, e->pair_slots);
    for (uint32_t i = 0; i < e->ntables; i++) {
        eg__table_fini(e, &e->tables[i]);
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
        eg__free(e->rulesets[i].members);
    }
    eg__free(e->rulesets);
    for (uint32_t i = 0; i < e->nglobals; i++)
        eg__free(e->globals[i].name);
    eg__free(e->globals);
    if (e->tmap) eg__free(e->tmap->slots);
    eg__free(e->tmap);
    if (e->gmap) eg__free(e->gmap->slots);
    eg__free(e->gmap);
    for (uint32_t i = 0; i < e->nstrs; i++)
        eg__mfree(e, e->strs[i]);
    eg__mfree(e, e->strs);
    eg__mfree(e, e->str_len);
    eg__mfree(e, e->pset);
    eg__mfree(e, e->str_hash);
    eg__mfree(e, e->str_slots);
    eg__mfree(e, e->uf);
    eg__mfree(e, e->pend);
    eg__mfree(e, e->pend_vals);
    eg__uses_drop(e);
    eg__mfree(e, e->dirty);
    eg__mfree(e, e->seeds);
    eg__mfree(e, e->heap);
    for (uint32_t i = 0; i < e->nframes; i++)
        eg__frame_free(e, &e->frames[i]);
    eg__free(e->frames);
    eg__free(e->progs);
    eg__free(e->sxstack);
    eg__arena_free(e);
    for (uint32_t i = 0; i < e->norigins; i++)
        eg__free(e->origins[i].name);
    eg__free(e->origins);
    for (uint32_t i = 0; i < e->nfiles; i++)
        eg__free(e->files[i]);
    eg__free(e->files);
#if defined(EG_CHECK_ACCOUNT)
    /* every counted block was freed through the account: it must come back to zero */
    if (!e->failed && (e->mem.bytes != 0 || e->mem.underflow)) {
        fprintf(stderr, "egraph: memory account off by %zu bytes at engine free%s\n", e->mem.bytes,
                e->mem.underflow ? " (a block freed outside its account)" : "");
        abort();
    }
#endif
    free(e); /* allocated by eg_engine_new with calloc */
}

/* ---- errors: the door ---- */

int eg__failv(lm_err *err, int code, const sx *at, const char *fmt, va_list ap)
{
    lm_loc loc = {.node_id = LM_NONE};
    if (at) {
        loc.file = at->file ? at->file : "<input>";
        loc.line = at->line;
        loc.col = at->col;
    }
    return lm_err_setv(err, code, at ? &loc : NULL, fmt, ap);
}

int eg__fail(lm_err *err, int code, const sx *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = eg__failv(err, code, at, fmt, ap);
    va_end(ap);
    return rc;
}

/* Raises an error out of the current command or API call: records it in the caller's
 * record and unwinds to the innermost boundary (eg__guard, the command boundary), which
 * frees the command's scratch and restores a usable state. An error without a location
 * of its own gets the command's. */
void eg__throw(eg_engine *e, int code, const sx *at, const char *fmt, ...)
{
    va_list ap;
    if (!at) at = e->cur_at;
    va_start(ap, fmt);
    e->thrown = eg__failv(e->err, code, at, fmt, ap);
    va_end(ap);
    longjmp(*e->jmp, 1);
}

/* ---- provenance ---- */

uint32_t eg__origin_new(eg_engine *e, eg_origin_kind kind, const sx *at, const char *name)
{
    EG_GROW(e, e->origins, e->caporigins, (size_t)e->norigins + 1);
    origin_rec *o = &e->origins[e->norigins];
    o->kind = kind;
    o->at = at;
    o->name = eg__strdup(e, name); /* the record counts only once complete */
    return e->norigins++;
}

uint32_t eg__origin_command(eg_engine *e)
{
    const char *h = e->cur_at ? eg__sx_head(e->cur_at) : NULL;
    e->cur_origin = eg__origin_new(e, EG_ORIGIN_COMMAND, e->cur_at, h ? h : "command");
    return e->cur_origin;
}

const char *eg__keep_file(eg_engine *e, const char *name)
{
    if (!name) name = "<input>";
    /* the same name again (eg_run_schedule in a loop) is kept once */
    if (e->nfiles && strcmp(e->files[e->nfiles - 1], name) == 0) return e->files[e->nfiles - 1];
    EG_GROW(e, e->files, e->capfiles, e->nfiles + 1);
    e->files[e->nfiles] = eg__strdup(e, name);
    return e->files[e->nfiles++];
}

/* ---- strings ---- */

/* Interns the n bytes at s, whose XXH3 hash is h. owned, when not NULL, is s itself, an
 * eg__marray block of n + 1 bytes the table then keeps (or frees, when the string is
 * already there): a string made by a primitive is not copied a second time. */
uint32_t eg__intern_hashed(eg_engine *e, const char *s, size_t n, uint64_t h, char *owned)
{
    if (e->str_nslots == 0 || (e->nstrs + 1) * 2 > e->str_nslots) {
        uint32_t ns = e->str_nslots ? e->str_nslots * 2 : 64;
        uint32_t *sl = eg__mcalloc(e, ns, sizeof *sl);
        for (uint32_t i = 0; i < e->nstrs; i++) {
            uint32_t j = (uint32_t)e->str_hash[i] & (ns - 1);
            while (sl[j])
                j = (j + 1) & (ns - 1);
            sl[j] = i + 1;
        }
        eg__mfree(e, e->str_slots);
        e->str_slots = sl;
        e->str_nslots = ns;
    }
    uint32_t j = (uint32_t)h & (e->str_nslots - 1);
    while (e->str_slots[j]) {
        uint32_t id = e->str_slots[j] - 1;
        if (e->str_hash[id] == h && e->str_len[id] == n && memcmp(e->strs[id], s, n) == 0) {
            if (owned) eg__mfree(e, owned);
            return id;
        }
        j = (j + 1) & (e->str_nslots - 1);
    }
    if (e->nstrs + 1 > e->capstrs) { /* the arrays grow before any is used */
        uint32_t nc = e->capstrs ? e->capstrs * 2 : 64;
        e->str_hash = eg__marray(e, e->str_hash, nc, sizeof *e->str_hash);
        e->str_len = eg__marray(e, e->str_len, nc, sizeof *e->str_len);
        e->strs = eg__marray(e, e->strs, nc, sizeof *e->strs);
        e->capstrs = nc;
    }
    e->strs[e->nstrs] = owned ? owned : eg__mstrndup(e, s, n);
    e->str_hash[e->nstrs] = h;
    e->str_len[e->nstrs] = n;
    e->str_slots[j] = e->nstrs + 1;
    return e->nstrs++;
}

uint32_t eg__intern(eg_engine *e, const char *s, size_t n)
{
    return eg__intern_hashed(e, s, n, XXH3_64bits(s, n), NULL);
}

size_t eg__str_len(const eg_engine *e, uint32_t id)
{
    return id < e->nstrs ? e->str_len[id] : 0;
}

const char *eg__str(const eg_engine *e, uint32_t id)
{
    return id < e->nstrs ? e->strs[id] : "";
}

/* ---- union-find ---- */

uint32_t eg__new_id(eg_engine *e)
{
    EG_MGROW(e, e->uf, e->capids, e->nids + 1);
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
        EG_MGROW(e, e->dirty, e->capdirty, (size_t)e->ndirty + 1);
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

/* The index is only an optimisation: when it cannot grow (out of memory), names are
 * found by a linear scan instead, newest first as the index would. */
static int32_t map_find(name_map *m, const eg_engine *e, name_of_fn name_of, uint32_t count,
                        const char *name)
{
    if (!m) return -1;
    if (m->nindexed > count) m->nindexed = 0, memset(m->slots, 0, m->nslots * sizeof(uint32_t));
    if (m->nindexed < count) {
        if ((uint64_t)count * 2 > m->nslots) {
            uint32_t ns = m->nslots ? m->nslots : 64;
            while ((uint64_t)count * 2 > ns)
                ns *= 2;
            /* the engine is const to readers; only the lazily built index changes */
            uint32_t *sl = e->failed ? NULL : eg__try_calloc((eg_engine *)e, ns, sizeof(uint32_t));
            if (!sl) {
                for (uint32_t i = count; i-- > 0;)
                    if (strcmp(name_of(e, i), name) == 0) return (int32_t)i;
                return -1;
            }
            eg__free(m->slots);
            m->slots = sl;
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
    if (!e->tmap || !e->gmap) return;
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
