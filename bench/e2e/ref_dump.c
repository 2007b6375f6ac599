/* ref_dump.c - runs a graph on the CPU reference runtime and writes every input and
 * output as a .npy file, for bench/e2e/test_torch_graph.py (the PyTorch interpreter of
 * the graph format checked against our reference).
 *
 *   ref_dump --graph G.json [--canonical C.json]
 *            [--out DIR [--seed N] [--dim NAME=V]... [--no-run]]
 *   ref_dump --generate SEED [--ops N] [--max-dim D] [--dynamic] --write-graph G.json
 *            [--out DIR [--seed N] [--dim NAME=V]...]
 *
 * Inputs are the seeded random inputs of `luminal_search --reference`: input i is
 * hl_tensor_fill_random(t, seed, stream i) with the dims at their profile values unless
 * --dim sets them. Writes DIR/inputs/<input name>.npy, DIR/outputs/<output name>.npy and
 * DIR/manifest.json ({"graph", "seed", "dims": {name: value}, "inputs": [{"name", "dtype",
 * "shape", "file"}], "outputs": [...], "run_s"}). .npy element types: '<f4' for every
 * float dtype (f32, f16, bf16, f8e4m3, f8e5m2: the narrow values widen to f32 exactly),
 * '<i4' for int, '<i8' for i64, '|b1' for bool.
 *
 * --no-run writes the inputs (and the manifest, with no outputs) without running the
 * graph: the seeded inputs at any size, cheaply (run_e2e.py checks luminal_run's against
 * them).
 *
 * --canonical writes the loaded graph's canonical form (hl_graph_write_json: primitives
 * only, every view explicit) to C.json.
 *
 * --generate builds hl_graph_generate(SEED, {ops, max-dim, dynamic}) and writes its
 * canonical JSON to --write-graph; with --out it is then run like a loaded graph.
 *
 * Exit status: 0 on success, 1 when the graph cannot be loaded or run, 2 for a usage
 * error. Errors name the file and the reason on stderr.
 */
#include "hlir.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* hlir's API before and after its move to base's errors (one branch brings both changes):
 * the error record is hl_error, then lm_err (only .msg is read and codes are compared
 * with 0); hl_run gains an options argument (NULL: the defaults). */
#ifdef HL_ERROR_MSG
typedef hl_error rd_err;
#define RD_RUN(g, dims, ins, outs, err) hl_run(g, dims, ins, outs, err)
#else
typedef lm_err rd_err;
#define RD_RUN(g, dims, ins, outs, err) hl_run(g, dims, ins, outs, NULL, err)
#endif

#define MAX_DIM_ARGS 16

static const char USAGE[] =
    "usage: ref_dump --graph G.json [--canonical C.json] [--out DIR [--seed N] [--dim NAME=V]...\n"
    "                [--no-run]]\n"
    "       ref_dump --generate SEED [--ops N] [--max-dim D] [--dynamic] --write-graph G.json\n"
    "                [--out DIR [--seed N] [--dim NAME=V]...]\n"
    "Runs the graph on the CPU reference runtime with the seeded inputs of\n"
    "`luminal_search --reference` and writes DIR/inputs/*.npy, DIR/outputs/*.npy and\n"
    "DIR/manifest.json. --no-run writes the inputs only.\n";

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "ref_dump: %s%s%s\n%s", msg, arg ? ": " : "", arg ? arg : "", USAGE);
    return 2;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-') return -1;
    *out = v;
    return 0;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
    fprintf(stderr, "ref_dump: cannot create %s: %s\n", path, strerror(errno));
    return -1;
}

/* The .npy element type of a dtype and the bytes per element written. */
static const char *npy_descr(hl_dtype t, size_t *elem)
{
    switch (t) {
    case HL_INT:
        *elem = 4;
        return "<i4";
    case HL_I64:
        *elem = 8;
        return "<i8";
    case HL_BOOL:
        *elem = 1;
        return "|b1";
    default: /* every float dtype, widened to f32 */
        *elem = 4;
        return "<f4";
    }
}

/* Writes t as a version 1.0 .npy file (C order, little endian). */
static int write_npy(const char *path, const hl_tensor *t)
{
    size_t elem;
    const char *descr = npy_descr(t->dtype, &elem);
    char shape[256] = "";
    size_t n = 0;
    for (uint32_t d = 0; d < t->ndim; d++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%lld,%s", (long long)t->dims[d],
                              d + 1 < t->ndim ? " " : "");
    if (t->ndim > 1) shape[n - 1] = 0; /* "(3, 4)" but "(5,)" */
    char header[512];
    int len = snprintf(header, sizeof header,
                       "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    /* magic (6) + version (2) + length (2) + header, padded with spaces to a multiple
     * of 64 and ended by '\n' */
    size_t total = 10 + (size_t)len + 1;
    size_t pad = (64 - total % 64) % 64;
    memset(header + len, ' ', pad);
    header[len + pad] = '\n';
    uint16_t hlen = (uint16_t)(len + pad + 1);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "ref_dump: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, hlen, f) == hlen;
    if (ok && (t->dtype == HL_F32 || !hl_dtype_is_float(t->dtype))) {
        ok = t->numel == 0 || fwrite(t->data, elem, t->numel, f) == t->numel;
    } else if (ok) { /* narrow floats: widen exactly to f32 */
        float buf[4096];
        for (size_t i = 0; ok && i < t->numel; i += 4096) {
            size_t m = t->numel - i < 4096 ? t->numel - i : 4096;
            for (size_t k = 0; k < m; k++)
                buf[k] = (float)hl_tensor_get(t, i + k);
            ok = fwrite(buf, 4, m, f) == m;
        }
    }
    if (fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "ref_dump: writing %s failed\n", path);
    return ok ? 0 : -1;
}

static json_t *tensor_entry(const char *name, const hl_tensor *t, const char *file)
{
    json_t *shape = json_array();
    for (uint32_t d = 0; d < t->ndim; d++)
        json_array_append_new(shape, json_integer(t->dims[d]));
    return json_pack("{s:s, s:s, s:o, s:s}", "name", name, "dtype", hl_dtype_name(t->dtype),
                     "shape", shape, "file", file);
}

typedef struct opts {
    const char *graph, *out, *write_graph, *canonical;
    bool generate, dynamic, no_run;
    uint64_t gen_seed, ops, max_dim, seed;
    uint32_t n_dims;
    const char *dim_name[MAX_DIM_ARGS];
    int64_t dim_value[MAX_DIM_ARGS];
    char dim_buf[MAX_DIM_ARGS][64];
} opts;

static int parse_args(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = strcmp(a, "--graph") == 0 || strcmp(a, "--out") == 0 ||
                     strcmp(a, "--seed") == 0 || strcmp(a, "--dim") == 0 ||
                     strcmp(a, "--generate") == 0 || strcmp(a, "--ops") == 0 ||
                     strcmp(a, "--max-dim") == 0 || strcmp(a, "--write-graph") == 0 ||
                     strcmp(a, "--canonical") == 0;
        if (takes && !v) return usage("missing value after", a);
        if (strcmp(a, "--graph") == 0) {
            o->graph = v;
        } else if (strcmp(a, "--out") == 0) {
            o->out = v;
        } else if (strcmp(a, "--write-graph") == 0) {
            o->write_graph = v;
        } else if (strcmp(a, "--canonical") == 0) {
            o->canonical = v;
        } else if (strcmp(a, "--seed") == 0) {
            if (parse_u64(v, &o->seed)) return usage("--seed needs a non-negative integer", v);
        } else if (strcmp(a, "--generate") == 0) {
            o->generate = true;
            if (parse_u64(v, &o->gen_seed))
                return usage("--generate needs a non-negative integer", v);
        } else if (strcmp(a, "--ops") == 0) {
            if (parse_u64(v, &o->ops) || o->ops > 1000) return usage("--ops needs 0..1000", v);
        } else if (strcmp(a, "--max-dim") == 0) {
            if (parse_u64(v, &o->max_dim) || o->max_dim > 64)
                return usage("--max-dim needs 0..64", v);
        } else if (strcmp(a, "--dynamic") == 0) {
            o->dynamic = true;
            continue;
        } else if (strcmp(a, "--no-run") == 0) {
            o->no_run = true;
            continue;
        } else if (strcmp(a, "--dim") == 0) {
            const char *eq = strchr(v, '=');
            uint64_t val;
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof o->dim_buf[0] ||
                parse_u64(eq + 1, &val) || val > INT64_MAX)
                return usage("--dim needs NAME=VALUE", v);
            if (o->n_dims == MAX_DIM_ARGS) return usage("too many --dim options", v);
            memcpy(o->dim_buf[o->n_dims], v, (size_t)(eq - v));
            o->dim_buf[o->n_dims][eq - v] = 0;
            o->dim_name[o->n_dims] = o->dim_buf[o->n_dims];
            o->dim_value[o->n_dims++] = (int64_t)val;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            exit(0);
        } else {
            return usage("unknown option", a);
        }
        i++;
    }
    if (o->generate == (o->graph != NULL)) return usage("give exactly one of --graph and --generate", NULL);
    if (o->generate && !o->write_graph) return usage("--generate needs --write-graph", NULL);
    if (!o->generate && !o->out && !o->canonical)
        return usage("--graph needs --out or --canonical", NULL);
    if (o->generate && o->canonical)
        return usage("--canonical is for --graph (--write-graph is already canonical)", NULL);
    return 0;
}

/* Runs g and writes everything under o->out. */
static int dump(const hl_graph *g, const opts *o, const char *source)
{
    uint32_t nd = hl_graph_dim_count(g), ni = hl_graph_input_count(g),
             no = hl_graph_output_count(g);
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvar = hl_var_count(p);
    int64_t *vals = calloc(nd + 1, sizeof *vals), *byvar = calloc(nvar + 1, sizeof *byvar);
    bool *bound = calloc(nvar + 1, sizeof *bound);
    hl_tensor *ins = calloc(ni + 1, sizeof *ins), *outs = calloc(no + 1, sizeof *outs);
    json_t *jdims = json_object(), *jin = json_array(), *jout = json_array();
    int rc = 1;
    bool ran = false;
    rd_err e;
    memset(&e, 0, sizeof e);
    if (!vals || !byvar || !bound || !ins || !outs || !jdims || !jin || !jout) {
        fprintf(stderr, "ref_dump: out of memory\n");
        goto done;
    }
    for (uint32_t i = 0; i < nd; i++)
        vals[i] = hl_graph_dim_at(g, i)->profile;
    for (uint32_t k = 0; k < o->n_dims; k++) {
        const hl_dim *d = hl_graph_dim_find(g, o->dim_name[k]);
        if (!d) {
            fprintf(stderr, "ref_dump: %s: --dim %s: the graph declares no dim of that name\n",
                    source, o->dim_name[k]);
            goto done;
        }
        if (o->dim_value[k] < d->lo || o->dim_value[k] > d->hi) {
            fprintf(stderr, "ref_dump: %s: --dim %s=%lld: outside the declared range [%lld, %lld]\n",
                    source, o->dim_name[k], (long long)o->dim_value[k], (long long)d->lo,
                    (long long)d->hi);
            goto done;
        }
        for (uint32_t i = 0; i < nd; i++)
            if (hl_graph_dim_at(g, i) == d) vals[i] = o->dim_value[k];
    }
    for (uint32_t i = 0; i < nd; i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        if (d->var < nvar) {
            byvar[d->var] = vals[i];
            bound[d->var] = true;
        }
        json_object_set_new(jdims, hl_var_name(p, d->var), json_integer(vals[i]));
    }
    hl_env env = {byvar, bound, nvar};
    for (uint32_t i = 0; i < ni; i++) {
        const hl_node *in = hl_graph_node(g, hl_graph_input(g, i));
        int64_t dims[HL_MAX_DIMS];
        for (uint32_t d = 0; d < in->ndim; d++)
            if (hl_e_eval(p, in->shape[d], &env, 0, &dims[d], &e) != 0) {
                fprintf(stderr, "ref_dump: %s: input '%s': %s\n", source, in->name, e.msg);
                goto done;
            }
        if (hl_tensor_init(&ins[i], in->dtype, in->ndim, dims, &e) != 0) {
            fprintf(stderr, "ref_dump: %s: input '%s': %s\n", source, in->name, e.msg);
            goto done;
        }
        hl_tensor_fill_random(&ins[i], o->seed, i);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!o->no_run) {
        if (RD_RUN(g, vals, ins, outs, &e) != 0) {
            fprintf(stderr, "ref_dump: %s: reference run failed: %s\n", source, e.msg);
            goto done;
        }
        ran = true;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char path[4096], file[128];
    snprintf(path, sizeof path, "%s/inputs", o->out);
    if (make_dir(o->out) || make_dir(path)) goto done;
    snprintf(path, sizeof path, "%s/outputs", o->out);
    if (make_dir(path)) goto done;
    for (uint32_t i = 0; i < ni; i++) {
        const hl_node *in = hl_graph_node(g, hl_graph_input(g, i));
        snprintf(file, sizeof file, "inputs/%s.npy", in->name);
        snprintf(path, sizeof path, "%s/%s", o->out, file);
        if (write_npy(path, &ins[i])) goto done;
        json_array_append_new(jin, tensor_entry(in->name, &ins[i], file));
    }
    for (uint32_t i = 0; ran && i < no; i++) {
        const hl_node *out = hl_graph_node(g, hl_graph_output(g, i));
        snprintf(file, sizeof file, "outputs/%s.npy", out->name);
        snprintf(path, sizeof path, "%s/%s", o->out, file);
        if (write_npy(path, &outs[i])) goto done;
        json_array_append_new(jout, tensor_entry(out->name, &outs[i], file));
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    json_t *doc = json_pack("{s:s, s:I, s:O, s:O, s:O, s:f}", "graph", source, "seed",
                            (json_int_t)o->seed, "dims", jdims, "inputs", jin, "outputs", jout,
                            "run_s", secs);
    snprintf(path, sizeof path, "%s/manifest.json", o->out);
    if (!doc || json_dump_file(doc, path, JSON_INDENT(1)) != 0) {
        fprintf(stderr, "ref_dump: cannot write %s\n", path);
        json_decref(doc);
        goto done;
    }
    json_decref(doc);
    rc = 0;
done:
    for (uint32_t i = 0; ins && i < ni; i++)
        hl_tensor_fini(&ins[i]);
    for (uint32_t i = 0; ran && i < no; i++)
        hl_tensor_fini(&outs[i]);
    json_decref(jdims);
    json_decref(jin);
    json_decref(jout);
    free(vals);
    free(byvar);
    free(bound);
    free(ins);
    free(outs);
    return rc;
}

/* Writes g's canonical JSON to path. */
static int write_canonical(const hl_graph *g, const char *path, const char *what)
{
    rd_err e;
    memset(&e, 0, sizeof e);
    char *text = hl_graph_write_json(g, &e);
    if (!text) {
        fprintf(stderr, "ref_dump: %s: writing JSON: %s\n", what, e.msg);
        return -1;
    }
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = false;
    free(text);
    if (!ok) {
        fprintf(stderr, "ref_dump: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    {
        const uint16_t one = 1;
        if (*(const unsigned char *)&one != 1) {
            fprintf(stderr, "ref_dump: .npy files are written little-endian; this host is not\n");
            return 1;
        }
    }
    opts o;
    memset(&o, 0, sizeof o);
    int st = parse_args(argc, argv, &o);
    if (st) return st;
    rd_err e;
    memset(&e, 0, sizeof e);
    hl_graph *g;
    const char *source = o.graph;
    if (o.generate) {
        hl_gen_opts go;
        memset(&go, 0, sizeof go);
        go.n_ops = (uint32_t)o.ops;
        go.max_dim = (uint32_t)o.max_dim;
        go.dynamic = o.dynamic;
        g = hl_graph_generate(o.gen_seed, &go, &e);
        if (!g) {
            fprintf(stderr, "ref_dump: --generate %llu: %s\n", (unsigned long long)o.gen_seed,
                    e.msg);
            return 1;
        }
        char what[64];
        snprintf(what, sizeof what, "--generate %llu", (unsigned long long)o.gen_seed);
        if (write_canonical(g, o.write_graph, what)) {
            hl_graph_free(g);
            return 1;
        }
        /* Run the graph as read back from the file, exactly what the interpreter sees. */
        hl_graph_free(g);
        source = o.write_graph;
        if (!o.out) return 0;
    }
    g = hl_graph_load_json(source, &e);
    if (!g) {
        fprintf(stderr, "ref_dump: %s\n", e.msg);
        return 1;
    }
    st = 0;
    if (o.canonical && write_canonical(g, o.canonical, source)) st = 1;
    if (st == 0 && o.out) st = dump(g, &o, source);
    hl_graph_free(g);
    return st;
}
