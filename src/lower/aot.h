// Ahead-of-time export: a graph becomes a static library and a C header, for the host or
// for CUDA (which needs no GPU to build). The entry point is plain C:
//   int <name>(halide_buffer_t *in0, ..., halide_buffer_t *out0, ...);  // 0 on success
#pragma once

#include <string>

#include "graph/graph.h"

namespace kiln {

struct AotArtifacts {
  std::string function_name;
  std::string static_library;  // <dir>/<name>.a
  std::string header;          // <dir>/<name>.h
  std::string stmt;            // <dir>/<name>.stmt: the loop nests, for reading
};

AotArtifacts compile_aot(const Graph& graph, const std::string& target,
                         const std::string& output_dir, const std::string& function_name);

}  // namespace kiln
