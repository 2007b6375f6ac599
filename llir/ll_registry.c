/* ll_registry.c - the op registry: one static entry per constructor of the backend
 * vocabulary (docs/llir.md), and the check of an engine's declarations against it.
 *
 * The table is the contract with rules.dsl and codegen: each entry names a constructor,
 * its dialect, the primitive it computes, its fields in column order with their sorts,
 * how many inputs its IList holds, and how the dtype of its output and of each input is
 * determined. Entries are grouped by dialect; an op is its index here, so the order is
 * part of every genome's meaning within one build (never saved across builds: the
 * search saves constructor names).
 *
 * The Op kinds of HLIR (dialect HLIR) are registered too: the space must know them to
 * leave them out, and the e-graph dtype check reads their contracts (HLIR's dtype rule,
 * docs/hlir.md) to check the HLIR nodes of every class as well.
 */
#include "ll_int.h"

#include <stdio.h>

#define FLD(n, s) {n, LL_F_##s}
#define DT_F(i) {LL_DT_FIELD, i}
#define DT_X(t) {LL_DT_FIXED, t}
#define DT_IN(i) {LL_DT_AS_INPUT, i}
#define DT_ANY {LL_DT_ANY, 0}
#define DT_NO {LL_DT_NONE, 0}

/* Field lists shared by an HLIR kind, its kernel and its fused form (docs/encoding.md). */
#define UNARY FLD("shape", ELIST), FLD("strides", ELIST), FLD("out_strides", ELIST)
#define BINARY                                                                             \
    FLD("shape", ELIST), FLD("a_strides", ELIST), FLD("b_strides", ELIST),                 \
        FLD("out_strides", ELIST)
#define GATHER                                                                             \
    FLD("index_shape", ELIST), FLD("index_strides", ELIST), FLD("data_shape", ELIST),      \
        FLD("data_strides", ELIST)
#define SCATTER                                                                            \
    FLD("dest_shape", ELIST), FLD("dest_strides", ELIST), FLD("index_shape", ELIST),       \
        FLD("index_strides", ELIST), FLD("src_strides", ELIST)
#define REDUCE                                                                             \
    FLD("shape", ELIST), FLD("iters", EXPR), FLD("strides", ELIST), FLD("iter_stride", EXPR), \
        FLD("out_strides", ELIST)

#define ATTN_VIEWS                                                                         \
    FLD("shape", ELIST), FLD("q_strides", ELIST), FLD("k_strides", ELIST),                  \
        FLD("v_strides", ELIST), FLD("out_strides", ELIST)
#define ATTN_REST                                                                          \
    FLD("causal", I64), FLD("scale", F64), FLD("scale_dt", DTYPE), FLD("base2", I64),       \
        FLD("dtype", DTYPE), FLD("block_q", I64), FLD("block_k", I64), FLD("warps", I64),   \
        FLD("stages", I64), FLD("kv_splits", I64)

/* An HLIR kind, its kernel K<name> and its fused form F<name>, for the elementwise and
 * reduction primitives whose contract is "every input and the output are DT". */
#define HLIR_UNARY(nm, op)                                                                 \
    {nm, LL_D_HLIR, op, 3, {UNARY}, 1, DT_IN(0), {DT_ANY}}
#define K_UNARY(nm, d, op)                                                                 \
    {nm, d, op, 4, {UNARY, FLD("dtype", DTYPE)}, 1, DT_F(3), {DT_F(3)}}
#define K_BINARY(nm, d, op)                                                                \
    {nm, d, op, 5, {BINARY, FLD("dtype", DTYPE)}, 2, DT_F(4), {DT_F(4), DT_F(4)}}
#define K_REDUCE(nm, d, op)                                                                \
    {nm, d, op, 6, {REDUCE, FLD("dtype", DTYPE)}, 1, DT_F(5), {DT_F(5)}}

static const ll_op_info OPS[] = {
    /* ---- IO: the encoding's IR variants ---- */
    {"Input", LL_D_IO, HL_OP_COUNT, 4,
     {FLD("index", I64), FLD("name", STRING), FLD("dtype", DTYPE), FLD("shape", ELIST)}, 0,
     DT_F(2), {DT_NO}},
    {"Output", LL_D_IO, HL_OP_COUNT, 5,
     {FLD("producer", IR), FLD("index", I64), FLD("name", STRING), FLD("shape", ELIST),
      FLD("strides", ELIST)},
     1, DT_IN(0), {DT_ANY}},
    {"OutputJoin", LL_D_IO, HL_OP_COUNT, 2, {FLD("a", IR), FLD("b", IR)}, 2, DT_NO,
     {DT_ANY, DT_ANY}},

    /* ---- HLIR kinds: never part of a program ---- */
    {"Constant", LL_D_HLIR, HL_OP_CONSTANT, 1, {FLD("value", F64)}, 0, DT_X(HL_F32), {DT_NO}},
    {"Iota", LL_D_HLIR, HL_OP_IOTA, 2, {FLD("expr", EXPR), FLD("len", EXPR)}, 0, DT_X(HL_INT),
     {DT_NO}},
    {"Cast", LL_D_HLIR, HL_OP_CAST, 4, {UNARY, FLD("dtype", DTYPE)}, 1, DT_F(3), {DT_ANY}},
    HLIR_UNARY("Exp2", HL_OP_EXP2),
    HLIR_UNARY("Log2", HL_OP_LOG2),
    HLIR_UNARY("Sin", HL_OP_SIN),
    HLIR_UNARY("Recip", HL_OP_RECIP),
    HLIR_UNARY("Sqrt", HL_OP_SQRT),
    {"Add", LL_D_HLIR, HL_OP_ADD, 4, {BINARY}, 2, DT_IN(0), {DT_ANY, DT_IN(0)}},
    {"Mul", LL_D_HLIR, HL_OP_MUL, 4, {BINARY}, 2, DT_IN(0), {DT_ANY, DT_IN(0)}},
    {"Mod", LL_D_HLIR, HL_OP_MOD, 4, {BINARY}, 2, DT_IN(0), {DT_ANY, DT_IN(0)}},
    {"LessThan", LL_D_HLIR, HL_OP_LESS_THAN, 4, {BINARY}, 2, DT_X(HL_BOOL), {DT_ANY, DT_IN(0)}},
    {"Gather", LL_D_HLIR, HL_OP_GATHER, 4, {GATHER}, 2, DT_IN(1), {DT_X(HL_INT), DT_ANY}},
    {"Scatter", LL_D_HLIR, HL_OP_SCATTER, 5, {SCATTER}, 3, DT_IN(0),
     {DT_ANY, DT_X(HL_INT), DT_IN(0)}},
    {"Sum", LL_D_HLIR, HL_OP_SUM_REDUCE, 5, {REDUCE}, 1, DT_IN(0), {DT_ANY}},
    {"Max", LL_D_HLIR, HL_OP_MAX_REDUCE, 5, {REDUCE}, 1, DT_IN(0), {DT_ANY}},

    /* ---- standalone kernels: one per primitive, then the generic matmul ---- */
    {"KConstant", LL_D_KERNEL, HL_OP_CONSTANT, 1, {FLD("value", F64)}, 0, DT_X(HL_F32), {DT_NO}},
    {"KIota", LL_D_KERNEL, HL_OP_IOTA, 2, {FLD("expr", EXPR), FLD("len", EXPR)}, 0,
     DT_X(HL_INT), {DT_NO}},
    {"KCast", LL_D_KERNEL, HL_OP_CAST, 5, {UNARY, FLD("from", DTYPE), FLD("to", DTYPE)}, 1,
     DT_F(4), {DT_F(3)}},
    K_UNARY("KExp2", LL_D_KERNEL, HL_OP_EXP2),
    K_UNARY("KLog2", LL_D_KERNEL, HL_OP_LOG2),
    K_UNARY("KSin", LL_D_KERNEL, HL_OP_SIN),
    K_UNARY("KRecip", LL_D_KERNEL, HL_OP_RECIP),
    K_UNARY("KSqrt", LL_D_KERNEL, HL_OP_SQRT),
    K_BINARY("KAdd", LL_D_KERNEL, HL_OP_ADD),
    K_BINARY("KMul", LL_D_KERNEL, HL_OP_MUL),
    K_BINARY("KMod", LL_D_KERNEL, HL_OP_MOD),
    {"KLessThan", LL_D_KERNEL, HL_OP_LESS_THAN, 5, {BINARY, FLD("dtype", DTYPE)}, 2,
     DT_X(HL_BOOL), {DT_F(4), DT_F(4)}},
    {"KGather", LL_D_KERNEL, HL_OP_GATHER, 5, {GATHER, FLD("dtype", DTYPE)}, 2, DT_F(4),
     {DT_X(HL_INT), DT_F(4)}},
    {"KScatter", LL_D_KERNEL, HL_OP_SCATTER, 6, {SCATTER, FLD("dtype", DTYPE)}, 3, DT_F(5),
     {DT_F(5), DT_X(HL_INT), DT_F(5)}},
    K_REDUCE("KSum", LL_D_KERNEL, HL_OP_SUM_REDUCE),
    K_REDUCE("KMax", LL_D_KERNEL, HL_OP_MAX_REDUCE),
    {"KMatmul", LL_D_KERNEL, HL_OP_COUNT, 5, {BINARY, FLD("dtype", DTYPE)}, 2, DT_F(4),
     {DT_F(4), DT_F(4)}},
    /* attention (docs/llir.md, Attention): q, k, v (and the mask) in the DType field */
    {"KAttn", LL_D_KERNEL, HL_OP_COUNT, 15, {ATTN_VIEWS, ATTN_REST}, 3, DT_F(9),
     {DT_F(9), DT_F(9), DT_F(9)}},
    {"KAttnMask", LL_D_KERNEL, HL_OP_COUNT, 16,
     {ATTN_VIEWS, FLD("mask_strides", ELIST), ATTN_REST}, 4, DT_F(10),
     {DT_F(10), DT_F(10), DT_F(10), DT_F(10)}},

    /* ---- fused regions: the plumbing, then the fused forms ---- */
    {"FStore", LL_D_REGION, HL_OP_COUNT, 1, {FLD("dtype", DTYPE)}, 1, DT_F(0), {DT_F(0)}},
    {"FLoad", LL_D_LOAD, HL_OP_COUNT, 1, {FLD("dtype", DTYPE)}, 1, DT_F(0), {DT_F(0)}},
    {"FInl", LL_D_INLINE, HL_OP_COUNT, 0, {{NULL, LL_F_ELIST}}, 1, DT_IN(0), {DT_ANY}},
    {"FConstant", LL_D_FUSED, HL_OP_CONSTANT, 1, {FLD("value", F64)}, 0, DT_X(HL_F32), {DT_NO}},
    {"FIota", LL_D_FUSED, HL_OP_IOTA, 2, {FLD("expr", EXPR), FLD("len", EXPR)}, 0, DT_X(HL_INT),
     {DT_NO}},
    {"FCast", LL_D_FUSED, HL_OP_CAST, 5, {UNARY, FLD("from", DTYPE), FLD("to", DTYPE)}, 1,
     DT_F(4), {DT_F(3)}},
    K_UNARY("FExp2", LL_D_FUSED, HL_OP_EXP2),
    K_UNARY("FLog2", LL_D_FUSED, HL_OP_LOG2),
    K_UNARY("FSin", LL_D_FUSED, HL_OP_SIN),
    K_UNARY("FRecip", LL_D_FUSED, HL_OP_RECIP),
    K_UNARY("FSqrt", LL_D_FUSED, HL_OP_SQRT),
    K_BINARY("FAdd", LL_D_FUSED, HL_OP_ADD),
    K_BINARY("FMul", LL_D_FUSED, HL_OP_MUL),
    K_BINARY("FMod", LL_D_FUSED, HL_OP_MOD),
    {"FLessThan", LL_D_FUSED, HL_OP_LESS_THAN, 5, {BINARY, FLD("dtype", DTYPE)}, 2,
     DT_X(HL_BOOL), {DT_F(4), DT_F(4)}},
    K_REDUCE("FSum", LL_D_FUSED, HL_OP_SUM_REDUCE),
    K_REDUCE("FMax", LL_D_FUSED, HL_OP_MAX_REDUCE),

    /* ---- the library: a cuBLASLt matmul ---- */
    {"Blas", LL_D_LIBRARY, HL_OP_COUNT, 19,
     {FLD("M", EXPR), FLD("N", EXPR), FLD("K", EXPR), FLD("batch", EXPR), FLD("lda", EXPR),
      FLD("ldb", EXPR), FLD("stride_a", EXPR), FLD("stride_b", EXPR), FLD("order_a", I64),
      FLD("order_b", I64), FLD("alpha", F64), FLD("alpha_dt", DTYPE), FLD("beta", F64),
      FLD("epilogue", I64), FLD("DTa", DTYPE), FLD("DTb", DTYPE), FLD("DTc", DTYPE),
      FLD("DTd", DTYPE), FLD("DTbias", DTYPE)},
     4, DT_F(17), {DT_F(14), DT_F(15), DT_F(16), DT_F(18)}},
};

#define N_OPS ((uint32_t)(sizeof OPS / sizeof OPS[0]))

uint32_t ll_op_count(void)
{
    return N_OPS;
}

const ll_op_info *ll_op_get(ll_op op)
{
    /* callers pass ops from ll_op_find or the space; anything else is our bug */
    if (op >= N_OPS) return NULL;
    return &OPS[op];
}

ll_op ll_op_find(const char *name)
{
    if (!name) return LL_OP_NONE;
    for (uint32_t i = 0; i < N_OPS; i++)
        if (strcmp(OPS[i].name, name) == 0) return (ll_op)i;
    return LL_OP_NONE;
}

bool ll_op_is_attn(ll_op op)
{
    return op < N_OPS && OPS[op].dialect == LL_D_KERNEL && OPS[op].prim == HL_OP_COUNT &&
           strncmp(OPS[op].name, "KAttn", 5) == 0;
}

hl_op ll__op_prim(ll_op op)
{
    if (op == LL_OP_NONE || op >= ll_op_count()) return HL_OP_COUNT;
    return ll_op_get(op)->prim;
}

const char *ll__op_name(ll_op op)
{
    return op < N_OPS ? OPS[op].name : "?";
}

uint32_t ll__op_arity(ll_op op)
{
    return op < N_OPS ? OPS[op].n_fields : 0;
}

uint32_t ll_op_input_count(ll_op op, double beta, int64_t epilogue)
{
    if (op >= N_OPS) return 0;
    if (OPS[op].dialect != LL_D_LIBRARY) return OPS[op].n_inputs;
    return 2 + (beta == 1.0) + ((epilogue & LL_EPI_BIAS) != 0);
}

/* ---- constructors of the encoding that are not registered ops ---- */

uint16_t ll__ctor_code(const char *name, uint32_t *arity)
{
    ll_op op = ll_op_find(name);
    if (op != LL_OP_NONE) {
        *arity = OPS[op].n_fields;
        return op;
    }
    hl_enc_ctor c = hl_enc_find(name);
    *arity = 0;
    if (c == HL_ENC_NONE || hl_enc_vocab[c].role == HL_ENC_ROLE_FUNCTION) return LL__C_UNKNOWN;
    *arity = hl_enc_vocab[c].arity;
    return hl_enc_vocab[c].role == HL_ENC_ROLE_RULES_ONLY ? LL__C_HELPER
                                                           : (uint16_t)(LL__C_ENC + c);
}

/* ---- the check ---- */

/* The engine's sort name a registry field sort must have. */
static const char *sort_of_field(ll_field_sort f)
{
    switch (f) {
    case LL_F_ELIST:
        return "EList";
    case LL_F_EXPR:
        return "Expression";
    case LL_F_DTYPE:
        return "DType";
    case LL_F_F64:
        return "f64";
    case LL_F_I64:
        return "i64";
    case LL_F_STRING:
        return "String";
    case LL_F_IR:
        return "IR";
    }
    return "?";
}

/* The sorts of the columns of table t (inputs, then the output) against the registry's
 * entry o (NULL for a structural constructor, whose sorts are not listed). */
static int check_sorts(const eg_engine *e, int t, const char *name, const ll_op_info *o,
                       lm_err *err)
{
    lm_loc loc = {.node = name, .node_id = LM_NONE};
    size_t arity = eg_table_arity(e, t);
    if (o) {
        for (size_t c = 0; c < arity && c < o->n_fields; c++) {
            const char *want = sort_of_field(o->fields[c].sort);
            const char *got = eg_sort_name(e, eg_table_column_sort(e, t, c));
            if (!got || strcmp(got, want) != 0)
                return ll__fail(err, LM_EVERIFY, &loc,
                                "the rules declare field %zu (%s) of %s with sort %s; llir's "
                                "registry has %s (docs/llir.md)",
                                c, o->fields[c].name, name, got ? got : "?", want);
        }
    }
    const char *out = eg_sort_name(e, eg_table_column_sort(e, t, arity));
    const char *want = o ? (o->dialect == LL_D_IO ? "IR" : "OpKind") : NULL;
    if (want && (!out || strcmp(out, want) != 0))
        return ll__fail(err, LM_EVERIFY, &loc,
                        "the rules declare %s with output sort %s; llir's registry has %s", name,
                        out ? out : "?", want);
    return LM_OK;
}

static int check_table(const eg_engine *e, const char *name, uint32_t arity, const char *what,
                       const ll_op_info *o, lm_err *err)
{
    lm_loc loc = {.node = name, .node_id = LM_NONE};
    int t = eg_table_lookup(e, name);
    if (t < 0)
        return ll__fail(err, LM_EVERIFY, &loc,
                        "the rules do not declare %s %s, which llir's registry has (declare it "
                        "as docs/llir.md gives it)",
                        what, name);
    size_t got = eg_table_arity(e, t);
    if (got != arity)
        return ll__fail(err, LM_EVERIFY, &loc,
                        "the rules declare %s %s with %zu fields; llir's registry has %u "
                        "(docs/llir.md)",
                        what, name, got, arity);
    if (!eg_table_has_output(e, t))
        return ll__fail(err, LM_EVERIFY, &loc,
                        "the rules declare %s as a relation; llir's registry has a constructor "
                        "of sort %s",
                        name, what);
    return check_sorts(e, t, name, o, err);
}

int ll_registry_check(const eg_engine *e, lm_err *err)
{
    if (!e) return ll__fail(err, LM_EARG, NULL, "ll_registry_check: no engine");
    for (uint32_t i = 0; i < N_OPS; i++) {
        const ll_op_info *o = &OPS[i];
        const char *what = o->dialect == LL_D_IO ? "the IR constructor" : "the OpKind";
        int rc = check_table(e, o->name, o->n_fields, what, o, err);
        if (rc) return rc;
    }
    static const hl_enc_ctor structure[] = {HL_ENC_OP, HL_ENC_ICONS, HL_ENC_INIL};
    for (size_t i = 0; i < 3; i++) {
        const hl_enc_info *in = &hl_enc_vocab[structure[i]];
        int rc = check_table(e, in->name, in->arity, "the constructor", NULL, err);
        if (rc) return rc;
    }
    /* The other direction: every constructor of sort IR or OpKind the rules declare is
     * registered (Op itself is structure). */
    for (size_t t = 0; t < eg_table_count(e); t++) {
        const char *name = eg_table_name(e, (int)t);
        size_t arity = eg_table_arity(e, (int)t);
        const char *out = eg_sort_name(e, eg_table_column_sort(e, (int)t, arity));
        if (!name || !out || !eg_table_has_output(e, (int)t)) continue;
        if (strcmp(out, "IR") != 0 && strcmp(out, "OpKind") != 0) continue;
        if (strcmp(name, "Op") == 0 || ll_op_find(name) != LL_OP_NONE) continue;
        lm_loc loc = {.node = name, .node_id = LM_NONE};
        return ll__fail(err, LM_EVERIFY, &loc,
                        "the rules declare %s of sort %s, which llir's registry does not know "
                        "(register it in llir/ll_registry.c and docs/llir.md)",
                        name, out);
    }
    return LM_OK;
}
