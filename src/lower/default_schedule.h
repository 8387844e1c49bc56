// kiln's default schedule: always valid, instant to compute, reasonably fast.
//   - pointwise and injective nodes are inlined into their consumers, so a pointwise
//     chain becomes one loop nest;
//   - outputs and reduction accumulators get loop nests of their own (compute_root);
//   - CPU: the innermost dimension vectorized at the target's natural width, the outer
//     dimensions fused and parallel; a reduction to a scalar is split with rfactor so
//     its partial sums run in parallel;
//   - CUDA: gpu_tile over the innermost one or two dimensions.
#pragma once

#include <Halide.h>

#include <map>
#include <string>

#include "lower/lower_to_halide.h"

namespace kiln {

void apply_default_schedule(LoweredGraph& lowered, const Halide::Target& target);

// Only the default rules' CPU contractions: every matmul and conv2d accumulator with its
// register tiles, its epilogue host, its packed or padded operands, and the values stored
// (or inlined) for contractions to read. The Kiln scheduler starts from these, which are
// written for the microkernel's register budget, and plans the rest of the pipeline
// around them. Returns what it scheduled, by Func name: true for a Func left inline,
// false for one with loops of its own.
std::map<std::string, bool> apply_default_cpu_contraction_schedule(LoweredGraph& lowered,
                                                                   const Halide::Target& target);

// The GPU counterpart for matmuls only: each matmul accumulator with the rules' register
// tiles per thread and its stored product, and the contraction operands stored
// contiguously (a transposed operand read in place costs strided loads). Kiln's GPU
// search plans the rest, conv2d included. Same return value.
std::map<std::string, bool> apply_default_gpu_matmul_schedule(LoweredGraph& lowered, const Halide::Target& target);

}  // namespace kiln
