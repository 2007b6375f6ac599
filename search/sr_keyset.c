/* sr_keyset.c - the search's sets of seen keys (sr_state.h): genome hashes (64 bits)
 * and LLIR fingerprints (128 bits). Open addressing with linear probing at most half
 * full; the keys are hashes already, so the slot is their low bits mixed once. */
#include "sr_state.h"

#include <stdlib.h>
#include <string.h>

void sr__keyset_fini(sr_keyset *k)
{
    free(k->lo);
    free(k->hi);
    free(k->used);
    memset(k, 0, sizeof *k);
}

static size_t slot_of(const sr_keyset *k, uint64_t lo, uint64_t hi)
{
    size_t m = k->cap - 1, i = (size_t)(lo ^ (hi * 0x9e3779b97f4a7c15ull)) & m;
    while (k->used[i] && !(k->lo[i] == lo && k->hi[i] == hi))
        i = (i + 1) & m;
    return i;
}

bool sr__keyset_has(const sr_keyset *k, uint64_t lo, uint64_t hi)
{
    return k->cap && k->used[slot_of(k, lo, hi)];
}

/* 1 inserted, 0 present, -1 out of memory. */
int sr__keyset_add(sr_keyset *k, uint64_t lo, uint64_t hi)
{
    if ((k->n + 1) * 2 > k->cap) {
        sr_keyset big = {0};
        big.cap = k->cap ? k->cap * 2 : 256;
        big.lo = sr__alloc(big.cap, sizeof *big.lo);
        big.hi = sr__alloc(big.cap, sizeof *big.hi);
        big.used = sr__zalloc(big.cap, 1);
        if (!big.lo || !big.hi || !big.used) {
            sr__keyset_fini(&big);
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
        sr__keyset_fini(k);
        *k = big;
    }
    size_t i = slot_of(k, lo, hi);
    if (k->used[i]) return 0;
    k->used[i] = 1;
    k->lo[i] = lo;
    k->hi[i] = hi;
    k->n++;
    return 1;
}
