/* test_nvrtc.c: NVRTC without a GPU: kernels compile to sm_90 CUBIN, and a compile error
 * comes back with NVRTC's log and the offending source lines. */
#include "cuda_rt.h"
#include "lm_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVRTC, which the suite constructor found loadable. */
static rt_nvrtc *open_nvrtc(void)
{
    rt_nvrtc *nv = NULL;
    lm_err err = {0};
    ck_assert_msg(rt_nvrtc_new(NULL, &nv, &err) == 0, "%s", err.msg);
    return nv;
}

START_TEST(nvrtc_compiles_a_kernel_to_sm90_cubin)
{
    rt_nvrtc *nv = open_nvrtc();
    int major, minor;
    rt_nvrtc_version(nv, &major, &minor);
    ck_assert_int_ge(major, 12);
    const char *src =
        "extern \"C\" __global__ void copy16(const uint4 *__restrict__ s, uint4 *__restrict__ d,\n"
        "                                    unsigned long long n) {\n"
        "  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
        "  if (i < n) d[i] = s[i];\n"
        "}\n";
    rt_cubin bin;
    lm_err err = {0};
    const char *opts[] = {"-lineinfo"};
    ck_assert_msg(rt_nvrtc_compile(nv, src, "copy16.cu", 90, opts, 1, &bin, &err) == 0, "%s",
                  err.msg);
    ck_assert_uint_gt(bin.size, 64);
    ck_assert_int_eq(memcmp(bin.data,
                            "\x7f"
                            "ELF",
                            4),
                     0); /* CUBIN is an ELF image */
    rt_cubin_fini(&bin);
    rt_nvrtc_free(nv);
}
END_TEST

START_TEST(nvrtc_compile_error_carries_log_and_source_line)
{
    rt_nvrtc *nv = open_nvrtc();
    const char *src = "extern \"C\" __global__ void broken(float *x) {\n"
                      "  float y = x[0];\n"
                      "  x[1] = y + undefined_thing;\n"
                      "}\n";
    rt_cubin bin;
    lm_err err = {0};
    ck_assert_int_eq(rt_nvrtc_compile(nv, src, "broken.cu", 90, NULL, 0, &bin, &err), RT_ECOMPILE);
    ck_assert_ptr_null(bin.data);
    ck_assert_msg(strstr(err.msg, "undefined_thing") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "broken.cu(3)") != NULL, "%s", err.msg); /* NVRTC's log */
    ck_assert_msg(strstr(err.msg, "line 3:   x[1] = y + undefined_thing;") != NULL, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, "sm_90"));
    rt_nvrtc_free(nv);
}
END_TEST

START_TEST(nvrtc_rejects_a_non_architecture)
{
    rt_nvrtc *nv = open_nvrtc();
    rt_cubin bin;
    lm_err err = {0};
    ck_assert_int_eq(rt_nvrtc_compile(nv, "", "x.cu", 9, NULL, 0, &bin, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "arch 9"));
    rt_nvrtc_free(nv);
}
END_TEST

/* Where NVRTC cannot be loaded the program checks nothing: it is skipped (exit 77) after
 * checking that the message names the way to point at the library. */
static Suite *cuda_rt_nvrtc_suite(void)
{
    rt_nvrtc *nv = NULL;
    lm_err err = {0};
    if (rt_nvrtc_new(NULL, &nv, &err) != 0) {
        if (err.code != RT_ENVRTC || !strstr(err.msg, "LUMINAL_CUDA_LIB_DIR")) {
            fprintf(stderr, "NVRTC failed to load without naming LUMINAL_CUDA_LIB_DIR: %s\n",
                    err.msg);
            return NULL;
        }
        lm_check_skip("%s", err.msg);
    }
    rt_nvrtc_free(nv);
    Suite *s = suite_create("cuda_rt_nvrtc");
    TCase *tc = tcase_create("nvrtc");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, nvrtc_compiles_a_kernel_to_sm90_cubin);
    tcase_add_test(tc, nvrtc_compile_error_carries_log_and_source_line);
    tcase_add_test(tc, nvrtc_rejects_a_non_architecture);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {cuda_rt_nvrtc_suite, NULL};
