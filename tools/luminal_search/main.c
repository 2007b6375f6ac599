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
    "  --graph FILE     the graph to read (required)\n"
    "  --emit hlir      print the graph in canonical JSON form (primitives, explicit\n"
    "                   views) on stdout\n"
    "  --emit egraph    print the graph's e-graph encoding as a program in the rules\n"
    "                   language: the schema (hlir/encode.egg), then one (let tK ...)\n"
    "                   per node in Kahn order (docs/encoding.md)\n"
    "  --emit space     saturate the graph's e-graph with the rules and print the search\n"
    "                   space: classes, searchable classes, choices, log2 of the number\n"
    "                   of programs, alternatives per op (docs/llir.md); --json for JSON\n"
    "  --emit space-json  the saturated e-graph as egraph-serialize JSON, with the dtype\n"
    "                   of every IR class\n"
    "  --rules FILE     the rules to saturate with, instead of the built-in ones\n"
    "  --reference      run the CPU reference runtime on seeded random inputs and print,\n"
    "                   per output: name, dtype, shape, sum, max |x| and the XXH3-64\n"
    "                   hash of its bytes\n"
    "  --seed N         seed of the random inputs (default 0); floats are uniform in\n"
    "                   [-1, 1), int and i64 in [0, 4), bool 0 or 1\n"
    "  --dim NAME=V     value of dynamic dim NAME for --reference (default: its profile\n"
    "                   value); may be repeated\n"
    "  --json           machine-readable output\n"
    "  --quiet          nothing on stderr but errors\n"
    "  --help           this text\n"
    "\n"
    "With neither --emit nor --reference, the graph is checked and summarised.\n"
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
    hl_error e;
    hl_error_clear(&e);
    if (hl_graph_fwrite_json(g, stdout, &e) != HL_OK) {
        fprintf(stderr, "luminal_search: --emit hlir: %s\n", e.msg);
        return 1;
    }
    return 0;
}

static int emit_egraph(const hl_graph *g, const ls_opts *o)
{
    (void)o;
    hl_error e;
    hl_error_clear(&e);
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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        } else if (strcmp(a, "--graph") == 0) {
            if (!next) return usage_error("%s needs a file", a);
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
            o->emit = next;
            i++;
        } else if (strcmp(a, "--rules") == 0) {
            if (!next) return usage_error("%s needs a file", a);
            o->rules = next;
            i++;
        } else if (strcmp(a, "--reference") == 0) {
            o->reference = true;
        } else if (strcmp(a, "--seed") == 0) {
            if (!next || parse_u64(next, &o->seed) != 0)
                return usage_error("%s needs a non-negative integer", a);
            i++;
        } else if (strcmp(a, "--dim") == 0) {
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
    if (o->n_dims && !o->reference) return usage_error("%s", "--dim only applies to --reference");
    return -1;
}

int main(int argc, char **argv)
{
    ls_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc < 0) {
        hl_error e;
        hl_error_clear(&e);
        hl_graph *g = hl_graph_load_json(o.graph, &e);
        if (!g) {
            fprintf(stderr, "%s\n", e.msg);
            rc = 1;
        } else {
            rc = 0;
            if (o.emit) rc = find_emitter(o.emit)->run(g, &o);
            if (rc == 0 && o.reference) rc = ls_reference(g, &o);
            if (!o.emit && !o.reference) rc = summarise(g, &o);
            hl_graph_free(g);
        }
    }
    for (uint32_t i = 0; i < o.n_dims; i++)
        free((void *)o.dim_name[i]);
    return rc;
}
