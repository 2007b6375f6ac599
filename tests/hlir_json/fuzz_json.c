/* fuzz_json.c - libFuzzer harness of the JSON graph reader.
 *
 * Any input must either be rejected with a message or give a graph that
 *   - passes hl_graph_check,
 *   - writes to canonical text that reads back and writes the same bytes, and
 *   - when small (every node under 2^16 elements with dims at their min), runs on the
 *     reference runtime (zero inputs) to success or a clean error.
 * Anything else aborts, and ASan/UBSan catch memory and undefined-behaviour bugs.
 */
#include "hlir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int64_t eval_min(const hl_graph *g, hl_expr x, bool *ok)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvar = hl_var_count(p);
    int64_t vals[64] = {0};
    bool bound[64] = {false};
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        if (d->var < 64) {
            vals[d->var] = d->lo;
            bound[d->var] = true;
        }
    }
    hl_env env = {vals, bound, nvar < 64 ? nvar : 64};
    int64_t out = 0;
    lm_err e;
    lm_err_clear(&e);
    if (hl_e_eval(p, x, &env, 0, &out, &e) != HL_OK) *ok = false;
    return out;
}

static void try_run(const hl_graph *g)
{
    bool ok = true;
    for (uint32_t i = 0; ok && i < hl_graph_node_count(g); i++) {
        const hl_node *n = hl_graph_node(g, i);
        int64_t k = 1;
        for (uint32_t d = 0; ok && d < n->ndim; d++) {
            int64_t v = eval_min(g, n->shape[d], &ok);
            if (v < 0 || v > (1 << 16))
                ok = false;
            else
                k *= v;
            if (k > (1 << 16)) ok = false;
        }
    }
    if (!ok) return;
    uint32_t nd = hl_graph_dim_count(g), ni = hl_graph_input_count(g),
             no = hl_graph_output_count(g);
    int64_t *dims = calloc(nd + 1, sizeof *dims);
    hl_tensor *in = calloc(ni + 1, sizeof *in), *out = calloc(no + 1, sizeof *out);
    for (uint32_t i = 0; i < nd; i++)
        dims[i] = hl_graph_dim_at(g, i)->lo;
    lm_err e;
    lm_err_clear(&e);
    for (uint32_t i = 0; ok && i < ni; i++) {
        const hl_node *n = hl_graph_node(g, hl_graph_input(g, i));
        int64_t d[HL_MAX_DIMS];
        for (uint32_t k = 0; k < n->ndim; k++)
            d[k] = eval_min(g, n->shape[k], &ok);
        if (ok && hl_tensor_init(&in[i], n->dtype, n->ndim, d, &e) != HL_OK) ok = false;
    }
    if (ok && hl_run(g, dims, in, out, NULL, &e) == HL_OK)
        for (uint32_t i = 0; i < no; i++)
            hl_tensor_fini(&out[i]);
    else if (ok && !e.msg[0])
        abort(); /* a failed run must say why */
    for (uint32_t i = 0; i < ni; i++)
        hl_tensor_fini(&in[i]);
    free(dims);
    free(in);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lm_err e;
    lm_err_clear(&e);
    hl_graph *g = hl_graph_read_json((const char *)data, size, "fuzz.json", &e);
    if (!g) {
        if (e.code == HL_OK || !e.msg[0]) abort(); /* a rejection must say why */
        return 0;
    }
    if (hl_graph_check(g, &e) != HL_OK) abort();
    char *s1 = hl_graph_write_json(g, &e);
    if (!s1) abort();
    hl_graph *g2 = hl_graph_read_json(s1, strlen(s1), "canonical.json", &e);
    if (!g2) {
        fprintf(stderr, "canonical text rejected: %s\n%s\n", e.msg, s1);
        abort();
    }
    char *s2 = hl_graph_write_json(g2, &e);
    if (!s2 || strcmp(s1, s2) != 0) abort();
    try_run(g);
    free(s1);
    free(s2);
    hl_graph_free(g2);
    hl_graph_free(g);
    return 0;
}
