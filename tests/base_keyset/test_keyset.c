/* test_keyset.c - lm_keyset (base/lm_keyset.h): the set the search and the fuzzer keep
 * their seen genome hashes and program fingerprints in. */
#include "lm_check.h"
#include "lm_keyset.h"
#include "base.h"

/* Keys as the callers have them: well mixed 64-bit hashes (PCG32 pairs). */
static uint64_t key(lm_pcg32 *r)
{
    return ((uint64_t)lm_pcg_next(r) << 32) | lm_pcg_next(r);
}

START_TEST(membership)
{
    lm_keyset k = {0};
    ck_assert(!lm_keyset_has(&k, 1, 2)); /* the empty set holds nothing */
    ck_assert_int_eq(lm_keyset_add(&k, 1, 2), 1);
    ck_assert_int_eq(lm_keyset_add(&k, 1, 2), 0);
    ck_assert(lm_keyset_has(&k, 1, 2));
    ck_assert(!lm_keyset_has(&k, 2, 1)); /* both halves count, in their places */
    ck_assert(!lm_keyset_has(&k, 1, 0));
    /* a 64-bit key is (key, 0): apart from (key, anything else) */
    ck_assert_int_eq(lm_keyset_add(&k, 1, 0), 1);
    ck_assert_int_eq(lm_keyset_add(&k, 0, 0), 1); /* zero is a key like any other */
    ck_assert(lm_keyset_has(&k, 0, 0));
    ck_assert_uint_eq(k.n, 3);
    lm_keyset_fini(&k);
    ck_assert_uint_eq(k.n, 0);
    ck_assert(!lm_keyset_has(&k, 1, 2));
    lm_keyset_fini(&k); /* twice is fine */
}
END_TEST

START_TEST(growth_keeps_every_key)
{
    enum { N = 200000 };
    lm_keyset k = {0};
    lm_pcg32 r;
    lm_pcg_seed(&r, 42, 7);
    for (uint32_t i = 0; i < N; i++) {
        uint64_t lo = key(&r), hi = i % 3 ? key(&r) : 0;
        ck_assert_int_eq(lm_keyset_add(&k, lo, hi), 1);
    }
    ck_assert_uint_eq(k.n, N);
    ck_assert_uint_ge(k.cap, 2 * (size_t)N); /* at most half full */
    lm_pcg_seed(&r, 42, 7); /* the same keys again: all present, none added */
    for (uint32_t i = 0; i < N; i++) {
        uint64_t lo = key(&r), hi = i % 3 ? key(&r) : 0;
        ck_assert(lm_keyset_has(&k, lo, hi));
        ck_assert_int_eq(lm_keyset_add(&k, lo, hi), 0);
    }
    ck_assert_uint_eq(k.n, N);
    lm_pcg_seed(&r, 43, 7); /* other keys: absent */
    uint32_t found = 0;
    for (uint32_t i = 0; i < 10000; i++)
        found += lm_keyset_has(&k, key(&r), key(&r));
    ck_assert_uint_eq(found, 0);
    lm_keyset_fini(&k);
}
END_TEST

/* Growing past the memory there is: -1, and the set holds what it held. */
START_TEST(out_of_memory_leaves_the_set_as_it_was)
{
    lm_keyset k = {0};
    lm_mem_fail_after(0); /* the first table */
    ck_assert_int_eq(lm_keyset_add(&k, 5, 6), -1);
    ck_assert(lm_mem_fail_fired());
    lm_mem_fail_after(-1);
    ck_assert_uint_eq(k.n, 0);
    ck_assert_uint_eq(k.cap, 0);
    ck_assert(!lm_keyset_has(&k, 5, 6));
    /* fill the first table to half: the next new key needs a larger one */
    uint32_t i = 0;
    while ((k.n + 1) * 2 <= k.cap || k.cap == 0) {
        ck_assert_int_eq(lm_keyset_add(&k, 1000 + i, i), 1);
        i++;
    }
    size_t cap = k.cap, n = k.n;
    for (long f = 0; f < 3; f++) { /* each of the growth's three blocks fails in turn */
        lm_mem_fail_after(f);
        ck_assert_int_eq(lm_keyset_add(&k, 77, 77), -1);
        ck_assert(lm_mem_fail_fired());
        lm_mem_fail_after(-1);
        ck_assert_uint_eq(k.cap, cap);
        ck_assert_uint_eq(k.n, n);
        ck_assert(!lm_keyset_has(&k, 77, 77));
        for (uint32_t j = 0; j < i; j++)
            ck_assert(lm_keyset_has(&k, 1000 + j, j));
    }
    /* a key already there needs no growth: found even while allocations fail */
    lm_mem_fail_after(0);
    ck_assert_int_eq(lm_keyset_add(&k, 1000, 0), 0);
    ck_assert(!lm_mem_fail_fired());
    lm_mem_fail_after(-1);
    ck_assert_int_eq(lm_keyset_add(&k, 77, 77), 1);
    ck_assert_uint_gt(k.cap, cap);
    lm_keyset_fini(&k);
}
END_TEST

static Suite *keyset_suite(void)
{
    Suite *s = suite_create("base_keyset");
    TCase *t = tcase_create("keyset");
    tcase_add_test(t, membership);
    tcase_add_test(t, growth_keeps_every_key);
    tcase_add_test(t, out_of_memory_leaves_the_set_as_it_was);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {keyset_suite, NULL};
