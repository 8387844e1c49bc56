// Tuning through the search's knobs: ranked candidates start with the cost model's
// choice and are ordered by prediction; knobs applied again reproduce a candidate; stale
// knobs are errors that leave the pipeline unscheduled; the Kiln plugin applies a tuning
// database entry for its pipeline (and only for its pipeline).
#include <gtest/gtest.h>

#include "autoschedule.h"
#include "core/error.h"
#include "fingerprint.h"
#include "kernel_spec.h"
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

Halide::Pipeline fresh(const std::string& generator) {
  static std::vector<kk::DirectKernel> keep;  // the pipelines' ImageParams outlive the test
  keep.push_back(kk::build_direct(kk::make_spec(generator)));
  return keep.back().lowered.pipeline();
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

TEST(Tuning, KnobsAppliedAgainReproduceTheCandidate) {
  for (const std::string g : {"matmul", "softmax"}) {
    const std::vector<as::Candidate> c = as::ranked_candidates(fresh(g), host(), machine(), 4);
    ASSERT_GE(c.size(), 2u) << g;
    const as::SearchResult r = as::schedule_pipeline(fresh(g), host(), machine(), &c[1].knobs);
    EXPECT_TRUE(r.knobs == c[1].knobs) << g << ": " << r.knobs.str() << " vs " << c[1].knobs.str();
    EXPECT_NEAR(r.predicted_s, c[1].predicted_s, 1e-9 + 1e-9 * c[1].predicted_s) << g;
  }
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
