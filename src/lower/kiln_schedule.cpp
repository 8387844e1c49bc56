#include "lower/kiln_schedule.h"

#include <chrono>
#include <sstream>

#include "autoscheduler/autoschedule.h"
#include "autoscheduler/machine_model.h"
#include "autoscheduler/search.h"
#include "autoscheduler/tuning_db.h"
#include "core/error.h"
#include "core/log.h"
#include "lower/default_schedule.h"

namespace kiln {

// Halide numbers dims innermost first, kiln outermost first; every dim starts at 0.
Halide::Region estimate_region(const std::vector<int64_t>& kiln_sizes) {
  Halide::Region r;
  for (auto it = kiln_sizes.rbegin(); it != kiln_sizes.rend(); ++it) r.push_back({0, int(*it)});
  return r;
}

namespace {

void set_estimates(LoweredGraph& lowered, const SizeEstimates& sizes) {
  KILN_CHECK(sizes.inputs.size() == lowered.inputs.size() && sizes.outputs.size() == lowered.outputs.size(),
             "size estimates for ", sizes.inputs.size(), " inputs and ", sizes.outputs.size(),
             " outputs, but the pipeline has ", lowered.inputs.size(), " and ", lowered.outputs.size());
  for (size_t i = 0; i < lowered.inputs.size(); ++i) lowered.inputs[i].set_estimates(estimate_region(sizes.inputs[i]));
  for (size_t i = 0; i < lowered.outputs.size(); ++i) lowered.outputs[i].set_estimates(estimate_region(sizes.outputs[i]));
}

}  // namespace

std::map<std::string, bool> prepare_kiln_schedule(LoweredGraph& lowered, const Halide::Target& target,
                                               const SizeEstimates& sizes) {
  set_estimates(lowered, sizes);
  // Contractions keep the rules' register tiles and packed operands (on a GPU: matmuls,
  // whose operands the rules store contiguously); the search places everything else around
  // them (reductions per row of their consumers, pointwise chains inlined or stored, loop
  // shapes of the outputs; on a GPU conv2d too).
  return target.has_gpu_feature() ? apply_default_gpu_matmul_schedule(lowered, target)
                                  : apply_default_cpu_contraction_schedule(lowered, target);
}

KilnSchedule apply_kiln_schedule(LoweredGraph& lowered, const Halide::Target& target, const SizeEstimates& sizes,
                                 const KilnScheduleOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const autoschedule::FixedFuncs fixed = prepare_kiln_schedule(lowered, target, sizes);
  const autoschedule::MachineModel machine = autoschedule::machine_model(target);
  log("schedule", "Kiln: machine " + machine.str());
  KilnSchedule out;
  for (const auto& [name, inlined] : fixed) out.fixed.push_back(name);
  const autoschedule::Knobs* knobs = options.knobs;
  const std::string db = options.db == "none" ? options.db : autoschedule::tuning_db_path(options.db);
  std::optional<autoschedule::ScheduleOutcome> tuned;
  if (!knobs && db != "none") tuned = autoschedule::apply_tuned_entry(lowered.pipeline(), target, machine, db, &fixed);
  if (tuned) {
    out.source = tuned->source;
    out.predicted_s = tuned->predicted_s;
    out.tuned = true;
  } else {
    autoschedule::SearchResult r;
    try {
      r = autoschedule::schedule_pipeline(lowered.pipeline(), target, machine, knobs, &fixed);
    } catch (const Halide::CompileError& e) {
      // The search only emits directives it knows Halide accepts; a rejection is kiln's bug.
      KILN_INTERNAL_ERROR("the Kiln scheduler made a schedule that Halide rejects: ", e.what());
    }
    // Estimates come from real inputs, so a warning here means a Func the analysis could
    // not size: worth seeing, not worth failing for.
    for (const std::string& w : r.warnings) log("schedule", "Kiln: " + w);
    out.source = r.source;
    out.predicted_s = r.predicted_s;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream o;
  o << "Kiln: predicted " << out.predicted_s * 1e3 << " ms, searched in " << ms << " ms";
  log("schedule", o.str());
  return out;
}

}  // namespace kiln
