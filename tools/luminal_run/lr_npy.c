/* lr_npy.c - .npy files: the reader (from memory, trusting nothing) and the writer.
 *
 * The layout (numpy's format.py, NEP 1):
 *
 *   \x93NUMPY  major minor  header_len  header                       data
 *   6 bytes    1     1      2 (v1) or 4 (v2, v3) little-endian      numel * itemsize
 *
 * The header is a Python dict literal, padded with spaces and ended by '\n', e.g.
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * The reader parses that literal with a small recursive-descent parser that knows the
 * three value forms numpy writes there (a string, True/False, a tuple of integers) and
 * refuses anything else, naming it.
 */
#include "lr.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

size_t lr_elem_size(lr_elem e)
{
    switch (e) {
    case LR_E_F32:
    case LR_E_I32:
        return 4;
    case LR_E_F16:
    case LR_E_BF16:
    case LR_E_RAW2:
        return 2;
    case LR_E_E4M3:
    case LR_E_E5M2:
    case LR_E_BOOL:
    case LR_E_RAW1:
        return 1;
    case LR_E_I64:
        return 8;
    default:
        return 0;
    }
}

const char *lr_elem_name(lr_elem e)
{
    static const char *const names[] = {"f32",  "f16",  "bf16", "f8e4m3",     "f8e5m2",
                                        "i32",  "i64",  "bool", "raw 1-byte", "raw 2-byte",
                                        "other"};
    return (unsigned)e <= LR_E_OTHER ? names[e] : "other";
}

/* ---- the header literal ---- */

typedef struct hp {
    const char *s, *end;
    const char *what;
    lm_err *err;
} hp;

static int hp_fail(hp *h, const char *msg)
{
    return lm_err_set(h->err, LM_EPARSE, NULL, "%s: .npy header: %s", h->what, msg);
}

static void hp_ws(hp *h)
{
    while (h->s < h->end && (*h->s == ' ' || *h->s == '\t' || *h->s == '\n' || *h->s == '\r'))
        h->s++;
}

static bool hp_eat(hp *h, char c)
{
    hp_ws(h);
    if (h->s < h->end && *h->s == c) {
        h->s++;
        return true;
    }
    return false;
}

/* A quoted string ('...' or "...", no escapes: numpy's keys and descrs have none). */
static int hp_string(hp *h, char *out, size_t cap)
{
    hp_ws(h);
    if (h->s >= h->end || (*h->s != '\'' && *h->s != '"')) return hp_fail(h, "expected a string");
    char q = *h->s++;
    size_t n = 0;
    while (h->s < h->end && *h->s != q) {
        if (*h->s == '\\') return hp_fail(h, "escapes in strings are not supported");
        if (n + 1 >= cap) return hp_fail(h, "a string is too long");
        out[n++] = *h->s++;
    }
    if (h->s >= h->end) return hp_fail(h, "an unterminated string");
    h->s++;
    out[n] = 0;
    return 0;
}

static int hp_int(hp *h, int64_t *out)
{
    hp_ws(h);
    int64_t v = 0;
    const char *start = h->s;
    while (h->s < h->end && *h->s >= '0' && *h->s <= '9') {
        int d = *h->s - '0';
        if (v > (INT64_MAX - d) / 10) return hp_fail(h, "a dim does not fit in 64 bits");
        v = v * 10 + d;
        h->s++;
    }
    if (h->s == start) return hp_fail(h, "expected a non-negative integer in the shape");
    /* Python 2's numpy wrote "3L" */
    if (h->s < h->end && *h->s == 'L') h->s++;
    *out = v;
    return 0;
}

static int hp_shape(hp *h, lr_array *a)
{
    if (!hp_eat(h, '(')) return hp_fail(h, "'shape' is not a tuple");
    a->ndim = 0;
    if (hp_eat(h, ')')) return 0;
    for (;;) {
        if (a->ndim == LR_MAX_RANK)
            return lm_err_set(h->err, LM_EPARSE, NULL,
                              "%s: .npy header: more than %d dims (this tool's limit)", h->what,
                              LR_MAX_RANK);
        if (hp_int(h, &a->dims[a->ndim])) return h->err->code;
        a->ndim++;
        if (hp_eat(h, ')')) return 0;
        if (!hp_eat(h, ',')) return hp_fail(h, "expected ',' or ')' in 'shape'");
        if (hp_eat(h, ')')) return 0;
    }
}

static int hp_bool(hp *h, bool *out)
{
    hp_ws(h);
    size_t left = (size_t)(h->end - h->s);
    if (left >= 4 && !memcmp(h->s, "True", 4)) {
        h->s += 4;
        *out = true;
        return 0;
    }
    if (left >= 5 && !memcmp(h->s, "False", 5)) {
        h->s += 5;
        *out = false;
        return 0;
    }
    return hp_fail(h, "'fortran_order' is not True or False");
}

/* The element type of a descr; LR_E_OTHER for a valid type that is not ours. Byte
 * order: '<' and '=' (this host is little-endian), '|' (no order) for 1-byte types;
 * '>' is refused by the caller. */
static lr_elem descr_elem(const char *d)
{
    static const struct {
        const char *name;
        lr_elem e;
    } named[] = {{"bfloat16", LR_E_BF16},
                 {"float8_e4m3fn", LR_E_E4M3},
                 {"float8_e5m2", LR_E_E5M2}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (!strcmp(d, named[i].name)) return named[i].e;
    if (d[0] != '<' && d[0] != '=' && d[0] != '|') return LR_E_OTHER;
    const char *t = d + 1;
    if (!strcmp(t, "f4")) return LR_E_F32;
    if (!strcmp(t, "f2")) return LR_E_F16;
    if (!strcmp(t, "i4")) return LR_E_I32;
    if (!strcmp(t, "i8")) return LR_E_I64;
    if (!strcmp(t, "b1") || !strcmp(t, "?")) return LR_E_BOOL;
    if (!strcmp(t, "V1")) return LR_E_RAW1;
    if (!strcmp(t, "V2")) return LR_E_RAW2;
    return LR_E_OTHER;
}

static int parse_header(hp *h, lr_array *a)
{
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    if (!hp_eat(h, '{')) return hp_fail(h, "it does not begin with '{'");
    while (!hp_eat(h, '}')) {
        char key[64];
        if (hp_string(h, key, sizeof key)) return h->err->code;
        if (!hp_eat(h, ':')) return hp_fail(h, "expected ':' after a key");
        if (!strcmp(key, "descr")) {
            hp_ws(h);
            if (h->s < h->end && *h->s == '[')
                return lm_err_set(h->err, LM_EPARSE, NULL,
                                  "%s: a structured array (a record dtype) is not a tensor",
                                  h->what);
            if (hp_string(h, a->type, sizeof a->type)) return h->err->code;
            have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (hp_bool(h, &fortran)) return h->err->code;
            have_order = true;
        } else if (!strcmp(key, "shape")) {
            if (hp_shape(h, a)) return h->err->code;
            have_shape = true;
        } else {
            return lm_err_set(h->err, LM_EPARSE, NULL, "%s: .npy header: unknown key '%s'",
                              h->what, key);
        }
        if (!hp_eat(h, ',')) {
            if (hp_eat(h, '}')) break;
            return hp_fail(h, "expected ',' or '}'");
        }
    }
    hp_ws(h);
    if (h->s != h->end) return hp_fail(h, "text after the closing '}'");
    if (!have_descr || !have_order || !have_shape)
        return lm_err_set(h->err, LM_EPARSE, NULL,
                          "%s: .npy header: '%s' is missing", h->what,
                          !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    if (fortran) {
        uint32_t big = 0; /* with at most one dim > 1, Fortran order is C order */
        for (uint32_t d = 0; d < a->ndim; d++)
            big += a->dims[d] > 1;
        if (big > 1)
            return lm_err_set(h->err, LM_EPARSE, NULL,
                              "%s: the array is in Fortran order; save a C-ordered one "
                              "(np.save(f, np.ascontiguousarray(x)))",
                              h->what);
    }
    const char *t = a->type;
    char flipped[sizeof a->type];
    if (t[0] == '>') { /* one-byte and void types have no byte order: '>b1' is '|b1' */
        if (strcmp(t + 1, "b1") && strcmp(t + 1, "?") && strcmp(t + 1, "V1") &&
            strcmp(t + 1, "V2") && strcmp(t + 1, "i1") && strcmp(t + 1, "u1"))
            return lm_err_set(h->err, LM_EPARSE, NULL,
                              "%s: the array is big-endian ('%s'); save it little-endian "
                              "(x.astype(x.dtype.newbyteorder('<')))",
                              h->what, t);
        snprintf(flipped, sizeof flipped, "|%s", t + 1);
        t = flipped;
    }
    a->elem = descr_elem(t);
    return 0;
}

int lr_npy_parse(const uint8_t *buf, size_t len, const char *what, lr_array *out, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s: not a .npy file (it does not begin with \\x93NUMPY)", what);
    unsigned major = buf[6], minor = buf[7];
    size_t hlen, pre;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        pre = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return lm_err_set(err, LM_EPARSE, NULL, "%s: the .npy file ends inside its preamble",
                              what);
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
               (size_t)buf[11] << 24;
        pre = 12;
    } else {
        return lm_err_set(err, LM_EPARSE, NULL, "%s: .npy version %u.%u is not supported", what,
                          major, minor);
    }
    if (hlen > LR_NPY_MAX_HEADER)
        return lm_err_set(err, LM_EPARSE, NULL, "%s: the .npy header is %zu bytes (at most %u)",
                          what, hlen, LR_NPY_MAX_HEADER);
    if (hlen > len - pre)
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s: the file is truncated: its .npy header claims %zu bytes, %zu "
                          "are there",
                          what, hlen, len - pre);
    hp h = {(const char *)buf + pre, (const char *)buf + pre + hlen, what, err};
    if (parse_header(&h, out)) return err->code;
    uint64_t numel = 1;
    for (uint32_t d = 0; d < out->ndim; d++) {
        uint64_t v = (uint64_t)out->dims[d];
        if (v && numel > UINT64_MAX / v)
            return lm_err_set(err, LM_EPARSE, NULL, "%s: the shape's size overflows", what);
        numel *= v;
    }
    out->numel = numel;
    size_t es = lr_elem_size(out->elem);
    out->data = buf + pre + hlen;
    out->bytes = len - pre - hlen;
    if (es == 0) return 0; /* LR_E_OTHER: the caller names the type */
    if (numel > (uint64_t)SIZE_MAX / es || numel * es != out->bytes) {
        bool short_ = numel <= (uint64_t)SIZE_MAX / es && numel * es > out->bytes;
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s: the file is %s: its shape needs %" PRIu64 " elements of %zu "
                          "bytes, %zu bytes of data are there",
                          what, short_ ? "truncated" : "longer than its header says", numel, es,
                          out->bytes);
    }
    return 0;
}

int lr_npy_write(const char *path, const char *descr, uint32_t ndim, const int64_t *dims,
                 const void *data, size_t bytes, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    char shape[LR_MAX_RANK * 24 + 8] = "";
    size_t n = 0;
    for (uint32_t d = 0; d < ndim && d < LR_MAX_RANK; d++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%" PRId64 ",%s", dims[d],
                              d + 1 < ndim ? " " : "");
    if (ndim > 1) shape[n - 1] = 0; /* "(3, 4)" but "(5,)" */
    char header[sizeof shape + 128];
    int len = snprintf(header, sizeof header,
                       "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    /* magic + version + length (10) + header, padded with spaces to a multiple of 64 and
     * ended by '\n' */
    size_t total = 10 + (size_t)len + 1;
    size_t pad = (64 - total % 64) % 64;
    memset(header + len, ' ', pad);
    header[(size_t)len + pad] = '\n';
    size_t hlen = (size_t)len + pad + 1;
    FILE *f = fopen(path, "wb");
    if (!f) return lm_err_set(err, LM_EIO, NULL, "cannot write %s: %s", path, strerror(errno));
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, hlen, f) == hlen &&
              (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
    if (fclose(f) != 0) ok = false;
    if (!ok) return lm_err_set(err, LM_EIO, NULL, "writing %s failed: %s", path, strerror(errno));
    return 0;
}
