/* eg_cmd.c: top-level commands of the rules language and schedules.
 *
 * Each command runs inside an error boundary (guarded): an error raised anywhere below
 * (eg__throw) lands here, the command's compile scratch, scoped buffers and pending
 * writes are dropped, and the command returns its error code. Commands before it keep
 * their effects. A command is also the unit of the time limit (eg_options.time_limit_s
 * bounds each top-level run or run-schedule as a whole) and of provenance (the rows a
 * command inserts outside rules carry its origin). */
#include "eg_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static _Noreturn void type_error(eg_engine *e, const sx *at, const char *msg)
{
    eg__throw(e, LM_ETYPE, EG_LOC(at), "%s", msg);
}

typedef eg_scratch scratch;

static void scratch_free(scratch *s)
{
    if (s->q) {
        eg__query_free(s->q);
        eg__free(s->q);
    }
    eg__actions_free(s->acts, s->nacts);
    eg__aexpr_free(s->ex);
    eg__free(s->vals);
    free(s->text);
    eg__free(s->fields);
    memset(s, 0, sizeof *s);
}

static void exec_command(eg_engine *e, const sx *s, scratch *sc);

/* Runs one command under its own boundary. Its scratch lives in the engine, one per
 * nesting level (include and fail run commands inside commands), not in this frame: it
 * changes between setjmp and longjmp, and the engine's copy is what the unwinding reads. */
static int guarded(eg_engine *e, const sx *s)
{
    if (e->failed)
        return eg__fail(e->err, LM_ENOMEM, EG_LOC(s),
                        "the engine ran out of memory in an earlier call; free it with "
                        "eg_engine_free");
    if (e->depth >= EG_MAX_NESTING)
        return eg__fail(e->err, LM_ELIMIT, EG_LOC(s),
                        "commands nested too deeply (include or fail more than %d levels "
                        "deep; does a file include itself?)",
                        EG_MAX_NESTING);
    jmp_buf jb;
    jmp_buf *saved = e->jmp;
    const sx *saved_at = e->cur_at;
    uint32_t saved_origin = e->cur_origin;
    double saved_start = e->cmd_start;
    uint32_t smark = e->nscoped; /* scoped buffers open around this command stay open */
    scratch *sc = &e->scratch[e->depth++];
    memset(sc, 0, sizeof *sc);
    e->jmp = &jb;
    e->cur_at = s; /* errors without a better location name the command */
    e->cur_origin = ORIGIN_PENDING;
    e->cmd_start = eg__now();
    int rc = 0;
    if (setjmp(jb) == 0) {
        exec_command(e, s, sc);
    } else {
        rc = e->thrown ? e->thrown : LM_ERUNTIME;
        eg__unwind(e, smark);
    }
    scratch_free(sc);
    e->depth--;
    e->jmp = saved;
    e->cur_at = saved_at;
    e->cur_origin = saved_origin;
    e->cmd_start = saved_start;
    return rc;
}

void eg__unwind(eg_engine *e, uint32_t smark)
{
    eg__cc_abort(e);
    eg__scoped_unwind(e, smark);
    e->npend = 0;
    e->npend_vals = 0;
    if (e->npset_used) {
        memset(e->pset, 0, e->npset_slots * sizeof *e->pset);
        e->npset_used = 0;
    }
    e->nsxstack = 0;
    e->in_search = false;
    e->in_query_prim = false;
    e->stop_jmp = NULL;
    e->dirty_off = false;
    for (uint32_t i = 0; i < e->ntables; i++)
        e->tables[i].hi = UINT32_MAX;
}

int eg__command(eg_engine *e, const sx *form)
{
    return guarded(e, form);
}

int eg__run_program(eg_engine *e, uint32_t first, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int rc = guarded(e, e->progs[first + i]);
        if (rc) return rc;
    }
    return 0;
}

/* ---- schedules ---- */

static bool run_cmd(eg_engine *e, const sx *s, uint32_t from, scratch *sc);

static bool sched(eg_engine *e, const sx *s, scratch *sc);

/* A limit that stopped a run stops the whole schedule: e->limit_stopped. */
static bool sched_seq(eg_engine *e, const sx *s, uint32_t from, scratch *sc)
{
    bool any = false;
    for (uint32_t i = from; i < s->n && !e->limit_stopped; i++)
        any |= sched(e, s->items[i], sc);
    return any;
}

static bool sched(eg_engine *e, const sx *s, scratch *sc)
{
    if (s->kind == SX_SYM) {
        int32_t rs = eg__ruleset_find(e, s->text);
        if (rs < 0) type_error(e, s, "unknown ruleset in schedule");
        bool ch;
        eg__run_ruleset(e, (uint32_t)rs, 1, NULL, &ch);
        return ch;
    }
    const char *h = eg__sx_head(s);
    if (!h)
        type_error(e, s,
                   "expected a schedule: a ruleset, (run ...), (saturate ...), "
                   "(seq ...) or (repeat n ...)");
    if (strcmp(h, "saturate") == 0) {
        bool any = false;
        while (!e->limit_stopped && sched_seq(e, s, 1, sc))
            any = true;
        return any;
    }
    if (strcmp(h, "seq") == 0) return sched_seq(e, s, 1, sc);
    if (strcmp(h, "repeat") == 0) {
        if (s->n < 2 || s->items[1]->kind != SX_INT || s->items[1]->i < 0)
            type_error(e, s, "(repeat n schedules...) expects a count");
        bool any = false;
        for (int64_t i = 0; i < s->items[1]->i && !e->limit_stopped; i++) {
            bool c = sched_seq(e, s, 2, sc);
            any |= c;
            if (!c) break;
        }
        return any;
    }
    if (strcmp(h, "run") == 0) return run_cmd(e, s, 1, sc);
    type_error(e, s, "unknown schedule form");
}

/* The line a run or a schedule stopped by a limit writes on the log (the same for both). */
static void report_stop(eg_engine *e)
{
    eg_stop_reason why = e->last_stop;
    if (why == EG_STOP_MEM_LIMIT && e->limit_ask)
        fprintf(e->log,
                "run stopped: memory limit reached (a primitive asked for %llu bytes with %llu "
                "held, limit %llu; %llu rows, %llu iterations); results so far kept\n",
                (unsigned long long)e->limit_ask, (unsigned long long)e->mem.bytes,
                (unsigned long long)e->opt.mem_limit, (unsigned long long)eg_node_count(e),
                (unsigned long long)e->iterations);
    else if (why == EG_STOP_MEM_LIMIT)
        fprintf(e->log,
                "run stopped: memory limit reached (%llu bytes held, limit %llu; %llu rows, "
                "%llu iterations); results so far kept\n",
                (unsigned long long)e->mem.bytes, (unsigned long long)e->opt.mem_limit,
                (unsigned long long)eg_node_count(e), (unsigned long long)e->iterations);
    else if (why == EG_STOP_NODE_LIMIT || why == EG_STOP_TIME_LIMIT || why == EG_STOP_ITER_LIMIT)
        fprintf(e->log, "run stopped: %s (%llu rows, %llu iterations); results so far kept\n",
                why == EG_STOP_NODE_LIMIT   ? "node limit reached"
                : why == EG_STOP_TIME_LIMIT ? "time limit reached"
                                            : "iteration limit reached",
                (unsigned long long)eg_node_count(e), (unsigned long long)e->iterations);
}

/* (run [ruleset] [n] [:until facts...]) */
static bool run_cmd(eg_engine *e, const sx *s, uint32_t from, scratch *sc)
{
    uint32_t rs = 0;
    uint64_t n = 1;
    uint32_t i = from;
    if (i < s->n && s->items[i]->kind == SX_SYM && s->items[i]->text[0] != ':') {
        int32_t r = eg__ruleset_find(e, s->items[i]->text);
        if (r < 0) type_error(e, s->items[i], "unknown ruleset");
        rs = (uint32_t)r;
        i++;
    }
    if (i < s->n && s->items[i]->kind == SX_INT) {
        if (s->items[i]->i < 0) type_error(e, s->items[i], "iteration count must be >= 0");
        n = (uint64_t)s->items[i]->i;
        i++;
    }
    query *until = NULL;
    if (i < s->n && eg__sx_is(s->items[i], ":until")) {
        sc->q = eg__compile_facts(e, (const sx *const *)s->items + i + 1, s->n - i - 1);
        until = sc->q;
        i = s->n;
    }
    if (i < s->n) type_error(e, s->items[i], "unexpected argument to run");
    bool ch;
    eg__run_ruleset(e, rs, n, until, &ch);
    if (until) {
        eg__query_free(sc->q);
        eg__free(sc->q);
        sc->q = NULL;
    }
    return ch;
}

/* ---- check ---- */

static bool on_any(eg_engine *e, void *ctx, eg_value *vals)
{
    (void)e;
    (void)vals;
    *(bool *)ctx = true;
    return false;
}

static void cmd_check(eg_engine *e, const sx *s, scratch *sc)
{
    eg__rebuild(e);
    sc->q = eg__compile_facts(e, (const sx *const *)s->items + 1, s->n - 1);
    sc->vals = eg__calloc(e, sc->q->nvars + 1, sizeof(eg_value));
    bool hit = false;
    eg__query_run(e, sc->q, true, 0, true, sc->vals, on_any, &hit);
    if (!hit) eg__throw(e, LM_ERUNTIME, EG_LOC(s), "check failed: no match for the facts");
}

/* ---- printing ---- */

static int cmp_name(const void *a, const void *b)
{
    const eg_table *x = *(const eg_table *const *)a, *y = *(const eg_table *const *)b;
    return strcmp(x->name, y->name);
}

static void print_size(eg_engine *e, const sx *s)
{
    eg__rebuild(e);
    if (s->n >= 2) {
        int32_t ti = s->items[1]->kind == SX_SYM ? eg__table_find(e, s->items[1]->text) : -1;
        if (ti < 0) type_error(e, s->items[1], "unknown table in print-size");
        fprintf(e->out, "%u\n", e->tables[ti].nlive);
        return;
    }
    eg_table **ts = eg__scoped_alloc(e, (e->ntables + 1) * sizeof(eg_table *));
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->ntables; i++)
        if (!e->tables[i].hidden) ts[n++] = &e->tables[i];
    qsort(ts, n, sizeof *ts, cmp_name);
    fputc('(', e->out);
    for (uint32_t i = 0; i < n; i++)
        fprintf(e->out, "%s(%s %u)", i ? "\n " : "", ts[i]->name, ts[i]->nlive);
    fputs(")\n", e->out);
    eg__scoped_free(e, ts);
}

static void print_function(eg_engine *e, const sx *s)
{
    eg__rebuild(e);
    if (s->n < 2 || s->items[1]->kind != SX_SYM)
        type_error(e, s, "(print-function name [n]) expected");
    int32_t ti = eg__table_find(e, s->items[1]->text);
    if (ti < 0) type_error(e, s->items[1], "unknown function in print-function");
    int64_t lim = -1;
    if (s->n >= 3 && s->items[2]->kind == SX_INT) lim = s->items[2]->i;
    FILE *f = e->opt.snapshot ? e->log : e->out;
    eg_table *t = &e->tables[ti];
    /* e-class values print as their cheapest term, as egglog does */
    eg_costs costs;
    eg__costs_compute(e, &costs);
    fputs("(\n", f);
    int64_t k = 0;
    for (uint32_t r = 0; r < t->nrows && (lim < 0 || k < lim); r++) {
        if (t->flags[r] & RF_DEAD) continue;
        const eg_value *row = t->cols + (size_t)r * t->ncols;
        for (int pass = 0; pass < (t->has_out ? 1 : 2); pass++) {
            if (pass)
                fputs(" -> ", f);
            else
                fputs("   ", f);
            fprintf(f, "(%s", t->name);
            for (uint32_t c = 0; c < t->n_in; c++) {
                fputc(' ', f);
                eg__print_term(e, f, t->in_sort[c], row[c], &costs);
            }
            fputc(')', f);
        }
        if (t->has_out) {
            fputs(" -> ", f);
            eg__print_term(e, f, t->out_sort, row[t->n_in], &costs);
        }
        fputc('\n', f);
        k++;
    }
    fputs(")\n", f);
    eg__costs_free(e, &costs);
}

typedef struct {
    uint64_t cost;
    uint32_t table, row;
} variant;

static int cmp_variant(const void *a, const void *b)
{
    const variant *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    if (x->table != y->table) return x->table < y->table ? -1 : 1;
    return x->row < y->row ? -1 : (x->row > y->row);
}

/* (extract e n): up to n e-nodes of e's class, cheapest first, children at their best. */
static void print_variants(eg_engine *e, eg_value v, int64_t n, const eg_costs *costs)
{
    uint32_t cls = eg__find(e, (uint32_t)v);
    uint32_t nv = 0, cap = 64;
    variant *vs = eg__scoped_alloc(e, cap * sizeof *vs);
    for (eg_rowpos p = {0, 0}; eg__next_extractable(e, &p); p.row++) {
        const eg_table *t = &e->tables[p.table];
        const eg_value *row = t->cols + (size_t)p.row * t->ncols;
        if (eg__find(e, (uint32_t)row[t->n_in]) != cls) continue;
        uint64_t c = eg__node_cost(e, t, row, costs->cost);
        if (c == UINT64_MAX) continue;
        if (nv == cap) vs = eg__scoped_grow(e, vs, cap *= 2, sizeof *vs);
        vs[nv++] = (variant){c, p.table, p.row};
    }
    qsort(vs, nv, sizeof *vs, cmp_variant);
    fputs("(\n", e->out);
    for (uint32_t i = 0; i < nv && (int64_t)i < n; i++) {
        eg_table *t = &e->tables[vs[i].table];
        const eg_value *row = t->cols + (size_t)vs[i].row * t->ncols;
        fprintf(e->out, "   (%s", t->name);
        for (uint32_t k = 0; k < t->n_in; k++) {
            fputc(' ', e->out);
            eg__print_term(e, e->out, t->in_sort[k], row[k], costs);
        }
        fputs(")\n", e->out);
    }
    fputs(")\n", e->out);
    eg__scoped_free(e, vs);
}

static void cmd_extract(eg_engine *e, const sx *s, scratch *sc)
{
    if (s->n < 2) type_error(e, s, "(extract expr [n]) expected");
    sc->ex = eg__compile_expr(e, s->items[1]);
    eg_value v = eg__eval(e, sc->ex, NULL);
    eg__rebuild(e);
    uint32_t sort = sc->ex->sort;
    v = eg__canon(e, sort, v);
    eg_costs costs;
    eg__costs_compute(e, &costs);
    uint64_t c = eg__value_cost(e, sort, v, costs.cost);
    if (c == UINT64_MAX)
        eg__throw(e, LM_ERUNTIME, EG_LOC(s), "extract: no extractable term for this value");
    /* variants of a container or primitive value: egglog returns the one term */
    bool variants = s->n >= 3 && eg__is_eq(e, sort);
    if (e->opt.snapshot) {
        if (!variants) fprintf(e->out, "(extraction-costs %llu)\n", (unsigned long long)c);
    } else if (!variants || !eg__is_eq(e, sort)) {
        eg__print_term(e, e->out, sort, v, &costs);
        fputc('\n', e->out);
    } else {
        print_variants(e, v, s->items[2]->kind == SX_INT ? s->items[2]->i : 1, &costs);
    }
    eg__costs_free(e, &costs);
}

/* ---- let, input, include ---- */

static void cmd_let(eg_engine *e, const sx *s, scratch *sc)
{
    if (s->n != 3 || s->items[1]->kind != SX_SYM) type_error(e, s, "(let name expr) expected");
    const char *name = s->items[1]->text;
    if (eg__global_find(e, name) >= 0)
        eg__throw(e, LM_ETYPE, EG_LOC(s->items[1]),
                  "global %s is already defined; globals cannot be redefined", name);
    if (eg__table_find(e, name) >= 0)
        eg__throw(e, LM_ETYPE, EG_LOC(s->items[1]), "'%s' is already the name of a table", name);
    sc->ex = eg__compile_expr(e, s->items[2]);
    eg_value v = eg__eval(e, sc->ex, NULL);
    EG_GROW(e, e->globals, e->capglobals, e->nglobals + 1);
    global *g = &e->globals[e->nglobals];
    g->name = eg__strdup(e, name);
    g->sort = sc->ex->sort;
    g->val = v;
    e->nglobals++;
    eg__rebuild(e);
}

/* Reads a file named by a program (include, input) into the scratch; an unreadable file,
 * a directory or standard input ("-") given by name is a located LM_EIO. */
static char *read_named_file(eg_engine *e, const sx *at, const char *what, scratch *sc)
{
    lm_err ferr;
    lm_err_clear(&ferr);
    free(sc->text);
    /* bounded by the memory limit when one is set, else by base's LM_READ_MAX */
    size_t max = e->opt.mem_limit && e->opt.mem_limit < LM_READ_MAX ? (size_t)e->opt.mem_limit
                                                                     : LM_READ_MAX;
    /* a NUL byte is refused (lm_read_text): the text would end there, the rest unread */
    sc->text = lm_read_text(at->text, max, NULL, &ferr);
    /* a failed read leaves the engine as it was: out of memory here is the read's (its
     * message says how many bytes), not the engine's, which stays usable */
    if (!sc->text)
        eg__throw(e, ferr.code ? ferr.code : LM_EIO, EG_LOC(at), "cannot read %s file '%s': %s", what,
                  at->text, ferr.msg[0] ? ferr.msg : "unreadable");
    return sc->text;
}

static void parse_field(eg_engine *e, const sx *at, uint32_t sort, char *f, eg_value *out,
                        uint32_t line)
{
    size_t l = strlen(f);
    if (l >= 2 && f[0] == '"' && f[l - 1] == '"') {
        f[l - 1] = 0;
        f++;
    }
    char *end;
    switch (sort) {
    case SORT_I64:
        errno = 0;
        *out = (eg_value)strtoll(f, &end, 10);
        if (*end || errno || !*f) goto bad;
        return;
    case SORT_F64: {
        double d = strtod(f, &end);
        if (*end || !*f) goto bad;
        *out = eg_value_f64(d);
        return;
    }
    case SORT_STRING:
        *out = eg__intern(e, f, strlen(f));
        return;
    case SORT_BOOL:
        if (strcmp(f, "true") == 0)
            *out = 1;
        else if (strcmp(f, "false") == 0)
            *out = 0;
        else
            goto bad;
        return;
    default:
        break;
    }
bad:
    eg__throw(e, LM_ERUNTIME, EG_LOC(at), "input line %u: cannot read '%.200s' as %s", line, f,
              e->sorts[sort].name);
}

/* (input table "file"): one row per non-empty line, its fields separated by tabs (whatever
 * the file's extension, as egglog reads it), any number of fields per line. */
static void cmd_input(eg_engine *e, const sx *s, scratch *sc)
{
    if (s->n != 3 || s->items[1]->kind != SX_SYM || s->items[2]->kind != SX_STR)
        type_error(e, s, "(input table \"file\") expected");
    int32_t ti = eg__table_find(e, s->items[1]->text);
    if (ti < 0) type_error(e, s->items[1], "unknown table in input");
    eg_table *t = &e->tables[ti];
    if (t->kind == TK_CONSTRUCTOR) type_error(e, s, "input cannot fill a constructor");
    for (uint32_t c = 0; c < t->ncols; c++)
        if (eg__is_eq(e, eg__col_sort(t, c)))
            type_error(e, s, "input needs a table whose columns are primitive sorts");
    char *text = read_named_file(e, s->items[2], "input", sc);
    uint32_t line = 0;
    char *p = text;
    while (*p) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        line++;
        size_t l = strlen(p);
        if (l && p[l - 1] == '\r') p[--l] = 0;
        if (l) {
            uint32_t nf = 0;
            for (char *q = p;;) { /* split in place; the scratch holds the field pointers */
                if (nf == sc->capfields) {
                    uint32_t nc = sc->capfields ? sc->capfields * 2 : 16;
                    sc->fields = eg__array(e, sc->fields, nc, sizeof(char *));
                    sc->capfields = nc;
                }
                sc->fields[nf++] = q;
                char *tab = strchr(q, '\t');
                if (!tab) break;
                *tab = 0;
                q = tab + 1;
            }
            if (nf != t->ncols)
                eg__throw(e, LM_ERUNTIME, EG_LOC(s), "input line %u has %u fields; %s needs %u", line, nf,
                          t->name, t->ncols);
            eg_value row[EG_MAX_COLS];
            for (uint32_t c = 0; c < nf; c++)
                parse_field(e, s, eg__col_sort(t, c), sc->fields[c], &row[c], line);
            if (t->kind == TK_RELATION)
                eg__lookup_or_insert(e, t, row, e->cur_origin);
            else
                eg__insert(e, t, row, false, e->cur_origin);
        }
        if (!nl) break;
        p = nl + 1;
    }
    eg__rebuild(e);
}

static void cmd_include(eg_engine *e, const sx *s, scratch *sc)
{
    if (s->n != 2 || s->items[1]->kind != SX_STR) type_error(e, s, "(include \"file\") expected");
    const char *path = s->items[1]->text;
    char *text = read_named_file(e, s->items[1], "included", sc);
    const char *fname = eg__keep_file(e, path);
    uint32_t first, n;
    eg__sx_parse(e, text, fname, &first, &n);
    free(sc->text);
    sc->text = NULL;
    /* the included commands run as commands of their own; the first failure ends the
     * include with its error (already recorded) */
    for (uint32_t i = 0; i < n; i++) {
        int r = guarded(e, e->progs[first + i]);
        if (r) {
            e->thrown = r;
            longjmp(*e->jmp, 1);
        }
    }
}

/* ---- push / pop ---- */

/* Saves the database. The frame is counted first and filled in steps whose counts cover
 * only what is complete, so an out-of-memory failure part-way leaves it freeable. */
void eg__push(eg_engine *e)
{
    eg__rebuild(e);
    EG_GROW(e, e->frames, e->capframes, e->nframes + 1);
    frame *f = &e->frames[e->nframes++];
    memset(f, 0, sizeof *f);
    f->tables = eg__calloc(e, e->ntables + 1, sizeof(eg_table));
    for (uint32_t i = 0; i < e->ntables; i++) {
        f->ntables = i + 1; /* table_copy leaves a freeable table if it fails */
        eg__table_copy(e, &f->tables[i], &e->tables[i]);
    }
    f->uf = eg__marray(e, NULL, e->nids + 1, sizeof(uint32_t));
    if (e->nids) memcpy(f->uf, e->uf, e->nids * sizeof(uint32_t));
    f->nids = e->nids;
    f->globals = eg__calloc(e, e->nglobals + 1, sizeof(global));
    for (uint32_t i = 0; i < e->nglobals; i++) {
        f->globals[i] = e->globals[i];
        f->globals[i].name = NULL;
        f->nglobals = i + 1;
        f->globals[i].name = eg__strdup(e, e->globals[i].name);
    }
    f->rule_seen = eg__array(e, NULL, e->nrules + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < e->nrules; i++)
        f->rule_seen[i] = e->rules[i].seen;
    f->nsorts = e->nsorts;
    f->nrules = e->nrules;
    f->nrulesets = e->nrulesets;
    f->ts = e->ts;
}

int eg__pop(eg_engine *e)
{
    if (!e->nframes) return -1;
    frame *f = &e->frames[--e->nframes];
    uint32_t nt = f->ntables;
    for (uint32_t i = 0; i < e->ntables; i++) {
        eg__table_fini(e, &e->tables[i]);
        if (i >= nt) {
            eg__free(e->tables[i].name);
            eg__free(e->tables[i].in_sort);
            eg__aexpr_free(e->tables[i].merge_expr);
        }
    }
    for (uint32_t i = 0; i < nt; i++) /* the frame's storage becomes the tables' again */
        eg__table_take(&e->tables[i], &f->tables[i]);
    eg__free(f->tables);
    e->ntables = nt;
    eg__mfree(e, e->uf);
    e->uf = f->uf;
    eg__rebuild_reset(e);
    e->canon_unions = e->unions; /* the frame was taken after a rebuild: rows are canonical */
    e->nids = f->nids;
    e->capids = f->nids + 1;
    for (uint32_t i = 0; i < e->nglobals; i++)
        eg__free(e->globals[i].name);
    eg__free(e->globals);
    e->globals = f->globals;
    e->nglobals = f->nglobals;
    e->capglobals = f->nglobals + 1;
    for (uint32_t i = f->nrules; i < e->nrules; i++) {
        rule *r = &e->rules[i];
        eg__free(r->name);
        eg__query_free(&r->q);
        eg__actions_free(r->acts, r->nacts);
    }
    e->nrules = f->nrules;
    for (uint32_t i = 0; i < e->nrules; i++)
        e->rules[i].seen = f->rule_seen[i];
    for (uint32_t i = f->nrulesets; i < e->nrulesets; i++) {
        eg__free(e->rulesets[i].name);
        eg__free(e->rulesets[i].rules);
        eg__free(e->rulesets[i].members);
    }
    e->nrulesets = f->nrulesets;
    for (uint32_t i = 0; i < e->nrulesets; i++) {
        ruleset *R = &e->rulesets[i];
        uint32_t w = 0;
        for (uint32_t k = 0; k < R->nrules; k++)
            if (R->rules[k] < e->nrules) R->rules[w++] = R->rules[k];
        R->nrules = w;
    }
    /* function-value targets of sorts or tables that go are retired (values keep their
     * indices; a retired target matches no sort) */
    for (uint32_t k = 0; k < e->nfnt; k++)
        if (e->fnt[k].fsort >= f->nsorts ||
            (e->fnt[k].table >= 0 && (uint32_t)e->fnt[k].table >= f->ntables)) {
            e->fnt[k].fsort = UINT32_MAX;
            e->fnt[k].table = -1;
            e->fnt[k].prim = NULL;
            e->fnt[k].n_in = UINT32_MAX;
        }
    for (uint32_t i = f->nsorts; i < e->nsorts; i++) {
        eg__free(e->sorts[i].name);
        eg__free(e->sorts[i].pair_prims);
        eg__free(e->sorts[i].cont_prims);
        eg__free(e->sorts[i].fn_in);
    }
    e->nsorts = f->nsorts;
    eg__free(f->rule_seen);
    memset(f, 0, sizeof *f);
    eg__names_reset(e); /* tables and globals may have been removed */
    return 0;
}

/* ---- dispatch ---- */

/* (fail command): the command must fail when it runs. As in egglog, a command that does
 * not type-check is an error of the program, not a failure fail accepts (egglog checks
 * types before it runs anything), and so is running out of memory. */
static void cmd_fail(eg_engine *e, const sx *s)
{
    if (s->n != 2) type_error(e, s, "(fail command) expected");
    lm_err inner;
    lm_err_clear(&inner);
    lm_err *outer = e->err;
    e->err = &inner;
    int rc = guarded(e, s->items[1]);
    e->err = outer;
    if (rc == 0)
        eg__throw(e, LM_ERUNTIME, EG_LOC(s),
                  "the command inside fail succeeded, but it was expected to fail");
    if (rc == LM_ETYPE || rc == LM_EPARSE || rc == LM_ELIMIT || rc == LM_ENOMEM) {
        lm_err_copy(e->err, &inner);
        e->thrown = e->err ? e->err->code : rc;
        longjmp(*e->jmp, 1);
    }
}

/* run and run-schedule: a limit that stops a run stops the rest of the command, which
 * reports it once on the log. */
static void cmd_run(eg_engine *e, const sx *s, scratch *sc, bool schedule)
{
    e->limit_stopped = false;
    if (schedule) {
        eg__rebuild(e);
        sched_seq(e, s, 1, sc);
    } else {
        run_cmd(e, s, 1, sc);
    }
    if (e->limit_stopped) report_stop(e);
    e->limit_stopped = false;
}

static void exec_command(eg_engine *e, const sx *s, scratch *sc)
{
    const char *h = eg__sx_head(s);
    if (!h) {
        if (s->kind == SX_LIST && s->n == 0) return;
        type_error(e, s, "expected a command (a parenthesized form)");
    }
    if (eg__declare(e, s)) return;
    if (strcmp(h, "run") == 0) {
        cmd_run(e, s, sc, false);
    } else if (strcmp(h, "run-schedule") == 0) {
        cmd_run(e, s, sc, true);
    } else if (strcmp(h, "check") == 0) {
        cmd_check(e, s, sc);
    } else if (strcmp(h, "fail") == 0) {
        cmd_fail(e, s);
    } else if (strcmp(h, "extract") == 0) {
        cmd_extract(e, s, sc);
    } else if (strcmp(h, "print-size") == 0) {
        print_size(e, s);
    } else if (strcmp(h, "print-function") == 0) {
        print_function(e, s);
    } else if (strcmp(h, "print-stats") == 0) {
        if (!e->opt.snapshot) eg_print_stats(e, e->log);
    } else if (strcmp(h, "let") == 0) {
        cmd_let(e, s, sc);
    } else if (strcmp(h, "include") == 0) {
        cmd_include(e, s, sc);
    } else if (strcmp(h, "input") == 0) {
        cmd_input(e, s, sc);
    } else if (strcmp(h, "push") == 0) {
        int64_t n = s->n >= 2 && s->items[1]->kind == SX_INT ? s->items[1]->i : 1;
        for (int64_t i = 0; i < n; i++)
            eg__push(e);
    } else if (strcmp(h, "pop") == 0) {
        int64_t n = s->n >= 2 && s->items[1]->kind == SX_INT ? s->items[1]->i : 1;
        for (int64_t i = 0; i < n; i++)
            if (eg__pop(e)) eg__throw(e, LM_ERUNTIME, EG_LOC(s), "pop without a matching push");
    } else {
        uint32_t nslots = 0;
        sc->acts = eg__compile_actions(e, (const sx *const *)&s, 1, &sc->nacts, &nslots);
        sc->vals = eg__calloc(e, nslots + 1, sizeof(eg_value));
        eg__exec_actions(e, sc->acts, sc->nacts, sc->vals);
        eg__rebuild(e);
    }
}
