// kiln's IEEE elementary functions (src/ops/math): special values as C99 and PyTorch give
// them, and accuracy over dense sweeps, eager and compiled, against double-precision libm.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <limits>

#include "kiln.h"

namespace kiln {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// kiln's CPU kernels flush subnormal results to zero (core/float_env.h).
float flushed(double v) {
  const float f = float(v);
  return std::abs(f) < std::numeric_limits<float>::min() ? std::copysign(0.0f, f) : f;
}

// Bitwise agreement in f32: the same NaN-ness, the same sign of zeros and infinities.
void expect_same_f32(double got, double want, const std::string& what) {
  const float g = float(got), w = flushed(want);
  if (std::isnan(w)) {
    EXPECT_TRUE(std::isnan(g)) << what << ": got " << g << ", want NaN";
    return;
  }
  EXPECT_EQ(std::signbit(g), std::signbit(w)) << what << ": got " << g << ", want " << w;
  if (std::isinf(w) || w == 0.0f) {
    EXPECT_EQ(g, w) << what;
  } else {
    EXPECT_NEAR(g, w, 4e-6 * std::abs(w)) << what;
  }
}

const std::vector<double> kSpecials = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0,
                                       3.0, -3.0, 2.5, -2.5, 1e-3, 1e3, 100.0, -100.0, 1e30};

TEST(IeeeMath, PowMatchesC99OnEverySpecialPair) {
  // Every (x, y) pair as two tensors, eager and compiled.
  std::vector<double> xs, ys;
  for (double x : kSpecials)
    for (double y : kSpecials) xs.push_back(x), ys.push_back(y);
  const Shape s({int64_t(xs.size())});
  Tensor x = from_vector(xs, s), y = from_vector(ys, s);
  Tensor eager = pow(x, y);
  Tensor compiled = compile([](const Tensor& a, const Tensor& b) { return pow(a, b); })(x, y);
  std::vector<double> e = eager.to_doubles(), c = compiled.to_doubles();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = std::pow(double(float(xs[i])), double(float(ys[i])));
    const std::string what = "pow(" + std::to_string(xs[i]) + ", " + std::to_string(ys[i]) + ")";
    expect_same_f32(e[i], want, "eager " + what);
    expect_same_f32(c[i], want, "compiled " + what);
  }
}

TEST(IeeeMath, PowWithAConstantExponentCompiles) {
  // A C++ number as the exponent is a constant in the compiled pipeline, where Halide's
  // simplifier sees it.
  Tensor x = from_vector(kSpecials, Shape({int64_t(kSpecials.size())}));
  for (double y : {0.5, 2.0, 3.0, -1.0, 0.0}) {
    Tensor c = compile([y](const Tensor& a) { return pow(a, y); })(x);
    std::vector<double> got = c.to_doubles();
    for (size_t i = 0; i < kSpecials.size(); ++i) {
      expect_same_f32(got[i], std::pow(double(float(kSpecials[i])), y),
                      "pow(" + std::to_string(kSpecials[i]) + ", " + std::to_string(y) + ")");
    }
  }
}

TEST(IeeeMath, ExpAndTheOpsBuiltOnItAtTheEnds) {
  const std::vector<double> v = {kNaN, kInf, -kInf, 0.0, 88.0, 88.7, 89.0, 100.0, 1e4, -87.0, -103.0, -104.0, -200.0};
  Tensor x = from_vector(v, Shape({int64_t(v.size())}));
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&);
    double (*want)(double);
  };
  const Case cases[] = {
      {"exp", [](const Tensor& t) { return exp(t); }, [](double a) { return std::exp(a); }},
      {"sigmoid", [](const Tensor& t) { return sigmoid(t); }, [](double a) { return 1.0 / (1.0 + std::exp(-a)); }},
      // PyTorch computes silu as x / (1 + exp(-x)): NaN at -inf.
      {"silu", [](const Tensor& t) { return silu(t); }, [](double a) { return a / (1.0 + std::exp(-a)); }},
      {"softplus", [](const Tensor& t) { return softplus(t); },
       [](double a) { return a > 20 ? a : std::log1p(std::exp(a)); }},
  };
  for (const Case& k : cases) {
    std::vector<double> e = k.op(x).to_doubles();
    std::vector<double> c = compile([&k](const Tensor& t) { return k.op(t); })(x).to_doubles();
    for (size_t i = 0; i < v.size(); ++i) {
      const double want = k.want(double(float(v[i])));
      expect_same_f32(e[i], want, std::string("eager ") + k.name + "(" + std::to_string(v[i]) + ")");
      expect_same_f32(c[i], want, std::string("compiled ") + k.name + "(" + std::to_string(v[i]) + ")");
    }
  }
}

// Every 509th f32 from +0 to the largest finite one (about 2.1 million), each also negated
// where `negated`.
std::vector<double> every_509th_f32(bool negated) {
  std::vector<double> xs;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 509) {
    float f;
    std::memcpy(&f, &bits, 4);
    xs.push_back(f);
    if (negated) xs.push_back(-f);
  }
  return xs;
}

// The largest error in units in the last place of f32, over a dense sweep.
double max_ulps(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float w = float(want[i]);
    if (!std::isfinite(w) || std::abs(w) < std::numeric_limits<float>::min()) continue;
    const double ulp = std::nextafter(std::abs(w), INFINITY) - std::abs(w);
    worst = std::max(worst, std::abs(got[i] - want[i]) / ulp);
  }
  return worst;
}

TEST(IeeeMath, ExpAndPowAreAccurateOverDenseSweeps) {
  const int n = 200001;
  std::vector<double> xs(n), ys(n), bases(n);
  for (int i = 0; i < n; ++i) {
    xs[size_t(i)] = double(float(-103.0 + 191.0 * i / (n - 1)));
    bases[size_t(i)] = double(float(std::ldexp(1.0, -60 + 120 * i / (n - 1)) * (1.0 + 0.37 * (i % 7))));
    ys[size_t(i)] = double(float(-3.0 + 6.0 * ((i * 7919) % n) / double(n)));
  }
  Tensor x = from_vector(xs, Shape({n})), b = from_vector(bases, Shape({n})), y = from_vector(ys, Shape({n}));
  std::vector<double> want_exp(n), want_pow(n);
  for (int i = 0; i < n; ++i) {
    want_exp[size_t(i)] = std::exp(xs[size_t(i)]);
    want_pow[size_t(i)] = std::pow(bases[size_t(i)], ys[size_t(i)]);
  }
  // Halide's polynomials' accuracy: exp measured at 5.1 ULP; pow, exp(y log x) in f32,
  // loses up to |y log x| ULP (174 measured) where libm's stays under 1.
  EXPECT_LE(max_ulps(exp(x).to_doubles(), want_exp), 6.0);
  EXPECT_LE(max_ulps(pow(b, y).to_doubles(), want_pow), 256.0);
}

// kiln's vector sin, cos and tan (ops/math/trig.h) over every 509th f32 of the whole range,
// every f32 near the first 2^16 multiples of pi/2 (where the reduction cancels most), and
// the special values: within the stated 2 ULP of the f64 reference everywhere.
TEST(VectorTrig, SinCosAndTanAreWithin2UlpOverTheWholeF32Range) {
  std::vector<double> xs = every_509th_f32(true);
  for (int k = 1; k <= 1 << 16; ++k) {
    const float near = float(k * 1.5707963267948966);
    xs.push_back(std::nextafter(near, 0.0f));
    xs.push_back(near);
    xs.push_back(std::nextafter(near, INFINITY));
  }
  const int n = int(xs.size());
  Tensor x = from_vector(xs, Shape({n}));
  std::vector<double> ref_sin(xs.size()), ref_cos(xs.size()), ref_tan(xs.size());
  for (size_t i = 0; i < size_t(n); ++i) ref_sin[i] = std::sin(xs[i]), ref_cos[i] = std::cos(xs[i]), ref_tan[i] = std::tan(xs[i]);
  auto all = compile([](const Tensor& t) { return std::vector<Tensor>{sin(t), cos(t), tan(t)}; });
  const std::vector<Tensor> compiled = all(x);
  for (const auto& [name, got, want] : {std::tuple{"sin eager", sin(x), ref_sin}, {"cos eager", cos(x), ref_cos},
                                        {"tan eager", tan(x), ref_tan}, {"sin compiled", compiled[0], ref_sin},
                                        {"cos compiled", compiled[1], ref_cos}, {"tan compiled", compiled[2], ref_tan}}) {
    const double ulps = max_ulps(got.to_doubles(), want);
    EXPECT_LE(ulps, 2.0) << name;
    RecordProperty(name, std::to_string(ulps));
    if (std::getenv("KILN_TEST_VERBOSE")) std::printf("%s: %.3f ULP\n", name, ulps);
  }
  // Special values: sin keeps zero's sign; inf and NaN give NaN; a subnormal's sine is
  // itself, or a zero of its sign where kiln flushes subnormals (its default).
  const float tiny = std::numeric_limits<float>::denorm_min() * 5;
  Tensor s = from_vector(std::vector<double>{0.0, -0.0, INFINITY, -INFINITY, NAN, tiny, -tiny}, Shape({7}));
  const bool was = flush_denormals();
  for (bool flush : {true, false}) {
    SCOPED_TRACE(flush ? "subnormals flushed" : "IEEE subnormals");
    set_flush_denormals(flush);
    for (const Tensor& r : {sin(s), compile([](const Tensor& t) { return sin(t); })(s)}) {
      const std::vector<double> v = r.to_doubles();
      EXPECT_TRUE(v[0] == 0 && !std::signbit(v[0]));
      EXPECT_TRUE(v[1] == 0 && std::signbit(v[1]));
      for (int i : {2, 3, 4}) EXPECT_TRUE(std::isnan(v[size_t(i)])) << i;
      EXPECT_EQ(v[5], flush ? 0.0 : double(tiny));
      EXPECT_EQ(v[6], flush ? -0.0 : -double(tiny));
      EXPECT_TRUE(std::signbit(v[6]));
    }
  }
  set_flush_denormals(was);
  const std::vector<double> th = tanh(s).to_doubles();
  EXPECT_TRUE(th[1] == 0 && std::signbit(th[1]));
  EXPECT_EQ(th[2], 1.0);
  EXPECT_EQ(th[3], -1.0);
  EXPECT_TRUE(std::isnan(th[4]));
  const std::vector<double> c = cos(s).to_doubles();
  EXPECT_EQ(c[0], 1.0);
  EXPECT_EQ(c[1], 1.0);
  for (int i : {2, 3, 4}) EXPECT_TRUE(std::isnan(c[size_t(i)])) << i;
}

TEST(VectorTrig, TanhIsWithin2UlpOverTheWholeF32Range) {
  std::vector<double> xs = every_509th_f32(true);
  for (int i = 0; i <= 200000; ++i) xs.push_back(double(float(-12.0 + 24.0 * i / 200000)));
  std::vector<double> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) want[i] = std::tanh(xs[i]);
  Tensor x = from_vector(xs, Shape({int64_t(xs.size())}));
  for (const auto& [name, got] : {std::pair{"eager", tanh(x)}, {"compiled", compile([](const Tensor& t) { return tanh(t); })(x)}}) {
    const double ulps = max_ulps(got.to_doubles(), want);
    EXPECT_LE(ulps, 2.0) << name;
    if (std::getenv("KILN_TEST_VERBOSE")) std::printf("tanh %s: %.3f ULP\n", name, ulps);
  }
}

// exp of x between the subnormal threshold and ln(FLT_MIN) is a subnormal (with IEEE
// subnormals; zero where kiln flushes them): Halide's exp gave 0, so softplus(-95) then
// rsqrt made inf (kiln_fuzz --seed 3100).
TEST(IeeeMath, ExpGivesSubnormalsBelowTheNormalRange) {
  const bool was = flush_denormals();
  Tensor x = from_vector(std::vector<double>{-88.0, -95.0, -100.0, -103.0, -87.0}, Shape({5}));
  auto f = [](const Tensor& t) { return exp(t); };
  for (bool flush : {false, true}) {
    set_flush_denormals(flush);
    for (const Tensor& r : {exp(x), compile(f)(x)}) {
      const std::vector<double> got = r.to_doubles();
      for (size_t i = 0; i < got.size(); ++i) {
        const float want = std::exp(float(x.to_doubles()[i]));
        const bool sub = std::fabs(want) < std::numeric_limits<float>::min();
        if (flush && sub) {
          EXPECT_EQ(got[i], 0.0) << i;
        } else {
          EXPECT_NEAR(got[i], want, 1e-5 * want + 2 * std::numeric_limits<float>::denorm_min()) << i << (flush ? " flushed" : "");
        }
      }
    }
  }
  // sigmoid(-95) likewise, and softplus then rsqrt's gradient through it, -inf not NaN.
  set_flush_denormals(false);
  const std::vector<double> s = sigmoid(x).to_doubles();
  EXPECT_NEAR(s[1], std::exp(-95.0), 2 * std::numeric_limits<float>::denorm_min());
  auto chain = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(rsqrt(softplus(in[0])))}; };
  const Tensor g = grad_fn(chain, {0})({from_vector(std::vector<double>{-95.0}, Shape({1}))})[0];
  EXPECT_EQ(g.to_doubles()[0], -INFINITY) << g.str();
  set_flush_denormals(was);
}

// Halide's log and pow read a subnormal's empty exponent field: log(1e-40f) came out near
// -88 and pow(1e-40f, -1) finite, so pow's gradient at such a base was finite where PyTorch
// gives inf (kiln_fuzz --seed 3001).
TEST(IeeeMath, LogAndPowOfSubnormalInputs) {
  set_flush_denormals(false);  // IEEE subnormals (KILN_DENORMALS=keep); flushed, they read as 0
  const std::vector<double> xs = {1e-40, 1.4e-45, 3e-39, 1e-38, 1.2e-38};  // subnormal, and normal at the end
  const std::vector<double> exponents = {-1.0, 0.5, 2.0, -0.25};
  Tensor x = from_vector(xs, Shape({int64_t(xs.size())}));
  auto logs = [](const Tensor& t) { return log(t); };
  for (const std::vector<double>& got : {log(x).to_doubles(), compile(logs)(x).to_doubles()}) {
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = std::log(double(float(xs[i])));
      EXPECT_NEAR(got[i], want, 4e-6 * std::abs(want)) << "log(" << xs[i] << ")";
    }
  }
  for (double e : exponents) {
    Tensor y = full(Shape({int64_t(xs.size())}), e);
    auto pows = [](const Tensor& a, const Tensor& b) { return pow(a, b); };
    for (const std::vector<double>& got : {pow(x, y).to_doubles(), compile(pows)(x, y).to_doubles()}) {
      for (size_t i = 0; i < xs.size(); ++i) {
        const double want = std::pow(double(float(xs[i])), e);
        const std::string what = "pow(" + std::to_string(xs[i]) + ", " + std::to_string(e) + ")";
        if (std::isinf(float(want)) || std::abs(want) < 1.2e-38) EXPECT_EQ(float(got[i]), float(want)) << what;
        else EXPECT_NEAR(got[i], want, 1e-5 * want) << what;  // exp(y log x): |y log x| ulps
      }
    }
  }
  set_flush_denormals(true);
}

TEST(IeeeMath, ErfInF64IsAccurateToF64) {
  const int n = 4001;
  std::vector<double> xs(n);
  for (int i = 0; i < n; ++i) xs[size_t(i)] = -8.0 + 16.0 * i / (n - 1);
  xs.push_back(1e-300);
  xs.push_back(-kInf);
  Tensor x = from_vector(xs, Shape({int64_t(xs.size())}), DType::F64);
  for (const Tensor& got : {erf(x), compile([](const Tensor& t) { return erf(t); })(x)}) {
    std::vector<double> v = got.to_doubles();
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_NEAR(v[i], std::erf(xs[i]), 4e-16 + 2e-15 * std::abs(std::erf(xs[i]))) << "erf(" << xs[i] << ")";
    }
  }
  Tensor g = gelu(from_vector(std::vector<double>{1.0}, Shape({1}), DType::F64));
  EXPECT_NEAR(g.item(), 0.8413447460685429, 1e-15);
}

TEST(IeeeMath, GeluKeepsItsLowerTail) {
  // kiln_fuzz: f32 gelu(-8) was -0 (1 + erf cancels), not -5.1e-15; f64 lost digits too.
  const int n = 40001;
  std::vector<double> xs(n), want(n);
  for (int i = 0; i < n; ++i) {
    xs[size_t(i)] = double(float(-14.0 + 18.0 * i / (n - 1)));
    want[size_t(i)] = 0.5 * xs[size_t(i)] * std::erfc(xs[size_t(i)] * -0.7071067811865476);
  }
  Tensor x = from_vector(xs, Shape({n}));
  for (const Tensor& got : {gelu(x), compile([](const Tensor& t) { return gelu(t); })(x)}) {
    const double ulps = max_ulps(got.to_doubles(), want);
    EXPECT_LE(ulps, 8.0);  // 7.1 measured: the tail in f32, its exp Halide's polynomial (5.1 ULP above)
    if (std::getenv("KILN_TEST_VERBOSE")) std::printf("gelu f32: %.3f ULP\n", ulps);
  }
  const std::vector<double> x64 = {-30.0, -20.0, -8.0, -3.0, -2.0, -0.5, 0.5, 4.0};
  Tensor g = gelu(from_vector(x64, Shape({int64_t(x64.size())}), DType::F64));
  for (size_t i = 0; i < x64.size(); ++i) {
    const double w = 0.5 * x64[i] * std::erfc(x64[i] * -0.7071067811865476);
    // 1e-12: exp(-z * z) with z * z rounded (the reference's z rounds too).
    EXPECT_NEAR(g.to_doubles()[i], w, 1e-12 * std::abs(w)) << "gelu(" << x64[i] << ")";
  }
  EXPECT_TRUE(std::signbit(gelu(from_vector(std::vector<double>{-1e30}, Shape({1}))).item()));
}

}  // namespace
}  // namespace kiln
