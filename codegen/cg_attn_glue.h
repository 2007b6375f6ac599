/* cg_attn_glue.h - the rules side's glue to the fused attention template (cg_attn.h):
 * cg_plan.c fills a cg_attn_spec from a KAttn or KAttnMask node (docs/llir.md,
 * Attention). Private to codegen and its tests. */
#ifndef LUMINAL_CG_ATTN_GLUE_H
#define LUMINAL_CG_ATTN_GLUE_H

#include "cg_attn.h"

/* The spec codegen gives the template for attention node `node` of g, but its buffers
 * (LM_NONE): sizes, bases, row and column strides in a pool of its own (*pool, free with
 * hl_expr_pool_free), the flags, the scale and the tile. For tests, which check every
 * address it gives against the node's views. LM_EARG for another node, LM_EUNSUPPORTED as
 * codegen refuses it (a head dim other than 64 and 128, a dtype other than bf16 and f16,
 * a head dim that is not contiguous, strides the kernel cannot address), LM_ENOMEM. */
int cg__attn_spec_of(const ll_graph *g, uint32_t node, hl_expr_pool **pool, cg_attn_spec *out,
                     lm_err *err);

#endif /* LUMINAL_CG_ATTN_GLUE_H */
