// Tuning through the search's knobs: ranked candidates start with the cost model's
// choice and are ordered by prediction; knobs applied again reproduce a candidate; stale
// knobs are errors that leave the pipeline unscheduled; the Kiln plugin applies a tuning
// database entry for its pipeline (and only for its pipeline).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>
#include <sstream>

#include "analysis.h"
#include "autoschedule.h"
#include "core/error.h"
#include "tuner.h"
#include "fingerprint.h"
#include "kernel_spec.h"
#include "../core/log_capture.h"
#include "kiln.h"
#include "lower/kiln_schedule.h"
#include "lower/kernel.h"
#include "lower/scheduler.h"
#include "models/models.h"
#include "schedule_writer.h"
#include "search.h"
#include "temp_dir.h"
#include "tuning_db.h"

namespace as = kiln::autoschedule;
namespace kk = kiln::kernels;

namespace {

const Halide::Target& host() {
  static const Halide::Target t = Halide::get_host_target();
  return t;
}

as::MachineModel machine() { return as::machine_for(host(), {{"parallelism", "2"}}); }

const kk::DirectKernel& fresh_kernel(const std::string& generator) {
  static std::vector<std::unique_ptr<kk::DirectKernel>> keep;  // the ImageParams outlive the test
  keep.push_back(std::make_unique<kk::DirectKernel>(kk::build_direct(kk::make_spec(generator))));
  return *keep.back();
}

Halide::Pipeline fresh(const std::string& generator) { return fresh_kernel(generator).lowered.pipeline(); }

const Halide::Target kCuda("host-cuda-cuda_capability_80");

// An A100-class GPU, fixed so that the choices do not depend on the machine the tests run on.
as::MachineModel a100() {
  as::MachineModel m = machine();
  as::set_gpu_defaults(m, 80);
  return m;
}

std::string error_of(const Halide::Pipeline& p, const Halide::Target& t, const as::MachineModel& m,
                     const as::Knobs& k) {
  try {
    as::schedule_pipeline(p, t, m, &k);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Tuning, RankedCandidatesStartWithTheCostModelsChoice) {
  const as::SearchResult chosen = as::schedule_pipeline(fresh("matmul"), host(), machine());
  const std::vector<as::Candidate> c = as::ranked_candidates(fresh("matmul"), host(), machine(), 6);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_TRUE(c[0].knobs == chosen.knobs) << c[0].knobs.str() << " vs " << chosen.knobs.str();
  EXPECT_DOUBLE_EQ(c[0].predicted_s, chosen.predicted_s);
  for (size_t i = 1; i < c.size(); ++i) {
    EXPECT_LE(c[i - 1].predicted_s, c[i].predicted_s) << i;
    EXPECT_GE(c[i].predicted_s, c[0].predicted_s * 0.999) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(c[i].knobs == c[j].knobs) << i << " " << j;
  }
  EXPECT_EQ(as::ranked_candidates(fresh("matmul"), host(), machine(), 2).size(), 2u);
}

// A pipeline of two decisions (matmul's register tiling and softmax's rows per task, two
// outputs): some candidates change both knobs, predicted as the sum of the two changes.
// A pipeline of two decisions (matmul's register tiling and softmax's rows per task, two
// outputs): some candidates change both knobs, predicted as the sum of the two changes,
// which applying their knobs reproduces.
static Halide::Pipeline two_decisions() {
  static std::vector<Halide::ImageParam> keep;  // the ImageParams outlive the pipeline's use
  Halide::ImageParam a(Halide::Float(32), 2, "a"), b(Halide::Float(32), 2, "b"), x(Halide::Float(32), 2, "x");
  keep.insert(keep.end(), {a, b, x});
  Halide::Var i("i"), j("j");
  Halide::RDom k(0, 256, "k"), r(0, 512, "r");
  Halide::Func mm("mm_acc"), prod("prod"), mx("row_max"), soft("soft");
  mm(i, j) = 0.0f;
  mm(i, j) += a(k, j) * b(i, k);
  prod(i, j) = mm(i, j);
  mx(j) = Halide::Float(32).min();
  mx(j) = Halide::max(mx(j), x(r, j));
  soft(i, j) = Halide::exp(x(i, j) - mx(j));
  a.set_estimates({{0, 256}, {0, 256}});
  b.set_estimates({{0, 256}, {0, 256}});
  x.set_estimates({{0, 512}, {0, 512}});
  prod.set_estimates({{0, 256}, {0, 256}});
  soft.set_estimates({{0, 512}, {0, 512}});
  return Halide::Pipeline({prod, soft});
}

TEST(Tuning, CandidatesVaryTwoKnobsAtOnce) {
  const std::vector<as::Candidate> c = as::ranked_candidates(two_decisions(), host(), machine(), 200);
  ASSERT_GE(c.size(), 3u);
  ASSERT_EQ(c[0].knobs.tiles.size(), 1u);
  ASSERT_EQ(c[0].knobs.bands.size(), 1u);
  const as::Candidate* both = nullptr;
  for (const as::Candidate& cand : c) {
    if (!both && !(cand.knobs.tiles == c[0].knobs.tiles) && !(cand.knobs.bands == c[0].knobs.bands)) both = &cand;
    EXPECT_GE(cand.predicted_s, c[0].predicted_s * 0.999);
  }
  ASSERT_NE(both, nullptr) << c.size() << " candidates, none changing both knobs";
  const as::SearchResult r = as::schedule_pipeline(two_decisions(), host(), machine(), &both->knobs);
  EXPECT_TRUE(r.knobs == both->knobs) << r.knobs.str() << " vs " << both->knobs.str();
  EXPECT_NEAR(r.predicted_s, both->predicted_s, 1e-9 + 1e-9 * both->predicted_s);
}

// softmax has five decisions (the output's band, and where softmax, its exp, its max and
// its sum are placed): some candidates change three of them at once, none more, and the
// search applies all three, or says which placement yielded (a max asked to stay per row
// while its sum moves to root has no row to be computed at).
TEST(Tuning, CandidatesVaryThreeKnobsAtOnce) {
  const std::vector<as::Candidate> c = as::ranked_candidates(fresh("softmax"), host(), machine(), 400);
  ASSERT_GE(c.size(), 3u);
  auto changed = [&](const as::Knobs& k) {
    int n = !(k.bands == c[0].knobs.bands) + !(k.tiles == c[0].knobs.tiles);
    for (const auto& [f, p] : k.fusion) n += c[0].knobs.fusion.at(f) != p;
    return n;
  };
  int threes = 0, applied_all = 0;
  for (const as::Candidate& cand : c) {
    EXPECT_LE(changed(cand.knobs), 3) << cand.knobs.str();
    if (changed(cand.knobs) != 3) continue;
    ++threes;
    // Each of the three is applied (a reduction moved to root brings a band of its own).
    const as::SearchResult r = as::schedule_pipeline(fresh("softmax"), host(), machine(), &cand.knobs);
    as::Knobs applied = r.knobs;
    applied.merge(cand.knobs);
    if (applied == r.knobs) {
      ++applied_all;
    } else {
      EXPECT_TRUE(std::any_of(r.decisions.begin(), r.decisions.end(), [](const std::string& d) {
        return d.find("although a knob asks for per row") != std::string::npos;
      })) << r.knobs.str() << " does not apply " << cand.knobs.str();
    }
  }
  EXPECT_GT(threes, 0) << c.size() << " candidates, none changing three knobs";
  EXPECT_GT(applied_all, 0) << "no candidate's three knobs were all applied";
}

TEST(Tuning, KnobsAppliedAgainReproduceTheCandidate) {
  for (const std::string g : {"matmul", "softmax"}) {
    const std::vector<as::Candidate> c = as::ranked_candidates(fresh(g), host(), machine(), 4);
    ASSERT_GE(c.size(), 2u) << g;
    const as::SearchResult r = as::schedule_pipeline(fresh(g), host(), machine(), &c[1].knobs);
    EXPECT_TRUE(r.knobs == c[1].knobs) << g << ": " << r.knobs.str() << " vs " << c[1].knobs.str();
    EXPECT_NEAR(r.predicted_s, c[1].predicted_s, 1e-9 + 1e-9 * c[1].predicted_s) << g;
  }
}

// Every candidate's knobs are ones the search takes: a candidate that moves a stored
// value of several dims off root drops its band with its loop (kiln_conv2d's padded
// input), and an output that is itself a row reduction keeps the band knob it records.
TEST(Tuning, EveryCandidatesKnobsApply) {
  for (const std::string g : {"conv2d", "reduce", "softmax", "layer_norm"}) {
    const std::vector<as::Candidate> c = as::ranked_candidates(fresh(g), host(), machine(), 60);
    for (const as::Candidate& cand : c) {
      EXPECT_EQ(error_of(fresh(g), host(), machine(), cand.knobs), "(no error)") << g << ": " << cand.knobs.str();
    }
  }
  as::MachineModel sixteen = machine();
  as::apply_overrides(sixteen, "cores=16");
  const std::vector<as::Candidate> c = as::ranked_candidates(fresh("conv2d"), host(), sixteen, 60);
  bool pad_off_root = false;
  for (const as::Candidate& cand : c) {
    for (const auto& [f, p] : cand.knobs.fusion) pad_off_root |= f.find("pad") != std::string::npos && p != as::Fusion::Root;
    EXPECT_EQ(error_of(fresh("conv2d"), host(), sixteen, cand.knobs), "(no error)") << cand.knobs.str();
  }
  EXPECT_TRUE(pad_off_root) << "no candidate moves conv2d's padded input off root";
  // A row reduction that is the output: the band it records applies again.
  auto row_sums = [] {
    Halide::ImageParam in(Halide::Float(32), 2, "in");
    Halide::Var j("j");
    Halide::RDom r(0, 1024);
    Halide::Func out("out");
    out(j) = 0.0f;
    out(j) += in(r, j);
    in.dim(0).set_estimate(0, 1024).dim(1).set_estimate(0, 4096);
    out.set_estimate(j, 0, 4096);
    return Halide::Pipeline(out);
  };
  const as::SearchResult r = as::schedule_pipeline(row_sums(), host(), machine());
  ASSERT_FALSE(r.knobs.bands.empty()) << r.source;
  EXPECT_EQ(error_of(row_sums(), host(), machine(), r.knobs), "(no error)") << r.knobs.str();
}

TEST(Tuning, StaleKnobsAreErrorsBeforeAnythingIsScheduled) {
  as::Knobs stale;
  stale.tiles["no_such_func"] = {4, 2, 8, 0, 1, true};
  Halide::Pipeline p = fresh("matmul");
  try {
    as::schedule_pipeline(p, host(), machine(), &stale);
    ADD_FAILURE() << "stale knobs accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_func is not a contraction"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("re-run kiln tune"), std::string::npos) << e.what();
  }
  // Untouched: the cost model still schedules it, to the same choice as a fresh pipeline.
  EXPECT_TRUE(as::schedule_pipeline(p, host(), machine()).knobs ==
              as::schedule_pipeline(fresh("matmul"), host(), machine()).knobs);

  as::Knobs bad_band;
  bad_band.bands["out"] = 0;
  EXPECT_THROW(as::schedule_pipeline(fresh("softmax"), host(), machine(), &bad_band), kiln::Error);
}

TEST(Tuning, ThePluginUsesTheDatabaseEntryForItsPipeline) {
  Halide::load_plugin(KILN_AUTOSCHEDULE_PLUGIN);
  kiln::as_test::TempDir dir;
  const std::string path = dir.file("db.json");
  const std::vector<as::Candidate> c = as::ranked_candidates(fresh("matmul"), host(), machine(), 2);
  ASSERT_EQ(c.size(), 2u);
  as::TuningEntry e;
  e.fingerprint = as::pipeline_fingerprint(fresh("matmul"));
  e.target = as::tuning_target_key(host());
  e.machine = machine().str();
  e.generator = "kiln_matmul";
  e.knobs = c[1].knobs;  // not what the cost model would choose
  e.measured_ms = 1.5;
  e.date = as::utc_now();
  as::TuningDb db = as::TuningDb::load(path);
  db.put(e);
  db.save();

  const Halide::AutoschedulerParams with_db("Kiln", {{"parallelism", "2"}, {"db", path}});
  const Halide::AutoschedulerParams without("Kiln", {{"parallelism", "2"}, {"db", "none"}});
  const std::string tuned = fresh("matmul").apply_autoscheduler(host(), with_db).schedule_source;
  const std::string model = fresh("matmul").apply_autoscheduler(host(), without).schedule_source;
  EXPECT_NE(tuned.find("tuned entry " + e.fingerprint + " from " + path), std::string::npos) << tuned;
  const as::SearchResult expect = as::schedule_pipeline(fresh("matmul"), host(), machine(), &e.knobs);
  EXPECT_NE(tuned.find(expect.source), std::string::npos);
  EXPECT_EQ(model.find("tuned entry"), std::string::npos);
  EXPECT_NE(tuned.substr(tuned.find('\n')), model.substr(model.find('\n')));
  // Another pipeline, or the same on another machine, is not served by the entry.
  EXPECT_EQ(fresh("softmax").apply_autoscheduler(host(), with_db).schedule_source.find("tuned entry"),
            std::string::npos);
  const Halide::AutoschedulerParams other_machine("Kiln", {{"parallelism", "3"}, {"db", path}});
  EXPECT_EQ(fresh("matmul").apply_autoscheduler(host(), other_machine).schedule_source.find("tuned entry"),
            std::string::npos);
}

// GPU targets: the GPU search's runner-ups (other per-thread tilings, blocks, threads per
// row) rank the same way, every candidate's knobs reproduce it, and each compiles to CUDA.
TEST(Tuning, GpuCandidatesStartWithTheCostModelsChoiceAndCompile) {
  for (const std::string g : {"matmul", "softmax", "layer_norm", "unary", "reduce", "conv2d", "pool2d"}) {
    const as::SearchResult chosen = as::schedule_pipeline(fresh(g), kCuda, a100());
    const std::vector<as::Candidate> c = as::ranked_candidates(fresh(g), kCuda, a100(), 6);
    ASSERT_GE(c.size(), 2u) << g;
    EXPECT_TRUE(c[0].knobs == chosen.knobs) << g << ": " << c[0].knobs.str() << " vs " << chosen.knobs.str();
    EXPECT_FALSE(c[0].knobs.empty()) << g;
    EXPECT_TRUE(c[0].knobs.tiles.empty() && c[0].knobs.bands.empty()) << g << ": " << c[0].knobs.str();
    for (size_t i = 1; i < c.size(); ++i) {
      // The cost model's choice stays first where a runner-up ties it (within 0.1%).
      EXPECT_GE(c[i].predicted_s, c[0].predicted_s * 0.999) << g << " " << i;
      if (i > 1) EXPECT_LE(c[i - 1].predicted_s, c[i].predicted_s) << g << " " << i;
      for (size_t j = 0; j < i; ++j) EXPECT_FALSE(c[i].knobs == c[j].knobs) << g << " " << i << " " << j;
    }
    const kk::DirectKernel& k = fresh_kernel(g);
    const as::SearchResult r = as::schedule_pipeline(k.lowered.pipeline(), kCuda, a100(), &c.back().knobs);
    EXPECT_TRUE(r.knobs == c.back().knobs) << g << ": " << r.knobs.str() << " vs " << c.back().knobs.str();
    EXPECT_NEAR(r.predicted_s, c.back().predicted_s, 1e-12 + 1e-9 * c.back().predicted_s) << g;
    std::vector<Halide::Argument> args(k.params.begin(), k.params.end());
    EXPECT_FALSE(k.lowered.pipeline().compile_to_module(args, "tuned_" + g, kCuda).functions().empty()) << g;
  }
}

TEST(Tuning, GpuKnobsThatDoNotFitAreErrorsBeforeAnythingIsScheduled) {
  auto tiles = [](as::GpuContractionTiling t) {
    as::Knobs k;
    k.gpu_tiles["matmul_acc"] = t;
    return k;
  };
  const std::vector<std::pair<as::Knobs, std::string>> cases = {
      {[] { as::Knobs k; k.gpu_tiles["no_such_func"] = {}; return k; }(),
       "no_such_func is not a contraction the GPU search tiles in this pipeline (re-run kiln tune"},
      {tiles({4, 4, 64, 32, 1}), "asks for blocks of 2048 threads; a CUDA block holds 32 to 1024"},
      {tiles({4, 3, 32, 8, 1}), "asks for 3 adjacent elements per thread"},
      {tiles({0, 4, 32, 8, 1}), "rows, threads and unroll must be at least 1"},
      {[] { as::Knobs k; k.gpu_rows["matmul_acc"] = {128, 1}; return k; }(), "matmul_acc is not a row reduction"},
      {[] { as::Knobs k; k.gpu_blocks["matmul_acc"] = {32, 8, 1}; return k; }(),
       "matmul_acc is not a Func with a kernel of its own, one thread per point"},
      {[] { as::Knobs k; k.bands["out"] = 4; return k; }(), "are the CPU search's"},
  };
  for (const auto& [knobs, message] : cases) {
    Halide::Pipeline p = fresh("matmul");
    const std::string e = error_of(p, kCuda, a100(), knobs);
    EXPECT_NE(e.find(message), std::string::npos) << knobs.str() << ": " << e;
    // Untouched: the cost model still schedules it, to the same choice as a fresh pipeline.
    EXPECT_TRUE(as::schedule_pipeline(p, kCuda, a100()).knobs == as::schedule_pipeline(fresh("matmul"), kCuda, a100()).knobs);
  }
  as::Knobs gpu;
  gpu.gpu_rows["out"] = {128, 1};
  EXPECT_NE(error_of(fresh("softmax"), host(), machine(), gpu).find("are the GPU search's"), std::string::npos);
}

// The tuning loop on a CUDA target, with a stand-in for the GPU's clock: the candidate the
// stand-in times fastest wins, whatever the cost model predicted.
TEST(Tuning, TuneOnACudaTargetKeepsTheFastestMeasured) {
  const std::vector<as::Candidate> c = as::ranked_candidates(fresh("softmax"), kCuda, a100(), 4);
  ASSERT_GE(c.size(), 3u);
  const as::Knobs fastest = c[2].knobs;
  as::TuneOptions o;
  o.candidates = 4;
  const as::TuneResult r = as::tune(fresh("softmax"), "kiln_softmax", kCuda, a100(), o,
                                    [&](const as::Knobs& k, double) {
                                      const as::SearchResult s = as::schedule_pipeline(fresh("softmax"), kCuda, a100(), &k);
                                      return as::Trial{k == fastest ? 1.0 : 2.0, s.source};
                                    });
  EXPECT_EQ(r.measured.size(), c.size());
  EXPECT_TRUE(r.entry.knobs == fastest) << r.entry.knobs.str();
  EXPECT_EQ(r.entry.measured_ms, 1.0);
  EXPECT_EQ(r.entry.target, as::tuning_target_key(kCuda));
  EXPECT_NE(r.entry.schedule.find("gpu_threads("), std::string::npos) << r.entry.schedule;
}

// The same pipeline gives the same schedule source however many Funcs of the same names
// the process made before (Halide numbers them: softmax_max$38), so a tuning entry's
// source, saved by `kiln tune`, and the plugin's, in another process, agree. The partial
// results of rfactor and the stored copies of Func::in() are named after their Func too.
TEST(Tuning, SourceDoesNotDependOnWhatTheProcessMadeBefore) {
  for (const std::string name : {"softmax", "layer_norm", "batch_matmul"}) {
    SCOPED_TRACE(name);
    const std::string first = as::schedule_pipeline(fresh(name), host(), machine()).source;
    for (int i = 0; i < 4; ++i) {
      fresh(name);
      EXPECT_EQ(as::schedule_pipeline(fresh(name), host(), machine()).source, first);
    }
    for (size_t d = first.find('$'); d != std::string::npos; d = first.find('$', d + 1)) {
      EXPECT_FALSE(std::isdigit(static_cast<unsigned char>(first[d + 1]))) << "a process-numbered name: " << first;
    }
  }
}

// The C++ names of rfactor's partial results and of Func::in()'s copies come from their
// Func's stable name, not Halide's: Halide names the partial results of a Func "acc$3"
// "acc_3_intm", and "acc_3_intm$1" once a process has made one.
TEST(Tuning, PartialResultsAndCopiesAreNamedAfterTheirFunc) {
  for (int i = 0; i < 2; ++i) {
    Halide::ImageParam in(Halide::Float(32), 2, "in");
    Halide::Func acc{Halide::Internal::Function(std::string("acc$3"))};
    Halide::Var x("x");
    Halide::RDom r(0, 64);
    acc(x) = 0.0f;
    acc(x) += in(r, x);
    as::ScheduleWriter w({"acc$3"}, {{"acc$3", acc}});
    w.declare_rvar("acc$3", r.x.name());
    w.rfactor("acc$3", r.x.name(), "u");
    w.wrap("acc$3");
    const std::string source = w.source();
    EXPECT_NE(source.find("Func acc_intm = acc.update(0).rfactor("), std::string::npos) << source;
    EXPECT_NE(source.find("Func acc_in = acc.in();"), std::string::npos) << source;
    EXPECT_EQ(source.find("acc_3"), std::string::npos) << source;
  }
}

// A stand-in clock for the tuning loop on the CPU: each candidate's first time and the
// time it gives when timed again (the cost model's choice compiled a second time, the
// tuner's control, gives `control_again` where it is set), and a count of the compiled
// kernels alive.
struct FakeClock {
  std::vector<as::Candidate> candidates;
  std::vector<double> first, again;
  double control_again = 0;
  std::vector<int> again_calls, compiles;
  std::shared_ptr<int> alive = std::make_shared<int>(0);
  int most_alive_in_rounds = 0;

  as::MeasureFn measure() {
    return [this](const as::Knobs& k, double) {
      size_t i = 0;
      while (i < candidates.size() && !(candidates[i].knobs == k)) ++i;
      EXPECT_LT(i, candidates.size()) << "tune timed knobs that are not a ranked candidate: " << k.str();
      const bool control = compiles.at(i)++ > 0 && control_again > 0;
      // The "compiled kernel": alive while the loop keeps its `again`.
      std::shared_ptr<int> kernel(new int(0), [alive = alive](int* p) { --*alive, delete p; });
      ++*alive;
      return as::Trial{first.at(i), "source " + std::to_string(i), [this, i, kernel, control] {
                         ++again_calls.at(i);
                         most_alive_in_rounds = std::max(most_alive_in_rounds, *alive);
                         return control ? control_again : again.at(i);
                       }};
    };
  }
};

FakeClock fake_clock(size_t n) {
  FakeClock f;
  f.candidates = as::ranked_candidates(fresh("softmax"), host(), machine(), int(n));
  f.first.assign(f.candidates.size(), 5.0);
  f.again.assign(f.candidates.size(), 5.0);
  f.again_calls.assign(f.candidates.size(), 0);
  f.compiles.assign(f.candidates.size(), 0);
  return f;
}

// The first pass's fastest are timed again in interleaved rounds, and the rounds decide: a
// candidate that was lucky once loses to one that is fast every time; a candidate outside
// the finalists is never timed again and its compiled kernel is let go. The cost model's
// choice is compiled twice (the control) and both copies run every round.
TEST(Tuning, TheFinalistsRoundsDecideNotOneLuckyRun) {
  FakeClock f = fake_clock(5);
  ASSERT_GE(f.candidates.size(), 5u);
  f.first = {1.0, 0.5, 1.1, 3.0, 4.0};   // candidate 1 was lucky; 3 and 4 are slow at first
  f.again = {1.0, 2.0, 0.8, 0.1, 0.1};   // ... and 2 is the fastest every time after
  as::TuneOptions o;
  o.candidates = 5;
  o.finalists = 3;
  const as::TuneResult r = as::tune(fresh("softmax"), "kiln_softmax", host(), machine(), o, f.measure());
  ASSERT_EQ(r.measured.size(), 5u);
  EXPECT_EQ(r.rounds, o.rounds);
  EXPECT_EQ(r.winner, 2);
  EXPECT_TRUE(r.entry.knobs == f.candidates[2].knobs) << r.entry.knobs.str();
  EXPECT_EQ(r.entry.measured_ms, 0.8);
  EXPECT_EQ(r.entry.schedule, "source 2");
  EXPECT_EQ(f.again_calls, (std::vector<int>{2 * o.rounds, o.rounds, o.rounds, 0, 0}));
  EXPECT_EQ(f.compiles, (std::vector<int>{2, 1, 1, 1, 1}));
  EXPECT_EQ(r.measured[1].confirmed_ms, 2.0);
  EXPECT_LE(f.most_alive_in_rounds, 4) << "only the finalists and the control keep their compiled kernels";
  EXPECT_EQ(*f.alive, 0) << "every compiled kernel is let go when tuning ends";
}

// A runner-up replaces the cost model's choice only when it is faster by the margin; the
// cost model's choice is a finalist even when the first pass put it outside them.
TEST(Tuning, TheCostModelsChoiceStaysUnlessARunnerUpIsFasterByTheMargin) {
  FakeClock f = fake_clock(4);
  ASSERT_GE(f.candidates.size(), 4u);
  f.first = {2.0, 1.0, 1.5, 1.2};
  f.again = {1.0, 0.99, 1.5, 1.2};  // 1% faster: within the 3% margin
  as::TuneOptions o;
  o.candidates = 4;
  o.finalists = 1;
  const as::TuneResult r = as::tune(fresh("softmax"), "kiln_softmax", host(), machine(), o, f.measure());
  EXPECT_EQ(f.again_calls, (std::vector<int>{2 * o.rounds, o.rounds, 0, 0}));
  EXPECT_EQ(r.winner, 0);
  EXPECT_TRUE(r.entry.knobs == f.candidates[0].knobs);
  EXPECT_EQ(r.entry.measured_ms, 1.0);

  f = fake_clock(4);
  f.first = {2.0, 1.0, 1.5, 1.2};
  f.again = {1.0, 0.9, 1.5, 1.2};  // 10% faster: it wins
  const as::TuneResult r2 = as::tune(fresh("softmax"), "kiln_softmax", host(), machine(), o, f.measure());
  EXPECT_EQ(r2.winner, 1);
  EXPECT_EQ(r2.entry.measured_ms, 0.9);
}

// The margin widens by how far apart the two copies of the cost model's choice ran: a
// runner-up 5% faster is not enough where the copies ran 6% apart (3% + 6%); one 15%
// faster is. Without a control the margin is the option's alone.
TEST(Tuning, TheMarginWidensByHowFarApartTwoCopiesOfTheChoiceRan) {
  as::TuneOptions o;
  o.candidates = 2;
  o.finalists = 1;
  FakeClock f = fake_clock(2);
  f.first = {1.0, 0.9};  // both finalists
  f.again = {1.0, 0.95};
  f.control_again = 1.06;
  as::TuneResult r = as::tune(fresh("softmax"), "kiln_softmax", host(), machine(), o, f.measure());
  EXPECT_EQ(r.control_ms, 1.06);
  EXPECT_NEAR(r.noise, 0.06, 1e-9);
  EXPECT_NEAR(r.margin, 0.09, 1e-9);
  EXPECT_EQ(r.winner, 0) << "5% faster, within the two copies' 6% and the 3% margin";

  f = fake_clock(2);
  f.first = {1.0, 0.9};  // both finalists
  f.again = {1.0, 0.85};
  f.control_again = 1.06;
  r = as::tune(fresh("softmax"), "kiln_softmax", host(), machine(), o, f.measure());
  EXPECT_EQ(r.winner, 1) << "15% faster than the choice";

  f = fake_clock(2);
  f.first = {1.0, 0.9};  // both finalists
  f.again = {1.0, 0.95};
  f.control_again = 1.06;
  o.control = false;
  r = as::tune(fresh("softmax"), "kiln_softmax", host(), machine(), o, f.measure());
  EXPECT_EQ(f.compiles, (std::vector<int>{1, 1}));
  EXPECT_EQ(r.control_ms, 0);
  EXPECT_EQ(r.winner, 1) << "without a control, 5% beats the 3% margin";
}

// Choices the GPU model scores alike (a DRAM-bound kernel's block shapes) take two
// candidates at most, so that eight candidates reach the decisions that matter: conv2d's
// register tiling as well as its epilogue's blocks.
TEST(Tuning, GpuCandidatesTheModelCannotTellApartAreFew) {
  const std::vector<as::Candidate> binary = as::ranked_candidates(fresh("binary"), kCuda, a100(), 8);
  ASSERT_GE(binary.size(), 2u);
  size_t tied = 0;
  for (size_t i = 1; i < binary.size(); ++i) {
    if (std::abs(binary[i].predicted_s - binary[1].predicted_s) <= 1e-3 * binary[1].predicted_s) ++tied;
  }
  EXPECT_LE(tied, 2u);
  const std::vector<as::Candidate> conv = as::ranked_candidates(fresh("conv2d"), kCuda, a100(), 8);
  size_t other_tilings = 0;
  for (const as::Candidate& c : conv) other_tilings += !(c.knobs.gpu_tiles == conv[0].knobs.gpu_tiles);
  EXPECT_GE(other_tilings, 3u);
}

// Every candidate kiln tune is given applies to its pipeline: runner-ups combined from two
// decisions can contradict each other (kiln_reduce: a band for the output's rows, with the
// row sums moved to root, where the output has no rows to band), and such a candidate was
// timed as "failed" instead of a candidate that applies.
TEST(Tuning, EveryRankedCandidateApplies) {
  for (const kk::GeneratorInfo& g : kk::generators()) {
    for (const std::string& target : {std::string("cpu"), std::string("cuda")}) {
      const bool gpu = target == "cuda";
      const std::vector<as::Candidate> c =
          as::ranked_candidates(fresh(g.name), gpu ? kCuda : host(), gpu ? a100() : machine(), 12);
      for (size_t i = 0; i < c.size(); ++i) {
        EXPECT_EQ(error_of(fresh(g.name), gpu ? kCuda : host(), gpu ? a100() : machine(), c[i].knobs), "(no error)")
            << g.name << " on " << target << ", candidate " << i << ": " << c[i].knobs.str();
      }
    }
  }
}

// The seed expression written with Halide's own sin and cos, which call libm once per lane
// on x86 (kiln's f32 sin and cos are vector code now, ops/math/trig.h): `in` and `out`.
struct LibmPipeline {
  Halide::ImageParam in{Halide::Float(32), 1, "in"};
  Halide::Pipeline pipeline;
  LibmPipeline() {
    Halide::Var d0("d0");
    Halide::Func out("out");
    out(d0) = Halide::exp(Halide::sin(in(d0))) + Halide::log(Halide::abs(Halide::cos(in(d0))));
    in.dim(0).set_estimate(0, 1 << 23);
    out.set_estimate(d0, 0, 1 << 23);
    pipeline = Halide::Pipeline(out);
  }
};

// A loop making per-lane libm calls gets half the width of an AVX-512 vector as a
// runner-up, predicted the same (the cost model cannot tell them apart; on a 2-core
// AVX-512 Xeon 8 lanes ran 9% faster than 16), for kiln tune to time; the knob is
// applied, round-trips and is checked.
TEST(Tuning, PerLaneLibmLoopsOfferHalfTheVectorWidth) {
  const Halide::Target avx512("x86-64-linux-avx-avx2-f16c-fma-sse41-avx512-avx512_skylake");
  const as::MachineModel m = as::machine_for(avx512, {{"parallelism", "2"}});
  const as::SearchResult r = as::schedule_pipeline(LibmPipeline().pipeline, avx512, m);
  ASSERT_EQ(r.knobs.lanes.size(), 1u) << r.knobs.str();
  EXPECT_EQ(r.knobs.lanes.at("out"), 16);
  EXPECT_NE(r.source.find("split(d0, v, l, 16,"), std::string::npos) << r.source;
  bool half = false;
  for (const as::Alternative& a : r.alternatives) {
    if (a.change.lanes.count("out") && a.change.lanes.at("out") == 8) half = a.extra_s == 0;
  }
  EXPECT_TRUE(half) << "no 8-lane runner-up at the same prediction";
  bool ranked = false;
  for (const as::Candidate& c : as::ranked_candidates(LibmPipeline().pipeline, avx512, m, 8)) {
    ranked |= c.knobs.lanes.count("out") && c.knobs.lanes.at("out") == 8;
  }
  EXPECT_TRUE(ranked);

  as::Knobs eight = r.knobs;
  eight.lanes["out"] = 8;
  const as::SearchResult e = as::schedule_pipeline(LibmPipeline().pipeline, avx512, m, &eight);
  EXPECT_TRUE(e.knobs == eight) << e.knobs.str();
  EXPECT_NE(e.source.find("split(d0, v, l, 8,"), std::string::npos) << e.source;
  EXPECT_EQ(e.source.find("split(d0, v, l, 16,"), std::string::npos) << e.source;

  // Vector code only (softmax's exp is a polynomial), or a 256-bit target: no knob.
  EXPECT_TRUE(as::schedule_pipeline(fresh("softmax"), avx512, m).knobs.lanes.empty());
  const Halide::Target avx2("x86-64-linux-avx-avx2-f16c-fma-sse41");
  EXPECT_TRUE(as::schedule_pipeline(LibmPipeline().pipeline, avx2, as::machine_for(avx2, {{"parallelism", "2"}})).knobs.lanes.empty());

  as::Knobs odd;
  odd.lanes["out"] = 12;
  EXPECT_NE(error_of(LibmPipeline().pipeline, avx512, m, odd).find("can be 16 or 8"), std::string::npos)
      << error_of(LibmPipeline().pipeline, avx512, m, odd);
  as::Knobs stale;
  stale.lanes["no_such_func"] = 8;
  EXPECT_NE(error_of(LibmPipeline().pipeline, avx512, m, stale).find("no_such_func is not an output"), std::string::npos)
      << error_of(LibmPipeline().pipeline, avx512, m, stale);
}

// The 8-lane libm loop computes what the search's own 16-lane choice does (where this
// machine runs AVX-512 code; elsewhere the knob is not offered, and the test says so).
TEST(Tuning, HalfWidthLibmLoopsComputeTheSameResults) {
  const Halide::Target t = Halide::get_jit_target_from_environment();
  if (t.natural_vector_size<float>() < 16) GTEST_SKIP() << "this machine's vectors hold fewer than 16 floats";
  const as::MachineModel m = machine();
  auto run = [&](const as::Knobs* knobs) {
    LibmPipeline p;
    as::schedule_pipeline(p.pipeline, t, m, knobs);
    Halide::Buffer<float> x(100003);  // a tail past the last whole vector and task
    for (int i = 0; i < x.width(); ++i) x(i) = -20.0f + 40.0f * float(i) / float(x.width());
    p.in.set(x);
    Halide::Buffer<float> out(x.width());
    p.pipeline.realize(out, t);
    return out;
  };
  const as::Knobs chosen = as::schedule_pipeline(LibmPipeline().pipeline, t, m).knobs;
  ASSERT_TRUE(chosen.lanes.count("out")) << chosen.str();
  as::Knobs eight = chosen;
  eight.lanes["out"] = 8;
  const Halide::Buffer<float> got = run(&eight), want = run(&chosen);
  for (int i = 0; i < got.width(); ++i) ASSERT_EQ(got(i), want(i)) << "x[" << i << "]";
}

// A model repeats Funcs of one name (gpt_block's two layer norms, its adds): their knobs
// are numbered ("layer_norm_sum#2") in an order that depends only on the pipeline's
// structure, so a knob names the same Func in a process that built other Funcs first.
// Without the numbers, one knob set both layer norms' bands and candidates repeated.
TEST(Tuning, KnobKeysOfRepeatedFuncsHoldWhateverTheProcessMadeBefore) {
  auto keys = [] {
    const kiln::models::Model m = kiln::models::make_model("gpt_block");
    const kiln::Graph g = kiln::trace(m.forward, m.inputs);
    const kiln::SizeEstimates sizes = kiln::estimates_from(g, m.inputs);
    std::map<std::string, std::string> out;  // key -> its Func's stable name and extents
    size_t funcs = 0;
    kiln::lower_and_schedule(g, host(), [&](kiln::LoweredGraph& l, const Halide::Target& t) {
      kiln::prepare_kiln_schedule(l, t, sizes, {nullptr, "none"});
      const as::PipelineInfo info = as::analyze(l.pipeline());
      for (const auto& [name, f] : info.funcs) {
        std::ostringstream d;
        d << as::stable_name(name);
        for (int64_t e : f.extents) d << " " << e;
        out[info.key(name)] = d.str();
      }
      funcs = info.funcs.size();
    });
    EXPECT_EQ(out.size(), funcs) << "two Funcs share a key";
    return out;
  };
  const std::map<std::string, std::string> first = keys();
  EXPECT_TRUE(first.count("layer_norm_sum") && first.count("layer_norm_sum#2"));
  kiln::models::make_model("mlp").forward(kiln::models::make_model("mlp").inputs);  // other Funcs, other "$n"
  EXPECT_EQ(keys(), first);
}

namespace {

// A compiled model with two narrow convolutions (a resnet stage on 8 x 8 images), lowered
// as kiln::compile lowers it.
struct ConvModel {
  kiln::Tensor w1 = kiln::rand({24, 16, 3, 3}, 31, -0.2, 0.2), w2 = kiln::rand({24, 24, 3, 3}, 32, -0.2, 0.2);
  std::vector<kiln::Tensor> inputs = {kiln::randn({2, 16, 8, 8}, 33)};
  kiln::TensorFn fn = [this](const std::vector<kiln::Tensor>& in) {
    return std::vector<kiln::Tensor>{kiln::relu(kiln::conv2d(kiln::relu(kiln::conv2d(in[0], w1, {}, {1}, {1})), w2, {}, {1}, {1}))};
  };
  kiln::Graph graph = kiln::trace(fn, inputs);
  kiln::SizeEstimates sizes = kiln::estimates_from(graph, inputs);
};

// A compiled model with small-batch matmuls: a linear whose gelu epilogue hosts its
// tiles (128 columns), one with ragged edges (64 rows are 10 whole row tiles and 4 rows,
// 72 columns a tile and a part), and a batched matmul.
struct MatmulModel {
  kiln::Tensor w1 = kiln::rand({40, 128}, 41, -0.2, 0.2), b1 = kiln::randn({128}, 42), w2 = kiln::rand({128, 72}, 43, -0.1, 0.1);
  std::vector<kiln::Tensor> inputs = {kiln::randn({64, 40}, 44), kiln::randn({3, 20, 16}, 45), kiln::randn({3, 16, 80}, 46)};
  kiln::TensorFn fn = [this](const std::vector<kiln::Tensor>& in) {
    kiln::Tensor h = kiln::gelu(kiln::matmul(in[0], w1) + b1);
    return std::vector<kiln::Tensor>{kiln::matmul(h, w2), kiln::matmul(in[1], in[2])};
  };
  kiln::Graph graph = kiln::trace(fn, inputs);
  kiln::SizeEstimates sizes = kiln::estimates_from(graph, inputs);
};

// A model compiled as `kiln tune` compiles a candidate, with `options`; the schedule log
// goes to `log`.
std::vector<kiln::Tensor> compile_model_with(const kiln::Graph& graph, const kiln::SizeEstimates& sizes,
                                             const std::vector<kiln::Tensor>& inputs,
                                             const kiln::KilnScheduleOptions& options, std::string* log) {
  std::shared_ptr<kiln::Kernel> kernel;
  *log = kiln::testing::logged("schedule", [&] {
    kernel = std::make_shared<kiln::Kernel>(graph, host(), [&](kiln::LoweredGraph& l, const Halide::Target& t) {
      kiln::apply_kiln_schedule(l, t, sizes, options);
    });
  });
  return kernel->run(inputs);
}

// Saves `knobs` as `kiln tune <model>` saves its winner, under the model's `fingerprint`,
// in a new database at `path`.
void save_model_entry(const std::string& path, const std::string& fingerprint, const std::string& model,
                      const as::Knobs& knobs) {
  as::TuningDb db = as::TuningDb::load(path);
  as::TuningEntry e;
  e.fingerprint = fingerprint;
  e.target = as::tuning_target_key(host());
  e.machine = as::machine_model(host()).str();
  e.generator = model;
  e.knobs = knobs;
  e.measured_ms = 1;
  e.date = "2026-12-05";
  db.put(e);
  db.save();
}

// Each of `bad` is a kiln::Error containing its message when the model compiles with it.
void expect_knobs_rejected(const kiln::Graph& graph, const kiln::SizeEstimates& sizes,
                           const std::vector<std::pair<as::Knobs, std::string>>& bad) {
  for (const auto& [knobs, message] : bad) {
    try {
      const kiln::KilnScheduleOptions options{&knobs, "none"};
      kiln::Kernel(graph, host(), [&](kiln::LoweredGraph& l, const Halide::Target& t) {
        kiln::apply_kiln_schedule(l, t, sizes, options);
      });
      ADD_FAILURE() << "no error for " << knobs.str();
    } catch (const kiln::Error& err) {
      EXPECT_NE(std::string(err.what()).find(message), std::string::npos) << err.what();
    }
  }
}

}  // namespace

// In a compiled model each matmul's tasks (bands of row tiles x groups of column tiles in
// the rules' loops) are a knob, as conv2d's tiles are: their runner-ups are candidates of
// `kiln tune <model>`; every division, ragged bands and groups included, computes eager's
// results; a tuned entry's tasks are what a later compile uses; tasks the pipeline cannot
// take are an error naming them.
TEST(Tuning, AModelsMatmulTasksAreKnobs) {
  MatmulModel model;
  std::string fingerprint;
  std::vector<as::Alternative> alternatives;
  as::FixedFuncs fixed;
  const kiln::LoweredGraph throwaway = kiln::lower_and_schedule(model.graph, host(), [&](kiln::LoweredGraph& l, const Halide::Target& t) {
    fixed = kiln::prepare_kiln_schedule_for_tuning(l, t, model.sizes, &fingerprint, &alternatives);
  });
  std::set<std::string> keys;
  for (const as::Alternative& a : alternatives) {
    // (A runner-up may be predicted up to 2% faster: the fewest tasks within 2% are chosen.)
    ASSERT_EQ(a.change.matmul_tasks.size(), 1u) << a.change.str();
    keys.insert(a.change.matmul_tasks.begin()->first);
  }
  ASSERT_EQ(keys.size(), 3u) << "every matmul has runner-up tasks";
  const std::vector<as::Candidate> candidates =
      as::ranked_candidates(throwaway.pipeline(), host(), as::machine_model(host()), 64, &fixed, &alternatives);
  EXPECT_NE(std::find_if(candidates.begin(), candidates.end(),
                         [](const as::Candidate& c) { return !c.knobs.matmul_tasks.empty(); }),
            candidates.end())
      << "no candidate varies a matmul's tasks";

  const std::vector<kiln::Tensor> eager = model.fn(model.inputs);
  std::string log;
  for (const as::MatmulTasks tasks : {as::MatmulTasks{1, 0}, as::MatmulTasks{3, 1}, as::MatmulTasks{8, 3}, as::MatmulTasks{2, 2}}) {
    SCOPED_TRACE(std::to_string(tasks.band) + " row tiles x " + std::to_string(tasks.column_tiles) + " column tiles");
    as::Knobs knobs;
    for (const std::string& key : keys) knobs.matmul_tasks[key] = tasks;
    const std::vector<kiln::Tensor> out = compile_model_with(model.graph, model.sizes, model.inputs, {&knobs, "none"}, &log);
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_TRUE(kiln::allclose(out[i], eager[i], 1e-4, 1e-5)) << i << ": " << kiln::max_abs_diff(out[i], eager[i]);
    }
    const std::string logged = "tasks of " + std::to_string(tasks.band) + " row tiles x " +
                               (tasks.column_tiles ? std::to_string(tasks.column_tiles) : std::string("all")) +
                               " column tiles (knob)";
    EXPECT_NE(log.find(logged), std::string::npos) << log;
  }

  // Saved under the key taken before the tasks were applied: a later compile uses them.
  as::Knobs knobs;
  knobs.matmul_tasks[*keys.begin()] = {2, 1};
  kiln::as_test::TempDir dir;
  save_model_entry(dir.file("db.json"), fingerprint, "matmul_model", knobs);
  const std::vector<kiln::Tensor> tuned = compile_model_with(model.graph, model.sizes, model.inputs, {nullptr, dir.file("db.json")}, &log);
  EXPECT_TRUE(kiln::allclose(tuned[0], eager[0], 1e-4, 1e-5));
  EXPECT_NE(log.find("tasks of 2 row tiles x 1 column tiles (knob)"), std::string::npos) << log;
  EXPECT_NE(log.find("using the tuned entry for matmul_model (" + fingerprint), std::string::npos) << log;

  as::Knobs stale;
  stale.matmul_tasks["matmul_acc#9"] = {1, 0};
  as::Knobs empty_band;
  empty_band.matmul_tasks[*keys.begin()] = {0, 2};
  expect_knobs_rejected(model.graph, model.sizes,
                        {{stale, "names the matmul 'matmul_acc#9', which this pipeline lacks"},
                         {empty_band, *keys.begin() + "'s tasks (0 row tiles x 2 column tiles) are not valid"}});
}

// In a compiled model each conv2d's register tile is a knob (chosen before the search, in
// the rules' loops): its runner-ups are candidates of `kiln tune <model>`, a candidate's
// tile is what its compile uses and computes the same results, a tuned entry's tile is
// what a later compile uses (the entry's key is taken before any tile is applied), and a
// tile the pipeline cannot take is an error naming it.
TEST(Tuning, AModelsConvolutionTilesAreKnobs) {
  ConvModel model;
  std::string fingerprint;
  std::vector<as::Alternative> conv_alternatives;
  as::FixedFuncs fixed;
  const kiln::LoweredGraph throwaway = kiln::lower_and_schedule(model.graph, host(), [&](kiln::LoweredGraph& l, const Halide::Target& t) {
    fixed = kiln::prepare_kiln_schedule_for_tuning(l, t, model.sizes, &fingerprint, &conv_alternatives);
  });
  EXPECT_EQ(fingerprint.size(), 16u);
  ASSERT_EQ(conv_alternatives.size(), 2 * as::kConvRunnerUps);
  for (const as::Alternative& a : conv_alternatives) {
    EXPECT_EQ(a.change.conv_tiles.size(), 1u) << a.change.str();
    EXPECT_GE(a.extra_s, 0);
  }
  const std::vector<as::Candidate> candidates =
      as::ranked_candidates(throwaway.pipeline(), host(), as::machine_model(host()), 64, &fixed, &conv_alternatives);
  const auto with_tile = std::find_if(candidates.begin(), candidates.end(),
                                      [](const as::Candidate& c) { return !c.knobs.conv_tiles.empty(); });
  ASSERT_NE(with_tile, candidates.end()) << "no candidate varies a conv tile";
  const as::Knobs knobs = with_tile->knobs;
  const auto [key, tile] = *knobs.conv_tiles.begin();

  // The candidate compiled as `kiln tune` compiles it: its tile, logged, and eager's results.
  auto compile_with = [&](const kiln::KilnScheduleOptions& options, std::string* log) {
    return compile_model_with(model.graph, model.sizes, model.inputs, options, log)[0];
  };
  const int lanes = host().natural_vector_size<float>();
  const std::string logged_tile = "register tiles of " + std::to_string(tile.vectors * lanes) + " columns x " +
                                  std::to_string(tile.channels) + " channels (knob)";
  std::string log;
  const kiln::Tensor eager = model.fn(model.inputs)[0];
  EXPECT_TRUE(kiln::allclose(compile_with({&knobs, "none"}, &log), eager, 1e-4, 1e-5));
  EXPECT_NE(log.find(logged_tile), std::string::npos) << log;

  // Saved as `kiln tune` saves it, under the key taken before the tiles: a compile that
  // reads the database uses the tile and the rest of the entry.
  kiln::as_test::TempDir dir;
  save_model_entry(dir.file("db.json"), fingerprint, "conv_model", knobs);
  EXPECT_TRUE(kiln::allclose(compile_with({nullptr, dir.file("db.json")}, &log), eager, 1e-4, 1e-5));
  EXPECT_NE(log.find(logged_tile), std::string::npos) << log;
  EXPECT_NE(log.find("using the tuned entry for conv_model (" + fingerprint), std::string::npos) << log;

  // Tiles the pipeline cannot take: a conv2d it lacks, more registers than the file holds.
  as::Knobs stale;
  stale.conv_tiles["conv2d_acc#9"] = {1, 8};
  as::Knobs too_big;
  too_big.conv_tiles[key] = {4, 16};
  expect_knobs_rejected(model.graph, model.sizes,
                        {{stale, "names the conv2d 'conv2d_acc#9', which this pipeline lacks"},
                         {too_big, key + "'s tile (4 vectors x 16 channels) does not fit"}});
}

