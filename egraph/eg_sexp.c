/* eg_sexp.c: the s-expression reader of the rules language.
 *
 * Produces a tree of sx nodes, each carrying its file, line and column, so every later
 * error can name where it arose. Comments run from ';' to the end of the line. Atoms:
 * integers (i64), floats (with '.', 'e', or the words inf/-inf/NaN), strings in double
 * quotes with \" \\ \n \t escapes, and symbols (anything else up to space or paren).
 *
 * Nodes, their texts and their item arrays live in the engine's arena (eg__arena_alloc)
 * for the engine's life: rules point into their source. A list's items are collected on
 * the engine's reader stack (e->sxstack) and copied to the arena when the list closes, so
 * an error or a failed allocation part-way leaves nothing unowned. */
#include "eg_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    eg_engine *e;
    const char *s;
    size_t i, n;
    uint32_t line, col;
    const char *file;
} reader;

static sx *mk(reader *r, sx_kind k, uint32_t line, uint32_t col)
{
    sx *x = eg__arena_alloc(r->e, sizeof *x);
    memset(x, 0, sizeof *x);
    x->kind = k;
    x->line = line;
    x->col = col;
    x->file = r->file;
    return x;
}

static char *arena_strndup(eg_engine *e, const char *s, size_t n)
{
    if (n == SIZE_MAX) eg__oom(e, n);
    char *d = eg__arena_alloc(e, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

const char *eg__sx_head(const sx *s)
{
    return (s->kind == SX_LIST && s->n > 0 && s->items[0]->kind == SX_SYM) ? s->items[0]->text
                                                                           : NULL;
}

bool eg__sx_is(const sx *s, const char *sym)
{
    return s && s->kind == SX_SYM && strcmp(s->text, sym) == 0;
}

static int peekc(reader *r)
{
    return r->i < r->n ? (unsigned char)r->s[r->i] : -1;
}

static void adv(reader *r)
{
    if (r->i >= r->n) return;
    if (r->s[r->i] == '\n') {
        r->line++;
        r->col = 1;
    } else {
        r->col++;
    }
    r->i++;
}

static void skip_ws(reader *r)
{
    for (;;) {
        int c = peekc(r);
        if (c == ';') {
            while (peekc(r) != -1 && peekc(r) != '\n')
                adv(r);
        } else if (c != -1 && isspace(c)) {
            adv(r);
        } else {
            return;
        }
    }
}

static _Noreturn void rerr(reader *r, int code, uint32_t line, uint32_t col, const char *msg)
{
    lm_loc at = {
        .file = r->file ? r->file : "<input>", .line = line, .col = col, .node_id = LM_NONE};
    eg__throw(r->e, code, &at, "%s", msg);
}

static bool is_delim(int c)
{
    return c == -1 || isspace(c) || c == '(' || c == ')' || c == ';';
}

static sx *read_atom(reader *r)
{
    uint32_t line = r->line, col = r->col;
    size_t start = r->i;
    while (!is_delim(peekc(r)))
        adv(r);
    size_t len = r->i - start;
    const char *t = r->s + start;
    char buf[64];
    if (len < sizeof buf) {
        memcpy(buf, t, len);
        buf[len] = 0;
        char *end;
        if ((isdigit((unsigned char)buf[0]) ||
             ((buf[0] == '-' || buf[0] == '+') && len > 1 && isdigit((unsigned char)buf[1])))) {
            errno = 0;
            long long v = strtoll(buf, &end, 10);
            if (*end == 0) {
                if (errno == ERANGE)
                    rerr(r, LM_EPARSE, line, col, "integer literal out of the range of i64");
                sx *x = mk(r, SX_INT, line, col);
                x->i = v;
                return x;
            }
            double d = strtod(buf, &end);
            if (*end == 0) {
                sx *x = mk(r, SX_FLOAT, line, col);
                x->f = d;
                return x;
            }
        }
        if (strcmp(buf, "inf") == 0 || strcmp(buf, "-inf") == 0 || strcmp(buf, "NaN") == 0) {
            sx *x = mk(r, SX_FLOAT, line, col);
            x->f = buf[0] == 'N' ? NAN : (buf[0] == '-' ? -INFINITY : INFINITY);
            return x;
        }
    }
    sx *x = mk(r, SX_SYM, line, col);
    x->text = arena_strndup(r->e, t, len);
    return x;
}

/* A string literal is never longer than its source text, so its text is decoded in
 * place into an arena buffer of that size: one pass to find the end, one to copy. */
static sx *read_string(reader *r)
{
    uint32_t line = r->line, col = r->col;
    adv(r);
    size_t start = r->i;
    for (;;) { /* find the closing quote */
        int c = peekc(r);
        if (c == -1)
            rerr(r, LM_EPARSE, line, col, "unterminated string literal (add the closing \")");
        adv(r);
        if (c == '"') break;
        if (c == '\\' && peekc(r) != -1) adv(r);
    }
    size_t end = r->i - 1, n = 0;
    char *buf = eg__arena_alloc(r->e, end - start + 1);
    for (size_t k = start; k < end; k++) {
        char c = r->s[k];
        if (c == '\\' && k + 1 < end) {
            char d = r->s[++k];
            c = d == 'n' ? '\n' : d == 't' ? '\t' : d;
        }
        buf[n++] = c;
    }
    buf[n] = 0;
    sx *x = mk(r, SX_STR, line, col);
    x->text = buf;
    return x;
}

static sx *read_form(reader *r, int depth)
{
    skip_ws(r);
    int c = peekc(r);
    if (c == ')') rerr(r, LM_EPARSE, r->line, r->col, "unexpected ')' (no list is open here)");
    if (c == '"') return read_string(r);
    if (c != '(') return read_atom(r);
    if (depth > EG_MAX_DEPTH)
        rerr(r, LM_ELIMIT, r->line, r->col,
             "lists nested too deeply (more than " EG_MAX_DEPTH_TEXT " levels)");
    eg_engine *e = r->e;
    sx *l = mk(r, SX_LIST, r->line, r->col);
    adv(r);
    uint32_t base = e->nsxstack; /* this list's items are the stack above base */
    for (;;) {
        skip_ws(r);
        c = peekc(r);
        if (c == -1) rerr(r, LM_EPARSE, l->line, l->col, "unclosed '(' (add the matching ')')");
        if (c == ')') break;
        sx *it = read_form(r, depth + 1);
        EG_GROW(e, e->sxstack, e->capsxstack, (size_t)e->nsxstack + 1);
        e->sxstack[e->nsxstack++] = it;
    }
    adv(r);
    l->n = e->nsxstack - base;
    l->items = eg__arena_alloc(e, (l->n ? l->n : 1) * sizeof(sx *));
    if (l->n) memcpy(l->items, e->sxstack + base, l->n * sizeof(sx *));
    e->nsxstack = base;
    return l;
}

void eg__sx_parse(eg_engine *e, const char *text, const char *file, uint32_t *first, uint32_t *n)
{
    reader r = {e, text, 0, strlen(text), 1, 1, file};
    e->nsxstack = 0; /* what an earlier failed parse left */
    *first = e->nprogs;
    for (;;) {
        skip_ws(&r);
        if (peekc(&r) == -1) break;
        sx *f = read_form(&r, 0);
        EG_GROW(e, e->progs, e->capprogs, (size_t)e->nprogs + 1);
        e->progs[e->nprogs++] = f;
    }
    *n = e->nprogs - *first;
}
