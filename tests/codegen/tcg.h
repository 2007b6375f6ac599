/* tcg.h - helpers of the codegen tests: test graphs (the examples, generated graphs,
 * hand-built regions and matmuls) with their plans, NVRTC compile checks, and the CPU
 * emulator of generated kernels (cg_emu.h) driven from C.
 *
 * Emulation: tcg_emu_build writes one C++ translation unit holding every distinct kernel
 * source of a set of plans (each in a namespace of its own, its lm_kernel renamed), the
 * emulation header and its main, and compiles it with the host C++ compiler (with
 * AddressSanitizer where it links). tcg_emu_run then runs one plan at given dims on
 * seeded inputs: it writes the buffers and steps as a job file, runs the program (twice:
 * threads started in order and in reverse, whose results must agree byte for byte) and
 * reads the outputs back. */
#ifndef LUMINAL_TESTS_CODEGEN_TCG_H
#define LUMINAL_TESTS_CODEGEN_TCG_H

#include "codegen.h"
#include "llir.h"

#include <stdbool.h>
#include <stdint.h>

/* One graph under test. */
typedef struct tcg_case {
    char name[96];
    hl_graph *g;       /* the HLIR graph (reference, tolerances) */
    ll_graph *lg;      /* its LLIR lowering */
    cg_plan *plan;
    int64_t dims[16];  /* dim values to emulate at */
    bool small;        /* dims chosen small enough to emulate */
} tcg_case;

void tcg_case_free(tcg_case *c);

/* Lowering plans of ll__lower_hlir (ll_lower.h) the tests use. */
typedef enum tcg_fuse {
    TCG_KERNELS = 0, /* every node its own kernel (ll_graph_from_hlir) */
    TCG_FUSED,       /* every fusible node inlined into the regions of the nodes that
                        leave the fusible world (outputs, gathers, ...); matmuls KMatmul */
    TCG_BLAS         /* as FUSED, matmuls as Blas */
} tcg_fuse;

/* Lowers g (owned by the case afterwards) and makes its plan; dims: the profile values,
 * each clamped to at most max_dim (0: no clamp). false with msg on failure. */
bool tcg_case_init(tcg_case *c, const char *name, hl_graph *g, tcg_fuse fuse, int64_t max_dim,
                   char *msg, size_t cap);

/* NVRTC: compiles every kernel of the plan for sm_90. 0 when all compile; the number that
 * failed otherwise, the first error (naming the LLIR node and quoting the source lines)
 * in msg. -1 when NVRTC cannot be loaded (msg says why). */
int tcg_compile_plan(const cg_plan *p, char *msg, size_t cap);

/* The emulator. */
typedef struct tcg_emu tcg_emu;

/* Builds an emulator holding the kernels of plans[0..n). NULL with msg when the compiler
 * is missing (msg starts "skip:") or the translation unit does not compile. */
tcg_emu *tcg_emu_build(const cg_plan *const *plans, uint32_t n, char *msg, size_t cap);
void tcg_emu_free(tcg_emu *e);

/* Bytes of all of c's buffers at c->dims (what emulating it needs); UINT64_MAX when a size
 * does not evaluate. */
uint64_t tcg_case_bytes(const tcg_case *c);

/* Runs c's plan at c->dims on inputs (as ll_run takes them) and fills outputs (caller
 * frees each with hl_tensor_fini). false with msg on failure (a kernel that faults,
 * writes out of bounds, deadlocks or differs between the two thread orders). */
bool tcg_emu_run(tcg_emu *e, const tcg_case *c, const hl_tensor *inputs, hl_tensor *outputs,
                 char *msg, size_t cap);

/* Seeded inputs of g at dims (stream i for input i). */
void tcg_inputs(const hl_graph *g, const int64_t *dims, uint64_t seed, hl_tensor *in);

/* Emulates c at c->dims on inputs from seed and compares: (1) with llir's executor
 * (ll_run), bit for bit unless the plan has row reductions, which add in another order
 * (then within ll_compare_outputs' tolerances; exact_vs_ll forces bit for bit); (2) with
 * the reference runtime within ll_compare_outputs' tolerances (a difference the executor
 * shares bit for bit is the LLIR's semantics, not the kernels': printed as a note).
 * Returns true when they agree; msg says where they do not. */
bool tcg_check_case(tcg_emu *e, const tcg_case *c, uint64_t seed, bool exact_vs_ll, char *msg,
                    size_t cap);

#endif /* LUMINAL_TESTS_CODEGEN_TCG_H */

/* ---- hand-built graphs (tcg_graphs.c) ---- */

/* The hand-built graphs of the emulation and compile tests: each a small HLIR graph
 * exercising one template at shapes that are not multiples of tile or vector widths,
 * with dims of 1, dynamic dims, broadcast and permuted views and every float dtype.
 * tcg_hand_count() of them; tcg_hand(i) builds graph i (its name in *name). */
uint32_t tcg_hand_count(void);
hl_graph *tcg_hand(uint32_t i, const char **name);
