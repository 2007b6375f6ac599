/* eg_origin.c: provenance: the origin records rows point to (the API, a command, a
 * rule) and the file names that forms' locations borrow. */
#include "eg_int.h"

#include <string.h>

uint32_t eg__origin_new(eg_engine *e, eg_origin_kind kind, const sx *at, const char *name)
{
    EG_GROW(e, e->origins, e->caporigins, (size_t)e->norigins + 1);
    origin_rec *o = &e->origins[e->norigins];
    o->kind = kind;
    o->at = at;
    o->name = eg__strdup(e, name); /* the record counts only once complete */
    return e->norigins++;
}

uint32_t eg__origin_command(eg_engine *e)
{
    const char *h = e->cur_at ? eg__sx_head(e->cur_at) : NULL;
    e->cur_origin = eg__origin_new(e, EG_ORIGIN_COMMAND, e->cur_at, h ? h : "command");
    return e->cur_origin;
}

const char *eg__keep_file(eg_engine *e, const char *name)
{
    if (!name) name = "<input>";
    /* the same name again (eg_run_schedule in a loop) is kept once */
    if (e->nfiles && strcmp(e->files[e->nfiles - 1], name) == 0) return e->files[e->nfiles - 1];
    EG_GROW(e, e->files, e->capfiles, e->nfiles + 1);
    e->files[e->nfiles] = eg__strdup(e, name);
    return e->files[e->nfiles++];
}
