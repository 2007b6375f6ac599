/* ll_priv.h - what the executor, the HLIR lowering and the comparison share inside llir/:
 * the module's doors (errors, memory), the one place that talks to hlir's error record,
 * and small helpers for reading nodes. Not public.
 *
 * The hlir adapters (ll__hl_*) are the only code of these files that sees hlir's error
 * record: each checks hlir's code with `!= 0`, copies its message and gives the matching
 * lm_code, so the conversion of hlir to base's lm_err touches only ll_hl.c. */
#ifndef LUMINAL_LL_PRIV_H
#define LUMINAL_LL_PRIV_H

#include "ll_int.h"

#include <stdarg.h>

/* ---- doors: ll__fail and ll__alloc are ll_int.h's ---- */

/* As ll__fail, with the message prefixed by the node's description (ll__node_desc), and
 * loc naming the node id. */
int ll__fail_node(lm_err *err, int code, const ll_graph *g, uint32_t id, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* "llir node 7 (KAdd kernel, f32, e-class 31, rule 4)": the node's id, op, kind, dtype
 * and provenance (e-class and engine rule, "from hlir" when it has none). */
void ll__node_desc(const ll_graph *g, uint32_t id, char *buf, size_t cap);

/* The primitive op computes (HL_OP_COUNT for matmuls, plumbing, IO and unknown ops). */
hl_op ll__op_prim(ll_op op);
const char *ll__kind_name(ll_kind k);

/* ---- hlir adapters (ll_hl.c) ---- */

/* Each calls the hlir function of the same name and, on failure, raises into err the
 * matching lm_code with hlir's message prefixed by `what` (may be NULL). */
int ll__hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
               hl_tensor *outputs, const char *what, lm_err *err);
int ll__hl_tensor_init(hl_tensor *t, hl_dtype dtype, uint32_t ndim, const int64_t *dims,
                       lm_err *err);
int ll__hl_eval(const hl_expr_pool *p, hl_expr e, const hl_env *env, int64_t z, int64_t *out,
                const char *what, lm_err *err);
/* The builder's sticky error of g, if any, raised with `what` as prefix; 0 otherwise. */
int ll__hl_graph_status(const hl_graph *g, const char *what, lm_err *err);

/* ---- the comparison (ll_compare.c) ---- */

/* w[id] for every node of g: the largest sum of rounding weights over the paths from an
 * input to the node (ll_output_tolerances reads it at the outputs); 0 for a node every
 * correct candidate computes exactly as the reference does. */
int ll__path_weights(const hl_graph *g, const int64_t *dim_values, double *w, lm_err *err);

/* ---- expressions ---- */

/* Copies expression e of pool src into pool dst, variables by name (dst must already
 * know them: as declared dims of the graph dst belongs to). memo, when not NULL, has one
 * entry per id of src, HL_NONE where not yet copied, and is filled as a cache. Returns
 * HL_NONE when dst cannot build it (out of memory, or a folded constant overflows). */
hl_expr ll__expr_copy(hl_expr_pool *dst, const hl_expr_pool *src, hl_expr e, hl_expr *memo);

/* Element count of dims[0..ndim) (int64 values); false on a negative dim or overflow. */
bool ll__numel(uint32_t ndim, const int64_t *dims, size_t *out);

#endif /* LUMINAL_LL_PRIV_H */
