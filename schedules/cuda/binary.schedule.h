// CUDA schedule for kiln_binary: the op inlines into out; blocks of 64 columns x 4 rows, a warp
// reading one 128-byte line per input.
#ifndef KILN_SCHEDULE_CUDA_BINARY
#define KILN_SCHEDULE_CUDA_BINARY

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_binary_cuda(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_binary", "schedules/cuda/binary.schedule.h");
    Func out = funcs.get("out");
    Var d0 = out.args()[0], d1 = out.args()[1], bx("bx"), by("by"), tx("tx"), ty("ty");
    out.gpu_tile(d0, d1, bx, by, tx, ty, 64, 4, TailStrategy::GuardWithIf);
}

#endif
