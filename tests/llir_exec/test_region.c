/* test_region.c - fused regions: values carried in f32 inside, one rounding at the store.
 *
 * The expected values come from hlir graphs that say the same thing explicitly: the
 * inputs cast to f32, the chain in f32, one cast back to the storage dtype (and, where a
 * region stores an intermediate, a cast to that dtype and back at that point). */
#include "ll_lower.h"
#include "tx.h"

#include <stdio.h>

#define R 5
#define C 7

/* The chain over x [R, C] and y [C] in x's dtype (constants are exact in every float
 * dtype, so the f32 and bf16 graphs compute the same function):
 *   a = x * y;  b = exp2(a);  c = b + x;  m = cast(a < c);  d = c * m + a
 *   s = sum(d * d, axis 1);  out = sqrt(recip(s + 1)) * 0.5
 * x and a are read several times: the interior is a DAG. If store_b, b is rounded to
 * `store` and back, as a region storing it would. */
typedef struct chain {
    uint32_t a, b, out; /* node ids */
} chain;

static hl_t build_chain(hl_graph *g, hl_t x, hl_t y, bool store_b, hl_dtype store, chain *ids)
{
    hl_dtype dt = x.dtype;
    hl_t a = hl_mul(g, x, y);
    hl_t b = hl_exp2(g, a);
    if (ids) ids->a = a.node, ids->b = b.node;
    if (store_b) b = hl_cast(g, hl_cast(g, b, store), dt);
    hl_t c = hl_add(g, b, x);
    hl_t m = hl_cast(g, hl_lt(g, a, c), dt);
    hl_t d = hl_add(g, hl_mul(g, c, m), a);
    hl_t s = hl_sum_reduce(g, hl_mul(g, d, d), 1);
    hl_t out = hl_mul_scalar(g, hl_sqrt(g, hl_recip(g, hl_add_scalar(g, s, 1.0f))), 0.5f);
    if (ids) ids->out = out.node;
    return out;
}

/* The graph the region lowers: inputs of dtype dt. */
static hl_graph *chain_graph(hl_dtype dt, chain *ids)
{
    hl_graph *g = hl_graph_new();
    hl_expr dx[2] = {hl_n(g, R), hl_n(g, C)}, dy[1] = {hl_n(g, C)};
    hl_t x = hl_input(g, "x", dt, 2, dx), y = hl_input(g, "y", dt, 1, dy);
    hl_output(g, "out", build_chain(g, x, y, false, dt, ids));
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    return g;
}

/* The same chain with explicit f32: inputs of dtype dt cast to f32, the chain in f32 (b
 * rounded to dt and back when store_b), the result cast to dt once. */
static hl_graph *f32_graph(hl_dtype dt, bool store_b)
{
    hl_graph *g = hl_graph_new();
    hl_expr dx[2] = {hl_n(g, R), hl_n(g, C)}, dy[1] = {hl_n(g, C)};
    hl_t x = hl_cast(g, hl_input(g, "x", dt, 2, dx), HL_F32);
    hl_t y = hl_cast(g, hl_input(g, "y", dt, 1, dy), HL_F32);
    hl_output(g, "out", hl_cast(g, build_chain(g, x, y, store_b, dt, NULL), dt));
    ck_assert_msg(hl_graph_error(g)->code == 0, "%s", hl_graph_error(g)->msg);
    return g;
}

/* Every compute node INLINE but the roots in `roots`, which are REGION. */
static ll_graph *fuse(const hl_graph *g, const uint32_t *roots, uint32_t nroots)
{
    uint32_t n = hl_graph_node_count(g);
    ll_lower_impl *impl = calloc(n, sizeof *impl);
    for (uint32_t id = 0; id < n; id++) {
        hl_op op = hl_graph_node(g, id)->op;
        impl[id] = (op == HL_OP_INPUT || op == HL_OP_OUTPUT) ? LL_LOWER_KERNEL : LL_LOWER_INLINE;
    }
    for (uint32_t i = 0; i < nroots; i++)
        impl[roots[i]] = LL_LOWER_REGION;
    ll_lower_plan plan = {impl, NULL};
    lm_err e = {0};
    ll_graph *lg = ll__lower_hlir(g, &plan, &e);
    ck_assert_msg(lg != NULL, "lowering: %s", e.msg);
    free(impl);
    return lg;
}

/* Runs lg on inputs and g2 on the same inputs; returns the outputs. */
static void run_both(const hl_graph *g, const ll_graph *lg, const hl_graph *g2, uint64_t seed,
                     hl_tensor *got, hl_tensor *want, hl_tensor *unfused)
{
    hl_tensor in[2];
    tx_inputs(g, NULL, seed, in);
    tx_ll(lg, NULL, in, got);
    tx_ref(g2, NULL, in, want);
    if (unfused) tx_ref(g, NULL, in, unfused);
    tx_free(in, 2);
}

START_TEST(region_structure_is_one_dag_with_loads_at_its_leaves)
{
    chain ids;
    hl_graph *g = chain_graph(HL_F32, &ids);
    ll_graph *lg = fuse(g, &ids.out, 1);
    /* inputs, the region, its interior, the output */
    uint32_t compute = 0;
    for (uint32_t id = 0; id < hl_graph_node_count(g); id++) {
        hl_op op = hl_graph_node(g, id)->op;
        compute += op != HL_OP_INPUT && op != HL_OP_OUTPUT;
    }
    ck_assert_uint_eq(ll_graph_node_count(lg), 2 + 1 + 2 + compute + 1);
    const ll_node *rn = ll_graph_node(lg, 2);
    ck_assert_int_eq(rn->kind, LL_REGION);
    ck_assert_str_eq(ll_op_get(rn->op)->name, "FStore");
    ck_assert_uint_eq(rn->n_in, 1);
    uint32_t loads = 0, fused = 0, last = 0;
    for (uint32_t id = 3; id < ll_graph_node_count(lg); id++) {
        const ll_node *n = ll_graph_node(lg, id);
        if (n->region != 2) continue;
        last = id;
        if (n->kind == LL_LOAD) {
            loads++;
            ck_assert_uint_lt(n->in[0], 2); /* x or y, each loaded once */
            ck_assert_str_eq(ll_op_get(n->op)->name, "FLoad");
        } else {
            ck_assert_int_eq(n->kind, LL_FUSED);
            ck_assert_int_eq(ll_op_get(n->op)->name[0], 'F');
            fused++;
            for (uint32_t i = 0; i < n->n_in; i++)
                ck_assert_uint_eq(ll_graph_node(lg, n->in[i])->region, 2);
        }
    }
    ck_assert_uint_eq(loads, 2);
    ck_assert_uint_eq(fused, compute); /* every shared value once */
    ck_assert_uint_eq(rn->in[0], last);
    const ll_node *o = ll_graph_node(lg, ll_graph_output(lg, 0));
    ck_assert_uint_eq(o->in[0], 2);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

START_TEST(f32_region_equals_the_reference_exactly)
{
    chain ids;
    hl_graph *g = chain_graph(HL_F32, &ids);
    ll_graph *lg = fuse(g, &ids.out, 1);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        hl_tensor got, want;
        run_both(g, lg, g, seed, &got, &want, NULL);
        ck_assert_msg(tx_same_bits(&got, &want), "seed %llu: element %zu differs",
                      (unsigned long long)seed, tx_first_diff(&got, &want));
        hl_tensor_fini(&got);
        hl_tensor_fini(&want);
    }
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

/* In bf16 / f16 the region equals the f32 evaluation rounded once, and not the
 * reference that rounds every node (so the test sees the difference). */
static void narrow_rounds_once(hl_dtype dt)
{
    chain ids;
    hl_graph *g = chain_graph(dt, &ids);
    hl_graph *g2 = f32_graph(dt, false);
    ll_graph *lg = fuse(g, &ids.out, 1);
    bool differs = false;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        hl_tensor got, want, unfused;
        run_both(g, lg, g2, seed, &got, &want, &unfused);
        ck_assert_msg(tx_same_bits(&got, &want), "%s seed %llu: element %zu: %.9g, want %.9g",
                      hl_dtype_name(dt), (unsigned long long)seed, tx_first_diff(&got, &want),
                      hl_tensor_get(&got, tx_first_diff(&got, &want)),
                      hl_tensor_get(&want, tx_first_diff(&got, &want)));
        differs = differs || !tx_same_bits(&got, &unfused);
        hl_tensor_fini(&got);
        hl_tensor_fini(&want);
        hl_tensor_fini(&unfused);
    }
    ck_assert_msg(differs, "%s: the region gave the per-node rounded result on every seed",
                  hl_dtype_name(dt));
    ll_graph_free(lg);
    hl_graph_free(g);
    hl_graph_free(g2);
}

START_TEST(bf16_region_rounds_once_at_the_store)
{
    narrow_rounds_once(HL_BF16);
}
END_TEST

START_TEST(f16_region_rounds_once_at_the_store)
{
    narrow_rounds_once(HL_F16);
}
END_TEST

START_TEST(a_stored_intermediate_is_rounded_and_loaded)
{
    /* b is the root of a region of its own (stored in bf16) and loaded by the second
     * region, which computes a again inline (a is INLINE, read by both regions) */
    chain ids;
    hl_graph *g = chain_graph(HL_BF16, &ids);
    hl_graph *g2 = f32_graph(HL_BF16, true);
    uint32_t roots[2] = {ids.b, ids.out};
    ll_graph *lg = fuse(g, roots, 2);
    uint32_t regions = 0, loads_of_b = 0;
    for (uint32_t id = 0; id < ll_graph_node_count(lg); id++) {
        const ll_node *n = ll_graph_node(lg, id);
        regions += n->kind == LL_REGION;
        if (n->kind == LL_LOAD && ll_graph_node(lg, n->in[0])->kind == LL_REGION) loads_of_b++;
    }
    ck_assert_uint_eq(regions, 2);
    ck_assert_uint_eq(loads_of_b, 1); /* the second region loads b from the first */
    for (uint64_t seed = 1; seed <= 5; seed++) {
        hl_tensor got, want;
        run_both(g, lg, g2, seed, &got, &want, NULL);
        ck_assert_msg(tx_same_bits(&got, &want), "seed %llu: element %zu differs",
                      (unsigned long long)seed, tx_first_diff(&got, &want));
        hl_tensor_fini(&got);
        hl_tensor_fini(&want);
    }
    ll_graph_free(lg);
    hl_graph_free(g);
    hl_graph_free(g2);
}
END_TEST

START_TEST(a_fused_cast_rounds_as_a_cast)
{
    /* f32 x -> bf16 -> f32, times 3, all in one f32 region: the cast's rounding stays */
    hl_graph *g = hl_graph_new();
    hl_expr d[1] = {hl_n(g, 64)};
    hl_t x = hl_input(g, "x", HL_F32, 1, d);
    hl_t y = hl_mul_scalar(g, hl_cast(g, hl_cast(g, x, HL_BF16), HL_F32), 3.0f);
    hl_output(g, "y", y);
    ll_graph *lg = fuse(g, &y.node, 1);
    hl_tensor got, want, in;
    tx_inputs(g, NULL, 9, &in);
    tx_ll(lg, NULL, &in, &got);
    tx_ref(g, NULL, &in, &want);
    ck_assert(tx_same_bits(&got, &want));
    bool rounded = false; /* the input has bits the bf16 cast drops */
    for (size_t i = 0; i < in.numel; i++)
        rounded = rounded || hl_tensor_get(&got, i) != 3.0 * (double)((float *)in.data)[i];
    ck_assert(rounded);
    hl_tensor_fini(&got);
    hl_tensor_fini(&want);
    hl_tensor_fini(&in);
    ll_graph_free(lg);
    hl_graph_free(g);
}
END_TEST

START_TEST(an_inline_node_read_by_a_kernel_is_refused)
{
    chain ids;
    hl_graph *g = chain_graph(HL_F32, &ids);
    uint32_t n = hl_graph_node_count(g);
    ll_lower_impl *impl = calloc(n, sizeof *impl);
    impl[ids.a] = LL_LOWER_INLINE; /* but b, its reader, is a kernel */
    ll_lower_plan plan = {impl, NULL};
    lm_err e = {0};
    ck_assert_ptr_null(ll__lower_hlir(g, &plan, &e));
    ck_assert_int_eq(e.code, LM_EARG);
    char want[64];
    snprintf(want, sizeof want, "reads hlir node %u, which is INLINE", ids.a);
    ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
    free(impl);
    hl_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llir_exec_region");
    TCase *t = tcase_create("region");
    tcase_add_test(t, region_structure_is_one_dag_with_loads_at_its_leaves);
    tcase_add_test(t, f32_region_equals_the_reference_exactly);
    tcase_add_test(t, bf16_region_rounds_once_at_the_store);
    tcase_add_test(t, f16_region_rounds_once_at_the_store);
    tcase_add_test(t, a_stored_intermediate_is_rounded_and_loaded);
    tcase_add_test(t, a_fused_cast_rounds_as_a_cast);
    tcase_add_test(t, an_inline_node_read_by_a_kernel_is_refused);
    suite_add_tcase(s, t);
    return s;
}

const lm_suite_fn lm_check_suites[] = {suite, NULL};
