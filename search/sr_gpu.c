/* sr_gpu.c - the GPU evaluator's driving side (sr_gpu.h): a pool of worker processes, one
 * per visible GPU, started with posix_spawn and spoken to over pipes (sr_worker.c
 * documents the protocol).
 *
 * This process never opens a CUDA context: GPUs are counted by a forked child that asks
 * the driver and exits, and every program runs in a worker. Each worker has its
 * candidate's deadline; next() polls the busy workers' pipes until one answers, dies (end
 * of file: reaped, its status and last stage make the reason, SR_FAULT) or passes its
 * deadline (killed and reaped, SR_TIMEOUT). A worker found dead is started again when the
 * next candidate needs it. Nothing here waits without a bound: writes poll against the
 * deadline, reads are polled, and a worker that does not exit when asked is killed.
 *
 * The framing of the protocol and its "key=value" text (sr__msg_*, sr__kv), shared with
 * the worker, are at the end of this file.
 */
#include "sr_gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define COUNT_TIMEOUT_S 30.0 /* the GPU-counting child */
#define QUIT_WAIT_S 2.0      /* a worker asked to quit, before it is killed */

/* ==================================================================================
 * Counting GPUs in a child
 * ================================================================================== */

int sr_gpu_count(lm_err *err)
{
    int fds[2];
    if (pipe(fds) != 0)
        return sr__fail(err, LM_EIO, NULL, "counting GPUs: pipe: %s", strerror(errno)), -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return sr__fail(err, LM_EIO, NULL, "counting GPUs: fork: %s", strerror(errno)), -1;
    }
    if (pid == 0) { /* the child: CUDA here only, then _exit (no atexit, no leak check) */
        close(fds[0]);
        int n = 0;
        void *dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (dl) {
            int (*init)(unsigned) = NULL;
            int (*count)(int *) = NULL;
            *(void **)&init = dlsym(dl, "cuInit");
            *(void **)&count = dlsym(dl, "cuDeviceGetCount");
            if (init && count && init(0) == 0 && count(&n) != 0) n = 0;
        }
        ssize_t w = write(fds[1], &n, sizeof n);
        _exit(w == (ssize_t)sizeof n ? 0 : 1);
    }
    close(fds[1]);
    int n = -1;
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    int pr;
    do
        pr = poll(&p, 1, (int)(COUNT_TIMEOUT_S * 1000));
    while (pr < 0 && errno == EINTR);
    if (pr > 0 && read(fds[0], &n, sizeof n) != (ssize_t)sizeof n) n = -1;
    close(fds[0]);
    if (pr <= 0) kill(pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (n < 0)
        return sr__fail(err, pr <= 0 ? LM_ETIMEOUT : LM_EIO, NULL,
                          "counting GPUs: the child that asks the driver %s",
                          pr <= 0 ? "did not answer within 30 s" : "died without answering"),
               -1;
    return n;
}

int sr_gpu__worker_device(const char *cvd, uint32_t i, uint32_t n, char *out, size_t size)
{
    if (i >= n || size < 2) return LM_EARG;
    if (!cvd) {
        int w = snprintf(out, size, "%u", i);
        return w > 0 && (size_t)w < size ? LM_OK : LM_EARG;
    }
    const char *s = cvd;
    for (uint32_t k = 0; k < i; k++) {
        s = strchr(s, ',');
        if (!s) return LM_EARG;
        s++;
    }
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    while (len && (*s == ' '))
        s++, len--;
    while (len && s[len - 1] == ' ')
        len--;
    if (!len || len >= size) return LM_EARG;
    memcpy(out, s, len);
    out[len] = '\0';
    return LM_OK;
}

/* ==================================================================================
 * The pool
 * ================================================================================== */

typedef struct worker {
    uint32_t index;
    pid_t pid; /* 0: not running */
    int to, from;
    bool started_once;
    sr_msgbuf rd;
    char dev[128];  /* its CUDA_VISIBLE_DEVICES */
    char stage[32]; /* the last stage it reported */
    bool busy;      /* a candidate is in flight on it */
    bool have_res;  /* its result is decided (res) */
    sr_result res;
    uint64_t cand;   /* the candidate's id */
    double deadline; /* lm_now_s() time */
    double timeout;  /* its seconds */
} worker;

typedef struct gpu_ev {
    sr_evaluator base;
    sr_gpu_opts o;
    char *exe, *cache_dir;
    char *setup;      /* the SETU payload's header ("key=value" lines, a blank line) */
    char *graph_text; /* and its body: the graph, written once (hl_graph_write_json) */
    uint32_t n;
    worker w[SR_GPU_MAX_WORKERS];
    uint32_t inflight;
    uint64_t crash_at, hang_at; /* test hooks: the evaluator's K-th candidate (0: none) */
    sr_gpu_stats st;
} gpu_ev;

static void logf_(gpu_ev *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(gpu_ev *g, const char *fmt, ...)
{
    if (!g->o.log) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("gpu evaluator: ", g->o.log);
    vfprintf(g->o.log, fmt, ap);
    fputc('\n', g->o.log);
    va_end(ap);
    fflush(g->o.log);
}

void sr_gpu_opts_default(sr_gpu_opts *o)
{
    memset(o, 0, sizeof *o);
    o->warmup = 3;
    o->trials = 20;
    o->timeout_s = 60;
    o->check_timeout_s = 600;
    o->start_timeout_s = 60;
}

/* "signal 6 (Aborted)" / "exit status 3". */
static void describe_status(int st, char *out, size_t size)
{
    if (WIFSIGNALED(st))
        snprintf(out, size, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st))
        snprintf(out, size, "exit status %d", WEXITSTATUS(st));
    else
        snprintf(out, size, "status 0x%x", st);
}

/* Waits for w's process for up to wait_s (then kills it), reaps it, closes its pipes.
 * *st receives its wait status. */
static void reap(worker *w, double wait_s, int *st)
{
    *st = 0;
    if (w->pid > 0) {
        double end = lm_now_s() + wait_s;
        pid_t r;
        for (;;) {
            r = waitpid(w->pid, st, WNOHANG);
            if (r == w->pid || (r < 0 && errno != EINTR)) break;
            if (lm_now_s() >= end) {
                kill(w->pid, SIGKILL);
                while ((r = waitpid(w->pid, st, 0)) < 0 && errno == EINTR) {
                }
                break;
            }
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (w->to >= 0) close(w->to);
    if (w->from >= 0) close(w->from);
    w->to = w->from = -1;
    w->pid = 0;
    w->rd.len = 0;
}

/* An fd of at least 10, close-on-exec (so that dup2 onto 3 and 4 in the child always
 * moves it, and no other worker inherits it). */
static int high_fd(int fd)
{
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    return h;
}

/* The environment with CUDA_VISIBLE_DEVICES=dev (the array and its one new string are
 * malloc'd: free both). */
static char **child_env(const char *dev, char **cvd_str)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = sr__alloc(n + 2, sizeof *env);
    size_t len = strlen(dev) + 32;
    *cvd_str = sr__alloc(len, 1);
    if (!env || !*cvd_str) {
        free(env);
        free(*cvd_str);
        *cvd_str = NULL;
        return NULL;
    }
    snprintf(*cvd_str, len, "CUDA_VISIBLE_DEVICES=%s", dev);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) != 0) env[k++] = environ[i];
    env[k++] = *cvd_str;
    env[k] = NULL;
    return env;
}

/* Spawns worker w and sends it the setup. */
static int spawn_worker(gpu_ev *g, worker *w, lm_err *err)
{
    int to[2], from[2];
    if (pipe(to) != 0)
        return sr__fail(err, LM_EIO, NULL, "gpu worker: pipe: %s", strerror(errno));
    if (pipe(from) != 0) {
        close(to[0]), close(to[1]);
        return sr__fail(err, LM_EIO, NULL, "gpu worker: pipe: %s", strerror(errno));
    }
    for (int i = 0; i < 2; i++)
        to[i] = high_fd(to[i]), from[i] = high_fd(from[i]);
    if (to[0] < 0 || to[1] < 0 || from[0] < 0 || from[1] < 0) {
        for (int i = 0; i < 2; i++) {
            if (to[i] >= 0) close(to[i]);
            if (from[i] >= 0) close(from[i]);
        }
        return sr__fail(err, LM_EIO, NULL, "gpu worker: no file descriptors");
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 3);
    posix_spawn_file_actions_adddup2(&fa, from[1], 4);
    posix_spawn_file_actions_adddup2(&fa, 2, 1); /* stdout may carry the search's JSON */
    /* argv[0]: the program's real path, so that ps names it (exec'd by g->exe) */
    char self[4096];
    ssize_t sl = readlink(g->exe, self, sizeof self - 1);
    if (sl > 0)
        self[sl] = '\0';
    else
        snprintf(self, sizeof self, "%s", g->exe);
    char *argv[] = {self, "--worker", "--in", "3", "--out", "4", NULL};
    char *cvd = NULL;
    char **env = child_env(w->dev, &cvd);
    pid_t pid = 0;
    int rc = env ? posix_spawn(&pid, g->exe, &fa, NULL, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    free(cvd);
    close(to[0]);
    close(from[1]);
    if (rc != 0) {
        close(to[1]);
        close(from[0]);
        return sr__fail(err, LM_EIO, NULL, "gpu worker %u: cannot start '%s': %s", w->index,
                          g->exe, strerror(rc));
    }
    fcntl(to[1], F_SETFL, fcntl(to[1], F_GETFL) | O_NONBLOCK);
    w->pid = pid;
    w->to = to[1];
    w->from = from[0];
    w->rd.len = 0;
    w->stage[0] = '\0';
    if (w->started_once) g->st.restarts++;
    w->started_once = true;
    double deadline = lm_now_s() + g->o.start_timeout_s;
    if (sr__msg_write(w->to, "SETU", g->setup, strlen(g->setup), g->graph_text,
                      strlen(g->graph_text), deadline) != 0) {
        int e = errno, st;
        reap(w, 0, &st);
        return sr__fail(err, LM_EIO, NULL, "gpu worker %u: sending the setup: %s", w->index,
                          strerror(e));
    }
    return LM_OK;
}

/* Waits for w's answer to the setup. */
static int await_ready(gpu_ev *g, worker *w, lm_err *err)
{
    double deadline = lm_now_s() + g->o.start_timeout_s;
    for (;;) {
        char tag[4], *t = NULL;
        size_t len;
        int took = sr__msg_take(&w->rd, tag, &t, &len);
        if (took < 0) break;
        if (took > 0) {
            if (memcmp(tag, "REDY", 4) == 0) {
                char cvd[128] = "";
                sr__kv(t, len, "cvd", cvd, sizeof cvd);
                logf_(g, "worker %u started (pid %d, CUDA_VISIBLE_DEVICES=%s)", w->index,
                      (int)w->pid, cvd);
                free(t);
                return LM_OK;
            }
            if (memcmp(tag, "FAIL", 4) == 0) {
                char msg[LM_ERR_MSG - 64] = "";
                sr__kv(t, len, "msg", msg, sizeof msg);
                free(t);
                int st;
                reap(w, QUIT_WAIT_S, &st);
                return sr__fail(err, LM_EARG, NULL, "gpu worker %u refused the setup: %s",
                                  w->index, msg);
            }
            free(t);
            continue;
        }
        double left = deadline - lm_now_s();
        if (left <= 0) break;
        struct pollfd p = {.fd = w->from, .events = POLLIN};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) continue;
        if (sr__msg_fill(&w->rd, w->from) <= 0) {
            int st;
            char how[96];
            reap(w, QUIT_WAIT_S, &st);
            describe_status(st, how, sizeof how);
            return sr__fail(err, LM_EFAULT, NULL,
                              "gpu worker %u ('%s --worker') ended before it was ready (%s)",
                              w->index, g->exe, how);
        }
    }
    int st;
    kill(w->pid, SIGKILL);
    reap(w, QUIT_WAIT_S, &st);
    return sr__fail(err, LM_ETIMEOUT, NULL, "gpu worker %u did not get ready within %.0f s",
                      w->index, g->o.start_timeout_s);
}

static uint32_t ev_slots(sr_evaluator *ev)
{
    return ((gpu_ev *)ev)->n;
}

/* w's candidate ends with status s (its process is gone already). */
static void decide(gpu_ev *g, worker *w, sr_status s, const char *why)
{
    memset(&w->res, 0, sizeof w->res);
    w->res.id = w->cand;
    w->res.status = s;
    w->res.gpu = (int)w->index;
    snprintf(w->res.why, sizeof w->res.why, "%s", why);
    w->have_res = true;
    (void)g;
}

/* w's process ended (end of file on its pipe) while it ran a candidate. */
static void died(gpu_ev *g, worker *w)
{
    int st;
    char how[96], why[256];
    pid_t pid = w->pid;
    reap(w, QUIT_WAIT_S, &st);
    describe_status(st, how, sizeof how);
    snprintf(why, sizeof why, "the worker (pid %d) died running it, %s, at stage %s", (int)pid, how,
             w->stage[0] ? w->stage : "start");
    g->st.deaths++;
    logf_(g, "worker %u: candidate %" PRIu64 ": %s; it is started again for the next", w->index,
          w->cand, why);
    decide(g, w, SR_FAULT, why);
}

static int ev_submit(sr_evaluator *ev, const sr_candidate *c, lm_err *err)
{
    gpu_ev *g = (gpu_ev *)ev;
    if (lm_err_is_set(err)) return err->code;
    if (!c || !c->llir)
        return sr__fail(err, LM_EARG, NULL, "gpu evaluator: a candidate without LLIR");
    worker *w = NULL;
    for (uint32_t i = 0; i < g->n && !w; i++)
        if (!g->w[i].busy) w = &g->w[i];
    if (!w)
        return sr__fail(err, LM_EARG, NULL, "gpu evaluator: %u candidates in flight already",
                          g->n);
    if (w->pid > 0) { /* it may have died while idle (killed): then start it again */
        int st;
        if (waitpid(w->pid, &st, WNOHANG) == w->pid) {
            char how[96];
            describe_status(st, how, sizeof how);
            logf_(g, "worker %u (pid %d) ended while idle (%s)", w->index, (int)w->pid, how);
            w->pid = 0;
            reap(w, 0, &st);
            g->st.deaths++;
        }
    }
    if (w->pid == 0) {
        int rc = spawn_worker(g, w, err);
        if (!rc) rc = await_ready(g, w, err);
        if (rc) return rc;
    }
    /* binary LLIR (ll_graph_pack): no JSON between the genome and the measurement */
    void *bin = NULL;
    size_t blen = 0;
    if (ll_graph_pack(c->llir, &bin, &blen, err)) return err->code;
    g->st.submitted++;
    const char *hook = g->st.submitted == g->crash_at  ? "abort"
                       : g->st.submitted == g->hang_at ? "hang"
                                                       : "none";
    char head[256];
    snprintf(head, sizeof head, "id=%" PRIu64 "\ncutoff_ms=%.9g\ncheck=%d\nhook=%s\n\n", c->id,
             c->cutoff_ms, c->check ? 1 : 0, hook);
    w->busy = true;
    w->have_res = false;
    w->cand = c->id;
    w->stage[0] = '\0';
    w->timeout = g->o.timeout_s + (c->check ? g->o.check_timeout_s : 0);
    w->deadline = lm_now_s() + w->timeout;
    g->inflight++;
    if (sr__msg_write(w->to, "CAND", head, strlen(head), bin, blen, w->deadline) != 0) {
        if (errno == ETIMEDOUT) {
            kill(w->pid, SIGKILL);
            int st;
            reap(w, QUIT_WAIT_S, &st);
            g->st.timeouts++;
            decide(g, w, SR_TIMEOUT, "the worker did not take the candidate in time");
        } else {
            died(g, w);
        }
    }
    free(bin);
    return LM_OK;
}

/* Reads w's answer; true when its result is decided. */
static bool take_answer(gpu_ev *g, worker *w)
{
    for (;;) {
        char tag[4], *t = NULL;
        size_t len;
        int took = sr__msg_take(&w->rd, tag, &t, &len);
        if (took <= 0) return false;
        if (memcmp(tag, "STAG", 4) == 0) {
            sr__kv(t, len, "stage", w->stage, sizeof w->stage);
        } else if (memcmp(tag, "RSLT", 4) == 0) {
            char v[64];
            sr_result *r = &w->res;
            memset(r, 0, sizeof *r);
            r->id = w->cand;
            r->gpu = (int)w->index;
            int s = sr__kv(t, len, "status", v, sizeof v) ? atoi(v) : SR_ERROR;
            r->status = s >= 0 && s < SR_STATUS_COUNT ? (sr_status)s : SR_ERROR;
            if (sr__kv(t, len, "ms", v, sizeof v)) r->ms = strtod(v, NULL);
            if (sr__kv(t, len, "compile_s", v, sizeof v)) r->compile_s = strtod(v, NULL);
            if (sr__kv(t, len, "trials", v, sizeof v)) r->trials = (uint32_t)strtoul(v, NULL, 10);
            if (sr__kv(t, len, "checked", v, sizeof v)) r->checked = atoi(v) != 0;
            if (sr__kv(t, len, "compiled", v, sizeof v)) g->st.compiled += strtoull(v, NULL, 10);
            if (sr__kv(t, len, "disk_hits", v, sizeof v)) g->st.disk_hits += strtoull(v, NULL, 10);
            sr__kv(t, len, "why", r->why, sizeof r->why);
            if (r->status == SR_OK) r->why[0] = '\0';
            w->have_res = true;
            if (sr__kv(t, len, "exiting", v, sizeof v) && atoi(v)) {
                /* its context is unusable and it exits: reaped now, started again later */
                int st;
                free(t);
                reap(w, QUIT_WAIT_S, &st);
                logf_(g,
                      "worker %u: candidate %" PRIu64 " left its context unusable (%s); it "
                      "is started again for the next",
                      w->index, w->cand, sr_status_name(r->status));
                return true;
            }
        }
        free(t);
        if (w->have_res) return true;
    }
}

static int ev_next(sr_evaluator *ev, sr_result *out, lm_err *err)
{
    gpu_ev *g = (gpu_ev *)ev;
    if (lm_err_is_set(err)) return err->code;
    if (g->inflight == 0) return LM_EARG;
    for (;;) {
        /* a result decided already (in submission order of the workers' indexes) */
        for (uint32_t i = 0; i < g->n; i++) {
            worker *w = &g->w[i];
            if (w->busy && (w->have_res || take_answer(g, w))) {
                *out = w->res;
                w->busy = false;
                w->have_res = false;
                g->inflight--;
                return LM_OK;
            }
        }
        struct pollfd p[SR_GPU_MAX_WORKERS];
        uint32_t who[SR_GPU_MAX_WORKERS], np = 0;
        double now = lm_now_s(), first = now + 3600;
        for (uint32_t i = 0; i < g->n; i++) {
            worker *w = &g->w[i];
            if (!w->busy) continue;
            if (now >= w->deadline) {
                char why[256];
                pid_t pid = w->pid;
                kill(w->pid, SIGKILL);
                int st;
                reap(w, QUIT_WAIT_S, &st);
                snprintf(why, sizeof why,
                         "ran past the timeout of %.3g s at stage %s (the worker, pid %d, was "
                         "killed)",
                         w->timeout, w->stage[0] ? w->stage : "start", (int)pid);
                g->st.timeouts++;
                logf_(g, "worker %u: candidate %" PRIu64 " %s; it is started again for the next",
                      w->index, w->cand, why);
                decide(g, w, SR_TIMEOUT, why);
                continue;
            }
            if (w->deadline < first) first = w->deadline;
            p[np] = (struct pollfd){.fd = w->from, .events = POLLIN};
            who[np++] = i;
        }
        if (np == 0) continue; /* every busy worker has its result now */
        int ms = (int)((first - now) * 1000) + 1;
        int pr = poll(p, np, ms);
        if (pr < 0 && errno != EINTR)
            return sr__fail(err, LM_EIO, NULL, "gpu evaluator: poll: %s", strerror(errno));
        for (uint32_t k = 0; pr > 0 && k < np; k++) {
            if (!p[k].revents) continue;
            worker *w = &g->w[who[k]];
            long r = sr__msg_fill(&w->rd, w->from);
            if (r > 0) continue;
            if (r < 0 && errno == ENOMEM)
                return sr__oom(err, "gpu evaluator");
            /* end of file (or a broken pipe): what it sent last still counts */
            if (!take_answer(g, w))
                died(g, w);
            else {
                int st;
                reap(w, QUIT_WAIT_S, &st); /* it answered, then exited (a fault) */
            }
        }
    }
}

/* Asks w to quit and reaps it (killed at once when busy or after QUIT_WAIT_S). */
static void stop_worker(worker *w)
{
    if (w->pid <= 0) return;
    int st;
    if (w->busy) {
        kill(w->pid, SIGKILL);
        reap(w, QUIT_WAIT_S, &st);
        return;
    }
    sr__msg_write(w->to, "QUIT", NULL, 0, NULL, 0, lm_now_s() + 0.5);
    close(w->to);
    w->to = -1;
    reap(w, QUIT_WAIT_S, &st);
}

static void ev_free(sr_evaluator *ev)
{
    gpu_ev *g = (gpu_ev *)ev;
    if (!g) return;
    for (uint32_t i = 0; i < g->n; i++) {
        stop_worker(&g->w[i]);
        sr__msgbuf_fini(&g->w[i].rd);
    }
    free(g->exe);
    free(g->cache_dir);
    free(g->setup);
    free(g->graph_text);
    free(g);
}

static const sr_evaluator_ops gpu_ops = {
    .name = "gpu",
    .measured = true,
    .slots = ev_slots,
    .submit = ev_submit,
    .next = ev_next,
    .free = ev_free,
};

void sr_gpu_get_stats(const sr_evaluator *ev, sr_gpu_stats *out)
{
    const gpu_ev *g = (const gpu_ev *)ev;
    *out = g->st;
    out->workers = g->n;
}

int sr_gpu_worker_pid(const sr_evaluator *ev, uint32_t i)
{
    const gpu_ev *g = (const gpu_ev *)ev;
    return i < g->n ? (int)g->w[i].pid : 0;
}

/* The default on-disk cache: $XDG_CACHE_HOME/luminal/kernels, ~/.cache/luminal/kernels. */
static char *default_cache_dir(void)
{
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    const char *base = x && *x ? x : h && *h ? h : NULL;
    if (!base) return sr__strdup("");
    size_t len = strlen(base) + 32;
    char *s = sr__alloc(len, 1);
    if (s) snprintf(s, len, "%s%s/luminal/kernels", base, x && *x ? "" : "/.cache");
    return s;
}

static uint64_t env_k(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : 0;
}

sr_evaluator *sr_gpu_new(const sr_eval_setup *s, const sr_gpu_opts *o, lm_err *err)
{
    if (lm_err_is_set(err)) return NULL;
    if (!s || !s->graph) {
        sr__fail(err, LM_EARG, NULL, "gpu evaluator: no graph");
        return NULL;
    }
    sr_gpu_opts d;
    sr_gpu_opts_default(&d);
    if (!o) o = &d;
    gpu_ev *g = sr__zalloc(1, sizeof *g);
    if (!g) {
        sr__oom(err, "gpu evaluator");
        return NULL;
    }
    g->base.ops = &gpu_ops;
    g->o = *o;
    if (!g->o.warmup) g->o.warmup = d.warmup;
    if (!g->o.trials) g->o.trials = d.trials;
    if (g->o.timeout_s <= 0) g->o.timeout_s = d.timeout_s;
    if (g->o.check_timeout_s <= 0) g->o.check_timeout_s = d.check_timeout_s;
    if (g->o.start_timeout_s <= 0) g->o.start_timeout_s = d.start_timeout_s;
    for (uint32_t i = 0; i < SR_GPU_MAX_WORKERS; i++)
        g->w[i] = (worker){.index = i, .to = -1, .from = -1};
    g->crash_at = env_k("LUMINAL_WORKER_TEST_CRASH");
    g->hang_at = env_k("LUMINAL_WORKER_TEST_HANG");

    /* how many workers, and their devices */
    uint32_t n;
    if (o->backend_cpu) {
        n = o->workers ? o->workers : 1;
    } else {
        int visible = sr_gpu_count(err);
        if (visible < 0) goto fail;
        if (visible == 0) {
            sr__fail(err, LM_ENODEV, NULL,
                       "gpu evaluator: no CUDA device is visible (CUDA_VISIBLE_DEVICES=%s); "
                       "fix: run where there is a GPU, or use the cost model",
                       getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
            goto fail;
        }
        n = o->workers && o->workers < (uint32_t)visible ? o->workers : (uint32_t)visible;
    }
    if (n > SR_GPU_MAX_WORKERS) n = SR_GPU_MAX_WORKERS;
    g->n = n;
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    for (uint32_t i = 0; i < n; i++) {
        worker *w = &g->w[i];
        if (sr_gpu__worker_device(cvd, i, n, w->dev, sizeof w->dev) != 0) {
            if (!o->backend_cpu) {
                sr__fail(err, LM_EARG, NULL,
                           "gpu evaluator: CUDA_VISIBLE_DEVICES='%s' does not name device %u of "
                           "the %u the driver sees",
                           cvd, i, n);
                goto fail;
            }
            snprintf(w->dev, sizeof w->dev, "%u", i);
        }
    }

    g->exe = sr__strdup(o->worker_exe ? o->worker_exe : "/proc/self/exe");
    g->cache_dir = o->cache_dir ? sr__strdup(o->cache_dir) : default_cache_dir();
    uint32_t nd = hl_graph_dim_count(s->graph);
    size_t cap = (g->cache_dir ? strlen(g->cache_dir) : 0) + 512 + (size_t)nd * 24;
    g->setup = sr__alloc(cap, 1);
    if (!g->exe || !g->cache_dir || !g->setup) {
        sr__oom(err, "gpu evaluator");
        goto fail;
    }
    /* the graph goes to each worker in its setup, written once here: the workers read
     * no file, so a graph from standard input is measured like any other */
    g->graph_text = hl_graph_write_json(s->graph, err);
    if (!g->graph_text) goto fail;
    size_t at = (size_t)snprintf(g->setup, cap, "dims=");
    for (uint32_t i = 0; i < nd; i++)
        at += (size_t)snprintf(g->setup + at, cap - at, "%s%" PRId64, i ? "," : "",
                               s->dims ? s->dims[i] : hl_graph_dim_at(s->graph, i)->profile);
    snprintf(g->setup + at, cap - at,
             "\nseed=%" PRIu64 "\nbackend=%s\nwarmup=%u\ntrials=%u\ntimeout_ms=%.0f\n"
             "mem_budget=%" PRIu64 "\ncompile_threads=%u\ncache_dir=%s\n\n",
             s->seed, o->backend_cpu ? "cpu" : "gpu", g->o.warmup, g->o.trials,
             g->o.timeout_s * 1000, o->mem_budget, o->compile_threads, g->cache_dir);
    /* every worker's gpu= differs: appended per worker below would need a copy each; the
     * worker's index is not needed by it (its result's gpu is set here) */

    for (uint32_t i = 0; i < n; i++)
        if (spawn_worker(g, &g->w[i], err)) goto fail;
    for (uint32_t i = 0; i < n; i++)
        if (await_ready(g, &g->w[i], err)) goto fail;
    return &g->base;
fail:
    ev_free(&g->base);
    return NULL;
}

/* ==================================================================================
 * The protocol's framing and text (sr_gpu.h), shared with sr_worker.c
 * ================================================================================== */

/* Writes all of buf, waiting with poll for room when the fd is non-blocking. */
static int write_all(int fd, const char *buf, size_t len, double deadline)
{
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w > 0) {
            buf += w, len -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int ms = -1;
            if (deadline >= 0) {
                double left = deadline - lm_now_s();
                if (left <= 0) {
                    errno = ETIMEDOUT;
                    return -1;
                }
                ms = (int)(left * 1000) + 1;
            }
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, ms) < 0 && errno != EINTR) return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

int sr__msg_write(int fd, const char tag[4], const char *a, size_t alen, const char *b, size_t blen,
                  double deadline)
{
    if (alen + blen > SR_MSG_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    char head[8];
    uint32_t n = (uint32_t)(alen + blen);
    memcpy(head, tag, 4);
    memcpy(head + 4, &n, 4);
    /* A reader that is gone must come back as EPIPE, not kill this process. */
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    int rc = write_all(fd, head, 8, deadline);
    if (!rc && alen) rc = write_all(fd, a, alen, deadline);
    if (!rc && blen) rc = write_all(fd, b, blen, deadline);
    int saved = errno;
    if (rc && saved == EPIPE && !sigismember(&old, SIGPIPE)) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) > 0) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return rc;
}

/* Reads exactly len bytes: 0, 1 at end of file before any byte, -1 otherwise. */
static int read_exact(int fd, char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r == 0 && got == 0) return 1;
        return -1;
    }
    return 0;
}

int sr__msg_read(int fd, char tag[4], char **payload, size_t *len)
{
    *payload = NULL;
    *len = 0;
    char head[8];
    int rc = read_exact(fd, head, 8);
    if (rc) return rc;
    uint32_t n;
    memcpy(tag, head, 4);
    memcpy(&n, head + 4, 4);
    if (n > SR_MSG_MAX) return -1;
    char *p = sr__alloc((size_t)n + 1, 1);
    if (!p) return -1;
    if (n && read_exact(fd, p, n) != 0) {
        free(p);
        return -1;
    }
    p[n] = '\0';
    *payload = p;
    *len = n;
    return 0;
}

long sr__msg_fill(sr_msgbuf *b, int fd)
{
    if (b->cap - b->len < 65536) {
        size_t cap = b->cap ? b->cap * 2 : 131072;
        char *d = sr__realloc(b->data, cap, 1);
        if (!d) {
            errno = ENOMEM;
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    for (;;) {
        ssize_t r = read(fd, b->data + b->len, b->cap - b->len);
        if (r < 0 && errno == EINTR) continue;
        if (r > 0) b->len += (size_t)r;
        return (long)r;
    }
}

int sr__msg_take(sr_msgbuf *b, char tag[4], char **payload, size_t *len)
{
    *payload = NULL;
    *len = 0;
    if (b->len < 8) return 0;
    uint32_t n;
    memcpy(&n, b->data + 4, 4);
    if (n > SR_MSG_MAX) return -1;
    if (b->len < 8 + (size_t)n) return 0;
    char *p = sr__alloc((size_t)n + 1, 1);
    if (!p) return -1;
    memcpy(tag, b->data, 4);
    memcpy(p, b->data + 8, n);
    p[n] = '\0';
    memmove(b->data, b->data + 8 + n, b->len - 8 - n);
    b->len -= 8 + (size_t)n;
    *payload = p;
    *len = n;
    return 1;
}

void sr__msgbuf_fini(sr_msgbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

bool sr__kv(const char *text, size_t len, const char *key, char *out, size_t size)
{
    size_t kl = strlen(key);
    const char *end = text + len;
    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol) eol = end;
        if (eol == line) break; /* the blank line: the header ends */
        if ((size_t)(eol - line) > kl && memcmp(line, key, kl) == 0 && line[kl] == '=') {
            size_t vl = (size_t)(eol - line) - kl - 1;
            if (size) {
                if (vl >= size) vl = size - 1;
                memcpy(out, line + kl + 1, vl);
                out[vl] = '\0';
            }
            return true;
        }
        line = eol + 1;
    }
    return false;
}

const char *sr__kv_body(const char *text, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++)
        if (text[i] == '\n' && text[i + 1] == '\n') return text + i + 2;
    return NULL;
}
