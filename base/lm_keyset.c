/* lm_keyset.c - the set of hashed keys (lm_keyset.h). */
#include "lm_keyset.h"

#include <stdlib.h>
#include <string.h>

#define LM_KEYSET_FIRST 256 /* slots of a set's first table */

void lm_keyset_fini(lm_keyset *k)
{
    free(k->lo);
    free(k->hi);
    free(k->used);
    memset(k, 0, sizeof *k);
}

/* The slot of (lo, hi), or the empty slot where it goes. The keys are hashes already:
 * the low bits of lo mixed with hi are the start. */
static size_t slot_of(const lm_keyset *k, uint64_t lo, uint64_t hi)
{
    size_t m = k->cap - 1, i = (size_t)(lo ^ (hi * 0x9e3779b97f4a7c15ull)) & m;
    while (k->used[i] && !(k->lo[i] == lo && k->hi[i] == hi))
        i = (i + 1) & m;
    return i;
}

bool lm_keyset_has(const lm_keyset *k, uint64_t lo, uint64_t hi)
{
    return k->cap && k->used[slot_of(k, lo, hi)];
}

static int grow(lm_keyset *k)
{
    lm_keyset big = {0};
    big.cap = k->cap ? k->cap * 2 : LM_KEYSET_FIRST;
    if (big.cap < k->cap || big.cap > SIZE_MAX / sizeof *big.lo) return -1;
    big.lo = malloc(big.cap * sizeof *big.lo);
    big.hi = malloc(big.cap * sizeof *big.hi);
    big.used = calloc(big.cap, 1);
    if (!big.lo || !big.hi || !big.used) {
        lm_keyset_fini(&big);
        return -1;
    }
    for (size_t i = 0; i < k->cap; i++) {
        if (!k->used[i]) continue;
        size_t j = slot_of(&big, k->lo[i], k->hi[i]);
        big.used[j] = 1;
        big.lo[j] = k->lo[i];
        big.hi[j] = k->hi[i];
    }
    big.n = k->n;
    lm_keyset_fini(k);
    *k = big;
    return 0;
}

int lm_keyset_add(lm_keyset *k, uint64_t lo, uint64_t hi)
{
    if (k->cap && lm_keyset_has(k, lo, hi)) return 0;
    if ((k->n + 1) * 2 > k->cap && grow(k) != 0) return -1;
    size_t i = slot_of(k, lo, hi);
    k->used[i] = 1;
    k->lo[i] = lo;
    k->hi[i] = hi;
    k->n++;
    return 1;
}
