// The `Kiln` autoscheduler as a Halide plugin: loading this module (Halide::load_plugin,
// or a generator's -p flag, which add_halide_library(... AUTOSCHEDULER ...) passes)
// registers it under the name "Kiln", after which
//
//   pipeline.apply_autoscheduler(target, {"Kiln", {}});
//
// schedules the pipeline (from the tuning database when it has an entry, else with the
// cost model: autoschedule.h) and returns the schedule as source in Halide's format.
#include <Halide.h>

#include "autoschedule.h"

namespace kiln::autoschedule {
namespace {

void autoschedule_kiln(const Halide::Pipeline& pipeline, const Halide::Target& target,
                       const Halide::AutoschedulerParams& params, Halide::AutoSchedulerResults* results) {
  const ScheduleOutcome o = autoschedule(pipeline, target, params.extra);
  if (results) {
    results->target = target;
    results->autoscheduler_params = params;
    results->schedule_source = o.source;
  }
}

// Halide keeps autoschedulers in a name -> function map; a static object registers
// this one when the module is loaded.
struct Register {
  Register() { Halide::Pipeline::add_autoscheduler("Kiln", autoschedule_kiln); }
} register_kiln;

}  // namespace
}  // namespace kiln::autoschedule
