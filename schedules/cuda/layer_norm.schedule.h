// CUDA schedule for kiln_layer_norm: each row's sum and centred sum of squares by one
// thread (blocks of 64 rows), then the normalized output in blocks of 64 columns x 4 rows.
#ifndef KILN_SCHEDULE_CUDA_LAYER_NORM
#define KILN_SCHEDULE_CUDA_LAYER_NORM

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_layer_norm_cuda(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_layer_norm", "schedules/cuda/layer_norm.schedule.h");
    Func out = funcs.get("out");
    Var bx("bx"), tx("tx"), by("by"), ty("ty");
    for (const char* name : {"layer_norm_sum", "layer_norm_sumsq"}) {
        Func stat = funcs.get(name);
        Var r = stat.args()[0];
        stat.compute_root().gpu_tile(r, bx, tx, 64, TailStrategy::GuardWithIf);
        stat.update().gpu_tile(r, bx, tx, 64, TailStrategy::GuardWithIf);
    }
    Var d0 = out.args()[0], d1 = out.args()[1];
    out.gpu_tile(d0, d1, bx, by, tx, ty, 64, 4, TailStrategy::GuardWithIf);
}

#endif
