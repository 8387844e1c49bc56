// Pipeline fingerprints: the same generator built twice (in between, other pipelines) has
// one fingerprint, and a change to a definition, a type, a reduction or an estimate gives
// another, so the tuning database never applies a stale entry.
#include <gtest/gtest.h>

#include "fingerprint.h"
#include "kernel_spec.h"
#include "search.h"

namespace as = kiln::autoschedule;
namespace kk = kiln::kernels;

namespace {

std::string fingerprint_of(const kk::KernelSpec& spec) {
  kk::DirectKernel k = kk::build_direct(spec);
  return as::pipeline_fingerprint(k.lowered.pipeline());
}

std::string fingerprint_of(const std::string& generator, const kk::Params& params = {}) {
  return fingerprint_of(kk::make_spec(generator, params));
}

}  // namespace

TEST(Fingerprint, SamePipelineSameFingerprint) {
  const std::string softmax = fingerprint_of("softmax");
  EXPECT_EQ(softmax.size(), 16u);
  fingerprint_of("matmul");  // other Funcs created in between do not matter
  EXPECT_EQ(fingerprint_of("softmax"), softmax);
  EXPECT_EQ(fingerprint_of("unary", {{"op", "exp"}}), fingerprint_of("unary", {{"op", "exp"}}));
}

TEST(Fingerprint, ChangesWithDefinitionsTypesReductionsAndEstimates) {
  const std::string base = fingerprint_of("unary", {{"op", "exp"}});
  EXPECT_NE(fingerprint_of("unary", {{"op", "sin"}}), base);                     // the pure definition
  EXPECT_NE(fingerprint_of("unary", {{"op", "exp"}, {"dtype", "f16"}}), base);   // types
  EXPECT_NE(fingerprint_of("reduce", {{"op", "sum"}}), fingerprint_of("reduce", {{"op", "max"}}));  // the update
  EXPECT_NE(fingerprint_of("conv2d", {{"k", "3"}}), fingerprint_of("conv2d", {{"k", "5"}}));        // reduction domain
  kk::KernelSpec bigger = kk::make_spec("unary", {{"op", "exp"}});
  bigger.inputs[0].estimate[0] *= 2;
  EXPECT_NE(fingerprint_of(bigger), base);  // estimates
}

TEST(Fingerprint, DescribesEveryFuncAndInput) {
  kk::DirectKernel k = kk::build_direct(kk::make_spec("matmul"));
  const std::string d = as::pipeline_description(k.lowered.pipeline());
  EXPECT_NE(d.find("func out"), std::string::npos) << d;
  EXPECT_NE(d.find("buffer a : float32 x2"), std::string::npos) << d;
  EXPECT_NE(d.find("rvar"), std::string::npos) << d;
  EXPECT_NE(d.find("estimate"), std::string::npos) << d;
}
