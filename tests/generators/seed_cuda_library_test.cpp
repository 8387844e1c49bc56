// The CUDA build of the seed kernel: always linked (so CI proves the CUDA library builds
// and links without a GPU); run only where a GPU is present.
#include <gtest/gtest.h>

#include <cmath>

#include "HalideBuffer.h"
#include "HalideRuntimeCuda.h"
#include "generators/gpu_present.h"
#include "kiln_seed_cuda.h"

namespace {

using kiln::testing::gpu_present;

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
