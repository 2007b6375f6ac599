/* pg_int.h - what program/'s files share, and nobody else (tests: INTERNALS program).
 *
 *   pg_door.c     the doors: errors (pg__fail), memory (pg__alloc)
 *   pg_plan.c     the program's own copy of a plan (cg_plan), its checker, expression
 *                 evaluation at dim values, the IO table, in-place analysis
 *   pg_json.c     plan.json written and read
 *   pg_io.c       the IO table from the LLIR, and the checks that plan, LLIR and IO agree
 *   pg_program.c  the public API: making, loading, dims and buckets, inputs, outputs,
 *                 running (the replay skip), counters
 *   pg_cpu.c      the CPU backend (ll_run)
 *   pg_gpu.c      the GPU backend (cuda_rt): open, graph, updates, launch, faults
 *   pg_gpu_layout.c  its layout of a variant: arena, workspaces, input buffers, deps
 *   pg_compile.c  NVRTC: compiling a plan's kernels (several threads), pg_compile_check
 *   pg_nogpu.c    the GPU entry points of a build without cuda_rt (LM_EUNSUPPORTED)
 *
 * Ownership: a pg_program owns its plan (pool, sources, arrays), its LLIR graph, its IO
 * table, the host copies of inputs and outputs, and its backend's state.
 */
#ifndef LUMINAL_PG_INT_H
#define LUMINAL_PG_INT_H

#include "codegen.h"
#include "hlir.h"
#include "llir.h"
#include "program.h"

#include <stdarg.h>

#define PG_KERNEL_FN "lm_kernel" /* every module's one kernel (codegen.h) */

/* ---- doors (pg_door.c) ---- */

/* The module's error door, with one location argument (loc may be NULL): a program's
 * location is its name (pg__at), which begins the message as "program '<name>': " and is
 * recorded as the error's node; a file, line or field in loc are recorded as usual.
 * Through base's lm_err_setv; returns the code held (the first error wins). */
int pg__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The location of the program named name (NULL: none), for pg__fail; valid in the
 * enclosing block. */
#define pg__at(name) (&(lm_loc){.node = (name), .node_id = LM_NONE})
/* Prefixes an error raised by another module with "program '<name>': <what>: ". */
void pg__wrap(lm_err *err, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The allocation door (over base's, base.h "Memory"; tests fail its n-th allocation with
 * lm_mem_fail_after): n * size bytes, overflow-checked, zeroed; NULL on failure. */
void *pg__alloc(size_t n, size_t size);
void pg__free(void *p);
char *pg__strdup(const char *s);

/* ---- inputs and outputs (pg_io.c) ---- */

/* The IO table from the LLIR's Input and Output nodes (pg_program_new). */
int pg__io_from_llir(pg_program *p, lm_err *err);
/* A loaded program's LLIR is its plan's program: the same inputs and outputs in the same
 * order, names, dtypes and shapes; every LLIR node the plan names exists. */
int pg__check_llir_io(pg_program *p, lm_err *err);
/* Names valid and unique, at least one output; the LLIR's dims are the plan's (fills
 * p->llir_dim); the IO table agrees with the buffers it names. */
int pg__check_consistency(pg_program *p, lm_err *err);

/* ---- plans (pg_plan.c) ---- */

/* Copies src into dst (zeroed first), every expression into a new pool, every array and
 * source owned by dst; checks src first (pg__plan_check). 0, or LM_EVERIFY / LM_ENOMEM. */
int pg__plan_copy(cg_plan *dst, const cg_plan *src, const char *name, lm_err *err);
/* Frees what a plan made by pg__plan_copy or the plan reader owns, and zeroes it. */
void pg__plan_fini(cg_plan *p);
/* Checks every index, kind, range and expression id of the plan: LM_EVERIFY naming the
 * offending part. own: the program's own form, variable i of the pool is dim i (else any
 * one-to-one numbering, as a caller's plan may have). */
int pg__plan_check(const cg_plan *p, bool own, const char *name, lm_err *err);

/* Evaluates e of plan p with the dims at vals[0 .. p->n_dims). */
int pg__eval(const cg_plan *p, hl_expr e, const int64_t *vals, int64_t *out, const char *name,
             const char *what, lm_err *err);
/* Bytes of buffer b at vals (numel times the element size, overflow-checked). */
int pg__buffer_bytes(const cg_plan *p, uint32_t b, const int64_t *vals, uint64_t *out,
                     const char *name, lm_err *err);

/* An input or output as a user sees it: name, dtype, shape (in the plan's pool). */
typedef struct pg_io {
    char *name; /* owned */
    hl_dtype dtype;
    uint32_t ndim;
    hl_expr shape[HL_MAX_DIMS];
    uint32_t buf; /* the plan's buffer */
} pg_io;

/* Buckets of one dim. */
typedef struct pg_dim {
    uint32_t n;
    pg_bucket b[PG_MAX_BUCKETS];
} pg_dim;

/* What the host keeps of one input. */
typedef struct pg_in_state {
    void *host;                /* the last bytes set (pinned staging on the GPU) */
    size_t cap;                /* bytes allocated */
    bool pinned;               /* host came from cuda_rt's pinned allocator */
    size_t bytes;              /* bytes of the last set */
    bool set;                  /* set at least once */
    bool dirty;                /* changed since it was last uploaded / run */
    uint64_t hash_lo, hash_hi; /* XXH3-128 of host[0 .. bytes) */
    bool device;               /* the caller's device memory */
    uint64_t dptr;
} pg_in_state;

/* What the host keeps of one output. */
typedef struct pg_out_state {
    void *host; /* owned (pinned on the GPU) */
    size_t cap;
    bool pinned;
    size_t bytes; /* of the last run */
    bool valid;   /* host holds the last run's bytes */
} pg_out_state;

typedef struct pg_gpu pg_gpu; /* pg_gpu.c */
typedef struct pg_cpu pg_cpu; /* pg_cpu.c */

struct pg_program {
    char *name;     /* for messages */
    char *title;    /* the name saved in plan.json */
    cg_plan plan;   /* owned */
    ll_graph *llir; /* owned */
    int arch;
    char *egraph_fp, *genome_fp;
    pg_io *inputs, *outputs;
    uint32_t *llir_dim; /* llir dim index of plan dim i */
    pg_dim *dims;       /* buckets per plan dim */
    uint32_t n_variants;
    int64_t *dim_val;   /* current values */
    int64_t *last_dims; /* the values of the last run */
    uint32_t *slot;     /* in-place: buffer -> the buffer whose memory it uses */
    pg_in_state *in;
    pg_out_state *out;
    /* options */
    pg_backend want;
    struct rt_mock *mock;
    struct rt_options *rt_opt; /* owned copy, or NULL */
    char *rt_lib_dir;          /* owned copy of rt_opt->lib_dir */
    uint32_t compile_threads;
    bool defer_gpu, stepwise, replay_skip, inplace;
    uint64_t cpu_mem_limit;
    /* state */
    pg_backend backend;
    char note[320];
    pg_gpu *gpu;
    pg_cpu *cpu;
    bool ran;            /* a run succeeded */
    bool inputs_changed; /* since the last run */
    pg_counters count;
};

/* The variant (bucket combination) of the current dims: its index, or LM_NONE with
 * LM_EDIM. Buckets are numbered with dim 0 the slowest. */
uint32_t pg__variant_of(const pg_program *p, const int64_t *vals, lm_err *err);
/* The largest value of dim d in variant v. */
int64_t pg__variant_hi(const pg_program *p, uint32_t v, uint32_t d);

/* In-place analysis: fills p->slot (every buffer its own slot unless a kernel may write
 * it over its input; docs/codegen.md states when). */
int pg__plan_inplace(pg_program *p, lm_err *err);

/* ---- plan.json (pg_json.c) ---- */

/* Writes plan.json's text (NUL-terminated, caller frees with free()); kernel sources are
 * named by files[k] ("kernels/k0003.cu"). NULL with err set. */
char *pg__plan_write(const pg_program *p, char *const *files, const char *llir_hash, lm_err *err);
/* Reads plan.json from dir into a zeroed program: the plan (sources read from their
 * files), the IO table, buckets, name, arch, fingerprints; *llir_file and *llir_hash are
 * the LLIR file's name and its hash as recorded (owned by the caller: pg__free). */
int pg__plan_read(pg_program *p, const char *dir, char **llir_file, char **llir_hash, lm_err *err);
/* XXH3-128 of bytes as 32 hex digits into out[33]. */
void pg__hash_hex(const void *data, size_t len, char out[33]);

/* ---- backends ---- */

/* Opens the GPU: context (p->mock or the real driver), the architecture check, the
 * compilation of every kernel. p->gpu set on success. LM_ENODEV / LM_ENVRTC where there
 * is no GPU or NVRTC (the caller may fall back to the CPU). */
int pg__gpu_open(pg_program *p, lm_err *err);
void pg__gpu_close(pg_program *p);
/* Runs on the GPU (variant, refresh, uploads, launch, sync). */
int pg__gpu_run(pg_program *p, uint32_t variant, lm_err *err);
/* Times variant's replay (pg_program_time). */
int pg__gpu_time(pg_program *p, uint32_t variant, uint32_t warmup, uint32_t trials, uint32_t reps,
                 double timeout_ms, double *median, double *lo, double *hi, lm_err *err);
/* Copies output i to p->out[i].host. */
int pg__gpu_download(pg_program *p, uint32_t i, lm_err *err);
int pg__gpu_output_device(pg_program *p, uint32_t i, uint64_t *dptr, lm_err *err);
/* Pinned host memory from the open context (plain memory when the GPU is not open). */
int pg__gpu_host_alloc(pg_program *p, size_t bytes, void **out, bool *pinned, lm_err *err);
void pg__gpu_host_free(pg_program *p, void *host, bool pinned);
int pg__gpu_diagnose(pg_program *p, double timeout_ms, pg_diagnosis *out, lm_err *err);
/* Kernels compiled / found in the cache when the GPU opened. */
bool pg__gpu_available(void);

int pg__cpu_open(pg_program *p, lm_err *err);
void pg__cpu_close(pg_program *p);
int pg__cpu_run(pg_program *p, lm_err *err);
/* Output i of the last CPU run: its bytes (owned by the backend). */
const void *pg__cpu_output(const pg_program *p, uint32_t i, size_t *bytes);

/* Input or output io at the program's current dims. */
int pg__io_info(const pg_program *p, const pg_io *io, pg_tensor_info *out, lm_err *err);

/* "kernel 3 (template 'elementwise', LLIR node 7)" */
void pg__kernel_desc(const cg_plan *p, uint32_t k, char *buf, size_t cap);
/* first[k]: the smallest kernel index whose source is kernel k's (k itself for the first
 * of each text); by hashing, so a plan of many kernels costs n log n, not n^2 string
 * comparisons. first holds n_kernels entries. 0, or -1 when out of memory. */
int pg__same_source(const cg_plan *p, uint32_t *first);

#endif /* LUMINAL_PG_INT_H */
