/* fuzz_program.c: libFuzzer harness over rule-program text.
 *
 * Each input is run as a program by a fresh engine: the s-expression parser, the type
 * checker and compiler of every command, and its execution, bounded by tiny limits (node
 * count, iterations, wall time) so no input can run away; half the inputs rebuild from the
 * index of e-class uses (eg_options.rebuild). Bad input must come back as an
 * error code with a located message; a crash, a sanitizer report, a leak or a hang is a
 * finding. Afterwards, whether the program failed or not, the engine is rebuilt, its
 * invariants are checked (a violation aborts) and it is serialized to JSON. Output goes
 * nowhere.
 *
 * include and input read files relative to the working directory (the ctest build
 * folder); the engine never writes files, so that is harmless. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egraph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    sink = fopen("/dev/null", "w");
    if (!sink) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    eg_options o;
    eg_options_default(&o);
    o.node_limit = 500;
    o.iter_limit = 30;
    o.time_limit_s = 0.5;
    o.out = sink;
    o.log = sink;
    /* inputs of odd length rebuild from the index of e-class uses whenever it applies
     * (the automatic choice would use it only for databases past the node limit here) */
    o.rebuild = (size & 1) ? EG_REBUILD_INDEXED : EG_REBUILD_AUTO;
    eg_engine *e = eg_engine_new(&o, NULL);
    if (!e) abort(); /* nothing fails allocations here */
    lm_err err;
    memset(&err, 0x55, sizeof err); /* the engine must write a terminated message */
    lm_err_clear(&err);             /* an empty record, the rest of it still garbage */
    int rc = eg_run_text(e, text, "fuzz", &err);
    if (rc != 0) {
        /* The contract: a positive code of the engine's and a NUL-terminated message. */
        if (rc <= 0 || rc >= LM_CODE_COUNT || err.code != rc ||
            memchr(err.msg, '\0', sizeof err.msg) == NULL || err.msg[0] == '\0')
            abort();
    }
    /* The engine must stay usable after a failed command: rebuilt, its invariants hold
     * (eg_check_invariants recomputes the key index from scratch), and it serializes. */
    lm_err err2 = {0};
    if (eg_rebuild(e, &err2) == 0) {
        if (eg_check_invariants(e, &err2) != 0) {
            fprintf(stderr, "invariant violated after the program: %s\n", err2.msg);
            abort();
        }
        eg_serialized s;
        if (eg_serialize(e, NULL, &s, &err2) == 0) {
            if (eg_serialized_write_json(e, &s, sink, NULL) != 0) abort();
            eg_serialized_free(&s);
        }
    }
    eg_engine_free(e);
    free(text);
    return 0;
}
