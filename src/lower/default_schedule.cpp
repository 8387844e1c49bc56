#include "lower/default_schedule.h"

#include "core/log.h"

namespace kiln {

namespace {

using Halide::Func;
using Halide::TailStrategy;
using Halide::Var;
using Halide::VarOrRVar;

// Pure dims of `f`, innermost first.
std::vector<Var> pure_vars(const Func& f) { return f.args(); }

// Elements per parallel task on the CPU: large enough to amortize task overhead.
constexpr int kCpuTaskElements = 1 << 14;

template <class StageT>
void schedule_cpu_loops(StageT stage, const std::vector<Var>& v, int width) {
  const int r = int(v.size());
  if (r == 0) return;
  if (r == 1) {
    Var t("t"), i("i");
    stage.split(v[0], t, i, kCpuTaskElements, TailStrategy::GuardWithIf)
        .parallel(t)
        .vectorize(i, width);
    return;
  }
  stage.vectorize(v[0], width, TailStrategy::GuardWithIf);
  Var outer = v[1];
  for (int j = 2; j < r; ++j) {
    Var fused("f" + std::to_string(j));
    stage.fuse(outer, v[size_t(j)], fused);
    outer = fused;
  }
  stage.parallel(outer);
}

template <class StageT>
void schedule_gpu_loops(StageT stage, const std::vector<Var>& v) {
  const int r = int(v.size());
  Var bx("bx"), by("by"), tx("tx"), ty("ty");
  if (r == 0) {
    stage.gpu_single_thread();
  } else if (r == 1) {
    stage.gpu_tile(v[0], bx, tx, 256, TailStrategy::GuardWithIf);
  } else {
    Var outer = v[1];
    for (int j = 2; j < r; ++j) {
      Var fused("f" + std::to_string(j));
      stage.fuse(outer, v[size_t(j)], fused);
      outer = fused;
    }
    stage.gpu_tile(v[0], outer, bx, by, tx, ty, 32, 8, TailStrategy::GuardWithIf);
  }
}

void schedule_root(Func f, const Halide::Target& target) {
  const int width = std::max(1, target.natural_vector_size(f.type()));
  if (target.has_gpu_feature()) {
    schedule_gpu_loops(f, pure_vars(f));
  } else {
    schedule_cpu_loops(f, pure_vars(f), width);
  }
}

// A reduction accumulator: its own loop nest; the update parallel over kept dims, or
// split with rfactor when everything is reduced (on the CPU).
void schedule_accumulator(Func acc, const Halide::Target& target) {
  acc.compute_root();
  schedule_root(acc, target);
  if (!acc.has_update_definition()) return;
  std::vector<Var> v = pure_vars(acc);
  Halide::Stage update = acc.update();
  std::vector<Halide::RVar> rvars = acc.rvars(0);
  if (target.has_gpu_feature()) {
    schedule_gpu_loops(update, v);
    log("schedule", acc.name() + ": gpu_tile over kept dims, serial reduction per thread");
    return;
  }
  if (!v.empty()) {
    Var outer = v.back();
    for (int j = int(v.size()) - 2; j >= 0; --j) {
      Var fused("u" + std::to_string(j));
      update.fuse(v[size_t(j)], outer, fused);
      outer = fused;
    }
    update.parallel(outer);
    log("schedule", acc.name() + ": update parallel over kept dims");
    return;
  }
  if (rvars.empty()) return;
  // Everything is reduced: partial results over chunks of the outermost reduction
  // variable, in parallel, then a short serial combine.
  Halide::RVar ro("ro"), ri("ri");
  Var u("u");
  update.split(rvars.back(), ro, ri, 1 << 13);
  Func partial = update.rfactor(ro, u);
  partial.compute_root().update().parallel(u);
  log("schedule", acc.name() + ": rfactor over chunks of 8192, parallel partial sums");
}

}  // namespace

void apply_default_schedule(LoweredGraph& lowered, const Halide::Target& target) {
  for (Func& s : lowered.stages) schedule_accumulator(s, target);
  for (Func& out : lowered.outputs) {
    schedule_root(out, target);
    log("schedule", out.name() + (target.has_gpu_feature() ? ": gpu_tile" : ": vectorized, parallel"));
  }
}

}  // namespace kiln
