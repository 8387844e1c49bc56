#include "core/float_env.h"

#include <gtest/gtest.h>

#include <cfloat>

#if defined(__x86_64__) || defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "kiln.h"

namespace kiln {
namespace {

// 1e-10 * 1e-30 = 1e-40 is a subnormal f32 (below FLT_MIN, 1.2e-38). Large enough to run
// as parallel tasks on Halide's worker threads, whose float state is their own.
constexpr int64_t kElements = 1 << 18;

Tensor scaled_down(const Tensor& x) { return x * 1e-30; }

TEST(FloatEnv, CompiledAndEagerKernelsFlushSubnormalsUnlessAskedToKeepThem) {
#if !(defined(__x86_64__) || defined(__SSE__))
  GTEST_SKIP() << "flushing subnormals is implemented for x86 (MXCSR) only";
#else
  const bool was = flush_denormals();
  Tensor x = full({kElements}, 1e-10);
  auto compiled = compile(scaled_down);
  const unsigned csr = _mm_getcsr();

  set_flush_denormals(true);
  for (const Tensor& y : {compiled(x), scaled_down(x)}) {
    std::vector<double> v = y.to_doubles();
    EXPECT_EQ(*std::max_element(v.begin(), v.end()), 0.0) << "every element flushed, on every thread";
  }
  EXPECT_EQ(_mm_getcsr(), csr) << "the caller's float state is restored after the call";

  set_flush_denormals(false);
  for (const Tensor& y : {compiled(x), scaled_down(x)}) {
    std::vector<double> v = y.to_doubles();
    EXPECT_GT(*std::min_element(v.begin(), v.end()), 0.0) << "IEEE subnormals kept";
    EXPECT_LT(v[0], double(FLT_MIN));
  }
  set_flush_denormals(was);
#endif
}

}  // namespace
}  // namespace kiln
