#include "models/models.h"

#include <cmath>
#include <optional>

#include "models/seed.h"

namespace kiln::models {

namespace {
// Weights ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch's default Linear init.
Tensor weight(const Shape& s, int64_t fan_in, uint64_t seed) {
  double b = 1.0 / std::sqrt(double(fan_in));
  return rand(s, seed, -b, b);
}
}  // namespace

Model make_seed(int64_t n) {
  Model m;
  m.name = "seed";
  m.description = "exp(sin(x)) + log(abs(cos(x))), the seed's expression";
  m.inputs = {rand({n}, 42, -3.0, 3.0)};
  m.forward = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{compute_expression(in[0])}; };
  return m;
}

Model make_mlp(const MlpConfig& c) {
  Model m;
  m.name = "mlp";
  m.description = "classifier MLP: linear-gelu-linear-gelu-linear, log_softmax";
  m.inputs = {randn({c.batch, c.in}, 7)};
  Tensor w1 = weight({c.hidden, c.in}, c.in, 1), b1 = weight({c.hidden}, c.in, 2);
  Tensor w2 = weight({c.hidden, c.hidden}, c.hidden, 3), b2 = weight({c.hidden}, c.hidden, 4);
  Tensor w3 = weight({c.classes, c.hidden}, c.hidden, 5), b3 = weight({c.classes}, c.hidden, 6);
  m.forward = [=](const std::vector<Tensor>& in) {
    Tensor h = gelu(linear(in[0], w1, b1));
    h = gelu(linear(h, w2, b2));
    return std::vector<Tensor>{log_softmax(linear(h, w3, b3), -1)};
  };
  return m;
}

Model make_gpt_block(const GptBlockConfig& c) {
  if (c.dim % c.heads != 0) user_error("gpt_block: dim ", c.dim, " is not divisible by heads ", c.heads);
  Model m;
  m.name = "gpt_block";
  m.description = "GPT-2 decoder block: pre-LN causal self-attention (fused QKV) and GELU MLP";
  const int64_t B = c.batch, S = c.seq, D = c.dim, H = c.heads, Dh = D / H;
  m.inputs = {randn({B, S, D}, 11)};
  Tensor ln1_w = ones({D}), ln1_b = zeros({D}), ln2_w = ones({D}), ln2_b = zeros({D});
  Tensor w_qkv = weight({3 * D, D}, D, 12), b_qkv = weight({3 * D}, D, 13);
  Tensor w_o = weight({D, D}, D, 14), b_o = weight({D}, D, 15);
  Tensor w_fc = weight({4 * D, D}, D, 16), b_fc = weight({4 * D}, D, 17);
  Tensor w_pr = weight({D, 4 * D}, 4 * D, 18), b_pr = weight({D}, 4 * D, 19);
  std::vector<double> tri(size_t(S * S));
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < S; ++j) tri[size_t(i * S + j)] = j <= i;
  Tensor causal = from_vector(tri, {S, S}, DType::Bool);
  m.forward = [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor qkv = linear(layer_norm(x, {D}, ln1_w, ln1_b), w_qkv, b_qkv);  // [B, S, 3D]
    auto heads = [&](int64_t part) {  // [B, H, S, Dh]
      Tensor t = slice(qkv, 2, part * D, (part + 1) * D);
      return permute(reshape(t, {B, S, H, Dh}), {0, 2, 1, 3});
    };
    Tensor q = heads(0), k = heads(1), v = heads(2);
    Tensor scores = matmul(q, transpose(k, -1, -2)) * (1.0 / std::sqrt(double(Dh)));
    scores = where(causal, scores, scalar(-INFINITY));
    Tensor attn = matmul(softmax(scores, -1), v);                      // [B, H, S, Dh]
    attn = reshape(permute(attn, {0, 2, 1, 3}), {B, S, D});
    Tensor h = x + linear(attn, w_o, b_o);
    Tensor mlp = linear(gelu(linear(layer_norm(h, {D}, ln2_w, ln2_b), w_fc, b_fc)), w_pr, b_pr);
    return std::vector<Tensor>{h + mlp};
  };
  return m;
}

namespace {
// Inference-mode conv + batch norm with seeded weights and running statistics.
struct ConvBn {
  Tensor w, mean, var, gamma, beta;
  int64_t stride = 1, padding = 0;
  Tensor operator()(const Tensor& x) const {
    return batch_norm(conv2d(x, w, {}, {stride}, {padding}), mean, var, gamma, beta);
  }
};

ConvBn conv_bn(int64_t in, int64_t out, int64_t k, int64_t stride, uint64_t& seed) {
  // Kaiming-uniform weights (variance 1/fan_in) keep activations O(1) through the depth.
  const int64_t fan_in = in * k * k;
  const double b = std::sqrt(3.0 / double(fan_in));
  ConvBn c;
  c.w = rand({out, in, k, k}, seed++, -b, b);
  c.mean = rand({out}, seed++, -0.1, 0.1);
  c.var = rand({out}, seed++, 0.8, 1.2);
  c.gamma = rand({out}, seed++, 0.8, 1.2);
  c.beta = rand({out}, seed++, -0.1, 0.1);
  c.stride = stride;
  c.padding = k / 2;
  return c;
}

struct BasicBlock {
  ConvBn conv1, conv2;
  std::optional<ConvBn> shortcut;  // 1x1 conv, stride 2, where the shape changes
  Tensor operator()(const Tensor& x) const {
    Tensor h = relu(conv1(x));
    return relu(conv2(h) + (shortcut ? (*shortcut)(x) : x));
  }
};
}  // namespace

Model make_resnet18(const ResNetConfig& c) {
  if (c.batch < 1 || c.image < 1 || c.channels < 1 || c.width < 1 || c.classes < 1) {
    user_error("resnet18: every size must be >= 1, got batch ", c.batch,
               ", image ", c.image, ", channels ", c.channels, ", width ", c.width, ", classes ", c.classes);
  }
  Model m;
  m.name = "resnet18";
  m.description = "ResNet-18 inference: conv-bn-relu basic blocks [2, 2, 2, 2], global avg pool, linear";
  m.inputs = {randn({c.batch, c.channels, c.image, c.image}, 21)};
  uint64_t seed = 100;
  ConvBn stem = conv_bn(c.channels, c.width, 3, 1, seed);
  std::vector<BasicBlock> blocks;
  int64_t in = c.width;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t out = c.width << stage;
    for (int i = 0; i < 2; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      BasicBlock blk{conv_bn(in, out, 3, stride, seed), conv_bn(out, out, 3, 1, seed), std::nullopt};
      if (stride != 1 || in != out) blk.shortcut = conv_bn(in, out, 1, stride, seed);
      blocks.push_back(std::move(blk));
      in = out;
    }
  }
  Tensor fc_w = weight({c.classes, in}, in, seed++), fc_b = weight({c.classes}, in, seed++);
  m.forward = [=](const std::vector<Tensor>& inputs) {
    Tensor h = relu(stem(inputs[0]));
    for (const BasicBlock& b : blocks) h = b(h);
    Tensor pooled = reshape(global_avg_pool2d(h), {-1, in});
    return std::vector<Tensor>{linear(pooled, fc_w, fc_b)};
  };
  return m;
}

std::vector<std::string> model_names() { return {"seed", "mlp", "gpt_block", "resnet18"}; }

Model make_model(const std::string& name) {
  if (name == "seed") return make_seed();
  if (name == "mlp") return make_mlp();
  if (name == "gpt_block") return make_gpt_block();
  if (name == "resnet18") return make_resnet18();
  std::string known;
  for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  user_error("unknown model '", name, "'; available models: ", known);
}

}  // namespace kiln::models
