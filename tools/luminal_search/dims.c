/* dims.c - the dims luminal_search runs a graph at: the profile values (the search,
 * --reference) or small ones (--fuzz: fz_default_dims), then each --dim NAME=V. */
#include "fuzz.h"
#include "ls_int.h"

#include <stdio.h>

int ls_dims(const hl_graph *g, const ls_opts *o, bool small, int64_t *vals)
{
    if (small)
        fz_default_dims(g, vals);
    else
        for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
            vals[i] = hl_graph_dim_at(g, i)->profile;
    for (uint32_t k = 0; k < o->n_dims; k++) {
        const hl_dim *d = hl_graph_dim_find(g, o->dim_name[k]);
        if (!d) {
            fprintf(stderr, "luminal_search: --dim %s: the graph declares no dim of that name\n",
                    o->dim_name[k]);
            return -1;
        }
        if (o->dim_value[k] < d->lo || o->dim_value[k] > d->hi) {
            fprintf(stderr,
                    "luminal_search: --dim %s=%lld: outside the declared range [%lld, %lld]\n",
                    o->dim_name[k], (long long)o->dim_value[k], (long long)d->lo, (long long)d->hi);
            return -1;
        }
        for (uint32_t i = 0; i < hl_graph_dim_count(g); i++)
            if (hl_graph_dim_at(g, i) == d) vals[i] = o->dim_value[k];
    }
    return 0;
}
