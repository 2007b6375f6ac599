/* eg_limit.c: the node, memory and time limits of a run, checked inside an iteration
 * (eg_int.h: eg__limits_hit, eg__limit_poll, eg__limit_room), and the node count they and
 * the API report. */
#include "eg_int.h"

#include <setjmp.h>

uint64_t eg_node_count(const eg_engine *e)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < e->ntables; i++)
        n += e->tables[i].nlive;
    return n;
}

/* Checks the node, memory and time limits while an iteration runs, so one exploding
 * iteration also stops cleanly; the rows made so far are kept and rebuilt. The node
 * limit counts rows, as the stop message reports them: pending writes are memory, which
 * the memory limit bounds (issue 21: counting them stopped a run "at the node limit"
 * with a fraction of the limit in rows). */
bool eg__limits_hit(eg_engine *e)
{
    if (e->opt.node_limit && eg_node_count(e) >= e->opt.node_limit) {
        e->limit_stop = EG_STOP_NODE_LIMIT;
        return true;
    }
    if (e->opt.mem_limit && e->mem.bytes >= e->opt.mem_limit) {
        e->limit_stop = EG_STOP_MEM_LIMIT;
        return true;
    }
    if (e->opt.time_limit_s > 0 && eg__now() - e->cmd_start > e->opt.time_limit_s) {
        e->limit_stop = EG_STOP_TIME_LIMIT;
        return true;
    }
    return false;
}

void eg__limit_poll(eg_engine *e)
{
    if (e->stop_jmp && e->in_search && eg__limits_hit(e)) longjmp(*e->stop_jmp, 1);
}

void eg__limit_room(eg_engine *e, size_t bytes)
{
    if (!e->stop_jmp || !e->in_search) return;
    if (e->opt.mem_limit &&
        (bytes >= e->opt.mem_limit || e->mem.bytes >= e->opt.mem_limit - bytes)) {
        e->limit_stop = EG_STOP_MEM_LIMIT;
        e->limit_ask = bytes;
        longjmp(*e->stop_jmp, 1);
    }
    eg__limit_poll(e);
}
