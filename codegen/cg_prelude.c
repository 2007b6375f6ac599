/* cg_prelude.c - the helper functions at the top of every generated module.
 *
 * NVRTC 13 has no cuda_fp16.h / cuda_bf16.h / cuda_fp8.h built in (only with an include
 * path into the toolkit, which a module may not need), so the conversions between f32
 * and the narrow formats are written here by bit manipulation, exactly as hlir's
 * hl_f32_to_* (hlir/dtype.c): round to nearest even, subnormals kept, the sign of zero
 * kept, NaN to the quiet NaN hlir gives, f16/bf16 overflow to inf, FP8 saturating
 * (satfinite) to +-448 / +-57344. The emulator (tests/codegen) compiles the same text as
 * C++, and a test holds these functions to hlir's converters over every narrow pattern
 * and the f32 boundaries.
 *
 * Arithmetic helpers: floor division for signed 64-bit indexes, integer arithmetic that
 * wraps (through unsigned, so the emulator has no undefined behaviour either), integer
 * modulo with hlir's sign rule (C's %: the sign of the dividend; b == -1 gives 0; b == 0
 * gives 0 where the reference reports an error), the NaN-propagating float max of
 * MaxReduce, and float -> int casts that truncate and saturate with NaN -> 0 (as
 * cvt.rzi.sat).
 *
 * Float + and * are written __fadd_rn / __fmul_rn: NVCC contracts a*b+c into one FMA by
 * default, which rounds once where hlir rounds twice; the _rn intrinsics are never
 * contracted, so a region computes exactly hlir's f32 operations in hlir's order.
 * Reciprocal and square root are __frcp_rn / __fsqrt_rn (IEEE, correctly rounded, as
 * 1.0f/x and sqrtf on the CPU). exp2f, log2f and sinf are CUDA's (within 2 ulp of the
 * correctly rounded result; docs/codegen.md). */
#include "cg_int.h"

static const char *const PRELUDE[] = {
    "#define LM_DI static __device__ __forceinline__\n",
    "typedef unsigned long long lm_u64;\n",
    "LM_DI long long lm_fdiv(long long a, long long b) { long long q = a / b; "
    "return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n",
    "LM_DI long long lm_fmod(long long a, long long b) { long long r = a % b; "
    "return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n",
    "LM_DI unsigned lm_cdivu(unsigned a, unsigned b) { return a / b + (a % b != 0u); }\n",
    "LM_DI long long lm_cdivl(long long a, long long b) { return -lm_fdiv(-a, b); }\n",
    "LM_DI unsigned lm_minu(unsigned a, unsigned b) { return a < b ? a : b; }\n",
    "LM_DI unsigned lm_maxu(unsigned a, unsigned b) { return a > b ? a : b; }\n",
    "LM_DI long long lm_minl(long long a, long long b) { return a < b ? a : b; }\n",
    "LM_DI long long lm_maxl(long long a, long long b) { return a > b ? a : b; }\n",
    /* integers: wrapping, hlir's modulo */
    "LM_DI int lm_addi(int a, int b) { return (int)((unsigned)a + (unsigned)b); }\n",
    "LM_DI int lm_muli(int a, int b) { return (int)((unsigned)a * (unsigned)b); }\n",
    "LM_DI int lm_modi(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }\n",
    "LM_DI long long lm_addl(long long a, long long b) { return (long long)((lm_u64)a + "
    "(lm_u64)b); }\n",
    "LM_DI long long lm_mull(long long a, long long b) { return (long long)((lm_u64)a * "
    "(lm_u64)b); }\n",
    "LM_DI long long lm_modl(long long a, long long b) { return (b == 0 || b == -1) ? 0 : a % "
    "b; }\n",
    "LM_DI int lm_maxi(int a, int b) { return b > a ? b : a; }\n",
    "LM_DI long long lm_maxll(long long a, long long b) { return b > a ? b : a; }\n",
    /* floats */
    "LM_DI float lm_maxf(float acc, float x) { return acc != acc ? acc : "
    "((x != x || x > acc) ? x : acc); }\n",
    "LM_DI int lm_f2i(float x) { return x != x ? 0 : x >= 2147483648.0f ? 2147483647 : "
    "x <= -2147483648.0f ? (-2147483647 - 1) : (int)x; }\n",
    "LM_DI long long lm_f2l(float x) { return x != x ? 0ll : x >= 9.2233720368547758e18f ? "
    "9223372036854775807ll : x <= -9.2233720368547758e18f ? (-9223372036854775807ll - 1) : "
    "(long long)x; }\n",
    /* bf16 */
    "LM_DI float lm_bf2f(unsigned short h) { return __uint_as_float((unsigned)h << 16); }\n",
    "LM_DI unsigned short lm_f2bf(float x) {\n",
    "  unsigned u = __float_as_uint(x);\n",
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)(((u >> 16) & 0x8000u) | "
    "0x7fc0u);\n",
    "  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n",
    "}\n",
    /* f16 */
    "LM_DI float lm_h2f(unsigned short h) {\n",
    "  unsigned s = ((unsigned)h & 0x8000u) << 16, e = ((unsigned)h >> 10) & 0x1fu, "
    "m = (unsigned)h & 0x3ffu;\n",
    "  if (e == 0u) return __uint_as_float(s | __float_as_uint((float)m * "
    "5.9604644775390625e-8f));\n",
    "  if (e == 31u) return __uint_as_float(s | 0x7f800000u | (m << 13));\n",
    "  return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));\n",
    "}\n",
    "LM_DI unsigned short lm_f2h(float x) {\n",
    "  unsigned u = __float_as_uint(x), s = (u >> 16) & 0x8000u;\n",
    "  u &= 0x7fffffffu;\n",
    "  if (u > 0x7f800000u) return (unsigned short)(s | 0x7e00u);\n",
    "  if (u >= 0x477ff000u) return (unsigned short)(s | 0x7c00u);\n",
    "  if (u < 0x38800000u) return (unsigned short)(s | (unsigned)rintf(__uint_as_float(u) * "
    "16777216.0f));\n",
    "  unsigned h = (((u >> 23) - 112u) << 10) | ((u & 0x7fffffu) >> 13), r = u & 0x1fffu;\n",
    "  if (r > 0x1000u || (r == 0x1000u && (h & 1u))) h++;\n",
    "  return (unsigned short)(s | h);\n",
    "}\n",
    /* fp8 e4m3 (bias 7, no inf, NaN S.1111.111, max 448) */
    "LM_DI float lm_e4m3_2f(unsigned char b) {\n",
    "  unsigned s = ((unsigned)b & 0x80u) << 24, e = ((unsigned)b >> 3) & 15u, m = (unsigned)b "
    "& 7u;\n",
    "  if (e == 15u && m == 7u) return __uint_as_float(s | 0x7fc00000u);\n",
    "  if (e == 0u) return __uint_as_float(s | __float_as_uint((float)m * 0.001953125f));\n",
    "  return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));\n",
    "}\n",
    "LM_DI unsigned char lm_f2e4m3(float x) {\n",
    "  unsigned u = __float_as_uint(x), s = (u >> 24) & 0x80u;\n",
    "  u &= 0x7fffffffu;\n",
    "  if (u > 0x7f800000u) return (unsigned char)(s | 0x7fu);\n",
    "  if (u >= 0x43e00000u) return (unsigned char)(s | 0x7eu);\n",
    "  if (u < 0x3c800000u) return (unsigned char)(s | (unsigned)rintf(__uint_as_float(u) * "
    "512.0f));\n",
    "  unsigned r = (((u >> 23) - 120u) << 3) | ((u & 0x7fffffu) >> 20), rem = u & 0xfffffu;\n",
    "  if (rem > 0x80000u || (rem == 0x80000u && (r & 1u))) r++;\n",
    "  return (unsigned char)(s | r);\n",
    "}\n",
    /* fp8 e5m2 (bias 15, inf and NaN as IEEE, max finite 57344, saturating) */
    "LM_DI float lm_e5m2_2f(unsigned char b) {\n",
    "  unsigned s = ((unsigned)b & 0x80u) << 24, e = ((unsigned)b >> 2) & 31u, m = (unsigned)b "
    "& 3u;\n",
    "  if (e == 31u) return __uint_as_float(s | (m ? 0x7fc00000u : 0x7f800000u));\n",
    "  if (e == 0u) return __uint_as_float(s | __float_as_uint((float)m * "
    "1.52587890625e-05f));\n",
    "  return __uint_as_float(s | ((e + 112u) << 23) | (m << 21));\n",
    "}\n",
    "LM_DI unsigned char lm_f2e5m2(float x) {\n",
    "  unsigned u = __float_as_uint(x), s = (u >> 24) & 0x80u;\n",
    "  u &= 0x7fffffffu;\n",
    "  if (u > 0x7f800000u) return (unsigned char)(s | 0x7fu);\n",
    "  if (u >= 0x47600000u) return (unsigned char)(s | 0x7bu);\n",
    "  if (u < 0x38800000u) return (unsigned char)(s | (unsigned)rintf(__uint_as_float(u) * "
    "65536.0f));\n",
    "  unsigned r = (((u >> 23) - 112u) << 2) | ((u & 0x7fffffu) >> 21), rem = u & 0x1fffffu;\n",
    "  if (rem > 0x100000u || (rem == 0x100000u && (r & 1u))) r++;\n",
    "  return (unsigned char)(s | r);\n",
    "}\n",
    NULL};

void cg__prelude(cg_str *b)
{
    for (const char *const *l = PRELUDE; *l; l++)
        cg__str_add(b, *l);
}

const char *cg__store_c(hl_dtype t)
{
    switch (t) {
    case HL_F32:
        return "float";
    case HL_F16:
    case HL_BF16:
        return "unsigned short";
    case HL_INT:
        return "int";
    case HL_I64:
        return "long long";
    default:
        return "unsigned char"; /* bool, fp8 */
    }
}
