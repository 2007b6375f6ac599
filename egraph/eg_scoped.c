/* eg_scoped.c: scoped work buffers, the counted memory a phase of a command owns (an
 * iteration, a query run, an extraction): freed in LIFO order, or all at once by the
 * command boundary when the command throws (eg_int.h). */
#include "eg_int.h"

#include <assert.h>

void *eg__scoped_alloc(eg_engine *e, size_t bytes)
{
    assert(e->nscoped < EG_SCOPED_DEPTH);
    void *p = eg__mcalloc(e, 1, bytes ? bytes : 1);
    e->scoped[e->nscoped++] = p;
    return p;
}

void *eg__scoped_grow(eg_engine *e, void *p, size_t n, size_t size)
{
    uint32_t i = e->nscoped;
    while (i > 0 && e->scoped[i - 1] != p)
        i--;
    assert(i > 0);
    void *q = eg__marray(e, p, n ? n : 1, size); /* p stays registered if this fails */
    e->scoped[i - 1] = q;
    return q;
}

void *eg__scoped_alloc_raw(eg_engine *e, size_t bytes)
{
    assert(e->nscoped < EG_SCOPED_DEPTH);
    void *p = eg__marray(e, NULL, bytes ? bytes : 1, 1);
    e->scoped[e->nscoped++] = p;
    return p;
}

void eg__scoped_release(eg_engine *e, void *p)
{
    assert(e->nscoped > 0 && e->scoped[e->nscoped - 1] == p);
    (void)p;
    e->nscoped--;
}

void eg__scoped_free(eg_engine *e, void *p)
{
    assert(e->nscoped > 0 && e->scoped[e->nscoped - 1] == p);
    e->nscoped--;
    eg__mfree(e, p);
}

void eg__scoped_unwind(eg_engine *e, uint32_t mark)
{
    while (e->nscoped > mark)
        eg__mfree(e, e->scoped[--e->nscoped]);
}
