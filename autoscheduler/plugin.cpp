// The `Kiln` autoscheduler as a Halide plugin: loading this module (Halide::load_plugin,
// or a generator's -p flag, which add_halide_library(... AUTOSCHEDULER ...) passes)
// registers it under the name "Kiln", after which
//
//   pipeline.apply_autoscheduler(target, {"Kiln", {}});
//
// schedules the pipeline and returns the schedule as source in Halide's format.
// Parameters (AutoschedulerParams::extra): machine=<KILN_MACHINE-style overrides>, and
// parallelism=<cores> as Halide's own autoschedulers take it.
#include <Halide.h>

#include <chrono>
#include <iostream>

#include "core/error.h"
#include "core/log.h"
#include "machine_model.h"
#include "search.h"

namespace kiln::autoschedule {
namespace {

void autoschedule_kiln(const Halide::Pipeline& pipeline, const Halide::Target& target,
                       const Halide::AutoschedulerParams& params, Halide::AutoSchedulerResults* results) {
  const auto start = std::chrono::steady_clock::now();
  if (target.has_gpu_feature()) {
    user_error("the Kiln autoscheduler schedules CPU targets only so far; target ", target.to_string(),
               " has a GPU feature (use kiln's default rules, Anderson2021, Li2018 or Mullapudi2016 for GPUs)");
  }
  MachineModel machine = machine_model(target);
  for (const auto& [key, value] : params.extra) {
    if (key == "machine") {
      apply_overrides(machine, value);
    } else if (key == "parallelism") {  // Halide's autoschedulers' name for the core count
      apply_overrides(machine, "cores=" + value);
    } else {
      user_error("the Kiln autoscheduler has no parameter '", key, "'; its parameters are machine=<key=value,...> ",
                 "(the KILN_MACHINE format) and parallelism=<cores>");
    }
  }
  log("schedule", "machine: " + machine.str());
  SearchResult r;
  try {
    r = schedule_pipeline(pipeline, target, machine);
  } catch (const Halide::CompileError& e) {
    KILN_INTERNAL_ERROR("the Kiln autoscheduler made a schedule that Halide rejects: ", e.what());
  }
  for (const std::string& w : r.warnings) std::cerr << "Warning: Kiln autoscheduler: " << w << "\n";
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log("schedule", "Kiln: predicted " + std::to_string(r.predicted_s * 1e3) + " ms, searched in " +
                      std::to_string(ms) + " ms");
  if (results) {
    results->target = target;
    results->autoscheduler_params = params;
    results->schedule_source = "    // Kiln autoscheduler; predicted " + std::to_string(r.predicted_s * 1e3) +
                               " ms on " + machine.str() + "\n" + r.source;
  }
}

// Halide keeps autoschedulers in a name -> function map; a static object registers
// this one when the module is loaded.
struct Register {
  Register() { Halide::Pipeline::add_autoscheduler("Kiln", autoschedule_kiln); }
} register_kiln;

}  // namespace
}  // namespace kiln::autoschedule
