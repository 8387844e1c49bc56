// The kernel library built for CUDA (kkc_*_cuda): always compiled and linked, which is
// what a machine without a GPU can check; run and compared with kiln's eager ops where a
// GPU is present.
#include <gtest/gtest.h>

#include <map>

#include "generators/gpu_present.h"
#include "kkc_seed_cuda.h"
#include "kkc_unary_cuda.h"
#include "kkc_binary_cuda.h"
#include "kkc_reduce_cuda.h"
#include "kkc_softmax_cuda.h"
#include "kkc_layer_norm_cuda.h"
#include "kkc_matmul_cuda.h"
#include "kkc_batch_matmul_cuda.h"
#include "kkc_conv2d_cuda.h"
#include "kkc_pool2d_cuda.h"
#include "generators/kernel_cases.h"

namespace {

using kiln::testing::KernelFn;

using kiln::testing::gpu_present;

const std::map<std::string, KernelFn>& cuda() {
  static const std::map<std::string, KernelFn> fns = {
      {"seed", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_seed_cuda(in[0], out); }},
      {"unary", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_unary_cuda(in[0], out); }},
      {"binary", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_binary_cuda(in[0], in[1], out); }},
      {"reduce", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_reduce_cuda(in[0], out); }},
      {"softmax", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_softmax_cuda(in[0], out); }},
      {"layer_norm", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_layer_norm_cuda(in[0], in[1], in[2], out); }},
      {"matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_matmul_cuda(in[0], in[1], out); }},
      {"batch_matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_batch_matmul_cuda(in[0], in[1], out); }},
      {"conv2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_conv2d_cuda(in[0], in[1], out); }},
      {"pool2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkc_pool2d_cuda(in[0], out); }},
  };
  return fns;
}

TEST(CudaKernelLibrary, MatchesEagerOnTheGpu) {
  if (!gpu_present()) {
    GTEST_SKIP() << "no CUDA driver or GPU here; the CUDA kernel library (10 generators) was built "
                    "and linked, which is what a machine without a GPU can check";
  }
  for (const kiln::testing::KernelCase& k : kiln::testing::kernel_cases()) {
    for (const kiln::Tensor& t : k.inputs) t.buffer().set_host_dirty();
    kiln::Tensor out = kiln::testing::run_kernel(cuda().at(k.name), k);
    ASSERT_EQ(out.buffer().copy_to_host(), 0) << k.name;
    EXPECT_TRUE(kiln::allclose(out, k.expected, 1e-4, 1e-5)) << k.name << ": max abs diff "
                                                             << kiln::max_abs_diff(out, k.expected);
  }
}

}  // namespace
