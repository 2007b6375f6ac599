/* test_registry.c - the op registry: its entries are consistent, cover every primitive,
 * and match the test rules; a rules file that declares a constructor differently, or
 * not at all, or uses one the registry does not know, is refused naming it. */
#include "tl.h"

/* An engine holding the schema and then text; asserts the text runs. */
static eg_engine *engine_with(const char *text)
{
    eg_engine *e = eg_engine_new(NULL, NULL);
    lm_err he = {0};
    ck_assert_msg(hl_encode_declare(e, &he) == HL_OK, "%s", he.msg);
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e, text, "rules", &ee) == 0, "%s", ee.msg);
    return e;
}

/* The declarations of the test rules (everything before the schedule). */
static char *declarations(void)
{
    char *t = tl_rules(false);
    char *cut = strstr(t, ";; ---- the schedule");
    ck_assert_ptr_nonnull(cut);
    *cut = 0;
    return t;
}

START_TEST(names_are_unique_and_found)
{
    ck_assert_uint_ge(ll_op_count(), 50);
    for (uint32_t i = 0; i < ll_op_count(); i++) {
        const ll_op_info *o = ll_op_get((ll_op)i);
        ck_assert_ptr_nonnull(o);
        ck_assert_uint_eq(ll_op_find(o->name), i);
    }
    ck_assert_uint_eq(ll_op_find("KNoSuchKernel"), LL_OP_NONE);
    ck_assert_uint_eq(ll_op_find(NULL), LL_OP_NONE);
    ck_assert_uint_eq(ll_op_find("Op"), LL_OP_NONE); /* structure, not an op */
}
END_TEST

START_TEST(every_contract_refers_to_a_field_or_input_that_exists)
{
    for (uint32_t i = 0; i < ll_op_count(); i++) {
        const ll_op_info *o = ll_op_get((ll_op)i);
        ck_assert_uint_le(o->n_fields, LL_MAX_FIELDS);
        ck_assert_uint_le(o->n_inputs, LL_MAX_IN);
        ll_dt_contract all[1 + LL_MAX_IN];
        all[0] = o->out;
        for (int k = 0; k < LL_MAX_IN; k++)
            all[1 + k] = o->in[k];
        for (int k = 0; k < 1 + LL_MAX_IN; k++) {
            if (k > o->n_inputs) {
                ck_assert_msg(all[k].rule == LL_DT_NONE, "%s: contract of a missing input", o->name);
                continue;
            }
            if (all[k].rule == LL_DT_FIELD) {
                ck_assert_msg(all[k].arg < o->n_fields && o->fields[all[k].arg].sort == LL_F_DTYPE,
                              "%s: contract %d names field %u, not a DType", o->name, k, all[k].arg);
            } else if (all[k].rule == LL_DT_AS_INPUT) {
                ck_assert_msg(all[k].arg < o->n_inputs, "%s: contract %d names input %u", o->name,
                              k, all[k].arg);
            } else if (all[k].rule == LL_DT_FIXED) {
                ck_assert_int_lt(all[k].arg, HL_DTYPE_COUNT);
            }
        }
        for (uint32_t f = 0; f < o->n_fields; f++)
            ck_assert_msg(o->fields[f].name != NULL, "%s: field %u has no name", o->name, f);
    }
}
END_TEST

/* Every primitive has an HLIR kind and a kernel; the fusible ones a fused form with the
 * kernel's fields; the fused form of X computes X's primitive. */
START_TEST(every_primitive_has_a_kernel_and_fusible_ones_a_fused_form)
{
    for (int op = HL_OP_CONSTANT; op < HL_OP_COUNT; op++) {
        uint32_t hl = 0, k = 0, f = 0;
        ll_op kop = LL_OP_NONE, fop = LL_OP_NONE;
        for (uint32_t i = 0; i < ll_op_count(); i++) {
            const ll_op_info *o = ll_op_get((ll_op)i);
            if (o->prim != (hl_op)op) continue;
            if (o->dialect == LL_D_HLIR) hl++;
            if (o->dialect == LL_D_KERNEL) k++, kop = (ll_op)i;
            if (o->dialect == LL_D_FUSED) f++, fop = (ll_op)i;
        }
        const char *nm = hl_op_name((hl_op)op);
        ck_assert_msg(hl == 1 && k == 1, "%s: %u HLIR kinds, %u kernels", nm, hl, k);
        bool fusible = op != HL_OP_GATHER && op != HL_OP_SCATTER;
        ck_assert_msg(f == (fusible ? 1u : 0u), "%s: %u fused forms", nm, f);
        if (!fusible) continue;
        const ll_op_info *ko = ll_op_get(kop), *fo = ll_op_get(fop);
        ck_assert_str_eq(fo->name + 1, ko->name + 1); /* FAdd / KAdd */
        ck_assert_uint_eq(fo->n_fields, ko->n_fields);
        for (uint32_t j = 0; j < ko->n_fields; j++) {
            ck_assert_str_eq(fo->fields[j].name, ko->fields[j].name);
            ck_assert_int_eq(fo->fields[j].sort, ko->fields[j].sort);
        }
    }
    ck_assert_uint_eq(ll_op_input_count(ll_op_find("Blas"), 0, 0), 2);
    ck_assert_uint_eq(ll_op_input_count(ll_op_find("Blas"), 1, 0), 3);
    ck_assert_uint_eq(ll_op_input_count(ll_op_find("Blas"), 0, LL_EPI_BIAS_GELU), 3);
    ck_assert_uint_eq(ll_op_input_count(ll_op_find("Blas"), 1, LL_EPI_BIAS), 4);
    ck_assert_uint_eq(ll_op_input_count(ll_op_find("Blas"), 1, LL_EPI_GELU), 3);
    ck_assert_uint_eq(ll_op_input_count(ll_op_find("KAdd"), 1, 1), 2);
}
END_TEST

START_TEST(the_test_rules_pass_the_check)
{
    char *t = tl_rules(false);
    eg_engine *e = engine_with(t);
    lm_err err = {0};
    ck_assert_msg(ll_registry_check(e, &err) == LM_OK, "%s", err.msg);
    ck_assert_int_eq(err.code, LM_OK);
    eg_engine_free(e);
    free(t);
}
END_TEST

/* Declarations alone, with one changed: the check names the constructor. */
static void expect_refused(const char *from, const char *to, const char *name, const char *what)
{
    char *d = declarations();
    char *bad = tl_replace(d, from, to);
    eg_engine *e = engine_with(bad);
    lm_err err = {0};
    ck_assert_int_eq(ll_registry_check(e, &err), LM_EVERIFY);
    ck_assert_int_eq(err.code, LM_EVERIFY);
    ck_assert_str_eq(err.node, name);
    ck_assert_msg(strstr(err.msg, name) && strstr(err.msg, what), "%s", err.msg);
    eg_engine_free(e);
    free(bad);
    free(d);
}

START_TEST(a_declaration_with_the_wrong_fields_is_named)
{
    expect_refused("(constructor KAdd (EList EList EList EList DType) OpKind)",
                   "(constructor KAdd (EList EList EList DType) OpKind)", "KAdd",
                   "with 4 fields; llir's registry has 5");
    expect_refused("(constructor FLoad (DType) OpKind)", "(constructor FLoad () OpKind)", "FLoad",
                   "with 0 fields; llir's registry has 1");
    /* the same arity, one field of another sort */
    expect_refused("(constructor KAdd (EList EList EList EList DType) OpKind)",
                   "(constructor KAdd (EList EList EList Expression DType) OpKind)", "KAdd",
                   "field 3 (out_strides) of KAdd with sort Expression; llir's registry has EList");
    /* the right fields, another output sort */
    expect_refused("(constructor FInl () OpKind)", "(constructor FInl () IR)", "FInl",
                   "output sort IR; llir's registry has OpKind");
}
END_TEST

START_TEST(a_missing_declaration_is_named)
{
    expect_refused("(constructor FInl () OpKind)", "", "FInl", "do not declare");
    expect_refused("(constructor KMatmul (EList EList EList EList DType) OpKind)", "", "KMatmul",
                   "do not declare");
}
END_TEST

START_TEST(a_relation_in_place_of_a_constructor_is_named)
{
    expect_refused("(constructor FInl () OpKind)", "(relation FInl ())", "FInl", "as a relation");
}
END_TEST

/* The second direction: a kind the registry does not know is refused, naming it, when
 * the rules are checked (before any node exists). */
START_TEST(an_unregistered_kind_is_named_by_the_space)
{
    char *t = tl_rules(false);
    char *r = tl_cat(t, "(constructor KFoo (EList DType) OpKind)\n"
                        "(rule ((= ?e (Op (Exp2 ?s ?a ?o) ?l)) (= ?dt (dtype ?e)))\n"
                        "      ((union ?e (Op (KFoo ?s ?dt) ?l))) :ruleset lower :name \"foo\")\n");
    hl_graph *g = tl_example("elementwise_chain_f32_16m");
    tl_env env;
    lm_err err = {0};
    ck_assert_int_eq(tl_try(&env, g, r, &err), LM_EVERIFY);
    ck_assert_str_eq(err.node, "KFoo");
    ck_assert_msg(strstr(err.msg, "KFoo of sort OpKind, which llir's registry does not know"), "%s",
                  err.msg);
    tl_fini(&env);
    hl_graph_free(g);
    free(r);
    free(t);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("llir_registry");
    TCase *tc = tcase_create("registry");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, names_are_unique_and_found);
    tcase_add_test(tc, every_contract_refers_to_a_field_or_input_that_exists);
    tcase_add_test(tc, every_primitive_has_a_kernel_and_fusible_ones_a_fused_form);
    tcase_add_test(tc, the_test_rules_pass_the_check);
    tcase_add_test(tc, a_declaration_with_the_wrong_fields_is_named);
    tcase_add_test(tc, a_missing_declaration_is_named);
    tcase_add_test(tc, a_relation_in_place_of_a_constructor_is_named);
    tcase_add_test(tc, an_unregistered_kind_is_named_by_the_space);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {make_suite, NULL};
