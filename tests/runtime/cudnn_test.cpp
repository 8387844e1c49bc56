// cuDNN as a stage of kiln's pipelines (runtime/cudnn.h, lower/vendor_stages.h):
// convolutions of every geometry and type checked against the f64 reference and against
// kiln's own CUDA kernels on the GPU; the stage's bounds queries, code generation without
// a GPU and the errors everywhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln.h"
#include "lower/kernel.h"
#include "lower/scheduler.h"
#include "lower/target.h"
#include "lower/vendor_stages.h"
#include "runtime/cudnn.h"
#include "runtime/vendor_test_util.h"

using namespace kiln;

namespace {

using kiln::testing::logged;
using kiln::testing::mentions;
using kiln::testing::QueryBuffer;
using kiln::testing::ScopedEnv;
using Case = kiln::testing::VendorCase;

TEST(Cudnn, BoundsQueriesAskForWholeImagesOfTheBatchesAskedForAndAllOfTheWeight) {
  // x [N=5, C=4, H=9, W=11], w [O=6, C=4, 3, 3], stride 2, padding 1 -> out [5, 6, 5, 6].
  // Asked for: batches [1, 3), channels [2, 4), rows [0, 2), columns [1, 4).
  QueryBuffer x(4), w(4), out(4);
  out.region(0, 1, 3).region(1, 0, 2).region(2, 2, 2).region(3, 1, 2);
  ASSERT_EQ(kiln_cudnn_conv2d(&x.b, &w.b, 5, 4, 9, 11, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, &out.b), 0);
  const int want_x[4][2] = {{0, 11}, {0, 9}, {0, 4}, {1, 2}};
  const int want_w[4][2] = {{0, 3}, {0, 3}, {0, 4}, {0, 6}};
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(x.dims[size_t(d)].min, want_x[d][0]) << "x dim " << d;
    EXPECT_EQ(x.dims[size_t(d)].extent, want_x[d][1]) << "x dim " << d;
    EXPECT_EQ(w.dims[size_t(d)].min, want_w[d][0]) << "w dim " << d;
    EXPECT_EQ(w.dims[size_t(d)].extent, want_w[d][1]) << "w dim " << d;
  }
  // Groups: w holds C/groups input channels. A batch region past the end (a rounded-up
  // loop) asks for no batch that does not exist.
  QueryBuffer x2(4), w2(4), out2(4);
  out2.region(0, 0, 8).region(1, 0, 8).region(2, 0, 8).region(3, 0, 8);
  ASSERT_EQ(kiln_cudnn_conv2d(&x2.b, &w2.b, 3, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4, 0, &out2.b), 0);
  EXPECT_EQ(w2.dims[2].extent, 2);
  EXPECT_EQ(x2.dims[3].min, 0);
  EXPECT_EQ(x2.dims[3].extent, 3);
}

TEST(Cudnn, AStageRunWithoutTheLibraryFailsWithTheReason) {
  std::string why;
  if (vendor::cudnn_available(&why)) GTEST_SKIP() << "cuDNN is usable here; its runs are checked below";
  QueryBuffer x(4), w(4), out(4);
  uint8_t byte = 0;
  for (QueryBuffer* q : {&x, &w, &out}) q->b.host = &byte;  // not a query: a run
  vendor::clear_last_error();
  EXPECT_NE(kiln_cudnn_conv2d(&x.b, &w.b, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, &out.b), 0);
  EXPECT_TRUE(mentions(vendor::last_error(), "cuDNN conv2d: " + why)) << vendor::last_error();
}

TEST(Cudnn, KilnVendorOnWithoutTheLibraryIsAnErrorThatSaysWhatIsMissing) {
  std::string why;
  if (vendor::cudnn_available(&why)) GTEST_SKIP() << "cuDNN is usable here";
  ScopedEnv env("KILN_VENDOR", "on");
  CompileOptions o;
  o.target = "host-cuda";
  std::string e;
  try {
    compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1])}; },
            o)({rand({1, 2, 5, 5}, 1), rand({3, 2, 3, 3}, 2)});
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_TRUE(mentions(e, "KILN_VENDOR=on: ")) << e;
  EXPECT_TRUE(mentions(e, why)) << e;
}

// A small convolutional network and its gradients: conv, bias and ReLU, a strided conv,
// a depthwise conv. The backward's convolutions read permuted values (stored for the
// stage) and the weight gradients slice their outputs (a region of the stage's output).
std::vector<Tensor> conv_net_loss(const std::vector<Tensor>& in) {
  Tensor h = relu(conv2d(in[0], in[1], in[2], {1}, {1}));
  h = conv2d(h, in[3], {}, {2}, {1});
  h = conv2d(h, in[4], {}, {1}, {1}, {1}, 8);
  return {sum(h * h)};
}

std::vector<Tensor> conv_net_inputs() {
  return {rand({2, 3, 12, 12}, 1, -1, 1), rand({8, 3, 3, 3}, 2, -1, 1), rand({8}, 3, -1, 1),
          rand({8, 8, 3, 3}, 4, -1, 1), rand({8, 1, 3, 3}, 5, -1, 1)};
}

// Code generation with cuDNN stages needs no GPU: the stages, the Funcs they read and the
// kernels around them are built and compiled for CUDA, by both schedulers.
TEST(Cudnn, ANetworkAndItsGradientsWithCudnnStagesGenerateCudaCode) {
  set_vendor_codegen_without_gpu(true);
  ScopedEnv on("KILN_VENDOR", "on");
  const std::vector<Tensor> in = conv_net_inputs();
  const Graph g = trace(grad_fn(conv_net_loss, {0, 1, 2, 3, 4}), in);
  const Halide::Target cuda = parse_target("host-cuda");
  for (const std::string scheduler : {"Kiln", "rules"}) {
    SCOPED_TRACE(scheduler);
    const std::string log = logged("schedule", [&] {
      EXPECT_NO_THROW({
        LoweredGraph lowered = lower_and_schedule(g, cuda, make_schedule_fn(scheduler, g, in), /*vendor_kernels=*/true);
        lowered.pipeline().compile_to_module(lowered.arguments(), "conv_net_grad", cuda);
      });
    });
    EXPECT_TRUE(mentions(log, "cuDNN (KILN_VENDOR=on)")) << log;
  }
  set_vendor_codegen_without_gpu(false);
}

// ---- on the GPU ------------------------------------------------------------------------

bool gpu_with_cudnn(std::string* why) {
  if (!cuda_available()) {
    *why = "no CUDA GPU on this machine; the stage's queries and errors are checked above";
    return false;
  }
  return vendor::cudnn_available(why);
}

void check_on_gpu(const Case& c) { kiln::testing::check_vendor_case_on_gpu(c, "cuDNN"); }

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

Fn conv(std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups) {
  return [=](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), stride, padding, dilation, groups)};
  };
}

TEST(CudnnGpu, ConvolutionsOfEveryGeometryAndTypeMatchTheReference) {
  std::string why;
  if (!gpu_with_cudnn(&why)) GTEST_SKIP() << why;
  auto r = [](const Shape& shape, uint64_t seed, DType t = DType::F32) { return rand(shape, seed, -1, 1, t); };
  std::vector<Case> cases = {
      {"3x3 padding 1, bias", conv({1}, {1}, {1}, 1), {r({2, 5, 9, 11}, 1), r({7, 5, 3, 3}, 2), r({7}, 3)}, 1e-5, 1e-5},
      {"1x1", conv({1}, {0}, {1}, 1), {r({3, 16, 7, 7}, 4), r({24, 16, 1, 1}, 5)}, 1e-5, 1e-5},
      {"7x7 stride 2 padding 3 stem", conv({2}, {3}, {1}, 1), {r({2, 3, 31, 29}, 6), r({8, 3, 7, 7}, 7)}, 1e-5, 1e-5},
      {"dilation 2, uneven stride", conv({1, 2}, {2, 1}, {2}, 1), {r({1, 4, 13, 12}, 8), r({6, 4, 3, 3}, 9)}, 1e-5,
       1e-5},
      {"groups 3", conv({1}, {1}, {1}, 3), {r({2, 6, 8, 8}, 10), r({9, 2, 3, 3}, 11)}, 1e-5, 1e-5},
      {"depthwise", conv({1}, {1}, {1}, 16), {r({2, 16, 10, 10}, 12), r({16, 1, 3, 3}, 13)}, 1e-5, 1e-5},
      {"f64", conv({1}, {1}, {1}, 1), {r({2, 4, 6, 6}, 14, DType::F64), r({5, 4, 3, 3}, 15, DType::F64)}, 1e-12, 1e-12},
      {"f16", conv({1}, {1}, {1}, 1), {r({2, 8, 8, 8}, 16, DType::F16), r({8, 8, 3, 3}, 17, DType::F16)}, 1e-2, 3e-2},
      {"bf16", conv({1}, {1}, {1}, 1), {r({2, 8, 8, 8}, 18, DType::BF16), r({8, 8, 3, 3}, 19, DType::BF16)}, 2e-2,
       2e-1},
      {"computed input and a chain",
       [](const std::vector<Tensor>& in) {
         Tensor h = relu(conv2d(in[0] * 2.0, in[1], {}, {1}, {1}));
         return std::vector<Tensor>{conv2d(h, in[2], {}, {1}, {1}), h};
       },
       {r({2, 4, 10, 10}, 20), r({6, 4, 3, 3}, 21), r({5, 6, 3, 3}, 22)}, 1e-4, 1e-4},
      {"part of the output asked for",
       [](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{slice(slice(conv2d(in[0], in[1], {}, {1}, {2}), 2, 1, 5), 1, 2, 5)};
       },
       {r({2, 3, 8, 8}, 23), r({6, 3, 3, 3}, 24)}, 1e-5, 1e-5},
  };
  for (const Case& c : cases) check_on_gpu(c);
}

TEST(CudnnGpu, GradientsThroughTheStageMatchTheReference) {
  std::string why;
  if (!gpu_with_cudnn(&why)) GTEST_SKIP() << why;
  check_on_gpu(Case{"conv net", grad_fn(conv_net_loss, {0, 1, 2, 3, 4}), conv_net_inputs(), 1e-4, 1e-4});
}

TEST(CudnnGpu, TheAutoschedulerPricesCudnnAgainstKilnsKernel) {
  std::string why;
  if (!gpu_with_cudnn(&why)) GTEST_SKIP() << why;
  ScopedEnv auto_mode("KILN_VENDOR", "auto");
  CompileOptions o;
  o.target = "host-cuda";
  const std::string log = logged("schedule", [&] {
    compile(conv({1}, {1}, {1}, 1), o)({rand({8, 64, 56, 56}, 1), rand({64, 64, 3, 3}, 2)});
  });
  EXPECT_TRUE(mentions(log, "cuDNN predicted")) << log;
}

}  // namespace
