/* rt_mem.c: device buffers with stable addresses, pinned host memory, copies and memset.
 *
 * A buffer only grows: while the size asked for fits its capacity the address stays the
 * same, so a graph captured over it stays valid across runs. Growth rounds the capacity
 * up to 2 MiB (the driver's allocation granularity for large buffers) so that small
 * increases do not move it.
 */
#include "rt_int.h"

#include <string.h>

int rt_buf_reserve(rt_ctx *ctx, rt_buf *buf, size_t bytes, bool *moved, lm_err *err)
{
    if (moved) *moved = false;
    if (rt__ctx_usable(ctx, err)) return err->code;
    if (buf->ptr && buf->gen != ctx->gen)
        return RT_FAIL(err, RT_ESTALE,
                       "buffer at 0x%llx was allocated before rt_ctx_reset (generation %u, now "
                       "%u); fix: rt_buf_release it and reserve again",
                       (unsigned long long)buf->ptr, buf->gen, ctx->gen);
    if (buf->ptr && bytes <= buf->capacity) {
        buf->bytes = bytes;
        return 0;
    }
    if (bytes == 0) {
        buf->bytes = 0;
        return 0;
    }
    if (bytes > SIZE_MAX - RT_BUF_ROUND)
        return RT_FAIL(err, RT_ENOMEM, "buffer size %zu bytes overflows", bytes);
    size_t cap = (bytes + RT_BUF_ROUND - 1) / RT_BUF_ROUND * RT_BUF_ROUND;
    rt_drv *d = &ctx->drv;
    CUdeviceptr p = 0;
    if (RT_CU(ctx, err, d->mem_alloc(d->self, &p, cap),
              "cuMemAlloc(bytes=%zu, asked %zu; device has %zu total)", cap, bytes,
              ctx->info.total_mem))
        return err->code;
    if (buf->ptr) d->mem_free(d->self, buf->ptr);
    buf->ptr = p;
    buf->bytes = bytes;
    buf->capacity = cap;
    buf->gen = ctx->gen;
    if (moved) *moved = true;
    return 0;
}

void rt_buf_release(rt_ctx *ctx, rt_buf *buf)
{
    if (buf->ptr && buf->gen == ctx->gen && !ctx->poisoned)
        ctx->drv.mem_free(ctx->drv.self, buf->ptr);
    memset(buf, 0, sizeof *buf);
}

int rt_host_alloc(rt_ctx *ctx, size_t bytes, void **out, lm_err *err)
{
    *out = NULL;
    if (rt__ctx_usable(ctx, err)) return err->code;
    rt_drv *d = &ctx->drv;
    return RT_CU(ctx, err, d->host_alloc(d->self, out, bytes ? bytes : 1),
                 "cuMemAllocHost(bytes=%zu)", bytes);
}

void rt_host_free(rt_ctx *ctx, void *p)
{
    if (p) ctx->drv.host_free(ctx->drv.self, p);
}

int rt_copy_htod(rt_ctx *ctx, rt_dptr dst, const void *src, size_t bytes, lm_err *err)
{
    if (rt__ctx_usable(ctx, err)) return err->code;
    if (bytes == 0) return 0;
    rt_drv *d = &ctx->drv;
    return RT_CU(ctx, err, d->copy_htod(d->self, dst, src, bytes, ctx->stream),
                 "cuMemcpyHtoDAsync(dst=0x%llx, bytes=%zu)", (unsigned long long)dst, bytes);
}

int rt_copy_dtoh(rt_ctx *ctx, void *dst, rt_dptr src, size_t bytes, lm_err *err)
{
    if (rt__ctx_usable(ctx, err)) return err->code;
    if (bytes == 0) return 0;
    rt_drv *d = &ctx->drv;
    return RT_CU(ctx, err, d->copy_dtoh(d->self, dst, src, bytes, ctx->stream),
                 "cuMemcpyDtoHAsync(src=0x%llx, bytes=%zu)", (unsigned long long)src, bytes);
}

int rt_copy_dtod(rt_ctx *ctx, rt_dptr dst, rt_dptr src, size_t bytes, lm_err *err)
{
    if (rt__ctx_usable(ctx, err)) return err->code;
    if (bytes == 0) return 0;
    rt_drv *d = &ctx->drv;
    return RT_CU(ctx, err, d->copy_dtod(d->self, dst, src, bytes, ctx->stream),
                 "cuMemcpyDtoDAsync(dst=0x%llx, src=0x%llx, bytes=%zu)", (unsigned long long)dst,
                 (unsigned long long)src, bytes);
}

int rt_memset8(rt_ctx *ctx, rt_dptr dst, uint8_t value, size_t bytes, lm_err *err)
{
    if (rt__ctx_usable(ctx, err)) return err->code;
    if (bytes == 0) return 0;
    rt_drv *d = &ctx->drv;
    return RT_CU(ctx, err, d->memset8(d->self, dst, value, bytes, ctx->stream),
                 "cuMemsetD8Async(dst=0x%llx, value=%u, bytes=%zu)", (unsigned long long)dst, value,
                 bytes);
}
