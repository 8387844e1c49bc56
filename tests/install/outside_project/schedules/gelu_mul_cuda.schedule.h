// CUDA schedule for outside_gelu_mul, by hand: gelu inlines into out; blocks of 64 x 4.
#pragma once
#include "Halide.h"
#include "kernels/schedule_funcs.h"

inline void apply_schedule_outside_gelu_mul_cuda(::Halide::Pipeline pipeline, ::Halide::Target) {
  using ::Halide::Func;
  using ::Halide::TailStrategy;
  using ::Halide::Var;
  kiln::kernels::ScheduleFuncs funcs(pipeline, "outside_gelu_mul", "schedules/gelu_mul_cuda.schedule.h");
  Func out = funcs.get("out");
  Var d0 = out.args()[0], d1 = out.args()[1], bx("bx"), by("by"), tx("tx"), ty("ty");
  out.gpu_tile(d0, d1, bx, by, tx, ty, 64, 4, TailStrategy::GuardWithIf);
}
