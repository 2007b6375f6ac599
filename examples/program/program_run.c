/* program_run - load a compiled program, run it on seeded inputs, print output checksums.
 *
 *     program_run [--cpu] [--seed N] [--dim NAME=VALUE]... DIR
 *
 * DIR is a directory written by pg_program_save (luminal_search saves its winner there).
 * The program runs on the GPU where there is one (and on the CPU otherwise, or with
 * --cpu); the first line says which and why. Each input is filled from PCG32 (seeded.h);
 * each output is printed with its dtype, dims and checksums. This is the whole embedding
 * API: load, set dims, set inputs, run, read outputs, free (program.h). */
#include "program.h"
#include "seeded.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: program_run [--cpu] [--seed N] [--dim NAME=VALUE]... DIR\n");
    return 2;
}

static int fail(pg_program *p, const lm_err *err)
{
    fprintf(stderr, "program_run: %s\n", err->msg);
    pg_program_free(p);
    return 1;
}

int main(int argc, char **argv)
{
    pg_options opt;
    pg_options_default(&opt);
    uint64_t seed = 1;
    const char *dir = NULL;
    const char *dims[32];
    int ndims = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cpu")) {
            opt.backend = PG_BACKEND_CPU;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--dim") && i + 1 < argc && ndims < 32) {
            dims[ndims++] = argv[++i];
        } else if (argv[i][0] != '-' && !dir) {
            dir = argv[i];
        } else {
            return usage();
        }
    }
    if (!dir) return usage();

    lm_err err = {0};
    pg_program *p = pg_program_load(dir, &opt, &err);
    if (!p) return fail(NULL, &err);
    printf("program '%s': %s\n", pg_program_name(p), pg_program_backend_note(p));

    for (int i = 0; i < ndims; i++) {
        char name[64];
        const char *eq = strchr(dims[i], '=');
        if (!eq || eq == dims[i] || (size_t)(eq - dims[i]) >= sizeof name) return usage();
        memcpy(name, dims[i], (size_t)(eq - dims[i]));
        name[eq - dims[i]] = '\0';
        if (pg_program_set_dim(p, name, strtoll(eq + 1, NULL, 10), &err)) return fail(p, &err);
    }
    printf("dims:");
    for (uint32_t d = 0; d < pg_program_dim_count(p); d++) {
        int64_t v;
        pg_program_dim_info(p, d, NULL, NULL, &v, &err);
        printf(" %s=%lld", pg_program_dim_name(p, d), (long long)v);
    }
    printf("\n");

    for (uint32_t i = 0; i < pg_program_input_count(p); i++) {
        pg_tensor_info in;
        if (pg_program_input_info(p, i, &in, &err)) return fail(p, &err);
        void *data = malloc(in.bytes ? in.bytes : 1);
        if (!data) {
            fprintf(stderr, "program_run: out of memory\n");
            pg_program_free(p);
            return 1;
        }
        ex_fill(data, in.numel, in.dtype, seed, i);
        int rc = pg_program_set_input(p, i, data, in.bytes, &err);
        free(data);
        if (rc) return fail(p, &err);
        printf("input %s %s, %llu elements\n", in.name, in.dtype, (unsigned long long)in.numel);
    }

    if (pg_program_run(p, &err)) return fail(p, &err);

    for (uint32_t o = 0; o < pg_program_output_count(p); o++) {
        pg_tensor_info out;
        const void *data;
        size_t bytes;
        if (pg_program_output_info(p, o, &out, &err) ||
            pg_program_output(p, o, &data, &bytes, &err))
            return fail(p, &err);
        ex_print_output(stdout, out.name, out.dtype, out.ndim, out.dims, data, bytes);
    }
    pg_program_free(p);
    return 0;
}
