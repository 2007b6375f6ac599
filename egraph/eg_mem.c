/* eg_mem.c: the engine's one allocation door.
 *
 * Every allocation of the egraph module goes through these wrappers, so sizes are
 * overflow-checked in one place and the allocator (mimalloc when available) can be
 * swapped here.
 *
 * Accounting. The memory that grows with the database (table rows, key and join indexes,
 * the union-find, interned strings and pairs, pending writes, join work buffers, push
 * frames) is allocated through the eg__m* wrappers, which take the engine's account
 * (eg_mem_acct, one per engine: no global state) and add or subtract the block's usable
 * size as the allocator reports it; a join index, built in many small steps, is counted
 * once as a whole (eg__mem_add / eg__mem_sub, the bytes its arrays were asked for).
 * eg_options.mem_limit is checked against that count where the node limit is checked, so a run that
 * outgrows it stops cleanly with the results so far (eg_exec.c). Small, bounded structures (names,
 * compiled rules, parse trees, command scratch) are not counted. A block allocated through an
 * account must be freed through the same account; sanitizer builds check at eg_engine_free that the
 * account comes back to zero.
 *
 * Design decision: a failed allocation is not recoverable. It prints a message and
 * aborts (as Redis does), rather than threading an out-of-memory error through every
 * table operation; the memory limit above is how a caller bounds growth cleanly. */
#include "eg_internal.h"

#include <stdlib.h>
#include <string.h>
#if !defined(EG_USE_MIMALLOC)
#include <malloc.h>
#endif

#if defined(EG_USE_MIMALLOC)
#include <mimalloc.h>
#define RAW_MALLOC mi_malloc
#define RAW_CALLOC mi_calloc
#define RAW_REALLOC mi_realloc
#define RAW_FREE mi_free
#define RAW_USABLE mi_usable_size
#else
#define RAW_MALLOC malloc
#define RAW_CALLOC calloc
#define RAW_REALLOC realloc
#define RAW_FREE free
#define RAW_USABLE malloc_usable_size
#endif

static _Noreturn void oom(size_t n)
{
    fprintf(stderr, "egraph: out of memory (allocating %zu bytes)\n", n);
    abort();
}

void *eg__alloc(size_t n)
{
    void *p = RAW_MALLOC(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *eg__calloc(size_t n, size_t size)
{
    void *p = RAW_CALLOC(n ? n : 1, size ? size : 1);
    if (!p) oom(n * size);
    return p;
}

void *eg__realloc(void *p, size_t n)
{
    void *q = RAW_REALLOC(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

void *eg__array(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) oom(SIZE_MAX);
    return eg__realloc(p, n * size);
}

void eg__free(void *p)
{
    if (p) RAW_FREE(p);
}

char *eg__strndup(const char *s, size_t n)
{
    char *d = eg__alloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *eg__strdup(const char *s)
{
    return eg__strndup(s, strlen(s));
}

/* ---- counted blocks ---- */

static void acct_add(eg_mem_acct *m, size_t n)
{
    m->bytes += n;
    if (m->bytes > m->peak) m->peak = m->bytes;
}

static void acct_sub(eg_mem_acct *m, size_t n)
{
    if (n > m->bytes) {
        m->underflow = true; /* freed through an account it was not allocated through */
        m->bytes = 0;
    } else {
        m->bytes -= n;
    }
}

void eg__mem_add(eg_mem_acct *m, size_t bytes)
{
    acct_add(m, bytes);
}

void eg__mem_sub(eg_mem_acct *m, size_t bytes)
{
    acct_sub(m, bytes);
}

void *eg__mcalloc(eg_mem_acct *m, size_t n, size_t size)
{
    void *p = eg__calloc(n, size);
    acct_add(m, RAW_USABLE(p));
    return p;
}

void *eg__marray(eg_mem_acct *m, void *p, size_t n, size_t size)
{
    size_t old = p ? RAW_USABLE(p) : 0;
    void *q = eg__array(p, n, size);
    size_t now = RAW_USABLE(q);
    if (now >= old)
        acct_add(m, now - old);
    else
        acct_sub(m, old - now);
    return q;
}

void eg__mfree(eg_mem_acct *m, void *p)
{
    if (!p) return;
    acct_sub(m, RAW_USABLE(p));
    RAW_FREE(p);
}

char *eg__mstrndup(eg_mem_acct *m, const char *s, size_t n)
{
    char *d = eg__marray(m, NULL, n + 1, 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}
