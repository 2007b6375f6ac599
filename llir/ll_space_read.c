/* ll_space_read.c - the read accessors of a built search space (llir.h) and the dialect of
 * a choice. ll_space.c builds the space. */
#include "ll_int.h"

/* ==================================================================================
 * Accessors
 * ================================================================================== */

uint32_t ll_space_class_count(const ll_space *s)
{
    return s->ns;
}

uint32_t ll_space_choice_count(const ll_space *s, uint32_t cls)
{
    return cls < s->ns ? s->cstart[cls + 1] - s->cstart[cls] : 0;
}

ll_op ll_space_choice_op(const ll_space *s, uint32_t cls, uint32_t j)
{
    if (j >= ll_space_choice_count(s, cls)) return LL_OP_NONE;
    return s->cop[s->cstart[cls] + j];
}

uint32_t ll_space_class_eclass(const ll_space *s, uint32_t cls)
{
    return cls < s->ns ? s->scls[cls] : LM_NONE;
}

uint32_t ll_space_choice_node(const ll_space *s, uint32_t cls, uint32_t j)
{
    if (j >= ll_space_choice_count(s, cls)) return LM_NONE;
    return s->cnode[s->cstart[cls] + j];
}

uint32_t ll_space_choice_kids(const ll_space *s, uint32_t cls, uint32_t j, const uint32_t **kids)
{
    if (j >= ll_space_choice_count(s, cls)) {
        if (kids) *kids = NULL;
        return 0;
    }
    uint32_t c = s->cstart[cls] + j;
    if (kids) *kids = s->kids + s->kstart[c];
    return s->kstart[c + 1] - s->kstart[c];
}

uint32_t ll_space_root(const ll_space *s)
{
    return s->root_s;
}

bool ll_space_reachable(const ll_space *s, uint32_t cls)
{
    return cls < s->ns && s->reach[cls];
}

void ll_space_get_stats(const ll_space *s, ll_space_stats *out)
{
    *out = s->stats;
}

void ll_space_op_counts(const ll_space *s, uint32_t *counts)
{
    memcpy(counts, s->op_counts, ll_op_count() * sizeof(uint32_t));
}

ll_dialect ll__choice_dialect(const ll_space *s, uint32_t choice)
{
    ll_op op = s->cop[choice];
    return op == LL_OP_NONE ? LL_D_COUNT : ll_op_get(op)->dialect;
}
