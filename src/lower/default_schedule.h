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

#include "lower/lower_to_halide.h"

namespace kiln {

void apply_default_schedule(LoweredGraph& lowered, const Halide::Target& target);

}  // namespace kiln
