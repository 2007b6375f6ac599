/* space.c - `luminal_search --emit space` and `--emit space-json`: the compile session
 * (session.h: the graph encoded in an engine, saturated with the rules, the built-in ones
 * or --rules FILE, and the search space read from it), then the space's summary, or the
 * e-graph as egraph-serialize JSON with the dtype of every IR class. The saturation's
 * phases are reported on stderr. */
#include "ls_int.h"

#include "session.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "luminal_search: --emit %s: %s\n", what, msg);
    return 1;
}

/* The compile session (session.h): the built-in rules or --rules FILE; the engine's
 * diagnostics and the saturation report on stderr unless --quiet; the rules' own print
 * commands on stderr, never mixed with what we emit. */
static cs_session *build(const hl_graph *g, const ls_opts *o)
{
    lm_err err = {0};
    cs_options co = {.rules_path = o->rules, .log = o->quiet ? NULL : stderr, .out = stderr};
    cs_session *s = cs_session_new(g, &co, &err);
    if (!s) fail(o->emit, err.msg);
    return s;
}

static int emit_json_summary(const ll_space *s)
{
    ll_space_stats st;
    ll_space_get_stats(s, &st);
    uint32_t *counts = calloc(ll_op_count(), sizeof(uint32_t));
    json_t *ops = json_object();
    if (!counts || !ops) {
        free(counts);
        json_decref(ops);
        return fail("space", "out of memory");
    }
    ll_space_op_counts(s, counts);
    for (uint32_t i = 0; i < ll_op_count(); i++)
        if (counts[i]) json_object_set_new(ops, ll_op_get((ll_op)i)->name, json_integer(counts[i]));
    free(counts);
    json_t *obj = json_pack("{s:i, s:i, s:i, s:i, s:I, s:f, s:i, s:o}", "classes", (int)st.classes,
                            "searchable", (int)st.searchable, "reachable", (int)st.reachable,
                            "decisions", (int)st.decisions, "choices", (json_int_t)st.choices,
                            "log2_programs", st.log2_programs, "pruned", (int)st.pruned, "ops",
                            ops);
    char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (!text) return fail("space", "out of memory");
    printf("%s\n", text);
    free(text);
    return 0;
}

int ls_emit_space(const hl_graph *g, const ls_opts *o)
{
    cs_session *s = build(g, o);
    if (!s) return 1;
    int rc = 0;
    if (o->json)
        rc = emit_json_summary(cs_session_space(s));
    else
        ll_space_fprint_summary(cs_session_space(s), stdout);
    cs_session_free(s);
    return rc;
}

int ls_emit_space_json(const hl_graph *g, const ls_opts *o)
{
    cs_session *s = build(g, o);
    if (!s) return 1;
    int rc = 0;
    lm_err err = {0};
    if (ll_space_write_json(cs_session_space(s), stdout, &err) != LM_OK)
        rc = fail("space-json", err.msg);
    cs_session_free(s);
    return rc;
}
