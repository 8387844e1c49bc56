#include "autodiff/halide_adjoint.h"

#include <set>

#include "core/error.h"
#include "ops/api.h"

namespace kiln {

namespace {

const char* kOf = "adjoint_of";
const char* kInput = "adjoint_input";

Attrs forward_attrs(const Attrs& a) {
  Attrs f = a;
  f.erase(kOf);
  f.erase(kInput);
  return f;
}

// in: the op's inputs, then the gradient of its output.
Halide::Func adjoint_algorithm(const std::vector<Halide::Func>& in, const OpCall& c) {
  const OpDef& def = get_op(c.attrs.get_string(kOf));
  const size_t n = in.size() - 1, i = size_t(c.attrs.get_int(kInput));
  Attrs attrs = forward_attrs(c.attrs);
  std::vector<TensorMeta> metas(c.inputs.begin(), c.inputs.begin() + long(n));
  const TensorMeta& out_meta = c.inputs[n];
  // Each input behind a wrapper of its own, so the adjoint stops there.
  std::vector<Halide::Func> wrapped;
  for (size_t k = 0; k < n; ++k) {
    auto v = algo::vars(metas[k].shape.rank());
    Halide::Func w("adjoint_in" + std::to_string(k));
    w(v) = algo::to_compute(in[k](v), metas[k].dtype);
    wrapped.push_back(w);
  }
  std::vector<StageInfo> forward_stages;
  OpCall fc{metas, out_meta, attrs, c.extent, &forward_stages};
  Halide::Func out = def.algorithm(wrapped, fc);
  Halide::Region bounds;
  for (int j = 0; j < out_meta.shape.rank(); ++j) {
    bounds.push_back(Halide::Range(0, c.extent(out_meta.shape[out_meta.shape.rank() - 1 - j])));
  }
  auto gv = algo::vars(out_meta.shape.rank());
  Halide::Func grad_in("adjoint_grad_in");
  grad_in(gv) = Halide::cast(out.type(), algo::to_compute(in[n](gv), out_meta.dtype));
  // Zero outside the output: Halide may turn scatters into gathers that read past it.
  Halide::Func grad = Halide::BoundaryConditions::constant_exterior(grad_in, Halide::cast(out.type(), 0), bounds);
  Halide::Derivative d = Halide::propagate_adjoints(out, grad, bounds);
  Halide::Func adj = d(wrapped[i]);
  for (StageInfo s : forward_stages) {
    s.serial = true;
    c.stages->push_back(s);
  }
  c.stages->push_back({adj, false, /*serial=*/true});
  auto v = algo::vars(c.output.shape.rank());
  Halide::Func result("halide_adjoint");
  result(v) = algo::to_storage(Halide::cast(algo::halide_type(compute_dtype(c.output.dtype)), adj(v)), c.output.dtype);
  return result;
}

// Built-in ops on the fallback that are linear in their input: their gradient is the
// same at every x, so the reference evaluates the op on basis vectors (exact, and defined
// where x holds infinities, which central differences turn into inf - inf).
bool linear_op(const std::string& name) { return name == "avg_pool2d" || name == "adaptive_avg_pool2d"; }

// Central differences of the op's f64 reference (basis vectors for a linear op): an
// independent check of Halide's adjoint.
Tensor adjoint_reference(const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
  const OpDef& def = get_op(a.get_string(kOf));
  const size_t n = in.size() - 1, i = size_t(a.get_int(kInput));
  Attrs attrs = forward_attrs(a);
  std::vector<Tensor> args;
  std::vector<TensorMeta> metas;
  for (size_t k = 0; k < n; ++k) {
    args.push_back(cast(in[k].to_host(), DType::F64));
    metas.push_back(args.back().meta());
  }
  TensorMeta fmeta = infer_op(def, metas, attrs);
  std::vector<double> x = args[i].to_doubles(), g = in[n].to_host().to_doubles(), result(x.size());
  const bool linear = linear_op(def.name) && n == 1;
  for (size_t j = 0; j < x.size() && linear; ++j) {
    std::vector<double> basis(x.size(), 0.0);
    basis[j] = 1.0;
    std::vector<double> y = def.reference({from_vector(basis, args[i].shape(), DType::F64)}, attrs, fmeta).to_doubles();
    // Only the outputs x_j reaches: a NaN gradient elsewhere does not flow to it.
    for (size_t o = 0; o < y.size(); ++o)
      if (y[o] != 0.0) result[j] += g[o] * y[o];
  }
  for (size_t j = 0; j < x.size() && !linear; ++j) {
    const double h = 1e-6 * std::max(1.0, std::abs(x[j]));
    double sides[2];
    for (int s = 0; s < 2; ++s) {
      std::vector<double> xs = x;
      xs[j] += s == 0 ? h : -h;
      std::vector<Tensor> moved = args;
      moved[i] = from_vector(xs, args[i].shape(), DType::F64);
      std::vector<double> y = def.reference(moved, attrs, fmeta).to_doubles();
      double dot = 0;
      for (size_t o = 0; o < y.size(); ++o) dot += g[o] * y[o];
      sides[s] = dot;
    }
    result[j] = (sides[0] - sides[1]) / (2 * h);
  }
  return from_vector(result, out.shape, out.dtype);
}

}  // namespace

std::vector<OpDef> adjoint_ops() {
  OpDef d;
  d.name = "halide_adjoint";
  d.kind = OpKind::Reduction;
  d.arity = -1;
  d.infer = [](const std::vector<TensorMeta>& in, const Attrs& a) {
    const size_t i = size_t(a.get_int(kInput));
    if (in.size() < 2 || i + 1 >= in.size()) user_error("halide_adjoint: needs the op's inputs and the output gradient");
    return in[i];
  };
  d.algorithm = adjoint_algorithm;
  d.reference = adjoint_reference;
  d.eager_generic = false;
  return {d};
}

namespace {

bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }

// f16/bf16 gradients are computed in f32 and rounded once, as PyTorch's backward kernels
// do (their "opmath" type): a rule written with f16 ops would overflow where the forward
// op did not (the squares of a norm's backward) and round at every step. Contractions keep
// their dtype (their kernels accumulate in f32 already), and ops that only move data have
// nothing to round.
VjpFn in_f32_for_half(const std::string& op, VjpFn rule) {
  static const std::set<std::string> keep = {
      "matmul",  "linear", "conv2d", "reshape", "permute", "transpose",    "expand",    "squeeze",
      "unsqueeze", "slice", "concat", "stack",  "split",   "pad",          "gather",    "index_select",
      "embedding", "tril", "triu",   "cast",   "where",   "neg"};
  if (!rule || keep.count(op)) return rule;
  return [rule](const VjpArgs& v) {
    auto up = [](const Tensor& t) { return t.defined() && is_half(t.dtype()) ? cast(t, DType::F32) : t; };
    bool any = is_half(v.grad.dtype());
    std::vector<Tensor> inputs;
    for (const Tensor& t : v.inputs) {
      any = any || (t.defined() && is_half(t.dtype()));
      inputs.push_back(up(t));
    }
    if (!any) return rule(v);
    const Tensor output = up(v.output), grad = up(v.grad);
    std::vector<Tensor> grads = rule(VjpArgs{inputs, output, grad, v.attrs, v.wanted});
    for (size_t i = 0; i < grads.size() && i < v.inputs.size(); ++i)
      if (grads[i].defined() && is_float(v.inputs[i].dtype()) && grads[i].dtype() != v.inputs[i].dtype())
        grads[i] = cast(grads[i], v.inputs[i].dtype());
    return grads;
  };
}

}  // namespace

VjpFn effective_vjp(const OpDef& def) {
  VjpFn rule = def.vjp;
  if (!rule && def.halide_adjoint_fallback && def.algorithm) {
    rule = [name = def.name](const VjpArgs& v) {
      std::vector<Tensor> ins = v.inputs;
      ins.push_back(v.grad);
      std::vector<Tensor> grads;
      for (size_t i = 0; i < v.inputs.size(); ++i) {
        if (!is_float(v.inputs[i].dtype())) {
          grads.emplace_back();
          continue;
        }
        Attrs a = v.attrs;
        a.set(kOf, name).set(kInput, int64_t(i));
        grads.push_back(apply_op("halide_adjoint", ins, a));
      }
      return grads;
    };
  }
  // Also keeps bf16 out of Halide's propagate_adjoints, which cannot simplify it.
  return in_f32_for_half(def.name, rule);
}

}  // namespace kiln
