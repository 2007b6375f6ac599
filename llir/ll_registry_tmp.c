/* ll_registry_tmp.c - TEMPORARY: a stand-in for llir's op registry.
 *
 * ==================================================================================
 * TEMPORARY. The registry (one entry per backend constructor of rules.dsl, with every
 * field and dtype contract: ll_registry.c on branch i9-llir) replaces this file when the
 * branches meet; delete it then. Only the names, dialects and primitives are here: the
 * executor and the HLIR lowering look ops up by name (ll_op_find) and read nothing else
 * but ll_op_info.name and .prim, so they work unchanged on the real registry.
 * ==================================================================================
 */
#include "ll_priv.h"

#include <string.h>

/* clang-format off */
#define OP(n, d, p, k) {.name = n, .dialect = d, .prim = p, .n_inputs = k}
/* clang-format on */

static const ll_op_info OPS[] = {
    OP("Input", LL_D_IO, HL_OP_COUNT, 0),
    OP("Output", LL_D_IO, HL_OP_COUNT, 1),
    OP("KConstant", LL_D_KERNEL, HL_OP_CONSTANT, 0),
    OP("KIota", LL_D_KERNEL, HL_OP_IOTA, 0),
    OP("KCast", LL_D_KERNEL, HL_OP_CAST, 1),
    OP("KExp2", LL_D_KERNEL, HL_OP_EXP2, 1),
    OP("KLog2", LL_D_KERNEL, HL_OP_LOG2, 1),
    OP("KSin", LL_D_KERNEL, HL_OP_SIN, 1),
    OP("KRecip", LL_D_KERNEL, HL_OP_RECIP, 1),
    OP("KSqrt", LL_D_KERNEL, HL_OP_SQRT, 1),
    OP("KAdd", LL_D_KERNEL, HL_OP_ADD, 2),
    OP("KMul", LL_D_KERNEL, HL_OP_MUL, 2),
    OP("KMod", LL_D_KERNEL, HL_OP_MOD, 2),
    OP("KLessThan", LL_D_KERNEL, HL_OP_LESS_THAN, 2),
    OP("KGather", LL_D_KERNEL, HL_OP_GATHER, 2),
    OP("KScatter", LL_D_KERNEL, HL_OP_SCATTER, 3),
    OP("KSum", LL_D_KERNEL, HL_OP_SUM_REDUCE, 1),
    OP("KMax", LL_D_KERNEL, HL_OP_MAX_REDUCE, 1),
    OP("KMatmul", LL_D_KERNEL, HL_OP_COUNT, 2),
    OP("FStore", LL_D_REGION, HL_OP_COUNT, 1),
    OP("FLoad", LL_D_LOAD, HL_OP_COUNT, 1),
    OP("FInl", LL_D_INLINE, HL_OP_COUNT, 1),
    OP("FConstant", LL_D_FUSED, HL_OP_CONSTANT, 0),
    OP("FIota", LL_D_FUSED, HL_OP_IOTA, 0),
    OP("FCast", LL_D_FUSED, HL_OP_CAST, 1),
    OP("FExp2", LL_D_FUSED, HL_OP_EXP2, 1),
    OP("FLog2", LL_D_FUSED, HL_OP_LOG2, 1),
    OP("FSin", LL_D_FUSED, HL_OP_SIN, 1),
    OP("FRecip", LL_D_FUSED, HL_OP_RECIP, 1),
    OP("FSqrt", LL_D_FUSED, HL_OP_SQRT, 1),
    OP("FAdd", LL_D_FUSED, HL_OP_ADD, 2),
    OP("FMul", LL_D_FUSED, HL_OP_MUL, 2),
    OP("FMod", LL_D_FUSED, HL_OP_MOD, 2),
    OP("FLessThan", LL_D_FUSED, HL_OP_LESS_THAN, 2),
    OP("FSum", LL_D_FUSED, HL_OP_SUM_REDUCE, 1),
    OP("FMax", LL_D_FUSED, HL_OP_MAX_REDUCE, 1),
    OP("Blas", LL_D_LIBRARY, HL_OP_COUNT, 4),
};

uint32_t ll_op_count(void)
{
    return (uint32_t)(sizeof OPS / sizeof OPS[0]);
}

const ll_op_info *ll_op_get(ll_op op)
{
    return op < ll_op_count() ? &OPS[op] : NULL;
}

ll_op ll_op_find(const char *name)
{
    if (!name) return LL_OP_NONE;
    for (uint32_t i = 0; i < ll_op_count(); i++)
        if (strcmp(OPS[i].name, name) == 0) return (ll_op)i;
    return LL_OP_NONE;
}
