/* lr_st.c - safetensors files: the reader (from memory, trusting nothing) and the writer.
 *
 * The layout (huggingface/safetensors, "Format"):
 *
 *   N (u64, little-endian)   header: N bytes of UTF-8 JSON          data
 *   8 bytes                  {"__metadata__": {...},                 the tensors' bytes,
 *                             "name": {"dtype": "BF16",              offsets counted from
 *                                      "shape": [2, 3],              the data's start
 *                                      "data_offsets": [b, e]}, ...}
 *
 * The header is parsed with jansson, duplicates refused; every offset is checked against
 * the data's length before an array points at it.
 */
#include "lr.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    lr_elem e;
} ST_TYPES[] = {{"F32", LR_E_F32},      {"F16", LR_E_F16},          {"BF16", LR_E_BF16},
                {"F8_E4M3", LR_E_E4M3}, {"F8_E5M2", LR_E_E5M2},     {"I32", LR_E_I32},
                {"I64", LR_E_I64},      {"BOOL", LR_E_BOOL}};

const char *lr_st_dtype_name(hl_dtype t)
{
    switch (t) {
    case HL_F32:
        return "F32";
    case HL_F16:
        return "F16";
    case HL_BF16:
        return "BF16";
    case HL_F8E4M3:
        return "F8_E4M3";
    case HL_F8E5M2:
        return "F8_E5M2";
    case HL_INT:
        return "I32";
    case HL_I64:
        return "I64";
    case HL_BOOL:
        return "BOOL";
    default:
        return "?";
    }
}

static int bad(lm_err *err, const char *what, const char *name, const char *msg)
{
    if (name)
        return lm_err_set(err, LM_EPARSE, NULL, "%s: safetensors header: tensor '%s': %s", what,
                          name, msg);
    return lm_err_set(err, LM_EPARSE, NULL, "%s: safetensors header: %s", what, msg);
}

static bool get_u64(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

static int parse_entry(const char *name, const json_t *v, const uint8_t *data, size_t dlen,
                       const char *what, lr_st_entry *e, lm_err *err)
{
    if (strlen(name) >= LR_MAX_NAME) return bad(err, what, NULL, "a tensor name is too long");
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    if (!json_is_object(v)) return bad(err, what, name, "not an object");
    const json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
                 *off = json_object_get(v, "data_offsets");
    if (!json_is_string(dt)) return bad(err, what, name, "'dtype' is missing or not a string");
    if (!json_is_array(sh)) return bad(err, what, name, "'shape' is missing or not an array");
    if (!json_is_array(off) || json_array_size(off) != 2)
        return bad(err, what, name, "'data_offsets' is missing or not [begin, end]");
    lr_array *a = &e->a;
    snprintf(a->type, sizeof a->type, "%s", json_string_value(dt));
    a->elem = LR_E_OTHER;
    for (size_t i = 0; i < sizeof ST_TYPES / sizeof ST_TYPES[0]; i++)
        if (!strcmp(a->type, ST_TYPES[i].name)) a->elem = ST_TYPES[i].e;
    if (json_array_size(sh) > LR_MAX_RANK) return bad(err, what, name, "more than 8 dims");
    a->ndim = (uint32_t)json_array_size(sh);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < a->ndim; d++) {
        uint64_t x;
        if (!get_u64(json_array_get(sh, d), &x) || x > (uint64_t)INT64_MAX)
            return bad(err, what, name, "'shape' holds something that is not a size");
        if (x && numel > UINT64_MAX / x) return bad(err, what, name, "the shape's size overflows");
        numel *= x;
        a->dims[d] = (int64_t)x;
    }
    a->numel = numel;
    uint64_t b, en;
    if (!get_u64(json_array_get(off, 0), &b) || !get_u64(json_array_get(off, 1), &en))
        return bad(err, what, name, "'data_offsets' are not non-negative integers");
    if (b > en) return bad(err, what, name, "'data_offsets' begin after they end");
    if (en > dlen)
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s: the file is truncated: tensor '%s' ends at byte %" PRIu64
                          " of the data, which has %zu",
                          what, name, en, dlen);
    a->data = data + b;
    a->bytes = (size_t)(en - b);
    size_t es = lr_elem_size(a->elem);
    if (es && (numel > (uint64_t)SIZE_MAX / es || numel * es != a->bytes))
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s: safetensors header: tensor '%s': its shape needs %" PRIu64
                          " elements of %zu bytes, its data_offsets give %zu bytes",
                          what, name, numel, es, a->bytes);
    return 0;
}

typedef struct span {
    uint64_t b, e;
    uint32_t i;
} span;

static int span_cmp(const void *x, const void *y)
{
    const span *a = x, *b = y;
    if (a->b != b->b) return a->b < b->b ? -1 : 1;
    if (a->e != b->e) return a->e < b->e ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The tensors, ordered by offset, cover the data exactly: no two overlap (identical
 * offsets included), no gap, nothing after the last one (the reference loader's
 * validation). Zero-sized tensors take no bytes and may sit anywhere. */
static int check_cover(const lr_st *st, const uint8_t *data, size_t dlen, const char *what,
                       lm_err *err)
{
    span *sp = st->n ? calloc(st->n, sizeof *sp) : NULL;
    if (st->n && !sp) return lm_err_set(err, LM_ENOMEM, NULL, "%s: out of memory", what);
    for (uint32_t i = 0; i < st->n; i++) {
        sp[i].b = (uint64_t)(st->entries[i].a.data - data);
        sp[i].e = sp[i].b + st->entries[i].a.bytes;
        sp[i].i = i;
    }
    if (st->n) qsort(sp, st->n, sizeof *sp, span_cmp);
    uint64_t end = 0;
    int rc = 0;
    for (uint32_t k = 0; k < st->n && !rc; k++) {
        const span *s = &sp[k];
        if (s->b == s->e && s->b <= end) continue; /* empty: no bytes */
        if (s->b < end) {
            const span *prev = &sp[k - 1];
            for (uint32_t j = k; j-- > 0;) /* the tensor it overlaps: the last one ending past b */
                if (sp[j].e > s->b && sp[j].e > sp[j].b) {
                    prev = &sp[j];
                    break;
                }
            rc = lm_err_set(err, LM_EPARSE, NULL,
                            "%s: safetensors header: tensors '%s' and '%s' overlap: their "
                            "data_offsets are [%" PRIu64 ", %" PRIu64 "] and [%" PRIu64
                            ", %" PRIu64 "]",
                            what, st->entries[prev->i].name, st->entries[s->i].name, prev->b,
                            prev->e, s->b, s->e);
        } else if (s->b > end) {
            rc = lm_err_set(err, LM_EPARSE, NULL,
                            "%s: safetensors header: bytes %" PRIu64 " to %" PRIu64
                            " of the data belong to no tensor (a gap before tensor '%s')",
                            what, end, s->b, st->entries[s->i].name);
        }
        if (s->e > end) end = s->e;
    }
    if (!rc && end != dlen)
        rc = lm_err_set(err, LM_EPARSE, NULL,
                        "%s: the file is longer than its header says: %zu bytes of data after "
                        "the last tensor, which ends at byte %" PRIu64,
                        what, dlen - (size_t)end, end);
    free(sp);
    return rc;
}

int lr_st_parse(const uint8_t *buf, size_t len, const char *what, lr_st *out, lm_err *err)
{
    out->n = 0;
    out->entries = NULL;
    if (lm_err_is_set(err)) return err->code;
    if (len < 8)
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s: not a safetensors file (shorter than its 8-byte header length)",
                          what);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | buf[i];
    if (n > LR_ST_MAX_HEADER)
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s: not a safetensors file: its header length %" PRIu64
                          " is above the format's %u bytes",
                          what, n, LR_ST_MAX_HEADER);
    if (n > len - 8)
        return lm_err_set(err, LM_EPARSE, NULL,
                          "%s: the file is truncated: its header claims %" PRIu64
                          " bytes, %zu are there",
                          what, n, len - 8);
    json_error_t je;
    json_t *root = json_loadb((const char *)buf + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return lm_err_set(err, LM_EPARSE, NULL, "%s: safetensors header:%d:%d: %s", what,
                          je.line, je.column, je.text);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = bad(err, what, NULL, "not a JSON object");
        goto done;
    }
    size_t count = json_object_size(root);
    out->entries = count ? calloc(count, sizeof *out->entries) : NULL;
    if (count && !out->entries) {
        rc = lm_err_set(err, LM_ENOMEM, NULL, "%s: out of memory", what);
        goto done;
    }
    const uint8_t *data = buf + 8 + n;
    size_t dlen = len - 8 - (size_t)n;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (!strcmp(key, "__metadata__")) {
            if (!json_is_object(v)) {
                rc = bad(err, what, NULL, "'__metadata__' is not an object");
                goto done;
            }
            continue;
        }
        rc = parse_entry(key, v, data, dlen, what, &out->entries[out->n], err);
        if (rc) goto done;
        out->n++;
    }
    rc = check_cover(out, data, dlen, what, err);
done:
    json_decref(root);
    if (rc) lr_st_free(out);
    return rc;
}

/* The largest data_offsets end in a header (entries that are malformed count as 0:
 * lr_st_parse refuses them by name). */
static uint64_t header_extent(const json_t *root)
{
    uint64_t ext = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v)
    {
        uint64_t en;
        const json_t *off = json_is_object(v) ? json_object_get(v, "data_offsets") : NULL;
        if (json_is_array(off) && json_array_size(off) == 2 &&
            get_u64(json_array_get(off, 1), &en) && en > ext)
            ext = en;
    }
    return ext;
}

int lr_st_read(const char *path, uint64_t max_data, char **buf, size_t *len, lr_st *out,
               lm_err *err)
{
    *buf = NULL;
    *len = 0;
    out->n = 0;
    out->entries = NULL;
    if (lm_err_is_set(err)) return err->code;
    lm_reader r;
    if (lm_reader_open(&r, path, err)) return err->code;
    uint8_t pre[8];
    char *b = NULL;
    size_t got = 0;
    int rc = lm_reader_read(&r, pre, 8, &got, err);
    if (!rc && got < 8)
        rc = lm_err_set(err, LM_EPARSE, NULL,
                        "%s: not a safetensors file (shorter than its 8-byte header length)",
                        path);
    uint64_t n = 0;
    for (int i = 7; i >= 0 && !rc; i--)
        n = n << 8 | pre[i];
    if (!rc && n > LR_ST_MAX_HEADER)
        rc = lm_err_set(err, LM_EPARSE, NULL,
                        "%s: not a safetensors file: its header length %" PRIu64
                        " is above the format's %u bytes",
                        path, n, LR_ST_MAX_HEADER);
    if (!rc && r.regular && n > r.size - 8)
        rc = lm_err_set(err, LM_EPARSE, NULL,
                        "%s: the file is truncated: its header claims %" PRIu64
                        " bytes, %" PRIu64 " are there",
                        path, n, r.size - 8);
    if (!rc && !(b = malloc(8 + (size_t)n)))
        rc = lm_err_set(err, LM_ENOMEM, NULL, "%s: out of memory for its header", path);
    if (!rc) {
        memcpy(b, pre, 8);
        rc = lm_reader_read_exact(&r, b + 8, (size_t)n, "its header", err);
    }
    uint64_t ext = 0;
    if (!rc) {
        json_t *root = json_loadb(b + 8, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
        bool obj = root && json_is_object(root);
        if (obj) ext = header_extent(root);
        json_decref(root);
        if (!obj) /* the parser names what is wrong with the header, located */
            rc = lr_st_parse((const uint8_t *)b, 8 + (size_t)n, path, out, err);
        if (!rc && !obj)
            rc = lm_err_set(err, LM_EPARSE, NULL, "%s: safetensors header: not a JSON object",
                            path);
    }
    if (!rc && r.regular && ext > r.size - 8 - n)
        rc = lm_err_set(err, LM_EPARSE, NULL,
                        "%s: the file is truncated: its header puts data up to byte %" PRIu64
                        ", the file holds %" PRIu64 " bytes of data",
                        path, ext, r.size - 8 - n);
    if (!rc && ext > max_data)
        rc = lm_err_set(err, LM_ELIMIT, NULL,
                        "%s: its header puts data up to byte %" PRIu64
                        ", more than the %" PRIu64 " bytes this run can hold",
                        path, ext, max_data);
    if (!rc && ext > SIZE_MAX - 9 - n)
        rc = lm_err_set(err, LM_ELIMIT, NULL, "%s: its data does not fit in memory", path);
    char *nb = NULL;
    if (!rc && !(nb = realloc(b, 8 + (size_t)n + (size_t)ext + 1)))
        rc = lm_err_set(err, LM_ENOMEM, NULL, "%s: out of memory for %" PRIu64 " bytes of data",
                        path, ext);
    if (nb) b = nb;
    if (!rc) rc = lm_reader_read_exact(&r, b + 8 + n, (size_t)ext, "its data", err);
    if (!rc && !lm_reader_at_end(&r, err) && !lm_err_is_set(err))
        rc = lm_err_set(err, LM_EPARSE, NULL,
                        "%s: the file is longer than its header says: there are bytes after "
                        "byte %" PRIu64 " of the data, where the last tensor ends",
                        path, ext);
    if (lm_err_is_set(err) && !rc) rc = err->code;
    lm_reader_close(&r);
    if (!rc) {
        *len = 8 + (size_t)n + (size_t)ext;
        b[*len] = 0;
        rc = lr_st_parse((const uint8_t *)b, *len, path, out, err);
    }
    if (rc) {
        free(b);
        b = NULL;
        *len = 0;
    }
    *buf = b;
    return rc;
}

void lr_st_free(lr_st *st)
{
    if (!st) return;
    free(st->entries);
    st->entries = NULL;
    st->n = 0;
}

const lr_st_entry *lr_st_find(const lr_st *st, const char *name)
{
    for (uint32_t i = 0; st && i < st->n; i++)
        if (!strcmp(st->entries[i].name, name)) return &st->entries[i];
    return NULL;
}

int lr_st_write(const char *path, const lr_st_out *t, uint32_t n, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    json_t *root = json_object();
    uint64_t off = 0;
    int rc = 0;
    char *text = NULL;
    for (uint32_t i = 0; root && i < n; i++) {
        json_t *shape = json_array();
        for (uint32_t d = 0; shape && d < t[i].ndim; d++)
            json_array_append_new(shape, json_integer(t[i].dims[d]));
        json_t *e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", lr_st_dtype_name(t[i].dtype),
                              "shape", shape, "data_offsets", (json_int_t)off,
                              (json_int_t)(off + t[i].bytes));
        if (!e || json_object_set_new(root, t[i].name, e) != 0) {
            json_decref(root);
            root = NULL;
        }
        off += t[i].bytes;
    }
    if (root) text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text) return lm_err_set(err, LM_ENOMEM, NULL, "%s: out of memory", path);
    size_t hl = strlen(text), pad = (8 - hl % 8) % 8; /* the data 8-byte aligned */
    uint64_t hn = hl + pad;
    unsigned char pre[8];
    for (int i = 0; i < 8; i++)
        pre[i] = (unsigned char)(hn >> (8 * i));
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(text);
        return lm_err_set(err, LM_EIO, NULL, "cannot write %s: %s", path, strerror(errno));
    }
    bool ok = fwrite(pre, 1, 8, f) == 8 && fwrite(text, 1, hl, f) == hl &&
              fwrite("        ", 1, pad, f) == pad;
    for (uint32_t i = 0; ok && i < n; i++)
        ok = t[i].bytes == 0 || fwrite(t[i].data, 1, t[i].bytes, f) == t[i].bytes;
    if (fclose(f) != 0) ok = false;
    free(text);
    if (!ok) rc = lm_err_set(err, LM_EIO, NULL, "writing %s failed: %s", path, strerror(errno));
    return rc;
}
