/* ll_pack.c - binary LLIR: ll_graph_pack and ll_graph_unpack (llir.h).
 *
 * The layout (version 1; integers are LEB128 varints, "s" ones zigzag-coded, f32 and f64
 * their IEEE bits little-endian, strings a varint length then the bytes, no NUL; a
 * reference to an expression is 0 for "no expression", else its table index + 1; an
 * optional id is 0 for none, else id + 1):
 *
 *   header   "LLIRbin\0", u32 version (LE), u64 payload length (LE), u64 XXH3-64 of the
 *            payload (LE)
 *   dims     count, then per dim: name, s lo, s hi, s profile
 *   origins  count, then the texts
 *   exprs    count, then per expression: u8 kind, then NUM: s value | VAR: dim index |
 *            Z: nothing | a binary kind: the table indexes of a and b (both below its own)
 *   nodes    count, then per node: u8 kind, op, optional region, u8 dtype, u8 ndim and
 *            the shape, u8 n_in and per input its id and u8 dtype, optional eclass, enode
 *            and origin, u8 sections (1 primitive, 2 matmul, 4 attention), then each
 *            section present:
 *     primitive  u8 op, u8 dtype, u8 ndim and the shape, u8 n_in and per input its node
 *                and view (u8 ndim, dims, strides), u8 has-name and the name, index, f32
 *                constant, iota_expr, iota_len, u8 cast_to, axis, origin
 *     matmul     m, n, k, batch, lda, ldb, stride_a, stride_b, u8 order_a, u8 order_b,
 *                f64 alpha, f64 beta, u8 epilogue, u8 type_a, _b, _c, _d, _bias
 *     attention  nlead, sq, skv, d, the views q, k, v, mask, u8 causal, f64 scale,
 *                block_q, block_k, warps, stages, kv_splits
 *
 * Sections absent from a node read as the LLIR file's reader leaves them (ll__node_empty).
 * Every count is bounded by the bytes left before anything is allocated for it, every
 * value by its range; the checksum catches accidental corruption, the checks a hostile
 * buffer. The graph is built through the internal builder and then verified.
 */
#include "ll_build.h"
#include "ll_int.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

static const char MAGIC[8] = {'L', 'L', 'I', 'R', 'b', 'i', 'n', '\0'};
#define HEADER 28u

enum { SEC_PRIM = 1, SEC_MM = 2, SEC_ATTN = 4 };

/* ==================================================================================
 * Packing
 * ================================================================================== */

typedef struct pk {
    const ll_graph *g;
    lm_err *err;
    uint8_t *b;
    size_t n, cap;
    bool oom;
    uint32_t ne;    /* the pool's expressions */
    uint32_t *tab;  /* per pool id: its table index + 1, 0 when not in the table */
    hl_expr *order; /* the table: pool ids, operands first */
    uint32_t nt;
    uint32_t *var_dim; /* per pool variable: its dim index, LM_NONE when none */
} pk;

static void put(pk *w, const void *p, size_t n)
{
    if (w->oom) return;
    if (w->n + n > w->cap) {
        size_t c = w->cap ? w->cap : 256;
        while (c < w->n + n)
            c *= 2;
        uint8_t *nb = ll__realloc(w->b, c, 1);
        if (!nb) {
            w->oom = true;
            return;
        }
        w->b = nb;
        w->cap = c;
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void put_u8(pk *w, uint32_t v)
{
    uint8_t c = (uint8_t)v;
    put(w, &c, 1);
}

static void put_uv(pk *w, uint64_t v)
{
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[k] |= 0x80;
        k++;
    } while (v);
    put(w, t, k);
}

static void put_sv(pk *w, int64_t v)
{
    put_uv(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_le(pk *w, uint64_t v, uint32_t bytes)
{
    uint8_t t[8];
    for (uint32_t i = 0; i < bytes; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    put(w, t, bytes);
}

static void put_f32(pk *w, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put_le(w, bits, 4);
}

static void put_f64(pk *w, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    put_le(w, bits, 8);
}

static void put_str(pk *w, const char *s)
{
    size_t n = strlen(s);
    put_uv(w, n);
    put(w, s, n);
}

static void put_opt(pk *w, uint32_t id)
{
    put_uv(w, id == LM_NONE ? 0 : (uint64_t)id + 1);
}

/* Adds e and its operands to the table (operands first). */
static int number(pk *w, hl_expr e, uint32_t node)
{
    if (e == HL_NONE || w->tab[e]) return 0;
    hl_expr_node x = hl_e_get(w->g->pool, e);
    if (x.kind == HL_E_VAR && (x.var >= hl_var_count(w->g->pool) || w->var_dim[x.var] == LM_NONE))
        return ll__fail(w->err, LM_EARG, NULL,
                        "ll_graph_pack: node %u refers to variable '%s', which is not a dim of "
                        "the graph",
                        node, hl_var_name(w->g->pool, x.var));
    if (x.kind >= HL_E_ADD) {
        int rc = number(w, x.a, node);
        if (!rc) rc = number(w, x.b, node);
        if (rc) return rc;
    }
    w->order[w->nt++] = e;
    w->tab[e] = w->nt;
    return 0;
}

static void put_ref(pk *w, hl_expr e)
{
    put_uv(w, e == HL_NONE ? 0 : w->tab[e]);
}

static void put_refs(pk *w, uint32_t n, const hl_expr *e)
{
    for (uint32_t i = 0; i < n; i++)
        put_ref(w, e[i]);
}

static void put_view(pk *w, const hl_view *v)
{
    put_u8(w, v->ndim);
    put_refs(w, v->ndim, v->dims);
    put_refs(w, v->ndim, v->strides);
}

static void put_node(pk *w, const ll_node *n)
{
    put_u8(w, n->kind);
    put_uv(w, n->op);
    put_opt(w, n->region);
    put_u8(w, n->dtype);
    put_u8(w, n->ndim);
    put_refs(w, n->ndim, n->shape);
    put_u8(w, n->n_in);
    for (uint32_t i = 0; i < n->n_in; i++) {
        put_uv(w, n->in[i]);
        put_u8(w, n->in_dtype[i]);
    }
    put_opt(w, n->eclass);
    put_opt(w, n->enode);
    put_opt(w, n->origin);
    bool prim = n->prim.op < HL_OP_COUNT, mm = ll__node_has_mm(n), at = ll_op_is_attn(n->op);
    put_u8(w, (prim ? SEC_PRIM : 0) | (mm ? SEC_MM : 0) | (at ? SEC_ATTN : 0));
    if (prim) {
        const hl_node *p = &n->prim;
        put_u8(w, p->op);
        put_u8(w, p->dtype);
        put_u8(w, p->ndim);
        put_refs(w, p->ndim, p->shape);
        put_u8(w, p->n_in);
        for (uint32_t i = 0; i < p->n_in; i++) {
            put_uv(w, p->in[i].node);
            put_view(w, &p->in[i].view);
        }
        put_u8(w, p->name != NULL);
        if (p->name) put_str(w, p->name);
        put_uv(w, p->index);
        put_f32(w, p->constant);
        put_ref(w, p->iota_expr);
        put_ref(w, p->iota_len);
        put_u8(w, p->cast_to);
        put_uv(w, p->axis);
        put_uv(w, p->origin);
    }
    if (mm) {
        const ll_matmul *m = &n->mm;
        hl_expr e[8] = {m->m, m->n, m->k, m->batch, m->lda, m->ldb, m->stride_a, m->stride_b};
        put_refs(w, 8, e);
        put_u8(w, m->order_a);
        put_u8(w, m->order_b);
        put_f64(w, m->alpha);
        put_f64(w, m->beta);
        put_u8(w, m->epilogue);
        put_u8(w, m->type_a);
        put_u8(w, m->type_b);
        put_u8(w, m->type_c);
        put_u8(w, m->type_d);
        put_u8(w, m->type_bias);
    }
    if (at) {
        const ll_attn *a = &n->at;
        put_uv(w, a->nlead);
        put_ref(w, a->sq);
        put_ref(w, a->skv);
        put_ref(w, a->d);
        put_view(w, &a->q);
        put_view(w, &a->k);
        put_view(w, &a->v);
        put_view(w, &a->mask);
        put_u8(w, a->causal);
        put_f64(w, a->scale);
        put_uv(w, a->block_q);
        put_uv(w, a->block_k);
        put_uv(w, a->warps);
        put_uv(w, a->stages);
        put_uv(w, a->kv_splits);
    }
}

/* Checks what the layout cannot hold (counts past their u8, ids out of range) and
 * numbers the expressions. */
static int prepare(pk *w)
{
    const ll_graph *g = w->g;
    for (uint32_t v = 0; v < hl_var_count(g->pool); v++)
        w->var_dim[v] = LM_NONE;
    for (uint32_t i = 0; i < g->n_dims; i++)
        if (g->dims[i].var < hl_var_count(g->pool)) w->var_dim[g->dims[i].var] = i;
    for (uint32_t id = 0; id < g->n_nodes; id++) {
        ll_node n = g->nodes[id];
        if (n.ndim > HL_MAX_DIMS || n.n_in > LL_MAX_IN ||
            (n.prim.op < HL_OP_COUNT && (n.prim.ndim > HL_MAX_DIMS || n.prim.n_in > HL_MAX_INPUTS)))
            return ll__fail(w->err, LM_EARG, NULL,
                            "ll_graph_pack: node %u has more dims or inputs than a node holds", id);
        hl_expr *slot[LL__NODE_EXPRS];
        uint32_t k = ll__node_exprs(&n, false, slot);
        for (uint32_t j = 0; j < k; j++) {
            hl_expr e = *slot[j];
            if (e != HL_NONE && e >= w->ne)
                return ll__fail(w->err, LM_EARG, NULL,
                                "ll_graph_pack: node %u refers to expression %u of a pool of %u",
                                id, e, w->ne);
            /* views of more dims than they hold were refused above; a view's ndim is
               bounded by ll__node_exprs */
            int rc = number(w, e, id);
            if (rc) return rc;
        }
    }
    return 0;
}

int ll_graph_pack(const ll_graph *g, void **buf, size_t *len, lm_err *err)
{
    if (buf) *buf = NULL;
    if (len) *len = 0;
    if (lm_err_is_set(err)) return err->code;
    if (!g || !buf || !len) return ll__fail(err, LM_EARG, NULL, "ll_graph_pack: no graph given");
    pk w = {.g = g, .err = err, .ne = hl_expr_count(g->pool)};
    uint32_t nv = hl_var_count(g->pool);
    w.tab = ll__zalloc(w.ne ? w.ne : 1, sizeof(uint32_t));
    w.order = ll__alloc(w.ne ? w.ne : 1, sizeof(hl_expr));
    w.var_dim = ll__alloc(nv ? nv : 1, sizeof(uint32_t));
    int rc = 0;
    if (!w.tab || !w.order || !w.var_dim) {
        rc = ll__oom(err, "ll_graph_pack");
        goto done;
    }
    if ((rc = prepare(&w))) goto done;
    uint8_t hdr[HEADER] = {0};
    put(&w, hdr, HEADER);
    put_uv(&w, g->n_dims);
    for (uint32_t i = 0; i < g->n_dims; i++) {
        const hl_dim *d = &g->dims[i];
        put_str(&w, hl_var_name(g->pool, d->var));
        put_sv(&w, d->lo);
        put_sv(&w, d->hi);
        put_sv(&w, d->profile);
    }
    put_uv(&w, g->n_origins);
    for (uint32_t i = 0; i < g->n_origins; i++)
        put_str(&w, g->origins[i]);
    put_uv(&w, w.nt);
    for (uint32_t i = 0; i < w.nt; i++) {
        hl_expr_node x = hl_e_get(g->pool, w.order[i]);
        put_u8(&w, x.kind);
        if (x.kind == HL_E_NUM)
            put_sv(&w, x.value);
        else if (x.kind == HL_E_VAR)
            put_uv(&w, w.var_dim[x.var]);
        else if (x.kind >= HL_E_ADD) {
            assert(w.tab[x.a] && w.tab[x.a] <= i && w.tab[x.b] && w.tab[x.b] <= i);
            put_uv(&w, w.tab[x.a] - 1);
            put_uv(&w, w.tab[x.b] - 1);
        }
    }
    put_uv(&w, g->n_nodes);
    for (uint32_t id = 0; id < g->n_nodes; id++)
        put_node(&w, &g->nodes[id]);
    if (w.oom) {
        rc = ll__oom(err, "ll_graph_pack");
        goto done;
    }
    size_t pl = w.n - HEADER;
    memcpy(w.b, MAGIC, 8);
    uint8_t *h = w.b + 8;
    for (uint32_t i = 0; i < 4; i++)
        h[i] = (uint8_t)((uint32_t)LL_PACK_VERSION >> (8 * i));
    uint64_t sum = XXH3_64bits(w.b + HEADER, pl);
    for (uint32_t i = 0; i < 8; i++) {
        h[4 + i] = (uint8_t)((uint64_t)pl >> (8 * i));
        h[12 + i] = (uint8_t)(sum >> (8 * i));
    }
    *buf = w.b;
    *len = w.n;
    w.b = NULL;
done:
    ll__free(w.b);
    ll__free(w.tab);
    ll__free(w.order);
    ll__free(w.var_dim);
    return rc;
}

/* ==================================================================================
 * Unpacking
 * ================================================================================== */

typedef struct rd {
    const uint8_t *b;
    size_t n, at;
    lm_err *err;
    ll_graph *g;
    hl_expr *ex; /* the expression table */
    uint32_t nex;
    uint32_t nn;    /* nodes announced */
    char where[64]; /* "node 7", "dims[2]": what is being read, for messages */
} rd;

static int rfail(rd *r, int code, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int rfail(rd *r, int code, const char *field, const char *fmt, ...)
{
    char msg[LM_ERR_MSG / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    bool sep = r->where[0] && field[0];
    return ll__fail(r->err, code, NULL, "binary llir: byte %zu: %s%s%s%s%s", r->at, r->where,
                    sep ? " " : "", field, r->where[0] || field[0] ? ": " : "", msg);
}

static size_t left(const rd *r)
{
    return r->n - r->at;
}

static int get_u8(rd *r, const char *field, uint32_t max, uint32_t *out)
{
    *out = 0;
    if (!left(r)) return rfail(r, LM_EPARSE, field, "the buffer ends");
    uint32_t v = r->b[r->at];
    if (v > max) return rfail(r, LM_EPARSE, field, "%u is out of range [0, %u]", v, max);
    r->at++;
    *out = v;
    return 0;
}

static int get_uv(rd *r, const char *field, uint64_t max, uint64_t *out)
{
    *out = 0;
    uint64_t v = 0;
    size_t at = r->at;
    for (uint32_t shift = 0;; shift += 7) {
        if (at == r->n) return rfail(r, LM_EPARSE, field, "the buffer ends inside a number");
        uint8_t c = r->b[at++];
        if (shift == 63 && (c & 0x7e))
            return rfail(r, LM_EPARSE, field, "the number overflows 64 bits");
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) break;
        if (shift == 63) return rfail(r, LM_EPARSE, field, "the number overflows 64 bits");
    }
    if (v > max)
        return rfail(r, LM_EPARSE, field, "%llu is out of range [0, %llu]", (unsigned long long)v,
                     (unsigned long long)max);
    r->at = at;
    *out = v;
    return 0;
}

static int get_u32(rd *r, const char *field, uint32_t max, uint32_t *out)
{
    *out = 0;
    uint64_t v;
    if (get_uv(r, field, max, &v)) return r->err->code;
    *out = (uint32_t)v;
    return 0;
}

/* An optional id: 0 for none, else id + 1 with id below count. */
static int get_opt(rd *r, const char *field, uint32_t count, uint32_t *out)
{
    *out = LM_NONE;
    uint64_t v;
    if (get_uv(r, field, count, &v)) return r->err->code;
    *out = v ? (uint32_t)(v - 1) : LM_NONE;
    return 0;
}

static int get_sv(rd *r, const char *field, int64_t *out)
{
    *out = 0;
    uint64_t v;
    if (get_uv(r, field, UINT64_MAX, &v)) return r->err->code;
    *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    return 0;
}

static int get_le(rd *r, const char *field, uint32_t bytes, uint64_t *out)
{
    *out = 0;
    if (left(r) < bytes) return rfail(r, LM_EPARSE, field, "the buffer ends");
    uint64_t v = 0;
    for (uint32_t i = 0; i < bytes; i++)
        v |= (uint64_t)r->b[r->at + i] << (8 * i);
    r->at += bytes;
    *out = v;
    return 0;
}

static int get_f32(rd *r, const char *field, float *out)
{
    *out = 0;
    uint64_t v;
    if (get_le(r, field, 4, &v)) return r->err->code;
    uint32_t bits = (uint32_t)v;
    memcpy(out, &bits, sizeof bits);
    return 0;
}

static int get_f64(rd *r, const char *field, double *out)
{
    *out = 0;
    uint64_t v;
    if (get_le(r, field, 8, &v)) return r->err->code;
    memcpy(out, &v, sizeof v);
    return 0;
}

/* Whether s[0..n) is well-formed UTF-8 (no overlong forms, no surrogates, nothing past
 * U+10FFFF): names and origins are text the LLIR file writes as JSON strings. */
static bool utf8_ok(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        uint32_t len = c < 0x80             ? 1
                       : (c & 0xe0) == 0xc0 ? 2
                       : (c & 0xf0) == 0xe0 ? 3
                       : (c & 0xf8) == 0xf0 ? 4
                                            : 0;
        if (!len || len > n - i) return false;
        uint32_t cp = len == 1 ? c : c & (0x7f >> len);
        for (uint32_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += len;
    }
    return true;
}

/* A string of at most max bytes of UTF-8 without NUL, copied into a NUL-terminated buffer from
 * the door (the caller frees it). */
static int get_str(rd *r, const char *field, size_t max, char **out)
{
    uint64_t n;
    *out = NULL;
    if (get_uv(r, field, max, &n)) return r->err->code;
    if (n > left(r))
        return rfail(r, LM_EPARSE, field, "%llu bytes, but the buffer ends", (unsigned long long)n);
    if (memchr(r->b + r->at, 0, (size_t)n)) return rfail(r, LM_EPARSE, field, "holds a NUL byte");
    if (!utf8_ok(r->b + r->at, (size_t)n)) return rfail(r, LM_EPARSE, field, "is not UTF-8");
    char *s = ll__alloc((size_t)n + 1, 1);
    if (!s) return ll__oom(r->err, "ll_graph_unpack");
    memcpy(s, r->b + r->at, (size_t)n);
    s[n] = '\0';
    r->at += (size_t)n;
    *out = s;
    return 0;
}

static int get_dtype(rd *r, const char *field, hl_dtype *out)
{
    *out = HL_F32;
    uint32_t v;
    if (get_u8(r, field, HL_DTYPE_COUNT - 1, &v)) return r->err->code;
    *out = (hl_dtype)v;
    return 0;
}

static int get_ref(rd *r, const char *field, hl_expr *out)
{
    *out = HL_NONE;
    uint32_t v;
    if (get_u32(r, field, r->nex, &v)) return r->err->code;
    *out = v ? r->ex[v - 1] : HL_NONE;
    return 0;
}

static int get_refs(rd *r, const char *field, uint32_t n, hl_expr *out)
{
    for (uint32_t i = 0; i < n; i++)
        if (get_ref(r, field, &out[i])) return r->err->code;
    return 0;
}

static int get_count(rd *r, const char *field, uint32_t max, uint32_t *out)
{
    if (get_u8(r, field, max, out)) return r->err->code;
    return 0;
}

static int get_view(rd *r, const char *field, hl_view *v)
{
    uint32_t nd;
    if (get_count(r, field, HL_MAX_DIMS, &nd) || get_refs(r, field, nd, v->dims) ||
        get_refs(r, field, nd, v->strides))
        return r->err->code;
    v->ndim = nd;
    return 0;
}

static int read_dims(rd *r)
{
    uint32_t n;
    snprintf(r->where, sizeof r->where, "dims");
    if (get_u32(r, "count", (uint32_t)(left(r) / 4), &n)) return r->err->code;
    for (uint32_t i = 0; i < n; i++) {
        snprintf(r->where, sizeof r->where, "dims[%u]", i);
        char *name;
        int64_t lo, hi, prof;
        if (get_str(r, "name", 63, &name)) return r->err->code;
        if (get_sv(r, "lo", &lo) || get_sv(r, "hi", &hi) || get_sv(r, "profile", &prof)) {
            ll__free(name);
            return r->err->code;
        }
        lm_err de = {0};
        uint32_t d = ll__graph_add_dim(r->g, name, lo, hi, prof, &de);
        ll__free(name);
        if (d == LM_NONE)
            return rfail(r, de.code == LM_ENOMEM ? LM_ENOMEM : LM_EPARSE, "", "%s", de.msg);
    }
    return 0;
}

static int read_origins(rd *r)
{
    uint32_t n;
    ll_graph *g = r->g;
    snprintf(r->where, sizeof r->where, "origins");
    if (get_u32(r, "count", (uint32_t)left(r), &n)) return r->err->code;
    if (n && ll__grow((void **)&g->origins, &g->cap_origins, n, sizeof(char *)))
        return ll__oom(r->err, "ll_graph_unpack");
    for (uint32_t i = 0; i < n; i++) {
        snprintf(r->where, sizeof r->where, "origins[%u]", i);
        if (get_str(r, "text", 4096, &g->origins[i])) return r->err->code;
        g->n_origins = i + 1;
    }
    return 0;
}

static int read_exprs(rd *r)
{
    uint32_t n;
    snprintf(r->where, sizeof r->where, "exprs");
    if (get_u32(r, "count", (uint32_t)left(r), &n)) return r->err->code;
    r->ex = ll__alloc(n ? n : 1, sizeof(hl_expr));
    if (!r->ex) return ll__oom(r->err, "ll_graph_unpack");
    hl_expr_pool *p = r->g->pool;
    for (uint32_t i = 0; i < n; i++) {
        snprintf(r->where, sizeof r->where, "exprs[%u]", i);
        uint32_t kind, a = 0, b = 0;
        int64_t v = 0;
        if (get_u8(r, "kind", HL_E_KIND_COUNT - 1, &kind)) return r->err->code;
        hl_expr e = HL_NONE;
        if (kind == HL_E_NUM) {
            if (get_sv(r, "value", &v)) return r->err->code;
            e = hl_e_num(p, v);
        } else if (kind == HL_E_VAR) {
            if (r->g->n_dims == 0) return rfail(r, LM_EPARSE, "dim", "the graph has no dims");
            if (get_u32(r, "dim", r->g->n_dims - 1, &a)) return r->err->code;
            e = r->g->dims[a].expr;
        } else if (kind == HL_E_Z) {
            e = hl_e_z(p);
        } else {
            if (i == 0) return rfail(r, LM_EPARSE, "kind", "a binary expression comes first");
            if (get_u32(r, "a", i - 1, &a) || get_u32(r, "b", i - 1, &b)) return r->err->code;
            e = hl_e_bin(p, (hl_expr_kind)kind, r->ex[a], r->ex[b]);
        }
        if (e == HL_NONE) {
            if (hl_expr_pool_failed(p)) return ll__oom(r->err, "ll_graph_unpack");
            return rfail(r, LM_EPARSE, "",
                         "the expression cannot be built (a value overflows "
                         "int64, or it exceeds %d nodes)",
                         HL_E_MAX_NODES);
        }
        r->ex[i] = e;
        r->nex = i + 1;
    }
    return 0;
}

static int read_prim(rd *r, ll_node *n)
{
    hl_node *p = &n->prim;
    uint32_t v;
    if (get_u8(r, "prim.op", HL_OP_COUNT - 1, &v)) return r->err->code;
    p->op = (hl_op)v;
    if (get_dtype(r, "prim.dtype", &p->dtype) || get_count(r, "prim.ndim", HL_MAX_DIMS, &p->ndim) ||
        get_refs(r, "prim.shape", p->ndim, p->shape) ||
        get_count(r, "prim.n_in", HL_MAX_INPUTS, &p->n_in))
        return r->err->code;
    for (uint32_t i = 0; i < p->n_in; i++)
        if (get_u32(r, "prim.in.node", r->nn ? r->nn - 1 : 0, &p->in[i].node) ||
            get_view(r, "prim.in.view", &p->in[i].view))
            return r->err->code;
    uint32_t has_name;
    if (get_u8(r, "prim.has_name", 1, &has_name)) return r->err->code;
    if (has_name && get_str(r, "prim.name", 4096, &p->name)) return r->err->code;
    uint32_t cast;
    if (get_u32(r, "prim.index", UINT32_MAX - 1, &p->index) ||
        get_f32(r, "prim.constant", &p->constant) || get_ref(r, "prim.iota_expr", &p->iota_expr) ||
        get_ref(r, "prim.iota_len", &p->iota_len) ||
        get_u8(r, "prim.cast_to", HL_DTYPE_COUNT - 1, &cast) ||
        get_u32(r, "prim.axis", HL_MAX_DIMS - 1, &p->axis) ||
        get_u32(r, "prim.origin", UINT32_MAX, &p->origin))
        return r->err->code;
    p->cast_to = (hl_dtype)cast;
    return 0;
}

static int read_mm(rd *r, ll_node *n)
{
    ll_matmul *m = &n->mm;
    hl_expr e[8];
    uint32_t oa, ob, epi;
    if (get_refs(r, "mm.sizes", 8, e) || get_u8(r, "mm.order_a", 1, &oa) ||
        get_u8(r, "mm.order_b", 1, &ob) || get_f64(r, "mm.alpha", &m->alpha) ||
        get_f64(r, "mm.beta", &m->beta) || get_u8(r, "mm.epilogue", LL_EPI_BIAS_GELU, &epi) ||
        get_dtype(r, "mm.type_a", &m->type_a) || get_dtype(r, "mm.type_b", &m->type_b) ||
        get_dtype(r, "mm.type_c", &m->type_c) || get_dtype(r, "mm.type_d", &m->type_d) ||
        get_dtype(r, "mm.type_bias", &m->type_bias))
        return r->err->code;
    m->m = e[0];
    m->n = e[1];
    m->k = e[2];
    m->batch = e[3];
    m->lda = e[4];
    m->ldb = e[5];
    m->stride_a = e[6];
    m->stride_b = e[7];
    m->order_a = oa ? LL_COL_MAJOR : LL_ROW_MAJOR;
    m->order_b = ob ? LL_COL_MAJOR : LL_ROW_MAJOR;
    m->epilogue = (ll_epilogue)epi;
    return 0;
}

static int read_attn(rd *r, ll_node *n)
{
    ll_attn *a = &n->at;
    uint32_t causal;
    if (get_u32(r, "attn.nlead", HL_MAX_DIMS - 2, &a->nlead) || get_ref(r, "attn.sq", &a->sq) ||
        get_ref(r, "attn.skv", &a->skv) || get_ref(r, "attn.d", &a->d) ||
        get_view(r, "attn.q", &a->q) || get_view(r, "attn.k", &a->k) ||
        get_view(r, "attn.v", &a->v) || get_view(r, "attn.mask", &a->mask) ||
        get_u8(r, "attn.causal", 1, &causal) || get_f64(r, "attn.scale", &a->scale))
        return r->err->code;
    a->causal = causal != 0;
    uint32_t *t[5] = {&a->block_q, &a->block_k, &a->warps, &a->stages, &a->kv_splits};
    static const char *const tn[5] = {"attn.block_q", "attn.block_k", "attn.warps", "attn.stages",
                                      "attn.kv_splits"};
    for (uint32_t i = 0; i < 5; i++) {
        if (get_u32(r, tn[i], 1024, t[i])) return r->err->code;
        if (*t[i] == 0) return rfail(r, LM_EPARSE, tn[i], "must be at least 1");
    }
    return 0;
}

static int read_node(rd *r, uint32_t id, ll_node *n)
{
    snprintf(r->where, sizeof r->where, "node %u", id);
    ll__node_empty(n);
    uint32_t kind, sec, last = r->nn - 1;
    if (get_u8(r, "kind", LL_LOAD, &kind)) return r->err->code;
    n->kind = (ll_kind)kind;
    uint32_t op;
    if (get_u32(r, "op", ll_op_count() - 1, &op)) return r->err->code;
    n->op = (ll_op)op;
    if (get_opt(r, "region", r->nn, &n->region) || get_dtype(r, "dtype", &n->dtype) ||
        get_count(r, "ndim", HL_MAX_DIMS, &n->ndim) || get_refs(r, "shape", n->ndim, n->shape) ||
        get_count(r, "n_in", LL_MAX_IN, &n->n_in))
        return r->err->code;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (get_u32(r, "in", last, &n->in[i]) || get_dtype(r, "in_dtype", &n->in_dtype[i]))
            return r->err->code;
    if (get_opt(r, "eclass", UINT32_MAX, &n->eclass) ||
        get_opt(r, "enode", UINT32_MAX, &n->enode) ||
        get_opt(r, "origin", r->g->n_origins, &n->origin) ||
        get_u8(r, "sections", SEC_PRIM | SEC_MM | SEC_ATTN, &sec))
        return r->err->code;
    if (sec & SEC_PRIM && read_prim(r, n)) return r->err->code;
    if (sec & SEC_MM && read_mm(r, n)) return r->err->code;
    if (sec & SEC_ATTN && read_attn(r, n)) return r->err->code;
    return 0;
}

static int read_nodes(rd *r)
{
    snprintf(r->where, sizeof r->where, "nodes");
    /* a node takes at least 12 bytes */
    if (get_u32(r, "count", (uint32_t)(left(r) / 12), &r->nn)) return r->err->code;
    for (uint32_t id = 0; id < r->nn; id++) {
        ll_node n;
        int rc = read_node(r, id, &n);
        if (!rc) {
            lm_err be = {0};
            if (ll__graph_push(r->g, &n, &be) == LM_NONE)
                rc = rfail(r, be.code == LM_ENOMEM ? LM_ENOMEM : LM_EPARSE, "", "%s", be.msg);
        }
        ll__free(n.prim.name); /* the builder keeps its own copy */
        if (rc) return rc;
    }
    r->where[0] = '\0';
    lm_err fe = {0};
    if (ll__graph_finish(r->g, &fe))
        return rfail(r, fe.code == LM_ENOMEM ? LM_ENOMEM : LM_EPARSE, "nodes", "%s", fe.msg);
    return 0;
}

ll_graph *ll_graph_unpack(const void *buf, size_t len, lm_err *err)
{
    if (lm_err_is_set(err)) return NULL;
    rd r = {.b = buf, .n = len, .err = err};
    if (!buf) {
        ll__fail(err, LM_EARG, NULL, "ll_graph_unpack: no buffer given");
        return NULL;
    }
    if (len < HEADER) {
        rfail(&r, LM_EPARSE, "header", "the buffer holds %zu bytes, less than the %u of a header",
              len, HEADER);
        return NULL;
    }
    if (memcmp(buf, MAGIC, 8) != 0) {
        rfail(&r, LM_EPARSE, "header", "not binary LLIR (the magic \"LLIRbin\" is missing)");
        return NULL;
    }
    r.at = 8;
    uint64_t version, pl, sum;
    get_le(&r, "version", 4, &version);
    get_le(&r, "length", 8, &pl);
    get_le(&r, "checksum", 8, &sum);
    if (version != LL_PACK_VERSION) {
        r.at = 8;
        rfail(&r, LM_EUNSUPPORTED, "version",
              "binary LLIR version %llu; this build reads version %d", (unsigned long long)version,
              LL_PACK_VERSION);
        return NULL;
    }
    if (pl != len - HEADER) {
        r.at = 12;
        rfail(&r, LM_EPARSE, "length",
              "the payload is %llu bytes but the buffer holds %zu after the "
              "header (truncated, or bytes appended)",
              (unsigned long long)pl, len - HEADER);
        return NULL;
    }
    if (XXH3_64bits(r.b + HEADER, len - HEADER) != sum) {
        r.at = 20;
        rfail(&r, LM_EPARSE, "checksum", "the payload does not match its checksum (corrupted)");
        return NULL;
    }
    r.g = ll__graph_alloc(err);
    if (!r.g) return NULL;
    int rc = read_dims(&r);
    if (!rc) rc = read_origins(&r);
    if (!rc) rc = read_exprs(&r);
    if (!rc) rc = read_nodes(&r);
    if (!rc && r.at != r.n)
        rc = rfail(&r, LM_EPARSE, "", "%zu bytes left over after the nodes", r.n - r.at);
    ll__free(r.ex);
    if (!rc) rc = ll_graph_verify(r.g, err);
    if (rc) {
        ll_graph_free(r.g);
        return NULL;
    }
    return r.g;
}
