/* rt_timing.c: timing an executable graph with CUDA events.
 *
 * Warm-up launches first (module load, lazy initialization and clocks settle), then
 * `trials` trials of `reps` replays each, with one event between consecutive trials, so
 * trial t is the interval between events t and t+1. The host waits once, at the end, by
 * polling the last event against the timeout (a synchronize could hang forever on a
 * runaway candidate). Nothing is cached: every call launches and measures.
 */
#include "rt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void rt_time_opts_default(rt_time_opts *o)
{
    o->warmup = 3;
    o->trials = 10;
    o->reps = 1;
    o->timeout_ms = 10000.0;
}

/* base's monotonic clock, in milliseconds */
static double now_ms(void)
{
    return lm_now_s() * 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int rt_exec_time(rt_exec *e, const rt_time_opts *o, rt_timing *out, lm_err *err)
{
    rt_time_opts opts;
    if (o)
        opts = *o;
    else
        rt_time_opts_default(&opts);
    rt_ctx *ctx = rt__exec_ctx(e);
    if (rt__ctx_usable(ctx, err)) return err->code;
    if (opts.trials == 0 || opts.trials > RT_MAX_TRIALS || opts.reps == 0 || opts.timeout_ms <= 0)
        return RT_FAIL(err, RT_EARG,
                       "timing: trials %u (1..%d), reps %u (>= 1) and timeout %.1f ms (> 0) "
                       "must all be in range",
                       opts.trials, RT_MAX_TRIALS, opts.reps, opts.timeout_ms);
    rt_drv *d = &ctx->drv;
    uint32_t nev = opts.trials + 1;
    CUevent *ev = rt__alloc(nev, sizeof *ev);
    double *ms = rt__alloc(opts.trials, sizeof *ms);
    if (!ev || !ms) {
        rt__free(ev);
        rt__free(ms);
        return RT_FAIL(err, RT_ENOMEM, "out of memory for %u timing events", nev);
    }
    uint32_t made = 0;
    int rc = 0;
    for (; made < nev; made++)
        if ((rc = RT_CU(ctx, err, d->event_create(d->self, &ev[made], CU_EVENT_DEFAULT),
                        "cuEventCreate(event %u of %u)", made, nev)))
            goto done;
    double start = now_ms();
    for (uint32_t w = 0; w < opts.warmup; w++)
        if ((rc = rt_exec_launch(e, err))) goto done;
    if ((rc = RT_CU(ctx, err, d->event_record(d->self, ev[0], ctx->stream), "cuEventRecord")))
        goto done;
    for (uint32_t t = 0; t < opts.trials; t++) {
        for (uint32_t r = 0; r < opts.reps; r++)
            if ((rc = rt_exec_launch(e, err))) goto done;
        if ((rc = RT_CU(ctx, err, d->event_record(d->self, ev[t + 1], ctx->stream),
                        "cuEventRecord(trial %u)", t)))
            goto done;
    }
    for (;;) {
        CUresult q = d->event_query(d->self, ev[opts.trials]);
        if (q == CUDA_SUCCESS) break;
        if (q != CUDA_ERROR_NOT_READY) {
            rc = RT_CU(ctx, err, q, "cuEventQuery(end of %u trials)", opts.trials);
            goto done;
        }
        if (now_ms() - start > opts.timeout_ms) {
            rc = RT_FAIL(err, RT_ETIMEOUT,
                         "timing: %u warm-up + %u x %u replays did not finish within %.0f ms; fix: "
                         "the candidate may hang: call rt_ctx_reset, or raise timeout_ms",
                         opts.warmup, opts.trials, opts.reps, opts.timeout_ms);
            ctx->poisoned = true; /* work is still queued: nothing else may run before a reset */
            snprintf(ctx->poison_msg, sizeof ctx->poison_msg, "a timed graph did not finish");
            goto done;
        }
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
    }
    for (uint32_t t = 0; t < opts.trials; t++) {
        float f = 0;
        if ((rc = RT_CU(ctx, err, d->event_elapsed(d->self, &f, ev[t], ev[t + 1]),
                        "cuEventElapsedTime(trial %u)", t)))
            goto done;
        ms[t] = (double)f / opts.reps;
    }
    qsort(ms, opts.trials, sizeof *ms, cmp_double);
    out->trials = opts.trials;
    out->reps = opts.reps;
    out->min_ms = ms[0];
    out->max_ms = ms[opts.trials - 1];
    out->median_ms =
        opts.trials % 2 ? ms[opts.trials / 2] : (ms[opts.trials / 2 - 1] + ms[opts.trials / 2]) / 2;
done:
    if (!ctx->poisoned)
        for (uint32_t i = 0; i < made; i++)
            d->event_destroy(d->self, ev[i]);
    rt__free(ev);
    rt__free(ms);
    return rc;
}
