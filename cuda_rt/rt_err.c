/* rt_err.c: the error door, error names and remedies, and the host allocation door.
 *
 * Every error of the module is raised through rt__fail (or rt__cu_check, which formats a
 * driver failure and then calls it), so one breakpoint catches them all. A record that
 * already holds an error is never overwritten: the first failure is the one reported.
 */
#include "rt_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t host_allocs; /* diagnostic counter, see rt_debug_host_allocs */

uint64_t rt_debug_host_allocs(void)
{
    return atomic_load(&host_allocs);
}

/* The allocation door: a thin door over base's counted one (base.h, "Memory"), which
 * also counts into rt_debug_host_allocs. */
void *rt__alloc(size_t n, size_t size)
{
    atomic_fetch_add(&host_allocs, 1);
    return lm_zalloc(n, size);
}

void *rt__realloc(void *p, size_t n, size_t size)
{
    atomic_fetch_add(&host_allocs, 1);
    return lm_realloc(p, n, size);
}

void rt__free(void *p)
{
    lm_free(p);
}

char *rt__strdup(const char *s)
{
    return lm_strdup(s);
}

/* The door: formats the message, adds where in cuda_rt it was raised and hands both to
 * base's lm_err_setv, which keeps a record's first error. The source location ends the
 * message; the location a user could act on is in the message (the call and its sizes). */
int rt__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    if (!err) return code;
    if (lm_err_is_set(err)) return err->code; /* sticky: nothing to format */
    char msg[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lm_loc at = loc ? *loc : (lm_loc){.node_id = LM_NONE};
    const char *file = at.file;
    uint32_t line = at.line;
    at.file = NULL; /* cuda_rt's source, not the user's input */
    at.line = at.col = 0;
    bool any = at.node || at.field || at.node_id != LM_NONE;
    if (!file) return lm_err_set(err, code, any ? &at : NULL, "%s", msg);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    return lm_err_set(err, code, any ? &at : NULL, "%s [cuda_rt/%s:%u]", msg, base, line);
}

/* ---- driver error names and remedies ---------------------------------------------- */

typedef struct cu_info {
    CUresult r;
    const char *name;
    const char *remedy;
} cu_info;

static const cu_info cu_table[] = {
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE",
     "an argument is out of range: check the sizes, grid and block dimensions"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY",
     "free buffers or plan a smaller arena; the device has less free memory than asked"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "the driver was not initialized: open a context with rt_ctx_new first"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA device is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "the device ordinal does not exist: pick one below the device count"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "the CUBIN does not match this device: compile for the device's architecture"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "the module has no code for this GPU: compile for the device's exact sm_XY"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND",
     "the named kernel is not in the module: declare it extern \"C\" __global__"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "a kernel accessed memory out of bounds; the context is unusable: call rt_ctx_reset "
     "(drivers that keep the fault need rt_isolated_run) and check the candidate's "
     "indexing and buffer sizes"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED",
     "a kernel failed while running; call rt_ctx_reset and check the kernel"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many registers or threads per block: lower the block size"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "a kernel ran too long; call rt_ctx_reset and bound the kernel's work"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "a kernel executed an illegal instruction; call rt_ctx_reset"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS",
     "a kernel made a misaligned access; call rt_ctx_reset and check vector widths"},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR",
     "a kernel overflowed its stack; call rt_ctx_reset"},
    {CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "a device assert fired; call rt_ctx_reset"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "a handle is stale or destroyed: objects made before a reset must be recreated"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "a captured call did something not allowed in capture (allocation, sync): keep "
     "enqueue-only work inside captures"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "the operation cannot be captured: move it out of the capture"},
    {CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
     "the graph's topology changed: instantiate it again"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "the device or driver does not support this: update the driver"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "the module is invalid: recompile it"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the driver is older than NVRTC: update the driver or use an older toolkit"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "work is still running: wait for it"},
};

static const cu_info *cu_find(CUresult r)
{
    for (size_t i = 0; i < sizeof cu_table / sizeof cu_table[0]; i++)
        if (cu_table[i].r == r) return &cu_table[i];
    return NULL;
}

const char *rt__cu_name(const rt_drv *d, CUresult r)
{
    const char *name = NULL;
    if (d && d->error_name && d->error_name(d->self, r, &name) == CUDA_SUCCESS && name) return name;
    const cu_info *i = cu_find(r);
    return i ? i->name : "CUDA_ERROR_UNKNOWN_CODE";
}

const char *rt__cu_remedy(CUresult r)
{
    const cu_info *i = cu_find(r);
    return i ? i->remedy : "see the CUDA driver API documentation for this error";
}

bool rt__cu_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
        return true;
    default:
        return false;
    }
}

const char *rt__blas_status_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
        return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
        return "CUBLAS_STATUS_UNKNOWN";
    }
}

int rt__cu_check(rt_ctx *ctx, lm_err *err, CUresult r, const char *file, int line, const char *fmt,
                 ...)
{
    if (r == CUDA_SUCCESS) return RT_OK;
    char call[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(call, sizeof call, fmt, ap);
    va_end(ap);
    const rt_drv *d = ctx ? &ctx->drv : NULL;
    const char *desc = NULL;
    if (!d || !d->error_string || d->error_string(d->self, r, &desc) != CUDA_SUCCESS || !desc)
        desc = "no description";
    rt_code code = RT_EDRIVER;
    if (rt__cu_sticky(r)) {
        code = RT_EFAULT;
        if (ctx && !ctx->poisoned) {
            ctx->poisoned = true;
            snprintf(ctx->poison_msg, sizeof ctx->poison_msg, "%s at %.200s", rt__cu_name(d, r),
                     call);
        }
    } else if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_NOT_INITIALIZED) {
        code = RT_ENODEV;
    }
    return rt__fail(err, code, rt__at(file, line), "%s%s failed: %s (%d: %s); fix: %s",
                    code == RT_ENODEV ? "no CUDA device: " : "", call, rt__cu_name(d, r), (int)r,
                    desc, rt__cu_remedy(r));
}
