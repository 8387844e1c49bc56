#include "lower/aot.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "graph/passes/lift_constants.h"
#include "lower/aot_files.h"
#include "lower/kernel.h"
#include "lower/scheduler.h"
#include "lower/target.h"

namespace kiln {

namespace {

void check_c_identifier(const std::string& name) {
  bool ok = !name.empty() && std::isalpha(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) {
    user_error("compile_aot: function name '", name,
               "' must be a C identifier (a letter, then letters, digits or '_')");
  }
}

// Creates the folder and proves it writable before minutes of compilation, so a typo in
// the path fails at once with the path in the message.
void prepare_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    user_error("compile_aot: cannot create the output folder '", dir, "'",
               ec ? ": " + ec.message() : std::string(": a file of that name exists"),
               "; pass a folder you can write to");
  }
  std::string probe = dir + "/.kiln_write_test";
  bool writable = std::ofstream(probe).good();
  fs::remove(probe, ec);
  if (!writable) {
    user_error("compile_aot: the output folder '", dir, "' is not writable; pass a folder you can write to");
  }
}

std::vector<AotArgument> entry_point_arguments(const Graph& g, size_t num_inputs) {
  std::vector<AotArgument> args;
  for (size_t k = 0; k < g.inputs().size(); ++k) {
    const Node& n = g.node(g.inputs()[k]);
    args.push_back({k < num_inputs ? AotArgument::Kind::Input : AotArgument::Kind::Weight, n.name, "", n.meta});
  }
  // lower_to_halide names the outputs output_<k>.
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    args.push_back({AotArgument::Kind::Output, "output_" + std::to_string(o), "", g.node(g.outputs()[o]).meta});
  }
  return args;
}

}  // namespace

AotArtifacts compile_aot(const Graph& graph, const std::string& target_spec,
                         const std::string& output_dir, const std::string& function_name,
                         const AotOptions& options) {
  check_c_identifier(function_name);
  Halide::Target target = parse_target(target_spec);
  prepare_output_dir(output_dir);

  LiftedGraph lifted;
  if (options.weights == AotWeights::Inputs) {
    lifted = lift_constants(graph);
  } else {
    lifted.graph = graph;
  }
  const Graph& g = lifted.graph;

  AotArtifacts a;
  a.function_name = function_name;
  a.arguments = entry_point_arguments(g, graph.inputs().size());
  const std::string prefix = output_dir + "/" + function_name;
  a.static_library = prefix + ".a";
  a.header = prefix + ".h";
  a.stmt = prefix + ".stmt";

  check_scheduler_name(options.scheduler, "compile_aot: AotOptions::scheduler");
  const bool gpu = target_has_gpu(target);
  const std::string scheduler = resolve_default_scheduler(options.scheduler, gpu);
  LoweredGraph lowered = lower_and_schedule(g, target, make_schedule_fn(scheduler, g));
  with_halide_errors("compiling ahead of time for " + target.to_string(), [&] {
    // Halide writes a static library from inside a temporary folder it chdir()s to, which
    // is the whole process's working directory: two such writes at once fail ("chdir()
    // failed") or write into each other's folder. kiln's own are one at a time.
    static std::mutex static_library_writes;
    std::lock_guard<std::mutex> lock(static_library_writes);
    lowered.pipeline().compile_to(
        {{Halide::OutputFileType::static_library, a.static_library},
         {Halide::OutputFileType::c_header, a.header},
         {Halide::OutputFileType::stmt, a.stmt}},
        lowered.arguments(), function_name, target);
  });

  std::vector<std::string> c_names = c_parameter_names(a.header, function_name);
  KILN_CHECK(c_names.size() == a.arguments.size(), "the header of ", function_name, " declares ",
             c_names.size(), " parameters, expected ", a.arguments.size());
  for (size_t i = 0; i < c_names.size(); ++i) a.arguments[i].c_name = c_names[i];

  if (!lifted.constants.empty()) {
    a.weights = prefix + ".weights";
    a.weights_header = prefix + "_weights.h";
    write_weights_file(a.weights, lifted.constants);
    write_text_file(a.weights_header, weights_header_text(function_name, a.arguments));
  }
  a.readme = output_dir + "/README.md";
  write_text_file(a.readme, aot_readme_text(function_name, target, options, a));
  log("aot", "wrote " + prefix + ".{a,h,stmt}" + (a.weights.empty() ? "" : ", " + a.weights) +
                 " and README.md for " + target.to_string());
  return a;
}

}  // namespace kiln
