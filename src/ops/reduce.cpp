// Reductions over a set of axes, with keepdim: sum, mean, max.
#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

enum class Reducer { Sum, Mean, Max };

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
    case Reducer::Max: return in;
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
    if (reduced && r != Reducer::Sum && in.shape[i].is_static() && in.shape[i].size == 0) {
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

  DType acc_dtype = r == Reducer::Max ? compute_dtype(im.dtype) : compute_dtype(c.output.dtype);
  Halide::Type at = algo::halide_type(acc_dtype);
  Func out(op);
  if (ranges.empty()) {  // nothing to reduce (a 0-d input)
    out(vo) = algo::to_storage(Halide::cast(at, in[0]()), c.output.dtype);
    return out;
  }
  Halide::RDom rdom(ranges, op + "_r");
  std::vector<Expr> idx;
  int next_rvar = 0, next_out = 0;
  for (int j = 0; j < ri; ++j) {
    int axis = ri - 1 - j;
    bool reduced = std::find(axes.begin(), axes.end(), axis) != axes.end();
    if (reduced) {
      idx.push_back(rdom[next_rvar++]);
      if (keepdim) ++next_out;
    } else {
      idx.push_back(vo[size_t(next_out++)]);
    }
  }
  Expr x = Halide::cast(at, in[0](idx));

  Func acc(op + "_acc");
  if (r == Reducer::Max) {
    acc(vo) = lowest(at);
    Expr cur = acc(vo);
    acc(vo) = at.is_float() ? algo::propagate_nan(cur, algo::propagate_nan(x, Halide::max(cur, x)))
                            : Halide::max(cur, x);
  } else {
    acc(vo) = Halide::cast(at, 0);
    acc(vo) += x;
  }
  c.stages->push_back(acc);
  Expr result = acc(vo);
  if (r == Reducer::Mean) result = result / Halide::cast(at, count);
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
#pragma omp parallel for schedule(static) if (n * red_n > 65536)
  for (int64_t o = 0; o < n; ++o) {
    std::vector<int64_t> ko = ref::unravel(o, kept_sizes);
    int64_t base = 0;
    for (size_t k = 0; k < ko.size(); ++k) base += ko[k] * kept_strides[k];
    double acc = r == Reducer::Max ? -INFINITY : 0.0;
    for (int64_t q = 0; q < red_n; ++q) {
      std::vector<int64_t> kr = ref::unravel(q, red_sizes);
      int64_t off = base;
      for (size_t k = 0; k < kr.size(); ++k) off += kr[k] * red_strides[k];
      double v = load_as_double(src, in.dtype(), off);
      if (r == Reducer::Max) acc = (std::isnan(acc) || acc >= v) ? acc : v;
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

}  // namespace

std::vector<OpDef> reduce_ops() {
  return {reduction_op("sum", Reducer::Sum), reduction_op("mean", Reducer::Mean),
          reduction_op("max", Reducer::Max)};
}

}  // namespace kiln
