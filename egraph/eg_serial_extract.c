/* eg_serial_extract.c - least tree size extraction over a serialized e-graph
 * (eg_serial.h): Knuth's generalisation of Dijkstra's algorithm to the hypergraph of
 * classes and nodes.
 *
 * A node's size is 1 + the sum of its children's, which is monotone and never below any
 * child's, so the cheapest unsettled class is final when it leaves the heap. Each usable
 * node counts its children's classes not yet settled; settling a class decrements its
 * users' counts, and a node whose count reaches 0 has its size computed once and offered
 * to its class. When a class leaves the heap at size K, every node of that class of size
 * K has already been offered (its children are smaller, so they were settled first), so
 * ties go to the lowest index exactly as a fixpoint iteration would give them.
 *
 * The work memory is the caller's, laid out as:
 *   pending[n_nodes] u32   per usable node: child occurrences whose class is unsettled
 *   ustart[n_classes+1]    per class: its users' range in users[]
 *   users[n_children] u32  per class: the usable nodes reading it, once per occurrence
 *   settled[n_classes] u32
 *   heap[n_nodes + 1]      (size, class) pairs: two u64 each
 */
#include "eg_serial.h"

#include <assert.h>
#include <string.h>

#define NONE UINT32_MAX
#define INF UINT64_MAX

static size_t n_children(const eg_serialized *s)
{
    size_t n = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        n += s->nodes[i].nchildren;
    return n;
}

size_t eg_serial_extract_work(const eg_serialized *s)
{
    size_t u32 = (size_t)s->n_nodes + ((size_t)s->n_classes + 1) + n_children(s) + s->n_classes;
    return (u32 + 1) / 2 + 2 * ((size_t)s->n_nodes + 1);
}

typedef struct hent {
    uint64_t size;
    uint64_t cls;
} hent;

static bool less(const hent *a, const hent *b)
{
    return a->size < b->size || (a->size == b->size && a->cls < b->cls);
}

static void push(hent *h, uint32_t *n, uint64_t size, uint32_t cls)
{
    uint32_t i = (*n)++;
    h[i].size = size;
    h[i].cls = cls;
    while (i > 0 && less(&h[i], &h[(i - 1) / 2])) {
        uint32_t p = (i - 1) / 2;
        hent t = h[p];
        h[p] = h[i];
        h[i] = t;
        i = p;
    }
}

static hent pop(hent *h, uint32_t *n)
{
    hent top = h[0];
    h[0] = h[--(*n)];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && less(&h[l], &h[m])) m = l;
        if (r < *n && less(&h[r], &h[m])) m = r;
        if (m == i) break;
        hent t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
    return top;
}

/* Offers node n of size sz to its class. */
static void offer(const eg_serialized *s, uint64_t *cost, uint32_t *pick, hent *heap, uint32_t *nh,
                  uint32_t n, uint64_t sz)
{
    uint32_t c = s->nodes[n].eclass;
    if (sz < cost[c]) {
        cost[c] = sz;
        pick[c] = n;
        push(heap, nh, sz, c);
    } else if (sz == cost[c] && n < pick[c]) {
        pick[c] = n; /* already queued at this size */
    }
}

void eg_serial_extract(const eg_serialized *s, eg_serial_usable usable, void *ctx, uint64_t *cost,
                       uint32_t *pick, uint64_t *work)
{
    uint32_t nn = s->n_nodes, nc = s->n_classes;
    uint32_t *pending = (uint32_t *)work;
    uint32_t *ustart = pending + nn;
    uint32_t *users = ustart + nc + 1;
    size_t nch = n_children(s);
    uint32_t *settled = users + nch;
    size_t u32 = (size_t)nn + nc + 1 + nch + nc;
    hent *heap = (hent *)(work + (u32 + 1) / 2);
    for (uint32_t c = 0; c < nc; c++) {
        cost[c] = INF;
        pick[c] = NONE;
        settled[c] = 0;
    }
    memset(ustart, 0, ((size_t)nc + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < nn; i++) {
        const eg_snode *n = &s->nodes[i];
        pending[i] = usable(ctx, i) ? n->nchildren : NONE;
        if (pending[i] == NONE) continue;
        for (uint32_t k = 0; k < n->nchildren; k++)
            ustart[s->children[n->child_start + k] + 1]++;
    }
    for (uint32_t c = 0; c < nc; c++)
        ustart[c + 1] += ustart[c];
    /* fill users[] with the cursors in settled[] (reset below) */
    for (uint32_t c = 0; c < nc; c++)
        settled[c] = ustart[c];
    for (uint32_t i = 0; i < nn; i++) {
        if (pending[i] == NONE) continue;
        const eg_snode *n = &s->nodes[i];
        for (uint32_t k = 0; k < n->nchildren; k++) {
            uint32_t c = s->children[n->child_start + k];
            users[settled[c]++] = i;
        }
    }
    for (uint32_t c = 0; c < nc; c++)
        settled[c] = 0;
    uint32_t nh = 0;
    for (uint32_t i = 0; i < nn; i++)
        if (pending[i] == 0) offer(s, cost, pick, heap, &nh, i, 1);
    while (nh) {
        hent top = pop(heap, &nh);
        uint32_t c = (uint32_t)top.cls;
        if (settled[c] || top.size != cost[c]) continue; /* a stale entry */
        settled[c] = 1;
        for (uint32_t u = ustart[c]; u < ustart[c + 1]; u++) {
            uint32_t m = users[u];
            assert(pending[m] != NONE && pending[m] > 0);
            if (--pending[m]) continue;
            /* every child is settled: the node's size is final */
            const eg_snode *n = &s->nodes[m];
            uint64_t sz = 1;
            for (uint32_t k = 0; k < n->nchildren && sz != INF; k++) {
                uint64_t cc = cost[s->children[n->child_start + k]];
                sz = cc >= INF - sz ? INF : sz + cc;
            }
            if (sz != INF) offer(s, cost, pick, heap, &nh, m, sz);
        }
    }
    /* a class that was offered but never settled cannot exist: the heap empties only
     * after settling every class it held */
}
