/* reference.c - luminal_search --reference: the CPU reference runtime on random inputs.
 *
 * Inputs are made by fz_inputs (fuzz.h) as the fuzzer makes them, and filled by
 * hl_graph_fill_input, from PCG32 streams: input i uses stream i of
 * the seed, so adding an input never changes the others' values. An input with an "init"
 * is uniform in its range; one without is filled as hl_tensor_fill_random does: floats
 * uniform in [-1, 1) (then rounded to the input's dtype), int and i64 in [0, 4) (valid as
 * indexes into any dim of size 4 or more), bool 0 or 1. The report per output is its name, dtype,
 * shape, the sum and the largest magnitude of its elements (as f64, in element order) and the
 * XXH3-64 hash of its bytes in storage format, so two runs agree exactly when the outputs do.
 */
#include "fuzz.h"
#include "ls_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static json_t *number_or_string(double v)
{
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

/* Reports output i: a text line, or (with --json) an object appended to arr. */
static void report(const hl_graph *g, uint32_t i, const hl_tensor *t, const ls_opts *o, json_t *arr)
{
    const hl_node *out = hl_graph_node(g, hl_graph_output(g, i));
    double sum = 0, maxabs = 0;
    for (size_t k = 0; k < t->numel; k++) {
        double v = hl_tensor_get(t, k);
        sum += v;
        if (isnan(v) || fabs(v) > maxabs) maxabs = fabs(v); /* NaN sticks */
    }
    XXH64_hash_t h = XXH3_64bits(t->data, t->numel * hl_dtype_size(t->dtype));
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)h);
    if (o->json) {
        json_t *shape = json_array();
        for (uint32_t d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer(t->dims[d]));
        json_array_append_new(arr, json_pack("{s:s, s:s, s:o, s:o, s:o, s:s}", "name", out->name,
                                             "dtype", hl_dtype_name(t->dtype), "shape", shape,
                                             "sum", number_or_string(sum), "max_abs",
                                             number_or_string(maxabs), "xxh3", hash));
        return;
    }
    printf("output %s: %s [", out->name, hl_dtype_name(t->dtype));
    for (uint32_t d = 0; d < t->ndim; d++)
        printf("%s%lld", d ? ", " : "", (long long)t->dims[d]);
    printf("] sum %.9g max|x| %.9g xxh3 %s\n", sum, maxabs, hash);
}

/* With --json: one object {"graph", "seed", "dims": {name: value}, "outputs": [...]}. */
static void report_all(const hl_graph *g, const int64_t *vals, const hl_tensor *outs,
                       const ls_opts *o)
{
    uint32_t no = hl_graph_output_count(g);
    if (!o->json) {
        for (uint32_t i = 0; i < no; i++)
            report(g, i, &outs[i], o, NULL);
        return;
    }
    json_t *dims = json_object(), *arr = json_array();
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
        json_object_set_new(dims, hl_var_name(hl_graph_exprs_c(g), hl_graph_dim_at(g, i)->var),
                            json_integer(vals[i]));
    for (uint32_t i = 0; i < no; i++)
        report(g, i, &outs[i], o, arr);
    json_t *doc = json_pack("{s:s, s:I, s:o, s:o}", "graph", o->graph, "seed", (json_int_t)o->seed,
                            "dims", dims, "outputs", arr);
    char *s = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) : NULL;
    printf("%s\n", s ? s : "{}");
    free(s);
    json_decref(doc);
}

int ls_reference(const hl_graph *g, const ls_opts *o)
{
    uint32_t nd = hl_graph_dim_count(g), ni = hl_graph_input_count(g),
             no = hl_graph_output_count(g);
    int64_t *vals = calloc(nd ? nd : 1, sizeof *vals);
    hl_tensor *ins = calloc(ni ? ni : 1, sizeof *ins);
    hl_tensor *outs = calloc(no ? no : 1, sizeof *outs);
    int rc = 1;
    lm_err e;
    lm_err_clear(&e);
    if (!vals || !ins || !outs) {
        fprintf(stderr, "luminal_search: --reference: out of memory\n");
        goto done;
    }
    if (ls_dims(g, o, false, vals) != 0) goto done;
    /* refuse a run the machine cannot hold before allocating its inputs */
    hl_run_opts ro = {.mem_limit = o->mem_limit};
    if (hl_run_check_memory(g, vals, &ro, NULL, &e) != HL_OK) {
        fprintf(stderr, "luminal_search: --reference: %s\n", e.msg);
        goto done;
    }
    if (fz_inputs(g, vals, o->seed, ins, &e) != LM_OK) {
        fprintf(stderr, "luminal_search: --reference: %s\n", e.msg);
        goto done;
    }
    if (!o->quiet && isatty(2))
        fprintf(stderr, "luminal_search: running the reference runtime (%u nodes)...\n",
                hl_graph_node_count(g));
    if (hl_run(g, vals, ins, outs, &ro, &e) != HL_OK) {
        fprintf(stderr, "luminal_search: --reference: %s\n", e.msg);
        goto done;
    }
    report_all(g, vals, outs, o);
    for (uint32_t i = 0; i < no; i++)
        hl_tensor_fini(&outs[i]);
    rc = 0;
done:
    for (uint32_t i = 0; ins && i < ni; i++)
        hl_tensor_fini(&ins[i]);
    free(vals);
    free(ins);
    free(outs);
    return rc;
}
