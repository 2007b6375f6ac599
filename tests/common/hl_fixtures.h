/* hl_fixtures.h - graphs and data files the hlir tests share (tests/common/).
 *
 * Each fixture is built one way, here, so tests in different folders check the same
 * thing: the every-primitive graph the encoding tests read back and the example graphs
 * every tool and round-trip test iterates. The functions use the hlir API only (no Check),
 * so any test program may link the library; the caller asserts on what they return. */
#ifndef LUMINAL_TESTS_HL_FIXTURES_H
#define LUMINAL_TESTS_HL_FIXTURES_H

#include "hlir.h"

#include <stddef.h>

/* One of every primitive (Input, Output, Constant, Iota, Cast, Exp2, Log2, Sin, Recip,
 * Sqrt, Add, Mul, Mod, LessThan, Gather, Scatter, SumReduce, MaxReduce), a dynamic dim
 * "n" in [1, 64] profiled at 4, a transposed (strided) view and two outputs ("sc" f32 [3],
 * "b" bf16 [n, 3]). No node is dead or repeated and every reduction is over its last
 * axis, so it reads back from the e-graph exactly. The caller frees it; on failure
 * (out of memory) the graph holds the builder's error, which the caller checks. NULL
 * only when the graph itself cannot be allocated. */
hl_graph *hl_fixture_every_op(void);

/* The example graphs (examples/graphs/\*.json under src, the source tree), as paths in
 * name order; *n their count. Returns NULL with *n = 0 when the folder cannot be read.
 * Free with hl_fixture_free_list. */
char **hl_fixture_examples(const char *src, size_t *n);
/* How many example graphs there must be: the rows of examples/graphs/README.md's table
 * that name a .json file (the README documents every example, so a missing file, an
 * extra one or a glob that finds nothing is a failure, never a silent pass). 0 when the
 * README cannot be read. */
size_t hl_fixture_examples_expected(const char *src);
void hl_fixture_free_list(char **list, size_t n);

#endif /* LUMINAL_TESTS_HL_FIXTURES_H */
