/* main.c - luminal_search: the command line of the tensor compiler.
 *
 * What exists today: loading and checking a JSON graph (docs/graph-json.md), printing
 * its canonical form (--emit hlir) and running the CPU reference runtime on seeded
 * random inputs (--reference). The search itself (--limit, candidates, the GPU) is not
 * built yet, and the help says so instead of accepting options that would do nothing.
 *
 * Emitters are rows of EMITTERS: adding `--emit egraph` is one function and one row.
 */
#include "ls_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: luminal_search --graph FILE [options]\n"
    "\n"
    "Loads a tensor graph in the JSON graph format (docs/graph-json.md), checks it\n"
    "completely, and acts on it:\n"
    "\n"
    "  --graph FILE     the graph to read (required; - reads standard input)\n"
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
    "  --rules FILE     the rules to saturate with (--emit space, --fuzz), instead of the\n"
    "                   built-in ones\n"
    "  --reference      run the CPU reference runtime on seeded random inputs and print,\n"
    "                   per output: name, dtype, shape, sum, max |x| and the XXH3-64\n"
    "                   hash of its bytes\n"
    "  --fuzz N         genome fuzzing: saturate with the rules, build the search space,\n"
    "                   and check N distinct valid genomes (the most and the least fused,\n"
    "                   then random draws and mutation walks; every genome of a space\n"
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
    "With neither --emit, --reference nor --fuzz, the graph is checked and summarised.\n"
    "Each option is given at most once (--dim once per NAME); the options of --reference\n"
    "and --fuzz are refused without one of them. Errors name the file, line, column and node; a "
    "run-time\n"
    "error names the user's node and op.\n"
    "Not in this build yet: the search over the e-graph and measuring candidates on\n"
    "the GPU.\n";

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
        fprintf(stderr, "luminal_search: the search is not built yet; --emit hlir and "
                        "--reference are what this build can do\n");
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

/* Returns -1 to continue, or the exit status. */
static int parse_args(int argc, char **argv, ls_opts *o)
{
    bool seed_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
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
            o->rules = next;
            i++;
        } else if (strcmp(a, "--reference") == 0) {
            o->reference = true;
        } else if (strcmp(a, "--fuzz") == 0) {
            if (o->fuzz) return usage_error("%s is given twice", a);
            if (!next || parse_u64(next, &o->fuzz) != 0 || o->fuzz == 0)
                return usage_error("%s needs a positive number of genomes", a);
            i++;
        } else if (strcmp(a, "--fuzz-no-verify") == 0) {
            o->fuzz_no_verify = true;
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
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet = true;
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (!o->graph) return usage_error("%s", "--graph FILE is required");
    /* the options of --reference mean nothing without it: refuse them alike */
    bool run = o->reference || o->fuzz;
    if (o->n_dims && !run) return usage_error("%s", "--dim only applies to --reference and --fuzz");
    if (seed_given && !run)
        return usage_error("%s", "--seed only applies to --reference and --fuzz");
    if (o->mem_limit && !run)
        return usage_error("%s", "--mem-limit only applies to --reference and --fuzz");
    if (o->fuzz_no_verify && !o->fuzz)
        return usage_error("%s", "--fuzz-no-verify only applies to --fuzz");
    return -1;
}

int main(int argc, char **argv)
{
    ls_opts o;
    memset(&o, 0, sizeof o);
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
            if (!o.emit && !o.reference && !o.fuzz) rc = summarise(g, &o);
            hl_graph_free(g);
        }
    }
    for (uint32_t i = 0; i < o.n_dims; i++)
        free((void *)o.dim_name[i]);
    return rc;
}
