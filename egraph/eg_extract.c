/* eg_extract.c: tree-cost extraction, printing values and terms, and serialization.
 *
 * Extraction cost of an e-node: its table's :cost (default 1) plus the cost of each
 * child, where a literal child costs 1 and an e-class child costs the cheapest e-node of
 * that class. Costs are computed by iterating to a fixpoint over all non-subsumed rows of
 * extractable constructors; ties keep the first node found (table order, then row order),
 * so the choice is deterministic. */
#include "eg_internal.h"

#include <string.h>

void eg__fmt_f64(double d, char *buf, size_t n);

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t *eg__extract_costs(eg_engine *e, uint32_t **best_row, uint32_t **best_tab)
{
    uint64_t *cost = eg__array(NULL, e->nids + 1, sizeof(uint64_t));
    uint32_t *br = eg__array(NULL, e->nids + 1, sizeof(uint32_t));
    uint32_t *bt = eg__array(NULL, e->nids + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < e->nids; i++) {
        cost[i] = UINT64_MAX;
        br[i] = bt[i] = UINT32_MAX;
    }
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t ti = 0; ti < e->ntables; ti++) {
            eg_table *t = &e->tables[ti];
            if (t->kind != TK_CONSTRUCTOR || t->unextractable) continue;
            for (uint32_t r = 0; r < t->nrows; r++) {
                if (t->flags[r] & (RF_DEAD | RF_SUBSUMED)) continue;
                const eg_value *row = t->cols + (size_t)r * t->ncols;
                uint64_t c = t->cost;
                for (uint32_t k = 0; k < t->n_in && c != UINT64_MAX; k++) {
                    if (eg__is_eq(e, t->in_sort[k]))
                        c = sat_add(c, cost[eg__find(e, (uint32_t)row[k])]);
                    else
                        c = sat_add(c, 1);
                }
                if (c == UINT64_MAX) continue;
                uint32_t out = eg__find(e, (uint32_t)row[t->n_in]);
                if (c < cost[out]) {
                    cost[out] = c;
                    br[out] = r;
                    bt[out] = ti;
                    changed = true;
                }
            }
        }
    }
    *best_row = br;
    *best_tab = bt;
    return cost;
}

uint64_t eg__value_cost(eg_engine *e, uint32_t sort, eg_value v, const uint64_t *cost)
{
    if (!eg__is_eq(e, sort)) return 1;
    return cost[eg__find(e, (uint32_t)v)];
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

static void print_term_rec(eg_engine *e, FILE *f, uint32_t sort, eg_value v, const uint64_t *cost,
                           const uint32_t *br, const uint32_t *bt, int depth)
{
    if (!eg__is_eq(e, sort)) {
        eg__print_value(e, f, sort, v);
        return;
    }
    uint32_t c = eg__find(e, (uint32_t)v);
    if (bt[c] == UINT32_MAX || depth > 10000) {
        eg__print_value(e, f, sort, v);
        return;
    }
    eg_table *t = &e->tables[bt[c]];
    const eg_value *row = t->cols + (size_t)br[c] * t->ncols;
    fprintf(f, "(%s", t->name);
    for (uint32_t k = 0; k < t->n_in; k++) {
        fputc(' ', f);
        print_term_rec(e, f, t->in_sort[k], row[k], cost, br, bt, depth + 1);
    }
    fputc(')', f);
}

void eg__print_term(eg_engine *e, FILE *f, uint32_t sort, eg_value v, const uint64_t *cost,
                    const uint32_t *br, const uint32_t *bt)
{
    print_term_rec(e, f, sort, v, cost, br, bt, 0);
}

/* ---- serialization ---- */

typedef struct {
    uint32_t *cls_of_id; /* e-class id -> dense class, UINT32_MAX none */
    uint32_t *lit_sort;
    eg_value *lit_val;
    uint32_t nlit, caplit;
} ser_ctx;

static uint32_t lit_class(ser_ctx *c, uint32_t base, uint32_t sort, eg_value v)
{
    for (uint32_t i = 0; i < c->nlit; i++)
        if (c->lit_sort[i] == sort && c->lit_val[i] == v) return base + i;
    EG_GROW(c->lit_sort, c->caplit, c->nlit + 1);
    c->lit_val = eg__array(c->lit_val, c->caplit, sizeof(eg_value));
    c->lit_sort[c->nlit] = sort;
    c->lit_val[c->nlit] = v;
    return base + c->nlit++;
}

int eg_serialize(eg_engine *e, const eg_value *roots, const int *root_sorts, size_t nroots,
                 eg_serialized *out, eg_error *err)
{
    memset(out, 0, sizeof *out);
    eg_error local;
    eg_error *saved = e->err;
    e->err = err ? err : &local;
    e->err->code = 0;
    jmp_buf jb;
    jmp_buf *sj = e->jmp;
    e->jmp = &jb;
    if (setjmp(jb)) {
        e->jmp = sj;
        e->err = saved;
        return EG_ERR_RUNTIME;
    }
    eg__rebuild(e);
    e->jmp = sj;
    e->err = saved;
    ser_ctx c = {0};
    c.cls_of_id = eg__array(NULL, e->nids + 1, sizeof(uint32_t));
    uint32_t *sort_of_id = eg__calloc(e->nids + 1, sizeof(uint32_t));
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
            sort_of_id[id] = t->out_sort;
        }
    }
    uint32_t ncls = 0;
    for (uint32_t i = 0; i < e->nids; i++)
        if (c.cls_of_id[i] == 0)
            c.cls_of_id[i] = ncls++;
        else
            c.cls_of_id[i] = UINT32_MAX;
    uint32_t nnodes = 0, nchild = 0;
    for (uint32_t ti = 0; ti < e->ntables; ti++) {
        eg_table *t = &e->tables[ti];
        if (t->kind != TK_CONSTRUCTOR) continue;
        nnodes += t->nlive;
        nchild += t->nlive * t->n_in;
    }
    out->nodes = eg__calloc(nnodes + 1, sizeof(eg_snode));
    out->children = eg__calloc(nchild + 1, sizeof(uint32_t));
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
            for (uint32_t k = 0; k < t->n_in; k++) {
                uint32_t so = t->in_sort[k];
                if (eg__is_eq(e, so)) {
                    uint32_t id = eg__find(e, (uint32_t)row[k]);
                    uint32_t cl = c.cls_of_id[id];
                    if (cl == UINT32_MAX) { /* a class with no constructor node: give it one now */
                        cl = c.cls_of_id[id] = ncls++;
                        sort_of_id[id] = so;
                    }
                    out->children[ci++] = cl;
                } else {
                    out->children[ci++] = UINT32_MAX - 1 - lit_class(&c, 0, so, row[k]);
                }
            }
        }
    }
    /* literal classes follow the e-classes */
    for (uint32_t k = 0; k < ci; k++)
        if (out->children[k] >= UINT32_MAX - 1 - c.nlit && out->children[k] != UINT32_MAX)
            out->children[k] = ncls + (UINT32_MAX - 1 - out->children[k]);
    uint32_t total = ncls + c.nlit;
    out->n_classes = total;
    out->class_sort = eg__calloc(total + 1, sizeof(uint32_t));
    out->class_value = eg__calloc(total + 1, sizeof(uint64_t));
    for (uint32_t i = 0; i < e->nids; i++)
        if (c.cls_of_id[i] != UINT32_MAX) {
            out->class_sort[c.cls_of_id[i]] = sort_of_id[i];
            out->class_value[c.cls_of_id[i]] = i;
        }
    out->nodes = eg__array(out->nodes, ni + c.nlit + 1, sizeof(eg_snode));
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
    out->roots = eg__calloc(nroots + 1, sizeof(uint32_t));
    for (size_t i = 0; i < nroots; i++) {
        uint32_t so = (uint32_t)root_sorts[i];
        if (so < e->nsorts && eg__is_eq(e, so) && roots[i] < e->nids) {
            uint32_t id = eg__find(e, (uint32_t)roots[i]);
            if (c.cls_of_id[id] != UINT32_MAX) out->roots[out->n_roots++] = c.cls_of_id[id];
        }
    }
    eg__free(c.cls_of_id);
    eg__free(c.lit_sort);
    eg__free(c.lit_val);
    eg__free(sort_of_id);
    return 0;
}

void eg_serialized_free(eg_serialized *s)
{
    if (!s) return;
    eg__free(s->class_sort);
    eg__free(s->class_value);
    eg__free(s->nodes);
    eg__free(s->children);
    eg__free(s->roots);
    memset(s, 0, sizeof *s);
}

static void json_str(FILE *f, const char *s)
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

int eg_serialized_write_json(const eg_engine *e, const eg_serialized *s, FILE *f)
{
    /* a representative node per class, for children references */
    uint32_t *rep = eg__array(NULL, s->n_classes + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < s->n_classes; i++)
        rep[i] = UINT32_MAX;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (rep[s->nodes[i].eclass] == UINT32_MAX) rep[s->nodes[i].eclass] = i;
    fputs("{\"nodes\":{", f);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const eg_snode *n = &s->nodes[i];
        fprintf(f, "%s\"n%u\":{\"op\":", i ? "," : "", i);
        if (n->table == UINT32_MAX) {
            char buf[4096];
            FILE *m = fmemopen(buf, sizeof buf, "w");
            if (m) {
                eg__print_value((eg_engine *)e, m, n->sort, n->literal);
                fclose(m);
                buf[sizeof buf - 1] = 0;
                json_str(f, buf);
            } else {
                json_str(f, "?");
            }
        } else {
            json_str(f, n->op);
        }
        fputs(",\"children\":[", f);
        for (uint32_t k = 0; k < n->nchildren; k++) {
            uint32_t cl = s->children[n->child_start + k];
            fprintf(f, "%s\"n%u\"", k ? "," : "", rep[cl]);
        }
        fprintf(f, "],\"eclass\":\"c%u\",\"cost\":%llu.0", n->eclass, (unsigned long long)n->cost);
        if (n->subsumed) fputs(",\"subsumed\":true", f);
        fputc('}', f);
    }
    fputs("},\"root_eclasses\":[", f);
    for (uint32_t i = 0; i < s->n_roots; i++)
        fprintf(f, "%s\"c%u\"", i ? "," : "", s->roots[i]);
    fputs("],\"class_data\":{", f);
    for (uint32_t i = 0; i < s->n_classes; i++) {
        fprintf(f, "%s\"c%u\":{\"type\":", i ? "," : "", i);
        json_str(f, e->sorts[s->class_sort[i]].name);
        fputc('}', f);
    }
    fputs("}}\n", f);
    eg__free(rep);
    return ferror(f) ? EG_ERR_IO : 0;
}
