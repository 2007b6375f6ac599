/* embed.c: a rule experiment driven from C through egraph.h, the engine's public API.
 *
 *   embed [OUT.json]
 *
 * It declares a small arithmetic language and its rewrite rules as program text, builds
 * the term (x * 1) + (0 + x) from C, states one equality from C ((x * 2) = (x << 1), a
 * fact the rules do not know), saturates (the rules prove the root equal to x * 2, hence
 * to x << 1), prints the size of every table and the rows
 * of one, extracts the cheapest term of the root with its cost, and serializes the
 * e-graph: a summary of the plain structure on stdout and, when OUT.json is given, the
 * egraph-serialize JSON that extraction-gym and e-graph viewers read.
 *
 * Every line it prints is "key: value", so tests/embed (check_embed.py) can compare the
 * numbers. Exit status 0 on success, 1 with the engine's message on any failure. */
#include "egraph.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* The language and its rules. Shl has a low cost, so once C says (x * 2) = (x << 1)
 * extraction prefers the shift. */
static const char *PROGRAM = "(datatype Math\n"
                             "  (Num i64)\n"
                             "  (Var String)\n"
                             "  (Add Math Math)\n"
                             "  (Mul Math Math :cost 4)\n"
                             "  (Shl Math i64))\n"
                             "(rewrite (Add a b) (Add b a))\n"
                             "(rewrite (Mul a b) (Mul b a))\n"
                             "(rewrite (Add (Num 0) a) a)\n"
                             "(rewrite (Mul (Num 1) a) a)\n"
                             "(rewrite (Add (Num a) (Num b)) (Num (+ a b)))\n"
                             "(rewrite (Add a a) (Mul (Num 2) a))\n";

/* Prints the engine's message and returns 1 when rc is an error, 0 otherwise. */
static int failed(int rc, const lm_err *err, const char *what)
{
    if (rc == 0) return 0;
    fprintf(stderr, "embed: %s: %s\n", what, err->msg);
    return 1;
}

/* Adds table(args) and returns its e-class through *out; 1 on failure. */
static int add(eg_engine *e, const char *table, const eg_value *args, size_t n, eg_value *out,
               lm_err *err)
{
    int t = eg_table_lookup(e, table);
    if (t < 0) {
        fprintf(stderr, "embed: no table named %s\n", table);
        return 1;
    }
    return failed(eg_add_term(e, t, args, n, out, err), err, table);
}

/* Prints the rows of table name, one per line, columns as raw values (class ids or
 * i64), after the engine was rebuilt. */
static int print_rows(eg_engine *e, const char *name)
{
    int t = eg_table_lookup(e, name);
    if (t < 0) return 1;
    size_t ncols = eg_table_arity(e, t) + (eg_table_has_output(e, t) ? 1 : 0);
    eg_value cols[8];
    if (ncols > sizeof cols / sizeof cols[0]) return 1;
    size_t cursor = 0, i = 0;
    eg_row_info info;
    lm_err err = {0};
    while (eg_table_next_row(e, t, &cursor, cols, &info, &err)) {
        printf("row %s[%zu]:", name, i++);
        for (size_t c = 0; c < ncols; c++)
            printf(" %" PRIu64, cols[c]);
        printf("\n");
        /* which rule or command made the row (provenance) */
        eg_origin o;
        if (eg_origin_get(e, info.origin, &o, &err) == 0)
            printf("origin %s[%zu]: %s\n", name, i - 1, o.name);
    }
    return err.code != 0;
}

static int experiment(eg_engine *e, const char *json_path)
{
    lm_err err = {0}; /* the caller owns and clears the record; errors stick in it */
    if (failed(eg_run_text(e, PROGRAM, "embed-rules", &err), &err, "rules")) return 1;

    /* (x * 1) + (0 + x), built bottom-up from C, and x * 2 for the union below. */
    eg_value x, two, one, zero, x2, x1, sum0, root, shl;
    eg_value sx;
    if (failed(eg_value_string(e, "x", &sx, &err), &err, "string")) return 1;
    eg_value i2 = eg_value_i64(2), i1 = eg_value_i64(1), i0 = eg_value_i64(0);
    if (add(e, "Var", &sx, 1, &x, &err) || add(e, "Num", &i2, 1, &two, &err) ||
        add(e, "Num", &i1, 1, &one, &err) || add(e, "Num", &i0, 1, &zero, &err))
        return 1;
    eg_value a[2];
    a[0] = x, a[1] = two;
    if (add(e, "Mul", a, 2, &x2, &err)) return 1;
    a[0] = x, a[1] = one;
    if (add(e, "Mul", a, 2, &x1, &err)) return 1;
    a[0] = zero, a[1] = x;
    if (add(e, "Add", a, 2, &sum0, &err)) return 1;
    a[0] = x1, a[1] = sum0;
    if (add(e, "Add", a, 2, &root, &err)) return 1;

    /* A fact from outside the rules: x * 2 = x << 1. */
    a[0] = x, a[1] = i1;
    if (add(e, "Shl", a, 2, &shl, &err)) return 1;
    if (failed(eg_union(e, x2, shl, &err), &err, "union")) return 1;
    if (failed(eg_rebuild(e, &err), &err, "rebuild")) return 1;
    printf("nodes before: %" PRIu64 "\n", eg_node_count(e));

    eg_stop_reason why;
    if (failed(eg_run_schedule(e, "(saturate (run))", &why, &err), &err, "schedule")) return 1;
    printf("stop: %s\n", why == EG_STOP_SATURATED ? "saturated" : "other");
    printf("nodes after: %" PRIu64 "\n", eg_node_count(e));
    for (size_t t = 0; t < eg_table_count(e); t++)
        printf("table %s: %zu\n", eg_table_name(e, (int)t), eg_table_size(e, (int)t));
    if (print_rows(e, "Shl")) return 1;

    int math = eg_sort_lookup(e, "Math");
    if (math < 0) return 1;
    char *term = NULL;
    uint64_t cost = 0;
    root = eg_find(e, root);
    printf("root class: %" PRIu64 "\n", root);
    if (failed(eg_extract(e, math, root, &term, &cost, &err), &err, "extract")) return 1;
    printf("best: %s\n", term);
    printf("cost: %" PRIu64 "\n", cost);
    printf("root is x*2: %s\n", eg_find(e, root) == eg_find(e, x2) ? "yes" : "no");
    eg_string_free(term);

    eg_serialized s;
    eg_serialize_opts so = {.roots = &root, .root_sorts = &math, .nroots = 1, .origins = true};
    if (failed(eg_serialize(e, &so, &s, &err), &err, "serialize")) return 1;
    printf("classes: %" PRIu32 "\n", s.n_classes);
    printf("serialized nodes: %" PRIu32 "\n", s.n_nodes);
    printf("roots: %" PRIu32 "\n", s.n_roots);
    int rc = 0;
    if (json_path) {
        FILE *f = fopen(json_path, "w");
        if (!f) {
            perror(json_path);
            rc = 1;
        } else {
            rc = eg_serialized_write_json(e, &s, f, &err) != 0;
            if (fclose(f) != 0) rc = 1;
            if (rc)
                fprintf(stderr, "embed: cannot write %s\n", json_path);
            else
                printf("json: %s\n", json_path);
        }
    }
    eg_serialized_free(&s);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 2) {
        fprintf(stderr, "usage: embed [OUT.json]\n");
        return 2;
    }
    eg_options o;
    eg_options_default(&o);
    lm_err err = {0};
    eg_engine *e = eg_engine_new(&o, &err);
    if (!e) {
        fprintf(stderr, "embed: %s\n", err.msg);
        return 1;
    }
    int rc = experiment(e, argc == 2 ? argv[1] : NULL);
    eg_engine_free(e);
    return rc;
}
