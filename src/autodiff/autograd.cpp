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

void attach_grad_node(const Tensor& output, std::shared_ptr<GradNode> node) {
  AutogradMeta& m = autograd_of(output);
  m.requires_grad = true;
  m.node = std::move(node);
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
  // Post-order DFS over the nodes that lead to this tensor, then reverse: each tensor's
  // gradient is complete before its node passes it on.
  std::vector<Tensor> order;
  std::set<const TensorImpl*> seen;
  std::vector<std::pair<Tensor, size_t>> stack = {{*this, 0}};
  seen.insert(impl());
  while (!stack.empty()) {
    auto& [t, next] = stack.back();
    const auto& node = t.impl()->autograd->node;
    if (node && next < node->inputs.size()) {
      const Tensor& in = node->inputs[next++];
      if (in.needs_grad() && seen.insert(in.impl()).second) stack.push_back({in, 0});
      continue;
    }
    order.push_back(t);
    stack.pop_back();
  }
  std::map<const TensorImpl*, Tensor> grads = {{impl(), seed}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Tensor& t = *it;
    auto g = grads.find(t.impl());
    if (g == grads.end()) continue;
    AutogradMeta& m = *t.impl()->autograd;
    if (!m.node) {  // a leaf: accumulate
      Tensor acc = m.grad ? Tensor(m.grad) + g->second : g->second.clone();
      m.grad = std::make_shared<TensorImpl>(*acc.detach().impl());
      continue;
    }
    std::vector<Tensor> in_grads = m.node->vjp(g->second);
    for (size_t k = 0; k < m.node->inputs.size() && k < in_grads.size(); ++k) {
      const Tensor& in = m.node->inputs[k];
      if (!in_grads[k].defined() || !in.needs_grad()) continue;
      // A gradient has its input's dtype, as in PyTorch: an f32 leaf multiplied by an f64
      // tensor gets an f32 grad().
      Tensor gk = in_grads[k].dtype() == in.dtype() ? in_grads[k] : cast(in_grads[k], in.dtype());
      auto [slot, fresh] = grads.emplace(in.impl(), gk);
      if (!fresh) slot->second = slot->second + gk;
    }
  }
}

}  // namespace kiln
