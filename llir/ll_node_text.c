/* ll_node_text.c - LLIR nodes in messages: the names of node kinds, a node's description
 * with its provenance ("llir node 7 (KAdd kernel, f32, e-class 31, rule 'fuse-add')"),
 * and ll__fail_node, which prefixes an error with it before the error door (ll__fail). */
#include "ll_int.h"

#include <stdio.h>

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

void ll__node_desc(const ll_graph *g, uint32_t id, char *buf, size_t cap)
{
    const ll_node *n = ll_graph_node(g, id);
    if (!n) {
        snprintf(buf, cap, "llir node %u (no such node)", id);
        return;
    }
    char prov[200];
    if (n->eclass == LM_NONE)
        snprintf(prov, sizeof prov, "from hlir");
    else if (n->origin == LM_NONE)
        snprintf(prov, sizeof prov, "e-class %u", n->eclass);
    else
        snprintf(prov, sizeof prov, "e-class %u, %s", n->eclass, ll_graph_origin(g, n->origin));
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
