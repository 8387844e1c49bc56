// CUDA schedule for kiln_reduce: one thread per row reduces it serially (as kiln's
// default does); blocks of 64 rows. A block-per-row reduction with shuffles is the next step.
#ifndef KILN_SCHEDULE_CUDA_REDUCE
#define KILN_SCHEDULE_CUDA_REDUCE

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_reduce_cuda(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_reduce", "schedules/cuda/reduce.schedule.h");
    Func out = funcs.get("out");
    Func acc = funcs.get_any({"sum_acc", "mean_acc", "max_acc"});
    Var row = acc.args()[0], bx("bx"), tx("tx");
    acc.compute_root().gpu_tile(row, bx, tx, 64, TailStrategy::GuardWithIf);
    acc.update().gpu_tile(row, bx, tx, 64, TailStrategy::GuardWithIf);
    Var d0 = out.args()[0], ox("ox"), otx("otx");
    out.gpu_tile(d0, ox, otx, 256, TailStrategy::GuardWithIf);
}

#endif
