// The kernel library built for CUDA with the hand-written schedules (kkc_*_cuda) and with
// the Kiln autoscheduler's GPU search (kkkc_*_cuda): always compiled and linked, which is
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
#include "kkkc_seed_cuda.h"
#include "kkkc_unary_cuda.h"
#include "kkkc_binary_cuda.h"
#include "kkkc_reduce_cuda.h"
#include "kkkc_softmax_cuda.h"
#include "kkkc_layer_norm_cuda.h"
#include "kkkc_matmul_cuda.h"
#include "kkkc_batch_matmul_cuda.h"
#include "kkkc_conv2d_cuda.h"
#include "kkkc_pool2d_cuda.h"
#include "generators/kernel_cases.h"

namespace {

using kiln::testing::KernelFn;

using kiln::testing::gpu_present;

// One library's functions by generator name (`lib`: kkc or kkkc).
#define KILN_CUDA_KERNELS(lib) \
  { \
    {"seed", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_seed_cuda(in[0], out); }}, \
    {"unary", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_unary_cuda(in[0], out); }}, \
    {"binary", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_binary_cuda(in[0], in[1], out); }}, \
    {"reduce", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_reduce_cuda(in[0], out); }}, \
    {"softmax", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_softmax_cuda(in[0], out); }}, \
    {"layer_norm", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_layer_norm_cuda(in[0], in[1], in[2], out); }}, \
    {"matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_matmul_cuda(in[0], in[1], out); }}, \
    {"batch_matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_batch_matmul_cuda(in[0], in[1], out); }}, \
    {"conv2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_conv2d_cuda(in[0], in[1], out); }}, \
    {"pool2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return lib##_pool2d_cuda(in[0], out); }}, \
  }

const std::map<std::string, KernelFn>& manual() {
  static const std::map<std::string, KernelFn> fns = KILN_CUDA_KERNELS(kkc);
  return fns;
}

const std::map<std::string, KernelFn>& kiln_scheduled() {
  static const std::map<std::string, KernelFn> fns = KILN_CUDA_KERNELS(kkkc);
  return fns;
}

void expect_matches_eager(const std::map<std::string, KernelFn>& library, const std::string& which) {
  for (const kiln::testing::KernelCase& k : kiln::testing::kernel_cases()) {
    for (const kiln::Tensor& t : k.inputs) t.buffer().set_host_dirty();
    kiln::Tensor out = kiln::testing::run_kernel(library.at(k.name), k);
    ASSERT_EQ(out.buffer().copy_to_host(), 0) << which << " " << k.name;
    EXPECT_TRUE(kiln::allclose(out, k.expected, 1e-4, 1e-5)) << which << " " << k.name << ": max abs diff "
                                                             << kiln::max_abs_diff(out, k.expected);
  }
}

TEST(CudaKernelLibrary, MatchesEagerOnTheGpu) {
  if (!gpu_present()) {
    GTEST_SKIP() << "no CUDA driver or GPU here; the CUDA kernel library (10 generators) was built "
                    "and linked, which is what a machine without a GPU can check";
  }
  expect_matches_eager(manual(), "hand-written schedule:");
}

TEST(CudaKernelLibrary, KilnScheduledMatchesEagerOnTheGpu) {
  if (!gpu_present()) {
    GTEST_SKIP() << "no CUDA driver or GPU here; the Kiln-scheduled CUDA kernel library (10 generators) was "
                    "built and linked, which is what a machine without a GPU can check";
  }
  expect_matches_eager(kiln_scheduled(), "Kiln schedule:");
}

}  // namespace
