// Reverse-mode rules of the built-in ops, written with ops so that a gradient is eager
// when the forward was eager and a graph when it was traced. One rule per differentiable
// op, grouped as the op families are; the registry attaches them (attach_vjp_rules).
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"
#include "ops/api.h"
#include "ops/transposed_conv.h"

namespace kiln {

namespace {

using Grads = std::vector<Tensor>;

Tensor zero_like_dtype(const Tensor& x) { return scalar(0.0, x.dtype()); }

// Sums a broadcast gradient back to `shape` (NumPy broadcasting in reverse).
Tensor sum_to(Tensor g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int lead = g.rank() - shape.rank();
  std::vector<int64_t> axes;
  for (int i = 0; i < g.rank(); ++i) {
    bool target_is_one = i >= lead && shape[i - lead].is_static() && shape[i - lead].size == 1;
    bool g_is_one = g.shape()[i].is_static() && g.shape()[i].size == 1;
    if (i < lead || (target_is_one && !g_is_one)) axes.push_back(i);
  }
  if (!axes.empty()) g = sum(g, axes, /*keepdim=*/true);
  for (int i = 0; i < lead; ++i) g = squeeze(g, 0);
  return g;
}

// The sizes to expand a kept-dims gradient to: x's static sizes, -1 elsewhere.
std::vector<int64_t> expand_sizes(const Tensor& x) {
  std::vector<int64_t> s;
  for (const Dim& d : x.shape().dims()) s.push_back(d.is_static() ? d.size : -1);
  return s;
}

std::vector<int64_t> reduced_axes(const Tensor& x, const Attrs& a) {
  std::vector<int64_t> axes = a.get_ints("axes");
  if (axes.empty()) {
    axes.resize(size_t(x.rank()));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& ax : axes) ax = normalize_axis(ax, x.rank(), "reduction");
  std::sort(axes.begin(), axes.end());
  return axes;
}

// A reduction's output (or its gradient) with the reduced axes put back as size 1.
Tensor with_kept_dims(Tensor g, const std::vector<int64_t>& axes, bool keepdim) {
  if (!keepdim)
    for (int64_t ax : axes) g = unsqueeze(g, ax);
  return g;
}

// Broadcast of a reduction's gradient over the reduced axes.
Tensor unreduce(const Tensor& g, const Tensor& x, const Attrs& a) {
  return expand(with_kept_dims(g, reduced_axes(x, a), a.get_bool("keepdim")), expand_sizes(x));
}

int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& axes, const char* op) {
  int64_t n = 1;
  for (int64_t ax : axes) {
    const Dim& d = x.shape()[int(ax)];
    if (!d.is_static()) user_error(op, ": the gradient of a mean over a dynamic dim needs static sizes, got ", x.meta().str());
    n *= d.size;
  }
  return n;
}

// Pointwise rules: g times the derivative, with x the input and y the output.
std::map<std::string, VjpFn> pointwise_rules() {
  auto unary = [](Tensor (*d)(const Tensor& x, const Tensor& y, const Tensor& g, const Attrs& a)) {
    return VjpFn([d](const VjpArgs& v) { return Grads{d(v.inputs[0], v.output, v.grad, v.attrs)}; });
  };
  std::map<std::string, VjpFn> r;
  r["sin"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return g * cos(x); });
  r["cos"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return -(g * sin(x)); });
  r["tan"] = unary([](const Tensor&, const Tensor& y, const Tensor& g, const Attrs&) { return g * (1.0 + y * y); });
  r["asin"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return g * rsqrt(1.0 - x * x); });
  r["acos"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return -(g * rsqrt(1.0 - x * x)); });
  r["atan"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return g / (1.0 + x * x); });
  r["asinh"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return g * rsqrt(x * x + 1.0); });
  r["acosh"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return g * rsqrt(x * x - 1.0); });
  r["atanh"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return g / (1.0 - x * x); });
  r["exp"] = unary([](const Tensor&, const Tensor& y, const Tensor& g, const Attrs&) { return g * y; });
  r["log"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) { return g / x; });
  r["abs"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) {
    Tensor zero = zero_like_dtype(x);
    return where(gt(x, zero), g, where(lt(x, zero), -g, zero_like_dtype(g)));
  });
  r["neg"] = unary([](const Tensor&, const Tensor&, const Tensor& g, const Attrs&) { return -g; });
  r["sqrt"] = unary([](const Tensor&, const Tensor& y, const Tensor& g, const Attrs&) { return g * 0.5 / y; });
  r["rsqrt"] = unary([](const Tensor&, const Tensor& y, const Tensor& g, const Attrs&) { return g * -0.5 * y * y * y; });
  r["tanh"] = unary([](const Tensor&, const Tensor& y, const Tensor& g, const Attrs&) { return g * (1.0 - y * y); });
  r["sigmoid"] = unary([](const Tensor&, const Tensor& y, const Tensor& g, const Attrs&) { return g * y * (1.0 - y); });
  r["relu"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) {
    return where(gt(x, zero_like_dtype(x)), g, zero_like_dtype(g));
  });
  r["erf"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) {
    return g * (2.0 / std::sqrt(M_PI)) * exp(-(x * x));
  });
  r["silu"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) {
    Tensor s = sigmoid(x);
    return g * s * (1.0 + x * (1.0 - s));
  });
  r["softplus"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs&) {
    return where(gt(x, 20.0), g, g * sigmoid(x));  // linear above the threshold
  });
  r["gelu"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs& a) {
    if (a.get_string("approximate") == "tanh") {
      const double k = 0.7978845608028654, c = 0.044715;
      Tensor t = tanh(k * (x + c * x * x * x));
      return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x * x));
    }
    Tensor cdf = 0.5 * (1.0 + erf(x * 0.7071067811865476));
    Tensor pdf = exp(-0.5 * x * x) * 0.3989422804014327;
    return g * (cdf + x * pdf);
  });
  r["leaky_relu"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs& a) {
    return where(gt(x, zero_like_dtype(x)), g, g * a.get_double("negative_slope"));
  });
  r["clamp"] = unary([](const Tensor& x, const Tensor&, const Tensor& g, const Attrs& a) {
    // Strictly inside, as PyTorch (2.15) and relu: no gradient at a bound.
    Tensor inside = scalar(1.0, DType::Bool);
    if (a.has("min")) inside = logical_and(inside, gt(x, a.get_double("min")));
    if (a.has("max")) inside = logical_and(inside, lt(x, a.get_double("max")));
    return where(inside, g, zero_like_dtype(g));
  });
  r["cast"] = [](const VjpArgs& v) {
    const Tensor& x = v.inputs[0];
    return Grads{is_float(x.dtype()) ? cast(v.grad, x.dtype()) : Tensor()};
  };
  r["where"] = [](const VjpArgs& v) {
    const Tensor &c = v.inputs[0], &a = v.inputs[1], &b = v.inputs[2];
    Tensor zero = zero_like_dtype(v.grad);
    return Grads{Tensor(), sum_to(where(c, v.grad, zero), a.shape()), sum_to(where(c, zero, v.grad), b.shape())};
  };
  auto binary = [](std::pair<Tensor, Tensor> (*d)(const Tensor& a, const Tensor& b, const Tensor& y, const Tensor& g)) {
    return VjpFn([d](const VjpArgs& v) {
      auto [ga, gb] = d(v.inputs[0], v.inputs[1], v.output, v.grad);
      return Grads{sum_to(ga, v.inputs[0].shape()), sum_to(gb, v.inputs[1].shape())};
    });
  };
  r["add"] = binary([](const Tensor&, const Tensor&, const Tensor&, const Tensor& g) { return std::pair{g, g}; });
  r["sub"] = binary([](const Tensor&, const Tensor&, const Tensor&, const Tensor& g) { return std::pair{g, -g}; });
  r["mul"] = binary([](const Tensor& a, const Tensor& b, const Tensor&, const Tensor& g) { return std::pair{g * b, g * a}; });
  r["div"] = binary([](const Tensor&, const Tensor& b, const Tensor& y, const Tensor& g) {
    return std::pair{g / b, -(g * y / b)};
  });
  r["pow"] = binary([](const Tensor& a, const Tensor& b, const Tensor& y, const Tensor& g) {
    // d/db is g * y * log(a), taken as 0 where a == 0 (PyTorch's convention).
    Tensor safe_log = where(eq(a, 0.0), zero_like_dtype(y), log(a));
    return std::pair{g * b * pow(a, b - 1.0), g * y * safe_log};
  });
  // Ties split the gradient evenly, as PyTorch does.
  auto select_rule = [](bool is_max) {
    return VjpFn([is_max](const VjpArgs& v) {
      const Tensor &a = v.inputs[0], &b = v.inputs[1];
      Tensor a_wins = cast(is_max ? gt(a, b) : lt(a, b), v.grad.dtype());
      Tensor tie = cast(eq(a, b), v.grad.dtype());
      Tensor share_a = a_wins + 0.5 * tie, share_b = (1.0 - a_wins - tie) + 0.5 * tie;
      return Grads{sum_to(v.grad * share_a, a.shape()), sum_to(v.grad * share_b, b.shape())};
    });
  };
  r["maximum"] = select_rule(true);
  r["minimum"] = select_rule(false);
  return r;
}

std::map<std::string, VjpFn> reduce_rules() {
  std::map<std::string, VjpFn> r;
  r["sum"] = [](const VjpArgs& v) { return Grads{unreduce(v.grad, v.inputs[0], v.attrs)}; };
  r["mean"] = [](const VjpArgs& v) {
    const Tensor& x = v.inputs[0];
    return Grads{unreduce(v.grad, x, v.attrs) / double(reduced_count(x, reduced_axes(x, v.attrs), "mean"))};
  };
  // max / min: to the positions equal to the result, split evenly between ties.
  auto extreme = [](const VjpArgs& v) {
    const Tensor& x = v.inputs[0];
    std::vector<int64_t> axes = reduced_axes(x, v.attrs);
    bool keep = v.attrs.get_bool("keepdim");
    Tensor hit = cast(eq(x, with_kept_dims(v.output, axes, keep)), x.dtype());
    Tensor ties = sum(hit, axes, /*keepdim=*/true);
    return Grads{hit * (with_kept_dims(v.grad, axes, keep) / ties)};
  };
  // prod: d prod / d x_i is the product of the others. Dividing prod by x_i is wrong where
  // x_i = 0, so count zeros per reduced group: none, the usual prod / x; one, only the zero
  // gets the product of the non-zeros; two or more, every derivative is zero.
  r["prod"] = [](const VjpArgs& v) {
    const Tensor& x = v.inputs[0];
    std::vector<int64_t> axes = reduced_axes(x, v.attrs);
    bool keep = v.attrs.get_bool("keepdim");
    Tensor is_zero = eq(x, 0.0);
    Tensor zeros = sum(cast(is_zero, x.dtype()), axes, /*keepdim=*/true);
    Tensor one = scalar(1.0, x.dtype()), zero = scalar(0.0, x.dtype());
    Tensor safe_x = where(is_zero, one, x);
    Tensor nonzero_prod = prod(safe_x, axes, /*keepdim=*/true);
    Tensor others = where(eq(zeros, 0.0), with_kept_dims(v.output, axes, keep) / safe_x,
                          where(logical_and(eq(zeros, 1.0), is_zero), nonzero_prod, zero));
    return Grads{others * with_kept_dims(v.grad, axes, keep)};
  };
  r["max"] = extreme;
  r["min"] = extreme;
  r["softmax"] = [](const VjpArgs& v) {
    const Tensor &y = v.output, &g = v.grad;
    int64_t axis = v.attrs.get_int("axis");
    return Grads{y * (g - sum(g * y, {axis}, true))};
  };
  r["log_softmax"] = [](const VjpArgs& v) {
    const Tensor &y = v.output, &g = v.grad;
    int64_t axis = v.attrs.get_int("axis");
    return Grads{g - exp(y) * sum(g, {axis}, true)};
  };
  // Over the trailing `dims` axes, with x̂ the normalized output and r = 1/σ:
  //   layer_norm: dx = r * (g - mean(g) - x̂ * mean(g * x̂));  rms_norm: dx = r * (g - x̂ * mean(g * x̂)).
  auto normalize_rule = [](bool centered) {
    return VjpFn([centered](const VjpArgs& v) {
      const Tensor &x = v.inputs[0], &y = v.output, &g = v.grad;
      const int64_t k = v.attrs.get_int("dims");
      std::vector<int64_t> axes;
      for (int64_t i = x.rank() - k; i < x.rank(); ++i) axes.push_back(i);
      const double eps = v.attrs.get_double("eps");
      Tensor centered_x = centered ? x - mean(x, axes, true) : x;
      Tensor r = rsqrt(mean(centered_x * centered_x, axes, true) + eps);
      Tensor inner = g - y * mean(g * y, axes, true);
      if (centered) inner = inner - mean(g, axes, true);
      return Grads{r * inner};
    });
  };
  r["layer_norm"] = normalize_rule(true);
  r["rms_norm"] = normalize_rule(false);
  return r;
}

// The permutation that undoes `dims`.
std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& dims, int rank) {
  std::vector<int64_t> inv(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inv[size_t(normalize_axis(dims[i], rank, "permute"))] = int64_t(i);
  return inv;
}

// Moves axis `from` of x to position `to`.
Tensor move_axis(const Tensor& x, int from, int to) {
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i)
    if (i != from) dims.push_back(i);
  dims.insert(dims.begin() + to, from);
  return permute(x, dims);
}

std::map<std::string, VjpFn> shape_rules() {
  std::map<std::string, VjpFn> r;
  r["reshape"] = [](const VjpArgs& v) { return Grads{reshape(v.grad, v.inputs[0].sizes())}; };
  r["permute"] = [](const VjpArgs& v) {
    return Grads{permute(v.grad, inverse_permutation(v.attrs.get_ints("dims"), v.inputs[0].rank()))};
  };
  r["expand"] = [](const VjpArgs& v) { return Grads{sum_to(v.grad, v.inputs[0].shape())}; };
  // slice: the gradient lands on the picked entries; with a step, interleave zeros first.
  r["slice"] = [](const VjpArgs& v) {
    const Tensor& x = v.inputs[0];
    const int axis = normalize_axis(v.attrs.get_int("axis"), x.rank(), "slice");
    const int64_t n = x.shape()[axis].size, k = v.output.shape()[axis].size;
    // One picked element: the step does not matter (a huge one would pad past 2^31).
    const int64_t step = k == 1 ? 1 : v.attrs.get_int("step");
    int64_t start = v.attrs.get_int("start");
    if (start < 0) start += n;
    start = std::clamp<int64_t>(start, 0, n);
    Tensor g = v.grad;
    if (k == 0) return Grads{expand(scalar(0.0, g.dtype()), x.sizes())};
    if (step > 1) {  // [.., k, ..] -> [.., k, step, ..] zero-padded -> [.., k * step, ..]
      g = unsqueeze(g, axis + 1);
      std::vector<int64_t> pads(size_t(2 * (g.rank() - (axis + 1))), 0);
      pads[pads.size() - 1] = step - 1;
      g = pad(g, pads);
      std::vector<int64_t> sizes = g.sizes();
      sizes[size_t(axis)] *= step;
      sizes.erase(sizes.begin() + axis + 1);
      g = reshape(g, sizes);
    }
    std::vector<int64_t> pads(size_t(2 * (x.rank() - axis)), 0);
    const int64_t covered = g.shape()[axis].size;
    pads[pads.size() - 2] = start;
    pads[pads.size() - 1] = n - start - covered;  // negative: crop the step padding past the end
    return Grads{pad(g, pads)};
  };
  r["concat"] = [](const VjpArgs& v) {
    const int axis = normalize_axis(v.attrs.get_int("axis"), v.output.rank(), "concat");
    Grads out;
    int64_t start = 0;
    for (const Tensor& x : v.inputs) {
      int64_t n = x.shape()[axis].size;
      out.push_back(slice(v.grad, axis, start, start + n));
      start += n;
    }
    return out;
  };
  // pad with the pads negated crops back, and crops become zero padding.
  r["pad"] = [](const VjpArgs& v) {
    std::vector<int64_t> pads = v.attrs.get_ints("pads");
    for (int64_t& p : pads) p = -p;
    return Grads{pad(v.grad, pads)};
  };
  return r;
}

std::map<std::string, VjpFn> linalg_rules() {
  std::map<std::string, VjpFn> r;
  r["matmul"] = [](const VjpArgs& v) {
    const Tensor &a = v.inputs[0], &b = v.inputs[1], &g = v.grad;
    Grads out(2);
    if (v.needs(0)) out[0] = sum_to(matmul(g, transpose(b, -1, -2)), a.shape());
    if (v.needs(1)) out[1] = sum_to(matmul(transpose(a, -1, -2), g), b.shape());
    return out;
  };
  return r;
}

std::map<std::string, VjpFn> index_rules() {
  std::map<std::string, VjpFn> r;
  // The gradient of a pick is a scatter of g back to where it was picked from (repeated
  // indices accumulate); entries never picked get exactly 0, whatever g holds.
  auto scattered = [](const VjpArgs& v, bool full) {
    const Tensor &x = v.inputs[0], &index = v.inputs[1], &g = v.grad;
    std::vector<int64_t> shape;
    for (int d = 0; d < x.rank(); ++d) shape.push_back(x.shape()[d].is_static() ? x.shape()[d].size : -1);
    return Grads{apply_op("scatter_add", {g, index}, {{"axis", v.attrs.get_int("axis")}, {"shape", shape}, {"full", full}}),
                 Tensor()};
  };
  r["index_select"] = [scattered](const VjpArgs& v) { return scattered(v, false); };
  r["gather"] = [scattered](const VjpArgs& v) { return scattered(v, true); };
  // scatter_add's source: g read back where each element went.
  r["scatter_add"] = [](const VjpArgs& v) {
    const int64_t axis = v.attrs.get_int("axis");
    const Tensor& index = v.inputs[1];
    return Grads{v.attrs.get_bool("full") ? gather(v.grad, axis, index) : index_select(v.grad, axis, index), Tensor()};
  };
  return r;
}

// ---- conv2d: the input gradient is a transposed convolution, the weight gradient a
// convolution of the input with the output gradient, both written with conv2d ----------

// One group: x [N, C, H, W], w [O, C, KH, KW], g [N, O, OH, OW]. Only the gradients asked
// for are computed.
std::pair<Tensor, Tensor> conv2d_group_grads(const Tensor& x, const Tensor& w, const Tensor& g,
                                             const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                                             const std::vector<int64_t>& d, bool want_x, bool want_w) {
  const int64_t H = x.shape()[2].size, W = x.shape()[3].size, KH = w.shape()[2].size, KW = w.shape()[3].size;
  const int64_t OH = g.shape()[2].size, OW = g.shape()[3].size;
  Tensor gx, gw;
  if (want_x) {
    // Input: the output gradient through the transposed convolution, without the padding's
    // rows and columns, with the input positions no output read (at the end) added.
    const int64_t extra_h = H - ((OH - 1) * s[0] + 1 + d[0] * (KH - 1) - 2 * p[0]);
    const int64_t extra_w = W - ((OW - 1) * s[1] + 1 + d[1] * (KW - 1) - 2 * p[1]);
    gx = detail::transposed_conv2d(g, w, s, d, p, {extra_h - p[0], extra_w - p[1]});
  }
  // Weight: correlate the input with the output gradient, batch as the contraction.
  if (want_w) {
    Tensor r = conv2d(permute(x, {1, 0, 2, 3}), permute(g, {1, 0, 2, 3}), {}, d, p, s);  // [C, O, KH', KW']
    gw = permute(slice(slice(r, 2, 0, KH), 3, 0, KW), {1, 0, 2, 3});
  }
  return {gx, gw};
}

// The windows of a 2-D pooling op over x [N, C, H, W]: output (oh, ow) reads x at
// (oh * s - p + kh * d, ow * s - p + kw * d) for each kernel offset (kh, kw).
struct PoolWindows {
  std::vector<int64_t> k, s, p, d;
  int64_t H, W, OH, OW;
  int64_t eh, ew;  // extra padding at the end, for ceil_mode's last windows

  PoolWindows(const VjpArgs& v, const char* op)
      : k(v.attrs.get_ints("kernel")),
        s(v.attrs.get_ints("stride")),
        p(v.attrs.get_ints("padding")),
        d(v.attrs.has("dilation") ? v.attrs.get_ints("dilation") : std::vector<int64_t>{1, 1}) {
    const Tensor &x = v.inputs[0], &y = v.output;
    if (!x.shape().is_static()) user_error(op, ": gradients need static sizes, got ", x.meta().str());
    H = x.shape()[2].size, W = x.shape()[3].size, OH = y.shape()[2].size, OW = y.shape()[3].size;
    eh = std::max<int64_t>(0, (OH - 1) * s[0] + (k[0] - 1) * d[0] + 1 - (H + 2 * p[0]));
    ew = std::max<int64_t>(0, (OW - 1) * s[1] + (k[1] - 1) * d[1] + 1 - (W + 2 * p[1]));
  }
  std::vector<int64_t> pads() const { return {p[1], p[1] + ew, p[0], p[0] + eh}; }
  // The values of padded `t` that window offset (kh, kw) reads, [N, C, OH, OW].
  Tensor window(const Tensor& t, int64_t kh, int64_t kw) const {
    Tensor r = slice(t, 2, kh * d[0], kh * d[0] + (OH - 1) * s[0] + 1, s[0]);
    return slice(r, 3, kw * d[1], kw * d[1] + (OW - 1) * s[1] + 1, s[1]);
  }
  // The gradient of x: part(kh, kw) [N, C, OH, OW] put back where offset (kh, kw) read,
  // summed over the offsets; what lands on padding is dropped.
  Tensor scatter(const std::function<Tensor(int64_t, int64_t)>& part) const {
    const int64_t HP = H + 2 * p[0] + eh, WP = W + 2 * p[1] + ew;
    const int64_t rows = (OH - 1) * s[0] + 1, cols = (OW - 1) * s[1] + 1;
    Tensor gxp;
    for (int64_t kh = 0; kh < k[0]; ++kh) {
      for (int64_t kw = 0; kw < k[1]; ++kw) {
        Tensor t = detail::dilate_axis(detail::dilate_axis(part(kh, kw), 2, s[0]), 3, s[1]);
        t = pad(t, {kw * d[1], WP - kw * d[1] - cols, kh * d[0], HP - kh * d[0] - rows});
        gxp = gxp.defined() ? gxp + t : t;
      }
    }
    return slice(slice(gxp, 2, p[0], p[0] + H), 3, p[1], p[1] + W);
  }
};

std::map<std::string, VjpFn> conv_rules() {
  std::map<std::string, VjpFn> r;
  r["conv2d"] = [](const VjpArgs& v) {
    const Tensor &x = v.inputs[0], &w = v.inputs[1], &g = v.grad;
    for (const Tensor* t : {&x, &w})
      if (!t->shape().is_static()) user_error("conv2d: gradients need static sizes, got ", t->meta().str());
    const int64_t G = v.attrs.get_int("groups");
    const std::vector<int64_t> s = v.attrs.get_ints("stride"), p = v.attrs.get_ints("padding"), d = v.attrs.get_ints("dilation");
    if (G == 1) {
      auto [gx, gw] = conv2d_group_grads(x, w, g, s, p, d, v.needs(0), v.needs(1));
      return Grads{gx, gw};
    }
    std::vector<Tensor> xs = split(x, x.shape()[1].size / G, 1), ws = split(w, w.shape()[0].size / G, 0),
                        gs = split(g, g.shape()[1].size / G, 1), gxs, gws;
    for (int64_t k = 0; k < G; ++k) {
      auto [gx, gw] = conv2d_group_grads(xs[size_t(k)], ws[size_t(k)], gs[size_t(k)], s, p, d, v.needs(0), v.needs(1));
      gxs.push_back(gx);
      gws.push_back(gw);
    }
    return Grads{v.needs(0) ? concat(gxs, 1) : Tensor(), v.needs(1) ? concat(gws, 0) : Tensor()};
  };
  // max_pool2d: as PyTorch, each window's gradient goes to one position, the one its
  // kernel's index points at: the first maximum in row-major order, or the last NaN (a
  // NaN output), never a padding position.
  r["max_pool2d"] = [](const VjpArgs& v) {
    const Tensor &x = v.inputs[0], &y = v.output, &g = v.grad;
    const PoolWindows w(v, "max_pool2d");
    Tensor xp = pad(x, w.pads(), -INFINITY);
    Tensor valid = pad(logical_or(eq(x, x), ne(x, x)), w.pads(), 0.0);  // all true inside
    const int64_t n = w.k[0] * w.k[1];
    std::vector<Tensor> is_max(static_cast<size_t>(n)), is_nan(is_max), hits(is_max);
    for (int64_t i = 0; i < n; ++i) {
      Tensor e = w.window(xp, i / w.k[1], i % w.k[1]), ok = w.window(valid, i / w.k[1], i % w.k[1]);
      is_max[size_t(i)] = logical_and(ok, eq(e, y));
      is_nan[size_t(i)] = logical_and(ok, ne(e, e));
    }
    Tensor taken = ne(y, y);  // NaN windows take their last NaN, the others their first maximum
    Tensor nan_taken = logical_not(taken);
    for (int64_t i = 0; i < n; ++i) {
      hits[size_t(i)] = logical_and(is_max[size_t(i)], logical_not(taken));
      taken = logical_or(taken, hits[size_t(i)]);
    }
    for (int64_t i = n - 1; i >= 0; --i) {
      Tensor h = logical_and(is_nan[size_t(i)], logical_not(nan_taken));
      hits[size_t(i)] = logical_or(hits[size_t(i)], h);
      nan_taken = logical_or(nan_taken, h);
    }
    // A select, not a product: a NaN or inf gradient stays in its own window.
    const Tensor zero = scalar(0.0, g.dtype());
    return Grads{w.scatter([&](int64_t kh, int64_t kw) { return where(hits[size_t(kh * w.k[1] + kw)], g, zero); })};
  };
  // avg_pool2d: each window's gradient, divided by PyTorch's divisor (the window clipped to
  // the padded input, or to the input itself), goes back to every input position it read.
  // A rule rather than Halide's adjoint, which cannot stop at a max_pool2d input.
  r["avg_pool2d"] = [](const VjpArgs& v) {
    const Tensor& g = v.grad;
    const PoolWindows w(v, "avg_pool2d");
    const bool include_pad = v.attrs.get_bool("count_include_pad");
    std::vector<double> divisor;
    for (int64_t oh = 0; oh < w.OH; ++oh) {
      for (int64_t ow = 0; ow < w.OW; ++ow) {
        const int64_t hs = oh * w.s[0] - w.p[0], ws = ow * w.s[1] - w.p[1];
        const int64_t he = std::min(hs + w.k[0], w.H + w.p[0]), we = std::min(ws + w.k[1], w.W + w.p[1]);
        divisor.push_back(include_pad ? double((he - hs) * (we - ws))
                                      : double((std::min(he, w.H) - std::max<int64_t>(hs, 0)) *
                                               (std::min(we, w.W) - std::max<int64_t>(ws, 0))));
      }
    }
    const Tensor share = g / from_vector(divisor, Shape({w.OH, w.OW}), g.dtype());
    return Grads{w.scatter([&](int64_t, int64_t) { return share; })};
  };
  // adaptive_avg_pool2d: output cell (i, j) averages the bin of rows [i*H/OH, ceil((i+1)*H/OH))
  // and the like for columns; each input position gets g / area from every bin holding it.
  // Done per axis, a bin's share g / width gathered into each column (then row) for the
  // k-th bin holding it, k below the most bins any position is in: gathers and selects, so
  // an inf or NaN gradient stays in its own bin (a product with a 0/1 matrix would not).
  r["adaptive_avg_pool2d"] = [](const VjpArgs& v) {
    const Tensor& x = v.inputs[0];
    if (!x.shape().is_static()) user_error("adaptive_avg_pool2d: gradients need static sizes, got ", x.meta().str());
    Tensor g = v.grad;
    for (int axis : {3, 2}) {
      const int64_t in = x.shape()[axis].size, out = g.shape()[axis].size;
      std::vector<std::vector<int64_t>> holding(static_cast<size_t>(in));  // the bins each position is in
      std::vector<double> width(static_cast<size_t>(out));
      for (int64_t b = 0; b < out; ++b) {
        const int64_t start = (b * in) / out, end = ((b + 1) * in + out - 1) / out;
        width[size_t(b)] = double(end - start);
        for (int64_t p = start; p < end; ++p) holding[size_t(p)].push_back(b);
      }
      size_t most = 0;
      for (const auto& h : holding) most = std::max(most, h.size());
      const Shape along = axis == 3 ? Shape({out}) : Shape({out, 1});
      const Tensor share = g / from_vector(width, along, g.dtype());
      const Tensor zero = scalar(0.0, g.dtype());
      Tensor sum;
      for (size_t k = 0; k < most; ++k) {
        std::vector<int64_t> bin(static_cast<size_t>(in));
        std::vector<double> held(static_cast<size_t>(in));
        for (int64_t p = 0; p < in; ++p) {
          held[size_t(p)] = k < holding[size_t(p)].size();
          bin[size_t(p)] = held[size_t(p)] ? holding[size_t(p)][k] : 0;
        }
        const Tensor mask = from_vector(held, axis == 3 ? Shape({in}) : Shape({in, 1}), DType::Bool);
        Tensor part = where(mask, index_select(share, axis, from_vector(bin, Shape({in}))), zero);
        sum = sum.defined() ? sum + part : part;
      }
      g = sum;
    }
    return Grads{g};
  };
  return r;
}

}  // namespace

void attach_vjp_rules(std::vector<OpDef>& ops) {
  std::map<std::string, VjpFn> rules;
  for (auto family : {pointwise_rules, reduce_rules, shape_rules, linalg_rules, index_rules, conv_rules})
    rules.merge(family());
  // Piecewise constant, integer-valued or random: the gradient is zero where defined.
  // floor, ceil and round are differentiable with a zero gradient, as in PyTorch: their
  // outputs need grad, and backward() reaches the input with zeros.
  for (const char* name : {"floor", "ceil", "round"}) {
    rules[name] = [](const VjpArgs& v) {
      const Tensor& x = v.inputs[0];
      return Grads{where(eq(x, x), zero_like_dtype(x), zero_like_dtype(x))};  // zeros shaped like x
    };
  }
  static const std::set<std::string> zero = {"argmax", "one_hot", "arange",
                                             "uniform_like", "normal_like", "scalar",
                                             // bool outputs: comparisons and logic
                                             "eq", "ne", "lt", "le", "gt", "ge",
                                             "logical_and", "logical_or", "logical_not"};
  // Ops whose gradients Halide derives from their algorithms (checked against finite
  // differences in tests/autodiff/grad_test.cpp); none today. The pooling ops have rules:
  // Halide cannot differentiate a max reduction, nor stop at one upstream.
  static const std::set<std::string> halide_derived = {};
  for (OpDef& d : ops) {
    if (auto it = rules.find(d.name); it != rules.end()) d.vjp = it->second;
    if (zero.count(d.name)) d.zero_gradient = true;
    if (halide_derived.count(d.name)) d.halide_adjoint_fallback = true;
  }
}

}  // namespace kiln
