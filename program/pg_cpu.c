/* pg_cpu.c - the CPU backend: the program's LLIR run by llir's executor (ll_run), with
 * the inputs' host copies as borrowed tensors and the outputs kept until the next run.
 * The same numbers the GPU program computes, within the executor's precision rules
 * (docs/llir.md); slower, and for machines without a GPU. */
#include "pg_int.h"

#include <string.h>

struct pg_cpu {
    hl_tensor *outs; /* the last run's outputs (owned) */
    bool have;
};

int pg__cpu_open(pg_program *p, lm_err *err)
{
    pg_cpu *c = pg__alloc(1, sizeof *c);
    if (c) c->outs = pg__alloc(p->plan.n_outputs, sizeof *c->outs);
    if (!c || !c->outs) {
        pg__free(c);
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory opening the CPU backend");
    }
    p->cpu = c;
    p->backend = PG_BACKEND_CPU;
    return 0;
}

static void drop_outputs(pg_program *p)
{
    pg_cpu *c = p->cpu;
    if (!c->have) return;
    for (uint32_t o = 0; o < p->plan.n_outputs; o++)
        hl_tensor_fini(&c->outs[o]);
    c->have = false;
}

void pg__cpu_close(pg_program *p)
{
    if (!p->cpu) return;
    drop_outputs(p);
    pg__free(p->cpu->outs);
    pg__free(p->cpu);
    p->cpu = NULL;
}

int pg__cpu_run(pg_program *p, lm_err *err)
{
    pg_cpu *c = p->cpu;
    uint32_t ni = p->plan.n_inputs, nd = p->plan.n_dims;
    hl_tensor *in = pg__alloc(ni, sizeof *in);
    int64_t *vals = pg__alloc(nd, sizeof *vals);
    if (!in || !vals) {
        pg__free(in);
        pg__free(vals);
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory running on the CPU");
    }
    for (uint32_t d = 0; d < nd; d++)
        vals[p->llir_dim[d]] = p->dim_val[d];
    int rc = 0;
    for (uint32_t i = 0; i < ni && !rc; i++) {
        pg_tensor_info info;
        if ((rc = pg__io_info(p, &p->inputs[i], &info, err))) break;
        in[i].dtype = p->inputs[i].dtype;
        in[i].ndim = info.ndim;
        memcpy(in[i].dims, info.dims, sizeof in[i].dims);
        in[i].numel = (size_t)info.numel;
        in[i].data = p->in[i].host; /* borrowed */
    }
    drop_outputs(p);
    if (!rc) {
        lm_err e = {0};
        if (ll_run(p->llir, vals, in, c->outs, p->cpu_mem_limit, &e)) {
            lm_err_copy(err, &e);
            pg__wrap(err, p->name, "running on the CPU");
            rc = err->code;
        } else {
            c->have = true;
        }
    }
    pg__free(in);
    pg__free(vals);
    return rc;
}

const void *pg__cpu_output(const pg_program *p, uint32_t i, size_t *bytes)
{
    const pg_cpu *c = p->cpu;
    if (!c || !c->have) {
        *bytes = 0;
        return NULL;
    }
    *bytes = c->outs[i].numel * hl_dtype_size(c->outs[i].dtype);
    return c->outs[i].data;
}
