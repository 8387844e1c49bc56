// Pointwise ops: scalar constants, cast, unary math and broadcasting binary arithmetic.
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "core/error.h"
#include "ops/math/ieee.h"
#include "ops/math/trig.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

// The loop of every pointwise reference: point(i, host inputs, their offsets at output
// element i, with broadcasting) for each i, into a fresh tensor of `out`.
template <class Point>
Tensor pointwise_loop(const std::vector<Tensor>& in, const TensorMeta& out, Point point) {
  std::vector<int64_t> out_sizes = out.shape.sizes();
  Tensor result = empty(out.shape, out.dtype);
  std::vector<Tensor> host;
  std::vector<std::vector<int64_t>> in_sizes;
  for (const Tensor& t : in) {
    host.push_back(t.to_host());
    in_sizes.push_back(t.sizes());
  }
  void* dst = result.mutable_data();
  const int64_t n = result.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> idx = ref::unravel(i, out_sizes);
    int64_t offsets[3] = {0, 0, 0};
    for (size_t k = 0; k < host.size(); ++k) offsets[k] = ref::broadcast_offset(in_sizes[k], out_sizes, idx);
    point(dst, i, host, offsets);
  }
  return result;
}

// The reference for every pointwise op: out[i] = f(in_0[..], in_1[..]) in double, stored
// in the output dtype.
template <class F>
Tensor pointwise_reference(const std::vector<Tensor>& in, const TensorMeta& out, F f) {
  return pointwise_loop(in, out, [&](void* dst, int64_t i, const std::vector<Tensor>& host, const int64_t* offsets) {
    double args[3] = {0.0, 0.0, 0.0};
    for (size_t k = 0; k < host.size(); ++k) args[k] = load_as_double(host[k].data(), host[k].dtype(), offsets[k]);
    store_from_double(dst, out.dtype, i, f(args[0], args[1], args[2]));
  });
}

// Integer add, sub, mul, neg and abs wrap around in two's complement, as PyTorch's and
// Halide's do (an i32 INT_MIN * INT_MIN is 0, -INT_MIN and abs(INT_MIN) are INT_MIN). In
// double a product of two i32 values rounds, an i64 beyond 2^53 rounds, and a result out
// of range would saturate when stored: so these are computed on 64 bits.
bool integer_wraps(const std::string& op, DType out) {
  return (out == DType::I32 || out == DType::I64) &&
         (op == "add" || op == "sub" || op == "mul" || op == "neg" || op == "abs");
}

Tensor integer_arithmetic_reference(const std::string& op, const std::vector<Tensor>& in, const TensorMeta& out) {
  auto load = [](const Tensor& t, int64_t at) { return uint64_t(ref::load_as_int64(t.data(), t.dtype(), at)); };
  return pointwise_loop(in, out, [&](void* dst, int64_t i, const std::vector<Tensor>& host, const int64_t* offsets) {
    const uint64_t a = load(host[0], offsets[0]), b = host.size() > 1 ? load(host[1], offsets[1]) : 0;
    uint64_t r = 0;
    if (op == "add") r = a + b;
    else if (op == "sub") r = a - b;
    else if (op == "mul") r = a * b;
    else if (op == "neg") r = uint64_t(0) - a;
    else r = int64_t(a) < 0 ? uint64_t(0) - a : a;  // abs
    if (out.dtype == DType::I32) static_cast<int32_t*>(dst)[i] = int32_t(uint32_t(r));
    else static_cast<int64_t*>(dst)[i] = int64_t(r);
  });
}

// Halide's erf is f32-only: f64 has kiln's own (math::erf_f64). Halide's erf(+-inf) is
// NaN; erf is +-1 in f32 well before 10, hence the clamp.
Expr erf_any(Expr x) {
  if (x.type().bits() == 64) return math::erf_f64(x);
  return Halide::cast(x.type(), Halide::erf(Halide::clamp(Halide::cast<float>(x), -10.0f, 10.0f)));
}

// gelu(x) = x Phi(x), Phi the standard normal CDF (1 + erf(x / sqrt 2)) / 2, where 1 + erf
// does not cancel: in the lower tail it loses every digit (f32 gelu(-8) was -0, not
// -5.0e-15). There Phi(x) = exp(-x^2 / 2) s P(s) with s = 1 / (1 - x / 2) and P a
// degree-10 least-squares fit of the relative error over x <= -1 (1.3e-8), with x^2 / 2
// split in two floats for an exact exponent, times x before the exp's factor (Phi alone is
// subnormal from x = -13); f64 takes erfc's continued fraction below -2 sqrt 2.
// x times a factor in [0, 1]: (x * (1 + erf)) * 0.5 would overflow near the largest float.
// On a GPU, f32 takes CUDA's own normcdff (libdevice; within 5 ULP over the whole range,
// the lower tail included): the form below, both branches for every element and its f64
// square, made the gelu kernel of the bf16 MLP (8192 x 4096) compute-bound on an H100,
// 249 us under ncu against 45 us of memory traffic.
Expr gelu_exact(const Expr& x) {
  const Halide::Type t = x.type(), d = Halide::Float(64, t.lanes());
  if (t.bits() == 32 && math::lowering_for_gpu()) {
    using Halide::Internal::Call;
    const Expr phi = Call::make(t, "__nv_normcdff", {x}, Call::PureExtern);
    // -0 below -20, -inf included (gelu(-20) is -0 in f32; -inf * 0 would be NaN).
    return Halide::select(x < algo::constant(t, -20), algo::constant(t, -0.0), x * phi);
  }
  const Expr half = algo::constant(t, 0.5);
  const Expr body = x * (half + half * erf_any(x * algo::constant(t, 0.7071067811865476)));
  if (t.bits() == 64) {
    // z unclamped: Halide's simplifier took minutes over bounds of the fraction's levels.
    const Expr z = x * algo::constant(t, -0.7071067811865476);
    return Halide::select(x < algo::constant(t, -2.8284271247461903), x * half * math::erfc_tail_f64(z), body);
  }
  static constexpr double kP[] = {0.19947113902736377,  0.199471594787717,    0.14957422959697655, 0.05058959893663508,
                                  -0.07140444654473468, -0.046899289259054476, -0.3180108932645455, 0.8733573512583266,
                                  -0.8464204676413049,  0.3653713065341923,   -0.054559216021597606};
  // In f32 but for x^2 / 2, which f64 holds exactly (a float's square has 48 bits): both
  // branches run for every element, and an f64 polynomial made gelu 2.5x slower.
  const Expr xc = Halide::max(x, algo::constant(t, -20));  // gelu(-20) is -0 in f32
  const Expr s = algo::constant(t, 1) / (algo::constant(t, 1) - algo::constant(t, 0.5) * xc);
  Expr p = algo::constant(t, kP[10]);
  for (int k = 9; k >= 0; --k) p = p * s + algo::constant(t, kP[k]);
  const Expr xd = Halide::cast(d, xc);
  const Expr q = xd * xd * algo::constant(d, 0.5);
  const Expr hi = Halide::cast(t, q), lo = Halide::cast(t, q - Halide::cast(d, hi));
  const Expr e = math::exp(-hi) * (algo::constant(t, 1) - lo);
  const Expr tail = ((xc * s) * p) * e;
  return Halide::select(x < algo::constant(t, -1), tail, body);
}

// The dtype two operands compute in: PyTorch's result type, 0-d tensors as scalars.
DType operand_type(const TensorMeta& a, const TensorMeta& b) {
  return result_type(a.dtype, a.shape.rank() == 0, b.dtype, b.shape.rank() == 0);
}

// e as type t; a bool becomes 1 or 0 through a select (see cast_op: Halide 21 can turn a
// cast of a bool inside arithmetic into intrinsics its code generator rejects).
Expr to_type(const Expr& e, Halide::Type t) {
  if (e.type().is_bool() && !t.is_bool()) return Halide::select(e, algo::constant(t, 1), algo::constant(t, 0));
  return Halide::cast(t, e);
}

void reject_bool(const std::string& op, DType t) {
  if (t == DType::Bool) {
    user_error(op, ": bool tensors are not supported; cast(x, DType::I32) or cast(x, "
               "DType::F32) first");
  }
}

// ---- scalar: a 0-d constant (C++ numbers used as operands become these) ----------------

OpDef scalar_op() {
  OpDef d;
  d.name = "scalar";
  d.kind = OpKind::Source;
  d.arity = 0;
  d.infer = [](const std::vector<TensorMeta>&, const Attrs& a) {
    return TensorMeta{dtype_from_name(a.get_string("dtype")), Shape{}};
  };
  d.algorithm = [](const std::vector<Func>&, const OpCall& c) {
    Func f("scalar");
    f() = Halide::cast(algo::halide_type(c.output.dtype), Halide::Expr(c.attrs.get_double("value")));
    return f;
  };
  d.reference = [](const std::vector<Tensor>&, const Attrs& a, const TensorMeta& out) {
    return scalar_tensor(a.get_double("value"), out.dtype);
  };
  return d;
}

// ---- cast -------------------------------------------------------------------------------

OpDef cast_op() {
  OpDef d;
  d.name = "cast";
  d.kind = OpKind::Pointwise;
  d.infer = [](const std::vector<TensorMeta>& in, const Attrs& a) {
    return TensorMeta{dtype_from_name(a.get_string("dtype")), in[0].shape};
  };
  d.algorithm = [](const std::vector<Func>& in, const OpCall& c) {
    auto v = algo::vars(c.output.shape.rank());
    Expr x = algo::to_compute(in[0](v), c.inputs[0].dtype);
    Halide::Type ct = algo::halide_type(compute_dtype(c.output.dtype));
    Func f("cast");
    if (c.output.dtype == DType::Bool) {
      f(v) = algo::nonzero(x);
    } else if (c.inputs[0].dtype == DType::Bool) {
      // A select, not a cast: Halide 21 rewrites float(bool) * 0.5 into integer intrinsics
      // with a half-precision constant, which its code generator then rejects.
      f(v) = algo::to_storage(Halide::select(x, algo::constant(ct, 1), algo::constant(ct, 0)), c.output.dtype);
    } else {
      f(v) = algo::to_storage(x, c.output.dtype);
    }
    return f;
  };
  d.reference = [](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
    return pointwise_reference(in, out, [](double x, double, double) { return x; });
  };
  return d;
}

// ---- unary ------------------------------------------------------------------------------

enum class UnaryTypes { FloatResult, SameAsInput, BoolResult };

struct UnarySpec {
  const char* name;
  UnaryTypes types;
  Expr (*algorithm)(Expr x, const Attrs& a);
  double (*reference)(double x, const Attrs& a);
  // True where Halide's own lowering already gives NaN for NaN on every target kiln builds
  // for (libm on the CPU, libdevice on CUDA, or sign-bit and rounding instructions), so the
  // op needs no NaN select: fewer instructions per element in fused chains. False where
  // Halide substitutes its own polynomial (exp, log, erf) or a comparison (relu, clamp).
  bool nan_passes_through = false;
};

const UnarySpec kUnary[] = {
    {"sin", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return math::sin(x); }, [](double x, const Attrs&) { return std::sin(x); }, true},
    {"cos", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return math::cos(x); }, [](double x, const Attrs&) { return std::cos(x); }, true},
    {"tan", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return math::tan(x); }, [](double x, const Attrs&) { return std::tan(x); }, true},
    // Inverse trigonometric and hyperbolic functions: Halide's (libm on the CPU, libdevice
    // on CUDA), NaN outside their domains as in PyTorch.
    {"asin", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return Halide::asin(x); }, [](double x, const Attrs&) { return std::asin(x); }},
    {"acos", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return Halide::acos(x); }, [](double x, const Attrs&) { return std::acos(x); }},
    {"atan", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return Halide::atan(x); }, [](double x, const Attrs&) { return std::atan(x); }},
    {"asinh", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return Halide::asinh(x); }, [](double x, const Attrs&) { return std::asinh(x); }},
    {"acosh", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return Halide::acosh(x); }, [](double x, const Attrs&) { return std::acosh(x); }},
    {"atanh", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return Halide::atanh(x); }, [](double x, const Attrs&) { return std::atanh(x); }},
    {"exp", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return math::exp(x); }, [](double x, const Attrs&) { return std::exp(x); }, true},
    {"log", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return math::log(x); }, [](double x, const Attrs&) { return std::log(x); }},
    {"sqrt", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return Halide::sqrt(x); }, [](double x, const Attrs&) { return std::sqrt(x); }, true},
    {"rsqrt", UnaryTypes::FloatResult,
     [](Expr x, const Attrs&) { return Halide::cast(x.type(), 1) / Halide::sqrt(x); },
     [](double x, const Attrs&) { return 1.0 / std::sqrt(x); }},
    {"tanh", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return math::tanh(x); }, [](double x, const Attrs&) { return std::tanh(x); }, true},
    {"sigmoid", UnaryTypes::FloatResult,
     [](Expr x, const Attrs&) { return math::sigmoid(x); },
     [](double x, const Attrs&) { return 1.0 / (1.0 + std::exp(-x)); }},
    {"abs", UnaryTypes::SameAsInput,
     [](Expr x, const Attrs&) { return x.type().is_float() ? Halide::abs(x) : Halide::select(x < 0, -x, x); },
     [](double x, const Attrs&) { return std::abs(x); }, true},
    // Strict, as the binary ops: a non-strict consumer lets Halide fold the strict terms it
    // reads, so -(a + -a) was 0 for a NaN a (kiln_fuzz: a gradient through mse_loss(v, v)).
    {"neg", UnaryTypes::SameAsInput,
     [](Expr x, const Attrs&) {  // x * -1, not 0 - x: -(+0) is -0
       return x.type().is_float() ? Halide::strict_float(x * algo::constant(x.type(), -1)) : -x;
     },
     [](double x, const Attrs&) { return -x; }, true},
    // relu(NaN) is NaN, as in PyTorch (the unary wrapper propagates NaN).
    {"relu", UnaryTypes::SameAsInput,
     [](Expr x, const Attrs&) { return Halide::max(x, Halide::cast(x.type(), 0)); },
     [](double x, const Attrs&) { return x < 0 ? 0.0 : x; }},
    {"erf", UnaryTypes::FloatResult, [](Expr x, const Attrs&) { return erf_any(x); },
     [](double x, const Attrs&) { return std::erf(x); }},
    {"floor", UnaryTypes::SameAsInput, [](Expr x, const Attrs&) { return x.type().is_float() ? Halide::floor(x) : x; },
     [](double x, const Attrs&) { return std::floor(x); }, true},
    {"ceil", UnaryTypes::SameAsInput, [](Expr x, const Attrs&) { return x.type().is_float() ? Halide::ceil(x) : x; },
     [](double x, const Attrs&) { return std::ceil(x); }, true},
    // Half to even, like PyTorch (Halide's round does the same).
    {"round", UnaryTypes::SameAsInput, [](Expr x, const Attrs&) { return x.type().is_float() ? Halide::round(x) : x; },
     [](double x, const Attrs&) { return std::nearbyint(x); }},
    {"silu", UnaryTypes::FloatResult,
     [](Expr x, const Attrs&) { return x / (Halide::cast(x.type(), 1) + math::exp(-x)); },
     [](double x, const Attrs&) { return x / (1.0 + std::exp(-x)); }},
    // PyTorch's softplus with beta=1, threshold=20: linear above the threshold.
    {"softplus", UnaryTypes::FloatResult,
     [](Expr x, const Attrs&) {
       Expr one = Halide::cast(x.type(), 1);
       return Halide::select(x > Halide::cast(x.type(), 20), x, math::log1p(math::exp(Halide::min(x, Halide::cast(x.type(), 20)))));
     },
     [](double x, const Attrs&) { return x > 20 ? x : std::log1p(std::exp(x)); }},
    // gelu(approximate="none"|"tanh")
    {"gelu", UnaryTypes::FloatResult,
     [](Expr x, const Attrs& a) {
       Halide::Type t = x.type();
       if (a.get_string("approximate") == "tanh") {
         // 0.5 * (1 + tanh(z)) is sigmoid(2z): no cancellation for large negative x (1 + tanh
         // loses every digit in f32 by x = -5), vector exp instead of libm's tanh per lane.
         Expr inner = algo::constant(t, 0.7978845608028654) * (x + algo::constant(t, 0.044715) * x * x * x);
         return x * math::sigmoid(algo::constant(t, 2) * inner);
       }
       return gelu_exact(x);
     },
     [](double x, const Attrs& a) {
       if (a.get_string("approximate") == "tanh") {  // 0.5 * x * (1 + tanh(z)), exact in the tail
         return x / (1.0 + std::exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x)));
       }
       return 0.5 * x * std::erfc(x * -0.7071067811865476);  // 1 + erf cancels in the lower tail
     }},
    {"leaky_relu", UnaryTypes::FloatResult,
     [](Expr x, const Attrs& a) {
       return Halide::select(x < Halide::cast(x.type(), 0), x * algo::constant(x.type(), a.get_double("negative_slope")), x);
     },
     [](double x, const Attrs& a) { return x < 0 ? x * a.get_double("negative_slope") : x; }},
    // clamp(min, max): either bound may be absent. A NaN bound makes every element NaN,
    // as in PyTorch.
    {"clamp", UnaryTypes::SameAsInput,
     [](Expr x, const Attrs& a) {
       const bool nan_bound = (a.has("min") && std::isnan(a.get_double("min"))) ||
                              (a.has("max") && std::isnan(a.get_double("max")));
       if (nan_bound && x.type().is_float()) return algo::constant(x.type(), NAN);
       if (a.has("min")) x = Halide::max(x, algo::constant(x.type(), a.get_double("min")));
       if (a.has("max")) x = Halide::min(x, algo::constant(x.type(), a.get_double("max")));
       return x;
     },
     [](double x, const Attrs& a) {
       for (const char* bound : {"min", "max"})
         if (a.has(bound) && std::isnan(a.get_double(bound))) return a.get_double(bound);
       if (a.has("min")) x = std::max(x, a.get_double("min"));
       if (a.has("max")) x = std::min(x, a.get_double("max"));
       return x;
     }},
    {"logical_not", UnaryTypes::BoolResult,
     [](Expr x, const Attrs&) { return !algo::nonzero(x); },
     [](double x, const Attrs&) { return x == 0.0 ? 1.0 : 0.0; }},
};

OpDef unary_op(const UnarySpec& s) {
  OpDef d;
  d.name = s.name;
  d.kind = OpKind::Pointwise;
  d.infer = [s](const std::vector<TensorMeta>& in, const Attrs&) {
    DType t = in[0].dtype;
    if (s.types == UnaryTypes::FloatResult) return TensorMeta{is_float(t) ? t : DType::F32, in[0].shape};
    if (s.types == UnaryTypes::BoolResult) return TensorMeta{DType::Bool, in[0].shape};
    reject_bool(s.name, t);
    return TensorMeta{t, in[0].shape};
  };
  d.algorithm = [s](const std::vector<Func>& in, const OpCall& c) {
    auto v = algo::vars(c.output.shape.rank());
    DType ct = compute_dtype(s.types == UnaryTypes::BoolResult ? c.inputs[0].dtype : c.output.dtype);
    Expr raw = in[0](v);
    Expr x = Halide::cast(algo::halide_type(ct), raw);
    Expr y = s.algorithm(x, c.attrs);
    // IEEE special values, tested on the stored bits (Halide's simplifier assumes floats
    // are finite): NaN in gives NaN out, and log(+inf) is +inf, not Halide's finite value.
    // One select per op, so a fused chain pays one compare-and-select for each.
    if (raw.type().is_float() && s.types != UnaryTypes::BoolResult && !s.nan_passes_through) {
      Expr keep_input = algo::is_nan(raw);
      if (std::string(s.name) == "log") keep_input = keep_input || algo::is_pos_inf(raw);
      y = Halide::select(keep_input, x, y);
    }
    Func f(algo::func_name(s.name));
    f(v) = algo::to_storage(y, c.output.dtype);
    return f;
  };
  d.reference = [s](const std::vector<Tensor>& in, const Attrs& a, const TensorMeta& out) {
    if (integer_wraps(s.name, out.dtype)) return integer_arithmetic_reference(s.name, in, out);
    return pointwise_reference(in, out, [s, &a](double x, double, double) {
      return std::isnan(x) && s.types != UnaryTypes::BoolResult ? x : s.reference(x, a);
    });
  };
  return d;
}

// ---- binary -----------------------------------------------------------------------------

struct BinarySpec {
  const char* name;
  bool arithmetic;   // rejects bool operands
  bool true_divide;  // integer operands give a float result
  bool bool_result;  // comparisons and logical ops
  Expr (*algorithm)(Expr a, Expr b);
  double (*reference)(double a, double b);
};

// NaN-propagating max/min, as PyTorch's maximum/minimum.
Expr nan_max(Expr a, Expr b) {
  if (!a.type().is_float()) return Halide::max(a, b);
  return algo::propagate_nan(a, algo::propagate_nan(b, Halide::max(a, b)));
}
Expr nan_min(Expr a, Expr b) {
  if (!a.type().is_float()) return Halide::min(a, b);
  return algo::propagate_nan(a, algo::propagate_nan(b, Halide::min(a, b)));
}
double ref_max(double a, double b) { return (std::isnan(a) || a > b) ? a : b; }
double ref_min(double a, double b) { return (std::isnan(a) || a < b) ? a : b; }

// The value of a float constant (a scalar or a broadcast one), if `x` is one.
std::optional<double> float_constant(const Expr& x) {
  Expr s = Halide::Internal::simplify(x);
  if (const auto* b = s.as<Halide::Internal::Broadcast>()) s = b->value;
  // A widened 16-bit constant: float32(-infh) stays a cast.
  if (const auto* c = s.as<Halide::Internal::Cast>(); c && c->value.type().is_float()) s = c->value;
  if (const auto v = Halide::Internal::as_const_float(s)) return double(*v);
  return std::nullopt;
}

// A float operand of a comparison as an integer key: its bits (the value's own, or the
// 16-bit value a widened f16/bf16 came from), NaN tested on them. Constants' bits are
// computed here. Halide's simplifier takes floats to be finite, and bounds a widened f16
// by +-65504: through either, x == inf (or -inf) compiled to false.
struct FloatKey {
  Expr bits;    // signed integer of the operand's width
  Expr is_nan;
};

// The 16-bit value that `e` widens, if it is a cast from f16/bf16 (of type `narrow`, when
// given).
std::optional<Expr> widened_16(const Expr& e, const Halide::Type* narrow) {
  const auto* c = e.as<Halide::Internal::Cast>();
  if (!c || !c->value.type().is_float() || c->value.type().bits() != 16) return std::nullopt;
  if (narrow && c->value.type().element_of() != narrow->element_of()) return std::nullopt;
  return c->value;
}

std::optional<FloatKey> constant_key(const Expr& e, const Halide::Type& as) {
  const std::optional<double> v = float_constant(e);
  if (!v) return std::nullopt;
  const Halide::Type it = Halide::Int(as.bits(), e.type().lanes());
  int64_t bits = 0;
  double back = *v;
  if (as.bits() == 64) {
    std::memcpy(&bits, &*v, 8);
  } else if (as.bits() == 32) {
    const float f = float(*v);
    int32_t b;
    std::memcpy(&b, &f, 4);
    bits = b, back = f;
  } else if (as.is_bfloat()) {
    const Halide::bfloat16_t h(*v);
    bits = int16_t(h.to_bits()), back = double(h);
  } else {
    const Halide::float16_t h(*v);
    bits = int16_t(h.to_bits()), back = double(h);
  }
  if (back != *v && !(std::isnan(back) && std::isnan(*v))) return std::nullopt;  // not exact in `as`
  return FloatKey{Halide::Internal::make_const(it, bits), Halide::Internal::make_const(Halide::Bool(e.type().lanes()), std::isnan(*v))};
}

FloatKey value_key(const Expr& v) {
  return {Halide::reinterpret(Halide::Int(v.type().bits(), v.type().lanes()), v), algo::is_nan(v)};
}

// Keys for a and b of one width: 16 bits where both are widened values of one 16-bit type
// (f16 or bf16) or constants exact in it, else the operands' own width.
std::pair<FloatKey, FloatKey> float_keys(const Expr& a, const Expr& b) {
  std::optional<Expr> na = widened_16(a, nullptr), nb = widened_16(b, nullptr);
  // An f16 and a bf16 value have different bit layouts: they compare at the full width.
  if (na && nb && na->type().element_of() != nb->type().element_of()) na.reset(), nb.reset();
  if (na || nb) {
    const Halide::Type narrow = (na ? *na : *nb).type();
    if (na && !nb) nb = widened_16(b, &narrow);
    if (nb && !na) na = widened_16(a, &narrow);
    std::optional<FloatKey> ka = na ? std::optional<FloatKey>(value_key(*na)) : constant_key(a, narrow);
    std::optional<FloatKey> kb = nb ? std::optional<FloatKey>(value_key(*nb)) : constant_key(b, narrow);
    if (ka && kb) return {*ka, *kb};
  }
  auto key = [&](const Expr& e) { return constant_key(e, e.type()).value_or(value_key(e)); };
  return {key(a), key(b)};
}

// Comparisons are false when either side is NaN (ne: true). Floats compare as integers
// ordered like the values (-0 just below +0, and equal to it).
template <int Op>
Expr compare(Expr a, Expr b) {
  if (!a.type().is_float() || a.type() != b.type()) {
    return Op == 0 ? a == b : Op == 1 ? a != b : Op == 2 ? a < b : Op == 3 ? a <= b : Op == 4 ? a > b : a >= b;
  }
  const auto [fa, fb] = float_keys(a, b);
  const Halide::Type it = fa.bits.type();
  const Expr mag = Halide::Internal::make_const(it.element_of(), (int64_t(1) << (it.bits() - 1)) - 1);
  auto ordered = [&](const Expr& i) { return Halide::select(i < 0, i ^ mag, i); };
  const Expr both_zero = ((fa.bits | fb.bits) & mag) == 0;
  const Expr ka = ordered(fa.bits), kb = ordered(fb.bits);
  const Expr equal = ka == kb || both_zero;
  const Expr r = Op == 0 ? equal
                 : Op == 1 ? !equal
                 : Op == 2 ? ka < kb && !both_zero
                 : Op == 3 ? ka <= kb || both_zero
                 : Op == 4 ? ka > kb && !both_zero
                           : ka >= kb || both_zero;
  return Halide::select(fa.is_nan || fb.is_nan, Halide::cast<bool>(Op == 1), r);
}
Expr to_bool(Expr a) { return algo::nonzero(a); }

const BinarySpec kBinary[] = {
    {"eq", false, false, true, compare<0>, [](double a, double b) { return double(a == b); }},
    {"ne", false, false, true, compare<1>, [](double a, double b) { return double(a != b); }},
    {"lt", false, false, true, compare<2>, [](double a, double b) { return double(a < b); }},
    {"le", false, false, true, compare<3>, [](double a, double b) { return double(a <= b); }},
    {"gt", false, false, true, compare<4>, [](double a, double b) { return double(a > b); }},
    {"ge", false, false, true, compare<5>, [](double a, double b) { return double(a >= b); }},
    {"logical_and", false, false, true, [](Expr a, Expr b) { return to_bool(a) && to_bool(b); },
     [](double a, double b) { return double(a != 0 && b != 0); }},
    {"logical_or", false, false, true, [](Expr a, Expr b) { return to_bool(a) || to_bool(b); },
     [](double a, double b) { return double(a != 0 || b != 0); }},
    {"add", true, false, false, [](Expr a, Expr b) { return a + b; }, [](double a, double b) { return a + b; }},
    {"sub", true, false, false, [](Expr a, Expr b) { return a - b; }, [](double a, double b) { return a - b; }},
    {"mul", true, false, false, [](Expr a, Expr b) { return a * b; }, [](double a, double b) { return a * b; }},
    {"div", true, true, false, [](Expr a, Expr b) { return a.type().is_float() ? math::divide(a, b) : a / b; },
     [](double a, double b) { return a / b; }},
    {"pow", true, false, false, [](Expr a, Expr b) { return math::pow(a, b); },
     [](double a, double b) { return std::pow(a, b); }},
    {"maximum", false, false, false, nan_max, ref_max},
    {"minimum", false, false, false, nan_min, ref_min},
};

// Halide's simplifier treats floats as reals, even inside strict_float: x - x, x + -x and
// x * 0 are 0 to it, and a reduction that adds such a term is proved a no-op and dropped
// (Halide's loop trimming), so sum(x - x) was 0 where x holds inf or NaN. Where the
// operands, seen through the pure Funcs they call (a few levels: traced numbers, neg,
// floor's zero gradient where(x == x, 0, 0)), cancel to a constant, the IEEE result is
// written with its condition: the constant's identity holds for finite operands only,
// and a cancellation of infinities is NaN.
Expr inline_pure_calls(const Expr& e, int levels) {
  using namespace Halide::Internal;
  struct Inliner : IRMutator {
    int levels;
    using IRMutator::visit;
    Expr visit(const Call* c) override {
      // Strict operations as the plain ones: Halide's loop trimming sees through them.
      if (c->is_strict_float_intrinsic()) return mutate(unstrictify_float(c));
      if (levels == 0 || c->call_type != Call::Halide || !c->func.defined()) return IRMutator::visit(c);
      Function f(c->func);
      if (!f.is_pure() || f.outputs() != 1) return IRMutator::visit(c);
      std::map<std::string, Expr> args;
      for (size_t i = 0; i < f.args().size(); ++i) args[f.args()[i]] = mutate(c->args[i]);
      // A wrapper (a Func that only reads another, as an input's x0_in reads x0) costs no
      // level: both operands must reach the same leaves however many they pass.
      const Expr& value = f.values()[0];
      const Expr inner = algo::through_opaque_read(value.as<Cast>() ? value.as<Cast>()->value : value);
      const Call* read = inner.as<Call>();
      const bool wrapper = read && (read->call_type == Call::Halide || read->call_type == Call::Image);
      if (!wrapper) --levels;
      Expr inlined = mutate(substitute(args, value));
      if (!wrapper) ++levels;
      return inlined;
    }
  } inliner;
  inliner.levels = levels;
  return inliner.mutate(e);
}

// `real` is a op b as Halide sees it (not strict), `y` the strict IEEE result.
Expr ieee_cancellation(const std::string& op, const Expr& a, const Expr& b, const Expr& real, const Expr& y) {
  using namespace Halide::Internal;
  if (op != "add" && op != "sub" && op != "mul") return y;
  constexpr int kLevels = 3;
  if (is_const(simplify(inline_pure_calls(a, kLevels))) && is_const(simplify(inline_pure_calls(b, kLevels)))) return y;
  if (!is_const(simplify(inline_pure_calls(real, kLevels)))) return y;
  return Halide::select(math::is_finite(a) && math::is_finite(b), y, math::quiet_nan(y.type()));
}

OpDef binary_op(const BinarySpec& s) {
  OpDef d;
  d.name = s.name;
  d.kind = OpKind::Pointwise;
  d.arity = 2;
  d.infer = [s](const std::vector<TensorMeta>& in, const Attrs&) {
    // Bool operands: as PyTorch, add and mul of two bools are logical or / and, a bool
    // next to a number promotes to it, and sub refuses bools.
    if (s.arithmetic && (std::string(s.name) == "sub" || std::string(s.name) == "pow")) {
      reject_bool(s.name, in[0].dtype);
      reject_bool(s.name, in[1].dtype);
    }
    DType t = operand_type(in[0], in[1]);
    if (s.true_divide && !is_float(t)) t = DType::F32;
    if (s.bool_result) t = DType::Bool;
    return TensorMeta{t, broadcast_shapes(in[0].shape, in[1].shape, s.name)};
  };
  d.algorithm = [s](const std::vector<Func>& in, const OpCall& c) {
    auto v = algo::exprs(algo::vars(c.output.shape.rank()));
    DType out = c.output.dtype;
    // Integer pow runs in f64 (Halide's pow is float-only); exact below 2^53.
    DType ct = (std::string(s.name) == "pow" && !is_float(out)) ? DType::F64 : compute_dtype(out);
    if (s.bool_result) ct = compute_dtype(operand_type(c.inputs[0], c.inputs[1]));
    Halide::Type ht = algo::halide_type(ct);
    Expr a = to_type(in[0](algo::broadcast_index(c.inputs[0], c.output, v)), ht);
    Expr b = to_type(in[1](algo::broadcast_index(c.inputs[1], c.output, v)), ht);
    Expr y = s.algorithm(a, b);
    if (out == DType::Bool && s.arithmetic) {  // two bools: add is or, mul is and
      const std::string name = s.name;
      y = name == "add" ? (a || b) : name == "mul" ? (a && b) : y;
    }
    // IEEE arithmetic: Halide's simplifier treats floats as reals, folding x * 0, x - x,
    // x / x and 0 / x to constants (wrong for inf and NaN) and a division by the constant
    // 0 to an undefined value. Strict ops keep each operation as written; they cost only
    // fused multiply-adds across op boundaries.
    if (ht.is_float() && s.arithmetic && !s.bool_result) y = ieee_cancellation(s.name, a, b, y, Halide::strict_float(y));
    Func f(algo::func_name(s.name));
    f(v) = algo::to_storage(y, out);
    return f;
  };
  d.reference = [s](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
    if (integer_wraps(s.name, out.dtype)) return integer_arithmetic_reference(s.name, in, out);
    return pointwise_reference(in, out, [s](double a, double b, double) { return s.reference(a, b); });
  };
  return d;
}

// ---- where(cond, a, b) ------------------------------------------------------------------

OpDef where_op() {
  OpDef d;
  d.name = "where";
  d.kind = OpKind::Pointwise;
  d.arity = 3;
  d.infer = [](const std::vector<TensorMeta>& in, const Attrs&) {
    if (in[0].dtype != DType::Bool) {
      user_error("where: the condition must be a bool tensor (from a comparison), not ",
                 in[0].str());
    }
    Shape s = broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape, "where"), in[2].shape, "where");
    return TensorMeta{operand_type(in[1], in[2]), s};
  };
  d.algorithm = [](const std::vector<Func>& in, const OpCall& c) {
    auto v = algo::exprs(algo::vars(c.output.shape.rank()));
    Halide::Type t = algo::halide_type(c.output.dtype);
    Func f("where");
    f(v) = Halide::select(algo::nonzero(in[0](algo::broadcast_index(c.inputs[0], c.output, v))),
                          Halide::cast(t, in[1](algo::broadcast_index(c.inputs[1], c.output, v))),
                          Halide::cast(t, in[2](algo::broadcast_index(c.inputs[2], c.output, v))));
    return f;
  };
  d.reference = [](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
    return pointwise_reference(in, out, [](double c, double a, double b) { return c != 0 ? a : b; });
  };
  return d;
}

}  // namespace

std::vector<OpDef> pointwise_ops() {
  std::vector<OpDef> ops = {scalar_op(), cast_op()};
  for (const UnarySpec& s : kUnary) ops.push_back(unary_op(s));
  for (const BinarySpec& s : kBinary) ops.push_back(binary_op(s));
  ops.push_back(where_op());
  return ops;
}

}  // namespace kiln
