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
    if (e == HL_NONE || e >= hl_expr_count(src)) return HL_NONE;
    if (memo && memo[e] != HL_NONE) return memo[e];
    hl_expr_node n = hl_e_get(src, e);
    hl_expr r;
    switch (n.kind) {
    case HL_E_NUM:
        r = hl_e_num(dst, n.value);
        break;
    case HL_E_VAR:
        r = hl_e_var(dst, hl_var_name(src, n.var));
        break;
    case HL_E_Z:
        r = hl_e_z(dst);
        break;
    default: { /* operands are older ids: the recursion is bounded by the tree size */
        hl_expr a = ll__expr_copy(dst, src, n.a, memo);
        hl_expr b = ll__expr_copy(dst, src, n.b, memo);
        r = hl_e_bin(dst, n.kind, a, b);
        break;
    }
    }
    if (memo && r != HL_NONE) memo[e] = r;
    return r;
}

bool ll__numel(uint32_t ndim, const int64_t *dims, size_t *out)
{
    size_t n = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        if (dims[i] < 0) return false;
        if (dims[i] && n > SIZE_MAX / (size_t)dims[i]) return false;
        n *= (size_t)dims[i];
    }
    *out = n;
    return true;
}
