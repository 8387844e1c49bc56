// compile_aot on graphs with captured tensors: weights become arguments (or stay
// embedded), the weights file round-trips, and bad requests are kiln::Errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/log_capture.h"
#include "graph/passes/lift_constants.h"
#include "kiln.h"

using namespace kiln;

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// y = x @ w + b with captured w [4, 3] and b [3], and a captured 0-d scale.
Graph affine_graph() {
  Tensor w = rand({4, 3}, 1), b = rand({3}, 2);
  return trace([=](const std::vector<Tensor>& in) { return std::vector<Tensor>{(matmul(in[0], w) + b) * scalar(2.0)}; },
               {rand({2, 4})});
}

TEST(LiftConstants, WeightsFollowTheInputs) {
  LiftedGraph l = lift_constants(affine_graph());
  ASSERT_EQ(l.graph.inputs().size(), 3u) << l.graph.str();
  EXPECT_EQ(l.graph.node(l.graph.inputs()[1]).name, "weight_0");
  EXPECT_EQ(l.graph.node(l.graph.inputs()[1]).meta.shape, Shape({4, 3}));
  ASSERT_EQ(l.constants.size(), 2u);
  // The lifted graph computes what the original did, given the weights as inputs.
  Tensor x = rand({2, 4}, 3);
  Tensor want = interpret(affine_graph(), {x})[0];
  Tensor got = interpret(l.graph, {x, l.constants[0], l.constants[1]})[0];
  EXPECT_TRUE(allclose(got, want, 1e-6, 1e-6));
}

TEST(Aot, WeightsAreArgumentsAndWrittenToAFile) {
  std::string dir = ::testing::TempDir() + "kiln_aot_weights";
  AotArtifacts a = compile_aot(affine_graph(), "host", dir, "affine");
  ASSERT_EQ(a.arguments.size(), 4u);
  EXPECT_EQ(a.arguments[1].kind, AotArgument::Kind::Weight);
  EXPECT_EQ(a.arguments[3].kind, AotArgument::Kind::Output);
  std::string h = read(a.header);
  for (const AotArgument& arg : a.arguments) EXPECT_NE(h.find("*" + arg.c_name), std::string::npos) << arg.c_name;
  // Magic, count, two sizes, then the data at 64-byte boundaries: 12 and 3 floats.
  std::string w = read(a.weights);
  ASSERT_EQ(w.size(), 64u + 64u + 12u);
  EXPECT_EQ(w.substr(0, 8), "KILNWTS1");
  EXPECT_NE(read(a.weights_header).find("static int affine_run(affine_weights *w"), std::string::npos);
  std::string readme = read(a.readme);
  EXPECT_NE(readme.find("| 1 | `" + a.arguments[1].c_name + "` | weight | f32 | [4, 3] |"), std::string::npos)
      << readme;
  EXPECT_NE(readme.find("-lpthread -ldl"), std::string::npos);
}

TEST(Aot, EmbeddedWeightsLeaveOnlyInputsAndOutputs) {
  std::string dir = ::testing::TempDir() + "kiln_aot_embedded";
  AotOptions o;
  o.weights = AotWeights::Embedded;
  AotArtifacts a = compile_aot(affine_graph(), "host", dir, "affine_embedded", o);
  EXPECT_EQ(a.arguments.size(), 2u);
  EXPECT_TRUE(a.weights.empty());
  EXPECT_FALSE(std::filesystem::exists(dir + "/affine_embedded.weights"));
}

// Kiln schedules a CPU export unless the rules are asked for, planning for the graph's
// own sizes; the stmt file shows the schedule that was compiled.
TEST(Aot, KilnSchedulesCpuExportsByDefault) {
  std::string dir = ::testing::TempDir() + "kiln_aot_scheduler";
  const std::string with_kiln = kiln::testing::logged("schedule", [&] { compile_aot(affine_graph(), "host", dir, "affine_kiln"); });
  EXPECT_NE(with_kiln.find("Kiln: predicted"), std::string::npos) << with_kiln;
  AotOptions rules;
  rules.scheduler = "rules";
  const std::string with_rules =
      kiln::testing::logged("schedule", [&] { compile_aot(affine_graph(), "host", dir, "affine_rules", rules); });
  EXPECT_EQ(with_rules.find("Kiln: predicted"), std::string::npos) << with_rules;
  AotOptions bad;
  bad.scheduler = "fastest";
  try {
    compile_aot(affine_graph(), "host", dir, "affine_bad", bad);
    FAIL() << "an unknown scheduler was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("AotOptions::scheduler"), std::string::npos) << e.what();
  }
  // Kiln's GPU search plans CUDA exports (built here without a GPU).
  AotOptions kiln_cuda;
  kiln_cuda.scheduler = "Kiln";
  const std::string cuda_log = kiln::testing::logged(
      "schedule", [&] { compile_aot(affine_graph(), "host-cuda", dir, "affine_cuda", kiln_cuda); });
  EXPECT_NE(cuda_log.find("columns per thread"), std::string::npos) << cuda_log;
}

TEST(Aot, BadRequestsAreUserErrors) {
  std::string dir = ::testing::TempDir() + "kiln_aot_errors";
  EXPECT_THROW(compile_aot(affine_graph(), "tpu", dir, "affine"), Error);
  EXPECT_THROW(compile_aot(affine_graph(), "host", dir, "9lives"), Error);
  // A path below a regular file cannot be created.
  std::ofstream(dir + "_file") << "x";
  try {
    compile_aot(affine_graph(), "host", dir + "_file/sub", "affine");
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the output folder"), std::string::npos) << e.what();
  }
}

}  // namespace
