/* fz_int.h - the fuzz module's internals: its one error door and its one allocation door
 * (fz_door.c). */
#ifndef LUMINAL_FZ_INT_H
#define LUMINAL_FZ_INT_H

#include "fuzz.h"
#include "session.h"

#include <stdarg.h>
#include <stddef.h>

/* The module's error door: every error the fuzzer raises itself goes through here and
 * ends in lm_err_setv (the first error wins). */
int fz__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The module's allocation door: n * size checked for overflow; NULL on failure. */
void *fz__alloc(size_t n, size_t size);
void *fz__zalloc(size_t n, size_t size);
void fz__free(void *p);

#endif /* LUMINAL_FZ_INT_H */
