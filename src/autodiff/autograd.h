// PyTorch-style autograd on concrete tensors: ops applied while grad mode is on to a
// tensor that needs grad attach a GradNode to their output (the op's VJP rule with its
// inputs and output); Tensor::backward() walks those nodes in reverse topological order
// and accumulates into the leaves' grad(). A compiled function called with inputs that
// need grad attaches one node per output whose VJP is itself a compiled function
// (runtime/compile.cpp). A node may have several outputs (a compiled function's): it runs
// once, after every output's gradient is complete, as in PyTorch.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kiln {

struct GradNode {
  std::string name;            // the op, or "compiled <function>"
  std::vector<Tensor> inputs;  // what the outputs were computed from
  int num_outputs = 1;
  // The gradient of each input given each output's (both undefined where none flows; at
  // least one output's is defined).
  std::function<std::vector<Tensor>(const std::vector<Tensor>& output_grads)> vjp;
};

// Whether ops record GradNodes on this thread (on by default; off inside backward()).
bool grad_mode_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when grad mode is on and one of `inputs` needs grad: an output computed from them
// should get a GradNode.
bool any_needs_grad(const std::vector<Tensor>& inputs);
// Makes `output` need grad, computed by `node` as its output number `output_nr`.
void attach_grad_node(const Tensor& output, std::shared_ptr<GradNode> node, int output_nr = 0);

}  // namespace kiln
