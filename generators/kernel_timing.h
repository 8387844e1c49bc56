// Timing a kernel-library generator's pipeline in-process, the way `kiln bench-kernels`
// and `kiln tune` do: seeded random inputs at the generator's estimate sizes, a JIT
// compile, a warm-up run, then repeated runs.
#pragma once

#include <Halide.h>

#include <functional>
#include <memory>
#include <vector>

#include "kernel_spec.h"

namespace kiln::kernels {

struct KernelTiming {
  double median_ms = 0;
  double min_ms = 0;
  int runs = 0;
};

// Up to `reps` timed calls of `run_once`, stopping early once 5 are in and `max_seconds`
// have passed, after `warm_s` seconds of calls that are not counted (one at least): a
// pool of threads that slept through a compile, and cores in a deep idle state, take
// longer than that to come back (the first 10 runs of a 50 us kernel on 16 cores took
// 0.3 ms each). `run_once` waits for what it started (a GPU's work included).
KernelTiming time_runs(const std::function<void()>& run_once, int reps, double max_seconds, double warm_s);

// A generator's seeded random inputs and its output, at its estimate sizes, in host
// memory from kiln's allocator (large blocks aligned to 2 MB and advised as huge pages).
// Timers of one spec can share them, so that schedules compared against each other run
// on the very same pages: where the data lies moves a memory-bound kernel as much as a
// schedule does. On a 16-core Xeon, three processes each timed kiln_binary's one loop nest
// on six sets of buffers, 5-13% apart (0.375 to 0.425 ms in one), and six compiled copies
// of it on one set of buffers 2-5% apart.
struct KernelData {
  explicit KernelData(const KernelSpec& spec);
  std::vector<Tensor> inputs;
  Tensor output;
};

// One compiled kernel with its inputs bound, ready to be timed as often as wanted (kiln
// tune times its finalists again, interleaved, after the first pass).
class KernelTimer {
 public:
  // Compiles `k`'s (already scheduled) pipeline for `target`, binds `data` (or, where
  // null, data of its own) and runs it once (the warm-up: copies inputs to the device,
  // fills JIT caches). Timers that share data must not run at the same time.
  KernelTimer(DirectKernel k, const Halide::Target& target, std::shared_ptr<const KernelData> data = nullptr);

  // Binds `data` (of the same spec) in place of the data bound now; the next run reads and
  // writes it (on a GPU target, copying the inputs to the device first).
  void bind(std::shared_ptr<const KernelData> data);
  const std::shared_ptr<const KernelData>& data() const { return data_; }

  // time_runs of this kernel; on a GPU target each run includes the device
  // synchronization.
  KernelTiming time(int reps, double max_seconds, double warm_s = kWarmSeconds);

  static constexpr double kWarmSeconds = 0.1;

 private:
  void run_once();

  DirectKernel k_;
  Halide::Target target_;
  Halide::Pipeline pipeline_;
  std::shared_ptr<const KernelData> data_;  // what the params and out_ share
  Halide::Buffer<> out_;
};

// Compiles and times `k` once: KernelTimer(k, target).time(reps, max_seconds).
KernelTiming time_kernel(DirectKernel& k, const Halide::Target& target, int reps, double max_seconds);

}  // namespace kiln::kernels
