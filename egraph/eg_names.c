/* eg_names.c: finding sorts, tables, globals and rulesets by name; tables and globals
 * through lazily built hash indexes. */
#include "eg_int.h"

#include <string.h>
#include <xxhash.h>

/* A hash index from names to dense indexes (tables, globals). Entries are only ever
 * appended to what it indexes, except by pop, which resets it; so the index catches up
 * lazily on lookup by adding the entries it has not seen. A later entry with the same
 * name replaces an earlier one (the newest definition wins). */
typedef struct name_map {
    uint32_t *slots; /* index + 1, 0 = empty */
    uint32_t nslots, nindexed;
} name_map;

int32_t eg__sort_find(const eg_engine *e, const char *name)
{
    for (uint32_t i = 0; i < e->nsorts; i++)
        if (strcmp(e->sorts[i].name, name) == 0) return (int32_t)i;
    return -1;
}

typedef const char *(*name_of_fn)(const eg_engine *e, uint32_t i);

static const char *table_name_of(const eg_engine *e, uint32_t i)
{
    return e->tables[i].name;
}

static const char *global_name_of(const eg_engine *e, uint32_t i)
{
    return e->globals[i].name;
}

static void map_put(name_map *m, const eg_engine *e, name_of_fn name_of, uint32_t i)
{
    const char *nm = name_of(e, i);
    uint32_t j = (uint32_t)XXH3_64bits(nm, strlen(nm)) & (m->nslots - 1);
    while (m->slots[j] && strcmp(name_of(e, m->slots[j] - 1), nm) != 0)
        j = (j + 1) & (m->nslots - 1);
    m->slots[j] = i + 1;
}

/* The index is only an optimisation: when it cannot grow (out of memory), names are
 * found by a linear scan instead, newest first as the index would. */
static int32_t map_find(name_map *m, const eg_engine *e, name_of_fn name_of, uint32_t count,
                        const char *name)
{
    if (!m) return -1;
    if (m->nindexed > count) m->nindexed = 0, memset(m->slots, 0, m->nslots * sizeof(uint32_t));
    if (m->nindexed < count) {
        if ((uint64_t)count * 2 > m->nslots) {
            uint32_t ns = m->nslots ? m->nslots : 64;
            while ((uint64_t)count * 2 > ns)
                ns *= 2;
            /* the engine is const to readers; only the lazily built index changes */
            uint32_t *sl = e->failed ? NULL : eg__try_calloc((eg_engine *)e, ns, sizeof(uint32_t));
            if (!sl) {
                for (uint32_t i = count; i-- > 0;)
                    if (strcmp(name_of(e, i), name) == 0) return (int32_t)i;
                return -1;
            }
            eg__free(m->slots);
            m->slots = sl;
            m->nslots = ns;
            m->nindexed = 0;
        }
        while (m->nindexed < count)
            map_put(m, e, name_of, m->nindexed++);
    }
    if (!m->nslots) return -1;
    uint32_t j = (uint32_t)XXH3_64bits(name, strlen(name)) & (m->nslots - 1);
    while (m->slots[j]) {
        uint32_t i = m->slots[j] - 1;
        if (strcmp(name_of(e, i), name) == 0) return (int32_t)i;
        j = (j + 1) & (m->nslots - 1);
    }
    return -1;
}

void eg__names_new(eg_engine *e)
{
    e->tmap = eg__calloc(e, 1, sizeof(name_map));
    e->gmap = eg__calloc(e, 1, sizeof(name_map));
}

void eg__names_free(eg_engine *e)
{
    if (e->tmap) eg__free(e->tmap->slots);
    eg__free(e->tmap);
    if (e->gmap) eg__free(e->gmap->slots);
    eg__free(e->gmap);
    e->tmap = e->gmap = NULL;
}

void eg__names_reset(eg_engine *e)
{
    if (!e->tmap || !e->gmap) return;
    e->tmap->nindexed = 0;
    e->gmap->nindexed = 0;
    if (e->tmap->nslots) memset(e->tmap->slots, 0, e->tmap->nslots * sizeof(uint32_t));
    if (e->gmap->nslots) memset(e->gmap->slots, 0, e->gmap->nslots * sizeof(uint32_t));
}

int32_t eg__table_find(const eg_engine *e, const char *name)
{
    return map_find(e->tmap, e, table_name_of, e->ntables, name);
}

int32_t eg__global_find(const eg_engine *e, const char *name)
{
    return map_find(e->gmap, e, global_name_of, e->nglobals, name);
}

int32_t eg__ruleset_find(const eg_engine *e, const char *name)
{
    for (uint32_t i = 0; i < e->nrulesets; i++)
        if (strcmp(e->rulesets[i].name, name) == 0) return (int32_t)i;
    return -1;
}
