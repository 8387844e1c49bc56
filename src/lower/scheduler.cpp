#include "lower/scheduler.h"

#include <cstdlib>
#include <functional>

#include "core/error.h"
#include "core/log.h"
#include "graph/interpreter.h"
#include "lower/default_schedule.h"
#include "lower/kiln_schedule.h"

namespace kiln {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Without inputs: the placeholders' own sizes, a guess for the dynamic ones.
SizeEstimates estimates_from(const Graph& graph) {
  SymbolSizes symbols;
  SizeEstimates e;
  for (const TensorMeta& m : graph.input_metas()) {
    for (int d = 0; d < m.shape.rank(); ++d) {
      const Dim& dim = m.shape[d];
      if (dim.is_static() || symbols.count(dim.sym)) continue;
      symbols[dim.sym] = kDynamicDimEstimate;
      log("schedule", "Kiln: dynamic dim " + dim.sym + " has no example size; planning for " +
                          std::to_string(kDynamicDimEstimate));
    }
    e.inputs.push_back(concretize(m.shape, symbols));
  }
  for (const TensorMeta& m : graph.output_metas()) e.outputs.push_back(concretize(m.shape, symbols));
  return e;
}

// `sizes` is called only for Kiln (the rules plan for no sizes).
ScheduleFn schedule_fn(const std::string& scheduler, const std::function<SizeEstimates()>& sizes) {
  check_scheduler_name(scheduler, "make_schedule_fn");
  KILN_CHECK(scheduler != "default", "make_schedule_fn needs a resolved scheduler (resolve_default_scheduler)");
  if (scheduler == "rules") return apply_default_schedule;
  return [estimates = sizes()](LoweredGraph& lowered, const Halide::Target& target) {
    apply_kiln_schedule(lowered, target, estimates);
  };
}

}  // namespace

SizeEstimates estimates_from(const Graph& graph, const std::vector<Tensor>& example_inputs) {
  const SymbolSizes symbols = bind_inputs("Kiln scheduler", graph.input_metas(), example_inputs);
  SizeEstimates e;
  for (const Tensor& t : example_inputs) e.inputs.push_back(t.shape().sizes());
  for (const TensorMeta& m : graph.output_metas()) e.outputs.push_back(concretize(m.shape, symbols));
  return e;
}

const std::vector<std::string>& scheduler_names() {
  static const std::vector<std::string> names = {"default", "Kiln", "rules"};
  return names;
}

void check_scheduler_name(const std::string& name, const std::string& where) {
  for (const std::string& n : scheduler_names())
    if (n == name) return;
  user_error(where, ": unknown scheduler '", name, "'; the schedulers are ", joined(scheduler_names()),
             " (Kiln: kiln's autoscheduler; rules: kiln's hand-written rules; default: Kiln)");
}

std::string resolve_default_scheduler(const std::string& name, bool /*gpu_target*/) {
  // Kiln on every target: 2.2x the rules on kiln bench's CUDA suite on the H200, 1.6x on
  // the 2-core CPU (docs/benchmarks.md).
  if (name != "default") return name;
  return "Kiln";
}

std::string scheduler_from_env(bool gpu_target) {
  const char* env = std::getenv("KILN_SCHEDULER");
  if (!env || !*env) return resolve_default_scheduler("default", gpu_target);
  check_scheduler_name(env, "KILN_SCHEDULER");
  return resolve_default_scheduler(env, gpu_target);
}

ScheduleFn make_schedule_fn(const std::string& scheduler, const Graph& graph, const std::vector<Tensor>& example_inputs) {
  return schedule_fn(scheduler, [&] { return estimates_from(graph, example_inputs); });
}

ScheduleFn make_schedule_fn(const std::string& scheduler, const Graph& graph) {
  return schedule_fn(scheduler, [&] { return estimates_from(graph); });
}

}  // namespace kiln
