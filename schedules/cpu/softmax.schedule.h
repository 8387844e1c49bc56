// CPU schedule for kiln_softmax over rows of x[r, c]. Unlike the default (each statistic
// its own pass over the whole tensor), a task takes 4 rows and computes each row's max,
// sum of exponentials and output while the row is in L1. The sum runs in vectors of
// partial results; the NaN-propagating max stays serial (no rfactor).
#ifndef KILN_SCHEDULE_CPU_SOFTMAX_H
#define KILN_SCHEDULE_CPU_SOFTMAX_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_softmax_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::RVar;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_softmax", "schedules/cpu/softmax.schedule.h");
    Func out = funcs.get("out");
    Func row_max = funcs.get("softmax_max"), row_sum = funcs.get("softmax_sum");
    const int vw = target.natural_vector_size<float>();
    Var d0 = out.args()[0], d1 = out.args()[1], yo("yo"), yi("yi"), lane("lane");
    ::Halide::Expr cols = out.output_buffer().dim(0).extent();
    out.split(d1, yo, yi, 4, TailStrategy::GuardWithIf).parallel(yo);
    out.specialize(cols >= vw).vectorize(d0, vw, TailStrategy::ShiftInwards);
    row_max.compute_at(out, yi);
    row_sum.compute_at(out, yi);
    RVar r = row_sum.rvars(0)[0], rvo("rvo"), rvi("rvi");
    Func partial = row_sum.update().split(r, rvo, rvi, 2 * vw, TailStrategy::GuardWithIf).rfactor(rvi, lane);
    partial.compute_at(row_sum, d1).vectorize(lane, vw).unroll(lane);
    partial.update().reorder(lane, rvo).vectorize(lane, vw).unroll(lane);
}

#endif
