// Splitting a joint forward+backward graph into the two graphs a compiled function runs
// (AOTAutograd's partitioner): the forward returns its outputs plus the values the
// backward needs; the backward recomputes the rest. Which values to save is a minimum cut
// on bytes: a value is either saved (its bytes count) or recomputed from saved ones in
// the backward. Contractions, convolutions, reductions and indexing are never recomputed;
// pointwise and shape ops are, when that saves memory; constants and seeded random fills
// are free to recompute.
#pragma once

#include <string>
#include <vector>

#include "core/fn_traits.h"
#include "graph/graph.h"

namespace kiln {

// The joint graph of fn at these inputs: placeholders are fn's inputs, then one gradient
// per output of fn; outputs are fn's outputs, then the gradient w.r.t. each input in
// argnums.
Graph joint_graph(const TensorFn& fn, const std::vector<Tensor>& example_inputs, const std::vector<int>& argnums);

struct Partition {
  Graph forward;   // fn's inputs -> fn's outputs, then the saved values
  Graph backward;  // saved values, then one gradient per output -> the argnums gradients
  int num_outputs = 0;
  std::vector<std::string> saved;     // names of the saved values (in the joint graph)
  std::vector<std::string> recomputed;  // forward values the backward computes again
  int64_t saved_bytes = 0;
  std::string str() const;  // the decision, for KILN_LOG=aot
};

// `num_inputs` placeholders of `joint` are fn's inputs, the rest are output gradients; its
// first `num_outputs` outputs are fn's.
Partition min_cut_partition(const Graph& joint, int num_inputs, int num_outputs);

}  // namespace kiln
