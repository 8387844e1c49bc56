// kiln's graph IR, in the spirit of torch.fx: a list of nodes in topological order.
// Each node is a placeholder (a function input), a constant (a tensor captured while
// tracing) or an op from the registry applied to earlier nodes; each has a dtype, a
// (possibly symbolic) shape and a readable unique name. Outputs name nodes.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace kiln {

struct Node {
  int id = -1;
  std::string op;  // "placeholder", "constant", or a registered op name
  std::vector<int> inputs;
  Attrs attrs;
  TensorMeta meta;
  std::string name;
  Tensor constant;  // the value of a "constant" node

  bool is_placeholder() const { return op == "placeholder"; }
  bool is_constant() const { return op == "constant"; }
};

class Graph {
 public:
  // Builders. Each returns the new node's id; add_op checks and infers the output.
  int add_placeholder(const std::string& name, const TensorMeta& meta);
  int add_constant(const Tensor& value);
  int add_op(const std::string& op, const std::vector<int>& inputs, const Attrs& attrs = {});
  void set_outputs(const std::vector<int>& outputs);

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int id) const;
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  std::vector<TensorMeta> input_metas() const;
  std::vector<TensorMeta> output_metas() const;
  // Nodes that consume `id` (each once, in order).
  std::vector<int> users(int id) const;
  // Ops that are neither placeholders nor constants.
  int num_ops() const;

  // "graph(x: f32[s0]):\n  %sin : f32[s0] = sin(%x)\n  ...\n  return (%add)"
  std::string str() const;
  // Graphviz source; `dot -Tsvg` renders it.
  std::string to_dot(const std::string& title = "kiln") const;

 private:
  std::string unique_name(const std::string& base);
  int push(Node n);
  std::vector<Node> nodes_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
  std::vector<std::string> names_;
};

}  // namespace kiln
