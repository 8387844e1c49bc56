// Indexing ops: gather, index_select, one_hot, and the arange source.
// Indices are data, so their range is checked where they are read: an index out of range
// stops the kernel with a kiln::Error naming the op, the index and the size (Halide's
// `require`), and the load itself reads a clamped index, so nothing out of bounds is read.
#include <cmath>

#include "core/error.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

void require_index_dtype(const std::string& op, const TensorMeta& index) {
  if (index.dtype != DType::I64 && index.dtype != DType::I32) {
    user_error(op, ": indices must be i64 or i32, got ", index.str());
  }
}

// `index` (an integer Expr) checked against [0, size): the checked index, clamped.
Expr checked_index(const std::string& op, const Expr& index, const Expr& size, const std::string& what) {
  Expr i = Halide::cast<int32_t>(index);
  Expr in_range = index >= Halide::cast(index.type(), 0) && index < Halide::cast(index.type(), size);
  Expr clamped = Halide::clamp(i, 0, size - 1);
  return algo::require(in_range, clamped, {Expr(op + ": index"), index, Expr("is out of range for " + what + " of size"), size});
}

void check_index_reference(const std::string& op, int64_t index, int64_t size, const std::string& what) {
  if (index < 0 || index >= size) {
    user_error(op, ": index ", index, " is out of range for ", what, " of size ", size);
  }
}

// ---- gather(x, axis, index): out[i][j][k] = x[i][index[i][j][k]][k] (axis 1) ----------------

TensorMeta infer_gather(const std::vector<TensorMeta>& in, const Attrs& a) {
  const TensorMeta &x = in[0], &index = in[1];
  require_index_dtype("gather", index);
  if (index.shape.rank() != x.shape.rank()) {
    user_error("gather: index must have the input's rank ", x.shape.rank(), ", got ", index.str(),
               " for input ", x.str());
  }
  int axis = normalize_axis(a.get_int("axis"), x.shape.rank(), "gather");
  for (int d = 0; d < x.shape.rank(); ++d) {
    if (d == axis || !x.shape[d].is_static() || !index.shape[d].is_static()) continue;
    if (index.shape[d].size > x.shape[d].size) {
      user_error("gather: index ", index.str(), " is larger than input ", x.str(), " in dim ", d,
                 " (only the gathered axis ", axis, " may differ)");
    }
  }
  return {x.dtype, index.shape};
}

Func gather_algorithm(const std::vector<Func>& in, const OpCall& c) {
  const int r = c.output.shape.rank();
  const int axis = normalize_axis(c.attrs.get_int("axis"), r, "gather");
  const int h = r - 1 - axis;  // the axis as a Halide dimension
  auto v = algo::vars(r);
  std::vector<Expr> src = algo::exprs(v);
  src[size_t(h)] = checked_index("gather", in[1](v), c.extent(c.inputs[0].shape[axis]),
                                 "axis " + std::to_string(axis));
  Func f("gather");
  f(v) = in[0](src);
  return f;
}

Tensor gather_reference(const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
  Tensor x = in[0].to_host(), index = in[1].to_host();
  std::vector<int64_t> xs = x.sizes(), os = out.shape.sizes();
  const int axis = normalize_axis(a.get_int("axis"), x.rank(), "gather");
  std::vector<double> xv = x.to_doubles(), iv = index.to_doubles(), o(size_t(out.shape.numel()));
  std::vector<int64_t> st = ref::strides(xs);
  for (size_t i = 0; i < o.size(); ++i) {
    std::vector<int64_t> idx = ref::unravel(int64_t(i), os);
    idx[size_t(axis)] = int64_t(iv[i]);
    check_index_reference("gather", idx[size_t(axis)], xs[size_t(axis)], "axis " + std::to_string(axis));
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
    o[i] = xv[size_t(off)];
  }
  return from_vector(o, out.shape, out.dtype);
}

// ---- index_select(x, axis, index[K]): x with `axis` replaced by the K picked entries -------

TensorMeta infer_index_select(const std::vector<TensorMeta>& in, const Attrs& a) {
  const TensorMeta &x = in[0], &index = in[1];
  require_index_dtype("index_select", index);
  if (index.shape.rank() != 1) user_error("index_select: index must be 1-D, got ", index.str());
  int axis = normalize_axis(a.get_int("axis"), x.shape.rank(), "index_select");
  std::vector<Dim> dims = x.shape.dims();
  dims[size_t(axis)] = index.shape[0];
  return {x.dtype, Shape(dims)};
}

Func index_select_algorithm(const std::vector<Func>& in, const OpCall& c) {
  const int r = c.output.shape.rank();
  const int axis = normalize_axis(c.attrs.get_int("axis"), r, "index_select");
  const int h = r - 1 - axis;
  auto v = algo::vars(r);
  std::vector<Expr> src = algo::exprs(v);
  src[size_t(h)] = checked_index("index_select", in[1](v[size_t(h)]), c.extent(c.inputs[0].shape[axis]),
                                 "axis " + std::to_string(axis));
  Func f("index_select");
  f(v) = in[0](src);
  return f;
}

Tensor index_select_reference(const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
  Tensor x = in[0].to_host();
  std::vector<int64_t> xs = x.sizes(), os = out.shape.sizes();
  const int axis = normalize_axis(a.get_int("axis"), x.rank(), "index_select");
  std::vector<double> xv = x.to_doubles(), iv = in[1].to_host().to_doubles(), o(size_t(out.shape.numel()));
  std::vector<int64_t> st = ref::strides(xs);
  for (size_t i = 0; i < o.size(); ++i) {
    std::vector<int64_t> idx = ref::unravel(int64_t(i), os);
    idx[size_t(axis)] = int64_t(iv[size_t(idx[size_t(axis)])]);
    check_index_reference("index_select", idx[size_t(axis)], xs[size_t(axis)], "axis " + std::to_string(axis));
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
    o[i] = xv[size_t(off)];
  }
  return from_vector(o, out.shape, out.dtype);
}

// ---- one_hot(indices, num_classes): i64, a new last dim of num_classes ----------------------

TensorMeta infer_one_hot(const std::vector<TensorMeta>& in, const Attrs& a) {
  require_index_dtype("one_hot", in[0]);
  int64_t classes = a.get_int("num_classes");
  if (classes <= 0) {
    user_error("one_hot: num_classes must be positive, got ", classes,
               " (kiln needs it up front: the output's size cannot depend on the data)");
  }
  std::vector<Dim> dims = in[0].shape.dims();
  dims.push_back(Dim(classes));
  return {DType::I64, Shape(dims)};
}

Func one_hot_algorithm(const std::vector<Func>& in, const OpCall& c) {
  const int r = c.output.shape.rank();
  const int64_t classes = c.attrs.get_int("num_classes");
  auto v = algo::vars(r);
  std::vector<Expr> outer(v.begin() + 1, v.end());
  Expr label = checked_index("one_hot", in[0](outer), Expr(int32_t(classes)), "num_classes");
  Func f("one_hot");
  f(v) = Halide::cast<int64_t>(label == v[0]);
  return f;
}

Tensor one_hot_reference(const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
  const int64_t classes = a.get_int("num_classes");
  std::vector<double> iv = in[0].to_host().to_doubles(), o(size_t(out.shape.numel()), 0.0);
  for (size_t i = 0; i < iv.size(); ++i) {
    check_index_reference("one_hot", int64_t(iv[i]), classes, "num_classes");
    o[i * size_t(classes) + size_t(iv[i])] = 1.0;
  }
  return from_vector(o, out.shape, out.dtype);
}

// ---- scatter_add(source, index; axis, shape, full): zeros of `shape`, source added in ------
// Each element of source goes to its own position with the `axis` coordinate replaced by
// an index: index[k] for source's axis entry k (full = false: a 1-D index, PyTorch's
// index_add), or index[i] for source element i (full = true: index shaped like source,
// PyTorch's scatter_add). Repeated indices accumulate. `shape` gives the output's sizes,
// -1 for a dim that is source's. The backward of index_select and gather.

TensorMeta infer_scatter_add(const std::vector<TensorMeta>& in, const Attrs& a) {
  const TensorMeta &src = in[0], &index = in[1];
  require_index_dtype("scatter_add", index);
  const int r = src.shape.rank();
  const int axis = normalize_axis(a.get_int("axis"), r, "scatter_add");
  const std::vector<int64_t>& shape = a.get_ints("shape");
  if (int(shape.size()) != r) {
    user_error("scatter_add: shape has ", shape.size(), " sizes for a source of rank ", r, " (", src.str(), ")");
  }
  if (a.get_bool("full")) {
    if (!(index.shape == src.shape)) {
      user_error("scatter_add: index ", index.str(), " must have the source's shape ", src.str());
    }
  } else if (index.shape.rank() != 1 || !(index.shape[0] == src.shape[axis])) {
    user_error("scatter_add: index must be 1-D with one entry per source entry along axis ", axis, ", got ",
               index.str(), " for source ", src.str());
  }
  std::vector<Dim> out;
  for (int d = 0; d < r; ++d) {
    if (shape[size_t(d)] < -1) user_error("scatter_add: shape sizes are -1 (the source's) or more, got ", shape[size_t(d)]);
    out.push_back(shape[size_t(d)] == -1 ? src.shape[d] : Dim(shape[size_t(d)]));
    if (d != axis && out.back().is_static() && src.shape[d].is_static() && src.shape[d].size > out.back().size) {
      user_error("scatter_add: source ", src.str(), " is larger than the output in dim ", d,
                 " (only the scattered axis ", axis, " may differ)");
    }
  }
  return {src.dtype, Shape(out)};
}

Func scatter_add_algorithm(const std::vector<Func>& in, const OpCall& c) {
  const TensorMeta& src = c.inputs[0];
  const int r = c.output.shape.rank();
  const int axis = normalize_axis(c.attrs.get_int("axis"), r, "scatter_add");
  const int h = r - 1 - axis;
  auto v = algo::vars(r);
  const Halide::Type at = algo::halide_type(compute_dtype(c.output.dtype));
  Func acc("scatter_add_acc");
  acc(v) = Halide::cast(at, 0);
  Halide::Region dom;
  for (int j = 0; j < r; ++j) dom.push_back({Expr(0), c.extent(src.shape[r - 1 - j])});
  Halide::RDom s(dom, "s");
  std::vector<Expr> from, to;
  for (int j = 0; j < r; ++j) from.push_back(s[j]);
  to = from;
  Expr index = c.attrs.get_bool("full") ? in[1](from) : in[1](s[h]);
  to[size_t(h)] = checked_index("scatter_add", index, c.extent(c.output.shape[axis]), "axis " + std::to_string(axis));
  acc(to) = algo::accumulate(acc(to), Halide::cast(at, in[0](from)));
  std::vector<int64_t> extents;
  for (int d = r - 1; d >= 0; --d) extents.push_back(c.output.shape[d].is_static() ? c.output.shape[d].size : 0);
  // A scatter: its update must not run in parallel (two source elements may share a target).
  c.stages->push_back({acc, /*pure_innermost=*/false, /*serial=*/true, extents});
  Func out("scatter_add");
  out(v) = algo::to_storage(acc(v), c.output.dtype);
  return out;
}

Tensor scatter_add_reference(const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
  Tensor src = in[0].to_host();
  const std::vector<int64_t> ss = src.sizes(), os = out.shape.sizes();
  const int axis = normalize_axis(a.get_int("axis"), src.rank(), "scatter_add");
  const bool full = a.get_bool("full");
  std::vector<double> sv = src.to_doubles(), iv = in[1].to_host().to_doubles(), o(size_t(out.shape.numel()), 0.0);
  const std::vector<int64_t> st = ref::strides(os);
  for (size_t i = 0; i < sv.size(); ++i) {
    std::vector<int64_t> idx = ref::unravel(int64_t(i), ss);
    const int64_t to = int64_t(iv[full ? i : size_t(idx[size_t(axis)])]);
    check_index_reference("scatter_add", to, os[size_t(axis)], "axis " + std::to_string(axis));
    idx[size_t(axis)] = to;
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
    o[size_t(off)] += sv[i];
  }
  return from_vector(o, out.shape, out.dtype);
}

// ---- arange(start, step, count): a source --------------------------------------------------

TensorMeta infer_arange(const std::vector<TensorMeta>&, const Attrs& a) {
  return {dtype_from_name(a.get_string("dtype")), Shape{a.get_int("count")}};
}

Func arange_algorithm(const std::vector<Func>&, const OpCall& c) {
  Halide::Var i("d0");
  DType ct = compute_dtype(c.output.dtype);
  // Integer dtypes count exactly in i64; floats compute start + i * step in f64, like the
  // reference, then round once to the output dtype.
  Halide::Type t = is_float(ct) ? Halide::Float(64) : Halide::Int(64);
  Expr value = algo::constant(t, c.attrs.get_double("start")) +
               Halide::cast(t, i) * algo::constant(t, c.attrs.get_double("step"));
  Func f("arange");
  f(i) = algo::to_storage(Halide::cast(algo::halide_type(ct), value), c.output.dtype);
  return f;
}

Tensor arange_reference(const std::vector<Tensor>&, const Attrs& a, const TensorMeta& out) {
  std::vector<double> o(size_t(a.get_int("count")));
  for (size_t i = 0; i < o.size(); ++i) o[i] = a.get_double("start") + double(i) * a.get_double("step");
  return from_vector(o, out.shape, out.dtype);
}

}  // namespace

std::vector<OpDef> index_ops() {
  return {
      make_op_def("gather", OpKind::Injective, 2, infer_gather, gather_algorithm, gather_reference),
      make_op_def("index_select", OpKind::Injective, 2, infer_index_select, index_select_algorithm,
              index_select_reference),
      make_op_def("one_hot", OpKind::Injective, 1, infer_one_hot, one_hot_algorithm, one_hot_reference),
      make_op_def("scatter_add", OpKind::Reduction, 2, infer_scatter_add, scatter_add_algorithm,
                  scatter_add_reference),
      make_op_def("arange", OpKind::Source, 0, infer_arange, arange_algorithm, arange_reference),
  };
}

}  // namespace kiln
