/* program.h - a compiled program: the one public header of program/.
 *
 * A program is what the compiler hands to a user: the plan codegen wrote (kernels,
 * cuBLASLt calls, buffers, steps), saved to a directory and loaded again without the
 * e-graph or a search, and run:
 *
 *   on the GPU   through cuda_rt: kernels compiled by NVRTC (cached by source and
 *                architecture), buffers planned into one arena from their live ranges,
 *                the steps captured into as few CUDA graphs as the dependencies allow
 *                (cuBLASLt calls prepared once and captured in the same graph), replayed;
 *                dynamic dims update kernel nodes in place; inputs set from host memory
 *                through pinned staging or as device pointers, skipped when unchanged;
 *   on the CPU   through llir's executor (the program directory keeps the LLIR), where
 *                there is no GPU, and saying so.
 *
 * This is also the C API for embedding a compiled program in an application: load,
 * set inputs, run, read outputs, free (docs/codegen.md, examples/program/).
 *
 * Errors through base's lm_err; GPU errors name the program, the kernel and the LLIR
 * node, and say whether the process can go on or must be restarted.
 */
#ifndef LUMINAL_PROGRAM_H
#define LUMINAL_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pg_program pg_program;

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_PROGRAM_H */
