// Capture: while a Tracer is active on a thread, ops applied to its symbolic tensors are
// recorded into its graph instead of running. Concrete tensors that meet a traced value
// (weights captured by a lambda, say) become constant nodes.
#pragma once

#include <map>

#include "graph/graph.h"

namespace kiln {

class Tracer {
 public:
  explicit Tracer(Graph& graph);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The tracer active on this thread, or nullptr.
  static Tracer* current();

  Tensor placeholder(const std::string& name, const TensorMeta& meta);
  Tensor record(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs);
  // The graph value of a tensor: its node if symbolic, a (cached) constant node if concrete.
  int value_of(const Tensor& t);
  Graph& graph() { return graph_; }

 private:
  Tensor symbolic(int node);
  Graph& graph_;
  Tracer* previous_;
  std::map<const TensorImpl*, int> constants_;
  std::vector<Tensor> captured_;  // keeps captured constants alive and their ids unique
};

}  // namespace kiln
