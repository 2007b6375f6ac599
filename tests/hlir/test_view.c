/* test_view.c - shape trackers: each view change, the flat index expression checked
 * against a brute-force walk, and the changes that must be refused. */
#include "hlir.h"
#include "lm_check.h"

#include <stdlib.h>
#include <string.h>

static hl_expr_pool *P;
static lm_err E;
static void setup(void)
{
    P = hl_expr_pool_new();
    lm_err_clear(&E);
}
static void teardown(void)
{
    hl_expr_pool_free(P);
}

static hl_expr N(int64_t v)
{
    return hl_e_num(P, v);
}
static hl_expr X(const char *t)
{
    hl_expr e;
    ck_assert_int_eq(hl_e_parse(P, t, &e, NULL), HL_OK);
    return e;
}

static hl_view contig(uint32_t n, const int64_t *d)
{
    hl_expr dims[HL_MAX_DIMS];
    for (uint32_t i = 0; i < n; i++)
        dims[i] = N(d[i]);
    hl_view v;
    ck_assert_int_eq(hl_view_contiguous(P, n, dims, &v, &E), HL_OK);
    return v;
}

/* Position of logical element k by walking dims and evaluating each stride. */
static int64_t brute_pos(const hl_view *v, int64_t k, const hl_env *env)
{
    int64_t pos = 0;
    for (uint32_t d = v->ndim; d-- > 0;) {
        int64_t n, s;
        ck_assert_int_eq(hl_e_eval(P, v->dims[d], env, 0, &n, NULL), HL_OK);
        ck_assert_int_eq(hl_e_eval(P, v->strides[d], env, k % n, &s, NULL), HL_OK);
        pos += s;
        k /= n;
    }
    return pos;
}

static void index_matches_brute(const hl_view *v, int64_t numel, const hl_env *env)
{
    hl_expr idx = hl_view_index(P, v);
    ck_assert_uint_ne(idx, HL_NONE);
    for (int64_t k = 0; k < numel; k++) {
        int64_t got;
        ck_assert_int_eq(hl_e_eval(P, idx, env, k, &got, NULL), HL_OK);
        ck_assert_int_eq(got, brute_pos(v, k, env));
    }
}

START_TEST(contiguous_strides_are_z_times_inner)
{
    hl_view v = contig(3, (int64_t[]){2, 3, 4});
    ck_assert_uint_eq(v.strides[0], X("12*z"));
    ck_assert_uint_eq(v.strides[1], X("4*z"));
    ck_assert_uint_eq(v.strides[2], X("z"));
    ck_assert(hl_view_is_contiguous(P, &v));
    hl_view s;
    ck_assert_int_eq(hl_view_contiguous(P, 0, NULL, &s, &E), HL_OK);
    ck_assert_uint_eq(s.ndim, 0);
    ck_assert_uint_eq(hl_view_numel(P, &s), N(1));
}
END_TEST

START_TEST(symbolic_contiguous_strides)
{
    hl_expr dims[3] = {X("b"), X("s"), N(8)};
    hl_view v;
    ck_assert_int_eq(hl_view_contiguous(P, 3, dims, &v, &E), HL_OK);
    ck_assert_uint_eq(v.strides[0], X("8*s*z"));
    ck_assert_uint_eq(hl_view_numel(P, &v), X("b*s*8"));
}
END_TEST

START_TEST(contiguous_index_is_z)
{
    /* the flat index of a contiguous view is z itself, with symbolic dims too: a kernel
     * reading it needs no division */
    hl_expr dims[3] = {N(32), X("s"), X("s")};
    hl_view v;
    ck_assert_int_eq(hl_view_contiguous(P, 3, dims, &v, &E), HL_OK);
    ck_assert_uint_eq(hl_view_index(P, &v), hl_e_z(P));
    hl_expr dims4[4] = {X("b"), X("s"), N(8), X("s")};
    ck_assert_int_eq(hl_view_contiguous(P, 4, dims4, &v, &E), HL_OK);
    ck_assert_uint_eq(hl_view_index(P, &v), hl_e_z(P));
    /* a row broadcast along the last dim reads z / s */
    hl_view r;
    ck_assert_int_eq(hl_view_contiguous(P, 3, (hl_expr[]){N(32), X("s"), N(1)}, &r, &E), HL_OK);
    hl_view b;
    ck_assert_int_eq(hl_view_broadcast(P, &r, 2, X("s"), &b, &E), HL_OK);
    ck_assert_uint_eq(hl_view_index(P, &b), X("z/s"));
    /* an (s, s) mask broadcast over 32 heads reads z % (s*s) */
    hl_view m, mb;
    ck_assert_int_eq(hl_view_contiguous(P, 3, (hl_expr[]){N(1), X("s"), X("s")}, &m, &E), HL_OK);
    ck_assert_int_eq(hl_view_broadcast(P, &m, 0, N(32), &mb, &E), HL_OK);
    ck_assert_uint_eq(hl_view_index(P, &mb), X("z%(s*s)"));
}
END_TEST

START_TEST(permute_moves_dims_and_strides)
{
    hl_view v = contig(3, (int64_t[]){2, 3, 4}), p;
    ck_assert_int_eq(hl_view_permute(P, &v, (uint32_t[]){2, 0, 1}, &p, &E), HL_OK);
    ck_assert_uint_eq(p.dims[0], N(4));
    ck_assert_uint_eq(p.strides[0], X("z"));
    ck_assert_uint_eq(p.strides[1], X("12*z"));
    ck_assert(!hl_view_is_contiguous(P, &p));
    index_matches_brute(&p, 24, NULL);
    ck_assert_int_eq(hl_view_permute(P, &v, (uint32_t[]){0, 0, 1}, &p, &E), HL_ERR_ARG);
}
END_TEST

START_TEST(expand_inserts_a_zero_stride_dim)
{
    hl_view v = contig(2, (int64_t[]){2, 3}), e;
    ck_assert_int_eq(hl_view_expand(P, &v, 1, N(5), &e, &E), HL_OK);
    ck_assert_uint_eq(e.ndim, 3);
    ck_assert_uint_eq(e.dims[1], N(5));
    ck_assert_uint_eq(e.strides[1], N(0));
    index_matches_brute(&e, 30, NULL);
    ck_assert_int_eq(hl_view_expand(P, &v, 3, N(5), &e, &E), HL_ERR_ARG);
}
END_TEST

START_TEST(broadcast_only_stretches_size_one)
{
    hl_view v = contig(2, (int64_t[]){1, 3}), b;
    ck_assert_int_eq(hl_view_broadcast(P, &v, 0, N(4), &b, &E), HL_OK);
    ck_assert_uint_eq(b.strides[0], N(0));
    ck_assert_int_eq(hl_view_broadcast(P, &v, 1, N(4), &b, &E), HL_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(E.msg, "only size 1"));
}
END_TEST

START_TEST(merging_contiguous_dims_stays_contiguous)
{
    hl_expr dims[3] = {X("b"), X("s"), N(8)};
    hl_view v, m, m2, c;
    ck_assert_int_eq(hl_view_contiguous(P, 3, dims, &v, &E), HL_OK);
    ck_assert_int_eq(hl_view_merge(P, &v, 1, &m, &E), HL_OK);
    ck_assert_int_eq(hl_view_merge(P, &m, 0, &m2, &E), HL_OK);
    hl_expr flat[1] = {X("b*s*8")};
    ck_assert_int_eq(hl_view_contiguous(P, 1, flat, &c, &E), HL_OK);
    ck_assert(hl_view_equal(&m2, &c));
    ck_assert_uint_eq(m2.strides[0], hl_e_z(P));
}
END_TEST

START_TEST(merging_permuted_dims_keeps_positions)
{
    hl_view v = contig(3, (int64_t[]){2, 3, 4}), p, m;
    ck_assert_int_eq(hl_view_permute(P, &v, (uint32_t[]){0, 2, 1}, &p, &E), HL_OK);
    ck_assert_int_eq(hl_view_merge(P, &p, 1, &m, &E), HL_OK);
    ck_assert_uint_eq(m.ndim, 2);
    ck_assert_uint_eq(m.dims[1], N(12));
    for (int64_t k = 0; k < 24; k++)
        ck_assert_int_eq(brute_pos(&m, k, NULL), brute_pos(&p, k, NULL));
}
END_TEST

START_TEST(split_needs_a_linear_stride)
{
    hl_view v = contig(2, (int64_t[]){6, 4}), s, p, m;
    ck_assert_int_eq(hl_view_split(P, &v, 0, N(3), &s, &E), HL_OK);
    ck_assert_uint_eq(s.ndim, 3);
    ck_assert_uint_eq(s.dims[0], N(2));
    ck_assert_uint_eq(s.strides[0], X("12*z"));
    ck_assert_uint_eq(s.strides[1], X("4*z"));
    ck_assert(hl_view_is_contiguous(P, &s));
    ck_assert_int_eq(hl_view_split(P, &v, 0, N(4), &s, &E), HL_ERR_SHAPE); /* 6 % 4 */
    lm_err_clear(&E);
    ck_assert_int_eq(hl_view_permute(P, &v, (uint32_t[]){1, 0}, &p, &E), HL_OK);
    ck_assert_int_eq(hl_view_merge(P, &p, 0, &m, &E), HL_OK);
    ck_assert_int_eq(hl_view_split(P, &m, 0, N(4), &s, &E), HL_ERR_VIEW);
    ck_assert_ptr_nonnull(strstr(E.msg, "non-linear"));
}
END_TEST

START_TEST(slice_shrinks_from_zero)
{
    hl_view v = contig(2, (int64_t[]){4, 5}), s;
    ck_assert_int_eq(hl_view_slice(P, &v, 1, N(2), &s, &E), HL_OK);
    ck_assert_uint_eq(s.dims[1], N(2));
    ck_assert_uint_eq(s.strides[0], X("5*z"));
    index_matches_brute(&s, 8, NULL);
    ck_assert_int_eq(hl_view_slice(P, &v, 1, N(6), &s, &E), HL_ERR_SHAPE);
}
END_TEST

START_TEST(squeeze_removes_size_one)
{
    hl_view v = contig(3, (int64_t[]){2, 1, 3}), s;
    ck_assert_int_eq(hl_view_squeeze(P, &v, 1, &s, &E), HL_OK);
    ck_assert_uint_eq(s.ndim, 2);
    ck_assert_int_eq(hl_view_squeeze(P, &v, 0, &s, &E), HL_ERR_SHAPE);
}
END_TEST

START_TEST(index_of_a_symbolic_view_evaluates_correctly)
{
    hl_expr dims[3] = {X("s"), N(3), N(2)};
    hl_view v, p, e;
    ck_assert_int_eq(hl_view_contiguous(P, 3, dims, &v, &E), HL_OK);
    ck_assert_int_eq(hl_view_permute(P, &v, (uint32_t[]){2, 0, 1}, &p, &E), HL_OK);
    ck_assert_int_eq(hl_view_expand(P, &p, 1, N(2), &e, &E), HL_OK);
    int64_t vals[1] = {5};
    hl_env env = {vals, NULL, 1};
    index_matches_brute(&e, 2 * 2 * 5 * 3, &env);
}
END_TEST

START_TEST(out_may_alias_the_input)
{
    hl_view v = contig(2, (int64_t[]){2, 3});
    ck_assert_int_eq(hl_view_permute(P, &v, (uint32_t[]){1, 0}, &v, &E), HL_OK);
    ck_assert_uint_eq(v.dims[0], N(3));
    ck_assert_uint_eq(v.strides[1], X("3*z"));
    ck_assert_int_eq(hl_view_merge(P, &v, 0, &v, &E), HL_OK);
    ck_assert_uint_eq(v.ndim, 1);
}
END_TEST

START_TEST(failure_leaves_out_untouched)
{
    hl_view v = contig(2, (int64_t[]){2, 3}), out = v;
    ck_assert_int_eq(hl_view_squeeze(P, &v, 0, &out, &E), HL_ERR_SHAPE);
    ck_assert(hl_view_equal(&out, &v));
}
END_TEST

static uint64_t VS = 2024;
static uint32_t vr(uint32_t n)
{
    VS = VS * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(VS >> 33) % n;
}

static int64_t numel_of(const hl_view *v)
{
    int64_t n;
    ck_assert_int_eq(hl_e_eval(P, hl_view_numel(P, v), NULL, 0, &n, NULL), HL_OK);
    return n;
}

START_TEST(random_view_changes_keep_positions)
{
    for (int trial = 0; trial < 300; trial++) {
        uint32_t nd = 1 + vr(3);
        int64_t dims[3];
        for (uint32_t i = 0; i < nd; i++)
            dims[i] = 1 + vr(4);
        hl_view v = contig(nd, dims);
        for (int step = 0; step < 6; step++) {
            hl_view w;
            int64_t n = numel_of(&v);
            int64_t before[256];
            ck_assert_int_le(n, 256);
            for (int64_t k = 0; k < n; k++)
                before[k] = brute_pos(&v, k, NULL);
            uint32_t op = vr(5);
            if (op == 0 && v.ndim > 0) { /* permute: positions are a permutation of before */
                uint32_t perm[HL_MAX_DIMS];
                for (uint32_t i = 0; i < v.ndim; i++)
                    perm[i] = i;
                for (uint32_t i = v.ndim; i > 1; i--) {
                    uint32_t j = vr(i), t = perm[i - 1];
                    perm[i - 1] = perm[j];
                    perm[j] = t;
                }
                ck_assert_int_eq(hl_view_permute(P, &v, perm, &w, &E), HL_OK);
            } else if (op == 1 && v.ndim < 5 && n * 3 <= 256) { /* expand */
                ck_assert_int_eq(hl_view_expand(P, &v, vr(v.ndim + 1), N(1 + vr(3)), &w, &E),
                                 HL_OK);
            } else if (op == 2 && v.ndim >= 2) { /* merge: the same positions in the same order */
                ck_assert_int_eq(hl_view_merge(P, &v, vr(v.ndim - 1), &w, &E), HL_OK);
                for (int64_t k = 0; k < n; k++)
                    ck_assert_int_eq(brute_pos(&w, k, NULL), before[k]);
            } else if (op == 3 && v.ndim > 0 && v.ndim < 6) { /* split, when the stride allows */
                uint32_t ax = vr(v.ndim);
                int64_t d;
                ck_assert(hl_e_is_num(P, v.dims[ax], &d));
                int64_t inner = 1 + vr((uint32_t)d);
                while (d % inner)
                    inner--;
                lm_err_clear(&E);
                hl_status st = hl_view_split(P, &v, ax, N(inner), &w, &E);
                if (st == HL_ERR_VIEW) continue;
                ck_assert_int_eq(st, HL_OK);
                for (int64_t k = 0; k < n; k++)
                    ck_assert_int_eq(brute_pos(&w, k, NULL), before[k]);
            } else if (op == 4 && v.ndim > 0) { /* slice from zero */
                uint32_t ax = vr(v.ndim);
                int64_t d;
                ck_assert(hl_e_is_num(P, v.dims[ax], &d));
                ck_assert_int_eq(hl_view_slice(P, &v, ax, N(1 + vr((uint32_t)d)), &w, &E), HL_OK);
            } else {
                continue;
            }
            v = w;
            index_matches_brute(&v, numel_of(&v), NULL);
        }
    }
}
END_TEST

static Suite *hlir_view_suite(void)
{
    Suite *s = suite_create("hlir_view");
    TCase *tc = tcase_create("view");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, contiguous_strides_are_z_times_inner);
    tcase_add_test(tc, symbolic_contiguous_strides);
    tcase_add_test(tc, contiguous_index_is_z);
    tcase_add_test(tc, permute_moves_dims_and_strides);
    tcase_add_test(tc, expand_inserts_a_zero_stride_dim);
    tcase_add_test(tc, broadcast_only_stretches_size_one);
    tcase_add_test(tc, merging_contiguous_dims_stays_contiguous);
    tcase_add_test(tc, merging_permuted_dims_keeps_positions);
    tcase_add_test(tc, split_needs_a_linear_stride);
    tcase_add_test(tc, slice_shrinks_from_zero);
    tcase_add_test(tc, squeeze_removes_size_one);
    tcase_add_test(tc, index_of_a_symbolic_view_evaluates_correctly);
    tcase_add_test(tc, out_may_alias_the_input);
    tcase_add_test(tc, failure_leaves_out_untouched);
    tcase_add_test(tc, random_view_changes_keep_positions);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_view_suite, NULL};
