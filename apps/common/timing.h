// Timing helpers shared by apps and benchmarks: median of repeated runs after warm-up,
// with the GPU synchronized inside the timed region.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "kiln.h"

namespace kiln::apps {

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
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace kiln::apps
