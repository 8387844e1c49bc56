// Seeded random fills shaped like an input: uniform_like and normal_like.
// Each element is a hash of (seed, its row-major index), the same counter-based generator
// as kiln::rand / kiln::randn in core/tensor.cpp, so a fill does not depend on the order
// of evaluation: eager, compiled, CPU and GPU all give the same numbers, and uniform_like
// of an [n] tensor equals kiln::rand({n}, seed) bit for bit.
#include <cmath>

#include "core/error.h"
#include "ops/math/ieee.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kMix1 = 0xbf58476d1ce4e5b9ull, kMix2 = 0x94d049bb133111ebull;
constexpr uint64_t kIndexMul = 0xd1b54a32d192ed03ull;

uint64_t splitmix64(uint64_t x) {
  x += kGolden;
  x = (x ^ (x >> 30)) * kMix1;
  x = (x ^ (x >> 27)) * kMix2;
  return x ^ (x >> 31);
}

Expr u64(uint64_t v) { return Halide::Internal::make_const(Halide::UInt(64), v); }

Expr splitmix64(Expr x) {
  x = x + u64(kGolden);
  x = (x ^ (x >> 30)) * u64(kMix1);
  x = (x ^ (x >> 27)) * u64(kMix2);
  return x ^ (x >> 31);
}

// Uniform in [0, 1) as f64, from the seed and a u64 element index.
Expr hashed_uniform(uint64_t seed, const Expr& index) {
  Expr h = splitmix64(u64(splitmix64(seed)) ^ (index * u64(kIndexMul)));
  return Halide::cast<double>(h >> 11) * algo::constant(Halide::Float(64), 1.0 / 9007199254740992.0);
}


double reference_uniform(uint64_t seed, uint64_t index) {
  uint64_t h = splitmix64(splitmix64(seed) ^ (index * kIndexMul));
  return double(h >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t seed_of(const Attrs& a) { return uint64_t(a.get_int("seed")); }

TensorMeta infer_fill(const std::string& op, const std::vector<TensorMeta>& in, const Attrs& a) {
  DType t = dtype_from_name(a.get_string("dtype"));
  if (!is_float(t)) user_error(op, ": random fills are floating point; dtype ", dtype_name(t), " is not");
  return {t, in[0].shape};
}

// The row-major linear index of the element at `v` (Halide dims, innermost first).
Expr linear_index(const std::vector<Halide::Var>& v, const OpCall& c) {
  Expr index = u64(0), stride = u64(1);
  for (size_t h = 0; h < v.size(); ++h) {
    const Dim& d = c.output.shape[c.output.shape.rank() - 1 - int(h)];
    index = index + Halide::cast<uint64_t>(v[h]) * stride;
    stride = stride * Halide::cast<uint64_t>(c.extent(d));
  }
  return index;
}

template <class Value>
OpDef fill_op(const char* name, Value value, double (*reference)(uint64_t seed, int64_t i, const Attrs& a)) {
  OpDef d;
  d.name = name;
  d.kind = OpKind::Pointwise;
  d.arity = 1;  // the input gives the shape only
  d.infer = [name](const std::vector<TensorMeta>& in, const Attrs& a) { return infer_fill(name, in, a); };
  d.algorithm = [name, value](const std::vector<Func>&, const OpCall& c) {
    auto v = algo::vars(c.output.shape.rank());
    Expr x = value(seed_of(c.attrs), linear_index(v, c), c.attrs);
    Func f(algo::func_name(name));
    f(v) = algo::to_storage(Halide::cast(algo::halide_type(compute_dtype(c.output.dtype)), x), c.output.dtype);
    return f;
  };
  d.reference = [reference](const std::vector<Tensor>&, const Attrs& a, const TensorMeta& out) {
    std::vector<double> o(size_t(out.shape.numel()));
    for (size_t i = 0; i < o.size(); ++i) o[i] = reference(seed_of(a), int64_t(i), a);
    return from_vector(o, out.shape, out.dtype);
  };
  return d;
}

}  // namespace

std::vector<OpDef> random_ops() {
  OpDef uniform = fill_op(
      "uniform_like",
      [](uint64_t seed, const Expr& i, const Attrs& a) {
        Halide::Type t = Halide::Float(64);
        Expr lo = algo::constant(t, a.get_double("low")), hi = algo::constant(t, a.get_double("high"));
        return lo + (hi - lo) * hashed_uniform(seed, i);
      },
      [](uint64_t seed, int64_t i, const Attrs& a) {
        return a.get_double("low") + (a.get_double("high") - a.get_double("low")) * reference_uniform(seed, uint64_t(i));
      });
  // Box-Muller on two uniforms per element (indices 2i and 2i + 1).
  OpDef normal = fill_op(
      "normal_like",
      [](uint64_t seed, const Expr& i, const Attrs& a) {
        Halide::Type t = Halide::Float(64);
        Expr u1 = hashed_uniform(seed, i * u64(2)), u2 = hashed_uniform(seed, i * u64(2) + u64(1));
        Expr z = Halide::sqrt(algo::constant(t, -2.0) * math::log1p(-u1)) * Halide::cos(algo::constant(t, 2.0 * M_PI) * u2);
        return algo::constant(t, a.get_double("mean")) + algo::constant(t, a.get_double("std")) * z;
      },
      [](uint64_t seed, int64_t i, const Attrs& a) {
        double u1 = reference_uniform(seed, 2 * uint64_t(i)), u2 = reference_uniform(seed, 2 * uint64_t(i) + 1);
        return a.get_double("mean") + a.get_double("std") * std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * M_PI * u2);
      });
  return {uniform, normal};
}

}  // namespace kiln
