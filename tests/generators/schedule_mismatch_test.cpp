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

// A generator registered from outside kiln (kiln_add_generator): its spec and its
// schedules are found by name like kiln's own; a taken name is refused.
bool test_schedule_ran = false;
void test_schedule_cpu(Halide::Pipeline, Halide::Target) { test_schedule_ran = true; }

TEST(ScheduleFiles, RegisteredGeneratorsAreFoundWithTheirSchedules) {
  kernels::GeneratorInfo info{"test_registered_double", "2 * x", {}, [](const kernels::Params&) {
                                kernels::KernelSpec s;
                                s.generator = "test_registered_double";
                                s.inputs = {{"x", DType::F32, {7}, {64}}};
                                s.fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0}; };
                                return s;
                              }};
  info.cpu_schedule = test_schedule_cpu;
  EXPECT_TRUE(kernels::register_generator(info));
  kernels::DirectKernel k = kernels::build_direct(kernels::make_spec("test_registered_double"));
  kernels::apply_named_schedule("manual", "test_registered_double", k.lowered, Halide::get_host_target());
  EXPECT_TRUE(test_schedule_ran);
  // No CUDA schedule: the error lists the generators that have one.
  std::string msg = error_of([&] {
    kernels::apply_manual_schedule("test_registered_double", k.lowered.pipeline(), Halide::Target("host-cuda"));
  });
  EXPECT_NE(msg.find("has no hand-written schedule for cuda"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kiln_matmul"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { kernels::register_generator(info); }).find("the name 'test_registered_double' is taken"),
            std::string::npos);
  EXPECT_NE(error_of([] { kernels::register_generator({"matmul", "", {}, nullptr}); }).find("needs a name and a make"),
            std::string::npos);
  info.name = "matmul";
  EXPECT_NE(error_of([&] { kernels::register_generator(info); }).find("is taken"), std::string::npos);
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
