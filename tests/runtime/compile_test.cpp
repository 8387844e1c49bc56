#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "models/seed.h"
#include "core/log_capture.h"
#include "kiln.h"

using namespace kiln;

namespace {

// The seed's expression, shared with the apps.
Tensor seed_expression(const Tensor& x) { return models::compute_expression(x); }

using kiln::testing::logged;

TEST(Compile, CompiledEqualsEagerEqualsReference) {
  auto f = compile(seed_expression);
  for (int64_t n : {1, 5, 1000, 4097}) {
    Tensor x = rand({n}, uint64_t(n), -3, 3);
    Tensor c = f(x), e = seed_expression(x);
    CompileOptions o;
    Graph g = trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{seed_expression(in[0])}; }, {x});
    Tensor r = interpret(g, {x}, InterpretMode::Reference)[0];
    EXPECT_TRUE(allclose(c, e, 1e-5, 1e-6)) << n;
    EXPECT_TRUE(allclose(c, r, 1e-4, 1e-4)) << n;
  }
}

TEST(Compile, GuardsReuseAndRecompileWithAReason) {
  auto f = compile(seed_expression);
  f(rand({8}));
  f(rand({8}, 2));
  EXPECT_EQ(f.num_compilations(), 1);
  std::string log = logged("recompiles", [&] { f(rand({9})); });
  EXPECT_EQ(f.num_compilations(), 2);
  EXPECT_NE(log.find("input 0 dim 0 changed from 8 to 9"), std::string::npos) << log;
  log = logged("recompiles", [&] { f(rand({9}, 0, 0, 1, DType::F64)); });
  EXPECT_NE(log.find("dtype changed from f32 to f64"), std::string::npos) << log;
  log = logged("recompiles", [&] { f(rand({3, 3}, 0, 0, 1, DType::F64)); });
  EXPECT_NE(log.find("rank changed from 1 to 2"), std::string::npos) << log;
  EXPECT_EQ(f.num_compilations(), 4);
  f(rand({8}));  // the first entry still serves
  EXPECT_EQ(f.num_compilations(), 4);
}

TEST(Compile, DynamicDimsServeEverySize) {
  CompileOptions o;
  o.dynamic = true;
  auto f = compile([](const Tensor& a, const Tensor& b) { return sum(a * b, {1}) + 1.0; }, o);
  for (int64_t rows : {3, 10, 33}) {
    Tensor a = rand({rows, 20}, 1), b = rand({rows, 20}, 2);
    Tensor c = f(a, b);
    Tensor e = sum(a * b, {1}) + 1.0;
    EXPECT_EQ(c.shape(), (Shape{rows}));
    EXPECT_TRUE(allclose(c, e, 1e-5, 1e-5));
  }
  EXPECT_EQ(f.num_compilations(), 1);
  EXPECT_EQ(f.graph().input_metas()[0].str(), "f32[s0, s1]");
  // Two dims that shared a symbol (both 20) now differ: recompile, never a wrong answer.
  Tensor a = rand({4, 20}), b = rand({4, 21});
  EXPECT_THROW(f(a, b), Error);  // and the broadcast error names the op
}

// The affine terms of the norms take the shape of x's trailing dims, symbols included:
// with every dim dynamic, a weight's [s1] is x's last dim.
TEST(Compile, NormsWithAffineTermsServeEverySize) {
  CompileOptions o;
  o.dynamic = true;
  auto norms = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return layer_norm(x, {24}, w, b) + rms_norm(x, {24}, w);
  };
  auto f = compile(norms, o);
  const Tensor w = rand({24}, 2, 0.5, 1.5), b = rand({24}, 3);
  for (int64_t rows : {3, 17}) {
    const Tensor x = randn({rows, 24}, 1);
    EXPECT_TRUE(allclose(f(x, w, b), norms(x, w, b), 1e-5, 1e-5));
  }
  EXPECT_EQ(f.num_compilations(), 1);
  EXPECT_THROW(layer_norm(randn({3, 24}), {24}, rand({23})), Error);  // still checked
}

TEST(Compile, SomeDimsDynamic) {
  CompileOptions o;
  o.dynamic_dims = {{0, 0}};
  auto f = compile([](const Tensor& x) { return mean(x, {1}); }, o);
  f(rand({5, 7}));
  f(rand({6, 7}));
  EXPECT_EQ(f.num_compilations(), 1);
  f(rand({6, 8}));
  EXPECT_EQ(f.num_compilations(), 2);
  o.dynamic_dims = {{0, 5}};
  auto bad = compile([](const Tensor& x) { return x; }, o);
  EXPECT_THROW(bad(rand({2})), Error);
}

TEST(Compile, CustomBackendSeesTheGraph) {
  std::string seen;
  std::vector<int64_t> example_sizes;
  CompileOptions o;
  o.input_names = {"x"};
  o.backend = [&](Graph& g, const std::vector<Tensor>& examples) -> CompiledGraphFn {
    seen = g.str();
    example_sizes = examples[0].sizes();
    Graph copy = g;
    return [copy](const std::vector<Tensor>& in) { return interpret(copy, in, InterpretMode::Reference); };
  };
  auto f = compile(seed_expression, o);
  Tensor x = rand({5}, 3, -3, 3);
  Tensor y = f(x);
  EXPECT_NE(seen.find("%sin : f32[5] = sin(%x)"), std::string::npos) << seen;
  EXPECT_EQ(example_sizes, (std::vector<int64_t>{5}));
  EXPECT_TRUE(allclose(y, seed_expression(x), 1e-4, 1e-4));
}

TEST(Compile, DebugBackendPrintsAndWritesDot) {
  CompileOptions o;
  std::string path = ::testing::TempDir() + "kiln_debug_backend.dot";
  o.backend = debug_backend(path);
  auto f = compile(seed_expression, o);
  ::testing::internal::CaptureStdout();
  f(rand({5}));
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("Captured graph:"), std::string::npos);
  std::ifstream dot(path);
  std::stringstream ss;
  ss << dot.rdbuf();
  EXPECT_NE(ss.str().find("digraph"), std::string::npos);
}

TEST(Compile, MultipleOutputsConstantsAndPassThrough) {
  Tensor w = from_vector(std::vector<float>{1, 2, 3}, {3});
  auto f = compile([&](const Tensor& x) {
    return std::vector<Tensor>{x * w, x, max(x), x * w};
  });
  Tensor x = rand({3});
  std::vector<Tensor> out = f(x);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_TRUE(allclose(out[0], x * w));
  EXPECT_TRUE(allclose(out[1], x, 0, 0));
  EXPECT_TRUE(allclose(out[2], max(x), 0, 0));
  EXPECT_TRUE(allclose(out[3], out[0], 0, 0));
}

TEST(Compile, LogsGraphAndCode) {
  auto f = compile(seed_expression);
  std::string log = logged("graph,code", [&] { f(rand({1 << 16})); });
  EXPECT_NE(log.find("[kiln:graph]"), std::string::npos);
  EXPECT_NE(log.find("%add : f32[65536] = add(%exp, %log)"), std::string::npos) << log;
  EXPECT_NE(log.find("[kiln:code]"), std::string::npos);
  EXPECT_NE(log.find("parallel"), std::string::npos) << "default CPU schedule is parallel";
}

TEST(Compile, ErrorsAreKilnErrorsAndTheProcessKeepsWorking) {
  auto f = compile([](const Tensor& a, const Tensor& b) { return a + b; });
  EXPECT_THROW(f(rand({3}), rand({4})), Error);  // broadcast error while tracing
  EXPECT_THROW(f(Tensor(), rand({4})), Error);
  Tensor ok = f(rand({3}), rand({3}));
  EXPECT_EQ(ok.numel(), 3);
  CompileOptions bad_target;
  bad_target.target = "not-a-target";
  EXPECT_THROW(compile(seed_expression, bad_target), Error);
  // Reading data of a traced tensor inside the function is a clear error.
  auto g = compile([](const Tensor& x) {
    x.to_doubles();
    return x;
  });
  try {
    g(rand({2}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("traced tensor"), std::string::npos);
  }
}

TEST(Compile, HalideRuntimeErrorsBecomeKilnErrors) {
  // A kernel run with a mismatched input is stopped by kiln's input check.
  Graph g = trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0}; }, {rand({4})});
  auto run = halide_backend("host")(g, {rand({4})});
  EXPECT_THROW(run({rand({5})}), Error);
  EXPECT_THROW(run({rand({4}, 0, 0, 1, DType::F64)}), Error);
  EXPECT_EQ(run({rand({4})})[0].numel(), 4);
}

}  // namespace

namespace {

// A user-defined op whose algorithm reads past the end of its input: Halide's run-time
// bounds check must reach the caller as kiln::Error, and the process must keep working.
TEST(Compile, HalideErrorsInsideUserOpsReachTheCaller) {
  if (!has_op("test_shift_read")) {
    OpDef d;
    d.name = "test_shift_read";
    d.infer = [](const std::vector<TensorMeta>& in, const Attrs&) { return in[0]; };
    d.algorithm = [](const std::vector<Halide::Func>& in, const OpCall& c) {
      auto v = algo::vars(c.output.shape.rank());
      Halide::Func f("shift");
      f(v) = in[0](v[0] + 1000);  // out of bounds for any small input
      return f;
    };
    d.reference = [](const std::vector<Tensor>& in, const Attrs&, const TensorMeta&) { return in[0]; };
    register_op(d);
  }
  try {
    apply_op("test_shift_read", {rand({4})});
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("accessed at"), std::string::npos) << m;  // Halide's own message
  }
  auto f = compile([](const Tensor& x) { return apply_op("test_shift_read", {x}) * 2.0; });
  EXPECT_THROW(f(rand({4})), Error);
  EXPECT_EQ((rand({4}) + 1.0).numel(), 4);  // still working
  EXPECT_THROW(register_op(get_op("sin")), Error);  // duplicate names are refused
}

}  // namespace
