/* rt_arena.c: the arena planner, a pure function of sizes, live intervals and conflicts.
 *
 * Two buffers interfere when their live intervals overlap or a conflict pair joins them;
 * interfering buffers must get disjoint byte ranges, others may share. Placement is
 * greedy: buffers in order of size (largest first; ties by first step, then id), each at
 * the lowest 256-aligned offset where it does not overlap an already placed buffer it
 * interferes with. Largest-first keeps big buffers at low offsets where they pack well;
 * an optimal packing is NP-hard and this is within a few percent of the lower bound
 * (max over steps of live bytes) on the interval graphs compilers produce.
 * rt_arena_check recomputes every constraint from scratch and is what tests trust.
 */
#include "rt_int.h"

#include <assert.h>
#include <stdlib.h>

static uint64_t align_up(uint64_t x)
{
    return (x + RT_ARENA_ALIGN - 1) & ~(uint64_t)(RT_ARENA_ALIGN - 1);
}

static bool overlaps_in_time(const rt_arena_buf *a, const rt_arena_buf *b)
{
    return !(a->last < b->first || b->last < a->first);
}

static int validate(const rt_arena_buf *bufs, uint32_t n, const rt_arena_pair *pairs,
                    uint32_t npairs, lm_err *err)
{
    for (uint32_t i = 0; i < n; i++) {
        if (bufs[i].last < bufs[i].first)
            return RT_FAIL(err, RT_EARG,
                           "arena buffer %u: live interval [%u, %u] ends before it starts; fix: "
                           "last must be >= first",
                           i, bufs[i].first, bufs[i].last);
        if (bufs[i].bytes > UINT64_MAX / 2)
            return RT_FAIL(err, RT_EARG, "arena buffer %u: size %llu bytes is too large", i,
                           (unsigned long long)bufs[i].bytes);
    }
    for (uint32_t p = 0; p < npairs; p++) {
        if (pairs[p].a >= n || pairs[p].b >= n)
            return RT_FAIL(
                err, RT_EARG,
                "arena conflict pair %u: (%u, %u) names a buffer out of range (there are "
                "%u buffers)",
                p, pairs[p].a, pairs[p].b, n);
        if (pairs[p].a == pairs[p].b)
            return RT_FAIL(err, RT_EARG,
                           "arena conflict pair %u: joins buffer %u to itself; fix: drop the pair",
                           p, pairs[p].a);
    }
    return 0;
}

/* Conflicts as sorted adjacency lists (CSR). */
typedef struct adj {
    uint32_t *start; /* n + 1 */
    uint32_t *to;    /* 2 * npairs */
} adj;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int adj_build(adj *g, uint32_t n, const rt_arena_pair *pairs, uint32_t npairs)
{
    g->start = rt__alloc((size_t)n + 1, sizeof *g->start);
    g->to = rt__alloc((size_t)npairs * 2 + 1, sizeof *g->to);
    uint32_t *fill = rt__alloc((size_t)n + 1, sizeof *fill);
    if (!g->start || !g->to || !fill) {
        rt__free(fill);
        return -1;
    }
    for (uint32_t p = 0; p < npairs; p++) {
        g->start[pairs[p].a + 1]++;
        g->start[pairs[p].b + 1]++;
    }
    for (uint32_t i = 0; i < n; i++)
        g->start[i + 1] += g->start[i];
    for (uint32_t i = 0; i < n; i++)
        fill[i] = g->start[i];
    for (uint32_t p = 0; p < npairs; p++) {
        g->to[fill[pairs[p].a]++] = pairs[p].b;
        g->to[fill[pairs[p].b]++] = pairs[p].a;
    }
    for (uint32_t i = 0; i < n; i++)
        qsort(g->to + g->start[i], g->start[i + 1] - g->start[i], sizeof *g->to, cmp_u32);
    rt__free(fill);
    return 0;
}

static void adj_free(adj *g)
{
    rt__free(g->start);
    rt__free(g->to);
}

static bool adj_has(const adj *g, uint32_t a, uint32_t b)
{
    uint32_t lo = g->start[a], hi = g->start[a + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->to[mid] == b) return true;
        if (g->to[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

typedef struct order_ctx {
    const rt_arena_buf *bufs;
    uint32_t id;
} order_item;

static int cmp_order(const void *pa, const void *pb)
{
    const order_item *a = pa, *b = pb;
    const rt_arena_buf *x = &a->bufs[a->id], *y = &b->bufs[b->id];
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

typedef struct range {
    uint64_t lo, hi;
} range;

static int cmp_range(const void *pa, const void *pb)
{
    const range *a = pa, *b = pb;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    return (a->hi > b->hi) - (a->hi < b->hi);
}

int rt_arena_plan(const rt_arena_buf *bufs, uint32_t n, const rt_arena_pair *pairs, uint32_t npairs,
                  uint64_t *offsets, uint64_t *peak, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    *peak = 0;
    if (validate(bufs, n, pairs, npairs, err)) return err->code;
    if (n == 0) return 0;
    adj g = {0};
    order_item *order = rt__alloc(n, sizeof *order);
    uint32_t *placed = rt__alloc(n, sizeof *placed);
    range *busy = rt__alloc(n, sizeof *busy);
    if (!order || !placed || !busy || adj_build(&g, n, pairs, npairs) != 0) {
        adj_free(&g);
        rt__free(order);
        rt__free(placed);
        rt__free(busy);
        return RT_FAIL(err, RT_ENOMEM, "out of memory planning an arena of %u buffers", n);
    }
    for (uint32_t i = 0; i < n; i++)
        order[i] = (order_item){bufs, i};
    qsort(order, n, sizeof *order, cmp_order);
    uint32_t nplaced = 0;
    uint64_t top = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k].id;
        uint64_t size = align_up(bufs[i].bytes);
        if (size == 0) {
            offsets[i] = 0;
            continue;
        }
        uint32_t nbusy = 0;
        for (uint32_t p = 0; p < nplaced; p++) {
            uint32_t j = placed[p];
            if (overlaps_in_time(&bufs[i], &bufs[j]) || adj_has(&g, i, j))
                busy[nbusy++] = (range){offsets[j], offsets[j] + align_up(bufs[j].bytes)};
        }
        qsort(busy, nbusy, sizeof *busy, cmp_range);
        uint64_t at = 0;
        for (uint32_t b = 0; b < nbusy; b++) {
            if (at + size <= busy[b].lo) break; /* fits in the gap before this range */
            if (busy[b].hi > at) at = busy[b].hi;
        }
        for (uint32_t b = 0; b < nbusy; b++) /* its bytes are its own while it lives */
            assert(at + size <= busy[b].lo || busy[b].hi <= at);
        offsets[i] = at;
        placed[nplaced++] = i;
        if (at + size > top) top = at + size;
    }
    *peak = top;
    adj_free(&g);
    rt__free(order);
    rt__free(placed);
    rt__free(busy);
    return 0;
}

int rt_arena_check(const rt_arena_buf *bufs, uint32_t n, const rt_arena_pair *pairs,
                   uint32_t npairs, const uint64_t *offsets, uint64_t peak, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (validate(bufs, n, pairs, npairs, err)) return err->code;
    if (peak % RT_ARENA_ALIGN)
        return RT_FAIL(err, RT_EARG, "arena peak %llu is not a multiple of %u",
                       (unsigned long long)peak, RT_ARENA_ALIGN);
    for (uint32_t i = 0; i < n; i++) {
        if (offsets[i] % RT_ARENA_ALIGN)
            return RT_FAIL(err, RT_EARG, "arena buffer %u: offset %llu is not %u-aligned", i,
                           (unsigned long long)offsets[i], RT_ARENA_ALIGN);
        if (bufs[i].bytes && offsets[i] + bufs[i].bytes > peak)
            return RT_FAIL(err, RT_EARG, "arena buffer %u: [%llu, %llu) runs past the peak %llu", i,
                           (unsigned long long)offsets[i],
                           (unsigned long long)(offsets[i] + bufs[i].bytes),
                           (unsigned long long)peak);
    }
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = i + 1; j < n; j++) {
            if (!bufs[i].bytes || !bufs[j].bytes) continue;
            bool bytes_meet =
                offsets[i] < offsets[j] + bufs[j].bytes && offsets[j] < offsets[i] + bufs[i].bytes;
            if (bytes_meet && overlaps_in_time(&bufs[i], &bufs[j]))
                return RT_FAIL(err, RT_EARG,
                               "arena buffers %u and %u share bytes while both live (steps [%u,%u] "
                               "and [%u,%u])",
                               i, j, bufs[i].first, bufs[i].last, bufs[j].first, bufs[j].last);
        }
    }
    for (uint32_t p = 0; p < npairs; p++) {
        uint32_t i = pairs[p].a, j = pairs[p].b;
        if (!bufs[i].bytes || !bufs[j].bytes) continue;
        if (offsets[i] < offsets[j] + bufs[j].bytes && offsets[j] < offsets[i] + bufs[i].bytes)
            return RT_FAIL(
                err, RT_EARG,
                "arena buffers %u and %u share bytes although conflict pair %u joins them", i, j,
                p);
    }
    return 0;
}
