/* make_prog - saves a program for luminal_run's tests the way luminal_search will (until
 * it does): a JSON graph lowered node for node (ll_graph_from_hlir), planned by codegen,
 * made a program on the CPU backend and saved, with the graph beside it as graph.json.
 * A Check program (the steps assert), told what by its environment:
 *
 *     LR_GRAPH=G.json LR_DIR=DIR make_prog
 *
 * writes DIR/plan.json, DIR/llir.json, DIR/kernels/ and DIR/graph.json. */
#include "codegen.h"
#include "hlir.h"
#include "lm_check.h"
#include "llir.h"
#include "program.h"

#include <stdio.h>
#include <stdlib.h>

static const char *env(const char *name)
{
    const char *v = getenv(name);
    ck_assert_msg(v && v[0], "%s is not set", name);
    return v;
}

START_TEST(save_a_program_and_its_graph)
{
    const char *graph = env("LR_GRAPH"), *dir = env("LR_DIR");
    lm_err e = {0};
    hl_graph *g = hl_graph_load_json(graph, &e);
    ck_assert_msg(g != NULL, "%s", e.msg);
    ll_graph *lg = ll_graph_from_hlir(g, &e);
    ck_assert_msg(lg != NULL, "%s", e.msg);
    cg_plan *plan = cg_plan_new(lg, NULL, &e);
    ck_assert_msg(plan != NULL, "%s", e.msg);
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_CPU;
    o.name = "lr_test";
    o.egraph_fingerprint = "node-for-node";
    o.genome_fingerprint = "node-for-node";
    pg_program *p = pg_program_new(plan, lg, &o, &e);
    ck_assert_msg(p && pg_program_save(p, dir, &e) == 0, "%s", e.msg);
    pg_program_free(p);
    /* the graph as given, byte for byte */
    size_t len = 0;
    char *text = lm_read_file(graph, 0, &len, &e);
    ck_assert_msg(text != NULL, "%s", e.msg);
    char path[4096];
    snprintf(path, sizeof path, "%s/graph.json", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert(fwrite(text, 1, len, f) == len);
    ck_assert(fclose(f) == 0);
    free(text);
    cg_plan_free(plan);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("luminal_run_make_prog");
    TCase *tc = tcase_create("make");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, save_a_program_and_its_graph);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {make_suite, NULL};
