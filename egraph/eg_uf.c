/* eg_uf.c: the union-find over e-class ids (eg__find, inline, is in eg_int.h). */
#include "eg_int.h"

#include <assert.h>

uint32_t eg__new_id(eg_engine *e)
{
    EG_MGROW(e, e->uf, e->capids, e->nids + 1);
    e->uf[e->nids] = e->nids; /* a new id is its own root */
    return e->nids++;
}

/* Unions the sets of a and b; the smaller root id becomes the root, so the result never
 * depends on argument order. Returns true if two sets were merged. */
bool eg__union(eg_engine *e, uint32_t a, uint32_t b)
{
    a = eg__find(e, a);
    b = eg__find(e, b);
    if (a == b) return false;
    if (a > b) {
        uint32_t t = a;
        a = b;
        b = t;
    }
    /* both are roots, and the smaller id stays one */
    assert(a < b && e->uf[a] == a && e->uf[b] == b);
    e->uf[b] = a;
    if (e->dirty_off) {
        e->dirty_lost = true;
    } else { /* an indexed rebuild visits the rows that hold b */
        EG_MGROW(e, e->dirty, e->capdirty, (size_t)e->ndirty + 1);
        e->dirty[e->ndirty++] = b;
    }
    e->unions++;
    e->changed = true;
    return true;
}
