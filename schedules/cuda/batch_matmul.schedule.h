// CUDA schedule for kiln_batch_matmul: per batch, blocks of 32 columns x 32 rows, each thread accumulating
// 4 rows of one column in registers over the whole k loop (one b load feeds four FMAs;
// a warp's b loads are one coalesced 128-byte line).
#ifndef KILN_SCHEDULE_CUDA_BATCH_MATMUL
#define KILN_SCHEDULE_CUDA_BATCH_MATMUL

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_batch_matmul_cuda(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_batch_matmul", "schedules/cuda/batch_matmul.schedule.h");
    Func out = funcs.get("out"), acc = funcs.get("matmul_acc");
    Var n = out.args()[0], m = out.args()[1], mi("mi"), bx("bx"), by("by"), tx("tx"), ty("ty");
    out.split(m, m, mi, 4, TailStrategy::GuardWithIf)
        .gpu_tile(n, m, bx, by, tx, ty, 32, 8, TailStrategy::GuardWithIf)
        .reorder(mi, tx, ty, bx, by)
        .unroll(mi)
        .gpu_blocks(out.args()[2]);
    Var am = acc.args()[1];
    acc.compute_at(out, tx).unroll(am);
    acc.update().reorder(am, acc.rvars(0)[0]).unroll(am);
}

#endif
