/* pf.h - the program tests' fixture: a small HLIR graph, its LLIR, and a plan written by
 * hand the way codegen writes plans (real CUDA C that NVRTC compiles), so that the
 * runtime can be tested before and independently of codegen. Header-only.
 *
 * The graph, with one dynamic dim n in [1, 256] (profile 8; pf_make_hi: [1, hi]):
 *
 *     x [n, 4] f32, y [n, 4] f32, w [4, 8] f32
 *     a = x + y                 step 0  kernel 0  "elementwise"  buffer A (temp)
 *     b = exp2(a)               step 1  kernel 1  "elementwise"  buffer B (temp)
 *   with_blas:
 *     m = b @ w  (cuBLASLt)     step 2  blas 0                   buffer M (temp), W (ws)
 *     out = m * m               step 3  kernel 2  "elementwise"  buffer O (output 0) [n, 8]
 *   without:
 *     c = b * x                 step 2  kernel 2  "elementwise"  buffer C (temp)
 *     out = c + c               step 3  kernel 3  "elementwise"  buffer O (output 0) [n, 4]
 *
 * A, B, C (or A, B) may share memory in place; A and C share arena bytes without that. */
#ifndef LUMINAL_TESTS_PROGRAM_PF_H
#define LUMINAL_TESTS_PROGRAM_PF_H

#include "codegen.h"
#include "ll_lower.h"
#include "llir.h"
#include "program.h"

#include "lm_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buffer ids of the fixture's plan. */
enum { PF_X, PF_Y, PF_W, PF_A, PF_B, PF_M_OR_C, PF_OUT, PF_WS, PF_NBUF };

typedef struct pf {
    bool blas;
    hl_graph *h;
    ll_graph *g;
    cg_plan plan; /* owned by the fixture (pf_free) */
} pf;

#define PF_FOR                                                                                     \
    "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;\n"          \
    "       i += (long long)gridDim.x * blockDim.x)\n"

static const char *const PF_SRC_ADD =
    "extern \"C\" __global__ void lm_kernel(const float *__restrict__ x,\n"
    "    const float *__restrict__ y, float *__restrict__ out, long long n) {\n"
    "  long long total = n * 4;\n" PF_FOR "    out[i] = x[i] + y[i];\n"
    "}\n";
static const char *const PF_SRC_EXP2 =
    "extern \"C\" __global__ void lm_kernel(const float *__restrict__ x,\n"
    "    float *__restrict__ out, long long n) {\n"
    "  long long total = n * 4;\n" PF_FOR "    out[i] = exp2f(x[i]);\n"
    "}\n";
static const char *const PF_SRC_MUL4 =
    "extern \"C\" __global__ void lm_kernel(const float *__restrict__ a,\n"
    "    const float *__restrict__ b, float *__restrict__ out, long long n) {\n"
    "  long long total = n * 4;\n" PF_FOR "    out[i] = a[i] * b[i];\n"
    "}\n";
static const char *const PF_SRC_MUL8 =
    "extern \"C\" __global__ void lm_kernel(const float *__restrict__ a,\n"
    "    const float *__restrict__ b, float *__restrict__ out, long long n) {\n"
    "  long long total = n * 8;\n" PF_FOR "    out[i] = a[i] * b[i];\n"
    "}\n";
static const char *const PF_SRC_DOUBLE =
    "extern \"C\" __global__ void lm_kernel(const float *__restrict__ a,\n"
    "    const float *__restrict__ b, float *__restrict__ out, long long n) {\n"
    "  long long total = n * 4;\n" PF_FOR "    out[i] = a[i] + b[i];\n"
    "}\n";

static inline char *pf_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    memcpy(d, s, n);
    return d;
}

/* The LLIR node computing HLIR node `hid`'s value: the top-level node whose prim is hid's
 * op over the same dtype, found in order (the fixture's ops are distinct enough). */
static inline uint32_t pf_find(const ll_graph *g, ll_kind kind, hl_op op, uint32_t nth)
{
    for (uint32_t id = 0; id < ll_graph_node_count(g); id++) {
        const ll_node *n = ll_graph_node(g, id);
        if (n->kind == kind && (kind == LL_LIBRARY || n->prim.op == op) && nth-- == 0) return id;
    }
    ck_abort_msg("fixture: no LLIR node of kind %d op %d", (int)kind, (int)op);
    return LM_NONE;
}

static inline hl_expr pf_e(pf *f, const char *text)
{
    hl_expr e;
    lm_err he = {0};
    ck_assert_msg(hl_e_parse(f->plan.exprs, text, &e, &he) == 0, "%s", he.msg);
    return e;
}

static inline void pf_buffer(pf *f, uint32_t b, cg_buf_kind kind, uint32_t index, hl_dtype dt,
                             const char *numel, uint32_t first, uint32_t last, uint32_t node)
{
    cg_buffer *x = &f->plan.buffers[b];
    x->kind = kind;
    x->index = index;
    x->dtype = dt;
    x->numel = pf_e(f, numel);
    x->first_step = first;
    x->last_step = last;
    x->llir_node = node;
}

/* A kernel reading buffers r0 (and r1 when != LM_NONE), writing w, taking dim n last. */
static inline void pf_kernel(pf *f, uint32_t k, const char *src, uint32_t node, const char *grid,
                             uint32_t r0, uint32_t r1, uint32_t w)
{
    cg_kernel *x = &f->plan.kernels[k];
    memset(x, 0, sizeof *x);
    x->source = pf_strdup(src);
    x->llir_node = node;
    x->grid[0] = pf_e(f, grid);
    x->grid[1] = x->grid[2] = pf_e(f, "1");
    x->block[0] = 128;
    x->block[1] = x->block[2] = 1;
    x->template_name = "elementwise";
    uint32_t j = 0;
    x->params[j++] = (cg_param){CG_P_BUFFER, r0, 0, false};
    if (r1 != LM_NONE) x->params[j++] = (cg_param){CG_P_BUFFER, r1, 0, false};
    x->params[j++] = (cg_param){CG_P_BUFFER, w, 0, true};
    x->params[j++] = (cg_param){CG_P_DIM, 0, 0, false};
    x->n_params = j;
}

static inline void pf_make_hi(pf *f, bool blas, int64_t hi)
{
    memset(f, 0, sizeof *f);
    f->blas = blas;
    hl_graph *h = f->h = hl_graph_new();
    hl_expr n = hl_graph_dim(h, "n", 1, hi, 8);
    hl_expr dx[2] = {n, hl_n(h, 4)}, dw[2] = {hl_n(h, 4), hl_n(h, 8)};
    hl_t x = hl_input(h, "x", HL_F32, 2, dx), y = hl_input(h, "y", HL_F32, 2, dx);
    hl_t w = hl_input(h, "w", HL_F32, 2, dw);
    hl_t a = hl_add(h, x, y), b = hl_exp2(h, a), out;
    uint32_t sum = LM_NONE;
    if (blas) {
        hl_t m = hl_matmul(h, b, w);
        sum = m.node;
        out = hl_mul(h, m, m);
    } else {
        hl_t c = hl_mul(h, b, x);
        out = hl_add(h, c, c);
    }
    hl_output(h, "out", out);
    ck_assert_msg(hl_graph_error(h)->code == 0, "%s", hl_graph_error(h)->msg);
    uint32_t nn = hl_graph_node_count(h);
    ll_lower_impl *impl = calloc(nn, sizeof *impl);
    if (blas) {
        impl[hl_graph_node(h, sum)->in[0].node] = LL_LOWER_INLINE;
        impl[sum] = LL_LOWER_BLAS;
    }
    ll_lower_plan lp = {impl, NULL};
    lm_err e = {0};
    f->g = ll__lower_hlir(h, &lp, &e);
    free(impl);
    ck_assert_msg(f->g != NULL, "%s", e.msg);
    const ll_graph *g = f->g;

    cg_plan *p = &f->plan;
    p->exprs = hl_expr_pool_new();
    p->n_dims = 1;
    p->dims = calloc(1, sizeof *p->dims);
    p->dim_names = calloc(1, sizeof *p->dim_names);
    p->dim_names[0] = pf_strdup("n");
    p->dims[0] = (hl_dim){0, hl_e_var(p->exprs, "n"), 1, hi, 8};
    p->n_buffers = blas ? PF_NBUF : PF_NBUF - 1;
    p->buffers = calloc(PF_NBUF, sizeof *p->buffers);
    uint32_t nx = ll_graph_input(g, 0), ny = ll_graph_input(g, 1), nw = ll_graph_input(g, 2);
    uint32_t na = pf_find(g, LL_KERNEL, HL_OP_ADD, 0), nb = pf_find(g, LL_KERNEL, HL_OP_EXP2, 0);
    uint32_t nout = ll_graph_node(g, ll_graph_output(g, 0))->in[0];
    pf_buffer(f, PF_X, CG_BUF_INPUT, 0, HL_F32, "n*4", 0, 0, nx);
    pf_buffer(f, PF_Y, CG_BUF_INPUT, 1, HL_F32, "n*4", 0, 0, ny);
    pf_buffer(f, PF_W, CG_BUF_INPUT, 2, HL_F32, "32", 0, blas ? 2 : 0, nw);
    pf_buffer(f, PF_A, CG_BUF_TEMP, LM_NONE, HL_F32, "n*4", 0, 1, na);
    pf_buffer(f, PF_B, CG_BUF_TEMP, LM_NONE, HL_F32, "n*4", 1, 2, nb);
    if (blas) {
        uint32_t nm = pf_find(g, LL_LIBRARY, HL_OP_COUNT, 0);
        pf_buffer(f, PF_M_OR_C, CG_BUF_TEMP, LM_NONE, HL_F32, "n*8", 2, 3, nm);
        pf_buffer(f, PF_OUT, CG_BUF_OUTPUT, 0, HL_F32, "n*8", 3, 3, nout);
        pf_buffer(f, PF_WS, CG_BUF_WORKSPACE, LM_NONE, HL_BOOL, "33554432", 2, 2, nm);
    } else {
        uint32_t nc = pf_find(g, LL_KERNEL, HL_OP_MUL, 0);
        pf_buffer(f, PF_M_OR_C, CG_BUF_TEMP, LM_NONE, HL_F32, "n*4", 2, 3, nc);
        pf_buffer(f, PF_OUT, CG_BUF_OUTPUT, 0, HL_F32, "n*4", 3, 3, nout);
    }
    /* x is read again by kernel 2 without blas */
    if (!blas) p->buffers[PF_X].last_step = 2;
    p->n_kernels = blas ? 3 : 4;
    p->kernels = calloc(4, sizeof *p->kernels);
    pf_kernel(f, 0, PF_SRC_ADD, na, "cdiv(n*4, 128)", PF_X, PF_Y, PF_A);
    pf_kernel(f, 1, PF_SRC_EXP2, nb, "cdiv(n*4, 128)", PF_A, LM_NONE, PF_B);
    p->n_steps = 4;
    p->steps = calloc(4, sizeof *p->steps);
    p->steps[0] = (cg_step){CG_STEP_KERNEL, 0};
    p->steps[1] = (cg_step){CG_STEP_KERNEL, 1};
    if (blas) {
        pf_kernel(f, 2, PF_SRC_MUL8, nout, "cdiv(n*8, 128)", PF_M_OR_C, PF_M_OR_C, PF_OUT);
        p->n_blas = 1;
        p->blas = calloc(1, sizeof *p->blas);
        cg_blas *bl = &p->blas[0];
        bl->llir_node = pf_find(g, LL_LIBRARY, HL_OP_COUNT, 0);
        bl->a = PF_B, bl->b = PF_W, bl->c = LM_NONE, bl->d = PF_M_OR_C, bl->bias = LM_NONE;
        bl->workspace = PF_WS;
        ll_matmul *m = &bl->mm;
        m->m = pf_e(f, "n"), m->n = pf_e(f, "8"), m->k = pf_e(f, "4"), m->batch = pf_e(f, "1");
        m->lda = pf_e(f, "4"), m->ldb = pf_e(f, "8");
        m->stride_a = m->stride_b = pf_e(f, "0");
        m->order_a = m->order_b = LL_ROW_MAJOR;
        m->alpha = 1.0;
        m->beta = 0.0;
        m->epilogue = LL_EPI_NONE;
        m->type_a = m->type_b = m->type_c = m->type_d = m->type_bias = HL_F32;
        p->steps[2] = (cg_step){CG_STEP_BLAS, 0};
        p->steps[3] = (cg_step){CG_STEP_KERNEL, 2};
    } else {
        uint32_t nc = pf_find(g, LL_KERNEL, HL_OP_MUL, 0);
        pf_kernel(f, 2, PF_SRC_MUL4, nc, "cdiv(n*4, 128)", PF_B, PF_X, PF_M_OR_C);
        pf_kernel(f, 3, PF_SRC_DOUBLE, nout, "cdiv(n*4, 128)", PF_M_OR_C, PF_M_OR_C, PF_OUT);
        p->steps[2] = (cg_step){CG_STEP_KERNEL, 2};
        p->steps[3] = (cg_step){CG_STEP_KERNEL, 3};
    }
    p->n_inputs = 3;
    p->input_buf = calloc(3, sizeof *p->input_buf);
    p->input_buf[0] = PF_X, p->input_buf[1] = PF_Y, p->input_buf[2] = PF_W;
    p->n_outputs = 1;
    p->output_buf = calloc(1, sizeof *p->output_buf);
    p->output_buf[0] = PF_OUT;
}

/* The fixture with n in [1, 256]. */
static inline void pf_make(pf *f, bool blas)
{
    pf_make_hi(f, blas, 256);
}

static inline void pf_free(pf *f)
{
    cg_plan *p = &f->plan;
    hl_expr_pool_free(p->exprs);
    for (uint32_t d = 1; d < p->n_dims; d++)
        free(p->dim_names[d]);
    free(p->dim_names[0]);
    free(p->dim_names);
    free(p->dims);
    free(p->buffers);
    for (uint32_t k = 0; k < p->n_kernels; k++)
        free(p->kernels[k].source);
    free(p->kernels);
    free(p->blas);
    free(p->steps);
    free(p->input_buf);
    free(p->output_buf);
    ll_graph_free(f->g);
    hl_graph_free(f->h);
}

/* Seeded host inputs at n (x, y: n*4 floats; w: 32). */
typedef struct pf_in {
    float *x, *y, *w;
    size_t nx;
} pf_in;

static inline void pf_inputs(pf_in *in, int64_t n, uint64_t seed)
{
    in->nx = (size_t)n * 4;
    in->x = malloc(in->nx * sizeof(float));
    in->y = malloc(in->nx * sizeof(float));
    in->w = malloc(32 * sizeof(float));
    lm_pcg32 r;
    lm_pcg_seed(&r, seed, 1);
    for (size_t i = 0; i < in->nx; i++) {
        in->x[i] = (float)lm_pcg_unit(&r) - 0.5f;
        in->y[i] = (float)lm_pcg_unit(&r) - 0.5f;
    }
    for (size_t i = 0; i < 32; i++)
        in->w[i] = (float)lm_pcg_unit(&r) - 0.5f;
}

static inline void pf_inputs_free(pf_in *in)
{
    free(in->x), free(in->y), free(in->w);
}

/* Sets the three inputs of p. */
static inline void pf_set(pg_program *p, const pf_in *in)
{
    lm_err e = {0};
    ck_assert_msg(pg_program_set_input_named(p, "x", in->x, in->nx * 4, &e) == 0, "%s", e.msg);
    ck_assert_msg(pg_program_set_input_named(p, "y", in->y, in->nx * 4, &e) == 0, "%s", e.msg);
    ck_assert_msg(pg_program_set_input_named(p, "w", in->w, 32 * 4, &e) == 0, "%s", e.msg);
}

#endif /* LUMINAL_TESTS_PROGRAM_PF_H */
