// kiln aot: a registered model, traced on its seeded example inputs, exported as a static
// library with a C entry point, a header, its weights and a README (see lower/aot.h).
#include <cstdio>

#include "cli/commands.h"
#include "kiln.h"
#include "models/models.h"

namespace kiln::cli {

namespace {
const char* kAotOptions =
    "options: -o DIR (required), --target host|host-cuda|<Halide target> (default host), "
    "--name C_IDENTIFIER (default: the model's name), --embed-weights, --scheduler default|Kiln|rules "
    "(default: Kiln)";

std::string known_models() {
  std::string s;
  for (const std::string& n : models::model_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}
}  // namespace

int aot(const std::vector<std::string>& args) {
  std::string model, target = "host", dir, name;
  AotOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if ((a == "-o" || a == "--output") && has_value) dir = args[++i];
    else if (a == "--target" && has_value) target = args[++i];
    else if (a == "--name" && has_value) name = args[++i];
    else if (a == "--embed-weights") options.weights = AotWeights::Embedded;
    else if (a == "--scheduler" && has_value) options.scheduler = args[++i];
    else if (!a.empty() && a[0] != '-' && model.empty()) model = a;
    else user_error("aot: unexpected argument '", a, "'; usage: kiln aot <model> -o DIR; ", kAotOptions);
  }
  if (model.empty()) user_error("aot: name a model (", known_models(), "); usage: kiln aot <model> -o DIR");
  if (dir.empty()) user_error("aot: no output folder; pass -o DIR");

  models::Model m = models::make_model(model);  // lists the models when the name is unknown
  options.description = m.name + ": " + m.description;
  CompileOptions trace_options;
  trace_options.name = m.name;
  Graph graph = trace(m.forward, m.inputs, trace_options);
  AotArtifacts a = compile_aot(graph, target, dir, name.empty() ? m.name : name, options);

  std::printf("kiln aot: %s -> %s\n", m.name.c_str(), a.static_library.c_str());
  std::printf("  %s\n", a.header.c_str());
  if (!a.weights.empty()) std::printf("  %s\n  %s\n", a.weights.c_str(), a.weights_header.c_str());
  std::printf("  %s\n", a.readme.c_str());
  return 0;
}

}  // namespace kiln::cli
