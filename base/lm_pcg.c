/* lm_pcg.c - PCG32 (O'Neill's permuted congruential generator, XSH RR variant).
 *
 * 64-bit state, a stream selector, 32-bit outputs. Seeded only from the caller's seed
 * and stream, so the same pair gives the same numbers on every machine. Every random
 * choice of the project draws from it: generated graphs, random inputs, genomes. */
#include "base.h"

uint32_t lm_pcg_next(lm_pcg32 *r)
{
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

void lm_pcg_seed(lm_pcg32 *r, uint64_t seed, uint64_t stream)
{
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    lm_pcg_next(r);
    r->state += seed;
    lm_pcg_next(r);
}

uint32_t lm_pcg_below(lm_pcg32 *r, uint32_t n)
{
    uint32_t threshold = (uint32_t)(-n) % n; /* 2^32 mod n: drawing below it would bias */
    for (;;) {
        uint32_t x = lm_pcg_next(r);
        if (x >= threshold) return x % n;
    }
}

double lm_pcg_unit(lm_pcg32 *r)
{
    return (double)lm_pcg_next(r) / 4294967296.0;
}
