/* rt_isolate.c: running GPU work in a child process, so that a kernel fault cannot take the
 * caller down.
 *
 * Why: after a sticky fault (CUDA_ERROR_ILLEGAL_ADDRESS and its kind) the driver refuses
 * every later call in the process, cuDevicePrimaryCtxReset notwithstanding: on the H200
 * (driver 580.159.04) cuDevicePrimaryCtxRetain after the reset still answers 700, in
 * every order of release, reset and retain tried (docs/cuda_rt.md). The only unit of
 * recovery is the process. So rt_isolated_run forks: the child opens its own context,
 * runs the work and writes back one record (error code, message, result bytes) through a
 * pipe; the parent waits with a deadline and kills the child past it. Inputs need no
 * serialization (the child sees the parent's memory as it was at the fork); outputs are
 * the `out` bytes.
 *
 * The record on the pipe: int32 code, uint32 message length, message bytes, then
 * out_size result bytes when code is 0.
 */
#include "rt_int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* base's monotonic clock, in milliseconds */
static double now_ms(void)
{
    return lm_now_s() * 1e3;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void child(int fd, const rt_options *opt, rt_mock *mock, rt_isolated_fn fn, void *user,
                  size_t out_size)
{
    lm_err err;
    lm_err_clear(&err);
    rt_ctx *ctx = NULL;
    void *out = rt__alloc(out_size ? out_size : 1, 1);
    int rc;
    if (!out)
        rc = RT_FAIL(&err, RT_ENOMEM, "out of memory for %zu result bytes in the child", out_size);
    else if (mock)
        rc = rt_ctx_new_mock(mock, opt, &ctx, &err);
    else
        rc = rt_ctx_new(opt, &ctx, &err);
    if (rc == 0) {
        rc = fn(ctx, user, out, out_size, &err);
        if (rc && !err.code) RT_FAIL(&err, rc, "isolated work failed without a message");
        if (!rc && !ctx->poisoned) rc = rt_ctx_sync(ctx, &err); /* surface late faults */
    }
    int32_t code = rc ? (int32_t)(err.code ? err.code : rc) : 0;
    uint32_t len = code ? (uint32_t)strlen(err.msg) : 0;
    if (write_all(fd, &code, sizeof code) == 0 && write_all(fd, &len, sizeof len) == 0 &&
        write_all(fd, err.msg, len) == 0 && code == 0)
        write_all(fd, out, out_size);
    /* no rt_ctx_free: the process ends here and the driver frees what it held */
    _exit(0);
}

int rt_isolated_run(const rt_options *opt, rt_mock *mock, rt_isolated_fn fn, void *user, void *out,
                    size_t out_size, double timeout_ms, lm_err *err)
{
    if (lm_err_is_set(err)) return err->code;
    if (timeout_ms <= 0)
        return RT_FAIL(err, RT_EARG, "isolated run: timeout %.1f ms must be > 0", timeout_ms);
    size_t cap = 8 + LM_ERR_MSG + out_size;
    unsigned char *rec = rt__alloc(cap, 1);
    if (!rec) return RT_FAIL(err, RT_ENOMEM, "out of memory for %zu result bytes", out_size);
    int fds[2];
    if (pipe(fds) != 0) {
        rt__free(rec);
        return RT_FAIL(err, RT_EUNSUPPORTED, "isolated run: pipe() failed: %s", strerror(errno));
    }
    fflush(stdout); /* or the child would print the parent's buffered output again */
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        rt__free(rec);
        return RT_FAIL(err, RT_EUNSUPPORTED, "isolated run: fork() failed: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], opt, mock, fn, user, out_size);
    }
    close(fds[1]);
    size_t got = 0;
    bool timed_out = false;
    double deadline = now_ms() + timeout_ms;
    for (;;) {
        double left = deadline - now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int pr = poll(&p, 1, left > 1e6 ? 1000000 : (int)left + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) continue;
        if (pr < 0) break;
        ssize_t r = read(fds[0], rec + got, got < cap ? cap - got : 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break; /* end of file: the child is done (or died) */
        got += (size_t)r;
    }
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int rc = 0;
    int32_t code = 0;
    uint32_t len = 0;
    if (got >= 8) {
        memcpy(&code, rec, 4);
        memcpy(&len, rec + 4, 4);
    }
    if (timed_out) {
        rc = RT_FAIL(err, RT_ETIMEOUT,
                     "isolated run: the child did not finish within %.0f ms and was killed; "
                     "fix: the work may hang (a runaway kernel): raise the timeout or fix it",
                     timeout_ms);
    } else if (got < 8 || len >= LM_ERR_MSG || got < 8 + (size_t)len ||
               (code == 0 && got < 8 + out_size)) {
        if (WIFSIGNALED(status))
            rc = RT_FAIL(err, RT_EFAULT,
                         "isolated run: the child died of signal %d (%s) before reporting; the "
                         "caller is unaffected; fix: debug the work in a plain process",
                         WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
            rc = RT_FAIL(err, RT_EFAULT,
                         "isolated run: the child exited (status %d) after %zu of its result "
                         "bytes; fix: the work must return, not exit",
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1, got);
    } else if (code != 0) {
        char msg[LM_ERR_MSG];
        memcpy(msg, rec + 8, len);
        msg[len] = '\0';
        rc = RT_FAIL(err, code, "isolated run (child process, now gone): %s", msg);
    } else if (out_size) {
        memcpy(out, rec + 8, out_size);
    }
    rt__free(rec);
    return rc;
}
