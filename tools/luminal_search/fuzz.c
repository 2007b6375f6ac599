/* fuzz.c - `luminal_search --fuzz N`: genome fuzzing (the fuzz module, fuzz.h) from the
 * command line.
 *
 * Printing: a header (dims, space, the tolerance of every output), one FAIL line per
 * disagreeing output of a genome (its hash, where it came from, the output, the first
 * element outside the tolerance with both values, the error and the tolerance in RMS
 * units) followed by the ops the genome's program uses, and last exactly
 * `N passed, M failed`. Timing (genomes per second) goes to stderr, so stdout depends on
 * nothing but the inputs. --json prints one object instead.
 */
#include "fuzz.h"
#include "ls_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==================================================================================
 * The command: luminal_search --fuzz N
 * ================================================================================== */

typedef struct cli {
    const ls_opts *o;
    const hl_graph *g;
    const int64_t *dims;
    json_t *genomes, *failures; /* --json */
} cli;

static json_t *jnum(double v)
{
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static void print_ops(const fz_case *c, FILE *out)
{
    fprintf(out, "  ops:");
    bool any = false;
    for (uint32_t op = 0; c->op_count && op < ll_op_count(); op++)
        if (c->op_count[op]) {
            fprintf(out, "%s %s %u", any ? "," : "", ll_op_get((ll_op)op)->name, c->op_count[op]);
            any = true;
        }
    fprintf(out, "%s\n", any ? "" : " (no LLIR graph was built)");
}

static json_t *ops_json(const fz_case *c)
{
    json_t *ops = json_object();
    for (uint32_t op = 0; c->op_count && op < ll_op_count(); op++)
        if (c->op_count[op])
            json_object_set_new(ops, ll_op_get((ll_op)op)->name, json_integer(c->op_count[op]));
    return ops;
}

static const char *out_name(const hl_graph *g, uint32_t i)
{
    return hl_graph_node(g, hl_graph_output(g, i))->name;
}

static void on_case(void *ctx, const fz_case *c, const hl_graph *g, const ll_space *s,
                    const ll_genome *gn, const ll_graph *lg)
{
    (void)s, (void)gn, (void)lg;
    cli *k = ctx;
    char hash[24], fp[40];
    snprintf(hash, sizeof hash, "%016" PRIx64, c->hash);
    snprintf(fp, sizeof fp, "%016" PRIx64 "%016" PRIx64, c->fp.hi, c->fp.lo);
    if (k->o->json) {
        json_array_append_new(k->genomes,
                              json_pack("{s:s, s:s, s:s?, s:s}", "hash", hash, "origin",
                                        fz_origin_name(c->origin), "fingerprint",
                                        c->built ? fp : NULL, "result", fz_stage_name(c->stage)));
    }
    if (c->stage == FZ_PASSED) return;
    /* a disagreement: one entry per output outside its tolerance, or the error */
    bool listed = false;
    for (uint32_t i = 0; c->cmp && i < c->n_outputs; i++) {
        const ll_out_cmp *m = &c->cmp[i];
        if (m->n_bad == 0) continue;
        listed = true;
        if (k->o->json) {
            json_array_append_new(
                k->failures,
                json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                          "hash", hash, "origin", fz_origin_name(c->origin), "stage",
                          fz_stage_name(c->stage), "output", out_name(g, i), "first_bad",
                          (json_int_t)m->first_bad, "n_bad", (json_int_t)m->n_bad, "candidate",
                          jnum(m->cand), "reference", jnum(m->ref), "error", jnum(m->max_err),
                          "tolerance", jnum(m->tol), "rms", jnum(m->rms), "scale", jnum(m->scale),
                          "ops", ops_json(c)));
        } else {
            double d = fabs(m->cand - m->ref);
            printf("FAIL genome %s (%s, #%" PRIu64 "): output '%s': element %zu: candidate %.9g, "
                   "reference %.9g, %.3g RMS apart; error %.3g, tolerance %.3g, in units of the "
                   "element's scale (output RMS %.3g, scale %.3g; %zu elements outside)\n",
                   hash, fz_origin_name(c->origin), c->index, out_name(g, i), m->first_bad,
                   m->cand, m->ref, m->rms > 0 ? d / m->rms : INFINITY, m->max_err, m->tol,
                   m->rms, m->scale, m->n_bad);
        }
    }
    if (!listed) {
        if (k->o->json)
            json_array_append_new(k->failures, json_pack("{s:s, s:s, s:s, s:s, s:o}", "hash", hash,
                                                         "origin", fz_origin_name(c->origin),
                                                         "stage", fz_stage_name(c->stage),
                                                         "message", c->msg, "ops", ops_json(c)));
        else
            printf("FAIL genome %s (%s, #%" PRIu64 "): %s: %s\n", hash, fz_origin_name(c->origin),
                   c->index, fz_stage_name(c->stage), c->msg);
    }
    if (!k->o->json) print_ops(c, stdout);
    fflush(stdout);
}

static void print_header(void *ctx, const fz_result *r)
{
    cli *k = ctx;
    const ls_opts *o = k->o;
    if (o->json) return;
    const hl_graph *g = k->g;
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    printf("fuzz %s: %" PRIu64 " genomes, seed %" PRIu64 ", dims", o->graph, o->fuzz, o->seed);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
        printf(" %s=%lld", hl_var_name(p, hl_graph_dim_at(g, i)->var), (long long)k->dims[i]);
    printf("%s\n", hl_graph_dim_count(g) ? "" : " (none)");
    if (o->fuzz_no_verify)
        printf("unchecked: the e-graph dtype check and the LLIR verifier are off "
               "(--fuzz-no-verify, for tests)\n");
    const ll_space_stats *st = &r->stats;
    printf("space: %u classes, %u searchable, %u reachable, %u decisions, %" PRIu64
           " choices, log2 programs %.1f\n",
           st->classes, st->searchable, st->reachable, st->decisions, st->choices,
           st->log2_programs);
    for (uint32_t i = 0; i < r->n_outputs && i < FZ_MAX_TOL; i++) {
        const hl_node *n = hl_graph_node(g, hl_graph_output(g, i));
        printf("output %u '%s' %s: tolerance %.3g of its scale (the scale is %.3g times its "
               "RMS)\n",
               i, n->name, hl_dtype_name(n->dtype), r->tol[i], r->spread[i]);
    }
    fflush(stdout);
}

static int print_json(const cli *k, const fz_result *r)
{
    const hl_graph *g = k->g;
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    json_t *dims = json_object(), *tols = json_array();
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
        json_object_set_new(dims, hl_var_name(p, hl_graph_dim_at(g, i)->var),
                            json_integer(k->dims[i]));
    for (uint32_t i = 0; i < r->n_outputs && i < FZ_MAX_TOL; i++)
        json_array_append_new(tols,
                              json_pack("{s:s, s:o, s:o}", "output", out_name(g, i), "tolerance",
                                        jnum(r->tol[i]), "scale_over_rms", jnum(r->spread[i])));
    const ll_space_stats *st = &r->stats;
    json_t *space = json_pack("{s:i, s:i, s:i, s:i, s:I, s:o}", "classes", (int)st->classes,
                              "searchable", (int)st->searchable, "reachable", (int)st->reachable,
                              "decisions", (int)st->decisions, "choices", (json_int_t)st->choices,
                              "log2_programs", jnum(st->log2_programs));
    json_t *from = json_object();
    for (int i = 0; i < FZ_FROM_COUNT; i++)
        json_object_set_new(from, fz_origin_name((fz_origin)i),
                            json_integer((json_int_t)r->from[i]));
    json_t *doc = json_pack(
        "{s:s, s:I, s:I, s:b, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:b, s:o, s:o}", "graph",
        k->o->graph, "seed", (json_int_t)k->o->seed, "asked", (json_int_t)k->o->fuzz, "unchecked",
        k->o->fuzz_no_verify, "dims", dims, "space", space, "tolerances", tols, "from", from,
        "checked", (json_int_t)r->checked, "passed", (json_int_t)r->passed, "failed",
        (json_int_t)r->failed, "programs", (json_int_t)r->programs, "exhausted", r->exhausted,
        "genomes", k->genomes, "failures", k->failures);
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(doc);
    if (!text) {
        fprintf(stderr, "luminal_search: --fuzz: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

int ls_fuzz(const hl_graph *g, const ls_opts *o)
{
    lm_err err = {0};
    uint32_t nd = hl_graph_dim_count(g);
    int64_t *dims = calloc(nd ? nd : 1, sizeof *dims);
    if (!dims || ls_dims(g, o, true, dims) != 0) {
        if (!dims) fprintf(stderr, "luminal_search: --fuzz: out of memory\n");
        free(dims);
        return 1;
    }
    fz_options fo = {.n = o->fuzz,
                     .seed = o->seed,
                     .dims = dims,
                     .rules_path = o->rules, /* NULL: the built-in rules */
                     .unchecked = o->fuzz_no_verify,
                     .mem_limit = o->mem_limit,
                     .log = o->quiet ? NULL : stderr};
    cli k = {.o = o, .g = g, .dims = dims};
    if (o->json) {
        k.genomes = json_array();
        k.failures = json_array();
    }
    fz_hooks h = {.ctx = &k, .ready = print_header, .each = on_case};
    fz_result r;
    int rc = fz_run(g, &fo, &h, &r, &err);
    int status = 1;
    if (rc) {
        fprintf(stderr, "luminal_search: --fuzz: %s\n", err.msg);
        json_decref(k.genomes);
        json_decref(k.failures);
    } else {
        bool enough = r.checked == o->fuzz || r.exhausted;
        status = r.failed == 0 && enough ? 0 : 1;
        if (o->json) {
            if (print_json(&k, &r)) status = 1;
        } else {
            if (r.exhausted && r.checked < o->fuzz)
                printf("space exhausted: only %" PRIu64 " distinct valid genomes exist (%" PRIu64
                       " asked); every one was checked\n",
                       r.checked, o->fuzz);
            else if (!enough)
                printf("only %" PRIu64 " distinct valid genomes found (%" PRIu64
                       " asked) in %" PRIu64 " draws, and the enumeration of the space stopped "
                       "before its end\n",
                       r.checked, o->fuzz, r.draws);
            printf("%" PRIu64 " distinct programs; genomes by origin:", r.programs);
            for (int i = 0; i < FZ_FROM_COUNT; i++)
                printf("%s %s %" PRIu64, i ? "," : "", fz_origin_name((fz_origin)i), r.from[i]);
            printf("\n%" PRIu64 " passed, %" PRIu64 " failed\n", r.passed, r.failed);
        }
        if (!o->quiet)
            fprintf(stderr,
                    "luminal_search: --fuzz: %" PRIu64 " genomes in %.2f s: %.0f genomes/s "
                    "(saturation %.3f s, space %.3f s, reference %.3f s)\n",
                    r.checked, r.seconds, r.seconds > 0 ? (double)r.checked / r.seconds : 0.0,
                    r.sat_seconds, r.space_seconds, r.ref_seconds);
    }
    free(dims);
    return status;
}
