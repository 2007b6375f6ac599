/* lm_json.c - the one JSON writer (lm_json.h). */
#include "lm_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- failing and emitting ---- */

static void fail(lm_json *w, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void fail(lm_json *w, int code, const char *fmt, ...)
{
    if (lm_json_failed(w)) return;
    va_list ap;
    va_start(ap, fmt);
    lm_err_setv(&w->err, code, NULL, fmt, ap);
    va_end(ap);
}

void lm_json_fail(lm_json *w, int code, const char *fmt, ...)
{
    if (lm_json_failed(w)) return;
    va_list ap;
    va_start(ap, fmt);
    lm_err_setv(&w->err, code, NULL, fmt, ap);
    va_end(ap);
}

static void emit(lm_json *w, const char *s, size_t n)
{
    if (lm_json_failed(w) || n == 0) return;
    if (w->f) {
        if (fwrite(s, 1, n, w->f) != n)
            fail(w, LM_EIO, "writing JSON: the write failed after %zu bytes", w->len);
        else
            w->len += n;
        return;
    }
    if (n >= w->cap - w->len || !w->buf) { /* room for n bytes and the NUL */
        if (n > SIZE_MAX / 2 - w->len) {
            fail(w, LM_ENOMEM, "writing JSON: the text outgrows the address space");
            return;
        }
        size_t cap = w->cap ? w->cap : 1024;
        while (cap < w->len + n + 1)
            cap *= 2;
        char *b = lm_realloc(w->buf, cap, 1);
        if (!b) {
            fail(w, LM_ENOMEM, "writing JSON: out of memory (%zu bytes for the text)", cap);
            return;
        }
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void emits(lm_json *w, const char *s)
{
    emit(w, s, strlen(s));
}

static void spaces(lm_json *w, size_t n)
{
    static const char sp[] = "                                ";
    while (n > 0) {
        size_t k = n < sizeof sp - 1 ? n : sizeof sp - 1;
        emit(w, sp, k);
        n -= k;
    }
}

/* ---- layout ---- */

/* Whether the innermost open container lays its members out on lines. */
static bool pretty(const lm_json *w)
{
    return w->indent > 0 && w->depth > 0 && w->depth <= w->levels;
}

/* A new line indented for the members of the innermost container (or, at_close, for
 * its closing bracket). */
static void newline(lm_json *w, bool at_close)
{
    emit(w, "\n", 1);
    spaces(w, (size_t)w->indent * (w->depth - (at_close ? 1 : 0)));
}

/* Before a member: checks the writer's state, writes the separator and the layout.
 * is_key: an object's key (else a value: an array's member, a key's value or the
 * outermost value). False when nothing may be written. */
static bool member(lm_json *w, bool is_key, const char *what)
{
    if (lm_json_failed(w)) return false;
    if (w->done) {
        fail(w, LM_EARG, "writing JSON: %s after the outermost value was complete", what);
        return false;
    }
    if (w->depth == 0) return true; /* the outermost value */
    uint32_t d = w->depth - 1;
    if (w->obj[d] && !is_key && !w->keyed) {
        fail(w, LM_EARG, "writing JSON: %s in an object without a key", what);
        return false;
    }
    if (w->obj[d] && is_key && w->keyed) {
        fail(w, LM_EARG, "writing JSON: a key where the value of the previous key was due");
        return false;
    }
    if (!w->obj[d] && is_key) {
        fail(w, LM_EARG, "writing JSON: a key in an array");
        return false;
    }
    if (w->keyed) { /* a key's value: the key wrote the separator */
        w->keyed = false;
        return true;
    }
    if (w->n[d] > 0) emit(w, ",", 1);
    if (pretty(w)) newline(w, false);
    w->n[d]++;
    return true;
}

/* After a complete value at the outermost level. */
static void value_done(lm_json *w)
{
    if (w->depth == 0) w->done = true;
}

void lm_json_init_buf(lm_json *w, unsigned indent, unsigned levels)
{
    memset(w, 0, sizeof *w);
    w->indent = indent;
    w->levels = levels;
    w->err.node_id = LM_NONE;
}

void lm_json_init_file(lm_json *w, FILE *f, unsigned indent, unsigned levels)
{
    lm_json_init_buf(w, indent, levels);
    w->f = f;
    if (!f) fail(w, LM_EARG, "writing JSON: no file given");
}

static void open_container(lm_json *w, bool obj)
{
    if (!member(w, false, obj ? "an object" : "an array")) return;
    if (w->depth == LM_JSON_DEPTH) {
        fail(w, LM_ELIMIT, "writing JSON: more than %d containers nested", LM_JSON_DEPTH);
        return;
    }
    emit(w, obj ? "{" : "[", 1);
    w->obj[w->depth] = obj;
    w->n[w->depth] = 0;
    w->depth++;
}

static void close_container(lm_json *w, bool obj)
{
    if (lm_json_failed(w)) return;
    if (w->depth == 0 || w->obj[w->depth - 1] != obj) {
        fail(w, LM_EARG, "writing JSON: closing %s that is not open", obj ? "an object" : "an array");
        return;
    }
    if (w->keyed) {
        fail(w, LM_EARG, "writing JSON: closing an object whose last key has no value");
        return;
    }
    if (w->n[w->depth - 1] > 0 && pretty(w)) newline(w, true);
    emit(w, obj ? "}" : "]", 1);
    w->depth--;
    value_done(w);
}

void lm_json_obj(lm_json *w)
{
    open_container(w, true);
}

void lm_json_obj_end(lm_json *w)
{
    close_container(w, true);
}

void lm_json_arr(lm_json *w)
{
    open_container(w, false);
}

void lm_json_arr_end(lm_json *w)
{
    close_container(w, false);
}

/* ---- strings ---- */

/* The code point of the UTF-8 sequence at s[0 .. n) and its length in *len; -1 when it
 * is not a valid sequence (overlong, a surrogate, above U+10FFFF, cut short). */
static int32_t utf8_next(const unsigned char *s, size_t n, size_t *len)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    size_t k;
    int32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) k = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) k = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) k = 4, cp = c & 0x07, min = 0x10000;
    else return -1;
    if (k > n) return -1;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return -1;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    *len = k;
    return cp;
}

static void string(lm_json *w, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    emit(w, "\"", 1);
    size_t run = 0; /* start of the bytes not yet written */
    for (size_t i = 0; i < n && !lm_json_failed(w);) {
        size_t len = 1;
        int32_t cp = utf8_next(u + i, n - i, &len);
        if (cp < 0) {
            fail(w, LM_EARG, "writing JSON: a string is not valid UTF-8 (byte %zu of \"%.*s\")", i,
                 (int)(n < 40 ? n : 40), s);
            return;
        }
        if (cp >= 0x20 && cp < 0x80 && cp != '"' && cp != '\\') {
            i += len;
            continue;
        }
        emit(w, s + run, i - run);
        char esc[16];
        switch (cp) {
        case '"': strcpy(esc, "\\\""); break;
        case '\\': strcpy(esc, "\\\\"); break;
        case '\b': strcpy(esc, "\\b"); break;
        case '\f': strcpy(esc, "\\f"); break;
        case '\n': strcpy(esc, "\\n"); break;
        case '\r': strcpy(esc, "\\r"); break;
        case '\t': strcpy(esc, "\\t"); break;
        default:
            if (cp < 0x10000) {
                snprintf(esc, sizeof esc, "\\u%04X", (unsigned)cp);
            } else {
                int32_t v = cp - 0x10000;
                snprintf(esc, sizeof esc, "\\u%04X\\u%04X", (unsigned)(0xD800 | (v >> 10)),
                         (unsigned)(0xDC00 | (v & 0x3FF)));
            }
            break;
        }
        emits(w, esc);
        i += len;
        run = i;
    }
    emit(w, s + run, n - run);
    emit(w, "\"", 1);
}

void lm_json_key(lm_json *w, const char *key)
{
    if (!member(w, true, "a key")) return;
    if (!key) {
        fail(w, LM_EARG, "writing JSON: a NULL key");
        return;
    }
    string(w, key, strlen(key));
    emits(w, pretty(w) ? ": " : ":");
    w->keyed = true;
}

void lm_json_strn(lm_json *w, const char *s, size_t n)
{
    if (!member(w, false, "a string")) return;
    string(w, s, n);
    value_done(w);
}

void lm_json_str(lm_json *w, const char *s)
{
    if (!s) {
        lm_json_null(w);
        return;
    }
    lm_json_strn(w, s, strlen(s));
}

/* ---- scalars ---- */

static void scalar(lm_json *w, const char *text, const char *what)
{
    if (!member(w, false, what)) return;
    emits(w, text);
    value_done(w);
}

void lm_json_int(lm_json *w, int64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)v);
    scalar(w, t, "a number");
}

void lm_json_uint(lm_json *w, uint64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    scalar(w, t, "a number");
}

void lm_json_bool(lm_json *w, bool v)
{
    scalar(w, v ? "true" : "false", "a boolean");
}

void lm_json_null(lm_json *w)
{
    scalar(w, "null", "null");
}

/* %.*g of v, laid out: a '.' as the decimal point whatever the locale, ".0" added when
 * there is neither a '.' nor an exponent, no '+' and no leading zeros in the exponent. */
static void format_real(char *t, size_t cap, double v, int digits)
{
    snprintf(t, cap, "%.*g", digits, v);
    for (char *c = t; *c; c++)
        if (!(*c >= '0' && *c <= '9') && *c != '-' && *c != '+' && *c != 'e')
            *c = '.'; /* a locale's decimal separator (v is finite) */
    char *e = strchr(t, 'e');
    if (!strchr(t, '.') && !e) {
        strcat(t, ".0");
        return;
    }
    if (e) {
        char *from = e + 1, *to = e + 1;
        if (*from == '+') from++;
        else if (*from == '-') from++, to++;
        while (*from == '0' && from[1])
            from++;
        memmove(to, from, strlen(from) + 1);
    }
}

void lm_json_real(lm_json *w, double v, int digits)
{
    if (lm_json_failed(w)) return;
    if (!isfinite(v)) {
        fail(w, LM_EARG, "writing JSON: %s has no JSON form", isnan(v) ? "NaN" : "an infinity");
        return;
    }
    if (digits < 1) digits = 1;
    if (digits > 17) digits = 17;
    char t[48];
    format_real(t, sizeof t - 3, v, digits);
    scalar(w, t, "a number");
}

void lm_json_f64(lm_json *w, double v)
{
    lm_json_real(w, v, 17);
}

void lm_json_f32(lm_json *w, float v)
{
    if (!isfinite(v)) {
        lm_json_real(w, (double)v, 9); /* fails the writer, naming it */
        return;
    }
    char t[32];
    for (int p = 1; p <= 9; p++) {
        snprintf(t, sizeof t, "%.*g", p, (double)v);
        if (strtof(t, NULL) == v) break;
    }
    lm_json_real(w, strtod(t, NULL), 9);
}

/* ---- keyed values ---- */

void lm_json_kstr(lm_json *w, const char *key, const char *s)
{
    lm_json_key(w, key);
    lm_json_str(w, s);
}

void lm_json_kint(lm_json *w, const char *key, int64_t v)
{
    lm_json_key(w, key);
    lm_json_int(w, v);
}

void lm_json_kf64(lm_json *w, const char *key, double v)
{
    lm_json_key(w, key);
    lm_json_f64(w, v);
}

void lm_json_kbool(lm_json *w, const char *key, bool v)
{
    lm_json_key(w, key);
    lm_json_bool(w, v);
}

void lm_json_raw(lm_json *w, const char *text)
{
    if (text) emits(w, text);
}

/* ---- finishing ---- */

/* Fails the writer unless exactly one complete value was written. */
static void check_complete(lm_json *w)
{
    if (lm_json_failed(w) || w->done) return;
    if (w->depth > 0)
        fail(w, LM_EARG, "writing JSON: %u containers are still open at the end", w->depth);
    else
        fail(w, LM_EARG, "writing JSON: nothing was written");
}

char *lm_json_take(lm_json *w, size_t *len, lm_err *err)
{
    if (len) *len = 0;
    if (w->f) fail(w, LM_EARG, "writing JSON: lm_json_take of a file writer");
    check_complete(w);
    char *text = w->buf;
    size_t n = w->len;
    w->buf = NULL;
    w->len = w->cap = 0;
    if (lm_json_failed(w)) {
        lm_free(text);
        lm_err_copy(err, &w->err);
        return NULL;
    }
    if (len) *len = n;
    return text;
}

int lm_json_close(lm_json *w, lm_err *err)
{
    check_complete(w);
    if (w->f && !lm_json_failed(w) && fflush(w->f) != 0)
        fail(w, LM_EIO, "writing JSON: the write failed after %zu bytes", w->len);
    lm_free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
    if (!lm_json_failed(w)) return 0;
    lm_err_copy(err, &w->err);
    return w->err.code;
}
