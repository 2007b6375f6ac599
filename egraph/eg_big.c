/* eg_big.c - the built-in sorts BigInt and BigRat, with egglog's primitives, on GMP
 * (docs/egraph.md, "Big numbers").
 *
 * A value is the interned text of its canonical form: a BigInt's decimal digits, a
 * BigRat's "num/den" in lowest terms with a positive denominator (just "num" when the
 * denominator is 1), so equal numbers are equal values and hash alike. Arithmetic reads
 * the text into GMP, computes, and interns the result's text. A result of more than
 * EG_BIG_MAX_BITS bits fails (egglog has no bound; an engine with limits needs one).
 * GMP aborts when its own allocation fails; the bound keeps its numbers small.
 */
#include "eg_int.h"

#include <gmp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EG_BIG_MAX_BITS (1u << 20) /* about 315 000 decimal digits */

/* The text of a result is written into the engine's buffer (e->bigbuf, allocated before
 * any GMP number exists, so an out-of-memory error never leaves GMP memory behind), then
 * interned once every GMP number is cleared. Its size holds any bounded BigRat. */
#define BIGBUF_BYTES ((size_t)(EG_BIG_MAX_BITS * 0.30103 + 8) * 2 + 16)

static void z_get(const eg_engine *e, eg_value v, mpz_t z)
{
    if (mpz_set_str(z, eg__str(e, (uint32_t)v), 10) != 0) mpz_set_ui(z, 0);
}

static void q_get(const eg_engine *e, eg_value v, mpq_t q)
{
    if (mpq_set_str(q, eg__str(e, (uint32_t)v), 10) != 0 || mpz_sgn(mpq_denref(q)) == 0)
        mpq_set_ui(q, 0, 1);
    mpq_canonicalize(q);
}

/* Writes z's text into buf; false when z is too large. */
static bool z_put(char *buf, const mpz_t z)
{
    if (mpz_sizeinbase(z, 2) > EG_BIG_MAX_BITS) return false;
    mpz_get_str(buf, 10, z);
    return true;
}

static bool q_put(char *buf, const mpq_t q)
{
    if (mpz_sizeinbase(mpq_numref(q), 2) > EG_BIG_MAX_BITS ||
        mpz_sizeinbase(mpq_denref(q), 2) > EG_BIG_MAX_BITS)
        return false;
    mpq_get_str(buf, 10, q);
    return true;
}

/* Rounds q to an integer in r: floor, ceil, or half away from zero (Rust's round). */
static void q_round(mpz_t r, const mpq_t q, int how)
{
    if (how < 0) {
        mpz_fdiv_q(r, mpq_numref(q), mpq_denref(q));
    } else if (how > 0) {
        mpz_cdiv_q(r, mpq_numref(q), mpq_denref(q));
    } else { /* trunc(q + sign(q)/2) */
        mpq_t h;
        mpq_init(h);
        mpq_set_si(h, mpq_sgn(q) < 0 ? -1 : 1, 2);
        mpq_add(h, h, q);
        mpz_tdiv_q(r, mpq_numref(h), mpq_denref(h));
        mpq_clear(h);
    }
}

prim_status eg__big_call(eg_engine *e, int op, const eg_value *a, uint32_t nargs, eg_value *out,
                         const char **why)
{
    (void)nargs;
    if (!e->bigbuf) e->bigbuf = eg__marray(e, NULL, BIGBUF_BYTES, 1);
    prim_status st = PR_OK;
    mpz_t x, y, r;
    mpq_t p, q, s;
    mpz_inits(x, y, r, NULL);
    mpq_inits(p, q, s, NULL);
    bool zin = op < EG_OP_Q_FIRST;
    if (zin && op != EG_OP_Z_FROM_I64 && op != EG_OP_Z_FROM_STRING) {
        z_get(e, a[0], x);
        if (nargs > 1 && op != EG_OP_Z_SHL && op != EG_OP_Z_SHR) z_get(e, a[1], y);
    }
    if (!zin && op != EG_OP_Q_MAKE) {
        q_get(e, a[0], p);
        if (nargs > 1) q_get(e, a[1], q);
    }
    bool zout = false, qout = false;
    switch (op) {
    case EG_OP_Z_FROM_I64:
        mpz_set_si(r, (long)(int64_t)a[0]);
        zout = true;
        break;
    case EG_OP_Z_FROM_STRING: {
        const char *t = eg__str(e, (uint32_t)a[0]);
        /* egglog (Rust's parse): an optional sign, then decimal digits only */
        const char *d = t + (*t == '-' || *t == '+');
        bool ok = *d != 0;
        for (const char *c = d; *c && ok; c++)
            ok = *c >= '0' && *c <= '9';
        if (!ok || strlen(t) > EG_BIG_MAX_BITS / 3 || mpz_set_str(r, *t == '+' ? t + 1 : t, 10)) {
            *why = "not a decimal integer";
            st = PR_FAIL;
        }
        zout = true;
        break;
    }
    case EG_OP_Z_ADD:
        mpz_add(r, x, y);
        zout = true;
        break;
    case EG_OP_Z_SUB:
        mpz_sub(r, x, y);
        zout = true;
        break;
    case EG_OP_Z_MUL:
        if (mpz_sizeinbase(x, 2) + mpz_sizeinbase(y, 2) > EG_BIG_MAX_BITS + 1) {
            *why = "result too large";
            st = PR_FAIL;
        } else {
            mpz_mul(r, x, y);
        }
        zout = true;
        break;
    case EG_OP_Z_DIV:
    case EG_OP_Z_MOD:
        if (mpz_sgn(y) == 0) {
            *why = "division by zero";
            st = PR_FAIL;
        } else if (op == EG_OP_Z_DIV) {
            mpz_tdiv_q(r, x, y); /* Rust's BigInt: truncating */
        } else {
            mpz_tdiv_r(r, x, y);
        }
        zout = true;
        break;
    case EG_OP_Z_AND:
        mpz_and(r, x, y);
        zout = true;
        break;
    case EG_OP_Z_OR:
        mpz_ior(r, x, y);
        zout = true;
        break;
    case EG_OP_Z_XOR:
        mpz_xor(r, x, y);
        zout = true;
        break;
    case EG_OP_Z_SHL:
    case EG_OP_Z_SHR: {
        int64_t n = (int64_t)a[1];
        if (n < 0 || n > UINT32_MAX) {
            *why = "shift amount outside 0..2^32-1";
            st = PR_FAIL;
        } else if (op == EG_OP_Z_SHL) {
            if (mpz_sgn(x) != 0 && mpz_sizeinbase(x, 2) + (uint64_t)n > EG_BIG_MAX_BITS) {
                *why = "result too large";
                st = PR_FAIL;
            } else {
                mpz_mul_2exp(r, x, (mp_bitcnt_t)n);
            }
        } else {
            mpz_fdiv_q_2exp(r, x, (mp_bitcnt_t)n); /* rounds toward -inf, as Rust's */
        }
        zout = true;
        break;
    }
    case EG_OP_Z_NOT:
        mpz_com(r, x);
        zout = true;
        break;
    case EG_OP_Z_BITS:
        mpz_set_ui(r, mpz_sgn(x) == 0 ? 0 : (unsigned long)mpz_sizeinbase(x, 2));
        zout = true;
        break;
    case EG_OP_Z_LT:
    case EG_OP_Z_GT:
    case EG_OP_Z_LE:
    case EG_OP_Z_GE:
    case EG_OP_Z_BLT:
    case EG_OP_Z_BGT:
    case EG_OP_Z_BLE:
    case EG_OP_Z_BGE:
    case EG_OP_Z_BEQ:
    case EG_OP_Q_LT:
    case EG_OP_Q_GT:
    case EG_OP_Q_LE:
    case EG_OP_Q_GE: {
        int c = zin ? mpz_cmp(x, y) : mpq_cmp(p, q);
        bool t = false;
        switch (op) {
        case EG_OP_Z_LT:
        case EG_OP_Z_BLT:
        case EG_OP_Q_LT:
            t = c < 0;
            break;
        case EG_OP_Z_GT:
        case EG_OP_Z_BGT:
        case EG_OP_Q_GT:
            t = c > 0;
            break;
        case EG_OP_Z_LE:
        case EG_OP_Z_BLE:
        case EG_OP_Q_LE:
            t = c <= 0;
            break;
        case EG_OP_Z_BEQ:
            t = c == 0;
            break;
        default:
            t = c >= 0;
        }
        bool pred = op == EG_OP_Z_LT || op == EG_OP_Z_GT || op == EG_OP_Z_LE ||
                    op == EG_OP_Z_GE || op >= EG_OP_Q_LT;
        if (pred) {
            *out = 0; /* Unit; fails when false */
            if (!t) st = PR_FAIL;
        } else {
            *out = t;
        }
        break;
    }
    case EG_OP_Z_MIN:
    case EG_OP_Z_MAX:
        *out = (mpz_cmp(x, y) <= 0) == (op == EG_OP_Z_MIN) ? a[0] : a[1];
        break;
    case EG_OP_Z_TO_STRING:
        *out = a[0]; /* the value is its text */
        break;
    case EG_OP_Q_ADD:
        mpq_add(s, p, q);
        qout = true;
        break;
    case EG_OP_Q_SUB:
        mpq_sub(s, p, q);
        qout = true;
        break;
    case EG_OP_Q_MUL:
        mpq_mul(s, p, q);
        qout = true;
        break;
    case EG_OP_Q_DIV:
        if (mpq_sgn(q) == 0) {
            *why = "division by zero";
            st = PR_FAIL;
        } else {
            mpq_div(s, p, q);
        }
        qout = true;
        break;
    case EG_OP_Q_MIN:
    case EG_OP_Q_MAX:
        *out = (mpq_cmp(p, q) <= 0) == (op == EG_OP_Q_MIN) ? a[0] : a[1];
        break;
    case EG_OP_Q_NEG:
        mpq_neg(s, p);
        qout = true;
        break;
    case EG_OP_Q_ABS:
        mpq_abs(s, p);
        qout = true;
        break;
    case EG_OP_Q_FLOOR:
    case EG_OP_Q_CEIL:
    case EG_OP_Q_ROUND:
        q_round(r, p, op == EG_OP_Q_FLOOR ? -1 : op == EG_OP_Q_CEIL ? 1 : 0);
        mpq_set_z(s, r);
        qout = true;
        break;
    case EG_OP_Q_MAKE:
        z_get(e, a[0], x);
        z_get(e, a[1], y);
        if (mpz_sgn(y) == 0) {
            *why = "zero denominator";
            st = PR_FAIL;
        } else {
            mpz_set(mpq_numref(s), x);
            mpz_set(mpq_denref(s), y);
            mpq_canonicalize(s);
        }
        qout = true;
        break;
    case EG_OP_Q_NUMER:
        mpz_set(r, mpq_numref(p));
        zout = true;
        break;
    case EG_OP_Q_DENOM:
        mpz_set(r, mpq_denref(p));
        zout = true;
        break;
    case EG_OP_Q_TO_F64: {
        double d = mpq_get_d(p);
        memcpy(out, &d, sizeof d);
        break;
    }
    case EG_OP_Q_TO_I64:
        if (mpz_cmp_ui(mpq_denref(p), 1) != 0 || !mpz_fits_slong_p(mpq_numref(p))) {
            *why = "not an integer in i64's range";
            st = PR_FAIL;
        } else {
            *out = (eg_value)(int64_t)mpz_get_si(mpq_numref(p));
        }
        break;
    case EG_OP_Q_POW: {
        /* egglog: an integer exponent only; 0^0 = 1, 0^-n fails */
        if (mpz_cmp_ui(mpq_denref(q), 1) != 0 || !mpz_fits_slong_p(mpq_numref(q))) {
            *why = "fractional or huge exponent";
            st = PR_FAIL;
            break;
        }
        long n = mpz_get_si(mpq_numref(q));
        if (mpq_sgn(p) == 0) {
            if (n < 0) {
                *why = "zero to a negative power";
                st = PR_FAIL;
            } else {
                mpq_set_ui(s, n == 0 ? 1 : 0, 1);
            }
            qout = true;
            break;
        }
        unsigned long m = n < 0 ? (unsigned long)-(n + 1) + 1 : (unsigned long)n;
        size_t bits = mpz_sizeinbase(mpq_numref(p), 2) + mpz_sizeinbase(mpq_denref(p), 2);
        if (m && bits > EG_BIG_MAX_BITS / m) {
            *why = "result too large";
            st = PR_FAIL;
            break;
        }
        mpz_pow_ui(mpq_numref(s), mpq_numref(p), m);
        mpz_pow_ui(mpq_denref(s), mpq_denref(p), m);
        mpq_canonicalize(s);
        if (n < 0) mpq_inv(s, s);
        qout = true;
        break;
    }
    case EG_OP_Q_LOG:
    case EG_OP_Q_CBRT:
        /* egglog defines these at 1 only */
        if (mpq_cmp_ui(p, 1, 1) != 0) {
            *why = "defined for 1 only";
            st = PR_FAIL;
        } else {
            mpq_set_ui(s, op == EG_OP_Q_LOG ? 0 : 1, 1);
        }
        qout = true;
        break;
    case EG_OP_Q_SQRT:
        /* a perfect square of positive numerator and denominator only */
        if (mpq_sgn(p) <= 0 || !mpz_perfect_square_p(mpq_numref(p)) ||
            !mpz_perfect_square_p(mpq_denref(p))) {
            *why = "not the square of a positive rational";
            st = PR_FAIL;
        } else {
            mpz_sqrt(mpq_numref(s), mpq_numref(p));
            mpz_sqrt(mpq_denref(s), mpq_denref(p));
            mpq_canonicalize(s);
        }
        qout = true;
        break;
    default:
        *why = "unknown big-number primitive";
        st = PR_FAIL;
    }
    if (st == PR_OK && zout && !z_put(e->bigbuf, r)) {
        *why = "result too large";
        st = PR_FAIL;
    }
    if (st == PR_OK && qout && !q_put(e->bigbuf, s)) {
        *why = "result too large";
        st = PR_FAIL;
    }
    mpz_clears(x, y, r, NULL);
    mpq_clears(p, q, s, NULL);
    if (st == PR_OK && (zout || qout)) *out = eg__intern(e, e->bigbuf, strlen(e->bigbuf));
    return st;
}

void eg__big_print(const eg_engine *e, FILE *f, uint32_t sort, eg_value v)
{
    const char *t = eg__str(e, (uint32_t)v);
    if (sort == SORT_BIGINT) {
        fprintf(f, "(from-string \"%s\")", t);
        return;
    }
    const char *slash = strchr(t, '/');
    if (!slash) {
        fprintf(f, "(bigrat (from-string \"%s\") (from-string \"1\"))", t);
        return;
    }
    fprintf(f, "(bigrat (from-string \"%.*s\") (from-string \"%s\"))", (int)(slash - t), t,
            slash + 1);
}
