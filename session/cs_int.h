/* cs_int.h - the session module's internals: its one error door and its one allocation
 * door, thin over base's (docs/architecture.md, "Errors" and "Out of memory"). */
#ifndef LUMINAL_CS_INT_H
#define LUMINAL_CS_INT_H

#include "session.h"

#include <stdint.h>
#include <stdlib.h>

/* The error door: lm_err_set (the first error wins; it ends in lm_err_setv). */
#define cs__fail(err, code, loc, ...) lm_err_set((err), (code), (loc), __VA_ARGS__)

/* The allocation door: n * size checked for overflow; zeroed; NULL on failure. */
static inline void *cs__zalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

static inline void cs__free(void *p)
{
    free(p);
}

#endif /* LUMINAL_CS_INT_H */
