#include "ops/api.h"

#include <cmath>

#include "core/error.h"
#include "graph/tracer.h"
#include "runtime/eager.h"

namespace kiln {

Tensor apply_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  const OpDef& def = get_op(op);
  Tracer* tracer = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) user_error(op, ": input ", i, " is an undefined tensor");
    if (inputs[i].is_symbolic()) tracer = inputs[i].impl()->tracer;
  }
  if (tracer) return tracer->record(op, inputs, attrs);
  return eager_apply(def, inputs, attrs);
}

#define KILN_DEFINE_UNARY(name) \
  Tensor name(const Tensor& x) { return apply_op(#name, {x}); }
KILN_DEFINE_UNARY(sin)
KILN_DEFINE_UNARY(cos)
KILN_DEFINE_UNARY(tan)
KILN_DEFINE_UNARY(exp)
KILN_DEFINE_UNARY(log)
KILN_DEFINE_UNARY(abs)
KILN_DEFINE_UNARY(neg)
KILN_DEFINE_UNARY(sqrt)
KILN_DEFINE_UNARY(rsqrt)
KILN_DEFINE_UNARY(tanh)
KILN_DEFINE_UNARY(sigmoid)
KILN_DEFINE_UNARY(relu)
#undef KILN_DEFINE_UNARY

Tensor cast(const Tensor& x, DType dtype) {
  return apply_op("cast", {x}, {{"dtype", std::string(dtype_name(dtype))}});
}

Tensor scalar(double value, DType dtype) {
  Attrs attrs{{"value", value}, {"dtype", std::string(dtype_name(dtype))}};
  if (Tracer* t = Tracer::current()) return t->record("scalar", {}, attrs);
  return scalar_tensor(value, dtype);
}

namespace {
// The dtype a C++ number takes next to a tensor of dtype `t` (PyTorch's weak scalars).
DType weak_scalar_dtype(double v, DType t) {
  bool integral_value = std::isfinite(v) && v == std::floor(v);
  if (is_float(t)) return t;
  if (!integral_value) return DType::F32;
  return t == DType::Bool ? DType::I64 : t;
}
// A number operand: a traced scalar while the tensor is traced, a 0-d tensor otherwise.
Tensor scalar_like(double v, const Tensor& t) {
  DType dt = weak_scalar_dtype(v, t.dtype());
  Attrs attrs{{"value", v}, {"dtype", std::string(dtype_name(dt))}};
  if (t.is_symbolic()) return t.impl()->tracer->record("scalar", {}, attrs);
  return scalar_tensor(v, dt);
}
}  // namespace

#define KILN_DEFINE_BINARY(name)                                                         \
  Tensor name(const Tensor& a, const Tensor& b) { return apply_op(#name, {a, b}); }      \
  Tensor name(const Tensor& a, double b) { return apply_op(#name, {a, scalar_like(b, a)}); } \
  Tensor name(double a, const Tensor& b) { return apply_op(#name, {scalar_like(a, b), b}); }
KILN_DEFINE_BINARY(add)
KILN_DEFINE_BINARY(sub)
KILN_DEFINE_BINARY(mul)
KILN_DEFINE_BINARY(div)
KILN_DEFINE_BINARY(pow)
KILN_DEFINE_BINARY(maximum)
KILN_DEFINE_BINARY(minimum)
#undef KILN_DEFINE_BINARY

namespace {
Tensor reduce(const char* op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return apply_op(op, {x}, {{"axes", axes}, {"keepdim", keepdim}});
}
}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce("sum", x, axes, keepdim);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce("mean", x, axes, keepdim);
}
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce("max", x, axes, keepdim);
}

Tensor operator-(const Tensor& x) { return neg(x); }

#define KILN_DEFINE_OPERATOR(sym, fn)                                        \
  Tensor operator sym(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  Tensor operator sym(const Tensor& a, double b) { return fn(a, b); }        \
  Tensor operator sym(double a, const Tensor& b) { return fn(a, b); }
KILN_DEFINE_OPERATOR(+, add)
KILN_DEFINE_OPERATOR(-, sub)
KILN_DEFINE_OPERATOR(*, mul)
KILN_DEFINE_OPERATOR(/, div)
#undef KILN_DEFINE_OPERATOR

}  // namespace kiln
