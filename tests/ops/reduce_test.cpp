#include <cmath>
#include <functional>

#include "core/log_capture.h"
#include "graph/interpreter.h"
#include "lower/kernel.h"
#include "lower/scheduler.h"
#include "lower/target.h"
#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);

struct ReduceCase {
  const char* op;
  ReduceFn fn;
};

void PrintTo(const ReduceCase& c, std::ostream* os) { *os << c.op; }

class Reductions : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(Reductions, MatchReferenceOverAxes) {
  const ReduceCase& c = GetParam();
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {Shape{17}, {}},         {Shape{17}, {0}},       {Shape{3, 5}, {1}},
      {Shape{3, 5}, {0}},      {Shape{3, 5}, {-1, 0}}, {Shape{2, 3, 4}, {1}},
      {Shape{2, 3, 4}, {0, 2}}, {Shape{1, 1}, {}},     {Shape{}, {}},
      {Shape{4, 1000}, {1}}};
  uint64_t seed = 7;
  // Each (shape, axes) without and with keepdim; the other dtypes always see the long row.
  const size_t long_row = 2 * (cases.size() - 1);
  for (auto [dt, index] : dtype_shape_pairs({DType::F32, DType::F64, DType::F16, DType::I32}, 2 * cases.size(),
                                            long_row, c.op)) {
    const auto& [shape, axes] = cases[index / 2];
    const bool keepdim = index % 2 == 1;
    Tensor x = random_with_edges(shape, dt, seed++, -4, 4);
    Attrs attrs{{"axes", axes}, {"keepdim", keepdim}};
    std::string what = std::string(dtype_name(dt)) + shape.str() + " axes=" + attrs.str();
    expect_matches_reference(
        c.op, [&](const std::vector<Tensor>& in) { return c.fn(in[0], axes, keepdim); }, {x}, attrs, what,
        kF32ReductionTolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Reductions,
                         ::testing::Values(ReduceCase{"sum", kiln::sum}, ReduceCase{"mean", kiln::mean},
                                           ReduceCase{"max", kiln::max}, ReduceCase{"min", kiln::min},
                                           ReduceCase{"prod", kiln::prod}),
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

TEST(Reductions, IntegerReductionsAreExactAndWrapAsTheKernels) {
  // i64 values past 2^53 (a double rounds them) and a product past 2^63 (it wraps, as
  // PyTorch's): the reference once computed both in double.
  const int64_t big = (int64_t(1) << 53) + 1;
  const int64_t c = (int64_t(1) << 40) + 7, d = (int64_t(1) << 30) + 5;
  const Tensor x = from_vector(std::vector<int64_t>{big, 3, c, d}, {4});
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(in[0]), prod(in[0]), max(in[0]), min(in[0], {0})};
  };
  const uint64_t product = uint64_t(big) * 3u * uint64_t(c) * uint64_t(d);
  ASSERT_NE(product, 0u);
  const std::vector<int64_t> want = {big + 3 + c + d, int64_t(product), big, 3};
  for (const auto& out : {fn({x}), compile(fn)({x}), interpret(trace(fn, {x}), {x}, InterpretMode::Reference)}) {
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(out[i].dtype(), DType::I64);
      EXPECT_EQ(static_cast<const int64_t*>(out[i].to_host().data())[0], want[i]) << "output " << i;
    }
  }
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

TEST(Reductions, ASumOfAProductWithTheConstantNaNIsNaNCompiled) {
  // kiln_fuzz: compiled sum(x * NaN) was 0 (LLVM folded x * NaN to NaN, then took the
  // fast-math add's no-NaN promise), and so were softmax, var and index_add of it.
  Tensor x = ones({4, 3});
  const std::vector<std::function<Tensor(const Tensor&)>> fns = {
      [](const Tensor& t) { return sum(t * std::nan("")); },
      [](const Tensor& t) { return sum(t * std::nan(""), {0}); },
      [](const Tensor& t) { return prod(t * std::nan(""), {1}); },
      [](const Tensor& t) { return softmax(t * std::nan(""), 1); },
      [](const Tensor& t) { return var(t * std::nan(""), {0}); },
      [](const Tensor& t) {
        return index_add(zeros({3, 3}), 0, from_vector(std::vector<int64_t>{2, 0, 2, 1}, {4}), t * std::nan(""));
      }};
  for (size_t i = 0; i < fns.size(); ++i) {
    for (const Tensor& y : {fns[i](x), compile(fns[i])(x)}) {
      for (double v : y.to_doubles()) EXPECT_TRUE(std::isnan(v)) << "case " << i << ": " << y.str();
    }
  }
}

TEST(Reductions, AnInfiniteMeanStaysInfiniteInTheOpsThatReadIt) {
  // kiln_fuzz: compiled log(mean) of [-1, inf] was 88.72 (log of the largest float).
  Tensor x = from_vector(std::vector<double>{0.0, -3.0, -1.0, INFINITY}, Shape({2, 2}));
  auto f = [](const Tensor& t) { return log(mean(t, {0})); };
  for (const Tensor& y : {f(x), compile(f)(x)}) {
    const std::vector<double> v = y.to_doubles();
    EXPECT_TRUE(std::isnan(v[0])) << y.str();
    EXPECT_EQ(v[1], INFINITY) << y.str();
  }
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

namespace {

TEST(Softmax, MatchesReferenceOnEveryAxisAndDtype) {
  uint64_t seed = 50;
  for (const char* op : {"softmax", "log_softmax"}) {
    for (DType dt : {DType::F32, DType::F64, DType::F16}) {
      for (const auto& [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
               {Shape{7}, 0}, {Shape{3, 5}, -1}, {Shape{3, 5}, 0}, {Shape{2, 3, 17}, 1}, {Shape{4, 1}, 1}}) {
        Tensor x = random_with_edges(shape, dt, seed++, -5, 5);
        expect_matches_reference(op, [&](const std::vector<Tensor>& in) {
              return std::string(op) == "softmax" ? softmax(in[0], axis) : log_softmax(in[0], axis);
            }, {x}, {{"axis", axis}}, std::string(dtype_name(dt)) + shape.str(), kF32ReductionTolerance);
      }
    }
  }
}

// A row reduction's vectors of partial results combine their lanes in a tree (Halide's
// VectorReduce), under the rules and under Kiln, not one lane after another: that serial
// sum cost a row of 64 floats as much as its loads. Rows that are not whole vectors
// (40), of 64, and long ones; the result is checked in every dtype.
TEST(Softmax, RowsCombineTheirPartialResultsInATree) {
  uint64_t seed = 70;
  for (const int64_t cols : {40, 64, 4096}) {
    for (DType dt : {DType::F32, DType::F64, DType::F16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " rows of " + std::to_string(cols));
      const Tensor x = rand({12, cols}, seed++, -5, 5, dt);
      const Tensor w = rand({cols}, seed++, 0.5, 1.5, dt), b = rand({cols}, seed++, -1, 1, dt);
      auto fn = [cols](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{softmax(in[0], -1), layer_norm(in[0], {cols}, in[1], in[2])};
      };
      Graph g = trace(fn, {x, w, b});
      const std::vector<Tensor> want = interpret(g, {x, w, b}, InterpretMode::Reference);
      const double tol = dt == DType::F16 ? 1e-2 : 1e-5;
      for (const std::string scheduler : {"rules", "Kiln"}) {
        SCOPED_TRACE(scheduler);
        Kernel kernel(g, parse_target("host"), make_schedule_fn(scheduler, g, {x, w, b}));
        if (dt == DType::F32) {
          const std::string stmt = kernel.lowered_stmt();
          EXPECT_NE(stmt.find("vector_reduce_max"), std::string::npos) << stmt;
          EXPECT_NE(stmt.find("vector_reduce_add"), std::string::npos) << stmt;
        }
        const std::vector<Tensor> got = kernel.run({x, w, b});
        for (size_t o = 0; o < 2; ++o) {
          EXPECT_TRUE(allclose(got[o], want[o], tol, tol)) << o << ": " << max_abs_diff(got[o], want[o]);
        }
      }
    }
  }
}

TEST(Softmax, StaysFiniteForHugeLogits) {
  Tensor x = from_vector(std::vector<float>{1e4f, -1e4f, 0.0f, 1e4f - 1.0f}, {1, 4});
  std::vector<double> p = softmax(x).to_doubles(), lp = log_softmax(x).to_doubles();
  for (double v : p) EXPECT_TRUE(std::isfinite(v));
  for (double v : lp) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(p[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(lp[1], -2e4 - std::log1p(std::exp(-1.0)), 1e-2);
  EXPECT_THROW(softmax(x, 2), Error);
}

TEST(Norms, LayerNormAndRmsNormMatchReference) {
  uint64_t seed = 90;
  for (DType dt : {DType::F32, DType::F64, DType::F16}) {
    for (const auto& [shape, k] : std::vector<std::pair<Shape, int64_t>>{{Shape{4, 33}, 1}, {Shape{2, 3, 8}, 2}, {Shape{5}, 1}}) {
      Tensor x = random_with_edges(shape, dt, seed++, -3, 7);  // a non-zero mean
      Attrs a{{"dims", k}, {"eps", 1e-5}};
      std::vector<int64_t> sizes = shape.sizes();
      std::vector<int64_t> ns(sizes.end() - k, sizes.end());
      expect_matches_reference("layer_norm", [&](const std::vector<Tensor>& in) { return layer_norm(in[0], ns); },
                               {x}, a, std::string(dtype_name(dt)) + shape.str(), kF32ReductionTolerance);
      Attrs b{{"dims", k}, {"eps", 1e-6}};
      expect_matches_reference("rms_norm", [&](const std::vector<Tensor>& in) { return rms_norm(in[0], ns); },
                               {x}, b, std::string(dtype_name(dt)) + shape.str(), kF32ReductionTolerance);
    }
  }
}

TEST(Norms, AffineAndLargeOffsets) {
  // A large common offset: a one-pass variance (E[x^2] - E[x]^2, both ~1e6 in f32) would
  // cancel catastrophically; the two-pass form stays within f32 rounding of the mean.
  Tensor x = rand({3, 64}, 4, 1e3, 1e3 + 1.0);
  Tensor w = rand({64}, 5), b = rand({64}, 6);
  Tensor y = layer_norm(x, {64}, w, b);
  Tensor ref = get_op("layer_norm").reference({x}, {{"dims", int64_t(1)}, {"eps", 1e-5}}, x.meta());
  EXPECT_TRUE(allclose(y, ref * w + b, 1e-3, 1e-3)) << max_abs_diff(y, ref * w + b);
  EXPECT_THROW(layer_norm(x, {63}), Error);
  EXPECT_THROW(layer_norm(x, {64}, rand({3})), Error);
}

}  // namespace

namespace {

TEST(Decompositions, VarStdMseAgainstDirectComputation) {
  Tensor x = rand({4, 7}, 21, -3, 5, DType::F64);
  std::vector<double> v = x.to_doubles();
  // Row variances, sample and population, computed directly.
  for (int64_t correction : {0, 1}) {
    std::vector<double> expect;
    for (int r = 0; r < 4; ++r) {
      double m = 0, s = 0;
      for (int c = 0; c < 7; ++c) m += v[size_t(r * 7 + c)] / 7;
      for (int c = 0; c < 7; ++c) s += (v[size_t(r * 7 + c)] - m) * (v[size_t(r * 7 + c)] - m);
      expect.push_back(s / double(7 - correction));
    }
    Tensor e = from_vector(expect, {4}, DType::F64);
    EXPECT_TRUE(allclose(var(x, {1}, correction), e, 1e-12, 1e-12));
    EXPECT_TRUE(allclose(compile([correction](const Tensor& t) { return var(t, {1}, correction); })(x), e, 1e-12, 1e-12));
    EXPECT_TRUE(allclose(std_dev(x, {1}, correction), sqrt(e), 1e-12, 1e-12));
  }
  EXPECT_EQ(var(x, {1}, 1, true).shape(), (Shape{4, 1}));
  EXPECT_NEAR(var(x).item(), var(reshape(x, {28}), {0}).item(), 1e-12);
  Tensor p = from_vector(std::vector<double>{1, 2, 3}, {3}, DType::F64), t = from_vector(std::vector<double>{1, 4, 0}, {3}, DType::F64);
  EXPECT_NEAR(mse_loss(p, t).item(), (0 + 4 + 9) / 3.0, 1e-12);
  EXPECT_THROW(mse_loss(p, zeros({4})), Error);
  EXPECT_THROW(var(x, {1}, -1), Error);
}

TEST(Decompositions, TrilTriu) {
  Tensor x = ones({2, 3, 4});
  std::vector<double> lo = tril(x).to_doubles(), up = triu(x, 1).to_doubles();
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        EXPECT_EQ(lo[size_t((b * 3 + i) * 4 + j)], j <= i ? 1.0 : 0.0);
        EXPECT_EQ(up[size_t((b * 3 + i) * 4 + j)], j >= i + 1 ? 1.0 : 0.0);
      }
  EXPECT_TRUE(allclose(compile([](const Tensor& t) { return tril(t, -1); })(x), tril(x, -1), 0, 0));
  EXPECT_THROW(tril(ones({3})), Error);
}

}  // namespace

namespace {

TEST(Argmax, MatchesReferenceWithTiesAndNaN) {
  uint64_t seed = 300;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I32}) {
    for (const auto& [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
             {Shape{9}, 0}, {Shape{3, 5}, 1}, {Shape{3, 5}, 0}, {Shape{2, 3, 4}, -2}}) {
      for (bool keepdim : {false, true}) {
        // Few distinct values, so ties are common; the first maximum must win.
        Tensor x = floor(random_with_edges(shape, dt, seed++, -2, 2));
        expect_matches_reference("argmax", [&](const std::vector<Tensor>& in) { return argmax(in[0], axis, keepdim); },
                                 {x}, {{"axis", axis}, {"keepdim", keepdim}}, std::string(dtype_name(dt)) + shape.str());
      }
    }
  }
  Tensor n = from_vector(std::vector<float>{1, 5, NAN, 5, 7, 7}, {2, 3});
  EXPECT_EQ(argmax(n, 1).to_vector<int64_t>(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(argmax(n, 1).dtype(), DType::I64);
  EXPECT_THROW(argmax(zeros({0, 3}), 0), Error);
}

}  // namespace

namespace {

// Reductions of everything (a loss's sum or mean) on the GPU run as two levels of partial
// results, not on one thread: the CUDA code generates everywhere, and matches the
// reference where a GPU is present.
TEST(Reductions, FullReductionsOnTheGpu) {
  Tensor x = rand({3, 100003}, 21, -1, 1);
  for (const char* op : {"sum", "mean", "max"}) {
    SCOPED_TRACE(op);
    Graph g;
    int in = g.add_placeholder("x", x.meta());
    g.set_outputs({g.add_op(op, {in}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}})});
    EXPECT_NO_THROW({
      LoweredGraph lowered = lower_and_schedule(g, parse_target("host-cuda"));
      lowered.pipeline().compile_to_module(lowered.arguments(), op, parse_target("host-cuda"));
    });
  }
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; CUDA code generation was tested above";
  expect_matches_reference_on_gpu("sum", [](const std::vector<Tensor>& in) { return sum(in[0]); }, {x},
                                  {{"axes", std::vector<int64_t>{}}, {"keepdim", false}}, "f32");
  expect_matches_reference_on_gpu("mean", [](const std::vector<Tensor>& in) { return mean(in[0], {}, true); }, {x},
                                  {{"axes", std::vector<int64_t>{}}, {"keepdim", true}}, "f32");
  expect_matches_reference_on_gpu("max", [](const std::vector<Tensor>& in) { return max(in[0]); }, {x},
                                  {{"axes", std::vector<int64_t>{}}, {"keepdim", false}}, "f32");
}

// Softmax and the norms as row kernels at short, long, odd and 3-D rows: the rows are
// read once into shared memory where they fit a block, else from DRAM once per pass. The
// CUDA code generates everywhere and matches the f64 reference where a GPU is present.
TEST(Reductions, RowKernelsOnTheGpu) {
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  const std::vector<std::pair<std::string, Fn>> fns = {
      {"softmax", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; }},
      {"log_softmax", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{log_softmax(in[0], -1)}; }},
      {"softmax of a scaled sum", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0] * 0.5 + in[1], -1)}; }},
      {"layer_norm", [](const std::vector<Tensor>& in) {
         const int64_t c = in[0].shape()[in[0].shape().rank() - 1].size;
         return std::vector<Tensor>{layer_norm(in[0], {c}, in[1], in[2])};
       }},
      {"rms_norm", [](const std::vector<Tensor>& in) {
         const int64_t c = in[0].shape()[in[0].shape().rank() - 1].size;
         return std::vector<Tensor>{rms_norm(in[0], {c}, in[1])};
       }},
  };
  const std::vector<Shape> shapes = {Shape({2048, 64}), Shape({64, 4096}), Shape({8, 32768}), Shape({300, 1000}),
                                     Shape({4, 6, 70})};
  const Halide::Target cuda = parse_target("host-cuda");
  for (const Shape& shape : shapes) {
    const int64_t c = shape[shape.rank() - 1].size;
    const std::vector<Tensor> in = {rand(shape, 31, -4, 4), rand(Shape({c}), 32, 0.5, 1.5), rand(Shape({c}), 33, -1, 1)};
    for (const auto& [name, fn] : fns) {
      SCOPED_TRACE(name + " of " + shape.str());
      const Graph g = trace(fn, in);
      EXPECT_NO_THROW({
        LoweredGraph lowered = lower_and_schedule(g, cuda);
        lowered.pipeline().compile_to_module(lowered.arguments(), "rows", cuda);
      });
      if (!cuda_available()) continue;
      const Tensor want = interpret(g, in, InterpretMode::Reference)[0];
      std::vector<Tensor> on_gpu;
      for (const Tensor& t : in) on_gpu.push_back(t.to(Device::cuda()));
      CompileOptions o;
      o.target = "host-cuda";
      const Tensor got = compile(fn, o)(on_gpu)[0].to_host();
      EXPECT_TRUE(allclose(cast(got, DType::F64), cast(want, DType::F64), 1e-4, 1e-5))
          << "max abs diff " << max_abs_diff(cast(got, DType::F64), cast(want, DType::F64));
    }
  }
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; CUDA code generation was tested above";
}

TEST(Reductions, ColumnReductionsOnTheGpu) {
  // Reductions over the outer dims (a bias gradient): rows split into chunks where the
  // columns alone would leave the GPU idle, one thread per column elsewhere.
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  const std::vector<std::pair<std::string, Fn>> fns = {
      {"sum", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0], {0})}; }},
      {"sum of a product", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0] * in[0] - 1.0, {0})}; }},
      {"max", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{max(in[0], {0})}; }},
      {"mean", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mean(in[0], {0})}; }},
  };
  const std::vector<Shape> shapes = {Shape({4096, 256}), Shape({1000, 300}), Shape({7, 33}), Shape({3001, 5})};
  const Halide::Target cuda = parse_target("host-cuda");
  for (const Shape& shape : shapes) {
    const std::vector<Tensor> in = {rand(shape, 41, -4, 4)};
    for (const auto& [name, fn] : fns) {
      SCOPED_TRACE(name + " of " + shape.str());
      const Graph g = trace(fn, in);
      const std::string log = logged("schedule", [&] {
        EXPECT_NO_THROW({
          LoweredGraph lowered = lower_and_schedule(g, cuda, make_schedule_fn("Kiln", g, in));
          lowered.pipeline().compile_to_module(lowered.arguments(), "columns", cuda);
        });
      });
      if (shape == Shape({4096, 256}) && name == "sum") EXPECT_NE(log.find("columns reduced in"), std::string::npos) << log;
      if (!cuda_available()) continue;
      const Tensor want = interpret(g, in, InterpretMode::Reference)[0];
      CompileOptions o;
      o.target = "host-cuda";
      const Tensor got = compile(fn, o)({in[0].to(Device::cuda())})[0].to_host();
      EXPECT_TRUE(allclose(cast(got, DType::F64), cast(want, DType::F64), 1e-4, 1e-4))
          << "max abs diff " << max_abs_diff(cast(got, DType::F64), cast(want, DType::F64));
    }
  }
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; CUDA code generation was tested above";
}

}  // namespace

// Regression tests of random-program findings: each was a crash or a wrong value.
namespace kiln {
namespace {

TEST(Reductions, EagerOverEveryDimButATrailingSizeOneDim) {
  // The rules vectorized the one column 16 wide into a stack buffer Halide then accessed
  // as aligned: a fault, or a wrong sum.
  EXPECT_EQ(sum(ones(Shape({3, 1})), {0}).to_doubles(), std::vector<double>({3.0}));
  EXPECT_EQ(max(from_vector(std::vector<double>{1, 5, 2, 4, 3, 0}, Shape({2, 3, 1})), {0, 1}).to_doubles(),
            std::vector<double>({5.0}));
  EXPECT_EQ(mean(ones(Shape({5, 1})), {0}).to_doubles(), std::vector<double>({1.0}));
  Tensor y = ones(Shape({4, 1})).requires_grad(), c = full(Shape({1, 1}), 2.0).requires_grad();
  sum(y + c).backward();
  EXPECT_EQ(c.grad().to_doubles(), std::vector<double>({4.0}));
}

TEST(Reductions, LongF32SumsAccumulateInF64) {
  const int64_t n = 1 << 20;
  Tensor x = rand(Shape({n}), 7);
  double exact = 0;
  for (double v : x.to_doubles()) exact += v;
  exact /= double(n);
  EXPECT_NEAR(mean(x).item(), exact, 1e-7 * exact);
  EXPECT_NEAR(compile([](const Tensor& t) { return mean(t); })(x).item(), exact, 1e-7 * exact);
}

TEST(Reductions, MeanOverAnEmptyAxisIsNaN) {
  Tensor x = ones(Shape({3, 0}));
  EXPECT_TRUE(std::isnan(mean(x, {1}).to_doubles()[0]));
  EXPECT_TRUE(std::isnan(compile([](const Tensor& t) { return mean(t, {1}); })(x).to_doubles()[2]));
}

TEST(Softmax, ARowWithNaNOrAnInfiniteMaxIsNaN) {
  const double nan = NAN, inf = INFINITY;
  Tensor x = from_vector(std::vector<double>{1, nan, 3, 4, 1, inf, 3, 4, -inf, -inf, -inf, -inf, 1, -inf, 3, 4}, Shape({4, 4}));
  auto check = [](const Tensor& y, bool log_form) {
    std::vector<double> v = y.to_doubles();
    for (int i = 0; i < 12; ++i) EXPECT_TRUE(std::isnan(v[size_t(i)])) << "row " << i / 4 << " col " << i % 4;
    EXPECT_NEAR(v[12], log_form ? std::log(0.0351190) : 0.0351190, 1e-5);
    EXPECT_EQ(v[13], log_form ? -INFINITY : 0.0);
  };
  check(softmax(x), false);
  check(log_softmax(x), true);
  check(compile([](const Tensor& t) { return softmax(t); })(x), false);
  check(compile([](const Tensor& t) { return log_softmax(t); })(x), true);
}

TEST(Softmax, LogSoftmaxIsShiftInvariantForLargeLogits) {
  for (double m : {1e4, 1e7, 1e8, 1e30}) {
    Tensor x = full(Shape({1, 4}), m);
    for (double v : log_softmax(x).to_doubles()) EXPECT_NEAR(v, -std::log(4.0), 1e-6) << m;
    for (double v : compile([](const Tensor& t) { return log_softmax(t); })(x).to_doubles())
      EXPECT_NEAR(v, -std::log(4.0), 1e-6) << m;
  }
}

TEST(Norms, LayerNormOverOneInfiniteElementIsNaN) {
  Tensor x = from_vector(std::vector<double>{INFINITY, -INFINITY, 2.0}, Shape({3, 1}));
  for (const Tensor& y : {layer_norm(x, {1}), compile([](const Tensor& t) { return layer_norm(t, {1}); })(x)}) {
    std::vector<double> v = y.to_doubles();
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_TRUE(std::isnan(v[1]));
    EXPECT_EQ(v[2], 0.0);
  }
}

TEST(Decompositions, VarOfLargeF32ValuesDoesNotOverflow) {
  Tensor x = from_vector(std::vector<double>{1e19, -1e19, 3e19, 0}, Shape({4}));
  const double want = 2.9166666666666666e38;  // sample variance, exact in double
  EXPECT_NEAR(var(x).item(), want, 1e-6 * want);
  EXPECT_NEAR(compile([](const Tensor& t) { return std_dev(t); })(x).item(), std::sqrt(want), 1e-6 * std::sqrt(want));
  EXPECT_EQ(var(x).dtype(), DType::F32);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(Reductions, AZeroDimTensorReducesAlongDimZero) {
  // PyTorch takes dim 0 or -1 of a 0-d tensor as a dim of size 1.
  Tensor x = scalar_tensor(2.5);
  EXPECT_EQ(sum(x, {0}).item(), 2.5);
  EXPECT_EQ(mean(x, {-1}, true).rank(), 0);
  EXPECT_EQ(max(x, {0}).item(), 2.5);
  EXPECT_EQ(softmax(x, 0).item(), 1.0);
  EXPECT_EQ(log_softmax(x, -1).item(), 0.0);
  EXPECT_TRUE(std::isnan(softmax(scalar_tensor(INFINITY), 0).item()));
  EXPECT_EQ(argmax(x, 0).item(), 0.0);
  EXPECT_TRUE(std::isnan(var(x, {0}).item()));  // one element, correction 1
  EXPECT_EQ(compile([](const Tensor& t) { return softmax(t, 0) + sum(t, {0}); })(x).item(), 3.5);
  EXPECT_THROW(sum(x, {1}), Error);
}

}  // namespace
}  // namespace kiln
