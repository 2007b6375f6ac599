/* lm_check_main.c - the one main() of every Check test program (see lm_check.h). */
#include "lm_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#ifndef LUMINAL_SHARED_DIR
#error "LUMINAL_SHARED_DIR must be defined (cmake/Luminal.cmake does it)"
#endif

void lm_check_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("skip: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
    exit(LM_CHECK_SKIP);
}

void lm_check_require_dir(const char *path, const char *what)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        lm_check_skip("%s not found (%s); nothing checked", path, what);
}

const char *lm_check_shared_dir(void)
{
    const char *env = getenv("LUMINAL_SHARED_DIR");
    return env && *env ? env : LUMINAL_SHARED_DIR;
}

int main(void)
{
    SRunner *sr = NULL;
    for (const lm_suite_fn *make = lm_check_suites; *make; make++) {
        Suite *s = (*make)();
        if (!s) {
            fprintf(stderr, "lm_check: suite constructor %d returned NULL\n",
                    (int)(make - lm_check_suites));
            if (sr) srunner_free(sr);
            return EXIT_FAILURE;
        }
        if (sr)
            srunner_add_suite(sr, s);
        else
            sr = srunner_create(s);
    }
    if (!sr) {
        fprintf(stderr, "lm_check: the program registers no suite (lm_check_suites is empty)\n");
        return EXIT_FAILURE;
    }
    srunner_run_all(sr, CK_ENV);
    int ran = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (ran == 0) {
        fprintf(stderr, "lm_check: no test ran (CK_RUN_SUITE / CK_RUN_CASE match nothing?)\n");
        return EXIT_FAILURE;
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
