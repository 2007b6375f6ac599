/* pg_plan.c - the program's own copy of a plan, its checker, expression evaluation, and
 * the in-place analysis.
 *
 * A program never keeps a caller's cg_plan: it copies it (every expression into a pool
 * of its own, variables made in dim order, so variable i is dim i; buffers' bytes made
 * again from numel; node_buf, codegen's map of LLIR nodes to buffers, not kept), or reads
 * one from plan.json into the same form. Either way pg__plan_check has passed before anything
 * else reads it, so the rest of the module may index without checking: every buffer,
 * kernel, blas call, step, dim and expression id is in range, and every expression names
 * only dims.
 *
 * In place: a kernel may write its output over one of its inputs (the output's buffer
 * then shares the input's memory) when all of these hold, which is when every thread
 * reads element i of that input before it writes element i of the output and no thread
 * reads an element another writes:
 *   - the kernel's template is "elementwise" and its LLIR node a standalone kernel whose
 *     primitive is elementwise (Cast, Exp2, Log2, Sin, Recip, Sqrt, Add, Mul, Mod,
 *     LessThan);
 *   - the input is an intermediate (never a program input or output) whose last reader
 *     is this step, read through a contiguous view of the output's shape;
 *   - the output is an intermediate first written by this step, of the same element size
 *     and element count (the same expression);
 *   - the kernel does not also write the input.
 * (The parameters are __restrict__ pointers; with these conditions no load of the input
 * can observe a store to the output.) The option no_inplace turns it off.
 */
#include "pg_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

void pg__kernel_desc(const cg_plan *p, uint32_t k, char *buf, size_t cap)
{
    if (k >= p->n_kernels) {
        snprintf(buf, cap, "kernel %u", k);
        return;
    }
    const cg_kernel *kk = &p->kernels[k];
    snprintf(buf, cap, "kernel %u (template '%s', LLIR node %u)", k,
             kk->template_name ? kk->template_name : "?", kk->llir_node);
}

/* ---- expressions ---- */

int pg__eval(const cg_plan *p, hl_expr e, const int64_t *vals, int64_t *out, const char *name,
             const char *what, lm_err *err)
{
    int64_t v[64];
    uint32_t nv = hl_var_count(p->exprs);
    if (nv > 64 || nv > p->n_dims)
        return pg__fail(err, LM_EVERIFY, pg__at(name), "%s: the plan's expressions name %u variables", what,
                        nv);
    for (uint32_t i = 0; i < nv; i++)
        v[i] = vals[i]; /* variable i is dim i (pg__plan_check) */
    hl_env env = {v, NULL, nv};
    lm_err he = {0};
    if (hl_e_eval(p->exprs, e, &env, 0, out, &he) != HL_OK)
        return pg__fail(err, LM_EEVAL, pg__at(name), "%s: %s", what, he.msg);
    return 0;
}

int pg__buffer_bytes(const cg_plan *p, uint32_t b, const int64_t *vals, uint64_t *out,
                     const char *name, lm_err *err)
{
    char what[64];
    snprintf(what, sizeof what, "buffer %u's element count", b);
    int64_t n;
    if (pg__eval(p, p->buffers[b].numel, vals, &n, name, what, err)) return err->code;
    size_t es = hl_dtype_size(p->buffers[b].dtype);
    if (n < 0 || (uint64_t)n > UINT64_MAX / es)
        return pg__fail(err, LM_EEVAL, pg__at(name), "buffer %u: %lld elements of %zu bytes", b,
                        (long long)n, es);
    *out = (uint64_t)n * es;
    return 0;
}

/* ---- the checker ---- */

static bool expr_ok(const cg_plan *p, hl_expr e)
{
    return e != HL_NONE && e < hl_expr_count(p->exprs);
}

static bool buf_ok(const cg_plan *p, uint32_t b, bool optional)
{
    return b < p->n_buffers || (optional && b == LM_NONE);
}

static bool float_dtype(hl_dtype t)
{
    return t == HL_F32 || t == HL_F16 || t == HL_BF16 || t == HL_F8E4M3 || t == HL_F8E5M2;
}

int pg__plan_check(const cg_plan *p, bool own, const char *name, lm_err *err)
{
#define BAD(...) return pg__fail(err, LM_EVERIFY, pg__at(name), "malformed plan: " __VA_ARGS__)
    if (lm_err_is_set(err)) return err->code;
    if (!p || !p->exprs) BAD("no plan or no expression pool");
    if (hl_expr_pool_failed(p->exprs)) BAD("its expression pool ran out of memory");
    uint32_t nv = hl_var_count(p->exprs);
    if (nv != p->n_dims) BAD("%u dims but its expressions name %u variables", p->n_dims, nv);
    if (p->n_dims && (!p->dims || !p->dim_names)) BAD("dims without their arrays");
    for (uint32_t i = 0; i < p->n_dims; i++) {
        const hl_dim *d = &p->dims[i];
        if (!p->dim_names[i] || !hl_var_name_valid(p->dim_names[i]))
            BAD("dim %u has no valid name", i);
        /* the program's own plans have variable i for dim i; a caller's may number them
         * in any order, one variable per dim */
        if (d->var >= nv || (own && d->var != i) ||
            strcmp(hl_var_name(p->exprs, d->var), p->dim_names[i]) != 0)
            BAD("dim %u ('%s') is not variable %u of the pool", i, p->dim_names[i],
                own ? i : d->var);
        for (uint32_t j = 0; j < i; j++)
            if (p->dims[j].var == d->var) BAD("dims %u and %u are one variable", j, i);
        if (d->lo < 1 || d->hi < d->lo || d->profile < d->lo || d->profile > d->hi)
            BAD("dim '%s' needs 1 <= lo <= profile <= hi, has [%lld, %lld] profile %lld",
                p->dim_names[i], (long long)d->lo, (long long)d->hi, (long long)d->profile);
    }
    if ((p->n_buffers && !p->buffers) || (p->n_kernels && !p->kernels) || (p->n_blas && !p->blas) ||
        (p->n_steps && !p->steps) || (p->n_inputs && !p->input_buf) ||
        (p->n_outputs && !p->output_buf))
        BAD("a count without its array");
    for (uint32_t b = 0; b < p->n_buffers; b++) {
        const cg_buffer *x = &p->buffers[b];
        if ((unsigned)x->kind > CG_BUF_WORKSPACE) BAD("buffer %u has kind %d", b, (int)x->kind);
        if ((unsigned)x->dtype >= HL_DTYPE_COUNT) BAD("buffer %u has dtype %d", b, (int)x->dtype);
        if (!expr_ok(p, x->numel)) BAD("buffer %u has no element count", b);
        if (hl_e_has_z(p->exprs, x->numel)) BAD("buffer %u's element count uses z", b);
        if (x->first_step > x->last_step || (p->n_steps && x->last_step >= p->n_steps))
            BAD("buffer %u is live over steps [%u, %u] of %u", b, x->first_step, x->last_step,
                p->n_steps);
        if (x->kind == CG_BUF_INPUT && (x->index >= p->n_inputs || p->input_buf[x->index] != b))
            BAD("buffer %u is input %u, which the plan's input list does not name", b, x->index);
        if (x->kind == CG_BUF_OUTPUT && (x->index >= p->n_outputs || p->output_buf[x->index] != b))
            BAD("buffer %u is output %u, which the plan's output list does not name", b, x->index);
    }
    for (uint32_t i = 0; i < p->n_inputs; i++)
        if (p->input_buf[i] >= p->n_buffers || p->buffers[p->input_buf[i]].kind != CG_BUF_INPUT)
            BAD("input %u is not an input buffer", i);
    for (uint32_t i = 0; i < p->n_outputs; i++)
        if (p->output_buf[i] >= p->n_buffers || p->buffers[p->output_buf[i]].kind != CG_BUF_OUTPUT)
            BAD("output %u is not an output buffer", i);
    for (uint32_t k = 0; k < p->n_kernels; k++) {
        const cg_kernel *x = &p->kernels[k];
        if (!x->source) BAD("kernel %u has no source", k);
        for (int d = 0; d < 3; d++) {
            if (!expr_ok(p, x->grid[d]) || hl_e_has_z(p->exprs, x->grid[d]))
                BAD("kernel %u has no grid.%c", k, "xyz"[d]);
            if (x->block[d] < 1) BAD("kernel %u has block.%c = 0", k, "xyz"[d]);
        }
        if ((uint64_t)x->block[0] * x->block[1] * x->block[2] > 1024 || x->block[1] > 1024 ||
            x->block[2] > 64)
            BAD("kernel %u's block %ux%ux%u is more than CUDA allows", k, x->block[0], x->block[1],
                x->block[2]);
        if (x->n_params > CG_MAX_PARAMS) BAD("kernel %u has %u parameters", k, x->n_params);
        for (uint32_t j = 0; j < x->n_params; j++) {
            const cg_param *q = &x->params[j];
            if (q->kind == CG_P_BUFFER) {
                if (!buf_ok(p, q->buf, false))
                    BAD("kernel %u parameter %u names buffer %u of %u", k, j, q->buf, p->n_buffers);
                for (uint32_t i = 0; i < p->n_blas; i++)
                    if (p->blas && p->blas[i].workspace == q->buf)
                        BAD("kernel %u parameter %u is library call %u's workspace", k, j, i);
                if (q->written && p->buffers[q->buf].kind == CG_BUF_INPUT)
                    BAD("kernel %u writes program input buffer %u", k, q->buf);
            } else if (q->kind == CG_P_DIM) {
                if (q->dim >= p->n_dims)
                    BAD("kernel %u parameter %u names dim %u of %u", k, j, q->dim, p->n_dims);
            } else {
                BAD("kernel %u parameter %u has kind %d", k, j, (int)q->kind);
            }
        }
    }
    for (uint32_t i = 0; i < p->n_blas; i++) {
        const cg_blas *x = &p->blas[i];
        if (!buf_ok(p, x->a, false) || !buf_ok(p, x->b, false) || !buf_ok(p, x->d, false) ||
            !buf_ok(p, x->c, true) || !buf_ok(p, x->bias, true) || !buf_ok(p, x->workspace, true))
            BAD("library call %u names a buffer out of range", i);
        if (p->buffers[x->d].kind == CG_BUF_INPUT) BAD("library call %u writes an input", i);
        if (x->workspace != LM_NONE && p->buffers[x->workspace].kind != CG_BUF_WORKSPACE)
            BAD("library call %u's workspace is not a workspace buffer", i);
        const ll_matmul *m = &x->mm;
        hl_expr e[] = {m->m, m->n, m->k, m->batch, m->lda, m->ldb, m->stride_a, m->stride_b};
        for (size_t j = 0; j < sizeof e / sizeof e[0]; j++)
            if (!expr_ok(p, e[j]) || hl_e_has_z(p->exprs, e[j]))
                BAD("library call %u is missing a size or stride", i);
        if (!float_dtype(m->type_a) || !float_dtype(m->type_b) || !float_dtype(m->type_d) ||
            !float_dtype(m->type_c) || !float_dtype(m->type_bias))
            BAD("library call %u has a dtype cuBLASLt does not take", i);
        if ((unsigned)m->epilogue > LL_EPI_BIAS_GELU || (unsigned)m->order_a > 1 ||
            (unsigned)m->order_b > 1)
            BAD("library call %u has an unknown order or epilogue", i);
        if ((m->epilogue == LL_EPI_BIAS || m->epilogue == LL_EPI_BIAS_GELU) != (x->bias != LM_NONE))
            BAD("library call %u: a bias epilogue needs a bias buffer and only it has one", i);
        if (m->beta != 0.0 && x->c == LM_NONE) BAD("library call %u has beta but no C", i);
    }
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const cg_step *x = &p->steps[s];
        if (x->kind == CG_STEP_KERNEL ? x->index >= p->n_kernels
                                      : (x->kind != CG_STEP_BLAS || x->index >= p->n_blas))
            BAD("step %u names %s %u", s, x->kind == CG_STEP_KERNEL ? "kernel" : "call", x->index);
    }
    return 0;
#undef BAD
}

/* ---- copying ---- */

void pg__plan_fini(cg_plan *p)
{
    if (!p) return;
    hl_expr_pool_free(p->exprs);
    for (uint32_t i = 0; p->dim_names && i < p->n_dims; i++)
        pg__free(p->dim_names[i]);
    pg__free(p->dim_names);
    pg__free(p->dims);
    pg__free(p->buffers);
    for (uint32_t k = 0; p->kernels && k < p->n_kernels; k++) {
        pg__free(p->kernels[k].source);
        pg__free((char *)p->kernels[k].template_name);
    }
    pg__free(p->kernels);
    pg__free(p->blas);
    pg__free(p->steps);
    pg__free(p->input_buf);
    pg__free(p->output_buf);
    memset(p, 0, sizeof *p);
}

int pg__plan_copy(cg_plan *dst, const cg_plan *src, const char *name, lm_err *err)
{
    memset(dst, 0, sizeof *dst);
    if (pg__plan_check(src, false, name, err)) return err->code;
    hl_expr *memo = pg__alloc(hl_expr_count(src->exprs) + 1, sizeof *memo);
    dst->exprs = hl_expr_pool_new();
    if (!memo || !dst->exprs) goto oom;
    for (uint32_t i = 0; i < hl_expr_count(src->exprs); i++)
        memo[i] = HL_NONE;
    dst->n_dims = src->n_dims;
    dst->dims = pg__alloc(src->n_dims, sizeof *dst->dims);
    dst->dim_names = pg__alloc(src->n_dims, sizeof *dst->dim_names);
    if (!dst->dims || !dst->dim_names) goto oom;
    for (uint32_t i = 0; i < src->n_dims; i++) {
        dst->dim_names[i] = pg__strdup(src->dim_names[i]);
        hl_expr v = hl_e_var(dst->exprs, src->dim_names[i]);
        if (!dst->dim_names[i] || v == HL_NONE) goto oom;
        dst->dims[i] = src->dims[i];
        dst->dims[i].var = hl_e_get(dst->exprs, v).var;
        dst->dims[i].expr = v;
    }
#define CP(e) hl_expr_copy(dst->exprs, src->exprs, (e), memo, HL_COPY_KNOWN_VARS)
    dst->n_buffers = src->n_buffers;
    dst->buffers = pg__alloc(src->n_buffers, sizeof *dst->buffers);
    dst->n_kernels = src->n_kernels;
    dst->kernels = pg__alloc(src->n_kernels, sizeof *dst->kernels);
    dst->n_blas = src->n_blas;
    dst->blas = pg__alloc(src->n_blas, sizeof *dst->blas);
    dst->n_steps = src->n_steps;
    dst->steps = pg__alloc(src->n_steps, sizeof *dst->steps);
    dst->n_inputs = src->n_inputs;
    dst->input_buf = pg__alloc(src->n_inputs, sizeof *dst->input_buf);
    dst->n_outputs = src->n_outputs;
    dst->output_buf = pg__alloc(src->n_outputs, sizeof *dst->output_buf);
    if (!dst->buffers || !dst->kernels || !dst->blas || !dst->steps || !dst->input_buf ||
        !dst->output_buf)
        goto oom;
    for (uint32_t b = 0; b < src->n_buffers; b++) {
        cg_buffer *x = &dst->buffers[b];
        *x = src->buffers[b];
        if ((x->numel = CP(src->buffers[b].numel)) == HL_NONE) goto oom;
        /* bytes is numel times the element size, whatever the source held */
        x->bytes =
            hl_e_mul(dst->exprs, x->numel, hl_e_num(dst->exprs, (int64_t)hl_dtype_size(x->dtype)));
        if (x->bytes == HL_NONE) goto oom;
    }
    for (uint32_t k = 0; k < src->n_kernels; k++) {
        cg_kernel *d = &dst->kernels[k];
        *d = src->kernels[k];
        d->source = NULL;
        d->template_name = NULL;
        d->source = pg__strdup(src->kernels[k].source);
        d->template_name =
            pg__strdup(src->kernels[k].template_name ? src->kernels[k].template_name : "?");
        if (!d->source || !d->template_name) goto oom;
        for (int i = 0; i < 3; i++)
            if ((d->grid[i] = CP(src->kernels[k].grid[i])) == HL_NONE) goto oom;
    }
    for (uint32_t i = 0; i < src->n_blas; i++) {
        cg_blas *d = &dst->blas[i];
        *d = src->blas[i];
        ll_matmul *m = &d->mm;
        const ll_matmul *s = &src->blas[i].mm;
        m->m = CP(s->m), m->n = CP(s->n), m->k = CP(s->k), m->batch = CP(s->batch);
        m->lda = CP(s->lda), m->ldb = CP(s->ldb);
        m->stride_a = CP(s->stride_a), m->stride_b = CP(s->stride_b);
        if (m->m == HL_NONE || m->n == HL_NONE || m->k == HL_NONE || m->batch == HL_NONE ||
            m->lda == HL_NONE || m->ldb == HL_NONE || m->stride_a == HL_NONE ||
            m->stride_b == HL_NONE)
            goto oom;
    }
#undef CP
    memcpy(dst->steps, src->steps, src->n_steps * sizeof *dst->steps);
    memcpy(dst->input_buf, src->input_buf, src->n_inputs * sizeof *dst->input_buf);
    memcpy(dst->output_buf, src->output_buf, src->n_outputs * sizeof *dst->output_buf);
    pg__free(memo);
    return pg__plan_check(dst, true, name, err);
oom:
    pg__free(memo);
    pg__plan_fini(dst);
    return pg__fail(err, LM_ENOMEM, pg__at(name), "out of memory copying the plan");
}

/* ---- in place ---- */

/* Whether kernel node n reads its input j through a contiguous view of its own shape. */
static bool reads_contiguously(pg_program *p, const ll_node *n, uint32_t j, hl_expr *memo)
{
    const hl_expr_pool *src = ll_graph_exprs(p->llir);
    hl_expr_pool *dst = p->plan.exprs;
    const hl_view *v = &n->prim.in[j].view;
    if (v->ndim != n->ndim || v->ndim > HL_MAX_DIMS) return false;
    hl_view c;
    c.ndim = v->ndim;
    for (uint32_t d = 0; d < v->ndim; d++) {
        c.dims[d] = hl_expr_copy(dst, src, v->dims[d], memo, HL_COPY_KNOWN_VARS);
        c.strides[d] = hl_expr_copy(dst, src, v->strides[d], memo, HL_COPY_KNOWN_VARS);
        hl_expr s = hl_expr_copy(dst, src, n->shape[d], memo, HL_COPY_KNOWN_VARS);
        if (c.dims[d] == HL_NONE || c.strides[d] == HL_NONE || s != c.dims[d]) return false;
    }
    return hl_view_is_contiguous(dst, &c);
}

int pg__plan_inplace(pg_program *p, lm_err *err)
{
    cg_plan *pl = &p->plan;
    for (uint32_t b = 0; b < pl->n_buffers; b++)
        p->slot[b] = b;
    if (!p->inplace || !p->llir) return 0;
    uint32_t nsrc = hl_expr_count(ll_graph_exprs(p->llir));
    hl_expr *memo = pg__alloc(nsrc + 1, sizeof *memo);
    if (!memo) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory planning in place");
    for (uint32_t i = 0; i < nsrc; i++)
        memo[i] = HL_NONE;
    for (uint32_t s = 0; s < pl->n_steps; s++) {
        if (pl->steps[s].kind != CG_STEP_KERNEL) continue;
        const cg_kernel *k = &pl->kernels[pl->steps[s].index];
        if (!k->template_name || strcmp(k->template_name, "elementwise") != 0) continue;
        if (k->llir_node >= ll_graph_node_count(p->llir)) continue;
        const ll_node *n = ll_graph_node(p->llir, k->llir_node);
        if (n->kind != LL_KERNEL || !hl_op_is_elementwise(n->prim.op)) continue;
        /* the one buffer written, named by one parameter only */
        uint32_t out = LM_NONE, nwritten = 0, nout = 0;
        for (uint32_t j = 0; j < k->n_params; j++) {
            const cg_param *q = &k->params[j];
            if (q->kind == CG_P_BUFFER && (q->written || pl->buffers[q->buf].first_step == s))
                out = q->buf, nwritten++;
        }
        if (nwritten != 1) continue;
        for (uint32_t j = 0; j < k->n_params; j++)
            nout += k->params[j].kind == CG_P_BUFFER && k->params[j].buf == out;
        const cg_buffer *ob = &pl->buffers[out];
        if (nout != 1 || ob->kind != CG_BUF_TEMP || ob->first_step != s || p->slot[out] != out)
            continue;
        for (uint32_t j = 0; j < k->n_params; j++) {
            const cg_param *q = &k->params[j];
            if (q->kind != CG_P_BUFFER || q->buf == out) continue;
            const cg_buffer *x = &pl->buffers[q->buf];
            if (x->kind != CG_BUF_TEMP || x->last_step != s ||
                hl_dtype_size(x->dtype) != hl_dtype_size(ob->dtype) || x->numel != ob->numel)
                continue;
            /* every read of the LLIR value this buffer holds is contiguous */
            bool read = false, ok = true;
            for (uint32_t i = 0; i < n->n_in && i < HL_MAX_INPUTS; i++)
                if (n->in[i] == x->llir_node) {
                    read = true;
                    ok = ok && reads_contiguously(p, n, i, memo);
                }
            if (!read || !ok) continue;
            /* out takes over the input's memory (and a chain of them goes on from out:
             * the input's last reader is this step, so nothing reads it after) */
            assert(p->slot[p->slot[q->buf]] == p->slot[q->buf]); /* a slot is its own */
            p->slot[out] = p->slot[q->buf];
            break;
        }
    }
    pg__free(memo);
    /* a copy that ran out of memory reads as "not contiguous": a different program */
    if (hl_expr_pool_failed(pl->exprs))
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory planning in place");
    return 0;
}

/* ---- kernels with the same source ---- */

typedef struct {
    uint64_t h;
    uint32_t k;
} src_key;

static int by_hash_then_index(const void *a, const void *b)
{
    const src_key *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

int pg__same_source(const cg_plan *p, uint32_t *first)
{
    uint32_t n = p->n_kernels;
    src_key *ks = pg__alloc(n + 1, sizeof *ks);
    if (!ks) return -1;
    for (uint32_t k = 0; k < n; k++) {
        const char *src = p->kernels[k].source;
        ks[k] = (src_key){XXH3_64bits(src, strlen(src)), k};
        first[k] = k;
    }
    qsort(ks, n, sizeof *ks, by_hash_then_index);
    /* within a run of one hash (in kernel order), each takes the first earlier kernel of
       the run with its text: equal texts always share a run, collisions only cost a strcmp */
    for (uint32_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && ks[j].h == ks[i].h; j++)
            for (uint32_t b = i; b < j; b++) {
                uint32_t kb = ks[b].k, kj = ks[j].k;
                if (first[kb] == kb && strcmp(p->kernels[kb].source, p->kernels[kj].source) == 0) {
                    first[kj] = kb;
                    break;
                }
            }
    }
    pg__free(ks);
    return 0;
}
