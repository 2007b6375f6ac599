/* test_json_init.c - inputs' initialisation: the JSON "init" field (read, kept, written,
 * read back; every rejection located), the graph API (hl_graph_set_input_init,
 * hl_graph_input_init) and hl_graph_fill_input (ranges, determinism, the default's bytes),
 * and the bundled examples' inits. */
#include "tj.h"
#include "lm_check.h"

#include <math.h>

/* A document with the given inputs (a JSON list body) and one output per input name in
 * outs (a JSON list body). free() the result. */
static char *doc_io(const char *inputs, const char *outs)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    fprintf(f,
            "{\"format\": \"luminal-graph\", \"version\": 1,\n\"inputs\": [\n  %s\n],\n"
            "\"nodes\": [], \"outputs\": [%s]}",
            inputs, outs);
    fclose(f);
    return s;
}

/* One input x of dtype dt with the given "init" value text, at line 3, column 3. */
static char *doc_init(const char *dt, const char *init)
{
    char in[512];
    snprintf(in, sizeof in, "{\"name\": \"x\", \"dtype\": \"%s\", \"shape\": [64], \"init\": %s}",
             dt, init);
    return doc_io(in, "\"x\"");
}

/* Asserts that one input x of dtype dt with init is rejected with code, located at the
 * input (t.json:3:3, node 'x', field) and with a message holding why. */
static void reject_init(const char *dt, const char *init, hl_status code, const char *field,
                        const char *why)
{
    char *t = doc_init(dt, init);
    lm_err e;
    lm_err_clear(&e);
    hl_graph *g = hl_graph_read_json(t, strlen(t), "t.json", &e);
    ck_assert_msg(g == NULL, "accepted %s init %s", dt, init);
    ck_assert_msg(e.code == (int)code, "%s %s: code %d, want %d: %s", dt, init, e.code, code,
                  e.msg);
    ck_assert_str_eq(e.file, "t.json");
    ck_assert_uint_eq(e.line, 3);
    ck_assert_uint_eq(e.col, 3);
    ck_assert_str_eq(e.node, "x");
    ck_assert_str_eq(e.field, field);
    char pre[96];
    snprintf(pre, sizeof pre, "t.json:3:3: node 'x': field '%s': ", field);
    ck_assert_msg(strncmp(e.msg, pre, strlen(pre)) == 0, "message \"%s\" does not begin \"%s\"",
                  e.msg, pre);
    ck_assert_msg(strstr(e.msg, why) != NULL, "message \"%s\" lacks \"%s\"", e.msg, why);
    free(t);
}

/* The graph of doc_init (asserting it is accepted). */
static hl_graph *read_init(const char *dt, const char *init)
{
    char *t = doc_init(dt, init);
    hl_graph *g = tj_read(t);
    free(t);
    return g;
}

static const char *const FIVE =
    "{\"name\": \"w\", \"dtype\": \"bf16\", \"shape\": [8, 4], \"init\": {\"uniform\": "
    "[-0.05412658773652741, 0.05412658773652741]}},\n"
    "  {\"name\": \"g\", \"dtype\": \"f32\", \"shape\": [4], \"init\": {\"uniform\": [0.8, 1.2], "
    "\"comment\": \"a norm weight\"}},\n"
    "  {\"name\": \"ids\", \"dtype\": \"int\", \"shape\": [5], \"init\": {\"uniform\": [0, 16]}},\n"
    "  {\"name\": \"big\", \"dtype\": \"i64\", \"shape\": [5], \"init\": {\"uniform\": "
    "[-9007199254740992, 9007199254740992]}},\n"
    "  {\"name\": \"m\", \"dtype\": \"bool\", \"shape\": [5], \"init\": {\"uniform\": [1, 2]}},\n"
    "  {\"name\": \"plain\", \"dtype\": \"f16\", \"shape\": [3]}";
static const char *const FIVE_OUTS = "\"w\", \"g\", \"ids\", \"big\", \"m\", \"plain\"";

static void expect_init(const hl_graph *g, uint32_t i, hl_init_kind kind, double lo, double hi)
{
    hl_init in = hl_graph_input_init(g, i);
    ck_assert_int_eq(in.kind, kind);
    if (kind == HL_INIT_DEFAULT) return;
    ck_assert_msg(in.lo == lo && in.hi == hi, "input %u: [%.17g, %.17g), want [%.17g, %.17g)", i,
                  in.lo, in.hi, lo, hi);
}

static void expect_five(const hl_graph *g)
{
    ck_assert_uint_eq(hl_graph_input_count(g), 6);
    double b = (double)(float)0.05412658773652741; /* float bounds are kept as f32 */
    expect_init(g, 0, HL_INIT_UNIFORM, -b, b);
    expect_init(g, 1, HL_INIT_UNIFORM, (double)0.8f, (double)1.2f);
    expect_init(g, 2, HL_INIT_UNIFORM, 0, 16);
    expect_init(g, 3, HL_INIT_UNIFORM, -9007199254740992.0, 9007199254740992.0);
    expect_init(g, 4, HL_INIT_UNIFORM, 1, 2);
    expect_init(g, 5, HL_INIT_DEFAULT, 0, 0);
}

START_TEST(init_is_read_and_kept_per_input)
{
    char *t = doc_io(FIVE, FIVE_OUTS);
    hl_graph *g = tj_read(t);
    expect_five(g);
    lm_err e;
    lm_err_clear(&e);
    ck_assert_msg(hl_graph_check(g, &e) == HL_OK, "%s", e.msg);
    char *dump = tj_dump(g);
    ck_assert_msg(strstr(dump, "name=\"ids\" index=2 init=uniform[0, 16)") != NULL, "%s", dump);
    ck_assert_msg(strstr(dump, "name=\"plain\" index=5\n") != NULL, "%s", dump);
    free(dump);
    hl_graph_free(g);
    free(t);
}
END_TEST

START_TEST(init_round_trips_through_the_canonical_writer)
{
    char *t = doc_io(FIVE, FIVE_OUTS);
    hl_graph *g1 = tj_read(t);
    char *s1 = tj_write(g1);
    ck_assert_msg(strstr(s1, "\"name\":\"ids\",\"dtype\":\"int\",\"shape\":[5],"
                             "\"init\":{\"uniform\":[0,16]}}") != NULL,
                  "%s", s1);
    /* float bounds as the shortest decimal that reads back to the same f32 */
    ck_assert_msg(strstr(s1, "\"init\":{\"uniform\":[0.8,1.2]}") != NULL, "%s", s1);
    ck_assert_msg(strstr(s1, "\"init\":{\"uniform\":[-0.054126587,0.054126587]}") != NULL, "%s",
                  s1);
    ck_assert_msg(strstr(s1, "\"uniform\":[-9007199254740992,9007199254740992]") != NULL, "%s", s1);
    ck_assert_msg(strstr(s1, "{\"name\":\"plain\",\"dtype\":\"f16\",\"shape\":[3]}") != NULL,
                  "an input without init is written without one: %s", s1);
    ck_assert_msg(strstr(s1, "comment") == NULL, "the comment is not kept: %s", s1);
    hl_graph *g2 = tj_read(s1);
    expect_five(g2);
    char *s2 = tj_write(g2);
    ck_assert_str_eq(s1, s2);
    /* an init written as the default's range is kept as written, not dropped */
    hl_graph *g3 = read_init("f32", "{\"uniform\": [-1, 1]}");
    char *s3 = tj_write(g3);
    ck_assert_msg(strstr(s3, "\"init\":{\"uniform\":[-1.0,1.0]}") != NULL, "%s", s3);
    free(s3);
    hl_graph_free(g3);
    free(s2);
    free(s1);
    hl_graph_free(g2);
    hl_graph_free(g1);
    free(t);
}
END_TEST

START_TEST(every_bad_init_is_a_located_error)
{
    /* the JSON shape */
    reject_init("f32", "[0, 1]", HL_ERR_PARSE, "init", "expected an object");
    reject_init("f32", "{}", HL_ERR_PARSE, "init", "missing \"uniform\"");
    reject_init("f32", "{\"normal\": [0, 1]}", HL_ERR_PARSE, "init.normal", "unknown field");
    reject_init("f32", "{\"uniform\": [0]}", HL_ERR_PARSE, "init.uniform", "[lo, hi]");
    reject_init("f32", "{\"uniform\": [0, 1, 2]}", HL_ERR_PARSE, "init.uniform", "[lo, hi]");
    reject_init("f32", "{\"uniform\": 1}", HL_ERR_PARSE, "init.uniform", "[lo, hi]");
    reject_init("f32", "{\"uniform\": [\"-inf\", 1]}", HL_ERR_PARSE, "init.uniform[0]",
                "expected a number");
    reject_init("f32", "{\"uniform\": [0, null]}", HL_ERR_PARSE, "init.uniform[1]",
                "expected a number");
    /* lo < hi */
    reject_init("f32", "{\"uniform\": [1, 1]}", HL_ERR_ARG, "init.uniform", "lo must be below hi");
    reject_init("bf16", "{\"uniform\": [2, -2]}", HL_ERR_ARG, "init.uniform",
                "lo must be below hi");
    reject_init("f32", "{\"uniform\": [1, 1.00000001]}", HL_ERR_ARG, "init.uniform",
                "equal as f32");
    reject_init("int", "{\"uniform\": [3, 3]}", HL_ERR_ARG, "init.uniform", "lo must be below hi");
    /* within the dtype */
    reject_init("f16", "{\"uniform\": [0, 70000]}", HL_ERR_ARG, "init.uniform",
                "beyond the largest finite f16 (65504)");
    reject_init("f8e4m3", "{\"uniform\": [-500, 1]}", HL_ERR_ARG, "init.uniform",
                "largest finite f8e4m3 (448)");
    reject_init("f32", "{\"uniform\": [0, 1e39]}", HL_ERR_ARG, "init.uniform",
                "largest finite f32");
    reject_init("int", "{\"uniform\": [0, 2147483649]}", HL_ERR_ARG, "init.uniform",
                "must fit the input's dtype int (lo >= -2147483648, hi <= 2147483648)");
    reject_init("int", "{\"uniform\": [-2147483649, 0]}", HL_ERR_ARG, "init.uniform",
                "must fit the input's dtype int");
    reject_init("bool", "{\"uniform\": [0, 3]}", HL_ERR_ARG, "init.uniform",
                "must fit the input's dtype bool (lo >= 0, hi <= 2)");
    reject_init("bool", "{\"uniform\": [-1, 1]}", HL_ERR_ARG, "init.uniform", "dtype bool");
    /* integers for integer dtypes, exactly convertible */
    reject_init("int", "{\"uniform\": [0.5, 4]}", HL_ERR_PARSE, "init.uniform[0]",
                "expected an integer (the input is int)");
    reject_init("i64", "{\"uniform\": [0, 4.0]}", HL_ERR_PARSE, "init.uniform[1]",
                "expected an integer (the input is i64)");
    reject_init("bool", "{\"uniform\": [0, 1.5]}", HL_ERR_PARSE, "init.uniform[1]",
                "expected an integer");
    reject_init("i64", "{\"uniform\": [0, 9007199254740993]}", HL_ERR_PARSE, "init.uniform[1]",
                "beyond 2^53");
    reject_init("i64", "{\"uniform\": [-9007199254740993, 0]}", HL_ERR_PARSE, "init.uniform[0]",
                "beyond 2^53");
}
END_TEST

START_TEST(the_edges_of_each_dtype_are_accepted)
{
    hl_graph *g = read_init("int", "{\"uniform\": [-2147483648, 2147483648]}");
    expect_init(g, 0, HL_INIT_UNIFORM, -2147483648.0, 2147483648.0);
    hl_graph_free(g);
    g = read_init("f16", "{\"uniform\": [-65504, 65504]}");
    expect_init(g, 0, HL_INIT_UNIFORM, -65504.0, 65504.0);
    hl_graph_free(g);
    g = read_init("bool", "{\"uniform\": [0, 1]}");
    expect_init(g, 0, HL_INIT_UNIFORM, 0, 1);
    hl_graph_free(g);
    g = read_init("f8e5m2", "{\"uniform\": [-57344, 0]}");
    expect_init(g, 0, HL_INIT_UNIFORM, -57344.0, 0);
    hl_graph_free(g);
}
END_TEST

/* A graph with inputs of each dtype, built through the builder (every init the default). */
static hl_graph *every_dtype(void)
{
    hl_graph *g = hl_graph_new();
    ck_assert_ptr_nonnull(g);
    hl_expr d[1] = {hl_e_num(hl_graph_exprs(g), 4096)};
    for (int t = 0; t < HL_DTYPE_COUNT; t++) {
        hl_t x = hl_input(g, hl_dtype_name((hl_dtype)t), (hl_dtype)t, 1, d);
        ck_assert_uint_ne(x.node, HL_NONE);
    }
    ck_assert_int_eq(hl_graph_error(g)->code, HL_OK);
    return g;
}

static void tensor_for(const hl_graph *g, uint32_t i, int64_t n, hl_tensor *t)
{
    lm_err e;
    lm_err_clear(&e);
    hl_dtype dt = hl_graph_node(g, hl_graph_input(g, i))->dtype;
    ck_assert_msg(hl_tensor_init(t, dt, 1, &n, &e) == HL_OK, "%s", e.msg);
}

static void fill(const hl_graph *g, uint32_t i, hl_tensor *t, uint64_t seed)
{
    lm_err e;
    lm_err_clear(&e);
    ck_assert_msg(hl_graph_fill_input(g, i, t, seed, &e) == HL_OK, "%s", e.msg);
}

static bool same_bytes(const hl_tensor *a, const hl_tensor *b)
{
    return a->dtype == b->dtype && a->numel == b->numel &&
           memcmp(a->data, b->data, a->numel * hl_dtype_size(a->dtype)) == 0;
}

START_TEST(the_api_keeps_an_init_per_input_and_refuses_bad_ones)
{
    hl_graph *g = every_dtype();
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++)
        expect_init(g, i, HL_INIT_DEFAULT, 0, 0); /* hl_input keeps the default */
    hl_init w = {HL_INIT_UNIFORM, -0.1, 0.1};
    ck_assert_int_eq(hl_graph_set_input_init(g, HL_BF16, &w), HL_OK);
    expect_init(g, HL_BF16, HL_INIT_UNIFORM, (double)-0.1f, (double)0.1f);
    expect_init(g, HL_F32, HL_INIT_DEFAULT, 0, 0); /* the others are untouched */
    hl_init ids = {HL_INIT_UNIFORM, -3, 9};
    ck_assert_int_eq(hl_graph_set_input_init(g, HL_I64, &ids), HL_OK);
    expect_init(g, HL_I64, HL_INIT_UNIFORM, -3, 9);
    lm_err e;
    lm_err_clear(&e);
    ck_assert_msg(hl_graph_check(g, &e) == HL_OK, "%s", e.msg);
    /* back to the default */
    hl_init def = {HL_INIT_DEFAULT, 5, 7};
    ck_assert_int_eq(hl_graph_set_input_init(g, HL_I64, &def), HL_OK);
    expect_init(g, HL_I64, HL_INIT_DEFAULT, 0, 0);

    struct {
        uint32_t input;
        hl_init init;
        const char *why;
    } bad[] = {
        {HL_F32, {HL_INIT_UNIFORM, -INFINITY, 1}, "must be finite"},
        {HL_F32, {HL_INIT_UNIFORM, 0, NAN}, "must be finite"},
        {HL_INT, {HL_INIT_UNIFORM, 0.5, 3}, "must be integers (the input is int)"},
        {HL_I64, {HL_INIT_UNIFORM, 0, 9007199254740994.0}, "dtype i64"},
        {HL_BOOL, {HL_INIT_UNIFORM, 1, 1}, "lo must be below hi"},
        {HL_F32, {(hl_init_kind)7, 0, 1}, "kind 7 is not an initialisation"},
        {99, {HL_INIT_UNIFORM, 0, 1}, "input 99: the graph has 8 inputs"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        hl_graph_clear_error(g);
        hl_init before = bad[k].input < 8 ? hl_graph_input_init(g, bad[k].input) : def;
        ck_assert_int_eq(hl_graph_set_input_init(g, bad[k].input, &bad[k].init), HL_ERR_ARG);
        const lm_err *ge = hl_graph_error(g);
        ck_assert_int_eq(ge->code, HL_ERR_ARG);
        ck_assert_msg(strstr(ge->msg, bad[k].why) != NULL, "case %zu: \"%s\" lacks \"%s\"", k,
                      ge->msg, bad[k].why);
        if (bad[k].input < 8) {
            char name[64];
            snprintf(name, sizeof name, "input '%s'", hl_dtype_name((hl_dtype)bad[k].input));
            ck_assert_msg(strstr(ge->msg, name) != NULL, "\"%s\" lacks %s", ge->msg, name);
            hl_init after = hl_graph_input_init(g, bad[k].input);
            ck_assert(after.kind == before.kind && after.lo == before.lo && after.hi == before.hi);
        }
    }
    /* sticky: with the error kept, a valid call does nothing */
    ck_assert_int_eq(hl_graph_set_input_init(g, HL_F32, &w), HL_ERR_ARG);
    expect_init(g, HL_F32, HL_INIT_DEFAULT, 0, 0);
    hl_graph_clear_error(g);
    ck_assert_int_eq(hl_graph_set_input_init(g, HL_F32, NULL), HL_ERR_ARG);
    hl_graph_free(g);
}
END_TEST

START_TEST(fill_input_without_init_is_fill_random_byte_for_byte)
{
    hl_graph *g = every_dtype();
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        hl_tensor a, b;
        tensor_for(g, i, 4096, &a);
        tensor_for(g, i, 4096, &b);
        fill(g, i, &a, 11);
        hl_tensor_fill_random(&b, 11, i); /* stream = the input's index */
        ck_assert_msg(same_bytes(&a, &b), "%s", hl_dtype_name(a.dtype));
        hl_tensor_fini(&a);
        hl_tensor_fini(&b);
    }
    hl_graph_free(g);
}
END_TEST

/* The uniform formula with the default's ranges gives the default's bytes: one draw per
 * element, floats lo + (hi - lo) * u, integers lo + floor(x * n / 2^32). */
START_TEST(uniform_over_the_default_ranges_gives_the_default_bytes)
{
    hl_graph *g = every_dtype();
    for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
        hl_dtype dt = (hl_dtype)i;
        hl_init in = {HL_INIT_UNIFORM, -1, 1};
        if (dt == HL_INT || dt == HL_I64) in = (hl_init){HL_INIT_UNIFORM, 0, 4};
        if (dt == HL_BOOL) in = (hl_init){HL_INIT_UNIFORM, 0, 2};
        ck_assert_int_eq(hl_graph_set_input_init(g, i, &in), HL_OK);
        hl_tensor a, b;
        tensor_for(g, i, 4096, &a);
        tensor_for(g, i, 4096, &b);
        fill(g, i, &a, 3);
        hl_tensor_fill_random(&b, 3, i);
        ck_assert_msg(same_bytes(&a, &b), "%s", hl_dtype_name(dt));
        hl_tensor_fini(&a);
        hl_tensor_fini(&b);
    }
    hl_graph_free(g);
}
END_TEST

/* Fills input i (set to [lo, hi)) with n elements and checks every value is in the range
 * (floats between lo and hi rounded to their dtype, which may round past a bound that it
 * cannot hold; integers below hi), that the values reach both ends (within frac of the
 * width) and that the mean is near the middle. */
static void check_range(hl_graph *g, uint32_t i, double lo, double hi, int64_t n, double frac)
{
    hl_init in = {HL_INIT_UNIFORM, lo, hi};
    ck_assert_int_eq(hl_graph_set_input_init(g, i, &in), HL_OK);
    hl_init kept = hl_graph_input_init(g, i);
    hl_tensor t;
    tensor_for(g, i, n, &t);
    fill(g, i, &t, 5);
    bool is_float = hl_dtype_is_float(t.dtype);
    double rlo = is_float ? (double)hl_round_to(t.dtype, (float)kept.lo) : kept.lo;
    double rhi = is_float ? (double)hl_round_to(t.dtype, (float)kept.hi) : kept.hi;
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (size_t k = 0; k < t.numel; k++) {
        double v = hl_tensor_get(&t, k); /* exact: integers are at most 2^53 */
        ck_assert_msg(v >= rlo && (is_float ? v <= rhi : v < rhi),
                      "%s: %.17g outside [%.17g, %.17g)", hl_dtype_name(t.dtype), v, kept.lo,
                      kept.hi);
        if (!is_float) ck_assert(v == floor(v));
        mn = fmin(mn, v);
        mx = fmax(mx, v);
        sum += v;
    }
    double w = kept.hi - kept.lo;
    ck_assert_msg(mn <= kept.lo + frac * w && mx >= kept.hi - frac * w - (is_float ? 0 : 1),
                  "%s: values span only [%.17g, %.17g] of [%.17g, %.17g)", hl_dtype_name(t.dtype),
                  mn, mx, kept.lo, kept.hi);
    double mean = sum / (double)t.numel, mid = kept.lo + w / 2 - (is_float ? 0 : 0.5);
    ck_assert_msg(fabs(mean - mid) <= 0.05 * w, "%s: mean %.17g, middle %.17g",
                  hl_dtype_name(t.dtype), mean, mid);
    hl_tensor_fini(&t);
}

START_TEST(fill_input_respects_each_range)
{
    hl_graph *g = every_dtype();
    check_range(g, HL_F32, -0.0541265877, 0.0541265877, 4096, 0.01);
    check_range(g, HL_BF16, 0.8, 1.2, 4096, 0.01);
    check_range(g, HL_F16, -0.1, 0.1, 4096, 0.01);
    check_range(g, HL_F8E4M3, -2, 448, 4096, 0.02);
    check_range(g, HL_F8E5M2, 1000, 2000, 4096, 0.05);
    check_range(g, HL_INT, -5, 7, 4096, 0);
    check_range(g, HL_INT, 0, 50257, 4096, 0.01);                    /* a vocabulary */
    check_range(g, HL_INT, -2147483648.0, 2147483648.0, 4096, 0.01); /* n = 2^32: one draw */
    check_range(g, HL_I64, -9007199254740992.0, 9007199254740992.0, 4096, 0.01); /* two */
    check_range(g, HL_I64, 4294967296.0, 4294967296.0 * 3, 4096, 0.01);
    check_range(g, HL_BOOL, 0, 2, 4096, 0);
    /* all true, all false */
    check_range(g, HL_BOOL, 1, 2, 64, 0);
    check_range(g, HL_BOOL, 0, 1, 64, 0);
    /* every integer of a small range occurs */
    hl_init in = {HL_INIT_UNIFORM, -5, 7};
    ck_assert_int_eq(hl_graph_set_input_init(g, HL_INT, &in), HL_OK);
    hl_tensor t;
    tensor_for(g, HL_INT, 4096, &t);
    fill(g, HL_INT, &t, 9);
    int seen[12] = {0};
    for (size_t k = 0; k < t.numel; k++)
        seen[(int)hl_tensor_get(&t, k) + 5]++;
    for (int k = 0; k < 12; k++)
        ck_assert_msg(seen[k] > 4096 / 12 / 2, "%d occurs %d times", k - 5, seen[k]);
    hl_tensor_fini(&t);
    hl_graph_free(g);
}
END_TEST

START_TEST(fill_input_is_deterministic_and_streams_by_input)
{
    char *text = doc_io("{\"name\": \"a\", \"dtype\": \"bf16\", \"shape\": [512], \"init\": "
                        "{\"uniform\": [-0.2, 0.2]}},\n"
                        "  {\"name\": \"b\", \"dtype\": \"bf16\", \"shape\": [512], \"init\": "
                        "{\"uniform\": [-0.2, 0.2]}}",
                        "\"a\", \"b\"");
    hl_graph *g = tj_read(text);
    hl_tensor a1, a2, a3, b1;
    tensor_for(g, 0, 512, &a1);
    tensor_for(g, 0, 512, &a2);
    tensor_for(g, 0, 512, &a3);
    tensor_for(g, 1, 512, &b1);
    fill(g, 0, &a1, 42);
    fill(g, 0, &a2, 42);
    fill(g, 0, &a3, 43);
    fill(g, 1, &b1, 42);
    ck_assert(same_bytes(&a1, &a2));
    ck_assert(!same_bytes(&a1, &a3)); /* the seed matters */
    ck_assert(!same_bytes(&a1, &b1)); /* so does the input: stream = its index */
    /* exactly: b's element k is lo + (hi - lo) u_k rounded to bf16, where -1 + 2 u_k is
     * element k of hl_tensor_fill_random's f32 draw on stream 1 (exact in f32) */
    hl_tensor r;
    int64_t n = 512;
    lm_err e;
    lm_err_clear(&e);
    ck_assert_int_eq(hl_tensor_init(&r, HL_F32, 1, &n, &e), HL_OK);
    hl_tensor_fill_random(&r, 42, 1);
    hl_init in = hl_graph_input_init(g, 1);
    for (size_t k = 0; k < r.numel; k++) {
        double u = (hl_tensor_get(&r, k) + 1.0) / 2.0;
        float want = hl_round_to(HL_BF16, (float)(in.lo + (in.hi - in.lo) * u));
        ck_assert_msg(hl_tensor_get(&b1, k) == (double)want, "element %zu: %g, want %g", k,
                      hl_tensor_get(&b1, k), (double)want);
    }
    hl_tensor_fini(&r);
    hl_tensor_fini(&a1);
    hl_tensor_fini(&a2);
    hl_tensor_fini(&a3);
    hl_tensor_fini(&b1);
    hl_graph_free(g);
    free(text);
}
END_TEST

START_TEST(fill_input_refuses_a_tensor_that_is_not_the_inputs)
{
    char *text = doc_init("bf16", "{\"uniform\": [0, 1]}");
    hl_graph *g = tj_read(text);
    hl_tensor t;
    int64_t n = 64, dims2[2] = {8, 8};
    lm_err e;
    lm_err_clear(&e);
    ck_assert_int_eq(hl_tensor_init(&t, HL_F32, 1, &n, &e), HL_OK);
    ck_assert_int_eq(hl_graph_fill_input(g, 0, &t, 1, &e), HL_ERR_ARG);
    ck_assert_msg(strstr(e.msg, "t.json:3:3: node 'x': ") == e.msg, "%s", e.msg);
    ck_assert_msg(strstr(e.msg, "not a bf16 tensor of 1 dims (it is f32 with 1)"), "%s", e.msg);
    hl_tensor_fini(&t);
    lm_err_clear(&e);
    ck_assert_int_eq(hl_tensor_init(&t, HL_BF16, 2, dims2, &e), HL_OK);
    ck_assert_int_eq(hl_graph_fill_input(g, 0, &t, 1, &e), HL_ERR_ARG);
    ck_assert_msg(strstr(e.msg, "(it is bf16 with 2)"), "%s", e.msg);
    lm_err_clear(&e);
    ck_assert_int_eq(hl_graph_fill_input(g, 1, &t, 1, &e), HL_ERR_ARG);
    ck_assert_msg(strstr(e.msg, "fill input 1: the graph has 1 inputs"), "%s", e.msg);
    lm_err_clear(&e);
    ck_assert_int_eq(hl_graph_fill_input(g, 0, NULL, 1, &e), HL_ERR_ARG);
    ck_assert_msg(strstr(e.msg, "it is missing"), "%s", e.msg);
    hl_tensor_fini(&t);
    hl_graph_free(g);
    free(text);
}
END_TEST

/* Every input of every example that declares an init gets values inside it, at small
 * dims; weight matrices are scaled by their fan-in (examples/graphs/README.md); the
 * embedding example's ids are valid rows of its table. */
START_TEST(every_example_fills_its_inputs_within_their_init)
{
    size_t n;
    char **names = tj_examples(&n);
    int with_init = 0, weights = 0;
    for (size_t k = 0; k < n; k++) {
        hl_graph *g = tj_load_example(names[k]);
        int64_t vals[16];
        ck_assert_uint_le(hl_graph_dim_count(g), 16);
        tj_dims(g, 3, vals);
        hl_tensor *in = tj_inputs(g, vals, 7); /* hl_graph_fill_input, seed 7 */
        for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
            hl_init init = hl_graph_input_init(g, i);
            if (init.kind != HL_INIT_UNIFORM) continue;
            with_init++;
            bool is_float = hl_dtype_is_float(in[i].dtype);
            double lo = is_float ? (double)hl_round_to(in[i].dtype, (float)init.lo) : init.lo;
            double hi = is_float ? (double)hl_round_to(in[i].dtype, (float)init.hi) : init.hi;
            double mn = INFINITY, mx = -INFINITY;
            for (size_t e = 0; e < in[i].numel; e++) {
                double v = hl_tensor_get(&in[i], e);
                mn = fmin(mn, v);
                mx = fmax(mx, v);
            }
            ck_assert_msg(mn >= lo && (is_float ? mx <= hi : mx < hi),
                          "%s: input '%s' spans [%g, %g], its init is [%g, %g)", names[k],
                          hl_graph_node(g, hl_graph_input(g, i))->name, mn, mx, init.lo, init.hi);
        }
        /* weight matrices (2-D inputs named w...) have std 1/sqrt(fan_in): bound sqrt(3/fan_in) */
        for (uint32_t i = 0; i < hl_graph_input_count(g); i++) {
            const hl_node *x = hl_graph_node(g, hl_graph_input(g, i));
            if (x->name[0] != 'w' || x->ndim != 2) continue;
            hl_init init = hl_graph_input_init(g, i);
            double want = (double)(float)sqrt(3.0 / (double)tj_eval(g, x->shape[0], vals));
            ck_assert_msg(init.kind == HL_INIT_UNIFORM && init.lo == -init.hi &&
                              fabs(init.hi - want) <= 1e-6 * want,
                          "%s: weight '%s' has init [%g, %g), want +-%g (fan-in %lld)", names[k],
                          x->name, init.lo, init.hi, want,
                          (long long)tj_eval(g, x->shape[0], vals));
            weights++;
        }
        if (strcmp(names[k], "embedding_gather.json") == 0) {
            const hl_node *table = hl_graph_node(g, hl_graph_input(g, 0));
            hl_init ids = hl_graph_input_init(g, 1);
            int64_t rows = tj_eval(g, table->shape[0], vals);
            ck_assert_int_eq(ids.kind, HL_INIT_UNIFORM);
            ck_assert_msg(ids.lo == 0 && ids.hi == (double)rows,
                          "the ids should cover the table's %lld rows, init [%g, %g)",
                          (long long)rows, ids.lo, ids.hi);
        }
        tj_free_tensors(in, hl_graph_input_count(g));
        hl_graph_free(g);
    }
    ck_assert_msg(with_init >= 20, "only %d example inputs declare an init", with_init);
    ck_assert_msg(weights >= 13, "only %d weight matrices among the examples", weights);
    tj_free_list(names, n);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hlir_json_init");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, init_is_read_and_kept_per_input);
    tcase_add_test(tc, init_round_trips_through_the_canonical_writer);
    tcase_add_test(tc, every_bad_init_is_a_located_error);
    tcase_add_test(tc, the_edges_of_each_dtype_are_accepted);
    tcase_add_test(tc, the_api_keeps_an_init_per_input_and_refuses_bad_ones);
    tcase_add_test(tc, fill_input_without_init_is_fill_random_byte_for_byte);
    tcase_add_test(tc, uniform_over_the_default_ranges_gives_the_default_bytes);
    tcase_add_test(tc, fill_input_respects_each_range);
    tcase_add_test(tc, fill_input_is_deterministic_and_streams_by_input);
    tcase_add_test(tc, fill_input_refuses_a_tensor_that_is_not_the_inputs);
    tcase_add_test(tc, every_example_fills_its_inputs_within_their_init);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
