// kiln aot: a registered model, traced on its seeded example inputs, or an ONNX model,
// exported as a static library with a C entry point, a header, its weights and a README
// (see lower/aot.h).
#include <CLI/CLI.hpp>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "kiln.h"
#include "models/models.h"
#include "onnx/onnx.h"

namespace kiln::cli {

namespace {

struct AotArgs {
  std::string model, target = "host", dir, name;
  AotOptions options;
};

std::string known_models() {
  std::string s;
  for (const std::string& n : models::model_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

bool is_onnx(const std::string& model) {
  return model.size() > 5 && model.compare(model.size() - 5, 5, ".onnx") == 0;
}

// An ONNX model's file name as a C identifier: "resnet-50.onnx" -> "resnet_50".
std::string c_name(const std::string& path) {
  std::string s;
  for (char c : std::filesystem::path(path).stem().string()) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "model_" + s;
  return s;
}

int aot_onnx(const AotArgs& args) {
  AotOptions options = args.options;
  const onnx::Model m = onnx::load(args.model);
  options.description = args.model + " (ONNX, opset " + std::to_string(m.opset) + ")";
  const std::string name = args.name.empty() ? c_name(args.model) : args.name;
  AotArtifacts a = compile_aot(m.graph, args.target, args.dir, name, options);
  std::printf("kiln aot: %s -> %s\n  %s\n", args.model.c_str(), a.static_library.c_str(), a.header.c_str());
  if (!a.weights.empty()) std::printf("  %s\n  %s\n", a.weights.c_str(), a.weights_header.c_str());
  std::printf("  %s\n", a.readme.c_str());
  return 0;
}

int aot(const AotArgs& args) {
  if (is_onnx(args.model)) return aot_onnx(args);
  AotOptions options = args.options;
  models::Model m = models::make_model(args.model);  // lists the models when the name is unknown
  options.description = m.name + ": " + m.description;
  CompileOptions trace_options;
  trace_options.name = m.name;
  Graph graph = trace(m.forward, m.inputs, trace_options);
  AotArtifacts a = compile_aot(graph, args.target, args.dir, args.name.empty() ? m.name : args.name, options);

  std::printf("kiln aot: %s -> %s\n", m.name.c_str(), a.static_library.c_str());
  std::printf("  %s\n", a.header.c_str());
  if (!a.weights.empty()) std::printf("  %s\n  %s\n", a.weights.c_str(), a.weights_header.c_str());
  std::printf("  %s\n", a.readme.c_str());
  return 0;
}

}  // namespace

void add_aot(CLI::App& kiln, int* status) {
  auto a = std::make_shared<AotArgs>();
  CLI::App* c = kiln.add_subcommand("aot",
                                    "export a registered model or an ONNX model as a static library with a C entry point");
  c->footer("Writes the library, its header, its weights with a C loader, and a README.\n");
  c->add_option("model", a->model, "the model: " + known_models() + ", or a .onnx file")
      ->type_name("<model>|FILE.onnx")
      ->required();
  c->add_option("-o,--output", a->dir, "the folder to write")->type_name("DIR")->required();
  c->add_option("--target", a->target, "host (default), host-cuda or a Halide target string")
      ->type_name("host|host-cuda|<Halide target>");
  c->add_option("--name", a->name, "the C entry point (default: the model's name)")->type_name("C_IDENTIFIER");
  c->add_flag_callback("--embed-weights", [a] { a->options.weights = AotWeights::Embedded; },
                       "the weights inside the library, not in a file beside it");
  c->add_option("--scheduler", a->options.scheduler, "default (Kiln), Kiln or rules")
      ->type_name("default|Kiln|rules");
  c->callback([a, status] { *status = aot(*a); });
}

}  // namespace kiln::cli
