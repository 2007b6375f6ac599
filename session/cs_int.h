/* cs_int.h - the session module's internals: its one error door and its one allocation
 * door, thin over base's (docs/architecture.md, "Errors" and "Out of memory"). */
#ifndef LUMINAL_CS_INT_H
#define LUMINAL_CS_INT_H

#include "session.h"

#include <stddef.h>

/* The error door: lm_err_set (the first error wins; it ends in lm_err_setv). */
#define cs__fail(err, code, loc, ...) lm_err_set((err), (code), (loc), __VA_ARGS__)

/* The allocation door: base's counted door (lm_zalloc: n * size checked for overflow,
 * zeroed, NULL on failure; lm_mem_fail_after fails it with every other module's). */
static inline void *cs__zalloc(size_t n, size_t size)
{
    return lm_zalloc(n, size);
}

static inline void cs__free(void *p)
{
    lm_free(p);
}

#endif /* LUMINAL_CS_INT_H */
