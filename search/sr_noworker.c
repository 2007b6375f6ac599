/* sr_noworker.c - sr_worker_main in a build without the GPU evaluator (sr_gpu.c and
 * sr_worker.c are not in it): `luminal_search --worker` says so and fails. */
#include <stdio.h>

#include "search.h"

int sr_worker_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "luminal_search --worker: this build has no GPU evaluator "
                    "(search/sr_gpu.c, sr_worker.c)\n");
    return 2;
}
