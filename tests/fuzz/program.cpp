#include "program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

namespace kiln::fuzz {

int64_t Meta::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

static std::string join(const std::vector<int64_t>& v, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

std::string Meta::str() const { return std::string(dtype_name(dtype)) + "[" + join(shape) + "]"; }

double round_to(double v, DType t) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return double(float(v));
    case DType::F16: return f16_bits_to_float(float_to_f16_bits(float(v)));
    case DType::BF16: return bf16_bits_to_float(float_to_bf16_bits(float(v)));
    case DType::Bool: return v != 0 ? 1 : 0;
    case DType::I32:
    case DType::I64: return std::isfinite(v) ? std::trunc(v) : 0;
  }
  return v;
}

namespace {

[[noreturn]] void invalid(const std::string& what) { throw Invalid(what); }

int category(DType t) { return t == DType::Bool ? 0 : is_float(t) ? 2 : 1; }

int axis_of(int64_t a, int rank, bool allow_end = false) {
  int n = rank + (allow_end ? 1 : 0);
  if (a < -n || a >= n) invalid("axis " + std::to_string(a) + " out of range");
  return int(a < 0 ? a + n : a);
}

std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1) invalid("shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

void need_float(const Meta& m, const std::string& op) {
  if (!is_float(m.dtype)) invalid(op + " needs a float tensor");
}

void need_arity(const OpSpec& op, const std::vector<Meta>& args, size_t lo, size_t hi) {
  if (args.size() < lo || args.size() > hi) invalid(op.op + ": wrong number of operands");
}

int64_t int_at(const OpSpec& op, size_t i) {
  if (i >= op.ints.size()) invalid(op.op + ": missing int attribute");
  return op.ints[i];
}

// conv2d's and conv_transpose2d's operands: x and weight (and a bias) of one float
// dtype, x and weight of rank 4.
void need_conv_operands(const OpSpec& op, const std::vector<Meta>& a) {
  need_arity(op, a, 2, 3);
  need_float(a[0], op.op);
  for (const Meta& m : a)
    if (m.dtype != a[0].dtype) invalid("conv dtypes");
  if (a[0].shape.size() != 4 || a[1].shape.size() != 4) invalid("conv ranks");
}

double real_at(const OpSpec& op, size_t i) {
  if (i >= op.reals.size()) invalid(op.op + ": missing real attribute");
  return op.reals[i];
}

// The axes of a reduction: empty means all; each once.
std::vector<int> reduce_axes(const std::vector<int64_t>& given, int rank) {
  std::set<int> s;
  if (given.empty()) {
    for (int i = 0; i < rank; ++i) s.insert(i);
  } else {
    if (rank == 0) invalid("axes of a 0-d tensor");
    for (int64_t a : given) {
      if (!s.insert(axis_of(a, rank)).second) invalid("repeated axis");
    }
  }
  return {s.begin(), s.end()};
}

std::vector<int64_t> reduced_shape(const std::vector<int64_t>& shape, const std::vector<int>& axes, bool keepdim) {
  std::vector<int64_t> out;
  for (int i = 0; i < int(shape.size()); ++i) {
    bool red = std::count(axes.begin(), axes.end(), i) > 0;
    if (!red) out.push_back(shape[size_t(i)]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// PyTorch's pooling_output_shape.
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

const std::set<std::string> kUnaryFloat = {"sin",  "cos",     "tan",  "asin", "acos", "atan", "asinh", "acosh", "atanh",  "exp",     "log",  "sqrt",
                                           "rsqrt", "tanh",   "sigmoid", "erf", "silu", "softplus",
                                           "gelu", "leaky_relu"};
const std::set<std::string> kUnaryAny = {"abs", "neg", "relu", "floor", "ceil", "round", "clamp"};
const std::set<std::string> kArith = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
const std::set<std::string> kCompare = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"};
const std::set<std::string> kReduce = {"sum", "mean", "max", "min", "prod"};

}  // namespace

DType result_type(const std::vector<Meta>& tensors, bool has_scalar, bool scalar_is_float) {
  // PyTorch: dimensioned tensors first; 0-d tensors only raise the category; then numbers.
  bool have_dim = false, have_zero = false;
  DType dim = DType::Bool, zero = DType::Bool;
  for (const Meta& m : tensors) {
    if (m.shape.empty()) {
      zero = have_zero ? promote(zero, m.dtype) : m.dtype;
      have_zero = true;
    } else {
      dim = have_dim ? promote(dim, m.dtype) : m.dtype;
      have_dim = true;
    }
  }
  DType r = have_dim ? dim : zero;
  if (have_dim && have_zero && category(zero) > category(dim)) r = zero;
  if (has_scalar) {
    int c = scalar_is_float ? 2 : 1;
    if (c > category(r)) r = c == 2 ? DType::F32 : DType::I64;
  }
  return r;
}

Meta infer_op(const OpSpec& op, const std::vector<Meta>& a) {
  const std::string& n = op.op;
  if (kUnaryFloat.count(n)) {
    need_arity(op, a, 1, 1);
    need_float(a[0], n);
    if (n == "gelu" && op.text != "none" && op.text != "tanh") invalid("gelu approximate");
    return a[0];
  }
  if (kUnaryAny.count(n)) {
    need_arity(op, a, 1, 1);
    if (a[0].dtype == DType::Bool) invalid(n + " of bool");
    if (n == "clamp" && (op.ints.size() < 2 || op.reals.size() < 2 || !(op.ints[0] || op.ints[1])))
      invalid("clamp needs a bound");
    if (n == "clamp" && !is_float(a[0].dtype)) {
      for (size_t i = 0; i < 2; ++i)
        if (op.ints[i] && op.reals[i] != std::trunc(op.reals[i])) invalid("fractional clamp of ints");
    }
    return a[0];
  }
  if (n == "logical_not") {
    need_arity(op, a, 1, 1);
    return {DType::Bool, a[0].shape};
  }
  if (n == "cast") {
    need_arity(op, a, 1, 1);
    DType t;
    try {
      t = dtype_from_name(op.text);
    } catch (...) {
      invalid("cast: unknown dtype");
    }
    return {t, a[0].shape};
  }
  if (kArith.count(n) || kCompare.count(n)) {
    need_arity(op, a, 1, 2);
    std::vector<int64_t> shape = a[0].shape;
    DType t;
    if (a.size() == 2) {
      shape = broadcast(a[0].shape, a[1].shape);
      t = result_type(a);
    } else {
      double c = real_at(op, 0);
      int_at(op, 0);
      t = result_type(a, true, c != std::trunc(c) || !std::isfinite(c));
    }
    if (kCompare.count(n)) return {DType::Bool, shape};
    if (t == DType::Bool) invalid(n + " of bools");
    if (n == "div" && !is_float(t)) t = DType::F32;
    if (n == "pow" && !is_float(t)) invalid("integer pow");
    return {t, shape};
  }
  if (n == "where") {
    need_arity(op, a, 3, 3);
    if (a[0].dtype != DType::Bool) invalid("where: condition not bool");
    return {result_type({a[1], a[2]}), broadcast(a[0].shape, broadcast(a[1].shape, a[2].shape))};
  }
  if (kReduce.count(n) || n == "var" || n == "std_dev") {
    need_arity(op, a, 1, 1);
    bool stat = n == "var" || n == "std_dev";
    size_t first = stat ? 2 : 1;
    bool keepdim = int_at(op, first - 1) != 0;
    if (stat && int_at(op, 0) < 0) invalid("negative correction");
    std::vector<int64_t> given(op.ints.begin() + long(first), op.ints.end());
    std::vector<int> axes = reduce_axes(given, int(a[0].shape.size()));
    DType t = a[0].dtype;
    if (n == "mean" || stat) need_float(a[0], n);
    if ((n == "sum" || n == "prod") && !is_float(t)) t = DType::I64;
    if (n == "max" || n == "min") {
      if (t == DType::Bool) invalid("max of bool");
      for (int ax : axes)
        if (a[0].shape[size_t(ax)] == 0) invalid("max over an empty dim");
      // PyTorch's max with no dims never keeps them; with dims it is amax.
      if (given.empty() && keepdim) invalid("max() with keepdim and no dims");
    }
    return {t, reduced_shape(a[0].shape, axes, keepdim)};
  }
  if (n == "argmax") {
    need_arity(op, a, 1, 1);
    if (a[0].dtype == DType::Bool || a[0].shape.empty()) invalid("argmax");
    int ax = axis_of(int_at(op, 0), int(a[0].shape.size()));
    if (a[0].shape[size_t(ax)] == 0) invalid("argmax over an empty dim");
    return {DType::I64, reduced_shape(a[0].shape, {ax}, int_at(op, 1) != 0)};
  }
  if (n == "softmax" || n == "log_softmax") {
    need_arity(op, a, 1, 1);
    need_float(a[0], n);
    if (a[0].shape.empty()) invalid("softmax of 0-d");
    axis_of(int_at(op, 0), int(a[0].shape.size()));
    return a[0];
  }
  if (n == "layer_norm" || n == "rms_norm") {
    need_arity(op, a, 1, n == "layer_norm" ? 3 : 2);
    need_float(a[0], n);
    int64_t k = int_at(op, 0);
    real_at(op, 0);
    if (k < 1 || k > int64_t(a[0].shape.size())) invalid("normalized dims");
    std::vector<int64_t> norm(a[0].shape.end() - k, a[0].shape.end());
    for (size_t i = 1; i < a.size(); ++i)
      if (a[i].shape != norm || a[i].dtype != a[0].dtype) invalid("norm weight");
    return a[0];
  }
  if (n == "reshape") {
    need_arity(op, a, 1, 1);
    std::vector<int64_t> s = op.ints;
    int64_t known = 1;
    int holes = 0;
    for (int64_t d : s) {
      if (d == -1) ++holes;
      else if (d < 0) invalid("reshape size");
      else known *= d;
    }
    if (holes > 1) invalid("two -1 in reshape");
    if (holes) {
      if (known == 0 || a[0].numel() % known) invalid("reshape -1");
      for (int64_t& d : s)
        if (d == -1) d = a[0].numel() / known;
    } else if (known != a[0].numel()) {
      invalid("reshape numel");
    }
    return {a[0].dtype, s};
  }
  if (n == "permute") {
    need_arity(op, a, 1, 1);
    int r = int(a[0].shape.size());
    if (int(op.ints.size()) != r) invalid("permute rank");
    std::set<int> seen;
    std::vector<int64_t> s;
    for (int64_t d : op.ints) {
      int ax = axis_of(d, r);
      if (!seen.insert(ax).second) invalid("permute repeats");
      s.push_back(a[0].shape[size_t(ax)]);
    }
    return {a[0].dtype, s};
  }
  if (n == "transpose") {
    need_arity(op, a, 1, 1);
    int r = int(a[0].shape.size());
    if (r == 0) invalid("transpose of 0-d");
    int d0 = axis_of(int_at(op, 0), r), d1 = axis_of(int_at(op, 1), r);
    std::vector<int64_t> s = a[0].shape;
    std::swap(s[size_t(d0)], s[size_t(d1)]);
    return {a[0].dtype, s};
  }
  if (n == "expand") {
    need_arity(op, a, 1, 1);
    const std::vector<int64_t>& in = a[0].shape;
    if (op.ints.size() < in.size()) invalid("expand rank");
    size_t lead = op.ints.size() - in.size();
    std::vector<int64_t> s;
    for (size_t i = 0; i < op.ints.size(); ++i) {
      int64_t want = op.ints[i];
      if (i < lead) {
        if (want < 0) invalid("expand: -1 in a new dim");
        s.push_back(want);
        continue;
      }
      int64_t have = in[i - lead];
      if (want == -1) want = have;
      if (want < 0 || (have != want && have != 1)) invalid("expand size");
      s.push_back(want);
    }
    return {a[0].dtype, s};
  }
  if (n == "unsqueeze") {
    need_arity(op, a, 1, 1);
    std::vector<int64_t> s = a[0].shape;
    int ax = axis_of(int_at(op, 0), int(s.size()), true);
    s.insert(s.begin() + ax, 1);
    return {a[0].dtype, s};
  }
  if (n == "squeeze") {
    need_arity(op, a, 1, 1);
    std::vector<int64_t> s = a[0].shape;
    if (s.empty()) invalid("squeeze of 0-d");
    int ax = axis_of(int_at(op, 0), int(s.size()));
    // PyTorch leaves a dim of another size alone; kiln documents that it must be 1, and
    // the generator only squeezes size-1 dims.
    if (s[size_t(ax)] != 1) invalid("squeeze of a dim that is not 1");
    s.erase(s.begin() + ax);
    return {a[0].dtype, s};
  }
  if (n == "slice") {
    need_arity(op, a, 1, 1);
    std::vector<int64_t> s = a[0].shape;
    if (s.empty()) invalid("slice of 0-d");
    int ax = axis_of(int_at(op, 0), int(s.size()));
    int64_t len = s[size_t(ax)], start = int_at(op, 1), stop = int_at(op, 2), step = int_at(op, 3);
    if (step <= 0) invalid("slice step");
    auto clampi = [&](int64_t v) { return v < 0 ? std::max<int64_t>(0, v + len) : std::min(v, len); };
    start = clampi(start);
    stop = clampi(stop);
    s[size_t(ax)] = stop > start ? (stop - start + step - 1) / step : 0;
    return {a[0].dtype, s};
  }
  if (n == "concat" || n == "stack") {
    if (a.empty()) invalid("concat of nothing");
    std::vector<int64_t> s = a[0].shape;
    for (const Meta& m : a) {
      if (m.shape.size() != s.size()) invalid("concat ranks");
    }
    if (n == "stack") {
      for (const Meta& m : a)
        if (m.shape != s) invalid("stack shapes");
      int ax = axis_of(int_at(op, 0), int(s.size()), true);
      s.insert(s.begin() + ax, int64_t(a.size()));
    } else {
      if (s.empty()) invalid("concat of 0-d");
      int ax = axis_of(int_at(op, 0), int(s.size()));
      int64_t total = 0;
      for (const Meta& m : a) {
        for (size_t i = 0; i < s.size(); ++i)
          if (int(i) != ax && m.shape[i] != s[i]) invalid("concat shapes");
        total += m.shape[size_t(ax)];
      }
      s[size_t(ax)] = total;
    }
    return {result_type(a), s};  // torch.cat promotes (among all as dimensioned)
  }
  if (n == "split") {
    need_arity(op, a, 1, 1);
    std::vector<int64_t> s = a[0].shape;
    if (s.empty()) invalid("split of 0-d");
    int64_t size = int_at(op, 0), piece = int_at(op, 2);
    int ax = axis_of(int_at(op, 1), int(s.size()));
    int64_t len = s[size_t(ax)];
    if (size <= 0 || len == 0) invalid("split size");
    int64_t pieces = (len + size - 1) / size;
    if (piece < 0 || piece >= pieces) invalid("split piece");
    s[size_t(ax)] = std::min(size, len - piece * size);
    return {a[0].dtype, s};
  }
  if (n == "pad") {
    need_arity(op, a, 1, 1);
    std::vector<int64_t> s = a[0].shape;
    real_at(op, 0);
    if (op.ints.size() % 2 || op.ints.size() > 2 * s.size() || op.ints.empty()) invalid("pad length");
    if (!is_float(a[0].dtype) && op.reals[0] != std::trunc(op.reals[0])) invalid("fractional pad of ints");
    for (size_t i = 0; i < op.ints.size() / 2; ++i) {
      int64_t& d = s[s.size() - 1 - i];
      int64_t out = d + op.ints[2 * i] + op.ints[2 * i + 1];
      if (out <= 0 && !(d == 0 && op.ints[2 * i] == 0 && op.ints[2 * i + 1] == 0)) invalid("pad crops too much");
      if (d == 0 && out > 0) invalid("pad of an empty dim");  // PyTorch rejects these
      d = out;
    }
    return {a[0].dtype, s};
  }
  if (n == "matmul") {
    need_arity(op, a, 2, 2);
    if (a[0].dtype != a[1].dtype || a[0].dtype == DType::Bool || a[0].dtype == DType::I32)
      invalid("matmul dtypes");
    std::vector<int64_t> x = a[0].shape, y = a[1].shape;
    if (x.empty() || y.empty()) invalid("matmul of 0-d");
    bool xv = x.size() == 1, yv = y.size() == 1;
    if (xv) x.insert(x.begin(), 1);
    if (yv) y.push_back(1);
    if (x.back() != y[y.size() - 2]) invalid("matmul inner dims");
    std::vector<int64_t> bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
    std::vector<int64_t> s = broadcast(bx, by);
    if (!xv) s.push_back(x[x.size() - 2]);
    if (!yv) s.push_back(y.back());
    return {a[0].dtype, s};
  }
  if (n == "linear") {
    need_arity(op, a, 2, 3);
    need_float(a[0], n);
    for (const Meta& m : a)
      if (m.dtype != a[0].dtype) invalid("linear dtypes");
    if (a[0].shape.empty() || a[1].shape.size() != 2 || a[1].shape[1] != a[0].shape.back()) invalid("linear shapes");
    if (a.size() == 3 && a[2].shape != std::vector<int64_t>{a[1].shape[0]}) invalid("linear bias");
    std::vector<int64_t> s = a[0].shape;
    s.back() = a[1].shape[0];
    return {a[0].dtype, s};
  }
  if (n == "conv2d") {
    need_conv_operands(op, a);
    const auto &x = a[0].shape, &w = a[1].shape;
    int64_t s = int_at(op, 0), p = int_at(op, 1), d = int_at(op, 2), g = int_at(op, 3);
    if (s < 1 || p < 0 || d < 1 || g < 1 || x[1] % g || w[0] % g || w[1] * g != x[1] || w[0] == 0)
      invalid("conv params");
    if (a.size() == 3 && a[2].shape != std::vector<int64_t>{w[0]}) invalid("conv bias");
    int64_t oh = (x[2] + 2 * p - d * (w[2] - 1) - 1) / s + 1, ow = (x[3] + 2 * p - d * (w[3] - 1) - 1) / s + 1;
    if (x[2] + 2 * p - d * (w[2] - 1) - 1 < 0 || x[3] + 2 * p - d * (w[3] - 1) - 1 < 0) invalid("conv kernel too big");
    if (x[1] == 0 || w[2] == 0 || w[3] == 0) invalid("conv empty");
    return {a[0].dtype, {x[0], w[0], oh, ow}};
  }
  if (n == "conv_transpose2d") {
    need_conv_operands(op, a);
    const auto &x = a[0].shape, &w = a[1].shape;
    int64_t s = int_at(op, 0), p = int_at(op, 1), q = int_at(op, 2), d = int_at(op, 3), g = int_at(op, 4);
    if (s < 1 || p < 0 || d < 1 || g < 1 || q < 0 || q >= std::max(s, d) || x[1] % g || w[0] != x[1] || w[1] == 0)
      invalid("conv_transpose params");
    if (a.size() == 3 && a[2].shape != std::vector<int64_t>{w[1] * g}) invalid("conv bias");
    int64_t oh = (x[2] - 1) * s - 2 * p + d * (w[2] - 1) + q + 1, ow = (x[3] - 1) * s - 2 * p + d * (w[3] - 1) + q + 1;
    if (oh < 1 || ow < 1 || x[2] == 0 || x[3] == 0 || w[2] == 0 || w[3] == 0) invalid("conv_transpose output size");
    return {a[0].dtype, {x[0], w[1] * g, oh, ow}};
  }
  if (n == "max_pool2d" || n == "avg_pool2d") {
    need_arity(op, a, 1, 1);
    need_float(a[0], n);
    const auto& x = a[0].shape;
    if (x.size() != 4 || x[1] == 0 || x[2] == 0 || x[3] == 0) invalid("pool input");
    bool mx = n == "max_pool2d";
    int64_t k = int_at(op, 0), s = int_at(op, 1), p = int_at(op, 2), d = mx ? int_at(op, 3) : 1;
    bool ceil_mode = int_at(op, mx ? 4 : 3) != 0;
    if (!mx) int_at(op, 4);
    if (s == 0) s = k;
    if (k < 1 || s < 1 || p < 0 || d < 1 || 2 * p > k) invalid("pool params");
    int64_t oh = pool_out(x[2], k, s, p, d, ceil_mode), ow = pool_out(x[3], k, s, p, d, ceil_mode);
    if (oh < 1 || ow < 1) invalid("pool output empty");
    return {a[0].dtype, {x[0], x[1], oh, ow}};
  }
  if (n == "adaptive_avg_pool2d") {
    need_arity(op, a, 1, 1);
    need_float(a[0], n);
    const auto& x = a[0].shape;
    if (x.size() != 4 || x[2] == 0 || x[3] == 0 || x[1] == 0) invalid("pool input");
    if (int_at(op, 0) < 1 || int_at(op, 1) < 1) invalid("pool output size");
    return {a[0].dtype, {x[0], x[1], op.ints[0], op.ints[1]}};
  }
  if (n == "gather") {
    need_arity(op, a, 2, 2);
    if (a[1].dtype != DType::I64 || a[1].shape.size() != a[0].shape.size() || a[0].shape.empty())
      invalid("gather index");
    int ax = axis_of(int_at(op, 0), int(a[0].shape.size()));
    for (size_t i = 0; i < a[0].shape.size(); ++i)
      if (int(i) != ax && a[1].shape[i] > a[0].shape[i]) invalid("gather index too big");
    return {a[0].dtype, a[1].shape};
  }
  if (n == "index_select") {
    need_arity(op, a, 2, 2);
    if (a[1].dtype != DType::I64 || a[1].shape.size() != 1 || a[0].shape.empty()) invalid("index_select index");
    std::vector<int64_t> s = a[0].shape;
    s[size_t(axis_of(int_at(op, 0), int(s.size())))] = a[1].shape[0];
    return {a[0].dtype, s};
  }
  if (n == "embedding") {
    need_arity(op, a, 2, 2);
    need_float(a[0], n);
    if (a[0].shape.size() != 2 || a[1].dtype != DType::I64) invalid("embedding");
    std::vector<int64_t> s = a[1].shape;
    s.push_back(a[0].shape[1]);
    return {a[0].dtype, s};
  }
  if (n == "one_hot") {
    need_arity(op, a, 1, 1);
    if (a[0].dtype != DType::I64 || int_at(op, 0) < 1) invalid("one_hot");
    std::vector<int64_t> s = a[0].shape;
    s.push_back(op.ints[0]);
    return {DType::I64, s};
  }
  if (n == "tril" || n == "triu") {
    need_arity(op, a, 1, 1);
    int_at(op, 0);
    if (a[0].shape.size() < 2) invalid("tril rank");
    return a[0];
  }
  if (n == "cross_entropy") {
    need_arity(op, a, 2, 2);
    need_float(a[0], n);
    const auto &x = a[0].shape, &t = a[1].shape;
    if (x.empty() || x.size() > 2 || x.back() == 0) invalid("cross_entropy logits");
    if (op.text != "mean" && op.text != "sum" && op.text != "none") invalid("cross_entropy reduction");
    std::vector<int64_t> none;
    if (a[1].dtype == DType::I64) {
      if (t != std::vector<int64_t>(x.begin(), x.end() - 1)) invalid("cross_entropy target shape");
      none = t;
    } else {
      if (a[1].dtype != a[0].dtype || t != x) invalid("cross_entropy probabilities");
      none = std::vector<int64_t>(x.begin(), x.end() - 1);
    }
    return {a[0].dtype, op.text == "none" ? none : std::vector<int64_t>{}};
  }
  if (n == "mse_loss") {
    need_arity(op, a, 2, 2);
    need_float(a[0], n);
    if (a[0] != a[1]) invalid("mse_loss operands");
    return {a[0].dtype, {}};
  }
  if (n == "dropout") {
    need_arity(op, a, 1, 1);
    need_float(a[0], n);
    double p = real_at(op, 0);
    int_at(op, 1);
    if (!(p >= 0 && p < 1)) invalid("dropout p");
    return a[0];
  }
  invalid("unknown op " + n);
}

std::vector<Meta> infer(const Program& p) {
  std::vector<Meta> metas;
  for (const InputSpec& in : p.inputs) {
    if (int64_t(in.values.size()) != in.meta.numel()) invalid("input values do not fill its shape");
    for (int64_t d : in.meta.shape)
      if (d < 0) invalid("negative size");
    metas.push_back(in.meta);
  }
  for (const OpSpec& op : p.ops) {
    std::vector<Meta> args;
    for (int v : op.args) {
      if (v < 0 || v >= int(metas.size())) invalid("operand out of range");
      args.push_back(metas[size_t(v)]);
    }
    Meta m = infer_op(op, args);
    // Index operands are always program inputs: their values must be in range.
    auto check_index = [&](size_t k, int64_t limit) {
      int v = op.args[k];
      if (v >= int(p.inputs.size())) invalid(op.op + ": index operand is not an input");
      for (double x : p.inputs[size_t(v)].values)
        if (x < 0 || x >= double(limit)) invalid(op.op + ": index out of range");
    };
    if (op.op == "gather") check_index(1, args[0].shape[size_t(axis_of(op.ints[0], int(args[0].shape.size())))]);
    if (op.op == "index_select")
      check_index(1, args[0].shape[size_t(axis_of(op.ints[0], int(args[0].shape.size())))]);
    if (op.op == "embedding") check_index(1, args[0].shape[0]);
    if (op.op == "one_hot") check_index(0, op.ints[0]);
    if (op.op == "cross_entropy" && args[1].dtype == DType::I64) check_index(1, args[0].shape.back());
    int64_t n = m.numel();
    if (n > 100000) invalid("too large");
    metas.push_back(m);
  }
  if (p.outputs.empty()) invalid("no outputs");
  for (int o : p.outputs)
    if (o < 0 || o >= int(metas.size())) invalid("output out of range");
  return metas;
}

bool is_valid(const Program& p) {
  try {
    infer(p);
    return true;
  } catch (const Invalid&) {
    return false;
  }
}

// ---- Text form ----

static std::string real_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e15 && !(v == 0 && std::signbit(v))) return std::to_string(int64_t(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

static double parse_real(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end) invalid("bad number '" + s + "'");
  return v;
}

namespace {

void write_tensor(std::ostream& os, const std::string& head, const InputSpec& t, bool with_index) {
  os << head << ' ' << dtype_name(t.meta.dtype) << " [" << join(t.meta.shape, ",") << "]";
  if (with_index) os << " index=" << t.index_limit;
  os << " :";
  for (double v : t.values) os << ' ' << real_str(v);
  os << '\n';
}

// "<dtype> [d0,d1] [index=N] : v0 v1 ..." after the line's leading words.
InputSpec read_tensor(std::istringstream& ls, const std::string& line, bool with_index) {
  InputSpec in;
  std::string dt, shape, tok;
  ls >> dt >> shape;
  try {
    in.meta.dtype = dtype_from_name(dt);
  } catch (...) {
    invalid("bad dtype " + dt);
  }
  if (shape.size() < 2 || shape.front() != '[' || shape.back() != ']') invalid("bad shape " + shape);
  std::istringstream ds(shape.substr(1, shape.size() - 2));
  std::string d;
  while (std::getline(ds, d, ','))
    if (!d.empty()) in.meta.shape.push_back(int64_t(parse_real(d)));
  ls >> tok;
  if (with_index) {
    if (tok.rfind("index=", 0) != 0) invalid("bad line: " + line);
    in.index_limit = int64_t(parse_real(tok.substr(6)));
    ls >> tok;
  }
  if (tok != ":") invalid("bad line: " + line);
  std::string v;
  while (ls >> v) in.values.push_back(parse_real(v));
  return in;
}

}  // namespace

std::string to_text(const Program& p) {
  std::ostringstream os;
  for (const InputSpec& in : p.inputs) write_tensor(os, "input", in, true);
  for (const OpSpec& op : p.ops) {
    os << "op " << op.op;
    for (int v : op.args) os << ' ' << v;
    if (!op.ints.empty()) os << " | ints " << join(op.ints, " ");
    if (!op.reals.empty()) {
      os << " | reals";
      for (double r : op.reals) os << ' ' << real_str(r);
    }
    if (!op.text.empty()) os << " | text " << op.text;
    os << '\n';
  }
  os << "output";
  for (int o : p.outputs) os << ' ' << o;
  os << '\n';
  for (const InputSpec& w : p.weights) write_tensor(os, "weight", w, false);
  for (const InputSpec& t : p.torch.outputs) write_tensor(os, "torch output", t, false);
  for (const InputSpec& t : p.torch.grads) write_tensor(os, "torch grad", t, false);
  if (!p.torch.error.empty()) os << "torch error : " << p.torch.error << '\n';
  return os.str();
}

Program from_text(const std::string& text) {
  Program p;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    std::istringstream ls(line);
    std::string kind;
    if (!(ls >> kind) || kind[0] == '#') continue;
    if (kind == "input") {
      p.inputs.push_back(read_tensor(ls, line, true));
    } else if (kind == "op") {
      OpSpec op;
      ls >> op.op;
      std::string tok, section;
      while (ls >> tok) {
        if (tok == "|") {
          ls >> section;
          continue;
        }
        if (section.empty()) op.args.push_back(int(parse_real(tok)));
        else if (section == "ints") op.ints.push_back(int64_t(parse_real(tok)));
        else if (section == "reals") op.reals.push_back(parse_real(tok));
        else if (section == "text") op.text = tok;
        else invalid("bad section " + section);
      }
      p.ops.push_back(std::move(op));
    } else if (kind == "output") {
      std::string v;
      while (ls >> v) p.outputs.push_back(int(parse_real(v)));
    } else if (kind == "weight") {
      p.weights.push_back(read_tensor(ls, line, false));
    } else if (kind == "torch") {
      std::string what;
      ls >> what;
      p.torch.present = true;
      if (what == "output") p.torch.outputs.push_back(read_tensor(ls, line, false));
      else if (what == "grad") p.torch.grads.push_back(read_tensor(ls, line, false));
      else if (what == "error") {
        std::string colon, rest;
        ls >> colon;
        std::getline(ls, rest);
        const size_t from = rest.find_first_not_of(' ');
        p.torch.error = from == std::string::npos ? "(no message)" : rest.substr(from);
      } else {
        invalid("bad line: " + line);
      }
    } else {
      invalid("bad line: " + line);
    }
  }
  return p;
}

Program prune(const Program& p) {
  const int ni = int(p.inputs.size());
  std::vector<bool> live(size_t(p.num_values()), false);
  for (int o : p.outputs) live[size_t(o)] = true;
  for (int k = int(p.ops.size()) - 1; k >= 0; --k) {
    if (!live[size_t(ni + k)]) continue;
    for (int v : p.ops[size_t(k)].args) live[size_t(v)] = true;
  }
  std::vector<int> remap(size_t(p.num_values()), -1);
  Program q;
  for (int i = 0; i < ni; ++i) {
    if (!live[size_t(i)]) continue;
    remap[size_t(i)] = int(q.inputs.size());
    q.inputs.push_back(p.inputs[size_t(i)]);
  }
  std::vector<OpSpec> ops;
  for (int k = 0; k < int(p.ops.size()); ++k) {
    if (!live[size_t(ni + k)]) continue;
    OpSpec op = p.ops[size_t(k)];
    for (int& v : op.args) v = remap[size_t(v)];
    remap[size_t(ni + k)] = int(q.inputs.size()) + int(ops.size());
    ops.push_back(std::move(op));
  }
  q.ops = std::move(ops);
  std::vector<int> outs;
  for (int o : p.outputs) {
    int r = remap[size_t(o)];
    if (std::find(outs.begin(), outs.end(), r) == outs.end()) outs.push_back(r);
  }
  q.outputs = outs;
  return q;
}

}  // namespace kiln::fuzz
