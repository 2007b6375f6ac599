/* ll_lower.h - LLIR straight from an HLIR graph, without the e-graph. Not public; tests
 * include it (INTERNALS llir) to build regions and matmuls by hand.
 *
 * ll_graph_from_hlir (llir.h) lowers every node to its own standalone kernel. The plan
 * below chooses, per HLIR node, what a genome would choose in the e-graph:
 *
 *   KERNEL  a standalone kernel (K*), or Input / Output for those nodes
 *   INLINE  computed inside every region that reads it (FInl): no top-level node; every
 *           reader must be a REGION or INLINE node, or the MATMUL / BLAS SumReduce that
 *           absorbs this Mul. Only fusible ops: Constant, Iota, Cast, Exp2, Log2, Sin,
 *           Recip, Sqrt, Add, Mul, Mod, LessThan, SumReduce, MaxReduce.
 *   REGION  the root of a fused region (FStore): its interior is this node and, through
 *           its inputs, every INLINE node it reaches (each once: the interior is a DAG);
 *           every other node it reaches is read by an FLoad (one per source node).
 *   MATMUL  a SumReduce over a Mul: the generic matmul kernel (KMatmul) reading the
 *           Mul's inputs; the Mul must be INLINE.
 *   BLAS    the same as a cuBLASLt call (Blas), with the extras of ll_lower_blas.
 *
 * A matmul is recognised as the builder's hl_matmul makes it: the Mul's shape is
 * [batch..., M, N, K], input 0 (A) has stride 0 along N, input 1 (B) stride 0 along M,
 * every stride is c*z, A or B is contiguous along K or along M / N (which gives the
 * row- or column-major order and lda / ldb), the batch dims merge (the outer stride is
 * the inner one times the inner dim, or both are 0), and the SumReduce reduces the last
 * dim reading the Mul contiguously. Anything else is refused with LM_EARG naming the
 * node and the stride that does not fit.
 *
 * Ids: top-level nodes follow the HLIR order, each region's interior right after its
 * region node (loads first where they come in HLIR order, the root last). With every
 * node KERNEL, LLIR node i is HLIR node i. */
#ifndef LUMINAL_LL_LOWER_H
#define LUMINAL_LL_LOWER_H

#include "llir.h"

typedef enum ll_lower_impl {
    LL_LOWER_KERNEL = 0,
    LL_LOWER_INLINE,
    LL_LOWER_REGION,
    LL_LOWER_MATMUL,
    LL_LOWER_BLAS
} ll_lower_impl;

/* What a BLAS node adds to alpha * A B: D = epi(alpha * AB + beta * C (+ bias[n])). */
typedef struct ll_lower_blas {
    double alpha; /* rounded to alpha_dt by the lowering; 0 means 1 */
    hl_dtype alpha_dt;
    uint32_t c;    /* HLIR node read contiguously as C [batch, M, N] (beta 1), or
                      HL_NONE (beta 0) */
    uint32_t bias; /* HLIR node read as bias [N], or HL_NONE */
    bool gelu;     /* the gelu (tanh form) epilogue */
} ll_lower_blas;

typedef struct ll_lower_plan {
    const ll_lower_impl *impl; /* one per HLIR node; NULL: every node KERNEL */
    const ll_lower_blas *blas; /* one per HLIR node, read where impl is BLAS; NULL: plain */
} ll_lower_plan;

/* Lowers g as plan says (plan may be NULL: every node KERNEL). Returns the finished
 * graph, or NULL with err set: LM_EARG for a plan that does not fit the graph (naming the
 * HLIR node and why), for a graph holding a builder error; LM_ENOMEM. */
ll_graph *ll__lower_hlir(const hl_graph *g, const ll_lower_plan *plan, lm_err *err);


#endif /* LUMINAL_LL_LOWER_H */
