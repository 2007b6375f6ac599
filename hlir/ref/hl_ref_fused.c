/* hl_ref_fused.c - a Mul read only by a reduce runs inside it, and column reductions run
 * row by row.
 *
 * A Mul whose one reader is a SumReduce reading it whole, in order (a matmul's [m, n, k]
 * product, a dot product, a norm's sum of squares) is not a node of its own: it is a dot
 * product, computed as PyTorch, cuBLASLt and the same graph with f32 casts compute it.
 * Each product is exact (f32 holds the product of two bf16, f16 or FP8 values exactly;
 * of two f32 values it is the f32 product), the products are added in f32 in index
 * order, and only the sum is rounded to the dtype. A MaxReduce of a Mul takes the max of
 * the products rounded to the dtype, as the separate nodes would (rounding is monotonic,
 * so that is also the rounded max of the exact products). The [m, n, k] product is never
 * materialised; rows are computed in batches sharing b. Each output element receives its
 * terms in index order, so the layout changes no bit (tests compare the paths). A large
 * batched product is shared among threads (hl__ref_fused_threads), batch by batch: each
 * batch is computed by one thread with the same code, so the bits do not depend on how
 * many threads there are. */
#include "ref/hl_ref_int.h"

#include <pthread.h>

/* Rows in a batch of the matmul layout (see exec_fused). */
enum { MM_ROWS = 8 };

/* acc[q][j] = sum over k of a[bas[q] + along_a[k] + ta0] * b[bb + along_b[k] + tb0 + j]
 * in f32, k in order; each product exact (dt is F32 or BF16). */
static void mm_rows(const void *a, const void *b, hl_dtype dt, const int64_t *bas, size_t cnt,
                    int64_t bb, const int64_t *along_a, const int64_t *along_b, int64_t len,
                    int64_t ta0, int64_t tb0, int64_t n, float *acc)
{
    for (size_t i = 0; i < cnt * (size_t)n; i++)
        acc[i] = 0.0f;
    for (int64_t k = 0; k < len; k++) {
        if (dt == HL_F32) {
            const float *rb = (const float *)b + bb + along_b[k] + tb0;
            for (size_t q = 0; q < cnt; q++) {
                const float x = ((const float *)a)[bas[q] + along_a[k] + ta0];
                float *aq = acc + q * (size_t)n;
                for (int64_t j = 0; j < n; j++)
                    aq[j] += x * rb[j];
            }
        } else {
            const uint16_t *rb = (const uint16_t *)b + bb + along_b[k] + tb0;
            for (size_t q = 0; q < cnt; q++) {
                const float x = hl__bf16_dec(((const uint16_t *)a)[bas[q] + along_a[k] + ta0]);
                float *aq = acc + q * (size_t)n;
                for (int64_t j = 0; j < n; j++)
                    aq[j] += x * hl__bf16_dec(rb[j]);
            }
        }
    }
}

/* As mm_rows, with b already decoded into packed[k * n + j]. */
static void mm_rows_packed(const void *a, hl_dtype dt, const int64_t *bas, size_t cnt,
                           const int64_t *along_a, int64_t ta0, const float *packed, int64_t len,
                           int64_t n, float *acc)
{
    for (size_t i = 0; i < cnt * (size_t)n; i++)
        acc[i] = 0.0f;
    for (int64_t k = 0; k < len; k++) {
        const float *rb = packed + k * n;
        for (size_t q = 0; q < cnt; q++) {
            float *aq = acc + q * (size_t)n;
            if (dt == HL_F32) {
                const float x = ((const float *)a)[bas[q] + along_a[k] + ta0];
                for (int64_t j = 0; j < n; j++)
                    aq[j] += x * rb[j];
            } else {
                const float x = hl__bf16_dec(((const uint16_t *)a)[bas[q] + along_a[k] + ta0]);
                for (int64_t j = 0; j < n; j++)
                    aq[j] += x * rb[j];
            }
        }
    }
}

/* The batched product of exec_fused: rows walked by oa (a's bases) and ob (b's), cut into
 * batches of up to MM_ROWS consecutive rows reading the same b. Share t of nt computes the
 * batches whose index is t modulo nt, with its own accumulators (facc, MM_ROWS * n) and,
 * unless mm_shape, its own copy of b packed per distinct b base (packed, len * n). */
typedef struct mm_job {
    const hl__buf *a, *b;
    hl__buf *out;
    hl_dtype dt;
    const hl__cview *oa, *ob;
    size_t rows;
    int64_t len, n;
    const int64_t *along_a, *along_b, *ta, *tb;
    bool mm_shape;
    uint32_t nt;
} mm_job;

typedef struct mm_share {
    const mm_job *j;
    uint32_t t;
    float *facc, *packed;
} mm_share;

static void mm_share_run(const mm_share *sh)
{
    const mm_job *J = sh->j;
    const int64_t len = J->len, n = J->n;
    const int64_t *along_a = J->along_a, *along_b = J->along_b, *ta = J->ta, *tb = J->tb;
    const hl_dtype dt = J->dt;
    float *facc = sh->facc, *packed = sh->packed;
    int64_t packed_bb = 0;
    bool have_packed = false;
    hl__walk wa, wb;
    hl__walk_init(&wa, J->oa);
    hl__walk_init(&wb, J->ob);
    size_t batch = 0;
    for (size_t row = 0; row < J->rows; row++, hl__walk_next(&wa), hl__walk_next(&wb), batch++) {
        int64_t bb = wb.pos - (len ? along_b[0] : 0) - tb[0];
        /* up to MM_ROWS consecutive rows reading the same b share each of its rows, so b
           streams from memory once per batch instead of once per row */
        int64_t bas[MM_ROWS];
        size_t cnt = 0, row0 = row;
        bas[cnt++] = wa.pos - (len ? along_a[0] : 0) - ta[0];
        while (cnt < MM_ROWS && row + 1 < J->rows) {
            hl__walk wa2 = wa, wb2 = wb;
            hl__walk_next(&wa2);
            hl__walk_next(&wb2);
            if (wb2.pos - (len ? along_b[0] : 0) - tb[0] != bb) break;
            wa = wa2;
            wb = wb2;
            row++;
            bas[cnt++] = wa.pos - (len ? along_a[0] : 0) - ta[0];
        }
        if (batch % J->nt != sh->t) continue;
        if (J->mm_shape) {
            mm_rows(J->a->data, J->b->data, dt, bas, cnt, bb, along_a, along_b, len, ta[0], tb[0],
                    n, facc);
        } else {
            if (!have_packed || packed_bb != bb) {
                for (int64_t k = 0; k < len; k++)
                    for (int64_t j = 0; j < n; j++)
                        packed[k * n + j] =
                            hl__ld_f(J->b->data, dt, (size_t)(bb + along_b[k] + tb[j]));
                packed_bb = bb;
                have_packed = true;
            }
            mm_rows_packed(J->a->data, dt, bas, cnt, along_a, ta[0], packed, len, n, facc);
        }
        for (size_t q = 0; q < cnt; q++)
            for (int64_t j = 0; j < n; j++)
                hl__st_f(J->out->data, J->out->dt, (row0 + q) * (size_t)n + (size_t)j,
                         facc[q * (size_t)n + (size_t)j]);
    }
}

static void *mm_share_main(void *arg)
{
    mm_share_run(arg);
    return NULL;
}

uint32_t hl__ref_fused_threads(uint32_t threads, uint64_t rows, uint64_t n, uint64_t len,
                               bool packed)
{
    if (threads <= 1) return 1;
    /* about 2^21 multiply-adds (a millisecond) a thread at least, a batch each at most */
    double work = (double)rows * (double)(n ? n : 1) * (double)(len ? len : 1);
    double t = floor(work / (double)(1u << 21)), batches = ceil((double)rows / MM_ROWS);
    if (t > batches) t = batches;
    /* a packed copy of b a thread: at most HL_REF_PACKED_MAX bytes of them */
    double pb = (double)(len ? len : 1) * (double)(n ? n : 1) * sizeof(float);
    if (packed && t > floor((double)HL_REF_PACKED_MAX / pb))
        t = floor((double)HL_REF_PACKED_MAX / pb);
    if (t > threads) t = threads;
    return t >= 1 ? (uint32_t)t : 1;
}

/* Runs the batched product on up to r->threads threads; HL_ERR_NOMEM when even one share's
 * buffers cannot be had. A thread that cannot be started leaves its share to this one. */
static hl_status mm_run(hl__run *r, uint32_t id, mm_job *J)
{
    J->nt =
        hl__ref_fused_threads(r->threads, J->rows, (uint64_t)J->n, (uint64_t)J->len, !J->mm_shape);
    mm_share sh[HL_REF_MAX_THREADS];
    pthread_t th[HL_REF_MAX_THREADS];
    bool started[HL_REF_MAX_THREADS] = {false};
    size_t nf = (size_t)(J->n ? J->n : 1) * MM_ROWS;
    size_t np = J->mm_shape ? 0 : (size_t)(J->len ? J->len : 1) * (size_t)(J->n ? J->n : 1);
    uint32_t made = 0;
    for (; made < J->nt; made++) {
        sh[made] = (mm_share){.j = J, .t = made};
        sh[made].facc = hl__alloc(nf, sizeof(float));
        sh[made].packed = np ? hl__alloc(np, sizeof(float)) : NULL;
        if (!sh[made].facc || (np && !sh[made].packed)) {
            hl__free(sh[made].facc);
            hl__free(sh[made].packed);
            break;
        }
    }
    if (made == 0) return hl__ref_fail(r, HL_ERR_NOMEM, id, "out of memory");
    J->nt = made; /* fewer buffers: fewer shares */
    for (uint32_t t = 1; t < made; t++)
        started[t] = pthread_create(&th[t], NULL, mm_share_main, &sh[t]) == 0;
    mm_share_run(&sh[0]);
    for (uint32_t t = 1; t < made; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            mm_share_run(&sh[t]);
    }
    for (uint32_t t = 0; t < made; t++) {
        hl__free(sh[t].facc);
        hl__free(sh[t].packed);
    }
    return HL_OK;
}

/* A SumReduce / MaxReduce reading a Mul that nothing else reads, through a contiguous
 * view of the Mul's own shape, runs as one loop (see the top of the file for the
 * arithmetic: a sum of exact products in f32, a max of rounded products). */
hl_status hl__ref_exec_fused(hl__run *r, uint32_t id, uint32_t mul)
{
    const hl_node *nd = hl_graph_node(r->g, id);
    const hl_node *mn = hl_graph_node(r->g, mul);
    hl__buf *out = &r->bufs[id];
    hl_status st;
    if ((st = hl__ref_alloc_out(r, id, out))) return st;
    hl__cview cv[2];
    memset(cv, 0, sizeof cv);
    if ((st = hl__ref_make_cview(r, mul, 0, &cv[0]))) return st;
    if ((st = hl__ref_make_cview(r, mul, 1, &cv[1]))) {
        hl__ref_cview_free(&cv[0]);
        return st;
    }
    /* Rows: the output's last dim (input dim od) is swept innermost for each k, so a
     * matmul streams through b's rows instead of striding down its columns. Each output
     * element still receives its products in k order, so the sums are the same bits. */
    const hl__buf *a = &r->bufs[mn->in[0].node], *b = &r->bufs[mn->in[1].node];
    uint32_t ax = nd->axis;
    int od = -1;
    for (uint32_t d = cv[0].ndim; d-- > 0;)
        if (d != ax) {
            od = (int)d;
            break;
        }
    static const int64_t zero = 0;
    int64_t len = cv[0].dims[ax], n = od >= 0 ? cv[0].dims[od] : 1;
    const int64_t *along_a = cv[0].tab[ax], *along_b = cv[1].tab[ax];
    const int64_t *ta = od >= 0 ? cv[0].tab[od] : &zero, *tb = od >= 0 ? cv[1].tab[od] : &zero;
    /* the matmul layout: a constant along the row (ta[j] all equal), b contiguous along it
       (tb[j] = tb[0] + j); its inner loop needs no index tables and vectorises */
    bool mm_shape = true, ta_const = true;
    for (int64_t j = 1; j < n && ta_const; j++) {
        ta_const = ta[j] == ta[0];
        mm_shape = mm_shape && ta_const && tb[j] == tb[0] + j;
    }
    hl__cview oa = cv[0], ob = cv[1];
    oa.dims[ax] = ob.dims[ax] = 1;
    if (od >= 0) oa.dims[od] = ob.dims[od] = 1;
    size_t rows = n ? out->n / (size_t)n : 0;
    oa.numel = ob.numel = rows;
    bool isum = nd->op == HL_OP_SUM_REDUCE;
    hl_dtype dt = mn->dtype;
    bool ints = hl__is_intlike(dt);
    /* With a constant along the row, the batched kernel (mm_run); with b in another layout
       than the matmul's (a transposed b, as in q k^T), b is packed once per distinct b base
       into packed[k][j] (decoded to f32, exact) and the same kernel runs on the packed copy.
       f16 and FP8 take the general loop below, which computes the same sums. */
    if (!ints && isum && ta_const && (dt == HL_F32 || dt == HL_BF16)) {
        mm_job J = {.a = a,
                    .b = b,
                    .out = out,
                    .dt = dt,
                    .oa = &oa,
                    .ob = &ob,
                    .rows = rows,
                    .len = len,
                    .n = n,
                    .along_a = along_a,
                    .along_b = along_b,
                    .ta = ta,
                    .tb = tb,
                    .mm_shape = mm_shape};
        st = mm_run(r, id, &J);
        hl__ref_cview_free(&cv[0]);
        hl__ref_cview_free(&cv[1]);
        return st;
    }
    /* the general loop: a row of accumulators */
    float *facc = ints ? NULL : hl__alloc(n ? (size_t)n : 1, sizeof(float));
    int64_t *iacc = ints ? hl__alloc(n ? (size_t)n : 1, sizeof(int64_t)) : NULL;
    if (!facc && !iacc) {
        hl__ref_cview_free(&cv[0]);
        hl__ref_cview_free(&cv[1]);
        return hl__ref_fail(r, HL_ERR_NOMEM, id, "out of memory");
    }
    hl__walk wa, wb;
    hl__walk_init(&wa, &oa);
    hl__walk_init(&wb, &ob);
    for (size_t row = 0; row < rows; row++, hl__walk_next(&wa), hl__walk_next(&wb)) {
        int64_t ba = wa.pos - (len ? along_a[0] : 0) - ta[0];
        int64_t bb = wb.pos - (len ? along_b[0] : 0) - tb[0];
        if (ints) {
            int64_t init = isum ? 0 : (dt == HL_INT ? INT32_MIN : INT64_MIN);
            for (int64_t j = 0; j < n; j++)
                iacc[j] = init;
            for (int64_t k = 0; k < len; k++) {
                int64_t ka = ba + along_a[k], kb = bb + along_b[k];
                for (int64_t j = 0; j < n; j++) {
                    int64_t x = hl__ld_i(a->data, dt, (size_t)(ka + ta[j]));
                    int64_t y = hl__ld_i(b->data, dt, (size_t)(kb + tb[j]));
                    int64_t v = (int64_t)((uint64_t)x * (uint64_t)y);
                    if (dt == HL_INT) v = (int32_t)(uint32_t)(uint64_t)v; /* as the Mul stores it */
                    if (isum)
                        iacc[j] = (int64_t)((uint64_t)iacc[j] + (uint64_t)v);
                    else if (v > iacc[j])
                        iacc[j] = v;
                }
            }
            for (int64_t j = 0; j < n; j++)
                hl__st_i(out->data, out->dt, row * (size_t)n + (size_t)j, iacc[j]);
            continue;
        }
        for (int64_t j = 0; j < n; j++)
            facc[j] = isum ? 0.0f : -INFINITY;
        if (isum && dt == HL_F32) { /* without per-element dispatch */
            const float *pa = a->data, *pb = b->data;
            for (int64_t k = 0; k < len; k++) {
                const float *ra = pa + ba + along_a[k], *rb = pb + bb + along_b[k];
                for (int64_t j = 0; j < n; j++)
                    facc[j] += ra[ta[j]] * rb[tb[j]];
            }
        } else if (isum && dt == HL_BF16) {
            const uint16_t *pa = a->data, *pb = b->data;
            for (int64_t k = 0; k < len; k++) {
                const uint16_t *ra = pa + ba + along_a[k], *rb = pb + bb + along_b[k];
                for (int64_t j = 0; j < n; j++)
                    facc[j] += hl__bf16_dec(ra[ta[j]]) * hl__bf16_dec(rb[tb[j]]);
            }
        } else {
            for (int64_t k = 0; k < len; k++) {
                int64_t ka = ba + along_a[k], kb = bb + along_b[k];
                for (int64_t j = 0; j < n; j++) {
                    float v = hl__ld_f(a->data, dt, (size_t)(ka + ta[j])) *
                              hl__ld_f(b->data, dt, (size_t)(kb + tb[j]));
                    if (!isum && dt != HL_F32) v = hl_round_to(dt, v); /* max: as stored */
                    if (isum)
                        facc[j] += v;
                    else if (!isnan(facc[j]) && (isnan(v) || v > facc[j]))
                        facc[j] = v;
                }
            }
        }
        for (int64_t j = 0; j < n; j++)
            hl__st_f(out->data, out->dt, row * (size_t)n + (size_t)j, facc[j]);
    }
    hl__free(facc);
    hl__free(iacc);
    hl__ref_cview_free(&cv[0]);
    hl__ref_cview_free(&cv[1]);
    return HL_OK;
}

/* A float reduction whose reduced dim is not contiguous (a column sum) runs row by row
 * with the output's last dim innermost, so memory is read in order; each output element
 * still adds its inputs in index order, so the bits are those of the simple loop.
 * Returns HL_ERR_VIEW (and does nothing) when the layout does not call for it. */
hl_status hl__ref_reduce_rows(hl__run *r, uint32_t id, const hl__cview *c, const hl__buf *in,
                              hl__buf *out, bool isum)
{
    uint32_t ax = hl_graph_node(r->g, id)->axis;
    int64_t len = c->dims[ax];
    const int64_t *along = c->tab[ax];
    bool unit = true;
    for (int64_t k = 1; k < len && unit; k++)
        unit = along[k] == along[0] + k;
    int od = -1;
    for (uint32_t d = c->ndim; d-- > 0;)
        if (d != ax) {
            od = (int)d;
            break;
        }
    if (unit || od < 0 || c->dims[od] < 2 || len < 2) return HL_ERR_VIEW;
    int64_t n = c->dims[od];
    const int64_t *tj = c->tab[od];
    float *acc = hl__alloc((size_t)n, sizeof(float));
    if (!acc) return hl__ref_fail(r, HL_ERR_NOMEM, id, "out of memory");
    hl__cview rows_view = *c;
    rows_view.dims[ax] = rows_view.dims[od] = 1;
    size_t rows = out->n / (size_t)n;
    rows_view.numel = rows;
    hl__walk w;
    hl__walk_init(&w, &rows_view);
    hl_dtype dt = in->dt;
    for (size_t row = 0; row < rows; row++, hl__walk_next(&w)) {
        int64_t base = w.pos - along[0] - tj[0];
        for (int64_t j = 0; j < n; j++)
            acc[j] = isum ? 0.0f : -INFINITY;
        for (int64_t k = 0; k < len; k++) {
            int64_t kb = base + along[k];
            if (isum && dt == HL_F32) {
                const float *p = (const float *)in->data + kb;
                for (int64_t j = 0; j < n; j++)
                    acc[j] += p[tj[j]];
                continue;
            }
            for (int64_t j = 0; j < n; j++) {
                float v = hl__ld_f(in->data, dt, (size_t)(kb + tj[j]));
                if (isum)
                    acc[j] += v;
                else if (!isnan(acc[j]) && (isnan(v) || v > acc[j]))
                    acc[j] = v;
            }
        }
        for (int64_t j = 0; j < n; j++)
            hl__st_f(out->data, out->dt, row * (size_t)n + (size_t)j, acc[j]);
    }
    hl__free(acc);
    return HL_OK;
}
