/* cg_dump.c - development tool: the plan of an example graph (every node its own kernel,
 * or fused as far as ll__lower_hlir allows with --fuse), printed with sources; with
 * --compile each kernel is compiled by NVRTC for sm_90. */
#include "codegen.h"
#include "cuda_rt.h"
#include "ll_lower.h"
#include "tcg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    bool compile = false, quiet = false;
    tcg_fuse fuse = TCG_KERNELS;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--compile")) compile = true;
        if (!strcmp(argv[i], "--quiet")) quiet = true;
        if (!strcmp(argv[i], "--fuse")) fuse = TCG_FUSED;
        if (!strcmp(argv[i], "--blas")) fuse = TCG_BLAS;
    }
    lm_err he = {0};
    hl_graph *g = hl_graph_load_json(argv[1], &he);
    if (!g) {
        fprintf(stderr, "%s\n", he.msg);
        return 1;
    }
    tcg_case c;
    char msg[2048];
    if (!tcg_case_init(&c, argv[1], g, fuse, 0, msg, sizeof msg)) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    cg_plan *p = c.plan;
    if (!quiet) cg_plan_fprint(p, true, stdout);
    int bad = 0;
    if (compile) {
        rt_nvrtc *nv = NULL;
        lm_err re = {0};
        if (rt_nvrtc_new(NULL, &nv, &re)) {
            fprintf(stderr, "%s\n", re.msg);
            return 1;
        }
        for (uint32_t i = 0; i < p->n_kernels; i++) {
            rt_cubin bin;
            lm_err_clear(&re);
            char name[32];
            snprintf(name, sizeof name, "k%u.cu", i);
            if (rt_nvrtc_compile(nv, p->kernels[i].source, name, 90, NULL, 0, &bin, &re)) {
                fprintf(stderr, "kernel %u (node %u): %s\n", i, p->kernels[i].llir_node, re.msg);
                bad++;
            } else
                rt_cubin_fini(&bin);
        }
        rt_nvrtc_free(nv);
        fprintf(stderr, "%u kernels, %d failed\n", p->n_kernels, bad);
    }
    tcg_case_free(&c);
    return bad != 0;
}
