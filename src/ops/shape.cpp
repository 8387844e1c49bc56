// Shape and data movement (injective ops): reshape, permute, expand, slice, concat, pad.
// Every output element reads exactly one input element; the index maps live here.
#include <numeric>

#include "core/error.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

void require_static(const std::string& op, const TensorMeta& m) {
  if (!m.shape.is_static()) {
    user_error(op, ": needs static sizes, but the input is ", m.str(),
               "; mark these dims static (not dynamic) in kiln::compile");
  }
}

// ---- reshape(shape with at most one -1) ---------------------------------------------------

TensorMeta infer_reshape(const std::vector<TensorMeta>& in, const Attrs& a) {
  require_static("reshape", in[0]);
  std::vector<int64_t> want = a.get_ints("shape");
  int64_t known = 1, infer_at = -1, n = in[0].shape.numel();
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == -1) {
      if (infer_at >= 0) user_error("reshape: only one dimension may be -1 in ", Shape(want).str());
      infer_at = int64_t(i);
    } else if (want[i] < 0) {
      user_error("reshape: invalid size ", want[i], " in ", Shape(want).str());
    } else {
      known *= want[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0) {
      user_error("reshape: cannot reshape ", in[0].str(), " (", n, " elements) to ",
                 Shape(want).str());
    }
    want[size_t(infer_at)] = n / known;
  } else if (known != n) {
    user_error("reshape: cannot reshape ", in[0].str(), " (", n, " elements) to ",
               Shape(want).str(), " (", known, " elements)");
  }
  return {in[0].dtype, Shape(want)};
}

// A reshape maps groups of consecutive dims onto each other: walking both shapes from the
// outermost dim, a group ends where the products of their sizes agree. Most groups are one
// dim on one side: a split (out [.., H, Dh] from in [.., D]) needs no division, a merge one
// div/mod per input dim. The index math is in 32 bits where a group's elements fit: the
// simplifier then proves a vector of consecutive outputs a dense load, where a 64-bit
// linear index over the whole tensor left a gather.
Func reshape_algorithm(const std::vector<Func>& in, const OpCall& c) {
  const std::vector<int64_t> osz = c.output.shape.sizes(), isz = c.inputs[0].shape.sizes();
  const size_t ro = osz.size(), ri = isz.size();
  auto v = algo::vars(int(ro));
  auto out_var = [&](size_t i) { return Expr(v[ro - 1 - i]); };  // outermost-first index i
  std::vector<Expr> idx(ri);
  auto map_group = [&](size_t o0, size_t o1, size_t i0, size_t i1) {
    int64_t elems = 1;
    for (size_t i = o0; i < o1; ++i) elems *= osz[i];
    const Halide::Type t = elems <= (int64_t(1) << 31) - 1 ? Halide::Int(32) : Halide::Int(64);
    if (o1 - o0 == 1 && i1 - i0 == 1) {
      idx[ri - 1 - i0] = out_var(o0);
      return;
    }
    Expr linear = algo::constant(t, 0);
    int64_t stride = 1;
    for (size_t i = o1; i-- > o0;) {
      linear = Halide::cast(t, out_var(i)) * algo::constant(t, double(stride)) + linear;
      stride *= osz[i];
    }
    stride = 1;
    for (size_t k = i1; k-- > i0;) {
      Expr q = stride == 1 ? linear : linear / algo::constant(t, double(stride));
      if (k != i0) q = q % algo::constant(t, double(isz[k]));
      idx[ri - 1 - k] = Halide::cast<int>(q);
      stride *= isz[k];
    }
  };
  size_t i = 0, j = 0;
  bool grouped = true;
  while (grouped && (i < ro || j < ri)) {
    const size_t i0 = i, j0 = j;
    int64_t po = 1, pi = 1;
    if (i < ro) po *= osz[i++];
    if (j < ri) pi *= isz[j++];
    while (po != pi) {
      if (po < pi && i < ro) {
        po *= osz[i++];
      } else if (pi < po && j < ri) {
        pi *= isz[j++];
      } else {
        grouped = false;  // an empty tensor: one group of everything below
        break;
      }
    }
    if (grouped) map_group(i0, i, j0, j);
  }
  if (!grouped) map_group(0, ro, 0, ri);
  Func f("reshape");
  f(v) = in[0](idx);
  return f;
}

// ---- permute(dims) ----------------------------------------------------------------------

TensorMeta infer_permute(const std::vector<TensorMeta>& in, const Attrs& a) {
  const int r = in[0].shape.rank();
  std::vector<int64_t> dims = a.get_ints("dims");
  if (int(dims.size()) != r) {
    user_error("permute: dims ", Shape(dims).str(), " must list each of the ", r, " axes of ",
               in[0].str(), " once");
  }
  std::vector<bool> seen(size_t(r), false);
  std::vector<Dim> out;
  for (int64_t d : dims) {
    int ax = normalize_axis(d, r, "permute");
    if (seen[size_t(ax)]) user_error("permute: axis ", d, " appears twice in ", Shape(dims).str());
    seen[size_t(ax)] = true;
    out.push_back(in[0].shape[ax]);
  }
  return {in[0].dtype, Shape(out)};
}

Func permute_algorithm(const std::vector<Func>& in, const OpCall& c) {
  const int r = c.output.shape.rank();
  auto v = algo::vars(r);
  std::vector<Expr> idx(static_cast<size_t>(r));
  std::vector<int64_t> dims = c.attrs.get_ints("dims");
  for (int i = 0; i < r; ++i) {  // output kiln axis i reads input kiln axis dims[i]
    int ax = normalize_axis(dims[size_t(i)], r, "permute");
    idx[size_t(r - 1 - ax)] = v[size_t(r - 1 - i)];
  }
  Func f("permute");
  f(v) = in[0](idx);
  return f;
}

// ---- expand(shape): broadcast_to, -1 keeps a dim --------------------------------------------

TensorMeta infer_expand(const std::vector<TensorMeta>& in, const Attrs& a) {
  std::vector<int64_t> want = a.get_ints("shape");
  const int ri = in[0].shape.rank(), ro = int(want.size());
  if (ro < ri) user_error("expand: cannot expand ", in[0].str(), " to fewer dims ", Shape(want).str());
  std::vector<Dim> out;
  for (int i = 0; i < ro; ++i) {
    int j = i - (ro - ri);
    if (want[size_t(i)] == -1) {
      if (j < 0) user_error("expand: -1 is not allowed for a new leading dim in ", Shape(want).str());
      out.push_back(in[0].shape[j]);
      continue;
    }
    if (j >= 0) {
      const Dim& d = in[0].shape[j];
      if (!(d.is_static() && (d.size == 1 || d.size == want[size_t(i)]))) {
        user_error("expand: dim ", j, " of ", in[0].str(), " is ", d.str(),
                   "; only size-1 dims can be expanded (to ", want[size_t(i)], ")");
      }
    }
    out.emplace_back(want[size_t(i)]);
  }
  return {in[0].dtype, Shape(out)};
}

Func expand_algorithm(const std::vector<Func>& in, const OpCall& c) {
  auto v = algo::exprs(algo::vars(c.output.shape.rank()));
  Func f("expand");
  f(v) = in[0](algo::broadcast_index(c.inputs[0], c.output, v));
  return f;
}

// ---- slice(axis, start, stop, step), Python semantics for start/stop ------------------------

struct SliceRange {
  int axis;
  int64_t start, step, size;
};

SliceRange slice_range(const TensorMeta& in, const Attrs& a) {
  int axis = normalize_axis(a.get_int("axis"), in.shape.rank(), "slice");
  const Dim& d = in.shape[axis];
  if (!d.is_static()) user_error("slice: axis ", axis, " of ", in.str(), " must have a static size");
  int64_t n = d.size, step = a.get_int("step");
  if (step <= 0) user_error("slice: step must be positive, got ", step);
  auto clampi = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t(0), n); };
  int64_t start = clampi(a.get_int("start")), stop = clampi(a.get_int("stop"));
  int64_t size = stop > start ? (stop - start + step - 1) / step : 0;
  return {axis, start, step, size};
}

// ---- concat(axis), any number of inputs -----------------------------------------------------

TensorMeta infer_concat(const std::vector<TensorMeta>& in, const Attrs& a) {
  if (in.empty()) user_error("concat: needs at least one tensor");
  const int r = in[0].shape.rank();
  int axis = normalize_axis(a.get_int("axis"), r, "concat");
  int64_t total = 0;
  DType t = in[0].dtype;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].shape.rank() != r) user_error("concat: input ", k, " is ", in[k].str(), " but input 0 is ", in[0].str());
    for (int i = 0; i < r; ++i) {
      if (i != axis && !(in[k].shape[i] == in[0].shape[i])) {
        user_error("concat: input ", k, " is ", in[k].str(), " and input 0 is ", in[0].str(),
                   "; all dims but axis ", axis, " must match");
      }
    }
    if (!in[k].shape[axis].is_static()) user_error("concat: axis ", axis, " of input ", k, " must be static");
    total += in[k].shape[axis].size;
    t = promote(t, in[k].dtype);
  }
  std::vector<Dim> out = in[0].shape.dims();
  out[size_t(axis)] = Dim(total);
  return {t, Shape(out)};
}

Func concat_algorithm(const std::vector<Func>& in, const OpCall& c) {
  const int r = c.output.shape.rank();
  int axis = normalize_axis(c.attrs.get_int("axis"), r, "concat");
  int h = r - 1 - axis;
  auto v = algo::vars(r);
  Halide::Type t = algo::halide_type(c.output.dtype);
  // Walk the inputs back to front: select(a < end_k, in_k(a - off_k), rest); the index is
  // clamped so bounds inference never reaches outside an input.
  Expr result;
  int64_t end = c.output.shape[axis].size;
  for (int k = int(in.size()) - 1; k >= 0; --k) {
    int64_t size = c.inputs[size_t(k)].shape[axis].size, off = end - size;
    std::vector<Expr> idx(v.begin(), v.end());
    idx[size_t(h)] = Halide::clamp(v[size_t(h)] - int(off), 0, std::max<int>(0, int(size) - 1));
    Expr val = Halide::cast(t, in[size_t(k)](idx));
    if (size > 0) result = result.defined() ? Halide::select(v[size_t(h)] < int(end), val, result) : val;
    end = off;
  }
  Func f("concat");
  f(v) = result.defined() ? result : algo::constant(t, 0);  // every input empty: so is the output
  return f;
}

// A reference for any injective op: out[i] = in_k[map(i)], computed from the index map.
template <class Map>
Tensor gather_reference(const std::vector<Tensor>& in, const TensorMeta& out, Map map) {
  std::vector<Tensor> host;
  for (const Tensor& t : in) host.push_back(t.to_host());
  Tensor result = empty(out.shape, out.dtype);
  std::vector<int64_t> osz = out.shape.sizes();
  void* dst = result.mutable_data();
  const int64_t n = result.numel();
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    auto [k, off] = map(ref::unravel(i, osz));
    store_from_double(dst, out.dtype, i, load_as_double(host[size_t(k)].data(), host[size_t(k)].dtype(), off));
  }
  return result;
}

// ---- pad(pads, value): PyTorch's constant F.pad ------------------------------------------
// pads = {before, after} for the last dim, then the one before it, ...; negative pads crop.

struct PadSpec {
  std::vector<int64_t> before, after;  // per kiln dim
};

PadSpec pad_spec(const TensorMeta& in, const Attrs& a) {
  std::vector<int64_t> pads = a.get_ints("pads");
  const int r = in.shape.rank();
  if (pads.size() % 2 != 0 || int(pads.size()) > 2 * r) {
    user_error("pad: pads must hold (before, after) pairs for at most the ", r, " dims of ", in.str(),
               ", got ", pads.size(), " values");
  }
  PadSpec p{std::vector<int64_t>(size_t(r), 0), std::vector<int64_t>(size_t(r), 0)};
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    size_t d = size_t(r) - 1 - k;
    p.before[d] = pads[2 * k];
    p.after[d] = pads[2 * k + 1];
    if ((p.before[d] || p.after[d]) && !in.shape[int(d)].is_static()) {
      user_error("pad: dim ", d, " of ", in.str(), " is padded, so it must have a static size");
    }
    if (in.shape[int(d)].is_static() && in.shape[int(d)].size + p.before[d] + p.after[d] < 0) {
      user_error("pad: pads (", p.before[d], ", ", p.after[d], ") crop dim ", d, " of ", in.str(),
                 " below zero");
    }
  }
  return p;
}

TensorMeta infer_pad(const std::vector<TensorMeta>& in, const Attrs& a) {
  PadSpec p = pad_spec(in[0], a);
  std::vector<Dim> dims = in[0].shape.dims();
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].is_static()) dims[d] = Dim(dims[d].size + p.before[d] + p.after[d]);
  }
  return {in[0].dtype, Shape(dims)};
}

Func pad_algorithm(const std::vector<Func>& in, const OpCall& c) {
  PadSpec p = pad_spec(c.inputs[0], c.attrs);
  const int r = c.output.shape.rank();
  auto v = algo::vars(r);
  std::vector<Expr> idx(static_cast<size_t>(r));
  Expr inside = Halide::cast<bool>(true);
  for (int d = 0; d < r; ++d) {
    const size_t h = size_t(r - 1 - d);
    Expr n = c.extent(c.inputs[0].shape[d]);
    Expr i = v[h] - int(p.before[size_t(d)]);
    if (p.before[size_t(d)] || p.after[size_t(d)]) inside = inside && i >= 0 && i < n;
    idx[h] = Halide::clamp(i, 0, n - 1);
  }
  Halide::Type t = algo::halide_type(c.output.dtype);
  Func f("pad");
  f(v) = Halide::select(inside, in[0](idx), algo::constant(t, c.attrs.get_double("value")));
  return f;
}

Tensor pad_reference(const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
  PadSpec p = pad_spec(in[0].meta(), a);
  Tensor x = in[0].to_host();
  std::vector<int64_t> xs = x.sizes(), os = out.shape.sizes(), st = ref::strides(xs);
  std::vector<double> xv = x.to_doubles(), o(size_t(out.shape.numel()));
  for (size_t i = 0; i < o.size(); ++i) {
    std::vector<int64_t> idx = ref::unravel(int64_t(i), os);
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t j = idx[d] - p.before[d];
      inside = inside && j >= 0 && j < xs[d];
      off += j * st[d];
    }
    o[i] = inside ? xv[size_t(off)] : a.get_double("value");
  }
  return from_vector(o, out.shape, out.dtype);
}

OpDef injective(const std::string& name, int arity, InferFn infer, AlgorithmFn algo, ReferenceFn ref) {
  return make_op_def(name, OpKind::Injective, arity, std::move(infer), std::move(algo), std::move(ref));
}

}  // namespace

std::vector<OpDef> shape_ops() {
  std::vector<OpDef> ops;
  ops.push_back(injective("reshape", 1, infer_reshape, reshape_algorithm,
      [](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
        std::vector<int64_t> osz = out.shape.sizes(), ost = ref::strides(osz);
        return gather_reference(in, out, [&](const std::vector<int64_t>& idx) {
          int64_t lin = 0;
          for (size_t i = 0; i < idx.size(); ++i) lin += idx[i] * ost[i];
          return std::pair<int, int64_t>{0, lin};
        });
      }));
  ops.back().eager_generic = false;
  ops.push_back(injective("permute", 1, infer_permute, permute_algorithm,
      [](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
        std::vector<int64_t> dims = a.get_ints("dims"), ist = ref::strides(in[0].sizes());
        const int r = in[0].rank();
        return gather_reference(in, out, [&](const std::vector<int64_t>& idx) {
          int64_t off = 0;
          for (int i = 0; i < r; ++i) off += idx[size_t(i)] * ist[size_t(normalize_axis(dims[size_t(i)], r, "permute"))];
          return std::pair<int, int64_t>{0, off};
        });
      }));
  ops.push_back(injective("expand", 1, infer_expand, expand_algorithm,
      [](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
        std::vector<int64_t> isz = in[0].sizes(), osz = out.shape.sizes();
        return gather_reference(in, out, [&](const std::vector<int64_t>& idx) {
          return std::pair<int, int64_t>{0, ref::broadcast_offset(isz, osz, idx)};
        });
      }));
  ops.back().eager_generic = false;
  ops.push_back(injective("slice", 1,
      [](const std::vector<TensorMeta>& in, const Attrs& a) {
        SliceRange s = slice_range(in[0], a);
        std::vector<Dim> out = in[0].shape.dims();
        out[size_t(s.axis)] = Dim(s.size);
        return TensorMeta{in[0].dtype, Shape(out)};
      },
      [](const std::vector<Func>& in, const OpCall& c) {
        SliceRange s = slice_range(c.inputs[0], c.attrs);
        const int r = c.output.shape.rank();
        auto v = algo::vars(r);
        std::vector<Expr> idx(v.begin(), v.end());
        int h = r - 1 - s.axis;
        Func f("slice");
        if (s.size == 0) {
          // Nothing to read: an empty slice starting past the input's end (x[:, 3:4] of a
          // [1, 1] x starts at 1) made Halide's bounds check refuse the input at run time,
          // from a gradient that never reads it (kiln_fuzz seed 3103, program 179).
          f(v) = algo::constant(algo::halide_type(c.output.dtype), 0);
          return f;
        }
        idx[size_t(h)] = int(s.start) + v[size_t(h)] * int(s.step);
        f(v) = in[0](idx);
        return f;
      },
      [](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
        SliceRange s = slice_range(in[0].meta(), a);
        std::vector<int64_t> ist = ref::strides(in[0].sizes());
        return gather_reference(in, out, [&](std::vector<int64_t> idx) {
          idx[size_t(s.axis)] = s.start + idx[size_t(s.axis)] * s.step;
          int64_t off = 0;
          for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * ist[i];
          return std::pair<int, int64_t>{0, off};
        });
      }));
  ops.back().eager_generic = false;
  ops.push_back(injective("concat", -1, infer_concat, concat_algorithm,
      [](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
        int axis = normalize_axis(a.get_int("axis"), out.shape.rank(), "concat");
        return gather_reference(in, out, [&](std::vector<int64_t> idx) {
          int k = 0;
          while (idx[size_t(axis)] >= in[size_t(k)].sizes()[size_t(axis)]) idx[size_t(axis)] -= in[size_t(k++)].sizes()[size_t(axis)];
          std::vector<int64_t> st = ref::strides(in[size_t(k)].sizes());
          int64_t off = 0;
          for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * st[i];
          return std::pair<int, int64_t>{k, off};
        });
      }));
  ops.back().eager_generic = false;
  ops.push_back(injective("pad", 1, infer_pad, pad_algorithm, pad_reference));
  ops.back().eager_generic = false;
  return ops;
}

}  // namespace kiln
