/* space.c - `luminal_search --emit space` and `--emit space-json`: the graph encoded in an
 * engine, saturated with the rules (the built-in ones, or --rules FILE), and the search
 * space read from it (llir.h): its summary, or the e-graph as egraph-serialize JSON with
 * the dtype of every IR class. The saturation's phases are reported on stderr. */
#include "ls_int.h"

#include "llir.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Limits the compiler always runs the engine with (docs/architecture.md, Out of memory):
 * half the memory this process may use, and a row count far beyond any graph's. */
#define LS_NODE_LIMIT 200000000ull

typedef struct built {
    eg_engine *e;
    hl_encoding enc;
    ll_space *s;
    ll_sat_report rep;
    FILE *devnull;
} built;

static void built_fini(built *b)
{
    ll_space_free(b->s);
    hl_encoding_fini(&b->enc);
    eg_engine_free(b->e);
    if (b->devnull) fclose(b->devnull);
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "luminal_search: --emit %s: %s\n", what, msg);
    return 1;
}

static int build(const hl_graph *g, const ls_opts *o, built *b)
{
    memset(b, 0, sizeof *b);
    lm_err err = {0};
    char *own = NULL;
    const char *rules = ls_rules_builtin(), *name = ls_rules_builtin_name();
    if (o->rules) {
        own = lm_read_text(o->rules, LS_RULES_MAX_BYTES, NULL, &err);
        if (!own) return fail(o->emit, err.msg);
        rules = own;
        name = o->rules;
    }
    ll_sat_opts so = {.node_limit = LS_NODE_LIMIT, .mem_limit = lm_mem_available() / 2};
    eg_options eo;
    eg_options_default(&eo);
    ll_sat_engine_options(&so, &eo);
    if (o->quiet) eo.log = b->devnull = fopen("/dev/null", "w");
    eo.out = stderr; /* the rules' own print commands never mix with what we emit */
    b->e = eg_engine_new(&eo, NULL);
    lm_err he = {0};
    int rc = 1;
    if (hl_graph_encode(g, b->e, &b->enc, &he) != HL_OK) {
        fail(o->emit, he.msg);
    } else if (ll_saturate(b->e, rules, name, &so, &b->rep, &err) != LM_OK) {
        if (!o->quiet) ll_sat_report_fprint(&b->rep, stderr);
        fail(o->emit, err.msg);
    } else {
        if (!o->quiet) ll_sat_report_fprint(&b->rep, stderr);
        b->s = ll_space_new(b->e, eg_find(b->e, b->enc.root), &err);
        if (!b->s)
            fail(o->emit, err.msg);
        else
            rc = 0;
    }
    free(own);
    return rc;
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
    built b;
    int rc = build(g, o, &b);
    if (!rc) {
        if (o->json)
            rc = emit_json_summary(b.s);
        else
            ll_space_fprint_summary(b.s, stdout);
    }
    built_fini(&b);
    return rc;
}

int ls_emit_space_json(const hl_graph *g, const ls_opts *o)
{
    built b;
    int rc = build(g, o, &b);
    if (!rc) {
        lm_err err = {0};
        if (ll_space_write_json(b.s, stdout, &err) != LM_OK) rc = fail("space-json", err.msg);
    }
    built_fini(&b);
    return rc;
}
