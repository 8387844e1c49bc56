// The schedulers a compiled graph can use, chosen by name (CompileOptions::scheduler):
//   "default"  kiln's hand-written rules (lower/default_schedule.h): always valid, instant;
//   "Kiln"     kiln's autoscheduler (autoscheduler/): a cost-model search planned for the
//              sizes of the inputs the graph is compiled for; CPU targets only.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "lower/kernel.h"

namespace kiln {

// The valid names, in the order error messages list them.
const std::vector<std::string>& scheduler_names();
// Throws kiln::Error when `name` is not a scheduler; `where` says where it came from
// ("CompileOptions::scheduler", "KILN_SCHEDULER", ...).
void check_scheduler_name(const std::string& name, const std::string& where);
// The schedule that `scheduler` gives `graph` compiled for inputs like `example_inputs`
// (concrete tensors; their sizes are what the autoscheduler plans for).
ScheduleFn make_schedule_fn(const std::string& scheduler, const Graph& graph, const std::vector<Tensor>& example_inputs);

}  // namespace kiln
