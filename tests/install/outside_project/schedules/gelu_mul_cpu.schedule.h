// CPU schedule for outside_gelu_mul, by hand: gelu inlines into out; tasks of 16 rows,
// rows in vectors.
#pragma once
#include "Halide.h"
#include "kernels/schedule_funcs.h"

inline void apply_schedule_outside_gelu_mul_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
  using ::Halide::Func;
  using ::Halide::TailStrategy;
  using ::Halide::Var;
  kiln::kernels::ScheduleFuncs funcs(pipeline, "outside_gelu_mul", "schedules/gelu_mul_cpu.schedule.h");
  Func out = funcs.get("out");
  const int vw = target.natural_vector_size<float>();
  Var d0 = out.args()[0], d1 = out.args()[1], yo("yo"), yi("yi");
  out.split(d1, yo, yi, 16, TailStrategy::GuardWithIf).parallel(yo);
  out.specialize(out.output_buffer().dim(0).extent() >= vw).vectorize(d0, vw, TailStrategy::ShiftInwards);
}
