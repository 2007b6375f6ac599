/* hl_encode_int.h - internals shared by the e-graph encoder and decoder (not public).
 *
 * The constructors, their names, sorts and fields are the public vocabulary
 * (hl_enc_vocab, hl_encode.h), so the walker that writes terms and the decoder that
 * reads them agree on every name by construction; this header holds what only they
 * share. */
#ifndef LUMINAL_ENCODE_INT_H
#define LUMINAL_ENCODE_INT_H

#include "hl_int.h"
#include "hl_encode.h"

/* A binary min-heap of uint32 in h[0 .. *n): Kahn orders with the lowest ready id first,
 * in the encoder (node ids) and the decoder (class ids). The caller sizes h. */
static inline void hl__heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
    uint32_t j = (*n)++;
    h[j] = v;
    while (j && h[(j - 1) / 2] > h[j]) {
        uint32_t p = (j - 1) / 2, t = h[p];
        h[p] = h[j];
        h[j] = t;
        j = p;
    }
}

static inline uint32_t hl__heap_pop(uint32_t *h, uint32_t *n)
{
    uint32_t top = h[0];
    h[0] = h[--*n];
    for (uint32_t j = 0;;) {
        uint32_t l = 2 * j + 1, r = l + 1, m = j;
        if (l < *n && h[l] < h[m]) m = l;
        if (r < *n && h[r] < h[m]) m = r;
        if (m == j) break;
        uint32_t t = h[m];
        h[m] = h[j];
        h[j] = t;
        j = m;
    }
    return top;
}

#endif /* LUMINAL_ENCODE_INT_H */
