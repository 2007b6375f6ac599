/* fuzz_lr_files - libFuzzer harness over luminal_run's file readers (lr.h): the first
 * byte picks the reader ('n': .npy, anything else: safetensors), the rest is the file.
 * Every array read is converted into each dtype that accepts it, so the conversion's
 * bounds are exercised on what the readers let through. Built with LUMINAL_FUZZ=ON
 * (lm_add_fuzz); the readers must refuse bad input with an error, never crash. */
#include "lr.h"

#include <stdlib.h>
#include <string.h>

static void convert_all(const lr_array *a)
{
    size_t es = lr_elem_size(a->elem);
    if (!es || a->numel > (1u << 16)) return;
    for (int t = 0; t < HL_DTYPE_COUNT; t++) {
        if (!lr_elem_accepted(a->elem, (hl_dtype)t)) continue;
        size_t ts = hl_dtype_size((hl_dtype)t);
        void *dst = malloc(a->numel * ts + 1);
        if (!dst) return;
        lm_err e = {0};
        int rc = lr_convert_in(a, (hl_dtype)t, dst, "fuzz", &e);
        if (rc != 0 && !e.msg[0]) abort(); /* an error always says why */
        const char *descr;
        void *wide = NULL;
        size_t bytes;
        lm_err e2 = {0};
        if (rc == 0) lr_npy_form((hl_dtype)t, false, dst, a->numel, &descr, &wide, &bytes, &e2);
        free(wide);
        free(dst);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    /* an exact copy, so that a read past the end is seen */
    size_t len = size - 1;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, len);
    lm_err e = {0};
    if (data[0] == 'n') {
        lr_array a;
        if (lr_npy_parse(buf, len, "fuzz.npy", &a, &e) == 0) {
            if (lr_elem_size(a.elem) && a.data + a.bytes != buf + len) abort();
            convert_all(&a);
        } else if (!e.msg[0]) {
            abort();
        }
    } else {
        lr_st st;
        if (lr_st_parse(buf, len, "fuzz.safetensors", &st, &e) == 0) {
            for (uint32_t i = 0; i < st.n; i++) {
                const lr_array *a = &st.entries[i].a;
                if (a->data < buf || a->data + a->bytes > buf + len) abort();
                convert_all(a);
            }
            lr_st_free(&st);
        } else if (!e.msg[0]) {
            abort();
        }
    }
    free(buf);
    return 0;
}
