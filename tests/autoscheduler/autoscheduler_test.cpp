// kiln's autoscheduler: the Kiln plugin schedules kiln pipelines to the same results as
// the default rules, its emitted source compiles and schedules the pipeline again, the
// cost model ranks matmul schedules the way they really rank, and bad input (no
// estimates, a bad KILN_MACHINE) is a warning or a kiln::Error, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <regex>

#include "cases.h"
#include "cost_model.h"
#include "lower/default_schedule.h"
#include "machine_model.h"
#include "search.h"

// Written by kiln_autoscheduler_emit at build time.
#include "kiln_as_conv2d.schedule.h"
#include "kiln_as_conv2d_wide.schedule.h"
#include "kiln_as_matmul.schedule.h"
#include "kiln_as_matmul_sum.schedule.h"
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
                         ::testing::Values("matmul", "softmax", "conv2d", "pointwise", "conv2d_wide", "max_pool2d",
                                           "matmul_transposed"));

bool any_decision(const as::SearchResult& r, const std::string& text) {
  for (const std::string& d : r.decisions)
    if (d.find(text) != std::string::npos) return true;
  return false;
}

// conv2d's accumulator runs (ow, o, oh, n) and its output (ow, oh, o, n): the output
// reads it at a permutation of its point that keeps the columns innermost, so the
// output's loops host its tiles (a stored copy and a pass copying it out took kiln_conv2d
// 1.1 ms on 16 cores, where the hand schedule's tiles of the output took 0.71). A
// contraction that no output can host, here one a sum reads, is tiled in a stored copy.
// The pooling window's index is bound to a let in its update; seen through it, pooling is
// a contraction whose one operand is indexed by both tile dims.
TEST(KilnPlugin, ContractionsWithoutAHostAreTiledInAStoredCopy) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  const as::MachineModel m = as::machine_model(host);
  for (const std::string c : {"conv2d_wide"}) {  // ("conv2d"'s 13 columns are less than a vector)
    LoweredGraph conv = lower_case(find_case(c));
    const as::SearchResult r = as::schedule_pipeline(conv.pipeline(), host, m);
    EXPECT_FALSE(any_decision(r, "computed per register tile of a stored copy")) << r.source;
    EXPECT_TRUE(any_decision(r, "computed per register tile of output")) << ::testing::PrintToString(r.decisions);
    EXPECT_EQ(r.source.find(".in();"), std::string::npos) << r.source;
    EXPECT_TRUE(any_decision(r, "1 per column vector, 1 per row, 0 per point")) << r.source;
    EXPECT_LE(max_rel_diff(run_case(find_case(c), conv), run_default(find_case(c))), 1e-5) << r.source;
  }
  LoweredGraph loss = lower_case(find_case("matmul_sum"));
  as::SearchResult r = as::schedule_pipeline(loss.pipeline(), host, m);
  EXPECT_TRUE(any_decision(r, "computed per register tile of a stored copy")) << r.source;
  EXPECT_NE(r.source.find(".in();"), std::string::npos) << r.source;
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

// A register tile the search picks fits the register file: past it LLVM spills and
// shuffles accumulators (8 x 4 tiles of 16 lanes, 37 of AVX-512's 32 registers, ran
// kiln_matmul 1.4x slower than 8 x 2 on a Zen 4). On AVX2 (16 registers of 8 lanes) and
// AVX-512 (32 of 16) alike.
TEST(KilnPlugin, RegisterTilesFitTheRegisterFile) {
  for (const std::string target : {"x86-64-linux-avx-avx2-fma", "x86-64-linux-avx-avx2-fma-avx512-avx512_skylake"}) {
    const Halide::Target t(target);
    as::MachineModel m = as::machine_model(t);
    as::apply_overrides(m, "cores=8");
    for (const std::string c : {"matmul", "conv2d_wide"}) {
      LoweredGraph l = lower_case(find_case(c));
      const as::SearchResult r = as::schedule_pipeline(l.pipeline(), t, m);
      ASSERT_FALSE(r.knobs.tiles.empty()) << target << " " << c << ": " << r.source;
      for (const auto& [f, tile] : r.knobs.tiles) {
        EXPECT_EQ(tile.lanes, m.vector_bits / 32) << target << " " << c;
        // One column operand, one row operand: the accumulators, the column vectors, a broadcast.
        const int registers = as::contraction_plan(as::ContractionShape{512, 512, 512, 1, 4}, tile).vector_registers;
        EXPECT_EQ(registers, tile.rows * tile.vectors + tile.vectors + 1) << target << " " << c << " " << f;
        EXPECT_LE(registers, m.registers) << target << " " << c << " " << f << ": " << tile.rows << " x " << tile.vectors;
        EXPECT_GE(tile.rows * tile.vectors, 8) << target << " " << c << " " << f << ": too few accumulators to hide the FMA latency";
      }
    }
  }
}

// The row reduction a 1-D output reads: by default it is computed per task of the output
// (one parallel loop); a fusion knob puts it at root.
std::string row_reduction_of(const as::SearchResult& r) {
  for (const auto& [f, p] : r.knobs.fusion) {
    if (p == as::Fusion::PerRow) return f;
  }
  ADD_FAILURE() << "no row reduction computed per row: " << r.knobs.str();
  return "";
}

// A reduction of short rows runs its rows in tasks of several (a task per row of 300
// floats costs more in the thread pool than summing it): per task of the 1-D output that
// reads it, or at root. 29 rows of 1.2 KB: on 2 cores, tasks of 16 rows (one a core); on
// 16 cores too, where a task per row would keep the pool's lock busy 16 times as long as
// the sums take.
TEST(KilnPlugin, ShortRowsAreReducedInTasksOfSeveralRows) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  as::MachineModel m = as::machine_model(host);
  auto fresh = [] { return lower_case(find_case("row_sum")).pipeline(); };
  for (int cores : {2, 16}) {
    SCOPED_TRACE(cores);
    m.cores = cores;
    const std::string band = "16";
    as::SearchResult r = as::schedule_pipeline(fresh(), host, m);
    EXPECT_TRUE(any_decision(r, "parallel tasks of " + band + " elements, each computing its rows of 1 row reduction"))
        << ::testing::PrintToString(r.decisions);
    as::Knobs root;
    root.fusion[row_reduction_of(r)] = as::Fusion::Root;
    r = as::schedule_pipeline(fresh(), host, m, &root);
    EXPECT_TRUE(any_decision(r, "rows in parallel tasks of " + band + ";")) << ::testing::PrintToString(r.decisions);
  }
}

// A row reduction is priced by the cost model (at root it was 0 ms, so a pipeline of one
// looked free), the band of its tasks is a knob with the other bands as runner-ups, and
// each row is reduced in several vectors of partial results (one accumulator waits on the
// add's latency every step).
TEST(KilnPlugin, RootRowReductionsArePredictedAndTheirBandIsAKnob) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  as::MachineModel m = as::machine_model(host);
  m.cores = 2;
  // Scheduling changes a pipeline's Funcs (rfactor): each search gets a fresh one.
  auto fresh = [] { return lower_case(find_case("row_sum")).pipeline(); };
  const std::string reduction = row_reduction_of(as::schedule_pipeline(fresh(), host, m));
  for (const bool at_root : {false, true}) {
    SCOPED_TRACE(at_root ? "at root" : "per task of the output");
    as::Knobs k;
    if (at_root) k.fusion[reduction] = as::Fusion::Root;
    as::SearchResult r = as::schedule_pipeline(fresh(), host, m, &k);
    EXPECT_GT(r.predicted_s, 0);
    // Rows of 300 floats: four vectors of partial sums for AVX2 and AVX-512 alike, each
    // with two steps at least; their lanes then combine in a tree, not one at a time.
    EXPECT_TRUE(any_decision(as::schedule_pipeline(fresh(), Halide::Target("x86-64-linux-avx2"), m, &k),
                             "row reduction in 4 vectors of 8 partial results, their lanes combined in a tree"));
    EXPECT_TRUE(any_decision(
        as::schedule_pipeline(fresh(), Halide::Target("x86-64-linux-avx2-avx512-avx512_skylake"), m, &k),
        "row reduction in 4 vectors of 16 partial results, their lanes combined in a tree"));
    // One band: the reduction's at root, the output's when it computes the rows.
    ASSERT_EQ(r.knobs.bands.size(), 1u) << r.knobs.str();
    const std::string banded = r.knobs.bands.begin()->first;
    EXPECT_EQ(banded == reduction, at_root) << r.knobs.str();
    EXPECT_EQ(r.knobs.bands.begin()->second, 16) << r.knobs.str();  // 29 rows of 1.2 KB: a task per core
    bool runner_up = false;
    for (const as::Alternative& a : r.alternatives) runner_up |= a.change.bands.count(banded) > 0;
    EXPECT_TRUE(runner_up);
    k.bands[banded] = 8;
    r = as::schedule_pipeline(fresh(), host, m, &k);
    EXPECT_TRUE(any_decision(r, at_root ? "rows in parallel tasks of 8" : "parallel tasks of 8 elements"))
        << ::testing::PrintToString(r.decisions);
    k.bands[banded] = 0;
    EXPECT_THROW(as::schedule_pipeline(fresh(), host, m, &k), Error);
  }
}

// Every output is priced, a 1-D one too (a pointwise chain over a vector was 0 ms).
TEST(KilnPlugin, OneDimensionalOutputsArePredicted) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  Halide::ImageParam in(Halide::Float(32), 1, "in");
  Halide::Var x("x");
  Halide::Func out("out");
  out(x) = Halide::sin(in(x)) * 2.0f;
  in.dim(0).set_estimate(0, 1 << 20);
  out.set_estimate(x, 0, 1 << 20);
  const as::SearchResult r = as::schedule_pipeline(Halide::Pipeline(out), host, as::machine_model(host));
  EXPECT_GT(r.predicted_s, 0) << ::testing::PrintToString(r.decisions);
  EXPECT_TRUE(any_decision(r, "parallel tasks of 16384")) << ::testing::PrintToString(r.decisions);
}

// A value that several consumers read at their own point is computed once per point when
// it is inlined (Halide's common-subexpression elimination merges the calls), so an
// expensive one stays inlined: the seed's forward and backward read sin(x) and cos(x) in
// five places each, and counting every call had stored both at root (three times slower
// on two cores). A value read at other points is stored, and a stored 1-D one is computed
// in parallel tasks, not in one serial loop.
TEST(KilnPlugin, ValuesReadAtTheirOwnPointAreComputedOncePerPoint) {
  const Halide::Target avx512("x86-64-linux-avx512_skylake");
  as::MachineModel m;
  as::apply_overrides(m, "cores=16,vector_bits=512,dram_gbps=112");
  const int n = 1 << 23;
  Halide::ImageParam in(Halide::Float(32), 1, "in");
  in.dim(0).set_estimate(0, n);
  Halide::Var x("x");
  Halide::Func s("s"), a("a"), b("b"), c("c"), out("out");
  s(x) = Halide::sin(in(x));
  a(x) = s(x) * 2.0f;
  b(x) = s(x) + 1.0f;
  c(x) = a(x) * s(x);
  out(x) = c(x) + b(x) * s(x);
  out.set_estimate(x, 0, n);
  const as::SearchResult r = as::schedule_pipeline(Halide::Pipeline(out), avx512, m);
  EXPECT_TRUE(any_decision(r, "s: inlined (1 evaluations per point")) << ::testing::PrintToString(r.decisions);

  Halide::Func s3("s3"), stencil("stencil");
  s3(x) = Halide::sin(in(x));
  stencil(x) = s3(x - 1) + s3(x) + s3(x + 1);
  stencil.set_estimate(x, 1, n - 2);
  Halide::Pipeline p(stencil);
  const as::SearchResult rs = as::schedule_pipeline(p, avx512, m);
  // (Halide may number a Func's name: "s3$0".)
  auto decided_for_s3 = [&](const std::string& text) {
    return std::any_of(rs.decisions.begin(), rs.decisions.end(), [&](const std::string& d) {
      return d.rfind("s3", 0) == 0 && d.find(text) != std::string::npos;
    });
  };
  EXPECT_TRUE(decided_for_s3(": computed at root (3 evaluations per point")) << ::testing::PrintToString(rs.decisions);
  EXPECT_TRUE(decided_for_s3(": vectorized by 16, parallel tasks of 16384")) << ::testing::PrintToString(rs.decisions);
  // ... and gives the stencil's values (here, on this machine's CPU).
  const Halide::Target host = Halide::get_jit_target_from_environment();
  Halide::Func s4("s4"), st4("st4");
  s4(x) = Halide::sin(in(x));
  st4(x) = s4(x - 1) + s4(x) + s4(x + 1);
  st4.set_estimate(x, 1, n - 2);
  Halide::Pipeline p4(st4);
  as::schedule_pipeline(p4, host, m);
  Halide::Buffer<float> input(n), got(n - 2);
  input.for_each_element([&](int i) { input(i) = float(i % 1000) * 1e-3f; });
  got.set_min(1);
  in.set(input);
  p4.realize(got, host);
  double worst = 0;
  for (int i = 1; i < n - 1; i += 997) {
    const double want = std::sin(double(input(i - 1))) + std::sin(double(input(i))) + std::sin(double(input(i + 1)));
    worst = std::max(worst, std::abs(want - got(i)));
  }
  EXPECT_LE(worst, 1e-5);
}

// The search's prediction for a pipeline is the sum of its stages': a 1-D value stored at
// root counts too, in tasks or (too short for two) in one, as an output of several dims
// or a stored value of several dims does. (Its time was left out, so candidates that
// stored one looked cheaper to `kiln tune` than those that inlined it.)
TEST(KilnPlugin, ThePredictionSumsEveryStage) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  as::MachineModel m;
  as::apply_overrides(m, "cores=16,vector_bits=512");
  const std::regex stage_time(R"(; predicted ([0-9.e+-]+) ms)");
  for (const int n : {1 << 18, 20}) {
    SCOPED_TRACE(n);
    Halide::ImageParam in(Halide::Float(32), 1, "in");
    Halide::Var x("x");
    Halide::Func s("s"), out("out");
    s(x) = Halide::sin(in(x));
    out(x) = s(x) + s(x + 1);
    in.dim(0).set_estimate(0, n + 1);
    out.set_estimate(x, 0, n);
    Halide::Pipeline p(out);
    as::Knobs root;
    root.fusion["s"] = as::Fusion::Root;
    const as::SearchResult r = as::schedule_pipeline(p, host, m, &root);
    double sum_ms = 0;
    int stages = 0;
    for (const std::string& d : r.decisions) {
      std::smatch match;
      if (std::regex_search(d, match, stage_time)) sum_ms += std::stod(match[1].str()), ++stages;
    }
    EXPECT_EQ(stages, 2) << ::testing::PrintToString(r.decisions);
    // (Decisions print 3 significant digits.)
    EXPECT_NEAR(r.predicted_s * 1e3, sum_ms, 0.01 * sum_ms) << ::testing::PrintToString(r.decisions);
  }
}

// A stored value of several dims runs in tasks of its outer dims' rows, as an output
// does: its outermost dim alone in parallel ran kiln_conv2d's zero-padded input (a batch
// of 4) on 4 of 16 cores. Its band is a knob, and every band gives the stencil's values.
TEST(KilnPlugin, AStoredValueOfSeveralDimsRunsInTasksOfRows) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  as::MachineModel m;
  as::apply_overrides(m, "cores=16,vector_bits=512");
  const int w = 64, h = 30, c = 8, batch = 2;
  Halide::ImageParam in(Halide::Float(32), 4, "in");
  Halide::Var x("x"), y("y"), ch("ch"), n("n");
  Halide::Func s("s"), stencil("stencil");
  s(x, y, ch, n) = Halide::sin(in(x, y, ch, n));
  stencil(x, y, ch, n) = s(x, y, ch, n) + s(x, y + 1, ch, n) + s(x, y + 2, ch, n);
  in.dim(0).set_estimate(0, w).dim(1).set_estimate(0, h + 2).dim(2).set_estimate(0, c).dim(3).set_estimate(0, batch);
  stencil.set_estimate(x, 0, w).set_estimate(y, 0, h).set_estimate(ch, 0, c).set_estimate(n, 0, batch);
  Halide::Pipeline p(stencil);
  as::Knobs root;  // (at these sizes the search inlines it)
  root.fusion["s"] = as::Fusion::Root;
  const as::SearchResult r = as::schedule_pipeline(p, host, m, &root);
  // (Decisions name Funcs by their unique names: "s$1" once another test made an "s".)
  ASSERT_TRUE(any_decision(r, s.name() + ": vectorized by")) << ::testing::PrintToString(r.decisions);
  EXPECT_TRUE(any_decision(r, "parallel tasks of")) << ::testing::PrintToString(r.decisions);
  EXPECT_EQ(r.source.find("s.parallel(n)"), std::string::npos) << r.source;
  ASSERT_EQ(r.knobs.bands.count("s"), 1u) << r.source;
  // Rows: 32 x 8 x 2 = 512; enough tasks for the cores, unless the lock bounds the stage.
  EXPECT_GE(std::ceil(512.0 / r.knobs.bands.at("s")), 2.0) << r.source;

  Halide::Buffer<float> input(w, h + 2, c, batch), got(w, h, c, batch);
  input.for_each_element([&](int i, int j, int k, int l) { input(i, j, k, l) = float((i + 3 * j + 7 * k + 11 * l) % 100) * 1e-2f; });
  in.set(input);
  for (int band : {1, 7, r.knobs.bands.at("s"), 4096}) {
    SCOPED_TRACE("band " + std::to_string(band));
    as::Knobs k = r.knobs;
    k.bands["s"] = band;
    Halide::Func s2("s"), st2("stencil");
    s2(x, y, ch, n) = Halide::sin(in(x, y, ch, n));
    st2(x, y, ch, n) = s2(x, y, ch, n) + s2(x, y + 1, ch, n) + s2(x, y + 2, ch, n);
    st2.set_estimate(x, 0, w).set_estimate(y, 0, h).set_estimate(ch, 0, c).set_estimate(n, 0, batch);
    Halide::Pipeline p2(st2);
    as::schedule_pipeline(p2, host, m, &k);
    p2.realize(got, host);
    double worst = 0;
    got.for_each_element([&](int i, int j, int kk, int l) {
      double want = 0;
      for (int d = 0; d < 3; ++d) want += std::sin(double(input(i, j + d, kk, l)));
      worst = std::max(worst, std::abs(want - got(i, j, kk, l)));
    });
    EXPECT_LE(worst, 1e-5);
  }
}

// softmax's exp is read twice on each row, by the row's sum and by the output: computed
// once per row into a row kept in L1 (an exp costs as much as ~20 multiply-adds), not
// twice inline; its placement is a knob with both others as runner-ups, and each gives
// the default schedule's results. log_softmax reads it once (in the sum): inlined.
TEST(KilnPlugin, AValueARowReadsTwiceIsComputedOncePerRow) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  const as::MachineModel m = as::machine_model(host);
  const Case& c = find_case("softmax");
  LoweredGraph l = lower_case(c);
  const as::SearchResult r = as::schedule_pipeline(l.pipeline(), host, m);
  std::string exp_func;
  for (const auto& [func, fusion] : r.knobs.fusion) {
    if (func.find("softmax_exp") != std::string::npos) exp_func = func;
  }
  ASSERT_FALSE(exp_func.empty()) << r.knobs.str();
  EXPECT_EQ(r.knobs.fusion.at(exp_func), as::Fusion::PerRow) << ::testing::PrintToString(r.decisions);
  EXPECT_TRUE(any_decision(r, ": computed per row of output_0")) << ::testing::PrintToString(r.decisions);
  EXPECT_NE(r.source.find("softmax_exp.compute_at(output_0, "), std::string::npos) << r.source;
  EXPECT_LE(max_rel_diff(run_case(c, l), run_default(c)), 1e-6);
  for (as::Fusion other : {as::Fusion::Inline, as::Fusion::Root}) {
    SCOPED_TRACE(as::fusion_name(other));
    bool runner_up = false;
    for (const as::Alternative& a : r.alternatives) {
      auto it = a.change.fusion.find(exp_func);
      runner_up |= it != a.change.fusion.end() && it->second == other && a.extra_s > 0;
    }
    EXPECT_TRUE(runner_up);
    as::Knobs k = r.knobs;
    k.fusion[exp_func] = other;
    LoweredGraph lo = lower_case(c);
    const as::SearchResult ro = as::schedule_pipeline(lo.pipeline(), host, m, &k);
    EXPECT_EQ(ro.source.find("softmax_exp.compute_at"), std::string::npos) << ro.source;
    EXPECT_LE(max_rel_diff(run_case(c, lo), run_default(c)), 1e-6);
  }
  const Case log_form{"log_softmax",
                      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{log_softmax(in[0], -1)}; },
                      c.inputs};
  const as::SearchResult rl = as::schedule_pipeline(lower_case(log_form).pipeline(), host, m);
  EXPECT_TRUE(std::any_of(rl.decisions.begin(), rl.decisions.end(), [](const std::string& d) {
    return d.rfind("log_softmax_exp", 0) == 0 && d.find(": inlined (1 evaluations per point") != std::string::npos;
  })) << ::testing::PrintToString(rl.decisions);
}

// Fusion is a knob: each Func whose placement the search chose is recorded with the
// other placement as a runner-up; a knob moves it (a pointwise Func to root, a row
// reduction off its consumer's rows) to the same results; a placement a Func cannot
// take, or a Func the search does not place, is an error before anything is scheduled.
TEST(KilnPlugin, FusionIsAKnob) {
  const Halide::Target host = Halide::get_jit_target_from_environment();
  const as::MachineModel m = as::machine_model(host);
  for (const std::string name : {"pointwise", "softmax"}) {
    SCOPED_TRACE(name);
    const Case& c = find_case(name);
    LoweredGraph first = lower_case(c);
    const as::SearchResult chosen = as::schedule_pipeline(first.pipeline(), host, m);
    ASSERT_FALSE(chosen.knobs.fusion.empty()) << chosen.knobs.str();
    for (const auto& [func, fusion] : chosen.knobs.fusion) {
      bool runner_up = false;
      for (const as::Alternative& a : chosen.alternatives) {
        auto it = a.change.fusion.find(func);
        runner_up |= it != a.change.fusion.end() && it->second != fusion;
      }
      EXPECT_TRUE(runner_up) << func;
    }
    // Each placement flipped, one at a time.
    for (const auto& [func, fusion] : chosen.knobs.fusion) {
      SCOPED_TRACE(func);
      const bool reduction = func.find("max") != std::string::npos || func.find("sum") != std::string::npos;
      as::Knobs flipped = chosen.knobs;
      flipped.fusion[func] = fusion != as::Fusion::Root ? as::Fusion::Root :
                             reduction                  ? as::Fusion::PerRow :
                                                          as::Fusion::Inline;
      LoweredGraph l = lower_case(c);
      const as::SearchResult r = as::schedule_pipeline(l.pipeline(), host, m, &flipped);
      EXPECT_EQ(r.knobs.fusion.at(func), flipped.fusion.at(func)) << r.knobs.str();
      EXPECT_NE(r.source, chosen.source);
      EXPECT_LE(max_rel_diff(run_case(c, l), run_default(c)), 1e-5) << r.source;
    }
  }
  auto error_of = [&](const std::string& name, const std::string& func, as::Fusion f) {
    as::Knobs k;
    k.fusion[func] = f;
    LoweredGraph l = lower_case(find_case(name));
    try {
      as::schedule_pipeline(l.pipeline(), host, m, &k);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const as::SearchResult sm = as::schedule_pipeline(lower_case(find_case("softmax")).pipeline(), host, m);
  std::string row_reduction;
  for (const auto& [func, fusion] : sm.knobs.fusion) {
    if (fusion == as::Fusion::PerRow) row_reduction = func;
  }
  ASSERT_FALSE(row_reduction.empty()) << sm.knobs.str();
  EXPECT_NE(error_of("softmax", row_reduction, as::Fusion::Inline).find("it can be 'row' or 'root'"), std::string::npos);
  const as::SearchResult pw = as::schedule_pipeline(lower_case(find_case("pointwise")).pipeline(), host, m);
  const std::string pointwise = pw.knobs.fusion.begin()->first;
  // A pointwise Func asked for per row with no output's rows to host it keeps the cost
  // model's placement, and says so (other knobs can take its readers off the rows).
  {
    as::Knobs k;
    k.fusion[pointwise] = as::Fusion::PerRow;
    LoweredGraph l = lower_case(find_case("pointwise"));
    const as::SearchResult r = as::schedule_pipeline(l.pipeline(), host, m, &k);
    EXPECT_EQ(r.knobs.fusion.at(pointwise), pw.knobs.fusion.at(pointwise));
    EXPECT_TRUE(any_decision(r, "although a knob asks for per row: its readers are not all at one output's rows"))
        << ::testing::PrintToString(r.decisions);
  }
  EXPECT_NE(error_of("pointwise", "no_such_func", as::Fusion::Root).find("whose placement this pipeline's search chooses"),
            std::string::npos);
  // CPU knobs for a GPU target.
  as::Knobs k;
  k.fusion[pointwise] = as::Fusion::Root;
  LoweredGraph l = lower_case(find_case("pointwise"));
  EXPECT_THROW(as::schedule_pipeline(l.pipeline(), host.with_feature(Halide::Target::CUDA), m, &k), Error);
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
      {"conv2d_wide", apply_schedule_kiln_as_conv2d_wide},  // tiles at an output in another dim order
      {"max_pool2d", apply_schedule_kiln_as_max_pool2d},
      {"matmul_sum", apply_schedule_kiln_as_matmul_sum}};  // a stored copy tiled: Func::in()
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
// An accumulator's FMA waits fma_latency cycles for the last: a tile of fewer accumulators
// than latency x units leaves the FMA units idle, however few its loads. On Zen 4 a 512-bit
// FMA takes both 256-bit units, so half as many accumulators keep it busy.
TEST(CostModel, TilesOfTooFewAccumulatorsWaitOnTheFmaLatency) {
  const as::ContractionShape s{512, 512, 512, 1, 4};
  auto arith = [&](const as::MachineModel& m, int rows, int vectors) {
    return as::predict(as::contraction_plan(s, {rows, vectors, 16, 0, 1, true}), m).compute_s;
  };
  as::MachineModel skylake = as::machine_model(Halide::Target("x86-64-linux-avx-avx2-fma-avx512-avx512_skylake"));
  as::apply_overrides(skylake, "cores=2");
  EXPECT_EQ(skylake.fma_units, 2);
  EXPECT_EQ(skylake.fma_latency, 4);
  // 2 x 2 accumulators (half the 8 that hide the latency) take twice as long as 4 x 4 or
  // 8 x 2 (tiles whose loads per step do not bind either).
  EXPECT_NEAR(arith(skylake, 2, 2) / arith(skylake, 4, 4), 2.0, 0.05);
  EXPECT_NEAR(arith(skylake, 4, 4), arith(skylake, 8, 2), 0.05 * arith(skylake, 4, 4));
  as::MachineModel zen4 = as::machine_model(Halide::Target("x86-64-linux-avx-avx2-fma-avx512-avx512_skylake-avx512_zen4"));
  as::apply_overrides(zen4, "cores=2");
  EXPECT_EQ(zen4.fma_units, 1);
  EXPECT_NEAR(arith(zen4, 2, 2), arith(zen4, 4, 4), 0.05 * arith(zen4, 4, 4));
  EXPECT_NEAR(arith(zen4, 4, 4) / arith(skylake, 4, 4), 2.0, 0.05);
}

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

// A conv2d's register tile within the rules' loops (vectors of output columns x output
// channels), on a 2-core AVX-512 machine. A row of 4 to 16 columns fills one vector at
// most: the rules' two vectors would compute mostly padding, so one vector of columns
// and more channels (which share each input load) win; a row of two vectors or more
// keeps two. The choice never needs more registers than the file holds.
TEST(CostModel, NarrowConvolutionRowsTakeOneVectorOfColumns) {
  as::MachineModel m;
  as::apply_overrides(m, "cores=2,vector_bits=512,registers=32,l1=49152,l2=2097152,l3=33554432");
  // resnet18's stages at 32 x 32 images (columns, channels, rows = oh x batch, steps = c x 9).
  for (const auto& [columns, channels, steps] : {std::tuple<double, double, double>{16, 32, 288}, {8, 64, 576}, {4, 128, 1152}}) {
    SCOPED_TRACE(std::to_string(int(columns)) + " columns");
    std::string why;
    const as::ConvTile t = as::choose_conv_tile(columns, channels, 2 * columns, steps, 16, 4, m, &why);
    EXPECT_EQ(t.vectors, 1) << why;
    EXPECT_GE(t.channels, 8) << why;
    EXPECT_NE(why.find("the rules' 32 x 4"), std::string::npos) << why;  // says what it replaced
  }
  for (double columns : {32.0, 56.0, 64.0}) {
    const as::ConvTile t = as::choose_conv_tile(columns, 64, 2 * columns, 576, 16, 4, m);
    EXPECT_GE(t.vectors, 2) << columns << " columns";
  }
  as::MachineModel avx2 = m;
  as::apply_overrides(avx2, "vector_bits=256,registers=16");
  for (double columns : {4.0, 16.0, 64.0}) {
    const as::ConvTile t = as::choose_conv_tile(columns, 64, 32, 576, 8, 4, avx2);
    EXPECT_LE(t.vectors * t.channels + t.vectors + 1, 16) << columns << " columns";
  }
}

// Every conv2d register tile runs the same tasks (a row each), so the thread pool's lock,
// which eases as tasks do more work, must not choose the tile: on 16 cores, ranked by
// their whole predicted time, resnet18's tiles became one or two channels wide (slower
// work, a calmer lock). The tile is the one that does the least work, whatever the cores.
TEST(CostModel, TheCoresDoNotChooseAConvolutionsRegisterTile) {
  for (const auto& [columns, channels, steps] :
       {std::tuple<double, double, double>{32, 16, 144}, {16, 32, 288}, {8, 64, 576}, {4, 128, 1152}}) {
    std::vector<as::ConvTile> tiles;
    for (int cores : {2, 16, 64}) {
      as::MachineModel m;
      as::apply_overrides(m, "cores=" + std::to_string(cores) + ",vector_bits=512,registers=32,l1=49152,l2=2097152");
      std::string why;
      tiles.push_back(as::choose_conv_tile(columns, channels, columns, steps, 16, 4, m, &why));
      EXPECT_GE(tiles.back().channels, 8) << cores << " cores, " << columns << " columns: " << why;
    }
    EXPECT_TRUE(tiles[0] == tiles[1] && tiles[0] == tiles[2]) << columns << " columns";
  }
}

// Unequal tasks: a queue hands them out in order, so the busiest core sets the time.
// (Fewer tasks than cores, so that the queue's tail does not count.)
TEST(CostModel, UnequalTasksCostTheBusiestCoresShare) {
  as::MachineModel m;
  as::apply_overrides(m, "cores=4,vector_bits=512");
  as::StagePlan even, uneven;
  even.flops = uneven.flops = 1e9, even.lanes = uneven.lanes = 16;
  even.tasks = uneven.tasks = 2;
  uneven.task_sizes = {8, 3};  // 64 rows in bands of 8 row tiles of 6: 8 and 3 tiles
  const as::Prediction e = as::predict(even, m), u = as::predict(uneven, m);
  EXPECT_NEAR(u.total_s - u.overhead_s, (e.compute_s + e.memory_s) * 8 * 2 / 11, 1e-12);
  // Equal sizes given explicitly cost what equal tasks do.
  as::StagePlan listed = even;
  listed.task_sizes = std::vector<double>(12, 5.0);
  listed.tasks = 12;
  even.tasks = 12;
  EXPECT_NEAR(as::predict(listed, m).total_s, as::predict(even, m).total_s, 1e-15);
}

// The rules' matmul tasks (bands of 8 row tiles, all columns) leave a small batch with
// few unequal tasks; a large GEMM reads b once per band from L3, which no prefetcher hides,
// and runs faster in tall bands of a column tile each (a streams in under the arithmetic);
// on many cores it splits into more tasks than the 22 bands the rules give 16 cores.
TEST(CostModel, MatmulTasksAreSizedToTheCores) {
  as::MachineModel two;
  as::apply_overrides(two, "cores=2,vector_bits=512,registers=32,l1=49152,l2=2097152,l3=33554432");
  auto shape = [](double m, double n, double k, double batch) {
    as::ContractionShape s;
    s.m = m, s.n = n, s.k = k, s.batch = batch;
    return s;
  };
  auto tasks = [](const as::ContractionShape& s, const as::MatmulTasks& t) {
    return as::matmul_tasks_plan(s, 6, 4, 16, t).tasks;
  };
  auto seconds = [](const as::ContractionShape& s, const as::MatmulTasks& t, const as::MachineModel& m) {
    return as::predict(as::matmul_tasks_plan(s, 6, 4, 16, t), m).total_s;
  };
  // The apps/ MLP: 64 rows are 11 row tiles, 2 tasks of 8 and 3 under the rules.
  const as::ContractionShape mlp = shape(64, 512, 512, 1);
  std::string why;
  const as::MatmulTasks small = as::choose_matmul_tasks(mlp, 6, 4, 16, two, &why);
  EXPECT_FALSE(small == as::MatmulTasks{}) << why;
  EXPECT_GE(tasks(mlp, small), 4) << why;
  EXPECT_NE(why.find("the rules' 8 row tiles x all column tiles"), std::string::npos) << why;
  EXPECT_LT(seconds(mlp, small, two), seconds(mlp, {}, two) / 1.2);
  // kiln bench's MLP: 171 row tiles. On the 2-core Xeon (xeon2) the rules' 8 x all ran at
  // 271 GFLOP/s, all 171 row tiles per column tile at 293 (2026-12-06_session14.md).
  const as::ContractionShape gemm = shape(1024, 4096, 1024, 1);
  const as::MatmulTasks tall = as::choose_matmul_tasks(gemm, 6, 4, 16, two, &why);
  EXPECT_GE(tall.band, 64) << why;
  EXPECT_GE(tasks(gemm, tall), 2 * 2) << why;
  EXPECT_LT(seconds(gemm, tall, two), seconds(gemm, {}, two) / 1.03) << why;
  // Bands of one row tile read all of b once per 6 rows, from L3: slower than the rules.
  EXPECT_GT(seconds(gemm, {1, 0}, two), seconds(gemm, {}, two));
  as::MachineModel sixteen = two;
  as::apply_overrides(sixteen, "cores=16");
  const as::MatmulTasks wide = as::choose_matmul_tasks(gemm, 6, 4, 16, sixteen, &why);
  EXPECT_GE(tasks(gemm, wide), 4 * 16) << why;
  // Many batches of small problems already make many tasks: one per batch, all its rows.
  const as::ContractionShape heads = shape(64, 64, 32, 64);
  const as::MatmulTasks per_head = as::choose_matmul_tasks(heads, 6, 4, 16, two, &why);
  EXPECT_EQ(tasks(heads, per_head), 64) << why;
}

// A stream the prefetcher runs ahead of (a matmul's broadcasts of a) costs only the time
// by which it exceeds the arithmetic; other streams add to it.
TEST(CostModel, PrefetchedStreamsHideUnderTheArithmetic) {
  as::MachineModel m;
  as::apply_overrides(m, "cores=2,vector_bits=512,ghz=2,fma_units=2,l1=49152,l2=2097152,l3=33554432,l3_gbps=20");
  as::StagePlan p;
  p.flops = 64.0 * 2e9 * 1e-3;  // 1 ms of FMAs on one core (a serial stage)
  p.lanes = 16;
  auto with = [&](double bytes, bool overlaps) {
    as::StagePlan q = p;
    q.streams.push_back({bytes, 1e7, overlaps});  // from L3 at 20 GB/s: 1 ms per 20 MB
    return as::predict(q, m);
  };
  EXPECT_NEAR(with(10e6, true).total_s, 1e-3, 1e-6);         // half hidden: 1 ms
  EXPECT_NEAR(with(30e6, true).total_s, 1.5e-3, 1e-6);       // 1.5 ms exceeds it by 0.5
  EXPECT_NEAR(with(10e6, false).total_s, 1.5e-3, 1e-6);      // added: 1 + 0.5 ms
}

// Halide's thread pool hands tasks out under one lock. On 16 cores a stage of 256 empty
// tasks took 190 us, 29 us on 2 (kiln_threadpool_calib, docs/benchmarks.md, "The thread
// pool"): a stage of short tasks costs its tasks in series, more the more cores
// contend, while tasks of real work claim at different times and hardly contend.
// (task_us, a core's own cost of a task, is the 2-core Zen 4's 0.5 us with real work;
// the 2-core Xeon VM's empty tasks cost 0.1-0.2 us.)
TEST(CostModel, ShortTasksWaitOnTheThreadPoolsLock) {
  auto stage = [](int cores, double tasks, double bytes) {
    as::MachineModel m;
    as::apply_overrides(m, "cores=" + std::to_string(cores) + ",vector_bits=512");
    as::StagePlan p;
    p.lanes = 16, p.tasks = tasks, p.flops = bytes / 4;
    p.streams.push_back({bytes, bytes});
    return as::predict(p, m);
  };
  const as::Prediction empty16 = stage(16, 256, 256 * 64);
  EXPECT_TRUE(empty16.lock_bound);
  EXPECT_NEAR(empty16.total_s, 256 * 0.88e-6, 30e-6);  // measured 190 us
  // On 2 cores each core's own cost of its tasks (task_us) outweighs the lock.
  EXPECT_FALSE(stage(2, 256, 256 * 64).lock_bound);
  // kiln_unary's 256 tasks of 8 rows of 4096 floats in and out: their traffic's time.
  const as::Prediction unary = stage(16, 256, 2.0 * 2048 * 4096 * 4);
  EXPECT_FALSE(unary.lock_bound);
  EXPECT_LT(unary.overhead_s, 0.1 * unary.total_s);
  // Fewer tasks of the same little work are cheaper: 16 tasks, not 256.
  EXPECT_LT(stage(16, 16, 256 * 64).total_s, 0.2 * empty16.total_s);
}

// Cores whose tasks have work reach the pool's lock at different times: the lock costs
// each task less than when every core waits at it. The Xeon's kiln_unary (2048 rows of
// 4096 floats in and out, 16 cores): 1024 tasks of 2 rows took 0.65 ms, 512 of 4 0.29 ms
// and 256 of 8 0.19 ms, its traffic's time; the lock at full contention for every task
// predicted 0.90, 0.46 and 0.24 ms, and had the search run it in 128 tasks (0.21 ms).
TEST(CostModel, TheLockCostsLessWhenTasksSpreadTheCoresOut) {
  as::MachineModel m;
  as::apply_overrides(m, "cores=16,vector_bits=512,l2=2097152,l3=110100480,dram_gbps=112");
  // The queue's ends: empty tasks wait with every core at the lock; one core never waits;
  // long tasks hardly do.
  EXPECT_NEAR(as::pool_s_per_task(16, 0, m), as::pool_lock_s(16, m), 1e-15);
  EXPECT_NEAR(as::pool_s_per_task(16, 1e-12, m), as::pool_lock_s(16, m), 1e-9);
  EXPECT_NEAR(as::pool_s_per_task(1, 3e-6, m), 3e-6 + as::pool_lock_s(1, m), 1e-15);
  EXPECT_NEAR(as::pool_s_per_task(16, 1e-3, m), (1e-3 + as::pool_lock_s(1, m)) / 16, 1e-9);
  // 128 cores of empty tasks: the queue's chances run past a double unless summed in logs.
  EXPECT_NEAR(as::pool_s_per_task(128, 1e-9, m), as::pool_lock_s(128, m), 1e-9);
  auto unary = [&](double tasks) {
    as::StagePlan p;
    p.flops = 2048.0 * 4096, p.lanes = 16, p.tasks = tasks;
    p.streams.push_back({2.0 * 2048 * 4096 * 4, 2.0 * 2048 * 4096 * 4});
    return as::predict(p, m).total_s;
  };
  for (auto [tasks, measured] : {std::pair{1024.0, 0.647e-3}, {512.0, 0.289e-3}, {256.0, 0.191e-3}}) {
    EXPECT_NEAR(unary(tasks), measured, 0.3 * measured) << tasks << " tasks";
  }
  EXPECT_LT(unary(256), unary(128));
  EXPECT_LT(unary(256), unary(512));
  // The search runs it in tasks of 8 rows.
  Halide::ImageParam in(Halide::Float(32), 2, "in");
  Halide::Var x("x"), y("y");
  Halide::Func out("out");
  out(x, y) = Halide::max(in(x, y), 0.0f);
  in.dim(0).set_estimate(0, 4096), in.dim(1).set_estimate(0, 2048);
  out.set_estimate(x, 0, 4096).set_estimate(y, 0, 2048);
  const as::SearchResult r = as::schedule_pipeline(Halide::Pipeline(out), Halide::Target("x86-64-linux-avx512_skylake"), m);
  ASSERT_EQ(r.knobs.bands.size(), 1u) << r.source;
  EXPECT_EQ(r.knobs.bands.begin()->second, 8) << r.source;
}

// While every core takes at most one task, they all start at the lock together: there
// more work never predicts less time (the lock's cost does not shrink under it).
TEST(CostModel, MoreWorkInOneWaveNeverTakesLess) {
  for (int cores : {2, 16, 64}) {
    as::MachineModel m;
    as::apply_overrides(m, "cores=" + std::to_string(cores) + ",vector_bits=512");
    for (double tasks : {1.0, 2.0, double(cores)}) {
      double last = 0;
      for (double flops = 1e3; flops < 1e10; flops *= 1.5) {
        as::StagePlan p;
        p.lanes = 16, p.tasks = tasks, p.flops = flops;
        const double t = as::predict(p, m).total_s;
        EXPECT_GE(t, last) << cores << " cores, " << tasks << " tasks, " << flops << " flops";
        last = t;
      }
    }
  }
}

// A memory-bound stage of 2048 rows on 16 cores: four tasks per core leave each core
// idle for half a task at the end (the tail of the work queue), so tasks of 8 rows beat
// tasks of 32 though they cost four times the overhead; tasks of one row cost more again.
TEST(CostModel, AWorkQueuesTailFavoursSmallerTasks) {
  as::MachineModel m;
  as::apply_overrides(m, "cores=16,vector_bits=512,dram_gbps=112,task_us=2");
  auto t = [&](double tasks) {
    as::StagePlan p;
    p.flops = 2048.0 * 4096, p.lanes = 16, p.tasks = tasks;
    p.streams.push_back({3.0 * 2048 * 4096 * 4, 3.0 * 2048 * 4096 * 4});
    return as::predict(p, m);
  };
  EXPECT_LT(t(256).total_s, t(64).total_s);
  EXPECT_LT(t(256).total_s, t(2048).total_s);
  // Exactly 1 + cores / (2 x tasks) of the work at 64 tasks, with the tasks' overhead.
  const as::Prediction p = t(64);
  EXPECT_NEAR(p.total_s, (p.compute_s + p.memory_s) * (1 + 16.0 / 128) + 64 * 2e-6 / 16, 1e-12);
}

// Halide calls libm once per lane for sin, cos and tanh on x86 (sincosf, tanhf in the
// assembly of a vectorized loop) but emits vector code for exp and log: a sine costs its
// cycles on every lane, so on 16 lanes a pipeline of sines is priced far above one of
// exponentials, and near what it measures (8M sin + cos + exp + log: 6 ms on a 16-core
// Xeon; this prediction was 0.38 ms when a sine was ten vector flops).
TEST(CostModel, CallsHalideRunsPerLaneArePricedPerLane) {
  const Halide::Target avx512("x86-64-linux-avx512_skylake");
  as::MachineModel m;
  as::apply_overrides(m, "cores=16,vector_bits=512,dram_gbps=112");
  auto predicted = [&](Halide::Expr (*op)(Halide::Expr)) {
    Halide::ImageParam in(Halide::Float(32), 1, "in");
    Halide::Var x("x");
    Halide::Func out("out");
    out(x) = op(in(x));
    in.dim(0).set_estimate(0, 1 << 23);
    out.set_estimate(x, 0, 1 << 23);
    return as::schedule_pipeline(Halide::Pipeline(out), avx512, m).predicted_s;
  };
  const double sine = predicted(Halide::sin), exponential = predicted(Halide::exp);
  EXPECT_GT(sine, 4 * exponential) << sine << " vs " << exponential;
  EXPECT_GT(predicted(Halide::tanh), 4 * exponential);
  // 8M sines at 12 cycles on 16 cores of 2.5 GHz: 2.5 ms of calls, plus the traffic.
  EXPECT_GT(sine, 2.4e-3);
  EXPECT_LT(sine, 4e-3);
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

// Found by the fuzzer (tests/fuzz_parsers, machine_overrides): an integer field given a
// number past its type was converted anyway (undefined behaviour: vector_bits=5e13), a
// fraction was truncated to 0 cores, inf was taken as a size, and text after a NUL was
// ignored. Each is a kiln::Error saying what the value must be.
TEST(MachineModel, OverridesAreRangeCheckedBeforeConversion) {
  as::MachineModel m;
  const auto message = [&](const std::string& spec) {
    try {
      as::apply_overrides(m, spec);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message("vector_bits=5e13").find("'vector_bits' must be a whole number from 1 to 2147483647, not '5e13'"),
            std::string::npos) << message("vector_bits=5e13");
  EXPECT_NE(message("cores=0.5").find("'cores' must be a whole number"), std::string::npos);
  EXPECT_NE(message("l2=1e300").find("'l2' must be a whole number from 1 to 9007199254740992"), std::string::npos);
  EXPECT_NE(message("ghz=inf").find("'ghz' must be a positive number, not 'inf'"), std::string::npos);
  EXPECT_NE(message("dram_gbps=nan").find("must be a positive number"), std::string::npos);
  EXPECT_NE(message(std::string("cores=16\0junk", 13)).find("must be a positive number"), std::string::npos);
  EXPECT_EQ(m.cores, 1);  // nothing applied
  as::apply_overrides(m, "cores=2147483647,l3=9007199254740992,ghz=0.5");
  EXPECT_EQ(m.cores, 2147483647);
  EXPECT_EQ(m.l3, int64_t(1) << 53);
  EXPECT_EQ(m.ghz, 0.5);
}

}  // namespace
