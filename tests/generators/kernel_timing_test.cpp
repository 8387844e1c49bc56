// Timing a generator in-process (generators/kernel_timing.h): timers of one spec that
// share their data run on the very same buffers, as kiln tune's candidates do, and a timer
// runs on the data bound to it last, as bench-kernels' rounds rotate sets of buffers.
#include <gtest/gtest.h>

#include <cstring>

#include "kernel_spec.h"
#include "kernel_timing.h"
#include "kiln.h"

namespace {

using namespace kiln;
using namespace kiln::kernels;

DirectKernel scheduled(const KernelSpec& spec, const std::string& schedule) {
  DirectKernel k = build_direct(spec);
  apply_named_schedule(schedule, spec.generator, k.lowered, Halide::get_host_target());
  return k;
}

// How many elements of the shared output are not a + b (checked on the host, element by
// element), after the output was poisoned and a timer built on the data ran once.
int64_t wrong_sums(const KernelData& data) {
  const float* a = static_cast<const float*>(data.inputs[0].data());
  const float* b = static_cast<const float*>(data.inputs[1].data());
  const float* out = static_cast<const float*>(data.output.data());
  int64_t wrong = 0;
  for (int64_t i = 0; i < data.output.numel(); ++i) wrong += out[i] != a[i] + b[i];
  return wrong;
}

void poison(const KernelData& data) {
  Halide::Runtime::Buffer<void>& out = data.output.buffer();
  std::memset(out.data(), 0xff, out.size_in_bytes());  // NaNs
}

TEST(KernelTiming, TimersOfOneSpecRunOnTheSameBuffers) {
  const KernelSpec spec = make_spec("binary", {{"op", "add"}});
  const auto data = std::make_shared<const KernelData>(spec);
  ASSERT_EQ(data->inputs.size(), 2u);
  ASSERT_NE(data->inputs[0].data(), data->inputs[1].data());

  poison(*data);
  ASSERT_EQ(wrong_sums(*data), data->output.numel());
  KernelTimer rules(scheduled(spec, "default"), Halide::get_host_target(), data);  // runs once
  EXPECT_EQ(wrong_sums(*data), 0) << "the rules' kernel did not write the shared output";

  poison(*data);
  KernelTimer manual(scheduled(spec, "manual"), Halide::get_host_target(), data);
  EXPECT_EQ(wrong_sums(*data), 0) << "the hand-written kernel did not write the shared output";

  poison(*data);
  rules.time(2, 0.0, 0.0);
  EXPECT_EQ(wrong_sums(*data), 0) << "timing the first kernel again did not run it on the shared buffers";
}

TEST(KernelTiming, ABoundDataSetIsTheOneTheNextRunUses) {
  const KernelSpec spec = make_spec("binary", {{"op", "add"}});
  const auto first = std::make_shared<const KernelData>(spec);
  const auto second = std::make_shared<const KernelData>(spec);
  KernelTimer timer(scheduled(spec, "default"), Halide::get_host_target(), first);
  poison(*first);
  poison(*second);
  timer.bind(second);
  timer.time(1, 0.0, 0.0);
  EXPECT_EQ(wrong_sums(*second), 0) << "the run did not write the data bound last";
  EXPECT_EQ(wrong_sums(*first), first->output.numel()) << "the run wrote the data bound before";
}

TEST(KernelTiming, DataOfAnotherSpecIsRefused) {
  const auto unary = std::make_shared<const KernelData>(make_spec("unary"));
  const KernelSpec binary = make_spec("binary");
  EXPECT_THROW(KernelTimer(scheduled(binary, "default"), Halide::get_host_target(), unary), Error);
}

}  // namespace
