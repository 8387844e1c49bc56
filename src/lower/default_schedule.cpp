#include "lower/default_schedule.h"

#include <set>

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
// CUDA: threads per block along the innermost dim, and elements per thread for outputs.
constexpr int kGpuThreads = 256;
constexpr int kGpuLanes = 4;
// conv2d register tile on the CPU: vectors of output columns x output channels.
constexpr int kConvTileVectors = 2;
constexpr int kConvTileChannels = 4;

// Vectorization uses ShiftInwards under a size specialization rather than GuardWithIf:
// Halide's predicated (GuardWithIf) vector path mishandles some IEEE special values
// (log(+inf) came out finite), and overlapping the last vector is cheaper anyway.
void schedule_cpu_output(Func f, int width) {
  std::vector<Var> v = f.args();
  const int r = int(v.size());
  if (r == 0) return;
  Halide::Expr inner_extent = f.output_buffer().dim(0).extent();
  if (r == 1) {
    Var t("t"), i("i");
    f.specialize(inner_extent >= 2 * kCpuTaskElements)
        .split(v[0], t, i, kCpuTaskElements, TailStrategy::ShiftInwards)
        .parallel(t)
        .vectorize(i, width);
    f.specialize(inner_extent >= width).vectorize(v[0], width, TailStrategy::ShiftInwards);
    return;
  }
  Var outer = v[1];
  for (int j = 2; j < r; ++j) {
    Var fused("f" + std::to_string(j));
    f.fuse(outer, v[size_t(j)], fused);
    outer = fused;
  }
  f.parallel(outer);
  f.specialize(inner_extent >= width).vectorize(v[0], width, TailStrategy::ShiftInwards);
}

template <class StageT>
void schedule_gpu_loops(StageT stage, const std::vector<Var>& v) {
  const int r = int(v.size());
  Var bx("bx"), by("by"), tx("tx"), ty("ty");
  if (r == 0) {
    stage.gpu_single_thread();
  } else if (r == 1) {
    stage.gpu_tile(v[0], bx, tx, kGpuThreads, TailStrategy::GuardWithIf);
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

// GPU outputs: each thread handles kGpuLanes consecutive elements of the innermost dim,
// when its extent is a multiple of that, so loads and stores are 128-bit and provably aligned.
void schedule_gpu_output(Func f) {
  std::vector<Var> v = f.args();
  if (!v.empty()) {
    Halide::Expr inner_extent = f.output_buffer().dim(0).extent();
    Var vi("vi");
    Halide::Stage wide = f.specialize(inner_extent % kGpuLanes == 0 && inner_extent >= kGpuLanes * kGpuThreads);
    wide.split(v[0], v[0], vi, kGpuLanes, TailStrategy::RoundUp).vectorize(vi);
    schedule_gpu_loops(wide, v);
  }
  schedule_gpu_loops(f, v);
}

void schedule_output(Func f, const Halide::Target& target) {
  if (target.has_gpu_feature()) {
    schedule_gpu_output(f);
  } else {
    schedule_cpu_output(f, std::max(1, target.natural_vector_size(f.type())));
  }
}

// conv2d (see ops/conv.cpp): its accumulator acc(ow, o, oh, n) and its zero-padded input.
// Register tiles of output columns (vectorized) x output channels (unrolled) accumulate
// over the whole window and all input channels in registers, so each input load feeds
// several channels. Tiles are rounded up at the edges: conv2d clamps every read, so
// computing past the end is safe. Each task (one output row) pads just the input rows it
// reads, so the padded copy stays in cache and needs no large allocation.
bool has_prefix(const Func& f, const char* prefix) { return f.name().rfind(prefix, 0) == 0; }
bool is_conv_accumulator(const Func& f) { return has_prefix(f, "conv2d_acc") && f.args().size() == 4; }
bool is_conv_padded_input(const Func& f) { return has_prefix(f, "conv2d_pad"); }

void schedule_conv_accumulator(Func acc, const Halide::Target& target) {
  std::vector<Var> v = pure_vars(acc);  // ow, o, oh, n
  const int vw = std::max(1, target.natural_vector_size(acc.type()));
  const int tile_w = kConvTileVectors * vw, tile_o = kConvTileChannels;
  Func tiled = acc.in();
  Var wo("wo"), wi("wi"), co("co"), ci("ci"), rows("rows");
  // Channel tiles innermost: the tile's input columns stay in L1 across all of them.
  tiled.compute_root()
      .split(v[0], wo, wi, tile_w, TailStrategy::RoundUp)
      .split(v[1], co, ci, tile_o, TailStrategy::RoundUp)
      .reorder(wi, ci, co, wo, v[2], v[3])
      .fuse(v[2], v[3], rows)
      .parallel(rows)
      .vectorize(wi, vw)
      .unroll(wi)
      .unroll(ci);
  acc.compute_at(tiled, co).vectorize(v[0], vw).unroll(v[0]).unroll(v[1]);
  std::vector<VarOrRVar> order = {v[0], v[1]};
  for (const Halide::RVar& r : acc.rvars(0)) order.push_back(r);
  order.push_back(v[2]);
  order.push_back(v[3]);
  acc.update().reorder(order).vectorize(v[0], vw).unroll(v[0]).unroll(v[1]);
  for (const auto& [name, f] : Halide::Internal::find_direct_calls(acc.function())) {
    Func pad(f);
    if (!is_conv_padded_input(pad)) continue;
    pad.compute_at(tiled, rows).vectorize(pad.args()[0], vw, TailStrategy::GuardWithIf);
  }
  log("schedule", acc.name() + ": register tiles of " + std::to_string(tile_w) + " columns x " +
                      std::to_string(tile_o) + " channels, parallel over rows, input padded per row");
}

// matmul (see ops/linalg.cpp): its accumulator acc(n, m, batch...) over k. Register tiles
// of tile_m rows x tile_n columns (a few vectors) accumulate over all of k in registers:
// per k, tile_n / vw vector loads of b and tile_m broadcasts of a feed tile_m * tile_n / vw
// FMAs. Row tiles are grouped into blocks so that one column panel of b (k x tile_n) is
// reused from L2 by every row tile of the block, and the block's rows of a stay in L2 across
// all column panels. Tiles are rounded up at the edges: matmul clamps its reads, so
// computing past the end is safe.
constexpr int kMatmulTileVectors = 2;
constexpr int kMatmulTileRows = 6;
constexpr int kMatmulBlockTiles = 8;
bool is_matmul_accumulator(const Func& f) { return has_prefix(f, "matmul_acc") && f.args().size() >= 2; }

void schedule_matmul_accumulator(Func acc, const Halide::Target& target) {
  std::vector<Var> v = pure_vars(acc);  // n, m, batch...
  const int vw = std::max(1, target.natural_vector_size(acc.type()));
  const int tile_n = kMatmulTileVectors * vw, tile_m = kMatmulTileRows;
  Func tiled = acc.in();
  Var no("no"), ni("ni"), mo("mo"), mi("mi"), mb("mb"), mt("mt");
  tiled.compute_root()
      .split(v[0], no, ni, tile_n, TailStrategy::RoundUp)
      .split(v[1], mo, mi, tile_m, TailStrategy::RoundUp)
      .split(mo, mb, mt, kMatmulBlockTiles, TailStrategy::GuardWithIf)
      .reorder(ni, mi, mt, no, mb);
  Var task = mb;
  for (size_t j = 2; j < v.size(); ++j) {
    Var fused("mbf" + std::to_string(j));
    tiled.fuse(task, v[j], fused);
    task = fused;
  }
  tiled.parallel(task).vectorize(ni, vw).unroll(ni).unroll(mi);
  acc.compute_at(tiled, mt).vectorize(v[0], vw).unroll(v[0]).unroll(v[1]);
  std::vector<VarOrRVar> order = {v[0], v[1]};
  for (const Halide::RVar& r : acc.rvars(0)) order.push_back(r);
  for (size_t j = 2; j < v.size(); ++j) order.push_back(v[j]);
  acc.update().reorder(order).vectorize(v[0], vw).unroll(v[0]).unroll(v[1]);
  // Each column panel of the right operand (tile_n columns x all of k) is copied once per
  // block into a contiguous buffer: the tiles then stream it linearly instead of striding a
  // whole row of b per k (which defeats the prefetcher and the TLB).
  for (const auto& [name, f] : Halide::Internal::find_direct_calls(acc.function())) {
    Func panel(f);
    if (!has_prefix(panel, "matmul_b_panel")) continue;
    panel.compute_at(tiled, no).vectorize(panel.args()[0], vw);
  }
  log("schedule", acc.name() + ": register tiles of " + std::to_string(tile_m) + " rows x " +
                      std::to_string(tile_n) + " columns, blocks of " + std::to_string(kMatmulBlockTiles) +
                      " row tiles in parallel");
}

// A reduction along rows (softmax's sum, layer norm's moments): the innermost reduction
// variable is split into vectors of partial results (rfactor), so its body (an exp, a
// square) runs vectorized, then the vector is reduced. Skipped where Halide cannot prove
// the update associative (NaN-propagating max and min).
void vectorize_row_reduction(Func acc, const Halide::Target& target) {
  std::vector<Halide::RVar> rvars = acc.rvars(0);
  if (rvars.empty() || acc.outputs() != 1) return;  // tuple reductions (argmax) stay serial
  const int vw = std::max(1, target.natural_vector_size(acc.type()));
  Halide::RVar ro("rvo"), ri("rvi");
  Var u("lane");
  try {
    Func partial = acc.update().split(rvars[0], ro, ri, vw, TailStrategy::GuardWithIf).rfactor(ri, u);
    partial.compute_at(acc, pure_vars(acc).back()).vectorize(u);
    partial.update().reorder(u, ro).vectorize(u);
    log("schedule", acc.name() + ": row reduction in vectors of " + std::to_string(vw) + " partial results");
  } catch (const Halide::CompileError& e) {
    log("schedule", acc.name() + ": serial row reduction (rfactor impossible: " + e.what() + ")");
  }
}

// Everything reduced, on a GPU (a loss's mean): one thread summing millions of elements
// takes seconds. The reduction variables are fused into one and split twice with rfactor:
// kGpuPartials threads each sum a strided slice (adjacent threads read adjacent
// elements), kGpuThreads threads combine those, and one thread adds the last kGpuThreads.
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
    partial.compute_root().gpu_tile(u, bx, tx, kGpuThreads, TailStrategy::GuardWithIf);
    partial.update().gpu_tile(u, bx, tx, kGpuThreads, TailStrategy::GuardWithIf);
    Halide::Stage merge = acc.update();
    Func combine = merge.split(acc.rvars(0)[0], mo, mi, kGpuThreads, TailStrategy::GuardWithIf).rfactor(mi, w);
    combine.compute_root().gpu_tile(w, bx, tx, kGpuThreads, TailStrategy::GuardWithIf);
    combine.update().gpu_tile(w, bx, tx, kGpuThreads, TailStrategy::GuardWithIf);
    acc.gpu_single_thread();
    acc.update().gpu_single_thread();
    log("schedule", acc.name() + ": gpu reduction of everything in " + std::to_string(kGpuPartials) + " then " +
                        std::to_string(kGpuThreads) + " partial results");
    return true;
  } catch (const Halide::CompileError& e) {
    // Not provably associative (a NaN-propagating max): one thread does it all.
    log("schedule", acc.name() + ": serial gpu reduction (rfactor impossible: " + e.what() + ")");
    return false;
  }
}

// A reduction accumulator: its own loop nest; the update parallel over kept dims, or
// split with rfactor when everything is reduced (on the CPU).
void schedule_accumulator(const StageInfo& stage, const Halide::Target& target) {
  Func acc = stage.func;
  // On the CPU conv2d's padded input is computed per task of its convolution.
  if (!target.has_gpu_feature() && is_conv_padded_input(acc)) return;
  acc.compute_root();
  if (stage.serial) return;
  std::vector<Var> v = pure_vars(acc);
  if (target.has_gpu_feature()) {
    if (v.empty() && acc.has_update_definition() && schedule_gpu_full_reduction(acc)) return;
    schedule_gpu_loops(acc, v);
    if (acc.has_update_definition()) schedule_gpu_loops(acc.update(), v);
    log("schedule", acc.name() + ": gpu_tile over kept dims, serial reduction per thread");
    return;
  }
  if (!acc.has_update_definition()) return;
  if (is_conv_accumulator(acc)) {
    schedule_conv_accumulator(acc, target);
    return;
  }
  if (is_matmul_accumulator(acc)) {
    schedule_matmul_accumulator(acc, target);
    return;
  }
  Halide::Stage update = acc.update();
  if (stage.pure_innermost && v.size() == 1) {
    // A column reduction (sum over rows): tasks of contiguous columns, each walking the
    // reduction with the columns vectorized innermost.
    const int vw = std::max(1, target.natural_vector_size(acc.type()));
    Var t("t"), i("i");
    acc.vectorize(v[0], vw, TailStrategy::GuardWithIf);
    std::vector<VarOrRVar> order = {i};
    for (const Halide::RVar& r : acc.rvars(0)) order.push_back(r);
    order.push_back(t);
    update.split(v[0], t, i, 16 * vw, TailStrategy::GuardWithIf).reorder(order).parallel(t).vectorize(i, vw);
    log("schedule", acc.name() + ": column reduction, tasks of " + std::to_string(16 * vw) + " columns");
    return;
  }
  if (!v.empty()) {
    // Tasks split the outermost kept dim.
    acc.parallel(v.back());
    if (stage.pure_innermost && v.size() >= 2) {
      // for rows: for k: for columns (vectorized): acc(col, row) += a(k, row) * b(col, k)
      std::vector<VarOrRVar> order = {v[0]};
      for (const Halide::RVar& r : acc.rvars(0)) order.push_back(r);
      for (size_t j = 1; j < v.size(); ++j) order.push_back(v[j]);
      update.reorder(order);
      update.vectorize(v[0], std::max(1, target.natural_vector_size(acc.type())), TailStrategy::GuardWithIf);
      acc.vectorize(v[0], std::max(1, target.natural_vector_size(acc.type())), TailStrategy::GuardWithIf);
    }
    update.parallel(v.back());
    if (!stage.pure_innermost) vectorize_row_reduction(acc, target);
    log("schedule", acc.name() + ": update parallel over the outermost kept dim");
    return;
  }
  std::vector<Halide::RVar> rvars = acc.rvars(0);
  if (rvars.empty()) return;
  // Everything is reduced: partial results over chunks of the outermost reduction
  // variable, in parallel, then a short serial combine.
  Halide::RVar ro("ro"), ri("ri");
  Var u("u");
  update.split(rvars.back(), ro, ri, 1 << 13);
  try {
    Func partial = update.rfactor(ro, u);
    partial.compute_root().update().parallel(u);
    log("schedule", acc.name() + ": rfactor over chunks of 8192, parallel partial results");
  } catch (const Halide::CompileError& e) {
    // Halide could not prove the update associative (e.g. a NaN-propagating max).
    log("schedule", acc.name() + ": serial reduction (rfactor impossible: " + e.what() + ")");
  }
}

}  // namespace

void apply_default_schedule(LoweredGraph& lowered, const Halide::Target& target) {
  for (const StageInfo& s : lowered.stages) schedule_accumulator(s, target);
  // A value that feeds several contractions (a ResNet block's input feeds the main and the
  // downsample convolutions) is listed once per use but scheduled once; outputs get
  // their own schedule below.
  std::set<std::string> scheduled;
  for (const Func& out : lowered.outputs) scheduled.insert(out.name());
  for (Func& f : lowered.contraction_operands) {
    if (!scheduled.insert(f.name()).second) continue;
    f.compute_root();
    std::vector<Var> v = pure_vars(f);
    if (target.has_gpu_feature()) {
      schedule_gpu_loops(f, v);
    } else if (!v.empty()) {
      f.parallel(v.back());
      if (v.size() >= 2) f.vectorize(v[0], std::max(1, target.natural_vector_size(f.type())), TailStrategy::GuardWithIf);
    }
    log("schedule", f.name() + ": materialized (feeds a contraction)");
  }
  for (Func& out : lowered.outputs) {
    schedule_output(out, target);
    log("schedule", out.name() + (target.has_gpu_feature() ? ": gpu_tile" : ": vectorized, parallel"));
  }
}

}  // namespace kiln
