/* suites_shared.c: the suites of egraph_shared, the engine's unit tests that read egglog's
 * programs in ../shared; skipped (exit 77) where those are missing. */
#include "test_eg.h"

const lm_suite_fn lm_check_suites[] = {errors_shared_suite, api_shared_suite, NULL};
