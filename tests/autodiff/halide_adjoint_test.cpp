// A user-defined op with a Halide algorithm and no VJP gets its gradient from Halide's
// propagate_adjoints, checked against finite differences.
#include <cmath>

#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

// weighted_blur(x [N], w [3]): out[i] = sum_r w[r] * x[clamp(i + r - 1, 0, N - 1)].
void register_weighted_blur() {
  if (has_op("test_weighted_blur")) return;
  OpDef d;
  d.name = "test_weighted_blur";
  d.kind = OpKind::Reduction;
  d.arity = 2;
  d.eager_generic = false;  // w must be [3]
  d.infer = [](const std::vector<TensorMeta>& in, const Attrs&) {
    if (in.size() != 2 || in[0].shape.rank() != 1 || in[1].shape != Shape{3}) {
      user_error("test_weighted_blur: x [N], w [3], got ", in.size(), " inputs", in.empty() ? "" : in[0].str());
    }
    return in[0];
  };
  d.algorithm = [](const std::vector<Halide::Func>& in, const OpCall& c) {
    Halide::Var i("d0");
    Halide::RDom r(0, 3);
    Halide::Expr n = c.extent(c.inputs[0].shape[0]);
    Halide::Func f("test_weighted_blur");
    f(i) = Halide::cast(algo::halide_type(c.output.dtype), 0);
    f(i) += in[1](r) * in[0](Halide::clamp(i + r - 1, 0, n - 1));
    c.stages->push_back({f});
    Halide::Func out("blur_out");
    out(i) = f(i);
    return out;
  };
  d.reference = [](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
    std::vector<double> x = in[0].to_doubles(), w = in[1].to_doubles(), o(x.size(), 0.0);
    const int64_t n = int64_t(x.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t r = 0; r < 3; ++r) o[size_t(i)] += w[size_t(r)] * x[size_t(std::clamp<int64_t>(i + r - 1, 0, n - 1))];
    return from_vector(o, out.shape, out.dtype);
  };
  register_op(d);
}

Tensor weighted_blur(const Tensor& x, const Tensor& w) { return apply_op("test_weighted_blur", {x, w}); }

TEST(HalideAdjoint, UserOpGradientsMatchFiniteDifferences) {
  register_weighted_blur();
  Tensor x = rand({9}, 1, -1, 1, DType::F64), w = rand({3}, 2, -1, 1, DType::F64);
  Tensor probe = rand({9}, 3, 0.5, 1.5, DType::F64);
  auto loss = [probe](const Tensor& a, const Tensor& b) { return sum(sin(weighted_blur(a, b)) * probe); };
  std::vector<Tensor> eager = grad(loss, {0, 1})({x, w});
  std::vector<Tensor> compiled = compile(grad(loss, {0, 1}))({x, w});
  for (int k = 0; k < 2; ++k) {
    Tensor at = k == 0 ? x : w;
    std::vector<double> v = at.to_doubles(), fd(v.size());
    for (size_t j = 0; j < v.size(); ++j) {
      std::vector<double> p = v, m = v;
      p[j] += 1e-6;
      m[j] -= 1e-6;
      Tensor tp = from_vector(p, at.shape(), DType::F64), tm = from_vector(m, at.shape(), DType::F64);
      double lp = k == 0 ? loss(tp, w).item() : loss(x, tp).item();
      double lm = k == 0 ? loss(tm, w).item() : loss(x, tm).item();
      fd[j] = (lp - lm) / 2e-6;
    }
    Tensor want = from_vector(fd, at.shape(), DType::F64);
    EXPECT_TRUE(allclose(eager[size_t(k)], want, 1e-6, 1e-6)) << k << "\n" << eager[size_t(k)].str(9) << "\n" << want.str(9);
    EXPECT_TRUE(allclose(compiled[size_t(k)], want, 1e-6, 1e-6)) << k << "\n" << compiled[size_t(k)].str(9);
  }
  // The Halide adjoint op against its own reference (central differences of the user's reference).
  Tensor g = rand({9}, 4, -1, 1, DType::F64);
  for (int64_t i : {0, 1}) {
    Attrs attrs{{"adjoint_of", std::string("test_weighted_blur")}, {"adjoint_input", i}};
    expect_matches_reference(
        "halide_adjoint", [attrs](const std::vector<Tensor>& in) { return apply_op("halide_adjoint", in, attrs); },
        {x, w, g}, attrs, "d/d input " + std::to_string(i), std::nullopt, Tolerance{1e-6, 1e-6});
  }
}

TEST(HalideAdjoint, BackwardThroughAUserOpPyTorchStyle) {
  register_weighted_blur();
  Tensor x = rand({16}, 5, -1, 1).requires_grad();
  Tensor w = from_vector(std::vector<float>{0.25f, 0.5f, 0.25f}, {3});
  sum(weighted_blur(x, w)).backward();
  // Each x[j] contributes to three outputs with total weight 1, except at the clamped ends.
  std::vector<float> g = x.grad().to_vector<float>();
  EXPECT_NEAR(g[0], 1.0, 1e-6);   // x[0] is read by out[0] twice (clamped) and out[1]
  EXPECT_NEAR(g[7], 1.0, 1e-6);
  EXPECT_NEAR(g[15], 1.0, 1e-6);
}

}  // namespace

// Halide's adjoints are first-order: differentiating one again is a clear error.
TEST(HalideAdjoint, SecondDerivativeSaysWhatIsMissing) {
  register_weighted_blur();
  Tensor x = rand({9}, 1, -1, 1, DType::F64), w = rand({3}, 2, -1, 1, DType::F64);
  auto inner = [w](const Tensor& a) { return sum(sin(weighted_blur(a, w))); };
  auto outer = [inner](const Tensor& a) { return sum(grad(inner)({a})[0]); };
  try {
    grad(outer)({x});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("halide_adjoint"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no VJP"), std::string::npos) << e.what();
  }
}

namespace kiln {
namespace {

// avg_pool2d is linear: its gradient is the same at every x, infinities included (PyTorch
// gives the same). The reference's central differences were inf - inf there.
TEST(HalideAdjoint, AvgPoolGradientIgnoresInfiniteInputs) {
  Tensor with_inf = from_vector(std::vector<double>{1, -7, 0, -1, 1, 1, 1, -INFINITY}, Shape({1, 1, 2, 4}));
  Tensor finite = from_vector(std::vector<double>{1, -7, 0, -1, 1, 1, 1, 0}, Shape({1, 1, 2, 4}));
  Tensor w = rand(Shape({1, 1, 1, 2}), 1000, 0.5, 1.5);
  auto loss = [&w](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(avg_pool2d(in[0], {3}, {2}, {1}) * w)};
  };
  const Tensor want = grad(loss, {0})({finite})[0];
  EXPECT_TRUE(allclose(grad(loss, {0})({with_inf})[0], want, 1e-6, 1e-7));
  Graph g = trace(grad_fn(loss, {0}), {with_inf});
  EXPECT_TRUE(allclose(interpret(g, {with_inf}, InterpretMode::Reference)[0], want, 1e-5, 1e-6));
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A NaN gradient at one pooled output reaches only the inputs of its window.
TEST(HalideAdjoint, ANaNGradientStaysInItsWindow) {
  Tensor x = from_vector(std::vector<double>{INFINITY, 0.0, -1.0}, Shape({1, 1, 1, 3}));
  auto loss = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(gelu(adaptive_avg_pool2d(in[0], {1, 3}), "tanh"))};
  };
  Graph g = trace(grad_fn(loss, {0}), {x});
  for (const Tensor& got : {grad(loss, {0})({x})[0], interpret(g, {x}, InterpretMode::Reference)[0]}) {
    std::vector<double> v = got.to_doubles();
    EXPECT_TRUE(std::isfinite(v[1]) && std::isfinite(v[2])) << got.str();
  }
}

}  // namespace
}  // namespace kiln
