// kiln's CUDA scheduling rules (default_schedule.h dispatches to them): blocks and
// threads over each output, register tiles for matmul, rfactor trees for reductions.
// Private to src/lower.
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

namespace kiln::cuda_rules {

// Threads per block along the innermost dim, and elements per thread for outputs.
constexpr int kThreads = 256;
constexpr int kLanes = 4;

// Blocks and threads over the pure dims `v` (innermost first) of a Func or a Stage.
template <class StageT>
void schedule_loops(StageT stage, const std::vector<Halide::Var>& v) {
  const int r = int(v.size());
  using Halide::Var;
  using Halide::TailStrategy;
  Var bx("bx"), by("by"), tx("tx"), ty("ty");
  if (r == 0) {
    stage.gpu_single_thread();
  } else if (r == 1) {
    stage.gpu_tile(v[0], bx, tx, kThreads, TailStrategy::GuardWithIf);
  } else {
    Var outer = v[1];
    for (int j = 2; j < r; ++j) {
      Var fused("f" + std::to_string(j));
      stage.fuse(outer, v[size_t(j)], fused);
      outer = fused;
    }
    // The block dims fused into x: a grid holds 2^31 - 1 blocks in x, 65535 in y.
    Var b("b");
    stage.tile(v[0], outer, bx, by, tx, ty, 32, 8, TailStrategy::GuardWithIf)
        .fuse(bx, by, b)
        .gpu_blocks(b)
        .gpu_threads(tx, ty);
  }
}

// An output: kLanes elements per thread where the innermost extent allows 128-bit access.
void schedule_output(Halide::Func f);
// A reduction's accumulator (already compute_root): a register-tiled matmul, a tree over
// everything reduced, or a thread per kept element.
void schedule_accumulator(Halide::Func acc, bool is_matmul);

}  // namespace kiln::cuda_rules
