// The fuzz build's stand-in for autoscheduler/gpu_search.cpp, which clang 14 cannot compile
// (a lambda capturing a structured binding: C++20, clang 16 and later). search.cpp calls
// the GPU search for CUDA targets, and choose_gpu_matmul (contraction_plans.cpp) its
// tilings; no parser does either, so reaching these is a bug of the harness.
#include <cstdio>
#include <cstdlib>

#include "search.h"

namespace kiln::autoschedule {

SearchResult schedule_gpu_pipeline(const Halide::Pipeline&, const Halide::Target&, const MachineModel&, const Knobs*,
                                   const FixedFuncs*) {
  std::fprintf(stderr, "kiln fuzz: the GPU search is not part of the fuzz build (gpu_search_stub.cpp)\n");
  std::abort();
}

std::vector<std::pair<GpuContractionTiling, GpuPrediction>> gpu_contraction_candidates(const ContractionShape&,
                                                                                      const MachineModel&) {
  std::fprintf(stderr, "kiln fuzz: the GPU search's tilings are not part of the fuzz build (gpu_search_stub.cpp)\n");
  std::abort();
}

}  // namespace kiln::autoschedule
