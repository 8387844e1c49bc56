#include "kernel_timing.h"

#include <algorithm>
#include <chrono>

#include "kiln.h"

namespace kiln::kernels {

KernelTiming time_kernel(DirectKernel& k, const Halide::Target& target, int reps, double max_seconds) {
  Halide::Pipeline p = k.lowered.pipeline();
  p.compile_jit(target);

  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (const KernelInput& in : k.spec.inputs) inputs.push_back(rand(Shape(in.estimate), seed++, 0.5, 1.5, in.dtype));
  for (size_t i = 0; i < inputs.size(); ++i) {
    k.params[i].set(Halide::Buffer<>(Halide::Runtime::Buffer<>(inputs[i].buffer())));  // shares the data
  }
  const TensorMeta om = output_at_estimates(k.spec);
  const std::vector<int64_t> kiln_sizes = om.shape.sizes();
  const std::vector<int> sizes(kiln_sizes.rbegin(), kiln_sizes.rend());  // Halide's order
  Halide::Buffer<> out(algo::halide_type(om.dtype), sizes);

  const bool gpu = target.has_gpu_feature();
  auto once = [&]() {
    p.realize(out, target);
    if (gpu) out.device_sync();
  };
  once();  // warm-up: copies inputs to the device, JIT caches
  std::vector<double> ms;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    once();
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (i >= 4 && std::chrono::duration<double>(t1 - start).count() > max_seconds) break;
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), int(ms.size())};
}

}  // namespace kiln::kernels
