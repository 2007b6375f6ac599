/* ll_serial.c - the LLIR file: an ll_graph written as JSON and read back.
 *
 * A compiled program keeps its LLIR beside its plan (program/, docs/codegen.md) so that it
 * can run on the CPU executor where there is no GPU. Writing uses only the public read
 * accessors of llir.h; reading builds the graph through the internal builder
 * (ll_build.h), which checks ids and IO indexes; ll_run checks the rest when it runs.
 *
 * The format (version 1), every key in this order:
 *
 *   { "format": "luminal-llir", "version": 1,
 *     "dims":  [ {"name": "n", "lo": 1, "hi": 64, "profile": 8}, ... ],
 *     "nodes": [ { "id": 0, "kind": "input" | "output" | "kernel" | "region" | "library"
 *                                | "fused" | "load",
 *                  "op": "<registered constructor>",
 *                  "region": id                       (interior nodes only)
 *                  "dtype": "f32", "shape": ["n", "4"],
 *                  "in": [ids], "in_dtype": ["f32", ...],
 *                  "prim": { "op": "Add", "dtype": ..., "shape": [...],
 *                            "in": [ {"node": id, "dims": [...], "strides": [...]} ],
 *                            "name", "index"           (Input, Output)
 *                            "constant"                (Constant)
 *                            "iota_expr", "iota_len"   (Iota)
 *                            "cast_to"                 (Cast)
 *                            "axis" }                  (SumReduce, MaxReduce)
 *                                                     (when the node carries a primitive)
 *                  "mm": { "m", "n", "k", "batch", "lda", "ldb", "stride_a", "stride_b",
 *                          "order_a", "order_b", "alpha", "beta", "epilogue",
 *                          "type_a", "type_b", "type_c", "type_d", "type_bias" }
 *                                                     (KMatmul and library calls)
 *                  "attn": { "nlead", "sq", "skv", "d",
 *                            "q", "k", "v", "mask": {"dims": [...], "strides": [...]},
 *                            "causal", "scale", "block_q", "block_k", "warps", "stages",
 *                            "kv_splits" }            (KAttn, KAttnMask)
 *                  "eclass", "enode",                 (when known)
 *                  "origin": "rule 'fuse-add'" }      (the origin's text, when known)
 *              ] }
 *
 * Expressions are hlir's text form (hl_e_print), in terms of the dims (a graph holding
 * "no expression" where one is needed is written with null there, and refused on reading);
 * floats are JSON numbers, or, where JSON has none (infinities, NaN), a string holding
 * the bits in hex ("0x7f800000" for an f32 constant, 16 digits for a double). The same
 * graph gives the same bytes, and a graph read back writes the same bytes again.
 */
#include "ll_build.h"
#include "ll_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LL_FILE_FORMAT "luminal-llir"
#define LL_FILE_VERSION 1

static const char *const KIND_NAMES[] = {"input",   "output", "kernel", "region",
                                         "library", "fused",  "load"};
#define N_KINDS ((uint32_t)(sizeof KIND_NAMES / sizeof KIND_NAMES[0]))

static const char *const ORDER_NAMES[] = {"row", "col"};
static const char *const EPI_NAMES[] = {"none", "bias", "gelu", "bias_gelu"};

/* Whether the node carries an ll_matmul worth writing. */
static bool has_mm(const ll_node *n)
{
    if (n->kind == LL_LIBRARY) return true;
    const ll_op_info *info = n->op < ll_op_count() ? ll_op_get(n->op) : NULL;
    return info && strcmp(info->name, "KMatmul") == 0;
}

/* ==================================================================================
 * Writing
 * ================================================================================== */

typedef struct writer {
    const ll_graph *g;
    const hl_expr_pool *p;
    bool failed; /* out of memory somewhere */
} writer;

static json_t *w_check(writer *w, json_t *v)
{
    if (!v) w->failed = true;
    return v;
}

/* o[key] = v (stolen; NULL marks the writer failed). */
static void put(writer *w, json_t *o, const char *key, json_t *v)
{
    if (!v || !o || json_object_set_new(o, key, v)) w->failed = true;
}

static void push(writer *w, json_t *a, json_t *v)
{
    if (!v || !a || json_array_append_new(a, v)) w->failed = true;
}

static json_t *w_expr(writer *w, hl_expr e)
{
    if (e == HL_NONE || e >= hl_expr_count(w->p)) return w_check(w, json_null());
    char small[256];
    size_t n = hl_e_print(w->p, e, small, sizeof small);
    if (n < sizeof small) return w_check(w, json_string(small));
    char *big = malloc(n + 1);
    if (!big) {
        w->failed = true;
        return NULL;
    }
    hl_e_print(w->p, e, big, n + 1);
    json_t *s = json_string(big);
    free(big);
    return w_check(w, s);
}

static json_t *w_exprs(writer *w, uint32_t n, const hl_expr *e)
{
    json_t *a = w_check(w, json_array());
    for (uint32_t i = 0; i < n && a; i++)
        push(w, a, w_expr(w, e[i]));
    return a;
}

static json_t *w_dtype(writer *w, hl_dtype t)
{
    return w_check(w, json_string(hl_dtype_name(t)));
}

static json_t *w_id(writer *w, uint32_t id)
{
    return w_check(w, json_integer((json_int_t)id));
}

static json_t *w_f32(writer *w, float f)
{
    if (isfinite(f)) return w_check(w, json_real((double)f));
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    char s[16];
    snprintf(s, sizeof s, "0x%08" PRIx32, bits);
    return w_check(w, json_string(s));
}

static json_t *w_f64(writer *w, double d)
{
    if (isfinite(d)) return w_check(w, json_real(d));
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    char s[24];
    snprintf(s, sizeof s, "0x%016" PRIx64, bits);
    return w_check(w, json_string(s));
}

static json_t *w_prim(writer *w, const hl_node *h)
{
    json_t *o = w_check(w, json_object());
    put(w, o, "op", w_check(w, json_string(hl_op_name(h->op))));
    put(w, o, "dtype", w_dtype(w, h->dtype));
    put(w, o, "shape", w_exprs(w, h->ndim <= HL_MAX_DIMS ? h->ndim : 0, h->shape));
    json_t *in = w_check(w, json_array());
    for (uint32_t i = 0; i < h->n_in && i < HL_MAX_INPUTS; i++) {
        const hl_view *v = &h->in[i].view;
        uint32_t nd = v->ndim <= HL_MAX_DIMS ? v->ndim : 0;
        json_t *e = w_check(w, json_object());
        put(w, e, "node", w_id(w, h->in[i].node));
        put(w, e, "dims", w_exprs(w, nd, v->dims));
        put(w, e, "strides", w_exprs(w, nd, v->strides));
        push(w, in, e);
    }
    put(w, o, "in", in);
    switch (h->op) {
    case HL_OP_INPUT:
    case HL_OP_OUTPUT:
        put(w, o, "name", h->name ? w_check(w, json_string(h->name)) : w_check(w, json_null()));
        put(w, o, "index", w_id(w, h->index));
        break;
    case HL_OP_CONSTANT:
        put(w, o, "constant", w_f32(w, h->constant));
        break;
    case HL_OP_IOTA:
        put(w, o, "iota_expr", w_expr(w, h->iota_expr));
        put(w, o, "iota_len", w_expr(w, h->iota_len));
        break;
    case HL_OP_CAST:
        put(w, o, "cast_to", w_dtype(w, h->cast_to));
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        put(w, o, "axis", w_id(w, h->axis));
        break;
    default:
        break;
    }
    return o;
}

static json_t *w_mm(writer *w, const ll_matmul *m)
{
    json_t *o = w_check(w, json_object());
    put(w, o, "m", w_expr(w, m->m));
    put(w, o, "n", w_expr(w, m->n));
    put(w, o, "k", w_expr(w, m->k));
    put(w, o, "batch", w_expr(w, m->batch));
    put(w, o, "lda", w_expr(w, m->lda));
    put(w, o, "ldb", w_expr(w, m->ldb));
    put(w, o, "stride_a", w_expr(w, m->stride_a));
    put(w, o, "stride_b", w_expr(w, m->stride_b));
    put(w, o, "order_a", w_check(w, json_string(ORDER_NAMES[m->order_a == LL_COL_MAJOR])));
    put(w, o, "order_b", w_check(w, json_string(ORDER_NAMES[m->order_b == LL_COL_MAJOR])));
    put(w, o, "alpha", w_f64(w, m->alpha));
    put(w, o, "beta", w_f64(w, m->beta));
    unsigned epi = (unsigned)m->epilogue <= LL_EPI_BIAS_GELU ? (unsigned)m->epilogue : 0;
    put(w, o, "epilogue", w_check(w, json_string(EPI_NAMES[epi])));
    put(w, o, "type_a", w_dtype(w, m->type_a));
    put(w, o, "type_b", w_dtype(w, m->type_b));
    put(w, o, "type_c", w_dtype(w, m->type_c));
    put(w, o, "type_d", w_dtype(w, m->type_d));
    put(w, o, "type_bias", w_dtype(w, m->type_bias));
    return o;
}

static json_t *w_view(writer *w, const hl_view *v)
{
    uint32_t nd = v->ndim <= HL_MAX_DIMS ? v->ndim : 0;
    json_t *e = w_check(w, json_object());
    put(w, e, "dims", w_exprs(w, nd, v->dims));
    put(w, e, "strides", w_exprs(w, nd, v->strides));
    return e;
}

static json_t *w_attn(writer *w, const ll_attn *a)
{
    json_t *o = w_check(w, json_object());
    put(w, o, "nlead", w_id(w, a->nlead));
    put(w, o, "sq", w_expr(w, a->sq));
    put(w, o, "skv", w_expr(w, a->skv));
    put(w, o, "d", w_expr(w, a->d));
    put(w, o, "q", w_view(w, &a->q));
    put(w, o, "k", w_view(w, &a->k));
    put(w, o, "v", w_view(w, &a->v));
    put(w, o, "mask", w_view(w, &a->mask));
    put(w, o, "causal", w_check(w, json_boolean(a->causal)));
    put(w, o, "scale", w_f64(w, a->scale));
    put(w, o, "block_q", w_id(w, a->block_q));
    put(w, o, "block_k", w_id(w, a->block_k));
    put(w, o, "warps", w_id(w, a->warps));
    put(w, o, "stages", w_id(w, a->stages));
    put(w, o, "kv_splits", w_id(w, a->kv_splits));
    return o;
}

static json_t *w_node(writer *w, uint32_t id)
{
    const ll_node *n = ll_graph_node(w->g, id);
    json_t *o = w_check(w, json_object());
    put(w, o, "id", w_id(w, id));
    put(w, o, "kind",
        w_check(w, json_string((unsigned)n->kind < N_KINDS ? KIND_NAMES[n->kind] : "?")));
    const ll_op_info *info = n->op < ll_op_count() ? ll_op_get(n->op) : NULL;
    put(w, o, "op", w_check(w, json_string(info ? info->name : "?")));
    if (n->region != LM_NONE) put(w, o, "region", w_id(w, n->region));
    put(w, o, "dtype", w_dtype(w, n->dtype));
    put(w, o, "shape", w_exprs(w, n->ndim <= HL_MAX_DIMS ? n->ndim : 0, n->shape));
    json_t *in = w_check(w, json_array()), *idt = w_check(w, json_array());
    for (uint32_t i = 0; i < n->n_in && i < LL_MAX_IN; i++) {
        push(w, in, w_id(w, n->in[i]));
        push(w, idt, w_dtype(w, n->in_dtype[i]));
    }
    put(w, o, "in", in);
    put(w, o, "in_dtype", idt);
    if (n->prim.op < HL_OP_COUNT) put(w, o, "prim", w_prim(w, &n->prim));
    if (has_mm(n)) put(w, o, "mm", w_mm(w, &n->mm));
    if (ll_op_is_attn(n->op)) put(w, o, "attn", w_attn(w, &n->at));
    if (n->eclass != LM_NONE) put(w, o, "eclass", w_id(w, n->eclass));
    if (n->enode != LM_NONE) put(w, o, "enode", w_id(w, n->enode));
    if (n->origin != LM_NONE)
        put(w, o, "origin", w_check(w, json_string(ll_graph_origin(w->g, n->origin))));
    return o;
}

char *ll_graph_write_json(const ll_graph *g, lm_err *err)
{
    if (lm_err_is_set(err)) return NULL;
    if (!g) {
        ll__fail(err, LM_EARG, NULL, "llir file: no graph given");
        return NULL;
    }
    writer w = {g, ll_graph_exprs(g), false};
    json_t *root = w_check(&w, json_object());
    put(&w, root, "format", w_check(&w, json_string(LL_FILE_FORMAT)));
    put(&w, root, "version", w_check(&w, json_integer(LL_FILE_VERSION)));
    json_t *dims = w_check(&w, json_array());
    for (uint32_t i = 0; i < ll_graph_dim_count(g); i++) {
        const hl_dim *d = ll_graph_dim_at(g, i);
        json_t *o = w_check(&w, json_object());
        put(&w, o, "name", w_check(&w, json_string(ll_graph_dim_name(g, i))));
        put(&w, o, "lo", w_check(&w, json_integer((json_int_t)d->lo)));
        put(&w, o, "hi", w_check(&w, json_integer((json_int_t)d->hi)));
        put(&w, o, "profile", w_check(&w, json_integer((json_int_t)d->profile)));
        push(&w, dims, o);
    }
    put(&w, root, "dims", dims);
    json_t *nodes = w_check(&w, json_array());
    for (uint32_t i = 0; i < ll_graph_node_count(g) && !w.failed; i++)
        push(&w, nodes, w_node(&w, i));
    put(&w, root, "nodes", nodes);
    char *text = w.failed ? NULL : json_dumps(root, JSON_INDENT(1) | JSON_ENSURE_ASCII);
    json_decref(root);
    if (!text) ll__fail(err, LM_ENOMEM, NULL, "llir file: out of memory writing the graph");
    return text;
}

/* ==================================================================================
 * Reading
 * ================================================================================== */

typedef struct reader {
    const char *source;
    ll_graph *g;
    hl_expr_pool *p;
    uint32_t n_vars; /* the pool's variables: exactly the declared dims */
    lm_err *err;
    char path[192]; /* where in the document, for messages: "nodes[3].prim.in[0]" */
} reader;

static int r_fail(reader *r, int code, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int r_fail(reader *r, int code, const char *field, const char *fmt, ...)
{
    char msg[LM_ERR_MSG / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lm_loc loc = {.file = r->source, .node_id = LM_NONE};
    return ll__fail(r->err, code, &loc, "%s%s%s: %s", r->path, r->path[0] && field ? "." : "",
                    field ? field : "", msg);
}

/* Checks that o has no key outside the space-separated list `known`. */
static int r_keys(reader *r, json_t *o, const char *known)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        (void)v;
        size_t kl = strlen(key);
        bool ok = false;
        for (const char *k = known; *k && !ok;) {
            const char *e = strchr(k, ' ');
            size_t l = e ? (size_t)(e - k) : strlen(k);
            ok = l == kl && strncmp(k, key, l) == 0;
            k += l + (e ? 1 : 0);
        }
        if (!ok) return r_fail(r, LM_EPARSE, key, "unknown key (known: %s)", known);
    }
    return 0;
}

static int r_get(reader *r, json_t *o, const char *key, bool required, json_t **out)
{
    *out = json_object_get(o, key);
    if (!*out && required) return r_fail(r, LM_EPARSE, key, "missing");
    return 0;
}

static int r_int(reader *r, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    *out = 0;
    json_t *v;
    if (r_get(r, o, key, true, &v)) return r->err->code;
    if (!json_is_integer(v)) return r_fail(r, LM_EPARSE, key, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return r_fail(r, LM_EPARSE, key, "%lld is out of range [%lld, %lld]", (long long)x,
                      (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

/* An optional id (absent or null: LM_NONE). */
static int r_opt_id(reader *r, json_t *o, const char *key, uint32_t *out)
{
    json_t *v = json_object_get(o, key);
    *out = LM_NONE;
    if (!v || json_is_null(v)) return 0;
    int64_t x;
    if (r_int(r, o, key, 0, (int64_t)UINT32_MAX - 1, &x)) return r->err->code;
    *out = (uint32_t)x;
    return 0;
}

static int r_str(reader *r, json_t *o, const char *key, const char **out)
{
    *out = "";
    json_t *v;
    if (r_get(r, o, key, true, &v)) return r->err->code;
    if (!json_is_string(v)) return r_fail(r, LM_EPARSE, key, "expected a string");
    *out = json_string_value(v);
    return 0;
}

static int r_dtype_v(reader *r, json_t *v, const char *key, hl_dtype *out)
{
    *out = HL_F32;
    if (!json_is_string(v) || hl_dtype_parse(json_string_value(v), out) != 0)
        return r_fail(r, LM_EPARSE, key, "expected a dtype name (f32, f16, bf16, int, ...)");
    return 0;
}

static int r_dtype(reader *r, json_t *o, const char *key, hl_dtype *out)
{
    *out = HL_F32;
    json_t *v;
    if (r_get(r, o, key, true, &v)) return r->err->code;
    return r_dtype_v(r, v, key, out);
}

static int r_pick(reader *r, json_t *o, const char *key, const char *const *names, uint32_t n,
                  uint32_t *out)
{
    *out = 0;
    const char *s;
    if (r_str(r, o, key, &s)) return r->err->code;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return 0;
        }
    return r_fail(r, LM_EPARSE, key, "\"%.40s\" is not one of the names allowed", s);
}

static int r_expr_v(reader *r, json_t *v, const char *key, hl_expr *out)
{
    *out = HL_NONE;
    if (!json_is_string(v)) return r_fail(r, LM_EPARSE, key, "expected an expression string");
    lm_err he = {0};
    if (hl_e_parse(r->p, json_string_value(v), out, &he) != HL_OK)
        return r_fail(r, he.code == HL_ERR_NOMEM ? LM_ENOMEM : LM_EPARSE, key,
                      "expression \"%.60s\": %s", json_string_value(v), he.msg);
    if (hl_var_count(r->p) != r->n_vars)
        return r_fail(r, LM_EPARSE, key, "expression \"%.60s\" names '%s', which is not a dim",
                      json_string_value(v), hl_var_name(r->p, hl_var_count(r->p) - 1));
    return 0;
}

static int r_expr(reader *r, json_t *o, const char *key, hl_expr *out)
{
    *out = HL_NONE;
    json_t *v;
    if (r_get(r, o, key, true, &v)) return r->err->code;
    return r_expr_v(r, v, key, out);
}

/* An array of at most max expressions; *n receives the count. */
static int r_exprs(reader *r, json_t *o, const char *key, uint32_t max, hl_expr *out, uint32_t *n)
{
    *n = 0;
    json_t *a;
    if (r_get(r, o, key, true, &a)) return r->err->code;
    if (!json_is_array(a) || json_array_size(a) > max)
        return r_fail(r, LM_EPARSE, key, "expected an array of at most %u expressions", max);
    *n = (uint32_t)json_array_size(a);
    for (uint32_t i = 0; i < *n; i++) {
        char k[48];
        snprintf(k, sizeof k, "%s[%u]", key, i);
        if (r_expr_v(r, json_array_get(a, i), k, &out[i])) return r->err->code;
    }
    return 0;
}

static int r_f(reader *r, json_t *o, const char *key, bool single, double *out)
{
    *out = 0;
    json_t *v;
    if (r_get(r, o, key, true, &v)) return r->err->code;
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    char *end = NULL;
    unsigned long long bits = strncmp(s, "0x", 2) == 0 ? strtoull(s + 2, &end, 16) : 0;
    if (!end || *end || strlen(s) != (single ? 10u : 18u))
        return r_fail(r, LM_EPARSE, key, "expected a number or its bits as \"0x%s\"",
                      single ? "XXXXXXXX" : "XXXXXXXXXXXXXXXX");
    if (single) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        *out = (double)f;
    } else {
        memcpy(out, &bits, sizeof *out);
    }
    return 0;
}

static void set_path(reader *r, const char *fmt, uint32_t i, const char *sub)
{
    snprintf(r->path, sizeof r->path, fmt, i, sub ? sub : "");
}

static int r_view(reader *r, json_t *e, hl_in *in, uint32_t node, uint32_t i)
{
    char p[96];
    snprintf(p, sizeof p, "nodes[%u].prim.in[%u]", node, i);
    snprintf(r->path, sizeof r->path, "%s", p);
    if (!json_is_object(e)) return r_fail(r, LM_EPARSE, NULL, "expected an object");
    if (r_keys(r, e, "node dims strides")) return r->err->code;
    int64_t x;
    if (r_int(r, e, "node", 0, (int64_t)UINT32_MAX - 1, &x)) return r->err->code;
    in->node = (uint32_t)x;
    uint32_t nd, ns;
    if (r_exprs(r, e, "dims", HL_MAX_DIMS, in->view.dims, &nd) ||
        r_exprs(r, e, "strides", HL_MAX_DIMS, in->view.strides, &ns))
        return r->err->code;
    if (nd != ns) return r_fail(r, LM_EPARSE, "strides", "%u strides for %u dims", ns, nd);
    in->view.ndim = nd;
    return 0;
}

static int r_prim(reader *r, json_t *o, hl_node *h, uint32_t node)
{
    set_path(r, "nodes[%u].prim%s", node, NULL);
    if (!json_is_object(o)) return r_fail(r, LM_EPARSE, NULL, "expected an object");
    if (r_keys(r, o, "op dtype shape in name index constant iota_expr iota_len cast_to axis"))
        return r->err->code;
    const char *op;
    if (r_str(r, o, "op", &op)) return r->err->code;
    if (hl_op_parse(op, &h->op) != 0)
        return r_fail(r, LM_EPARSE, "op", "\"%.40s\" is not an HLIR primitive", op);
    if (r_dtype(r, o, "dtype", &h->dtype) ||
        r_exprs(r, o, "shape", HL_MAX_DIMS, h->shape, &h->ndim))
        return r->err->code;
    json_t *in;
    if (r_get(r, o, "in", true, &in)) return r->err->code;
    if (!json_is_array(in) || json_array_size(in) > HL_MAX_INPUTS)
        return r_fail(r, LM_EPARSE, "in", "expected an array of at most %d inputs", HL_MAX_INPUTS);
    h->n_in = (uint32_t)json_array_size(in);
    for (uint32_t i = 0; i < h->n_in; i++)
        if (r_view(r, json_array_get(in, i), &h->in[i], node, i)) return r->err->code;
    set_path(r, "nodes[%u].prim%s", node, NULL);
    int64_t x;
    switch (h->op) {
    case HL_OP_INPUT:
    case HL_OP_OUTPUT: {
        json_t *nm;
        if (r_get(r, o, "name", true, &nm)) return r->err->code;
        if (!json_is_null(nm) && !json_is_string(nm))
            return r_fail(r, LM_EPARSE, "name", "expected a string or null");
        h->name = json_is_string(nm) ? (char *)json_string_value(nm) : NULL; /* copied by push */
        if (r_int(r, o, "index", 0, (int64_t)UINT32_MAX - 1, &x)) return r->err->code;
        h->index = (uint32_t)x;
        break;
    }
    case HL_OP_CONSTANT: {
        double d;
        if (r_f(r, o, "constant", true, &d)) return r->err->code;
        h->constant = (float)d;
        break;
    }
    case HL_OP_IOTA:
        if (r_expr(r, o, "iota_expr", &h->iota_expr) || r_expr(r, o, "iota_len", &h->iota_len))
            return r->err->code;
        break;
    case HL_OP_CAST:
        if (r_dtype(r, o, "cast_to", &h->cast_to)) return r->err->code;
        break;
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        if (r_int(r, o, "axis", 0, HL_MAX_DIMS - 1, &x)) return r->err->code;
        h->axis = (uint32_t)x;
        break;
    default:
        break;
    }
    return 0;
}

static int r_mm(reader *r, json_t *o, ll_matmul *m, uint32_t node)
{
    set_path(r, "nodes[%u].mm%s", node, NULL);
    if (!json_is_object(o)) return r_fail(r, LM_EPARSE, NULL, "expected an object");
    if (r_keys(r, o,
               "m n k batch lda ldb stride_a stride_b order_a order_b alpha beta epilogue "
               "type_a type_b type_c type_d type_bias"))
        return r->err->code;
    uint32_t oa = 0, ob = 0, epi = 0;
    if (r_expr(r, o, "m", &m->m) || r_expr(r, o, "n", &m->n) || r_expr(r, o, "k", &m->k) ||
        r_expr(r, o, "batch", &m->batch) || r_expr(r, o, "lda", &m->lda) ||
        r_expr(r, o, "ldb", &m->ldb) || r_expr(r, o, "stride_a", &m->stride_a) ||
        r_expr(r, o, "stride_b", &m->stride_b) || r_pick(r, o, "order_a", ORDER_NAMES, 2, &oa) ||
        r_pick(r, o, "order_b", ORDER_NAMES, 2, &ob) || r_f(r, o, "alpha", false, &m->alpha) ||
        r_f(r, o, "beta", false, &m->beta) || r_pick(r, o, "epilogue", EPI_NAMES, 4, &epi) ||
        r_dtype(r, o, "type_a", &m->type_a) || r_dtype(r, o, "type_b", &m->type_b) ||
        r_dtype(r, o, "type_c", &m->type_c) || r_dtype(r, o, "type_d", &m->type_d) ||
        r_dtype(r, o, "type_bias", &m->type_bias))
        return r->err->code;
    m->order_a = oa ? LL_COL_MAJOR : LL_ROW_MAJOR;
    m->order_b = ob ? LL_COL_MAJOR : LL_ROW_MAJOR;
    m->epilogue = (ll_epilogue)epi;
    return 0;
}

static int r_aview(reader *r, json_t *o, const char *key, hl_view *v, uint32_t node)
{
    json_t *e;
    if (r_get(r, o, key, true, &e)) return r->err->code;
    snprintf(r->path, sizeof r->path, "nodes[%u].attn.%s", node, key);
    if (!json_is_object(e)) return r_fail(r, LM_EPARSE, NULL, "expected an object");
    if (r_keys(r, e, "dims strides")) return r->err->code;
    uint32_t nd, ns;
    if (r_exprs(r, e, "dims", HL_MAX_DIMS, v->dims, &nd) ||
        r_exprs(r, e, "strides", HL_MAX_DIMS, v->strides, &ns))
        return r->err->code;
    if (nd != ns) return r_fail(r, LM_EPARSE, "strides", "%u strides for %u dims", ns, nd);
    v->ndim = nd;
    set_path(r, "nodes[%u].attn%s", node, NULL);
    return 0;
}

static int r_attn(reader *r, json_t *o, ll_attn *a, uint32_t node)
{
    set_path(r, "nodes[%u].attn%s", node, NULL);
    if (!json_is_object(o)) return r_fail(r, LM_EPARSE, NULL, "expected an object");
    if (r_keys(r, o,
               "nlead sq skv d q k v mask causal scale block_q block_k warps stages kv_splits"))
        return r->err->code;
    int64_t x[6];
    static const char *ik[6] = {"nlead", "block_q", "block_k", "warps", "stages", "kv_splits"};
    for (uint32_t i = 0; i < 6; i++)
        if (r_int(r, o, ik[i], i ? 1 : 0, i ? 1024 : HL_MAX_DIMS - 2, &x[i])) return r->err->code;
    json_t *c;
    if (r_get(r, o, "causal", true, &c)) return r->err->code;
    if (!json_is_boolean(c)) return r_fail(r, LM_EPARSE, "causal", "expected true or false");
    if (r_expr(r, o, "sq", &a->sq) || r_expr(r, o, "skv", &a->skv) || r_expr(r, o, "d", &a->d) ||
        r_f(r, o, "scale", false, &a->scale) || r_aview(r, o, "q", &a->q, node) ||
        r_aview(r, o, "k", &a->k, node) || r_aview(r, o, "v", &a->v, node) ||
        r_aview(r, o, "mask", &a->mask, node))
        return r->err->code;
    a->nlead = (uint32_t)x[0];
    a->block_q = (uint32_t)x[1];
    a->block_k = (uint32_t)x[2];
    a->warps = (uint32_t)x[3];
    a->stages = (uint32_t)x[4];
    a->kv_splits = (uint32_t)x[5];
    a->causal = json_is_true(c);
    return 0;
}

static int r_node(reader *r, json_t *o, uint32_t id)
{
    set_path(r, "nodes[%u]%s", id, NULL);
    if (!json_is_object(o)) return r_fail(r, LM_EPARSE, NULL, "expected an object");
    if (r_keys(r, o, "id kind op region dtype shape in in_dtype prim mm attn eclass enode origin"))
        return r->err->code;
    ll_node n;
    ll__node_empty(&n);
    int64_t x;
    if (r_int(r, o, "id", 0, (int64_t)UINT32_MAX - 1, &x)) return r->err->code;
    if ((uint32_t)x != id)
        return r_fail(r, LM_EPARSE, "id", "node %lld listed at position %u", (long long)x, id);
    uint32_t kind = 0;
    if (r_pick(r, o, "kind", KIND_NAMES, N_KINDS, &kind)) return r->err->code;
    n.kind = (ll_kind)kind;
    const char *op;
    if (r_str(r, o, "op", &op)) return r->err->code;
    n.op = ll_op_find(op);
    if (n.op == LL_OP_NONE)
        return r_fail(r, LM_EPARSE, "op", "\"%.40s\" is not a registered LLIR op", op);
    if (r_opt_id(r, o, "region", &n.region) || r_dtype(r, o, "dtype", &n.dtype) ||
        r_exprs(r, o, "shape", HL_MAX_DIMS, n.shape, &n.ndim))
        return r->err->code;
    json_t *in, *idt;
    if (r_get(r, o, "in", true, &in) || r_get(r, o, "in_dtype", true, &idt)) return r->err->code;
    if (!json_is_array(in) || json_array_size(in) > LL_MAX_IN)
        return r_fail(r, LM_EPARSE, "in", "expected an array of at most %d node ids", LL_MAX_IN);
    if (!json_is_array(idt) || json_array_size(idt) != json_array_size(in))
        return r_fail(r, LM_EPARSE, "in_dtype", "expected one dtype per input");
    n.n_in = (uint32_t)json_array_size(in);
    for (uint32_t i = 0; i < n.n_in; i++) {
        json_t *v = json_array_get(in, i);
        char k[24];
        snprintf(k, sizeof k, "in[%u]", i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= (json_int_t)UINT32_MAX)
            return r_fail(r, LM_EPARSE, k, "expected a node id");
        n.in[i] = (uint32_t)json_integer_value(v);
        snprintf(k, sizeof k, "in_dtype[%u]", i);
        if (r_dtype_v(r, json_array_get(idt, i), k, &n.in_dtype[i])) return r->err->code;
    }
    if (r_opt_id(r, o, "eclass", &n.eclass) || r_opt_id(r, o, "enode", &n.enode))
        return r->err->code;
    json_t *origin = json_object_get(o, "origin");
    if (origin) {
        if (!json_is_string(origin))
            return r_fail(r, LM_EPARSE, "origin", "expected the text of a rule or command");
        lm_err oe = {0};
        n.origin = ll__graph_add_origin(r->g, json_string_value(origin), &oe);
        if (n.origin == LM_NONE) return r_fail(r, LM_ENOMEM, "origin", "%s", oe.msg);
    }
    json_t *prim = json_object_get(o, "prim"), *mm = json_object_get(o, "mm");
    if (prim && r_prim(r, prim, &n.prim, id)) return r->err->code;
    if (mm && r_mm(r, mm, &n.mm, id)) return r->err->code;
    json_t *attn = json_object_get(o, "attn");
    if (attn && r_attn(r, attn, &n.at, id)) return r->err->code;
    set_path(r, "nodes[%u]%s", id, NULL);
    lm_err be = {0};
    if (ll__graph_push(r->g, &n, &be) == LM_NONE)
        return r_fail(r, be.code == LM_ENOMEM ? LM_ENOMEM : LM_EPARSE, NULL, "%s", be.msg);
    return 0;
}

ll_graph *ll_graph_read_json(const char *text, size_t len, const char *source, lm_err *err)
{
    if (lm_err_is_set(err)) return NULL;
    source = source ? source : "<llir>";
    if (!text) {
        ll__fail(err, LM_EARG, NULL, "llir file %s: no text given", source);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        lm_loc loc = {.file = source,
                      .line = je.line > 0 ? (uint32_t)je.line : 0,
                      .col = je.column > 0 ? (uint32_t)je.column : 0,
                      .node_id = LM_NONE};
        ll__fail(err, LM_EPARSE, &loc, "malformed JSON: %s", je.text);
        return NULL;
    }
    reader r = {.source = source, .err = err};
    r.g = ll__graph_alloc(err);
    if (!r.g) goto fail;
    r.p = ll__graph_pool(r.g);
    if (!json_is_object(root)) {
        r_fail(&r, LM_EPARSE, NULL, "the document must be a JSON object");
        goto fail;
    }
    const char *fmt;
    int64_t version;
    if (r_keys(&r, root, "format version dims nodes") || r_str(&r, root, "format", &fmt)) goto fail;
    if (strcmp(fmt, LL_FILE_FORMAT) != 0) {
        r_fail(&r, LM_EPARSE, "format", "expected \"%s\", got \"%.40s\"", LL_FILE_FORMAT, fmt);
        goto fail;
    }
    if (r_int(&r, root, "version", INT64_MIN, INT64_MAX, &version)) goto fail;
    if (version != LL_FILE_VERSION) {
        r_fail(&r, LM_EUNSUPPORTED, "version",
               "LLIR file version %lld; this build reads version %d", (long long)version,
               LL_FILE_VERSION);
        goto fail;
    }
    json_t *dims, *nodes;
    if (r_get(&r, root, "dims", true, &dims) || r_get(&r, root, "nodes", true, &nodes)) goto fail;
    if (!json_is_array(dims)) {
        r_fail(&r, LM_EPARSE, "dims", "expected an array");
        goto fail;
    }
    for (uint32_t i = 0; i < json_array_size(dims); i++) {
        json_t *d = json_array_get(dims, i);
        set_path(&r, "dims[%u]%s", i, NULL);
        const char *name;
        int64_t lo, hi, prof;
        if (!json_is_object(d)) {
            r_fail(&r, LM_EPARSE, NULL, "expected an object");
            goto fail;
        }
        if (r_keys(&r, d, "name lo hi profile") || r_str(&r, d, "name", &name) ||
            r_int(&r, d, "lo", INT64_MIN, INT64_MAX, &lo) ||
            r_int(&r, d, "hi", INT64_MIN, INT64_MAX, &hi) ||
            r_int(&r, d, "profile", INT64_MIN, INT64_MAX, &prof))
            goto fail;
        lm_err de = {0};
        if (ll__graph_add_dim(r.g, name, lo, hi, prof, &de) == LM_NONE) {
            r_fail(&r, de.code == LM_ENOMEM ? LM_ENOMEM : LM_EPARSE, NULL, "%s", de.msg);
            goto fail;
        }
    }
    r.n_vars = hl_var_count(r.p);
    r.path[0] = '\0';
    if (!json_is_array(nodes)) {
        r_fail(&r, LM_EPARSE, "nodes", "expected an array");
        goto fail;
    }
    for (uint32_t i = 0; i < json_array_size(nodes); i++)
        if (r_node(&r, json_array_get(nodes, i), i)) goto fail;
    r.path[0] = '\0';
    lm_err fe = {0};
    if (ll__graph_finish(r.g, &fe)) {
        r_fail(&r, fe.code == LM_ENOMEM ? LM_ENOMEM : LM_EPARSE, "nodes", "%s", fe.msg);
        goto fail;
    }
    json_decref(root);
    return r.g;
fail:
    json_decref(root);
    ll_graph_free(r.g);
    return NULL;
}
