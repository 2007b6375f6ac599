/* test_sr_kernel_cache.c - cuda_rt's on-disk CUBIN cache ($LUMINAL_KERNEL_CACHE), which
 * the GPU evaluator's workers use (label unit; skipped, exit 77, where NVRTC cannot be
 * loaded): a compile stores, a fresh handle reads the same bytes back, another option or
 * architecture is another entry, a damaged file is compiled again and replaced, a
 * folder that cannot be made changes nothing but the time, and no cache without the
 * variable. */
#include "cuda_rt.h"
#include "lm_check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *SRC = "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n";

static char dir[256];

static rt_nvrtc *nvrtc(void)
{
    rt_nvrtc *nv = NULL;
    lm_err e = {0};
    ck_assert_msg(rt_nvrtc_new(NULL, &nv, &e) == 0, "%s", e.msg);
    return nv;
}

static void compile(rt_nvrtc *nv, const char *opt, int arch, rt_cubin *out)
{
    lm_err e = {0};
    const char *opts[] = {opt};
    ck_assert_msg(
        rt_nvrtc_compile(nv, SRC, "k.cu", arch, opt ? opts : NULL, opt ? 1 : 0, out, &e) == 0, "%s",
        e.msg);
    ck_assert_uint_gt(out->size, 0);
}

/* The .cubin files in the folder; *first receives the first one's path. */
static int files(const char *d, char *first, size_t size)
{
    DIR *dd = opendir(d);
    if (!dd) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dd)))
        if (strstr(de->d_name, ".cubin") && !strstr(de->d_name, ".tmp.")) {
            if (n++ == 0 && first) snprintf(first, size, "%s/%s", d, de->d_name);
        }
    closedir(dd);
    return n;
}

START_TEST(cubins_are_kept_on_disk)
{
    snprintf(dir, sizeof dir, "/tmp/lm_kcache_%d/a/b", (int)getpid());
    setenv("LUMINAL_KERNEL_CACHE", dir, 1);
    uint64_t h0, s0, h, s;
    rt_nvrtc_disk_cache_stats(&h0, &s0);
    rt_nvrtc *nv = nvrtc();
    rt_cubin a, b, c, d;
    compile(nv, NULL, 90, &a);
    rt_nvrtc_disk_cache_stats(&h, &s);
    ck_assert_uint_eq(h - h0, 0);
    ck_assert_uint_eq(s - s0, 1);
    char path[512];
    ck_assert_int_eq(files(dir, path, sizeof path), 1); /* the folder was made, parents too */
    rt_nvrtc_free(nv);

    nv = nvrtc(); /* a fresh handle, as another process would have */
    compile(nv, NULL, 90, &b);
    rt_nvrtc_disk_cache_stats(&h, &s);
    ck_assert_uint_eq(h - h0, 1);
    ck_assert_uint_eq(s - s0, 1);
    ck_assert_uint_eq(a.size, b.size);
    ck_assert(memcmp(a.data, b.data, a.size) == 0);
    ck_assert_str_eq(b.log, "");

    compile(nv, "-lineinfo", 90, &c); /* another key: compiled and stored */
    compile(nv, NULL, 80, &d);
    rt_nvrtc_disk_cache_stats(&h, &s);
    ck_assert_uint_eq(h - h0, 1);
    ck_assert_uint_eq(s - s0, 3);
    ck_assert_int_eq(files(dir, NULL, 0), 3);
    rt_cubin_fini(&b);
    rt_cubin_fini(&c);
    rt_cubin_fini(&d);

    /* a damaged file: compiled again and replaced */
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, 40, SEEK_SET);
    fputc('#', f);
    fclose(f);
    ck_assert_int_eq(truncate(path, 100), 0);
    rt_nvrtc_disk_cache_stats(&h0, &s0);
    compile(nv, NULL, 90, &b);
    compile(nv, NULL, 90, &c);
    rt_nvrtc_disk_cache_stats(&h, &s);
    ck_assert_uint_eq(s - s0, 1); /* the bad one compiled again and replaced ... */
    ck_assert_uint_eq(h - h0, 1); /* ... then read back */
    ck_assert_uint_eq(b.size, a.size);
    ck_assert(memcmp(a.data, b.data, a.size) == 0);
    ck_assert(memcmp(a.data, c.data, a.size) == 0);
    rt_cubin_fini(&b);
    rt_cubin_fini(&c);
    rt_nvrtc_free(nv);

    /* a folder that cannot be made: compiling works as without a cache */
    setenv("LUMINAL_KERNEL_CACHE", "/proc/no/such/folder", 1);
    nv = nvrtc();
    rt_nvrtc_disk_cache_stats(&h0, &s0);
    compile(nv, NULL, 90, &b);
    rt_nvrtc_disk_cache_stats(&h, &s);
    ck_assert_uint_eq(h - h0, 0);
    ck_assert_uint_eq(s - s0, 0);
    ck_assert(memcmp(a.data, b.data, a.size) == 0);
    rt_cubin_fini(&b);
    rt_nvrtc_free(nv);

    /* no variable: no cache */
    unsetenv("LUMINAL_KERNEL_CACHE");
    nv = nvrtc();
    compile(nv, NULL, 90, &b);
    rt_nvrtc_disk_cache_stats(&h, &s);
    ck_assert_uint_eq(h - h0, 0);
    ck_assert_uint_eq(s - s0, 0);
    rt_cubin_fini(&b);
    rt_nvrtc_free(nv);
    rt_cubin_fini(&a);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf /tmp/lm_kcache_%d", (int)getpid());
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *cache_suite(void)
{
    rt_nvrtc *nv = NULL;
    lm_err e = {0};
    if (rt_nvrtc_new(NULL, &nv, &e) != 0) lm_check_skip("NVRTC cannot be loaded: %s", e.msg);
    rt_nvrtc_free(nv);
    Suite *s = suite_create("kernel_cache");
    TCase *t = tcase_create("disk");
    tcase_set_timeout(t, 240);
    tcase_add_test(t, cubins_are_kept_on_disk);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {cache_suite, NULL};
