/* sr_worker.c - the GPU evaluator's worker process: sr_worker_main (search.h).
 *
 * The driving process (sr_gpu.c) starts a worker as
 *
 *     <exe> --worker --in FD --out FD
 *
 * with CUDA_VISIBLE_DEVICES set to the worker's one GPU (so the worker sees device 0),
 * FD 3 and 4 being the two pipes and stdout sent to stderr (a worker never writes to
 * stdout, which may carry the search's --json). The worker owns the CUDA context; the
 * driver opens none.
 *
 * The protocol. Every message is framed as a 4-byte tag, a 4-byte payload length (host
 * order) and the payload (sr__msg_write / sr__msg_read). Payloads are "key=value" lines;
 * the setup's header is followed by a blank line and the graph,
 * a candidate's header is followed by a blank line and its LLIR.
 *
 *   driver -> worker
 *     SETU  once, first:      dims=V0,V1,...   (hl_graph_dim_at order; "" for none)
 *                             seed=S  backend=gpu|cpu  warmup=W  trials=T
 *                             timeout_ms=MS (pg_program_time's limit)
 *                             mem_budget=BYTES (0: none)  compile_threads=N
 *                             cache_dir=DIR ("": no on-disk cache)
 *                             <blank line> the graph (hl_graph_write_json, written once by
 *                             the driver: the worker reads no file)
 *     CAND  per candidate:    id=N  cutoff_ms=X (0: none)  check=0|1
 *                             hook=none|abort|hang (test hooks: abort() or hang after
 *                             compiling; the driver sets them from
 *                             LUMINAL_WORKER_TEST_CRASH / _HANG)
 *                             <blank line> the LLIR as binary (ll_graph_pack; the worker
 *                             unpacks and verifies it, ll_graph_unpack)
 *     QUIT  (or end of file)  the worker frees everything and exits 0
 *
 *   worker -> driver
 *     REDY  after SETU:       pid=P  cvd=<its CUDA_VISIBLE_DEVICES>  inputs=N
 *     FAIL  instead of REDY:  msg=why (the worker then exits 2)
 *     STAG  while a candidate runs: stage=unpack|plan|compile|run|check|time (the driver
 *                             names the last one when the worker dies or times out)
 *     RSLT  per candidate:    id  status (sr_status's value)  ms  compile_s  trials
 *                             checked=0|1  compiled (CUBINs compiled by NVRTC for it)
 *                             disk_hits (CUBINs read from the on-disk cache)  why
 *                             exiting=1 when its context is unusable (a fault, a timeout
 *                             inside the driver): it exits after this answer
 *
 * Per candidate: the LLIR is unpacked (ll_graph_unpack) and planned (cg_plan_new: the
 * search planned it too, for the cost model; codegen depends on nothing but the LLIR, so
 * both plans are the same byte for byte, and the search saves its own); the
 * plan's memory (the most bytes live at one step) is held against the budget; the
 * program is opened on the backend (pg_program_new: the GPU context, NVRTC on
 * compile_threads threads through cuda_rt's on-disk cache; compile_s is this, outside the
 * timed region); the dims and the seeded inputs (made once at setup,
 * hl_graph_fill_input) are set; one run; every output checked for NaN/Inf; on check,
 * the outputs compared with the reference runtime's (hl_run on the CPU here, computed
 * at the first check and kept) by llir's scaled tolerances; then timed: on the GPU
 * pg_program_time (CUDA-graph replays measured with events; warmup replays, then the
 * median of trials), first a probe of 3 replays: a candidate slower than the cutoff
 * stops there as SR_TOO_SLOW, and one whose warmup and trials would take more than
 * TIME_BUDGET_MS gets fewer trials (3 at least, no warmup beyond the probe's); on the
 * CPU backend (tests) the wall clock of whole runs, median likewise.
 *
 * A fault (LM_EFAULT: an illegal address poisons the context for the rest of the
 * process) is answered with SR_FAULT and the worker exits 3 so that the driver starts a
 * fresh one; so does a timeout inside pg_program_time (the work may still be running).
 * A crash just ends the process: the driver sees the pipe close and the child's status.
 */
#include "search.h"
#include "sr_gpu.h"

#include "program.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include("cuda_rt.h")
#include "cuda_rt.h"
#define SR_HAVE_CUDA_RT 1
#endif
#endif

typedef struct wk_state {
    int in, out;
    hl_graph *g;
    uint32_t nd, ni, no;
    int64_t *dims;
    hl_tensor *ins;
    hl_tensor *ref, *mag; /* the reference, at the first check */
    bool have_ref;
    uint64_t seed;
    pg_backend backend;
    uint32_t warmup, trials, compile_threads;
    double timeout_ms;
    uint64_t mem_budget;
} wk_state;

static void wk_free(wk_state *w)
{
    for (uint32_t i = 0; w->ins && i < w->ni; i++)
        hl_tensor_fini(&w->ins[i]);
    for (uint32_t i = 0; w->ref && i < w->no; i++)
        hl_tensor_fini(&w->ref[i]);
    for (uint32_t i = 0; w->mag && i < w->no; i++)
        hl_tensor_fini(&w->mag[i]);
    free(w->ins);
    free(w->ref);
    free(w->mag);
    free(w->dims);
    hl_graph_free(w->g);
}

static void send_kv(wk_state *w, const char *tag, const char *text)
{
    if (sr__msg_write(w->out, tag, text, strlen(text), NULL, 0, -1) != 0) {
        /* the driver is gone: nothing is left to do */
        fprintf(stderr, "luminal worker %d: the driver is gone (%s); exiting\n", (int)getpid(),
                strerror(errno));
        _exit(4);
    }
}

static void stage(wk_state *w, const char *s)
{
    char t[64];
    snprintf(t, sizeof t, "stage=%s\n", s);
    send_kv(w, "STAG", t);
}

/* One line of text: newlines become spaces. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r') *s = ' ';
}

/* ==================================================================================
 * Setup
 * ================================================================================== */

static uint64_t kv_u64(const char *text, size_t len, const char *key, uint64_t dflt)
{
    char v[64];
    if (!sr__kv(text, len, key, v, sizeof v) || !*v) return dflt;
    return strtoull(v, NULL, 10);
}

/* The values of the expressions' variables from the graph's dims. */
static int env_of(const hl_graph *g, const int64_t *dims, const hl_expr_pool *p, int64_t **vals,
                  bool **bound, lm_err *err)
{
    uint32_t nv = hl_var_count(p);
    *vals = sr__zalloc(nv ? nv : 1, sizeof **vals);
    *bound = sr__zalloc(nv ? nv : 1, sizeof **bound);
    if (!*vals || !*bound) return sr__oom(err, "worker");
    const hl_expr_pool *gp = hl_graph_exprs_c(g);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const char *name = hl_var_name(gp, hl_graph_dim_at(g, i)->var);
        uint32_t v = hl_var_find(p, name);
        if (v != HL_NONE && v < nv) (*vals)[v] = dims[i], (*bound)[v] = true;
    }
    return LM_OK;
}

static int make_inputs(wk_state *w, lm_err *err)
{
    w->ins = sr__zalloc(w->ni ? w->ni : 1, sizeof *w->ins);
    if (!w->ins) return sr__oom(err, "worker");
    int64_t *vals;
    bool *bound;
    const hl_expr_pool *p = hl_graph_exprs_c(w->g);
    int rc = env_of(w->g, w->dims, p, &vals, &bound, err);
    hl_env env = {vals, bound, hl_var_count(p)};
    for (uint32_t i = 0; !rc && i < w->ni; i++) {
        const hl_node *in = hl_graph_node(w->g, hl_graph_input(w->g, i));
        int64_t shape[HL_MAX_DIMS];
        for (uint32_t d = 0; !rc && d < in->ndim; d++)
            rc = hl_e_eval(p, in->shape[d], &env, 0, &shape[d], err);
        if (!rc) rc = hl_tensor_init(&w->ins[i], in->dtype, in->ndim, shape, err);
        if (!rc) rc = hl_graph_fill_input(w->g, i, &w->ins[i], w->seed, err);
        if (rc) lm_err_prefix(err, "input '%s'", in->name);
    }
    free(vals);
    free(bound);
    return rc;
}

static int setup(wk_state *w, const char *t, size_t len, lm_err *err)
{
    char dims[4096], backend[16], cache[4096];
    const char *body = sr__kv_body(t, len);
    if (!body || body == t + len)
        return sr__fail(err, LM_EARG, NULL, "worker: the setup holds no graph");
    w->g = hl_graph_read_json(body, len - (size_t)(body - t), "the search's graph", err);
    if (!w->g) return err->code;
    w->nd = hl_graph_dim_count(w->g);
    w->ni = hl_graph_input_count(w->g);
    w->no = hl_graph_output_count(w->g);
    w->dims = sr__zalloc(w->nd ? w->nd : 1, sizeof *w->dims);
    if (!w->dims) return sr__oom(err, "worker");
    if (!sr__kv(t, len, "dims", dims, sizeof dims)) dims[0] = '\0';
    uint32_t n = 0;
    for (char *s = dims, *end; *s; s = *end ? end + 1 : end, n++) {
        long long v = strtoll(s, &end, 10);
        if (end == s || (*end && *end != ',') || n >= w->nd)
            return sr__fail(err, LM_EARG, NULL,
                              "worker: the setup's dims '%s' are not %u integers", dims, w->nd);
        w->dims[n] = v;
    }
    if (n != w->nd)
        return sr__fail(err, LM_EARG, NULL, "worker: %u dims given, the graph has %u", n, w->nd);
    for (uint32_t i = 0; i < w->nd; i++) { /* as --dim is checked: the inputs are made at them */
        const hl_dim *d = hl_graph_dim_at(w->g, i);
        if (w->dims[i] < d->lo || w->dims[i] > d->hi)
            return sr__fail(err, LM_EARG, NULL,
                            "worker: dim '%s' = %" PRId64 " is outside the graph's range [%" PRId64
                            ", %" PRId64 "]",
                            hl_var_name(hl_graph_exprs_c(w->g), d->var), w->dims[i], d->lo, d->hi);
    }
    w->seed = kv_u64(t, len, "seed", 0);
    if (!sr__kv(t, len, "backend", backend, sizeof backend)) strcpy(backend, "gpu");
    w->backend = strcmp(backend, "cpu") == 0 ? PG_BACKEND_CPU : PG_BACKEND_GPU;
    w->warmup = (uint32_t)kv_u64(t, len, "warmup", 3);
    w->trials = (uint32_t)kv_u64(t, len, "trials", 20);
    if (w->trials < 1) w->trials = 1;
    if (w->trials > 10000) w->trials = 10000;
    if (w->warmup > 10000) w->warmup = 10000;
    w->timeout_ms = (double)kv_u64(t, len, "timeout_ms", 60000);
    w->mem_budget = kv_u64(t, len, "mem_budget", 0);
    w->compile_threads = (uint32_t)kv_u64(t, len, "compile_threads", 0);
    /* cuda_rt reads the on-disk cache's folder when NVRTC is loaded: before any program */
    if (sr__kv(t, len, "cache_dir", cache, sizeof cache) && *cache)
        setenv("LUMINAL_KERNEL_CACHE", cache, 1);
    else
        unsetenv("LUMINAL_KERNEL_CACHE");
    return make_inputs(w, err);
}

/* ==================================================================================
 * One candidate
 * ================================================================================== */

/* The most bytes live at one step of the plan at the dims (the arena's lower bound). */
static int plan_peak(const wk_state *w, const cg_plan *pl, uint64_t *peak, uint32_t *at,
                     lm_err *err)
{
    *peak = 0;
    *at = 0;
    int64_t *vals;
    bool *bound;
    int rc = env_of(w->g, w->dims, pl->exprs, &vals, &bound, err);
    hl_env env = {vals, bound, hl_var_count(pl->exprs)};
    uint64_t *bytes = sr__zalloc(pl->n_buffers ? pl->n_buffers : 1, sizeof *bytes);
    if (!rc && !bytes) rc = sr__oom(err, "worker");
    for (uint32_t b = 0; !rc && b < pl->n_buffers; b++) {
        int64_t v = 0;
        rc = hl_e_eval(pl->exprs, pl->buffers[b].bytes, &env, 0, &v, err);
        bytes[b] = v > 0 ? (uint64_t)v : 0;
    }
    uint32_t steps = pl->n_steps ? pl->n_steps : 1;
    for (uint32_t s = 0; !rc && s < steps; s++) {
        uint64_t live = 0;
        for (uint32_t b = 0; b < pl->n_buffers; b++)
            if (pl->buffers[b].first_step <= s && s <= pl->buffers[b].last_step) live += bytes[b];
        if (live > *peak) *peak = live, *at = s;
    }
    free(bytes);
    free(vals);
    free(bound);
    return rc;
}

/* What a failed program call means for the candidate. */
static sr_status status_of(int code)
{
    switch (code) {
    case LM_ECOMPILE:
    case LM_ENVRTC:
    case LM_EVERIFY:
    case LM_EUNSUPPORTED:
        return SR_COMPILE_FAILED;
    case LM_EFAULT:
        return SR_FAULT;
    case LM_ENOMEM:
    case LM_ELIMIT:
        return SR_OUT_OF_MEMORY; /* the CPU executor's memory limit */
    case LM_ETIMEOUT:
        return SR_TIMEOUT;
    default:
        return SR_ERROR;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* CPU backend: whole runs by the wall clock. */
static int time_cpu(wk_state *w, pg_program *p, uint32_t warmup, uint32_t trials, double *med,
                    lm_err *err)
{
    double t[64];
    if (trials > 64) trials = 64;
    if (warmup > 64) warmup = 64;
    pg_program_set_replay_skip(p, false);
    for (uint32_t i = 0; i < warmup; i++)
        if (pg_program_run(p, err)) return err->code;
    for (uint32_t i = 0; i < trials; i++) {
        double t0 = lm_now_s();
        if (pg_program_run(p, err)) return err->code;
        t[i] = (lm_now_s() - t0) * 1e3;
    }
    qsort(t, trials, sizeof *t, cmp_double);
    *med = trials % 2 ? t[trials / 2] : 0.5 * (t[trials / 2 - 1] + t[trials / 2]);
    (void)w;
    return LM_OK;
}

/* The wall time a candidate's timed replays should take at most, in ms: a slow program
 * gets fewer trials (3 at least), a fast one the configured warmup and trials. */
#define TIME_BUDGET_MS 1000.0

static int time_it(wk_state *w, pg_program *p, uint32_t warmup, uint32_t trials, double *med,
                   lm_err *err)
{
    if (w->backend == PG_BACKEND_CPU) return time_cpu(w, p, warmup, trials, med, err);
    return pg_program_time(p, warmup, trials, 1, w->timeout_ms, med, NULL, NULL, err);
}

/* The reference at the setup's dims and inputs, once. */
static int reference(wk_state *w, lm_err *err)
{
    if (w->have_ref) return LM_OK;
    w->ref = sr__zalloc(w->no ? w->no : 1, sizeof *w->ref);
    w->mag = sr__zalloc(w->no ? w->no : 1, sizeof *w->mag);
    if (!w->ref || !w->mag) return sr__oom(err, "worker");
    hl_run_opts ro = {.mem_limit = lm_mem_available() / 2};
    if (hl_run(w->g, w->dims, w->ins, w->ref, &ro, err) != 0) {
        lm_err_prefix(err, "the reference run");
        return err->code;
    }
    if (ll_output_magnitudes(w->g, w->dims, w->ins, w->mag, err) != 0) return err->code;
    w->have_ref = true;
    return LM_OK;
}

typedef struct cand_out {
    sr_status status;
    double ms, compile_s;
    uint32_t trials;
    bool checked, fatal; /* fatal: the context is unusable, exit after answering */
    uint64_t compiled, disk_hits;
    char why[LM_ERR_MSG];
} cand_out;

/* The candidate's status s, why = prefix then msg (cut to fit). */
static void fail(cand_out *o, sr_status s, const char *prefix, const char *msg)
{
    o->status = s;
    size_t n = strlen(prefix), m = strlen(msg), cap = sizeof o->why - 1;
    if (n > cap) n = cap;
    if (m > cap - n) m = cap - n;
    memcpy(o->why, prefix, n);
    memcpy(o->why + n, msg, m);
    o->why[n + m] = '\0';
}

/* Checks every output for NaN/Inf and wraps them as tensors (cand[0 .. no)). */
static bool outputs(wk_state *w, pg_program *p, hl_tensor *cand, cand_out *o)
{
    for (uint32_t k = 0; k < w->no; k++) {
        lm_err e = {0};
        pg_tensor_info info;
        const void *data;
        if (pg_program_output_info(p, k, &info, &e) || pg_program_output(p, k, &data, NULL, &e)) {
            fail(o, status_of(e.code), "reading the outputs: ", e.msg);
            return false;
        }
        const hl_node *on = hl_graph_node(w->g, hl_graph_output(w->g, k));
        memset(&cand[k], 0, sizeof cand[k]);
        cand[k].dtype = on->dtype;
        cand[k].ndim = info.ndim;
        memcpy(cand[k].dims, info.dims, sizeof cand[k].dims);
        cand[k].numel = (size_t)info.numel;
        cand[k].data = (void *)data;
        if (!hl_dtype_is_float(on->dtype)) continue;
        for (size_t i = 0; i < cand[k].numel; i++) {
            double v = hl_tensor_get(&cand[k], i);
            if (!isfinite(v)) {
                o->status = SR_NONFINITE;
                snprintf(o->why, sizeof o->why, "output '%s' element %zu is %s (of %zu)", info.name,
                         i, isnan(v) ? "NaN" : "Inf", cand[k].numel);
                return false;
            }
        }
    }
    return true;
}

static void run_candidate(wk_state *w, const ll_graph *lg, double cutoff, bool check,
                          const char *hook, cand_out *o)
{
    lm_err e = {0};
    stage(w, "plan");
    cg_plan *plan = cg_plan_new(lg, NULL, &e);
    if (!plan) {
        fail(o, SR_COMPILE_FAILED, "codegen: ", e.msg);
        return;
    }
    uint64_t peak;
    uint32_t at;
    if (plan_peak(w, plan, &peak, &at, &e)) {
        fail(o, SR_ERROR, "the plan's memory: ", e.msg);
        cg_plan_free(plan);
        return;
    }
    if (w->mem_budget && peak > w->mem_budget) {
        o->status = SR_OUT_OF_MEMORY;
        snprintf(o->why, sizeof o->why,
                 "its plan holds %" PRIu64 " bytes live at step %u, over the budget of %" PRIu64
                 " bytes",
                 peak, at, w->mem_budget);
        cg_plan_free(plan);
        return;
    }
    stage(w, "compile");
    pg_options po;
    pg_options_default(&po);
    po.backend = w->backend;
    po.name = "candidate";
    po.compile_threads = w->compile_threads;
    po.cpu_mem_limit = w->mem_budget;
    uint64_t h0 = 0, s0 = 0, h1 = 0, s1 = 0;
#ifdef SR_HAVE_CUDA_RT
    rt_nvrtc_disk_cache_stats(&h0, &s0);
#endif
    double t0 = lm_now_s();
    pg_program *p = pg_program_new(plan, lg, &po, &e);
    o->compile_s = lm_now_s() - t0;
#ifdef SR_HAVE_CUDA_RT
    rt_nvrtc_disk_cache_stats(&h1, &s1);
#endif
    o->disk_hits = h1 - h0;
    cg_plan_free(plan);
    if (!p) {
        fail(o, status_of(e.code), "", e.msg);
        o->fatal = e.code == LM_EFAULT;
        return;
    }
    pg_counters pc;
    pg_program_counters(p, &pc);
    o->compiled = pc.kernels_compiled >= o->disk_hits ? pc.kernels_compiled - o->disk_hits : 0;
    (void)s0, (void)s1;
    if (strcmp(hook, "abort") == 0) {
        fprintf(stderr, "luminal worker %d: test hook: abort\n", (int)getpid());
        abort();
    }
    if (strcmp(hook, "hang") == 0) {
        fprintf(stderr, "luminal worker %d: test hook: hang\n", (int)getpid());
        for (;;)
            pause();
    }
    const hl_expr_pool *gp = hl_graph_exprs_c(w->g);
    for (uint32_t d = 0; d < w->nd && !e.code; d++) {
        const char *name = hl_var_name(gp, hl_graph_dim_at(w->g, d)->var);
        for (uint32_t i = 0; i < pg_program_dim_count(p); i++)
            if (strcmp(pg_program_dim_name(p, i), name) == 0)
                pg_program_set_dim(p, name, w->dims[d], &e);
    }
    if (!e.code && pg_program_input_count(p) != w->ni)
        sr__fail(&e, LM_EVERIFY, NULL, "the program has %u inputs, the graph %u",
                   pg_program_input_count(p), w->ni);
    for (uint32_t i = 0; i < w->ni && !e.code; i++)
        pg_program_set_input(p, i, w->ins[i].data, w->ins[i].numel * hl_dtype_size(w->ins[i].dtype),
                             &e);
    if (e.code) {
        fail(o, SR_ERROR, "setting dims and inputs: ", e.msg);
        pg_program_free(p);
        return;
    }
    stage(w, "run");
    if (pg_program_run(p, &e)) {
        fail(o, status_of(e.code), "", e.msg);
        o->fatal = e.code == LM_EFAULT || e.code == LM_ETIMEOUT;
        pg_program_free(p);
        return;
    }
    hl_tensor *cand = sr__zalloc(w->no ? w->no : 1, sizeof *cand);
    if (!cand) {
        fail(o, SR_ERROR, "", "worker: out of memory");
        pg_program_free(p);
        return;
    }
    bool ok = outputs(w, p, cand, o);
    if (ok && check) {
        stage(w, "check");
        lm_err re = {0};
        if (reference(w, &re)) {
            fail(o, SR_ERROR, "the reference: ", re.msg);
            ok = false;
        } else if (ll_compare_outputs_scaled(w->g, w->dims, cand, w->ref, w->mag, NULL, &e) != 0) {
            fail(o, SR_WRONG, "", e.msg);
            o->checked = true;
            ok = false;
        } else {
            o->checked = true;
        }
    }
    free(cand); /* the tensors only pointed into the program */
    if (ok) {
        stage(w, "time");
        double med = 0;
        int rc = 0;
        /* a probe of 3 replays first: it stops a candidate over the cutoff, and it sizes
           the trials of a slow one to about TIME_BUDGET_MS (a program of 0.7 s a replay
           would otherwise hold the GPU for warmup + trials replays) */
        uint32_t warmup = w->warmup, trials = w->trials;
        rc = time_it(w, p, 1, 3, &med, &e);
        if (!rc && cutoff > 0 && med > cutoff) {
            o->status = SR_TOO_SLOW;
            o->ms = med;
            o->trials = 3;
            snprintf(o->why, sizeof o->why,
                     "%.4g ms over 3 replays, slower than the cutoff %.4g ms", med, cutoff);
            ok = false;
        } else if (!rc && med * (warmup + trials) > TIME_BUDGET_MS) {
            warmup = 0; /* the probe warmed it */
            trials = med * 3 >= TIME_BUDGET_MS ? 3 : (uint32_t)(TIME_BUDGET_MS / med);
            if (trials > w->trials) trials = w->trials;
        }
        if (!rc && ok) rc = time_it(w, p, warmup, trials, &med, &e);
        if (rc) {
            fail(o, status_of(rc), "timing: ", e.msg);
            o->fatal = rc == LM_EFAULT || rc == LM_ETIMEOUT;
        } else if (ok) {
            o->status = SR_OK;
            o->ms = med;
            o->trials = w->backend == PG_BACKEND_CPU && trials > 64 ? 64 : trials;
        }
    }
    pg_program_free(p);
}

static void candidate(wk_state *w, const char *t, size_t len)
{
    char v[64], hook[16];
    uint64_t id = kv_u64(t, len, "id", 0);
    double cutoff = sr__kv(t, len, "cutoff_ms", v, sizeof v) ? strtod(v, NULL) : 0;
    bool check = kv_u64(t, len, "check", 0) != 0;
    if (!sr__kv(t, len, "hook", hook, sizeof hook)) strcpy(hook, "none");
    cand_out *o = sr__zalloc(1, sizeof *o);
    if (!o) {
        fprintf(stderr, "luminal worker %d: out of memory\n", (int)getpid());
        _exit(5);
    }
    o->status = SR_ERROR;
    stage(w, "unpack");
    const char *body = sr__kv_body(t, len);
    lm_err e = {0};
    ll_graph *lg = body ? ll_graph_unpack(body, len - (size_t)(body - t), &e) : NULL;
    if (!lg)
        fail(o, SR_ERROR, "the candidate's LLIR: ", body ? e.msg : "missing");
    else
        run_candidate(w, lg, cutoff, check, hook, o);
    ll_graph_free(lg);
    one_line(o->why);
    size_t cap = strlen(o->why) + 512;
    char *msg = sr__alloc(cap, 1);
    if (!msg) _exit(5);
    snprintf(msg, cap,
             "id=%" PRIu64 "\nstatus=%d\nms=%.9g\ncompile_s=%.6f\ntrials=%u\nchecked=%d\n"
             "compiled=%" PRIu64 "\ndisk_hits=%" PRIu64 "\nexiting=%d\nwhy=%s\n",
             id, (int)o->status, o->ms, o->compile_s, o->trials, o->checked ? 1 : 0, o->compiled,
             o->disk_hits, o->fatal ? 1 : 0, o->why);
    send_kv(w, "RSLT", msg);
    free(msg);
    bool fatal = o->fatal;
    free(o);
    if (fatal) {
        /* the context is unusable: a fresh process takes the next candidate */
        wk_free(w);
        exit(3);
    }
}

/* ==================================================================================
 * The entry
 * ================================================================================== */

int sr_worker_main(int argc, char **argv)
{
    wk_state w = {.in = 3, .out = 4};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--worker") == 0) continue;
        if ((strcmp(argv[i], "--in") == 0 || strcmp(argv[i], "--out") == 0) && i + 1 < argc) {
            int fd = atoi(argv[i + 1]);
            if (argv[i][2] == 'i')
                w.in = fd;
            else
                w.out = fd;
            i++;
            continue;
        }
        fprintf(stderr,
                "luminal worker: unknown argument '%s'\n"
                "usage: %s --worker [--in FD] [--out FD]  (started by the search's GPU "
                "evaluator; docs/search-gpu.md)\n",
                argv[i], argv[0]);
        return 2;
    }
    char tag[4];
    char *t = NULL;
    size_t len = 0;
    int rc = sr__msg_read(w.in, tag, &t, &len);
    if (rc != 0 || memcmp(tag, "SETU", 4) != 0) {
        fprintf(stderr, "luminal worker %d: no setup on fd %d\n", (int)getpid(), w.in);
        free(t);
        return 2;
    }
    lm_err err = {0};
    if (setup(&w, t, len, &err)) {
        free(t);
        one_line(err.msg);
        char msg[LM_ERR_MSG + 8];
        snprintf(msg, sizeof msg, "msg=%s\n", err.msg);
        send_kv(&w, "FAIL", msg);
        wk_free(&w);
        return 2;
    }
    free(t);
    char ready[256];
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(ready, sizeof ready, "pid=%d\ncvd=%s\ninputs=%u\n", (int)getpid(), cvd ? cvd : "",
             w.ni);
    send_kv(&w, "REDY", ready);
    for (;;) {
        rc = sr__msg_read(w.in, tag, &t, &len);
        if (rc != 0 || memcmp(tag, "QUIT", 4) == 0) break; /* end of file: the driver is gone */
        if (memcmp(tag, "CAND", 4) == 0) candidate(&w, t, len);
        free(t);
        t = NULL;
    }
    free(t);
    wk_free(&w);
    return 0;
}
