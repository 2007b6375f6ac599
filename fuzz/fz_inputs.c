/* fz_inputs.c - a graph's seeded inputs at given dims (fuzz.h: fz_inputs), as the fuzzer
 * and luminal_search --reference make them. */
#include "fz_int.h"

int fz_inputs(const hl_graph *g, const int64_t *dims, uint64_t seed, hl_tensor *ins,
              lm_err *err)
{
    /* the dims by pool variable: the order hl_e_eval's environment is indexed in */
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t nvar = hl_var_count(p);
    int64_t *byvar = fz__zalloc(nvar, sizeof *byvar);
    bool *bound = fz__zalloc(nvar, sizeof *bound);
    if (!byvar || !bound) {
        fz__free(byvar);
        fz__free(bound);
        return fz__fail(err, LM_ENOMEM, NULL, "inputs: out of memory");
    }
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        if (d->var < nvar) byvar[d->var] = dims[i], bound[d->var] = true;
    }
    hl_env env = {byvar, bound, nvar};
    lm_err he = {0};
    for (uint32_t i = 0; i < hl_graph_input_count(g) && !he.code; i++) {
        const hl_node *in = hl_graph_node(g, hl_graph_input(g, i));
        int64_t shape[HL_MAX_DIMS];
        bool ok = true;
        for (uint32_t d = 0; ok && d < in->ndim; d++)
            ok = hl_e_eval(p, in->shape[d], &env, 0, &shape[d], &he) == 0;
        if (ok) ok = hl_tensor_init(&ins[i], in->dtype, in->ndim, shape, &he) == 0;
        if (ok) ok = hl_graph_fill_input(g, i, &ins[i], seed, &he) == 0;
        if (!ok) lm_err_prefix(&he, "input '%s'", in->name);
    }
    fz__free(byvar);
    fz__free(bound);
    lm_err_copy(err, &he);
    return he.code;
}
