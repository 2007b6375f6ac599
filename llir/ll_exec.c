/* ll_exec.c - the CPU executor of LLIR (ll_run): the run's checks, its memory plan,
 * buffers and their lifetimes, standalone kernels and outputs. Regions are in
 * ll_exec_region.c, matmuls in ll_exec_mm.c, attention in ll_exec_attn.c, operands and
 * one-primitive runs in ll_exec_operand.c; ll_exec_int.h says how they share this.
 *
 * A run goes in phases, and allocates no tensor before the last check:
 *   1. arguments and dim values; the structure the executor relies on (top-level nodes
 *      read earlier top-level nodes, interior nodes read their own region, each region's
 *      root is one of its interior nodes): LM_EVERIFY naming the node otherwise
 *   2. every node's shape evaluated; the caller's inputs checked against theirs
 *   3. the memory plan: every buffer's size and lifetime (freed after its last reader),
 *      each node's working memory; with mem_limit > 0 a peak above it is refused
 *   4. the nodes in id order; each buffer freed after its last reader
 *   5. the outputs handed to the caller
 * On failure nothing is left allocated and the outputs are zeroed. */
#include "ll_exec_int.h"

#include <inttypes.h>
#include <string.h>

/* ---- standalone kernels and outputs ---- */

static int exec_prim(ll_exec *x, uint32_t id)
{
    const ll_node *n = ll_graph_node(x->g, id);
    hl_node spec = n->prim;
    if (n->kind == LL_OUTPUT) { /* an output's primitive holds only the view it reads */
        memset(&spec, 0, sizeof spec);
        spec.op = HL_OP_OUTPUT;
        spec.n_in = 1;
        spec.in[0].view = n->prim.in[0].view;
    }
    hl_op want = n->kind == LL_OUTPUT ? HL_OP_OUTPUT : ll__op_prim(n->op);
    if (spec.op != want)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "the op computes %s but the node's primitive is %s",
                             want == HL_OP_COUNT ? "no primitive" : hl_op_name(want),
                             (unsigned)spec.op < HL_OP_COUNT ? hl_op_name(spec.op) : "none");
    if (spec.n_in != n->n_in)
        return ll__fail_node(x->err, LM_EVERIFY, x->g, id,
                             "has %u inputs but its primitive reads %u", n->n_in, spec.n_in);
    hl_tensor ins[LL_MAX_IN];
    bool copied[LL_MAX_IN] = {false};
    uint32_t ids[LL_MAX_IN] = {0};
    int rc = 0;
    hl_graph *hg = ll__x_mini_new(x, id);
    if (!hg) return x->err->code;
    uint32_t k = 0;
    for (; k < n->n_in && !rc; k++) {
        uint32_t src = n->in[k];
        rc = ll__x_operand(x, id, src, n->in_dtype[k], x->numel[src], &ins[k], &copied[k]);
        if (!rc) rc = ll__x_mini_input(x, id, hg, k, n->in_dtype[k], x->numel[src], &ids[k]);
    }
    uint32_t node;
    if (!rc) rc = ll__x_mini_prim(x, id, hg, &spec, ids, &node);
    if (!rc && n->kind != LL_OUTPUT) {
        uint32_t o = hl_output(hg, "out", hl_node_tensor(hg, node));
        if (o == HL_NONE || hl_graph_error(hg)->code != 0) rc = ll__x_mini_fail(x, id, hg);
    }
    if (!rc) {
        rc = ll__x_mini_run(x, id, hg, ins);
        hg = NULL;
    }
    hl_graph_free(hg);
    for (uint32_t i = 0; i < k; i++)
        if (copied[i]) hl_tensor_fini(&ins[i]);
    return rc;
}

/* ---- phase 1: the structure ---- */

static bool is_matmul(const ll_node *n)
{
    return n->kind == LL_LIBRARY || (n->kind == LL_KERNEL && ll__op_prim(n->op) == HL_OP_COUNT &&
                                      !ll_op_is_attn(n->op));
}

static int check_structure(ll_exec *x)
{
    const ll_graph *g = x->g;
    for (uint32_t id = 0; id < x->n; id++) {
        const ll_node *n = ll_graph_node(g, id);
        if ((unsigned)n->dtype >= HL_DTYPE_COUNT || n->n_in > LL_MAX_IN || n->ndim > HL_MAX_DIMS)
            return ll__fail_node(x->err, LM_EVERIFY, g, id, "dtype, inputs or dims out of range");
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t s = n->in[i];
            if (s >= x->n || (unsigned)n->in_dtype[i] >= HL_DTYPE_COUNT)
                return ll__fail_node(x->err, LM_EVERIFY, g, id,
                                     "input %u (node %u) or its dtype is out of range", i, s);
        }
        bool interior = n->region != LM_NONE;
        if (interior != (n->kind == LL_FUSED || n->kind == LL_LOAD))
            return ll__fail_node(x->err, LM_EVERIFY, g, id, "a %s node %s a region",
                                 ll__kind_name(n->kind), interior ? "inside" : "outside");
        if (!interior) {
            for (uint32_t i = 0; i < n->n_in; i++) {
                uint32_t s = n->in[i];
                const ll_node *m = ll_graph_node(g, s);
                if (n->kind == LL_REGION && i == 0) {
                    if (m->region != id)
                        return ll__fail_node(x->err, LM_EVERIFY, g, id,
                                             "its root (node %u) is not one of its interior "
                                             "nodes",
                                             s);
                } else if (s >= id || m->region != LM_NONE) {
                    return ll__fail_node(x->err, LM_EVERIFY, g, id,
                                         "input %u (node %u) is not an earlier top-level node", i,
                                         s);
                }
            }
            if (n->kind == LL_REGION && n->n_in != 1)
                return ll__fail_node(x->err, LM_EVERIFY, g, id,
                                     "a region reads its root only, not %u nodes", n->n_in);
            if (n->kind == LL_INPUT && n->n_in != 0)
                return ll__fail_node(x->err, LM_EVERIFY, g, id, "an input reads nothing");
            if (n->kind == LL_OUTPUT && n->n_in != 1)
                return ll__fail_node(x->err, LM_EVERIFY, g, id, "an output reads one node");
            continue;
        }
        uint32_t R = n->region;
        if (R >= id || ll_graph_node(g, R)->kind != LL_REGION)
            return ll__fail_node(x->err, LM_EVERIFY, g, id,
                                 "its region (node %u) is not an earlier region node", R);
        if (n->kind == LL_LOAD) {
            uint32_t s = n->in[0];
            if (n->n_in != 1 || s >= R || ll_graph_node(g, s)->region != LM_NONE)
                return ll__fail_node(x->err, LM_EVERIFY, g, id,
                                     "a load reads one top-level node computed before its "
                                     "region");
            continue;
        }
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t s = n->in[i];
            if (s >= id || ll_graph_node(g, s)->region != R)
                return ll__fail_node(x->err, LM_EVERIFY, g, id,
                                     "input %u (node %u) is not an earlier node of its region "
                                     "%u",
                                     i, s, R);
        }
    }
    return 0;
}

/* ---- phase 2: shapes and inputs ---- */

static int eval_shapes(ll_exec *x)
{
    for (uint32_t id = 0; id < x->n; id++) {
        const ll_node *n = ll_graph_node(x->g, id);
        int64_t *d = x->dims + (size_t)id * HL_MAX_DIMS;
        for (uint32_t k = 0; k < n->ndim; k++) {
            char what[200];
            ll__node_desc(x->g, id, what, sizeof what);
            size_t len = strlen(what);
            snprintf(what + len, sizeof what - len, ": dim %u of its shape", k);
            if (ll__hl_eval(x->p, n->shape[k], &x->env, 0, &d[k], what, x->err))
                return x->err->code;
            if (d[k] < 0)
                return ll__fail_node(x->err, LM_ERUNTIME, x->g, id,
                                     "dim %u of its shape is negative (%" PRId64 ")", k, d[k]);
        }
        if (!ll__numel(n->ndim, d, &x->numel[id]) ||
            x->numel[id] > SIZE_MAX / 8) /* bytes of any dtype fit size_t */
            return ll__fail_node(x->err, LM_ELIMIT, x->g, id, "its shape is too large");
    }
    return 0;
}

static void fmt_dims(const int64_t *d, uint32_t ndim, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < ndim && k < cap; i++) {
        int w = snprintf(buf + k, cap - k, "%s%" PRId64, i ? ", " : "", d[i]);
        if (w < 0) break;
        k += (size_t)w;
    }
}

static int bind_inputs(ll_exec *x, const hl_tensor *inputs)
{
    for (uint32_t i = 0; i < ll_graph_input_count(x->g); i++) {
        uint32_t id = ll_graph_input(x->g, i);
        const ll_node *n = ll_graph_node(x->g, id);
        const hl_tensor *t = &inputs[i];
        const int64_t *d = ll__x_dims(x, id);
        bool ok = t->dtype == n->dtype && t->ndim == n->ndim && t->data != NULL &&
                  t->numel == x->numel[id];
        for (uint32_t k = 0; ok && k < n->ndim; k++)
            ok = t->dims[k] == d[k];
        if (!ok) {
            char want[128], got[128];
            fmt_dims(d, n->ndim, want, sizeof want);
            fmt_dims(t->dims, t->ndim <= HL_MAX_DIMS ? t->ndim : HL_MAX_DIMS, got, sizeof got);
            return ll__fail_node(x->err, LM_ESHAPE, x->g, id,
                                 "input %u '%s' must be %s [%s]; given %s [%s]%s", i,
                                 n->prim.name ? n->prim.name : "", hl_dtype_name(n->dtype), want,
                                 hl_dtype_name(t->dtype), got, t->data ? "" : " with no data");
        }
        x->buf[id] = *t;
        x->owned[id] = false;
    }
    return 0;
}

/* ---- phase 3: the memory plan ---- */

static size_t sat_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t out_bytes(const ll_exec *x, uint32_t id)
{
    return x->numel[id] * hl_dtype_size(ll_graph_node(x->g, id)->dtype);
}

/* Working memory of top-level node id besides its own result. */
static size_t work_bytes(const ll_exec *x, uint32_t id)
{
    const ll_node *n = ll_graph_node(x->g, id);
    switch (n->kind) {
    case LL_REGION:
        return ll__x_region_work(x, id);
    case LL_LIBRARY:
        return ll__x_matmul_work(x, id);
    case LL_KERNEL:
        if (is_matmul(n)) return ll__x_matmul_work(x, id);
        if (ll_op_is_attn(n->op)) return ll__x_attn_work(x, id);
        /* fall through */
    case LL_OUTPUT: { /* hlir's result and its Output copy, and reinterpreting copies */
        size_t w = out_bytes(x, id);
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t s = n->in[i];
            hl_dtype sdt = ll_graph_node(x->g, s)->dtype;
            size_t c = x->numel[s];
            if (sdt != n->in_dtype[i]) w = sat_add(w, c * hl_dtype_size(n->in_dtype[i]));
        }
        return w;
    }
    default:
        return 0;
    }
}

static void fmt_bytes(size_t b, char *buf, size_t cap)
{
    if (b >= (1u << 30))
        snprintf(buf, cap, "%.1f GiB", (double)b / (double)(1u << 30));
    else if (b >= (1u << 20))
        snprintf(buf, cap, "%.1f MiB", (double)b / (double)(1u << 20));
    else if (b >= 1024)
        snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, cap, "%zu bytes", b);
}

/* The largest buffers, for the refusal's message. */
static void name_largest(const ll_exec *x, char *buf, size_t cap)
{
    enum { TOP = 3 };
    uint32_t top[TOP];
    uint32_t nt = 0;
    for (uint32_t id = 0; id < x->n; id++) {
        if (ll_graph_node(x->g, id)->region != LM_NONE) continue;
        size_t b = out_bytes(x, id);
        uint32_t pos = nt;
        while (pos > 0 && out_bytes(x, top[pos - 1]) < b) /* ties keep the lower id first */
            pos--;
        if (pos >= TOP) continue;
        if (nt < TOP) nt++;
        for (uint32_t k = nt - 1; k > pos; k--)
            top[k] = top[k - 1];
        top[pos] = id;
    }
    size_t k = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < nt && k < cap; i++) {
        uint32_t id = top[i];
        const ll_node *n = ll_graph_node(x->g, id);
        char dims[96], bytes[32];
        fmt_dims(ll__x_dims(x, id), n->ndim, dims, sizeof dims);
        fmt_bytes(out_bytes(x, id), bytes, sizeof bytes);
        int w = snprintf(buf + k, cap - k, "%snode %u (%s) %s [%s] %s", i ? "; " : "", id,
                         ll__op_name(n->op), hl_dtype_name(n->dtype), dims, bytes);
        if (w < 0) break;
        k += (size_t)w;
    }
}

/* last[id]: the last top-level node reading id (a load counts as its region). */
static void last_readers(const ll_exec *x, uint32_t *last)
{
    for (uint32_t id = 0; id < x->n; id++)
        last[id] = id;
    for (uint32_t id = 0; id < x->n; id++) {
        const ll_node *n = ll_graph_node(x->g, id);
        uint32_t reader = n->region == LM_NONE ? id : n->region;
        if (n->kind == LL_REGION) continue; /* its in[0] is interior */
        if (n->region != LM_NONE && n->kind != LL_LOAD) continue;
        for (uint32_t i = 0; i < n->n_in; i++)
            if (last[n->in[i]] < reader) last[n->in[i]] = reader;
    }
}

static int plan_memory(ll_exec *x, const uint32_t *last, uint64_t mem_limit)
{
    if (mem_limit == 0) return 0;
    size_t live = 0, peak = 0;
    uint32_t peak_at = 0;
    for (uint32_t id = 0; id < x->n; id++) {
        const ll_node *n = ll_graph_node(x->g, id);
        if (n->region != LM_NONE) continue;
        if (n->kind != LL_INPUT) live = sat_add(live, out_bytes(x, id));
        size_t now = sat_add(live, work_bytes(x, id));
        if (now > peak) {
            peak = now;
            peak_at = id;
        }
        for (uint32_t s = 0; s <= id; s++) { /* buffers whose last reader ran */
            const ll_node *m = ll_graph_node(x->g, s);
            if (last[s] == id && m->region == LM_NONE && m->kind != LL_INPUT &&
                m->kind != LL_OUTPUT)
                live -= out_bytes(x, s) <= live ? out_bytes(x, s) : live;
        }
    }
    if ((uint64_t)peak <= mem_limit) return 0;
    char largest[600], pb[32], lb[32];
    name_largest(x, largest, sizeof largest);
    fmt_bytes(peak, pb, sizeof pb);
    fmt_bytes((size_t)(mem_limit < SIZE_MAX ? mem_limit : SIZE_MAX), lb, sizeof lb);
    char desc[160];
    ll__node_desc(x->g, peak_at, desc, sizeof desc);
    return ll__fail(x->err, LM_ELIMIT, NULL,
                    "ll_run: the run's buffers need %s at their peak (at %s), more than the "
                    "memory limit of %s; the largest tensors: %s",
                    pb, desc, lb, largest);
}

/* ---- the run ---- */

static int exec_node(ll_exec *x, uint32_t id)
{
    const ll_node *n = ll_graph_node(x->g, id);
    switch (n->kind) {
    case LL_INPUT:
        return 0; /* bound before the run */
    case LL_OUTPUT:
        return exec_prim(x, id);
    case LL_KERNEL:
        if (ll_op_is_attn(n->op)) return ll__x_attn(x, id);
        return is_matmul(n) ? ll__x_matmul(x, id) : exec_prim(x, id);
    case LL_LIBRARY:
        return ll__x_matmul(x, id);
    case LL_REGION:
        return ll__x_region(x, id);
    default:
        return 0; /* interior nodes run with their region */
    }
}

int ll_run(const ll_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
           hl_tensor *outputs, uint64_t mem_limit, lm_err *err)
{
    lm_err local = {0};
    if (!err) err = &local;
    if (!g) return ll__fail(err, LM_EARG, NULL, "ll_run: no graph");
    uint32_t n = ll_graph_node_count(g), nout = ll_graph_output_count(g);
    uint32_t ndims = ll_graph_dim_count(g);
    if ((!outputs && nout) || (!inputs && ll_graph_input_count(g)))
        return ll__fail(err, LM_EARG, NULL,
                        "ll_run: the graph has %u inputs and %u outputs; pass arrays for them",
                        ll_graph_input_count(g), nout);
    for (uint32_t i = 0; i < nout; i++)
        memset(&outputs[i], 0, sizeof outputs[i]);
    ll_exec x = {0};
    x.g = g;
    x.p = ll_graph_exprs(g);
    x.n = n;
    x.err = err;
    uint32_t nvars = hl_var_count(x.p);
    int64_t *dimv = ll__zalloc(ndims ? ndims : 1, sizeof(int64_t));
    int64_t *vals = ll__zalloc(nvars ? nvars : 1, sizeof(int64_t));
    bool *bound = ll__zalloc(nvars ? nvars : 1, sizeof(bool));
    x.dims = ll__zalloc((size_t)(n ? n : 1) * HL_MAX_DIMS, sizeof(int64_t));
    x.numel = ll__zalloc(n ? n : 1, sizeof(size_t));
    x.buf = ll__zalloc(n ? n : 1, sizeof(hl_tensor));
    x.owned = ll__zalloc(n ? n : 1, sizeof(bool));
    x.mini = ll__zalloc(n ? n : 1, sizeof(uint32_t));
    uint32_t *last = ll__zalloc(n ? n : 1, sizeof(uint32_t));
    int rc = 0;
    if (!dimv || !vals || !bound || !x.dims || !x.numel || !x.buf || !x.owned || !x.mini || !last) {
        rc = ll__fail(err, LM_ENOMEM, NULL, "ll_run: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < ndims; i++) {
        const hl_dim *d = ll_graph_dim_at(g, i);
        int64_t v = dim_values ? dim_values[i] : d->profile;
        if (v < d->lo || v > d->hi) {
            rc = ll__fail(err, LM_EDIM, NULL,
                          "ll_run: dim '%s' = %" PRId64 " is outside its range [%" PRId64
                          ", %" PRId64 "]",
                          ll_graph_dim_name(g, i), v, d->lo, d->hi);
            goto out;
        }
        dimv[i] = v;
        if (d->var < nvars) {
            vals[d->var] = v;
            bound[d->var] = true;
        }
    }
    x.dimv = dimv;
    x.env = (hl_env){vals, bound, nvars};
    if ((rc = check_structure(&x)) || (rc = eval_shapes(&x)) || (rc = bind_inputs(&x, inputs)))
        goto out;
    last_readers(&x, last);
    if ((rc = plan_memory(&x, last, mem_limit))) goto out;
    for (uint32_t id = 0; id < n; id++) {
        const ll_node *nd = ll_graph_node(g, id);
        if (nd->region != LM_NONE) continue;
        if ((rc = exec_node(&x, id))) goto out;
        for (uint32_t s = 0; s <= id; s++) { /* free what was read for the last time (or
                                                  never, s == id) */
            if (last[s] != id || !x.owned[s] || ll_graph_node(g, s)->kind == LL_OUTPUT) continue;
            hl_tensor_fini(&x.buf[s]);
            x.owned[s] = false;
        }
    }
    for (uint32_t i = 0; i < nout; i++) {
        uint32_t id = ll_graph_output(g, i);
        outputs[i] = x.buf[id];
        memset(&x.buf[id], 0, sizeof x.buf[id]);
        x.owned[id] = false;
    }
out:
    if (x.buf && x.owned)
        for (uint32_t id = 0; id < n; id++)
            if (x.owned[id]) hl_tensor_fini(&x.buf[id]);
    if (rc && outputs)
        for (uint32_t i = 0; i < nout; i++)
            memset(&outputs[i], 0, sizeof outputs[i]);
    ll__free(dimv);
    ll__free(vals);
    ll__free(bound);
    ll__free(x.dims);
    ll__free(x.numel);
    ll__free(x.buf);
    ll__free(x.owned);
    ll__free(x.mini);
    ll__free(last);
    return rc;
}
