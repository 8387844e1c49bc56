// Optimizers as graph functions: each update is written with ops, so a compiled train
// step (forward + backward + update) is one traced graph, compiled once.
//
//   optim::AdamW trainer(loss_fn, params, {.lr = 1e-2});   // loss_fn(params..., batch...)
//   Tensor loss = trainer.step({x, y});                      // updates trainer.params()
#pragma once

#include <vector>

#include "core/fn_traits.h"
#include "runtime/compile.h"

namespace kiln::optim {

struct SgdOptions {
  double lr = 1e-2;
  double momentum = 0.0;
  double weight_decay = 0.0;  // L2, added to the gradient (PyTorch's SGD)
};
// v' = momentum * v + (g + weight_decay * p);  p' = p - lr * v'.  Returns {p', v'}.
std::pair<Tensor, Tensor> sgd_update(const Tensor& p, const Tensor& g, const Tensor& v, const SgdOptions& o);

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;  // decoupled: p *= 1 - lr * weight_decay
};
struct AdamWUpdate {
  Tensor param, m, v;
};
// One AdamW step for one parameter. `step` is the 1-based step count as a 0-d f32 tensor
// (an input of the graph, so one compiled step serves every step).
AdamWUpdate adamw_update(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const Tensor& step,
                         const AdamWOptions& o);

// Trains `params` to minimize loss_fn(params..., batch...) with AdamW, one call of step()
// per batch: forward, backward and update, compiled into one graph (or eager).
class AdamW {
 public:
  template <class F>
  AdamW(F loss_fn, std::vector<Tensor> params, AdamWOptions options = {}, bool compiled = true,
        CompileOptions compile_options = {})
      : AdamW(as_tensor_fn(loss_fn), std::move(params), options, compiled, std::move(compile_options), 0) {}

  // Returns the loss before the update.
  Tensor step(const std::vector<Tensor>& batch);
  const std::vector<Tensor>& params() const { return params_; }
  int64_t steps() const { return t_; }

 private:
  AdamW(TensorFn loss_fn, std::vector<Tensor> params, AdamWOptions options, bool compiled,
        CompileOptions compile_options, int);
  std::vector<Tensor> params_, m_, v_;
  int64_t t_ = 0;
  TensorFn step_fn_;  // (params, m, v, step, batch...) -> (loss, params', m', v')
};

}  // namespace kiln::optim
