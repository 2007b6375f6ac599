/* hl_expr_simp.c - the simplifying constructors: every expression they return is canonical.
 *
 * Canonical forms (so that equal values built different ways get one id):
 *   sum      ((t1 + t2) + ...) + c   terms sorted by hl_expr_cmp of their monomial, like
 *                                    terms combined, zero terms dropped, the constant c
 *                                    last and only when nonzero
 *   term     m or m * k              m a monomial, k an integer coefficient not 0 or 1
 *   product  ((f1 * f2) * ...)       factors sorted by hl_expr_cmp, none a sum, product
 *                                    or number (products distribute over sums, so a
 *                                    polynomial has one form)
 *   x / d, x % d                     x is a sum none of whose terms d divides (those are
 *                                    pulled out: (q*d + r) / d = q + r / d and
 *                                    (q*d + r) % d = r % d hold for floor division)
 * In sums the identity d*(x/d) + x%d = x is applied, which folds merged contiguous strides
 * back to z * inner. Range analysis (hl__e_range) drops x / d to 0 and x % d to x when
 * 0 <= x < d is provable. A folded constant or coefficient that overflows int64 makes
 * the result HL_NONE (without marking the pool failed): such a value is no shape. The one
 * exception is multiplying out a product of sums: when a coefficient of the expansion
 * overflows, the sums stay factors instead (see mul). */
#include "core/hl_expr_int.h"

#include <assert.h>

/* Products of sums are multiplied out only while the result stays small: beyond this
 * many terms the sum stays a factor (still canonical, just not expanded), so a product of
 * many sums cannot blow up exponentially. Shapes never come near it. */
#define MAX_EXPANDED_TERMS 16
/* Sums longer than this skip the d*(y/d) + y%d search, which is quadratic. */
#define MAX_DIVMOD_SEARCH_TERMS 32

typedef struct term {
    int64_t k;
    hl_expr m; /* monomial; HL_NONE stands for the constant monomial 1 */
} term;

typedef struct tvec {
    term *t;
    uint32_t n, cap;
    bool oom;
} tvec;

static void tv_push(tvec *v, int64_t k, hl_expr m)
{
    if (v->oom) return;
    void *arr = v->t;
    if (hl__grow(&arr, &v->cap, v->n + 1, sizeof(term))) {
        v->oom = true;
        return;
    }
    v->t = arr;
    v->t[v->n++] = (term){k, m};
}

static void tv_free(tvec *v)
{
    hl__free(v->t);
}

typedef struct evec {
    hl_expr *e;
    uint32_t n, cap;
    bool oom;
} evec;

static void ev_push(evec *v, hl_expr e)
{
    if (v->oom) return;
    void *arr = v->e;
    if (hl__grow(&arr, &v->cap, v->n + 1, sizeof(hl_expr))) {
        v->oom = true;
        return;
    }
    v->e = arr;
    v->e[v->n++] = e;
}

static hl_expr bin(hl_expr_pool *p, int64_t zb, hl_expr_kind k, hl_expr a, hl_expr b);

/* ---- terms and factors ---- */

/* Splits a canonical term into coefficient and monomial. */
static term split_term(const hl_expr_pool *p, hl_expr e)
{
    const hl_expr_node *n = hl__en(p, e);
    if (n->kind == HL_E_NUM) return (term){n->value, HL_NONE};
    if (n->kind == HL_E_MUL && hl__en(p, n->b)->kind == HL_E_NUM)
        return (term){hl__en(p, n->b)->value, n->a};
    return (term){1, e};
}

/* Appends the terms of canonical e (times mult) to v; false on coefficient overflow. */
static bool collect_terms(const hl_expr_pool *p, hl_expr e, int64_t mult, tvec *v)
{
    const hl_expr_node *n = hl__en(p, e);
    if (n->kind == HL_E_ADD)
        return collect_terms(p, n->a, mult, v) && collect_terms(p, n->b, mult, v);
    term t = split_term(p, e);
    int64_t k;
    if (__builtin_mul_overflow(t.k, mult, &k)) return false;
    tv_push(v, k, t.m);
    return true;
}

/* Appends the factors of a canonical monomial (no number inside) to v. */
static void collect_factors(const hl_expr_pool *p, hl_expr m, evec *v)
{
    if (m == HL_NONE) return;
    const hl_expr_node *n = hl__en(p, m);
    if (n->kind == HL_E_MUL) {
        collect_factors(p, n->a, v);
        collect_factors(p, n->b, v);
    } else {
        ev_push(v, m);
    }
}

static void sort_exprs(const hl_expr_pool *p, hl_expr *a, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) { /* insertion sort: lists are short, and stable */
        hl_expr x = a[i];
        uint32_t j = i;
        while (j > 0 && hl_expr_cmp(p, a[j - 1], x) > 0) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

static int term_cmp(const hl_expr_pool *p, const term *x, const term *y)
{
    if (x->m == HL_NONE || y->m == HL_NONE) {
        if (x->m == y->m) return 0;
        return x->m == HL_NONE ? 1 : -1; /* the constant goes last */
    }
    return hl_expr_cmp(p, x->m, y->m);
}

/* Builds a product of sorted factors as a left-nested chain. */
static hl_expr chain(hl_expr_pool *p, hl_expr_kind k, const hl_expr *f, uint32_t n)
{
    hl_expr e = f[0];
    for (uint32_t i = 1; i < n; i++)
        e = hl__e_mk(p, k, e, f[i]);
    return e;
}

static hl_expr term_expr(hl_expr_pool *p, term t)
{
    if (t.m == HL_NONE) return hl_e_num(p, t.k);
    if (t.k == 1) return t.m;
    return hl__e_mk(p, HL_E_MUL, t.m, hl_e_num(p, t.k));
}

/* ---- sums ---- */

static hl_expr mul(hl_expr_pool *p, int64_t zb, hl_expr a, hl_expr b);
static hl_expr add(hl_expr_pool *p, int64_t zb, hl_expr a, hl_expr b);
static hl_expr divmod(hl_expr_pool *p, int64_t zb, hl_expr_kind k, hl_expr a, hl_expr b);

/* Replaces the factor at index skip of the monomial fs by r and multiplies it out. */
static hl_expr mono_replace(hl_expr_pool *p, int64_t zb, const evec *fs, uint32_t skip, hl_expr r)
{
    hl_expr e = r;
    for (uint32_t i = 0; i < fs->n; i++)
        if (i != skip) e = mul(p, zb, e, fs->e[i]);
    return e;
}

static bool term_divides(hl_expr_pool *p, term d, term t, term *q);
static bool is_positive(const hl_expr_pool *p, hl_expr e);

/* The index of the term other than i that equals the canonical term t, or UINT32_MAX. */
static uint32_t find_term(const hl_expr_pool *p, const tvec *v, uint32_t i, hl_expr t)
{
    if (t == HL_NONE || hl__en(p, t)->kind == HL_E_ADD) return UINT32_MAX;
    term pt = split_term(p, t);
    for (uint32_t j = 0; j < v->n; j++)
        if (j != i && v->t[j].m == pt.m && v->t[j].k == pt.k) return j;
    return UINT32_MAX;
}

/* The pairs of term i = k*M*((y/c)%e), whose factor fs[f] is (y/c)%e, looked for from the
 * mod. Such terms are the index of a view that splits z into coordinates and merges them
 * back (with symbolic dims, s*((z/s)%s) + s*s*(z/(s*s)) + z%s is z), and the search from
 * a division factor misses them: y/(c*e) is the canonical (y/c)/e, and a mod has no
 * division factor. Two identities, for c, e > 0:
 *   k*M*((y/c)%e) + k*e*M*(y/(c*e)) = k*M*(y/c)
 *   q*c*((y/c)%e) + q*(y%c)         = q*(y%(c*e))      (k*M = q*c)
 * On success sets *j_out to the partner and *repl to what replaces the pair. */
static bool find_mod_partner(hl_expr_pool *p, int64_t zb, const tvec *v, uint32_t i,
                             const evec *fs, uint32_t f, uint32_t *j_out, hl_expr *repl)
{
    const hl_expr_node fn = *hl__en(p, fs->e[f]), yc = *hl__en(p, fn.a);
    if (!is_positive(p, fn.b) || !is_positive(p, yc.b)) return false;
    hl_expr rest = mul(p, zb, mono_replace(p, zb, fs, f, hl_e_num(p, 1)), hl_e_num(p, v->t[i].k));
    if (rest == HL_NONE || hl__en(p, rest)->kind == HL_E_ADD) return false;
    uint32_t j =
        find_term(p, v, i, mul(p, zb, mul(p, zb, rest, fn.b), divmod(p, zb, HL_E_DIV, fn.a, fn.b)));
    if (j != UINT32_MAX) {
        *j_out = j;
        *repl = mul(p, zb, rest, fn.a);
        return *repl != HL_NONE;
    }
    term q;
    if (hl__en(p, yc.b)->kind == HL_E_ADD ||
        !term_divides(p, split_term(p, yc.b), split_term(p, rest), &q))
        return false;
    hl_expr qe = term_expr(p, q);
    j = find_term(p, v, i, mul(p, zb, qe, divmod(p, zb, HL_E_MOD, yc.a, yc.b)));
    if (j == UINT32_MAX) return false;
    *j_out = j;
    *repl = mul(p, zb, qe, divmod(p, zb, HL_E_MOD, yc.a, mul(p, zb, yc.b, fn.b)));
    return *repl != HL_NONE;
}

/* Looks for a pair of terms k*d*M*(y/d) and k*M*(y%d) in the sorted, combined terms.
 * On success sets *i_out, *j_out to their indices and *repl to k*M*y, which replaces
 * both; false if there is none. The search starts from the division factor, so the mod
 * term is found in its canonical form ((y%(4*s))%4 is y%4). */
static bool find_divmod_pair(hl_expr_pool *p, int64_t zb, const tvec *v, uint32_t *i_out,
                             uint32_t *j_out, hl_expr *repl)
{
    evec fs = {0};
    bool found = false;
    for (uint32_t i = 0; i < v->n && !found; i++) {
        if (v->t[i].m == HL_NONE) continue;
        fs.n = 0;
        collect_factors(p, v->t[i].m, &fs);
        if (fs.oom) { /* not "no pair": the sum would come out less simplified */
            p->failed = true;
            break;
        }
        /* a monomial with a sum among its factors (a product too large or too wide to
         * multiply out) is no shape: searching it would multiply those sums again, at a
         * cost that grows exponentially with the nesting */
        bool has_sum = false;
        for (uint32_t f = 0; f < fs.n; f++)
            has_sum |= hl__en(p, fs.e[f])->kind == HL_E_ADD;
        if (has_sum) continue;
        for (uint32_t f = 0; f < fs.n && !found; f++) {
            const hl_expr_node fn = *hl__en(p, fs.e[f]);
            if (fn.kind == HL_E_MOD && hl__en(p, fn.a)->kind == HL_E_DIV &&
                hl__en(p, fn.b)->kind != HL_E_ADD) {
                found = find_mod_partner(p, zb, v, i, &fs, f, j_out, repl);
                if (found) *i_out = i;
                continue;
            }
            if (fn.kind != HL_E_DIV || hl__en(p, fn.b)->kind == HL_E_ADD) continue;
            /* rest of term i without the factor y/d, then divided by d */
            hl_expr rest =
                mul(p, zb, mono_replace(p, zb, &fs, f, hl_e_num(p, 1)), hl_e_num(p, v->t[i].k));
            if (rest == HL_NONE) break;
            if (hl__en(p, rest)->kind == HL_E_ADD) continue;
            term q;
            if (!term_divides(p, split_term(p, fn.b), split_term(p, rest), &q)) continue;
            hl_expr qe = term_expr(p, q);
            hl_expr partner = mul(p, zb, qe, bin(p, zb, HL_E_MOD, fn.a, fn.b));
            if (partner == HL_NONE) break;
            if (hl__en(p, partner)->kind == HL_E_ADD) continue;
            term pt = split_term(p, partner);
            for (uint32_t j = 0; j < v->n; j++) {
                if (j == i || v->t[j].m != pt.m || v->t[j].k != pt.k) continue;
                *i_out = i;
                *j_out = j;
                *repl = mul(p, zb, qe, fn.a);
                found = *repl != HL_NONE;
                break;
            }
        }
    }
    hl__free(fs.e);
    return found;
}

/* The canonical sum of the terms in v (which it consumes). */
static hl_expr sum_of(hl_expr_pool *p, int64_t zb, tvec *v)
{
    if (v->oom) {
        p->failed = true;
        return HL_NONE;
    }
    /* sort (insertion, stable) and combine like terms */
    for (uint32_t i = 1; i < v->n; i++) {
        term x = v->t[i];
        uint32_t j = i;
        while (j > 0 && term_cmp(p, &v->t[j - 1], &x) > 0) {
            v->t[j] = v->t[j - 1];
            j--;
        }
        v->t[j] = x;
    }
    uint32_t w = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        if (w > 0 && v->t[w - 1].m == v->t[i].m) {
            if (__builtin_add_overflow(v->t[w - 1].k, v->t[i].k, &v->t[w - 1].k))
                return hl__overflow(p);
        } else {
            v->t[w++] = v->t[i];
        }
    }
    v->n = w;
    w = 0;
    for (uint32_t i = 0; i < v->n; i++)
        if (v->t[i].k != 0) v->t[w++] = v->t[i];
    v->n = w;
    /* d*(y/d) + y%d = y: rebuild with the pair replaced, then simplify again (terminates:
     * each round removes one division factor) */
    uint32_t pi, pj;
    hl_expr repl;
    if (v->n >= 2 && v->n <= MAX_DIVMOD_SEARCH_TERMS &&
        find_divmod_pair(p, zb, v, &pi, &pj, &repl)) {
        hl_expr e = repl;
        for (uint32_t i = 0; i < v->n; i++)
            if (i != pi && i != pj) e = add(p, zb, e, term_expr(p, v->t[i]));
        return e;
    }
    if (p->failed) return HL_NONE;
    if (v->n == 0) return hl_e_num(p, 0);
    hl_expr e = term_expr(p, v->t[0]);
    for (uint32_t i = 1; i < v->n; i++)
        e = hl__e_mk(p, HL_E_ADD, e, term_expr(p, v->t[i]));
    return e;
}

static hl_expr add(hl_expr_pool *p, int64_t zb, hl_expr a, hl_expr b)
{
    if (a == HL_NONE || b == HL_NONE) return HL_NONE;
    tvec v = {0};
    if (!collect_terms(p, a, 1, &v) || !collect_terms(p, b, 1, &v)) {
        tv_free(&v);
        return hl__overflow(p);
    }
    hl_expr e = sum_of(p, zb, &v);
    tv_free(&v);
    return e;
}

/* ---- products ---- */

/* Product of two monomials / numbers that are not sums. */
static hl_expr mul_flat(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    term ta = split_term(p, a), tb = split_term(p, b);
    int64_t k;
    if (__builtin_mul_overflow(ta.k, tb.k, &k)) return hl__overflow(p);
    if (k == 0) return hl_e_num(p, 0);
    evec f = {0};
    collect_factors(p, ta.m, &f);
    collect_factors(p, tb.m, &f);
    if (f.oom) {
        hl__free(f.e);
        p->failed = true;
        return HL_NONE;
    }
    hl_expr e;
    if (f.n == 0) {
        e = hl_e_num(p, k);
    } else {
        sort_exprs(p, f.e, f.n);
        /* a refused (too large) monomial must not pass for HL_NONE, the monomial 1 */
        hl_expr m = chain(p, HL_E_MUL, f.e, f.n);
        e = m == HL_NONE ? HL_NONE : term_expr(p, (term){k, m});
    }
    hl__free(f.e);
    return e;
}

static uint32_t term_count(const hl_expr_pool *p, hl_expr e)
{
    const hl_expr_node *n = hl__en(p, e);
    return n->kind == HL_E_ADD ? term_count(p, n->a) + term_count(p, n->b) : 1;
}

static hl_expr mul(hl_expr_pool *p, int64_t zb, hl_expr a, hl_expr b)
{
    if (a == HL_NONE || b == HL_NONE) return HL_NONE;
    bool sa = hl__en(p, a)->kind == HL_E_ADD, sb = hl__en(p, b)->kind == HL_E_ADD;
    if (!sa && !sb) return mul_flat(p, a, b);
    if ((uint64_t)term_count(p, a) * term_count(p, b) > MAX_EXPANDED_TERMS)
        return mul_flat(p, a, b);
    /* distribute: (sum a_i)(sum b_j) = sum a_i b_j */
    tvec ta = {0}, tb = {0}, out = {0};
    bool ok = collect_terms(p, a, 1, &ta) && collect_terms(p, b, 1, &tb);
    hl_expr e = HL_NONE;
    if (ok && !ta.oom && !tb.oom) {
        for (uint32_t i = 0; i < ta.n && ok; i++)
            for (uint32_t j = 0; j < tb.n && ok; j++) {
                hl_expr ea = term_expr(p, ta.t[i]), eb = term_expr(p, tb.t[j]);
                hl_expr prod = mul_flat(p, ea, eb);
                if (prod == HL_NONE)
                    ok = false;
                else
                    ok = collect_terms(p, prod, 1, &out);
            }
        if (ok) e = sum_of(p, zb, &out);
    } else if (ta.oom || tb.oom) {
        p->failed = true;
    }
    tv_free(&ta);
    tv_free(&tb);
    tv_free(&out);
    /* A coefficient of the multiplied-out sum overflowed, though the product itself may
     * not: keep the sum a factor, as for a product too large to expand. (Otherwise a
     * printed unexpanded product, such as -16*(s*9223372036854775807 + ...)*(...), would
     * not parse back.) */
    if (e == HL_NONE && !p->failed) return mul_flat(p, a, b);
    return e;
}

/* ---- division and modulo ---- */

/* If divisor term d divides term t, sets *q to the quotient term and returns true. */
static bool term_divides(hl_expr_pool *p, term d, term t, term *q)
{
    if (d.k == 0 || (d.k == -1 && t.k == INT64_MIN) || t.k % d.k != 0) return false;
    if (d.m == HL_NONE) {
        *q = (term){t.k / d.k, t.m};
        return true;
    }
    if (t.m == HL_NONE) return false;
    evec df = {0}, tf = {0};
    collect_factors(p, d.m, &df);
    collect_factors(p, t.m, &tf);
    bool ok = !df.oom && !tf.oom;
    if (!ok) p->failed = true; /* "does not divide" would be a wrong answer: callers check */
    for (uint32_t i = 0; ok && i < df.n; i++) { /* remove each factor of d from t once */
        uint32_t j = 0;
        while (j < tf.n && tf.e[j] != df.e[i])
            j++;
        if (j == tf.n)
            ok = false;
        else
            tf.e[j] = tf.e[--tf.n];
    }
    if (ok) {
        if (tf.n == 0) {
            *q = (term){t.k / d.k, HL_NONE};
        } else {
            sort_exprs(p, tf.e, tf.n);
            hl_expr m = chain(p, HL_E_MUL, tf.e, tf.n);
            if (m == HL_NONE) /* refused as too large: not the monomial 1 */
                ok = false;
            else
                *q = (term){t.k / d.k, m};
        }
    }
    hl__free(df.e);
    hl__free(tf.e);
    return ok;
}

static bool is_positive(const hl_expr_pool *p, hl_expr e)
{
    hl__range r = hl__e_range(p, e, 0);
    return !r.lo_inf && r.lo > 0;
}

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

static hl_expr divmod(hl_expr_pool *p, int64_t zb, hl_expr_kind k, hl_expr a, hl_expr b)
{
    if (a == HL_NONE || b == HL_NONE) return HL_NONE;
    int64_t va, vb;
    bool na = hl_e_is_num(p, a, &va), nb = hl_e_is_num(p, b, &vb);
    if (nb && vb == 0) return hl__e_mk(p, k, a, b); /* evaluation reports it */
    if (na && nb && va != INT64_MIN && vb != INT64_MIN) {
        int64_t q = floordiv(va, vb);
        if (k == HL_E_DIV) return hl_e_num(p, q);
        if (k == HL_E_MOD) { /* from the C remainder: q * vb itself may overflow */
            int64_t r = va % vb;
            if (r != 0 && ((r < 0) != (vb < 0))) r += vb;
            return hl_e_num(p, r);
        }
        return hl_e_num(p, -floordiv(-va, vb)); /* cdiv */
    }
    if (nb && vb == 1) return k == HL_E_MOD ? hl_e_num(p, 0) : a;
    if (na && va == 0) return a;
    /* pull out the terms of a that b divides */
    if (hl__en(p, b)->kind == HL_E_ADD) return hl__e_mk(p, k, a, b);
    term d = split_term(p, b);
    tvec ta = {0}, quo = {0}, rest = {0};
    if (!collect_terms(p, a, 1, &ta) || ta.oom) {
        tv_free(&ta);
        if (ta.oom) p->failed = true;
        return p->failed ? HL_NONE : hl__overflow(p);
    }
    for (uint32_t i = 0; i < ta.n; i++) {
        term q;
        if (term_divides(p, d, ta.t[i], &q))
            tv_push(&quo, q.k, q.m);
        else
            tv_push(&rest, ta.t[i].k, ta.t[i].m);
    }
    tv_free(&ta);
    if (quo.oom || rest.oom || p->failed) { /* a lost term or factor list would make an
                                               * empty quotient look real */
        tv_free(&quo);
        tv_free(&rest);
        p->failed = true;
        return HL_NONE;
    }
    hl_expr e;
    if (quo.n == 0) { /* nothing to pull out: apply the local rules */
        tv_free(&quo);
        tv_free(&rest);
        hl__range rr = hl__e_range(p, a, zb), rb = hl__e_range(p, b, zb);
        bool small = !rr.lo_inf && rr.lo >= 0 && !rr.hi_inf && !rb.lo_inf && rr.hi < rb.lo;
        const hl_expr_node an = *hl__en(p, a); /* a copy: mul below may grow the pool */
        if (k == HL_E_DIV) {
            if (small) return hl_e_num(p, 0);
            if (an.kind == HL_E_DIV && is_positive(p, an.b) && is_positive(p, b))
                return divmod(p, zb, HL_E_DIV, an.a, mul(p, zb, an.b, b));
            return hl__e_mk(p, k, a, b);
        }
        if (k == HL_E_MOD) {
            if (small) return a;
            term inner;
            if (an.kind == HL_E_MOD && hl__en(p, an.b)->kind != HL_E_ADD &&
                term_divides(p, split_term(p, b), split_term(p, an.b), &inner))
                return divmod(p, zb, HL_E_MOD, an.a, b); /* (y % (k*d)) % d = y % d */
            if (p->failed) return HL_NONE; /* term_divides ran out of memory */
            return hl__e_mk(p, k, a, b);
        }
        bool tiny = !rr.lo_inf && rr.lo > 0 && !rr.hi_inf && !rb.lo_inf && rr.hi <= rb.lo;
        if (tiny) return hl_e_num(p, 1); /* 0 < a <= b */
        return hl__e_mk(p, k, a, b);
    }
    hl_expr q = sum_of(p, zb, &quo);
    hl_expr r = sum_of(p, zb, &rest);
    bool oom = quo.oom || rest.oom; /* sum_of's own allocations */
    tv_free(&quo);
    tv_free(&rest);
    if (oom || q == HL_NONE || r == HL_NONE) {
        if (oom) p->failed = true;
        return HL_NONE; /* sum_of recorded why */
    }
    if (k == HL_E_MOD) return divmod(p, zb, HL_E_MOD, r, b);
    e = add(p, zb, q, divmod(p, zb, k, r, b));
    return e;
}

/* ---- min, max, logic, comparisons ---- */

static hl_expr minmax(hl_expr_pool *p, int64_t zb, hl_expr_kind k, hl_expr a, hl_expr b)
{
    if (a == b) return a;
    hl__range ra = hl__e_range(p, a, zb), rb = hl__e_range(p, b, zb);
    bool a_le_b = !ra.hi_inf && !rb.lo_inf && ra.hi <= rb.lo;
    bool b_le_a = !rb.hi_inf && !ra.lo_inf && rb.hi <= ra.lo;
    if (a_le_b) return k == HL_E_MIN ? a : b;
    if (b_le_a) return k == HL_E_MIN ? b : a;
    if (hl_expr_cmp(p, a, b) > 0) { /* commutative: canonical operand order */
        hl_expr t = a;
        a = b;
        b = t;
    }
    return hl__e_mk(p, k, a, b);
}

static hl_expr compare(hl_expr_pool *p, int64_t zb, hl_expr_kind k, hl_expr a, hl_expr b)
{
    if (a == b) return hl_e_num(p, k == HL_E_GE ? 1 : 0);
    /* decide from the range of a - b when it is one-signed */
    hl_expr diff = add(p, zb, a, mul(p, zb, b, hl_e_num(p, -1)));
    if (diff == HL_NONE) return p->failed ? HL_NONE : hl__e_mk(p, k, a, b); /* overflow */
    hl__range r = hl__e_range(p, diff, zb);
    if (!r.lo_inf && r.lo >= 0) return hl_e_num(p, k == HL_E_GE ? 1 : 0);
    if (!r.hi_inf && r.hi < 0) return hl_e_num(p, k == HL_E_GE ? 0 : 1);
    return hl__e_mk(p, k, a, b);
}

static hl_expr logic(hl_expr_pool *p, hl_expr_kind k, hl_expr a, hl_expr b)
{
    int64_t va, vb;
    bool na = hl_e_is_num(p, a, &va), nb = hl_e_is_num(p, b, &vb);
    if (na && nb) return hl_e_num(p, k == HL_E_AND ? (va && vb) : (va || vb));
    if (nb) { /* put a number first so the cases below see it there */
        hl_expr t = a;
        a = b;
        b = t;
        va = vb;
        na = true;
    }
    if (na) {
        if (k == HL_E_AND && va == 0) return hl_e_num(p, 0);
        if (k == HL_E_OR && va != 0) return hl_e_num(p, 1);
    }
    if (!na && a == b) { /* x & x and x | x are x only as truth values: keep when 0/1 */
        hl__range r = hl__e_range(p, a, 0);
        if (!r.lo_inf && !r.hi_inf && r.lo >= 0 && r.hi <= 1) return a;
    }
    if (hl_expr_cmp(p, a, b) > 0) {
        hl_expr t = a;
        a = b;
        b = t;
    }
    return hl__e_mk(p, k, a, b);
}

/* ---- entry points ---- */

static hl_expr bin(hl_expr_pool *p, int64_t zb, hl_expr_kind k, hl_expr a, hl_expr b)
{
    if (a == HL_NONE || b == HL_NONE) return HL_NONE;
    assert(a < p->n && b < p->n);
    switch (k) {
    case HL_E_ADD:
        return add(p, zb, a, b);
    case HL_E_SUB:
        return add(p, zb, a, mul(p, zb, b, hl_e_num(p, -1)));
    case HL_E_MUL:
        return mul(p, zb, a, b);
    case HL_E_DIV:
    case HL_E_CDIV:
    case HL_E_MOD:
        return divmod(p, zb, k, a, b);
    case HL_E_MIN:
    case HL_E_MAX:
        return minmax(p, zb, k, a, b);
    case HL_E_AND:
    case HL_E_OR:
        return logic(p, k, a, b);
    case HL_E_GE:
    case HL_E_LT:
        return compare(p, zb, k, a, b);
    default:
        assert(!"not a binary kind");
        return HL_NONE;
    }
}

hl_expr hl__e_bin(hl_expr_pool *p, int64_t zb, hl_expr_kind k, hl_expr a, hl_expr b)
{
    return bin(p, zb, k, a, b);
}

hl_expr hl_e_bin(hl_expr_pool *p, hl_expr_kind k, hl_expr a, hl_expr b)
{
    return bin(p, 0, k, a, b);
}
hl_expr hl_e_add(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    return bin(p, 0, HL_E_ADD, a, b);
}
hl_expr hl_e_sub(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    return bin(p, 0, HL_E_SUB, a, b);
}
hl_expr hl_e_mul(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    return bin(p, 0, HL_E_MUL, a, b);
}
hl_expr hl_e_div(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    return bin(p, 0, HL_E_DIV, a, b);
}
hl_expr hl_e_cdiv(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    return bin(p, 0, HL_E_CDIV, a, b);
}
hl_expr hl_e_mod(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    return bin(p, 0, HL_E_MOD, a, b);
}
hl_expr hl_e_min(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    return bin(p, 0, HL_E_MIN, a, b);
}
hl_expr hl_e_max(hl_expr_pool *p, hl_expr a, hl_expr b)
{
    return bin(p, 0, HL_E_MAX, a, b);
}

static hl_expr subst(hl_expr_pool *p, hl_expr e, hl_expr r, int64_t zb)
{
    if (e == HL_NONE) return HL_NONE;
    if (!hl_e_has_z(p, e)) return e;
    const hl_expr_node n = *hl__en(p, e); /* copy: the pool may grow below */
    if (n.kind == HL_E_Z) return r;
    hl_expr a = subst(p, n.a, r, zb);
    hl_expr b = subst(p, n.b, r, zb);
    return bin(p, zb, n.kind, a, b);
}

hl_expr hl_e_subst_z(hl_expr_pool *p, hl_expr e, hl_expr r, int64_t z_bound)
{
    return subst(p, e, r, z_bound > 0 ? z_bound : 0);
}
