#include <cmath>

#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

// Random integer indices in [0, n) of `shape`, stored as `dtype`.
Tensor random_indices(const Shape& shape, int64_t n, uint64_t seed, DType dtype = DType::I64) {
  return cast(floor(rand(shape, seed, 0, double(n) - 1e-9, DType::F64)), dtype);
}

// Expects `fn` to raise a kiln::Error whose message contains every one of `parts`.
template <class Fn>
void expect_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no kiln::Error";
  } catch (const Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(Gather, MatchesReferenceOnEveryAxisAndDtype) {
  uint64_t seed = 1;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I32}) {
    for (int64_t axis : {0, 1, -1}) {
      Shape xs{4, 5, 3};
      std::vector<int64_t> is = {4, 5, 3};
      is[size_t(axis < 0 ? 2 : axis)] = 7;  // more picks than entries along the axis
      is[size_t(axis == 0 ? 2 : 0)] = 2;    // and a smaller other dim
      Tensor x = random_with_edges(xs, dt, seed++, -5, 5);
      Tensor index = random_indices(Shape(is), 5 - 2 * (axis != 1), seed++, axis == 1 ? DType::I32 : DType::I64);
      expect_matches_reference(
          "gather", [axis](const std::vector<Tensor>& in) { return gather(in[0], axis, in[1]); }, {x, index},
          {{"axis", axis}}, std::string(dtype_name(dt)) + " axis " + std::to_string(axis));
    }
  }
}

TEST(IndexSelect, MatchesReferenceWithRepeatsAndSize1Dims) {
  uint64_t seed = 20;
  for (DType dt : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
    for (const auto& [shape, axis] : std::vector<std::pair<Shape, int64_t>>{{Shape{6}, 0}, {Shape{3, 8}, 1}, {Shape{5, 1, 4}, 0}}) {
      Tensor x = dt == DType::Bool ? rand(shape, seed++) < 0.5 : random_with_edges(shape, dt, seed++, -3, 3);
      Tensor index = random_indices(Shape{9}, shape[int(axis)].size, seed++);
      expect_matches_reference(
          "index_select", [axis](const std::vector<Tensor>& in) { return index_select(in[0], axis, in[1]); },
          {x, index}, {{"axis", axis}}, std::string(dtype_name(dt)) + shape.str());
    }
  }
}

TEST(ScatterAdd, MatchesReferenceWithRepeatedTargetsInBothIndexForms) {
  uint64_t seed = 40;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I32}) {
    for (int64_t axis : {0, 1, -1}) {
      Shape src{6, 5, 3};
      std::vector<int64_t> shape = {6, 5, 3};
      const int a = int(axis < 0 ? 2 : axis);
      shape[size_t(a)] = 4;                      // fewer targets than sources: repeats accumulate
      if (a != 0) shape[0] = 8;                  // a larger other dim, never written
      Tensor source = random_with_edges(src, dt, seed++, -5, 5);
      for (bool full : {false, true}) {
        Tensor index = full ? random_indices(src, 4, seed++) : random_indices(Shape{src[a].size}, 4, seed++, DType::I32);
        const Attrs attrs{{"axis", axis}, {"shape", shape}, {"full", full}};
        expect_matches_reference(
            "scatter_add", [attrs](const std::vector<Tensor>& in) { return apply_op("scatter_add", in, attrs); },
            {source, index}, attrs, std::string(dtype_name(dt)) + " axis " + std::to_string(axis) + (full ? " full" : ""));
      }
    }
  }
}

TEST(ScatterAdd, IndexAddAndScatterAddAreTorchs) {
  // torch.zeros(4, 2).index_add_(0, tensor([0, 3, 0]), src): rows 0 and 3 get sums, 1 and 2 stay.
  Tensor x = from_vector(std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4}, {4, 2});
  Tensor src = from_vector(std::vector<double>{10, 20, 30, 40, 50, 60}, {3, 2});
  Tensor rows = from_vector(std::vector<int64_t>{0, 3, 0}, {3});
  Tensor want = from_vector(std::vector<double>{61, 81, 2, 2, 3, 3, 34, 44}, {4, 2});
  EXPECT_TRUE(allclose(index_add(x, 0, rows, src), want, 0, 0)) << index_add(x, 0, rows, src).str();
  auto compiled = compile([](const Tensor& a, const Tensor& i, const Tensor& s) { return index_add(a, 0, i, s); });
  EXPECT_TRUE(allclose(compiled(x, rows, src), want, 0, 0));
  // torch.zeros(2, 3).scatter_add_(1, tensor([[0, 0, 2], [1, 1, 1]]), ones(2, 3)).
  Tensor index = from_vector(std::vector<int64_t>{0, 0, 2, 1, 1, 1}, {2, 3});
  Tensor got = scatter_add(zeros({2, 3}), 1, index, full({2, 3}, 1.0));
  EXPECT_TRUE(allclose(got, from_vector(std::vector<double>{2, 0, 1, 0, 3, 0}, {2, 3}), 0, 0)) << got.str();
  expect_error([&] { index_add(x, 0, from_vector(std::vector<int64_t>{0, 4, 1}, {3}), src); },
               {"scatter_add", "4", "out of range"});
  expect_error([&] { index_add(x, 0, rows, cast(src, DType::F64)); }, {"index_add", "source is f64 but x is f32"});
  expect_error([&] { scatter_add(x, 1, rows, src); }, {"scatter_add", "must have the source's shape"});
}

TEST(ScatterAdd, PicksGiveExactZerosWhereNothingWasPickedWhateverTheGradientHolds) {
  // The gradient of index_select / gather used to be a product with one_hot(index), so an
  // inf or NaN in the upstream gradient made 0 * inf = NaN in rows never picked.
  Tensor x = rand({5, 3}, 61, -1, 1);
  Tensor rows = from_vector(std::vector<int64_t>{1, 3, 1}, {3});
  Tensor c = from_vector(std::vector<double>{INFINITY, 1, 2, 3, NAN, 4, 5, 6, 7}, {3, 3});
  auto loss = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(index_select(in[0], 0, rows) * c)}; };
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    TensorFn g = grad_fn(loss, {0});
    const Tensor gx = (compiled ? TensorFn(compile(g)) : g)({x})[0];
    const std::vector<double> v = gx.to_doubles();
    for (int row : {0, 2, 4}) {
      for (int col = 0; col < 3; ++col) EXPECT_EQ(v[size_t(row * 3 + col)], 0.0) << gx.str();
    }
    EXPECT_EQ(v[3], INFINITY);                   // row 1 picked twice: inf + 5
    EXPECT_EQ(v[4], 7.0);                        // 1 + 6
    EXPECT_TRUE(std::isnan(v[10]));              // row 3: NaN
  }
  // gather the same way.
  Tensor idx = from_vector(std::vector<int64_t>{4, 4, 0}, {1, 3});
  auto gloss = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(gather(in[0], 0, idx) * from_vector(std::vector<double>{INFINITY, 2, 3}, {1, 3}))};
  };
  const std::vector<double> gg = grad_fn(gloss, {0})({x})[0].to_doubles();
  for (size_t i = 0; i < gg.size(); ++i) {
    const double want = i == 12 ? INFINITY : i == 13 ? 2.0 : i == 2 ? 3.0 : 0.0;
    EXPECT_EQ(gg[i], want) << i;
  }
}

TEST(Embedding, RowsOfTheTableForIndicesOfAnyShape) {
  Tensor weight = rand({10, 4}, 3, -1, 1);
  Tensor ids = from_vector(std::vector<int64_t>{3, 0, 9, 3, 7, 1}, {2, 3});
  auto fn = [&](const Tensor& i) { return embedding(weight, i); };
  Tensor eager = fn(ids), compiled = compile(fn)(ids);
  ASSERT_EQ(eager.shape(), (Shape{2, 3, 4}));
  std::vector<float> w = weight.to_vector<float>(), e = eager.to_vector<float>();
  std::vector<int64_t> iv = ids.to_vector<int64_t>();
  for (size_t i = 0; i < iv.size(); ++i)
    for (size_t d = 0; d < 4; ++d) EXPECT_EQ(e[i * 4 + d], w[size_t(iv[i]) * 4 + d]);
  EXPECT_TRUE(allclose(compiled, eager, 0, 0));
  EXPECT_THROW(embedding(rand({10}), ids), Error);
}

TEST(OneHot, MatchesReferenceAndIsI64) {
  Tensor labels = from_vector(std::vector<int64_t>{0, 4, 2, 2, 1, 0}, {2, 3});
  expect_matches_reference("one_hot", [](const std::vector<Tensor>& in) { return one_hot(in[0], 5); }, {labels},
                           {{"num_classes", int64_t(5)}}, "[2, 3]");
  Tensor y = one_hot(labels, 5);
  EXPECT_EQ(y.dtype(), DType::I64);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(sum(y).item(), 6);
  expect_error([&] { one_hot(labels, 0); }, {"one_hot", "num_classes"});
  expect_error([&] { one_hot(rand({3}), 3); }, {"one_hot", "i64 or i32"});
}

// Out-of-range indices are reported at run time, eager and compiled, and nothing is read.
TEST(Indexing, OutOfRangeIndicesRaiseEagerAndCompiled) {
  Tensor x = rand({4, 3}, 1);
  Tensor bad = from_vector(std::vector<int64_t>{0, 4, 1}, {3});
  Tensor negative = from_vector(std::vector<int64_t>{0, -1, 1}, {3});
  expect_error([&] { index_select(x, 0, bad); }, {"index_select", "4", "out of range", "size", "4"});
  expect_error([&] { index_select(x, 0, negative); }, {"index_select", "-1", "out of range"});
  auto compiled = compile([](const Tensor& a, const Tensor& i) { return index_select(a, 0, i); });
  expect_error([&] { compiled(x, bad); }, {"index_select", "out of range"});
  // The compiled function still works afterwards.
  Tensor good = from_vector(std::vector<int64_t>{3, 0}, {2});
  EXPECT_TRUE(allclose(compiled(x, good), index_select(x, 0, good), 0, 0));
  expect_error([&] { gather(x, 1, from_vector(std::vector<int64_t>{0, 3}, {1, 2})); }, {"gather", "out of range"});
  expect_error([&] { one_hot(bad, 4); }, {"one_hot", "out of range"});
  expect_error([&] { embedding(x, bad); }, {"index_select", "out of range"});
  // Shape errors name the op and the shapes.
  expect_error([&] { gather(x, 0, from_vector(std::vector<int64_t>{0}, {1})); }, {"gather", "rank"});
  expect_error([&] { gather(x, 0, zeros({2, 5}, DType::I64)); }, {"gather", "dim 1"});
  expect_error([&] { index_select(x, 2, good); }, {"index_select"});
  expect_error([&] { index_select(x, 0, zeros({2, 1}, DType::I64)); }, {"index_select", "1-D"});
}

TEST(Arange, HostFillAndTracedOpAgree) {
  EXPECT_EQ(arange(4, DType::I32).to_vector<int>(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(arange(1.0, 2.0, 0.25).numel(), 4);
  EXPECT_EQ(arange(5.0, 0.0, -2.0).to_vector<float>(), (std::vector<float>{5, 3, 1}));
  EXPECT_EQ(arange(3.0, 3.0).numel(), 0);
  EXPECT_THROW(arange(0.0, 1.0, 0.0), Error);
  // Inside kiln::compile arange is an op of the graph.
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + arange(0.5, 3.0, 0.5, DType::F64)}; };
  Tensor x = rand({5}, 2, 0, 1, DType::F64);
  Graph g = trace(fn, {x});
  EXPECT_NE(g.str().find("arange"), std::string::npos) << g.str();
  Tensor compiled = compile(fn)(std::vector<Tensor>{x})[0];
  EXPECT_TRUE(allclose(compiled, fn({x})[0], 0, 0)) << compiled.str() << fn({x})[0].str();
  EXPECT_TRUE(allclose(compiled, x + from_vector(std::vector<double>{0.5, 1, 1.5, 2, 2.5}, {5}, DType::F64), 0, 0));
}

// Cross entropy against a hand-written f64 reference: -log_softmax(logits)[target].
double cross_entropy_reference(const std::vector<double>& logits, const std::vector<int64_t>& target, int64_t c) {
  double total = 0;
  for (size_t n = 0; n < target.size(); ++n) {
    double m = -INFINITY, s = 0;
    for (int64_t k = 0; k < c; ++k) m = std::max(m, logits[n * size_t(c) + size_t(k)]);
    for (int64_t k = 0; k < c; ++k) s += std::exp(logits[n * size_t(c) + size_t(k)] - m);
    total += -(logits[n * size_t(c) + size_t(target[n])] - m - std::log(s));
  }
  return total / double(target.size());
}

TEST(CrossEntropy, MatchesReferenceAndStaysFiniteForHugeLogits) {
  for (double scale : {3.0, 1e4}) {
    Tensor logits = rand({6, 5}, 7, -scale, scale);
    Tensor target = random_indices(Shape{6}, 5, 8);
    double want = cross_entropy_reference(logits.to_doubles(), target.to_vector<int64_t>(), 5);
    auto fn = [](const Tensor& l, const Tensor& t) { return cross_entropy(l, t); };
    Tensor eager = fn(logits, target), compiled = compile(fn)(logits, target);
    EXPECT_NEAR(eager.item(), want, 1e-5 * std::max(1.0, std::abs(want))) << "scale " << scale;
    EXPECT_NEAR(compiled.item(), want, 1e-5 * std::max(1.0, std::abs(want))) << "scale " << scale;
    EXPECT_TRUE(std::isfinite(compiled.item()));
  }
  // Probability targets equal to one-hot give the same loss; sum and none reductions.
  Tensor logits = rand({4, 3}, 9, -2, 2);
  Tensor target = from_vector(std::vector<int64_t>{2, 0, 1, 1}, {4});
  Tensor probs = cast(one_hot(target, 3), DType::F32);
  EXPECT_NEAR(cross_entropy(logits, probs).item(), cross_entropy(logits, target).item(), 1e-6);
  EXPECT_NEAR(cross_entropy(logits, target, "sum").item(), 4 * cross_entropy(logits, target).item(), 1e-5);
  EXPECT_EQ(cross_entropy(logits, target, "none").shape(), (Shape{4}));
  EXPECT_EQ(cross_entropy(rand({3}, 1), scalar_tensor(2, DType::I64)).rank(), 0);
  expect_error([&] { cross_entropy(logits, from_vector(std::vector<int64_t>{0, 1}, {2})); }, {"cross_entropy", "[4]"});
  expect_error([&] { cross_entropy(logits, from_vector(std::vector<int64_t>{0, 1, 3, 0}, {4})); }, {"gather", "out of range"});
  expect_error([&] { cross_entropy(logits, target, "avg"); }, {"cross_entropy", "reduction"});
}

}  // namespace
