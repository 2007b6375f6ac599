/* ll_mem.c - the llir module's one allocation door (see ll_int.h): a thin door over
 * base's counted door (base.h, "Memory"), so sizes are checked for overflow there, every
 * request is counted, and lm_mem_fail_after fails the n-th allocation of llir as of any
 * other module. */
#include "ll_int.h"

void *ll__alloc(size_t n, size_t size)
{
    return lm_alloc(n, size);
}

void *ll__zalloc(size_t n, size_t size)
{
    return lm_zalloc(n, size);
}

void *ll__realloc(void *p, size_t n, size_t size)
{
    return lm_realloc(p, n, size);
}

void ll__free(void *p)
{
    lm_free(p);
}

char *ll__strdup(const char *s)
{
    return lm_strdup(s);
}

int ll__grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    return lm_grow(arr, cap, need, size);
}
