/* hl_ref_int.h - the reference runtime's internals, shared by hl_ref_run.c (tensors, the run),
 * hl_ref_view.c (views made concrete), hl_ref_exec.c (one node) and hl_ref_fused.c (the fused
 * multiply-reduce and the row-wise reductions). Not public.
 *
 * Each node's result is a contiguous buffer in its dtype's storage format. Inputs read
 * their producer through a view; a view is turned into per-dim offset tables
 * (offset_d[i] = stride_d[z := i]), so reading a strided tensor costs one table lookup
 * per dim change, and every position a view can produce is bounds-checked once, up
 * front, from the tables' minima and maxima. */
#ifndef LUMINAL_RT_INT_H
#define LUMINAL_RT_INT_H

#include "core/hl_expr_int.h"
#include "core/hl_graph_int.h"
#include "hl_ref.h"

#include <inttypes.h>
#include <math.h>

typedef struct hl__buf {
    hl_dtype dt;
    size_t n;
    void *data;
    bool owned;
    uint32_t ndim;
    int64_t dims[HL_MAX_DIMS];
} hl__buf;

/* Blocks a run freed, kept for its next allocation of the same size: a node's output
 * and its inputs' position tables are as large as the tensors, and a block fresh from the
 * system costs a page fault per 4 KiB when first written, and page faults and zeroing
 * were most of a large elementwise graph's run (the search's check of a 16M-element
 * chain: 81 s before, 25 s after, on the development machine). Only blocks of at least
 * HL__REC_MIN bytes are kept, at most HL__REC_SLOTS of them and cap bytes in all. */
#define HL__REC_SLOTS 16
#define HL__REC_MIN ((size_t)1 << 20)
typedef struct hl__recycler {
    void *p[HL__REC_SLOTS];
    size_t bytes[HL__REC_SLOTS];
    uint32_t n;
    size_t held, cap;
} hl__recycler;

/* A block of n * size bytes (zeroed when zero), from rc when it holds one of that size;
 * NULL on overflow or out of memory. rc may be NULL. */
void *hl__rec_alloc(hl__recycler *rc, size_t n, size_t size, bool zero);
/* Gives back a block of n * size bytes that hl__rec_alloc (or hl__alloc) made. */
void hl__rec_free(hl__recycler *rc, void *p, size_t n, size_t size);
/* Frees every block rc holds. */
void hl__rec_drain(hl__recycler *rc);

/* A view made concrete: dims and per-dim position tables (from rec, given back there). */
typedef struct hl__cview {
    uint32_t ndim;
    int64_t dims[HL_MAX_DIMS];
    int64_t *tab[HL_MAX_DIMS];
    size_t numel;
    hl__recycler *rec;
} hl__cview;

typedef struct hl__run {
    const hl_graph *g;
    const hl_expr_pool *p;
    hl_env env;
    hl__buf *bufs;
    lm_err *err;      /* the caller's record */
    lm_err scratch;   /* what hl_e_eval reports, before it is raised located (hl__ref_eval) */
    uint32_t *fused;  /* fused[reduce id] = the Mul it absorbs, or HL_NONE */
    hl__recycler rec; /* the large blocks the run freed, for its next allocations */
    uint32_t threads; /* hl_run_opts.threads resolved (hl__ref_threads): 1 .. HL_REF_MAX_THREADS */
} hl__run;

#define HL_REF_MAX_THREADS 64
/* The most bytes of packed copies of b (hl_ref_fused.c) the threads of one product hold. */
#define HL_REF_PACKED_MAX ((uint64_t)256 << 20)

/* opts->threads resolved: 0 (or no opts) is the online processors, capped. */
uint32_t hl__ref_threads(const hl_run_opts *opts);
/* The threads a batched product of rows x n outputs over len terms is shared among, of
 * at most `threads` (each given about 2^21 multiply-adds at least); packed: each thread
 * holds a packed copy of b (len x n floats), at most HL_REF_PACKED_MAX bytes of them. */
uint32_t hl__ref_fused_threads(uint32_t threads, uint64_t rows, uint64_t n, uint64_t len,
                               bool packed);

/* Row-major element count of dims; false for a negative dim or size_t overflow. */
static inline bool hl__ref_numel_of(uint32_t ndim, const int64_t *dims, size_t *out)
{
    return hl_numel_of(ndim, dims, out);
}

/* ---- element access: load as f32 / int64, store converting as a Cast does ---- */

static inline float hl__ld_f(const void *d, hl_dtype t, size_t i)
{
    switch (t) {
    case HL_F32:
        return ((const float *)d)[i];
    case HL_F16:
        return hl_f16_to_f32(((const uint16_t *)d)[i]);
    case HL_BF16:
        return hl_bf16_to_f32(((const uint16_t *)d)[i]);
    case HL_F8E4M3:
        return hl_e4m3_to_f32(((const uint8_t *)d)[i]);
    case HL_F8E5M2:
        return hl_e5m2_to_f32(((const uint8_t *)d)[i]);
    case HL_INT:
        return (float)((const int32_t *)d)[i];
    case HL_I64:
        return (float)((const int64_t *)d)[i];
    case HL_BOOL:
        return ((const uint8_t *)d)[i] ? 1.0f : 0.0f;
    default:
        return 0.0f;
    }
}

static inline int64_t hl__ld_i(const void *d, hl_dtype t, size_t i)
{
    switch (t) {
    case HL_INT:
        return ((const int32_t *)d)[i];
    case HL_I64:
        return ((const int64_t *)d)[i];
    case HL_BOOL:
        return ((const uint8_t *)d)[i] != 0;
    default: {
        float r = hl_round_to(HL_I64, hl__ld_f(d, t, i));
        return r >= 9.2233720368547758e18f ? INT64_MAX : (int64_t)r;
    }
    }
}

/* Stores an f32 value, converting as a cast to t does. */
static inline void hl__st_f(void *d, hl_dtype t, size_t i, float v)
{
    switch (t) {
    case HL_F32:
        ((float *)d)[i] = v;
        break;
    case HL_F16:
        ((uint16_t *)d)[i] = hl_f32_to_f16(v);
        break;
    case HL_BF16:
        ((uint16_t *)d)[i] = hl_f32_to_bf16(v);
        break;
    case HL_F8E4M3:
        ((uint8_t *)d)[i] = hl_f32_to_e4m3(v);
        break;
    case HL_F8E5M2:
        ((uint8_t *)d)[i] = hl_f32_to_e5m2(v);
        break;
    case HL_INT: { /* saturating, NaN -> 0, as cvt.rzi.s32.f32 */
        float r = hl_round_to(HL_INT, v);
        ((int32_t *)d)[i] = r >= 2147483648.0f ? INT32_MAX : (int32_t)r;
        break;
    }
    case HL_I64: {
        float r = hl_round_to(HL_I64, v);
        ((int64_t *)d)[i] = r >= 9.2233720368547758e18f ? INT64_MAX : (int64_t)r;
        break;
    }
    case HL_BOOL:
        ((uint8_t *)d)[i] = v != 0.0f;
        break;
    default:
        break;
    }
}

/* Stores an integer value into an integer dtype (Int wraps) or a float (rounded). */
static inline void hl__st_i(void *d, hl_dtype t, size_t i, int64_t v)
{
    switch (t) {
    case HL_INT:
        ((int32_t *)d)[i] = (int32_t)(uint32_t)(uint64_t)v;
        break;
    case HL_I64:
        ((int64_t *)d)[i] = v;
        break;
    case HL_BOOL:
        ((uint8_t *)d)[i] = v != 0;
        break;
    default:
        hl__st_f(d, t, i, (float)v);
        break;
    }
}

static inline bool hl__is_intlike(hl_dtype t)
{
    return t == HL_INT || t == HL_I64 || t == HL_BOOL;
}

/* Row-major walk over a cview: pos is the buffer position of the current element. */
typedef struct hl__walk {
    const hl__cview *c;
    int64_t coord[HL_MAX_DIMS];
    int64_t pos;
} hl__walk;

static inline void hl__walk_init(hl__walk *w, const hl__cview *c)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    if (c->numel)
        for (uint32_t d = 0; d < c->ndim; d++)
            w->pos += c->tab[d][0];
}

static inline void hl__walk_next(hl__walk *w)
{
    const hl__cview *c = w->c;
    for (uint32_t d = c->ndim; d-- > 0;) {
        int64_t i = w->coord[d];
        if (i + 1 < c->dims[d]) {
            w->pos += c->tab[d][i + 1] - c->tab[d][i];
            w->coord[d] = i + 1;
            return;
        }
        w->pos += c->tab[d][0] - c->tab[d][i];
        w->coord[d] = 0;
    }
}

/* Position of logical (row-major) element k of c. */
static inline int64_t hl__cview_pos(const hl__cview *c, int64_t k)
{
    int64_t pos = 0;
    for (uint32_t d = c->ndim; d-- > 0;) {
        int64_t n = c->dims[d];
        pos += c->tab[d][k % n];
        k /= n;
    }
    return pos;
}

/* ---- across files ---- */

/* Raises an error about node id (hl__fail_node: located at the node's origin, the message
 * beginning with what the node is). */
hl_status hl__ref_fail(hl__run *r, int code, uint32_t id, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Evaluates e with z = z into *out; a failure is raised at node id as "what: reason". */
hl_status hl__ref_eval(hl__run *r, uint32_t id, hl_expr e, int64_t z, int64_t *out,
                       const char *what);
/* Evaluates dim expression e (node's context for errors); negative is an error. */
hl_status hl__ref_eval_dim(hl__run *r, uint32_t node, hl_expr e, int64_t *out, const char *what);
/* Builds the tables of input `which` of node `node` and bounds-checks them. */
hl_status hl__ref_make_cview(hl__run *r, uint32_t node, uint32_t which, hl__cview *c);
void hl__ref_cview_free(hl__cview *c);
/* Allocates node id's output buffer from its evaluated shape. */
hl_status hl__ref_alloc_out(hl__run *r, uint32_t id, hl__buf *b);
/* Runs node id (its inputs are ready). */
hl_status hl__ref_exec_node(hl__run *r, uint32_t id);
/* Runs reduce node id with the Mul mul inside it. */
hl_status hl__ref_exec_fused(hl__run *r, uint32_t id, uint32_t mul);
/* A float reduction whose reduced dim is not contiguous, row by row; HL_ERR_VIEW when the
 * layout does not call for it. */
hl_status hl__ref_reduce_rows(hl__run *r, uint32_t id, const hl__cview *c, const hl__buf *in,
                              hl__buf *out, bool isum);

#endif /* LUMINAL_RT_INT_H */
