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

/* The shared every-primitive graph (tests/common/hl_fixtures.c), asserted complete. */
static hl_graph *every_op(void)
{
    hl_graph *g = hl_fixture_every_op();
    ck_assert_ptr_nonnull(g);
    ck_assert_msg(hl_graph_error(g)->code == HL_OK, "%s", hl_graph_error(g)->msg);
    return g;
}

/* The whole file rel (under the source tree); free() it. */
static char *source_file(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", LUMINAL_SOURCE_DIR, rel);
    lm_err err = {0};
    char *text = lm_read_file(path, 0, NULL, &err);
    ck_assert_msg(text != NULL, "%s", err.msg); /* a test that cannot find its data fails */
    return text;
}

START_TEST(schema_files_match_the_builtin_texts)
{
    char *schema = source_file("hlir/encode/encode.egg");
    char *rules = source_file("hlir/encode/encode_dtype.egg");
    ck_assert_msg(strcmp(schema, hl_encode_schema()) == 0,
                  "hlir/encode/encode.egg differs from the text embedded at build time");
    ck_assert_msg(strcmp(rules, hl_encode_dtype_rules()) == 0,
                  "hlir/encode/encode_dtype.egg differs from the text embedded at build time");
    free(schema);
    free(rules);
}
END_TEST

/* ---- a small reader of encode.egg's declarations, for the vocabulary test ---- */

/* The next token of s at *i: "(", ")" or an atom (comments and spaces skipped); "" at the
 * end. */
static void token(const char *s, size_t *i, char *tok, size_t cap)
{
    for (;;) {
        while (s[*i] == ' ' || s[*i] == '\n' || s[*i] == '\t' || s[*i] == '\r')
            (*i)++;
        if (s[*i] != ';') break;
        while (s[*i] && s[*i] != '\n')
            (*i)++;
    }
    size_t k = 0;
    if (s[*i] == '(' || s[*i] == ')') {
        tok[k++] = s[(*i)++];
    } else {
        while (s[*i] && !strchr(" \n\t\r();", s[*i]) && k + 1 < cap)
            tok[k++] = s[(*i)++];
    }
    tok[k] = 0;
}

typedef struct decl_row {
    char name[64], sort[64];
    char fields[HL_ENC_MAX_FIELDS + 1][64];
    uint32_t arity;
    bool function;
} decl_row;

/* One constructor "(Name Sort...)" (its "(" read) of datatype sort. */
static void read_ctor(const char *s, size_t *i, const char *sort, decl_row *row)
{
    char tok[64];
    memset(row, 0, sizeof *row);
    token(s, i, tok, sizeof tok);
    snprintf(row->name, sizeof row->name, "%s", tok);
    snprintf(row->sort, sizeof row->sort, "%s", sort);
    for (token(s, i, tok, sizeof tok); strcmp(tok, ")") != 0; token(s, i, tok, sizeof tok)) {
        ck_assert_uint_lt(row->arity, HL_ENC_MAX_FIELDS + 1);
        snprintf(row->fields[row->arity++], sizeof row->fields[0], "%s", tok);
    }
}

/* Every constructor and function encode.egg declares, in order. */
static uint32_t read_schema(const char *s, decl_row *rows, uint32_t cap)
{
    size_t i = 0;
    uint32_t n = 0;
    char tok[64], sort[64];
    for (token(s, &i, tok, sizeof tok); tok[0]; token(s, &i, tok, sizeof tok)) {
        ck_assert_str_eq(tok, "(");
        token(s, &i, tok, sizeof tok);
        if (strcmp(tok, "datatype*") == 0 || strcmp(tok, "datatype") == 0) {
            bool star = tok[8] == '*';
            for (;;) {
                if (star) { /* (Sort (Ctor ...) ...) */
                    token(s, &i, tok, sizeof tok);
                    if (strcmp(tok, ")") == 0) break;
                    ck_assert_str_eq(tok, "(");
                }
                token(s, &i, sort, sizeof sort);
                for (token(s, &i, tok, sizeof tok); strcmp(tok, "(") == 0;
                     token(s, &i, tok, sizeof tok)) {
                    ck_assert_uint_lt(n, cap);
                    read_ctor(s, &i, sort, &rows[n++]);
                }
                ck_assert_str_eq(tok, ")");
                if (!star) break;
            }
        } else if (strcmp(tok, "function") == 0) { /* (function name (Args) Out ...) */
            ck_assert_uint_lt(n, cap);
            decl_row *row = &rows[n++];
            memset(row, 0, sizeof *row);
            row->function = true;
            token(s, &i, row->name, sizeof row->name);
            token(s, &i, tok, sizeof tok);
            ck_assert_str_eq(tok, "(");
            for (token(s, &i, tok, sizeof tok); strcmp(tok, ")") != 0;
                 token(s, &i, tok, sizeof tok))
                snprintf(row->fields[row->arity++], sizeof row->fields[0], "%s", tok);
            token(s, &i, row->sort, sizeof row->sort);
            for (int depth = 1; depth > 0;) { /* the :merge clause */
                token(s, &i, tok, sizeof tok);
                ck_assert_msg(tok[0], "encode.egg ends inside (function %s ...)", row->name);
                depth += strcmp(tok, "(") == 0 ? 1 : strcmp(tok, ")") == 0 ? -1 : 0;
            }
        } else {
            ck_abort_msg("encode.egg: unexpected top-level form (%s ...)", tok);
        }
    }
    return n;
}

/* The vocabulary in hl_encode.h is encode.egg, row for row: the same constructors in the
 * same order, the same sorts, the same fields in the same order with the same sorts. */
START_TEST(vocabulary_matches_the_schema)
{
    char *text = source_file("hlir/encode/encode.egg");
    decl_row rows[HL_ENC_COUNT + 8];
    uint32_t n = read_schema(text, rows, HL_ENC_COUNT + 8);
    ck_assert_uint_eq(n, HL_ENC_COUNT);
    for (uint32_t c = 0; c < n; c++) {
        const hl_enc_info *v = &hl_enc_vocab[c];
        ck_assert_str_eq(v->name, rows[c].name);
        ck_assert_msg(strcmp(hl_enc_sort_name(v->sort), rows[c].sort) == 0, "%s: sort %s, not %s",
                      v->name, hl_enc_sort_name(v->sort), rows[c].sort);
        ck_assert_msg(v->arity == rows[c].arity, "%s: %u fields, encode.egg has %u", v->name,
                      v->arity, rows[c].arity);
        ck_assert_int_eq(v->role == HL_ENC_ROLE_FUNCTION, rows[c].function);
        for (uint32_t k = 0; k < v->arity; k++) {
            ck_assert_msg(strcmp(hl_enc_sort_name(v->fields[k].sort), rows[c].fields[k]) == 0,
                          "%s field %u (%s): %s, not %s", v->name, k, v->fields[k].name,
                          hl_enc_sort_name(v->fields[k].sort), rows[c].fields[k]);
            ck_assert_ptr_nonnull(v->fields[k].name);
            ck_assert_ptr_nonnull(v->fields[k].meaning);
        }
        ck_assert_ptr_nonnull(v->meaning);
        ck_assert_int_eq(hl_enc_find(v->name), (int)c);
    }
    ck_assert_int_eq(hl_enc_find("Nope"), HL_ENC_NONE);
    free(text);
}
END_TEST

/* hl_op <-> OpKind (and Input, Output), hl_expr_kind <-> Expression, hl_dtype <-> DType:
 * each mapping and its inverse agree. */
START_TEST(vocabulary_maps_ops_kinds_and_dtypes_both_ways)
{
    for (int op = 0; op < HL_OP_COUNT; op++) {
        hl_enc_ctor c = hl_enc_of_op((hl_op)op);
        ck_assert_msg(c != HL_ENC_NONE, "%s has no constructor", hl_op_name((hl_op)op));
        ck_assert_int_eq(hl_enc_vocab[c].op, op);
        hl_enc_sort want = op == HL_OP_INPUT || op == HL_OP_OUTPUT ? HL_SORT_IR : HL_SORT_OPKIND;
        ck_assert_int_eq(hl_enc_vocab[c].sort, want);
    }
    ck_assert_int_eq(hl_enc_vocab[HL_ENC_SUM].op, HL_OP_SUM_REDUCE);
    ck_assert_int_eq(hl_enc_vocab[HL_ENC_MAX].op, HL_OP_MAX_REDUCE);
    for (int k = 0; k < HL_E_KIND_COUNT; k++) {
        hl_enc_ctor c = hl_enc_of_expr((hl_expr_kind)k);
        ck_assert_msg(c != HL_ENC_NONE, "expression kind %d has no constructor", k);
        ck_assert_int_eq(hl_enc_vocab[c].expr, k);
        ck_assert_int_eq(hl_enc_vocab[c].sort, HL_SORT_EXPRESSION);
    }
    for (int t = 0; t < HL_DTYPE_COUNT; t++) {
        hl_enc_ctor c = hl_enc_of_dtype((hl_dtype)t);
        ck_assert_int_eq(hl_enc_vocab[c].dtype, t);
        ck_assert_int_eq(hl_enc_vocab[c].sort, HL_SORT_DTYPE);
    }
    ck_assert_str_eq(hl_enc_vocab[HL_ENC_ADD].fields[1].name, "a_strides");
    ck_assert_str_eq(hl_enc_vocab[HL_ENC_ADD].fields[3].name, "out_strides");
    ck_assert_int_eq(hl_enc_vocab[HL_ENC_ROWMAJOR].role, HL_ENC_ROLE_RULES_ONLY);
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
    lm_err err;
    lm_err_clear(&err);
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
    lm_err err;
    lm_err_clear(&err);
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
    lm_err err;
    lm_err_clear(&err);
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
    lm_err err;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_encode_declare(e, &err), HL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "Op") || strstr(err.msg, "missing"), "%s", err.msg);
    hl_graph *g = tiny();
    hl_encoding enc;
    lm_err_clear(&err);
    ck_assert_int_eq(hl_graph_encode(g, e, &enc, &err), HL_ERR_ARG);
    ck_assert_ptr_null(enc.node_class);
    hl_graph_free(g);
    eg_engine_free(e);
}
END_TEST

START_TEST(tiny_graph_encodes_to_the_documented_text)
{
    hl_graph *g = tiny();
    lm_err err;
    lm_err_clear(&err);
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
        lm_err err;
        lm_err_clear(&err);
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
    lm_err err;
    lm_err_clear(&err);
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
    lm_err err;
    lm_err_clear(&err);
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
    lm_err err;
    lm_err_clear(&err);
    ck_assert_ptr_null(hl_graph_encode_text(g, false, &err));
    ck_assert_int_eq(err.code, HL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "no outputs"));
    /* a builder error */
    hl_t x = hl_node_tensor(g, 0);
    hl_output(g, "y", hl_sum_reduce(g, x, 5));
    ck_assert_int_ne(hl_graph_error(g)->code, HL_OK);
    lm_err_clear(&err);
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
    lm_err err;
    lm_err_clear(&err);
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
    tcase_add_test(tc, vocabulary_matches_the_schema);
    tcase_add_test(tc, vocabulary_maps_ops_kinds_and_dtypes_both_ways);
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
