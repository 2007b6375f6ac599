/* ll_eg.c - the engine adapter: every fallible call llir makes into the engine.
 *
 * The engine reports through base's lm_err with lm_code values, as llir does, so the
 * record is handed straight through; what this file adds is the context of each call
 * (which phase, which schedule) and the provenance of serialized nodes. */
#include "ll_int.h"

#include <stdio.h>

int ll__eg_run_text(eg_engine *e, const char *text, const char *name, lm_err *err)
{
    return eg_run_text(e, text, name, err);
}

int ll__eg_run_schedule(eg_engine *e, const char *sched, const char *what, eg_stop_reason *why,
                        lm_err *err)
{
    lm_err ee = {0};
    int rc = eg_run_schedule(e, sched, why, &ee);
    if (rc != 0) {
        lm_err_prefix(&ee, "%s: schedule \"%s\"", what, sched);
        lm_err_copy(err, &ee);
        return err ? err->code : rc;
    }
    return LM_OK;
}

int ll__eg_serialize(eg_engine *e, eg_value root, int root_sort, eg_serialized *out, lm_err *err)
{
    eg_serialize_opts o = {.roots = &root, .root_sorts = &root_sort, .nroots = 1, .origins = true};
    lm_err ee = {0};
    int rc = eg_serialize(e, &o, out, &ee);
    if (rc != 0) {
        lm_err_prefix(&ee, "the e-graph did not serialize");
        lm_err_copy(err, &ee);
        return err ? err->code : rc;
    }
    return LM_OK;
}

bool ll__eg_next_row(const eg_engine *e, int table, size_t *cursor, eg_value *cols)
{
    return eg_table_next_row(e, table, cursor, cols, NULL, NULL);
}

char *ll__eg_json(eg_engine *e, const eg_serialized *s, lm_err *err)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) {
        ll__oom(err, "space json");
        return NULL;
    }
    lm_err ee = {0};
    int rc = eg_serialized_write_json(e, s, f, &ee);
    if (fclose(f) != 0 || rc != 0 || !buf) {
        free(buf);
        ll__fail(err, LM_EIO, NULL, "space json: the e-graph's JSON could not be written%s%s",
                 ee.msg[0] ? ": " : "", ee.msg);
        return NULL;
    }
    return buf;
}

uint32_t ll__eg_origin(const eg_engine *e, const eg_serialized *s, uint32_t n)
{
    (void)e;
    if (n >= s->n_nodes || s->nodes[n].table == UINT32_MAX) return LM_NONE;
    return s->nodes[n].origin;
}

const char *ll__eg_origin_text(const eg_engine *e, uint32_t origin, char *buf, size_t cap)
{
    if (origin == LM_NONE) return "origin unknown";
    eg_origin o;
    lm_err ee = {0};
    if (eg_origin_get(e, origin, &o, &ee) != 0) {
        snprintf(buf, cap, "origin %u", origin);
        return buf;
    }
    switch (o.kind) {
    case EG_ORIGIN_RULE:
        snprintf(buf, cap, "rule '%s'", o.name);
        break;
    case EG_ORIGIN_COMMAND:
        if (o.file)
            snprintf(buf, cap, "command '%s' at %s:%u:%u", o.name, o.file, o.line, o.col);
        else
            snprintf(buf, cap, "command '%s'", o.name);
        break;
    case EG_ORIGIN_API:
    default:
        snprintf(buf, cap, "the C API");
        break;
    }
    return buf;
}
