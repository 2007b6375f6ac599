/* luminal.c - the compiler as a library (luminal.h): the built-in rules and one call that
 * runs the search on a graph file into an output directory, as luminal_search does.
 *
 * It is a user of the modules' public headers and nothing more (like tools/), so what
 * the library's luminal_compile does is exactly what `luminal_search --graph G --out D`
 * does with the same options. */
#include "luminal.h"

#include "hlir.h"
#include "search.h"
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *luminal_version(void)
{
    return LUMINAL_VERSION;
}

size_t luminal_err_size(void)
{
    return sizeof(lm_err);
}

const char *luminal_rules_builtin(void)
{
    return cs_rules_builtin();
}

const char *luminal_rules_builtin_name(void)
{
    return cs_rules_builtin_name();
}

void luminal_compile_options_default(luminal_compile_options *o)
{
    sr_options so;
    sr_options_default(&so);
    memset(o, 0, sizeof *o);
    o->limit = so.limit;
    o->seed = so.seed;
    o->time_limit_s = so.time_limit_s;
    o->evaluator = LUMINAL_EVAL_AUTO;
}

void luminal_free(void *p)
{
    free(p);
}

static int compile_graph(const hl_graph *g, const char *graph_path, const char *out_dir,
                         const luminal_compile_options *o, const char *rules,
                         const char *rules_name, char **summary_json, lm_err *err)
{
    sr_options so;
    sr_options_default(&so);
    so.rules = rules;
    so.rules_name = rules_name;
    so.graph_path = graph_path;
    if (o->limit) so.limit = o->limit;
    so.seed = o->seed;
    so.time_limit_s = o->time_limit_s;
    so.evaluator = o->evaluator == LUMINAL_EVAL_COST_MODEL ? SR_EVAL_COST_MODEL
                   : o->evaluator == LUMINAL_EVAL_GPU      ? SR_EVAL_GPU
                                                           : SR_EVAL_AUTO;
    so.worker_exe = o->worker_exe ? o->worker_exe : getenv("LUMINAL_WORKER_EXE");
    so.out_dir = out_dir;
    so.progress = o->quiet ? NULL : stderr;
    sr_report rep;
    int rc = sr_search_run(g, &so, &rep, err);
    if (summary_json && (!rc || rep.evaluated)) {
        *summary_json = sr_report_json(&rep);
        if (!*summary_json && !rc)
            rc = lm_err_set(err, LM_ENOMEM, NULL, "luminal_compile: out of memory");
    }
    if (!rc && rep.replay_diverged)
        rc = lm_err_set(err, LM_ERUNTIME, NULL, "luminal_compile: the replay diverged");
    sr_report_fini(&rep);
    return rc;
}

int luminal_compile(const char *graph_path, const char *out_dir, const luminal_compile_options *o,
                    char **summary_json, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (summary_json) *summary_json = NULL;
    if (!graph_path || !out_dir)
        return lm_err_set(err, LM_EARG, NULL,
                          "luminal_compile: graph_path and out_dir are required (got %s%s)",
                          graph_path ? "" : "no graph_path ", out_dir ? "" : "no out_dir");
    luminal_compile_options def;
    if (!o) {
        luminal_compile_options_default(&def);
        o = &def;
    }
    if (o->evaluator < LUMINAL_EVAL_AUTO || o->evaluator > LUMINAL_EVAL_GPU)
        return lm_err_set(err, LM_EARG, NULL,
                          "luminal_compile: evaluator %d is not one of LUMINAL_EVAL_AUTO (0), "
                          "_COST_MODEL (1), _GPU (2)",
                          (int)o->evaluator);
    char *own_rules = NULL;
    const char *rules = luminal_rules_builtin(), *rules_name = luminal_rules_builtin_name();
    if (o->rules_path) {
        own_rules = lm_read_file(o->rules_path, 0, NULL, err);
        if (!own_rules) return err->code;
        rules = own_rules;
        rules_name = o->rules_path;
    }
    hl_graph *g = hl_graph_load_json(graph_path, err);
    int rc = g ? compile_graph(g, graph_path, out_dir, o, rules, rules_name, summary_json, err)
               : err->code;
    hl_graph_free(g);
    free(own_rules);
    return rc;
}
