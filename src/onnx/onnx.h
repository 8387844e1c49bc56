// ONNX models in: kiln::onnx::load reads a model file (its initializers as weights,
// external data files too) into a function over kiln::Tensor made of kiln's ops, and the
// Graph it traces to, ready for compile, grad and kiln aot. Parsing uses ONNX's own
// protobuf definitions (libonnx), never a hand-written parser.
//
//   kiln::onnx::Model m = kiln::onnx::load("resnet50.onnx");
//   std::vector<kiln::Tensor> out = kiln::compile(m.fn, m.compile_options())(inputs);
//
// An operator, attribute or dtype kiln does not support is a kiln::onnx::Unsupported
// error (a kiln::Error) naming the node, the operator and what kiln supports; a malformed
// or truncated file is a kiln::Error, never a crash.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "runtime/compile.h"

namespace kiln::onnx {

// What kiln lacks to run a model (an operator, attribute value or dtype), as opposed to
// a model that is wrong.
class Unsupported : public Error {
 public:
  using Error::Error;
};

struct LoadOptions {
  // Sizes for dims the model names (dim_param, e.g. "batch") in the traced graph; 1 for
  // any not given. compile() specializes on each call's sizes anyway.
  std::map<std::string, int64_t> dim_sizes;
  // Inputs bound to these values at load time, as if they were initializers: those whose
  // values shape the graph (a Reshape's shape, a Slice's bounds), which kiln needs while
  // it traces. The model then takes its other inputs only.
  std::map<std::string, Tensor> constant_inputs;
};

struct Model {
  std::string path;
  int64_t opset = 0;  // of the default (ai.onnx) domain
  std::vector<std::string> input_names, output_names;
  std::vector<TensorMeta> inputs;  // at LoadOptions::dim_sizes for named dims
  // (input, dim) of each dim the model names, with its name.
  std::vector<std::pair<std::pair<int, int>, std::string>> named_dims;
  // The model as kiln ops: eager on concrete tensors, traced by compile().
  TracedFn fn;
  // fn traced at `inputs`.
  Graph graph;
  // Input names for graph listings, the model's name for logs.
  CompileOptions compile_options() const;
};

Model load(const std::string& path, const LoadOptions& options = {});

// A TensorProto file (an ONNX test's input_0.pb, say) as a kiln tensor on the host.
Tensor load_tensor(const std::string& path);

}  // namespace kiln::onnx
