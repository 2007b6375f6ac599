/* program.h - a compiled program: the one public header of program/.
 *
 * A program is what the compiler hands to a user: the plan codegen wrote (kernels,
 * cuBLASLt calls, buffers, steps), saved to a directory and loaded again without the
 * e-graph or a search, and run:
 *
 *   on the GPU   through cuda_rt: kernels compiled by NVRTC (cached by source and
 *                architecture) when the program is opened, never inside a run; buffers
 *                planned into one arena from their live ranges; the steps in one CUDA
 *                graph (cuBLASLt calls prepared once and captured into the same graph),
 *                replayed with one graph launch per run; dynamic dims update kernel nodes
 *                in place; inputs set from host memory through pinned staging or as device
 *                pointers, not uploaded again when unchanged;
 *   on the CPU   through llir's executor (the program keeps its LLIR), where there is no
 *                GPU, and saying so (pg_program_backend, pg_program_backend_note).
 *
 * This is also the C API for embedding a compiled program in an application:
 *
 *     pg_options o;
 *     pg_options_default(&o);
 *     lm_err err = {0};
 *     pg_program *p = pg_program_load("out/prog", &o, &err);   // NULL: err says why
 *     pg_program_set_dim(p, "seq", 128, &err);
 *     pg_program_set_input_named(p, "x", x, x_bytes, &err);
 *     pg_program_run(p, &err);
 *     const void *y; size_t y_bytes;
 *     pg_program_output(p, 0, &y, &y_bytes, &err);            // valid until the next run
 *     pg_program_free(p);
 *
 * (docs/codegen.md, "Programs and the C API"; examples/program/.)
 *
 * Errors go through base's lm_err: every fallible call returns 0 or an lm_code and fills
 * the caller's record (sticky: a call handed a record that holds an error does nothing and
 * returns its code). Every message begins with "program '<name>': ". GPU errors name the
 * kernel (its index, its template and its LLIR node) where one is known, and say whether
 * the program can go on (out of memory, a bad dim) or the process must be restarted (a
 * kernel fault: an illegal address poisons CUDA for the rest of the process; see
 * pg_program_diagnose).
 *
 * A program is used by one thread at a time. Nothing here prints.
 */
#ifndef LUMINAL_PROGRAM_H
#define LUMINAL_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pg_program pg_program;

/* Declared by codegen.h, llir.h and cuda_rt.h; an embedder that only loads programs needs
 * none of them. */
struct cg_plan;
struct ll_graph;
struct rt_mock;
struct rt_options;

/* Limits (named here, checked everywhere). */
#define PG_MAX_BUCKETS 16   /* buckets of one dim */
#define PG_MAX_VARIANTS 256 /* bucket combinations of one program */
#define PG_MAX_RANK 8       /* dims of an input or output (hlir's HL_MAX_DIMS) */
#define PG_MAX_FILE_BYTES ((size_t)256 << 20) /* plan.json and each kernel source, read */
#define PG_MAX_LLIR_BYTES ((size_t)1 << 30)  /* llir.json, read */

/* The format of a saved program's plan file. */
#define PG_FORMAT "luminal-program"
#define PG_FORMAT_VERSION 1

/* ==================================================================================
 * Options
 * ================================================================================== */

typedef enum pg_backend {
    PG_BACKEND_AUTO = 0, /* the GPU where there is one (and NVRTC), else the CPU */
    PG_BACKEND_GPU,      /* the GPU, or an error */
    PG_BACKEND_CPU       /* llir's CPU executor */
} pg_backend;

/* One bucket of a dim's values: lo <= value <= hi. */
typedef struct pg_bucket {
    int64_t lo, hi;
} pg_bucket;

/* The buckets of one dynamic dim (by name): within the dim's range, none overlapping. */
typedef struct pg_dim_buckets {
    const char *dim;
    uint32_t n; /* 1 .. PG_MAX_BUCKETS */
    const pg_bucket *buckets;
} pg_dim_buckets;

/* Zero-initialised options are valid and mean the defaults (pg_options_default gives the
 * same). Fields marked "new" are read by pg_program_new only (a loaded program has them
 * from its file); the others by both. Strings and arrays are copied. */
typedef struct pg_options {
    pg_backend backend;             /* AUTO */
    const char *name;               /* the program's name in messages (new: "program"; load: the
                                       name it was saved under; while its plan file is read, the
                                       directory's last component) */
    int arch;                       /* new: the compute capability the plan was written for, as
                                       major*10+minor (default 90); a GPU of another is refused */
    const char *egraph_fingerprint; /* new: where the program came from, kept with it */
    const char *genome_fingerprint; /* new */
    uint32_t n_buckets;             /* new: dims split into buckets (Luminal's dim buckets): one
                                       program variant per combination of buckets, each with its
                                       own arena and graph sized for the bucket's maximum; a dim
                                       not named has one bucket, its whole range */
    const pg_dim_buckets *buckets;
    struct rt_mock *mock;        /* the GPU backend on cuda_rt's mock driver (tests) */
    const struct rt_options *rt; /* the CUDA context's options (copied; a blas_cache in them
                                    is borrowed and must outlive the program); NULL: cuda_rt's
                                    defaults */
    uint32_t compile_threads;    /* NVRTC compiles at once when the program opens: 0 = up to 4
                                    (by the CPUs), 1 = one after the other */
    bool defer_gpu;              /* open the GPU (context, kernels) at the first run instead of
                                    at load; a process that has not touched CUDA can then run
                                    pg_program_diagnose */
    bool no_replay_skip;         /* always replay, even when nothing changed */
    bool no_inplace;             /* never let a kernel write over its input (see docs) */
    bool stepwise;               /* debugging: no graph; each step launched alone with a sync
                                    after it, so a fault names its kernel */
    uint64_t cpu_mem_limit;      /* the CPU executor's limit in bytes (0: none) */
} pg_options;

void pg_options_default(pg_options *o);

/* ==================================================================================
 * Making, saving, loading, freeing
 * ================================================================================== */

/* A program from a plan and the LLIR graph it was generated from (both copied; the
 * caller keeps its own). Checks the plan (every index, range and expression: LM_EVERIFY
 * naming what is wrong), the LLIR's dims and IO against it, the buckets (LM_EARG for a
 * bucket outside its dim's range, two that overlap, an unknown dim, more than
 * PG_MAX_VARIANTS combinations), then opens the backend: for the GPU the context, a
 * check of the architecture and the compilation of every kernel (LM_ECOMPILE naming the
 * kernel and its LLIR node, with NVRTC's log and lines), unless defer_gpu. With
 * PG_BACKEND_AUTO a machine without a CUDA device or NVRTC (or a build without cuda_rt)
 * runs on the CPU, and pg_program_backend_note says why. NULL with err set. */
pg_program *pg_program_new(const struct cg_plan *plan, const struct ll_graph *llir,
                           const pg_options *opt, lm_err *err);

/* Writes the program into directory dir (made, with missing parents, if need be; files
 * of the same names are replaced): plan.json (PG_FORMAT, docs/codegen.md lists every key),
 * llir.json (llir's LLIR file) and kernels/k<NNNN>.cu (each distinct source once). The same program
 * writes the same bytes; a program loaded from a directory writes that directory's bytes again.
 * LM_EIO naming the file, LM_ENOMEM. */
int pg_program_save(const pg_program *p, const char *dir, lm_err *err);

/* Loads a program saved by pg_program_save, then opens it as pg_program_new does. Refused
 * with LM_EUNSUPPORTED, saying so, when the plan comes from another compiler version
 * (compile it again), another format version, or was written for another GPU
 * architecture than the device's (on the GPU backend). A malformed plan file is LM_EPARSE
 * with "plan.json:line:col" (malformed JSON) or the path of the offending value; a
 * missing file LM_EIO. NULL with err set. */
pg_program *pg_program_load(const char *dir, const pg_options *opt, lm_err *err);

/* Frees everything (device memory, graphs, the context it opened). Accepts NULL. */
void pg_program_free(pg_program *p);

/* ==================================================================================
 * Queries
 * ================================================================================== */

const char *pg_program_name(const pg_program *p);
/* The backend that runs the program: PG_BACKEND_GPU or PG_BACKEND_CPU; PG_BACKEND_AUTO
 * while a deferred GPU has not been tried yet. */
pg_backend pg_program_backend(const pg_program *p);
/* One line saying what runs it and, for the CPU, why ("GPU: Mock H200, sm_90, 3 kernels
 * compiled" / "CPU: no CUDA device: ..."). Never NULL. */
const char *pg_program_backend_note(const pg_program *p);
/* The provenance strings given to pg_program_new ("" when none). */
const char *pg_program_egraph_fingerprint(const pg_program *p);
const char *pg_program_genome_fingerprint(const pg_program *p);

/* An input or output at the current dims. */
typedef struct pg_tensor_info {
    const char *name;   /* owned by the program */
    const char *dtype;  /* "f32", "bf16", ... (hlir's names) */
    uint32_t elem_size; /* bytes of one element */
    uint32_t ndim;
    int64_t dims[PG_MAX_RANK];
    uint64_t numel, bytes;
} pg_tensor_info;

uint32_t pg_program_input_count(const pg_program *p);
uint32_t pg_program_output_count(const pg_program *p);
/* The index of the input / output called name, or LM_NONE. */
uint32_t pg_program_input_find(const pg_program *p, const char *name);
uint32_t pg_program_output_find(const pg_program *p, const char *name);
/* Fills *out at the current dims. LM_EARG for an index out of range; LM_EEVAL. */
int pg_program_input_info(const pg_program *p, uint32_t i, pg_tensor_info *out, lm_err *err);
int pg_program_output_info(const pg_program *p, uint32_t i, pg_tensor_info *out, lm_err *err);

/* ==================================================================================
 * Dims
 * ================================================================================== */

uint32_t pg_program_dim_count(const pg_program *p);
const char *pg_program_dim_name(const pg_program *p, uint32_t i); /* NULL out of range */
/* The dim's range and current value (the profile value until set). LM_EARG. */
int pg_program_dim_info(const pg_program *p, uint32_t i, int64_t *lo, int64_t *hi, int64_t *value,
                        lm_err *err);
/* Sets dynamic dim `name`. LM_EDIM for an unknown dim or a value outside its range or
 * outside every bucket of it (the message lists the buckets); the value is kept as it
 * was. Input sizes follow the dims: set the dims first, then the inputs. */
int pg_program_set_dim(pg_program *p, const char *name, int64_t value, lm_err *err);

/* ==================================================================================
 * Inputs, running, outputs
 * ================================================================================== */

/* Input i from host memory: `bytes` must be the input's size at the current dims
 * (LM_ESHAPE otherwise). The bytes are copied at once (into pinned staging on the GPU),
 * so data may be reused after the call. Bytes equal to those of the last run are not
 * uploaded again: identity by XXH3-128 and, on a hash match, a byte compare against the
 * program's copy (pg_counters: bytes_skipped). */
int pg_program_set_input(pg_program *p, uint32_t i, const void *data, size_t bytes, lm_err *err);
int pg_program_set_input_named(pg_program *p, const char *name, const void *data, size_t bytes,
                               lm_err *err);
/* Input i as device memory the caller owns (GPU backend only, LM_EUNSUPPORTED on the
 * CPU): no copy; the address must stay valid while the program runs with it. A device
 * input is never taken as unchanged: its bytes cannot be seen. */
int pg_program_set_input_device(pg_program *p, uint32_t i, uint64_t dptr, size_t bytes,
                                lm_err *err);

/* Runs the program at the current dims and inputs, and waits for it. Every input must be
 * set, at the current dims' size (LM_ESHAPE naming the input otherwise). When every input
 * is unchanged since the last run, the dims too, and every output has been read to the
 * host since, the run is skipped and the outputs stay as they are (pg_counters:
 * replays_skipped; pg_program_set_replay_skip turns this off). On the GPU: the variant of
 * the current dims' buckets, kernel nodes brought to the dims in place, changed inputs
 * uploaded, one graph launch. Errors name the program and, where known, the kernel; a
 * kernel fault says that the process must be restarted and how to name the kernel. */
int pg_program_run(pg_program *p, lm_err *err);

/* Times the replay on the GPU with CUDA events (cuda_rt's rt_exec_time): the graph is
 * brought to the current dims and inputs as pg_program_run does (nothing is compiled:
 * that happened when the program opened), then `warmup` launches and `trials` timed
 * trials of `reps` launches each between two events (each 1 .. 10000), the host waiting
 * once at the end. *median_ms receives the median over the trials of the time per
 * replay (a trial's time / reps); min_ms and max_ms may be NULL. Afterwards the outputs
 * hold the last replay's. LM_EUNSUPPORTED on the CPU or stepwise; LM_ETIMEOUT past
 * timeout_ms (the work may still run: the program must then be freed). */
int pg_program_time(pg_program *p, uint32_t warmup, uint32_t trials, uint32_t reps,
                    double timeout_ms, double *median_ms, double *min_ms, double *max_ms,
                    lm_err *err);

/* Output i of the last run in host memory owned by the program (*data), valid until the
 * next run or free; on the GPU copied from the device on the first call after a run.
 * LM_EARG before any run. */
int pg_program_output(pg_program *p, uint32_t i, const void **data, size_t *bytes, lm_err *err);
int pg_program_output_named(pg_program *p, const char *name, const void **data, size_t *bytes,
                            lm_err *err);
/* The device address of output i (GPU backend only), valid until the next run or free. */
int pg_program_output_device(pg_program *p, uint32_t i, uint64_t *dptr, size_t *bytes, lm_err *err);

/* Turns skipping unchanged replays on (the default unless no_replay_skip) or off. */
void pg_program_set_replay_skip(pg_program *p, bool on);

/* What the runtime did, counted since the program was made. */
typedef struct pg_counters {
    uint64_t runs;                    /* pg_program_run calls that succeeded */
    uint64_t replays;                 /* of them, executions of the steps (GPU graph launches,
                                         stepwise runs, CPU runs) */
    uint64_t replays_skipped;         /* of them, skipped: nothing had changed */
    uint64_t timed_replays;           /* graph launches of pg_program_time */
    uint64_t uploads, bytes_uploaded; /* host-to-device input copies */
    uint64_t uploads_skipped, bytes_skipped; /* inputs set with unchanged bytes */
    uint64_t downloads, bytes_downloaded;    /* device-to-host output copies */
    uint64_t kernels_compiled;               /* NVRTC compiles (module cache misses) */
    uint64_t kernel_cache_hits;              /* kernels found in the module cache */
    uint64_t graphs_built;                   /* source graphs built (the first of each variant, and
                                                rebuilds when a library call or the layout changes) */
    uint64_t instantiations;                 /* executable graphs made from scratch (rt_exec_new) */
    uint64_t kernel_node_updates;            /* kernel nodes set in place (rt_exec_set_kernel) */
    uint64_t graph_updates;                  /* whole-graph updates accepted in place */
    uint64_t reinstantiations;               /* whole-graph updates the driver refused: instantiated
                                                again */
    uint64_t blas_prepares;                  /* cuBLASLt calls prepared (again when sizes change) */
    uint64_t arena_allocs;   /* arena (re)allocations: growing moves every pointer */
    uint64_t layout_replans; /* arena layouts planned again because a buffer outgrew
                                its bucket's plan */
} pg_counters;

void pg_program_counters(const pg_program *p, pg_counters *out);

/* ==================================================================================
 * Diagnosis and compile checks
 * ================================================================================== */

/* What pg_program_diagnose found. */
typedef struct pg_diagnosis {
    bool faulted;       /* a step failed */
    uint32_t step;      /* the step that failed (LM_NONE when none) */
    uint32_t kernel;    /* its kernel (LM_NONE for a library call or none) */
    uint32_t llir_node; /* its LLIR node (LM_NONE when none) */
    char template_name[32];
    int code;             /* its lm_code */
    char msg[LM_ERR_MSG]; /* its message */
} pg_diagnosis;

/* Reruns the program's steps one by one, with a sync after each, in a child process
 * (cuda_rt's rt_isolated_run) on a context of its own, with the inputs as last set (from
 * host memory), so that a fault that poisons CUDA names its step, kernel, template and
 * LLIR node while this process stays usable. 0 with *out filled whether or not a step
 * failed; an error when the diagnosis itself could not run (LM_EFAULT when the child died,
 * LM_ETIMEOUT past timeout_ms, LM_EUNSUPPORTED on the CPU backend or a build without
 * cuda_rt, LM_EARG for a device input, or when this process has opened the real GPU
 * already: load with defer_gpu in a fresh process and diagnose before the first run). */
int pg_program_diagnose(pg_program *p, double timeout_ms, pg_diagnosis *out, lm_err *err);

/* Compiles every kernel of the plan with NVRTC for sm_<arch> (no GPU needed): a check for
 * CI. A compile error (LM_ECOMPILE) names the kernel, its template and LLIR node and
 * shows NVRTC's log with the offending source lines; LM_ENVRTC where NVRTC cannot be
 * loaded; LM_EUNSUPPORTED in a build without cuda_rt; LM_EVERIFY for a malformed plan. */
int pg_compile_check(const struct cg_plan *plan, int arch, lm_err *err);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_PROGRAM_H */
