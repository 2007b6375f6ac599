/* hl_ref_run.c - the CPU reference interpreter: the oracle every backend is checked against.
 * This file: the run (planning, inputs, node order, buffer lifetimes, outputs).
 * hl_ref_tensor.c holds tensors, hl_ref_view.c makes views concrete, hl_ref_exec.c runs
 * one node, hl_ref_fused.c holds the fused multiply-reduce; hl_ref_int.h shares their
 * types.
 *
 * Nodes run in id order (a topological order). Arithmetic: f32 for float dtypes, each
 * result rounded to the node's storage format; wrapping 32-bit for Int, wrapping 64-bit
 * for I64. Sums accumulate in index order, so the results are the same bits on every
 * run. A buffer is freed after its last reader. */
#include "ref/hl_ref_int.h"

#include <unistd.h>

uint32_t hl__ref_threads(const hl_run_opts *opts)
{
    long t = opts && opts->threads ? (long)opts->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (t < 1) t = 1;
    return t > HL_REF_MAX_THREADS ? HL_REF_MAX_THREADS : (uint32_t)t;
}

/* ---- the run ---- */

/* Whether view v (of reduce node id) reads every element of node mn's output once, in
 * row-major order: same dims as mn's shape and contiguous strides, checked on values. */
static hl_status reads_whole_contiguous(hl__run *r, uint32_t id, const hl_view *v,
                                        const hl_node *mn, bool *out)
{
    *out = false;
    if (v->ndim != mn->ndim) return HL_OK;
    int64_t inner = 1;
    for (uint32_t d = v->ndim; d-- > 0;) {
        int64_t n, m;
        hl_status st;
        if ((st = hl__ref_eval_dim(r, id, v->dims[d], &n, "a view dim"))) return st;
        if ((st = hl__ref_eval_dim(r, id, mn->shape[d], &m, "a dim of its input's shape")))
            return st;
        if (n != m) return HL_OK;
        for (int64_t i = 0; i < n; i++) {
            int64_t pos;
            if ((st = hl__ref_eval(r, id, v->strides[d], i, &pos, "a view stride"))) return st;
            if (n > 1 && pos != i * inner) return HL_OK;
        }
        if (__builtin_mul_overflow(inner, n, &inner)) return HL_OK;
    }
    *out = true;
    return HL_OK;
}

/* ---- the plan: dims bound, last readers, fusions ---- */

/* What every run computes before it allocates a tensor; owned arrays of node count. */
typedef struct plan {
    int64_t *vals;     /* per pool variable: its value */
    bool *bound;       /* per pool variable: whether a dim binds it */
    uint32_t *last;    /* per node: the last node that reads it (itself when none) */
    uint32_t *readers; /* per node: how many input edges read it */
    uint32_t *fused;   /* per reduce: the Mul it absorbs, or HL_NONE */
    bool *skip;        /* per node: a Mul run inside its reduce */
} plan;

static void plan_fini(plan *pl)
{
    hl__free(pl->vals);
    hl__free(pl->bound);
    hl__free(pl->last);
    hl__free(pl->readers);
    hl__free(pl->fused);
    hl__free(pl->skip);
}

/* Allocates pl's arrays, checks and binds the dims (dim_values NULL: profile values) and
 * sets r up for evaluating the graph's expressions. */
static hl_status plan_init(plan *pl, hl__run *r, const hl_graph *g, const int64_t *dim_values,
                           lm_err *err)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvars = hl_var_count(p), n = hl_graph_node_count(g);
    memset(pl, 0, sizeof *pl);
    memset(r, 0, sizeof *r);
    r->g = g;
    r->p = p;
    r->err = err;
    pl->vals = hl__zalloc(nvars ? nvars : 1, sizeof(int64_t));
    pl->bound = hl__zalloc(nvars ? nvars : 1, sizeof(bool));
    pl->last = hl__alloc(n ? n : 1, sizeof(uint32_t));
    pl->readers = hl__alloc(n ? n : 1, sizeof(uint32_t));
    pl->fused = hl__alloc(n ? n : 1, sizeof(uint32_t));
    pl->skip = hl__alloc(n ? n : 1, sizeof(bool));
    if (!pl->vals || !pl->bound || !pl->last || !pl->readers || !pl->fused || !pl->skip)
        return hl__fail(err, HL_ERR_NOMEM, NULL, "run: out of memory");
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        int64_t v = dim_values ? dim_values[i] : d->profile;
        if (v < d->lo || v > d->hi)
            return hl__fail(err, HL_ERR_DIM, NULL,
                            "run: dim '%s' = %" PRId64 " is outside its range [%" PRId64
                            ", %" PRId64 "]",
                            hl_var_name(p, d->var), v, d->lo, d->hi);
        pl->vals[d->var] = v;
        pl->bound[d->var] = true;
    }
    r->env = (hl_env){pl->vals, pl->bound, nvars};
    r->fused = pl->fused;
    /* only what the outputs need runs: a node no output reads, directly or through
     * others, is skipped and its memory never counted (nodes are in topological id order,
     * so one backward pass finds them) */
    bool *live = hl__zalloc(n ? n : 1, sizeof(bool));
    if (!live) return hl__fail(err, HL_ERR_NOMEM, NULL, "run: out of memory");
    for (uint32_t i = 0; i < hl_graph_output_count(g); i++)
        live[hl_graph_output(g, i)] = true;
    for (uint32_t id = n; id-- > 0;) {
        const hl_node *nd = hl_graph_node(g, id);
        if (nd->op == HL_OP_INPUT) live[id] = true; /* bound by the caller, always */
        if (!live[id]) continue;
        for (uint32_t i = 0; i < nd->n_in; i++)
            live[nd->in[i].node] = true;
    }
    /* last reader of each node, to free buffers early; then the Mul+reduce fusions */
    for (uint32_t id = 0; id < n; id++) {
        pl->last[id] = id;
        pl->readers[id] = 0;
        pl->fused[id] = HL_NONE;
        pl->skip[id] = !live[id];
    }
    hl__free(live);
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        if (pl->skip[id]) continue; /* dead: reads nothing */
        for (uint32_t i = 0; i < nd->n_in; i++) {
            pl->last[nd->in[i].node] = id;
            pl->readers[nd->in[i].node]++;
        }
    }
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        if (pl->skip[id] || (nd->op != HL_OP_SUM_REDUCE && nd->op != HL_OP_MAX_REDUCE)) continue;
        uint32_t m = nd->in[0].node;
        const hl_node *mn = hl_graph_node(g, m);
        if (mn->op != HL_OP_MUL || pl->readers[m] != 1) continue;
        bool contig;
        hl_status st = reads_whole_contiguous(r, id, &nd->in[0].view, mn, &contig);
        if (st) return st;
        if (!contig) continue;
        pl->fused[id] = m;
        pl->skip[m] = true;
        for (uint32_t i = 0; i < mn->n_in; i++) /* read by id now, not by m */
            if (pl->last[mn->in[i].node] < id) pl->last[mn->in[i].node] = id;
    }
    return HL_OK;
}

/* ---- memory: what a run holds at once, before anything is allocated ---- */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* Bytes of node id's output buffer (the numbers hl__ref_alloc_out allocates). */
static hl_status node_bytes(hl__run *r, uint32_t id, int64_t *dims, uint64_t *bytes)
{
    const hl_node *nd = hl_graph_node(r->g, id);
    uint64_t n = 1;
    for (uint32_t d = 0; d < nd->ndim; d++) {
        hl_status st = hl__ref_eval_dim(r, id, nd->shape[d], &dims[d], "a dim of its shape");
        if (st) return st;
        n = sat_mul(n, (uint64_t)dims[d]);
    }
    *bytes = sat_mul(n ? n : 1, hl_dtype_size(nd->dtype));
    return HL_OK;
}

/* Bytes of the position tables of input `which` of node id (one int64 per index of each
 * view dim, hl__ref_make_cview), and the view's last dim and its dim `axis` (or 1). */
static hl_status table_bytes(hl__run *r, uint32_t id, uint32_t which, uint32_t axis,
                             uint64_t *bytes, int64_t *inner, int64_t *along)
{
    const hl_view *v = &hl_graph_node(r->g, id)->in[which].view;
    *bytes = 0;
    *inner = *along = 1;
    for (uint32_t d = 0; d < v->ndim; d++) {
        int64_t n;
        hl_status st = hl__ref_eval_dim(r, id, v->dims[d], &n, "a view dim");
        if (st) return st;
        *bytes = sat_add(*bytes, sat_mul((uint64_t)(n ? n : 1), sizeof(int64_t)));
        if (d == axis)
            *along = n;
        else
            *inner = n; /* the last dim other than axis */
    }
    return HL_OK;
}

/* The largest tensors, for the refusal's message. */
#define TOP 3
typedef struct top_t {
    uint64_t bytes[TOP];
    uint32_t id[TOP];
    int64_t dims[TOP][HL_MAX_DIMS];
} top_t;

static void top_add(top_t *t, uint32_t id, uint64_t bytes, const int64_t *dims, uint32_t ndim)
{
    for (uint32_t k = 0; k < TOP; k++) {
        if (t->id[k] != HL_NONE && bytes <= t->bytes[k]) continue; /* ties keep the lower id */
        for (uint32_t j = TOP - 1; j > k; j--) {
            t->bytes[j] = t->bytes[j - 1];
            t->id[j] = t->id[j - 1];
            memcpy(t->dims[j], t->dims[j - 1], sizeof t->dims[j]);
        }
        t->bytes[k] = bytes;
        t->id[k] = id;
        memcpy(t->dims[k], dims, ndim * sizeof *dims);
        return;
    }
}

/* "1.50 GiB" */
static void fmt_bytes(uint64_t b, char *buf, size_t cap)
{
    static const char *const UNIT[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)b);
    else
        snprintf(buf, cap, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, UNIT[u]);
}

/* Walks the run's schedule without allocating: inputs first (the caller's, all held for
 * the whole run), then per node in id order what hl_run holds while the node runs (the
 * live buffers, its output, its view tables and accumulators), then the node's inputs
 * read for the last time are freed. The peak is the most held at once. */
static hl_status plan_memory(hl__run *r, const plan *pl, hl_run_mem *out, top_t *top)
{
    const hl_graph *g = r->g;
    uint32_t n = hl_graph_node_count(g);
    uint64_t *held = hl__zalloc(n ? n : 1, sizeof(uint64_t)); /* per node: its live buffer */
    if (!held) return hl__fail(r->err, HL_ERR_NOMEM, NULL, "run: out of memory");
    memset(out, 0, sizeof *out);
    for (uint32_t k = 0; k < TOP; k++)
        top->id[k] = HL_NONE;
    hl_status st = HL_OK;
    int64_t dims[HL_MAX_DIMS];
    uint64_t live = 0;
    for (uint32_t i = 0; i < hl_graph_input_count(g) && !st; i++) {
        uint32_t id = hl_graph_input(g, i);
        uint64_t b;
        if ((st = node_bytes(r, id, dims, &b))) break;
        out->input_bytes = sat_add(out->input_bytes, b);
        top_add(top, id, b, dims, hl_graph_node(g, id)->ndim);
    }
    out->peak_bytes = out->input_bytes;
    for (uint32_t id = 0; id < n && !st; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        if (nd->op == HL_OP_INPUT || pl->skip[id]) continue;
        uint64_t b, temp = 0, t;
        if ((st = node_bytes(r, id, dims, &b))) break;
        top_add(top, id, b, dims, nd->ndim);
        uint32_t reader = pl->fused[id] != HL_NONE ? pl->fused[id] : id; /* whose views */
        const hl_node *rn = hl_graph_node(g, reader);
        int64_t inner = 1, along = 1;
        for (uint32_t k = 0; k < rn->n_in && !st; k++) {
            st = table_bytes(r, reader, k, nd->axis, &t, &inner, &along);
            temp = sat_add(temp, t);
        }
        if (st) break;
        if (nd->op == HL_OP_SUM_REDUCE || nd->op == HL_OP_MAX_REDUCE) {
            /* accumulators: eight rows of the fused kernel and its packed b (one of each
               per thread sharing it), or a row */
            uint64_t in1 = (uint64_t)(inner ? inner : 1), al = (uint64_t)(along ? along : 1);
            uint64_t es = hl_dtype_size(nd->dtype), rows = b / (es ? es : 1) / in1;
            bool f = pl->fused[id] != HL_NONE;
            uint64_t ta = f ? hl__ref_fused_threads(r->threads, rows, in1, al, false) : 1;
            uint64_t tp = f ? hl__ref_fused_threads(r->threads, rows, in1, al, true) : 0;
            temp = sat_add(temp, sat_mul(sat_mul(in1, 8 * sizeof(float)), ta));
            temp = sat_add(temp, sat_mul(sat_mul(sat_mul(in1, al), sizeof(float)), tp));
        }
        uint64_t now = sat_add(sat_add(sat_add(out->input_bytes, live), b), temp);
        if (now > out->peak_bytes) out->peak_bytes = now;
        live = sat_add(live, b);
        held[id] = b;
        for (uint32_t k = 0; k < rn->n_in; k++) { /* inputs read for the last time */
            uint32_t src = rn->in[k].node;
            const hl_node *sn = hl_graph_node(g, src);
            if (pl->last[src] == id && sn->op != HL_OP_INPUT && sn->op != HL_OP_OUTPUT) {
                live -= held[src] < live ? held[src] : live;
                held[src] = 0; /* read twice (x * x): freed once */
            }
        }
    }
    hl__free(held);
    return st;
}

/* Refuses (HL_ERR_LIMIT) when the plan needs more than the limit, naming the largest
 * tensors. */
static hl_status check_limit(hl__run *r, const hl_run_mem *m, const top_t *top, bool given)
{
    if (!m->limit || m->peak_bytes <= m->limit) return HL_OK;
    char need[32], in[32], lim[32], list[768] = "";
    fmt_bytes(m->peak_bytes, need, sizeof need);
    fmt_bytes(m->input_bytes, in, sizeof in);
    fmt_bytes(m->limit, lim, sizeof lim);
    size_t len = 0;
    for (uint32_t k = 0; k < TOP && top->id[k] != HL_NONE && len < sizeof list; k++) {
        const hl_node *nd = hl_graph_node(r->g, top->id[k]);
        const hl_origin *o = hl_graph_node_origin(r->g, top->id[k]);
        char b[32], shape[192] = "";
        size_t sl = 0;
        for (uint32_t d = 0; d < nd->ndim && sl < sizeof shape; d++)
            sl += (size_t)snprintf(shape + sl, sizeof shape - sl, "%s%" PRId64, d ? ", " : "",
                                   top->dims[k][d]);
        fmt_bytes(top->bytes[k], b, sizeof b);
        char who[192];
        if (o && hl__same_op(o->op, nd->op))
            snprintf(who, sizeof who, "'%.64s' (%.40s)", o->name, o->op);
        else if (o)
            snprintf(who, sizeof who, "'%.64s' (%.40s, lowered to %s)", o->name, o->op,
                     hl_op_name(nd->op));
        else if (nd->op == HL_OP_INPUT || nd->op == HL_OP_OUTPUT)
            snprintf(who, sizeof who, "'%.64s' (%s)", nd->name,
                     nd->op == HL_OP_INPUT ? "input" : "output");
        else
            snprintf(who, sizeof who, "node %u (%s)", top->id[k], hl_op_name(nd->op));
        int w = snprintf(list + len, sizeof list - len, "%s%s %s [%s] %s", k ? ", " : "", who,
                         hl_dtype_name(nd->dtype), shape, b);
        if (w > 0) len += (size_t)w;
    }
    lm_loc at = {.file = hl_graph_source(r->g), .node_id = HL_NONE};
    return hl__fail(r->err, HL_ERR_LIMIT, &at,
                    "run: the run needs %s at once (%s of it inputs), but the limit is %s (%s); "
                    "nothing was allocated. The largest tensors: %s",
                    need, in, lim, given ? "--mem-limit" : "the memory this machine has", list);
}

hl_status hl_run_check_memory(const hl_graph *g, const int64_t *dim_values, const hl_run_opts *opts,
                              hl_run_mem *out, lm_err *err)
{
    lm_err local = {0};
    if (!err) err = &local;
    hl_run_mem m;
    top_t top;
    plan pl;
    hl__run r;
    hl_status st = plan_init(&pl, &r, g, dim_values, err);
    r.threads = hl__ref_threads(opts);
    if (!st) st = plan_memory(&r, &pl, &m, &top);
    plan_fini(&pl);
    if (st) return st;
    bool given = opts && opts->mem_limit;
    m.limit = given ? opts->mem_limit : lm_mem_available();
    if (out) *out = m;
    return check_limit(&r, &m, &top, given);
}

hl_status hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
                 hl_tensor *outputs, const hl_run_opts *opts, lm_err *err)
{
    lm_err local = {0};
    if (!err) err = &local;
    uint32_t n = hl_graph_node_count(g), nout = hl_graph_output_count(g);
    hl__buf *bufs = NULL;
    plan pl;
    hl__run r;
    hl_status st = HL_OK;
    memset(&pl, 0, sizeof pl);
    memset(&r, 0, sizeof r);
    if ((!outputs && nout) || (!inputs && hl_graph_input_count(g))) {
        st = hl__fail(err, HL_ERR_ARG, NULL,
                      "run: the graph has %u inputs and %u outputs; pass arrays for them",
                      hl_graph_input_count(g), nout);
        goto out;
    }
    for (uint32_t i = 0; i < nout; i++)
        memset(&outputs[i], 0, sizeof outputs[i]);
    /* refuse what the machine cannot hold before allocating a tensor */
    if ((st = hl_run_check_memory(g, dim_values, opts, NULL, err))) goto out;
    if ((st = plan_init(&pl, &r, g, dim_values, err))) goto out;
    r.threads = hl__ref_threads(opts);
    /* the recycler keeps at most a quarter of the memory limit, and 1 GiB */
    r.rec.cap = (opts && opts->mem_limit ? opts->mem_limit : lm_mem_available()) / 4;
    if (r.rec.cap > ((size_t)1 << 30)) r.rec.cap = (size_t)1 << 30;
    bufs = hl__zalloc(n ? n : 1, sizeof(hl__buf));
    if (!bufs) {
        st = hl__fail(err, HL_ERR_NOMEM, NULL, "run: out of memory");
        goto out;
    }
    r.bufs = bufs;
    uint32_t *last = pl.last, *fused = pl.fused;
    bool *skip = pl.skip;
    /* bind inputs */
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        uint32_t id = hl_graph_input(g, i);
        const hl_node *nd = hl_graph_node(g, id);
        const hl_tensor *t = &inputs[i];
        hl__buf *b = &bufs[id];
        b->dt = nd->dtype;
        b->ndim = nd->ndim;
        for (uint32_t d = 0; d < nd->ndim; d++)
            if ((st = hl__ref_eval_dim(&r, id, nd->shape[d], &b->dims[d], "a dim of its shape")))
                goto out;
        bool ok = t->dtype == nd->dtype && t->ndim == nd->ndim && t->data != NULL;
        for (uint32_t d = 0; ok && d < nd->ndim; d++)
            ok = t->dims[d] == b->dims[d];
        if (!ok) {
            char want[128] = "", got[128] = "";
            size_t lw = 0, lg = 0;
            for (uint32_t d = 0; d < nd->ndim && lw < sizeof want; d++)
                lw += (size_t)snprintf(want + lw, sizeof want - lw, "%s%" PRId64, d ? ", " : "",
                                       b->dims[d]);
            for (uint32_t d = 0; d < t->ndim && d < HL_MAX_DIMS && lg < sizeof got; d++)
                lg += (size_t)snprintf(got + lg, sizeof got - lg, "%s%" PRId64, d ? ", " : "",
                                       t->dims[d]);
            st = hl__ref_fail(&r, HL_ERR_SHAPE, id,
                              "run: input '%s' must be %s [%s]; given %s [%s]%s", nd->name,
                              hl_dtype_name(nd->dtype), want, hl_dtype_name(t->dtype), got,
                              t->data ? "" : " with no data");
            goto out;
        }
        hl__ref_numel_of(b->ndim, b->dims, &b->n);
        b->data = t->data;
        b->owned = false;
    }
    for (uint32_t id = 0; id < n; id++) {
        if (skip[id]) continue; /* a Mul run inside its reduce, or a node no output needs */
        if ((st = hl__ref_exec_node(&r, id))) goto out;
        const hl_node *nd = hl_graph_node(g, id);
        if (fused[id] != HL_NONE) nd = hl_graph_node(g, fused[id]); /* its inputs were read */
        for (uint32_t i = 0; i < nd->n_in; i++) { /* free inputs read for the last time */
            uint32_t src = nd->in[i].node;
            if (last[src] == id && bufs[src].owned && hl_graph_node(g, src)->op != HL_OP_OUTPUT) {
                hl__rec_free(&r.rec, bufs[src].data, bufs[src].n, hl_dtype_size(bufs[src].dt));
                bufs[src].data = NULL;
            }
        }
    }
    for (uint32_t i = 0; i < nout; i++) {
        uint32_t id = hl_graph_output(g, i);
        hl__buf *b = &bufs[id];
        hl_tensor *t = &outputs[i];
        t->dtype = b->dt;
        t->ndim = b->ndim;
        memcpy(t->dims, b->dims, sizeof t->dims);
        t->numel = b->n;
        t->data = b->data;
        b->data = NULL; /* ownership moves to the caller */
    }
out:
    if (bufs)
        for (uint32_t id = 0; id < n; id++)
            if (bufs[id].owned) hl__free(bufs[id].data);
    if (st && outputs)
        for (uint32_t i = 0; i < nout; i++)
            memset(&outputs[i], 0, sizeof outputs[i]);
    hl__free(bufs);
    hl__rec_drain(&r.rec);
    plan_fini(&pl);
    return st;
}
