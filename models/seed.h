// The seed's example, written once for every app and benchmark.
#pragma once

#include "kiln.h"

namespace kiln::models {

// compute_expression(x) = exp(sin(x)) + log(abs(cos(x)))
// (Two statements fix the order of tracing; C++ leaves the operands of + unordered.)
inline Tensor compute_expression(const Tensor& x) {
  Tensor a = exp(sin(x));
  Tensor b = log(abs(cos(x)));
  return a + b;
}

}  // namespace kiln::models
