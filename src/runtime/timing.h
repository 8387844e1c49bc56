// Timing a kiln function as kiln's benchmarks do: the median of repeated runs after
// warm-up, with the GPU synchronized inside the timed region.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "core/stats.h"
#include "kiln.h"

namespace kiln::timing {

// Waits for the GPU work that produced `t` (no-op for CPU tensors).
inline void sync(const Tensor& t) {
  if (t.device().is_cuda()) t.buffer().device_sync();
}

// Median wall-clock milliseconds of `fn` over `reps` runs after `warmup` runs.
inline double median_ms(const std::function<Tensor()>& fn, int reps = 30, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) sync(fn());
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    sync(fn());
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return median(ms);
}

// The median milliseconds of each of `fns`, timed in `reps` interleaved rounds (each
// round runs every one once, starting one further along), so that a machine slowing down
// for a while slows them all alike; each is warmed up `warmup` times first.
inline std::vector<double> interleaved_median_ms(const std::vector<std::function<Tensor()>>& fns, int reps = 30,
                                                 int warmup = 3) {
  for (const auto& fn : fns)
    for (int i = 0; i < warmup; ++i) sync(fn());
  std::vector<std::vector<double>> ms(fns.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t j = 0; j < fns.size(); ++j) {
      const size_t k = (j + size_t(r)) % fns.size();
      auto t0 = std::chrono::steady_clock::now();
      sync(fns[k]());
      auto t1 = std::chrono::steady_clock::now();
      ms[k].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  std::vector<double> medians;
  for (const std::vector<double>& m : ms) medians.push_back(median(m));
  return medians;
}

}  // namespace kiln::timing
