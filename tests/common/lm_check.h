/* lm_check.h - what every Check test program shares: one main() (lm_check_main.c), the
 * way to skip a program that cannot run its checks, and where ../shared is.
 *
 * A test program defines its suites, in running order, in one NULL-terminated table:
 *
 *     static Suite *arena_suite(void)
 *     {
 *         Suite *s = suite_create("cuda_rt_arena");
 *         ...
 *         return s;
 *     }
 *     const lm_suite_fn lm_check_suites[] = {arena_suite, NULL};
 *
 * and is declared with lm_add_check_test (cmake/Luminal.cmake), which links the shared
 * main. main() calls every constructor, runs all the suites in one runner and exits 0
 * when every test passed; 1 when one failed, a constructor returned NULL or no test ran.
 * Check's environment works as usual: CK_FORK (ctest sets yes), CK_DEFAULT_TIMEOUT (ctest
 * sets 120 s; a test case may set its own with tcase_set_timeout), CK_VERBOSITY (silent,
 * minimal, normal (the default), verbose), CK_RUN_SUITE and CK_RUN_CASE (run one suite or
 * one test case).
 *
 * A program that cannot run its checks (no GPU, no NVRTC, no ../shared) is skipped, never
 * passed: a suite constructor calls lm_check_skip or lm_check_require_dir, which print
 * "skip: <why>" and end the program with LM_CHECK_SKIP (77) before any test runs;
 * lm_add_check_test registers every program with SKIP_RETURN_CODE 77, so ctest reports it
 * as skipped. Tests that need ../shared go in a program (or a suite of a program) of their
 * own for that reason: a single Check test cannot be skipped.
 */
#ifndef LM_CHECK_H
#define LM_CHECK_H

#include <check.h>

/* A suite constructor: builds one suite (never NULL; it may skip the program instead). */
typedef Suite *(*lm_suite_fn)(void);

/* Defined by each test program: its suite constructors in running order, then NULL. */
extern const lm_suite_fn lm_check_suites[];

/* ctest's skip code (SKIP_RETURN_CODE): the program ran no check. */
#define LM_CHECK_SKIP 77

/* Prints "skip: <why>" on stdout and exits with LM_CHECK_SKIP. For a suite constructor,
 * in the parent process, before anything runs. */
_Noreturn void lm_check_skip(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Skips the program (lm_check_skip) unless `path` is a folder; `what` says what the
 * folder holds ("egglog's conformance programs"). */
void lm_check_require_dir(const char *path, const char *what);

/* The folder of shared material beside the repository (conformance programs): the
 * environment's LUMINAL_SHARED_DIR when set and not empty, else the configured
 * LUMINAL_SHARED_DIR (cmake -DLUMINAL_SHARED_DIR=..., default ../shared). Never NULL. */
const char *lm_check_shared_dir(void);

#endif /* LM_CHECK_H */
