// CUDA schedule for kiln_conv2d (NCHW; accumulator acc(ow, o, oh, n), see src/ops/conv.cpp).
// Blocks of 32 output columns x 4 output rows per (group of 4 output channels, image);
// each thread keeps 4 output channels of one pixel in registers over the whole window and
// all input channels, so each input load feeds four FMAs. The zero padding is inlined
// into the loads (clamped index and a select), so there is no padded copy.
#ifndef KILN_SCHEDULE_CUDA_CONV2D
#define KILN_SCHEDULE_CUDA_CONV2D

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_conv2d_cuda(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::RVar;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    using ::Halide::VarOrRVar;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_conv2d", "schedules/cuda/conv2d.schedule.h");
    Func out = funcs.get("out"), acc = funcs.get("conv2d_acc");
    Var ow = out.args()[0], oh = out.args()[1], o = out.args()[2], n = out.args()[3];
    Var co("co"), ci("ci"), con("con"), bx("bx"), by("by"), tx("tx"), ty("ty");
    out.split(o, co, ci, 4, TailStrategy::GuardWithIf)
        .fuse(co, n, con)
        .gpu_tile(ow, oh, bx, by, tx, ty, 32, 4, TailStrategy::GuardWithIf)
        .reorder(ci, tx, ty, bx, by, con)
        .unroll(ci)
        .gpu_blocks(con);
    Var ao = acc.args()[1];
    acc.compute_at(out, tx).unroll(ao);
    std::vector<VarOrRVar> order = {ao};
    for (const RVar& r : acc.rvars(0)) order.push_back(r);
    acc.update().reorder(order).unroll(ao);
}

#endif
