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

// A compiled kernel's heap scratch (here the reduction's accumulator, which kiln's rules
// compute at root; large enough that Halide does not put it on the stack) counts towards
// the peak, on top of the output. (Kiln computes it per task of the output: no scratch.)
TEST(Memory, CompiledKernelScratchIsCounted) {
  CompileOptions rules;
  rules.scheduler = "rules";
  auto f = compile([](const Tensor& x) { return sum(x, {1}); }, rules);
  Tensor x = randn({1 << 16, 16}, 1);
  f(x);  // compile first: the peak below is one call's
  reset_peak_memory();
  const int64_t before = memory_stats().live_bytes;
  Tensor out = f(x);
  const int64_t out_bytes = (1 << 16) * 4;
  expect_bytes(memory_stats().live_bytes - before, out_bytes);
  EXPECT_GE(memory_stats().peak_bytes - before, 2 * out_bytes);
}

// Sets the host cache's limit for one test and puts the previous one back.
struct ScopedHostCacheLimit {
  int64_t previous = host_cache_limit();
  explicit ScopedHostCacheLimit(int64_t bytes) { set_host_cache_limit(bytes); }
  ~ScopedHostCacheLimit() { set_host_cache_limit(previous); }
};

constexpr int64_t kMiB = int64_t(1) << 20;

// What the cache holds for blocks of these sizes: each rounded up to whole 4 KiB pages
// (Halide asks for a little more than a buffer's data).
void expect_cached(std::initializer_list<int64_t> sizes) {
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s;
  const int64_t cached = memory_stats().cached_bytes;
  EXPECT_GE(cached, sum);
  EXPECT_LE(cached, sum + 4096 * int64_t(sizes.size()));
}

TEST(Memory, AFreedLargeBlockIsCachedAndHandedOutAgainForTheSameSize) {
  ScopedHostCacheLimit limit(64 * kMiB);
  empty_host_cache();
  const float* first_data;
  {
    Tensor t(DType::F32, {1 << 20});  // 4 MiB
    first_data = static_cast<const float*>(t.data());
  }
  const MemoryStats after_free = memory_stats();
  expect_cached({4 * kMiB});
  Tensor again(DType::F32, {1 << 20});
  EXPECT_EQ(static_cast<const float*>(again.data()), first_data);
  EXPECT_EQ(memory_stats().cached_bytes, 0);
  // Live bytes count the tensor, not the rounding to huge pages.
  Tensor other = again.clone();
  expect_bytes(memory_stats().live_bytes - after_free.live_bytes, 8 * kMiB, 2);
}

TEST(Memory, SmallBlocksAreNotCached) {
  empty_host_cache();
  { Tensor t(DType::F32, {1000}); }
  EXPECT_EQ(memory_stats().cached_bytes, 0);
}

TEST(Memory, TheCacheStaysWithinItsLimitGivingBackTheOldestBlocksFirst) {
  ScopedHostCacheLimit limit(10 * kMiB + 64 * 1024);
  empty_host_cache();
  const void* newest;
  {
    Tensor a(DType::F32, {1 << 20});  // 4 MiB
    Tensor b(DType::F32, {3 << 19});  // 6 MiB: with a, 10 MiB and a few pages
    newest = a.data();
    (void)b;
  }  // b is freed first, then a: a is the most recent
  expect_cached({4 * kMiB, 6 * kMiB});
  { Tensor c(DType::F32, {1 << 18}); }  // 1 MiB more: the oldest (b) goes
  expect_cached({4 * kMiB, 1 * kMiB});
  Tensor a_again(DType::F32, {1 << 20});
  EXPECT_EQ(a_again.data(), newest);  // kept
  expect_cached({1 * kMiB});
  // A block larger than the whole cache is returned to the system at once.
  { Tensor huge(DType::F32, {4 << 20}); }
  expect_cached({1 * kMiB});
}

TEST(Memory, ALimitOfZeroTurnsTheCacheOffAndEmptiesIt) {
  { Tensor t(DType::F32, {1 << 20}); }
  ScopedHostCacheLimit off(0);
  EXPECT_EQ(memory_stats().cached_bytes, 0);
  { Tensor t(DType::F32, {1 << 20}); }
  EXPECT_EQ(memory_stats().cached_bytes, 0);
}

TEST(Memory, CacheLimitFromTheEnvironment) {
  EXPECT_EQ(detail::host_cache_limit_from(nullptr), int64_t(1024) << 20);
  EXPECT_EQ(detail::host_cache_limit_from("0"), 0);
  EXPECT_EQ(detail::host_cache_limit_from("2048"), int64_t(2048) << 20);
  // Not megabytes, or past what int64 bytes hold (2^43 MB; the shift overflowed): the default.
  for (const char* bad : {"-1", "12x", "9223372036854775807", "99999999999999999999", "8796093022208"})
    EXPECT_EQ(detail::host_cache_limit_from(bad), int64_t(1024) << 20) << bad;
  EXPECT_EQ(detail::host_cache_limit_from("8796093022207"), int64_t(8796093022207) << 20);
}

TEST(Memory, ANegativeCacheLimitIsAnError) {
  try {
    set_host_cache_limit(-1);
    FAIL() << "expected a kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at least 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
