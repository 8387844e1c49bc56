// cuBLASLt as a stage of kiln's pipelines (runtime/cublaslt.h, lower/vendor_stages.h):
// products checked against the f64 reference and against kiln's own CUDA kernels on the
// GPU; the stage's bounds queries, the KILN_VENDOR modes and the errors everywhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln.h"
#include "lower/kernel.h"
#include "lower/scheduler.h"
#include "lower/target.h"
#include "lower/vendor_stages.h"
#include "runtime/cublaslt.h"
#include "runtime/vendor_test_util.h"

using namespace kiln;

namespace {

using kiln::testing::as_f64;
using kiln::testing::logged;
using kiln::testing::mentions;
using kiln::testing::QueryBuffer;
using kiln::testing::ScopedEnv;
using Case = kiln::testing::VendorCase;

TEST(CublasLt, BoundsQueriesAskForTheRowsColumnsAndBatchesThatTheProductReads) {
  // out (N=9, M=7, batch 3) region: columns [2, 6), rows [1, 5), batches [0, 3).
  QueryBuffer out(3), a(3), b(2);
  out.region(0, 2, 4).region(1, 1, 4).region(2, 0, 3);
  // a (K=5, M=7, batch 3); b broadcast: (N=9, K=5), no batch dim.
  ASSERT_EQ(kiln_cublaslt_matmul(&a.b, &b.b, 7, 9, 5, 0, 0, 0, &out.b), 0);
  EXPECT_EQ(a.dims[0].min, 0);
  EXPECT_EQ(a.dims[0].extent, 5);  // all of k
  EXPECT_EQ(a.dims[1].min, 1);
  EXPECT_EQ(a.dims[1].extent, 4);  // the rows asked for
  EXPECT_EQ(a.dims[2].min, 0);
  EXPECT_EQ(a.dims[2].extent, 3);
  EXPECT_EQ(b.dims[0].min, 2);
  EXPECT_EQ(b.dims[0].extent, 4);  // the columns asked for
  EXPECT_EQ(b.dims[1].extent, 5);

  // Transposed operands (read in their storage) and a batch dim of 1 against 3; a region
  // past the product's edge (a consumer's rounded-up loop) asks for no more than exists.
  QueryBuffer out2(3), at(3), bt(3);
  out2.region(0, 0, 16).region(1, 4, 8).region(2, 0, 3);
  ASSERT_EQ(kiln_cublaslt_matmul(&at.b, &bt.b, 7, 9, 5, vendor::kTransA | vendor::kTransB, 0, 1, &out2.b), 0);
  EXPECT_EQ(at.dims[0].min, 4);  // a stored as (M, K): rows first
  EXPECT_EQ(at.dims[0].extent, 3);
  EXPECT_EQ(at.dims[1].extent, 5);
  EXPECT_EQ(bt.dims[0].extent, 5);  // b stored as (K, N)
  EXPECT_EQ(bt.dims[1].min, 0);
  EXPECT_EQ(bt.dims[1].extent, 9);
  EXPECT_EQ(bt.dims[2].min, 0);
  EXPECT_EQ(bt.dims[2].extent, 1);  // broadcast
}

TEST(CublasLt, AStageRunWithoutTheLibraryFailsWithTheReason) {
  std::string why;
  if (vendor::cublaslt_available(&why)) GTEST_SKIP() << "cuBLASLt is usable here; its runs are checked below";
  QueryBuffer out(2), a(2), b(2);
  uint8_t byte = 0;
  for (QueryBuffer* q : {&out, &a, &b}) q->b.host = &byte;  // not a query: a run
  vendor::clear_last_error();
  EXPECT_NE(kiln_cublaslt_matmul(&a.b, &b.b, 1, 1, 1, 0, 0, 0, &out.b), 0);
  EXPECT_TRUE(mentions(vendor::last_error(), why)) << vendor::last_error();
}

std::vector<Tensor> product(const std::vector<Tensor>& in) { return {matmul(in[0], in[1])}; }

// The kiln::Error that compiling a small product for host-cuda raises, with KILN_VENDOR
// set to `mode`; "" where there is none.
std::string vendor_error(const std::string& mode) {
  ScopedEnv env("KILN_VENDOR", mode);
  CompileOptions o;
  o.target = "host-cuda";
  try {
    compile(product, o)({rand({4, 8}, 1), rand({8, 3}, 2)});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CublasLt, KilnVendorOnWithoutTheLibraryIsAnErrorThatSaysWhatIsMissing) {
  std::string why;
  if (vendor::cublaslt_available(&why)) GTEST_SKIP() << "cuBLASLt is usable here";
  const std::string e = vendor_error("on");
  EXPECT_TRUE(mentions(e, "KILN_VENDOR=on: ")) << e;
  EXPECT_TRUE(mentions(e, why)) << e;
}

TEST(CublasLt, KilnVendorTakesAutoOnOrOff) {
  const std::string e = vendor_error("always");
  EXPECT_TRUE(mentions(e, "KILN_VENDOR must be auto, on or off, not 'always'")) << e;
}

TEST(CublasLt, Tf32IsOffUnlessTheUserAllowsIt) {
  ScopedEnv unset("KILN_ALLOW_TF32", std::nullopt);
  EXPECT_FALSE(matmul_allow_tf32());
  set_matmul_allow_tf32(true);
  EXPECT_TRUE(matmul_allow_tf32());
  set_matmul_allow_tf32(false);
  EXPECT_FALSE(matmul_allow_tf32());
}

// Code generation with cuBLASLt stages needs no GPU: the stages, the Funcs they read and
// the kernels around them are built and compiled for CUDA. Causal attention, batched as
// kiln bench's: its softmax rows became a row reduction whose per-block partial results
// Halide refused ("cannot be scheduled in between GPU block loops") on an H200.
TEST(CublasLt, AttentionWithVendorStagesGeneratesCudaCode) {
  set_vendor_codegen_without_gpu(true);
  ScopedEnv on("KILN_VENDOR", "on");
  const int64_t B = 8, H = 16, S = 1024, D = 64;
  Tensor mask = triu(ones({S, S}), 1) > 0.5;
  auto attention = [mask](const std::vector<Tensor>& in) {
    Tensor s = matmul(in[0], transpose(in[1], -1, -2)) * 0.125;
    return std::vector<Tensor>{matmul(softmax(where(mask, scalar(-INFINITY), s), -1), in[2])};
  };
  const Graph g = trace(attention, {randn({B, H, S, D}, 1), randn({B, H, S, D}, 2), randn({B, H, S, D}, 3)});
  const Halide::Target cuda = parse_target("host-cuda");
  const std::string log = logged("schedule", [&] {
    EXPECT_NO_THROW({
      LoweredGraph lowered = lower_and_schedule(g, cuda, {}, /*vendor_kernels=*/true);
      lowered.pipeline().compile_to_module(lowered.arguments(), "attention", cuda);
    });
  });
  set_vendor_codegen_without_gpu(false);
  EXPECT_TRUE(mentions(log, "cuBLASLt (KILN_VENDOR=on)")) << log;
}

TEST(CublasLt, StoredOperandsOfStaticShapeHaveStaticLoops) {
  // The stage asks for its operands' regions at run time; left so, every index of the
  // probabilities' kernel was a run-time division (2.1 ms of an H100's 2.45 ms attention).
  set_vendor_codegen_without_gpu(true);
  ScopedEnv on("KILN_VENDOR", "on");
  const int64_t B = 2, H = 4, S = 256, D = 64;
  auto attention = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{matmul(softmax(matmul(in[0], transpose(in[1], -1, -2)) * 0.125, -1), in[2])};
  };
  const std::vector<Tensor> in = {randn({B, H, S, D}, 1), randn({B, H, S, D}, 2), randn({B, H, S, D}, 3)};
  const Graph g = trace(attention, in);
  const Halide::Target cuda = parse_target("host-cuda");
  for (const std::string scheduler : {"Kiln", "rules"}) {
    SCOPED_TRACE(scheduler);
    LoweredGraph lowered = lower_and_schedule(g, cuda, make_schedule_fn(scheduler, g, in), /*vendor_kernels=*/true);
    ASSERT_FALSE(lowered.vendor_operands.empty());
    for (const Halide::Func& f : lowered.vendor_operands) {
      const auto& bounds = f.function().schedule().bounds();
      ASSERT_EQ(bounds.size(), size_t(4)) << f.name();
      for (const auto& b : bounds) {
        EXPECT_TRUE(Halide::Internal::is_const(b.extent)) << f.name() << "." << b.var;
      }
    }
  }
  set_vendor_codegen_without_gpu(false);
}

// ---- on the GPU ------------------------------------------------------------------------

bool gpu_with_cublaslt(std::string* why) {
  if (!cuda_available()) {
    *why = "no CUDA GPU on this machine; the stage's queries and errors are checked above";
    return false;
  }
  if (!vendor::cublaslt_available(why)) return false;
  return true;
}

void check_on_gpu(const Case& c) { kiln::testing::check_vendor_case_on_gpu(c, "cuBLASLt"); }

TEST(CublasLtGpu, ProductsOfEveryShapeAndTypeMatchTheReference) {
  std::string why;
  if (!gpu_with_cublaslt(&why)) GTEST_SKIP() << why;
  auto mm = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[1])}; };
  std::vector<Case> cases = {
      {"1x1x1", mm, {rand({1, 1}, 1, -1, 1), rand({1, 1}, 2, -1, 1)}, 1e-5, 1e-5},
      {"odd 7x13x5", mm, {rand({7, 5}, 3, -1, 1), rand({5, 13}, 4, -1, 1)}, 1e-5, 1e-5},
      {"257x129x65", mm, {rand({257, 65}, 5, -1, 1), rand({65, 129}, 6, -1, 1)}, 1e-4, 1e-4},
      {"batched", mm, {rand({3, 33, 17}, 7, -1, 1), rand({3, 17, 9}, 8, -1, 1)}, 1e-5, 1e-5},
      {"b broadcast", mm, {rand({4, 2, 5, 6}, 9, -1, 1), rand({6, 3}, 10, -1, 1)}, 1e-5, 1e-5},
      {"a broadcast", mm, {rand({5, 6}, 11, -1, 1), rand({2, 6, 3}, 12, -1, 1)}, 1e-5, 1e-5},
      {"batch of 1 against 3", mm, {rand({1, 5, 6}, 13, -1, 1), rand({3, 6, 4}, 14, -1, 1)}, 1e-5, 1e-5},
      {"empty sum", mm, {rand({3, 0}, 15), rand({0, 4}, 16)}, 0, 0},
      {"f64", mm, {rand({31, 40}, 17, -1, 1, DType::F64), rand({40, 23}, 18, -1, 1, DType::F64)}, 1e-12, 1e-12},
      {"f16", mm, {rand({64, 48}, 19, -1, 1, DType::F16), rand({48, 40}, 20, -1, 1, DType::F16)}, 1e-2, 2e-2},
      {"bf16", mm, {rand({64, 48}, 21, -1, 1, DType::BF16), rand({48, 40}, 22, -1, 1, DType::BF16)}, 2e-2, 1e-1},
      {"a transposed", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(transpose(in[0], -1, -2), in[1])}; },
       {rand({2, 11, 6}, 23, -1, 1), rand({2, 11, 5}, 24, -1, 1)}, 1e-5, 1e-5},
      {"b transposed", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], transpose(in[1], 0, 1))}; },
       {rand({9, 12}, 25, -1, 1), rand({7, 12}, 26, -1, 1)}, 1e-5, 1e-5},
      {"computed operands, a chain and an epilogue",
       [](const std::vector<Tensor>& in) {
         Tensor h = relu(matmul(in[0] * 2.0, in[1]) + in[2]);
         return std::vector<Tensor>{matmul(h, in[3]), h};
       },
       {rand({70, 40}, 27, -1, 1), rand({40, 50}, 28, -1, 1), rand({50}, 29, -1, 1), rand({50, 30}, 30, -1, 1)}, 1e-4,
       1e-4},
      {"attention: softmax rows stored for the second product",
       [](const std::vector<Tensor>& in) {
         Tensor s = matmul(in[0], transpose(in[1], -1, -2)) * 0.125;
         return std::vector<Tensor>{matmul(softmax(where(triu(ones({40, 40}), 1) > 0.5, scalar(-INFINITY), s), -1), in[2])};
       },
       {rand({2, 3, 40, 16}, 34, -1, 1), rand({2, 3, 40, 16}, 35, -1, 1), rand({2, 3, 40, 16}, 36, -1, 1)}, 1e-4, 1e-4},
      {"chained stages", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(matmul(in[0], in[1]), in[2])}; },
       {rand({20, 30}, 31, -1, 1), rand({30, 40}, 32, -1, 1), rand({40, 10}, 33, -1, 1)}, 1e-4, 1e-4},
  };
  for (const Case& c : cases) check_on_gpu(c);
}

TEST(CublasLtGpu, GradientsThroughTheStageMatchTheReference) {
  std::string why;
  if (!gpu_with_cublaslt(&why)) GTEST_SKIP() << why;
  // The backward's products read transposes of the forward's operands (in place).
  auto loss = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(tanh(matmul(in[0], in[1])) * in[2])};
  };
  Case c{"gradient", grad_fn(loss, {0, 1}), {rand({2, 24, 40}, 41, -1, 1), rand({40, 33}, 42, -1, 1),
                                            rand({2, 24, 33}, 43, -1, 1)},
         1e-4, 1e-4};
  check_on_gpu(c);
}

TEST(CublasLtGpu, EagerMatmulOnTheGpuUsesTheStage) {
  std::string why;
  if (!gpu_with_cublaslt(&why)) GTEST_SKIP() << why;
  ScopedEnv on("KILN_VENDOR", "on");
  Tensor a = rand({65, 130}, 51, -1, 1), b = rand({130, 33}, 52, -1, 1);
  const std::string log = logged("schedule", [&] {
    Tensor got = matmul(a.to(Device::cuda()), b.to(Device::cuda()));
    EXPECT_TRUE(allclose(as_f64(got), as_f64(matmul(a, b)), 1e-5, 1e-5));
  });
  EXPECT_TRUE(mentions(log, "cuBLASLt (KILN_VENDOR=on)")) << log;
}

TEST(CublasLtGpu, TheAutoschedulerPricesTheVendorGemmAgainstKilnsKernel) {
  std::string why;
  if (!gpu_with_cublaslt(&why)) GTEST_SKIP() << why;
  ScopedEnv auto_mode("KILN_VENDOR", "auto");
  CompileOptions o;
  o.target = "host-cuda";
  const std::string big = logged("schedule", [&] { compile(product, o)({rand({1024, 1024}, 1), rand({1024, 1024}, 2)}); });
  EXPECT_TRUE(mentions(big, ": cuBLASLt: cuBLASLt predicted")) << big;
  const std::string small = logged("schedule", [&] { compile(product, o)({rand({4, 8}, 1), rand({8, 3}, 2)}); });
  EXPECT_TRUE(mentions(small, ": kiln's kernel: cuBLASLt predicted")) << small;
}

}  // namespace
