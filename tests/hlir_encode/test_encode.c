/* test_encode.c - writing graphs into the e-graph: the schema, the program text, the C
 * path, and that the two paths build the same e-graph byte for byte. */
#include "te.h"
#include "lm_check.h"

/* x: f32 [2, 3] -> s = sum over axis 1 -> output "s" */
static hl_graph *tiny(void)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[2] = {hl_n(g, 2), hl_n(g, 3)};
    hl_t x = hl_input(g, "x", HL_F32, 2, d);
    hl_output(g, "s", hl_sum_reduce(g, x, 1));
    ck_assert_int_eq(hl_graph_error(g)->code, HL_OK);
    return g;
}

/* One of every primitive, a dynamic dim, a strided view and two outputs. */
static hl_graph *every_op(void)
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
    hl_t idx =
        hl_iota(g, hl_e_mod(hl_graph_exprs(g), hl_e_z(hl_graph_exprs(g)), hl_n(g, 3)), hl_n(g, 5));
    hl_t ga = hl_gather(g, idx, mx);
    hl_t sc = hl_scatter(g, s, hl_iota(g, hl_e_z(hl_graph_exprs(g)), hl_n(g, 2)),
                         hl_slice(g, ga, 0, hl_n(g, 0), hl_n(g, 2)));
    hl_output(g, "sc", sc);
    hl_output(g, "b", hl_cast(g, b, HL_BF16));
    ck_assert_msg(hl_graph_error(g)->code == HL_OK, "%s", hl_graph_error(g)->msg);
    return g;
}

static void file_is(const char *rel, const char *want)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", LUMINAL_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    ck_assert_msg(strcmp(buf, want) == 0, "%s differs from its copy in hlir/encode_schema.c", rel);
}

START_TEST(schema_files_match_the_builtin_texts)
{
    file_is("hlir/encode.egg", hl_encode_schema());
    file_is("hlir/encode_dtype.egg", hl_encode_dtype_rules());
}
END_TEST

/* (extract (dtype tK)) for K < n after the program (and the dtype_prop rules, when
 * saturate), as printed text. */
static char *dtypes_of(const char *program, uint32_t n, bool saturate)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    eg_options o;
    eg_options_default(&o);
    o.out = out;
    eg_engine *e = eg_engine_new(&o, NULL);
    hl_error err;
    hl_error_clear(&err);
    ck_assert_int_eq(hl_encode_declare(e, &err), HL_OK);
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e, program, "program", &ee) == 0, "%s", ee.msg);
    if (saturate)
        ck_assert_msg(eg_run_text(e, "(run-schedule (saturate dtype_prop))", "run", &ee) == 0, "%s",
                      ee.msg);
    for (uint32_t k = 0; k < n; k++) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "(extract (dtype t%u))", k);
        ck_assert_msg(eg_run_text(e, cmd, "extract", &ee) == 0, "t%u: %s", k, ee.msg);
    }
    eg_engine_free(e);
    fclose(out);
    return buf;
}

/* The program text without its (set (dtype ...)) lines, the rules deriving them
 * instead, gives every node the dtype the encoder wrote. */
static void dtype_rules_agree(const hl_graph *g, const char *what)
{
    hl_error err;
    hl_error_clear(&err);
    char *text = hl_graph_encode_text(g, false, &err);
    ck_assert_ptr_nonnull(text);
    char *stripped = malloc(strlen(text) + 1);
    size_t k = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line + 1) : strlen(line);
        if (strncmp(line, "(set (dtype ", 12) != 0) {
            memcpy(stripped + k, line, n);
            k += n;
        }
        line += n;
    }
    stripped[k] = 0;
    uint32_t n = hl_graph_node_count(g);
    char *want = dtypes_of(text, n, false), *got = dtypes_of(stripped, n, true);
    uint32_t lines = 0;
    for (const char *c = want; *c; c++)
        lines += *c == '\n';
    ck_assert_uint_eq(lines, n); /* one dtype per node, e.g. "(Bf16)" */
    ck_assert_msg(strcmp(want, got) == 0, "%s: derived dtypes differ", what);
    free(want);
    free(got);
    free(stripped);
    free(text);
}

START_TEST(dtype_rules_derive_the_dtypes_the_encoder_writes)
{
    hl_graph *g = every_op();
    dtype_rules_agree(g, "every_op");
    hl_graph_free(g);
    char *paths[TE_MAX_EXAMPLES];
    int n = te_examples(paths);
    for (int i = 0; i < n; i++) {
        g = te_load(paths[i]);
        dtype_rules_agree(g, paths[i]);
        hl_graph_free(g);
        free(paths[i]);
    }
}
END_TEST

START_TEST(declare_loads_the_schema_once)
{
    eg_engine *e = eg_engine_new(NULL, NULL);
    hl_error err;
    hl_error_clear(&err);
    ck_assert_int_eq(hl_encode_declare(e, &err), HL_OK);
    size_t tables = eg_table_count(e);
    ck_assert_int_eq(hl_encode_declare(e, &err), HL_OK); /* again: nothing new */
    ck_assert_uint_eq(eg_table_count(e), tables);
    int op = eg_table_lookup(e, "Op"), sum = eg_table_lookup(e, "Sum");
    ck_assert_int_ge(op, 0);
    ck_assert_uint_eq(eg_table_arity(e, op), 2);
    ck_assert_uint_eq(eg_table_arity(e, sum), 5);
    ck_assert_int_ge(eg_sort_lookup(e, "IList"), 0);
    ck_assert_int_ge(eg_table_lookup(e, "dtype"), 0);
    eg_engine_free(e);
}
END_TEST

START_TEST(declare_rejects_an_engine_with_other_meanings_for_the_names)
{
    eg_engine *e = eg_engine_new(NULL, NULL);
    lm_err ee = {0};
    ck_assert_int_eq(eg_run_text(e, "(datatype Thing (Op i64))", "mine", &ee), 0);
    hl_error err;
    hl_error_clear(&err);
    ck_assert_int_eq(hl_encode_declare(e, &err), HL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "Op") || strstr(err.msg, "missing"), "%s", err.msg);
    hl_graph *g = tiny();
    hl_encoding enc;
    hl_error_clear(&err);
    ck_assert_int_eq(hl_graph_encode(g, e, &enc, &err), HL_ERR_ARG);
    ck_assert_ptr_null(enc.node_class);
    hl_graph_free(g);
    eg_engine_free(e);
}
END_TEST

START_TEST(tiny_graph_encodes_to_the_documented_text)
{
    hl_graph *g = tiny();
    hl_error err;
    hl_error_clear(&err);
    char *text = hl_graph_encode_text(g, false, &err);
    ck_assert_msg(text != NULL, "%s", err.msg);
    const char *want =
        "(let t0 (Input 0 \"x\" (F32) (ECons (MNum 2) (ECons (MNum 3) (ENil)))))\n"
        "(set (dtype t0) (F32))\n"
        "(let t1 (Op (Sum (ECons (MNum 2) (ENil)) (MNum 3) (ECons (MMul (MIter) (MNum 3)) "
        "(ENil)) (MIter) (ECons (MIter) (ENil))) (ICons t0 (INil))))\n"
        "(set (dtype t1) (F32))\n"
        "(let t2 (Output t1 0 \"s\" (ECons (MNum 2) (ENil)) (ECons (MIter) (ENil))))\n"
        "(set (dtype t2) (F32))\n"
        "(let root t2)\n";
    ck_assert_str_eq(text, want);
    free(text);
    hl_graph_free(g);
}
END_TEST

static void same_bytes(const hl_graph *g, const char *what)
{
    eg_engine *a = te_encode_text(g);
    eg_engine *b = te_encode_c(g, NULL);
    char *ja = te_serialized(a), *jb = te_serialized(b);
    ck_assert_msg(strcmp(ja, jb) == 0, "%s: text and C paths differ", what);
    ck_assert_uint_eq(eg_node_count(a), eg_node_count(b)); /* dtype, lower, upper too */
    free(ja);
    free(jb);
    eg_engine_free(a);
    eg_engine_free(b);
}

START_TEST(text_and_c_paths_give_the_same_bytes_on_a_builder_graph)
{
    hl_graph *g = every_op();
    same_bytes(g, "every_op");
    hl_graph_free(g);
}
END_TEST

START_TEST(text_and_c_paths_give_the_same_bytes_on_every_example)
{
    char *paths[TE_MAX_EXAMPLES];
    int n = te_examples(paths);
    ck_assert_msg(n > 0, "no example graphs in %s/examples/graphs", LUMINAL_SOURCE_DIR);
    for (int i = 0; i < n; i++) {
        hl_graph *g = te_load(paths[i]);
        same_bytes(g, paths[i]);
        hl_graph_free(g);
        free(paths[i]);
    }
}
END_TEST

START_TEST(text_and_c_paths_agree_on_generated_graphs)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        hl_gen_opts o = {.n_ops = 16, .dynamic = seed % 2 == 0};
        hl_error err;
        hl_error_clear(&err);
        hl_graph *g = hl_graph_generate(seed, &o, &err);
        ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, err.msg);
        char what[32];
        snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
        same_bytes(g, what);
        hl_graph_free(g);
    }
}
END_TEST

/* In the text, a let names only globals defined before it, and node lets come in
 * increasing id order (Kahn order, lowest id first). */
START_TEST(lets_come_in_kahn_order_and_refer_only_backwards)
{
    hl_graph *g = every_op();
    hl_error err;
    hl_error_clear(&err);
    char *text = hl_graph_encode_text(g, false, &err);
    ck_assert_ptr_nonnull(text);
    long last = -1;
    uint32_t lets = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        long k;
        if (sscanf(line, "(let t%ld ", &k) == 1) {
            ck_assert_int_gt(k, last);
            last = k;
            lets++;
        }
        char *body = strncmp(line, "(let ", 5) == 0 ? strchr(line + 5, ' ') : line;
        for (char *r = strstr(body, " t"); r; r = strstr(r + 1, " t")) {
            long ref;
            if (sscanf(r, " t%ld", &ref) != 1) continue;
            ck_assert_msg(ref <= last, "line refers to t%ld before its let: %s", ref, line);
            if (strncmp(line, "(let t", 6) == 0) ck_assert_int_lt(ref, last);
        }
    }
    ck_assert_uint_eq(lets, hl_graph_node_count(g));
    free(text);
    hl_graph_free(g);
}
END_TEST

START_TEST(encoding_reports_each_node_class_and_the_root)
{
    hl_graph *g = every_op();
    hl_encoding enc;
    eg_engine *e = te_encode_c(g, &enc);
    ck_assert_uint_eq(enc.n_nodes, hl_graph_node_count(g));
    /* nodes are distinct terms here except where the graph repeats itself */
    ck_assert(enc.node_class[0] != enc.node_class[1]);
    /* the root is (OutputJoin out0 out1) */
    int oj = eg_table_lookup(e, "OutputJoin");
    eg_value args[2] = {enc.node_class[hl_graph_output(g, 0)],
                        enc.node_class[hl_graph_output(g, 1)]};
    eg_value got;
    lm_err ee = {0};
    uint64_t before = eg_node_count(e);
    ck_assert_int_eq(eg_add_term(e, oj, args, 2, &got, &ee), 0);
    ck_assert_uint_eq(eg_node_count(e), before); /* found, not added */
    ck_assert(eg_find(e, got) == eg_find(e, enc.root));
    /* the dtype function holds each node's dtype */
    int dt = eg_table_lookup(e, "dtype");
    ck_assert_uint_eq(eg_table_size(e, dt), hl_graph_node_count(g));
    hl_encoding_fini(&enc);
    hl_encoding_fini(&enc); /* twice is harmless */
    hl_encoding_fini(NULL);
    eg_engine_free(e);
    hl_graph_free(g);
}
END_TEST

START_TEST(dims_become_dim_terms_and_interval_facts)
{
    hl_graph *g = every_op();
    hl_error err;
    hl_error_clear(&err);
    char *text = hl_graph_encode_text(g, false, &err);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "(let d0 (Dim 0 \"n\" 1 64 4))\n"
                                       "(set (lower (MVar \"n\")) 1)\n"
                                       "(set (upper (MVar \"n\")) 64)\n"));
    free(text);
    hl_graph_free(g);
}
END_TEST

START_TEST(graphs_without_outputs_or_with_errors_are_refused)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 4)};
    hl_input(g, "x", HL_F32, 1, d);
    hl_error err;
    hl_error_clear(&err);
    ck_assert_ptr_null(hl_graph_encode_text(g, false, &err));
    ck_assert_int_eq(err.code, HL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "no outputs"));
    /* a builder error */
    hl_t x = hl_node_tensor(g, 0);
    hl_output(g, "y", hl_sum_reduce(g, x, 5));
    ck_assert_int_ne(hl_graph_error(g)->code, HL_OK);
    hl_error_clear(&err);
    eg_engine *e = eg_engine_new(NULL, NULL);
    hl_encoding enc;
    ck_assert_int_eq(hl_graph_encode(g, e, &enc, &err), HL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "builder error"));
    eg_engine_free(e);
    hl_graph_free(g);
}
END_TEST

START_TEST(fprint_egraph_writes_the_schema_then_the_program)
{
    hl_graph *g = tiny();
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    hl_error err;
    hl_error_clear(&err);
    ck_assert_int_eq(hl_graph_fprint_egraph(g, f, &err), HL_OK);
    fclose(f);
    size_t ls = strlen(hl_encode_schema());
    ck_assert_int_eq(strncmp(buf, hl_encode_schema(), ls), 0);
    ck_assert_ptr_nonnull(strstr(buf + ls, "(let t0 (Input 0 \"x\""));
    ck_assert_str_eq(buf + n - strlen("(let root t2)\n"), "(let root t2)\n");
    /* and the engine accepts it as a program */
    eg_engine *e = eg_engine_new(NULL, NULL);
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e, buf, "emitted", &ee) == 0, "%s", ee.msg);
    eg_engine_free(e);
    free(buf);
    hl_graph_free(g);
}
END_TEST

START_TEST(names_with_quotes_and_backslashes_survive_the_text)
{
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 4)};
    hl_t x = hl_input(g, "in \"q\" \\ x", HL_F32, 1, d);
    hl_output(g, "out\tput", hl_exp2(g, x));
    same_bytes(g, "quoted names");
    hl_graph *back = te_roundtrip(g);
    ck_assert_str_eq(hl_graph_node(back, hl_graph_input(back, 0))->name, "in \"q\" \\ x");
    ck_assert_str_eq(hl_graph_node(back, hl_graph_output(back, 0))->name, "out\tput");
    hl_graph_free(back);
    hl_graph_free(g);
}
END_TEST

START_TEST(constants_keep_their_exact_values_on_both_paths)
{
    const float vals[] = {0.1f, -1e30f, 1e-45f, 3.4028235e38f, INFINITY, -INFINITY, NAN, 7.0f};
    hl_graph *g = hl_graph_new();
    hl_t acc = hl_scalar(g, vals[0], HL_F32);
    for (size_t i = 1; i < sizeof vals / sizeof vals[0]; i++)
        acc = hl_add(g, acc, hl_scalar(g, vals[i], HL_F32));
    hl_output(g, "c", acc);
    same_bytes(g, "constants");
    hl_graph *back = te_roundtrip(g);
    size_t k = 0;
    for (uint32_t i = 0; i < hl_graph_node_count(back); i++) {
        const hl_node *x = hl_graph_node(back, i);
        if (x->op != HL_OP_CONSTANT) continue;
        ck_assert_uint_lt(k, sizeof vals / sizeof vals[0]);
        if (isnan(vals[k]))
            ck_assert(isnan(x->constant));
        else
            ck_assert_msg(memcmp(&x->constant, &vals[k], sizeof(float)) == 0, "constant %zu", k);
        k++;
    }
    ck_assert_uint_eq(k, sizeof vals / sizeof vals[0]);
    hl_graph_free(back);
    hl_graph_free(g);
}
END_TEST

static Suite *hlir_encode_suite(void)
{
    Suite *s = suite_create("hlir_encode");
    TCase *tc = tcase_create("encode");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, schema_files_match_the_builtin_texts);
    tcase_add_test(tc, dtype_rules_derive_the_dtypes_the_encoder_writes);
    tcase_add_test(tc, declare_loads_the_schema_once);
    tcase_add_test(tc, declare_rejects_an_engine_with_other_meanings_for_the_names);
    tcase_add_test(tc, tiny_graph_encodes_to_the_documented_text);
    tcase_add_test(tc, text_and_c_paths_give_the_same_bytes_on_a_builder_graph);
    tcase_add_test(tc, text_and_c_paths_give_the_same_bytes_on_every_example);
    tcase_add_test(tc, text_and_c_paths_agree_on_generated_graphs);
    tcase_add_test(tc, lets_come_in_kahn_order_and_refer_only_backwards);
    tcase_add_test(tc, encoding_reports_each_node_class_and_the_root);
    tcase_add_test(tc, dims_become_dim_terms_and_interval_facts);
    tcase_add_test(tc, graphs_without_outputs_or_with_errors_are_refused);
    tcase_add_test(tc, fprint_egraph_writes_the_schema_then_the_program);
    tcase_add_test(tc, names_with_quotes_and_backslashes_survive_the_text);
    tcase_add_test(tc, constants_keep_their_exact_values_on_both_paths);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {hlir_encode_suite, NULL};
