// The importer's pieces shared by import.cpp (files, tensors, the graph walk) and ops.cpp
// (one converter per ONNX operator).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnx/onnx.h"
#include "ops/api.h"

namespace kiln::onnx {

// "node 'conv1' (Conv)": how errors name a node.
std::string node_name(const ::onnx::NodeProto& n);

// A node's attributes, by name, with the errors that name the node.
class NodeAttrs {
 public:
  explicit NodeAttrs(const ::onnx::NodeProto& n);
  bool has(const std::string& name) const { return attrs_.count(name) > 0; }
  int64_t i(const std::string& name, int64_t fallback) const;
  int64_t i(const std::string& name) const;
  float f(const std::string& name, float fallback) const;
  std::string s(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> ints(const std::string& name, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> floats(const std::string& name) const;
  const ::onnx::TensorProto& t(const std::string& name) const;
  const ::onnx::AttributeProto& raw(const std::string& name) const;

 private:
  const ::onnx::AttributeProto& get(const std::string& name, ::onnx::AttributeProto::AttributeType type) const;
  const ::onnx::NodeProto& node_;
  std::map<std::string, const ::onnx::AttributeProto*> attrs_;
};

// One node's conversion: its inputs (nullopt where the model leaves an optional input
// out), attributes and the model's opset; it returns the node's outputs (an undefined
// Tensor for an optional output it does not compute).
struct NodeContext {
  const ::onnx::NodeProto& node;
  const NodeAttrs& attrs;
  const std::vector<std::optional<Tensor>>& inputs;
  int64_t opset;
  std::string model_dir;

  // Input k, which the operator requires.
  const Tensor& in(size_t k) const;
  bool has(size_t k) const { return k < inputs.size() && inputs[k].has_value(); }
  // The values of input k, which must be known while the model is traced (an initializer,
  // a Constant, or computed from them and from shapes): a Reshape's shape, say.
  std::vector<int64_t> ints(size_t k) const;
  std::vector<double> doubles(size_t k) const;
  [[noreturn]] void unsupported(const std::string& what) const;
  [[noreturn]] void invalid(const std::string& what) const;
};

using Converter = std::function<std::vector<Tensor>(const NodeContext&)>;

// The converters, by operator (ai.onnx domain).
const std::map<std::string, Converter>& converters();

// TensorProto -> a host tensor (raw_data or the typed fields, external data relative to
// `model_dir`); `who` names the tensor in errors.
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& model_dir, const std::string& who);
// ONNX's element type as kiln's, or Unsupported naming `who`.
DType dtype_from_onnx(int32_t elem_type, const std::string& who);

}  // namespace kiln::onnx
