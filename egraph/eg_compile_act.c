/* eg_compile_act.c: the compiler of actions (the right side of a rule, top-level
 * actions, merge expressions): expression trees over the query's variables plus the
 * action's own `let` variables, each expression's sort checked against what its place
 * wants. Queries are compiled by eg_compile.c; both build into the compile scratch
 * (eg_compile.h), which the command boundary frees if the command fails. */
#include "eg_compile.h"

#include <stdlib.h>
#include <string.h>

aexpr *eg__cc_mk_expr(eg_engine *e, aexpr_kind k, uint32_t sort, const sx *at)
{
    aexpr *a = eg__calloc(e, 1, sizeof *a);
    a->kind = k;
    a->sort = sort;
    a->at = at;
    return a;
}

int32_t eg__cc_slot(cc *c, const char *name)
{
    for (uint32_t i = c->nslots; i-- > 0;)
        if (c->slot_name[i] && strcmp(c->slot_name[i], name) == 0) return (int32_t)i;
    for (uint32_t i = 0; i < c->nan; i++)
        if (strcmp(c->an[i], name) == 0) return (int32_t)c->av[i];
    return -1;
}

uint32_t eg__cc_add_slot(cc *c, const char *name, uint32_t sort)
{
    eg_engine *e = c->e;
    if (c->nslots + 1 > c->capslots) { /* both arrays grow before either is used */
        uint32_t nc = c->capslots ? c->capslots * 2 : 8;
        c->slot_name = eg__array(e, c->slot_name, nc, sizeof(char *));
        c->slot_sort = eg__array(e, c->slot_sort, nc, sizeof(uint32_t));
        c->capslots = nc;
    }
    c->slot_name[c->nslots] = name ? eg__strdup(e, name) : NULL;
    c->slot_sort[c->nslots] = sort;
    return c->nslots++;
}

static void expect_sort(eg_engine *e, const sx *at, uint32_t want, uint32_t got)
{
    if (want != NOSORT && got != want) {
        eg__throw(e, LM_ETYPE, EG_LOC(at), "type mismatch: expected %s, got %s",
                  eg__sort_name(e, want), eg__sort_name(e, got));
    }
}

/* The end of compiling a function value (fn) or container primitive call named name: the
 * primitive p that resolution found, or a type error saying why none (amb: several fit). */
static aexpr *call_resolved(eg_engine *e, const sx *s, aexpr *a, const eg_prim *p, uint32_t want,
                            bool amb, bool fn, const char *name)
{
    if (!p && fn)
        eg__throw(e, LM_ETYPE, EG_LOC(s),
                  amb ? "unstable-fn \"%s\": several function sorts fit; give the result a "
                        "known sort"
                      : "unstable-fn \"%s\": no function sort (UnstableFn) fits this target "
                        "with these partial arguments (wrong name, arity, input or output sorts)",
                  name);
    if (!p)
        eg__throw(e, LM_ETYPE, EG_LOC(s),
                  amb ? "cannot tell which container sort '%s' makes here: several fit; "
                        "give an argument or the result a known sort"
                      : "no primitive '%s' takes these arguments (wrong arity or argument "
                        "sorts, or no container sort declared for them)",
                  name);
    a->prim = p;
    a->sort = eg__cont_ret(e, p);
    expect_sort(e, s, want, a->sort);
    return a;
}

/* (unstable-fn "name" partial...) in an action: the function sort is the one wanted, or
 * the one whose signature the target fits; a partial argument that is itself a container
 * call gets the target's input sort. */
static aexpr *fn_expr(eg_engine *e, cc *c, const sx *s, uint32_t nargs, uint32_t want,
                      aexpr **holder)
{
    aexpr *a = eg__cc_mk_expr(e, AE_PRIM, NOSORT, s);
    *holder = a;
    a->args = eg__calloc(e, nargs + 1, sizeof(aexpr *));
    a->nargs = nargs;
    if (nargs < 1 || s->items[1]->kind != SX_STR)
        eg__throw(e, LM_ETYPE, EG_LOC(s), "(unstable-fn \"name\" partial-arguments...) expected");
    eg__cc_expr(e, c, s->items[1], SORT_STRING, &a->args[0]);
    uint32_t ps[EG_MAX_ARGS], want_ps[EG_MAX_ARGS];
    uint32_t np = nargs - 1;
    if (np > EG_MAX_ARGS) eg__throw(e, LM_ELIMIT, EG_LOC(s), "too many partial arguments");
    for (uint32_t i = 0; i < np; i++) {
        const char *ah = eg__sx_head(s->items[i + 2]);
        ps[i] = NOSORT;
        if (ah && eg__cont_prim_name(ah)) continue; /* after the target is known */
        eg__cc_expr(e, c, s->items[i + 2], NOSORT, &a->args[i + 1]);
        ps[i] = a->args[i + 1]->sort;
    }
    const char *name = s->items[1]->text;
    bool amb = false;
    const eg_prim *p = eg__fn_resolve(e, name, ps, np, want, want_ps, &amb);
    if (p) {
        bool again = false;
        for (uint32_t i = 0; i < np; i++) {
            if (a->args[i + 1]) continue;
            eg__cc_expr(e, c, s->items[i + 2], want_ps[i], &a->args[i + 1]);
            ps[i] = a->args[i + 1]->sort;
            again = true;
        }
        if (again) p = eg__fn_resolve(e, name, ps, np, want, want_ps, &amb);
    }
    return call_resolved(e, s, a, p, want, amb, true, name);
}

/* A container primitive in an action: its container sort comes from the sort wanted
 * of it, or from its arguments; an argument that is itself a container call (such as
 * (vec-empty), which names no sort) is compiled last, once the others fixed the sort. */
static aexpr *cont_expr(eg_engine *e, cc *c, const sx *s, const char *h, uint32_t nargs,
                        uint32_t want, aexpr **holder)
{
    if (strcmp(h, "unstable-fn") == 0) return fn_expr(e, c, s, nargs, want, holder);
    aexpr *a = eg__cc_mk_expr(e, AE_PRIM, NOSORT, s);
    *holder = a;
    a->args = eg__calloc(e, nargs + 1, sizeof(aexpr *));
    a->nargs = nargs; /* NULL until compiled: freeing skips them */
    uint32_t sorts[EG_MAX_ARGS];
    for (uint32_t i = 0; i < nargs; i++)
        sorts[i] = NOSORT;
    bool known = false, amb = false;
    const eg_prim *p =
        want != NOSORT ? eg__cont_resolve(e, h, sorts, nargs, want, &known, &amb) : NULL;
    bool deferred = false;
    for (uint32_t i = 0; i < nargs; i++) {
        const sx *arg = s->items[i + 1];
        uint32_t expect = p ? eg__cont_arg_sort(e, p, i) : NOSORT;
        const char *ah = eg__sx_head(arg);
        if (expect == NOSORT && ah && eg__cont_prim_name(ah)) {
            deferred = true;
            continue;
        }
        eg__cc_expr(e, c, arg, expect, &a->args[i]);
        sorts[i] = a->args[i]->sort;
    }
    p = eg__cont_resolve(e, h, sorts, nargs, want, &known, &amb);
    /* nothing fixed the sort yet: the deferred arguments may know their own, one by one */
    for (uint32_t i = 0; i < nargs && deferred && !p; i++) {
        if (a->args[i]) continue;
        eg__cc_expr(e, c, s->items[i + 1], NOSORT, &a->args[i]);
        sorts[i] = a->args[i]->sort;
        p = eg__cont_resolve(e, h, sorts, nargs, want, &known, &amb);
    }
    if (deferred && p) {
        for (uint32_t i = 0; i < nargs; i++) {
            if (a->args[i]) continue;
            eg__cc_expr(e, c, s->items[i + 1], eg__cont_arg_sort(e, p, i), &a->args[i]);
            sorts[i] = a->args[i]->sort;
        }
        p = eg__cont_resolve(e, h, sorts, nargs, want, &known, &amb);
    }
    return call_resolved(e, s, a, p, want, amb, false, h);
}

aexpr *eg__cc_expr(eg_engine *e, cc *c, const sx *s, uint32_t want, aexpr **holder)
{
    uint32_t sort;
    eg_value val;
    if (eg__cc_literal(e, s, &sort, &val)) {
        aexpr *a = eg__cc_mk_expr(e, AE_CONST, sort, s);
        a->c = val;
        *holder = a;
        expect_sort(e, s, want, sort);
        return a;
    }
    if (s->kind == SX_SYM) {
        int32_t v = eg__cc_slot(c, s->text);
        if (v >= 0) {
            aexpr *a = eg__cc_mk_expr(e, AE_VAR, c->slot_sort[v], s);
            a->var = (uint32_t)v;
            *holder = a;
            expect_sort(e, s, want, a->sort);
            return a;
        }
        int32_t g = eg__global_find(e, s->text);
        if (g >= 0) {
            aexpr *a = eg__cc_mk_expr(e, AE_GLOBAL, e->globals[g].sort, s);
            a->global = (uint32_t)g;
            *holder = a;
            expect_sort(e, s, want, a->sort);
            return a;
        }
        eg__throw(e, LM_ETYPE, EG_LOC(s),
                  "unbound variable '%s' (not bound by the query, a let, or a global)", s->text);
    }
    int32_t ti;
    eg_table *t = eg__cc_call_head(e, s, "an expression", &ti);
    uint32_t nargs = s->n - 1;
    const char *h = eg__sx_head(s);
    if (t) {
        aexpr *a = eg__cc_mk_expr(e, AE_TABLE, t->has_out ? t->out_sort : SORT_UNIT, s);
        *holder = a;
        a->table = (uint32_t)ti;
        a->args = eg__calloc(e, nargs + 1, sizeof(aexpr *));
        for (uint32_t i = 0; i < nargs; i++) {
            a->nargs = i + 1; /* before the call: a throw inside must still free args[i] */
            eg__cc_expr(e, c, s->items[i + 1], e->tables[ti].in_sort[i], &a->args[i]);
        }
        expect_sort(e, s, want, a->sort);
        return a;
    }
    if (eg__cont_prim_name(h)) return cont_expr(e, c, s, h, nargs, want, holder);
    bool known = false;
    aexpr *a = eg__cc_mk_expr(e, AE_PRIM, NOSORT, s);
    *holder = a;
    a->args = eg__calloc(e, nargs + 1, sizeof(aexpr *));
    uint32_t sorts[EG_MAX_ARGS];
    for (uint32_t i = 0; i < nargs; i++) {
        a->nargs = i + 1;
        eg__cc_expr(e, c, s->items[i + 1], NOSORT, &a->args[i]);
        sorts[i] = a->args[i]->sort;
    }
    const eg_prim *p = eg__prim_resolve(e, h, sorts, nargs, &known);
    if (!p) {
        char buf[256];
        size_t o = 0;
        for (uint32_t i = 0; i < nargs && o < sizeof buf - 40; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? " " : "",
                                  eg__sort_name(e, sorts[i]));
        buf[o] = 0;
        eg__throw(e, LM_ETYPE, EG_LOC(s),
                  "no primitive '%s' takes (%s) (wrong arity or argument sorts)", h, buf);
    }
    a->prim = p;
    a->sort = eg__prim_ret(p, nargs ? sorts[0] : NOSORT);
    expect_sort(e, s, want, a->sort);
    return a;
}

/* ====================================================================================
 * Actions
 * ==================================================================================== */

action *eg__cc_new_action(cc *c, action_kind k, const sx *at)
{
    eg_engine *e = c->e;
    EG_GROW(e, c->acts, c->capacts, c->nacts + 1);
    action *a = &c->acts[c->nacts++];
    memset(a, 0, sizeof *a);
    a->kind = k;
    a->at = at;
    return a;
}

eg_table *eg__cc_table_call(eg_engine *e, const sx *s, int32_t *ti_out)
{
    const char *h = eg__sx_head(s);
    int32_t ti = h ? eg__table_find(e, h) : -1;
    if (ti < 0) {
        eg__throw(e, LM_ETYPE, EG_LOC(s),
                  "expected a call of a function, constructor or relation%s%s%s",
                  h ? " (unknown name '" : "", h ? h : "", h ? "')" : "");
    }
    int32_t ti2;
    eg_table *t = eg__cc_call_head(e, s, "a call", &ti2);
    *ti_out = ti;
    return t;
}

void eg__cc_table_args(eg_engine *e, cc *c, action *a, const sx *call, eg_table *t)
{
    a->args = eg__calloc(e, call->n, sizeof(aexpr *));
    for (uint32_t i = 0; i + 1 < call->n; i++) {
        a->nargs = i + 1;
        eg__cc_expr(e, c, call->items[i + 1], t->in_sort[i], &a->args[i]);
    }
}

void eg__cc_action(eg_engine *e, cc *c, const sx *s)
{
    const char *h = eg__sx_head(s);
    if (!h) {
        eg__throw(e, LM_ETYPE, EG_LOC(s), "expected an action");
    }
    if (strcmp(h, "let") == 0) {
        if (s->n != 3 || s->items[1]->kind != SX_SYM) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "(let name expr) expected");
        }
        const char *name = s->items[1]->text;
        if (eg__cc_slot(c, name) >= 0) {
            eg__throw(e, LM_ETYPE, EG_LOC(s->items[1]),
                      "variable %s is already bound; let cannot rebind it", name);
        }
        eg__cc_check_shadow(e, s->items[1], name);
        action *a = eg__cc_new_action(c, AC_LET, s);
        eg__cc_expr(e, c, s->items[2], NOSORT, &a->a);
        a = &c->acts[c->nacts - 1];
        a->var = eg__cc_add_slot(c, name, a->a->sort);
        return;
    }
    if (strcmp(h, "set") == 0) {
        if (s->n != 3) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "(set (f args...) value) expected");
        }
        int32_t ti;
        eg_table *t = eg__cc_table_call(e, s->items[1], &ti);
        if (t->kind != TK_FUNCTION) {
            eg__throw(e, LM_ETYPE, EG_LOC(s),
                      "cannot set %s: it is a %s; use union (or call it) instead", t->name,
                      t->kind == TK_RELATION ? "relation" : "constructor");
        }
        action *a = eg__cc_new_action(c, AC_SET, s);
        a->table = (uint32_t)ti;
        eg__cc_table_args(e, c, a, s->items[1], t);
        eg__cc_expr(e, c, s->items[2], t->out_sort, &c->acts[c->nacts - 1].b);
        return;
    }
    if (strcmp(h, "delete") == 0 || strcmp(h, "subsume") == 0) {
        if (s->n != 2) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "(%s (f args...)) expected", h);
        }
        int32_t ti;
        eg_table *t = eg__cc_table_call(e, s->items[1], &ti);
        bool sub = h[0] == 's';
        if (sub && t->kind == TK_FUNCTION) {
            eg__throw(e, LM_ETYPE, EG_LOC(s),
                      "cannot subsume %s: only constructors and relations can be subsumed",
                      t->name);
        }
        action *a = eg__cc_new_action(c, sub ? AC_SUBSUME : AC_DELETE, s);
        a->table = (uint32_t)ti;
        eg__cc_table_args(e, c, a, s->items[1], t);
        return;
    }
    if (strcmp(h, "union") == 0) {
        if (s->n != 3) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "(union a b) expected");
        }
        action *a = eg__cc_new_action(c, AC_UNION, s);
        eg__cc_expr(e, c, s->items[1], NOSORT, &a->a);
        a = &c->acts[c->nacts - 1];
        if (!eg__is_eq(e, a->a->sort)) {
            eg__throw(e, LM_ETYPE, EG_LOC(s->items[1]),
                      "cannot union values of sort %s: only user sorts (e-classes) "
                      "can be unioned",
                      eg__sort_name(e, a->a->sort));
        }
        eg__cc_expr(e, c, s->items[2], a->a->sort, &a->b);
        return;
    }
    if (strcmp(h, "panic") == 0) {
        action *a = eg__cc_new_action(c, AC_PANIC, s);
        a->msg =
            eg__strdup(e, s->n > 1 && s->items[1]->kind == SX_STR ? s->items[1]->text : "panic");
        return;
    }
    action *a = eg__cc_new_action(c, AC_EXPR, s);
    eg__cc_expr(e, c, s, NOSORT, &a->a);
}

/* ====================================================================================
 * Queries for check / until, actions at top level
 * ==================================================================================== */

query *eg__compile_facts(eg_engine *e, const sx *const *facts, uint32_t n)
{
    cc *c = eg__cc_new(e);
    eg__cc_facts(e, c, facts, n);
    eg__cc_finish(e, c);
    query *q = eg__calloc(e, 1, sizeof *q);
    *q = c->q;
    memset(&c->q, 0, sizeof c->q);
    eg__cc_done(e);
    return q;
}

action *eg__compile_actions(eg_engine *e, const sx *const *acts, uint32_t n, uint32_t *nacts,
                            uint32_t *nslots)
{
    cc *c = eg__cc_new(e);
    for (uint32_t i = 0; i < n; i++)
        eg__cc_action(e, c, acts[i]);
    action *a = c->acts;
    *nacts = c->nacts;
    *nslots = c->nslots;
    c->acts = NULL;
    c->nacts = 0;
    eg__cc_done(e);
    return a;
}

aexpr *eg__compile_expr(eg_engine *e, const sx *s)
{
    cc *c = eg__cc_new(e);
    eg__cc_expr(e, c, s, NOSORT, &c->tmp_expr);
    aexpr *a = c->tmp_expr;
    c->tmp_expr = NULL;
    eg__cc_done(e);
    return a;
}
