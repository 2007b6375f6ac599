/* test_matmul_spec.c: matmul specs: defaults, equality, hashing, validation messages. */
#include "cuda_rt.h"
#include "lm_check.h"

#include <stdlib.h>
#include <string.h>

START_TEST(spec_equal_specs_hash_alike)
{
    rt_matmul_spec a, b;
    memset(&a, 0xAB, sizeof a); /* garbage in the padding must not matter */
    memset(&b, 0x00, sizeof b);
    rt_matmul_spec_init(&a, 64, 48, 32, RT_BF16);
    rt_matmul_spec_init(&b, 64, 48, 32, RT_BF16);
    ck_assert(rt_matmul_spec_equal(&a, &b));
    ck_assert_uint_eq(rt_matmul_spec_hash(&a), rt_matmul_spec_hash(&b));
}
END_TEST

/* Changing any one field makes the specs unequal and (here) changes the hash. */
START_TEST(spec_every_field_counts)
{
    rt_matmul_spec base;
    rt_matmul_spec_init(&base, 64, 48, 32, RT_F16);
    uint64_t h = rt_matmul_spec_hash(&base);
    for (int f = 0; f < 29; f++) {
        rt_matmul_spec s = base;
        switch (f) {
        case 0:
            s.m++;
            break;
        case 1:
            s.n++;
            break;
        case 2:
            s.k++;
            break;
        case 3:
            s.batch++;
            break;
        case 4:
            s.stride_a++;
            break;
        case 5:
            s.stride_b++;
            break;
        case 6:
            s.stride_c++;
            break;
        case 7:
            s.stride_d++;
            break;
        case 8:
            s.order_a = RT_COL_MAJOR;
            break;
        case 9:
            s.order_b = RT_COL_MAJOR;
            break;
        case 10:
            s.order_d = RT_COL_MAJOR;
            break;
        case 11:
            s.trans_a = true;
            break;
        case 12:
            s.trans_b = true;
            break;
        case 13:
            s.lda++;
            break;
        case 14:
            s.ldb++;
            break;
        case 15:
            s.ldc++;
            break;
        case 16:
            s.ldd++;
            break;
        case 17:
            s.type_a = RT_BF16;
            break;
        case 18:
            s.type_b = RT_BF16;
            break;
        case 19:
            s.type_c = RT_F32;
            break;
        case 20:
            s.type_d = RT_F32;
            break;
        case 21:
            s.compute = RT_COMPUTE_TF32;
            break;
        case 22:
            s.alpha = 2.0f;
            break;
        case 23:
            s.beta = 1.0f;
            break;
        case 24:
            s.epilogue = RT_EPI_GELU;
            break;
        case 25:
            s.type_bias = RT_F32;
            break;
        case 26:
            s.scale_a = true;
            break;
        case 27:
            s.scale_b = true;
            break;
        case 28:
            s.scale_d = true;
            break;
        }
        ck_assert_msg(!rt_matmul_spec_equal(&base, &s), "field %d ignored by equality", f);
        ck_assert_msg(rt_matmul_spec_hash(&s) != h, "field %d ignored by the hash", f);
    }
}
END_TEST

START_TEST(spec_alpha_compares_by_bits)
{
    rt_matmul_spec a, b;
    rt_matmul_spec_init(&a, 8, 8, 8, RT_F32);
    b = a;
    a.beta = 0.0f;
    b.beta = -0.0f; /* equal as floats, different bits: a different program */
    ck_assert(!rt_matmul_spec_equal(&a, &b));
}
END_TEST

START_TEST(spec_defaults_are_valid_for_every_type)
{
    rt_dtype types[] = {RT_F32, RT_F16, RT_BF16, RT_F8_E4M3};
    for (int i = 0; i < 4; i++) {
        rt_matmul_spec s;
        rt_matmul_spec_init(&s, 128, 64, 32, types[i]);
        lm_err err = {0};
        ck_assert_msg(rt_matmul_spec_check(&s, &err) == 0, "type %d: %s", i, err.msg);
    }
}
END_TEST

START_TEST(spec_short_leading_dimension_is_named)
{
    rt_matmul_spec s;
    rt_matmul_spec_init(&s, 64, 48, 32, RT_F32);
    s.lda = 16; /* row-major A is 64 x 32: lda must be >= 32 */
    lm_err err = {0};
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "lda = 16"));
    ck_assert_ptr_nonnull(strstr(err.msg, "fix:"));
    /* column-major A (64 x 32) needs lda >= 64 */
    rt_matmul_spec_init(&s, 64, 48, 32, RT_F32);
    s.order_a = RT_COL_MAJOR;
    s.lda = 32;
    lm_err_clear(&err);
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "below 64"));
}
END_TEST

START_TEST(spec_overlapping_batches_are_rejected)
{
    rt_matmul_spec s;
    rt_matmul_spec_init(&s, 64, 48, 32, RT_F32);
    s.batch = 3;
    s.stride_d = 100;
    lm_err err = {0};
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "stride_d"));
    /* A broadcast over the batch (stride 0) is fine */
    rt_matmul_spec_init(&s, 64, 48, 32, RT_F32);
    s.batch = 3;
    s.stride_a = 0;
    lm_err_clear(&err);
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), 0);
}
END_TEST

/* A and B are only read: batches that overlap are fine (cuBLASLt bounds no batch stride;
 * docs/cuda_rt.md). Heads interleaved in one row-major [S, H*D] tensor, as attention reads
 * them: batch h starts 64 elements after batch h-1, rows are 2048 apart. C and D are still
 * refused below one matrix, and a negative batch stride is refused for every operand. */
START_TEST(spec_read_only_batches_may_overlap)
{
    enum { S = 128, H = 32, D = 64 };
    rt_matmul_spec s;
    lm_err err = {0};
    /* scores = q k^T per head: A = q_h (S x D, lda H*D), B = k_h^T (k_h stored S x D, trans) */
    rt_matmul_spec_init(&s, S, S, D, RT_BF16);
    s.batch = H;
    s.lda = H * D;
    s.stride_a = D;
    s.trans_b = true;
    s.ldb = H * D;
    s.stride_b = D;
    s.stride_c = s.stride_d = S * S;
    ck_assert_msg(rt_matmul_spec_check(&s, &err) == 0, "%s", err.msg);
    /* p v per head: A = p_h contiguous, B = v_h (S x D, ldb H*D, batch stride D) */
    rt_matmul_spec_init(&s, S, D, S, RT_BF16);
    s.batch = H;
    s.stride_a = S * S;
    s.ldb = H * D;
    s.stride_b = D;
    s.stride_c = s.stride_d = S * D;
    ck_assert_msg(rt_matmul_spec_check(&s, &err) == 0, "%s", err.msg);
    /* an A batch stride of 1 (every batch but one element apart) is still only a read */
    s.stride_a = 1;
    ck_assert_msg(rt_matmul_spec_check(&s, &err) == 0, "%s", err.msg);
    /* negative: refused, naming the field */
    s.stride_b = -D;
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "stride_b = -64"));
    ck_assert_ptr_nonnull(strstr(err.msg, "fix:"));
    /* C and D are written (C by D when C == D): overlapping C batches are refused */
    rt_matmul_spec_init(&s, S, D, S, RT_BF16);
    s.batch = H;
    s.ldb = H * D;
    s.stride_b = D;
    s.stride_c = D;
    lm_err_clear(&err);
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "stride_c"));
    /* with one batch any stride goes: nothing is repeated */
    rt_matmul_spec_init(&s, S, D, S, RT_BF16);
    s.stride_a = -5;
    lm_err_clear(&err);
    ck_assert_msg(rt_matmul_spec_check(&s, &err) == 0, "%s", err.msg);
}
END_TEST

START_TEST(spec_type_mismatches_are_rejected)
{
    rt_matmul_spec s;
    lm_err err = {0};
    rt_matmul_spec_init(&s, 8, 8, 8, RT_BF16);
    s.type_b = RT_F16;
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "A is bf16 but B is f16"));
    rt_matmul_spec_init(&s, 8, 8, 8, RT_BF16);
    s.compute = RT_COMPUTE_TF32;
    lm_err_clear(&err);
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "tf32"));
    rt_matmul_spec_init(&s, 8, 8, 8, RT_F32);
    s.type_c = s.type_d = RT_BF16;
    s.type_bias = RT_BF16;
    lm_err_clear(&err);
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    /* bf16 in, f32 out is allowed */
    rt_matmul_spec_init(&s, 8, 8, 8, RT_BF16);
    s.type_c = s.type_d = s.type_bias = RT_F32;
    lm_err_clear(&err);
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), 0);
}
END_TEST

START_TEST(spec_fp8_needs_the_tn_form)
{
    rt_matmul_spec s;
    lm_err err = {0};
    rt_matmul_spec_init(&s, 64, 64, 64, RT_F8_E4M3);
    s.scale_a = s.scale_b = true;
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), 0);
    s.trans_b = false; /* B stored k x n row-major: not TN */
    s.ldb = 64;
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "TN"));
    rt_matmul_spec_init(&s, 64, 64, 64, RT_F8_E5M2);
    lm_err_clear(&err);
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "e5m2"));
    rt_matmul_spec_init(&s, 8, 8, 8, RT_F16);
    s.scale_a = true;
    lm_err_clear(&err);
    ck_assert_int_eq(rt_matmul_spec_check(&s, &err), RT_EARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "fp8 inputs only"));
}
END_TEST

static Suite *cuda_rt_matmul_spec_suite(void)
{
    Suite *s = suite_create("cuda_rt_matmul_spec");
    TCase *tc = tcase_create("spec");
    tcase_add_test(tc, spec_equal_specs_hash_alike);
    tcase_add_test(tc, spec_every_field_counts);
    tcase_add_test(tc, spec_alpha_compares_by_bits);
    tcase_add_test(tc, spec_defaults_are_valid_for_every_type);
    tcase_add_test(tc, spec_short_leading_dimension_is_named);
    tcase_add_test(tc, spec_overlapping_batches_are_rejected);
    tcase_add_test(tc, spec_read_only_batches_may_overlap);
    tcase_add_test(tc, spec_type_mismatches_are_rejected);
    tcase_add_test(tc, spec_fp8_needs_the_tn_form);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {cuda_rt_matmul_spec_suite, NULL};
