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

static Suite *keyset_suite(void)
{
    Suite *s = suite_create("base_keyset");
    TCase *t = tcase_create("keyset");
    tcase_add_test(t, membership);
    tcase_add_test(t, growth_keeps_every_key);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {keyset_suite, NULL};
