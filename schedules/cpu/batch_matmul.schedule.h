// CPU schedule for kiln_batch_matmul, out[i, m, n] = a[i, m, k] b[i, k, n]: matmul's
// register tiles (6 rows x 2 vectors, see matmul.schedule.h) in each batch, tasks over
// (batch, band of rows).
#ifndef KILN_SCHEDULE_CPU_BATCH_MATMUL_H
#define KILN_SCHEDULE_CPU_BATCH_MATMUL_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_batch_matmul_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::RVar;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_batch_matmul", "schedules/cpu/batch_matmul.schedule.h");
    Func out = funcs.get("out"), acc = funcs.get("matmul_acc");
    const int vw = target.natural_vector_size<float>();
    const int tile_n = 2 * vw, tile_m = 6;
    Var n = out.args()[0], m = out.args()[1], b = out.args()[2];
    Var no("no"), mo("mo"), ni("ni"), mi("mi"), band("band"), task("task");
    ::Halide::Expr N = out.output_buffer().dim(0).extent(), M = out.output_buffer().dim(1).extent();
    RVar k = acc.rvars(0)[0];
    Var an = acc.args()[0], am = acc.args()[1];

    ::Halide::Stage tiled = out.specialize(N >= tile_n && M >= tile_m);
    tiled.tile(n, m, no, mo, ni, mi, tile_n, tile_m, TailStrategy::ShiftInwards)
        .reorder(ni, mi, no, mo, b)
        .split(mo, band, mo, 4, TailStrategy::GuardWithIf)
        .fuse(band, b, task)
        .parallel(task)
        .vectorize(ni, vw)
        .unroll(ni)
        .unroll(mi);
    acc.compute_at(out, no).vectorize(an, vw).unroll(an).unroll(am);
    acc.update().reorder(an, am, k).vectorize(an, vw).unroll(an).unroll(am);

    // Matrices smaller than a tile: one element per tile, (row, batch) in parallel.
    out.tile(n, m, no, mo, ni, mi, 1, 1).fuse(mo, b, task).parallel(task);
}

#endif
