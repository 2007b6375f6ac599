/* cg_util.c - codegen's doors (errors, memory) and its growing string. */
#include "cg_int.h"

#include <stdio.h>
#include <stdlib.h>

int cg__fail(lm_err *err, int code, uint32_t node, const char *fmt, ...)
{
    char name[32];
    lm_loc loc = {0};
    loc.node_id = node;
    if (node != LM_NONE) {
        snprintf(name, sizeof name, "%%%u", node);
        loc.node = name;
    }
    va_list ap;
    va_start(ap, fmt);
    int rc = lm_err_setv(err, code, node != LM_NONE ? &loc : NULL, fmt, ap);
    va_end(ap);
    return rc;
}

void *cg__alloc(size_t n, size_t size)
{
    if (n == 0) n = 1;
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n, size);
}

bool cg__grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return true;
    uint32_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > UINT32_MAX / 2) return false;
        nc *= 2;
    }
    if ((size_t)nc > SIZE_MAX / size) return false;
    void *q = realloc(*p, (size_t)nc * size);
    if (!q) return false;
    memset((char *)q + (size_t)*cap * size, 0, (size_t)(nc - *cap) * size);
    *p = q;
    *cap = nc;
    return true;
}

void cg__free(void *p)
{
    free(p);
}

char *cg__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *r = cg__alloc(n, 1);
    if (r) memcpy(r, s, n);
    return r;
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
