#include <cmath>
#include <fstream>
#include <sstream>

#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

using Ints = std::vector<int64_t>;

std::string dt_str(DType dt) { return std::string(dtype_name(dt)); }

// Expects `fn` to throw a kiln::Error whose message names every one of `parts`.
template <class Fn>
void expect_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one naming " << parts[0];
  } catch (const Error& e) {
    std::string m = e.what();
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  }
}

struct ConvCase {
  Shape x, w;
  Ints stride, padding, dilation;
  int64_t groups;
};

std::string conv_what(DType dt, const ConvCase& c) {
  return dt_str(dt) + " x" + c.x.str() + " w" + c.w.str() + " stride" + Shape(c.stride).str() + " pad" +
         Shape(c.padding).str() + " dil" + Shape(c.dilation).str() + " groups=" + std::to_string(c.groups);
}

void expect_conv_matches(const ConvCase& c, DType dt, uint64_t seed) {
  Tensor x = random_with_edges(c.x, dt, seed, -2, 2), w = random_with_edges(c.w, dt, seed + 1, -1, 1);
  Attrs attrs{{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}};
  expect_matches_reference(
      "conv2d",
      [&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], {}, c.stride, c.padding, c.dilation, c.groups); },
      {x, w}, attrs, conv_what(dt, c), kF32ReductionTolerance);
}

TEST(Conv2d, MatchesReferenceF32) {
  const std::vector<ConvCase> cases = {
      {Shape{1, 1, 1, 1}, Shape{1, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
      {Shape{2, 3, 7, 9}, Shape{4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {Shape{1, 4, 10, 11}, Shape{6, 4, 3, 2}, {2, 2}, {1, 0}, {1, 1}, 1},
      {Shape{2, 4, 9, 9}, Shape{4, 2, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 2},        // grouped, dilated
      {Shape{1, 6, 8, 8}, Shape{6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6},        // depthwise
      {Shape{2, 8, 7, 7}, Shape{5, 8, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1},        // 1x1 shortcut
      {Shape{1, 3, 5, 5}, Shape{2, 3, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1},        // kernel = input
      {Shape{3, 5, 13, 17}, Shape{9, 5, 3, 3}, {1, 2}, {1, 1}, {2, 1}, 1},      // odd everything
      {Shape{1, 16, 20, 20}, Shape{16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {Shape{2, 6, 1, 9}, Shape{12, 3, 1, 3}, {1, 3}, {0, 2}, {1, 1}, 2}};  // H = 1
  uint64_t seed = 100;
  for (const ConvCase& c : cases) expect_conv_matches(c, DType::F32, seed += 2);
}

TEST(Conv2d, MatchesReferenceOtherDtypes) {
  const std::vector<ConvCase> cases = {
      {Shape{2, 3, 7, 9}, Shape{4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {Shape{1, 4, 9, 8}, Shape{6, 2, 3, 3}, {2, 1}, {1, 1}, {1, 2}, 2}};
  uint64_t seed = 200;
  for (DType dt : {DType::F64, DType::F16, DType::BF16, DType::I32}) {
    for (const ConvCase& c : cases) expect_conv_matches(c, dt, seed += 2);
  }
}

TEST(Conv2d, BiasAndComposedGraph) {
  Tensor x = rand({2, 3, 8, 8}, 1, -1, 1), w = rand({5, 3, 3, 3}, 2, -0.5, 0.5), b = rand({5}, 3);
  Attrs attrs{{"stride", Ints{1, 1}}, {"padding", Ints{1, 1}}, {"dilation", Ints{1, 1}}, {"groups", int64_t(1)}};
  Tensor ref = get_op("conv2d").reference({x, w}, attrs, TensorMeta{DType::F32, Shape{2, 5, 8, 8}});
  Tensor expected = relu(ref + reshape(b, {5, 1, 1}));
  auto fn = [&](const Tensor& t) { return relu(conv2d(t, w, b, {1}, {1})); };
  Tensor eager = fn(x), compiled = compile(fn)(x);
  EXPECT_TRUE(allclose(eager, expected, 1e-5, 1e-5)) << max_abs_diff(eager, expected);
  EXPECT_TRUE(allclose(compiled, expected, 1e-5, 1e-5)) << max_abs_diff(compiled, expected);
  // Two convs and a pool in one pipeline (conv output feeding a conv).
  Tensor w2 = rand({4, 5, 3, 3}, 4, -0.3, 0.3);
  auto net = [&](const Tensor& t) {
    return max_pool2d(conv2d(relu(conv2d(t, w, b, {1}, {1})), w2, {}, {2}, {1}), {2});
  };
  Tensor e2 = net(x), c2 = compile(net)(x);
  Graph g = trace([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{net(in[0])}; }, {x});
  Tensor r2 = interpret(g, {x}, InterpretMode::Reference)[0];
  EXPECT_EQ(c2.shape(), (Shape{2, 4, 2, 2}));
  EXPECT_TRUE(allclose(c2, r2, 1e-4, 1e-5)) << max_abs_diff(c2, r2);
  EXPECT_TRUE(allclose(e2, r2, 1e-4, 1e-5)) << max_abs_diff(e2, r2);
  // A dynamic batch dim: one kernel serves batches 2 and 3. Dynamic spatial dims are refused.
  CompileOptions dyn;
  dyn.dynamic_dims = {{0, 0}};
  auto dyn_net = compile(net, dyn);
  Tensor x3 = rand({3, 3, 8, 8}, 5, -1, 1);
  EXPECT_TRUE(allclose(dyn_net(x), e2, 1e-5, 1e-5));
  EXPECT_TRUE(allclose(dyn_net(x3), net(x3), 1e-5, 1e-5));
  CompileOptions all_dynamic;
  all_dynamic.dynamic = true;
  expect_error([&] { compile(net, all_dynamic)(x); }, {"conv2d", "static C, H and W"});
}

// conv2d's CPU schedule is conv-specific (register tiles); the GPU takes the generic rules.
// CUDA code generation needs no GPU; running it does.
Tensor small_cnn(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor h = relu(conv2d(x, w, b, {1}, {1}));
  return adaptive_avg_pool2d(avg_pool2d(max_pool2d(h, {3}, {1}, {1}), {2}), {2});
}

TEST(Conv2d, CudaCodeGenerationWithoutAGpu) {
  Tensor x = rand({2, 3, 8, 8}, 1), w = rand({4, 3, 3, 3}, 2), b = rand({4}, 3);
  Graph g = trace([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{small_cnn(in[0], w, b)}; }, {x});
  AotArtifacts a = compile_aot(g, "host-cuda", ::testing::TempDir() + "kiln_conv_cuda", "conv_cuda");
  std::ifstream stmt(a.stmt);
  std::stringstream ss;
  ss << stmt.rdbuf();
  EXPECT_NE(ss.str().find(".entry"), std::string::npos) << "PTX kernels";
}

TEST(Conv2d, MatchesReferenceOnTheGpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; CUDA code generation is covered without one";
  for (const ConvCase& c : {ConvCase{Shape{2, 3, 7, 9}, Shape{4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                            ConvCase{Shape{2, 4, 9, 9}, Shape{4, 2, 3, 3}, {2, 1}, {2, 2}, {2, 2}, 2}}) {
    Tensor x = rand(c.x, 1, -2, 2), w = rand(c.w, 2, -1, 1);
    Attrs attrs{{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}};
    expect_matches_reference_on_gpu(
        "conv2d",
        [&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], {}, c.stride, c.padding, c.dilation, c.groups); },
        {x, w}, attrs, conv_what(DType::F32, c));
  }
  Tensor x = rand({2, 3, 8, 8}, 1), w = rand({4, 3, 3, 3}, 2), b = rand({4}, 3);
  auto f = [&](const Tensor& t) { return small_cnn(t, w, b); };
  CompileOptions o;
  o.target = "host-cuda";
  Tensor y = compile(f, o)(x.to(Device::cuda())).to_host();
  EXPECT_TRUE(allclose(y, f(x), 1e-5, 1e-5)) << max_abs_diff(y, f(x));
}

// Zero padding multiplies like any zero, as in PyTorch: an infinite weight over padding
// gives NaN, in the reference as eager and compiled (kiln_fuzz --seed 101, program 133).
// conv_transpose2d against its definition, written independently as a scatter in f64:
// input (ih, iw) of channel c adds x * w[c, o, kh, kw] at output (ih * s - p + kh * d, ...).
Tensor conv_transpose2d_scatter(const Tensor& x, const Tensor& w, const Tensor& b, Ints s, Ints p, Ints q,
                                int64_t g, Ints d) {
  const int64_t N = x.shape()[0].size, C = x.shape()[1].size, H = x.shape()[2].size, W = x.shape()[3].size;
  const int64_t OG = w.shape()[1].size, KH = w.shape()[2].size, KW = w.shape()[3].size, O = OG * g, CG = C / g;
  const int64_t OH = (H - 1) * s[0] - 2 * p[0] + d[0] * (KH - 1) + q[0] + 1;
  const int64_t OW = (W - 1) * s[1] - 2 * p[1] + d[1] * (KW - 1) + q[1] + 1;
  const std::vector<double> xv = x.to_doubles(), wv = w.to_doubles();
  std::vector<double> out(size_t(N * O * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw)
          for (int64_t o = 0; o < OG; ++o)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t oh = ih * s[0] - p[0] + kh * d[0], ow = iw * s[1] - p[1] + kw * d[1];
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                const int64_t oc = (c / CG) * OG + o;
                out[size_t(((n * O + oc) * OH + oh) * OW + ow)] +=
                    xv[size_t(((n * C + c) * H + ih) * W + iw)] * wv[size_t(((c * OG + o) * KH + kh) * KW + kw)];
              }
  if (b.defined()) {
    const std::vector<double> bv = b.to_doubles();
    for (size_t i = 0; i < out.size(); ++i) out[i] += bv[(i / size_t(OH * OW)) % size_t(O)];
  }
  return from_vector(out, Shape{N, O, OH, OW}, DType::F64);
}

TEST(ConvTranspose2d, MatchesTheScatterDefinition) {
  struct Case {
    Shape x, w;
    Ints stride, padding, output_padding;
    int64_t groups;
    Ints dilation;
    bool bias;
  };
  const std::vector<Case> cases = {
      {Shape{1, 1, 1, 1}, Shape{1, 1, 1, 1}, {1}, {0}, {0}, 1, {1}, false},
      {Shape{2, 3, 5, 4}, Shape{3, 2, 3, 3}, {1}, {0}, {0}, 1, {1}, true},
      {Shape{1, 2, 4, 5}, Shape{2, 3, 3, 3}, {2}, {1}, {1}, 1, {1}, true},   // PyTorch's upsampling by 2
      {Shape{1, 2, 3, 3}, Shape{2, 2, 4, 4}, {2}, {1}, {0}, 1, {1}, false},  // DCGAN's 4x4, stride 2
      {Shape{1, 4, 3, 5}, Shape{4, 3, 2, 3}, {3, 2}, {0, 2}, {2, 1}, 2, {1, 2}, true},
      {Shape{2, 6, 4, 4}, Shape{6, 1, 3, 3}, {2}, {3}, {1}, 6, {1}, false},  // depthwise, padding past the kernel
      {Shape{1, 1, 7, 1}, Shape{1, 5, 2, 1}, {3, 1}, {1, 0}, {2, 0}, 1, {1}, true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    for (DType dt : {DType::F32, DType::F64}) {
      if (dt == DType::F64 && i % 3 != 1) continue;  // f64 on a few: each case compiles anew
      SCOPED_TRACE("x" + c.x.str() + " w" + c.w.str() + " stride" + Shape(c.stride).str() + " pad" +
                   Shape(c.padding).str() + " out_pad" + Shape(c.output_padding).str() + " groups " +
                   std::to_string(c.groups) + " dil" + Shape(c.dilation).str() + " " + dt_str(dt));
      const Tensor x = random_with_edges(c.x, dt, 3, -2, 2), w = random_with_edges(c.w, dt, 4, -1, 1);
      const Tensor b = c.bias ? rand({c.w[1].size * c.groups}, 5, -1, 1, dt) : Tensor();
      auto two = [](const Ints& v) { return v.size() == 1 ? Ints{v[0], v[0]} : v; };
      const Tensor want = conv_transpose2d_scatter(x, w, b, two(c.stride), two(c.padding), two(c.output_padding),
                                                   c.groups, two(c.dilation));
      auto fn = [&](const Tensor& xx, const Tensor& ww) {
        return conv_transpose2d(xx, ww, b, c.stride, c.padding, c.output_padding, c.groups, c.dilation);
      };
      const double tol = dt == DType::F32 ? 1e-4 : 1e-10;
      const Tensor eager = fn(x, w), compiled = compile(fn)(x, w);
      ASSERT_EQ(eager.shape(), want.shape());
      EXPECT_TRUE(allclose(eager, want, tol, tol)) << max_abs_diff(eager, want);
      EXPECT_TRUE(allclose(compiled, want, tol, tol)) << max_abs_diff(compiled, want);
      EXPECT_EQ(eager.dtype(), dt);
    }
  }
}

TEST(ConvTranspose2d, Errors) {
  const Tensor x = rand({1, 4, 5, 5}), w = rand({4, 2, 3, 3});
  expect_error([&] { conv_transpose2d(x, rand({3, 2, 3, 3})); }, {"conv_transpose2d", "first dim", "4 channels"});
  expect_error([&] { conv_transpose2d(x, w, {}, {1}, {0}, {0}, 3); }, {"conv_transpose2d", "groups", "divide"});
  expect_error([&] { conv_transpose2d(x, w, {}, {2}, {0}, {2}); }, {"conv_transpose2d", "output_padding", "smaller"});
  expect_error([&] { conv_transpose2d(x, w, {}, {0}); }, {"conv_transpose2d", "stride"});
  expect_error([&] { conv_transpose2d(x, w, rand({3})); }, {"conv_transpose2d", "bias", "[O] = [2]"});
  expect_error([&] { conv_transpose2d(x, w, {}, {1}, {4}); }, {"conv_transpose2d", "would have size"});
  expect_error([&] { conv_transpose2d(rand({4, 5, 5}), w); }, {"conv_transpose2d", "[N, C, H, W]"});
}

TEST(Conv2d, PaddingTimesAnInfiniteWeightIsNaN) {
  Tensor x = from_vector(std::vector<double>{2.0}, Shape({1, 1, 1, 1}));
  Tensor w = from_vector(std::vector<double>{1.5, 0.5, INFINITY}, Shape({1, 1, 1, 3}));
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1], Tensor(), {1}, {1})}; };
  Graph g = trace(f, {x, w});
  for (const Tensor& out : {f({x, w})[0], compile(f)({x, w})[0], interpret(g, {x, w}, InterpretMode::Reference)[0]}) {
    ASSERT_EQ(out.shape(), Shape({1, 1, 3, 1}));
    for (double v : out.to_doubles()) EXPECT_TRUE(std::isnan(v)) << out.str();
  }
}

TEST(Conv2d, Errors) {
  Tensor x = zeros({1, 4, 6, 6});
  expect_error([&] { conv2d(x, zeros({2, 4, 3})); }, {"conv2d", "weight", "4-D"});
  expect_error([&] { conv2d(zeros({4, 6, 6}), zeros({2, 4, 3, 3})); }, {"conv2d", "input", "4-D"});
  expect_error([&] { conv2d(x, zeros({2, 3, 3, 3})); }, {"conv2d", "C/groups=3", "C=4"});
  expect_error([&] { conv2d(x, zeros({2, 2, 3, 3}), {}, {1}, {0}, {1}, 3); }, {"conv2d", "C=4", "groups=3"});
  expect_error([&] { conv2d(x, zeros({3, 2, 3, 3}), {}, {1}, {0}, {1}, 2); }, {"conv2d", "O=3", "groups=2"});
  expect_error([&] { conv2d(x, zeros({2, 4, 3, 3}), {}, {1}, {-1}); }, {"conv2d", "padding", "-1"});
  expect_error([&] { conv2d(x, zeros({2, 4, 3, 3}), {}, {0, 1}); }, {"conv2d", "stride", ">= 1"});
  expect_error([&] { conv2d(x, zeros({2, 4, 3, 3}), {}, {1}, {0}, {0}); }, {"conv2d", "dilation", ">= 1"});
  expect_error([&] { conv2d(x, zeros({2, 4, 7, 3})); }, {"conv2d", "kernel", "larger than the padded input"});
  expect_error([&] { conv2d(x, zeros({2, 4, 3, 3}), {}, {1}, {0}, {4}); }, {"conv2d", "dilated extent 9"});
  expect_error([&] { conv2d(x, zeros({2, 4, 3, 3}), zeros({3})); }, {"conv2d", "bias", "[O] = [2]"});
  expect_error([&] { conv2d(x, zeros({2, 4, 3, 3}), {}, {1, 1, 1}); }, {"conv2d", "stride", "2 (height, width)"});
}

// ---- pooling -------------------------------------------------------------------------------

struct PoolCase {
  Shape x;
  Ints kernel, stride, padding, dilation;
  bool ceil_mode;
  bool all_dtypes = false;  // f32 only, unless set (each case costs two JIT compiles)
};

std::string pool_what(DType dt, const PoolCase& c) {
  return dt_str(dt) + " x" + c.x.str() + " k" + Shape(c.kernel).str() + " s" + Shape(c.stride).str() + " p" +
         Shape(c.padding).str() + " d" + Shape(c.dilation).str() + (c.ceil_mode ? " ceil" : "");
}

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases = {
      {Shape{1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, false},
      {Shape{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {Shape{1, 4, 9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true},  // resnet's stem pool
      {Shape{2, 2, 7, 10}, {3, 2}, {1, 2}, {1, 0}, {2, 1}, false},        // dilated (max only)
      {Shape{1, 3, 10, 7}, {3, 3}, {2, 2}, {1, 0}, {1, 1}, true, true},   // ceil_mode
      {Shape{3, 2, 1, 5}, {1, 3}, {1, 1}, {0, 1}, {1, 1}, false}};      // H = 1
  return cases;
}

TEST(Pool, MaxMatchesReference) {
  uint64_t seed = 300;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I32}) {
    for (const PoolCase& c : pool_cases()) {
      if (dt != DType::F32 && !c.all_dtypes) continue;
      Tensor x = random_with_edges(c.x, dt, ++seed, -10, 10);
      Attrs attrs{{"kernel", c.kernel}, {"stride", c.stride}, {"padding", c.padding},
                  {"dilation", c.dilation}, {"ceil_mode", c.ceil_mode}};
      expect_matches_reference(
          "max_pool2d",
          [&](const std::vector<Tensor>& in) {
            return max_pool2d(in[0], c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
          },
          {x}, attrs, pool_what(dt, c));
    }
  }
}

TEST(Pool, AvgMatchesReference) {
  uint64_t seed = 400;
  for (DType dt : {DType::F32, DType::F64, DType::F16}) {
    for (const PoolCase& c : pool_cases()) {
      if (c.dilation != Ints{1, 1}) continue;
      if (dt != DType::F32 && !c.all_dtypes) continue;
      for (bool include_pad : {true, false}) {
        if (!include_pad && c.padding == Ints{0, 0} && !c.ceil_mode) continue;  // same divisor
        Tensor x = random_with_edges(c.x, dt, ++seed, -10, 10);
        Attrs attrs{{"kernel", c.kernel}, {"stride", c.stride}, {"padding", c.padding},
                    {"ceil_mode", c.ceil_mode}, {"count_include_pad", include_pad}};
        expect_matches_reference(
            "avg_pool2d",
            [&](const std::vector<Tensor>& in) {
              return avg_pool2d(in[0], c.kernel, c.stride, c.padding, c.ceil_mode, include_pad);
            },
            {x}, attrs, pool_what(dt, c) + (include_pad ? "" : " exclude_pad"), kF32ReductionTolerance);
      }
    }
  }
}

TEST(Pool, HandComputedValues) {
  // 1x1x4x4 = 0..15; 2x2 pools.
  Tensor x = reshape(arange(16), {1, 1, 4, 4});
  EXPECT_EQ(max_pool2d(x, {2}).to_doubles(), (std::vector<double>{5, 7, 13, 15}));
  EXPECT_EQ(avg_pool2d(x, {2}).to_doubles(), (std::vector<double>{2.5, 4.5, 10.5, 12.5}));
  // Padding 1, stride 2, kernel 2: windows [-1, 0] x [-1, 0] first. count_include_pad divides
  // the corner (a single 0) by 4, the exclusive form by 1.
  EXPECT_EQ(avg_pool2d(x, {2}, {2}, {1}).to_doubles()[0], 0.0);
  EXPECT_EQ(avg_pool2d(x, {2}, {2}, {1}, false, true).to_doubles()[1], (1.0 + 2.0) / 4);
  EXPECT_EQ(avg_pool2d(x, {2}, {2}, {1}, false, false).to_doubles()[1], (1.0 + 2.0) / 2);
  EXPECT_EQ(max_pool2d(x, {3}, {1}, {1}).shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(max_pool2d(x, {2}, {}, {0}, {1}, true).shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(max_pool2d(zeros({1, 1, 5, 5}), {2}, {}, {0}, {1}, true).shape(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(global_avg_pool2d(x).to_doubles(), (std::vector<double>{7.5}));
  EXPECT_EQ(global_avg_pool2d(x).shape(), (Shape{1, 1, 1, 1}));
}

TEST(Pool, MaxPropagatesNaNAndHandlesInfinities) {
  // Row-major 1x1x2x6; 2x2 windows: {NaN, 1, 2, 3}, {-inf, -inf, -inf, -inf}, {inf, 0, NaN, 5}.
  const double nan = NAN, inf = INFINITY;
  Tensor x = from_vector(std::vector<double>{nan, 1, -inf, -inf, inf, 0, 2, 3, -inf, -inf, nan, 5}, {1, 1, 2, 6});
  for (DType dt : {DType::F32, DType::F16}) {
    Tensor xt = cast(x, dt);
    auto fn = [](const Tensor& t) { return max_pool2d(t, {2}); };
    for (const Tensor& y : {fn(xt), compile(fn)(xt)}) {
      std::vector<double> v = y.to_doubles();
      ASSERT_EQ(v.size(), 3u);
      EXPECT_TRUE(std::isnan(v[0])) << v[0];
      EXPECT_EQ(v[1], -inf);
      EXPECT_TRUE(std::isnan(v[2])) << v[2];
    }
    Attrs attrs{{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"padding", Ints{0, 0}},
                {"dilation", Ints{1, 1}}, {"ceil_mode", false}};
    expect_matches_reference("max_pool2d", [](const std::vector<Tensor>& in) { return max_pool2d(in[0], {2}); },
                             {xt}, attrs, "NaN/inf " + dt_str(dt));
  }
  // Padding is never the maximum, even of an all -inf window.
  Tensor neg = full({1, 1, 3, 3}, -INFINITY);
  for (double v : max_pool2d(neg, {3}, {1}, {1}).to_doubles()) EXPECT_EQ(v, -inf);
  // Avg pooling propagates NaN and inf arithmetically.
  std::vector<double> a = avg_pool2d(x, {2}).to_doubles();
  EXPECT_TRUE(std::isnan(a[0]));
  EXPECT_EQ(a[1], -inf);
}

TEST(Pool, AdaptiveAvgMatchesReference) {
  const std::vector<std::pair<Shape, Ints>> cases = {
      {Shape{2, 3, 5, 7}, {3, 2}}, {Shape{1, 2, 4, 4}, {4, 4}}, {Shape{2, 4, 7, 7}, {1, 1}},
      {Shape{1, 3, 3, 3}, {5, 4}},  // more cells than inputs: bins overlap
      {Shape{1, 1, 1, 6}, {1, 4}}};
  uint64_t seed = 500;
  for (DType dt : {DType::F32, DType::F64, DType::F16}) {
    for (const auto& [shape, os] : cases) {
      if (dt != DType::F32 && shape.numel() < 50) continue;
      Tensor x = random_with_edges(shape, dt, ++seed, -3, 3);
      expect_matches_reference(
          "adaptive_avg_pool2d", [&](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], os); }, {x},
          {{"output_size", os}}, dt_str(dt) + shape.str() + " -> " + Shape(os).str(), kF32ReductionTolerance);
    }
  }
  // PyTorch's bins for 5 -> 3: [0, 2), [1, 4), [3, 5).
  Tensor x = reshape(arange(5), {1, 1, 1, 5});
  EXPECT_EQ(adaptive_avg_pool2d(x, {1, 3}).to_doubles(), (std::vector<double>{0.5, 2.0, 3.5}));
  Tensor g = rand({2, 3, 5, 6}, 9);
  EXPECT_TRUE(allclose(adaptive_avg_pool2d(g, {1}), global_avg_pool2d(g), 1e-6, 1e-6));
}

TEST(Pool, Errors) {
  Tensor x = zeros({1, 2, 5, 5});
  expect_error([&] { max_pool2d(x, {6}); }, {"max_pool2d", "kernel", "larger than the padded input"});
  expect_error([&] { max_pool2d(x, {3}, {1}, {2}); }, {"max_pool2d", "padding [2, 2]", "half of kernel_size"});
  expect_error([&] { avg_pool2d(x, {2, 3}, {1}, {1, 2}); }, {"avg_pool2d", "padding [1, 2]", "half of kernel_size"});
  expect_error([&] { max_pool2d(x, {0}); }, {"max_pool2d", "kernel_size", ">= 1"});
  expect_error([&] { avg_pool2d(x, {2}, {0}); }, {"avg_pool2d", "stride", ">= 1"});
  expect_error([&] { max_pool2d(x, {2}, {1}, {-1}); }, {"max_pool2d", "padding", ">= 0"});
  expect_error([&] { max_pool2d(zeros({2, 5, 5}), {2}); }, {"max_pool2d", "4-D"});
  expect_error([&] { adaptive_avg_pool2d(x, {0, 2}); }, {"adaptive_avg_pool2d", "output_size", ">= 1"});
  expect_error([&] { global_avg_pool2d(zeros({2, 5})); }, {"global_avg_pool2d", "4-D"});
}

// ---- batch_norm ----------------------------------------------------------------------------

// Per-channel (x - mean) / sqrt(var + eps) * w + b in double, x [N, C, L...] flattened.
std::vector<double> bn_expected(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& var,
                                const std::vector<double>& w, const std::vector<double>& b, double eps) {
  std::vector<double> v = x.to_doubles(), out(v.size());
  const int64_t c = x.sizes()[1], inner = x.numel() / (x.sizes()[0] * c);
  for (size_t i = 0; i < v.size(); ++i) {
    size_t ch = size_t((int64_t(i) / inner) % c);
    out[i] = (v[i] - mean[ch]) / std::sqrt(var[ch] + eps) * w[ch] + b[ch];
  }
  return out;
}

TEST(BatchNorm, InferenceMatchesHandComputed) {
  for (const Shape& shape : {Shape{2, 3, 5, 4}, Shape{4, 3}, Shape{1, 3, 1, 7}}) {
    for (DType dt : {DType::F32, DType::F64}) {
      if (dt == DType::F64 && shape.rank() != 4) continue;
      Tensor x = rand(shape, 1, -2, 2, dt), rm = rand({3}, 2, -1, 1, dt), rv = rand({3}, 3, 0.5, 2, dt);
      Tensor w = rand({3}, 4, 0.5, 1.5, dt), b = rand({3}, 5, -1, 1, dt);
      auto fn = [&](const Tensor& t) { return batch_norm(t, rm, rv, w, b, 1e-3); };
      Tensor expected = from_vector(bn_expected(x, rm.to_doubles(), rv.to_doubles(), w.to_doubles(), b.to_doubles(), 1e-3),
                                    shape, dt);
      Tensor eager = fn(x), compiled = compile(fn)(x);
      Tolerance tol = tolerance_for(dt);
      EXPECT_EQ(eager.meta(), x.meta());
      EXPECT_TRUE(allclose(eager, expected, tol.rtol * 4, tol.atol * 4)) << shape.str() << max_abs_diff(eager, expected);
      EXPECT_TRUE(allclose(compiled, expected, tol.rtol * 4, tol.atol * 4)) << shape.str() << max_abs_diff(compiled, expected);
    }
  }
  // No affine: weight 1, bias 0.
  Tensor x = rand({2, 2, 3, 3}, 7), rm = rand({2}, 8), rv = rand({2}, 9, 0.5, 1.0);
  Tensor expected = from_vector(bn_expected(x, rm.to_doubles(), rv.to_doubles(), {1, 1}, {0, 0}, 1e-5), x.shape());
  EXPECT_TRUE(allclose(batch_norm(x, rm, rv), expected, 1e-5, 1e-6));
  // f16 input with f32 stats stays f16.
  EXPECT_EQ(batch_norm(cast(x, DType::F16), rm, rv).dtype(), DType::F16);
}

TEST(BatchNorm, TrainingUsesBatchStatsAndUpdatesRunningStats) {
  const Shape shape{4, 3, 5, 2};
  Tensor x = rand(shape, 11, -3, 3), rm = rand({3}, 12), rv = rand({3}, 13, 0.5, 1.5);
  Tensor w = rand({3}, 14, 0.5, 1.5), b = rand({3}, 15);
  const double momentum = 0.2, eps = 1e-4;
  // Batch statistics per channel, in double.
  std::vector<double> v = x.to_doubles(), mean(3, 0), var(3, 0);
  const int64_t per = 4 * 5 * 2, inner = 10;
  for (size_t i = 0; i < v.size(); ++i) mean[size_t((int64_t(i) / inner) % 3)] += v[i] / double(per);
  for (size_t i = 0; i < v.size(); ++i) {
    size_t ch = size_t((int64_t(i) / inner) % 3);
    var[ch] += (v[i] - mean[ch]) * (v[i] - mean[ch]) / double(per);
  }
  Tensor expected = from_vector(bn_expected(x, mean, var, w.to_doubles(), b.to_doubles(), eps), shape);
  std::vector<double> rm0 = rm.to_doubles(), rv0 = rv.to_doubles(), new_rm(3), new_rv(3);
  for (size_t c = 0; c < 3; ++c) {
    new_rm[c] = (1 - momentum) * rm0[c] + momentum * mean[c];
    new_rv[c] = (1 - momentum) * rv0[c] + momentum * var[c] * double(per) / double(per - 1);
  }
  auto fn = [&](const std::vector<Tensor>& in) {
    BatchNormResult r = batch_norm_train(in[0], in[1], in[2], w, b, momentum, eps);
    return std::vector<Tensor>{r.out, r.running_mean, r.running_var};
  };
  std::vector<Tensor> eager = fn({x, rm, rv}), compiled = compile(fn)({x, rm, rv});
  for (const std::vector<Tensor>& got : {eager, compiled}) {
    ASSERT_EQ(got.size(), 3u);
    EXPECT_TRUE(allclose(got[0], expected, 1e-4, 1e-5)) << max_abs_diff(got[0], expected);
    EXPECT_TRUE(allclose(got[1], from_vector(new_rm, {3}), 1e-5, 1e-6)) << got[1].str();
    EXPECT_TRUE(allclose(got[2], from_vector(new_rv, {3}), 1e-5, 1e-6)) << got[2].str();
  }
  // The normalized output has zero mean and unit (biased) variance per channel.
  BatchNormResult plain = batch_norm_train(x, {}, {});
  EXPECT_FALSE(plain.running_mean.defined());
  EXPECT_TRUE(allclose(kiln::mean(plain.out, {0, 2, 3}), zeros({3}), 0, 1e-5));
  EXPECT_TRUE(allclose(kiln::var(plain.out, {0, 2, 3}, 0), ones({3}), 1e-3, 1e-3));
}

TEST(BatchNorm, Errors) {
  Tensor x = zeros({2, 3, 4, 4}), s = ones({3});
  expect_error([&] { batch_norm(x, ones({4}), s); }, {"batch_norm", "running_mean", "[C] = [3]"});
  expect_error([&] { batch_norm(x, s, s, ones({2})); }, {"batch_norm", "weight", "[C] = [3]"});
  expect_error([&] { batch_norm(x, s, s, s, ones({3, 1})); }, {"batch_norm", "bias"});
  expect_error([&] { batch_norm(zeros({3}), s, s); }, {"batch_norm", "[N, C, ...]"});
  expect_error([&] { batch_norm(x, {}, s); }, {"batch_norm", "running_mean"});
  expect_error([&] { batch_norm_train(zeros({1, 3, 1, 1}), s, s); }, {"batch_norm_train", "more than 1 value"});
  expect_error([&] { batch_norm_train(x, s, {}); }, {"batch_norm_train", "both"});
}

}  // namespace

namespace kiln {
namespace {

TEST(Pooling, CeilModeTakesOnePartialWindowLargerThanTheInput) {
  // PyTorch: avg_pool2d(k=3, s=2, ceil_mode=True) of a 2x2 input is one window, averaged
  // over the 4 elements inside it.
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4}, Shape({1, 1, 2, 2}));
  for (bool compiled : {false, true}) {
    auto avg = [](const Tensor& t) { return avg_pool2d(t, {3}, {2}, {0}, true); };
    auto mx = [](const Tensor& t) { return max_pool2d(t, {3}, {2}, {0}, {1}, true); };
    Tensor a = compiled ? compile(avg)(x) : avg(x), m = compiled ? compile(mx)(x) : mx(x);
    EXPECT_EQ(a.sizes(), std::vector<int64_t>({1, 1, 1, 1}));
    EXPECT_EQ(a.item(), 2.5);
    EXPECT_EQ(m.item(), 4.0);
  }
  EXPECT_THROW(avg_pool2d(x, {3}, {2}, {0}, false), Error);
}

TEST(Pooling, SliceGradientWithAStepPastTheEnd) {
  Tensor v = rand(Shape({10}), 2);
  Tensor g = grad([](const Tensor& t) { return sum(slice(t, 0, 2, 10, int64_t(1) << 40)); })({v})[0];
  EXPECT_EQ(g.to_doubles(), std::vector<double>({0, 0, 1, 0, 0, 0, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace kiln
