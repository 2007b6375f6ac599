/* test_main.c: runs every suite of the engine's unit tests. */
#include <stdlib.h>

#include "test_eg.h"

int main(void)
{
    SRunner *sr = srunner_create(core_suite());
    srunner_add_suite(sr, join_suite());
    srunner_add_suite(sr, errors_suite());
    srunner_add_suite(sr, api_suite());
    srunner_add_suite(sr, schedule_suite());
    srunner_add_suite(sr, rebuild_suite());
    srunner_add_suite(sr, oom_suite());
    srunner_add_suite(sr, lang_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
