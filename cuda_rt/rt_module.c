/* rt_module.c: the module cache and direct kernel launches.
 *
 * A module is keyed by xxh64 over (source, options, architecture) and the hit is
 * confirmed by comparing the source and options themselves, so a hash collision can only
 * cost a compile, never return the wrong kernel. Modules are kept in insertion order
 * (lookup is a linear scan: a search loads hundreds of modules, not millions) and each
 * keeps the functions fetched from it. Everything here dies with the primary context.
 */
#include "rt_int.h"

#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

struct rt_kernel {
    CUfunction fn;
    char *name;
    uint32_t shared_max; /* the dynamic shared memory limit raised to (0: the default) */
};

struct rt_kernel_entry {
    uint64_t hash;
    char *src;
    char *opts; /* options joined by '\n' */
    int arch;
    CUmodule mod;
    rt_kernel **fns;
    uint32_t nfns;
};

CUfunction rt__kernel_fn(const rt_kernel *k)
{
    return k->fn;
}
const char *rt__kernel_name(const rt_kernel *k)
{
    return k->name;
}

void rt_kernel_cache_stats(const rt_ctx *ctx, uint64_t *hits, uint64_t *misses)
{
    *hits = ctx->kernel_hits;
    *misses = ctx->kernel_misses;
}

static void entry_free(rt_ctx *ctx, rt_kernel_entry *e, bool unload)
{
    if (!e) return;
    if (unload && e->mod) ctx->drv.module_unload(ctx->drv.self, e->mod);
    for (uint32_t i = 0; i < e->nfns; i++) {
        rt__free(e->fns[i]->name);
        rt__free(e->fns[i]);
    }
    rt__free(e->fns);
    rt__free(e->src);
    rt__free(e->opts);
    rt__free(e);
}

void rt__kernels_drop(rt_ctx *ctx, bool unload)
{
    for (uint32_t i = 0; i < ctx->nkernels; i++)
        entry_free(ctx, ctx->kernels[i], unload);
    rt__free(ctx->kernels);
    ctx->kernels = NULL;
    ctx->nkernels = ctx->kernels_cap = 0;
}

static char *join_opts(const char *const *opts, uint32_t nopts)
{
    size_t len = 1;
    for (uint32_t i = 0; i < nopts; i++)
        len += strlen(opts[i]) + 1;
    char *s = rt__alloc(len, 1);
    if (!s) return NULL;
    size_t at = 0;
    for (uint32_t i = 0; i < nopts; i++) {
        size_t l = strlen(opts[i]);
        memcpy(s + at, opts[i], l);
        at += l;
        s[at++] = '\n';
    }
    s[at] = '\0';
    return s;
}

static uint64_t key_hash(const char *src, const char *opts, int arch)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, src, strlen(src) + 1);
    XXH3_64bits_update(&st, opts, strlen(opts) + 1);
    XXH3_64bits_update(&st, &arch, sizeof arch);
    return XXH3_64bits_digest(&st);
}

static int get_fn(rt_ctx *ctx, rt_kernel_entry *e, const char *fn_name, rt_kernel **out,
                  lm_err *err)
{
    for (uint32_t i = 0; i < e->nfns; i++)
        if (strcmp(e->fns[i]->name, fn_name) == 0) {
            *out = e->fns[i];
            return 0;
        }
    CUfunction f = NULL;
    rt_drv *d = &ctx->drv;
    if (RT_CU(ctx, err, d->module_func(d->self, &f, e->mod, fn_name), "cuModuleGetFunction(\"%s\")",
              fn_name))
        return err->code;
    rt_kernel *k = rt__alloc(1, sizeof *k);
    char *name = rt__strdup(fn_name);
    rt_kernel **fns = rt__realloc(e->fns, e->nfns + 1, sizeof *fns);
    if (!k || !name || !fns) {
        rt__free(k);
        rt__free(name);
        if (fns) e->fns = fns;
        return RT_FAIL(err, RT_ENOMEM, "out of memory caching kernel %s", fn_name);
    }
    k->fn = f;
    k->name = name;
    e->fns = fns;
    e->fns[e->nfns++] = k;
    *out = k;
    return 0;
}

/* The cached entry for (src, joined, arch), or NULL. */
static rt_kernel_entry *cache_find(rt_ctx *ctx, const char *src, const char *joined, int arch,
                                   uint64_t h)
{
    for (uint32_t i = 0; i < ctx->nkernels; i++) {
        rt_kernel_entry *e = ctx->kernels[i];
        if (e->hash == h && e->arch == arch && strcmp(e->src, src) == 0 &&
            strcmp(e->opts, joined) == 0)
            return e;
    }
    return NULL;
}

/* Loads bin and caches it under (src, joined, arch); takes joined (freed on failure too).
 * bin stays the caller's. */
static int cache_insert(rt_ctx *ctx, const char *src, char *joined, int arch, uint64_t h,
                        const rt_cubin *bin, const char *fn_name, rt_kernel **out, lm_err *err)
{
    rt_kernel_entry *e = rt__alloc(1, sizeof *e);
    char *src_copy = rt__strdup(src);
    if (ctx->nkernels == ctx->kernels_cap) {
        uint32_t cap = ctx->kernels_cap ? ctx->kernels_cap * 2 : 16;
        rt_kernel_entry **k = rt__realloc(ctx->kernels, cap, sizeof *k);
        if (k) {
            ctx->kernels = k;
            ctx->kernels_cap = cap;
        }
    }
    if (!e || !src_copy || ctx->nkernels == ctx->kernels_cap) {
        rt__free(e);
        rt__free(src_copy);
        rt__free(joined);
        return RT_FAIL(err, RT_ENOMEM, "out of memory caching a module");
    }
    rt_drv *d = &ctx->drv;
    CUresult r = d->module_load(d->self, &e->mod, bin->data);
    if (RT_CU(ctx, err, r, "cuModuleLoadData(%s, cubin %zu bytes, sm_%d)", fn_name, bin->size,
              arch)) {
        rt__free(e);
        rt__free(src_copy);
        rt__free(joined);
        return err->code;
    }
    e->hash = h;
    e->src = src_copy;
    e->opts = joined;
    e->arch = arch;
    ctx->kernels[ctx->nkernels++] = e;
    ctx->kernel_misses++;
    return get_fn(ctx, e, fn_name, out, err);
}

/* A kernel's key in the cache: the options joined (the caller's to free or hand to
 * cache_insert), the device's architecture and the hash of all with the source. */
typedef struct rt_key {
    char *joined;
    int arch;
    uint64_t h;
} rt_key;

/* Looks (src, opts) up in ctx's cache: on a hit *out is the kernel and *hit is set; on a
 * miss key holds what cache_insert needs. *out is NULL but on a hit; key->joined NULL but
 * on a miss. */
static int lookup(rt_ctx *ctx, const char *src, const char *fn_name, const char *const *opts,
                  uint32_t nopts, rt_key *key, rt_kernel **out, bool *hit, lm_err *err)
{
    *out = NULL;
    *hit = false;
    key->joined = NULL;
    if (rt__ctx_usable(ctx, err)) return err->code;
    key->arch = ctx->info.cc_major * 10 + ctx->info.cc_minor;
    key->joined = join_opts(opts, nopts);
    if (!key->joined) return RT_FAIL(err, RT_ENOMEM, "out of memory joining NVRTC options");
    key->h = key_hash(src, key->joined, key->arch);
    rt_kernel_entry *e = cache_find(ctx, src, key->joined, key->arch, key->h);
    if (!e) return 0;
    rt__free(key->joined);
    key->joined = NULL;
    ctx->kernel_hits++;
    *hit = true;
    return get_fn(ctx, e, fn_name, out, err);
}

int rt_kernel_get(rt_ctx *ctx, const char *src, const char *fn_name, const char *const *opts,
                  uint32_t nopts, rt_kernel **out, lm_err *err)
{
    rt_key key;
    bool hit;
    int rc = lookup(ctx, src, fn_name, opts, nopts, &key, out, &hit, err);
    if (rc || hit) return rc;
    if (rt__ctx_nvrtc(ctx, err)) {
        rt__free(key.joined);
        return err->code;
    }
    rt_cubin bin;
    if (rt_nvrtc_compile(ctx->nvrtc, src, fn_name, key.arch, opts, nopts, &bin, err)) {
        rt__free(key.joined);
        return err->code;
    }
    rc = cache_insert(ctx, src, key.joined, key.arch, key.h, &bin, fn_name, out, err);
    rt_cubin_fini(&bin);
    return rc;
}

int rt_kernel_load(rt_ctx *ctx, const char *src, const char *fn_name, const char *const *opts,
                   uint32_t nopts, const rt_cubin *bin, rt_kernel **out, lm_err *err)
{
    rt_key key;
    bool hit;
    int rc = lookup(ctx, src, fn_name, opts, nopts, &key, out, &hit, err);
    if (rc || hit) return rc;
    if (!bin || !bin->data || !bin->size) {
        rt__free(key.joined);
        return RT_FAIL(err, RT_EARG,
                       "rt_kernel_load(%s): no CUBIN given; fix: compile it with "
                       "rt_nvrtc_compile for sm_%d first",
                       fn_name, key.arch);
    }
    return cache_insert(ctx, src, key.joined, key.arch, key.h, bin, fn_name, out, err);
}

size_t rt__arg_slot(size_t size)
{
    return (size + RT_ARG_ALIGN - 1) & ~(size_t)(RT_ARG_ALIGN - 1);
}

int rt__launch_check(const rt_launch *l, const char *what, lm_err *err)
{
    if (!l->kernel)
        return RT_FAIL(err, RT_EARG, "%s: no kernel given; fix: get one with rt_kernel_get", what);
    if (!l->grid[0] || !l->grid[1] || !l->grid[2] || !l->block[0] || !l->block[1] || !l->block[2])
        return RT_FAIL(err, RT_EARG,
                       "%s %s: grid %ux%ux%u or block %ux%ux%u has a zero dimension; fix: give "
                       "nonzero dimensions",
                       what, l->kernel->name, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                       l->block[1], l->block[2]);
    if (l->nargs > RT_MAX_KERNEL_ARGS)
        return RT_FAIL(err, RT_EARG, "%s %s: %u arguments, at most %d", what, l->kernel->name,
                       l->nargs, RT_MAX_KERNEL_ARGS);
    size_t total = 0;
    for (uint32_t i = 0; i < l->nargs; i++) {
        if (!l->args[i] || l->sizes[i] == 0 || l->sizes[i] > RT_MAX_ARG_BYTES)
            return RT_FAIL(err, RT_EARG,
                           "%s %s: argument %u has no value or size %zu (1..%d allowed)", what,
                           l->kernel->name, i, l->sizes[i], RT_MAX_ARG_BYTES);
        total += rt__arg_slot(l->sizes[i]);
    }
    if (total > RT_MAX_ARG_BYTES)
        return RT_FAIL(err, RT_EARG, "%s %s: %zu bytes of arguments, at most %d", what,
                       l->kernel->name, total, RT_MAX_ARG_BYTES);
    return 0;
}

int rt__kernel_shared(rt_ctx *ctx, const rt_launch *l, lm_err *err)
{
    rt_kernel *k = l->kernel;
    if (l->shared_bytes <= RT_SHARED_DEFAULT || l->shared_bytes <= k->shared_max) return 0;
    rt_drv *d = &ctx->drv;
    if (RT_CU(ctx, err,
              d->func_set_attr(d->self, k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               (int)l->shared_bytes),
              "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %u): more dynamic shared "
              "memory than the device gives a block (227 KiB on sm_90)",
              k->name, l->shared_bytes))
        return err->code;
    k->shared_max = l->shared_bytes;
    return 0;
}

int rt_launch_kernel(rt_ctx *ctx, const rt_launch *l, lm_err *err)
{
    if (rt__ctx_usable(ctx, err) || rt__launch_check(l, "kernel launch", err) ||
        rt__kernel_shared(ctx, l, err))
        return err->code;
    void *params[RT_MAX_KERNEL_ARGS + 1];
    for (uint32_t i = 0; i < l->nargs; i++)
        memcpy(&params[i], &l->args[i], sizeof params[i]);
    rt_drv *d = &ctx->drv;
    return RT_CU(ctx, err,
                 d->launch(d->self, l->kernel->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                           l->block[1], l->block[2], l->shared_bytes, ctx->stream, params, NULL),
                 "cuLaunchKernel(%s, grid %ux%ux%u, block %ux%ux%u, shared %u bytes)",
                 l->kernel->name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                 l->block[2], l->shared_bytes);
}
