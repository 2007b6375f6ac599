/* pg_nogpu.c - the GPU entry points of a build without cuda_rt (the CUDA headers were
 * not found when it was configured): the sibling of pg_gpu.c and pg_compile.c with the
 * same functions, which say so. Programs run on the CPU backend (PG_BACKEND_AUTO picks
 * it, and pg_program_backend_note says why). */
#include "pg_int.h"

#include <string.h>

#define NO_GPU                                                                                     \
    "this build has no GPU runtime (cuda_rt was left out: the CUDA headers were "                  \
    "not found when it was configured)"

bool pg__gpu_available(void)
{
    return false;
}

int pg__gpu_open(pg_program *p, lm_err *err)
{
    return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name), "the GPU backend: " NO_GPU);
}

void pg__gpu_close(pg_program *p)
{
    (void)p;
}

int pg__gpu_run(pg_program *p, uint32_t variant, lm_err *err)
{
    (void)variant;
    return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name), NO_GPU);
}

int pg__gpu_time(pg_program *p, uint32_t variant, uint32_t warmup, uint32_t trials, uint32_t reps,
                 double timeout_ms, double *median, double *lo, double *hi, lm_err *err)
{
    (void)variant, (void)warmup, (void)trials, (void)reps, (void)timeout_ms;
    *median = *lo = *hi = 0;
    return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name), NO_GPU);
}

int pg__gpu_download(pg_program *p, uint32_t i, lm_err *err)
{
    (void)i;
    return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name), NO_GPU);
}

int pg__gpu_output_device(pg_program *p, uint32_t i, uint64_t *dptr, lm_err *err)
{
    (void)i;
    *dptr = 0;
    return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name), NO_GPU);
}

int pg__gpu_host_alloc(pg_program *p, size_t bytes, void **out, bool *pinned, lm_err *err)
{
    *pinned = false;
    *out = pg__alloc(bytes, 1);
    if (!*out) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory (%zu bytes)", bytes);
    return 0;
}

void pg__gpu_host_free(pg_program *p, void *host, bool pinned)
{
    (void)p, (void)pinned;
    pg__free(host);
}

int pg__gpu_diagnose(pg_program *p, double timeout_ms, pg_diagnosis *out, lm_err *err)
{
    (void)timeout_ms, (void)out;
    return pg__fail(err, LM_EUNSUPPORTED, pg__at(p->name), "diagnose: " NO_GPU);
}

int pg_compile_check(const struct cg_plan *plan, int arch, lm_err *err)
{
    (void)plan, (void)arch;
    return pg__fail(err, LM_EUNSUPPORTED, NULL, "compile check: " NO_GPU);
}
