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

class Kernel {
 public:
  // `vendor_kernels`: on a CUDA target, matmuls may run as cuBLASLt stages where the Kiln
  // autoscheduler prices them faster (LowerOptions).
  Kernel(const Graph& graph, const Halide::Target& target, const ScheduleFn& schedule = {},
         bool vendor_kernels = false);

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const Halide::Target& target() const { return target_; }
  const Graph& graph() const { return graph_; }
  // Halide's lowered statement (loop nests after scheduling), as text.
  std::string lowered_stmt() const;

 private:
  Graph graph_;
  Halide::Target target_;
  LoweredGraph lowered_;
  Halide::Callable callable_;
};

// Lowers and schedules `graph` for `target` (used by both JIT and AOT).
LoweredGraph lower_and_schedule(const Graph& graph, const Halide::Target& target,
                                const ScheduleFn& schedule = {}, bool vendor_kernels = false);

// Text of Halide's lowered statement for a scheduled pipeline.
std::string lowered_stmt_text(const LoweredGraph& lowered, const Halide::Target& target);

}  // namespace kiln
