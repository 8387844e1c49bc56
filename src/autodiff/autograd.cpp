#include "autodiff/autograd.h"

#include <map>
#include <set>

#include "core/error.h"
#include "ops/api.h"

namespace kiln {

namespace {
thread_local bool grad_mode = true;

AutogradMeta& autograd_of(const Tensor& t) {
  if (!t.impl()->autograd) t.impl()->autograd = std::make_shared<AutogradMeta>();
  return *t.impl()->autograd;
}
}  // namespace

bool grad_mode_enabled() { return grad_mode; }
NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

bool any_needs_grad(const std::vector<Tensor>& inputs) {
  if (!grad_mode) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.needs_grad()) return true;
  return false;
}

void attach_grad_node(const Tensor& output, std::shared_ptr<GradNode> node, int output_nr) {
  AutogradMeta& m = autograd_of(output);
  m.requires_grad = true;
  m.node = std::move(node);
  m.output_nr = output_nr;
}

Tensor Tensor::requires_grad(bool on) const {
  if (!defined()) user_error("requires_grad: the tensor is undefined");
  if (is_symbolic()) {
    user_error("requires_grad: a traced tensor cannot be marked; mark the concrete inputs before calling the "
               "compiled function, or use kiln::grad inside it");
  }
  if (on && !is_float(dtype())) {
    user_error("requires_grad: only floating-point tensors have gradients, this one is ", meta().str());
  }
  if (on && impl()->autograd && impl()->autograd->node) {
    user_error("requires_grad: this tensor was computed from others that require grad; mark the leaves "
               "(or call detach() first)");
  }
  autograd_of(*this).requires_grad = on;
  return *this;
}

bool Tensor::needs_grad() const { return defined() && impl()->autograd && impl()->autograd->requires_grad; }

Tensor Tensor::grad() const {
  if (!needs_grad() || !impl()->autograd->grad) return Tensor();
  return Tensor(impl()->autograd->grad);
}

void Tensor::zero_grad() const {
  if (impl() && impl()->autograd) impl()->autograd->grad.reset();
}

Tensor Tensor::detach() const {
  auto copy = std::make_shared<TensorImpl>(*impl());
  copy->autograd.reset();
  return Tensor(copy);
}

void Tensor::backward(const Tensor& grad) const {
  if (!needs_grad()) {
    user_error("backward: this tensor ", meta().str(), " does not require grad; mark an input with "
               "requires_grad() before computing it");
  }
  Tensor seed = grad;
  if (!seed.defined()) {
    if (numel() != 1) {
      user_error("backward: the tensor ", meta().str(), " has ", numel(), " elements; pass the gradient of "
                 "the output (backward(grad)) or reduce it to one element first");
    }
    seed = full(shape(), 1.0, dtype());
  } else if (seed.shape() != shape()) {
    user_error("backward: the gradient is ", seed.meta().str(), " but the tensor is ", meta().str());
  }
  NoGradGuard no_grad;
  std::map<const TensorImpl*, std::pair<Tensor, Tensor>> leaf_grads;  // leaf -> (leaf, gradient)
  auto add_to = [](Tensor& slot, const Tensor& g) { slot = slot.defined() ? slot + g : g; };
  const AutogradMeta& root = *impl()->autograd;
  if (!root.node) {
    leaf_grads[impl()] = {*this, seed};
  } else {
    // Post-order DFS over the nodes that lead to this tensor, then reverse: a node runs
    // after every node that consumes one of its outputs, so it runs once, with each
    // output's gradient complete.
    std::vector<GradNode*> order;
    std::set<const GradNode*> seen = {root.node.get()};
    std::vector<std::pair<GradNode*, size_t>> stack = {{root.node.get(), 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->inputs.size()) {
        const Tensor& in = node->inputs[next++];
        if (!in.needs_grad()) continue;
        GradNode* producer = in.impl()->autograd->node.get();
        if (producer && seen.insert(producer).second) stack.push_back({producer, 0});
        continue;
      }
      order.push_back(node);
      stack.pop_back();
    }
    std::map<const GradNode*, std::vector<Tensor>> pending;
    pending[root.node.get()].resize(size_t(root.node->num_outputs));
    pending[root.node.get()][size_t(root.output_nr)] = seed;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      GradNode* node = *it;
      auto p = pending.find(node);
      if (p == pending.end()) continue;
      const std::vector<Tensor> in_grads = node->vjp(p->second);
      pending.erase(p);
      for (size_t k = 0; k < node->inputs.size() && k < in_grads.size(); ++k) {
        const Tensor& in = node->inputs[k];
        if (!in_grads[k].defined() || !in.needs_grad()) continue;
        // A gradient has its input's dtype, as in PyTorch: an f32 leaf multiplied by an f64
        // tensor gets an f32 grad().
        Tensor gk = in_grads[k].dtype() == in.dtype() ? in_grads[k] : cast(in_grads[k], in.dtype());
        const AutogradMeta& m = *in.impl()->autograd;
        if (!m.node) {
          auto& slot = leaf_grads[in.impl()];
          slot.first = in;
          add_to(slot.second, gk);
          continue;
        }
        std::vector<Tensor>& slots = pending[m.node.get()];
        slots.resize(size_t(m.node->num_outputs));
        add_to(slots[size_t(m.output_nr)], gk);
      }
    }
  }
  for (auto& [impl, leaf_and_grad] : leaf_grads) {  // accumulate into the leaves
    auto& [leaf, g] = leaf_and_grad;
    AutogradMeta& m = *leaf.impl()->autograd;
    Tensor acc = m.grad ? Tensor(m.grad) + g : g.clone();
    m.grad = std::make_shared<TensorImpl>(*acc.detach().impl());
  }
}

}  // namespace kiln
