#include "lower/default_schedule_cuda.h"

#include "core/log.h"

namespace kiln::cuda_rules {

namespace {

using Halide::Func;
using Halide::TailStrategy;
using Halide::Var;
using Halide::VarOrRVar;

std::vector<Var> pure_vars(const Func& f) { return f.args(); }

// matmul on a GPU: each thread accumulates a register tile of kGpuMatmulRows rows x
// kLanes adjacent columns over all of k: per step of k, one 128-bit load of b (a warp's
// loads are one contiguous 512-byte span) and kGpuMatmulRows loads of a (the same address
// across the warp, a broadcast) feed 32 FMAs. A block of kGpuMatmulThreadsN x
// kGpuMatmulThreadsM threads covers 128 columns x 32 rows. The product is stored
// (acc.in()) and its epilogue reads it back. Tiles are rounded up: matmul clamps its reads.
constexpr int kGpuMatmulRows = 8;
constexpr int kGpuMatmulThreadsN = 32, kGpuMatmulThreadsM = 4;
void schedule_gpu_matmul_accumulator(Func acc) {
  std::vector<Var> v = pure_vars(acc);  // n, m, batch...
  Func out = acc.in();
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), nt("nt"), mt("mt"), nv("nv"), mr("mr");
  out.compute_root()
      .tile(v[0], v[1], no, mo, ni, mi, kLanes * kGpuMatmulThreadsN, kGpuMatmulRows * kGpuMatmulThreadsM,
            TailStrategy::GuardWithIf)
      .split(ni, nt, nv, kLanes)
      .split(mi, mt, mr, kGpuMatmulRows)
      .reorder(nv, mr, nt, mt, no, mo);
  Var blocks = mo;
  for (size_t j = 2; j < v.size(); ++j) {
    Var fused("mof" + std::to_string(j));
    out.fuse(blocks, v[j], fused);
    blocks = fused;
  }
  out.gpu_blocks(no, blocks).gpu_threads(nt, mt).unroll(nv).unroll(mr);
  acc.compute_at(out, nt).bound_extent(v[0], kLanes).bound_extent(v[1], kGpuMatmulRows);
  acc.vectorize(v[0]).unroll(v[1]);
  std::vector<VarOrRVar> order = {v[0], v[1]};
  for (const Halide::RVar& r : acc.rvars(0)) order.push_back(r);
  acc.update().reorder(order).vectorize(v[0]).unroll(v[1]);
  log("schedule", acc.name() + ": gpu register tiles of " + std::to_string(kGpuMatmulRows) + " rows x " +
                      std::to_string(kLanes) + " columns per thread, blocks of " +
                      std::to_string(kGpuMatmulThreadsN) + " x " + std::to_string(kGpuMatmulThreadsM) + " threads");
}

// Everything reduced, on a GPU (a loss's mean): one thread summing millions of elements
// takes seconds. The reduction variables are fused into one and split twice with rfactor:
// kGpuPartials threads each sum a strided slice (adjacent threads read adjacent
// elements), kThreads threads combine those, and one thread adds the last kThreads.
constexpr int kGpuPartials = 1 << 16;
bool schedule_gpu_full_reduction(Func acc) {
  try {
    std::vector<Halide::RVar> r = acc.rvars(0);
    Halide::Stage update = acc.update();
    Halide::RVar all = r[0];
    for (size_t j = 1; j < r.size(); ++j) {
      Halide::RVar fused("rf" + std::to_string(j));
      update.fuse(all, r[j], fused);
      all = fused;
    }
    Halide::RVar ro("ro"), ri("ri"), mo("mo"), mi("mi");
    Var u("u"), w("w"), bx("bx"), tx("tx");
    Func partial = update.split(all, ro, ri, kGpuPartials, TailStrategy::GuardWithIf).rfactor(ri, u);
    partial.compute_root().gpu_tile(u, bx, tx, kThreads, TailStrategy::GuardWithIf);
    partial.update().gpu_tile(u, bx, tx, kThreads, TailStrategy::GuardWithIf);
    Halide::Stage merge = acc.update();
    Func combine = merge.split(acc.rvars(0)[0], mo, mi, kThreads, TailStrategy::GuardWithIf).rfactor(mi, w);
    combine.compute_root().gpu_tile(w, bx, tx, kThreads, TailStrategy::GuardWithIf);
    combine.update().gpu_tile(w, bx, tx, kThreads, TailStrategy::GuardWithIf);
    acc.gpu_single_thread();
    acc.update().gpu_single_thread();
    log("schedule", acc.name() + ": gpu reduction of everything in " + std::to_string(kGpuPartials) + " then " +
                        std::to_string(kThreads) + " partial results");
    return true;
  } catch (const Halide::CompileError& e) {
    // Not provably associative (a NaN-propagating max): one thread does it all.
    log("schedule", acc.name() + ": serial gpu reduction (rfactor impossible: " + e.what() + ")");
    return false;
  }
}

}  // namespace

// GPU outputs: each thread handles kLanes consecutive elements of the innermost dim,
// when its extent is a multiple of that, so loads and stores are 128-bit and provably aligned.
void schedule_output(Func f) {
  std::vector<Var> v = f.args();
  if (!v.empty()) {
    Halide::Expr inner_extent = f.output_buffer().dim(0).extent();
    Var vi("vi");
    Halide::Stage wide = f.specialize(inner_extent % kLanes == 0 && inner_extent >= kLanes * kThreads);
    wide.split(v[0], v[0], vi, kLanes, TailStrategy::RoundUp).vectorize(vi);
    schedule_loops(wide, v);
  }
  schedule_loops(f, v);
}

void schedule_accumulator(Func acc, bool is_matmul) {
  std::vector<Var> v = pure_vars(acc);
  if (v.empty() && acc.has_update_definition() && schedule_gpu_full_reduction(acc)) return;
  if (is_matmul && acc.has_update_definition()) {
    schedule_gpu_matmul_accumulator(acc);
    return;
  }
  schedule_loops(acc, v);
  if (acc.has_update_definition()) schedule_loops(acc.update(), v);
  log("schedule", acc.name() + ": gpu_tile over kept dims, serial reduction per thread");
}

}  // namespace kiln::cuda_rules
