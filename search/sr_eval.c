/* sr_eval.c - the names of the evaluators' results (sr_eval.h). */
#include "sr_int.h"

const char *sr_status_name(sr_status s)
{
    static const char *names[SR_STATUS_COUNT] = {"ok",        "compile-failed", "fault",
                                                 "nonfinite", "out-of-memory",  "too-slow",
                                                 "timeout",   "wrong",          "error"};
    return (unsigned)s < SR_STATUS_COUNT ? names[s] : "?";
}

const char *sr_reason_name(uint32_t i)
{
    return i < SR_STATUS_COUNT ? sr_status_name((sr_status)i) : NULL;
}

_Static_assert(SR_REASONS == SR_STATUS_COUNT, "search.h's SR_REASONS is sr_eval.h's count");
