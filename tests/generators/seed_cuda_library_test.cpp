// The CUDA build of the seed kernel: always linked (so CI proves the CUDA library builds
// and links without a GPU); run only where a GPU is present.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>

#include "HalideBuffer.h"
#include "HalideRuntimeCuda.h"
#include "kiln_seed_cuda.h"

namespace {

// True when a CUDA driver with at least one device is present.
bool gpu_present() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) return false;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  int n = 0;
  return init && count && init(0) == 0 && count(&n) == 0 && n > 0;
}

TEST(SeedCudaLibrary, RunsOnTheGpu) {
  Halide::Runtime::Buffer<float, 1> x(1 << 20), out(1 << 20);
  for (int i = 0; i < x.width(); ++i) x(i) = -3.0f + 6.0f * float(i) / float(x.width());
  if (!gpu_present()) {
    GTEST_SKIP() << "no CUDA driver or GPU here; the CUDA kernel library was built and "
                    "linked, which is what a machine without a GPU can check";
  }
  x.set_host_dirty();
  ASSERT_EQ(kiln_seed_cuda(x, out), 0);
  ASSERT_EQ(out.copy_to_host(), 0);
  for (int i = 0; i < x.width(); i += 997) {
    double v = x(i);
    EXPECT_NEAR(out(i), std::exp(std::sin(v)) + std::log(std::abs(std::cos(v))), 1e-4);
  }
}

}  // namespace
