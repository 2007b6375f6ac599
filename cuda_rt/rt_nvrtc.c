/* rt_nvrtc.c: NVRTC loaded at run time; compiling CUDA C to CUBIN; readable compile errors.
 *
 * Compilation targets a real architecture (-arch=sm_XY), so NVRTC emits CUBIN that the
 * driver loads without a JIT step. Where there is no GPU the caller passes 90, which
 * lets CI check that generated kernels compile. A compile error comes back with NVRTC's
 * log followed by each source line the log points at ("name(LINE): error ...").
 *
 * The on-disk cache: where $LUMINAL_KERNEL_CACHE names a folder when the handle is made,
 * every CUBIN compiled is also written there, as <xxh3-128 hex>.cubin, keyed by
 * (NVRTC's version, architecture, options, source); a later compile of the same key, in
 * this process or another, reads it instead of compiling. A file holds its whole key
 * (header, options, source) and is used only when the key is equal, so a hash collision
 * or a damaged file costs a compile, never a wrong kernel. Files are written to a
 * temporary name and renamed, so concurrent processes never read half a file. The cache
 * is best effort: a folder that cannot be made or written leaves compiling as it was.
 */
#include "rt_int.h"

#include <errno.h>
#include <nvrtc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

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
    char *cache_dir; /* $LUMINAL_KERNEL_CACHE when the handle was made; NULL: none */
};

/* Process-wide counts of the on-disk cache (rt_nvrtc_disk_cache_stats). */
static atomic_uint_fast64_t disk_hits, disk_stores;

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
    const char *dir = getenv("LUMINAL_KERNEL_CACHE");
    if (dir && *dir && !(nv->cache_dir = rt__strdup(dir))) {
        rt__free(nv);
        return RT_FAIL(err, RT_ENOMEM, "out of memory loading NVRTC");
    }
    *out = nv;
    return 0;
}

void rt_nvrtc_free(rt_nvrtc *nv)
{
    /* the library stays mapped (see rt_ctx.c: unmapping CUDA libraries at run time is unsafe) */
    if (nv) rt__free(nv->cache_dir);
    rt__free(nv);
}

void rt_nvrtc_disk_cache_stats(uint64_t *hits, uint64_t *stores)
{
    *hits = (uint64_t)atomic_load(&disk_hits);
    *stores = (uint64_t)atomic_load(&disk_stores);
}

/* ---- the on-disk cache ---- */

#define DISK_MAGIC "LMCUBIN1"

typedef struct disk_key {
    uint32_t head[4]; /* arch, NVRTC major, minor, options' bytes */
    const char *opts; /* joined by '\n' */
    const char *src;
    char path[4096];
} disk_key;

/* The key and its file name; false when the path does not fit (no caching then). */
static bool disk_key_make(const rt_nvrtc *nv, const char *src, int arch, const char *opts,
                          disk_key *k)
{
    k->head[0] = (uint32_t)arch;
    k->head[1] = (uint32_t)nv->major;
    k->head[2] = (uint32_t)nv->minor;
    k->head[3] = (uint32_t)strlen(opts);
    k->opts = opts;
    k->src = src;
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    XXH3_128bits_update(&st, DISK_MAGIC, 8);
    XXH3_128bits_update(&st, k->head, sizeof k->head);
    XXH3_128bits_update(&st, opts, strlen(opts));
    XXH3_128bits_update(&st, src, strlen(src));
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    int n = snprintf(k->path, sizeof k->path, "%s/%016llx%016llx.cubin", nv->cache_dir,
                     (unsigned long long)h.high64, (unsigned long long)h.low64);
    return n > 0 && (size_t)n < sizeof k->path;
}

/* The cached CUBIN of k into out (log ""); false on a miss or any mismatch. */
static bool disk_read(const disk_key *k, rt_cubin *out)
{
    FILE *f = fopen(k->path, "rb");
    if (!f) return false;
    char magic[8];
    uint32_t head[4];
    uint64_t src_len = 0, bin_len = 0;
    size_t olen = k->head[3], slen = strlen(k->src);
    bool ok = fread(magic, 1, 8, f) == 8 && memcmp(magic, DISK_MAGIC, 8) == 0 &&
              fread(head, sizeof head, 1, f) == 1 && memcmp(head, k->head, sizeof head) == 0 &&
              fread(&src_len, sizeof src_len, 1, f) == 1 && src_len == slen &&
              fread(&bin_len, sizeof bin_len, 1, f) == 1 && bin_len > 0 && bin_len < (1ull << 31);
    char *text = ok ? rt__alloc(olen + slen + 1, 1) : NULL;
    ok = ok && text && fread(text, 1, olen + slen, f) == olen + slen &&
         memcmp(text, k->opts, olen) == 0 && memcmp(text + olen, k->src, slen) == 0;
    rt__free(text);
    void *data = ok ? rt__alloc((size_t)bin_len, 1) : NULL;
    char *log = ok ? rt__strdup("") : NULL;
    ok = ok && data && log && fread(data, 1, (size_t)bin_len, f) == bin_len && fgetc(f) == EOF;
    fclose(f);
    if (!ok) {
        rt__free(data);
        rt__free(log);
        return false;
    }
    out->data = data;
    out->size = (size_t)bin_len;
    out->log = log;
    atomic_fetch_add(&disk_hits, 1);
    return true;
}

/* Makes path's folder part, up to (not including) its last '/' (lm_mkdir_p); a failure
 * is left to the fopen that follows (the disk cache ignores failures). */
static void make_parents(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *last = strrchr(buf, '/');
    if (!last || last == buf) return;
    *last = '\0';
    lm_err ignored = {0};
    lm_mkdir_p(buf, &ignored);
}

/* Writes bin under k (to a temporary name, then renamed); failures are ignored. */
static void disk_write(const disk_key *k, const rt_cubin *bin)
{
    static atomic_uint_fast64_t serial;
    char tmp[4096 + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%llu", k->path, (long)getpid(),
             (unsigned long long)atomic_fetch_add(&serial, 1));
    FILE *f = fopen(tmp, "wb");
    if (!f && errno == ENOENT) {
        make_parents(k->path);
        f = fopen(tmp, "wb");
    }
    if (!f) return;
    uint64_t src_len = strlen(k->src), bin_len = bin->size;
    bool ok = fwrite(DISK_MAGIC, 1, 8, f) == 8 && fwrite(k->head, sizeof k->head, 1, f) == 1 &&
              fwrite(&src_len, sizeof src_len, 1, f) == 1 &&
              fwrite(&bin_len, sizeof bin_len, 1, f) == 1 &&
              fwrite(k->opts, 1, k->head[3], f) == k->head[3] &&
              fwrite(k->src, 1, (size_t)src_len, f) == src_len &&
              fwrite(bin->data, 1, bin->size, f) == bin->size;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, k->path) == 0)
        atomic_fetch_add(&disk_stores, 1);
    else
        remove(tmp);
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

static int compile(rt_nvrtc *nv, const char *src, const char *name, int arch,
                   const char *const *opts, uint32_t nopts, rt_cubin *out, lm_err *err);

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
    disk_key key;
    char *joined = NULL;
    bool disk = false;
    if (nv->cache_dir) {
        size_t len = 1;
        for (uint32_t i = 0; i < nopts; i++)
            len += strlen(opts[i]) + 1;
        joined = rt__alloc(len, 1);
        if (!joined) return RT_FAIL(err, RT_ENOMEM, "out of memory joining NVRTC options");
        for (uint32_t i = 0; i < nopts; i++) {
            strcat(joined, opts[i]);
            strcat(joined, "\n");
        }
        disk = disk_key_make(nv, src, arch, joined, &key);
        if (disk && disk_read(&key, out)) {
            rt__free(joined);
            return 0;
        }
    }
    int rc = compile(nv, src, name, arch, opts, nopts, out, err);
    if (!rc && disk) disk_write(&key, out);
    rt__free(joined);
    return rc;
}

static int compile(rt_nvrtc *nv, const char *src, const char *name, int arch,
                   const char *const *opts, uint32_t nopts, rt_cubin *out, lm_err *err)
{
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
    if (r == NVRTC_SUCCESS && !data) {
        rt__free(log);
        nv->destroy(&prog);
        return RT_FAIL(err, RT_ENOMEM, "out of memory holding the CUBIN of %s (%zu bytes)", name,
                       size);
    }
    if (r != NVRTC_SUCCESS || (r = nv->cubin(prog, data)) != NVRTC_SUCCESS) {
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
