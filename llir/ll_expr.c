/* ll_expr.c - expressions: decoding Expression classes into a graph's pool, and
 * evaluating a pool's expressions for the verifier.
 *
 * Decoding reads each class's canonical node (ll_space.c) and builds it with hlir's
 * simplifying constructors, so equal expressions become one id of the graph's pool.
 * (The hlir decoder has the same mapping from the encoding's constructors; the two are
 * to share one public vocabulary once hlir makes it public.)
 *
 * Evaluation has hlir's semantics exactly (hl_e_eval: floor division and modulo, and/or
 * short-circuit, int64 overflow and division by zero are failures; a test compares the
 * two on random expressions), but evaluates every z-free expression of a pool once per
 * setting of the dims, in id order (operands precede their users in a pool), and bounds
 * expressions in z over a range by interval arithmetic that knows when it is exact.
 */
#include "ll_int.h"

/* ==================================================================================
 * Decoding
 * ================================================================================== */

static int xfail(ll__xdec *d, uint32_t cls, const char *what)
{
    lm_loc loc = {.node_id = cls};
    return ll__fail(d->err, LM_EVERIFY, &loc, "graph: class c%u: %s", cls, what);
}

static int none(ll__xdec *d, uint32_t cls)
{
    if (hl_expr_pool_failed(d->p)) return ll__oom(d->err, "graph expressions");
    return xfail(d, cls, "the expression's value overflows int64");
}

int ll__expr(ll__xdec *d, uint32_t cls, hl_expr *out)
{
    const ll_space *s = d->s;
    *out = HL_NONE;
    if (cls >= s->nc || s->ckind[cls] != LL__K_EXPR) return xfail(d, cls, "not an Expression");
    if (d->memo[cls] != HL_NONE) {
        *out = d->memo[cls];
        return LM_OK;
    }
    uint32_t n = s->canon[cls];
    if (n == LM_NONE) return xfail(d, cls, "no node of the Expression can be read");
    uint16_t c = s->code[n];
    hl_expr r = HL_NONE;
    int rc = LM_OK;
    switch (c) {
    case LL__C_MNUM:
        r = hl_e_num(d->p, eg_value_as_i64(s->ser.class_value[ll__kid(s, n, 0)]));
        break;
    case LL__C_MFLOAT:
        r = hl_e_num(d->p, (int64_t)eg_value_as_f64(s->ser.class_value[ll__kid(s, n, 0)]));
        break;
    case LL__C_MITER:
        r = hl_e_z(d->p);
        break;
    case LL__C_MVAR:
        r = hl_e_var(d->p, eg_value_as_string(s->e, s->ser.class_value[ll__kid(s, n, 0)]));
        break;
    default: {
        hl_expr_kind k = ll__code_binary(c);
        if (k == HL_E_KIND_COUNT && c != LL__C_MFLOORTO)
            return xfail(d, cls, "not an Expression node");
        hl_expr a, b;
        if ((rc = ll__expr(d, ll__kid(s, n, 0), &a))) return rc;
        if ((rc = ll__expr(d, ll__kid(s, n, 1), &b))) return rc;
        if (c == LL__C_MFLOORTO) /* floor(a / b) * b */
            r = hl_e_mul(d->p, hl_e_div(d->p, a, b), b);
        else
            r = hl_e_bin(d->p, k, a, b);
    }
    }
    if (r == HL_NONE) return none(d, cls);
    d->memo[cls] = r;
    *out = r;
    return LM_OK;
}

int ll__elist(ll__xdec *d, uint32_t cls, const char *field, uint32_t *n, hl_expr *out)
{
    const ll_space *s = d->s;
    *n = 0;
    for (;;) {
        if (cls >= s->nc || s->ckind[cls] != LL__K_ELIST || s->canon[cls] == LM_NONE) {
            lm_loc loc = {.node_id = cls, .field = field};
            return ll__fail(d->err, LM_EVERIFY, &loc, "graph: class c%u: not a readable EList",
                            cls);
        }
        uint32_t node = s->canon[cls];
        if (s->code[node] == LL__C_ENIL) return LM_OK;
        if (*n == HL_MAX_DIMS) {
            lm_loc loc = {.node_id = cls, .field = field};
            return ll__fail(d->err, LM_EVERIFY, &loc, "graph: class c%u: more than %d entries",
                            cls, HL_MAX_DIMS);
        }
        int rc = ll__expr(d, ll__kid(s, node, 0), &out[(*n)++]);
        if (rc) return rc;
        cls = ll__kid(s, node, 1);
    }
}

/* ==================================================================================
 * Evaluation
 * ================================================================================== */

enum { V_FAIL = 0, V_OK = 1, V_Z = 2 };

/* a op b with hl_e_eval's semantics; false on overflow or division by zero. */
static bool apply(hl_expr_kind k, int64_t a, int64_t b, int64_t *out)
{
    switch (k) {
    case HL_E_ADD:
        return !__builtin_add_overflow(a, b, out);
    case HL_E_SUB:
        return !__builtin_sub_overflow(a, b, out);
    case HL_E_MUL:
        return !__builtin_mul_overflow(a, b, out);
    case HL_E_DIV:
    case HL_E_CDIV:
    case HL_E_MOD: {
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        int64_t q = a / b, r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) {
            q--;
            r += b;
        }
        *out = k == HL_E_DIV ? q : k == HL_E_MOD ? r : q + (r != 0);
        return true;
    }
    case HL_E_MIN:
        *out = a < b ? a : b;
        return true;
    case HL_E_MAX:
        *out = a > b ? a : b;
        return true;
    case HL_E_AND:
        *out = a && b;
        return true;
    case HL_E_OR:
        *out = a || b;
        return true;
    case HL_E_GE:
        *out = a >= b;
        return true;
    case HL_E_LT:
        *out = a < b;
        return true;
    default:
        return false;
    }
}

int ll__eval_init(ll__eval *ev, const hl_expr_pool *p, const int64_t *dimv, lm_err *err)
{
    uint32_t n = hl_expr_count(p);
    ev->p = p;
    ev->dimv = dimv;
    ev->n = n;
    ev->val = ll__alloc(n, sizeof(int64_t));
    ev->ok = ll__alloc(n, 1);
    if (!ev->val || !ev->ok) {
        ll__eval_fini(ev);
        return ll__oom(err, "verify");
    }
    for (uint32_t id = 0; id < n; id++) {
        hl_expr_node nd = hl_e_get(p, id);
        uint8_t st = V_OK;
        int64_t v = 0;
        switch (nd.kind) {
        case HL_E_NUM:
            v = nd.value;
            break;
        case HL_E_VAR:
            v = dimv[nd.var];
            break;
        case HL_E_Z:
            st = V_Z;
            break;
        default: {
            uint8_t sa = ev->ok[nd.a], sb = ev->ok[nd.b];
            if (sa == V_Z || sb == V_Z) {
                st = V_Z;
            } else if (sa == V_OK && nd.kind == HL_E_AND && ev->val[nd.a] == 0) {
                v = 0;
            } else if (sa == V_OK && nd.kind == HL_E_OR && ev->val[nd.a] != 0) {
                v = 1;
            } else if (sa != V_OK || sb != V_OK ||
                       !apply(nd.kind, ev->val[nd.a], ev->val[nd.b], &v)) {
                st = V_FAIL;
            }
        }
        }
        ev->ok[id] = st;
        ev->val[id] = v;
    }
    return LM_OK;
}

void ll__eval_fini(ll__eval *ev)
{
    ll__free(ev->val);
    ll__free(ev->ok);
    ev->val = NULL;
    ev->ok = NULL;
}

bool ll__eval_at(const ll__eval *ev, hl_expr e, int64_t z, int64_t *out)
{
    if (e >= ev->n) return false;
    if (ev->ok[e] == V_OK) {
        *out = ev->val[e];
        return true;
    }
    if (ev->ok[e] == V_FAIL) return false;
    hl_expr_node nd = hl_e_get(ev->p, e);
    if (nd.kind == HL_E_Z) {
        *out = z;
        return true;
    }
    int64_t a, b;
    if (!ll__eval_at(ev, nd.a, z, &a)) return false;
    if (nd.kind == HL_E_AND && !a) return (*out = 0, true);
    if (nd.kind == HL_E_OR && a) return (*out = 1, true);
    if (!ll__eval_at(ev, nd.b, z, &b)) return false;
    return apply(nd.kind, a, b, out);
}

/* ---- interval arithmetic over z in [zl, zu] ---- */

typedef struct ival {
    int64_t lo, hi;
    bool exact; /* lo and hi are both attained by some z */
} ival;

static bool corners(hl_expr_kind k, ival a, ival b, ival *r)
{
    int64_t v[4];
    if (!apply(k, a.lo, b.lo, &v[0]) || !apply(k, a.lo, b.hi, &v[1]) ||
        !apply(k, a.hi, b.lo, &v[2]) || !apply(k, a.hi, b.hi, &v[3]))
        return false;
    r->lo = r->hi = v[0];
    for (int i = 1; i < 4; i++) {
        if (v[i] < r->lo) r->lo = v[i];
        if (v[i] > r->hi) r->hi = v[i];
    }
    return true;
}

static bool range(const ll__eval *ev, hl_expr e, int64_t zl, int64_t zu, ival *r)
{
    if (ev->ok[e] == V_OK) {
        *r = (ival){ev->val[e], ev->val[e], true};
        return true;
    }
    if (ev->ok[e] == V_FAIL) return false;
    hl_expr_node nd = hl_e_get(ev->p, e);
    if (nd.kind == HL_E_Z) {
        *r = (ival){zl, zu, true};
        return true;
    }
    ival a, b;
    if (!range(ev, nd.a, zl, zu, &a) || !range(ev, nd.b, zl, zu, &b)) return false;
    bool za = ev->ok[nd.a] == V_Z, zb = ev->ok[nd.b] == V_Z;
    /* monotone in the one z-dependent operand when the other is a constant */
    bool one = za != zb;
    bool ex = one && (za ? a.exact : b.exact);
    switch (nd.kind) {
    case HL_E_ADD:
    case HL_E_SUB:
    case HL_E_MUL:
    case HL_E_MIN:
    case HL_E_MAX:
        if (!corners(nd.kind, a, b, r)) return false;
        r->exact = ex;
        return true;
    case HL_E_DIV:
    case HL_E_CDIV:
        if (b.lo <= 0 && b.hi >= 0) return false; /* may divide by zero */
        if (!corners(nd.kind, a, b, r)) return false;
        r->exact = ex;
        return true;
    case HL_E_MOD:
        if (b.lo <= 0) return false;
        if (!zb && b.lo == b.hi) {
            int64_t c = b.lo, ql, qh;
            if (!apply(HL_E_DIV, a.lo, c, &ql) || !apply(HL_E_DIV, a.hi, c, &qh)) return false;
            if (ql == qh) { /* within one period, where x % c = x - q*c is monotone */
                *r = (ival){a.lo - ql * c, a.hi - ql * c, a.exact};
                return true;
            }
        }
        *r = (ival){0, b.hi - 1, false};
        return true;
    case HL_E_GE:
    case HL_E_LT: {
        bool t = nd.kind == HL_E_GE ? a.lo >= b.hi : a.hi < b.lo;
        bool f = nd.kind == HL_E_GE ? a.hi < b.lo : a.lo >= b.hi;
        *r = t ? (ival){1, 1, true} : f ? (ival){0, 0, true} : (ival){0, 1, false};
        return true;
    }
    case HL_E_AND:
    case HL_E_OR: {
        bool at = a.lo > 0 || a.hi < 0, af = a.lo == 0 && a.hi == 0;
        bool bt = b.lo > 0 || b.hi < 0, bf = b.lo == 0 && b.hi == 0;
        bool t = nd.kind == HL_E_AND ? at && bt : at || bt;
        bool f = nd.kind == HL_E_AND ? af || bf : af && bf;
        *r = t ? (ival){1, 1, true} : f ? (ival){0, 0, true} : (ival){0, 1, false};
        return true;
    }
    default:
        return false;
    }
}

int ll__eval_range(const ll__eval *ev, hl_expr e, int64_t n, int64_t *lo, int64_t *hi)
{
    if (e >= ev->n || n < 1) return -1;
    ival r;
    if (!range(ev, e, 0, n - 1, &r)) return -1;
    *lo = r.lo;
    *hi = r.hi;
    return r.exact ? 1 : 0;
}

bool ll__eval_scan(const ll__eval *ev, hl_expr e, int64_t n, int64_t *lo, int64_t *hi)
{
    for (int64_t z = 0; z < n; z++) {
        int64_t v;
        if (!ll__eval_at(ev, e, z, &v)) return false;
        if (z == 0 || v < *lo) *lo = v;
        if (z == 0 || v > *hi) *hi = v;
    }
    return n > 0;
}
