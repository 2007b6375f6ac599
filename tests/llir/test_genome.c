/* test_genome.c - genomes: the O(1) hash update against the full rehash, validation of
 * planted faults (a cycle, a wrong IList length, a choice out of range), repair over many
 * seeds (also when its budget forces the fallback), determinism, the most and least
 * fused genomes. The cycles come from a rule that gives every Exp2 class a kernel reading
 * the class itself (CYCLIC). */
#include "tl.h"

static const char CYCLIC[] =
    "(rule ((= ?e (Op (Exp2 ?s ?a ?o) ?l)) (= ?dt (dtype ?e)))\n"
    "      ((union ?e (Op (KSqrt ?s ?a ?o ?dt) (ICons ?e (INil)))))\n"
    "      :ruleset lower :name \"cyclic\")\n";

static void build_cyclic(tl_env *t, const char *example)
{
    char *r = tl_rules(false);
    char *r2 = tl_cat(r, CYCLIC);
    hl_graph *g = tl_example(example);
    tl_build(t, g, r2);
    hl_graph_free(g);
    free(r2);
    free(r);
}

/* A choice of class c that reads class c itself through its IList, or LM_NONE. */
static uint32_t self_reading_choice(const ll_space *s, uint32_t c)
{
    for (uint32_t j = s->cstart[c]; j < s->cstart[c + 1]; j++) {
        uint32_t node = s->cnode[j];
        if (s->code[node] != LL__C_OP) continue;
        uint32_t l = s->kids[s->kstart[j] + 1];
        for (uint32_t lj = s->cstart[l]; lj < s->cstart[l + 1]; lj++)
            if (s->code[s->cnode[lj]] == LL__C_ICONS && s->kids[s->kstart[lj]] == c)
                return j - s->cstart[c];
    }
    return LM_NONE;
}

START_TEST(the_o1_hash_update_equals_the_rehash)
{
    hl_graph *g = tl_example("llama_block_bf16");
    tl_env t;
    tl_build(&t, g, NULL);
    ll_genome a, b;
    lm_err err = {0};
    ck_assert(ll_genome_init(&a, t.s, &err) == LM_OK);
    ck_assert_uint_eq(a.hash, ll_genome_rehash(&a, t.s));
    ck_assert(ll_genome_init(&b, t.s, &err) == LM_OK);
    lm_pcg32 rng;
    lm_pcg_seed(&rng, 42, 3);
    ck_assert(ll_genome_random(&a, t.s, &rng, &err) == LM_OK);
    ck_assert_uint_eq(a.hash, ll_genome_rehash(&a, t.s));
    uint32_t n = ll_space_class_count(t.s), changed = 0;
    uint64_t start = a.hash;
    for (int i = 0; i < 5000; i++) {
        uint32_t c = lm_pcg_below(&rng, n);
        uint32_t k = ll_space_choice_count(t.s, c);
        uint32_t j = lm_pcg_below(&rng, k);
        uint64_t before = a.hash;
        changed += j != a.choice[c];
        ll_genome_set(&a, t.s, c, j);
        ck_assert_uint_eq(a.hash, ll_genome_rehash(&a, t.s));
        if (k == 1) ck_assert_uint_eq(a.hash, before);
    }
    ck_assert_uint_gt(changed, 100);
    ck_assert_uint_ne(a.hash, start);
    ck_assert(ll_genome_copy(&b, &a, &err) == LM_OK);
    ck_assert_uint_eq(b.hash, a.hash);
    ck_assert_mem_eq(b.choice, a.choice, (size_t)n * sizeof(uint32_t));
    /* one flip of a decision changes the hash, flipping back restores it */
    for (uint32_t c = 0; c < n; c++)
        if (ll_space_choice_count(t.s, c) > 1) {
            uint64_t h = b.hash;
            uint32_t old = b.choice[c];
            ll_genome_set(&b, t.s, c, (old + 1) % ll_space_choice_count(t.s, c));
            ck_assert_uint_ne(b.hash, h);
            ll_genome_set(&b, t.s, c, old);
            ck_assert_uint_eq(b.hash, h);
            break;
        }
    ll_genome_fini(&a);
    ll_genome_fini(&b);
    ll_genome_fini(&b); /* twice is harmless */
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

START_TEST(validation_catches_a_planted_cycle)
{
    tl_env t;
    build_cyclic(&t, "elementwise_chain_f32_16m");
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    ck_assert(ll_genome_least_fused(&gn, t.s, &err) == LM_OK);
    ck_assert_msg(ll_genome_validate(&gn, t.s, &err) == LM_OK, "%s", err.msg);
    uint32_t planted = 0;
    for (uint32_t c = 0; c < ll_space_class_count(t.s); c++) {
        uint32_t j = self_reading_choice(t.s, c);
        if (j == LM_NONE) continue;
        planted++;
        uint32_t old = gn.choice[c];
        ll_genome_set(&gn, t.s, c, j);
        lm_err e1 = {0};
        ck_assert_int_eq(ll_genome_validate(&gn, t.s, &e1), LM_EVERIFY);
        ck_assert_msg(strstr(e1.msg, "form a cycle"), "%s", e1.msg);
        lm_err e2 = {0};
        ck_assert_ptr_null(ll_graph_from_genome(t.s, &gn, &e2));
        ck_assert_msg(e2.code == LM_EVERIFY && strstr(e2.msg, "cycle"), "%s", e2.msg);
        lm_pcg32 rng;
        lm_pcg_seed(&rng, c, 0);
        lm_err e3 = {0};
        ck_assert_msg(ll_genome_repair(&gn, t.s, &rng, &e3) == LM_OK, "%s", e3.msg);
        ck_assert_uint_ne(gn.choice[c], j);
        ck_assert_msg(ll_genome_validate(&gn, t.s, &e3) == LM_OK, "%s", e3.msg);
        ck_assert_uint_eq(gn.hash, ll_genome_rehash(&gn, t.s));
        ll_genome_set(&gn, t.s, c, old);
    }
    ck_assert_uint_ge(planted, 1);
    ll_genome_fini(&gn);
    tl_fini(&t);
}
END_TEST

/* The space guarantees every IList's length statically, so the fault is planted in the
 * space: an Op choice is pointed at the empty list. */
START_TEST(validation_catches_a_wrong_ilist_length)
{
    hl_graph *g = tl_example("elementwise_chain_f32_16m");
    tl_env t;
    tl_build(&t, g, NULL);
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    ck_assert(ll_genome_least_fused(&gn, t.s, &err) == LM_OK);
    ll_space *s = t.s;
    uint32_t nil = LM_NONE, target = LM_NONE;
    for (uint32_t c = 0; c < s->ns && nil == LM_NONE; c++)
        if (s->code[s->cnode[s->cstart[c]]] == LL__C_INIL) nil = c;
    ck_assert_uint_ne(nil, LM_NONE);
    for (uint32_t c = 0; c < s->ns && target == LM_NONE; c++) {
        uint32_t j = s->cstart[c] + gn.choice[c];
        if (s->ckind[s->scls[c]] == LL__K_IR && s->code[s->cnode[j]] == LL__C_OP &&
            s->cop[j] == ll_op_find("KExp2"))
            target = j;
    }
    ck_assert_uint_ne(target, LM_NONE);
    uint32_t *slot = &s->kids[s->kstart[target] + 1], saved = *slot;
    *slot = nil;
    ck_assert_int_eq(ll_genome_validate(&gn, s, &err), LM_EVERIFY);
    ck_assert_msg(strstr(err.msg, "KExp2 takes 1 inputs; the chosen IList has 0"), "%s", err.msg);
    *slot = saved;
    lm_err e2 = {0};
    ck_assert_msg(ll_genome_validate(&gn, s, &e2) == LM_OK, "%s", e2.msg);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

START_TEST(validation_catches_a_choice_out_of_range_and_a_foreign_genome)
{
    hl_graph *g = tl_example("softmax_f32_4096x8192");
    tl_env t;
    tl_build(&t, g, NULL);
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    uint32_t c = ll_space_root(t.s);
    gn.choice[c] = 77;
    gn.hash = ll_genome_rehash(&gn, t.s);
    ck_assert_int_eq(ll_genome_validate(&gn, t.s, &err), LM_EVERIFY);
    ck_assert_ptr_nonnull(strstr(err.msg, "out of range"));
    lm_err e2 = {0};
    ck_assert_msg(ll_genome_repair(&gn, t.s, NULL, &e2) == LM_OK, "%s", e2.msg);
    ck_assert_msg(ll_genome_validate(&gn, t.s, &e2) == LM_OK, "%s", e2.msg);
    ll_genome bad = {.n = gn.n - 1, .choice = gn.choice};
    lm_err e3 = {0};
    ck_assert_int_eq(ll_genome_validate(&bad, t.s, &e3), LM_EARG);
    lm_err e4 = {0};
    ck_assert_ptr_null(ll_graph_from_genome(t.s, &bad, &e4));
    ck_assert_int_eq(e4.code, LM_EARG);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

/* Uniform draws are often invalid (the self-reading kernels close cycles); repaired,
 * every one is valid and builds. */
static void repair_many(const char *example, int seeds, bool tiny_budget)
{
    tl_env t;
    build_cyclic(&t, example);
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    uint32_t invalid = 0;
    if (tiny_budget) ll__genome_repair_budget(3);
    for (int seed = 0; seed < seeds; seed++) {
        lm_pcg32 rng;
        lm_pcg_seed(&rng, (uint64_t)seed, 11);
        for (uint32_t c = 0; c < ll_space_class_count(t.s); c++)
            ll_genome_set(&gn, t.s, c, lm_pcg_below(&rng, ll_space_choice_count(t.s, c)));
        lm_err e0 = {0};
        invalid += ll_genome_validate(&gn, t.s, &e0) != LM_OK;
        ck_assert_msg(ll_genome_repair(&gn, t.s, &rng, &err) == LM_OK, "%s", err.msg);
        ck_assert_msg(ll_genome_validate(&gn, t.s, &err) == LM_OK, "seed %d: %s", seed, err.msg);
        ck_assert_uint_eq(gn.hash, ll_genome_rehash(&gn, t.s));
        if (seed % 16 == 0) ll_graph_free(tl_graph(t.s, &gn));
    }
    ll__genome_repair_budget(0);
    ck_assert_msg(invalid > (uint32_t)seeds / 10, "%s: only %u of %d uniform draws were invalid",
                  example, invalid, seeds);
    ll_genome_fini(&gn);
    tl_fini(&t);
}

START_TEST(repair_always_yields_valid_genomes)
{
    repair_many("elementwise_chain_f32_16m", 500, false);
    repair_many("layernorm_gelu_f32_4096", 300, false);
    repair_many("llama_block_bf16", 200, false);
}
END_TEST

START_TEST(repair_falls_back_to_the_safe_choices_when_its_budget_runs_out)
{
    repair_many("layernorm_gelu_f32_4096", 100, true);
}
END_TEST

START_TEST(the_same_seed_gives_the_same_genomes)
{
    hl_graph *g = tl_example("llama_block_bf16");
    tl_env t;
    tl_build(&t, g, NULL);
    ll_genome a, b, c;
    lm_err err = {0};
    ck_assert(ll_genome_init(&a, t.s, &err) == LM_OK && ll_genome_init(&b, t.s, &err) == LM_OK &&
              ll_genome_init(&c, t.s, &err) == LM_OK);
    lm_pcg32 r1, r2, r3;
    lm_pcg_seed(&r1, 7, 1);
    lm_pcg_seed(&r2, 7, 1);
    lm_pcg_seed(&r3, 8, 1);
    uint32_t differ = 0;
    for (int i = 0; i < 50; i++) {
        ck_assert(ll_genome_random(&a, t.s, &r1, &err) == LM_OK);
        ck_assert(ll_genome_random(&b, t.s, &r2, &err) == LM_OK);
        ck_assert(ll_genome_random(&c, t.s, &r3, &err) == LM_OK);
        ck_assert_uint_eq(a.hash, b.hash);
        ck_assert_mem_eq(a.choice, b.choice, (size_t)a.n * sizeof(uint32_t));
        differ += a.hash != c.hash;
    }
    ck_assert_uint_ge(differ, 45);
    ll_genome_fini(&a);
    ll_genome_fini(&b);
    ll_genome_fini(&c);
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

static uint32_t count_kind(const ll_graph *g, ll_kind k, ll_op op)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ll_graph_node_count(g); i++)
        n += ll_graph_node(g, i)->kind == k && (op == LL_OP_NONE || ll_graph_node(g, i)->op == op);
    return n;
}

START_TEST(the_most_and_least_fused_genomes_are_valid_and_differ)
{
    static const char *ex[] = {"matmul_f32_2048", "softmax_f32_4096x8192", "llama_block_bf16"};
    for (int i = 0; i < 3; i++) {
        hl_graph *g = tl_example(ex[i]);
        tl_env t;
        tl_build(&t, g, NULL);
        ll_genome lo, hi;
        lm_err err = {0};
        ck_assert(ll_genome_init(&lo, t.s, &err) == LM_OK && ll_genome_init(&hi, t.s, &err) == LM_OK);
        ck_assert_msg(ll_genome_least_fused(&lo, t.s, &err) == LM_OK, "%s", err.msg);
        ck_assert_msg(ll_genome_most_fused(&hi, t.s, &err) == LM_OK, "%s", err.msg);
        ck_assert(ll_genome_validate(&lo, t.s, &err) == LM_OK);
        ck_assert(ll_genome_validate(&hi, t.s, &err) == LM_OK);
        ck_assert_uint_ne(lo.hash, hi.hash);
        ll_graph *gl = tl_graph(t.s, &lo), *gh = tl_graph(t.s, &hi);
        ck_assert_uint_eq(count_kind(gl, LL_REGION, LL_OP_NONE), 0);
        ck_assert_uint_eq(count_kind(gl, LL_LIBRARY, LL_OP_NONE), 0);
        ck_assert_uint_gt(count_kind(gl, LL_KERNEL, LL_OP_NONE), 0);
        if (i == 0) { /* a plain matmul: one cuBLASLt call */
            ck_assert_uint_eq(count_kind(gh, LL_LIBRARY, LL_OP_NONE), 1);
            ck_assert_uint_eq(count_kind(gh, LL_KERNEL, LL_OP_NONE), 0);
        } else {
            ck_assert_uint_gt(count_kind(gh, LL_REGION, LL_OP_NONE), 0);
            ck_assert_uint_lt(count_kind(gh, LL_REGION, LL_OP_NONE) +
                                  count_kind(gh, LL_KERNEL, LL_OP_NONE),
                              count_kind(gl, LL_KERNEL, LL_OP_NONE));
        }
        ll_graph_free(gl);
        ll_graph_free(gh);
        ll_genome_fini(&lo);
        ll_genome_fini(&hi);
        tl_fini(&t);
        hl_graph_free(g);
    }
}
END_TEST

/* The walk's classes: the root first, each once, closed under the chosen nodes' children
 * (ll_space_choice_kids); canonicalizing sets every other class to 0 without changing
 * validity or the program, so genomes that differ only off the walk become one. */
START_TEST(canonical_genomes_keep_the_walk_and_forget_the_rest)
{
    hl_graph *g = tl_example("llama_block_bf16");
    tl_env t;
    tl_build(&t, g, NULL);
    uint32_t ns = ll_space_class_count(t.s);
    uint32_t *order = malloc(ns * sizeof *order);
    uint8_t *in = calloc(ns, 1);
    ll_genome a, b;
    lm_err err = {0};
    ck_assert(ll_genome_init(&a, t.s, &err) == LM_OK && ll_genome_init(&b, t.s, &err) == LM_OK);
    lm_pcg32 rng;
    lm_pcg_seed(&rng, 3, 9);
    uint32_t changed_off_walk = 0;
    for (int it = 0; it < 40; it++) {
        ck_assert(ll_genome_random(&a, t.s, &rng, &err) == LM_OK);
        uint32_t n = 0;
        ck_assert(ll_genome_reached(&a, t.s, order, &n, &err) == LM_OK);
        ck_assert_uint_gt(n, 0);
        ck_assert_uint_le(n, ns);
        ck_assert_uint_eq(order[0], ll_space_root(t.s));
        memset(in, 0, ns);
        for (uint32_t i = 0; i < n; i++) {
            ck_assert_uint_eq(in[order[i]], 0); /* once */
            in[order[i]] = 1;
            ck_assert(ll_space_reachable(t.s, order[i]));
        }
        for (uint32_t i = 0; i < n; i++) { /* closed under the chosen children */
            const uint32_t *kids;
            uint32_t nk = ll_space_choice_kids(t.s, order[i], a.choice[order[i]], &kids);
            for (uint32_t k = 0; k < nk; k++)
                ck_assert_uint_eq(in[kids[k]], 1);
        }
        /* b: a with every class off the walk changed */
        ck_assert(ll_genome_copy(&b, &a, &err) == LM_OK);
        for (uint32_t c = 0; c < ns; c++)
            if (!in[c] && ll_space_choice_count(t.s, c) > 1) {
                ll_genome_set(&b, t.s, c, (b.choice[c] + 1) % ll_space_choice_count(t.s, c));
                changed_off_walk++;
            }
        ll_graph *ga = tl_graph(t.s, &a), *gb = tl_graph(t.s, &b);
        ll_fingerprint fa = ll_graph_fingerprint(ga), fb = ll_graph_fingerprint(gb);
        ck_assert(fa.lo == fb.lo && fa.hi == fb.hi); /* one program */
        ck_assert(ll_genome_canonicalize(&a, t.s, &err) == LM_OK);
        ck_assert(ll_genome_canonicalize(&b, t.s, &err) == LM_OK);
        ck_assert_uint_eq(a.hash, b.hash);
        ck_assert_uint_eq(a.hash, ll_genome_rehash(&a, t.s));
        ck_assert_mem_eq(a.choice, b.choice, (size_t)ns * sizeof(uint32_t));
        for (uint32_t c = 0; c < ns; c++)
            if (!in[c]) ck_assert_uint_eq(a.choice[c], 0);
        ck_assert(ll_genome_validate(&a, t.s, &err) == LM_OK);
        ll_graph *gc = tl_graph(t.s, &a);
        ll_fingerprint fc = ll_graph_fingerprint(gc);
        ck_assert(fc.lo == fa.lo && fc.hi == fa.hi);
        uint64_t h = a.hash; /* idempotent */
        ck_assert(ll_genome_canonicalize(&a, t.s, &err) == LM_OK);
        ck_assert_uint_eq(a.hash, h);
        ll_graph_free(ga);
        ll_graph_free(gb);
        ll_graph_free(gc);
    }
    ck_assert_uint_gt(changed_off_walk, 0); /* the walk leaves classes out in llama */
    ck_assert_uint_eq(ll_space_choice_kids(t.s, 0, 1u << 30, NULL), 0);
    free(order);
    free(in);
    ll_genome_fini(&a);
    ll_genome_fini(&b);
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("llir_genome");
    TCase *tc = tcase_create("genome");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, the_o1_hash_update_equals_the_rehash);
    tcase_add_test(tc, validation_catches_a_planted_cycle);
    tcase_add_test(tc, validation_catches_a_wrong_ilist_length);
    tcase_add_test(tc, validation_catches_a_choice_out_of_range_and_a_foreign_genome);
    tcase_add_test(tc, repair_always_yields_valid_genomes);
    tcase_add_test(tc, repair_falls_back_to_the_safe_choices_when_its_budget_runs_out);
    tcase_add_test(tc, the_same_seed_gives_the_same_genomes);
    tcase_add_test(tc, the_most_and_least_fused_genomes_are_valid_and_differ);
    tcase_add_test(tc, canonical_genomes_keep_the_walk_and_forget_the_rest);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {make_suite, NULL};
