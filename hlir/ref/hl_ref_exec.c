/* hl_ref_exec.c - one node of the reference runtime: each primitive's arithmetic exactly as
 * docs/hlir.md states it. */
#include "ref/hl_ref_int.h"

static float un_op(hl_op op, float x)
{
    switch (op) {
    case HL_OP_EXP2:
        return exp2f(x);
    case HL_OP_LOG2:
        return log2f(x);
    case HL_OP_SIN:
        return sinf(x);
    case HL_OP_RECIP:
        return 1.0f / x;
    case HL_OP_SQRT:
        return sqrtf(x);
    default:
        return x;
    }
}

/* f32 Add and Mul along rows whose last dim has a constant stride in both inputs (the
 * common case: contiguous, or broadcast along the row): a plain loop the compiler
 * vectorises. The same f32 operation per element as the general loop, so the same bits.
 * False when the layout or op does not fit (the general loop then runs). */
static bool f32_binary_rows(hl_op op, const hl__cview *ca, const hl__cview *cb, const hl__buf *a,
                            const hl__buf *b, hl__buf *out)
{
    if ((op != HL_OP_ADD && op != HL_OP_MUL) || a->dt != HL_F32 || out->dt != HL_F32) return false;
    uint32_t last = ca->ndim - 1;
    if (ca->ndim == 0 || ca->dims[last] < 2) return false;
    int64_t n = ca->dims[last];
    const int64_t *ta = ca->tab[last], *tb = cb->tab[last];
    int64_t sa = ta[1] - ta[0], sb = tb[1] - tb[0];
    for (int64_t j = 2; j < n; j++)
        if (ta[j] != ta[0] + j * sa || tb[j] != tb[0] + j * sb) return false;
    hl__cview ra = *ca, rb = *cb;
    ra.dims[last] = rb.dims[last] = 1;
    size_t rows = out->n / (size_t)n;
    ra.numel = rb.numel = rows;
    hl__walk wa, wb;
    hl__walk_init(&wa, &ra);
    hl__walk_init(&wb, &rb);
    for (size_t row = 0; row < rows; row++, hl__walk_next(&wa), hl__walk_next(&wb)) {
        const float *pa = (const float *)a->data + wa.pos, *pb = (const float *)b->data + wb.pos;
        float *o = (float *)out->data + row * (size_t)n;
        if (op == HL_OP_ADD && sa == 1 && sb == 1)
            for (int64_t j = 0; j < n; j++)
                o[j] = pa[j] + pb[j];
        else if (op == HL_OP_MUL && sa == 1 && sb == 1)
            for (int64_t j = 0; j < n; j++)
                o[j] = pa[j] * pb[j];
        else if (op == HL_OP_ADD && sa == 1 && sb == 0)
            for (int64_t j = 0; j < n; j++)
                o[j] = pa[j] + pb[0];
        else if (op == HL_OP_MUL && sa == 1 && sb == 0)
            for (int64_t j = 0; j < n; j++)
                o[j] = pa[j] * pb[0];
        else if (op == HL_OP_ADD)
            for (int64_t j = 0; j < n; j++)
                o[j] = pa[j * sa] + pb[j * sb];
        else
            for (int64_t j = 0; j < n; j++)
                o[j] = pa[j * sa] * pb[j * sb];
    }
    return true;
}

hl_status hl__ref_exec_node(hl__run *r, uint32_t id)
{
    const hl_node *nd = hl_graph_node(r->g, id);
    hl__buf *out = &r->bufs[id];
    hl_status st;
    if (nd->op == HL_OP_INPUT) return HL_OK; /* bound before the loop */
    if (r->fused[id] != HL_NONE) return hl__ref_exec_fused(r, id, r->fused[id]);
    if ((st = hl__ref_alloc_out(r, id, out))) return st;
    hl__cview cv[HL_MAX_INPUTS];
    memset(cv, 0, sizeof cv);
    uint32_t made = 0;
    for (; made < nd->n_in; made++)
        if ((st = hl__ref_make_cview(r, id, made, &cv[made]))) goto done;
    const hl__buf *in0 = nd->n_in > 0 ? &r->bufs[nd->in[0].node] : NULL;
    const hl__buf *in1 = nd->n_in > 1 ? &r->bufs[nd->in[1].node] : NULL;
    switch (nd->op) {
    case HL_OP_CONSTANT:
        hl__st_f(out->data, HL_F32, 0, nd->constant);
        break;
    case HL_OP_IOTA:
        for (size_t i = 0; i < out->n; i++) {
            int64_t v;
            if ((st = hl__ref_eval(r, id, nd->iota_expr, (int64_t)i, &v, "its expression")))
                goto done;
            if (v < INT32_MIN || v > INT32_MAX) {
                st = hl__ref_fail(r, HL_ERR_RUNTIME, id,
                                  "value %" PRId64 " at %zu does not fit int", v, i);
                goto done;
            }
            ((int32_t *)out->data)[i] = (int32_t)v;
        }
        break;
    case HL_OP_OUTPUT:
    case HL_OP_CAST:
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT: {
        hl__walk w;
        hl__walk_init(&w, &cv[0]);
        bool ints = hl__is_intlike(in0->dt) && hl__is_intlike(out->dt);
        for (size_t i = 0; i < out->n; i++, hl__walk_next(&w)) {
            if (ints)
                hl__st_i(out->data, out->dt, i, hl__ld_i(in0->data, in0->dt, (size_t)w.pos));
            else if (hl__is_intlike(in0->dt) && !hl__is_intlike(out->dt))
                hl__st_f(out->data, out->dt, i, (float)hl__ld_i(in0->data, in0->dt, (size_t)w.pos));
            else
                hl__st_f(out->data, out->dt, i,
                         un_op(nd->op, hl__ld_f(in0->data, in0->dt, (size_t)w.pos)));
        }
        break;
    }
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN: {
        if (f32_binary_rows(nd->op, &cv[0], &cv[1], in0, in1, out)) break;
        hl__walk wa, wb;
        hl__walk_init(&wa, &cv[0]);
        hl__walk_init(&wb, &cv[1]);
        hl_dtype dt = in0->dt;
        for (size_t i = 0; i < out->n; i++, hl__walk_next(&wa), hl__walk_next(&wb)) {
            if (hl__is_intlike(dt)) {
                int64_t a = hl__ld_i(in0->data, dt, (size_t)wa.pos),
                        b = hl__ld_i(in1->data, dt, (size_t)wb.pos);
                int64_t v;
                switch (nd->op) {
                case HL_OP_ADD:
                    v = (int64_t)((uint64_t)a + (uint64_t)b);
                    break;
                case HL_OP_MUL:
                    v = (int64_t)((uint64_t)a * (uint64_t)b);
                    break;
                case HL_OP_MOD:
                    if (b == 0) {
                        st = hl__ref_fail(r, HL_ERR_RUNTIME, id,
                                          "integer modulo by zero at element %zu", i);
                        goto done;
                    }
                    if (dt == HL_INT)
                        v = (b == -1) ? 0 : (int64_t)((int32_t)a % (int32_t)b);
                    else
                        v = (b == -1) ? 0 : a % b;
                    break;
                default:
                    v = a < b;
                    break;
                }
                hl__st_i(out->data, out->dt, i, v);
            } else {
                float a = hl__ld_f(in0->data, dt, (size_t)wa.pos),
                      b = hl__ld_f(in1->data, dt, (size_t)wb.pos);
                switch (nd->op) {
                case HL_OP_ADD:
                    hl__st_f(out->data, out->dt, i, a + b);
                    break;
                case HL_OP_MUL:
                    hl__st_f(out->data, out->dt, i, a * b);
                    break;
                case HL_OP_MOD:
                    hl__st_f(out->data, out->dt, i, fmodf(a, b));
                    break;
                default:
                    ((uint8_t *)out->data)[i] = a < b;
                    break;
                }
            }
        }
        break;
    }
    case HL_OP_GATHER: {
        hl__walk w;
        hl__walk_init(&w, &cv[0]);
        size_t es = hl_dtype_size(out->dt);
        for (size_t i = 0; i < out->n; i++, hl__walk_next(&w)) {
            int64_t k = ((const int32_t *)in0->data)[w.pos];
            if (k < 0 || (uint64_t)k >= cv[1].numel) {
                st = hl__ref_fail(r, HL_ERR_RUNTIME, id,
                                  "index %" PRId64 " at position %zu is out of range "
                                  "for data of %zu elements",
                                  k, i, cv[1].numel);
                goto done;
            }
            memcpy((char *)out->data + i * es,
                   (const char *)in1->data + (size_t)hl__cview_pos(&cv[1], k) * es, es);
        }
        break;
    }
    case HL_OP_SCATTER: {
        const hl__buf *src = &r->bufs[nd->in[2].node];
        size_t es = hl_dtype_size(out->dt);
        hl__walk w, wi, ws;
        hl__walk_init(&w, &cv[0]);
        for (size_t i = 0; i < out->n; i++, hl__walk_next(&w))
            memcpy((char *)out->data + i * es, (const char *)in0->data + (size_t)w.pos * es, es);
        hl__walk_init(&wi, &cv[1]);
        hl__walk_init(&ws, &cv[2]);
        for (size_t i = 0; i < cv[1].numel; i++, hl__walk_next(&wi), hl__walk_next(&ws)) {
            int64_t k = ((const int32_t *)in1->data)[wi.pos];
            if (k < 0 || (uint64_t)k >= out->n) {
                st = hl__ref_fail(r, HL_ERR_RUNTIME, id,
                                  "index %" PRId64 " at position %zu is out of range "
                                  "for a destination of %zu elements",
                                  k, i, out->n);
                goto done;
            }
            memcpy((char *)out->data + (size_t)k * es,
                   (const char *)src->data + (size_t)ws.pos * es, es);
        }
        break;
    }
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE: {
        /* walk the view with the reduced dim held at 0, then run along it */
        hl__cview outer = cv[0];
        uint32_t ax = nd->axis;
        int64_t len = cv[0].dims[ax];
        const int64_t *along = cv[0].tab[ax];
        outer.dims[ax] = 1;
        outer.numel = out->n;
        hl__walk w;
        hl__walk_init(&w, &outer);
        if (len == 0 && out->n) w.pos = 0; /* no element is read */
        bool isum = nd->op == HL_OP_SUM_REDUCE;
        hl_dtype dt = in0->dt;
        if (!hl__is_intlike(dt) &&
            (st = hl__ref_reduce_rows(r, id, &cv[0], in0, out, isum)) != HL_OK) {
            if (st == HL_ERR_VIEW)
                st = HL_OK; /* not that layout: the loop below */
            else
                goto done;
        } else if (!hl__is_intlike(dt)) {
            break;
        }
        for (size_t i = 0; i < out->n; i++, hl__walk_next(&w)) {
            int64_t base = len ? w.pos - along[0] : 0;
            if (hl__is_intlike(dt)) {
                int64_t acc = isum ? 0 : (dt == HL_INT ? INT32_MIN : INT64_MIN);
                for (int64_t k = 0; k < len; k++) {
                    int64_t v = hl__ld_i(in0->data, dt, (size_t)(base + along[k]));
                    if (isum)
                        acc = (int64_t)((uint64_t)acc + (uint64_t)v);
                    else if (v > acc)
                        acc = v;
                }
                hl__st_i(out->data, out->dt, i, acc);
            } else {
                float acc = isum ? 0.0f : -INFINITY;
                for (int64_t k = 0; k < len; k++) {
                    float v = hl__ld_f(in0->data, dt, (size_t)(base + along[k]));
                    if (isum)
                        acc += v;
                    else if (isnan(v) || v > acc || isnan(acc))
                        acc = isnan(acc) ? acc : v;
                }
                hl__st_f(out->data, out->dt, i, acc);
            }
        }
        break;
    }
    default:
        break;
    }
    st = HL_OK;
done:
    for (uint32_t i = 0; i < made; i++)
        hl__ref_cview_free(&cv[i]);
    return st;
}
