/* pg_compile.c - the kernels of a plan through NVRTC: for a context when a program opens
 * (into its module cache), and for a bare architecture without a GPU (pg_compile_check,
 * a CI check).
 *
 * Distinct sources are compiled once. With more than one thread, workers take sources in
 * index order from a shared counter and compile each with rt_nvrtc_compile (NVRTC
 * compiles concurrently; the rt_nvrtc handle is read-only), and the context's thread then
 * loads the images in index order (rt_kernel_load), so the result and the error reported
 * (the lowest kernel that fails) do not depend on the threads.
 */
#include "pg_gpu.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { MAX_THREADS = 4 };

typedef struct batch {
    rt_nvrtc *nv;
    int arch;
    const cg_plan *plan;
    const uint32_t *todo; /* kernel indexes to compile */
    uint32_t n;
    rt_cubin *bins; /* per kernel of the plan */
    lm_err *errs;   /* per kernel of the plan */
    pthread_mutex_t lock;
    uint32_t next;
} batch;

static void compile_one(batch *b, uint32_t k)
{
    char name[32];
    snprintf(name, sizeof name, "k%04u.cu", k);
    rt_nvrtc_compile(b->nv, b->plan->kernels[k].source, name, b->arch, NULL, 0, &b->bins[k],
                     &b->errs[k]);
}

static void *worker(void *arg)
{
    batch *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->lock);
        uint32_t i = b->next < b->n ? b->next++ : UINT32_MAX;
        pthread_mutex_unlock(&b->lock);
        if (i == UINT32_MAX) return NULL;
        compile_one(b, b->todo[i]);
    }
}

static uint32_t thread_count(uint32_t asked, uint32_t n)
{
    uint32_t t = asked;
    if (t == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        t = cpus > 0 && cpus < MAX_THREADS ? (uint32_t)cpus : MAX_THREADS;
    }
    if (t > n) t = n;
    return t ? t : 1;
}

/* Compiles b->todo on `threads` threads (the caller's among them). */
static void compile_all(batch *b, uint32_t threads)
{
    pthread_t th[MAX_THREADS];
    uint32_t started = 0;
    pthread_mutex_init(&b->lock, NULL);
    b->next = 0;
    for (uint32_t t = 1; t < threads && t < MAX_THREADS; t++)
        if (pthread_create(&th[started], NULL, worker, b) == 0) started++;
    worker(b); /* and this thread too; without threads, it does them all */
    for (uint32_t t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&b->lock);
}

/* uniq[k]: the first kernel with kernel k's source; the distinct ones into todo, their
 * count into *n. -1 when out of memory. */
static int distinct(const cg_plan *p, uint32_t *uniq, uint32_t *todo, uint32_t *n)
{
    if (pg__same_source(p, uniq)) return -1;
    *n = 0;
    for (uint32_t k = 0; k < p->n_kernels; k++)
        if (uniq[k] == k) todo[(*n)++] = k;
    return 0;
}

static void wrap_kernel(lm_err *err, const char *name, const cg_plan *p, uint32_t k)
{
    char d[112];
    pg__kernel_desc(p, k, d, sizeof d);
    pg__wrap(err, name, "%s", d);
}

int pg__compile_kernels(pg_program *p, rt_ctx *ctx, rt_kernel **kern, uint64_t *compiled,
                        uint64_t *hits, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    uint64_t h0, m0;
    rt_kernel_cache_stats(ctx, &h0, &m0);
    uint32_t *uniq = pg__alloc(pl->n_kernels + 1, sizeof *uniq);
    uint32_t *todo = pg__alloc(pl->n_kernels + 1, sizeof *todo);
    if (!uniq || !todo) {
        pg__free(uniq), pg__free(todo);
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory compiling");
    }
    uint32_t n = 0;
    if (distinct(pl, uniq, todo, &n)) {
        pg__free(uniq), pg__free(todo);
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory compiling");
    }
    uint32_t threads = thread_count(p->compile_threads, n);
    int rc = 0;
    if (threads <= 1) {
        for (uint32_t i = 0; i < n && !rc; i++) {
            uint32_t k = todo[i];
            lm_err e = {0};
            if ((rc = rt_kernel_get(ctx, pl->kernels[k].source, PG_KERNEL_FN, NULL, 0, &kern[k],
                                    &e))) {
                lm_err_copy(err, &e);
                wrap_kernel(err, p->name, pl, k);
            }
        }
    } else {
        batch b = {.arch = rt_ctx_device(ctx)->cc_major * 10 + rt_ctx_device(ctx)->cc_minor,
                   .plan = pl,
                   .todo = todo,
                   .n = n};
        b.bins = pg__alloc(pl->n_kernels + 1, sizeof *b.bins);
        b.errs = pg__alloc(pl->n_kernels + 1, sizeof *b.errs);
        lm_err ne = {0};
        if (!b.bins || !b.errs) {
            rc = pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory compiling");
        } else if ((rc = rt_nvrtc_new(p->rt_opt ? p->rt_opt->lib_dir : NULL, &b.nv, &ne))) {
            lm_err_copy(err, &ne);
            pg__wrap(err, p->name, "compiling the kernels");
        } else {
            compile_all(&b, threads);
            for (uint32_t i = 0; i < n && !rc; i++) {
                uint32_t k = todo[i];
                lm_err e = {0};
                if (b.errs[k].code)
                    lm_err_copy(&e, &b.errs[k]);
                else
                    rt_kernel_load(ctx, pl->kernels[k].source, PG_KERNEL_FN, NULL, 0, &b.bins[k],
                                   &kern[k], &e);
                if ((rc = e.code)) {
                    lm_err_copy(err, &e);
                    wrap_kernel(err, p->name, pl, k);
                }
            }
            rt_nvrtc_free(b.nv);
        }
        for (uint32_t k = 0; b.bins && k < pl->n_kernels; k++)
            rt_cubin_fini(&b.bins[k]);
        pg__free(b.bins);
        pg__free(b.errs);
    }
    for (uint32_t k = 0; !rc && k < pl->n_kernels; k++)
        kern[k] = kern[uniq[k]];
    uint64_t h1, m1;
    rt_kernel_cache_stats(ctx, &h1, &m1);
    *compiled = m1 - m0;
    *hits = h1 - h0;
    pg__free(uniq);
    pg__free(todo);
    return rc;
}

int pg_compile_check(const struct cg_plan *plan, int arch, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (pg__plan_check(plan, false, NULL, err)) return err->code;
    if (arch < RT_NVRTC_MIN_ARCH || arch > RT_NVRTC_MAX_ARCH)
        return pg__fail(err, LM_EARG, NULL,
                        "compile check: sm_%d is not an architecture NVRTC "
                        "takes (%d .. %d)",
                        arch, RT_NVRTC_MIN_ARCH, RT_NVRTC_MAX_ARCH);
    uint32_t *uniq = pg__alloc(plan->n_kernels + 1, sizeof *uniq);
    uint32_t *todo = pg__alloc(plan->n_kernels + 1, sizeof *todo);
    batch b = {.arch = arch, .plan = plan, .todo = todo};
    b.bins = pg__alloc(plan->n_kernels + 1, sizeof *b.bins);
    b.errs = pg__alloc(plan->n_kernels + 1, sizeof *b.errs);
    int rc = 0;
    lm_err ne = {0};
    if (!uniq || !todo || !b.bins || !b.errs) {
        rc = pg__fail(err, LM_ENOMEM, NULL, "compile check: out of memory");
    } else if ((rc = rt_nvrtc_new(NULL, &b.nv, &ne))) {
        lm_err_copy(err, &ne);
    } else if (distinct(plan, uniq, todo, &b.n)) {
        rc = pg__fail(err, LM_ENOMEM, NULL, "compile check: out of memory");
    } else {
        compile_all(&b, thread_count(0, b.n));
        for (uint32_t i = 0; i < b.n && !rc; i++)
            if ((rc = b.errs[todo[i]].code)) {
                lm_err_copy(err, &b.errs[todo[i]]);
                char d[112];
                pg__kernel_desc(plan, todo[i], d, sizeof d);
                pg__wrap(err, NULL, "compile check for sm_%d: %s", arch, d);
            }
        rt_nvrtc_free(b.nv);
    }
    for (uint32_t k = 0; b.bins && k < plan->n_kernels; k++)
        rt_cubin_fini(&b.bins[k]);
    pg__free(b.bins);
    pg__free(b.errs);
    pg__free(uniq);
    pg__free(todo);
    return rc;
}
