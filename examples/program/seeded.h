/* seeded.h - seeded inputs and output checksums for the program example, shared with the
 * test that checks it (tests/program/make_example.c). Header-only; only base.h's PCG32.
 *
 * Input i is filled from PCG32 seeded with (seed, stream i): floats in [-1, 1] in steps of
 * 1/1000 (stored as the input's dtype), integers 0 .. 3, Bools 0 or 1. An output's
 * checksum is the FNV-1a hash of its bytes and, for f32, the sum of its elements. */
#ifndef LUMINAL_EXAMPLES_PROGRAM_SEEDED_H
#define LUMINAL_EXAMPLES_PROGRAM_SEEDED_H

#include "base.h"

#include <stdio.h>
#include <string.h>

/* f32 -> bf16 / f16 bits, round to nearest even (normal values; the inputs are small). */
static inline uint16_t ex_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline uint16_t ex_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a < 0x38800000u) return (uint16_t)sign; /* below f16's normals: zero */
    uint32_t m = a - 0x38000000u;               /* rebias the exponent (127 -> 15) */
    uint32_t h = (m + 0xfffu + ((m >> 13) & 1u)) >> 13;
    return (uint16_t)(sign | (h > 0x7bffu ? 0x7bffu : h));
}

static inline void ex_fill(void *data, uint64_t numel, const char *dtype, uint64_t seed,
                           uint32_t stream)
{
    lm_pcg32 r;
    lm_pcg_seed(&r, seed, stream);
    for (uint64_t i = 0; i < numel; i++) {
        uint32_t x = lm_pcg_next(&r);
        float f = (float)((int)(x % 2001u) - 1000) / 1000.0f;
        if (!strcmp(dtype, "f32")) {
            ((float *)data)[i] = f;
        } else if (!strcmp(dtype, "bf16")) {
            ((uint16_t *)data)[i] = ex_to_bf16(f);
        } else if (!strcmp(dtype, "f16")) {
            ((uint16_t *)data)[i] = ex_to_f16(f);
        } else if (!strcmp(dtype, "int")) {
            ((int32_t *)data)[i] = (int32_t)(x % 4u);
        } else if (!strcmp(dtype, "i64")) {
            ((int64_t *)data)[i] = (int64_t)(x % 4u);
        } else if (!strcmp(dtype, "bool")) {
            ((uint8_t *)data)[i] = (uint8_t)(x & 1u);
        } else { /* fp8: small values of either sign */
            ((uint8_t *)data)[i] = (uint8_t)(x & 0xbfu);
        }
    }
}

static inline uint64_t ex_fnv1a(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* "output NAME DTYPE [d0, d1] fnv1a HEX sum S" (sum only for f32). */
static inline void ex_print_output(FILE *f, const char *name, const char *dtype, uint32_t ndim,
                                   const int64_t *dims, const void *data, size_t bytes)
{
    fprintf(f, "output %s %s [", name, dtype);
    for (uint32_t d = 0; d < ndim; d++)
        fprintf(f, "%s%lld", d ? ", " : "", (long long)dims[d]);
    fprintf(f, "] fnv1a %016llx", (unsigned long long)ex_fnv1a(data, bytes));
    if (!strcmp(dtype, "f32")) {
        double s = 0;
        for (size_t i = 0; i < bytes / 4; i++)
            s += ((const float *)data)[i];
        fprintf(f, " sum %.9g", s);
    }
    fputc('\n', f);
}

#endif /* LUMINAL_EXAMPLES_PROGRAM_SEEDED_H */
