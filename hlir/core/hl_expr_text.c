/* hl_expr_text.c - expressions as text (print, parse) and their evaluation.
 *
 * Grammar of the text form, loosest binding first:
 *   or   := and ('|' and)*           cmp  := add (('>=' | '<' | '>' | '<=') add)?
 *   and  := cmp ('&' cmp)*           add  := mul (('+' | '-') mul)*
 *   mul  := unary (('*' | '/' | '%') unary)*
 *   unary:= '-' unary | atom         atom := INT | NAME | 'z' | '(' or ')'
 *                                          | ('min' | 'max' | 'cdiv') '(' or ',' or ')'
 * The printer emits only what the parser reads back to the same canonical id. */
#include "core/hl_expr_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>

/* ---- printing ---- */

typedef struct sbuf {
    char *buf;
    size_t cap, len; /* len counts what the full text needs */
} sbuf;

static void sb_put(sbuf *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_put(sbuf *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = s->len < s->cap ? s->cap - s->len : 0;
    int n = vsnprintf(room ? s->buf + s->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) s->len += (size_t)n;
}

enum { P_OR = 1, P_AND, P_CMP, P_ADD, P_MUL, P_ATOM };

/* A literal; INT64_MIN has no literal of its own (its magnitude overflows), so it is
 * written as the sum that gives it. */
static void put_num(sbuf *s, int64_t v)
{
    if (v == INT64_MIN)
        sb_put(s, "(-9223372036854775807 - 1)");
    else
        sb_put(s, "%" PRId64, v);
}

static int prec_of(const hl_expr_pool *p, hl_expr e)
{
    const hl_expr_node *n = hl__en(p, e);
    switch (n->kind) {
    case HL_E_NUM:
        return n->value < 0 ? P_MUL : P_ATOM; /* "-3" reads as a unary minus */
    case HL_E_VAR:
    case HL_E_Z:
    case HL_E_MIN:
    case HL_E_MAX:
    case HL_E_CDIV:
        return P_ATOM;
    case HL_E_ADD:
    case HL_E_SUB:
        return P_ADD;
    case HL_E_MUL:
    case HL_E_DIV:
    case HL_E_MOD:
        return P_MUL;
    case HL_E_GE:
    case HL_E_LT:
        return P_CMP;
    case HL_E_AND:
        return P_AND;
    case HL_E_OR:
        return P_OR;
    default:
        return P_ATOM;
    }
}

static void pr(const hl_expr_pool *p, hl_expr e, int ctx, sbuf *s);

static void pr_factors(const hl_expr_pool *p, hl_expr e, bool *first, sbuf *s)
{
    const hl_expr_node *n = hl__en(p, e);
    if (n->kind == HL_E_MUL) {
        pr_factors(p, n->a, first, s);
        pr_factors(p, n->b, first, s);
        return;
    }
    if (!*first) sb_put(s, "*");
    *first = false;
    pr(p, e, P_ATOM, s);
}

/* A term of a sum, printed without its sign when neg_ok and its coefficient is < 0. */
static void pr_term(const hl_expr_pool *p, hl_expr e, bool strip_sign, sbuf *s)
{
    const hl_expr_node *n = hl__en(p, e);
    if (n->kind == HL_E_NUM) {
        if (strip_sign)
            sb_put(s, "%" PRIu64, (uint64_t)0 - (uint64_t)n->value);
        else
            put_num(s, n->value);
        return;
    }
    if (n->kind == HL_E_MUL && hl__en(p, n->b)->kind == HL_E_NUM) {
        int64_t k = hl__en(p, n->b)->value;
        if (strip_sign && k == -1) { /* "x - y", not "x - 1*y" */
        } else if (!strip_sign && k == -1) {
            sb_put(s, "-"); /* a leading "-y" */
        } else {
            if (strip_sign)
                sb_put(s, "%" PRIu64, (uint64_t)0 - (uint64_t)k);
            else
                put_num(s, k);
            sb_put(s, "*");
        }
        bool first = true;
        pr_factors(p, n->a, &first, s);
        return;
    }
    bool first = true;
    if (n->kind == HL_E_MUL)
        pr_factors(p, e, &first, s);
    else
        pr(p, e, P_MUL, s);
}

static int64_t term_coef(const hl_expr_pool *p, hl_expr e)
{
    const hl_expr_node *n = hl__en(p, e);
    if (n->kind == HL_E_NUM) return n->value;
    if (n->kind == HL_E_MUL && hl__en(p, n->b)->kind == HL_E_NUM) return hl__en(p, n->b)->value;
    return 1;
}

static void pr_sum(const hl_expr_pool *p, hl_expr e, bool first, sbuf *s)
{
    const hl_expr_node *n = hl__en(p, e);
    if (n->kind == HL_E_ADD) {
        pr_sum(p, n->a, first, s);
        pr_sum(p, n->b, false, s);
        return;
    }
    if (first) {
        pr_term(p, e, false, s);
        return;
    }
    int64_t k = term_coef(p, e);
    if (k < 0 && k != INT64_MIN) {
        sb_put(s, " - ");
        pr_term(p, e, true, s);
    } else {
        sb_put(s, " + ");
        pr_term(p, e, false, s);
    }
}

static void pr(const hl_expr_pool *p, hl_expr e, int ctx, sbuf *s)
{
    if (e == HL_NONE || e >= p->n) {
        sb_put(s, "<none>");
        return;
    }
    const hl_expr_node *n = hl__en(p, e);
    int me = prec_of(p, e);
    bool paren = me < ctx;
    if (paren) sb_put(s, "(");
    switch (n->kind) {
    case HL_E_NUM:
        put_num(s, n->value);
        break;
    case HL_E_VAR:
        sb_put(s, "%s", p->vars[n->var]);
        break;
    case HL_E_Z:
        sb_put(s, "z");
        break;
    case HL_E_ADD:
        pr_sum(p, e, true, s);
        break;
    case HL_E_SUB:
        pr(p, n->a, P_ADD, s);
        sb_put(s, " - ");
        pr(p, n->b, P_MUL, s);
        break;
    case HL_E_MUL:
        pr_term(p, e, false, s);
        break;
    case HL_E_DIV:
    case HL_E_MOD:
        pr(p, n->a, P_MUL, s);
        sb_put(s, n->kind == HL_E_DIV ? "/" : "%%");
        pr(p, n->b, P_ATOM, s);
        break;
    case HL_E_MIN:
    case HL_E_MAX:
    case HL_E_CDIV:
        sb_put(s, n->kind == HL_E_MIN ? "min(" : n->kind == HL_E_MAX ? "max(" : "cdiv(");
        pr(p, n->a, P_OR, s);
        sb_put(s, ", ");
        pr(p, n->b, P_OR, s);
        sb_put(s, ")");
        break;
    case HL_E_GE:
    case HL_E_LT:
        pr(p, n->a, P_ADD, s);
        sb_put(s, n->kind == HL_E_GE ? " >= " : " < ");
        pr(p, n->b, P_ADD, s);
        break;
    case HL_E_AND:
    case HL_E_OR:
        pr(p, n->a, me, s);
        sb_put(s, n->kind == HL_E_AND ? " & " : " | ");
        pr(p, n->b, me + 1, s);
        break;
    default:
        sb_put(s, "?");
        break;
    }
    if (paren) sb_put(s, ")");
}

size_t hl_e_print(const hl_expr_pool *p, hl_expr e, char *buf, size_t cap)
{
    sbuf s = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    pr(p, e, P_OR, &s);
    if (cap && s.len >= cap) buf[cap - 1] = '\0';
    return s.len;
}

void hl_e_fprint(const hl_expr_pool *p, hl_expr e, FILE *f)
{
    char small[256];
    size_t n = hl_e_print(p, e, small, sizeof small);
    if (n < sizeof small) {
        fputs(small, f);
        return;
    }
    char *big = hl__alloc(n + 1, 1);
    if (!big) {
        fputs(small, f);
        return;
    }
    hl_e_print(p, e, big, n + 1);
    fputs(big, f);
    hl__free(big);
}

/* ---- parsing ---- */

typedef struct parser {
    hl_expr_pool *p;
    const char *text;
    size_t pos;
    lm_err *err;
    int depth;
} parser;

static hl_expr perr(parser *ps, const char *what)
{
    char found[24];
    const char *at = ps->text + ps->pos;
    if (!*at)
        snprintf(found, sizeof found, "end of text");
    else
        snprintf(found, sizeof found, "'%.8s'", at);
    hl__fail(ps->err, HL_ERR_PARSE, NULL, "expression \"%.200s\", column %zu: %s, found %s",
             ps->text, ps->pos + 1, what, found);
    return HL_NONE;
}

static void skip_ws(parser *ps)
{
    while (ps->text[ps->pos] && isspace((unsigned char)ps->text[ps->pos]))
        ps->pos++;
}

static bool eat(parser *ps, const char *tok)
{
    skip_ws(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->text + ps->pos, tok, n) != 0) return false;
    ps->pos += n;
    return true;
}

static hl_expr p_or(parser *ps);

/* A constructor gave HL_NONE: out of memory, or a value that overflows int64. */
static hl_expr oom_check(parser *ps, hl_expr e)
{
    if (e != HL_NONE || (ps->err && ps->err->code != HL_OK)) return e;
    if (hl_expr_pool_failed(ps->p))
        hl__fail(ps->err, HL_ERR_NOMEM, NULL, "out of memory while parsing an expression");
    else
        hl__fail(ps->err, HL_ERR_PARSE, NULL, "expression \"%.200s\", column %zu: %s", ps->text,
                 ps->pos, hl__none_reason(ps->p));
    return e;
}

static hl_expr p_atom(parser *ps)
{
    skip_ws(ps);
    const char *t = ps->text + ps->pos;
    if (isdigit((unsigned char)*t)) {
        char *end;
        errno = 0;
        long long v = strtoll(t, &end, 10);
        if (errno == ERANGE) return perr(ps, "integer literal out of range");
        ps->pos += (size_t)(end - t);
        return oom_check(ps, hl_e_num(ps->p, v));
    }
    if (isalpha((unsigned char)*t) || *t == '_') {
        size_t n = 0;
        while (isalnum((unsigned char)t[n]) || t[n] == '_')
            n++;
        char name[64];
        if (n >= sizeof name) return perr(ps, "name longer than 63 characters");
        memcpy(name, t, n);
        name[n] = '\0';
        ps->pos += n;
        hl_expr_kind fk = HL_E_KIND_COUNT;
        if (!strcmp(name, "min"))
            fk = HL_E_MIN;
        else if (!strcmp(name, "max"))
            fk = HL_E_MAX;
        else if (!strcmp(name, "cdiv"))
            fk = HL_E_CDIV;
        if (fk != HL_E_KIND_COUNT) {
            if (!eat(ps, "(")) return perr(ps, "expected '(' after function name");
            hl_expr a = p_or(ps);
            if (a == HL_NONE) return HL_NONE;
            if (!eat(ps, ",")) return perr(ps, "expected ','");
            hl_expr b = p_or(ps);
            if (b == HL_NONE) return HL_NONE;
            if (!eat(ps, ")")) return perr(ps, "expected ')'");
            return oom_check(ps, hl_e_bin(ps->p, fk, a, b));
        }
        if (!strcmp(name, "z")) return oom_check(ps, hl_e_z(ps->p));
        return oom_check(ps, hl_e_var(ps->p, name));
    }
    if (*t == '(') {
        ps->pos++;
        hl_expr e = p_or(ps);
        if (e == HL_NONE) return HL_NONE;
        if (!eat(ps, ")")) return perr(ps, "expected ')'");
        return e;
    }
    return perr(ps, "expected a number, a name, z or '('");
}

static hl_expr p_unary(parser *ps)
{
    if (eat(ps, "-")) {
        if (++ps->depth > HL_E_MAX_PARSE_DEPTH) return perr(ps, "expression nested too deeply");
        hl_expr e = p_unary(ps);
        ps->depth--;
        if (e == HL_NONE) return HL_NONE;
        return oom_check(ps, hl_e_mul(ps->p, e, hl_e_num(ps->p, -1)));
    }
    return p_atom(ps);
}

static hl_expr p_mul(parser *ps)
{
    hl_expr e = p_unary(ps);
    while (e != HL_NONE) {
        hl_expr_kind k;
        if (eat(ps, "*"))
            k = HL_E_MUL;
        else if (eat(ps, "/"))
            k = HL_E_DIV;
        else if (eat(ps, "%"))
            k = HL_E_MOD;
        else
            break;
        hl_expr b = p_unary(ps);
        if (b == HL_NONE) return HL_NONE;
        e = oom_check(ps, hl_e_bin(ps->p, k, e, b));
    }
    return e;
}

static hl_expr p_add(parser *ps)
{
    hl_expr e = p_mul(ps);
    while (e != HL_NONE) {
        hl_expr_kind k;
        if (eat(ps, "+"))
            k = HL_E_ADD;
        else if (eat(ps, "-"))
            k = HL_E_SUB;
        else
            break;
        hl_expr b = p_mul(ps);
        if (b == HL_NONE) return HL_NONE;
        e = oom_check(ps, hl_e_bin(ps->p, k, e, b));
    }
    return e;
}

static hl_expr p_cmp(parser *ps)
{
    hl_expr a = p_add(ps);
    if (a == HL_NONE) return HL_NONE;
    int op = 0;
    if (eat(ps, ">="))
        op = 1;
    else if (eat(ps, "<="))
        op = 2;
    else if (eat(ps, ">"))
        op = 3;
    else if (eat(ps, "<"))
        op = 4;
    if (!op) return a;
    hl_expr b = p_add(ps);
    if (b == HL_NONE) return HL_NONE;
    switch (op) {
    case 1:
        return oom_check(ps, hl_e_bin(ps->p, HL_E_GE, a, b));
    case 2:
        return oom_check(ps, hl_e_bin(ps->p, HL_E_GE, b, a));
    case 3:
        return oom_check(ps, hl_e_bin(ps->p, HL_E_LT, b, a));
    default:
        return oom_check(ps, hl_e_bin(ps->p, HL_E_LT, a, b));
    }
}

static hl_expr p_and(parser *ps)
{
    hl_expr e = p_cmp(ps);
    while (e != HL_NONE && eat(ps, "&")) {
        hl_expr b = p_cmp(ps);
        if (b == HL_NONE) return HL_NONE;
        e = oom_check(ps, hl_e_bin(ps->p, HL_E_AND, e, b));
    }
    return e;
}

static hl_expr p_or(parser *ps)
{
    if (++ps->depth > HL_E_MAX_PARSE_DEPTH) return perr(ps, "expression nested too deeply");
    hl_expr e = p_and(ps);
    while (e != HL_NONE && eat(ps, "|")) {
        hl_expr b = p_and(ps);
        if (b == HL_NONE) return HL_NONE;
        e = oom_check(ps, hl_e_bin(ps->p, HL_E_OR, e, b));
    }
    ps->depth--;
    return e;
}

hl_status hl_e_parse(hl_expr_pool *p, const char *text, hl_expr *out, lm_err *err)
{
    lm_err local;
    lm_err_clear(&local);
    lm_err *e = err ? err : &local;
    if (!text) return hl__fail(e, HL_ERR_PARSE, NULL, "expression text is missing");
    parser ps = {p, text, 0, e, 0};
    hl_expr r = p_or(&ps);
    if (r == HL_NONE) {
        if (e->code == HL_OK) hl__fail(e, HL_ERR_PARSE, NULL, "bad expression \"%.200s\"", text);
        return e->code;
    }
    skip_ws(&ps);
    if (text[ps.pos]) {
        perr(&ps, "expected an operator or the end");
        return e->code;
    }
    *out = r;
    return HL_OK;
}

/* ---- evaluation ---- */

static hl_status ev(const hl_expr_pool *p, hl_expr e, const hl_env *env, int64_t zv, int64_t *out,
                    lm_err *err)
{
    const hl_expr_node *n = hl__en(p, e);
    switch (n->kind) {
    case HL_E_NUM:
        *out = n->value;
        return HL_OK;
    case HL_E_Z:
        *out = zv;
        return HL_OK;
    case HL_E_VAR:
        if (!env || n->var >= env->n || (env->bound && !env->bound[n->var]))
            return hl__fail(err, HL_ERR_DIM, NULL,
                            "dimension '%s' has no value; bind it before evaluating",
                            p->vars[n->var]);
        *out = env->values[n->var];
        return HL_OK;
    default:
        break;
    }
    int64_t a, b;
    hl_status st = ev(p, n->a, env, zv, &a, err);
    if (st) return st;
    /* and/or short-circuit so masks like (x >= 0) & (y / x < 3) are safe */
    if (n->kind == HL_E_AND && !a) return (*out = 0, HL_OK);
    if (n->kind == HL_E_OR && a) return (*out = 1, HL_OK);
    st = ev(p, n->b, env, zv, &b, err);
    if (st) return st;
    bool ovf = false;
    switch (n->kind) {
    case HL_E_ADD:
        ovf = __builtin_add_overflow(a, b, out);
        break;
    case HL_E_SUB:
        ovf = __builtin_sub_overflow(a, b, out);
        break;
    case HL_E_MUL:
        ovf = __builtin_mul_overflow(a, b, out);
        break;
    case HL_E_DIV:
    case HL_E_CDIV:
    case HL_E_MOD: {
        if (b == 0) {
            char txt[160];
            hl_e_print(p, e, txt, sizeof txt);
            return hl__fail(err, HL_ERR_EVAL, NULL, "division by zero in '%s'", txt);
        }
        if (a == INT64_MIN && b == -1) {
            ovf = true;
            break;
        }
        int64_t q = a / b, r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) { /* floor */
            q--;
            r += b;
        }
        if (n->kind == HL_E_DIV)
            *out = q;
        else if (n->kind == HL_E_MOD)
            *out = r;
        else
            *out = q + (r != 0); /* ceil(a/b) = floor(a/b) + (remainder != 0) */
        break;
    }
    case HL_E_MIN:
        *out = a < b ? a : b;
        break;
    case HL_E_MAX:
        *out = a > b ? a : b;
        break;
    case HL_E_AND:
        *out = (a && b);
        break;
    case HL_E_OR:
        *out = (a || b);
        break;
    case HL_E_GE:
        *out = a >= b;
        break;
    case HL_E_LT:
        *out = a < b;
        break;
    default:
        return hl__fail(err, HL_ERR_EVAL, NULL, "corrupt expression node %u", e);
    }
    if (ovf) {
        char txt[160];
        hl_e_print(p, e, txt, sizeof txt);
        return hl__fail(err, HL_ERR_EVAL, NULL, "int64 overflow evaluating '%s'", txt);
    }
    return HL_OK;
}

hl_status hl_e_eval(const hl_expr_pool *p, hl_expr e, const hl_env *env, int64_t zval, int64_t *out,
                    lm_err *err)
{
    if (e == HL_NONE || e >= p->n)
        return hl__fail(err, HL_ERR_EVAL, NULL, "invalid expression id %u", e);
    return ev(p, e, env, zval, out, err);
}
