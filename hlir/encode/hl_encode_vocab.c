/* hl_encode_vocab.c - the encoding's vocabulary (hl_enc_vocab, see hl_encode.h) and the
 * schema texts.
 *
 * One row per constructor and function of encode.egg, in its order: the sort it builds,
 * its fields with their sorts and meanings, and what it stands for in HLIR. The encoder
 * (hl_encode.c) writes every term through this table and the decoder (hl_decode.c)
 * reads every term through it; tests/hlir_encode checks it against encode.egg itself.
 * The texts of encode.egg and encode_dtype.egg are embedded at build time
 * (hl_embed.cmake writes hl_encode_schema.c into the build folder). */
#include "encode/hl_encode_int.h"
#include "encode/hl_schema_int.h"

/* Field shorthands: one per recurring (name, sort, meaning). */
#define F(n, s, m)                                                                                 \
    {                                                                                              \
        n, HL_SORT_##s, m                                                                          \
    }
#define EXPR_A F("a", EXPRESSION, "the first operand")
#define EXPR_B F("b", EXPRESSION, "the second operand")
#define SHAPE F("shape", ELIST, "the dims of the view the op reads its input through")
#define STRIDES F("strides", ELIST, "the strides (expressions in MIter) of that view")
#define OUT_STRIDES                                                                                \
    F("out_strides", ELIST, "the strides the result is written with (HLIR: contiguous)")
#define BIN_SHAPE F("shape", ELIST, "the dims of both inputs' views (they are equal)")
#define A_STRIDES F("a_strides", ELIST, "the strides through which the first input is read")
#define B_STRIDES F("b_strides", ELIST, "the strides through which the second input is read")

/* Rows: name, sort, role, arity, fields, op, expr kind, dtype, meaning. */
#define EXPR_ROW(nm, kind, fa, fb, m)                                                              \
    {                                                                                              \
        nm, HL_SORT_EXPRESSION, HL_ENC_ROLE_TERM, 2, {fa, fb}, HL_OP_COUNT, kind, HL_DTYPE_COUNT,  \
            m                                                                                      \
    }
#define BIN_EXPR(nm, kind, m) EXPR_ROW(nm, kind, EXPR_A, EXPR_B, m)
#define DTYPE_ROW(nm, t, m)                                                                        \
    {                                                                                              \
        nm, HL_SORT_DTYPE, HL_ENC_ROLE_TERM, 0, {{0}}, HL_OP_COUNT, HL_E_KIND_COUNT, t, m          \
    }
#define UNARY_ROW(nm, op, m)                                                                       \
    {                                                                                              \
        nm, HL_SORT_OPKIND, HL_ENC_ROLE_TERM, 3, {SHAPE, STRIDES, OUT_STRIDES}, op,                \
            HL_E_KIND_COUNT, HL_DTYPE_COUNT, m                                                     \
    }
#define BINARY_ROW(nm, op, m)                                                                      \
    {                                                                                              \
        nm, HL_SORT_OPKIND, HL_ENC_ROLE_TERM, 4, {BIN_SHAPE, A_STRIDES, B_STRIDES, OUT_STRIDES},   \
            op, HL_E_KIND_COUNT, HL_DTYPE_COUNT, m                                                 \
    }
#define REDUCE_ROW(nm, op, m)                                                                      \
    {                                                                                              \
        nm, HL_SORT_OPKIND, HL_ENC_ROLE_TERM, 5,                                                   \
            {F("shape", ELIST, "the dims of the input's view other than the reduced one"),         \
             F("iters", EXPRESSION, "the length of the reduced dim"),                              \
             F("strides", ELIST, "the strides of the other dims"),                                 \
             F("iter_stride", EXPRESSION, "the stride of the reduced dim"), OUT_STRIDES},          \
            op, HL_E_KIND_COUNT, HL_DTYPE_COUNT, m                                                 \
    }
#define OTHER(nm, sort, role, n, fields, op, m)                                                    \
    {                                                                                              \
        nm, HL_SORT_##sort, role, n, fields, op, HL_E_KIND_COUNT, HL_DTYPE_COUNT, m                \
    }
#define FIELDS(...)                                                                                \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }

const hl_enc_info hl_enc_vocab[HL_ENC_COUNT] = {
    /* Expression */
    [HL_ENC_MNUM] = {"MNum", HL_SORT_EXPRESSION, HL_ENC_ROLE_TERM, 1,
                     FIELDS(F("value", I64, "the integer")), HL_OP_COUNT, HL_E_NUM, HL_DTYPE_COUNT,
                     "an integer literal"},
    [HL_ENC_MFLOAT] = {"MFloat", HL_SORT_EXPRESSION, HL_ENC_ROLE_TERM, 1,
                       FIELDS(F("value", F64, "the number")), HL_OP_COUNT, HL_E_NUM, HL_DTYPE_COUNT,
                       "a float literal (rules make it; the decoder reads it when it holds an "
                       "integer below 9e18)"},
    [HL_ENC_MITER] = {"MIter",
                      HL_SORT_EXPRESSION,
                      HL_ENC_ROLE_TERM,
                      0,
                      {{0}},
                      HL_OP_COUNT,
                      HL_E_Z,
                      HL_DTYPE_COUNT,
                      "the index variable z of a stride"},
    [HL_ENC_MVAR] = {"MVar", HL_SORT_EXPRESSION, HL_ENC_ROLE_TERM, 1,
                     FIELDS(F("name", STRING, "the dynamic dim's name")), HL_OP_COUNT, HL_E_VAR,
                     HL_DTYPE_COUNT, "a dynamic dimension"},
    [HL_ENC_MADD] = BIN_EXPR("MAdd", HL_E_ADD, "a + b"),
    [HL_ENC_MSUB] = BIN_EXPR("MSub", HL_E_SUB, "a - b (never in the canonical form)"),
    [HL_ENC_MMUL] = BIN_EXPR("MMul", HL_E_MUL, "a * b"),
    [HL_ENC_MCEILDIV] = BIN_EXPR("MCeilDiv", HL_E_CDIV, "ceiling division of a by b"),
    [HL_ENC_MDIV] = BIN_EXPR("MDiv", HL_E_DIV, "floor division of a by b"),
    [HL_ENC_MMOD] = BIN_EXPR("MMod", HL_E_MOD, "floor modulo of a by b"),
    [HL_ENC_MMIN] = BIN_EXPR("MMin", HL_E_MIN, "min(a, b)"),
    [HL_ENC_MMAX] = BIN_EXPR("MMax", HL_E_MAX, "max(a, b)"),
    [HL_ENC_MAND] = BIN_EXPR("MAnd", HL_E_AND, "1 when a and b are both nonzero, else 0"),
    [HL_ENC_MOR] = BIN_EXPR("MOr", HL_E_OR, "1 when a or b is nonzero, else 0"),
    [HL_ENC_MGTE] = BIN_EXPR("MGte", HL_E_GE, "1 when a >= b, else 0"),
    [HL_ENC_MLT] = BIN_EXPR("MLt", HL_E_LT, "1 when a < b, else 0"),
    [HL_ENC_MFLOORTO] = {"MFloorTo", HL_SORT_EXPRESSION, HL_ENC_ROLE_TERM, 2,
                         FIELDS(EXPR_A, F("b", EXPRESSION, "the multiple")), HL_OP_COUNT,
                         HL_E_KIND_COUNT, HL_DTYPE_COUNT,
                         "floor(a / b) * b (rules make it; read as (a / b) * b)"},
    [HL_ENC_MREPLACE] = OTHER("MReplace", EXPRESSION, HL_ENC_ROLE_RULES_ONLY, 3,
                              FIELDS(F("x", EXPRESSION, "the expression"),
                                     F("from", EXPRESSION, "the subterm to replace"),
                                     F("to", EXPRESSION, "its replacement")),
                              HL_OP_COUNT, "x with from replaced by to (a rewrite helper)"),
    /* EList */
    [HL_ENC_ECONS] = OTHER(
        "ECons", ELIST, HL_ENC_ROLE_TERM, 2,
        FIELDS(F("head", EXPRESSION, "the first entry"), F("tail", ELIST, "the other entries")),
        HL_OP_COUNT, "a non-empty list"),
    [HL_ENC_ENIL] = OTHER("ENil", ELIST, HL_ENC_ROLE_TERM, 0, {{0}}, HL_OP_COUNT, "the empty list"),
    [HL_ENC_MREPLACELIST] =
        OTHER("MReplaceList", ELIST, HL_ENC_ROLE_RULES_ONLY, 3,
              FIELDS(F("list", ELIST, "the list"), F("from", EXPRESSION, "the subterm to replace"),
                     F("to", EXPRESSION, "its replacement")),
              HL_OP_COUNT, "MReplace on every entry (a rewrite helper)"),
    [HL_ENC_REPLACENTHFROMEND] =
        OTHER("ReplaceNthFromEnd", ELIST, HL_ENC_ROLE_RULES_ONLY, 3,
              FIELDS(F("list", ELIST, "the list"), F("value", EXPRESSION, "the new entry"),
                     F("n", I64, "its position, counted from the end")),
              HL_OP_COUNT, "the list with one entry replaced (a rewrite helper)"),
    [HL_ENC_REMOVENTHFROMEND] =
        OTHER("RemoveNthFromEnd", ELIST, HL_ENC_ROLE_RULES_ONLY, 2,
              FIELDS(F("list", ELIST, "the list"), F("n", I64, "the position, from the end")),
              HL_OP_COUNT, "the list with one entry removed (a rewrite helper)"),
    [HL_ENC_ROWMAJOR] =
        OTHER("RowMajor", ELIST, HL_ENC_ROLE_RULES_ONLY, 1, FIELDS(F("shape", ELIST, "the dims")),
              HL_OP_COUNT, "the contiguous strides of shape (a rewrite helper)"),
    /* DType */
    [HL_ENC_F32] = DTYPE_ROW("F32", HL_F32, "f32"),
    [HL_ENC_F16] = DTYPE_ROW("F16", HL_F16, "IEEE binary16"),
    [HL_ENC_BF16] = DTYPE_ROW("Bf16", HL_BF16, "bfloat16"),
    [HL_ENC_INT] = DTYPE_ROW("Int", HL_INT, "32-bit signed integers"),
    [HL_ENC_INT64] = DTYPE_ROW("Int64", HL_I64, "64-bit signed integers"),
    [HL_ENC_BOOL] = DTYPE_ROW("Bool", HL_BOOL, "booleans, one byte each"),
    [HL_ENC_F8E4M3] = DTYPE_ROW("F8E4M3", HL_F8E4M3, "OCP FP8 E4M3"),
    [HL_ENC_F8E5M2] = DTYPE_ROW("F8E5M2", HL_F8E5M2, "OCP FP8 E5M2"),
    /* DimDecl */
    [HL_ENC_DIM] = OTHER("Dim", DIMDECL, HL_ENC_ROLE_TERM, 5,
                         FIELDS(F("index", I64, "its position among the graph's dims"),
                                F("name", STRING, "its name (the MVar that stands for it)"),
                                F("lo", I64, "its least value"), F("hi", I64, "its greatest value"),
                                F("profile", I64, "the value the search measures with")),
                         HL_OP_COUNT, "a declared dynamic dimension"),
    /* IR */
    [HL_ENC_OUTPUTJOIN] = OTHER(
        "OutputJoin", IR, HL_ENC_ROLE_TERM, 2,
        FIELDS(F("first", IR, "an output"), F("rest", IR, "the later outputs (or the last one)")),
        HL_OP_COUNT, "the root: the outputs in index order"),
    [HL_ENC_OP] = OTHER("Op", IR, HL_ENC_ROLE_TERM, 2,
                        FIELDS(F("kind", OPKIND, "what it computes, with its views"),
                               F("inputs", ILIST, "the tensors it reads, in order")),
                        HL_OP_COUNT, "a compute node"),
    [HL_ENC_INPUT] = OTHER("Input", IR, HL_ENC_ROLE_TERM, 4,
                           FIELDS(F("index", I64, "its position among the graph's inputs"),
                                  F("name", STRING, "its name"), F("dtype", DTYPE, "its dtype"),
                                  F("shape", ELIST, "its declared dims")),
                           HL_OP_INPUT, "a graph input"),
    [HL_ENC_OUTPUT] =
        OTHER("Output", IR, HL_ENC_ROLE_TERM, 5,
              FIELDS(F("producer", IR, "the tensor it reads"),
                     F("index", I64, "its position among the graph's outputs"),
                     F("name", STRING, "its name"),
                     F("shape", ELIST, "the dims of the view it reads its producer through"),
                     F("strides", ELIST, "the strides of that view")),
              HL_OP_OUTPUT, "a graph output"),
    /* OpKind */
    [HL_ENC_CONSTANT] = OTHER("Constant", OPKIND, HL_ENC_ROLE_TERM, 1,
                              FIELDS(F("value", F64, "the f32 value, widened exactly")),
                              HL_OP_CONSTANT, "an f32 scalar"),
    [HL_ENC_IOTA] = OTHER("Iota", OPKIND, HL_ENC_ROLE_TERM, 2,
                          FIELDS(F("expr", EXPRESSION, "element i is expr with MIter = i"),
                                 F("len", EXPRESSION, "the number of elements")),
                          HL_OP_IOTA, "an int tensor [len] computed from the index"),
    [HL_ENC_CAST] = OTHER(
        "Cast", OPKIND, HL_ENC_ROLE_TERM, 4,
        FIELDS(SHAPE, STRIDES, OUT_STRIDES, F("dtype", DTYPE, "the target dtype")), HL_OP_CAST,
        "conversion to dtype (also the copy that makes a view "
        "contiguous)"),
    [HL_ENC_EXP2] = UNARY_ROW("Exp2", HL_OP_EXP2, "2^x"),
    [HL_ENC_LOG2] = UNARY_ROW("Log2", HL_OP_LOG2, "log2(x)"),
    [HL_ENC_SIN] = UNARY_ROW("Sin", HL_OP_SIN, "sin(x)"),
    [HL_ENC_RECIP] = UNARY_ROW("Recip", HL_OP_RECIP, "1 / x"),
    [HL_ENC_SQRT] = UNARY_ROW("Sqrt", HL_OP_SQRT, "sqrt(x)"),
    [HL_ENC_ADD] = BINARY_ROW("Add", HL_OP_ADD, "a + b"),
    [HL_ENC_MUL] = BINARY_ROW("Mul", HL_OP_MUL, "a * b"),
    [HL_ENC_MOD] = BINARY_ROW("Mod", HL_OP_MOD, "a mod b"),
    [HL_ENC_LESSTHAN] = BINARY_ROW("LessThan", HL_OP_LESS_THAN, "a < b, as Bool"),
    [HL_ENC_GATHER] =
        OTHER("Gather", OPKIND, HL_ENC_ROLE_TERM, 4,
              FIELDS(F("index_shape", ELIST, "the dims of the indexes' view (the result's)"),
                     F("index_strides", ELIST, "the strides of the indexes' view"),
                     F("data_shape", ELIST, "the dims of the data's view"),
                     F("data_strides", ELIST, "the strides of the data's view")),
              HL_OP_GATHER, "inputs (indexes data): element i is element indexes[i] of data"),
    [HL_ENC_SCATTER] =
        OTHER("Scatter", OPKIND, HL_ENC_ROLE_TERM, 5,
              FIELDS(F("dest_shape", ELIST,
                       "the dims of the destination's view (the "
                       "result's)"),
                     F("dest_strides", ELIST, "the strides of the destination's view"),
                     F("index_shape", ELIST, "the dims of the indexes' and the source's views"),
                     F("index_strides", ELIST, "the strides of the indexes' view"),
                     F("src_strides", ELIST, "the strides of the source's view")),
              HL_OP_SCATTER, "inputs (dest indexes src): dest with dest[indexes[i]] = src[i]"),
    [HL_ENC_SUM] = REDUCE_ROW("Sum", HL_OP_SUM_REDUCE, "the sum over the reduced dim"),
    [HL_ENC_MAX] = REDUCE_ROW("Max", HL_OP_MAX_REDUCE, "the max over the reduced dim"),
    /* IList */
    [HL_ENC_ICONS] =
        OTHER("ICons", ILIST, HL_ENC_ROLE_TERM, 2,
              FIELDS(F("head", IR, "the first input"), F("tail", ILIST, "the other inputs")),
              HL_OP_COUNT, "a non-empty input list"),
    [HL_ENC_INIL] =
        OTHER("INil", ILIST, HL_ENC_ROLE_TERM, 0, {{0}}, HL_OP_COUNT, "the empty input list"),
    /* functions */
    [HL_ENC_FN_DTYPE] =
        OTHER("dtype", DTYPE, HL_ENC_ROLE_FUNCTION, 1, FIELDS(F("x", IR, "a tensor")), HL_OP_COUNT,
              "the dtype of every IR term (set by the encoder and dtype_prop)"),
    [HL_ENC_FN_LOWER] =
        OTHER("lower", I64, HL_ENC_ROLE_FUNCTION, 1, FIELDS(F("e", EXPRESSION, "a dim")),
              HL_OP_COUNT, "the least value of a dynamic dim"),
    [HL_ENC_FN_UPPER] =
        OTHER("upper", I64, HL_ENC_ROLE_FUNCTION, 1, FIELDS(F("e", EXPRESSION, "a dim")),
              HL_OP_COUNT, "the greatest value of a dynamic dim"),
};

hl_enc_ctor hl_enc_find(const char *name)
{
    if (!name) return HL_ENC_NONE;
    for (int c = 0; c < HL_ENC_COUNT; c++)
        if (strcmp(hl_enc_vocab[c].name, name) == 0) return (hl_enc_ctor)c;
    return HL_ENC_NONE;
}

hl_enc_ctor hl_enc_of_op(hl_op op)
{
    for (int c = 0; c < HL_ENC_COUNT; c++)
        if (hl_enc_vocab[c].op == op && op != HL_OP_COUNT) return (hl_enc_ctor)c;
    return HL_ENC_NONE;
}

hl_enc_ctor hl_enc_of_expr(hl_expr_kind k)
{
    if (k == HL_E_NUM) return HL_ENC_MNUM; /* not MFloat, which rules make */
    for (int c = 0; c < HL_ENC_COUNT; c++)
        if (hl_enc_vocab[c].sort == HL_SORT_EXPRESSION && hl_enc_vocab[c].expr == k &&
            k != HL_E_KIND_COUNT)
            return (hl_enc_ctor)c;
    return HL_ENC_NONE;
}

hl_enc_ctor hl_enc_of_dtype(hl_dtype t)
{
    if ((unsigned)t >= HL_DTYPE_COUNT) return HL_ENC_NONE;
    return (hl_enc_ctor)(HL_ENC_F32 + (int)t);
}

const char *hl_enc_sort_name(hl_enc_sort s)
{
    static const char *const NAMES[HL_SORT_COUNT] = {
        "i64", "f64", "String", "Expression", "EList", "DType", "DimDecl", "IR", "OpKind", "IList"};
    return (unsigned)s < HL_SORT_COUNT ? NAMES[s] : "?";
}

const char *hl_encode_schema(void)
{
    return (const char *)hl__encode_schema_text;
}

const char *hl_encode_dtype_rules(void)
{
    return (const char *)hl__encode_dtype_text;
}
