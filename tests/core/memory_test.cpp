#include "core/memory.h"

#include <gtest/gtest.h>

#include "kiln.h"

namespace kiln {
namespace {

// Halide's buffers ask for a little more than their data, to align it.
void expect_bytes(int64_t actual, int64_t expected, int allocations = 1) {
  EXPECT_GE(actual, expected);
  EXPECT_LE(actual, expected + 256 * allocations);
}

TEST(Memory, TensorStorageIsCountedOnceAndReleased) {
  const int64_t before = memory_stats().live_bytes;
  {
    Tensor t(DType::F32, {1000, 10});
    expect_bytes(memory_stats().live_bytes - before, 40000);
    Tensor alias = t;  // shares the storage
    Tensor view = t.detach();
    expect_bytes(memory_stats().live_bytes - before, 40000);
    Tensor copy = t.clone();
    expect_bytes(memory_stats().live_bytes - before, 80000, 2);
  }
  EXPECT_EQ(memory_stats().live_bytes, before);
}

TEST(Memory, PeakRemembersTheHighestPointSinceReset) {
  reset_peak_memory();
  const int64_t before = memory_stats().live_bytes;
  { Tensor big(DType::F64, {1 << 16}); }
  Tensor small(DType::F32, {10});
  expect_bytes(memory_stats().peak_bytes - before, 8 << 16);
  reset_peak_memory();
  EXPECT_EQ(memory_stats().peak_bytes, memory_stats().live_bytes);
}

// A compiled kernel's heap scratch (here the reduction's accumulator, which the default
// rules compute at root; large enough that Halide does not put it on the stack) counts
// towards the peak, on top of the output.
TEST(Memory, CompiledKernelScratchIsCounted) {
  auto f = compile([](const Tensor& x) { return sum(x, {1}); });
  Tensor x = randn({1 << 16, 16}, 1);
  f(x);  // compile first: the peak below is one call's
  reset_peak_memory();
  const int64_t before = memory_stats().live_bytes;
  Tensor out = f(x);
  const int64_t out_bytes = (1 << 16) * 4;
  expect_bytes(memory_stats().live_bytes - before, out_bytes);
  EXPECT_GE(memory_stats().peak_bytes - before, 2 * out_bytes);
}

}  // namespace
}  // namespace kiln
