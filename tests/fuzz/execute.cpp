#include "execute.h"

namespace kiln::fuzz {

Tensor make_input(const InputSpec& in) { return from_vector(in.values, Shape(in.meta.shape), in.meta.dtype); }

std::vector<Tensor> make_inputs(const Program& p) {
  std::vector<Tensor> out;
  for (const InputSpec& in : p.inputs) out.push_back(make_input(in));
  return out;
}

namespace {

using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);
using BinaryTS = Tensor (*)(const Tensor&, double);
using BinaryST = Tensor (*)(double, const Tensor&);
using Reduce = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);

struct BinaryFns {
  Binary tt;
  BinaryTS ts;
  BinaryST st;
};

#define KILN_FUZZ_BINARY(name) {#name, {&kiln::name, &kiln::name, &kiln::name}}

const std::map<std::string, Unary>& unary_table() {
  static const std::map<std::string, Unary> t = {
      {"sin", &kiln::sin},     {"cos", &kiln::cos},       {"tan", &kiln::tan},         {"exp", &kiln::exp},
      {"log", &kiln::log},     {"abs", &kiln::abs},       {"neg", &kiln::neg},         {"sqrt", &kiln::sqrt},
      {"rsqrt", &kiln::rsqrt}, {"tanh", &kiln::tanh},     {"sigmoid", &kiln::sigmoid}, {"relu", &kiln::relu},
      {"asin", &kiln::asin},   {"acos", &kiln::acos},     {"atan", &kiln::atan},       {"asinh", &kiln::asinh},
      {"acosh", &kiln::acosh}, {"atanh", &kiln::atanh},
      {"erf", &kiln::erf},     {"floor", &kiln::floor},   {"ceil", &kiln::ceil},       {"round", &kiln::round},
      {"silu", &kiln::silu},   {"softplus", &kiln::softplus}, {"logical_not", &kiln::logical_not}};
  return t;
}

const std::map<std::string, BinaryFns>& binary_table() {
  static const std::map<std::string, BinaryFns> t = {
      KILN_FUZZ_BINARY(add), KILN_FUZZ_BINARY(sub),     KILN_FUZZ_BINARY(mul),     KILN_FUZZ_BINARY(div),
      KILN_FUZZ_BINARY(pow), KILN_FUZZ_BINARY(maximum), KILN_FUZZ_BINARY(minimum), KILN_FUZZ_BINARY(eq),
      KILN_FUZZ_BINARY(ne),  KILN_FUZZ_BINARY(lt),      KILN_FUZZ_BINARY(le),      KILN_FUZZ_BINARY(gt),
      KILN_FUZZ_BINARY(ge),  KILN_FUZZ_BINARY(logical_and), KILN_FUZZ_BINARY(logical_or)};
  return t;
}

const std::map<std::string, Reduce>& reduce_table() {
  static const std::map<std::string, Reduce> t = {
      {"sum", &kiln::sum}, {"mean", &kiln::mean}, {"max", &kiln::max}, {"min", &kiln::min}, {"prod", &kiln::prod}};
  return t;
}

std::vector<int64_t> tail(const std::vector<int64_t>& v, size_t from) {
  return std::vector<int64_t>(v.begin() + long(std::min(from, v.size())), v.end());
}

Tensor arg(const std::vector<Tensor>& a, size_t i) { return i < a.size() ? a[i] : Tensor(); }

}  // namespace

Tensor apply_op(const OpSpec& op, const std::vector<Tensor>& a) {
  const std::string& n = op.op;
  const auto& I = op.ints;
  const auto& R = op.reals;
  if (auto it = unary_table().find(n); it != unary_table().end()) return it->second(a[0]);
  if (auto it = binary_table().find(n); it != binary_table().end()) {
    if (a.size() == 2) return it->second.tt(a[0], a[1]);
    return I[0] ? it->second.st(R[0], a[0]) : it->second.ts(a[0], R[0]);
  }
  if (auto it = reduce_table().find(n); it != reduce_table().end()) return it->second(a[0], tail(I, 1), I[0] != 0);
  if (n == "gelu") return gelu(a[0], op.text);
  if (n == "leaky_relu") return leaky_relu(a[0], R[0]);
  if (n == "clamp") {
    std::optional<double> lo, hi;
    if (I[0]) lo = R[0];
    if (I[1]) hi = R[1];
    return clamp(a[0], lo, hi);
  }
  if (n == "cast") return cast(a[0], dtype_from_name(op.text));
  if (n == "where") return where(a[0], a[1], a[2]);
  if (n == "var") return var(a[0], tail(I, 2), I[0], I[1] != 0);
  if (n == "std_dev") return std_dev(a[0], tail(I, 2), I[0], I[1] != 0);
  if (n == "argmax") return argmax(a[0], I[0], I[1] != 0);
  if (n == "softmax") return softmax(a[0], I[0]);
  if (n == "log_softmax") return log_softmax(a[0], I[0]);
  if (n == "layer_norm" || n == "rms_norm") {
    const auto& s = a[0].sizes();
    std::vector<int64_t> norm(s.end() - I[0], s.end());
    if (n == "layer_norm") return layer_norm(a[0], norm, arg(a, 1), arg(a, 2), R[0]);
    return rms_norm(a[0], norm, arg(a, 1), R[0]);
  }
  if (n == "reshape") return reshape(a[0], I);
  if (n == "permute") return permute(a[0], I);
  if (n == "transpose") return transpose(a[0], I[0], I[1]);
  if (n == "expand") return expand(a[0], I);
  if (n == "unsqueeze") return unsqueeze(a[0], I[0]);
  if (n == "squeeze") return squeeze(a[0], I[0]);
  if (n == "slice") return slice(a[0], I[0], I[1], I[2], I[3]);
  if (n == "concat") return concat(a, I[0]);
  if (n == "stack") return stack(a, I[0]);
  if (n == "split") return split(a[0], I[0], I[1]).at(size_t(I[2]));
  if (n == "pad") return pad(a[0], I, R[0]);
  if (n == "matmul") return matmul(a[0], a[1]);
  if (n == "linear") return linear(a[0], a[1], arg(a, 2));
  if (n == "conv2d") return conv2d(a[0], a[1], arg(a, 2), {I[0]}, {I[1]}, {I[2]}, I[3]);
  if (n == "conv_transpose2d") return conv_transpose2d(a[0], a[1], arg(a, 2), {I[0]}, {I[1]}, {I[2]}, I[4], {I[3]});
  if (n == "max_pool2d") {
    std::vector<int64_t> stride = I[1] ? std::vector<int64_t>{I[1]} : std::vector<int64_t>{};
    return max_pool2d(a[0], {I[0]}, stride, {I[2]}, {I[3]}, I[4] != 0);
  }
  if (n == "avg_pool2d") {
    std::vector<int64_t> stride = I[1] ? std::vector<int64_t>{I[1]} : std::vector<int64_t>{};
    return avg_pool2d(a[0], {I[0]}, stride, {I[2]}, I[3] != 0, I[4] != 0);
  }
  if (n == "adaptive_avg_pool2d") return adaptive_avg_pool2d(a[0], {I[0], I[1]});
  if (n == "gather") return gather(a[0], I[0], a[1]);
  if (n == "index_select") return index_select(a[0], I[0], a[1]);
  if (n == "embedding") return embedding(a[0], a[1]);
  if (n == "one_hot") return one_hot(a[0], I[0]);
  if (n == "tril") return tril(a[0], I[0]);
  if (n == "triu") return triu(a[0], I[0]);
  if (n == "cross_entropy") return cross_entropy(a[0], a[1], op.text);
  if (n == "mse_loss") return mse_loss(a[0], a[1]);
  if (n == "dropout") return dropout(a[0], R[0], uint64_t(I[0]), I[1] != 0);
  throw Invalid("apply_op: unknown op " + n);
}

std::vector<Tensor> apply(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> values = inputs;
  for (const OpSpec& op : p.ops) {
    std::vector<Tensor> args;
    for (int v : op.args) args.push_back(values[size_t(v)]);
    values.push_back(apply_op(op, args));
  }
  std::vector<Tensor> out;
  for (int o : p.outputs) out.push_back(values[size_t(o)]);
  return out;
}

}  // namespace kiln::fuzz
