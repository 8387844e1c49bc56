// CPU schedule for kiln_conv2d (NCHW; the accumulator is acc(ow, o, oh, n), see
// src/ops/conv.cpp). Register tiles of 2 vectors of output columns x 4 output channels
// accumulate the whole window over all input channels in registers, as kiln's default
// does, but the tiles are computed straight into the output instead of a materialized
// copy of the accumulator, and each task (one output row of one image) zero-pads only the
// input rows it reads.
#ifndef KILN_SCHEDULE_CPU_CONV2D_H
#define KILN_SCHEDULE_CPU_CONV2D_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_conv2d_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::RVar;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    using ::Halide::VarOrRVar;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_conv2d", "schedules/cpu/conv2d.schedule.h");
    Func out = funcs.get("out"), acc = funcs.get("conv2d_acc"), pad = funcs.get("conv2d_pad");
    const int vw = target.natural_vector_size<float>();
    const int tile_w = 2 * vw, tile_o = 4;
    Var ow = out.args()[0], oh = out.args()[1], o = out.args()[2], n = out.args()[3];
    Var wo("wo"), wi("wi"), co("co"), ci("ci"), rows("rows");
    ::Halide::Expr OW = out.output_buffer().dim(0).extent(), O = out.output_buffer().dim(2).extent();

    out.specialize(OW >= tile_w && O >= tile_o)
        .split(ow, wo, wi, tile_w, TailStrategy::ShiftInwards)
        .split(o, co, ci, tile_o, TailStrategy::ShiftInwards)
        .reorder(wi, ci, co, wo, oh, n)
        .fuse(oh, n, rows)
        .parallel(rows)
        .vectorize(wi, vw)
        .unroll(wi)
        .unroll(ci);
    // Outputs narrower than a tile: tiles of one element (the loops acc and pad are
    // computed at must exist in every specialization).
    out.split(ow, wo, wi, 1).split(o, co, ci, 1).reorder(wi, ci, co, wo, oh, n).fuse(oh, n, rows).parallel(rows);

    Var aw = acc.args()[0], ao = acc.args()[1], ah = acc.args()[2], an = acc.args()[3];
    acc.compute_at(out, co).vectorize(aw, vw).unroll(aw).unroll(ao);
    std::vector<VarOrRVar> order = {aw, ao};
    for (const RVar& r : acc.rvars(0)) order.push_back(r);
    order.push_back(ah);
    order.push_back(an);
    acc.update().reorder(order).vectorize(aw, vw).unroll(aw).unroll(ao);
    pad.compute_at(out, rows).vectorize(pad.args()[0], vw, TailStrategy::GuardWithIf);
}

#endif
