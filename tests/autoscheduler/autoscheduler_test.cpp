// kiln's autoscheduler: the Kiln plugin schedules kiln pipelines to the same results as
// the default rules, its emitted source compiles and schedules the pipeline again, the
// cost model ranks matmul schedules the way they really rank, and bad input (no
// estimates, a bad KILN_MACHINE) is a warning or a kiln::Error, never a crash.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "cases.h"
#include "cost_model.h"
#include "lower/default_schedule.h"
#include "machine_model.h"
#include "search.h"

// Written by kiln_autoscheduler_emit at build time.
#include "kiln_as_conv2d.schedule.h"
#include "kiln_as_conv2d_wide.schedule.h"
#include "kiln_as_matmul.schedule.h"
#include "kiln_as_max_pool2d.schedule.h"
#include "kiln_as_pointwise.schedule.h"
#include "kiln_as_softmax.schedule.h"

using namespace kiln;
using namespace kiln::as_test;
namespace as = kiln::autoschedule;

namespace {

void load_kiln_plugin() {
  static bool loaded = (Halide::load_plugin(KILN_AUTOSCHEDULE_PLUGIN), true);
  (void)loaded;
}

const Case& find_case(const std::string& name) {
  static const std::vector<Case> all = cases();
  for (const Case& c : all) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no case " + name);
}

Halide::Buffer<float> run_default(const Case& c) {
  LoweredGraph l = lower_case(c);
  apply_default_schedule(l, Halide::get_jit_target_from_environment());
  return run_case(c, l);
}

// The largest difference relative to the values' scale. Summation order is the same in
// both schedules for these pipelines (the reduction loops run in the same order, and row
// reductions use partial sums of the same width), so results agree to rounding at most.
double max_rel_diff(const Halide::Buffer<float>& a, const Halide::Buffer<float>& b) {
  EXPECT_EQ(a.number_of_elements(), b.number_of_elements());
  double worst = 0;
  a.for_each_element([&](const int* pos) {
    const double x = a(pos), y = b(pos);
    worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
  });
  return worst;
}

class KilnPlugin : public ::testing::TestWithParam<std::string> {};

TEST_P(KilnPlugin, SameResultsAsTheDefaultSchedule) {
  load_kiln_plugin();
  const Case& c = find_case(GetParam());
  LoweredGraph l = lower_case(c);
  Halide::AutoSchedulerResults r = l.pipeline().apply_autoscheduler(Halide::get_jit_target_from_environment(), {"Kiln", {}});
  EXPECT_NE(r.schedule_source.find("pipeline.get_func("), std::string::npos) << r.schedule_source;
  EXPECT_NE(r.schedule_source.find("compute_root()"), std::string::npos) << r.schedule_source;
  EXPECT_EQ(r.autoscheduler_params.name, "Kiln");
  EXPECT_LE(max_rel_diff(run_case(c, l), run_default(c)), 1e-6) << r.schedule_source;
}

INSTANTIATE_TEST_SUITE_P(Pipelines, KilnPlugin,
                         ::testing::Values("matmul", "softmax", "conv2d", "pointwise", "conv2d_wide", "max_pool2d"));

bool any_decision(const as::SearchResult& r, const std::string& text) {
  for (const std::string& d : r.decisions)
    if (d.find(text) != std::string::npos) return true;
  return false;
}

// conv2d's accumulator runs (ow, o, oh, n) and its output (ow, oh, o, n): no output can
// host its tiles, so a stored copy of it is tiled. The pooling window's index is bound to
// a let in its update; seen through it, pooling is a contraction whose one operand is
// indexed by both tile dims.
TEST(KilnPlugin, ContractionsWithoutAHostAreTiledInAStoredCopy) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  const as::MachineModel m = as::machine_model(host);
  LoweredGraph conv = lower_case(find_case("conv2d_wide"));
  as::SearchResult r = as::schedule_pipeline(conv.pipeline(), host, m);
  EXPECT_TRUE(any_decision(r, "computed per register tile of a stored copy")) << r.source;
  EXPECT_NE(r.source.find(".in();"), std::string::npos) << r.source;
  EXPECT_TRUE(any_decision(r, "1 per column vector, 1 per row, 0 per point")) << r.source;
  LoweredGraph pool = lower_case(find_case("max_pool2d"));
  r = as::schedule_pipeline(pool.pipeline(), host, m);
  EXPECT_TRUE(any_decision(r, "0 per column vector, 0 per row, 1 per point")) << r.source;
}

TEST(KilnPlugin, ContractionsGetRegisterTilesAndRowsStayInCache) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  const as::MachineModel m = as::machine_model(host);
  LoweredGraph mm = lower_case(find_case("matmul"));
  as::SearchResult r = as::schedule_pipeline(mm.pipeline(), host, m);
  EXPECT_NE(r.source.find(".compute_at(out"), std::string::npos) << r.source;  // per tile of the output
  EXPECT_NE(r.source.find(".unroll("), std::string::npos) << r.source;
  EXPECT_GT(r.predicted_s, 0);
  LoweredGraph sm = lower_case(find_case("softmax"));
  r = as::schedule_pipeline(sm.pipeline(), host, m);
  EXPECT_NE(r.source.find("rfactor("), std::string::npos) << r.source;
  bool per_row = false;
  for (const std::string& d : r.decisions) per_row |= d.find("computed per row of") != std::string::npos;
  EXPECT_TRUE(per_row) << r.source;
}

// A reduction of short rows at root runs its rows in tasks of several (a task per row of
// 300 floats costs more in the thread pool than summing it), as many as keep four tasks
// per core.
TEST(KilnPlugin, ShortRowsAreReducedInTasksOfSeveralRows) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  as::MachineModel m = as::machine_model(host);
  m.cores = 2;  // 29 rows: tasks of 4 rows leave 8 tasks, four per core
  as::SearchResult r = as::schedule_pipeline(lower_case(find_case("row_sum")).pipeline(), host, m);
  EXPECT_TRUE(any_decision(r, "rows in parallel tasks of 4")) << ::testing::PrintToString(r.decisions);
  m.cores = 16;  // fewer rows than four tasks per core: one row per task
  r = as::schedule_pipeline(lower_case(find_case("row_sum")).pipeline(), host, m);
  EXPECT_TRUE(any_decision(r, "rows in parallel tasks of 1")) << ::testing::PrintToString(r.decisions);
}

// The schedule files written at build time by the plugin compile here, and schedule a
// freshly lowered copy of their pipeline to the default schedule's results.
TEST(KilnPlugin, EmittedSourceCompilesAndSchedulesAgain) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  const std::vector<std::pair<std::string, void (*)(Halide::Pipeline, Halide::Target)>> files = {
      {"matmul", apply_schedule_kiln_as_matmul},
      {"softmax", apply_schedule_kiln_as_softmax},
      {"conv2d", apply_schedule_kiln_as_conv2d},
      {"pointwise", apply_schedule_kiln_as_pointwise},
      {"conv2d_wide", apply_schedule_kiln_as_conv2d_wide},  // a stored copy tiled: Func::in()
      {"max_pool2d", apply_schedule_kiln_as_max_pool2d}};
  for (const auto& [name, apply] : files) {
    const Case& c = find_case(name);
    LoweredGraph l = lower_case(c);
    apply(l.pipeline(), host);
    EXPECT_LE(max_rel_diff(run_case(c, l), run_default(c)), 1e-6) << name;
  }
}

TEST(KilnPlugin, NoEstimatesMeansDefaultsAndAWarning) {
  load_kiln_plugin();
  const Case& c = find_case("softmax");
  LoweredGraph l = lower_case(c, /*estimates=*/false);
  ::testing::internal::CaptureStderr();
  l.pipeline().apply_autoscheduler(Halide::get_jit_target_from_environment(), {"Kiln", {}});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("no estimate"), std::string::npos) << err;
  EXPECT_LE(max_rel_diff(run_case(c, l), run_default(c)), 1e-6);
}

TEST(KilnPlugin, BadParametersAreErrors) {
  load_kiln_plugin();
  LoweredGraph l = lower_case(find_case("pointwise"));
  const Halide::Target host = Halide::get_jit_target_from_environment();
  EXPECT_THROW(l.pipeline().apply_autoscheduler(host, {"Kiln", {{"budget", "3"}}}), Error);
  EXPECT_NO_THROW(l.pipeline().apply_autoscheduler(host, {"Kiln", {{"parallelism", "2"}}}));
  EXPECT_THROW(l.pipeline().apply_autoscheduler(host, {"Kiln", {{"machine", "cores=two"}}}), Error);
  EXPECT_THROW(l.pipeline().apply_autoscheduler(Halide::Target("host-opencl"), {"Kiln", {}}), Error);
}

TEST(KilnPlugin, SearchesAGeneratorSizedPipelineInWellUnderASecond) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  LoweredGraph l = lower_case(find_case("conv2d"));
  const auto t0 = std::chrono::steady_clock::now();
  as::schedule_pipeline(l.pipeline(), host, as::machine_model(host));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
}

// 512 x 512 x 512 f32 on a fixed AVX2 machine: the schedules every matmul tutorial
// walks through, from worst to best, must be predicted in that order.
TEST(CostModel, RanksMatmulSchedulesInTheRightOrder) {
  as::MachineModel m;
  as::apply_overrides(m, "cores=2,vector_bits=256,l1=32768,l2=524288,l3=33554432");
  const as::ContractionShape s{512, 512, 512, 1, 4};
  auto t = [&](int rows, int vectors, int lanes, double block, bool parallel) {
    return as::predict(as::contraction_plan(s, {rows, vectors, lanes, block, 1, parallel}), m).total_s;
  };
  const double naive = t(1, 1, 1, 0, false);
  const double parallel = t(1, 1, 1, 0, true);
  const double vectorized = t(1, 1, 8, 0, true);
  const double tiled = t(4, 2, 8, 0, true);
  const double blocked = t(4, 2, 8, 128, true);
  const double spilling = t(8, 4, 8, 128, true);  // 8 x 4 accumulators: twice the registers
  EXPECT_GT(naive, parallel);
  EXPECT_GT(parallel, vectorized);
  EXPECT_GT(vectorized, tiled);
  EXPECT_GT(tiled, blocked);  // b (1 MiB) does not fit L2; a block of 128 columns does
  EXPECT_GT(spilling, blocked);
  // Peak is 2 cores x 2 FMA x 8 lanes x 2 flops x 2.5 GHz = 160 GFLOP/s: no plan beats it.
  EXPECT_GE(blocked, 2.0 * 512 * 512 * 512 / m.peak_flops());
}

// A pooling window (one load per tile point, a max and NaN checks per step) gains
// nothing from reuse across a tile, and each point's load holds registers: tiles of one
// vector beat wider ones, which spill, and a ragged edge computed twice costs its share.
TEST(CostModel, PoolingPrefersNarrowTiles) {
  as::MachineModel m;
  as::apply_overrides(m, "cores=2,vector_bits=512,l1=32768,l2=1048576,l3=33554432");
  as::ContractionShape s{56, 56, 9, 256, 4};
  s.column_operands = 0, s.row_operands = 0, s.point_operands = 1, s.flops_per_step = 5;
  auto t = [&](int rows, int vectors) {
    return as::predict(as::contraction_plan(s, {rows, vectors, 16, 0, 8, true}), m).total_s;
  };
  EXPECT_LT(t(8, 1), t(8, 2));
  EXPECT_LT(t(8, 2), t(8, 3));
  // Matmul-like operands: the wider tile shares its loads and wins.
  as::ContractionShape mm{512, 512, 512, 1, 4};
  EXPECT_LT(as::predict(as::contraction_plan(mm, {6, 2, 16, 0, 1, true}), m).total_s,
            as::predict(as::contraction_plan(mm, {6, 1, 16, 0, 1, true}), m).total_s);
}

TEST(MachineModel, DetectedOverriddenAndPrinted) {
  const as::MachineModel host = as::machine_model(Halide::get_jit_target_from_environment());
  EXPECT_GE(host.cores, 1);
  EXPECT_GE(host.l1, 1024);
  EXPECT_GE(host.vector_bits, 128);
  as::MachineModel m;
  as::apply_overrides(m, "cores=16,l2=1048576,dram_gbps=80");
  EXPECT_EQ(m.cores, 16);
  EXPECT_EQ(m.l2, 1048576);
  EXPECT_NE(m.str().find("cores=16"), std::string::npos);
  EXPECT_THROW(as::apply_overrides(m, "cores"), Error);
  EXPECT_THROW(as::apply_overrides(m, "caches=3"), Error);
  EXPECT_THROW(as::apply_overrides(m, "l2=-1"), Error);
  as::set_gpu_defaults(m, 90);
  EXPECT_EQ(m.sm_count, 132);
  as::set_gpu_defaults(m, 80);
  EXPECT_EQ(m.sm_count, 108);
}

}  // namespace
