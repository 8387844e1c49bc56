// Every registered model: compiled == eager == f64 reference interpreter.
#include <gtest/gtest.h>

#include "kiln.h"
#include "lower/kernel.h"
#include "lower/target.h"
#include "models/models.h"

using namespace kiln;

namespace {

void expect_model_matches(const models::Model& m) {
  SCOPED_TRACE(m.name);
  Tensor eager = m.forward(m.inputs)[0];
  Tensor compiled = compile(m.forward)(m.inputs)[0];
  Graph g = trace(m.forward, m.inputs);
  Tensor ref = interpret(g, m.inputs, InterpretMode::Reference)[0];
  ASSERT_EQ(compiled.meta(), eager.meta());
  EXPECT_TRUE(allclose(compiled, eager, 1e-4, 1e-5)) << max_abs_diff(compiled, eager);
  EXPECT_TRUE(allclose(compiled, ref, 1e-4, 1e-5)) << max_abs_diff(compiled, ref);
  EXPECT_TRUE(allclose(eager, ref, 1e-4, 1e-5)) << max_abs_diff(eager, ref);
}

TEST(Models, Seed) { expect_model_matches(models::make_seed(1000)); }
TEST(Models, Mlp) { expect_model_matches(models::make_mlp({8, 32, 48, 5})); }
TEST(Models, GptBlock) { expect_model_matches(models::make_gpt_block({2, 16, 32, 4})); }
TEST(Models, ResNet18) { expect_model_matches(models::make_resnet18({2, 16, 3, 8, 5})); }

// Every model's CUDA code generates without a GPU (CI has none): lowering, the default GPU
// schedule and PTX generation. (ResNet's block inputs feed two convolutions each.)
TEST(Models, EveryModelGeneratesCudaCode) {
  Halide::Target cuda = parse_target("host-cuda");
  for (const models::Model& m : {models::make_seed(1000), models::make_mlp({8, 32, 48, 5}),
                               models::make_gpt_block({2, 16, 32, 4}), models::make_resnet18({2, 16, 3, 8, 5})}) {
    SCOPED_TRACE(m.name);
    Graph g = trace(m.forward, m.inputs);
    EXPECT_NO_THROW({
      LoweredGraph lowered = lower_and_schedule(g, cuda);
      lowered.pipeline().compile_to_module(lowered.arguments(), m.name, cuda);
    });
  }
}

TEST(Models, GptBlockIsCausal) {
  // Changing the last token must not change the outputs of earlier tokens.
  models::Model m = models::make_gpt_block({1, 8, 16, 2});
  Tensor x = m.inputs[0];
  std::vector<double> v = x.to_doubles();
  for (int j = 0; j < 16; ++j) v[size_t(7 * 16 + j)] += 1.0;
  Tensor x2 = from_vector(v, x.shape());
  std::vector<double> a = m.forward({x})[0].to_doubles(), b = m.forward({x2})[0].to_doubles();
  for (size_t i = 0; i < size_t(7 * 16); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
  double last_change = 0;
  for (size_t i = size_t(7 * 16); i < a.size(); ++i) last_change = std::max(last_change, std::abs(a[i] - b[i]));
  EXPECT_GT(last_change, 1e-3);
}

TEST(Models, UnknownNameListsTheModels) {
  try {
    models::make_model("resnet");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpt_block"), std::string::npos);
  }
}

}  // namespace
