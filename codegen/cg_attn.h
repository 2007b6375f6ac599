/* cg_attn.h - the fused attention kernel (flash-style, tensor cores): the contract between
 * the code that recognises attention (rules.dsl -> the LLIR node KAttn -> codegen's glue in
 * cg_plan.c, which fills a cg_attn_spec) and the template that writes its CUDA
 * (cg_attn.c: cg__attn_kernels).
 *
 * Semantics, for every leading index bh in [0, n_bh) (batch and heads flattened), query row
 * i in [0, sq) and column c in [0, head_dim):
 *
 *   s[i][j] = scale * sum_d q(bh,i,d) * k(bh,j,d)   (+ mask(bh,i,j) when has_mask)
 *   s[i][j] = -inf where causal and j > i + (skv - sq)         (bottom-right aligned)
 *   o(bh,i,c) = sum_j softmax_j(s[i][.]) * v(bh,j,c)
 *
 * computed with f32 accumulation and an f32 softmax; a row whose every key is masked
 * gives 0 (never NaN). Element (bh, row, col) of tensor X lives at
 *   X_base(bh) + row * X_row + col       (col stride 1: the head dim is contiguous)
 * where X_base is an expression in the variable z (= bh), and X_row an expression free of
 * z, both of the graph's dims, in the plan's expression pool, in elements. GQA/MQA is
 * expressed by k_base/v_base (e.g. (z / group) * ...): nothing else knows of groups.
 *
 * Ownership: cg_attn.c (the template) and this header belong to the kernel side; the glue
 * that fills the spec from an LLIR node belongs to the rules side. Changes to this struct
 * are made in /work/contract/cg_attn.h first and copied byte for byte.
 */
#ifndef LUMINAL_CG_ATTN_H
#define LUMINAL_CG_ATTN_H

#include "cg_int.h"

/* The tile shape: a genome choice (the search measures it), not a constant. */
typedef struct cg_attn_tile {
    uint32_t block_q;   /* queries per block: 64 or 128 */
    uint32_t block_k;   /* keys per step: 32, 64 or 128 */
    uint32_t warps;     /* warps per block: 4 or 8 */
    uint32_t stages;    /* K/V pipeline depth (cp.async): 1 or 2 */
    uint32_t kv_splits; /* 1, or >1: flash-decoding, the KV length split over that many
                           blocks per (bh, query tile) and the partial results combined */
} cg_attn_tile;

typedef struct cg_attn_spec {
    uint32_t llir_node;     /* the KAttn node (for errors and the kernel's llir_node) */
    hl_dtype dtype;         /* q, k, v and o storage: HL_BF16 or HL_F16 */
    uint32_t head_dim;      /* 64 or 128 (other values: the unfused path) */
    bool causal;
    bool has_mask;
    hl_dtype mask_dtype;    /* the mask's storage dtype (has_mask) */
    float scale;            /* multiplies q.k before the mask is added */
    hl_expr n_bh, sq, skv;  /* z-free, >= 1 */
    hl_expr q_base, k_base, v_base, o_base, m_base; /* in z = bh; m_base: has_mask */
    hl_expr q_row, k_row, v_row, o_row, m_row;      /* z-free; m_row: has_mask */
    hl_expr m_col;          /* the mask's column stride (0 for a broadcast column) */
    uint32_t q_buf, k_buf, v_buf, o_buf, m_buf;      /* buffers (m_buf: LM_NONE without) */
    uint32_t ws_buf;        /* kv_splits > 1: the partial-results workspace (f32), whose
                               size cg__attn_workspace gives; else LM_NONE */
    cg_attn_tile tile;
} cg_attn_spec;

/* Elements (f32) of the workspace a split spec needs: an expression of the dims in the
 * plan's pool; HL_NONE when tile.kv_splits == 1. */
hl_expr cg__attn_workspace(cg_ctx *c, const cg_attn_spec *s);

/* Writes the kernels of spec s: one (kv_splits == 1) or two (the split pass, then the
 * combine), into k[0..*n). Each cg_kernel is complete (source, grid, block, shared_bytes
 * for dynamic shared memory, params, template_name "attention" / "attention-combine",
 * and the cost model's counts). LM_EUNSUPPORTED naming the node for a spec no variant
 * covers (head dim, dtype, tile); LM_ENOMEM. */
int cg__attn_kernels(cg_ctx *c, const cg_attn_spec *s, cg_kernel k[2], uint32_t *n);

/* The tiles the template supports for this head dim and dtype, in a fixed order (the
 * genome's choices): writes at most cap, returns how many there are. */
uint32_t cg__attn_tiles(uint32_t head_dim, hl_dtype dtype, cg_attn_tile *out, uint32_t cap);

#endif /* LUMINAL_CG_ATTN_H */
