/* ll_kind.h - reading the fields of a backend kind node (K*, KMatmul, Blas, KAttn*, F*) out
 * of the search space into an ll_node (ll_kind.c): what the genome builder
 * (ll_from_genome.c) fills its nodes with, and what the space's build checks once per kind
 * (ll__check_kinds). Not public. */
#ifndef LUMINAL_LL_KIND_H
#define LUMINAL_LL_KIND_H

#include "ll_int.h"

/* A decoding of kind fields: the space, the expression decoder (into xd.p, memoised per
 * class), the error record and the messages' prefix ("graph", "space: a kind's fields"). */
typedef struct ll__kd {
    const ll_space *s;
    ll__xdec xd;
    lm_err *err;
    const char *what;
} ll__kd;

/* LM_EVERIFY naming class cls (and node, unless LM_NONE) with k's prefix. */
int ll__kd_fail(const ll__kd *k, uint32_t cls, uint32_t node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Field f of kind node kn: an EList (at most HL_MAX_DIMS entries), a DType, an f64. */
int ll__kind_elist(ll__kd *k, uint32_t kn, uint32_t f, const ll_op_info *o, uint32_t *n,
                   hl_expr *out);
int ll__kind_dtype(ll__kd *k, uint32_t cls, uint32_t kn, uint32_t f, const ll_op_info *o,
                   hl_dtype *out);
double ll__kind_f64(ll__kd *k, uint32_t kn, uint32_t f);
/* A view from fields fd (dims) and fs (strides) of kind node kn (the same length). */
int ll__kind_view(ll__kd *k, uint32_t cls, uint32_t kn, const ll_op_info *o, uint32_t fd,
                  uint32_t fs, hl_view *v);
/* The dtype a contract gives (as_input for LL_DT_AS_INPUT and LL_DT_ANY). */
int ll__kind_contract(ll__kd *k, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_dt_contract ct,
                      hl_dtype as_input, hl_dtype *out);
/* The fields of kind node kn (op o, nin inputs) into nd, whose dtype is set: the
 * primitive and its views, a KMatmul's or Blas's matmul, an attention's fields;
 * LM_EVERIFY naming the class and node when they do not form the op. */
int ll__kind_fields(ll__kd *k, uint32_t cls, uint32_t kn, const ll_op_info *o, ll_node *nd,
                    uint32_t nin);

#endif /* LUMINAL_LL_KIND_H */
