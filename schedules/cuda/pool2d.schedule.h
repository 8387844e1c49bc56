// CUDA schedule for kiln_pool2d (max or avg, NCHW): one thread per output pixel, which
// reduces its window in registers; blocks of 32 columns x 8 rows per (channel, image).
#ifndef KILN_SCHEDULE_CUDA_POOL2D
#define KILN_SCHEDULE_CUDA_POOL2D

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_pool2d_cuda(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_pool2d", "schedules/cuda/pool2d.schedule.h");
    Func out = funcs.get("out"), acc = funcs.get_any({"max_pool2d_acc", "avg_pool2d_acc"});
    Var ow = out.args()[0], oh = out.args()[1], c = out.args()[2], n = out.args()[3];
    Var plane("plane"), bx("bx"), by("by"), tx("tx"), ty("ty");
    out.fuse(c, n, plane)
        .gpu_tile(ow, oh, bx, by, tx, ty, 32, 8, TailStrategy::GuardWithIf)
        .gpu_blocks(plane);
    acc.compute_at(out, tx);
}

#endif
