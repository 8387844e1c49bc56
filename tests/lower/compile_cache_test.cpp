// The compile cache (lower/compile_cache.h): hits, misses, damaged and foreign entries,
// KILN_CACHE=0, concurrent writers, and a second process loading what a first compiled.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/log_capture.h"
#include "core/scoped_env.h"
#include "kiln.h"
#include "lower/compile_cache.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::logged;
using testing::ScopedEnv;

// A cache folder of the test's own, emptied first.
// (The suite itself may run with KILN_CACHE=0: make test does.)
struct TempCache {
  std::string dir;
  ScopedEnv env, on;
  explicit TempCache(const std::string& tag)
      : dir((fs::temp_directory_path() / ("kiln_cache_test_" + tag + "_" + std::to_string(getpid()))).string()),
        env("KILN_CACHE_DIR", dir),
        on("KILN_CACHE", std::nullopt) {
    fs::remove_all(dir);
  }
  ~TempCache() { fs::remove_all(dir); }
  std::vector<fs::path> entries(const std::string& ext) const {
    std::vector<fs::path> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (e.path().extension() == ext && name.rfind("runtime-", 0) != 0) out.push_back(e.path());
    }
    return out;
  }
};

// A graph with a weight (lifted to an argument), a 0-d constant (kept in the code) and a
// reduction; `scale` changes the 0-d constant.
TracedFn model(double scale) {
  Tensor w = rand({24, 16}, 7, -1, 1);
  return [w, scale](const std::vector<Tensor>& in) {
    Tensor h = relu(matmul(in[0], w)) * scale;
    return std::vector<Tensor>{softmax(h, -1), sum(h, {1})};
  };
}

void expect_matches_eager(const TracedFn& fn, const std::vector<Tensor>& in) {
  const std::vector<Tensor> want = fn(in);
  const std::vector<Tensor> got = compile(fn)(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(allclose(got[i], want[i], 1e-5, 1e-5)) << "output " << i;
}

TEST(CompileCache, ASecondCompileLoadsWhatTheFirstStored) {
  TempCache cache("hit");
  const std::vector<Tensor> in = {rand({5, 24}, 1)};
  std::string log = logged("cache", [&] { expect_matches_eager(model(2.0), in); });
  EXPECT_NE(log.find("miss"), std::string::npos) << log;
  EXPECT_NE(log.find("stored"), std::string::npos) << log;
  ASSERT_EQ(cache.entries(".so").size(), 1u);
  log = logged("cache", [&] { expect_matches_eager(model(2.0), in); });
  EXPECT_NE(log.find("hit"), std::string::npos) << log;
  EXPECT_EQ(log.find("miss"), std::string::npos) << log;
  // Another 0-d constant, another shape: other keys.
  log = logged("cache", [&] { expect_matches_eager(model(3.0), in); });
  EXPECT_NE(log.find("miss"), std::string::npos) << log;
  log = logged("cache", [&] { expect_matches_eager(model(2.0), {rand({6, 24}, 2)}); });
  EXPECT_NE(log.find("miss"), std::string::npos) << log;
  EXPECT_EQ(cache.entries(".so").size(), 3u);
}

TEST(CompileCache, NewWeightsReuseTheEntry) {
  // Weights are arguments of the cached code: the same graph with other values hits and
  // computes with its own weights.
  TempCache cache("weights");
  const std::vector<Tensor> in = {rand({4, 8}, 1)};
  for (uint64_t seed : {11, 12}) {
    Tensor w = rand({8, 3}, seed);
    TracedFn fn = [w](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], w) + 1.0}; };
    const std::string log = logged("cache", [&] { expect_matches_eager(fn, in); });
    EXPECT_NE(log.find(seed == 11 ? "miss" : "hit"), std::string::npos) << log;
  }
}

TEST(CompileCache, DamagedOrForeignEntriesAreRebuiltNeverLoaded) {
  TempCache cache("damaged");
  const std::vector<Tensor> in = {rand({5, 24}, 1)};
  expect_matches_eager(model(2.0), in);
  ASSERT_EQ(cache.entries(".so").size(), 1u);
  const fs::path so = cache.entries(".so")[0], meta = fs::path(so).replace_extension(".meta");
  struct Damage {
    std::string name, expect;
    std::function<void()> apply;
  };
  const std::vector<Damage> damages = {
      {"truncated", "truncated", [&] { fs::resize_file(so, fs::file_size(so) / 2); }},
      {"a flipped byte", "corrupt",
       [&] {
         std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(std::streamoff(fs::file_size(so) / 2));
         f.put('\x5a');
       }},
      {"another Halide", "Halide",
       [&] {
         std::string text;
         {
           std::ifstream i(meta);
           text.assign(std::istreambuf_iterator<char>(i), {});
         }
         text.replace(text.find("halide "), 9, "halide 1.");
         std::ofstream(meta) << text;
       }},
      {"another format", "format", [&] { std::ofstream(meta) << "something else\n"; }},
      {"a missing object", "missing", [&] { fs::remove(so); }},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.name);
    d.apply();
    const std::string log = logged("cache", [&] { expect_matches_eager(model(2.0), in); });
    EXPECT_NE(log.find(d.expect), std::string::npos) << log;
    EXPECT_NE(log.find("stored"), std::string::npos) << log;
    // Rebuilt: the next compile hits.
    EXPECT_NE(logged("cache", [&] { expect_matches_eager(model(2.0), in); }).find("hit"), std::string::npos);
  }
}

TEST(CompileCache, OffWithKilnCacheZero) {
  TempCache cache("off");
  ScopedEnv off("KILN_CACHE", std::string("0"));
  const std::string log = logged("cache", [&] { expect_matches_eager(model(2.0), {rand({5, 24}, 1)}); });
  EXPECT_NE(log.find("not cached"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(cache.dir));
}

TEST(CompileCache, ConcurrentWritersLeaveOneWholeEntry) {
  TempCache cache("threads");
  const std::vector<Tensor> in = {rand({5, 24}, 1)};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { expect_matches_eager(model(2.0), in); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(cache.entries(".so").size(), 1u);
  EXPECT_EQ(cache.entries(".meta").size(), 1u);
  for (const auto& e : fs::directory_iterator(cache.dir)) {
    EXPECT_NE(e.path().filename().string().rfind("tmp-", 0), 0u) << "scratch left behind: " << e.path();
  }
  EXPECT_NE(logged("cache", [&] { expect_matches_eager(model(2.0), in); }).find("hit"), std::string::npos);
}

TEST(CompileCache, ANewProcessLoadsWhatAnotherCompiled) {
  // Two processes of this test binary, one after the other, on one cache: the second
  // reports a hit for the graph the first stored.
  TempCache cache("process");
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string cmd = "KILN_LOG=cache '" + self +
                          "' --gtest_filter=CompileCache.ASecondCompileLoadsWhatTheFirstStored_Child 2>&1";
  auto run = [&] {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[512];
    while (p && fgets(buf, sizeof(buf), p)) out += buf;
    if (p) pclose(p);
    return out;
  };
  ScopedEnv child("KILN_TEST_CACHE_CHILD", std::string("1"));
  const std::string first = run(), second = run();
  EXPECT_NE(first.find("[kiln:cache] miss"), std::string::npos) << first;
  EXPECT_NE(second.find("[kiln:cache] hit"), std::string::npos) << second;
  EXPECT_EQ(second.find("[kiln:cache] miss"), std::string::npos) << second;
}

TEST(CompileCache, ASecondCompileLoadsWhatTheFirstStored_Child) {
  if (!std::getenv("KILN_TEST_CACHE_CHILD")) GTEST_SKIP() << "run by CompileCache.ANewProcessLoadsWhatAnotherCompiled";
  expect_matches_eager(model(2.0), {rand({5, 24}, 1)});
}

TEST(CompileCache, CudaTargetsAreNotCached) {
  TempCache cache("cuda");
  std::string why;
  const Graph g = trace(model(2.0), {rand({5, 24}, 1)});
  EXPECT_EQ(compile_cache::key_of(g, {rand({5, 24}, 1)}, Halide::Target("host-cuda"), "Kiln", &why), "");
  EXPECT_NE(why.find("CUDA"), std::string::npos) << why;
  EXPECT_NE(compile_cache::key_of(g, {rand({5, 24}, 1)}, Halide::get_host_target(), "Kiln", &why), "");
}

}  // namespace
}  // namespace kiln
