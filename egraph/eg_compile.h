/* eg_compile.h: private interface between the compiler files (eg_compile.c: queries;
 * eg_compile_act.c: actions; eg_decl.c: declarations, rules, rewrites). Not part of the public API.
 */
#ifndef EG_COMPILE_H
#define EG_COMPILE_H

#include "eg_int.h"

#define NOSORT UINT32_MAX

/* The compile scratch of one command: everything being built, freed by eg__cc_done or by
 * the command boundary (eg__cc_abort) if the command fails. */
typedef struct cc {
    eg_engine *e; /* the engine (allocations) */
    query q;
    uint32_t capvars, capatoms, capprims;
    uint32_t *alias;
    const sx **var_at;
    action *acts;
    uint32_t nacts, capacts;
    /* slots after compaction: query vars then action lets */
    char **slot_name;
    uint32_t *slot_sort;
    uint32_t nslots, capslots;
    aexpr *tmp_expr; /* an expression being built outside an action */
    char **an;       /* names of variables merged into another (aliases) */
    uint32_t *av;
    uint32_t nan, capan;
    char *root_name; /* rewrite: the name of the left side's variable */
    /* variables equated with a relation call, and that call's atom: a relation row is a
     * value of its own (egglog gives each relation a sort of its own), so two such values
     * are equal only for one relation and equal arguments */
    uint32_t *relv_var, *relv_atom;
    uint32_t nrelv, caprelv;
    /* eg__cc_finish's work arrays: kept here, not in locals, so that a type error thrown
     * from anywhere inside it (set_sort, prim resolution) frees them at the boundary */
    bool *fin_done;     /* prim i resolved */
    const sx **fin_src; /* prim i's source form */
    bool *fin_grounded; /* var representative v is grounded */
    uint32_t *fin_map;  /* old variable -> new (compaction) */
    char **fin_name;    /* the compacted query's arrays until they are the query's */
    uint32_t fin_n, *fin_sort;
    bool *fin_const;
    eg_value *fin_cval;
    int32_t *fin_glob;
} cc;

struct cc *eg__cc_new(eg_engine *e);
void eg__cc_done(eg_engine *e);
const char *eg__sort_name(eg_engine *e, uint32_t s);

/* shared by queries and actions: a literal's sort and value (false: s is none); the
 * table a call names (NULL for a known primitive; unknown names and bad arity refused) */
bool eg__cc_literal(eg_engine *e, const sx *s, uint32_t *sort, eg_value *val);
eg_table *eg__cc_call_head(eg_engine *e, const sx *s, const char *what, int32_t *ti_out);

/* queries */
uint32_t eg__cc_vfind(cc *c, uint32_t v);
uint32_t eg__cc_term(eg_engine *e, cc *c, const sx *s);
void eg__cc_facts(eg_engine *e, cc *c, const sx *const *facts, uint32_t nfacts);
void eg__cc_finish(eg_engine *e, cc *c);

/* a rule variable's name against every declared name (egglog's shadowing check) */
void eg__cc_check_shadow(eg_engine *e, const sx *at, const char *name);

/* actions */
int32_t eg__cc_slot(cc *c, const char *name);
uint32_t eg__cc_add_slot(cc *c, const char *name, uint32_t sort);
aexpr *eg__cc_mk_expr(eg_engine *e, aexpr_kind k, uint32_t sort, const sx *at);
/* Builds an expression; *holder receives it as soon as it exists so a throw frees it. */
aexpr *eg__cc_expr(eg_engine *e, cc *c, const sx *s, uint32_t want, aexpr **holder);
action *eg__cc_new_action(cc *c, action_kind k, const sx *at);
eg_table *eg__cc_table_call(eg_engine *e, const sx *s, int32_t *ti_out);
void eg__cc_table_args(eg_engine *e, cc *c, action *a, const sx *call, eg_table *t);
void eg__cc_action(eg_engine *e, cc *c, const sx *s);

#endif
