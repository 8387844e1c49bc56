// kiln models: every registered model eager and compiled on its seeded input, checked
// against eager and the reference interpreter (f64 references of every op), and timed.
#include <chrono>
#include <cstdio>
#include <regex>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/timing.h"
#include "kiln.h"
#include "models/models.h"

namespace kiln::cli {

int models(const std::vector<std::string>& args) {
  std::string filter;
  int reps = 10;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--filter" && i + 1 < args.size()) filter = args[++i];
    else if (args[i] == "--reps" && i + 1 < args.size()) reps = count_option("models", "--reps", args[++i], 1);
    else user_error("models: unknown option '", args[i], "'; options: --filter REGEX, --reps N");
  }
  std::regex re(filter.empty() ? ".*" : filter);
  bool all_ok = true;
  std::printf("%-10s %-6s %-12s %-12s %-12s %-12s %-10s %-10s\n", "model", "match", "abs(c,e)", "rel(c,e)",
              "abs(c,ref)", "rel(c,ref)", "eager_ms", "compiled_ms");
  for (const std::string& name : apps::model_names()) {
    if (!std::regex_search(name, re)) continue;
    apps::Model m = apps::make_model(name);
    auto compiled = compile(m.forward);
    Tensor eager = m.forward(m.inputs)[0];
    Tensor out = compiled(m.inputs)[0];
    Graph g = trace(m.forward, m.inputs);
    Tensor ref = interpret(g, m.inputs, InterpretMode::Reference)[0];
    double ace = max_abs_diff(out, eager), rce = max_rel_diff(out, eager, 1e-3);
    double acr = max_abs_diff(out, ref), rcr = max_rel_diff(out, ref, 1e-3);
    bool ok = allclose(out, eager, 1e-4, 1e-5) && allclose(out, ref, 1e-4, 1e-5);
    all_ok = all_ok && ok;
    double eager_ms = apps::median_ms([&] { return m.forward(m.inputs)[0]; }, reps, 1);
    double compiled_ms = apps::median_ms([&] { return compiled(m.inputs)[0]; }, reps, 1);
    std::printf("%-10s %-6s %-12.3g %-12.3g %-12.3g %-12.3g %-10.3f %-10.3f\n", name.c_str(), ok ? "yes" : "NO",
                ace, rce, acr, rcr, eager_ms, compiled_ms);
  }
  return all_ok ? 0 : 1;
}

}  // namespace kiln::cli
