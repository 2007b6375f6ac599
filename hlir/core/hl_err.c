/* hl_err.c - the one door every hlir error goes through.
 *
 * hl__fail records an error in the caller's lm_err and ends in lm_err_setv, base's door
 * for every module: a breakpoint on hl__fail stops at every hlir error, one on
 * lm_err_setv at every error of the project. The first error recorded in a record wins
 * (lm_err_setv keeps it): later failures are usually consequences of the first, and the
 * first is what the user must fix. The helpers that locate an error at a graph node
 * (hl__fail_node, in hl_graph.c) format their message and come through here too. */
#include "hl_int.h"

#include <stdarg.h>

hl_status hl__failv(lm_err *err, int code, const lm_loc *loc, const char *fmt, va_list ap)
{
    return (hl_status)lm_err_setv(err, code, loc, fmt, ap);
}

hl_status hl__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hl_status st = hl__failv(err, code, loc, fmt, ap);
    va_end(ap);
    return st;
}
