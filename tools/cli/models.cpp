// kiln models: every registered model eager and compiled on its seeded input, checked
// against eager and the reference interpreter (f64 references of every op), and timed;
// with --scheduler both, compiled once by the rules and once by Kiln, side by side.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <regex>

#include "cli/bench_report.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "runtime/timing.h"
#include "kiln.h"
#include "models/models.h"

namespace kiln::cli {

namespace {

struct ModelsArgs {
  std::string filter;
  int reps = 10;
  std::vector<std::string> schedulers = {"default"};
  bool json = false;  // JSON lines on stdout (bench_report.h's format), the table on stderr
};

int models(const ModelsArgs& a) {
  std::FILE* table = a.json ? stderr : stdout;
  const auto selected = name_filter("models", a.filter, models::model_names(), "model");
  bool all_ok = true;
  // Per scheduler after the first: the product of (first's ms / this one's ms), for the geomean.
  std::vector<double> log_ratio(a.schedulers.size(), 0.0);
  int timed = 0;
  std::fprintf(table, "%-10s %-9s %-6s %-12s %-12s %-12s %-12s %-10s %-10s\n", "model", "scheduler", "match",
               "abs(c,e)", "rel(c,e)", "abs(c,ref)", "rel(c,ref)", "eager_ms", "compiled_ms");
  for (const std::string& name : models::model_names()) {
    if (!selected(name)) continue;
    models::Model m = models::make_model(name);
    Tensor eager = m.forward(m.inputs)[0];
    Tensor ref = interpret(trace(m.forward, m.inputs), m.inputs, InterpretMode::Reference)[0];
    // Eager and every compiled version, timed in the same interleaved rounds.
    std::vector<std::function<Tensor()>> runs = {[&] { return m.forward(m.inputs)[0]; }};
    std::vector<std::string> checks;
    for (const std::string& scheduler : a.schedulers) {
      CompileOptions opts;
      opts.scheduler = scheduler;
      opts.name = name;
      auto compiled = compile(m.forward, opts);
      Tensor out = compiled(m.inputs)[0];
      const bool ok = allclose(out, eager, 1e-4, 1e-5) && allclose(out, ref, 1e-4, 1e-5);
      all_ok = all_ok && ok;
      char text[128];
      std::snprintf(text, sizeof text, "%-6s %-12.3g %-12.3g %-12.3g %-12.3g", ok ? "yes" : "NO",
                    max_abs_diff(out, eager), max_rel_diff(out, eager, 1e-3), max_abs_diff(out, ref),
                    max_rel_diff(out, ref, 1e-3));
      checks.push_back(text);
      runs.push_back([&m, compiled] { return compiled(m.inputs)[0]; });
    }
    const std::vector<double> ms = timing::interleaved_median_ms(runs, a.reps, 1);
    const double eager_ms = ms[0];
    const std::vector<double> compiled_ms(ms.begin() + 1, ms.end());
    if (a.json) print_bench_json({"model_" + name, "kiln-eager", "cpu", eager_ms, a.reps});
    for (size_t s = 0; s < a.schedulers.size(); ++s) {
      std::fprintf(table, "%-10s %-9s %s %-10.3f %-10.3f\n", name.c_str(), a.schedulers[s].c_str(), checks[s].c_str(),
                   eager_ms, compiled_ms[s]);
      if (a.json) print_bench_json({"model_" + name, compiled_impl(a.schedulers[s]), "cpu", compiled_ms[s], a.reps});
    }
    for (size_t s = 1; s < compiled_ms.size(); ++s) log_ratio[s] += std::log(compiled_ms[0] / compiled_ms[s]);
    ++timed;
  }
  for (size_t s = 1; s < a.schedulers.size() && timed > 0; ++s) {
    std::fprintf(table, "geomean %s / %s over %d models: %.2fx (> 1: %s faster)\n", a.schedulers[0].c_str(),
                 a.schedulers[s].c_str(), timed, std::exp(log_ratio[s] / timed), a.schedulers[s].c_str());
  }
  return all_ok ? 0 : 1;
}

}  // namespace

void add_models(CLI::App& kiln, int* status) {
  auto a = std::make_shared<ModelsArgs>();
  CLI::App* c = kiln.add_subcommand(
      "models", "check and time the registered models eager, compiled and against the f64 reference");
  c->footer("Each of seed, mlp, gpt_block, resnet18 runs eager, compiled and through the f64 reference interpreter; "
            "the errors and times are printed, and the exit status is 1 where they disagree.\n");
  c->add_option("--filter", a->filter, "only the models whose name matches")->type_name("REGEX");
  add_count_option(c, "--reps", &a->reps, 1, "timed runs of each (default 10)");
  add_scheduler_option(c, &a->schedulers);
  c->add_flag("--json", a->json, "one JSON object per line on stdout, the table on stderr");
  c->callback([a, status] { *status = models(*a); });
}

}  // namespace kiln::cli
