// Comparing one path's tensors with another's, dtype-aware.
//
// Against the reference, a value may differ by rtol(dtype) relative plus an absolute floor
// (the dtype's smallest normal, so denormal flushing is not a finding) plus its *slack*:
// how far the reference itself moves when every input and every intermediate of the
// program is nudged by a couple of ulps (reference.h). The slack absorbs rounding error
// amplified by ill-conditioned programs (cancellation, floor of a near-integer, a
// comparison of near-equal values) without hiding errors in well-conditioned ones.
// NaN positions must match, and infinities must match in sign, unless the slack says the
// position is unstable.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln.h"

namespace kiln::fuzz {

struct Mismatch {
  int64_t index = -1;  // flat, row-major
  double got = 0, want = 0;
  double error = 0, allowed = 0;
  std::string str(const Tensor& t) const;  // "at [1, 2]: got nan, want 0.5 (|err| 0.5 > 1e-4)"
};

double rtol_for(DType t);
// got vs want (same shape); slack (per element, may be empty) as above.
// With `tolerate_nonfinite`, positions where either side is NaN or infinite are skipped.
std::optional<Mismatch> compare_values(const Tensor& got, const Tensor& want, const std::vector<double>& slack,
                                       bool tolerate_nonfinite = false);
// Bit-for-bit equality (NaN equals NaN): a compiled function called twice.
std::optional<Mismatch> compare_exact(const Tensor& got, const Tensor& want);

}  // namespace kiln::fuzz
