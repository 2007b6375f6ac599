/* fuzz_decode.c - libFuzzer harness of the e-graph decoder.
 *
 * The input is a program in the rules language, run after the encoding's schema in an
 * engine with node, iteration and time limits. Whatever e-graph results, decoding it must
 * either fail with a message or give a graph that
 *   - passes hl_graph_check, and
 *   - is a fixed point: encoding it and decoding again gives the same graph (same
 *     dump, same e-graph once encoded again), and the program text and C paths of its
 *     encoding serialize to the same bytes.
 * Anything else aborts; ASan and UBSan catch memory and undefined-behaviour bugs.
 */
#define _GNU_SOURCE /* open_memstream */
#include "hlir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_decode: %s: %s\n", what, detail ? detail : "");
    abort();
}

static eg_engine *engine(FILE *devnull)
{
    eg_options o;
    eg_options_default(&o);
    o.node_limit = 20000;
    o.iter_limit = 20;
    o.time_limit_s = 1.0;
    o.out = devnull;
    o.log = devnull;
    return eg_engine_new(&o, NULL);
}

static char *serialized(eg_engine *e)
{
    eg_serialized s;
    lm_err ee = {0};
    if (eg_serialize(e, NULL, &s, &ee) != 0) die("serialize", ee.msg);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f || eg_serialized_write_json(e, &s, f, NULL) != 0) die("write json", NULL);
    fclose(f);
    eg_serialized_free(&s);
    return buf;
}

static char *dump(const hl_graph *g)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) die("open_memstream", NULL);
    hl_graph_dump(g, f);
    fclose(f);
    return buf;
}

/* (The JSON writer is not used here: it refuses names the graph itself accepts.) */
static void check_fixed_point(const hl_graph *d, FILE *devnull)
{
    hl_error err;
    hl_error_clear(&err);
    if (hl_graph_check(d, &err) != HL_OK) die("decoded graph fails hl_graph_check", err.msg);
    eg_engine *a = engine(devnull), *b = engine(devnull), *c = engine(devnull);
    hl_encoding enc;
    if (hl_graph_encode(d, a, &enc, &err) != HL_OK) die("encode of a decoded graph", err.msg);
    char *text = hl_graph_encode_text(d, true, &err);
    if (!text) die("encode text of a decoded graph", err.msg);
    lm_err ee = {0};
    if (eg_run_text(b, text, "encoding", &ee) != 0) die("run of the encoding text", ee.msg);
    char *sa = serialized(a), *sb = serialized(b);
    if (strcmp(sa, sb) != 0) die("text and C paths differ", text);
    hl_graph *d2 = hl_graph_decode_engine(a, &err);
    if (!d2) die("decode of a re-encoded graph", err.msg);
    char *x1 = dump(d), *x2 = dump(d2);
    if (strcmp(x1, x2) != 0) die("decode is not a fixed point", x1);
    hl_encoding enc2;
    if (hl_graph_encode(d2, c, &enc2, &err) != HL_OK) die("encode of the second decode", err.msg);
    char *sc = serialized(c);
    if (strcmp(sa, sc) != 0) die("the second decode encodes differently", x1);
    free(x1);
    free(x2);
    free(sa);
    free(sb);
    free(sc);
    free(text);
    hl_graph_free(d2);
    hl_encoding_fini(&enc);
    hl_encoding_fini(&enc2);
    eg_engine_free(a);
    eg_engine_free(b);
    eg_engine_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull) devnull = fopen("/dev/null", "w");
    char *prog = malloc(size + 1);
    memcpy(prog, data, size);
    prog[size] = 0;
    eg_engine *e = engine(devnull);
    lm_err ee = {0};
    hl_error err;
    hl_error_clear(&err);
    if (hl_encode_declare(e, &err) != HL_OK) die("schema", err.msg);
    /* a program that fails part-way leaves the effects before the failing command */
    (void)eg_run_text(e, prog, "fuzz", &ee);
    hl_graph *d = hl_graph_decode_engine(e, &err);
    if (d) {
        check_fixed_point(d, devnull);
        hl_graph_free(d);
    } else if (err.msg[0] == 0) {
        die("decode failed without a message", NULL);
    }
    eg_engine_free(e);
    free(prog);
    return 0;
}
