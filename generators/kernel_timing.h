// Timing a kernel-library generator's pipeline in-process, the way `kiln bench-kernels`
// and `kiln tune` do: seeded random inputs at the generator's estimate sizes, a JIT
// compile, a warm-up run, then repeated runs.
#pragma once

#include <Halide.h>

#include <vector>

#include "kernel_spec.h"

namespace kiln::kernels {

struct KernelTiming {
  double median_ms = 0;
  double min_ms = 0;
  int runs = 0;
};

// Compiles `k`'s (already scheduled) pipeline for `target` and times up to `reps` runs
// after a warm-up, stopping early once 5 runs are in and `max_seconds` have passed. On a
// GPU target each run includes the device synchronization.
KernelTiming time_kernel(DirectKernel& k, const Halide::Target& target, int reps, double max_seconds);

}  // namespace kiln::kernels
