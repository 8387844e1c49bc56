#include "manual_schedules.h"

#include <vector>

#include "core/error.h"
#include "kernel_spec.h"

// The schedule files, included back as Halide's autoschedulers' output is.
#include "cpu/batch_matmul.schedule.h"
#include "cpu/binary.schedule.h"
#include "cpu/conv2d.schedule.h"
#include "cpu/layer_norm.schedule.h"
#include "cpu/matmul.schedule.h"
#include "cpu/pool2d.schedule.h"
#include "cpu/reduce.schedule.h"
#include "cpu/seed.schedule.h"
#include "cpu/softmax.schedule.h"
#include "cpu/unary.schedule.h"
#include "cuda/batch_matmul.schedule.h"
#include "cuda/binary.schedule.h"
#include "cuda/conv2d.schedule.h"
#include "cuda/layer_norm.schedule.h"
#include "cuda/matmul.schedule.h"
#include "cuda/pool2d.schedule.h"
#include "cuda/reduce.schedule.h"
#include "cuda/seed.schedule.h"
#include "cuda/softmax.schedule.h"
#include "cuda/unary.schedule.h"

namespace kiln::kernels {

namespace {

struct ManualSchedule {
  const char* generator;
  ScheduleFn cpu, cuda;
};

#define KILN_SCHEDULE(g) {"kiln_" #g, apply_schedule_kiln_##g##_cpu, apply_schedule_kiln_##g##_cuda}
const std::vector<ManualSchedule>& manual_schedules() {
  static const std::vector<ManualSchedule> s = {
      KILN_SCHEDULE(seed),   KILN_SCHEDULE(unary),        KILN_SCHEDULE(binary), KILN_SCHEDULE(reduce),
      KILN_SCHEDULE(softmax), KILN_SCHEDULE(layer_norm),  KILN_SCHEDULE(matmul), KILN_SCHEDULE(batch_matmul),
      KILN_SCHEDULE(conv2d), KILN_SCHEDULE(pool2d),
  };
  return s;
}
#undef KILN_SCHEDULE

ScheduleFn find(const std::string& generator, const Halide::Target& target) {
  for (const ManualSchedule& s : manual_schedules()) {
    if (s.generator == generator) return target.has_gpu_feature() ? s.cuda : s.cpu;
  }
  for (const GeneratorInfo& g : generators()) {  // registered from outside kiln
    if (g.name == generator) return target.has_gpu_feature() ? g.cuda_schedule : g.cpu_schedule;
  }
  return nullptr;
}

}  // namespace

bool has_manual_schedule(const std::string& generator, const Halide::Target& target) {
  return find(generator, target) != nullptr;
}

void apply_manual_schedule(const std::string& generator, const Halide::Pipeline& pipeline,
                           const Halide::Target& target) {
  ScheduleFn fn = find(generator, target);
  if (!fn) {
    std::string have;
    for (const GeneratorInfo& g : generators())
      if (find(g.name, target)) have += (have.empty() ? "" : ", ") + g.name;
    user_error("generator ", generator, " has no hand-written schedule for ", target.has_gpu_feature() ? "cuda" : "cpu",
               " (schedules/", target.has_gpu_feature() ? "cuda" : "cpu", "/); these have one: ", have,
               ". Build it with schedule=default or an autoscheduler instead");
  }
  fn(pipeline, target);
}

}  // namespace kiln::kernels
