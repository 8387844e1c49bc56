#include "lower/aot.h"

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "lower/kernel.h"
#include "lower/target.h"

namespace kiln {

AotArtifacts compile_aot(const Graph& graph, const std::string& target_spec,
                         const std::string& output_dir, const std::string& function_name) {
  if (function_name.empty() || !std::isalpha(static_cast<unsigned char>(function_name[0]))) {
    user_error("compile_aot: function name '", function_name,
               "' must be a C identifier starting with a letter");
  }
  for (char c : function_name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      user_error("compile_aot: function name '", function_name, "' must be a C identifier");
    }
  }
  Halide::Target target = parse_target(target_spec);
  std::error_code ec;
  std::filesystem::create_directories(output_dir, ec);
  if (ec) user_error("compile_aot: cannot create '", output_dir, "': ", ec.message());

  LoweredGraph lowered = lower_and_schedule(graph, target);
  std::string prefix = output_dir + "/" + function_name;
  with_halide_errors("compiling ahead of time for " + target.to_string(), [&] {
    lowered.pipeline().compile_to(
        {{Halide::OutputFileType::static_library, prefix + ".a"},
         {Halide::OutputFileType::c_header, prefix + ".h"},
         {Halide::OutputFileType::stmt, prefix + ".stmt"}},
        lowered.arguments(), function_name, target);
  });
  log("aot", "wrote " + prefix + ".{a,h,stmt} for " + target.to_string());
  return {function_name, prefix + ".a", prefix + ".h", prefix + ".stmt"};
}

}  // namespace kiln
