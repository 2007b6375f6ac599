/* prop_gen.c: random rule programs for the semi-naive = naive property.
 *
 * A program is: one or two datatypes (two are declared with datatype*, each refers to the
 * other), a function F over the first datatype with :merge (min old new), a relation R,
 * rewrites (with :when guards, some with :subsume), birewrites, and rules (several atoms,
 * shared variables, i64 constants, primitive bindings, comparisons), starting terms bound
 * with let, unions and facts among them, a bounded schedule, print-size and (when nothing
 * is subsumed, so every class keeps a term) an extraction.
 *
 * Only idempotent, monotone actions are generated (union, constructor calls, relation
 * inserts, set with a min merge, subsumption by rewrites): replaying an old match changes
 * nothing, so evaluating only the matches that touch new rows (semi-naive) must reach the
 * same database as evaluating all of them (naive). Non-idempotent merges such as
 * (+ old new) and delete (not monotone) are left out on purpose: egglog's semi-naive
 * evaluation gives them different results too. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prop.h"

/* ---- PCG32 ---- */

void pg_rng_seed(pg_rng *r, uint64_t seed, uint64_t stream)
{
    r->state = 0;
    r->inc = (stream << 1) | 1u;
    pg_rng_next(r);
    r->state += seed;
    pg_rng_next(r);
}

uint32_t pg_rng_next(pg_rng *r)
{
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

uint32_t pg_rng_below(pg_rng *r, uint32_t n)
{
    /* Lemire-free rejection: unbiased and simple; n is always small here. */
    uint32_t threshold = (uint32_t)(-n) % n;
    for (;;) {
        uint32_t x = pg_rng_next(r);
        if (x >= threshold) return x % n;
    }
}

/* ---- growable string ---- */

void pg_buf_printf(pg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) abort(); /* tests only: out of memory ends the test */
        b->s = s;
        b->cap = cap;
    }
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

void pg_buf_free(pg_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

/* ---- generator state ---- */

enum { MAX_VARS = 48, MAX_GLOBALS = 12 };

typedef struct {
    pg_rng *r;
    pg_buf *b;
    pg_schema *sc;
    int ftab, rtab; /* schema indices of F and R */
    int nvars;      /* variables of the rule being written */
    int var_sort[MAX_VARS];
    int nglobals; /* starting terms t0.. */
    int subsumes; /* some rewrite has :subsume */
    int global_sort[MAX_GLOBALS];
} gen;

static int chance(gen *g, int num, int den)
{
    return (int)pg_rng_below(g->r, (uint32_t)den) < num;
}

static int is_ctor(const gen *g, int t)
{
    return t != g->ftab && t != g->rtab;
}
static int ctor_sort(const gen *g, int t)
{
    return g->sc->tables[t].col[g->sc->tables[t].ncols - 1];
}
static int ctor_nargs(const gen *g, int t)
{
    return g->sc->tables[t].ncols - 1;
}

/* A random constructor of datatype d; leaf_only picks the i64 leaf L<d>. */
static int pick_ctor(gen *g, int d, int leaf_only)
{
    int cand[PG_MAX_TABLES], n = 0;
    for (int t = 0; t < g->sc->ntables; t++)
        if (is_ctor(g, t) && ctor_sort(g, t) == d &&
            (!leaf_only || (ctor_nargs(g, t) == 1 && g->sc->tables[t].col[0] == PG_I64)))
            cand[n++] = t;
    return cand[pg_rng_below(g->r, (uint32_t)n)];
}

/* An existing variable of sort s (uniformly), or -1. */
static int pick_var(gen *g, int s)
{
    int cand[MAX_VARS], n = 0;
    for (int i = 0; i < g->nvars; i++)
        if (g->var_sort[i] == s) cand[n++] = i;
    return n ? cand[pg_rng_below(g->r, (uint32_t)n)] : -1;
}

static int new_var(gen *g, int s)
{
    if (g->nvars == MAX_VARS) return pick_var(g, s) >= 0 ? pick_var(g, s) : 0;
    g->var_sort[g->nvars] = s;
    return g->nvars++;
}

/* Reuses a variable of sort s with probability num/den (a shared variable: a join or a
 * non-linear pattern), otherwise makes a new one. */
static int var_of(gen *g, int s, int num, int den)
{
    int v = pick_var(g, s);
    if (v >= 0 && chance(g, num, den)) return v;
    return new_var(g, s);
}

/* ---- ground terms ---- */

static void term(gen *g, int s, int depth)
{
    if (s == PG_I64) {
        pg_buf_printf(g->b, "%u", pg_rng_below(g->r, 4));
        return;
    }
    int leaf = depth <= 0 || chance(g, 1, 5);
    int t = pick_ctor(g, s, leaf);
    pg_buf_printf(g->b, "(%s", g->sc->tables[t].name);
    for (int i = 0; i < ctor_nargs(g, t); i++) {
        pg_buf_printf(g->b, " ");
        term(g, g->sc->tables[t].col[i], depth - 1);
    }
    pg_buf_printf(g->b, ")");
}

/* ---- query patterns: variables are bound here ---- */

static void pattern(gen *g, int s, int depth, int top)
{
    if (s == PG_I64) {
        if (chance(g, 1, 4))
            pg_buf_printf(g->b, "%u", pg_rng_below(g->r, 3));
        else
            pg_buf_printf(g->b, "v%d", var_of(g, PG_I64, 1, 2));
        return;
    }
    if (!top && (depth <= 0 || chance(g, 2, 3))) {
        pg_buf_printf(g->b, "v%d", var_of(g, s, 1, 3));
        return;
    }
    int t = pick_ctor(g, s, 0);
    pg_buf_printf(g->b, "(%s", g->sc->tables[t].name);
    for (int i = 0; i < ctor_nargs(g, t); i++) {
        pg_buf_printf(g->b, " ");
        pattern(g, g->sc->tables[t].col[i], depth - 1, 0);
    }
    pg_buf_printf(g->b, ")");
}

/* ---- action expressions: only bound variables ---- */

static void expr(gen *g, int s, int depth, int top)
{
    int v = pick_var(g, s);
    if (s == PG_I64) {
        static const char *const ops[] = {"+", "-", "max", "min"};
        switch (pg_rng_below(g->r, 3)) {
        case 0:
            if (v >= 0) {
                pg_buf_printf(g->b, "v%d", v);
                return;
            }
            break;
        case 1:
            if (v >= 0 && depth > 0) {
                pg_buf_printf(g->b, "(%s v%d %u)", ops[pg_rng_below(g->r, 4)], v,
                              pg_rng_below(g->r, 3));
                return;
            }
            break;
        default:
            break;
        }
        pg_buf_printf(g->b, "%u", pg_rng_below(g->r, 4));
        return;
    }
    /* At the top a variable would union a class with its own part (the database
     * collapses); inside a term, bound variables make structure-preserving rewrites. */
    if (v >= 0 && (depth <= 0 || (top ? chance(g, 1, 5) : chance(g, 3, 4)))) {
        pg_buf_printf(g->b, "v%d", v);
        return;
    }
    int t = pick_ctor(g, s, depth <= 0);
    pg_buf_printf(g->b, "(%s", g->sc->tables[t].name);
    for (int i = 0; i < ctor_nargs(g, t); i++) {
        pg_buf_printf(g->b, " ");
        expr(g, g->sc->tables[t].col[i], depth - 1, 0);
    }
    pg_buf_printf(g->b, ")");
}

/* ---- declarations ---- */

static int add_table(pg_schema *sc, const char *name, int ncols, const int *cols)
{
    pg_table *t = &sc->tables[sc->ntables];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ncols = ncols;
    memcpy(t->col, cols, (size_t)ncols * sizeof cols[0]);
    return sc->ntables++;
}

static void declare(gen *g)
{
    pg_schema *sc = g->sc;
    int nd = sc->ndatatypes;
    if (nd > 1) pg_buf_printf(g->b, "(datatype*\n");
    for (int d = 0; d < nd; d++) {
        pg_buf_printf(g->b, nd > 1 ? "  (T%d" : "(datatype T%d", d);
        char name[24];
        int cols[PG_MAX_COLS] = {PG_I64, d};
        snprintf(name, sizeof name, "L%d", d);
        add_table(sc, name, 2, cols);
        pg_buf_printf(g->b, " (L%d i64)", d);
        int nctors = 1 + (int)pg_rng_below(g->r, 3);
        for (int k = 0; k < nctors; k++) {
            int nargs = 1 + (int)pg_rng_below(g->r, 2);
            snprintf(name, sizeof name, "C%d_%d", d, k);
            pg_buf_printf(g->b, " (%s", name);
            for (int i = 0; i < nargs; i++) {
                /* the first constructor of T0 refers to T1, so datatype* is really mutual */
                int s = (d == 0 && k == 0 && i == 0 && nd > 1) ? 1
                        : chance(g, 1, 4)                      ? PG_I64
                                          : (int)pg_rng_below(g->r, (uint32_t)nd);
                cols[i] = s;
                if (s == PG_I64)
                    pg_buf_printf(g->b, " i64");
                else
                    pg_buf_printf(g->b, " T%d", s);
            }
            cols[nargs] = d;
            if (chance(g, 1, 3)) pg_buf_printf(g->b, " :cost %u", 1 + pg_rng_below(g->r, 4));
            pg_buf_printf(g->b, ")");
            add_table(sc, name, nargs + 1, cols);
        }
        pg_buf_printf(g->b, ")\n");
    }
    if (nd > 1) pg_buf_printf(g->b, ")\n");
    int fcols[2] = {0, PG_I64};
    g->ftab = add_table(sc, "F", 2, fcols);
    pg_buf_printf(g->b, "(function F (T0) i64 :merge (min old new))\n");
    int rcols[2] = {0, nd - 1};
    g->rtab = add_table(sc, "R", 2, rcols);
    pg_buf_printf(g->b, "(relation R (T0 T%d))\n", nd - 1);
}

/* ---- rules ---- */

static void rewrite(gen *g, const char *ruleset)
{
    g->nvars = 0;
    int s = (int)pg_rng_below(g->r, (uint32_t)g->sc->ndatatypes);
    pg_buf_printf(g->b, "(rewrite ");
    pattern(g, s, 2, 1);
    pg_buf_printf(g->b, " ");
    expr(g, s, 2, 1);
    int n = pick_var(g, PG_I64);
    if (n >= 0 && chance(g, 1, 2))
        pg_buf_printf(g->b, " :when ((< v%d %u))", n, 1 + pg_rng_below(g->r, 3));
    if (chance(g, 1, 6)) {
        pg_buf_printf(g->b, " :subsume");
        g->subsumes = 1;
    }
    pg_buf_printf(g->b, "%s%s)\n", ruleset ? " :ruleset " : "", ruleset ? ruleset : "");
}

/* Commutativity or associativity of a binary constructor over one datatype, if there
 * is one: rules that grow the e-graph for several iterations without collapsing it. */
static void ac_rewrite(gen *g, const char *ruleset)
{
    int cand[PG_MAX_TABLES], n = 0;
    for (int t = 0; t < g->sc->ntables; t++) {
        const pg_table *tb = &g->sc->tables[t];
        if (is_ctor(g, t) && tb->ncols == 3 && tb->col[0] == tb->col[2] && tb->col[1] == tb->col[2])
            cand[n++] = t;
    }
    if (n == 0) return;
    const char *c = g->sc->tables[cand[pg_rng_below(g->r, (uint32_t)n)]].name;
    if (chance(g, 1, 2))
        pg_buf_printf(g->b, "(rewrite (%s a b) (%s b a)", c, c);
    else
        pg_buf_printf(g->b, "(%s (%s a (%s b c)) (%s (%s a b) c)",
                      chance(g, 1, 2) ? "birewrite" : "rewrite", c, c, c, c);
    pg_buf_printf(g->b, "%s%s)\n", ruleset ? " :ruleset " : "", ruleset ? ruleset : "");
}

static void rule(gen *g, const char *ruleset)
{
    g->nvars = 0;
    pg_buf_printf(g->b, "(rule (");
    int natoms = 1 + (int)pg_rng_below(g->r, 3);
    for (int a = 0; a < natoms; a++) {
        int t;
        do
            t = (int)pg_rng_below(g->r, (uint32_t)g->sc->ntables);
        while (!is_ctor(g, t));
        int out = var_of(g, ctor_sort(g, t), 1, 3);
        pg_buf_printf(g->b, "%s(= v%d (%s", a ? " " : "", out, g->sc->tables[t].name);
        for (int i = 0; i < ctor_nargs(g, t); i++) {
            pg_buf_printf(g->b, " ");
            pattern(g, g->sc->tables[t].col[i], 1, 0);
        }
        pg_buf_printf(g->b, "))");
    }
    if (chance(g, 1, 3))
        pg_buf_printf(g->b, " (R v%d v%d)", var_of(g, 0, 2, 3),
                      var_of(g, g->sc->ndatatypes - 1, 2, 3));
    if (chance(g, 1, 3)) {
        int x = var_of(g, 0, 3, 4);
        pg_buf_printf(g->b, " (= v%d (F v%d))", new_var(g, PG_I64), x);
    }
    int n = pick_var(g, PG_I64);
    if (n >= 0 && chance(g, 1, 3)) {
        int m = new_var(g, PG_I64);
        pg_buf_printf(g->b, " (= v%d (+ v%d 1))", m, n);
    }
    n = pick_var(g, PG_I64);
    if (n >= 0 && chance(g, 1, 3)) pg_buf_printf(g->b, " (< v%d %u)", n, 1 + pg_rng_below(g->r, 3));
    int s = (int)pg_rng_below(g->r, (uint32_t)g->sc->ndatatypes);
    int x = pick_var(g, s), y = pick_var(g, s);
    if (x >= 0 && y >= 0 && x != y && chance(g, 1, 3)) pg_buf_printf(g->b, " (!= v%d v%d)", x, y);
    pg_buf_printf(g->b, ")\n  (");

    int nacts = 1 + (int)pg_rng_below(g->r, 2);
    for (int a = 0; a < nacts; a++) {
        if (a) pg_buf_printf(g->b, " ");
        s = (int)pg_rng_below(g->r, (uint32_t)g->sc->ndatatypes);
        uint32_t kind = pg_rng_below(g->r, 4);
        x = pick_var(g, s);
        if (kind == 0 && x < 0) kind = 1; /* no class of that sort to union */
        switch (kind) {
        case 0: /* union a bound class with another or with a new term */
            pg_buf_printf(g->b, "(union v%d ", x);
            expr(g, s, 2, 1);
            pg_buf_printf(g->b, ")");
            break;
        case 1: /* a relation fact */
            pg_buf_printf(g->b, "(R ");
            expr(g, 0, 1, 0);
            pg_buf_printf(g->b, " ");
            expr(g, g->sc->ndatatypes - 1, 1, 0);
            pg_buf_printf(g->b, ")");
            break;
        case 2: /* a function value, merged with min */
            pg_buf_printf(g->b, "(set (F ");
            expr(g, 0, 1, 0);
            pg_buf_printf(g->b, ") ");
            expr(g, PG_I64, 1, 0);
            pg_buf_printf(g->b, ")");
            break;
        default: /* a new term, for its side effect */
            pg_buf_printf(g->b, "(let w%d ", a);
            expr(g, s, 2, 1);
            pg_buf_printf(g->b, ")");
            break;
        }
    }
    pg_buf_printf(g->b, ")%s%s)\n", ruleset ? " :ruleset " : "", ruleset ? ruleset : "");
}

/* ---- facts and schedule ---- */

static int pick_global(gen *g, int s)
{
    int cand[MAX_GLOBALS], n = 0;
    for (int i = 0; i < g->nglobals; i++)
        if (g->global_sort[i] == s) cand[n++] = i;
    return n ? cand[pg_rng_below(g->r, (uint32_t)n)] : -1;
}

static void facts(gen *g)
{
    g->nglobals = 6 + (int)pg_rng_below(g->r, 7);
    for (int i = 0; i < g->nglobals; i++) {
        int s = (int)pg_rng_below(g->r, (uint32_t)g->sc->ndatatypes);
        g->global_sort[i] = s;
        pg_buf_printf(g->b, "(let t%d ", i);
        term(g, s, 4);
        pg_buf_printf(g->b, ")\n");
    }
    int nfacts = (int)pg_rng_below(g->r, 6);
    for (int k = 0; k < nfacts; k++) {
        int s = (int)pg_rng_below(g->r, (uint32_t)g->sc->ndatatypes);
        int a = pick_global(g, s), b = pick_global(g, s);
        int a0 = pick_global(g, 0), bl = pick_global(g, g->sc->ndatatypes - 1);
        switch (pg_rng_below(g->r, 3)) {
        case 0:
            if (a >= 0 && b >= 0 && a != b) pg_buf_printf(g->b, "(union t%d t%d)\n", a, b);
            break;
        case 1:
            if (a0 >= 0) pg_buf_printf(g->b, "(set (F t%d) %u)\n", a0, pg_rng_below(g->r, 5));
            break;
        default:
            if (a0 >= 0 && bl >= 0) pg_buf_printf(g->b, "(R t%d t%d)\n", a0, bl);
            break;
        }
    }
}

void pg_generate(uint64_t seed, pg_buf *text, pg_schema *schema)
{
    pg_rng r;
    pg_rng_seed(&r, seed, 0x9e3779b97f4a7c15ULL);
    memset(schema, 0, sizeof *schema);
    gen g = {.r = &r, .b = text, .sc = schema};
    schema->ndatatypes = 1 + (int)pg_rng_below(&r, 2);
    pg_buf_printf(text, ";; generated by tests/egraph_prop, seed %llu\n", (unsigned long long)seed);
    declare(&g);
    int two = chance(&g, 1, 2);
    schema->two_rulesets = two;
    if (two) pg_buf_printf(text, "(ruleset rs0)\n(ruleset rs1)\n");
    int nrewrites = 2 + (int)pg_rng_below(&r, 4), nrules = 1 + (int)pg_rng_below(&r, 4);
    for (int i = 0; i < nrewrites; i++)
        rewrite(&g, two ? "rs1" : NULL);
    if (chance(&g, 2, 3)) ac_rewrite(&g, two ? "rs1" : NULL);
    for (int i = 0; i < nrules; i++)
        rule(&g, two ? (chance(&g, 1, 2) ? "rs0" : "rs1") : NULL);
    facts(&g);
    int iters = 2 + (int)pg_rng_below(&r, 5);
    schema->schedule_at = text->len;
    schema->iterations = iters;
    if (two)
        pg_buf_printf(text, "(run-schedule (repeat %d (seq (run rs0) (run rs1 2))))\n", iters);
    else
        pg_buf_printf(text, "(run %d)\n", iters);
    pg_buf_printf(text, "(print-size)\n");
    if (!g.subsumes) pg_buf_printf(text, "(extract t0)\n");
}
