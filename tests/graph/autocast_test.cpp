// CompileOptions::autocast (graph/passes/autocast.h): the types a traced graph's ops get,
// the values against f32 within the low type's precision, and gradients and an AdamW step
// that keep f32 master weights.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kiln.h"

using namespace kiln;

namespace {

std::vector<Tensor> block(const std::vector<Tensor>& in) {
  // x [8, 16], w1 [16, 32], b1 [32], w2 [32, 4], gain [32]
  Tensor h = gelu(matmul(in[0], in[1]) + in[2]);
  Tensor n = layer_norm(h, {32}, in[4], Tensor());
  return {softmax(matmul(n, in[3]), -1), sum(h, {1})};
}

std::vector<Tensor> inputs() {
  return {rand({8, 16}, 1, -1, 1), rand({16, 32}, 2, -0.25, 0.25), rand({32}, 3, -1, 1), rand({32, 4}, 4, -0.2, 0.2),
          rand({32}, 5, 0.5, 1.5)};
}

// The output type of the first node of each op in `g`.
std::map<std::string, DType> types_by_op(const Graph& g) {
  std::map<std::string, DType> t;
  for (const Node& n : g.nodes()) {
    if (!n.is_placeholder() && !n.is_constant()) t.emplace(n.op, n.meta.dtype);
  }
  return t;
}

TEST(Autocast, ContractionsRunLowReductionsAndNormsF32OutputsKeepTheirTypes) {
  for (const char* low : {"bf16", "f16"}) {
    SCOPED_TRACE(low);
    CompileOptions o;
    o.autocast = low;
    const Graph g = trace(block, inputs(), o);
    const std::map<std::string, DType> t = types_by_op(g);
    const DType want = dtype_from_name(low);
    EXPECT_EQ(t.at("matmul"), want) << g.str();
    EXPECT_EQ(t.at("softmax"), DType::F32) << g.str();
    EXPECT_EQ(t.at("layer_norm"), DType::F32) << g.str();
    EXPECT_EQ(t.at("sum"), DType::F32) << g.str();
    for (const Node& n : g.nodes()) {
      if (n.op != "matmul") continue;
      for (int i : n.inputs) EXPECT_EQ(g.node(i).meta.dtype, want) << g.str();  // both operands cast
    }
    for (const TensorMeta& m : g.output_metas()) EXPECT_EQ(m.dtype, DType::F32);
    for (const TensorMeta& m : g.input_metas()) EXPECT_EQ(m.dtype, DType::F32);
  }
  // Off by default: the graph is f32 throughout.
  for (const auto& [op, type] : types_by_op(trace(block, inputs()))) EXPECT_EQ(type, DType::F32) << op;
}

TEST(Autocast, ValuesMatchF32WithinTheLowTypesPrecision) {
  const std::vector<Tensor> x = inputs();
  const std::vector<Tensor> want = compile(block)(x);
  for (const auto& [low, tol] : {std::pair{"bf16", 3e-2}, {"f16", 4e-3}}) {
    SCOPED_TRACE(low);
    CompileOptions o;
    o.autocast = low;
    const std::vector<Tensor> got = compile(block, o)(x);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].dtype(), DType::F32);
      EXPECT_TRUE(allclose(got[i], want[i], tol, tol)) << i << ": " << max_abs_diff(got[i], want[i]);
    }
  }
}

TEST(Autocast, GradientsAndAdamWKeepF32MasterWeights) {
  auto loss = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mse_loss(matmul(in[0], in[1]), in[2])}; };
  Tensor x = rand({32, 16}, 11, -1, 1), w = rand({16, 8}, 12, -0.3, 0.3), y = rand({32, 8}, 13, -1, 1);
  CompileOptions o;
  o.autocast = "bf16";
  const std::vector<Tensor> g = compile(grad_fn(loss, {1}), o)({x, w, y});
  const std::vector<Tensor> g32 = compile(grad_fn(loss, {1}))({x, w, y});
  EXPECT_EQ(g[0].dtype(), DType::F32);
  EXPECT_TRUE(allclose(g[0], g32[0], 3e-2, 3e-3)) << max_abs_diff(g[0], g32[0]);

  auto fit = [](const Tensor& w, const Tensor& x, const Tensor& y) { return mse_loss(matmul(x, w), y); };
  optim::AdamW opt(fit, {w}, {.lr = 1e-2, .weight_decay = 0}, /*compiled=*/true, o);
  const double first = opt.step({x, y}).item();
  double last = first;
  for (int i = 0; i < 20; ++i) last = opt.step({x, y}).item();
  EXPECT_EQ(opt.params()[0].dtype(), DType::F32);
  EXPECT_LT(last, 0.9 * first);
}

TEST(Autocast, TakesBf16F16OrNothing) {
  CompileOptions o;
  o.autocast = "fp8";
  try {
    trace(block, inputs(), o);
    FAIL() << "expected a kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("autocast must be \"bf16\", \"f16\" or \"\" (off), not 'fp8'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
