/* test_json_errors.c - the JSON graph reader rejects bad input with a message naming the
 * node, the field and the reason, and never crashes: one test per kind of rejection,
 * plus truncations and byte flips of every example. */
#include "tj.h"
#include "lm_check.h"

#include <dirent.h>

/* A document from its four parts (dims may be NULL). free() the result. */
static char *doc(const char *dims, const char *inputs, const char *nodes, const char *outputs)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    fprintf(f, "{\"format\": \"luminal-graph\", \"version\": 1,");
    if (dims) fprintf(f, " \"dims\": [%s],", dims);
    fprintf(f, " \"inputs\": [%s], \"nodes\": [%s], \"outputs\": [%s]}", inputs, nodes, outputs);
    fclose(f);
    return s;
}

#define X23 "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2, 3]}"

/* Asserts text is rejected with code and a message containing every one of subs. */
static void reject_text(const char *text, hl_status code, const char *const *subs)
{
    lm_err e;
    lm_err_clear(&e);
    hl_graph *g = hl_graph_read_json(text, strlen(text), "t.json", &e);
    ck_assert_msg(g == NULL, "accepted: %s", text);
    ck_assert_msg(e.code == (int)code, "code %d (%s), want %d: %s", e.code, lm_code_name(e.code),
                  code, e.msg);
    for (int i = 0; subs[i]; i++)
        ck_assert_msg(strstr(e.msg, subs[i]) != NULL, "message \"%s\" lacks \"%s\"", e.msg,
                      subs[i]);
    ck_assert_str_eq(e.file, "t.json"); /* the location is in the record, field by field */
}

static void reject(const char *dims, const char *inputs, const char *nodes, const char *outputs,
                   hl_status code, const char *const *subs)
{
    char *t = doc(dims, inputs, nodes, outputs);
    reject_text(t, code, subs);
    free(t);
}

#define SUBS(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(malformed_json_names_line_and_column)
{
    reject_text("{\n  \"format\": \"luminal-graph\",\n  \"version\": 1,,\n}", HL_ERR_PARSE,
                SUBS("t.json:3:", "malformed JSON"));
    reject_text("", HL_ERR_PARSE, SUBS("t.json:", "malformed JSON"));
}
END_TEST

START_TEST(duplicate_keys_are_rejected)
{
    reject_text("{\"format\": \"luminal-graph\", \"format\": \"luminal-graph\"}", HL_ERR_PARSE,
                SUBS("malformed JSON", "duplicate"));
}
END_TEST

START_TEST(wrong_format_or_version_is_rejected)
{
    reject_text("{\"format\": \"onnx\", \"version\": 1, \"inputs\": [], \"nodes\": [], "
                "\"outputs\": [\"x\"]}",
                HL_ERR_PARSE, SUBS("field 'format'", "luminal-graph"));
    reject_text("{\"format\": \"luminal-graph\", \"version\": 2, \"inputs\": [], \"nodes\": [], "
                "\"outputs\": [\"x\"]}",
                HL_ERR_PARSE, SUBS("field 'version'", "not supported"));
    reject_text("[1, 2]", HL_ERR_PARSE, SUBS("JSON object"));
}
END_TEST

START_TEST(unknown_op_names_node_and_field)
{
    reject(NULL, X23, "{\"name\": \"h\", \"op\": \"matmull\", \"inputs\": [\"x\", \"x\"]}", "\"h\"",
           HL_ERR_PARSE, SUBS("node \'h\'", "field 'op'", "unknown op 'matmull'"));
}
END_TEST

START_TEST(wrong_arity_is_rejected)
{
    reject(NULL, X23, "{\"name\": \"y\", \"op\": \"matmul\", \"inputs\": [\"x\", \"x\", \"x\"]}",
           "\"y\"", HL_ERR_ARG,
           SUBS("node \'y\'", "field 'inputs'", "matmul takes 2 inputs, got 3"));
    reject(NULL, X23, "{\"name\": \"y\", \"op\": \"exp\"}", "\"y\"", HL_ERR_ARG,
           SUBS("exp takes 1 input, got 0"));
}
END_TEST

START_TEST(shape_mismatch_is_rejected_by_the_builder)
{
    reject(NULL, X23 ", {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [4, 5]}",
           "{\"name\": \"y\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]}", "\"y\"",
           HL_ERR_SHAPE, SUBS("node \'y\'", "matmul"));
    reject(NULL, X23 ", {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [4]}",
           "{\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"x\", \"w\"]}", "\"y\"", HL_ERR_SHAPE,
           SUBS("node \'y\'", "add"));
}
END_TEST

START_TEST(dtype_mismatch_is_rejected)
{
    reject(NULL, X23 ", {\"name\": \"i\", \"dtype\": \"int\", \"shape\": [2, 3]}",
           "{\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"x\", \"i\"]}", "\"y\"", HL_ERR_DTYPE,
           SUBS("node \'y\'", "add"));
    reject(NULL, "{\"name\": \"x\", \"dtype\": \"f33\", \"shape\": [2]}", "", "\"x\"", HL_ERR_DTYPE,
           SUBS("node \'x\'", "field 'dtype'", "unknown dtype"));
}
END_TEST

START_TEST(cycle_is_reported_with_its_path)
{
    reject(NULL, X23,
           "{\"name\": \"a\", \"op\": \"exp\", \"inputs\": [\"x\"]},"
           "{\"name\": \"b\", \"op\": \"add\", \"inputs\": [\"a\", \"c\"]},"
           "{\"name\": \"c\", \"op\": \"exp\", \"inputs\": [\"b\"]}",
           "\"c\"", HL_ERR_PARSE, SUBS("cycle", "'b' -> 'c' -> 'b'"));
    reject(NULL, X23, "{\"name\": \"a\", \"op\": \"exp\", \"inputs\": [\"a\"]}", "\"a\"",
           HL_ERR_PARSE, SUBS("node \'a\'", "field 'inputs[0]'", "reads itself"));
}
END_TEST

START_TEST(dangling_reference_is_rejected)
{
    reject(NULL, X23, "{\"name\": \"o\", \"op\": \"exp\", \"inputs\": [\"att\"]}", "\"o\"",
           HL_ERR_PARSE, SUBS("node \'o\'", "field 'inputs[0]'", "no tensor named 'att'"));
    reject(NULL, X23, "", "\"nothing\"", HL_ERR_PARSE,
           SUBS("node 'nothing'", "no tensor named 'nothing'"));
}
END_TEST

START_TEST(unknown_dim_is_rejected)
{
    reject(NULL, "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"S\", 4]}", "", "\"x\"",
           HL_ERR_DIM, SUBS("node \'x\'", "field 'shape[0]'", "unknown dim 'S'"));
    reject("{\"name\": \"T\", \"min\": 1, \"max\": 8}",
           "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"T*U\"]}", "", "\"x\"", HL_ERR_DIM,
           SUBS("unknown dim 'U'"));
}
END_TEST

START_TEST(bad_dim_declarations_are_rejected)
{
    reject("{\"name\": \"T\", \"min\": 8, \"max\": 2}", X23, "", "\"x\"", HL_ERR_DIM,
           SUBS("dim \'T\'", "field 'max'", "below min"));
    reject("{\"name\": \"T\", \"min\": 1, \"max\": 8, \"profile\": 9}", X23, "", "\"x\"",
           HL_ERR_PARSE, SUBS("field 'profile'", "out of range"));
    reject("{\"name\": \"z\", \"min\": 1, \"max\": 8}", X23, "", "\"x\"", HL_ERR_DIM,
           SUBS("dim \'z\'", "field 'name'"));
    reject("{\"name\": \"T\", \"min\": 1, \"max\": 8}, {\"name\": \"T\", \"min\": 1, \"max\": 8}",
           X23, "", "\"x\"", HL_ERR_DIM, SUBS("dim \'T\'", "declared twice"));
}
END_TEST

START_TEST(duplicate_names_are_rejected)
{
    reject(NULL, X23, "{\"name\": \"x\", \"op\": \"exp\", \"inputs\": [\"x\"]}", "\"x\"",
           HL_ERR_PARSE, SUBS("node \'x\'", "field 'name'", "used twice"));
    reject(NULL, X23, "", "\"x\", \"x\"", HL_ERR_PARSE,
           SUBS("node \'x\'", "output name 'x' is used twice"));
}
END_TEST

START_TEST(unknown_fields_are_rejected)
{
    reject(NULL, X23, "{\"name\": \"y\", \"op\": \"softmax\", \"inputs\": [\"x\"], \"axes\": 1}",
           "\"y\"", HL_ERR_PARSE, SUBS("node \'y\'", "field 'axes'", "unknown field"));
    reject_text("{\"format\": \"luminal-graph\", \"version\": 1, \"inputs\": [], \"nodes\": [], "
                "\"outputs\": [\"x\"], \"extra\": 1}",
                HL_ERR_PARSE, SUBS("field 'extra'", "unknown field"));
}
END_TEST

START_TEST(wrong_field_types_are_rejected)
{
    reject(NULL, X23,
           "{\"name\": \"y\", \"op\": \"softmax\", \"inputs\": [\"x\"], \"axis\": \"1\"}", "\"y\"",
           HL_ERR_PARSE, SUBS("field 'axis'", "expected an integer"));
    reject(NULL, X23, "{\"name\": \"y\", \"op\": \"softmax\", \"inputs\": [\"x\"], \"axis\": 2}",
           "\"y\"", HL_ERR_ARG, SUBS("field 'axis'", "out of range"));
    reject(NULL, X23,
           "{\"name\": \"y\", \"op\": \"permute\", \"inputs\": [\"x\"], \"axes\": [0, 0]}", "\"y\"",
           HL_ERR_ARG, SUBS("field 'axes'", "permutation"));
    reject(NULL, X23, "{\"name\": 7, \"op\": \"exp\", \"inputs\": [\"x\"]}", "\"x\"", HL_ERR_PARSE,
           SUBS("nodes[0]: ", "field 'name'", "expected a string"));
    reject(NULL, X23, "{\"name\": \"y\", \"op\": \"exp\", \"inputs\": [3]}", "\"y\"", HL_ERR_PARSE,
           SUBS("field 'inputs[0]'"));
}
END_TEST

START_TEST(bad_expressions_are_rejected)
{
    reject(NULL, "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"2 +\"]}", "", "\"x\"",
           HL_ERR_PARSE, SUBS("node \'x\'", "field 'shape[0]'"));
    reject(NULL, "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"z\"]}", "", "\"x\"",
           HL_ERR_PARSE, SUBS("field 'shape[0]'", "index variable z"));
    reject(NULL, "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [0]}", "", "\"x\"", HL_ERR_SHAPE,
           SUBS("field 'shape[0]'", "sizes must be >= 1"));
    reject(NULL, "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2000000000, 2000000000]}", "",
           "\"x\"", HL_ERR_SHAPE, SUBS("field 'shape'", "too large"));
    reject(NULL, "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [1,1,1,1,1,1,1,1,1]}", "",
           "\"x\"", HL_ERR_SHAPE, SUBS("field 'shape'", "at most 8 dims"));
    char deep[300];
    memset(deep, '(', 200);
    deep[200] = '1';
    memset(deep + 201, ')', 98);
    deep[299] = 0;
    char in[400];
    snprintf(in, sizeof in, "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"%s\"]}", deep);
    reject(NULL, in, "", "\"x\"", HL_ERR_PARSE, SUBS("nested deeper"));
}
END_TEST

/* Accepts text (the graph is read and freed). */
static void accept(const char *dims, const char *inputs, const char *nodes, const char *outputs)
{
    char *t = doc(dims, inputs, nodes, outputs);
    lm_err e;
    lm_err_clear(&e);
    hl_graph *g = hl_graph_read_json(t, strlen(t), "t.json", &e);
    ck_assert_msg(g != NULL, "rejected: %s: %s", t, e.msg);
    hl_graph_free(g);
    free(t);
}

/* The bounds check evaluates a stride affine in z at its two ends only and scans any other
 * stride: both must still find a read past either end, with dims at every setting. */
START_TEST(view_bounds_hold_for_affine_and_other_strides)
{
    const char *dims = "{\"name\": \"n\", \"min\": 1, \"max\": 40, \"profile\": 8}";
    const char *x40 = "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [40]}";
    /* reversed: 39 - z over n elements stays inside for every n <= 40 */
    accept(dims, x40,
           "{\"name\": \"y\", \"op\": \"exp2\", \"inputs\": "
           "[{\"tensor\": \"x\", \"shape\": [\"n\"], \"strides\": [\"39 - z\"]}]}",
           "\"y\"");
    /* 40 - z reads element 40 at z = 0 (the first end) */
    reject(dims, x40,
           "{\"name\": \"y\", \"op\": \"exp2\", \"inputs\": "
           "[{\"tensor\": \"x\", \"shape\": [\"n\"], \"strides\": [\"40 - z\"]}]}",
           "\"y\"", HL_ERR_SHAPE, SUBS("out of bounds"));
    /* z + 1 reads element n, which is 40 only with n at its largest (the last end) */
    reject(dims, x40,
           "{\"name\": \"y\", \"op\": \"exp2\", \"inputs\": "
           "[{\"tensor\": \"x\", \"shape\": [\"n\"], \"strides\": [\"z + 1\"]}]}",
           "\"y\"", HL_ERR_SHAPE, SUBS("out of bounds"));
    /* (z * 13) % 41 is not affine: its largest value, 40, lies inside the range (z = 22) */
    reject(dims, x40,
           "{\"name\": \"y\", \"op\": \"exp2\", \"inputs\": "
           "[{\"tensor\": \"x\", \"shape\": [\"n\"], \"strides\": [\"(z * 13) % 41\"]}]}",
           "\"y\"", HL_ERR_SHAPE, SUBS("out of bounds"));
}
END_TEST

START_TEST(explicit_views_are_checked)
{
    /* reads past the end of x's 6 elements */
    reject(NULL, X23,
           "{\"name\": \"y\", \"op\": \"exp2\", \"inputs\": "
           "[{\"tensor\": \"x\", \"shape\": [2, 3], \"strides\": [\"3*z\", \"2*z\"]}]}",
           "\"y\"", HL_ERR_SHAPE, SUBS("node \'y\'", "field 'inputs[0]'", "out of bounds"));
    /* views are only for primitives */
    reject(NULL, X23,
           "{\"name\": \"y\", \"op\": \"exp\", \"inputs\": "
           "[{\"tensor\": \"x\", \"shape\": [2, 3], \"strides\": [\"3*z\", \"z\"]}]}",
           "\"y\"", HL_ERR_PARSE, SUBS("only for primitives"));
    /* one stride per dim */
    reject(NULL, X23,
           "{\"name\": \"y\", \"op\": \"sin\", \"inputs\": "
           "[{\"tensor\": \"x\", \"shape\": [2, 3], \"strides\": [\"3*z\"]}]}",
           "\"y\"", HL_ERR_SHAPE, SUBS("2 sizes but 1 strides"));
    /* primitives do not broadcast: add needs equal view dims */
    reject(NULL, X23,
           "{\"name\": \"y\", \"op\": \"add\", \"inputs\": "
           "[{\"tensor\": \"x\", \"shape\": [2, 3], \"strides\": [\"3*z\", \"z\"]},"
           " {\"tensor\": \"x\", \"shape\": [3], \"strides\": [\"z\"]}]}",
           "\"y\"", HL_ERR_SHAPE, SUBS("node \'y\'"));
}
END_TEST

/* Symbolic sizes the builder cannot prove are checked at the dims' min, profile and max:
 * a reshape must keep the element count, a slice must stay inside its axis. */
START_TEST(symbolic_reshape_and_slice_are_checked)
{
    const char *dims = "{\"name\": \"S\", \"min\": 1, \"max\": 9, \"profile\": 4}";
    const char *xs = "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"S\", \"2*S\"]}";
    reject(
        dims, xs,
        "{\"name\": \"y\", \"op\": \"reshape\", \"inputs\": [\"x\"], \"shape\": [\"S*S\", \"S\"]}",
        "\"y\"", HL_ERR_SHAPE, SUBS("node \'y\'", "field 'shape'", "element count"));
    reject(
        dims, xs,
        "{\"name\": \"y\", \"op\": \"slice\", \"inputs\": [\"x\"], \"axis\": 0, \"end\": \"S+1\"}",
        "\"y\"", HL_ERR_SHAPE, SUBS("node \'y\'", "field 'end'", "past the size"));
    reject(dims, xs,
           "{\"name\": \"y\", \"op\": \"slice\", \"inputs\": [\"x\"], \"axis\": 1, \"start\": 3, "
           "\"end\": \"S\"}",
           "\"y\"", HL_ERR_SHAPE, SUBS("field 'end'", "before start"));
    reject(
        dims, xs,
        "{\"name\": \"y\", \"op\": \"pad\", \"inputs\": [\"x\"], \"axis\": 1, \"before\": \"1-S\"}",
        "\"y\"", HL_ERR_SHAPE, SUBS("field 'before'", "negative padding"));
    /* the same reshape with a consistent count is accepted */
    char *ok =
        doc(dims, xs,
            "{\"name\": \"y\", \"op\": \"reshape\", \"inputs\": [\"x\"], \"shape\": [\"S*S\", 2]}",
            "\"y\"");
    hl_graph *g = tj_read(ok);
    hl_graph_free(g);
    free(ok);
}
END_TEST

/* The location is kept field by field: file, line and column of the entry, the user's node
 * name and the field, and the message begins with them. */
START_TEST(location_fields_are_filled)
{
    const char *text = "{\"format\": \"luminal-graph\", \"version\": 1,\n"
                       " \"dims\": [{\"name\": \"T\", \"min\": 1, \"max\": 8},\n"
                       "          {\"name\": \"U\", \"min\": 4, \"max\": 2}],\n"
                       " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2]}],\n"
                       " \"nodes\": [\n"
                       "   {\"name\": \"a\", \"op\": \"exp\", \"inputs\": [\"x\"]},\n"
                       "     {\"name\": \"h\", \"op\": \"matmull\", \"inputs\": [\"a\"]}],\n"
                       " \"outputs\": [\"h\"]}\n";
    lm_err e = {0};
    ck_assert_ptr_null(hl_graph_read_json(text, strlen(text), "t.json", &e));
    ck_assert_int_eq(e.code, HL_ERR_DIM); /* the dims come first */
    ck_assert_str_eq(e.file, "t.json");
    ck_assert_uint_eq(e.line, 3);
    ck_assert_uint_eq(e.col, 11);
    ck_assert_str_eq(e.field, "max");
    ck_assert_str_eq(e.node, "");
    ck_assert_msg(strncmp(e.msg, "t.json:3:11: field 'max': dim 'U': ", 35) == 0, "%s", e.msg);
    /* with the dims fixed, the unknown op on line 7 */
    char *fixed = strdup(text);
    char *bad = strstr(fixed, "\"min\": 4");
    bad[7] = '1';
    lm_err_clear(&e);
    ck_assert_ptr_null(hl_graph_read_json(fixed, strlen(fixed), "t.json", &e));
    ck_assert_int_eq(e.code, HL_ERR_PARSE);
    ck_assert_uint_eq(e.line, 7);
    ck_assert_uint_eq(e.col, 6);
    ck_assert_str_eq(e.node, "h");
    ck_assert_str_eq(e.field, "op");
    ck_assert_str_eq(e.msg, "t.json:7:6: node 'h': field 'op': unknown op 'matmull'");
    free(fixed);
    /* malformed JSON: jansson's line and column */
    lm_err_clear(&e);
    ck_assert_ptr_null(hl_graph_read_json("{\n  \"format\": ,\n}", 17, "m.json", &e));
    ck_assert_str_eq(e.file, "m.json");
    ck_assert_uint_eq(e.line, 2);
    ck_assert_uint_gt(e.col, 0);
}
END_TEST

/* The node limit is checked while the text is first scanned, before jansson parses it:
 * a document of more than HL_JSON_MAX_NODES nodes is refused at the first node past the
 * limit, with its position, even though what follows that node is not JSON at all. */
START_TEST(the_node_limit_is_checked_before_the_document_is_parsed)
{
    const char *head = "{\"format\": \"luminal-graph\", \"version\": 1, \"inputs\": [], "
                       "\"outputs\": [\"x\"], \"nodes\": [";
    size_t hl = strlen(head), n = (size_t)HL_JSON_MAX_NODES + 1;
    size_t len = hl + 3 * n + 8;
    char *text = malloc(len + 1);
    ck_assert_ptr_nonnull(text);
    memcpy(text, head, hl);
    for (size_t i = 0; i < n; i++)
        memcpy(text + hl + 3 * i, "{},", 3);
    memcpy(text + hl + 3 * n, "]]]]]]]]", 8); /* malformed after the limit */
    text[len] = 0;
    lm_err e = {0};
    ck_assert_ptr_null(hl_graph_read_json(text, len, "big.json", &e));
    ck_assert_int_eq(e.code, HL_ERR_LIMIT);
    ck_assert_str_eq(e.field, "nodes");
    ck_assert_uint_eq(e.line, 1);
    ck_assert_uint_eq(e.col, hl + 3 * (n - 1) + 1); /* the first node past the limit */
    ck_assert_ptr_nonnull(strstr(e.msg, "more than 1000000 nodes"));
    free(text);
}
END_TEST

/* Nesting deeper than HL_JSON_MAX_DEPTH is refused where it happens, also inside a
 * comment, which the reader otherwise ignores. */
START_TEST(json_nested_too_deep_is_refused_with_its_position)
{
    char text[512];
    int k = snprintf(text, sizeof text, "{\"format\": \"luminal-graph\",\n\"comment\": ");
    for (int i = 0; i < HL_JSON_MAX_DEPTH + 5; i++)
        text[k++] = '[';
    for (int i = 0; i < HL_JSON_MAX_DEPTH + 5; i++)
        text[k++] = ']';
    k += snprintf(text + k, sizeof text - (size_t)k, "}");
    lm_err e = {0};
    ck_assert_ptr_null(hl_graph_read_json(text, (size_t)k, "deep.json", &e));
    ck_assert_int_eq(e.code, HL_ERR_LIMIT);
    ck_assert_uint_eq(e.line, 2);
    /* the object is level 1, so the bracket at column 12 + 31 opens level 33 */
    ck_assert_uint_eq(e.col, 12 + HL_JSON_MAX_DEPTH - 1);
    ck_assert_ptr_nonnull(strstr(e.msg, "nested deeper than 32"));
}
END_TEST

START_TEST(empty_outputs_and_missing_sections_are_rejected)
{
    reject(NULL, X23, "", "", HL_ERR_PARSE, SUBS("field 'outputs'", "at least one output"));
    reject_text(
        "{\"format\": \"luminal-graph\", \"version\": 1, \"inputs\": [], \"outputs\": [\"x\"]}",
        HL_ERR_PARSE, SUBS("field 'nodes'", "missing"));
}
END_TEST

START_TEST(missing_file_is_an_io_error)
{
    lm_err e;
    lm_err_clear(&e);
    ck_assert_ptr_null(hl_graph_load_json("/nonexistent/g.json", &e));
    ck_assert_int_eq(e.code, HL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/g.json"));
}
END_TEST

/* Every prefix of an example and many single-byte changes either load or fail with a
 * message; none crashes (the ASan build of this test is the proof). */
START_TEST(truncated_and_mutated_examples_never_crash)
{
    const char *names[] = {"embedding_gather.json", "primitives_strided.json",
                           "llama_block_bf16.json"};
    const char repl[] = "{}[]\",:0-9ez%*/ ";
    size_t rejected = 0, total = 0;
    for (size_t k = 0; k < 3; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", TJ_EXAMPLES, names[k]);
        size_t len;
        char *text = tj_slurp(path, &len);
        size_t step = len / 150 + 1, end = len;
        while (end > 0 && text[end - 1] != '}')
            end--; /* prefixes shorter than the document */
        for (size_t cut = 0; cut + 1 < end; cut += step) {
            lm_err e;
            lm_err_clear(&e);
            hl_graph *g = hl_graph_read_json(text, cut, names[k], &e);
            ck_assert_msg(g == NULL, "a truncated document was accepted");
            ck_assert_msg(e.msg[0] != 0, "no message");
            rejected++;
            total++;
        }
        char *copy = malloc(len);
        /* byte changes on the small examples only: the large one loads slowly under ASan */
        for (size_t pos = 0; len < 2048 && pos < len; pos += step) {
            for (size_t r = 0; r < sizeof repl - 1; r += 3) {
                memcpy(copy, text, len);
                copy[pos] = repl[r];
                lm_err e;
                lm_err_clear(&e);
                hl_graph *g = hl_graph_read_json(copy, len, names[k], &e);
                if (g)
                    hl_graph_free(g);
                else {
                    ck_assert_msg(e.msg[0] != 0, "no message");
                    rejected++;
                }
                total++;
            }
        }
        free(copy);
        free(text);
    }
    ck_assert_uint_gt(rejected, total / 2);
}
END_TEST

/* The fuzz seed corpus, replayed in the unit run: each file loads and round-trips, or is
 * rejected with a message; the regression seeds (regress_*) must be rejected. */
START_TEST(fuzz_seed_corpus_loads_or_fails_cleanly)
{
    const char *dir = LUMINAL_SOURCE_DIR "/tests/hlir_json/seeds";
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *ent;
    int files = 0, accepted = 0;
    while ((ent = readdir(d))) {
        if (ent->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        size_t len;
        char *text = tj_slurp(path, &len);
        lm_err e;
        lm_err_clear(&e);
        hl_graph *g = hl_graph_read_json(text, len, ent->d_name, &e);
        files++;
        if (strncmp(ent->d_name, "regress_", 8) == 0)
            ck_assert_msg(g == NULL, "%s: accepted", ent->d_name);
        if (g) {
            accepted++;
            char *s1 = tj_write(g);
            hl_graph *g2 = tj_read(s1);
            char *s2 = tj_write(g2);
            ck_assert_str_eq(s1, s2);
            free(s1);
            free(s2);
            hl_graph_free(g2);
            hl_graph_free(g);
        } else {
            ck_assert_msg(e.code != HL_OK && e.msg[0], "%s: rejected without a message",
                          ent->d_name);
        }
        free(text);
    }
    closedir(d);
    ck_assert_int_ge(files, 8);
    ck_assert_int_ge(accepted, 3);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hlir_json_errors");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, malformed_json_names_line_and_column);
    tcase_add_test(tc, duplicate_keys_are_rejected);
    tcase_add_test(tc, wrong_format_or_version_is_rejected);
    tcase_add_test(tc, unknown_op_names_node_and_field);
    tcase_add_test(tc, wrong_arity_is_rejected);
    tcase_add_test(tc, shape_mismatch_is_rejected_by_the_builder);
    tcase_add_test(tc, dtype_mismatch_is_rejected);
    tcase_add_test(tc, cycle_is_reported_with_its_path);
    tcase_add_test(tc, dangling_reference_is_rejected);
    tcase_add_test(tc, unknown_dim_is_rejected);
    tcase_add_test(tc, bad_dim_declarations_are_rejected);
    tcase_add_test(tc, duplicate_names_are_rejected);
    tcase_add_test(tc, unknown_fields_are_rejected);
    tcase_add_test(tc, wrong_field_types_are_rejected);
    tcase_add_test(tc, bad_expressions_are_rejected);
    tcase_add_test(tc, explicit_views_are_checked);
    tcase_add_test(tc, view_bounds_hold_for_affine_and_other_strides);
    tcase_add_test(tc, symbolic_reshape_and_slice_are_checked);
    tcase_add_test(tc, location_fields_are_filled);
    tcase_add_test(tc, the_node_limit_is_checked_before_the_document_is_parsed);
    tcase_add_test(tc, json_nested_too_deep_is_refused_with_its_position);
    tcase_add_test(tc, empty_outputs_and_missing_sections_are_rejected);
    tcase_add_test(tc, missing_file_is_an_io_error);
    tcase_add_test(tc, truncated_and_mutated_examples_never_crash);
    tcase_add_test(tc, fuzz_seed_corpus_loads_or_fails_cleanly);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
