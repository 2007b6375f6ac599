/* eg_str.c: interned strings: one id per distinct byte string, found by its XXH3 hash in
 * an open-addressing index. */
#include "eg_int.h"

#include <string.h>
#include <xxhash.h>

/* Interns the n bytes at s, whose XXH3 hash is h. owned, when not NULL, is s itself, an
 * eg__marray block of n + 1 bytes the table then keeps (or frees, when the string is
 * already there): a string made by a primitive is not copied a second time. */
uint32_t eg__intern_hashed(eg_engine *e, const char *s, size_t n, uint64_t h, char *owned)
{
    if (e->str_nslots == 0 || (e->nstrs + 1) * 2 > e->str_nslots) {
        uint32_t ns = e->str_nslots ? e->str_nslots * 2 : 64;
        uint32_t *sl = eg__mcalloc(e, ns, sizeof *sl);
        for (uint32_t i = 0; i < e->nstrs; i++) {
            uint32_t j = (uint32_t)e->str_hash[i] & (ns - 1);
            while (sl[j])
                j = (j + 1) & (ns - 1);
            sl[j] = i + 1;
        }
        eg__mfree(e, e->str_slots);
        e->str_slots = sl;
        e->str_nslots = ns;
    }
    uint32_t j = (uint32_t)h & (e->str_nslots - 1);
    while (e->str_slots[j]) {
        uint32_t id = e->str_slots[j] - 1;
        if (e->str_hash[id] == h && e->str_len[id] == n && memcmp(e->strs[id], s, n) == 0) {
            if (owned) eg__mfree(e, owned);
            return id;
        }
        j = (j + 1) & (e->str_nslots - 1);
    }
    if (e->nstrs + 1 > e->capstrs) { /* the arrays grow before any is used */
        uint32_t nc = e->capstrs ? e->capstrs * 2 : 64;
        e->str_hash = eg__marray(e, e->str_hash, nc, sizeof *e->str_hash);
        e->str_len = eg__marray(e, e->str_len, nc, sizeof *e->str_len);
        e->strs = eg__marray(e, e->strs, nc, sizeof *e->strs);
        e->capstrs = nc;
    }
    e->strs[e->nstrs] = owned ? owned : eg__mstrndup(e, s, n);
    e->str_hash[e->nstrs] = h;
    e->str_len[e->nstrs] = n;
    e->str_slots[j] = e->nstrs + 1;
    return e->nstrs++;
}

uint32_t eg__intern(eg_engine *e, const char *s, size_t n)
{
    return eg__intern_hashed(e, s, n, XXH3_64bits(s, n), NULL);
}

size_t eg__str_len(const eg_engine *e, uint32_t id)
{
    return id < e->nstrs ? e->str_len[id] : 0;
}

const char *eg__str(const eg_engine *e, uint32_t id)
{
    return id < e->nstrs ? e->strs[id] : "";
}
