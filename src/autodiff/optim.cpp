#include "autodiff/optim.h"

#include "autodiff/grad.h"
#include "ops/api.h"

namespace kiln::optim {

std::pair<Tensor, Tensor> sgd_update(const Tensor& p, const Tensor& g, const Tensor& v, const SgdOptions& o) {
  Tensor d = o.weight_decay != 0.0 ? g + o.weight_decay * p : g;
  Tensor v2 = o.momentum != 0.0 ? o.momentum * v + d : d;
  return {p - o.lr * v2, v2};
}

AdamWUpdate adamw_update(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const Tensor& step,
                         const AdamWOptions& o) {
  Tensor m2 = o.beta1 * m + (1.0 - o.beta1) * g;
  Tensor v2 = o.beta2 * v + (1.0 - o.beta2) * g * g;
  // Bias corrections in the parameter's precision (f32 at least).
  DType t = p.dtype() == DType::F64 ? DType::F64 : DType::F32;
  Tensor s = cast(step, t);
  Tensor c1 = 1.0 - pow(scalar(o.beta1, t), s), c2 = 1.0 - pow(scalar(o.beta2, t), s);
  Tensor update = (m2 / c1) / (sqrt(v2 / c2) + o.eps);
  return {p * (1.0 - o.lr * o.weight_decay) - o.lr * update, m2, v2};
}

AdamW::AdamW(TensorFn loss_fn, std::vector<Tensor> params, AdamWOptions options, bool compiled,
             CompileOptions compile_options, int)
    : params_(std::move(params)) {
  if (params_.empty()) user_error("AdamW: no parameters to train");
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined() || !is_float(params_[i].dtype())) {
      user_error("AdamW: parameter ", i, " must be a floating-point tensor");
    }
    m_.push_back(full(params_[i].shape(), 0.0, params_[i].dtype()));
    v_.push_back(full(params_[i].shape(), 0.0, params_[i].dtype()));
  }
  const size_t n = params_.size();
  std::vector<int> argnums;
  for (size_t i = 0; i < n; ++i) argnums.push_back(int(i));
  TensorFn value_and_grads = value_and_grad_fn(loss_fn, argnums);
  TensorFn step_fn = [n, value_and_grads, options](const std::vector<Tensor>& in) {
    // in: params (n), m (n), v (n), step, batch...
    std::vector<Tensor> loss_args(in.begin(), in.begin() + long(n));
    loss_args.insert(loss_args.end(), in.begin() + long(3 * n + 1), in.end());
    std::vector<Tensor> vg = value_and_grads(loss_args);
    const size_t outs = vg.size() - n;  // loss_fn's outputs, then n gradients
    std::vector<Tensor> result = {vg[0]}, ms, vs;
    for (size_t i = 0; i < n; ++i) {
      AdamWUpdate u = adamw_update(in[i], vg[outs + i], in[n + i], in[2 * n + i], in[3 * n], options);
      result.push_back(u.param);
      ms.push_back(u.m);
      vs.push_back(u.v);
    }
    result.insert(result.end(), ms.begin(), ms.end());
    result.insert(result.end(), vs.begin(), vs.end());
    return result;
  };
  if (compiled) {
    if (compile_options.name == CompileOptions{}.name) compile_options.name = "adamw_step";
    auto c = compile(step_fn, compile_options);
    step_fn_ = [c](const std::vector<Tensor>& in) { return c(in); };
  } else {
    step_fn_ = step_fn;
  }
}

Tensor AdamW::step(const std::vector<Tensor>& batch) {
  const size_t n = params_.size();
  std::vector<Tensor> in = params_;
  in.insert(in.end(), m_.begin(), m_.end());
  in.insert(in.end(), v_.begin(), v_.end());
  in.push_back(scalar_tensor(double(++t_), DType::F32));
  in.insert(in.end(), batch.begin(), batch.end());
  std::vector<Tensor> out = step_fn_(in);
  for (size_t i = 0; i < n; ++i) {
    params_[i] = out[1 + i];
    m_[i] = out[1 + n + i];
    v_[i] = out[1 + 2 * n + i];
  }
  return out[0];
}

}  // namespace kiln::optim
