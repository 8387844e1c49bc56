// CPU schedule for kiln_matmul, out[m, n] = a[m, k] b[k, n]. Register tiles of 6 rows x 2
// vectors of columns: twelve accumulator registers (AVX2 has sixteen) live across the
// whole k loop, each a[m, k] broadcast feeds two vector FMAs and each b row vector feeds six.
// Tiles shift inwards at the edges (matmul's reads are clamped, recomputing is harmless);
// tasks are bands of 4 tiles of rows. Matrices smaller than a tile fall back to scalars.
#ifndef KILN_SCHEDULE_CPU_MATMUL_H
#define KILN_SCHEDULE_CPU_MATMUL_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_matmul_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::RVar;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_matmul", "schedules/cpu/matmul.schedule.h");
    Func out = funcs.get("out"), acc = funcs.get("matmul_acc");
    const int vw = target.natural_vector_size<float>();
    const int tile_n = 2 * vw, tile_m = 6;
    Var n = out.args()[0], m = out.args()[1], no("no"), mo("mo"), ni("ni"), mi("mi"), band("band");
    ::Halide::Expr N = out.output_buffer().dim(0).extent(), M = out.output_buffer().dim(1).extent();
    RVar k = acc.rvars(0)[0];
    Var an = acc.args()[0], am = acc.args()[1];

    ::Halide::Stage tiled = out.specialize(N >= tile_n && M >= tile_m);
    tiled.tile(n, m, no, mo, ni, mi, tile_n, tile_m, TailStrategy::ShiftInwards)
        .reorder(ni, mi, no, mo)
        .split(mo, band, mo, 4, TailStrategy::GuardWithIf)
        .parallel(band)
        .vectorize(ni, vw)
        .unroll(ni)
        .unroll(mi);
    acc.compute_at(out, no).vectorize(an, vw).unroll(an).unroll(am);
    acc.update().reorder(an, am, k).vectorize(an, vw).unroll(an).unroll(am);

    // Smaller or thin matrices: one element per tile (the loop names acc is computed at
    // must exist in every specialization), rows in parallel.
    out.tile(n, m, no, mo, ni, mi, 1, 1).parallel(mo);
}

#endif
