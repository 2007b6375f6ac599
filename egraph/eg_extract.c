/* eg_extract.c: tree-cost extraction, printing values and terms, and serialization.
 *
 * Extraction cost of an e-node: its table's :cost (default 1) plus the cost of each
 * child, where a literal child costs 1 and an e-class child costs the cheapest e-node of
 * that class. Costs are computed by iterating to a fixpoint over all non-subsumed rows of
 * extractable constructors; ties keep the first node found (table order, then row order),
 * so the choice is deterministic. */
#include "eg_int.h"

#include <stdlib.h>
#include <string.h>

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t eg__node_cost(eg_engine *e, const eg_table *t, const eg_value *row, const uint64_t *cost)
{
    uint64_t c = t->cost;
    for (uint32_t k = 0; k < t->n_in && c != UINT64_MAX; k++)
        c = sat_add(c, eg__child_cost(e, t->in_sort[k], row[k], cost));
    return c;
}

void eg__costs_compute(eg_engine *e, eg_costs *c)
{
    c->cost = eg__scoped_alloc(e, ((size_t)e->nids + 1) * sizeof(uint64_t));
    c->row = eg__scoped_alloc(e, ((size_t)e->nids + 1) * sizeof(uint32_t));
    c->tab = eg__scoped_alloc(e, ((size_t)e->nids + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < e->nids; i++) {
        c->cost[i] = UINT64_MAX;
        c->row[i] = c->tab[i] = UINT32_MAX;
    }
    bool changed = true;
    while (changed) {
        changed = false;
        for (eg_rowpos p = {0, 0}; eg__next_extractable(e, &p); p.row++) {
            const eg_table *t = &e->tables[p.table];
            const eg_value *row = t->cols + (size_t)p.row * t->ncols;
            uint64_t cost = eg__node_cost(e, t, row, c->cost);
            if (cost == UINT64_MAX) continue;
            uint32_t out = eg__find(e, (uint32_t)row[t->n_in]);
            if (cost < c->cost[out]) {
                c->cost[out] = cost;
                c->row[out] = p.row;
                c->tab[out] = p.table;
                changed = true;
            }
        }
    }
}

void eg__costs_free(eg_engine *e, eg_costs *c)
{
    eg__scoped_free(e, c->tab);
    eg__scoped_free(e, c->row);
    eg__scoped_free(e, c->cost);
}

uint64_t eg__child_cost(eg_engine *e, uint32_t sort, eg_value v, const uint64_t *cost)
{
    if (eg__is_eq(e, sort)) return cost[eg__find(e, (uint32_t)v)];
    if (e->sorts[sort].kind == SK_CONT) return eg__cont_cost(e, sort, v, cost);
    return 1;
}

uint64_t eg__value_cost(eg_engine *e, uint32_t sort, eg_value v, const uint64_t *cost)
{
    return eg__child_cost(e, sort, v, cost);
}

static void print_value_cb(eg_engine *e, FILE *f, uint32_t sort, eg_value v, void *ctx)
{
    (void)ctx;
    eg__print_value(e, f, sort, v);
}

void eg__print_value(eg_engine *e, FILE *f, uint32_t sort, eg_value v)
{
    char buf[64];
    switch (e->sorts[sort].kind) {
    case SK_UNIT:
        fputs("()", f);
        break;
    case SK_BOOL:
        fputs(v ? "true" : "false", f);
        break;
    case SK_I64:
        fprintf(f, "%lld", (long long)(int64_t)v);
        break;
    case SK_F64: {
        double d;
        memcpy(&d, &v, sizeof d);
        eg__fmt_f64(d, buf, sizeof buf);
        fputs(buf, f);
        break;
    }
    case SK_STRING: {
        fputc('"', f);
        for (const char *s = eg__str(e, (uint32_t)v); *s; s++) {
            if (*s == '"' || *s == '\\') fputc('\\', f);
            fputc(*s, f);
        }
        fputc('"', f);
        break;
    }
    case SK_EQ:
        fprintf(f, "%s-%u", e->sorts[sort].name, eg__find(e, (uint32_t)v));
        break;
    case SK_CONT:
        eg__cont_print(e, f, sort, v, print_value_cb, NULL);
        break;
    case SK_BIGINT:
    case SK_BIGRAT:
        eg__big_print(e, f, sort, v);
        break;
    case SK_PAIR:
        if (v < e->npairs) {
            fputs("(pair ", f);
            eg__print_value(e, f, e->sorts[sort].elem[0], e->pairs[2 * v]);
            fputc(' ', f);
            eg__print_value(e, f, e->sorts[sort].elem[1], e->pairs[2 * v + 1]);
            fputc(')', f);
        }
        break;
    }
}

static void print_term_rec(eg_engine *e, FILE *f, uint32_t sort, eg_value v, const eg_costs *c,
                           int depth);

typedef struct {
    const eg_costs *c;
    int depth;
} term_ctx;

static void print_term_cb(eg_engine *e, FILE *f, uint32_t sort, eg_value v, void *ctx)
{
    const term_ctx *t = ctx;
    print_term_rec(e, f, sort, v, t->c, t->depth + 1);
}

static void print_term_rec(eg_engine *e, FILE *f, uint32_t sort, eg_value v, const eg_costs *c,
                           int depth)
{
    if (e->sorts[sort].kind == SK_CONT && depth <= 10000) {
        term_ctx t = {c, depth};
        eg__cont_print(e, f, sort, v, print_term_cb, &t);
        return;
    }
    if (!eg__is_eq(e, sort)) {
        eg__print_value(e, f, sort, v);
        return;
    }
    uint32_t id = eg__find(e, (uint32_t)v);
    if (c->tab[id] == UINT32_MAX || depth > 10000) {
        eg__print_value(e, f, sort, v);
        return;
    }
    eg_table *t = &e->tables[c->tab[id]];
    const eg_value *row = t->cols + (size_t)c->row[id] * t->ncols;
    fprintf(f, "(%s", t->name);
    for (uint32_t k = 0; k < t->n_in; k++) {
        fputc(' ', f);
        print_term_rec(e, f, t->in_sort[k], row[k], c, depth + 1);
    }
    fputc(')', f);
}

void eg__print_term(eg_engine *e, FILE *f, uint32_t sort, eg_value v, const eg_costs *c)
{
    print_term_rec(e, f, sort, v, c, 0);
}

/* ---- serialization ---- */

typedef struct {
    uint32_t *cls_of_id; /* e-class id -> dense class, UINT32_MAX none */
    uint32_t *sort_of_id;
    uint32_t *lit_sort;
    eg_value *lit_val;
    uint32_t nlit, caplit;
} ser_ctx;

static uint32_t lit_class(eg_engine *e, ser_ctx *c, uint32_t sort, eg_value v)
{
    for (uint32_t i = 0; i < c->nlit; i++)
        if (c->lit_sort[i] == sort && c->lit_val[i] == v) return i;
    if (c->nlit == c->caplit) {
        c->caplit *= 2;
        c->lit_sort = eg__scoped_grow(e, c->lit_sort, c->caplit, sizeof(uint32_t));
        c->lit_val = eg__scoped_grow(e, c->lit_val, c->caplit, sizeof(eg_value));
    }
    c->lit_sort[c->nlit] = sort;
    c->lit_val[c->nlit] = v;
    return c->nlit++;
}

typedef struct {
    const eg_serialize_opts *opt;
    eg_serialized *out;
} ser_args;

static int cmp_fval(const void *a, const void *b)
{
    const eg_sfval *x = a, *y = b;
    if (x->eclass != y->eclass) return x->eclass < y->eclass ? -1 : 1;
    return x->func < y->func ? -1 : (x->func > y->func);
}

static bool per_class_function(const eg_engine *e, const eg_table *t)
{
    return t->kind == TK_FUNCTION && t->n_in == 1 && eg__is_eq(e, t->in_sort[0]);
}

/* The functions included per class: the requested ones (checked), or all that qualify. */
static void ser_functions(eg_engine *e, const eg_serialize_opts *opt, eg_serialized *out,
                          const ser_ctx *c)
{
    if (!opt || (!opt->all_functions && !opt->nfunctions)) return;
    out->func_table = eg__calloc(e, e->ntables + 1, sizeof(uint32_t));
    for (size_t i = 0; i < opt->nfunctions; i++) {
        int ti = opt->functions[i];
        if (ti < 0 || (uint32_t)ti >= e->ntables || !per_class_function(e, &e->tables[ti]))
            eg__throw(e, LM_EARG, NULL,
                      "eg_serialize: table %d is not a function of one e-class input (only "
                      "those are serialized per class)",
                      ti);
    }
    for (uint32_t ti = 0; ti < e->ntables; ti++) { /* in table order, each once */
        bool want = opt->all_functions && per_class_function(e, &e->tables[ti]);
        for (size_t i = 0; i < opt->nfunctions && !want; i++)
            want = opt->functions[i] == (int)ti;
        if (want) out->func_table[out->n_funcs++] = ti;
    }
    size_t n = 0;
    for (uint32_t f = 0; f < out->n_funcs; f++)
        n += e->tables[out->func_table[f]].nlive;
    out->fvals = eg__calloc(e, n + 1, sizeof(eg_sfval));
    for (uint32_t f = 0; f < out->n_funcs; f++) {
        const eg_table *t = &e->tables[out->func_table[f]];
        for (uint32_t r = 0; r < t->nrows; r++) {
            if (t->flags[r] & RF_DEAD) continue;
            const eg_value *row = t->cols + (size_t)r * t->ncols;
            uint32_t cls = c->cls_of_id[eg__find(e, (uint32_t)row[0])];
            if (cls == UINT32_MAX) continue; /* its input has no node in the snapshot */
            eg_sfval *fv = &out->fvals[out->n_fvals++];
            fv->eclass = cls;
            fv->func = f;
            fv->sort = t->out_sort;
            fv->value = eg__canon(e, t->out_sort, row[1]);
            fv->value_class = eg__is_eq(e, t->out_sort) ? c->cls_of_id[fv->value] : UINT32_MAX;
        }
    }
    qsort(out->fvals, out->n_fvals, sizeof *out->fvals, cmp_fval);
}

static void do_serialize(eg_engine *e, void *ctx)
{
    ser_args *a = ctx;
    const eg_serialize_opts *opt = a->opt;
    eg_serialized *out = a->out;
    eg__rebuild(e);
    ser_ctx c = {0};
    c.cls_of_id = eg__scoped_alloc(e, ((size_t)e->nids + 1) * sizeof(uint32_t));
    c.sort_of_id = eg__scoped_alloc(e, ((size_t)e->nids + 1) * sizeof(uint32_t));
    c.caplit = 16;
    c.lit_sort = eg__scoped_alloc(e, c.caplit * sizeof(uint32_t));
    c.lit_val = eg__scoped_alloc(e, c.caplit * sizeof(eg_value));
    for (uint32_t i = 0; i < e->nids; i++)
        c.cls_of_id[i] = UINT32_MAX;
    /* e-classes: every canonical id that is the output of a constructor row */
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        eg_table *t = &e->tables[ti];
        if (t->kind != TK_CONSTRUCTOR) continue;
        for (uint32_t r = 0; r < t->nrows; r++) {
            if (t->flags[r] & RF_DEAD) continue;
            uint32_t id = eg__find(e, (uint32_t)t->cols[(size_t)r * t->ncols + t->n_in]);
            c.cls_of_id[id] = 0;
            c.sort_of_id[id] = t->out_sort;
        }
    }
    uint32_t ncls = 0;
    for (uint32_t i = 0; i < e->nids; i++)
        c.cls_of_id[i] = c.cls_of_id[i] == 0 ? ncls++ : UINT32_MAX;
    uint32_t nnodes = 0, nchild = 0;
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        eg_table *t = &e->tables[ti];
        if (t->kind != TK_CONSTRUCTOR) continue;
        nnodes += t->nlive;
        nchild += t->nlive * t->n_in;
    }
    out->nodes = eg__calloc(e, nnodes + 1, sizeof(eg_snode));
    out->children = eg__calloc(e, nchild + 1, sizeof(uint32_t));
    uint32_t ni = 0, ci = 0;
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        eg_table *t = &e->tables[ti];
        if (t->kind != TK_CONSTRUCTOR) continue;
        for (uint32_t r = 0; r < t->nrows; r++) {
            if (t->flags[r] & RF_DEAD) continue;
            const eg_value *row = t->cols + (size_t)r * t->ncols;
            eg_snode *n = &out->nodes[ni++];
            n->table = ti;
            n->op = t->name;
            n->eclass = c.cls_of_id[eg__find(e, (uint32_t)row[t->n_in])];
            n->child_start = ci;
            n->nchildren = t->n_in;
            n->cost = t->cost;
            n->subsumed = (t->flags[r] & RF_SUBSUMED) != 0;
            n->origin = t->origin[r];
            for (uint32_t k = 0; k < t->n_in; k++) {
                uint32_t so = t->in_sort[k];
                if (eg__is_eq(e, so)) {
                    uint32_t id = eg__find(e, (uint32_t)row[k]);
                    uint32_t cl = c.cls_of_id[id];
                    if (cl == UINT32_MAX) { /* a class with no constructor node: give it one now */
                        cl = c.cls_of_id[id] = ncls++;
                        c.sort_of_id[id] = so;
                    }
                    out->children[ci++] = cl;
                } else {
                    out->children[ci++] = UINT32_MAX - 1 - lit_class(e, &c, so, row[k]);
                }
            }
        }
    }
    /* literal classes follow the e-classes */
    for (uint32_t k = 0; k < ci; k++)
        if (out->children[k] >= UINT32_MAX - 1 - c.nlit && out->children[k] != UINT32_MAX)
            out->children[k] = ncls + (UINT32_MAX - 1 - out->children[k]);
    uint32_t total = ncls + c.nlit;
    out->class_sort = eg__calloc(e, total + 1, sizeof(uint32_t));
    out->class_value = eg__calloc(e, total + 1, sizeof(uint64_t));
    out->n_classes = total;
    for (uint32_t i = 0; i < e->nids; i++)
        if (c.cls_of_id[i] != UINT32_MAX) {
            out->class_sort[c.cls_of_id[i]] = c.sort_of_id[i];
            out->class_value[c.cls_of_id[i]] = i;
        }
    out->n_nodes = ni;
    out->nodes = eg__array(e, out->nodes, ni + c.nlit + 1, sizeof(eg_snode));
    for (uint32_t l = 0; l < c.nlit; l++) {
        out->class_sort[ncls + l] = c.lit_sort[l];
        out->class_value[ncls + l] = c.lit_val[l];
        eg_snode *n = &out->nodes[ni++];
        memset(n, 0, sizeof *n);
        n->table = UINT32_MAX;
        n->op = e->sorts[c.lit_sort[l]].name;
        n->eclass = ncls + l;
        n->sort = c.lit_sort[l];
        n->literal = c.lit_val[l];
        n->child_start = ci;
        n->cost = 1;
    }
    out->n_nodes = ni;
    size_t nroots = opt ? opt->nroots : 0;
    out->roots = eg__calloc(e, nroots + 1, sizeof(uint32_t));
    for (size_t i = 0; i < nroots; i++) {
        uint32_t so = (uint32_t)opt->root_sorts[i];
        if (so < e->nsorts && eg__is_eq(e, so) && opt->roots[i] < e->nids) {
            uint32_t id = eg__find(e, (uint32_t)opt->roots[i]);
            if (c.cls_of_id[id] != UINT32_MAX) out->roots[out->n_roots++] = c.cls_of_id[id];
        }
    }
    ser_functions(e, opt, out, &c);
    out->with_origins = opt && opt->origins;
    eg__scoped_free(e, c.lit_val);
    eg__scoped_free(e, c.lit_sort);
    eg__scoped_free(e, c.sort_of_id);
    eg__scoped_free(e, c.cls_of_id);
}

int eg_serialize(eg_engine *e, const eg_serialize_opts *opt, eg_serialized *out, lm_err *err)
{
    if (!out) return eg__fail(err, LM_EARG, NULL, "eg_serialize: no output");
    memset(out, 0, sizeof *out);
    if (opt && ((opt->nroots && (!opt->roots || !opt->root_sorts)) ||
                (opt->nfunctions && !opt->functions)))
        return eg__fail(err, LM_EARG, NULL, "eg_serialize: counts without arrays in the options");
    ser_args a = {opt, out};
    return eg__guard(e, err, "eg_serialize", do_serialize, &a);
}

void eg_serialized_free(eg_serialized *s)
{
    if (!s) return;
    eg__free(s->class_sort);
    eg__free(s->class_value);
    eg__free(s->nodes);
    eg__free(s->children);
    eg__free(s->roots);
    eg__free(s->func_table);
    eg__free(s->fvals);
    memset(s, 0, sizeof *s);
}

/* The engine's one JSON string writer: s quoted, with " \\ and control bytes escaped. */
void eg__json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* A value as egglog prints it, as a JSON string. */
static void json_value_text(eg_engine *e, FILE *f, uint32_t sort, eg_value v)
{
    char buf[4096];
    FILE *m = fmemopen(buf, sizeof buf, "w");
    if (m) {
        eg__print_value(e, m, sort, v);
        fclose(m);
        buf[sizeof buf - 1] = 0;
        eg__json_str(f, buf);
    } else {
        eg__json_str(f, "?");
    }
}

/* A function's value in class_data (see eg_serialized_write_json). */
static void json_fval(eg_engine *e, FILE *f, const eg_sfval *fv)
{
    if (eg__is_eq(e, fv->sort)) {
        if (fv->value_class == UINT32_MAX)
            fputs("null", f);
        else
            fprintf(f, "\"c%u\"", fv->value_class);
        return;
    }
    switch (e->sorts[fv->sort].kind) {
    case SK_I64:
        fprintf(f, "%lld", (long long)(int64_t)fv->value);
        return;
    case SK_BOOL:
        fputs(fv->value ? "true" : "false", f);
        return;
    case SK_UNIT:
        fputs("null", f);
        return;
    case SK_STRING:
        eg__json_str(f, eg__str(e, (uint32_t)fv->value));
        return;
    case SK_F64: {
        double d = eg_value_as_f64(fv->value);
        if (d == d && d - d == 0) { /* finite */
            char buf[64];
            eg__fmt_f64(d, buf, sizeof buf);
            fputs(buf, f);
            return;
        }
        break;
    }
    default:
        break;
    }
    json_value_text(e, f, fv->sort, fv->value);
}

/* The name of an origin as the JSON writes it: a rule's name, "head file:line:col" for a
 * command, "api". */
static void json_origin(eg_engine *e, FILE *f, uint32_t origin)
{
    const origin_rec *o = origin < e->norigins ? &e->origins[origin] : NULL;
    if (!o) {
        eg__json_str(f, "?");
        return;
    }
    if (o->kind != EG_ORIGIN_COMMAND || !o->at) {
        eg__json_str(f, o->name);
        return;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s %s:%u:%u", o->name, o->at->file ? o->at->file : "<input>",
             o->at->line, o->at->col);
    eg__json_str(f, buf);
}

typedef struct {
    const eg_serialized *s;
    FILE *f;
} json_ctx;

static void do_write_json(eg_engine *e, void *ctx)
{
    const eg_serialized *s = ((json_ctx *)ctx)->s;
    FILE *f = ((json_ctx *)ctx)->f;
    /* a representative node per class, for children references */
    uint32_t *rep = eg__scoped_alloc(e, ((size_t)s->n_classes + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < s->n_classes; i++)
        rep[i] = UINT32_MAX;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (rep[s->nodes[i].eclass] == UINT32_MAX) rep[s->nodes[i].eclass] = i;
    fputs("{\"nodes\":{", f);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const eg_snode *n = &s->nodes[i];
        fprintf(f, "%s\"n%u\":{\"op\":", i ? "," : "", i);
        if (n->table == UINT32_MAX)
            json_value_text(e, f, n->sort, n->literal);
        else
            eg__json_str(f, n->op);
        fputs(",\"children\":[", f);
        for (uint32_t k = 0; k < n->nchildren; k++) {
            uint32_t cl = s->children[n->child_start + k];
            fprintf(f, "%s\"n%u\"", k ? "," : "", rep[cl]);
        }
        fprintf(f, "],\"eclass\":\"c%u\",\"cost\":%llu.0", n->eclass, (unsigned long long)n->cost);
        if (n->subsumed) fputs(",\"subsumed\":true", f);
        if (s->with_origins && n->table != UINT32_MAX) {
            fputs(",\"origin\":", f);
            json_origin(e, f, n->origin);
        }
        fputc('}', f);
    }
    fputs("},\"root_eclasses\":[", f);
    for (uint32_t i = 0; i < s->n_roots; i++)
        fprintf(f, "%s\"c%u\"", i ? "," : "", s->roots[i]);
    fputs("],\"class_data\":{", f);
    uint32_t fv = 0;
    for (uint32_t i = 0; i < s->n_classes; i++) {
        fprintf(f, "%s\"c%u\":{\"type\":", i ? "," : "", i);
        eg__json_str(f, e->sorts[s->class_sort[i]].name);
        for (; fv < s->n_fvals && s->fvals[fv].eclass == i; fv++) {
            fputc(',', f);
            eg__json_str(f, e->tables[s->func_table[s->fvals[fv].func]].name);
            fputc(':', f);
            json_fval(e, f, &s->fvals[fv]);
        }
        fputc('}', f);
    }
    fputs("}}\n", f);
    eg__scoped_free(e, rep);
}

int eg_serialized_write_json(eg_engine *e, const eg_serialized *s, FILE *f, lm_err *err)
{
    if (!s || !f)
        return eg__fail(err, LM_EARG, NULL, "eg_serialized_write_json: no snapshot or file");
    json_ctx x = {s, f};
    int rc = eg__guard(e, err, "eg_serialized_write_json", do_write_json, &x);
    if (rc) return rc;
    if (ferror(f)) return eg__fail(err, LM_EIO, NULL, "eg_serialized_write_json: writing failed");
    return 0;
}
