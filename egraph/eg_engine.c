/* eg_engine.c: the engine value's lifecycle: options, creation (the built-in sorts, the
 * default ruleset, origin 0) and teardown of everything the engine owns. The concepts it
 * holds live in files of their own: eg_err.c (the error door), eg_str.c (interned
 * strings), eg_uf.c (union-find), eg_names.c (name lookup), eg_origin.c (provenance). */
#include "eg_int.h"

#include <stdlib.h>
#include <string.h>

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
    eg__names_new(e);
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
    eg__free(e->fnt);
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
    eg__names_free(e);
    for (uint32_t i = 0; i < e->nstrs; i++)
        eg__mfree(e, e->strs[i]);
    eg__uses_drop(e);
    /* the engine's counted arrays: values (pairs, containers, big numbers), strings,
     * union-find, pending writes, rebuild work */
    void *counted[] = {e->pairs,    e->cvals,     e->bigbuf,     e->cont_off,  e->cont_hash,
                       e->cont_len, e->cont_sort, e->cont_slots, e->pair_hash, e->pair_slots,
                       e->strs,     e->str_len,   e->pset,       e->str_hash,  e->str_slots,
                       e->uf,       e->pend,      e->pend_vals,  e->dirty,     e->seeds,
                       e->heap};
    for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++)
        eg__mfree(e, counted[i]);
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
