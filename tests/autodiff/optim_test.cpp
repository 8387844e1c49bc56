#include <cmath>

#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

TEST(Optim, SgdWithMomentumAndWeightDecayMatchesTheFormula) {
  Tensor p = rand({4}, 1), g = rand({4}, 2), v = rand({4}, 3);
  optim::SgdOptions o{0.1, 0.9, 0.01};
  auto [p2, v2] = optim::sgd_update(p, g, v, o);
  std::vector<double> pv = p.to_doubles(), gv = g.to_doubles(), vv = v.to_doubles();
  for (size_t i = 0; i < pv.size(); ++i) {
    double vel = 0.9 * vv[i] + gv[i] + 0.01 * pv[i];
    EXPECT_NEAR(v2.to_doubles()[i], vel, 1e-6);
    EXPECT_NEAR(p2.to_doubles()[i], pv[i] - 0.1 * vel, 1e-6);
  }
}

TEST(Optim, AdamWMatchesTheFormulaAtStepThree) {
  Tensor p = rand({5}, 1, -1, 1, DType::F64), g = rand({5}, 2, -1, 1, DType::F64);
  Tensor m = rand({5}, 3, -0.1, 0.1, DType::F64), v = rand({5}, 4, 0, 0.1, DType::F64);
  optim::AdamWOptions o;
  o.lr = 0.01;
  optim::AdamWUpdate u = optim::adamw_update(p, g, m, v, scalar_tensor(3, DType::F64), o);
  std::vector<double> pv = p.to_doubles(), gv = g.to_doubles(), mv = m.to_doubles(), vv = v.to_doubles();
  for (size_t i = 0; i < pv.size(); ++i) {
    double m2 = 0.9 * mv[i] + 0.1 * gv[i], v2 = 0.999 * vv[i] + 0.001 * gv[i] * gv[i];
    double mhat = m2 / (1 - std::pow(0.9, 3)), vhat = v2 / (1 - std::pow(0.999, 3));
    double want = pv[i] * (1 - 0.01 * 0.01) - 0.01 * mhat / (std::sqrt(vhat) + 1e-8);
    EXPECT_NEAR(u.m.to_doubles()[i], m2, 1e-12);
    EXPECT_NEAR(u.v.to_doubles()[i], v2, 1e-12);
    EXPECT_NEAR(u.param.to_doubles()[i], want, 1e-10);
  }
}

// A compiled AdamW train step gives the same parameters as the eager one, step by step,
// and drives a least-squares loss down.
TEST(Optim, CompiledTrainStepMatchesEagerAndLearns) {
  Tensor x = rand({32, 3}, 1, -1, 1), w_true = from_vector(std::vector<float>{1.5f, -2.0f, 0.5f}, {3, 1});
  Tensor y = matmul(x, w_true);
  auto loss = [](const Tensor& w, const Tensor& in, const Tensor& target) { return mse_loss(matmul(in, w), target); };
  optim::AdamWOptions o;
  o.lr = 0.05;
  o.weight_decay = 0;
  optim::AdamW eager(loss, {zeros({3, 1})}, o, false), compiled(loss, {zeros({3, 1})}, o, true);
  double first = 0, last = 0;
  for (int i = 0; i < 200; ++i) {
    Tensor le = eager.step({x, y}), lc = compiled.step({x, y});
    if (i == 0) first = lc.item();
    last = lc.item();
    if (i % 50 == 0) {
      ASSERT_TRUE(allclose(compiled.params()[0], eager.params()[0], 1e-4, 1e-5)) << "step " << i;
      ASSERT_NEAR(lc.item(), le.item(), 1e-4 * std::max(1.0, le.item()));
    }
  }
  EXPECT_LT(last, 1e-3 * first) << "first " << first << " last " << last;
  EXPECT_TRUE(allclose(compiled.params()[0], w_true, 0.05, 0.05)) << compiled.params()[0].str();
  EXPECT_EQ(compiled.steps(), 200);
  EXPECT_THROW(optim::AdamW(loss, {}, o), Error);
}

}  // namespace

namespace {

// A small CNN (conv, batch-norm statistics, ReLU, strided conv, global pooling, linear
// head) trains with a compiled AdamW step: the loss goes down.
TEST(Optim, SmallCnnTrainsCompiled) {
  Tensor images = rand({8, 1, 8, 8}, 1, -1, 1);
  Tensor labels = from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8});
  std::vector<Tensor> params = {rand({4, 1, 3, 3}, 2, -0.3, 0.3), zeros({4}), ones({4}), zeros({4}),
                                rand({8, 4, 3, 3}, 3, -0.2, 0.2), rand({3, 8}, 4, -0.3, 0.3), zeros({3})};
  auto loss = [](const std::vector<Tensor>& in) {  // 7 params, images, labels
    Tensor h = conv2d(in[7], in[0], in[1], {1}, {1});
    h = relu(batch_norm_train(h, {}, {}, in[2], in[3]).out);
    h = relu(conv2d(h, in[4], {}, {2}, {1}));
    Tensor pooled = reshape(global_avg_pool2d(h), {8, 8});
    return std::vector<Tensor>{cross_entropy(linear(pooled, in[5], in[6]), in[8])};
  };
  optim::AdamWOptions o;
  o.lr = 0.05;
  optim::AdamW trainer(loss, params, o, /*compiled=*/true);
  double first = trainer.step({images, labels}).item(), last = first;
  for (int i = 0; i < 15; ++i) last = trainer.step({images, labels}).item();
  EXPECT_LT(last, 0.7 * first) << "first " << first << " last " << last;
}

}  // namespace
