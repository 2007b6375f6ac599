/* eg_err.c: the engine's one error door (eg__failv and its printf forms) and the helper
 * that turns a form's position into the project's location (eg__loc). */
#include "eg_int.h"

#include <setjmp.h>
#include <stdarg.h>

const lm_loc *eg__loc(lm_loc *buf, const sx *at)
{
    if (!at) return NULL;
    *buf = (lm_loc){.file = at->file ? at->file : "<input>",
                    .line = at->line,
                    .col = at->col,
                    .node_id = LM_NONE};
    return buf;
}

int eg__failv(lm_err *err, int code, const lm_loc *loc, const char *fmt, va_list ap)
{
    return lm_err_setv(err, code, loc, fmt, ap);
}

int eg__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = eg__failv(err, code, loc, fmt, ap);
    va_end(ap);
    return rc;
}

/* Raises an error out of the current command or API call: records it through the door
 * into the call's record (e->err) and unwinds to the innermost boundary (eg__guard, the
 * command boundary), which frees the command's scratch and restores a usable state. An
 * error without a location of its own gets the command's. */
void eg__throw(eg_engine *e, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    lm_loc cmd;
    if (!loc) loc = eg__loc(&cmd, e->cur_at);
    va_start(ap, fmt);
    e->thrown = eg__failv(e->err, code, loc, fmt, ap);
    va_end(ap);
    longjmp(*e->jmp, 1);
}
