/* sr_cost.c - the analytic cost model: a plan's time on an H200, modelled, not measured.
 *
 * Each step of a plan (codegen.h) is costed at the run's dims:
 *
 *   kernel   t = launch + max(bytes / (BW * par), flops / rate)
 *            bytes: every buffer the kernel reads or writes, once (its size at the dims;
 *            re-reads are taken to hit L2), flops: the values the kernel evaluates
 *            (codegen's count, cg_kernel.ops: every load, op and reduction step as often
 *            as the loops around it run, so a reduction inlined under another's loop
 *            counts its length times the other's), or 2 m n k batch for the generic
 *            matmul kernel at its rate; bytes also holds a 32-byte sector for every
 *            load of a loop whose lanes read apart (cg_kernel.strided);
 *            par = min(1, threads launched / THREADS_TO_SATURATE): a grid too small to
 *            fill the machine does not reach the bandwidth
 *            attention (a KAttn's "attention" kernel): flops 4 d per score computed
 *            (causal: the pairs j <= i + skv - sq) at attn_tc, the softmax at simt_f32,
 *            both at the wave quantization of its blocks over the SMs
 *   library  t = blas_launch + max(bytes / BW, flops / (peak(dtype) * waves)), waves the
 *            tile quantization of cuBLASLt's tiles over the SMs (a 4096^3 bf16 matmul
 *            keeps 97 % of the peak, a 256 x 256 one 1 of 132 SMs busy)
 *   replay   + graph_fixed + per_node * steps (one CUDA graph per call)
 *
 * The constants are in one table, COST, each with where it comes from; docs/search.md
 * repeats them. Those marked "estimate" are not measured yet: scripts/search_gpu.sh
 * measures how well the model ranks candidates (Spearman's rank correlation between
 * modelled and measured times), which is what the search needs of it.
 */
#include "sr_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct cost_constants {
    double bw;            /* bytes/s: H200 HBM3e through an NVRTC kernel, 16-byte loads
                             (rt_bench copy_v4, 1 GiB: 4265 GB/s; docs/perf.md) */
    double threads_sat;   /* threads in flight that saturate the bandwidth: 132 SMs x
                             1024 (half of the 2048 resident per SM; estimate) */
    double launch_s;      /* a small kernel's time on the GPU beyond its work: ramp-up,
                             tail, the dependency on the previous node (estimate: 2 us) */
    double simt_f32;      /* flop/s of elementwise and reduction work (FP32 FMA peak of
                             the H200, 67 TFLOP/s, at 60 %: estimate) */
    double kmatmul_f32;   /* flop/s of the generic matmul kernel (64x64 tiles, 4x4 per
                             thread, f32 FMA in shared memory; estimate: 15 TFLOP/s) */
    double blas_bf16;     /* flop/s of cuBLASLt bf16/f16 at full waves: 4096^3 bf16
                             measured 810.7 TFLOP/s (docs/perf.md) with 97 % of its
                             waves full and 4 us of launch, hence 860 */
    double blas_f32;      /* cuBLASLt f32 (no TF32): estimate 50 TFLOP/s (the H200's
                             FP32 peak is 67) */
    double blas_fp8;      /* fp8: twice bf16 (estimate) */
    double blas_launch_s; /* cuBLASLt's fixed cost per call inside a graph (estimate:
                             4 us, as for the small-matmul floor) */
    double blas_tile;     /* cuBLASLt's output tile edge for the wave count (128; the
                             8192^3 trace shows 320x128, smaller shapes use 128x128) */
    double sms;           /* H200 SXM: 132 SMs */
    double graph_fixed_s; /* one replay's fixed cost: a one-node graph replays in 1.23
                             us, per node 0.50 us at 1000 nodes (docs/perf.md), hence
                             0.7 us fixed */
    double per_node_s;    /* per graph node: 0.50 us (chain of 1000, docs/perf.md) */
    double div32_ops;     /* a 32-bit integer division by a run-time value, in ops of
                             simt_f32 (estimate: about 20 instructions) */
    double div64_ops;     /* a 64-bit one: a subroutine of about 60 (estimate) */
    double attn_tc;       /* flop/s of the fused attention kernel's two products on
                             tensor cores (mma.sync bf16/f16, f32 accumulation) with the
                             online softmax between them: FlashAttention-2 reaches about
                             330-340 TFLOP/s forward on an H100 at head dim 64-128 (its
                             paper, fig. 6); estimate 300 TFLOP/s until measured here */
    double attn_exp_ops;  /* SIMT work per score (scale, mask, max, exp, sum, rescale):
                             estimate 8 ops of simt_f32 */
    double sector;        /* bytes a load moves when the lanes of a loop read addresses
                             apart (cg_kernel.strided): one 32-byte sector each. The
                             4096^3 matmul as one reduction kernel (its B read down a
                             column) took 745.8 ms on an H100 (docs/perf.md), 2.2 TB of
                             sectors at the H100's 3.0 TB/s copy rate */
} COST = {
    .bw = 4265e9,
    .threads_sat = 132.0 * 1024.0,
    .launch_s = 2.0e-6,
    .simt_f32 = 40e12,
    .kmatmul_f32 = 15e12,
    .blas_bf16 = 860e12,
    .blas_f32 = 50e12,
    .blas_fp8 = 1720e12,
    .blas_launch_s = 4.0e-6,
    .blas_tile = 128.0,
    .sms = 132.0,
    .graph_fixed_s = 0.7e-6,
    .per_node_s = 0.50e-6,
    .sector = 32.0,
    .div32_ops = 20.0,
    .div64_ops = 60.0,
    .attn_tc = 300e12,
    .attn_exp_ops = 8.0,
};

/* ==================================================================================
 * Dims
 * ================================================================================== */

int sr_env_init(sr_env *e, const hl_expr_pool *p, const hl_graph *g, const int64_t *dims,
                lm_err *err)
{
    memset(e, 0, sizeof *e);
    uint32_t n = hl_var_count(p);
    e->values = sr__zalloc(n ? n : 1, sizeof *e->values);
    e->bound = sr__zalloc(n ? n : 1, sizeof *e->bound);
    if (!e->values || !e->bound) {
        sr_env_fini(e);
        return sr__oom(err, "cost model");
    }
    const hl_expr_pool *gp = hl_graph_exprs_c(g);
    for (uint32_t v = 0; v < n; v++) {
        const char *name = hl_var_name(p, v);
        for (uint32_t i = 0; name && i < hl_graph_dim_count(g); i++) {
            const hl_dim *d = hl_graph_dim_at(g, i);
            if (strcmp(hl_var_name(gp, d->var), name) == 0) {
                e->values[v] = dims ? dims[i] : d->profile;
                e->bound[v] = true;
            }
        }
    }
    e->env = (hl_env){e->values, e->bound, n};
    return LM_OK;
}

void sr_env_fini(sr_env *e)
{
    free(e->values);
    free(e->bound);
    memset(e, 0, sizeof *e);
}

int64_t sr_env_eval(const sr_env *e, const hl_expr_pool *p, hl_expr x)
{
    lm_err he = {0};
    int64_t v;
    if (hl_e_eval(p, x, &e->env, 0, &v, &he) != 0) return -1;
    return v;
}

/* ==================================================================================
 * Steps
 * ================================================================================== */

static double numel_of(const sr_env *e, const hl_expr_pool *p, uint32_t ndim, const hl_expr *shape)
{
    double n = 1;
    for (uint32_t d = 0; d < ndim; d++) {
        int64_t v = sr_env_eval(e, p, shape[d]);
        n *= v > 0 ? (double)v : 0.0;
    }
    return n;
}

static double mm_flops(const sr_env *e, const hl_expr_pool *p, const ll_matmul *mm)
{
    int64_t m = sr_env_eval(e, p, mm->m), n = sr_env_eval(e, p, mm->n);
    int64_t k = sr_env_eval(e, p, mm->k), b = sr_env_eval(e, p, mm->batch);
    if (m <= 0 || n <= 0 || k <= 0 || b <= 0) return 0;
    return 2.0 * (double)m * (double)n * (double)k * (double)b;
}

/* The scores a fused attention node computes: batch and heads x the (i, j) pairs not
 * masked by causality (bottom-right aligned: row i sees min(skv, i + skv - sq + 1) keys;
 * tiles past the diagonal are skipped). *pairs_out gets the same count; 0 when a size
 * is unknown. */
static double attn_scores(const sr_env *e, const hl_expr_pool *p, const ll_node *n)
{
    const ll_attn *a = &n->at;
    int64_t sq = sr_env_eval(e, p, a->sq), skv = sr_env_eval(e, p, a->skv);
    if (sq <= 0 || skv <= 0) return 0;
    double lead = numel_of(e, p, a->nlead, a->q.dims);
    double pairs = (double)sq * (double)skv;
    if (a->causal) {
        pairs = 0;
        for (int64_t i = 0; i < sq; i++) {
            int64_t see = i + skv - sq + 1;
            pairs += (double)(see < 0 ? 0 : see > skv ? skv : see);
        }
    }
    return lead * pairs;
}

static double buf_bytes(const cg_plan *p, const sr_env *pe, uint32_t b)
{
    if (b >= p->n_buffers) return 0;
    int64_t v = sr_env_eval(pe, p->exprs, p->buffers[b].bytes);
    return v > 0 ? (double)v : 0.0;
}

static void kernel_cost(const cg_plan *p, const ll_graph *lg, const sr_env *pe, const sr_env *le,
                        const cg_kernel *k, sr_kernel_row *row)
{
    /* every distinct buffer once */
    double bytes = 0;
    for (uint32_t i = 0; i < k->n_params; i++) {
        const cg_param *pa = &k->params[i];
        if (pa->kind != CG_P_BUFFER) continue;
        bool again = false;
        for (uint32_t j = 0; j < i && !again; j++)
            again = k->params[j].kind == CG_P_BUFFER && k->params[j].buf == pa->buf;
        if (!again) bytes += buf_bytes(p, pe, pa->buf);
    }
    double threads = 1;
    for (int d = 0; d < 3; d++) {
        int64_t g = sr_env_eval(pe, p->exprs, k->grid[d]);
        row->grid[d] = g;
        row->block[d] = k->block[d];
        threads *= (double)(g > 0 ? g : 1) * (double)(k->block[d] ? k->block[d] : 1);
    }
    double flops = 0, rate = COST.simt_f32, softmax_s = 0;
    const ll_node *n = ll_graph_node(lg, k->llir_node);
    bool attn = n && n->kind == LL_KERNEL && ll_op_is_attn(n->op) && k->template_name &&
                strcmp(k->template_name, "attention") == 0;
    if (n && n->kind == LL_KERNEL && n->op == ll_op_find("KMatmul")) {
        flops = mm_flops(le, ll_graph_exprs(lg), &n->mm); /* KMatmul */
        rate = COST.kmatmul_f32;
    } else if (attn) {
        /* two products of 2 d flops per score on tensor cores, the softmax on SIMT, at the
         * share of the SMs the grid's blocks keep busy (one wave quantization) */
        const hl_expr_pool *lp = ll_graph_exprs(lg);
        double scores = attn_scores(le, lp, n);
        int64_t d = sr_env_eval(le, lp, n->at.d);
        double per_block = (double)(k->block[0] ? k->block[0] : 1) *
                           (double)(k->block[1] ? k->block[1] : 1) *
                           (double)(k->block[2] ? k->block[2] : 1);
        double blocks = threads / per_block;
        double waves = ceil(blocks / COST.sms), util = waves > 0 ? blocks / (waves * COST.sms) : 1;
        flops = 4.0 * scores * (double)(d > 0 ? d : 0);
        rate = COST.attn_tc * (util > 0 ? util : 1);
        softmax_s = COST.attn_exp_ops * scores / (COST.simt_f32 * (util > 0 ? util : 1));
    } else if (k->ops != HL_NONE) {
        int64_t v = sr_env_eval(pe, p->exprs, k->ops); /* loops nested in loops included */
        flops = v >= 0 ? (double)v : 1e18; /* -1: it overflowed int64 */
        int64_t d32 = sr_env_eval(pe, p->exprs, k->divs32), d64 = sr_env_eval(pe, p->exprs, k->divs64);
        flops += d32 >= 0 ? COST.div32_ops * (double)d32 : 1e18;
        flops += d64 >= 0 ? COST.div64_ops * (double)d64 : 1e18;
    } else if (n) {
        flops = numel_of(le, ll_graph_exprs(lg), n->ndim, n->shape); /* one per element */
    }
    if (k->strided != HL_NONE) {
        int64_t v = sr_env_eval(pe, p->exprs, k->strided);
        bytes += v >= 0 ? COST.sector * (double)v : 1e18;
    }
    double par = threads / COST.threads_sat;
    if (par > 1) par = 1;
    double tm = bytes / (COST.bw * par), tc = flops / rate + softmax_s;
    row->bytes = bytes;
    row->flops = flops;
    row->modelled_us = (COST.launch_s + (tm > tc ? tm : tc)) * 1e6;
}

static void blas_cost(const cg_plan *p, const sr_env *pe, const cg_blas *b, sr_kernel_row *row)
{
    const ll_matmul *mm = &b->mm;
    double flops = mm_flops(pe, p->exprs, mm);
    double bytes = buf_bytes(p, pe, b->a) + buf_bytes(p, pe, b->b) + buf_bytes(p, pe, b->d);
    if (b->c != LM_NONE) bytes += buf_bytes(p, pe, b->c);
    if (b->bias != LM_NONE) bytes += buf_bytes(p, pe, b->bias);
    int64_t m = sr_env_eval(pe, p->exprs, mm->m), n = sr_env_eval(pe, p->exprs, mm->n);
    int64_t bt = sr_env_eval(pe, p->exprs, mm->batch);
    double tiles = ceil((double)(m > 0 ? m : 1) / COST.blas_tile) *
                   ceil((double)(n > 0 ? n : 1) / COST.blas_tile) * (double)(bt > 0 ? bt : 1);
    double waves = ceil(tiles / COST.sms);
    double util = tiles / (waves * COST.sms);
    double peak = COST.blas_bf16;
    hl_dtype t = mm->type_a;
    if (t == HL_F32)
        peak = COST.blas_f32;
    else if (t == HL_F8E4M3 || t == HL_F8E5M2)
        peak = COST.blas_fp8;
    double tc = flops / (peak * util), tm = bytes / COST.bw;
    snprintf(row->template_name, sizeof row->template_name, "cublaslt");
    row->bytes = bytes;
    row->flops = flops;
    row->modelled_us = (COST.blas_launch_s + (tm > tc ? tm : tc)) * 1e6;
}

int sr_cost_plan(const cg_plan *p, const ll_graph *lg, const hl_graph *g, const int64_t *dims,
                 double *ms, sr_kernel_row **rows_out, uint32_t *n_rows, lm_err *err)
{
    if (rows_out) *rows_out = NULL;
    if (n_rows) *n_rows = 0;
    sr_env pe, le;
    int rc = sr_env_init(&pe, p->exprs, g, dims, err);
    if (rc) return rc;
    if ((rc = sr_env_init(&le, ll_graph_exprs(lg), g, dims, err))) {
        sr_env_fini(&pe);
        return rc;
    }
    sr_kernel_row *rows = sr__zalloc(p->n_steps ? p->n_steps : 1, sizeof *rows);
    if (!rows) {
        sr_env_fini(&pe);
        sr_env_fini(&le);
        return sr__oom(err, "cost model");
    }
    double total_us = 0;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        sr_kernel_row *row = &rows[s];
        const cg_step *st = &p->steps[s];
        if (st->kind == CG_STEP_KERNEL) {
            const cg_kernel *k = &p->kernels[st->index];
            snprintf(row->template_name, sizeof row->template_name, "%s",
                     k->template_name ? k->template_name : "?");
            row->llir_node = k->llir_node;
            kernel_cost(p, lg, &pe, &le, k, row);
        } else {
            const cg_blas *b = &p->blas[st->index];
            row->llir_node = b->llir_node;
            blas_cost(p, &pe, b, row);
        }
        const ll_node *n = ll_graph_node(lg, row->llir_node);
        const ll_op_info *info = n ? ll_op_get(n->op) : NULL;
        snprintf(row->llir_op, sizeof row->llir_op, "%s", info ? info->name : "?");
        total_us += row->modelled_us;
    }
    total_us += (COST.graph_fixed_s + COST.per_node_s * p->n_steps) * 1e6;
    *ms = total_us / 1000.0;
    sr_env_fini(&pe);
    sr_env_fini(&le);
    if (rows_out) {
        *rows_out = rows;
        if (n_rows) *n_rows = p->n_steps;
    } else {
        free(rows);
    }
    return LM_OK;
}

/* ==================================================================================
 * The evaluator
 * ================================================================================== */

typedef struct cost_ev {
    sr_evaluator base;
    const hl_graph *g;
    int64_t *dims;
    sr_result pending; /* the one candidate in flight, answered at submission */
    bool busy;
} cost_ev;

static uint32_t cost_slots(sr_evaluator *ev)
{
    (void)ev;
    return 1;
}

static int cost_submit(sr_evaluator *ev, const sr_candidate *c, lm_err *err)
{
    cost_ev *ce = (cost_ev *)ev;
    if (ce->busy)
        return sr__fail(err, LM_EARG, NULL, "cost model: a candidate is already in flight");
    sr_result *r = &ce->pending;
    memset(r, 0, sizeof *r);
    ce->busy = true;
    r->id = c->id;
    r->gpu = -1;
    lm_err e = {0};
    double ms = c->costed ? c->modelled_ms : 0; /* costed by the search (sr__prepare) */
    if (!c->plan || !c->llir) {
        r->status = SR_ERROR;
        snprintf(r->why, sizeof r->why, "no plan to cost");
    } else if (!c->costed &&
               sr_cost_plan(c->plan, c->llir, ce->g, ce->dims, &ms, NULL, NULL, &e) != 0) {
        if (e.code == LM_ENOMEM) { /* the evaluator's own failure, not the candidate's */
            ce->busy = false;
            lm_err_copy(err, &e);
            return err->code;
        }
        r->status = SR_ERROR;
        snprintf(r->why, sizeof r->why, "cost model: %.200s", e.msg);
    } else {
        r->ms = ms;
        r->status = c->cutoff_ms > 0 && ms > c->cutoff_ms ? SR_TOO_SLOW : SR_OK;
        if (r->status == SR_TOO_SLOW)
            snprintf(r->why, sizeof r->why, "modelled %.4g ms, over the cutoff %.4g ms", ms,
                     c->cutoff_ms);
    }
    return LM_OK;
}

static int cost_next(sr_evaluator *ev, sr_result *out, lm_err *err)
{
    (void)err;
    cost_ev *ce = (cost_ev *)ev;
    if (!ce->busy) return LM_EARG;
    *out = ce->pending;
    ce->busy = false;
    return LM_OK;
}

static void cost_free(sr_evaluator *ev)
{
    cost_ev *ce = (cost_ev *)ev;
    if (!ce) return;
    free(ce->dims);
    free(ce);
}

static const sr_evaluator_ops COST_OPS = {
    .name = "cost-model",
    .measured = false,
    .slots = cost_slots,
    .submit = cost_submit,
    .next = cost_next,
    .free = cost_free,
};

sr_evaluator *sr_cost_model_new(const sr_eval_setup *s, lm_err *err)
{
    if (!s || !s->graph) {
        sr__fail(err, LM_EARG, NULL, "cost model: no graph");
        return NULL;
    }
    cost_ev *ce = sr__zalloc(1, sizeof *ce);
    uint32_t nd = hl_graph_dim_count(s->graph);
    if (ce) ce->dims = sr__zalloc(nd ? nd : 1, sizeof *ce->dims);
    if (!ce || !ce->dims) {
        free(ce);
        sr__oom(err, "cost model");
        return NULL;
    }
    for (uint32_t i = 0; i < nd; i++)
        ce->dims[i] = s->dims ? s->dims[i] : hl_graph_dim_at(s->graph, i)->profile;
    ce->g = s->graph;
    ce->base.ops = &COST_OPS;
    return &ce->base;
}
