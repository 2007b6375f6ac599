/* cs_session.c - the compile session (session.h): the engine made with the compiler's
 * limits, the graph encoded, saturated with the rules, the search space read from it. */
#include "cs_int.h"

#include <math.h>
#include <string.h>

struct cs_session {
    const hl_graph *g;
    eg_engine *e;
    hl_encoding enc;
    bool have_enc;
    ll_space *s;
    cs_report rep;
    FILE *devnull; /* the engine's log or out when the caller gave none */
    char *own_rules;
    char rules_name[LM_ERR_NAME];
};

const char *cs_stage_name(cs_stage s)
{
    static const char *names[] = {"setup", "encode", "saturate", "space", "done"};
    return s <= CS_DONE ? names[s] : "?";
}

const hl_graph *cs_session_graph(const cs_session *s)
{
    return s->g;
}

eg_engine *cs_session_engine(const cs_session *s)
{
    return s->e;
}

const hl_encoding *cs_session_encoding(const cs_session *s)
{
    return &s->enc;
}

eg_value cs_session_root(const cs_session *s)
{
    return eg_find(s->e, s->enc.root);
}

const ll_space *cs_session_space(const cs_session *s)
{
    return s->s;
}

const cs_report *cs_session_report(const cs_session *s)
{
    return &s->rep;
}

const char *cs_session_rules_name(const cs_session *s)
{
    return s->rules_name;
}

void cs_session_free(cs_session *s)
{
    if (!s) return;
    ll_space_free(s->s);
    if (s->have_enc) hl_encoding_fini(&s->enc);
    eg_engine_free(s->e);
    if (s->devnull) fclose(s->devnull);
    cs__free(s->own_rules);
    cs__free(s);
}

/* The rules text: the file, the text or the built-in rules; *text borrowed from s or o. */
static int pick_rules(cs_session *s, const cs_options *o, const char **text, lm_err *err)
{
    const char *name;
    if (o->rules_path && o->rules_text)
        return cs__fail(err, LM_EARG, NULL,
                        "compile session: both a rules file (%s) and a rules text were given; "
                        "give one",
                        o->rules_path);
    if (o->rules_path) {
        lm_loc at = {.file = o->rules_path, .node_id = LM_NONE};
        s->own_rules = lm_read_text(o->rules_path, CS_RULES_MAX_BYTES, NULL, err);
        if (!s->own_rules) {
            if (!lm_err_is_set(err))
                return cs__fail(err, LM_EIO, &at, "the rules file could not be read");
            return err->code;
        }
        *text = s->own_rules;
        name = o->rules_path;
    } else if (o->rules_text) {
        *text = o->rules_text;
        name = o->rules_name ? o->rules_name : "<rules>";
    } else {
        *text = cs_rules_builtin();
        name = cs_rules_builtin_name();
    }
    snprintf(s->rules_name, sizeof s->rules_name, "%s", name);
    return LM_OK;
}

/* The engine, with the compiler's limits and what is left of the deadline. */
static int make_engine(cs_session *s, const cs_options *o, ll_sat_opts *so, lm_err *err)
{
    so->node_limit = o->node_limit ? o->node_limit : CS_NODE_LIMIT;
    so->mem_limit = o->mem_limit ? o->mem_limit : lm_mem_available() / 2;
    if (o->deadline_s > 0) {
        double left = o->deadline_s - lm_now_s();
        if (!(left > 0)) {
            s->rep.time_up = true;
            return cs__fail(err, LM_ELIMIT, NULL,
                            "the time limit ran out before saturation began");
        }
        so->time_limit_s = left;
    }
    eg_options eo;
    eg_options_default(&eo);
    ll_sat_engine_options(so, &eo);
    FILE *out = o->out ? o->out : o->log;
    if (!o->log || !out) {
        s->devnull = fopen("/dev/null", "w");
        if (!s->devnull)
            return cs__fail(err, LM_EIO, NULL,
                            "compile session: /dev/null could not be opened for the engine's "
                            "output");
    }
    eo.log = o->log ? o->log : s->devnull;
    eo.out = out ? out : s->devnull;
    s->e = eg_engine_new(&eo, err);
    if (!s->e)
        return lm_err_is_set(err)
                   ? err->code
                   : cs__fail(err, LM_ENOMEM, NULL, "compile session: no e-graph engine");
    return LM_OK;
}

static int encode(cs_session *s, lm_err *err)
{
    lm_err he = {0};
    if (hl_graph_encode(s->g, s->e, &s->enc, &he) != 0) {
        lm_err_prefix(&he, "encoding the graph");
        lm_err_copy(err, &he);
        return he.code ? he.code : cs__fail(err, LM_EARG, NULL, "encoding the graph failed");
    }
    s->have_enc = true;
    return LM_OK;
}

static int saturate(cs_session *s, const cs_options *o, const char *rules, ll_sat_opts so,
                    lm_err *err)
{
    double t = lm_now_s();
    if (o->deadline_s > 0) { /* what is left of it after encoding */
        so.time_limit_s = o->deadline_s - t;
        if (!(so.time_limit_s > 0)) {
            s->rep.time_up = true;
            return cs__fail(err, LM_ELIMIT, NULL,
                            "the time limit ran out before saturation began");
        }
    }
    int rc = ll_saturate(s->e, rules, s->rules_name, &so, &s->rep.sat, err);
    s->rep.sat_seconds = lm_now_s() - t;
    s->rep.rows = eg_node_count(s->e);
    if (o->log) ll_sat_report_fprint(&s->rep.sat, o->log);
    if (rc && o->deadline_s > 0 && lm_now_s() >= o->deadline_s) {
        s->rep.time_up = true;
        lm_err_prefix(err, "the time limit ran out during saturation (%.3f s)",
                      s->rep.sat_seconds);
    }
    return rc;
}

static int build_space(cs_session *s, const cs_options *o, lm_err *err)
{
    if (o->deadline_s > 0 && lm_now_s() >= o->deadline_s) {
        s->rep.time_up = true;
        return cs__fail(err, LM_ELIMIT, NULL,
                        "the time limit ran out before the search space was built "
                        "(saturation took %.3f s)",
                        s->rep.sat_seconds);
    }
    double t = lm_now_s();
    ll_space_opts so = {.skip_dtype_check = o->skip_dtype_check};
    s->s = ll_space_new_opts(s->e, cs_session_root(s), &so, err);
    s->rep.space_seconds = lm_now_s() - t;
    s->rep.engine_peak = eg_mem_peak(s->e);
    if (!s->s) return lm_err_is_set(err) ? err->code : LM_ENOMEM;
    ll_space_get_stats(s->s, &s->rep.stats);
    s->rep.have_stats = true;
    return LM_OK;
}

cs_session *cs_session_new(const hl_graph *g, const cs_options *o, lm_err *err)
{
    cs_options none = {0};
    if (!o) o = &none;
    if (o->report) memset(o->report, 0, sizeof *o->report);
    if (!g) {
        cs__fail(err, LM_EARG, NULL, "compile session: no graph");
        return NULL;
    }
    cs_session *s = cs__zalloc(1, sizeof *s);
    if (!s) {
        cs__fail(err, LM_ENOMEM, NULL, "compile session: out of memory");
        return NULL;
    }
    s->g = g;
    s->rep.stage = CS_STAGE_SETUP;
    const char *rules = NULL;
    ll_sat_opts so = {0};
    double t = lm_now_s();
    int rc = pick_rules(s, o, &rules, err);
    if (!rc) rc = make_engine(s, o, &so, err);
    if (!rc) {
        s->rep.stage = CS_STAGE_ENCODE;
        rc = encode(s, err);
        s->rep.encode_seconds = lm_now_s() - t;
    }
    if (!rc) {
        s->rep.stage = CS_STAGE_SATURATE;
        rc = saturate(s, o, rules, so, err);
    }
    if (!rc && !o->no_space) {
        s->rep.stage = CS_STAGE_SPACE;
        rc = build_space(s, o, err);
    }
    if (!rc) s->rep.stage = CS_DONE;
    if (s->e && !s->rep.engine_peak) s->rep.engine_peak = eg_mem_peak(s->e);
    if (o->report) *o->report = s->rep;
    if (rc) {
        cs_session_free(s);
        return NULL;
    }
    return s;
}
