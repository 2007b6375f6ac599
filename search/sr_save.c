/* sr_save.c - the search's output directory (docs/search.md, "The output directory"):
 *
 *   program/       the winner, saved by program/ (plan.json, llir.json, kernels/); made on
 *                  the CPU backend, so that this process never opens a CUDA context
 *   graph.json     the input graph (its bytes; written canonically when it came from
 *                  standard input), which `luminal_run DIR --check` compares against
 *   search.jsonl   the log (sr_search.c writes it as the search goes)
 *   report.html    one self-contained page: the search curve as inline SVG, the summary,
 *                  the winner's kernels; nothing is fetched from the network
 */
#include "sr_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "program.h"

/* Every file of the output directory is written as PATH.tmp and renamed over PATH once
 * complete, so that an output never truncates an input before it is read (the input
 * graph may be DIR/graph.json of an earlier search) and a failed write leaves the old
 * file whole. */
FILE *sr__open_tmp(const char *path, char *tmp, size_t cap, lm_err *err)
{
    if ((size_t)snprintf(tmp, cap, "%s.tmp", path) >= cap) {
        sr__fail(err, LM_EIO, NULL, "search: the path '%s' is too long", path);
        return NULL;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) sr__fail(err, LM_EIO, NULL, "search: cannot write '%s': %s", tmp, strerror(errno));
    return f;
}

int sr__commit_tmp(FILE *f, const char *tmp, const char *path, int rc, lm_err *err)
{
    if (fclose(f) != 0 && !rc)
        rc = sr__fail(err, LM_EIO, NULL, "search: writing '%s' failed: %s", tmp,
                        strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = sr__fail(err, LM_EIO, NULL, "search: cannot rename '%s' to '%s': %s", tmp, path,
                        strerror(errno));
    if (rc) remove(tmp);
    return rc;
}

/* True when a and b name one file (a copy onto itself would be a no-op at best). */
static bool same_file(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

static int copy_file(const char *from, const char *to, lm_err *err)
{
    if (same_file(from, to)) return LM_OK; /* the input graph is already the output's */
    FILE *in = fopen(from, "rb");
    if (!in)
        return sr__fail(err, LM_EIO, NULL, "search: cannot read '%s': %s", from, strerror(errno));
    char tmp[4200];
    FILE *out = sr__open_tmp(to, tmp, sizeof tmp, err);
    if (!out) {
        fclose(in);
        return err->code;
    }
    char buf[65536];
    size_t n;
    int rc = LM_OK;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) {
            rc = sr__fail(err, LM_EIO, NULL, "search: writing '%s' failed", tmp);
            break;
        }
    if (!rc && ferror(in))
        rc = sr__fail(err, LM_EIO, NULL, "search: reading '%s' failed", from);
    fclose(in);
    return sr__commit_tmp(out, tmp, to, rc, err);
}

int sr_save_program(const char *out_dir, const cg_plan *plan, const ll_graph *lg, const hl_graph *g,
                    const char *graph_path, const char *egraph_fp, const char *genome_fp,
                    lm_err *err)
{
    char path[4096];
    pg_options po;
    pg_options_default(&po);
    po.backend = PG_BACKEND_CPU; /* the driving process never opens a CUDA context */
    po.name = "program";
    po.egraph_fingerprint = egraph_fp;
    po.genome_fingerprint = genome_fp;
    pg_program *p = pg_program_new(plan, lg, &po, err);
    if (!p) return err->code;
    snprintf(path, sizeof path, "%s/program", out_dir);
    int rc = pg_program_save(p, path, err);
    pg_program_free(p);
    if (rc) return rc;
    snprintf(path, sizeof path, "%s/graph.json", out_dir);
    if (graph_path && strcmp(graph_path, "-") != 0) return copy_file(graph_path, path, err);
    char tmp[4200];
    FILE *f = sr__open_tmp(path, tmp, sizeof tmp, err);
    if (!f) return err->code;
    lm_err he = {0};
    rc = hl_graph_fwrite_json(g, f, &he) != 0 ? (he.code ? he.code : LM_EIO) : LM_OK;
    if (rc) {
        lm_err_copy(err, &he); /* out of memory stays LM_ENOMEM */
        if (!err->code) sr__fail(err, LM_EIO, NULL, "search: writing '%s' failed", tmp);
        rc = err->code;
    }
    return sr__commit_tmp(f, tmp, path, rc, err);
}

/* ==================================================================================
 * report.html
 * ================================================================================== */

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* Best time (a step line) and each candidate's time (dots) against candidates evaluated. */
static void curve_svg(FILE *f, const sr_curve_point *c, uint64_t n, bool measured)
{
    const double W = 640, H = 300, L = 70, R = 20, T = 20, B = 40;
    double lo = INFINITY, hi = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (isfinite(c[i].ms)) lo = fmin(lo, c[i].ms), hi = fmax(hi, c[i].ms);
        if (isfinite(c[i].best_ms)) lo = fmin(lo, c[i].best_ms), hi = fmax(hi, c[i].best_ms);
    }
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n",
            W, H, W, H);
    fprintf(f,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" "
            "stroke=\"#999\"/>\n",
            L, T, W - L - R, H - T - B);
    if (!(hi > 0) || n == 0) {
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">no candidate has a time</text></svg>\n", L + 10,
                H / 2);
        return;
    }
    if (hi <= lo) hi = lo * 1.1 + 1e-9;
    double pad = (hi - lo) * 0.05;
    lo = fmax(0, lo - pad);
    hi += pad;
    uint64_t nmax = c[n - 1].n > 1 ? c[n - 1].n : 2;
#define PX(k) (L + (W - L - R) * ((double)(k)-1) / (double)(nmax - 1))
#define PY(v) (T + (H - T - B) * (1 - ((v)-lo) / (hi - lo)))
    for (int i = 0; i <= 4; i++) {
        double v = lo + (hi - lo) * i / 4;
        fprintf(f,
                "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.4g</text>\n",
                L, W - R, PY(v), PY(v), L - 4, PY(v) + 4, v);
    }
    fprintf(f,
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">candidates "
            "evaluated</text>\n",
            L + (W - L - R) / 2, H - 8);
    fprintf(f,
            "<text x=\"14\" y=\"%.0f\" font-size=\"12\" transform=\"rotate(-90 14 %.0f)\" "
            "text-anchor=\"middle\">%s ms</text>\n",
            T + (H - T - B) / 2, T + (H - T - B) / 2, measured ? "measured" : "modelled");
    fprintf(f,
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">1</text>"
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">%llu</text>\n",
            PX(1), H - B + 14, PX(nmax), H - B + 14, (unsigned long long)nmax);
    for (uint64_t i = 0; i < n; i++)
        if (isfinite(c[i].ms))
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#8ab\"/>\n", PX(c[i].n),
                    PY(c[i].ms));
    fprintf(f, "<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" points=\"");
    bool started = false;
    double prev = NAN;
    for (uint64_t i = 0; i < n; i++) {
        if (!isfinite(c[i].best_ms)) continue;
        if (started && isfinite(prev)) fprintf(f, "%.1f,%.1f ", PX(c[i].n), PY(prev));
        fprintf(f, "%.1f,%.1f ", PX(c[i].n), PY(c[i].best_ms));
        prev = c[i].best_ms;
        started = true;
    }
    fprintf(f, "\"/>\n</svg>\n");
#undef PX
#undef PY
}

int sr_save_report(const char *out_dir, const sr_report *r, const char *graph_name,
                   const sr_curve_point *curve, uint64_t n_curve, lm_err *err)
{
    char path[4096], a[32], b[32];
    snprintf(path, sizeof path, "%s/report.html", out_dir);
    char tmp[4200];
    FILE *f = sr__open_tmp(path, tmp, sizeof tmp, err);
    if (!f) return err->code;
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>luminal search: ", f);
    esc(f, graph_name);
    fputs("</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:60em}"
          "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
          "text-align:right}th{background:#eee}td.l{text-align:left}.note{color:#a33}</style>"
          "</head><body>\n",
          f);
    fputs("<h1>luminal search: ", f);
    esc(f, graph_name);
    fputs("</h1>\n<p>Evaluator: <b>", f);
    esc(f, r->evaluator);
    fprintf(f, "</b> (%s; ", r->measured ? "measured" : "modelled, not measured");
    esc(f, r->note);
    fprintf(f, "). Seed %llu, limit %llu.</p>\n", (unsigned long long)r->seed,
            (unsigned long long)r->limit);
    if (!r->measured)
        fputs("<p class=\"note\">Every time on this page is the cost model's: modelled, not "
              "measured.</p>\n",
              f);
    fputs("<h2>Best time against candidates evaluated</h2>\n", f);
    curve_svg(f, curve, n_curve, r->measured);
    fputs("<p>Line: the best so far; dots: each candidate with a time.</p>\n", f);
    fputs("<h2>Summary</h2>\n<table><tr><th></th><th>time</th><th>modelled</th><th "
          "class=\"l\">note</th></tr>\n",
          f);
    fprintf(f,
            "<tr><td class=\"l\">winner</td><td>%s</td><td>%s</td><td class=\"l\">#%llu, "
            "genome %s, %u kernels + %u cuBLASLt</td></tr>\n",
            sr_fmt_ms(r->best_ms, a, sizeof a), sr_fmt_ms(r->best_modelled_ms, b, sizeof b),
            (unsigned long long)r->best_n, r->best_genome[0] ? r->best_genome : "-",
            r->winner_kernels, r->winner_blas);
    fprintf(f, "<tr><td class=\"l\">first candidate</td><td>%s</td><td></td><td></td></tr>\n",
            sr_fmt_ms(r->first_ms, a, sizeof a));
    fprintf(f,
            "<tr><td class=\"l\">reference lowering</td><td>%s</td><td>%s</td><td "
            "class=\"l\">",
            sr_fmt_ms(r->reference_ms, a, sizeof a),
            sr_fmt_ms(r->reference_modelled_ms, b, sizeof b));
    esc(f, r->reference_status);
    fputs("</td></tr>\n</table>\n<p>Candidates: ", f);
    fprintf(f, "%llu evaluated, %llu with a time", (unsigned long long)r->evaluated,
            (unsigned long long)r->ok);
    for (uint32_t i = 1; i < SR_REASONS; i++)
        if (r->by_status[i])
            fprintf(f, ", %llu %s", (unsigned long long)r->by_status[i], sr_reason_name(i));
    fprintf(f,
            "; not evaluated: %llu LLIR build failures, %llu refused by codegen, %llu "
            "repeated genomes, %llu repeated programs; %llu restarts.</p>\n",
            (unsigned long long)r->build_failed, (unsigned long long)r->codegen_failed,
            (unsigned long long)r->dup_genomes, (unsigned long long)r->dup_programs,
            (unsigned long long)r->restarts);
    const sr_phase_times *t = &r->t;
    fprintf(f,
            "<p>Seconds: saturate %.3f, space %.3f, search %.3f, codegen %.3f, compile %.3f, "
            "measure %.3f, save %.3f.</p>\n",
            t->saturate, t->space, t->search, t->codegen, t->compile, t->measure, t->save);
    fputs("<h2>The winner's kernels</h2>\n<p>Modelled time per step (the cost model at the "
          "search's dims); per-kernel times are not measured: the measurement times the whole "
          "CUDA graph.</p>\n<table><tr><th>step</th><th class=\"l\">template</th><th>LLIR "
          "node</th><th class=\"l\">op</th><th>grid</th><th>block</th><th>MB moved</th>"
          "<th>MFLOP</th><th>modelled us</th></tr>\n",
          f);
    for (uint32_t i = 0; i < r->n_kernel_rows; i++) {
        const sr_kernel_row *k = &r->kernel_rows[i];
        fprintf(f, "<tr><td>%u</td><td class=\"l\">", i);
        esc(f, k->template_name);
        fprintf(f, "</td><td>%%%u</td><td class=\"l\">", k->llir_node);
        esc(f, k->llir_op);
        if (k->grid[0])
            fprintf(f, "</td><td>%lld,%lld,%lld</td><td>%u,%u,%u</td>", (long long)k->grid[0],
                    (long long)k->grid[1], (long long)k->grid[2], k->block[0], k->block[1],
                    k->block[2]);
        else
            fputs("</td><td>-</td><td>-</td>", f);
        fprintf(f, "<td>%.3f</td><td>%.3f</td><td>%.2f</td></tr>\n", k->bytes / 1e6, k->flops / 1e6,
                k->modelled_us);
    }
    fputs("</table>\n</body></html>\n", f);
    int wrc = ferror(f) ? sr__fail(err, LM_EIO, NULL, "search: writing '%s' failed", tmp) : 0;
    return sr__commit_tmp(f, tmp, path, wrc, err);
}
