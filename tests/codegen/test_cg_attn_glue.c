/* test_cg_attn_glue.c - the glue between the rules' fused attention (KAttn, KAttnMask) and
 * the template (codegen/cg_attn.h), without a GPU:
 *
 *   - every tile the rules offer (rules.dsl's attn-tile, attn-tile-d64 and attn-split
 *     facts) is one the template has (cg__attn_tiles), for bf16 and f16;
 *   - the spec codegen fills from a node (cg__attn_spec_of) addresses every element of
 *     q, k, v, the mask and the output where the node's views do: for every leading index
 *     z, row and column, base(z) + row * r + col * c equals the view's position, on the
 *     attention examples (one or two leading dims, GQA's broadcast K and V, the decode
 *     step, the mask broadcast over heads, the Llama block's interleaved heads), each at
 *     two settings of its dims;
 *   - what the template cannot take is refused with LM_EUNSUPPORTED: a head dim other than
 *     64 and 128, f32. */
#include "cg_attn_glue.h"
#include "session.h"
#include "tcg.h"

#include "lm_check.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool has_tile(uint32_t d, hl_dtype dt, cg_attn_tile t)
{
    cg_attn_tile all[128];
    uint32_t n = cg__attn_tiles(d, dt, all, 128);
    ck_assert_uint_le(n, 128);
    for (uint32_t i = 0; i < n; i++)
        if (memcmp(&all[i], &t, sizeof t) == 0) return true;
    return false;
}

START_TEST(every_tile_of_the_rules_is_one_the_template_has)
{
    const char *rules = cs_rules_builtin(); /* rules.dsl with its includes */
    uint32_t tiles = 0, d64 = 0, splits = 0;
    static const hl_dtype dts[2] = {HL_BF16, HL_F16};
    for (const char *l = rules; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        unsigned a, b, c, d;
        if (sscanf(l, "(attn-tile %u %u %u %u)", &a, &b, &c, &d) == 4) {
            for (int k = 0; k < 2; k++) {
                ck_assert_msg(has_tile(64, dts[k], (cg_attn_tile){a, b, c, d, 1}),
                              "attn-tile %u %u %u %u: not a head-dim-64 tile", a, b, c, d);
                ck_assert_msg(has_tile(128, dts[k], (cg_attn_tile){a, b, c, d, 1}),
                              "attn-tile %u %u %u %u: not a head-dim-128 tile", a, b, c, d);
            }
            tiles++;
        } else if (sscanf(l, "(attn-tile-d64 %u %u %u %u)", &a, &b, &c, &d) == 4) {
            for (int k = 0; k < 2; k++)
                ck_assert_msg(has_tile(64, dts[k], (cg_attn_tile){a, b, c, d, 1}),
                              "attn-tile-d64 %u %u %u %u: not a head-dim-64 tile", a, b, c, d);
            d64++;
        } else if (sscanf(l, "(attn-split %u %u)", &b, &d) == 2) {
            for (int k = 0; k < 2; k++) /* the split rules' tile: 64 queries, 4 warps, 2 stages */
                ck_assert_msg(has_tile(64, dts[k], (cg_attn_tile){64, b, 4, 2, d}) &&
                                  has_tile(128, dts[k], (cg_attn_tile){64, b, 4, 2, d}),
                              "attn-split %u %u: not a tile of the template", b, d);
            splits++;
        }
    }
    ck_assert_uint_ge(tiles, 4);
    ck_assert_uint_ge(d64, 1);
    ck_assert_uint_ge(splits, 2);
}
END_TEST

/* ---- a saturated example and the LLIR of its most fused genome ---- */

typedef struct env {
    cs_session *cs;
    const ll_space *s;
    ll_graph *lg;
} env;

static void env_init(env *t, const hl_graph *g)
{
    memset(t, 0, sizeof *t);
    lm_err err = {0};
    t->cs = cs_session_new(g, NULL, &err); /* the built-in rules */
    ck_assert_msg(t->cs != NULL, "%s", err.msg);
    t->s = cs_session_space(t->cs);
    ll_genome gn;
    ck_assert_int_eq(ll_genome_init(&gn, t->s, &err), 0);
    ck_assert_msg(ll_genome_most_fused(&gn, t->s, &err) == 0, "%s", err.msg);
    t->lg = ll_graph_from_genome(t->s, &gn, &err);
    ck_assert_msg(t->lg != NULL, "%s", err.msg);
    ll_genome_fini(&gn);
}

static void env_fini(env *t)
{
    ll_graph_free(t->lg);
    cs_session_free(t->cs);
}

static uint32_t attn_node(const ll_graph *lg)
{
    uint32_t found = LM_NONE;
    for (uint32_t i = 0; i < ll_graph_node_count(lg); i++) {
        const ll_node *n = ll_graph_node(lg, i);
        if (n->kind == LL_KERNEL && ll_op_is_attn(n->op)) {
            ck_assert_msg(found == LM_NONE, "two attention nodes");
            found = i;
        }
    }
    ck_assert_msg(found != LM_NONE, "the most fused genome has no attention node");
    return found;
}

/* The values of the graph's dims, by the pool's variables (names matched). */
static hl_env dims_env(const hl_expr_pool *p, const ll_graph *lg, const int64_t *dimv,
                       int64_t *vals, bool *bound)
{
    uint32_t nv = hl_var_count(p);
    for (uint32_t v = 0; v < nv; v++) {
        bound[v] = false;
        for (uint32_t i = 0; i < ll_graph_dim_count(lg); i++)
            if (strcmp(hl_var_name(p, v), ll_graph_dim_name(lg, i)) == 0) {
                vals[v] = dimv[i];
                bound[v] = true;
            }
    }
    return (hl_env){vals, bound, nv};
}

static int64_t ev(const hl_expr_pool *p, hl_expr e, const hl_env *en, int64_t z)
{
    int64_t v;
    lm_err err = {0};
    ck_assert_msg(hl_e_eval(p, e, en, z, &v, &err) == 0, "%s", err.msg);
    return v;
}

/* Every (z, row, col) of view vw (LLIR pool) at the spec's address (plan pool). */
static void same_addresses(const char *what, const ll_graph *lg, const hl_view *vw, uint32_t nl,
                           const int64_t *dimv, const hl_expr_pool *sp, hl_expr base, hl_expr row,
                           hl_expr col, int64_t *checked)
{
    const hl_expr_pool *lp = ll_graph_exprs(lg);
    int64_t lv[HL_MAX_DIMS + 2], svals[256], lvals[256];
    bool sb[256], lb[256];
    ck_assert_uint_le(hl_var_count(sp), 256);
    ck_assert_uint_le(hl_var_count(lp), 256);
    hl_env se = dims_env(sp, lg, dimv, svals, sb), le = dims_env(lp, lg, dimv, lvals, lb);
    int64_t nbh = 1;
    for (uint32_t i = 0; i < nl + 2; i++) {
        lv[i] = ev(lp, vw->dims[i], &le, 0);
        if (i < nl) nbh *= lv[i];
    }
    int64_t r_st = ev(sp, row, &se, 0), c_st = ev(sp, col, &se, 0);
    for (int64_t z = 0; z < nbh; z++) {
        int64_t b = ev(sp, base, &se, z), want_b = 0, rest = z;
        for (uint32_t i = nl; i-- > 0;) {
            want_b += ev(lp, vw->strides[i], &le, rest % lv[i]);
            rest /= lv[i];
        }
        for (int64_t r = 0; r < lv[nl]; r++)
            for (int64_t c = 0; c < lv[nl + 1]; c++) {
                int64_t got = b + r * r_st + c * c_st;
                int64_t want = want_b + ev(lp, vw->strides[nl], &le, r) +
                               ev(lp, vw->strides[nl + 1], &le, c);
                ck_assert_msg(got == want,
                              "%s: leading index %lld, row %lld, column %lld: the spec addresses "
                              "%lld, the view %lld",
                              what, (long long)z, (long long)r, (long long)c, (long long)got,
                              (long long)want);
                (*checked)++;
            }
    }
}

START_TEST(the_spec_addresses_every_element_as_the_views_do)
{
    static const struct {
        const char *name;
        bool causal, mask;
        uint32_t head_dim;
    } cases[] = {{"causal_attention_bf16", true, false, 64},
                 {"attention_mask_bf16", false, true, 64},
                 {"attention_gqa_bf16", true, false, 128},
                 {"decode_attention_bf16", false, false, 128},
                 {"llama_block_bf16", true, false, 64}};
    int64_t checked = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/graphs/%s.json", LUMINAL_SOURCE_DIR, cases[i].name);
        lm_err err = {0};
        hl_graph *g = hl_graph_load_json(path, &err);
        ck_assert_msg(g != NULL, "%s", err.msg);
        env t;
        env_init(&t, g);
        uint32_t id = attn_node(t.lg);
        const ll_node *n = ll_graph_node(t.lg, id);
        hl_expr_pool *sp = NULL;
        cg_attn_spec s;
        ck_assert_msg(cg__attn_spec_of(t.lg, id, &sp, &s, &err) == 0, "%s: %s", cases[i].name,
                      err.msg);
        ck_assert_int_eq(s.causal, cases[i].causal);
        ck_assert_int_eq(s.has_mask, cases[i].mask);
        ck_assert_uint_eq(s.head_dim, cases[i].head_dim);
        ck_assert_int_eq(s.dtype, HL_BF16);
        ck_assert_uint_eq(s.llir_node, id);
        ck_assert(s.scale > 0.0f);
        ck_assert_uint_eq(s.tile.block_q, n->at.block_q);
        ck_assert_uint_eq(s.tile.kv_splits, n->at.kv_splits);
        for (int v = 0; v < 2; v++) {
            int64_t dimv[8];
            ck_assert_uint_le(ll_graph_dim_count(t.lg), 8);
            for (uint32_t k = 0; k < ll_graph_dim_count(t.lg); k++) {
                const hl_dim *d = ll_graph_dim_at(t.lg, k);
                int64_t x = v ? 7 : 2;
                dimv[k] = x < d->lo ? d->lo : x > d->hi ? d->hi : x;
            }
            const ll_attn *a = &n->at;
            uint32_t nl = a->nlead;
            char what[256];
            snprintf(what, sizeof what, "%s q", cases[i].name);
            same_addresses(what, t.lg, &a->q, nl, dimv, sp, s.q_base, s.q_row, hl_e_num(sp, 1),
                           &checked);
            snprintf(what, sizeof what, "%s k", cases[i].name);
            same_addresses(what, t.lg, &a->k, nl, dimv, sp, s.k_base, s.k_row, hl_e_num(sp, 1),
                           &checked);
            snprintf(what, sizeof what, "%s v", cases[i].name);
            same_addresses(what, t.lg, &a->v, nl, dimv, sp, s.v_base, s.v_row, hl_e_num(sp, 1),
                           &checked);
            if (s.has_mask) {
                snprintf(what, sizeof what, "%s mask", cases[i].name);
                same_addresses(what, t.lg, &a->mask, nl, dimv, sp, s.m_base, s.m_row, s.m_col,
                               &checked);
            }
            /* the output, contiguous [lead.., Sq, D]: element (z, r, c) at (z Sq + r) D + c */
            {
                const hl_expr_pool *lp = ll_graph_exprs(t.lg);
                int64_t lvals[256], svals[256];
                bool lb[256], sb[256];
                hl_env le = dims_env(lp, t.lg, dimv, lvals, lb), se = dims_env(sp, t.lg, dimv, svals, sb);
                int64_t sq = ev(lp, a->sq, &le, 0), hd = ev(lp, a->d, &le, 0), nbh = 1;
                for (uint32_t k = 0; k < nl; k++)
                    nbh *= ev(lp, a->q.dims[k], &le, 0);
                ck_assert_int_eq(ev(sp, s.o_row, &se, 0), hd);
                for (int64_t z = 0; z < nbh; z++) {
                    ck_assert_int_eq(ev(sp, s.o_base, &se, z), z * sq * hd);
                    checked++;
                }
                ck_assert_int_eq(ev(sp, s.n_bh, &se, 0), nbh);
                ck_assert_int_eq(ev(sp, s.sq, &se, 0), sq);
                ck_assert_int_eq(ev(sp, s.skv, &se, 0), ev(lp, a->skv, &le, 0));
            }
        }
        hl_expr_pool_free(sp);
        env_fini(&t);
        hl_graph_free(g);
    }
    ck_assert_int_gt(checked, 100000);
    printf("attention glue: %lld addresses checked\n", (long long)checked);
}
END_TEST

/* A head dim the template does not have, and f32: LM_EUNSUPPORTED naming the node. */
START_TEST(what_the_template_cannot_take_is_refused)
{
    static const char *const files[] = {"op_causal", "op_plain_f32"}; /* head dim 8 */
    for (size_t i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/rules/attn/%s.json", LUMINAL_SOURCE_DIR, files[i]);
        lm_err err = {0};
        hl_graph *g = hl_graph_load_json(path, &err);
        ck_assert_msg(g != NULL, "%s", err.msg);
        env t;
        env_init(&t, g);
        uint32_t id = attn_node(t.lg);
        hl_expr_pool *sp = NULL;
        cg_attn_spec s;
        ck_assert_int_eq(cg__attn_spec_of(t.lg, id, &sp, &s, &err), LM_EUNSUPPORTED);
        ck_assert_ptr_null(sp);
        ck_assert_msg(strstr(err.msg, "head dims 64 and 128") != NULL, "%s", err.msg);
        lm_err pe = {0};
        cg_plan *p = cg_plan_new(t.lg, NULL, &pe);
        ck_assert_ptr_null(p);
        ck_assert_int_eq(pe.code, LM_EUNSUPPORTED);
        env_fini(&t);
        hl_graph_free(g);
    }
}
END_TEST

static Suite *glue_suite(void)
{
    Suite *s = suite_create("cg_attn_glue");
    TCase *tc = tcase_create("glue");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, every_tile_of_the_rules_is_one_the_template_has);
    tcase_add_test(tc, the_spec_addresses_every_element_as_the_views_do);
    tcase_add_test(tc, what_the_template_cannot_take_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {glue_suite, NULL};
