/* hl_core.h - what every part of the hlir module shares: status codes, "no id", and the
 * element types (dtypes) with their conversions. Public; included by every other hlir
 * header. docs/hlir.md gives the rounding rules exactly.
 */
#ifndef LUMINAL_HL_CORE_H
#define LUMINAL_HL_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * Errors
 * ================================================================================== */

/* Status codes: 0 is success, every other value names a class of failure. */
typedef enum hl_status {
    HL_OK = 0,
    HL_ERR_NOMEM,   /* an allocation failed; the structure is as it was before the call */
    HL_ERR_ARG,     /* an argument is out of range (axis, arity, null name, ...) */
    HL_ERR_SHAPE,   /* shapes do not agree (or a view change is impossible) */
    HL_ERR_DTYPE,   /* an op does not accept this dtype, or input dtypes differ */
    HL_ERR_DIM,     /* an unknown or unbound dynamic dimension */
    HL_ERR_EVAL,    /* an expression could not be evaluated (division by zero, overflow) */
    HL_ERR_RUNTIME, /* the reference runtime met bad data (index out of range, ...) */
    HL_ERR_PARSE,   /* malformed text (expression syntax, JSON) */
    HL_ERR_IO,      /* a file could not be read or written */
    HL_ERR_VIEW     /* a view change cannot be expressed as strides (caller may copy) */
} hl_status;

#define HL_NONE UINT32_MAX /* "no node" / "no expression" */
#define HL_ERROR_MSG 512

/* An error record. Callers own it (usually on the stack) and zero it with
 * hl_error_clear(). node is the graph node the error is about, or HL_NONE. */
typedef struct hl_error {
    hl_status code;
    uint32_t node;
    char msg[HL_ERROR_MSG];
} hl_error;

/* Resets e to "no error". Accepts NULL. Cannot fail. */
void hl_error_clear(hl_error *e);

/* The one door every hlir error goes through (set a breakpoint here). If e already
 * holds an error, it is kept (the first error wins) and this returns e->code; otherwise
 * the code, node and printf-formatted message are recorded (truncated to fit) and code
 * is returned. e may be NULL: then only code is returned. */
hl_status hl_error_set(hl_error *e, hl_status code, uint32_t node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* A static, human-readable name of a status ("shape mismatch", ...). Never NULL. */
const char *hl_status_name(hl_status s);

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
