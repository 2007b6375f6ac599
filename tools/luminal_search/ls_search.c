/* ls_search.c - `luminal_search --graph G --limit N [--out DIR] ...`: the search
 * (search.h, docs/search.md) from the command line.
 *
 * The options become an sr_options; the dims are the profile values unless --dim sets
 * them; the rules are the built-in ones unless --rules names a file. Progress goes to
 * stderr (silent with --quiet); at the end the summary table goes to stdout, or with
 * --json one JSON object instead. */
#include "ls_int.h"
#include "search.h"
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ls_search(const hl_graph *g, const ls_opts *o)
{
    lm_err err = {0};
    char *own = NULL;
    const char *rules = cs_rules_builtin(), *name = cs_rules_builtin_name();
    if (o->rules) {
        own = lm_read_text(o->rules, CS_RULES_MAX_BYTES, NULL, &err);
        if (!own) {
            fprintf(stderr, "luminal_search: --rules: %s\n", err.msg);
            return 1;
        }
        rules = own;
        name = o->rules;
    }
    uint32_t nd = hl_graph_dim_count(g);
    int64_t *dims = calloc(nd ? nd : 1, sizeof *dims);
    if (!dims || ls_dims(g, o, false, dims) != 0) {
        if (!dims) fprintf(stderr, "luminal_search: out of memory\n");
        free(dims);
        free(own);
        return 1;
    }
    sr_options so;
    sr_options_default(&so);
    so.rules = rules;
    so.rules_name = name;
    so.graph_path = o->graph;
    if (o->limit) so.limit = o->limit;
    so.seed = o->seed;
    so.dims = dims;
    if (o->time_limit >= 0) so.time_limit_s = o->time_limit;
    if (o->cutoff >= 0) so.cutoff_factor = o->cutoff;
    if (o->screen >= 0) so.screen_factor = o->screen;
    if (o->keep_best >= 0) so.keep_best = (uint32_t)o->keep_best;
    if (o->mutations >= 0) so.max_mutations = (uint32_t)o->mutations;
    if (o->restart_after >= 0) so.restart_after = (uint32_t)o->restart_after;
    if (o->proposals >= 0) so.proposals = (uint32_t)o->proposals;
    if (o->workers >= 0) so.gpu_workers = (uint32_t)o->workers;
    so.fused_start = !o->no_fused_start;
    so.evaluator = o->replay       ? SR_EVAL_REPLAY
                   : o->cost_model ? SR_EVAL_COST_MODEL
                   : o->gpu        ? SR_EVAL_GPU
                                   : SR_EVAL_AUTO;
    so.replay_path = o->replay;
    so.out_dir = o->out;
    so.progress = o->quiet ? NULL : stderr;
    sr_report rep;
    int rc = sr_search_run(g, &so, &rep, &err);
    if (rc) fprintf(stderr, "luminal_search: %s\n", err.msg);
    if (!rc || rep.evaluated) {
        if (o->json) {
            char *s = sr_report_json(&rep);
            if (s) printf("%s\n", s);
            free(s);
        } else {
            sr_report_fprint(&rep, stdout);
            if (!rc && o->out)
                printf("saved: %s/program, %s/search.jsonl, %s/report.html\n", o->out, o->out,
                       o->out);
        }
    }
    if (!rc && rep.replay_diverged) {
        fprintf(stderr, "luminal_search: the replay diverged: a candidate is not in the log "
                        "(another graph, other rules or a log cut short)\n");
        rc = 1;
    }
    sr_report_fini(&rep);
    free(dims);
    free(own);
    return rc ? 1 : 0;
}
