/* cg_emit.c - writing a value graph as C: each value once per block (and lane), operands
 * first, named t<N>.
 *
 * Materialisation is lazy and memoised in a stack of names: asking for a value writes the
 * code for it (and for whatever it needs that has no name yet) at the current point and
 * returns its name. Entering a loop pushes a mark; leaving pops the names given inside,
 * so a value computed inside a loop is never referred to outside it. Before a loop opens,
 * every value its body needs from outside the loop's scope is materialised (pre_outer),
 * so loop-invariant work is done once, outside, and a cooperative row reduction is never
 * first reached from inside divergent code.
 *
 * Lanes. A vector path handles `lanes` consecutive elements of the vector scope per
 * thread: values of that scope get one name per lane; everything else is shared. A load
 * of that scope whose position moves by one per element (cg__pos_unit) and that the
 * template proved aligned is read as one 16-byte (or narrower) vector for all lanes.
 *
 * Space loops (the row template): a loop over an index space of `len` elements (a row of
 * the element scope, or a reduction's body with inner stride 1) spread over the row's
 * threads, `lanes` consecutive elements per thread and step; with a static trip count it
 * is unrolled, and loads that several loops over the row need are kept in registers
 * (cache arrays c<val>[]).
 */
#include "cg_int.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- lines and names ------------------------------------------------------------------ */

void cg__em_line(cg_em *e, const char *fmt, ...)
{
    for (int i = 0; i < e->indent; i++)
        cg__str_add(e->b, "  ");
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof small) {
        /* long lines: format into a heap string */
        char *buf = cg__alloc((size_t)(n < 0 ? 0 : n) + 1, 1);
        if (!buf) {
            e->b->oom = true;
            return;
        }
        va_start(ap, fmt);
        vsnprintf(buf, (size_t)n + 1, fmt, ap);
        va_end(ap);
        cg__str_add(e->b, buf);
        cg__free(buf);
    } else {
        cg__str_add(e->b, small);
    }
    cg__str_add(e->b, "\n");
}

static cg_name *add_name(cg_em *e, uint32_t v, int32_t lane)
{
    if (!cg__grow((void **)&e->names, &e->ncap, e->nn + 1, sizeof *e->names)) {
        cg__fail(e->c->err, LM_ENOMEM, cg__at(e->kw->llir_node), "out of memory");
        return NULL;
    }
    assert(v < e->vg->n); /* emission names values, it never makes new ones */
    cg_name *n = &e->names[e->nn];
    memset(n, 0, sizeof *n);
    n->val = v;
    n->lane = lane;
    n->prev = e->last[v];
    e->last[v] = e->nn++;
    snprintf(n->text, sizeof n->text, "t%u", e->next_id++);
    return n;
}

/* The latest name of v in this lane: down v's own chain of names, never the whole stack. */
static const char *find_name(cg_em *e, uint32_t v, int32_t lane)
{
    for (uint32_t i = e->last[v]; i != LM_NONE; i = e->names[i].prev)
        if (e->names[i].lane == lane) return e->names[i].text;
    return NULL;
}

void cg__em_pop(cg_em *e, uint32_t mark)
{
    for (; e->nn > mark; e->nn--)
        e->last[e->names[e->nn - 1].val] = e->names[e->nn - 1].prev;
}

static int32_t key_lane(const cg_em *e, uint32_t v, uint32_t lane)
{
    return e->vg->v[v].scope == e->vscope ? (int32_t)lane : -1;
}

/* ---- scopes ----------------------------------------------------------------------------- */

static bool in_subtree(const cg_vg *vg, uint32_t s, uint32_t root)
{
    for (; s != LM_NONE; s = vg->s[s].parent)
        if (s == root) return true;
    return false;
}

/* The C expression of scope s's variable in lane `lane`, its type and its bound. */
static void scope_var(cg_em *e, uint32_t s, uint32_t lane, char *out, size_t cap)
{
    if (s == e->vscope) {
        if (e->lanes > 1)
            snprintf(out, cap, "(%s + %uu)", e->z0, lane);
        else
            snprintf(out, cap, "%s", e->z0);
        return;
    }
    snprintf(out, cap, "%s", e->svar[s]);
}

/* Prints position expression x of scope s as C into out (an index of type chosen by its
 * bounds). false with the error set when no type holds it. */
static bool pos_c(cg_em *e, uint32_t s, uint32_t lane, hl_expr x, cg_str *out)
{
    cg_ity t;
    int64_t zmax = e->vg->s[s].zmax;
    if (!cg__expr_ity(e->vg->p, e->vg->d, x, zmax, &t)) {
        char txt[256];
        hl_e_print(e->vg->p, x, txt, sizeof txt);
        cg__fail(e->c->err, LM_EUNSUPPORTED, cg__at(e->kw->llir_node),
                 "the index expression %s (z <= %" PRId64
                 ") is not bounded in int64 over the dims' ranges",
                 txt, zmax);
        return false;
    }
    char zv[80];
    scope_var(e, s, lane, zv, sizeof zv);
    cg__expr_c(out, e->vg->p, e->vg->d, x, t, zv, zmax, e->kw->used_dim);
    return true;
}

/* ---- conversions -------------------------------------------------------------------------- */

/* The C conversion of a storage element of dtype dt to its value in registers (load) or
 * back (store), as a printf format of one %s; "%s" where none is needed. */
static const char *conv_fmt(hl_dtype dt, bool store)
{
    switch (dt) {
    case HL_F16:
        return store ? "lm_f2h(%s)" : "lm_h2f(%s)";
    case HL_BF16:
        return store ? "lm_f2bf(%s)" : "lm_bf2f(%s)";
    case HL_F8E4M3:
        return store ? "lm_f2e4m3(%s)" : "lm_e4m3_2f(%s)";
    case HL_F8E5M2:
        return store ? "lm_f2e5m2(%s)" : "lm_e5m2_2f(%s)";
    case HL_BOOL:
        return store ? "(unsigned char)(%s != 0)" : "(int)(%s)";
    default:
        return "%s";
    }
}

/* C expression converting storage element `x` (of storage type) of dtype dt to a value. */
static void load_conv(char *out, size_t cap, const char *x, hl_dtype dt)
{
    snprintf(out, cap, conv_fmt(dt, false), x);
}

void cg__em_store_expr(cg_em *e, char *out, size_t cap, const char *name, cg_rty rt, hl_dtype dt)
{
    (void)e;
    (void)rt;
    snprintf(out, cap, conv_fmt(dt, true), name);
}

/* The value of `x` (register type of dtype from) as dtype to, in registers. A float
 * value stays f32; a cast to a narrow float rounds it (the one interior op that rounds:
 * rounding is what a cast computes), so the value is the target's, held as f32. */
static void cast_c(char *out, size_t cap, const char *x, hl_dtype from, hl_dtype to)
{
    cg_rty rf = cg__rty_of(from), rt = cg__rty_of(to);
    char f[160];
    if (rt == CG_R_F32 && to != HL_F32) {
        /* round through the narrow format */
        char inner[128];
        if (rf == CG_R_F32)
            snprintf(inner, sizeof inner, "%s", x);
        else
            snprintf(inner, sizeof inner, "(float)(%s)", x);
        switch (to) {
        case HL_F16:
            snprintf(out, cap, "lm_h2f(lm_f2h(%s))", inner);
            return;
        case HL_BF16:
            snprintf(out, cap, "lm_bf2f(lm_f2bf(%s))", inner);
            return;
        case HL_F8E4M3:
            snprintf(out, cap, "lm_e4m3_2f(lm_f2e4m3(%s))", inner);
            return;
        default:
            snprintf(out, cap, "lm_e5m2_2f(lm_f2e5m2(%s))", inner);
            return;
        }
    }
    (void)f;
    if (rf == rt && from != HL_BOOL && to != HL_BOOL) {
        snprintf(out, cap, "%s", x); /* f32 -> f32, the same integer type */
        return;
    }
    if (to == HL_BOOL) {
        snprintf(out, cap, rf == CG_R_F32 ? "(int)(%s != 0.0f)" : "(int)(%s != 0)", x);
        return;
    }
    switch (rt) {
    case CG_R_F32:
        snprintf(out, cap, "(float)(%s)", x);
        break;
    case CG_R_I32:
        if (rf == CG_R_F32)
            snprintf(out, cap, "lm_f2i(%s)", x);
        else if (rf == CG_R_I64)
            snprintf(out, cap, "(int)(unsigned)(%s)", x);
        else
            snprintf(out, cap, "%s", x);
        break;
    case CG_R_I64:
        if (rf == CG_R_F32)
            snprintf(out, cap, "lm_f2l(%s)", x);
        else
            snprintf(out, cap, "(long long)(%s)", x);
        break;
    default:
        snprintf(out, cap, "%s", x);
        break;
    }
}

static bool op_c(cg_em *e, const cg_val *v, const char *const *a, char *out, size_t cap)
{
    cg_rty r = cg__rty_of(v->from);
    bool f = r == CG_R_F32;
    const char *s = NULL;
    switch (v->op) {
    case HL_OP_CAST:
        cast_c(out, cap, a[0], v->from, v->dt);
        return true;
    case HL_OP_EXP2:
        s = "exp2f";
        break;
    case HL_OP_LOG2:
        s = "log2f";
        break;
    case HL_OP_SIN:
        s = "sinf";
        break;
    case HL_OP_RECIP:
        s = "__frcp_rn";
        break;
    case HL_OP_SQRT:
        s = "__fsqrt_rn";
        break;
    case HL_OP_LESS_THAN:
        snprintf(out, cap, "(int)(%s < %s)", a[0], a[1]);
        return true;
    case HL_OP_ADD:
        s = f ? "__fadd_rn" : r == CG_R_I64 ? "lm_addl" : "lm_addi";
        break;
    case HL_OP_MUL:
        s = f ? "__fmul_rn" : r == CG_R_I64 ? "lm_mull" : "lm_muli";
        break;
    case HL_OP_MOD:
        s = f ? "fmodf" : r == CG_R_I64 ? "lm_modl" : "lm_modi";
        break;
    default:
        break;
    }
    bool unary = v->op == HL_OP_EXP2 || v->op == HL_OP_LOG2 || v->op == HL_OP_SIN ||
                 v->op == HL_OP_RECIP || v->op == HL_OP_SQRT;
    if (!s || (unary && !f) || r == CG_R_BOOL) {
        cg__fail(e->c->err, LM_EUNSUPPORTED, cg__at(v->node != LM_NONE ? v->node : e->kw->llir_node),
                 "%s of %s has no kernel template", hl_op_name(v->op), hl_dtype_name(v->from));
        return false;
    }
    if (unary)
        snprintf(out, cap, "%s(%s)", s, a[0]);
    else
        snprintf(out, cap, "%s(%s, %s)", s, a[0], a[1]);
    return true;
}

/* ---- literal floats ------------------------------------------------------------------------ */

static void float_lit(char *out, size_t cap, float c)
{
    uint32_t u;
    memcpy(&u, &c, 4);
    if (isfinite(c) && c != 0.0f)
        snprintf(out, cap, "%.9ef", (double)c); /* 9 digits: round-trips any f32 */
    else
        snprintf(out, cap, "__uint_as_float(0x%08" PRIx32 "u)", u);
}

/* ---- the row's register cache ---- */

/* After value v got its name in lane `lane`: a value that later loops over the row read
 * again is also kept in c<v>[]. */
static void maybe_cache(cg_em *e, uint32_t v, uint32_t lane)
{
    if (!e->cache_state || !e->in_cache_loop || e->vg->v[v].scope != e->vscope) return;
    if (!e->cache_want[v] || e->cache_state[v] == 2) return;
    const char *nm = find_name(e, v, key_lane(e, v, lane));
    cg__em_line(e, "c%u[%s + %uu] = %s;", v, e->cache_index, lane, nm);
    if (lane + 1 == e->lanes) e->cache_state[v] = 1;
}

/* ---- vector loads ----------------------------------------------------------------------------- */

static const char *chunk_type(uint32_t bytes)
{
    switch (bytes) {
    case 16:
        return "uint4";
    case 8:
        return "uint2";
    case 4:
        return "unsigned";
    default:
        return "unsigned short";
    }
}

/* The 32-bit word w (or the whole chunk below 4 bytes) of a raw load named base. */
static void word_of(char *out, size_t cap, const char *base, uint32_t bytes, uint32_t w)
{
    if (bytes < 4) {
        snprintf(out, cap, "(unsigned)%s", base);
        return;
    }
    uint32_t per = bytes >= 16 ? 4 : bytes / 4; /* words per chunk */
    uint32_t chunk = w / per, k = w % per;
    static const char *comp = "xyzw";
    if (bytes >= 16)
        snprintf(out, cap, "%s_%u.%c", base, chunk, comp[k]);
    else if (bytes == 8)
        snprintf(out, cap, "%s_0.%c", base, comp[k]);
    else
        snprintf(out, cap, "%s_0", base);
}

/* Reads lanes of load v as one raw vector; names every lane. */
static bool vector_load(cg_em *e, uint32_t v)
{
    const cg_val *x = &e->vg->v[v];
    uint32_t buf = e->c->buf_of[x->node];
    int pi = cg__kw_buf(e->kw, buf, x->dt, false);
    if (pi < 0) return false;
    size_t es = hl_dtype_size(x->dt);
    uint32_t bytes = (uint32_t)es * e->lanes;
    cg_str ps;
    cg__str_init(&ps);
    bool ok = pos_c(e, x->scope, 0, x->pos, &ps);
    char *pos = cg__str_take(&ps);
    if (!ok || !pos) {
        cg__free(pos);
        if (ok) cg__fail(e->c->err, LM_ENOMEM, cg__at(e->kw->llir_node), "out of memory");
        return false;
    }
    char base[32];
    snprintf(base, sizeof base, "t%u", e->next_id++);
    const char *ct = chunk_type(bytes < 16 ? bytes : 16);
    cg__em_line(e, "const %s *%s_p = (const %s *)(b%d + %s);", ct, base, ct, pi, pos);
    cg__free(pos);
    uint32_t chunks = bytes >= 16 ? bytes / 16 : 1;
    for (uint32_t c = 0; c < chunks; c++)
        cg__em_line(e, "const %s %s_%u = __ldg(%s_p + %u);", ct, base, c, base, c);
    for (uint32_t l = 0; l < e->lanes; l++) {
        char bits[192], w0[48], w1[48];
        uint32_t off = l * (uint32_t)es;
        if (es == 8) {
            word_of(w0, sizeof w0, base, bytes, off / 4);
            word_of(w1, sizeof w1, base, bytes, off / 4 + 1);
            snprintf(bits, sizeof bits, "(long long)(((lm_u64)%s << 32) | (lm_u64)%s)", w1, w0);
        } else if (es == 4) {
            word_of(w0, sizeof w0, base, bytes, off / 4);
            snprintf(bits, sizeof bits, x->dt == HL_F32 ? "__uint_as_float(%s)" : "(int)%s", w0);
        } else {
            word_of(w0, sizeof w0, base, bytes, off / 4);
            unsigned sh = (off % 4) * 8, mask = es == 2 ? 0xffffu : 0xffu;
            snprintf(bits, sizeof bits, "(%s)((%s >> %u) & 0x%xu)", cg__store_c(x->dt), w0, sh,
                     mask);
        }
        char val[192];
        load_conv(val, sizeof val, bits, x->dt);
        cg_name *n = add_name(e, v, (int32_t)l);
        if (!n) return false;
        cg__em_line(e, "const %s %s = %s;", cg__rty_c(x->rt), n->text, val);
        maybe_cache(e, v, l);
    }
    return true;
}

/* ---- reductions ------------------------------------------------------------------------------- */

/* Materialises every value the body of reduction r needs from outside its body scope. */
static bool pre_outer_rec(cg_em *e, uint32_t v, uint32_t body_scope, uint32_t lane, bool *seen)
{
    if (seen[v]) return true;
    seen[v] = true;
    const cg_val *x = &e->vg->v[v];
    if (!in_subtree(e->vg, x->scope, body_scope)) return cg__em_val(e, v, lane) != NULL;
    for (uint32_t i = 0; i < x->na; i++)
        if (!pre_outer_rec(e, x->a[i], body_scope, lane, seen)) return false;
    if (x->kind == CG_V_REDUCE && !pre_outer_rec(e, x->body, body_scope, lane, seen)) return false;
    return true;
}

bool cg__em_pre_outer(cg_em *e, uint32_t v, uint32_t scope, uint32_t lane)
{
    bool *seen = cg__alloc(e->vg->n, sizeof *seen);
    if (!seen) {
        cg__fail(e->c->err, LM_ENOMEM, cg__at(e->kw->llir_node), "out of memory");
        return false;
    }
    bool ok = pre_outer_rec(e, v, scope, lane, seen);
    cg__free(seen);
    return ok;
}

/* The C text of q's base for reduction r: q0 composed with r's position, printed in the
 * parent scope. */
static bool red_base(cg_em *e, const cg_val *r, uint32_t lane, cg_str *out)
{
    const cg_scope *s = &e->vg->s[r->body_scope];
    int64_t zb = e->vg->s[r->scope].zmax;
    hl_expr qb = hl_e_subst_z(e->vg->p, s->q0, r->pos, zb >= 0 && zb < INT64_MAX ? zb + 1 : 0);
    if (qb == HL_NONE) {
        cg__fail(e->c->err, LM_EUNSUPPORTED, cg__at(e->kw->llir_node),
                 "a reduction's index expression overflows");
        return false;
    }
    return pos_c(e, r->scope, lane, qb, out);
}

static cg_ity scope_ity(const cg_vg *vg, uint32_t s)
{
    return vg->s[s].zmax < INT32_MAX / 2 ? CG_U32 : CG_I64;
}

bool cg__em_len(cg_em *e, hl_expr x, cg_ity t, cg_str *out)
{
    cg_ity tt;
    if (!cg__expr_ity(e->vg->p, e->vg->d, x, 0, &tt)) {
        cg__fail(e->c->err, LM_EUNSUPPORTED, cg__at(e->kw->llir_node), "a size is not bounded in int64");
        return false;
    }
    if (tt == CG_U32 && t == CG_I64) tt = CG_I64;
    cg__str_addf(out, "((%s)", cg__ity_name(t));
    cg__expr_c(out, e->vg->p, e->vg->d, x, tt, "0", 0, e->kw->used_dim);
    cg__str_add(out, ")");
    return true;
}

static char *take(cg_em *e, cg_str *s)
{
    char *t = cg__str_take(s);
    if (!t) cg__fail(e->c->err, LM_ENOMEM, cg__at(e->kw->llir_node), "out of memory");
    return t;
}

/* A reduction computed by one thread: a loop over k. */
static const char *seq_reduce(cg_em *e, uint32_t v, uint32_t lane)
{
    const cg_val *r = &e->vg->v[v];
    uint32_t bs = r->body_scope;
    if (!cg__em_pre_outer(e, r->body, bs, lane)) return NULL;
    cg_name *acc = add_name(e, v, key_lane(e, v, lane));
    if (!acc) return NULL;
    char accn[96];
    snprintf(accn, sizeof accn, "%s", acc->text);
    cg__em_line(e, "%s %s = %s;", cg__rty_c(r->rt), accn, cg__em_red_init(r));
    cg_ity qt = scope_ity(e->vg, bs);
    const cg_scope *s = &e->vg->s[bs];
    cg_str qb, len, inner;
    cg__str_init(&qb);
    cg__str_init(&len);
    cg__str_init(&inner);
    bool ok = red_base(e, r, lane, &qb) && cg__em_len(e, s->len, qt, &len) &&
              cg__em_len(e, s->inner, qt, &inner);
    char *tqb = take(e, &qb), *tlen = take(e, &len), *tin = take(e, &inner);
    const char *res = NULL;
    if (ok && tqb && tlen && tin) {
        uint32_t id = e->next_id++;
        const char *ty = cg__ity_name(qt);
        cg__em_line(e, "{");
        e->indent++;
        cg__em_line(e, "const %s q%ub = (%s)(%s);", ty, id, ty, tqb);
        cg__em_line(e, "for (%s k%u = 0; k%u < %s; k%u++) {", ty, id, id, tlen, id);
        e->indent++;
        cg__em_line(e, "const %s q%u = q%ub + k%u * %s;", ty, id, id, id, tin);
        snprintf(e->svar[bs], sizeof e->svar[bs], "q%u", id);
        uint32_t mark = e->nn;
        const char *x = cg__em_val(e, r->body, lane);
        if (x) {
            cg__em_combine(e, r, accn, x);
            res = accn;
        }
        cg__em_pop(e, mark);
        e->indent--;
        cg__em_line(e, "}");
        e->indent--;
        cg__em_line(e, "}");
    }
    cg__free(tqb);
    cg__free(tlen);
    cg__free(tin);
    return res ? find_name(e, v, key_lane(e, v, lane)) : NULL;
}

/* Combines the per-thread partials `acc` of a row group; every thread ends with the
 * whole row's result. */
static bool row_combine(cg_em *e, const cg_val *r, const char *acc)
{
    const char *ty = cg__rty_c(r->rt);
    uint32_t id = e->next_id++;
    cg__em_line(e, "#pragma unroll");
    cg__em_line(e, "for (int o%u = 16; o%u > 0; o%u >>= 1) {", id, id, id);
    e->indent++;
    char x[32];
    snprintf(x, sizeof x, "s%u", id);
    cg__em_line(e, "const %s %s = __shfl_xor_sync(0xffffffffu, %s, o%u);", ty, x, acc, id);
    cg__em_combine(e, r, acc, x);
    e->indent--;
    cg__em_line(e, "}");
    if (e->row_threads <= 32) return true;
    if (e->n_slots >= CG_MAX_RED_SLOTS) {
        cg__fail(e->c->err, LM_EUNSUPPORTED, cg__at(e->kw->llir_node),
                 "more than %d row reductions in one region", CG_MAX_RED_SLOTS);
        return false;
    }
    uint32_t slot = e->n_slots++;
    e->slot_rt[slot] = r->rt;
    uint32_t nw = e->row_threads / 32;
    cg__em_line(e, "if ((threadIdx.x & 31u) == 0u) lm_red%u[threadIdx.x >> 5] = %s;", slot, acc);
    cg__em_line(e, "__syncthreads();");
    cg__em_line(e, "%s = lm_red%u[0];", acc, slot);
    cg__em_line(e, "for (unsigned w%u = 1; w%u < %uu; w%u++) {", id, id, nw, id);
    e->indent++;
    snprintf(x, sizeof x, "lm_red%u[w%u]", slot, id);
    cg__em_combine(e, r, acc, x);
    e->indent--;
    cg__em_line(e, "}");
    return true;
}

/* A row reduction: every thread of the row's group accumulates its share, then the group
 * combines. */
static const char *coop_reduce(cg_em *e, uint32_t v)
{
    const cg_val *r = &e->vg->v[v];
    uint32_t bs = r->body_scope;
    if (!cg__em_pre_outer(e, r->body, bs, 0)) return NULL;
    cg_name *acc = add_name(e, v, -1);
    if (!acc) return NULL;
    char accn[96];
    snprintf(accn, sizeof accn, "%s", acc->text);
    uint32_t accidx = e->nn - 1;
    cg__em_line(e, "%s %s = %s;", cg__rty_c(r->rt), accn, cg__em_red_init(r));
    const cg_scope *s = &e->vg->s[bs];
    bool ok;
    if (bs == e->vg->elem || cg__expr_is_one(e->vg->p, s->inner)) {
        cg_str qb;
        cg__str_init(&qb);
        char *base = NULL;
        if (bs == e->vg->elem) {
            base = cg__strdup(e->rowbase ? e->rowbase : "0");
            ok = base != NULL;
        } else {
            ok = red_base(e, r, 0, &qb);
            base = take(e, &qb);
            ok = ok && base;
        }
        ok = ok && cg__em_space_loop(e, bs, base, v, accn);
        cg__free(base);
    } else {
        /* inner stride > 1: a strided loop, one element per thread and step */
        cg_ity qt = scope_ity(e->vg, bs);
        cg_str qb, len, inner;
        cg__str_init(&qb);
        cg__str_init(&len);
        cg__str_init(&inner);
        ok = red_base(e, r, 0, &qb) && cg__em_len(e, s->len, qt, &len) &&
             cg__em_len(e, s->inner, qt, &inner);
        char *tqb = take(e, &qb), *tlen = take(e, &len), *tin = take(e, &inner);
        ok = ok && tqb && tlen && tin;
        if (ok) {
            uint32_t id = e->next_id++;
            const char *ty = cg__ity_name(qt);
            cg__em_line(e, "{");
            e->indent++;
            cg__em_line(e, "const %s q%ub = (%s)(%s);", ty, id, ty, tqb);
            cg__em_line(e, "for (%s k%u = (%s)%s; k%u < %s; k%u += %uu) {", ty, id, ty, e->tid, id,
                        tlen, id, e->row_threads);
            e->indent++;
            cg__em_line(e, "const %s q%u = q%ub + k%u * %s;", ty, id, id, id, tin);
            snprintf(e->svar[bs], sizeof e->svar[bs], "q%u", id);
            uint32_t mark = e->nn;
            const char *x = cg__em_val(e, r->body, 0);
            if (x)
                cg__em_combine(e, r, accn, x);
            else
                ok = false;
            cg__em_pop(e, mark);
            e->indent--;
            cg__em_line(e, "}");
            e->indent--;
            cg__em_line(e, "}");
        }
        cg__free(tqb);
        cg__free(tlen);
        cg__free(tin);
    }
    if (!ok || !row_combine(e, r, accn)) return NULL;
    return e->names[accidx].text;
}

/* ---- the space loop ------------------------------------------------------------------------ */

/* Loop over the `len` elements of scope s starting at C index base: for reduction red
 * (accumulating into acc), or, with red == LM_NONE, the output loop (storing the root). */
bool cg__em_space_loop(cg_em *e, uint32_t s, const char *base, uint32_t red, const char *acc)
{
    cg_vg *vg = e->vg;
    const cg_scope *sc = &vg->s[s];
    uint32_t V = s == vg->elem ? e->v_elem : e->v_body;
    if (s != vg->elem && (!e->body_vec_ok || !e->body_vec_ok[s])) V = 1;
    cg_ity qt = scope_ity(vg, s);
    const char *ty = cg__ity_name(qt);
    int64_t lenv;
    bool stat = hl_e_is_num(vg->p, sc->len, &lenv);
    cg_str ls;
    cg__str_init(&ls);
    if (!cg__em_len(e, sc->len, qt, &ls)) {
        cg__str_fini(&ls);
        return false;
    }
    char *len = take(e, &ls);
    if (!len) return false;
    uint32_t id = e->next_id++;
    uint32_t T = 0;
    bool cached = stat && s == vg->elem && e->cache_T > 0;
    /* the loop head */
    if (stat) {
        uint64_t per = (uint64_t)e->row_threads * V;
        T = (uint32_t)(((uint64_t)lenv + per - 1) / per);
        if (cached) T = e->cache_T;
        cg__em_line(e, "#pragma unroll");
        cg__em_line(e, "for (unsigned u%u = 0; u%u < %uu; u%u++) {", id, id, T, id);
        e->indent++;
        cg__em_line(e, "const %s j%u = ((%s)u%u * %uu + (%s)%s) * %uu;", ty, id, ty, id,
                    e->row_threads, ty, e->tid, V);
        cg__em_line(e, "if (j%u < %s) {", id, len);
    } else {
        cg__em_line(e, "for (%s j%u = (%s)%s * %uu; j%u < %s; j%u += %uu) {", ty, id, ty, e->tid, V,
                    id, len, id, e->row_threads * V);
        cg__em_line(e, "{");
    }
    e->indent++;
    cg__em_line(e, "const %s z%u = (%s)(%s) + j%u;", ty, id, ty, base, id);
    /* enter the vector scope */
    uint32_t save_vscope = e->vscope, save_lanes = e->lanes;
    char save_z0[64];
    snprintf(save_z0, sizeof save_z0, "%s", e->z0);
    bool save_vec = e->vec;
    char save_ci[32];
    snprintf(save_ci, sizeof save_ci, "%s", e->cache_index);
    e->vscope = s;
    e->lanes = V;
    e->vec = V > 1;
    snprintf(e->z0, sizeof e->z0, "z%u", id);
    snprintf(e->cache_index, sizeof e->cache_index, "u%u * %uu", id, V);
    bool save_icl = e->in_cache_loop;
    e->in_cache_loop = cached;
    uint32_t mark = e->nn;
    bool ok = true;
    if (red != LM_NONE) {
        const cg_val *r = &vg->v[red];
        for (uint32_t l = 0; l < V && ok; l++) {
            const char *x = cg__em_val(e, r->body, l);
            if (!x)
                ok = false;
            else
                cg__em_combine(e, r, acc, x);
        }
    } else {
        ok = cg__em_store_root(e, V);
    }
    cg__em_pop(e, mark);
    if (cached)
        for (uint32_t i = 0; i < vg->n; i++)
            if (e->cache_state[i] == 1) e->cache_state[i] = 2; /* written in this loop */
    e->in_cache_loop = save_icl;
    e->vscope = save_vscope;
    e->lanes = save_lanes;
    e->vec = save_vec;
    snprintf(e->z0, sizeof e->z0, "%s", save_z0);
    snprintf(e->cache_index, sizeof e->cache_index, "%s", save_ci);
    e->indent--;
    cg__em_line(e, "}");
    e->indent--;
    cg__em_line(e, "}");
    cg__free(len);
    return ok;
}

/* ---- materialisation ----------------------------------------------------------------------- */

/* Emits the operands of op value v that have no name yet, each before its user and left
 * to right (the recursion's order), with a stack of its own for the ops among them: a
 * fused chain thousands of ops deep costs no C stack. False on an error (in e->c->err). */
static bool emit_operands(cg_em *e, uint32_t v, uint32_t lane)
{
    struct frame { uint32_t v, i; } *st = NULL;
    uint32_t n = 0, cap = 0;
    bool ok = cg__grow((void **)&st, &cap, 1, sizeof *st);
    if (ok) st[n++] = (struct frame){v, 0};
    while (ok && n > 0) {
        struct frame *f = &st[n - 1];
        const cg_val *x = &e->vg->v[f->v];
        if (f->i < x->na) {
            uint32_t a = x->a[f->i++];
            const cg_val *y = &e->vg->v[a];
            if (find_name(e, a, key_lane(e, a, lane))) continue;
            bool kept = e->cache_state && e->in_cache_loop && e->cache_state[a] == 2 &&
                        y->scope == e->vscope; /* in registers from an earlier loop */
            if (kept || y->kind != CG_V_OP) { /* no chain below: named in its turn */
                if (!cg__em_val(e, a, lane)) break;
            } else if ((ok = cg__grow((void **)&st, &cap, n + 1, sizeof *st))) {
                st[n++] = (struct frame){a, 0};
            }
            continue;
        }
        if (--n > 0 && !cg__em_val(e, st[n].v, lane)) break;
    }
    bool done = ok && n == 0;
    cg__free(st);
    if (!ok) cg__fail(e->c->err, LM_ENOMEM, cg__at(e->kw->llir_node), "out of memory");
    return done;
}

const char *cg__em_val(cg_em *e, uint32_t v, uint32_t lane)
{
    if (lm_err_is_set(e->c->err)) return NULL;
    cg_vg *vg = e->vg;
    const cg_val *x = &vg->v[v];
    int32_t kl = key_lane(e, v, lane);
    const char *have = find_name(e, v, kl);
    if (have) return have;
    /* kept in registers by an earlier loop over the row */
    if (e->cache_state && e->cache_state[v] == 2 && x->scope == e->vscope && e->in_cache_loop) {
        cg_name *n = add_name(e, v, kl);
        if (!n) return NULL;
        snprintf(n->text, sizeof n->text, "c%u[%s + %uu]", v, e->cache_index, lane);
        return n->text;
    }
    char expr[640];
    switch (x->kind) {
    case CG_V_CONST: {
        float_lit(expr, sizeof expr, x->c);
        cg_name *n = add_name(e, v, kl);
        if (!n) return NULL;
        cg__em_line(e, "const float %s = %s;", n->text, expr);
        return n->text;
    }
    case CG_V_IOTA: {
        cg_str s;
        cg__str_init(&s);
        /* the iota's value is printed in long long: it may be negative or large */
        cg_ity t;
        int64_t zmax = vg->s[x->scope].zmax;
        if (!cg__expr_ity(vg->p, vg->d, x->iota, zmax, &t)) t = CG_I64;
        char zv[80];
        scope_var(e, x->scope, lane, zv, sizeof zv);
        cg__expr_c(&s, vg->p, vg->d, x->iota, t, zv, zmax, e->kw->used_dim);
        char *t2 = take(e, &s);
        if (!t2) return NULL;
        cg_name *n = add_name(e, v, kl);
        if (!n) {
            cg__free(t2);
            return NULL;
        }
        cg__em_line(e, "const int %s = (int)(%s);", n->text, t2);
        cg__free(t2);
        return n->text;
    }
    case CG_V_LOAD: {
        if (x->scope == e->vscope && e->vec && e->vload && e->vload[v]) {
            if (!vector_load(e, v)) return NULL;
            return find_name(e, v, kl);
        }
        if (!e->c->buf_of || e->c->buf_of[x->node] == LM_NONE) {
            cg__fail(e->c->err, LM_EVERIFY, cg__at(e->kw->llir_node), "reads node %%%u, which is not stored",
                     x->node);
            return NULL;
        }
        uint32_t buf = e->c->buf_of[x->node];
        int pi = cg__kw_buf(e->kw, buf, x->dt, false);
        if (pi < 0) return NULL;
        cg_str s;
        cg__str_init(&s);
        bool ok = pos_c(e, x->scope, lane, x->pos, &s);
        char *pos = take(e, &s);
        if (!ok || !pos) {
            cg__free(pos);
            return NULL;
        }
        size_t cap = strlen(pos) + 96;
        char *el = cg__alloc(cap, 1), *val = cg__alloc(cap + 32, 1);
        if (!el || !val) {
            cg__free(el);
            cg__free(val);
            cg__free(pos);
            cg__fail(e->c->err, LM_ENOMEM, cg__at(e->kw->llir_node), "out of memory");
            return NULL;
        }
        snprintf(el, cap, "b%d[%s]", pi, pos);
        cg__free(pos);
        load_conv(val, cap + 32, el, x->dt);
        cg__free(el);
        cg_name *n = add_name(e, v, kl);
        if (!n) {
            cg__free(val);
            return NULL;
        }
        cg__em_line(e, "const %s %s = %s;", cg__rty_c(x->rt), n->text, val);
        cg__free(val);
        break;
    }
    case CG_V_OP: {
        char ops[HL_MAX_INPUTS][96];
        const char *a[HL_MAX_INPUTS];
        if (!emit_operands(e, v, lane)) return NULL;
        for (uint32_t i = 0; i < x->na; i++) {
            const char *o = cg__em_val(e, x->a[i], lane);
            if (!o) return NULL;
            snprintf(ops[i], sizeof ops[i], "%s", o);
            a[i] = ops[i];
        }
        if (!op_c(e, x, a, expr, sizeof expr)) return NULL;
        cg_name *n = add_name(e, v, kl);
        if (!n) return NULL;
        cg__em_line(e, "const %s %s = %s;", cg__rty_c(x->rt), n->text, expr);
        break;
    }
    case CG_V_REDUCE:
        if (e->coop && x->scope == vg->row) return coop_reduce(e, v);
        return seq_reduce(e, v, lane);
    }
    maybe_cache(e, v, lane);
    return find_name(e, v, kl);
}

/* ---- the store ---------------------------------------------------------------------------- */

bool cg__em_store_root(cg_em *e, uint32_t lanes)
{
    cg_vg *vg = e->vg;
    const cg_val *r = &vg->v[vg->root];
    hl_dtype dt = e->out_dt;
    size_t es = hl_dtype_size(dt);
    char st[16][200];
    for (uint32_t l = 0; l < lanes; l++) {
        const char *x = cg__em_val(e, vg->root, l);
        if (!x) return false;
        char cv[160], nm[96];
        snprintf(nm, sizeof nm, "%s", x);
        if (r->dt == dt)
            snprintf(cv, sizeof cv, "%s", nm);
        else
            cast_c(cv, sizeof cv, nm, r->dt, dt);
        cg__em_store_expr(e, st[l], sizeof st[l], cv, cg__rty_of(dt), dt);
    }
    if (lanes == 1) {
        cg__em_line(e, "b%d[%s] = %s;", e->out_param, e->z0, st[0]);
        return true;
    }
    uint32_t bytes = (uint32_t)es * lanes;
    uint32_t nwords = bytes / 4 ? bytes / 4 : 1;
    uint32_t id = e->next_id++;
    /* pack the lanes into 32-bit words (or one short below 4 bytes) */
    cg_str words[16];
    for (uint32_t w = 0; w < 16; w++)
        cg__str_init(&words[w]);
    for (uint32_t l = 0; l < lanes; l++) {
        uint32_t off = l * (uint32_t)es;
        if (es == 8) {
            cg__em_line(e, "const lm_u64 w%u_%u = (lm_u64)(%s);", id, l, st[l]);
            cg__str_addf(&words[off / 4], "(unsigned)w%u_%u", id, l);
            cg__str_addf(&words[off / 4 + 1], "(unsigned)(w%u_%u >> 32)", id, l);
            continue;
        }
        cg_str *wd = &words[bytes < 4 ? 0 : off / 4];
        if (wd->len) cg__str_add(wd, " | ");
        if (es == 4)
            cg__str_addf(wd, dt == HL_F32 ? "__float_as_uint(%s)" : "(unsigned)(%s)", st[l]);
        else
            cg__str_addf(wd, "((unsigned)(%s)(%s) << %u)", cg__store_c(dt), st[l], (off % 4) * 8);
    }
    char *wt[16];
    bool oom = false;
    for (uint32_t w = 0; w < 16; w++) {
        wt[w] = w < nwords ? cg__str_take(&words[w]) : NULL;
        if (w < nwords && !wt[w]) oom = true;
        cg__str_fini(&words[w]);
    }
    if (oom) {
        for (uint32_t w = 0; w < 16; w++)
            cg__free(wt[w]);
        cg__fail(e->c->err, LM_ENOMEM, cg__at(e->kw->llir_node), "out of memory");
        return false;
    }
    const char *ct = chunk_type(bytes < 16 ? bytes : 16);
    cg__em_line(e, "%s *w%u_p = (%s *)(b%d + %s);", ct, id, ct, e->out_param, e->z0);
    if (bytes < 4) {
        cg__em_line(e, "*w%u_p = (unsigned short)(%s);", id, wt[0]);
        cg__free(wt[0]);
        return true;
    }
    static const char *comp = "xyzw";
    uint32_t per = bytes >= 16 ? 4 : bytes / 4;
    for (uint32_t c = 0; c * per < nwords; c++) {
        if (per == 1) {
            cg__em_line(e, "w%u_p[%u] = %s;", id, c, wt[c]);
            continue;
        }
        cg__em_line(e, "{");
        e->indent++;
        cg__em_line(e, "%s q;", ct);
        for (uint32_t k = 0; k < per; k++)
            cg__em_line(e, "q.%c = %s;", comp[k], wt[c * per + k]);
        cg__em_line(e, "w%u_p[%u] = q;", id, c);
        e->indent--;
        cg__em_line(e, "}");
    }
    for (uint32_t w = 0; w < 16; w++)
        cg__free(wt[w]);
    return true;
}

/* ---- setup -------------------------------------------------------------------------------- */

int cg__em_init(cg_em *e, cg_ctx *c, cg_vg *vg, cg_kw *kw, cg_str *b)
{
    memset(e, 0, sizeof *e);
    e->c = c;
    e->vg = vg;
    e->kw = kw;
    e->b = b;
    e->vscope = LM_NONE;
    e->lanes = 1;
    e->v_elem = e->v_body = 1;
    e->out_param = -1;
    e->svar = cg__alloc(vg->ns, sizeof *e->svar);
    e->last = cg__alloc(vg->n + 1, sizeof *e->last);
    if (!e->svar || !e->last)
        return cg__fail(c->err, LM_ENOMEM, cg__at(kw->llir_node), "out of memory");
    memset(e->last, 0xff, (vg->n + 1) * sizeof *e->last); /* LM_NONE everywhere */
    return 0;
}

void cg__em_fini(cg_em *e)
{
    cg__free(e->names);
    cg__free(e->last);
    cg__free(e->svar);
    cg__free(e->rowbase);
    memset(e, 0, sizeof *e);
}
