#include "ops/api.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "graph/tracer.h"
#include "ops/transposed_conv.h"
#include "runtime/eager.h"

namespace kiln {

#define KILN_DEFINE_UNARY(name) \
  Tensor name(const Tensor& x) { return apply_op(#name, {x}); }
KILN_DEFINE_UNARY(sin)
KILN_DEFINE_UNARY(cos)
KILN_DEFINE_UNARY(tan)
KILN_DEFINE_UNARY(asin)
KILN_DEFINE_UNARY(acos)
KILN_DEFINE_UNARY(atan)
KILN_DEFINE_UNARY(asinh)
KILN_DEFINE_UNARY(acosh)
KILN_DEFINE_UNARY(atanh)
KILN_DEFINE_UNARY(exp)
KILN_DEFINE_UNARY(log)
KILN_DEFINE_UNARY(abs)
KILN_DEFINE_UNARY(neg)
KILN_DEFINE_UNARY(sqrt)
KILN_DEFINE_UNARY(rsqrt)
KILN_DEFINE_UNARY(tanh)
KILN_DEFINE_UNARY(sigmoid)
KILN_DEFINE_UNARY(relu)
KILN_DEFINE_UNARY(erf)
KILN_DEFINE_UNARY(floor)
KILN_DEFINE_UNARY(ceil)
KILN_DEFINE_UNARY(round)
KILN_DEFINE_UNARY(silu)
KILN_DEFINE_UNARY(softplus)
KILN_DEFINE_UNARY(logical_not)
#undef KILN_DEFINE_UNARY

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh") {
    user_error("gelu: approximate must be \"none\" or \"tanh\", not \"", approximate, "\"");
  }
  return apply_op("gelu", {x}, {{"approximate", approximate}});
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return apply_op("leaky_relu", {x}, {{"negative_slope", negative_slope}});
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  // min > max is PyTorch's too: every element becomes max (clamp to min, then to max).
  // A NaN bound makes every element NaN; an integer tensor (which clamp keeps integer)
  // has no NaN to give.
  if (!is_float(x.dtype()) && ((lo && std::isnan(*lo)) || (hi && std::isnan(*hi)))) {
    user_error("clamp: a NaN bound on the ", dtype_name(x.dtype()), " tensor ", x.meta().str(),
               " (clamp keeps an integer tensor's dtype); cast it to a floating type first");
  }
  Attrs a;
  if (lo) a.set("min", *lo);
  if (hi) a.set("max", *hi);
  return apply_op("clamp", {x}, a);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return apply_op("where", {cond, a, b});
}

Tensor cast(const Tensor& x, DType dtype) {
  return apply_op("cast", {x}, {{"dtype", std::string(dtype_name(dtype))}});
}

Tensor scalar(double value, DType dtype) {
  Attrs attrs{{"value", value}, {"dtype", std::string(dtype_name(dtype))}};
  if (Tracer* t = Tracer::current()) return t->record("scalar", {}, attrs);
  return scalar_tensor(value, dtype);
}

namespace {
// The dtype a C++ number takes next to a tensor of dtype `t` (PyTorch's weak scalars).
DType weak_scalar_dtype(double v, DType t) {
  bool integral_value = std::isfinite(v) && v == std::floor(v);
  if (is_float(t)) return t;
  if (!integral_value) return DType::F32;
  return t == DType::Bool ? DType::I64 : t;
}
// A number operand: a traced scalar while the tensor is traced, a 0-d tensor otherwise.
Tensor scalar_like(double v, const Tensor& t) {
  DType dt = weak_scalar_dtype(v, t.dtype());
  Attrs attrs{{"value", v}, {"dtype", std::string(dtype_name(dt))}};
  if (t.is_symbolic()) return t.impl()->tracer->record("scalar", {}, attrs);
  return scalar_tensor(v, dt);
}
}  // namespace

#define KILN_DEFINE_BINARY(name)                                                         \
  Tensor name(const Tensor& a, const Tensor& b) { return apply_op(#name, {a, b}); }      \
  Tensor name(const Tensor& a, double b) { return apply_op(#name, {a, scalar_like(b, a)}); } \
  Tensor name(double a, const Tensor& b) { return apply_op(#name, {scalar_like(a, b), b}); }
KILN_DEFINE_BINARY(add)
KILN_DEFINE_BINARY(sub)
KILN_DEFINE_BINARY(mul)
KILN_DEFINE_BINARY(div)
KILN_DEFINE_BINARY(pow)
KILN_DEFINE_BINARY(maximum)
KILN_DEFINE_BINARY(minimum)
KILN_DEFINE_BINARY(eq)
KILN_DEFINE_BINARY(ne)
KILN_DEFINE_BINARY(lt)
KILN_DEFINE_BINARY(le)
KILN_DEFINE_BINARY(gt)
KILN_DEFINE_BINARY(ge)
KILN_DEFINE_BINARY(logical_and)
KILN_DEFINE_BINARY(logical_or)
#undef KILN_DEFINE_BINARY

namespace {
// PyTorch lets a 0-d tensor be reduced or normalized along dim 0 or -1, as if it had one
// dim of size 1.
bool is_0d_axis(const Tensor& x, int64_t axis) { return x.rank() == 0 && (axis == 0 || axis == -1); }

Tensor reduce(const char* op, const Tensor& x, std::vector<int64_t> axes, bool keepdim) {
  if (x.rank() == 0 && std::all_of(axes.begin(), axes.end(), [&x](int64_t a) { return is_0d_axis(x, a); })) {
    axes.clear();  // a 0-d tensor's "all axes" are none: the element itself
  }
  return apply_op(op, {x}, {{"axes", axes}, {"keepdim", keepdim}});
}
}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce("sum", x, axes, keepdim);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce("mean", x, axes, keepdim);
}
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce("max", x, axes, keepdim);
}

Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce("min", x, axes, keepdim);
}
Tensor prod(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce("prod", x, axes, keepdim);
}

Tensor var(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdim) {
  if (correction < 0) user_error("var: correction must be >= 0, got ", correction);
  if (!x.shape().is_static()) user_error("var: needs static sizes, got ", x.meta().str());
  int64_t n = 1;
  if (axes.empty()) {
    n = x.numel();
  } else {
    for (int64_t a : axes) n *= is_0d_axis(x, a) ? 1 : x.shape()[normalize_axis(a, x.rank(), "var")].size;
  }
  // In a wider type, as PyTorch's accumulation type: squares of f32 values beyond ~1e19
  // overflow f32 while the variance itself fits.
  const DType wide = x.dtype() == DType::F32 ? DType::F64 : compute_dtype(x.dtype());
  const Tensor xw = wide == x.dtype() ? x : cast(x, wide);
  Tensor centered = xw - mean(xw, axes, /*keepdim=*/true);
  // n <= correction gives inf/NaN, as in PyTorch.
  Tensor v = sum(centered * centered, axes, keepdim) / double(n - correction);
  return wide == x.dtype() ? v : cast(v, x.dtype());
}

Tensor std_dev(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdim) {
  return sqrt(var(x, axes, correction, keepdim));
}

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  if (prediction.shape() != target.shape()) {
    user_error("mse_loss: prediction ", prediction.meta().str(), " and target ", target.meta().str(),
               " must have the same shape");
  }
  Tensor d = prediction - target;
  return mean(d * d);
}

namespace {
Tensor triangle(const char* op, const Tensor& x, int64_t k, bool lower) {
  if (x.rank() < 2 || !x.shape()[x.rank() - 1].is_static() || !x.shape()[x.rank() - 2].is_static()) {
    user_error(op, ": needs at least 2 dims with static sizes in the last two, got ", x.meta().str());
  }
  const int64_t rows = x.shape()[x.rank() - 2].size, cols = x.shape()[x.rank() - 1].size;
  std::vector<double> keep(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) keep[size_t(i * cols + j)] = lower ? (j - i <= k) : (j - i >= k);
  // The mask is a constant of the graph when traced.
  return where(from_vector(keep, {rows, cols}, DType::Bool), x, scalar(0.0, x.dtype()));
}
}  // namespace

Tensor tril(const Tensor& x, int64_t k) { return triangle("tril", x, k, true); }
Tensor triu(const Tensor& x, int64_t k) { return triangle("triu", x, k, false); }

Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  if (is_0d_axis(x, axis)) return scalar(0.0, DType::I64);
  return apply_op("argmax", {x}, {{"axis", axis}, {"keepdim", keepdim}});
}

// Over a 0-d tensor's one element: 1 (log: 0), NaN where x is not finite (inf - inf).
Tensor softmax(const Tensor& x, int64_t axis) {
  if (is_0d_axis(x, axis)) return exp(cast(x, is_float(x.dtype()) ? x.dtype() : DType::F32) - x);
  return apply_op("softmax", {x}, {{"axis", axis}});
}
Tensor log_softmax(const Tensor& x, int64_t axis) {
  if (is_0d_axis(x, axis)) return cast(x, is_float(x.dtype()) ? x.dtype() : DType::F32) - x;
  return apply_op("log_softmax", {x}, {{"axis", axis}});
}

namespace {
// Checks that normalized_shape names x's trailing dims; returns how many.
int64_t trailing_dims(const char* op, const Tensor& x, const std::vector<int64_t>& normalized_shape) {
  const int r = x.rank(), k = int(normalized_shape.size());
  bool ok = k >= 1 && k <= r;
  for (int i = 0; ok && i < k; ++i) {
    const Dim& d = x.shape()[r - k + i];
    ok = !d.is_static() || d.size == normalized_shape[size_t(i)];
  }
  if (!ok) {
    user_error(op, ": normalized_shape ", Shape(normalized_shape).str(),
               " must equal the trailing dims of the input ", x.meta().str());
  }
  return k;
}
// The weight or bias `t` must have the shape of x's trailing `k` dims (normalized_shape,
// where they are static; the same symbols where they are dynamic, as under compile with
// dynamic dims).
void check_affine(const char* op, const char* what, const Tensor& t, const Tensor& x, int64_t k) {
  if (!t.defined()) return;
  const std::vector<Dim>& xd = x.shape().dims();
  const Shape want(std::vector<Dim>(xd.end() - k, xd.end()));
  if (t.shape() != want) user_error(op, ": ", what, " is ", t.meta().str(), " but must have shape ", want.str());
}
}  // namespace

Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                  const Tensor& weight, const Tensor& bias, double eps) {
  int64_t k = trailing_dims("layer_norm", x, normalized_shape);
  check_affine("layer_norm", "weight", weight, x, k);
  check_affine("layer_norm", "bias", bias, x, k);
  const Attrs attrs{{"dims", k}, {"eps", eps}};
  std::vector<Tensor> in{x};
  if (weight.defined()) in.push_back(weight);
  if (bias.defined()) in.push_back(bias);
  const bool has_weight = weight.defined();
  return eager_composite(std::string("layer_norm") + (has_weight ? "+w" : "") + (bias.defined() ? "+b" : ""), attrs,
                         in, [attrs, has_weight](const std::vector<Tensor>& a) {
                           Tensor y = apply_op("layer_norm", {a[0]}, attrs);
                           if (has_weight) y = y * a[1];
                           if (a.size() > size_t(has_weight ? 2 : 1)) y = y + a.back();
                           return y;
                         });
}

Tensor rms_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                const Tensor& weight, double eps) {
  int64_t k = trailing_dims("rms_norm", x, normalized_shape);
  check_affine("rms_norm", "weight", weight, x, k);
  const Attrs attrs{{"dims", k}, {"eps", eps}};
  if (!weight.defined()) return apply_op("rms_norm", {x}, attrs);
  return eager_composite("rms_norm+w", attrs, {x, weight},
                         [attrs](const std::vector<Tensor>& a) { return apply_op("rms_norm", {a[0]}, attrs) * a[1]; });
}

Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  return apply_op("reshape", {x}, {{"shape", shape}});
}
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  return apply_op("permute", {x}, {{"dims", dims}});
}
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  const int r = x.rank();
  std::vector<int64_t> dims(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) dims[size_t(i)] = i;
  std::swap(dims[size_t(normalize_axis(dim0, r, "transpose"))], dims[size_t(normalize_axis(dim1, r, "transpose"))]);
  return permute(x, dims);
}
Tensor expand(const Tensor& x, const std::vector<int64_t>& shape) {
  return apply_op("expand", {x}, {{"shape", shape}});
}
Tensor unsqueeze(const Tensor& x, int64_t axis) {
  const int r = x.rank();
  int a = normalize_axis(axis < 0 ? axis + r + 1 : axis, r + 1, "unsqueeze");
  std::vector<int64_t> shape = x.shape().is_static() ? x.sizes() : std::vector<int64_t>{};
  if (shape.empty() && r > 0) user_error("unsqueeze: needs static sizes, got ", x.meta().str());
  shape.insert(shape.begin() + a, 1);
  return reshape(x, shape);
}
Tensor squeeze(const Tensor& x, int64_t axis) {
  int a = normalize_axis(axis, x.rank(), "squeeze");
  const Dim& d = x.shape()[a];
  if (!d.is_static()) {
    user_error("squeeze: axis ", axis, " of ", x.meta().str(), " has a dynamic size ", d.str(),
               "; squeeze only a dim known to be 1 (or reshape)");
  }
  if (d.size != 1) return x;  // as PyTorch: squeezing a dim that is not 1 changes nothing
  std::vector<int64_t> shape = x.sizes();
  shape.erase(shape.begin() + a);
  return reshape(x, shape);
}
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
  return apply_op("slice", {x}, {{"axis", axis}, {"start", start}, {"stop", stop}, {"step", step}});
}
Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  return apply_op("concat", xs, {{"axis", axis}});
}

// A 1-D operand is a row (left) or a column (right) vector, dropped again from the result,
// as torch.matmul: vector-matrix, matrix-vector and the dot product of two vectors.
Tensor matmul(const Tensor& a, const Tensor& b) {
  if (a.rank() == 1 || b.rank() == 1) {
    if (a.rank() == 0 || b.rank() == 0) {
      user_error("matmul: both operands need at least one dim, got ", a.meta().str(), " and ", b.meta().str(),
                 "; multiply by a 0-d tensor with mul");
    }
    Tensor r = apply_op("matmul", {a.rank() == 1 ? unsqueeze(a, 0) : a, b.rank() == 1 ? unsqueeze(b, 1) : b});
    if (b.rank() == 1) r = squeeze(r, -1);
    if (a.rank() == 1) r = squeeze(r, b.rank() == 1 ? -1 : -2);
    return r;
  }
  return apply_op("matmul", {a, b});
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.rank() != 2) user_error("linear: weight must be [out_features, in_features], got ", weight.meta().str());
  auto steps = [](const std::vector<Tensor>& a) {
    Tensor y = matmul(a[0], transpose(a[1], 0, 1));
    return a.size() > 2 ? y + a[2] : y;
  };
  // Eager: one kernel reads the weight in place and adds the bias.
  if (!bias.defined()) return eager_composite("linear", {}, {x, weight}, steps);
  return eager_composite("linear+b", {}, {x, weight, bias}, steps);
}

// ---- Convolution, pooling and batch norm (ops/conv.cpp) ----

namespace {
// A size pair from one value (both dims) or {height, width}.
std::vector<int64_t> size_pair(const char* op, const char* name, const std::vector<int64_t>& v) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) {
    user_error(op, ": ", name, " takes 1 value or 2 (height, width), got ", Shape(v).str());
  }
  return v;
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  Tensor y = apply_op("conv2d", {x, weight},
                      {{"stride", size_pair("conv2d", "stride", stride)},
                       {"padding", size_pair("conv2d", "padding", padding)},
                       {"dilation", size_pair("conv2d", "dilation", dilation)},
                       {"groups", groups}});
  if (!bias.defined()) return y;
  const Dim& o = weight.shape()[0];
  if (bias.rank() != 1 || !(bias.shape()[0] == o)) {
    user_error("conv2d: bias is ", bias.meta().str(), " but must be [O] = [", o.str(), "] for weight ",
               weight.meta().str());
  }
  return y + reshape(bias, {o.size, 1, 1});
}

namespace detail {

Tensor dilate_axis(Tensor x, int axis, int64_t s) {
  if (s == 1) return x;
  const int64_t k = x.shape()[axis].size;
  x = unsqueeze(x, axis + 1);
  std::vector<int64_t> pads(size_t(2 * (x.rank() - (axis + 1))), 0);
  pads[pads.size() - 1] = s - 1;
  x = pad(x, pads);
  std::vector<int64_t> sizes = x.sizes();
  sizes[size_t(axis)] *= s;
  sizes.erase(sizes.begin() + axis + 1);
  return slice(reshape(x, sizes), axis, 0, (k - 1) * s + 1);
}

Tensor flip_axis(const Tensor& x, int axis) {
  const int64_t n = x.shape()[axis].size;
  return index_select(x, axis, arange(double(n - 1), -1.0, -1.0, DType::I64));
}

Tensor transposed_conv2d(const Tensor& x, const Tensor& w, const std::vector<int64_t>& stride,
                         const std::vector<int64_t>& dilation, const std::vector<int64_t>& begin,
                         const std::vector<int64_t>& end, int64_t groups) {
  // x spread to stride 1, padded to a full convolution (negative pads crop) with the
  // kernel flipped and, per group, its two channel dims swapped:
  // [C, O/g, KH, KW] -> [g, C/g, O/g, KH, KW] -> [g, O/g, C/g, KH, KW] -> [O, C/g, KH, KW].
  const int64_t c = w.shape()[0].size, og = w.shape()[1].size, kh = w.shape()[2].size, kw = w.shape()[3].size;
  const int64_t ph = dilation[0] * (kh - 1), pw = dilation[1] * (kw - 1);
  Tensor spread = dilate_axis(dilate_axis(x, 2, stride[0]), 3, stride[1]);
  spread = pad(spread, {pw - begin[1], pw + end[1], ph - begin[0], ph + end[0]});
  Tensor flipped = flip_axis(flip_axis(w, 2), 3);
  if (groups == 1) {
    flipped = permute(flipped, {1, 0, 2, 3});
  } else {
    flipped = reshape(flipped, {groups, c / groups, og, kh, kw});
    flipped = reshape(permute(flipped, {0, 2, 1, 3, 4}), {groups * og, c / groups, kh, kw});
  }
  return conv2d(spread, flipped, {}, {1}, {0}, dilation, groups);
}

}  // namespace detail

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& padding, const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
  const char* op = "conv_transpose2d";
  const std::vector<int64_t> s = size_pair(op, "stride", stride), p = size_pair(op, "padding", padding),
                             q = size_pair(op, "output_padding", output_padding), d = size_pair(op, "dilation", dilation);
  if (x.rank() != 4 || weight.rank() != 4) {
    user_error(op, ": x must be [N, C, H, W] and weight [C, O/groups, KH, KW], got ", x.meta().str(), " and ",
               weight.meta().str());
  }
  if (!x.shape().is_static() || !weight.shape().is_static()) {
    user_error(op, ": needs static sizes, got ", x.meta().str(), " and ", weight.meta().str());
  }
  const int64_t c = x.shape()[1].size;
  if (groups < 1 || c % groups != 0) user_error(op, ": groups must be at least 1 and divide x's ", c, " channels, got ", groups);
  if (weight.shape()[0].size != c) {
    user_error(op, ": weight ", weight.meta().str(), " must have x's ", c, " channels as its first dim ([C, O/groups, KH, KW])");
  }
  for (int i = 0; i < 2; ++i) {
    if (s[size_t(i)] < 1 || d[size_t(i)] < 1 || p[size_t(i)] < 0) {
      user_error(op, ": stride and dilation must be at least 1 and padding at least 0, got stride ", Shape(s).str(),
                 ", dilation ", Shape(d).str(), ", padding ", Shape(p).str());
    }
    if (q[size_t(i)] < 0 || q[size_t(i)] >= std::max(s[size_t(i)], d[size_t(i)])) {
      user_error(op, ": output_padding ", Shape(q).str(), " must be at least 0 and smaller than the stride or the dilation");
    }
    const int64_t in = x.shape()[2 + i].size, k = weight.shape()[2 + i].size;
    const int64_t out = (in - 1) * s[size_t(i)] - 2 * p[size_t(i)] + d[size_t(i)] * (k - 1) + q[size_t(i)] + 1;
    if (out < 1) user_error(op, ": the output of ", x.meta().str(), " with weight ", weight.meta().str(), " would have size ", out);
  }
  const int64_t o = weight.shape()[1].size * groups;
  if (bias.defined() && (bias.rank() != 1 || bias.shape()[0].size != o)) {
    user_error(op, ": bias is ", bias.meta().str(), " but must be [O] = [", o, "]");
  }
  // Op by op, eager too (not eager_composite: that traces with symbolic sizes, and the
  // steps need the sizes themselves).
  const Tensor y = detail::transposed_conv2d(x, weight, s, d, p, {q[0] - p[0], q[1] - p[1]}, groups);
  return bias.defined() ? y + reshape(bias, {o, 1, 1}) : y;
}

Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, bool ceil_mode) {
  std::vector<int64_t> k = size_pair("max_pool2d", "kernel_size", kernel_size);
  return apply_op("max_pool2d", {x},
                  {{"kernel", k},
                   {"stride", stride.empty() ? k : size_pair("max_pool2d", "stride", stride)},
                   {"padding", size_pair("max_pool2d", "padding", padding)},
                   {"dilation", size_pair("max_pool2d", "dilation", dilation)},
                   {"ceil_mode", ceil_mode}});
}

Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad) {
  std::vector<int64_t> k = size_pair("avg_pool2d", "kernel_size", kernel_size);
  return apply_op("avg_pool2d", {x},
                  {{"kernel", k},
                   {"stride", stride.empty() ? k : size_pair("avg_pool2d", "stride", stride)},
                   {"padding", size_pair("avg_pool2d", "padding", padding)},
                   {"ceil_mode", ceil_mode},
                   {"count_include_pad", count_include_pad}});
}

Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size) {
  return apply_op("adaptive_avg_pool2d", {x},
                  {{"output_size", size_pair("adaptive_avg_pool2d", "output_size", output_size)}});
}

Tensor global_avg_pool2d(const Tensor& x) {
  if (x.rank() != 4) user_error("global_avg_pool2d: input must be 4-D [N, C, H, W], got ", x.meta().str());
  return mean(x, {2, 3}, /*keepdim=*/true);
}

namespace {
// Checks x [N, C, ...] and the per-channel tensors; returns C.
int64_t batch_norm_channels(const char* op, const Tensor& x,
                            const std::vector<std::pair<const char*, const Tensor*>>& per_channel) {
  if (x.rank() < 2 || !x.shape()[1].is_static()) {
    user_error(op, ": input must be [N, C, ...] with a static C, got ", x.meta().str());
  }
  const int64_t c = x.shape()[1].size;
  for (const auto& [name, t] : per_channel) {
    if (t->defined() && t->shape() != Shape{c}) {
      user_error(op, ": ", name, " is ", t->meta().str(), " but must be [C] = [", c, "] for input ",
                 x.meta().str());
    }
  }
  return c;
}
// A [C] tensor as [C, 1, ...], to broadcast against x [N, C, ...].
Tensor per_channel(const Tensor& t, int64_t c, int rank) {
  std::vector<int64_t> shape(size_t(rank - 1), 1);
  shape[0] = c;
  return rank == 2 ? t : reshape(t, shape);
}
// (x - mean) * inv_std * weight + bias, in x's dtype.
Tensor normalize_channels(const Tensor& x, const Tensor& mean_c, const Tensor& inv_std_c, const Tensor& weight,
                          const Tensor& bias, int64_t c) {
  const int r = x.rank();
  Tensor scale = weight.defined() ? inv_std_c * per_channel(weight, c, r) : inv_std_c;
  Tensor y = (x - mean_c) * scale;
  if (bias.defined()) y = y + per_channel(bias, c, r);
  return y.dtype() == x.dtype() ? y : cast(y, x.dtype());
}
}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, double eps) {
  if (!running_mean.defined() || !running_var.defined()) {
    user_error("batch_norm: inference needs running_mean and running_var; use batch_norm_train for batch statistics");
  }
  int64_t c = batch_norm_channels("batch_norm", x, {{"running_mean", &running_mean}, {"running_var", &running_var},
                                                    {"weight", &weight}, {"bias", &bias}});
  const int r = x.rank();
  Tensor inv_std = rsqrt(per_channel(running_var, c, r) + eps);
  return normalize_channels(x, per_channel(running_mean, c, r), inv_std, weight, bias, c);
}

BatchNormResult batch_norm_train(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                 const Tensor& weight, const Tensor& bias, double momentum, double eps) {
  int64_t c = batch_norm_channels("batch_norm_train", x, {{"running_mean", &running_mean},
                                                          {"running_var", &running_var},
                                                          {"weight", &weight}, {"bias", &bias}});
  if (running_mean.defined() != running_var.defined()) {
    user_error("batch_norm_train: give both running_mean and running_var, or neither");
  }
  if (!x.shape().is_static()) user_error("batch_norm_train: needs static sizes, got ", x.meta().str());
  std::vector<int64_t> axes = {0};
  for (int i = 2; i < x.rank(); ++i) axes.push_back(i);
  const int64_t n = x.numel() / c;  // values per channel
  if (n < 2) {
    user_error("batch_norm_train: expected more than 1 value per channel when training, got input ",
               x.meta().str());
  }
  Tensor mean_k = mean(x, axes, /*keepdim=*/true);                 // [1, C, 1, ...]
  Tensor var_k = var(x, axes, /*correction=*/0, /*keepdim=*/true);  // biased
  BatchNormResult result;
  result.out = normalize_channels(x, mean_k, rsqrt(var_k + eps), weight, bias, c);
  if (running_mean.defined()) {
    Tensor batch_mean = reshape(mean_k, {c}), batch_var = reshape(var_k, {c});
    result.running_mean = running_mean * (1.0 - momentum) + batch_mean * momentum;
    result.running_var = running_var * (1.0 - momentum) + batch_var * (momentum * double(n) / double(n - 1));
  }
  return result;
}

// ---- Indexing, padding, stacking and losses (ops/index.cpp) ----

Tensor arange(int64_t n, DType dtype) { return arange(0.0, double(n), 1.0, dtype); }

Tensor arange(double start, double stop, double step, DType dtype) {
  if (step == 0.0) user_error("arange: step must be non-zero");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    user_error("arange: start, stop and step must be finite, got ", start, ", ", stop, ", ", step);
  }
  int64_t count = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
  Attrs attrs{{"start", start}, {"step", step}, {"count", count}, {"dtype", std::string(dtype_name(dtype))}};
  if (Tracer* t = Tracer::current()) return t->record("arange", {}, attrs);
  // Outside a trace a source needs no kernel: the op's reference is the host fill.
  const OpDef& def = get_op("arange");
  return def.reference({}, attrs, infer_op(def, {}, attrs));
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  return apply_op("gather", {x, index}, {{"axis", axis}});
}

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  return apply_op("index_select", {x, index}, {{"axis", axis}});
}

namespace {
// x + zeros(x's shape) with source scattered in along axis (the scatter_add op).
Tensor scatter_into(const char* what, const Tensor& x, int64_t axis, const Tensor& index, const Tensor& source,
                    bool full) {
  if (x.rank() != source.rank()) {
    user_error(what, ": source ", source.meta().str(), " must have the rank of x ", x.meta().str());
  }
  std::vector<int64_t> shape;
  for (int d = 0; d < x.rank(); ++d) {
    const Dim& dim = x.shape()[d];
    if (!dim.is_static() && !(dim == source.shape()[d])) {
      user_error(what, ": x's dim ", d, " (", dim.str(), ") is dynamic and not the source's; give it a static size");
    }
    shape.push_back(dim.is_static() ? dim.size : -1);
  }
  if (x.dtype() != source.dtype()) {
    user_error(what, ": source is ", dtype_name(source.dtype()), " but x is ", dtype_name(x.dtype()),
               "; cast one to the other first");
  }
  return x + apply_op("scatter_add", {source, index}, {{"axis", axis}, {"shape", shape}, {"full", full}});
}
}  // namespace

Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& source) {
  return scatter_into("index_add", x, axis, index, source, false);
}

Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& source) {
  return scatter_into("scatter_add", x, axis, index, source, true);
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  if (weight.rank() != 2) user_error("embedding: weight must be [num_embeddings, dim], got ", weight.meta().str());
  if (!indices.shape().is_static()) {
    user_error("embedding: indices need static sizes, got ", indices.meta().str());
  }
  std::vector<int64_t> out = indices.shape().sizes();
  out.push_back(weight.shape()[1].size);
  return reshape(index_select(weight, 0, reshape(indices, {-1})), out);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  return apply_op("one_hot", {indices}, {{"num_classes", num_classes}});
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value) {
  return apply_op("pad", {x}, {{"pads", pads}, {"value", value}});
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) user_error("stack: needs at least one tensor");
  const int rank = xs[0].rank() + 1;
  std::vector<Tensor> parts;
  for (const Tensor& x : xs) {
    if (x.shape() != xs[0].shape()) {
      user_error("stack: all tensors need the same shape; got ", xs[0].meta().str(), " and ", x.meta().str());
    }
    parts.push_back(unsqueeze(x, normalize_axis(axis, rank, "stack")));
  }
  return concat(parts, normalize_axis(axis, rank, "stack"));
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  const int a = normalize_axis(axis, x.rank(), "split");
  const Dim& d = x.shape()[a];
  if (!d.is_static()) user_error("split: axis ", a, " of ", x.meta().str(), " must have a static size");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) user_error("split: sizes must be non-negative, got ", s);
    total += s;
  }
  if (total != d.size) {
    user_error("split: sizes add up to ", total, " but axis ", a, " of ", x.meta().str(), " has ", d.size);
  }
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, a, start, start + s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t axis) {
  const int a = normalize_axis(axis, x.rank(), "split");
  if (split_size <= 0) user_error("split: split_size must be positive, got ", split_size);
  if (!x.shape()[a].is_static()) user_error("split: axis ", a, " of ", x.meta().str(), " must have a static size");
  std::vector<int64_t> sizes;
  for (int64_t left = x.shape()[a].size; left > 0; left -= split_size) sizes.push_back(std::min(left, split_size));
  return split(x, sizes, a);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    user_error("cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", not \"", reduction, "\"");
  }
  if (logits.rank() != 1 && logits.rank() != 2) {
    user_error("cross_entropy: logits must be [N, C] or [C], got ", logits.meta().str());
  }
  if (!is_float(logits.dtype())) user_error("cross_entropy: logits must be floating point, got ", logits.meta().str());
  const int class_axis = logits.rank() - 1;
  Tensor logp = log_softmax(logits, class_axis);
  Tensor loss;  // per sample
  if (is_float(target.dtype())) {  // class probabilities
    if (target.shape() != logits.shape()) {
      user_error("cross_entropy: probability targets need the logits' shape ", logits.meta().str(), ", got ",
                 target.meta().str());
    }
    loss = -sum(target * logp, {class_axis});
  } else {
    Shape want(std::vector<Dim>(logits.shape().dims().begin(), logits.shape().dims().end() - 1));
    if (target.shape() != want) {
      user_error("cross_entropy: class targets for logits ", logits.meta().str(), " must have shape ", want.str(),
                 ", got ", target.meta().str());
    }
    loss = -squeeze(gather(logp, class_axis, unsqueeze(target, class_axis)), class_axis);
  }
  if (reduction == "none") return loss;
  return reduction == "sum" ? sum(loss) : mean(loss);
}

// ---- Random fills and dropout (ops/random.cpp) ----

namespace {
Tensor random_fill(const char* op, const Tensor& x, uint64_t seed, const char* p0, double v0, const char* p1,
                   double v1) {
  DType t = is_float(x.dtype()) ? x.dtype() : DType::F32;
  return apply_op(op, {x}, {{"seed", int64_t(seed)}, {p0, v0}, {p1, v1}, {"dtype", std::string(dtype_name(t))}});
}
}  // namespace

Tensor rand_like(const Tensor& x, uint64_t seed, double low, double high) {
  if (!(low <= high)) user_error("rand_like: low ", low, " is greater than high ", high);
  return random_fill("uniform_like", x, seed, "low", low, "high", high);
}

Tensor randn_like(const Tensor& x, uint64_t seed, double mean, double std) {
  if (!(std >= 0)) user_error("randn_like: std must be non-negative, got ", std);
  return random_fill("normal_like", x, seed, "mean", mean, "std", std);
}

Tensor dropout(const Tensor& x, double p, uint64_t seed, bool training) {
  if (!(p >= 0.0 && p <= 1.0)) user_error("dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return x * 0.0;
  return where(rand_like(x, seed) < p, scalar(0.0, x.dtype()), x * (1.0 / (1.0 - p)));
}

Tensor operator-(const Tensor& x) { return neg(x); }

#define KILN_DEFINE_OPERATOR(sym, fn)                                        \
  Tensor operator sym(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  Tensor operator sym(const Tensor& a, double b) { return fn(a, b); }        \
  Tensor operator sym(double a, const Tensor& b) { return fn(a, b); }
KILN_DEFINE_OPERATOR(+, add)
KILN_DEFINE_OPERATOR(-, sub)
KILN_DEFINE_OPERATOR(*, mul)
KILN_DEFINE_OPERATOR(/, div)
KILN_DEFINE_OPERATOR(<, lt)
KILN_DEFINE_OPERATOR(<=, le)
KILN_DEFINE_OPERATOR(>, gt)
KILN_DEFINE_OPERATOR(>=, ge)
#undef KILN_DEFINE_OPERATOR

}  // namespace kiln
