#include "models/models.h"

#include <cmath>

#include "common/seed.h"

namespace kiln::apps {

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

std::vector<std::string> model_names() { return {"seed", "mlp", "gpt_block"}; }

Model make_model(const std::string& name) {
  if (name == "seed") return make_seed();
  if (name == "mlp") return make_mlp();
  if (name == "gpt_block") return make_gpt_block();
  std::string known;
  for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  user_error("unknown model '", name, "'; available models: ", known,
             " (resnet18 needs conv2d, batch_norm and pooling, which kiln does not have yet)");
}

}  // namespace kiln::apps
