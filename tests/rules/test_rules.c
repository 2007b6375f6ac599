/* test_rules.c - rules.dsl (docs/rules.md) on every example graph, on the handmade graphs
 * of tests/rules/graphs and on generated graphs.
 *
 * Each graph is encoded (hl_graph_encode), rules.dsl is loaded and its phases (the facts
 * of the relation `phase`) are run in order with eg_run_schedule, under the limits the
 * compiler uses (2 s, 1 GiB, a node limit): every phase must saturate within its bound.
 * Then, on the serialized e-graph: every IR class has a dtype; every class of an HLIR
 * primitive has that primitive's K* kernel; every HLIR node is subsumed (so none survives
 * beside a backend node); matmul Sums have KMatmul and Blas alternatives (counts per
 * example); norm and softmax examples have a program that is one fused region (one
 * FStore whose region reaches every compute node through FInl). The checks are shown to
 * fail on schedules with a family left out. rules/run.egg is checked against the phase
 * facts and against the C path through eqsat's table sizes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream, mkstemp */
#endif
#include "hlir.h"

#include "lm_check.h"
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TR_TIME_LIMIT_S 2.0
#define TR_MEM_LIMIT (1ull << 30)
#define TR_NODE_LIMIT 4000000ull
#define TR_MAX_PHASES 64
#define TR_MAX_FILES 64
#define TR_EXAMPLES_AT_LEAST 12

/* ------------------------------------------------------------------------------------ */
/* files */

static char *tr_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    char tmp[65536];
    size_t k;
    while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
        fwrite(tmp, 1, k, m);
    fclose(f);
    fclose(m);
    return buf;
}

static char *tr_rules_text(void)
{
    return tr_read(LUMINAL_SOURCE_DIR "/rules.dsl");
}

static int tr_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .json files of dir (relative to the source tree), sorted; malloc'd paths. */
static int tr_json_files(const char *dir_rel, char **paths)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", LUMINAL_SOURCE_DIR, dir_rel);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
        ck_assert_int_lt(n, TR_MAX_FILES);
        char *p = malloc(strlen(dir) + len + 2);
        sprintf(p, "%s/%s", dir, de->d_name);
        paths[n++] = p;
    }
    closedir(d);
    qsort(paths, (size_t)n, sizeof(char *), tr_cmp_str);
    return n;
}

/* "examples/graphs/softmax.json" -> "softmax" (static buffer) */
static const char *tr_stem(const char *path)
{
    static char buf[256];
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    snprintf(buf, sizeof buf, "%s", s);
    char *dot = strstr(buf, ".json");
    if (dot) *dot = 0;
    return buf;
}

static hl_graph *tr_load(const char *path)
{
    lm_err err = {0};
    hl_graph *g = hl_graph_load_json(path, &err);
    ck_assert_msg(g != NULL, "%s: %s", path, err.msg);
    return g;
}

static double tr_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------------------ */
/* running the phases */

typedef struct tr_phase {
    int64_t order;
    char name[64];
    char sched[256];
} tr_phase;

static int tr_phase_cmp(const void *a, const void *b)
{
    const tr_phase *x = a, *y = b;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The facts of (phase order name schedule), in increasing order. */
static int tr_phases(const eg_engine *e, tr_phase *ph)
{
    int t = eg_table_lookup(e, "phase");
    ck_assert_msg(t >= 0, "rules.dsl declares no relation phase");
    ck_assert_int_eq(eg_table_arity(e, t), 3);
    size_t cur = 0;
    eg_value cols[4];
    int n = 0;
    while (eg_table_next_row(e, t, &cur, cols, NULL, NULL)) {
        ck_assert_int_lt(n, TR_MAX_PHASES);
        ph[n].order = eg_value_as_i64(cols[0]);
        snprintf(ph[n].name, sizeof ph[n].name, "%s", eg_value_as_string(e, cols[1]));
        snprintf(ph[n].sched, sizeof ph[n].sched, "%s", eg_value_as_string(e, cols[2]));
        n++;
    }
    qsort(ph, (size_t)n, sizeof *ph, tr_phase_cmp);
    for (int i = 1; i < n; i++)
        ck_assert_msg(ph[i].order != ph[i - 1].order, "two phases numbered %lld",
                      (long long)ph[i].order);
    return n;
}

static uint64_t tr_node_limit = TR_NODE_LIMIT; /* lowered by one test */

typedef struct tr_run {
    eg_engine *e;
    FILE *out;
    hl_encoding enc;
    double wall_s;
    uint64_t mem_peak;
    uint64_t nodes;
    int nphases;
    tr_phase ph[TR_MAX_PHASES];
    char err[LM_ERR_MSG + 128]; /* empty when every phase ran and saturated */
} tr_run;

/* Encodes g, loads rules (text, "rules.dsl" when NULL) and runs its phases, skipping the
 * phases named in skip (a comma-separated list; NULL: none). r->err says what went wrong (a failed command, a phase
 * that did not saturate); it is empty when all went well. */
static bool tr_skipped(const char *skip, const char *name)
{
    if (!skip) return false;
    size_t n = strlen(name);
    for (const char *p = skip; (p = strstr(p, name)) != NULL; p++)
        if ((p == skip || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return true;
    return false;
}

static void tr_saturate_with(const hl_graph *g, const char *rules, const char *skip, tr_run *r)
{
    memset(r, 0, sizeof *r);
    eg_options o;
    eg_options_default(&o);
    o.node_limit = tr_node_limit;
    o.mem_limit = TR_MEM_LIMIT;
    o.time_limit_s = TR_TIME_LIMIT_S;
    r->out = fopen("/dev/null", "w");
    o.out = r->out;
    o.log = r->out;
    double t0 = tr_now();
    r->e = eg_engine_new(&o, NULL);
    ck_assert_ptr_nonnull(r->e);
    lm_err herr = {0};
    ck_assert_msg(hl_graph_encode(g, r->e, &r->enc, &herr) == HL_OK, "encode: %s", herr.msg);
    char *own = rules ? NULL : tr_rules_text();
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(r->e, rules ? rules : own, "rules.dsl", &ee) == 0, "rules.dsl: %s",
                  ee.msg);
    free(own);
    r->nphases = tr_phases(r->e, r->ph);
    ck_assert_int_gt(r->nphases, 0);
    for (int i = 0; i < r->nphases; i++) {
        if (tr_skipped(skip, r->ph[i].name)) continue;
        eg_stop_reason why = EG_STOP_SATURATED;
        if (eg_run_schedule(r->e, r->ph[i].sched, &why, &ee) != 0) {
            snprintf(r->err, sizeof r->err, "phase %s failed: %s", r->ph[i].name, ee.msg);
            break;
        }
        if (why != EG_STOP_SATURATED) {
            static const char *const reasons[] = {"saturated",  "its bound",  "until",
                                                  "node limit", "iteration limit",
                                                  "time limit", "memory limit"};
            snprintf(r->err, sizeof r->err, "phase %s (%s) did not saturate: stopped at %s",
                     r->ph[i].name, r->ph[i].sched,
                     (unsigned)why < 7 ? reasons[why] : "an unknown reason");
            break;
        }
    }
    ck_assert_int_eq(eg_rebuild(r->e, &ee), 0);
    r->wall_s = tr_now() - t0;
    r->mem_peak = eg_mem_peak(r->e);
    r->nodes = eg_node_count(r->e);
}

static void tr_saturate(const hl_graph *g, tr_run *r, const char *what)
{
    tr_saturate_with(g, NULL, NULL, r);
    ck_assert_msg(r->err[0] == 0, "%s: %s", what, r->err);
    ck_assert_msg(r->wall_s < TR_TIME_LIMIT_S, "%s: %.3f s", what, r->wall_s);
    ck_assert_msg(r->mem_peak < TR_MEM_LIMIT, "%s: %llu bytes", what,
                  (unsigned long long)r->mem_peak);
}

static void tr_run_free(tr_run *r)
{
    hl_encoding_fini(&r->enc);
    eg_engine_free(r->e);
    if (r->out) fclose(r->out);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------------------ */
/* the serialized e-graph, by class */

typedef struct tr_view {
    eg_serialized s;
    uint32_t *start, *count, *nodes; /* the nodes of class c: nodes[start[c] .. +count[c]) */
    bool *has_dtype;
    int ir_sort, opkind_sort;
    uint64_t *sorted_val; /* (value << 32 | class) of e-classes, sorted, for lookups */
    uint32_t nsorted;
} tr_view;

static int tr_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The class of e-class value v (canonical), or UINT32_MAX. */
static uint32_t tr_class_of(const tr_view *v, eg_value val)
{
    uint32_t lo = 0, hi = v->nsorted;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        uint64_t key = v->sorted_val[mid] >> 32;
        if (key < val) lo = mid + 1;
        else if (key > val) hi = mid;
        else return (uint32_t)(v->sorted_val[mid] & 0xffffffffu);
    }
    return UINT32_MAX;
}

static void tr_view_init(tr_view *v, tr_run *r)
{
    memset(v, 0, sizeof *v);
    lm_err ee = {0};
    ck_assert_msg(eg_serialize(r->e, NULL, &v->s, &ee) == 0, "%s", ee.msg);
    uint32_t nc = v->s.n_classes;
    v->start = calloc(nc + 1, sizeof *v->start);
    v->count = calloc(nc + 1, sizeof *v->count);
    v->nodes = calloc(v->s.n_nodes + 1, sizeof *v->nodes);
    v->has_dtype = calloc(nc + 1, sizeof *v->has_dtype);
    for (uint32_t i = 0; i < v->s.n_nodes; i++)
        v->count[v->s.nodes[i].eclass]++;
    for (uint32_t c = 1; c < nc; c++)
        v->start[c] = v->start[c - 1] + v->count[c - 1];
    uint32_t *fill = calloc(nc + 1, sizeof *fill);
    for (uint32_t i = 0; i < v->s.n_nodes; i++) {
        uint32_t c = v->s.nodes[i].eclass;
        v->nodes[v->start[c] + fill[c]++] = i;
    }
    free(fill);
    v->ir_sort = eg_sort_lookup(r->e, "IR");
    v->opkind_sort = eg_sort_lookup(r->e, "OpKind");
    ck_assert_int_ge(v->ir_sort, 0);
    ck_assert_int_ge(v->opkind_sort, 0);
    v->sorted_val = calloc(nc + 1, sizeof *v->sorted_val);
    for (uint32_t c = 0; c < nc; c++) {
        if (v->count[c] == 0 || v->s.nodes[v->nodes[v->start[c]]].table == UINT32_MAX) continue;
        v->sorted_val[v->nsorted++] = ((uint64_t)v->s.class_value[c] << 32) | c;
    }
    qsort(v->sorted_val, v->nsorted, sizeof *v->sorted_val, tr_u64_cmp);
    int dt = eg_table_lookup(r->e, "dtype");
    ck_assert_int_ge(dt, 0);
    size_t cur = 0;
    eg_value cols[2];
    while (eg_table_next_row(r->e, dt, &cur, cols, NULL, NULL)) {
        uint32_t c = tr_class_of(v, eg_find(r->e, cols[0]));
        if (c != UINT32_MAX) v->has_dtype[c] = true;
    }
}

static void tr_view_fini(tr_view *v)
{
    eg_serialized_free(&v->s);
    free(v->start);
    free(v->count);
    free(v->nodes);
    free(v->has_dtype);
    free(v->sorted_val);
    memset(v, 0, sizeof *v);
}

static const eg_snode *tr_node(const tr_view *v, uint32_t n)
{
    return &v->s.nodes[n];
}

static uint32_t tr_child(const tr_view *v, uint32_t n, uint32_t i)
{
    return v->s.children[v->s.nodes[n].child_start + i];
}

/* The kind of an Op node: the constructor of its OpKind child ("Add", "KAdd", "FInl"). */
static const char *tr_kind(const tr_view *v, uint32_t n)
{
    if (strcmp(tr_node(v, n)->op, "Op") != 0) return NULL;
    uint32_t k = tr_child(v, n, 0);
    ck_assert_uint_gt(v->count[k], 0);
    return tr_node(v, v->nodes[v->start[k]])->op;
}

static const char *const tr_hlir_kinds[] = {"Constant", "Iota", "Cast",     "Exp2",   "Log2",
                                            "Sin",      "Recip", "Sqrt",    "Add",    "Mul",
                                            "Mod",      "LessThan", "Gather", "Scatter", "Sum",
                                            "Max"};
#define TR_N_HLIR (sizeof tr_hlir_kinds / sizeof tr_hlir_kinds[0])

static bool tr_is_hlir(const char *k)
{
    for (size_t i = 0; i < TR_N_HLIR; i++)
        if (strcmp(k, tr_hlir_kinds[i]) == 0) return true;
    return false;
}

/* a kernel, a region root, a matmul: what a class needs for a program to compute it */
static bool tr_is_backend(const char *k)
{
    return (k[0] == 'K' && k[1] >= 'A' && k[1] <= 'Z') || strcmp(k, "FStore") == 0 ||
           strcmp(k, "Blas") == 0;
}

/* The Op node of kind k in class c (UINT32_MAX if none). */
static uint32_t tr_find_kind(const tr_view *v, uint32_t c, const char *k)
{
    for (uint32_t j = 0; j < v->count[c]; j++) {
        uint32_t n = v->nodes[v->start[c] + j];
        const char *kn = tr_kind(v, n);
        if (kn && strcmp(kn, k) == 0) return n;
    }
    return UINT32_MAX;
}

/* The IR classes of an IList class, in order; returns the count. */
static uint32_t tr_list(const tr_view *v, uint32_t l, uint32_t *out, uint32_t max)
{
    uint32_t n = 0;
    for (;;) {
        uint32_t cons = UINT32_MAX;
        for (uint32_t j = 0; j < v->count[l]; j++)
            if (strcmp(tr_node(v, v->nodes[v->start[l] + j])->op, "ICons") == 0)
                cons = v->nodes[v->start[l] + j];
        if (cons == UINT32_MAX) return n;
        ck_assert_uint_lt(n, max);
        out[n++] = tr_child(v, cons, 0);
        l = tr_child(v, cons, 1);
    }
}

/* The general checks; NULL when they hold, else a message (static buffer). */
static const char *tr_check_general(const tr_view *v)
{
    static char msg[512];
    for (uint32_t c = 0; c < v->s.n_classes; c++) {
        if ((int)v->s.class_sort[c] != v->ir_sort) continue;
        if (!v->has_dtype[c]) {
            snprintf(msg, sizeof msg, "IR class c%u (first node %s) has no dtype", c,
                     tr_node(v, v->nodes[v->start[c]])->op);
            return msg;
        }
        bool backend = false;
        for (uint32_t j = 0; j < v->count[c]; j++) {
            const char *k = tr_kind(v, v->nodes[v->start[c] + j]);
            if (k && tr_is_backend(k)) backend = true;
        }
        for (uint32_t j = 0; j < v->count[c]; j++) {
            uint32_t n = v->nodes[v->start[c] + j];
            const char *k = tr_kind(v, n);
            if (!k || !tr_is_hlir(k)) continue;
            char kk[64];
            snprintf(kk, sizeof kk, "K%s", k);
            if (tr_find_kind(v, c, kk) == UINT32_MAX) {
                snprintf(msg, sizeof msg, "class c%u: the primitive %s has no %s", c, k, kk);
                return msg;
            }
            if (!tr_node(v, n)->subsumed && backend) {
                snprintf(msg, sizeof msg,
                         "class c%u: the HLIR node %s is not subsumed beside a backend node", c, k);
                return msg;
            }
            if (!tr_node(v, n)->subsumed) {
                snprintf(msg, sizeof msg, "class c%u: the HLIR node %s is not subsumed", c, k);
                return msg;
            }
        }
    }
    return NULL;
}

/* Sum classes (classes holding an HLIR Sum) with a KMatmul, with a Blas. */
static void tr_matmul_counts(const tr_view *v, int *kmm, int *blas)
{
    *kmm = *blas = 0;
    for (uint32_t c = 0; c < v->s.n_classes; c++) {
        if ((int)v->s.class_sort[c] != v->ir_sort || tr_find_kind(v, c, "Sum") == UINT32_MAX)
            continue;
        *kmm += tr_find_kind(v, c, "KMatmul") != UINT32_MAX;
        *blas += tr_find_kind(v, c, "Blas") != UINT32_MAX;
    }
}

/* Is there a program whose whole computation is one fused region? The graph has one
 * output; its producer's FStore roots the region; every value class the region reads
 * must offer FInl (computed inside), except loads of graph inputs; the region must reach
 * every class of the graph that holds an HLIR compute node. NULL when it holds. */
static const char *tr_check_single_region(const tr_view *v)
{
    static char msg[512];
    uint32_t out = UINT32_MAX, nout = 0;
    for (uint32_t i = 0; i < v->s.n_nodes; i++)
        if (strcmp(tr_node(v, i)->op, "Output") == 0) {
            out = i;
            nout++;
        }
    if (nout != 1) return "not one output";
    uint32_t root = tr_child(v, out, 0);
    uint32_t st = tr_find_kind(v, root, "FStore");
    if (st == UINT32_MAX) return "the output's producer has no FStore";
    uint32_t nc = v->s.n_classes;
    bool *seen = calloc(nc, sizeof *seen); /* fused-form classes reached */
    uint32_t *stack = calloc(v->s.n_nodes + 1, sizeof *stack), sp = 0;
    uint32_t fx[4];
    ck_assert_uint_eq(tr_list(v, tr_child(v, st, 1), fx, 4), 1);
    stack[sp++] = fx[0];
    seen[fx[0]] = true;
    uint32_t reached = 0;
    const char *bad = NULL;
    while (sp > 0 && !bad) {
        uint32_t f = stack[--sp];
        reached++;
        uint32_t fnode = UINT32_MAX;
        for (uint32_t j = 0; j < v->count[f]; j++) {
            const char *k = tr_kind(v, v->nodes[v->start[f] + j]);
            if (k && k[0] == 'F' && strcmp(k, "FStore") && strcmp(k, "FLoad") && strcmp(k, "FInl"))
                fnode = v->nodes[v->start[f] + j];
        }
        if (fnode == UINT32_MAX) {
            snprintf(msg, sizeof msg, "class c%u is not a fused form", f);
            bad = msg;
            break;
        }
        uint32_t in[8];
        uint32_t n = tr_list(v, tr_child(v, fnode, 1), in, 8);
        for (uint32_t i = 0; i < n && !bad; i++) {
            uint32_t inl = tr_find_kind(v, in[i], "FInl");
            if (inl != UINT32_MAX) {
                uint32_t g[4];
                ck_assert_uint_eq(tr_list(v, tr_child(v, inl, 1), g, 4), 1);
                if (!seen[g[0]]) {
                    seen[g[0]] = true;
                    stack[sp++] = g[0];
                }
                continue;
            }
            uint32_t ld = tr_find_kind(v, in[i], "FLoad");
            uint32_t x[4];
            bool input = false;
            if (ld != UINT32_MAX && tr_list(v, tr_child(v, ld, 1), x, 4) == 1)
                for (uint32_t j = 0; j < v->count[x[0]]; j++)
                    if (strcmp(tr_node(v, v->nodes[v->start[x[0]] + j])->op, "Input") == 0)
                        input = true;
            if (!input) {
                snprintf(msg, sizeof msg,
                         "the region reads value class c%u, which has no FInl and is not an input",
                         in[i]);
                bad = msg;
            }
        }
    }
    free(seen);
    free(stack);
    if (bad) return bad;
    uint32_t compute = 0;
    for (uint32_t c = 0; c < nc; c++) {
        if ((int)v->s.class_sort[c] != v->ir_sort) continue;
        for (uint32_t j = 0; j < v->count[c]; j++) {
            const char *k = tr_kind(v, v->nodes[v->start[c] + j]);
            if (k && tr_is_hlir(k)) {
                compute++;
                break;
            }
        }
    }
    if (reached != compute) {
        snprintf(msg, sizeof msg, "the region reaches %u of %u compute classes", reached, compute);
        return msg;
    }
    return NULL;
}

/* The Blas kinds of the e-graph as text, sorted (malloc'd strings); the count. */
static int tr_blas_terms(tr_run *r, const tr_view *v, char **out, int max)
{
    int n = 0;
    for (uint32_t i = 0; i < v->s.n_nodes; i++) {
        if (strcmp(tr_node(v, i)->op, "Blas") != 0) continue;
        ck_assert_int_lt(n, max);
        char *term = NULL;
        lm_err ee = {0};
        ck_assert_msg(eg_extract(r->e, v->opkind_sort, v->s.class_value[tr_node(v, i)->eclass],
                                 &term, NULL, &ee) == 0,
                      "%s", ee.msg);
        out[n++] = strdup(term);
        eg_string_free(term);
    }
    qsort(out, (size_t)n, sizeof(char *), tr_cmp_str);
    return n;
}

/* ------------------------------------------------------------------------------------ */
/* the examples */

typedef struct tr_expect {
    const char *name;
    int kmatmul_sums; /* Sum classes with a KMatmul */
    int blas_sums;    /* Sum classes with a Blas */
    bool one_region;  /* a program that is a single fused region exists */
} tr_expect;

/* Why these numbers (docs/rules.md): llama_block has 9 matmuls (q, k, v, q k^T, p v, o,
 * gate, up, down), all with KMatmul and Blas: the o projection reads the attention output
 * through a merged permuted view whose stride is not linear, so it reads a contiguous copy
 * (copy-first); p v reads v's heads interleaved (batch stride 64 < one matrix), which
 * cuBLASLt takes for a read-only operand. Graphs with a Gather, or with several
 * outputs, have no single-region program, nor have those where a reduction has two
 * consumers (silu(x @ w) reads the matmul twice: reductions are inlined only when
 * single-use). Causal attention has none either: its single region would compute the
 * softmax (a max and a sum over the keys) inside the p v product, once per element of the
 * head dim it is broadcast along, and no-reduction-under-contraction forbids that (without
 * the rule the single region exists, so this row checks the rule). The same holds of the
 * other attention examples; GQA and decode (K and V broadcast over a group dim, two batch
 * dims that do not collapse into one) have no KMatmul and no Blas: their products are the
 * fused attention or Mul + Sum kernels. */
static const tr_expect tr_expected[] = {
    {"attention_bf16", 2, 2, false},
    {"attention_gqa_bf16", 0, 0, false},
    {"attention_mask_bf16", 2, 2, false},
    {"causal_attention_bf16", 2, 2, false},
    {"causal_attention_d128_bf16", 2, 2, false},
    {"decode_attention_bf16", 0, 0, false},
    {"decode_mlp_bf16", 3, 3, false},
    {"elementwise_chain_f32_16m", 0, 0, true},
    {"embedding_gather", 0, 0, false},
    {"layernorm_gelu_f32_4096", 0, 0, true},
    {"llama_block_bf16", 9, 9, false},
    {"matmul_bf16_4096", 1, 1, true},
    {"matmul_f32_2048", 1, 1, true},
    {"primitives_strided", 0, 0, true},
    {"rmsnorm_f32_8192x4096", 0, 0, true},
    {"softmax_f32_4096x8192", 0, 0, true},
    {"swiglu_mlp_bf16", 3, 3, false},
};

static const tr_expect *tr_expect_for(const char *name)
{
    for (size_t i = 0; i < sizeof tr_expected / sizeof tr_expected[0]; i++)
        if (strcmp(tr_expected[i].name, name) == 0) return &tr_expected[i];
    return NULL;
}

START_TEST(every_example_saturates_and_passes_the_checks)
{
    char *paths[TR_MAX_FILES];
    int n = tr_json_files("examples/graphs", paths);
    ck_assert_int_ge(n, TR_EXAMPLES_AT_LEAST);
    int done = 0;
    for (int i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s", tr_stem(paths[i]));
        const tr_expect *x = tr_expect_for(name);
        ck_assert_msg(x != NULL, "%s: no expectations in tests/rules/test_rules.c", name);
        hl_graph *g = tr_load(paths[i]);
        tr_run r;
        tr_saturate(g, &r, name);
        tr_view v;
        tr_view_init(&v, &r);
        const char *m = tr_check_general(&v);
        ck_assert_msg(m == NULL, "%s: %s", name, m);
        int kmm, blas;
        tr_matmul_counts(&v, &kmm, &blas);
        ck_assert_msg(kmm == x->kmatmul_sums && blas == x->blas_sums,
                      "%s: %d Sum classes with KMatmul, %d with Blas; expected %d and %d", name,
                      kmm, blas, x->kmatmul_sums, x->blas_sums);
        m = tr_check_single_region(&v);
        ck_assert_msg((m == NULL) == x->one_region, "%s: single region: %s", name,
                      m ? m : "exists, but not expected");
        fprintf(stderr, "rules: %-28s %6.3f s  %7.2f MiB engine peak  %7llu rows\n", name,
                r.wall_s, (double)r.mem_peak / (1 << 20), (unsigned long long)r.nodes);
        tr_view_fini(&v);
        tr_run_free(&r);
        hl_graph_free(g);
        free(paths[i]);
        done++;
    }
    ck_assert_int_eq(done, n);
}
END_TEST

/* The checks are live: each fails when the family it checks is left out. */
START_TEST(the_checks_fail_without_the_families_they_check)
{
    hl_graph *g = tr_load(LUMINAL_SOURCE_DIR "/examples/graphs/softmax_f32_4096x8192.json");
    tr_run r;
    tr_view v;
    /* no kernel lowering: the primitives have no K* */
    tr_saturate_with(g, NULL, "lower", &r);
    ck_assert_str_eq(r.err, "");
    tr_view_init(&v, &r);
    const char *m = tr_check_general(&v);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(strstr(m, "has no K"));
    tr_view_fini(&v);
    tr_run_free(&r);
    /* no cleanup: HLIR nodes stay beside backend nodes */
    tr_saturate_with(g, NULL, "cleanup", &r);
    tr_view_init(&v, &r);
    m = tr_check_general(&v);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(strstr(m, "not subsumed beside a backend node"));
    tr_view_fini(&v);
    tr_run_free(&r);
    /* no dtypes for the new classes: the plumbing classes have none */
    tr_saturate_with(g, NULL, "fuse-dtype,inline-dtype", &r);
    tr_view_init(&v, &r);
    m = tr_check_general(&v);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(strstr(m, "has no dtype"));
    tr_view_fini(&v);
    tr_run_free(&r);
    /* no inlining: no single region */
    tr_saturate_with(g, NULL, "inline", &r);
    tr_view_init(&v, &r);
    ck_assert_ptr_nonnull(tr_check_single_region(&v));
    tr_view_fini(&v);
    tr_run_free(&r);
    /* the multi-use elementwise rule is what makes softmax one region (exp has two
     * consumers): without it, no single region either */
    char *rules = tr_rules_text();
    char *at = strstr(rules, ":name \"inline-multi-use-elementwise\"");
    ck_assert_ptr_nonnull(at);
    char *start = at;
    while (start > rules && strncmp(start, "(rule ", 6) != 0)
        start--;
    memset(start, ' ', (size_t)(at - start) + strlen(":name \"inline-multi-use-elementwise\")"));
    tr_saturate_with(g, rules, NULL, &r);
    ck_assert_str_eq(r.err, "");
    tr_view_init(&v, &r);
    m = tr_check_single_region(&v);
    ck_assert_ptr_nonnull(m);
    tr_view_fini(&v);
    tr_run_free(&r);
    free(rules);
    hl_graph_free(g);
}
END_TEST

/* A limit names the phase that hit it: with room for the encoding and a few hundred rows
 * more, the run stops in a phase that grows the e-graph, and says which. */
START_TEST(a_limit_names_the_phase_that_hit_it)
{
    hl_graph *g = tr_load(LUMINAL_SOURCE_DIR "/examples/graphs/llama_block_bf16.json");
    tr_run r;
    tr_saturate(g, &r, "llama_block_bf16");
    uint64_t full = r.nodes;
    tr_run_free(&r);
    tr_node_limit = full / 2;
    tr_saturate_with(g, NULL, NULL, &r);
    tr_node_limit = TR_NODE_LIMIT;
    ck_assert_msg(strstr(r.err, "stopped at node limit") != NULL, "got '%s'", r.err);
    ck_assert_msg(strncmp(r.err, "phase ", 6) == 0, "got '%s'", r.err);
    fprintf(stderr, "rules: with %llu rows allowed: %s\n", (unsigned long long)(full / 2), r.err);
    tr_run_free(&r);
    hl_graph_free(g);
}
END_TEST

/* Issue 21, fault 3: the uses phase is linear in the graph. A chain of N relus reads one
 * shared constant N times; multi-use joined use with itself, N^2 matches (600 MB at
 * N = 2000, 7.5 GB at 10 000; the engine's 2 s limit stopped it). At N = 2000 the whole
 * saturation now saturates every phase and holds under 100 MB. */
START_TEST(the_uses_phase_is_linear_in_a_long_chain)
{
    enum { N = 2000 };
    size_t cap = (size_t)N * 64 + 1024, len = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    len += (size_t)snprintf(text + len, cap - len,
                            "{\"format\": \"luminal-graph\", \"version\": 1, \"name\": \"chain\","
                            "\"dims\": [{\"name\": \"L\", \"min\": 1, \"max\": 4096, \"profile\": 1024}],"
                            "\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"L\"]}],"
                            "\"nodes\": [");
    for (int i = 0; i < N; i++) {
        char in[32] = "x";
        if (i) snprintf(in, sizeof in, "r%d", i - 1);
        len += (size_t)snprintf(text + len, cap - len,
                                "%s{\"name\": \"r%d\", \"op\": \"relu\", \"inputs\": [\"%s\"]}",
                                i ? "," : "", i, in);
    }
    len += (size_t)snprintf(text + len, cap - len, "], \"outputs\": [\"r%d\"]}", N - 1);
    ck_assert_uint_lt(len, cap);
    lm_err err = {0};
    hl_graph *g = hl_graph_read_json(text, len, "chain.json", &err);
    ck_assert_msg(g != NULL, "%s", err.msg);
    free(text);
    tr_run r;
    tr_saturate_with(g, NULL, NULL, &r);
    ck_assert_msg(r.err[0] == 0, "relu chain: %s", r.err);
    ck_assert_msg(r.mem_peak < (100u << 20), "relu chain of %d: %llu bytes at peak", N,
                  (unsigned long long)r.mem_peak);
    /* the multi-use rule's matches: a few per use (they were 20 million) */
    FILE *st = tmpfile();
    ck_assert_ptr_nonnull(st);
    eg_print_stats(r.e, st);
    rewind(st);
    char line[512];
    long long matches = -1;
    while (fgets(line, sizeof line, st))
        if (strncmp(line, "  rule multi-use: ", 18) == 0) {
            const char *c = strchr(line + 18, ',');
            ck_assert_ptr_nonnull(c);
            matches = atoll(c + 1);
        }
    fclose(st);
    ck_assert_msg(matches >= 0 && matches < 20 * N, "multi-use matched %lld times", matches);
    int t = eg_table_lookup(r.e, "multi-use");
    ck_assert_int_ge(t, 0);
    ck_assert_uint_gt(eg_table_size(r.e, t), 0);
    fprintf(stderr, "rules: relu chain of %d: %.3f s, %llu bytes at peak\n", N, r.wall_s,
            (unsigned long long)r.mem_peak);
    tr_run_free(&r);
    hl_graph_free(g);
}
END_TEST

/* A rule that reads a bf16 tensor as f32 is caught by the dtype guard. */
START_TEST(the_dtype_guard_catches_a_wrong_operand_dtype)
{
    hl_graph *g = tr_load(LUMINAL_SOURCE_DIR "/examples/graphs/matmul_bf16_4096.json");
    char *rules = tr_rules_text();
    const char *bad = "\n(rule ((= ?e (Op (Sum ?s ?n ?a ?na ?o) ?l)))"
                      " ((union ?e (Op (KSum ?s ?n ?a ?na ?o (F32)) ?l))) :ruleset lower"
                      " :name \"wrong-dtype\")\n";
    char *text = malloc(strlen(rules) + strlen(bad) + 1);
    sprintf(text, "%s%s", rules, bad);
    tr_run r;
    tr_saturate_with(g, text, NULL, &r);
    ck_assert_msg(strstr(r.err, "dtype-guard") != NULL, "got: '%s'", r.err);
    int t = eg_table_lookup(r.e, "dtype-conflict");
    ck_assert_int_ge(t, 0);
    ck_assert_uint_gt(eg_table_size(r.e, t), 0);
    tr_run_free(&r);
    free(text);
    free(rules);
    hl_graph_free(g);
}
END_TEST

/* Family 1 on terms written for the purpose: tests/rules/expr_algebra.egg's checks (folds,
 * floor division of negatives, no fold that wraps or divides by zero, the div/mod
 * identities, canonical forms, coefficients of strides, bounds). */
START_TEST(the_expression_algebra_folds_to_canonical_forms)
{
    eg_options o;
    eg_options_default(&o);
    FILE *null = fopen("/dev/null", "w");
    o.out = null;
    o.log = null;
    eg_engine *e = eg_engine_new(&o, NULL);
    lm_err herr = {0};
    ck_assert_msg(hl_encode_declare(e, &herr) == HL_OK, "%s", herr.msg);
    char *rules = tr_rules_text();
    char *checks = tr_read(LUMINAL_SOURCE_DIR "/tests/rules/expr_algebra.egg");
    lm_err ee = {0};
    ck_assert_msg(eg_run_text(e, rules, "rules.dsl", &ee) == 0, "%s", ee.msg);
    ck_assert_msg(eg_run_text(e, checks, "expr_algebra.egg", &ee) == 0, "%s", ee.msg);
    /* and the file's checks can fail: a false one is reported */
    ck_assert_int_ne(eg_run_text(e, "(check (= f1 (MNum 6)))", "false-check", &ee), 0);
    free(checks);
    free(rules);
    eg_engine_free(e);
    fclose(null);
}
END_TEST

/* ------------------------------------------------------------------------------------ */
/* matmul recovery on handmade graphs: the exact calls */

typedef struct tr_blas_case {
    const char *file;
    int numeric; /* calls checked against the reference runtime (those read by outputs) */
    int n;
    const char *terms[10]; /* sorted as strcmp sorts them */
} tr_blas_case;

#define F32X5 "(F32) (F32) (F32) (F32) (F32)"
static const tr_blas_case tr_blas_cases[] = {
    /* two batch dims, B dynamic, collapse into one batch of B*3 with strides 5*11, 11*7 */
    {"mm_batch2_f32",
     1,
     1,
     {"(Blas (MNum 5) (MNum 7) (MNum 11) (MMul (MVar \"B\") (MNum 3)) (MNum 11) (MNum 7) (MNum 55) "
      "(MNum 77) 0 0 1.0 (F32) 0.0 0 " F32X5 ")"}},
    /* heads interleaved in row-major [6, 2*4] tensors: q_h k_h^T (A row-major, lda 8; B
     * column-major, ldb 8) and p_h v_h (B row-major, ldb 8), every interleaved operand with
     * batch stride 4, below one matrix: read-only operands may overlap (docs/cuda_rt.md) */
    /* operands read through strides not linear in z, copied contiguous first (rules.dsl,
     * copy-*): the copies are row-major [M, K] for A (lda K), column-major [N, K] for B (ldb
     * K); o_a and o_sw (the Mul's operands the other way round) share the third call, o_b
     * and o_ab (both copied) the fourth; o4 (rank 4: B copied) and o5 (rank 5, A copied, the
     * copy's batch dims collapse into 4) */
    {"mm_copy_f32",
     6,
     4,
     {"(Blas (MNum 3) (MNum 2) (MNum 4) (MNum 4) (MNum 4) (MNum 2) (MNum 12) (MNum 8) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 3) (MNum 5) (MNum 4) (MNum 2) (MNum 4) (MNum 4) (MNum 12) (MNum 20) 0 1 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 3) (MNum 5) (MNum 8) (MNum 1) (MNum 8) (MNum 5) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 3) (MNum 5) (MNum 8) (MNum 1) (MNum 8) (MNum 8) (MNum 0) (MNum 0) 0 1 1.0 "
      "(F32) 0.0 0 " F32X5 ")"}},
    /* gelu_tanh(x w) with every product's and sum's operands the other way round from
     * hl_gelu_tanh's: the gelu epilogue (2) all the same; alpha 0.5 from (x w) * 0.5 written
     * 0.5 * (x w); beta from 0.044715 x^3 + x w */
    {"mm_gelu_swapped_f32",
     1,
     4,
     {"(Blas (MNum 5) (MNum 6) (MNum 8) (MNum 1) (MNum 8) (MNum 6) (MNum 0) (MNum 0) 0 0 0.5 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 5) (MNum 6) (MNum 8) (MNum 1) (MNum 8) (MNum 6) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 5) (MNum 6) (MNum 8) (MNum 1) (MNum 8) (MNum 6) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 2 " F32X5 ")",
      "(Blas (MNum 5) (MNum 6) (MNum 8) (MNum 1) (MNum 8) (MNum 6) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 1.0 0 " F32X5 ")"}},
    {"mm_heads_f32",
     2,
     2,
     {"(Blas (MNum 5) (MNum 4) (MNum 6) (MNum 2) (MNum 6) (MNum 8) (MNum 30) (MNum 4) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 6) (MNum 6) (MNum 4) (MNum 2) (MNum 8) (MNum 8) (MNum 4) (MNum 4) 0 1 1.0 "
      "(F32) 0.0 0 " F32X5 ")"}},
    /* 1-D operands: v w (A one row read with stride 0: lda 5, its length), m u (B one
     * column read with stride 0: column-major, ldb 4), s r (A one element read with
     * stride 0 both ways: lda 1; B one row: ldb 3) */
    {"mm_vector_f32",
     3,
     3,
     {"(Blas (MNum 1) (MNum 3) (MNum 1) (MNum 1) (MNum 1) (MNum 3) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 1) (MNum 3) (MNum 5) (MNum 1) (MNum 5) (MNum 3) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 3) (MNum 1) (MNum 4) (MNum 1) (MNum 4) (MNum 4) (MNum 0) (MNum 0) 0 1 1.0 "
      "(F32) 0.0 0 " F32X5 ")"}},
    /* row- and column-major A and B: lda is A's m coefficient (row-major) or its k
     * coefficient (column-major), ldb B's k or n coefficient */
    {"mm_layouts_f32",
     4,
     4,
     {"(Blas (MNum 5) (MNum 7) (MNum 11) (MNum 1) (MNum 11) (MNum 11) (MNum 0) (MNum 0) 0 1 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 5) (MNum 7) (MNum 11) (MNum 1) (MNum 11) (MNum 7) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 5) (MNum 7) (MNum 11) (MNum 1) (MNum 5) (MNum 11) (MNum 0) (MNum 0) 1 1 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 5) (MNum 7) (MNum 11) (MNum 1) (MNum 5) (MNum 7) (MNum 0) (MNum 0) 1 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")"}},
    /* gelu_tanh(x w + bias): bias (1) and bias+gelu (3); (x w2) * 0.5 + r: alpha, then beta;
     * the gelu's own x + 0.044715 x^3 is also a residual add of the bias call (1.0 1.0 1) */
    {"mm_epilogue_f32",
     2,
     6,
     {"(Blas (MVar \"T\") (MNum 64) (MNum 32) (MNum 1) (MNum 32) (MNum 64) (MNum 0) (MNum 0) 0 0 "
      "0.5 (F32) 0.0 0 " F32X5 ")",
      "(Blas (MVar \"T\") (MNum 64) (MNum 32) (MNum 1) (MNum 32) (MNum 64) (MNum 0) (MNum 0) 0 0 "
      "0.5 (F32) 1.0 0 " F32X5 ")",
      "(Blas (MVar \"T\") (MNum 64) (MNum 32) (MNum 1) (MNum 32) (MNum 64) (MNum 0) (MNum 0) 0 0 "
      "1.0 (F32) 0.0 0 " F32X5 ")",
      "(Blas (MVar \"T\") (MNum 64) (MNum 32) (MNum 1) (MNum 32) (MNum 64) (MNum 0) (MNum 0) 0 0 "
      "1.0 (F32) 0.0 1 " F32X5 ")",
      "(Blas (MVar \"T\") (MNum 64) (MNum 32) (MNum 1) (MNum 32) (MNum 64) (MNum 0) (MNum 0) 0 0 "
      "1.0 (F32) 0.0 3 " F32X5 ")",
      "(Blas (MVar \"T\") (MNum 64) (MNum 32) (MNum 1) (MNum 32) (MNum 64) (MNum 0) (MNum 0) 0 0 "
      "1.0 (F32) 1.0 1 " F32X5 ")"}},
    /* bf16 -> bf16; the f32 cast of it written by the call (D f32); the f32 matmul of the
     * f32 casts, and the same call reading the bf16 inputs */
    {"mm_casts_bf16",
     2,
     3,
     {"(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 24) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 (Bf16) (Bf16) (Bf16) (Bf16) (Bf16))",
      "(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 24) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 (Bf16) (Bf16) (F32) (F32) (F32))",
      "(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 24) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")"}},
    /* f16: alpha from a Cast of a Constant to f16 (alpha_dt F16: the graph rounded 0.1 to
     * f16), then D written in f32 */
    {"mm_f16_alpha",
     1,
     3,
     {"(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 24) (MNum 0) (MNum 0) 0 0 "
      "0.10000000149011612 (F16) 0.0 0 (F16) (F16) (F16) (F16) (F16))",
      "(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 24) (MNum 0) (MNum 0) 0 0 "
      "0.10000000149011612 (F16) 0.0 0 (F16) (F16) (F32) (F32) (F32))",
      "(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 24) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 (F16) (F16) (F16) (F16) (F16))"}},
    /* fp8 only in the TN form (A row-major, B column-major); e4m3 x e5m2 with B row-major
     * gets the f32 call on the casts only */
    {"mm_fp8",
     1,
     3,
     {"(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 16) (MNum 0) (MNum 0) 0 1 1.0 "
      "(F32) 0.0 0 " F32X5 ")",
      "(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 16) (MNum 0) (MNum 0) 0 1 1.0 "
      "(F32) 0.0 0 (F8E4M3) (F8E4M3) (F32) (F32) (F32))",
      "(Blas (MNum 8) (MNum 24) (MNum 16) (MNum 1) (MNum 16) (MNum 24) (MNum 0) (MNum 0) 0 0 1.0 "
      "(F32) 0.0 0 " F32X5 ")"}},
};

/* ---- the calls against the reference runtime ----
 * Every Blas whose operands are graph inputs and whose class is read by a graph output
 * is evaluated from its fields alone (sizes, leading dimensions, orders, batch strides,
 * alpha, beta, bias, gelu) on the reference run's inputs, in double, and compared with
 * the reference runtime's output: a wrong layout or batch stride gives errors of order 1. */

/* HLIR's floor division and modulo (b > 0 in every view the graphs here write). */
static int64_t tr_floor_div(int64_t a, int64_t b)
{
    ck_assert_int_gt(b, 0);
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* An Expression term's value with the dims at their profile values and MIter at z. */
static int64_t tr_eval_term(const char **p, const hl_graph *g, int64_t z)
{
    while (**p == ' ')
        (*p)++;
    ck_assert_int_eq(**p, '(');
    (*p)++;
    char head[16];
    int n = 0;
    while (**p != ' ' && **p != ')' && n < 15)
        head[n++] = *(*p)++;
    head[n] = 0;
    int64_t r = 0;
    if (strcmp(head, "MNum") == 0) {
        r = strtoll(*p, (char **)p, 10);
    } else if (strcmp(head, "MIter") == 0) {
        r = z;
    } else if (strcmp(head, "MVar") == 0) {
        while (**p != '"')
            (*p)++;
        (*p)++;
        char name[64];
        n = 0;
        while (**p != '"' && n < 63)
            name[n++] = *(*p)++;
        name[n] = 0;
        (*p)++;
        const hl_dim *d = hl_graph_dim_find(g, name);
        ck_assert_msg(d != NULL, "unknown dim %s", name);
        r = d->profile;
    } else {
        int64_t a = tr_eval_term(p, g, z), b = tr_eval_term(p, g, z);
        if (strcmp(head, "MMul") == 0) r = a * b;
        else if (strcmp(head, "MAdd") == 0) r = a + b;
        else if (strcmp(head, "MSub") == 0) r = a - b;
        else if (strcmp(head, "MDiv") == 0) r = tr_floor_div(a, b);
        else if (strcmp(head, "MMod") == 0) r = a - b * tr_floor_div(a, b);
        else ck_abort_msg("unexpected %s in an expression", head);
    }
    while (**p == ' ')
        (*p)++;
    ck_assert_int_eq(**p, ')');
    (*p)++;
    return r;
}

static void tr_skip_term(const char **p)
{
    while (**p == ' ')
        (*p)++;
    int depth = 0;
    do {
        if (**p == '(') depth++;
        if (**p == ')') depth--;
        (*p)++;
    } while (depth > 0);
}

typedef struct tr_blas {
    int64_t m, n, k, batch, lda, ldb, sa, sb, oa, ob, epi;
    double alpha, beta;
} tr_blas;

static void tr_blas_parse(const char *t, const hl_graph *g, tr_blas *b)
{
    ck_assert(strncmp(t, "(Blas ", 6) == 0);
    const char *p = t + 5;
    int64_t *e[8] = {&b->m, &b->n, &b->k, &b->batch, &b->lda, &b->ldb, &b->sa, &b->sb};
    for (int i = 0; i < 8; i++)
        *e[i] = tr_eval_term(&p, g, 0);
    b->oa = strtoll(p, (char **)&p, 10);
    b->ob = strtoll(p, (char **)&p, 10);
    b->alpha = strtod(p, (char **)&p);
    tr_skip_term(&p); /* alpha_dt: the graph rounded alpha to it; checked by tolerance */
    b->beta = strtod(p, (char **)&p);
    b->epi = strtoll(p, (char **)&p, 10);
}

static double tr_gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* The elements of an EList term (ECons e (ECons ... (ENil))): el[i] points at element i's
 * text; *p moves past the list. The count. */
static int tr_elist(const char **p, const char **el, int max)
{
    int n = 0;
    for (;;) {
        while (**p == ' ')
            (*p)++;
        if (strncmp(*p, "(ENil)", 6) == 0) {
            *p += 6;
            break;
        }
        ck_assert_msg(strncmp(*p, "(ECons ", 7) == 0, "not an EList: %.60s", *p);
        *p += 7;
        ck_assert_int_lt(n, max);
        while (**p == ' ')
            (*p)++;
        el[n++] = *p;
        tr_skip_term(p);
    }
    for (int i = 0; i < n; i++) {
        while (**p == ' ')
            (*p)++;
        ck_assert_int_eq(**p, ')');
        (*p)++;
    }
    return n;
}

/* The encoding's DType constructors, in hl_dtype order. */
static const char *const tr_dtype_terms[HL_DTYPE_COUNT] = {
    "(F32)", "(F16)", "(Bf16)", "(Int)", "(Int64)", "(Bool)", "(F8E4M3)", "(F8E5M2)"};

/* When class c holds an identity Cast (to its input's own dtype) of graph input x, as the
 * copy rules make (rules.dsl, copy-first and the rest): c's value computed from x through
 * the Cast's view, element f of the copy's row-major shape at the position the view's
 * strides give, into t (x's dtype). The Cast's out_strides must be the contiguous ones.
 * Returns false when c holds no such Cast. */
static bool tr_copy_of_input(tr_run *r, const tr_view *v, const hl_graph *g, uint32_t c,
                             const uint32_t *in_class, const hl_tensor *in, uint32_t nin,
                             hl_tensor *t)
{
    for (uint32_t j = 0; j < v->count[c]; j++) {
        uint32_t n = v->nodes[v->start[c] + j];
        const char *k = tr_kind(v, n);
        uint32_t x[2];
        if (!k || strcmp(k, "Cast") != 0 || tr_list(v, tr_child(v, n, 1), x, 2) != 1) continue;
        uint32_t xi = UINT32_MAX;
        for (uint32_t i = 0; i < nin; i++)
            if (in_class[i] == x[0]) xi = i;
        if (xi == UINT32_MAX) continue;
        char *term = NULL;
        lm_err ee = {0};
        ck_assert_msg(eg_extract(r->e, v->opkind_sort, v->s.class_value[tr_child(v, n, 0)],
                                 &term, NULL, &ee) == 0,
                      "%s", ee.msg);
        ck_assert(strncmp(term, "(Cast ", 6) == 0);
        const char *p = term + 5, *sh[HL_MAX_DIMS], *st[HL_MAX_DIMS], *os[HL_MAX_DIMS];
        int nd = tr_elist(&p, sh, HL_MAX_DIMS);
        ck_assert_int_eq(tr_elist(&p, st, HL_MAX_DIMS), nd);
        ck_assert_int_eq(tr_elist(&p, os, HL_MAX_DIMS), nd);
        while (*p == ' ')
            p++;
        bool identity = strncmp(p, tr_dtype_terms[in[xi].dtype],
                                strlen(tr_dtype_terms[in[xi].dtype])) == 0;
        if (!identity) {
            eg_string_free(term);
            continue;
        }
        int64_t dims[HL_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            const char *q = sh[d];
            dims[d] = tr_eval_term(&q, g, 0);
        }
        lm_err err = {0};
        ck_assert_msg(hl_tensor_init(t, in[xi].dtype, (uint32_t)nd, dims, &err) == HL_OK, "%s",
                      err.msg);
        for (size_t f = 0; f < t->numel; f++) {
            size_t rest = f;
            int64_t pos = 0, out = 0;
            for (int d = nd - 1; d >= 0; d--) {
                int64_t i = (int64_t)(rest % (size_t)dims[d]);
                rest /= (size_t)dims[d];
                const char *q = st[d];
                pos += tr_eval_term(&q, g, i);
                q = os[d];
                out += tr_eval_term(&q, g, i);
            }
            ck_assert_msg(out == (int64_t)f, "%s: out_strides not contiguous", term);
            ck_assert(pos >= 0 && (size_t)pos < in[xi].numel);
            hl_tensor_set(t, f, hl_tensor_get(&in[xi], (size_t)pos));
        }
        eg_string_free(term);
        return true;
    }
    return false;
}

/* The number of calls checked. */
static int tr_check_blas_numerically(const hl_graph *g, tr_run *r, const tr_view *v,
                                     const char *what)
{
    uint32_t nin = hl_graph_input_count(g), nout = hl_graph_output_count(g);
    hl_tensor in[16], out[16];
    ck_assert_uint_le(nin, 16);
    ck_assert_uint_le(nout, 16);
    const hl_expr_pool *pool = hl_graph_exprs_c(g);
    uint32_t nv = hl_var_count(pool);
    int64_t vals[64] = {0};
    bool bound[64] = {0};
    ck_assert_uint_le(nv, 64);
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        vals[d->var] = d->profile;
        bound[d->var] = true;
    }
    hl_env env = {vals, bound, nv};
    uint32_t in_class[16];
    lm_err err = {0};
    for (uint32_t i = 0; i < nin; i++) {
        const hl_node *x = hl_graph_node(g, hl_graph_input(g, i));
        int64_t sh[HL_MAX_DIMS];
        for (uint32_t k = 0; k < x->ndim; k++)
            ck_assert_msg(hl_e_eval(pool, x->shape[k], &env, 0, &sh[k], &err) == HL_OK, "%s",
                          err.msg);
        ck_assert_msg(hl_tensor_init(&in[i], x->dtype, x->ndim, sh, &err) == HL_OK, "%s", err.msg);
        ck_assert_msg(hl_graph_fill_input(g, i, &in[i], 7, &err) == HL_OK, "%s", err.msg);
        in_class[i] = tr_class_of(v, eg_find(r->e, r->enc.node_class[hl_graph_input(g, i)]));
    }
    ck_assert_msg(hl_run(g, NULL, in, out, NULL, &err) == HL_OK, "%s: reference: %s", what, err.msg);
    int checked = 0;
    for (uint32_t o = 0; o < nout; o++) {
        const hl_node *on = hl_graph_node(g, hl_graph_output(g, o));
        uint32_t pc = tr_class_of(v, eg_find(r->e, r->enc.node_class[on->in[0].node]));
        for (uint32_t j = 0; j < v->count[pc]; j++) {
            uint32_t node = v->nodes[v->start[pc] + j];
            const char *kind = tr_kind(v, node);
            if (!kind || strcmp(kind, "Blas") != 0) continue;
            /* every operand a graph input, or a copy of one (an identity Cast) */
            uint32_t ops[4];
            const hl_tensor *opt[4];
            hl_tensor copies[4];
            bool copied[4] = {false, false, false, false};
            uint32_t nops = tr_list(v, tr_child(v, node, 1), ops, 4);
            bool all_inputs = true;
            for (uint32_t q = 0; q < nops; q++) {
                opt[q] = NULL;
                for (uint32_t i = 0; i < nin; i++)
                    if (in_class[i] == ops[q]) opt[q] = &in[i];
                if (!opt[q] && tr_copy_of_input(r, v, g, ops[q], in_class, in, nin, &copies[q])) {
                    copied[q] = true;
                    opt[q] = &copies[q];
                }
                if (!opt[q]) all_inputs = false;
            }
            if (!all_inputs) {
                for (uint32_t q = 0; q < nops; q++)
                    if (copied[q]) hl_tensor_fini(&copies[q]);
                continue;
            }
            char *term = NULL;
            lm_err ee = {0};
            ck_assert_msg(eg_extract(r->e, v->opkind_sort,
                                     v->s.class_value[tr_child(v, node, 0)], &term, NULL, &ee) == 0,
                          "%s", ee.msg);
            tr_blas b;
            tr_blas_parse(term, g, &b);
            /* f32 all through: summation order only; a narrow type anywhere: the graph
             * rounds where the call does not (docs/rules.md, "Soundness") */
            bool narrow = strstr(term, "Bf16") || strstr(term, "F16") || strstr(term, "F8");
            double tol = out[o].dtype == HL_F32 && !narrow ? 1e-4 : 2e-2;
            const hl_tensor *A = opt[0], *B = opt[1];
            const hl_tensor *C = b.beta != 0 ? opt[2] : NULL;
            const hl_tensor *bias = (b.epi == 1 || b.epi == 3) ? opt[nops - 1] : NULL;
            ck_assert_uint_eq(out[o].numel, (size_t)(b.batch * b.m * b.n));
            for (int64_t t = 0; t < b.batch; t++)
                for (int64_t i = 0; i < b.m; i++)
                    for (int64_t jn = 0; jn < b.n; jn++) {
                        double acc = 0;
                        for (int64_t kk = 0; kk < b.k; kk++) {
                            int64_t pa = t * b.sa + (b.oa == 0 ? i * b.lda + kk : i + kk * b.lda);
                            int64_t pb = t * b.sb + (b.ob == 0 ? kk * b.ldb + jn : kk + jn * b.ldb);
                            ck_assert(pa >= 0 && (size_t)pa < A->numel);
                            ck_assert(pb >= 0 && (size_t)pb < B->numel);
                            acc += hl_tensor_get(A, (size_t)pa) * hl_tensor_get(B, (size_t)pb);
                        }
                        size_t pd = (size_t)((t * b.m + i) * b.n + jn);
                        double d = b.alpha * acc;
                        if (C) d += b.beta * hl_tensor_get(C, pd);
                        if (bias) d += hl_tensor_get(bias, (size_t)jn);
                        if (b.epi >= 2) d = tr_gelu_tanh(d);
                        double ref = hl_tensor_get(&out[o], pd);
                        ck_assert_msg(fabs(d - ref) <= tol * (1 + fabs(ref)),
                                      "%s: output %u, %s: element %zu is %g, the reference %g",
                                      what, o, term, pd, d, ref);
                    }
            eg_string_free(term);
            for (uint32_t q = 0; q < nops; q++)
                if (copied[q]) hl_tensor_fini(&copies[q]);
            checked++;
        }
    }
    for (uint32_t i = 0; i < nin; i++)
        hl_tensor_fini(&in[i]);
    for (uint32_t o = 0; o < nout; o++)
        hl_tensor_fini(&out[o]);
    return checked;
}

START_TEST(handmade_matmuls_become_the_expected_calls)
{
    char *paths[TR_MAX_FILES];
    int n = tr_json_files("tests/rules/graphs", paths);
    int ncases = (int)(sizeof tr_blas_cases / sizeof tr_blas_cases[0]);
    ck_assert_int_eq(n, ncases);
    for (int i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s", tr_stem(paths[i]));
        const tr_blas_case *bc = NULL;
        for (int j = 0; j < ncases; j++)
            if (strcmp(tr_blas_cases[j].file, name) == 0) bc = &tr_blas_cases[j];
        ck_assert_msg(bc != NULL, "%s: no expectations", name);
        hl_graph *g = tr_load(paths[i]);
        tr_run r;
        tr_saturate(g, &r, name);
        tr_view v;
        tr_view_init(&v, &r);
        const char *m = tr_check_general(&v);
        ck_assert_msg(m == NULL, "%s: %s", name, m);
        char *terms[64];
        int nt = tr_blas_terms(&r, &v, terms, 64);
        for (int k = 0; k < nt; k++)
            if (k >= bc->n || strcmp(terms[k], bc->terms[k]) != 0) {
                for (int q = 0; q < nt; q++)
                    fprintf(stderr, "%s: %s\n", name, terms[q]);
                ck_abort_msg("%s: Blas call %d is %s; expected %s", name, k, terms[k],
                             k < bc->n ? bc->terms[k] : "none");
            }
        ck_assert_msg(nt == bc->n, "%s: %d Blas calls, expected %d", name, nt, bc->n);
        int nnum = tr_check_blas_numerically(g, &r, &v, name);
        fprintf(stderr, "rules: %s: %d calls checked against the reference\n", name, nnum);
        ck_assert_msg(nnum == bc->numeric, "%s: %d calls checked against the reference, expected %d",
                      name, nnum, bc->numeric);
        for (int k = 0; k < nt; k++)
            free(terms[k]);
        tr_view_fini(&v);
        tr_run_free(&r);
        hl_graph_free(g);
        free(paths[i]);
    }
}
END_TEST

/* ------------------------------------------------------------------------------------ */
/* attention (rules.dsl, family 8): the fused nodes each form gets, and none for near misses */

static size_t tr_table_rows(const tr_run *r, const char *name);

typedef struct tr_attn_case {
    const char *file;
    size_t kattn, kattn_mask; /* distinct KAttn and KAttnMask terms */
} tr_attn_case;

/* 4 tiles (attn-tile); decode shapes (upper(Sq) <= 16) 3 KV splits more. A causal mask
 * gives the causal KAttn and the mask-tensor KAttnMask; one the rules cannot prove causal
 * (a row may be fully masked, or the mask is over the wrong dims) only the latter. */
static const tr_attn_case tr_attn_cases[] = {
    {"decode", 7, 7},
    {"exp2_softmax", 4, 0},
    {"gqa", 4, 4},
    {"handwritten_softmax", 4, 0},
    {"kv_cache_causal", 7, 7},
    {"mask_input", 0, 4},
    {"miss_causal_short_kv", 0, 4},
    {"miss_exp2_mask", 0, 0},
    {"miss_head_dim_strided", 0, 0},
    {"miss_mask_transposed", 0, 4},
    {"miss_softmax_axis", 0, 0},
    {"op_causal", 4, 4},
    {"op_plain_f32", 4, 0},
};

START_TEST(attention_is_fused_in_every_form_and_not_for_near_misses)
{
    char *paths[TR_MAX_FILES];
    int n = tr_json_files("tests/rules/attn", paths);
    int ncases = (int)(sizeof tr_attn_cases / sizeof tr_attn_cases[0]);
    ck_assert_int_eq(n, ncases);
    for (int i = 0; i < n; i++) {
        const char *name = tr_stem(paths[i]);
        const tr_attn_case *ac = NULL;
        for (int j = 0; j < ncases; j++)
            if (strcmp(tr_attn_cases[j].file, name) == 0) ac = &tr_attn_cases[j];
        ck_assert_msg(ac != NULL, "%s: no expectations", name);
        hl_graph *g = tr_load(paths[i]);
        tr_run r;
        tr_saturate(g, &r, name);
        tr_view v;
        tr_view_init(&v, &r);
        const char *m = tr_check_general(&v);
        ck_assert_msg(m == NULL, "%s: %s", name, m);
        size_t ka = tr_table_rows(&r, "KAttn"), km = tr_table_rows(&r, "KAttnMask");
        ck_assert_msg(ka == ac->kattn && km == ac->kattn_mask,
                      "%s: %zu KAttn and %zu KAttnMask, expected %zu and %zu", name, ka, km,
                      ac->kattn, ac->kattn_mask);
        tr_view_fini(&v);
        tr_run_free(&r);
        hl_graph_free(g);
        free(paths[i]);
    }
}
END_TEST

/* ------------------------------------------------------------------------------------ */
/* copies of operands read through non-linear strides (rules.dsl, copy-*) */

static size_t tr_table_rows(const tr_run *r, const char *name)
{
    int t = eg_table_lookup(r->e, name);
    ck_assert_msg(t >= 0, "no table %s", name);
    return eg_table_size(r->e, t);
}

/* Cast nodes (the copies), Mul nodes, and Casts that read a class holding a Cast. */
static void tr_copy_counts(const tr_view *v, int *casts, int *muls, int *cast_of_cast)
{
    *casts = *muls = *cast_of_cast = 0;
    for (uint32_t n = 0; n < v->s.n_nodes; n++) {
        const char *k = tr_kind(v, n);
        if (!k) continue;
        if (strcmp(k, "Mul") == 0) (*muls)++;
        if (strcmp(k, "Cast") != 0) continue;
        (*casts)++;
        uint32_t x[2];
        ck_assert_uint_eq(tr_list(v, tr_child(v, n, 1), x, 2), 1);
        if (tr_find_kind(v, x[0], "Cast") != UINT32_MAX) (*cast_of_cast)++;
    }
}

/* The copies are offered exactly for the operands that need them and are never copied
 * again: in mm_copy_f32, 3 first and 4 second operands of the 6 matmuls (the rest are
 * linear and pruned); 4 distinct copies (o_a, o_ab and o_sw read one view of att, o_b and
 * o_ab one of wt); one new Mul per copied operand and one more where both are copied (o_ab):
 * 6 + 8 Muls; every matmul Sum has KMatmul and Blas (5 Sum classes: o_sw is o_a with the
 * Mul's operands swapped, and the two get the same KMatmul). Without the prune phase every operand
 * is copied; without the copies no Sum has either. A stride written with div and mod that the
 * expression algebra folds to a linear one (added to the graph below) gets no copy. In
 * llama_block only the o projection's A is copied. */
START_TEST(non_linear_operands_get_one_copy_each)
{
    hl_graph *g = tr_load(LUMINAL_SOURCE_DIR "/tests/rules/graphs/mm_copy_f32.json");
    tr_run r;
    tr_view v;
    int kmm, blas, casts, muls, cc;
    tr_saturate(g, &r, "mm_copy_f32");
    ck_assert_uint_eq(tr_table_rows(&r, "cpy1"), 3);
    ck_assert_uint_eq(tr_table_rows(&r, "cpy2"), 4);
    tr_view_init(&v, &r);
    ck_assert_ptr_null(tr_check_general(&v));
    tr_matmul_counts(&v, &kmm, &blas);
    ck_assert_int_eq(kmm, 5);
    ck_assert_int_eq(blas, 5);
    tr_copy_counts(&v, &casts, &muls, &cc);
    ck_assert_int_eq(casts, 4);
    ck_assert_int_eq(muls, 6 + 8);
    ck_assert_int_eq(cc, 0);
    tr_view_fini(&v);
    tr_run_free(&r);
    /* without the prune: all 12 operands copied (the linear ones too) */
    tr_saturate_with(g, NULL, "mm-copy-prune", &r);
    ck_assert_str_eq(r.err, "");
    ck_assert_uint_eq(tr_table_rows(&r, "cpy1") + tr_table_rows(&r, "cpy2"), 12);
    tr_run_free(&r);
    /* without the copies: no KMatmul, no Blas */
    tr_saturate_with(g, NULL, "mm-copy", &r);
    ck_assert_str_eq(r.err, "");
    tr_view_init(&v, &r);
    tr_matmul_counts(&v, &kmm, &blas);
    ck_assert_int_eq(kmm, 0);
    ck_assert_int_eq(blas, 0);
    tr_view_fini(&v);
    tr_run_free(&r);
    /* x @ w with w's k stride written (z/2)*10 + (z%2)*5, which divmod-scaled folds to
     * z*5: one more matmul, linear in the e-graph, so no copy */
    char *rules = tr_rules_text();
    const char *extra =
        "\n(let extra_mul (Op (Mul (ECons (MNum 3) (ECons (MNum 5) (ECons (MNum 8) (ENil))))"
        " (ECons (MMul (MIter) (MNum 8)) (ECons (MNum 0) (ECons (MIter) (ENil))))"
        " (ECons (MNum 0) (ECons (MIter) (ECons (MAdd (MMul (MDiv (MIter) (MNum 2)) (MNum 10))"
        " (MMul (MMod (MIter) (MNum 2)) (MNum 5))) (ENil))))"
        " (ECons (MMul (MIter) (MNum 40)) (ECons (MMul (MIter) (MNum 8)) (ECons (MIter) (ENil)))))"
        " (ICons (Input 2 \"x\" (F32) (ECons (MNum 3) (ECons (MNum 8) (ENil))))"
        " (ICons (Input 1 \"w\" (F32) (ECons (MNum 8) (ECons (MNum 5) (ENil)))) (INil)))))\n"
        "(let extra_sum (Op (Sum (ECons (MNum 3) (ECons (MNum 5) (ENil))) (MNum 8)"
        " (ECons (MMul (MIter) (MNum 40)) (ECons (MMul (MIter) (MNum 8)) (ENil))) (MIter)"
        " (ECons (MMul (MIter) (MNum 5)) (ECons (MIter) (ENil)))) (ICons extra_mul (INil))))\n";
    char *text = malloc(strlen(rules) + strlen(extra) + 1);
    sprintf(text, "%s%s", rules, extra);
    tr_saturate_with(g, text, NULL, &r);
    ck_assert_str_eq(r.err, "");
    ck_assert_uint_eq(tr_table_rows(&r, "cpy1"), 3);
    ck_assert_uint_eq(tr_table_rows(&r, "cpy2"), 4);
    tr_view_init(&v, &r);
    tr_matmul_counts(&v, &kmm, &blas);
    ck_assert_int_eq(kmm, 6);
    ck_assert_int_eq(blas, 6);
    tr_view_fini(&v);
    tr_run_free(&r);
    free(text);
    free(rules);
    hl_graph_free(g);
    /* llama: the o projection's A (the attention output permuted back and merged) only */
    g = tr_load(LUMINAL_SOURCE_DIR "/examples/graphs/llama_block_bf16.json");
    tr_saturate(g, &r, "llama_block_bf16");
    ck_assert_uint_eq(tr_table_rows(&r, "cpy1"), 1);
    ck_assert_uint_eq(tr_table_rows(&r, "cpy2"), 0);
    tr_run_free(&r);
    hl_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------------------------------ */
/* graphs nobody wrote by hand */

START_TEST(generated_graphs_saturate_and_every_class_has_a_dtype)
{
    int done = 0, total_kmm = 0, total_blas = 0;
    double worst = 0;
    /* 50 seeds without and with a dynamic dim at the generator's default size, then 20
     * larger graphs (48 high-level ops) of each kind */
    for (int variant = 0; variant < 4; variant++)
        for (uint64_t seed = 1; seed <= (variant < 2 ? 50u : 20u); seed++) {
            hl_gen_opts o = {0};
            int dyn = variant % 2;
            o.dynamic = dyn != 0;
            o.n_ops = variant < 2 ? 0 : 48;
            lm_err err = {0};
            hl_graph *g = hl_graph_generate(seed, &o, &err);
            ck_assert_msg(g != NULL, "seed %llu: %s", (unsigned long long)seed, err.msg);
            char what[64];
            snprintf(what, sizeof what, "generated seed %llu%s%s", (unsigned long long)seed,
                     dyn ? " dynamic" : "", variant < 2 ? "" : " 48 ops");
            tr_run r;
            tr_saturate(g, &r, what);
            tr_view v;
            tr_view_init(&v, &r);
            const char *m = tr_check_general(&v);
            ck_assert_msg(m == NULL, "%s: %s", what, m);
            int kmm, blas;
            tr_matmul_counts(&v, &kmm, &blas);
            total_kmm += kmm;
            total_blas += blas;
            if (r.wall_s > worst) worst = r.wall_s;
            tr_view_fini(&v);
            tr_run_free(&r);
            hl_graph_free(g);
            done++;
        }
    ck_assert_int_eq(done, 140);
    /* the generator makes matmuls: recovery must find some of them */
    ck_assert_int_gt(total_kmm, 0);
    ck_assert_int_gt(total_blas, 0);
    fprintf(stderr,
            "rules: 140 generated graphs, slowest %.3f s; %d matmul Sums with KMatmul, %d with "
            "Blas\n",
            worst, total_kmm, total_blas);
}
END_TEST

/* ------------------------------------------------------------------------------------ */
/* rules/run.egg, eqsat, determinism */

/* rules/run.egg is, line for line, the phase facts: (extract "phase N name") then
 * (run-schedule SCHEDULE), in order, and nothing else but comments. */
START_TEST(run_egg_holds_the_phases_in_order)
{
    hl_graph *g = tr_load(LUMINAL_SOURCE_DIR "/examples/graphs/matmul_f32_2048.json");
    tr_run r;
    tr_saturate(g, &r, "matmul_f32_2048");
    char *text = tr_read(LUMINAL_SOURCE_DIR "/rules/run.egg");
    char *save = NULL;
    int k = 0;
    bool want_extract = true;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == ';' || line[0] == 0) continue;
        char expect[512];
        ck_assert_int_lt(k, r.nphases);
        if (want_extract)
            snprintf(expect, sizeof expect, "(extract \"phase %lld %s\")",
                     (long long)r.ph[k].order, r.ph[k].name);
        else
            snprintf(expect, sizeof expect, "(run-schedule %s)", r.ph[k++].sched);
        ck_assert_str_eq(line, expect);
        want_extract = !want_extract;
    }
    ck_assert_int_eq(k, r.nphases);
    ck_assert(want_extract);
    free(text);
    tr_run_free(&r);
    hl_graph_free(g);
}
END_TEST

/* eqsat running the encoding's text, rules.dsl and rules/run.egg ends with the same
 * table sizes as the C path that runs the phase facts. */
static void tr_eqsat_agrees(const char *path)
{
    hl_graph *g = tr_load(path);
    tr_run r;
    tr_saturate(g, &r, path);
    lm_err err = {0};
    char *enc = hl_graph_encode_text(g, true, &err);
    ck_assert_msg(enc != NULL, "%s", err.msg);
    char *rules = tr_rules_text();
    char *run = tr_read(LUMINAL_SOURCE_DIR "/rules/run.egg");
    char tmp[] = "/tmp/test_rules_XXXXXX";
    int fd = mkstemp(tmp);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "%s\n%s\n%s\n(print-size)\n", enc, rules, run);
    fclose(f);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' --quiet '%s'", EQSAT_BIN, tmp);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char *out = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&out, &n);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, p)) > 0)
        fwrite(buf, 1, got, m);
    fclose(m);
    ck_assert_int_eq(pclose(p), 0);
    unlink(tmp);
    /* print-size ends the output: ((Table n)\n (Table n)\n ...) */
    char *last = NULL;
    for (char *q = strstr(out, "(("); q; q = strstr(q + 1, "(("))
        last = q;
    ck_assert_ptr_nonnull(last);
    int checked = 0;
    for (char *q = last + 1; (q = strchr(q, '(')) != NULL; q++) {
        char name[128];
        unsigned long long rows;
        if (sscanf(q + 1, "%127s %llu", name, &rows) != 2) continue;
        int t = eg_table_lookup(r.e, name);
        ck_assert_msg(t >= 0, "eqsat reports a table %s the C path does not have", name);
        ck_assert_msg(eg_table_size(r.e, t) == rows, "%s: table %s: eqsat %llu rows, C path %zu",
                      path, name, rows, eg_table_size(r.e, t));
        checked++;
    }
    ck_assert_int_gt(checked, 40);
    free(out);
    free(run);
    free(rules);
    free(enc);
    tr_run_free(&r);
    hl_graph_free(g);
}

START_TEST(eqsat_and_the_phase_facts_give_the_same_e_graph)
{
    tr_eqsat_agrees(LUMINAL_SOURCE_DIR "/examples/graphs/llama_block_bf16.json");
    tr_eqsat_agrees(LUMINAL_SOURCE_DIR "/tests/rules/graphs/mm_epilogue_f32.json");
}
END_TEST

static char *tr_serialized_json(tr_run *r)
{
    eg_serialized s;
    lm_err ee = {0};
    ck_assert_msg(eg_serialize(r->e, NULL, &s, &ee) == 0, "%s", ee.msg);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ck_assert_int_eq(eg_serialized_write_json(r->e, &s, f, &ee), 0);
    fclose(f);
    eg_serialized_free(&s);
    return buf;
}

START_TEST(saturation_is_deterministic)
{
    hl_graph *g = tr_load(LUMINAL_SOURCE_DIR "/examples/graphs/llama_block_bf16.json");
    tr_run a, b;
    tr_saturate(g, &a, "llama_block_bf16");
    tr_saturate(g, &b, "llama_block_bf16");
    char *ja = tr_serialized_json(&a), *jb = tr_serialized_json(&b);
    ck_assert(strcmp(ja, jb) == 0);
    free(ja);
    free(jb);
    tr_run_free(&a);
    tr_run_free(&b);
    hl_graph_free(g);
}
END_TEST

/* Every named rule of rules.dsl is described in docs/rules.md (as `name`), and every
 * rule has a name. */
START_TEST(every_rule_is_named_and_documented)
{
    char *rules = tr_rules_text();
    char *doc = tr_read(LUMINAL_SOURCE_DIR "/docs/rules.md");
    int named = 0, rules_n = 0;
    for (char *p = rules; (p = strstr(p, "\n(rule ")) != NULL; p++)
        rules_n++;
    for (char *p = rules; (p = strstr(p, ":name \"")) != NULL; p++) {
        char name[128], quoted[132];
        const char *q = p + 7;
        size_t n = strcspn(q, "\"");
        ck_assert_uint_lt(n, sizeof name);
        memcpy(name, q, n);
        name[n] = 0;
        snprintf(quoted, sizeof quoted, "`%s`", name);
        ck_assert_msg(strstr(doc, quoted) != NULL, "docs/rules.md does not describe %s", quoted);
        named++;
    }
    ck_assert_int_gt(named, 200);
    ck_assert_int_eq(named, rules_n);
    free(doc);
    free(rules);
}
END_TEST

static Suite *rules_suite(void)
{
    Suite *s = suite_create("rules");
    TCase *tc = tcase_create("rules");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, every_example_saturates_and_passes_the_checks);
    tcase_add_test(tc, the_checks_fail_without_the_families_they_check);
    tcase_add_test(tc, the_dtype_guard_catches_a_wrong_operand_dtype);
    tcase_add_test(tc, a_limit_names_the_phase_that_hit_it);
    tcase_add_test(tc, attention_is_fused_in_every_form_and_not_for_near_misses);
    tcase_add_test(tc, the_uses_phase_is_linear_in_a_long_chain);
    tcase_add_test(tc, the_expression_algebra_folds_to_canonical_forms);
    tcase_add_test(tc, handmade_matmuls_become_the_expected_calls);
    tcase_add_test(tc, non_linear_operands_get_one_copy_each);
    tcase_add_test(tc, generated_graphs_saturate_and_every_class_has_a_dtype);
    tcase_add_test(tc, run_egg_holds_the_phases_in_order);
    tcase_add_test(tc, eqsat_and_the_phase_facts_give_the_same_e_graph);
    tcase_add_test(tc, saturation_is_deterministic);
    tcase_add_test(tc, every_rule_is_named_and_documented);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {rules_suite, NULL};
