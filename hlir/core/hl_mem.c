/* hl_mem.c - the hlir module's one allocation door (see hl_int.h): a thin door over
 * base's counted door (base.h, "Memory"), so sizes are checked for overflow there, every
 * request is counted, and lm_mem_fail_after fails the n-th allocation of hlir as of any
 * other module. */
#include "hl_int.h"

void *hl__alloc(size_t n, size_t size)
{
    return lm_alloc(n, size);
}

void *hl__zalloc(size_t n, size_t size)
{
    return lm_zalloc(n, size);
}

void *hl__realloc(void *p, size_t n, size_t size)
{
    return lm_realloc(p, n, size);
}

void hl__free(void *p)
{
    lm_free(p);
}

char *hl__strdup(const char *s)
{
    return lm_strdup(s);
}

int hl__grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    return lm_grow(arr, cap, need, size);
}
