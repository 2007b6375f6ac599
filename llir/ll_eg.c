/* ll_eg.c - the engine adapter: every fallible call llir makes into the engine.
 *
 * The engine is being converted from its own error record (eg_error, negative codes) to
 * base's lm_err with positive lm_code values. Only this file knows which one it has: it
 * tests codes with != 0, copies the message, and maps a code to an lm_code (a positive
 * code already is one). After the conversion the record is passed straight through and
 * code_of becomes the identity. */
#include "ll_int.h"

#include <stdio.h>

static int code_of(int rc)
{
    if (rc > 0) return rc; /* the engine's codes are lm_code values */
    switch (rc) {
    case EG_ERR_PARSE:
        return LM_EPARSE;
    case EG_ERR_TYPE:
        return LM_ETYPE;
    case EG_ERR_RUNTIME:
        return LM_ERUNTIME;
    case EG_ERR_IO:
        return LM_EIO;
    case EG_ERR_ARG:
        return LM_EARG;
    default:
        return LM_ERUNTIME;
    }
}

int ll__eg_run_text(eg_engine *e, const char *text, const char *name, lm_err *err)
{
    eg_error ee;
    ee.code = 0;
    ee.msg[0] = 0;
    int rc = eg_run_text(e, text, name, &ee);
    if (rc != 0) return ll__fail(err, code_of(rc), NULL, "%s", ee.msg);
    return LM_OK;
}

int ll__eg_run_schedule(eg_engine *e, const char *sched, const char *what, eg_stop_reason *why,
                        lm_err *err)
{
    eg_error ee;
    ee.code = 0;
    ee.msg[0] = 0;
    int rc = eg_run_schedule(e, sched, why, &ee);
    if (rc != 0)
        return ll__fail(err, code_of(rc), NULL, "%s: schedule \"%s\": %s", what, sched, ee.msg);
    return LM_OK;
}

int ll__eg_serialize(eg_engine *e, eg_value root, int root_sort, eg_serialized *out, lm_err *err)
{
    eg_error ee;
    ee.code = 0;
    ee.msg[0] = 0;
    int rc = eg_serialize(e, &root, &root_sort, 1, out, &ee);
    if (rc != 0)
        return ll__fail(err, code_of(rc), NULL, "the e-graph did not serialize: %s", ee.msg);
    return LM_OK;
}

bool ll__eg_next_row(const eg_engine *e, int table, size_t *cursor, eg_value *cols)
{
    return eg_table_next_row(e, table, cursor, cols) == 1;
}

char *ll__eg_json(const eg_engine *e, const eg_serialized *s, lm_err *err)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) {
        ll__oom(err, "space json");
        return NULL;
    }
    int rc = eg_serialized_write_json(e, s, f);
    if (fclose(f) != 0 || rc != 0 || !buf) {
        free(buf);
        ll__fail(err, LM_EIO, NULL, "space json: the e-graph's JSON could not be written");
        return NULL;
    }
    return buf;
}

/* TODO(eg_row_origin): the serialized node's origin (eg_snode.origin) and its text
 * (eg_origin_get) once the engine has provenance. */
uint32_t ll__eg_origin(const eg_engine *e, const eg_serialized *s, uint32_t n)
{
    (void)e;
    (void)s;
    (void)n;
    return LM_NONE;
}

const char *ll__eg_origin_text(const eg_engine *e, uint32_t origin, char *buf, size_t cap)
{
    (void)e;
    if (origin == LM_NONE) return "origin unknown (the engine has no provenance yet)";
    snprintf(buf, cap, "origin %u", origin);
    return buf;
}
