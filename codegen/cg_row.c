/* cg_row.c - the row template: regions whose reductions are row-aligned with the output
 * (softmax, rmsnorm, layernorm and their relatives), and standalone row reductions.
 *
 * The value graph is built with a row scope (rows of L elements, L the output's last
 * dim, or 1 for a reduction that produces one element per row) and shared element scope
 * (cg_val.c): the reductions land in the row scope. One group of threads handles a row:
 * a warp for short rows (8 rows per block of 256), the whole block for long rows. Per
 * row, in dependency order:
 *
 *   row values: loads at row positions, ops on them
 *   each reduction: the group's threads walk the reduced index space (V consecutive
 *                   elements per thread and step, vector loads where unit and aligned),
 *                   accumulate in f32 (ints in their type), combine by warp shuffles and,
 *                   for a block, through shared memory in a fixed order; every thread
 *                   gets the result
 *   the output loop: element values per lane, vector stores
 *
 * With a static L of at most 8 steps per thread, the loops over the row are unrolled and
 * a load that more than one of them reads (softmax's x: the max, the sum and the output)
 * is kept in registers (c<v>[]), so the row is read from memory once. Otherwise each
 * loop reads again (from L2 for rows that fit it).
 *
 * A reduction that is not row-aligned stays in the element scope and runs as a loop of
 * its own per element (cg_emit.c, seq_reduce): slow, but right. */
#include "cg_int.h"

#include <stdio.h>

#define WARP_ROWS_MAX 1024 /* elements per loop up to which a warp handles a row */
#define ROWS_PER_WARP_BLOCK 8u
#define GRID_CAP (1 << 20)
#define CACHE_STEPS_MAX 8
#define CACHE_REGS_MAX 64


static bool num_of(const hl_expr_pool *p, hl_expr e, int64_t *v)
{
    return e != HL_NONE && hl_e_is_num(p, e, v);
}

/* Row reductions of the value graph and whether each is computed by a space loop. */
static bool space_red(const cg_vg *vg, uint32_t i)
{
    const cg_val *x = &vg->v[i];
    if (x->kind != CG_V_REDUCE || x->scope != vg->row) return false;
    return x->body_scope == vg->elem || cg__expr_is_one(vg->p, vg->s[x->body_scope].inner);
}

int cg__row_eligible(const cg_vg *vg)
{
    int n = 0;
    for (uint32_t i = 0; i < vg->n; i++)
        if (space_red(vg, i)) n++;
    return n;
}

/* Elements one loop over scope s walks at the dims' profile values (the size the kernel
 * is tuned for; any size in range is correct). */
static int64_t loop_len(const cg_vg *vg, uint32_t s)
{
    int64_t v = cg__expr_profile(vg->p, vg->d, vg->s[s].len);
    return v >= 0 ? v : cg__expr_max(vg->p, vg->d, vg->s[s].len, 0);
}

/* Marks the loads of the element scope reachable from v without leaving the element
 * scope's loop (operands, and bodies of per-element reductions). */
static void elem_loads(const cg_vg *vg, uint32_t v, bool *seen, bool *hit)
{
    if (seen[v]) return;
    seen[v] = true;
    const cg_val *x = &vg->v[v];
    if (x->scope == vg->row) return; /* materialised before the loop */
    if (x->kind == CG_V_LOAD && x->scope == vg->elem) hit[v] = true;
    for (uint32_t i = 0; i < x->na; i++)
        elem_loads(vg, x->a[i], seen, hit);
    if (x->kind == CG_V_REDUCE) elem_loads(vg, x->body, seen, hit);
}

/* Which element loads to keep in registers: those read by two or more loops over the row
 * (the aligned reductions' and the output's); 0 when they would not fit. */
static uint32_t plan_cache(const cg_vg *vg, uint32_t T, uint32_t V, bool *want)
{
    uint32_t *count = cg__alloc(vg->n, sizeof *count);
    bool *seen = cg__alloc(vg->n, sizeof *seen), *hit = cg__alloc(vg->n, sizeof *hit);
    uint32_t n = 0;
    if (count && seen && hit) {
        for (uint32_t i = 0; i <= vg->n; i++) {
            uint32_t start;
            if (i == vg->n)
                start = vg->root;
            else if (vg->v[i].kind == CG_V_REDUCE && vg->v[i].scope == vg->row &&
                     vg->v[i].body_scope == vg->elem)
                start = vg->v[i].body;
            else
                continue;
            memset(seen, 0, vg->n * sizeof *seen);
            memset(hit, 0, vg->n * sizeof *hit);
            elem_loads(vg, start, seen, hit);
            for (uint32_t j = 0; j < vg->n; j++)
                count[j] += hit[j];
        }
        for (uint32_t j = 0; j < vg->n; j++) {
            want[j] = count[j] >= 2;
            n += want[j];
        }
    }
    cg__free(count);
    cg__free(seen);
    cg__free(hit);
    if (n * T * V > CACHE_REGS_MAX) {
        memset(want, 0, vg->n * sizeof *want);
        return 0;
    }
    return n;
}

/* One row loop body for lanes V (1: the scalar path). */
static bool row_body(cg_em *e, uint32_t V, uint32_t Vb, const bool *vload, const bool *body_ok,
                     bool *want, uint8_t *state, int64_t Lv, bool Lstat, cg_ity zt)
{
    cg_vg *vg = e->vg;
    e->v_elem = V;
    e->v_body = Vb;
    e->vload = vload;
    e->body_vec_ok = body_ok;
    e->cache_T = 0;
    e->cache_want = NULL;
    e->cache_state = NULL;
    uint32_t mark = e->nn;
    /* the register cache */
    if (Lstat) {
        uint64_t per = (uint64_t)e->row_threads * V;
        uint32_t T = (uint32_t)(((uint64_t)Lv + per - 1) / per);
        if (T <= CACHE_STEPS_MAX && plan_cache(vg, T, V, want) > 0) {
            e->cache_T = T;
            e->cache_want = want;
            memset(state, 0, vg->n);
            e->cache_state = state;
            for (uint32_t i = 0; i < vg->n; i++)
                if (want[i])
                    cg__em_line(e, "%s c%u[%u];", cg__rty_c(vg->v[i].rt), i, T * V);
        }
    }
    snprintf(e->svar[vg->row], sizeof e->svar[0], "row");
    cg_str rb, ls;
    cg__str_init(&rb);
    cg__str_init(&ls);
    if (!cg__em_len(e, vg->L, zt, &ls)) return false;
    char *lt = cg__str_take(&ls);
    if (!lt) return false;
    cg__str_addf(&rb, "((%s)row * %s)", cg__ity_name(zt), lt);
    cg__free(lt);
    cg__free(e->rowbase);
    e->rowbase = cg__str_take(&rb);
    if (!e->rowbase) return false;
    /* every row value (the reductions among them), then the output loop */
    if (!cg__em_pre_outer(e, vg->root, vg->elem, 0)) return false;
    if (!cg__em_space_loop(e, vg->elem, e->rowbase, LM_NONE, NULL)) return false;
    cg__em_pop(e, mark);
    return true;
}

int cg__emit_row(cg_ctx *c, cg_vg *vg, uint32_t node, uint32_t out_buf, cg_kernel *k)
{
    cg_kw kw;
    if (cg__kw_init(&kw, c, node)) return c->err->code;
    cg_str body, cond, decl;
    cg__str_init(&body);
    cg__str_init(&cond);
    cg__str_init(&decl);
    cg_em e;
    bool *vload = NULL, *body_ok = NULL, *want = NULL;
    uint8_t *state = NULL;
    int rc = cg__em_init(&e, c, vg, &kw, &body);
    if (rc) goto done;
    hl_expr_pool *p = vg->p;
    const ll_node *n = ll_graph_node(c->g, node);
    hl_dtype odt = n->dtype;
    e.out_dt = odt;
    e.out_param = cg__kw_buf(&kw, out_buf, odt, true);
    vload = cg__alloc(vg->n, sizeof *vload);
    want = cg__alloc(vg->n, sizeof *want);
    state = cg__alloc(vg->n, 1);
    body_ok = cg__alloc(vg->ns, sizeof *body_ok);
    if (e.out_param < 0 || !vload || !want || !state || !body_ok) {
        rc = lm_err_is_set(c->err) ? c->err->code : cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        goto done;
    }
    /* the group: a warp, or the block */
    int64_t wmax = loop_len(vg, vg->elem);
    for (uint32_t i = 0; i < vg->n; i++)
        if (space_red(vg, i)) {
            int64_t m = loop_len(vg, vg->v[i].body_scope);
            if (m > wmax) wmax = m;
        }
    bool warp = wmax <= WARP_ROWS_MAX;
    uint32_t RT = 32;
    if (!warp) {
        int64_t want_t = (wmax + 15) / 16; /* about 4 vectors of 4 per thread */
        RT = 128;
        while (RT < 1024 && RT < want_t)
            RT *= 2;
    }
    uint32_t threads = warp ? 32 * ROWS_PER_WARP_BLOCK : RT;
    e.coop = true;
    e.row_threads = RT;
    snprintf(e.tid, sizeof e.tid, "%s", warp ? "lm_lane" : "threadIdx.x");
    /* vector widths: the element loops (output and aligned reductions) and body loops */
    int64_t Lv = 0;
    bool Lstat = num_of(p, vg->L, &Lv);
    uint32_t Ve = cg__vec_width(vg, vg->elem, vg->L, odt);
    if (Lstat)
        while (Ve > 1 && Lv % Ve) Ve /= 2;
    cg__str_add(&cond, "true");
    int nvec = 0;
    if (Ve > 1) {
        if (!Lstat) {
            cg_str t;
            cg__str_init(&t);
            cg__str_add(&t, "(");
            cg__expr_c(&t, p, vg->d, vg->L, CG_I64, "0", 0, kw.used_dim);
            cg__str_addf(&t, ") %% %ull == 0", Ve);
            char *s = cg__str_take(&t);
            if (s) cg__str_addf(&cond, " && (%s)", s);
            cg__free(s);
        }
        if (cg__vec_loads(vg, &kw, vg->elem, vg->L, Ve, vload, &cond) < 0) {
            rc = c->err->code;
            goto done;
        }
        size_t ob = hl_dtype_size(odt) * Ve;
        cg__str_addf(&cond, " && ((((lm_u64)b%d) & %zuull) == 0)", e.out_param,
                     (ob < 16 ? ob : 16) - 1);
        nvec++;
    }
    /* body loops of row reductions over their own index space (inner stride 1) */
    uint32_t Vb = 8;
    for (uint32_t i = 0; i < vg->n; i++)
        if (space_red(vg, i) && vg->v[i].body_scope != vg->elem) {
            uint32_t s = vg->v[i].body_scope;
            uint32_t w = cg__vec_width(vg, s, vg->s[s].len, HL_BOOL);
            if (w < Vb) Vb = w;
        }
    if (Vb > Ve && Ve > 1) Vb = Ve;
    for (uint32_t i = 0; i < vg->n && Vb > 1; i++) {
        if (!space_red(vg, i) || vg->v[i].body_scope == vg->elem) continue;
        uint32_t s = vg->v[i].body_scope;
        int64_t lv;
        hl_expr len = vg->s[s].len;
        cg_str t;
        cg__str_init(&t);
        if (num_of(p, len, &lv)) {
            if (lv % Vb) continue;
        } else {
            cg__str_add(&t, " && ((");
            cg__expr_c(&t, p, vg->d, len, CG_I64, "0", 0, kw.used_dim);
            cg__str_addf(&t, ") %% %ull == 0)", Vb);
        }
        int nl = cg__vec_loads(vg, &kw, s, len, Vb, vload, &t);
        char *ts = cg__str_take(&t);
        if (nl < 0 || !ts) {
            cg__free(ts);
            rc = lm_err_is_set(c->err) ? c->err->code : cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
            goto done;
        }
        if (nl > 0) {
            body_ok[s] = true;
            cg__str_add(&cond, ts);
            nvec++;
        }
        cg__free(ts);
    }
    cg_ity zt = vg->N <= INT32_MAX / 2 ? CG_U32 : CG_I64;
    int64_t rmax = vg->s[vg->row].zmax;
    cg_ity rt = rmax < INT32_MAX / 2 ? CG_U32 : CG_I64;
    const char *rty = cg__ity_name(rt);
    cg_str rs;
    cg__str_init(&rs);
    if (!cg__em_len(&e, vg->rows, rt, &rs)) {
        rc = c->err->code;
        cg__str_fini(&rs);
        goto done;
    }
    char *rows = cg__str_take(&rs);
    char *ct = cg__str_take(&cond);
    if (!rows || !ct) {
        cg__free(rows);
        cg__free(ct);
        rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        goto done;
    }
    e.indent = 1;
    cg__em_line(&e, "const %s rows = %s;", rty, rows);
    cg__free(rows);
    if (warp) {
        cg__em_line(&e, "const unsigned lm_lane = threadIdx.x & 31u;");
        cg__em_line(&e, "const %s row0 = (%s)blockIdx.x * %uu + (threadIdx.x >> 5);", rty, rty,
                    ROWS_PER_WARP_BLOCK);
        cg__em_line(&e, "const %s rstep = (%s)gridDim.x * %uu;", rty, rty, ROWS_PER_WARP_BLOCK);
    } else {
        cg__em_line(&e, "const %s row0 = blockIdx.x;", rty);
        cg__em_line(&e, "const %s rstep = gridDim.x;", rty);
    }
    bool two = Ve > 1 || Vb > 1;
    if (two) {
        cg__em_line(&e, "const bool lm_vec = %s;", ct);
        cg__em_line(&e, "if (lm_vec) {");
    } else {
        cg__em_line(&e, "{");
    }
    cg__free(ct);
    for (int path = 0; path < (two ? 2 : 1); path++) {
        bool vec = two && path == 0;
        e.indent++;
        cg__em_line(&e, "for (%s row = row0; row < rows; row += rstep) {", rty);
        e.indent++;
        /* in the vector path the element loops use Ve lanes, body loops Vb */
        uint32_t mark = e.nn;
        bool ok = row_body(&e, vec ? Ve : 1, vec ? Vb : 1, vec ? vload : NULL, vec ? body_ok : NULL,
                           want, state, Lv, Lstat, zt);
        cg__em_pop(&e, mark);
        if (!ok) {
            rc = lm_err_is_set(c->err) ? c->err->code : cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
            goto done;
        }
        if (!warp) cg__em_line(&e, "__syncthreads();");
        e.indent--;
        cg__em_line(&e, "}");
        e.indent--;
        if (two && path == 0) cg__em_line(&e, "} else {");
    }
    cg__em_line(&e, "}");
    /* shared memory of the block reductions */
    for (uint32_t i = 0; i < e.n_slots; i++)
        cg__str_addf(&decl, "  __shared__ %s lm_red%u[32];\n", cg__rty_c(e.slot_rt[i]), i);
    char *bt = cg__str_take(&body), *dt = cg__str_take(&decl);
    if (!bt || !dt) {
        cg__free(bt);
        cg__free(dt);
        rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        goto done;
    }
    rc = cg__kw_finish(&kw, dt, bt, threads, k);
    cg__free(bt);
    cg__free(dt);
    if (rc) goto done;
    hl_expr blocks = warp ? hl_e_cdiv(p, vg->rows, hl_e_num(p, ROWS_PER_WARP_BLOCK)) : vg->rows;
    k->grid[0] = cg__grid_expr(p, blocks, GRID_CAP);
    k->grid[1] = k->grid[2] = hl_e_num(p, 1);
    if (k->grid[0] == HL_NONE) rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
    k->template_name = warp ? "row-warp" : "row-block";
    (void)nvec;
done:
    cg__free(vload);
    cg__free(want);
    cg__free(state);
    cg__free(body_ok);
    cg__em_fini(&e);
    cg__str_fini(&body);
    cg__str_fini(&cond);
    cg__str_fini(&decl);
    cg__kw_fini(&kw);
    return rc;
}
