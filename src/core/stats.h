// The statistics kiln's timings use: one median for the benchmarks, the tuner and
// bench-kernels.
#pragma once

#include <algorithm>
#include <vector>

namespace kiln {

// The median of `v` (the mean of the two middle values of an even count); 0 if empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace kiln
