/* sr_gpu.h - the GPU evaluator (internal to search/): worker processes, one per visible
 * GPU, that own the CUDA contexts, so that this process opens none.
 *
 * sr_gpu_new starts the workers (`<exe> --worker --in 3 --out 4`, each with
 * CUDA_VISIBLE_DEVICES set to its one device, so it sees device 0) and sends each the
 * setup; a candidate submitted goes to an idle worker as its serialized LLIR, and the
 * worker compiles it (outside the timed region; NVRTC on several threads, the on-disk
 * CUBIN cache of cuda_rt), times it as CUDA-graph replays with events (median of trials,
 * inputs resident), checks its outputs for NaN/Inf and, when asked, against the reference
 * runtime, and answers with an sr_result. A worker that dies (a fault, a crash) or runs
 * past the per-candidate timeout is reaped (killed first on a timeout), its candidate
 * recorded as SR_FAULT or SR_TIMEOUT with the reason, and it is started again for the
 * next candidate. sr_worker.c documents the protocol; docs/search-gpu.md the whole.
 */
#ifndef LUMINAL_SR_GPU_H
#define LUMINAL_SR_GPU_H

#include <stdio.h>

#include "sr_door.h"
#include "sr_eval.h"

/* Zero-initialised options are valid and mean the defaults (sr_gpu_opts_default gives
 * the same). Strings are copied. */
typedef struct sr_gpu_opts {
    const char *worker_exe;   /* the worker executable, started as `<exe> --worker ...`;
                                 NULL: /proc/self/exe (this program) */
    uint32_t workers;         /* 0: one per visible GPU (sr_gpu_count), or 1 with
                                 backend_cpu; else this many (never more than the GPUs
                                 visible, unless backend_cpu) */
    uint32_t warmup;          /* replays before the timed ones (0: 3) */
    uint32_t trials;          /* timed replays; the median is the time (0: 20) */
    double timeout_s;         /* per candidate, wall clock, compile included (0: 60) */
    double check_timeout_s;   /* added for a checked candidate: the worker's first check
                                 runs the reference runtime on the CPU (0: 600) */
    double start_timeout_s;   /* a worker's start and setup (0: 60) */
    uint64_t mem_budget;      /* bytes of device memory a candidate may plan (the most
                                 bytes live at one step of its plan); more is
                                 SR_OUT_OF_MEMORY (0: no budget but the device's) */
    uint32_t compile_threads; /* NVRTC compiles at once (0: program's default, up to 4) */
    const char *cache_dir;    /* the on-disk CUBIN cache; NULL: $XDG_CACHE_HOME/luminal/
                                 kernels, else ~/.cache/luminal/kernels; "": none */
    bool backend_cpu;         /* tests: the workers run programs on the CPU backend (llir's
                                 executor), timed by the wall clock; no GPU is touched */
    FILE *log;                /* worker starts, deaths and restarts (NULL: silent) */
} sr_gpu_opts;

void sr_gpu_opts_default(sr_gpu_opts *o);

/* How many GPUs this process may use, found without opening a CUDA context here: a
 * short-lived child asks the driver (cuInit, cuDeviceGetCount, so CUDA_VISIBLE_DEVICES
 * is honoured). 0 where there is no driver or no device; -1 with err set when the child
 * could not be started or did not answer within 30 s. */
int sr_gpu_count(lm_err *err);

/* The GPU evaluator on s (the graph is borrowed and must outlive it; graph_path, dims
 * and the options are copied), its workers started and set up. NULL with err set when a
 * worker cannot be started or refuses the setup (its message), or there is no GPU
 * (LM_ENODEV; not with backend_cpu). The driving process opens no CUDA context. Freeing
 * the evaluator shuts the workers down and reaps them. */
sr_evaluator *sr_gpu_new(const sr_eval_setup *s, const sr_gpu_opts *o, lm_err *err);

/* What the evaluator has done, for logs and tests. */
typedef struct sr_gpu_stats {
    uint32_t workers;   /* slots */
    uint64_t submitted; /* candidates handed to workers */
    uint64_t restarts;  /* workers started again after a death or a timeout */
    uint64_t deaths;    /* workers found dead while running a candidate */
    uint64_t timeouts;  /* workers killed past the timeout */
    uint64_t disk_hits; /* CUBINs the workers read from the on-disk cache */
    uint64_t compiled;  /* CUBINs the workers compiled */
} sr_gpu_stats;

/* ev must come from sr_gpu_new. */
void sr_gpu_get_stats(const sr_evaluator *ev, sr_gpu_stats *out);
/* The process id of worker i (0 when it is not running), for tests that kill one. */
int sr_gpu_worker_pid(const sr_evaluator *ev, uint32_t i);

/* ---- internals shared with the tests ---- */

#define SR_GPU_MAX_WORKERS 64

/* The CUDA_VISIBLE_DEVICES value of worker i of n visible GPUs, given this process's
 * value (cvd, NULL when unset): the i-th comma-separated entry of cvd when set (an index
 * or a UUID, as the driver takes them), else "i". 0, or LM_EARG when cvd has fewer than
 * n entries or an entry does not fit. */
int sr_gpu__worker_device(const char *cvd, uint32_t i, uint32_t n, char *out, size_t size);

/* The pipe protocol's framing (at the end of sr_gpu.c; sr_worker.c describes the protocol). A
 * message is a 4-byte tag, a 4-byte payload length (host order: both ends run on one
 * machine) and the payload. */
#define SR_MSG_MAX ((uint32_t)1 << 30) /* the longest payload taken */

typedef struct sr_msgbuf { /* bytes read and not yet taken */
    char *data;
    size_t len, cap;
} sr_msgbuf;

/* Writes one message (the payload is a then b). deadline: lm_now_s() time after which it
 * gives up (errno ETIMEDOUT); < 0: none. 0, or -1 with errno (EPIPE when the reader is
 * gone: SIGPIPE is blocked for the call and a pending one consumed). */
int sr__msg_write(int fd, const char tag[4], const char *a, size_t alen, const char *b, size_t blen,
                  double deadline);
/* Reads one whole message, blocking: 0 with *payload (malloc'd, NUL-terminated; free it)
 * and *len, 1 at end of file before a header, -1 on an error or a truncated message. */
int sr__msg_read(int fd, char tag[4], char **payload, size_t *len);
/* Reads what fd has (one read() call) into b: bytes read, 0 at end of file, -1 on an
 * error (errno). */
long sr__msg_fill(sr_msgbuf *b, int fd);
/* Takes one complete message out of b: 1 with *payload (malloc'd, NUL-terminated) and
 * *len, 0 when none is complete yet, -1 for a malformed header or no memory. */
int sr__msg_take(sr_msgbuf *b, char tag[4], char **payload, size_t *len);
void sr__msgbuf_fini(sr_msgbuf *b);

/* The value of "key=value" on a line of text[0 .. len) (up to a blank line) copied into
 * out (truncated to size); false when the key is absent. */
bool sr__kv(const char *text, size_t len, const char *key, char *out, size_t size);
/* The payload after the first blank line ("\n\n"); NULL when none. */
const char *sr__kv_body(const char *text, size_t len);

#endif /* LUMINAL_SR_GPU_H */
