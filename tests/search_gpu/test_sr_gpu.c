/* test_sr_gpu.c - the GPU evaluator's protocol on CPU workers (label unit): the pool is
 * sr_gpu_new with backend_cpu, whose workers (sr_gpu_driver --worker) run programs on
 * llir's executor and time them by the wall clock, so every path but the GPU's own is
 * exercised here: results and their fields, NaN detection, the check against the
 * reference, the memory budget, the cutoff, a crash (the test hook) and a kill restarted,
 * a hung candidate timed out, two workers at once, the devices the workers get from
 * CUDA_VISIBLE_DEVICES, the GPU count without a CUDA context, and no process left behind.
 * Candidates are the LLIR reference lowerings (ll_graph_from_hlir) of small graphs in
 * data/ with the IO of data/sqrt.json, the setup's graph. */
#include "lm_check.h"
#include "search.h"
#include "sr_gpu.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DATA LUMINAL_SOURCE_DIR "/tests/search_gpu/data/"

typedef struct fx {
    hl_graph *h; /* the setup's graph: sqrt.json */
    int64_t dims[1];
    sr_eval_setup setup;
    ll_graph *ok, *nan, *wrong, *big;
    char *log_text;
    size_t log_len;
    FILE *log;
} fx;

static ll_graph *lower(const char *file)
{
    lm_err e = {0};
    hl_graph *h = hl_graph_load_json(file, &e);
    ck_assert_msg(h, "%s", e.msg);
    ll_graph *g = ll_graph_from_hlir(h, &e);
    ck_assert_msg(g, "%s", e.msg);
    hl_graph_free(h);
    return g;
}

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    lm_err e = {0};
    f->h = hl_graph_load_json(DATA "sqrt.json", &e);
    ck_assert_msg(f->h, "%s", e.msg);
    f->dims[0] = 37;
    /* no path: the workers get the graph itself in their setup, never read a file */
    f->setup = (sr_eval_setup){f->h, NULL, f->dims, 5};
    f->ok = lower(DATA "sqrt.json");
    f->nan = lower(DATA "nan.json");
    f->wrong = lower(DATA "wrong.json");
    f->big = lower(DATA "big.json");
    f->log = open_memstream(&f->log_text, &f->log_len);
    ck_assert_ptr_nonnull(f->log);
}

static void fx_fini(fx *f)
{
    ll_graph_free(f->ok);
    ll_graph_free(f->nan);
    ll_graph_free(f->wrong);
    ll_graph_free(f->big);
    hl_graph_free(f->h);
    fclose(f->log);
    free(f->log_text);
}

static sr_evaluator *pool(fx *f, uint32_t workers, void (*tune)(sr_gpu_opts *))
{
    sr_gpu_opts o;
    sr_gpu_opts_default(&o);
    o.worker_exe = SR_GPU_DRIVER;
    o.backend_cpu = true;
    o.workers = workers;
    o.trials = 5;
    o.warmup = 1;
    o.cache_dir = "";
    o.log = f->log;
    if (tune) tune(&o);
    lm_err e = {0};
    sr_evaluator *ev = sr_gpu_new(&f->setup, &o, &e);
    ck_assert_msg(ev, "%s", e.msg);
    ck_assert_str_eq(ev->ops->name, "gpu");
    ck_assert(ev->ops->measured);
    ck_assert_uint_eq(ev->ops->slots(ev), workers ? workers : 1);
    return ev;
}

/* One candidate through the pool, waited for. */
static sr_result eval1(sr_evaluator *ev, uint64_t id, const ll_graph *g, double cutoff, bool check)
{
    sr_candidate c = {.id = id, .llir = g, .plan = NULL, .cutoff_ms = cutoff, .check = check};
    lm_err e = {0};
    ck_assert_msg(ev->ops->submit(ev, &c, &e) == 0, "%s", e.msg);
    sr_result r;
    ck_assert_msg(ev->ops->next(ev, &r, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(r.id, id);
    return r;
}

/* Waits (up to 5 s) until process pid has ended (a zombie, not reaped: the evaluator
 * reaps its own workers). */
static void wait_ended(int pid)
{
    char path[64], st[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "r");
        if (!f) return;
        size_t n = fread(st, 1, sizeof st - 1, f);
        fclose(f);
        st[n] = '\0';
        const char *close_paren = strrchr(st, ')');
        if (close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z') return;
        usleep(10 * 1000);
    }
    ck_abort_msg("process %d did not end", pid);
}

/* Every child of this process has been reaped. */
static void no_children(void)
{
    errno = 0;
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
    ck_assert_int_eq(errno, ECHILD);
}

START_TEST(worker_devices_follow_cuda_visible_devices)
{
    char d[64];
    ck_assert_int_eq(sr_gpu__worker_device(NULL, 0, 1, d, sizeof d), 0);
    ck_assert_str_eq(d, "0");
    ck_assert_int_eq(sr_gpu__worker_device(NULL, 2, 3, d, sizeof d), 0);
    ck_assert_str_eq(d, "2");
    /* one device visible: the one worker gets exactly it */
    ck_assert_int_eq(sr_gpu__worker_device("3", 0, 1, d, sizeof d), 0);
    ck_assert_str_eq(d, "3");
    ck_assert_int_eq(sr_gpu__worker_device("2,5", 1, 2, d, sizeof d), 0);
    ck_assert_str_eq(d, "5");
    ck_assert_int_eq(sr_gpu__worker_device("GPU-1a2b, 7", 0, 2, d, sizeof d), 0);
    ck_assert_str_eq(d, "GPU-1a2b");
    ck_assert_int_eq(sr_gpu__worker_device("GPU-1a2b, 7", 1, 2, d, sizeof d), 0);
    ck_assert_str_eq(d, "7");
    ck_assert_int_eq(sr_gpu__worker_device("3", 1, 2, d, sizeof d), LM_EARG);
    ck_assert_int_eq(sr_gpu__worker_device("3,4", 2, 2, d, sizeof d), LM_EARG);
    ck_assert_int_eq(sr_gpu__worker_device("1,,2", 1, 3, d, sizeof d), LM_EARG);
    ck_assert_int_eq(sr_gpu__worker_device("123456", 0, 1, d, 4), LM_EARG);
}
END_TEST

/* Counting opens no CUDA context here; CUDA_VISIBLE_DEVICES="" hides every device. */
START_TEST(gpus_are_counted_in_a_child)
{
    lm_err e = {0};
    int n = sr_gpu_count(&e);
    ck_assert_msg(n >= 0, "%s", e.msg);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    ck_assert_int_eq(sr_gpu_count(&e), 0);
    unsetenv("CUDA_VISIBLE_DEVICES");
    FILE *maps = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(maps);
    char line[1024];
    bool cuda = false;
    while (fgets(line, sizeof line, maps))
        cuda |= strstr(line, "libcuda.so") != NULL;
    fclose(maps);
    ck_assert_msg(!cuda, "libcuda is mapped in the process that counted");
    no_children();
    /* without a GPU (and not backend_cpu) the evaluator says so */
    if (n == 0) {
        fx f;
        fx_init(&f);
        sr_gpu_opts o;
        sr_gpu_opts_default(&o);
        o.worker_exe = SR_GPU_DRIVER;
        ck_assert_ptr_null(sr_gpu_new(&f.setup, &o, &e));
        ck_assert_int_eq(e.code, LM_ENODEV);
        ck_assert_ptr_nonnull(strstr(e.msg, "no CUDA device"));
        fx_fini(&f);
    }
}
END_TEST

START_TEST(results_nan_check_budget_cutoff)
{
    fx f;
    fx_init(&f);
    sr_evaluator *ev = pool(&f, 1, NULL);
    lm_err e = {0};
    sr_result r;
    ck_assert_int_eq(ev->ops->next(ev, &r, &e), LM_EARG); /* none in flight */
    ck_assert_int_eq(e.code, 0);

    r = eval1(ev, 11, f.ok, 0, true);
    ck_assert_msg(r.status == SR_OK, "%d: %s", r.status, r.why);
    ck_assert(r.checked);
    ck_assert(r.ms > 0 && r.ms < 1000);
    ck_assert_uint_eq(r.trials, 5);
    ck_assert_int_eq(r.gpu, 0);
    ck_assert(r.compile_s >= 0);
    ck_assert_str_eq(r.why, "");

    r = eval1(ev, 12, f.nan, 0, false);
    ck_assert_int_eq(r.status, SR_NONFINITE);
    ck_assert_msg(strstr(r.why, "NaN") && strstr(r.why, "output 'y' element 0"), "%s", r.why);

    r = eval1(ev, 13, f.wrong, 0, true);
    ck_assert_int_eq(r.status, SR_WRONG);
    ck_assert(r.checked);
    ck_assert_msg(strstr(r.why, "'y'"), "%s", r.why);

    r = eval1(ev, 14, f.wrong, 0, false); /* unchecked, it is only timed */
    ck_assert_msg(r.status == SR_OK, "%s", r.why);
    ck_assert(!r.checked);

    r = eval1(ev, 15, f.ok, 1e-9, false); /* the cutoff stops it after the probe */
    ck_assert_int_eq(r.status, SR_TOO_SLOW);
    ck_assert_uint_eq(r.trials, 3);
    ck_assert(r.ms > 1e-9);
    ck_assert_msg(strstr(r.why, "cutoff"), "%s", r.why);

    r = eval1(ev, 16, f.ok, 1e6, false); /* a cutoff it beats */
    ck_assert_msg(r.status == SR_OK, "%s", r.why);
    ck_assert_uint_eq(r.trials, 5);

    sr_gpu_stats st;
    sr_gpu_get_stats(ev, &st);
    ck_assert_uint_eq(st.submitted, 6);
    ck_assert_uint_eq(st.restarts, 0);
    ck_assert_uint_eq(st.deaths, 0);
    ev->ops->free(ev);
    no_children();
    fx_fini(&f);
}
END_TEST

static void small_budget(sr_gpu_opts *o)
{
    o->mem_budget = 2000; /* sqrt's plan: 2 * 37 * 4 bytes; big's [37, 37] f32: 5476 */
}

START_TEST(the_memory_budget_refuses_big_plans)
{
    fx f;
    fx_init(&f);
    sr_evaluator *ev = pool(&f, 1, small_budget);
    sr_result r = eval1(ev, 1, f.big, 0, false);
    ck_assert_msg(r.status == SR_OUT_OF_MEMORY, "%d: %s", r.status, r.why);
    ck_assert_msg(strstr(r.why, "budget of 2000 bytes"), "%s", r.why);
    r = eval1(ev, 2, f.ok, 0, true);
    ck_assert_msg(r.status == SR_OK, "%s", r.why);
    ev->ops->free(ev);
    no_children();
    fx_fini(&f);
}
END_TEST

START_TEST(a_crashing_candidate_restarts_its_worker)
{
    fx f;
    fx_init(&f);
    setenv("LUMINAL_WORKER_TEST_CRASH", "2", 1);
    sr_evaluator *ev = pool(&f, 1, NULL);
    unsetenv("LUMINAL_WORKER_TEST_CRASH");
    int pid0 = sr_gpu_worker_pid(ev, 0);
    ck_assert_int_gt(pid0, 0);
    sr_result r = eval1(ev, 1, f.ok, 0, false);
    ck_assert_msg(r.status == SR_OK, "%s", r.why);
    r = eval1(ev, 2, f.ok, 0, false);
    ck_assert_int_eq(r.status, SR_FAULT);
    ck_assert_msg(strstr(r.why, "died") && strstr(r.why, "signal 6") &&
                      strstr(r.why, "stage compile"),
                  "%s", r.why);
    ck_assert_int_eq(sr_gpu_worker_pid(ev, 0), 0); /* reaped */
    r = eval1(ev, 3, f.ok, 0, true);
    ck_assert_msg(r.status == SR_OK && r.checked, "%s", r.why);
    int pid1 = sr_gpu_worker_pid(ev, 0);
    ck_assert_int_gt(pid1, 0);
    ck_assert_int_ne(pid1, pid0);
    sr_gpu_stats st;
    sr_gpu_get_stats(ev, &st);
    ck_assert_uint_eq(st.restarts, 1);
    ck_assert_uint_eq(st.deaths, 1);
    fflush(f.log);
    ck_assert_msg(strstr(f.log_text, "started again"), "%s", f.log_text);
    ev->ops->free(ev);
    no_children();
    fx_fini(&f);
}
END_TEST

static void short_timeout(sr_gpu_opts *o)
{
    o->timeout_s = 1.5;
}

START_TEST(a_hung_candidate_times_out)
{
    fx f;
    fx_init(&f);
    setenv("LUMINAL_WORKER_TEST_HANG", "1", 1);
    sr_evaluator *ev = pool(&f, 1, short_timeout);
    unsetenv("LUMINAL_WORKER_TEST_HANG");
    double t0 = lm_now_s();
    sr_result r = eval1(ev, 7, f.ok, 0, false);
    double took = lm_now_s() - t0;
    ck_assert_int_eq(r.status, SR_TIMEOUT);
    ck_assert_msg(strstr(r.why, "timeout of 1.5 s") && strstr(r.why, "killed"), "%s", r.why);
    ck_assert_msg(took >= 1.4 && took < 10, "%.2f s", took);
    r = eval1(ev, 8, f.ok, 0, false);
    ck_assert_msg(r.status == SR_OK, "%s", r.why);
    sr_gpu_stats st;
    sr_gpu_get_stats(ev, &st);
    ck_assert_uint_eq(st.timeouts, 1);
    ck_assert_uint_eq(st.restarts, 1);
    ev->ops->free(ev);
    no_children();
    fx_fini(&f);
}
END_TEST

START_TEST(killed_workers_are_restarted)
{
    fx f;
    fx_init(&f);
    setenv("LUMINAL_WORKER_TEST_HANG", "2", 1);
    sr_evaluator *ev = pool(&f, 1, NULL);
    unsetenv("LUMINAL_WORKER_TEST_HANG");
    /* killed while idle: the next candidate gets a fresh worker and is not blamed */
    int pid = sr_gpu_worker_pid(ev, 0);
    kill(pid, SIGKILL);
    wait_ended(pid);
    sr_result r = eval1(ev, 1, f.ok, 0, false);
    ck_assert_msg(r.status == SR_OK, "%s", r.why);
    /* killed while running (hung by the hook): its candidate is a fault */
    sr_candidate c = {.id = 2, .llir = f.ok, .plan = NULL, .cutoff_ms = 0, .check = false};
    lm_err e = {0};
    ck_assert_int_eq(ev->ops->submit(ev, &c, &e), 0);
    usleep(300 * 1000);
    kill(sr_gpu_worker_pid(ev, 0), SIGKILL);
    ck_assert_int_eq(ev->ops->next(ev, &r, &e), 0);
    ck_assert_uint_eq(r.id, 2);
    ck_assert_int_eq(r.status, SR_FAULT);
    ck_assert_msg(strstr(r.why, "signal 9"), "%s", r.why);
    r = eval1(ev, 3, f.ok, 0, false);
    ck_assert_msg(r.status == SR_OK, "%s", r.why);
    sr_gpu_stats st;
    sr_gpu_get_stats(ev, &st);
    ck_assert_uint_eq(st.deaths, 2);
    ck_assert_uint_eq(st.restarts, 2);
    ev->ops->free(ev);
    no_children();
    fx_fini(&f);
}
END_TEST

START_TEST(two_workers_measure_at_once)
{
    fx f;
    fx_init(&f);
    setenv("CUDA_VISIBLE_DEVICES", "4,6", 1);
    sr_evaluator *ev = pool(&f, 2, NULL);
    unsetenv("CUDA_VISIBLE_DEVICES");
    fflush(f.log);
    ck_assert_msg(strstr(f.log_text, "worker 0 started") &&
                      strstr(f.log_text, "CUDA_VISIBLE_DEVICES=4)") &&
                      strstr(f.log_text, "CUDA_VISIBLE_DEVICES=6)"),
                  "%s", f.log_text);
    lm_err e = {0};
    bool seen[8] = {0}, on[2] = {0};
    uint32_t sent = 0, got = 0;
    while (got < 8) {
        while (sent < 8 && sent - got < 2) {
            sr_candidate c = {.id = sent,
                              .llir = sent == 5 ? f.nan : f.ok,
                              .plan = NULL,
                              .cutoff_ms = 0,
                              .check = sent == 0};
            ck_assert_msg(ev->ops->submit(ev, &c, &e) == 0, "%s", e.msg);
            sent++;
        }
        /* both slots are taken: a third is refused */
        if (sent - got == 2) {
            sr_candidate c = {.id = 99, .llir = f.ok, .plan = NULL, .cutoff_ms = 0, .check = false};
            ck_assert_int_eq(ev->ops->submit(ev, &c, &e), LM_EARG);
            lm_err_clear(&e);
        }
        sr_result r;
        ck_assert_msg(ev->ops->next(ev, &r, &e) == 0, "%s", e.msg);
        ck_assert_uint_lt(r.id, 8);
        ck_assert(!seen[r.id]);
        seen[r.id] = true;
        ck_assert(r.gpu == 0 || r.gpu == 1);
        on[r.gpu] = true;
        ck_assert_int_eq(r.status, r.id == 5 ? SR_NONFINITE : SR_OK);
        if (r.id == 0) ck_assert(r.checked);
        got++;
    }
    ck_assert(on[0] && on[1]);
    ev->ops->free(ev);
    no_children();
    fx_fini(&f);
}
END_TEST

/* One device named: the pool is exactly one worker on it. */
START_TEST(one_visible_device_is_one_worker)
{
    fx f;
    fx_init(&f);
    setenv("CUDA_VISIBLE_DEVICES", "3", 1);
    sr_evaluator *ev = pool(&f, 0, NULL);
    unsetenv("CUDA_VISIBLE_DEVICES");
    ck_assert_uint_eq(ev->ops->slots(ev), 1);
    fflush(f.log);
    ck_assert_msg(strstr(f.log_text, "CUDA_VISIBLE_DEVICES=3)") && !strstr(f.log_text, "worker 1"),
                  "%s", f.log_text);
    sr_result r = eval1(ev, 1, f.ok, 0, true);
    ck_assert_msg(r.status == SR_OK && r.gpu == 0, "%s", r.why);
    ev->ops->free(ev);
    no_children();
    fx_fini(&f);
}
END_TEST

START_TEST(setup_failures_are_errors)
{
    fx f;
    fx_init(&f);
    sr_gpu_opts o;
    sr_gpu_opts_default(&o);
    o.worker_exe = SR_GPU_DRIVER;
    o.backend_cpu = true;
    o.cache_dir = "";
    lm_err e = {0};
    /* a dim outside the graph's range [1, 100000] */
    sr_eval_setup bad = f.setup;
    int64_t over[1] = {100001};
    bad.dims = over;
    ck_assert_ptr_null(sr_gpu_new(&bad, &o, &e));
    ck_assert_msg(strstr(e.msg, "refused the setup") && strstr(e.msg, "dim 'n' = 100001"),
                  "%s", e.msg);
    no_children();
    lm_err_clear(&e);
    o.worker_exe = DATA "no_such_program";
    ck_assert_ptr_null(sr_gpu_new(&f.setup, &o, &e));
    ck_assert_msg(e.code != 0 && strstr(e.msg, "no_such_program"), "%s", e.msg);
    no_children();
    fx_fini(&f);
}
END_TEST

static Suite *gpu_suite(void)
{
    Suite *s = suite_create("search_gpu");
    TCase *t = tcase_create("pool");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, worker_devices_follow_cuda_visible_devices);
    tcase_add_test(t, gpus_are_counted_in_a_child);
    tcase_add_test(t, results_nan_check_budget_cutoff);
    tcase_add_test(t, the_memory_budget_refuses_big_plans);
    tcase_add_test(t, a_crashing_candidate_restarts_its_worker);
    tcase_add_test(t, a_hung_candidate_times_out);
    tcase_add_test(t, killed_workers_are_restarted);
    tcase_add_test(t, two_workers_measure_at_once);
    tcase_add_test(t, one_visible_device_is_one_worker);
    tcase_add_test(t, setup_failures_are_errors);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {gpu_suite, NULL};
