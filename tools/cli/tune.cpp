// kiln tune: the Kiln autoscheduler's best candidates for one kernel-library generator,
// each compiled and timed on this machine (its CPU, or its GPU for a CUDA target) at the
// generator's estimate sizes, or for one registered model's forward pass on its example
// inputs; the fastest goes into the tuning database, where the Kiln plugin
// (kiln_add_kernel_library(... SCHEDULE Kiln), kiln autoschedule) and kiln's graph
// compiler (kiln::compile and kiln aot with the Kiln scheduler) find it.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

#include "autoscheduler/autoscheduler.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/generator_args.h"
#include "runtime/timing.h"
#include "core/device.h"
#include "core/error.h"
#include "kernel_spec.h"
#include "kernel_timing.h"
#include "kiln.h"
#include "lower/kernel.h"

namespace kiln::cli {

namespace {

struct Args {
  std::vector<std::string> positional;  // the generator or model, as given
  std::string model_option;             // --model NAME
  GeneratorArg generator;
  std::string model;  // or a registered model
  std::string target = "host";
  double budget_s = 60;
  int candidates = 8;
  int reps = 10;
  std::string db;
};

const char* kUsage = "kiln tune <generator>[:param=value...]|<model>|--model NAME [options]";

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
  if (r.control_ms > 0) {
    std::fprintf(stderr,
                 "  (the cost model's choice compiled again ran %.4g ms in the rounds, %.1f%% from the first copy: a "
                 "runner-up must be %.1f%% faster)\n",
                 r.control_ms, r.noise * 100, r.margin * 100);
  }
  std::printf("%s: best %.4g ms measured (predicted %.4g ms) of %zu candidates in %.1f s; saved to %s\n",
              r.entry.generator.c_str(), r.entry.measured_ms, r.entry.predicted_ms, r.measured.size(), r.elapsed_s,
              path.c_str());
}

// A candidate of a generator: its pipeline at the estimate sizes, on seeded random inputs,
// the same buffers for every candidate (where buffers lie moves a memory-bound kernel by
// 10%, kernel_timing.h: with buffers of their own, kiln_binary's candidates were ranked by
// their pages as much as by their loops).
autoschedule::TuneResult tune_generator(const Args& a, const Halide::Target& target,
                                        const autoschedule::MachineModel& machine,
                                        const autoschedule::TuneOptions& options) {
  const kernels::KernelSpec spec = kernels::make_spec(a.generator.name, a.generator.params);
  const auto data = std::make_shared<const kernels::KernelData>(spec);
  auto measure = [&](const autoschedule::Knobs& knobs, double seconds_left) {
    kernels::DirectKernel k = kernels::build_direct(spec);
    const autoschedule::SearchResult s = autoschedule::schedule_pipeline(k.lowered.pipeline(), target, machine, &knobs);
    auto timer = std::make_shared<kernels::KernelTimer>(std::move(k), target, data);
    const kernels::KernelTiming t = timer->time(a.reps, std::max(0.0, seconds_left));
    // The first pass takes the fastest run (on a machine shared with other work, the one
    // least disturbed by it); the finalists' rounds take medians, as bench-kernels reports.
    const int reps = a.reps;
    // Rounds follow one another, so the threads are awake: a short warm-up will do.
    return autoschedule::Trial{t.min_ms, s.source, [timer, reps] { return timer->time(reps, 1.0, 0.02).median_ms; }};
  };
  kernels::DirectKernel throwaway = kernels::build_direct(spec);
  return autoschedule::tune(throwaway.lowered.pipeline(), spec.generator, target, machine, options, measure);
}

// A candidate of a model: its forward pass compiled as kiln::compile compiles it with the
// Kiln scheduler and the candidate's knobs, run on the model's example inputs (on the GPU
// for a CUDA target, each run synchronized).
autoschedule::Trial measure_model(const ModelPipeline& m, const std::vector<Tensor>& inputs,
                                  const Halide::Target& target, const autoschedule::Knobs& knobs, int reps,
                                  double seconds_left) {
  std::string source;
  KilnScheduleOptions options;
  options.knobs = &knobs;
  auto kernel = std::make_shared<Kernel>(m.graph, target, [&](LoweredGraph& l, const Halide::Target& t) {
    source = apply_kiln_schedule(l, t, m.sizes, options).source;
  });
  auto run = [kernel, inputs] {
    for (const Tensor& t : kernel->run(inputs)) timing::sync(t);
  };
  const kernels::KernelTiming t =
      kernels::time_runs(run, reps, std::max(0.0, seconds_left), kernels::KernelTimer::kWarmSeconds);
  // As for a generator: the fastest run first, medians in the finalists' rounds.
  return autoschedule::Trial{t.min_ms, source, [run, reps] { return kernels::time_runs(run, reps, 1.0, 0.02).median_ms; }};
}

int tune(Args a) {
  const GeneratorOrModel what = generator_or_model(a.positional, a.model_option, "tune", kUsage);
  a.generator = what.generator;
  a.model = what.model;
  const Halide::Target target = parse_target(a.target, "tune");
  if (target.has_gpu_feature() && !target.has_feature(Halide::Target::CUDA)) {
    user_error("tune: the Kiln autoscheduler plans CPU and CUDA targets, not ", target.to_string());
  }
  if (target.has_feature(Halide::Target::CUDA) && !cuda_available()) {
    user_error("tune: --target ", a.target, " times its candidates on a CUDA GPU, and none was found here; ",
               "tune on the machine the kernels will run on");
  }
  // Fail before timing anything if the result could not be saved.
  autoschedule::TuningDb db = autoschedule::TuningDb::load(autoschedule::tuning_db_path(a.db));
  if (!db.warning().empty()) {
    user_error("tune: the tuning database ", db.path(), " cannot be used (", db.warning(),
               "); move it away or pass --db PATH");
  }
  std::cout << "tune: " << autoschedule::describe(db) << "\n";
  const autoschedule::MachineModel machine = autoschedule::machine_for(target, {});
  autoschedule::TuneOptions options;
  options.candidates = a.candidates;
  options.budget_s = a.budget_s;
  options.progress = &std::cerr;
  autoschedule::TuneResult r;
  bool fixed_funcs = false;
  if (!a.model.empty()) {
    const ModelPipeline m = model_pipeline(a.model);
    std::vector<Tensor> inputs = m.model.inputs;
    if (target.has_feature(Halide::Target::CUDA)) {
      for (Tensor& t : inputs) t = t.to(Device::cuda());
    }
    // The pipeline as the Kiln scheduler receives it, contractions fixed (conv2d with the
    // cost model's tiles, whose runner-ups are candidates too); its key, taken before they
    // were scheduled, is what a later compile of the model looks up.
    autoschedule::FixedFuncs fixed;
    const LoweredGraph throwaway = lower_and_schedule(m.graph, target, [&](LoweredGraph& l, const Halide::Target& t) {
      fixed = prepare_kiln_schedule_for_tuning(l, t, m.sizes, &options.fingerprint, &options.alternatives);
    });
    options.fixed = &fixed;
    fixed_funcs = !fixed.empty();
    r = autoschedule::tune(throwaway.pipeline(), m.model.name, target, machine, options,
                           [&](const autoschedule::Knobs& knobs, double seconds_left) {
                             return measure_model(m, inputs, target, knobs, a.reps, seconds_left);
                           });
  } else {
    r = tune_generator(a, target, machine, options);
  }
  // Read again: another tuning run may have saved entries while this one was timing.
  db = autoschedule::TuningDb::load(db.path());
  db.put(r.entry);
  db.save();
  print_summary(r, db.path());
  if (fixed_funcs) {
    std::printf("(predicted: the Funcs the search schedules; the contractions keep the rules' loops, "
                "timed but not predicted)\n");
  }
  return 0;
}

}  // namespace

void add_tune(CLI::App& kiln, int* status) {
  auto a = std::make_shared<Args>();
  CLI::App* c = kiln.add_subcommand(
      "tune",
      "time the Kiln autoscheduler's best candidates here and save the fastest");
  c->footer("Candidates run on this machine (its GPU for a CUDA target): a generator at its estimate sizes, a model's "
            "forward pass on its example inputs. The fastest goes into the tuning database, which kiln autoschedule, "
            "kiln::compile and kiln aot read.\n");
  add_generator_or_model_options(c, &a->positional, &a->model_option);
  c->add_option("--target", a->target, "host (default), host-cuda or a Halide target string")
      ->type_name("host|host-cuda|<Halide target>");
  add_seconds_option(c, "--budget-s", &a->budget_s, false, "time to spend timing candidates (default 60)");
  add_count_option(c, "--candidates", &a->candidates, 1, "candidates to time (default 8)");
  add_count_option(c, "--reps", &a->reps, 1, "runs per candidate (default 10)");
  c->add_option("--db", a->db, "the tuning database to update (default: $KILN_TUNING_DB, ./kiln_tuning.json, "
                               "~/.cache/kiln/tuning.json)")
      ->type_name("PATH");
  c->callback([a, status] { *status = tune(*a); });
}

}  // namespace kiln::cli
