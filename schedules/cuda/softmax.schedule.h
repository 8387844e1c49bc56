// CUDA schedule for kiln_softmax: each row's max and sum of exponentials by one thread
// (blocks of 64 rows), then the output in blocks of 64 columns x 4 rows.
#ifndef KILN_SCHEDULE_CUDA_SOFTMAX
#define KILN_SCHEDULE_CUDA_SOFTMAX

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_softmax_cuda(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_softmax", "schedules/cuda/softmax.schedule.h");
    Func out = funcs.get("out");
    Var bx("bx"), by("by"), tx("tx"), ty("ty");
    for (const char* name : {"softmax_max", "softmax_sum"}) {
        // Defined over (col, row) but read at col 0 only: one thread per row.
        Func stat = funcs.get(name);
        Var c = stat.args()[0], r = stat.args()[1];
        stat.compute_root().gpu_tile(c, r, bx, by, tx, ty, 1, 64, TailStrategy::GuardWithIf);
        stat.update().gpu_tile(c, r, bx, by, tx, ty, 1, 64, TailStrategy::GuardWithIf);
    }
    Var d0 = out.args()[0], d1 = out.args()[1];
    out.gpu_tile(d0, d1, bx, by, tx, ty, 64, 4, TailStrategy::GuardWithIf);
}

#endif
