// CPU schedule for kiln_seed: the whole expression inlines into out; tasks of
// 16K elements, two vectors per iteration so the transcendental calls overlap.
#ifndef KILN_SCHEDULE_CPU_SEED_H
#define KILN_SCHEDULE_CPU_SEED_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_seed_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_seed", "schedules/cpu/seed.schedule.h");
    Func out = funcs.get("out");
    const int vw = target.natural_vector_size<float>();
    Var d0 = out.args()[0], t("t"), i("i"), lanes("lanes");
    ::Halide::Expr n = out.output_buffer().dim(0).extent();
    out.specialize(n >= (1 << 15))
        .split(d0, t, i, 1 << 14, TailStrategy::ShiftInwards)
        .parallel(t)
        .split(i, i, lanes, 2 * vw)
        .vectorize(lanes, vw)
        .unroll(lanes);
    out.specialize(n >= vw).vectorize(d0, vw, TailStrategy::ShiftInwards);
}

#endif
