/* cg_val.c - a region (or a standalone kernel) as a graph of values.
 *
 * Evaluating a region means evaluating its root at every output element z. Composing
 * views by substitution turns that into values at symbolic positions: a consumer
 * evaluated at position pos reads input i at hl_view_index(view_i)[z := pos], and the
 * producer (if computed in the region) is evaluated at that position. The leaves are
 * loads of stored tensors and iotas at positions, and constants; reductions open a loop.
 *
 * Values are hash-consed by content, so a DAG (a producer read by two consumers at the
 * same position, softmax's exp read by the sum and by the output) is evaluated once per
 * element, and a reduction at one position is computed once.
 *
 * Scopes and hoisting. A value lives in the outermost scope whose variable it depends on
 * (cg_int.h, cg_scope). A leaf's position in a loop's variable q that does not depend on
 * the loop's counter moves to the parent (see hoist()); an op lives in the deepest scope
 * of its operands. With a row scope above the element scope (rows of L elements), a
 * reduction whose position depends only on the row lands in the row scope: this is what
 * the row template needs, and the test the brief states (subst(pos, (z/L)*L) == pos) is
 * the element scope's hoisting test.
 *
 * Aligned reductions: with share_elem, a row-scope reduction at position z (the row
 * itself) over the last axis of length L reads q = row*L + k, the same index space as the
 * output's elements; its body is then built in the element scope itself, so a load the
 * reduction and the output both need is one value (the row template keeps it in
 * registers between the loops).
 *
 * Float values are f32 in registers whatever their storage dtype (a region rounds once,
 * at the store: docs/llir.md); a Cast is the one interior op that rounds (cg_emit.c).
 */
#include "cg_int.h"

#include <math.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static const hl_expr_pool *llpool(const cg_vg *vg)
{
    return ll_graph_exprs(vg->g);
}

hl_expr cg__x(cg_vg *vg, hl_expr e)
{
    return hl_expr_copy(vg->p, llpool(vg), e, vg->memo, 0);
}

cg_rty cg__rty_of(hl_dtype t)
{
    switch (t) {
    case HL_INT:
        return CG_R_I32;
    case HL_I64:
        return CG_R_I64;
    case HL_BOOL:
        return CG_R_BOOL;
    default:
        return CG_R_F32;
    }
}

const char *cg__rty_c(cg_rty r)
{
    switch (r) {
    case CG_R_I32:
        return "int";
    case CG_R_I64:
        return "long long";
    case CG_R_BOOL:
        return "int";
    default:
        return "float";
    }
}

static int fail(cg_vg *vg, int code, const char *what)
{
    return cg__fail(vg->err, code, cg__at(vg->err_node), "%s", what);
}

static int oom(cg_vg *vg)
{
    if (hl_expr_pool_failed(vg->p)) return fail(vg, LM_ENOMEM, "out of memory");
    return fail(vg, LM_EUNSUPPORTED,
                "an index expression overflows int64 or grows too large; no kernel "
                "template can index this view");
}

bool cg__pos_unit(hl_expr_pool *p, hl_expr e, hl_expr L)
{
    hl_expr z = hl_e_z(p);
    hl_expr rs = hl_e_mul(p, hl_e_div(p, z, L), L);
    hl_expr a = hl_e_subst_z(p, e, rs, 0);
    hl_expr t = hl_e_add(p, a, hl_e_mod(p, z, L));
    return t != HL_NONE && t == e;
}

/* ---- scopes -------------------------------------------------------------------------- */

static uint32_t new_scope(cg_vg *vg, uint32_t parent, hl_expr pos, hl_expr len, hl_expr inner,
                          int64_t zmax)
{
    if (!cg__grow((void **)&vg->s, &vg->scap, vg->ns + 1, sizeof *vg->s)) {
        fail(vg, LM_ENOMEM, "out of memory");
        return LM_NONE;
    }
    hl_expr_pool *p = vg->p;
    hl_expr z = hl_e_z(p);
    hl_expr ri = hl_e_mul(p, len, inner);
    cg_scope *s = &vg->s[vg->ns];
    memset(s, 0, sizeof *s);
    s->parent = parent;
    s->depth = parent == LM_NONE ? 0 : vg->s[parent].depth + 1;
    s->pos = pos;
    s->len = len;
    s->inner = inner;
    s->zmax = zmax;
    s->red = LM_NONE;
    if (parent != LM_NONE) {
        s->q0 = hl_e_add(p, hl_e_mul(p, hl_e_div(p, z, inner), ri), hl_e_mod(p, z, inner));
        s->pq = hl_e_add(p, hl_e_mul(p, hl_e_div(p, z, ri), inner), hl_e_mod(p, z, inner));
        if (s->q0 == HL_NONE || s->pq == HL_NONE) return LM_NONE;
    }
    return vg->ns++;
}

/* Moves position e of a leaf in scope *sc outwards while it does not depend on the loop
 * counter. A loop that may run zero times keeps its leaves (hoisting them would read
 * positions the reference never reads). */
static hl_expr hoist(cg_vg *vg, uint32_t *sc, hl_expr e)
{
    hl_expr_pool *p = vg->p;
    while (e != HL_NONE && vg->s[*sc].parent != LM_NONE) {
        const cg_scope *s = &vg->s[*sc];
        cg_range lr = cg__expr_range(p, vg->d, s->len, 0);
        if (lr.wide || lr.lo < 1) break;
        hl_expr ek0 = hl_e_subst_z(p, e, s->q0, 0);
        if (ek0 == HL_NONE) return HL_NONE;
        hl_expr back = hl_e_subst_z(p, ek0, s->pq, 0);
        if (back == HL_NONE) return HL_NONE;
        if (back != e) break;
        uint32_t parent = s->parent;
        int64_t zb = vg->s[parent].zmax;
        e = hl_e_subst_z(p, ek0, s->pos, zb >= 0 && zb < INT64_MAX ? zb + 1 : 0);
        e = cg__expr_tidy(p, vg->d, e, zb);
        *sc = parent;
    }
    return e;
}

/* ---- values -------------------------------------------------------------------------- */

static bool same(const cg_val *a, const cg_val *b)
{
    if (a->kind != b->kind || a->dt != b->dt || a->scope != b->scope) return false;
    switch (a->kind) {
    case CG_V_CONST: {
        uint32_t x, y;
        memcpy(&x, &a->c, 4);
        memcpy(&y, &b->c, 4);
        return x == y;
    }
    case CG_V_IOTA:
    case CG_V_LOAD:
        return a->node == b->node && a->pos == b->pos;
    case CG_V_REDUCE:
        return a->node == b->node && a->pos == b->pos && a->op == b->op;
    case CG_V_OP:
        if (a->op != b->op || a->from != b->from || a->na != b->na) return false;
        for (uint32_t i = 0; i < a->na; i++)
            if (a->a[i] != b->a[i]) return false;
        return true;
    }
    return false;
}

/* The content hash of *v: the fields same() compares, and no others. */
static uint64_t val_hash(const cg_val *v)
{
    uint64_t w[4 + HL_MAX_INPUTS];
    uint32_t n = 0;
    w[n++] = (uint64_t)v->kind | (uint64_t)v->dt << 8 | (uint64_t)v->scope << 32;
    switch (v->kind) {
    case CG_V_CONST: {
        uint32_t x;
        memcpy(&x, &v->c, 4);
        w[n++] = x;
        break;
    }
    case CG_V_IOTA:
    case CG_V_LOAD:
        w[n++] = (uint64_t)v->node | (uint64_t)v->pos << 32;
        break;
    case CG_V_REDUCE:
        w[n++] = (uint64_t)v->node | (uint64_t)v->pos << 32;
        w[n++] = (uint64_t)v->op;
        break;
    case CG_V_OP:
        w[n++] = (uint64_t)v->op | (uint64_t)v->from << 16 | (uint64_t)v->na << 32;
        for (uint32_t i = 0; i < v->na && i < HL_MAX_INPUTS; i++)
            w[n++] = v->a[i];
        break;
    }
    return XXH3_64bits(w, n * sizeof *w);
}

/* The slot of the table holding a value equal to *v, or the empty slot where it goes.
 * The table is never empty here (hcap > 0). */
static uint32_t slot_of(const cg_vg *vg, const cg_val *v)
{
    uint32_t mask = vg->hcap - 1;
    uint32_t h = (uint32_t)val_hash(v) & mask;
    while (vg->ht[h] != LM_NONE && !same(&vg->v[vg->ht[h]], v))
        h = (h + 1) & mask;
    return h;
}

/* The id of a value equal to *v, or LM_NONE. */
static uint32_t find(const cg_vg *vg, const cg_val *v)
{
    return vg->hcap ? vg->ht[slot_of(vg, v)] : LM_NONE;
}

/* Doubles the table (kept at most half full) and places every value again; false on
 * OOM (the table is then as it was). */
static bool rehash(cg_vg *vg)
{
    uint32_t cap = vg->hcap ? vg->hcap * 2 : 64;
    if (cap < vg->hcap) return false;
    uint32_t *ht = cg__alloc(cap, sizeof *ht);
    if (!ht) return false;
    memset(ht, 0xff, (size_t)cap * sizeof *ht); /* LM_NONE */
    cg__free(vg->ht);
    vg->ht = ht;
    vg->hcap = cap;
    for (uint32_t i = 0; i < vg->n; i++)
        vg->ht[slot_of(vg, &vg->v[i])] = i;
    return true;
}

/* The id of a value equal to *v, adding it when new; LM_NONE on OOM (error set). Ids are
 * in creation order: the table only finds them. */
static uint32_t intern(cg_vg *vg, const cg_val *v)
{
    uint32_t id = find(vg, v);
    if (id != LM_NONE) return id;
    if ((vg->n + 1 > vg->hcap / 2 && !rehash(vg)) ||
        !cg__grow((void **)&vg->v, &vg->cap, vg->n + 1, sizeof *vg->v)) {
        fail(vg, LM_ENOMEM, "out of memory");
        return LM_NONE;
    }
    vg->v[vg->n] = *v;
    vg->ht[slot_of(vg, v)] = vg->n;
    return vg->n++;
}

static void val_init(cg_val *v, cg_vkind k, hl_dtype dt)
{
    memset(v, 0, sizeof *v);
    v->kind = k;
    v->dt = dt;
    v->rt = cg__rty_of(dt);
    v->from = dt;
    v->node = LM_NONE;
    v->pos = HL_NONE;
    v->iota = HL_NONE;
    v->body = LM_NONE;
    v->body_scope = LM_NONE;
}

static uint32_t load(cg_vg *vg, uint32_t top, hl_expr pos, uint32_t scope)
{
    if (pos == HL_NONE) {
        oom(vg);
        return LM_NONE;
    }
    const ll_node *t = ll_graph_node(vg->g, top);
    if (t->kind == LL_OUTPUT) {
        cg__fail(vg->err, LM_EVERIFY, cg__at(vg->err_node), "reads graph output node %%%u", top);
        return LM_NONE;
    }
    uint32_t sc = scope;
    hl_expr e = hoist(vg, &sc, pos);
    if (e == HL_NONE) {
        oom(vg);
        return LM_NONE;
    }
    cg_val v;
    val_init(&v, CG_V_LOAD, t->dtype);
    v.node = top;
    v.pos = e;
    v.scope = sc;
    return intern(vg, &v);
}

static hl_expr view_index(cg_vg *vg, const hl_view *lv)
{
    hl_view v;
    v.ndim = lv->ndim;
    for (uint32_t i = 0; i < lv->ndim; i++) {
        v.dims[i] = cg__x(vg, lv->dims[i]);
        v.strides[i] = cg__x(vg, lv->strides[i]);
        if (v.dims[i] == HL_NONE || v.strides[i] == HL_NONE) return HL_NONE;
    }
    return hl_view_index(vg->p, &v);
}

/* Building a value is a post-order walk of the region from its root: a node's value is
 * made after its inputs' values. The walk keeps its own stack of frames (a chain of
 * thousands of fused nodes is as deep), and does every step in the order a recursive
 * walk would: input i's position is composed only after input i-1 is built, so the
 * values, scopes and expressions come out in the same creation order. */
typedef struct bframe {
    uint32_t nid;          /* the node being built */
    uint32_t nin, i;       /* inputs to build, and the next one */
    hl_expr pos;           /* where the inputs are read (their consumer's position) */
    uint32_t scope;        /* the scope the inputs are read in */
    bool top;              /* the inputs are stored (a top-level kernel) */
    cg_val v;              /* the value; a reduction's body goes to v.body */
    hl_expr kpos;          /* the node's own position and scope (cg_built), when not top */
    uint32_t kscope;
    bool key;
} bframe;

/* A region node built at a position in a scope (its consumers' inputs are not stored):
 * building it again gives the same value and changes nothing, so a producer read twice
 * (a DAG, x * (x > 0)) is walked once, not once per path to it. */
typedef struct cg_built {
    uint32_t nid, scope;
    hl_expr pos;
    uint32_t id; /* LM_NONE: an empty slot */
} cg_built;

static uint32_t built_slot(const cg_vg *vg, uint32_t nid, hl_expr pos, uint32_t scope)
{
    uint64_t w[2] = {(uint64_t)nid | (uint64_t)scope << 32, (uint64_t)pos};
    uint32_t mask = vg->bcap - 1, h = (uint32_t)XXH3_64bits(w, sizeof w) & mask;
    while (vg->bt[h].id != LM_NONE &&
           (vg->bt[h].nid != nid || vg->bt[h].pos != pos || vg->bt[h].scope != scope))
        h = (h + 1) & mask;
    return h;
}

/* The value of region node nid built at pos in scope, or LM_NONE. */
static uint32_t built_find(const cg_vg *vg, uint32_t nid, hl_expr pos, uint32_t scope)
{
    return vg->bcap ? vg->bt[built_slot(vg, nid, pos, scope)].id : LM_NONE;
}

/* Records that region node nid at pos in scope is value id; false on OOM. */
static bool built_add(cg_vg *vg, uint32_t nid, hl_expr pos, uint32_t scope, uint32_t id)
{
    if (vg->bn + 1 > vg->bcap / 2) {
        uint32_t cap = vg->bcap ? vg->bcap * 2 : 64, old = vg->bcap;
        if (cap < old) return false;
        cg_built *bt = cg__alloc(cap, sizeof *bt), *ob = vg->bt;
        if (!bt) return false;
        for (uint32_t i = 0; i < cap; i++)
            bt[i].id = LM_NONE;
        vg->bt = bt;
        vg->bcap = cap;
        for (uint32_t i = 0; i < old; i++)
            if (ob[i].id != LM_NONE) vg->bt[built_slot(vg, ob[i].nid, ob[i].pos, ob[i].scope)] = ob[i];
        cg__free(ob);
    }
    uint32_t h = built_slot(vg, nid, pos, scope);
    if (vg->bt[h].id == LM_NONE) vg->bn++;
    vg->bt[h] = (cg_built){.nid = nid, .scope = scope, .pos = pos, .id = id};
    return true;
}

static uint32_t build_node(cg_vg *vg, uint32_t nid, hl_expr pos, uint32_t scope, bool top);

/* Input i of node nid (top: a top-level kernel whose inputs are stored) at position pos:
 * a load's id (*id), or the region node to build (*src) at position *ip (*id LM_NONE).
 * false on error (set). */
static bool input_at(cg_vg *vg, uint32_t nid, uint32_t i, hl_expr pos, uint32_t scope, bool top,
                     uint32_t *id, uint32_t *src, hl_expr *ip)
{
    const ll_node *n = ll_graph_node(vg->g, nid);
    hl_expr vi = view_index(vg, &n->prim.in[i].view);
    if (vi == HL_NONE) {
        oom(vg);
        return false;
    }
    int64_t zb = vg->s[scope].zmax;
    hl_expr e = hl_e_subst_z(vg->p, vi, pos, zb >= 0 && zb < INT64_MAX ? zb + 1 : 0);
    e = cg__expr_tidy(vg->p, vg->d, e, zb);
    uint32_t in = n->in[i];
    const ll_node *s = ll_graph_node(vg->g, in);
    *id = *src = LM_NONE;
    *ip = e;
    if (top || s->region == LM_NONE)
        *id = load(vg, in, e, scope);
    else if (s->kind == LL_LOAD)
        *id = load(vg, s->in[0], e, scope);
    else {
        *src = in;
        return true;
    }
    return *id != LM_NONE;
}

/* Input i of node nid (top: a top-level kernel whose inputs are stored) at position pos. */
static uint32_t build_input(cg_vg *vg, uint32_t nid, uint32_t i, hl_expr pos, uint32_t scope,
                            bool top)
{
    uint32_t id, src;
    hl_expr ip;
    if (!input_at(vg, nid, i, pos, scope, top, &id, &src, &ip)) return LM_NONE;
    return src == LM_NONE ? id : build_node(vg, src, ip, scope, false);
}

static uint32_t deepest(const cg_vg *vg, const uint32_t *ops, uint32_t n)
{
    uint32_t best = 0, depth = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = vg->v[ops[i]].scope;
        if (vg->s[s].depth >= depth) {
            depth = vg->s[s].depth;
            best = s;
        }
    }
    return best;
}

/* Starts a reduction of LLIR node nid at position pos: its id (*id) when it is built
 * already, else its frame *f, whose one input (the body) is read at z in a new loop
 * scope (or the element scope, for an aligned row reduction). false on error (set). */
static bool begin_reduce(cg_vg *vg, uint32_t nid, hl_expr pos, uint32_t scope, bframe *f,
                         uint32_t *id)
{
    const ll_node *n = ll_graph_node(vg->g, nid);
    const hl_view *lv = &n->prim.in[0].view;
    uint32_t axis = n->prim.axis;
    if (axis >= lv->ndim) {
        cg__fail(vg->err, LM_EVERIFY, cg__at(nid), "reduction axis %u outside its input's %u dims", axis,
                 lv->ndim);
        return false;
    }
    hl_expr_pool *p = vg->p;
    hl_expr len = cg__x(vg, lv->dims[axis]);
    hl_expr inner = hl_e_num(p, 1), numel = hl_e_num(p, 1);
    for (uint32_t i = 0; i < lv->ndim; i++) {
        hl_expr di = cg__x(vg, lv->dims[i]);
        numel = hl_e_mul(p, numel, di);
        if (i > axis) inner = hl_e_mul(p, inner, di);
    }
    if (len == HL_NONE || inner == HL_NONE || numel == HL_NONE) {
        oom(vg);
        return false;
    }
    uint32_t sc = scope;
    hl_expr e = hoist(vg, &sc, pos);
    if (e == HL_NONE) {
        oom(vg);
        return false;
    }
    cg_val *v = &f->v;
    val_init(v, CG_V_REDUCE, n->prim.dtype);
    v->op = n->prim.op;
    v->node = nid;
    v->pos = e;
    v->scope = sc;
    *id = find(vg, v);
    if (*id != LM_NONE) return true;
    uint32_t body_scope;
    hl_expr one = hl_e_num(p, 1), z = hl_e_z(p);
    if (vg->share_elem && vg->row != LM_NONE && sc == vg->row && e == z && len == vg->L &&
        inner == one) {
        body_scope = vg->elem;
    } else {
        int64_t m = cg__expr_max(p, vg->d, numel, 0);
        body_scope = new_scope(vg, sc, e, len, inner, m == INT64_MAX ? INT64_MAX : m - 1);
        if (body_scope == LM_NONE) {
            oom(vg);
            return false;
        }
    }
    v->body_scope = body_scope;
    f->nid = nid;
    f->nin = 1;
    f->i = 0;
    f->pos = z;
    f->scope = body_scope;
    f->top = n->region == LM_NONE;
    return true;
}

/* Starts LLIR node nid at position pos: its id (*id) when it needs no input built (a
 * constant, an iota, a reduction built already), else its frame *f. false on error. */
static bool begin_node(cg_vg *vg, uint32_t nid, hl_expr pos, uint32_t scope, bool top, bframe *f,
                       uint32_t *id)
{
    const ll_node *n = ll_graph_node(vg->g, nid);
    const hl_node *pr = &n->prim;
    cg_val *v = &f->v;
    *id = LM_NONE;
    if (hl_op_is_elementwise(pr->op)) {
        /* an elementwise op (hl_op_is_elementwise): one value of its inputs */
        uint32_t ar = hl_op_arity(pr->op);
        if (n->n_in < ar || pr->n_in < ar) {
            cg__fail(vg->err, LM_EVERIFY, cg__at(nid), "%s with %u inputs", hl_op_name(pr->op), n->n_in);
            return false;
        }
        val_init(v, CG_V_OP, pr->dtype);
        v->op = pr->op;
        v->na = ar;
        f->nid = nid;
        f->nin = ar;
        f->i = 0;
        f->pos = pos;
        f->scope = scope;
        f->top = top;
        return true;
    }
    cg_val c;
    switch (pr->op) {
    case HL_OP_CONSTANT:
        val_init(&c, CG_V_CONST, HL_F32);
        c.c = pr->constant;
        c.scope = 0;
        *id = intern(vg, &c);
        return *id != LM_NONE;
    case HL_OP_IOTA: {
        uint32_t sc = scope;
        hl_expr e = hoist(vg, &sc, pos);
        hl_expr ie = cg__x(vg, pr->iota_expr);
        hl_expr iv = (e == HL_NONE || ie == HL_NONE) ? HL_NONE : hl_e_subst_z(vg->p, ie, e, 0);
        if (iv == HL_NONE) {
            oom(vg);
            return false;
        }
        val_init(&c, CG_V_IOTA, HL_INT);
        c.node = nid;
        c.pos = e;
        c.iota = iv;
        c.scope = sc;
        *id = intern(vg, &c);
        return *id != LM_NONE;
    }
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        if (pr->dtype == HL_BOOL) {
            cg__fail(vg->err, LM_EUNSUPPORTED, cg__at(nid), "%s of bool", hl_op_name(pr->op));
            return false;
        }
        return begin_reduce(vg, nid, pos, scope, f, id);
    default:
        cg__fail(vg->err, LM_EUNSUPPORTED, cg__at(nid),
                 "%s cannot be evaluated inside a fused region (no template covers it); "
                 "fix: store it with its own kernel",
                 hl_op_name(pr->op));
        return false;
    }
}

/* The value of frame f, whose inputs are built. */
static uint32_t finish_node(cg_vg *vg, bframe *f)
{
    cg_val *v = &f->v;
    if (v->kind == CG_V_OP) {
        v->from = vg->v[v->a[0]].dt;
        v->scope = deepest(vg, v->a, v->na);
        return intern(vg, v);
    }
    uint32_t id = intern(vg, v);
    if (id != LM_NONE && v->body_scope != vg->elem) vg->s[v->body_scope].red = id;
    return id;
}

/* LLIR node nid (top: a top-level kernel whose inputs are stored) at position pos, walked
 * with an explicit stack (see bframe). */
static uint32_t build_node(cg_vg *vg, uint32_t nid, hl_expr pos, uint32_t scope, bool top)
{
    bframe *st = NULL;
    uint32_t n = 0, cap = 0, id = LM_NONE;
    if (!cg__grow((void **)&st, &cap, 1, sizeof *st)) {
        fail(vg, LM_ENOMEM, "out of memory");
        return LM_NONE;
    }
    if (!begin_node(vg, nid, pos, scope, top, &st[0], &id)) goto fail;
    st[0].key = false;
    if (id != LM_NONE) goto done;
    n = 1;
    while (n > 0) {
        bframe *f = &st[n - 1];
        if (f->i == f->nin) {
            id = finish_node(vg, f);
            if (id == LM_NONE) goto fail;
            if (f->key && !built_add(vg, f->nid, f->kpos, f->kscope, id)) {
                fail(vg, LM_ENOMEM, "out of memory");
                goto fail;
            }
        } else {
            uint32_t src;
            hl_expr ip;
            if (!input_at(vg, f->nid, f->i, f->pos, f->scope, f->top, &id, &src, &ip)) goto fail;
            if (src != LM_NONE && (id = built_find(vg, src, ip, f->scope)) == LM_NONE) {
                if (!cg__grow((void **)&st, &cap, n + 1, sizeof *st)) {
                    fail(vg, LM_ENOMEM, "out of memory");
                    goto fail;
                }
                f = &st[n - 1];
                if (!begin_node(vg, src, ip, f->scope, false, &st[n], &id)) goto fail;
                st[n].kpos = ip;
                st[n].kscope = f->scope;
                st[n].key = true;
                if (id == LM_NONE) {
                    n++; /* built when its inputs are */
                    continue;
                }
            }
            /* input f->i is value id */
            if (f->v.kind == CG_V_OP)
                f->v.a[f->i] = id;
            else
                f->v.body = id;
            f->i++;
            continue;
        }
        /* frame n-1 is value id: give it to its consumer */
        n--;
        if (n > 0) {
            bframe *c = &st[n - 1];
            if (c->v.kind == CG_V_OP)
                c->v.a[c->i] = id;
            else
                c->v.body = id;
            c->i++;
        }
    }
done:
    cg__free(st);
    return id;
fail:
    cg__free(st);
    return LM_NONE;
}

int cg__vg_build(cg_vg *vg, cg_ctx *c, uint32_t node, hl_expr L, bool share_elem)
{
    memset(vg, 0, sizeof *vg);
    vg->p = c->plan->exprs;
    vg->d = c->d;
    vg->g = c->g;
    vg->memo = c->memo;
    vg->err = c->err;
    vg->err_node = node;
    vg->row = LM_NONE;
    vg->share_elem = share_elem;
    const ll_node *n = ll_graph_node(c->g, node);
    hl_expr_pool *p = vg->p;
    hl_expr numel = hl_e_num(p, 1);
    for (uint32_t i = 0; i < n->ndim; i++)
        numel = hl_e_mul(p, numel, cg__x(vg, n->shape[i]));
    if (numel == HL_NONE) return oom(vg);
    vg->numel = numel;
    int64_t nmax = cg__expr_max(p, vg->d, numel, 0);
    if (nmax == INT64_MAX || nmax < 1)
        return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(node),
                        "the output's element count is not bounded by the dims' ranges");
    vg->N = nmax;
    hl_expr z = hl_e_z(p);
    if (L != HL_NONE) {
        hl_expr rows = hl_e_div(p, numel, L);
        int64_t rmax = cg__expr_max(p, vg->d, rows, 0);
        if (rows == HL_NONE) return oom(vg);
        vg->rows = rows;
        vg->L = L;
        vg->row = new_scope(vg, LM_NONE, HL_NONE, HL_NONE, HL_NONE,
                            rmax == INT64_MAX ? INT64_MAX : rmax - 1);
        if (vg->row == LM_NONE) return oom(vg);
        vg->elem = new_scope(vg, vg->row, z, L, hl_e_num(p, 1), nmax - 1);
    } else {
        vg->elem = new_scope(vg, LM_NONE, HL_NONE, HL_NONE, HL_NONE, nmax - 1);
    }
    if (vg->elem == LM_NONE) return oom(vg);
    uint32_t root;
    if (n->kind == LL_REGION) {
        if (n->n_in < 1) return cg__fail(c->err, LM_EVERIFY, cg__at(node), "a region without a root");
        const ll_node *r = ll_graph_node(c->g, n->in[0]);
        if (r->kind == LL_LOAD)
            root = load(vg, r->in[0], z, vg->elem);
        else
            root = build_node(vg, n->in[0], z, vg->elem, false);
    } else if (n->kind == LL_OUTPUT) {
        root = build_input(vg, node, 0, z, vg->elem, true);
    } else {
        root = build_node(vg, node, z, vg->elem, true);
    }
    if (root == LM_NONE) return lm_err_is_set(c->err) ? c->err->code : oom(vg);
    vg->root = root;
    return 0;
}

void cg__vg_fini(cg_vg *vg)
{
    cg__free(vg->v);
    cg__free(vg->ht);
    cg__free(vg->bt);
    cg__free(vg->s);
    memset(vg, 0, sizeof *vg);
}

/* Position of load v when the element scope's variable is ze and every loop between the
 * two is at its first step; false when v does not live under the element scope (a row
 * value) or a position cannot be evaluated. */
static bool pos_at_element(const cg_vg *vg, const hl_env *env, const cg_val *v, int64_t ze,
                           int64_t *out)
{
    uint32_t path[64], n = 0;
    for (uint32_t s = v->scope; s != vg->elem; s = vg->s[s].parent) {
        if (s == LM_NONE || vg->s[s].parent == LM_NONE || n == 64) return false;
        path[n++] = s;
    }
    int64_t q = ze;
    while (n-- > 0)
        if (hl_e_eval(vg->p, vg->s[path[n]].q0, env, q, &q, NULL)) return false;
    return hl_e_eval(vg->p, v->pos, env, q, out, NULL) == 0;
}

/* Do the lanes that load v read addresses apart (more than one element from one lane to
 * the next), at the dims' profile values? The row template splits each loop of a row
 * across its lanes: the step that matters is the one of v's own loop. The elementwise
 * template gives each lane an element: the step is from one element to the next, the
 * loops around v at their first step. A position that cannot be evaluated counts as
 * strided. */
static bool strided_load(const cg_vg *vg, const hl_env *env, const cg_val *v, bool row)
{
    const cg_scope *s = &vg->s[v->scope];
    int64_t a, b;
    if (!row) {
        if (v->scope == vg->row) return false; /* one value per row: the lanes share it */
        if (!pos_at_element(vg, env, v, 0, &a) || !pos_at_element(vg, env, v, 1, &b))
            return vg->s[v->scope].parent != LM_NONE;
        return b - a > 1 || b - a < -1;
    }
    if (s->parent == LM_NONE) return false;
    int64_t inner, len;
    if (hl_e_eval(vg->p, s->inner, env, 0, &inner, NULL) || hl_e_eval(vg->p, s->len, env, 0, &len, NULL))
        return true;
    if (len < 2) return false;
    int64_t pmax = vg->s[s->parent].zmax;
    for (int64_t pv = 0; pv < 2 && pv <= pmax; pv++) {
        int64_t q0;
        if (hl_e_eval(vg->p, s->q0, env, pv, &q0, NULL) ||
            hl_e_eval(vg->p, v->pos, env, q0, &a, NULL) ||
            hl_e_eval(vg->p, v->pos, env, q0 + inner, &b, NULL))
            return true;
        if (b - a > 1 || b - a < -1) return true;
    }
    return false;
}

/* Divisions and modulos in e by something other than a literal, where e depends on z
 * (each an integer division at run time); at most 64, to a depth of 32. */
static uint32_t divisions(const hl_expr_pool *p, hl_expr e, int depth)
{
    if (depth > 32 || !hl_e_has_z(p, e)) return 0;
    hl_expr_node n = hl_e_get(p, e);
    if (n.kind < HL_E_ADD) return 0;
    uint32_t c = divisions(p, n.a, depth + 1) + divisions(p, n.b, depth + 1);
    int64_t v;
    if ((n.kind == HL_E_DIV || n.kind == HL_E_CDIV || n.kind == HL_E_MOD) && !hl_e_is_num(p, n.b, &v))
        c++;
    return c > 64 ? 64 : c;
}

/* A count that does not fit int64 (loops nested at the dims' largest values): the
 * counts saturate at it, and the cost model reads it as "too much". */
#define OPS_SATURATED ((int64_t)1 << 62)

/* r, the result of a sum or product of counts, or the saturated count where it
 * overflowed (HL_NONE stays only when the pool is out of memory) */
static hl_expr sat(hl_expr_pool *p, hl_expr r)
{
    return r != HL_NONE || hl_expr_pool_failed(p) ? r : hl_e_num(p, OPS_SATURATED);
}

/* acc + per[s] * runs[s] (HL_NONE stays) */
static hl_expr weigh(hl_expr_pool *p, hl_expr acc, const uint64_t *per, const hl_expr *runs,
                     uint32_t s)
{
    int64_t v;
    if (acc == HL_NONE || !per[s]) return acc;
    if (hl_e_is_num(p, acc, &v) && v == OPS_SATURATED) return acc;
    if (hl_e_is_num(p, runs[s], &v) && v == OPS_SATURATED) return runs[s];
    return sat(p, hl_e_add(p, acc, sat(p, hl_e_mul(p, hl_e_num(p, (int64_t)per[s]), runs[s]))));
}

int cg__vg_ops(cg_vg *vg, bool row, cg_kernel *k)
{
    hl_expr_pool *p = vg->p;
    uint32_t nv = hl_var_count(p), ns = vg->ns ? vg->ns : 1;
    bool *seen = cg__alloc(vg->n ? vg->n : 1, sizeof *seen);
    hl_expr *runs = cg__alloc(ns, sizeof *runs);
    uint64_t *count = cg__alloc(4 * (size_t)ns, sizeof *count);
    int64_t *val = cg__alloc(nv ? nv : 1, sizeof *val);
    bool *bound = cg__alloc(nv ? nv : 1, sizeof *bound);
    hl_expr ops = HL_NONE, strided = HL_NONE, d32 = HL_NONE, d64 = HL_NONE;
    if (!seen || !runs || !count || !val || !bound) goto done;
    uint64_t *nops = count, *nstrided = count + ns, *n32 = count + 2 * ns, *n64 = count + 3 * ns;
    for (uint32_t i = 0; i < vg->d->n; i++) {
        const hl_dim *d = &vg->d->dims[i];
        if (d->var < nv) {
            val[d->var] = d->profile;
            bound[d->var] = true;
        }
    }
    hl_env env = {val, bound, nv};
    cg__vg_mark(vg, vg->root, seen);
    for (uint32_t v = 0; v < vg->n; v++) {
        const cg_val *x = &vg->v[v];
        if (!seen[v] || x->kind == CG_V_CONST) continue;
        nops[x->kind == CG_V_REDUCE ? x->body_scope : x->scope]++;
        if (x->kind != CG_V_LOAD) continue;
        if (strided_load(vg, &env, x, row)) nstrided[x->scope]++;
        uint32_t dv = divisions(p, x->pos, 0);
        cg_ity t;
        if (!dv || !cg__expr_ity(p, vg->d, x->pos, vg->s[x->scope].zmax, &t)) t = CG_I64;
        (t == CG_U32 ? n32 : n64)[x->scope] += dv;
    }
    /* a scope's parent is made before it: runs[] fills in index order */
    ops = strided = d32 = d64 = hl_e_num(p, 0);
    for (uint32_t s = 0; s < vg->ns && ops != HL_NONE; s++) {
        const cg_scope *sc = &vg->s[s];
        int64_t v;
        if (sc->parent == LM_NONE)
            runs[s] = s == vg->row ? vg->rows : vg->numel;
        else if (hl_e_is_num(p, runs[sc->parent], &v) && v == OPS_SATURATED)
            runs[s] = runs[sc->parent];
        else
            runs[s] = sat(p, hl_e_mul(p, runs[sc->parent], sc->len));
        if (runs[s] == HL_NONE) {
            ops = HL_NONE;
            break;
        }
        ops = weigh(p, ops, nops, runs, s);
        strided = weigh(p, strided, nstrided, runs, s);
        d32 = weigh(p, d32, n32, runs, s);
        d64 = weigh(p, d64, n64, runs, s);
    }
done:
    cg__free(seen);
    cg__free(runs);
    cg__free(count);
    cg__free(val);
    cg__free(bound);
    k->ops = ops;
    k->strided = strided;
    k->divs32 = d32;
    k->divs64 = d64;
    return ops == HL_NONE || strided == HL_NONE || d32 == HL_NONE || d64 == HL_NONE ? LM_ENOMEM
                                                                                    : LM_OK;
}

bool cg__expr_is_one(const hl_expr_pool *p, hl_expr x)
{
    int64_t v;
    return x != HL_NONE && hl_e_is_num(p, x, &v) && v == 1;
}

void cg__vg_mark(const cg_vg *vg, uint32_t v, bool *seen)
{
    if (seen[v]) return;
    seen[v] = true;
    const cg_val *x = &vg->v[v];
    for (uint32_t i = 0; i < x->na; i++)
        cg__vg_mark(vg, x->a[i], seen);
    if (x->kind == CG_V_REDUCE) cg__vg_mark(vg, x->body, seen);
}
