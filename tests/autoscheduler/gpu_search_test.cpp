// kiln's GPU search: its schedules of every test pipeline lower and compile to CUDA (no
// GPU needed), give the default schedule's results where a GPU is present, take the
// shapes the search promises (register tiles per thread, threads per row, vectors per
// thread), and the GPU cost model ranks known good and bad schedules in the right order.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <fstream>
#include <sstream>

#include "cases.h"
#include "gpu_cost_model.h"
#include "kernel_spec.h"
#include "lower/default_schedule.h"
#include "machine_model.h"
#include "search.h"
#include "temp_dir.h"

using namespace kiln;
using namespace kiln::as_test;
namespace as = kiln::autoschedule;

namespace {

const Halide::Target kCuda("host-cuda-cuda_capability_80");

// An A100-class machine, fixed so that the decisions do not depend on the machine the
// tests run on.
as::MachineModel a100() {
  as::MachineModel m;
  as::set_gpu_defaults(m, 80);
  return m;
}

const Case& find_case(const std::string& name) {
  static const std::vector<Case> all = cases();
  for (const Case& c : all) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no case " + name);
}

bool any_decision(const as::SearchResult& r, const std::string& text) {
  for (const std::string& d : r.decisions)
    if (d.find(text) != std::string::npos) return true;
  return false;
}

std::vector<Halide::Argument> arguments(const LoweredGraph& l) {
  std::vector<Halide::Argument> args;
  for (const Halide::ImageParam& p : l.inputs) args.push_back(p);
  return args;
}

class GpuSearch : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuSearch, LowersAndCompilesToCuda) {
  LoweredGraph l = lower_case(find_case(GetParam()));
  const as::SearchResult r = as::schedule_pipeline(l.pipeline(), kCuda, a100());
  EXPECT_NE(r.source.find("gpu_blocks("), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("gpu_threads("), std::string::npos) << r.source;
  EXPECT_GT(r.predicted_s, 0);
  Halide::Module mod = l.pipeline().compile_to_module(arguments(l), "kiln_gpu_" + GetParam(), kCuda);
  EXPECT_FALSE(mod.functions().empty());
}

TEST_P(GpuSearch, SameResultsAsTheDefaultScheduleOnTheGpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; the schedules are compiled to CUDA without one";
  const Case& c = find_case(GetParam());
  LoweredGraph ref = lower_case(c);
  apply_default_schedule(ref, Halide::get_jit_target_from_environment());
  const Halide::Buffer<float> expected = run_case(c, ref);
  LoweredGraph l = lower_case(c);
  const Halide::Target gpu = Halide::get_jit_target_from_environment().with_feature(Halide::Target::CUDA);
  const as::SearchResult r = as::schedule_pipeline(l.pipeline(), gpu, as::machine_model(gpu));
  const Halide::Buffer<float> got = run_case(c, l, gpu);
  double worst = 0;
  got.for_each_element([&](const int* pos) {
    worst = std::max(worst, double(std::abs(got(pos) - expected(pos))) / std::max(1.0, double(std::abs(expected(pos)))));
  });
  // Reductions sum in another order on the GPU (partial results per thread): a few
  // rounding steps of the result, which for a sum of everything (~10^5 terms) is ~1e-5 of
  // it; a lost or doubled term would be ~1e-3.
  const bool everything = GetParam() == "total_sum" || GetParam() == "matmul_sum";
  EXPECT_LE(worst, everything ? 2e-4 : 1e-5) << r.source;
}

INSTANTIATE_TEST_SUITE_P(Pipelines, GpuSearch,
                         ::testing::Values("matmul", "softmax", "conv2d", "pointwise", "conv2d_wide", "max_pool2d",
                                           "row_sum", "total_sum", "matmul_sum", "matmul_transposed"));

// An output hosts a product's threads only where it reads the product at its own point: a
// thread's adjacent outputs are then adjacent points of the product. Read transposed, the
// product is computed per thread of a stored copy instead.
TEST(GpuSearchDecisions, OnlyAnOutputReadingAProductAtItsPointHostsIt) {
  LoweredGraph plain = lower_case(find_case("matmul"));
  as::SearchResult r = as::schedule_pipeline(plain.pipeline(), kCuda, a100());
  EXPECT_FALSE(any_decision(r, "computed per thread of a stored copy")) << ::testing::PrintToString(r.decisions);
  LoweredGraph transposed = lower_case(find_case("matmul_transposed"));
  r = as::schedule_pipeline(transposed.pipeline(), kCuda, a100());
  EXPECT_TRUE(any_decision(r, "computed per thread of a stored copy")) << ::testing::PrintToString(r.decisions);
}

TEST(GpuSearchDecisions, TilesThreadsRowsAndVectors) {
  LoweredGraph mm = lower_case(find_case("matmul"));
  as::SearchResult r = as::schedule_pipeline(mm.pipeline(), kCuda, a100());
  EXPECT_TRUE(any_decision(r, "columns per thread")) << r.source;
  EXPECT_TRUE(any_decision(r, "computed per thread of out")) << r.source;
  // Memory placement is explicit: a whole tile's accumulators in registers, computed over
  // exactly the tile, so Halide never falls back to the thread's local memory.
  EXPECT_NE(r.source.find("matmul_acc.store_in(MemoryType::Register);"), std::string::npos) << r.source;
  // The tile's columns and rows are not bounded: the same accumulators serve the branch
  // for outputs smaller than one tile, whose threads compute one point each, and a bound
  // of a whole tile there would read the inputs past their ends.
  EXPECT_EQ(r.source.find("matmul_acc.bound_extent("), std::string::npos) << r.source;
  LoweredGraph conv = lower_case(find_case("conv2d_wide"));
  r = as::schedule_pipeline(conv.pipeline(), kCuda, a100());
  EXPECT_TRUE(any_decision(r, "computed per thread of a stored copy")) << r.source;
  EXPECT_NE(r.source.find(".in();"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("store_in(MemoryType::Register);"), std::string::npos) << r.source;
  // ... and compiles. Dims past the tile's two are bounded to one point: the kernel
  // library's conv2d (built for CUDA with SCHEDULE Kiln) fuses them into its blocks, and
  // without the bound Halide cannot prove the tile's extent constant (registers need
  // one; the build fails).
  EXPECT_NE(r.source.find(".bound_extent("), std::string::npos) << r.source;
  EXPECT_NO_THROW(conv.pipeline().compile_to_module(conv.pipeline().infer_arguments(), "conv", kCuda)) << r.source;
  // softmax's max and sum are computed per block of the output's rows: one kernel.
  LoweredGraph sm = lower_case(find_case("softmax"));
  r = as::schedule_pipeline(sm.pipeline(), kCuda, a100());
  EXPECT_TRUE(any_decision(r, "one kernel for 2 row reductions and the output")) << r.source;
  EXPECT_TRUE(any_decision(r, "partial results per row")) << r.source;
  EXPECT_NE(r.source.find("rfactor("), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("store_in(MemoryType::GPUShared);"), std::string::npos) << r.source;
  // A sum whose output is itself: its own kernel, threads along each row.
  LoweredGraph rs = lower_case(find_case("row_sum"));
  r = as::schedule_pipeline(rs.pipeline(), kCuda, a100());
  EXPECT_TRUE(any_decision(r, "threads per row (partial results in shared memory)")) << r.source;
  LoweredGraph pw = lower_case(find_case("pointwise"));
  r = as::schedule_pipeline(pw.pipeline(), kCuda, a100());
  EXPECT_TRUE(any_decision(r, "adjacent elements per thread")) << r.source;
}

// A kernel library generator (sizes and strides known only when it runs) under the GPU
// search of `target`'s machine.
kiln::kernels::DirectKernel scheduled_generator(const std::string& generator, const Halide::Target& target) {
  kiln::kernels::DirectKernel k = kiln::kernels::build_direct(kiln::kernels::make_spec(generator));
  as::schedule_pipeline(k.lowered.pipeline(), target, as::machine_model(target));
  return k;
}

// Runs a two-input generator on the GPU; its output has Halide's `sizes`.
Halide::Buffer<float> run_on_gpu(kiln::kernels::DirectKernel& k, const Halide::Target& gpu, const Tensor& a,
                                 const Tensor& b, const std::vector<int>& sizes) {
  k.params[0].set(Halide::Buffer<>(Halide::Runtime::Buffer<>(a.buffer())));
  k.params[1].set(Halide::Buffer<>(Halide::Runtime::Buffer<>(b.buffer())));
  Halide::Buffer<float> out(sizes);
  k.lowered.pipeline().realize(out, gpu);
  out.copy_to_host();
  return out;
}

// The PTX of `generator` under the GPU search, as the host assembly holds it (a string).
std::string gpu_assembly(const std::string& generator) {
  kiln::kernels::DirectKernel k = kiln::kernels::build_direct(kiln::kernels::make_spec(generator));
  as::schedule_pipeline(k.lowered.pipeline(), kCuda, a100());
  as_test::TempDir dir;
  const std::string s = dir.file(generator + ".s");
  k.lowered.pipeline().compile_to({{Halide::OutputFileType::assembly, s}}, k.lowered.pipeline().infer_arguments(),
                                  generator, kCuda);
  std::ifstream in(s);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whole tiles (and pointwise rows) that start on 128-bit boundaries get a branch of their
// own, where Halide knows the alignment (row strides, dim-0 mins and extents multiples of
// the vector) and loads and stores 128-bit vectors. Without it every load of four adjacent
// floats of the kernel library's generators, whose sizes and strides are only known when
// they run, was four 32-bit loads, because a row could start anywhere (kiln_matmul 1024^3
// on an H200: 0.19 ms, 0.13 ms with the branch).
TEST(GpuSearchDecisions, AlignedRowsLoadWholeVectors) {
  kiln::kernels::DirectKernel k = kiln::kernels::build_direct(kiln::kernels::make_spec("kiln_matmul"));
  const as::SearchResult r = as::schedule_pipeline(k.lowered.pipeline(), kCuda, a100());
  EXPECT_NE(r.source.find("input_field(b_im, \"b\", \"stride\", 1) % 4 == 0"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("out.output_buffer().dim(1).stride() % 4 == 0"), std::string::npos) << r.source;
  for (const char* generator : {"kiln_matmul", "kiln_binary"}) {
    const std::string ptx = gpu_assembly(generator);
    EXPECT_NE(ptx.find("ld.global.nc.v4"), std::string::npos) << generator;
    // (Four floats are stored as one 128-bit store, or as one of two 64-bit halves.)
    EXPECT_TRUE(ptx.find("st.global.v4") != std::string::npos || ptx.find("st.global.v2.b64") != std::string::npos)
        << generator;
  }
}

// kiln_binary (a + b) in its aligned branch, its vector branch's fallback (rows that
// start anywhere) and with a row shorter than a block.
TEST(GpuSearchDecisions, EveryPointwiseBranchIsRightOnTheGpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; the branches are compiled to CUDA without one";
  const Halide::Target gpu = Halide::get_jit_target_from_environment().with_feature(Halide::Target::CUDA);
  kiln::kernels::DirectKernel k = scheduled_generator("kiln_binary", gpu);
  for (const auto& [rows, cols] : std::vector<std::array<int, 2>>{{64, 4096}, {37, 4093}, {3, 5}}) {
    const Tensor a = rand({rows, cols}, 1, -1, 1), b = rand({rows, cols}, 2, -1, 1);
    const Halide::Buffer<float> out = run_on_gpu(k, gpu, a, b, {cols, rows});
    const std::vector<double> av = a.to_doubles(), bv = b.to_doubles();
    double worst = 0;
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) worst = std::max(worst, std::abs(av[size_t(i * cols + j)] + bv[size_t(i * cols + j)] - out(j, i)));
    }
    EXPECT_LE(worst, 1e-6) << rows << " x " << cols;
  }
}

// Each of the three branches (aligned whole tiles, whole tiles, an output smaller than
// one tile) against a product in doubles.
TEST(GpuSearchDecisions, EveryContractionBranchIsRightOnTheGpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; the branches are compiled to CUDA without one";
  const Halide::Target gpu = Halide::get_jit_target_from_environment().with_feature(Halide::Target::CUDA);
  kiln::kernels::DirectKernel k = scheduled_generator("kiln_matmul", gpu);
  for (const auto& [m, n, kk] : std::vector<std::array<int, 3>>{{64, 128, 40}, {37, 45, 29}, {3, 2, 5}}) {
    const Tensor a = rand({m, kk}, 1, -1, 1), b = rand({kk, n}, 2, -1, 1);
    const Halide::Buffer<float> out = run_on_gpu(k, gpu, a, b, {n, m});
    const std::vector<double> av = a.to_doubles(), bv = b.to_doubles();
    double worst = 0;
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int p = 0; p < kk; ++p) want += av[size_t(i * kk + p)] * bv[size_t(p * n + j)];
        worst = std::max(worst, std::abs(want - out(j, i)));
      }
    }
    EXPECT_LE(worst, 1e-5) << m << " x " << n << " x " << kk;
  }
}

TEST(GpuSearchDecisions, OtherGpuApisAreErrors) {
  LoweredGraph l = lower_case(find_case("matmul"));
  EXPECT_THROW(as::schedule_gpu_pipeline(l.pipeline(), Halide::Target("host-opencl"), a100()), Error);
}

// A knob replaces the cost model's choice of that decision alone (tuning_test.cpp checks
// the rest of the knob contract).
TEST(GpuSearchDecisions, AKnobIsTheTilingScheduled) {
  LoweredGraph l = lower_case(find_case("matmul"));
  const as::SearchResult chosen = as::schedule_pipeline(lower_case(find_case("matmul")).pipeline(), kCuda, a100());
  ASSERT_EQ(chosen.knobs.gpu_tiles.size(), 1u);
  as::Knobs k = chosen.knobs;
  const as::GpuContractionTiling forced{2, 2, 16, 4, 2};
  ASSERT_FALSE(k.gpu_tiles.begin()->second == forced);
  k.gpu_tiles.begin()->second = forced;
  const as::SearchResult r = as::schedule_pipeline(l.pipeline(), kCuda, a100(), &k);
  EXPECT_TRUE(r.knobs == k) << r.knobs.str();
  EXPECT_TRUE(any_decision(r, "2 rows x 2 columns per thread in registers, blocks of 16 x 4 threads, 2 reduction steps unrolled"))
      << ::testing::PrintToString(r.decisions);
  Halide::Module mod = l.pipeline().compile_to_module(arguments(l), "kiln_gpu_forced", kCuda);
  EXPECT_FALSE(mod.functions().empty());
}

// 1024 x 1024 x 1024 f32 on an A100: the schedules a CUDA matmul tutorial walks
// through, from worst to best.
TEST(GpuCostModel, RanksMatmulSchedulesInTheRightOrder) {
  const as::MachineModel m = a100();
  const as::ContractionShape s{1024, 1024, 1024, 1, 4};
  auto t = [&](int rows, int cols, int tx, int ty, int unroll) {
    return as::predict_gpu(as::gpu_contraction_plan(s, {rows, cols, tx, ty, unroll}, m), m).total_s;
  };
  const double one_per_thread = t(1, 1, 32, 8, 1);
  const double rows = t(4, 1, 32, 8, 1);    // four rows share each b load
  const double tile = t(4, 4, 16, 16, 1);   // and four columns each a load
  const double unrolled = t(4, 4, 16, 16, 4);  // four steps' loads in flight at once
  EXPECT_GT(one_per_thread, rows);
  EXPECT_GT(rows, tile);
  EXPECT_GT(tile, unrolled);
  // No plan beats the arithmetic peak: 2 x 1024^3 flops at 108 SMs x 64 lanes x 2 x 1.41 GHz.
  EXPECT_GE(unrolled, 2.0 * 1024 * 1024 * 1024 / m.gpu_peak_flops());
  // A tile needing more than 255 registers per thread does not fit.
  EXPECT_FALSE(as::predict_gpu(as::gpu_contraction_plan(s, {16, 16, 16, 16, 1}, m), m).fits);
}

// A stream of 64 MiB: wide vectors and full blocks reach DRAM bandwidth; one element per
// thread in blocks of 32 leaves too few bytes in flight.
TEST(GpuCostModel, BandwidthNeedsBytesInFlight) {
  const as::MachineModel m = a100();
  auto stream = [&](int threads, int elems_per_thread) {
    as::GpuStagePlan p;
    const double n = 16.0 * (1 << 20);
    p.threads = threads;
    p.blocks = n / (double(threads) * elems_per_thread);
    p.step_issue = 2.0 * std::max(1.0, elems_per_thread * 4 * 32 / 128.0);
    p.step_latency = m.gpu_dram_latency;
    p.dram_bytes = 2 * 4 * n;
    return as::predict_gpu(p, m);
  };
  const as::GpuPrediction narrow = stream(32, 1), wide = stream(256, 4);
  EXPECT_GT(narrow.total_s, wide.total_s);
  EXPECT_EQ(wide.bound, "dram");
  EXPECT_EQ(narrow.bound, "latency");
  // At bandwidth: 128 MiB moved at 1555 GB/s, plus one launch.
  EXPECT_NEAR(wide.total_s, 2 * 4 * 16.0 * (1 << 20) / 1555e9 + m.launch_us * 1e-6, 1e-6);
}

// Vendor GEMM against kiln's kernel on an H100's model, at shapes measured there: cuBLASLt
// ran the bench's f32 MLP products 2.6x faster than kiln's best tiling (2.98 ms against
// 7.67) and attention's batched products too; a tiny product is two launches for cuBLASLt
// and one for kiln, which computes it in its consumer's threads.
TEST(GpuCostModel, ChoosesTheVendorGemmWhereItWasMeasuredFaster) {
  as::MachineModel m;
  as::set_gpu_defaults(m, 90);
  auto vendor = [&](double rows, double cols, double k, double batch, as::GpuMathUnit unit, int bytes) {
    as::ContractionShape s{rows, cols, k, batch, bytes};
    const as::GpuMatmulChoice c = as::choose_gpu_matmul(s, unit, 0, m);
    EXPECT_FALSE(c.why.empty());
    return c.vendor;
  };
  EXPECT_TRUE(vendor(8192, 4096, 1024, 1, as::GpuMathUnit::Fp32, 4));
  EXPECT_TRUE(vendor(8192, 1024, 4096, 1, as::GpuMathUnit::Fp32, 4));
  EXPECT_TRUE(vendor(1024, 1024, 1024, 1, as::GpuMathUnit::Fp32, 4));
  EXPECT_TRUE(vendor(1024, 1024, 64, 128, as::GpuMathUnit::Fp32, 4));
  EXPECT_TRUE(vendor(1024, 1024, 1024, 1, as::GpuMathUnit::TensorCores, 2));
  EXPECT_FALSE(vendor(4, 3, 8, 1, as::GpuMathUnit::Fp32, 4));
}

TEST(GpuMachineModel, DefaultsByCapabilityAndOverrides) {
  as::MachineModel m;
  as::set_gpu_defaults(m, 90);
  EXPECT_EQ(m.gpu_fp32_lanes, 128);
  EXPECT_GT(m.gpu_peak_flops(), 60e12);  // an H100's ~67 TFLOP/s of f32
  as::apply_overrides(m, "gpu_dram_gbps=4800,launch_us=3");
  EXPECT_EQ(m.gpu_dram_gbps, 4800);
  EXPECT_EQ(m.launch_us, 3);
  EXPECT_NE(m.str().find("gpu_dram_gbps=4800"), std::string::npos);
  EXPECT_THROW(as::apply_overrides(m, "gpu_ghz=fast"), Error);
}

}  // namespace

namespace {

// The largest grid y and z of the CUDA launches in a lowered module: each launch is a
// call halide_cuda_run(state, kernel, blocks x, y, z, threads x, y, z, ...), its sizes
// in lets bound before it.
class GridY : public Halide::Internal::IRVisitor {
 public:
  int64_t largest = 0;
  int launches = 0;

 private:
  using IRVisitor::visit;
  std::map<std::string, Halide::Expr> lets_;
  void visit(const Halide::Internal::LetStmt* op) override {
    lets_[op->name] = op->value;
    IRVisitor::visit(op);
  }
  void visit(const Halide::Internal::Let* op) override {
    lets_[op->name] = op->value;
    IRVisitor::visit(op);
  }
  Halide::Expr resolved(Halide::Expr e) const {
    for (int i = 0; i < 8; ++i) {
      const auto* v = e.as<Halide::Internal::Variable>();
      auto it = v ? lets_.find(v->name) : lets_.end();
      if (it == lets_.end()) break;
      e = it->second;
    }
    return Halide::Internal::simplify(e);
  }
  void visit(const Halide::Internal::Call* op) override {
    if (op->name == "halide_cuda_run" && op->args.size() > 4) {
      ++launches;
      for (size_t k : {size_t(3), size_t(4)}) {
        auto e = Halide::Internal::as_const_int(resolved(op->args[k]));
        EXPECT_TRUE(e.has_value()) << "grid dim " << k - 2 << ": " << op->args[k];
        if (e) largest = std::max<int64_t>(largest, *e);
      }
    }
    IRVisitor::visit(op);
  }
};

// A depthwise convolution's 16 x 128 x 56 rows of blocks went to the grid's y dim, which
// holds 65535: the H100 refused the launch (CUDA_ERROR_INVALID_VALUE).
TEST(GpuSearchDecisions, NoGridDimButXExceedsCudasLimit) {
  Case c{"depthwise",
         [](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1], {}, {1}, {1}, {1}, 128)}; },
         {rand({16, 128, 56, 56}, 1), rand({128, 1, 3, 3}, 2)}};
  for (const char* scheduler : {"Kiln", "rules"}) {
    SCOPED_TRACE(scheduler);
    LoweredGraph l = lower_case(c);
    if (std::string(scheduler) == "Kiln") as::schedule_pipeline(l.pipeline(), kCuda, a100());
    else apply_default_schedule(l, kCuda);
    Halide::Module m = l.pipeline().compile_to_module(arguments(l), "depthwise", kCuda);
    GridY grid;
    for (const Halide::Internal::LoweredFunc& f : m.functions()) f.body.accept(&grid);
    EXPECT_GT(grid.launches, 0);
    EXPECT_LE(grid.largest, 65535);
  }
}

}  // namespace
