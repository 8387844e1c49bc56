#include <cmath>
#include <limits>

#include "ops/op_test_util.h"
#include "autodiff/tape.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

struct UnaryCase {
  const char* op;
  Tensor (*fn)(const Tensor&);
  double low, high;           // domain for random inputs
  std::vector<double> edges;  // edge values inside the op's domain
  bool integers;              // also defined on integer tensors (same dtype out)
  Attrs attrs = {};
  const char* label = nullptr;  // test name when one op is tested with several attrs
};

void PrintTo(const UnaryCase& c, std::ostream* os) { *os << (c.label ? c.label : c.op); }

const double kInf = INFINITY, kNaN = NAN;

std::vector<UnaryCase> unary_cases() {
  return {
      {"sin", kiln::sin, -10, 10, {0.0, -0.0, 1e4, kInf, -kInf, kNaN}, false},
      {"cos", kiln::cos, -10, 10, {0.0, 1e4, kInf, -kInf, kNaN}, false},
      {"tan", kiln::tan, -1.4, 1.4, {0.0, -1.0, kInf, kNaN}, false},
      {"asin", kiln::asin, -1, 1, {0.0, -0.0, 1.0, -1.0, 1.5, kInf, kNaN}, false},
      {"acos", kiln::acos, -1, 1, {0.0, 1.0, -1.0, -1.5, -kInf, kNaN}, false},
      {"atan", kiln::atan, -10, 10, {0.0, -0.0, 1e30, kInf, -kInf, kNaN}, false},
      {"asinh", kiln::asinh, -10, 10, {0.0, -0.0, 1e-30, 1e30, -1e30, kInf, -kInf, kNaN}, false},
      {"acosh", kiln::acosh, 1, 10, {1.0, 0.5, 1e30, kInf, -kInf, kNaN}, false},
      {"atanh", kiln::atanh, -0.99, 0.99, {0.0, -0.0, 1.0, -1.0, 2.0, kNaN}, false},
      {"exp", kiln::exp, -20, 20, {0.0, 80.0, -100.0, 1000.0, -kInf, kNaN}, false},
      {"log", kiln::log, 1e-3, 100, {1.0, 0.0, 1e30, kInf, kNaN}, false},
      {"abs", kiln::abs, -10, 10, {0.0, -0.0, -kInf, kNaN}, true},
      {"neg", kiln::neg, -10, 10, {0.0, kInf, kNaN}, true},
      {"sqrt", kiln::sqrt, 0, 100, {0.0, 1.0, kInf, kNaN}, false},
      {"rsqrt", kiln::rsqrt, 1e-2, 100, {1.0, 4.0, kInf, kNaN}, false},
      {"tanh", kiln::tanh, -5, 5, {0.0, 20.0, -20.0, kInf, -kInf, kNaN}, false},
      {"sigmoid", kiln::sigmoid, -10, 10, {0.0, 50.0, -50.0, kNaN}, false},
      {"relu", kiln::relu, -10, 10, {0.0, -0.0, -kInf, kInf, kNaN}, true},
      {"erf", kiln::erf, -3, 3, {0.0, 5.0, -5.0, kInf, kNaN}, false},
      {"floor", kiln::floor, -10, 10, {-0.5, 2.5, -2.5, kInf, kNaN}, true},
      {"ceil", kiln::ceil, -10, 10, {-0.5, 2.5, -2.5, kInf, kNaN}, true},
      {"round", kiln::round, -10, 10, {0.5, 1.5, 2.5, -0.5, -2.5, kNaN}, true},
      {"silu", kiln::silu, -10, 10, {0.0, 50.0, -50.0, kNaN}, false},
      {"softplus", kiln::softplus, -10, 30, {0.0, 20.0, 21.0, -50.0, kNaN}, false},
      {"gelu", [](const Tensor& x) { return gelu(x); }, -6, 6, {0.0, -10.0, 10.0, kNaN}, false,
       {{"approximate", std::string("none")}}},
      {"gelu", [](const Tensor& x) { return gelu(x, "tanh"); }, -6, 6, {0.0, -10.0, 10.0, kNaN}, false,
       {{"approximate", std::string("tanh")}}, "gelu_tanh"},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, -10, 10, {0.0, -kInf, kNaN}, false,
       {{"negative_slope", 0.2}}},
      {"clamp", [](const Tensor& x) { return clamp(x, -1.5, 2.0); }, -5, 5, {-kInf, kInf, kNaN, 2.0}, true,
       {{"min", -1.5}, {"max", 2.0}}},
      {"logical_not", kiln::logical_not, -2, 2, {0.0, -0.0, kNaN}, true},
  };
}

class UnaryOps : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryOps, MatchReferenceAcrossShapesAndDtypes) {
  const UnaryCase& c = GetParam();
  std::vector<DType> dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16};
  if (c.integers) dtypes.push_back(DType::I32);
  uint64_t seed = 1;
  const std::string name = c.label ? c.label : c.op;
  for (auto [dt, shape_index] : dtype_shape_pairs(dtypes, test_shapes().size(), 4, name)) {
    const Shape& s = test_shapes()[shape_index];
    bool integral = !is_float(dt);
    // f16 overflows above 65504: keep its edges in range.
    std::vector<double> edges;
    for (double e : c.edges) {
      if (integral && !std::isfinite(e)) continue;
      if (dt == DType::F16 && std::isfinite(e) && std::abs(e) > 6e4) continue;
      edges.push_back(e);
    }
    Tensor x = random_with_edges(s, dt, seed++, c.low, c.high, edges);
    // erf (and gelu through it) computes f64 inputs with Halide's f32 erf.
    std::string op = c.op;
    bool f32_erf = dt == DType::F64 && (op == "erf" || (op == "gelu" && c.attrs.get_string("approximate") == "none"));
    expect_matches_reference(
        c.op, [&](const std::vector<Tensor>& in) { return c.fn(in[0]); }, {x}, c.attrs,
        std::string(dtype_name(dt)) + s.str(), std::nullopt,
        f32_erf ? std::optional<Tolerance>(Tolerance{1e-6, 1e-6}) : std::nullopt);
  }
}

// The same cases compiled for CUDA: Halide lowers math differently there (libdevice and
// its own polynomials), so edge values are checked on the GPU too.
TEST_P(UnaryOps, MatchReferenceOnTheGpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; CUDA code generation is tested without one";
  const UnaryCase& c = GetParam();
  for (DType dt : {DType::F32, DType::F16}) {
    std::vector<double> edges;
    for (double e : c.edges) {
      if (dt == DType::F16 && std::isfinite(e) && std::abs(e) > 6e4) continue;
      edges.push_back(e);
    }
    Tensor x = random_with_edges(Shape{3, 1000}, dt, 7, c.low, c.high, edges);
    expect_matches_reference_on_gpu(c.op, [&](const std::vector<Tensor>& in) { return c.fn(in[0]); }, {x}, c.attrs,
                                    dtype_name(dt));
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryOps, ::testing::ValuesIn(unary_cases()),
                         [](const auto& info) { return std::string(info.param.label ? info.param.label : info.param.op); });

TEST(UnaryOps, IntegerInputsGiveFloatResults) {
  Tensor x = from_vector(std::vector<int32_t>{0, 1, 2}, {3});
  Tensor y = kiln::exp(x);
  EXPECT_EQ(y.dtype(), DType::F32);
  EXPECT_NEAR(y.to_doubles()[2], std::exp(2.0), 1e-5);
  EXPECT_EQ(kiln::abs(from_vector(std::vector<int32_t>{-3}, {1})).to_vector<int>()[0], 3);
}

// gelu(x) is x for large x: near the type's largest value the factor 0.5 * (1 + tanh)
// must meet x once, or x * 2 overflows (found by kiln_fuzz in bf16, compiled).
TEST(UnaryOps, GeluOfTheLargestValuesIsFinite) {
  for (DType t : {DType::F32, DType::BF16}) {
    Tensor x = from_vector(std::vector<double>{3.0e38, -3.0e38, 1.0}, Shape({3}), t);
    for (const std::string approximate : {"none", "tanh"}) {
      auto f = [approximate](const Tensor& v) { return gelu(v, approximate); };
      // With a second output reading x (as a linear's bias), as kiln_fuzz found it.
      auto g = [f](const Tensor& v) { return std::vector<Tensor>{f(v), v * 2.0}; };
      for (const Tensor& y : {f(x), compile(f)(x), compile(g)(x)[0]}) {
        const std::vector<double> got = y.to_doubles();
        EXPECT_EQ(got[0], x.to_doubles()[0]) << approximate << " " << y.str();
        EXPECT_EQ(got[1], 0.0) << approximate << " " << y.str();
      }
    }
  }
}

// tanh-gelu's tail: 1 + tanh(z) keeps no digits in f32 by x = -5 (30% off, found by
// kiln_fuzz); sigmoid(2z) does.
TEST(UnaryOps, TanhGeluTailIsAccurate) {
  // 0.5 * (1 + tanh(z)) = 1 / (1 + exp(-2z)), which stays exact in double in the tail.
  auto exact = [](double x) { return x / (1.0 + std::exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x))); };
  Tensor x = from_vector(std::vector<double>{-5.0, -7.0, -3.0, 0.5}, Shape({4}), DType::F32);
  auto f = [](const Tensor& v) { return gelu(v, "tanh"); };
  for (const Tensor& y : {f(x), compile(f)(x)}) {
    const std::vector<double> got = y.to_doubles(), in = x.to_doubles();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], exact(in[i]), 1e-5 * std::fabs(exact(in[i]))) << in[i];
  }
}

TEST(UnaryOps, BoolArithmeticIsRejected) {
  Tensor b = cast(from_vector(std::vector<int32_t>{0, 1}, {2}), DType::Bool);
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_THROW(neg(b), Error);
  EXPECT_THROW(b - b, Error);  // PyTorch refuses bool subtraction too
}

TEST(BinaryOps, BoolArithmeticFollowsPyTorch) {
  Tensor b = cast(from_vector(std::vector<int32_t>{0, 1, 1, 0}, {4}), DType::Bool);
  Tensor c = cast(from_vector(std::vector<int32_t>{0, 1, 0, 1}, {4}), DType::Bool);
  for (bool compiled : {false, true}) {
    auto run = [compiled](auto fn, const Tensor& x, const Tensor& y) {
      return compiled ? compile([fn](const Tensor& p, const Tensor& q) { return fn(p, q); })(x, y) : fn(x, y);
    };
    Tensor sum_ = run([](const Tensor& p, const Tensor& q) { return p + q; }, b, c);
    EXPECT_EQ(sum_.dtype(), DType::Bool);
    EXPECT_EQ(sum_.to_doubles(), std::vector<double>({0, 1, 1, 1}));
    Tensor prod_ = run([](const Tensor& p, const Tensor& q) { return p * q; }, b, c);
    EXPECT_EQ(prod_.to_doubles(), std::vector<double>({0, 1, 0, 0}));
    Tensor mixed = run([](const Tensor& p, const Tensor& q) { return p * 2.5 + q; }, b, c);
    EXPECT_EQ(mixed.dtype(), DType::F32);
    EXPECT_EQ(mixed.to_doubles(), std::vector<double>({0, 3.5, 2.5, 1}));
    Tensor quotient = run([](const Tensor& p, const Tensor& q) { return p / q; }, b, c);
    EXPECT_EQ(quotient.dtype(), DType::F32);
    EXPECT_EQ(quotient.to_doubles()[1], 1.0);
  }
  EXPECT_EQ((b + 2.0).dtype(), DType::I64);
}

// Integer add, sub and mul wrap around as PyTorch's do, eager, compiled and in the f64
// reference interpreter alike (which computed them in double and saturated).
TEST(BinaryOps, IntegerArithmeticWrapsAround) {
  const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  const Tensor a = from_vector(std::vector<int32_t>{lo, hi, hi, 46341, -7}, {5});
  const Tensor b = from_vector(std::vector<int32_t>{lo, 1, hi, 46341, 3}, {5});
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * in[1], in[0] + in[1], in[0] - in[1] - in[1]};
  };
  const std::vector<double> mul = {0, double(hi), 1, double(int32_t(uint32_t(46341u * 46341u))), -21},
                            add = {0, double(lo), -2, 92682, -4}, sub = {double(lo), double(hi - 2), double(-hi), -46341, -13};
  Graph g = trace(fn, {a, b});
  for (const auto& out : {fn({a, b}), compile(fn)({a, b}), interpret(g, {a, b}, InterpretMode::Reference)}) {
    EXPECT_EQ(out[0].dtype(), DType::I32);
    EXPECT_EQ(out[0].to_doubles(), mul);
    EXPECT_EQ(out[1].to_doubles(), add);
    EXPECT_EQ(out[2].to_doubles(), sub);
  }
  // i64 too: 2^62 * 4 wraps to 0.
  const Tensor c = from_vector(std::vector<int64_t>{int64_t(1) << 62}, {1}), d = from_vector(std::vector<int64_t>{4}, {1});
  auto prod = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * in[1]}; };
  EXPECT_EQ(interpret(trace(prod, {c, d}), {c, d}, InterpretMode::Reference)[0].to_doubles(), std::vector<double>{0});
  EXPECT_EQ((c * d).to_doubles(), std::vector<double>{0});
}

TEST(UnaryOps, IntegerNegAndAbsWrapAroundAndKeepEveryBit) {
  // As PyTorch: -INT_MIN and abs(INT_MIN) are INT_MIN. The reference once computed them in
  // double and saturated on the store (INT_MAX), and rounded i64 values past 2^53.
  const int32_t lo = std::numeric_limits<int32_t>::min();
  const Tensor a = from_vector(std::vector<int32_t>{lo, -5, 7, 0}, {4});
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{-in[0], abs(in[0])}; };
  for (const auto& out : {fn({a}), compile(fn)({a}), interpret(trace(fn, {a}), {a}, InterpretMode::Reference)}) {
    EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{double(lo), 5, -7, 0}));
    EXPECT_EQ(out[1].to_doubles(), (std::vector<double>{double(lo), 5, 7, 0}));
  }
  const int64_t big = (int64_t(1) << 53) + 1;
  const Tensor b = from_vector(std::vector<int64_t>{-big, std::numeric_limits<int64_t>::min()}, {2});
  for (const auto& out : {fn({b}), interpret(trace(fn, {b}), {b}, InterpretMode::Reference)}) {
    for (const Tensor& t : out) {
      const int64_t* v = static_cast<const int64_t*>(t.to_host().data());
      EXPECT_EQ(v[0], big);
      EXPECT_EQ(v[1], std::numeric_limits<int64_t>::min());
    }
  }
}

struct BinaryCase {
  const char* op;
  Tensor (*fn)(const Tensor&, const Tensor&);
  double low, high;
  bool integers;
};

void PrintTo(const BinaryCase& c, std::ostream* os) { *os << c.op; }

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", kiln::add, -10, 10, true},       {"sub", kiln::sub, -10, 10, true},
      {"mul", kiln::mul, -10, 10, true},       {"div", kiln::div, 0.5, 10, true},
      {"pow", kiln::pow, 0.1, 3, true},        {"maximum", kiln::maximum, -10, 10, true},
      {"minimum", kiln::minimum, -10, 10, true},
      // Small integer ranges so that equal values (and ties) occur.
      {"eq", kiln::eq, -3, 3, true}, {"ne", kiln::ne, -3, 3, true}, {"lt", kiln::lt, -3, 3, true},
      {"le", kiln::le, -3, 3, true}, {"gt", kiln::gt, -3, 3, true}, {"ge", kiln::ge, -3, 3, true},
      {"logical_and", kiln::logical_and, -1, 2, true}, {"logical_or", kiln::logical_or, -1, 2, true},
  };
}

class BinaryOps : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryOps, MatchReferenceWithBroadcasting) {
  const BinaryCase& c = GetParam();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape{7}, Shape{7}},       {Shape{}, Shape{6}},         {Shape{3, 1, 5}, Shape{4, 5}},
      {Shape{2, 1}, Shape{1, 3}}, {Shape{1}, Shape{2, 3, 1}},  {Shape{5, 4}, Shape{}}};
  std::vector<DType> dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16};
  if (c.integers) dtypes.push_back(DType::I32);
  uint64_t seed = 100;
  for (auto [dt, shape_index] : dtype_shape_pairs(dtypes, shapes.size(), 2, c.op)) {
    const auto& [sa, sb] = shapes[shape_index];
    Tensor a = random_with_edges(sa, dt, seed++, c.low, c.high);
    Tensor b = random_with_edges(sb, dt, seed++, c.low, c.high);
    if (std::string(c.op).size() == 2 || std::string(c.op).rfind("logical", 0) == 0) {
      a = floor(a);  // ties are the interesting case for comparisons
      b = floor(b);
    }
    if (!is_float(dt) && std::string(c.op) == "div") b = b + 1;  // no integer 0 divisors
    expect_matches_reference(c.op, [&](const std::vector<Tensor>& in) { return c.fn(in[0], in[1]); },
                             {a, b}, {}, std::string(dtype_name(dt)) + sa.str() + sb.str());
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryOps, ::testing::ValuesIn(binary_cases()),
                         [](const auto& info) { return std::string(info.param.op); });

TEST(BinaryOps, EdgeValues) {
  Tensor a = from_vector(std::vector<float>{1, -1, 0, NAN, 2, INFINITY}, {6});
  Tensor b = from_vector(std::vector<float>{0, 0, 0, 1, NAN, INFINITY}, {6});
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum"}) {
    expect_matches_reference(op, [op](const std::vector<Tensor>& in) { return apply_op(op, in); },
                             {a, b}, {}, "edges");
  }
  std::vector<double> mx = maximum(a, b).to_doubles();
  EXPECT_TRUE(std::isnan(mx[3]) && std::isnan(mx[4])) << "maximum propagates NaN";
  std::vector<double> q = (a / b).to_doubles();
  EXPECT_EQ(q[0], INFINITY);
  EXPECT_EQ(q[1], -INFINITY);
  EXPECT_TRUE(std::isnan(q[2]));
}

TEST(BinaryOps, ComparisonsWithNaNAndWhere) {
  Tensor a = from_vector(std::vector<float>{1, NAN, 3, 2}, {4});
  Tensor b = from_vector(std::vector<float>{1, 1, NAN, 5}, {4});
  EXPECT_EQ(eq(a, b).to_vector<int>(), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(ne(a, b).to_vector<int>(), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(lt(a, b).to_vector<int>(), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(ge(a, 2.0).dtype(), DType::Bool);
  Tensor c = gt(a, 1.5);
  expect_matches_reference("where", [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
                           {c, a, scalar_tensor(-1.0)}, {}, "where");
  Tensor m = where(lt(rand({3, 1}, 1), 0.5), rand({1, 4}, 2), zeros({3, 4}, DType::F64));
  EXPECT_EQ(m.meta().str(), "f64[3, 4]");
  EXPECT_THROW(where(a, a, b), Error);  // the condition must be bool
}

TEST(BinaryOps, TypePromotionAndScalars) {
  Tensor i = from_vector(std::vector<int32_t>{1, 2, 3}, {3});
  Tensor f = from_vector(std::vector<float>{0.5f, 0.5f, 0.5f}, {3});
  EXPECT_EQ((i + f).dtype(), DType::F32);
  EXPECT_EQ((i + 1).dtype(), DType::I32);        // weak integer scalar
  EXPECT_EQ((i + 0.5).dtype(), DType::F32);      // fractional scalar promotes
  EXPECT_EQ((i / i).dtype(), DType::F32);        // true division
  EXPECT_EQ((cast(f, DType::F16) * 2.0).dtype(), DType::F16);
  EXPECT_EQ((2.0 - f).to_vector<float>(), (std::vector<float>{1.5f, 1.5f, 1.5f}));
  EXPECT_EQ((-f).to_vector<float>()[0], -0.5f);
  EXPECT_EQ(pow(i, 2.0).to_vector<int>(), (std::vector<int>{1, 4, 9}));
  EXPECT_EQ((cast(i, DType::F64) * f).dtype(), DType::F64);
}

TEST(BinaryOps, IncompatibleShapesNameTheOp) {
  try {
    zeros({3}) + zeros({4});
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("[3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  }
  EXPECT_THROW(apply_op("add", {zeros({3})}), Error);  // wrong arity
  EXPECT_THROW(apply_op("no_such_op", {zeros({3})}), Error);
}

// Regression: Halide 21 turned float(bool) * 0.5 into integer intrinsics with a half
// constant and then failed to compile it; bool -> float casts are selects now.
TEST(Cast, BoolToFloatInsideArithmeticCompiles) {
  Tensor a = rand({6}, 11, -1.5, 1.5, DType::F64), b = from_vector(std::vector<double>{1, 0, 0, 0, 0, 0}, {6}, DType::F64);
  b = where(eq(arange(6, DType::F64), 1.0), a, b);  // one tie
  auto f = [](const Tensor& x, const Tensor& y) {
    return 1.0 - (cast(gt(x, y), DType::F64) + 0.5 * cast(eq(x, y), DType::F64));
  };
  EXPECT_TRUE(allclose(compile(f)(a, b), f(a, b), 0, 0));
  std::vector<double> got = f(a, b).to_doubles(), av = a.to_doubles(), bv = b.to_doubles();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 1.0 - ((av[i] > bv[i]) + 0.5 * (av[i] == bv[i])));
}

TEST(Cast, BetweenAllDtypes) {
  Tensor x = from_vector(std::vector<double>{-2.75, -1.0, 0.0, 0.5, 3.25}, {5}, DType::F64);
  for (DType from : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
    for (DType to : {DType::Bool, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64}) {
      Tensor src = cast(x, from);
      expect_matches_reference("cast", [to](const std::vector<Tensor>& in) { return cast(in[0], to); },
                               {src}, {{"dtype", std::string(dtype_name(to))}},
                               std::string(dtype_name(from)) + "->" + dtype_name(to));
    }
  }
  EXPECT_EQ(cast(x, DType::I32).to_vector<int>(), (std::vector<int>{-2, -1, 0, 0, 3}));
  EXPECT_EQ(cast(x, DType::Bool).to_vector<int>(), (std::vector<int>{1, 1, 0, 1, 1}));
}

// NaN is true, as in C++ and PyTorch; -0 is false (kiln_fuzz: cast(NaN, bool) was false,
// Halide's float != is ordered).
// A NaN or inf computed in f32 and stored as f16 or bf16 by a fused op (ceil, floor) is
// still true, and still NaN or inf to the ops that test it: the compiled tests read the
// value widened back to f32, whose bit test LLVM folded to zero (kiln_fuzz: an f16 ceil
// cast to bool; logical_and of an f16 adaptive_avg_pool2d's inf).
TEST(Cast, ComputedHalfNaNAndInfAreTrue) {
  for (DType t : {DType::F16, DType::BF16}) {
    Tensor x = from_vector(std::vector<double>{NAN, 1.5, 0.0, -0.4, INFINITY}, {5}, t);
    for (auto op : {+[](const Tensor& a) { return ceil(a); }, +[](const Tensor& a) { return floor(a); }}) {
      auto f = [op](const Tensor& a) {
        const Tensor y = op(a);
        return std::vector<Tensor>{cast(y, DType::Bool), logical_and(y, y), logical_not(y), ne(y, y)};
      };
      const std::vector<Tensor> eager = f(x), compiled = compile(f)(x);
      for (size_t k = 0; k < eager.size(); ++k) {
        const std::vector<double> e = eager[k].to_doubles(), c = compiled[k].to_doubles();
        EXPECT_EQ(e, c) << dtype_name(t) << " output " << k;
        EXPECT_EQ(c[0], k == 2 ? 0.0 : 1.0) << dtype_name(t) << " output " << k;  // NaN: true, and NaN != NaN
        EXPECT_EQ(c[4], k == 2 || k == 3 ? 0.0 : 1.0) << dtype_name(t) << " output " << k;
      }
    }
  }
}

TEST(Cast, NaNIsTrue) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    Tensor x = from_vector(std::vector<double>{NAN, -0.0, 0.0, -INFINITY, 0.5}, {5}, t);
    Tensor one = ones({5}, t);
    auto f = [](const Tensor& a, const Tensor& b) {
      return std::vector<Tensor>{cast(a, DType::Bool), logical_and(a, b), logical_or(a, b * 0.0), logical_not(a),
                                 where(cast(a, DType::Bool), b, b * 0.0)};
    };
    const std::vector<double> truth = {1, 0, 0, 1, 1};
    for (const auto& outs : {f(x, one), compile(f)(x, one)}) {
      for (size_t k = 0; k < outs.size(); ++k) {
        const std::vector<double> got = outs[k].to_doubles();
        for (size_t i = 0; i < truth.size(); ++i)
          EXPECT_EQ(got[i], k == 3 ? 1 - truth[i] : truth[i]) << dtype_name(t) << " output " << k << " at " << i;
      }
    }
  }
}

TEST(BinaryOps, F16AndBf16CompareByValue) {
  // kiln_fuzz: their 16-bit patterns were compared as if of one format (3 <= 3 was false).
  Tensor h = from_vector(std::vector<double>{0.0, -1.0, 3.0, 1.0, -315.0, 3.5}, Shape({6}), DType::F16);
  Tensor b = scalar_tensor(3.0, DType::BF16), bv = full(Shape({6}), 3.0, DType::BF16);
  const std::vector<double> le_want = {1, 1, 1, 1, 1, 0}, eq_want = {0, 0, 1, 0, 0, 0};
  auto f = [](const Tensor& x, const Tensor& y, const Tensor& z) {
    return std::vector<Tensor>{le(x, y), eq(x, y), ge(z, x)};
  };
  for (const auto& outs : {f(h, b, bv), compile(f)(h, b, bv)}) {
    EXPECT_EQ(outs[0].to_doubles(), le_want) << outs[0].str();
    EXPECT_EQ(outs[1].to_doubles(), eq_want) << outs[1].str();
    EXPECT_EQ(outs[2].to_doubles(), le_want) << outs[2].str();
  }
}

TEST(UnaryOps, ClampToANaNBoundIsNaNAsInPyTorch) {
  Tensor x = from_vector(std::vector<double>{1.0, -3.0, INFINITY}, Shape({3}));
  for (auto [lo, hi] : {std::pair<std::optional<double>, std::optional<double>>{NAN, std::nullopt}, {std::nullopt, NAN}, {0.0, NAN}}) {
    auto f = [lo = lo, hi = hi](const Tensor& t) { return clamp(t, lo, hi); };
    for (const Tensor& y : {f(x), compile(f)(x)})
      for (double v : y.to_doubles()) EXPECT_TRUE(std::isnan(v)) << y.str();
  }
  EXPECT_THROW(clamp(ones(Shape({2}), DType::I32), NAN, std::nullopt), Error);
}

TEST(Eager, KernelsAreCachedPerSignatureNotPerSize) {
  Tensor a = rand({123}, 1), b = rand({77}, 2);
  kiln::sqrt(a);
  int before = eager_kernels_compiled();
  kiln::sqrt(b);             // same op, dtype, rank: no new kernel
  kiln::sqrt(rand({9, 9}));  // rank 2: new kernel
  EXPECT_EQ(eager_kernels_compiled(), before + 1);
}

TEST(Eager, AKernelPlannedForLargerSizesServesSmallerOnes) {
  // A shape-generic kernel is planned for its first call's sizes. A sum over dim 0
  // planned for [2, 33, 65] (register tiles of 8 x 8, edges shifted inwards) read its
  // input at -2 when called with [2, 9, 6] (kiln_fuzz seed 70000, program 970).
  for (DType t : {DType::F64, DType::F32}) {
    for (const Shape& shape : {Shape{2, 33, 65}, Shape{2, 9, 6}, Shape{2, 7, 3}, Shape{3, 2, 2}}) {
      const Tensor x = rand(shape, 11, -1, 1, t);
      const Tensor want = get_op("sum").reference({x}, {{"axes", std::vector<int64_t>{0}}, {"keepdim", true}},
                                                  TensorMeta{t, Shape{1, shape[1].size, shape[2].size}});
      Tensor got;
      ASSERT_NO_THROW(got = sum(x, {0}, true)) << dtype_name(t) << shape.str();
      EXPECT_TRUE(allclose(got, want, 1e-5, 1e-6)) << dtype_name(t) << shape.str();
    }
  }
}

TEST(Eager, SizesThatKeepComingGetAKernelOfTheirOwn) {
  Tensor x = randn({128, 130}, 7), y = randn({5, 33}, 8);  // x: kEagerExactMinElements or more
  const Tensor first = log_softmax(x, -1);  // the shape-generic kernel
  int before = eager_kernels_compiled();
  for (int call = 2; call < kEagerHotCalls; ++call) log_softmax(x, -1);
  EXPECT_EQ(eager_kernels_compiled(), before);
  const Tensor hot = log_softmax(x, -1);  // the kEagerHotCalls-th in a row: one for 128 x 130
  EXPECT_EQ(eager_kernels_compiled(), before + 1);
  for (int i = 0; i < 3; ++i) log_softmax(x, -1);
  EXPECT_EQ(eager_kernels_compiled(), before + 1);
  EXPECT_TRUE(allclose(hot, first, 1e-6, 1e-7)) << max_abs_diff(hot, first);
  // Other sizes of the signature still run the generic kernel.
  const Tensor other = log_softmax(y, -1);
  EXPECT_EQ(eager_kernels_compiled(), before + 1);
  // Small ones keep the generic kernel however often they come: a compile would not pay.
  for (int call = 0; call < 2 * kEagerHotCalls; ++call) log_softmax(y, -1);
  EXPECT_EQ(eager_kernels_compiled(), before + 1);
  EXPECT_TRUE(allclose(other, compile([](const Tensor& t) { return log_softmax(t, -1); })(y), 1e-6, 1e-7));
}

TEST(Eager, AffineNormsRunAsOneKernelUnlessAGradientNeedsTheirSteps) {
  Tensor x = randn({5, 33}, 1), w = randn({33}, 2), b = randn({33}, 3);
  // The reference: the same ops one by one (a tape records, so no composite).
  auto steps = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb) {
    Tape tape;
    const int64_t n = xx.shape().dims().back().size;
    return std::make_pair(layer_norm(xx, {n}, ww, bb), rms_norm(xx, {n}, ww));
  };
  const auto [ln_want, rms_want] = steps(x, w, b);
  layer_norm(x, {33}, w, b);
  rms_norm(x, {33}, w);
  int before = eager_kernels_compiled();
  Tensor ln = layer_norm(x, {33}, w, b), rms = rms_norm(x, {33}, w);
  EXPECT_EQ(eager_kernels_compiled(), before);  // cached, one kernel each
  EXPECT_TRUE(allclose(ln, ln_want, 1e-5, 1e-6)) << max_abs_diff(ln, ln_want);
  EXPECT_TRUE(allclose(rms, rms_want, 1e-5, 1e-6)) << max_abs_diff(rms, rms_want);
  // Another size of the same signature: no new kernel; a new signature (no bias): one.
  Tensor x2 = randn({7, 9}, 4), w2 = randn({9}, 5), b2 = randn({9}, 6);
  EXPECT_TRUE(allclose(layer_norm(x2, {9}, w2, b2), steps(x2, w2, b2).first, 1e-5, 1e-6));
  EXPECT_EQ(eager_kernels_compiled(), before);
  layer_norm(x2, {9}, w2);
  EXPECT_EQ(eager_kernels_compiled(), before + 1);
  // A weight that needs grad: op by op, so backward() reaches it.
  Tensor wg = w.detach().requires_grad();
  sum(layer_norm(x, {33}, wg, b)).backward();
  ASSERT_TRUE(wg.grad().defined());
  Tensor xhat = layer_norm(x, {33});
  EXPECT_TRUE(allclose(wg.grad(), sum(xhat, {0}), 1e-5, 1e-5)) << max_abs_diff(wg.grad(), sum(xhat, {0}));
}

}  // namespace

namespace kiln {
namespace {

// Halide's simplifier treats floats as reals; kiln's arithmetic ops must not.
TEST(BinaryOps, CompiledArithmeticIsIeeeForInfAndNaN) {
  const double inf = INFINITY, nan = NAN;
  const std::vector<double> v = {nan, inf, -inf, 0.0, -0.0, 1.0, -2.0};
  Tensor x = from_vector(v, Shape({int64_t(v.size())}));
  struct Case {
    const char* name;
    Tensor (*fn)(const Tensor&);
    double (*want)(double);
  };
  const Case cases[] = {
      {"x * 0", [](const Tensor& t) { return t * 0.0; }, [](double a) { return a * 0.0; }},
      {"x - x", [](const Tensor& t) { return t - t; }, [](double a) { return a - a; }},
      {"x / x", [](const Tensor& t) { return t / t; }, [](double a) { return a / a; }},
      {"0 / x", [](const Tensor& t) { return 0.0 / t; }, [](double a) { return 0.0 / a; }},
      {"x + 0 * x", [](const Tensor& t) { return t + 0.0 * t; }, [](double a) { return a + 0.0 * a; }},
      {"x / 0 + 1", [](const Tensor& t) { return t / 0.0 + 1.0; }, [](double a) { return a / 0.0 + 1.0; }},
      {"x / -0 ", [](const Tensor& t) { return t / -0.0; }, [](double a) { return a / -0.0; }},
  };
  for (const Case& c : cases) {
    auto f = compile([&c](const Tensor& t) { return c.fn(t); });
    for (int call = 0; call < 2; ++call) {
      std::vector<double> got = f(x).to_doubles(), eager = c.fn(x).to_doubles();
      for (size_t i = 0; i < v.size(); ++i) {
        const double want = c.want(v[i]);
        for (double g : {got[i], eager[i]}) {
          if (std::isnan(want)) EXPECT_TRUE(std::isnan(g)) << c.name << " at " << v[i] << ": " << g;
          else EXPECT_EQ(g, want) << c.name << " at " << v[i];
        }
      }
    }
  }
}

// Summed, a term the simplifier takes for 0 made Halide drop the whole reduction as a
// no-op (found by kiln_fuzz: mse_loss(x, x) was 0 for an x holding -inf).
TEST(BinaryOps, ReductionsOfCancellingTermsKeepNaN) {
  Tensor x = from_vector(std::vector<double>{0.0, 2.0, 1.0, -INFINITY, 3.0, 4.0}, Shape({3, 2}));
  const double nan = NAN;
  struct Case {
    const char* name;
    Tensor (*fn)(const Tensor&);
    std::vector<double> want;  // IEEE: inf - inf and inf * 0 are NaN
  };
  const std::vector<Case> cases = {
      {"sum(x - x)", [](const Tensor& t) { return sum(t - t); }, {nan}},
      {"sum(x * 0)", [](const Tensor& t) { return sum(t * 0.0); }, {nan}},
      {"sum(0 * x, 1)", [](const Tensor& t) { return sum(0.0 * t, {1}); }, {0.0, nan, 0.0}},
      {"mean(x - x, 0)", [](const Tensor& t) { return mean(t - t, {0}); }, {0.0, nan}},
      {"mse_loss(x, x)", [](const Tensor& t) { return mse_loss(t, t); }, {nan}},
  };
  for (const std::string scheduler : {"default", "rules"}) {
    CompileOptions o;
    o.scheduler = scheduler;
    for (const Case& c : cases) {
      const std::vector<double> got = compile([fn = c.fn](const Tensor& t) { return fn(t); }, o)(x).to_doubles();
      ASSERT_EQ(got.size(), c.want.size()) << c.name;
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(c.want[i])) EXPECT_TRUE(std::isnan(got[i])) << c.name << " " << scheduler << " [" << i << "]: " << got[i];
        else EXPECT_EQ(got[i], c.want[i]) << c.name << " " << scheduler << " [" << i << "]";
      }
      const std::vector<double> eager = c.fn(x).to_doubles();
      for (size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(std::isnan(eager[i]), std::isnan(c.want[i])) << c.name;
    }
  }
}

// Cancellations Halide's simplifier would fold, seen through neg and through a Func
// (kiln_fuzz: the compiled gradient of mse_loss(v, v) was -0 where v was NaN).
TEST(BinaryOps, CancellationsThroughNegKeepNaN) {
  Tensor x = from_vector(std::vector<double>{NAN, 3.0, INFINITY, 0.0, -3.0}, Shape({5}));
  auto f = [](const Tensor& v) {
    Tensor a = v * 2.0;
    Tensor c = a + neg(a);
    Tensor l = neg(log(v));                 // NaN at -3
    Tensor m = (l - l) * 0.5 + (l - l) * 0.5;  // the gradient's terms
    return std::vector<Tensor>{c, neg(c) / v, neg(v), neg(m + neg(m)) / v};
  };
  for (const auto& outs : {f(x), compile(f)(x)}) {
    const std::vector<double> c = outs[0].to_doubles(), d = outs[1].to_doubles(), n = outs[2].to_doubles();
    EXPECT_TRUE(std::isnan(c[0]) && std::isnan(c[2])) << outs[0].str();
    EXPECT_TRUE(std::isnan(d[0]) && std::isnan(d[2])) << outs[1].str();
    EXPECT_EQ(c[1], 0.0);
    EXPECT_TRUE(std::signbit(n[3])) << "neg(+0) is -0: " << outs[2].str();
    EXPECT_TRUE(std::isnan(outs[3].to_doubles()[4])) << outs[3].str();
  }
}

// The same inside a reduction, whose update Halide drops when it proves the term 0, with
// the operands reaching the input through different numbers of Funcs (kiln_fuzz: the
// compiled gradient of std_dev over one element was 0, not NaN).
TEST(BinaryOps, SummedCancellationsKeepNaN) {
  Tensor x = from_vector(std::vector<double>{NAN, 1, 2, INFINITY, 4, 5}, Shape({2, 3}));
  auto f = [](const Tensor& v) {
    Tensor a = v + v;
    Tensor e = exp(v);
    return std::vector<Tensor>{sum(v + neg(v)), sum(a + neg(a)), sum(e + neg(e), {1}), sum(neg(a) + a, {0})};
  };
  for (const auto& outs : {f(x), compile(f)(x)}) {
    EXPECT_TRUE(std::isnan(outs[0].to_doubles()[0])) << outs[0].str();
    EXPECT_TRUE(std::isnan(outs[1].to_doubles()[0])) << outs[1].str();
    EXPECT_EQ(outs[2].to_doubles().size(), 2u);
    EXPECT_TRUE(std::isnan(outs[2].to_doubles()[0]) && std::isnan(outs[2].to_doubles()[1])) << outs[2].str();
    const std::vector<double> cols = outs[3].to_doubles();
    EXPECT_TRUE(std::isnan(cols[0]) && cols[1] == 0.0 && cols[2] == 0.0) << outs[3].str();
  }
}

TEST(BinaryOps, ZeroDimTensorsPromoteLikeScalars) {
  // PyTorch: a 0-d operand decides the dtype only when of a higher category.
  EXPECT_EQ((ones(Shape({3}), DType::F16) + scalar_tensor(1.0, DType::F32)).dtype(), DType::F16);
  EXPECT_EQ((ones(Shape({3}), DType::I32) + scalar_tensor(1.5, DType::F64)).dtype(), DType::F64);
  EXPECT_EQ((ones(Shape({3}), DType::I32) + scalar_tensor(2.0, DType::I64)).dtype(), DType::I32);
  EXPECT_EQ((scalar_tensor(1.0, DType::F16) + scalar_tensor(1.0, DType::F32)).dtype(), DType::F32);
  EXPECT_EQ(where(gt(ones(Shape({2})), 0.0), ones(Shape({2}), DType::BF16), scalar_tensor(0.0, DType::F64)).dtype(),
            DType::BF16);
  auto f = compile([](const Tensor& a, const Tensor& b) { return a * b; });
  Tensor y = f(full(Shape({3}), 1.5, DType::F16), scalar_tensor(2.0, DType::F32));
  EXPECT_EQ(y.dtype(), DType::F16);
  EXPECT_EQ(y.to_doubles(), std::vector<double>({3.0, 3.0, 3.0}));
}

TEST(Pad, ABoolTensorPadsWithTheTruthOfTheValue) {
  Tensor x = zeros(Shape({2}), DType::Bool);
  EXPECT_EQ(pad(x, {1, 1}, -2.0).to_doubles(), std::vector<double>({1, 0, 0, 1}));
  EXPECT_EQ(pad(x, {1, 0}, 0.0).to_doubles(), std::vector<double>({0, 0, 0}));
}

}  // namespace
}  // namespace kiln

namespace {

// Found by ONNX's isinf tests: Halide's simplifier takes floats to be finite and folded a
// compiled x == inf to false, and bounds a widened f16 by +-65504 (so f16 -inf == -inf was
// false too). Every comparison against infinite, NaN and signed-zero constants, compiled
// as eager and the C++ reference, in every float type.
TEST(BinaryOps, ComparisonsWithInfinitiesNanAndZerosCompileExactly) {
  const std::vector<double> values = {1, INFINITY, -INFINITY, NAN, 0.0, -0.0, 3e38, -1e-40};
  using Cmp = Tensor (*)(const Tensor&, double);
  const std::vector<std::pair<Cmp, bool (*)(double, double)>> ops = {
      {eq, [](double a, double b) { return a == b; }}, {ne, [](double a, double b) { return a != b; }},
      {lt, [](double a, double b) { return a < b; }},  {le, [](double a, double b) { return a <= b; }},
      {gt, [](double a, double b) { return a > b; }},  {ge, [](double a, double b) { return a >= b; }}};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const Tensor x = cast(from_vector(values, Shape({int64_t(values.size())})), t);
    const std::vector<double> xv = x.to_doubles();
    for (size_t o = 0; o < ops.size(); ++o) {
      for (double c : std::vector<double>{INFINITY, -INFINITY, NAN, 0.0, -0.0, 1.0}) {
        auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops[o].first(in[0], c)}; };
        const std::vector<double> got = compile(f)({x})[0].to_doubles(), eager = f({x})[0].to_doubles();
        for (size_t i = 0; i < xv.size(); ++i) {
          const double want = ops[o].second(xv[i], c);
          EXPECT_EQ(got[i], want) << dtype_name(t) << " op " << o << " x " << xv[i] << " c " << c;
          EXPECT_EQ(eager[i], want) << dtype_name(t) << " op " << o << " x " << xv[i] << " c " << c;
        }
      }
    }
  }
}

}  // namespace
