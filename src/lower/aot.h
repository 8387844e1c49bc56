// Ahead-of-time export: a graph becomes a static library and a C header, for the host or
// for CUDA (which needs no GPU to build). The entry point is plain C:
//   int <name>(halide_buffer_t *in0, ..., halide_buffer_t *weight_0, ...,
//              halide_buffer_t *output_0, ...);  // 0 on success, a halide_error_code_t otherwise
// The tensors the graph captured (weights, biases, running statistics, masks) are
// arguments after the inputs by default, written to <name>.weights with a C99 loader in
// <name>_weights.h; AotWeights::Embedded bakes them into the library instead.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln {

enum class AotWeights {
  Inputs,    // captured tensors of rank >= 1 are entry point arguments (0-d ones stay embedded)
  Embedded,  // every captured tensor is a constant inside the library
};

struct AotOptions {
  AotWeights weights = AotWeights::Inputs;
  // One line for the README in the output folder (what the model is).
  std::string description;
  // Who schedules the pipeline, as CompileOptions::scheduler: "default" (Kiln), "Kiln"
  // or "rules". Kiln plans for the graph's
  // sizes (a dynamic dim: kDynamicDimEstimate).
  std::string scheduler = "default";
};

// One argument of the entry point, in order.
struct AotArgument {
  enum class Kind { Input, Weight, Output };
  Kind kind;
  std::string name;    // the graph's name for it
  std::string c_name;  // the C parameter in the header (_<name>_buffer, made unique by Halide)
  TensorMeta meta;   // kiln order: dim 0 outermost (halide_buffer_t's dim[0] is the last)
};

struct AotArtifacts {
  std::string function_name;
  std::string static_library;  // <dir>/<name>.a (Halide's runtime included)
  std::string header;          // <dir>/<name>.h, C99, with Halide's runtime API
  std::string stmt;            // <dir>/<name>.stmt: the loop nests, for reading
  std::string readme;          // <dir>/README.md: signature, arguments, how to link
  std::string weights;         // <dir>/<name>.weights, when there are lifted weights
  std::string weights_header;  // <dir>/<name>_weights.h: C99 loader and a run helper
  std::vector<AotArgument> arguments;
};

AotArtifacts compile_aot(const Graph& graph, const std::string& target,
                         const std::string& output_dir, const std::string& function_name,
                         const AotOptions& options = {});

}  // namespace kiln
