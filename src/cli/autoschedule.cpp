// kiln autoschedule: the Kiln autoscheduler on one kernel-library generator (its tuning
// database entry when there is one, else the cost model), its schedule written as a
// schedule file in the schedules/ format, ready to be copied there and tuned by hand.
#include <fstream>
#include <iostream>

#include "autoschedule.h"
#include "cli/commands.h"
#include "cli/generator_args.h"
#include "core/error.h"
#include "kernel_spec.h"

namespace kiln::cli {

namespace {

struct Args {
  GeneratorArg generator;
  std::string target = "host";
  std::string out;       // default: <generator>.schedule.h
  std::string function;  // default: apply_schedule_<generator>_cpu (or _cuda)
  std::string db;        // --db PATH | none
};

const char* kOptions = "options: --target host|<Halide target>, -o FILE, --function NAME, --db PATH|none";

Args parse(const std::vector<std::string>& args) {
  Args a;
  bool have_generator = false;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) user_error("autoschedule: ", args[i], " needs a value");
      return args[++i];
    };
    if (args[i] == "--target") a.target = value();
    else if (args[i] == "-o") a.out = value();
    else if (args[i] == "--function") a.function = value();
    else if (args[i] == "--db") a.db = value();
    else if (!args[i].empty() && args[i][0] == '-') user_error("autoschedule: unknown option '", args[i], "'; ", kOptions);
    else if (have_generator) user_error("autoschedule: one generator at a time, not '", args[i], "' too");
    else a.generator = parse_generator_arg(args[i], "autoschedule"), have_generator = true;
  }
  if (!have_generator) {
    user_error("autoschedule: no generator; usage: kiln autoschedule <generator>[:param=value...] ", kOptions);
  }
  return a;
}

}  // namespace

int autoschedule(const std::vector<std::string>& argv) {
  const Args a = parse(argv);
  const Halide::Target target = parse_target(a.target, "autoschedule");
  kernels::DirectKernel k = kernels::build_direct(kernels::make_spec(a.generator.name, a.generator.params));
  std::map<std::string, std::string> params;
  if (!a.db.empty()) params["db"] = a.db;
  const autoschedule::ScheduleOutcome o = autoschedule::autoschedule(k.lowered.pipeline(), target, params);

  const std::string gen = k.spec.generator;  // "kiln_softmax"
  const std::string file = a.out.empty() ? gen.substr(5) + ".schedule.h" : a.out;
  const std::string function =
      a.function.empty() ? "apply_schedule_" + gen + (target.has_gpu_feature() ? "_cuda" : "_cpu") : a.function;
  std::ofstream f(file);
  f << autoschedule::schedule_header(function, o.source, target,
                                     "Schedule for " + gen + " by the Kiln autoscheduler (kiln autoschedule)");
  f.close();
  if (!f) user_error("autoschedule: cannot write ", file, "; pass -o FILE in a writable folder");
  std::cout << gen << ": predicted " << o.predicted_s * 1e3 << " ms"
            << (o.tuned ? " (tuned entry, measured " + std::to_string(o.measured_ms) + " ms)" : " (cost model)")
            << ", searched in " << o.search_ms << " ms; wrote " << file << " (" << function << ")\n";
  return 0;
}

}  // namespace kiln::cli
