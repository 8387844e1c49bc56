// The tuning database: entries survive a save and a load; a corrupt or foreign file is
// reported with a warning naming it and then ignored (and never overwritten); a failed
// save leaves the old file as it was; the path comes from --db, $KILN_TUNING_DB or the
// current folder, in that order.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "temp_dir.h"
#include "json.h"
#include "tuning_db.h"

namespace as = kiln::autoschedule;
using kiln::as_test::read_text;
using kiln::as_test::TempDir;
using kiln::as_test::write_text;

namespace {

as::TuningEntry sample_entry(const std::string& fingerprint = "00112233aabbccdd") {
  as::TuningEntry e;
  e.fingerprint = fingerprint;
  e.target = "x86-64-linux-avx2";
  e.machine = "cores=2 vector_bits=256";
  e.generator = "kiln_matmul";
  e.knobs.tiles["matmul_acc"] = {6, 2, 8, 256, 4, true};
  e.knobs.bands["out"] = 8;
  e.knobs.fusion["sin"] = as::Fusion::Root;
  e.knobs.fusion["softmax_max"] = as::Fusion::PerRow;
  e.knobs.lanes["out"] = 8;
  e.schedule = "    Func out = pipeline.get_func(3);\n    out.compute_root();\n";
  e.measured_ms = 1.25;
  e.predicted_ms = 2.5;
  e.date = "2026-12-03T07:50:00Z";
  return e;
}

// A database of one sample entry whose fusion knob for sin is `name`.
std::string fusion_named(const std::string& name) {
  TempDir dir;
  as::TuningDb db = as::TuningDb::load(dir.file("db.json"));
  db.put(sample_entry());
  db.save();
  std::string text = read_text(dir.file("db.json"));
  const size_t at = text.find("\"root\"");
  EXPECT_NE(at, std::string::npos) << text;
  return text.replace(at, 6, "\"" + name + "\"");
}

// Loads `path`, returning what it printed to stderr.
std::string load_capturing(const std::string& path, as::TuningDb* db) {
  ::testing::internal::CaptureStderr();
  *db = as::TuningDb::load(path);
  return ::testing::internal::GetCapturedStderr();
}

}  // namespace

TEST(TuningDb, EntriesRoundTrip) {
  TempDir dir;
  as::TuningDb db = as::TuningDb::load(dir.file("db.json"));
  EXPECT_TRUE(db.entries().empty());
  EXPECT_TRUE(db.warning().empty());  // a missing file is simply empty
  db.put(sample_entry());
  db.put(sample_entry("ffffffffffffffff"));
  db.save();

  const as::TuningDb back = as::TuningDb::load(dir.file("db.json"));
  ASSERT_EQ(back.entries().size(), 2u);
  const as::TuningEntry want = sample_entry();
  const as::TuningEntry* got = back.find(want.fingerprint, want.target, want.machine);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->generator, want.generator);
  EXPECT_TRUE(got->knobs == want.knobs) << got->knobs.str();
  EXPECT_EQ(got->schedule, want.schedule);
  EXPECT_EQ(got->measured_ms, want.measured_ms);
  EXPECT_EQ(got->predicted_ms, want.predicted_ms);
  EXPECT_EQ(got->date, want.date);
  // The key is all three: another target or machine finds nothing.
  EXPECT_EQ(back.find(want.fingerprint, "arm-64-linux", want.machine), nullptr);
  EXPECT_EQ(back.find(want.fingerprint, want.target, "cores=16"), nullptr);
}

TEST(TuningDb, GpuKnobsRoundTripAndEntriesWithoutThemStillLoad) {
  TempDir dir;
  as::TuningEntry gpu = sample_entry("0123456789abcdef");
  gpu.target = "x86-64-linux-cuda-cuda_capability_80";
  gpu.knobs = {};
  gpu.knobs.gpu_tiles["matmul_acc"] = {8, 4, 16, 8, 2};
  gpu.knobs.gpu_blocks["out"] = {64, 4, 4};
  gpu.knobs.gpu_rows["softmax_sum"] = {128, 2};
  gpu.knobs.conv_tiles["conv2d_acc#2"] = {1, 12};  // a compiled model's, beside the search's
  gpu.knobs.matmul_tasks["matmul_acc#3"] = {2, 4};
  gpu.knobs.matmul_tasks["matmul_acc#4"] = {11, 0, true};  // a task per batch element
  as::TuningDb db = as::TuningDb::load(dir.file("db.json"));
  db.put(gpu);
  db.save();
  const as::TuningDb back = as::TuningDb::load(dir.file("db.json"));
  const as::TuningEntry* got = back.find(gpu.fingerprint, gpu.target, gpu.machine);
  ASSERT_NE(got, nullptr);
  EXPECT_TRUE(got->knobs == gpu.knobs) << got->knobs.str() << " vs " << gpu.knobs.str();

  // A file written before GPU, fusion, lanes, conv tile and matmul task knobs existed:
  // its knobs have only "tiles" and "bands".
  std::string text = read_text(dir.file("db.json"));
  for (const char* key : {"fusion", "lanes", "conv_tiles", "matmul_tasks", "gpu_tiles", "gpu_blocks", "gpu_rows"}) {
    const size_t at = text.find(std::string("\"") + key + "\"");
    ASSERT_NE(at, std::string::npos) << key;
    text.replace(at, std::string(key).size() + 2, std::string("\"old_") + key + "\"");
  }
  write_text(dir.file("old.json"), text);
  as::TuningDb old;
  ::testing::internal::CaptureStderr();
  old = as::TuningDb::load(dir.file("old.json"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  got = old.find(gpu.fingerprint, gpu.target, gpu.machine);
  ASSERT_NE(got, nullptr);
  EXPECT_TRUE(got->knobs.empty()) << got->knobs.str();
}

TEST(TuningDb, PutReplacesTheEntryWithTheSameKey) {
  as::TuningDb db;
  db.put(sample_entry());
  as::TuningEntry faster = sample_entry();
  faster.measured_ms = 0.5;
  db.put(faster);
  ASSERT_EQ(db.entries().size(), 1u);
  EXPECT_EQ(db.entries()[0].measured_ms, 0.5);
}

TEST(TuningDb, CorruptOrForeignFilesAreIgnoredWithAWarningAndNotOverwritten) {
  TempDir dir;
  const std::string good = "{\"format\": \"kiln-tuning-db\", \"version\": 1, \"entries\": []}";
  const std::vector<std::pair<std::string, std::string>> files = {
      {"{\"format\": \"kiln-tuning-db\", \"version\": 1, \"entries\": [", "at byte"},  // cut short
      {"not json at all", "at byte"},
      {"{\"format\": \"someone-elses\", \"entries\": []}", "not a kiln tuning database"},
      {"[1, 2, 3]", "not a kiln tuning database"},
      {"{\"format\": \"kiln-tuning-db\", \"version\": 2, \"entries\": []}", "version 2"},
      {"{\"format\": \"kiln-tuning-db\", \"version\": 1, \"entries\": [{\"fingerprint\": 7}]}", "entry 0"},
      {fusion_named("sideways"), "not inline, root or row"},
  };
  for (const auto& [text, why] : files) {
    const std::string path = dir.file("db.json");
    write_text(path, text);
    as::TuningDb db;
    const std::string err = load_capturing(path, &db);
    EXPECT_TRUE(db.entries().empty()) << text;
    EXPECT_NE(err.find("Warning: kiln tuning database " + path), std::string::npos) << err;
    EXPECT_NE(err.find(why), std::string::npos) << text << " -> " << err;
    EXPECT_NE(err.find("ignoring it"), std::string::npos) << err;
    db.put(sample_entry());
    try {
      db.save();
      ADD_FAILURE() << "saved over " << text;
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find("refusing to overwrite " + path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--db"), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_text(path), text);
  }
  write_text(dir.file("db.json"), good);
  as::TuningDb db;
  EXPECT_EQ(load_capturing(dir.file("db.json"), &db), "");
}

TEST(TuningDb, AFailedSaveLeavesTheOldFileIntact) {
  TempDir dir;
  const std::string path = dir.file("db.json");
  as::TuningDb db = as::TuningDb::load(path);
  db.put(sample_entry());
  db.save();
  const std::string before = read_text(path);

  // The temporary file's name taken by a folder: the save fails where it would write
  // (tests run as root, so permissions cannot make a folder unwritable).
  std::filesystem::create_directory(dir.file(".kiln_tuning." + std::to_string(getpid()) + ".tmp"));
  db.put(sample_entry("ffffffffffffffff"));
  try {
    db.save();
    ADD_FAILURE() << "the save did not fail";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write the tuning database " + path), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_text(path), before);
  EXPECT_EQ(as::TuningDb::load(path).entries().size(), 1u);

  // A folder that does not exist: an error naming the file and what to do.
  as::TuningDb elsewhere = as::TuningDb::load(dir.file("no/such/folder/db.json"));
  elsewhere.put(sample_entry());
  try {
    elsewhere.save();
    ADD_FAILURE() << "saved into a missing folder";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("writable folder"), std::string::npos) << e.what();
  }
}

TEST(TuningDb, PathFromFlagThenEnvironmentThenCurrentFolderThenPerUser) {
  const char* old = std::getenv("KILN_TUNING_DB");
  const std::string saved = old ? old : "";
  unsetenv("KILN_TUNING_DB");
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = old_xdg ? old_xdg : "";
  const TempDir dir;
  setenv("XDG_CACHE_HOME", dir.path().c_str(), 1);
  if (::access("./kiln_tuning.json", F_OK) != 0) {
    EXPECT_EQ(as::tuning_db_path(), dir.path() + "/kiln/tuning.json");
    // Saving there makes the folder.
    as::TuningDb db = as::TuningDb::load(as::tuning_db_path());
    EXPECT_NE(as::describe(db).find("no tuning database at " + dir.path() + "/kiln/tuning.json"), std::string::npos);
    db.save();
    EXPECT_EQ(::access((dir.path() + "/kiln/tuning.json").c_str(), F_OK), 0);
  }
  if (old_xdg) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  else unsetenv("XDG_CACHE_HOME");
  setenv("KILN_TUNING_DB", "/tmp/env.json", 1);
  EXPECT_EQ(as::tuning_db_path(), "/tmp/env.json");
  EXPECT_EQ(as::tuning_db_path("/tmp/flag.json"), "/tmp/flag.json");
  if (old) setenv("KILN_TUNING_DB", saved.c_str(), 1);
  else unsetenv("KILN_TUNING_DB");
}

TEST(TuningDb, TargetKeyIgnoresRuntimeOnlyFeatures) {
  const Halide::Target t("x86-64-linux-avx2-fma");
  EXPECT_EQ(as::tuning_target_key(t.with_feature(Halide::Target::NoRuntime).with_feature(Halide::Target::JIT)),
            as::tuning_target_key(t));
  EXPECT_NE(as::tuning_target_key(Halide::Target("x86-64-linux-avx512")), as::tuning_target_key(t));
}

// A model's schedule file holds its matmuls' tasks as text (kiln autoschedule): a task per
// batch element and b read in place round-trip, and a text written before either existed
// reads as tasks within the rules' loops, b packed.
TEST(TuningDb, ContractionSizesRoundTripAsText) {
  as::Knobs k;
  k.matmul_tasks["matmul_acc"] = {8, 2};
  k.matmul_tasks["matmul_acc#2"] = {11, 0, true};
  k.matmul_tasks["matmul_acc#3"] = {4, 1, false, /*pack_b=*/false};
  k.conv_tiles["conv2d_acc"] = {2, 6};
  const std::string text = as::contraction_knobs_to_text(k);
  EXPECT_NE(text.find("\"per_batch\": true"), std::string::npos) << text;
  EXPECT_NE(text.find("\"pack_b\": false"), std::string::npos) << text;
  EXPECT_TRUE(as::contraction_knobs_from_text(text) == k) << text;
  const as::Knobs old = as::contraction_knobs_from_text(R"({"matmul_tasks": {"matmul_acc": {"band": 3, "column_tiles": 1}}})");
  EXPECT_TRUE(old.matmul_tasks.at("matmul_acc") == (as::MatmulTasks{3, 1, false, true}));
}

// Found by the fuzzer (tests/fuzz_parsers, contraction_knobs): a size past an int was
// converted to int anyway (undefined behaviour), in schedule files' contraction sizes and
// in tuning database files alike. Each is a json::ParseError, or a database ignored with
// a warning, that gives the range.
TEST(TuningDb, SizesOutsideAnIntAreErrorsNotConversions) {
  for (const char* n : {"5.5e62", "-5.5e62", "2147483648", "-2147483649", "1e300", "2.5"}) {
    const std::string text = std::string(R"({"conv_tiles": {"conv": {"vectors": )") + n + R"(, "channels": 8}}})";
    try {
      as::contraction_knobs_from_text(text);
      ADD_FAILURE() << text << " was read";
    } catch (const as::json::ParseError& e) {
      EXPECT_NE(e.message.find("expected an integer from -2147483648 to 2147483647, not "), std::string::npos)
          << e.message;
    }
  }
  EXPECT_EQ(as::contraction_knobs_from_text(R"({"conv_tiles": {"c": {"vectors": 2147483647, "channels": -2147483648}}})")
                .conv_tiles.at("c")
                .vectors,
            2147483647);
  TempDir dir;
  const std::string path = dir.file("db.json");
  write_text(path, R"({"format": "kiln-tuning-db", "version": 1, "entries": [{"fingerprint": "f", "target": "t",
      "machine": "m", "generator": "g", "schedule": "", "measured_ms": 1, "predicted_ms": 1, "date": "d",
      "knobs": {"tiles": {}, "bands": {"f": 1e40}}}]})");
  as::TuningDb db;
  const std::string err = load_capturing(path, &db);
  EXPECT_TRUE(db.entries().empty());
  EXPECT_NE(err.find("entry 0: expected an integer from -2147483648 to 2147483647, not 1e+40"), std::string::npos) << err;
}
