/* main.c - luminal_search: the command line of the tensor compiler.
 *
 * The main job is the search (--limit N and its options, ls_search.c; docs/search.md):
 * saturate, search the programs, measure them on the GPU (or rank them with the cost
 * model), save the fastest into --out DIR. The other modes: loading and checking a JSON
 * graph (docs/graph-json.md) and its summary, its canonical form and e-graph encoding
 * (--emit), its search space (--emit space), the CPU reference runtime on seeded random
 * inputs (--reference), genome fuzzing (--fuzz). `luminal_search --worker ...` is the
 * GPU evaluator's worker process (search.h, sr_worker_main), entered before anything
 * else is parsed.
 *
 * Emitters are rows of EMITTERS: adding `--emit egraph` is one function and one row.
 */
#include "ls_int.h"
#include "search.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: luminal_search --graph FILE --limit N [--out DIR] [search options]\n"
    "       luminal_search --graph FILE [--emit KIND | --reference | --fuzz N] [options]\n"
    "\n"
    "Loads a tensor graph in the JSON graph format (docs/graph-json.md), checks it\n"
    "completely, and acts on it. The search (docs/search.md) saturates an e-graph with\n"
    "the rules, searches its programs genetically, measures each candidate on the GPU\n"
    "(worker processes, one per visible GPU) or, without one, ranks them with an\n"
    "analytic cost model (the output then says: modelled, not measured), and saves the\n"
    "fastest. Any search option below starts the search.\n"
    "\n"
    "  --graph FILE     the graph to read (required; - reads standard input)\n"
    "Search:\n"
    "  --limit N        candidates to evaluate, at most (default 20; 1 to 10^9)\n"
    "  --out DIR        save DIR/program (the winner; luminal_run DIR runs it),\n"
    "                   DIR/graph.json, DIR/search.jsonl (the log) and DIR/report.html\n"
    "  --seed N         every random choice of the search, and the measured inputs\n"
    "                   (default 0); the same seed with the cost model gives the same\n"
    "                   plan, byte for byte\n"
    "  --cost-model     rank with the cost model even where there is a GPU\n"
    "  --gpu            measure on the GPU, or fail (default: the GPU when one is\n"
    "                   visible, else the cost model, and the output says which)\n"
    "  --workers N      GPU workers (default: one per visible GPU)\n"
    "  --replay-measurements FILE  answer every candidate from a previous search's\n"
    "                   search.jsonl instead of measuring: reproduces that search exactly\n"
    "                   (its seed, limit, dims and parameters come from the log)\n"
    "  --time-limit S   wall-clock seconds of the whole search, saturation included (a\n"
    "                   limit that passes during saturation stops the search there); no\n"
    "                   candidate is started after it (default 600; 0: none) unless none\n"
    "                   has a time yet\n"
    "                   (then the first genome and the seeds, until one has); the first\n"
    "                   candidate and the winner are checked against the reference\n"
    "                   runtime after it\n"
    "  --cutoff F       stop a candidate early once it is slower than F times the best\n"
    "                   (default 2; 0: never)\n"
    "  --proposals N    measuring: after the first five draws, the cost model picks\n"
    "                   the one to measure among N new genomes (default 8; 1: none)\n"
    "  --screen F       measuring: a candidate the cost model puts over F times the\n"
    "                   model's time for the best so far is not measured, but recorded\n"
    "                   as too-slow (default 50; 0: never)\n"
    "  --keep-best N    offspring are mutants of the best N candidates (default 4)\n"
    "  --mutations N    a mutation changes 1 to N choices (default 3)\n"
    "  --restart-after N  restart from a fresh random genome after N results in a row\n"
    "                   without a new best (default 8; 0: never)\n"
    "  --no-fused-start  the second to fifth draws are not the most fused, the library\n"
    "                   (contractions on cuBLASLt, the rest unfused), the fused-stored\n"
    "                   (most fused, no reduction inlined) and the least fused genomes\n"
    "                   (by default they are; the first is random)\n"
    "  --dim NAME=V     measure at this value of dynamic dim NAME (default: its profile\n"
    "                   value); once per dim\n"
    "  --json           print the summary as one JSON object instead of the table\n"
    "  --quiet          no progress on stderr\n";

static const char USAGE_MODES[] =
    "Other modes:\n"
    "  --emit hlir      print the graph in canonical JSON form (primitives, explicit\n"
    "                   views) on stdout\n"
    "  --emit egraph    print the graph's e-graph encoding as a program in the rules\n"
    "                   language: the schema (hlir/encode/encode.egg), then one\n"
    "                   (let tK ...) per node in Kahn order (docs/encoding.md)\n"
    "  --emit space     saturate the graph's e-graph with the rules and print the search\n"
    "                   space: classes, searchable classes, choices, log2 of the number\n"
    "                   of programs, alternatives per op (docs/llir.md); --json for JSON\n"
    "  --emit space-json  the saturated e-graph as egraph-serialize JSON, with the dtype\n"
    "                   of every IR class\n"
    "  --rules FILE     the rules to saturate with (--emit space, --fuzz, the search),\n"
    "                   instead of the built-in ones\n"
    "  --reference      run the CPU reference runtime on seeded random inputs and print,\n"
    "                   per output: name, dtype, shape, sum, max |x| and the XXH3-64\n"
    "                   hash of its bytes\n"
    "  --fuzz N         genome fuzzing (N from 1 to 10^9): saturate with the rules, build\n"
    "                   the search space, and check N distinct valid genomes (the most\n"
    "                   fused, the library,\n"
    "                   the fused-stored and the least fused, then random draws and\n"
    "                   mutation walks; every genome of a space\n"
    "                   that holds fewer than N): each is built into LLIR, verified, run on\n"
    "                   the CPU executor and compared output by output with the reference\n"
    "                   runtime within llir's tolerances (docs/llir.md, \"Genome fuzzing\").\n"
    "                   Runs at small dims: every dynamic dim at min(max(lo, 3), hi) unless\n"
    "                   --dim sets it (profile values are workload sizes, far too big for\n"
    "                   the CPU; static sizes stay as the graph has them). Prints each\n"
    "                   disagreement (genome hash, output, first element outside the\n"
    "                   tolerance with both values, error and tolerance in units of the\n"
    "                   element's scale, the ops of the genome's program), then exactly\n"
    "                   `N passed, M failed`; genomes per second go to stderr. Exit status\n"
    "                   1 on any failure, or when fewer than N distinct genomes were found\n"
    "                   without proving that the space holds no more; a space shown to\n"
    "                   hold fewer than N is checked completely and is not an error.\n"
    "                   --json prints one object (every genome checked, every failure)\n"
    "  --fuzz-no-verify  for tests only: --fuzz without the e-graph dtype check and the\n"
    "                   LLIR verifier, so that only the comparison can catch a bad rule\n"
    "  --seed N         for --reference and --fuzz: the seed of the random inputs\n"
    "                   (default 0; --fuzz draws its genomes from it too); each input\n"
    "                   uniform in its \"init\" range, or else floats in [-1, 1), int and\n"
    "                   i64 in [0, 4), bool 0 or 1\n"
    "  --dim NAME=V     for --reference and --fuzz: the value of dynamic dim NAME\n"
    "                   (default: its profile value for --reference, small for --fuzz);\n"
    "                   once per dim\n"
    "  --mem-limit B    for --reference and --fuzz: refuse, before allocating, a run that\n"
    "                   would hold more than B bytes at once (K, M, G suffixes; default:\n"
    "                   this machine's memory; --fuzz: half of it)\n"
    "  --json           machine-readable output\n"
    "  --quiet          nothing on stderr but errors\n"
    "  --help           this text\n"
    "\n"
    "With no search option, --emit, --reference nor --fuzz, the graph is checked and\n"
    "summarised. The search does not combine with --emit, --reference or --fuzz.\n"
    "Each option is given at most once (--dim once per NAME); the options of --reference\n"
    "and --fuzz are refused without one of them or the search. Errors name the file, line,\n"
    "column and node; a run-time error names the user's node and op.\n"
    "Exit status: 0 done, 1 failed (the search: no candidate has a time, or it could not\n"
    "run), 2 a bad command line.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "luminal_search: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return 2;
}

/* ---- emitters ---- */

static int emit_hlir(const hl_graph *g, const ls_opts *o)
{
    (void)o;
    lm_err e;
    lm_err_clear(&e);
    if (hl_graph_fwrite_json(g, stdout, &e) != HL_OK) {
        fprintf(stderr, "luminal_search: --emit hlir: %s\n", e.msg);
        return 1;
    }
    return 0;
}

static int emit_egraph(const hl_graph *g, const ls_opts *o)
{
    (void)o;
    lm_err e;
    lm_err_clear(&e);
    if (hl_graph_fprint_egraph(g, stdout, &e) != HL_OK) {
        fprintf(stderr, "luminal_search: --emit egraph: %s\n", e.msg);
        return 1;
    }
    return 0;
}

typedef struct emitter {
    const char *kind;
    int (*run)(const hl_graph *g, const ls_opts *o);
} emitter;

static const emitter EMITTERS[] = {
    {"hlir", emit_hlir},
    {"egraph", emit_egraph},
    {"space", ls_emit_space},
    {"space-json", ls_emit_space_json},
};
#define N_EMITTERS (sizeof EMITTERS / sizeof EMITTERS[0])

static const emitter *find_emitter(const char *kind)
{
    for (size_t i = 0; i < N_EMITTERS; i++)
        if (strcmp(EMITTERS[i].kind, kind) == 0) return &EMITTERS[i];
    return NULL;
}

/* ---- the summary (no action given) ---- */

static int summarise(const hl_graph *g, const ls_opts *o)
{
    uint32_t counts[HL_OP_COUNT] = {0};
    uint32_t n = hl_graph_node_count(g);
    for (uint32_t i = 0; i < n; i++)
        counts[hl_graph_node(g, i)->op]++;
    if (o->json) {
        json_t *ops = json_object();
        for (int op = 0; op < HL_OP_COUNT; op++)
            if (counts[op])
                json_object_set_new(ops, hl_op_name((hl_op)op), json_integer(counts[op]));
        json_t *obj =
            json_pack("{s:s, s:b, s:i, s:i, s:i, s:i, s:o}", "graph", o->graph, "valid", 1, "dims",
                      (int)hl_graph_dim_count(g), "inputs", (int)hl_graph_input_count(g), "outputs",
                      (int)hl_graph_output_count(g), "nodes", (int)n, "ops", ops);
        char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
        json_decref(obj);
        if (!s) {
            fprintf(stderr, "luminal_search: out of memory\n");
            return 1;
        }
        printf("%s\n", s);
        free(s);
        return 0;
    }
    printf("%s: valid graph: %u dims, %u inputs, %u outputs, %u nodes\n", o->graph,
           hl_graph_dim_count(g), hl_graph_input_count(g), hl_graph_output_count(g), n);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        printf("  dim %s in [%lld, %lld], profiled at %lld\n",
               hl_var_name(hl_graph_exprs_c(g), d->var), (long long)d->lo, (long long)d->hi,
               (long long)d->profile);
    }
    printf("  ops:");
    for (int op = 0; op < HL_OP_COUNT; op++)
        if (counts[op]) printf(" %s %u", hl_op_name((hl_op)op), counts[op]);
    printf("\n");
    if (!o->quiet)
        fprintf(stderr, "luminal_search: give --limit N (and --out DIR) to search for the "
                        "fastest program (see --help)\n");
    return 0;
}

/* ---- command line ---- */

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-') return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_dim(const char *s, ls_opts *o)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s) return -1;
    if (o->n_dims == LS_MAX_DIM_ARGS) return -1;
    uint64_t v;
    if (parse_u64(eq + 1, &v) != 0 || v > INT64_MAX) return -1;
    size_t len = (size_t)(eq - s);
    char *name = malloc(len + 1);
    if (!name) return -1;
    memcpy(name, s, len);
    name[len] = 0;
    o->dim_name[o->n_dims] = name;
    o->dim_value[o->n_dims] = (int64_t)v;
    o->n_dims++;
    return 0;
}

/* Sets a flag option, refusing it the second time (--help: "at most once"). */
static int flag_once(bool *flag, const char *a)
{
    if (*flag) return usage_error("%s is given twice", a);
    *flag = true;
    return -1;
}

/* Returns -1 to continue, or the exit status. */
static int parse_args(int argc, char **argv, ls_opts *o)
{
    bool seed_given = false;
    int frc = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            fputs(USAGE_MODES, stdout);
            return 0;
        } else if (strcmp(a, "--graph") == 0) {
            if (!next) return usage_error("%s needs a file (or - for standard input)", a);
            if (o->graph) return usage_error("%s is given twice", a);
            o->graph = next;
            i++;
        } else if (strcmp(a, "--emit") == 0) {
            if (!next) return usage_error("%s needs a kind", a);
            if (!find_emitter(next)) {
                fprintf(stderr,
                        "luminal_search: --emit %s: unknown kind; this build can emit:", next);
                for (size_t k = 0; k < N_EMITTERS; k++)
                    fprintf(stderr, " %s", EMITTERS[k].kind);
                fprintf(stderr, "\n");
                return 2;
            }
            if (o->emit) return usage_error("%s is given twice", a);
            o->emit = next;
            i++;
        } else if (strcmp(a, "--rules") == 0) {
            if (!next) return usage_error("%s needs a file", a);
            if (o->rules) return usage_error("%s is given twice", a);
            o->rules = next;
            i++;
        } else if (strcmp(a, "--reference") == 0) {
            if ((frc = flag_once(&o->reference, a)) >= 0) return frc;
        } else if (strcmp(a, "--fuzz") == 0) {
            if (o->fuzz) return usage_error("%s is given twice", a);
            if (!next || parse_u64(next, &o->fuzz) != 0 || o->fuzz == 0 || o->fuzz > SR_MAX_LIMIT)
                return usage_error("%s needs a number of genomes from 1 to 1000000000", a);
            i++;
        } else if (strcmp(a, "--fuzz-no-verify") == 0) {
            if ((frc = flag_once(&o->fuzz_no_verify, a)) >= 0) return frc;
        } else if (strcmp(a, "--seed") == 0) {
            if (seed_given) return usage_error("%s is given twice", a);
            if (!next || parse_u64(next, &o->seed) != 0)
                return usage_error("%s needs a non-negative integer", a);
            seed_given = true;
            i++;
        } else if (strcmp(a, "--mem-limit") == 0) {
            if (o->mem_limit) return usage_error("%s is given twice", a);
            if (!next || !lm_parse_bytes(next, &o->mem_limit) || o->mem_limit == 0)
                return usage_error("%s needs a byte count > 0 (e.g. 8G, 512M, 1048576)", a);
            i++;
        } else if (strcmp(a, "--dim") == 0) {
            const char *eq = next ? strchr(next, '=') : NULL;
            for (uint32_t k = 0; eq && k < o->n_dims; k++)
                if (strlen(o->dim_name[k]) == (size_t)(eq - next) &&
                    strncmp(o->dim_name[k], next, (size_t)(eq - next)) == 0)
                    return usage_error("--dim %s is given twice", o->dim_name[k]);
            if (!next || parse_dim(next, o) != 0)
                return usage_error("%s needs NAME=VALUE with a non-negative integer value (at most "
                                   "16 of them)",
                                   a);
            i++;
        } else if (strcmp(a, "--limit") == 0) {
            if (o->limit) return usage_error("%s is given twice", a);
            if (!next || parse_u64(next, &o->limit) != 0 || o->limit == 0 ||
                o->limit > SR_MAX_LIMIT)
                return usage_error("%s needs a positive number of candidates, at most 1000000000", a);
            o->search = true;
            i++;
        } else if (strcmp(a, "--out") == 0) {
            if (o->out) return usage_error("%s is given twice", a);
            if (!next || !*next) return usage_error("%s needs a directory", a);
            o->out = next;
            o->search = true;
            i++;
        } else if (strcmp(a, "--cost-model") == 0) {
            if ((frc = flag_once(&o->cost_model, a)) >= 0) return frc;
            o->search = true;
        } else if (strcmp(a, "--gpu") == 0) {
            if ((frc = flag_once(&o->gpu, a)) >= 0) return frc;
            o->search = true;
        } else if (strcmp(a, "--no-fused-start") == 0) {
            if ((frc = flag_once(&o->no_fused_start, a)) >= 0) return frc;
            o->search = true;
        } else if (strcmp(a, "--replay-measurements") == 0) {
            if (o->replay) return usage_error("%s is given twice", a);
            if (!next || !*next) return usage_error("%s needs a search log (search.jsonl)", a);
            o->replay = next;
            o->search = true;
            i++;
        } else if (strcmp(a, "--time-limit") == 0 || strcmp(a, "--cutoff") == 0 ||
                   strcmp(a, "--screen") == 0) {
            double *dst = a[2] == 't' ? &o->time_limit : a[2] == 'c' ? &o->cutoff : &o->screen;
            if (*dst >= 0) return usage_error("%s is given twice", a);
            char *end = NULL;
            double v = next ? strtod(next, &end) : -1;
            if (!next || !*next || *end || !(v >= 0) || v > 1e9)
                return usage_error("%s needs a non-negative number", a);
            *dst = v;
            o->search = true;
            i++;
        } else if (strcmp(a, "--keep-best") == 0 || strcmp(a, "--mutations") == 0 ||
                   strcmp(a, "--restart-after") == 0 || strcmp(a, "--workers") == 0 ||
                   strcmp(a, "--proposals") == 0) {
            int64_t *dst = strcmp(a, "--keep-best") == 0   ? &o->keep_best
                           : strcmp(a, "--mutations") == 0 ? &o->mutations
                           : strcmp(a, "--workers") == 0   ? &o->workers
                           : strcmp(a, "--proposals") == 0 ? &o->proposals
                                                           : &o->restart_after;
            if (*dst >= 0) return usage_error("%s is given twice", a);
            uint64_t v;
            bool zero_ok = strcmp(a, "--restart-after") == 0;
            if (!next || parse_u64(next, &v) != 0 || v > 64 || (v == 0 && !zero_ok))
                return usage_error(zero_ok ? "%s needs a number from 0 to 64"
                                           : "%s needs a number from 1 to 64",
                                   a);
            *dst = (int64_t)v;
            o->search = true;
            i++;
        } else if (strcmp(a, "--json") == 0) {
            if ((frc = flag_once(&o->json, a)) >= 0) return frc;
        } else if (strcmp(a, "--quiet") == 0) {
            if ((frc = flag_once(&o->quiet, a)) >= 0) return frc;
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (!o->graph) return usage_error("%s", "--graph FILE is required");
    if (o->search && (o->emit || o->reference || o->fuzz))
        return usage_error("%s", "the search does not combine with --emit, --reference or --fuzz");
    if ((o->emit != NULL) + o->reference + (o->fuzz != 0) > 1)
        return usage_error("%s", "--emit, --reference and --fuzz exclude each other: give one");
    if ((o->cost_model + o->gpu + (o->replay != NULL)) > 1)
        return usage_error("%s", "--cost-model, --gpu and --replay-measurements exclude each other");
    if (o->search && o->mem_limit)
        return usage_error("%s", "--mem-limit only applies to --reference and --fuzz");
    /* the options of --reference mean nothing without it: refuse them alike */
    bool run = o->reference || o->fuzz || o->search;
    if (o->n_dims && !run)
        return usage_error("%s", "--dim only applies to the search, --reference and --fuzz");
    if (seed_given && !run)
        return usage_error("%s", "--seed only applies to the search, --reference and --fuzz");
    if (o->mem_limit && !run)
        return usage_error("%s", "--mem-limit only applies to --reference and --fuzz");
    if (o->fuzz_no_verify && !o->fuzz)
        return usage_error("%s", "--fuzz-no-verify only applies to --fuzz");
    return -1;
}

int main(int argc, char **argv)
{
    /* the GPU evaluator's worker process: nothing else is parsed */
    if (argc >= 2 && strcmp(argv[1], "--worker") == 0) return sr_worker_main(argc, argv);
    ls_opts o;
    memset(&o, 0, sizeof o);
    o.time_limit = o.cutoff = o.screen = -1;
    o.keep_best = o.mutations = o.restart_after = o.workers = o.proposals = -1;
    int rc = parse_args(argc, argv, &o);
    if (rc < 0) {
        lm_err e;
        lm_err_clear(&e);
        hl_graph *g = hl_graph_load_json(o.graph, &e);
        if (!g) {
            fprintf(stderr, "%s\n", e.msg);
            rc = 1;
        } else {
            rc = 0;
            if (o.emit) rc = find_emitter(o.emit)->run(g, &o);
            if (rc == 0 && o.reference) rc = ls_reference(g, &o);
            if (rc == 0 && o.fuzz) rc = ls_fuzz(g, &o);
            if (o.search) rc = ls_search(g, &o);
            if (!o.emit && !o.reference && !o.fuzz && !o.search) rc = summarise(g, &o);
            hl_graph_free(g);
        }
    }
    for (uint32_t i = 0; i < o.n_dims; i++)
        free((void *)o.dim_name[i]);
    return rc;
}
