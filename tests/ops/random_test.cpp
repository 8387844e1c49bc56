#include <cmath>

#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

TEST(RandomFills, MatchReferenceAndTheHostConstructors) {
  for (DType dt : {DType::F32, DType::F64, DType::F16}) {
    Tensor shape_of = zeros({3, 17}, dt);
    expect_matches_reference("uniform_like", [](const std::vector<Tensor>& in) { return rand_like(in[0], 42, -2, 3); },
                             {shape_of}, {{"seed", int64_t(42)}, {"low", -2.0}, {"high", 3.0}, {"dtype", std::string(dtype_name(dt))}},
                             dtype_name(dt));
    expect_matches_reference("normal_like", [](const std::vector<Tensor>& in) { return randn_like(in[0], 7, 1, 2); },
                             {shape_of}, {{"seed", int64_t(7)}, {"mean", 1.0}, {"std", 2.0}, {"dtype", std::string(dtype_name(dt))}},
                             dtype_name(dt), Tolerance{1e-5, 1e-5}, Tolerance{1e-12, 1e-12});
  }
  // The same generator as kiln::rand: bit for bit in f64 and f32.
  Tensor x = zeros({1000}, DType::F64);
  EXPECT_TRUE(allclose(rand_like(x, 5), rand({1000}, 5, 0, 1, DType::F64), 0, 0));
  EXPECT_TRUE(allclose(rand_like(zeros({1000}), 5), rand({1000}, 5), 0, 0));
}

TEST(RandomFills, StatisticsLookRight) {
  Tensor u = rand_like(zeros({200000}), 3), n = randn_like(zeros({200000}), 4);
  EXPECT_NEAR(mean(u).item(), 0.5, 0.005);
  EXPECT_NEAR(var(u).item(), 1.0 / 12, 0.002);
  EXPECT_NEAR(mean(n).item(), 0.0, 0.01);
  EXPECT_NEAR(var(n).item(), 1.0, 0.01);
  EXPECT_GE(min(u).item(), 0.0);
  EXPECT_LT(max(u).item(), 1.0);
  // A different seed gives different numbers.
  EXPECT_GT(max_abs_diff(rand_like(zeros({100}), 1), rand_like(zeros({100}), 2)), 0.1);
  EXPECT_THROW(rand_like(zeros({2}), 1, 2, 1), Error);
  EXPECT_THROW(randn_like(zeros({2}), 1, 0, -1), Error);
}

TEST(Dropout, SameMaskEagerAndCompiledAndScalesTheRest) {
  Tensor x = rand({64, 33}, 9, 1, 2);
  auto fn = [](const Tensor& t) { return dropout(t, 0.25, 1234); };
  Tensor eager = fn(x), compiled = compile(fn)(x);
  EXPECT_TRUE(allclose(compiled, eager, 0, 0)) << "one mask, eager and compiled";
  std::vector<float> xv = x.to_vector<float>(), yv = eager.to_vector<float>();
  std::vector<double> u = rand({64, 33}, 1234).to_doubles();
  int dropped = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (u[i] < 0.25) {
      EXPECT_EQ(yv[i], 0.0f);
      ++dropped;
    } else {
      EXPECT_NEAR(yv[i], xv[i] / 0.75, 1e-6);
    }
  }
  EXPECT_NEAR(double(dropped) / double(xv.size()), 0.25, 0.03);
  EXPECT_TRUE(allclose(dropout(x, 0.25, 1234, /*training=*/false), x, 0, 0));
  EXPECT_TRUE(allclose(dropout(x, 0.0, 1), x, 0, 0));
  EXPECT_EQ(max(abs(dropout(x, 1.0, 1))).item(), 0.0);
  EXPECT_FALSE(allclose(dropout(x, 0.5, 1), dropout(x, 0.5, 2), 0, 0)) << "the seed picks the mask";
  EXPECT_THROW(dropout(x, 1.5, 1), Error);
}

// With dynamic dims one compiled kernel serves every size, and the fill still matches the
// host generator at each size.
TEST(RandomFills, DynamicShapes) {
  CompileOptions o;
  o.dynamic = true;
  auto f = compile([](const Tensor& t) { return rand_like(t, 77); }, o);
  for (int64_t n : {5, 300}) EXPECT_TRUE(allclose(f(zeros({2, n})), rand({2, n}, 77), 0, 0)) << n;
}

}  // namespace
