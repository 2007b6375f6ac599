/* eg_api.c: the C API of egraph.h over the engine's internals.
 *
 * Every entry point that can raise an error runs under a boundary (eg__guard), so an
 * internal error, including a failed allocation, comes back as its code with the message
 * in the caller's record. An engine that ran out of memory refuses every call at once. */
#include "eg_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The message of a call refused because the engine failed. */
static int refuse_failed(lm_err *err, const char *fn)
{
    return eg__fail(err, LM_ENOMEM, NULL,
                    "%s: the engine ran out of memory in an earlier call (allocating %s); it "
                    "can only be freed now (eg_engine_free)",
                    fn, "memory");
}

int eg__guard(eg_engine *e, lm_err *err, const char *fn, eg_guarded_fn body, void *ctx)
{
    if (e->failed) return refuse_failed(err, fn);
    jmp_buf jb;
    jmp_buf *sj = e->jmp;
    lm_err *se = e->err;
    const sx *sat = e->cur_at;
    uint32_t sorigin = e->cur_origin;
    uint32_t smark = e->nscoped;
    e->jmp = &jb;
    e->err = err;
    e->cur_at = NULL;
    if (!sj) e->cur_origin = 0; /* rows made by API calls: the API's origin */
    int rc = 0;
    if (setjmp(jb) == 0) {
        body(e, ctx);
    } else {
        rc = e->thrown ? e->thrown : LM_ERUNTIME;
        eg__unwind(e, smark);
    }
    e->jmp = sj;
    e->err = se;
    e->cur_at = sat;
    e->cur_origin = sorigin;
    return rc;
}

/* ---- programs ---- */

typedef struct {
    const char *text, *filename;
    uint32_t first, n;
} text_ctx;

static void do_parse(eg_engine *e, void *c)
{
    text_ctx *x = c;
    const char *fname = eg__keep_file(e, x->filename);
    eg__sx_parse(e, x->text, fname, &x->first, &x->n);
}

int eg_run_text(eg_engine *e, const char *text, const char *filename, lm_err *err)
{
    if (!text) return eg__fail(err, LM_EARG, NULL, "eg_run_text: no program text");
    text_ctx x = {text, filename, 0, 0};
    int rc = eg__guard(e, err, "eg_run_text", do_parse, &x);
    if (rc) return rc;
    lm_err *se = e->err;
    e->err = err;
    e->cur_origin = ORIGIN_PENDING;
    rc = eg__run_program(e, x.first, x.n);
    e->cur_origin = 0;
    e->err = se;
    return rc;
}

int eg_run_file(eg_engine *e, const char *path, lm_err *err)
{
    if (e->failed) return refuse_failed(err, "eg_run_file");
    lm_err ferr;
    lm_err_clear(&ferr);
    /* the read is bounded like everything else: by the memory limit when one is set */
    size_t max =
        e->opt.mem_limit && e->opt.mem_limit < LM_READ_MAX ? (size_t)e->opt.mem_limit : LM_READ_MAX;
    /* and a NUL byte is refused, located: the text would end there, the rest unread */
    char *text = lm_read_text(path, max, NULL, &ferr);
    if (!text) {
        lm_err_copy(err, &ferr);
        return err && err->code ? err->code : ferr.code;
    }
    const char *name = path && strcmp(path, "-") == 0 ? "<stdin>" : path;
    int rc = eg_run_text(e, text, name, err);
    free(text);
    return rc;
}

/* ---- names and sorts ---- */

int eg_sort_lookup(const eg_engine *e, const char *name)
{
    return e->failed || !name ? -1 : eg__sort_find(e, name);
}

int eg_table_lookup(const eg_engine *e, const char *name)
{
    return e->failed || !name ? -1 : eg__table_find(e, name);
}

size_t eg_sort_count(const eg_engine *e)
{
    return e->failed ? 0 : e->nsorts;
}

const char *eg_sort_name(const eg_engine *e, int sort)
{
    return !e->failed && sort >= 0 && (uint32_t)sort < e->nsorts ? e->sorts[sort].name : NULL;
}

bool eg_sort_is_eclass(const eg_engine *e, int sort)
{
    return !e->failed && sort >= 0 && (uint32_t)sort < e->nsorts && eg__is_eq(e, (uint32_t)sort);
}

int eg_table_column_sort(const eg_engine *e, int table, size_t col)
{
    if (e->failed || table < 0 || (uint32_t)table >= e->ntables) return -1;
    const eg_table *t = &e->tables[table];
    if (col > t->n_in) return -1;
    return col < t->n_in ? (int)t->in_sort[col] : (int)t->out_sort;
}

int eg_global_get(eg_engine *e, const char *name, int *sort, eg_value *value, lm_err *err)
{
    if (e->failed) return refuse_failed(err, "eg_global_get");
    int32_t g = name ? eg__global_find(e, name) : -1;
    if (g < 0)
        return eg__fail(err, LM_EARG, NULL, "eg_global_get: no global named '%s'",
                        name ? name : "(null)");
    const global *gl = &e->globals[g];
    if (sort) *sort = (int)gl->sort;
    if (value)
        *value = gl->sort < e->nsorts && eg__is_eq(e, gl->sort)
                     ? eg__find(e, (uint32_t)gl->val)
                     : gl->val; /* pairs are canonical after a rebuild */
    return 0;
}

/* ---- values ---- */

eg_value eg_value_i64(int64_t v)
{
    return (eg_value)v;
}
eg_value eg_value_f64(double v)
{
    eg_value x;
    if (v == 0) v = 0.0; /* one zero */
    memcpy(&x, &v, sizeof x);
    return x;
}
eg_value eg_value_bool(bool v)
{
    return v ? 1 : 0;
}

typedef struct {
    const char *s;
    eg_value out;
} str_ctx;

static void do_intern(eg_engine *e, void *c)
{
    str_ctx *x = c;
    x->out = eg__intern(e, x->s, strlen(x->s));
}

int eg_value_string(eg_engine *e, const char *s, eg_value *out, lm_err *err)
{
    if (!s) return eg__fail(err, LM_EARG, NULL, "eg_value_string: no string");
    str_ctx x = {s, 0};
    int rc = eg__guard(e, err, "eg_value_string", do_intern, &x);
    if (!rc && out) *out = x.out;
    return rc;
}
int64_t eg_value_as_i64(eg_value v)
{
    return (int64_t)v;
}
double eg_value_as_f64(eg_value v)
{
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}
const char *eg_value_as_string(const eg_engine *e, eg_value v)
{
    return e->failed || v >= e->nstrs ? "" : eg__str(e, (uint32_t)v);
}

/* ---- building terms ---- */

typedef struct {
    eg_table *t;
    eg_value *row;
    eg_value out;
} ins_ctx;

static void do_add(eg_engine *e, void *c)
{
    ins_ctx *x = c;
    x->out = eg__lookup_or_insert(e, x->t, x->row, 0);
}
static void do_set(eg_engine *e, void *c)
{
    ins_ctx *x = c;
    eg__insert(e, x->t, x->row, false, 0);
}
static void do_rebuild(eg_engine *e, void *c)
{
    (void)c;
    eg__rebuild(e);
}

static int check_args(const eg_engine *e, int table, const eg_value *args, size_t nargs,
                      lm_err *err, const char *fn)
{
    if (e->failed) return refuse_failed(err, fn);
    if (table < 0 || (uint32_t)table >= e->ntables)
        return eg__fail(err, LM_EARG, NULL, "%s: no table with id %d", fn, table);
    const eg_table *t = &e->tables[table];
    if (nargs != t->n_in)
        return eg__fail(err, LM_EARG, NULL, "%s: %s takes %u arguments, got %zu", fn, t->name,
                        t->n_in, nargs);
    if (nargs && !args) return eg__fail(err, LM_EARG, NULL, "%s: no arguments given", fn);
    for (size_t i = 0; i < nargs; i++)
        if (eg__is_eq(e, t->in_sort[i]) && args[i] >= e->nids)
            return eg__fail(err, LM_EARG, NULL,
                            "%s: argument %zu of %s is not an e-class id of this engine", fn, i,
                            t->name);
    return 0;
}

int eg_add_term(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_value *out,
                lm_err *err)
{
    int rc = check_args(e, table, args, nargs, err, "eg_add_term");
    if (rc) return rc;
    eg_table *t = &e->tables[table];
    if (t->kind == TK_FUNCTION)
        return eg__fail(err, LM_EARG, NULL, "eg_add_term: %s is a function; use eg_set", t->name);
    eg_value key[EG_MAX_COLS];
    memcpy(key, args, nargs * sizeof(eg_value));
    ins_ctx x = {t, key, 0};
    rc = eg__guard(e, err, "eg_add_term", do_add, &x);
    if (!rc && out) *out = x.out;
    return rc;
}

int eg_set(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_value value, lm_err *err)
{
    int rc = check_args(e, table, args, nargs, err, "eg_set");
    if (rc) return rc;
    eg_table *t = &e->tables[table];
    if (t->kind != TK_FUNCTION)
        return eg__fail(err, LM_EARG, NULL, "eg_set: %s is not a function", t->name);
    if (eg__is_eq(e, t->out_sort) && value >= e->nids)
        return eg__fail(err, LM_EARG, NULL,
                        "eg_set: the value is not an e-class id of this engine");
    eg_value row[EG_MAX_COLS];
    memcpy(row, args, nargs * sizeof(eg_value));
    row[nargs] = value;
    ins_ctx x = {t, row, 0};
    return eg__guard(e, err, "eg_set", do_set, &x);
}

typedef struct {
    uint32_t a, b;
} union_ctx;

static void do_union(eg_engine *e, void *c)
{
    union_ctx *x = c;
    eg__union(e, x->a, x->b);
}

int eg_union(eg_engine *e, eg_value a, eg_value b, lm_err *err)
{
    if (e->failed) return refuse_failed(err, "eg_union");
    if (a >= e->nids || b >= e->nids)
        return eg__fail(err, LM_EARG, NULL, "eg_union: not an e-class id of this engine");
    union_ctx x = {(uint32_t)a, (uint32_t)b};
    return eg__guard(e, err, "eg_union", do_union, &x);
}

eg_value eg_find(eg_engine *e, eg_value v)
{
    return !e->failed && v < e->nids ? eg__find(e, (uint32_t)v) : v;
}

int eg_rebuild(eg_engine *e, lm_err *err)
{
    return eg__guard(e, err, "eg_rebuild", do_rebuild, NULL);
}

/* The schedule text is parsed into the arena and run as the command
 * (run-schedule <forms>), under the command boundary like any command. */
typedef struct {
    const char *text;
    sx *cmd;
} sched_ctx;

static void do_schedule_parse(eg_engine *e, void *c)
{
    sched_ctx *x = c;
    uint32_t first, n;
    const char *fname = eg__keep_file(e, "<schedule>");
    eg__sx_parse(e, x->text, fname, &first, &n);
    sx *cmd = eg__arena_alloc(e, sizeof *cmd);
    memset(cmd, 0, sizeof *cmd);
    cmd->kind = SX_LIST;
    cmd->line = cmd->col = 1;
    cmd->file = fname;
    cmd->items = eg__arena_alloc(e, (n + 1) * sizeof(sx *));
    sx *h = eg__arena_alloc(e, sizeof *h);
    *h = *cmd;
    h->kind = SX_SYM;
    h->items = NULL;
    h->text = eg__arena_alloc(e, sizeof "run-schedule");
    memcpy(h->text, "run-schedule", sizeof "run-schedule");
    cmd->items[0] = h;
    for (uint32_t i = 0; i < n; i++)
        cmd->items[i + 1] = e->progs[first + i];
    cmd->n = n + 1;
    e->nprogs = first; /* the forms belong to this command now, not to the program */
    x->cmd = cmd;
}

int eg_run_schedule(eg_engine *e, const char *schedule, eg_stop_reason *why, lm_err *err)
{
    if (!schedule) return eg__fail(err, LM_EARG, NULL, "eg_run_schedule: no schedule");
    sched_ctx x = {schedule, NULL};
    int rc = eg__guard(e, err, "eg_run_schedule", do_schedule_parse, &x);
    if (rc) return rc;
    lm_err *se = e->err;
    e->err = err;
    rc = eg__command(e, x.cmd);
    e->err = se;
    if (why) *why = e->last_stop;
    return rc;
}

/* ---- reading tables ---- */

size_t eg_table_count(const eg_engine *e)
{
    return e->failed ? 0 : e->ntables;
}
const char *eg_table_name(const eg_engine *e, int t)
{
    return !e->failed && t >= 0 && (uint32_t)t < e->ntables ? e->tables[t].name : NULL;
}
size_t eg_table_arity(const eg_engine *e, int t)
{
    return !e->failed && t >= 0 && (uint32_t)t < e->ntables ? e->tables[t].n_in : 0;
}
bool eg_table_has_output(const eg_engine *e, int t)
{
    return !e->failed && t >= 0 && (uint32_t)t < e->ntables && e->tables[t].has_out;
}
size_t eg_table_size(const eg_engine *e, int t)
{
    return !e->failed && t >= 0 && (uint32_t)t < e->ntables ? e->tables[t].nlive : 0;
}

static void read_row(const eg_table *t, size_t r, eg_value *cols, eg_row_info *info)
{
    memcpy(cols, t->cols + r * t->ncols, t->ncols * sizeof(eg_value));
    if (info) {
        info->flags = (t->flags[r] & RF_SUBSUMED) ? EG_ROW_SUBSUMED : 0;
        info->origin = t->origin[r];
    }
}

int eg_table_row(const eg_engine *e, int table, size_t i, eg_value *cols, eg_row_info *info,
                 lm_err *err)
{
    if (e->failed) return refuse_failed(err, "eg_table_row");
    if (table < 0 || (uint32_t)table >= e->ntables || !cols)
        return eg__fail(err, LM_EARG, NULL, "eg_table_row: no table with id %d", table);
    const eg_table *t = &e->tables[table];
    if (t->nlive == t->nrows) { /* no dead rows: the i-th live row is row i */
        if (i < t->nrows) {
            read_row(t, i, cols, info);
            return 0;
        }
    } else {
        size_t k = 0;
        for (uint32_t r = 0; r < t->nrows; r++) {
            if (t->flags[r] & RF_DEAD) continue;
            if (k++ == i) {
                read_row(t, r, cols, info);
                return 0;
            }
        }
    }
    return eg__fail(err, LM_EARG, NULL, "eg_table_row: %s has %u live rows, asked for row %zu",
                    t->name, t->nlive, i);
}

bool eg_table_next_row(const eg_engine *e, int table, size_t *cursor, eg_value *cols,
                       eg_row_info *info, lm_err *err)
{
    if (e->failed) {
        refuse_failed(err, "eg_table_next_row");
        return false;
    }
    if (table < 0 || (uint32_t)table >= e->ntables || !cursor || !cols) {
        eg__fail(err, LM_EARG, NULL, "eg_table_next_row: no table with id %d (or no cursor)",
                 table);
        return false;
    }
    const eg_table *t = &e->tables[table];
    for (size_t r = *cursor; r < t->nrows; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        read_row(t, r, cols, info);
        *cursor = r + 1;
        return true;
    }
    *cursor = t->nrows;
    return false;
}

/* ---- provenance ---- */

int eg_origin_get(const eg_engine *e, uint32_t origin, eg_origin *out, lm_err *err)
{
    if (e->failed) return refuse_failed(err, "eg_origin_get");
    if (origin >= e->norigins || !out)
        return eg__fail(err, LM_EARG, NULL, "eg_origin_get: no origin with id %u", origin);
    const origin_rec *o = &e->origins[origin];
    out->kind = o->kind;
    out->name = o->name;
    out->file = o->at ? o->at->file : NULL;
    out->line = o->at ? o->at->line : 0;
    out->col = o->at ? o->at->col : 0;
    return 0;
}

int eg_row_origin(eg_engine *e, int table, const eg_value *args, size_t nargs, uint32_t *origin,
                  lm_err *err)
{
    int rc = check_args(e, table, args, nargs, err, "eg_row_origin");
    if (rc) return rc;
    const eg_table *t = &e->tables[table];
    eg_value key[EG_MAX_COLS];
    for (size_t c = 0; c < nargs; c++)
        key[c] = eg__is_eq(e, t->in_sort[c]) ? eg__find(e, (uint32_t)args[c]) : args[c];
    int64_t r = eg__table_lookup(t, key, eg__key_hash(key, t->n_in));
    if (r < 0)
        return eg__fail(err, LM_EARG, NULL, "eg_row_origin: %s has no row with these inputs",
                        t->name);
    if (origin) *origin = t->origin[r];
    return 0;
}

/* ---- extraction ---- */

typedef struct {
    uint32_t sort;
    eg_value v;
    char **term;
    uint64_t *cost;
    char *buf; /* the term's text (open_memstream: libc) */
} extract_ctx;

static void do_extract(eg_engine *e, void *c)
{
    extract_ctx *x = c;
    eg__rebuild(e);
    eg_costs costs;
    eg__costs_compute(e, &costs);
    eg_value v = eg__canon(e, x->sort, x->v);
    uint64_t cost = eg__value_cost(e, x->sort, v, costs.cost);
    if (cost == UINT64_MAX)
        eg__throw(e, LM_ERUNTIME, NULL, "eg_extract: the class has no extractable term");
    if (x->cost) *x->cost = cost;
    if (x->term) {
        size_t len = 0;
        FILE *m = open_memstream(&x->buf, &len);
        if (!m) eg__oom(e, 0);
        eg__print_term(e, m, x->sort, v, &costs);
        if (fclose(m) != 0 || !x->buf) eg__oom(e, len);
    }
    eg__costs_free(e, &costs);
}

int eg_extract(eg_engine *e, int sort, eg_value v, char **term, uint64_t *cost, lm_err *err)
{
    if (term) *term = NULL;
    if (e->failed) return refuse_failed(err, "eg_extract");
    if (sort < 0 || (uint32_t)sort >= e->nsorts)
        return eg__fail(err, LM_EARG, NULL, "eg_extract: no sort with id %d", sort);
    if (eg__is_eq(e, (uint32_t)sort) && v >= e->nids)
        return eg__fail(err, LM_EARG, NULL, "eg_extract: not an e-class id of this engine");
    extract_ctx x = {(uint32_t)sort, v, term, cost, NULL};
    int rc = eg__guard(e, err, "eg_extract", do_extract, &x);
    if (rc) {
        free(x.buf);
        return rc;
    }
    if (term) *term = x.buf;
    return 0;
}

void eg_string_free(char *s)
{
    free(s); /* eg_extract's text comes from open_memstream */
}

uint64_t eg_mem_bytes(const eg_engine *e)
{
    return e->mem.bytes;
}

uint64_t eg_mem_peak(const eg_engine *e)
{
    return e->mem.peak;
}

void eg_engine_set_time_limit(eg_engine *e, double seconds)
{
    e->opt.time_limit_s = seconds > 0 ? seconds : 0; /* NaN compares false: none */
}

double eg_engine_time_limit(const eg_engine *e)
{
    return e->opt.time_limit_s;
}

uint64_t eg_alloc_count(const eg_engine *e)
{
    return e->nalloc;
}

eg_stop_reason eg_last_stop(const eg_engine *e)
{
    return e->last_stop;
}

void eg_print_stats(const eg_engine *e, FILE *f)
{
    fprintf(f, "iterations: %llu  search+apply: %.3fs  rebuild: %.3fs\n",
            (unsigned long long)e->iterations, e->search_s, e->rebuild_s);
    fprintf(f, "rebuild passes: %llu full, %llu indexed\n", (unsigned long long)e->passes_full,
            (unsigned long long)e->passes_indexed);
    for (uint32_t i = 0; i < e->nrulesets; i++) {
        const ruleset *R = &e->rulesets[i];
        if (!R->iterations) continue;
        fprintf(f, "ruleset %s: %u iterations, %.3fs, %llu matches\n",
                R->name[0] ? R->name : "(default)", R->iterations, R->time_s,
                (unsigned long long)R->matches);
        for (uint32_t k = 0; k < R->nrules; k++) {
            const rule *r = &e->rules[R->rules[k]];
            fprintf(f, "  rule %s: %.3fs, %llu matches\n", r->name, r->time_s,
                    (unsigned long long)r->matches);
        }
    }
    uint64_t total = 0;
    fprintf(f, "tables:\n");
    for (uint32_t i = 0; i < e->ntables; i++) {
        if (e->tables[i].hidden) continue;
        fprintf(f, "  %s: %u\n", e->tables[i].name, e->tables[i].nlive);
        total += e->tables[i].nlive;
    }
    fprintf(f, "total rows: %llu\n", (unsigned long long)total);
    fprintf(f, "engine memory: %.1f MiB (peak %.1f MiB)\n", (double)e->mem.bytes / 1048576.0,
            (double)e->mem.peak / 1048576.0);
}

static void do_check(eg_engine *e, void *ctx)
{
    (void)ctx;
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        eg_table *t = &e->tables[ti];
        uint32_t live = 0;
        for (uint32_t r = 0; r < t->nrows; r++) {
            if (t->flags[r] & RF_DEAD) continue;
            live++;
            const eg_value *row = t->cols + (size_t)r * t->ncols;
            for (uint32_t c = 0; c < t->ncols; c++) {
                uint32_t so = c < t->n_in ? t->in_sort[c] : t->out_sort;
                if (eg__is_eq(e, so) && eg__find(e, (uint32_t)row[c]) != row[c]) {
                    eg__throw(e, LM_EVERIFY, NULL,
                              "invariant: table %s row %u column %u holds a non-canonical id",
                              t->name, r, c);
                }
            }
            if (eg__table_lookup(t, row, eg__key_hash(row, t->n_in)) != (int64_t)r) {
                eg__throw(e, LM_EVERIFY, NULL,
                          "invariant: table %s row %u is not found by its key (memo out of date or "
                          "duplicate key)",
                          t->name, r);
            }
            if (r > 0 && eg__row_ts(t, r) < eg__row_ts(t, r - 1)) {
                eg__throw(e, LM_EVERIFY, NULL, "invariant: table %s timestamps out of order",
                          t->name);
            }
        }
        /* the epochs: strictly increasing timestamps and first rows, all within the rows */
        for (uint32_t k = 0; k < t->nep; k++) {
            if ((k > 0 && (t->ep_ts[k] <= t->ep_ts[k - 1] || t->ep_row[k] <= t->ep_row[k - 1])) ||
                t->ep_row[k] >= t->nrows || (k == 0 && t->ep_row[0] != 0)) {
                eg__throw(e, LM_EVERIFY, NULL,
                          "invariant: table %s timestamp epoch %u is out of "
                          "order",
                          t->name, k);
            }
        }
        /* the memo rebuilt from scratch must hold exactly the live rows, at their slots */
        uint32_t inmemo = 0;
        for (uint32_t j = 0; j < t->nslots; j++) {
            uint64_t sl = t->slots[j];
            if (sl == 0 || sl == UINT64_C(0xFFFFFFFF)) continue;
            uint32_t r = (uint32_t)sl - 1;
            if (r >= t->nrows || (t->flags[r] & RF_DEAD) ||
                (sl >> 32) != (eg__key_hash(t->cols + (size_t)r * t->ncols, t->n_in) >> 32)) {
                eg__throw(e, LM_EVERIFY, NULL,
                          "invariant: table %s memo slot %u points to a dead or misplaced row",
                          t->name, j);
            }
            inmemo++;
        }
        if (inmemo != live) live = UINT32_MAX;
        if (live != t->nlive) {
            eg__throw(e, LM_EVERIFY, NULL, "invariant: table %s live count %u, counted %u", t->name,
                      t->nlive, live);
        }
    }
    char why[512];
    if (eg__uses_check(e, why, sizeof why) != 0) {
        eg__throw(e, LM_EVERIFY, NULL, "invariant: %s", why);
    }
}

int eg_check_invariants(eg_engine *e, lm_err *err)
{
    return eg__guard(e, err, "eg_check_invariants", do_check, NULL);
}

void eg_print_stats_json(const eg_engine *e, FILE *f)
{
    fprintf(f, "{\"iterations\":%llu,\"search_s\":%.6f,\"rebuild_s\":%.6f,\"rulesets\":[",
            (unsigned long long)e->iterations, e->search_s, e->rebuild_s);
    bool first = true;
    for (uint32_t i = 0; i < e->nrulesets; i++) {
        const ruleset *R = &e->rulesets[i];
        if (!R->iterations) continue;
        fputs(first ? "{\"name\":" : ",{\"name\":", f);
        first = false;
        eg__json_str(f, R->name);
        fprintf(f, ",\"iterations\":%u,\"time_s\":%.6f,\"matches\":%llu,\"rules\":[", R->iterations,
                R->time_s, (unsigned long long)R->matches);
        for (uint32_t k = 0; k < R->nrules; k++) {
            const rule *r = &e->rules[R->rules[k]];
            fputs(k ? ",{\"name\":" : "{\"name\":", f);
            eg__json_str(f, r->name);
            fprintf(f, ",\"time_s\":%.6f,\"matches\":%llu}", r->time_s,
                    (unsigned long long)r->matches);
        }
        fputs("]}", f);
    }
    fputs("],\"tables\":[", f);
    uint64_t total = 0;
    first = true;
    for (uint32_t i = 0; i < e->ntables; i++) {
        if (e->tables[i].hidden) continue;
        fputs(first ? "{\"name\":" : ",{\"name\":", f);
        first = false;
        eg__json_str(f, e->tables[i].name);
        fprintf(f, ",\"rows\":%u}", e->tables[i].nlive);
        total += e->tables[i].nlive;
    }
    fprintf(f, "],\"rows\":%llu,\"mem_bytes\":%llu,\"mem_peak_bytes\":%llu}\n",
            (unsigned long long)total, (unsigned long long)e->mem.bytes,
            (unsigned long long)e->mem.peak);
}

void eg_dump(eg_engine *e, FILE *f)
{
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        const eg_table *t = &e->tables[ti];
        fprintf(f, "table %s (%s, %u inputs%s): %u live of %u rows\n", t->name,
                t->kind == TK_CONSTRUCTOR ? "constructor"
                : t->kind == TK_FUNCTION  ? "function"
                                          : "relation",
                t->n_in, t->has_out ? " + output" : "", t->nlive, t->nrows);
        for (uint32_t r = 0; r < t->nrows; r++) {
            if (t->flags[r] & RF_DEAD) continue;
            const eg_value *row = t->cols + (size_t)r * t->ncols;
            fprintf(f, "  [%u] ts=%u%s (", r, eg__row_ts(t, r),
                    (t->flags[r] & RF_SUBSUMED) ? " subsumed" : "");
            for (uint32_t c = 0; c < t->ncols; c++) {
                uint32_t so = c < t->n_in ? t->in_sort[c] : t->out_sort;
                if (c == t->n_in) fputs(" ->", f);
                if (eg__is_eq(e, so))
                    fprintf(f, " #%u", eg__find(e, (uint32_t)row[c]));
                else {
                    fputc(' ', f);
                    eg__print_value(e, f, so, row[c]);
                }
            }
            fputs(" )\n", f);
        }
    }
    uint32_t roots = 0;
    for (uint32_t i = 0; i < e->nids; i++)
        if (eg__find(e, i) == i) roots++;
    fprintf(f, "e-classes: %u (of %u ids)\n", roots, e->nids);
}
