/* eg_api.c: the C API of egraph.h over the engine's internals.
 *
 * Every entry point that can raise an error sets up an error boundary (api_begin/
 * api_end) so internal errors come back as return codes with a message. */
#include "eg_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *eg__slurp(const char *path, size_t *len);
aexpr *eg__compile_expr(eg_engine *e, const sx *s);

static const char *keep_file(eg_engine *e, const char *name)
{
    EG_GROW(e->files, e->capfiles, e->nfiles + 1);
    e->files[e->nfiles++] = eg__strdup(name ? name : "<input>");
    return e->files[e->nfiles - 1];
}

int eg_run_text(eg_engine *e, const char *text, const char *filename, eg_error *err)
{
    eg_error local;
    eg_error *er = err ? err : &local;
    memset(er, 0, sizeof *er);
    const char *fname = keep_file(e, filename);
    sx **forms = NULL;
    uint32_t n = 0;
    if (eg__sx_parse(text, fname, &forms, &n, er)) return er->code;
    uint32_t first = e->nprogs;
    for (uint32_t i = 0; i < n; i++) {
        EG_GROW(e->progs, e->capprogs, e->nprogs + 1);
        e->progs[e->nprogs++] = forms[i];
    }
    eg__free(forms);
    e->err = er;
    int rc = eg__run_program(e, first, n);
    e->err = NULL;
    return rc;
}

int eg_run_file(eg_engine *e, const char *path, eg_error *err)
{
    char *text = eg__slurp(path, NULL);
    if (!text) {
        if (err) {
            err->code = EG_ERR_IO;
            snprintf(err->msg, sizeof err->msg, "%s:1:1: cannot read the file: %s", path,
                     strerror(errno));
        }
        return EG_ERR_IO;
    }
    int rc = eg_run_text(e, text, path, err);
    eg__free(text);
    return rc;
}

int eg_sort_lookup(const eg_engine *e, const char *name)
{
    return eg__sort_find(e, name);
}
int eg_table_lookup(const eg_engine *e, const char *name)
{
    return eg__table_find(e, name);
}

eg_value eg_value_i64(int64_t v)
{
    return (eg_value)v;
}
eg_value eg_value_f64(double v)
{
    eg_value x;
    if (v == 0) v = 0.0;
    memcpy(&x, &v, sizeof x);
    return x;
}
eg_value eg_value_string(eg_engine *e, const char *s)
{
    return eg__intern(e, s, strlen(s));
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
    return eg__str(e, (uint32_t)v);
}

static int arg_error(eg_error *err, const char *fn, const char *msg)
{
    if (err) {
        err->code = EG_ERR_ARG;
        snprintf(err->msg, sizeof err->msg, "%s: %s", fn, msg);
    }
    return EG_ERR_ARG;
}

/* Runs fn(e, ctx) under an error boundary: an internal error comes back as its code. */
typedef void (*api_fn)(eg_engine *e, void *ctx);

static int guard_in(eg_engine *e, api_fn fn, void *ctx)
{
    jmp_buf jb;
    jmp_buf *sj = e->jmp;
    e->jmp = &jb;
    int rc = 0;
    if (setjmp(jb) == 0) {
        fn(e, ctx);
    } else {
        e->npend = 0;
        e->npend_vals = 0;
        e->dirty_off = false;
        rc = e->err->code ? e->err->code : EG_ERR_RUNTIME;
    }
    e->jmp = sj;
    return rc;
}

static int guard(eg_engine *e, eg_error *err, api_fn fn, void *ctx)
{
    eg_error local;
    eg_error *er = err ? err : &local;
    memset(er, 0, sizeof *er);
    eg_error *se = e->err;
    e->err = er;
    int rc = guard_in(e, fn, ctx);
    e->err = se;
    return rc;
}

typedef struct {
    eg_table *t;
    eg_value *row;
    eg_value out;
} ins_ctx;

static void do_add(eg_engine *e, void *c)
{
    ins_ctx *x = c;
    x->out = eg__lookup_or_insert(e, x->t, x->row);
}
static void do_set(eg_engine *e, void *c)
{
    ins_ctx *x = c;
    eg__insert(e, x->t, x->row, false);
}
static void do_rebuild(eg_engine *e, void *c)
{
    (void)c;
    eg__rebuild(e);
}

static int check_args(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_error *err,
                      const char *fn)
{
    if (table < 0 || (uint32_t)table >= e->ntables) return arg_error(err, fn, "no such table");
    eg_table *t = &e->tables[table];
    if (nargs != t->n_in) return arg_error(err, fn, "wrong number of arguments for the table");
    for (size_t i = 0; i < nargs; i++)
        if (eg__is_eq(e, t->in_sort[i]) && args[i] >= e->nids)
            return arg_error(err, fn, "argument is not an e-class id of this engine");
    return 0;
}

int eg_add_term(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_value *out,
                eg_error *err)
{
    int rc = check_args(e, table, args, nargs, err, "eg_add_term");
    if (rc) return rc;
    eg_table *t = &e->tables[table];
    if (t->kind == TK_FUNCTION) return arg_error(err, "eg_add_term", "use eg_set for functions");
    eg_value key[32];
    memcpy(key, args, nargs * sizeof(eg_value));
    ins_ctx x = {t, key, 0};
    rc = guard(e, err, do_add, &x);
    if (!rc && out) *out = x.out;
    return rc;
}

int eg_set(eg_engine *e, int table, const eg_value *args, size_t nargs, eg_value value,
           eg_error *err)
{
    int rc = check_args(e, table, args, nargs, err, "eg_set");
    if (rc) return rc;
    eg_table *t = &e->tables[table];
    if (t->kind != TK_FUNCTION) return arg_error(err, "eg_set", "the table is not a function");
    if (eg__is_eq(e, t->out_sort) && value >= e->nids)
        return arg_error(err, "eg_set", "value is not an e-class id of this engine");
    eg_value row[32];
    memcpy(row, args, nargs * sizeof(eg_value));
    row[nargs] = value;
    ins_ctx x = {t, row, 0};
    return guard(e, err, do_set, &x);
}

int eg_union(eg_engine *e, eg_value a, eg_value b, eg_error *err)
{
    if (a >= e->nids || b >= e->nids) return arg_error(err, "eg_union", "not an e-class id");
    eg__union(e, (uint32_t)a, (uint32_t)b);
    return 0;
}

eg_value eg_find(eg_engine *e, eg_value v)
{
    return v < e->nids ? eg__find(e, (uint32_t)v) : v;
}

int eg_rebuild(eg_engine *e, eg_error *err)
{
    return guard(e, err, do_rebuild, NULL);
}

int eg_run_schedule(eg_engine *e, const char *schedule, eg_stop_reason *why, eg_error *err)
{
    size_t n = strlen(schedule);
    char *text = eg__alloc(n + 32);
    snprintf(text, n + 32, "(run-schedule %s)", schedule);
    int rc = eg_run_text(e, text, "<schedule>", err);
    eg__free(text);
    if (why) *why = e->last_stop;
    return rc;
}

size_t eg_table_count(const eg_engine *e)
{
    return e->ntables;
}
const char *eg_table_name(const eg_engine *e, int t)
{
    return t >= 0 && (uint32_t)t < e->ntables ? e->tables[t].name : NULL;
}
size_t eg_table_arity(const eg_engine *e, int t)
{
    return t >= 0 && (uint32_t)t < e->ntables ? e->tables[t].n_in : 0;
}
int eg_table_has_output(const eg_engine *e, int t)
{
    return t >= 0 && (uint32_t)t < e->ntables ? e->tables[t].has_out : 0;
}
size_t eg_table_size(const eg_engine *e, int t)
{
    return t >= 0 && (uint32_t)t < e->ntables ? e->tables[t].nlive : 0;
}

int eg_table_row(const eg_engine *e, int table, size_t i, eg_value *cols)
{
    if (table < 0 || (uint32_t)table >= e->ntables) return EG_ERR_ARG;
    const eg_table *t = &e->tables[table];
    if (t->nlive == t->nrows) { /* no dead rows: the i-th live row is row i */
        if (i >= t->nrows) return EG_ERR_ARG;
        memcpy(cols, t->cols + i * t->ncols, t->ncols * sizeof(eg_value));
        return 0;
    }
    size_t k = 0;
    for (uint32_t r = 0; r < t->nrows; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        if (k++ == i) {
            memcpy(cols, t->cols + (size_t)r * t->ncols, t->ncols * sizeof(eg_value));
            return 0;
        }
    }
    return EG_ERR_ARG;
}

int eg_table_next_row(const eg_engine *e, int table, size_t *cursor, eg_value *cols)
{
    if (table < 0 || (uint32_t)table >= e->ntables || !cursor) return EG_ERR_ARG;
    const eg_table *t = &e->tables[table];
    for (size_t r = *cursor; r < t->nrows; r++) {
        if (t->flags[r] & RF_DEAD) continue;
        memcpy(cols, t->cols + r * t->ncols, t->ncols * sizeof(eg_value));
        *cursor = r + 1;
        return 1;
    }
    *cursor = t->nrows;
    return 0;
}

int eg_extract(eg_engine *e, int sort, eg_value v, char **term, uint64_t *cost, eg_error *err)
{
    if (sort < 0 || (uint32_t)sort >= e->nsorts)
        return arg_error(err, "eg_extract", "no such sort");
    if (eg__is_eq(e, (uint32_t)sort) && v >= e->nids)
        return arg_error(err, "eg_extract", "not an e-class id");
    int grc = guard(e, err, do_rebuild, NULL);
    if (grc) return grc;
    uint32_t *br, *bt;
    uint64_t *costs = eg__extract_costs(e, &br, &bt);
    uint64_t c = eg__value_cost(e, (uint32_t)sort, v, costs);
    int rc = 0;
    if (c == UINT64_MAX) {
        rc = EG_ERR_RUNTIME;
        if (err) {
            err->code = rc;
            snprintf(err->msg, sizeof err->msg, "eg_extract: the class has no extractable term");
        }
    } else {
        if (cost) *cost = c;
        if (term) {
            char *buf = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&buf, &len);
            eg__print_term(e, m, (uint32_t)sort, v, costs, br, bt);
            fclose(m);
            *term = eg__strdup(buf);
            free(buf);
        }
    }
    eg__free(costs);
    eg__free(br);
    eg__free(bt);
    return rc;
}

void eg_string_free(char *s)
{
    eg__free(s);
}

uint64_t eg_mem_bytes(const eg_engine *e)
{
    return e->mem.bytes;
}

uint64_t eg_mem_peak(const eg_engine *e)
{
    return e->mem.peak;
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

int eg_check_invariants(eg_engine *e, eg_error *err)
{
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
                    if (err) {
                        err->code = EG_ERR_RUNTIME;
                        snprintf(err->msg, sizeof err->msg,
                                 "invariant: table %s row %u column %u holds a non-canonical id",
                                 t->name, r, c);
                    }
                    return EG_ERR_RUNTIME;
                }
            }
            if (t->khash[r] != eg__key_hash(row, t->n_in) ||
                eg__table_lookup(t, row, t->khash[r]) != (int64_t)r) {
                if (err) {
                    err->code = EG_ERR_RUNTIME;
                    snprintf(
                        err->msg, sizeof err->msg,
                        "invariant: table %s row %u is not found by its key (memo out of date or "
                        "duplicate key)",
                        t->name, r);
                }
                return EG_ERR_RUNTIME;
            }
            if (r > 0 && t->ts[r] < t->ts[r - 1]) {
                if (err) {
                    err->code = EG_ERR_RUNTIME;
                    snprintf(err->msg, sizeof err->msg,
                             "invariant: table %s timestamps out of order", t->name);
                }
                return EG_ERR_RUNTIME;
            }
        }
        /* the memo rebuilt from scratch must hold exactly the live rows, at their slots */
        uint32_t inmemo = 0;
        for (uint32_t j = 0; j < t->nslots; j++) {
            uint64_t sl = t->slots[j];
            if (sl == 0 || sl == UINT64_C(0xFFFFFFFF)) continue;
            uint32_t r = (uint32_t)sl - 1;
            if (r >= t->nrows || (t->flags[r] & RF_DEAD) || t->slotpos[r] != j ||
                (sl >> 32) != (t->khash[r] >> 32)) {
                if (err) {
                    err->code = EG_ERR_RUNTIME;
                    snprintf(err->msg, sizeof err->msg,
                             "invariant: table %s memo slot %u points to a dead or misplaced row",
                             t->name, j);
                }
                return EG_ERR_RUNTIME;
            }
            inmemo++;
        }
        if (inmemo != live) live = UINT32_MAX;
        if (live != t->nlive) {
            if (err) {
                err->code = EG_ERR_RUNTIME;
                snprintf(err->msg, sizeof err->msg, "invariant: table %s live count %u, counted %u",
                         t->name, t->nlive, live);
            }
            return EG_ERR_RUNTIME;
        }
    }
    char why[512];
    if (eg__uses_check(e, why, sizeof why) != 0) {
        if (err) {
            err->code = EG_ERR_RUNTIME;
            snprintf(err->msg, sizeof err->msg, "invariant: %s", why);
        }
        return EG_ERR_RUNTIME;
    }
    return 0;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
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
        json_string(f, R->name);
        fprintf(f, ",\"iterations\":%u,\"time_s\":%.6f,\"matches\":%llu,\"rules\":[", R->iterations,
                R->time_s, (unsigned long long)R->matches);
        for (uint32_t k = 0; k < R->nrules; k++) {
            const rule *r = &e->rules[R->rules[k]];
            fputs(k ? ",{\"name\":" : "{\"name\":", f);
            json_string(f, r->name);
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
        json_string(f, e->tables[i].name);
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
            fprintf(f, "  [%u] ts=%u%s (", r, t->ts[r],
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
