/* eg_decl.c: declarations (sorts, datatypes, constructors, functions, relations,
 * rulesets) and rules (rule, rewrite, birewrite), compiled with eg_compile.c's query and
 * action compilers. Errors are raised with eg__throw; the compile scratch is freed by the
 * command boundary if a declaration fails. */
#include "eg_compile.h"

#include <string.h>

/* ====================================================================================
 * Declarations
 * ==================================================================================== */

static uint32_t sort_of(eg_engine *e, const sx *s)
{
    if (s->kind != SX_SYM) {
        eg__throw(e, LM_ETYPE, EG_LOC(s), "expected a sort name");
    }
    int32_t i = eg__sort_find(e, s->text);
    if (i < 0) {
        eg__throw(e, LM_ETYPE, EG_LOC(s), "unknown sort '%s'", s->text);
    }
    return (uint32_t)i;
}

static void check_fresh_name(eg_engine *e, const sx *at, const char *name)
{
    if (eg__table_find(e, name) >= 0 || eg__sort_find(e, name) >= 0) {
        eg__throw(e, LM_ETYPE, EG_LOC(at), "'%s' is already defined", name);
    }
}

static uint32_t add_sort(eg_engine *e, const sx *at, const char *name)
{
    check_fresh_name(e, at, name);
    EG_GROW(e, e->sorts, e->capsorts, e->nsorts + 1);
    eg_sort *s = &e->sorts[e->nsorts];
    memset(s, 0, sizeof *s);
    s->name = eg__strdup(e, name);
    s->kind = SK_EQ;
    s->canon = true;
    return e->nsorts++;
}

static eg_table *add_table(eg_engine *e, const sx *at, const char *name, table_kind k,
                           const sx *const *in, uint32_t n_in, uint32_t out)
{
    check_fresh_name(e, at, name);
    if (n_in > EG_MAX_ARGS)
        eg__throw(e, LM_ELIMIT, EG_LOC(at), "'%s' has %u input columns; at most %d are supported", name,
                  n_in, EG_MAX_ARGS);
    for (uint32_t i = 0; i < n_in; i++) /* every sort is checked before anything is made */
        sort_of(e, in[i]);
    EG_GROW(e, e->tables, e->captables, e->ntables + 1);
    eg_table *t = &e->tables[e->ntables];
    memset(t, 0, sizeof *t);
    eg__table_init(t);
    t->id = e->ntables++; /* counted now: what follows is freed with the engine if it fails */
    t->name = eg__strdup(e, name);
    t->in_sort = eg__calloc(e, n_in + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < n_in; i++)
        t->in_sort[i] = (uint32_t)eg__sort_find(e, in[i]->text);
    t->hi = UINT32_MAX;
    t->kind = k;
    t->n_in = n_in;
    t->has_out = k != TK_RELATION && out != SORT_UNIT;
    t->out_sort = k == TK_RELATION ? SORT_UNIT : out;
    t->ncols = n_in + (t->has_out ? 1 : 0);
    t->merge = k == TK_CONSTRUCTOR ? MG_UNION : MG_NONE;
    t->cost = 1;
    for (uint32_t i = 0; i < n_in; i++)
        if (eg__needs_canon(e, t->in_sort[i])) t->has_eq = true;
    if (t->has_out && eg__needs_canon(e, t->out_sort)) t->has_eq = true;
    return t;
}

static uint32_t list_len(eg_engine *e, const sx *s, const char *what)
{
    if (s->kind != SX_LIST) {
        eg__throw(e, LM_ETYPE, EG_LOC(s), "expected a list of %s", what);
    }
    return s->n;
}

/* (Name sorts... [:cost N] [:unextractable] [:internal-hidden]) as a constructor of sort */
static void variant(eg_engine *e, const sx *v, uint32_t sort)
{
    if (v->kind != SX_LIST || v->n < 1 || v->items[0]->kind != SX_SYM) {
        eg__throw(e, LM_ETYPE, EG_LOC(v), "expected a constructor (Name sorts...)");
    }
    uint32_t n = 1;
    while (n < v->n && !(v->items[n]->kind == SX_SYM && v->items[n]->text[0] == ':'))
        n++;
    eg_table *t = add_table(e, v, v->items[0]->text, TK_CONSTRUCTOR,
                            (const sx *const *)v->items + 1, n - 1, sort);
    for (uint32_t i = n; i < v->n; i++) {
        if (eg__sx_is(v->items[i], ":cost") && i + 1 < v->n && v->items[i + 1]->kind == SX_INT) {
            t->cost = (uint64_t)v->items[++i]->i;
        } else if (eg__sx_is(v->items[i], ":unextractable")) {
            t->unextractable = true;
        } else if (eg__sx_is(v->items[i], ":internal-hidden")) {
            t->hidden = true;
        }
    }
}

static void decl_function(eg_engine *e, const sx *s, table_kind k)
{
    /* (constructor name (sorts) out opts...) (function name (sorts) out opts...) */
    if (s->n < 4 || s->items[1]->kind != SX_SYM) {
        eg__throw(e, LM_ETYPE, EG_LOC(s), "(%s name (input sorts...) output-sort ...) expected",
                  eg__sx_head(s));
    }
    list_len(e, s->items[2], "input sorts");
    uint32_t out = sort_of(e, s->items[3]);
    if (k == TK_CONSTRUCTOR && !eg__is_eq(e, out)) {
        eg__throw(e, LM_ETYPE, EG_LOC(s->items[3]),
                  "constructor %s must return a user sort (declared with sort or datatype), not %s",
                  s->items[1]->text, e->sorts[out].name);
    }
    eg_table *t = add_table(e, s, s->items[1]->text, k, (const sx *const *)s->items[2]->items,
                            s->items[2]->n, out);
    uint32_t ti = t->id;
    if (k == TK_FUNCTION) {
        uint32_t nmerge = 0;
        for (uint32_t i = 4; i < s->n; i++)
            if (eg__sx_is(s->items[i], ":merge") || eg__sx_is(s->items[i], ":no-merge")) {
                if (++nmerge > 1) {
                    eg__throw(e, LM_ETYPE, EG_LOC(s->items[i]),
                              "function %s says how values merge more than once: keep one "
                              ":merge or :no-merge",
                              t->name);
                }
            }
        if (nmerge == 0) {
            eg__throw(e, LM_ETYPE, EG_LOC(s),
                      "function %s must say how values merge: add :merge (e.g. (min old new)) or "
                      ":no-merge",
                      t->name);
        }
        t->merge = MG_NONE;
    }
    for (uint32_t i = 4; i < s->n; i++) {
        const sx *o = s->items[i];
        if (eg__sx_is(o, ":cost") && i + 1 < s->n && s->items[i + 1]->kind == SX_INT) {
            e->tables[ti].cost = (uint64_t)s->items[++i]->i;
        } else if (eg__sx_is(o, ":no-merge")) {
            e->tables[ti].merge = MG_NONE;
        } else if (eg__sx_is(o, ":merge") && i + 1 < s->n) {
            const sx *m = s->items[++i];
            cc *c = eg__cc_new(e);
            eg__cc_add_slot(c, "old", out);
            eg__cc_add_slot(c, "new", out);
            aexpr *ex = NULL;
            eg__cc_expr(e, c, m, out, &c->tmp_expr);
            ex = c->tmp_expr;
            c->tmp_expr = NULL;
            eg__cc_done(e);
            e->tables[ti].merge = MG_EXPR;
            e->tables[ti].merge_expr = ex;
            e->tables[ti].merge_nvars = 2;
        } else if (eg__sx_is(o, ":unextractable")) {
            e->tables[ti].unextractable = true;
        } else if (eg__sx_is(o, ":internal-hidden")) {
            e->tables[ti].hidden = true;
        } else if (o->kind == SX_SYM && strncmp(o->text, ":internal-", 10) == 0) {
            /* egglog's internal flags: accepted and ignored */
        } else if (o->kind == SX_SYM && o->text[0] == ':') {
            eg__throw(e, LM_ETYPE, EG_LOC(o), "unknown option %s for %s", o->text, eg__sx_head(s));
        } else {
            eg__throw(e, LM_ETYPE, EG_LOC(o), "unexpected option in %s declaration", eg__sx_head(s));
        }
    }
}

static void decl_datatype(eg_engine *e, const sx *s)
{
    if (s->n < 2 || s->items[1]->kind != SX_SYM) {
        eg__throw(e, LM_ETYPE, EG_LOC(s), "(datatype Name variants...) expected");
    }
    uint32_t sort = add_sort(e, s->items[1], s->items[1]->text);
    for (uint32_t i = 2; i < s->n; i++)
        variant(e, s->items[i], sort);
}

static void decl_datatype_star(eg_engine *e, const sx *s)
{
    /* first declare every sort, then the variants (mutual recursion) */
    for (uint32_t i = 1; i < s->n; i++) {
        const sx *d = s->items[i];
        if (d->kind != SX_LIST || d->n < 1 || d->items[0]->kind != SX_SYM) {
            eg__throw(e, LM_ETYPE, EG_LOC(d), "(Name variants...) expected in datatype*");
        }
        if (eg__sx_is(d->items[0], "sort")) continue;
        add_sort(e, d->items[0], d->items[0]->text);
    }
    /* then the container sorts, (sort S (Vec T)), which may hold the datatypes */
    for (uint32_t i = 1; i < s->n; i++)
        if (eg__sx_is(s->items[i]->items[0], "sort")) eg__declare(e, s->items[i]);
    for (uint32_t i = 1; i < s->n; i++) {
        const sx *d = s->items[i];
        if (eg__sx_is(d->items[0], "sort")) continue;
        uint32_t sort = (uint32_t)eg__sort_find(e, d->items[0]->text);
        for (uint32_t k = 1; k < d->n; k++)
            variant(e, d->items[k], sort);
    }
}

/* ====================================================================================
 * Rules
 * ==================================================================================== */

static uint32_t rule_ruleset(eg_engine *e, const sx *s, uint32_t from)
{
    for (uint32_t i = from; i + 1 < s->n; i++)
        if (eg__sx_is(s->items[i], ":ruleset")) {
            const sx *n = s->items[i + 1];
            int32_t r = n->kind == SX_SYM ? eg__ruleset_find(e, n->text) : -1;
            /* a run-time failure, as in egglog, where (fail (rule ... :ruleset r)) holds
             * for an unknown or a combined r (egglog's test-combined) */
            if (r < 0) {
                eg__throw(e, LM_ERUNTIME, EG_LOC(n),
                          "unknown ruleset '%s' (declare it with (ruleset name))",
                          n->kind == SX_SYM ? n->text : "?");
            }
            if (e->rulesets[r].combined)
                eg__throw(e, LM_ERUNTIME, EG_LOC(n),
                          "'%s' is a combined ruleset; add the rule to one of its members",
                          n->text);
            return (uint32_t)r;
        }
    return 0;
}

/* (unstable-combined-ruleset name member...): every member is a declared ruleset
 * (combined or not); egglog's test-combined and combined-nested. */
static void decl_combined_ruleset(eg_engine *e, const sx *s)
{
    if (s->n < 2 || s->items[1]->kind != SX_SYM)
        eg__throw(e, LM_ETYPE, EG_LOC(s), "(unstable-combined-ruleset name rulesets...) expected");
    const char *name = s->items[1]->text;
    if (eg__ruleset_find(e, name) >= 0)
        eg__throw(e, LM_ETYPE, EG_LOC(s->items[1]), "ruleset '%s' is already defined", name);
    for (uint32_t i = 2; i < s->n; i++) {
        const sx *m = s->items[i];
        if (m->kind != SX_SYM || eg__ruleset_find(e, m->text) < 0)
            eg__throw(e, LM_ETYPE, EG_LOC(m), "unknown ruleset '%s' (declare it with (ruleset name))",
                      m->kind == SX_SYM ? m->text : "?");
    }
    EG_GROW(e, e->rulesets, e->caprulesets, e->nrulesets + 1);
    ruleset *R = &e->rulesets[e->nrulesets];
    memset(R, 0, sizeof *R);
    R->combined = true;
    R->name = eg__strdup(e, name);
    e->nrulesets++; /* counted before its member list exists: out of memory frees it all */
    R->members = eg__array(e, NULL, s->n - 2 + 1, sizeof(uint32_t));
    for (uint32_t i = 2; i < s->n; i++)
        R->members[R->nmembers++] = (uint32_t)eg__ruleset_find(e, s->items[i]->text);
}

static const char *rule_name(eg_engine *e, const sx *s, uint32_t from)
{
    for (uint32_t i = from; i + 1 < s->n; i++) {
        if (!eg__sx_is(s->items[i], ":name")) continue;
        if (s->items[i + 1]->kind != SX_STR) {
            eg__throw(e, LM_EPARSE, EG_LOC(s->items[i + 1]),
                      ":name takes a string, as in :name \"my-rule\"");
        }
        return s->items[i + 1]->text;
    }
    return NULL;
}

/* Refuses options other than the allowed ones; with_arg[i] says whether allowed[i] takes
 * an argument. Options named :internal-... (egglog's internal flags) are accepted. */
static void check_options(eg_engine *e, const sx *s, uint32_t from, const char *const *allowed,
                          const bool *with_arg, size_t n)
{
    for (uint32_t i = from; i < s->n; i++) {
        const sx *o = s->items[i];
        bool ok = false;
        for (size_t k = 0; k < n && !ok; k++) {
            if (eg__sx_is(o, allowed[k])) {
                ok = true;
                if (with_arg[k]) {
                    if (i + 1 >= s->n) {
                        eg__throw(e, LM_ETYPE, EG_LOC(o), "option %s needs a value", allowed[k]);
                    }
                    i++;
                }
            }
        }
        if (!ok && o->kind == SX_SYM && strncmp(o->text, ":internal-", 10) == 0) ok = true;
        if (!ok) {
            if (o->kind == SX_SYM && o->text[0] == ':')
                eg__throw(e, LM_ETYPE, EG_LOC(o), "unknown option %s for %s", o->text, eg__sx_head(s));
            eg__throw(e, LM_ETYPE, EG_LOC(o), "unexpected argument to %s (options start with ':')",
                      eg__sx_head(s));
        }
    }
}

static bool has_flag(const sx *s, uint32_t from, const char *flag)
{
    for (uint32_t i = from; i < s->n; i++)
        if (eg__sx_is(s->items[i], flag)) return true;
    return false;
}

/* Moves the compiled scratch into a new rule of ruleset rs. */
static void install_rule(eg_engine *e, cc *c, uint32_t rs, const char *name, bool naive,
                         const sx *at)
{
    char buf[64];
    if (!name) {
        snprintf(buf, sizeof buf, "%s:%u:%u", at->file ? at->file : "<input>", at->line, at->col);
        name = buf;
    }
    /* everything that can fail comes before the scratch is moved into the rule */
    EG_GROW(e, e->rules, e->caprules, e->nrules + 1);
    ruleset *R = &e->rulesets[rs];
    EG_GROW(e, R->rules, R->caprules, R->nrules + 1);
    uint32_t origin = eg__origin_new(e, EG_ORIGIN_RULE, at, name); /* owned by the engine */
    char *rname = eg__strdup(e, name); /* the last thing that can fail */
    rule *r = &e->rules[e->nrules];
    memset(r, 0, sizeof *r);
    r->q = c->q;
    memset(&c->q, 0, sizeof c->q);
    r->acts = c->acts;
    r->nacts = c->nacts;
    c->acts = NULL;
    c->nacts = 0;
    r->nslots = c->nslots;
    r->ruleset = rs;
    r->naive = naive;
    r->seen = 0;
    r->at = at;
    r->origin = origin;
    r->name = rname;
    R->rules[R->nrules++] = e->nrules;
    e->nrules++;
}

static void cmd_rule(eg_engine *e, const sx *s)
{
    if (s->n < 3 || s->items[1]->kind != SX_LIST || s->items[2]->kind != SX_LIST) {
        eg__throw(e, LM_ETYPE, EG_LOC(s), "(rule (facts...) (actions...) [:ruleset r] [:name n]) expected");
    }
    static const char *const opts[] = {":ruleset", ":name", ":naive", ":unsafe-seminaive"};
    static const bool args[] = {true, true, false, false};
    check_options(e, s, 3, opts, args, 4);
    if (has_flag(s, 3, ":naive") && has_flag(s, 3, ":unsafe-seminaive")) {
        const sx *at = s;
        for (uint32_t i = 3; i < s->n; i++)
            if (eg__sx_is(s->items[i], ":unsafe-seminaive")) at = s->items[i];
        eg__throw(e, LM_ETYPE, EG_LOC(at),
                  ":naive and :unsafe-seminaive select different evaluation modes; a rule "
                  "takes at most one");
    }
    uint32_t rs = rule_ruleset(e, s, 3);
    const char *name = rule_name(e, s, 3);
    cc *c = eg__cc_new(e);
    eg__cc_facts(e, c, (const sx *const *)s->items[1]->items, s->items[1]->n);
    eg__cc_finish(e, c);
    for (uint32_t i = 0; i < s->items[2]->n; i++)
        eg__cc_action(e, c, s->items[2]->items[i]);
    install_rule(e, c, rs, name, has_flag(s, 3, ":naive"), s);
    eg__cc_done(e);
}

static void rewrite_one(eg_engine *e, const sx *s, const sx *lhs, const sx *rhs, const sx *when,
                        bool subsume, uint32_t rs, const char *name)
{
    cc *c = eg__cc_new(e);
    uint32_t root = eg__cc_term(e, c, lhs);
    /* the left side's wildcards (top level) get names, so that :subsume can restate it */
    char wild[EG_MAX_ARGS][24];
    uint32_t nwild = 0;
    if (subsume && lhs->kind == SX_LIST && c->q.natoms) {
        const q_atom *at = &c->q.atoms[c->q.natoms - 1]; /* the call's atom comes last */
        for (uint32_t i = 0; i + 1 < lhs->n && i + 1 < at->ncols && i < EG_MAX_ARGS; i++) {
            if (!eg__sx_is(lhs->items[i + 1], "_")) continue;
            uint32_t v = eg__cc_vfind(c, at->var[i]);
            if (c->q.var_name[v]) continue;
            snprintf(wild[i], sizeof wild[i], "__rw_wild%u", i);
            c->q.var_name[v] = eg__strdup(e, wild[i]);
            nwild = i + 1;
        }
    }
    if (when) {
        if (when->kind != SX_LIST) {
            eg__throw(e, LM_ETYPE, EG_LOC(when), ":when expects a list of facts");
        }
        eg__cc_facts(e, c, (const sx *const *)when->items, when->n);
    }
    /* name the root so the actions can refer to it */
    uint32_t r = eg__cc_vfind(c, root);
    const char *rootname = "__rw_root";
    if (c->q.var_name[r]) {
        rootname = NULL;
    } else {
        c->q.var_name[r] = eg__strdup(e, rootname);
    }
    c->root_name = eg__strdup(e, c->q.var_name[r]);
    eg__cc_finish(e, c);
    int32_t slot = eg__cc_slot(c, c->root_name);
    if (slot < 0) {
        eg__throw(e, LM_ETYPE, EG_LOC(lhs), "the left side of a rewrite must be a term");
    }
    uint32_t rsort = c->slot_sort[slot];
    action *a = eg__cc_new_action(c, eg__is_eq(e, rsort) ? AC_UNION : AC_EXPR, s);
    if (a->kind == AC_UNION) {
        a->a = eg__cc_mk_expr(e, AE_VAR, rsort, lhs);
        a->a->var = (uint32_t)slot;
        eg__cc_expr(e, c, rhs, rsort, &c->acts[c->nacts - 1].b);
    } else {
        eg__throw(e, LM_ETYPE, EG_LOC(lhs),
                  "rewrite of a %s value: the left side must be a term of a user sort",
                  eg__sort_name(e, rsort));
    }
    if (subsume) {
        int32_t ti;
        eg_table *t = eg__cc_table_call(e, lhs, &ti);
        action *sa = eg__cc_new_action(c, AC_SUBSUME, s);
        sa->table = (uint32_t)ti;
        sa->args = eg__calloc(e, lhs->n, sizeof(aexpr *));
        for (uint32_t i = 0; i + 1 < lhs->n; i++) {
            sa->nargs = i + 1;
            int32_t ws = i < nwild && eg__sx_is(lhs->items[i + 1], "_") ? eg__cc_slot(c, wild[i]) : -1;
            if (ws >= 0) {
                sa->args[i] = eg__cc_mk_expr(e, AE_VAR, c->slot_sort[ws], lhs->items[i + 1]);
                sa->args[i]->var = (uint32_t)ws;
            } else {
                eg__cc_expr(e, c, lhs->items[i + 1], t->in_sort[i], &sa->args[i]);
            }
        }
    }
    install_rule(e, c, rs, name, false, s);
    eg__cc_done(e);
}

static void cmd_rewrite(eg_engine *e, const sx *s, bool bi)
{
    if (s->n < 3) {
        eg__throw(e, LM_ETYPE, EG_LOC(s), "(%s lhs rhs [:when (facts)] [:ruleset r]) expected",
                  eg__sx_head(s));
    }
    const sx *when = NULL;
    for (uint32_t i = 3; i + 1 < s->n; i++)
        if (eg__sx_is(s->items[i], ":when")) when = s->items[i + 1];
    static const char *const opts[] = {":when", ":ruleset", ":name", ":subsume"};
    static const bool args[] = {true, true, true, false};
    check_options(e, s, 3, opts, args, 4);
    bool subsume = has_flag(s, 3, ":subsume");
    uint32_t rs = rule_ruleset(e, s, 3);
    const char *name = rule_name(e, s, 3);
    rewrite_one(e, s, s->items[1], s->items[2], when, subsume, rs, name);
    if (bi) rewrite_one(e, s, s->items[2], s->items[1], when, subsume, rs, name);
}

/* ====================================================================================
 * Declaration commands (called from eg_cmd.c)
 * ==================================================================================== */

bool eg__declare(eg_engine *e, const sx *s)
{
    const char *h = eg__sx_head(s);
    if (!h) return false;
    if (strcmp(h, "datatype") == 0) {
        decl_datatype(e, s);
    } else if (strcmp(h, "datatype*") == 0) {
        decl_datatype_star(e, s);
    } else if (strcmp(h, "sort") == 0) {
        if (s->n < 2 || s->items[1]->kind != SX_SYM) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "(sort Name) expected");
        }
        if (s->n >= 3 && s->items[2]->kind == SX_LIST) {
            const sx *c = s->items[2];
            const char *ch = eg__sx_head(c);
            int fam = ch ? eg__cont_family(ch) : -1;
            if (fam == CK_FN) {
                /* (UnstableFn (inputs...) output) */
                if (c->n != 3 || c->items[1]->kind != SX_LIST)
                    eg__throw(e, LM_ETYPE, EG_LOC(c), "(UnstableFn (InputSorts...) OutputSort) expected");
                const sx *ins = c->items[1];
                if (ins->n > EG_MAX_ARGS)
                    eg__throw(e, LM_ELIMIT, EG_LOC(ins), "at most %d inputs", EG_MAX_ARGS);
                for (uint32_t i = 0; i < ins->n; i++)
                    sort_of(e, ins->items[i]);
                uint32_t out = sort_of(e, c->items[2]);
                uint32_t id = add_sort(e, s->items[1], s->items[1]->text);
                eg_sort *ns = &e->sorts[id];
                ns->kind = SK_CONT;
                ns->family = CK_FN;
                ns->canon = true; /* partial arguments may hold e-class ids */
                ns->fn_out = out;
                ns->fn_in = eg__calloc(e, ins->n + 1, sizeof(uint32_t));
                for (uint32_t i = 0; i < ins->n; i++)
                    ns->fn_in[ns->fn_nin++] = (uint32_t)eg__sort_find(e, ins->items[i]->text);
                eg__cont_prims_init(e, id);
                return true;
            }
            if (fam >= 0) {
                uint32_t want = fam == CK_MAP ? 2 : 1;
                if (c->n != want + 1)
                    eg__throw(e, LM_ETYPE, EG_LOC(c), "(%s%s) expected", ch,
                              fam == CK_MAP ? " KeySort ValueSort" : " ElementSort");
                uint32_t a = sort_of(e, c->items[1]);
                uint32_t b = want == 2 ? sort_of(e, c->items[2]) : a;
                uint32_t id = add_sort(e, s->items[1], s->items[1]->text);
                eg_sort *ns = &e->sorts[id];
                ns->kind = SK_CONT;
                ns->family = (uint8_t)fam;
                ns->elem[0] = a;
                ns->elem[1] = b;
                ns->canon = e->sorts[a].canon || e->sorts[b].canon;
                eg__cont_prims_init(e, id);
                return true;
            }
            if (c->n != 3 || !eg__sx_is(c->items[0], "Pair")) {
                eg__throw(e, LM_ETYPE, EG_LOC(c),
                          "container sort (%s) is not supported; (Pair A B), (Vec T), (Set T), "
                          "(Map K V) and (MultiSet T) are",
                          ch ? ch : "?");
            }
            uint32_t a = sort_of(e, c->items[1]), b = sort_of(e, c->items[2]);
            uint32_t id = add_sort(e, s->items[1], s->items[1]->text);
            e->sorts[id].kind = SK_PAIR;
            e->sorts[id].elem[0] = a;
            e->sorts[id].elem[1] = b;
            e->sorts[id].canon = e->sorts[a].canon || e->sorts[b].canon;
            eg__pair_prims_init(e, &e->sorts[id], id);
            return true;
        }
        add_sort(e, s->items[1], s->items[1]->text);
    } else if (strcmp(h, "constructor") == 0) {
        decl_function(e, s, TK_CONSTRUCTOR);
    } else if (strcmp(h, "function") == 0) {
        decl_function(e, s, TK_FUNCTION);
    } else if (strcmp(h, "relation") == 0) {
        if (s->n != 3 || s->items[1]->kind != SX_SYM) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "(relation name (sorts...)) expected");
        }
        list_len(e, s->items[2], "sorts");
        add_table(e, s, s->items[1]->text, TK_RELATION, (const sx *const *)s->items[2]->items,
                  s->items[2]->n, SORT_UNIT);
    } else if (strcmp(h, "ruleset") == 0) {
        if (s->n != 2 || s->items[1]->kind != SX_SYM) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "(ruleset name) expected");
        }
        if (eg__ruleset_find(e, s->items[1]->text) >= 0) {
            eg__throw(e, LM_ETYPE, EG_LOC(s), "ruleset '%s' is already defined", s->items[1]->text);
        }
        EG_GROW(e, e->rulesets, e->caprulesets, e->nrulesets + 1);
        memset(&e->rulesets[e->nrulesets], 0, sizeof(ruleset));
        e->rulesets[e->nrulesets++].name = eg__strdup(e, s->items[1]->text);
    } else if (strcmp(h, "unstable-combined-ruleset") == 0) {
        decl_combined_ruleset(e, s);
    } else if (strcmp(h, "rule") == 0) {
        cmd_rule(e, s);
    } else if (strcmp(h, "rewrite") == 0) {
        cmd_rewrite(e, s, false);
    } else if (strcmp(h, "birewrite") == 0) {
        cmd_rewrite(e, s, true);
    } else {
        return false;
    }
    return true;
}
