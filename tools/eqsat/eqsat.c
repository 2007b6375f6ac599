/* eqsat: runs a program in the rules language (egglog's core language) with the engine.
 *
 *   eqsat [--snapshot] [--stats] [--json] [--quiet] [--naive] [--node-limit N]
 *         [--iter-limit N] [--time-limit S] [--mem-limit BYTES] FILE|-
 *
 * Command output goes to stdout as egglog prints it; --snapshot prints only what the
 * conformance snapshots compare (print-size and extraction costs). --stats prints, after
 * the program, per-ruleset and per-rule times and matches, iterations, table sizes and
 * peak memory on stderr (--json: as one JSON object on stderr). When stderr is a terminal,
 * iterations and rows are shown as they run, unless --quiet. A run or schedule stopped by
 * a limit says so on stderr and the program goes on. Errors are printed as
 * file:line:col: message, exit status 1; a directory or an unreadable file is an error. */
#include "egraph.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(EQSAT_MIMALLOC)
#include <mimalloc.h>
#endif

static const char usage_text[] =
    "usage: eqsat [options] FILE\n"
    "\n"
    "Runs a program in the rules language (egglog's core language, docs/egraph.md) and\n"
    "prints each command's output on stdout as egglog does. FILE '-' reads standard input.\n"
    "Errors go to stderr as file:line:col: message, with exit status 1 (also for a FILE\n"
    "that cannot be read or is a directory).\n"
    "\n"
    "  --snapshot          print only what egglog's conformance snapshots hold\n"
    "                      (print-size, extraction costs)\n"
    "  --stats             after the program, print per-ruleset and per-rule time and\n"
    "                      matches, iterations, table sizes and peak RSS on stderr\n"
    "  --json              the statistics as one JSON object on stderr\n"
    "  --quiet             no progress on stderr (shown only when stderr is a terminal)\n"
    "  --naive             match every rule against the whole database each iteration\n"
    "                      (the semi-naive evaluation's reference)\n"
    "  --node-limit N      stop runs once the tables hold N rows or more\n"
    "  --iter-limit N      stop runs once the whole program has run N iterations\n"
    "  --time-limit S      stop each run or run-schedule command after S seconds of\n"
    "                      wall time (the whole command, all its saturate and repeat loops)\n"
    "  --mem-limit BYTES   stop runs once the engine's tables, indexes and pools hold\n"
    "                      BYTES or more (suffix K, M or G: KiB, MiB, GiB; e.g. 512M)\n"
    "  (a run or run-schedule stopped by a limit says so on stderr, \"run stopped: ...\",\n"
    "  keeps the results so far, and the program goes on with its next command)\n"
    "  --help              this text\n";

static void usage(FILE *f)
{
    fputs(usage_text, f);
}

/* Parses a whole non-negative number for option opt; 0 and a message on bad text. */
static int parse_count(const char *opt, const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (text[0] == '-' || end == text || *end || errno) {
        fprintf(stderr, "eqsat: %s expects a whole number, got '%s'\n", opt, text);
        return 0;
    }
    *out = v;
    return 1;
}

/* Parses a byte count with an optional K, M or G suffix (powers of 1024). */
static int parse_bytes(const char *opt, const char *text, uint64_t *out)
{
    if (!lm_parse_bytes(text, out)) {
        fprintf(stderr,
                "eqsat: %s expects a whole number of bytes, optionally with K, M or G, got '%s'\n",
                opt, text);
        return 0;
    }
    return 1;
}

static int parse_seconds(const char *opt, const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !(v > 0)) {
        fprintf(stderr, "eqsat: %s expects a positive number of seconds, got '%s'\n", opt, text);
        return 0;
    }
    *out = v;
    return 1;
}

int main(int argc, char **argv)
{
#if defined(EQSAT_MIMALLOC)
    /* Freed memory goes back to the system at once rather than after mimalloc's delay,
     * whose timing made the peak resident set vary from run to run (math-microbenchmark:
     * 108 MiB, or 116 in one run of eight; 106 MiB every time with no delay, at the same
     * CPU time). The variable MIMALLOC_DECOMMIT_DELAY, when set, still decides. */
    if (!getenv("MIMALLOC_DECOMMIT_DELAY")) mi_option_set(mi_option_decommit_delay, 0);
#endif
    eg_options o;
    eg_options_default(&o);
    int stats = 0, json = 0, quiet = 0;
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--snapshot") == 0)
            o.snapshot = true;
        else if (strcmp(a, "--stats") == 0)
            stats = 1;
        else if (strcmp(a, "--naive") == 0)
            o.naive = true;
        else if (strcmp(a, "--json") == 0)
            json = 1;
        else if (strcmp(a, "--quiet") == 0)
            quiet = 1;
        else if (strcmp(a, "--node-limit") == 0 || strcmp(a, "--iter-limit") == 0 ||
                 strcmp(a, "--time-limit") == 0 || strcmp(a, "--mem-limit") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "eqsat: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            int ok = a[2] == 'n'   ? parse_count(a, v, &o.node_limit)
                     : a[2] == 'i' ? parse_count(a, v, &o.iter_limit)
                     : a[2] == 'm' ? parse_bytes(a, v, &o.mem_limit)
                                   : parse_seconds(a, v, &o.time_limit_s);
            if (!ok) return 2;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) { /* "-" alone is standard input */
            fprintf(stderr, "eqsat: unknown option %s (see eqsat --help)\n", a);
            return 2;
        } else if (file) {
            fprintf(stderr, "eqsat: one program at a time (got %s and %s)\n", file, a);
            return 2;
        } else {
            file = a;
        }
    }
    if (!file) {
        usage(stderr);
        return 2;
    }
    o.progress = !quiet && !o.snapshot && isatty(STDERR_FILENO);
    lm_err err = {0};
    eg_engine *e = eg_engine_new(&o, &err);
    if (!e) {
        fprintf(stderr, "eqsat: %s\n", err.msg);
        return 1;
    }
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
