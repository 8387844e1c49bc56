#include "graph/graph.h"

#include <algorithm>

#include "core/error.h"

namespace kiln {

std::string Graph::unique_name(const std::string& base) {
  std::string name = base;
  for (int k = 1; std::find(names_.begin(), names_.end(), name) != names_.end(); ++k) {
    name = base + "_" + std::to_string(k);
  }
  names_.push_back(name);
  return name;
}

int Graph::push(Node n) {
  n.id = int(nodes_.size());
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

int Graph::add_placeholder(const std::string& name, const TensorMeta& meta) {
  Node n;
  n.op = "placeholder";
  n.meta = meta;
  n.name = unique_name(name);
  int id = push(std::move(n));
  inputs_.push_back(id);
  return id;
}

int Graph::add_constant(const Tensor& value) {
  Node n;
  n.op = "constant";
  n.meta = value.meta();
  n.name = unique_name("const");
  n.constant = value;
  return push(std::move(n));
}

int Graph::add_op(const std::string& op, const std::vector<int>& inputs, const Attrs& attrs) {
  const OpDef& def = get_op(op);
  std::vector<TensorMeta> metas;
  for (int i : inputs) metas.push_back(node(i).meta);
  Node n;
  n.op = op;
  n.inputs = inputs;
  n.attrs = attrs;
  n.meta = infer_op(def, metas, attrs);
  n.name = unique_name(op);
  return push(std::move(n));
}

void Graph::set_outputs(const std::vector<int>& outputs) {
  for (int o : outputs) node(o);  // validates
  outputs_ = outputs;
}

const Node& Graph::node(int id) const {
  KILN_CHECK(id >= 0 && id < int(nodes_.size()), "node id ", id, " out of range");
  return nodes_[size_t(id)];
}

std::vector<TensorMeta> Graph::input_metas() const {
  std::vector<TensorMeta> out;
  for (int i : inputs_) out.push_back(node(i).meta);
  return out;
}

std::vector<TensorMeta> Graph::output_metas() const {
  std::vector<TensorMeta> out;
  for (int i : outputs_) out.push_back(node(i).meta);
  return out;
}

std::vector<int> Graph::users(int id) const {
  std::vector<int> out;
  for (const Node& n : nodes_) {
    if (std::find(n.inputs.begin(), n.inputs.end(), id) != n.inputs.end()) out.push_back(n.id);
  }
  return out;
}

int Graph::num_ops() const {
  return int(std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) {
    return !n.is_placeholder() && !n.is_constant();
  }));
}

}  // namespace kiln
