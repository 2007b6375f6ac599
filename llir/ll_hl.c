/* ll_hl.c - the one place where llir meets hlir's error record.
 *
 * hlir reports through its own record today and moves to base's lm_err; each adapter
 * below calls one hlir function, checks its code with `!= 0`, and raises the matching
 * lm_code with hlir's message through llir's door. When hlir speaks lm_err, only this
 * file changes. Also: copying expressions between pools. */
#include "ll_priv.h"

#include <string.h>

/* hlir's status as base's code. hlir's codes name the same failures as LM_*; after the
 * conversion they are LM_* values and this is the identity. */
static int lm_code_of(int hl_code)
{
    switch (hl_code) {
    case HL_OK:
        return LM_OK;
    case HL_ERR_NOMEM:
        return LM_ENOMEM;
    case HL_ERR_ARG:
        return LM_EARG;
    case HL_ERR_SHAPE:
        return LM_ESHAPE;
    case HL_ERR_DTYPE:
        return LM_EDTYPE;
    case HL_ERR_DIM:
        return LM_EDIM;
    case HL_ERR_EVAL:
        return LM_EEVAL;
    case HL_ERR_RUNTIME:
        return LM_ERUNTIME;
    case HL_ERR_PARSE:
        return LM_EPARSE;
    case HL_ERR_IO:
        return LM_EIO;
    case HL_ERR_VIEW:
        return LM_EVIEW;
    default:
        return LM_ERUNTIME;
    }
}

static int raise_hl(lm_err *err, int code, const char *what, const char *msg)
{
    if (what) return ll__fail(err, lm_code_of(code), NULL, "%s: %s", what, msg);
    return ll__fail(err, lm_code_of(code), NULL, "%s", msg);
}

int ll__hl_run(const hl_graph *g, const int64_t *dim_values, const hl_tensor *inputs,
               hl_tensor *outputs, const char *what, lm_err *err)
{
    hl_error he;
    hl_error_clear(&he);
    int st = hl_run(g, dim_values, inputs, outputs, &he);
    return st != 0 ? raise_hl(err, st, what, he.msg) : 0;
}

int ll__hl_tensor_init(hl_tensor *t, hl_dtype dtype, uint32_t ndim, const int64_t *dims,
                       lm_err *err)
{
    hl_error he;
    hl_error_clear(&he);
    int st = hl_tensor_init(t, dtype, ndim, dims, &he);
    return st != 0 ? raise_hl(err, st, NULL, he.msg) : 0;
}

int ll__hl_eval(const hl_expr_pool *p, hl_expr e, const hl_env *env, int64_t z, int64_t *out,
                const char *what, lm_err *err)
{
    hl_error he;
    hl_error_clear(&he);
    int st = hl_e_eval(p, e, env, z, out, &he);
    return st != 0 ? raise_hl(err, st, what, he.msg) : 0;
}

int ll__hl_graph_status(const hl_graph *g, const char *what, lm_err *err)
{
    const hl_error *he = hl_graph_error(g);
    return he->code != 0 ? raise_hl(err, he->code, what, he->msg) : 0;
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
