#include <cmath>

#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);

struct ReduceCase {
  const char* op;
  ReduceFn fn;
};

class Reductions : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(Reductions, MatchReferenceOverAxes) {
  const ReduceCase& c = GetParam();
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {Shape{17}, {}},         {Shape{17}, {0}},       {Shape{3, 5}, {1}},
      {Shape{3, 5}, {0}},      {Shape{3, 5}, {-1, 0}}, {Shape{2, 3, 4}, {1}},
      {Shape{2, 3, 4}, {0, 2}}, {Shape{1, 1}, {}},     {Shape{}, {}},
      {Shape{4, 1000}, {1}}};
  uint64_t seed = 7;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I32}) {
    for (const auto& [shape, axes] : cases) {
      for (bool keepdim : {false, true}) {
        Tensor x = random_with_edges(shape, dt, seed++, -4, 4);
        Attrs attrs{{"axes", axes}, {"keepdim", keepdim}};
        std::string what = std::string(dtype_name(dt)) + shape.str() + " axes=" + attrs.str();
        expect_matches_reference(
            c.op, [&](const std::vector<Tensor>& in) { return c.fn(in[0], axes, keepdim); }, {x},
            attrs, what, kF32ReductionTolerance);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Reductions,
                         ::testing::Values(ReduceCase{"sum", kiln::sum}, ReduceCase{"mean", kiln::mean},
                                           ReduceCase{"max", kiln::max}),
                         [](const auto& info) { return std::string(info.param.op); });

TEST(Reductions, ShapesAndDtypes) {
  Tensor x = rand({2, 3, 4});
  EXPECT_EQ(sum(x, {1}).shape(), (Shape{2, 4}));
  EXPECT_EQ(sum(x, {1}, true).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_EQ(sum(cast(x, DType::I32)).dtype(), DType::I64);
  EXPECT_EQ(mean(cast(x, DType::I32)).dtype(), DType::F32);
  EXPECT_EQ(max(cast(x, DType::F16), {0}).dtype(), DType::F16);
}

TEST(Reductions, LargeSumsAreAccurateAndParallel) {
  // 2^22 elements summed to a scalar (the rfactor path) and along rows.
  Tensor x = rand({1 << 22}, 3, -1, 1);
  // f32 accumulation: the bar is rtol 1e-5 against the f64 reference.
  Tensor ref = get_op("sum").reference({x}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}},
                                        TensorMeta{DType::F32, Shape{}});
  EXPECT_TRUE(allclose(sum(x), ref, 1e-5, 0)) << sum(x).item() << " vs " << ref.item();
  EXPECT_TRUE(allclose(compile([](const Tensor& t) { return sum(t); })(x), ref, 1e-5, 0));
  Tensor ones_ = ones({1 << 20});
  EXPECT_EQ(sum(ones_).item(), double(1 << 20));
}

TEST(Reductions, MaxPropagatesNaN) {
  Tensor x = from_vector(std::vector<float>{1, NAN, 3, 2, 5, 4}, {2, 3});
  std::vector<double> m = max(x, {1}).to_doubles();
  EXPECT_TRUE(std::isnan(m[0]));
  EXPECT_EQ(m[1], 5.0);
}

TEST(Reductions, BadAxes) {
  Tensor x = zeros({2, 3});
  try {
    sum(x, {2});
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("sum"), std::string::npos) << m;
    EXPECT_NE(m.find("axis 2"), std::string::npos) << m;
  }
  EXPECT_THROW(sum(x, {0, -2}), Error);  // the same axis twice
  EXPECT_THROW(max(zeros({0})), Error);  // max of nothing
  EXPECT_EQ(sum(zeros({0})).item(), 0.0);
}

}  // namespace
