/* ll_err.c - the door every llir error goes through. A breakpoint on ll__fail stops at
 * every error the module raises; it ends in base's lm_err_setv like every module's door. */
#include "ll_int.h"

#include <stdio.h>

int ll__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lm_err_setv(err, code, loc, fmt, ap);
    va_end(ap);
    return rc;
}

int ll__oom(lm_err *err, const char *where)
{
    return ll__fail(err, LM_ENOMEM, NULL, "%s: out of memory", where);
}

int ll__vfail_prefix(lm_err *err, int code, const lm_loc *loc, const char *prefix, const char *fmt,
                     va_list ap)
{
    if (lm_err_is_set(err)) return err->code; /* the first error wins */
    char msg[LM_ERR_MSG];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return ll__fail(err, code, loc, "%s: %s", prefix, msg);
}
