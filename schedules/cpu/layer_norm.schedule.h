// CPU schedule for kiln_layer_norm over rows of x[r, cols]. A task takes 4 rows; each
// row's sum and centred sum of squares are computed while the row is in L1, in vectors of
// partial results (rfactor), then the normalized row is written.
#ifndef KILN_SCHEDULE_CPU_LAYER_NORM_H
#define KILN_SCHEDULE_CPU_LAYER_NORM_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_layer_norm_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::RVar;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_layer_norm", "schedules/cpu/layer_norm.schedule.h");
    Func out = funcs.get("out");
    const int vw = target.natural_vector_size<float>();
    Var d0 = out.args()[0], d1 = out.args()[1], yo("yo"), yi("yi");
    ::Halide::Expr cols = out.output_buffer().dim(0).extent();
    out.split(d1, yo, yi, 4, TailStrategy::GuardWithIf).parallel(yo);
    out.specialize(cols >= vw).vectorize(d0, vw, TailStrategy::ShiftInwards);
    for (const char* name : {"layer_norm_sum", "layer_norm_sumsq"}) {
        Func stat = funcs.get(name);
        stat.compute_at(out, yi);
        Var lane("lane");
        RVar r = stat.rvars(0)[0], rvo("rvo"), rvi("rvi");
        Func partial = stat.update().split(r, rvo, rvi, 2 * vw, TailStrategy::GuardWithIf).rfactor(rvi, lane);
        partial.compute_at(stat, stat.args()[0]).vectorize(lane, vw).unroll(lane);
        partial.update().reorder(lane, rvo).vectorize(lane, vw).unroll(lane);
    }
}

#endif
