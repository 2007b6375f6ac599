/* session.h - the compile session: the front half of the compiler in one call.
 *
 * A graph and the rules go in; the engine holding the encoded graph saturated with the
 * rules, the encoding and the search space come out:
 *
 *     hl_graph ──hl_graph_encode──► engine + encoding ──ll_saturate──► saturated
 *              e-graph ──ll_space_new_opts──► ll_space (the searchable classes)
 *
 * Every user of the front half (the search, luminal_search's --emit space and --fuzz,
 * the genome fuzzer, the benches, the tests) makes it here, so the limits the compiler
 * always runs the engine with (docs/architecture.md, "Out of memory"), the time limit and
 * the built-in rules are decided in one place.
 *
 * Limits. The engine is made with a node limit (CS_NODE_LIMIT unless the options say) and
 * a memory limit (half of lm_mem_available() unless they say): ll_sat_engine_options
 * puts them in the engine, which stops inside a phase that reaches one. A deadline (an
 * lm_now_s() time) bounds saturation, phase by phase and inside each phase (what is left
 * of it becomes ll_saturate's time limit), and the space build.
 *
 * The session owns everything it returns; the graph is borrowed and must outlive it. */
#ifndef LUMINAL_SESSION_H
#define LUMINAL_SESSION_H

#include "llir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CS_NODE_LIMIT 200000000ull /* rows: far beyond any graph's saturated e-graph */
#define CS_RULES_MAX_BYTES ((size_t)64 << 20) /* a rules file (rules.dsl is ~60 KB) */

/* How far cs_session_new got: the stage it failed in, or CS_DONE. */
typedef enum cs_stage {
    CS_STAGE_SETUP = 0, /* the options, the rules file, the engine */
    CS_STAGE_ENCODE,    /* hl_graph_encode */
    CS_STAGE_SATURATE,  /* ll_saturate: the rules text, the registry check, the phases */
    CS_STAGE_SPACE,     /* ll_space_new_opts */
    CS_DONE
} cs_stage;
const char *cs_stage_name(cs_stage s); /* "setup", "encode", "saturate", "space", "done" */

/* What the front half did, filled as far as it got, also on failure. */
typedef struct cs_report {
    cs_stage stage;        /* CS_DONE for a session made */
    bool time_up;          /* the deadline passed (the error is LM_ELIMIT) */
    ll_sat_report sat;     /* every phase that ran */
    double encode_seconds; /* the engine made and the graph encoded */
    double sat_seconds;    /* ll_saturate (loading the rules included) */
    double space_seconds;  /* ll_space_new_opts */
    uint64_t rows;         /* eg_node_count after saturation */
    uint64_t engine_peak;  /* eg_mem_peak after the space build (or where it stopped) */
    bool have_stats;       /* the space was built: stats holds its statistics */
    ll_space_stats stats;
} cs_report;

typedef struct cs_options {
    /* The rules: a file (read with lm_read_text, at most CS_RULES_MAX_BYTES, and named by
     * its path in messages), or a text, or, when both are NULL, the built-in rules
     * (cs_rules_builtin). Giving both is an error. */
    const char *rules_path;
    const char *rules_text;
    const char *rules_name; /* names rules_text in messages; NULL: "<rules>" */
    double deadline_s;      /* an lm_now_s() time past which saturation and the space
                               build stop with LM_ELIMIT (report.time_up); 0: none */
    uint64_t mem_limit;     /* the engine's counted bytes; 0: half of lm_mem_available() */
    uint64_t node_limit;    /* rows of the e-graph; 0: CS_NODE_LIMIT */
    FILE *log;              /* the engine's diagnostics and the saturation report
                               (ll_sat_report_fprint, also when saturation fails);
                               NULL: nothing */
    FILE *out;              /* the rules' own print commands; NULL: log (or nothing) */
    bool no_space;          /* stop after saturation: cs_session_space is NULL (for
                               callers that build spaces of their own from the engine) */
    bool skip_dtype_check;  /* TESTS ONLY (ll_space_opts.skip_dtype_check) */
    cs_report *report;      /* NULL: none; else filled as far as cs_session_new got */
} cs_options;

typedef struct cs_session cs_session;

/* Makes the engine (with the limits above), encodes g, saturates it with the rules and
 * builds the search space from the encoding's root. o may be NULL: the built-in rules,
 * the default limits, no deadline, silent. NULL with err set on failure: LM_EARG (no
 * graph, both rules_path and rules_text), the rules file's error (LM_EIO, LM_ELIMIT,
 * LM_EPARSE naming it), "encoding the graph: ..." (hlir's error), ll_saturate's error
 * (a rules text refused, located in it; LM_EVERIFY for a registry or phase table
 * mismatch; LM_ELIMIT naming the phase and the limit), LM_ELIMIT "the time limit ran out
 * ..." when the deadline passed, ll_space_new's error, LM_ENOMEM. */
cs_session *cs_session_new(const hl_graph *g, const cs_options *o, lm_err *err);
void cs_session_free(cs_session *s);

const hl_graph *cs_session_graph(const cs_session *s);
eg_engine *cs_session_engine(const cs_session *s);
const hl_encoding *cs_session_encoding(const cs_session *s);
/* The encoding's root class, canonical (eg_find) after saturation. */
eg_value cs_session_root(const cs_session *s);
/* The search space; NULL with cs_options.no_space. */
const ll_space *cs_session_space(const cs_session *s);
const cs_report *cs_session_report(const cs_session *s);
/* The rules' name in messages: the path, rules_name, "<rules>" or the built-in rules'
 * file (cs_rules_builtin_name). */
const char *cs_session_rules_name(const cs_session *s);

/* The built-in rules: rules.dsl at the repository root with the files of rules/ it includes,
 * embedded at build time (cmake/LmEmbed.cmake), and the file they came from relative to
 * the repository root. */
const char *cs_rules_builtin(void);
const char *cs_rules_builtin_name(void);

#endif /* LUMINAL_SESSION_H */
