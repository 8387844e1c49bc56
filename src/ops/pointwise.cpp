// Pointwise ops: scalar constants, cast, unary math and broadcasting binary arithmetic.
#include <cmath>

#include "core/error.h"
#include "ops/op.h"

namespace kiln {

namespace {

using Halide::Expr;
using Halide::Func;

// The reference for every pointwise op: out[i] = f(in_0[..], in_1[..]) in double, with
// broadcasting, stored in the output dtype.
template <class F>
Tensor pointwise_reference(const std::vector<Tensor>& in, const TensorMeta& out, F f) {
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
    double args[2] = {0.0, 0.0};
    for (size_t k = 0; k < host.size(); ++k) {
      args[k] = load_as_double(host[k].data(), host[k].dtype(),
                               ref::broadcast_offset(in_sizes[k], out_sizes, idx));
    }
    store_from_double(dst, out.dtype, i, f(args[0], args[1]));
  }
  return result;
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
    Func f("cast");
    f(v) = c.output.dtype == DType::Bool ? (x != Halide::cast(x.type(), 0))
                                          : algo::to_storage(x, c.output.dtype);
    return f;
  };
  d.reference = [](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
    return pointwise_reference(in, out, [](double x, double) { return x; });
  };
  return d;
}

// ---- unary ------------------------------------------------------------------------------

enum class UnaryTypes { FloatResult, SameAsInput };

struct UnarySpec {
  const char* name;
  UnaryTypes types;
  Expr (*algorithm)(Expr x);
  double (*reference)(double x);
};

const UnarySpec kUnary[] = {
    {"sin", UnaryTypes::FloatResult, [](Expr x) { return Halide::sin(x); }, [](double x) { return std::sin(x); }},
    {"cos", UnaryTypes::FloatResult, [](Expr x) { return Halide::cos(x); }, [](double x) { return std::cos(x); }},
    {"tan", UnaryTypes::FloatResult, [](Expr x) { return Halide::tan(x); }, [](double x) { return std::tan(x); }},
    {"exp", UnaryTypes::FloatResult, [](Expr x) { return Halide::exp(x); }, [](double x) { return std::exp(x); }},
        {"log", UnaryTypes::FloatResult, [](Expr x) { return Halide::log(x); }, [](double x) { return std::log(x); }},
    {"sqrt", UnaryTypes::FloatResult, [](Expr x) { return Halide::sqrt(x); }, [](double x) { return std::sqrt(x); }},
    {"rsqrt", UnaryTypes::FloatResult,
     [](Expr x) { return Halide::cast(x.type(), 1) / Halide::sqrt(x); },
     [](double x) { return 1.0 / std::sqrt(x); }},
    {"tanh", UnaryTypes::FloatResult, [](Expr x) { return Halide::tanh(x); }, [](double x) { return std::tanh(x); }},
    {"sigmoid", UnaryTypes::FloatResult,
     [](Expr x) { return Halide::cast(x.type(), 1) / (Halide::cast(x.type(), 1) + Halide::exp(-x)); },
     [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
    {"abs", UnaryTypes::SameAsInput,
     [](Expr x) { return x.type().is_float() ? Halide::abs(x) : Halide::select(x < 0, -x, x); },
     [](double x) { return std::abs(x); }},
    {"neg", UnaryTypes::SameAsInput, [](Expr x) { return -x; }, [](double x) { return -x; }},
    // relu(NaN) is NaN, as in PyTorch (the unary wrapper propagates NaN).
    {"relu", UnaryTypes::SameAsInput,
     [](Expr x) { return Halide::max(x, Halide::cast(x.type(), 0)); },
     [](double x) { return x < 0 ? 0.0 : x; }},
};

OpDef unary_op(const UnarySpec& s) {
  OpDef d;
  d.name = s.name;
  d.kind = OpKind::Pointwise;
  d.infer = [s](const std::vector<TensorMeta>& in, const Attrs&) {
    DType t = in[0].dtype;
    if (s.types == UnaryTypes::FloatResult) return TensorMeta{is_float(t) ? t : DType::F32, in[0].shape};
    reject_bool(s.name, t);
    return TensorMeta{t, in[0].shape};
  };
  d.algorithm = [s](const std::vector<Func>& in, const OpCall& c) {
    auto v = algo::vars(c.output.shape.rank());
    DType ct = compute_dtype(c.output.dtype);
    Expr raw = in[0](v);
    Expr x = Halide::cast(algo::halide_type(ct), raw);
    Expr y = s.algorithm(x);
    // IEEE special values, tested on the stored bits (Halide's simplifier assumes floats
    // are finite): NaN in gives NaN out, and log(+inf) is +inf, not Halide's finite value.
    if (std::string(s.name) == "log") y = Halide::select(algo::is_pos_inf(raw), x, y);
    if (raw.type().is_float()) y = Halide::select(algo::is_nan(raw), x, y);
    Func f(s.name);
    f(v) = algo::to_storage(y, c.output.dtype);
    return f;
  };
  d.reference = [s](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
    return pointwise_reference(in, out, [s](double x, double) { return s.reference(x); });
  };
  return d;
}

// ---- binary -----------------------------------------------------------------------------

struct BinarySpec {
  const char* name;
  bool arithmetic;   // rejects bool operands
  bool true_divide;  // integer operands give a float result
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

const BinarySpec kBinary[] = {
    {"add", true, false, [](Expr a, Expr b) { return a + b; }, [](double a, double b) { return a + b; }},
    {"sub", true, false, [](Expr a, Expr b) { return a - b; }, [](double a, double b) { return a - b; }},
    {"mul", true, false, [](Expr a, Expr b) { return a * b; }, [](double a, double b) { return a * b; }},
    {"div", true, true, [](Expr a, Expr b) { return a / b; }, [](double a, double b) { return a / b; }},
    {"pow", true, false, [](Expr a, Expr b) { return Halide::pow(a, b); },
     [](double a, double b) { return std::pow(a, b); }},
    {"maximum", false, false, nan_max, ref_max},
    {"minimum", false, false, nan_min, ref_min},
};

OpDef binary_op(const BinarySpec& s) {
  OpDef d;
  d.name = s.name;
  d.kind = OpKind::Pointwise;
  d.arity = 2;
  d.infer = [s](const std::vector<TensorMeta>& in, const Attrs&) {
    if (s.arithmetic) {
      reject_bool(s.name, in[0].dtype);
      reject_bool(s.name, in[1].dtype);
    }
    DType t = promote(in[0].dtype, in[1].dtype);
    if (s.true_divide && !is_float(t)) t = DType::F32;
    return TensorMeta{t, broadcast_shapes(in[0].shape, in[1].shape, s.name)};
  };
  d.algorithm = [s](const std::vector<Func>& in, const OpCall& c) {
    auto v = algo::exprs(algo::vars(c.output.shape.rank()));
    DType out = c.output.dtype;
    // Integer pow runs in f64 (Halide's pow is float-only); exact below 2^53.
    DType ct = (std::string(s.name) == "pow" && !is_float(out)) ? DType::F64 : compute_dtype(out);
    Halide::Type ht = algo::halide_type(ct);
    Expr a = Halide::cast(ht, in[0](algo::broadcast_index(c.inputs[0], c.output, v)));
    Expr b = Halide::cast(ht, in[1](algo::broadcast_index(c.inputs[1], c.output, v)));
    Func f(s.name);
    f(v) = algo::to_storage(s.algorithm(a, b), out);
    return f;
  };
  d.reference = [s](const std::vector<Tensor>& in, const Attrs&, const TensorMeta& out) {
    return pointwise_reference(in, out, s.reference);
  };
  return d;
}

}  // namespace

std::vector<OpDef> pointwise_ops() {
  std::vector<OpDef> ops = {scalar_op(), cast_op()};
  for (const UnarySpec& s : kUnary) ops.push_back(unary_op(s));
  for (const BinarySpec& s : kBinary) ops.push_back(binary_op(s));
  return ops;
}

}  // namespace kiln
