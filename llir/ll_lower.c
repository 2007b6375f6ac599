/* ll_lower.c - LLIR from an HLIR graph without the e-graph (ll_lower.h): every node a
 * standalone kernel (ll_graph_from_hlir), or as a plan chooses: fused regions, the
 * generic matmul kernel, cuBLASLt calls.
 *
 * The graph is built through the builder interface (ll_build.h) only. Expressions are
 * copied into the graph's pool with one memo per HLIR expression id, dims first so every
 * variable is a declared dim. A region is found by one downward scan of HLIR ids from its
 * root (ids are a topological order, so every producer is below its readers): the root
 * and the INLINE nodes it reaches are its interior, every other node it reaches is a
 * load. Interior ids are known before anything is pushed, so the region node, pushed
 * first, already names its root. */
#include "ll_build.h"
#include "ll_lower.h"
#include "ll_int.h"

#include <string.h>

typedef struct lower {
    const hl_graph *hg;
    const hl_expr_pool *hp;
    ll_graph *g;
    hl_expr_pool *p;
    hl_expr *memo; /* per HLIR expression id: its copy, or HL_NONE */
    const ll_lower_impl *impl;
    const ll_lower_blas *blas;
    uint32_t *map;  /* per HLIR node: its top-level LLIR node, LM_NONE while none */
    uint32_t *mark; /* per HLIR node: the region stamp that reached it */
    uint32_t *val;  /* per HLIR node: its interior node in the region being built */
    uint32_t stamp;
    lm_err *err;
} lower;

static ll_lower_impl impl_of(const lower *L, uint32_t id)
{
    return L->impl ? L->impl[id] : LL_LOWER_KERNEL;
}

static const hl_node *hn(const lower *L, uint32_t id)
{
    return hl_graph_node(L->hg, id);
}

void ll__node_init(ll_node *n, ll_kind kind, ll_op op)
{
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->op = op;
    n->region = LM_NONE;
    for (uint32_t i = 0; i < LL_MAX_IN; i++)
        n->in[i] = LM_NONE;
    n->prim.op = HL_OP_COUNT;
    n->prim.iota_expr = n->prim.iota_len = HL_NONE;
    ll_matmul *m = &n->mm;
    m->m = m->n = m->k = m->batch = HL_NONE;
    m->lda = m->ldb = m->stride_a = m->stride_b = HL_NONE;
    m->alpha = 1.0;
    n->eclass = n->enode = n->origin = LM_NONE;
}

static bool fusible(hl_op op)
{
    switch (op) {
    case HL_OP_CONSTANT:
    case HL_OP_IOTA:
    case HL_OP_CAST:
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        return true;
    default:
        return false;
    }
}

/* The constructor name's part after K / F. */
static const char *op_stem(hl_op op)
{
    switch (op) {
    case HL_OP_SUM_REDUCE:
        return "Sum";
    case HL_OP_MAX_REDUCE:
        return "Max";
    default:
        return hl_op_name(op);
    }
}

/* The registered op `prefix` + stem (KAdd, FSum, ...) or a plain name (prefix ""). */
static int find_op(lower *L, const char *prefix, const char *stem, ll_op *out)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s", prefix, stem);
    *out = ll_op_find(name);
    if (*out == LL_OP_NONE)
        return ll__fail(L->err, LM_EVERIFY, NULL, "lowering: the registry has no op '%s'", name);
    return 0;
}

static int fail_hl(lower *L, int code, uint32_t id, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int fail_hl(lower *L, int code, uint32_t id, const char *fmt, ...)
{
    char msg[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lm_loc loc = {0};
    loc.node_id = id;
    return ll__fail(L->err, code, &loc, "lowering hlir node %u (%s): %s", id,
                    hl_op_name(hn(L, id)->op), msg);
}

/* A refusal of a matmul layout, unless the pool ran out of memory while checking it:
 * every check builds expressions, and a failed one reads as "does not fit". */
static int refuse(lower *L, uint32_t id, const char *why)
{
    if (hl_expr_pool_failed(L->p))
        return ll__fail(L->err, LM_ENOMEM, NULL, "lowering: out of memory building expressions");
    return fail_hl(L, LM_EARG, id, "%s", why);
}

/* ---- copying into the graph's pool ---- */

static int copy_expr(lower *L, hl_expr e, hl_expr *out)
{
    *out = ll__expr_copy(L->p, L->hp, e, L->memo);
    if (*out != HL_NONE) return 0;
    if (hl_expr_pool_failed(L->p))
        return ll__fail(L->err, LM_ENOMEM, NULL, "lowering: out of memory copying expressions");
    return ll__fail(L->err, LM_EEVAL, NULL, "lowering: an expression could not be copied");
}

static int copy_view(lower *L, const hl_view *v, hl_view *out)
{
    memset(out, 0, sizeof *out);
    out->ndim = v->ndim;
    for (uint32_t d = 0; d < v->ndim; d++) {
        int rc = copy_expr(L, v->dims[d], &out->dims[d]);
        if (!rc) rc = copy_expr(L, v->strides[d], &out->strides[d]);
        if (rc) return rc;
    }
    return 0;
}

/* Copies HLIR node id's dtype and shape into *n. */
static int copy_shape(lower *L, uint32_t id, ll_node *n)
{
    const hl_node *h = hn(L, id);
    n->dtype = h->dtype;
    n->ndim = h->ndim;
    for (uint32_t d = 0; d < h->ndim; d++)
        if (copy_expr(L, h->shape[d], &n->shape[d])) return L->err->code;
    return 0;
}

/* Copies HLIR node id's dtype, shape and primitive (with its views and fields) into *n,
 * the inputs not yet set. */
static int copy_node(lower *L, uint32_t id, ll_node *n)
{
    const hl_node *h = hn(L, id);
    if (copy_shape(L, id, n)) return L->err->code;
    hl_node *pr = &n->prim;
    *pr = *h;
    memset(pr->shape, 0, sizeof pr->shape);
    memcpy(pr->shape, n->shape, sizeof n->shape);
    pr->iota_expr = pr->iota_len = HL_NONE;
    if (h->op == HL_OP_IOTA &&
        (copy_expr(L, h->iota_expr, &pr->iota_expr) || copy_expr(L, h->iota_len, &pr->iota_len)))
        return L->err->code;
    for (uint32_t i = 0; i < h->n_in; i++)
        if (copy_view(L, &h->in[i].view, &pr->in[i].view)) return L->err->code;
    if (h->op != HL_OP_INPUT && h->op != HL_OP_OUTPUT) pr->name = NULL;
    return 0;
}

static int push(lower *L, const ll_node *n, uint32_t *id)
{
    *id = ll__graph_push(L->g, n, L->err);
    return *id == LM_NONE ? L->err->code : 0;
}

/* Sets input i of n to HLIR node src's top-level node. */
static int set_input(lower *L, uint32_t id, ll_node *n, uint32_t i, uint32_t src)
{
    if (L->map[src] == LM_NONE)
        return fail_hl(L, LM_EARG, id,
                       "input %u (hlir node %u) has no top-level node: it is "
                       "INLINE, so only regions and the matmul absorbing it "
                       "may read it",
                       i, src);
    n->in[i] = L->map[src];
    n->in_dtype[i] = hn(L, src)->dtype;
    if (n->n_in < i + 1) n->n_in = i + 1;
    return 0;
}

/* ---- standalone kernels and IO ---- */

static int lower_kernel(lower *L, uint32_t id)
{
    const hl_node *h = hn(L, id);
    ll_node n;
    ll_op op;
    int rc;
    if (h->op == HL_OP_INPUT) {
        if ((rc = find_op(L, "", "Input", &op))) return rc;
        ll__node_init(&n, LL_INPUT, op);
    } else if (h->op == HL_OP_OUTPUT) {
        if ((rc = find_op(L, "", "Output", &op))) return rc;
        ll__node_init(&n, LL_OUTPUT, op);
    } else {
        if ((rc = find_op(L, "K", op_stem(h->op), &op))) return rc;
        ll__node_init(&n, LL_KERNEL, op);
    }
    if ((rc = copy_node(L, id, &n))) return rc;
    for (uint32_t i = 0; i < h->n_in; i++) {
        if ((rc = set_input(L, id, &n, i, h->in[i].node))) return rc;
        n.prim.in[i].node = n.in[i];
    }
    return push(L, &n, &L->map[id]);
}

/* ---- regions ---- */

static int lower_region(lower *L, uint32_t root)
{
    uint32_t s = ++L->stamp;
    L->mark[root] = s;
    for (uint32_t id = root + 1; id-- > 0;) {
        if (L->mark[id] != s) continue;
        if (id != root && impl_of(L, id) != LL_LOWER_INLINE) continue; /* a load */
        const hl_node *h = hn(L, id);
        for (uint32_t i = 0; i < h->n_in; i++)
            L->mark[h->in[i].node] = s;
    }
    uint32_t R = ll_graph_node_count(L->g), j = 0;
    for (uint32_t id = 0; id <= root; id++)
        if (L->mark[id] == s) L->val[id] = R + 1 + j++;
    ll_op op;
    int rc;
    if ((rc = find_op(L, "", "FStore", &op))) return rc;
    ll_node n;
    ll__node_init(&n, LL_REGION, op);
    if ((rc = copy_shape(L, root, &n))) return rc;
    n.n_in = 1;
    n.in[0] = L->val[root];
    n.in_dtype[0] = n.dtype;
    if ((rc = push(L, &n, &L->map[root]))) return rc;
    for (uint32_t id = 0; id <= root; id++) {
        if (L->mark[id] != s) continue;
        uint32_t got;
        if (id != root && impl_of(L, id) != LL_LOWER_INLINE) { /* a load of id's node */
            if ((rc = find_op(L, "", "FLoad", &op))) return rc;
            ll__node_init(&n, LL_LOAD, op);
            n.region = R;
            if ((rc = copy_shape(L, id, &n)) || (rc = set_input(L, id, &n, 0, id))) return rc;
        } else {
            const hl_node *m = hn(L, id);
            if (!fusible(m->op))
                return fail_hl(L, LM_EARG, id, "a %s cannot be computed inside a region",
                               hl_op_name(m->op));
            if ((rc = find_op(L, "F", op_stem(m->op), &op))) return rc;
            ll__node_init(&n, LL_FUSED, op);
            n.region = R;
            if ((rc = copy_node(L, id, &n))) return rc;
            n.n_in = m->n_in;
            for (uint32_t i = 0; i < m->n_in; i++) {
                uint32_t src = m->in[i].node;
                n.in[i] = n.prim.in[i].node = L->val[src];
                n.in_dtype[i] = hn(L, src)->dtype;
            }
        }
        if ((rc = push(L, &n, &got))) return rc;
        if (got != L->val[id])
            return fail_hl(L, LM_EVERIFY, id, "interior node got id %u, not %u", got, L->val[id]);
    }
    return 0;
}

/* ---- matmuls ---- */

static bool is_num(const lower *L, hl_expr e, int64_t v)
{
    int64_t x;
    return hl_e_is_num(L->p, e, &x) && x == v;
}

/* The c of a stride c*z (c free of z) of a dim of size `dim`; a dim of size 1 reads only
 * z = 0, so its stride must be 0 there and its c is taken as 0. HL_NONE otherwise. */
static hl_expr coef(lower *L, hl_expr stride, hl_expr dim)
{
    hl_expr zero = hl_e_num(L->p, 0), one = hl_e_num(L->p, 1);
    if (is_num(L, dim, 1)) return hl_e_subst_z(L->p, stride, zero, 0) == zero ? zero : HL_NONE;
    hl_expr c = hl_e_subst_z(L->p, stride, one, 0);
    if (c == HL_NONE || hl_e_has_z(L->p, c)) return HL_NONE;
    return hl_e_mul(L->p, c, hl_e_z(L->p)) == stride ? c : HL_NONE;
}

/* The merged stride of batch dims [0, nb) of view v (shape dims), or HL_NONE. */
static hl_expr batch_stride(lower *L, const hl_view *v, const hl_expr *dims, uint32_t nb)
{
    hl_expr zero = hl_e_num(L->p, 0), stride = HL_NONE, running = HL_NONE;
    for (uint32_t d = nb; d-- > 0;) {
        hl_expr c = coef(L, v->strides[d], dims[d]);
        if (c == HL_NONE) return HL_NONE;
        if (is_num(L, dims[d], 1)) continue;
        if (stride == HL_NONE)
            stride = c;
        else if (c != running)
            return HL_NONE;
        running = hl_e_mul(L->p, c, dims[d]);
    }
    return stride == HL_NONE ? zero : stride;
}

static int lower_matmul(lower *L, uint32_t sid, bool blas)
{
    const hl_node *s = hn(L, sid);
    if (s->op != HL_OP_SUM_REDUCE)
        return refuse(L, sid, "only a SumReduce over a Mul becomes a matmul");
    uint32_t mid = s->in[0].node;
    const hl_node *m = hn(L, mid);
    if (m->op != HL_OP_MUL || impl_of(L, mid) != LL_LOWER_INLINE)
        return fail_hl(L, LM_EARG, sid, "its input (hlir node %u) must be a Mul marked INLINE",
                       mid);
    uint32_t r = m->ndim;
    if (r < 3 || s->axis != r - 1 || s->in[0].view.ndim != r)
        return refuse(L, sid, "a matmul reduces the last of the Mul's >= 3 dims");
    int rc;
    hl_expr dims[HL_MAX_DIMS];
    for (uint32_t d = 0; d < r; d++)
        if ((rc = copy_expr(L, m->shape[d], &dims[d]))) return rc;
    hl_view vs, va, vb;
    if ((rc = copy_view(L, &s->in[0].view, &vs)) || (rc = copy_view(L, &m->in[0].view, &va)) ||
        (rc = copy_view(L, &m->in[1].view, &vb)))
        return rc;
    for (uint32_t d = 0; d < r; d++)
        if (vs.dims[d] != dims[d]) return refuse(L, sid, "it does not read the Mul's whole shape");
    if (!hl_view_is_contiguous(L->p, &vs))
        return refuse(L, sid, "it does not read the Mul contiguously");
    uint32_t M = r - 3, N = r - 2, K = r - 1;
    hl_expr zero = hl_e_num(L->p, 0);
    hl_expr am = coef(L, va.strides[M], dims[M]), an = coef(L, va.strides[N], dims[N]);
    hl_expr ak = coef(L, va.strides[K], dims[K]);
    hl_expr bm = coef(L, vb.strides[M], dims[M]), bn = coef(L, vb.strides[N], dims[N]);
    hl_expr bk = coef(L, vb.strides[K], dims[K]);
    if (am == HL_NONE || an != zero || ak == HL_NONE)
        return refuse(L, sid,
                      "the Mul's input 0 is not A[m, k] (strides c*z, 0 "
                      "along N)");
    if (bm != zero || bn == HL_NONE || bk == HL_NONE)
        return refuse(L, sid,
                      "the Mul's input 1 is not B[k, n] (strides c*z, 0 "
                      "along M)");
    ll_op op;
    if ((rc = find_op(L, "", blas ? "Blas" : "KMatmul", &op))) return rc;
    ll_node n;
    ll__node_init(&n, blas ? LL_LIBRARY : LL_KERNEL, op);
    if ((rc = copy_shape(L, sid, &n))) return rc;
    ll_matmul *mm = &n.mm;
    mm->m = dims[M];
    mm->n = dims[N];
    mm->k = dims[K];
    /* A[m, k]: row-major when contiguous along K (lda = its M stride), else column-major
     * when contiguous along M; a dim of size 1 leaves the other stride free */
    if (is_num(L, ak, 1) || is_num(L, dims[K], 1)) {
        mm->order_a = LL_ROW_MAJOR;
        mm->lda = (am == zero) ? dims[K] : am;
    } else if (is_num(L, am, 1) || is_num(L, dims[M], 1)) {
        mm->order_a = LL_COL_MAJOR;
        mm->lda = (ak == zero) ? dims[M] : ak;
    } else {
        return refuse(L, sid, "A is contiguous along neither K nor M");
    }
    if (is_num(L, bn, 1) || is_num(L, dims[N], 1)) {
        mm->order_b = LL_ROW_MAJOR;
        mm->ldb = (bk == zero) ? dims[N] : bk;
    } else if (is_num(L, bk, 1) || is_num(L, dims[K], 1)) {
        mm->order_b = LL_COL_MAJOR;
        mm->ldb = (bn == zero) ? dims[K] : bn;
    } else {
        return refuse(L, sid, "B is contiguous along neither N nor K");
    }
    hl_expr batch = hl_e_num(L->p, 1);
    for (uint32_t d = 0; d < M; d++)
        batch = hl_e_mul(L->p, batch, dims[d]);
    mm->batch = batch;
    mm->stride_a = batch_stride(L, &va, dims, M);
    mm->stride_b = batch_stride(L, &vb, dims, M);
    if (batch == HL_NONE || mm->stride_a == HL_NONE || mm->stride_b == HL_NONE)
        return refuse(L, sid, "the batch dims do not merge into one batch stride");
    const hl_node *ha = hn(L, m->in[0].node), *hb = hn(L, m->in[1].node);
    mm->type_a = ha->dtype;
    mm->type_b = hb->dtype;
    mm->type_c = mm->type_d = mm->type_bias = s->dtype;
    mm->alpha = 1.0;
    mm->beta = 0.0;
    mm->epilogue = LL_EPI_NONE;
    if ((rc = set_input(L, sid, &n, 0, m->in[0].node)) ||
        (rc = set_input(L, sid, &n, 1, m->in[1].node)))
        return rc;
    const ll_lower_blas *x = blas && L->blas ? &L->blas[sid] : NULL;
    if (x) {
        if (x->alpha != 0.0) mm->alpha = hl_round_to(x->alpha_dt, (float)x->alpha);
        uint32_t k = 2;
        if (x->c != HL_NONE) {
            if (x->c >= sid)
                return fail_hl(L, LM_EARG, sid, "C must be an earlier node, not %u", x->c);
            mm->beta = 1.0;
            mm->type_c = hn(L, x->c)->dtype;
            if ((rc = set_input(L, sid, &n, k++, x->c))) return rc;
        }
        if (x->bias != HL_NONE) {
            if (x->bias >= sid)
                return fail_hl(L, LM_EARG, sid, "bias must be an earlier node, not %u", x->bias);
            mm->type_bias = hn(L, x->bias)->dtype;
            mm->epilogue = LL_EPI_BIAS;
            if ((rc = set_input(L, sid, &n, k++, x->bias))) return rc;
        }
        if (x->gelu) mm->epilogue = mm->epilogue == LL_EPI_BIAS ? LL_EPI_BIAS_GELU : LL_EPI_GELU;
    }
    if (hl_expr_pool_failed(L->p)) /* an HL_NONE may have passed a comparison above */
        return ll__fail(L->err, LM_ENOMEM, NULL, "lowering: out of memory building expressions");
    return push(L, &n, &L->map[sid]);
}

/* ---- the plan ---- */

/* Every reader of an INLINE node is a region or INLINE node, or the matmul absorbing it. */
static int check_plan(lower *L)
{
    uint32_t n = hl_graph_node_count(L->hg);
    for (uint32_t id = 0; id < n; id++) {
        ll_lower_impl im = impl_of(L, id);
        const hl_node *h = hn(L, id);
        if ((unsigned)im > LL_LOWER_BLAS)
            return fail_hl(L, LM_EARG, id, "plan value %d is not an ll_lower_impl", (int)im);
        if ((h->op == HL_OP_INPUT || h->op == HL_OP_OUTPUT) && im != LL_LOWER_KERNEL)
            return fail_hl(L, LM_EARG, id, "Input and Output nodes are KERNEL in a plan");
        if ((im == LL_LOWER_INLINE || im == LL_LOWER_REGION) && !fusible(h->op))
            return fail_hl(L, LM_EARG, id, "a %s cannot be fused", hl_op_name(h->op));
        for (uint32_t i = 0; i < h->n_in; i++) {
            uint32_t src = h->in[i].node;
            if (impl_of(L, src) != LL_LOWER_INLINE) continue;
            bool absorbs = (im == LL_LOWER_MATMUL || im == LL_LOWER_BLAS) && i == 0;
            if (im != LL_LOWER_INLINE && im != LL_LOWER_REGION && !absorbs)
                return fail_hl(L, LM_EARG, id,
                               "reads hlir node %u, which is INLINE, but is itself neither "
                               "fused nor the matmul absorbing it",
                               src);
        }
    }
    return 0;
}

ll_graph *ll__lower_hlir(const hl_graph *hg, const ll_lower_plan *plan, lm_err *err)
{
    if (hl_graph_error(hg)->code != 0) {
        ll__fail(err, LM_EARG, NULL, "lowering: the hlir graph holds a builder error: %s",
                 hl_graph_error(hg)->msg);
        return NULL;
    }
    lower L = {0};
    L.hg = hg;
    L.hp = hl_graph_exprs_c(hg);
    L.impl = plan ? plan->impl : NULL;
    L.blas = plan ? plan->blas : NULL;
    L.err = err;
    uint32_t n = hl_graph_node_count(hg), ne = hl_expr_count(L.hp);
    L.memo = ll__alloc(ne ? ne : 1, sizeof(hl_expr));
    L.map = ll__alloc(n ? n : 1, sizeof(uint32_t));
    L.mark = ll__zalloc(n ? n : 1, sizeof(uint32_t));
    L.val = ll__alloc(n ? n : 1, sizeof(uint32_t));
    L.g = ll__graph_alloc(err);
    int rc = 0;
    if (!L.g) {
        rc = LM_ENOMEM;
        goto out;
    }
    if (!L.memo || !L.map || !L.mark || !L.val) {
        rc = ll__fail(err, LM_ENOMEM, NULL, "lowering: out of memory");
        goto out;
    }
    L.p = ll__graph_pool(L.g);
    for (uint32_t i = 0; i < ne; i++)
        L.memo[i] = HL_NONE;
    for (uint32_t i = 0; i < n; i++)
        L.map[i] = LM_NONE;
    if ((rc = check_plan(&L))) goto out;
    for (uint32_t i = 0; i < hl_graph_dim_count(hg); i++) {
        const hl_dim *d = hl_graph_dim_at(hg, i);
        if (ll__graph_add_dim(L.g, hl_var_name(L.hp, d->var), d->lo, d->hi, d->profile, err) ==
            LM_NONE) {
            rc = err->code;
            goto out;
        }
    }
    for (uint32_t id = 0; id < n && !rc; id++) {
        switch (impl_of(&L, id)) {
        case LL_LOWER_KERNEL:
            rc = lower_kernel(&L, id);
            break;
        case LL_LOWER_INLINE:
            break;
        case LL_LOWER_REGION:
            rc = lower_region(&L, id);
            break;
        case LL_LOWER_MATMUL:
        case LL_LOWER_BLAS:
            rc = lower_matmul(&L, id, impl_of(&L, id) == LL_LOWER_BLAS);
            break;
        }
    }
    if (!rc && hl_expr_pool_failed(L.p))
        rc = ll__fail(err, LM_ENOMEM, NULL, "lowering: out of memory building expressions");
    if (!rc) rc = ll__graph_finish(L.g, err);
out:
    ll__free(L.memo);
    ll__free(L.map);
    ll__free(L.mark);
    ll__free(L.val);
    if (rc) {
        ll_graph_free(L.g);
        return NULL;
    }
    return L.g;
}

/* True when SumReduce node id reads the Mul m whole and in order (its view is the
 * contiguous layout of m's shape) and nothing else reads m: the reference runtime then
 * computes the pair as one dot product (exact products added in f32, one rounding), and
 * so does a region of the two. */
static bool dot_product_pair(const hl_graph *g, uint32_t id, const uint32_t *readers)
{
    const hl_node *nd = hl_graph_node(g, id);
    if (nd->op != HL_OP_SUM_REDUCE) return false;
    uint32_t m = nd->in[0].node;
    const hl_node *mn = hl_graph_node(g, m);
    if (mn->op != HL_OP_MUL || readers[m] != 1) return false;
    const hl_view *v = &nd->in[0].view;
    if (v->ndim != mn->ndim) return false;
    for (uint32_t d = 0; d < v->ndim; d++)
        if (v->dims[d] != mn->shape[d]) return false;
    return hl_view_is_contiguous((hl_expr_pool *)hl_graph_exprs_c(g), v);
}

ll_graph *ll_graph_from_hlir(const hl_graph *g, lm_err *err)
{
    /* Every node its own kernel, except that a Mul read only by a SumReduce that reads it
     * whole becomes a region with it: the pair the reference runtime computes as one dot
     * product, so that this lowering computes exactly what the reference does. */
    uint32_t n = hl_graph_node_count(g);
    uint32_t *readers = ll__zalloc(n ? n : 1, sizeof(uint32_t));
    ll_lower_impl *impl = ll__zalloc(n ? n : 1, sizeof(ll_lower_impl));
    if (!readers || !impl) {
        ll__free(readers);
        ll__free(impl);
        ll__oom(err, "lowering");
        return NULL;
    }
    bool any = false;
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        for (uint32_t i = 0; i < nd->n_in; i++)
            readers[nd->in[i].node]++;
    }
    for (uint32_t id = 0; id < n; id++)
        if (dot_product_pair(g, id, readers)) {
            impl[id] = LL_LOWER_REGION;
            impl[hl_graph_node(g, id)->in[0].node] = LL_LOWER_INLINE;
            any = true;
        }
    ll_lower_plan plan = {.impl = impl};
    ll_graph *lg = ll__lower_hlir(g, any ? &plan : NULL, err);
    ll__free(readers);
    ll__free(impl);
    return lg;
}
