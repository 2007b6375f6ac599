/* fuzz_ll_unpack - libFuzzer harness over binary LLIR (ll_graph_unpack), compiled from
 * llir's own sources, instrumented. The input is a packed graph whose header's length and
 * checksum are rewritten to match the payload before it is read, so that mutations get
 * past the checksum and reach the field checks and the verifier. A buffer must be refused
 * with a message or give a graph that verifies, writes its LLIR file, and packs to bytes
 * that unpack to a graph writing that same file: never a crash. */
#include "ll_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *b = malloc(size ? size : 1);
    if (!b) return 0;
    memcpy(b, data, size);
    if (size >= 28) {
        uint64_t pl = size - 28, sum = XXH3_64bits(b + 28, size - 28);
        for (uint32_t i = 0; i < 8; i++) {
            b[12 + i] = (uint8_t)(pl >> (8 * i));
            b[20 + i] = (uint8_t)(sum >> (8 * i));
        }
    }
    lm_err e = {0};
    ll_graph *g = ll_graph_unpack(b, size, &e);
    free(b);
    if (!g) {
        if (!e.code || !e.msg[0]) abort(); /* refused without saying why */
        return 0;
    }
    char *a = ll_graph_write_json(g, &e);
    void *p = NULL;
    size_t n = 0;
    if (!a || ll_graph_pack(g, &p, &n, &e)) abort();
    ll_graph *h = ll_graph_unpack(p, n, &e);
    if (!h) abort();
    char *c = ll_graph_write_json(h, &e);
    if (!c || strcmp(a, c) != 0) abort(); /* the repacked graph is another graph */
    free(a);
    free(c);
    free(p);
    ll_graph_free(h);
    ll_graph_free(g);
    return 0;
}
