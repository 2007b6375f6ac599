/* pg_door.c - program/'s doors: every error of the module goes through pg__fail (or
 * pg__wrap, for an error another module raised), every allocation through pg__alloc. */
#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pg__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    if (lm_err_is_set(err)) return err->code;
    char msg[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!loc) return lm_err_set(err, code, NULL, "%s", msg);
    lm_loc at = *loc;
    at.node = NULL; /* the program's name is written "program 'x'", not "node 'x'" */
    bool any = at.file || at.field || at.line || at.node_id != LM_NONE;
    int rc = loc->node ? lm_err_set(err, code, any ? &at : NULL, "program '%s': %s", loc->node, msg)
                       : lm_err_set(err, code, any ? &at : NULL, "%s", msg);
    if (err && loc->node) snprintf(err->node, sizeof err->node, "%s", loc->node);
    return rc;
}

void pg__wrap(lm_err *err, const char *name, const char *fmt, ...)
{
    if (!lm_err_is_set(err)) return;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (name)
        lm_err_prefix(err, "program '%s': %s", name, what);
    else
        lm_err_prefix(err, "%s", what);
}

/* The allocation door: a thin door over base's counted one (base.h, "Memory"); zeroed. */
void *pg__alloc(size_t n, size_t size)
{
    return lm_zalloc(n, size);
}

void pg__free(void *p)
{
    lm_free(p);
}

char *pg__strdup(const char *s)
{
    return lm_strdup(s);
}
