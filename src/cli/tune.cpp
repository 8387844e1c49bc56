// kiln tune: the Kiln autoscheduler's best candidates for one kernel-library generator,
// each compiled and timed on this machine (its CPU, or its GPU for a CUDA target) at the
// generator's estimate sizes; the fastest
// goes into the tuning database, where the Kiln plugin (kiln_add_kernel_library(...
// SCHEDULE Kiln), kiln autoschedule) finds it.
#include <cstdio>
#include <iostream>
#include <memory>

#include "autoschedule.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/generator_args.h"
#include "core/device.h"
#include "core/error.h"
#include "kernel_spec.h"
#include "kernel_timing.h"
#include "tuner.h"

namespace kiln::cli {

namespace {

struct Args {
  GeneratorArg generator;
  std::string target = "host";
  double budget_s = 60;
  int candidates = 8;
  int reps = 10;
  std::string db;
};

const char* kOptions =
    "options: --target host|host-cuda|<Halide target>, --budget-s S, --candidates N, --reps N, --db PATH";

Args parse(const std::vector<std::string>& args) {
  Args a;
  bool have_generator = false;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) user_error("tune: ", args[i], " needs a value");
      return args[++i];
    };
    const std::string& opt = args[i];
    if (opt == "--target") a.target = value();
    else if (opt == "--budget-s") a.budget_s = seconds_option("tune", opt, value(), false);
    else if (opt == "--candidates") a.candidates = count_option("tune", opt, value(), 1);
    else if (opt == "--reps") a.reps = count_option("tune", opt, value(), 1);
    else if (opt == "--db") a.db = value();
    else if (!opt.empty() && opt[0] == '-') user_error("tune: unknown option '", opt, "'; ", kOptions);
    else if (have_generator) user_error("tune: one generator at a time, not '", opt, "' too");
    else a.generator = parse_generator_arg(opt, "tune"), have_generator = true;
  }
  if (!have_generator) user_error("tune: no generator; usage: kiln tune <generator>[:param=value...] ", kOptions);
  return a;
}

void print_summary(const autoschedule::TuneResult& r, const std::string& path) {
  std::fprintf(stderr, "  %-3s %12s %12s %12s  %s\n", "#", "measured", "again", "predicted", "knobs");
  for (size_t i = 0; i < r.measured.size(); ++i) {
    const autoschedule::Measurement& m = r.measured[i];
    char measured[32] = "failed", again[32] = "";
    if (m.trial.ms > 0) std::snprintf(measured, sizeof measured, "%.4g ms", m.trial.ms);
    if (m.ok && !m.rounds.empty()) std::snprintf(again, sizeof again, "%.4g ms", m.confirmed_ms);
    std::string notes = i == 0 ? "  (cost model's choice)" : "";
    if (int(i) == r.winner) notes += "  <- saved";
    if (!m.ok) notes += "  " + m.error.substr(0, 120);
    std::fprintf(stderr, "  %-3zu %12s %12s %9.4g ms  %s%s\n", i, measured, again, m.candidate.predicted_s * 1e3,
                 m.candidate.knobs.empty() ? "(no knobs)" : m.candidate.knobs.str().c_str(), notes.c_str());
  }
  if (r.not_tried > 0) std::fprintf(stderr, "  (%d more candidates not tried: budget spent)\n", r.not_tried);
  if (r.rounds > 0) std::fprintf(stderr, "  (again: the finalists' median over %d interleaved rounds)\n", r.rounds);
  std::printf("%s: best %.4g ms measured (predicted %.4g ms) of %zu candidates in %.1f s; saved to %s\n",
              r.entry.generator.c_str(), r.entry.measured_ms, r.entry.predicted_ms, r.measured.size(), r.elapsed_s,
              path.c_str());
}

}  // namespace

int tune(const std::vector<std::string>& argv) {
  const Args a = parse(argv);
  const Halide::Target target = parse_target(a.target, "tune");
  if (target.has_gpu_feature() && !target.has_feature(Halide::Target::CUDA)) {
    user_error("tune: the Kiln autoscheduler plans CPU and CUDA targets, not ", target.to_string());
  }
  if (target.has_feature(Halide::Target::CUDA) && !cuda_available()) {
    user_error("tune: --target ", a.target, " times its candidates on a CUDA GPU, and none was found here; ",
               "tune on the machine the kernels will run on");
  }
  const kernels::KernelSpec spec = kernels::make_spec(a.generator.name, a.generator.params);
  // Fail before timing anything if the result could not be saved.
  autoschedule::TuningDb db = autoschedule::TuningDb::load(autoschedule::tuning_db_path(a.db));
  if (!db.warning().empty()) {
    user_error("tune: the tuning database ", db.path(), " cannot be used (", db.warning(),
               "); move it away or pass --db PATH");
  }
  const autoschedule::MachineModel machine = autoschedule::machine_for(target, {});

  auto measure = [&](const autoschedule::Knobs& knobs, double seconds_left) {
    kernels::DirectKernel k = kernels::build_direct(spec);
    const autoschedule::SearchResult s = autoschedule::schedule_pipeline(k.lowered.pipeline(), target, machine, &knobs);
    auto timer = std::make_shared<kernels::KernelTimer>(std::move(k), target);
    const kernels::KernelTiming t = timer->time(a.reps, std::max(0.0, seconds_left));
    // The first pass takes the fastest run (on a machine shared with other work, the one
    // least disturbed by it); the finalists' rounds take medians, as bench-kernels reports.
    const int reps = a.reps;
    // Rounds follow one another, so the threads are awake: a short warm-up will do.
    return autoschedule::Trial{t.min_ms, s.source, [timer, reps] { return timer->time(reps, 1.0, 0.02).median_ms; }};
  };
  kernels::DirectKernel throwaway = kernels::build_direct(spec);
  autoschedule::TuneOptions options;
  options.candidates = a.candidates;
  options.budget_s = a.budget_s;
  options.progress = &std::cerr;
  const autoschedule::TuneResult r =
      autoschedule::tune(throwaway.lowered.pipeline(), spec.generator, target, machine, options, measure);
  // Read again: another tuning run may have saved entries while this one was timing.
  db = autoschedule::TuningDb::load(db.path());
  db.put(r.entry);
  db.save();
  print_summary(r, db.path());
  return 0;
}

}  // namespace kiln::cli
