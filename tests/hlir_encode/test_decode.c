/* test_decode.c - reading graphs back out of the e-graph: exact round trips, fixed
 * points on every example, equal results on generated graphs, the decoder's choices,
 * and the errors for e-graphs it cannot read. */
#include "te.h"
#include "lm_check.h"

static const char *prog_head(void)
{
    return hl_encode_schema();
}

/* decode of the engine that ran the schema plus program; NULL with err set on failure */
static hl_graph *decode_text(const char *program, hl_error *err)
{
    eg_engine *e = eg_engine_new(NULL, NULL);
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e, prog_head(), "schema", &ee) == 0, "%s", ee.msg);
    ck_assert_msg(eg_run_text(e, program, "program", &ee) == 0, "%s", ee.msg);
    hl_error_clear(err);
    hl_graph *g = hl_graph_decode_engine(e, err);
    eg_engine_free(e);
    return g;
}

static void expect_same_json(const hl_graph *a, const hl_graph *b, const char *what)
{
    char *ja = te_json(a), *jb = te_json(b);
    ck_assert_msg(strcmp(ja, jb) == 0, "%s: graphs differ:\n%s\n---\n%s", what, ja, jb);
    free(ja);
    free(jb);
}

/* Every primitive, read straight back: no node is dead or repeated, reductions are over
 * the last axis, so the canonical JSON is identical. */
START_TEST(a_builder_graph_reads_back_exactly)
{
    hl_graph *g = hl_graph_new();
    hl_expr n = hl_graph_dim(g, "n", 1, 64, 4);
    hl_expr d[2] = {n, hl_n(g, 3)};
    hl_t x = hl_input(g, "x", HL_F32, 2, d);
    hl_t y = hl_input(g, "y", HL_F32, 2, d);
    hl_t a = hl_exp2(g, hl_log2(g, hl_sqrt(g, hl_recip(g, hl_sin(g, x)))));
    hl_t b = hl_add(g, hl_mul(g, a, y), hl_mod(g, x, y));
    hl_t m = hl_cast(g, hl_lt(g, b, x), HL_F32);
    hl_t t = hl_transpose(g, hl_add(g, m, hl_full(g, 0.5f, HL_F32, 2, d)), 0, 1);
    hl_t s = hl_sum_reduce(g, hl_contiguous(g, t), 1);
    hl_t mx = hl_max_reduce(g, t, 1);
    hl_expr_pool *p = hl_graph_exprs(g);
    hl_t ga = hl_gather(g, hl_iota(g, hl_e_mod(p, hl_e_z(p), hl_n(g, 3)), hl_n(g, 5)), mx);
    hl_t sc = hl_scatter(g, s, hl_iota(g, hl_e_z(p), hl_n(g, 2)),
                         hl_slice(g, ga, 0, hl_n(g, 0), hl_n(g, 2)));
    hl_output(g, "sc", sc);
    hl_output(g, "b", hl_cast(g, b, HL_BF16));
    ck_assert_msg(hl_graph_error(g)->code == HL_OK, "%s", hl_graph_error(g)->msg);
    hl_graph *back = te_roundtrip(g);
    expect_same_json(g, back, "every primitive");
    hl_error err;
    hl_error_clear(&err);
    ck_assert_msg(hl_graph_check(back, &err) == HL_OK, "%s", err.msg);
    hl_graph_free(back);
    hl_graph_free(g);
}
END_TEST

START_TEST(every_example_reads_back_to_a_fixed_point)
{
    char *paths[TE_MAX_EXAMPLES];
    int n = te_examples(paths);
    ck_assert_msg(n > 0, "no example graphs in %s/examples/graphs", LUMINAL_SOURCE_DIR);
    for (int i = 0; i < n; i++) {
        hl_graph *g = te_load(paths[i]);
        hl_graph *d = te_roundtrip(g);
        /* the decoded graph encodes to the very same e-graph */
        eg_engine *eg = te_encode_c(g, NULL), *ed = te_encode_c(d, NULL);
        char *jg = te_serialized(eg), *jd = te_serialized(ed);
        ck_assert_msg(strcmp(jg, jd) == 0, "%s: the decoded graph encodes differently", paths[i]);
        free(jg);
        free(jd);
        eg_engine_free(eg);
        eg_engine_free(ed);
        /* and reads back to itself */
        hl_graph *d2 = te_roundtrip(d);
        expect_same_json(d, d2, paths[i]);
        /* dims, inputs and outputs are kept with their names, in order */
        ck_assert_uint_eq(hl_graph_dim_count(d), hl_graph_dim_count(g));
        ck_assert_uint_eq(hl_graph_input_count(d), hl_graph_input_count(g));
        ck_assert_uint_eq(hl_graph_output_count(d), hl_graph_output_count(g));
        for (uint32_t k = 0; k < hl_graph_input_count(g); k++)
            ck_assert_str_eq(hl_graph_node(d, hl_graph_input(d, k))->name,
                             hl_graph_node(g, hl_graph_input(g, k))->name);
        for (uint32_t k = 0; k < hl_graph_output_count(g); k++)
            ck_assert_str_eq(hl_graph_node(d, hl_graph_output(d, k))->name,
                             hl_graph_node(g, hl_graph_output(g, k))->name);
        ck_assert_uint_le(hl_graph_node_count(d), hl_graph_node_count(g));
        hl_graph_free(d2);
        hl_graph_free(d);
        hl_graph_free(g);
        free(paths[i]);
    }
}
END_TEST

static void expect_same_results(const hl_graph *g, const hl_graph *d, uint64_t seed)
{
    hl_tensor in[16], og[16], od[16];
    int64_t dims[16];
    ck_assert_uint_le(hl_graph_input_count(g), 16);
    ck_assert_uint_le(hl_graph_output_count(g), 16);
    te_inputs(g, seed, dims, in);
    hl_error err;
    hl_error_clear(&err);
    ck_assert_msg(hl_run(g, dims, in, og, &err) == HL_OK, "seed %llu: %s", (unsigned long long)seed,
                  err.msg);
    ck_assert_msg(hl_run(d, dims, in, od, &err) == HL_OK, "seed %llu decoded: %s",
                  (unsigned long long)seed, err.msg);
    for (uint32_t k = 0; k < hl_graph_output_count(g); k++) {
        ck_assert_int_eq(og[k].dtype, od[k].dtype);
        ck_assert_uint_eq(og[k].numel, od[k].numel);
        ck_assert_msg(memcmp(og[k].data, od[k].data, og[k].numel * hl_dtype_size(og[k].dtype)) == 0,
                      "seed %llu: output %u differs", (unsigned long long)seed, k);
        hl_tensor_fini(&og[k]);
        hl_tensor_fini(&od[k]);
    }
    for (uint32_t k = 0; k < hl_graph_input_count(g); k++)
        hl_tensor_fini(&in[k]);
}

START_TEST(generated_graphs_read_back_and_compute_the_same_bits)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        hl_gen_opts o = {.n_ops = 14, .dynamic = seed % 3 == 0};
        hl_error err;
        hl_error_clear(&err);
        hl_graph *g = hl_graph_generate(seed, &o, &err);
        ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, err.msg);
        hl_graph *d = te_roundtrip(g);
        expect_same_results(g, d, seed);
        hl_graph *d2 = te_roundtrip(d);
        expect_same_json(d, d2, "generated");
        hl_graph_free(d2);
        hl_graph_free(d);
        hl_graph_free(g);
    }
}
END_TEST

START_TEST(a_reduction_over_an_inner_axis_reads_back_with_the_axis_last)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[2] = {hl_n(g, 3), hl_n(g, 4)};
    hl_t x = hl_input(g, "x", HL_F32, 2, d);
    hl_output(g, "s", hl_sum_reduce(g, x, 0));
    hl_graph *back = te_roundtrip(g);
    const hl_node *r = hl_graph_node(back, 1);
    ck_assert_int_eq(r->op, HL_OP_SUM_REDUCE);
    ck_assert_uint_eq(r->axis, 1);
    int64_t v;
    const hl_expr_pool *p = hl_graph_exprs_c(back);
    ck_assert(hl_e_is_num(p, r->in[0].view.dims[0], &v) && v == 4);
    ck_assert(hl_e_is_num(p, r->in[0].view.dims[1], &v) && v == 3);
    expect_same_results(g, back, 7);
    hl_graph_free(back);
    hl_graph_free(g);
}
END_TEST

START_TEST(equal_nodes_merge_dead_nodes_drop_and_inputs_stay)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 4)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d);
    hl_input(g, "unused", HL_F16, 1, d);
    hl_t y = hl_add(g, hl_mul_scalar(g, x, 2.0f), hl_mul_scalar(g, x, 2.0f));
    hl_exp2(g, x); /* read by nothing */
    hl_output(g, "y", y);
    ck_assert_int_eq(hl_graph_error(g)->code, HL_OK);
    hl_graph *back = te_roundtrip(g);
    ck_assert_uint_eq(hl_graph_input_count(back), 2);
    ck_assert_str_eq(hl_graph_node(back, hl_graph_input(back, 1))->name, "unused");
    ck_assert_int_eq(hl_graph_node(back, hl_graph_input(back, 1))->dtype, HL_F16);
    uint32_t consts = 0, muls = 0, exps = 0;
    for (uint32_t i = 0; i < hl_graph_node_count(back); i++) {
        hl_op op = hl_graph_node(back, i)->op;
        consts += op == HL_OP_CONSTANT;
        muls += op == HL_OP_MUL;
        exps += op == HL_OP_EXP2;
    }
    ck_assert_uint_eq(consts, 1);
    ck_assert_uint_eq(muls, 1);
    ck_assert_uint_eq(exps, 0);
    expect_same_results(g, back, 3);
    hl_graph_free(back);
    hl_graph_free(g);
}
END_TEST

/* x -> exp2 -> out, then a rule adds Sin beside Exp2 in the same class. */
static eg_engine *exp2_or_sin(uint32_t *cls, uint32_t *n_exp2, uint32_t *n_sin, eg_serialized *s)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 4)};
    hl_output(g, "y", hl_exp2(g, hl_input(g, "x", HL_F32, 1, d)));
    eg_engine *e = te_encode_c(g, NULL);
    hl_graph_free(g);
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e,
                              "(rewrite (Op (Exp2 ?a ?b ?c) ?l) (Op (Sin ?a ?b ?c) ?l))\n"
                              "(run 1)\n",
                              "rule", &ee) == 0,
                  "%s", ee.msg);
    ck_assert_int_eq(eg_serialize(e, NULL, s, &ee), 0);
    /* the two Op nodes of one class, told apart by their kind */
    *n_exp2 = *n_sin = UINT32_MAX;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if (strcmp(s->nodes[i].op, "Op") != 0) continue;
        uint32_t kind = s->children[s->nodes[i].child_start];
        for (uint32_t j = 0; j < s->n_nodes; j++) {
            if (s->nodes[j].eclass != kind) continue;
            if (strcmp(s->nodes[j].op, "Exp2") == 0) *n_exp2 = i;
            if (strcmp(s->nodes[j].op, "Sin") == 0) *n_sin = i;
        }
    }
    ck_assert_uint_ne(*n_exp2, UINT32_MAX);
    ck_assert_uint_ne(*n_sin, UINT32_MAX);
    ck_assert_uint_eq(s->nodes[*n_exp2].eclass, s->nodes[*n_sin].eclass);
    *cls = s->nodes[*n_sin].eclass;
    return e;
}

START_TEST(the_callers_choice_picks_the_node_and_ties_go_to_the_lowest_index)
{
    uint32_t cls, ne, ns;
    eg_serialized s;
    eg_engine *e = exp2_or_sin(&cls, &ne, &ns, &s);
    hl_error err;
    hl_error_clear(&err);
    hl_graph *def = hl_graph_decode(e, &s, NULL, &err);
    ck_assert_msg(def != NULL, "%s", err.msg);
    ck_assert_int_eq(hl_graph_node(def, 1)->op, ne < ns ? HL_OP_EXP2 : HL_OP_SIN);
    uint32_t *choice = malloc(s.n_classes * sizeof(uint32_t));
    for (uint32_t c = 0; c < s.n_classes; c++)
        choice[c] = UINT32_MAX;
    choice[cls] = ns;
    hl_graph *pick = hl_graph_decode(e, &s, choice, &err);
    ck_assert_msg(pick != NULL, "%s", err.msg);
    ck_assert_int_eq(hl_graph_node(pick, 1)->op, HL_OP_SIN);
    /* a node of another class is refused */
    choice[cls] = 0;
    if (s.nodes[0].eclass != cls) {
        ck_assert_ptr_null(hl_graph_decode(e, &s, choice, &err));
        ck_assert_ptr_nonnull(strstr(err.msg, "not a node of this class"));
    }
    free(choice);
    hl_graph_free(def);
    hl_graph_free(pick);
    eg_serialized_free(&s);
    eg_engine_free(e);
}
END_TEST

START_TEST(a_cycle_among_the_chosen_nodes_is_reported)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 4)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d);
    hl_output(g, "y", hl_exp2(g, x));
    hl_encoding enc;
    eg_engine *e = te_encode_c(g, &enc);
    lm_err ee = {0};
    ck_assert_int_eq(eg_union(e, enc.node_class[0], enc.node_class[1], &ee), 0);
    ck_assert_int_eq(eg_rebuild(e, &ee), 0);
    eg_serialized s;
    ck_assert_int_eq(eg_serialize(e, NULL, &s, &ee), 0);
    uint32_t *choice = malloc(s.n_classes * sizeof(uint32_t));
    for (uint32_t c = 0; c < s.n_classes; c++)
        choice[c] = UINT32_MAX;
    for (uint32_t i = 0; i < s.n_nodes; i++)
        if (strcmp(s.nodes[i].op, "Op") == 0) choice[s.nodes[i].eclass] = i;
    hl_error err;
    hl_error_clear(&err);
    ck_assert_ptr_null(hl_graph_decode(e, &s, choice, &err));
    ck_assert_msg(strstr(err.msg, "cycle") != NULL, "%s", err.msg);
    /* the decoder's own choice avoids it: the output reads x directly */
    hl_graph *d2 = hl_graph_decode(e, &s, NULL, &err);
    ck_assert_msg(d2 != NULL, "%s", err.msg);
    ck_assert_uint_eq(hl_graph_node_count(d2), 2);
    hl_graph_free(d2);
    free(choice);
    eg_serialized_free(&s);
    hl_encoding_fini(&enc);
    eg_engine_free(e);
    hl_graph_free(g);
}
END_TEST

#define X_INPUT "(let t0 (Input 0 \"x\" (F32) (ECons (MNum 4) (ENil))))\n"
#define CONTIG "(ECons (MIter) (ENil))"
#define SHAPE4 "(ECons (MNum 4) (ENil))"

START_TEST(a_class_with_only_rewrite_helpers_is_reported)
{
    hl_error err;
    hl_graph *g = decode_text(X_INPUT "(let t1 (Op (Exp2 (RowMajor " SHAPE4 ") " CONTIG " " CONTIG
                                      ") (ICons t0 (INil))))\n"
                                      "(let t2 (Output t1 0 \"y\" " SHAPE4 " " CONTIG "))\n",
                              &err);
    ck_assert_ptr_null(g);
    ck_assert_int_eq(err.code, HL_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "no readable node"), "%s", err.msg);
}
END_TEST

START_TEST(non_contiguous_out_strides_are_reported)
{
    hl_error err;
    hl_graph *g =
        decode_text(X_INPUT "(let t1 (Op (Exp2 " SHAPE4 " " CONTIG
                            " (ECons (MMul (MIter) (MNum 2)) (ENil))) (ICons t0 (INil))))\n"
                            "(let t2 (Output t1 0 \"y\" " SHAPE4 " " CONTIG "))\n",
                    &err);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err.msg, "contiguous"), "%s", err.msg);
}
END_TEST

START_TEST(a_wrong_number_of_inputs_is_reported)
{
    hl_error err;
    hl_graph *g = decode_text(X_INPUT "(let t1 (Op (Exp2 " SHAPE4 " " CONTIG " " CONTIG
                                      ") (ICons t0 (ICons t0 (INil)))))\n"
                                      "(let t2 (Output t1 0 \"y\" " SHAPE4 " " CONTIG "))\n",
                              &err);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err.msg, "Exp2 takes 1 inputs"), "%s", err.msg);
}
END_TEST

START_TEST(an_e_graph_without_outputs_or_with_gaps_in_indexes_is_reported)
{
    hl_error err;
    ck_assert_ptr_null(decode_text(X_INPUT, &err));
    ck_assert_msg(strstr(err.msg, "no Output"), "%s", err.msg);
    ck_assert_ptr_null(decode_text(X_INPUT "(let t1 (Input 2 \"w\" (F32) " SHAPE4 "))\n"
                                           "(let t2 (Output t1 0 \"y\" " SHAPE4 " " CONTIG "))\n",
                                   &err));
    ck_assert_msg(strstr(err.msg, "indexes must be 0, 1, 2"), "%s", err.msg);
}
END_TEST

START_TEST(builder_checks_apply_to_what_is_decoded)
{
    hl_error err; /* Add of f32 and an Int iota: the primitive door refuses it */
    ck_assert_ptr_null(decode_text(X_INPUT "(let t1 (Op (Iota (MIter) (MNum 4)) (INil)))\n"
                                           "(let t2 (Op (Add " SHAPE4 " " CONTIG " " CONTIG
                                           " " CONTIG ") (ICons t0 (ICons t1 (INil)))))\n"
                                           "(let t3 (Output t2 0 \"y\" " SHAPE4 " " CONTIG "))\n",
                                   &err));
    ck_assert_int_eq(err.code, HL_ERR_DTYPE);
    ck_assert_msg(strstr(err.msg, "Add"), "%s", err.msg);
}
END_TEST

/* Luminal's own texts carry no Dim declarations: a dim seen only as MVar gets declared
 * with the widest range. */
START_TEST(a_dim_without_a_declaration_is_declared_wide)
{
    hl_error err;
    hl_graph *g = decode_text(
        "(let t0 (Input 0 \"x\" (F32) (ECons (MVar \"s\") (ENil))))\n"
        "(let t1 (Op (Sqrt (ECons (MVar \"s\") (ENil)) " CONTIG " " CONTIG ") (ICons t0 (INil))))\n"
        "(let t2 (Output t1 0 \"y\" (ECons (MVar \"s\") (ENil)) " CONTIG "))\n",
        &err);
    ck_assert_msg(g != NULL, "%s", err.msg);
    ck_assert_uint_eq(hl_graph_dim_count(g), 1);
    const hl_dim *dm = hl_graph_dim_find(g, "s");
    ck_assert_ptr_nonnull(dm);
    ck_assert_int_eq(dm->lo, 1);
    ck_assert_int_eq(dm->hi, INT32_MAX);
    ck_assert_int_eq(hl_graph_node(g, 1)->op, HL_OP_SQRT);
    hl_graph_free(g);
}
END_TEST

/* Rewrites that add equal alternatives (here a*b = b*a on every Mul) leave a graph the
 * decoder still reads, and it computes the same values. */
START_TEST(a_saturated_e_graph_still_reads_back)
{
    hl_error err;
    hl_error_clear(&err);
    hl_gen_opts o = {.n_ops = 12};
    hl_graph *g = hl_graph_generate(11, &o, &err);
    ck_assert_ptr_nonnull(g);
    eg_engine *e = te_encode_c(g, NULL);
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e,
                              "(rewrite (Op (Mul ?s ?a ?b ?o) (ICons ?x (ICons ?y (INil))))"
                              " (Op (Mul ?s ?b ?a ?o) (ICons ?y (ICons ?x (INil)))))\n"
                              "(run 3)\n",
                              "rule", &ee) == 0,
                  "%s", ee.msg);
    hl_graph *d = hl_graph_decode_engine(e, &err);
    ck_assert_msg(d != NULL, "%s", err.msg);
    expect_same_results(g, d, 5);
    hl_graph_free(d);
    eg_engine_free(e);
    hl_graph_free(g);
}
END_TEST

/* A rule that proves an input equal to a constant makes ops read the (smaller) constant,
 * but the input stays part of the graph's interface. */
START_TEST(an_input_proved_equal_to_a_constant_stays_an_input)
{
    hl_graph *g = hl_graph_new();
    hl_t x = hl_input(g, "x", HL_F32, 0, NULL);
    hl_output(g, "y", hl_exp2(g, x));
    hl_encoding enc;
    eg_engine *e = te_encode_c(g, &enc);
    lm_err ee = {0};
    ck_assert_int_eq(eg_run_text(e, "(let c (Op (Constant 2.0) (INil)))", "c", &ee), 0);
    eg_serialized s;
    ck_assert_int_eq(eg_serialize(e, NULL, &s, &ee), 0);
    eg_value cval = 0;
    for (uint32_t i = 0; i < s.n_nodes; i++)
        if (strcmp(s.nodes[i].op, "Constant") == 0)
            for (uint32_t j = 0; j < s.n_nodes; j++)
                if (strcmp(s.nodes[j].op, "Op") == 0 &&
                    s.children[s.nodes[j].child_start] == s.nodes[i].eclass)
                    cval = s.class_value[s.nodes[j].eclass];
    eg_serialized_free(&s);
    ck_assert_int_eq(eg_union(e, enc.node_class[0], cval, &ee), 0);
    hl_error err;
    hl_error_clear(&err);
    hl_graph *d = hl_graph_decode_engine(e, &err);
    ck_assert_msg(d != NULL, "%s", err.msg);
    ck_assert_uint_eq(hl_graph_input_count(d), 1);
    ck_assert_str_eq(hl_graph_node(d, hl_graph_input(d, 0))->name, "x");
    const hl_node *ex = hl_graph_node(d, hl_graph_node(d, hl_graph_output(d, 0))->in[0].node);
    ck_assert_int_eq(ex->op, HL_OP_EXP2);
    ck_assert_int_eq(hl_graph_node(d, ex->in[0].node)->op, HL_OP_CONSTANT);
    hl_graph_free(d);
    hl_encoding_fini(&enc);
    eg_engine_free(e);
    hl_graph_free(g);
}
END_TEST

/* After a rewrite that swaps the operands of every Add and Mul (a+b = b+a holds bit for
 * bit in IEEE arithmetic), any choice among the alternatives decodes to a graph that
 * computes the same bits. */
START_TEST(random_choices_among_equal_alternatives_compute_the_same_bits)
{
    uint32_t differ = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        hl_gen_opts o = {.n_ops = 12, .dynamic = seed % 2 == 1};
        hl_error err;
        hl_error_clear(&err);
        hl_graph *g = hl_graph_generate(seed, &o, &err);
        ck_assert_ptr_nonnull(g);
        eg_engine *e = te_encode_c(g, NULL);
        lm_err ee = {0};
        ck_assert_msg(eg_run_text(e,
                                  "(rewrite (Op (Mul ?s ?a ?b ?o) (ICons ?x (ICons ?y (INil))))"
                                  " (Op (Mul ?s ?b ?a ?o) (ICons ?y (ICons ?x (INil)))))\n"
                                  "(rewrite (Op (Add ?s ?a ?b ?o) (ICons ?x (ICons ?y (INil))))"
                                  " (Op (Add ?s ?b ?a ?o) (ICons ?y (ICons ?x (INil)))))\n"
                                  "(run 2)\n",
                                  "rules", &ee) == 0,
                      "%s", ee.msg);
        eg_serialized s;
        ck_assert_int_eq(eg_serialize(e, NULL, &s, &ee), 0);
        uint32_t *choice = malloc(s.n_classes * sizeof(uint32_t));
        uint32_t *seen = calloc(s.n_classes, sizeof(uint32_t));
        uint32_t alternatives = 0;
        uint64_t st = seed;
        for (uint32_t c = 0; c < s.n_classes; c++)
            choice[c] = UINT32_MAX;
        for (uint32_t i = 0; i < s.n_nodes; i++) { /* reservoir-pick one Op node per class */
            if (strcmp(s.nodes[i].op, "Op") != 0) continue;
            uint32_t c = s.nodes[i].eclass;
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            if (++seen[c] == 1 || (st >> 33) % seen[c] == 0) choice[c] = i;
            if (seen[c] == 2) alternatives++;
        }
        ck_assert_uint_gt(alternatives, 0);
        hl_graph *d = hl_graph_decode(e, &s, choice, &err);
        ck_assert_msg(d != NULL, "seed %llu: %s", (unsigned long long)seed, err.msg);
        expect_same_results(g, d, seed);
        hl_graph *def = hl_graph_decode(e, &s, NULL, &err);
        ck_assert_ptr_nonnull(def);
        char *jd = te_json(d), *jdef = te_json(def);
        differ += strcmp(jd, jdef) != 0; /* a swapped operand order was chosen */
        free(jd);
        free(jdef);
        hl_graph_free(def);
        hl_graph_free(d);
        free(choice);
        free(seen);
        eg_serialized_free(&s);
        eg_engine_free(e);
        hl_graph_free(g);
    }
    ck_assert_uint_gt(differ, 0);
}
END_TEST

START_TEST(an_expression_that_overflows_int64_is_reported)
{
    hl_error err;
    ck_assert_ptr_null(decode_text(
        "(let t0 (Input 0 \"x\" (F32) (ECons (MMul (MNum 9223372036854775807) (MNum 2)) (ENil))))\n"
        "(let t1 (Output t0 0 \"y\" " SHAPE4 " " CONTIG "))\n",
        &err));
    ck_assert_int_eq(err.code, HL_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "overflows int64"), "%s", err.msg);
}
END_TEST

static Suite *hlir_decode_suite(void)
{
    Suite *s = suite_create("hlir_decode");
    TCase *tc = tcase_create("decode");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, a_builder_graph_reads_back_exactly);
    tcase_add_test(tc, every_example_reads_back_to_a_fixed_point);
    tcase_add_test(tc, generated_graphs_read_back_and_compute_the_same_bits);
    tcase_add_test(tc, a_reduction_over_an_inner_axis_reads_back_with_the_axis_last);
    tcase_add_test(tc, equal_nodes_merge_dead_nodes_drop_and_inputs_stay);
    tcase_add_test(tc, the_callers_choice_picks_the_node_and_ties_go_to_the_lowest_index);
    tcase_add_test(tc, a_cycle_among_the_chosen_nodes_is_reported);
    tcase_add_test(tc, a_class_with_only_rewrite_helpers_is_reported);
    tcase_add_test(tc, non_contiguous_out_strides_are_reported);
    tcase_add_test(tc, a_wrong_number_of_inputs_is_reported);
    tcase_add_test(tc, an_e_graph_without_outputs_or_with_gaps_in_indexes_is_reported);
    tcase_add_test(tc, builder_checks_apply_to_what_is_decoded);
    tcase_add_test(tc, a_dim_without_a_declaration_is_declared_wide);
    tcase_add_test(tc, a_saturated_e_graph_still_reads_back);
    tcase_add_test(tc, an_input_proved_equal_to_a_constant_stays_an_input);
    tcase_add_test(tc, random_choices_among_equal_alternatives_compute_the_same_bits);
    tcase_add_test(tc, an_expression_that_overflows_int64_is_reported);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_decode_suite, NULL};
