/* cg_special.c - Gather and Scatter, whose positions depend on data.
 *
 * Gather: out[z] = the element idx of data's view, idx = indexes[view(z)]: one thread per
 * output element (grid-stride), the element copied as stored (bits, any dtype). An index
 * outside the data (the reference runtime reports it as an error) gives 0.
 *
 * Scatter: out = dest; then for i in order, out[indexes[i]] = src[i], so the last i that
 * names an element wins. Three kernels give exactly that without ordering threads:
 *   1. out[z] = dest[view(z)], win[z] = -1                    (one thread per element)
 *   2. win[indexes[i]] = max(win[indexes[i]], i) by atomicMax (one thread per i)
 *   3. out[z] = src[view(win[z])] where win[z] >= 0          (one thread per element)
 * win is a workspace buffer of int (long long when i may pass 2^31) of out's size.
 * Indexes outside the destination are skipped. */
#include "cg_int.h"

#include <stdio.h>

#define THREADS 256u
#define GRID_CAP (1 << 20)

static hl_expr view_index(cg_ctx *c, cg_vg *tmp, const hl_view *lv)
{
    hl_view v;
    v.ndim = lv->ndim;
    for (uint32_t i = 0; i < lv->ndim; i++) {
        v.dims[i] = cg__x(tmp, lv->dims[i]);
        v.strides[i] = cg__x(tmp, lv->strides[i]);
        if (v.dims[i] == HL_NONE || v.strides[i] == HL_NONE) return HL_NONE;
    }
    return hl_view_index(c->plan->exprs, &v);
}

static hl_expr view_numel(cg_ctx *c, cg_vg *tmp, const hl_view *lv)
{
    hl_expr_pool *p = c->plan->exprs;
    hl_expr n = hl_e_num(p, 1);
    for (uint32_t i = 0; i < lv->ndim; i++)
        n = hl_e_mul(p, n, cg__x(tmp, lv->dims[i]));
    return n;
}

/* Prints e (in z = zname, z <= zmax) into a new string. */
static char *pos_str(cg_ctx *c, cg_kw *kw, hl_expr e, const char *zname, int64_t zmax)
{
    cg_ity t;
    if (e == HL_NONE || !cg__expr_ity(c->plan->exprs, c->d, e, zmax, &t)) {
        cg__fail(c->err, LM_EUNSUPPORTED, cg__at(kw->llir_node),
                 "an index expression is not bounded in int64 over the dims' ranges");
        return NULL;
    }
    cg_str s;
    cg__str_init(&s);
    cg__expr_c(&s, c->plan->exprs, c->d, e, t, zname, zmax, kw->used_dim);
    char *r = cg__str_take(&s);
    if (!r) cg__fail(c->err, LM_ENOMEM, cg__at(kw->llir_node), "out of memory");
    return r;
}

typedef struct kctx {
    cg_ctx *c;
    cg_vg tmp;
    cg_kw kw;
    cg_str b;
} kctx;

static int kbegin(kctx *x, cg_ctx *c, uint32_t node)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    x->tmp.p = c->plan->exprs;
    x->tmp.g = c->g;
    x->tmp.memo = c->memo;
    cg__str_init(&x->b);
    return cg__kw_init(&x->kw, c, node);
}

static int kend(kctx *x, cg_kernel *k, hl_expr work, const char *tname)
{
    cg_ctx *c = x->c;
    hl_expr_pool *p = c->plan->exprs;
    int rc = 0;
    char *body = cg__str_take(&x->b);
    if (!body) rc = cg__fail(c->err, LM_ENOMEM, cg__at(x->kw.llir_node), "out of memory");
    if (!rc) rc = cg__kw_finish(&x->kw, NULL, body, THREADS, k);
    cg__free(body);
    if (!rc) {
        k->grid[0] = cg__grid_expr(p, hl_e_cdiv(p, work, hl_e_num(p, THREADS)), GRID_CAP);
        k->grid[1] = k->grid[2] = hl_e_num(p, 1);
        k->template_name = tname;
        if (k->grid[0] == HL_NONE) rc = cg__fail(c->err, LM_ENOMEM, cg__at(x->kw.llir_node), "out of memory");
    }
    cg__kw_fini(&x->kw);
    cg__str_fini(&x->b);
    return rc;
}

static void kabort(kctx *x)
{
    cg__kw_fini(&x->kw);
    cg__str_fini(&x->b);
}

/* "for (T z = ...; z < N; z += ...) {" with N printed; the type of z. */
static bool grid_loop(kctx *x, hl_expr numel, const char *var, cg_ity *zt_out)
{
    cg_ctx *c = x->c;
    int64_t nmax = cg__expr_max(c->plan->exprs, c->d, numel, 0);
    if (nmax == INT64_MAX) {
        cg__fail(c->err, LM_EUNSUPPORTED, cg__at(x->kw.llir_node),
                 "the element count is not bounded by the dims' ranges");
        return false;
    }
    cg_ity zt = nmax <= INT32_MAX / 2 ? CG_U32 : CG_I64;
    char *ns = pos_str(c, &x->kw, numel, "0", 0);
    if (!ns) return false;
    const char *ty = cg__ity_name(zt);
    cg__str_addf(&x->b, "  const %s N%s = (%s)(%s);\n", ty, var, ty, ns);
    cg__str_addf(&x->b,
                 "  for (%s %s = (%s)blockIdx.x * %uu + threadIdx.x; %s < N%s; %s += (%s)gridDim.x "
                 "* %uu) {\n",
                 ty, var, ty, THREADS, var, var, var, ty, THREADS);
    cg__free(ns);
    *zt_out = zt;
    return true;
}

int cg__gather_kernel(cg_ctx *c, uint32_t node, uint32_t out_buf, cg_kernel *k)
{
    const ll_node *n = ll_graph_node(c->g, node);
    kctx x;
    if (kbegin(&x, c, node)) return c->err->code;
    hl_expr_pool *p = c->plan->exprs;
    hl_expr numel = hl_e_num(p, 1);
    for (uint32_t i = 0; i < n->ndim; i++)
        numel = hl_e_mul(p, numel, cg__x(&x.tmp, n->shape[i]));
    hl_expr ipos = view_index(c, &x.tmp, &n->prim.in[0].view);
    hl_expr dpos = view_index(c, &x.tmp, &n->prim.in[1].view);
    hl_expr dnum = view_numel(c, &x.tmp, &n->prim.in[1].view);
    if (numel == HL_NONE || ipos == HL_NONE || dpos == HL_NONE || dnum == HL_NONE) {
        kabort(&x);
        return cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory or an index overflow");
    }
    int po = cg__kw_buf(&x.kw, out_buf, n->dtype, true);
    int pi = cg__kw_buf(&x.kw, c->buf_of[n->in[0]], HL_INT, false);
    int pd = cg__kw_buf(&x.kw, c->buf_of[n->in[1]], n->dtype, false);
    cg_ity zt;
    int64_t nmax = cg__expr_max(p, c->d, numel, 0), dmax = cg__expr_max(p, c->d, dnum, 0);
    char *is = NULL, *ds = NULL, *dn = NULL;
    if (po < 0 || pi < 0 || pd < 0 || !grid_loop(&x, numel, "z", &zt) ||
        !(is = pos_str(c, &x.kw, ipos, "z", nmax - 1)) ||
        !(ds = pos_str(c, &x.kw, dpos, "q", dmax - 1)) || !(dn = pos_str(c, &x.kw, dnum, "0", 0))) {
        cg__free(is);
        cg__free(ds);
        cg__free(dn);
        kabort(&x);
        return c->err->code;
    }
    const char *st = cg__store_c(n->dtype);
    cg__str_addf(&x.b, "    const int ix = b%d[%s];\n", pi, is);
    cg__str_addf(&x.b, "    %s v = (%s)0;\n", st, st);
    cg__str_addf(&x.b, "    if (ix >= 0 && (long long)ix < (long long)(%s)) {\n", dn);
    cg__str_addf(&x.b, "      const long long q = ix;\n      v = b%d[%s];\n    }\n", pd, ds);
    cg__str_addf(&x.b, "    b%d[z] = v;\n  }\n", po);
    cg__free(is);
    cg__free(ds);
    cg__free(dn);
    return kend(&x, k, numel, "gather");
}

int cg__scatter_kernels(cg_ctx *c, uint32_t node, uint32_t out_buf, uint32_t ws_buf,
                        cg_kernel k[3])
{
    const ll_node *n = ll_graph_node(c->g, node);
    hl_expr_pool *p = c->plan->exprs;
    hl_dtype wdt = c->plan->buffers[ws_buf].dtype;
    const char *wt = wdt == HL_I64 ? "long long" : "int";
    const char *st = cg__store_c(n->dtype);
    for (int part = 0; part < 3; part++) {
        kctx x;
        if (kbegin(&x, c, node)) return c->err->code;
        hl_expr onum = hl_e_num(p, 1);
        for (uint32_t i = 0; i < n->ndim; i++)
            onum = hl_e_mul(p, onum, cg__x(&x.tmp, n->shape[i]));
        hl_expr inum = view_numel(c, &x.tmp, &n->prim.in[1].view);
        hl_expr pos = view_index(c, &x.tmp, &n->prim.in[part == 0 ? 0 : part == 1 ? 1 : 2].view);
        if (onum == HL_NONE || inum == HL_NONE || pos == HL_NONE) {
            kabort(&x);
            return cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory or an index overflow");
        }
        int64_t omax = cg__expr_max(p, c->d, onum, 0), imax = cg__expr_max(p, c->d, inum, 0);
        cg_ity zt;
        char *ps = NULL;
        int po = cg__kw_buf(&x.kw, out_buf, n->dtype, part != 1);
        int pw = cg__kw_buf(&x.kw, ws_buf, wdt, part != 2);
        int pin = cg__kw_buf(&x.kw, c->buf_of[n->in[part == 0 ? 0 : part == 1 ? 1 : 2]],
                             part == 1 ? HL_INT : n->dtype, false);
        bool ok = po >= 0 && pw >= 0 && pin >= 0 && !lm_err_is_set(c->err);
        if (part == 0) {
            ok = ok && grid_loop(&x, onum, "z", &zt) && (ps = pos_str(c, &x.kw, pos, "z", omax - 1));
            if (ok) {
                cg__str_addf(&x.b, "    b%d[z] = b%d[%s];\n    b%d[z] = -1;\n  }\n", po, pin, ps,
                             pw);
            }
        } else if (part == 1) {
            ok = ok && grid_loop(&x, inum, "i", &zt) && (ps = pos_str(c, &x.kw, pos, "i", imax - 1));
            char *on = ok ? pos_str(c, &x.kw, onum, "0", 0) : NULL;
            ok = ok && on;
            if (ok) {
                cg__str_addf(&x.b, "    const int ix = b%d[%s];\n", pin, ps);
                cg__str_addf(&x.b,
                             "    if (ix >= 0 && (long long)ix < (long long)(%s)) atomicMax(&b%d[ix], "
                             "(%s)i);\n  }\n",
                             on, pw, wt);
            }
            cg__free(on);
        } else {
            ok = ok && grid_loop(&x, onum, "z", &zt) && (ps = pos_str(c, &x.kw, pos, "q", imax - 1));
            if (ok) {
                cg__str_addf(&x.b, "    const %s wi = b%d[z];\n", wt, pw);
                cg__str_addf(&x.b, "    if (wi >= 0) {\n      const long long q = wi;\n");
                cg__str_addf(&x.b, "      b%d[z] = b%d[%s];\n    }\n  }\n", po, pin, ps);
            }
        }
        cg__free(ps);
        if (!ok) {
            kabort(&x);
            return lm_err_is_set(c->err) ? c->err->code
                                         : cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        }
        static const char *names[3] = {"scatter-init", "scatter-mark", "scatter-apply"};
        int rc = kend(&x, &k[part], part == 1 ? inum : onum, names[part]);
        if (rc) return rc;
        (void)st;
    }
    return 0;
}
