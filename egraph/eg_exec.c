/* eg_exec.c: running the database: joins, actions, merges, rebuilding, iterations.
 *
 * One iteration of a ruleset (egglog's semantics):
 *   1. search: every rule of the ruleset is matched against the same database state
 *      (rows [0, hi) of each table, fixed when the iteration starts); the actions of each
 *      match run at once, but what they write cannot be seen by this iteration's
 *      matching: new terms are appended past hi, and `set`, relation inserts, `delete`
 *      and `subsume` are queued in the pending buffer;
 *   2. apply: the pending deletes are applied, then the other pending writes in order,
 *      merging values per :merge;
 *   3. rebuild (eg_rebuild.c): rows holding non-canonical ids are re-inserted
 *      canonically, which may merge rows (congruence) and cause more unions, until
 *      nothing changes.
 *
 * Semi-naive evaluation: every row carries the timestamp of the iteration that made it.
 * A rule remembers `seen`, the first timestamp it has not matched yet; a query with atoms
 * A1..An is evaluated as n joins, where in join i atom Ai ranges over new rows (ts >=
 * seen), atoms before it over old rows and atoms after it over all rows, so every match
 * that involves a new row is found exactly once.
 *
 * The join is adaptive (in the manner of generic join / free join): at every level it
 * runs the primitives whose inputs are bound, then measures, for every atom not yet
 * expanded, how many rows match its bound columns (hash indexes built once per search
 * phase by eg__table_six, or the primary key index), stops the branch if any atom has
 * none, and otherwise expands the atom with the fewest candidates, binding its columns.
 * The order is thus chosen per partial binding, never fixed in advance, so a
 * large intermediate result is avoided whenever some atom already constrains it. */
#include "eg_int.h"

#include <assert.h>
#include <string.h>

eg_value eg__canon_slow(eg_engine *e, uint32_t sort, eg_value v)
{
    if (e->sorts[sort].kind == SK_CONT) return eg__cont_canon(e, sort, v);
    return eg__pair_canon(e, sort, v);
}

/* ====================================================================================
 * Joins
 * ==================================================================================== */

/* Join state. Atom modes: 0 all rows, 1 old rows (ts < seen), 2 new rows (ts >= seen). */
typedef struct {
    eg_engine *e;
    query *q;
    uint32_t seen;
    bool subsumed_ok;
    eg_value *vals;
    match_fn fn;
    void *ctx;
    bool stop;
    uint8_t *bound;  /* per variable */
    uint8_t *adone;  /* per atom */
    uint8_t *pdone;  /* per primitive */
    uint8_t *mode;   /* per atom */
    uint32_t *split; /* per atom: first row with ts >= seen (within visible rows) */
    uint32_t *vhi;   /* per atom: visible rows [0, vhi) */
    uint32_t *undo;  /* variables bound, as a stack */
    uint32_t nundo;
    uint32_t *pundo; /* primitives run, as a stack */
    uint32_t npundo;
    uint32_t visits; /* rows tried since the last time-limit check */
} jctx;

static uint32_t vis_hi(const eg_table *t)
{
    return t->hi == UINT32_MAX ? t->nrows : t->hi;
}

/* Where an atom's candidate rows come from, given the bound variables. */
typedef struct {
    int kind; /* 0 range [lo, hi), 1 index group, 2 single row */
    uint32_t lo, hi;
    const uint32_t *rows;
    colmask mask;
} source;

static colmask atom_mask(const jctx *j, const q_atom *a)
{
    colmask m = 0;
    for (uint32_t c = 0; c < a->ncols; c++)
        if (j->bound[a->var[c]]) m |= (colmask)1 << c;
    return m;
}

/* Fills src for atom ai and returns an upper bound of its candidate rows. */
static uint32_t atom_source(jctx *j, uint32_t ai, source *src)
{
    const q_atom *a = &j->q->atoms[ai];
    eg_table *t = &j->e->tables[a->table];
    uint32_t hi = j->vhi[ai];
    colmask mask = atom_mask(j, a);
    src->mask = mask;
    if (mask == 0) {
        src->kind = 0;
        src->lo = j->mode[ai] == 2 ? j->split[ai] : 0;
        src->hi = j->mode[ai] == 1 ? j->split[ai] : hi;
        return src->hi - src->lo;
    }
    colmask inmask = t->n_in >= 64 ? ~(colmask)0 : ((colmask)1 << t->n_in) - 1;
    if ((mask & inmask) == inmask) {
        eg_value key[EG_MAX_COLS];
        for (uint32_t c = 0; c < t->n_in; c++)
            key[c] = j->vals[a->var[c]];
        int64_t r = eg__table_lookup(t, key, eg__key_hash(key, t->n_in));
        src->kind = 2;
        if (r < 0 || (uint32_t)r >= hi) return 0;
        src->lo = (uint32_t)r;
        return 1;
    }
    const sindex *ix = eg__table_six(j->e, t, mask, hi);
    eg_value byc[EG_MAX_COLS];
    for (uint32_t c = 0; c < a->ncols; c++)
        if (mask >> c & 1) byc[c] = j->vals[a->var[c]];
    int64_t g = eg__six_lookup(t, ix, byc);
    src->kind = 1;
    if (g < 0) return 0;
    src->rows = ix->rows + ix->gstart[g];
    src->lo = 0;
    src->hi = ix->gstart[g + 1] - ix->gstart[g];
    return src->hi;
}

static void join(jctx *j, uint32_t ndone);

/* Tries row r of atom ai: filters, binds its unbound variables, recurses. */
static void try_row(jctx *j, uint32_t ai, const source *src, uint32_t r, uint32_t ndone)
{
    /* a join that visits many rows but matches few must still honour the limits */
    if (++j->visits >= EG_LIMIT_CHECK_VISITS) {
        j->visits = 0;
        eg_engine *e = j->e;
        if (e->in_search && (e->opt.node_limit || e->opt.mem_limit || e->opt.time_limit_s > 0) &&
            eg__limits_hit(e)) {
            j->stop = true;
            return;
        }
    }
    const q_atom *a = &j->q->atoms[ai];
    const eg_table *t = &j->e->tables[a->table];
    uint8_t fl = t->flags[r];
    if (fl & RF_DEAD) return;
    if (!j->subsumed_ok && (fl & RF_SUBSUMED)) return;
    /* rows are in timestamp order: "ts >= seen" is "r >= split" among the visible rows */
    if (j->mode[ai] == 1 && r >= j->split[ai]) return;
    if (j->mode[ai] == 2 && r < j->split[ai]) return;
    const eg_value *row = t->cols + (size_t)r * t->ncols;
    eg_value *vals = j->vals;
    if (src->kind != 1) {
        for (uint32_t c = 0; c < a->ncols; c++)
            if ((src->mask >> c & 1) && row[c] != vals[a->var[c]]) return;
    }
    uint32_t mark = j->nundo;
    bool ok = true;
    for (uint32_t c = 0; c < a->ncols; c++) {
        if (src->mask >> c & 1) continue;
        uint32_t v = a->var[c];
        if (j->bound[v]) { /* repeated variable within the atom */
            if (vals[v] != row[c]) {
                ok = false;
                break;
            }
            continue;
        }
        vals[v] = row[c];
        j->bound[v] = 1;
        j->undo[j->nundo++] = v;
    }
    if (ok) join(j, ndone + 1);
    while (j->nundo > mark)
        j->bound[j->undo[--j->nundo]] = 0;
}

/* One level of the join: run every primitive whose inputs are bound, then expand the
 * remaining atom with the fewest candidate rows (an empty one ends this branch). */
static void join(jctx *j, uint32_t ndone)
{
    if (j->stop) return;
    query *q = j->q;
    eg_engine *e = j->e;
    uint32_t mark = j->nundo, pmark = j->npundo;
    bool ok = true;
    bool more = true;
    while (more && ok) {
        more = false;
        for (uint32_t i = 0; i < q->nprims && ok; i++) {
            if (j->pdone[i]) continue;
            const q_prim *p = &q->prims[i];
            bool ready = true;
            for (uint32_t k = 0; k < p->nargs; k++)
                if (!j->bound[p->args[k]]) ready = false;
            if (!ready) continue;
            eg_value args[EG_MAX_ARGS], out;
            for (uint32_t k = 0; k < p->nargs; k++)
                args[k] = j->vals[p->args[k]];
            const char *why;
            e->in_query_prim = true; /* unstable-app reads, never adds */
            prim_status st = eg__prim_call(e, p->prim, args, p->nargs, &out, &why);
            e->in_query_prim = false;
            if (st != PR_OK) {
                ok = false;
                break;
            }
            if (j->bound[p->res]) {
                if (j->vals[p->res] != out) {
                    ok = false;
                    break;
                }
            } else {
                j->vals[p->res] = out;
                j->bound[p->res] = 1;
                j->undo[j->nundo++] = p->res;
            }
            j->pdone[i] = 1;
            j->pundo[j->npundo++] = i;
            more = true;
        }
    }
    if (ok) {
        if (ndone == q->natoms) {
            if (!j->fn(e, j->ctx, j->vals)) j->stop = true;
        } else {
            int best = -1;
            uint32_t bestsz = UINT32_MAX;
            source bsrc = {0}, src;
            for (uint32_t ai = 0; ai < q->natoms; ai++) {
                if (j->adone[ai]) continue;
                uint32_t sz = atom_source(j, ai, &src);
                if (sz == 0) {
                    best = -1;
                    bestsz = 0;
                    break;
                }
                if (sz < bestsz) {
                    best = (int)ai;
                    bestsz = sz;
                    bsrc = src;
                }
            }
            if (best >= 0) {
                uint32_t ai = (uint32_t)best;
                j->adone[ai] = 1;
                if (bsrc.kind == 0) {
                    for (uint32_t r = bsrc.lo; r < bsrc.hi && !j->stop; r++)
                        try_row(j, ai, &bsrc, r, ndone);
                } else if (bsrc.kind == 2) {
                    try_row(j, ai, &bsrc, bsrc.lo, ndone);
                } else {
                    for (uint32_t k = 0; k < bsrc.hi && !j->stop; k++)
                        try_row(j, ai, &bsrc, bsrc.rows[k], ndone);
                }
                j->adone[ai] = 0;
            }
        }
    }
    while (j->npundo > pmark)
        j->pdone[j->pundo[--j->npundo]] = 0;
    while (j->nundo > mark)
        j->bound[j->undo[--j->nundo]] = 0;
}

void eg__query_run(eg_engine *e, query *q, bool naive, uint32_t seen, bool subsumed_ok,
                   eg_value *vals, match_fn fn, void *ctx)
{
    if (q->never) return;
    uint32_t nv = q->nvars, na = q->natoms;
    jctx j;
    memset(&j, 0, sizeof j);
    j.e = e;
    j.q = q;
    j.seen = seen;
    j.subsumed_ok = subsumed_ok;
    j.vals = vals;
    j.fn = fn;
    j.ctx = ctx;
    /* One block for the byte and word arrays, registered with the engine while the join
     * runs: a rule action that fails throws from inside it, and the command boundary then
     * frees what is registered. */
    size_t nwords = (size_t)nv + 2 * (size_t)na + q->nprims + 4;
    size_t nbytes = (size_t)nv + 3 * (size_t)na + q->nprims + 4;
    uint32_t *words = eg__scoped_alloc(e, nwords * sizeof(uint32_t) + nbytes);
    uint8_t *bytes = (uint8_t *)(words + nwords);
    j.bound = bytes;
    j.adone = bytes + nv;
    j.mode = bytes + nv + na;
    j.pdone = bytes + nv + 2 * na;
    j.undo = words;
    j.split = words + nv;
    j.vhi = words + nv + na;
    j.pundo = words + nv + 2 * na;
    for (uint32_t v = 0; v < nv; v++) {
        if (!q->is_const[v]) continue;
        if (q->const_global[v] >= 0) {
            global *g = &e->globals[q->const_global[v]];
            vals[v] = eg__canon(e, g->sort, g->val);
        } else {
            vals[v] = q->const_val[v];
        }
        j.bound[v] = 1;
    }
    for (uint32_t i = 0; i < na; i++) {
        eg_table *t = &e->tables[q->atoms[i].table];
        j.vhi[i] = vis_hi(t);
        uint32_t sp = eg__table_first_ts(t, seen);
        j.split[i] = sp < j.vhi[i] ? sp : j.vhi[i];
    }
    if (naive || na == 0) {
        join(&j, 0);
    } else {
        for (uint32_t i = 0; i < na && !j.stop; i++) {
            if (j.split[i] >= j.vhi[i]) continue; /* nothing new in this atom */
            for (uint32_t k = 0; k < na; k++)
                j.mode[k] = k < i ? 1 : (k == i ? 2 : 0);
            join(&j, 0);
        }
    }
    eg__scoped_free(e, words);
}

/* ====================================================================================
 * Inserting with merge semantics
 * ==================================================================================== */

static void canon_row(eg_engine *e, const eg_table *t, eg_value *row)
{
    for (uint32_t c = 0; c < t->n_in; c++)
        row[c] = eg__canon(e, t->in_sort[c], row[c]);
    if (t->has_out) row[t->n_in] = eg__canon(e, t->out_sort, row[t->n_in]);
}

static void print_key(eg_engine *e, const eg_table *t, const eg_value *row, char *buf, size_t n)
{
    size_t o = (size_t)snprintf(buf, n, "(%s", t->name);
    if (o >= n - 32) o = n - 32;
    for (uint32_t c = 0; c < t->n_in && o < n - 32; c++) {
        uint32_t s = t->in_sort[c];
        if (s == SORT_I64)
            o += (size_t)snprintf(buf + o, n - o, " %lld", (long long)(int64_t)row[c]);
        else if (s == SORT_STRING)
            o += (size_t)snprintf(buf + o, n - o, " \"%s\"", eg__str(e, (uint32_t)row[c]));
        else
            o += (size_t)snprintf(buf + o, n - o, " #%llu", (unsigned long long)row[c]);
    }
    snprintf(buf + o, n - o, ")");
}

static eg_value merge_values(eg_engine *e, eg_table *t, const eg_value *row, eg_value old,
                             eg_value nw)
{
    switch (t->merge) {
    case MG_UNION:
        eg__union(e, (uint32_t)old, (uint32_t)nw);
        return eg__find(e, (uint32_t)old);
    case MG_NONE: {
        if (old == nw) return old;
        char buf[256];
        print_key(e, t, row, buf, sizeof buf);
        eg__throw(e, LM_ERUNTIME, NULL,
                  "function %s has no :merge and was given two different values for %s; add a "
                  ":merge to the declaration",
                  t->name, buf);
    }
    case MG_EXPR: {
        /* as egglog (egglog-bridge's merge of a function call, pull 287): for an e-class
         * output the merge does not run when the stored value is the new one as they
         * stand (a stored value only equal after canonicalization, its class merged since,
         * runs it); a primitive output always runs it, equal values too, so
         * (set (f) 1) twice under :merge (+ old new) gives 2 as in egglog 13.2 */
        if (eg__is_eq(e, t->out_sort) && e->merge_raw_old == e->merge_raw_new) return old;
        eg_value vals[2] = {old, nw};
        eg_value m = eg__eval(e, t->merge_expr, vals);
        return eg__canon(e, t->out_sort, m);
    }
    }
    return old;
}

void eg__insert(eg_engine *e, eg_table *t, const eg_value *row_in, bool subsumed, uint32_t origin)
{
    eg_value row[EG_MAX_COLS];
    memcpy(row, row_in, t->ncols * sizeof(eg_value));
    canon_row(e, t, row);
    uint64_t h = eg__key_hash(row, t->n_in);
    int64_t r = eg__table_lookup(t, row, h);
    if (r < 0) {
        eg__table_append(e, t, row, h, subsumed ? RF_SUBSUMED : 0, origin);
        e->changed = true;
        return;
    }
    uint32_t ri = (uint32_t)r;
    uint8_t fl = t->flags[ri];
    if (!t->has_out) {
        if (subsumed && !(fl & RF_SUBSUMED)) {
            t->flags[ri] |= RF_SUBSUMED;
            e->changed = true;
        }
        return;
    }
    /* the values as they stand, for merge_values (egglog compares those) */
    e->merge_raw_old = t->cols[(size_t)ri * t->ncols + t->n_in];
    e->merge_raw_new = row_in[t->n_in];
    eg_value old = eg__canon(e, t->out_sort, t->cols[(size_t)ri * t->ncols + t->n_in]);
    eg_value m = merge_values(e, t, row, old, row[t->n_in]);
    /* the merge may have grown the table: re-find the row */
    r = eg__table_lookup(t, row, h);
    if (r < 0) return;
    ri = (uint32_t)r;
    eg_value stored = t->cols[(size_t)ri * t->ncols + t->n_in];
    if (t->merge == MG_UNION) {
        if (subsumed && !(t->flags[ri] & RF_SUBSUMED)) {
            t->flags[ri] |= RF_SUBSUMED;
            e->changed = true;
        }
        return;
    }
    bool sub = subsumed || (t->flags[ri] & RF_SUBSUMED);
    if (m == stored && sub == !!(t->flags[ri] & RF_SUBSUMED)) return;
    if (m == stored) {
        t->flags[ri] |= RF_SUBSUMED;
        e->changed = true;
        return;
    }
    /* a new value (or the old one made canonical): the row is replaced; it keeps its
     * origin when only canonicalization changed it */
    uint32_t keep = eg__canon(e, t->out_sort, stored) == m ? t->origin[ri] : origin;
    row[t->n_in] = m;
    eg__table_kill(t, ri);
    eg__table_append(e, t, row, h, sub ? RF_SUBSUMED : 0, keep);
    e->changed = true;
}

eg_value eg__lookup_or_insert(eg_engine *e, eg_table *t, eg_value *key, uint32_t origin)
{
    for (uint32_t c = 0; c < t->n_in; c++)
        key[c] = eg__canon(e, t->in_sort[c], key[c]);
    uint64_t h = eg__key_hash(key, t->n_in);
    int64_t r = eg__table_lookup(t, key, h);
    if (r >= 0) {
        if (!t->has_out) return 0;
        return eg__canon(e, t->out_sort, t->cols[(size_t)r * t->ncols + t->n_in]);
    }
    eg_value row[EG_MAX_COLS];
    memcpy(row, key, t->n_in * sizeof(eg_value));
    eg_value out = 0;
    if (t->has_out) {
        out = eg__new_id(e);
        row[t->n_in] = out;
    }
    eg__table_append(e, t, row, h, 0, origin);
    e->changed = true;
    return out;
}

/* ====================================================================================
 * Actions
 * ==================================================================================== */

eg_value eg__eval(eg_engine *e, const aexpr *a, eg_value *vals)
{
    switch (a->kind) {
    case AE_VAR:
        return eg__canon(e, a->sort, vals[a->var]);
    case AE_CONST:
        return a->c;
    case AE_GLOBAL: {
        global *g = &e->globals[a->global];
        return eg__canon(e, g->sort, g->val);
    }
    case AE_PRIM: {
        eg_value args[EG_MAX_ARGS], out;
        for (uint32_t i = 0; i < a->nargs; i++)
            args[i] = eg__eval(e, a->args[i], vals);
        const char *why;
        if (eg__prim_call(e, a->prim, args, a->nargs, &out, &why) != PR_OK)
            eg__throw(e, LM_ERUNTIME, EG_LOC(a->at), "primitive %s failed%s%s", a->prim->name,
                      why ? ": " : "", why ? why : "");
        return out;
    }
    case AE_TABLE: {
        eg_table *t = &e->tables[a->table];
        eg_value key[EG_MAX_COLS];
        for (uint32_t i = 0; i < a->nargs; i++)
            key[i] = eg__eval(e, a->args[i], vals);
        if (t->kind == TK_FUNCTION) {
            for (uint32_t c = 0; c < t->n_in; c++)
                key[c] = eg__canon(e, t->in_sort[c], key[c]);
            int64_t r = eg__table_lookup(t, key, eg__key_hash(key, t->n_in));
            if (r < 0) {
                char buf[256];
                print_key(e, t, key, buf, sizeof buf);
                eg__throw(e, LM_ERUNTIME, EG_LOC(a->at),
                          "lookup of %s failed: the function has no value there", buf);
            }
            return t->has_out ? eg__canon(e, t->out_sort, t->cols[(size_t)r * t->ncols + t->n_in])
                              : 0;
        }
        return eg__lookup_or_insert(e, t, key, e->cur_origin);
    }
    }
    return 0;
}

/* Whether the relation insert (table, row[0..n)) is already pending in this iteration;
 * if not, records it as the pending op about to be made (index e->npend). */
static bool insert_pending(eg_engine *e, uint32_t table, const eg_value *row, uint32_t n)
{
    if ((e->npset_used + 1) * 2 > e->npset_slots) {
        uint32_t ns = e->npset_slots ? e->npset_slots * 2 : 1024;
        if (ns < e->npset_slots) eg__oom(e, SIZE_MAX);
        uint32_t *sl = eg__mcalloc(e, ns, sizeof *sl);
        for (uint32_t i = 0; i < e->npset_slots; i++) {
            uint32_t id = e->pset[i];
            if (!id) continue;
            const pending_op *p = &e->pend[id - 1];
            uint64_t h = eg__key_hash(e->pend_vals + p->off, e->tables[p->table].n_in) ^
                         (uint64_t)p->table * 0x9E3779B97F4A7C15ull;
            uint32_t j = (uint32_t)h & (ns - 1);
            while (sl[j])
                j = (j + 1) & (ns - 1);
            sl[j] = id;
        }
        eg__mfree(e, e->pset);
        e->pset = sl;
        e->npset_slots = ns;
    }
    uint64_t h = eg__key_hash(row, n) ^ (uint64_t)table * 0x9E3779B97F4A7C15ull;
    uint32_t j = (uint32_t)h & (e->npset_slots - 1);
    while (e->pset[j]) {
        const pending_op *p = &e->pend[e->pset[j] - 1];
        if (p->table == table && memcmp(e->pend_vals + p->off, row, n * sizeof(eg_value)) == 0)
            return true;
        j = (j + 1) & (e->npset_slots - 1);
    }
    e->pset[j] = e->npend + 1;
    e->npset_used++;
    return false;
}

static void pend(eg_engine *e, uint32_t table, const eg_value *row, uint32_t n, pend_kind op)
{
    EG_MGROW(e, e->pend, e->cappend, e->npend + 1);
    EG_MGROW(e, e->pend_vals, e->cappend_vals, e->npend_vals + n + 1);
    /* A relation row that many matches insert (a rule joining a relation with itself) is
     * queued once: the pending buffer grows with the rows made, not the matches. Inserts
     * commute with each other and with subsumes, and deletes apply first, so dropping a
     * repeated insert changes nothing. */
    if (op == PEND_INSERT && insert_pending(e, table, row, n)) return;
    pending_op *p = &e->pend[e->npend++];
    p->table = table;
    p->op = (uint8_t)op;
    p->origin = e->cur_origin;
    p->off = e->npend_vals;
    memcpy(e->pend_vals + p->off, row, n * sizeof(eg_value));
    e->npend_vals += n;
}

void eg__stage_set(eg_engine *e, uint32_t table, const eg_value *row)
{
    eg_table *t = &e->tables[table];
    if (e->in_search)
        pend(e, table, row, t->ncols, PEND_SET);
    else
        eg__insert(e, t, row, false, e->cur_origin);
}

void eg__exec_actions(eg_engine *e, const action *acts, uint32_t n, eg_value *vals)
{
    for (uint32_t i = 0; i < n; i++) {
        const action *a = &acts[i];
        switch (a->kind) {
        case AC_LET:
            vals[a->var] = eg__eval(e, a->a, vals);
            break;
        case AC_SET: {
            eg_table *t = &e->tables[a->table];
            eg_value row[EG_MAX_COLS];
            for (uint32_t k = 0; k < a->nargs; k++)
                row[k] = eg__eval(e, a->args[k], vals);
            row[t->n_in] = eg__eval(e, a->b, vals);
            if (e->in_search)
                pend(e, a->table, row, t->ncols, PEND_SET);
            else
                eg__insert(e, t, row, false, e->cur_origin);
            break;
        }
        case AC_DELETE:
        case AC_SUBSUME: {
            eg_table *t = &e->tables[a->table];
            eg_value row[EG_MAX_COLS];
            for (uint32_t k = 0; k < a->nargs; k++)
                row[k] = eg__eval(e, a->args[k], vals);
            pend(e, a->table, row, t->n_in, a->kind == AC_DELETE ? PEND_DELETE : PEND_SUBSUME);
            if (!e->in_search) eg__flush_pending(e);
            break;
        }
        case AC_UNION: {
            eg_value x = eg__eval(e, a->a, vals), y = eg__eval(e, a->b, vals);
            eg__union(e, (uint32_t)x, (uint32_t)y);
            break;
        }
        case AC_PANIC:
            eg__throw(e, LM_ERUNTIME, EG_LOC(a->at), "panic: %s", a->msg);
        case AC_EXPR: {
            const aexpr *x = a->a;
            if (x->kind == AE_TABLE && e->tables[x->table].kind == TK_RELATION) {
                eg_table *t = &e->tables[x->table];
                eg_value row[EG_MAX_COLS];
                for (uint32_t k = 0; k < x->nargs; k++)
                    row[k] = eg__eval(e, x->args[k], vals);
                /* staged like set: applied after this iteration's deletes, as egglog does */
                if (e->in_search)
                    pend(e, x->table, row, t->n_in, PEND_INSERT);
                else
                    eg__lookup_or_insert(e, t, row, e->cur_origin);
            } else {
                (void)eg__eval(e, x, vals);
            }
            break;
        }
        }
    }
}

/* Applies the pending writes: first every delete (of rows that existed when the
 * iteration began), then sets, relation inserts and subsumes in the order they were
 * made. Deleting first matches egglog, where a row both deleted and inserted by one
 * iteration stays. */
static void apply_delete(eg_engine *e, const pending_op *p)
{
    eg_table *t = &e->tables[p->table];
    eg_value key[EG_MAX_COLS];
    memcpy(key, e->pend_vals + p->off, t->n_in * sizeof(eg_value));
    for (uint32_t c = 0; c < t->n_in; c++)
        key[c] = eg__canon(e, t->in_sort[c], key[c]);
    int64_t r = eg__table_lookup(t, key, eg__key_hash(key, t->n_in));
    if (r >= 0 && (t->hi == UINT32_MAX || (uint32_t)r < t->hi)) {
        eg__table_kill(t, (uint32_t)r);
        e->changed = true;
    }
}

static void apply_other(eg_engine *e, const pending_op *p)
{
    eg_table *t = &e->tables[p->table];
    eg_value key[EG_MAX_COLS];
    memcpy(key, e->pend_vals + p->off, (p->op == PEND_SET ? t->ncols : t->n_in) * sizeof(eg_value));
    if (p->op == PEND_SET) {
        eg__insert(e, t, key, false, p->origin);
        return;
    }
    if (p->op == PEND_INSERT) {
        eg__lookup_or_insert(e, t, key, p->origin);
        return;
    }
    for (uint32_t c = 0; c < t->n_in; c++)
        key[c] = eg__canon(e, t->in_sort[c], key[c]);
    uint64_t h = eg__key_hash(key, t->n_in);
    int64_t r = eg__table_lookup(t, key, h);
    if (r < 0) {
        eg__lookup_or_insert(e, t, key, p->origin);
        r = eg__table_lookup(t, key, h);
    }
    if (r >= 0 && !(t->flags[r] & RF_SUBSUMED)) {
        t->flags[r] |= RF_SUBSUMED;
        e->changed = true;
    }
}

/* Applies the pending writes; with `limited`, checks the run's limits every
 * EG_LIMIT_CHECK_MATCHES writes and, at one, drops the writes not yet applied and returns
 * true (the caller makes their rules match again). */
static bool apply_pending(eg_engine *e, bool limited)
{
    bool cut = false;
    if (e->npend) {
        for (uint32_t i = 0; i < e->npend; i++)
            if (e->pend[i].op == PEND_DELETE) apply_delete(e, &e->pend[i]);
        /* apply_other may queue nothing (not in search), but merges may grow e->pend's
         * tables; e->pend itself is not appended to outside the search phase */
        for (uint32_t i = 0; i < e->npend; i++) {
            if (e->pend[i].op != PEND_DELETE) apply_other(e, &e->pend[i]);
            if (limited && (i + 1) % EG_LIMIT_CHECK_MATCHES == 0 && i + 1 < e->npend &&
                eg__limits_hit(e)) {
                cut = true;
                break;
            }
        }
    }
    e->npend = 0;
    e->npend_vals = 0;
    if (e->npset_used) {
        memset(e->pset, 0, e->npset_slots * sizeof *e->pset);
        e->npset_used = 0;
    }
    return cut;
}

void eg__flush_pending(eg_engine *e)
{
    (void)apply_pending(e, false);
}

/* ====================================================================================
 * Iterations
 * ==================================================================================== */

typedef struct {
    rule *r;
} mctx;

static bool on_match(eg_engine *e, void *ctx, eg_value *vals)
{
    rule *r = ((mctx *)ctx)->r;
    r->matches++;
    eg__exec_actions(e, r->acts, r->nacts, vals);
    if (++e->match_tick >= EG_LIMIT_CHECK_MATCHES) {
        e->match_tick = 0;
        if ((e->opt.node_limit || e->opt.mem_limit || e->opt.time_limit_s > 0) && eg__limits_hit(e))
            return false;
    }
    return true;
}

static bool on_until(eg_engine *e, void *ctx, eg_value *vals)
{
    (void)e;
    (void)vals;
    *(bool *)ctx = true;
    return false;
}

static bool until_holds(eg_engine *e, query *until)
{
    bool hit = false;
    eg_value *vals = eg__scoped_alloc(e, (until->nvars + 1) * sizeof(eg_value));
    eg__query_run(e, until, true, 0, true, vals, on_until, &hit);
    eg__scoped_free(e, vals);
    return hit;
}

/* The search of one iteration: every rule of rl[0..nrl) matched, its actions run. A limit
 * reached inside a long primitive (eg__limit_poll) lands here: the rule it interrupted
 * keeps its seen mark, as does every rule after it. */
static void search_rules(eg_engine *e, ruleset *R, const uint32_t *rl, uint32_t nrl, eg_value *vals,
                         uint32_t cur)
{
    uint32_t smark = e->nscoped;
    uint32_t cmd_origin = e->cur_origin;
    jmp_buf jb;
    e->stop_jmp = &jb;
    if (setjmp(jb) == 0) {
        for (uint32_t k = 0; k < nrl && !e->limit_stop; k++) {
            rule *r = &e->rules[rl[k]];
            double r0 = eg__now();
            uint64_t m0 = r->matches;
            mctx mc = {r};
            bool naive = r->naive || e->opt.naive;
            e->cur_origin = r->origin; /* the rows its actions make are the rule's */
            eg__query_run(e, &r->q, naive, r->seen, false, vals, on_match, &mc);
            e->cur_origin = cmd_origin;
            if (!e->limit_stop) r->seen = cur + 1; /* an interrupted rule re-matches later */
            double dt = eg__now() - r0;
            r->time_s += dt;
            R->matches += r->matches - m0;
        }
    } else {
        eg__scoped_unwind(e, smark);
        e->cur_origin = cmd_origin;
    }
    e->stop_jmp = NULL;
}

/* The rules of ruleset rs into out[n..] (a combined ruleset: its members', depth first, in
 * the order given, each rule once; seen marks rules already listed); returns the new n. */
uint32_t eg__ruleset_flatten(const eg_engine *e, uint32_t rs, uint32_t *out, uint8_t *seen,
                             uint32_t n)
{
    const ruleset *R = &e->rulesets[rs];
    for (uint32_t k = 0; k < R->nrules; k++)
        if (!seen[R->rules[k]]) {
            seen[R->rules[k]] = 1;
            out[n++] = R->rules[k];
        }
    for (uint32_t m = 0; m < R->nmembers; m++)
        n = eg__ruleset_flatten(e, R->members[m], out, seen, n);
    return n;
}

/* One iteration of ruleset rs; returns whether the database changed. */
static bool iteration(eg_engine *e, uint32_t rs)
{
    ruleset *R = &e->rulesets[rs];
    double t0 = eg__now();
    /* the rules it runs: its own, or a combined ruleset's members' at this moment */
    uint32_t *const flat =
        R->combined ? eg__scoped_alloc(e, ((size_t)e->nrules + 1) * (sizeof(uint32_t) + 1)) : NULL;
    const uint32_t nrl =
        flat ? eg__ruleset_flatten(e, rs, flat, (uint8_t *)(flat + e->nrules + 1), 0) : R->nrules;
    const uint32_t *const rl = flat ? flat : R->rules;
    uint32_t cur = e->ts;
    e->ts = cur + 1;
    e->changed = false;
    for (uint32_t ti = 0; ti < e->ntables; ti++)
        e->tables[ti].hi = e->tables[ti].nrows;
    e->in_search = true;
    uint32_t maxslots = 1;
    for (uint32_t k = 0; k < nrl; k++)
        if (e->rules[rl[k]].nslots > maxslots) maxslots = e->rules[rl[k]].nslots;
    eg_value *vals = eg__scoped_alloc(e, (maxslots + 1) * sizeof(eg_value));
    uint32_t *old_seen = eg__scoped_alloc(e, (nrl + 1) * sizeof(uint32_t));
    for (uint32_t k = 0; k < nrl; k++)
        old_seen[k] = e->rules[rl[k]].seen;
    search_rules(e, R, rl, nrl, vals, cur);
    e->in_search = false;
    /* deletes see which rows existed when the iteration began; a limit reached while the
     * writes are applied drops the rest, and then every rule of the iteration matches its
     * rows again in a later run */
    bool limited = e->opt.node_limit || e->opt.mem_limit || e->opt.time_limit_s > 0;
    if (apply_pending(e, limited))
        for (uint32_t k = 0; k < nrl; k++)
            e->rules[rl[k]].seen = old_seen[k];
    eg__scoped_free(e, old_seen);
    eg__scoped_free(e, vals);
    if (flat) eg__scoped_free(e, flat);
    for (uint32_t ti = 0; ti < e->ntables; ti++)
        e->tables[ti].hi = UINT32_MAX;
    double t1 = eg__now();
    e->search_s += t1 - t0;
    eg__rebuild_full(e);
    double t2 = eg__now();
    e->rebuild_s += t2 - t1;
    R->time_s += t2 - t0;
    R->iterations++;
    e->iterations++;
    return e->changed;
}

static eg_stop_reason run_ruleset(eg_engine *e, uint32_t rs, uint64_t n, query *until,
                                  bool *changed)
{
    *changed = false;
    e->limit_stop = 0;
    e->limit_ask = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (until && until_holds(e, until)) return e->last_stop = EG_STOP_UNTIL;
        if (e->opt.iter_limit && e->iterations >= e->opt.iter_limit)
            return e->last_stop = EG_STOP_ITER_LIMIT;
        if (e->opt.node_limit && eg_node_count(e) >= e->opt.node_limit)
            return e->last_stop = EG_STOP_NODE_LIMIT;
        if (e->opt.mem_limit && e->mem.bytes >= e->opt.mem_limit)
            return e->last_stop = EG_STOP_MEM_LIMIT;
        if (e->opt.time_limit_s > 0 && eg__now() - e->cmd_start > e->opt.time_limit_s)
            return e->last_stop = EG_STOP_TIME_LIMIT;
        bool c = iteration(e, rs);
        if (e->opt.progress)
            fprintf(e->log, "\r%llu iterations, %llu rows ", (unsigned long long)e->iterations,
                    (unsigned long long)eg_node_count(e));
        if (e->limit_stop) {
            *changed |= c;
            eg_stop_reason why = (eg_stop_reason)e->limit_stop;
            e->limit_stop = 0;
            return e->last_stop = why;
        }
        if (!c) return e->last_stop = EG_STOP_SATURATED;
        *changed = true;
    }
    return e->last_stop = EG_STOP_ITERATIONS;
}

eg_stop_reason eg__run_ruleset(eg_engine *e, uint32_t rs, uint64_t n, query *until, bool *changed)
{
    eg__rebuild(e);
    /* iterations rebuild with full passes: no index to keep up to date, and no list of
     * merged ids to keep (eg__union) */
    eg__uses_drop(e);
    e->dirty_off = true;
    eg_stop_reason why = run_ruleset(e, rs, n, until, changed);
    e->dirty_off = false;
    if (why >= EG_STOP_NODE_LIMIT) e->limit_stopped = true; /* the command reports it */
    return why;
}
