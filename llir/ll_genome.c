/* ll_genome.c - genomes: one choice per searchable class of a space.
 *
 * Hash. The genome's hash is the XOR over classes of mix(class, choice), a bijective
 * 64-bit mix (splitmix64's finaliser) of the pair, so setting one choice updates it in
 * O(1) (XOR the old entry out and the new one in) and ll_genome_rehash recomputes it
 * from scratch; the tests compare the two over thousands of random mutations.
 *
 * Validity is a property of the walk from the root over the chosen nodes: no class is
 * met again while it is on the walk's stack (no cycle), every Op's IList is as long as
 * its kind takes, every kind is a backend op, and region ops are met only inside
 * regions. The space guarantees the last three for every one of its choices (it refuses
 * rules that break them), so validation re-checks them and repair only has cycles to
 * undo.
 *
 * Repair walks from the root depth-first. A class whose chosen node reaches a class on
 * the stack tries its alternatives in a rotation that starts at a drawn index; a class
 * none of whose alternatives completes is given back to its parent, which tries its
 * own. A completed class (DONE) reaches only completed classes, so any later walk may
 * use it without closing a cycle; a class given back is reset, because another stack
 * may let it complete. This search is complete but could take exponential time on
 * adversarial spaces, so after 16 steps per choice it stops backtracking and gives
 * every class not completed its `safe` choice (the space's acyclic choice of least
 * height), which completes without backtracking: a completed class never reaches an
 * incomplete one, and safe choices strictly descend in height.
 */
#include "ll_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>

static uint64_t entry_hash(uint32_t cls, uint32_t choice)
{
    uint64_t x = ((uint64_t)cls << 32 | choice) + 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int ll_genome_init(ll_genome *g, const ll_space *s, lm_err *err)
{
    g->n = s->ns;
    g->choice = ll__zalloc(s->ns, sizeof(uint32_t));
    g->hash = 0;
    if (!g->choice) {
        g->n = 0;
        return ll__oom(err, "genome");
    }
    g->hash = ll_genome_rehash(g, s);
    return LM_OK;
}

void ll_genome_fini(ll_genome *g)
{
    if (!g) return;
    ll__free(g->choice);
    memset(g, 0, sizeof *g);
}

int ll_genome_copy(ll_genome *dst, const ll_genome *src, lm_err *err)
{
    uint32_t *c = ll__alloc(src->n, sizeof(uint32_t));
    if (!c) return ll__oom(err, "genome copy");
    memcpy(c, src->choice, (size_t)src->n * sizeof(uint32_t));
    ll__free(dst->choice);
    dst->choice = c;
    dst->n = src->n;
    dst->hash = src->hash;
    return LM_OK;
}

void ll_genome_set(ll_genome *g, const ll_space *s, uint32_t cls, uint32_t choice)
{
    assert(cls < g->n && g->n == s->ns);
    (void)s;
    g->hash ^= entry_hash(cls, g->choice[cls]) ^ entry_hash(cls, choice);
    g->choice[cls] = choice;
}

uint64_t ll_genome_rehash(const ll_genome *g, const ll_space *s)
{
    (void)s;
    uint64_t h = 0;
    for (uint32_t c = 0; c < g->n; c++)
        h ^= entry_hash(c, g->choice[c]);
    return h;
}

static int check_shape(const ll_genome *g, const ll_space *s, lm_err *err)
{
    if (g->n != s->ns || (s->ns && !g->choice))
        return ll__fail(err, LM_EARG, NULL,
                        "genome: it has %u choices, the space %u searchable classes", g->n, s->ns);
    return LM_OK;
}

/* ==================================================================================
 * The walk shared by validation and repair
 * ================================================================================== */

enum { NEW = 0, ACTIVE = 1, DONE = 2 };

typedef struct frame {
    uint32_t c;     /* searchable class */
    uint32_t orig;  /* its choice when the walk arrived */
    uint32_t cur;   /* the choice being tried (index within the class) */
    uint32_t start; /* rotation start, drawn when the first alternative is needed */
    uint32_t rot;   /* alternatives of the rotation taken so far; LM_NONE: not drawn */
    uint32_t ki;    /* next child of cur */
} frame;

typedef struct walk {
    const ll_space *s;
    uint8_t *state;
    frame *stack;
    uint32_t top;
} walk;

static int walk_init(walk *w, const ll_space *s, lm_err *err)
{
    w->s = s;
    w->top = 0;
    w->state = ll__zalloc(s->ns, 1);
    w->stack = ll__alloc((size_t)s->ns + 1, sizeof(frame));
    if (!w->state || !w->stack) {
        ll__free(w->state);
        ll__free(w->stack);
        return ll__oom(err, "genome walk");
    }
    return LM_OK;
}

static void walk_fini(walk *w)
{
    ll__free(w->state);
    ll__free(w->stack);
}

/* The next alternative of frame f (LM_NONE when none is left). */
static uint32_t next_alternative(frame *f, uint32_t n, lm_pcg32 *rng)
{
    if (f->rot == LM_NONE) {
        f->start = rng ? lm_pcg_below(rng, n) : (f->orig < n ? (f->orig + 1) % n : 0);
        f->rot = 0;
    }
    while (f->rot < n) {
        uint32_t cand = (f->start + f->rot++) % n;
        if (cand != f->orig) return cand;
    }
    return LM_NONE;
}

static void push(walk *w, const ll_genome *g, uint32_t c)
{
    frame *f = &w->stack[w->top++];
    f->c = c;
    f->orig = g->choice[c];
    f->cur = f->orig;
    f->rot = LM_NONE;
    f->ki = 0;
    w->state[c] = ACTIVE;
}

/* The repairing walk from the root; budget counts steps, 0 = unlimited. Returns 1 when
 * the root completed, 0 when it did not (no valid program), -1 when the budget ran
 * out. */
static int repair_walk(walk *w, ll_genome *g, lm_pcg32 *rng, uint64_t budget)
{
    const ll_space *s = w->s;
    push(w, g, s->root_s);
    uint64_t steps = 0;
    while (w->top) {
        if (budget && ++steps > budget) return -1;
        frame *f = &w->stack[w->top - 1];
        uint32_t n = s->cstart[f->c + 1] - s->cstart[f->c];
        bool failed = f->cur >= n;
        if (!failed) {
            uint32_t j = s->cstart[f->c] + f->cur;
            uint32_t nk = s->kstart[j + 1] - s->kstart[j];
            if (f->ki == nk) { /* every child completed: so does this class */
                w->state[f->c] = DONE;
                ll_genome_set(g, s, f->c, f->cur);
                w->top--;
                if (w->top) w->stack[w->top - 1].ki++;
                continue;
            }
            uint32_t d = s->kids[s->kstart[j] + f->ki];
            if (w->state[d] == DONE) {
                f->ki++;
                continue;
            }
            if (w->state[d] == NEW) {
                push(w, g, d);
                continue;
            }
            failed = true; /* d is on the stack: this choice closes a cycle */
        }
        uint32_t alt = next_alternative(f, n, rng);
        if (alt != LM_NONE) {
            f->cur = alt;
            f->ki = 0;
            continue;
        }
        /* no alternative completes: give the class back to its parent */
        w->state[f->c] = NEW;
        w->top--;
        if (!w->top) return 0;
        frame *p = &w->stack[w->top - 1];
        uint32_t pn = s->cstart[p->c + 1] - s->cstart[p->c];
        uint32_t palt = next_alternative(p, pn, rng);
        if (palt == LM_NONE)
            p->cur = pn; /* failed: handled when the loop comes back to it */
        else {
            p->cur = palt;
            p->ki = 0;
        }
    }
    return 1;
}

/* Test hook: the repair walk's budget in steps (0: the default). */
static _Thread_local uint64_t test_budget = 0;

void ll__genome_repair_budget(uint64_t steps)
{
    test_budget = steps;
}

int ll_genome_repair(ll_genome *g, const ll_space *s, lm_pcg32 *rng, lm_err *err)
{
    int rc = check_shape(g, s, err);
    if (rc) return rc;
    walk w;
    if ((rc = walk_init(&w, s, err))) return rc;
    uint64_t budget = test_budget ? test_budget : 16 * ((uint64_t)s->nch + s->ns) + 1024;
    int r = repair_walk(&w, g, rng, budget);
    if (r < 0) {
        /* too long: every class not completed takes its safe choice, which completes */
        for (uint32_t c = 0; c < s->ns; c++) {
            if (w.state[c] == DONE) continue;
            w.state[c] = NEW;
            ll_genome_set(g, s, c, s->safe[c]);
        }
        w.top = 0;
        r = repair_walk(&w, g, NULL, 0);
    }
    walk_fini(&w);
    /* the hash updated in O(1) per choice is the hash of the choices (llir.h) */
    assert(g->hash == ll_genome_rehash(g, s));
    if (r != 1)
        return ll__fail(err, LM_EVERIFY, NULL,
                        "genome repair: the root class c%u has no program without a cycle",
                        s->scls[s->root_s]);
    return LM_OK;
}

int ll_genome_random(ll_genome *g, const ll_space *s, lm_pcg32 *rng, lm_err *err)
{
    int rc = check_shape(g, s, err);
    if (rc) return rc;
    for (uint32_t c = 0; c < s->ns; c++) {
        uint32_t n = s->cstart[c + 1] - s->cstart[c];
        ll_genome_set(g, s, c, n > 1 ? lm_pcg_below(rng, n) : 0);
    }
    return ll_genome_repair(g, s, rng, err);
}

/* ==================================================================================
 * The most and the least fused genomes
 * ================================================================================== */

typedef enum prefer { MOST_FUSED, LEAST_FUSED, LIBRARY } prefer;

static int score(const ll_space *s, uint32_t j, prefer pref)
{
    ll_op op = s->cop[j];
    if (op == LL_OP_NONE) return 2;
    const ll_op_info *o = ll_op_get(op);
    bool most = pref == MOST_FUSED;
    if (pref == LIBRARY && o->dialect == LL_D_LIBRARY) return 7;
    if (ll_op_is_attn(op)) return most ? 8 : 0; /* the fused attention: the most fused */
    switch (o->dialect) {
    case LL_D_LIBRARY:
        return most ? 6 : 2;
    case LL_D_INLINE:
        return most ? 5 : 0;
    case LL_D_REGION:
        return most ? 4 : 1;
    case LL_D_KERNEL:
        if (o->prim == HL_OP_COUNT) return 3; /* KMatmul */
        return most ? 1 : 6;
    case LL_D_LOAD:
        return most ? 0 : 5;
    default:
        return 2;
    }
}

static int preferred(ll_genome *g, const ll_space *s, prefer most, lm_err *err)
{
    int rc = check_shape(g, s, err);
    if (rc) return rc;
    for (uint32_t c = 0; c < s->ns; c++) {
        uint32_t best = 0;
        int bs = -1;
        for (uint32_t j = s->cstart[c]; j < s->cstart[c + 1]; j++) {
            int sc = score(s, j, most);
            if (sc > bs) {
                bs = sc;
                best = j - s->cstart[c];
            }
        }
        ll_genome_set(g, s, c, best);
    }
    return ll_genome_repair(g, s, NULL, err);
}

int ll_genome_most_fused(ll_genome *g, const ll_space *s, lm_err *err)
{
    return preferred(g, s, MOST_FUSED, err);
}

int ll_genome_least_fused(ll_genome *g, const ll_space *s, lm_err *err)
{
    return preferred(g, s, LEAST_FUSED, err);
}

int ll_genome_library(ll_genome *g, const ll_space *s, lm_err *err)
{
    return preferred(g, s, LIBRARY, err);
}

/* Does the program that g chooses for class c reduce, short of what it loads? memo per
 * class: 0 unknown, 1 on the walk's stack (a cycle: taken as no), 2 no, 3 yes. */
static bool reduces(const ll_genome *g, const ll_space *s, uint32_t c, uint8_t *memo)
{
    if (memo[c]) return memo[c] == 3;
    memo[c] = 1;
    uint32_t j = s->cstart[c] + g->choice[c];
    bool yes = false;
    if (j < s->cstart[c + 1] && ll__choice_dialect(s, j) != LL_D_LOAD) {
        ll_op op = s->cop[j];
        if (op != LL_OP_NONE) {
            hl_op p = ll_op_get(op)->prim;
            yes = p == HL_OP_SUM_REDUCE || p == HL_OP_MAX_REDUCE;
        }
        for (uint32_t k = s->kstart[j]; k < s->kstart[j + 1] && !yes; k++)
            yes = reduces(g, s, s->kids[k], memo);
    }
    memo[c] = yes ? 3 : 2;
    return yes;
}

int ll_genome_fused_stored(ll_genome *g, const ll_space *s, lm_err *err)
{
    int rc = preferred(g, s, MOST_FUSED, err);
    if (rc) return rc;
    uint8_t *memo = calloc(s->ns ? s->ns : 1, 1);
    uint32_t *load = malloc((s->ns ? s->ns : 1) * sizeof *load);
    if (!memo || !load) {
        free(memo);
        free(load);
        return ll__fail(err, LM_ENOMEM, NULL, "out of memory");
    }
    /* decided on the most fused genome as it is, then applied */
    for (uint32_t c = 0; c < s->ns; c++) {
        load[c] = LM_NONE;
        uint32_t j = s->cstart[c] + g->choice[c];
        if (j >= s->cstart[c + 1] || ll__choice_dialect(s, j) != LL_D_INLINE) continue;
        bool red = false;
        for (uint32_t k = s->kstart[j]; k < s->kstart[j + 1] && !red; k++)
            red = reduces(g, s, s->kids[k], memo);
        for (uint32_t a = s->cstart[c]; red && a < s->cstart[c + 1]; a++)
            if (ll__choice_dialect(s, a) == LL_D_LOAD) {
                load[c] = a - s->cstart[c];
                break;
            }
    }
    for (uint32_t c = 0; c < s->ns; c++)
        if (load[c] != LM_NONE) ll_genome_set(g, s, c, load[c]);
    free(memo);
    free(load);
    return ll_genome_repair(g, s, NULL, err);
}

/* ==================================================================================
 * Validation
 * ================================================================================== */

static int gfail(const ll_space *s, lm_err *err, uint32_t c, uint32_t j, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static int gfail(const ll_space *s, lm_err *err, uint32_t c, uint32_t j, const char *fmt, ...)
{
    char msg[LM_ERR_MSG / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    uint32_t node = j < ll_space_choice_count(s, c) ? s->cnode[s->cstart[c] + j] : LM_NONE;
    lm_loc loc = {.node_id = s->scls[c]};
    if (node != LM_NONE) {
        loc.node = s->ser.nodes[node].op;
        return ll__fail(err, LM_EVERIFY, &loc, "genome: class %u (c%u), choice %u (n%u): %s", c,
                        s->scls[c], j, node, msg);
    }
    return ll__fail(err, LM_EVERIFY, &loc, "genome: class %u (c%u), choice %u: %s", c, s->scls[c],
                    j, msg);
}

static uint8_t dialect_ctx(ll_dialect d)
{
    if (d == LL_D_KERNEL || d == LL_D_REGION || d == LL_D_LIBRARY) return LL__X_TOP;
    return ll__interior(d) ? LL__X_REGION : LL__X_NONE;
}

/* The checks of one reached choice beyond cycles (ll_space guarantees them). */
static int check_choice(const ll_genome *g, const ll_space *s, uint32_t c, lm_err *err)
{
    uint32_t jj = g->choice[c], j = s->cstart[c] + jj;
    uint32_t node = s->cnode[j];
    uint32_t cls = s->scls[c];
    uint16_t code = s->code[node];
    if (code == LL__C_OP) {
        uint32_t kc = s->kids[s->kstart[j]], lc = s->kids[s->kstart[j] + 1];
        uint32_t kj = s->cstart[kc] + g->choice[kc];
        ll_op op = s->cop[kj];
        if (op == LL_OP_NONE || ll_op_get(op)->dialect == LL_D_HLIR ||
            ll_op_get(op)->dialect == LL_D_IO)
            return gfail(s, err, c, jj, "its kind is not a backend op");
        ll_dialect d = ll_op_get(op)->dialect;
        if (dialect_ctx(d) != s->ctx[cls])
            return gfail(s, err, c, jj, "%s is a %s op in a %s class", ll_op_get(op)->name,
                         ll__interior(d) ? "region" : "top-level",
                         s->ctx[cls] == LL__X_REGION ? "region" : "top-level");
        uint32_t want = ll__kind_inputs(s, s->cnode[kj]);
        uint8_t in_ctx =
            d == LL_D_KERNEL || d == LL_D_LIBRARY || d == LL_D_LOAD ? LL__X_TOP : LL__X_REGION;
        uint32_t len = 0;
        for (uint32_t l = lc;;) {
            uint32_t lj = s->cstart[l] + g->choice[l];
            if (s->code[s->cnode[lj]] != LL__C_ICONS) break;
            uint32_t head = s->kids[s->kstart[lj]];
            if (s->ctx[s->scls[head]] != in_ctx)
                return gfail(s, err, c, jj, "%s reads class c%u, a %s value, as input %u",
                             ll_op_get(op)->name, s->scls[head],
                             s->ctx[s->scls[head]] == LL__X_REGION ? "region" : "stored", len);
            if (++len > LL_MAX_IN) break;
            l = s->kids[s->kstart[lj] + 1];
        }
        if (len != want)
            return gfail(s, err, c, jj, "%s takes %u inputs; the chosen IList has %u",
                         ll_op_get(op)->name, want, len);
    } else if (code < ll_op_count() && ll_op_get(code)->dialect == LL_D_IO) {
        uint8_t want = strcmp(ll_op_get(code)->name, "Output") == 0 ? LL__X_TOP : LL__X_SINK;
        for (uint32_t k = s->kstart[j]; k < s->kstart[j + 1]; k++)
            if (s->ctx[s->scls[s->kids[k]]] != want)
                return gfail(s, err, c, jj, "%s reads class c%u, which is not a %s value",
                             ll_op_get(code)->name, s->scls[s->kids[k]],
                             want == LL__X_TOP ? "stored" : "sink");
    }
    return LM_OK;
}

int ll_genome_validate(const ll_genome *g, const ll_space *s, lm_err *err)
{
    int rc = check_shape(g, s, err);
    if (rc) return rc;
    for (uint32_t c = 0; c < s->ns; c++)
        if (g->choice[c] >= s->cstart[c + 1] - s->cstart[c])
            return gfail(s, err, c, g->choice[c], "the choice is out of range (the class has %u)",
                         s->cstart[c + 1] - s->cstart[c]);
    walk w;
    if ((rc = walk_init(&w, s, err))) return rc;
    push(&w, g, s->root_s);
    while (w.top && !rc) {
        frame *f = &w.stack[w.top - 1];
        uint32_t j = s->cstart[f->c] + f->cur;
        if (f->ki == 0 && (rc = check_choice(g, s, f->c, err))) break;
        if (f->ki == s->kstart[j + 1] - s->kstart[j]) {
            w.state[f->c] = DONE;
            w.top--;
            if (w.top) w.stack[w.top - 1].ki++;
            continue;
        }
        uint32_t d = s->kids[s->kstart[j] + f->ki];
        if (w.state[d] == DONE) {
            f->ki++;
        } else if (w.state[d] == NEW) {
            push(&w, g, d);
        } else {
            rc = gfail(s, err, f->c, f->cur,
                       "the chosen nodes form a cycle: it reads class %u (c%u), which is on the "
                       "walk from the root",
                       d, s->scls[d]);
        }
    }
    walk_fini(&w);
    return rc;
}

/* ==================================================================================
 * The reached classes and the canonical form
 * ================================================================================== */

/* The walk's classes into order (each once, depth first, children in order), marking
 * seen[]; a choice out of range is listed without children. */
static uint32_t reach_walk(const ll_genome *g, const ll_space *s, uint32_t *order, uint8_t *seen,
                           uint32_t *stack, uint32_t *next)
{
    uint32_t n = 0, top = 0;
    seen[s->root_s] = 1;
    order[n++] = s->root_s;
    stack[top] = s->root_s;
    next[top++] = 0;
    while (top) {
        uint32_t c = stack[top - 1];
        uint32_t nc = s->cstart[c + 1] - s->cstart[c];
        uint32_t j = s->cstart[c] + g->choice[c];
        uint32_t nk = g->choice[c] < nc ? s->kstart[j + 1] - s->kstart[j] : 0;
        if (next[top - 1] == nk) {
            top--;
            continue;
        }
        uint32_t d = s->kids[s->kstart[j] + next[top - 1]++];
        if (seen[d]) continue;
        seen[d] = 1;
        order[n++] = d;
        stack[top] = d;
        next[top++] = 0;
    }
    return n;
}

static int reached(const ll_genome *g, const ll_space *s, uint32_t *order, uint32_t *n,
                   uint8_t **seen_out, lm_err *err)
{
    int rc = check_shape(g, s, err);
    if (rc) return rc;
    uint8_t *seen = ll__zalloc(s->ns ? s->ns : 1, 1);
    uint32_t *buf = ll__alloc((size_t)s->ns * 3 + 1, sizeof(uint32_t));
    if (!seen || !buf) {
        ll__free(seen);
        ll__free(buf);
        return ll__oom(err, "genome walk");
    }
    uint32_t m = s->ns ? reach_walk(g, s, buf, seen, buf + s->ns, buf + 2 * (size_t)s->ns) : 0;
    if (order) memcpy(order, buf, (size_t)m * sizeof(uint32_t));
    if (n) *n = m;
    ll__free(buf);
    if (seen_out)
        *seen_out = seen;
    else
        ll__free(seen);
    return LM_OK;
}

int ll_genome_reached(const ll_genome *g, const ll_space *s, uint32_t *order, uint32_t *n,
                      lm_err *err)
{
    return reached(g, s, order, n, NULL, err);
}

int ll_genome_canonicalize(ll_genome *g, const ll_space *s, lm_err *err)
{
    uint8_t *seen = NULL;
    int rc = reached(g, s, NULL, NULL, &seen, err);
    if (rc) return rc;
    for (uint32_t c = 0; c < s->ns; c++)
        if (!seen[c] && g->choice[c] != 0) ll_genome_set(g, s, c, 0);
    ll__free(seen);
    return LM_OK;
}

void ll_genome_fprint(const ll_genome *g, const ll_space *s, FILE *f)
{
    fprintf(f, "genome %016" PRIx64 ":", g->hash);
    for (uint32_t c = 0; c < s->ns && c < g->n; c++)
        if (s->reach[c] && s->cstart[c + 1] - s->cstart[c] > 1) fprintf(f, " %u=%u", c, g->choice[c]);
    fprintf(f, "\n");
}
