/* lm_json.h - the one JSON writer of luminal-c (base/).
 *
 * A streaming writer: the caller says what comes next (open an object, a key, a string,
 * a number, close it) and the writer lays it out, escapes strings and puts the commas in.
 * Output goes to a FILE or to a growing buffer. Every file the project writes as JSON
 * (the graph's canonical form, the LLIR file, a saved program's plan.json, the e-graph's
 * serialized form) is written through it, so layout, escaping and number formatting are
 * decided here once.
 *
 * The writer is sticky, as lm_err is: the first failure (out of memory, a failed write, a
 * string that is not UTF-8, a number JSON cannot hold, a call out of place) is kept, every
 * later call does nothing, and the caller checks once at the end (lm_json_take,
 * lm_json_close). A writer needs no freeing after either of those.
 *
 * Layout. indent spaces per level (0: everything on one line, with "," and ":" and no
 * spaces); the outermost `levels` levels of containers put each member on a line of its
 * own and write ": " after a key, deeper ones are written on one line as with indent 0.
 * An empty container is "{}" or "[]". Nothing follows the last closing bracket (write
 * lm_json_raw(w, "\n") for a final newline).
 *
 * Strings are UTF-8 and written with every character above 0x7F escaped (\uXXXX, a
 * surrogate pair above 0xFFFF), as are '"', '\\' and the control characters (\b \f \n
 * \r \t, else \u00XX); hex digits are upper case. A string that is not valid UTF-8 fails
 * the writer (LM_EARG), so what is written always reads back as written.
 *
 * Numbers. Integers are written exactly. A double is written with 17 significant digits
 * (%.17g: it reads back to the same double), a float with the fewest digits that read
 * back to the same float (then laid out as %.9g would). Both always hold a '.' or an 'e'
 * (1.0, not 1) so that a reader sees a real, and an exponent has no '+' and no leading
 * zeros (1e-5, 1e20). Infinities and NaN have no JSON form: writing one fails the writer
 * (LM_EARG); a format that must hold them writes its own string for them.
 *
 * This is the layout and the number format of jansson's json_dumps (JSON_INDENT(n),
 * JSON_ENSURE_ASCII, JSON_COMPACT below the pretty levels), so the project's files kept
 * the same bytes when their writers moved here; jansson remains the reader.
 */
#ifndef LUMINAL_LM_JSON_H
#define LUMINAL_LM_JSON_H

#include "base.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LM_JSON_DEPTH 64 /* containers open at once; deeper fails the writer (LM_ELIMIT) */

/* The writer. Fields are the writer's own; set up with lm_json_init_buf or
 * lm_json_init_file. */
typedef struct lm_json {
    FILE *f;               /* the file written to; NULL when writing to buf */
    char *buf;             /* the text so far (buffer writers), NUL-terminated */
    size_t len, cap;       /* bytes in buf (or written to f), buf's capacity */
    unsigned indent;       /* spaces per level; 0: one line */
    unsigned levels;       /* how many outer levels are laid out on lines */
    uint32_t depth;        /* containers open */
    uint32_t n[LM_JSON_DEPTH]; /* members written so far in each open container */
    bool obj[LM_JSON_DEPTH];   /* whether each open container is an object */
    bool keyed;            /* a key was written and its value is due */
    bool done;             /* the outermost value is complete */
    lm_err err;            /* the first failure (code LM_OK while none) */
} lm_json;

/* A writer into a growing buffer (from base's counted door), taken with lm_json_take. */
void lm_json_init_buf(lm_json *w, unsigned indent, unsigned levels);
/* A writer to f (not closed by the writer); finished with lm_json_close. */
void lm_json_init_file(lm_json *w, FILE *f, unsigned indent, unsigned levels);

/* Containers. In an object every value is preceded by lm_json_key. */
void lm_json_obj(lm_json *w);
void lm_json_obj_end(lm_json *w);
void lm_json_arr(lm_json *w);
void lm_json_arr_end(lm_json *w);
/* A member's key (escaped as a string). */
void lm_json_key(lm_json *w, const char *key);

/* Values. lm_json_str writes null for NULL; lm_json_strn writes n bytes (NUL bytes are
 * escaped). */
void lm_json_str(lm_json *w, const char *s);
void lm_json_strn(lm_json *w, const char *s, size_t n);
void lm_json_int(lm_json *w, int64_t v);
void lm_json_uint(lm_json *w, uint64_t v);
void lm_json_f64(lm_json *w, double v);
void lm_json_f32(lm_json *w, float v);
/* A double with `digits` significant digits (%.*g, 1..17), in the layout above. */
void lm_json_real(lm_json *w, double v, int digits);
void lm_json_bool(lm_json *w, bool v);
void lm_json_null(lm_json *w);

/* A key and its value in one call. */
void lm_json_kstr(lm_json *w, const char *key, const char *s);
void lm_json_kint(lm_json *w, const char *key, int64_t v);
void lm_json_kf64(lm_json *w, const char *key, double v);
void lm_json_kbool(lm_json *w, const char *key, bool v);

/* Appends text verbatim, outside the layout (a final newline). */
void lm_json_raw(lm_json *w, const char *text);

/* Fails the writer with the caller's own error (the first failure wins), for a value
 * the caller could not make (out of memory printing it). */
void lm_json_fail(lm_json *w, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* True once the writer has failed. */
static inline bool lm_json_failed(const lm_json *w)
{
    return w->err.code != LM_OK;
}

/* Buffer writers: the text (NUL-terminated; free() or lm_free it) and its length in *len
 * (may be NULL). NULL when the writer failed or the value is not complete (open
 * containers, a key without a value, nothing written): the failure is raised into err
 * (LM_ENOMEM, LM_EARG, LM_ELIMIT, naming what went wrong). The writer is empty after. */
char *lm_json_take(lm_json *w, size_t *len, lm_err *err);
/* File writers: flushes the file and returns 0, or raises the failure into err (LM_EIO
 * for a failed write, or as lm_json_take) and returns its code. Buffer writers: frees the
 * text and returns the same. */
int lm_json_close(lm_json *w, lm_err *err);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_LM_JSON_H */
