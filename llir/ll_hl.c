/* ll_hl.c - llir's calls into hlir that can fail, and copying expressions between pools.
 *
 * hlir reports through base's lm_err, as llir does; each adapter below calls one hlir
 * function and prefixes hlir's message with what llir was doing (`what`), keeping its
 * code and location. */
#include "ll_int.h"

#include <string.h>

/* Passes hlir's error on, prefixed. */
static int pass(lm_err *err, lm_err *he, const char *what)
{
    if (what) lm_err_prefix(he, "%s", what);
    lm_err_copy(err, he);
    return err ? err->code : he->code;
}

int ll__hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
               hl_tensor *outputs, const char *what, lm_err *err)
{
    lm_err he = {0};
    int st = hl_run(g, dim_values, inputs, outputs, NULL, &he);
    return st != 0 ? pass(err, &he, what) : 0;
}

int ll__hl_tensor_init(hl_tensor *t, hl_dtype dtype, uint32_t ndim, const int64_t *dims,
                       lm_err *err)
{
    lm_err he = {0};
    int st = hl_tensor_init(t, dtype, ndim, dims, &he);
    return st != 0 ? pass(err, &he, NULL) : 0;
}

int ll__hl_eval(const hl_expr_pool *p, hl_expr e, const hl_env *env, int64_t z, int64_t *out,
                const char *what, lm_err *err)
{
    lm_err he = {0};
    int st = hl_e_eval(p, e, env, z, out, &he);
    return st != 0 ? pass(err, &he, what) : 0;
}

int ll__hl_graph_status(const hl_graph *g, const char *what, lm_err *err)
{
    const lm_err *ge = hl_graph_error(g);
    if (ge->code == 0) return 0;
    lm_err he = *ge;
    return pass(err, &he, what);
}

hl_expr ll__expr_copy(hl_expr_pool *dst, const hl_expr_pool *src, hl_expr e, hl_expr *memo)
{
    return hl_expr_copy(dst, src, e, memo, 0);
}

bool ll__numel(uint32_t ndim, const int64_t *dims, size_t *out)
{
    return hl_numel_of(ndim, dims, out);
}
