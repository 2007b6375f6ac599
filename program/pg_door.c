/* pg_door.c - program/'s doors: every error of the module goes through pg__fail (or
 * pg__wrap, for an error another module raised), every allocation through pg__alloc. */
#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pg__fail(lm_err *err, int code, const char *name, const char *fmt, ...)
{
    if (lm_err_is_set(err)) return err->code;
    char msg[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (name) return lm_err_set(err, code, NULL, "program '%s': %s", name, msg);
    return lm_err_set(err, code, NULL, "%s", msg);
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

static long fail_after = -1;
static bool fail_fired;

void pg__mem_fail_after(long n)
{
    fail_after = n;
    fail_fired = false;
}

bool pg__mem_fail_fired(void)
{
    return fail_fired;
}

void *pg__alloc(size_t n, size_t size)
{
    if (fail_after >= 0 && fail_after-- == 0) {
        fail_fired = true;
        return NULL;
    }
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void pg__free(void *p)
{
    free(p);
}

char *pg__strdup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = pg__alloc(n, 1);
    if (d) memcpy(d, s, n);
    return d;
}
