/* eg_mem.c: the engine's one allocation door.
 *
 * Every allocation of the egraph module goes through these wrappers, so sizes are
 * overflow-checked in one place, allocations are counted per engine (eg_options.fail_alloc
 * fails the N-th, for tests) and at base's counted door (lm_mem_admit: base's shared hook
 * lm_mem_fail_after fails the engine's allocations as any other module's), and the
 * allocator (mimalloc when available) can be swapped here. The engine allocates from its
 * own allocator rather than through lm_alloc because its memory account reads each
 * block's usable size from that allocator.
 *
 * Out of memory is an error, never an abort. A failed allocation calls eg__oom, which
 * marks the engine failed and raises LM_ENOMEM out of the current command (eg__throw);
 * the block the caller had (eg__array's p) is left as it was, so the engine's structures
 * stay valid for eg_engine_free, and every later call refuses at once (the command may
 * have stopped in the middle of a rebuild, so nothing else can be trusted). Callers keep
 * every block reachable from the engine (a table, the command's scratch, the scoped
 * buffers) the moment it exists, so an unwinding command loses nothing. (The alternative,
 * aborting as Redis does, was the engine's first design; it made the engine unusable in a
 * compiler that must report and go on.)
 *
 * Accounting. The memory that grows with the database (table rows, key and join indexes,
 * the union-find, interned strings and pairs, pending writes, join work buffers, push
 * frames) is allocated through the eg__m* wrappers, which add or subtract the block's
 * usable size as the allocator reports it in the engine's account (eg_mem_acct: no
 * global state); a join index, built in many small steps, is counted once as a whole
 * (eg__mem_add / eg__mem_sub, the bytes its arrays were asked for).
 * eg_options.mem_limit is checked against that count where the node limit is checked, so
 * a run that outgrows it stops cleanly with the results so far (eg_exec.c). Small, bounded
 * structures (names, compiled rules, parse trees, command scratch) are not counted. A
 * block allocated through the account must be freed through it; sanitizer builds check at
 * eg_engine_free that the account comes back to zero. */
#include "eg_int.h"

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

/* Counts one allocation of n * size bytes, in the engine and at base's door (base.h,
 * "Memory"); false when this one is to fail: eg_options.fail_alloc (the engine's N-th),
 * base's shared test hook (lm_mem_fail_after: the n-th allocation of the whole compile,
 * whichever module makes it) or an overflowing size. */
static bool may_allocate(eg_engine *e, size_t n, size_t size)
{
    e->nalloc++;
    bool admitted = lm_mem_admit(n, size);
    return admitted && !(e->opt.fail_alloc && e->nalloc == e->opt.fail_alloc);
}

void eg__oom(eg_engine *e, size_t n)
{
    e->failed = true;
    e->failed_bytes = n;
    eg__throw(e, LM_ENOMEM, NULL,
              "out of memory (allocating %zu bytes); the engine is unusable now and must be "
              "freed with eg_engine_free",
              n);
}

void *eg__try_calloc(eg_engine *e, size_t n, size_t size)
{
    if (!may_allocate(e, n, size)) return NULL;
    return RAW_CALLOC(n ? n : 1, size ? size : 1);
}

void *eg__alloc(eg_engine *e, size_t n)
{
    void *p = may_allocate(e, n, 1) ? RAW_MALLOC(n ? n : 1) : NULL;
    if (!p) eg__oom(e, n);
    return p;
}

void *eg__calloc(eg_engine *e, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) eg__oom(e, SIZE_MAX);
    void *p = eg__try_calloc(e, n, size);
    if (!p) eg__oom(e, n * size);
    return p;
}

void *eg__array(eg_engine *e, void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) eg__oom(e, SIZE_MAX);
    size_t bytes = n * size;
    void *q = may_allocate(e, n, size) ? RAW_REALLOC(p, bytes ? bytes : 1) : NULL;
    if (!q) eg__oom(e, bytes); /* p is unchanged and still owned by the caller */
    return q;
}

void eg__free(void *p)
{
    if (p) RAW_FREE(p);
}

char *eg__strndup(eg_engine *e, const char *s, size_t n)
{
    if (n == SIZE_MAX) eg__oom(e, n);
    char *d = eg__alloc(e, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *eg__strdup(eg_engine *e, const char *s)
{
    return eg__strndup(e, s, strlen(s));
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

void eg__mem_add(eg_engine *e, size_t bytes)
{
    acct_add(&e->mem, bytes);
}

void eg__mem_sub(eg_engine *e, size_t bytes)
{
    acct_sub(&e->mem, bytes);
}

void *eg__mcalloc(eg_engine *e, size_t n, size_t size)
{
    void *p = eg__calloc(e, n, size);
    acct_add(&e->mem, RAW_USABLE(p));
    return p;
}

void *eg__marray(eg_engine *e, void *p, size_t n, size_t size)
{
    size_t old = p ? RAW_USABLE(p) : 0;
    void *q = eg__array(e, p, n, size);
    size_t now = RAW_USABLE(q);
    if (now >= old)
        acct_add(&e->mem, now - old);
    else
        acct_sub(&e->mem, old - now);
    return q;
}

void eg__mfree(eg_engine *e, void *p)
{
    if (!p) return;
    acct_sub(&e->mem, RAW_USABLE(p));
    RAW_FREE(p);
}

char *eg__mstrndup(eg_engine *e, const char *s, size_t n)
{
    if (n == SIZE_MAX) eg__oom(e, n);
    char *d = eg__marray(e, NULL, n + 1, 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* ---- the arena of parsed programs ---- */

#define ARENA_BLOCK 65536

void *eg__arena_alloc(eg_engine *e, size_t n)
{
    size_t unit = sizeof(max_align_t);
    size_t need = (n + unit - 1) / unit; /* in max_align_t units */
    eg_arena_block *b = e->arena;
    if (!b || b->cap - b->used < need) {
        size_t cap = ARENA_BLOCK / unit;
        if (need > cap / 4) cap = need; /* a large request gets a block of its own */
        if (cap > (SIZE_MAX - sizeof *b) / unit) eg__oom(e, SIZE_MAX);
        eg_arena_block *nb = eg__alloc(e, sizeof *nb + cap * unit);
        nb->used = 0;
        nb->cap = cap;
        if (b && need == cap && b->cap - b->used >= 1) { /* keep filling the current block */
            nb->next = b->next;
            b->next = nb;
            nb->used = need;
            return nb->data;
        }
        nb->next = b;
        e->arena = b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    return p;
}

void eg__arena_free(eg_engine *e)
{
    for (eg_arena_block *b = e->arena, *n; b; b = n) {
        n = b->next;
        eg__free(b);
    }
    e->arena = NULL;
}
