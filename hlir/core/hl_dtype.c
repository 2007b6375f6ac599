/* hl_dtype.c - element types: names, sizes and the f32 <-> narrow float conversions.
 *
 * One generic converter serves f16, bf16 and both FP8 formats. It works on the exact
 * value in double precision: find the binade of |x| (clamped at the smallest normal
 * exponent, which gives subnormals their fixed quantum), divide by the quantum (exact,
 * a power of two), round to the nearest integer with ties to even (nearbyint in the
 * default rounding mode), multiply back. A carry into the next binade needs no special
 * case because the rounded value is re-encoded from scratch. Overflow then either goes
 * to inf (f16, bf16: IEEE) or saturates to the largest finite value (the FP8 formats,
 * as PTX's cvt.rn.satfinite does). Rejected alternative: bit-twiddling per format; it is
 * faster but four copies of subtle rounding code, and speed does not matter here. */
#include "hl_int.h"

#include <float.h>
#include <math.h>

typedef struct narrow_fmt {
    int mbits;         /* mantissa (fraction) bits */
    int bias;          /* exponent bias */
    int ebits;         /* exponent bits */
    bool has_inf;      /* all-ones exponent with zero mantissa is inf */
    bool satfinite;    /* overflow and inf saturate to +-maxv */
    double maxv;       /* largest finite value */
    uint32_t nan_bits; /* the NaN produced (without the sign) */
} narrow_fmt;

static const narrow_fmt F16 = {10, 15, 5, true, false, 65504.0, 0x7E00};
static const narrow_fmt BF16 = {7, 127, 8, true, false, 3.3895313892515355e38, 0x7FC0};
static const narrow_fmt E4M3 = {3, 7, 4, false, true, 448.0, 0x7F};
static const narrow_fmt E5M2 = {2, 15, 5, true, true, 57344.0, 0x7F};

static uint32_t narrow_encode(float xf, const narrow_fmt *f)
{
    int total = 1 + f->ebits + f->mbits;
    uint32_t sign = signbit(xf) ? (1u << (total - 1)) : 0;
    uint32_t exp_all = (1u << f->ebits) - 1;
    if (isnan(xf)) return sign | f->nan_bits;
    double x = fabs((double)xf);
    if (isinf(xf) && !f->satfinite) return sign | (exp_all << f->mbits);
    int emin = 1 - f->bias;
    double v;
    if (isinf(xf)) {
        v = f->maxv + 1.0; /* saturates below */
    } else if (x == 0.0) {
        return sign;
    } else {
        int ex;
        frexp(x, &ex); /* x = m * 2^ex, m in [0.5, 1) */
        int e = ex - 1;
        if (e < emin) e = emin;
        double quantum = ldexp(1.0, e - f->mbits);
        v = nearbyint(x / quantum) * quantum; /* default mode: ties to even */
    }
    if (v > f->maxv) {
        if (f->satfinite)
            v = f->maxv;
        else
            return sign | (exp_all << f->mbits); /* inf */
    }
    if (v == 0.0) return sign;
    int ex;
    frexp(v, &ex);
    int e = ex - 1;
    if (e < emin) { /* subnormal */
        uint32_t mant = (uint32_t)ldexp(v, f->mbits - emin);
        return sign | mant;
    }
    uint32_t mant = (uint32_t)(ldexp(v, f->mbits - e) - ldexp(1.0, f->mbits));
    return sign | ((uint32_t)(e + f->bias) << f->mbits) | mant;
}

static float narrow_decode(uint32_t bits, const narrow_fmt *f)
{
    int total = 1 + f->ebits + f->mbits;
    bool neg = (bits >> (total - 1)) & 1u;
    uint32_t exp_all = (1u << f->ebits) - 1;
    uint32_t e = (bits >> f->mbits) & exp_all;
    uint32_t mant = bits & ((1u << f->mbits) - 1);
    double v;
    if (e == exp_all && f->has_inf) {
        v = mant ? NAN : INFINITY;
    } else if (e == exp_all && !f->has_inf && mant == ((1u << f->mbits) - 1)) {
        v = NAN; /* E4M3: S.1111.111 is the only NaN */
    } else if (e == 0) {
        v = ldexp((double)mant, 1 - f->bias - f->mbits);
    } else {
        v = ldexp((double)(mant | (1u << f->mbits)), (int)e - f->bias - f->mbits);
    }
    return (float)(neg ? -v : v);
}

/* f16 and bf16 are on the runtime's hot path, so they also have bit-level versions;
 * tests check them against the generic converter (hl__f16_slow and friends). */

uint16_t hl_f32_to_f16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    u &= 0x7FFFFFFFu;
    if (u > 0x7F800000u) return sign | 0x7E00u;  /* NaN */
    if (u >= 0x477FF000u) return sign | 0x7C00u; /* >= 65520 rounds to inf (ties to even) */
    if (u < 0x38800000u) {                       /* below 2^-14: subnormal or zero */
        float a;
        memcpy(&a, &u, sizeof a);
        return sign | (uint16_t)nearbyintf(a * 0x1p24f); /* exact scaling, then RNE; 1024 is
                                                              the smallest normal */
    }
    uint32_t h = (((u >> 23) - 112u) << 10) | ((u & 0x7FFFFFu) >> 13);
    uint32_t rem = u & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry moves the exponent */
    return sign | (uint16_t)h;
}

float hl_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    uint32_t u;
    if (e == 0) {
        float f = (float)m * 0x1p-24f; /* subnormal (or zero): exact */
        memcpy(&u, &f, sizeof u);
        u |= sign;
    } else if (e == 31) {
        u = sign | 0x7F800000u | (m << 13); /* inf, or NaN with its payload */
    } else {
        u = sign | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t hl_f32_to_bf16(float x)
{
    return hl__bf16_enc(x);
}
float hl_bf16_to_f32(uint16_t h)
{
    return hl__bf16_dec(h);
}

uint16_t hl__f16_slow(float x)
{
    return (uint16_t)narrow_encode(x, &F16);
}
float hl__f16_slow_decode(uint16_t h)
{
    return narrow_decode(h, &F16);
}
uint16_t hl__bf16_slow(float x)
{
    return (uint16_t)narrow_encode(x, &BF16);
}
uint8_t hl_f32_to_e4m3(float x)
{
    return (uint8_t)narrow_encode(x, &E4M3);
}
float hl_e4m3_to_f32(uint8_t b)
{
    return narrow_decode(b, &E4M3);
}
uint8_t hl_f32_to_e5m2(float x)
{
    return (uint8_t)narrow_encode(x, &E5M2);
}
float hl_e5m2_to_f32(uint8_t b)
{
    return narrow_decode(b, &E5M2);
}

static const char *const DT_NAMES[HL_DTYPE_COUNT] = {"f32", "f16",  "bf16",   "int",
                                                     "i64", "bool", "f8e4m3", "f8e5m2"};
static const size_t DT_SIZES[HL_DTYPE_COUNT] = {4, 2, 2, 4, 8, 1, 1, 1};

const char *hl_dtype_name(hl_dtype t)
{
    return ((unsigned)t < HL_DTYPE_COUNT) ? DT_NAMES[t] : "?";
}

int hl_dtype_parse(const char *name, hl_dtype *out)
{
    if (!name) return -1;
    for (int i = 0; i < HL_DTYPE_COUNT; i++)
        if (strcmp(name, DT_NAMES[i]) == 0) {
            *out = (hl_dtype)i;
            return 0;
        }
    return -1;
}

size_t hl_dtype_size(hl_dtype t)
{
    return ((unsigned)t < HL_DTYPE_COUNT) ? DT_SIZES[t] : 0;
}

bool hl_dtype_is_float(hl_dtype t)
{
    return t == HL_F32 || t == HL_F16 || t == HL_BF16 || t == HL_F8E4M3 || t == HL_F8E5M2;
}

float hl_round_to(hl_dtype t, float x)
{
    switch (t) {
    case HL_F32:
        return x;
    case HL_F16:
        return hl_f16_to_f32(hl_f32_to_f16(x));
    case HL_BF16:
        return hl_bf16_to_f32(hl_f32_to_bf16(x));
    case HL_F8E4M3:
        return hl_e4m3_to_f32(hl_f32_to_e4m3(x));
    case HL_F8E5M2:
        return hl_e5m2_to_f32(hl_f32_to_e5m2(x));
    case HL_INT:
        if (isnan(x)) return 0.0f;
        if (x >= 2147483648.0f) return 2147483648.0f; /* INT32_MAX is not an f32 */
        if (x <= -2147483648.0f) return -2147483648.0f;
        return truncf(x);
    case HL_I64:
        if (isnan(x)) return 0.0f;
        if (x >= 9.2233720368547758e18f) return 9.2233720368547758e18f;
        if (x <= -9.2233720368547758e18f) return -9.2233720368547758e18f;
        return truncf(x);
    case HL_BOOL:
        return x != 0.0f ? 1.0f : 0.0f;
    case HL_DTYPE_COUNT:
        break;
    }
    return x;
}

double hl__dtype_float_max(hl_dtype t)
{
    switch (t) {
    case HL_F32:
        return (double)FLT_MAX;
    case HL_F16:
        return F16.maxv;
    case HL_BF16:
        return BF16.maxv;
    case HL_F8E4M3:
        return E4M3.maxv;
    case HL_F8E5M2:
        return E5M2.maxv;
    default:
        return 0.0;
    }
}
