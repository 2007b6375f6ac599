/* hl_int.h - internals shared by every part of the hlir module (not public). Each part
 * keeps its own private header beside its sources (core/hl_expr_int.h, ...).
 *
 * Memory goes through one door: hl__alloc and friends, which check sizes for overflow
 * and return NULL on failure (callers turn NULL into HL_ERR_NOMEM and leave their
 * structures as they were). Errors go through one door too: hl__fail, which ends in
 * base's lm_err_setv; the helpers that locate an error at a graph node or at the
 * builder's current origin (hl__fail_node, hl__graph_fail) call it. */
#ifndef LUMINAL_HL_INT_H
#define LUMINAL_HL_INT_H

#include "base.h"
#include "hl_core.h"
#include "hl_expr.h"
#include "hl_view.h"
#include "hl_graph.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The error door: records code, the location (loc may be NULL) and the message in err
 * (lm_err_setv: the first error wins, err may be NULL) and returns the record's code. */
hl_status hl__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
hl_status hl__failv(lm_err *err, int code, const lm_loc *loc, const char *fmt, va_list ap);

/* Raises an error about node id of g: the location is g's source file, the node's origin
 * (the user's node name and its line and column) and its id, and the message begins with
 * what the node is ("pad (lowered to Gather): ", or "node 7 (Gather): " when the node has
 * no origin). id may be g's node count: the node about to be added, with op, from the
 * builder's current origin. */
hl_status hl__fail_node(const hl_graph *g, lm_err *err, int code, uint32_t id, hl_op op,
                        const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

/* The one allocation door, over base's (base.h, "Memory"): hl__alloc(n, size) gives n *
 * size bytes, NULL on overflow or failure, never NULL for n == 0; hl__zalloc zero-fills;
 * hl__realloc leaves p untouched on failure; hl__grow returns 0, or -1 with *arr and *cap
 * untouched. Tests fail the n-th allocation with lm_mem_fail_after and count them with
 * lm_mem_stats. */
LM_MEM_DOOR(hl)

/* The largest finite value of float dtype t (FLT_MAX, 65504, ...); 0 for a dtype that is
 * not a float. */
double hl__dtype_float_max(hl_dtype t);

/* bf16 <-> f32 at the bit level (round to nearest even; NaN -> quiet NaN keeping the
 * sign; overflow carries into inf), inline for the runtime's inner loops. */
static inline uint16_t hl__bf16_enc(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7FC0u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float hl__bf16_dec(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The generic (slow, obviously correct) f16 / bf16 converters, for tests of the fast
 * bit-level ones. */
uint16_t hl__f16_slow(float x);
float hl__f16_slow_decode(uint16_t h);
uint16_t hl__bf16_slow(float x);

/* Normalises axis (negative counts from the end) against ndim; -1 when out of range. */
static inline int hl__axis(int axis, uint32_t ndim)
{
    int n = (int)ndim;
    if (axis < 0) axis += n;
    return (axis < 0 || axis >= n) ? -1 : axis;
}

/* Prints dims as "[a, b]" to f. */
void hl__dims_fprint(const hl_expr_pool *p, uint32_t ndim, const hl_expr *dims, FILE *f);
/* Writes dims as "[a, b]" into buf (cap bytes, always NUL-terminated). */
void hl__dims_str(const hl_expr_pool *p, uint32_t ndim, const hl_expr *dims, char *buf, size_t cap);

#endif /* LUMINAL_HL_INT_H */
