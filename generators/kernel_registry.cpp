// The generators of the kernel library. Sizes: estimates are those of
// bench/torch_suite.py scaled for a CPU (what `kiln bench-kernels` runs);
// trace sizes only need to keep independent dynamic dims apart.
#include <functional>

#include "models/seed.h"
#include "kernel_spec.h"
#include "core/error.h"
#include "ops/api.h"

namespace kiln::kernels {

namespace {

using UnaryFn = std::function<Tensor(const Tensor&)>;
using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

const std::vector<std::pair<std::string, UnaryFn>>& unary_ops() {
  static const std::vector<std::pair<std::string, UnaryFn>> ops = {
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"sin", [](const Tensor& x) { return sin(x); }},
      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"erf", [](const Tensor& x) { return erf(x); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
  };
  return ops;
}

const std::vector<std::pair<std::string, BinaryFn>>& binary_ops() {
  static const std::vector<std::pair<std::string, BinaryFn>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
  };
  return ops;
}

template <class Table>
std::vector<std::string> names_of(const Table& t) {
  std::vector<std::string> names;
  for (const auto& e : t) names.push_back(e.first);
  return names;
}

template <class Table>
auto lookup(const Table& t, const std::string& name) {
  for (const auto& e : t) {
    if (e.first == name) return e.second;
  }
  KILN_INTERNAL_ERROR("no op ", name);  // make_spec checked the choices
}

int64_t integer(const Params& p, const std::string& name) { return std::stoll(p.at(name)); }

// Functions, not globals: a generator registered from another file's static initializer
// builds the registry before this file's globals exist (ASan: initialization-order-fiasco).
const std::vector<std::string>& float_types() {
  static const std::vector<std::string> v = {"f32", "f16", "bf16"};
  return v;
}
// Elementwise tensors: [rows, cols], both dynamic.
const std::vector<int64_t>& elementwise_trace() {
  static const std::vector<int64_t> v = {3, 5};
  return v;
}
const std::vector<int64_t>& elementwise_estimate() {
  static const std::vector<int64_t> v = {2048, 4096};
  return v;
}
// Row-wise ops (reductions, softmax, layer norm): [rows, cols].
const std::vector<int64_t>& rows_trace() {
  static const std::vector<int64_t> v = {3, 5};
  return v;
}
const std::vector<int64_t>& rows_estimate() {
  static const std::vector<int64_t> v = {1024, 4096};
  return v;
}

std::vector<GeneratorInfo> make_generators() {
  std::vector<GeneratorInfo> g;
  g.push_back({"kiln_seed", "exp(sin x) + log|cos x|, the seed expression, 1-D, any length", {}, [](const Params&) {
                 KernelSpec s;
                 s.inputs = {{"x", DType::F32, {2}, {1 << 23}}};
                 s.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{models::compute_expression(in[0])}; };
                 s.dynamic = true;
                 return s;
               }});
  g.push_back({"kiln_unary", "out = op(x), any 2-D shape",
               {{"op", "relu", names_of(unary_ops())}, {"dtype", "f32", float_types()}},
               [](const Params& p) {
                 KernelSpec s;
                 DType t = dtype_from_name(p.at("dtype"));
                 s.inputs = {{"x", t, elementwise_trace(), elementwise_estimate()}};
                 UnaryFn f = lookup(unary_ops(), p.at("op"));
                 s.fn = [f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0])}; };
                 s.dynamic = true;
                 return s;
               }});
  g.push_back({"kiln_binary", "out = op(a, b), a and b of one 2-D shape",
               {{"op", "add", names_of(binary_ops())}, {"dtype", "f32", float_types()}},
               [](const Params& p) {
                 KernelSpec s;
                 DType t = dtype_from_name(p.at("dtype"));
                 s.inputs = {{"a", t, elementwise_trace(), elementwise_estimate()},
                             {"b", t, elementwise_trace(), elementwise_estimate()}};
                 BinaryFn f = lookup(binary_ops(), p.at("op"));
                 s.fn = [f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0], in[1])}; };
                 s.dynamic = true;
                 return s;
               }});
  g.push_back({"kiln_reduce", "out[r] = op over the last axis of x[r, c]", {{"op", "sum", {"sum", "mean", "max"}}},
               [](const Params& p) {
                 KernelSpec s;
                 s.inputs = {{"x", DType::F32, rows_trace(), rows_estimate()}};
                 std::string op = p.at("op");
                 s.fn = [op](const std::vector<Tensor>& in) {
                   Tensor x = in[0];
                   return std::vector<Tensor>{op == "sum" ? sum(x, {-1}) : op == "mean" ? mean(x, {-1}) : max(x, {-1})};
                 };
                 s.dynamic = true;
                 return s;
               }});
  g.push_back({"kiln_softmax", "softmax over the last axis of x[r, c]", {}, [](const Params&) {
                 KernelSpec s;
                 s.inputs = {{"x", DType::F32, rows_trace(), rows_estimate()}};
                 s.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; };
                 s.dynamic = true;
                 return s;
               }});
  // The normalized size is static (it is an attribute of the op); rows are dynamic.
  g.push_back({"kiln_layer_norm", "layer_norm(x[r, cols], weight[cols], bias[cols]), eps 1e-5", {{"cols", "4096", {}}},
               [](const Params& p) {
                 KernelSpec s;
                 const int64_t c = integer(p, "cols");
                 s.inputs = {{"x", DType::F32, {3, c}, {1024, c}}, {"weight", DType::F32, {c}, {c}},
                             {"bias", DType::F32, {c}, {c}}};
                 s.fn = [c](const std::vector<Tensor>& in) {
                   return std::vector<Tensor>{layer_norm(in[0], {c}, in[1], in[2])};
                 };
                 s.dynamic_dims = {{0, 0}};
                 return s;
               }});
  g.push_back({"kiln_matmul", "out[m, n] = a[m, k] b[k, n]", {}, [](const Params&) {
                 KernelSpec s;
                 s.inputs = {{"a", DType::F32, {3, 5}, {1024, 1024}}, {"b", DType::F32, {5, 7}, {1024, 1024}}};
                 s.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[1])}; };
                 s.dynamic = true;
                 return s;
               }});
  // Attention's scores, torch_suite's CPU size: 16 heads of 128 x 64 by 64 x 128.
  g.push_back({"kiln_batch_matmul", "out[i, m, n] = a[i, m, k] b[i, k, n]", {}, [](const Params&) {
                 KernelSpec s;
                 s.inputs = {{"a", DType::F32, {11, 3, 5}, {16, 128, 64}}, {"b", DType::F32, {11, 5, 7}, {16, 64, 128}}};
                 s.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[1])}; };
                 s.dynamic = true;
                 return s;
               }});
  // conv2d's geometry is static (its index maps need it): the sizes are parameters.
  g.push_back({"kiln_conv2d", "conv2d(x[n, c, h, w], weight[o, c, k, k]), NCHW, no bias",
               {{"n", "4", {}}, {"c", "64", {}}, {"h", "56", {}}, {"w", "56", {}}, {"o", "64", {}}, {"k", "3", {}},
                {"stride", "1", {}}, {"padding", "1", {}}},
               [](const Params& p) {
                 KernelSpec s;
                 const int64_t n = integer(p, "n"), c = integer(p, "c"), h = integer(p, "h"), w = integer(p, "w"),
                               o = integer(p, "o"), k = integer(p, "k"), stride = integer(p, "stride"),
                               pad = integer(p, "padding");
                 s.inputs = {{"x", DType::F32, {}, {n, c, h, w}}, {"weight", DType::F32, {}, {o, c, k, k}}};
                 s.fn = [=](const std::vector<Tensor>& in) {
                   return std::vector<Tensor>{conv2d(in[0], in[1], {}, {stride}, {pad})};
                 };
                 return s;
               }});
  g.push_back({"kiln_pool2d", "max_pool2d or avg_pool2d of x[n, c, h, w], NCHW",
               {{"op", "max", {"max", "avg"}}, {"n", "4", {}}, {"c", "64", {}}, {"h", "112", {}}, {"w", "112", {}},
                {"k", "3", {}}, {"stride", "2", {}}, {"padding", "1", {}}},
               [](const Params& p) {
                 KernelSpec s;
                 const int64_t n = integer(p, "n"), c = integer(p, "c"), h = integer(p, "h"), w = integer(p, "w"),
                               k = integer(p, "k"), stride = integer(p, "stride"), pad = integer(p, "padding");
                 const bool is_max = p.at("op") == "max";
                 s.inputs = {{"x", DType::F32, {}, {n, c, h, w}}};
                 s.fn = [=](const std::vector<Tensor>& in) {
                   return std::vector<Tensor>{is_max ? max_pool2d(in[0], {k}, {stride}, {pad})
                                                     : avg_pool2d(in[0], {k}, {stride}, {pad})};
                 };
                 return s;
               }});
  return g;
}

}  // namespace

namespace {
std::vector<GeneratorInfo>& registry() {
  static std::vector<GeneratorInfo> g = make_generators();
  return g;
}
}  // namespace

const std::vector<GeneratorInfo>& generators() { return registry(); }

bool register_generator(GeneratorInfo info) {
  if (info.name.empty() || !info.make) user_error("register_generator: a generator needs a name and a make function");
  for (const GeneratorInfo& g : registry()) {
    if (g.name == info.name || g.name == "kiln_" + info.name) {
      user_error("register_generator: the name '", info.name, "' is taken (", g.summary, "); choose another");
    }
  }
  registry().push_back(std::move(info));
  return true;
}

}  // namespace kiln::kernels
