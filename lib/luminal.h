/* luminal.h - the compiler as a library: a graph file in, a compiled program out, in this
 * process (no subprocess but the GPU evaluator's workers).
 *
 * The installed library (libluminal.so / libluminal.a, `cmake --install`, docs/python.md
 * "The C library") holds the engine (egraph.h), the compiler (search.h) and the program
 * runtime (program.h); this header adds what an embedder of the compiler needs beside
 * them: the built-in rules, which the `luminal_search` binary embeds, and one call that
 * does what `luminal_search --graph G --out DIR` does.
 *
 *     luminal_compile_options o;
 *     luminal_compile_options_default(&o);
 *     o.limit = 20;
 *     lm_err err = {0};
 *     char *summary = NULL;
 *     if (luminal_compile("g.json", "out", &o, &summary, &err) != 0) ... err.msg ...
 *     // out/program is a program directory: pg_program_load("out/program", ...)
 *     luminal_free(summary);
 *
 * Errors come back through base's lm_err (sticky, the first error wins, the message
 * begins with where: the graph file's line and column and node for a graph the reader
 * refuses). The Python package (python/, luminal_c) binds this header and program.h with
 * ctypes, so every type here is plain C (no bitfields, no unions).
 */
#ifndef LUMINAL_LUMINAL_H
#define LUMINAL_LUMINAL_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The compiler's version, "MAJOR.MINOR.PATCH" (the project's version in CMakeLists.txt).
 * A program saved by one version is refused by another (pg_program_load). */
const char *luminal_version(void);

/* sizeof(lm_err), so that a binding that lays the record out itself can check it. */
size_t luminal_err_size(void);

/* The built-in rules (rules.dsl with the files it includes, embedded at build time), as
 * `luminal_search` uses them, and their name in messages. */
const char *luminal_rules_builtin(void);
const char *luminal_rules_builtin_name(void);

/* The evaluators (search.h's sr_eval_kind, by value). */
#define LUMINAL_EVAL_AUTO 0       /* the GPU workers when a GPU is visible, else the cost model */
#define LUMINAL_EVAL_COST_MODEL 1 /* the analytic cost model: modelled, not measured */
#define LUMINAL_EVAL_GPU 2        /* the GPU workers, or an error */

/* Zero-initialised options are not the defaults: call luminal_compile_options_default. */
typedef struct luminal_compile_options {
    uint64_t limit;          /* candidates measured, at most (search.h; default 20) */
    uint64_t seed;           /* the search's seed (0) */
    double time_limit_s;     /* the search's wall-clock limit (600; 0: none) */
    int32_t evaluator;       /* LUMINAL_EVAL_* (AUTO) */
    int32_t quiet;           /* nonzero: no progress on stderr (0: phases, candidates and
                                the best so far, as `luminal_search` prints them) */
    const char *rules_path;  /* a rules file instead of the built-in rules (NULL) */
    const char *worker_exe;  /* the GPU workers' executable, started as `EXE --worker ...`
                                (`luminal_search` is one); NULL: $LUMINAL_WORKER_EXE, else
                                this process's executable, which must then handle
                                --worker (sr_worker_main) */
} luminal_compile_options;

void luminal_compile_options_default(luminal_compile_options *o);

/* Compiles the graph file graph_path (docs/graph-json.md) into out_dir, as
 * `luminal_search --graph graph_path --out out_dir` does: out_dir/program (load it with
 * pg_program_load), out_dir/graph.json, out_dir/search.jsonl and out_dir/report.html. The
 * dims are measured at their profile values. When summary_json is not NULL it receives
 * the search's summary (`luminal_search --json`'s object; free it with luminal_free), also
 * when the search ran but failed, if any candidate was evaluated. 0, or an lm_code with
 * err set: the graph refused (located), the rules refused, no evaluator, no candidate
 * with a time (search.h, sr_search_run). */
int luminal_compile(const char *graph_path, const char *out_dir, const luminal_compile_options *o,
                    char **summary_json, lm_err *err);

/* Frees what this library handed over (summary_json). Accepts NULL. */
void luminal_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_LUMINAL_H */
