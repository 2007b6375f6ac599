/* hl_err.c - the one door every hlir error goes through, and status names.
 *
 * The first error recorded in a record wins: later failures are usually consequences of
 * the first, and the first is what the user must fix. */
#include "hl_int.h"

#include <stdarg.h>
#include <string.h>

void hl_error_clear(hl_error *e)
{
    if (!e) return;
    e->code = HL_OK;
    e->node = HL_NONE;
    e->msg[0] = '\0';
}

hl_status hl_error_set(hl_error *e, hl_status code, uint32_t node, const char *fmt, ...)
{
    if (!e) return code;
    if (e->code != HL_OK) return e->code; /* sticky: keep the first */
    e->code = code;
    e->node = node;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return code;
}

const char *hl_status_name(hl_status s)
{
    switch (s) {
    case HL_OK:
        return "ok";
    case HL_ERR_NOMEM:
        return "out of memory";
    case HL_ERR_ARG:
        return "bad argument";
    case HL_ERR_SHAPE:
        return "shape mismatch";
    case HL_ERR_DTYPE:
        return "dtype mismatch";
    case HL_ERR_DIM:
        return "unknown dimension";
    case HL_ERR_EVAL:
        return "expression evaluation failed";
    case HL_ERR_RUNTIME:
        return "runtime error";
    case HL_ERR_PARSE:
        return "parse error";
    case HL_ERR_IO:
        return "i/o error";
    case HL_ERR_VIEW:
        return "view not expressible";
    }
    return "unknown status";
}
