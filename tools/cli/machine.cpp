// kiln machine: the machine model the Kiln autoscheduler plans for (detected, with
// KILN_MACHINE on top), and with --calibrate what Halide's thread pool costs a parallel
// stage here, fitted to the model's lock_us.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/generator_args.h"
#include "core/error.h"
#include "autoscheduler/autoscheduler.h"

namespace kiln::cli {

namespace {

int machine(const std::string& target, bool calibrate) {
  const autoschedule::MachineModel m = autoschedule::machine_model(parse_target(target, "machine"));
  std::printf("%s\n", m.str().c_str());
  if (calibrate) {
    std::printf("\nHalide's thread pool, stages of empty tasks (lock_us now %g):\n", m.lock_us);
    std::fputs(autoschedule::calibrate_thread_pool(m.cores).str().c_str(), stdout);
  }
  return 0;
}

struct MachineArgs {
  std::string target = "host";
  bool calibrate = false;
};

}  // namespace

void add_machine(CLI::App& kiln, int* status) {
  auto a = std::make_shared<MachineArgs>();
  CLI::App* c = kiln.add_subcommand("machine",
                                    "print the machine model the Kiln autoscheduler plans for");
  c->footer("The model is detected, then KILN_MACHINE's fields override it.\n");
  c->add_option("--target", a->target, "host (default) or a Halide target string")->type_name("host|<Halide target>");
  c->add_flag("--calibrate", a->calibrate,
              "time Halide's thread pool on stages of empty tasks and print the lock_us that fits them, to set "
              "with KILN_MACHINE");
  c->callback([a, status] { *status = machine(a->target, a->calibrate); });
}

}  // namespace kiln::cli
