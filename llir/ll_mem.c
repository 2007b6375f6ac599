/* ll_mem.c - the llir module's one allocation door (see ll_int.h). */
#include "ll_int.h"

/* Test hook (ll__mem_fail_after): when >= 0, how many more allocations succeed before
 * one fails. Thread-local so tests in parallel threads do not disturb each other; -1
 * (the default) disables it. The module's only mutable global. */
static _Thread_local long fail_countdown = -1;
static _Thread_local bool fail_fired = false;

void ll__mem_fail_after(long n)
{
    fail_countdown = n;
    fail_fired = false;
}

bool ll__mem_fail_fired(void)
{
    return fail_fired;
}

static bool inject(void)
{
    if (fail_countdown < 0) return false;
    if (fail_countdown-- > 0) return false;
    fail_fired = true; /* fail this one only; later ones succeed again */
    return true;
}

void *ll__alloc(size_t n, size_t size)
{
    if (inject()) return NULL;
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    return malloc(bytes ? bytes : 1);
}

void *ll__zalloc(size_t n, size_t size)
{
    if (inject()) return NULL;
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *ll__realloc(void *p, size_t n, size_t size)
{
    if (inject()) return NULL;
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    return realloc(p, bytes ? bytes : 1);
}

void ll__free(void *p)
{
    free(p);
}

char *ll__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = ll__alloc(n, 1);
    if (d) memcpy(d, s, n);
    return d;
}

int ll__grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return 0;
    uint64_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    if (c > UINT32_MAX) c = UINT32_MAX;
    void *p = ll__realloc(*arr, (size_t)c, size);
    if (!p) return -1;
    *arr = p;
    *cap = (uint32_t)c;
    return 0;
}
