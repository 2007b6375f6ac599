/* cs_door.c - the session module's one error door and one allocation door (cs_int.h). */
#include "cs_int.h"

#include <stdint.h>
#include <stdlib.h>

int cs__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lm_err_setv(err, code, loc, fmt, ap);
    va_end(ap);
    return rc;
}

void *cs__zalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void cs__free(void *p)
{
    free(p);
}
