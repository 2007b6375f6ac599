/* eg_prim.c: primitive functions on i64, f64, String, bool, Unit and pairs.
 *
 * A primitive is looked up by name and argument sorts (names are overloaded: + works on
 * i64, f64 and String). Predicates (<, >, <=, >=, !=, value-eq, guard) return Unit and
 * fail when false; a failing primitive makes a query row not match, and makes an action
 * an error. The set and the semantics are egglog's (its i64, f64, bool, String and Unit
 * sorts and its primitives over every sort): i64 arithmetic fails on overflow, a shift by
 * a negative amount or by 64 or more fails, f64 division and remainder by zero fail,
 * to-i64 saturates (NaN gives 0), min and max order NaN above every number. Beyond
 * egglog: abs, neg and unary - on i64; exp, log, sqrt, floor, ceil, round on f64; < and >
 * on String (byte order). */
#include "eg_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t, for hashing a long string by chunks */
#include <xxhash.h>

/* string concatenation copies and hashes by chunks of this many bytes, checking the
 * run's limits between them */
#define SCAT_CHUNK ((size_t)1 << 24)

enum {
    OP_IADD,
    OP_ISUB,
    OP_IMUL,
    OP_IDIV,
    OP_IMOD,
    OP_IAND,
    OP_IOR,
    OP_IXOR,
    OP_ISHL,
    OP_ISHR,
    OP_INOT,
    OP_IMIN,
    OP_IMAX,
    OP_ILT,
    OP_IGT,
    OP_ILE,
    OP_IGE,
    OP_BILT,
    OP_BIGT,
    OP_BILE,
    OP_BIGE,
    OP_BIEQ,
    OP_ITOF,
    OP_ITOS,
    OP_IABS,
    OP_ILOG2,
    OP_INEG,
    OP_FADD,
    OP_FSUB,
    OP_FMUL,
    OP_FDIV,
    OP_FMOD,
    OP_FPOW,
    OP_FNEG,
    OP_FMIN,
    OP_FMAX,
    OP_FEXP,
    OP_FLOG,
    OP_FSQRT,
    OP_FABS,
    OP_FLT,
    OP_FGT,
    OP_FLE,
    OP_FGE,
    OP_FTOI,
    OP_FTOS,
    OP_FFLOOR,
    OP_FCEIL,
    OP_FROUND,
    OP_SCAT,
    OP_SCOUNT,
    OP_SREPL,
    OP_SLT,
    OP_SGT,
    OP_BAND,
    OP_BOR,
    OP_BNOT,
    OP_BXOR,
    OP_BIMP,
    OP_NE_I,
    OP_NE_F,
    OP_NE_S,
    OP_NE_B,
    OP_NE_U,
    OP_EQ,
    OP_GUARD,
    OP_VALUE_EQ,
    OP_BOOL_NE,
    OP_ORD_MIN,
    OP_ORD_MAX
};

#define I SORT_I64
#define F SORT_F64
#define S SORT_STRING
#define B SORT_BOOL
#define U SORT_UNIT
#define ANY SORT_ANY
#define Z SORT_BIGINT
#define Q SORT_BIGRAT

static const eg_prim prims[] = {
    {"+", 2, I, I, I, OP_IADD},
    {"-", 2, I, I, I, OP_ISUB},
    {"*", 2, I, I, I, OP_IMUL},
    {"/", 2, I, I, I, OP_IDIV},
    {"%", 2, I, I, I, OP_IMOD},
    {"&", 2, I, I, I, OP_IAND},
    {"|", 2, I, I, I, OP_IOR},
    {"^", 2, I, I, I, OP_IXOR},
    {"<<", 2, I, I, I, OP_ISHL},
    {">>", 2, I, I, I, OP_ISHR},
    {"not-i64", 1, I, I, I, OP_INOT},
    {"min", 2, I, I, I, OP_IMIN},
    {"max", 2, I, I, I, OP_IMAX},
    {"<", 2, I, I, U, OP_ILT},
    {">", 2, I, I, U, OP_IGT},
    {"<=", 2, I, I, U, OP_ILE},
    {">=", 2, I, I, U, OP_IGE},
    {"bool-<", 2, I, I, B, OP_BILT},
    {"bool->", 2, I, I, B, OP_BIGT},
    {"bool-<=", 2, I, I, B, OP_BILE},
    {"bool->=", 2, I, I, B, OP_BIGE},
    {"bool-=", 2, I, I, B, OP_BIEQ},
    {"to-f64", 1, I, I, F, OP_ITOF},
    {"to-string", 1, I, I, S, OP_ITOS},
    {"abs", 1, I, I, I, OP_IABS},
    {"log2", 1, I, I, I, OP_ILOG2},
    {"neg", 1, I, I, I, OP_INEG},
    {"-", 1, I, I, I, OP_INEG},
    {"+", 2, F, F, F, OP_FADD},
    {"-", 2, F, F, F, OP_FSUB},
    {"*", 2, F, F, F, OP_FMUL},
    {"/", 2, F, F, F, OP_FDIV},
    {"%", 2, F, F, F, OP_FMOD},
    {"^", 2, F, F, F, OP_FPOW},
    {"neg", 1, F, F, F, OP_FNEG},
    {"-", 1, F, F, F, OP_FNEG},
    {"min", 2, F, F, F, OP_FMIN},
    {"max", 2, F, F, F, OP_FMAX},
    {"exp", 1, F, F, F, OP_FEXP},
    {"log", 1, F, F, F, OP_FLOG},
    {"sqrt", 1, F, F, F, OP_FSQRT},
    {"abs", 1, F, F, F, OP_FABS},
    {"<", 2, F, F, U, OP_FLT},
    {">", 2, F, F, U, OP_FGT},
    {"<=", 2, F, F, U, OP_FLE},
    {">=", 2, F, F, U, OP_FGE},
    {"to-i64", 1, F, F, I, OP_FTOI},
    {"to-string", 1, F, F, S, OP_FTOS},
    {"floor", 1, F, F, F, OP_FFLOOR},
    {"ceil", 1, F, F, F, OP_FCEIL},
    {"round", 1, F, F, F, OP_FROUND},
    {"+", -1, S, S, S, OP_SCAT},
    {"count-matches", 2, S, S, I, OP_SCOUNT},
    {"replace", 3, S, S, S, OP_SREPL},
    {"<", 2, S, S, U, OP_SLT},
    {">", 2, S, S, U, OP_SGT},
    {"and", 2, B, B, B, OP_BAND},
    {"or", -2, B, B, B, OP_BOR},
    {"guard", 1, B, B, U, OP_GUARD},
    {"not", 1, B, B, B, OP_BNOT},
    {"xor", 2, B, B, B, OP_BXOR},
    {"=>", 2, B, B, B, OP_BIMP},
    {"!=", 2, I, I, U, OP_NE_I},
    {"!=", 2, F, F, U, OP_NE_F},
    {"!=", 2, S, S, U, OP_NE_S},
    {"!=", 2, B, B, U, OP_NE_B},
    {"!=", 2, U, U, U, OP_NE_U},
    /* BigInt and BigRat (eg_big.c), egglog's */
    {"bigint", 1, I, I, Z, EG_OP_Z_FROM_I64},
    {"from-string", 1, S, S, Z, EG_OP_Z_FROM_STRING},
    {"to-string", 1, Z, Z, S, EG_OP_Z_TO_STRING},
    {"+", 2, Z, Z, Z, EG_OP_Z_ADD},
    {"-", 2, Z, Z, Z, EG_OP_Z_SUB},
    {"*", 2, Z, Z, Z, EG_OP_Z_MUL},
    {"/", 2, Z, Z, Z, EG_OP_Z_DIV},
    {"%", 2, Z, Z, Z, EG_OP_Z_MOD},
    {"&", 2, Z, Z, Z, EG_OP_Z_AND},
    {"|", 2, Z, Z, Z, EG_OP_Z_OR},
    {"^", 2, Z, Z, Z, EG_OP_Z_XOR},
    {"<<", 2, Z, I, Z, EG_OP_Z_SHL},
    {">>", 2, Z, I, Z, EG_OP_Z_SHR},
    {"not-Z", 1, Z, Z, Z, EG_OP_Z_NOT},
    {"bits", 1, Z, Z, Z, EG_OP_Z_BITS},
    {"<", 2, Z, Z, U, EG_OP_Z_LT},
    {">", 2, Z, Z, U, EG_OP_Z_GT},
    {"<=", 2, Z, Z, U, EG_OP_Z_LE},
    {">=", 2, Z, Z, U, EG_OP_Z_GE},
    {"bool-=", 2, Z, Z, B, EG_OP_Z_BEQ},
    {"bool-<", 2, Z, Z, B, EG_OP_Z_BLT},
    {"bool->", 2, Z, Z, B, EG_OP_Z_BGT},
    {"bool-<=", 2, Z, Z, B, EG_OP_Z_BLE},
    {"bool->=", 2, Z, Z, B, EG_OP_Z_BGE},
    {"min", 2, Z, Z, Z, EG_OP_Z_MIN},
    {"max", 2, Z, Z, Z, EG_OP_Z_MAX},
    {"+", 2, Q, Q, Q, EG_OP_Q_ADD},
    {"-", 2, Q, Q, Q, EG_OP_Q_SUB},
    {"*", 2, Q, Q, Q, EG_OP_Q_MUL},
    {"/", 2, Q, Q, Q, EG_OP_Q_DIV},
    {"min", 2, Q, Q, Q, EG_OP_Q_MIN},
    {"max", 2, Q, Q, Q, EG_OP_Q_MAX},
    {"neg", 1, Q, Q, Q, EG_OP_Q_NEG},
    {"abs", 1, Q, Q, Q, EG_OP_Q_ABS},
    {"floor", 1, Q, Q, Q, EG_OP_Q_FLOOR},
    {"ceil", 1, Q, Q, Q, EG_OP_Q_CEIL},
    {"round", 1, Q, Q, Q, EG_OP_Q_ROUND},
    {"bigrat", 2, Z, Z, Q, EG_OP_Q_MAKE},
    {"numer", 1, Q, Q, Z, EG_OP_Q_NUMER},
    {"denom", 1, Q, Q, Z, EG_OP_Q_DENOM},
    {"to-f64", 1, Q, Q, F, EG_OP_Q_TO_F64},
    {"to-i64", 1, Q, Q, I, EG_OP_Q_TO_I64},
    {"pow", 2, Q, Q, Q, EG_OP_Q_POW},
    {"log", 1, Q, Q, Q, EG_OP_Q_LOG},
    {"sqrt", 1, Q, Q, Q, EG_OP_Q_SQRT},
    {"cbrt", 1, Q, Q, Q, EG_OP_Q_CBRT},
    {"<", 2, Q, Q, U, EG_OP_Q_LT},
    {">", 2, Q, Q, U, EG_OP_Q_GT},
    {"<=", 2, Q, Q, U, EG_OP_Q_LE},
    {">=", 2, Q, Q, U, EG_OP_Q_GE},
    /* over every sort (both arguments of one sort) */
    {"!=", 2, ANY, ANY, U, OP_NE_U},
    {"value-eq", 2, ANY, ANY, U, OP_VALUE_EQ},
    {"bool-!=", 2, ANY, ANY, B, OP_BOOL_NE},
    {"ordering-min", 2, ANY, ANY, ANY, OP_ORD_MIN},
    {"ordering-max", 2, ANY, ANY, ANY, OP_ORD_MAX},
};
#undef I
#undef F
#undef S
#undef B
#undef U
#undef ANY
#undef Z
#undef Q

/* Internal: equality of two query constants (e.g. two globals in a check). */
static const eg_prim prim_eq = {"=", 2, SORT_ANY, SORT_ANY, SORT_UNIT, OP_EQ};
const eg_prim *eg__prim_eq(void)
{
    return &prim_eq;
}

uint32_t eg__prim_ret(const eg_prim *p, uint32_t arg0)
{
    return p->ret == SORT_ANY ? arg0 : p->ret;
}

void eg__pair_prims_init(eg_engine *e, eg_sort *s, uint32_t self)
{
    eg_prim *p = eg__calloc(e, 3, sizeof(eg_prim));
    p[0] = (eg_prim){"pair", 2, s->elem[0], s->elem[1], self, EG_OP_PAIR};
    p[1] = (eg_prim){"pair-first", 1, self, self, s->elem[0], EG_OP_PAIR_FIRST};
    p[2] = (eg_prim){"pair-second", 1, self, self, s->elem[1], EG_OP_PAIR_SECOND};
    s->pair_prims = p;
}

static const eg_prim *prim_find(const char *name, const uint32_t *arg_sorts, uint32_t nargs,
                                bool *name_known);

const eg_prim *eg__prim_resolve(const eg_engine *e, const char *name, const uint32_t *arg_sorts,
                                uint32_t nargs, bool *name_known)
{
    for (uint32_t i = 0; i < e->nsorts; i++) {
        const eg_prim *p = e->sorts[i].pair_prims;
        if (!p) continue;
        for (int k = 0; k < 3; k++) {
            if (strcmp(p[k].name, name) != 0) continue;
            *name_known = true;
            if ((uint32_t)p[k].nargs != nargs) continue;
            if (nargs >= 1 && arg_sorts[0] != p[k].arg) continue;
            if (nargs >= 2 && arg_sorts[1] != p[k].arg2) continue;
            return &p[k];
        }
    }
    if (eg__cont_prim_name(name)) {
        bool amb;
        return eg__cont_resolve(e, name, arg_sorts, nargs, UINT32_MAX /* any result */, name_known, &amb);
    }
    bool known = false;
    const eg_prim *p = prim_find(name, arg_sorts, nargs, &known);
    if (known)
        *name_known = true;
    else if (!*name_known)
        *name_known = false;
    return p;
}

static eg_value pair_intern(eg_engine *e, eg_value a, eg_value b)
{
    eg_value k[2] = {a, b};
    uint64_t h = XXH3_64bits(k, sizeof k);
    if (e->pair_nslots == 0 || (e->npairs + 1) * 2 > e->pair_nslots) {
        uint32_t ns = e->pair_nslots ? e->pair_nslots * 2 : 64;
        uint32_t *sl = eg__mcalloc(e, ns, sizeof *sl);
        for (uint32_t i = 0; i < e->npairs; i++) {
            uint32_t j = (uint32_t)e->pair_hash[i] & (ns - 1);
            while (sl[j])
                j = (j + 1) & (ns - 1);
            sl[j] = i + 1;
        }
        eg__mfree(e, e->pair_slots);
        e->pair_slots = sl;
        e->pair_nslots = ns;
    }
    uint32_t j = (uint32_t)h & (e->pair_nslots - 1);
    while (e->pair_slots[j]) {
        uint32_t id = e->pair_slots[j] - 1;
        if (e->pairs[2 * id] == a && e->pairs[2 * id + 1] == b) return id;
        j = (j + 1) & (e->pair_nslots - 1);
    }
    if (e->npairs + 1 > e->cappairs) { /* both arrays grow before either is used */
        uint32_t nc = e->cappairs ? e->cappairs * 2 : 64;
        e->pairs = eg__marray(e, e->pairs, 2 * (size_t)nc, sizeof(eg_value));
        e->pair_hash = eg__marray(e, e->pair_hash, nc, sizeof *e->pair_hash);
        e->cappairs = nc;
    }
    e->pairs[2 * e->npairs] = a;
    e->pairs[2 * e->npairs + 1] = b;
    e->pair_hash[e->npairs] = h;
    e->pair_slots[j] = e->npairs + 1;
    return e->npairs++;
}

eg_value eg__pair_canon(eg_engine *e, uint32_t sort, eg_value v)
{
    if (v >= e->npairs) return v;
    const eg_sort *s = &e->sorts[sort];
    eg_value a = eg__canon(e, s->elem[0], e->pairs[2 * v]);
    eg_value b = eg__canon(e, s->elem[1], e->pairs[2 * v + 1]);
    if (a == e->pairs[2 * v] && b == e->pairs[2 * v + 1]) return v;
    return pair_intern(e, a, b);
}

/* The first overload of name that takes the argument sorts (the table's order). */
static const eg_prim *prim_find(const char *name, const uint32_t *arg_sorts, uint32_t nargs,
                                bool *name_known)
{
    *name_known = false;
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++) {
        const eg_prim *p = &prims[i];
        if (strcmp(p->name, name) != 0) continue;
        *name_known = true;
        if (p->nargs >= 0 && (uint32_t)p->nargs != nargs) continue;
        if (p->nargs == -1 && nargs < 1) continue;
        if (p->arg == SORT_ANY) { /* two arguments of one sort, any sort */
            if (nargs == 2 && arg_sorts[0] == arg_sorts[1]) return p;
            continue;
        }
        bool ok = true;
        for (uint32_t a = 0; a < nargs && ok; a++) {
            uint32_t want = (a == 1) ? p->arg2 : p->arg;
            if (p->nargs < 0) want = p->arg;
            if (arg_sorts[a] != want) ok = false;
        }
        if (ok) return p;
    }
    return NULL;
}

static double f_of(eg_value v)
{
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}
static eg_value of_f(double d)
{
    if (d == 0) d = 0.0; /* one zero */
    eg_value v;
    memcpy(&v, &d, sizeof v);
    return v;
}
static int64_t i_of(eg_value v)
{
    return (int64_t)v;
}
static eg_value of_i(int64_t i)
{
    return (eg_value)i;
}

/* The shortest digits that read back as d, in egglog's form (Rust's Debug for f64):
 * plain decimals with at least one fractional digit for 1e-4 <= |d| < 1e16 (and 0),
 * otherwise a mantissa and an exponent without '+' or leading zeros ("1e20", "1.5e-7"). */
void eg__fmt_f64(double d, char *buf, size_t n)
{
    if (isnan(d)) {
        snprintf(buf, n, "NaN");
        return;
    }
    if (isinf(d)) {
        snprintf(buf, n, d < 0 ? "-inf" : "inf");
        return;
    }
    char sci[40];
    for (int p = 0; p <= 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p, d);
        if (strtod(sci, NULL) == d) break;
    }
    /* sci is "[-]D[.DDD]e[+-]X": collect the digits and the exponent */
    char dig[32];
    size_t nd = 0;
    const char *q = sci;
    bool neg = *q == '-';
    if (neg) q++;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9' && nd < sizeof dig - 1) dig[nd++] = *q;
    dig[nd] = 0;
    int x = *q == 'e' ? atoi(q + 1) : 0;
    while (nd > 1 && dig[nd - 1] == '0') /* trailing zeros of the mantissa */
        dig[--nd] = 0;
    double ad = fabs(d);
    size_t o = 0;
    char out[400];
    if (neg) out[o++] = '-';
    if (d == 0 || (ad >= 1e-4 && ad < 1e16)) {
        if (x >= 0) {
            for (int k = 0; k <= x; k++)
                out[o++] = (size_t)k < nd ? dig[k] : '0';
            out[o++] = '.';
            if ((size_t)x + 1 < nd)
                for (size_t k = (size_t)x + 1; k < nd; k++)
                    out[o++] = dig[k];
            else
                out[o++] = '0';
        } else {
            out[o++] = '0';
            out[o++] = '.';
            for (int k = 0; k < -x - 1; k++)
                out[o++] = '0';
            for (size_t k = 0; k < nd; k++)
                out[o++] = dig[k];
        }
        out[o] = 0;
    } else {
        out[o++] = dig[0];
        if (nd > 1) {
            out[o++] = '.';
            for (size_t k = 1; k < nd; k++)
                out[o++] = dig[k];
        }
        snprintf(out + o, sizeof out - o, "e%d", x);
    }
    snprintf(buf, n, "%s", out);
}

/* f64 order for min and max: NaN above every number (egglog's ordered floats). */
static bool f_less(double a, double b)
{
    if (isnan(a)) return false;
    if (isnan(b)) return true;
    return a < b;
}

/* The length in UTF-8 characters (count-matches and replace with an empty pattern match
 * at every character boundary, as egglog's strings do). */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

static prim_status pred(bool b, eg_value *out)
{
    *out = 0;
    return b ? PR_OK : PR_FAIL;
}

prim_status eg__prim_call(eg_engine *e, const eg_prim *p, const eg_value *a, uint32_t nargs,
                          eg_value *out, const char **why)
{
    *why = NULL;
    if (p->op >= EG_OP_CONT) return eg__cont_call(e, p, a, nargs, out, why);
    if (p->op >= EG_OP_Z_FROM_I64 && p->op < EG_OP_BIG_END)
        return eg__big_call(e, p->op, a, nargs, out, why);
    int64_t x = nargs > 0 ? i_of(a[0]) : 0, y = nargs > 1 ? i_of(a[1]) : 0;
    double fx = nargs > 0 ? f_of(a[0]) : 0, fy = nargs > 1 ? f_of(a[1]) : 0;
    char buf[64];
    switch (p->op) {
    case OP_IADD:
    case OP_ISUB:
    case OP_IMUL: {
        int64_t z;
        bool ovf = p->op == OP_IADD   ? __builtin_add_overflow(x, y, &z)
                   : p->op == OP_ISUB ? __builtin_sub_overflow(x, y, &z)
                                      : __builtin_mul_overflow(x, y, &z);
        if (ovf) {
            *why = "integer overflow";
            return PR_FAIL;
        }
        *out = of_i(z);
        return PR_OK;
    }
    case OP_IDIV:
    case OP_IMOD:
        if (y == 0) {
            *why = "division by zero";
            return PR_FAIL;
        }
        if (x == INT64_MIN && y == -1) {
            *why = "integer overflow";
            return PR_FAIL;
        }
        *out = of_i(p->op == OP_IDIV ? x / y : x % y);
        return PR_OK;
    case OP_IAND:
        *out = of_i(x & y);
        return PR_OK;
    case OP_IOR:
        *out = of_i(x | y);
        return PR_OK;
    case OP_IXOR:
        *out = of_i(x ^ y);
        return PR_OK;
    case OP_ISHL:
    case OP_ISHR:
        if (y < 0 || y > 63) {
            *why = "shift amount outside 0..63";
            return PR_FAIL;
        }
        *out = p->op == OP_ISHL ? of_i((int64_t)((uint64_t)x << y)) : of_i(x >> y);
        return PR_OK;
    case OP_INOT:
        *out = of_i(~x);
        return PR_OK;
    case OP_IMIN:
        *out = of_i(x < y ? x : y);
        return PR_OK;
    case OP_IMAX:
        *out = of_i(x > y ? x : y);
        return PR_OK;
    case OP_ILT:
        return pred(x < y, out);
    case OP_IGT:
        return pred(x > y, out);
    case OP_ILE:
        return pred(x <= y, out);
    case OP_IGE:
        return pred(x >= y, out);
    case OP_BILT:
        *out = x < y;
        return PR_OK;
    case OP_BIGT:
        *out = x > y;
        return PR_OK;
    case OP_BILE:
        *out = x <= y;
        return PR_OK;
    case OP_BIGE:
        *out = x >= y;
        return PR_OK;
    case OP_BIEQ:
        *out = x == y;
        return PR_OK;
    case OP_ITOF:
        *out = of_f((double)x);
        return PR_OK;
    case OP_ITOS:
        snprintf(buf, sizeof buf, "%lld", (long long)x);
        *out = eg__intern(e, buf, strlen(buf));
        return PR_OK;
    case OP_IABS:
    case OP_INEG:
        /* -INT64_MIN is not an i64: the same failure as (- 0 x) (issue 21) */
        if (x == INT64_MIN) {
            *why = "integer overflow";
            return PR_FAIL;
        }
        *out = of_i(p->op == OP_IABS && x >= 0 ? x : -x);
        return PR_OK;
    case OP_ILOG2:
        if (x <= 0) {
            *why = "log2 of a non-positive integer";
            return PR_FAIL;
        }
        {
            int64_t r = 0;
            while (x >>= 1)
                r++;
            *out = of_i(r);
        }
        return PR_OK;
    case OP_FADD:
        *out = of_f(fx + fy);
        return PR_OK;
    case OP_FSUB:
        *out = of_f(fx - fy);
        return PR_OK;
    case OP_FMUL:
        *out = of_f(fx * fy);
        return PR_OK;
    case OP_FDIV:
    case OP_FMOD:
        if (fy == 0) {
            *why = "division by zero";
            return PR_FAIL;
        }
        *out = of_f(p->op == OP_FDIV ? fx / fy : fmod(fx, fy));
        return PR_OK;
    case OP_FPOW:
        *out = of_f(pow(fx, fy));
        return PR_OK;
    case OP_FNEG:
        *out = of_f(-fx);
        return PR_OK;
    case OP_FMIN:
        *out = of_f(f_less(fy, fx) ? fy : fx);
        return PR_OK;
    case OP_FMAX:
        *out = of_f(f_less(fx, fy) ? fy : fx);
        return PR_OK;
    case OP_FEXP:
        *out = of_f(exp(fx));
        return PR_OK;
    case OP_FLOG:
        if (!(fx > 0)) {
            *why = "log of a non-positive number";
            return PR_FAIL;
        }
        *out = of_f(log(fx));
        return PR_OK;
    case OP_FSQRT:
        if (fx < 0) {
            *why = "sqrt of a negative number";
            return PR_FAIL;
        }
        *out = of_f(sqrt(fx));
        return PR_OK;
    case OP_FABS:
        *out = of_f(fabs(fx));
        return PR_OK;
    case OP_FLT: /* ordered floats: NaN equals NaN and is above every number */
        return pred(f_less(fx, fy), out);
    case OP_FGT:
        return pred(f_less(fy, fx), out);
    case OP_FLE:
        return pred(!f_less(fy, fx), out);
    case OP_FGE:
        return pred(!f_less(fx, fy), out);
    case OP_FTOI: /* saturating, NaN to 0 (as egglog) */
        *out = isnan(fx)                      ? 0
               : fx >= 9223372036854775807.0  ? of_i(INT64_MAX)
               : fx <= -9223372036854775808.0 ? of_i(INT64_MIN)
                                              : of_i((int64_t)fx);
        return PR_OK;
    case OP_FTOS:
        eg__fmt_f64(fx, buf, sizeof buf);
        *out = eg__intern(e, buf, strlen(buf));
        return PR_OK;
    case OP_FFLOOR:
        *out = of_f(floor(fx));
        return PR_OK;
    case OP_FCEIL:
        *out = of_f(ceil(fx));
        return PR_OK;
    case OP_FROUND:
        *out = of_f(round(fx));
        return PR_OK;
    case OP_SCAT: {
        size_t len = 0;
        for (uint32_t i = 0; i < nargs; i++) {
            size_t l = eg__str_len(e, (uint32_t)a[i]);
            if (l > SIZE_MAX - 1 - len) eg__oom(e, SIZE_MAX);
            len += l;
        }
        /* A string that grows every iteration reaches gigabytes in a few: the copy and
         * its hash go by chunks, with the run's limits checked before the allocation and
         * between chunks (issue 21), and the buffer becomes the interned string. */
        eg__limit_room(e, len + 1);
        char *s = eg__scoped_alloc_raw(e, len + 1);
        XXH3_state_t st;
        XXH3_64bits_reset(&st);
        size_t o = 0;
        for (uint32_t i = 0; i < nargs; i++) {
            const char *t = eg__str(e, (uint32_t)a[i]);
            size_t l = eg__str_len(e, (uint32_t)a[i]);
            for (size_t at = 0; at < l;) {
                size_t c = l - at < SCAT_CHUNK ? l - at : SCAT_CHUNK;
                memcpy(s + o, t + at, c);
                XXH3_64bits_update(&st, s + o, c);
                o += c;
                at += c;
                if (c == SCAT_CHUNK) eg__limit_poll(e);
            }
        }
        s[o] = 0;
        uint64_t h = XXH3_64bits_digest(&st);
        eg__scoped_release(e, s);
        *out = eg__intern_hashed(e, s, o, h, s);
        return PR_OK;
    }
    case OP_SCOUNT: {
        const char *s = eg__str(e, (uint32_t)a[0]), *t = eg__str(e, (uint32_t)a[1]);
        size_t tl = strlen(t);
        int64_t c = 0;
        if (!tl)
            c = (int64_t)utf8_chars(s) + 1;
        else
            for (const char *q = strstr(s, t); q; q = strstr(q + tl, t))
                c++;
        *out = of_i(c);
        return PR_OK;
    }
    case OP_SREPL: {
        const char *s = eg__str(e, (uint32_t)a[0]), *t = eg__str(e, (uint32_t)a[1]),
                   *r = eg__str(e, (uint32_t)a[2]);
        size_t tl = strlen(t), rl = strlen(r), sl = strlen(s);
        size_t cnt = 0;
        if (!tl)
            cnt = utf8_chars(s) + 1;
        else
            for (const char *q = strstr(s, t); q; q = strstr(q + tl, t))
                cnt++;
        if (rl && cnt > (SIZE_MAX - sl - 1) / rl) eg__oom(e, SIZE_MAX);
        eg__limit_room(e, sl + cnt * rl + 1);
        char *res = eg__scoped_alloc(e, sl + cnt * rl + 1), *w = res;
        if (!tl) { /* the replacement before every character and at the end */
            for (const char *q = s;; q++) {
                if (((unsigned char)*q & 0xC0) != 0x80) {
                    memcpy(w, r, rl);
                    w += rl;
                }
                if (!*q) break;
                *w++ = *q;
            }
            *w = 0;
        } else {
            const char *q = s, *m;
            while ((m = strstr(q, t))) {
                memcpy(w, q, (size_t)(m - q));
                w += m - q;
                memcpy(w, r, rl);
                w += rl;
                q = m + tl;
            }
            strcpy(w, q);
        }
        *out = eg__intern(e, res, strlen(res));
        eg__scoped_free(e, res);
        return PR_OK;
    }
    case OP_SLT:
        return pred(strcmp(eg__str(e, (uint32_t)a[0]), eg__str(e, (uint32_t)a[1])) < 0, out);
    case OP_SGT:
        return pred(strcmp(eg__str(e, (uint32_t)a[0]), eg__str(e, (uint32_t)a[1])) > 0, out);
    case OP_BAND:
        *out = a[0] && a[1];
        return PR_OK;
    case OP_BOR: {
        bool any = false;
        for (uint32_t i = 0; i < nargs; i++)
            any = any || a[i];
        *out = any;
        return PR_OK;
    }
    case OP_GUARD:
        return pred(a[0] != 0, out);
    case OP_VALUE_EQ:
        return pred(a[0] == a[1], out);
    case OP_BOOL_NE:
        *out = a[0] != a[1];
        return PR_OK;
    case OP_ORD_MIN: /* the engine's value order, as egglog's primitives use its own */
        *out = a[0] < a[1] ? a[0] : a[1];
        return PR_OK;
    case OP_ORD_MAX:
        *out = a[0] > a[1] ? a[0] : a[1];
        return PR_OK;
    case OP_BNOT:
        *out = !a[0];
        return PR_OK;
    case OP_BXOR:
        *out = (!a[0]) != (!a[1]);
        return PR_OK;
    case OP_BIMP:
        *out = !a[0] || a[1];
        return PR_OK;
    case OP_NE_F:
    case OP_NE_I:
    case OP_NE_S:
    case OP_NE_B:
    case OP_NE_U:
        return pred(a[0] != a[1], out);
    case OP_EQ:
        return pred(a[0] == a[1], out);
    case EG_OP_PAIR:
        *out = pair_intern(e, a[0], a[1]);
        return PR_OK;
    case EG_OP_PAIR_FIRST:
    case EG_OP_PAIR_SECOND:
        if (a[0] >= e->npairs) {
            *why = "not a pair value";
            return PR_FAIL;
        }
        *out = eg__canon(e, p->ret, e->pairs[2 * a[0] + (p->op == EG_OP_PAIR_SECOND)]);
        return PR_OK;
    default:
        *why = "unknown primitive";
        return PR_FAIL;
    }
}
