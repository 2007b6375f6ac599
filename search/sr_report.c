/* sr_report.c - the search's summary (search.h): the table `luminal_search` prints and
 * the same as one JSON object (--json; docs/search.md, "Output"). */
#include "sr_state.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void sr_report_fini(sr_report *r)
{
    free(r->kernel_rows);
    r->kernel_rows = NULL;
    r->n_kernel_rows = 0;
}

const char *sr_fmt_ms(double ms, char *buf, size_t cap)
{
    if (isnan(ms))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.4g ms", ms);
    return buf;
}

void sr_report_fprint(const sr_report *r, FILE *f)
{
    char a[32], b[32];
    fprintf(f, "evaluator: %s (%s; %s)\n", r->evaluator,
            r->measured ? "measured" : "modelled, not measured", r->note);
    fprintf(f, "  %-22s %12s %12s\n", "", r->measured ? "time" : "modelled", "modelled");
    fprintf(f, "  %-22s %12s %12s   #%" PRIu64 ", genome %s, %u kernels + %u cuBLASLt\n", "winner",
            sr_fmt_ms(r->best_ms, a, sizeof a), sr_fmt_ms(r->best_modelled_ms, b, sizeof b),
            r->best_n, r->best_genome[0] ? r->best_genome : "-", r->winner_kernels, r->winner_blas);
    fprintf(f, "  %-22s %12s\n", "first candidate", sr_fmt_ms(r->first_ms, a, sizeof a));
    fprintf(f, "  %-22s %12s %12s   %s%s%s\n", "reference lowering",
            sr_fmt_ms(r->reference_ms, a, sizeof a),
            sr_fmt_ms(r->reference_modelled_ms, b, sizeof b), r->reference_status,
            r->reference_why[0] ? ": " : "", r->reference_why);
    if (!isnan(r->best_ms) && !isnan(r->reference_ms) && r->best_ms > 0)
        fprintf(f, "  winner vs reference lowering: %.2fx faster\n", r->reference_ms / r->best_ms);
    fprintf(f,
            "candidates: %" PRIu64 " evaluated of the limit %" PRIu64 ", %" PRIu64 " with a time",
            r->evaluated, r->limit, r->ok);
    for (uint32_t i = 1; i < SR_REASONS; i++)
        if (r->by_status[i]) fprintf(f, ", %" PRIu64 " %s", r->by_status[i], sr_reason_name(i));
    fprintf(f,
            "\n  not evaluated: %" PRIu64 " LLIR build failures, %" PRIu64
            " refused by codegen, %" PRIu64 " screened out and %" PRIu64
            " declined by the model, %" PRIu64 " repeated genomes, %" PRIu64
            " repeated programs; %" PRIu64 " draws, %" PRIu64 " restarts%s%s%s\n",
            r->build_failed, r->codegen_failed, r->screened, r->declined, r->dup_genomes,
            r->dup_programs, r->draws,
            r->restarts, r->time_up ? "; stopped by the time limit" : "",
            r->exhausted ? "; the space looks exhausted" : "",
            r->replay_diverged ? "; THE REPLAY DIVERGED from its log" : "");
    fprintf(f, "  checked against the reference runtime: first %s, winner %s\n",
            r->first_checked ? "yes" : "no", r->winner_checked ? "yes" : "no");
    fprintf(f, "space: %" PRIu64 " rows, %u classes, %u decisions, log2 programs %.1f\n", r->rows,
            r->classes, r->decisions, r->log2_programs);
    const sr_phase_times *t = &r->t;
    double tot = t->total > 0 ? t->total : 1;
    fprintf(f,
            "time: total %.3f s: saturate %.3f (%.0f%%), space %.3f (%.0f%%), search %.3f "
            "(%.0f%%), codegen %.3f (%.0f%%), compile %.3f, measure %.3f (%.0f%%), save %.3f "
            "(%.0f%%)\n",
            t->total, t->saturate, 100 * t->saturate / tot, t->space, 100 * t->space / tot,
            t->search, 100 * t->search / tot, t->codegen, 100 * t->codegen / tot, t->compile,
            t->measure, 100 * t->measure / tot, t->save, 100 * t->save / tot);
}

char *sr_report_json(const sr_report *r)
{
    json_t *by = json_object();
    for (uint32_t i = 0; i < SR_REASONS; i++)
        json_object_set_new(by, sr_reason_name(i), json_integer((json_int_t)r->by_status[i]));
    json_t *t = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "saturate",
                          json_real(r->t.saturate), "space", json_real(r->t.space), "search",
                          json_real(r->t.search), "codegen", json_real(r->t.codegen), "compile",
                          json_real(r->t.compile), "measure", json_real(r->t.measure), "save",
                          json_real(r->t.save), "total", json_real(r->t.total));
    json_t *kr = json_array();
    for (uint32_t i = 0; i < r->n_kernel_rows; i++) {
        const sr_kernel_row *k = &r->kernel_rows[i];
        json_array_append_new(kr, json_pack("{s:s, s:i, s:s, s:[I,I,I], s:o, s:o, s:o}", "template",
                                            k->template_name, "llir_node", (int)k->llir_node, "op",
                                            k->llir_op, "grid", (json_int_t)k->grid[0],
                                            (json_int_t)k->grid[1], (json_int_t)k->grid[2], "bytes",
                                            json_real(k->bytes), "flops", json_real(k->flops),
                                            "modelled_us", json_real(k->modelled_us)));
    }
    json_t *o = json_object();
    json_object_set_new(o, "evaluator", json_string(r->evaluator));
    json_object_set_new(o, "measured", json_boolean(r->measured));
    json_object_set_new(o, "note", json_string(r->note));
    json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(o, "limit", json_integer((json_int_t)r->limit));
    json_object_set_new(o, "best_ms", sr__jnum(r->best_ms));
    json_object_set_new(o, "best_modelled_ms", sr__jnum(r->best_modelled_ms));
    json_object_set_new(o, "best_n", json_integer((json_int_t)r->best_n));
    json_object_set_new(o, "best_genome", json_string(r->best_genome));
    json_object_set_new(o, "best_fingerprint", json_string(r->best_fingerprint));
    json_object_set_new(o, "first_ms", sr__jnum(r->first_ms));
    json_object_set_new(o, "reference_ms", sr__jnum(r->reference_ms));
    json_object_set_new(o, "reference_modelled_ms", sr__jnum(r->reference_modelled_ms));
    json_object_set_new(o, "reference_status", json_string(r->reference_status));
    json_object_set_new(o, "evaluated", json_integer((json_int_t)r->evaluated));
    json_object_set_new(o, "ok", json_integer((json_int_t)r->ok));
    json_object_set_new(o, "by_status", by);
    json_object_set_new(o, "build_failed", json_integer((json_int_t)r->build_failed));
    json_object_set_new(o, "codegen_failed", json_integer((json_int_t)r->codegen_failed));
    json_object_set_new(o, "dup_genomes", json_integer((json_int_t)r->dup_genomes));
    json_object_set_new(o, "dup_programs", json_integer((json_int_t)r->dup_programs));
    json_object_set_new(o, "screened", json_integer((json_int_t)r->screened));
    json_object_set_new(o, "declined", json_integer((json_int_t)r->declined));
    json_object_set_new(o, "draws", json_integer((json_int_t)r->draws));
    json_object_set_new(o, "restarts", json_integer((json_int_t)r->restarts));
    json_object_set_new(o, "time_up", json_boolean(r->time_up));
    json_object_set_new(o, "exhausted", json_boolean(r->exhausted));
    json_object_set_new(o, "replay_diverged", json_boolean(r->replay_diverged));
    json_object_set_new(o, "first_checked", json_boolean(r->first_checked));
    json_object_set_new(o, "winner_checked", json_boolean(r->winner_checked));
    json_object_set_new(o, "rows", json_integer((json_int_t)r->rows));
    json_object_set_new(o, "classes", json_integer(r->classes));
    json_object_set_new(o, "decisions", json_integer(r->decisions));
    json_object_set_new(o, "log2_programs", json_real(r->log2_programs));
    json_object_set_new(o, "egraph_fingerprint", json_string(r->egraph_fingerprint));
    json_object_set_new(o, "winner_kernels", json_integer(r->winner_kernels));
    json_object_set_new(o, "winner_blas", json_integer(r->winner_blas));
    json_object_set_new(o, "kernels", kr);
    json_object_set_new(o, "seconds", t);
    char *s = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}
