/* test_sr_gpu_gpu.c - the GPU evaluator on a real GPU (label gpu; skipped, exit 77, where
 * sr_gpu_count finds none): candidates measured by CUDA-graph replays in the workers
 * (and this process never maps libcuda), NaN and the reference check on the GPU's
 * outputs, the cutoff, a crashed worker restarted, the on-disk CUBIN cache between two
 * pools, CUDA_VISIBLE_DEVICES naming one device giving one worker, and every visible GPU
 * used. The worker host is sr_gpu_driver ($SR_GPU_DRIVER overrides the built path and
 * $SR_GPU_SOURCE the source folder, for a binary carried to another machine:
 * scripts/worker_gpu.sh sets both). */
#include "lm_check.h"
#include "search.h"
#include "sr_gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char data_dir[1024];
static const char *driver;

typedef struct fx {
    hl_graph *h;
    int64_t dims[1];
    char path[1200];
    sr_eval_setup setup;
    ll_graph *ok, *nan, *wrong;
} fx;

static ll_graph *lower(const char *name)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", data_dir, name);
    lm_err e = {0};
    hl_graph *h = hl_graph_load_json(p, &e);
    ck_assert_msg(h, "%s", e.msg);
    ll_graph *g = ll_graph_from_hlir(h, &e);
    ck_assert_msg(g, "%s", e.msg);
    hl_graph_free(h);
    return g;
}

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s/sqrt.json", data_dir);
    lm_err e = {0};
    f->h = hl_graph_load_json(f->path, &e);
    ck_assert_msg(f->h, "%s", e.msg);
    f->dims[0] = 100000;
    f->setup = (sr_eval_setup){f->h, f->path, f->dims, 3};
    f->ok = lower("sqrt.json");
    f->nan = lower("nan.json");
    f->wrong = lower("wrong.json");
}

static void fx_fini(fx *f)
{
    ll_graph_free(f->ok);
    ll_graph_free(f->nan);
    ll_graph_free(f->wrong);
    hl_graph_free(f->h);
}

static sr_evaluator *pool(fx *f, uint32_t workers, const char *cache)
{
    sr_gpu_opts o;
    sr_gpu_opts_default(&o);
    o.worker_exe = driver;
    o.workers = workers;
    o.cache_dir = cache;
    o.log = stdout;
    lm_err e = {0};
    sr_evaluator *ev = sr_gpu_new(&f->setup, &o, &e);
    ck_assert_msg(ev, "%s", e.msg);
    return ev;
}

static sr_result eval1(sr_evaluator *ev, uint64_t id, const ll_graph *g, double cutoff, bool check)
{
    sr_candidate c = {.id = id, .llir = g, .plan = NULL, .cutoff_ms = cutoff, .check = check};
    lm_err e = {0};
    ck_assert_msg(ev->ops->submit(ev, &c, &e) == 0, "%s", e.msg);
    sr_result r;
    ck_assert_msg(ev->ops->next(ev, &r, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(r.id, id);
    printf("candidate %llu: status %d, %.4f ms, compile %.3f s, %u trials, gpu %d%s %s\n",
           (unsigned long long)id, r.status, r.ms, r.compile_s, r.trials, r.gpu,
           r.checked ? ", checked" : "", r.why);
    return r;
}

static void no_cuda_here(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(maps);
    char line[1024];
    bool cuda = false;
    while (fgets(line, sizeof line, maps))
        cuda |= strstr(line, "libcuda.so") != NULL;
    fclose(maps);
    ck_assert_msg(!cuda, "libcuda is mapped in the driving process");
}

START_TEST(gpu_candidates_are_measured)
{
    fx f;
    fx_init(&f);
    sr_evaluator *ev = pool(&f, 1, "");
    sr_result r = eval1(ev, 1, f.ok, 0, true);
    ck_assert_msg(r.status == SR_OK && r.checked, "%s", r.why);
    ck_assert(r.ms > 0 && r.ms < 50);
    ck_assert_uint_eq(r.trials, 20);
    ck_assert_int_eq(r.gpu, 0);
    ck_assert(r.compile_s > 0);
    r = eval1(ev, 2, f.nan, 0, false);
    ck_assert_int_eq(r.status, SR_NONFINITE);
    ck_assert_msg(strstr(r.why, "NaN"), "%s", r.why);
    r = eval1(ev, 3, f.wrong, 0, true);
    ck_assert_int_eq(r.status, SR_WRONG);
    r = eval1(ev, 4, f.ok, 1e-6, false);
    ck_assert_int_eq(r.status, SR_TOO_SLOW);
    ck_assert_uint_eq(r.trials, 3);
    no_cuda_here();
    ev->ops->free(ev);
    errno = 0;
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
    fx_fini(&f);
}
END_TEST

START_TEST(gpu_worker_crash_restarts)
{
    fx f;
    fx_init(&f);
    setenv("LUMINAL_WORKER_TEST_CRASH", "2", 1);
    sr_evaluator *ev = pool(&f, 1, "");
    unsetenv("LUMINAL_WORKER_TEST_CRASH");
    ck_assert_int_eq(eval1(ev, 1, f.ok, 0, false).status, SR_OK);
    sr_result r = eval1(ev, 2, f.ok, 0, false);
    ck_assert_int_eq(r.status, SR_FAULT);
    ck_assert_msg(strstr(r.why, "signal 6"), "%s", r.why);
    ck_assert_int_eq(eval1(ev, 3, f.ok, 0, true).status, SR_OK);
    sr_gpu_stats st;
    sr_gpu_get_stats(ev, &st);
    ck_assert_uint_eq(st.restarts, 1);
    ev->ops->free(ev);
    fx_fini(&f);
}
END_TEST

START_TEST(gpu_kernels_come_from_the_disk_cache)
{
    fx f;
    fx_init(&f);
    char dir[128];
    snprintf(dir, sizeof dir, "/tmp/lm_srg_cache_%d", (int)getpid());
    sr_gpu_stats a, b;
    sr_evaluator *ev = pool(&f, 1, dir);
    ck_assert_int_eq(eval1(ev, 1, f.ok, 0, false).status, SR_OK);
    sr_gpu_get_stats(ev, &a);
    ev->ops->free(ev);
    ev = pool(&f, 1, dir); /* fresh workers, a fresh context */
    ck_assert_int_eq(eval1(ev, 2, f.ok, 0, false).status, SR_OK);
    sr_gpu_get_stats(ev, &b);
    ev->ops->free(ev);
    printf("disk cache: first pool compiled %llu, read %llu; second compiled %llu, read %llu\n",
           (unsigned long long)a.compiled, (unsigned long long)a.disk_hits,
           (unsigned long long)b.compiled, (unsigned long long)b.disk_hits);
    ck_assert_uint_gt(a.compiled, 0);
    ck_assert_uint_eq(a.disk_hits, 0);
    ck_assert_uint_eq(b.compiled, 0);
    ck_assert_uint_eq(b.disk_hits, a.compiled);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    fx_fini(&f);
}
END_TEST

START_TEST(one_visible_device_one_worker_and_all_gpus_used)
{
    lm_err e = {0};
    int n = sr_gpu_count(&e);
    ck_assert_int_gt(n, 0);
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    ck_assert_int_eq(sr_gpu_count(&e), 1);
    fx f;
    fx_init(&f);
    sr_evaluator *ev = pool(&f, 0, "");
    ck_assert_uint_eq(ev->ops->slots(ev), 1);
    sr_result r = eval1(ev, 1, f.ok, 0, true);
    ck_assert_msg(r.status == SR_OK && r.gpu == 0, "%s", r.why);
    ev->ops->free(ev);
    unsetenv("CUDA_VISIBLE_DEVICES");
    ev = pool(&f, 0, "");
    uint32_t slots = ev->ops->slots(ev);
    ck_assert_uint_eq(slots, (uint32_t)n);
    bool on[SR_GPU_MAX_WORKERS] = {0};
    uint32_t sent = 0, got = 0, total = 3 * slots;
    while (got < total) {
        while (sent < total && sent - got < slots) {
            sr_candidate c = {
                .id = sent, .llir = f.ok, .plan = NULL, .cutoff_ms = 0, .check = false};
            ck_assert_msg(ev->ops->submit(ev, &c, &e) == 0, "%s", e.msg);
            sent++;
        }
        ck_assert_msg(ev->ops->next(ev, &r, &e) == 0, "%s", e.msg);
        ck_assert_msg(r.status == SR_OK, "%s", r.why);
        ck_assert(r.gpu >= 0 && r.gpu < (int)slots);
        printf("candidate %llu on gpu %d: %.4f ms\n", (unsigned long long)r.id, r.gpu, r.ms);
        on[r.gpu] = true;
        got++;
    }
    for (uint32_t i = 0; i < slots; i++)
        ck_assert_msg(on[i], "gpu %u measured nothing", i);
    no_cuda_here();
    ev->ops->free(ev);
    fx_fini(&f);
}
END_TEST

static Suite *gpu_suite(void)
{
    const char *src = getenv("SR_GPU_SOURCE");
    snprintf(data_dir, sizeof data_dir, "%s/tests/search_gpu/data",
             src && *src ? src : LUMINAL_SOURCE_DIR);
    driver = getenv("SR_GPU_DRIVER");
    if (!driver || !*driver) driver = SR_GPU_DRIVER;
    lm_err e = {0};
    int n = sr_gpu_count(&e);
    if (n <= 0) lm_check_skip("no GPU visible (%s)", n < 0 ? e.msg : "the driver counts none");
    if (access(driver, X_OK) != 0) lm_check_skip("no worker host at %s", driver);
    Suite *s = suite_create("search_gpu_device");
    TCase *t = tcase_create("gpu");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, gpu_candidates_are_measured);
    tcase_add_test(t, gpu_worker_crash_restarts);
    tcase_add_test(t, gpu_kernels_come_from_the_disk_cache);
    tcase_add_test(t, one_visible_device_one_worker_and_all_gpus_used);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {gpu_suite, NULL};
