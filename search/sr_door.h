/* sr_door.h - search's one allocation door and one error door (docs/architecture.md,
 * "Conventions"); every file of search/ allocates and raises errors through these.
 *
 * The allocation door is base's counted allocator (base.h, "Memory"): sizes are checked
 * for overflow there, every request is counted, and the test hook lm_mem_fail_after
 * fails the n-th request of a whole search, whichever module makes it. Blocks may be
 * given back with free(). A NULL result is raised as LM_ENOMEM through sr__fail
 * (sr__oom), never an abort.
 */
#ifndef LUMINAL_SR_DOOR_H
#define LUMINAL_SR_DOOR_H

#include <stddef.h>

#include "base.h"

static inline void *sr__alloc(size_t n, size_t size)
{
    return lm_alloc(n, size);
}
static inline void *sr__zalloc(size_t n, size_t size)
{
    return lm_zalloc(n, size);
}
/* NULL on failure, and then p is untouched and still the caller's. */
static inline void *sr__realloc(void *p, size_t n, size_t size)
{
    return lm_realloc(p, n, size);
}
static inline char *sr__strdup(const char *s)
{
    return lm_strdup(s);
}
static inline void sr__free(void *p)
{
    lm_free(p);
}

/* The error door: every error search/ raises goes through here (one breakpoint catches
 * them all). loc (may be NULL) says where in an input the error is. Returns code. */
int sr__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* ll_graph_fingerprint of g into *fp; LM_ENOMEM (sr__oom) when it could not be computed:
 * llir returns the sentinel all-ones fingerprint, "a fingerprint nothing else can have",
 * when its scratch cannot be allocated. */
struct ll_graph;
struct ll_fingerprint;
int sr__fingerprint(const struct ll_graph *g, struct ll_fingerprint *fp, lm_err *err,
                    const char *who);
/* LM_ENOMEM: "WHO: out of memory" (who: "search", "gpu evaluator", "worker", ...). */
int sr__oom(lm_err *err, const char *who);

#endif /* LUMINAL_SR_DOOR_H */
