/* eg_mem.c: the engine's one allocation door.
 *
 * Every allocation of the egraph module goes through these wrappers, so sizes are
 * overflow-checked in one place and the allocator (mimalloc when available) can be
 * swapped here. Out of memory is not recoverable for the engine: it prints a message
 * and aborts, which is the documented behaviour of eg_engine_new's contract. */
#include "eg_internal.h"

#include <stdlib.h>
#include <string.h>

#if defined(EG_USE_MIMALLOC)
#include <mimalloc.h>
#define RAW_MALLOC mi_malloc
#define RAW_CALLOC mi_calloc
#define RAW_REALLOC mi_realloc
#define RAW_FREE mi_free
#else
#define RAW_MALLOC malloc
#define RAW_CALLOC calloc
#define RAW_REALLOC realloc
#define RAW_FREE free
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
