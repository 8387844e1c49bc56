// The schedulers a compiled graph can use, chosen by name (CompileOptions::scheduler):
//   "Kiln"     kiln's autoscheduler (autoscheduler/): a cost-model search planned for the
//              sizes of the inputs the graph is compiled for, around the rules' register
//              tiles for matmul and conv2d on a CPU; the GPU search on a CUDA target;
//   "rules"    kiln's hand-written rules (lower/default_schedule.h): always valid, instant,
//              CPU and CUDA;
//   "default"  Kiln (on CPU and CUDA targets alike).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "lower/kernel.h"
#include "lower/kiln_schedule.h"

namespace kiln {

// The valid names, in the order error messages list them.
const std::vector<std::string>& scheduler_names();
// Throws kiln::Error when `name` is not a scheduler; `where` says where it came from
// ("CompileOptions::scheduler", "KILN_SCHEDULER", ...).
void check_scheduler_name(const std::string& name, const std::string& where);
// The scheduler that `name` means for a target: "default" resolved, any other name as is.
std::string resolve_default_scheduler(const std::string& name, bool gpu_target);
// The environment's KILN_SCHEDULER (checked), else "default", resolved for the target.
std::string scheduler_from_env(bool gpu_target);
// What the autoscheduler plans for `graph` compiled for inputs like `example_inputs`:
// their sizes (a dynamic dim's traced size is the best guess of the sizes to come) and the
// outputs' sizes they imply.
SizeEstimates estimates_from(const Graph& graph, const std::vector<Tensor>& example_inputs);
// The schedule that `scheduler` (resolved: "Kiln" or "rules") gives `graph` compiled for inputs like `example_inputs`
// (concrete tensors; their sizes are what the autoscheduler plans for).
ScheduleFn make_schedule_fn(const std::string& scheduler, const Graph& graph, const std::vector<Tensor>& example_inputs);
// The same without example inputs (ahead-of-time export): the graph's static sizes, and
// kDynamicDimEstimate for a dynamic dim (KILN_LOG=schedule says so).
constexpr int64_t kDynamicDimEstimate = 256;
ScheduleFn make_schedule_fn(const std::string& scheduler, const Graph& graph);

}  // namespace kiln
