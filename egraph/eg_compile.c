/* eg_compile.c: the type checker and compiler of rule queries (actions: eg_compile_act.c).
 *
 * A query (the left side of a rule, a check, an :until) is flattened into atoms over
 * tables and primitive calls over variables: nested terms get fresh variables, `(= a b)`
 * merges the variables of a and b, literals and globals become constant variables. The
 * checker then infers a sort for every variable (from table columns, literals and the
 * chosen primitive overloads), refuses any variable not grounded by a table atom. Join order
 * is chosen at run time (eg_exec.c). Actions are compiled to expression trees over the
 * query's variables plus the action's own `let` variables.
 *
 * Errors are raised with eg__throw; everything being built lives in the compile scratch
 * (e->cc), which the command boundary frees if the command fails. */
#include "eg_compile.h"

#include <stdlib.h>
#include <string.h>

static void cc_free(cc *c)
{
    if (!c) return;
    eg__query_free(&c->q);
    eg__free(c->alias);
    eg__free(c->var_at);
    eg__actions_free(c->acts, c->nacts);
    for (uint32_t i = 0; i < c->nslots; i++)
        eg__free(c->slot_name[i]);
    eg__free(c->slot_name);
    eg__free(c->slot_sort);
    eg__aexpr_free(c->tmp_expr);
    for (uint32_t i = 0; i < c->nan; i++)
        eg__free(c->an[i]);
    eg__free(c->an);
    eg__free(c->av);
    eg__free(c->root_name);
    eg__free(c->relv_var);
    eg__free(c->relv_atom);
    eg__free(c->fin_done);
    eg__free(c->fin_src);
    eg__free(c->fin_grounded);
    eg__free(c->fin_map);
    if (c->fin_name)
        for (uint32_t i = 0; i < c->fin_n; i++)
            eg__free(c->fin_name[i]);
    eg__free(c->fin_name);
    eg__free(c->fin_sort);
    eg__free(c->fin_const);
    eg__free(c->fin_cval);
    eg__free(c->fin_glob);
    eg__free(c);
}

cc *eg__cc_new(eg_engine *e)
{
    cc *c = eg__calloc(e, 1, sizeof *c);
    c->e = e;
    e->cc = c;
    return c;
}

void eg__cc_done(eg_engine *e)
{
    cc_free(e->cc);
    e->cc = NULL;
}

void eg__cc_abort(eg_engine *e)
{
    eg__cc_done(e);
}

void eg__query_free(query *q)
{
    for (uint32_t i = 0; i < q->nvars; i++)
        eg__free(q->var_name ? q->var_name[i] : NULL);
    eg__free(q->var_name);
    eg__free(q->var_sort);
    eg__free(q->is_const);
    eg__free(q->const_val);
    eg__free(q->const_global);
    for (uint32_t i = 0; i < q->natoms; i++)
        eg__free(q->atoms[i].var);
    eg__free(q->atoms);
    for (uint32_t i = 0; i < q->nprims; i++)
        eg__free(q->prims[i].args);
    eg__free(q->prims);
    memset(q, 0, sizeof *q);
}

void eg__aexpr_free(aexpr *a)
{
    if (!a) return;
    for (uint32_t i = 0; i < a->nargs; i++)
        eg__aexpr_free(a->args[i]);
    eg__free(a->args);
    eg__free(a);
}

void eg__actions_free(action *acts, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        action *a = &acts[i];
        for (uint32_t k = 0; k < a->nargs; k++)
            eg__aexpr_free(a->args[k]);
        eg__free(a->args);
        eg__aexpr_free(a->a);
        eg__aexpr_free(a->b);
        eg__free(a->msg);
    }
    eg__free(acts);
}

const char *eg__sort_name(eg_engine *e, uint32_t s)
{
    return s == NOSORT ? "?" : e->sorts[s].name;
}

/* ====================================================================================
 * Query variables
 * ==================================================================================== */

/* egglog's one namespace: a rule's variable (bound by its query or by let) may not be
 * named like a sort, a table or a ruleset, nor like a global, with or without the global's
 * `$` (`a` and `$a` both clash with the global `$a`); egglog's check_shadowing,
 * fail-typecheck/shadow-local-constructor and shadow-local-global-no-prefix. A rule's
 * names are its own: a global declared after the rule may reuse them
 * (pass-typecheck/shadow-local-before-global). */
void eg__cc_check_shadow(eg_engine *e, const sx *at, const char *name)
{
    int32_t ti = eg__table_find(e, name);
    int32_t si = eg__sort_find(e, name);
    /* built-in sorts (i64, String, ...) are not declared names: egglog allows them */
    const char *what = si >= SORT_NBUILTIN ? "sort"
                       : ti >= 0           ? (e->tables[ti].kind == TK_FUNCTION   ? "function"
                                              : e->tables[ti].kind == TK_RELATION ? "relation"
                                                                                  : "constructor")
                       : eg__ruleset_find(e, name) >= 0 ? "ruleset"
                       : eg__global_find(e, name) >= 0  ? "global"
                                                        : NULL;
    if (what)
        eg__throw(e, LM_ETYPE, EG_LOC(at), "variable %s shadows the %s %s; give it another name",
                  name, what, name);
    const char *bare = name[0] == '$' ? name + 1 : name;
    char dollar[256];
    if (strlen(bare) + 2 <= sizeof dollar) {
        snprintf(dollar, sizeof dollar, "$%s", bare);
        if (strcmp(dollar, name) != 0 && eg__global_find(e, dollar) >= 0)
            eg__throw(e, LM_ETYPE, EG_LOC(at),
                      "variable %s conflicts with the global %s; give it another name", name,
                      dollar);
    }
}

static uint32_t new_var(cc *c, const char *name, uint32_t sort, const sx *at)
{
    eg_engine *e = c->e;
    query *q = &c->q;
    if (q->nvars + 1 > c->capvars) {
        uint32_t n = c->capvars ? c->capvars * 2 : 16;
        q->var_name = eg__array(e, q->var_name, n, sizeof(char *));
        q->var_sort = eg__array(e, q->var_sort, n, sizeof(uint32_t));
        q->is_const = eg__array(e, q->is_const, n, sizeof(bool));
        q->const_val = eg__array(e, q->const_val, n, sizeof(eg_value));
        q->const_global = eg__array(e, q->const_global, n, sizeof(int32_t));
        c->alias = eg__array(e, c->alias, n, sizeof(uint32_t));
        c->var_at = eg__array(e, c->var_at, n, sizeof(sx *));
        c->capvars = n;
    }
    uint32_t v = q->nvars;
    q->var_name[v] = NULL;
    q->var_name[v] = name ? eg__strdup(e, name) : NULL; /* counted once it is set */
    q->nvars++;
    q->var_sort[v] = sort;
    q->is_const[v] = false;
    q->const_val[v] = 0;
    q->const_global[v] = -1;
    c->alias[v] = v;
    c->var_at[v] = at;
    return v;
}

uint32_t eg__cc_vfind(cc *c, uint32_t v)
{
    while (c->alias[v] != v)
        v = c->alias[v] = c->alias[c->alias[v]];
    return v;
}

static void set_sort(eg_engine *e, cc *c, uint32_t v, uint32_t sort, const sx *at)
{
    v = eg__cc_vfind(c, v);
    uint32_t *s = &c->q.var_sort[v];
    if (*s == NOSORT)
        *s = sort;
    else if (sort != NOSORT && *s != sort) {
        if (c->q.var_name[v])
            eg__throw(e, LM_ETYPE, EG_LOC(at),
                      "type mismatch: variable %s has sort %s here but %s elsewhere",
                      c->q.var_name[v], eg__sort_name(e, sort), eg__sort_name(e, *s));
        eg__throw(e, LM_ETYPE, EG_LOC(at), "type mismatch: expected %s, got %s",
                  eg__sort_name(e, *s), eg__sort_name(e, sort));
    }
}

static void unify(eg_engine *e, cc *c, uint32_t a, uint32_t b, const sx *at)
{
    a = eg__cc_vfind(c, a);
    b = eg__cc_vfind(c, b);
    if (a == b) return;
    query *q = &c->q;
    set_sort(e, c, a, q->var_sort[b], at);
    if (a > b) {
        uint32_t t = a;
        a = b;
        b = t;
    }
    /* keep a, merge b into it */
    if (q->is_const[a] && q->is_const[b] &&
        (q->const_global[a] >= 0 || q->const_global[b] >= 0 ||
         q->const_val[a] != q->const_val[b])) {
        if (q->const_global[a] < 0 && q->const_global[b] < 0) {
            q->never = true; /* two different literals */
        } else {
            /* compared at run time, when the globals' canonical values are known */
            EG_GROW(e, q->prims, c->capprims, q->nprims + 1);
            q_prim *p = &q->prims[q->nprims];
            memset(p, 0, sizeof *p);
            p->args = eg__calloc(e, 3, sizeof(uint32_t));
            q->nprims++;
            p->prim = eg__prim_eq();
            p->args[0] = a;
            p->args[1] = b;
            p->nargs = 2;
            p->at = at;
            p->res = new_var(c, NULL, SORT_UNIT, at);
        }
        return;
    }
    if (q->is_const[b] && !q->is_const[a]) {
        q->is_const[a] = true;
        q->const_val[a] = q->const_val[b];
        q->const_global[a] = q->const_global[b];
    }
    if (!q->var_name[a] && q->var_name[b]) {
        q->var_name[a] = q->var_name[b];
        q->var_name[b] = NULL;
    } else if (q->var_name[b]) {
        if (c->nan + 1 > c->capan) { /* both arrays grow before either is used */
            uint32_t nc = c->capan ? c->capan * 2 : 8;
            c->an = eg__array(e, c->an, nc, sizeof(char *));
            c->av = eg__array(e, c->av, nc, sizeof(uint32_t));
            c->capan = nc;
        }
        c->an[c->nan] = eg__strdup(e, q->var_name[b]);
        c->av[c->nan++] = b;
    }
    c->alias[b] = a;
}

static int32_t var_by_name(cc *c, const char *name)
{
    for (uint32_t v = 0; v < c->q.nvars; v++)
        if (c->q.var_name[v] && strcmp(c->q.var_name[v], name) == 0) return (int32_t)v;
    for (uint32_t i = 0; i < c->nan; i++)
        if (strcmp(c->an[i], name) == 0) return (int32_t)c->av[i];
    return -1;
}

static uint32_t const_var(cc *c, uint32_t sort, eg_value val, const sx *at)
{
    uint32_t v = new_var(c, NULL, sort, at);
    c->q.is_const[v] = true;
    c->q.const_val[v] = val;
    return v;
}

bool eg__cc_literal(eg_engine *e, const sx *s, uint32_t *sort, eg_value *val)
{
    switch (s->kind) {
    case SX_INT:
        *sort = SORT_I64;
        *val = (eg_value)s->i;
        return true;
    case SX_FLOAT: {
        double d = s->f;
        if (d == 0) d = 0.0;
        memcpy(val, &d, sizeof d);
        *sort = SORT_F64;
        return true;
    }
    case SX_STR:
        *sort = SORT_STRING;
        *val = eg__intern(e, s->text, strlen(s->text));
        return true;
    case SX_SYM:
        if (strcmp(s->text, "true") == 0 || strcmp(s->text, "false") == 0) {
            *sort = SORT_BOOL;
            *val = s->text[0] == 't';
            return true;
        }
        return false;
    case SX_LIST:
        if (s->n == 0) {
            *sort = SORT_UNIT;
            *val = 0;
            return true;
        }
        return false;
    }
    return false;
}

/* ====================================================================================
 * Query terms and facts
 * ==================================================================================== */

static uint32_t add_atom(cc *c, uint32_t table, uint32_t ncols)
{
    eg_engine *e = c->e;
    query *q = &c->q;
    EG_GROW(e, q->atoms, c->capatoms, q->natoms + 1);
    q_atom *a = &q->atoms[q->natoms];
    a->var = eg__calloc(e, ncols + 1, sizeof(uint32_t));
    a->table = table;
    a->ncols = ncols;
    return q->natoms++;
}

/* The head of a call (name args...) in a query or an expression, resolved once for both:
 * the table it names (with its arity checked), or NULL for a known primitive; an unknown
 * name, a form that is not a call and too many arguments are refused here. */
eg_table *eg__cc_call_head(eg_engine *e, const sx *s, const char *what, int32_t *ti_out)
{
    const char *h = eg__sx_head(s);
    if (!h) eg__throw(e, LM_ETYPE, EG_LOC(s), "expected %s", what);
    uint32_t nargs = s->n - 1;
    if (nargs > EG_MAX_ARGS)
        eg__throw(e, LM_ELIMIT, EG_LOC(s), "too many arguments (%u; at most %d)", nargs,
                  EG_MAX_ARGS);
    int32_t ti = eg__table_find(e, h);
    *ti_out = ti;
    if (ti >= 0) {
        eg_table *t = &e->tables[ti];
        if (t->n_in != nargs)
            eg__throw(e, LM_ETYPE, EG_LOC(s), "wrong number of arguments: %s takes %u, got %u",
                      t->name, t->n_in, nargs);
        return t;
    }
    bool known = false;
    uint32_t dummy[1];
    eg__prim_resolve(e, h, dummy, 0, &known);
    if (!known) eg__throw(e, LM_ETYPE, EG_LOC(s), "unknown function or primitive '%s'", h);
    return NULL;
}

static uint32_t q_call(eg_engine *e, cc *c, const sx *s, bool as_fact)
{
    int32_t ti;
    eg_table *t = eg__cc_call_head(e, s, "a call (name args...) in a query", &ti);
    uint32_t nargs = s->n - 1;
    if (t) {
        uint32_t argv[EG_MAX_ARGS];
        for (uint32_t i = 0; i < nargs; i++) {
            argv[i] = eg__cc_term(e, c, s->items[i + 1]);
            set_sort(e, c, argv[i], t->in_sort[i], s->items[i + 1]);
        }
        uint32_t out = NOSORT;
        if (t->has_out) {
            out = new_var(c, NULL, t->out_sort, s);
        }
        uint32_t ai = add_atom(c, (uint32_t)ti, t->ncols);
        for (uint32_t i = 0; i < nargs; i++)
            c->q.atoms[ai].var[i] = argv[i];
        if (t->has_out) c->q.atoms[ai].var[nargs] = out;
        if (!t->has_out) {
            if (as_fact) return NOSORT;
            return const_var(c, SORT_UNIT, 0, s);
        }
        return out;
    }
    /* primitive */
    query *q = &c->q;
    EG_GROW(e, q->prims, c->capprims, q->nprims + 1);
    q_prim *p = &q->prims[q->nprims];
    memset(p, 0, sizeof *p);
    p->args = eg__calloc(e, nargs + 1, sizeof(uint32_t));
    q->nprims++;
    p->nargs = nargs;
    p->res = NOSORT;
    uint32_t pi = q->nprims - 1;
    for (uint32_t i = 0; i < nargs; i++) {
        uint32_t v = eg__cc_term(e, c, s->items[i + 1]);
        q->prims[pi].args[i] = v;
    }
    uint32_t res = new_var(c, NULL, NOSORT, s);
    q->prims[pi].res = res;
    q->prims[pi].at = s; /* resolved in eg__cc_finish */
    return res;
}

uint32_t eg__cc_term(eg_engine *e, cc *c, const sx *s)
{
    uint32_t sort;
    eg_value val;
    if (eg__cc_literal(e, s, &sort, &val)) return const_var(c, sort, val, s);
    if (s->kind == SX_SYM) {
        if (strcmp(s->text, "_") == 0) return new_var(c, NULL, NOSORT, s);
        int32_t v = var_by_name(c, s->text);
        if (v >= 0) return eg__cc_vfind(c, (uint32_t)v);
        int32_t g = eg__global_find(e, s->text);
        if (g >= 0) {
            uint32_t cv = const_var(c, e->globals[g].sort, 0, s);
            c->q.const_global[cv] = g;
            return cv;
        }
        int32_t ti = eg__table_find(e, s->text);
        if (ti >= 0 && e->tables[ti].n_in == 0) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "'%s' is a table: write (%s) to use its value",
                      s->text, s->text);
        }
        eg__cc_check_shadow(e, s, s->text);
        return new_var(c, s->text, NOSORT, s);
    }
    if (s->kind == SX_LIST) return q_call(e, c, s, false);
    eg__throw(e, LM_ETYPE, EG_LOC(s), "unexpected term in a query");
}

/* The relation atom a variable was equated with, or UINT32_MAX. */
static uint32_t relv_find(cc *c, uint32_t v)
{
    v = eg__cc_vfind(c, v);
    for (uint32_t i = 0; i < c->nrelv; i++)
        if (eg__cc_vfind(c, c->relv_var[i]) == v) return c->relv_atom[i];
    return UINT32_MAX;
}

static void relv_add(cc *c, uint32_t v, uint32_t atom)
{
    if (relv_find(c, v) != UINT32_MAX) return;
    if (c->nrelv + 1 > c->caprelv) { /* both arrays grow before either is used */
        uint32_t n = c->caprelv ? c->caprelv * 2 : 8;
        c->relv_var = eg__array(c->e, c->relv_var, n, sizeof(uint32_t));
        c->relv_atom = eg__array(c->e, c->relv_atom, n, sizeof(uint32_t));
        c->caprelv = n;
    }
    c->relv_var[c->nrelv] = v;
    c->relv_atom[c->nrelv++] = atom;
}

/* Two relation rows are one value when they are one row: the same relation with equal
 * arguments (egglog's relations are constructors of a sort of their own, which cannot be
 * unioned). Another relation never matches. */
static void rel_unify(eg_engine *e, cc *c, uint32_t a1, uint32_t a2, const sx *at)
{
    const q_atom *x = &c->q.atoms[a1], *y = &c->q.atoms[a2];
    if (x->table != y->table) {
        c->q.never = true;
        return;
    }
    uint32_t n = e->tables[x->table].n_in;
    for (uint32_t k = 0; k < n; k++)
        unify(e, c, c->q.atoms[a1].var[k], c->q.atoms[a2].var[k], at);
}

static void q_fact(eg_engine *e, cc *c, const sx *f)
{
    const char *h = eg__sx_head(f);
    if (!h) {
        eg__throw(e, LM_ETYPE, EG_LOC(f), "a fact must be a call or (= a b)");
    }
    if (strcmp(h, "=") == 0) {
        if (f->n < 3) {
            eg__throw(e, LM_ETYPE, EG_LOC(f), "(= a b) needs at least two terms");
        }
        uint32_t a = NOSORT, rel = UINT32_MAX;
        for (uint32_t i = 1; i < f->n; i++) {
            uint32_t before = c->q.natoms;
            uint32_t b = eg__cc_term(e, c, f->items[i]);
            uint32_t ra = UINT32_MAX;
            const char *ih = eg__sx_head(f->items[i]);
            int32_t ti = ih ? eg__table_find(e, ih) : -1;
            if (ti >= 0 && e->tables[ti].kind == TK_RELATION && c->q.natoms > before)
                ra = c->q.natoms - 1; /* q_call adds the relation's atom last */
            else
                ra = relv_find(c, b);
            if (ra != UINT32_MAX) {
                if (rel == UINT32_MAX)
                    rel = ra;
                else
                    rel_unify(e, c, rel, ra, f);
            }
            if (i == 1)
                a = b;
            else
                unify(e, c, a, b, f);
        }
        if (rel != UINT32_MAX)
            for (uint32_t i = 1; i < f->n; i++)
                if (f->items[i]->kind == SX_SYM) relv_add(c, eg__cc_term(e, c, f->items[i]), rel);
        return;
    }
    q_call(e, c, f, true);
}

/* Resolves primitive overloads, checks sorts and grounding, compacts variables. */
void eg__cc_finish(eg_engine *e, cc *c)
{
    query *q = &c->q;
    /* resolve primitives to a fixpoint on known argument sorts */
    bool progress = true;
    uint32_t unresolved = q->nprims;
    bool *done = c->fin_done = eg__calloc(e, q->nprims + 1, sizeof(bool));
    const sx **src = c->fin_src = eg__calloc(e, q->nprims + 1, sizeof(sx *));
    for (uint32_t i = 0; i < q->nprims; i++)
        src[i] = q->prims[i].at;
    while (progress && unresolved) {
        progress = false;
        for (uint32_t i = 0; i < q->nprims; i++) {
            if (done[i]) continue;
            q_prim *p = &q->prims[i];
            if (p->prim) { /* internal, already resolved */
                set_sort(e, c, p->res,
                         eg__prim_ret(p->prim, q->var_sort[eg__cc_vfind(c, p->args[0])]), src[i]);
                done[i] = true;
                unresolved--;
                progress = true;
                continue;
            }
            uint32_t sorts[EG_MAX_ARGS];
            bool all = true;
            for (uint32_t a = 0; a < p->nargs; a++) {
                sorts[a] = q->var_sort[eg__cc_vfind(c, p->args[a])];
                if (sorts[a] == NOSORT) all = false;
            }
            if (strcmp(src[i]->items[0]->text, "unstable-fn") == 0) {
                /* its target's name is a string literal; the function sort from the
                 * result's sort or the target's signature */
                uint32_t a0 = p->nargs ? eg__cc_vfind(c, p->args[0]) : 0;
                if (!p->nargs || !q->is_const[a0] || q->const_global[a0] >= 0 ||
                    q->var_sort[a0] != SORT_STRING)
                    eg__throw(e, LM_ETYPE, EG_LOC(src[i]),
                              "(unstable-fn \"name\" partial-arguments...) expected");
                const char *nm = eg__str(e, (uint32_t)q->const_val[a0]);
                uint32_t want_ps[EG_MAX_ARGS];
                bool amb;
                const eg_prim *pr =
                    eg__fn_resolve(e, nm, sorts + 1, p->nargs - 1,
                                   q->var_sort[eg__cc_vfind(c, p->res)], want_ps, &amb);
                if (!pr) {
                    if (amb) continue;
                    eg__throw(e, LM_ETYPE, EG_LOC(src[i]),
                              "unstable-fn \"%s\": no function sort (UnstableFn) fits this "
                              "target with these partial arguments",
                              nm);
                }
                for (uint32_t a = 1; a < p->nargs; a++)
                    set_sort(e, c, p->args[a], want_ps[a - 1], src[i]);
                if (!all) { /* partial sorts were open: register now that they are known */
                    for (uint32_t a = 1; a < p->nargs; a++)
                        sorts[a] = want_ps[a - 1];
                    eg__fn_resolve(e, nm, sorts + 1, p->nargs - 1, eg__cont_ret(e, pr), want_ps,
                                   &amb);
                }
                p->prim = pr;
                set_sort(e, c, p->res, eg__cont_ret(e, pr), src[i]);
                done[i] = true;
                unresolved--;
                progress = true;
                continue;
            }
            if (eg__cont_prim_name(src[i]->items[0]->text)) {
                /* a container primitive: its sort from the known argument and result
                 * sorts; it gives the others theirs (vec-empty's from its use) */
                bool known, amb;
                const eg_prim *pr =
                    eg__cont_resolve(e, src[i]->items[0]->text, sorts, p->nargs,
                                     q->var_sort[eg__cc_vfind(c, p->res)], &known, &amb);
                if (!pr) {
                    if (amb) continue; /* maybe later */
                    eg__throw(e, LM_ETYPE, EG_LOC(src[i]),
                              "no primitive '%s' takes these arguments (wrong arity or argument "
                              "sorts, or no container sort declared for them)",
                              src[i]->items[0]->text);
                }
                p->prim = pr;
                for (uint32_t a = 0; a < p->nargs; a++)
                    set_sort(e, c, p->args[a], eg__cont_arg_sort(e, pr, a), src[i]);
                set_sort(e, c, p->res, eg__cont_ret(e, pr), src[i]);
                done[i] = true;
                unresolved--;
                progress = true;
                continue;
            }
            if (!all) continue;
            bool known;
            const eg_prim *pr =
                eg__prim_resolve(e, src[i]->items[0]->text, sorts, p->nargs, &known);
            if (!pr) {
                char buf[256];
                size_t o = 0;
                for (uint32_t a = 0; a < p->nargs && o < sizeof buf - 40; a++)
                    o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", a ? " " : "",
                                          eg__sort_name(e, sorts[a]));
                buf[o] = 0;
                const sx *at = src[i];
                eg__throw(e, LM_ETYPE, EG_LOC(at),
                          "no primitive '%s' takes (%s) (wrong arity or argument sorts)",
                          at->items[0]->text, buf);
            }
            p->prim = pr;
            set_sort(e, c, p->res, eg__prim_ret(pr, p->nargs ? sorts[0] : NOSORT), src[i]);
            done[i] = true;
            unresolved--;
            progress = true;
        }
    }
    if (unresolved) {
        const sx *at = NULL;
        for (uint32_t i = 0; i < q->nprims; i++)
            if (!done[i]) {
                at = src[i];
                break;
            }
        eg__throw(e, LM_ETYPE, EG_LOC(at),
                  "cannot infer the sorts of this primitive call: its variables are not bound by "
                  "any table atom (ungrounded)");
    }
    /* grounding: const, in an atom, or result of a prim over grounded args */
    uint32_t nv = q->nvars;
    bool *gr = c->fin_grounded = eg__calloc(e, nv + 1, sizeof(bool));
    for (uint32_t v = 0; v < nv; v++)
        if (q->is_const[eg__cc_vfind(c, v)]) gr[eg__cc_vfind(c, v)] = true;
    for (uint32_t a = 0; a < q->natoms; a++)
        for (uint32_t k = 0; k < q->atoms[a].ncols; k++)
            gr[eg__cc_vfind(c, q->atoms[a].var[k])] = true;
    progress = true;
    while (progress) {
        progress = false;
        for (uint32_t i = 0; i < q->nprims; i++) {
            q_prim *p = &q->prims[i];
            uint32_t r = eg__cc_vfind(c, p->res);
            if (gr[r]) continue;
            bool all = true;
            for (uint32_t a = 0; a < p->nargs; a++)
                if (!gr[eg__cc_vfind(c, p->args[a])]) all = false;
            if (all) {
                gr[r] = true;
                progress = true;
            }
        }
    }
    for (uint32_t v = 0; v < nv; v++) {
        uint32_t r = eg__cc_vfind(c, v);
        if (!gr[r]) {
            const char *nm =
                q->var_name[r] ? q->var_name[r] : (q->var_name[v] ? q->var_name[v] : NULL);
            const sx *at = c->var_at[v];
            if (nm)
                eg__throw(e, LM_ETYPE, EG_LOC(at),
                          "variable %s is ungrounded: it must appear as an argument or result of a "
                          "table in the query",
                          nm);
            eg__throw(e, LM_ETYPE, EG_LOC(at),
                      "ungrounded term: it must be bound by a table in the query");
        }
        if (q->var_sort[r] == NOSORT) {
            eg__throw(e, LM_ETYPE, EG_LOC(c->var_at[v]), "cannot infer the sort of variable %s",
                      q->var_name[r] ? q->var_name[r] : "_");
        }
    }
    eg__free(c->fin_done);
    eg__free(c->fin_src);
    eg__free(c->fin_grounded);
    c->fin_done = NULL;
    c->fin_src = NULL;
    c->fin_grounded = NULL;
    /* compact: representatives in increasing order get dense new ids (the new arrays are
     * built in the scratch, so a failed allocation part-way frees them) */
    uint32_t *map = c->fin_map = eg__array(e, NULL, nv + 1, sizeof(uint32_t));
    uint32_t n = 0;
    for (uint32_t v = 0; v < nv; v++)
        if (eg__cc_vfind(c, v) == v) map[v] = n++;
    for (uint32_t v = 0; v < nv; v++)
        map[v] = map[eg__cc_vfind(c, v)];
    char **nn = c->fin_name = eg__calloc(e, n + 1, sizeof(char *));
    c->fin_n = n;
    uint32_t *ns = c->fin_sort = eg__calloc(e, n + 1, sizeof(uint32_t));
    bool *nc = c->fin_const = eg__calloc(e, n + 1, sizeof(bool));
    eg_value *ncv = c->fin_cval = eg__calloc(e, n + 1, sizeof(eg_value));
    int32_t *ng = c->fin_glob = eg__calloc(e, n + 1, sizeof(int32_t));
    for (uint32_t v = 0; v < nv; v++) {
        uint32_t r = eg__cc_vfind(c, v);
        if (r != v) {
            /* a merged variable's name stays visible as an alias name */
            continue;
        }
        uint32_t m = map[v];
        nn[m] = q->var_name[v];
        q->var_name[v] = NULL;
        ns[m] = q->var_sort[v];
        nc[m] = q->is_const[v];
        ncv[m] = q->const_val[v];
        ng[m] = q->const_global[v];
    }
    /* names of merged variables: keep them reachable through slot names */
    c->slot_name = eg__calloc(e, n + 8, sizeof(char *));
    c->slot_sort = eg__calloc(e, n + 8, sizeof(uint32_t));
    c->capslots = n + 8;
    c->nslots = n; /* the names are NULL until set */
    for (uint32_t v = 0; v < n; v++) {
        c->slot_name[v] = nn[v] ? eg__strdup(e, nn[v]) : NULL;
        c->slot_sort[v] = ns[v];
    }
    for (uint32_t v = 0; v < nv; v++)
        eg__free(q->var_name[v]);
    eg__free(q->var_name);
    eg__free(q->var_sort);
    eg__free(q->is_const);
    eg__free(q->const_val);
    eg__free(q->const_global);
    q->var_name = nn;
    q->var_sort = ns;
    q->is_const = nc;
    q->const_val = ncv;
    q->const_global = ng;
    q->nvars = n;
    c->fin_name = NULL; /* now the query's */
    c->fin_sort = NULL;
    c->fin_const = NULL;
    c->fin_cval = NULL;
    c->fin_glob = NULL;
    c->capvars = n;
    for (uint32_t a = 0; a < q->natoms; a++)
        for (uint32_t k = 0; k < q->atoms[a].ncols; k++)
            q->atoms[a].var[k] = map[q->atoms[a].var[k]];
    for (uint32_t i = 0; i < q->nprims; i++) {
        for (uint32_t a = 0; a < q->prims[i].nargs; a++)
            q->prims[i].args[a] = map[q->prims[i].args[a]];
        q->prims[i].res = map[q->prims[i].res];
    }
    for (uint32_t i = 0; i < c->nan; i++)
        c->av[i] = map[c->av[i]];
    eg__free(map);
    c->fin_map = NULL;
    for (uint32_t v = 0; v < n; v++)
        c->alias[v] = v;
}

/* Variables that appear in the facts but were merged into another keep their names
 * only through the representative: look names up through this helper. */
void eg__cc_facts(eg_engine *e, cc *c, const sx *const *facts, uint32_t nfacts)
{
    for (uint32_t i = 0; i < nfacts; i++)
        q_fact(e, c, facts[i]);
}
