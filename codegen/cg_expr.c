/* cg_expr.c - symbolic index expressions as the generator needs them (copied into the
 * plan's pool with hlir's hl_expr_copy), bounded by interval arithmetic over the dims' declared ranges, and printed
 * as C in the narrowest type that provably holds every intermediate value.
 *
 * Index width. An expression is printed in `unsigned` (32 bits) when every subexpression
 * lies in [0, 2^31) for every z the scope reaches and every dim value in range: unsigned
 * division and modulo by constants are the cheapest, and no intermediate can wrap.
 * Otherwise it is printed in `long long`; floor division and modulo go through lm_fdiv /
 * lm_fmod only where a dividend may be negative (C's / and % agree with floor semantics
 * on non-negative operands). Ranges are computed in 128-bit arithmetic, so an overflow of
 * int64 is seen (the range becomes wide and the expression is refused). */
#include "cg_int.h"

#include <inttypes.h>
#include <stdio.h>

/* ---- ranges ---------------------------------------------------------------------- */

__extension__ typedef __int128 i128; /* gcc and clang; pedantic-clean */

static cg_range mk(i128 lo, i128 hi)
{
    cg_range r = {0, 0, false};
    if (lo < INT64_MIN || hi > INT64_MAX || lo > hi) {
        r.wide = true;
        return r;
    }
    r.lo = (int64_t)lo;
    r.hi = (int64_t)hi;
    return r;
}

static const cg_range WIDE = {0, 0, true};

static i128 floordiv(i128 a, i128 b)
{
    i128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

static cg_range range_rec(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax);

#define MAX_FACTORS 16

/* The factors of a product (MUL nodes flattened); false when there are too many. */
static bool factors(const hl_expr_pool *p, hl_expr e, hl_expr *out, uint32_t *n)
{
    hl_expr_node x = hl_e_get(p, e);
    if (x.kind == HL_E_MUL) return factors(p, x.a, out, n) && factors(p, x.b, out, n);
    if (*n >= MAX_FACTORS) return false;
    out[(*n)++] = e;
    return true;
}

/* A product holding d * (y / d) (as factors, in any order) is at most the rest times y:
 * intervals alone lose that (K*N*(z/(K*N)) would look like K*N*z). Sets *r and returns
 * true when the product has that form with y >= 0 and every factor >= 1 or a number. */
static bool product_range(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax,
                          cg_range *r)
{
    hl_expr f[MAX_FACTORS], g[MAX_FACTORS];
    uint32_t nf = 0;
    if (!factors(p, e, f, &nf) || nf < 2) return false;
    for (uint32_t i = 0; i < nf; i++) {
        hl_expr_node x = hl_e_get(p, f[i]);
        if (x.kind != HL_E_DIV) continue;
        uint32_t ng = 0;
        if (!factors(p, x.b, g, &ng)) continue;
        bool used[MAX_FACTORS] = {false};
        used[i] = true;
        bool all = true;
        for (uint32_t k = 0; k < ng && all; k++) {
            bool found = false;
            for (uint32_t j = 0; j < nf && !found; j++)
                if (!used[j] && f[j] == g[k]) used[j] = found = true;
            all = found;
        }
        if (!all) continue;
        cg_range y = range_rec(p, d, x.a, zmax), dv = range_rec(p, d, x.b, zmax);
        if (y.wide || dv.wide || y.lo < 0 || dv.lo < 1) continue;
        i128 lo = 0, hi = y.hi;
        bool ok = true;
        for (uint32_t j = 0; j < nf && ok; j++) {
            if (used[j]) continue;
            cg_range fr = range_rec(p, d, f[j], zmax);
            if (fr.wide || fr.lo < 0) {
                ok = false;
                break;
            }
            hi *= fr.hi;
            if (hi > INT64_MAX) ok = false;
        }
        if (!ok) continue;
        *r = mk(lo, hi);
        return !r->wide;
    }
    return false;
}

static cg_range range_rec(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax)
{
    hl_expr_node n = hl_e_get(p, e);
    switch (n.kind) {
    case HL_E_NUM:
        return mk(n.value, n.value);
    case HL_E_Z:
        return mk(0, zmax < 0 ? 0 : zmax);
    case HL_E_VAR: {
        uint32_t di = n.var < d->nvars ? d->var_dim[n.var] : LM_NONE;
        if (di == LM_NONE) return WIDE;
        return mk(d->dims[di].lo, d->dims[di].hi);
    }
    default:
        break;
    }
    cg_range pr;
    if (n.kind == HL_E_MUL && product_range(p, d, e, zmax, &pr)) return pr;
    cg_range a = range_rec(p, d, n.a, zmax), b = range_rec(p, d, n.b, zmax);
    if (a.wide || b.wide) return WIDE;
    i128 al = a.lo, ah = a.hi, bl = b.lo, bh = b.hi;
    switch (n.kind) {
    case HL_E_ADD:
        return mk(al + bl, ah + bh);
    case HL_E_SUB:
        return mk(al - bh, ah - bl);
    case HL_E_MUL: {
        i128 c[4] = {al * bl, al * bh, ah * bl, ah * bh};
        i128 lo = c[0], hi = c[0];
        for (int i = 1; i < 4; i++) {
            if (c[i] < lo) lo = c[i];
            if (c[i] > hi) hi = c[i];
        }
        return mk(lo, hi);
    }
    case HL_E_DIV:
    case HL_E_CDIV: {
        if (bl <= 0) return WIDE; /* a divisor that may be zero or negative */
        i128 lo, hi;
        if (n.kind == HL_E_DIV) {
            lo = al >= 0 ? floordiv(al, bh) : floordiv(al, bl);
            hi = ah >= 0 ? floordiv(ah, bl) : floordiv(ah, bh);
        } else {
            lo = al >= 0 ? -floordiv(-al, bh) : -floordiv(-al, bl);
            hi = ah >= 0 ? -floordiv(-ah, bl) : -floordiv(-ah, bh);
        }
        return mk(lo, hi);
    }
    case HL_E_MOD:
        if (bl <= 0) return WIDE;
        if (al >= 0 && ah < bl) return mk(al, ah); /* x % b == x */
        return mk(0, (al >= 0 && ah < bh - 1) ? ah : bh - 1);
    case HL_E_MIN:
        return mk(al < bl ? al : bl, ah < bh ? ah : bh);
    case HL_E_MAX:
        return mk(al > bl ? al : bl, ah > bh ? ah : bh);
    case HL_E_AND:
    case HL_E_OR:
    case HL_E_GE:
    case HL_E_LT:
        return mk(0, 1);
    default:
        return WIDE;
    }
}

cg_range cg__expr_range(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax)
{
    return range_rec(p, d, e, zmax);
}

int64_t cg__expr_max(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax)
{
    cg_range r = range_rec(p, d, e, zmax);
    return r.wide ? INT64_MAX : r.hi;
}

/* Every subexpression within [lo, hi]? */
static bool all_within(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax,
                       int64_t lo, int64_t hi)
{
    cg_range r = range_rec(p, d, e, zmax);
    if (r.wide || r.lo < lo || r.hi > hi) return false;
    hl_expr_node n = hl_e_get(p, e);
    if (n.kind == HL_E_NUM || n.kind == HL_E_VAR || n.kind == HL_E_Z) return true;
    return all_within(p, d, n.a, zmax, lo, hi) && all_within(p, d, n.b, zmax, lo, hi);
}

bool cg__expr_ity(const hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax, cg_ity *out)
{
    if (all_within(p, d, e, zmax, 0, INT32_MAX)) {
        *out = CG_U32;
        return true;
    }
    if (all_within(p, d, e, zmax, INT64_MIN, INT64_MAX)) {
        *out = CG_I64;
        return true;
    }
    return false;
}

const char *cg__ity_name(cg_ity t)
{
    return t == CG_U32 ? "unsigned" : "long long";
}

/* ---- printing --------------------------------------------------------------------- */

static void print_rec(cg_str *b, const hl_expr_pool *p, const cg_dims *d, hl_expr e, cg_ity t,
                      const char *zname, bool *used, int64_t zmax)
{
    hl_expr_node n = hl_e_get(p, e);
    const char *suf = t == CG_U32 ? "u" : "ll";
    switch (n.kind) {
    case HL_E_NUM:
        if (n.value < 0)
            cg__str_addf(b, "(%" PRId64 "%s)", n.value, suf);
        else
            cg__str_addf(b, "%" PRId64 "%s", n.value, suf);
        return;
    case HL_E_VAR: {
        uint32_t di = n.var < d->nvars ? d->var_dim[n.var] : LM_NONE;
        if (used && di != LM_NONE) used[di] = true;
        cg__str_addf(b, "%s%u", t == CG_U32 ? "U" : "D", di);
        return;
    }
    case HL_E_Z:
        cg__str_addf(b, "((%s)(%s))", cg__ity_name(t), zname);
        return;
    default:
        break;
    }
    const char *op = NULL, *fn = NULL;
    bool cmp = false;
    switch (n.kind) {
    case HL_E_ADD:
        op = " + ";
        break;
    case HL_E_SUB:
        op = " - ";
        break;
    case HL_E_MUL:
        op = " * ";
        break;
    case HL_E_DIV:
    case HL_E_MOD: {
        cg_range ra = range_rec(p, d, n.a, zmax), rb = range_rec(p, d, n.b, zmax);
        bool neg = t == CG_I64 && (ra.wide || rb.wide || ra.lo < 0 || rb.lo <= 0);
        if (neg)
            fn = n.kind == HL_E_DIV ? "lm_fdiv" : "lm_fmod";
        else
            op = n.kind == HL_E_DIV ? " / " : " % ";
        break;
    }
    case HL_E_CDIV:
        fn = t == CG_U32 ? "lm_cdivu" : "lm_cdivl";
        break;
    case HL_E_MIN:
        fn = t == CG_U32 ? "lm_minu" : "lm_minl";
        break;
    case HL_E_MAX:
        fn = t == CG_U32 ? "lm_maxu" : "lm_maxl";
        break;
    case HL_E_AND:
        op = " != 0 && ";
        cmp = true;
        break;
    case HL_E_OR:
        op = " != 0 || ";
        cmp = true;
        break;
    case HL_E_GE:
        op = " >= ";
        cmp = true;
        break;
    case HL_E_LT:
        op = " < ";
        cmp = true;
        break;
    default:
        op = " ? ";
        break;
    }
    if (fn) {
        cg__str_addf(b, "%s(", fn);
        print_rec(b, p, d, n.a, t, zname, used, zmax);
        cg__str_add(b, ", ");
        print_rec(b, p, d, n.b, t, zname, used, zmax);
        cg__str_add(b, ")");
        return;
    }
    if (cmp) cg__str_addf(b, "((%s)(", cg__ity_name(t));
    cg__str_add(b, "(");
    print_rec(b, p, d, n.a, t, zname, used, zmax);
    cg__str_add(b, op);
    print_rec(b, p, d, n.b, t, zname, used, zmax);
    if (n.kind == HL_E_AND || n.kind == HL_E_OR) cg__str_add(b, " != 0");
    cg__str_add(b, ")");
    if (cmp) cg__str_add(b, "))");
}

void cg__expr_c(cg_str *b, const hl_expr_pool *p, const cg_dims *d, hl_expr e, cg_ity t,
                const char *zname, int64_t zmax, bool *used)
{
    print_rec(b, p, d, e, t, zname, used, zmax);
}

int64_t cg__expr_profile(const hl_expr_pool *p, const cg_dims *d, hl_expr e)
{
    uint32_t nv = hl_var_count(p);
    int64_t *vals = cg__alloc(nv ? nv : 1, sizeof *vals);
    bool *bound = cg__alloc(nv ? nv : 1, sizeof *bound);
    int64_t out = -1;
    if (vals && bound) {
        for (uint32_t v = 0; v < nv && v < d->nvars; v++)
            if (d->var_dim[v] != LM_NONE) {
                vals[v] = d->dims[d->var_dim[v]].profile;
                bound[v] = true;
            }
        hl_env env = {vals, bound, nv};
        lm_err he = {0};
        if (hl_e_eval(p, e, &env, 0, &out, &he) != HL_OK) out = -1;
    }
    cg__free(vals);
    cg__free(bound);
    return out;
}

/* ---- tidying composed positions ------------------------------------------------------- */

/* A symbolic upper bound of e >= 0 (an expression u with e <= u for every z <= zmax and
 * every dim value), or HL_NONE. */
static hl_expr upper(hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax, int depth)
{
    if (depth > 32) return HL_NONE;
    hl_expr_node n = hl_e_get(p, e);
    switch (n.kind) {
    case HL_E_NUM:
    case HL_E_VAR:
        return e;
    case HL_E_Z:
        return zmax >= 0 && zmax < INT64_MAX ? hl_e_num(p, zmax) : HL_NONE;
    default:
        break;
    }
    cg_range ra = range_rec(p, d, n.a, zmax), rb = range_rec(p, d, n.b, zmax);
    if (ra.wide || rb.wide) return HL_NONE;
    switch (n.kind) {
    case HL_E_MOD:
        if (rb.lo < 1) return HL_NONE;
        if (ra.lo >= 0) {
            /* min(ub(a), b - 1): prefer b - 1, it is what makes (x % d) / d vanish */
            return hl_e_sub(p, n.b, hl_e_num(p, 1));
        }
        return hl_e_sub(p, n.b, hl_e_num(p, 1));
    case HL_E_ADD: {
        if (ra.lo < 0 || rb.lo < 0) return HL_NONE;
        hl_expr a = upper(p, d, n.a, zmax, depth + 1), b = upper(p, d, n.b, zmax, depth + 1);
        return a == HL_NONE || b == HL_NONE ? HL_NONE : hl_e_add(p, a, b);
    }
    case HL_E_MUL: {
        if (ra.lo < 0 || rb.lo < 0) return HL_NONE;
        hl_expr a = upper(p, d, n.a, zmax, depth + 1), b = upper(p, d, n.b, zmax, depth + 1);
        return a == HL_NONE || b == HL_NONE ? HL_NONE : hl_e_mul(p, a, b);
    }
    case HL_E_DIV: {
        if (ra.lo < 0 || rb.lo < 1) return HL_NONE;
        hl_expr a = upper(p, d, n.a, zmax, depth + 1);
        return a == HL_NONE ? HL_NONE : hl_e_div(p, a, n.b);
    }
    default:
        return HL_NONE;
    }
}

/* a < b provable: b - upper(a) folds to a number >= 1 (a >= 0 known). */
static bool below(hl_expr_pool *p, const cg_dims *d, hl_expr a, hl_expr b, int64_t zmax)
{
    hl_expr u = upper(p, d, a, zmax, 0);
    if (u == HL_NONE) return false;
    hl_expr diff = hl_e_sub(p, b, u);
    int64_t v;
    if (diff != HL_NONE && hl_e_is_num(p, diff, &v)) return v >= 1;
    cg_range r = diff == HL_NONE ? WIDE : range_rec(p, d, diff, zmax);
    return !r.wide && r.lo >= 1;
}

static hl_expr tidy_rec(hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax, int depth)
{
    hl_expr_node n = hl_e_get(p, e);
    if (n.kind == HL_E_NUM || n.kind == HL_E_VAR || n.kind == HL_E_Z || depth > 64) return e;
    hl_expr a = tidy_rec(p, d, n.a, zmax, depth + 1), b = tidy_rec(p, d, n.b, zmax, depth + 1);
    if (a == HL_NONE || b == HL_NONE) return HL_NONE;
    if (n.kind == HL_E_DIV || n.kind == HL_E_MOD) {
        cg_range ra = range_rec(p, d, a, zmax), rb = range_rec(p, d, b, zmax);
        if (!ra.wide && !rb.wide && ra.lo >= 0 && rb.lo >= 1 && below(p, d, a, b, zmax))
            return n.kind == HL_E_DIV ? hl_e_num(p, 0) : a; /* 0 <= a < b */
    }
    if (a == n.a && b == n.b) return e;
    return hl_e_bin(p, n.kind, a, b);
}

hl_expr cg__expr_tidy(hl_expr_pool *p, const cg_dims *d, hl_expr e, int64_t zmax)
{
    if (e == HL_NONE) return HL_NONE;
    hl_expr prev = e;
    for (int i = 0; i < 4; i++) { /* a rewrite can expose the next */
        hl_expr t = tidy_rec(p, d, prev, zmax, 0);
        if (t == HL_NONE || t == prev) return t == HL_NONE ? prev : t;
        prev = t;
    }
    return prev;
}
