/* hl_core.h - what every part of the hlir module shares: status codes (lm_code values),
 * "no id", and the element types (dtypes) with their conversions. Public; included by every other
 * hlir header. docs/hlir.md gives the rounding rules exactly.
 */
#ifndef LUMINAL_HL_CORE_H
#define LUMINAL_HL_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * Errors
 * ==================================================================================
 *
 * hlir reports through base's error record (lm_err, base.h): a fallible call returns an
 * hl_status and fills the caller's lm_err with the code, the location field by field
 * (file, line, column, the user's node name, the node's id, the field) and a message that
 * begins with that location. The record is sticky (the first error wins) and only its
 * owner clears it (lm_err_clear, or `lm_err err = {0};`).
 *
 * hl_status names the codes hlir raises; each value IS the lm_code of the same meaning
 * (HL_ERR_SHAPE == LM_ESHAPE), so a status means the same in every module and passes up
 * through the LLIR and the search unchanged. A call that forwards another module's error
 * (reading a file, the e-graph engine) may return that module's code, also an lm_code.
 */

typedef enum hl_status {
    HL_OK = LM_OK,
    HL_ERR_NOMEM = LM_ENOMEM,     /* an allocation failed; the structure is as it was */
    HL_ERR_ARG = LM_EARG,         /* an argument is out of range (axis, arity, null name) */
    HL_ERR_PARSE = LM_EPARSE,     /* malformed text (expression syntax, JSON) */
    HL_ERR_IO = LM_EIO,           /* a file could not be read or written */
    HL_ERR_LIMIT = LM_ELIMIT,     /* a limit was reached (a run's memory, the format's) */
    HL_ERR_RUNTIME = LM_ERUNTIME, /* the reference runtime met bad data (index out of range) */
    HL_ERR_SHAPE = LM_ESHAPE,     /* shapes do not agree */
    HL_ERR_DTYPE = LM_EDTYPE,     /* an op does not accept this dtype, or dtypes differ */
    HL_ERR_DIM = LM_EDIM,         /* an unknown or unbound dynamic dimension */
    HL_ERR_EVAL = LM_EEVAL,       /* an expression could not be evaluated (div by 0, overflow) */
    HL_ERR_VIEW = LM_EVIEW,       /* a view change cannot be expressed as strides */
} hl_status;

#define HL_NONE LM_NONE /* "no node" / "no expression" (UINT32_MAX) */

/* ==================================================================================
 * DTypes
 * ================================================================================== */

typedef enum hl_dtype {
    HL_F32 = 0,
    HL_F16,
    HL_BF16,
    HL_INT, /* 32-bit signed */
    HL_I64,
    HL_BOOL,
    HL_F8E4M3, /* OCP FP8 E4M3 "fn": bias 7, no infinities, one NaN pattern, max 448 */
    HL_F8E5M2, /* OCP FP8 E5M2: bias 15, IEEE-like, has inf, max finite 57344 */
    HL_DTYPE_COUNT
} hl_dtype;

/* Lower-case names as the JSON format and the dump spell them: "f32", "f16", "bf16",
 * "int", "i64", "bool", "f8e4m3", "f8e5m2". hl_dtype_name never returns NULL ("?" for an
 * out-of-range value). hl_dtype_parse returns 0 and sets *out, or -1 for an unknown
 * name (name may be NULL). */
const char *hl_dtype_name(hl_dtype t);
int hl_dtype_parse(const char *name, hl_dtype *out);

/* Storage size of one element in bytes (Bool is one byte). 0 for an invalid dtype. */
size_t hl_dtype_size(hl_dtype t);
/* True for F32, F16, Bf16 and both FP8 formats. */
bool hl_dtype_is_float(hl_dtype t);

/* Conversions between f32 and the low-precision formats, bit patterns in the low bits.
 * Every f32 -> narrow conversion rounds to nearest, ties to even, keeps subnormals, and
 * keeps the sign of zero; NaN stays NaN (a quiet NaN with the sign kept).
 *   f16, bf16: overflow rounds to +-inf (cvt.rn.f16.f32 / cvt.rn.bf16.f32).
 *   E4M3: no inf; overflow and +-inf saturate to +-448 (cvt.rn.satfinite.e4m3x2.f32).
 *   E5M2: overflow and +-inf saturate to +-57344 (cvt.rn.satfinite.e5m2x2.f32); the
 *         inf bit patterns still decode to inf.
 * The narrow -> f32 direction is exact. None of these can fail. */
uint16_t hl_f32_to_f16(float x);
float hl_f16_to_f32(uint16_t h);
uint16_t hl_f32_to_bf16(float x);
float hl_bf16_to_f32(uint16_t h);
uint8_t hl_f32_to_e4m3(float x);
float hl_e4m3_to_f32(uint8_t b);
uint8_t hl_f32_to_e5m2(float x);
float hl_e5m2_to_f32(uint8_t b);

/* The value x becomes when stored as dtype t and read back as f32 (for Int: truncated
 * toward zero and saturated, NaN -> 0; for Bool: 0 or 1). Cannot fail. */
float hl_round_to(hl_dtype t, float x);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_HL_CORE_H */
