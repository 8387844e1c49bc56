// kiln's hand-written scheduling rules: the CPU rules, and the dispatch between them and
// the CUDA rules (default_schedule_cuda.cpp).
#include "lower/default_schedule.h"

#include <set>

#include "lower/default_schedule_cuda.h"
#include "ops/op.h"

#include "core/error.h"
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

void schedule_output(Func f, const Halide::Target& target) {
  if (target.has_gpu_feature()) {
    cuda_rules::schedule_output(f);
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

void schedule_conv_accumulator(Func acc, const Halide::Target& target, const CpuConvTile& tile) {
  std::vector<Var> v = pure_vars(acc);  // ow, o, oh, n
  const int vw = std::max(1, target.natural_vector_size(acc.type()));
  const int tile_w = tile.vectors * vw, tile_o = tile.channels;
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
// FMAs. Row tiles are grouped into bands (CpuMatmulTasks) so that one column tile of b
// (k x tile_n) is reused from L2 by every row tile of the band, and the band's rows of a
// stay in L2 across its column tiles. Tiles are rounded up at the edges: matmul clamps
// its reads, so computing past the end is safe.
// Vectors of columns per register tile: the 6 x 4 = 24 accumulators, 4 vectors of b and
// a broadcast fill AVX-512's (and NEON's) 32 vector registers; AVX2's 16 hold 6 x 2. (On
// the 2-core Xeon, 4 vectors took the 1024x1024x4096 MLP train step from 231 to 204 ms.)
int matmul_tile_vectors(const Halide::Target& target) {
  const bool x86_without_avx512 = target.arch == Halide::Target::X86 && !target.has_feature(Halide::Target::AVX512);
  return x86_without_avx512 ? 2 : 4;
}
constexpr int kCpuMatmulTileRows = 6, kCpuMatmulMaxTileRows = 12;
constexpr int64_t kPackTaskBytes = 32 * 1024;  // the least a task of b's packing copies
bool is_matmul_accumulator(const Func& f) { return has_prefix(f, "matmul_acc") && f.args().size() >= 2; }

}  // namespace

bool matmul_reads_b_in_place(const Func& acc) {
  using Halide::Internal::Call;
  for (const auto& [name, f] : Halide::Internal::find_direct_calls(acc.function())) {
    if (!has_prefix(Func(f), "matmul_b_panel")) continue;
    // b_panel(j, k, p, batch...) = b(clamp(p * panel + j), k, batch...) (ops/linalg.cpp).
    const std::vector<std::string> args = f.args();
    const Call* call = f.definition().values()[0].as<Call>();
    if (!call || call->args.size() + 1 != args.size()) return false;
    auto is_var = [](const Halide::Expr& e, const std::string& v) {
      const auto* var = e.as<Halide::Internal::Variable>();
      return var && var->name == v;
    };
    for (size_t i = 1; i < call->args.size(); ++i) {
      if (!is_var(call->args[i], args[i == 1 ? 1 : i + 1])) return false;  // k, then the batch dims
    }
    // Down identity wrappers (a Func defined as another's value at its own point) to an
    // image: an input or a constant.
    while (call->call_type == Call::Halide) {
      const Halide::Internal::Function g(call->func);
      if (g.has_update_definition() || g.definition().values().size() != 1) return false;
      const Call* inner = algo::through_opaque_read(g.definition().values()[0]).as<Call>();
      if (!inner || inner->args.size() != g.args().size()) return false;
      for (size_t i = 0; i < inner->args.size(); ++i) {
        if (!is_var(inner->args[i], g.args()[i])) return false;
      }
      call = inner;
    }
    return call->call_type == Call::Image;
  }
  return false;
}

CpuMatmulTile cpu_matmul_tile(const Halide::Target& target, Halide::Type type, int64_t columns) {
  const int vw = std::max(1, target.natural_vector_size(type));
  const int most = matmul_tile_vectors(target);
  CpuMatmulTile t{most, kCpuMatmulTileRows};
  if (columns > 0) t.vectors = int(std::clamp<int64_t>((columns + vw - 1) / vw, 1, most));
  t.rows = std::min(kCpuMatmulMaxTileRows, kCpuMatmulTileRows * most / t.vectors);
  return t;
}

namespace {

// The loops of the Func whose register tiles compute the matmul: tiles of tile_m rows x
// tile_n columns (within column panels when a panel holds several tiles), row tiles in
// bands, column tiles (or panels) in groups, band x group (x batch) the parallel tasks.
// Returns the loop at which a tile is computed.
Var tile_matmul_loops(Func s, const std::vector<Var>& v, int vw, int tile_n, int tile_m, int panel,
                      const CpuMatmulTasks& tasks, TailStrategy tail) {
  Var no("no"), ni("ni"), mo("mo"), mi("mi"), mb("mb"), mt("mt"), np("np"), nw("nw"), ng("ng"), task("task");
  // The outermost column loop, which column groups split: the tiles, or the panels.
  Var columns = no;
  int group = tasks.column_tiles;
  if (tile_n < panel) {
    // A tile's panel index (n / panel) is then its panel loop, and the index math affine.
    s.split(v[0], np, nw, panel, tail).split(nw, no, ni, tile_n, tail);
    columns = np;
    group = (tasks.column_tiles * tile_n + panel - 1) / panel;
  } else {
    s.split(v[0], no, ni, tile_n, tail);
  }
  s.split(v[1], mo, mi, tile_m, tail).split(mo, mb, mt, tasks.band, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order = {ni, mi, mt, no};
  if (tile_n < panel) order.push_back(np);
  if (group > 0) {
    s.split(columns, ng, columns, group, TailStrategy::GuardWithIf);
    order.push_back(ng);
  }
  order.push_back(mb);
  s.reorder(order);
  if (group > 0) {
    s.fuse(ng, mb, task);
  } else {
    task = mb;
  }
  for (size_t j = 2; j < v.size(); ++j) {
    Var fused("mbf" + std::to_string(j));
    s.fuse(task, v[j], fused);
    task = fused;
  }
  s.parallel(task).vectorize(ni, vw).unroll(ni).unroll(mi);
  return mt;
}

// Whether a matmul can be computed per tile of its epilogue host. The host's tiles cannot
// be rounded up past its edges (the epilogue may read other inputs there), and a column
// tile that does not start on a panel of b would gather instead of loading vectors: so
// the host needs a static column count that whole tiles and panels divide. Rows are
// guarded (they are unrolled, not vectorized).
bool epilogue_host_fits(const LoweredGraph::EpilogueHost& host, const Func& acc, const Halide::Target& target) {
  const int vw = std::max(1, target.natural_vector_size(acc.type()));
  const int64_t unit = std::max(cpu_matmul_tile(target, acc.type(), host.columns).vectors * vw, 64 / acc.type().bytes());
  return host.columns > 0 && host.columns % unit == 0;
}

// `host`: the stored value that computes the matmul per tile, its pointwise epilogue
// inlined (see LoweredGraph::epilogue_hosts); without one, a wrapper of the accumulator.
void schedule_matmul_accumulator(Func acc, const Halide::Target& target, const Func* host, const CpuMatmulTile& tile,
                                 const CpuMatmulTasks& tasks) {
  std::vector<Var> v = pure_vars(acc);  // n, m, batch...
  const int vw = std::max(1, target.natural_vector_size(acc.type()));
  const int tile_n = tile.vectors * vw, tile_m = tile.rows;
  const int panel = 64 / acc.type().bytes();  // b_panel's width (ops/linalg.cpp)
  Func tiled = host ? *host : acc.in();
  tiled.compute_root();
  // Without a host, matmul clamps its reads, so the wrapper computes whole tiles past the
  // edges; a host's columns are whole tiles (epilogue_host_fits) and its rows guarded.
  const TailStrategy tail = host ? TailStrategy::GuardWithIf : TailStrategy::RoundUp;
  Var mt = tile_matmul_loops(tiled, host ? tiled.args() : v, vw, tile_n, tile_m, panel, tasks, tail);
  // The accumulator covers whole tiles (rounded up, so its loops have constant extents
  // even where the host's edge tiles are guarded): one tile in registers per step of k.
  Var ao("ao"), ai("ai"), bo("bo"), bi("bi");
  acc.compute_at(tiled, mt)
      .split(v[0], ao, ai, tile_n, TailStrategy::RoundUp)
      .split(v[1], bo, bi, tile_m, TailStrategy::RoundUp)
      .reorder(ai, bi, ao, bo)
      .vectorize(ai, vw)
      .unroll(ai)
      .unroll(bi);
  // One register tile, even where the host's last row tile is guarded: a constant size
  // keeps it on the stack (and in registers) instead of a heap block per tile.
  acc.bound_storage(v[0], tile_n).bound_storage(v[1], tile_m);
  std::vector<VarOrRVar> order = {ai, bi};
  for (const Halide::RVar& r : acc.rvars(0)) order.push_back(r);
  order.push_back(ao);
  order.push_back(bo);
  for (size_t j = 2; j < v.size(); ++j) order.push_back(v[j]);
  acc.update()
      .split(v[0], ao, ai, tile_n, TailStrategy::RoundUp)
      .split(v[1], bo, bi, tile_m, TailStrategy::RoundUp)
      .reorder(order)
      .vectorize(ai, vw)
      .unroll(ai)
      .unroll(bi);
  // The right operand is packed once, at root, into contiguous column panels: the tiles
  // then stream each panel linearly instead of striding a whole row of b per k (which
  // defeats the prefetcher and the TLB), and a transposed or computed b is read once.
  for (const auto& [name, f] : Halide::Internal::find_direct_calls(acc.function())) {
    Func packed(f);
    if (!has_prefix(packed, "matmul_b_panel")) continue;
    if (!tasks.pack_b) continue;  // inlined: the tiles read b in place
    std::vector<Var> pv = packed.args();  // j, k, panel, batch...
    Var panels = pv[2];
    for (size_t j = 3; j < pv.size(); ++j) {
      Var fused("pf" + std::to_string(j));
      packed.fuse(panels, pv[j], fused);
      panels = fused;
    }
    packed.compute_root().vectorize(pv[0], std::min(panel, vw));
    // Tasks of kPackTaskBytes at least: a panel of a short k is a few KB, and tasks that
    // small cost more at the thread pool's lock than their copy (attention's K and V;
    // docs/autoscheduler.md, "What the measurements taught").
    int64_t k = 1;
    for (const Halide::Internal::ReductionVariable& rv : acc.function().update(0).schedule().rvars()) {
      k *= Halide::Internal::as_const_int(rv.extent).value_or(0);
    }
    const int64_t panel_bytes = int64_t(panel) * k * acc.type().bytes();
    const int per_task = panel_bytes > 0 ? int(std::max<int64_t>(1, kPackTaskBytes / panel_bytes)) : 1;
    if (per_task == 1) {
      packed.parallel(panels);
    } else {
      packed.parallel(panels, per_task, TailStrategy::GuardWithIf);
    }
  }
  log("schedule", acc.name() + ": register tiles of " + std::to_string(tile_m) + " rows x " +
                      std::to_string(tile_n) + " columns, tasks of " + std::to_string(tasks.band) + " row tiles x " +
                      (tasks.column_tiles ? std::to_string(tasks.column_tiles) : std::string("all")) +
                      " column tiles, " +
                      (tasks.pack_b ? "b packed in panels of " + std::to_string(panel) + " columns, " : "b read in place, ") +
                      (host ? "computed per tile of " + tiled.name() : std::string("stored")));
}

// A reduction along rows (softmax's sum, layer norm's moments): the innermost reduction
// variable is split into vectors of partial results (rfactor), so its body (an exp, a
// square) runs vectorized, then the vector is reduced, its lanes in a tree. Skipped where
// Halide cannot prove the update associative (NaN-propagating max and min).
// The widest power of two up to `vw` that fits a static `extent` (0: dynamic, any width).
int vector_width_within(int vw, int extent) {
  if (extent <= 0 || extent >= vw) return vw;
  int w = 1;
  while (w * 2 <= extent) w *= 2;
  return w;
}

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
    acc.update().atomic().vectorize(ri);  // the lanes combine in a tree, not one at a time
    log("schedule", acc.name() + ": row reduction in vectors of " + std::to_string(vw) +
                        " partial results, their lanes combined in a tree");
  } catch (const Halide::CompileError& e) {
    log("schedule", acc.name() + ": serial row reduction (rfactor impossible: " + e.what() + ")");
  }
}

// A reduction accumulator: its own loop nest; the update parallel over kept dims, or
// split with rfactor when everything is reduced (on the CPU).
void schedule_accumulator(const StageInfo& stage, const Halide::Target& target, const LoweredGraph& lowered,
                          const CpuContractionChoices& choices = {}) {
  Func acc = stage.func;
  // On the CPU conv2d's padded input is computed per task of its convolution.
  if (!target.has_gpu_feature() && is_conv_padded_input(acc)) return;
  acc.compute_root();
  if (stage.serial) return;
  std::vector<Var> v = pure_vars(acc);
  if (target.has_gpu_feature()) {
    cuda_rules::schedule_accumulator(acc, is_matmul_accumulator(acc));
    return;
  }
  if (!acc.has_update_definition()) return;
  if (is_conv_accumulator(acc)) {
    const int vw = std::max(1, target.natural_vector_size(acc.type()));
    schedule_conv_accumulator(acc, target, choices.conv_tile ? choices.conv_tile(stage, vw) : CpuConvTile{});
    return;
  }
  if (is_matmul_accumulator(acc)) {
    const int vw = std::max(1, target.natural_vector_size(acc.type()));
    const CpuMatmulTile tile = cpu_matmul_tile(target, acc.type(), stage.extents.empty() ? 0 : stage.extents[0]);
    const CpuMatmulTasks tasks = choices.matmul_tasks ? choices.matmul_tasks(stage, vw, tile) : CpuMatmulTasks{};
    auto host = lowered.epilogue_hosts.find(acc.name());
    const bool hosted = host != lowered.epilogue_hosts.end() && epilogue_host_fits(host->second, acc, target);
    schedule_matmul_accumulator(acc, target, hosted ? &host->second.func : nullptr, tile, tasks);
    return;
  }
  Halide::Stage update = acc.update();
  // Vectors no wider than a static innermost extent: Halide places a small constant-size
  // accumulator on the stack, yet still marks its vector accesses aligned (a masked
  // aligned load of a 1-column sum faulted).
  const int innermost = stage.extents.empty() ? 0 : int(std::min<int64_t>(stage.extents[0], 1 << 20));
  const int vw = vector_width_within(std::max(1, target.natural_vector_size(acc.types()[0])), innermost);
  if (stage.pure_innermost && v.size() == 1 && vw > 1) {
    // A column reduction (sum over rows): tasks of contiguous columns, each walking the
    // reduction with the columns vectorized innermost.
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
    if (stage.pure_innermost && v.size() >= 2 && vw > 1) {
      // for rows: for k: for columns (vectorized): acc(col, row) += a(k, row) * b(col, k)
      std::vector<VarOrRVar> order = {v[0]};
      for (const Halide::RVar& r : acc.rvars(0)) order.push_back(r);
      for (size_t j = 1; j < v.size(); ++j) order.push_back(v[j]);
      update.reorder(order);
      update.vectorize(v[0], vw, TailStrategy::GuardWithIf);
      acc.vectorize(v[0], vw, TailStrategy::GuardWithIf);
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

// A value stored at root for the contractions that read it; on a CPU, its outermost
// `unit_outer_dims` dims have extent 1.
void materialize(Func f, const Halide::Target& target, int unit_outer_dims = 0) {
  f.compute_root();
  std::vector<Var> v = pure_vars(f);
  if (target.has_gpu_feature()) {
    cuda_rules::schedule_loops(f, v);
  } else if (has_prefix(f, "permute") && v.size() >= 2) {
    // A transpose, in square blocks: the block's source rows stay in L1 while its
    // columns are gathered, instead of one source line fetched per element.
    const int vw = std::max(1, target.natural_vector_size(f.type()));
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
    f.tile(v[0], v[1], xo, yo, xi, yi, 2 * vw, 2 * vw, TailStrategy::GuardWithIf).vectorize(xi, vw);
    Var outer = yo;
    for (size_t j = 2; j < v.size(); ++j) {
      Var fused("tf" + std::to_string(j));
      f.fuse(outer, v[j], fused);
      outer = fused;
    }
    f.parallel(outer);
  } else if (!v.empty()) {
    // The outermost dim in parallel, fused with the next ones while they hold one task:
    // attention's probabilities, [1, heads, rows, columns], ran serially. (Tasks of fewer
    // elements, such as rows of about 2^14 elements, made resnet18 5-8% slower on 2 cores.)
    Var outer = v.back();
    for (size_t d = v.size() - 1; d >= 2 && unit_outer_dims > 0; --d, --unit_outer_dims) {
      Var fused("sf" + std::to_string(d));
      f.fuse(v[d - 1], outer, fused);
      outer = fused;
    }
    f.parallel(outer);
    if (v.size() >= 2) f.vectorize(v[0], std::max(1, target.natural_vector_size(f.type())), TailStrategy::GuardWithIf);
  }
}

// A stored operand of a vendor stage over its whole static extent. The stage asks for its
// region at run time, so without bounds every loop extent is dynamic: the loops fused into
// a GPU grid then divide by them per element (attention's probabilities on an H100: 2.1 ms
// for one pointwise kernel of 134M elements, integer divisions bound).
void bound_vendor_operand(Func f, const LoweredGraph& lowered) {
  auto it = lowered.operand_extents.find(f.name());
  if (it == lowered.operand_extents.end()) return;
  const std::vector<int64_t>& e = it->second;  // innermost first
  std::vector<Var> v = pure_vars(f);
  if (e.size() != v.size()) return;
  for (int64_t x : e) {
    if (x <= 0) return;
  }
  for (size_t d = 0; d < v.size(); ++d) f.bound(v[d], 0, int(e[d]));
}

// How many of a stored operand's outermost dims have extent 1 (the innermost aside).
int unit_outer_dims(const LoweredGraph& lowered, const Func& f) {
  auto it = lowered.operand_extents.find(f.name());
  if (it == lowered.operand_extents.end()) return 0;
  const std::vector<int64_t>& e = it->second;  // innermost first
  int n = 0;
  for (size_t d = e.size(); d-- > 1 && e[d] == 1;) ++n;
  return n;
}

bool is_cpu_contraction(const StageInfo& s) {
  return !s.serial && s.func.has_update_definition() && (is_conv_accumulator(s.func) || is_matmul_accumulator(s.func));
}

// The Funcs that `consumer` calls and that call `producer`, directly or not (neither of
// the two: find_transitive_calls lists a Func among its own calls).
std::vector<std::string> funcs_between(const Func& producer, const Func& consumer) {
  std::vector<std::string> between;
  for (const auto& [name, f] : Halide::Internal::find_transitive_calls(consumer.function())) {
    if (name != producer.name() && name != consumer.name() &&
        Halide::Internal::find_transitive_calls(f).count(producer.name())) {
      between.push_back(name);
    }
  }
  return between;
}

}  // namespace

autoschedule::FixedFuncs apply_default_cpu_contraction_schedule(LoweredGraph& lowered, const Halide::Target& target,
                                                                const CpuContractionChoices& choices) {
  using autoschedule::Fixed;
  KILN_CHECK(!target.has_gpu_feature(), "the CPU contraction rules were asked to schedule for ", target.to_string());
  autoschedule::FixedFuncs scheduled;
  for (const StageInfo& s : lowered.stages) {
    if (!is_cpu_contraction(s)) continue;
    schedule_accumulator(s, target, lowered, choices);
    scheduled[s.func.name()] = Fixed::OwnLoops;
    // Scheduled with it: matmul's packed panels of b (inlined where b is read in place),
    // conv2d's padded input.
    for (const auto& [name, f] : Halide::Internal::find_direct_calls(s.func.function())) {
      Func callee(f);
      if (has_prefix(callee, "matmul_b_panel")) {
        scheduled[name] = f.schedule().compute_level().var_name().empty() ? Fixed::Inline : Fixed::OwnLoops;
      } else if (is_conv_padded_input(callee)) {
        scheduled[name] = Fixed::OwnLoops;
      }
    }
    auto host = lowered.epilogue_hosts.find(s.func.name());
    if (host != lowered.epilogue_hosts.end() && epilogue_host_fits(host->second, s.func, target)) {
      scheduled[host->second.func.name()] = Fixed::OwnLoops;
      // The accumulator is computed per tile of the host, so every Func between them
      // (the epilogue) stays inlined in it: stored, it would leave no tile loop to
      // compute the accumulator at.
      for (const std::string& name : funcs_between(s.func, host->second.func)) scheduled[name] = Fixed::Inline;
    }
  }
  std::set<std::string> stages, outputs;
  for (const StageInfo& s : lowered.stages) stages.insert(s.func.name());
  for (const Func& out : lowered.outputs) outputs.insert(out.name());
  for (Func& f : lowered.contraction_operands) {
    // Outputs and reductions that feed a contraction are the caller's to schedule.
    if (scheduled.count(f.name()) || outputs.count(f.name()) || stages.count(f.name())) continue;
    if (lowered.cpu_inline_operands.count(f.name())) {
      scheduled[f.name()] = Fixed::Inline;
      log("schedule", f.name() + ": inlined into the contraction (packed, or a view of stored data)");
    } else if (choices.stored_loops_to_caller) {
      f.compute_root();
      scheduled[f.name()] = Fixed::Stored;
      log("schedule", f.name() + ": stored (feeds a contraction); its loops are the caller's");
    } else {
      materialize(f, target, unit_outer_dims(lowered, f));
      scheduled[f.name()] = Fixed::OwnLoops;
      log("schedule", f.name() + ": materialized (feeds a contraction)");
    }
  }
  return scheduled;
}

autoschedule::FixedFuncs apply_default_gpu_matmul_schedule(LoweredGraph& lowered, const Halide::Target& target) {
  using autoschedule::Fixed;
  KILN_CHECK(target.has_gpu_feature(), "the GPU matmul rules were asked to schedule for ", target.to_string());
  autoschedule::FixedFuncs scheduled;
  for (const StageInfo& s : lowered.stages) {
    if (s.serial || !s.func.has_update_definition() || !is_matmul_accumulator(s.func)) continue;
    schedule_accumulator(s, target, lowered);
    scheduled[s.func.name()] = Fixed::OwnLoops;
    // The stored product its epilogue reads (acc.in(), made by the rule).
    scheduled[Func(s.func).in().name()] = Fixed::OwnLoops;
  }
  // What cuBLASLt stages read is stored at root; the Kiln GPU search writes its loops
  // (a pointwise kernel, or one with the row reductions it reads: attention's softmax).
  std::set<std::string> output_names;
  for (const Func& out : lowered.outputs) output_names.insert(out.name());
  for (Func& f : lowered.vendor_operands) {
    if (output_names.count(f.name()) || !scheduled.emplace(f.name(), Fixed::Stored).second) continue;
    bound_vendor_operand(f, lowered);
    f.compute_root();
    log("schedule", f.name() + ": stored (read by cuBLASLt); its loops are the search's");
  }
  if (scheduled.empty()) return scheduled;
  std::set<std::string> stages, outputs;
  for (const StageInfo& s : lowered.stages) stages.insert(s.func.name());
  for (const Func& out : lowered.outputs) outputs.insert(out.name());
  for (Func& f : lowered.contraction_operands) {
    // Stored contiguously, so the products read rows, not a transpose's strides.
    if (scheduled.count(f.name()) || outputs.count(f.name()) || stages.count(f.name())) continue;
    materialize(f, target);
    scheduled[f.name()] = Fixed::OwnLoops;
    log("schedule", f.name() + ": materialized (feeds a contraction)");
  }
  return scheduled;
}

void apply_default_schedule(LoweredGraph& lowered, const Halide::Target& target) {
  for (const StageInfo& s : lowered.stages) schedule_accumulator(s, target, lowered);
  // Epilogue hosts were scheduled with their matmuls (on the CPU).
  std::set<std::string> hosts;
  if (!target.has_gpu_feature()) {
    for (const StageInfo& s : lowered.stages) {
      auto host = lowered.epilogue_hosts.find(s.func.name());
      if (host != lowered.epilogue_hosts.end() && epilogue_host_fits(host->second, s.func, target)) {
        hosts.insert(host->second.func.name());
      }
    }
  }
  // A value that feeds several contractions (a ResNet block's input feeds the main and the
  // downsample convolutions) is listed once per use but scheduled once; outputs get
  // their own schedule below.
  std::set<std::string> scheduled = hosts;
  for (const Func& out : lowered.outputs) scheduled.insert(out.name());
  for (Func& f : lowered.vendor_operands) {
    if (!scheduled.insert(f.name()).second) continue;
    bound_vendor_operand(f, lowered);
    materialize(f, target);
    log("schedule", f.name() + ": materialized (read by cuBLASLt)");
  }
  for (Func& f : lowered.contraction_operands) {
    if (!scheduled.insert(f.name()).second) continue;
    if (!target.has_gpu_feature() && lowered.cpu_inline_operands.count(f.name())) {
      log("schedule", f.name() + ": inlined into the contraction (packed, or a view of stored data)");
      continue;
    }
    materialize(f, target, unit_outer_dims(lowered, f));
    log("schedule", f.name() + ": materialized (feeds a contraction)");
  }
  for (Func& out : lowered.outputs) {
    if (hosts.count(out.name())) continue;
    schedule_output(out, target);
    log("schedule", out.name() + (target.has_gpu_feature() ? ": gpu_tile" : ": vectorized, parallel"));
  }
}

}  // namespace kiln
