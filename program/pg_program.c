/* pg_program.c - the public API of program.h: making and loading programs, dims and their
 * buckets, inputs (the unchanged-input skip), running (the replay skip), outputs and
 * counters. What runs the steps is a backend: pg_gpu.c (cuda_rt) or pg_cpu.c (ll_run).
 *
 * State between runs. `inputs_changed` is set by every set that changes an input's bytes
 * (and by every device input, whose bytes cannot be seen) and cleared by a run that
 * succeeded; `last_dims` are the dims of that run. A run is skipped when the program has
 * run, no input changed, the dims are the last run's and every output has been read back
 * to the host since (pg_out_state.valid): the outputs are then exactly what a replay
 * would give.
 */
#include "pg_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#ifdef PG_HAVE_CUDA
#include "cuda_rt.h"
#endif

void pg_options_default(pg_options *o)
{
    memset(o, 0, sizeof *o);
}

/* ==================================================================================
 * Making and freeing
 * ================================================================================== */

static pg_program *prog_alloc(const pg_options *opt, const char *name, lm_err *err)
{
    pg_options def;
    pg_options_default(&def);
    if (!opt) opt = &def;
    pg_program *p = pg__alloc(1, sizeof *p);
    if (!p || !(p->name = pg__strdup(opt->name && opt->name[0] ? opt->name : name))) {
        pg__free(p);
        pg__fail(err, LM_ENOMEM, pg__at(opt->name ? opt->name : name), "out of memory");
        return NULL;
    }
    if ((unsigned)opt->backend > PG_BACKEND_CPU) {
        pg__fail(err, LM_EARG, pg__at(p->name), "backend %d is not one of AUTO, GPU, CPU",
                 (int)opt->backend);
        pg__free(p->name);
        pg__free(p);
        return NULL;
    }
    p->want = opt->backend;
    p->mock = opt->mock;
    p->compile_threads = opt->compile_threads;
    p->defer_gpu = opt->defer_gpu;
    p->stepwise = opt->stepwise;
    p->replay_skip = !opt->no_replay_skip;
    p->inplace = !opt->no_inplace;
    p->cpu_mem_limit = opt->cpu_mem_limit;
    p->backend = PG_BACKEND_AUTO;
    snprintf(p->note, sizeof p->note, "not opened yet");
#ifdef PG_HAVE_CUDA
    if (opt->rt) {
        p->rt_opt = pg__alloc(1, sizeof *p->rt_opt);
        if (p->rt_opt) {
            *p->rt_opt = *opt->rt;
            p->rt_opt->lib_dir = NULL;
            if (opt->rt->lib_dir) p->rt_lib_dir = pg__strdup(opt->rt->lib_dir);
            p->rt_opt->lib_dir = p->rt_lib_dir;
        }
        if (!p->rt_opt || (opt->rt->lib_dir && !p->rt_lib_dir)) {
            pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
            pg_program_free(p);
            return NULL;
        }
    }
#endif
    return p;
}

void pg_program_free(pg_program *p)
{
    if (!p) return;
    for (uint32_t i = 0; p->in && i < p->plan.n_inputs; i++)
        pg__gpu_host_free(p, p->in[i].host, p->in[i].pinned);
    for (uint32_t i = 0; p->out && i < p->plan.n_outputs; i++)
        pg__gpu_host_free(p, p->out[i].host, p->out[i].pinned);
    pg__gpu_close(p);
    pg__cpu_close(p);
    for (uint32_t i = 0; p->inputs && i < p->plan.n_inputs; i++)
        pg__free(p->inputs[i].name);
    for (uint32_t i = 0; p->outputs && i < p->plan.n_outputs; i++)
        pg__free(p->outputs[i].name);
    pg__free(p->inputs);
    pg__free(p->outputs);
    pg__plan_fini(&p->plan);
    ll_graph_free(p->llir);
    pg__free(p->llir_dim);
    pg__free(p->dims);
    pg__free(p->dim_val);
    pg__free(p->last_dims);
    pg__free(p->slot);
    pg__free(p->in);
    pg__free(p->out);
    pg__free(p->rt_opt);
    pg__free(p->rt_lib_dir);
    pg__free(p->egraph_fp);
    pg__free(p->genome_fp);
    pg__free(p->title);
    pg__free(p->name);
    pg__free(p);
}

static int bucket_cmp(const void *a, const void *b)
{
    const pg_bucket *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->hi > y->hi) - (x->hi < y->hi);
}

/* Buckets from the options (pg_program_new; for a loaded program, from its file), then
 * checked: inside the dim's range, not overlapping; sorted by lo. */
static int setup_buckets(pg_program *p, const pg_options *opt, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (!p->dims) {
        p->dims = pg__alloc(pl->n_dims, sizeof *p->dims);
        if (!p->dims) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
    }
    for (uint32_t i = 0; opt && i < opt->n_buckets; i++) {
        const pg_dim_buckets *db = &opt->buckets[i];
        uint32_t d = LM_NONE;
        for (uint32_t j = 0; db->dim && j < pl->n_dims; j++)
            if (strcmp(pl->dim_names[j], db->dim) == 0) d = j;
        if (d == LM_NONE)
            return pg__fail(err, LM_EARG, pg__at(p->name), "buckets for '%s', which is not a dim",
                            db->dim ? db->dim : "(null)");
        if (db->n < 1 || db->n > PG_MAX_BUCKETS || !db->buckets)
            return pg__fail(err, LM_EARG, pg__at(p->name), "dim '%s': %u buckets (1 .. %d allowed)",
                            db->dim, db->n, PG_MAX_BUCKETS);
        if (p->dims[d].n)
            return pg__fail(err, LM_EARG, pg__at(p->name), "dim '%s' has buckets given twice", db->dim);
        p->dims[d].n = db->n;
        memcpy(p->dims[d].b, db->buckets, db->n * sizeof *db->buckets);
    }
    uint64_t variants = 1;
    for (uint32_t d = 0; d < pl->n_dims; d++) {
        pg_dim *x = &p->dims[d];
        const hl_dim *r = &pl->dims[d];
        if (x->n == 0) {
            x->n = 1;
            x->b[0] = (pg_bucket){r->lo, r->hi};
        }
        qsort(x->b, x->n, sizeof x->b[0], bucket_cmp);
        for (uint32_t b = 0; b < x->n; b++) {
            if (x->b[b].lo > x->b[b].hi || x->b[b].lo < r->lo || x->b[b].hi > r->hi)
                return pg__fail(err, LM_EARG, pg__at(p->name),
                                "dim '%s': bucket [%lld, %lld] is not a range inside the dim's "
                                "[%lld, %lld]",
                                pl->dim_names[d], (long long)x->b[b].lo, (long long)x->b[b].hi,
                                (long long)r->lo, (long long)r->hi);
            if (b && x->b[b].lo <= x->b[b - 1].hi)
                return pg__fail(err, LM_EARG, pg__at(p->name),
                                "dim '%s': buckets [%lld, %lld] and [%lld, %lld] overlap; a "
                                "value must pick one bucket",
                                pl->dim_names[d], (long long)x->b[b - 1].lo,
                                (long long)x->b[b - 1].hi, (long long)x->b[b].lo,
                                (long long)x->b[b].hi);
        }
        variants *= x->n;
        if (variants > PG_MAX_VARIANTS)
            return pg__fail(err, LM_EARG, pg__at(p->name),
                            "the buckets make more than %d combinations of dims", PG_MAX_VARIANTS);
    }
    p->n_variants = (uint32_t)variants;
    return 0;
}

uint32_t pg__variant_of(const pg_program *p, const int64_t *vals, lm_err *err)
{
    uint32_t v = 0;
    for (uint32_t d = 0; d < p->plan.n_dims; d++) {
        const pg_dim *x = &p->dims[d];
        uint32_t found = LM_NONE;
        for (uint32_t b = 0; b < x->n && found == LM_NONE; b++)
            if (vals[d] >= x->b[b].lo && vals[d] <= x->b[b].hi) found = b;
        if (found == LM_NONE) {
            char list[512];
            size_t at = 0;
            list[0] = '\0';
            for (uint32_t b = 0; b < x->n && at < sizeof list; b++) {
                int w = snprintf(list + at, sizeof list - at, "%s[%lld, %lld]", b ? ", " : "",
                                 (long long)x->b[b].lo, (long long)x->b[b].hi);
                at += w > 0 ? (size_t)w : 0;
            }
            pg__fail(err, LM_EDIM, pg__at(p->name),
                     "dim '%s' = %lld is in none of its buckets (%s); the program was compiled "
                     "for these values only",
                     p->plan.dim_names[d], (long long)vals[d], list);
            return LM_NONE;
        }
        v = v * x->n + found;
    }
    return v;
}

int64_t pg__variant_hi(const pg_program *p, uint32_t v, uint32_t d)
{
    uint32_t stride = 1;
    for (uint32_t e = d + 1; e < p->plan.n_dims; e++)
        stride *= p->dims[e].n;
    return p->dims[d].b[(v / stride) % p->dims[d].n].hi;
}

/* Opens the backend the options ask for (AUTO: the GPU where it can, else the CPU). */
static int open_backend(pg_program *p, lm_err *err)
{
    if (p->want == PG_BACKEND_CPU) {
        if (pg__cpu_open(p, err)) return err->code;
        snprintf(p->note, sizeof p->note, "CPU: llir's executor, as asked");
        return 0;
    }
    if (p->want == PG_BACKEND_AUTO && !pg__gpu_available()) {
        if (pg__cpu_open(p, err)) return err->code;
        snprintf(p->note, sizeof p->note,
                 "CPU: this build has no GPU runtime (cuda_rt was left out: the CUDA headers "
                 "were not found when it was configured)");
        return 0;
    }
    lm_err ge = {0};
    if (pg__gpu_open(p, &ge) == 0) return 0;
    if (p->want == PG_BACKEND_AUTO && (ge.code == LM_ENODEV || ge.code == LM_ENVRTC)) {
        if (pg__cpu_open(p, err)) return err->code;
        const char *why = ge.msg, *cut = strstr(why, "opening the GPU: ");
        if (cut) why = cut + strlen("opening the GPU: ");
        snprintf(p->note, sizeof p->note, "CPU: %.300s", why);
        return 0;
    }
    lm_err_copy(err, &ge);
    return err->code;
}

static int ensure_backend(pg_program *p, lm_err *err)
{
    if (p->backend != PG_BACKEND_AUTO) return 0;
    return open_backend(p, err);
}

/* Everything after the plan, the LLIR, the IO table and (for a loaded program) the
 * buckets are in place. */
static int init_common(pg_program *p, const pg_options *opt, lm_err *err)
{
    cg_plan *pl = &p->plan;
    if (pg__plan_check(pl, true, p->name, err) || pg__check_consistency(p, err) ||
        setup_buckets(p, opt, err))
        return err->code;
    p->dim_val = pg__alloc(pl->n_dims, sizeof *p->dim_val);
    p->last_dims = pg__alloc(pl->n_dims, sizeof *p->last_dims);
    p->slot = pg__alloc(pl->n_buffers, sizeof *p->slot);
    p->in = pg__alloc(pl->n_inputs, sizeof *p->in);
    p->out = pg__alloc(pl->n_outputs, sizeof *p->out);
    if (!p->dim_val || !p->last_dims || !p->slot || !p->in || !p->out)
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
    for (uint32_t d = 0; d < pl->n_dims; d++) {
        int64_t v = pl->dims[d].profile;
        const pg_dim *x = &p->dims[d];
        bool in = false;
        for (uint32_t b = 0; b < x->n; b++)
            in |= v >= x->b[b].lo && v <= x->b[b].hi;
        p->dim_val[d] = in ? v : x->b[0].lo; /* the profile value, or the first bucket's */
    }
    if (pg__plan_inplace(p, err)) return err->code;
    if (p->defer_gpu && p->want != PG_BACKEND_CPU) {
        snprintf(p->note, sizeof p->note, "not opened yet: the GPU is tried at the first run");
        return 0;
    }
    return open_backend(p, err);
}

/* A deep copy of an LLIR graph (ll_graph_copy: no text on the way). */
static ll_graph *llir_copy(const ll_graph *g, const char *name, lm_err *err)
{
    lm_err e = {0};
    ll_graph *c = ll_graph_copy(g, &e);
    if (!c) {
        lm_err_copy(err, &e);
        pg__wrap(err, name, "copying the LLIR");
    }
    return c;
}

pg_program *pg_program_new(const struct cg_plan *plan, const struct ll_graph *llir,
                           const pg_options *opt, lm_err *err)
{
    if (lm_err_is_set(err)) return NULL;
    pg_program *p = prog_alloc(opt, "program", err);
    if (!p) return NULL;
    if (!plan || !llir) {
        pg__fail(err, LM_EARG, pg__at(p->name), "a program needs its plan and its LLIR graph");
        goto fail;
    }
    p->arch = opt && opt->arch ? opt->arch : 90;
    if (p->arch < 10 || p->arch > 1000) {
        pg__fail(err, LM_EARG, pg__at(p->name), "arch %d is not a compute capability (e.g. 90)", p->arch);
        goto fail;
    }
    p->title = pg__strdup(p->name);
    p->egraph_fp = pg__strdup(opt && opt->egraph_fingerprint ? opt->egraph_fingerprint : "");
    p->genome_fp = pg__strdup(opt && opt->genome_fingerprint ? opt->genome_fingerprint : "");
    if (!p->title || !p->egraph_fp || !p->genome_fp) {
        pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
        goto fail;
    }
    if (pg__plan_copy(&p->plan, plan, p->name, err)) goto fail;
    if (!(p->llir = llir_copy(llir, p->name, err))) goto fail;
    if (pg__io_from_llir(p, err) || init_common(p, opt, err)) goto fail;
    return p;
fail:
    pg_program_free(p);
    return NULL;
}

/* ==================================================================================
 * Saving and loading
 * ================================================================================== */

static int write_file(const char *dir, const char *rel, const char *text, const char *name,
                      lm_err *err)
{
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *path = pg__alloc(n, 1);
    if (!path) return pg__fail(err, LM_ENOMEM, pg__at(name), "out of memory");
    snprintf(path, n, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    size_t len = strlen(text);
    bool ok = f && fwrite(text, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) pg__fail(err, LM_EIO, pg__at(name), "cannot write %s: %s", path, strerror(errno));
    pg__free(path);
    return err ? err->code : (ok ? 0 : LM_EIO);
}

int pg_program_save(const pg_program *p, const char *dir, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (!p || !dir || !dir[0])
        return pg__fail(err, LM_EARG, pg__at(p ? p->name : NULL), "save: no program or no directory");
    const cg_plan *pl = &p->plan;
    char **files = pg__alloc(pl->n_kernels + 1, sizeof *files);
    if (files) memset(files, 0, (pl->n_kernels + 1) * sizeof *files);
    uint32_t *first = pg__alloc(pl->n_kernels + 1, sizeof *first);
    char *llir_text = NULL, *plan_text = NULL;
    size_t kn = strlen(dir) + 16;
    char *kdir = pg__alloc(kn, 1);
    if (!files || !first || !kdir || pg__same_source(pl, first)) {
        pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
        goto done;
    }
    snprintf(kdir, kn, "%s/kernels", dir);
    if (lm_mkdir_p(kdir, err)) { /* and dir */
        pg__wrap(err, p->name, "saving");
        goto done;
    }
    for (uint32_t k = 0; k < pl->n_kernels; k++) {
        if (first[k] != k) { /* each distinct source once */
            if (!(files[k] = pg__strdup(files[first[k]]))) {
                pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
                goto done;
            }
            continue;
        }
        files[k] = pg__alloc(32, 1);
        if (!files[k]) {
            pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
            goto done;
        }
        snprintf(files[k], 32, "kernels/k%04u.cu", k);
        if (write_file(dir, files[k], pl->kernels[k].source, p->name, err)) goto done;
    }
    for (uint32_t k = 0; k < pl->n_kernels; k++)
        if (!files[k]) {
            pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
            goto done;
        }
    lm_err le = {0};
    llir_text = ll_graph_write_json(p->llir, &le);
    if (!llir_text) {
        lm_err_copy(err, &le);
        pg__wrap(err, p->name, "saving the LLIR");
        goto done;
    }
    char hash[33];
    pg__hash_hex(llir_text, strlen(llir_text), hash);
    if (write_file(dir, "llir.json", llir_text, p->name, err)) goto done;
    plan_text = pg__plan_write(p, files, hash, err);
    if (!plan_text) goto done;
    write_file(dir, "plan.json", plan_text, p->name, err);
done:
    for (uint32_t k = 0; files && k < pl->n_kernels; k++)
        pg__free(files[k]);
    pg__free(files);
    pg__free(first);
    pg__free(kdir);
    free(llir_text);
    free(plan_text);
    return err ? err->code : 0;
}

/* The last component of a path, for the default name. */
static void base_name(const char *dir, char *out, size_t cap)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t s = n;
    while (s > 0 && dir[s - 1] != '/')
        s--;
    size_t len = n - s < cap - 1 ? n - s : cap - 1;
    memcpy(out, dir + s, len);
    out[len] = '\0';
    if (!out[0]) snprintf(out, cap, "program");
}

pg_program *pg_program_load(const char *dir, const pg_options *opt, lm_err *err)
{
    if (lm_err_is_set(err)) return NULL;
    char bn[128];
    base_name(dir ? dir : "", bn, sizeof bn);
    pg_program *p = prog_alloc(opt, bn, err);
    if (!p) return NULL;
    char *lf = NULL, *lh = NULL, *text = NULL, *path = NULL;
    if (!dir || !dir[0]) {
        pg__fail(err, LM_EARG, pg__at(p->name), "load: no directory given");
        goto fail;
    }
    if (opt && opt->n_buckets) {
        pg__fail(err, LM_EARG, pg__at(p->name),
                 "load: buckets are chosen when compiling; a saved program keeps its own");
        goto fail;
    }
    if (pg__plan_read(p, dir, &lf, &lh, err)) goto fail;
    if (!(opt && opt->name && opt->name[0])) { /* the name it was saved under */
        char *title = pg__strdup(p->title);
        if (!title) {
            pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
            goto fail;
        }
        pg__free(p->name);
        p->name = title;
    }
    size_t n = strlen(dir) + strlen(lf) + 2;
    if (!(path = pg__alloc(n, 1))) {
        pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
        goto fail;
    }
    snprintf(path, n, "%s/%s", dir, lf);
    if (strchr(lf, '/') || strstr(lf, "..")) {
        pg__fail(err, LM_EPARSE, pg__at(p->name), "%s/plan.json: llir.file \"%.60s\" is not a file name",
                 dir, lf);
        goto fail;
    }
    size_t len;
    lm_err fe = {0};
    if (!(text = lm_read_text(path, PG_MAX_LLIR_BYTES, &len, &fe))) {
        lm_err_copy(err, &fe);
        pg__wrap(err, p->name, "loading");
        goto fail;
    }
    char hash[33];
    pg__hash_hex(text, len, hash);
    if (strcmp(hash, lh) != 0) {
        pg__fail(err, LM_EPARSE, pg__at(p->name),
                 "%s does not belong to this plan: its XXH3-128 is %s, plan.json records %.40s",
                 path, hash, lh);
        goto fail;
    }
    lm_err le = {0};
    if (!(p->llir = ll_graph_read_json(text, len, path, &le)) || ll_graph_verify(p->llir, &le)) {
        lm_err_copy(err, &le);
        pg__wrap(err, p->name, "loading %s", path);
        goto fail;
    }
    if (pg__check_llir_io(p, err) || init_common(p, NULL, err)) goto fail;
    free(text);
    pg__free(path);
    pg__free(lf);
    pg__free(lh);
    return p;
fail:
    free(text);
    pg__free(path);
    pg__free(lf);
    pg__free(lh);
    pg_program_free(p);
    return NULL;
}

/* ==================================================================================
 * Queries and dims
 * ================================================================================== */

const char *pg_program_name(const pg_program *p)
{
    return p->name;
}
pg_backend pg_program_backend(const pg_program *p)
{
    return p->backend;
}
const char *pg_program_backend_note(const pg_program *p)
{
    return p->note;
}
const char *pg_program_egraph_fingerprint(const pg_program *p)
{
    return p->egraph_fp ? p->egraph_fp : "";
}
const char *pg_program_genome_fingerprint(const pg_program *p)
{
    return p->genome_fp ? p->genome_fp : "";
}
uint32_t pg_program_input_count(const pg_program *p)
{
    return p->plan.n_inputs;
}
uint32_t pg_program_output_count(const pg_program *p)
{
    return p->plan.n_outputs;
}

static uint32_t io_find(const pg_io *io, uint32_t n, const char *name)
{
    for (uint32_t i = 0; name && i < n; i++)
        if (strcmp(io[i].name, name) == 0) return i;
    return LM_NONE;
}
uint32_t pg_program_input_find(const pg_program *p, const char *name)
{
    return io_find(p->inputs, p->plan.n_inputs, name);
}
uint32_t pg_program_output_find(const pg_program *p, const char *name)
{
    return io_find(p->outputs, p->plan.n_outputs, name);
}

int pg__io_info(const pg_program *p, const pg_io *io, pg_tensor_info *out, lm_err *err)
{
    memset(out, 0, sizeof *out);
    out->name = io->name;
    out->dtype = hl_dtype_name(io->dtype);
    out->elem_size = (uint32_t)hl_dtype_size(io->dtype);
    out->ndim = io->ndim;
    uint64_t numel = 1;
    for (uint32_t d = 0; d < io->ndim; d++) {
        if (pg__eval(&p->plan, io->shape[d], p->dim_val, &out->dims[d], p->name, io->name, err))
            return err->code;
        if (out->dims[d] < 0 || (out->dims[d] && numel > UINT64_MAX / (uint64_t)out->dims[d]))
            return pg__fail(err, LM_EEVAL, pg__at(p->name), "'%s': its size overflows", io->name);
        numel *= (uint64_t)out->dims[d];
    }
    out->numel = numel;
    if (numel > UINT64_MAX / out->elem_size)
        return pg__fail(err, LM_EEVAL, pg__at(p->name), "'%s': its size overflows", io->name);
    out->bytes = numel * out->elem_size;
    return 0;
}

int pg_program_input_info(const pg_program *p, uint32_t i, pg_tensor_info *out, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (i >= p->plan.n_inputs)
        return pg__fail(err, LM_EARG, pg__at(p->name), "input %u of %u", i, p->plan.n_inputs);
    return pg__io_info(p, &p->inputs[i], out, err);
}

int pg_program_output_info(const pg_program *p, uint32_t i, pg_tensor_info *out, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (i >= p->plan.n_outputs)
        return pg__fail(err, LM_EARG, pg__at(p->name), "output %u of %u", i, p->plan.n_outputs);
    return pg__io_info(p, &p->outputs[i], out, err);
}

uint32_t pg_program_dim_count(const pg_program *p)
{
    return p->plan.n_dims;
}
const char *pg_program_dim_name(const pg_program *p, uint32_t i)
{
    return i < p->plan.n_dims ? p->plan.dim_names[i] : NULL;
}

int pg_program_dim_info(const pg_program *p, uint32_t i, int64_t *lo, int64_t *hi, int64_t *value,
                        lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (i >= p->plan.n_dims)
        return pg__fail(err, LM_EARG, pg__at(p->name), "dim %u of %u", i, p->plan.n_dims);
    if (lo) *lo = p->plan.dims[i].lo;
    if (hi) *hi = p->plan.dims[i].hi;
    if (value) *value = p->dim_val[i];
    return 0;
}

int pg_program_set_dim(pg_program *p, const char *name, int64_t value, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    uint32_t d = LM_NONE;
    for (uint32_t i = 0; name && i < p->plan.n_dims; i++)
        if (strcmp(p->plan.dim_names[i], name) == 0) d = i;
    if (d == LM_NONE)
        return pg__fail(err, LM_EDIM, pg__at(p->name), "'%s' is not a dim of the program",
                        name ? name : "(null)");
    const hl_dim *r = &p->plan.dims[d];
    if (value < r->lo || value > r->hi)
        return pg__fail(err, LM_EDIM, pg__at(p->name), "dim '%s' = %lld is outside its range [%lld, %lld]",
                        name, (long long)value, (long long)r->lo, (long long)r->hi);
    int64_t old = p->dim_val[d];
    p->dim_val[d] = value;
    if (pg__variant_of(p, p->dim_val, err) == LM_NONE) {
        p->dim_val[d] = old;
        return err->code;
    }
    return 0;
}

/* ==================================================================================
 * Inputs
 * ================================================================================== */

static int check_input_index(const pg_program *p, uint32_t i, lm_err *err)
{
    if (i >= p->plan.n_inputs)
        return pg__fail(err, LM_EARG, pg__at(p->name), "input %u of %u", i, p->plan.n_inputs);
    return 0;
}

/* The input's size at the current dims must be `bytes`. */
static int check_input_bytes(const pg_program *p, uint32_t i, size_t bytes, lm_err *err)
{
    pg_tensor_info info;
    if (pg__io_info(p, &p->inputs[i], &info, err)) return err->code;
    if (info.bytes == bytes) return 0;
    char dims[256];
    size_t at = 0;
    dims[0] = '\0';
    for (uint32_t d = 0; d < p->plan.n_dims && at < sizeof dims; d++) {
        int w = snprintf(dims + at, sizeof dims - at, "%s%s=%lld", d ? ", " : "",
                         p->plan.dim_names[d], (long long)p->dim_val[d]);
        at += w > 0 ? (size_t)w : 0;
    }
    return pg__fail(err, LM_ESHAPE, pg__at(p->name),
                    "input '%s' (%u) takes %llu bytes (%llu %s elements) at the current dims "
                    "(%s), not %zu; set the dims first, then the input",
                    info.name, i, (unsigned long long)info.bytes, (unsigned long long)info.numel,
                    info.dtype, dims[0] ? dims : "no dims", bytes);
}

int pg_program_set_input(pg_program *p, uint32_t i, const void *data, size_t bytes, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (check_input_index(p, i, err)) return err->code;
    if (!data && bytes)
        return pg__fail(err, LM_EARG, pg__at(p->name), "input '%s': no data", p->inputs[i].name);
    if (check_input_bytes(p, i, bytes, err)) return err->code;
    pg_in_state *st = &p->in[i];
    XXH128_hash_t h = XXH3_128bits(data, bytes);
    if (st->set && !st->device && st->bytes == bytes && st->hash_lo == h.low64 &&
        st->hash_hi == h.high64 && (bytes == 0 || memcmp(st->host, data, bytes) == 0)) {
        p->count.uploads_skipped++;
        p->count.bytes_skipped += bytes;
        return 0;
    }
    if (bytes > st->cap || !st->host) {
        void *host = NULL;
        bool pinned = false;
        if (pg__gpu_host_alloc(p, bytes ? bytes : 1, &host, &pinned, err)) return err->code;
        pg__gpu_host_free(p, st->host, st->pinned);
        st->host = host;
        st->pinned = pinned;
        st->cap = bytes ? bytes : 1;
    }
    if (bytes) memcpy(st->host, data, bytes);
    st->bytes = bytes;
    st->hash_lo = h.low64;
    st->hash_hi = h.high64;
    st->set = true;
    st->dirty = true;
    st->device = false;
    p->inputs_changed = true;
    return 0;
}

int pg_program_set_input_named(pg_program *p, const char *name, const void *data, size_t bytes,
                               lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    uint32_t i = pg_program_input_find(p, name);
    if (i == LM_NONE)
        return pg__fail(err, LM_EARG, pg__at(p->name), "no input is called '%s'", name ? name : "(null)");
    return pg_program_set_input(p, i, data, bytes, err);
}

int pg_program_set_input_device(pg_program *p, uint32_t i, uint64_t dptr, size_t bytes, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (check_input_index(p, i, err) || ensure_backend(p, err)) return err->code;
    if (p->backend != PG_BACKEND_GPU)
        return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name),
                        "input '%s': a device pointer needs the GPU backend; this program runs "
                        "on the CPU (%s)",
                        p->inputs[i].name, p->note);
    if (!dptr)
        return pg__fail(err, LM_EARG, pg__at(p->name), "input '%s': a null device pointer",
                        p->inputs[i].name);
    if (check_input_bytes(p, i, bytes, err)) return err->code;
    pg_in_state *st = &p->in[i];
    st->device = true;
    st->dptr = dptr;
    st->bytes = bytes;
    st->set = true;
    st->dirty = true;
    p->inputs_changed = true;
    return 0;
}

/* ==================================================================================
 * Running and outputs
 * ================================================================================== */

void pg_program_set_replay_skip(pg_program *p, bool on)
{
    p->replay_skip = on;
}

/* Every input set at the current dims' size; the variant of the dims. */
static uint32_t ready(pg_program *p, bool *device_inputs, lm_err *err)
{
    if (ensure_backend(p, err)) return LM_NONE;
    *device_inputs = false;
    for (uint32_t i = 0; i < p->plan.n_inputs; i++) {
        if (!p->in[i].set) {
            pg__fail(err, LM_EARG, pg__at(p->name), "input '%s' (%u) was never set", p->inputs[i].name, i);
            return LM_NONE;
        }
        if (check_input_bytes(p, i, p->in[i].bytes, err)) return LM_NONE;
        *device_inputs |= p->in[i].device;
    }
    return pg__variant_of(p, p->dim_val, err);
}

/* After a run (or timing) that succeeded. */
static int ran(pg_program *p, lm_err *err)
{
    p->ran = true;
    p->inputs_changed = false;
    memcpy(p->last_dims, p->dim_val, p->plan.n_dims * sizeof *p->dim_val);
    for (uint32_t i = 0; i < p->plan.n_inputs; i++)
        p->in[i].dirty = false;
    for (uint32_t o = 0; o < p->plan.n_outputs; o++) {
        pg_tensor_info info;
        if (pg__io_info(p, &p->outputs[o], &info, err)) return err->code;
        p->out[o].bytes = (size_t)info.bytes;
        p->out[o].valid = p->backend == PG_BACKEND_CPU;
    }
    return 0;
}

int pg_program_time(pg_program *p, uint32_t warmup, uint32_t trials, uint32_t reps,
                    double timeout_ms, double *median_ms, double *min_ms, double *max_ms,
                    lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    bool dev;
    uint32_t variant = ready(p, &dev, err);
    if (variant == LM_NONE) return err->code;
    if (p->backend != PG_BACKEND_GPU || p->stepwise)
        return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name),
                        "timing needs the GPU backend and a graph (%s)", p->note);
    if (trials < 1 || trials > 10000 || reps < 1 || reps > 10000)
        return pg__fail(err, LM_EARG, pg__at(p->name), "timing: %u trials of %u replays (each 1 .. 10000)",
                        trials, reps);
    p->ran = false;
    for (uint32_t o = 0; o < p->plan.n_outputs; o++)
        p->out[o].valid = false;
    double med, lo, hi;
    if (pg__gpu_time(p, variant, warmup, trials, reps, timeout_ms, &med, &lo, &hi, err))
        return err->code;
    p->count.timed_replays += (uint64_t)warmup + (uint64_t)trials * reps;
    if (median_ms) *median_ms = med;
    if (min_ms) *min_ms = lo;
    if (max_ms) *max_ms = hi;
    return ran(p, err);
}

int pg_program_run(pg_program *p, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    bool device_inputs;
    uint32_t variant = ready(p, &device_inputs, err);
    if (variant == LM_NONE) return err->code;
    if (p->replay_skip && p->ran && !p->inputs_changed && !device_inputs &&
        memcmp(p->last_dims, p->dim_val, p->plan.n_dims * sizeof *p->dim_val) == 0) {
        bool all_home = true;
        for (uint32_t o = 0; o < p->plan.n_outputs; o++)
            all_home &= p->out[o].valid;
        if (all_home) {
            p->count.runs++;
            p->count.replays_skipped++;
            return 0;
        }
    }
    p->ran = false;
    for (uint32_t o = 0; o < p->plan.n_outputs; o++)
        p->out[o].valid = false;
    int rc = p->backend == PG_BACKEND_GPU ? pg__gpu_run(p, variant, err) : pg__cpu_run(p, err);
    if (rc || ran(p, err)) return err->code;
    p->count.runs++;
    p->count.replays++;
    return 0;
}

int pg_program_output(pg_program *p, uint32_t i, const void **data, size_t *bytes, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (i >= p->plan.n_outputs)
        return pg__fail(err, LM_EARG, pg__at(p->name), "output %u of %u", i, p->plan.n_outputs);
    if (!p->ran)
        return pg__fail(err, LM_EARG, pg__at(p->name),
                        "output '%s': the program has not run (or its "
                        "last run failed)",
                        p->outputs[i].name);
    pg_out_state *st = &p->out[i];
    if (p->backend == PG_BACKEND_CPU) {
        size_t n = 0;
        *data = pg__cpu_output(p, i, &n);
        if (bytes) *bytes = n;
        return 0;
    }
    if (!st->valid && pg__gpu_download(p, i, err)) return err->code;
    st->valid = true;
    *data = st->host;
    if (bytes) *bytes = st->bytes;
    return 0;
}

int pg_program_output_named(pg_program *p, const char *name, const void **data, size_t *bytes,
                            lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    uint32_t i = pg_program_output_find(p, name);
    if (i == LM_NONE)
        return pg__fail(err, LM_EARG, pg__at(p->name), "no output is called '%s'", name ? name : "(null)");
    return pg_program_output(p, i, data, bytes, err);
}

int pg_program_output_device(pg_program *p, uint32_t i, uint64_t *dptr, size_t *bytes, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (i >= p->plan.n_outputs)
        return pg__fail(err, LM_EARG, pg__at(p->name), "output %u of %u", i, p->plan.n_outputs);
    if (p->backend != PG_BACKEND_GPU)
        return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name),
                        "output '%s': device addresses need the GPU backend (%s)",
                        p->outputs[i].name, p->note);
    if (!p->ran)
        return pg__fail(err, LM_EARG, pg__at(p->name), "output '%s': the program has not run",
                        p->outputs[i].name);
    if (pg__gpu_output_device(p, i, dptr, err)) return err->code;
    if (bytes) *bytes = p->out[i].bytes;
    return 0;
}

void pg_program_counters(const pg_program *p, pg_counters *out)
{
    *out = p->count;
}

int pg_program_diagnose(pg_program *p, double timeout_ms, pg_diagnosis *out, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    memset(out, 0, sizeof *out);
    out->step = out->kernel = out->llir_node = LM_NONE;
    if (p->backend == PG_BACKEND_CPU)
        return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name), "diagnose: the program runs on the CPU (%s)",
                        p->note);
    for (uint32_t i = 0; i < p->plan.n_inputs; i++) {
        if (!p->in[i].set)
            return pg__fail(err, LM_EARG, pg__at(p->name), "diagnose: input '%s' was never set",
                            p->inputs[i].name);
        if (p->in[i].device)
            return pg__fail(err, LM_EARG, pg__at(p->name),
                            "diagnose: input '%s' is device memory, which a child process "
                            "cannot see; set it from host memory",
                            p->inputs[i].name);
        if (check_input_bytes(p, i, p->in[i].bytes, err)) return err->code;
    }
    if (pg__variant_of(p, p->dim_val, err) == LM_NONE) return err->code;
    return pg__gpu_diagnose(p, timeout_ms, out, err);
}
