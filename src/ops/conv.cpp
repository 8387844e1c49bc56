// Convolution and pooling over NCHW tensors: conv2d (a contraction) and max / avg /
// adaptive-avg pooling (reductions over a window). batch_norm and global_avg_pool2d are
// decompositions in api.cpp.
//
// Spatial sizes must be static (the output size is arithmetic on them); only the batch
// dim may be symbolic, so eager kernels compile per shape (eager_generic = false).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

struct Pair {
  int64_t h = 1, w = 1;
};

Pair pair_attr(const std::string& op, const Attrs& a, const std::string& name) {
  const std::vector<int64_t>& v = a.get_ints(name);
  if (v.size() != 2) user_error(op, ": ", name, " needs 2 values (height, width), got ", v.size());
  return {v[0], v[1]};
}

std::string pair_str(Pair p) { return "[" + std::to_string(p.h) + ", " + std::to_string(p.w) + "]"; }

// The sizes of a static NCHW input (N may be symbolic: it is never needed).
struct Nchw {
  Dim n;
  int64_t c = 0, h = 0, w = 0;
};

Nchw nchw(const std::string& op, const TensorMeta& x, const char* what = "input") {
  if (x.shape.rank() != 4) {
    user_error(op, ": ", what, " must be 4-D [N, C, H, W], got ", x.str());
  }
  for (int i = 1; i < 4; ++i) {
    if (!x.shape[i].is_static()) {
      user_error(op, ": ", what, " ", x.str(), " needs static C, H and W (only the batch dim may be dynamic)");
    }
  }
  if (x.dtype == DType::Bool) user_error(op, ": ", what, " ", x.str(), " is bool; use a numeric dtype");
  return {x.shape[0], x.shape[1].size, x.shape[2].size, x.shape[3].size};
}

void check_positive(const std::string& op, const char* name, Pair p) {
  if (p.h < 1 || p.w < 1) user_error(op, ": ", name, " must be >= 1, got ", pair_str(p));
}

// PyTorch's pooling_output_shape / conv output size; the dilated kernel must fit the
// padded input.
int64_t out_size(const std::string& op, const char* axis, int64_t in, int64_t k, int64_t s, int64_t p,
                 int64_t d, bool ceil_mode) {
  const int64_t span = d * (k - 1) + 1, padded = in + 2 * p;
  // As PyTorch: floor division (a window larger than the input rounds up to one window
  // in ceil mode), and the last window must start inside the input or its left padding.
  const int64_t num = padded - span + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  if (out < 1) {
    user_error(op, ": the kernel (", k, " along ", axis, ", dilated extent ", span,
               ") is larger than the padded input (", in, " + 2*", p, " = ", padded,
               ")", ceil_mode ? "" : "; ceil_mode=true takes the one partial window");
  }
  return out;
}

// ---- conv2d(x [N, C, H, W], weight [O, C/groups, KH, KW]) -> [N, O, OH, OW] ----------------

struct ConvGeom {
  Nchw x;
  int64_t o = 0, cg = 0, kh = 0, kw = 0, groups = 1, oh = 0, ow = 0;
  Pair stride, padding, dilation;
};

ConvGeom conv_geometry(const TensorMeta& x, const TensorMeta& w, const Attrs& a) {
  const std::string op = "conv2d";
  ConvGeom g;
  g.x = nchw(op, x);
  if (w.shape.rank() != 4 || !w.shape.is_static()) {
    user_error(op, ": weight must be a static 4-D [O, C/groups, KH, KW], got ", w.str());
  }
  if (w.dtype == DType::Bool) user_error(op, ": weight ", w.str(), " is bool; use a numeric dtype");
  g.o = w.shape[0].size, g.cg = w.shape[1].size, g.kh = w.shape[2].size, g.kw = w.shape[3].size;
  g.groups = a.get_int("groups");
  g.stride = pair_attr(op, a, "stride");
  g.padding = pair_attr(op, a, "padding");
  g.dilation = pair_attr(op, a, "dilation");
  if (g.groups < 1) user_error(op, ": groups must be >= 1, got ", g.groups);
  if (g.x.c % g.groups != 0) {
    user_error(op, ": input ", x.str(), " has C=", g.x.c, " channels, not divisible by groups=", g.groups);
  }
  if (g.cg * g.groups != g.x.c) {
    user_error(op, ": weight ", w.str(), " expects C/groups=", g.cg, " input channels per group, but input ",
               x.str(), " has C=", g.x.c, " with groups=", g.groups, " (C/groups=", g.x.c / g.groups, ")");
  }
  if (g.o % g.groups != 0) {
    user_error(op, ": weight ", w.str(), " has O=", g.o, " output channels, not divisible by groups=", g.groups);
  }
  if (g.o < 1 || g.kh < 1 || g.kw < 1) user_error(op, ": weight ", w.str(), " is empty");
  check_positive(op, "stride", g.stride);
  check_positive(op, "dilation", g.dilation);
  if (g.padding.h < 0 || g.padding.w < 0) user_error(op, ": padding must be >= 0, got ", pair_str(g.padding));
  g.oh = out_size(op, "H", g.x.h, g.kh, g.stride.h, g.padding.h, g.dilation.h, false);
  g.ow = out_size(op, "W", g.x.w, g.kw, g.stride.w, g.padding.w, g.dilation.w, false);
  return g;
}

TensorMeta infer_conv2d(const std::vector<TensorMeta>& in, const Attrs& a) {
  ConvGeom g = conv_geometry(in[0], in[1], a);
  return {promote(in[0].dtype, in[1].dtype), Shape(std::vector<Dim>{g.x.n, Dim(g.o), Dim(g.oh), Dim(g.ow)})};
}

// acc(ow, o, oh, n) = sum over (kw, kh, ci) of w(kw, kh, ci, o) * xpad(ow*s + kw*d, oh*s + kh*d, ch, n).
// Output channels sit next to output columns in the accumulator, so a register tile of
// (columns x channels) shares each input load across channels. Every read is clamped, so
// a schedule may compute past the ends (rounded-up tiles) without reading out of bounds.
Func conv2d_algorithm(const std::vector<Func>& in, const OpCall& c) {
  ConvGeom g = conv_geometry(c.inputs[0], c.inputs[1], c.attrs);
  DType acc_t = is_float(c.output.dtype) ? compute_dtype(c.output.dtype) : DType::I64;
  Halide::Type at = algo::halide_type(acc_t);
  auto v = algo::vars(4);
  // The zero-padded input in padded coordinates, a stage of its own (the CPU schedule
  // computes the rows each task reads) so that the accumulation reads dense rows with no
  // bounds tests.
  Func xpad("conv2d_pad");
  {
    Expr w = v[0] - int(g.padding.w), h = v[1] - int(g.padding.h);
    Expr inside = w >= 0 && w < int(g.x.w) && h >= 0 && h < int(g.x.h);
    Expr x = in[0](Halide::clamp(w, 0, int(g.x.w) - 1), Halide::clamp(h, 0, int(g.x.h) - 1),
                   Halide::clamp(v[2], 0, int(g.x.c) - 1), v[3]);
    xpad(v) = Halide::select(inside, Halide::cast(at, x), Halide::cast(at, 0));
  }
  const Expr ow = v[0], oc = v[1], oh = v[2], n = v[3];
  Halide::RDom r(0, int(g.kw), 0, int(g.kh), 0, int(g.cg), "conv2d_r");
  Expr o = Halide::min(oc, int(g.o) - 1);
  Expr ch = g.groups == 1 ? Expr(r.z) : (o / int(g.o / g.groups)) * int(g.cg) + r.z;
  Func acc("conv2d_acc");
  acc(v) = Halide::cast(at, 0);
  acc(v) += Halide::cast(at, in[1](r.x, r.y, r.z, o)) *
            xpad(ow * int(g.stride.w) + r.x * int(g.dilation.w), oh * int(g.stride.h) + r.y * int(g.dilation.h), ch, n);
  c.stages->push_back({xpad});
  c.stages->push_back({acc, /*pure_innermost=*/true, /*serial=*/false,
                       {g.ow, g.o, g.oh, g.x.n.is_static() ? g.x.n.size : 0}});
  Func out("conv2d");
  out(v) = algo::to_storage(acc(v[0], v[2], v[1], v[3]), c.output.dtype);
  return out;
}

Tensor conv2d_reference(const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
  Tensor x = in[0].to_host(), w = in[1].to_host();
  ConvGeom g = conv_geometry(x.meta(), w.meta(), a);
  const int64_t N = x.sizes()[0], C = g.x.c, H = g.x.h, W = g.x.w, O = g.o, OH = g.oh, OW = g.ow;
  const int64_t og = O / g.groups;
  std::vector<double> xv = x.to_doubles(), wv = w.to_doubles(), o(size_t(N * O * OH * OW));
#pragma omp parallel for collapse(2) if (N * O * OH * OW * g.cg * g.kh * g.kw > 100000)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oc = 0; oc < O; ++oc) {
      const int64_t c0 = (oc / og) * g.cg;
      for (int64_t y = 0; y < OH; ++y) {
        for (int64_t xo = 0; xo < OW; ++xo) {
          // Padding is zeros that multiply, as in PyTorch: 0 * inf is NaN.
          double s = 0;
          for (int64_t ci = 0; ci < g.cg; ++ci) {
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t iy = y * g.stride.h - g.padding.h + ky * g.dilation.h;
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t ix = xo * g.stride.w - g.padding.w + kx * g.dilation.w;
                const bool inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
                const double xval = inside ? xv[size_t(((n * C + c0 + ci) * H + iy) * W + ix)] : 0.0;
                s += xval * wv[size_t(((oc * g.cg + ci) * g.kh + ky) * g.kw + kx)];
              }
            }
          }
          o[size_t(((n * O + oc) * OH + y) * OW + xo)] = s;
        }
      }
    }
  }
  return from_vector(o, out.shape, out.dtype);
}

// ---- max_pool2d / avg_pool2d(x [N, C, H, W]) -> [N, C, OH, OW] ----------------------------

enum class Pool { Max, Avg };

struct PoolGeom {
  Nchw x;
  Pair kernel, stride, padding, dilation;
  bool ceil_mode = false, count_include_pad = true;
  int64_t oh = 0, ow = 0;
};

PoolGeom pool_geometry(const std::string& op, Pool kind, const TensorMeta& x, const Attrs& a) {
  PoolGeom g;
  g.x = nchw(op, x);
  g.kernel = pair_attr(op, a, "kernel");
  g.stride = pair_attr(op, a, "stride");
  g.padding = pair_attr(op, a, "padding");
  g.dilation = kind == Pool::Max ? pair_attr(op, a, "dilation") : Pair{1, 1};
  g.ceil_mode = a.get_bool("ceil_mode");
  if (kind == Pool::Avg) g.count_include_pad = a.get_bool("count_include_pad");
  check_positive(op, "kernel_size", g.kernel);
  check_positive(op, "stride", g.stride);
  check_positive(op, "dilation", g.dilation);
  if (g.padding.h < 0 || g.padding.w < 0) user_error(op, ": padding must be >= 0, got ", pair_str(g.padding));
  if (g.padding.h > g.kernel.h / 2 || g.padding.w > g.kernel.w / 2) {
    user_error(op, ": padding ", pair_str(g.padding), " must be at most half of kernel_size ", pair_str(g.kernel));
  }
  g.oh = out_size(op, "H", g.x.h, g.kernel.h, g.stride.h, g.padding.h, g.dilation.h, g.ceil_mode);
  g.ow = out_size(op, "W", g.x.w, g.kernel.w, g.stride.w, g.padding.w, g.dilation.w, g.ceil_mode);
  return g;
}

DType pool_dtype(Pool kind, DType in) { return kind == Pool::Avg && !is_float(in) ? DType::F32 : in; }

Expr lowest(Halide::Type t) {
  return t.is_float() ? Halide::cast(t, Expr(-std::numeric_limits<float>::infinity())) : t.min();
}

Func pool_algorithm(const std::string& op, Pool kind, const std::vector<Func>& in, const OpCall& c) {
  PoolGeom g = pool_geometry(op, kind, c.inputs[0], c.attrs);
  Halide::Type at = algo::halide_type(compute_dtype(c.output.dtype));
  auto v = algo::vars(4);  // ow, oh, c, n
  Halide::RDom r(0, int(g.kernel.w), 0, int(g.kernel.h), op + "_r");
  const int H = int(g.x.h), W = int(g.x.w);
  Expr ws = v[0] * int(g.stride.w) - int(g.padding.w), hs = v[1] * int(g.stride.h) - int(g.padding.h);
  Expr iw = ws + r.x * int(g.dilation.w), ih = hs + r.y * int(g.dilation.h);
  Expr inside = iw >= 0 && iw < W && ih >= 0 && ih < H;
  Expr x = Halide::cast(at, in[0](Halide::clamp(iw, 0, W - 1), Halide::clamp(ih, 0, H - 1), v[2], v[3]));
  Func acc(op + "_acc");
  Func out(algo::func_name(op));
  if (kind == Pool::Max) {
    // Padding counts as -inf: never the maximum. NaN wins, as in PyTorch.
    acc(v) = lowest(at);
    Expr cur = acc(v);
    Expr best = Halide::max(cur, x);
    if (at.is_float()) best = algo::propagate_nan(cur, algo::propagate_nan(x, best));
    acc(v) = Halide::select(inside, best, cur);
    out(v) = algo::to_storage(acc(v), c.output.dtype);
  } else {
    acc(v) = Halide::cast(at, 0);
    acc(v) += Halide::select(inside, x, Halide::cast(at, 0));
    // PyTorch's divisor: the window clipped to the padded input, or to the input itself.
    Expr he = Halide::min(hs + int(g.kernel.h), H + int(g.padding.h));
    Expr we = Halide::min(ws + int(g.kernel.w), W + int(g.padding.w));
    Expr count = g.count_include_pad
                     ? (he - hs) * (we - ws)
                     : (Halide::min(he, H) - Halide::max(hs, 0)) * (Halide::min(we, W) - Halide::max(ws, 0));
    out(v) = algo::to_storage(acc(v) / Halide::cast(at, count), c.output.dtype);
  }
  c.stages->push_back({acc, /*pure_innermost=*/true});
  return out;
}

Tensor pool_reference(const std::string& op, Pool kind, const Tensor& x_in, const Attrs& a,
                      const TensorMeta& out) {
  Tensor x = x_in.to_host();
  PoolGeom g = pool_geometry(op, kind, x.meta(), a);
  const int64_t N = x.sizes()[0], C = g.x.c, H = g.x.h, W = g.x.w, OH = g.oh, OW = g.ow;
  std::vector<double> xv = x.to_doubles(), o(size_t(N * C * OH * OW));
#pragma omp parallel for if (N * C * OH * OW > 4096)
  for (int64_t nc = 0; nc < N * C; ++nc) {
    for (int64_t y = 0; y < OH; ++y) {
      for (int64_t xo = 0; xo < OW; ++xo) {
        const int64_t hs = y * g.stride.h - g.padding.h, ws = xo * g.stride.w - g.padding.w;
        double acc = kind == Pool::Max ? -INFINITY : 0.0;
        for (int64_t ky = 0; ky < g.kernel.h; ++ky) {
          const int64_t iy = hs + ky * g.dilation.h;
          if (iy < 0 || iy >= H) continue;
          for (int64_t kx = 0; kx < g.kernel.w; ++kx) {
            const int64_t ix = ws + kx * g.dilation.w;
            if (ix < 0 || ix >= W) continue;
            double e = xv[size_t((nc * H + iy) * W + ix)];
            if (kind == Pool::Avg) acc += e;
            else if (std::isnan(e) || e > acc) acc = std::isnan(acc) ? acc : e;
          }
        }
        if (kind == Pool::Avg) {
          const int64_t he = std::min(hs + g.kernel.h, H + g.padding.h), we = std::min(ws + g.kernel.w, W + g.padding.w);
          const int64_t count = g.count_include_pad
                                    ? (he - hs) * (we - ws)
                                    : (std::min(he, H) - std::max<int64_t>(hs, 0)) * (std::min(we, W) - std::max<int64_t>(ws, 0));
          acc /= double(count);
        }
        o[size_t((nc * OH + y) * OW + xo)] = acc;
      }
    }
  }
  return from_vector(o, out.shape, out.dtype);
}

OpDef pool_op(const std::string& name, Pool kind) {
  OpDef d;
  d.name = name;
  d.kind = OpKind::Reduction;
  d.eager_generic = false;
  d.infer = [name, kind](const std::vector<TensorMeta>& in, const Attrs& a) {
    PoolGeom g = pool_geometry(name, kind, in[0], a);
    return TensorMeta{pool_dtype(kind, in[0].dtype),
                      Shape(std::vector<Dim>{g.x.n, Dim(g.x.c), Dim(g.oh), Dim(g.ow)})};
  };
  d.algorithm = [name, kind](const std::vector<Func>& in, const OpCall& c) {
    return pool_algorithm(name, kind, in, c);
  };
  d.reference = [name, kind](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
    return pool_reference(name, kind, in[0], a, out);
  };
  return d;
}

// ---- adaptive_avg_pool2d(x, output_size) -------------------------------------------------
// Output cell i averages input rows [floor(i*H/OH), ceil((i+1)*H/OH)), as in PyTorch.

struct AdaptiveGeom {
  Nchw x;
  Pair out;
};

AdaptiveGeom adaptive_geometry(const TensorMeta& x, const Attrs& a) {
  const std::string op = "adaptive_avg_pool2d";
  AdaptiveGeom g{nchw(op, x), pair_attr(op, a, "output_size")};
  if (g.out.h < 1 || g.out.w < 1) user_error(op, ": output_size must be >= 1, got ", pair_str(g.out));
  if (g.x.h < 1 || g.x.w < 1) user_error(op, ": input ", x.str(), " has an empty spatial dim");
  return g;
}

int64_t bin_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t bin_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }
int64_t max_bin(int64_t in, int64_t out) {
  int64_t m = 0;
  for (int64_t i = 0; i < out; ++i) m = std::max(m, bin_end(i, in, out) - bin_start(i, in, out));
  return m;
}

OpDef adaptive_avg_pool_op() {
  OpDef d;
  d.name = "adaptive_avg_pool2d";
  d.kind = OpKind::Reduction;
  d.eager_generic = false;
  d.infer = [](const std::vector<TensorMeta>& in, const Attrs& a) {
    AdaptiveGeom g = adaptive_geometry(in[0], a);
    return TensorMeta{pool_dtype(Pool::Avg, in[0].dtype),
                      Shape(std::vector<Dim>{g.x.n, Dim(g.x.c), Dim(g.out.h), Dim(g.out.w)})};
  };
  d.algorithm = [](const std::vector<Func>& in, const OpCall& c) {
    AdaptiveGeom g = adaptive_geometry(c.inputs[0], c.attrs);
    Halide::Type at = algo::halide_type(compute_dtype(c.output.dtype));
    auto v = algo::vars(4);
    const int H = int(g.x.h), W = int(g.x.w), OH = int(g.out.h), OW = int(g.out.w);
    Expr hs = (v[1] * H) / OH, he = ((v[1] + 1) * H + OH - 1) / OH;
    Expr ws = (v[0] * W) / OW, we = ((v[0] + 1) * W + OW - 1) / OW;
    // A window of the largest bin; cells of smaller bins mask the rest.
    Halide::RDom r(0, int(max_bin(W, OW)), 0, int(max_bin(H, OH)), "adaptive_avg_pool2d_r");
    Expr x = in[0](Halide::clamp(ws + r.x, 0, W - 1), Halide::clamp(hs + r.y, 0, H - 1), v[2], v[3]);
    Func acc("adaptive_avg_pool2d_acc");
    acc(v) = Halide::cast(at, 0);
    acc(v) += Halide::select(ws + r.x < we && hs + r.y < he, Halide::cast(at, x), Halide::cast(at, 0));
    c.stages->push_back({acc, /*pure_innermost=*/true});
    Func out("adaptive_avg_pool2d");
    out(v) = algo::to_storage(acc(v) / Halide::cast(at, (he - hs) * (we - ws)), c.output.dtype);
    return out;
  };
  d.reference = [](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
    Tensor x = in[0].to_host();
    AdaptiveGeom g = adaptive_geometry(x.meta(), a);
    const int64_t NC = x.sizes()[0] * g.x.c, H = g.x.h, W = g.x.w, OH = g.out.h, OW = g.out.w;
    std::vector<double> xv = x.to_doubles(), o(size_t(NC * OH * OW));
#pragma omp parallel for if (NC * H * W > 65536)
    for (int64_t nc = 0; nc < NC; ++nc) {
      for (int64_t i = 0; i < OH; ++i) {
        for (int64_t j = 0; j < OW; ++j) {
          const int64_t h0 = bin_start(i, H, OH), h1 = bin_end(i, H, OH);
          const int64_t w0 = bin_start(j, W, OW), w1 = bin_end(j, W, OW);
          double s = 0;
          for (int64_t y = h0; y < h1; ++y)
            for (int64_t xw = w0; xw < w1; ++xw) s += xv[size_t((nc * H + y) * W + xw)];
          o[size_t((nc * OH + i) * OW + j)] = s / double((h1 - h0) * (w1 - w0));
        }
      }
    }
    return from_vector(o, out.shape, out.dtype);
  };
  return d;
}

OpDef conv2d_op() {
  OpDef d = make_op_def("conv2d", OpKind::Contraction, 2, infer_conv2d, conv2d_algorithm, conv2d_reference);
  d.eager_generic = false;
  return d;
}

}  // namespace

std::vector<OpDef> conv_ops() {
  return {conv2d_op(), pool_op("max_pool2d", Pool::Max), pool_op("avg_pool2d", Pool::Avg),
          adaptive_avg_pool_op()};
}

}  // namespace kiln
