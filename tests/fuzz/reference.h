// The oracle: kiln's reference interpreter (each op's plain C++ implementation, computing
// in double and rounding to the op's dtype) over the traced graph, plus the slack of each
// output element: 4x the largest change of the reference's result over runs that nudge
// every op result (and the operands of accumulating ops: matmul, sum, ...) by +-2 ulps of
// its dtype, then, in two more runs, the results of ops that combine elements (those and
// softmax) also by 2 ulps of their largest element, up and then down (a position whose
// NaN-ness or infinity changes gets infinite slack: unstable). sin, cos and tan of a
// computed value too large for its rounding error to fix the result take the ends of
// their range in those runs. With `flush_subnormals`
// (kiln's default CPU mode, core/float_env.h), one more run flushes every subnormal op
// result to a zero of its sign, as the kernels do: sqrt(x / log(x)) of a tiny x is NaN
// exactly but -0 flushed. See compare.h.
#pragma once

#include <vector>

#include "kiln.h"

namespace kiln::fuzz {

struct ReferenceResult {
  std::vector<Tensor> outputs;
  std::vector<std::vector<double>> slack;  // per output, per element
  // An accumulating op (matmul, sum, ...) reads a finite value beyond the square root of
  // its dtype's range: computing in that dtype (PyTorch and kiln's kernels) may overflow
  // inside, where the double reference does not (in f64: in another order of summation),
  // turning a finite or infinite result into
  // NaN or infinity, or a finite value divided by it. Values are not judged then.
  bool overflow_risk = false;
};

ReferenceResult reference_with_slack(const Graph& graph, const std::vector<Tensor>& inputs, bool flush_subnormals);

}  // namespace kiln::fuzz
