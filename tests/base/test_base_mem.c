/* test_base_mem.c - the one counted allocation door (base.h, "Memory"), lm_grow and
 * lm_mkdir_p: sizes are checked for overflow, the test hook fails exactly the n-th
 * request (once) whichever function makes it, the counters see every request, a failed
 * grow or realloc leaves the caller's block as it was, and mkdir -p names what is in
 * the way. */
#include "base.h"
#include "lm_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(sizes_are_checked_for_overflow)
{
    ck_assert_ptr_null(lm_alloc(SIZE_MAX / 2 + 1, 2));
    ck_assert_ptr_null(lm_zalloc(SIZE_MAX / 8, 16));
    char *p = lm_alloc(4, 1);
    ck_assert_ptr_nonnull(p);
    memcpy(p, "abc", 4);
    ck_assert_ptr_null(lm_realloc(p, SIZE_MAX / 4 + 1, 4));
    ck_assert_str_eq(p, "abc"); /* untouched and still ours */
    lm_free(p);
    /* 0 bytes is a valid block, not NULL */
    void *z = lm_alloc(0, 8);
    ck_assert_ptr_nonnull(z);
    lm_free(z);
    z = lm_zalloc(5, 0);
    ck_assert_ptr_nonnull(z);
    lm_free(z);
}
END_TEST

START_TEST(zalloc_zeroes_and_strdup_copies)
{
    uint64_t *z = lm_zalloc(64, sizeof *z);
    ck_assert_ptr_nonnull(z);
    for (int i = 0; i < 64; i++)
        ck_assert_uint_eq(z[i], 0);
    lm_free(z);
    char *s = lm_strdup("hello");
    ck_assert_str_eq(s, "hello");
    lm_free(s);
    ck_assert_ptr_null(lm_strdup(NULL));
    s = lm_strndup("hello", 3);
    ck_assert_str_eq(s, "hel");
    free(s); /* a block of the door may be given back with free() */
}
END_TEST

/* The hook fails exactly the request after the next n, once, whichever function it is. */
START_TEST(the_hook_fails_the_nth_request_once)
{
    for (long n = 0; n < 6; n++) {
        lm_mem_fail_after(n);
        ck_assert(!lm_mem_fail_fired());
        void *got[6];
        for (long i = 0; i < 6; i++) {
            switch (i % 3) {
            case 0: got[i] = lm_alloc(1, 16); break;
            case 1: got[i] = lm_zalloc(2, 8); break;
            default: got[i] = lm_strdup("x"); break;
            }
            if (i == n) {
                ck_assert_ptr_null(got[i]);
                ck_assert(lm_mem_fail_fired());
            } else {
                ck_assert_ptr_nonnull(got[i]);
                ck_assert(lm_mem_fail_fired() == (i > n));
            }
        }
        for (int i = 0; i < 6; i++)
            lm_free(got[i]);
    }
    /* -1 disables it */
    lm_mem_fail_after(-1);
    for (int i = 0; i < 100; i++) {
        void *p = lm_alloc(1, 1);
        ck_assert_ptr_nonnull(p);
        lm_free(p);
    }
    ck_assert(!lm_mem_fail_fired());
    /* a door with its own allocator asks lm_mem_admit and fails with everyone else */
    lm_mem_fail_after(1);
    ck_assert(lm_mem_admit(3, 4));
    ck_assert(!lm_mem_admit(3, 4));
    ck_assert(lm_mem_fail_fired());
    ck_assert(lm_mem_admit(3, 4));
    ck_assert(!lm_mem_admit(SIZE_MAX, 2)); /* overflow is refused without the hook */
    lm_mem_fail_after(-1);
}
END_TEST

START_TEST(a_failed_realloc_leaves_the_block)
{
    char *p = lm_strdup("keep me");
    lm_mem_fail_after(0);
    ck_assert_ptr_null(lm_realloc(p, 100, 1));
    ck_assert(lm_mem_fail_fired());
    ck_assert_str_eq(p, "keep me");
    char *q = lm_realloc(p, 100, 1);
    ck_assert_ptr_nonnull(q);
    ck_assert_str_eq(q, "keep me");
    lm_free(q);
}
END_TEST

START_TEST(the_counters_see_every_request)
{
    lm_mem_stats_reset();
    uint64_t calls = 99;
    size_t largest = 99;
    lm_mem_stats(&calls, &largest);
    ck_assert_uint_eq(calls, 0);
    ck_assert_uint_eq(largest, 0);
    void *a = lm_alloc(10, 3);
    void *b = lm_zalloc(7, 1);
    lm_mem_fail_after(0);
    ck_assert_ptr_null(lm_alloc(1000, 1)); /* a failed request is counted too */
    ck_assert_ptr_null(lm_alloc(SIZE_MAX, 4));
    lm_mem_stats(&calls, NULL);
    ck_assert_uint_eq(calls, 4);
    lm_mem_stats(NULL, &largest);
    ck_assert_uint_eq(largest, SIZE_MAX); /* the overflowing one, saturated */
    lm_free(a);
    lm_free(b);
    lm_mem_stats_reset();
    a = lm_alloc(10, 3);
    lm_mem_stats(&calls, &largest);
    ck_assert_uint_eq(calls, 1);
    ck_assert_uint_eq(largest, 30);
    lm_free(a);
}
END_TEST

START_TEST(grow_doubles_and_keeps_on_failure)
{
    int *a = NULL;
    uint32_t cap = 0;
    ck_assert_int_eq(lm_grow((void **)&a, &cap, 1, sizeof *a), 0);
    ck_assert_uint_eq(cap, LM_GROW_FIRST);
    for (uint32_t i = 0; i < cap; i++)
        a[i] = (int)i;
    ck_assert_int_eq(lm_grow((void **)&a, &cap, 5, sizeof *a), 0); /* fits: nothing */
    ck_assert_uint_eq(cap, LM_GROW_FIRST);
    ck_assert_int_eq(lm_grow((void **)&a, &cap, 3 * LM_GROW_FIRST + 1, sizeof *a), 0);
    ck_assert_uint_eq(cap, 4 * LM_GROW_FIRST);
    for (int i = 0; i < LM_GROW_FIRST; i++)
        ck_assert_int_eq(a[i], i);
    int *before = a;
    lm_mem_fail_after(0);
    ck_assert_int_eq(lm_grow((void **)&a, &cap, 1000, sizeof *a), -1);
    ck_assert(lm_mem_fail_fired());
    ck_assert_ptr_eq(a, before);
    ck_assert_uint_eq(cap, 4 * LM_GROW_FIRST);
    /* a size that overflows is refused, the array as it was */
    ck_assert_int_eq(lm_grow((void **)&a, &cap, UINT32_MAX, SIZE_MAX / 1024), -1);
    ck_assert_ptr_eq(a, before);
    ck_assert_uint_eq(cap, 4 * LM_GROW_FIRST);
    for (int i = 0; i < LM_GROW_FIRST; i++)
        ck_assert_int_eq(a[i], i);
    lm_free(a);
}
END_TEST

static char tmpdir[256];

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/lm_base_mem_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

START_TEST(mkdir_p_makes_parents)
{
    make_tmp();
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/a/b//c/", tmpdir);
    lm_err e = {0};
    ck_assert_int_eq(lm_mkdir_p(p, &e), 0);
    ck_assert_int_eq(e.code, LM_OK);
    snprintf(q, sizeof q, "%s/a/b/c", tmpdir);
    ck_assert(is_dir(q));
    /* an existing directory is success */
    ck_assert_int_eq(lm_mkdir_p(q, &e), 0);
    ck_assert_int_eq(lm_mkdir_p(tmpdir, &e), 0);
    ck_assert_int_eq(lm_mkdir_p("/", &e), 0);
    ck_assert_int_eq(e.code, LM_OK);
    rmdir(q);
    snprintf(q, sizeof q, "%s/a/b", tmpdir);
    rmdir(q);
    snprintf(q, sizeof q, "%s/a", tmpdir);
    rmdir(q);
    rmdir(tmpdir);
}
END_TEST

START_TEST(mkdir_p_names_what_is_in_the_way)
{
    make_tmp();
    char f[512], p[512];
    snprintf(f, sizeof f, "%s/file", tmpdir);
    FILE *fp = fopen(f, "w");
    ck_assert_ptr_nonnull(fp);
    fclose(fp);
    snprintf(p, sizeof p, "%s/file/sub/dir", tmpdir);
    lm_err e = {0};
    ck_assert_int_eq(lm_mkdir_p(p, &e), LM_EIO);
    ck_assert_int_eq(e.code, LM_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, p));                 /* the path asked for */
    ck_assert_ptr_nonnull(strstr(e.msg, "/file: "));         /* the part that failed */
    ck_assert_ptr_nonnull(strstr(e.msg, "cannot make the directory"));
    lm_err_clear(&e);
    /* the file itself is in the way */
    ck_assert_int_eq(lm_mkdir_p(f, &e), LM_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "a file of that name is in the way"));
    lm_err_clear(&e);
    ck_assert_int_eq(lm_mkdir_p("", &e), LM_EARG);
    lm_err_clear(&e);
    /* out of memory is a clean error */
    lm_mem_fail_after(0);
    ck_assert_int_eq(lm_mkdir_p(p, &e), LM_ENOMEM);
    lm_mem_fail_after(-1);
    unlink(f);
    rmdir(tmpdir);
}
END_TEST

static Suite *mem_suite(void)
{
    Suite *s = suite_create("base_mem");
    TCase *tc = tcase_create("mem");
    tcase_add_test(tc, sizes_are_checked_for_overflow);
    tcase_add_test(tc, zalloc_zeroes_and_strdup_copies);
    tcase_add_test(tc, the_hook_fails_the_nth_request_once);
    tcase_add_test(tc, a_failed_realloc_leaves_the_block);
    tcase_add_test(tc, the_counters_see_every_request);
    tcase_add_test(tc, grow_doubles_and_keeps_on_failure);
    tcase_add_test(tc, mkdir_p_makes_parents);
    tcase_add_test(tc, mkdir_p_names_what_is_in_the_way);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {mem_suite, NULL};
