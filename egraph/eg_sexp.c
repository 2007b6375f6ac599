/* eg_sexp.c: the s-expression reader of the rules language.
 *
 * Produces a tree of sx nodes, each carrying its file, line and column, so every later
 * error can name where it arose. Comments run from ';' to the end of the line. Atoms:
 * integers (i64), floats (with '.', 'e', or the words inf/-inf/NaN), strings in double
 * quotes with \" \\ \n \t escapes, and symbols (anything else up to space or paren). */
#include "eg_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t i, n;
    uint32_t line, col;
    const char *file;
    eg_error *err;
} reader;

static sx *mk(reader *r, sx_kind k, uint32_t line, uint32_t col)
{
    sx *x = eg__calloc(1, sizeof *x);
    x->kind = k;
    x->line = line;
    x->col = col;
    x->file = r->file;
    return x;
}

void eg__sx_free(sx *s)
{
    if (!s) return;
    for (uint32_t i = 0; i < s->n; i++)
        eg__sx_free(s->items[i]);
    eg__free(s->items);
    eg__free(s->text);
    eg__free(s);
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

static void rerr(reader *r, uint32_t line, uint32_t col, const char *msg)
{
    snprintf(r->err->msg, sizeof r->err->msg, "%s:%u:%u: %s", r->file, line, col, msg);
    r->err->code = EG_ERR_PARSE;
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
                if (errno == ERANGE) {
                    rerr(r, line, col, "integer literal out of the range of i64");
                    return NULL;
                }
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
    x->text = eg__strndup(t, len);
    return x;
}

static sx *read_string(reader *r)
{
    uint32_t line = r->line, col = r->col;
    adv(r);
    size_t cap = 16, n = 0;
    char *buf = eg__alloc(cap);
    for (;;) {
        int c = peekc(r);
        if (c == -1) {
            eg__free(buf);
            rerr(r, line, col, "unterminated string literal (add the closing \")");
            return NULL;
        }
        adv(r);
        if (c == '"') break;
        if (c == '\\') {
            int d = peekc(r);
            if (d == -1) continue;
            adv(r);
            c = d == 'n' ? '\n' : d == 't' ? '\t' : d;
        }
        if (n + 2 > cap) buf = eg__realloc(buf, cap *= 2);
        buf[n++] = (char)c;
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
    if (c == -1) return NULL;
    if (c == ')') {
        rerr(r, r->line, r->col, "unexpected ')' (no list is open here)");
        return NULL;
    }
    if (c == '"') return read_string(r);
    if (c != '(') return read_atom(r);
    if (depth > 2000) {
        rerr(r, r->line, r->col, "lists nested too deeply (more than 2000 levels)");
        return NULL;
    }
    sx *l = mk(r, SX_LIST, r->line, r->col);
    adv(r);
    uint32_t cap = 0;
    for (;;) {
        skip_ws(r);
        c = peekc(r);
        if (c == -1) {
            rerr(r, l->line, l->col, "unclosed '(' (add the matching ')')");
            eg__sx_free(l);
            return NULL;
        }
        if (c == ')') {
            adv(r);
            return l;
        }
        sx *it = read_form(r, depth + 1);
        if (!it) {
            eg__sx_free(l);
            return NULL;
        }
        EG_GROW(l->items, cap, l->n + 1);
        l->items[l->n++] = it;
    }
}

int eg__sx_parse(const char *text, const char *file, sx ***out, uint32_t *n, eg_error *err)
{
    reader r = {text, 0, strlen(text), 1, 1, file, err};
    sx **forms = NULL;
    uint32_t cnt = 0, cap = 0;
    for (;;) {
        skip_ws(&r);
        if (peekc(&r) == -1) break;
        sx *f = read_form(&r, 0);
        if (!f) {
            for (uint32_t i = 0; i < cnt; i++)
                eg__sx_free(forms[i]);
            eg__free(forms);
            return -1;
        }
        EG_GROW(forms, cap, cnt + 1);
        forms[cnt++] = f;
    }
    *out = forms;
    *n = cnt;
    return 0;
}
