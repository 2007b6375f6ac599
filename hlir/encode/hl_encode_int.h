/* hl_encode_int.h - internals shared by the e-graph encoder and decoder (not public).
 *
 * The constructors and functions of hlir/encode.egg, as one enum with their names and
 * arities, so the walker that writes terms and the decoder that reads them agree on
 * every name by construction. */
#ifndef LUMINAL_ENCODE_INT_H
#define LUMINAL_ENCODE_INT_H

#include "hl_int.h"
#include "hl_encode.h"

typedef enum ctor {
    /* Expression */
    C_MNUM = 0,
    C_MFLOAT,
    C_MITER,
    C_MVAR,
    C_MADD,
    C_MSUB,
    C_MMUL,
    C_MCEILDIV,
    C_MDIV,
    C_MMOD,
    C_MMIN,
    C_MMAX,
    C_MAND,
    C_MOR,
    C_MGTE,
    C_MLT,
    C_MFLOORTO,
    C_MREPLACE,
    /* EList */
    C_ECONS,
    C_ENIL,
    C_MREPLACELIST,
    C_REPLACENTH,
    C_REMOVENTH,
    C_ROWMAJOR,
    /* DType, in hl_dtype order */
    C_F32,
    C_F16,
    C_BF16,
    C_INT,
    C_INT64,
    C_BOOL,
    C_F8E4M3,
    C_F8E5M2,
    /* DimDecl */
    C_DIM,
    /* IR */
    C_OUTPUTJOIN,
    C_OP,
    C_INPUT,
    C_OUTPUT,
    /* OpKind */
    C_CONSTANT,
    C_IOTA,
    C_CAST,
    C_EXP2,
    C_LOG2,
    C_SIN,
    C_RECIP,
    C_SQRT,
    C_ADD,
    C_MUL,
    C_MOD,
    C_LESSTHAN,
    C_GATHER,
    C_SCATTER,
    C_SUM,
    C_MAX,
    /* IList */
    C_ICONS,
    C_INIL,
    /* functions */
    C_FN_DTYPE,
    C_FN_LOWER,
    C_FN_UPPER,
    C_COUNT
} ctor;

#define C_NONE C_COUNT

/* Name and number of arguments of each constructor / function. */
extern const char *const hl__ctor_name[C_COUNT];
extern const uint8_t hl__ctor_arity[C_COUNT];

/* The constructor named name, or C_NONE. */
ctor hl__ctor_find(const char *name);

/* The expression constructor of a binary expression kind (HL_E_ADD .. HL_E_LT). */
ctor hl__ctor_of_expr(hl_expr_kind k);
/* The OpKind constructor of a compute op (not Input / Output). */
ctor hl__ctor_of_op(hl_op op);

/* A binary min-heap of uint32 in h[0 .. *n): Kahn orders with the lowest ready id first,
 * in the encoder (node ids) and the decoder (class ids). The caller sizes h. */
static inline void hl__heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
    uint32_t j = (*n)++;
    h[j] = v;
    while (j && h[(j - 1) / 2] > h[j]) {
        uint32_t p = (j - 1) / 2, t = h[p];
        h[p] = h[j];
        h[j] = t;
        j = p;
    }
}

static inline uint32_t hl__heap_pop(uint32_t *h, uint32_t *n)
{
    uint32_t top = h[0];
    h[0] = h[--*n];
    for (uint32_t j = 0;;) {
        uint32_t l = 2 * j + 1, r = l + 1, m = j;
        if (l < *n && h[l] < h[m]) m = l;
        if (r < *n && h[r] < h[m]) m = r;
        if (m == j) break;
        uint32_t t = h[m];
        h[m] = h[j];
        h[j] = t;
        j = m;
    }
    return top;
}

#endif /* LUMINAL_ENCODE_INT_H */
