#include "kernel_timing.h"

#include <algorithm>
#include <chrono>

#include "kiln.h"

namespace kiln::kernels {

KernelData::KernelData(const KernelSpec& spec) {
  uint64_t seed = 1;
  for (const KernelInput& in : spec.inputs) inputs.push_back(rand(Shape(in.estimate), seed++, 0.5, 1.5, in.dtype));
  // The output comes from kiln's allocator too: a malloc'd one lands on whatever 4 KB
  // pages the kernel hands out, and on a 16-core Xeon whose L3 holds most of
  // kiln_binary's 96 MB the same loops timed up to 10% apart between two processes.
  const TensorMeta om = output_at_estimates(spec);
  output = empty(om.shape, om.dtype);
}

KernelTimer::KernelTimer(DirectKernel k, const Halide::Target& target, std::shared_ptr<const KernelData> data)
    : k_(std::move(k)), target_(target), pipeline_(k_.lowered.pipeline()) {
  pipeline_.compile_jit(target_);
  bind(data ? std::move(data) : std::make_shared<const KernelData>(k_.spec));
  run_once();
}

void KernelTimer::bind(std::shared_ptr<const KernelData> data) {
  KILN_CHECK(data && data->inputs.size() == k_.params.size(), "KernelTimer: ", k_.spec.generator, " takes ",
             k_.params.size(), " inputs; the data bound to it has ", data ? data->inputs.size() : 0);
  data_ = std::move(data);
  for (size_t i = 0; i < data_->inputs.size(); ++i) {
    k_.params[i].set(Halide::Buffer<>(Halide::Runtime::Buffer<>(data_->inputs[i].buffer())));  // shares the data
  }
  // The output's device copy holds results no one reads; dropping it with a live host
  // allocation would otherwise be refused as losing data.
  if (out_.defined() && out_.raw_buffer()->device) out_.device_free();
  out_ = Halide::Buffer<>(Halide::Runtime::Buffer<>(data_->output.buffer()));
}

void KernelTimer::run_once() {
  pipeline_.realize(out_, target_);
  if (target_.has_gpu_feature()) out_.device_sync();
}

KernelTiming time_runs(const std::function<void()>& run_once, int reps, double max_seconds, double warm_s) {
  using Clock = std::chrono::steady_clock;
  const auto warm_until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warm_s));
  do {
    run_once();
  } while (Clock::now() < warm_until);
  std::vector<double> ms;
  const auto start = Clock::now();
  for (int i = 0; i < std::max(1, reps); ++i) {
    const auto t0 = Clock::now();
    run_once();
    const auto t1 = Clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (i >= 4 && std::chrono::duration<double>(t1 - start).count() > max_seconds) break;
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), int(ms.size())};
}

KernelTiming KernelTimer::time(int reps, double max_seconds, double warm_s) {
  return time_runs([this] { run_once(); }, reps, max_seconds, warm_s);
}

KernelTiming time_kernel(DirectKernel& k, const Halide::Target& target, int reps, double max_seconds) {
  return KernelTimer(k, target).time(reps, max_seconds);
}

}  // namespace kiln::kernels
