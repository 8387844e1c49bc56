#include "cli/generator_args.h"

#include <algorithm>

#include "core/error.h"
#include "kiln.h"
#include "lower/scheduler.h"
#include "lower/target.h"

namespace kiln::cli {

GeneratorArg parse_generator_arg(const std::string& arg, const std::string& command) {
  GeneratorArg g;
  size_t start = 0;
  for (size_t end; start <= arg.size(); start = end + 1) {
    end = arg.find(':', start);
    if (end == std::string::npos) end = arg.size();
    const std::string part = arg.substr(start, end - start);
    if (g.name.empty()) {
      g.name = part;
    } else {
      const size_t eq = part.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
        user_error(command, ": '", arg, "': generator parameters are written <generator>:<name>=<value> ",
                   "(unary:op=gelu:dtype=f16), not '", part, "'");
      }
      g.params[part.substr(0, eq)] = part.substr(eq + 1);
    }
  }
  if (g.name.empty()) user_error(command, ": no generator given; `kiln bench-kernels --filter .` lists them");
  return g;
}

bool is_model_name(const std::string& name) {
  const std::vector<std::string> models = models::model_names();
  if (std::find(models.begin(), models.end(), name) == models.end()) return false;
  for (const kernels::GeneratorInfo& g : kernels::generators()) {
    if (g.name == name || g.name == "kiln_" + name) return false;
  }
  return true;
}

void check_generator_or_model(const std::string& name, const std::string& command) {
  std::string generators, models;
  for (const kernels::GeneratorInfo& g : kernels::generators()) {
    if (g.name == name || g.name == "kiln_" + name) return;
    generators += (generators.empty() ? "" : ", ") + g.name;
  }
  for (const std::string& m : models::model_names()) models += (models.empty() ? "" : ", ") + m;
  user_error(command, ": '", name, "' is neither a kernel generator (", generators, ") nor a model (", models, ")");
}

GeneratorOrModel generator_or_model(const std::vector<std::string>& positional, const std::string& model_option,
                                    const std::string& command, const std::string& usage) {
  GeneratorOrModel g;
  if (positional.empty() && model_option.empty()) user_error(command, ": no generator or model; usage: ", usage);
  if (positional.size() + (model_option.empty() ? 0 : 1) > 1) {
    user_error(command, ": one generator or model at a time, not '", positional.back(), "' too");
  }
  if (!model_option.empty()) {
    g.model = model_option;
  } else if (is_model_name(positional[0])) {
    g.model = positional[0];
  } else {
    g.generator = parse_generator_arg(positional[0], command);
    check_generator_or_model(g.generator.name, command);
  }
  return g;
}

ModelPipeline model_pipeline(const std::string& name) {
  ModelPipeline p{models::make_model(name), Graph(), SizeEstimates()};
  CompileOptions options;
  options.name = p.model.name;
  p.graph = trace(p.model.forward, p.model.inputs, options);
  p.sizes = estimates_from(p.graph, p.model.inputs);
  return p;
}

Halide::Target parse_target(const std::string& s, const std::string& command) {
  if (s == "host") return Halide::get_host_target();
  // One meaning of host-cuda everywhere (kiln::parse_target): the GPU's own capability,
  // at least 80. kiln tune keys its entries by it, so bench-kernels and the plugin must agree.
  if (s.rfind("host-cuda", 0) == 0) return kiln::parse_target(s);
  // Halide 21 throws on some malformed strings instead of answering false (std::stoi's
  // std::invalid_argument for "vector_bits_xx"), and its Target constructor rejects some
  // that validate_target_string accepts ("arm-64-linux-avx"): neither is a target.
  std::string why;
  try {
    if (Halide::Target::validate_target_string(s)) return Halide::Target(s);
  } catch (const Halide::Error& e) {
    why = e.what();
  } catch (const std::exception& e) {
    why = e.what();
  }
  user_error(command, ": --target '", s, "' is not a target", why.empty() ? "" : " (Halide: " + why + ")",
             "; use host or a Halide target string such as ", Halide::get_host_target().to_string());
}

}  // namespace kiln::cli
