// CUDA schedule for kiln_seed: the expression inlines into out; 256 threads per block, one element each.
#ifndef KILN_SCHEDULE_CUDA_SEED
#define KILN_SCHEDULE_CUDA_SEED

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_seed_cuda(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_seed", "schedules/cuda/seed.schedule.h");
    Func out = funcs.get("out");
    Var d0 = out.args()[0], bx("bx"), tx("tx");
    out.gpu_tile(d0, bx, tx, 256, TailStrategy::GuardWithIf);
}

#endif
