/* ll_space_dtype.c - the e-graph dtype check of the search space's build: every node of
 * an IR class has the class's dtype by its contract (its DType fields, its inputs'
 * classes or a fixed dtype), and every input with a dtype contract reads a class of that
 * dtype; a violation names the node, both dtypes and the rule that inserted the node. */
#include "ll_int.h"

#include <stdio.h>

typedef struct dtc {
    const ll_space *s;
    lm_err *err;
    double deadline; /* lm_now_s; 0: none */
} dtc;

/* ==================================================================================
 * The e-graph dtype check
 * ================================================================================== */

/* The k-th entry class of IList class lc (by each class's first list node), or LM_NONE. */
static uint32_t list_entry(const ll_space *s, uint32_t lc, uint32_t k)
{
    for (uint32_t depth = 0; depth <= k; depth++) {
        uint32_t cons = LM_NONE;
        for (uint32_t j = s->nstart[lc]; j < s->nstart[lc + 1] && cons == LM_NONE; j++)
            if (s->code[s->nlist[j]] == LL__C_ICONS) cons = s->nlist[j];
        if (cons == LM_NONE) return LM_NONE;
        if (depth == k) return ll__kid(s, cons, 0);
        lc = ll__kid(s, cons, 1);
    }
    return LM_NONE;
}

typedef struct dt_site {
    uint32_t node;       /* the IR node */
    uint32_t kind;       /* its kind node (Op), or the IR node itself (IO) */
    const ll_op_info *o;
    uint32_t n_in;
    uint32_t in[LL_MAX_IN]; /* input classes */
} dt_site;

/* The dtype contract ct evaluated at a site: -1 when it says nothing (ANY, NONE) or the
 * field is unreadable; *what names where it comes from. */
static int contract_dtype(const ll_space *s, const dt_site *st, ll_dt_contract ct, char *what,
                          size_t cap)
{
    switch (ct.rule) {
    case LL_DT_FIELD:
        snprintf(what, cap, "its field '%s'", st->o->fields[ct.arg].name);
        return ll__dtype_of(s, ll__kid(s, st->kind, ct.arg));
    case LL_DT_FIXED:
        snprintf(what, cap, "its op (always %s)", hl_dtype_name((hl_dtype)ct.arg));
        return ct.arg;
    case LL_DT_AS_INPUT:
        snprintf(what, cap, "its input %u", ct.arg);
        return ct.arg < st->n_in && st->in[ct.arg] != LM_NONE ? s->dtype[st->in[ct.arg]] : -1;
    default:
        return -1;
    }
}

/* Which contract slot input k of a node uses (Blas: a, b, then c or bias). */
static uint32_t input_slot(const ll_space *s, const dt_site *st, uint32_t k)
{
    if (st->o->dialect != LL_D_LIBRARY || k < 2) return k;
    uint32_t cb = ll__kid(s, st->kind, 12);
    double beta = ll__lit_is(s, cb, s->sort_f64) ? eg_value_as_f64(s->ser.class_value[cb]) : 0;
    return k == 2 && beta == 1.0 ? 2 : 3;
}

static int dtype_fail(dtc *b, const dt_site *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int dtype_fail(dtc *b, const dt_site *st, const char *fmt, ...)
{
    char msg[LM_ERR_MSG / 2], ob[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const ll_space *s = b->s;
    uint32_t origin = ll__eg_origin(s->e, &s->ser, st->node);
    const char *otext = ll__eg_origin_text(s->e, origin, ob, sizeof ob);
    lm_loc loc = {.node = st->o->name, .node_id = s->ser.nodes[st->node].eclass};
    return ll__fail(b->err, LM_EVERIFY, &loc, "e-graph dtype check: class c%u, node n%u (%s%s): %s; %s",
                    s->ser.nodes[st->node].eclass, st->node,
                    st->kind != st->node ? "Op " : "", st->o->name, msg, otext);
}

static int check_site(dtc *b, const dt_site *st)
{
    const ll_space *s = b->s;
    uint32_t cls = s->ser.nodes[st->node].eclass;
    char what[96];
    int want = s->dtype[cls];
    if (st->o->out.rule != LL_DT_NONE && want < 0)
        return dtype_fail(b, st,
                          "the class has no dtype (the dtype function); a rule that adds an IR "
                          "term must set its dtype");
    int got = contract_dtype(s, st, st->o->out, what, sizeof what);
    if (got >= 0 && want >= 0 && got != want)
        return dtype_fail(b, st, "computes %s by %s, but the class is %s", hl_dtype_name((hl_dtype)got),
                          what, hl_dtype_name((hl_dtype)want));
    for (uint32_t k = 0; k < st->n_in; k++) {
        uint32_t slot = input_slot(s, st, k);
        if (slot >= LL_MAX_IN || st->in[k] == LM_NONE) continue;
        int need = contract_dtype(s, st, st->o->in[slot], what, sizeof what);
        int have = s->dtype[st->in[k]];
        if (need >= 0 && have >= 0 && need != have)
            return dtype_fail(b, st, "reads input %u (class c%u, %s) as %s by %s", k, st->in[k],
                              hl_dtype_name((hl_dtype)have), hl_dtype_name((hl_dtype)need), what);
    }
    return LM_OK;
}

int ll__space_dtype_check(const ll_space *s0, double deadline, lm_err *err)
{
    dtc bb = {.s = s0, .err = err, .deadline = deadline}, *b = &bb;
    const ll_space *s = b->s;
    for (uint32_t n = 0; n < s->nn; n++) {
        if (b->deadline > 0 && (n & 4095) == 0 && lm_now_s() > b->deadline)
            return ll__fail(b->err, LM_ELIMIT, NULL,
                            "the time limit ran out while building the search space (step "
                            "'dtype check': %u of %u nodes)",
                            n, s->nn);
        uint16_t c = s->code[n];
        dt_site st = {.node = n};
        if (c == LL__C_OP) {
            uint32_t kc = ll__kid(s, n, 0), lc = ll__kid(s, n, 1);
            for (uint32_t j = s->nstart[kc]; j < s->nstart[kc + 1]; j++) {
                uint32_t kn = s->nlist[j];
                if (s->code[kn] >= ll_op_count()) continue;
                st.kind = kn;
                st.o = ll_op_get(s->code[kn]);
                st.n_in = s->len[lc] < LL_MAX_IN ? s->len[lc] : LL_MAX_IN;
                for (uint32_t k = 0; k < st.n_in; k++)
                    st.in[k] = list_entry(s, lc, k);
                int rc = check_site(b, &st);
                if (rc) return rc;
            }
        } else if (c < ll_op_count() && ll_op_get(c)->dialect == LL_D_IO) {
            st.kind = n;
            st.o = ll_op_get(c);
            st.n_in = st.o->n_inputs;
            for (uint32_t k = 0; k < st.n_in; k++)
                st.in[k] = ll__kid(s, n, k); /* the IR columns come first */
            int rc = check_site(b, &st);
            if (rc) return rc;
        }
    }
    return LM_OK;
}
