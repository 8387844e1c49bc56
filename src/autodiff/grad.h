// Reverse-mode automatic differentiation, functional style (like JAX's grad):
//
//   auto loss = [&](const Tensor& w, const Tensor& x) { return mean(square(x @ w)); };
//   std::vector<Tensor> g = kiln::grad(loss, {0})({w, x});   // d loss / d w
//   auto step = kiln::compile(kiln::value_and_grad(loss, {0}));  // forward + backward, one graph
//
// The forward runs once with a Tape recording every op; then each op's VJP rule runs in
// reverse order, accumulating gradients where a value feeds several consumers. Rules are
// written with ops, so under kiln::compile the forward and the backward are traced into
// one joint graph and compiled together. Only ops on a path from a differentiated input
// to the output get gradient work.
#pragma once

#include <vector>

#include "autodiff/tape.h"
#include "core/fn_traits.h"

namespace kiln {

// Gradients of `output` w.r.t. each of `wrt`, given the entries of the tape that computed
// it (no longer recording: the VJP rules add ops) and the gradient flowing into it (`output_grad`; undefined: 1 for a one-element
// output). An input that `output` does not depend on gets zeros.
std::vector<Tensor> backward_through(const std::vector<TapeEntry>& entries, const Tensor& output,
                                     const Tensor& output_grad, const std::vector<Tensor>& wrt);

// fn's first output must hold one floating-point element (a loss). grad(fn, argnums)
// returns a function of fn's inputs giving the gradient w.r.t. each input in argnums;
// value_and_grad's gives fn's outputs followed by those gradients.
// The same for several outputs at once, each with its gradient (undefined: 1).
std::vector<Tensor> backward_through_outputs(const std::vector<TapeEntry>& entries, const std::vector<Tensor>& outputs,
                                             const std::vector<Tensor>& output_grads, const std::vector<Tensor>& wrt);

// Runs fn on `inputs` recording a tape, then differentiates w.r.t. the inputs in argnums:
// `seeds` picks, from fn's outputs, the values to start from and their gradients.
// Returns fn's outputs and the gradients.
using SeedFn = std::function<std::pair<std::vector<Tensor>, std::vector<Tensor>>(const std::vector<Tensor>& outputs)>;
std::pair<std::vector<Tensor>, std::vector<Tensor>> differentiate(const TensorFn& fn, const std::vector<int>& argnums,
                                                                  const std::vector<Tensor>& inputs, const SeedFn& seeds);

TensorFn grad_fn(TensorFn fn, std::vector<int> argnums = {0});
TensorFn value_and_grad_fn(TensorFn fn, std::vector<int> argnums = {0});

// The vector-Jacobian product of output `output_index` of fn: a function of fn's inputs
// followed by the gradient of that output, giving the gradient w.r.t. each input in
// argnums. Compiled functions use it as their backward.
TensorFn vjp_fn(TensorFn fn, int output_index, std::vector<int> argnums);

template <class F>
TensorFn grad(F fn, std::vector<int> argnums = {0}) {
  return grad_fn(as_tensor_fn(fn), std::move(argnums));
}
template <class F>
TensorFn value_and_grad(F fn, std::vector<int> argnums = {0}) {
  return value_and_grad_fn(as_tensor_fn(fn), std::move(argnums));
}

}  // namespace kiln
