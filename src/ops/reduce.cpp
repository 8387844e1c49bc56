// Reductions over a set of axes, with keepdim: sum, mean, max.
#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "ops/math/ieee.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

enum class Reducer { Sum, Mean, Max, Min, Prod };

// Axes to reduce, normalized and sorted; an empty "axes" attribute means all axes.
std::vector<int> reduced_axes(const std::string& op, const TensorMeta& in, const Attrs& a) {
  const int rank = in.shape.rank();
  std::set<int> axes;
  const std::vector<int64_t>& given = a.get_ints("axes");
  if (given.empty()) {
    for (int i = 0; i < rank; ++i) axes.insert(i);
  }
  for (int64_t ax : given) {
    if (!axes.insert(normalize_axis(ax, rank, op)).second) {
      user_error(op, ": axis ", ax, " is given twice in axes for input ", in.str());
    }
  }
  return {axes.begin(), axes.end()};
}

DType result_dtype(Reducer r, DType in) {
  switch (r) {
    case Reducer::Sum: return is_float(in) ? in : DType::I64;
    case Reducer::Mean: return is_float(in) ? in : DType::F32;
    case Reducer::Max:
    case Reducer::Min: return in;
    case Reducer::Prod: return is_float(in) ? in : DType::I64;
  }
  return in;
}

TensorMeta infer_reduction(const std::string& op, Reducer r, const TensorMeta& in,
                           const Attrs& a) {
  std::vector<int> axes = reduced_axes(op, in, a);
  bool keepdim = a.get_bool("keepdim");
  std::vector<Dim> out;
  for (int i = 0; i < in.shape.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    // Sum and prod of nothing are their identities, a mean of nothing is NaN (PyTorch).
    bool defined_when_empty = r == Reducer::Sum || r == Reducer::Prod || r == Reducer::Mean;
    if (reduced && !defined_when_empty && in.shape[i].is_static() && in.shape[i].size == 0) {
      user_error(op, ": cannot reduce over axis ", i, " of ", in.str(),
                 ": it is empty and ", op, " has no identity");
    }
    if (!reduced) out.push_back(in.shape[i]);
    else if (keepdim) out.emplace_back(1);
  }
  return {result_dtype(r, in.dtype), Shape(std::move(out))};
}

Expr lowest(Halide::Type t) {
  return t.is_float() ? Halide::cast(t, Expr(-std::numeric_limits<float>::infinity()))
                      : t.min();
}
Expr highest(Halide::Type t) {
  return t.is_float() ? Halide::cast(t, Expr(std::numeric_limits<float>::infinity())) : t.max();
}

// Float max and min reduce ordered integer keys: a float's key orders like the float, and
// NaN's key lies beyond every other, so NaN wins (as in PyTorch). An integer max is
// associative, so a schedule may split the reduction (rfactor: vectorized rows on a CPU,
// partial results in parallel on a GPU), which a NaN-propagating select would forbid.
Expr nan_key(Halide::Type key_type, bool is_max) { return is_max ? key_type.max() : key_type.min(); }

Expr flip_negative(const Expr& bits) {
  // Negative floats order backwards as integers: flipping all but the sign bit fixes that
  // (and is its own inverse).
  Halide::Type t = bits.type();
  Expr low_bits = Halide::cast(t, Halide::Expr(int64_t((uint64_t(1) << (t.bits() - 1)) - 1)));
  return Halide::select(bits < 0, bits ^ low_bits, bits);
}

Expr ordered_key(const Expr& x, bool is_max) {
  Halide::Type kt = Halide::Int(x.type().bits());
  // The sentinels are NaN bit patterns themselves, so no number's key equals them.
  return Halide::select(algo::is_nan(x), nan_key(kt, is_max), flip_negative(Halide::reinterpret(kt, x)));
}

Expr from_ordered_key(const Expr& key, Halide::Type float_type, bool is_max) {
  Expr nan = Halide::cast(float_type, Expr(std::numeric_limits<double>::quiet_NaN()));
  return Halide::select(key == nan_key(key.type(), is_max), nan, Halide::reinterpret(float_type, flip_negative(key)));
}

// The longest static f32 reduction that accumulates in f32 (about 2e-4 relative error at
// worst, sqrt(n) ulps typically).
constexpr int64_t kF32AccumulatedCount = 4096;

Func reduction_algorithm(const std::string& op, Reducer r, const std::vector<Func>& in,
                         const OpCall& c) {
  const TensorMeta& im = c.inputs[0];
  const int ri = im.shape.rank();
  std::vector<int> axes = reduced_axes(op, im, c.attrs);
  const bool keepdim = c.attrs.get_bool("keepdim");
  auto vo = algo::vars(c.output.shape.rank());

  // RDom dims in Halide order (innermost first) so the innermost loop walks memory.
  std::vector<Halide::Range> ranges;
  Expr count = Halide::cast(Halide::Float(64), 1);
  for (int j = 0; j < ri; ++j) {
    int axis = ri - 1 - j;
    if (std::find(axes.begin(), axes.end(), axis) == axes.end()) continue;
    Expr e = c.extent(im.shape[axis]);
    ranges.emplace_back(0, e);
    count = count * Halide::cast(Halide::Float(64), e);
  }

  // The number of elements each output reduces, where every reduced dim is static.
  int64_t static_count = 1;
  for (int axis : axes) static_count = im.shape[axis].is_static() && static_count > 0 ? static_count * im.shape[axis].size : 0;
  bool extremum = r == Reducer::Max || r == Reducer::Min;
  DType acc_dtype = extremum ? compute_dtype(im.dtype) : compute_dtype(c.output.dtype);
  // Long f32 sums and products accumulate in f64: an f32 accumulator's error grows with
  // the count (the mean of 1e6 values was 0.8% off). Up to kF32AccumulatedCount elements
  // (static) f32 stays, as PyTorch's cascade sums keep it: twice the lanes per vector.
  if (!extremum && acc_dtype == DType::F32 && !(static_count > 0 && static_count <= kF32AccumulatedCount)) {
    acc_dtype = DType::F64;
  }
  Halide::Type at = algo::halide_type(acc_dtype);
  Func out(algo::func_name(op));
  if (ranges.empty()) {  // nothing to reduce (a 0-d input)
    out(vo) = algo::to_storage(Halide::cast(at, in[0]()), c.output.dtype);
    return out;
  }
  // A reduction over an empty dim is its identity (a mean's is NaN) with no loop to
  // schedule: a schedule's tasks over an empty reduction were left uninitialized.
  for (int axis : axes) {
    if (im.shape[axis].is_static() && im.shape[axis].size == 0) {
      const double identity = r == Reducer::Prod ? 1.0 : r == Reducer::Mean ? std::nan("") : 0.0;
      out(vo) = algo::to_storage(algo::constant(at, identity), c.output.dtype);
      return out;
    }
  }
  Halide::RDom rdom(ranges, op + "_r");
  // The accumulator has the kept dims only (keepdim's size-1 dims are added back by `out`),
  // so a schedule sees the dims it can parallelize and vectorize.
  std::vector<Expr> idx, out_kept;
  std::vector<Halide::Var> kept;
  std::vector<int64_t> kept_extents;  // static sizes (0: dynamic), innermost first
  int next_rvar = 0, next_out = 0;
  for (int j = 0; j < ri; ++j) {
    int axis = ri - 1 - j;
    bool reduced = std::find(axes.begin(), axes.end(), axis) != axes.end();
    if (reduced) {
      idx.push_back(rdom[next_rvar++]);
      if (keepdim) ++next_out;
    } else {
      Halide::Var k("k" + std::to_string(kept.size()));
      kept.push_back(k);
      kept_extents.push_back(im.shape[axis].is_static() ? im.shape[axis].size : 0);
      idx.push_back(k);
      out_kept.push_back(vo[size_t(next_out++)]);
    }
  }
  Expr x = Halide::cast(at, in[0](idx));
  // Reading along the innermost input dim: vectorize across it, reduce in the outer loops.
  const bool innermost_kept = std::find(axes.begin(), axes.end(), ri - 1) == axes.end();

  Func acc(op + "_acc");
  const bool is_max = r == Reducer::Max;
  if (extremum && at.is_float()) {
    acc(kept) = ordered_key(is_max ? lowest(at) : highest(at), is_max);
    acc(kept) = is_max ? Halide::max(acc(kept), ordered_key(x, is_max)) : Halide::min(acc(kept), ordered_key(x, is_max));
  } else if (extremum) {
    acc(kept) = is_max ? lowest(at) : highest(at);
    acc(kept) = is_max ? Halide::max(acc(kept), x) : Halide::min(acc(kept), x);
  } else if (r == Reducer::Prod) {
    acc(kept) = Halide::cast(at, 1);
    acc(kept) = algo::accumulate(acc(kept), x, /*product=*/true);
  } else {
    acc(kept) = Halide::cast(at, 0);
    acc(kept) = algo::accumulate(acc(kept), x);
  }
  c.stages->push_back({acc, /*pure_innermost=*/innermost_kept, /*serial=*/false, kept_extents});
  Expr result = extremum && at.is_float() ? from_ordered_key(acc(out_kept), at, is_max) : acc(out_kept);
  // Strict: LLVM's fast-math flags on the division let a consumer's inf test fold away
  // (log(mean) of an infinite mean was 88.72, log of the largest float).
  if (r == Reducer::Mean) result = Halide::strict_float(math::divide(result, Halide::cast(at, count)));  // empty: NaN
  out(vo) = algo::to_storage(result, c.output.dtype);
  return out;
}

Tensor reduction_reference(const std::string& op, Reducer r, const Tensor& in_t,
                           const Attrs& a, const TensorMeta& out) {
  Tensor in = in_t.to_host();
  std::vector<int> axes = reduced_axes(op, in.meta(), a);
  std::vector<int64_t> sizes = in.sizes(), strides = ref::strides(sizes);
  std::vector<int64_t> kept_sizes, kept_strides, red_sizes, red_strides;
  for (int i = 0; i < in.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    (reduced ? red_sizes : kept_sizes).push_back(sizes[size_t(i)]);
    (reduced ? red_strides : kept_strides).push_back(strides[size_t(i)]);
  }
  int64_t red_n = 1;
  for (int64_t s : red_sizes) red_n *= s;
  Tensor result = empty(out.shape, out.dtype);
  void* dst = result.mutable_data();
  const void* src = in.data();
  const int64_t n = result.numel();
  // Integer results of integer inputs (sum, prod, max, min of bool, i32 and i64).
  const bool integer = !is_float(in.dtype()) && !is_float(out.dtype) && r != Reducer::Mean;
#pragma omp parallel for schedule(static) if (n * red_n > 65536)
  for (int64_t o = 0; o < n; ++o) {
    std::vector<int64_t> ko = ref::unravel(o, kept_sizes);
    int64_t base = 0;
    for (size_t k = 0; k < ko.size(); ++k) base += ko[k] * kept_strides[k];
    auto offset = [&](int64_t q) {
      std::vector<int64_t> kr = ref::unravel(q, red_sizes);
      int64_t off = base;
      for (size_t k = 0; k < kr.size(); ++k) off += kr[k] * red_strides[k];
      return off;
    };
    if (integer) {
      // Exact, wrapping on 64 bits as the kernels' integer accumulators do.
      uint64_t acc = r == Reducer::Prod ? 1 : 0;
      // An empty max or min is the type's lowest or highest value, as the kernels' start.
      const int64_t type_lo = out.dtype == DType::I32 ? INT32_MIN : out.dtype == DType::I64 ? INT64_MIN : 0;
      const int64_t type_hi = out.dtype == DType::I32 ? INT32_MAX : out.dtype == DType::I64 ? INT64_MAX : 1;
      int64_t ext = r == Reducer::Max ? type_lo : type_hi;
      for (int64_t q = 0; q < red_n; ++q) {
        const int64_t v = ref::load_as_int64(src, in.dtype(), offset(q));
        if (r == Reducer::Max) ext = std::max(ext, v);
        else if (r == Reducer::Min) ext = std::min(ext, v);
        else if (r == Reducer::Prod) acc *= uint64_t(v);
        else acc += uint64_t(v);
      }
      const int64_t value = r == Reducer::Max || r == Reducer::Min ? ext : int64_t(acc);
      if (out.dtype == DType::I32) static_cast<int32_t*>(dst)[o] = int32_t(uint32_t(uint64_t(value)));
      else if (out.dtype == DType::I64) static_cast<int64_t*>(dst)[o] = value;
      else static_cast<uint8_t*>(dst)[o] = value != 0;
      continue;
    }
    double acc = r == Reducer::Max ? -INFINITY : r == Reducer::Min ? INFINITY : r == Reducer::Prod ? 1.0 : 0.0;
    for (int64_t q = 0; q < red_n; ++q) {
      double v = load_as_double(src, in.dtype(), offset(q));
      if (r == Reducer::Max) acc = (std::isnan(acc) || acc >= v) ? acc : v;
      else if (r == Reducer::Min) acc = (std::isnan(acc) || acc <= v) ? acc : v;
      else if (r == Reducer::Prod) acc *= v;
      else acc += v;
    }
    if (r == Reducer::Mean) acc /= double(red_n);
    store_from_double(dst, out.dtype, o, acc);
  }
  return result;
}

OpDef reduction_op(const std::string& name, Reducer r) {
  OpDef d;
  d.name = name;
  d.kind = OpKind::Reduction;
  d.infer = [name, r](const std::vector<TensorMeta>& in, const Attrs& a) {
    return infer_reduction(name, r, in[0], a);
  };
  d.algorithm = [name, r](const std::vector<Func>& in, const OpCall& c) {
    return reduction_algorithm(name, r, in, c);
  };
  d.reference = [name, r](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
    return reduction_reference(name, r, in[0], a, out);
  };
  return d;
}

// ---- softmax / log_softmax over one axis, numerically stable ------------------------------
//   m = max(x), e = exp(x - m), s = sum(e); softmax = e / s, log_softmax = x - m - log(s).

struct AxisView {
  int axis;   // kiln axis
  int hdim;   // Halide dim of the axis
};

AxisView axis_of(const std::string& op, const TensorMeta& in, const Attrs& a) {
  int axis = normalize_axis(a.get_int("axis"), in.shape.rank(), op);
  return {axis, in.shape.rank() - 1 - axis};
}

// Func over the input's dims with the axis dim replaced by an RDom / fixed to 0.
std::vector<Expr> with_dim(const std::vector<Halide::Var>& v, int hdim, Expr e) {
  std::vector<Expr> idx(v.begin(), v.end());
  idx[size_t(hdim)] = e;
  return idx;
}

OpDef softmax_op(const std::string& name, bool log_form) {
  OpDef d;
  d.name = name;
  d.kind = OpKind::Reduction;
  d.infer = [name](const std::vector<TensorMeta>& in, const Attrs& a) {
    axis_of(name, in[0], a);
    return TensorMeta{is_float(in[0].dtype) ? in[0].dtype : DType::F32, in[0].shape};
  };
  d.algorithm = [name, log_form](const std::vector<Func>& in, const OpCall& c) {
    AxisView ax = axis_of(name, c.inputs[0], c.attrs);
    auto v = algo::vars(c.output.shape.rank());
    Halide::Type ct = algo::halide_type(compute_dtype(c.output.dtype));
    Func x(name + "_x");
    x(v) = Halide::cast(ct, in[0](v));
    Halide::RDom r(0, c.extent(c.inputs[0].shape[ax.axis]), name + "_r");
    Func m(name + "_max"), s(name + "_sum");
    m(v) = lowest(ct);
    m(v) = Halide::max(m(v), x(with_dim(v, ax.hdim, r)));
    // m and s are read at index 0 of the axis only, so only that slice is computed.
    std::vector<Expr> at0 = with_dim(v, ax.hdim, 0);
    // e is a Func of its own, read by s and by softmax's output: the scheduler chooses
    // between computing each exp twice (inlined) and storing a row of them.
    Func e(name + "_exp");
    // IEEE throughout, as PyTorch: a NaN anywhere in a row, or an infinite max (inf - inf),
    // makes exp NaN and so the whole row NaN through the sum.
    e(v) = math::exp(Halide::strict_float(x(v) - m(at0)));  // a 1-long row: x - max(x) is not 0 at NaN
    s(v) = Halide::cast(ct, 0);
    s(v) = algo::accumulate(s(v), e(with_dim(v, ax.hdim, r)));
    c.stages->push_back({m});
    c.stages->push_back({s});
    Func out(name);
    // Each exp times the row's reciprocal sum, as PyTorch's CPU kernel computes it: a
    // vector division per element took a 1024 x 4096 softmax from 1.05 to 1.28 ms on a
    // 2-core AVX-512 VM (division issues far slower than multiplication).
    // log_softmax subtracts the max first: reassociated as x - (m + log s), large logits
    // lose log s entirely (1e8 + 1.39 == 1e8 in f32).
    Expr y = log_form ? Halide::strict_float((x(v) - m(at0)) - math::log(s(at0)))
                      : Halide::strict_float(e(v) * (Halide::cast(ct, 1) / s(at0)));  // LLVM's fast-math folds e / e to 1
    out(v) = algo::to_storage(y, c.output.dtype);
    return out;
  };
  d.reference = [name, log_form](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
    Tensor x = in[0].to_host();
    AxisView ax = axis_of(name, x.meta(), a);
    std::vector<int64_t> sizes = x.sizes();
    int64_t n = sizes[size_t(ax.axis)], inner = 1, outer = 1;
    for (int i = ax.axis + 1; i < x.rank(); ++i) inner *= sizes[size_t(i)];
    for (int i = 0; i < ax.axis; ++i) outer *= sizes[size_t(i)];
    std::vector<double> v = x.to_doubles(), o(v.size());
#pragma omp parallel for collapse(2) if (outer * inner > 1024)
    for (int64_t p = 0; p < outer; ++p) {
      for (int64_t q = 0; q < inner; ++q) {
        auto at = [&](int64_t k) { return size_t((p * n + k) * inner + q); };
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < n; ++k) m = std::max(m, v[at(k)]);
        for (int64_t k = 0; k < n; ++k) s += std::exp(v[at(k)] - m);
        for (int64_t k = 0; k < n; ++k) o[at(k)] = log_form ? v[at(k)] - m - std::log(s) : std::exp(v[at(k)] - m) / s;
      }
    }
    return from_vector(o, out.shape, out.dtype);
  };
  return d;
}

// ---- layer_norm / rms_norm over the last `dims` axes (no affine: the API adds it) ----------
//   layer_norm = (x - mean) / sqrt(var + eps), var biased; rms_norm = x / sqrt(mean(x^2) + eps).

OpDef normalize_op(const std::string& name, bool center) {
  OpDef d;
  d.name = name;
  d.kind = OpKind::Reduction;
  d.infer = [name](const std::vector<TensorMeta>& in, const Attrs& a) {
    int64_t k = a.get_int("dims");
    if (k < 1 || k > in[0].shape.rank()) {
      user_error(name, ": normalizing over the last ", k, " dims of ", in[0].str(),
                 " is impossible; dims must be in 1..", in[0].shape.rank());
    }
    return TensorMeta{is_float(in[0].dtype) ? in[0].dtype : DType::F32, in[0].shape};
  };
  d.algorithm = [name, center](const std::vector<Func>& in, const OpCall& c) {
    const TensorMeta& im = c.inputs[0];
    const int rank = im.shape.rank(), k = int(c.attrs.get_int("dims"));
    auto v = algo::vars(rank);
    Halide::Type ct = algo::halide_type(compute_dtype(c.output.dtype));
    Func x(name + "_x");
    x(v) = Halide::cast(ct, in[0](v));
    // The normalized dims are Halide dims 0..k-1; the statistics live on the others.
    std::vector<Halide::Range> ranges;
    Expr count = Halide::cast(ct, 1);
    for (int j = 0; j < k; ++j) {
      Expr e = c.extent(im.shape[rank - 1 - j]);
      ranges.emplace_back(0, e);
      count = count * Halide::cast(ct, e);
    }
    Halide::RDom r(ranges, name + "_r");
    std::vector<Halide::Var> outer(v.begin() + k, v.end());
    std::vector<Expr> idx;
    for (int j = 0; j < k; ++j) idx.push_back(r[j]);
    for (const auto& o : outer) idx.push_back(o);
    Func sum1(name + "_sum"), sum2(name + "_sumsq");
    sum1(outer) = Halide::cast(ct, 0);
    sum1(outer) = algo::accumulate(sum1(outer), x(idx));
    sum2(outer) = Halide::cast(ct, 0);
    // Strict: with one normalized element Halide would fold x - x/1 to 0, where an
    // infinite x must give NaN.
    Expr xc = center ? Halide::strict_float(x(idx) - math::divide(sum1(outer), count)) : x(idx);
    sum2(outer) = algo::accumulate(sum2(outer), xc * xc);  // two passes: no cancellation in the variance
    c.stages->push_back({sum1});
    c.stages->push_back({sum2});
    Func out(name);
    Expr mean = center ? math::divide(sum1(outer), count) : Halide::cast(ct, 0);
    Expr inv = Halide::cast(ct, 1) / Halide::sqrt(math::divide(sum2(outer), count) + algo::constant(ct, c.attrs.get_double("eps")));
    out(v) = algo::to_storage(Halide::strict_float(x(v) - mean) * inv, c.output.dtype);
    return out;
  };
  d.reference = [name, center](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
    Tensor x = in[0].to_host();
    int64_t k = a.get_int("dims"), inner = 1;
    for (int i = x.rank() - int(k); i < x.rank(); ++i) inner *= x.sizes()[size_t(i)];
    int64_t outer = inner ? x.numel() / inner : 0;
    double eps = a.get_double("eps");
    std::vector<double> v = x.to_doubles(), o(v.size());
#pragma omp parallel for if (outer > 64)
    for (int64_t p = 0; p < outer; ++p) {
      double mean = 0, var = 0;
      for (int64_t q = 0; q < inner; ++q) mean += v[size_t(p * inner + q)] / double(inner);
      if (!center) mean = 0;
      for (int64_t q = 0; q < inner; ++q) {
        double dlt = v[size_t(p * inner + q)] - mean;
        var += dlt * dlt / double(inner);
      }
      for (int64_t q = 0; q < inner; ++q) o[size_t(p * inner + q)] = (v[size_t(p * inner + q)] - mean) / std::sqrt(var + eps);
    }
    return from_vector(o, out.shape, out.dtype);
  };
  return d;
}

// ---- argmax(axis, keepdim): index of the first maximum; NaN counts as the maximum ----------

OpDef argmax_op() {
  OpDef d;
  d.name = "argmax";
  d.kind = OpKind::Reduction;
  d.infer = [](const std::vector<TensorMeta>& in, const Attrs& a) {
    AxisView ax = axis_of("argmax", in[0], a);
    const Dim& n = in[0].shape[ax.axis];
    if (n.is_static() && n.size == 0) user_error("argmax: axis ", ax.axis, " of ", in[0].str(), " is empty");
    std::vector<Dim> out;
    for (int i = 0; i < in[0].shape.rank(); ++i) {
      if (i != ax.axis) out.push_back(in[0].shape[i]);
      else if (a.get_bool("keepdim")) out.emplace_back(1);
    }
    return TensorMeta{DType::I64, Shape(out)};
  };
  d.algorithm = [](const std::vector<Func>& in, const OpCall& c) {
    const TensorMeta& im = c.inputs[0];
    AxisView ax = axis_of("argmax", im, c.attrs);
    const bool keepdim = c.attrs.get_bool("keepdim");
    auto vo = algo::vars(c.output.shape.rank());
    Halide::RDom r(0, c.extent(im.shape[ax.axis]), "argmax_r");
    std::vector<Expr> idx;
    for (int j = 0, o = 0; j < im.shape.rank(); ++j) {
      if (j == ax.hdim) {
        idx.push_back(r);
        if (keepdim) ++o;
      } else {
        idx.push_back(vo[size_t(o++)]);
      }
    }
    Halide::Type ct = algo::halide_type(compute_dtype(im.dtype));
    Expr x = Halide::cast(ct, in[0](idx));
    Func acc("argmax_acc");
    acc(vo) = Halide::Tuple(lowest(ct), Halide::cast<int64_t>(0));
    Expr best = acc(vo)[0];
    Expr better = x > best;  // strict: the first maximum wins
    if (ct.is_float()) better = (algo::is_nan(x) && !algo::is_nan(best)) || (!algo::is_nan(best) && better);
    acc(vo) = Halide::Tuple(Halide::select(better, x, best),
                            Halide::select(better, Halide::cast<int64_t>(r), acc(vo)[1]));
    c.stages->push_back({acc});
    Func out("argmax");
    out(vo) = acc(vo)[1];
    return out;
  };
  d.reference = [](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
    Tensor x = in[0].to_host();
    AxisView ax = axis_of("argmax", x.meta(), a);
    std::vector<int64_t> sizes = x.sizes();
    int64_t n = sizes[size_t(ax.axis)], inner = 1, outer = 1;
    for (int i = ax.axis + 1; i < x.rank(); ++i) inner *= sizes[size_t(i)];
    for (int i = 0; i < ax.axis; ++i) outer *= sizes[size_t(i)];
    std::vector<double> v = x.to_doubles(), o(size_t(outer * inner));
    for (int64_t p = 0; p < outer; ++p) {
      for (int64_t q = 0; q < inner; ++q) {
        int64_t bi = 0;
        double bv = v[size_t(p * n * inner + q)];
        for (int64_t k = 1; k < n; ++k) {
          double xv = v[size_t((p * n + k) * inner + q)];
          if (!std::isnan(bv) && (std::isnan(xv) || xv > bv)) {
            bv = xv;
            bi = k;
          }
        }
        o[size_t(p * inner + q)] = double(bi);
      }
    }
    return from_vector(o, out.shape, DType::I64);
  };
  return d;
}

}  // namespace

std::vector<OpDef> reduce_ops() {
  return {reduction_op("sum", Reducer::Sum),   reduction_op("mean", Reducer::Mean),
          reduction_op("max", Reducer::Max),   reduction_op("min", Reducer::Min),
          reduction_op("prod", Reducer::Prod), softmax_op("softmax", false),
          softmax_op("log_softmax", true),     normalize_op("layer_norm", true),
          normalize_op("rms_norm", false),     argmax_op()};
}

}  // namespace kiln
