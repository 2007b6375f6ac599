/* hl_expr.c - the expression pool: hash-consed storage, leaves, structural order, queries
 * and range analysis. The simplifying constructors live in hl_expr_simp.c, text and
 * evaluation in hl_expr_text.c. */
#include "core/hl_expr_int.h"

#include <assert.h>

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

static uint64_t node_hash(const hl_expr_node *n)
{
    uint64_t h = mix(0, (uint64_t)n->kind);
    h = mix(h, n->var);
    h = mix(h, (uint64_t)n->value);
    h = mix(h, n->a);
    return mix(h, n->b);
}

static bool node_eq(const hl_expr_node *x, const hl_expr_node *y)
{
    return x->kind == y->kind && x->var == y->var && x->value == y->value && x->a == y->a &&
           x->b == y->b;
}

hl_expr_pool *hl_expr_pool_new(void)
{
    hl_expr_pool *p = hl__zalloc(1, sizeof *p);
    if (!p) return NULL;
    p->tcap = 64;
    p->table = hl__alloc(p->tcap, sizeof *p->table);
    if (!p->table) {
        hl__free(p);
        return NULL;
    }
    for (uint32_t i = 0; i < p->tcap; i++)
        p->table[i] = HL_NONE;
    return p;
}

void hl_expr_pool_free(hl_expr_pool *p)
{
    if (!p) return;
    for (uint32_t i = 0; i < p->nvars; i++)
        hl__free(p->vars[i]);
    hl__free(p->vars);
    hl__free(p->nodes);
    hl__free(p->flags);
    hl__free(p->size);
    hl__free(p->table);
    hl__free(p);
}

bool hl_expr_pool_failed(const hl_expr_pool *p)
{
    return p->failed;
}
uint32_t hl_expr_count(const hl_expr_pool *p)
{
    return p->n;
}

static int rehash(hl_expr_pool *p)
{
    uint32_t ncap = p->tcap * 2;
    uint32_t *t = hl__alloc(ncap, sizeof *t);
    if (!t) return -1;
    for (uint32_t i = 0; i < ncap; i++)
        t[i] = HL_NONE;
    for (uint32_t id = 0; id < p->n; id++) {
        uint32_t s = (uint32_t)node_hash(&p->nodes[id]) & (ncap - 1);
        while (t[s] != HL_NONE)
            s = (s + 1) & (ncap - 1);
        t[s] = id;
    }
    hl__free(p->table);
    p->table = t;
    p->tcap = ncap;
    return 0;
}

static hl_expr intern(hl_expr_pool *p, const hl_expr_node *nd)
{
    uint32_t s = (uint32_t)node_hash(nd) & (p->tcap - 1);
    while (p->table[s] != HL_NONE) {
        if (node_eq(&p->nodes[p->table[s]], nd)) return p->table[s];
        s = (s + 1) & (p->tcap - 1);
    }
    uint32_t size = 1;
    if (nd->kind >= HL_E_ADD) {
        uint64_t t = 1 + (uint64_t)p->size[nd->a] + p->size[nd->b];
        if (t > HL__EXPR_MAX_SIZE) { /* too large to be a shape; refuse, pool unchanged */
            p->refused = HL__REFUSED_TOO_LARGE;
            return HL_NONE;
        }
        size = (uint32_t)t;
    }
    if (p->n == HL_NONE - 1) goto oom;
    if ((uint64_t)(p->n + 1) * 2 > p->tcap) { /* keep load <= 1/2; on failure no change */
        if (rehash(p)) goto oom;
        s = (uint32_t)node_hash(nd) & (p->tcap - 1);
        while (p->table[s] != HL_NONE)
            s = (s + 1) & (p->tcap - 1);
    }
    if (p->n >= p->cap) { /* grow the three arrays; on failure the pool is unchanged */
        uint32_t cap = p->cap, cap2 = p->cap, cap3 = p->cap;
        void *nodes = p->nodes, *flags = p->flags, *sizes = p->size;
        if (hl__grow(&nodes, &cap, p->n + 1, sizeof(hl_expr_node))) goto oom;
        p->nodes = nodes; /* bigger block, same contents: harmless if the next fail */
        if (hl__grow(&flags, &cap2, p->n + 1, 1)) goto oom;
        p->flags = flags;
        if (hl__grow(&sizes, &cap3, p->n + 1, sizeof(uint32_t))) goto oom;
        p->size = sizes;
        p->cap = cap < cap2 ? cap : cap2;
        if (cap3 < p->cap) p->cap = cap3;
    }
    hl_expr id = p->n++;
    p->nodes[id] = *nd;
    p->size[id] = size;
    uint8_t f = 0;
    if (nd->kind == HL_E_Z)
        f = EF_Z;
    else if (nd->kind == HL_E_VAR)
        f = EF_VAR;
    else if (nd->kind >= HL_E_ADD)
        f = p->flags[nd->a] | p->flags[nd->b];
    p->flags[id] = f;
    p->table[s] = id;
    return id;
oom:
    p->failed = true;
    return HL_NONE;
}

hl_expr hl__e_mk(hl_expr_pool *p, hl_expr_kind k, hl_expr a, hl_expr b)
{
    if (a == HL_NONE || b == HL_NONE) return HL_NONE;
    hl_expr_node nd = {k, 0, 0, a, b};
    return intern(p, &nd);
}

hl_expr hl_e_num(hl_expr_pool *p, int64_t v)
{
    hl_expr_node nd = {HL_E_NUM, 0, v, 0, 0};
    return intern(p, &nd);
}

hl_expr hl_e_z(hl_expr_pool *p)
{
    hl_expr_node nd = {HL_E_Z, 0, 0, 0, 0};
    return intern(p, &nd);
}

hl_expr hl_expr_copy(hl_expr_pool *dst, const hl_expr_pool *src, hl_expr e, hl_expr *memo,
                     unsigned flags)
{
    if (e == HL_NONE || e >= src->n) return HL_NONE;
    if (memo && memo[e] != HL_NONE) return memo[e];
    const hl_expr_node *n = hl__en(src, e);
    hl_expr r;
    switch (n->kind) {
    case HL_E_NUM:
        r = hl_e_num(dst, n->value);
        break;
    case HL_E_VAR: {
        const char *name = src->vars[n->var];
        bool known = hl_var_find(dst, name) != HL_NONE;
        r = known || !(flags & HL_COPY_KNOWN_VARS) ? hl_e_var(dst, name) : HL_NONE;
        break;
    }
    case HL_E_Z:
        r = hl_e_z(dst);
        break;
    default: { /* operands are older ids: the recursion is bounded by the tree's depth */
        hl_expr a = hl_expr_copy(dst, src, n->a, memo, flags);
        hl_expr b = a == HL_NONE ? HL_NONE : hl_expr_copy(dst, src, n->b, memo, flags);
        r = hl__e_mk(dst, n->kind, a, b); /* canonical in src, so canonical in dst */
        break;
    }
    }
    if (memo && r != HL_NONE) memo[e] = r;
    return r;
}

bool hl_var_name_valid(const char *name)
{
    if (!name || !name[0] || strlen(name) > 63) return false;
    if (strcmp(name, "z") == 0) return false;
    if (name[0] >= '0' && name[0] <= '9') return false;
    for (const char *c = name; *c; c++) {
        char ch = *c;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_';
        if (!ok) return false;
    }
    /* reserved words of the text form */
    return strcmp(name, "min") && strcmp(name, "max") && strcmp(name, "cdiv");
}

uint32_t hl_var_find(const hl_expr_pool *p, const char *name)
{
    for (uint32_t i = 0; i < p->nvars; i++)
        if (strcmp(p->vars[i], name) == 0) return i;
    return HL_NONE;
}

hl_expr hl_e_var(hl_expr_pool *p, const char *name)
{
    if (!hl_var_name_valid(name)) return HL_NONE;
    uint32_t v = hl_var_find(p, name);
    if (v == HL_NONE) {
        char *copy = hl__strdup(name);
        void *arr = p->vars;
        if (!copy || hl__grow(&arr, &p->vcap, p->nvars + 1, sizeof(char *))) {
            hl__free(copy);
            p->failed = true;
            return HL_NONE;
        }
        p->vars = arr;
        v = p->nvars;
        hl_expr_node nd = {HL_E_VAR, v, 0, 0, 0};
        p->vars[p->nvars++] = copy;
        hl_expr e = intern(p, &nd);
        if (e == HL_NONE) { /* undo the name so the pool is as it was */
            p->nvars--;
            hl__free(copy);
        }
        return e;
    }
    hl_expr_node nd = {HL_E_VAR, v, 0, 0, 0};
    return intern(p, &nd);
}

uint32_t hl_var_count(const hl_expr_pool *p)
{
    return p->nvars;
}
const char *hl_var_name(const hl_expr_pool *p, uint32_t var)
{
    assert(var < p->nvars);
    return p->vars[var];
}

hl_expr_node hl_e_get(const hl_expr_pool *p, hl_expr e)
{
    assert(e < p->n);
    return p->nodes[e];
}

bool hl_e_is_num(const hl_expr_pool *p, hl_expr e, int64_t *v)
{
    if (e == HL_NONE || p->nodes[e].kind != HL_E_NUM) return false;
    if (v) *v = p->nodes[e].value;
    return true;
}

bool hl_e_has_z(const hl_expr_pool *p, hl_expr e)
{
    return e < p->n && (p->flags[e] & EF_Z) != 0;
}
bool hl_e_has_var(const hl_expr_pool *p, hl_expr e)
{
    return e < p->n && (p->flags[e] & EF_VAR) != 0;
}

int hl_expr_cmp(const hl_expr_pool *p, hl_expr a, hl_expr b)
{
    while (a != b) {
        const hl_expr_node *x = &p->nodes[a], *y = &p->nodes[b];
        if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
        switch (x->kind) {
        case HL_E_NUM:
            return x->value < y->value ? -1 : (x->value > y->value);
        case HL_E_VAR:
            return strcmp(p->vars[x->var], p->vars[y->var]);
        case HL_E_Z:
            return 0;
        default: {
            int c = hl_expr_cmp(p, x->a, y->a);
            if (c) return c;
            a = x->b; /* tail-iterate on the second operand */
            b = y->b;
        }
        }
    }
    return 0;
}

/* ---- range analysis ---- */

static hl__range rg(int64_t lo, int64_t hi)
{
    return (hl__range){lo, hi, false, false};
}
static hl__range rg_any(void)
{
    return (hl__range){0, 0, true, true};
}

static hl__range rg_add(hl__range x, hl__range y)
{
    hl__range r = {0, 0, x.lo_inf || y.lo_inf, x.hi_inf || y.hi_inf};
    if (!r.lo_inf && __builtin_add_overflow(x.lo, y.lo, &r.lo)) r.lo_inf = true;
    if (!r.hi_inf && __builtin_add_overflow(x.hi, y.hi, &r.hi)) r.hi_inf = true;
    return r;
}

static bool rg_nonneg(hl__range x)
{
    return !x.lo_inf && x.lo >= 0;
}

static hl__range rg_mul(hl__range x, hl__range y)
{
    if (rg_nonneg(x) && rg_nonneg(y)) { /* common case: sizes and indices */
        hl__range r = {0, 0, false, x.hi_inf || y.hi_inf};
        if (__builtin_mul_overflow(x.lo, y.lo, &r.lo)) return (hl__range){0, 0, false, true};
        if (!r.hi_inf && __builtin_mul_overflow(x.hi, y.hi, &r.hi)) r.hi_inf = true;
        if (r.hi_inf && (x.hi == 0 && !x.hi_inf)) r = rg(0, 0);
        if (r.hi_inf && (y.hi == 0 && !y.hi_inf)) r = rg(0, 0);
        return r;
    }
    if (x.lo_inf || x.hi_inf || y.lo_inf || y.hi_inf) return rg_any();
    int64_t c[4];
    if (__builtin_mul_overflow(x.lo, y.lo, &c[0]) || __builtin_mul_overflow(x.lo, y.hi, &c[1]) ||
        __builtin_mul_overflow(x.hi, y.lo, &c[2]) || __builtin_mul_overflow(x.hi, y.hi, &c[3]))
        return rg_any();
    hl__range r = rg(c[0], c[0]);
    for (int i = 1; i < 4; i++) {
        if (c[i] < r.lo) r.lo = c[i];
        if (c[i] > r.hi) r.hi = c[i];
    }
    return r;
}

static int64_t fdiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

hl__range hl__e_range(const hl_expr_pool *p, hl_expr e, int64_t zb)
{
    const hl_expr_node *n = &p->nodes[e];
    switch (n->kind) {
    case HL_E_NUM:
        return rg(n->value, n->value);
    case HL_E_VAR:
        return (hl__range){1, 0, false, true};
    case HL_E_Z:
        return zb > 0 ? rg(0, zb - 1) : (hl__range){0, 0, false, true};
    case HL_E_GE:
    case HL_E_LT:
    case HL_E_AND:
    case HL_E_OR:
        return rg(0, 1);
    default:
        break;
    }
    hl__range x = hl__e_range(p, n->a, zb), y = hl__e_range(p, n->b, zb);
    switch (n->kind) {
    case HL_E_ADD:
        return rg_add(x, y);
    case HL_E_SUB: {
        hl__range ny = {0, 0, y.hi_inf, y.lo_inf};
        if (!y.hi_inf) {
            if (y.hi == INT64_MIN) return rg_any();
            ny.lo = -y.hi;
        }
        if (!y.lo_inf) {
            if (y.lo == INT64_MIN) return rg_any();
            ny.hi = -y.lo;
        }
        return rg_add(x, ny);
    }
    case HL_E_MUL:
        return rg_mul(x, y);
    case HL_E_DIV:
    case HL_E_CDIV:
        if (rg_nonneg(x) && !y.lo_inf && y.lo > 0) {
            hl__range r = {fdiv(x.lo, y.hi_inf ? INT64_MAX : y.hi), 0, false, x.hi_inf};
            if (!x.hi_inf) r.hi = n->kind == HL_E_DIV ? fdiv(x.hi, y.lo) : -fdiv(-x.hi, y.lo);
            if (n->kind == HL_E_CDIV && y.hi_inf)
                r.lo = x.lo > 0 ? 1 : 0;
            else if (n->kind == HL_E_CDIV)
                r.lo = -fdiv(-x.lo, y.hi);
            return r;
        }
        return rg_any();
    case HL_E_MOD:
        if (!y.lo_inf && y.lo > 0) {
            hl__range r = {0, 0, false, y.hi_inf};
            if (!y.hi_inf) r.hi = y.hi - 1;
            if (rg_nonneg(x) && !x.hi_inf && (y.hi_inf || x.hi < r.hi || r.hi_inf)) {
                r.hi = x.hi;
                r.hi_inf = false;
            }
            return r;
        }
        return rg_any();
    case HL_E_MIN: {
        hl__range r;
        r.lo_inf = x.lo_inf || y.lo_inf;
        r.lo = r.lo_inf ? 0 : (x.lo < y.lo ? x.lo : y.lo);
        r.hi_inf = x.hi_inf && y.hi_inf;
        r.hi = x.hi_inf ? y.hi : y.hi_inf ? x.hi : (x.hi < y.hi ? x.hi : y.hi);
        return r;
    }
    case HL_E_MAX: {
        hl__range r;
        r.lo_inf = x.lo_inf && y.lo_inf;
        r.lo = x.lo_inf ? y.lo : y.lo_inf ? x.lo : (x.lo > y.lo ? x.lo : y.lo);
        r.hi_inf = x.hi_inf || y.hi_inf;
        r.hi = r.hi_inf ? 0 : (x.hi > y.hi ? x.hi : y.hi);
        return r;
    }
    default:
        return rg_any();
    }
}

/* ---- invariant checker ---- */

/* The factors of a product chain / terms of a sum chain are sorted when each right
 * operand is not below the previous one (the constant, last, is exempt). */
static bool chain_sorted(const hl_expr_pool *p, hl_expr e, hl_expr_kind k)
{
    const hl_expr_node *n = &p->nodes[e];
    if (n->kind != k) return true;
    hl_expr right = n->b;
    if (p->nodes[right].kind == HL_E_NUM) { /* the constant (coefficient) goes last */
        if (p->nodes[n->a].kind == k) return chain_sorted(p, n->a, k);
        return true;
    }
    hl_expr left = n->a;
    if (p->nodes[left].kind == k) left = p->nodes[left].b;
    if (k == HL_E_ADD) { /* compare monomials: strip coefficients */
        if (p->nodes[left].kind == HL_E_MUL && p->nodes[p->nodes[left].b].kind == HL_E_NUM)
            left = p->nodes[left].a;
        if (p->nodes[right].kind == HL_E_MUL && p->nodes[p->nodes[right].b].kind == HL_E_NUM)
            right = p->nodes[right].a;
    }
    if (p->nodes[left].kind != HL_E_NUM && hl_expr_cmp(p, left, right) > 0) return false;
    return chain_sorted(p, n->a, k);
}

hl_status hl_expr_pool_check(const hl_expr_pool *p, lm_err *err)
{
    for (hl_expr id = 0; id < p->n; id++) {
        const hl_expr_node *n = &p->nodes[id];
        if ((unsigned)n->kind >= HL_E_KIND_COUNT)
            return hl__fail(err, HL_ERR_ARG, NULL, "expr %u: bad kind %d", id, (int)n->kind);
        uint8_t f = 0;
        if (n->kind == HL_E_Z)
            f = EF_Z;
        else if (n->kind == HL_E_VAR) {
            if (n->var >= p->nvars)
                return hl__fail(err, HL_ERR_ARG, NULL, "expr %u: unknown variable", id);
            f = EF_VAR;
        } else if (n->kind >= HL_E_ADD) {
            if (n->a >= id || n->b >= id)
                return hl__fail(err, HL_ERR_ARG, NULL, "expr %u: operand after its user", id);
            f = p->flags[n->a] | p->flags[n->b];
        }
        uint64_t want_size = n->kind >= HL_E_ADD ? 1 + (uint64_t)p->size[n->a] + p->size[n->b] : 1;
        if (p->size[id] != want_size || want_size > HL__EXPR_MAX_SIZE)
            return hl__fail(err, HL_ERR_ARG, NULL, "expr %u: tree size %u, should be %llu", id,
                            p->size[id], (unsigned long long)want_size);
        if (p->flags[id] != f)
            return hl__fail(err, HL_ERR_ARG, NULL, "expr %u: flags %u, should be %u", id,
                            p->flags[id], f);
        /* the table finds id, and only id holds this content */
        uint32_t s = (uint32_t)node_hash(n) & (p->tcap - 1);
        while (p->table[s] != HL_NONE && !node_eq(&p->nodes[p->table[s]], n))
            s = (s + 1) & (p->tcap - 1);
        if (p->table[s] != id)
            return hl__fail(err, HL_ERR_ARG, NULL,
                            "expr %u: the table finds %u for its content (duplicate or lost)", id,
                            p->table[s]);
        if ((n->kind == HL_E_ADD || n->kind == HL_E_MUL) && !chain_sorted(p, id, n->kind))
            return hl__fail(err, HL_ERR_ARG, NULL, "expr %u: %s operands out of order", id,
                            n->kind == HL_E_ADD ? "sum" : "product");
    }
    return HL_OK;
}
