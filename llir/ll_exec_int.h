/* ll_exec_int.h - the CPU executor's internals, shared by ll_exec.c (the run: checks,
 * the memory plan, buffers, standalone kernels), ll_exec_region.c (fused regions) and
 * ll_exec_mm.c (KMatmul and Blas), ll_exec_attn.c (KAttn, KAttnMask), ll_exec_operand.c
 * (operands and one-primitive runs, below the others). Not public.
 *
 * Every top-level node's result is one contiguous hl_tensor in the node's dtype (for
 * LL_INPUT, the caller's tensor, borrowed). A consumer reads a producer's bytes as the
 * dtype its contract names (ll_node.in_dtype): when that is the producer's dtype the
 * buffer is read in place, otherwise through a reinterpreting copy of the same bytes
 * (zero past the end of the producer's buffer), so a wrong dtype rule computes garbage,
 * as the GPU would, and never reads outside a buffer.
 *
 * Standalone kernels and regions run on hlir's reference runtime through small hlir
 * graphs built for the node (a "one-node graph": an Input per operand, the primitive,
 * an Output), so every primitive has exactly the reference's arithmetic. */
#ifndef LUMINAL_LL_EXEC_INT_H
#define LUMINAL_LL_EXEC_INT_H

#include "ll_int.h"

typedef struct ll_exec {
    const ll_graph *g;
    const hl_expr_pool *p;
    const int64_t *dimv; /* the value of every dim (ll_graph_dim_at order) */
    hl_env env;          /* the same, by pool variable */
    uint32_t n;          /* node count */
    int64_t *dims;       /* n * HL_MAX_DIMS: every node's evaluated shape */
    size_t *numel;       /* per node */
    hl_tensor *buf;      /* per top-level node: its result (data NULL when none) */
    bool *owned;         /* per node: buf[] was allocated by the run */
    uint32_t *mini;      /* per node: scratch for the region being run */
    lm_err *err;
} ll_exec;

/* The node's evaluated dims. */
static inline const int64_t *ll__x_dims(const ll_exec *x, uint32_t id)
{
    return x->dims + (size_t)id * HL_MAX_DIMS;
}

/* Operand `src` of node `id` read as `rdt`, `count` elements: *out views src's buffer in
 * place when the dtypes agree and the buffer holds count elements; otherwise *out is a
 * new zero-padded copy of the same bytes and *copied is set (free it with
 * hl_tensor_fini). out->ndim is 1. */
int ll__x_operand(ll_exec *x, uint32_t id, uint32_t src, hl_dtype rdt, size_t count, hl_tensor *out,
                  bool *copied);

/* Bytes of the reinterpreting copy ll__x_operand makes (0 when it reads in place). */
size_t ll__x_operand_bytes(const ll_exec *x, uint32_t src, hl_dtype rdt, size_t count);

/* ---- one-node graphs ---- */

/* A new hlir graph with every dim of x's graph declared, or NULL with err set. */
hl_graph *ll__x_mini_new(ll_exec *x, uint32_t id);
/* Adds Input `in<k>` of dtype dt and shape [count]; its id in *out. */
int ll__x_mini_input(ll_exec *x, uint32_t id, hl_graph *hg, uint32_t k, hl_dtype dt, size_t count,
                     uint32_t *out);
/* Adds prim (an LLIR node's primitive: expressions of x's pool) reading ins[i]; *out its
 * id. For an Output, the name is "out". */
int ll__x_mini_prim(ll_exec *x, uint32_t id, hl_graph *hg, const hl_node *prim, const uint32_t *ins,
                    uint32_t *out);
/* The error of a failed builder call on hg: LM_ENOMEM when hg's pool ran out of memory,
 * else hlir's builder error, named after node id. */
int ll__x_mini_fail(ll_exec *x, uint32_t id, hl_graph *hg);
/* Runs hg (one Output) on ins and moves the output into x->buf[id], checking that the
 * dtype and the element count are the node's. Frees hg. */
int ll__x_mini_run(ll_exec *x, uint32_t id, hl_graph *hg, const hl_tensor *ins);

/* ---- the node kinds of the other files ---- */

/* LL_REGION node id: the interior evaluated with f32 float values and one rounding at
 * the store (ll_exec_region.c). */
int ll__x_region(ll_exec *x, uint32_t id);
/* Bytes of the region's working memory, for the memory plan. */
size_t ll__x_region_work(const ll_exec *x, uint32_t id);
/* KMatmul and Blas (ll_exec_mm.c). */
int ll__x_matmul(ll_exec *x, uint32_t id);
size_t ll__x_matmul_work(const ll_exec *x, uint32_t id);
/* KAttn and KAttnMask (ll_exec_attn.c). */
int ll__x_attn(ll_exec *x, uint32_t id);
size_t ll__x_attn_work(const ll_exec *x, uint32_t id);

#endif /* LUMINAL_LL_EXEC_INT_H */
