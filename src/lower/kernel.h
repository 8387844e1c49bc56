// A graph compiled just in time for one target: lowering, scheduling and Halide's JIT,
// then a cheap call path (Halide::Callable) that checks inputs, allocates outputs and
// runs the pipeline.
#pragma once

#include <Halide.h>

#include <functional>
#include <memory>

#include "graph/graph.h"
#include "lower/lower_to_halide.h"

namespace kiln {

// Applies a schedule to a lowered graph; the default rules unless a caller supplies one.
using ScheduleFn = std::function<void(LoweredGraph&, const Halide::Target&)>;

namespace compile_cache {
class Entry;
}

class Kernel {
 public:
  // `vendor_kernels`: on a CUDA target, matmuls may run as cuBLASLt stages where the Kiln
  // autoscheduler prices them faster (LowerOptions).
  Kernel(const Graph& graph, const Halide::Target& target, const ScheduleFn& schedule = {},
         bool vendor_kernels = false);

  // The same through the compile cache (lower/compile_cache.h) under `cache_key`: loaded
  // when an entry exists, else compiled ahead of time and stored (just in time where that
  // fails, and said so under KILN_LOG=cache). The pipeline takes `graph`'s constants of
  // rank >= 1 as arguments; `scheduler` plans it at `example_inputs`' sizes.
  static std::shared_ptr<Kernel> cached(const Graph& graph, const Halide::Target& target, const std::string& scheduler,
                                        const std::vector<Tensor>& example_inputs, const std::string& cache_key);

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const Halide::Target& target() const { return target_; }
  const Graph& graph() const { return graph_; }
  // Halide's lowered statement (loop nests after scheduling), as text.
  std::string lowered_stmt() const;

 private:
  struct Uncompiled {};
  Kernel(const Graph& graph, const Halide::Target& target, Uncompiled) : graph_(graph), target_(target) {}
  void compile_just_in_time();
  Halide::Callable jit_callable();

  Graph graph_;
  Halide::Target target_;
  LoweredGraph lowered_;
  Halide::Callable callable_;
  // Through the compile cache: the graph the pipeline was lowered from (constants lifted),
  // its schedule, the lifted constants (passed after the inputs) and the loaded entry
  // (null where the pipeline was compiled just in time instead).
  Graph lowered_graph_;
  ScheduleFn schedule_;
  std::vector<Tensor> lifted_constants_;
  std::shared_ptr<compile_cache::Entry> entry_;
};

// Lowers and schedules `graph` for `target` (used by both JIT and AOT).
LoweredGraph lower_and_schedule(const Graph& graph, const Halide::Target& target,
                                const ScheduleFn& schedule = {}, bool vendor_kernels = false);

// Text of Halide's lowered statement for a scheduled pipeline.
std::string lowered_stmt_text(const LoweredGraph& lowered, const Halide::Target& target);

}  // namespace kiln
