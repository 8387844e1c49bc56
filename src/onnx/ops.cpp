// One converter per ONNX operator, each written with kiln's public ops (ops/api.h), so
// an imported model runs eager, compiled, differentiated and ahead of time like any other.
// Semantics follow the ONNX operator documents for opsets 7 and newer.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "onnx/internal.h"

namespace kiln::onnx {

namespace {

using Outs = std::vector<Tensor>;

int rank_of(const Tensor& t) { return t.shape().rank(); }
int64_t dim(const Tensor& t, int d) { return t.shape()[d].size; }
std::vector<int64_t> sizes(const Tensor& t) {
  std::vector<int64_t> s;
  for (int d = 0; d < rank_of(t); ++d) s.push_back(dim(t, d));
  return s;
}
int64_t axis_in(const NodeContext& c, int64_t axis, int rank) {
  if (axis < -rank || axis >= std::max(rank, 1)) {
    c.invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}
Tensor i64(const std::vector<int64_t>& v, const std::vector<int64_t>& shape) { return from_vector(v, Shape(shape)); }
Tensor scalar_like(double v, const Tensor& t) { return scalar(v, t.dtype()); }

// ---- elementwise ---------------------------------------------------------------------

Converter unary(Tensor (*f)(const Tensor&)) {
  return [f](const NodeContext& c) { return Outs{f(c.in(0))}; };
}
// Before opset 7, binary ops broadcast only with broadcast = 1, b's dims then lining up
// with a's from `axis` (default: a's last dims).
Tensor legacy_broadcast(const NodeContext& c, const Tensor& a, const Tensor& b) {
  if (c.opset >= 7 || !c.attrs.i("broadcast", 0) || !c.attrs.has("axis")) return b;
  const int64_t axis = axis_in(c, c.attrs.i("axis"), rank_of(a));
  std::vector<int64_t> shape(static_cast<size_t>(axis), 1);
  for (int64_t d : sizes(b)) shape.push_back(d);
  while (int(shape.size()) < rank_of(a)) shape.push_back(1);
  return reshape(b, shape);
}

Converter binary(Tensor (*f)(const Tensor&, const Tensor&)) {
  return [f](const NodeContext& c) { return Outs{f(c.in(0), legacy_broadcast(c, c.in(0), c.in(1)))}; };
}
Converter variadic(Tensor (*f)(const Tensor&, const Tensor&), bool mean = false) {
  return [f, mean](const NodeContext& c) {
    Tensor acc = c.in(0);
    size_t n = 1;
    for (size_t k = 1; k < c.inputs.size(); ++k) {
      if (c.has(k)) acc = f(acc, c.in(k)), ++n;
    }
    return Outs{mean ? acc / double(n) : acc};
  };
}

Outs clip(const NodeContext& c) {
  Tensor x = c.in(0);
  if (c.opset < 11) {
    return {clamp(x, double(c.attrs.f("min", -std::numeric_limits<float>::max())),
                  double(c.attrs.f("max", std::numeric_limits<float>::max())))};
  }
  if (c.has(1)) x = maximum(x, cast(c.in(1), x.dtype()));
  if (c.has(2)) x = minimum(x, cast(c.in(2), x.dtype()));
  return {x};
}

Outs cast_op(const NodeContext& c) {
  return {cast(c.in(0), dtype_from_onnx(int32_t(c.attrs.i("to")), node_name(c.node)))};
}

// ---- reductions ----------------------------------------------------------------------

// Axes from the attribute (older opsets) or the second input (ReduceSum from 13, the
// others from 18); nullopt: the node reduces nothing (noop_with_empty_axes).
std::optional<std::vector<int64_t>> reduce_axes(const NodeContext& c) {
  std::vector<int64_t> axes = c.has(1) ? c.ints(1) : c.attrs.ints("axes");
  if (axes.empty() && c.attrs.i("noop_with_empty_axes", 0)) return std::nullopt;
  for (int64_t& a : axes) a = axis_in(c, a, rank_of(c.in(0)));
  return axes;
}

Converter reduction(const std::function<Tensor(const Tensor&, const std::vector<int64_t>&, bool)>& f) {
  return [f](const NodeContext& c) {
    const Tensor& x = c.in(0);
    const auto axes = reduce_axes(c);
    if (!axes) return Outs{x};
    return Outs{f(x, *axes, c.attrs.i("keepdims", 1) != 0)};
  };
}

Converter arg_reduction(bool is_max) {
  return [is_max](const NodeContext& c) {
    const Tensor& x = c.in(0);
    const int64_t axis = axis_in(c, c.attrs.i("axis", 0), rank_of(x));
    const bool keep = c.attrs.i("keepdims", 1) != 0;
    const Tensor v = is_max ? x : neg(x);
    if (!c.attrs.i("select_last_index", 0)) return Outs{argmax(v, axis, keep)};
    // The last maximum: the first of the axis reversed, counted from the end.
    const int64_t n = dim(x, int(axis));
    std::vector<int64_t> reversed;
    for (int64_t i = n - 1; i >= 0; --i) reversed.push_back(i);
    return Outs{(argmax(index_select(v, axis, i64(reversed, {n})), axis, keep) * -1.0) + double(n - 1)};
  };
}

// Softmax and LogSoftmax: over one axis from opset 13; before, over the input flattened
// to 2-D at `axis` (default 1).
Converter softmax_like(bool log) {
  return [log](const NodeContext& c) {
    const Tensor& x = c.in(0);
    const int r = rank_of(x);
    auto f = [log](const Tensor& t, int64_t a) { return log ? log_softmax(t, a) : softmax(t, a); };
    if (c.opset >= 13) return Outs{f(x, axis_in(c, c.attrs.i("axis", -1), r))};
    const int64_t axis = axis_in(c, c.attrs.i("axis", 1), r);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < r; ++d) (d < axis ? outer : inner) *= dim(x, d);
    return Outs{reshape(f(reshape(x, {outer, inner}), 1), sizes(x))};
  };
}

// ---- shapes --------------------------------------------------------------------------

Outs shape_op(const NodeContext& c) {
  const std::vector<int64_t> s = sizes(c.in(0));
  const int r = int(s.size());
  auto clamp_axis = [r](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + r : a, 0, r); };
  const int64_t start = clamp_axis(c.attrs.i("start", 0)), end = clamp_axis(c.attrs.i("end", r));
  std::vector<int64_t> v(s.begin() + start, s.begin() + std::max(start, end));
  return {i64(v, {int64_t(v.size())})};
}

Outs reshape_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> shape = c.opset >= 5 ? c.ints(1) : c.attrs.ints("shape");
  const bool allowzero = c.attrs.i("allowzero", 0) != 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allowzero) {
      if (int(d) >= rank_of(x)) c.invalid("a 0 in the shape copies a dim the input lacks");
      shape[d] = dim(x, int(d));
    }
  }
  return {reshape(x, shape)};
}

Outs flatten_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const int r = rank_of(x);
  int64_t axis = c.attrs.i("axis", 1);
  if (axis < -r || axis > r) c.invalid("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < r; ++d) (d < axis ? outer : inner) *= dim(x, d);
  return {reshape(x, {outer, inner})};
}

Outs transpose_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> perm(static_cast<size_t>(rank_of(x)), 0);
  std::iota(perm.rbegin(), perm.rend(), 0);
  return {permute(x, c.attrs.ints("perm", perm))};
}

std::vector<int64_t> axes_of(const NodeContext& c, int opset_input, int rank) {
  std::vector<int64_t> axes = c.opset >= opset_input ? (c.has(1) ? c.ints(1) : std::vector<int64_t>{})
                                                     : c.attrs.ints("axes");
  for (int64_t& a : axes) a = axis_in(c, a, rank);
  std::sort(axes.begin(), axes.end());
  return axes;
}

Outs squeeze_op(const NodeContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> axes = axes_of(c, 13, rank_of(x));
  if (axes.empty()) {
    for (int d = 0; d < rank_of(x); ++d) {
      if (dim(x, d) == 1) axes.push_back(d);
    }
  }
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    if (dim(x, int(*it)) != 1) c.invalid("cannot squeeze axis " + std::to_string(*it) + " of size " + std::to_string(dim(x, int(*it))));
    x = squeeze(x, *it);
  }
  return {x};
}

Outs unsqueeze_op(const NodeContext& c) {
  Tensor x = c.in(0);
  const std::vector<int64_t> raw = c.opset >= 13 ? c.ints(1) : c.attrs.ints("axes");
  const int out_rank = rank_of(x) + int(raw.size());
  std::vector<int64_t> axes;
  for (int64_t a : raw) axes.push_back(axis_in(c, a, out_rank));
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) x = unsqueeze(x, a);
  return {x};
}

Outs concat_op(const NodeContext& c) {
  std::vector<Tensor> xs = {c.in(0)};  // at least one (libFuzzer: a Concat of none read xs[0])
  for (size_t k = 1; k < c.inputs.size(); ++k) xs.push_back(c.in(k));
  return {concat(xs, axis_in(c, c.attrs.i("axis"), rank_of(xs[0])))};
}

Outs slice_op(const NodeContext& c) {
  Tensor x = c.in(0);
  const int r = rank_of(x);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.attrs.ints("starts"), ends = c.attrs.ints("ends"), axes = c.attrs.ints("axes");
  } else {
    starts = c.ints(1), ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    c.invalid("starts, ends, axes and steps must have one entry per sliced axis");
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = axis_in(c, axes[i], r), n = dim(x, int(a)), step = steps[i];
    if (step == 0) c.invalid("a step of 0");
    // ONNX clamps to the dim (to [-1, n - 1] for a negative step); kiln's slice takes
    // Python's bounds, which agree once clamped.
    auto clampi = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += n;
      return std::clamp(v, lo, hi);
    };
    int64_t s, e;
    if (step > 0) {
      s = clampi(starts[i], 0, n), e = clampi(ends[i], 0, n);
    } else {
      s = clampi(starts[i], -1, n - 1), e = ends[i] < -n ? -1 : clampi(ends[i], -1, n - 1);
    }
    if (step > 0) {
      x = slice(x, a, s, std::max(s, e), step);
    } else {
      // Reversed: the elements s, s + step, ... above e.
      const int64_t count = s > e ? (s - e - step - 1) / -step : 0;
      if (count == 0) {
        x = slice(x, a, 0, 0, 1);
      } else {
        std::vector<int64_t> idx;
        for (int64_t k = 0; k < count; ++k) idx.push_back(s + k * step);
        x = index_select(x, a, i64(idx, {count}));
      }
    }
  }
  return {x};
}

// Negative indices count from the end of a dim of `n`.
Tensor wrap_indices(const Tensor& idx, int64_t n) {
  const Tensor i = cast(idx, DType::I64);
  return where(lt(i, 0.0), i + double(n), i);
}

Outs gather_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& idx = c.in(1);
  if (rank_of(x) == 0) c.invalid("Gather reads a tensor of rank >= 1, not a scalar");
  const int64_t axis = axis_in(c, c.attrs.i("axis", 0), rank_of(x));
  std::vector<int64_t> shape;
  for (int d = 0; d < axis; ++d) shape.push_back(dim(x, d));
  for (int64_t s : sizes(idx)) shape.push_back(s);
  for (int d = int(axis) + 1; d < rank_of(x); ++d) shape.push_back(dim(x, d));
  const Tensor flat = reshape(wrap_indices(idx, dim(x, int(axis))), {-1});
  return {reshape(index_select(x, axis, flat), shape)};
}

Outs gather_elements_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  if (rank_of(x) == 0) c.invalid("GatherElements reads a tensor of rank >= 1, not a scalar");
  const int64_t axis = axis_in(c, c.attrs.i("axis", 0), rank_of(x));
  return {gather(x, axis, wrap_indices(c.in(1), dim(x, int(axis))))};
}

std::vector<int64_t> broadcast_shapes(const NodeContext& c, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) c.invalid("shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Outs expand_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  return {expand(x, broadcast_shapes(c, sizes(x), c.ints(1)))};
}

Outs tile_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> reps = c.ints(1);
  if (int(reps.size()) != rank_of(x)) c.invalid("repeats needs one entry per dim");
  std::vector<int64_t> spread, expanded, out;
  for (int d = 0; d < rank_of(x); ++d) {
    spread.insert(spread.end(), {1, dim(x, d)});
    expanded.insert(expanded.end(), {reps[size_t(d)], dim(x, d)});
    out.push_back(reps[size_t(d)] * dim(x, d));
  }
  return {reshape(expand(reshape(x, spread), expanded), out)};
}

Outs split_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = axis_in(c, c.attrs.i("axis", 0), rank_of(x));
  std::vector<int64_t> parts = c.opset >= 13 ? (c.has(1) ? c.ints(1) : std::vector<int64_t>{}) : c.attrs.ints("split");
  const int64_t n = dim(x, int(axis));
  if (parts.empty()) {
    const int64_t k = c.attrs.i("num_outputs", c.node.output_size());
    const int64_t each = (n + k - 1) / k;
    for (int64_t i = 0; i < k; ++i) parts.push_back(std::max<int64_t>(0, std::min(each, n - i * each)));
  }
  return split(x, parts, axis);
}

Outs constant_op(const NodeContext& c) {
  const NodeAttrs& a = c.attrs;
  if (a.has("value")) return {tensor_from_proto(a.t("value"), c.model_dir, node_name(c.node))};
  if (a.has("value_float")) return {scalar(a.f("value_float", 0), DType::F32)};
  if (a.has("value_int")) return {i64({a.i("value_int")}, {})};
  if (a.has("value_floats")) {
    const std::vector<float> v = a.floats("value_floats");
    return {from_vector(v, Shape({int64_t(v.size())}))};
  }
  if (a.has("value_ints")) {
    const std::vector<int64_t> v = a.ints("value_ints");
    return {i64(v, {int64_t(v.size())})};
  }
  c.unsupported("only tensor, float(s) and int(s) values are supported (not strings or sparse tensors)");
}

Outs constant_of_shape_op(const NodeContext& c) {
  std::vector<int64_t> shape = c.ints(0);
  Tensor v = c.attrs.has("value") ? tensor_from_proto(c.attrs.t("value"), c.model_dir, node_name(c.node))
                                  : scalar(0.0, DType::F32);
  return {full(Shape(shape), v.to_doubles().at(0), v.dtype())};
}

Outs range_op(const NodeContext& c) {
  const double start = c.doubles(0).at(0), limit = c.doubles(1).at(0), delta = c.doubles(2).at(0);
  if (delta == 0) c.invalid("a delta of 0");
  const int64_t n = std::max<int64_t>(0, int64_t(std::ceil((limit - start) / delta)));
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(start + double(i) * delta);
  return {from_vector(v, Shape({n}), c.in(0).dtype())};
}

Outs dropout_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  // Training with a ratio of 0 drops nothing; any other ratio draws from a generator
  // ONNX does not pin down.
  const double ratio = c.opset >= 12 ? (c.has(1) ? c.doubles(1).at(0) : 0.5) : c.attrs.f("ratio", 0.5f);
  if (c.has(2) && c.doubles(2).at(0) != 0 && ratio != 0) {
    c.unsupported("training_mode = true with a ratio above 0 is not supported (inference only)");
  }
  return {x, full(x.shape(), 1.0, DType::Bool)};
}

// Pad's reflect, edge and wrap modes: each padded axis is an index_select of positions
// computed from the static size (a negative pad crops).
Tensor pad_by_index(const NodeContext& c, Tensor x, const std::vector<int64_t>& axes, const std::vector<int64_t>& pads,
                    const std::string& mode) {
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t n = dim(x, int(axes[i])), begin = pads[i], end = pads[i + axes.size()];
    if (begin == 0 && end == 0) continue;
    if (n == 0) c.invalid("mode '" + mode + "' cannot pad an empty axis");
    if (mode == "reflect" && (begin >= n || end >= n) && n > 1) {
      c.invalid("reflect pads of " + std::to_string(begin) + " and " + std::to_string(end) +
                " need an axis longer than both, not " + std::to_string(n));
    }
    std::vector<int64_t> index;
    for (int64_t k = -begin; k < n + end; ++k) {
      int64_t j = k;
      if (mode == "edge") j = std::clamp<int64_t>(k, 0, n - 1);
      else if (mode == "wrap") j = ((k % n) + n) % n;
      else j = n == 1 ? 0 : k < 0 ? -k : k >= n ? 2 * (n - 1) - k : k;
      index.push_back(j);
    }
    x = index_select(x, axes[i], i64(index, {int64_t(index.size())}));
  }
  return x;
}

Outs pad_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const std::string mode = c.attrs.s("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    c.invalid("mode '" + mode + "' is not one of constant, reflect, edge, wrap");
  }
  const int r = rank_of(x);
  std::vector<int64_t> pads = c.opset >= 11 ? c.ints(1) : c.attrs.ints(c.opset >= 2 ? "pads" : "paddings");
  double value = c.opset >= 11 ? (c.has(2) ? c.doubles(2).at(0) : 0.0) : double(c.attrs.f("value", 0));
  std::vector<int64_t> axes(static_cast<size_t>(r), 0);
  std::iota(axes.begin(), axes.end(), 0);
  if (c.has(3)) {
    axes = c.ints(3);
    for (int64_t& a : axes) a = axis_in(c, a, r);
  }
  if (pads.size() != 2 * axes.size()) c.invalid("pads needs a begin and an end per axis");
  if (mode != "constant") return {pad_by_index(c, x, axes, pads, mode)};
  // ONNX: all begins, then all ends; kiln (PyTorch): {begin, end} from the last dim.
  std::vector<int64_t> full_pads(static_cast<size_t>(2 * r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t k = size_t(r - 1 - axes[i]);
    full_pads[2 * k] = pads[i], full_pads[2 * k + 1] = pads[i + axes.size()];
  }
  return {pad(x, full_pads, value)};
}

// Resize (opset 10+) and Upsample: separable, one resized axis at a time, as ONNX's
// reference computes it. Each output position's source coordinate (by the coordinate
// transformation mode) picks n neighbours along the axis, edge-clamped: nearest and
// linear n = 2, cubic n = 4, with coefficients of the fractional part; a neighbour past
// the edge has weight 0 under exclude_outside (the rest renormalized). The indices and
// weights are constants of the model's static shapes: the axis is n index_selects
// (one for nearest) times broadcast weights.
Outs resize_op(const NodeContext& c) {
  Tensor x = c.in(0);
  const int r = rank_of(x);
  const bool upsample = c.node.op_type() == "Upsample";
  const std::string mode = c.attrs.s("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    c.invalid("mode '" + mode + "' is not one of nearest, linear, cubic");
  }
  if (upsample && mode == "cubic") c.invalid("Upsample has no cubic mode");
  const std::string ctm =
      upsample || c.opset < 11 ? "asymmetric" : c.attrs.s("coordinate_transformation_mode", "half_pixel");
  // Opset 10's nearest floors (as Upsample does); 11 and later say how.
  const std::string nearest = upsample || c.opset < 11 ? "floor" : c.attrs.s("nearest_mode", "round_prefer_floor");
  const double a = c.attrs.f("cubic_coeff_a", -0.75f);
  const bool exclude_outside = c.attrs.i("exclude_outside", 0) != 0;
  const double extrapolation = c.attrs.f("extrapolation_value", 0.0f);
  if (c.attrs.i("antialias", 0) != 0) c.unsupported("antialias = 1 is not supported");
  // Which axes, their scales and output sizes.
  std::vector<int64_t> axes;
  for (int64_t v : c.attrs.ints("axes", {})) axes.push_back(axis_in(c, v, r));
  if (axes.empty()) {
    for (int d = 0; d < r; ++d) axes.push_back(d);
  }
  const size_t na = axes.size();
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes_in;
  if (upsample) {
    if (c.opset >= 9) scales = c.doubles(1);
    else for (float f : c.attrs.floats("scales")) scales.push_back(f);
  } else if (c.opset < 11) {
    scales = c.doubles(1);
  } else {
    if (c.has(1)) roi = c.doubles(1);
    if (c.has(2)) scales = c.doubles(2);
    if (c.has(3)) sizes_in = c.ints(3);
  }
  if (!scales.empty() && !sizes_in.empty()) c.invalid("scales and sizes are both given; give one");
  if (scales.empty() && sizes_in.empty()) c.invalid("neither scales nor sizes is given");
  if (!scales.empty() && scales.size() != na) c.invalid("scales needs one entry per resized axis");
  if (!sizes_in.empty() && sizes_in.size() != na) c.invalid("sizes needs one entry per resized axis");
  if (!roi.empty() && roi.size() != 2 * na) c.invalid("roi needs a start and an end per resized axis");
  std::vector<double> scale(size_t(r), 1.0);
  std::vector<int64_t> out = sizes(x);
  for (size_t i = 0; i < na; ++i) {
    const size_t d = size_t(axes[i]);
    if (!scales.empty()) {
      if (!(scales[i] > 0)) c.invalid("scales must be positive");
      scale[d] = scales[i];
      out[d] = int64_t(std::floor(scales[i] * double(out[d]) * (roi.empty() ? 1.0 : roi[i + na] - roi[i]) + 1e-9));
    } else {
      if (sizes_in[i] < 0) c.invalid("sizes must not be negative");
      scale[d] = out[d] > 0 ? double(sizes_in[i]) / double(out[d]) : 1.0;
      out[d] = sizes_in[i];
    }
  }
  const std::string policy = c.attrs.s("keep_aspect_ratio_policy", "stretch");
  if (!sizes_in.empty() && policy != "stretch") {
    if (policy != "not_larger" && policy != "not_smaller") c.invalid("keep_aspect_ratio_policy '" + policy + "'");
    double s = policy == "not_larger" ? 1e300 : 0;
    for (int64_t d : axes) s = policy == "not_larger" ? std::min(s, scale[size_t(d)]) : std::max(s, scale[size_t(d)]);
    for (int64_t d : axes) {
      scale[size_t(d)] = s;
      out[size_t(d)] = int64_t(s * double(dim(x, int(d))) + 0.5);
    }
  }
  const int n = mode == "cubic" ? 4 : 2;
  for (size_t i = 0; i < na; ++i) {
    const int d = int(axes[i]);
    const int64_t in = dim(x, d), o = out[size_t(d)];
    const double sc = scale[size_t(d)];
    if (in == o && sc == 1.0 && ctm != "tf_crop_and_resize") continue;
    if (in == 0) c.invalid("cannot resize an empty axis");
    std::vector<std::vector<int64_t>> idx(static_cast<size_t>(n), std::vector<int64_t>(static_cast<size_t>(o)));
    std::vector<std::vector<double>> w(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(o)));
    std::vector<double> outside(static_cast<size_t>(o), 0.0);
    for (int64_t y = 0; y < o; ++y) {
      const double yd = double(y), ow = sc * double(in);
      double xo;
      if (ctm == "half_pixel") {
        xo = (yd + 0.5) / sc - 0.5;
      } else if (ctm == "pytorch_half_pixel") {
        xo = ow == 1 ? -0.5 : (yd + 0.5) / sc - 0.5;
      } else if (ctm == "align_corners") {
        xo = ow == 1 ? 0.0 : yd * double(in - 1) / (ow - 1);
      } else if (ctm == "asymmetric") {
        xo = yd / sc;
      } else if (ctm == "tf_half_pixel_for_nn") {
        xo = (yd + 0.5) / sc;
      } else if (ctm == "half_pixel_symmetric") {
        const double adjustment = double(o) / ow, center = double(in) / 2;
        xo = center * (1 - adjustment) + (yd + 0.5) / sc - 0.5;
      } else if (ctm == "tf_crop_and_resize") {
        if (roi.empty()) c.invalid("tf_crop_and_resize needs roi");
        const double start = roi[i], end = roi[i + na];
        xo = ow == 1 ? (end - start) * double(in - 1) / 2 : yd * (end - start) * double(in - 1) / (ow - 1);
        xo += start * double(in - 1);
        outside[size_t(y)] = xo < 0 || xo > double(in - 1);
      } else {
        c.invalid("coordinate_transformation_mode '" + ctm + "' is not one ONNX defines");
      }
      const double fl = std::floor(xo);
      const bool integer = xo == fl;
      const double t = integer ? 1.0 : xo - fl;
      std::vector<double> k(static_cast<size_t>(n), 0.0);
      if (mode == "nearest") {
        bool second;
        if (integer) second = true;
        else if (nearest == "round_prefer_floor") second = t > 0.5;
        else if (nearest == "round_prefer_ceil") second = t >= 0.5;
        else if (nearest == "floor") second = false;
        else if (nearest == "ceil") second = true;
        else c.invalid("nearest_mode '" + nearest + "' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil");
        k = {second ? 0.0 : 1.0, second ? 1.0 : 0.0};
      } else if (mode == "linear") {
        k = {1 - t, t};
      } else {
        const double u = 1 - t;
        k = {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a, ((a + 2) * t - (a + 3)) * t * t + 1,
             ((a + 2) * u - (a + 3)) * u * u + 1, ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a};
      }
      const int64_t start = int64_t(fl) - (integer ? n / 2 : n / 2 - 1);
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        const int64_t at = start + j;
        if (exclude_outside && (at < 0 || at >= in)) k[size_t(j)] = 0;
        sum += k[size_t(j)];
      }
      for (int j = 0; j < n; ++j) {
        const int64_t at = start + j;
        idx[size_t(j)][size_t(y)] = std::clamp<int64_t>(at, 0, in - 1);
        w[size_t(j)][size_t(y)] = exclude_outside && sum != 0 ? k[size_t(j)] / sum : k[size_t(j)];
      }
    }
    // Weights broadcast along axis d.
    std::vector<int64_t> wshape(size_t(r), 1);
    wshape[size_t(d)] = o;
    Tensor y;
    if (mode == "nearest") {
      std::vector<int64_t> pick(static_cast<size_t>(o));
      for (size_t p = 0; p < size_t(o); ++p) pick[p] = w[0][p] != 0 ? idx[0][p] : idx[1][p];
      y = index_select(x, d, i64(pick, {o}));
    } else {
      for (int j = 0; j < n; ++j) {
        const Tensor term = index_select(x, d, i64(idx[size_t(j)], {o})) * from_vector(w[size_t(j)], Shape(wshape), x.dtype());
        y = j == 0 ? term : y + term;
      }
    }
    if (ctm == "tf_crop_and_resize") {
      const Tensor mask = from_vector(outside, Shape(wshape), DType::Bool);
      y = where(mask, scalar_like(extrapolation, y), y);
    }
    x = y;
  }
  return {x};
}

Outs trilu_op(const NodeContext& c) {
  const int64_t k = c.has(1) ? c.ints(1).at(0) : 0;
  return {c.attrs.i("upper", 1) ? triu(c.in(0), k) : tril(c.in(0), k)};
}

// ---- contractions, convolutions, pooling, normalization ----------------------------

Outs matmul_op(const NodeContext& c) {
  Tensor a = c.in(0), b = c.in(1);
  const bool va = rank_of(a) == 1, vb = rank_of(b) == 1;
  if (va) a = unsqueeze(a, 0);
  if (vb) b = unsqueeze(b, 1);
  Tensor y = matmul(a, b);
  if (vb) y = squeeze(y, -1);
  if (va) y = squeeze(y, rank_of(y) - (vb ? 1 : 2));
  return {y};
}

Outs gemm_op(const NodeContext& c) {
  Tensor a = c.in(0), b = c.in(1);
  if (c.attrs.i("transA", 0)) a = transpose(a, 0, 1);
  if (c.attrs.i("transB", 0)) b = transpose(b, 0, 1);
  const double alpha = c.attrs.f("alpha", 1), beta = c.attrs.f("beta", 1);
  Tensor y = matmul(a, b);
  if (alpha != 1) y = y * alpha;
  if (c.has(2) && beta != 0) y = y + (beta == 1 ? c.in(2) : c.in(2) * beta);
  return {y};
}

struct Window {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  bool symmetric() const { return begin == end; }
  // kiln's pooling takes pads of at most half the window, on both sides alike.
  bool pooling_pads() const {
    for (size_t i = 0; i < begin.size(); ++i) {
      if (2 * begin[i] > kernel[i]) return false;
    }
    return symmetric();
  }
};

// The window of a Conv or pooling node over the input's spatial dims (auto_pad resolved).
Window window_of(const NodeContext& c, const Tensor& x, const std::vector<int64_t>& kernel) {
  const size_t n = kernel.size();
  Window w;
  w.kernel = kernel;
  w.strides = c.attrs.ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = c.attrs.ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = c.attrs.ints("pads", std::vector<int64_t>(2 * n, 0));
  const int64_t spatial = rank_of(x) - 2;
  if (int64_t(n) != spatial) {
    c.invalid("kernel_shape has " + std::to_string(n) + " entries; the input has " + std::to_string(std::max<int64_t>(0, spatial)) +
              " spatial dims (one entry each)");
  }
  if (w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n) {
    c.invalid("strides, dilations and pads must have one entry per spatial dim (pads two)");
  }
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1) {
      c.invalid("kernel_shape, strides and dilations must be at least 1");
    }
  }
  for (int64_t p : pads) {
    if (p < 0) c.invalid("pads must not be negative");
  }
  w.begin.assign(pads.begin(), pads.begin() + long(n));
  w.end.assign(pads.begin() + long(n), pads.end());
  const std::string auto_pad = c.attrs.s("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    std::fill(w.begin.begin(), w.begin.end(), 0), std::fill(w.end.begin(), w.end.end(), 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      const int64_t in = dim(x, int(2 + i)), s = w.strides[i];
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + (kernel[i] - 1) * w.dilations[i] + 1 - in);
      const int64_t small = total / 2, big = total - small;
      w.begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.end[i] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    c.invalid("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  return w;
}

// kiln's 2-D ops run 1-D windows as 2-D ones of height 1; 3-D and up are not supported.
int spatial_dims(const NodeContext& c, const Tensor& x) {
  const int s = rank_of(x) - 2;
  if (s < 1 || s > 2) c.unsupported(std::to_string(s) + "-D windows are not supported; kiln has 1-D and 2-D");
  return s;
}
Tensor to_2d(const Tensor& x, int s) { return s == 1 ? unsqueeze(x, 2) : x; }
Tensor from_2d(const Tensor& y, int s) { return s == 1 ? squeeze(y, 2) : y; }
std::vector<int64_t> two(const std::vector<int64_t>& v, int s, int64_t fill) {
  return s == 1 ? std::vector<int64_t>{fill, v[0]} : v;
}
// Explicit padding where begin and end differ: kiln's ops pad both sides alike.
Tensor pad_spatial(const Tensor& x, const Window& w, double value) {
  std::vector<int64_t> pads;
  for (size_t i = w.begin.size(); i-- > 0;) pads.insert(pads.end(), {w.begin[i], w.end[i]});
  return pad(x, pads, value);
}

Outs conv_op(const NodeContext& c) {
  Tensor x = c.in(0);
  const Tensor& wt = c.in(1);
  const int s = spatial_dims(c, x);
  std::vector<int64_t> kernel;
  for (int d = 2; d < rank_of(wt); ++d) kernel.push_back(dim(wt, d));
  kernel = c.attrs.ints("kernel_shape", kernel);
  Window w = window_of(c, x, kernel);
  if (!w.symmetric()) {
    x = pad_spatial(x, w, 0.0);
    std::fill(w.begin.begin(), w.begin.end(), 0);
  }
  const Tensor bias = c.has(2) ? c.in(2) : Tensor();
  Tensor y = conv2d(to_2d(x, s), to_2d(wt, s), bias, two(w.strides, s, 1), two(w.begin, s, 0),
                    two(w.dilations, s, 1), c.attrs.i("group", 1));
  return {from_2d(y, s)};
}

// ConvTranspose: conv_transpose2d without padding gives the full output, then pads_begin
// are cropped at the start and output_padding - pads_end added at the end (ONNX's pads may
// differ per side; output_shape or auto_pad decide them where given), then the bias.
Outs conv_transpose_op(const NodeContext& c) {
  const Tensor& x0 = c.in(0);
  const Tensor& wt = c.in(1);
  const int s = spatial_dims(c, x0);
  const size_t n = size_t(s);
  std::vector<int64_t> kernel;
  for (int d = 2; d < rank_of(wt); ++d) kernel.push_back(dim(wt, d));
  kernel = c.attrs.ints("kernel_shape", kernel);
  const std::vector<int64_t> strides = c.attrs.ints("strides", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> dilations = c.attrs.ints("dilations", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> out_pad = c.attrs.ints("output_padding", std::vector<int64_t>(n, 0));
  std::vector<int64_t> pads = c.attrs.ints("pads", std::vector<int64_t>(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || dilations.size() != n || out_pad.size() != n || pads.size() != 2 * n) {
    c.invalid("kernel_shape, strides, dilations and output_padding must have one entry per spatial dim, pads two");
  }
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] != dim(wt, int(2 + i))) c.invalid("kernel_shape does not match the weight's spatial dims");
    if (strides[i] < 1 || dilations[i] < 1 || out_pad[i] < 0) c.invalid("strides and dilations must be at least 1, output_padding at least 0");
  }
  const std::string auto_pad = c.attrs.s("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    c.invalid("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  // The full output's size per spatial dim, and the output's where output_shape or SAME
  // asks for one: then the pads follow (the larger half at the end for SAME_UPPER).
  std::vector<int64_t> wanted = c.attrs.ints("output_shape", {});
  if (!wanted.empty() && wanted.size() == n + 2) wanted.erase(wanted.begin(), wanted.begin() + 2);
  if (!wanted.empty() && wanted.size() != n) c.invalid("output_shape must have one entry per spatial dim");
  if (wanted.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
    for (size_t i = 0; i < n; ++i) wanted.push_back(dim(x0, int(2 + i)) * strides[i]);
  }
  for (int64_t p : pads) {
    if (p < 0) c.invalid("pads must not be negative");
  }
  if (auto_pad == "VALID") std::fill(pads.begin(), pads.end(), 0);
  if (!wanted.empty()) {
    // As ONNX's reference: halves rounded down (a negative total, an output larger than
    // the full one, extends the end).
    auto floor_half = [](int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
    for (size_t i = 0; i < n; ++i) {
      if (wanted[i] < 1) c.invalid("output_shape entries must be at least 1");
      const int64_t full = strides[i] * (dim(x0, int(2 + i)) - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1;
      const int64_t total = full - wanted[i];
      const bool upper = auto_pad == "SAME_UPPER";
      pads[i] = upper ? floor_half(total) : total - floor_half(total);
      pads[n + i] = upper ? total - floor_half(total) : floor_half(total);
    }
  }
  const int64_t groups = c.attrs.i("group", 1);
  Tensor y = conv_transpose2d(to_2d(x0, s), to_2d(wt, s), {}, two(strides, s, 1), {0}, {0}, groups, two(dilations, s, 1));
  // Crop the pads, add the output padding: F.pad's order, the last dim first.
  std::vector<int64_t> adjust;
  for (size_t i = n; i-- > 0;) adjust.insert(adjust.end(), {-pads[i], out_pad[i] - pads[n + i]});
  if (s == 1) adjust.insert(adjust.end(), {0, 0});
  y = pad(y, adjust);
  if (c.has(2)) y = y + reshape(c.in(2), {dim(c.in(2), 0), 1, 1});
  return {from_2d(y, s)};
}

Outs max_pool_op(const NodeContext& c) {
  if (c.node.output_size() > 1 && !c.node.output(1).empty()) c.unsupported("the Indices output is not supported");
  Tensor x = c.in(0);
  const int s = spatial_dims(c, x);
  Window w = window_of(c, x, c.attrs.ints("kernel_shape"));
  if (!w.pooling_pads()) {
    if (c.attrs.i("ceil_mode", 0)) c.unsupported("uneven pads, or pads over half the window, with ceil_mode are not supported");
    x = pad_spatial(x, w, -INFINITY);
    std::fill(w.begin.begin(), w.begin.end(), 0);
  }
  Tensor y = max_pool2d(to_2d(x, s), two(w.kernel, s, 1), two(w.strides, s, 1), two(w.begin, s, 0),
                        two(w.dilations, s, 1), c.attrs.i("ceil_mode", 0) != 0);
  return {from_2d(y, s)};
}

Outs avg_pool_op(const NodeContext& c) {
  Tensor x = c.in(0);
  const int s = spatial_dims(c, x);
  Window w = window_of(c, x, c.attrs.ints("kernel_shape"));
  for (int64_t d : w.dilations) {
    if (d != 1) c.unsupported("dilated average pooling is not supported");
  }
  const bool include_pad = c.attrs.i("count_include_pad", 0) != 0;
  if (!w.pooling_pads()) {
    if (c.attrs.i("ceil_mode", 0)) c.unsupported("uneven pads, or pads over half the window, with ceil_mode are not supported");
    const Window unpadded = w;
    x = pad_spatial(x, w, 0.0);
    std::fill(w.begin.begin(), w.begin.end(), 0);
    if (!include_pad) {
      // The mean of the window's cells inside the input: the padded sum over the count of
      // input cells, each an average over the whole window.
      const Tensor inside = pad_spatial(ones(c.in(0).shape(), x.dtype()), unpadded, 0.0);
      auto pool = [&](const Tensor& t) {
        return avg_pool2d(to_2d(t, s), two(w.kernel, s, 1), two(w.strides, s, 1), two(w.begin, s, 0), false, true);
      };
      return {from_2d(pool(x) / pool(inside), s)};
    }
  }
  Tensor y = avg_pool2d(to_2d(x, s), two(w.kernel, s, 1), two(w.strides, s, 1), two(w.begin, s, 0),
                        c.attrs.i("ceil_mode", 0) != 0, include_pad);
  return {from_2d(y, s)};
}

Converter global_pool(bool is_max) {
  return [is_max](const NodeContext& c) {
    const Tensor& x = c.in(0);
    std::vector<int64_t> axes;
    for (int d = 2; d < rank_of(x); ++d) axes.push_back(d);
    return Outs{is_max ? max(x, axes, true) : mean(x, axes, true)};
  };
}

// BatchNormalization; with training_mode (opset 14+) it normalizes by the batch's own
// statistics (population variance) and also returns the updated running mean and
// variance, input * momentum + batch * (1 - momentum), as ONNX's reference does.
Outs batch_norm_op(const NodeContext& c) {
  if (c.opset < 9 && c.attrs.i("spatial", 1) == 0) c.unsupported("spatial = 0 is not supported");
  const double eps = c.attrs.f("epsilon", 1e-5f);
  if (c.opset >= 14 && c.attrs.i("training_mode", 0)) {
    const Tensor& x = c.in(0);
    if (rank_of(x) < 2) c.invalid("X must have rank >= 2 (N, C, ...)");
    std::vector<int64_t> axes = {0}, channel(static_cast<size_t>(rank_of(x)), 1);
    for (int d = 2; d < rank_of(x); ++d) axes.push_back(d);
    channel[1] = dim(x, 1);
    const Tensor m = mean(x, axes, true);
    const Tensor v = mean((x - m) * (x - m), axes, true);
    const Tensor y = (x - m) / sqrt(v + eps) * reshape(c.in(1), channel) + reshape(c.in(2), channel);
    const double momentum = c.attrs.f("momentum", 0.9f);
    const Tensor run_mean = c.in(3) * momentum + reshape(m, {dim(x, 1)}) * (1 - momentum);
    const Tensor run_var = c.in(4) * momentum + reshape(v, {dim(x, 1)}) * (1 - momentum);
    return {y, run_mean, run_var};
  }
  if (c.attrs.i("training_mode", 0)) c.unsupported("training_mode before opset 14 is not supported");
  for (int k = 1; k < c.node.output_size(); ++k) {
    if (!c.node.output(k).empty()) c.unsupported("the training outputs of opsets before 14 are not supported");
  }
  return {batch_norm(c.in(0), c.in(3), c.in(4), c.in(1), c.in(2), eps)};
}

// TopK: the k largest (or smallest) along an axis, sorted, ties to the lower index: k
// rounds of argmax, each masking the winner out (O(k n): for small k, as in top-5).
Outs top_k_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  if (rank_of(x) == 0) c.invalid("TopK reads a tensor of rank >= 1");
  const int64_t axis = axis_in(c, c.attrs.i("axis", -1), rank_of(x));
  const std::vector<int64_t> kv = c.opset >= 10 ? c.ints(1) : std::vector<int64_t>{c.attrs.i("k")};
  const int64_t n = dim(x, int(axis));
  if (kv.size() != 1 || kv[0] < 0 || kv[0] > n) {
    c.invalid("K must be one integer in [0, " + std::to_string(n) + "], the axis' size");
  }
  const bool largest = c.attrs.i("largest", 1) != 0;
  Tensor v = cast(x, DType::F64);
  if (!largest) v = neg(v);
  std::vector<int64_t> along(static_cast<size_t>(rank_of(x)), 1);
  along[size_t(axis)] = n;
  const Tensor position = reshape(arange(0, double(n), 1, DType::I64), along);
  std::vector<Tensor> values, indices;
  for (int64_t r = 0; r < kv[0]; ++r) {
    const Tensor i = argmax(v, axis, true);
    indices.push_back(i);
    values.push_back(gather(x, axis, i));
    v = where(eq(position, i), scalar(-INFINITY, DType::F64), v);
  }
  if (indices.empty()) {
    std::vector<int64_t> shape = sizes(x);
    shape[size_t(axis)] = 0;
    return {zeros(Shape(shape), x.dtype()), zeros(Shape(shape), DType::I64)};
  }
  return {concat(values, axis), concat(indices, axis)};
}

Outs layer_norm_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const int r = rank_of(x);
  const int64_t axis = axis_in(c, c.attrs.i("axis", -1), r);
  const double eps = c.attrs.f("epsilon", 1e-5f);
  std::vector<int64_t> normalized, axes;
  for (int d = int(axis); d < r; ++d) normalized.push_back(dim(x, d)), axes.push_back(d);
  Tensor scale = c.in(1), bias = c.has(2) ? c.in(2) : Tensor();
  if (sizes(scale) != normalized) scale = expand(scale, normalized);
  if (bias.defined() && sizes(bias) != normalized) bias = expand(bias, normalized);
  Outs out = {layer_norm(x, normalized, scale, bias, eps)};
  if (c.node.output_size() > 1) {
    const Tensor xf = cast(x, DType::F32);
    const Tensor m = mean(xf, axes, true);
    out.push_back(m);
    out.push_back(rsqrt(mean((xf - m) * (xf - m), axes, true) + eps));
  }
  return out;
}

Outs instance_norm_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes, per_channel = {dim(x, 1)};
  for (int d = 2; d < rank_of(x); ++d) axes.push_back(d), per_channel.push_back(1);
  const double eps = c.attrs.f("epsilon", 1e-5f);
  const Tensor m = mean(x, axes, true);
  const Tensor v = mean((x - m) * (x - m), axes, true);
  return {(x - m) * rsqrt(v + eps) * reshape(c.in(1), per_channel) + reshape(c.in(2), per_channel)};
}

// Local response normalization across channels: x / (bias + alpha / size * sum of the
// squares over the window of `size` channels around each)^beta.
Outs lrn_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t size = c.attrs.i("size");
  const double alpha = c.attrs.f("alpha", 1e-4f), beta = c.attrs.f("beta", 0.75f), bias = c.attrs.f("bias", 1.0f);
  const int r = rank_of(x);
  const int64_t before = (size - 1) / 2, after = size - 1 - before, channels = dim(x, 1);
  std::vector<int64_t> pads(static_cast<size_t>(2 * r), 0);
  pads[size_t(2 * (r - 2))] = before, pads[size_t(2 * (r - 2) + 1)] = after;
  const Tensor sq = pad(x * x, pads, 0.0);
  Tensor sum_sq = slice(sq, 1, 0, channels);
  for (int64_t k = 1; k < size; ++k) sum_sq = sum_sq + slice(sq, 1, k, k + channels);
  return {x / pow(sum_sq * (alpha / double(size)) + bias, beta)};
}


// ---- losses --------------------------------------------------------------------------

// The negative log-likelihood of `logp` ([N, C, d...]) at `target` ([N, d...]), weighted
// per class, targets equal to ignore_index left out, reduced as ONNX's `reduction` says.
Tensor nll(const NodeContext& c, const Tensor& logp, const Tensor& target, const Tensor& weight) {
  const std::string reduction = c.attrs.s("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") c.invalid("reduction '" + reduction + "'");
  Tensor t = cast(target, DType::I64);
  const bool ignoring = c.attrs.has("ignore_index");
  Tensor valid;
  if (ignoring) {
    valid = ne(t, double(c.attrs.i("ignore_index")));
    t = where(valid, t, scalar(0, DType::I64));
  }
  const Tensor picked = squeeze(gather(logp, 1, unsqueeze(t, 1)), 1);
  Tensor w = weight.defined() ? reshape(index_select(cast(weight, logp.dtype()), 0, reshape(t, {-1})), sizes(t))
                              : full(t.shape(), 1.0, logp.dtype());
  if (ignoring) w = where(valid, w, scalar_like(0, w));
  const Tensor loss = neg(picked) * w;
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  return sum(loss) / sum(w);
}

Outs nll_op(const NodeContext& c) { return {nll(c, c.in(0), c.in(1), c.has(2) ? c.in(2) : Tensor())}; }

Outs softmax_cross_entropy_op(const NodeContext& c) {
  const Tensor logp = log_softmax(c.in(0), 1);
  return {nll(c, logp, c.in(1), c.has(2) ? c.in(2) : Tensor()), logp};
}

// ---- more elementwise and data movement ----------------------------------------------

Tensor trunc(const Tensor& q) { return where(lt(q, 0.0), ceil(q), floor(q)); }

Outs mod_op(const NodeContext& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  const bool fmod = c.attrs.i("fmod", 0) != 0;
  if (is_float(a.dtype())) {
    if (!fmod) c.invalid("fmod must be 1 for floating-point inputs");
    return {a - trunc(a / b) * b};
  }
  const Tensor x = cast(a, DType::F64), y = cast(b, DType::F64);
  const Tensor q = x / y;
  return {cast(x - (fmod ? trunc(q) : floor(q)) * y, a.dtype())};
}

// Sums along `axis` through a product with a triangle of ones (exclusive and reverse as
// ONNX's CumSum says); integers in f64, exact below 2^53.
Outs cumsum_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const int r = rank_of(x);
  const int64_t axis = axis_in(c, c.ints(1).at(0), r), n = dim(x, int(axis));
  const bool exclusive = c.attrs.i("exclusive", 0) != 0, reverse = c.attrs.i("reverse", 0) != 0;
  const DType t = is_float(x.dtype()) ? x.dtype() : DType::F64;
  const Tensor ones = full(Shape({n, n}), 1.0, t);
  const Tensor tri = reverse ? tril(ones, exclusive ? -1 : 0) : triu(ones, exclusive ? 1 : 0);
  const Tensor moved = transpose(cast(x, t), axis, r - 1);
  return {cast(transpose(matmul(moved, tri), axis, r - 1), x.dtype())};
}

Outs hardmax_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const int r = rank_of(x);
  auto one_hot_max = [](const Tensor& t, int64_t axis) {
    const Tensor idx = argmax(t, axis, true);
    std::vector<int64_t> shape(static_cast<size_t>(t.shape().rank()), 1);
    shape[size_t(axis)] = t.shape()[int(axis)].size;
    return cast(eq(reshape(arange(shape[size_t(axis)], DType::I64), shape), idx), t.dtype());
  };
  if (c.opset >= 13) return {one_hot_max(x, axis_in(c, c.attrs.i("axis", -1), r))};
  const int64_t axis = axis_in(c, c.attrs.i("axis", 1), r);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < r; ++d) (d < axis ? outer : inner) *= dim(x, d);
  return {reshape(one_hot_max(reshape(x, {outer, inner}), 1), sizes(x))};
}

Outs one_hot_op(const NodeContext& c) {
  const Tensor& idx = c.in(0);
  const int64_t depth = int64_t(c.doubles(1).at(0));
  const Tensor& values = c.in(2);
  const int out_rank = rank_of(idx) + 1;
  const int64_t axis = axis_in(c, c.attrs.i("axis", -1), out_rank);
  const Tensor i = cast(idx, DType::I64);
  const Tensor wrapped = where(lt(i, 0.0), i + double(depth), i);
  std::vector<int64_t> shape(static_cast<size_t>(out_rank), 1);
  shape[size_t(axis)] = depth;
  const Tensor hot = eq(unsqueeze(wrapped, axis), reshape(arange(depth, DType::I64), shape));
  const Tensor off = reshape(slice(values, 0, 0, 1), {}), on = reshape(slice(values, 0, 1, 2), {});
  return {where(hot, on, off)};
}

Outs eye_like_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const DType t = c.attrs.has("dtype") ? dtype_from_onnx(int32_t(c.attrs.i("dtype")), node_name(c.node)) : x.dtype();
  const int64_t k = c.attrs.i("k", 0), rows = dim(x, 0), cols = dim(x, 1);
  std::vector<double> v(static_cast<size_t>(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    if (i + k >= 0 && i + k < cols) v[size_t(i * cols + i + k)] = 1;
  }
  return {from_vector(v, Shape({rows, cols}), t)};
}

Outs depth_to_space_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t b = c.attrs.i("blocksize"), n = dim(x, 0), ch = dim(x, 1), h = dim(x, 2), w = dim(x, 3);
  const std::string mode = c.attrs.s("mode", "DCR");
  const Tensor y = mode == "DCR" ? permute(reshape(x, {n, b, b, ch / (b * b), h, w}), {0, 3, 4, 1, 5, 2})
                                 : permute(reshape(x, {n, ch / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3});
  return {reshape(y, {n, ch / (b * b), h * b, w * b})};
}

Outs space_to_depth_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t b = c.attrs.i("blocksize"), n = dim(x, 0), ch = dim(x, 1), h = dim(x, 2), w = dim(x, 3);
  const Tensor y = permute(reshape(x, {n, ch, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  return {reshape(y, {n, ch * b * b, h / b, w / b})};
}

// ---- indexing by tuples ----------------------------------------------------------------

// The element offsets that the last dim of `indices` names in the first k dims of `data`
// after `batch_dims` leading batch dims, as one i64 index into data reshaped to
// [batch * prod(data[b : b + k]), rest...]; negative indices count from the end.
struct NdIndex {
  Tensor flat_index;                // i64 [n]
  std::vector<int64_t> index_dims;  // indices.shape[:-1]
  std::vector<int64_t> rest;        // data.shape[b + k:]
  int64_t rows = 1;                 // batch * prod(data[b : b + k])
};
NdIndex nd_index(const NodeContext& c, const Tensor& data, const Tensor& indices, int64_t b) {
  const std::vector<int64_t> ds = sizes(data), is = sizes(indices);
  if (is.empty()) c.invalid("indices must have rank >= 1");
  const int64_t k = is.back();
  if (b < 0 || b >= int64_t(is.size()) || b + k > int64_t(ds.size())) {
    c.invalid("indices' last dim (" + std::to_string(k) + ") and batch_dims (" + std::to_string(b) +
              ") do not fit data of rank " + std::to_string(ds.size()));
  }
  for (int64_t d = 0; d < b; ++d) {
    if (ds[size_t(d)] != is[size_t(d)]) c.invalid("data and indices differ in batch dim " + std::to_string(d));
  }
  NdIndex r;
  r.index_dims.assign(is.begin(), is.end() - 1);
  r.rest.assign(ds.begin() + b + k, ds.end());
  int64_t batch = 1, block = 1;
  for (int64_t d = 0; d < b; ++d) batch *= ds[size_t(d)];
  for (int64_t d = b; d < b + k; ++d) block *= ds[size_t(d)];
  r.rows = batch * block;
  // [batch, m, k]: m tuples per batch entry.
  int64_t m = 1;
  for (size_t d = size_t(b); d + 1 < is.size(); ++d) m *= is[d];
  const Tensor idx = reshape(cast(indices, DType::I64), {batch, m, k});
  Tensor offset = scalar(0.0, DType::I64);
  int64_t stride = block;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t n = ds[size_t(b + j)];
    stride /= n;
    const Tensor col = wrap_indices(slice(idx, 2, j, j + 1), n);
    offset = offset + col * double(stride);
  }
  offset = offset + reshape(arange(0, double(batch), 1, DType::I64), {batch, 1, 1}) * double(block);
  r.flat_index = reshape(offset, {-1});
  return r;
}
std::vector<int64_t> concat_dims(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
Tensor rows_of(const Tensor& data, const NdIndex& r) { return reshape(data, concat_dims({r.rows}, r.rest)); }

Outs gather_nd_op(const NodeContext& c) {
  const Tensor& data = c.in(0);
  const NdIndex r = nd_index(c, data, c.in(1), c.attrs.i("batch_dims", 0));
  return {reshape(index_select(rows_of(data, r), 0, r.flat_index), concat_dims(r.index_dims, r.rest))};
}

// ScatterND and ScatterElements: the rows (or elements) of `data` that an index names take
// the updates (`added`, their sums; `hits`, how many landed), combined by `reduction`.
// ONNX leaves repeated targets undefined under "none"; here their updates add up.
Tensor scatter_combine(const NodeContext& c, const Tensor& data, const Tensor& added, const Tensor& hits) {
  const std::string reduction = c.attrs.s("reduction", "none");
  const Tensor touched = gt(hits, 0.0);
  if (reduction == "none") return where(touched, added, data);
  if (reduction == "add") return data + added;
  c.unsupported("reduction '" + reduction + "' is not supported; kiln scatters with none and add");
}

Outs scatter_nd_op(const NodeContext& c) {
  const Tensor& data = c.in(0);
  const Tensor& updates = c.in(2);
  const NdIndex r = nd_index(c, data, c.in(1), 0);
  const Tensor rows = rows_of(data, r);
  const Tensor src = reshape(updates, concat_dims({-1}, r.rest));
  const Tensor added = index_add(zeros(rows.shape(), data.dtype()), 0, r.flat_index, src);
  const Tensor hits = index_add(zeros(rows.shape(), DType::F32), 0, r.flat_index, ones(src.shape(), DType::F32));
  return {reshape(scatter_combine(c, rows, added, hits), sizes(data))};
}

Outs scatter_elements_op(const NodeContext& c) {
  const Tensor& data = c.in(0);
  if (rank_of(data) == 0) c.invalid("ScatterElements writes a tensor of rank >= 1, not a scalar");
  const int64_t axis = axis_in(c, c.attrs.i("axis", 0), rank_of(data));
  const Tensor idx = wrap_indices(c.in(1), dim(data, int(axis)));
  const Tensor& updates = c.in(2);
  const Tensor added = scatter_add(zeros(data.shape(), data.dtype()), axis, idx, updates);
  const Tensor hits = scatter_add(zeros(data.shape(), DType::F32), axis, idx, ones(updates.shape(), DType::F32));
  return {scatter_combine(c, data, added, hits)};
}

// ReverseSequence: along time_axis, batch entry b's first sequence_lens[b] steps reversed,
// the rest kept: a gather whose index is len - 1 - t below len and t after.
Outs reverse_sequence_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  if (rank_of(x) < 2) c.invalid("ReverseSequence reads a tensor of rank >= 2");
  const int64_t time = axis_in(c, c.attrs.i("time_axis", 0), rank_of(x));
  const int64_t batch = axis_in(c, c.attrs.i("batch_axis", 1), rank_of(x));
  if (time == batch) c.invalid("time_axis and batch_axis must differ");
  const std::vector<int64_t> xs = sizes(x);
  std::vector<int64_t> t_shape(xs.size(), 1), b_shape(xs.size(), 1);
  t_shape[size_t(time)] = xs[size_t(time)], b_shape[size_t(batch)] = xs[size_t(batch)];
  const Tensor t = reshape(arange(0, double(xs[size_t(time)]), 1, DType::I64), t_shape);
  const Tensor len = reshape(cast(c.in(1), DType::I64), b_shape);
  const Tensor index = where(lt(t, len), len - 1.0 - t, t);
  return {gather(x, time, expand(index, xs))};
}

// HannWindow, HammingWindow, BlackmanWindow: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),
// N the size (periodic) or size - 1 (symmetric), as constants of the known size.
Converter window(double a0, double a1, double a2) {
  return [a0, a1, a2](const NodeContext& c) {
    const std::vector<int64_t> size = c.ints(0);
    if (size.size() != 1 || size[0] < 0) c.invalid("size must be one non-negative integer");
    const int64_t n = size[0];
    const double period = c.attrs.i("periodic", 1) ? double(n) : double(n - 1);
    std::vector<double> w;
    for (int64_t k = 0; k < n; ++k) {
      const double phase = period > 0 ? 2 * M_PI * double(k) / period : 0;
      w.push_back(a0 - a1 * std::cos(phase) + a2 * std::cos(2 * phase));
    }
    return Outs{from_vector(w, Shape({n}), dtype_from_onnx(int32_t(c.attrs.i("output_datatype", 1)), node_name(c.node)))};
  };
}

// MeanVarianceNormalization: (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes`, ONNX's
// own function body.
Outs mean_variance_normalization_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes = c.attrs.ints("axes", {0, 2, 3});
  for (int64_t& a : axes) a = axis_in(c, a, rank_of(x));
  const Tensor m = mean(x, axes, true);
  const Tensor sd = sqrt(mean(x * x, axes, true) - m * m);
  return {(x - m) / (sd + 1e-9)};
}

// ---- Einsum ------------------------------------------------------------------------------

// One operand's subscripts with "..." expanded to letters of their own (upper case, from
// the right), repeated letters taken as a diagonal, and letters no one else needs summed.
struct EinsumTerm {
  Tensor t;
  std::string letters;
};

std::vector<std::string> split_terms(const std::string& s) {
  std::vector<std::string> out(1);
  for (char ch : s) {
    if (ch == ',') out.emplace_back();
    else if (ch != ' ') out.back() += ch;
  }
  return out;
}

// "...": the operand's leading extra dims, named 'A'.. from the right so that they line
// up across operands as broadcasting does.
std::string expand_ellipsis(const NodeContext& c, const std::string& sub, int rank, int* ell_rank) {
  const size_t at = sub.find("...");
  if (at == std::string::npos) {
    if (int(sub.size()) != rank) c.invalid("subscripts '" + sub + "' do not match an operand of rank " + std::to_string(rank));
    return sub;
  }
  const int named = int(sub.size()) - 3;
  const int e = rank - named;
  if (e < 0) c.invalid("subscripts '" + sub + "' have more letters than the operand's rank " + std::to_string(rank));
  *ell_rank = std::max(*ell_rank, e);
  std::string dots;
  for (int i = e - 1; i >= 0; --i) dots += char('A' + i);
  return sub.substr(0, at) + dots + sub.substr(at + 3);
}

// Sum the letters of `term` that are not in `keep` (the output and the other operands).
EinsumTerm sum_unshared(EinsumTerm term, const std::string& keep) {
  std::vector<int64_t> axes;
  std::string left;
  for (size_t i = 0; i < term.letters.size(); ++i) {
    if (keep.find(term.letters[i]) == std::string::npos) axes.push_back(int64_t(i));
    else left += term.letters[i];
  }
  if (!axes.empty()) term.t = sum(term.t, axes), term.letters = left;
  return term;
}

// A repeated letter reads the diagonal: times an identity mask, summed over the repeat.
EinsumTerm take_diagonals(EinsumTerm term) {
  for (size_t i = 0; i < term.letters.size(); ++i) {
    const size_t j = term.letters.find(term.letters[i], i + 1);
    if (j == std::string::npos) continue;
    const int64_t n = dim(term.t, int(i));
    std::vector<double> eye(size_t(n * n), 0.0);
    for (int64_t k = 0; k < n; ++k) eye[size_t(k * n + k)] = 1;
    std::vector<int64_t> shape(term.letters.size(), 1);
    shape[i] = n, shape[j] = n;
    term.t = sum(term.t * cast(reshape(from_vector(eye, Shape({n, n})), shape), term.t.dtype()), {int64_t(j)});
    term.letters.erase(j, 1);
    --i;  // the letter may repeat again
  }
  return term;
}

// a and b contracted over the letters they share that `keep` does not: a batched matmul
// of [batch, free a, shared] by [batch, shared, free b].
EinsumTerm contract(const EinsumTerm& a, const EinsumTerm& b, const std::string& keep) {
  std::string batch, free_a, free_b, shared;
  for (char ch : a.letters) {
    const bool in_b = b.letters.find(ch) != std::string::npos, kept = keep.find(ch) != std::string::npos;
    (in_b ? (kept ? batch : shared) : free_a) += ch;
  }
  for (char ch : b.letters) {
    if (a.letters.find(ch) == std::string::npos) free_b += ch;
  }
  auto size_of = [](const EinsumTerm& t, char ch) {
    const size_t k = t.letters.find(ch);
    return k == std::string::npos ? int64_t(1) : dim(t.t, int(k));
  };
  auto arrange = [&](const EinsumTerm& t, const std::string& order) {
    std::vector<int64_t> perm;
    for (char ch : order) perm.push_back(int64_t(t.letters.find(ch)));
    return permute(t.t, perm);
  };
  auto product = [&](const std::string& ls) {
    int64_t p = 1;
    for (char ch : ls) p *= std::max(size_of(a, ch), size_of(b, ch));
    return p;
  };
  // Batch letters broadcast (a size-1 "..." dim against a longer one).
  std::vector<int64_t> batch_shape;
  for (char ch : batch) batch_shape.push_back(std::max(size_of(a, ch), size_of(b, ch)));
  const int64_t nb = product(batch), na = product(free_a), nb2 = product(free_b), ns = product(shared);
  Tensor ta = arrange(a, batch + free_a + shared), tb = arrange(b, batch + shared + free_b);
  std::vector<int64_t> ea = batch_shape, eb = batch_shape;
  for (char ch : free_a + shared) ea.push_back(size_of(a, ch));
  for (char ch : shared + free_b) eb.push_back(size_of(b, ch));
  ta = reshape(expand(ta, ea), {nb, na, ns});
  tb = reshape(expand(tb, eb), {nb, ns, nb2});
  std::vector<int64_t> out_shape = batch_shape;
  for (char ch : free_a) out_shape.push_back(size_of(a, ch));
  for (char ch : free_b) out_shape.push_back(size_of(b, ch));
  return {reshape(matmul(ta, tb), out_shape), batch + free_a + free_b};
}

Outs einsum_op(const NodeContext& c) {
  const std::string eq = c.attrs.s("equation", "");
  const size_t arrow = eq.find("->");
  const std::vector<std::string> subs = split_terms(eq.substr(0, arrow));
  if (subs.size() != c.inputs.size()) {
    c.invalid("equation '" + eq + "' names " + std::to_string(subs.size()) + " operands, the node has " +
              std::to_string(c.inputs.size()));
  }
  int ell = 0;
  std::vector<EinsumTerm> terms;
  for (size_t k = 0; k < subs.size(); ++k) {
    for (char ch : subs[k]) {
      if (ch != '.' && !std::islower(static_cast<unsigned char>(ch)) && !std::isupper(static_cast<unsigned char>(ch))) {
        c.invalid(std::string("equation '") + eq + "' has the character '" + ch + "'");
      }
      if (std::isupper(static_cast<unsigned char>(ch))) c.unsupported("upper-case subscripts are not supported");
    }
    terms.push_back({c.in(k), expand_ellipsis(c, subs[k], rank_of(c.in(k)), &ell)});
  }
  std::string out;
  if (arrow != std::string::npos) {
    int unused = 0;
    std::string o = eq.substr(arrow + 2);
    o.erase(std::remove(o.begin(), o.end(), ' '), o.end());
    out = o.find("...") == std::string::npos ? o : expand_ellipsis(c, o, int(o.size()) - 3 + ell, &unused);
  } else {  // implicit: "..." then the letters used once, in alphabetical order
    for (int i = ell - 1; i >= 0; --i) out += char('A' + i);
    std::string once;
    for (char ch = 'a'; ch <= 'z'; ++ch) {
      int n = 0;
      for (const EinsumTerm& t : terms) n += int(std::count(t.letters.begin(), t.letters.end(), ch));
      if (n == 1) once += ch;
    }
    out += once;
  }
  for (EinsumTerm& t : terms) t = take_diagonals(t);
  // Left to right: each step keeps the letters the output or a later operand needs.
  auto needed_after = [&](size_t k) {
    std::string keep = out;
    for (size_t j = k + 1; j < terms.size(); ++j) keep += terms[j].letters;
    return keep;
  };
  EinsumTerm acc = sum_unshared(terms[0], needed_after(0) + (terms.size() > 1 ? terms[1].letters : ""));
  for (size_t k = 1; k < terms.size(); ++k) {
    const std::string keep = needed_after(k);
    acc = contract(acc, sum_unshared(terms[k], keep + acc.letters), keep);
  }
  acc = sum_unshared(acc, out);
  std::vector<int64_t> perm;
  for (char ch : out) {
    const size_t k = acc.letters.find(ch);
    if (k == std::string::npos) c.invalid("output subscript '" + std::string(1, ch) + "' names no input dim");
    perm.push_back(int64_t(k));
  }
  return {acc.letters.empty() ? acc.t : permute(acc.t, perm)};
}

// ---- GridSample --------------------------------------------------------------------------

// GridSample (2-D, opset 16), PyTorch's grid_sampler: each output pixel reads X at the
// grid's normalized (x, y), unnormalized by align_corners; border clamps and reflection
// folds the coordinate (bilinear, nearest) or each tap (bicubic); a tap outside X reads 0.
// The taps are gathers from X flattened over H * W.
struct GridSampler {
  const NodeContext& c;
  Tensor x_flat;  // [N, C, H * W]
  int64_t n, ch, h, w, ho, wo;
  bool align;
  std::string padding;

  Tensor unnormalize(const Tensor& g, int64_t size) const {
    return align ? (g + 1.0) * (0.5 * double(size - 1)) : ((g + 1.0) * double(size) - 1.0) * 0.5;
  }
  // PyTorch's reflect_coordinates: fold v into [low, high] (twice the bounds given).
  static Tensor reflect(const Tensor& v, double twice_low, double twice_high) {
    if (twice_low == twice_high) return v * 0.0;
    // |v - low| folded into one period of 2 span, then mirrored at span.
    const double low = twice_low / 2, span = (twice_high - twice_low) / 2;
    const Tensor a = abs(v - low);
    const Tensor m = a - floor(a * (0.5 / span)) * (2 * span);
    return where(le(m, span), m, (m * -1.0) + 2 * span) + low;
  }
  Tensor pad_coordinate(const Tensor& v, int64_t size) const {
    if (padding == "border") return clamp(v, 0.0, double(size - 1));
    if (padding == "reflection") {
      const Tensor r = align ? reflect(v, 0, 2.0 * double(size - 1)) : reflect(v, -1, 2.0 * double(size) - 1);
      return clamp(r, 0.0, double(size - 1));
    }
    return v;
  }
  // X at integer positions (ix, iy) [N, Ho, Wo], 0 outside: [N, C, Ho, Wo].
  Tensor tap(const Tensor& ix, const Tensor& iy) const {
    const Tensor inside = logical_and(logical_and(ge(ix, 0.0), le(ix, double(w - 1))),
                                      logical_and(ge(iy, 0.0), le(iy, double(h - 1))));
    const Tensor cx = clamp(ix, 0.0, double(w - 1)), cy = clamp(iy, 0.0, double(h - 1));
    const Tensor index = reshape(cast(cy * double(w) + cx, DType::I64), {n, 1, ho * wo});
    const Tensor v = reshape(gather(x_flat, 2, expand(index, {n, ch, ho * wo})), {n, ch, ho, wo});
    return where(unsqueeze(inside, 1), v, scalar_like(0, v));
  }
  static Tensor cubic_near(const Tensor& t, double a) { return ((t * (a + 2)) - (a + 3)) * t * t + 1.0; }
  static Tensor cubic_far(const Tensor& t, double a) { return (((t * a) - 5 * a) * t + 8 * a) * t - 4 * a; }
};

Outs grid_sample_op(const NodeContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& grid = c.in(1);
  if (rank_of(x) != 4) c.unsupported("only 2-D sampling (X of rank 4) is supported, not rank " + std::to_string(rank_of(x)));
  if (rank_of(grid) != 4 || dim(grid, 3) != 2 || dim(grid, 0) != dim(x, 0)) c.invalid("grid must be [N, H_out, W_out, 2]");
  std::string mode = c.attrs.s("mode", "bilinear");
  mode = mode == "linear" ? "bilinear" : mode == "cubic" ? "bicubic" : mode;  // opset 20's names
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") c.invalid("mode '" + mode + "' is not one of bilinear, nearest, bicubic");
  GridSampler s{c, {}, dim(x, 0), dim(x, 1), dim(x, 2), dim(x, 3), dim(grid, 1), dim(grid, 2),
                c.attrs.i("align_corners", 0) != 0, c.attrs.s("padding_mode", "zeros")};
  if (s.padding != "zeros" && s.padding != "border" && s.padding != "reflection") {
    c.invalid("padding_mode '" + s.padding + "' is not one of zeros, border, reflection");
  }
  s.x_flat = reshape(x, {s.n, s.ch, s.h * s.w});
  const Tensor g = cast(grid, compute_dtype(x.dtype()) == DType::F64 ? DType::F64 : DType::F32);
  Tensor fx = s.unnormalize(squeeze(slice(g, 3, 0, 1), 3), s.w), fy = s.unnormalize(squeeze(slice(g, 3, 1, 2), 3), s.h);
  Tensor y;
  if (mode == "bicubic") {
    const Tensor x0 = floor(fx), y0 = floor(fy), tx = fx - x0, ty = fy - y0;
    const double a = -0.75;
    const std::vector<Tensor> wx = {GridSampler::cubic_far(tx + 1.0, a), GridSampler::cubic_near(tx, a),
                                    GridSampler::cubic_near((tx * -1.0) + 1.0, a), GridSampler::cubic_far((tx * -1.0) + 2.0, a)};
    const std::vector<Tensor> wy = {GridSampler::cubic_far(ty + 1.0, a), GridSampler::cubic_near(ty, a),
                                    GridSampler::cubic_near((ty * -1.0) + 1.0, a), GridSampler::cubic_far((ty * -1.0) + 2.0, a)};
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) {
        const Tensor ix = s.pad_coordinate(x0 + double(i - 1), s.w), iy = s.pad_coordinate(y0 + double(j - 1), s.h);
        const Tensor term = s.tap(ix, iy) * unsqueeze(wx[size_t(i)] * wy[size_t(j)], 1);
        y = y.defined() ? y + term : term;
      }
    }
  } else {
    fx = s.pad_coordinate(fx, s.w), fy = s.pad_coordinate(fy, s.h);
    if (mode == "nearest") {
      y = s.tap(round(fx), round(fy));
    } else {
      const Tensor x0 = floor(fx), y0 = floor(fy), tx = fx - x0, ty = fy - y0;
      const Tensor ux = (tx * -1.0) + 1.0, uy = (ty * -1.0) + 1.0;
      y = s.tap(x0, y0) * unsqueeze(ux * uy, 1) + s.tap(x0 + 1.0, y0) * unsqueeze(tx * uy, 1) +
          s.tap(x0, y0 + 1.0) * unsqueeze(ux * ty, 1) + s.tap(x0 + 1.0, y0 + 1.0) * unsqueeze(tx * ty, 1);
    }
  }
  return {cast(y, x.dtype())};
}

// ---- RNN, GRU, LSTM ----------------------------------------------------------------------

// One of ONNX's recurrent activations, with its alpha and beta.
struct RecurrentActivation {
  std::string name;
  double alpha = 0, beta = 0;
};

Tensor activate(const NodeContext& c, const RecurrentActivation& a, const Tensor& x) {
  const std::string& f = a.name;
  if (f == "Sigmoid") return sigmoid(x);
  if (f == "Tanh") return tanh(x);
  if (f == "Relu") return relu(x);
  if (f == "LeakyRelu") return leaky_relu(x, a.alpha);
  if (f == "HardSigmoid") return clamp(x * a.alpha + a.beta, 0.0, 1.0);
  if (f == "Affine") return x * a.alpha + a.beta;
  if (f == "ScaledTanh") return tanh(x * a.beta) * a.alpha;
  if (f == "ThresholdedRelu") return where(gt(x, a.alpha), x, scalar_like(0, x));
  if (f == "Elu") return where(gt(x, 0.0), x, (exp(x) - 1.0) * a.alpha);
  if (f == "Softsign") return x / (abs(x) + 1.0);
  if (f == "Softplus") return softplus(x);
  c.unsupported("activation '" + f + "' is not one of ONNX's recurrent activations");
}

// The `per_direction` activations of each direction: the node's list (alphas and betas
// consumed in order by the functions that take them) or the operator's defaults.
std::vector<RecurrentActivation> recurrent_activations(const NodeContext& c, const std::vector<std::string>& defaults,
                                                       int directions) {
  std::vector<std::string> names;
  if (c.attrs.has("activations")) {
    for (const std::string& n : c.attrs.raw("activations").strings()) names.push_back(n);
  } else {
    for (int d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * size_t(directions)) {
    c.invalid("activations lists " + std::to_string(names.size()) + " functions; this node needs " +
              std::to_string(defaults.size() * size_t(directions)));
  }
  const std::vector<float> alphas = c.attrs.has("activation_alpha") ? c.attrs.floats("activation_alpha") : std::vector<float>{};
  const std::vector<float> betas = c.attrs.has("activation_beta") ? c.attrs.floats("activation_beta") : std::vector<float>{};
  size_t next_alpha = 0, next_beta = 0;
  std::vector<RecurrentActivation> out;
  for (const std::string& n : names) {
    // Each function's own defaults where the lists run out.
    static const std::map<std::string, std::pair<double, double>> kDefaults = {
        {"LeakyRelu", {0.01, 0}}, {"HardSigmoid", {0.2, 0.5}}, {"Affine", {1, 0}},
        {"ScaledTanh", {1, 1}},   {"ThresholdedRelu", {1, 0}}, {"Elu", {1, 0}}};
    RecurrentActivation a{n};
    const auto d = kDefaults.find(n);
    if (d != kDefaults.end()) {
      a.alpha = next_alpha < alphas.size() ? alphas[next_alpha++] : d->second.first;
      const bool has_beta = n == "HardSigmoid" || n == "Affine" || n == "ScaledTanh";
      if (has_beta) a.beta = next_beta < betas.size() ? betas[next_beta++] : d->second.second;
    }
    out.push_back(a);
  }
  return out;
}

// Along axis 0 (time), each batch entry's first lens[b] steps reversed (all of them
// without lens): its own inverse, so outputs are put back the same way.
Tensor reverse_steps(const Tensor& x, const std::optional<Tensor>& lens) {
  const int64_t steps = dim(x, 0);
  if (!lens) {
    std::vector<int64_t> back;
    for (int64_t t = steps - 1; t >= 0; --t) back.push_back(t);
    return index_select(x, 0, i64(back, {steps}));
  }
  const Tensor t = reshape(arange(0, double(steps), 1, DType::I64), {steps, 1, 1});
  const Tensor len = reshape(*lens, {1, -1, 1});
  return gather(x, 0, expand(where(lt(t, len), len - 1.0 - t, t), sizes(x)));
}

// RNN, GRU and LSTM, unrolled over the (static) sequence: the input projections of all
// steps are one matmul per direction, each step one matmul by R and the gates. With
// sequence_lens, a batch entry's state stops at its length and its later outputs are 0.
Outs recurrent_op(const NodeContext& c) {
  const std::string op = c.node.op_type();
  const int gates = op == "RNN" ? 1 : op == "GRU" ? 3 : 4;
  Tensor x = c.in(0);
  if (rank_of(x) != 3) c.invalid("X must have rank 3, not " + std::to_string(rank_of(x)));
  const bool batch_first = c.attrs.i("layout", 0) != 0;
  if (batch_first) x = permute(x, {1, 0, 2});
  const int64_t steps = dim(x, 0), batch = dim(x, 1), input = dim(x, 2);
  const std::string direction = c.attrs.s("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    c.invalid("direction '" + direction + "' is not one of forward, reverse, bidirectional");
  }
  const int dirs = direction == "bidirectional" ? 2 : 1;
  const Tensor& w = c.in(1);
  const Tensor& r = c.in(2);
  const int64_t hidden = c.attrs.i("hidden_size", dim(r, 2));
  const int64_t gh = gates * hidden;
  const std::vector<int64_t> w_shape = {dirs, gh, input}, r_shape = {dirs, gh, hidden};
  if (sizes(w) != w_shape || sizes(r) != r_shape) c.invalid("W or R does not match hidden_size and the input's size");
  if (c.attrs.i("input_forget", 0) != 0) c.unsupported("input_forget = 1 is not supported");
  const DType dt = x.dtype();
  const Tensor b = c.has(3) ? c.in(3) : zeros(Shape({dirs, 2 * gh}), dt);
  std::optional<Tensor> lens;
  if (c.has(4)) lens = cast(c.in(4), DType::I64);
  auto state = [&](size_t k) {
    if (!c.has(k)) return zeros(Shape({dirs, batch, hidden}), dt);
    return batch_first ? permute(c.in(k), {1, 0, 2}) : c.in(k);
  };
  const Tensor h0 = state(5), c0 = state(6);
  const Tensor peep = c.has(7) ? c.in(7) : zeros(Shape({dirs, 3 * hidden}), dt);
  const std::vector<std::string> defaults = op == "RNN"   ? std::vector<std::string>{"Tanh"}
                                            : op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const std::vector<RecurrentActivation> acts = recurrent_activations(c, defaults, dirs);
  const bool clipped = c.attrs.has("clip");
  const double clip = c.attrs.f("clip", 0);
  const bool linear_before_reset = c.attrs.i("linear_before_reset", 0) != 0;

  auto row = [](const Tensor& t, int64_t k) { return squeeze(slice(t, 0, k, k + 1), 0); };
  auto gate = [&](const Tensor& t, int64_t k) { return slice(t, 1, k * hidden, (k + 1) * hidden); };
  std::vector<Tensor> ys, hs, cs;
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const RecurrentActivation* f = &acts[size_t(d) * defaults.size()];
    auto act = [&](int k, const Tensor& v) { return activate(c, f[k], clipped ? clamp(v, -clip, clip) : v); };
    const Tensor wd = row(w, d), rt = transpose(row(r, d), 0, 1), bd = row(b, d);
    const Tensor wb = slice(bd, 0, 0, gh), rb = slice(bd, 0, gh, 2 * gh);
    const Tensor xs = reverse ? reverse_steps(x, lens) : x;
    const Tensor proj = reshape(matmul(reshape(xs, {steps * batch, input}), transpose(wd, 0, 1)) + wb, {steps, batch, gh});
    const Tensor pd = row(peep, d);
    Tensor h = row(h0, d), cell = row(c0, d);
    std::vector<Tensor> outs;
    for (int64_t t = 0; t < steps; ++t) {
      const Tensor xw = row(proj, t);
      Tensor h_new, c_new;
      if (op == "RNN") {
        h_new = act(0, xw + matmul(h, rt) + rb);
      } else if (op == "GRU") {
        const Tensor rt_z = slice(rt, 1, 0, hidden), rt_r = slice(rt, 1, hidden, 2 * hidden), rt_h = slice(rt, 1, 2 * hidden, gh);
        const Tensor z = act(0, gate(xw, 0) + matmul(h, rt_z) + slice(rb, 0, 0, hidden));
        const Tensor rs = act(0, gate(xw, 1) + matmul(h, rt_r) + slice(rb, 0, hidden, 2 * hidden));
        const Tensor rbh = slice(rb, 0, 2 * hidden, gh);
        const Tensor cand = linear_before_reset ? act(1, gate(xw, 2) + rs * (matmul(h, rt_h) + rbh))
                                                : act(1, gate(xw, 2) + matmul(rs * h, rt_h) + rbh);
        h_new = (1.0 - z) * cand + z * h;
      } else {  // LSTM: gates i, o, f, c; peepholes i, o, f
        const Tensor hr = matmul(h, rt) + rb;
        auto pre = [&](int64_t k) { return gate(xw, k) + gate(hr, k); };
        const Tensor pi = slice(pd, 0, 0, hidden), po = slice(pd, 0, hidden, 2 * hidden), pf = slice(pd, 0, 2 * hidden, 3 * hidden);
        const Tensor i = act(0, pre(0) + pi * cell), fg = act(0, pre(2) + pf * cell);
        c_new = fg * cell + i * act(1, pre(3));
        const Tensor o = act(0, pre(1) + po * c_new);
        h_new = o * act(2, c_new);
      }
      if (lens) {
        const Tensor valid = reshape(lt(scalar(double(t), DType::I64), *lens), {batch, 1});
        h_new = where(valid, h_new, h);
        if (op == "LSTM") c_new = where(valid, c_new, cell);
        outs.push_back(where(valid, h_new, scalar_like(0, h_new)));
      } else {
        outs.push_back(h_new);
      }
      h = h_new;
      if (op == "LSTM") cell = c_new;
    }
    Tensor y = stack(outs, 0);  // [steps, batch, hidden]
    if (reverse) y = reverse_steps(y, lens);
    ys.push_back(y), hs.push_back(h), cs.push_back(cell);
  }
  Tensor y = stack(ys, 1);  // [steps, dirs, batch, hidden]
  Tensor y_h = stack(hs, 0), y_c = stack(cs, 0);
  if (batch_first) y = permute(y, {2, 0, 1, 3}), y_h = permute(y_h, {1, 0, 2}), y_c = permute(y_c, {1, 0, 2});
  if (op == "LSTM") return {y, y_h, y_c};
  return {y, y_h};
}

// ---- activations ---------------------------------------------------------------------

Converter activation(const std::function<Tensor(const NodeContext&, const Tensor&)>& f) {
  return [f](const NodeContext& c) { return Outs{f(c, c.in(0))}; };
}

}  // namespace

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = [] {
    std::map<std::string, Converter> t;
    // Elementwise.
    t["Abs"] = unary(abs), t["Neg"] = unary(neg), t["Exp"] = unary(exp), t["Log"] = unary(log);
    t["Sqrt"] = unary(sqrt), t["Relu"] = unary(relu), t["Sigmoid"] = unary(sigmoid), t["Tanh"] = unary(tanh);
    t["Sin"] = unary(sin), t["Cos"] = unary(cos), t["Tan"] = unary(tan), t["Erf"] = unary(erf);
    t["Asin"] = unary(asin), t["Acos"] = unary(acos), t["Atan"] = unary(atan);
    t["Asinh"] = unary(asinh), t["Acosh"] = unary(acosh), t["Atanh"] = unary(atanh);
    t["Floor"] = unary(floor), t["Ceil"] = unary(ceil), t["Round"] = unary(round), t["Not"] = unary(logical_not);
    t["Softplus"] = unary(softplus);
    t["Identity"] = [](const NodeContext& c) { return Outs{c.in(0)}; };
    t["Resize"] = resize_op, t["Upsample"] = resize_op;
    t["Reciprocal"] = activation([](const NodeContext&, const Tensor& x) { return 1.0 / x; });
    t["Softsign"] = activation([](const NodeContext&, const Tensor& x) { return x / (abs(x) + 1.0); });
    t["Sign"] = activation([](const NodeContext&, const Tensor& x) {
      return where(gt(x, 0.0), scalar_like(1, x), where(lt(x, 0.0), scalar_like(-1, x), scalar_like(0, x)));
    });
    t["LeakyRelu"] = activation([](const NodeContext& c, const Tensor& x) { return leaky_relu(x, c.attrs.f("alpha", 0.01f)); });
    t["Elu"] = activation([](const NodeContext& c, const Tensor& x) {
      return where(gt(x, 0.0), x, (exp(x) - 1.0) * double(c.attrs.f("alpha", 1.0f)));
    });
    t["Selu"] = activation([](const NodeContext& c, const Tensor& x) {
      const double alpha = c.attrs.f("alpha", 1.67326319217681884765625f), gamma = c.attrs.f("gamma", 1.05070102214813232421875f);
      return where(gt(x, 0.0), x * gamma, (exp(x) - 1.0) * (alpha * gamma));
    });
    t["Celu"] = activation([](const NodeContext& c, const Tensor& x) {
      const double alpha = c.attrs.f("alpha", 1.0f);
      return relu(x) + minimum(scalar_like(0, x), (exp(x / alpha) - 1.0) * alpha);
    });
    t["HardSigmoid"] = activation([](const NodeContext& c, const Tensor& x) {
      return clamp(x * double(c.attrs.f("alpha", 0.2f)) + double(c.attrs.f("beta", 0.5f)), 0.0, 1.0);
    });
    t["HardSwish"] = activation([](const NodeContext&, const Tensor& x) { return x * clamp(x * (1.0 / 6) + 0.5, 0.0, 1.0); });
    t["ThresholdedRelu"] = activation([](const NodeContext& c, const Tensor& x) {
      return where(gt(x, double(c.attrs.f("alpha", 1.0f))), x, scalar_like(0, x));
    });
    t["Mish"] = activation([](const NodeContext&, const Tensor& x) { return x * tanh(softplus(x)); });
    t["PRelu"] = [](const NodeContext& c) {
      const Tensor& x = c.in(0);
      Tensor slope = c.in(1);
      // Before opset 7, a slope per channel is 1-D.
      if (c.opset < 7 && rank_of(slope) == 1 && rank_of(x) > 2 && dim(slope, 0) == dim(x, 1)) {
        std::vector<int64_t> shape(static_cast<size_t>(rank_of(x) - 1), 1);
        shape[0] = dim(x, 1);
        slope = reshape(slope, shape);
      }
      return Outs{where(lt(x, 0.0), x * slope, x)};
    };
    t["Add"] = binary(add), t["Sub"] = binary(sub), t["Mul"] = binary(mul), t["Div"] = binary(div);
    t["Pow"] = [](const NodeContext& c) { return Outs{cast(pow(c.in(0), cast(c.in(1), c.in(0).dtype())), c.in(0).dtype())}; };
    t["Equal"] = binary(eq), t["Less"] = binary(lt), t["LessOrEqual"] = binary(le), t["Greater"] = binary(gt);
    t["GreaterOrEqual"] = binary(ge), t["And"] = binary(logical_and), t["Or"] = binary(logical_or);
    t["Xor"] = binary(ne);
    t["Max"] = variadic(maximum), t["Min"] = variadic(minimum), t["Sum"] = variadic(add);
    t["Mean"] = variadic(add, true);
    t["Where"] = [](const NodeContext& c) { return Outs{where(c.in(0), c.in(1), c.in(2))}; };
    t["Clip"] = clip;
    t["Cast"] = cast_op;
    t["CastLike"] = [](const NodeContext& c) { return Outs{cast(c.in(0), c.in(1).dtype())}; };
    // Reductions.
    t["ReduceSum"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return sum(x, a, k); });
    t["ReduceMean"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return mean(x, a, k); });
    t["ReduceMax"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return max(x, a, k); });
    t["ReduceMin"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return min(x, a, k); });
    t["ReduceProd"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return prod(x, a, k); });
    t["ReduceSumSquare"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return sum(x * x, a, k); });
    t["ReduceL1"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return sum(abs(x), a, k); });
    t["ReduceL2"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return sqrt(sum(x * x, a, k)); });
    t["ReduceLogSum"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) { return log(sum(x, a, k)); });
    t["ReduceLogSumExp"] = reduction([](const Tensor& x, const std::vector<int64_t>& a, bool k) {
      const Tensor m = max(x, a, true);
      const Tensor r = log(sum(exp(x - m), a, true)) + m;
      if (k) return r;
      std::vector<int64_t> sorted = a;
      if (sorted.empty()) return reshape(r, {});
      std::sort(sorted.rbegin(), sorted.rend());
      Tensor out = r;
      for (int64_t d : sorted) out = squeeze(out, d);
      return out;
    });
    t["ArgMax"] = arg_reduction(true), t["ArgMin"] = arg_reduction(false);
    t["Softmax"] = softmax_like(false), t["LogSoftmax"] = softmax_like(true);
    // Shapes and data movement.
    t["Shape"] = shape_op;
    t["Size"] = [](const NodeContext& c) { return Outs{i64({c.in(0).numel()}, {})}; };
    t["Reshape"] = reshape_op, t["Flatten"] = flatten_op, t["Transpose"] = transpose_op;
    t["Squeeze"] = squeeze_op, t["Unsqueeze"] = unsqueeze_op, t["Concat"] = concat_op, t["Slice"] = slice_op;
    t["Gather"] = gather_op, t["GatherElements"] = gather_elements_op, t["Expand"] = expand_op, t["Tile"] = tile_op;
    t["Split"] = split_op, t["Constant"] = constant_op, t["ConstantOfShape"] = constant_of_shape_op;
    t["Range"] = range_op, t["Dropout"] = dropout_op, t["Pad"] = pad_op, t["Trilu"] = trilu_op;
    // Contractions, windows, normalization.
    t["MatMul"] = matmul_op, t["Gemm"] = gemm_op, t["Conv"] = conv_op, t["ConvTranspose"] = conv_transpose_op;
    t["MaxPool"] = max_pool_op, t["AveragePool"] = avg_pool_op;
    t["GlobalAveragePool"] = global_pool(false), t["GlobalMaxPool"] = global_pool(true);
    t["BatchNormalization"] = batch_norm_op, t["LayerNormalization"] = layer_norm_op;
    t["InstanceNormalization"] = instance_norm_op, t["LRN"] = lrn_op;
    // Losses and the rest.
    t["NegativeLogLikelihoodLoss"] = nll_op, t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy_op;
    t["Mod"] = mod_op, t["CumSum"] = cumsum_op, t["Hardmax"] = hardmax_op, t["OneHot"] = one_hot_op;
    t["GatherND"] = gather_nd_op, t["ScatterND"] = scatter_nd_op, t["ScatterElements"] = scatter_elements_op;
    t["Scatter"] = scatter_elements_op;  // opset 9-10's name for ScatterElements
    t["GridSample"] = grid_sample_op, t["TopK"] = top_k_op;
    t["RNN"] = recurrent_op, t["GRU"] = recurrent_op, t["LSTM"] = recurrent_op;
    t["ReverseSequence"] = reverse_sequence_op, t["Einsum"] = einsum_op;
    t["MeanVarianceNormalization"] = mean_variance_normalization_op;
    t["HannWindow"] = window(0.5, 0.5, 0), t["HammingWindow"] = window(25.0 / 46, 21.0 / 46, 0);
    t["BlackmanWindow"] = window(0.42, 0.5, 0.08);
    t["EyeLike"] = eye_like_op, t["DepthToSpace"] = depth_to_space_op, t["SpaceToDepth"] = space_to_depth_op;
    t["IsNaN"] = activation([](const NodeContext&, const Tensor& x) { return ne(x, x); });
    t["IsInf"] = activation([](const NodeContext& c, const Tensor& x) {
      const bool pos = c.attrs.i("detect_positive", 1) != 0, neg_inf = c.attrs.i("detect_negative", 1) != 0;
      const Tensor p = eq(x, INFINITY), n = eq(x, -INFINITY);
      return pos && neg_inf ? logical_or(p, n) : pos ? p : neg_inf ? n : logical_and(p, n);
    });
    t["Sinh"] = activation([](const NodeContext&, const Tensor& x) { return (exp(x) - exp(neg(x))) * 0.5; });
    t["Cosh"] = activation([](const NodeContext&, const Tensor& x) { return (exp(x) + exp(neg(x))) * 0.5; });
    t["Shrink"] = activation([](const NodeContext& c, const Tensor& x) {
      const double bias = c.attrs.f("bias", 0), lambd = c.attrs.f("lambd", 0.5f);
      return where(lt(x, -lambd), x + bias, where(gt(x, lambd), x - bias, scalar_like(0, x)));
    });
    return t;
  }();
  return table;
}

}  // namespace kiln::onnx
