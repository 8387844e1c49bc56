// The kernel library built by kiln_add_kernel_library for the host, twice: with the
// hand-written schedules (kk_*) and kiln's default rules (kkd_*). Both must match kiln's
// eager ops, and each other to 1e-5 relative.
#include <gtest/gtest.h>

#include <map>

#include "kk_seed.h"
#include "kk_unary.h"
#include "kk_binary.h"
#include "kk_reduce.h"
#include "kk_softmax.h"
#include "kk_layer_norm.h"
#include "kk_matmul.h"
#include "kk_batch_matmul.h"
#include "kk_conv2d.h"
#include "kk_pool2d.h"
#include "kkd_seed.h"
#include "kkd_unary.h"
#include "kkd_binary.h"
#include "kkd_reduce.h"
#include "kkd_softmax.h"
#include "kkd_layer_norm.h"
#include "kkd_matmul.h"
#include "kkd_batch_matmul.h"
#include "kkd_conv2d.h"
#include "kkd_pool2d.h"
#include "generators/kernel_cases.h"

namespace {

using kiln::testing::KernelFn;

const std::map<std::string, KernelFn>& manual() {
  static const std::map<std::string, KernelFn> fns = {
      {"seed", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_seed(in[0], out); }},
      {"unary", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_unary(in[0], out); }},
      {"binary", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_binary(in[0], in[1], out); }},
      {"reduce", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_reduce(in[0], out); }},
      {"softmax", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_softmax(in[0], out); }},
      {"layer_norm", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_layer_norm(in[0], in[1], in[2], out); }},
      {"matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_matmul(in[0], in[1], out); }},
      {"batch_matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_batch_matmul(in[0], in[1], out); }},
      {"conv2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_conv2d(in[0], in[1], out); }},
      {"pool2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kk_pool2d(in[0], out); }},
  };
  return fns;
}

const std::map<std::string, KernelFn>& defaults() {
  static const std::map<std::string, KernelFn> fns = {
      {"seed", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_seed(in[0], out); }},
      {"unary", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_unary(in[0], out); }},
      {"binary", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_binary(in[0], in[1], out); }},
      {"reduce", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_reduce(in[0], out); }},
      {"softmax", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_softmax(in[0], out); }},
      {"layer_norm", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_layer_norm(in[0], in[1], in[2], out); }},
      {"matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_matmul(in[0], in[1], out); }},
      {"batch_matmul", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_batch_matmul(in[0], in[1], out); }},
      {"conv2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_conv2d(in[0], in[1], out); }},
      {"pool2d", [](const std::vector<halide_buffer_t*>& in, halide_buffer_t* out) { return kkd_pool2d(in[0], out); }},
  };
  return fns;
}

const char* const kNames[] = {"seed", "unary", "binary", "reduce", "softmax", "layer_norm", "matmul", "batch_matmul", "conv2d", "pool2d"};

class KernelLibrary : public ::testing::TestWithParam<int> {};

TEST_P(KernelLibrary, ManualMatchesEagerAndDefault) {
  static const std::vector<kiln::testing::KernelCase> cases = kiln::testing::kernel_cases();
  const kiln::testing::KernelCase& k = cases.at(size_t(GetParam()));
  kiln::Tensor m = kiln::testing::run_kernel(manual().at(k.name), k);
  kiln::Tensor d = kiln::testing::run_kernel(defaults().at(k.name), k);
  EXPECT_TRUE(kiln::allclose(m, k.expected, 1e-4, 1e-5)) << k.name << ": manual vs eager, max abs diff "
                                                         << kiln::max_abs_diff(m, k.expected);
  EXPECT_TRUE(kiln::allclose(m, d, 1e-5, k.reorder_atol)) << k.name << ": manual vs default, max abs diff "
                                                << kiln::max_abs_diff(m, d);
}

INSTANTIATE_TEST_SUITE_P(Generators, KernelLibrary, ::testing::Range(0, 10),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(kNames[p.param]);
                         });

}  // namespace
