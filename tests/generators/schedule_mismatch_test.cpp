// A hand-written schedule that does not match its generator's pipeline (the algorithm
// changed under it, or the wrong file) is a kiln::Error that names the generator, the
// schedule file and the missing Func; unknown names list what exists.
#include <gtest/gtest.h>

#include "kernel_spec.h"
#include "manual_schedules.h"
#include "schedule_funcs.h"
#include "kiln.h"

namespace {

using namespace kiln;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ScheduleFiles, MismatchNamesGeneratorFileAndFunc) {
  kernels::DirectKernel softmax = kernels::build_direct(kernels::make_spec("softmax"));
  // matmul's CPU schedule applied to softmax's pipeline.
  std::string msg = error_of([&] {
    kernels::apply_manual_schedule("kiln_matmul", softmax.lowered.pipeline(), Halide::get_host_target());
  });
  ASSERT_FALSE(msg.empty()) << "a mismatched schedule was applied silently";
  EXPECT_NE(msg.find("kiln_matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("schedules/cpu/matmul.schedule.h"), std::string::npos) << msg;
  EXPECT_NE(msg.find("matmul_acc"), std::string::npos) << msg;

  kernels::ScheduleFuncs funcs(softmax.lowered.pipeline(), "kiln_softmax", "schedules/cpu/softmax.schedule.h");
  msg = error_of([&] { funcs.get("no_such_func"); });
  EXPECT_NE(msg.find("no_such_func"), std::string::npos) << msg;
  EXPECT_NE(msg.find("softmax"), std::string::npos) << "lists the Funcs that exist: " << msg;
}

TEST(ScheduleFiles, UnknownNamesListWhatExists) {
  std::string msg = error_of([] { kernels::make_spec("kiln_nope"); });
  EXPECT_NE(msg.find("kiln_matmul"), std::string::npos) << msg;
  kernels::DirectKernel mm = kernels::build_direct(kernels::make_spec("matmul"));
  msg = error_of([&] { kernels::apply_named_schedule("fastest", "kiln_matmul", mm.lowered, Halide::get_host_target()); });
  EXPECT_NE(msg.find("manual"), std::string::npos) << msg;
  EXPECT_NE(msg.find("default"), std::string::npos) << msg;
}

TEST(ScheduleFiles, ASecondBuildInTheProcessTakesItsSchedule) {
  // Halide names the second build's Funcs "out$1", "softmax_max$1", ...
  kernels::DirectKernel first = kernels::build_direct(kernels::make_spec("softmax"));
  kernels::DirectKernel second = kernels::build_direct(kernels::make_spec("softmax"));
  ASSERT_NE(second.out.name(), "out") << "the test needs a Func whose name Halide made unique";
  EXPECT_EQ(error_of([&] {
              kernels::apply_manual_schedule("kiln_softmax", second.lowered.pipeline(), Halide::get_host_target());
            }),
            "");
  kernels::ScheduleFuncs funcs(second.lowered.pipeline(), "kiln_softmax", "schedules/cpu/softmax.schedule.h");
  EXPECT_EQ(funcs.get("out").name(), second.out.name());
}

}  // namespace
