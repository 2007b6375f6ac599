/* cg_util.c - codegen's doors (errors, memory) and its growing string. */
#include "cg_int.h"

#include <stdio.h>
#include <stdlib.h>

int cg__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    char name[32];
    lm_loc at = loc ? *loc : (lm_loc){.node_id = LM_NONE};
    if (!at.node && at.node_id != LM_NONE) { /* a node by id only: "%7" */
        snprintf(name, sizeof name, "%%%u", at.node_id);
        at.node = name;
    }
    bool any = at.file || at.node || at.field || at.node_id != LM_NONE;
    va_list ap;
    va_start(ap, fmt);
    int rc = lm_err_setv(err, code, any ? &at : NULL, fmt, ap);
    va_end(ap);
    return rc;
}

/* The door: a thin door over base's counted one (base.h, "Memory"). */
void *cg__alloc(size_t n, size_t size)
{
    return lm_zalloc(n, size);
}

bool cg__grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    uint32_t old = *cap;
    if (lm_grow(p, cap, need, size) != 0) return false;
    if (*cap > old) memset((char *)*p + (size_t)old * size, 0, (size_t)(*cap - old) * size);
    return true;
}

void cg__free(void *p)
{
    lm_free(p);
}

char *cg__strdup(const char *s)
{
    return lm_strdup(s);
}

void cg__str_init(cg_str *b)
{
    memset(b, 0, sizeof *b);
}

void cg__str_fini(cg_str *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

static bool reserve(cg_str *b, size_t more)
{
    if (b->oom) return false;
    if (b->len + more + 1 <= b->cap) return true;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + more + 1) {
        if (nc > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        nc *= 2;
    }
    char *q = realloc(b->s, nc);
    if (!q) {
        b->oom = true;
        return false;
    }
    b->s = q;
    b->cap = nc;
    return true;
}

void cg__str_add(cg_str *b, const char *text)
{
    size_t n = strlen(text);
    if (!reserve(b, n)) return;
    memcpy(b->s + b->len, text, n + 1);
    b->len += n;
}

void cg__str_addf(cg_str *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        cg__str_add(b, small);
        return;
    }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *cg__str_take(cg_str *b)
{
    if (b->oom) {
        cg__str_fini(b);
        return NULL;
    }
    if (!b->s && !reserve(b, 0)) return NULL;
    char *s = b->s;
    s[b->len] = '\0';
    memset(b, 0, sizeof *b);
    return s;
}

/* ---- reductions: an accumulator's first value and one step (cg_emit.c's loops) ---- */

const char *cg__em_red_init(const cg_val *r)
{
    bool sum = r->op == HL_OP_SUM_REDUCE;
    switch (r->rt) {
    case CG_R_I32:
        return sum ? "0" : "(-2147483647 - 1)";
    case CG_R_I64:
        return sum ? "0ll" : "(-9223372036854775807ll - 1)";
    default:
        return sum ? "0.0f" : "__uint_as_float(0xff800000u)";
    }
}

void cg__em_combine(cg_em *e, const cg_val *r, const char *acc, const char *x)
{
    bool sum = r->op == HL_OP_SUM_REDUCE;
    const char *fn;
    switch (r->rt) {
    case CG_R_I32:
        fn = sum ? "lm_addi" : "lm_maxi";
        break;
    case CG_R_I64:
        fn = sum ? "lm_addl" : "lm_maxll";
        break;
    default:
        fn = sum ? "__fadd_rn" : "lm_maxf";
        break;
    }
    cg__em_line(e, "%s = %s(%s, %s);", acc, fn, acc, x);
}
