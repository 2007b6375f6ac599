/* lr.h - luminal_run's file formats: .npy arrays and safetensors files, read from memory
 * and written to disk, and the conversion of a file's elements into a program's dtype.
 * Shared by the command (main.c), its tests (tests/luminal_run) and the libFuzzer harness.
 *
 * Everything here takes bytes from a file the user gave, so nothing trusts them: every
 * length, offset, shape and count is checked (overflow included) before it is used, and
 * a malformed file is LM_EPARSE with a message that names the file (the `what` argument)
 * and says what is wrong. Nothing prints, nothing asserts on input.
 *
 * Element types (docs/luminal_run.md, "Formats"):
 *
 *   program dtype   accepted in a file                      written
 *   f32             f32                                      '<f4' / F32
 *   f16             f16, f32 (exactly an f16), raw 2 bytes   '<f4' (or '<f2' with native)
 *   bf16            bf16, f32 (exactly a bf16), raw 2 bytes  '<f4' (or '<V2' bits)
 *   f8e4m3, f8e5m2  itself, f32 (exactly one), raw 1 byte    '<f4' (or '|V1' bits)
 *   int             i32                                      '<i4' / I32
 *   i64             i64                                      '<i8' / I64
 *   bool            bool (bytes 0 or 1)                      '|b1' / BOOL
 *
 * "raw" is numpy's void type of the element's size ('<V2', '|V1'): the bits of the
 * program's dtype, which is what numpy writes for ml_dtypes' bfloat16 and float8 arrays;
 * the descrs 'bfloat16', 'float8_e4m3fn' and 'float8_e5m2' are taken as those types too.
 * Safetensors files carry every type natively (BF16, F8_E4M3, F8_E5M2, ...).
 */
#ifndef LUMINAL_LR_H
#define LUMINAL_LR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hlir.h"

#define LR_MAX_RANK HL_MAX_DIMS           /* dims of one array */
#define LR_NPY_MAX_HEADER (1u << 20)      /* the longest .npy header read */
#define LR_ST_MAX_HEADER (100u << 20)     /* the longest safetensors header (the format's) */
#define LR_MAX_NAME 256                   /* a tensor name in a safetensors file */

/* The element type of an array in a file. */
typedef enum lr_elem {
    LR_E_F32 = 0,
    LR_E_F16,
    LR_E_BF16,
    LR_E_E4M3,
    LR_E_E5M2,
    LR_E_I32,
    LR_E_I64,
    LR_E_BOOL,
    LR_E_RAW1, /* 1-byte void: the bits of a 1-byte dtype */
    LR_E_RAW2, /* 2-byte void: the bits of a 2-byte dtype */
    LR_E_OTHER /* a valid type this tool does not take (f64, u8, ...): refused by name */
} lr_elem;

/* The bytes of one element (0 for LR_E_OTHER). */
size_t lr_elem_size(lr_elem e);
/* The file's spelling of an element type, for messages ("'<f4'", "BF16", ...) is kept in
 * lr_array.type; lr_elem_name is this tool's name of it ("f32", "raw 2-byte"). */
const char *lr_elem_name(lr_elem e);

/* One array read from a file: its type, shape and bytes (pointing into the caller's
 * buffer, which must outlive it). */
typedef struct lr_array {
    lr_elem elem;
    char type[32]; /* the type as the file spells it (the descr, the safetensors dtype) */
    uint32_t ndim;
    int64_t dims[LR_MAX_RANK];
    uint64_t numel;
    const uint8_t *data;
    size_t bytes;
} lr_array;

/* ---- .npy ---- */

/* Parses a .npy file (versions 1.0, 2.0 and 3.0) held in buf[0 .. len): magic, version,
 * header length, the header dict {'descr': ..., 'fortran_order': ..., 'shape': (...)}
 * and exactly numel * itemsize bytes of data. Refused (LM_EPARSE, naming `what`): a bad
 * magic, version or header, a structured or big-endian descr, Fortran order, a rank
 * above LR_MAX_RANK, a shape whose size overflows, data shorter or longer than the
 * shape says. A descr that is valid numpy but not one of ours gives LR_E_OTHER (the
 * caller refuses it naming the type). 0 with *out filled. */
int lr_npy_parse(const uint8_t *buf, size_t len, const char *what, lr_array *out, lm_err *err);

/* Writes a version 1.0 .npy file at path: descr, shape, data (bytes of it). LM_EIO
 * naming the file. */
int lr_npy_write(const char *path, const char *descr, uint32_t ndim, const int64_t *dims,
                 const void *data, size_t bytes, lm_err *err);

/* ---- safetensors ---- */

/* A safetensors file: an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__": {...}}),
 * then the data; offsets count from the end of the header. */
typedef struct lr_st_entry {
    char name[LR_MAX_NAME];
    lr_array a;
} lr_st_entry;

typedef struct lr_st {
    uint32_t n;
    lr_st_entry *entries; /* in the header's order */
} lr_st;

/* Parses buf[0 .. len) (the whole file). Refused (LM_EPARSE, naming `what` and the
 * tensor): a header length past the file or above LR_ST_MAX_HEADER, JSON that does not
 * parse (with jansson's line and column) or is not an object, an entry that is not
 * {"dtype": string, "shape": [ints >= 0], "data_offsets": [b, e]}, b > e, e past the
 * data, e - b not numel * itemsize, a name longer than LR_MAX_NAME - 1, two tensors of
 * one name, tensors whose data overlap or leave a gap, data after the last tensor (as
 * the format's reference loader refuses them: the tensors, ordered by offset, cover the
 * data exactly). An unknown dtype gives LR_E_OTHER. LM_ENOMEM. 0 with *out filled (free it
 * with lr_st_free; the arrays point into buf). */
int lr_st_parse(const uint8_t *buf, size_t len, const char *what, lr_st *out, lm_err *err);

/* Reads the safetensors file at path into a new buffer (*buf, freed by the caller with
 * free(); *len its length) and parses it (lr_st_parse). The read is bounded by what the
 * file says of itself, checked before the data is allocated: its 8-byte header length
 * (at most LR_ST_MAX_HEADER, and within a regular file's size), then its header, whose
 * last data offset gives the data's length (within the file's size, and at most
 * max_data bytes), then exactly that many bytes and the end of the file. So a file that
 * is /dev/zero, an endless pipe or a lying header is refused without reading more than
 * its header. LM_EPARSE, LM_ELIMIT, LM_EIO, LM_ENOMEM naming the file. */
int lr_st_read(const char *path, uint64_t max_data, char **buf, size_t *len, lr_st *out,
               lm_err *err);
void lr_st_free(lr_st *st);
/* The entry called name, or NULL. */
const lr_st_entry *lr_st_find(const lr_st *st, const char *name);

/* A tensor to write into a safetensors file. */
typedef struct lr_st_out {
    const char *name;
    hl_dtype dtype;
    uint32_t ndim;
    const int64_t *dims;
    const void *data; /* in the dtype's storage */
    size_t bytes;
} lr_st_out;

/* Writes n tensors in their own dtypes (F32, F16, BF16, F8_E4M3, F8_E5M2, I32, I64,
 * BOOL) into a safetensors file at path. LM_EIO, LM_ENOMEM. */
int lr_st_write(const char *path, const lr_st_out *t, uint32_t n, lm_err *err);

/* ---- conversion ---- */

/* The safetensors name of a dtype ("BF16"). */
const char *lr_st_dtype_name(hl_dtype t);

/* Whether an array of element type e may fill a tensor of dtype t (the table above). */
bool lr_elem_accepted(lr_elem e, hl_dtype t);
/* What a tensor of dtype t accepts, for messages ("f32, or raw 2-byte ('<V2')"). */
const char *lr_accepted_text(hl_dtype t);

/* Converts a's elements into dst (numel elements of dtype t, in its storage). The
 * caller has checked the shape and lr_elem_accepted. A float written as f32 must be
 * exactly a value of t (or NaN), and a bool byte must be 0 or 1: otherwise LM_EDTYPE
 * naming `what`, the element's index and value. */
int lr_convert_in(const lr_array *a, hl_dtype t, void *dst, const char *what, lm_err *err);

/* The .npy form of a tensor of dtype t: the descr and, for a narrow float written as
 * f32 (native false), the widened bytes in a new buffer (*widened, freed by the caller;
 * NULL when the data is written as it is). LM_ENOMEM. */
int lr_npy_form(hl_dtype t, bool native, const void *data, uint64_t numel, const char **descr,
                void **widened, size_t *bytes, lm_err *err);

#endif /* LUMINAL_LR_H */
