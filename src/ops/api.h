// The user-facing op functions and Tensor operators. Each call goes through apply_op():
// recorded into the graph while kiln::compile traces, run at once (eager) otherwise.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace kiln {

// Applies a registered op: traced if any input is symbolic, eager otherwise.
Tensor apply_op(const std::string& op, const std::vector<Tensor>& inputs,
                const Attrs& attrs = {});

// Unary
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor neg(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor cast(const Tensor& x, DType dtype);

// Binary, with NumPy broadcasting. A C++ number operand takes the tensor's dtype (a
// "weak" scalar, as in PyTorch) unless that would lose it (a fraction with an integer
// tensor gives f32).
#define KILN_DECLARE_BINARY(name)                  \
  Tensor name(const Tensor& a, const Tensor& b);   \
  Tensor name(const Tensor& a, double b);          \
  Tensor name(double a, const Tensor& b);
KILN_DECLARE_BINARY(add)
KILN_DECLARE_BINARY(sub)
KILN_DECLARE_BINARY(mul)
KILN_DECLARE_BINARY(div)
KILN_DECLARE_BINARY(pow)
KILN_DECLARE_BINARY(maximum)
KILN_DECLARE_BINARY(minimum)
#undef KILN_DECLARE_BINARY

// Reductions over `axes` (empty: all axes); keepdim keeps reduced axes with size 1.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);

// A scalar as a 0-d tensor of `dtype`, traced as a constant when tracing.
Tensor scalar(double value, DType dtype = DType::F32);

Tensor operator-(const Tensor& x);
#define KILN_DECLARE_OPERATOR(sym)                         \
  Tensor operator sym(const Tensor& a, const Tensor& b);   \
  Tensor operator sym(const Tensor& a, double b);          \
  Tensor operator sym(double a, const Tensor& b);
KILN_DECLARE_OPERATOR(+)
KILN_DECLARE_OPERATOR(-)
KILN_DECLARE_OPERATOR(*)
KILN_DECLARE_OPERATOR(/)
#undef KILN_DECLARE_OPERATOR

}  // namespace kiln
