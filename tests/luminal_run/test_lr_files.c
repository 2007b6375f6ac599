/* test_lr_files - luminal_run's file readers and conversions (tools/luminal_run/lr.h) on
 * good files and on every kind of malformed one: each prefix of a valid file, each byte
 * of it flipped, hand-made bad headers. A malformed file must give an error that names
 * the file, never a crash (ASan and UBSan watch). */
#include "lm_check.h"
#include "lr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ---- */

/* A .npy file in memory: the preamble of version `major`, the header text (padded as
 * given), then `data`. */
static size_t make_npy(uint8_t *buf, size_t cap, unsigned major, const char *header,
                       const void *data, size_t bytes)
{
    size_t hl = strlen(header), pre = major == 1 ? 10 : 12;
    ck_assert(pre + hl + bytes <= cap);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        buf[8 + i] = (uint8_t)(hl >> (8 * i));
    memcpy(buf + pre, header, hl);
    if (bytes) memcpy(buf + pre + hl, data, bytes);
    return pre + hl + bytes;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    lm_err e = {0};
    char *b = lm_read_file(path, 0, len, &e);
    ck_assert_msg(b != NULL, "%s", e.msg);
    return (uint8_t *)b;
}

static void tmp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/tmp/test_lr_files_%d_%s", (int)getpid(), name);
}

/* Parses buf as .npy expecting failure with a message naming the file and holding
 * `needle` (NULL: any message). */
static void npy_bad(const uint8_t *buf, size_t len, const char *needle)
{
    lr_array a;
    lm_err e = {0};
    int rc = lr_npy_parse(buf, len, "f.npy", &a, &e);
    ck_assert_msg(rc == LM_EPARSE, "accepted a bad .npy (rc %d), expected '%s'", rc,
                  needle ? needle : "");
    ck_assert_msg(strstr(e.msg, "f.npy") != NULL, "%s", e.msg);
    if (needle) ck_assert_msg(strstr(e.msg, needle) != NULL, "'%s' not in: %s", needle, e.msg);
}

/* ---- .npy ---- */

START_TEST(npy_written_is_read_back)
{
    char path[256];
    tmp_path(path, sizeof path, "a.npy");
    float v[6] = {1, -2, 3.5f, 0, -0.0f, 7};
    int64_t dims[2] = {2, 3};
    lm_err e = {0};
    ck_assert_msg(lr_npy_write(path, "<f4", 2, dims, v, sizeof v, &e) == 0, "%s", e.msg);
    size_t len;
    uint8_t *buf = slurp(path, &len);
    ck_assert_uint_eq(len % 64, (sizeof v) % 64); /* the header pads to 64 bytes */
    lr_array a;
    ck_assert_msg(lr_npy_parse(buf, len, path, &a, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(a.elem, LR_E_F32);
    ck_assert_str_eq(a.type, "<f4");
    ck_assert_uint_eq(a.ndim, 2);
    ck_assert_int_eq(a.dims[0], 2);
    ck_assert_int_eq(a.dims[1], 3);
    ck_assert_uint_eq(a.numel, 6);
    ck_assert_uint_eq(a.bytes, sizeof v);
    ck_assert(memcmp(a.data, v, sizeof v) == 0);
    /* a scalar and a 1-D array */
    ck_assert(lr_npy_write(path, "|b1", 0, dims, "\1", 1, &e) == 0);
    free(buf);
    buf = slurp(path, &len);
    ck_assert_msg(lr_npy_parse(buf, len, path, &a, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(a.ndim, 0);
    ck_assert_uint_eq(a.numel, 1);
    ck_assert_int_eq(a.elem, LR_E_BOOL);
    int64_t d1 = 3;
    ck_assert(lr_npy_write(path, "<i8", 1, &d1, (int64_t[]){1, 2, 3}, 24, &e) == 0);
    free(buf);
    buf = slurp(path, &len);
    ck_assert_msg(lr_npy_parse(buf, len, path, &a, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(a.ndim, 1);
    ck_assert_int_eq(a.dims[0], 3);
    ck_assert_int_eq(a.elem, LR_E_I64);
    free(buf);
    unlink(path);
}
END_TEST

START_TEST(npy_descrs_and_versions)
{
    static const struct {
        const char *descr;
        lr_elem e;
        size_t size;
    } cases[] = {{"<f4", LR_E_F32, 4},        {"<f2", LR_E_F16, 2},
                 {"bfloat16", LR_E_BF16, 2},  {"float8_e4m3fn", LR_E_E4M3, 1},
                 {"float8_e5m2", LR_E_E5M2, 1}, {"<i4", LR_E_I32, 4},
                 {"<i8", LR_E_I64, 8},        {"|b1", LR_E_BOOL, 1},
                 {"|V1", LR_E_RAW1, 1},       {"<V2", LR_E_RAW2, 2},
                 {"|V2", LR_E_RAW2, 2},       {"=f4", LR_E_F32, 4},
                 {">b1", LR_E_BOOL, 1},       {"<f8", LR_E_OTHER, 0},
                 {"|u1", LR_E_OTHER, 0},      {"<c8", LR_E_OTHER, 0}};
    uint8_t buf[512], data[16] = {0};
    for (unsigned major = 1; major <= 3; major++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char h[200];
            snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }\n",
                     cases[i].descr);
            size_t n = make_npy(buf, sizeof buf, major, h, data, 2 * cases[i].size);
            lr_array a;
            lm_err e = {0};
            ck_assert_msg(lr_npy_parse(buf, n, "f.npy", &a, &e) == 0, "%s: %s", cases[i].descr,
                          e.msg);
            ck_assert_msg(a.elem == cases[i].e, "%s: elem %d", cases[i].descr, a.elem);
            ck_assert_uint_eq(lr_elem_size(a.elem), cases[i].size);
            ck_assert_str_eq(a.type, cases[i].descr);
        }
    /* double quotes, no trailing comma, Fortran order of a vector, Python 2's 3L */
    const char *ok_headers[] = {
        "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,)}",
        "{'shape': (3,), 'fortran_order': True, 'descr': '<f4'}   \n",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3L, 1), }"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = make_npy(buf, sizeof buf, 1, ok_headers[i], data, 12);
        lr_array a;
        lm_err e = {0};
        ck_assert_msg(lr_npy_parse(buf, n, "f.npy", &a, &e) == 0, "%s: %s", ok_headers[i], e.msg);
        ck_assert_uint_eq(a.numel, 3);
    }
}
END_TEST

START_TEST(npy_bad_headers)
{
    static const struct {
        const char *header;
        const char *needle;
    } cases[] = {
        {"", "does not begin with '{'"},
        {"{'descr': '<f4', 'fortran_order': False}", "'shape' is missing"},
        {"{'fortran_order': False, 'shape': (2,)}", "'descr' is missing"},
        {"{'descr': '<f4', 'shape': (2,)}", "'fortran_order' is missing"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unknown key 'x'"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", "True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "non-negative integer"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ','"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
         "64 bits"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", "more than 8"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16)}",
         "overflows"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "structured"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", NULL},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "after the closing"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}", "Fortran order"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}", "big-endian"},
        {"{'descr': 'a\\'b', 'fortran_order': False, 'shape': (2,)}", "escapes"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected ','"},
        {"{'descr' '<f4'}", "expected ':'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", NULL},
    };
    uint8_t buf[512], data[64] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = make_npy(buf, sizeof buf, 1, cases[i].header, data, 8);
        npy_bad(buf, n, cases[i].needle);
    }
    /* the preamble */
    const char *h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}";
    size_t n = make_npy(buf, sizeof buf, 1, h, data, 8);
    buf[0] = 'X';
    npy_bad(buf, n, "not a .npy file");
    n = make_npy(buf, sizeof buf, 4, h, data, 8);
    npy_bad(buf, n, "version 4.0");
    n = make_npy(buf, sizeof buf, 1, h, data, 8);
    buf[8] = 0xff;
    buf[9] = 0xff;
    npy_bad(buf, n, "truncated");
    n = make_npy(buf, sizeof buf, 2, h, data, 8);
    buf[11] = 0x7f; /* a header of 2 GiB */
    npy_bad(buf, n, "at most");
    npy_bad(buf, 11, "preamble");
    /* data: short and long */
    n = make_npy(buf, sizeof buf, 1, h, data, 7);
    npy_bad(buf, n, "truncated");
    n = make_npy(buf, sizeof buf, 1, h, data, 9);
    npy_bad(buf, n, "longer than its header");
    /* the error is sticky: a record holding one is left as it is */
    lm_err e = {0};
    lm_err_set(&e, LM_EIO, NULL, "first");
    lr_array a;
    n = make_npy(buf, sizeof buf, 1, h, data, 8);
    ck_assert_int_eq(lr_npy_parse(buf, n, "f.npy", &a, &e), LM_EIO);
    ck_assert_str_eq(e.msg, "first");
}
END_TEST

START_TEST(npy_every_prefix_and_every_flipped_byte)
{
    uint8_t buf[512], data[24];
    for (int i = 0; i < 24; i++)
        data[i] = (uint8_t)(i * 37);
    size_t n = make_npy(buf, sizeof buf, 1,
                        "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }    \n", data,
                        24);
    lr_array a;
    lm_err e = {0};
    ck_assert_msg(lr_npy_parse(buf, n, "f.npy", &a, &e) == 0, "%s", e.msg);
    for (size_t len = 0; len < n; len++) {
        uint8_t *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees a read past */
        memcpy(copy, buf, len);
        npy_bad(copy, len, NULL);
        free(copy);
    }
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++) {
            uint8_t *copy = malloc(n);
            memcpy(copy, buf, n);
            copy[i] ^= (uint8_t)(1u << bit);
            lm_err e2 = {0};
            int rc = lr_npy_parse(copy, n, "f.npy", &a, &e2);
            /* either read (a byte of the data, or padding) or refused with a message */
            ck_assert(rc == 0 || (rc == LM_EPARSE && e2.msg[0]));
            if (rc == 0 && lr_elem_size(a.elem))
                ck_assert(a.data + a.bytes <= copy + n && a.numel * lr_elem_size(a.elem) == a.bytes);
            free(copy);
        }
}
END_TEST

/* ---- safetensors ---- */

static size_t make_st(uint8_t *buf, size_t cap, const char *header, const void *data,
                      size_t bytes)
{
    size_t hl = strlen(header);
    ck_assert(8 + hl + bytes <= cap);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, header, hl);
    if (bytes) memcpy(buf + 8 + hl, data, bytes);
    return 8 + hl + bytes;
}

static void st_bad(const uint8_t *buf, size_t len, const char *needle)
{
    lr_st st;
    lm_err e = {0};
    int rc = lr_st_parse(buf, len, "w.safetensors", &st, &e);
    ck_assert_msg(rc == LM_EPARSE, "accepted a bad safetensors file (rc %d), expected '%s'", rc,
                  needle ? needle : "");
    ck_assert_msg(strstr(e.msg, "w.safetensors") != NULL, "%s", e.msg);
    if (needle) ck_assert_msg(strstr(e.msg, needle) != NULL, "'%s' not in: %s", needle, e.msg);
    ck_assert(st.n == 0 && st.entries == NULL);
}

START_TEST(st_written_is_read_back)
{
    char path[256];
    tmp_path(path, sizeof path, "t.safetensors");
    uint16_t bf[6] = {0x3f80, 0xbf80, 0x4000, 0, 0x8000, 0x7fc0};
    int32_t ids[3] = {1, 2, 3};
    int64_t d2[2] = {2, 3}, d1[1] = {3};
    lr_st_out t[3] = {{"w", HL_BF16, 2, d2, bf, sizeof bf},
                      {"ids", HL_INT, 1, d1, ids, sizeof ids},
                      {"empty", HL_F32, 1, (int64_t[]){0}, NULL, 0}};
    lm_err e = {0};
    ck_assert_msg(lr_st_write(path, t, 3, &e) == 0, "%s", e.msg);
    size_t len;
    uint8_t *buf = slurp(path, &len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | buf[i];
    ck_assert_uint_eq(hl % 8, 0); /* the data is 8-byte aligned */
    lr_st st;
    ck_assert_msg(lr_st_parse(buf, len, path, &st, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(st.n, 3);
    const lr_st_entry *w = lr_st_find(&st, "w"), *i = lr_st_find(&st, "ids");
    ck_assert(w && i && lr_st_find(&st, "nope") == NULL);
    ck_assert_str_eq(st.entries[0].name, "w"); /* the header's order */
    ck_assert_int_eq(w->a.elem, LR_E_BF16);
    ck_assert_str_eq(w->a.type, "BF16");
    ck_assert_uint_eq(w->a.ndim, 2);
    ck_assert_uint_eq(w->a.numel, 6);
    ck_assert(memcmp(w->a.data, bf, sizeof bf) == 0);
    ck_assert_int_eq(i->a.elem, LR_E_I32);
    ck_assert(memcmp(i->a.data, ids, sizeof ids) == 0);
    ck_assert_uint_eq(lr_st_find(&st, "empty")->a.numel, 0);
    lr_st_free(&st);
    /* every prefix is refused */
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, buf, n);
        st_bad(copy, n, NULL);
        free(copy);
    }
    free(buf);
    unlink(path);
}
END_TEST

START_TEST(st_bad_headers)
{
    static const struct {
        const char *header;
        const char *needle;
    } cases[] = {
        {"[1, 2]", "not a JSON object"},
        {"{\"a\": 1}", "tensor 'a': not an object"},
        {"{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", "'dtype'"},
        {"{\"a\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", "'shape'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}", "'data_offsets'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", "'data_offsets'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", "not a size"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}", "not a size"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 0]}}", "begin after"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}", "non-negative"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 400]}}", "truncated"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4]}}", "data_offsets give"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}",
         "more than 8"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 16], "
         "\"data_offsets\": [0, 4]}}",
         "overflows"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
         "\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
         "duplicate"},
        {"{\"__metadata__\": 3}", "'__metadata__'"},
        {"{\"a\": {\"dtype\": 3, \"shape\": [1], \"data_offsets\": [0, 4]}}", "'dtype'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
         "\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
         "overlap"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
         "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
         "'a' and 'b' overlap"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
         "belong to no tensor"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
         "after the last tensor"},
        {"{oops", "header:1:"},
        {"", NULL},
    };
    uint8_t buf[1024], data[16] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = make_st(buf, sizeof buf, cases[i].header, data, 16);
        st_bad(buf, n, cases[i].needle);
    }
    /* a name too long */
    char h[600];
    memset(h, 0, sizeof h);
    strcpy(h, "{\"");
    memset(h + 2, 'n', 300);
    strcat(h, "\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}");
    size_t n = make_st(buf, sizeof buf, h, data, 16);
    st_bad(buf, n, "too long");
    /* the header length */
    n = make_st(buf, sizeof buf, "{}", data, 0);
    buf[7] = 0x10;
    st_bad(buf, n, "header length");
    n = make_st(buf, sizeof buf, "{}", data, 0);
    buf[0] = 200;
    st_bad(buf, n, "truncated");
    st_bad((const uint8_t *)"\1\2\3", 3, "not a safetensors file");
    /* an unknown dtype is read, as OTHER (the caller names it) */
    n = make_st(buf, sizeof buf,
                "{\"a\": {\"dtype\": \"F64\", \"shape\": [2], \"data_offsets\": [0, 16]}}", data,
                16);
    lr_st st;
    lm_err e = {0};
    ck_assert_msg(lr_st_parse(buf, n, "w.safetensors", &st, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(st.entries[0].a.elem, LR_E_OTHER);
    ck_assert_str_eq(st.entries[0].a.type, "F64");
    lr_st_free(&st);
    lr_st_free(&st); /* twice is harmless */
}
END_TEST

/* ---- conversion ---- */

START_TEST(conversions_in)
{
    /* what each dtype accepts */
    ck_assert(lr_elem_accepted(LR_E_F32, HL_F32));
    ck_assert(!lr_elem_accepted(LR_E_F16, HL_F32));
    ck_assert(lr_elem_accepted(LR_E_F32, HL_BF16) && lr_elem_accepted(LR_E_RAW2, HL_BF16) &&
              lr_elem_accepted(LR_E_BF16, HL_BF16) && !lr_elem_accepted(LR_E_F16, HL_BF16));
    ck_assert(lr_elem_accepted(LR_E_F16, HL_F16) && !lr_elem_accepted(LR_E_RAW1, HL_F16));
    ck_assert(lr_elem_accepted(LR_E_RAW1, HL_F8E4M3) && lr_elem_accepted(LR_E_F32, HL_F8E5M2) &&
              !lr_elem_accepted(LR_E_E5M2, HL_F8E4M3));
    ck_assert(lr_elem_accepted(LR_E_I32, HL_INT) && !lr_elem_accepted(LR_E_I64, HL_INT) &&
              !lr_elem_accepted(LR_E_F32, HL_INT));
    ck_assert(lr_elem_accepted(LR_E_BOOL, HL_BOOL) && !lr_elem_accepted(LR_E_RAW1, HL_BOOL));
    ck_assert(!lr_elem_accepted(LR_E_OTHER, HL_F32));

    /* f32 holding bf16 values: exact, signed zero and NaN kept */
    float f[5] = {1.0f, -0.0f, 0.15625f, NAN, -3.0e38f};
    f[4] = hl_bf16_to_f32(hl_f32_to_bf16(f[4]));
    lr_array a = {.elem = LR_E_F32, .ndim = 1, .dims = {5}, .numel = 5,
                  .data = (const uint8_t *)f, .bytes = sizeof f};
    uint16_t out[5];
    lm_err e = {0};
    ck_assert_msg(lr_convert_in(&a, HL_BF16, out, "x.npy", &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(out[0], 0x3f80);
    ck_assert_uint_eq(out[1], 0x8000);
    ck_assert(isnan(hl_bf16_to_f32(out[3])));
    ck_assert(hl_bf16_to_f32(out[4]) == f[4]);
    /* an f32 that is not a bf16 value: refused, naming the element */
    f[2] = 0.1f;
    ck_assert_int_eq(lr_convert_in(&a, HL_BF16, out, "x.npy", &e), LM_EDTYPE);
    ck_assert_msg(strstr(e.msg, "x.npy: element 2") && strstr(e.msg, "bf16"), "%s", e.msg);
    /* f16 and FP8 from f32 */
    float g[3] = {0.5f, -2.0f, 448.0f};
    lr_array b = {.elem = LR_E_F32, .ndim = 1, .dims = {3}, .numel = 3,
                  .data = (const uint8_t *)g, .bytes = sizeof g};
    uint16_t h[3];
    uint8_t q[3];
    lm_err e2 = {0};
    ck_assert(lr_convert_in(&b, HL_F16, h, "h", &e2) == 0 && hl_f16_to_f32(h[1]) == -2.0f);
    ck_assert(lr_convert_in(&b, HL_F8E4M3, q, "q", &e2) == 0 && hl_e4m3_to_f32(q[2]) == 448.0f);
    g[2] = 449.0f; /* saturates in E4M3: not exact */
    ck_assert_int_eq(lr_convert_in(&b, HL_F8E4M3, q, "q", &e2), LM_EDTYPE);
    lm_err e3 = {0};
    g[2] = 57344.0f;
    ck_assert(lr_convert_in(&b, HL_F8E5M2, q, "q", &e3) == 0 && hl_e5m2_to_f32(q[2]) == 57344.0f);
    /* bools: bytes 0 and 1 only */
    uint8_t bo[3] = {0, 1, 2}, bout[3];
    lr_array c = {.elem = LR_E_BOOL, .ndim = 1, .dims = {3}, .numel = 3, .data = bo, .bytes = 3};
    ck_assert_int_eq(lr_convert_in(&c, HL_BOOL, bout, "m.npy", &e3), LM_EDTYPE);
    ck_assert_msg(strstr(e3.msg, "element 2"), "%s", e3.msg);
    /* raw bits are taken as they are */
    uint16_t raw[2] = {0x1234, 0xabcd}, rout[2];
    lr_array d = {.elem = LR_E_RAW2, .ndim = 1, .dims = {2}, .numel = 2,
                  .data = (const uint8_t *)raw, .bytes = 4};
    lm_err e4 = {0};
    ck_assert(lr_convert_in(&d, HL_BF16, rout, "r", &e4) == 0 && rout[1] == 0xabcd);
}
END_TEST

START_TEST(npy_forms_out)
{
    uint16_t bf[3] = {0x3f80, 0xc000, 0x7f80};
    const char *descr;
    void *wide;
    size_t bytes;
    lm_err e = {0};
    ck_assert(lr_npy_form(HL_BF16, false, bf, 3, &descr, &wide, &bytes, &e) == 0);
    ck_assert_str_eq(descr, "<f4");
    ck_assert_uint_eq(bytes, 12);
    ck_assert(((float *)wide)[0] == 1.0f && ((float *)wide)[1] == -2.0f &&
              isinf(((float *)wide)[2]));
    free(wide);
    ck_assert(lr_npy_form(HL_BF16, true, bf, 3, &descr, &wide, &bytes, &e) == 0);
    ck_assert(wide == NULL && !strcmp(descr, "<V2") && bytes == 6);
    ck_assert(lr_npy_form(HL_F16, true, bf, 3, &descr, &wide, &bytes, &e) == 0);
    ck_assert(wide == NULL && !strcmp(descr, "<f2"));
    uint8_t q[2] = {0x38, 0xb8};
    ck_assert(lr_npy_form(HL_F8E4M3, false, q, 2, &descr, &wide, &bytes, &e) == 0);
    ck_assert(((float *)wide)[0] == 1.0f && ((float *)wide)[1] == -1.0f);
    free(wide);
    ck_assert(lr_npy_form(HL_F8E5M2, true, q, 2, &descr, &wide, &bytes, &e) == 0);
    ck_assert(!strcmp(descr, "|V1") && bytes == 2);
    ck_assert(lr_npy_form(HL_INT, false, q, 2, &descr, &wide, &bytes, &e) == 0);
    ck_assert(!strcmp(descr, "<i4") && bytes == 8 && wide == NULL);
    ck_assert(lr_npy_form(HL_BOOL, false, q, 2, &descr, &wide, &bytes, &e) == 0);
    ck_assert(!strcmp(descr, "|b1") && bytes == 2);
    ck_assert_str_eq(lr_st_dtype_name(HL_F8E4M3), "F8_E4M3");
    ck_assert_str_eq(lr_st_dtype_name(HL_INT), "I32");
    /* a write that cannot happen */
    ck_assert_int_eq(lr_npy_write("/nonexistent/dir/x.npy", "<f4", 0, NULL, "", 0, &e), LM_EIO);
    ck_assert_msg(strstr(e.msg, "/nonexistent/dir/x.npy"), "%s", e.msg);
}
END_TEST

static Suite *files_suite(void)
{
    Suite *s = suite_create("lr_files");
    TCase *tc = tcase_create("npy");
    tcase_add_test(tc, npy_written_is_read_back);
    tcase_add_test(tc, npy_descrs_and_versions);
    tcase_add_test(tc, npy_bad_headers);
    tcase_add_test(tc, npy_every_prefix_and_every_flipped_byte);
    suite_add_tcase(s, tc);
    tc = tcase_create("safetensors");
    tcase_add_test(tc, st_written_is_read_back);
    tcase_add_test(tc, st_bad_headers);
    suite_add_tcase(s, tc);
    tc = tcase_create("conversion");
    tcase_add_test(tc, conversions_in);
    tcase_add_test(tc, npy_forms_out);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {files_suite, NULL};
