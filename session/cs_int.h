/* cs_int.h - the session module's internals: its one error door and its one allocation
 * door (cs_door.c). */
#ifndef LUMINAL_CS_INT_H
#define LUMINAL_CS_INT_H

#include "session.h"

#include <stdarg.h>
#include <stddef.h>

/* The module's error door: every error the session raises itself goes through here and
 * ends in lm_err_setv (the first error wins). */
int cs__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The module's allocation door: n * size checked for overflow; NULL on failure. */
void *cs__zalloc(size_t n, size_t size);
void cs__free(void *p);

#endif /* LUMINAL_CS_INT_H */
