// kiln machine: the machine model the Kiln autoscheduler plans for (detected, with
// KILN_MACHINE on top), and with --calibrate what Halide's thread pool costs a parallel
// stage here, fitted to the model's lock_us.
#include <cstdio>

#include "cli/commands.h"
#include "cli/generator_args.h"
#include "core/error.h"
#include "machine_model.h"
#include "pool_calibration.h"

namespace kiln::cli {

int machine(const std::vector<std::string>& args) {
  std::string target = "host";
  bool calibrate = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--calibrate") calibrate = true;
    else if (args[i] == "--target" && i + 1 < args.size()) target = args[++i];
    else user_error("machine: unknown argument '", args[i], "'; options: --target host|<Halide target>, --calibrate");
  }
  const autoschedule::MachineModel m = autoschedule::machine_model(parse_target(target, "machine"));
  std::printf("%s\n", m.str().c_str());
  if (calibrate) {
    std::printf("\nHalide's thread pool, stages of empty tasks (lock_us now %g):\n", m.lock_us);
    std::fputs(autoschedule::calibrate_thread_pool(m.cores).str().c_str(), stdout);
  }
  return 0;
}

}  // namespace kiln::cli
