/* th.h - helpers shared by the hlir tests: tensors from arrays, running a graph,
 * comparing results. Header-only (static functions) so each test stays one file. */
#ifndef LUMINAL_TESTS_HLIR_TH_H
#define LUMINAL_TESTS_HLIR_TH_H

#include "hlir.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A tensor of dtype with dims, filled from vals (rounded to the storage format). */
static inline hl_tensor th_tensor(hl_dtype dt, uint32_t ndim, const int64_t *dims,
                                  const double *vals)
{
    hl_tensor t;
    lm_err err;
    lm_err_clear(&err);
    ck_assert_msg(hl_tensor_init(&t, dt, ndim, dims, &err) == HL_OK, "%s", err.msg);
    if (vals)
        for (size_t i = 0; i < t.numel; i++)
            hl_tensor_set(&t, i, vals[i]);
    return t;
}

/* Runs g with the given inputs and dims (NULL: profile values); asserts success. */
static inline void th_run(const hl_graph *g, const int64_t *dims, const hl_tensor *in,
                          hl_tensor *out)
{
    lm_err err;
    lm_err_clear(&err);
    hl_status st = hl_run(g, dims, in, out, NULL, &err);
    ck_assert_msg(st == HL_OK, "run failed: %s", err.msg);
}

/* Asserts t holds want[0..n) within tol (absolute + relative); NaN matches NaN. */
static inline void th_expect(const hl_tensor *t, const double *want, size_t n, double tol)
{
    ck_assert_uint_eq(t->numel, n);
    for (size_t i = 0; i < n; i++) {
        double got = hl_tensor_get(t, i);
        if (isnan(want[i])) {
            ck_assert_msg(isnan(got), "element %zu: got %.9g, want NaN", i, got);
            continue;
        }
        if (isinf(want[i])) {
            ck_assert_msg(got == want[i], "element %zu: got %.9g, want %.9g", i, got, want[i]);
            continue;
        }
        double err = fabs(got - want[i]);
        ck_assert_msg(err <= tol * (1.0 + fabs(want[i])), "element %zu: got %.9g, want %.9g", i,
                      got, want[i]);
    }
}

static inline void th_free(hl_tensor *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hl_tensor_fini(&t[i]);
}

/* Asserts the graph's sticky error is clear and its invariants hold. */
static inline void th_graph_ok(const hl_graph *g)
{
    ck_assert_msg(hl_graph_error(g)->code == HL_OK, "builder error: %s", hl_graph_error(g)->msg);
    lm_err err;
    lm_err_clear(&err);
    ck_assert_msg(hl_graph_check(g, &err) == HL_OK, "check: %s", err.msg);
}

/* Deterministic pseudo-random values in [lo, hi) (a PCG32 step). */
static inline double th_rand(uint64_t *state, double lo, double hi)
{
    uint64_t old = *state;
    *state = old * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t x = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    x = (x >> rot) | (x << ((-rot) & 31));
    return lo + (hi - lo) * (x / 4294967296.0);
}

#endif
