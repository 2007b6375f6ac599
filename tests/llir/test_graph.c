/* test_graph.c - LLIR graphs from genomes: every random genome of every example graph and
 * of generated graphs builds and verifies; the least fused graph is the HLIR graph as
 * kernels; matmul fields come from the strides; fingerprints and dumps are deterministic
 * and structural; the verifier catches planted faults (edge dtypes, views outside their
 * buffer, shapes, interior nodes outside their region); the evaluator agrees with hlir's;
 * out of memory is an error. */
#include "tl.h"

static uint32_t genomes_per_example(void)
{
#ifdef LUMINAL_SANITIZE
    return 60;
#else
    return 200;
#endif
}

/* Builds n random genomes of t (and the two fused extremes), each into a graph that
 * verifies again on its own; returns how many graphs were built. */
static uint32_t build_many(const tl_env *t, const hl_graph *g, uint64_t seed, uint32_t n)
{
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t->s, &err) == LM_OK);
    lm_pcg32 rng;
    lm_pcg_seed(&rng, seed, 2);
    uint32_t built = 0;
    for (uint32_t i = 0; i < n + 2; i++) {
        int rc = i == 0   ? ll_genome_least_fused(&gn, t->s, &err)
                 : i == 1 ? ll_genome_most_fused(&gn, t->s, &err)
                          : ll_genome_random(&gn, t->s, &rng, &err);
        ck_assert_msg(rc == LM_OK, "%s", err.msg);
        ck_assert_msg(ll_genome_validate(&gn, t->s, &err) == LM_OK, "%s", err.msg);
        ll_graph *lg = ll_graph_from_genome(t->s, &gn, &err);
        ck_assert_msg(lg != NULL, "genome %u: %s", i, err.msg);
        ck_assert_msg(ll_graph_verify(lg, &err) == LM_OK, "%s", err.msg);
        ck_assert_uint_eq(ll_graph_input_count(lg), hl_graph_input_count(g));
        ck_assert_uint_eq(ll_graph_output_count(lg), hl_graph_output_count(g));
        ck_assert_uint_eq(ll_graph_dim_count(lg), hl_graph_dim_count(g));
        for (uint32_t k = 0; k < ll_graph_output_count(lg); k++) {
            const ll_node *o = ll_graph_node(lg, ll_graph_output(lg, k));
            const hl_node *ho = hl_graph_node(g, hl_graph_output(g, k));
            ck_assert_str_eq(o->prim.name, ho->name);
            ck_assert_int_eq(o->dtype, ho->dtype);
            ck_assert_uint_eq(o->ndim, ho->ndim);
        }
        ll_graph_free(lg);
        built++;
    }
    ll_genome_fini(&gn);
    return built;
}

START_TEST(every_random_genome_of_every_example_builds_and_verifies)
{
    char names[TL_MAX_EXAMPLES][256];
    uint32_t n = tl_examples(names, TL_MAX_EXAMPLES);
    ck_assert_uint_eq(n, 17); /* examples/graphs: a new example joins this test */
    uint32_t built = 0;
    for (uint32_t i = 0; i < n; i++) {
        hl_graph *g = tl_load(names[i]);
        tl_env t;
        tl_build(&t, g, NULL);
        built += build_many(&t, g, i, genomes_per_example());
        tl_fini(&t);
        hl_graph_free(g);
    }
    ck_assert_uint_eq(built, n * (genomes_per_example() + 2));
}
END_TEST

START_TEST(random_genomes_of_generated_graphs_build_and_verify)
{
    uint32_t graphs = 0;
    for (uint64_t seed = 0; seed < 50; seed++) {
        hl_gen_opts o = {.n_ops = 6 + (uint32_t)(seed % 10), .dynamic = seed % 2 == 1};
        lm_err he = {0};
        hl_graph *g = hl_graph_generate(seed, &o, &he);
        ck_assert_msg(g != NULL, "%s", he.msg);
        tl_env t;
        lm_err err = {0};
        int rc = tl_try(&t, g, NULL, &err);
        ck_assert_msg(rc == LM_OK, "generated graph %llu: %s", (unsigned long long)seed, err.msg);
        build_many(&t, g, seed, 20);
        graphs++;
        tl_fini(&t);
        hl_graph_free(g);
    }
    ck_assert_uint_eq(graphs, 50);
}
END_TEST

/* The least fused genome picks every primitive's kernel: the graph is the HLIR graph
 * (as the e-graph holds it) node for node, in the decoder's order. */
START_TEST(the_least_fused_graph_is_the_hlir_graph_as_kernels)
{
    char names[TL_MAX_EXAMPLES][256];
    uint32_t n = tl_examples(names, TL_MAX_EXAMPLES);
    for (uint32_t i = 0; i < n; i++) {
        hl_graph *g = tl_load(names[i]);
        eg_engine *e0 = eg_engine_new(NULL, NULL);
        hl_encoding enc0;
        lm_err he = {0};
        ck_assert(hl_graph_encode(g, e0, &enc0, &he) == HL_OK);
        hl_graph *d = hl_graph_decode_engine(e0, &he);
        ck_assert_msg(d != NULL, "%s", he.msg);
        tl_env t;
        tl_build(&t, g, NULL);
        ll_genome gn;
        lm_err err = {0};
        ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
        ck_assert(ll_genome_least_fused(&gn, t.s, &err) == LM_OK);
        ll_graph *lg = tl_graph(t.s, &gn);
        ck_assert_uint_eq(ll_graph_node_count(lg), hl_graph_node_count(d));
        for (uint32_t k = 0; k < hl_graph_node_count(d); k++) {
            const hl_node *h = hl_graph_node(d, k);
            const ll_node *l = ll_graph_node(lg, k);
            ck_assert_msg(l->prim.op == h->op, "%s: node %u is %s, the decoder's %s", names[i], k,
                          hl_op_name(l->prim.op), hl_op_name(h->op));
            ck_assert_int_eq(l->dtype, h->dtype);
            ck_assert_uint_eq(l->ndim, h->ndim);
            ck_assert_uint_eq(l->n_in, h->n_in);
            for (uint32_t j = 0; j < h->n_in; j++) {
                ck_assert_uint_eq(l->in[j], h->in[j].node);
                ck_assert_uint_eq(l->prim.in[j].view.ndim, h->in[j].view.ndim);
            }
            if (h->op == HL_OP_SUM_REDUCE || h->op == HL_OP_MAX_REDUCE)
                ck_assert_uint_eq(l->prim.axis, h->axis);
            if (h->op == HL_OP_CONSTANT) ck_assert(l->prim.constant == h->constant);
        }
        ll_graph_free(lg);
        ll_genome_fini(&gn);
        tl_fini(&t);
        hl_graph_free(d);
        hl_encoding_fini(&enc0);
        eg_engine_free(e0);
        hl_graph_free(g);
    }
}
END_TEST

static const ll_node *first_of(const ll_graph *g, ll_kind k)
{
    for (uint32_t i = 0; i < ll_graph_node_count(g); i++)
        if (ll_graph_node(g, i)->kind == k) return ll_graph_node(g, i);
    return NULL;
}

/* A genome choosing op `name` in every class where it can. */
static void prefer(ll_genome *gn, const ll_space *s, const char *name)
{
    ll_op op = ll_op_find(name);
    for (uint32_t c = 0; c < ll_space_class_count(s); c++)
        for (uint32_t j = 0; j < ll_space_choice_count(s, c); j++)
            if (ll_space_choice_op(s, c, j) == op) ll_genome_set(gn, s, c, j);
}

START_TEST(matmul_fields_come_from_the_strides)
{
    hl_graph *g = tl_example("matmul_f32_2048");
    tl_env t;
    tl_build(&t, g, NULL);
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    ck_assert(ll_genome_least_fused(&gn, t.s, &err) == LM_OK);
    prefer(&gn, t.s, "KMatmul");
    ll_graph *lg = tl_graph(t.s, &gn);
    const ll_node *mm = first_of(lg, LL_KERNEL);
    ck_assert_ptr_nonnull(mm);
    ck_assert_uint_eq(mm->op, ll_op_find("KMatmul"));
    const hl_expr_pool *p = ll_graph_exprs(lg);
    char buf[64];
    hl_expr ex[6] = {mm->mm.m, mm->mm.n, mm->mm.k, mm->mm.lda, mm->mm.ldb, mm->mm.batch};
    const char *want[6] = {"M", "N", "K", "K", "N", "1"};
    for (int i = 0; i < 6; i++) {
        hl_e_print(p, ex[i], buf, sizeof buf);
        ck_assert_str_eq(buf, want[i]);
    }
    ck_assert_int_eq(mm->mm.order_a, LL_ROW_MAJOR);
    ck_assert_int_eq(mm->mm.order_b, LL_ROW_MAJOR);
    ck_assert(mm->mm.alpha == 1.0 && mm->mm.beta == 0.0 && mm->mm.epilogue == LL_EPI_NONE);
    ck_assert_uint_eq(mm->ndim, 2);
    ll_graph_free(lg);
    prefer(&gn, t.s, "Blas");
    lg = tl_graph(t.s, &gn);
    const ll_node *bl = first_of(lg, LL_LIBRARY);
    ck_assert_ptr_nonnull(bl);
    ck_assert_ptr_null(first_of(lg, LL_KERNEL));
    ck_assert_int_eq(bl->mm.type_a, HL_F32);
    ck_assert_uint_eq(bl->n_in, 2);
    ll_graph_free(lg);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

/* Batched matmuls (attention): the batch is the product of the batch dims, one stride. */
START_TEST(batched_matmul_fields_collapse_the_batch)
{
    hl_graph *g = tl_example("causal_attention_bf16");
    tl_env t;
    tl_build(&t, g, NULL);
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    ck_assert(ll_genome_least_fused(&gn, t.s, &err) == LM_OK);
    prefer(&gn, t.s, "KMatmul");
    ll_graph *lg = tl_graph(t.s, &gn);
    uint32_t seen = 0;
    for (uint32_t i = 0; i < ll_graph_node_count(lg); i++) {
        const ll_node *nd = ll_graph_node(lg, i);
        if (nd->op != ll_op_find("KMatmul")) continue;
        seen++;
        char b[64];
        hl_e_print(ll_graph_exprs(lg), nd->mm.batch, b, sizeof b);
        ck_assert_str_eq(b, "32");
        ck_assert_uint_eq(nd->ndim, 3);
        ck_assert_int_eq(nd->dtype, HL_BF16);
    }
    ck_assert_uint_ge(seen, 2); /* q k^T and p v */
    ll_graph_free(lg);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

/* Blas's alpha is the value the graph computes: rounded to alpha_dt. */
START_TEST(blas_alpha_is_rounded_to_its_dtype)
{
    char *r = tl_rules(false);
    char *r2 = tl_replace(r, "(MNum 0) (MNum 0) 0 0 1.0 (F32) 0.0 0", "(MNum 0) (MNum 0) 0 0 0.1 (Bf16) 0.0 0");
    hl_graph *g = tl_example("matmul_f32_2048");
    tl_env t;
    tl_build(&t, g, r2);
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    ck_assert(ll_genome_most_fused(&gn, t.s, &err) == LM_OK);
    ll_graph *lg = tl_graph(t.s, &gn);
    const ll_node *bl = first_of(lg, LL_LIBRARY);
    ck_assert_ptr_nonnull(bl);
    ck_assert(bl->mm.alpha == (double)hl_round_to(HL_BF16, 0.1f));
    ck_assert(bl->mm.alpha != 0.1 && bl->mm.alpha != (double)0.1f);
    ll_graph_free(lg);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(g);
    free(r2);
    free(r);
}
END_TEST

/* Same genome: same bytes and fingerprint. A choice the walk does not reach changes the
 * genome, not the program. Another program: another fingerprint. */
START_TEST(fingerprints_and_dumps_follow_the_program)
{
    hl_graph *g = tl_example("layernorm_gelu_f32_4096");
    tl_env t;
    tl_build(&t, g, NULL);
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    ck_assert(ll_genome_least_fused(&gn, t.s, &err) == LM_OK);
    ll_graph *a = tl_graph(t.s, &gn), *b = tl_graph(t.s, &gn);
    char *da = tl_dump(a), *db = tl_dump(b);
    ck_assert_str_eq(da, db);
    ll_fingerprint fa = ll_graph_fingerprint(a), fb = ll_graph_fingerprint(b);
    ck_assert(fa.lo == fb.lo && fa.hi == fb.hi);
    /* the least fused program reaches no value class: flipping one changes nothing */
    uint32_t flipped = 0;
    for (uint32_t c = 0; c < ll_space_class_count(t.s) && !flipped; c++) {
        if (ll_space_choice_count(t.s, c) != 2 ||
            ll_space_choice_op(t.s, c, 0) != ll_op_find("FLoad"))
            continue;
        uint64_t h = gn.hash;
        ll_genome_set(&gn, t.s, c, 1);
        ck_assert_uint_ne(gn.hash, h);
        ll_graph *c2 = tl_graph(t.s, &gn);
        ll_fingerprint fc = ll_graph_fingerprint(c2);
        ck_assert(fc.lo == fa.lo && fc.hi == fa.hi);
        ll_graph_free(c2);
        flipped++;
    }
    ck_assert_uint_eq(flipped, 1);
    ck_assert(ll_genome_most_fused(&gn, t.s, &err) == LM_OK);
    ll_graph *m = tl_graph(t.s, &gn);
    ll_fingerprint fm = ll_graph_fingerprint(m);
    ck_assert(fm.lo != fa.lo || fm.hi != fa.hi);
    char *dm = tl_dump(m);
    ck_assert_ptr_nonnull(strstr(dm, "FStore"));
    ck_assert_ptr_nonnull(strstr(dm, "dim R in [1, "));
    free(dm);
    free(da);
    free(db);
    ll_graph_free(a);
    ll_graph_free(b);
    ll_graph_free(m);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

/* ---- the verifier on planted faults ---- */

typedef struct planted {
    tl_env t;
    hl_graph *g;
    ll_genome gn;
    ll_graph *lg;
} planted;

static void plant_setup(planted *p, const char *example, bool most)
{
    p->g = tl_example(example);
    tl_build(&p->t, p->g, NULL);
    lm_err err = {0};
    ck_assert(ll_genome_init(&p->gn, p->t.s, &err) == LM_OK);
    ck_assert((most ? ll_genome_most_fused : ll_genome_least_fused)(&p->gn, p->t.s, &err) == LM_OK);
    p->lg = tl_graph(p->t.s, &p->gn);
}

static void plant_teardown(planted *p)
{
    ll_graph_free(p->lg);
    ll_genome_fini(&p->gn);
    tl_fini(&p->t);
    hl_graph_free(p->g);
}

static void expect_refused(const ll_graph *g, const char *w1, const char *w2)
{
    lm_err err = {0};
    ck_assert_int_eq(ll_graph_verify(g, &err), LM_EVERIFY);
    ck_assert_msg(strstr(err.msg, w1) && strstr(err.msg, w2), "wanted '%s' and '%s' in: %s", w1,
                  w2, err.msg);
}

static ll_node *find_op(ll_graph *g, const char *name)
{
    ll_op op = ll_op_find(name);
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == op) return &g->nodes[i];
    ck_abort_msg("no %s node", name);
    return NULL;
}

START_TEST(the_verifier_catches_a_wrong_edge_dtype)
{
    planted p;
    plant_setup(&p, "llama_block_bf16", false);
    ll_node *nd = find_op(p.lg, "KMul");
    hl_dtype saved = nd->in_dtype[1];
    nd->in_dtype[1] = saved == HL_F32 ? HL_BF16 : HL_F32;
    expect_refused(p.lg, "operand 1 (b) is node", "but the op's contract reads it as");
    expect_refused(p.lg, hl_dtype_name(saved), "rule '");
    nd->in_dtype[1] = saved;
    lm_err err = {0};
    ck_assert_msg(ll_graph_verify(p.lg, &err) == LM_OK, "%s", err.msg);
    plant_teardown(&p);
}
END_TEST

START_TEST(the_verifier_catches_a_view_outside_its_buffer)
{
    planted p;
    plant_setup(&p, "rmsnorm_f32_8192x4096", false);
    ll_node *nd = find_op(p.lg, "KMul");
    hl_view *v = &nd->prim.in[0].view;
    hl_expr saved = v->strides[0];
    /* read the rows twice as far apart as the buffer holds them */
    v->strides[0] = hl_e_mul(p.lg->pool, saved, hl_e_num(p.lg->pool, 2));
    expect_refused(p.lg, "operand 0 (a) reads positions 0..", "elements, at R=");
    /* a stride that is not affine (two occurrences of z), one element past the end when
     * the row count is even: its bound is not exact, so the verifier evaluates every row */
    hl_expr_pool *pool = p.lg->pool;
    v->strides[0] = hl_e_add(pool, saved, hl_e_mod(pool, hl_e_z(pool), hl_e_num(pool, 2)));
    expect_refused(p.lg, "reads positions 0..", "elements, at R=");
    v->strides[0] = saved;
    lm_err err = {0};
    ck_assert_msg(ll_graph_verify(p.lg, &err) == LM_OK, "%s", err.msg);
    plant_teardown(&p);
}
END_TEST

START_TEST(the_verifier_catches_a_shape_that_breaks_its_rule)
{
    planted p;
    plant_setup(&p, "softmax_f32_4096x8192", false);
    ll_node *nd = find_op(p.lg, "KExp2");
    hl_expr saved = nd->shape[1];
    nd->shape[1] = nd->prim.shape[1] = hl_e_num(p.lg->pool, 3);
    expect_refused(p.lg, "KExp2", "its shape is not its input view's dims");
    nd->shape[1] = nd->prim.shape[1] = saved;
    plant_teardown(&p);
    /* x * x over a bool input (with consistent dtypes on the edge): Mul takes no bool */
    plant_setup(&p, "rmsnorm_f32_8192x4096", false);
    ll_node *x = &p.lg->nodes[ll_graph_input(p.lg, 0)];
    ll_node *sq = NULL;
    for (uint32_t i = 0; i < p.lg->n_nodes && !sq; i++)
        if (p.lg->nodes[i].kind == LL_KERNEL && p.lg->nodes[i].in[0] == ll_graph_input(p.lg, 0))
            sq = &p.lg->nodes[i];
    ck_assert_ptr_nonnull(sq);
    ck_assert_uint_eq(sq->op, ll_op_find("KMul"));
    ck_assert_uint_eq(sq->in[1], sq->in[0]);
    x->dtype = x->prim.dtype = HL_BOOL;
    sq->in_dtype[0] = sq->in_dtype[1] = sq->dtype = sq->prim.dtype = HL_BOOL;
    expect_refused(p.lg, "KMul", "Mul's dtypes break its rule (bool, bool -> bool)");
    plant_teardown(&p);
}
END_TEST

START_TEST(the_verifier_catches_interior_nodes_outside_their_region)
{
    planted p;
    plant_setup(&p, "softmax_f32_4096x8192", true);
    ll_node *f = find_op(p.lg, "FExp2");
    uint32_t saved = f->region;
    f->region = LM_NONE;
    expect_refused(p.lg, "an interior node outside its region", "FExp2");
    f->region = saved;
    ll_node *r = find_op(p.lg, "FStore");
    uint32_t root = r->in[0];
    r->in[0] = 0;
    expect_refused(p.lg, "the region's root", "is not one of its interior nodes");
    r->in[0] = root;
    lm_err err = {0};
    ck_assert_msg(ll_graph_verify(p.lg, &err) == LM_OK, "%s", err.msg);
    plant_teardown(&p);
}
END_TEST

/* ---- the evaluator against hlir's ---- */

static hl_expr random_expr(hl_expr_pool *p, lm_pcg32 *r, int depth)
{
    uint32_t k = lm_pcg_below(r, depth ? 10 : 3);
    switch (k) {
    case 0:
        return hl_e_num(p, (int64_t)lm_pcg_below(r, 21) - 5);
    case 1:
        return hl_e_z(p);
    case 2:
        return hl_e_var(p, lm_pcg_below(r, 2) ? "S" : "T");
    default: {
        static const hl_expr_kind kinds[] = {HL_E_ADD, HL_E_MUL, HL_E_DIV, HL_E_MOD, HL_E_CDIV,
                                             HL_E_MIN, HL_E_MAX, HL_E_GE, HL_E_LT, HL_E_AND,
                                             HL_E_OR, HL_E_SUB};
        hl_expr a = random_expr(p, r, depth - 1), b = random_expr(p, r, depth - 1);
        return hl_e_bin(p, kinds[lm_pcg_below(r, 12)], a, b);
    }
    }
}

START_TEST(the_evaluator_agrees_with_hlir)
{
    hl_expr_pool *p = hl_expr_pool_new();
    hl_e_var(p, "S");
    hl_e_var(p, "T");
    lm_pcg32 r;
    lm_pcg_seed(&r, 1, 1);
    hl_expr es[400];
    for (int i = 0; i < 400; i++)
        es[i] = random_expr(p, &r, 4);
    int64_t dims[2] = {7, 3};
    ll__eval ev;
    lm_err err = {0};
    ck_assert(ll__eval_init(&ev, p, dims, &err) == LM_OK);
    hl_env env = {dims, NULL, 2};
    uint32_t agreed = 0, failed_both = 0, exact = 0;
    for (int i = 0; i < 400; i++) {
        if (es[i] == HL_NONE) continue;
        for (int64_t z = 0; z < 12; z++) {
            int64_t a = 0, b = 0;
            lm_err he = {0};
            bool ok_h = hl_e_eval(p, es[i], &env, z, &a, &he) == HL_OK;
            bool ok_l = ll__eval_at(&ev, es[i], z, &b);
            ck_assert_msg(ok_h == ok_l && (!ok_h || a == b), "expr %d at z=%lld: hlir %d/%lld, llir %d/%lld",
                          i, (long long)z, ok_h, (long long)a, ok_l, (long long)b);
            agreed += ok_h;
            failed_both += !ok_h;
        }
        /* bounds: exact ones equal the scan, the others enclose it */
        int64_t lo, hi, slo = 0, shi = 0;
        int rb = ll__eval_range(&ev, es[i], 12, &lo, &hi);
        if (rb >= 0 && ll__eval_scan(&ev, es[i], 12, &slo, &shi)) {
            ck_assert_msg(lo <= slo && hi >= shi, "expr %d: bounds %lld..%lld miss %lld..%lld", i,
                          (long long)lo, (long long)hi, (long long)slo, (long long)shi);
            if (rb == 1) {
                ck_assert_msg(lo == slo && hi == shi, "expr %d: 'exact' %lld..%lld, scan %lld..%lld",
                              i, (long long)lo, (long long)hi, (long long)slo, (long long)shi);
                exact++;
            }
        }
    }
    ck_assert_uint_gt(agreed, 2000);
    ck_assert_uint_gt(failed_both, 10); /* divisions by zero are met too */
    ck_assert_uint_gt(exact, 50);
    ll__eval_fini(&ev);
    hl_expr_pool_free(p);
}
END_TEST

/* Failing each allocation of building a graph in turn: LM_ENOMEM or a graph, no crash,
 * no leak. */
START_TEST(out_of_memory_is_an_error)
{
    hl_graph *g = tl_example("softmax_f32_4096x8192");
    tl_env t;
    tl_build(&t, g, NULL);
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t.s, &err) == LM_OK);
    ck_assert(ll_genome_most_fused(&gn, t.s, &err) == LM_OK);
    uint32_t failed = 0, ok = 0;
    for (long i = 0; i < 100000; i++) {
        lm_err e = {0};
        ll__mem_fail_after(i);
        ll_graph *lg = ll_graph_from_genome(t.s, &gn, &e);
        bool fired = ll__mem_fail_fired();
        ll__mem_fail_after(-1);
        if (lg) {
            ok++;
            ll_graph_free(lg);
            if (!fired) break;
        } else {
            ck_assert_msg(e.code == LM_ENOMEM, "%s", e.msg);
            failed++;
        }
        lm_err e2 = {0};
        ll__mem_fail_after(i);
        int rc = ll_genome_repair(&gn, t.s, NULL, &e2);
        ll__mem_fail_after(-1);
        ck_assert(rc == LM_OK || e2.code == LM_ENOMEM);
    }
    ck_assert_uint_gt(failed, 10);
    ck_assert_uint_eq(ok, 1);
    ll_genome_fini(&gn);
    tl_fini(&t);
    hl_graph_free(g);
}
END_TEST

/* kinds of nodes in lg */
static void count_kinds(const ll_graph *lg, uint32_t *library, uint32_t *region, uint32_t *kmatmul)
{
    *library = *region = *kmatmul = 0;
    for (uint32_t i = 0; i < ll_graph_node_count(lg); i++) {
        const ll_node *n = ll_graph_node(lg, i);
        *library += n->kind == LL_LIBRARY;
        *region += n->kind == LL_REGION;
        *kmatmul += n->kind == LL_KERNEL && n->op == ll_op_find("KMatmul");
    }
}

typedef int (*seed_fn)(ll_genome *g, const ll_space *s, lm_err *err);

/* The graph of the genome that seed makes in t's space, checked valid (name: messages). */
static ll_graph *seeded_graph(const tl_env *t, seed_fn seed, const char *name)
{
    ll_genome gn;
    lm_err err = {0};
    ck_assert(ll_genome_init(&gn, t->s, &err) == LM_OK);
    ck_assert_msg(seed(&gn, t->s, &err) == LM_OK, "%s: %s", name, err.msg);
    ck_assert_msg(ll_genome_validate(&gn, t->s, &err) == LM_OK, "%s: %s", name, err.msg);
    ll_graph *lg = tl_graph(t->s, &gn);
    ll_genome_fini(&gn);
    return lg;
}

START_TEST(the_library_genome_puts_the_contractions_on_cublaslt)
{
    /* on every example with a matmul: the library genome is valid, holds at least as many
       cuBLASLt calls as the most fused one (and one at least), no generic matmul kernel
       and no fused region: the rest is kernels, as in the least fused */
    char names[TL_MAX_EXAMPLES][256];
    uint32_t n = tl_examples(names, TL_MAX_EXAMPLES), with_matmul = 0;
    for (uint32_t i = 0; i < n; i++) {
        hl_graph *g = tl_load(names[i]);
        tl_env t;
        tl_build(&t, g, NULL);
        ll_graph *lm = seeded_graph(&t, ll_genome_most_fused, names[i]);
        ll_graph *ll = seeded_graph(&t, ll_genome_library, names[i]);
        uint32_t ml, mr, mk, bl, br, bk;
        count_kinds(lm, &ml, &mr, &mk);
        count_kinds(ll, &bl, &br, &bk);
        if (ml > 0) {
            with_matmul++;
            ck_assert_msg(bl >= ml, "%s: %u cuBLASLt calls, the most fused has %u", names[i], bl, ml);
            ck_assert_uint_eq(bk, 0);
            ck_assert_uint_eq(br, 0);
        }
        ll_graph_free(lm);
        ll_graph_free(ll);
        tl_fini(&t);
        hl_graph_free(g);
    }
    ck_assert_uint_ge(with_matmul, 4); /* the matmuls, the MLPs, attention, the Llama block */
}
END_TEST

START_TEST(the_fused_stored_genome_inlines_no_reduction)
{
    /* on every example: valid, and inside every region a reduction is at most the
       region's own root, never a producer inlined into it */
    char names[TL_MAX_EXAMPLES][256];
    uint32_t n = tl_examples(names, TL_MAX_EXAMPLES), regions = 0;
    for (uint32_t i = 0; i < n; i++) {
        hl_graph *g = tl_load(names[i]);
        tl_env t;
        tl_build(&t, g, NULL);
        ll_graph *lg = seeded_graph(&t, ll_genome_fused_stored, names[i]);
        for (uint32_t k = 0; k < ll_graph_node_count(lg); k++) {
            const ll_node *x = ll_graph_node(lg, k);
            regions += x->kind == LL_REGION;
            if (x->kind != LL_FUSED ||
                (x->prim.op != HL_OP_SUM_REDUCE && x->prim.op != HL_OP_MAX_REDUCE))
                continue;
            const ll_node *r = ll_graph_node(lg, x->region);
            ck_assert_msg(r->in[0] == k, "%s: reduction %u is inlined into region %u", names[i],
                          k, x->region);
        }
        ll_graph_free(lg);
        tl_fini(&t);
        hl_graph_free(g);
    }
    ck_assert_uint_gt(regions, 0); /* it still fuses */
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("llir_graph");
    TCase *tc = tcase_create("graph");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, every_random_genome_of_every_example_builds_and_verifies);
    tcase_add_test(tc, random_genomes_of_generated_graphs_build_and_verify);
    tcase_add_test(tc, the_least_fused_graph_is_the_hlir_graph_as_kernels);
    tcase_add_test(tc, matmul_fields_come_from_the_strides);
    tcase_add_test(tc, batched_matmul_fields_collapse_the_batch);
    tcase_add_test(tc, blas_alpha_is_rounded_to_its_dtype);
    tcase_add_test(tc, fingerprints_and_dumps_follow_the_program);
    tcase_add_test(tc, the_verifier_catches_a_wrong_edge_dtype);
    tcase_add_test(tc, the_verifier_catches_a_view_outside_its_buffer);
    tcase_add_test(tc, the_verifier_catches_a_shape_that_breaks_its_rule);
    tcase_add_test(tc, the_verifier_catches_interior_nodes_outside_their_region);
    tcase_add_test(tc, the_evaluator_agrees_with_hlir);
    tcase_add_test(tc, out_of_memory_is_an_error);
    tcase_add_test(tc, the_library_genome_puts_the_contractions_on_cublaslt);
    tcase_add_test(tc, the_fused_stored_genome_inlines_no_reduction);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {make_suite, NULL};
