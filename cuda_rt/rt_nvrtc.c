/* rt_nvrtc.c: NVRTC loaded at run time; compiling CUDA C to CUBIN; readable compile errors.
 *
 * Compilation targets a real architecture (-arch=sm_XY), so NVRTC emits CUBIN that the
 * driver loads without a JIT step. Where there is no GPU the caller passes 90, which
 * lets CI check that generated kernels compile. A compile error comes back with NVRTC's
 * log followed by each source line the log points at ("name(LINE): error ...").
 */
#include "rt_int.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_nvrtc {
    void *dl;
    int major, minor;
    const char *(*error_string)(nvrtcResult);
    nvrtcResult (*version)(int *, int *);
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
};

int rt_nvrtc_new(const char *lib_dir, rt_nvrtc **out, lm_err *err)
{
    *out = NULL;
    if (lm_err_is_set(err)) return err->code;
    char tried[RT_DL_TRIED];
    const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
    void *dl = rt__dl_open_any(lib_dir, names, tried, sizeof tried);
    if (!dl)
        return RT_FAIL(err, RT_ENVRTC,
                       "NVRTC could not be loaded (tried %s); fix: install the CUDA toolkit's "
                       "NVRTC or set LUMINAL_CUDA_LIB_DIR to the folder holding libnvrtc",
                       tried);
    rt_nvrtc *nv = rt__alloc(1, sizeof *nv);
    if (!nv) return RT_FAIL(err, RT_ENOMEM, "out of memory loading NVRTC");
    nv->dl = dl;
    const rt_dl_fn fns[] = {
        {"nvrtcGetErrorString", &nv->error_string, sizeof nv->error_string},
        {"nvrtcVersion", &nv->version, sizeof nv->version},
        {"nvrtcCreateProgram", &nv->create, sizeof nv->create},
        {"nvrtcDestroyProgram", &nv->destroy, sizeof nv->destroy},
        {"nvrtcCompileProgram", &nv->compile, sizeof nv->compile},
        {"nvrtcGetProgramLogSize", &nv->log_size, sizeof nv->log_size},
        {"nvrtcGetProgramLog", &nv->log, sizeof nv->log},
        {"nvrtcGetCUBINSize", &nv->cubin_size, sizeof nv->cubin_size},
        {"nvrtcGetCUBIN", &nv->cubin, sizeof nv->cubin},
    };
    const char *missing = rt__dl_fns(dl, fns, sizeof fns / sizeof fns[0]);
    if (missing) {
        rt__free(nv);
        return RT_FAIL(err, RT_ENVRTC, "NVRTC (%s) has no %s; fix: use NVRTC 12 or newer", tried,
                       missing);
    }
    nv->version(&nv->major, &nv->minor);
    *out = nv;
    return 0;
}

void rt_nvrtc_free(rt_nvrtc *nv)
{
    /* the library stays mapped (see rt_ctx.c: unmapping CUDA libraries at run time is unsafe) */
    rt__free(nv);
}

void rt_nvrtc_version(const rt_nvrtc *nv, int *major, int *minor)
{
    *major = nv->major;
    *minor = nv->minor;
}

void rt_cubin_fini(rt_cubin *c)
{
    if (!c) return;
    rt__free(c->data);
    rt__free(c->log);
    c->data = NULL;
    c->log = NULL;
    c->size = 0;
}

enum {
    QUOTED_LINES = 8,   /* distinct source lines a compile error quotes */
    QUOTED_CHARS = 200, /* characters quoted of each */
};

/* Appends "  line N: <text>" for each line the log names (at most QUOTED_LINES). */
static void quote_lines(const char *log, const char *src, const char *name, char *out,
                        size_t out_size)
{
    size_t used = strlen(out);
    size_t nlen = strlen(name);
    long seen[QUOTED_LINES];
    int nseen = 0;
    for (const char *p = log; p && *p && nseen < QUOTED_LINES;) {
        const char *eol = strchr(p, '\n');
        if (strncmp(p, name, nlen) == 0 && p[nlen] == '(') {
            char *end = NULL;
            long line = strtol(p + nlen + 1, &end, 10);
            bool dup = false;
            for (int i = 0; i < nseen; i++)
                dup |= seen[i] == line;
            if (end && *end == ')' && line > 0 && !dup) {
                seen[nseen++] = line;
                const char *s = src;
                for (long l = 1; l < line && s; l++) {
                    s = strchr(s, '\n');
                    if (s) s++;
                }
                if (s) {
                    const char *se = strchr(s, '\n');
                    int len = se ? (int)(se - s) : (int)strlen(s);
                    if (len > QUOTED_CHARS) len = QUOTED_CHARS;
                    int w =
                        snprintf(out + used, out_size - used, "\n  line %ld: %.*s", line, len, s);
                    if (w > 0)
                        used += (size_t)w < out_size - used ? (size_t)w : out_size - used - 1;
                }
            }
        }
        p = eol ? eol + 1 : NULL;
    }
}

int rt_nvrtc_compile(rt_nvrtc *nv, const char *src, const char *name, int arch,
                     const char *const *opts, uint32_t nopts, rt_cubin *out, lm_err *err)
{
    memset(out, 0, sizeof *out);
    if (lm_err_is_set(err)) return err->code;
    if (arch < RT_NVRTC_MIN_ARCH || arch > RT_NVRTC_MAX_ARCH)
        return RT_FAIL(err, RT_EARG,
                       "NVRTC arch %d is not an sm_XY architecture; fix: pass "
                       "e.g. 90 for sm_90",
                       arch);
    if (nopts > RT_NVRTC_MAX_OPTS)
        return RT_FAIL(err, RT_EARG, "%u NVRTC options given, at most %d allowed", nopts,
                       RT_NVRTC_MAX_OPTS);
    nvrtcProgram prog = NULL;
    nvrtcResult r = nv->create(&prog, src, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return RT_FAIL(err, RT_ENVRTC, "nvrtcCreateProgram(%s, %zu bytes) failed: %s", name,
                       strlen(src), nv->error_string(r));
    char arch_opt[32];
    snprintf(arch_opt, sizeof arch_opt, "-arch=sm_%d", arch);
    const char *all[RT_NVRTC_MAX_OPTS + 1];
    all[0] = arch_opt;
    for (uint32_t i = 0; i < nopts; i++)
        all[i + 1] = opts[i];
    nvrtcResult cr = nv->compile(prog, (int)nopts + 1, all);
    size_t log_size = 0;
    nv->log_size(prog, &log_size);
    char *log = rt__alloc(log_size + 1, 1);
    if (!log) {
        nv->destroy(&prog);
        return RT_FAIL(err, RT_ENOMEM, "out of memory reading an NVRTC log of %zu bytes", log_size);
    }
    if (log_size) nv->log(prog, log);
    if (cr != NVRTC_SUCCESS) {
        char detail[LM_ERR_MSG];
        snprintf(detail, sizeof detail, "%s", log);
        quote_lines(log, src, name, detail, sizeof detail);
        rt__free(log);
        nv->destroy(&prog);
        return RT_FAIL(err, RT_ECOMPILE,
                       "NVRTC could not compile %s for sm_%d: %s; log:\n%s\nfix: correct the "
                       "kernel source at the lines quoted",
                       name, arch, nv->error_string(cr), detail);
    }
    size_t size = 0;
    r = nv->cubin_size(prog, &size);
    void *data = r == NVRTC_SUCCESS ? rt__alloc(size, 1) : NULL;
    if (r != NVRTC_SUCCESS || !data || nv->cubin(prog, data) != NVRTC_SUCCESS) {
        rt__free(data);
        rt__free(log);
        nv->destroy(&prog);
        return RT_FAIL(err, RT_ENVRTC, "nvrtcGetCUBIN(%s, sm_%d) failed: %s", name, arch,
                       nv->error_string(r));
    }
    nv->destroy(&prog);
    out->data = data;
    out->size = size;
    out->log = log;
    return 0;
}
