/* test_extract.c - egraph's least-tree-size extractor over a serialization
 * (eg_serial_extract, egraph/eg_serial.h), which hlir's decoder and llir's space share:
 * on random serialized e-graphs (cycles, shared children, repeated children, unusable
 * nodes, classes with no finite term) it gives exactly what the fixpoint iteration it
 * replaced gives (least size, ties to the lowest index), and its picks form no cycle. */
#include "eg_serial.h"
#include "lm_check.h"

#include <stdlib.h>
#include <string.h>

typedef struct rnd {
    eg_serialized s;
    bool *ok; /* per node: usable */
} rnd;

static bool usable(void *ctx, uint32_t n)
{
    return ((rnd *)ctx)->ok[n];
}

static uint32_t draw(uint64_t *x, uint32_t n)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (uint32_t)(*x % n);
}

/* A random serialization of nc classes and nn nodes (every class has a node). */
static void make(rnd *r, uint64_t seed, uint32_t nc, uint32_t nn)
{
    memset(r, 0, sizeof *r);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    r->s.n_classes = nc;
    r->s.n_nodes = nn;
    r->s.nodes = calloc(nn, sizeof(eg_snode));
    r->s.children = calloc((size_t)nn * 4, sizeof(uint32_t));
    r->ok = calloc(nn, sizeof(bool));
    uint32_t nch = 0;
    for (uint32_t i = 0; i < nn; i++) {
        eg_snode *n = &r->s.nodes[i];
        n->eclass = i < nc ? i : draw(&x, nc);
        n->table = 0;
        n->child_start = nch;
        n->nchildren = draw(&x, 5) == 0 ? 0 : draw(&x, 4); /* leaves, and up to 3 children */
        for (uint32_t k = 0; k < n->nchildren; k++) {
            /* mostly lower classes (terms exist), sometimes any class (cycles) */
            uint32_t c = n->eclass && draw(&x, 4) ? draw(&x, n->eclass) : draw(&x, nc);
            r->s.children[nch++] = c;
        }
        r->ok[i] = draw(&x, 8) != 0;
    }
}

static void unmake(rnd *r)
{
    free(r->s.nodes);
    free(r->s.children);
    free(r->ok);
}

/* The fixpoint iteration the extractor replaced (llir's and hlir's old copies). */
static void fixpoint(const rnd *r, uint64_t *cost, uint32_t *pick)
{
    const eg_serialized *s = &r->s;
    for (uint32_t c = 0; c < s->n_classes; c++) {
        cost[c] = UINT64_MAX;
        pick[c] = UINT32_MAX;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t i = 0; i < s->n_nodes; i++) {
            const eg_snode *n = &s->nodes[i];
            if (!r->ok[i]) continue;
            uint64_t sum = 1;
            for (uint32_t k = 0; k < n->nchildren && sum != UINT64_MAX; k++) {
                uint64_t cc = cost[s->children[n->child_start + k]];
                sum = cc == UINT64_MAX || sum + cc < sum ? UINT64_MAX : sum + cc;
            }
            if (sum == UINT64_MAX) continue;
            uint32_t c = n->eclass;
            if (sum < cost[c] || (sum == cost[c] && i < pick[c])) {
                cost[c] = sum;
                pick[c] = i;
                changed = true;
            }
        }
    }
}

START_TEST(the_extractor_gives_the_fixpoint_on_random_serializations)
{
    uint32_t with_term = 0, without = 0;
    for (uint64_t seed = 1; seed <= 400; seed++) {
        uint32_t nc = 1 + (uint32_t)(seed % 60), nn = nc + (uint32_t)(seed * 7 % 150);
        rnd r;
        make(&r, seed, nc, nn);
        uint64_t *c1 = malloc(nc * sizeof(uint64_t)), *c2 = malloc(nc * sizeof(uint64_t));
        uint32_t *p1 = malloc(nc * sizeof(uint32_t)), *p2 = malloc(nc * sizeof(uint32_t));
        uint64_t *work = malloc(eg_serial_extract_work(&r.s) * sizeof(uint64_t));
        eg_serial_extract(&r.s, usable, &r, c1, p1, work);
        fixpoint(&r, c2, p2);
        for (uint32_t c = 0; c < nc; c++) {
            ck_assert_msg(c1[c] == c2[c] && p1[c] == p2[c],
                          "seed %llu class %u: extractor %llu n%u, fixpoint %llu n%u",
                          (unsigned long long)seed, c, (unsigned long long)c1[c], p1[c],
                          (unsigned long long)c2[c], p2[c]);
            if (p1[c] == UINT32_MAX) {
                without++;
                continue;
            }
            with_term++;
            /* the pick is usable, of its class, and its children cost less */
            const eg_snode *n = &r.s.nodes[p1[c]];
            ck_assert(r.ok[p1[c]] && n->eclass == c);
            for (uint32_t k = 0; k < n->nchildren; k++)
                ck_assert(c1[r.s.children[n->child_start + k]] < c1[c]);
        }
        free(c1);
        free(c2);
        free(p1);
        free(p2);
        free(work);
        unmake(&r);
    }
    ck_assert_uint_gt(with_term, 1000);
    ck_assert_uint_gt(without, 100); /* cycles and unusable nodes leave classes without a term */
}
END_TEST

START_TEST(a_long_chain_is_extracted_in_linear_time)
{
    /* class i has one node reading class i - 1 and a cycle back from class 0 to the last:
       the fixpoint in index order would need n passes were the nodes listed backwards */
    uint32_t n = 200000;
    rnd r;
    memset(&r, 0, sizeof r);
    r.s.n_classes = n;
    r.s.n_nodes = n + 1;
    r.s.nodes = calloc(n + 1, sizeof(eg_snode));
    r.s.children = calloc(n + 1, sizeof(uint32_t));
    r.ok = calloc(n + 1, sizeof(bool));
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = n - 1 - i; /* listed backwards */
        r.s.nodes[i] = (eg_snode){.eclass = c, .child_start = i, .nchildren = c ? 1 : 0};
        r.s.children[i] = c ? c - 1 : 0;
        r.ok[i] = true;
    }
    r.s.nodes[n] = (eg_snode){.eclass = 0, .child_start = n, .nchildren = 1};
    r.s.children[n] = n - 1;
    r.ok[n] = true;
    uint64_t *cost = malloc(n * sizeof(uint64_t));
    uint32_t *pick = malloc(n * sizeof(uint32_t));
    uint64_t *work = malloc(eg_serial_extract_work(&r.s) * sizeof(uint64_t));
    double t0 = lm_now_s();
    eg_serial_extract(&r.s, usable, &r, cost, pick, work);
    double took = lm_now_s() - t0;
    ck_assert_uint_eq(cost[n - 1], n);
    ck_assert_uint_eq(pick[0], n - 1);
    ck_assert_msg(took < 2.0, "%.3f s for a chain of %u", took, n);
    free(cost);
    free(pick);
    free(work);
    unmake(&r);
}
END_TEST

static Suite *extract_suite(void)
{
    Suite *s = suite_create("llir_extract");
    TCase *tc = tcase_create("extract");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, the_extractor_gives_the_fixpoint_on_random_serializations);
    tcase_add_test(tc, a_long_chain_is_extracted_in_linear_time);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {extract_suite, NULL};
