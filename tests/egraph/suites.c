/* suites.c: the suites of egraph_unit, in running order (main() is tests/common's). */
#include "test_eg.h"

const lm_suite_fn lm_check_suites[] = {core_suite,     join_suite,    errors_suite, api_suite,
                                       schedule_suite, rebuild_suite, oom_suite,
                                       lang_suite,     cont_suite,   NULL};
