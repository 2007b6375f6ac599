/* tcg.c - see tcg.h. */
#include "tcg.h"

#include "cg_int.h"
#include "cuda_rt.h"
#include "ll_lower.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void say(char *msg, size_t cap, const char *fmt, ...)
{
    if (!msg || !cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
}

/* ---- cases --------------------------------------------------------------------------- */

void tcg_case_free(tcg_case *c)
{
    if (!c) return;
    cg_plan_free(c->plan);
    ll_graph_free(c->lg);
    hl_graph_free(c->g);
    memset(c, 0, sizeof *c);
}

static bool fusible(hl_op op)
{
    switch (op) {
    case HL_OP_CONSTANT:
    case HL_OP_IOTA:
    case HL_OP_CAST:
    case HL_OP_EXP2:
    case HL_OP_LOG2:
    case HL_OP_SIN:
    case HL_OP_RECIP:
    case HL_OP_SQRT:
    case HL_OP_ADD:
    case HL_OP_MUL:
    case HL_OP_MOD:
    case HL_OP_LESS_THAN:
    case HL_OP_SUM_REDUCE:
    case HL_OP_MAX_REDUCE:
        return true;
    default:
        return false;
    }
}

/* A SumReduce over the last dim of a Mul read contiguously whose inputs are broadcast as
 * hl_matmul makes them (a: stride 0 along N, b: stride 0 along M). ll__lower_hlir checks
 * the rest and refuses what does not fit (the caller retries without). */
static bool matmul_shaped(const hl_graph *g, uint32_t id)
{
    const hl_node *s = hl_graph_node(g, id);
    if (s->op != HL_OP_SUM_REDUCE) return false;
    const hl_node *m = hl_graph_node(g, s->in[0].node);
    if (m->op != HL_OP_MUL || m->ndim < 3 || s->axis != m->ndim - 1) return false;
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    uint32_t r = m->ndim;
    int64_t v;
    return hl_e_is_num(p, m->in[0].view.strides[r - 2], &v) && v == 0 &&
           hl_e_is_num(p, m->in[1].view.strides[r - 3], &v) && v == 0;
}

static ll_graph *lower_fused(const hl_graph *g, bool blas, char *msg, size_t cap)
{
    uint32_t n = hl_graph_node_count(g);
    ll_lower_impl *impl = calloc(n, sizeof *impl);
    uint32_t *uses = calloc(n, sizeof *uses);
    bool *no_mm = calloc(n, sizeof *no_mm);
    ll_graph *lg = NULL;
    if (!impl || !uses || !no_mm) goto out;
    for (uint32_t id = 0; id < n; id++) {
        const hl_node *x = hl_graph_node(g, id);
        for (uint32_t i = 0; i < x->n_in; i++)
            uses[x->in[i].node]++;
    }
    for (int attempt = 0; attempt < 64; attempt++) {
        for (uint32_t id = 0; id < n; id++) {
            hl_op op = hl_graph_node(g, id)->op;
            impl[id] = fusible(op) ? LL_LOWER_INLINE : LL_LOWER_KERNEL;
        }
        /* matmuls: the SumReduce becomes the matmul, its Mul is absorbed */
        for (uint32_t id = 0; id < n; id++)
            if (!no_mm[id] && matmul_shaped(g, id) && uses[hl_graph_node(g, id)->in[0].node] == 1) {
                impl[id] = blas ? LL_LOWER_BLAS : LL_LOWER_MATMUL;
                impl[hl_graph_node(g, id)->in[0].node] = LL_LOWER_INLINE;
            }
        /* a fusible node read by anything but a fused reader is stored: a region root */
        for (uint32_t id = 0; id < n; id++) {
            const hl_node *x = hl_graph_node(g, id);
            for (uint32_t i = 0; i < x->n_in; i++) {
                uint32_t src = x->in[i].node;
                if (impl[src] != LL_LOWER_INLINE) continue;
                bool absorbed = (impl[id] == LL_LOWER_MATMUL || impl[id] == LL_LOWER_BLAS) && i == 0 &&
                                hl_graph_node(g, src)->op == HL_OP_MUL;
                bool fused_reader = impl[id] == LL_LOWER_INLINE || impl[id] == LL_LOWER_REGION;
                if (!absorbed && !fused_reader) impl[src] = LL_LOWER_REGION;
            }
        }
        /* a reduction is inlined only into a single reader */
        bool changed = true;
        while (changed) {
            changed = false;
            for (uint32_t id = 0; id < n; id++) {
                const hl_node *x = hl_graph_node(g, id);
                bool red = x->op == HL_OP_SUM_REDUCE || x->op == HL_OP_MAX_REDUCE;
                if (red && impl[id] == LL_LOWER_INLINE && uses[id] > 1) {
                    impl[id] = LL_LOWER_REGION;
                    changed = true;
                }
            }
        }
        ll_lower_plan plan = {impl, NULL};
        lm_err e = {0};
        lg = ll__lower_hlir(g, &plan, &e);
        if (lg) break;
        /* a matmul the lowering refused: lower it as a reduction instead */
        bool retried = false;
        for (uint32_t id = 0; id < n && !retried; id++)
            if ((impl[id] == LL_LOWER_MATMUL || impl[id] == LL_LOWER_BLAS) && !no_mm[id]) {
                /* the matmul the message names */
                char tag[48];
                snprintf(tag, sizeof tag, "hlir node %u (", id);
                if (strstr(e.msg, tag)) {
                    no_mm[id] = true;
                    retried = true;
                }
            }
        if (!retried) {
            say(msg, cap, "fused lowering: %s", e.msg);
            break;
        }
    }
out:
    free(impl);
    free(uses);
    free(no_mm);
    return lg;
}

bool tcg_case_init(tcg_case *c, const char *name, hl_graph *g, tcg_fuse fuse, int64_t max_dim,
                   char *msg, size_t cap)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->g = g;
    lm_err e = {0};
    if (fuse == TCG_KERNELS) {
        c->lg = ll_graph_from_hlir(g, &e);
        if (!c->lg) say(msg, cap, "%s: lowering: %s", name, e.msg);
    } else {
        c->lg = lower_fused(g, fuse == TCG_BLAS, msg, cap);
    }
    if (!c->lg) return false;
    c->plan = cg_plan_new(c->lg, NULL, &e);
    if (!c->plan) {
        say(msg, cap, "%s: codegen: %s", name, e.msg);
        return false;
    }
    uint32_t nd = hl_graph_dim_count(g);
    c->small = true;
    for (uint32_t i = 0; i < nd && i < 16; i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        int64_t v = d->profile;
        if (max_dim > 0 && v > max_dim) v = max_dim;
        if (v < d->lo) v = d->lo;
        c->dims[i] = v;
    }
    return true;
}

/* ---- NVRTC ----------------------------------------------------------------------------- */

int tcg_compile_plan(const cg_plan *p, char *msg, size_t cap)
{
    static rt_nvrtc *nv = NULL; /* loaded once per test process */
    lm_err re = {0};
    if (!nv && rt_nvrtc_new(NULL, &nv, &re) != 0) {
        say(msg, cap, "%s", re.msg);
        return -1;
    }
    int bad = 0;
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        const cg_kernel *k = &p->kernels[i];
        char name[48];
        snprintf(name, sizeof name, "node%u_k%u.cu", k->llir_node, i);
        rt_cubin bin;
        lm_err_clear(&re);
        if (rt_nvrtc_compile(nv, k->source, name, 90, NULL, 0, &bin, &re) != 0) {
            if (!bad)
                say(msg, cap, "kernel %u of LLIR node %%%u (template %s): %s", i, k->llir_node,
                    k->template_name ? k->template_name : "?", re.msg);
            bad++;
            continue;
        }
        rt_cubin_fini(&bin);
    }
    return bad;
}

/* ---- the emulator ------------------------------------------------------------------------ */

typedef struct plan_map {
    const cg_plan *plan;
    uint32_t *kidx; /* plan kernel -> emulator kernel */
} plan_map;

struct tcg_emu {
    char dir[256];
    char bin[300];
    uint32_t nplans;
    plan_map *maps;
    uint32_t nsrc;
    const char **src; /* borrowed from the plans */
};

void tcg_emu_free(tcg_emu *e)
{
    if (!e) return;
    for (uint32_t i = 0; i < e->nplans; i++)
        free(e->maps[i].kidx);
    free(e->maps);
    free(e->src);
    if (e->dir[0] && !getenv("TCG_KEEP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", e->dir);
    }
    free(e);
}

static int run_cmd(char *const argv[], const char *log, const char *env_extra)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    char **env = environ;
    char *envbuf[512];
    if (env_extra) {
        size_t n = 0;
        envbuf[n++] = (char *)env_extra;
        for (char **e = environ; *e && n < 510; e++)
            if (strncmp(*e, "LM_EMU_REVERSE=", 15) != 0) envbuf[n++] = *e;
        envbuf[n] = NULL;
        env = envbuf;
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void read_log(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
}

tcg_emu *tcg_emu_build(const cg_plan *const *plans, uint32_t n, char *msg, size_t cap)
{
#ifndef TCG_CXX
    say(msg, cap, "skip: no C++ compiler was found at configure time");
    return NULL;
#else
    tcg_emu *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(e->dir, sizeof e->dir, "%s/lm_cg_emu.XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(e->dir)) {
        say(msg, cap, "mkdtemp: %s", strerror(errno));
        e->dir[0] = '\0';
        tcg_emu_free(e);
        return NULL;
    }
    e->nplans = n;
    e->maps = calloc(n ? n : 1, sizeof *e->maps);
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += plans[i]->n_kernels;
    e->src = calloc(total ? total : 1, sizeof *e->src);
    for (uint32_t i = 0; i < n; i++) {
        e->maps[i].plan = plans[i];
        e->maps[i].kidx = calloc(plans[i]->n_kernels ? plans[i]->n_kernels : 1, sizeof(uint32_t));
        for (uint32_t k = 0; k < plans[i]->n_kernels; k++) {
            const char *s = plans[i]->kernels[k].source;
            uint32_t j = 0;
            while (j < e->nsrc && strcmp(e->src[j], s) != 0)
                j++;
            if (j == e->nsrc) e->src[e->nsrc++] = s;
            e->maps[i].kidx[k] = j;
        }
    }
    char path[400];
    snprintf(path, sizeof path, "%s/emu.cpp", e->dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        say(msg, cap, "cannot write %s", path);
        tcg_emu_free(e);
        return NULL;
    }
    fprintf(f, "#include \"%s/cg_emu.h\"\n", TCG_SOURCE_DIR);
    cg_str pre;
    cg__str_init(&pre);
    cg__prelude(&pre);
    char *pt = cg__str_take(&pre);
    fputs(pt ? pt : "", f);
    free(pt);
    for (uint32_t j = 0; j < e->nsrc; j++)
        fprintf(f, "namespace lmk%u {\n#define lm_kernel lm_kernel_%u\n%s#undef lm_kernel\n}\n", j, j,
                e->src[j]);
    fprintf(f, "static const lm_emu_kernel_fn lm_emu_kernels[] = {\n");
    for (uint32_t j = 0; j < e->nsrc; j++)
        fprintf(f, "  lm_emu::wrap(&lmk%u::lm_kernel_%u),\n", j, j);
    if (!e->nsrc) fprintf(f, "  lm_emu_kernel_fn(),\n");
    fprintf(f, "};\n#include \"%s/cg_emu_main.h\"\n", TCG_SOURCE_DIR);
    fprintf(f, "int main(int argc, char **argv) { return lm_emu::run(argc, argv, lm_emu_kernels, "
               "%u); }\n",
            e->nsrc);
    fclose(f);
    snprintf(e->bin, sizeof e->bin, "%s/emu", e->dir);
    char log[400];
    snprintf(log, sizeof log, "%s/build.log", e->dir);
    const char *san = getenv("TCG_NO_ASAN") ? NULL : "-fsanitize=address";
    for (int attempt = 0; attempt < 2; attempt++) {
        char *argv[16];
        int a = 0;
        argv[a++] = (char *)TCG_CXX;
        argv[a++] = "-std=c++17";
        argv[a++] = "-O1";
        argv[a++] = "-w";
        argv[a++] = "-ffp-contract=off";
        argv[a++] = "-fno-strict-aliasing";
        argv[a++] = "-pthread";
        if (san) argv[a++] = (char *)san;
        argv[a++] = path;
        argv[a++] = "-o";
        argv[a++] = e->bin;
        argv[a] = NULL;
        int rc = run_cmd(argv, log, NULL);
        if (rc == 0) return e;
        if (!san) break;
        san = NULL; /* no AddressSanitizer runtime: build without */
    }
    char txt[1500];
    read_log(log, txt, sizeof txt);
    say(msg, cap, "the emulator did not compile (%s):\n%s", path, txt);
    if (!getenv("TCG_KEEP")) e->dir[0] = e->dir[0]; /* keep for inspection below */
    tcg_emu_free(e);
    return NULL;
#endif
}

/* ---- running a plan ------------------------------------------------------------------------ */

static bool eval(const cg_plan *p, const int64_t *dims, hl_expr x, int64_t *out)
{
    int64_t vals[64] = {0};
    bool bound[64] = {false};
    uint32_t nv = hl_var_count(p->exprs);
    if (nv > 64) return false;
    for (uint32_t i = 0; i < p->n_dims; i++) {
        vals[p->dims[i].var] = dims[i];
        bound[p->dims[i].var] = true;
    }
    hl_env env = {vals, bound, nv};
    lm_err he = {0};
    return hl_e_eval(p->exprs, x, &env, 0, out, &he) == HL_OK;
}

/* The shape of LLIR node n at dims. */
static bool ll_shape(const ll_graph *g, const int64_t *dims, const ll_node *n, int64_t *out)
{
    const hl_expr_pool *p = ll_graph_exprs(g);
    int64_t vals[64] = {0};
    bool bound[64] = {false};
    if (hl_var_count(p) > 64) return false;
    for (uint32_t i = 0; i < ll_graph_dim_count(g); i++) {
        vals[ll_graph_dim_at(g, i)->var] = dims[i];
        bound[ll_graph_dim_at(g, i)->var] = true;
    }
    hl_env env = {vals, bound, hl_var_count(p)};
    for (uint32_t d = 0; d < n->ndim; d++) {
        lm_err he = {0};
        if (hl_e_eval(p, n->shape[d], &env, 0, &out[d], &he) != HL_OK) return false;
    }
    return true;
}

uint64_t tcg_case_bytes(const tcg_case *c)
{
    uint64_t total = 0;
    for (uint32_t b = 0; b < c->plan->n_buffers; b++) {
        int64_t ne;
        if (!eval(c->plan, c->dims, c->plan->buffers[b].numel, &ne) || ne < 0) return UINT64_MAX;
        total += (uint64_t)ne * hl_dtype_size(c->plan->buffers[b].dtype);
    }
    return total;
}

static void w64(FILE *f, uint64_t v)
{
    fwrite(&v, 8, 1, f);
}

void tcg_inputs(const hl_graph *g, const int64_t *dims, uint64_t seed, hl_tensor *in)
{
    const hl_expr_pool *p = hl_graph_exprs_c(g);
    int64_t vals[64] = {0};
    bool bound[64] = {false};
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        vals[hl_graph_dim_at(g, i)->var] = dims[i];
        bound[hl_graph_dim_at(g, i)->var] = true;
    }
    hl_env env = {vals, bound, hl_var_count(p)};
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        const hl_node *n = hl_graph_node(g, hl_graph_input(g, i));
        int64_t shape[HL_MAX_DIMS];
        for (uint32_t d = 0; d < n->ndim; d++) {
            lm_err e = {0};
            hl_e_eval(p, n->shape[d], &env, 0, &shape[d], &e);
        }
        lm_err e = {0};
        hl_tensor_init(&in[i], n->dtype, n->ndim, shape, &e);
        hl_tensor_fill_random(&in[i], seed, i);
    }
}

static bool write_job(const char *path, const tcg_case *c, const plan_map *m, const hl_tensor *in,
                      uint64_t *sizes, char *msg, size_t cap)
{
    const cg_plan *p = c->plan;
    FILE *f = fopen(path, "wb");
    if (!f) {
        say(msg, cap, "cannot write %s", path);
        return false;
    }
    fwrite("LMEMUJ01", 1, 8, f);
    w64(f, p->n_buffers);
    for (uint32_t b = 0; b < p->n_buffers; b++) {
        const cg_buffer *x = &p->buffers[b];
        int64_t ne;
        if (!eval(p, c->dims, x->numel, &ne) || ne < 0) {
            fclose(f);
            say(msg, cap, "%s: buffer %u: numel does not evaluate", c->name, b);
            return false;
        }
        uint64_t bytes = (uint64_t)ne * hl_dtype_size(x->dtype);
        if (x->kind == CG_BUF_WORKSPACE && x->dtype == HL_BOOL) bytes = 1 << 16; /* blas: unused */
        sizes[b] = bytes;
        w64(f, bytes);
        if (x->kind == CG_BUF_INPUT) {
            const hl_tensor *t = &in[x->index];
            if (t->numel * hl_dtype_size(t->dtype) != bytes) {
                fclose(f);
                say(msg, cap, "%s: input %u holds %zu elements, the plan says %" PRId64, c->name,
                    x->index, t->numel, ne);
                return false;
            }
            fwrite(t->data, 1, bytes, f);
        } else {
            /* never-written memory reads as NaN / -1 */
            for (uint64_t i = 0; i < bytes; i++)
                fputc(0xFF, f);
        }
    }
    w64(f, p->n_steps);
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const cg_step *st = &p->steps[s];
        if (st->kind == CG_STEP_KERNEL) {
            const cg_kernel *k = &p->kernels[st->index];
            w64(f, 0);
            w64(f, m->kidx[st->index]);
            for (int i = 0; i < 3; i++) {
                int64_t gv;
                if (!eval(p, c->dims, k->grid[i], &gv)) {
                    fclose(f);
                    say(msg, cap, "%s: kernel %u: grid does not evaluate", c->name, st->index);
                    return false;
                }
                w64(f, (uint64_t)gv);
            }
            for (int i = 0; i < 3; i++)
                w64(f, k->block[i]);
            w64(f, k->n_params);
            for (uint32_t i = 0; i < k->n_params; i++) {
                if (k->params[i].kind == CG_P_BUFFER) {
                    w64(f, 0);
                    w64(f, k->params[i].buf);
                } else {
                    w64(f, 1);
                    w64(f, (uint64_t)c->dims[k->params[i].dim]);
                }
            }
        } else {
            const cg_blas *bl = &p->blas[st->index];
            const ll_matmul *mm = &bl->mm;
            w64(f, 1);
            hl_expr ex[8] = {mm->m, mm->n, mm->k, mm->batch, mm->lda, mm->ldb, mm->stride_a, mm->stride_b};
            for (int i = 0; i < 8; i++) {
                int64_t v;
                if (!eval(p, c->dims, ex[i], &v)) {
                    fclose(f);
                    say(msg, cap, "%s: blas %u: a size does not evaluate", c->name, st->index);
                    return false;
                }
                w64(f, (uint64_t)v);
            }
            w64(f, mm->order_a);
            w64(f, mm->order_b);
            uint64_t bits;
            memcpy(&bits, &mm->alpha, 8);
            w64(f, bits);
            memcpy(&bits, &mm->beta, 8);
            w64(f, bits);
            w64(f, mm->epilogue);
            w64(f, mm->type_a);
            w64(f, mm->type_b);
            w64(f, mm->type_c);
            w64(f, mm->type_d);
            w64(f, mm->type_bias);
            uint32_t bb[5] = {bl->a, bl->b, bl->c, bl->d, bl->bias};
            for (int i = 0; i < 5; i++)
                w64(f, bb[i] == LM_NONE ? (uint64_t)-1 : bb[i]);
        }
    }
    bool ok = fclose(f) == 0;
    if (!ok) say(msg, cap, "writing %s failed", path);
    return ok;
}

static unsigned char *read_result(const char *path, const uint64_t *sizes, uint32_t nb, size_t *total)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint64_t n = 0;
    size_t all = 0;
    for (uint32_t i = 0; i < nb; i++)
        all += sizes[i];
    unsigned char *buf = malloc(all ? all : 1);
    bool ok = buf && fread(&n, 8, 1, f) == 1 && n == nb;
    size_t off = 0;
    for (uint32_t i = 0; ok && i < nb; i++) {
        uint64_t sz;
        ok = fread(&sz, 8, 1, f) == 1 && sz == sizes[i] && (sz == 0 || fread(buf + off, 1, sz, f) == sz);
        off += sz;
    }
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    *total = all;
    return buf;
}

bool tcg_emu_run(tcg_emu *e, const tcg_case *c, const hl_tensor *inputs, hl_tensor *outputs,
                 char *msg, size_t cap)
{
    const cg_plan *p = c->plan;
    const plan_map *m = NULL;
    for (uint32_t i = 0; i < e->nplans; i++)
        if (e->maps[i].plan == p) m = &e->maps[i];
    if (!m) {
        say(msg, cap, "%s: the plan is not in the emulator", c->name);
        return false;
    }
    uint64_t *sizes = calloc(p->n_buffers ? p->n_buffers : 1, sizeof *sizes);
    char job[400], res[2][400], log[400];
    snprintf(job, sizeof job, "%s/job", e->dir);
    snprintf(log, sizeof log, "%s/run.log", e->dir);
    bool ok = write_job(job, c, m, inputs, sizes, msg, cap);
    unsigned char *out[2] = {NULL, NULL};
    size_t tot[2] = {0, 0};
    for (int r = 0; ok && r < 2; r++) {
        snprintf(res[r], sizeof res[r], "%s/result%d", e->dir, r);
        char *argv[] = {e->bin, job, res[r], NULL};
        int rc = run_cmd(argv, log, r ? "LM_EMU_REVERSE=1" : "LM_EMU_REVERSE=0");
        if (rc != 0) {
            char txt[1200];
            read_log(log, txt, sizeof txt);
            say(msg, cap, "%s: the emulator failed (status %d, %s thread order):\n%s", c->name, rc,
                r ? "reverse" : "forward", txt);
            ok = false;
            break;
        }
        out[r] = read_result(res[r], sizes, p->n_buffers, &tot[r]);
        if (!out[r]) {
            say(msg, cap, "%s: unreadable emulator result", c->name);
            ok = false;
        }
    }
    if (ok && memcmp(out[0], out[1], tot[0]) != 0) {
        size_t off = 0, b = 0;
        while (b < p->n_buffers && off + sizes[b] <= tot[0] &&
               memcmp(out[0] + off, out[1] + off, sizes[b]) == 0)
            off += sizes[b++];
        say(msg, cap, "%s: buffer %zu differs between the two thread orders (a race)", c->name, b);
        ok = false;
    }
    if (ok) {
        for (uint32_t o = 0; o < p->n_outputs; o++) {
            uint32_t b = p->output_buf[o];
            size_t off = 0;
            for (uint32_t i = 0; i < b; i++)
                off += sizes[i];
            const ll_node *on = ll_graph_node(c->lg, ll_graph_output(c->lg, o));
            int64_t shape[HL_MAX_DIMS];
            if (!ll_shape(c->lg, c->dims, on, shape)) {
                say(msg, cap, "%s: output %u: its shape does not evaluate", c->name, o);
                ok = false;
                break;
            }
            lm_err he = {0};
            hl_tensor_init(&outputs[o], on->dtype, on->ndim, shape, &he);
            size_t bytes = outputs[o].numel * hl_dtype_size(on->dtype);
            if (bytes != sizes[b]) {
                say(msg, cap, "%s: output %u has %zu bytes, its buffer %" PRIu64, c->name, o, bytes,
                    sizes[b]);
                ok = false;
                break;
            }
            memcpy(outputs[o].data, out[0] + off, bytes);
        }
    }
    free(out[0]);
    free(out[1]);
    free(sizes);
    return ok;
}

/* ---- checking ----------------------------------------------------------------------------- */

static bool same_bits(const hl_tensor *a, const hl_tensor *b, size_t *at)
{
    size_t es = hl_dtype_size(a->dtype);
    for (size_t i = 0; i < a->numel; i++) {
        if (memcmp((const char *)a->data + i * es, (const char *)b->data + i * es, es) == 0)
            continue;
        if (hl_dtype_is_float(a->dtype)) {
            double x = hl_tensor_get(a, i), y = hl_tensor_get(b, i);
            if (isnan(x) && isnan(y)) continue;
            if (x == y) continue; /* +0 and -0 */
        }
        *at = i;
        return false;
    }
    return true;
}

/* Whether the plan adds floats in an order other than the reference's (row reductions
 * combine partial sums across threads); everything else reproduces llir's executor bit for
 * bit. */
static bool reorders(const cg_plan *p)
{
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        const char *t = p->kernels[i].template_name;
        if (t && strncmp(t, "row", 3) == 0) return true;
    }
    return false;
}

bool tcg_check_case(tcg_emu *e, const tcg_case *c, uint64_t seed, bool exact_vs_ll, char *msg,
                    size_t cap)
{
    const hl_graph *g = c->g;
    uint32_t ni = hl_graph_input_count(g), no = hl_graph_output_count(g);
    hl_tensor in[16], got[16], ref[16], llr[16];
    memset(got, 0, sizeof got);
    memset(ref, 0, sizeof ref);
    memset(llr, 0, sizeof llr);
    if (ni > 16 || no > 16) {
        say(msg, cap, "%s: too many inputs or outputs for the test", c->name);
        return false;
    }
    tcg_inputs(g, c->dims, seed, in);
    bool ok = tcg_emu_run(e, c, in, got, msg, cap);
    lm_err he = {0};
    if (ok && hl_run(g, c->dims, in, ref, NULL, &he) != HL_OK) {
        say(msg, cap, "%s: reference: %s", c->name, he.msg);
        ok = false;
    }
    lm_err le = {0};
    if (ok && ll_run(c->lg, c->dims, in, llr, 0, &le) != 0) {
        say(msg, cap, "%s: llir executor: %s", c->name, le.msg);
        ok = false;
    }
    /* 1. what the LLIR says the GPU computes: llir's executor, bit for bit unless the
       plan reorders a sum (then within the reference's tolerances) */
    bool exact = true;
    bool bitwise = (exact_vs_ll || !reorders(c->plan));
    for (uint32_t o = 0; ok && o < no; o++) {
        size_t at;
        if (!same_bits(&got[o], &llr[o], &at)) {
            exact = false;
            if (bitwise) {
                say(msg, cap, "%s: output %u element %zu: emulated %.9g, llir's executor %.9g",
                    c->name, o, at, hl_tensor_get(&got[o], at), hl_tensor_get(&llr[o], at));
                ok = false;
            }
        }
    }
    if (ok && !exact) {
        lm_err_clear(&le);
        if (ll_compare_outputs(g, c->dims, got, llr, NULL, &le) != 0) {
            say(msg, cap, "%s: against llir's executor: %s", c->name, le.msg);
            ok = false;
        }
    }
    /* 2. the reference runtime, with the tolerances of genome fuzzing; a difference that
       llir's executor shares bit for bit is the LLIR's, not the kernels' (reported) */
    if (ok) {
        lm_err_clear(&le);
        if (ll_compare_outputs(g, c->dims, got, ref, NULL, &le) != 0) {
            if (exact)
                fprintf(stderr, "  note: %s: llir's executor and the kernels agree bit for bit, "
                                "but both differ from the reference: %s\n",
                        c->name, le.msg);
            else {
                say(msg, cap, "%s: against the reference runtime: %s", c->name, le.msg);
                ok = false;
            }
        }
    }
    for (uint32_t i = 0; i < ni; i++)
        hl_tensor_fini(&in[i]);
    for (uint32_t o = 0; o < no; o++) {
        hl_tensor_fini(&got[o]);
        hl_tensor_fini(&ref[o]);
        hl_tensor_fini(&llr[o]);
    }
    return ok;
}
