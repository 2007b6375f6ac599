/* sr_door.c - search's error door (sr_door.h). */
#include "sr_door.h"

#include <stdarg.h>

#include "llir.h"

int sr__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lm_err_setv(err, code, loc, fmt, ap);
    va_end(ap);
    return rc;
}

int sr__oom(lm_err *err, const char *who)
{
    return sr__fail(err, LM_ENOMEM, NULL, "%s: out of memory", who);
}

int sr__fingerprint(const ll_graph *g, ll_fingerprint *fp, lm_err *err, const char *who)
{
    *fp = ll_graph_fingerprint(g);
    if (fp->lo == UINT64_MAX && fp->hi == UINT64_MAX) return sr__oom(err, who);
    return LM_OK;
}
