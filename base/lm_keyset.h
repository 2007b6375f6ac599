/* lm_keyset.h - a set of 128-bit keys that are hashes already (a canonical genome's hash,
 * an LLIR fingerprint): open addressing with linear probing, grown to keep it at most
 * half full. A 64-bit key is (key, 0). Zero-initialise it (`lm_keyset k = {0};`): the
 * empty set; lm_keyset_fini frees it. Iteration order is never exposed, so nothing built
 * on it depends on hash order. */
#ifndef LUMINAL_LM_KEYSET_H
#define LUMINAL_LM_KEYSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lm_keyset {
    uint64_t *lo, *hi;
    uint8_t *used;
    size_t cap, n; /* cap: 0 or a power of two; n: the keys held */
} lm_keyset;

/* Adds (lo, hi): 1 when it was not there, 0 when it was, -1 when growing the set ran out
 * of memory (the set is then as it was). */
int lm_keyset_add(lm_keyset *k, uint64_t lo, uint64_t hi);
/* Whether (lo, hi) is in the set. */
bool lm_keyset_has(const lm_keyset *k, uint64_t lo, uint64_t hi);
/* Frees the set and empties it. Accepts an empty set. */
void lm_keyset_fini(lm_keyset *k);

#endif /* LUMINAL_LM_KEYSET_H */
