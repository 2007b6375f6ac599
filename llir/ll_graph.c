/* ll_graph.c - the LLIR graph type (ll_int.h gives its layout): freeing it, its origin
 * table and the read accessors of llir.h. Graphs are made by ll_build.c's builder (the
 * LLIR file's reader, the HLIR lowering, binary LLIR), by ll_from_genome.c and by
 * ll_copy.c. */
#include "ll_int.h"

void ll_graph_free(ll_graph *g)
{
    if (!g) return;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        ll__free(g->nodes[i].prim.name);
    ll__free(g->nodes);
    ll__free(g->dims);
    ll__free(g->inputs);
    ll__free(g->outputs);
    for (uint32_t i = 0; i < g->n_origins; i++)
        ll__free(g->origins[i]);
    ll__free(g->origins);
    hl_expr_pool_free(g->pool);
    ll__free(g);
}

uint32_t ll__graph_intern_origin(ll_graph *g, const char *name)
{
    for (uint32_t i = 0; i < g->n_origins; i++)
        if (strcmp(g->origins[i], name) == 0) return i;
    if (g->n_origins == UINT32_MAX - 1 ||
        ll__grow((void **)&g->origins, &g->cap_origins, g->n_origins + 1, sizeof(char *)))
        return LM_NONE;
    char *c = ll__strdup(name);
    if (!c) return LM_NONE;
    g->origins[g->n_origins] = c;
    return g->n_origins++;
}

const char *ll_graph_origin(const ll_graph *g, uint32_t origin)
{
    if (!g || origin >= g->n_origins) return "origin unknown";
    return g->origins[origin];
}

const hl_expr_pool *ll_graph_exprs(const ll_graph *g)
{
    return g->pool;
}

uint32_t ll_graph_dim_count(const ll_graph *g)
{
    return g->n_dims;
}

const hl_dim *ll_graph_dim_at(const ll_graph *g, uint32_t i)
{
    return i < g->n_dims ? &g->dims[i] : NULL;
}

const char *ll_graph_dim_name(const ll_graph *g, uint32_t i)
{
    return i < g->n_dims ? hl_var_name(g->pool, g->dims[i].var) : NULL;
}

uint32_t ll_graph_node_count(const ll_graph *g)
{
    return g->n_nodes;
}

const ll_node *ll_graph_node(const ll_graph *g, uint32_t id)
{
    return id < g->n_nodes ? &g->nodes[id] : NULL;
}

uint32_t ll_graph_input_count(const ll_graph *g)
{
    return g->n_inputs;
}

uint32_t ll_graph_input(const ll_graph *g, uint32_t i)
{
    return i < g->n_inputs ? g->inputs[i] : LM_NONE;
}

uint32_t ll_graph_output_count(const ll_graph *g)
{
    return g->n_outputs;
}

uint32_t ll_graph_output(const ll_graph *g, uint32_t i)
{
    return i < g->n_outputs ? g->outputs[i] : LM_NONE;
}
