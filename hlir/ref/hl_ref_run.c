/* hl_ref_run.c - the CPU reference interpreter: the oracle every backend is checked against.
 * This file: the run (planning, inputs, node order, buffer lifetimes, outputs).
 * hl_ref_tensor.c holds tensors, hl_ref_view.c makes views concrete, hl_ref_exec.c runs
 * one node, hl_ref_fused.c holds the fused multiply-reduce; hl_ref_int.h shares their
 * types.
 *
 * Nodes hl__run in id order (a topological order). Arithmetic: f32 for float dtypes, each
 * result rounded to the node's storage format; wrapping 32-bit for Int, wrapping 64-bit
 * for I64. Sums accumulate in index order, so the results are the same bits on every
 * run. A buffer is freed after its last reader. */
#include "ref/hl_ref_int.h"

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

hl_status hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
                 hl_tensor *outputs, lm_err *err)
{
    lm_err local;
    lm_err_clear(&local);
    if (!err) err = &local;
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvars = hl_var_count(p), n = hl_graph_node_count(g);
    uint32_t nout = hl_graph_output_count(g);
    int64_t *vals = hl__zalloc(nvars ? nvars : 1, sizeof(int64_t));
    bool *bound = hl__zalloc(nvars ? nvars : 1, sizeof(bool));
    hl__buf *bufs = hl__zalloc(n ? n : 1, sizeof(hl__buf));
    uint32_t *last = hl__alloc(n ? n : 1, sizeof(uint32_t));
    uint32_t *readers = hl__alloc(n ? n : 1, sizeof(uint32_t));
    uint32_t *fused = hl__alloc(n ? n : 1, sizeof(uint32_t));
    bool *skip = hl__alloc(n ? n : 1, sizeof(bool));
    hl_status st = HL_OK;
    if ((!outputs && nout) || (!inputs && hl_graph_input_count(g))) {
        st = hl__fail(err, HL_ERR_ARG, NULL,
                      "run: the graph has %u inputs and %u outputs; pass arrays for them",
                      hl_graph_input_count(g), nout);
        goto out;
    }
    for (uint32_t i = 0; i < nout; i++)
        memset(&outputs[i], 0, sizeof outputs[i]);
    if (!vals || !bound || !bufs || !last || !readers || !fused || !skip) {
        st = hl__fail(err, HL_ERR_NOMEM, NULL, "run: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        int64_t v = dim_values ? dim_values[i] : d->profile;
        if (v < d->lo || v > d->hi) {
            st = hl__fail(err, HL_ERR_DIM, NULL,
                          "run: dim '%s' = %" PRId64 " is outside its range [%" PRId64 ", %" PRId64
                          "]",
                          hl_var_name(p, d->var), v, d->lo, d->hi);
            goto out;
        }
        vals[d->var] = v;
        bound[d->var] = true;
    }
    hl__run r = {g, p, {vals, bound, nvars}, bufs, err, {0}, fused};
    /* last reader of each node, to free buffers early; then the Mul+reduce fusions */
    for (uint32_t id = 0; id < n; id++) {
        last[id] = id;
        readers[id] = 0;
        fused[id] = HL_NONE;
        skip[id] = false;
    }
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        for (uint32_t i = 0; i < nd->n_in; i++) {
            last[nd->in[i].node] = id;
            readers[nd->in[i].node]++;
        }
    }
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *nd = hl_graph_node(g, id);
        if (nd->op != HL_OP_SUM_REDUCE && nd->op != HL_OP_MAX_REDUCE) continue;
        uint32_t m = nd->in[0].node;
        const hl_node *mn = hl_graph_node(g, m);
        if (mn->op != HL_OP_MUL || readers[m] != 1) continue;
        bool contig;
        if ((st = reads_whole_contiguous(&r, id, &nd->in[0].view, mn, &contig))) goto out;
        if (!contig) continue;
        fused[id] = m;
        skip[m] = true;
        for (uint32_t i = 0; i < mn->n_in; i++) /* read by id now, not by m */
            if (last[mn->in[i].node] < id) last[mn->in[i].node] = id;
    }
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
        if (skip[id]) continue; /* a Mul hl__run inside its reduce */
        if ((st = hl__ref_exec_node(&r, id))) goto out;
        const hl_node *nd = hl_graph_node(g, id);
        if (fused[id] != HL_NONE) nd = hl_graph_node(g, fused[id]); /* its inputs were read */
        for (uint32_t i = 0; i < nd->n_in; i++) { /* free inputs read for the last time */
            uint32_t src = nd->in[i].node;
            if (last[src] == id && bufs[src].owned && hl_graph_node(g, src)->op != HL_OP_OUTPUT) {
                hl__free(bufs[src].data);
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
    hl__free(vals);
    hl__free(bound);
    hl__free(bufs);
    hl__free(last);
    hl__free(readers);
    hl__free(fused);
    hl__free(skip);
    return st;
}
