/* hl_mem.c - the hlir module's one allocation door (see hl_int.h): every block comes
 * from here, sizes are checked for overflow, requests are counted, and tests can make
 * the n-th allocation fail. */
#include "hl_int.h"

#include <stdint.h>

/* Test hook (hl__mem_fail_after): when >= 0, how many more allocations succeed before
 * one fails. Thread-local so tests in parallel threads do not disturb each other; -1
 * (the default) disables it. This is the module's only mutable global. */
static _Thread_local long fail_countdown = -1;
static _Thread_local bool fail_fired = false;
/* What the door has been asked for since hl__mem_stats_reset (hl__mem_stats). */
static _Thread_local uint64_t stat_calls = 0;
static _Thread_local size_t stat_largest = 0;

void hl__mem_stats_reset(void)
{
    stat_calls = 0;
    stat_largest = 0;
}

void hl__mem_stats(uint64_t *calls, size_t *largest)
{
    if (calls) *calls = stat_calls;
    if (largest) *largest = stat_largest;
}

/* Counts a request of n * size bytes (saturated). */
static void count(size_t n, size_t size)
{
    size_t bytes = size && n > SIZE_MAX / size ? SIZE_MAX : n * size;
    stat_calls++;
    if (bytes > stat_largest) stat_largest = bytes;
}

void hl__mem_fail_after(long n)
{
    fail_countdown = n;
    fail_fired = false;
}

bool hl__mem_fail_fired(void)
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

void *hl__alloc(size_t n, size_t size)
{
    count(n, size);
    if (inject()) return NULL;
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    return malloc(bytes ? bytes : 1);
}

void *hl__zalloc(size_t n, size_t size)
{
    count(n, size);
    if (inject()) return NULL;
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *hl__realloc(void *p, size_t n, size_t size)
{
    count(n, size);
    if (inject()) return NULL;
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    return realloc(p, bytes ? bytes : 1);
}

void hl__free(void *p)
{
    free(p);
}

char *hl__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = hl__alloc(n, 1);
    if (d) memcpy(d, s, n);
    return d;
}

int hl__grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return 0;
    uint64_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    if (c > UINT32_MAX) c = UINT32_MAX;
    if (c < need) return -1;
    void *p = hl__realloc(*arr, (size_t)c, size);
    if (!p) return -1;
    *arr = p;
    *cap = (uint32_t)c;
    return 0;
}
