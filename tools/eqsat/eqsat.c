/* eqsat: runs a program in the rules language (the egglog subset) with the engine.
 *
 *   eqsat [--snapshot] [--stats] [--json] [--quiet] [--naive] [--node-limit N]
 *         [--iter-limit N] [--time-limit S] FILE
 *
 * Command output goes to stdout as egglog prints it; --snapshot prints only what the
 * conformance snapshots compare (print-size and extraction costs). --stats prints, after
 * the program, per-ruleset and per-rule times and matches, iterations, table sizes and
 * peak memory on stderr (--json: as one JSON object on stderr). When stderr is a terminal,
 * iterations and rows are shown as they run, unless --quiet. Errors are printed as
 * file:line:col: message, exit status 1. */
#include "egraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void usage(void)
{
    fprintf(stderr,
            "usage: eqsat [--snapshot] [--stats] [--json] [--quiet] [--naive] [--node-limit N]\n"
            "             [--iter-limit N] [--time-limit SECONDS] FILE\n");
}

int main(int argc, char **argv)
{
    eg_options o;
    eg_options_default(&o);
    int stats = 0, json = 0, quiet = 0;
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--snapshot") == 0)
            o.snapshot = 1;
        else if (strcmp(a, "--stats") == 0)
            stats = 1;
        else if (strcmp(a, "--naive") == 0)
            o.naive = 1;
        else if (strcmp(a, "--json") == 0)
            json = 1;
        else if (strcmp(a, "--quiet") == 0)
            quiet = 1;
        else if (strcmp(a, "--node-limit") == 0 && i + 1 < argc)
            o.node_limit = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--iter-limit") == 0 && i + 1 < argc)
            o.iter_limit = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--time-limit") == 0 && i + 1 < argc)
            o.time_limit_s = strtod(argv[++i], NULL);
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "eqsat: unknown option %s\n", a);
            usage();
            return 2;
        } else {
            file = a;
        }
    }
    if (!file) {
        usage();
        return 2;
    }
    o.progress = !quiet && !o.snapshot && isatty(STDERR_FILENO);
    eg_engine *e = eg_engine_new(&o);
    eg_error err;
    int rc = eg_run_file(e, file, &err);
    fflush(stdout);
    if (o.progress) fputc('\n', stderr);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    if (stats || json) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        if (json) {
            fprintf(stderr, "{\"peak_rss_kib\":%ld,\"stats\":", ru.ru_maxrss);
            eg_print_stats_json(e, stderr);
            fputs("}\n", stderr);
        } else {
            eg_print_stats(e, stderr);
            fprintf(stderr, "peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
        }
    }
    eg_engine_free(e);
    return rc ? 1 : 0;
}
