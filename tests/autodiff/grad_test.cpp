// Gradients against central finite differences in f64, eager and compiled.
#include <algorithm>
#include <cmath>

#include "autodiff/tape.h"
#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

struct GradCase {
  std::string name;
  std::function<Tensor(const std::vector<Tensor>&)> fn;  // any output; the test reduces it
  std::vector<Tensor> inputs;                            // f64
  std::vector<int> argnums;
  double tol = 1e-6;
  double h = 1e-6;  // finite-difference step (larger where the op computes in f32)
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

// loss = sum(fn(inputs) * w) with fixed random w, so every output element gets its own
// upstream gradient.
std::function<Tensor(const std::vector<Tensor>&)> weighted_loss(const GradCase& c) {
  Tensor probe = c.fn(c.inputs);
  Tensor w = rand(probe.shape(), 99, 0.5, 1.5, probe.dtype());
  auto fn = c.fn;
  return [fn, w](const std::vector<Tensor>& in) { return sum(fn(in) * w); };
}

double eval(const std::function<Tensor(const std::vector<Tensor>&)>& loss, const std::vector<Tensor>& in) {
  return loss(in).item();
}

void check_gradients(const GradCase& c) {
  SCOPED_TRACE(c.name);
  auto loss = weighted_loss(c);
  auto loss_fn = [loss](const std::vector<Tensor>& in) { return std::vector<Tensor>{loss(in)}; };
  std::vector<Tensor> eager = grad(loss_fn, c.argnums)(c.inputs);
  std::vector<Tensor> compiled = compile(grad(loss_fn, c.argnums))(c.inputs);
  ASSERT_EQ(eager.size(), c.argnums.size());
  for (size_t k = 0; k < c.argnums.size(); ++k) {
    const Tensor& x = c.inputs[size_t(c.argnums[k])];
    ASSERT_EQ(eager[k].meta(), x.meta()) << "gradient " << k;
    ASSERT_EQ(compiled[k].meta(), x.meta()) << "gradient " << k;
    std::vector<double> xv = x.to_doubles(), numeric(xv.size());
    const double h = c.h;
    for (size_t i = 0; i < xv.size(); ++i) {
      std::vector<Tensor> plus = c.inputs, minus = c.inputs;
      std::vector<double> p = xv, m = xv;
      p[i] += h;
      m[i] -= h;
      plus[size_t(c.argnums[k])] = from_vector(p, x.shape(), DType::F64);
      minus[size_t(c.argnums[k])] = from_vector(m, x.shape(), DType::F64);
      numeric[i] = (eval(loss, plus) - eval(loss, minus)) / (2 * h);
    }
    Tensor fd = from_vector(numeric, x.shape(), DType::F64);
    EXPECT_TRUE(allclose(eager[k], fd, c.tol, c.tol)) << "input " << c.argnums[k] << "\neager " << eager[k].str(10)
                                                      << "\nfd    " << fd.str(10);
    EXPECT_TRUE(allclose(compiled[k], eager[k], 1e-10, 1e-10)) << "compiled " << compiled[k].str(10);
  }
}

Tensor r64(const Shape& s, uint64_t seed, double lo = -1.5, double hi = 1.5) { return rand(s, seed, lo, hi, DType::F64); }

using V = std::vector<Tensor>;

std::vector<GradCase> unary_cases() {
  std::vector<GradCase> cs;
  auto add = [&](const std::string& name, Tensor (*f)(const Tensor&), double lo = -1.5, double hi = 1.5, double tol = 1e-6,
                 double h = 1e-6) {
    cs.push_back({name, [f](const V& in) { return f(in[0]); }, {r64({2, 3}, cs.size() + 1, lo, hi)}, {0}, tol, h});
  };
  add("sin", kiln::sin);
  add("cos", kiln::cos);
  add("tan", kiln::tan, -1, 1);
  add("asin", kiln::asin, -0.8, 0.8);
  add("acos", kiln::acos, -0.8, 0.8);
  add("atan", kiln::atan, -3, 3);
  add("asinh", kiln::asinh, -3, 3);
  add("acosh", kiln::acosh, 1.2, 4);
  add("atanh", kiln::atanh, -0.8, 0.8);
  add("exp", kiln::exp);
  add("log", kiln::log, 0.2, 3);
  add("abs", kiln::abs);
  add("neg", kiln::neg);
  add("sqrt", kiln::sqrt, 0.2, 3);
  add("rsqrt", kiln::rsqrt, 0.2, 3);
  add("tanh", kiln::tanh);
  add("sigmoid", kiln::sigmoid);
  add("relu", kiln::relu);
  add("erf", kiln::erf, -1.5, 1.5, 1e-4, 1e-3);  // f64 erf computes in f32: a larger step
  add("silu", kiln::silu);
  add("softplus", kiln::softplus, -3, 3);
  cs.push_back({"gelu", [](const V& in) { return gelu(in[0]); }, {r64({7}, 40, -3, 3)}, {0}, 1e-4, 1e-3});
  cs.push_back({"gelu_tanh", [](const V& in) { return gelu(in[0], "tanh"); }, {r64({7}, 41, -3, 3)}, {0}});
  cs.push_back({"leaky_relu", [](const V& in) { return leaky_relu(in[0], 0.1); }, {r64({7}, 42)}, {0}});
  cs.push_back({"clamp", [](const V& in) { return clamp(in[0], -0.5, 0.7); }, {r64({9}, 43)}, {0}});
  cs.push_back({"floor_is_flat", [](const V& in) { return floor(in[0] * 3.0) + in[0]; }, {r64({5}, 44)}, {0}});
  cs.push_back({"cast_f32_round_trip", [](const V& in) { return cast(cast(in[0], DType::F32), DType::F64) * in[0]; },
                {r64({5}, 45)}, {0}, 1e-4, 1e-3});
  return cs;
}

std::vector<GradCase> binary_cases() {
  return {
      {"add_broadcast", [](const V& in) { return in[0] + in[1]; }, {r64({2, 3}, 1), r64({3}, 2)}, {0, 1}},
      {"sub_broadcast", [](const V& in) { return in[0] - in[1]; }, {r64({2, 1}, 3), r64({1, 3}, 4)}, {0, 1}},
      {"mul_broadcast", [](const V& in) { return in[0] * in[1]; }, {r64({2, 3}, 5), r64({2, 1}, 6)}, {0, 1}},
      {"div", [](const V& in) { return in[0] / in[1]; }, {r64({2, 3}, 7), r64({3}, 8, 0.5, 2)}, {0, 1}},
      {"pow", [](const V& in) { return pow(in[0], in[1]); }, {r64({4}, 9, 0.5, 2), r64({4}, 10)}, {0, 1}},
      {"maximum", [](const V& in) { return maximum(in[0], in[1]); }, {r64({6}, 11), r64({6}, 12)}, {0, 1}},
      {"minimum", [](const V& in) { return minimum(in[0], in[1]); }, {r64({6}, 13), r64({1}, 14)}, {0, 1}},
      {"where", [](const V& in) { return where(gt(in[0], 0.0), in[0] * in[1], in[1]); }, {r64({2, 3}, 15), r64({3}, 16)}, {0, 1}},
      {"weak_scalars", [](const V& in) { return 2.0 * in[0] - 1.0 / (in[0] + 3.0); }, {r64({5}, 17)}, {0}},
      {"shared_value", [](const V& in) { Tensor s = sin(in[0]); return s * s + s; }, {r64({5}, 18)}, {0}},
      {"same_input_twice", [](const V& in) { return in[0] * in[1]; }, {r64({3}, 19), r64({3}, 20)}, {1}},
  };
}

std::vector<GradCase> reduction_cases() {
  return {
      {"sum_axes", [](const V& in) { return sum(in[0], {1}); }, {r64({2, 3, 2}, 1)}, {0}},
      {"sum_keepdim_all", [](const V& in) { return sum(in[0], {}, true); }, {r64({2, 3}, 2)}, {0}},
      {"mean", [](const V& in) { return mean(in[0], {0, 2}); }, {r64({2, 3, 2}, 3)}, {0}},
      {"max", [](const V& in) { return max(in[0], {1}); }, {r64({3, 4}, 4)}, {0}},
      {"min_keepdim", [](const V& in) { return min(in[0], {0}, true); }, {r64({3, 4}, 5)}, {0}},
      {"softmax", [](const V& in) { return softmax(in[0], 1); }, {r64({2, 5}, 6)}, {0}},
      {"log_softmax", [](const V& in) { return log_softmax(in[0], 0); }, {r64({4, 3}, 7)}, {0}},
      {"layer_norm_affine", [](const V& in) { return layer_norm(in[0], {4}, in[1], in[2]); },
       {r64({3, 4}, 8), r64({4}, 9), r64({4}, 10)}, {0, 1, 2}},
      {"rms_norm", [](const V& in) { return rms_norm(in[0], {2, 3}, in[1]); }, {r64({2, 2, 3}, 11), r64({2, 3}, 12)}, {0, 1}},
      {"var_std", [](const V& in) { return var(in[0], {1}) + std_dev(in[0], {1}); }, {r64({2, 5}, 13)}, {0}},
      {"mse_loss", [](const V& in) { return mse_loss(in[0], in[1]); }, {r64({6}, 14), r64({6}, 15)}, {0, 1}},
      {"prod", [](const V& in) { return prod(in[0], {1}); }, {r64({3, 4}, 17, 0.5, 1.5)}, {0}},
      // Zeros: none, one and two in a row, where dividing the product by x_i fails.
      {"prod_with_zeros", [](const V& in) { return prod(in[0] * in[1], {1}, true); },
       {r64({3, 4}, 18), from_vector(std::vector<double>{1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 1}, Shape{3, 4}, DType::F64)}, {0}},
      {"prod_all", [](const V& in) { return prod(in[0]); }, {r64({2, 3}, 19, 0.5, 1.5)}, {0}},
      {"argmax_is_flat", [](const V& in) { return cast(argmax(in[0], 1, true), DType::F64) + in[0]; }, {r64({2, 3}, 16)}, {0}},
  };
}

std::vector<GradCase> shape_cases() {
  return {
      {"reshape", [](const V& in) { return sin(reshape(in[0], {3, 2})); }, {r64({2, 3}, 1)}, {0}},
      {"permute", [](const V& in) { return permute(in[0], {2, 0, 1}) * arange(3, DType::F64); }, {r64({2, 3, 2}, 2)}, {0}},
      {"expand", [](const V& in) { return expand(in[0], {4, 3}); }, {r64({1, 3}, 3)}, {0}},
      {"slice", [](const V& in) { return slice(in[0], 1, 1, 4); }, {r64({2, 5}, 4)}, {0}},
      {"slice_step", [](const V& in) { return slice(in[0], 0, 1, 7, 2); }, {r64({7, 2}, 5)}, {0}},
      {"slice_step_tail", [](const V& in) { return slice(in[0], 1, 0, 100, 3); }, {r64({2, 8}, 6)}, {0}},
      {"concat", [](const V& in) { return concat({in[0], in[1] * 2.0}, 1); }, {r64({2, 1}, 7), r64({2, 3}, 8)}, {0, 1}},
      {"stack_split", [](const V& in) { return stack(split(in[0], 1, 0), 1); }, {r64({3, 2}, 9)}, {0}},
      {"pad", [](const V& in) { return pad(in[0], {1, 2, -1, 0}, 3.0); }, {r64({3, 2}, 10)}, {0}},
  };
}

std::vector<GradCase> contraction_and_index_cases() {
  Tensor idx = from_vector(std::vector<int64_t>{2, 0, 2, 1}, {4});
  Tensor gidx = from_vector(std::vector<int64_t>{1, 0, 2, 2, 1, 1}, {3, 2});
  Tensor targets = from_vector(std::vector<int64_t>{1, 0, 3}, {3});
  return {
      {"matmul", [](const V& in) { return matmul(in[0], in[1]); }, {r64({3, 4}, 1), r64({4, 2}, 2)}, {0, 1}},
      {"matmul_batch_broadcast", [](const V& in) { return matmul(in[0], in[1]); }, {r64({2, 3, 4}, 3), r64({4, 2}, 4)}, {0, 1}},
      {"linear", [](const V& in) { return linear(in[0], in[1], in[2]); }, {r64({2, 3}, 5), r64({4, 3}, 6), r64({4}, 7)}, {0, 1, 2}},
      {"index_select", [idx](const V& in) { return index_select(in[0], 0, idx); }, {r64({3, 2}, 8)}, {0}},
      {"embedding", [gidx](const V& in) { return embedding(in[0], gidx); }, {r64({4, 3}, 9)}, {0}},
      {"gather", [gidx](const V& in) { return gather(in[0], 1, gidx); }, {r64({4, 3}, 10)}, {0}},
      {"cross_entropy", [targets](const V& in) { return cross_entropy(in[0], targets); }, {r64({3, 5}, 11, -3, 3)}, {0}},
  };
}

// conv2d's gradients are convolutions, max pooling's go to the maxima; average pooling's come from Halide's
// propagate_adjoints of its algorithm; batch norm is a decomposition.
std::vector<GradCase> conv_cases() {
  return {
      {"conv2d", [](const V& in) { return conv2d(in[0], in[1], in[2]); },
       {r64({1, 2, 5, 5}, 1), r64({3, 2, 3, 3}, 2), r64({3}, 3)}, {0, 1, 2}},
      {"conv2d_stride_pad_dilation", [](const V& in) { return conv2d(in[0], in[1], {}, {2}, {1}, {2}); },
       {r64({2, 2, 6, 7}, 4), r64({2, 2, 2, 3}, 5)}, {0, 1}},
      {"conv2d_stride3_uneven", [](const V& in) { return conv2d(in[0], in[1], {}, {3, 2}, {0, 2}); },
       {r64({1, 1, 8, 5}, 14), r64({2, 1, 2, 3}, 15)}, {0, 1}},
      {"conv2d_groups", [](const V& in) { return conv2d(in[0], in[1], {}, {1}, {1}, {1}, 2); },
       {r64({1, 4, 4, 4}, 6), r64({4, 2, 3, 3}, 7)}, {0, 1}},
      {"conv_transpose2d", [](const V& in) { return conv_transpose2d(in[0], in[1], in[2], {2}, {1}, {1}); },
       {r64({1, 2, 3, 4}, 17), r64({2, 3, 3, 2}, 18), r64({3}, 19)}, {0, 1, 2}},
      {"conv_transpose2d_groups_dilation", [](const V& in) { return conv_transpose2d(in[0], in[1], {}, {1, 2}, {0, 1}, {0}, 2, {2, 1}); },
       {r64({1, 4, 3, 3}, 20), r64({4, 1, 2, 3}, 21)}, {0, 1}},
      {"max_pool2d", [](const V& in) { return max_pool2d(in[0], {2}, {2}, {1}); }, {r64({1, 2, 5, 5}, 8)}, {0}},
      {"max_pool2d_overlap_dilation_ceil", [](const V& in) { return max_pool2d(in[0], {3}, {2}, {1}, {2}, true); },
       {r64({1, 1, 7, 6}, 16)}, {0}},
      {"avg_pool2d", [](const V& in) { return avg_pool2d(in[0], {3}, {2}, {1}); }, {r64({1, 2, 6, 5}, 9)}, {0}},
      {"adaptive_avg_pool2d", [](const V& in) { return adaptive_avg_pool2d(in[0], {2, 3}); }, {r64({1, 2, 5, 7}, 10)}, {0}},
      {"batch_norm_train", [](const V& in) { return batch_norm_train(in[0], {}, {}, in[1], in[2]).out; },
       {r64({3, 2, 2, 2}, 11), r64({2}, 12), r64({2}, 13)}, {0, 1, 2}},
  };
}

class Gradients : public ::testing::TestWithParam<GradCase> {};
TEST_P(Gradients, MatchFiniteDifferences) { check_gradients(GetParam()); }

std::vector<GradCase> all_cases() {
  std::vector<GradCase> all;
  for (auto family : {unary_cases, binary_cases, reduction_cases, shape_cases, contraction_and_index_cases, conv_cases})
    for (GradCase& c : family()) all.push_back(std::move(c));
  return all;
}
INSTANTIATE_TEST_SUITE_P(Ops, Gradients, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Grad, SeedExpressionMatchesTheAnalyticDerivative) {
  // d/dx [exp(sin x) + log|cos x|] = cos x * exp(sin x) - tan x
  Tensor x = rand({64}, 3, -1.2, 1.2, DType::F64);
  auto f = [](const Tensor& t) { return sum(exp(sin(t)) + log(abs(cos(t)))); };
  Tensor want = cos(x) * exp(sin(x)) - tan(x);
  EXPECT_TRUE(allclose(grad(f)({x})[0], want, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(compile(grad(f))({x})[0], want, 1e-12, 1e-12));
  std::vector<Tensor> vg = value_and_grad(f)({x});
  ASSERT_EQ(vg.size(), 2u);
  EXPECT_NEAR(vg[0].item(), f(x).item(), 1e-12);
}

TEST(Grad, ErrorsSayWhatIsWrong) {
  auto vec = [](const Tensor& t) { return t * 2.0; };
  EXPECT_THROW(grad(vec)({rand({3})}), Error);                                   // not a scalar
  EXPECT_THROW(grad([](const Tensor& t) { return sum(t); })({arange(3, DType::I32)}), Error);  // integer input
  EXPECT_THROW(grad([](const Tensor& t) { return sum(t); }, {1})({rand({3})}), Error);  // bad argnum
}

// grad of grad: the inner gradient's ops are differentiated again, eager and compiled.
TEST(Grad, IntermediateGradientsHaveTheirValuesDtypeAsInBackward) {
  // x f64, v = f32(x): v's gradient (g * x, f64) is rounded to f32 before it reaches x,
  // in grad() as in backward() and PyTorch (kiln_fuzz: the two differed in the last bits).
  Tensor x = from_vector(std::vector<double>{0.1, 1.0 / 3.0, -9.7, 2.0 / 7.0}, Shape({2, 2}), DType::F64);
  auto loss = [](const Tensor& t) { return sum(t * triu(cast(t, DType::F32), 0) * 1.7); };
  const Tensor g = grad([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{loss(in[0])}; }, {0})({x})[0];
  Tensor leaf = x.detach().requires_grad();
  loss(leaf).backward();
  EXPECT_EQ(g.to_doubles(), leaf.grad().to_doubles());
  // The upper triangle: f32(x) * 1.7 + f32(x * 1.7) in f64.
  const double x01 = 1.0 / 3.0;
  EXPECT_EQ(g.to_doubles()[1], double(float(x01)) * 1.7 + double(float(x01 * 1.7)));
}

TEST(Grad, SecondDerivatives) {
  Tensor x = rand({5}, 4, -1, 1, DType::F64);
  auto inner = [](const Tensor& a) { return sum(sin(a) * a); };  // d/da = cos a * a + sin a
  auto outer = [inner](const Tensor& a) { return sum(grad(inner)({a})[0]); };
  Tensor want = 2.0 * cos(x) - x * sin(x);
  EXPECT_TRUE(allclose(grad(outer)({x})[0], want, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(compile(grad(outer))({x})[0], want, 1e-12, 1e-12));
}

// Every built-in op has a VJP rule, is marked as having a zero gradient, or is
// differentiated by Halide; only Halide's adjoint op itself is not differentiable.
TEST(Grad, EveryOpIsDifferentiable) {
  for (const std::string& name : op_names()) {
    const OpDef& d = get_op(name);
    if (name == "halide_adjoint" || name.rfind("test_", 0) == 0) continue;
    EXPECT_TRUE(d.vjp || d.zero_gradient || d.halide_adjoint_fallback) << name << " has no gradient";
  }
}

TEST(Grad, InputsTheOutputIgnoresGetZerosAndNoWork) {
  auto f = [](const Tensor& a, const Tensor& b) { return sum(a * 3.0); };
  std::vector<Tensor> g = grad(f, {0, 1})({rand({4}), rand({2, 2})});
  EXPECT_TRUE(allclose(g[0], full({4}, 3.0), 0, 0));
  EXPECT_TRUE(allclose(g[1], zeros({2, 2}), 0, 0));
  // The gradient graph does no work for b: nothing reads it.
  Graph graph = trace(grad(f, {0}), {rand({4}), rand({2, 2})});
  EXPECT_TRUE(graph.users(graph.inputs()[1]).empty()) << graph.str();
}

// Rules skip the gradients nobody asked for: the eager backward of a matmul and of a
// conv2d with only the weight differentiated runs one contraction, not two.
TEST(Grad, RulesDoNoWorkForInputsThatNeedNoGradient) {
  auto count = [](const Tape& t, const std::string& op) {
    return std::count_if(t.entries().begin(), t.entries().end(), [&](const TapeEntry& e) { return e.op == op; });
  };
  Tensor x = randn({8, 16}, 1), w = randn({16, 4}, 2);
  {
    Tape outer;
    std::vector<Tensor> g = grad([](const Tensor& a, const Tensor& b) { return sum(matmul(a, b)); }, {1})({x, w});
    EXPECT_EQ(count(outer, "matmul"), 2) << "the forward and the weight's gradient only";
    EXPECT_TRUE(allclose(g[0], matmul(transpose(x, 0, 1), ones({8, 4})), 1e-5, 1e-5));
  }
  {
    Tape outer;
    Tensor wr = w.clone().requires_grad();
    sum(matmul(x, wr)).backward();
    EXPECT_EQ(count(outer, "matmul"), 2) << "backward() on a leaf that needs grad and one that does not";
    EXPECT_TRUE(allclose(wr.grad(), matmul(transpose(x, 0, 1), ones({8, 4})), 1e-5, 1e-5));
  }
  {
    Tape outer;
    Tensor img = randn({1, 2, 5, 5}, 3), k = randn({3, 2, 3, 3}, 4).requires_grad();
    sum(conv2d(img, k, Tensor(), {1}, {1})).backward();
    EXPECT_EQ(count(outer, "conv2d"), 2) << "the forward and the weight's gradient only";
    ASSERT_TRUE(k.grad().defined());
  }
}

}  // namespace

// floor's gradient is zero everywhere, yet a NaN it meets downstream stays NaN, as in
// PyTorch: the simplifier must not fold the zero into a dropped reduction (found by
// kiln_fuzz: the compiled weight gradient of ceil(layer_norm(x)) was 0 for a NaN row).
TEST(Grad, ZeroGradientsTimesNaNAreNaN) {
  Tensor x = from_vector(std::vector<double>{0.0, 89.0, 1.0, NAN}, Shape({1, 4}), DType::F32);
  Tensor w = ones({4}), b = zeros({4});
  auto loss = [](const Tensor& x, const Tensor& w, const Tensor& b) { return sum(floor(layer_norm(x, {4}, w, b))); };
  const std::vector<Tensor> eager = grad(loss, {1})({x, w, b});
  const std::vector<Tensor> compiled = compile(grad(loss, {1}))({x, w, b});
  for (const Tensor& g : {eager[0], compiled[0]})
    for (double v : g.to_doubles()) EXPECT_TRUE(std::isnan(v)) << g.str();
}

namespace {

// kiln_fuzz seed 3103, program 306: Halide bounds a widened f16 as finite and folded the
// compiled 0 * sigmoid'(NaN) of this gradient to 0. The chain rule gives NaN, as eager does.
TEST(Grad, CompiledF16GradientsKeepNaNThroughZeroDerivatives) {
  using namespace kiln;
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    const Tensor x = from_vector(std::vector<double>{1.0, 1.0, 2.0, NAN}, Shape{2, 2}, t);
    const Tensor w = rand(Shape{2, 2}, 1000, 0.5, 1.5, t);
    auto loss = [&](const Tensor& v) { return sum(ceil(softplus(v)) * w); };
    const std::vector<double> got = compile(grad(loss, {0}))({x})[0].to_doubles();
    const std::vector<double> eager = grad(loss, {0})({x})[0].to_doubles();
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(got[i], 0.0) << dtype_name(t);
    EXPECT_TRUE(std::isnan(got[3])) << dtype_name(t) << " compiled " << got[3];
    EXPECT_TRUE(std::isnan(eager[3])) << dtype_name(t) << " eager " << eager[3];
  }
}

}  // namespace
