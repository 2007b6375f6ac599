/* lr_conv.c - a file's elements into a program's dtype, and a program's tensors into the
 * .npy element types (lr.h has the table). Narrow floats travel as f32 by default (numpy
 * has no bf16 or FP8, and bench/e2e reads f32): widening is exact, and reading f32 back
 * checks that every value is exactly one of the dtype, so nothing is rounded twice. */
#include "lr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static lr_elem native_elem(hl_dtype t)
{
    switch (t) {
    case HL_F32:
        return LR_E_F32;
    case HL_F16:
        return LR_E_F16;
    case HL_BF16:
        return LR_E_BF16;
    case HL_F8E4M3:
        return LR_E_E4M3;
    case HL_F8E5M2:
        return LR_E_E5M2;
    case HL_INT:
        return LR_E_I32;
    case HL_I64:
        return LR_E_I64;
    case HL_BOOL:
        return LR_E_BOOL;
    default:
        return LR_E_OTHER;
    }
}

bool lr_elem_accepted(lr_elem e, hl_dtype t)
{
    lr_elem n = native_elem(t);
    if (n == LR_E_OTHER) return false;
    if (e == n) return true;
    if (t == HL_F16 || t == HL_BF16) return e == LR_E_F32 || e == LR_E_RAW2;
    if (t == HL_F8E4M3 || t == HL_F8E5M2) return e == LR_E_F32 || e == LR_E_RAW1;
    return false;
}

const char *lr_accepted_text(hl_dtype t)
{
    switch (t) {
    case HL_F32:
        return "f32 ('<f4', F32)";
    case HL_F16:
        return "f16 ('<f2', F16), f32 holding f16 values ('<f4', F32) or raw 2-byte ('<V2')";
    case HL_BF16:
        return "bf16 ('bfloat16', BF16), f32 holding bf16 values ('<f4', F32) or raw "
               "2-byte bf16 bits ('<V2')";
    case HL_F8E4M3:
        return "f8e4m3 ('float8_e4m3fn', F8_E4M3), f32 holding its values ('<f4', F32) or raw "
               "1-byte ('|V1')";
    case HL_F8E5M2:
        return "f8e5m2 ('float8_e5m2', F8_E5M2), f32 holding its values ('<f4', F32) or raw "
               "1-byte ('|V1')";
    case HL_INT:
        return "i32 ('<i4', I32)";
    case HL_I64:
        return "i64 ('<i8', I64)";
    case HL_BOOL:
        return "bool ('|b1', BOOL)";
    default:
        return "nothing";
    }
}

static int not_exact(const char *what, hl_dtype t, uint64_t i, float x, lm_err *err)
{
    return lm_err_set(err, LM_EDTYPE, NULL,
                      "%s: element %llu is %.9g, which is not exactly a %s value (round it to "
                      "%s before saving it as f32)",
                      what, (unsigned long long)i, (double)x, hl_dtype_name(t), hl_dtype_name(t));
}

int lr_convert_in(const lr_array *a, hl_dtype t, void *dst, const char *what, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    size_t es = lr_elem_size(a->elem);
    if (a->elem != LR_E_F32 || t == HL_F32) {
        /* the same bits: a copy, with bools checked */
        memcpy(dst, a->data, (size_t)a->numel * es);
        if (t == HL_BOOL)
            for (uint64_t i = 0; i < a->numel; i++)
                if (a->data[i] > 1)
                    return lm_err_set(err, LM_EDTYPE, NULL,
                                      "%s: element %llu of a bool array is the byte %u (0 or 1 "
                                      "expected)",
                                      what, (unsigned long long)i, a->data[i]);
        return 0;
    }
    /* f32 into a narrow float, exactly */
    for (uint64_t i = 0; i < a->numel; i++) {
        float x;
        memcpy(&x, a->data + 4 * i, 4);
        float back;
        switch (t) {
        case HL_F16: {
            uint16_t h = hl_f32_to_f16(x);
            ((uint16_t *)dst)[i] = h;
            back = hl_f16_to_f32(h);
            break;
        }
        case HL_BF16: {
            uint16_t h = hl_f32_to_bf16(x);
            ((uint16_t *)dst)[i] = h;
            back = hl_bf16_to_f32(h);
            break;
        }
        case HL_F8E4M3: {
            uint8_t b = hl_f32_to_e4m3(x);
            ((uint8_t *)dst)[i] = b;
            back = hl_e4m3_to_f32(b);
            break;
        }
        default: { /* HL_F8E5M2 */
            uint8_t b = hl_f32_to_e5m2(x);
            ((uint8_t *)dst)[i] = b;
            back = hl_e5m2_to_f32(b);
            break;
        }
        }
        if (isnan(x)) continue;
        if (back != x || signbit(back) != signbit(x)) return not_exact(what, t, i, x, err);
    }
    return 0;
}

int lr_npy_form(hl_dtype t, bool native, const void *data, uint64_t numel, const char **descr,
                void **widened, size_t *bytes, lm_err *err)
{
    *widened = NULL;
    switch (t) {
    case HL_F32:
        *descr = "<f4";
        *bytes = (size_t)numel * 4;
        return 0;
    case HL_INT:
        *descr = "<i4";
        *bytes = (size_t)numel * 4;
        return 0;
    case HL_I64:
        *descr = "<i8";
        *bytes = (size_t)numel * 8;
        return 0;
    case HL_BOOL:
        *descr = "|b1";
        *bytes = (size_t)numel;
        return 0;
    default:
        break;
    }
    size_t es = hl_dtype_size(t);
    if (native) {
        *descr = t == HL_F16 ? "<f2" : es == 2 ? "<V2" : "|V1";
        *bytes = (size_t)numel * es;
        return 0;
    }
    float *w = malloc(numel ? (size_t)numel * 4 : 1);
    if (!w) return lm_err_set(err, LM_ENOMEM, NULL, "out of memory widening a tensor to f32");
    for (uint64_t i = 0; i < numel; i++) {
        switch (t) {
        case HL_F16:
            w[i] = hl_f16_to_f32(((const uint16_t *)data)[i]);
            break;
        case HL_BF16:
            w[i] = hl_bf16_to_f32(((const uint16_t *)data)[i]);
            break;
        case HL_F8E4M3:
            w[i] = hl_e4m3_to_f32(((const uint8_t *)data)[i]);
            break;
        default:
            w[i] = hl_e5m2_to_f32(((const uint8_t *)data)[i]);
            break;
        }
    }
    *descr = "<f4";
    *widened = w;
    *bytes = (size_t)numel * 4;
    return 0;
}
