/* test_arena.c: the arena planner and the matmul workspace planner. */
#include "cuda_rt.h"
#include "lm_check.h"

#include <stdlib.h>
#include <string.h>

/* PCG32, seeded: the random plans are the same on every run. */
static uint64_t pcg_state = 0x853c49e6748fea9bull;
static uint32_t pcg32(void)
{
    uint64_t old = pcg_state;
    pcg_state = old * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t xs = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xs >> rot) | (xs << ((-rot) & 31));
}

START_TEST(arena_offsets_are_256_aligned)
{
    rt_arena_buf b[3] = {{1, 0, 0}, {300, 0, 0}, {17, 0, 0}};
    uint64_t off[3], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_plan(b, 3, NULL, 0, off, &peak, &err), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(off[i] % RT_ARENA_ALIGN, 0);
    ck_assert_uint_eq(peak % RT_ARENA_ALIGN, 0);
    ck_assert_uint_eq(peak, 512 + 256 + 256); /* 300 rounds to 512, 1 and 17 to 256 each */
    ck_assert_int_eq(rt_arena_check(b, 3, NULL, 0, off, peak, &err), 0);
}
END_TEST

START_TEST(arena_disjoint_intervals_share_bytes)
{
    rt_arena_buf b[2] = {{4096, 0, 1}, {4096, 2, 3}};
    uint64_t off[2], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_plan(b, 2, NULL, 0, off, &peak, &err), 0);
    ck_assert_uint_eq(off[0], off[1]);
    ck_assert_uint_eq(peak, 4096);
}
END_TEST

START_TEST(arena_overlapping_intervals_get_disjoint_bytes)
{
    rt_arena_buf b[2] = {{4096, 0, 2}, {1024, 2, 3}}; /* both live at step 2 */
    uint64_t off[2], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_plan(b, 2, NULL, 0, off, &peak, &err), 0);
    ck_assert(off[0] + 4096 <= off[1] || off[1] + 1024 <= off[0]);
    ck_assert_uint_eq(peak, 5120);
}
END_TEST

START_TEST(arena_conflict_pair_prevents_sharing)
{
    rt_arena_buf b[3] = {{4096, 0, 0}, {4096, 1, 1}, {4096, 2, 2}};
    rt_arena_pair p[1] = {{0, 2}};
    uint64_t off[3], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_plan(b, 3, p, 1, off, &peak, &err), 0);
    ck_assert_uint_ne(off[0], off[2]);
    ck_assert_uint_eq(off[0], off[1]); /* 1 is free to share with 0 */
    ck_assert_uint_eq(peak, 8192);
    ck_assert_int_eq(rt_arena_check(b, 3, p, 1, off, peak, &err), 0);
}
END_TEST

START_TEST(arena_random_plans_pass_the_checker_and_stay_near_the_bound)
{
    enum { N = 300, STEPS = 60 };
    rt_arena_buf b[N];
    rt_arena_pair p[100];
    uint64_t off[N], off2[N], peak, peak2;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < N; i++) {
            uint32_t first = pcg32() % STEPS;
            b[i] = (rt_arena_buf){(uint64_t)(pcg32() % 100000) + 1, first, first + pcg32() % 8};
        }
        for (int i = 0; i < 100; i++) {
            uint32_t a = pcg32() % N, c = pcg32() % N;
            if (a == c) c = (c + 1) % N;
            p[i] = (rt_arena_pair){a, c};
        }
        lm_err err = {0};
        ck_assert_int_eq(rt_arena_plan(b, N, p, 100, off, &peak, &err), 0);
        ck_assert_msg(rt_arena_check(b, N, p, 100, off, peak, &err) == 0, "%s", err.msg);
        /* lower bound: most bytes live at one step (without conflicts) */
        uint64_t bound = 0;
        for (uint32_t s = 0; s < STEPS + 8; s++) {
            uint64_t live = 0;
            for (int i = 0; i < N; i++)
                if (b[i].first <= s && s <= b[i].last) live += (b[i].bytes + 255) / 256 * 256;
            if (live > bound) bound = live;
        }
        ck_assert_uint_ge(peak, bound);
        ck_assert_msg(peak <= bound * 2, "peak %llu vs bound %llu", (unsigned long long)peak,
                      (unsigned long long)bound);
        /* deterministic */
        ck_assert_int_eq(rt_arena_plan(b, N, p, 100, off2, &peak2, &err), 0);
        ck_assert_uint_eq(peak, peak2);
        ck_assert_int_eq(memcmp(off, off2, sizeof off), 0);
    }
}
END_TEST

START_TEST(arena_rejects_bad_interval_naming_the_buffer)
{
    rt_arena_buf b[2] = {{16, 0, 0}, {16, 5, 3}};
    uint64_t off[2], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_plan(b, 2, NULL, 0, off, &peak, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "arena buffer 1"));
    ck_assert_ptr_nonnull(strstr(err.msg, "[5, 3]"));
}
END_TEST

START_TEST(arena_rejects_bad_pairs_naming_the_pair)
{
    rt_arena_buf b[2] = {{16, 0, 0}, {16, 1, 1}};
    rt_arena_pair p[2] = {{0, 1}, {1, 7}};
    uint64_t off[2], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_plan(b, 2, p, 2, off, &peak, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "conflict pair 1"));
    rt_arena_pair self[1] = {{1, 1}};
    lm_err_clear(&err);
    ck_assert_int_eq(rt_arena_plan(b, 2, self, 1, off, &peak, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "itself"));
}
END_TEST

START_TEST(arena_check_catches_a_forbidden_overlap)
{
    rt_arena_buf b[2] = {{512, 0, 0}, {512, 1, 1}};
    rt_arena_pair p[1] = {{0, 1}};
    uint64_t off[2] = {0, 256};
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_check(b, 2, p, 1, off, 768, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "conflict pair 0"));
    uint64_t misaligned[2] = {0, 100};
    lm_err_clear(&err);
    ck_assert_int_eq(rt_arena_check(b, 2, NULL, 0, misaligned, 768, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "aligned"));
}
END_TEST

START_TEST(errors_are_sticky)
{
    rt_arena_buf bad[1] = {{16, 2, 1}}, good[1] = {{16, 0, 0}};
    uint64_t off[1], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_plan(bad, 1, NULL, 0, off, &peak, &err), RT_EARG);
    char first[LM_ERR_MSG];
    strcpy(first, err.msg);
    ck_assert_int_eq(rt_arena_plan(good, 1, NULL, 0, off, &peak, &err), RT_EARG);
    ck_assert_str_eq(err.msg, first);
    lm_err_clear(&err);
    ck_assert_int_eq(rt_arena_plan(good, 1, NULL, 0, off, &peak, &err), 0);
}
END_TEST

/* The module's errors are the project's: base's record and codes, and an error another
 * module left in the record is kept (one numbering, one sticky record for every layer). */
START_TEST(errors_are_base_records_with_base_codes)
{
    rt_arena_buf bad[1] = {{16, 2, 1}};
    uint64_t off[1], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_arena_plan(bad, 1, NULL, 0, off, &peak, &err), LM_EARG);
    ck_assert_str_eq(lm_code_ident(err.code), "LM_EARG");
    const char *where = strstr(err.msg, " [cuda_rt/rt_arena.c:");
    ck_assert_msg(where && where[strlen(where) - 1] == ']', "%s", err.msg);
    lm_err_clear(&err);
    ck_assert_int_eq(lm_err_set(&err, LM_EPARSE, NULL, "from another layer"), LM_EPARSE);
    ck_assert_int_eq(rt_arena_plan(bad, 1, NULL, 0, off, &peak, &err), LM_EPARSE);
    ck_assert_str_eq(err.msg, "from another layer");
}
END_TEST

START_TEST(workspace_chain_shares_one_workspace)
{
    uint64_t sizes[3] = {1 << 20, 1 << 20, 1 << 19};
    rt_arena_pair deps[2] = {{0, 1}, {1, 2}};
    uint64_t off[3], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_matmul_workspace_plan(sizes, 3, deps, 2, off, &peak, &err), 0);
    ck_assert_uint_eq(peak, 1 << 20);
}
END_TEST

START_TEST(workspace_independent_calls_never_share)
{
    /* diamond 0 -> {1, 2} -> 3: 1 and 2 may run at once */
    uint64_t sizes[4] = {4096, 4096, 4096, 4096};
    rt_arena_pair deps[4] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
    uint64_t off[4], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_matmul_workspace_plan(sizes, 4, deps, 4, off, &peak, &err), 0);
    ck_assert_uint_ne(off[1], off[2]);
    ck_assert_uint_eq(peak, 8192);
    /* no deps at all: every call has its own bytes */
    ck_assert_int_eq(rt_matmul_workspace_plan(sizes, 4, NULL, 0, off, &peak, &err), 0);
    ck_assert_uint_eq(peak, 4 * 4096);
    /* transitive dependency 0 -> 1 -> 2 lets 0 and 2 share */
    rt_arena_pair chain[2] = {{0, 1}, {1, 2}};
    uint64_t s3[3] = {4096, 8192, 4096};
    ck_assert_int_eq(rt_matmul_workspace_plan(s3, 3, chain, 2, off, &peak, &err), 0);
    ck_assert_uint_eq(peak, 8192);
}
END_TEST

START_TEST(workspace_plan_rejects_backward_dependency)
{
    uint64_t sizes[2] = {16, 16};
    rt_arena_pair deps[1] = {{1, 0}};
    uint64_t off[2], peak;
    lm_err err = {0};
    ck_assert_int_eq(rt_matmul_workspace_plan(sizes, 2, deps, 1, off, &peak, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "dependency 0"));
}
END_TEST

static Suite *cuda_rt_arena_suite(void)
{
    Suite *s = suite_create("cuda_rt_arena");
    TCase *tc = tcase_create("arena");
    tcase_add_test(tc, arena_offsets_are_256_aligned);
    tcase_add_test(tc, arena_disjoint_intervals_share_bytes);
    tcase_add_test(tc, arena_overlapping_intervals_get_disjoint_bytes);
    tcase_add_test(tc, arena_conflict_pair_prevents_sharing);
    tcase_add_test(tc, arena_random_plans_pass_the_checker_and_stay_near_the_bound);
    tcase_add_test(tc, arena_rejects_bad_interval_naming_the_buffer);
    tcase_add_test(tc, arena_rejects_bad_pairs_naming_the_pair);
    tcase_add_test(tc, arena_check_catches_a_forbidden_overlap);
    tcase_add_test(tc, errors_are_sticky);
    tcase_add_test(tc, errors_are_base_records_with_base_codes);
    tcase_add_test(tc, workspace_chain_shares_one_workspace);
    tcase_add_test(tc, workspace_independent_calls_never_share);
    tcase_add_test(tc, workspace_plan_rejects_backward_dependency);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {cuda_rt_arena_suite, NULL};
