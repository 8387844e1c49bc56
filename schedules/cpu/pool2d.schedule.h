// CPU schedule for kiln_pool2d (max or avg, NCHW). Tasks are (channel, image) planes;
// each output row's window reduction is computed in vectors of output columns, the
// window loops outside the vector, so a row is read from L1 kernel-size times.
#ifndef KILN_SCHEDULE_CPU_POOL2D_H
#define KILN_SCHEDULE_CPU_POOL2D_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_pool2d_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::RVar;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    using ::Halide::VarOrRVar;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_pool2d", "schedules/cpu/pool2d.schedule.h");
    Func out = funcs.get("out"), acc = funcs.get_any({"max_pool2d_acc", "avg_pool2d_acc"});
    const int vw = target.natural_vector_size<float>();
    Var ow = out.args()[0], oh = out.args()[1], c = out.args()[2], n = out.args()[3], plane("plane");
    ::Halide::Expr OW = out.output_buffer().dim(0).extent();
    out.fuse(c, n, plane).parallel(plane);
    out.specialize(OW >= vw).vectorize(ow, vw, TailStrategy::ShiftInwards);
    Var aw = acc.args()[0], ah = acc.args()[1];
    acc.compute_at(out, oh).vectorize(aw, vw, TailStrategy::RoundUp);
    std::vector<VarOrRVar> order = {aw};
    for (const RVar& r : acc.rvars(0)) order.push_back(r);
    order.push_back(ah);
    acc.update().reorder(order).vectorize(aw, vw, TailStrategy::RoundUp);
}

#endif
