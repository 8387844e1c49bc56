// CPU schedule for kiln_binary: the op inlines into out; tasks of 8 rows, rows in
// vectors of two registers (the extra one hides the latency of exp, tanh, ...).
#ifndef KILN_SCHEDULE_CPU_BINARY_H
#define KILN_SCHEDULE_CPU_BINARY_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_binary_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_binary", "schedules/cpu/binary.schedule.h");
    Func out = funcs.get("out");
    const int vw = target.natural_vector_size<float>();
    Var d0 = out.args()[0], d1 = out.args()[1], yo("yo"), yi("yi"), xi("xi");
    ::Halide::Expr cols = out.output_buffer().dim(0).extent();
    out.split(d1, yo, yi, 8, TailStrategy::GuardWithIf).parallel(yo);
    out.specialize(cols >= 2 * vw)
        .split(d0, d0, xi, 2 * vw, TailStrategy::ShiftInwards)
        .vectorize(xi, vw)
        .unroll(xi);
    out.specialize(cols >= vw).vectorize(d0, vw, TailStrategy::ShiftInwards);
}

#endif
