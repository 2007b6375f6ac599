/* ll_door.c - llir's doors: every error of the module is raised through ll__fail, every
 * allocation goes through ll__alloc; and the names of ops and kinds for messages. */
#include "ll_priv.h"

#include <stdlib.h>
#include <string.h>

int ll__fail(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lm_err_setv(err, code, loc, fmt, ap);
    va_end(ap);
    return rc;
}

const char *ll__kind_name(ll_kind k)
{
    switch (k) {
    case LL_INPUT:
        return "input";
    case LL_OUTPUT:
        return "output";
    case LL_KERNEL:
        return "kernel";
    case LL_REGION:
        return "region";
    case LL_LIBRARY:
        return "library call";
    case LL_FUSED:
        return "fused";
    case LL_LOAD:
        return "load";
    }
    return "?";
}

const char *ll__op_name(ll_op op)
{
    if (op == LL_OP_NONE || op >= ll_op_count()) return "?";
    return ll_op_get(op)->name;
}

hl_op ll__op_prim(ll_op op)
{
    if (op == LL_OP_NONE || op >= ll_op_count()) return HL_OP_COUNT;
    return ll_op_get(op)->prim;
}

void ll__node_desc(const ll_graph *g, uint32_t id, char *buf, size_t cap)
{
    const ll_node *n = ll_graph_node(g, id);
    if (!n) {
        snprintf(buf, cap, "llir node %u (no such node)", id);
        return;
    }
    char prov[64];
    if (n->eclass == LM_NONE)
        snprintf(prov, sizeof prov, "from hlir");
    else if (n->origin == LM_NONE)
        snprintf(prov, sizeof prov, "e-class %u", n->eclass);
    else
        snprintf(prov, sizeof prov, "e-class %u, rule %u", n->eclass, n->origin);
    snprintf(buf, cap, "llir node %u (%s %s, %s, %s)", id, ll__op_name(n->op),
             ll__kind_name(n->kind), hl_dtype_name(n->dtype), prov);
}

int ll__fail_node(lm_err *err, int code, const ll_graph *g, uint32_t id, const char *fmt, ...)
{
    if (lm_err_is_set(err)) return err->code; /* the first error wins */
    char desc[160], msg[LM_ERR_MSG];
    ll__node_desc(g, id, desc, sizeof desc);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lm_loc loc = {0};
    loc.node_id = id;
    return ll__fail(err, code, &loc, "%s: %s", desc, msg);
}

/* Test hook (ll__mem_fail_after): when >= 0, how many more allocations succeed before
 * one fails; that one only fails. Thread-local; -1 (the default) disables it. */
static _Thread_local long fail_countdown = -1;
static _Thread_local bool fail_fired = false;

void ll__mem_fail_after(long n)
{
    fail_countdown = n;
    fail_fired = false;
}

bool ll__mem_fail_fired(void)
{
    return fail_fired;
}

static bool inject(void)
{
    if (fail_countdown < 0) return false;
    if (fail_countdown-- > 0) return false;
    fail_fired = true;
    return true;
}

void *ll__alloc(size_t n, size_t size)
{
    if (inject()) return NULL;
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    return malloc(bytes ? bytes : 1);
}

void *ll__zalloc(size_t n, size_t size)
{
    if (inject()) return NULL;
    if (size && n > SIZE_MAX / size) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void ll__free(void *p)
{
    free(p);
}
