/* rt_ctx.c: opening a device, its primary context and stream; the capture probe; reset.
 *
 * Lifecycle: new (driver table -> cuInit -> device -> retain primary context -> make it
 * current -> stream -> probe) ... free (module cache, prepared matmuls, stream, primary
 * context released). A sticky kernel fault poisons the context: every entry point then
 * refuses with RT_EFAULT until rt_ctx_reset, which destroys the primary context's state,
 * makes it anew and bumps `gen`, so that objects made before can tell they are stale.
 */
#include "rt_int.h"

#include <stdio.h>
#include <string.h>

void rt_options_default(rt_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->blas_workspace_max = RT_BLAS_WORKSPACE_DEFAULT;
}

const rt_device_info *rt_ctx_device(const rt_ctx *ctx)
{
    return &ctx->info;
}
uint32_t rt_ctx_generation(const rt_ctx *ctx)
{
    return ctx->gen;
}

int rt__ctx_usable(rt_ctx *ctx, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (ctx->poisoned)
        return RT_FAIL(err, RT_EFAULT,
                       "the context was poisoned by an earlier fault (%s); fix: call rt_ctx_reset "
                       "and recreate buffers, graphs and kernels",
                       ctx->poison_msg);
    return 0;
}

/* Is capturing straight into an existing graph available? Tries it once, empty. */
static rt_capture_mode probe_capture(rt_ctx *ctx)
{
    rt_drv *d = &ctx->drv;
    if (!d->capture_begin_to_graph) return RT_CAPTURE_CHILD_GRAPH;
    CUgraph g = NULL, got = NULL;
    if (d->graph_create(d->self, &g, 0) != CUDA_SUCCESS) return RT_CAPTURE_CHILD_GRAPH;
    rt_capture_mode mode = RT_CAPTURE_CHILD_GRAPH;
    if (d->capture_begin_to_graph(d->self, ctx->stream, g, NULL, NULL, 0,
                                  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS) {
        if (d->capture_end(d->self, ctx->stream, &got) == CUDA_SUCCESS && got == g)
            mode = RT_CAPTURE_TO_GRAPH;
    }
    d->graph_destroy(d->self, g);
    return mode;
}

/* Primary context current, stream made. */
static int bring_up(rt_ctx *ctx, lm_err *err)
{
    rt_drv *d = &ctx->drv;
    if (RT_CU(ctx, err, d->primary_retain(d->self, &ctx->cu, ctx->dev),
              "cuDevicePrimaryCtxRetain(device=%d)", ctx->info.ordinal))
        return err->code;
    ctx->refs++;
    if (RT_CU(ctx, err, d->ctx_set_current(d->self, ctx->cu), "cuCtxSetCurrent") ||
        RT_CU(ctx, err, d->stream_create(d->self, &ctx->stream, CU_STREAM_NON_BLOCKING),
              "cuStreamCreate(non-blocking)"))
        return err->code; /* the reference is dropped by rt_ctx_free */
    return 0;
}

static int open_device(rt_ctx *ctx, lm_err *err)
{
    rt_drv *d = &ctx->drv;
    if (RT_CU(ctx, err, d->init(d->self, 0), "cuInit(0)")) return err->code;
    int count = 0;
    if (RT_CU(ctx, err, d->driver_version(d->self, &d->version), "cuDriverGetVersion") ||
        RT_CU(ctx, err, d->device_count(d->self, &count), "cuDeviceGetCount"))
        return err->code;
    if (count == 0)
        return RT_FAIL(err, RT_ENODEV,
                       "no CUDA device: the driver (%s, version %d) reports 0 devices; fix: check "
                       "nvidia-smi and CUDA_VISIBLE_DEVICES",
                       d->lib, d->version);
    int ord = ctx->opt.device;
    if (ord < 0 || ord >= count)
        return RT_FAIL(err, RT_ENODEV,
                       "no CUDA device: device %d was asked for but the driver reports %d "
                       "(ordinals 0..%d); fix: pick an existing ordinal",
                       ord, count, count - 1);
    ctx->info.ordinal = ord;
    ctx->info.driver_version = d->version;
    if (RT_CU(ctx, err, d->device_get(d->self, &ctx->dev, ord), "cuDeviceGet(%d)", ord) ||
        RT_CU(ctx, err, d->device_name(d->self, ctx->info.name, sizeof ctx->info.name, ctx->dev),
              "cuDeviceGetName") ||
        RT_CU(ctx, err, d->device_total_mem(d->self, &ctx->info.total_mem, ctx->dev),
              "cuDeviceTotalMem") ||
        RT_CU(ctx, err,
              d->device_attr(d->self, &ctx->info.cc_major,
                             CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->dev),
              "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)") ||
        RT_CU(ctx, err,
              d->device_attr(d->self, &ctx->info.cc_minor,
                             CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->dev),
              "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)") ||
        RT_CU(ctx, err,
              d->device_attr(d->self, &ctx->info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             ctx->dev),
              "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)") ||
        RT_CU(ctx, err,
              d->device_attr(d->self, &ctx->info.l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                             ctx->dev),
              "cuDeviceGetAttribute(L2_CACHE_SIZE)"))
        return err->code;
    if (bring_up(ctx, err)) return err->code;
    ctx->info.capture_mode = probe_capture(ctx);
    return 0;
}

static int finish_new(rt_ctx *ctx, const rt_options *opt, rt_ctx **out, lm_err *err)
{
    if (opt)
        ctx->opt = *opt;
    else
        rt_options_default(&ctx->opt);
    if (ctx->opt.blas_workspace_max == 0) ctx->opt.blas_workspace_max = RT_BLAS_WORKSPACE_DEFAULT;
    if (ctx->opt.lib_dir) {
        ctx->lib_dir = rt__strdup(ctx->opt.lib_dir);
        if (!ctx->lib_dir) {
            rt_ctx_free(ctx);
            return RT_FAIL(err, RT_ENOMEM, "out of memory copying lib_dir");
        }
        ctx->opt.lib_dir = ctx->lib_dir;
    }
    if (ctx->opt.blas_cache) {
        ctx->blas_cache = ctx->opt.blas_cache;
    } else {
        ctx->blas_cache = rt_blas_cache_new();
        ctx->own_cache = true;
        if (!ctx->blas_cache) {
            rt_ctx_free(ctx);
            return RT_FAIL(err, RT_ENOMEM, "out of memory creating the heuristic cache");
        }
    }
    if (open_device(ctx, err)) {
        rt_ctx_free(ctx);
        return err->code;
    }
    *out = ctx;
    return 0;
}

int rt_ctx_new(const rt_options *opt, rt_ctx **out, lm_err *err)
{
    *out = NULL;
    if (lm_err_is_set(err)) return err->code;
    rt_ctx *ctx = rt__alloc(1, sizeof *ctx);
    if (!ctx) return RT_FAIL(err, RT_ENOMEM, "out of memory allocating a context");
    if (rt__drv_load(&ctx->drv, &ctx->drv_dl, err)) {
        rt__free(ctx);
        return err->code;
    }
    return finish_new(ctx, opt, out, err);
}

int rt_ctx_new_mock(rt_mock *mock, const rt_options *opt, rt_ctx **out, lm_err *err)
{
    *out = NULL;
    if (lm_err_is_set(err)) return err->code;
    rt_ctx *ctx = rt__alloc(1, sizeof *ctx);
    if (!ctx) return RT_FAIL(err, RT_ENOMEM, "out of memory allocating a context");
    ctx->mock = mock;
    rt__mock_fill(mock, &ctx->drv, &ctx->blaslib);
    return finish_new(ctx, opt, out, err);
}

void rt_ctx_free(rt_ctx *ctx)
{
    if (!ctx) return;
    rt_drv *d = &ctx->drv;
    rt__kernels_drop(ctx, !ctx->poisoned);
    rt__blas_drop(ctx, true);
    if (ctx->blas_loaded && !ctx->mock) {
        rt__blaslib_unload(&ctx->blaslib);
        /* cuBLASLt stays mapped: it carries a static cudart whose exit handlers would run
         * after an unmap. */
    }
    if (ctx->own_cache) rt_blas_cache_free(ctx->blas_cache);
    if (ctx->stream) d->stream_destroy(d->self, ctx->stream);
    for (; ctx->refs > 0; ctx->refs--)
        d->primary_release(d->self, ctx->dev);
    rt_nvrtc_free(ctx->nvrtc);
    if (!ctx->mock && d->self) {
        rt__drv_unload(d);
        /* libcuda stays mapped: unloading it under a live cudart (cuBLASLt's) is unsafe. */
    }
    rt__free(ctx->lib_dir);
    rt__free(ctx);
}

int rt_ctx_reset(rt_ctx *ctx, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    rt_drv *d = &ctx->drv;
    /* Everything on the primary context dies with it: forget, do not destroy, what a
     * poisoned context would refuse to destroy anyway. */
    rt__kernels_drop(ctx, !ctx->poisoned);
    rt__blas_drop(ctx, true);
    if (ctx->stream && !ctx->poisoned) d->stream_destroy(d->self, ctx->stream);
    ctx->stream = NULL;
    /* Reset while our reference is held and the context current, as cudaDeviceReset does;
     * bring_up then retains it again (the driver hands back the same handle). Whether the
     * reset kept the retain count is not documented, so rt_ctx_free releases every reference
     * taken: an extra release of a zero count is refused harmlessly. */
    CUresult r = d->primary_reset(d->self, ctx->dev);
    ctx->poisoned = false;
    ctx->poison_msg[0] = '\0';
    ctx->gen++;
    if (RT_CU(ctx, err, r, "cuDevicePrimaryCtxReset(device=%d)", ctx->info.ordinal))
        return err->code;
    lm_err up;
    lm_err_clear(&up);
    if (bring_up(ctx, &up)) {
        if (up.code == RT_EFAULT) {
            ctx->poisoned = true;
            snprintf(ctx->poison_msg, sizeof ctx->poison_msg, "a fault the driver keeps");
            return RT_FAIL(err, RT_EFAULT,
                           "the driver still refuses the device after cuDevicePrimaryCtxReset "
                           "(%s): it keeps a sticky kernel fault for the life of the process; "
                           "fix: run work that may fault through rt_isolated_run, which "
                           "confines the fault to a child process",
                           up.msg);
        }
        return rt__fail(err, up.code, rt__at(__FILE__, __LINE__), "%s", up.msg);
    }
    return 0;
}

int rt_ctx_sync(rt_ctx *ctx, lm_err *err)
{
    if (rt__ctx_usable(ctx, err)) return err->code;
    rt_drv *d = &ctx->drv;
    return RT_CU(ctx, err, d->stream_sync(d->self, ctx->stream), "cuStreamSynchronize");
}

int rt__ctx_nvrtc(rt_ctx *ctx, lm_err *err)
{
    if (ctx->nvrtc) return 0;
    return rt_nvrtc_new(ctx->opt.lib_dir, &ctx->nvrtc, err);
}

int rt__ctx_blas(rt_ctx *ctx, lm_err *err)
{
    if (ctx->blas_loaded) return 0;
    if (!ctx->mock && rt__blaslib_load(ctx->opt.lib_dir, &ctx->blaslib, &ctx->blas_dl, err))
        return err->code;
    ctx->blas_loaded = true;
    return 0;
}
