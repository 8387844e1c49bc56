#include "autodiff/grad.h"

#include <map>
#include <set>

#include "autodiff/halide_adjoint.h"
#include "core/log.h"
#include "ops/api.h"

namespace kiln {

namespace {

using Key = const TensorImpl*;

// The gradient of `x` when nothing flows into it: zeros of its shape and dtype.
Tensor zeros_like_value(const Tensor& x) {
  return x.shape().is_static() ? expand(scalar(0.0, x.dtype()), x.sizes()) : x * 0.0;
}

void add_grad(std::map<Key, Tensor>& grads, const Tensor& value, const Tensor& g) {
  auto [it, fresh] = grads.emplace(value.impl(), g);
  if (!fresh) it->second = it->second + g;  // a value with several consumers
}

}  // namespace

std::vector<Tensor> backward_through(const std::vector<TapeEntry>& entries, const Tensor& output,
                                     const Tensor& output_grad, const std::vector<Tensor>& wrt) {
  if (!is_float(output.dtype())) {
    user_error("grad: the output ", output.meta().str(), " is not floating point, so it has no gradient");
  }
  return backward_through_outputs(entries, {output}, {output_grad}, wrt);
}

std::vector<Tensor> backward_through_outputs(const std::vector<TapeEntry>& entries, const std::vector<Tensor>& outputs,
                                             const std::vector<Tensor>& output_grads, const std::vector<Tensor>& wrt) {
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (!is_float(wrt[i].dtype())) {
      user_error("grad: input ", i, " is ", wrt[i].meta().str(), "; gradients exist only for floating-point inputs");
    }
  }
  std::map<Key, Tensor> grads;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor &output = outputs[k], &output_grad = output_grads[k];
    if (!is_float(output.dtype())) continue;  // integer outputs carry no gradient
    Tensor seed = output_grad;
    if (!seed.defined()) {
      if (!output.shape().is_static() || output.numel() != 1) {
        user_error("grad: the output ", output.meta().str(),
                   " is not a single element; pass the gradient of the output (backward(grad)) or reduce it first");
      }
      seed = scalar(1.0, output.dtype());
      if (output.rank() > 0) seed = expand(seed, output.sizes());
    } else if (output_grad.shape() != output.shape()) {
      user_error("grad: the gradient of the output is ", output_grad.meta().str(), " but the output is ",
                 output.meta().str());
    }
    add_grad(grads, output, seed);
  }
  // Forward sweep: which values depend on a differentiated input.
  std::set<Key> needs;
  for (const Tensor& w : wrt) needs.insert(w.impl());
  std::vector<bool> active(entries.size(), false);
  for (size_t i = 0; i < entries.size(); ++i) {
    const TapeEntry& e = entries[i];
    if (!is_float(e.output.dtype())) continue;  // integer and bool values carry no gradient
    for (const Tensor& in : e.inputs) active[i] = active[i] || needs.count(in.impl());
    if (active[i]) needs.insert(e.output.impl());
  }
  // Reverse sweep over the active entries, from the outputs back.
  for (size_t i = entries.size(); i-- > 0;) {
    if (!active[i]) continue;
    const TapeEntry& e = entries[i];
    auto it = grads.find(e.output.impl());
    if (it == grads.end()) continue;  // does not reach the output
    const OpDef& def = get_op(e.op);
    if (def.zero_gradient) continue;
    VjpFn vjp = effective_vjp(def);
    if (!vjp) {
      user_error("grad: op '", e.op, "' has no VJP rule, so kiln cannot differentiate through it; ",
                 "write the computation with differentiable ops, or give the op a vjp (OpDef::vjp)");
    }
    Tensor g = it->second;
    std::vector<bool> wanted;
    for (const Tensor& in : e.inputs) wanted.push_back(needs.count(in.impl()) > 0);
    std::vector<Tensor> in_grads = vjp(VjpArgs{e.inputs, e.output, g, e.attrs, std::move(wanted)});
    for (size_t k = 0; k < e.inputs.size() && k < in_grads.size(); ++k) {
      if (!in_grads[k].defined() || !needs.count(e.inputs[k].impl())) continue;
      // A gradient has its input's dtype, as in PyTorch and backward(): an f32 value
      // multiplied by an f64 one gets its gradient rounded to f32 here, not at the leaf.
      const DType t = e.inputs[k].dtype();
      add_grad(grads, e.inputs[k], in_grads[k].dtype() == t ? in_grads[k] : cast(in_grads[k], t));
    }
  }
  std::vector<Tensor> out;
  for (const Tensor& w : wrt) {
    auto it = grads.find(w.impl());
    Tensor g = it != grads.end() ? it->second : zeros_like_value(w);
    out.push_back(g.dtype() == w.dtype() ? g : cast(g, w.dtype()));
  }
  return out;
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> differentiate(const TensorFn& fn, const std::vector<int>& argnums,
                                                                  const std::vector<Tensor>& inputs,
                                                                  const SeedFn& seeds) {
  for (int a : argnums) {
    if (a < 0 || a >= int(inputs.size())) {
      user_error("grad: argnum ", a, " is out of range for a function of ", inputs.size(), " tensors");
    }
  }
  // Fresh handles (same data, same graph value) for the differentiated inputs, so that a
  // tensor passed twice, or also captured by fn, is told apart from the argument.
  std::vector<Tensor> args = inputs, diff_args;
  for (int a : argnums) {
    const Tensor& in = inputs[size_t(a)];
    args[size_t(a)] = Tensor(std::make_shared<TensorImpl>(*in.impl()));
    diff_args.push_back(args[size_t(a)]);
    // Outer tapes (a grad of this grad) see the fresh handle as an identity of the input,
    // so higher derivatives flow through it.
    std::vector<int64_t> identity(size_t(in.rank()));
    for (int64_t d = 0; d < in.rank(); ++d) identity[size_t(d)] = d;
    Tape::record("permute", {in}, {{"dims", identity}}, args[size_t(a)]);
  }
  std::vector<Tensor> outputs;
  std::vector<TapeEntry> entries;
  {
    Tape tape;  // records the forward only; the backward's own ops go to outer tapes
    outputs = fn(args);
    entries = tape.entries();
  }
  auto [roots, root_grads] = seeds(outputs);
  return {outputs, backward_through_outputs(entries, roots, root_grads, diff_args)};
}

namespace {

// Runs fn on `inputs` with a tape and differentiates output `output_index` (seeded with
// `output_grad`, or 1) w.r.t. the inputs in argnums: fn's outputs, then the gradients.
std::pair<std::vector<Tensor>, std::vector<Tensor>> run_with_grads(const TensorFn& fn, const std::vector<int>& argnums,
                                                                   const std::vector<Tensor>& inputs, int output_index,
                                                                   const Tensor& output_grad) {
  return differentiate(fn, argnums, inputs, [&](const std::vector<Tensor>& outputs) {
    if (int(outputs.size()) <= output_index) {
      user_error("grad: the function returned ", outputs.size(), " tensors, so it has no output ", output_index);
    }
    if (!is_float(outputs[size_t(output_index)].dtype())) {
      user_error("grad: the output ", outputs[size_t(output_index)].meta().str(),
                 " is not floating point, so it has no gradient");
    }
    return std::pair{std::vector<Tensor>{outputs[size_t(output_index)]}, std::vector<Tensor>{output_grad}};
  });
}

}  // namespace

TensorFn grad_fn(TensorFn fn, std::vector<int> argnums) {
  return [fn = std::move(fn), argnums = std::move(argnums)](const std::vector<Tensor>& inputs) {
    return run_with_grads(fn, argnums, inputs, 0, Tensor()).second;
  };
}

TensorFn value_and_grad_fn(TensorFn fn, std::vector<int> argnums) {
  return [fn = std::move(fn), argnums = std::move(argnums)](const std::vector<Tensor>& inputs) {
    auto [outputs, grads] = run_with_grads(fn, argnums, inputs, 0, Tensor());
    outputs.insert(outputs.end(), grads.begin(), grads.end());
    return outputs;
  };
}

TensorFn vjp_fn(TensorFn fn, int output_index, std::vector<int> argnums) {
  return [fn = std::move(fn), output_index, argnums = std::move(argnums)](const std::vector<Tensor>& in) {
    if (in.empty()) user_error("vjp: needs the function's inputs and the output's gradient");
    std::vector<Tensor> inputs(in.begin(), in.end() - 1);
    return run_with_grads(fn, argnums, inputs, output_index, in.back()).second;
  };
}

}  // namespace kiln
