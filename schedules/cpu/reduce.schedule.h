// CPU schedule for kiln_reduce (sum, mean or max over the last axis of x[r, c]). Tasks of
// 16 rows; each row's reduction is split into four vectors of partial results (rfactor)
// so the loads stream and four accumulators hide the add latency. max propagates NaN,
// which Halide cannot prove associative: its rows stay serial.
#ifndef KILN_SCHEDULE_CPU_REDUCE_H
#define KILN_SCHEDULE_CPU_REDUCE_H

#include "Halide.h"
#include "schedule_funcs.h"

inline void apply_schedule_kiln_reduce_cpu(::Halide::Pipeline pipeline, ::Halide::Target target) {
    using ::Halide::Func;
    using ::Halide::RVar;
    using ::Halide::TailStrategy;
    using ::Halide::Var;
    kiln::kernels::ScheduleFuncs funcs(pipeline, "kiln_reduce", "schedules/cpu/reduce.schedule.h");
    Func out = funcs.get("out");
    Func acc = funcs.get_any({"sum_acc", "mean_acc", "max_acc"});
    const int vw = target.natural_vector_size<float>();
    Var d0 = out.args()[0], ro("ro"), ri("ri"), lane("lane");
    out.split(d0, ro, ri, 16, TailStrategy::GuardWithIf).parallel(ro);
    acc.compute_at(out, ro);
    RVar r = acc.rvars(0)[0], rvo("rvo"), rvi("rvi");
    try {
        Func partial = acc.update().split(r, rvo, rvi, 4 * vw, TailStrategy::GuardWithIf).rfactor(rvi, lane);
        partial.compute_at(acc, acc.args()[0]).vectorize(lane, vw).unroll(lane);
        partial.update().reorder(lane, rvo).vectorize(lane, vw).unroll(lane);
    } catch (const ::Halide::CompileError&) {
        // Not associative (NaN-propagating max): one serial loop per row.
    }
}

#endif
