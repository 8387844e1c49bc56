#include <sstream>

#include "lower/lower_to_halide.h"
#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

void check(const std::string& op, const std::function<Tensor(const Tensor&)>& fn, const Tensor& x,
           const Attrs& attrs) {
  expect_matches_reference(op, [&](const std::vector<Tensor>& in) { return fn(in[0]); }, {x}, attrs,
                           x.meta().str() + " " + attrs.str());
}

TEST(ShapeOps, Reshape) {
  for (DType dt : {DType::F32, DType::I32, DType::F16}) {
    Tensor x = random_with_edges({2, 3, 4}, dt, 1, -9, 9);
    // Groups of dims that split (2, 3, 2, 2), merge (6, 4), both at once (3, 8: one group),
    // with dims of size 1 on either side.
    for (std::vector<int64_t> s : {std::vector<int64_t>{24}, {4, 6}, {-1, 2}, {2, 1, 12}, {3, -1, 2}, {2, 3, 2, 2},
                                   {6, 4}, {2, 12}, {3, 8}, {1, 2, 3, 4, 1}, {4, 3, 2}, {2, 1, 3, 1, 4}, {24, 1}}) {
      check("reshape", [&](const Tensor& t) { return reshape(t, s); }, x, {{"shape", s}});
    }
  }
  EXPECT_EQ(reshape(arange(6), {2, -1}).shape(), (Shape{2, 3}));
  EXPECT_THROW(reshape(zeros({2, 3}), {4, 2}), Error);
  EXPECT_THROW(reshape(zeros({2, 3}), {-1, -1}), Error);
  EXPECT_THROW(reshape(zeros({2, 3}), {4, -1}), Error);
}

// A reshape maps groups of dims onto each other, in 32-bit index math: splitting a dim
// reads it with no division, merging dims takes one div/mod per merged dim. (A 64-bit
// index linearized over the whole tensor kept Halide from proving vector loads dense:
// gpt_block's heads were read by gathers.)
TEST(ShapeOps, ReshapeIndexMathIsPerGroupOfDims) {
  auto reshape_index = [](const Shape& from, const std::vector<int64_t>& to) {
    Graph g = trace([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{reshape(in[0], to) * 2.0}; },
                    {zeros(from)});
    LoweredGraph lowered = lower_to_halide(g);
    for (const Node& n : g.nodes()) {
      if (n.op == "reshape") {
        std::ostringstream s;
        s << lowered.funcs.at(n.id).value();
        return s.str();
      }
    }
    ADD_FAILURE() << "no reshape in the graph";
    return std::string();
  };
  const std::string split = reshape_index(Shape{2, 6, 96}, {2, 6, 4, 24});
  EXPECT_EQ(split.find('/'), std::string::npos) << split;
  EXPECT_EQ(split.find('%'), std::string::npos) << split;
  EXPECT_EQ(split.find("int64"), std::string::npos) << split;
  const std::string merge = reshape_index(Shape{2, 6, 4, 24}, {2, 6, 96});
  EXPECT_NE(merge.find('/'), std::string::npos) << merge;
  EXPECT_EQ(merge.find("int64"), std::string::npos) << merge;
}

TEST(ShapeOps, PermuteTransposeSqueeze) {
  Tensor x = random_with_edges({2, 3, 5}, DType::F32, 2, -1, 1);
  for (std::vector<int64_t> d : {std::vector<int64_t>{0, 1, 2}, {2, 0, 1}, {1, 2, 0}, {-1, 0, 1}}) {
    check("permute", [&](const Tensor& t) { return permute(t, d); }, x, {{"dims", d}});
  }
  Tensor t = transpose(x, 0, 2);
  EXPECT_EQ(t.shape(), (Shape{5, 3, 2}));
  std::vector<double> xv = x.to_doubles(), tv = t.to_doubles();
  EXPECT_EQ(tv[(4 * 3 + 1) * 2 + 1], xv[(1 * 3 + 1) * 5 + 4]);  // t[4,1,1] == x[1,1,4]
  EXPECT_EQ(unsqueeze(x, 1).shape(), (Shape{2, 1, 3, 5}));
  EXPECT_EQ(unsqueeze(x, -1).shape(), (Shape{2, 3, 5, 1}));
  EXPECT_EQ(squeeze(unsqueeze(x, 0), 0).shape(), x.shape());
  EXPECT_EQ(squeeze(x, 0).shape(), x.shape());  // a dim that is not 1: unchanged, as PyTorch
  EXPECT_THROW(permute(x, {0, 0, 1}), Error);
  EXPECT_THROW(permute(x, {0, 1}), Error);
}

TEST(ShapeOps, ExpandSliceConcat) {
  Tensor x = random_with_edges({3, 1}, DType::F32, 3, -1, 1);
  std::vector<int64_t> s = {2, 3, 4};
  check("expand", [&](const Tensor& t) { return expand(t, s); }, x, {{"shape", s}});
  EXPECT_THROW(expand(zeros({3, 2}), {3, 4}), Error);

  Tensor y = random_with_edges({4, 9}, DType::F64, 4, -1, 1);
  for (auto [axis, start, stop, step] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {1, 2, 7, 1}, {1, 0, 9, 2}, {0, -3, 100, 1}, {1, -100, -2, 3}, {0, 3, 1, 1}}) {
    check("slice", [&](const Tensor& t) { return slice(t, axis, start, stop, step); }, y,
          {{"axis", axis}, {"start", start}, {"stop", stop}, {"step", step}});
  }
  EXPECT_EQ(slice(y, 0, 3, 1).shape(), (Shape{0, 9}));
  EXPECT_THROW(slice(y, 1, 0, 5, 0), Error);

  Tensor a = random_with_edges({2, 3}, DType::F32, 5, -1, 1), b = random_with_edges({2, 5}, DType::F32, 6, -1, 1);
  Tensor c = random_with_edges({2, 1}, DType::F32, 7, -1, 1);
  expect_matches_reference("concat", [](const std::vector<Tensor>& in) { return concat(in, 1); }, {a, b, c},
                           {{"axis", int64_t(1)}}, "axis 1");
  expect_matches_reference("concat", [](const std::vector<Tensor>& in) { return concat(in, 0); },
                           {a, random_with_edges({4, 3}, DType::F32, 8, -1, 1)}, {{"axis", int64_t(0)}}, "axis 0");
  EXPECT_THROW(concat({a, b}, 0), Error);
}

TEST(ShapeOps, PadConstantAndCrop) {
  uint64_t seed = 30;
  for (DType dt : {DType::F32, DType::F16, DType::I32}) {
    Tensor x = random_with_edges({2, 3, 4}, dt, seed++, -5, 5);
    for (const std::vector<int64_t>& pads : std::vector<std::vector<int64_t>>{
             {1, 2}, {0, 0, 3, 1}, {2, 1, 1, 0, 1, 1}, {-1, 1}, {1, -2, 0, 1}}) {
      check("pad", [&](const Tensor& t) { return pad(t, pads, 1.5); }, x, {{"pads", pads}, {"value", 1.5}});
    }
  }
  EXPECT_EQ(pad(zeros({3, 4}), {1, 1, 2, 0}).shape(), (Shape{5, 6}));
  EXPECT_EQ(sum(pad(zeros({3}), {1, 2}, 7.0)).item(), 21.0);
  try {
    pad(zeros({3}), {-2, -2});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pad"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("below zero"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pad(zeros({3}), {1}), Error);           // not a pair
  EXPECT_THROW(pad(zeros({3}), {1, 1, 1, 1}), Error);  // more pairs than dims
}

TEST(ShapeOps, StackAndSplit) {
  Tensor a = rand({2, 3}, 1), b = rand({2, 3}, 2), c = rand({2, 3}, 3);
  for (int64_t axis : {0, 1, 2, -1}) {
    auto fn = [axis](const Tensor& x, const Tensor& y, const Tensor& z) { return stack({x, y, z}, axis); };
    Tensor eager = fn(a, b, c), compiled = compile(fn)(a, b, c);
    EXPECT_TRUE(allclose(compiled, eager, 0, 0));
    int64_t k = axis < 0 ? 2 : axis;
    EXPECT_EQ(eager.shape()[int(k)].size, 3);
    // Taking slice i along the new axis gives back the i-th input.
    Tensor back = squeeze(slice(eager, k, 1, 2), k);
    EXPECT_TRUE(allclose(back, b, 0, 0)) << "axis " << axis;
  }
  EXPECT_THROW(stack({a, rand({3, 2})}), Error);
  EXPECT_THROW(stack({}), Error);

  Tensor x = rand({7, 4}, 4);
  std::vector<Tensor> parts = split(x, 3, 0);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].shape(), (Shape{1, 4}));
  EXPECT_TRUE(allclose(concat(parts, 0), x, 0, 0));
  std::vector<Tensor> cols = split(x, std::vector<int64_t>{1, 3}, -1);
  EXPECT_EQ(cols[1].shape(), (Shape{7, 3}));
  EXPECT_TRUE(allclose(concat(cols, 1), x, 0, 0));
  auto f = compile([](const Tensor& t) { return split(t, 2, 1)[1] * 2.0; });
  EXPECT_TRUE(allclose(f(x), slice(x, 1, 2, 4) * 2.0, 0, 0));
  EXPECT_THROW(split(x, std::vector<int64_t>{1, 2}, 0), Error);  // sizes add to 3, not 7
  EXPECT_THROW(split(x, 0, 0), Error);
}

}  // namespace

namespace kiln {
namespace {

TEST(ShapeOps, ConcatOfEmptyTensorsAndClampWithMinAboveMax) {
  Tensor e = from_vector(std::vector<double>{}, Shape({0}));
  EXPECT_EQ(concat({e, e}, 0).sizes(), std::vector<int64_t>({0}));
  EXPECT_EQ(compile([](const Tensor& t) { return concat({t, t}, 0); })(e).sizes(), std::vector<int64_t>({0}));
  // PyTorch: min > max makes every element max.
  Tensor x = from_vector(std::vector<double>{-3, 0.5, 7}, Shape({3}));
  EXPECT_EQ(clamp(x, 1.5, 1.0).to_doubles(), std::vector<double>({1, 1, 1}));
  EXPECT_EQ(compile([](const Tensor& t) { return clamp(t, 1.5, 1.0); })(x).to_doubles(), std::vector<double>({1, 1, 1}));
}

}  // namespace
}  // namespace kiln

namespace {

// kiln_fuzz seed 3103, program 179: an empty slice that starts past the input's end
// (x[:, 3:4] of a [1, 1] x) made Halide's bounds check refuse the compiled gradient
// ("Input buffer x0 is accessed at 1, which is beyond the max (0)").
TEST(Slice, EmptySlicesPastTheEndCompileWithTheirGradients) {
  using namespace kiln;
  const Tensor x = from_vector(std::vector<double>{1.0}, Shape{1, 1}, DType::F32);
  const Tensor w = zeros(Shape{0}), b = zeros(Shape{0});
  auto loss = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return sum(layer_norm(slice(x, 1, 3, 4, 1), {0}, w, b) * 2.0);
  };
  const std::vector<Tensor> g = compile(grad(loss, {0, 1, 2}))({x, w, b});
  EXPECT_EQ(g[0].to_doubles(), std::vector<double>{0.0});
  EXPECT_EQ(g[1].numel(), 0);
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{slice(in[0], 1, 3, 4, 1) + 1.0}; };
  EXPECT_EQ(compile(f)({x})[0].shape(), Shape({1, 0}));
}

}  // namespace
