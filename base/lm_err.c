/* lm_err.c - the error record and the door every error of the project goes through.
 *
 * Each module raises through a door of its own (hl__fail, eg__throw, rt__fail, ...) and
 * every one of those ends here, in lm_err_setv: a breakpoint on it stops at every error
 * of every module. The first error recorded in a record wins: later failures are
 * usually consequences of the first, and the first is what the user must fix. */
#include "base.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *ident, *name;
} CODES[LM_CODE_COUNT] = {
    [LM_OK] = {"LM_OK", "ok"},
    [LM_ENOMEM] = {"LM_ENOMEM", "out of memory"},
    [LM_EARG] = {"LM_EARG", "bad argument"},
    [LM_EPARSE] = {"LM_EPARSE", "parse error"},
    [LM_EIO] = {"LM_EIO", "i/o error"},
    [LM_ELIMIT] = {"LM_ELIMIT", "limit reached"},
    [LM_EUNSUPPORTED] = {"LM_EUNSUPPORTED", "not supported"},
    [LM_ETYPE] = {"LM_ETYPE", "type error"},
    [LM_ERUNTIME] = {"LM_ERUNTIME", "runtime error"},
    [LM_ESHAPE] = {"LM_ESHAPE", "shape mismatch"},
    [LM_EDTYPE] = {"LM_EDTYPE", "dtype mismatch"},
    [LM_EDIM] = {"LM_EDIM", "unknown dimension"},
    [LM_EEVAL] = {"LM_EEVAL", "expression evaluation failed"},
    [LM_EVIEW] = {"LM_EVIEW", "view not expressible"},
    [LM_EVERIFY] = {"LM_EVERIFY", "verification failed"},
    [LM_EMISMATCH] = {"LM_EMISMATCH", "outputs disagree"},
    [LM_ENODEV] = {"LM_ENODEV", "no CUDA device"},
    [LM_EDRIVER] = {"LM_EDRIVER", "driver error"},
    [LM_EFAULT] = {"LM_EFAULT", "kernel fault"},
    [LM_ENVRTC] = {"LM_ENVRTC", "NVRTC error"},
    [LM_ECOMPILE] = {"LM_ECOMPILE", "compile error"},
    [LM_EBLAS] = {"LM_EBLAS", "cuBLASLt error"},
    [LM_ETIMEOUT] = {"LM_ETIMEOUT", "timeout"},
    [LM_ESTALE] = {"LM_ESTALE", "stale object"},
};

const char *lm_code_name(int code)
{
    if (code < 0 || code >= LM_CODE_COUNT || !CODES[code].name) return "unknown error";
    return CODES[code].name;
}

const char *lm_code_ident(int code)
{
    if (code < 0 || code >= LM_CODE_COUNT || !CODES[code].ident) return "LM_?";
    return CODES[code].ident;
}

void lm_err_clear(lm_err *err)
{
    if (!err) return;
    err->code = LM_OK;
    err->line = err->col = 0;
    err->node_id = LM_NONE;
    err->file[0] = err->node[0] = err->field[0] = '\0';
    err->msg[0] = '\0';
}

/* Copies s into a fixed field, truncating. */
static void put(char *dst, size_t cap, const char *s)
{
    if (!s) {
        dst[0] = '\0';
        return;
    }
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* Marks a message that vsnprintf truncated. */
static void mark_truncated(char *msg, size_t cap, int wanted, size_t used)
{
    if (wanted < 0 || (size_t)wanted + used < cap) return;
    memcpy(msg + cap - 4, "...", 4);
}

int lm_err_setv(lm_err *err, int code, const lm_loc *loc, const char *fmt, va_list ap)
{
    if (!err) return code;
    if (err->code != LM_OK) return err->code; /* sticky: the first error wins */
    lm_err_clear(err);
    err->code = code;
    size_t n = 0, cap = sizeof err->msg;
    if (loc) {
        put(err->file, sizeof err->file, loc->file);
        put(err->node, sizeof err->node, loc->node);
        put(err->field, sizeof err->field, loc->field);
        err->line = loc->line;
        err->col = loc->col;
        err->node_id = loc->node_id;
        int k = 0;
        if (loc->file && loc->line && loc->col)
            k = snprintf(err->msg, cap, "%s:%u:%u: ", loc->file, loc->line, loc->col);
        else if (loc->file && loc->line)
            k = snprintf(err->msg, cap, "%s:%u: ", loc->file, loc->line);
        else if (loc->file)
            k = snprintf(err->msg, cap, "%s: ", loc->file);
        if (k > 0) n = (size_t)k < cap ? (size_t)k : cap - 1;
        if (loc->node && n < cap) {
            k = snprintf(err->msg + n, cap - n, "node '%s': ", loc->node);
            if (k > 0) n += (size_t)k < cap - n ? (size_t)k : cap - n - 1;
        }
        if (loc->field && n < cap) {
            k = snprintf(err->msg + n, cap - n, "field '%s': ", loc->field);
            if (k > 0) n += (size_t)k < cap - n ? (size_t)k : cap - n - 1;
        }
    }
    int k = vsnprintf(err->msg + n, cap - n, fmt, ap);
    mark_truncated(err->msg, cap, k, n);
    return code;
}

int lm_err_set(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lm_err_setv(err, code, loc, fmt, ap);
    va_end(ap);
    return rc;
}

void lm_err_prefix(lm_err *err, const char *fmt, ...)
{
    if (!err || err->code == LM_OK) return;
    char head[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    char old[LM_ERR_MSG];
    memcpy(old, err->msg, sizeof old);
    int w = snprintf(err->msg, sizeof err->msg, "%s: %s", head, old);
    mark_truncated(err->msg, sizeof err->msg, w, 0);
}

void lm_err_copy(lm_err *dst, const lm_err *src)
{
    if (!dst || !src || dst->code != LM_OK || src->code == LM_OK) return;
    memcpy(dst, src, sizeof *dst);
}
