/* test_dtype.c - dtype names and sizes, and the f32 <-> narrow float conversions at their
 * boundaries: ties to even, subnormals, overflow (inf for f16/bf16, saturation for the
 * FP8 formats), NaN and signed zero. Expected bit patterns are worked out by hand from
 * the formats' definitions. */
#include "hl_int.h"
#include "lm_check.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

START_TEST(names_round_trip)
{
    for (int t = 0; t < HL_DTYPE_COUNT; t++) {
        hl_dtype back;
        ck_assert_int_eq(hl_dtype_parse(hl_dtype_name((hl_dtype)t), &back), 0);
        ck_assert_int_eq(back, t);
    }
    hl_dtype d;
    ck_assert_int_eq(hl_dtype_parse("float32", &d), -1);
    ck_assert_int_eq(hl_dtype_parse(NULL, &d), -1);
    ck_assert_str_eq(hl_dtype_name(HL_BF16), "bf16");
    ck_assert_uint_eq(hl_dtype_size(HL_I64), 8);
    ck_assert_uint_eq(hl_dtype_size(HL_F8E4M3), 1);
    ck_assert(hl_dtype_is_float(HL_F8E5M2));
    ck_assert(!hl_dtype_is_float(HL_BOOL));
}
END_TEST

START_TEST(f16_ties_go_to_even)
{
    ck_assert_uint_eq(hl_f32_to_f16(1.0f), 0x3C00);
    ck_assert_uint_eq(hl_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);            /* tie, 0x3C00 even */
    ck_assert_uint_eq(hl_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);        /* tie, 0x3C02 even */
    ck_assert_uint_eq(hl_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01); /* above the tie */
    ck_assert_uint_eq(hl_f32_to_f16(-2.0f), 0xC000);
}
END_TEST

START_TEST(f16_subnormals_and_zero)
{
    ck_assert_uint_eq(hl_f32_to_f16(0x1p-24f), 0x0001);        /* smallest subnormal */
    ck_assert_uint_eq(hl_f32_to_f16(0x1p-25f), 0x0000);        /* tie with 0: even is 0 */
    ck_assert_uint_eq(hl_f32_to_f16(1.5f * 0x1p-24f), 0x0002); /* tie between 1 and 2 units */
    ck_assert_uint_eq(hl_f32_to_f16(0x1p-14f), 0x0400);        /* smallest normal */
    ck_assert_uint_eq(hl_f32_to_f16(-0.0f), 0x8000);
    ck_assert(hl_f16_to_f32(0x0001) == 0x1p-24f);
    ck_assert(signbit(hl_f16_to_f32(0x8000)));
}
END_TEST

START_TEST(f16_overflow_rounds_to_inf)
{
    ck_assert_uint_eq(hl_f32_to_f16(65504.0f), 0x7BFF);
    ck_assert_uint_eq(hl_f32_to_f16(65519.0f), 0x7BFF); /* below the tie */
    ck_assert_uint_eq(hl_f32_to_f16(65520.0f), 0x7C00); /* the tie goes to even: inf */
    ck_assert_uint_eq(hl_f32_to_f16(-1e9f), 0xFC00);
    ck_assert_uint_eq(hl_f32_to_f16(INFINITY), 0x7C00);
    ck_assert(isinf(hl_f16_to_f32(0x7C00)));
}
END_TEST

START_TEST(nan_stays_nan_in_every_format)
{
    ck_assert(isnan(hl_f16_to_f32(hl_f32_to_f16(NAN))));
    ck_assert(isnan(hl_bf16_to_f32(hl_f32_to_bf16(NAN))));
    ck_assert(isnan(hl_e4m3_to_f32(hl_f32_to_e4m3(NAN))));
    ck_assert(isnan(hl_e5m2_to_f32(hl_f32_to_e5m2(NAN))));
    ck_assert_uint_eq(hl_f32_to_e4m3(NAN), 0x7F);
    ck_assert_uint_eq(hl_f32_to_e4m3(-NAN), 0xFF);
}
END_TEST

START_TEST(bf16_ties_overflow_and_subnormals)
{
    ck_assert_uint_eq(hl_f32_to_bf16(1.0f), 0x3F80);
    ck_assert_uint_eq(hl_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);     /* tie, even */
    ck_assert_uint_eq(hl_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82); /* tie, even */
    ck_assert_uint_eq(hl_f32_to_bf16(FLT_MAX), 0x7F80);            /* rounds up to inf */
    ck_assert_uint_eq(hl_f32_to_bf16(0x1p-133f), 0x0001);          /* smallest subnormal */
    ck_assert_uint_eq(hl_f32_to_bf16(0x1p-149f), 0x0000);          /* below half of it */
    ck_assert(hl_bf16_to_f32(0x7F7F) == 0x1.FEp127f);              /* largest finite */
}
END_TEST

START_TEST(e4m3_has_no_inf_and_saturates)
{
    ck_assert_uint_eq(hl_f32_to_e4m3(1.0f), 0x38);
    ck_assert_uint_eq(hl_f32_to_e4m3(448.0f), 0x7E);
    ck_assert_uint_eq(hl_f32_to_e4m3(464.0f), 0x7E); /* tie between 448 and 480: even */
    ck_assert_uint_eq(hl_f32_to_e4m3(470.0f), 0x7E); /* would round to 480: saturates */
    ck_assert_uint_eq(hl_f32_to_e4m3(1e6f), 0x7E);
    ck_assert_uint_eq(hl_f32_to_e4m3(INFINITY), 0x7E);
    ck_assert_uint_eq(hl_f32_to_e4m3(-INFINITY), 0xFE);
    ck_assert(hl_e4m3_to_f32(0x7E) == 448.0f);
    ck_assert(isnan(hl_e4m3_to_f32(0x7F)));
    ck_assert(hl_e4m3_to_f32(0x78) == 256.0f); /* exponent all ones is still finite */
}
END_TEST

START_TEST(e4m3_subnormals)
{
    ck_assert_uint_eq(hl_f32_to_e4m3(0x1p-9f), 0x01);      /* smallest subnormal */
    ck_assert_uint_eq(hl_f32_to_e4m3(0x1p-10f), 0x00);     /* tie with 0 */
    ck_assert_uint_eq(hl_f32_to_e4m3(3 * 0x1p-10f), 0x02); /* tie between 1 and 2 units */
    ck_assert_uint_eq(hl_f32_to_e4m3(7 * 0x1p-9f), 0x07);  /* largest subnormal */
    ck_assert_uint_eq(hl_f32_to_e4m3(0x1p-6f), 0x08);      /* smallest normal */
    ck_assert(hl_e4m3_to_f32(0x03) == 3 * 0x1p-9f);
}
END_TEST

START_TEST(e5m2_saturates_but_decodes_inf)
{
    ck_assert_uint_eq(hl_f32_to_e5m2(1.0f), 0x3C);
    ck_assert_uint_eq(hl_f32_to_e5m2(57344.0f), 0x7B);
    ck_assert_uint_eq(hl_f32_to_e5m2(61440.0f), 0x7B); /* tie toward 65536: saturates */
    ck_assert_uint_eq(hl_f32_to_e5m2(INFINITY), 0x7B);
    ck_assert_uint_eq(hl_f32_to_e5m2(-1e30f), 0xFB);
    ck_assert(isinf(hl_e5m2_to_f32(0x7C)));
    ck_assert(isnan(hl_e5m2_to_f32(0x7D)));
    ck_assert_uint_eq(hl_f32_to_e5m2(0x1p-16f), 0x01);
    ck_assert_uint_eq(hl_f32_to_e5m2(1.0f + 0x1p-3f), 0x3C);     /* tie 1 vs 1.25: even */
    ck_assert_uint_eq(hl_f32_to_e5m2(1.0f + 3 * 0x1p-3f), 0x3E); /* tie 1.25 vs 1.5: even */
}
END_TEST

START_TEST(every_narrow_value_survives_a_round_trip)
{
    for (uint32_t b = 0; b < 0x10000; b++) {
        float f = hl_f16_to_f32((uint16_t)b);
        if (!isnan(f)) ck_assert_uint_eq(hl_f32_to_f16(f), b);
        float g = hl_bf16_to_f32((uint16_t)b);
        if (!isnan(g)) ck_assert_uint_eq(hl_f32_to_bf16(g), b);
    }
    for (uint32_t b = 0; b < 0x100; b++) {
        float f = hl_e4m3_to_f32((uint8_t)b);
        if (!isnan(f)) ck_assert_uint_eq(hl_f32_to_e4m3(f), b);
        float g = hl_e5m2_to_f32((uint8_t)b);
        if (!isnan(g) && !isinf(g)) ck_assert_uint_eq(hl_f32_to_e5m2(g), b);
    }
}
END_TEST

START_TEST(conversion_picks_the_nearest_value)
{
    /* against a brute-force search over all f16 values for many f32 inputs */
    uint64_t s = 12345;
    for (int i = 0; i < 20000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t bits = (uint32_t)(s >> 32);
        float x;
        /* exponents 2^-27 .. 2^15: from below the subnormals to the top binade, no overflow */
        bits = (bits & 0x807FFFFFu) | ((uint32_t)(100 + (bits >> 23) % 43) << 23);
        memcpy(&x, &bits, sizeof x);
        uint16_t h = hl_f32_to_f16(x);
        double err = fabs((double)hl_f16_to_f32(h) - (double)x);
        for (int d = -1; d <= 1; d += 2) {
            uint16_t nb = (uint16_t)(h + d);
            float v = hl_f16_to_f32(nb);
            if (isnan(v) || isinf(v) || (nb & 0x8000) != (h & 0x8000)) continue;
            ck_assert_msg(fabs((double)v - (double)x) >= err, "x=%a: %04x is nearer than %04x", x,
                          nb, h);
        }
    }
}
END_TEST

START_TEST(round_to_int_truncates_and_saturates)
{
    ck_assert(hl_round_to(HL_INT, 2.9f) == 2.0f);
    ck_assert(hl_round_to(HL_INT, -2.9f) == -2.0f);
    ck_assert(hl_round_to(HL_INT, NAN) == 0.0f);
    ck_assert(hl_round_to(HL_INT, 1e20f) == 2147483648.0f);
    ck_assert(hl_round_to(HL_BOOL, -0.5f) == 1.0f);
    ck_assert(hl_round_to(HL_BOOL, 0.0f) == 0.0f);
    ck_assert(hl_round_to(HL_F32, 0.1f) == 0.1f);
}
END_TEST

START_TEST(fast_converters_agree_with_the_generic_one)
{
    /* every 16-bit pattern decodes the same */
    for (uint32_t b = 0; b < 0x10000; b++) {
        float a = hl_f16_to_f32((uint16_t)b), c = hl__f16_slow_decode((uint16_t)b);
        ck_assert(memcmp(&a, &c, 4) == 0 || (isnan(a) && isnan(c)));
    }
    /* f32 patterns on a stride, plus every f16 rounding boundary and its neighbours */
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 9973) {
        uint32_t bits = (uint32_t)u;
        float x;
        memcpy(&x, &bits, 4);
        ck_assert_msg(hl_f32_to_f16(x) == hl__f16_slow(x), "f16 of %a", x);
        ck_assert_msg(hl_f32_to_bf16(x) == hl__bf16_slow(x), "bf16 of %a", x);
    }
    for (uint32_t b = 0; b < 0x7C00; b++) {
        double mid =
            ((double)hl_f16_to_f32((uint16_t)b) + (double)hl_f16_to_f32((uint16_t)(b + 1))) / 2;
        float m = (float)mid; /* exact: f16 midpoints are f32 values */
        for (int sgn = 0; sgn < 2; sgn++) {
            float base = sgn ? -m : m;
            float cand[3] = {nextafterf(base, -INFINITY), base, nextafterf(base, INFINITY)};
            for (int i = 0; i < 3; i++)
                ck_assert_msg(hl_f32_to_f16(cand[i]) == hl__f16_slow(cand[i]), "f16 of %a",
                              cand[i]);
        }
    }
    for (uint32_t b = 0; b < 0x7F80; b++) { /* bf16 midpoints sit in the low half */
        uint32_t mid = (b << 16) | 0x8000u;
        for (int d = -1; d <= 1; d++) {
            uint32_t bits = mid + (uint32_t)d;
            float x;
            memcpy(&x, &bits, 4);
            ck_assert_msg(hl_f32_to_bf16(x) == hl__bf16_slow(x), "bf16 of %a", x);
        }
    }
}
END_TEST

static Suite *hlir_dtype_suite(void)
{
    Suite *s = suite_create("hlir_dtype");
    TCase *tc = tcase_create("dtype");
    tcase_add_test(tc, names_round_trip);
    tcase_add_test(tc, f16_ties_go_to_even);
    tcase_add_test(tc, f16_subnormals_and_zero);
    tcase_add_test(tc, f16_overflow_rounds_to_inf);
    tcase_add_test(tc, nan_stays_nan_in_every_format);
    tcase_add_test(tc, bf16_ties_overflow_and_subnormals);
    tcase_add_test(tc, e4m3_has_no_inf_and_saturates);
    tcase_add_test(tc, e4m3_subnormals);
    tcase_add_test(tc, e5m2_saturates_but_decodes_inf);
    tcase_add_test(tc, every_narrow_value_survives_a_round_trip);
    tcase_add_test(tc, conversion_picks_the_nearest_value);
    tcase_add_test(tc, round_to_int_truncates_and_saturates);
    tcase_add_test(tc, fast_converters_agree_with_the_generic_one);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_dtype_suite, NULL};
