// Generators scheduled by kiln's own autoscheduler plugin at build time
// (kiln_add_kernel_library(kkk ... SCHEDULE Kiln)) match kiln's eager ops.
#include <gtest/gtest.h>

#include "kkk_conv2d.h"
#include "kkk_matmul.h"
#include "kkk_softmax.h"
#include "generators/kernel_cases.h"

namespace {

using kiln::testing::KernelCase;

const KernelCase& find_case(const std::string& name) {
  static const std::vector<KernelCase> cases = kiln::testing::kernel_cases();
  for (const KernelCase& k : cases)
    if (k.name == name) return k;
  throw std::runtime_error("no kernel case " + name);
}

void expect_matches_eager(const std::string& name, const kiln::testing::KernelFn& fn) {
  const KernelCase& k = find_case(name);
  kiln::Tensor got = kiln::testing::run_kernel(fn, k);
  EXPECT_TRUE(kiln::allclose(got, k.expected, 1e-4, 1e-5)) << name << ": Kiln-scheduled vs eager, max abs diff "
                                                           << kiln::max_abs_diff(got, k.expected);
}

TEST(KilnScheduledLibrary, SoftmaxMatchesEager) {
  expect_matches_eager("softmax", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) {
    return kkk_softmax(in[0], out);
  });
}

TEST(KilnScheduledLibrary, MatmulMatchesEager) {
  expect_matches_eager("matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) {
    return kkk_matmul(in[0], in[1], out);
  });
}

TEST(KilnScheduledLibrary, Conv2dMatchesEager) {
  expect_matches_eager("conv2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) {
    return kkk_conv2d(in[0], in[1], out);
  });
}

}  // namespace
