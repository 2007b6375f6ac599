/* fz_door.c - the fuzz module's one error door and one allocation door (fz_int.h). */
#include "fz_int.h"

#include <stdint.h>
#include <stdlib.h>

int fz__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lm_err_setv(err, code, loc, fmt, ap);
    va_end(ap);
    return rc;
}

void *fz__alloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    return malloc(n && size ? n * size : 1);
}

void *fz__zalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void fz__free(void *p)
{
    free(p);
}
