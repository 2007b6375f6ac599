/* lm_mem.c - the one counted allocation door of every module (base.h, "Memory").
 *
 * Each module keeps a door of its own (hl__alloc, ll__alloc, eg__alloc, ...), a thin
 * call into this one, so that sizes are checked for overflow in one place and one test
 * hook, lm_mem_fail_after, fails the n-th allocation of a whole compile whichever
 * module makes it. The hook and the counters are thread-local: tests running in
 * parallel threads do not disturb each other, and a worker thread's allocations are
 * its own. They are base's only mutable state. */
#include "base.h"

#include <stdlib.h>
#include <string.h>

/* When >= 0, how many more requests are admitted before one fails; -1 (the default)
 * disables the hook. */
static _Thread_local long fail_countdown = -1;
static _Thread_local bool fail_fired = false;
/* What the door has been asked for since lm_mem_stats_reset. */
static _Thread_local uint64_t stat_calls = 0;
static _Thread_local size_t stat_largest = 0;

void lm_mem_fail_after(long n)
{
    fail_countdown = n < 0 ? -1 : n;
    fail_fired = false;
}

bool lm_mem_fail_fired(void)
{
    return fail_fired;
}

void lm_mem_stats(uint64_t *calls, size_t *largest)
{
    if (calls) *calls = stat_calls;
    if (largest) *largest = stat_largest;
}

void lm_mem_stats_reset(void)
{
    stat_calls = 0;
    stat_largest = 0;
}

bool lm_mem_admit(size_t n, size_t size)
{
    bool overflow = size && n > SIZE_MAX / size;
    size_t bytes = overflow ? SIZE_MAX : n * size;
    stat_calls++;
    if (bytes > stat_largest) stat_largest = bytes;
    if (fail_countdown >= 0 && fail_countdown-- == 0) {
        fail_fired = true; /* this one fails; later ones succeed again */
        return false;
    }
    return !overflow;
}

void *lm_alloc(size_t n, size_t size)
{
    if (!lm_mem_admit(n, size)) return NULL;
    size_t bytes = n * size;
    return malloc(bytes ? bytes : 1);
}

void *lm_zalloc(size_t n, size_t size)
{
    if (!lm_mem_admit(n, size)) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *lm_realloc(void *p, size_t n, size_t size)
{
    if (!lm_mem_admit(n, size)) return NULL;
    size_t bytes = n * size;
    return realloc(p, bytes ? bytes : 1);
}

void lm_free(void *p)
{
    free(p);
}

char *lm_strndup(const char *s, size_t n)
{
    if (n == SIZE_MAX) return NULL;
    char *d = lm_alloc(n + 1, 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *lm_strdup(const char *s)
{
    return s ? lm_strndup(s, strlen(s)) : NULL;
}

int lm_grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return 0;
    uint64_t c = *cap ? *cap : LM_GROW_FIRST;
    while (c < need)
        c *= 2;
    if (c > UINT32_MAX) c = UINT32_MAX;
    void *p = lm_realloc(*arr, (size_t)c, size);
    if (!p) return -1;
    *arr = p;
    *cap = (uint32_t)c;
    return 0;
}
