/* fuzz_lr_program - libFuzzer harness over luminal_run's program loader (pg_program_load:
 * plan.json, llir.json and the files they name), compiled from program/'s own sources,
 * instrumented. The input is llir.json, a line "@@plan@@", then plan.json; "@HASH@" in
 * the plan is replaced by the llir's XXH3-128, so that mutations get past the hash check
 * and reach the loader's checks of the program itself. Both files are written into a
 * directory of this process (with kernels/k0000.cu .. k0031.cu present), loaded on the
 * CPU backend, and every input and output of a loaded program is queried. A bad program
 * must be refused with a message, never crash; the loader's past findings (issue 21: an
 * empty llir.json, duplicate names, names that are paths) are kept in seeds_program/. */
#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void write_file(const char *name, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
}

/* The directory goes when the fuzzer exits. */
static void cleanup(void)
{
    char path[512];
    for (int i = 0; i < 32; i++) {
        snprintf(path, sizeof path, "%s/kernels/k%04d.cu", dir, i);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/kernels", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/llir.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/plan.json", dir);
    unlink(path);
    rmdir(dir);
}

static void setup(void)
{
    if (dir[0]) return;
    atexit(cleanup);
    snprintf(dir, sizeof dir, "/tmp/fuzz_lr_program_%d", (int)getpid());
    char k[300];
    snprintf(k, sizeof k, "%s/kernels", dir);
    mkdir(dir, 0777);
    mkdir(k, 0777);
    for (int i = 0; i < 32; i++) {
        char name[64];
        snprintf(name, sizeof name, "kernels/k%04d.cu", i);
        write_file(name, "// a kernel\n", 12);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    static const char SEP[] = "\n@@plan@@\n";
    const char *s = (const char *)data;
    const char *sep = NULL;
    for (size_t i = 0; !sep && i + sizeof SEP - 1 <= size; i++)
        if (!memcmp(s + i, SEP, sizeof SEP - 1)) sep = s + i;
    size_t llen = sep ? (size_t)(sep - s) : 0;
    const char *plan = sep ? sep + sizeof SEP - 1 : s;
    size_t plen = size - (size_t)(plan - s);
    char hash[33];
    pg__hash_hex(s, llen, hash);
    /* the plan with every @HASH@ replaced (the hash is 32 bytes, the mark 6) */
    char *p = malloc(plen * 6 + 1);
    if (!p) return 0;
    size_t n = 0;
    for (size_t i = 0; i < plen;) {
        if (i + 6 <= plen && !memcmp(plan + i, "@HASH@", 6)) {
            memcpy(p + n, hash, 32);
            n += 32;
            i += 6;
        } else {
            p[n++] = plan[i++];
        }
    }
    write_file("llir.json", s, llen);
    write_file("plan.json", p, n);
    free(p);
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_CPU;
    lm_err e = {0};
    pg_program *prog = pg_program_load(dir, &o, &e);
    if (!prog) {
        if (!e.msg[0]) abort(); /* a refusal always says why */
        return 0;
    }
    for (uint32_t i = 0; i < pg_program_input_count(prog); i++) {
        pg_tensor_info info;
        lm_err ie = {0};
        if (pg_program_input_info(prog, i, &info, &ie) == 0 &&
            pg_program_input_find(prog, info.name) != i)
            abort(); /* names are unique: each finds itself */
    }
    for (uint32_t i = 0; i < pg_program_output_count(prog); i++) {
        pg_tensor_info info;
        lm_err ie = {0};
        if (pg_program_output_info(prog, i, &info, &ie) == 0 &&
            (pg_program_output_find(prog, info.name) != i || strchr(info.name, '/')))
            abort();
    }
    pg_program_free(prog);
    return 0;
}
