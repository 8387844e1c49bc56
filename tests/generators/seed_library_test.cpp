// The AOT seed kernels built by add_halide_library: the host one runs here and matches
// kiln's reference; the CUDA one is linked here and runs where a GPU exists.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "HalideBuffer.h"
#include "kiln_seed.h"
#include "kiln_seed_mullapudi.h"

namespace {

using Halide::Runtime::Buffer;

TEST(SeedLibrary, HostKernelMatchesTheFormula) {
  for (int n : {1, 7, 1000, 1 << 18}) {
    Buffer<float, 1> x(n), out(n);
    for (int i = 0; i < n; ++i) x(i) = -3.0f + 6.0f * float(i) / float(n);
    ASSERT_EQ(kiln_seed(x, out), 0);
    for (int i = 0; i < n; ++i) {
      double v = x(i);
      double want = std::exp(std::sin(v)) + std::log(std::abs(std::cos(v)));
      ASSERT_NEAR(out(i), want, 1e-4 * std::max(1.0, std::abs(want))) << "n=" << n << " i=" << i;
    }
  }
}

TEST(SeedLibrary, AutoscheduledBuildGivesTheSameResults) {
  const int n = 100003;
  Buffer<float, 1> x(n), a(n), b(n);
  for (int i = 0; i < n; ++i) x(i) = -3.0f + 6.0f * float(i) / float(n);
  ASSERT_EQ(kiln_seed(x, a), 0);
  ASSERT_EQ(kiln_seed_mullapudi(x, b), 0);
  for (int i = 0; i < n; ++i) ASSERT_EQ(a(i), b(i)) << i;
}

std::string last_error;

TEST(SeedLibrary, ReportsSizeMismatchAsAnError) {
  // Halide's AOT runtime aborts on errors unless the application installs a handler.
  halide_set_error_handler([](void*, const char* msg) { last_error = msg; });
  Buffer<float, 1> x(4), out(8);  // reading x past its end: Halide's checks reject it
  EXPECT_NE(kiln_seed(x, out), 0);
  EXPECT_NE(last_error.find("Input buffer x is accessed at 7"), std::string::npos) << last_error;
}

}  // namespace
