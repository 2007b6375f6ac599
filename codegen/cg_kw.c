/* cg_kw.c - assembling one module: the prelude, the kernel's signature (buffers in the
 * order the body first used them, the output first; then the dims the body's expressions
 * use, as long long), the dims' local copies and the body.
 *
 *   extern "C" __global__ void __launch_bounds__(256) lm_kernel(
 *       float *__restrict__ b0, const unsigned short *__restrict__ b1, long long d0)
 *   {
 *     const long long D0 = d0; const unsigned U0 = (unsigned)d0;
 *     ...
 *   }
 *
 * U<i> is used only by expressions printed in 32 bits, which the bounds allow only when
 * the dim's range fits. */
#include "cg_int.h"

#include <stdio.h>

int cg__kw_init(cg_kw *kw, cg_ctx *c, uint32_t node)
{
    memset(kw, 0, sizeof *kw);
    kw->c = c;
    kw->llir_node = node;
    kw->used_dim = cg__alloc(c->d->n ? c->d->n : 1, sizeof *kw->used_dim);
    if (!kw->used_dim) return cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
    return 0;
}

void cg__kw_fini(cg_kw *kw)
{
    cg__free(kw->used_dim);
    kw->used_dim = NULL;
}

int cg__kw_buf(cg_kw *kw, uint32_t buf, hl_dtype dt, bool written)
{
    for (uint32_t i = 0; i < kw->n_params; i++)
        if (kw->params[i].kind == CG_P_BUFFER && kw->params[i].buf == buf) {
            kw->written[i] |= written;
            return (int)i;
        }
    if (kw->n_params >= CG_MAX_PARAMS) {
        cg__fail(kw->c->err, LM_EUNSUPPORTED, cg__at(kw->llir_node),
                 "the kernel would take more than %d parameters", CG_MAX_PARAMS);
        return -1;
    }
    uint32_t i = kw->n_params++;
    kw->params[i].kind = CG_P_BUFFER;
    kw->params[i].buf = buf;
    kw->params[i].dim = LM_NONE;
    kw->written[i] = written;
    kw->pdt[i] = dt;
    return (int)i;
}

int cg__kw_finish(cg_kw *kw, const char *decls, const char *body, uint32_t threads,
                  cg_kernel *k)
{
    return cg__kw_finish_ex(kw, NULL, decls, body, threads, k);
}

int cg__kw_finish_ex(cg_kw *kw, const char *pre, const char *decls, const char *body,
                     uint32_t threads, cg_kernel *k)
{
    cg_ctx *c = kw->c;
    uint32_t nbuf = kw->n_params;
    for (uint32_t d = 0; d < c->d->n; d++) {
        if (!kw->used_dim[d]) continue;
        if (kw->n_params >= CG_MAX_PARAMS)
            return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(kw->llir_node),
                            "the kernel would take more than %d parameters", CG_MAX_PARAMS);
        cg_param *p = &kw->params[kw->n_params++];
        p->kind = CG_P_DIM;
        p->buf = LM_NONE;
        p->dim = d;
    }
    cg_str b;
    cg__str_init(&b);
    cg__str_addf(&b, "// luminal-c codegen: LLIR node %%%u\n", kw->llir_node);
    cg__prelude(&b);
    if (pre) cg__str_add(&b, pre);
    cg__str_addf(&b, "extern \"C\" __global__ void __launch_bounds__(%u) lm_kernel(", threads);
    for (uint32_t i = 0; i < kw->n_params; i++) {
        const cg_param *p = &kw->params[i];
        if (i) cg__str_add(&b, ", ");
        if (p->kind == CG_P_BUFFER)
            cg__str_addf(&b, "%s%s *__restrict__ b%u", kw->written[i] ? "" : "const ",
                         cg__store_c(kw->pdt[i]), i);
        else
            cg__str_addf(&b, "long long d%u", p->dim);
    }
    cg__str_add(&b, ")\n{\n");
    for (uint32_t i = nbuf; i < kw->n_params; i++) {
        uint32_t d = kw->params[i].dim;
        cg__str_addf(&b, "  const long long D%u = d%u;\n  const unsigned U%u = (unsigned)d%u;\n", d, d,
                     d, d);
        cg__str_addf(&b, "  (void)D%u; (void)U%u;\n", d, d);
    }
    if (decls) cg__str_add(&b, decls);
    cg__str_add(&b, body);
    cg__str_add(&b, "}\n");
    char *src = cg__str_take(&b);
    if (!src) return cg__fail(c->err, LM_ENOMEM, cg__at(kw->llir_node), "out of memory");
    k->source = src;
    k->llir_node = kw->llir_node;
    k->n_params = kw->n_params;
    memcpy(k->params, kw->params, sizeof k->params);
    for (uint32_t i = 0; i < nbuf; i++)
        k->params[i].written = kw->written[i];
    k->block[0] = threads;
    k->block[1] = k->block[2] = 1;
    return 0;
}

hl_expr cg__grid_expr(hl_expr_pool *p, hl_expr x, int64_t cap)
{
    return hl_e_max(p, hl_e_num(p, 1), hl_e_min(p, x, hl_e_num(p, cap)));
}
