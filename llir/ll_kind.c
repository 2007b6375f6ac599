/* ll_kind.c - the fields of a backend kind node read out of the search space (ll_kind.h):
 * a K* or F* kind's primitive (the views from its shape and strides ELists, a
 * reduction's view with the reduced dim last, the Cast's target, the Iota's expression
 * and length, the Constant's value; out_strides must be contiguous), KMatmul's matmul
 * from the strides the rule matched, Blas's 19 fields, an attention's fields; the dtype
 * contracts; and ll__check_kinds, which decodes every kind of the space once when it is
 * built, so that a genome's graph never meets a kind whose fields do not form its op. */
#include "ll_kind.h"

#include <math.h>
#include <stdio.h>

int ll__kind_elist(ll__kd *b, uint32_t kn, uint32_t f, const ll_op_info *o, uint32_t *n,
                   hl_expr *out)
{
    return ll__elist(&b->xd, ll__kid(b->s, kn, f), o->fields[f].name, n, out);
}

static int field_expr(ll__kd *b, uint32_t kn, uint32_t f, hl_expr *out)
{
    return ll__expr(&b->xd, ll__kid(b->s, kn, f), out);
}

int ll__kind_dtype(ll__kd *b, uint32_t cls, uint32_t kn, uint32_t f, const ll_op_info *o,
                   hl_dtype *out)
{
    int d = ll__dtype_of(b->s, ll__kid(b->s, kn, f));
    if (d < 0)
        return ll__space_fail(b->s, b->err, b->what, cls, kn, "field '%s' is not a readable DType",
                              o->fields[f].name);
    *out = (hl_dtype)d;
    return LM_OK;
}

static int64_t field_i64(ll__kd *b, uint32_t kn, uint32_t f)
{
    return eg_value_as_i64(b->s->ser.class_value[ll__kid(b->s, kn, f)]);
}

double ll__kind_f64(ll__kd *b, uint32_t kn, uint32_t f)
{
    return eg_value_as_f64(b->s->ser.class_value[ll__kid(b->s, kn, f)]);
}

/* A field's dtype contract, evaluated. */
int ll__kind_contract(ll__kd *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_dt_contract ct,
                      hl_dtype as_input, hl_dtype *out)
{
    switch (ct.rule) {
    case LL_DT_FIELD:
        return ll__kind_dtype(b, cls, kn, ct.arg, o, out);
    case LL_DT_FIXED:
        *out = (hl_dtype)ct.arg;
        return LM_OK;
    default:
        *out = as_input;
        return LM_OK;
    }
}

static hl_expr pool_fail(ll__kd *b, uint32_t cls, uint32_t kn)
{
    if (hl_expr_pool_failed(b->xd.p))
        ll__oom(b->err, "graph expressions");
    else
        ll__space_fail(b->s, b->err, b->what, cls, kn,
                       "an expression built from the fields overflows int64");
    return HL_NONE;
}

/* The contiguous strides of dims[0..n) in the graph's pool (as hl_view_contiguous builds
 * them). */
static int contiguous(ll__kd *b, uint32_t cls, uint32_t kn, uint32_t n, const hl_expr *dims,
                      hl_expr *out)
{
    hl_expr_pool *p = b->xd.p;
    hl_expr inner = hl_e_num(p, 1), z = hl_e_z(p);
    for (uint32_t i = n; i-- > 0;) {
        out[i] = hl_e_mul(p, z, inner);
        inner = hl_e_mul(p, inner, dims[i]);
        if (out[i] == HL_NONE || inner == HL_NONE) {
            pool_fail(b, cls, kn);
            return b->err->code;
        }
    }
    return LM_OK;
}

static int check_out_strides(ll__kd *b, uint32_t cls, uint32_t kn, const ll_op_info *o, uint32_t f,
                             uint32_t n, const hl_expr *dims)
{
    hl_expr got[HL_MAX_DIMS], want[HL_MAX_DIMS];
    uint32_t m;
    int rc = ll__kind_elist(b, kn, f, o, &m, got);
    if (!rc) rc = contiguous(b, cls, kn, n, dims, want);
    if (rc) return rc;
    if (m != n)
        return ll__space_fail(b->s, b->err, b->what, cls, kn, "%s has %u entries for %u dims",
                              o->fields[f].name, m, n);
    for (uint32_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return ll__space_fail(
                b->s, b->err, b->what, cls, kn,
                "%s[%u] is not the contiguous stride: every stored tensor and every value "
                "of a region is contiguous",
                o->fields[f].name, i);
    return LM_OK;
}

static void set_view(hl_view *v, uint32_t n, const hl_expr *dims, const hl_expr *strides)
{
    v->ndim = n;
    for (uint32_t i = 0; i < n; i++) {
        v->dims[i] = dims[i];
        v->strides[i] = strides[i];
    }
}

/* A view field pair: dims (field fd) and strides (field fs), equally long. */
int ll__kind_view(ll__kd *b, uint32_t cls, uint32_t kn, const ll_op_info *o, uint32_t fd,
                  uint32_t fs, hl_view *v)
{
    hl_expr d[HL_MAX_DIMS], st[HL_MAX_DIMS];
    uint32_t nd, ns;
    int rc = ll__kind_elist(b, kn, fd, o, &nd, d);
    if (!rc) rc = ll__kind_elist(b, kn, fs, o, &ns, st);
    if (rc) return rc;
    if (nd != ns)
        return ll__space_fail(b->s, b->err, b->what, cls, kn, "%s has %u entries for the %u of %s",
                              o->fields[fs].name, ns, nd, o->fields[fd].name);
    set_view(v, nd, d, st);
    return LM_OK;
}

/* The primitive of a K* or F* kind node kn: views, shape, fields (not input ids). */
static int decode_prim(ll__kd *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd)
{
    hl_node *pr = &nd->prim;
    pr->op = o->prim;
    pr->n_in = o->n_inputs;
    int rc = LM_OK;
    hl_view *v0 = &pr->in[0].view, *v1 = &pr->in[1].view, *v2 = &pr->in[2].view;
    bool shape_v0 = false; /* the output's shape is the first view's dims */
    switch (o->prim) {
    case HL_OP_CONSTANT:
        pr->constant = (float)ll__kind_f64(b, kn, 0);
        pr->ndim = 0;
        break;
    case HL_OP_IOTA:
        rc = field_expr(b, kn, 0, &pr->iota_expr);
        if (!rc) rc = field_expr(b, kn, 1, &pr->iota_len);
        pr->ndim = 1;
        pr->shape[0] = pr->iota_len;
        break;
    case HL_OP_CAST:
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
        rc = ll__kind_view(b, cls, kn, o, 0, 1, v0);
        if (!rc) rc = check_out_strides(b, cls, kn, o, 2, v0->ndim, v0->dims);
        shape_v0 = true;
        break;
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
        rc = ll__kind_view(b, cls, kn, o, 0, 1, v0);
        if (!rc) rc = ll__kind_view(b, cls, kn, o, 0, 2, v1);
        if (!rc) rc = check_out_strides(b, cls, kn, o, 3, v0->ndim, v0->dims);
        shape_v0 = true;
        break;
    case HL_OP_GATHER:
        rc = ll__kind_view(b, cls, kn, o, 0, 1, v0);
        if (!rc) rc = ll__kind_view(b, cls, kn, o, 2, 3, v1);
        shape_v0 = true;
        break;
    case HL_OP_SCATTER:
        rc = ll__kind_view(b, cls, kn, o, 0, 1, v0);
        if (!rc) rc = ll__kind_view(b, cls, kn, o, 2, 3, v1);
        if (!rc) rc = ll__kind_view(b, cls, kn, o, 2, 4, v2);
        shape_v0 = true;
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE: {
        rc = ll__kind_view(b, cls, kn, o, 0, 2, v0);
        if (!rc && v0->ndim == HL_MAX_DIMS)
            rc = ll__space_fail(b->s, b->err, b->what, cls, kn,
                                "a reduction's input has at most %d dims", HL_MAX_DIMS);
        if (!rc) rc = field_expr(b, kn, 1, &v0->dims[v0->ndim]);
        if (!rc) rc = field_expr(b, kn, 3, &v0->strides[v0->ndim]);
        if (rc) break;
        pr->ndim = v0->ndim;
        memcpy(pr->shape, v0->dims, sizeof pr->shape);
        pr->axis = v0->ndim; /* the reduced dim is kept last */
        v0->ndim++;
        rc = check_out_strides(b, cls, kn, o, 4, pr->ndim, pr->shape);
        break;
    }
    default:
        rc = ll__space_fail(b->s, b->err, b->what, cls, kn, "%s computes no primitive", o->name);
    }
    if (rc) return rc;
    if (shape_v0) {
        pr->ndim = v0->ndim;
        memcpy(pr->shape, v0->dims, sizeof pr->shape);
    }
    if (o->prim == HL_OP_CAST) pr->cast_to = nd->dtype;
    pr->dtype = nd->dtype;
    nd->ndim = pr->ndim;
    memcpy(nd->shape, pr->shape, sizeof nd->shape);
    return LM_OK;
}

static bool is_num(const hl_expr_pool *p, hl_expr e, int64_t v)
{
    int64_t x;
    return hl_e_is_num(p, e, &x) && x == v;
}

/* One operand of a KMatmul: its rows (r: M for a, K for b) and columns (c: K for a, N
 * for b) strides and the broadcast dim (which must have stride 0). */
static int matmul_operand(ll__kd *b, uint32_t cls, uint32_t kn, const char *name, hl_expr rows,
                          hl_expr cols, hl_expr sr, hl_expr sc, hl_expr sbc, ll_order *order,
                          hl_expr *ld)
{
    hl_expr_pool *p = b->xd.p;
    hl_expr cr = hl_stride_coef(p, sr, rows), cc = hl_stride_coef(p, sc, cols);
    hl_expr cb = hl_stride_coef(p, sbc, hl_e_num(p, 2)); /* only 0 is accepted */
    if (cr == HL_NONE || cc == HL_NONE || cb == HL_NONE) {
        char t[3][96];
        hl_e_print(p, sr, t[0], sizeof t[0]);
        hl_e_print(p, sc, t[1], sizeof t[1]);
        hl_e_print(p, sbc, t[2], sizeof t[2]);
        return ll__space_fail(
            b->s, b->err, b->what, cls, kn,
            "KMatmul: %s is not read with strides linear in z (rows %s, columns %s, "
            "broadcast %s)",
            name, t[0], t[1], t[2]);
    }
    if (!is_num(p, cb, 0))
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "KMatmul: %s is not broadcast along the other operand's dim "
                              "(its stride there is not 0)",
                              name);
    if (is_num(p, cc, 1) || is_num(p, cols, 1)) {
        *order = LL_ROW_MAJOR;
        *ld = cr;
    } else if (is_num(p, cr, 1) || is_num(p, rows, 1)) {
        *order = LL_COL_MAJOR;
        *ld = cc;
    } else {
        char t[4][96];
        hl_e_print(p, sr, t[0], sizeof t[0]);
        hl_e_print(p, rows, t[1], sizeof t[1]);
        hl_e_print(p, sc, t[2], sizeof t[2]);
        hl_e_print(p, cols, t[3], sizeof t[3]);
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "KMatmul: %s is read neither row- nor column-major (no unit stride: "
                              "stride %s over %s rows, %s over %s columns)",
                              name, t[0], t[1], t[2], t[3]);
    }
    return LM_OK;
}

/* The batch stride of an operand over batch dims [0, nb): one stride for all (the dims
 * collapse), or an error. */
static int batch_stride(ll__kd *b, uint32_t cls, uint32_t kn, const char *name, uint32_t nb,
                        const hl_expr *sh, const hl_expr *st, hl_expr *out)
{
    hl_expr_pool *p = b->xd.p;
    hl_expr inner_c = HL_NONE, inner_n = HL_NONE;
    *out = hl_e_num(p, 0);
    for (uint32_t i = nb; i-- > 0;) {
        if (is_num(p, sh[i], 1)) continue;
        hl_expr c = hl_stride_coef(p, st[i], sh[i]);
        if (c == HL_NONE)
            return ll__space_fail(b->s, b->err, b->what, cls, kn,
                                  "KMatmul: %s's batch stride %u is not linear in z", name, i);
        if (inner_c == HL_NONE) {
            *out = c;
        } else {
            hl_expr want = hl_e_mul(p, inner_c, inner_n);
            if (want == HL_NONE) return pool_fail(b, cls, kn), b->err->code;
            if (c != want)
                return ll__space_fail(b->s, b->err, b->what, cls, kn,
                                      "KMatmul: %s's batch dims cannot be read with one stride",
                                      name);
        }
        inner_c = c;
        inner_n = sh[i];
    }
    return LM_OK;
}

static int decode_kmatmul(ll__kd *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd)
{
    hl_expr_pool *p = b->xd.p;
    hl_expr sh[HL_MAX_DIMS], as[HL_MAX_DIMS], bs[HL_MAX_DIMS];
    uint32_t n, na, nbs;
    int rc = ll__kind_elist(b, kn, 0, o, &n, sh);
    if (!rc) rc = ll__kind_elist(b, kn, 1, o, &na, as);
    if (!rc) rc = ll__kind_elist(b, kn, 2, o, &nbs, bs);
    if (rc) return rc;
    if (n < 3 || na != n || nbs != n)
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "KMatmul: the shape is [batch..., M, N, K] (%u dims) with as "
                              "many strides for a and b (%u, %u)",
                              n, na, nbs);
    uint32_t nb = n - 3, im = n - 3, in = n - 2, ik = n - 1;
    ll_matmul *mm = &nd->mm;
    mm->m = sh[im];
    mm->n = sh[in];
    mm->k = sh[ik];
    rc = matmul_operand(b, cls, kn, "a", sh[im], sh[ik], as[im], as[ik], as[in], &mm->order_a,
                        &mm->lda);
    if (!rc)
        rc = matmul_operand(b, cls, kn, "b", sh[ik], sh[in], bs[ik], bs[in], bs[im], &mm->order_b,
                            &mm->ldb);
    if (!rc) rc = batch_stride(b, cls, kn, "a", nb, sh, as, &mm->stride_a);
    if (!rc) rc = batch_stride(b, cls, kn, "b", nb, sh, bs, &mm->stride_b);
    if (rc) return rc;
    hl_expr batch = hl_e_num(p, 1);
    for (uint32_t i = 0; i < nb; i++)
        batch = hl_e_mul(p, batch, sh[i]);
    if (batch == HL_NONE) return pool_fail(b, cls, kn), b->err->code;
    mm->batch = batch;
    mm->alpha = 1.0;
    mm->beta = 0.0;
    mm->epilogue = LL_EPI_NONE;
    mm->type_a = mm->type_b = mm->type_c = mm->type_d = mm->type_bias = nd->dtype;
    nd->ndim = n - 1;
    memcpy(nd->shape, sh, (n - 1) * sizeof(hl_expr));
    return check_out_strides(b, cls, kn, o, 3, nd->ndim, nd->shape);
}

static int decode_blas(ll__kd *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd,
                       uint32_t nin)
{
    hl_expr_pool *p = b->xd.p;
    ll_matmul *mm = &nd->mm;
    hl_expr *ex[8] = {&mm->m,   &mm->n,   &mm->k,        &mm->batch,
                      &mm->lda, &mm->ldb, &mm->stride_a, &mm->stride_b};
    for (uint32_t f = 0; f < 8; f++) {
        int rc = field_expr(b, kn, f, ex[f]);
        if (rc) return rc;
    }
    int64_t oa = field_i64(b, kn, 8), ob = field_i64(b, kn, 9), epi = field_i64(b, kn, 13);
    double beta = ll__kind_f64(b, kn, 12), alpha = ll__kind_f64(b, kn, 10);
    if ((oa != 0 && oa != 1) || (ob != 0 && ob != 1))
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "Blas: order_a and order_b are 0 (row-major) or 1 (column-major), "
                              "not %lld and %lld",
                              (long long)oa, (long long)ob);
    if (beta != 0.0 && beta != 1.0)
        return ll__space_fail(b->s, b->err, b->what, cls, kn, "Blas: beta is 0 or 1, not %g", beta);
    if (epi < 0 || epi > 3)
        return ll__space_fail(b->s, b->err, b->what, cls, kn, "Blas: epilogue is 0 to 3, not %lld",
                              (long long)epi);
    hl_dtype adt = HL_F32;
    int rc = ll__kind_dtype(b, cls, kn, 11, o, &adt);
    if (!rc) rc = ll__kind_dtype(b, cls, kn, 14, o, &mm->type_a);
    if (!rc) rc = ll__kind_dtype(b, cls, kn, 15, o, &mm->type_b);
    if (!rc) rc = ll__kind_dtype(b, cls, kn, 16, o, &mm->type_c);
    if (!rc) rc = ll__kind_dtype(b, cls, kn, 17, o, &mm->type_d);
    if (!rc) rc = ll__kind_dtype(b, cls, kn, 18, o, &mm->type_bias);
    if (rc) return rc;
    mm->order_a = (ll_order)oa;
    mm->order_b = (ll_order)ob;
    mm->alpha = hl_round_to(adt, (float)alpha);
    mm->beta = beta;
    mm->epilogue = (ll_epilogue)epi;
    uint32_t want = ll_op_input_count(nd->op, beta, epi);
    if (nin != want)
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "Blas with beta %g and epilogue %lld takes %u inputs, its IList "
                              "has %u",
                              beta, (long long)epi, want, nin);
    nd->ndim = 0;
    if (!is_num(p, mm->batch, 1)) nd->shape[nd->ndim++] = mm->batch;
    nd->shape[nd->ndim++] = mm->m;
    nd->shape[nd->ndim++] = mm->n;
    return LM_OK;
}

/* A KAttn or KAttnMask node: the scores' shape [L.., Sq, Skv, D] with q's and k's strides
 * in it (q with 0 along Skv, k with 0 along Sq), v's strides in the P V shape
 * [L.., Sq, D, Skv] (0 along Sq), the output's contiguous strides, the mask's strides in
 * [L.., Sq, Skv] (KAttnMask), then causal, scale, scale_dt, base2, DT and the tile. */
static int decode_attn(ll__kd *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd,
                       uint32_t nin)
{
    hl_expr_pool *p = b->xd.p;
    hl_expr sh[HL_MAX_DIMS], qs[HL_MAX_DIMS], ks[HL_MAX_DIMS], vs[HL_MAX_DIMS], ms[HL_MAX_DIMS];
    uint32_t n, nq, nk, nv, nm = 0;
    bool mask = o->n_inputs == 4;
    uint32_t f = mask ? 6 : 5; /* the first field after the lists */
    if (nin != o->n_inputs)
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "%s takes %u inputs, its IList has %u", o->name, o->n_inputs, nin);
    int rc = ll__kind_elist(b, kn, 0, o, &n, sh);
    if (!rc) rc = ll__kind_elist(b, kn, 1, o, &nq, qs);
    if (!rc) rc = ll__kind_elist(b, kn, 2, o, &nk, ks);
    if (!rc) rc = ll__kind_elist(b, kn, 3, o, &nv, vs);
    if (!rc && mask) rc = ll__kind_elist(b, kn, 5, o, &nm, ms);
    if (rc) return rc;
    if (n < 3 || nq != n || nk != n || nv != n || (mask && nm != n - 1))
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "%s: the shape is [lead..., Sq, Skv, D] (%u dims) with as many "
                              "strides for q, k and v (%u, %u, %u)%s",
                              o->name, n, nq, nk, nv, mask ? " and one fewer for the mask" : "");
    uint32_t nl = n - 3, iq = nl, ik = nl + 1, id = nl + 2;
    if (!is_num(p, qs[ik], 0) || !is_num(p, ks[iq], 0) || !is_num(p, vs[iq], 0))
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "%s: q must be read with stride 0 along the keys, k and v with "
                              "stride 0 along the queries",
                              o->name);
    ll_attn *at = &nd->at;
    memset(at, 0, sizeof *at);
    at->nlead = nl;
    at->sq = sh[iq];
    at->skv = sh[ik];
    at->d = sh[id];
    hl_expr dq[HL_MAX_DIMS], dk[HL_MAX_DIMS], sqv[HL_MAX_DIMS], skv[HL_MAX_DIMS], svv[HL_MAX_DIMS];
    for (uint32_t i = 0; i < nl; i++) {
        dq[i] = dk[i] = sh[i];
        sqv[i] = qs[i];
        skv[i] = ks[i];
        svv[i] = vs[i];
    }
    dq[nl] = sh[iq], dq[nl + 1] = sh[id];
    dk[nl] = sh[ik], dk[nl + 1] = sh[id];
    sqv[nl] = qs[iq], sqv[nl + 1] = qs[id];
    skv[nl] = ks[ik], skv[nl + 1] = ks[id];
    svv[nl] = vs[nl + 2], svv[nl + 1] = vs[nl + 1]; /* v's P V strides: [.., 0, c, j] */
    set_view(&at->q, nl + 2, dq, sqv);
    set_view(&at->k, nl + 2, dk, skv);
    set_view(&at->v, nl + 2, dk, svv);
    if (mask) {
        hl_expr dm[HL_MAX_DIMS];
        for (uint32_t i = 0; i < nl + 2; i++)
            dm[i] = sh[i];
        set_view(&at->mask, nl + 2, dm, ms);
    }
    int64_t causal = field_i64(b, kn, f), base2 = field_i64(b, kn, f + 3), t[5];
    double scale = ll__kind_f64(b, kn, f + 1);
    for (uint32_t i = 0; i < 5; i++)
        t[i] = field_i64(b, kn, f + 5 + i);
    if (causal != 0 && causal != 1)
        return ll__space_fail(b->s, b->err, b->what, cls, kn, "%s: causal is 0 or 1, not %lld",
                              o->name, (long long)causal);
    if (base2 != 0 && base2 != 1)
        return ll__space_fail(b->s, b->err, b->what, cls, kn, "%s: base2 is 0 or 1, not %lld",
                              o->name, (long long)base2);
    if (!(scale > 0.0) || !isfinite(scale))
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "%s: the scale must be finite and > 0, not %g", o->name, scale);
    for (uint32_t i = 0; i < 5; i++)
        if (t[i] < 1 || t[i] > 1024)
            return ll__space_fail(b->s, b->err, b->what, cls, kn,
                                  "%s: tile field %s is %lld, not in [1, 1024]", o->name,
                                  o->fields[f + 5 + i].name, (long long)t[i]);
    hl_dtype sdt = HL_F32;
    if ((rc = ll__kind_dtype(b, cls, kn, f + 2, o, &sdt))) return rc;
    at->causal = causal != 0;
    /* the scale as the graph rounded it; a softmax in base 2 is the softmax of its scores
     * times ln 2 (2^x = e^(x ln 2)), so the node's e-based scale is that much smaller */
    at->scale = hl_round_to(sdt, (float)scale) * (base2 ? 0.6931471805599453 : 1.0);
    at->block_q = (uint32_t)t[0];
    at->block_k = (uint32_t)t[1];
    at->warps = (uint32_t)t[2];
    at->stages = (uint32_t)t[3];
    at->kv_splits = (uint32_t)t[4];
    nd->ndim = nl + 2;
    memcpy(nd->shape, dq, (nl + 2) * sizeof(hl_expr));
    return check_out_strides(b, cls, kn, o, 4, nd->ndim, nd->shape);
}

/* The fields of a K*, KMatmul, Blas or F* kind node kn into nd (its dtype set). */
int ll__kind_fields(ll__kd *b, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd,
                    uint32_t nin)
{
    if (o->dialect == LL_D_LIBRARY) return decode_blas(b, cls, kn, o, nd, nin);
    if (ll_op_is_attn(nd->op)) return decode_attn(b, cls, kn, o, nd, nin);
    if (o->prim == HL_OP_COUNT) return decode_kmatmul(b, cls, kn, o, nd);
    if (nin != o->n_inputs)
        return ll__space_fail(b->s, b->err, b->what, cls, kn,
                              "%s takes %u inputs, its IList has %u", o->name, o->n_inputs, nin);
    return decode_prim(b, cls, kn, o, nd);
}

int ll__check_kinds(const ll_space *s, lm_err *err, double deadline)
{
    ll__kd k = {.s = s, .err = err, .what = "space: a kind's fields"};
    hl_expr_pool *pool = hl_expr_pool_new();
    k.xd.memo = ll__alloc(s->nc, sizeof(hl_expr));
    int rc = LM_OK;
    if (!pool || !k.xd.memo) rc = ll__oom(err, "space");
    for (uint32_t c = 0; c < s->nc && !rc; c++)
        k.xd.memo[c] = HL_NONE;
    k.xd.s = s;
    k.xd.p = pool;
    k.xd.err = err;
    for (uint32_t i = 0; i < s->n_dims && !rc; i++)
        if (hl_e_var(pool, s->dims[i].name) == HL_NONE) rc = ll__oom(err, "space");
    for (uint32_t j = 0; j < s->nch && !rc; j++) {
        if (deadline > 0 && (j & 4095) == 0 && lm_now_s() > deadline) {
            rc = ll__fail(err, LM_ELIMIT, NULL,
                          "the time limit ran out while building the search space (step "
                          "'kinds' fields': %u of %u choices)",
                          j, s->nch);
            break;
        }
        uint32_t kn = s->cnode[j], cls = s->ser.nodes[kn].eclass;
        if (s->ckind[cls] != LL__K_OPKIND || s->cop[j] == LL_OP_NONE) continue;
        const ll_op_info *o = ll_op_get(s->cop[j]);
        ll_node nd;
        memset(&nd, 0, sizeof nd);
        nd.op = s->cop[j];
        rc = ll__kind_contract(&k, cls, kn, o, o->out, HL_F32, &nd.dtype);
        for (uint32_t i = 0; i < o->n_inputs && !rc; i++)
            rc = ll__kind_contract(&k, cls, kn, o, o->in[i], HL_F32, &nd.in_dtype[i]);
        if (!rc &&
            (o->dialect == LL_D_KERNEL || o->dialect == LL_D_LIBRARY || o->dialect == LL_D_FUSED))
            rc = ll__kind_fields(&k, cls, kn, o, &nd, ll__kind_inputs(s, kn));
    }
    ll__free(k.xd.memo);
    hl_expr_pool_free(pool);
    return rc;
}

uint32_t ll__kind_inputs(const ll_space *s, uint32_t kind_node)
{
    ll_op op = s->code[kind_node];
    const ll_op_info *o = ll_op_get(op);
    if (o->dialect != LL_D_LIBRARY) return o->n_inputs;
    uint32_t cb = ll__kid(s, kind_node, 12), ce = ll__kid(s, kind_node, 13);
    double beta = ll__lit_is(s, cb, s->sort_f64) ? eg_value_as_f64(s->ser.class_value[cb]) : 0;
    int64_t epi = ll__lit_is(s, ce, s->sort_i64) ? eg_value_as_i64(s->ser.class_value[ce]) : 0;
    return ll_op_input_count(op, beta, epi);
}
