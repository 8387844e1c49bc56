// kiln's autoscheduler (autoscheduler/) as the scheduler of a lowered graph: the cost-model
// search of the `Kiln` Halide plugin, called directly (no plugin is loaded).
#pragma once

#include <Halide.h>

#include <cstdint>
#include <vector>

#include "lower/lower_to_halide.h"

namespace kiln {

// Concrete sizes the search plans for, kiln order (dim 0 outermost): one entry per
// pipeline input and per output. Dynamic dims take the sizes they had when traced.
struct SizeEstimates {
  std::vector<std::vector<int64_t>> inputs, outputs;
};

// "{0, n0}, {0, n1}, ..." in Halide's dim order (innermost first) for kiln sizes.
Halide::Region estimate_region(const std::vector<int64_t>& kiln_sizes);

// Sets the estimates on the pipeline's inputs and outputs and schedules it with kiln's
// search (KILN_LOG=schedule,fusion prints each decision). The contractions first get the
// default rules' register tiles (apply_default_cpu_contraction_schedule on a CPU,
// apply_default_gpu_matmul_schedule for a CUDA target's matmuls) and the search plans the
// rest.
void apply_kiln_schedule(LoweredGraph& lowered, const Halide::Target& target, const SizeEstimates& sizes);

}  // namespace kiln
