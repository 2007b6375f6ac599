/* main.c - luminal_run: load a saved program, run it on the user's inputs (or seeded
 * ones), write its outputs, check them against the reference runtime, time it.
 *
 * The flow, each step optional but the first:
 *   load      pg_program_load(DIR/program) for luminal_search's output directory, else
 *             pg_program_load(DIR) (GPU where there is one, else llir's CPU executor),
 *             and DIR/graph.json (the input graph, written by luminal_search) when there
 *   dims      --dim NAME=V, then every input's shape from pg_program_input_info
 *   inputs    per input: --weights FILE.safetensors by name, else --inputs (DIR/NAME.npy
 *             or a .safetensors file by name), else seeded (hl_graph_fill_input)
 *   write     --write-inputs DIR: every input as DIR/NAME.npy
 *   run       pg_program_run; --outputs: every output as NAME.npy (or one .safetensors)
 *   check     --check: hl_run on graph.json at the same dims and inputs, compared with
 *             llir's ll_compare_outputs_scaled at llir's tolerances
 *   bench     --bench: single-call latency and back-to-back time per call
 * docs/luminal_run.md is the manual; lr.h the file formats.
 */
#include "llir.h"
#include "lr.h"
#include "program.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DIM_ARGS 32

static const char USAGE[] =
    "usage: luminal_run DIR [options]\n"
    "\n"
    "Loads the program saved in DIR (luminal_search --out DIR: DIR/program, with the graph in\n"
    "DIR/graph.json; or a directory written by pg_program_save) and runs it:\n"
    "on the GPU where there is one, otherwise on the CPU through llir's executor (a line on\n"
    "stderr says which and why).\n"
    "\n"
    "  --inputs PATH     the inputs: a directory holding NAME.npy for each input, or a\n"
    "                    .safetensors file holding them by name; every input not in\n"
    "                    --weights must be there\n"
    "  --weights FILE    a .safetensors file; the inputs it names are taken from it (an\n"
    "                    input may not be in both --weights and --inputs); without\n"
    "                    --inputs, the inputs it does not name are seeded\n"
    "                    (without either, every input is seeded)\n"
    "  --seed S          the seed of seeded inputs (default 0): input i is\n"
    "                    hl_graph_fill_input(graph, i, seed), uniform in its \"init\" range\n"
    "                    (DIR/graph.json), else floats in [-1, 1), int and i64 in [0, 4),\n"
    "                    bool 0 or 1\n"
    "  --dim NAME=V      the value of dynamic dim NAME (default: its profile value); once\n"
    "                    per dim; input shapes follow the dims\n"
    "  --write-inputs D  write every input as D/NAME.npy (made if need be); alone, it\n"
    "                    only writes them and does not run the program\n"
    "  --outputs PATH    write every output: PATH/NAME.npy (a directory, made if need be),\n"
    "                    or one file when PATH ends in .safetensors\n"
    "  --npy-native      write f16 as '<f2', bf16 as '<V2' and FP8 as '|V1' (their bits)\n"
    "                    instead of f32 (the default, which every numpy reads exactly)\n"
    "  --check           compare every output with the reference runtime (hl_run on\n"
    "                    DIR/graph.json at the same dims and inputs) within llir's\n"
    "                    tolerances; prints each output's largest error against its\n"
    "                    tolerance; exit status 1 when one disagrees\n"
    "  --bench           time the program: single call (one run, inputs resident, waited\n"
    "                    for; median), single call with host I/O (inputs set from host\n"
    "                    memory and outputs read back), back to back (GPU: CUDA-graph\n"
    "                    replays timed with events; CPU: runs one after another); in\n"
    "                    microseconds (docs/luminal_run.md says exactly what is measured)\n"
    "  --backend B       auto (default), gpu or cpu\n"
    "  --json            one JSON object on stdout instead of the text report\n"
    "  --quiet           nothing on stderr but errors\n"
    "  --help            this text\n"
    "\n"
    ".npy files: C order, little-endian; f32 '<f4', f16 '<f2', bf16 'bfloat16' or '<V2'\n"
    "(bits), FP8 'float8_e4m3fn' / 'float8_e5m2' or '|V1', int '<i4', i64 '<i8', bool\n"
    "'|b1'; a narrow float may also come as '<f4' holding exactly its values. Outputs\n"
    "and --write-inputs write narrow floats as '<f4' unless --npy-native.\n"
    "Exit status: 0 on success, 1 on an error or a failed check, 2 for a usage error.\n";

typedef struct opts {
    const char *dir, *inputs, *weights, *outputs, *write_inputs;
    bool check, bench, json, quiet, native;
    pg_backend backend;
    uint64_t seed;
    uint32_t n_dims;
    char dim_name[MAX_DIM_ARGS][64];
    int64_t dim_value[MAX_DIM_ARGS];
} opts;

/* One input of the program: where its bytes came from, and the bytes. */
typedef struct input {
    pg_tensor_info info;
    hl_dtype dtype;
    hl_tensor t; /* owns data */
    char source[4400];
} input;

/* Everything the run holds, freed in one place. */
typedef struct run {
    const opts *o;
    pg_program *p;
    hl_graph *g; /* DIR/graph.json, or NULL */
    char *wbuf, *ibuf; /* --weights / --inputs .safetensors contents */
    lr_st wst, ist;
    uint32_t n_in, n_out;
    input *in;
    json_t *doc; /* the --json report */
    bool said_no_graph;
    lm_err err;
} run;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "luminal_run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return 2;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int parse_args(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = PG_BACKEND_AUTO;
    bool seen_seed = false, seen_backend = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        bool *flag = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            exit(0);
        } else if (!strcmp(a, "--inputs")) {
            slot = &o->inputs;
        } else if (!strcmp(a, "--weights")) {
            slot = &o->weights;
        } else if (!strcmp(a, "--outputs")) {
            slot = &o->outputs;
        } else if (!strcmp(a, "--write-inputs")) {
            slot = &o->write_inputs;
        } else if (!strcmp(a, "--check")) {
            flag = &o->check;
        } else if (!strcmp(a, "--bench")) {
            flag = &o->bench;
        } else if (!strcmp(a, "--json")) {
            flag = &o->json;
        } else if (!strcmp(a, "--quiet")) {
            flag = &o->quiet;
        } else if (!strcmp(a, "--npy-native")) {
            flag = &o->native;
        } else if (!strcmp(a, "--seed")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            if (seen_seed) return usage_error("%s is given twice", a);
            seen_seed = true;
            const char *v = argv[++i];
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-')
                return usage_error("--seed wants a non-negative integer, not '%s'", v);
            o->seed = s;
            continue;
        } else if (!strcmp(a, "--backend")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            if (seen_backend) return usage_error("%s is given twice", a);
            seen_backend = true;
            const char *v = argv[++i];
            if (!strcmp(v, "auto")) o->backend = PG_BACKEND_AUTO;
            else if (!strcmp(v, "gpu")) o->backend = PG_BACKEND_GPU;
            else if (!strcmp(v, "cpu")) o->backend = PG_BACKEND_CPU;
            else return usage_error("--backend wants auto, gpu or cpu, not '%s'", v);
            continue;
        } else if (!strcmp(a, "--dim")) {
            if (i + 1 >= argc) return usage_error("%s needs NAME=V", a);
            const char *v = argv[++i], *eq = strchr(v, '=');
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof o->dim_name[0])
                return usage_error("--dim wants NAME=V, not '%s'", v);
            if (o->n_dims == MAX_DIM_ARGS) return usage_error("too many --dim (at most %s)", "32");
            char *end;
            errno = 0;
            long long x = strtoll(eq + 1, &end, 10);
            if (errno || end == eq + 1 || *end)
                return usage_error("--dim wants an integer value, not '%s'", v);
            char *name = o->dim_name[o->n_dims];
            memcpy(name, v, (size_t)(eq - v));
            name[eq - v] = 0;
            for (uint32_t k = 0; k < o->n_dims; k++)
                if (!strcmp(o->dim_name[k], name)) return usage_error("--dim %s is given twice", name);
            o->dim_value[o->n_dims++] = x;
            continue;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else {
            if (o->dir) return usage_error("one program directory, not also '%s'", a);
            o->dir = a;
            continue;
        }
        if (slot) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            if (*slot) return usage_error("%s is given twice", a);
            *slot = argv[++i];
        } else if (flag) {
            if (*flag) return usage_error("%s is given twice", a);
            *flag = true;
        }
    }
    if (!o->dir) return usage_error("%s", "the program directory is missing");
    if (o->weights && !ends_with(o->weights, ".safetensors"))
        return usage_error("--weights wants a .safetensors file, not '%s'", o->weights);
    return 0;
}

/* ---- small helpers ---- */

static int mkdir_p(const char *path, lm_err *err)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return lm_err_set(err, LM_EARG, NULL, "%s: the path is too long", path);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return lm_err_set(err, LM_EIO, NULL, "cannot create %s: %s", buf, strerror(errno));
        *s = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return lm_err_set(err, LM_EIO, NULL, "cannot create %s: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return lm_err_set(err, LM_EIO, NULL, "%s is not a directory", buf);
    return 0;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void shape_text(char *buf, size_t cap, uint32_t ndim, const int64_t *dims)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? ", " : "", dims[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

static json_t *shape_json(uint32_t ndim, const int64_t *dims)
{
    json_t *a = json_array();
    for (uint32_t d = 0; d < ndim; d++)
        json_array_append_new(a, json_integer(dims[d]));
    return a;
}

static json_t *num_json(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static void note(const run *r, const char *fmt, const char *arg)
{
    if (r->o->quiet) return;
    fprintf(stderr, "luminal_run: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
}

/* The current dims as "B=5 S=7" (for messages). */
static void dims_text(const pg_program *p, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t d = 0; d < pg_program_dim_count(p) && n < cap; d++) {
        int64_t v = 0;
        lm_err e = {0};
        pg_program_dim_info(p, d, NULL, NULL, &v, &e);
        n += (size_t)snprintf(buf + n, cap - n, "%s%s=%" PRId64, d ? " " : "",
                              pg_program_dim_name(p, d), v);
    }
}

/* ---- loading ---- */

static int load(run *r)
{
    const opts *o = r->o;
    pg_options po;
    pg_options_default(&po);
    po.backend = o->backend;
    /* only writing inputs: no GPU context, no kernel compiles */
    po.defer_gpu = o->write_inputs && !o->outputs && !o->check && !o->bench;
    /* a search's output directory holds the program in program/ and the graph beside it;
     * a program saved by pg_program_save is the directory itself */
    char pdir[4096];
    snprintf(pdir, sizeof pdir, "%s/program/plan.json", o->dir);
    if (exists(pdir))
        snprintf(pdir, sizeof pdir, "%s/program", o->dir);
    else
        snprintf(pdir, sizeof pdir, "%s", o->dir);
    r->p = pg_program_load(pdir, &po, &r->err);
    if (!r->p) return 1;
    if (!po.defer_gpu) note(r, "%s", pg_program_backend_note(r->p));
    char gpath[4096];
    snprintf(gpath, sizeof gpath, "%s/graph.json", o->dir);
    if (exists(gpath)) {
        r->g = hl_graph_load_json(gpath, &r->err);
        if (!r->g) return 1;
    } else if (o->check) {
        lm_err_set(&r->err, LM_EIO, NULL,
                   "--check needs the program's input graph, %s, which is not there "
                   "(luminal_search writes it; copy the graph you compiled there)",
                   gpath);
        return 1;
    }
    for (uint32_t k = 0; k < o->n_dims; k++)
        if (pg_program_set_dim(r->p, o->dim_name[k], o->dim_value[k], &r->err)) return 1;
    r->n_in = pg_program_input_count(r->p);
    r->n_out = pg_program_output_count(r->p);
    r->in = calloc(r->n_in ? r->n_in : 1, sizeof *r->in);
    if (!r->in) return lm_err_set(&r->err, LM_ENOMEM, NULL, "out of memory"), 1;
    for (uint32_t i = 0; i < r->n_in; i++) {
        input *in = &r->in[i];
        if (pg_program_input_info(r->p, i, &in->info, &r->err)) return 1;
        if (hl_dtype_parse(in->info.dtype, &in->dtype) != 0)
            return lm_err_set(&r->err, LM_EDTYPE, NULL, "input '%s': unknown dtype '%s'",
                              in->info.name, in->info.dtype),
                   1;
        lm_err he = {0};
        if (hl_tensor_init(&in->t, in->dtype, in->info.ndim, in->info.dims, &he)) {
            lm_err_set(&r->err, he.code, NULL, "input '%s': %s", in->info.name, he.msg);
            return 1;
        }
    }
    return 0;
}

/* The index of the graph input called name, or LM_NONE. */
static uint32_t graph_input(const hl_graph *g, const char *name)
{
    for (uint32_t k = 0; k < hl_graph_input_count(g); k++)
        if (!strcmp(hl_graph_node(g, hl_graph_input(g, k))->name, name)) return k;
    return LM_NONE;
}

static uint32_t graph_output(const hl_graph *g, const char *name)
{
    for (uint32_t k = 0; k < hl_graph_output_count(g); k++)
        if (!strcmp(hl_graph_node(g, hl_graph_output(g, k))->name, name)) return k;
    return LM_NONE;
}

/* graph.json must describe the program: the same inputs and outputs by name and dtype. */
static int check_graph_matches(run *r)
{
    const hl_graph *g = r->g;
    if (!g) return 0;
    char gpath[4200];
    snprintf(gpath, sizeof gpath, "%s/graph.json", r->o->dir);
    if (hl_graph_input_count(g) != r->n_in || hl_graph_output_count(g) != r->n_out)
        return lm_err_set(&r->err, LM_EARG, NULL,
                          "%s does not match the program: %u inputs and %u outputs, the program "
                          "has %u and %u",
                          gpath, hl_graph_input_count(g), hl_graph_output_count(g), r->n_in,
                          r->n_out),
               1;
    for (uint32_t i = 0; i < r->n_in + r->n_out; i++) {
        bool is_in = i < r->n_in;
        pg_tensor_info info;
        if ((is_in ? pg_program_input_info(r->p, i, &info, &r->err)
                   : pg_program_output_info(r->p, i - r->n_in, &info, &r->err)))
            return 1;
        uint32_t k = is_in ? graph_input(g, info.name) : graph_output(g, info.name);
        const hl_node *n =
            k == LM_NONE ? NULL
                         : hl_graph_node(g, is_in ? hl_graph_input(g, k) : hl_graph_output(g, k));
        if (!n || strcmp(hl_dtype_name(n->dtype), info.dtype) || n->ndim != info.ndim)
            return lm_err_set(&r->err, LM_EARG, NULL,
                              "%s does not match the program: its %s '%s' (%s, rank %u) is %s",
                              gpath, is_in ? "input" : "output", info.name, info.dtype,
                              info.ndim, n ? "of another dtype or rank there" : "not there"),
                   1;
    }
    return 0;
}

/* ---- inputs ---- */

/* A safetensors file is read as far as its own header says, and no further than the
 * memory this process may use (lr_st_read). */
static int read_st(run *r, const char *path, char **buf, lr_st *st)
{
    size_t len = 0;
    uint64_t avail = lm_mem_available();
    return lr_st_read(path, avail ? avail : UINT64_MAX, buf, &len, st, &r->err) ? 1 : 0;
}

/* Fills input in from array a (from `what`), checking dtype and shape. */
static int take_array(run *r, input *in, const lr_array *a, const char *what)
{
    char dims[256];
    dims_text(r->p, dims, sizeof dims);
    if (!lr_elem_accepted(a->elem, in->dtype)) {
        char held[64] = "";
        if (a->elem != LR_E_OTHER) snprintf(held, sizeof held, " (%s)", lr_elem_name(a->elem));
        return lm_err_set(&r->err, LM_EDTYPE, NULL,
                          "%s: input '%s' is %s; the file holds '%s'%s; accepted: %s", what,
                          in->info.name, in->info.dtype, a->type, held,
                          lr_accepted_text(in->dtype)),
               1;
    }
    bool same = a->ndim == in->info.ndim;
    for (uint32_t d = 0; same && d < a->ndim; d++)
        same = a->dims[d] == in->info.dims[d];
    if (!same) {
        char want[256], got[256];
        shape_text(want, sizeof want, in->info.ndim, in->info.dims);
        shape_text(got, sizeof got, a->ndim, a->dims);
        return lm_err_set(&r->err, LM_ESHAPE, NULL,
                          "%s: input '%s' has shape %s at the dims %s; the file holds %s (set "
                          "dynamic dims with --dim NAME=V)",
                          what, in->info.name, want, dims[0] ? dims : "(none)", got),
               1;
    }
    return lr_convert_in(a, in->dtype, in->t.data, what, &r->err) ? 1 : 0;
}

/* The most bytes a .npy file of input `in` can hold: the longest header and the
 * elements at the widest type any dtype accepts (8 bytes: i64; a narrow float given as
 * f32 takes 4). A larger file (or an endless one, /dev/zero) is refused without being
 * read past this. */
static size_t npy_max_bytes(const input *in)
{
    uint64_t data = in->info.numel <= UINT64_MAX / 8 ? in->info.numel * 8 : UINT64_MAX;
    uint64_t max = data <= UINT64_MAX - LR_NPY_MAX_HEADER - 16 ? data + LR_NPY_MAX_HEADER + 16
                                                                : UINT64_MAX;
    return max < (uint64_t)SIZE_MAX / 2 ? (size_t)max : SIZE_MAX / 2;
}

static int from_npy(run *r, input *in, const char *path)
{
    size_t len = 0;
    char *buf = lm_read_file(path, npy_max_bytes(in), &len, &r->err);
    if (!buf) {
        if (r->err.code == LM_ELIMIT)
            lm_err_prefix(&r->err, "input '%s' (%" PRIu64 " elements of %s)", in->info.name,
                          in->info.numel, in->info.dtype);
        return 1;
    }
    lr_array a;
    int rc = lr_npy_parse((const uint8_t *)buf, len, path, &a, &r->err) ? 1 : 0;
    if (!rc) rc = take_array(r, in, &a, path);
    free(buf);
    return rc;
}

static int seed_input(run *r, uint32_t i)
{
    input *in = &r->in[i];
    if (r->g) {
        uint32_t k = graph_input(r->g, in->info.name);
        if (k == LM_NONE) /* check_graph_matches ran first */
            return lm_err_set(&r->err, LM_EARG, NULL, "input '%s' is not in graph.json",
                              in->info.name),
                   1;
        if (hl_graph_fill_input(r->g, k, &in->t, r->o->seed, &r->err)) return 1;
        snprintf(in->source, sizeof in->source, "seeded (seed %" PRIu64 ", stream %u, graph.json)",
                 r->o->seed, k);
    } else {
        hl_tensor_fill_random(&in->t, r->o->seed, i);
        if (!r->said_no_graph)
            note(r, "%s", "no graph.json beside the program: seeded inputs ignore the graph's "
                          "\"init\" ranges");
        r->said_no_graph = true;
        snprintf(in->source, sizeof in->source,
                 "seeded (seed %" PRIu64 ", stream %u, no graph.json: no \"init\")", r->o->seed,
                 i);
    }
    return 0;
}

static int gather_inputs(run *r)
{
    const opts *o = r->o;
    if (o->weights && read_st(r, o->weights, &r->wbuf, &r->wst)) return 1;
    bool in_dir = false;
    if (o->inputs) {
        if (ends_with(o->inputs, ".safetensors")) {
            if (read_st(r, o->inputs, &r->ibuf, &r->ist)) return 1;
        } else if (ends_with(o->inputs, ".npz")) {
            return lm_err_set(&r->err, LM_EUNSUPPORTED, NULL,
                              "%s: .npz is not read; give a directory of NAME.npy files "
                              "(np.save(f'{dir}/{name}.npy', x)) or a .safetensors file",
                              o->inputs),
                   1;
        } else if (is_dir(o->inputs)) {
            in_dir = true;
        } else {
            return lm_err_set(&r->err, LM_EIO, NULL,
                              "--inputs %s: not a directory (of NAME.npy files) nor a "
                              ".safetensors file",
                              o->inputs),
                   1;
        }
    }
    uint32_t seeded = 0;
    char seeded_names[512] = "";
    for (uint32_t i = 0; i < r->n_in; i++) {
        input *in = &r->in[i];
        const char *name = in->info.name;
        const lr_st_entry *w = o->weights ? lr_st_find(&r->wst, name) : NULL;
        char path[4096] = "";
        const lr_st_entry *s = NULL;
        if (in_dir) {
            snprintf(path, sizeof path, "%s/%s.npy", o->inputs, name);
            if (!exists(path)) path[0] = 0;
        } else if (o->inputs) {
            s = lr_st_find(&r->ist, name);
        }
        bool in_inputs = path[0] || s;
        if (w && in_inputs)
            return lm_err_set(&r->err, LM_EARG, NULL,
                              "input '%s' is both in --weights %s and in --inputs %s; give it "
                              "once",
                              name, o->weights, o->inputs),
                   1;
        if (w) {
            char what[4200];
            snprintf(what, sizeof what, "%s, tensor '%s'", o->weights, name);
            if (take_array(r, in, &w->a, what)) return 1;
            snprintf(in->source, sizeof in->source, "%s", what);
        } else if (path[0]) {
            if (from_npy(r, in, path)) return 1;
            snprintf(in->source, sizeof in->source, "%s", path);
        } else if (s) {
            char what[4200];
            snprintf(what, sizeof what, "%s, tensor '%s'", o->inputs, name);
            if (take_array(r, in, &s->a, what)) return 1;
            snprintf(in->source, sizeof in->source, "%s", what);
        } else if (o->inputs) {
            return lm_err_set(&r->err, LM_EIO, NULL,
                              "input '%s' is not given: %s%s%s%s%s", name,
                              in_dir ? "no " : "no tensor of that name in ",
                              in_dir ? name : o->inputs, in_dir ? ".npy in " : "",
                              in_dir ? o->inputs : "",
                              o->weights ? " (nor in --weights)" : ""),
                   1;
        } else {
            if (seed_input(r, i)) return 1;
            if (o->weights) {
                size_t n = strlen(seeded_names);
                snprintf(seeded_names + n, sizeof seeded_names - n, "%s%s", seeded ? ", " : "",
                         name);
            }
            seeded++;
        }
    }
    if (o->weights && seeded) {
        char msg[700];
        snprintf(msg, sizeof msg, "inputs not in %s are seeded: %s", o->weights, seeded_names);
        note(r, "%s", msg);
    }
    uint32_t unused = 0;
    for (uint32_t k = 0; k < r->wst.n; k++)
        unused += pg_program_input_find(r->p, r->wst.entries[k].name) == LM_NONE;
    for (uint32_t k = 0; k < r->ist.n; k++)
        unused += pg_program_input_find(r->p, r->ist.entries[k].name) == LM_NONE;
    if (unused) {
        char msg[64];
        snprintf(msg, sizeof msg, "%u", unused);
        note(r, "%s tensors of the safetensors files are not inputs of the program (ignored)",
             msg);
    }
    return 0;
}

static int write_inputs(run *r)
{
    const char *dir = r->o->write_inputs;
    if (mkdir_p(dir, &r->err)) return 1;
    for (uint32_t i = 0; i < r->n_in; i++) {
        input *in = &r->in[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.npy", dir, in->info.name);
        const char *descr;
        void *wide;
        size_t bytes;
        if (lr_npy_form(in->dtype, r->o->native, in->t.data, in->info.numel, &descr, &wide, &bytes,
                        &r->err))
            return 1;
        int rc = lr_npy_write(path, descr, in->info.ndim, in->info.dims, wide ? wide : in->t.data,
                              bytes, &r->err);
        free(wide);
        if (rc) return 1;
    }
    return 0;
}

static int set_inputs(run *r, bool alt, uint8_t *const *alt_data)
{
    for (uint32_t i = 0; i < r->n_in; i++) {
        const void *d = alt && alt_data[i] ? alt_data[i] : r->in[i].t.data;
        if (pg_program_set_input(r->p, i, d, r->in[i].info.bytes, &r->err)) return 1;
    }
    return 0;
}

/* ---- outputs ---- */

/* Output o as an hl_tensor borrowing the program's memory (valid until the next run). */
static int output_tensor(run *r, uint32_t o, pg_tensor_info *info, hl_tensor *t)
{
    const void *data;
    size_t bytes;
    if (pg_program_output_info(r->p, o, info, &r->err) ||
        pg_program_output(r->p, o, &data, &bytes, &r->err))
        return 1;
    memset(t, 0, sizeof *t);
    if (hl_dtype_parse(info->dtype, &t->dtype) != 0)
        return lm_err_set(&r->err, LM_EDTYPE, NULL, "output '%s': unknown dtype '%s'", info->name,
                          info->dtype),
               1;
    t->ndim = info->ndim;
    memcpy(t->dims, info->dims, sizeof info->dims);
    t->numel = (size_t)info->numel;
    t->data = (void *)data;
    return 0;
}

static int write_outputs(run *r, json_t *jouts)
{
    const char *path = r->o->outputs;
    bool st = ends_with(path, ".safetensors");
    if (!st && mkdir_p(path, &r->err)) return 1;
    lr_st_out *so = st ? calloc(r->n_out ? r->n_out : 1, sizeof *so) : NULL;
    if (st && !so) return lm_err_set(&r->err, LM_ENOMEM, NULL, "out of memory"), 1;
    pg_tensor_info *infos = calloc(r->n_out ? r->n_out : 1, sizeof *infos);
    int rc = infos ? 0 : (lm_err_set(&r->err, LM_ENOMEM, NULL, "out of memory"), 1);
    for (uint32_t o = 0; !rc && o < r->n_out; o++) {
        hl_tensor t;
        if (output_tensor(r, o, &infos[o], &t)) {
            rc = 1;
            break;
        }
        char file[1100];
        if (st) {
            so[o] = (lr_st_out){infos[o].name, t.dtype, t.ndim, infos[o].dims, t.data,
                                (size_t)infos[o].bytes};
            snprintf(file, sizeof file, "%s", path);
        } else {
            char full[4096];
            snprintf(file, sizeof file, "%s.npy", infos[o].name);
            snprintf(full, sizeof full, "%s/%s", path, file);
            const char *descr;
            void *wide;
            size_t bytes;
            if (lr_npy_form(t.dtype, r->o->native, t.data, t.numel, &descr, &wide, &bytes,
                            &r->err)) {
                rc = 1;
                break;
            }
            rc = lr_npy_write(full, descr, t.ndim, t.dims, wide ? wide : t.data, bytes, &r->err)
                     ? 1
                     : 0;
            free(wide);
        }
        json_object_set_new(json_array_get(jouts, o), "file", json_string(file));
    }
    if (!rc && st) rc = lr_st_write(path, so, r->n_out, &r->err) ? 1 : 0;
    free(so);
    free(infos);
    return rc;
}

/* Fills the report's outputs: name, dtype, shape, sum, max |x|; prints them as text. */
static int describe_outputs(run *r, json_t *jouts)
{
    for (uint32_t o = 0; o < r->n_out; o++) {
        pg_tensor_info info;
        hl_tensor t;
        if (output_tensor(r, o, &info, &t)) return 1;
        double sum = 0, amax = 0;
        for (size_t i = 0; i < t.numel; i++) {
            double v = hl_tensor_get(&t, i);
            sum += v;
            if (fabs(v) > amax || isnan(v)) amax = isnan(amax) ? amax : fabs(v);
        }
        char shape[256];
        shape_text(shape, sizeof shape, info.ndim, info.dims);
        json_t *e = json_pack("{s:s, s:s, s:o, s:o, s:o}", "name", info.name, "dtype", info.dtype,
                              "shape", shape_json(info.ndim, info.dims), "sum", num_json(sum),
                              "max_abs", num_json(amax));
        json_array_append_new(jouts, e);
        if (!r->o->json)
            printf("output %s %s %s: sum %.9g, max |x| %.9g\n", info.name, info.dtype, shape, sum,
                   amax);
    }
    return 0;
}

/* ---- --check ---- */

static int check(run *r, json_t *jouts, bool *ok)
{
    const hl_graph *g = r->g;
    uint32_t nd = hl_graph_dim_count(g), ni = hl_graph_input_count(g),
             no = hl_graph_output_count(g);
    int64_t *dims = calloc(nd ? nd : 1, sizeof *dims);
    hl_tensor *ins = calloc(ni ? ni : 1, sizeof *ins), *ref = calloc(no ? no : 1, sizeof *ref),
              *cand = calloc(no ? no : 1, sizeof *cand), *mag = calloc(no ? no : 1, sizeof *mag);
    ll_out_cmp *cmp = calloc(no ? no : 1, sizeof *cmp);
    uint32_t *pg_of = calloc(no ? no : 1, sizeof *pg_of);
    int rc = 0;
    bool have_ref = false, have_mag = false;
    if (!dims || !ins || !ref || !cand || !mag || !cmp || !pg_of) {
        rc = (lm_err_set(&r->err, LM_ENOMEM, NULL, "out of memory"), 1);
        goto done;
    }
    for (uint32_t d = 0; d < nd; d++) {
        const hl_dim *hd = hl_graph_dim_at(g, d);
        const char *name = hl_var_name(hl_graph_exprs_c(g), hd->var);
        dims[d] = hd->profile;
        for (uint32_t k = 0; k < pg_program_dim_count(r->p); k++)
            if (!strcmp(pg_program_dim_name(r->p, k), name))
                pg_program_dim_info(r->p, k, NULL, NULL, &dims[d], &r->err);
    }
    for (uint32_t i = 0; i < r->n_in; i++)
        ins[graph_input(g, r->in[i].info.name)] = r->in[i].t;
    for (uint32_t k = 0; k < no; k++) {
        const char *name = hl_graph_node(g, hl_graph_output(g, k))->name;
        pg_of[k] = pg_program_output_find(r->p, name);
        pg_tensor_info info;
        if (output_tensor(r, pg_of[k], &info, &cand[k])) {
            rc = 1;
            goto done;
        }
    }
    if (hl_run(g, dims, ins, ref, NULL, &r->err)) {
        lm_err_prefix(&r->err, "--check: the reference runtime");
        rc = 1;
        goto done;
    }
    have_ref = true;
    if (ll_output_magnitudes(g, dims, ins, mag, &r->err)) {
        lm_err_prefix(&r->err, "--check: the outputs' magnitudes");
        rc = 1;
        goto done;
    }
    have_mag = true;
    lm_err cerr = {0};
    int crc = ll_compare_outputs_scaled(g, dims, cand, ref, mag, cmp, &cerr);
    if (crc && crc != LM_EMISMATCH) {
        lm_err_copy(&r->err, &cerr);
        rc = 1;
        goto done;
    }
    *ok = crc == 0;
    for (uint32_t k = 0; k < no; k++) {
        const char *name = hl_graph_node(g, hl_graph_output(g, k))->name;
        bool good = cmp[k].n_bad == 0 && !(cmp[k].max_err > cmp[k].tol);
        json_t *c = json_pack("{s:b, s:o, s:o, s:I, s:o}", "ok", good, "max_err",
                              num_json(cmp[k].max_err), "tol", num_json(cmp[k].tol), "n_bad",
                              (json_int_t)cmp[k].n_bad, "rms", num_json(cmp[k].rms));
        json_object_set_new(json_array_get(jouts, pg_of[k]), "check", c);
        if (!r->o->json)
            printf("check %s: max error %.3g, tolerance %.3g (in units of each element's "
                   "scale), %zu of %zu elements outside: %s\n",
                   name, cmp[k].max_err, cmp[k].tol, cmp[k].n_bad, cand[k].numel,
                   good ? "ok" : "FAIL");
    }
    if (!*ok) {
        if (r->o->json) json_object_set_new(r->doc, "check_error", json_string(cerr.msg));
        fprintf(stderr, "luminal_run: --check: %s\n", cerr.msg);
    }
done:
    for (uint32_t k = 0; k < no && ref; k++) {
        if (have_ref) hl_tensor_fini(&ref[k]);
        if (have_mag) hl_tensor_fini(&mag[k]);
    }
    free(dims);
    free(ins);
    free(ref);
    free(cand);
    free(mag);
    free(cmp);
    free(pg_of);
    return rc;
}

/* ---- --bench ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define BENCH_MAX_CALLS 200
#define BENCH_BUDGET_S 1.0
#define BENCH_B2B_TRIALS 5

/* Single calls: at least min_calls, more within BENCH_BUDGET_S, at most BENCH_MAX_CALLS;
 * the median in ms. io: inputs set from host memory (alternating two copies, so float
 * inputs are uploaded every call) and every output read back. */
static int bench_single(run *r, bool io, uint8_t *const *alt, uint32_t min_calls, double *ms,
                        uint32_t *calls)
{
    double t[BENCH_MAX_CALLS];
    uint32_t n = 0;
    double t_end = lm_now_s() + BENCH_BUDGET_S;
    while (n < BENCH_MAX_CALLS && (n < min_calls || lm_now_s() < t_end)) {
        double t0 = lm_now_s();
        if (io && set_inputs(r, n % 2 == 0, alt)) return 1;
        if (pg_program_run(r->p, &r->err)) return 1;
        for (uint32_t o = 0; io && o < r->n_out; o++) {
            const void *d;
            size_t b;
            if (pg_program_output(r->p, o, &d, &b, &r->err)) return 1;
        }
        t[n++] = (lm_now_s() - t0) * 1e3;
    }
    *ms = median(t, n);
    *calls = n;
    return 0;
}

static int bench(run *r, json_t *doc)
{
    bool gpu = pg_program_backend(r->p) == PG_BACKEND_GPU;
    pg_program_set_replay_skip(r->p, false);
    /* the second copy of the inputs: the lowest bit of the first element of every float
     * input flipped (int and bool inputs stay as they are: their values may be indexes) */
    uint8_t **alt = calloc(r->n_in ? r->n_in : 1, sizeof *alt);
    if (!alt) return lm_err_set(&r->err, LM_ENOMEM, NULL, "out of memory"), 1;
    int rc = 0;
    for (uint32_t i = 0; i < r->n_in && !rc; i++) {
        input *in = &r->in[i];
        if (!hl_dtype_is_float(in->dtype) || in->info.bytes == 0) continue;
        alt[i] = malloc((size_t)in->info.bytes);
        if (!alt[i]) {
            rc = (lm_err_set(&r->err, LM_ENOMEM, NULL, "out of memory"), 1);
            break;
        }
        memcpy(alt[i], in->t.data, (size_t)in->info.bytes);
        alt[i][0] ^= 1;
    }
    double single = 0, single_io = 0, b2b = 0, replay = NAN;
    uint32_t n_single = 0, n_io = 0, trials = 0, per_trial = 0;
    uint32_t min_calls = gpu ? 10 : 3;
    if (!rc) rc = set_inputs(r, false, alt);
    if (!rc) rc = bench_single(r, false, alt, min_calls, &single, &n_single);
    if (!rc) rc = bench_single(r, true, alt, min_calls, &single_io, &n_io);
    if (!rc) rc = set_inputs(r, false, alt);
    if (!rc && gpu) {
        /* replays queued back to back: BENCH_B2B_TRIALS trials of per_trial replays (about
         * 20 ms of work, 3 .. 1000) between two CUDA events, the median of trial / per_trial:
         * bench/e2e's method for torch, so that the two compare */
        double want = ceil(20.0 / (single > 1e-3 ? single : 1e-3));
        per_trial = want < 3 ? 3 : want > 1000 ? 1000 : (uint32_t)want;
        trials = BENCH_B2B_TRIALS;
        rc = pg_program_time(r->p, 3, trials, per_trial, 120000.0, &b2b, NULL, NULL, &r->err);
        /* and each replay timed on its own (the search's measurement): about 100 ms */
        want = ceil(100.0 / (single > 1e-3 ? single : 1e-3));
        uint32_t n = want < 20 ? 20 : want > 2000 ? 2000 : (uint32_t)want;
        if (!rc) rc = pg_program_time(r->p, 3, n, 1, 120000.0, &replay, NULL, NULL, &r->err);
        rc = rc ? 1 : 0;
    } else if (!rc) {
        /* runs one after another, each trial timed as a whole: about 200 ms a trial */
        double want = ceil(200.0 / (single > 1e-3 ? single : 1e-3));
        per_trial = want < 1 ? 1 : want > 100 ? 100 : (uint32_t)want;
        trials = BENCH_B2B_TRIALS;
        double t[BENCH_B2B_TRIALS];
        for (uint32_t k = 0; k < trials && !rc; k++) {
            double t0 = lm_now_s();
            for (uint32_t j = 0; j < per_trial && !rc; j++)
                rc = pg_program_run(r->p, &r->err) ? 1 : 0;
            t[k] = (lm_now_s() - t0) * 1e3 / per_trial;
        }
        if (!rc) b2b = median(t, trials);
    }
    for (uint32_t i = 0; i < r->n_in; i++)
        free(alt[i]);
    free(alt);
    if (rc) return 1;
    const char *method = gpu ? "GPU: CUDA-graph replays queued back to back, trials of several "
                               "between two CUDA events (pg_program_time)"
                             : "CPU (llir's executor): runs one after another, wall clock";
    json_object_set_new(doc, "single_call_ms", json_real(single));
    json_object_set_new(doc, "single_call_io_ms", json_real(single_io));
    json_object_set_new(doc, "back_to_back_ms", json_real(b2b));
    json_object_set_new(doc, "single_call_us", json_real(single * 1e3));
    json_object_set_new(doc, "single_call_io_us", json_real(single_io * 1e3));
    json_object_set_new(doc, "back_to_back_us", json_real(b2b * 1e3));
    if (gpu) json_object_set_new(doc, "replay_median_ms", json_real(replay));
    json_object_set_new(doc, "bench",
                        json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "backend", gpu ? "gpu" : "cpu",
                                  "back_to_back_method", method, "single_calls", (int)n_single,
                                  "single_call_io_calls", (int)n_io, "back_to_back_trials",
                                  (int)trials, "back_to_back_calls_per_trial", (int)per_trial));
    if (!r->o->json) {
        printf("bench (%s): single call %.1f us (median of %u), with host I/O %.1f us (median "
               "of %u), back to back %.1f us per call (median of %u trials of %u)",
               gpu ? "GPU" : "CPU, llir's executor", single * 1e3, n_single, single_io * 1e3, n_io,
               b2b * 1e3, trials, per_trial);
        if (gpu) printf(", %.1f us a replay timed alone (median)", replay * 1e3);
        printf("\n");
    }
    return 0;
}

/* ---- main ---- */

static void free_run(run *r)
{
    for (uint32_t i = 0; r->in && i < r->n_in; i++)
        hl_tensor_fini(&r->in[i].t);
    free(r->in);
    lr_st_free(&r->wst);
    lr_st_free(&r->ist);
    free(r->wbuf);
    free(r->ibuf);
    hl_graph_free(r->g);
    pg_program_free(r->p);
    json_decref(r->doc);
}

/* The report's backend: "gpu", "cpu", or "auto" while a deferred GPU is not opened
 * (--write-inputs alone opens none). */
static void set_backend(run *r)
{
    pg_backend be = pg_program_backend(r->p);
    json_object_set_new(r->doc, "backend", json_string(be == PG_BACKEND_GPU   ? "gpu"
                                                       : be == PG_BACKEND_CPU ? "cpu"
                                                                              : "auto"));
    json_object_set_new(r->doc, "backend_note", json_string(pg_program_backend_note(r->p)));
}

static int go(run *r)
{
    const opts *o = r->o;
    if (load(r) || check_graph_matches(r) || gather_inputs(r)) return 1;
    json_t *doc = r->doc;
    json_object_set_new(doc, "program", json_string(pg_program_name(r->p)));
    json_object_set_new(doc, "dir", json_string(o->dir));
    set_backend(r);
    json_t *jd = json_object();
    for (uint32_t d = 0; d < pg_program_dim_count(r->p); d++) {
        int64_t v = 0;
        pg_program_dim_info(r->p, d, NULL, NULL, &v, &r->err);
        json_object_set_new(jd, pg_program_dim_name(r->p, d), json_integer(v));
    }
    json_object_set_new(doc, "dims", jd);
    json_object_set_new(doc, "seed", json_integer((json_int_t)o->seed));
    json_t *jin = json_array();
    char dims[512];
    dims_text(r->p, dims, sizeof dims);
    if (!o->json) printf("program '%s': dims %s\n", pg_program_name(r->p), dims[0] ? dims : "(none)");
    for (uint32_t i = 0; i < r->n_in; i++) {
        input *in = &r->in[i];
        json_array_append_new(jin, json_pack("{s:s, s:s, s:o, s:s}", "name", in->info.name,
                                             "dtype", in->info.dtype, "shape",
                                             shape_json(in->info.ndim, in->info.dims), "source",
                                             in->source));
        if (!o->json) {
            char shape[256];
            shape_text(shape, sizeof shape, in->info.ndim, in->info.dims);
            printf("input %s %s %s: %s\n", in->info.name, in->info.dtype, shape, in->source);
        }
    }
    json_object_set_new(doc, "inputs", jin);
    if (o->write_inputs) {
        if (write_inputs(r)) return 1;
        json_object_set_new(doc, "inputs_written", json_string(o->write_inputs));
        if (!o->json) printf("inputs written to %s\n", o->write_inputs);
    }
    bool run_it = o->outputs || o->check || o->bench || !o->write_inputs;
    if (!run_it) return 0;
    if (set_inputs(r, false, NULL) || pg_program_run(r->p, &r->err)) return 1;
    set_backend(r); /* a deferred GPU is open now */
    json_t *jouts = json_array();
    json_object_set_new(doc, "outputs", jouts);
    if (describe_outputs(r, jouts)) return 1;
    if (o->outputs && write_outputs(r, jouts)) return 1;
    if (o->outputs && !o->json) printf("outputs written to %s\n", o->outputs);
    bool ok = true;
    if (o->check) {
        if (check(r, jouts, &ok)) return 1;
        json_object_set_new(doc, "check", json_pack("{s:b, s:s}", "ok", ok, "reference",
                                                    "hl_run on graph.json, llir's tolerances"));
    }
    if (o->bench && bench(r, doc)) return 1;
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    opts o;
    int urc = parse_args(argc, argv, &o);
    if (urc) return urc;
    run r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    r.doc = json_object();
    int rc = go(&r);
    if (lm_err_is_set(&r.err)) {
        fprintf(stderr, "luminal_run: %s\n", r.err.msg);
        if (o.json) json_object_set_new(r.doc, "error", json_string(r.err.msg));
        rc = 1;
    }
    if (o.json) {
        json_object_set_new(r.doc, "ok", json_boolean(rc == 0));
        json_dumpf(r.doc, stdout, JSON_INDENT(1));
        fputc('\n', stdout);
    }
    free_run(&r);
    return rc;
}
