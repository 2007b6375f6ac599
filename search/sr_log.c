/* sr_log.c - the search's log, search.jsonl (docs/search.md, "The log": a header line,
 * one line per candidate in the order results arrive, an end line), and its progress
 * lines on the progress stream. The log is written as search.jsonl.tmp and renamed when
 * the search ends, so that a replayed log in the same directory is never truncated. */
#include "sr_state.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *ROLE_NAME[] = {"reference", "search", "check"};

void sr__hex64(uint64_t v, char *buf)
{
    snprintf(buf, 17, "%016" PRIx64, v);
}

void sr__hexfp(ll_fingerprint fp, char *buf)
{
    snprintf(buf, 33, "%016" PRIx64 "%016" PRIx64, fp.hi, fp.lo);
}

json_t *sr__jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

void sr__log_line(srch *x, json_t *obj)
{
    if (!obj) return;
    if (x->log) {
        char *s = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER);
        if (s) {
            fprintf(x->log, "%s\n", s);
            free(s);
        }
        fflush(x->log);
    }
    json_decref(obj);
}

void sr__log_header(srch *x)
{
    const hl_expr_pool *p = hl_graph_exprs_c(x->g);
    json_t *dims = json_object();
    for (uint32_t i = 0; i < x->nd; i++)
        json_object_set_new(dims, hl_var_name(p, hl_graph_dim_at(x->g, i)->var),
                            json_integer(x->dims[i]));
    json_t *h = json_object();
    json_object_set_new(h, "type", json_string("header"));
    json_object_set_new(h, "format", json_string("luminal-search-log"));
    json_object_set_new(h, "version", json_integer(1));
    json_object_set_new(h, "graph", json_string(x->o.graph_path ? x->o.graph_path : "-"));
    json_object_set_new(h, "evaluator", json_string(x->r->evaluator));
    json_object_set_new(h, "measured", json_boolean(x->r->measured));
    json_object_set_new(h, "slots", json_integer(x->slots));
    json_object_set_new(h, "seed", json_integer((json_int_t)x->o.seed));
    json_object_set_new(h, "limit", json_integer((json_int_t)x->o.limit));
    json_object_set_new(h, "max_draws", json_integer((json_int_t)x->o.max_draws));
    json_object_set_new(h, "keep_best", json_integer(x->o.keep_best));
    json_object_set_new(h, "max_mutations", json_integer(x->o.max_mutations));
    json_object_set_new(h, "cutoff_factor", json_real(x->o.cutoff_factor));
    json_object_set_new(h, "screen_factor", json_real(x->o.screen_factor));
    json_object_set_new(h, "proposals", json_integer(x->o.proposals));
    json_object_set_new(h, "restart_after", json_integer(x->o.restart_after));
    json_object_set_new(h, "fused_start", json_boolean(x->o.fused_start));
    json_object_set_new(h, "time_limit_s", json_real(x->o.time_limit_s));
    json_object_set_new(h, "dims", dims);
    json_object_set_new(h, "egraph", json_string(x->r->egraph_fingerprint));
    sr__log_line(x, h);
}

/* One candidate's line: evaluated (res given) or rejected before (why given). */
void sr__log_candidate(srch *x, const flight *f, const sr_result *res, int status,
                          const char *why, bool have_fp, ll_fingerprint fp)
{
    char gh[17] = "", fph[33] = "";
    if (f->have_genome) sr__hex64(f->g.hash, gh);
    if (have_fp) sr__hexfp(fp, fph);
    json_t *c = json_object();
    json_object_set_new(c, "type", json_string("candidate"));
    json_object_set_new(c, "n", json_integer((json_int_t)f->id));
    json_object_set_new(c, "role", json_string(ROLE_NAME[f->role]));
    json_object_set_new(c, "origin", json_string(f->origin ? f->origin : ""));
    json_object_set_new(c, "parent", f->parent ? json_integer((json_int_t)f->parent) : json_null());
    json_object_set_new(c, "genome", f->have_genome ? json_string(gh) : json_null());
    json_object_set_new(c, "fingerprint", have_fp ? json_string(fph) : json_null());
    json_object_set_new(c, "evaluated", json_boolean(res != NULL));
    json_object_set_new(c, "done", res ? json_integer((json_int_t)x->done) : json_null());
    json_object_set_new(c, "status", json_string(sr_status_name((sr_status)status)));
    json_object_set_new(c, "ms",
                        res && res->status == SR_OK ? sr__jnum(res->ms)
                        : res && res->ms > 0        ? sr__jnum(res->ms)
                                                    : json_null());
    json_object_set_new(c, "modelled_ms", sr__jnum(f->modelled_ms));
    json_object_set_new(c, "gpu", json_integer(res ? res->gpu : -1));
    json_object_set_new(c, "trials", json_integer(res ? res->trials : 0));
    json_object_set_new(c, "check", json_boolean(f->check));
    json_object_set_new(c, "checked", json_boolean(res && res->checked));
    json_object_set_new(c, "why", json_string(why ? why : ""));
    json_object_set_new(c, "kernels", json_integer(f->kernels));
    json_object_set_new(c, "compile_s", json_real(res ? res->compile_s : 0.0));
    json_object_set_new(c, "best_ms", sr__jnum(x->r->best_ms));
    sr__log_line(x, c);
}

void sr__progress(srch *x, const char *fmt, ...)
{
    if (!x->pr) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(x->pr, "search: ");
    vfprintf(x->pr, fmt, ap);
    fprintf(x->pr, "\n");
    fflush(x->pr);
    va_end(ap);
}

int sr__open_log(srch *x)
{
    if (!x->o.out_dir) return LM_OK;
    if (lm_mkdir_p(x->o.out_dir, x->err)) {
        lm_err_prefix(x->err, "search: --out");
        return x->err->code;
    }
    /* written as search.jsonl.tmp and renamed when the search ends (srch_fini), so that
     * a replayed log in the same directory is never truncated */
    snprintf(x->log_path, sizeof x->log_path, "%s/search.jsonl", x->o.out_dir);
    x->log = sr__open_tmp(x->log_path, x->log_tmp, sizeof x->log_tmp, x->err);
    return x->log ? LM_OK : x->err->code;
}

void sr__log_end(srch *x)
{
    if (!x->log) return;
    sr_report *r = x->r;
    json_t *end = json_pack("{s:s, s:I, s:I, s:o, s:s, s:s}", "type", "end", "evaluated",
                            (json_int_t)r->evaluated, "ok", (json_int_t)r->ok, "best_ms",
                            sr__jnum(r->best_ms), "genome", r->best_genome, "fingerprint",
                            r->best_fingerprint);
    sr__log_line(x, end);
}
