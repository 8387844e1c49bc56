// A user-defined op written only as a Halide algorithm (a 3-tap blur with clamped edges,
// no VJP rule), differentiated by Halide's propagate_adjoints through kiln::grad, eager
// and compiled, and checked against central finite differences.
//
//   custom_op [--n N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "common/args.h"
#include "kiln.h"

using namespace kiln;

namespace {

// blur3(x)[i] = (x[i-1] + 2 x[i] + x[i+1]) / 4 along the last axis, edges clamped.
void register_blur3() {
  OpDef d;
  d.name = "blur3";
  d.kind = OpKind::Pointwise;  // each output reads a small window
  d.infer = [](const std::vector<TensorMeta>& in, const Attrs&) {
    if (in[0].shape.rank() != 1 || !is_float(in[0].dtype)) user_error("blur3: needs a 1-D float tensor, got ", in[0].str());
    return in[0];
  };
  d.algorithm = [](const std::vector<Halide::Func>& in, const OpCall& c) {
    Halide::Var i("d0");
    Halide::Expr n = c.extent(c.inputs[0].shape[0]);
    auto at = [&](Halide::Expr j) { return algo::to_compute(in[0](Halide::clamp(j, 0, n - 1)), c.inputs[0].dtype); };
    Halide::Func f("blur3");
    f(i) = algo::to_storage((at(i - 1) + 2 * at(i) + at(i + 1)) / 4, c.output.dtype);
    return f;
  };
  d.reference = [](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
    std::vector<double> x = in[0].to_doubles(), o(x.size());
    const int64_t n = int64_t(x.size());
    auto at = [&](int64_t j) { return x[size_t(std::clamp<int64_t>(j, 0, n - 1))]; };
    for (int64_t i = 0; i < n; ++i) o[size_t(i)] = (at(i - 1) + 2 * at(i) + at(i + 1)) / 4;
    return from_vector(o, out.shape, out.dtype);
  };
  register_op(d);  // no vjp: kiln falls back to Halide's propagate_adjoints
}

Tensor blur3(const Tensor& x) { return apply_op("blur3", {x}); }

}  // namespace

int main(int argc, char** argv) {
  try {
    int64_t n = 64;
    for (int i = 1; i < argc; ++i) {
      std::string s = argv[i];
      if (s == "--n" && i + 1 < argc) n = apps::integer_arg(s, argv[++i], 1, 1 << 26);
      else user_error("usage: custom_op [--n N]");
    }
    register_blur3();
    auto loss = [](const Tensor& x) { return sum(tanh(blur3(blur3(x)))); };
    Tensor x = rand({n}, 7, -2, 2, DType::F64);
    Tensor eager = grad(loss)({x})[0];
    auto compiled_grad = compile(grad(loss));
    Tensor compiled = compiled_grad({x})[0];
    std::cout << "gradient graph (Halide adjoints of the user op appear as halide_adjoint):\n"
              << compiled_grad.graph().str() << "\n";
    std::vector<double> v = x.to_doubles(), fd(v.size());
    for (size_t j = 0; j < v.size(); ++j) {
      std::vector<double> p = v, m = v;
      p[j] += 1e-6;
      m[j] -= 1e-6;
      fd[j] = (loss(from_vector(p, x.shape(), DType::F64)).item() - loss(from_vector(m, x.shape(), DType::F64)).item()) / 2e-6;
    }
    Tensor want = from_vector(fd, x.shape(), DType::F64);
    double err = std::max(max_abs_diff(eager, want), max_abs_diff(compiled, want));
    bool ok = allclose(eager, want, 1e-6, 1e-6) && allclose(compiled, want, 1e-6, 1e-6);
    std::printf("custom_op: %s max_abs_err_vs_finite_differences=%.3g\n", ok ? "OK" : "FAILED", err);
    return ok ? 0 : 1;
  } catch (const kiln::Error& e) {
    std::cerr << "custom_op: error: " << e.what() << "\n";
    return 2;
  }
}
