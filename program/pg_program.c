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
#include <sys/stat.h>
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
        pg__fail(err, LM_ENOMEM, opt->name ? opt->name : name, "out of memory");
        return NULL;
    }
    if ((unsigned)opt->backend > PG_BACKEND_CPU) {
        pg__fail(err, LM_EARG, p->name, "backend %d is not one of AUTO, GPU, CPU",
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
            pg__fail(err, LM_ENOMEM, p->name, "out of memory");
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

/* The IO table from the LLIR's Input and Output nodes (pg_program_new). */
static int io_from_llir(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (ll_graph_input_count(p->llir) != pl->n_inputs ||
        ll_graph_output_count(p->llir) != pl->n_outputs)
        return pg__fail(err, LM_EVERIFY, p->name,
                        "the plan has %u inputs and %u outputs, its LLIR %u and %u", pl->n_inputs,
                        pl->n_outputs, ll_graph_input_count(p->llir),
                        ll_graph_output_count(p->llir));
    const hl_expr_pool *src = ll_graph_exprs(p->llir);
    uint32_t nsrc = hl_expr_count(src);
    hl_expr *memo = pg__alloc(nsrc + 1, sizeof *memo);
    p->inputs = pg__alloc(pl->n_inputs, sizeof *p->inputs);
    p->outputs = pg__alloc(pl->n_outputs, sizeof *p->outputs);
    if (!memo || !p->inputs || !p->outputs) {
        pg__free(memo);
        return pg__fail(err, LM_ENOMEM, p->name, "out of memory");
    }
    for (uint32_t i = 0; i < nsrc; i++)
        memo[i] = HL_NONE;
    for (uint32_t side = 0; side < 2; side++) {
        uint32_t n = side ? pl->n_outputs : pl->n_inputs;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t id = side ? ll_graph_output(p->llir, i) : ll_graph_input(p->llir, i);
            const ll_node *nd = ll_graph_node(p->llir, id);
            pg_io *io = side ? &p->outputs[i] : &p->inputs[i];
            char dflt[32];
            snprintf(dflt, sizeof dflt, "%s%u", side ? "output" : "input", i);
            io->name = pg__strdup(nd->prim.name ? nd->prim.name : dflt);
            io->dtype = nd->dtype;
            io->ndim = nd->ndim;
            io->buf = side ? pl->output_buf[i] : pl->input_buf[i];
            if (!io->name) {
                pg__free(memo);
                return pg__fail(err, LM_ENOMEM, p->name, "out of memory");
            }
            if (nd->ndim > HL_MAX_DIMS) {
                pg__free(memo);
                return pg__fail(err, LM_EVERIFY, p->name, "LLIR node %u has %u dims", id, nd->ndim);
            }
            for (uint32_t d = 0; d < nd->ndim; d++) {
                io->shape[d] = pg__expr_copy(p->plan.exprs, src, nd->shape[d], memo);
                if (io->shape[d] == HL_NONE) {
                    pg__free(memo);
                    return pg__fail(err, LM_EVERIFY, p->name,
                                    "%s '%s': its shape names something that is not a dim of "
                                    "the plan",
                                    side ? "output" : "input", io->name);
                }
            }
        }
    }
    pg__free(memo);
    return 0;
}

/* An input or output name is a tensor name of the graph format (docs/graph-json.md): 1
 * to 63 characters of A-Z a-z 0-9 _ . - %, and not "." or "..". So it is a plain file
 * name: luminal_run writes DIR/NAME.npy and never outside DIR. */
static bool io_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 63 || !strcmp(s, ".") || !strcmp(s, "..")) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-' || c == '%';
        if (!ok) return false;
    }
    return true;
}

/* Every name is valid and unique on its side: two inputs of one name would be fed from
 * one file or one tensor, two outputs of one name written over each other. A program
 * has at least one output. */
static int check_io_names(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (pl->n_outputs == 0)
        return pg__fail(err, LM_EVERIFY, p->name, "the program has no outputs: nothing to run");
    for (uint32_t side = 0; side < 2; side++) {
        uint32_t n = side ? pl->n_outputs : pl->n_inputs;
        const pg_io *io = side ? p->outputs : p->inputs;
        const char *what = side ? "output" : "input";
        for (uint32_t i = 0; i < n; i++) {
            if (!io_name_ok(io[i].name))
                return pg__fail(err, LM_EVERIFY, p->name,
                                "%s %u is named \"%.80s\", which is not a tensor name (1 to 63 "
                                "characters of A-Z a-z 0-9 _ . - %%, not \".\" or \"..\"): "
                                "names become file names",
                                what, i, io[i].name);
            for (uint32_t j = 0; j < i; j++)
                if (!strcmp(io[j].name, io[i].name))
                    return pg__fail(err, LM_EVERIFY, p->name,
                                    "%ss %u and %u are both named '%s'; names must be unique",
                                    what, j, i, io[i].name);
        }
    }
    return 0;
}

/* A loaded program's LLIR is its plan's program: the same inputs and outputs in the same
 * order, with the same names, dtypes and shapes (the CPU backend runs the LLIR on the
 * plan's inputs and reads its outputs by position), so an empty or foreign llir.json is
 * refused here, never run. */
static int check_llir_io(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (ll_graph_node_count(p->llir) == 0)
        return pg__fail(err, LM_EVERIFY, p->name, "its LLIR graph has no nodes");
    if (ll_graph_input_count(p->llir) != pl->n_inputs ||
        ll_graph_output_count(p->llir) != pl->n_outputs)
        return pg__fail(err, LM_EVERIFY, p->name,
                        "the plan has %u inputs and %u outputs, its LLIR %u and %u", pl->n_inputs,
                        pl->n_outputs, ll_graph_input_count(p->llir),
                        ll_graph_output_count(p->llir));
    const hl_expr_pool *src = ll_graph_exprs(p->llir);
    uint32_t nsrc = hl_expr_count(src);
    hl_expr *memo = pg__alloc(nsrc + 1, sizeof *memo);
    if (!memo) return pg__fail(err, LM_ENOMEM, p->name, "out of memory");
    for (uint32_t i = 0; i < nsrc; i++)
        memo[i] = HL_NONE;
    int rc = 0;
    for (uint32_t side = 0; side < 2 && !rc; side++) {
        uint32_t n = side ? pl->n_outputs : pl->n_inputs;
        const char *what = side ? "output" : "input";
        for (uint32_t i = 0; i < n && !rc; i++) {
            uint32_t id = side ? ll_graph_output(p->llir, i) : ll_graph_input(p->llir, i);
            const ll_node *nd = ll_graph_node(p->llir, id);
            const pg_io *io = side ? &p->outputs[i] : &p->inputs[i];
            char dflt[32]; /* an unnamed node's name, as io_from_llir gives it */
            snprintf(dflt, sizeof dflt, "%s%u", what, i);
            const char *lname = nd && nd->prim.name ? nd->prim.name : dflt;
            bool same = nd && !strcmp(lname, io->name) && nd->dtype == io->dtype &&
                        nd->ndim == io->ndim;
            for (uint32_t d = 0; same && d < io->ndim; d++)
                same = pg__expr_copy(p->plan.exprs, src, nd->shape[d], memo) == io->shape[d];
            if (!same)
                rc = pg__fail(err, LM_EVERIFY, p->name,
                              "%s %u is '%s' (%s, rank %u) in the plan, but '%s' (%s, rank %u) "
                              "or of another shape in its LLIR: llir.json is not this plan's",
                              what, i, io->name, hl_dtype_name(io->dtype), io->ndim, lname,
                              nd ? hl_dtype_name(nd->dtype) : "?", nd ? nd->ndim : 0);
        }
    }
    for (uint32_t b = 0; b < pl->n_buffers && !rc; b++)
        if (pl->buffers[b].llir_node != LM_NONE &&
            pl->buffers[b].llir_node >= ll_graph_node_count(p->llir))
            rc = pg__fail(err, LM_EVERIFY, p->name, "buffer %u names LLIR node %u of %u", b,
                          pl->buffers[b].llir_node, ll_graph_node_count(p->llir));
    for (uint32_t k = 0; k < pl->n_kernels && !rc; k++)
        if (pl->kernels[k].llir_node != LM_NONE &&
            pl->kernels[k].llir_node >= ll_graph_node_count(p->llir))
            rc = pg__fail(err, LM_EVERIFY, p->name, "kernel %u names LLIR node %u of %u", k,
                          pl->kernels[k].llir_node, ll_graph_node_count(p->llir));
    for (uint32_t k = 0; k < pl->n_blas && !rc; k++)
        if (pl->blas[k].llir_node != LM_NONE &&
            pl->blas[k].llir_node >= ll_graph_node_count(p->llir))
            rc = pg__fail(err, LM_EVERIFY, p->name, "library call %u names LLIR node %u of %u", k,
                          pl->blas[k].llir_node, ll_graph_node_count(p->llir));
    pg__free(memo);
    return rc;
}

/* The LLIR's dims are the plan's (by name, with the same ranges); the IO table agrees
 * with the buffers it names. */
static int check_consistency(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (check_io_names(p, err)) return err->code;
    if (ll_graph_dim_count(p->llir) != pl->n_dims)
        return pg__fail(err, LM_EVERIFY, p->name, "the plan has %u dims, its LLIR %u", pl->n_dims,
                        ll_graph_dim_count(p->llir));
    p->llir_dim = pg__alloc(pl->n_dims, sizeof *p->llir_dim);
    if (!p->llir_dim) return pg__fail(err, LM_ENOMEM, p->name, "out of memory");
    for (uint32_t i = 0; i < pl->n_dims; i++) {
        p->llir_dim[i] = LM_NONE;
        for (uint32_t j = 0; j < pl->n_dims; j++)
            if (strcmp(ll_graph_dim_name(p->llir, j), pl->dim_names[i]) == 0) p->llir_dim[i] = j;
        if (p->llir_dim[i] == LM_NONE)
            return pg__fail(err, LM_EVERIFY, p->name, "dim '%s' of the plan is not in its LLIR",
                            pl->dim_names[i]);
        const hl_dim *a = &pl->dims[i], *b = ll_graph_dim_at(p->llir, p->llir_dim[i]);
        if (a->lo != b->lo || a->hi != b->hi)
            return pg__fail(err, LM_EVERIFY, p->name,
                            "dim '%s' is [%lld, %lld] in the plan, [%lld, %lld] in its LLIR",
                            pl->dim_names[i], (long long)a->lo, (long long)a->hi, (long long)b->lo,
                            (long long)b->hi);
    }
    int64_t prof[64];
    if (pl->n_dims > 64) return pg__fail(err, LM_ELIMIT, p->name, "more than 64 dims");
    for (uint32_t i = 0; i < pl->n_dims; i++)
        prof[i] = pl->dims[i].profile;
    for (uint32_t side = 0; side < 2; side++) {
        uint32_t n = side ? pl->n_outputs : pl->n_inputs;
        for (uint32_t i = 0; i < n; i++) {
            const pg_io *io = side ? &p->outputs[i] : &p->inputs[i];
            const char *what = side ? "output" : "input";
            uint32_t want = side ? pl->output_buf[i] : pl->input_buf[i];
            if (io->buf != want || io->buf >= pl->n_buffers)
                return pg__fail(err, LM_EVERIFY, p->name, "%s '%s' names buffer %u, the plan %u",
                                what, io->name, io->buf, want);
            if ((unsigned)io->dtype >= HL_DTYPE_COUNT || io->ndim > PG_MAX_RANK)
                return pg__fail(err, LM_EVERIFY, p->name, "%s '%s' has a bad dtype or rank", what,
                                io->name);
            if (io->dtype != pl->buffers[io->buf].dtype)
                return pg__fail(err, LM_EVERIFY, p->name, "%s '%s' is %s, its buffer %s", what,
                                io->name, hl_dtype_name(io->dtype),
                                hl_dtype_name(pl->buffers[io->buf].dtype));
            int64_t numel = 1, bn;
            for (uint32_t d = 0; d < io->ndim; d++) {
                int64_t v;
                if (pg__eval(pl, io->shape[d], prof, &v, p->name, what, err)) return err->code;
                numel *= v;
            }
            if (pg__eval(pl, pl->buffers[io->buf].numel, prof, &bn, p->name, what, err))
                return err->code;
            if (numel != bn)
                return pg__fail(err, LM_EVERIFY, p->name,
                                "%s '%s' has %lld elements at the profile dims, its buffer %u "
                                "%lld",
                                what, io->name, (long long)numel, io->buf, (long long)bn);
        }
    }
    return 0;
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
        if (!p->dims) return pg__fail(err, LM_ENOMEM, p->name, "out of memory");
    }
    for (uint32_t i = 0; opt && i < opt->n_buckets; i++) {
        const pg_dim_buckets *db = &opt->buckets[i];
        uint32_t d = LM_NONE;
        for (uint32_t j = 0; db->dim && j < pl->n_dims; j++)
            if (strcmp(pl->dim_names[j], db->dim) == 0) d = j;
        if (d == LM_NONE)
            return pg__fail(err, LM_EARG, p->name, "buckets for '%s', which is not a dim",
                            db->dim ? db->dim : "(null)");
        if (db->n < 1 || db->n > PG_MAX_BUCKETS || !db->buckets)
            return pg__fail(err, LM_EARG, p->name, "dim '%s': %u buckets (1 .. %d allowed)",
                            db->dim, db->n, PG_MAX_BUCKETS);
        if (p->dims[d].n)
            return pg__fail(err, LM_EARG, p->name, "dim '%s' has buckets given twice", db->dim);
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
                return pg__fail(err, LM_EARG, p->name,
                                "dim '%s': bucket [%lld, %lld] is not a range inside the dim's "
                                "[%lld, %lld]",
                                pl->dim_names[d], (long long)x->b[b].lo, (long long)x->b[b].hi,
                                (long long)r->lo, (long long)r->hi);
            if (b && x->b[b].lo <= x->b[b - 1].hi)
                return pg__fail(err, LM_EARG, p->name,
                                "dim '%s': buckets [%lld, %lld] and [%lld, %lld] overlap; a "
                                "value must pick one bucket",
                                pl->dim_names[d], (long long)x->b[b - 1].lo,
                                (long long)x->b[b - 1].hi, (long long)x->b[b].lo,
                                (long long)x->b[b].hi);
        }
        variants *= x->n;
        if (variants > PG_MAX_VARIANTS)
            return pg__fail(err, LM_EARG, p->name,
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
            pg__fail(err, LM_EDIM, p->name,
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
    if (pg__plan_check(pl, true, p->name, err) || check_consistency(p, err) ||
        setup_buckets(p, opt, err))
        return err->code;
    p->dim_val = pg__alloc(pl->n_dims, sizeof *p->dim_val);
    p->last_dims = pg__alloc(pl->n_dims, sizeof *p->last_dims);
    p->slot = pg__alloc(pl->n_buffers, sizeof *p->slot);
    p->in = pg__alloc(pl->n_inputs, sizeof *p->in);
    p->out = pg__alloc(pl->n_outputs, sizeof *p->out);
    if (!p->dim_val || !p->last_dims || !p->slot || !p->in || !p->out)
        return pg__fail(err, LM_ENOMEM, p->name, "out of memory");
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

/* A deep copy of an LLIR graph, through the LLIR file. */
static ll_graph *llir_copy(const ll_graph *g, const char *name, lm_err *err)
{
    lm_err e = {0};
    char *text = ll_graph_write_json(g, &e);
    ll_graph *c = text ? ll_graph_read_json(text, strlen(text), "<llir copy>", &e) : NULL;
    free(text);
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
        pg__fail(err, LM_EARG, p->name, "a program needs its plan and its LLIR graph");
        goto fail;
    }
    p->arch = opt && opt->arch ? opt->arch : 90;
    if (p->arch < 10 || p->arch > 1000) {
        pg__fail(err, LM_EARG, p->name, "arch %d is not a compute capability (e.g. 90)", p->arch);
        goto fail;
    }
    p->title = pg__strdup(p->name);
    p->egraph_fp = pg__strdup(opt && opt->egraph_fingerprint ? opt->egraph_fingerprint : "");
    p->genome_fp = pg__strdup(opt && opt->genome_fingerprint ? opt->genome_fingerprint : "");
    if (!p->title || !p->egraph_fp || !p->genome_fp) {
        pg__fail(err, LM_ENOMEM, p->name, "out of memory");
        goto fail;
    }
    if (pg__plan_copy(&p->plan, plan, p->name, err)) goto fail;
    if (!(p->llir = llir_copy(llir, p->name, err))) goto fail;
    if (io_from_llir(p, err) || init_common(p, opt, err)) goto fail;
    return p;
fail:
    pg_program_free(p);
    return NULL;
}

/* ==================================================================================
 * Saving and loading
 * ================================================================================== */

/* Makes directory path and any missing parents (mkdir -p). */
static int make_dir(const char *path, const char *name, lm_err *err)
{
    size_t n = strlen(path);
    char *buf = pg__alloc(n + 1, 1);
    if (!buf) return pg__fail(err, LM_ENOMEM, name, "out of memory");
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        struct stat st;
        bool ok = (mkdir(buf, 0777) == 0 || errno == EEXIST) && stat(buf, &st) == 0 &&
                  S_ISDIR(st.st_mode);
        if (!ok) {
            int e = errno;
            pg__fail(err, LM_EIO, name, "cannot make directory %s: %s", buf,
                     e ? strerror(e) : "a file of that name is in the way");
            pg__free(buf);
            return err ? err->code : LM_EIO;
        }
        buf[i] = c;
    }
    pg__free(buf);
    return 0;
}

static int write_file(const char *dir, const char *rel, const char *text, const char *name,
                      lm_err *err)
{
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *path = pg__alloc(n, 1);
    if (!path) return pg__fail(err, LM_ENOMEM, name, "out of memory");
    snprintf(path, n, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    size_t len = strlen(text);
    bool ok = f && fwrite(text, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) pg__fail(err, LM_EIO, name, "cannot write %s: %s", path, strerror(errno));
    pg__free(path);
    return err ? err->code : (ok ? 0 : LM_EIO);
}

int pg_program_save(const pg_program *p, const char *dir, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (!p || !dir || !dir[0])
        return pg__fail(err, LM_EARG, p ? p->name : NULL, "save: no program or no directory");
    const cg_plan *pl = &p->plan;
    char **files = pg__alloc(pl->n_kernels, sizeof *files);
    char *llir_text = NULL, *plan_text = NULL;
    size_t kn = strlen(dir) + 16;
    char *kdir = pg__alloc(kn, 1);
    if (!files || !kdir) {
        pg__fail(err, LM_ENOMEM, p->name, "out of memory");
        goto done;
    }
    snprintf(kdir, kn, "%s/kernels", dir);
    if (make_dir(dir, p->name, err) || make_dir(kdir, p->name, err)) goto done;
    for (uint32_t k = 0; k < pl->n_kernels; k++) {
        for (uint32_t j = 0; j < k && !files[k]; j++)
            if (strcmp(pl->kernels[j].source, pl->kernels[k].source) == 0)
                files[k] = pg__strdup(files[j]); /* each distinct source once */
        if (files[k]) continue;
        files[k] = pg__alloc(32, 1);
        if (!files[k]) {
            pg__fail(err, LM_ENOMEM, p->name, "out of memory");
            goto done;
        }
        snprintf(files[k], 32, "kernels/k%04u.cu", k);
        if (write_file(dir, files[k], pl->kernels[k].source, p->name, err)) goto done;
    }
    for (uint32_t k = 0; k < pl->n_kernels; k++)
        if (!files[k]) {
            pg__fail(err, LM_ENOMEM, p->name, "out of memory");
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
        pg__fail(err, LM_EARG, p->name, "load: no directory given");
        goto fail;
    }
    if (opt && opt->n_buckets) {
        pg__fail(err, LM_EARG, p->name,
                 "load: buckets are chosen when compiling; a saved program keeps its own");
        goto fail;
    }
    if (pg__plan_read(p, dir, &lf, &lh, err)) goto fail;
    if (!(opt && opt->name && opt->name[0])) { /* the name it was saved under */
        char *title = pg__strdup(p->title);
        if (!title) {
            pg__fail(err, LM_ENOMEM, p->name, "out of memory");
            goto fail;
        }
        pg__free(p->name);
        p->name = title;
    }
    size_t n = strlen(dir) + strlen(lf) + 2;
    if (!(path = pg__alloc(n, 1))) {
        pg__fail(err, LM_ENOMEM, p->name, "out of memory");
        goto fail;
    }
    snprintf(path, n, "%s/%s", dir, lf);
    if (strchr(lf, '/') || strstr(lf, "..")) {
        pg__fail(err, LM_EPARSE, p->name, "%s/plan.json: llir.file \"%.60s\" is not a file name",
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
        pg__fail(err, LM_EPARSE, p->name,
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
    if (check_llir_io(p, err) || init_common(p, NULL, err)) goto fail;
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
            return pg__fail(err, LM_EEVAL, p->name, "'%s': its size overflows", io->name);
        numel *= (uint64_t)out->dims[d];
    }
    out->numel = numel;
    if (numel > UINT64_MAX / out->elem_size)
        return pg__fail(err, LM_EEVAL, p->name, "'%s': its size overflows", io->name);
    out->bytes = numel * out->elem_size;
    return 0;
}

int pg_program_input_info(const pg_program *p, uint32_t i, pg_tensor_info *out, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (i >= p->plan.n_inputs)
        return pg__fail(err, LM_EARG, p->name, "input %u of %u", i, p->plan.n_inputs);
    return pg__io_info(p, &p->inputs[i], out, err);
}

int pg_program_output_info(const pg_program *p, uint32_t i, pg_tensor_info *out, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (i >= p->plan.n_outputs)
        return pg__fail(err, LM_EARG, p->name, "output %u of %u", i, p->plan.n_outputs);
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
        return pg__fail(err, LM_EARG, p->name, "dim %u of %u", i, p->plan.n_dims);
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
        return pg__fail(err, LM_EDIM, p->name, "'%s' is not a dim of the program",
                        name ? name : "(null)");
    const hl_dim *r = &p->plan.dims[d];
    if (value < r->lo || value > r->hi)
        return pg__fail(err, LM_EDIM, p->name, "dim '%s' = %lld is outside its range [%lld, %lld]",
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
        return pg__fail(err, LM_EARG, p->name, "input %u of %u", i, p->plan.n_inputs);
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
    return pg__fail(err, LM_ESHAPE, p->name,
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
        return pg__fail(err, LM_EARG, p->name, "input '%s': no data", p->inputs[i].name);
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
        return pg__fail(err, LM_EARG, p->name, "no input is called '%s'", name ? name : "(null)");
    return pg_program_set_input(p, i, data, bytes, err);
}

int pg_program_set_input_device(pg_program *p, uint32_t i, uint64_t dptr, size_t bytes, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (check_input_index(p, i, err) || ensure_backend(p, err)) return err->code;
    if (p->backend != PG_BACKEND_GPU)
        return pg__fail(err, LM_EUNSUPPORTED, p->name,
                        "input '%s': a device pointer needs the GPU backend; this program runs "
                        "on the CPU (%s)",
                        p->inputs[i].name, p->note);
    if (!dptr)
        return pg__fail(err, LM_EARG, p->name, "input '%s': a null device pointer",
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
            pg__fail(err, LM_EARG, p->name, "input '%s' (%u) was never set", p->inputs[i].name, i);
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
        return pg__fail(err, LM_EUNSUPPORTED, p->name,
                        "timing needs the GPU backend and a graph (%s)", p->note);
    if (trials < 1 || trials > 10000 || reps < 1 || reps > 10000)
        return pg__fail(err, LM_EARG, p->name, "timing: %u trials of %u replays (each 1 .. 10000)",
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
        return pg__fail(err, LM_EARG, p->name, "output %u of %u", i, p->plan.n_outputs);
    if (!p->ran)
        return pg__fail(err, LM_EARG, p->name,
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
        return pg__fail(err, LM_EARG, p->name, "no output is called '%s'", name ? name : "(null)");
    return pg_program_output(p, i, data, bytes, err);
}

int pg_program_output_device(pg_program *p, uint32_t i, uint64_t *dptr, size_t *bytes, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (i >= p->plan.n_outputs)
        return pg__fail(err, LM_EARG, p->name, "output %u of %u", i, p->plan.n_outputs);
    if (p->backend != PG_BACKEND_GPU)
        return pg__fail(err, LM_EUNSUPPORTED, p->name,
                        "output '%s': device addresses need the GPU backend (%s)",
                        p->outputs[i].name, p->note);
    if (!p->ran)
        return pg__fail(err, LM_EARG, p->name, "output '%s': the program has not run",
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
        return pg__fail(err, LM_EUNSUPPORTED, p->name, "diagnose: the program runs on the CPU (%s)",
                        p->note);
    for (uint32_t i = 0; i < p->plan.n_inputs; i++) {
        if (!p->in[i].set)
            return pg__fail(err, LM_EARG, p->name, "diagnose: input '%s' was never set",
                            p->inputs[i].name);
        if (p->in[i].device)
            return pg__fail(err, LM_EARG, p->name,
                            "diagnose: input '%s' is device memory, which a child process "
                            "cannot see; set it from host memory",
                            p->inputs[i].name);
        if (check_input_bytes(p, i, p->in[i].bytes, err)) return err->code;
    }
    if (pg__variant_of(p, p->dim_val, err) == LM_NONE) return err->code;
    return pg__gpu_diagnose(p, timeout_ms, out, err);
}
