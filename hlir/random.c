/* random.c - the module's one random number generator, and random tensor contents.
 *
 * PCG32 (O'Neill's permuted congruential generator, XSH RR variant): 64-bit state, a
 * stream selector, 32-bit outputs. Seeded from the caller's seed and stream only, so the
 * same seed gives the same numbers on every machine. The graph generator (gen.c) and the
 * random inputs of the reference runs draw from it. */
#include "hl_int.h"

uint32_t hl__pcg_next(hl__pcg32 *r)
{
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

void hl__pcg_seed(hl__pcg32 *r, uint64_t seed, uint64_t stream)
{
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    hl__pcg_next(r);
    r->state += seed;
    hl__pcg_next(r);
}

uint32_t hl__pcg_below(hl__pcg32 *r, uint32_t n)
{
    uint32_t threshold = (uint32_t)(-n) % n; /* 2^32 mod n: drawing below it would bias */
    for (;;) {
        uint32_t x = hl__pcg_next(r);
        if (x >= threshold) return x % n;
    }
}

void hl_tensor_fill_random(hl_tensor *t, uint64_t seed, uint64_t stream)
{
    hl__pcg32 r;
    hl__pcg_seed(&r, seed, stream);
    for (size_t i = 0; i < t->numel; i++) {
        uint32_t x = hl__pcg_next(&r);
        double v;
        if (hl_dtype_is_float(t->dtype))
            v = (double)(x >> 8) / (double)(1u << 23) - 1.0; /* [-1, 1) in steps of 2^-23 */
        else if (t->dtype == HL_BOOL)
            v = (double)(x >> 31);
        else
            v = (double)(x >> 30); /* 0 to 3 */
        hl_tensor_set(t, i, v);
    }
}
