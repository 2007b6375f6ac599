/* cg_elem.c - the elementwise template, and the vector analysis the row template shares.
 *
 * One thread per group of V consecutive output elements (V = 16 bytes of the widest
 * type the group reads or stores as a vector, at most 8), grid-stride:
 *
 *   lm_vec = (rows of L split into whole groups) && (every vector load aligned)
 *   for (w = blockIdx.x * 256 + threadIdx.x; w < (lm_vec ? N / V : 0); w += gridDim.x * 256)
 *     z0 = w * V; r = z0 / L;       row values once, element values once per lane,
 *                                   unit loads as one vector, one vector store
 *   for (z = NG * V + ...; z < N; ...) the same, one element at a time (the tail, or
 *                                      everything when lm_vec is false)
 *
 * L is chosen among the output's trailing dim products (the whole tensor first) as the
 * one under which the most loads are unit-stride (cg__pos_unit); values that depend only
 * on the row (a per-row scale read through a broadcast view) are then loaded once per
 * group, not per lane. A load whose position is not unit in the row is read per lane.
 *
 * Alignment of a unit load at position e: its row start A(r) = e[z := r*L] must be a
 * multiple of V for every row: proven by the simplifier (A % V folds to 0), or, when A is
 * linear in r (a*r + b), checked at run time as a % V == 0 && b % V == 0; the buffer's
 * address is checked at run time too. Anything else is read per lane.
 *
 * Reductions in this template (the fallback for regions that are not row-aligned, and
 * column reductions) are loops run by the thread for its element: correct for any view,
 * coalesced when neighbouring outputs read neighbouring inputs. */
#include "cg_int.h"

#include <stdio.h>

#define ELEM_THREADS 256u
#define GRID_CAP (1 << 20)

static bool num_of(const hl_expr_pool *p, hl_expr e, int64_t *v)
{
    return e != HL_NONE && hl_e_is_num(p, e, v);
}

/* Appends " && (text)" to cond. */
static void cond_add(cg_str *cond, const char *text)
{
    cg__str_addf(cond, " && (%s)", text);
}

/* Prints a z-free expression x as C long long into out. */
static void dims_c(cg_str *out, cg_vg *vg, cg_kw *kw, hl_expr x)
{
    cg__expr_c(out, vg->p, vg->d, x, CG_I64, "0", 0, kw->used_dim);
}

/* Whether "x % V == 0" holds for every value of the dims: 1 proven, 0 refuted (a number),
 * -1 unknown (appended to cond as a run-time test when cond is not NULL). */
static int divisible(cg_vg *vg, cg_kw *kw, hl_expr x, uint32_t V, cg_str *cond)
{
    hl_expr_pool *p = vg->p;
    hl_expr m = hl_e_mod(p, x, hl_e_num(p, V));
    int64_t mv;
    if (num_of(p, m, &mv)) return mv == 0 ? 1 : 0;
    if (!cond || hl_e_has_z(p, x)) return -1;
    cg_str t;
    cg__str_init(&t);
    cg__str_add(&t, "(");
    dims_c(&t, vg, kw, x);
    cg__str_addf(&t, ") %% %ull == 0", V);
    char *s = cg__str_take(&t);
    if (s) cond_add(cond, s);
    cg__free(s);
    return -1;
}

/* The alignment of a unit load at position e (rows of len): true when provable or
 * expressible as a run-time condition (appended to cond). */
static bool row_start_aligned(cg_vg *vg, cg_kw *kw, hl_expr e, hl_expr len, uint32_t V,
                              cg_str *cond)
{
    hl_expr_pool *p = vg->p;
    hl_expr z = hl_e_z(p);
    hl_expr A = hl_e_subst_z(p, e, hl_e_mul(p, z, len), 0);
    if (A == HL_NONE) return false;
    hl_expr m = hl_e_mod(p, A, hl_e_num(p, V));
    int64_t mv;
    if (num_of(p, m, &mv)) return mv == 0;
    hl_expr a = hl_e_sub(p, hl_e_subst_z(p, A, hl_e_add(p, z, hl_e_num(p, 1)), 0), A);
    hl_expr b = hl_e_subst_z(p, A, hl_e_num(p, 0), 0);
    if (a == HL_NONE || b == HL_NONE || hl_e_has_z(p, a)) return false;
    cg_str tmp;
    cg__str_init(&tmp);
    int da = divisible(vg, kw, a, V, &tmp), db = da == 0 ? 0 : divisible(vg, kw, b, V, &tmp);
    bool ok = da != 0 && db != 0;
    char *t = cg__str_take(&tmp);
    if (ok && t) cg__str_add(cond, t);
    cg__free(t);
    return ok && t;
}

int cg__vec_loads(cg_vg *vg, cg_kw *kw, uint32_t s, hl_expr len, uint32_t V, bool *vload,
                  cg_str *cond)
{
    int n = 0;
    for (uint32_t i = 0; i < vg->n; i++) {
        const cg_val *x = &vg->v[i];
        if (x->kind != CG_V_LOAD || x->scope != s) continue;
        if (!cg__pos_unit(vg->p, x->pos, len)) continue;
        cg_str c;
        cg__str_init(&c);
        if (!row_start_aligned(vg, kw, x->pos, len, V, &c)) {
            cg__str_fini(&c);
            continue;
        }
        uint32_t buf = kw->c->buf_of[x->node];
        if (buf == LM_NONE) {
            cg__str_fini(&c);
            continue;
        }
        int pi = cg__kw_buf(kw, buf, x->dt, false);
        if (pi < 0) {
            cg__str_fini(&c);
            return -1;
        }
        size_t bytes = hl_dtype_size(x->dt) * V;
        cg__str_addf(&c, " && ((((lm_u64)b%d) & %zuull) == 0)", pi, (bytes < 16 ? bytes : 16) - 1);
        char *t = cg__str_take(&c);
        if (!t) return -1;
        cg__str_add(cond, t);
        cg__free(t);
        vload[i] = true;
        n++;
    }
    return n;
}

/* 16 bytes of the widest type among the output and the unit loads of scope s, at most 8
 * lanes. */
uint32_t cg__vec_width(cg_vg *vg, uint32_t s, hl_expr len, hl_dtype out)
{
    size_t w = hl_dtype_size(out);
    for (uint32_t i = 0; i < vg->n; i++) {
        const cg_val *x = &vg->v[i];
        if (x->kind == CG_V_LOAD && x->scope == s && cg__pos_unit(vg->p, x->pos, len) &&
            hl_dtype_size(x->dt) > w)
            w = hl_dtype_size(x->dt);
    }
    uint32_t V = (uint32_t)(16 / w);
    return V > 8 ? 8 : V < 1 ? 1 : V;
}

/* Number of unit loads of the element scope under row length L, for choosing L. */
int cg__elem_score(cg_vg *vg)
{
    int n = 0;
    for (uint32_t i = 0; i < vg->n; i++) {
        const cg_val *x = &vg->v[i];
        if (x->kind == CG_V_LOAD && x->scope == vg->elem && cg__pos_unit(vg->p, x->pos, vg->L)) n++;
    }
    return n;
}

static bool has_reduce(const cg_vg *vg)
{
    for (uint32_t i = 0; i < vg->n; i++)
        if (vg->v[i].kind == CG_V_REDUCE) return true;
    return false;
}

/* The body of one group (lanes V, vec) at element C variable zname. */
static bool group(cg_em *e, uint32_t V, bool vec, const char *zname, cg_ity zt, cg_ity rt)
{
    cg_vg *vg = e->vg;
    uint32_t mark = e->nn;
    e->vscope = vg->elem;
    e->lanes = V;
    e->vec = vec;
    snprintf(e->z0, sizeof e->z0, "%s", zname);
    if (vg->row != LM_NONE) {
        cg_str l;
        cg__str_init(&l);
        if (!cg__em_len(e, vg->L, zt, &l)) return false;
        char *lt = cg__str_take(&l);
        if (!lt) return false;
        cg__em_line(e, "const %s r = (%s)(%s / %s);", cg__ity_name(rt), cg__ity_name(rt), zname, lt);
        cg__em_line(e, "(void)r;");
        cg__free(lt);
        snprintf(e->svar[vg->row], sizeof e->svar[0], "r");
    }
    bool ok = cg__em_store_root(e, V);
    cg__em_pop(e, mark);
    return ok;
}

int cg__emit_elem(cg_ctx *c, cg_vg *vg, uint32_t node, uint32_t out_buf, cg_kernel *k)
{
    cg_kw kw;
    if (cg__kw_init(&kw, c, node)) return c->err->code;
    cg_str body, cond;
    cg__str_init(&body);
    cg__str_init(&cond);
    cg_em e;
    bool *vload = NULL;
    int rc = cg__em_init(&e, c, vg, &kw, &body);
    if (rc) goto done;
    const ll_node *n = ll_graph_node(c->g, node);
    hl_dtype odt = n->kind == LL_OUTPUT ? n->dtype : n->dtype;
    e.out_dt = odt;
    e.out_param = cg__kw_buf(&kw, out_buf, odt, true);
    if (e.out_param < 0) {
        rc = c->err->code;
        goto done;
    }
    hl_expr_pool *p = vg->p;
    bool flat = vg->L == vg->numel;
    uint32_t V = has_reduce(vg) ? 1 : cg__vec_width(vg, vg->elem, vg->L, odt);
    int64_t Lv;
    if (V > 1 && !flat && num_of(p, vg->L, &Lv))
        while (V > 1 && Lv % V) V /= 2;
    vload = cg__alloc(vg->n, sizeof *vload);
    if (!vload) {
        rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        goto done;
    }
    e.vload = vload;
    cg__str_add(&cond, "true");
    if (V > 1) {
        if (!flat && divisible(vg, &kw, vg->L, V, &cond) == 0) V = 1;
        if (V > 1 && cg__vec_loads(vg, &kw, vg->elem, vg->L, V, vload, &cond) < 0) {
            rc = c->err->code;
            goto done;
        }
        size_t ob = hl_dtype_size(odt) * V;
        cg__str_addf(&cond, " && ((((lm_u64)b%d) & %zuull) == 0)", e.out_param,
                     (ob < 16 ? ob : 16) - 1);
    }
    cg_ity zt = vg->N <= INT32_MAX / 2 ? CG_U32 : CG_I64;
    int64_t rmax = vg->row != LM_NONE ? vg->s[vg->row].zmax : 0;
    cg_ity rt = rmax < INT32_MAX / 2 ? CG_U32 : CG_I64;
    const char *zty = cg__ity_name(zt);
    cg_str ns;
    cg__str_init(&ns);
    if (!cg__em_len(&e, vg->numel, zt, &ns)) {
        rc = c->err->code;
        cg__str_fini(&ns);
        goto done;
    }
    char *nt = cg__str_take(&ns);
    if (!nt) {
        rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        goto done;
    }
    e.indent = 1;
    cg__em_line(&e, "const %s N = %s;", zty, nt);
    cg__free(nt);
    if (V > 1) {
        char *ct = cg__str_take(&cond);
        if (!ct) {
            rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
            goto done;
        }
        cg__em_line(&e, "const bool lm_vec = %s;", ct);
        cg__free(ct);
        cg__em_line(&e, "const %s NG = lm_vec ? N / %uu : 0u;", zty, V);
        cg__em_line(&e, "for (%s w = (%s)blockIdx.x * %uu + threadIdx.x; w < NG; w += (%s)gridDim.x * "
                        "%uu) {",
                    zty, zty, ELEM_THREADS, zty, ELEM_THREADS);
        e.indent++;
        cg__em_line(&e, "const %s z0 = w * %uu;", zty, V);
        if (!group(&e, V, true, "z0", zt, rt)) {
            rc = c->err->code ? c->err->code : cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
            goto done;
        }
        e.indent--;
        cg__em_line(&e, "}");
    } else {
        cg__em_line(&e, "const %s NG = 0u;", zty);
    }
    cg__em_line(&e, "for (%s z = NG * %uu + (%s)blockIdx.x * %uu + threadIdx.x; z < N; z += (%s)gridDim.x "
                    "* %uu) {",
                zty, V, zty, ELEM_THREADS, zty, ELEM_THREADS);
    e.indent++;
    if (!group(&e, 1, false, "z", zt, rt)) {
        rc = c->err->code ? c->err->code : cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        goto done;
    }
    e.indent--;
    cg__em_line(&e, "}");
    char *bt = cg__str_take(&body);
    if (!bt) {
        rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        goto done;
    }
    rc = cg__kw_finish(&kw, NULL, bt, ELEM_THREADS, k);
    cg__free(bt);
    if (rc) goto done;
    /* one group per thread, at most GRID_CAP blocks */
    hl_expr groups = hl_e_cdiv(p, vg->numel, hl_e_num(p, V));
    k->grid[0] = cg__grid_expr(p, hl_e_cdiv(p, groups, hl_e_num(p, ELEM_THREADS)), GRID_CAP);
    k->grid[1] = k->grid[2] = hl_e_num(p, 1);
    if (k->grid[0] == HL_NONE) rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
    k->template_name = has_reduce(vg) ? "elementwise-loop" : "elementwise";
done:
    cg__free(vload);
    cg__em_fini(&e);
    cg__str_fini(&body);
    cg__str_fini(&cond);
    cg__kw_fini(&kw);
    return rc;
}
