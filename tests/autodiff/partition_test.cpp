// The save-or-recompute partition of joint forward+backward graphs.
#include <algorithm>

#include "autodiff/partition.h"
#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

bool has(const std::vector<std::string>& names, const std::string& prefix) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

// A pointwise chain is cheaper to recompute than to save: the forward saves only its input.
TEST(Partition, PointwiseChainsAreRecomputed) {
  TensorFn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(exp(sin(cos(in[0]))))}; };
  Tensor x = rand({256}, 1);
  Graph joint = joint_graph(fn, {x}, {0});
  Partition p = min_cut_partition(joint, 1, 1);
  EXPECT_EQ(p.saved_bytes, 256 * 4) << p.str();
  EXPECT_TRUE(has(p.recomputed, "cos")) << p.str();
  EXPECT_TRUE(has(p.recomputed, "sin")) << p.str();
  EXPECT_EQ(p.forward.outputs().size(), 2u) << "the loss and one saved value";
}

// Contractions and reductions are never recomputed in the backward.
TEST(Partition, ContractionsAndReductionsAreSaved) {
  TensorFn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(softmax(tanh(matmul(in[0], in[1])), 1))};
  };
  Tensor x = rand({8, 16}, 1), w = rand({16, 4}, 2);
  Partition p = min_cut_partition(joint_graph(fn, {x, w}, {0, 1}), 2, 1);
  EXPECT_FALSE(has(p.recomputed, "matmul")) << p.str();
  EXPECT_FALSE(has(p.recomputed, "softmax")) << p.str();
  // The backward holds the two gradient matmuls and no forward one.
  int matmuls = 0;
  for (const Node& n : p.backward.nodes()) matmuls += n.op == "matmul";
  EXPECT_EQ(matmuls, 2) << p.backward.str();
}

// The compiled forward and backward of a partitioned function give eager's gradients,
// here with two outputs.
TEST(Partition, CompiledTwoOutputFunctionMatchesEager) {
  auto f = [](const Tensor& x, const Tensor& w) {
    Tensor h = tanh(matmul(x, w));
    return std::vector<Tensor>{sum(h * h), mean(exp(h))};
  };
  Tensor x = rand({6, 5}, 3, -1, 1), w = rand({5, 3}, 4, -1, 1).requires_grad();
  std::vector<Tensor> eager = f(x, w);
  (eager[0] + 2.0 * eager[1]).backward();
  Tensor want = w.grad().clone();
  w.zero_grad();
  auto compiled = compile(f);
  std::vector<Tensor> out = compiled(x, w);
  (out[0] + 2.0 * out[1]).backward();
  EXPECT_TRUE(allclose(w.grad(), want, 1e-5, 1e-6)) << w.grad().str() << want.str();
  EXPECT_TRUE(allclose(out[1], eager[1], 1e-6, 1e-6));
}

}  // namespace
