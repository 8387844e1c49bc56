// Turns the tensors a graph captured while tracing (weights, biases, running statistics,
// masks) into inputs, so an ahead-of-time library takes them as arguments instead of
// embedding them: a user can then load new weights without recompiling.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace kiln {

struct LiftedGraph {
  // The original inputs first, in order, then one placeholder per lifted constant.
  Graph graph;
  // The values of the lifted constants, in the order of their placeholders.
  std::vector<Tensor> constants;
};

// Every constant of rank >= 1 becomes a placeholder named "weight_<k>" (k counting from
// 0 in node order); 0-d constants (scalars such as -inf in a mask) stay embedded.
LiftedGraph lift_constants(const Graph& g);

}  // namespace kiln
