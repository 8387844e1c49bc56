// kiln's GPU search (CUDA targets): every Func is inlined or gets kernels of its own,
// and each kernel's blocks, threads and per-thread work are chosen by scoring a small
// candidate set with the GPU cost model (gpu_cost_model.h):
//
//  - pointwise stages: blocks of tx x ty threads, each thread `e` adjacent elements of
//    the innermost dim as one vector (128-bit loads where the extent allows);
//  - contractions (matmul, batched matmul, conv2d, pooling): each thread accumulates a
//    register tile of r rows x c adjacent columns over the whole reduction, unrolled by
//    `ku` reduction steps so that the loads of several steps are in flight at once;
//    computed per thread of their output, or of a stored copy (Func::in()) when the
//    output reads it in another order;
//  - row reductions (softmax, layer norm, sums over the last axis): T threads per row
//    each reduce a strided slice (adjacent threads read adjacent elements), the T partial
//    results live in shared memory and one thread per row combines them (rfactor);
//  - column reductions: one thread per kept column, serial over the reduction;
//  - everything reduced: partial results over strided slices, twice (rfactor).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "analysis.h"
#include "core/error.h"
#include "core/log.h"
#include "gpu_cost_model.h"
#include "schedule_writer.h"
#include "search.h"
#include "search_skeleton.h"

namespace kiln::autoschedule {

using Halide::TailStrategy;

namespace {

constexpr double kSmemLatency = 30;  // cycles of a shared-memory load
// Steps of a row loop unrolled per thread (row reductions, their outputs, staged rows).
constexpr int kRowUnroll = 4;

double ceil_div(double a, double b) { return std::ceil(a / b); }

// Elements of `bytes` each in one 128-bit vector.
int vector_elems(int bytes) { return std::max(1, 16 / std::max(1, bytes)); }

// SM cycles a warp spends issuing `instructions` of f32 arithmetic.
double fma_cycles(double instructions, const MachineModel& m) {
  return instructions / std::max(1.0, m.gpu_fp32_lanes / 32.0);
}

// SM cycles of a warp-wide load of `bytes_per_thread` from distinct adjacent addresses
// (the L1 moves 128 bytes per cycle); a broadcast (one address) takes one.
double load_cycles(double bytes_per_thread) { return std::max(1.0, bytes_per_thread * 32 / 128); }

// The best-scored (choice, prediction) pair, where a later one must be 0.1% faster to
// win: of near-equal choices the first enumerated is taken.
template <class Choice>
size_t first_best(const std::vector<std::pair<Choice, GpuPrediction>>& scored) {
  size_t b = 0;
  for (size_t i = 1; i < scored.size(); ++i) {
    if (scored[i].second.total_s < scored[b].second.total_s * 0.999) b = i;
  }
  return b;
}

// The Funcs that `what` (a Function's definitions, or some values) calls, directly.
struct HalideCalls : Halide::Internal::IRGraphVisitor {
  std::vector<std::string> names;
  using Halide::Internal::IRGraphVisitor::visit;
  void visit(const Halide::Internal::Call* c) override {
    if (c->call_type == Halide::Internal::Call::Halide) names.push_back(c->name);
    Halide::Internal::IRGraphVisitor::visit(c);
  }
};
std::vector<std::string> halide_calls(const Halide::Internal::Function& f) {
  HalideCalls calls;
  f.accept(&calls);
  return calls.names;
}
std::vector<std::string> halide_calls(const std::vector<Halide::Expr>& values) {
  HalideCalls calls;
  for (const Halide::Expr& v : values) v.accept(&calls);
  return calls.names;
}

using GpuTiling = GpuContractionTiling;

// Of the runner-ups kept per decision, those predicted within 0.1% of each other: two.
constexpr long kTiedAlternatives = 2;

struct GpuSearch : SearchSkeleton<GpuSearch> {
  std::map<std::string, bool> inlined;
  std::map<std::string, double> evaluations;
  std::map<std::string, std::string> at_thread;  // contraction -> the output whose threads compute it
  std::map<std::string, std::string> hosted;     // output -> the contraction it hosts
  std::map<std::string, std::string> at_rows;    // row reduction -> the output whose row blocks compute it

  GpuSearch(const Halide::Pipeline& p, const Halide::Target& t, const MachineModel& mm, const Knobs* k,
            const FixedFuncs* fx)
      : SearchSkeleton(p, t, mm, k, fx) {}

  // ---- knobs ---------------------------------------------------------------------------

  // The choice for `func` among `scored`: the cost model's best, or the knob's (of the
  // kind `field` names) where one is given, scored by `predict`. The others become
  // runner-ups, and the choice a knob of the result.
  template <class T, class Predict>
  std::pair<T, GpuPrediction> choose(const std::string& func, std::vector<std::pair<T, GpuPrediction>> scored,
                                     std::map<std::string, T> Knobs::*field, const Predict& predict) {
    const std::string key = info.key(func);
    std::pair<T, GpuPrediction> chosen = scored[first_best(scored)];
    if (knobs) {
      auto it = (knobs->*field).find(key);
      if (it != (knobs->*field).end()) chosen = {it->second, predict(it->second)};
    }
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto& a, const auto& b) { return a.second.total_s < b.second.total_s; });
    // Choices the model cannot tell apart (a DRAM-bound kernel's block shapes) are left to
    // the machine, but two of them at most: the tuning budget then reaches other choices
    // and other decisions.
    std::vector<double> kept;
    for (const auto& [t, p] : scored) {
      if (t == chosen.first || !p.fits) continue;
      if (kept.size() >= kAlternativesPerDecision) break;
      const auto ties = std::count_if(kept.begin(), kept.end(), [&](double s) { return std::abs(s - p.total_s) <= 1e-3 * s; });
      if (ties >= kTiedAlternatives) continue;
      kept.push_back(p.total_s);
      Knobs change;
      (change.*field)[key] = t;
      result.alternatives.push_back({func, change, p.total_s - chosen.second.total_s});
    }
    (result.knobs.*field)[key] = chosen.first;
    return chosen;
  }

  // Knobs must name decisions of this pipeline, with values a kernel can take: checked
  // after placement (which schedules nothing) and before the first directive, so a stale
  // knob leaves the pipeline untouched.
  void check_knobs() const {
    if (!knobs) return;
    auto func_named = [&](const std::string& key, const char* kind, auto fits) -> const FuncInfo& {
      for (const auto& [name, f] : info.funcs) {
        if (info.key(name) == key && !is_fixed(name) && fits(f)) return f;
      }
      user_error("tuning knobs: ", key, " is not ", kind, " in this pipeline (re-run kiln tune for this pipeline)");
    };
    auto check_threads = [](const std::string& key, int threads) {
      if (threads < 32 || threads > 1024) {
        user_error("tuning knobs: ", key, " asks for blocks of ", threads, " threads; a CUDA block holds 32 to 1024");
      }
    };
    auto check_vector = [](const std::string& key, int e, const FuncInfo& f) {
      const int most = vector_elems(f.bytes);
      if (e < 1 || e > most || (e & (e - 1))) {
        user_error("tuning knobs: ", key, " asks for ", e, " adjacent elements per thread; ", f.name,
                   " takes a power of two from 1 to ", most, " (one 128-bit vector)");
      }
    };
    for (const auto& [key, t] : knobs->gpu_tiles) {
      const FuncInfo& f = func_named(key, "a contraction the GPU search tiles", [](const FuncInfo& f) {
        return f.reduction == ReductionKind::Contraction && f.vars.size() >= 2;
      });
      check_threads(key, t.tx * t.ty);
      check_vector(key, t.cols, f);
      if (t.rows < 1 || t.unroll < 1 || t.tx < 1 || t.ty < 1) {
        user_error("tuning knobs: ", key, "'s rows, threads and unroll must be at least 1");
      }
    }
    for (const auto& [key, t] : knobs->gpu_rows) {
      func_named(key, "a row reduction or an output fused with the row reductions it reads", [&](const FuncInfo& f) {
        return f.reduction == ReductionKind::Row || is_fused_row_host(f.name);
      });
      check_threads(key, t.threads * t.rows);
      if (t.rows < 1 || t.threads < 1) user_error("tuning knobs: ", key, "'s threads and rows must be at least 1");
    }
    for (const auto& [key, t] : knobs->gpu_blocks) {
      const FuncInfo& f = func_named(key, "a Func with a kernel of its own, one thread per point", [&](const FuncInfo& f) {
        return !inlined.at(f.name) && !f.vars.empty() && !at_rows.count(f.name) && !hosted.count(f.name) &&
               !is_fused_row_host(f.name) && f.reduction != ReductionKind::Contraction;
      });
      check_threads(key, t.tx * t.ty);
      check_vector(key, t.e, f);
      if (t.tx < 1 || t.ty < 1) user_error("tuning knobs: ", key, "'s threads must be at least 1");
    }
  }

  // Fixed::Stored on a GPU: a Func a vendor stage (cuBLASLt) reads, stored at root by the
  // caller, its loops the search's (an output to it: a pointwise kernel of its own, or
  // the host of the row reductions it reads, as attention's probabilities are).
  bool is_fixed(const std::string& name) const {
    return fixed && fixed->count(name) && fixed->at(name) != Fixed::Stored;
  }
  bool stored_by_caller(const std::string& name) const {
    return fixed && fixed->count(name) && fixed->at(name) == Fixed::Stored;
  }
  bool treated_as_output(const FuncInfo& f) const { return f.is_output || stored_by_caller(f.name); }

  InlineView view() const {
    return {info, [this](const std::string& f) { return inlined.at(f); }, evaluations};
  }

  bool is_fused_row_host(const std::string& name) const {
    for (const auto& [f, host] : at_rows) {
      if (host == name) return true;
    }
    return false;
  }

  // Arithmetic per point of `f` with the Funcs inlined into it.
  double flops_with_inlined(const FuncInfo& f) const {
    double flops = f.flops_per_point;
    for (const auto& [name, e] : evaluations) {
      const std::set<std::string> consumers = view().effective_consumers(info.at(name));
      if (consumers.count(f.name)) flops += info.at(name).flops_per_point * e / std::max(1.0, f.points());
    }
    return flops;
  }

  // ---- placement (consumers before producers) --------------------------------------

  void place_func(const FuncInfo& f) {
    if (is_fixed(f.name)) {
      inlined[f.name] = fixed->at(f.name) == Fixed::Inline;
      if (inlined[f.name]) evaluations[f.name] = view().inline_evaluations(f);
      decide("fusion", f.name + ": scheduled before the search");
      return;
    }
    inlined[f.name] = false;
    if (treated_as_output(f) || f.function.has_extern_definition()) return;
    if (f.reduction != ReductionKind::None) {
      place_reduction(f);
      return;
    }
    const double evals = view().inline_evaluations(f);
    // Inline: its arithmetic at every use. Root: once per point, plus a kernel that
    // writes its values and reads them back.
    const double inline_s = f.flops_per_point * evals / m.gpu_peak_flops();
    const double root_s = f.flops_per_point * f.points() / m.gpu_peak_flops() +
                          2.0 * f.bytes_total() / (m.gpu_dram_gbps * 1e9) + m.launch_us * 1e-6;
    const bool in = f.trivial || f.flops_per_point == 0 || inline_s <= root_s;
    inlined[f.name] = in;
    if (in) evaluations[f.name] = evals;
    std::ostringstream o;
    o << f.name << ": " << (in ? "inlined" : "computed at root") << " (" << evals / f.points()
      << " evaluations per point)";
    decide("fusion", o.str());
  }

  // The output whose rows are `f`'s rows and that alone reads `f` (through inlined
  // Funcs and other reductions computed at its rows), or "".
  std::string row_host(const FuncInfo& f, const std::set<std::string>& consumers) const {
    if (f.reduction != ReductionKind::Row || f.rvars.empty() || f.function.values().size() != 1 ||
        consumers.empty()) {
      return "";
    }
    std::string host;
    for (const std::string& c : consumers) {
      auto a = at_rows.find(c);
      const std::string h = a == at_rows.end() ? c : a->second;
      if (!host.empty() && host != h) return "";
      host = h;
    }
    const FuncInfo& h = info.at(host);
    if (!is_pure_output(h) || hosted.count(host) || h.vars.size() < 2) return "";
    const int rows = reduces_rows_of(f, h);
    return rows > 0 && row_dim(f) == size_t(rows - 1) ? host : "";
  }

  bool reads_at_own_point(const FuncInfo& f, const FuncInfo& h) const {
    const std::vector<int> dims = view().dims_in_reader(f, h);
    if (dims.size() != f.vars.size()) return false;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] != int(d)) return false;
    }
    return true;
  }

  void place_reduction(const FuncInfo& f) {
    const std::set<std::string> consumers = view().effective_consumers(f);
    std::string where = "computed at root";
    if (const std::string host = row_host(f, consumers); !host.empty()) {
      at_rows[f.name] = host;
      decide("fusion", f.name + ": computed per block of rows of " + host);
      return;
    }
    if (f.reduction == ReductionKind::Contraction && f.vars.size() >= 2) {
      if (consumers.size() == 1) {
        // Its one reader, an output, hosts it where it reads it at its own point (a
        // thread's adjacent outputs are then the contraction's adjacent points).
        const FuncInfo& h = info.at(*consumers.begin());
        if (is_pure_output(h) && h.extents == f.extents && reads_at_own_point(f, h) && !hosted.count(h.name)) {
          at_thread[f.name] = h.name;
          hosted[h.name] = f.name;
          where = "computed per thread of " + h.name;
        }
      }
      if (!at_thread.count(f.name)) where = "computed per thread of a stored copy";
    }
    decide("fusion", f.name + ": " + where);
  }

  // ---- pointwise kernels -------------------------------------------------------------

  GpuStagePlan pointwise_plan(const FuncInfo& f, const GpuBlockTiling& t, double flops_per_point) const {
    GpuStagePlan p;
    const double cols = double(f.extents[0]);
    double rows = 1;
    for (size_t d = 1; d < f.extents.size(); ++d) rows *= double(f.extents[d]);
    p.threads = t.tx * t.ty;
    p.blocks = ceil_div(cols, double(t.tx) * t.e) * ceil_div(rows, t.ty);
    p.registers = 16 + 4 * t.e;
    p.steps = 1;
    // A vector load and a store, then the arithmetic of e points.
    p.step_issue = 2 * load_cycles(double(t.e) * f.bytes) + fma_cycles(flops_per_point * t.e, m);
    p.step_latency = m.gpu_dram_latency;
    p.flops = flops_per_point * f.points();
    p.dram_bytes = 2.0 * f.bytes_total();
    return p;
  }

  GpuBlockTiling choose_pointwise(const FuncInfo& f, double flops_per_point, bool vectors, GpuPrediction* best) {
    const int max_e = vectors ? vector_elems(f.bytes) : 1;
    std::vector<std::pair<GpuBlockTiling, GpuPrediction>> scored;
    const double cols = double(f.extents[0]);
    // Widest vectors and largest blocks first: of near-equal choices the first wins, and
    // those keep more bytes in flight than the model's latency term credits.
    for (int e = max_e; e >= 1; e /= 2) {
      for (int tx : {256, 128, 64, 32}) {
        for (int ty : {8, 4, 2, 1}) {
          if (tx * ty < 64 || tx * ty > 512) continue;
          if (tx > 32 && double(tx) * e > 2 * cols) continue;  // mostly idle threads
          if (f.vars.size() == 1 && ty > 1) continue;
          const GpuBlockTiling t{tx, ty, e};
          scored.push_back({t, predict_gpu(pointwise_plan(f, t, flops_per_point), m)});
        }
      }
    }
    if (scored.empty()) scored.push_back({{32, 1, 1}, predict_gpu(pointwise_plan(f, {32, 1, 1}, flops_per_point), m)});
    const auto chosen = choose(f.name, scored, &Knobs::gpu_blocks, [&](const GpuBlockTiling& t) {
      return predict_gpu(pointwise_plan(f, t, flops_per_point), m);
    });
    *best = chosen.second;
    return chosen.first;
  }

  // A CUDA grid holds at most 65535 blocks in y (2^31 - 1 in x): the block dim with more
  // than that goes to x, or the launch fails (CUDA_ERROR_INVALID_VALUE; a depthwise
  // convolution's 16 x 128 x 56 rows of blocks did). `first` is x otherwise. Halide maps
  // the innermost block loop to x, so callers reorder the two loops as returned.
  static std::vector<std::string> grid(const std::string& first, double first_count, const std::string& second,
                                       double second_count) {
    constexpr double kMaxGridY = 65535;
    if (second_count > kMaxGridY && second_count > first_count) return {second, first};
    return {first, second};
  }

  static double product(const std::vector<int64_t>& e, size_t from, size_t to = size_t(-1)) {
    double p = 1;
    for (size_t d = from; d < std::min(to, e.size()); ++d) p *= double(std::max<int64_t>(e[d], 1));
    return p;
  }

  // Loops of a pointwise stage over `vars`: e adjacent elements per thread (a vector),
  // tx x ty threads per block. Row tiles are the blocks' x dim (the larger count), column
  // tiles their y dim.
  void pointwise_loops(StageWriter s, const std::vector<std::string>& vars, const std::vector<int64_t>& extents,
                       const GpuBlockTiling& t, bool vector, TailStrategy vector_tail) {
    const double column_blocks = std::ceil(product(extents, 0, 1) / double(std::max(1, t.tx * (vector ? t.e : 1))));
    const double row_count = product(extents, 1);
    const std::string x = vars[0];
    std::string cx = x;
    if (vector && t.e > 1) {
      s.split(x, x + "_o", x + "_v", t.e, vector_tail).vectorize(x + "_v");
      cx = x + "_o";
    }
    s.split(cx, "bx", "tx", t.tx, TailStrategy::GuardWithIf);
    if (vars.size() == 1) {
      s.gpu_blocks({"bx"}).gpu_threads({"tx"});
      return;
    }
    std::string rows = vars[1];
    for (size_t d = 2; d < vars.size(); ++d) {
      const std::string fused = rows + "_" + vars[d];
      s.fuse(rows, vars[d], fused);
      rows = fused;
    }
    std::vector<std::string> order;
    if (vector && t.e > 1) order.push_back(x + "_v");
    if (t.ty > 1) {
      s.split(rows, "by", "ty", t.ty, TailStrategy::GuardWithIf);
      for (const char* v : {"tx", "ty", "by", "bx"}) order.push_back(v);
      const std::vector<std::string> g = grid("by", std::ceil(row_count / t.ty), "bx", column_blocks);
      s.reorder(order).reorder(g).gpu_threads({"tx", "ty"}).gpu_blocks(g);
    } else {
      for (const std::string& v : {std::string("tx"), rows, std::string("bx")}) order.push_back(v);
      const std::vector<std::string> g = grid(rows, row_count, "bx", column_blocks);
      s.reorder(order).reorder(g).gpu_threads({"tx"}).gpu_blocks(g);
    }
  }

  void schedule_pointwise(ScheduleWriter& w, const FuncInfo& f) {
    w.compute_root(f.name);
    if (f.vars.empty()) {
      w.stage(f.name).gpu_single_thread();
      decide("schedule", f.name + ": one GPU thread (a scalar)");
      return;
    }
    const double flops = flops_with_inlined(f);
    GpuPrediction pr;
    const bool output = f.is_output;
    GpuBlockTiling t = choose_pointwise(f, flops, output, &pr);
    if (output && t.e > 1) {
      // Vectors where every row starts on a multiple of them (128-bit loads and stores).
      pointwise_loops(w.specialize_aligned(f.name, {t.e * t.tx}, t.e, inputs_read(f.name)), f.vars, f.extents, t, true,
                      TailStrategy::RoundUp);
    }
    GpuBlockTiling scalar = t;
    scalar.e = 1;
    pointwise_loops(w.stage(f.name), f.vars, f.extents, scalar, false, TailStrategy::GuardWithIf);
    result.predicted_s += pr.total_s;
    std::ostringstream o;
    o << f.name << ": blocks of " << t.tx << " x " << t.ty << " threads, " << t.e
      << " adjacent elements per thread; predicted " << pr.str();
    decide("schedule", o.str());
  }

  // ---- contractions ------------------------------------------------------------------

  ContractionShape shape_of(const FuncInfo& f) const { return contraction_shape(f); }

  GpuTiling choose_contraction(const FuncInfo& f, GpuPrediction* best) {
    const ContractionShape s = shape_of(f);
    std::vector<std::pair<GpuTiling, GpuPrediction>> scored = gpu_contraction_candidates(s, m);
    KILN_CHECK(!scored.empty(), f.name, ": no GPU register tiling fits");
    const auto chosen = choose(f.name, scored, &Knobs::gpu_tiles, [&](const GpuTiling& t) {
      return predict_gpu(gpu_contraction_plan(s, t, m), m);
    });
    *best = chosen.second;
    return chosen.first;
  }

  // The loops of a contraction's host (its output, or a stored copy of it) over `vars`:
  // r x c points per thread (c adjacent columns as a vector), tx x ty threads per block.
  // Edge tiles are shifted inwards, so every thread's tile is whole: that needs the
  // host to be at least one tile, which `whole` says (else edges are guarded).
  void contraction_loops(StageWriter s, const std::vector<std::string>& vars, const std::vector<int64_t>& extents,
                         const GpuTiling& t, bool whole) {
    const TailStrategy tail = whole ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf;
    s.split(vars[0], "no", "nv", t.cols, tail).split(vars[1], "mo", "mr", t.rows, tail);
    s.split("no", "nb", "nt", t.tx, TailStrategy::GuardWithIf).split("mo", "mb", "mt", t.ty, TailStrategy::GuardWithIf);
    std::string blocks = "mb";
    std::vector<std::string> order = {"nv", "mr", "nt", "mt", "nb", "mb"};
    for (size_t d = 2; d < vars.size(); ++d) order.push_back(vars[d]);
    s.reorder(order);
    for (size_t d = 2; d < vars.size(); ++d) {
      const std::string fused = blocks + "_" + vars[d];
      s.fuse(blocks, vars[d], fused);
      blocks = fused;
    }
    const double column_blocks = std::ceil(product(extents, 0, 1) / double(std::max(1, t.cols * t.tx)));
    const double row_blocks = std::ceil(product(extents, 1, 2) / double(std::max(1, t.rows * t.ty))) * product(extents, 2);
    const std::vector<std::string> g = grid("nb", column_blocks, blocks, row_blocks);
    s.reorder(g).gpu_threads({"nt", "mt"}).gpu_blocks(g);
    if (whole) s.vectorize("nv").unroll("mr");
  }

  // The contraction `r` per thread of `host`: its r x c tile in registers across the
  // reduction, the reduction unrolled by ku.
  void contraction_per_thread(ScheduleWriter& w, const FuncInfo& r, const std::string& host, const GpuTiling& t,
                              bool whole, const GpuPrediction& pr) {
    w.compute_at(r.name, host, "nt");
    const std::string rn = r.vars[0], rm = r.vars[1];
    if (whole) w.stage(r.name).vectorize(rn, t.cols, TailStrategy::GuardWithIf).unroll(rm);
    StageWriter u = w.stage(r.name, 0);
    std::vector<std::string> order = {rn, rm};
    const int ku = gpu_unrolled_steps(shape_of(r), t.unroll);
    std::string inner = r.rvars.empty() ? "" : r.rvars[0];
    if (!r.rvars.empty() && ku > 1 && ku < r.rvar_extents[0]) {
      u.split(r.rvars[0], "ko", "ku", ku, TailStrategy::GuardWithIf);
      order.push_back("ku");
      order.push_back("ko");
      inner = "ku";
    } else if (!r.rvars.empty()) {
      order.push_back(r.rvars[0]);
    }
    for (size_t i = 1; i < r.rvars.size(); ++i) order.push_back(r.rvars[i]);
    for (size_t d = 2; d < r.vars.size(); ++d) order.push_back(r.vars[d]);
    u.reorder(order);
    if (whole) u.vectorize(rn, t.cols, TailStrategy::GuardWithIf).unroll(rm);
    if (!inner.empty() && ku > 1) u.unroll(inner);
    // A whole tile is indexed by constants only (vectorized and unrolled): its accumulators
    // are registers, computed over exactly the tile (Halide cannot always prove that
    // region constant: conv2d's, whose host fuses its outer dims into blocks). A
    // tile cut at the edge of a small output is not: it stays where Halide puts it.
    if (whole) {
      for (size_t d = 2; d < r.vars.size(); ++d) w.bound_extent(r.name, r.vars[d], 1);
      w.store_in(r.name, Halide::MemoryType::Register);
    }
    result.predicted_s += pr.total_s;
    std::ostringstream o;
    o << r.name << ": " << t.rows << " rows x " << t.cols << " columns per thread"
      << (whole ? " in registers" : " (edge tiles: local memory)") << ", blocks of " << t.tx << " x " << t.ty
      << " threads, " << ku << " reduction steps unrolled, computed per thread of " << host << "; predicted "
      << pr.str();
    decide("schedule", o.str());
  }

  // The input buffers `func` reads, itself or through the Funcs inlined into it, each with
  // a Func that calls it.
  std::vector<ScheduleWriter::InputRead> inputs_read(const std::string& func) const {
    std::vector<ScheduleWriter::InputRead> reads;
    std::set<std::string> seen_funcs = {func}, seen_inputs;
    std::vector<std::string> todo = {func};
    while (!todo.empty()) {
      const std::string name = todo.back();
      todo.pop_back();
      struct Calls : Halide::Internal::IRGraphVisitor {
        std::vector<const Halide::Internal::Call*> found;
        using Halide::Internal::IRGraphVisitor::visit;
        void visit(const Halide::Internal::Call* c) override {
          found.push_back(c);
          Halide::Internal::IRGraphVisitor::visit(c);
        }
      } calls;
      info.at(name).function.accept(&calls);
      for (const Halide::Internal::Call* c : calls.found) {
        if (c->param.defined() && c->param.is_buffer()) {
          if (seen_inputs.insert(c->param.name()).second) reads.push_back({name, c->param.name(), c->param.dimensions()});
        } else if (c->call_type == Halide::Internal::Call::Halide && info.funcs.count(c->name) && inlined.at(c->name) &&
                   seen_funcs.insert(c->name).second) {
          todo.push_back(c->name);
        }
      }
    }
    return reads;
  }

  void schedule_contraction_output(ScheduleWriter& w, const FuncInfo& h) {
    const FuncInfo& r = info.at(hosted.at(h.name));
    GpuPrediction pr;
    const GpuTiling t = choose_contraction(r, &pr);
    w.compute_root(h.name);
    // Three branches: whole tiles whose vectors start on 128-bit boundaries (aligned
    // loads and stores, a third faster on matmul: docs/autoscheduler.md), whole tiles,
    // and outputs smaller than one tile.
    if (t.cols > 1) {
      contraction_loops(w.specialize_aligned(h.name, {t.cols, t.rows}, t.cols, inputs_read(r.name)), h.vars, h.extents, t, true);
    }
    contraction_loops(w.specialize_min_extents(h.name, {t.cols, t.rows}), h.vars, h.extents, t, true);
    GpuTiling one = t;
    one.rows = one.cols = 1;
    contraction_loops(w.stage(h.name), h.vars, h.extents, one, false);
    contraction_per_thread(w, r, h.name, t, true, pr);
  }

  void schedule_contraction_copy(ScheduleWriter& w, const FuncInfo& r) {
    GpuPrediction pr;
    const GpuTiling t = choose_contraction(r, &pr);
    const bool whole = r.extents[0] >= t.cols && r.extents[1] >= t.rows;
    const std::string copy = w.wrap(r.name);
    w.compute_root(copy);
    contraction_loops(w.stage(copy), r.vars, r.extents, t, whole);
    contraction_per_thread(w, r, copy, t, whole, pr);
  }

  // ---- reductions ----------------------------------------------------------------------

  // The first kept dim with more than one point: the rows a row reduction runs over.
  size_t row_dim(const FuncInfo& f) const {
    for (size_t d = 0; d < f.extents.size(); ++d) {
      if (f.extents[d] > 1) return d;
    }
    return 0;
  }

  GpuStagePlan row_plan(const FuncInfo& f, const GpuRowTiling& t) const {
    GpuStagePlan p;
    const double k = f.rvar_extents.empty() ? 1 : double(f.rvar_extents[0]);
    const double rest = f.reduction_trips() / k;
    p.threads = t.threads * t.rows;
    p.blocks = ceil_div(f.points(), t.rows);
    p.registers = 32;
    p.smem = double(t.threads) * t.rows * f.bytes;
    p.steps = ceil_div(k, t.threads) * rest;
    p.step_issue = load_cycles(f.bytes) + fma_cycles(flops_with_inlined_update(f), m);
    p.step_latency = m.gpu_dram_latency;
    p.flops = flops_with_inlined_update(f) * f.points() * f.reduction_trips();
    p.dram_bytes = f.bytes * f.points() * f.reduction_trips();
    // One thread per row combines the partial results from shared memory.
    p.serial_s = p.blocks / (m.sm_count * 4.0) * t.threads * kSmemLatency / (m.gpu_ghz * 1e9);
    return p;
  }

  // Arithmetic of one reduction step with what is inlined into the update.
  double flops_with_inlined_update(const FuncInfo& f) const {
    double flops = f.update_flops;
    for (const auto& [name, e] : evaluations) {
      const std::set<std::string> consumers = view().effective_consumers(info.at(name));
      if (consumers.count(f.name)) flops += info.at(name).flops_per_point;
    }
    return flops;
  }

  // Row tilings to score: `threads` along the row (each a strided slice of it), `rows`
  // rows per block.
  std::vector<GpuRowTiling> row_tilings(double k) const {
    std::vector<GpuRowTiling> out;
    for (int threads : {32, 64, 128, 256, 512}) {
      for (int rows : {1, 2, 4, 8, 16}) {
        if (threads * rows < 64 || threads * rows > 1024 || threads > 2 * k) continue;
        out.push_back({threads, rows});
      }
    }
    return out;
  }

  static double row_length(const FuncInfo& f) { return f.rvar_extents.empty() ? 1 : double(f.rvar_extents[0]); }

  // Splits `f`'s row (its innermost reduction dim) into `threads` strided slices whose
  // partial results are a new Func (rfactor), returned by name; "" where Halide cannot
  // prove the update associative (then `f` is unchanged).
  std::string rfactor_row(ScheduleWriter& w, const FuncInfo& f, int threads, std::string* why) {
    w.stage(f.name, 0).split(f.rvars[0], "rxo", "rxi", threads, TailStrategy::GuardWithIf);
    try {
      return w.rfactor(f.name, "rxi", "u");
    } catch (const Halide::CompileError& e) {
      *why = e.what();
      return "";
    }
  }

  // `f`'s rows in blocks of `rows` (its outer dims fused into a second block dim), one
  // thread per row of the block: the loops of a stage over `f`'s vars. Returns the
  // innermost block loop, where per-block Funcs go (a Func stored between two block
  // loops is an error: the rows of a batched attention's softmax put "bo" outermost).
  std::string row_blocks(StageWriter s, const FuncInfo& f, int rows) const {
    const size_t rd = row_dim(f);
    s.split(f.vars[rd], "bo", "bi", rows, TailStrategy::GuardWithIf);
    std::vector<std::string> blocks = {"bo"};
    std::string outer;
    for (size_t d = rd + 1; d < f.vars.size(); ++d) {
      if (outer.empty()) {
        outer = f.vars[d];
      } else {
        s.fuse(outer, f.vars[d], outer + "_" + f.vars[d]);
        outer += "_" + f.vars[d];
      }
    }
    if (!outer.empty()) blocks = grid("bo", std::ceil(product(f.extents, rd, rd + 1) / rows), outer, product(f.extents, rd + 1));
    s.reorder(blocks).gpu_threads({"bi"}).gpu_blocks(blocks);
    return blocks[0];
  }

  // The partial results of `f`'s rows, computed per block of `host` ("bo"): threads x
  // rows of them in shared memory, each thread summing its slice serially.
  void partial_results_per_block(ScheduleWriter& w, const FuncInfo& f, const std::string& partial,
                                 const std::string& host, const std::string& block, double steps_per_thread) {
    const size_t rd = row_dim(f);
    const std::string row = f.vars[rd];
    w.compute_at(partial, host, block);
    w.store_in(partial, Halide::MemoryType::GPUShared);  // every thread of the block reads them
    std::vector<std::string> serial;
    for (size_t d = 0; d < f.vars.size(); ++d) {
      if (d != rd) serial.push_back(f.vars[d]);
    }
    std::vector<std::string> pure_order = serial, update_order = {"rxo"};
    for (size_t i = 1; i < f.rvars.size(); ++i) update_order.push_back(f.rvars[i]);
    for (const std::string& v : serial) update_order.push_back(v);
    for (auto* order : {&pure_order, &update_order}) {
      order->push_back("u");
      order->push_back(row);
    }
    w.stage(partial).reorder(pure_order).gpu_threads({"u", row});
    StageWriter u = w.stage(partial, 0);
    u.reorder(update_order).gpu_threads({"u", row});
    if (steps_per_thread >= 2 * kRowUnroll) {
      // Several of a thread's loads in flight at once (measured on an H200: 1.2-1.5x).
      u.split("rxo", "rxo", "rxu", kRowUnroll, TailStrategy::GuardWithIf).unroll("rxu");
    }
  }

  void schedule_row_reduction(ScheduleWriter& w, const FuncInfo& f) {
    std::vector<std::pair<GpuRowTiling, GpuPrediction>> scored;
    for (const GpuRowTiling& t : row_tilings(row_length(f))) scored.push_back({t, predict_gpu(row_plan(f, t), m)});
    if (scored.empty()) {
      schedule_serial_reduction(w, f, "too short to split");
      return;
    }
    const auto [t, pr] =
        choose(f.name, scored, &Knobs::gpu_rows, [&](const GpuRowTiling& t) { return predict_gpu(row_plan(f, t), m); });
    std::string why;
    const std::string partial = rfactor_row(w, f, t.threads, &why);
    if (partial.empty()) {
      schedule_serial_reduction(w, f, "Halide cannot rfactor it: " + why);
      return;
    }
    w.compute_root(f.name);
    std::string block;
    for (int stage : {-1, 0}) block = row_blocks(w.stage(f.name, stage), f, t.rows);
    partial_results_per_block(w, f, partial, f.name, block, std::ceil(row_length(f) / t.threads));
    result.predicted_s += pr.total_s;
    std::ostringstream o;
    o << f.name << ": " << t.threads << " threads per row (partial results in shared memory), " << t.rows
      << " rows per block; predicted " << pr.str();
    decide("schedule", o.str());
  }

  // An output whose rows are the rows of reductions it reads (softmax's max and sum,
  // layer norm's moments): one kernel, blocks of rows, each block first reducing its
  // rows (threads x rows partial results, then one thread per row) into shared memory,
  // then computing the output's rows with the same threads, the rows still in L1/L2.
  // The Funcs the members reduce, each a value per point of the host's rows, that one
  // block can read from DRAM once into shared memory for all the passes over its rows
  // (softmax's input and its exponentials; layer norm's input). Empty where the rows
  // and partial results do not fit a block's 48 KiB, a row's length is not static (a
  // longer one at run time would not fit), or one of them has readers outside the kernel.
  // The Funcs `f`'s definitions call, through the Funcs inlined into them.
  std::set<std::string> calls_of(const FuncInfo& f) const {
    std::set<std::string> seen;
    std::vector<std::string> todo = {f.name};
    while (!todo.empty()) {
      const std::string name = todo.back();
      todo.pop_back();
      for (const std::string& c : halide_calls(info.at(name).function)) {
        if (!seen.insert(c).second || !info.funcs.count(c)) continue;
        if (inlined.at(c)) todo.push_back(c);
      }
    }
    return seen;
  }

  std::vector<std::string> rows_to_stage(const FuncInfo& h, const std::vector<const FuncInfo*>& members,
                                         const GpuRowTiling& t) const {
    constexpr double kSharedBytes = 48 * 1024;
    std::set<std::string> kernel = {h.name};
    for (const FuncInfo* f : members) kernel.insert(f->name);
    std::vector<std::string> staged;
    double bytes = 0;
    for (const FuncInfo* f : members) {
      if (f->function.updates().size() != 1) return {};
      for (const auto& rv : f->function.update(0).schedule().rvars()) {
        if (!Halide::Internal::as_const_int(rv.extent)) return {};
      }
      bytes += double(t.threads + 1) * t.rows * f->bytes;
      for (const std::string& c : halide_calls(f->function.update(0).values())) {
        if (!info.funcs.count(c) || !inlined.at(c) || is_fixed(c) || kernel.count(c)) continue;
        if (std::find(staged.begin(), staged.end(), c) != staged.end()) continue;
        const FuncInfo& s = info.at(c);
        if (s.extents != h.extents || s.vars.size() != h.vars.size() || s.function.has_update_definition()) continue;
        // A row source reads no member (softmax's input, not its exponentials: staging
        // those too halves the rows a block holds and measured no faster).
        bool reads_member = false;
        for (const std::string& called : calls_of(s)) reads_member = reads_member || kernel.count(called);
        if (reads_member) continue;
        bool inside = true;
        for (const std::string& r : view().effective_consumers(s)) inside = inside && kernel.count(r);
        if (!inside) continue;
        staged.push_back(c);
        bytes += double(t.rows) * double(h.extents[0]) * s.bytes;
      }
    }
    return bytes <= kSharedBytes ? staged : std::vector<std::string>{};
  }

  // `s` computed per block of `host`'s rows into shared memory, the block's threads
  // reading adjacent columns as the host's do.
  void stage_rows(ScheduleWriter& w, const FuncInfo& s, const std::string& host, const std::string& block,
                  const GpuRowTiling& t) {
    w.compute_at(s.name, host, block);
    w.store_in(s.name, Halide::MemoryType::GPUShared);
    StageWriter st = w.stage(s.name);
    st.split(s.vars[0], "sxo", "sxi", t.threads, TailStrategy::GuardWithIf);
    std::vector<std::string> order = {"sxo", "sxi"};
    const bool unroll_row = std::ceil(double(s.extents[0]) / t.threads) >= 2 * kRowUnroll;
    if (unroll_row) {
      st.split("sxo", "sxo", "sxu", kRowUnroll, TailStrategy::GuardWithIf);
      order.insert(order.begin(), "sxu");
    }
    for (size_t d = 1; d < s.vars.size(); ++d) order.push_back(s.vars[d]);
    st.reorder(order).gpu_threads({"sxi", s.vars[1]});
    if (unroll_row) st.unroll("sxu");
  }

  GpuStagePlan fused_rows_plan(const FuncInfo& h, const std::vector<const FuncInfo*>& members,
                               const GpuRowTiling& t) const {
    GpuStagePlan p;
    const double cols = double(h.extents[0]);
    p.threads = t.threads * t.rows;
    p.blocks = ceil_div(h.points() / cols, t.rows);
    p.registers = 32;
    double flops = flops_with_inlined(h) * h.points();
    for (const FuncInfo* f : members) {
      p.steps += ceil_div(row_length(*f), t.threads) * f->reduction_trips() / row_length(*f);
      p.smem += double(t.threads + 1) * t.rows * f->bytes;
      flops += flops_with_inlined_update(*f) * f->points() * f->reduction_trips();
    }
    p.steps += ceil_div(cols, t.threads);
    p.step_issue = 2 * load_cycles(h.bytes) + fma_cycles(flops / (h.points() * (members.size() + 1)), m);
    p.flops = flops;
    p.dram_bytes = 2.0 * h.bytes_total();
    const std::vector<std::string> staged = rows_to_stage(h, members, t);
    if (!staged.empty()) {
      // One pass over a row from DRAM into shared memory, the others from there. The
      // staged rows take shared memory too, which bounds the blocks an SM holds: 32
      // threads per row with two 4096-column f32 rows staged is 32 KiB for 64 threads.
      for (const std::string& name : staged) p.smem += double(t.rows) * cols * info.at(name).bytes;
      p.steps += ceil_div(cols, t.threads);
      p.step_latency = (m.gpu_dram_latency + members.size() * kSmemLatency) / (members.size() + 1);
    } else {
      // The first pass over a row comes from DRAM, the later ones mostly from L2.
      p.step_latency = (m.gpu_dram_latency + members.size() * m.gpu_l2_latency) / (members.size() + 1);
      p.l2_bytes = double(members.size()) * h.bytes_total();
    }
    p.serial_s = members.size() * p.blocks / (m.sm_count * 4.0) * t.threads * kSmemLatency / (m.gpu_ghz * 1e9);
    return p;
  }

  void schedule_fused_rows(ScheduleWriter& w, const FuncInfo& h) {
    std::vector<const FuncInfo*> members;
    for (const auto& [f, host] : at_rows) {
      if (host == h.name) members.push_back(&info.at(f));
    }
    double k = 0;
    for (const FuncInfo* f : members) k = std::max(k, row_length(*f));
    std::vector<std::pair<GpuRowTiling, GpuPrediction>> scored, staged_scored;
    for (const GpuRowTiling& t : row_tilings(k)) {
      scored.push_back({t, predict_gpu(fused_rows_plan(h, members, t), m)});
      // At most 128 threads per staged row: each row's partial results are combined by
      // one thread, and 256 made softmax slower on an H100 (8192 x 4096: 0.230 ms against
      // 0.184 with 32); 128 x 2 measured best on an H200 for softmax and layer norm.
      if (t.threads <= 128 && !rows_to_stage(h, members, t).empty()) staged_scored.push_back(scored.back());
    }
    // Rows read once into shared memory win where they fit (H200, 8192 x 4096: layer norm
    // 0.118 ms against 0.174 re-reading them, softmax 0.201 against 0.262): the model does
    // not see L2 re-reads as what they cost.
    if (!staged_scored.empty()) scored = staged_scored;
    if (scored.empty()) scored.push_back({{32, 2}, predict_gpu(fused_rows_plan(h, members, {32, 2}), m)});
    const auto [t, pr] = choose(h.name, scored, &Knobs::gpu_rows, [&](const GpuRowTiling& t) {
      return predict_gpu(fused_rows_plan(h, members, t), m);
    });
    // Before rfactor rewrites the members' updates to read their partial results.
    const std::vector<std::string> staged = rows_to_stage(h, members, t);
    w.compute_root(h.name);
    StageWriter s = w.stage(h.name);
    // Each thread walks its row in steps of `threads` columns (adjacent threads, adjacent
    // columns); rows and outer dims as in row_blocks.
    s.split(h.vars[0], "xo", "xi", t.threads, TailStrategy::GuardWithIf);
    s.split(h.vars[1], "bo", "bi", t.rows, TailStrategy::GuardWithIf);
    std::vector<std::string> order = {"xo", "xi", "bi", "bo"};
    const bool unroll_row = std::ceil(double(h.extents[0]) / t.threads) >= 2 * kRowUnroll;
    if (unroll_row) {
      s.split("xo", "xo", "xu", kRowUnroll, TailStrategy::GuardWithIf);
      order.insert(order.begin(), "xu");
    }
    std::string outer;
    for (size_t d = 2; d < h.vars.size(); ++d) order.push_back(h.vars[d]);
    s.reorder(order);
    for (size_t d = 2; d < h.vars.size(); ++d) {
      if (outer.empty()) {
        outer = h.vars[d];
      } else {
        s.fuse(outer, h.vars[d], outer + "_" + h.vars[d]);
        outer += "_" + h.vars[d];
      }
    }
    std::vector<std::string> blocks = {"bo"};
    if (!outer.empty()) blocks = grid("bo", std::ceil(product(h.extents, 1, 2) / t.rows), outer, product(h.extents, 2));
    s.reorder(blocks).gpu_threads({"xi", "bi"}).gpu_blocks(blocks);
    if (unroll_row) s.unroll("xu");
    const std::string block = blocks[0];  // the innermost block loop: per-block Funcs go there
    for (const FuncInfo* f : members) {
      std::string why;
      const std::string partial = rfactor_row(w, *f, t.threads, &why);
      w.compute_at(f->name, h.name, block);
      w.store_in(f->name, Halide::MemoryType::GPUShared);  // each row's result, read by the row's threads
      const std::string row = f->vars[row_dim(*f)];
      // The update reduces the partial results (over rxi), or, where there are none, the
      // whole row serially in the row's thread (rxi within rxo, as split).
      std::vector<std::string> pure_order, update_order = {"rxi"};
      if (partial.empty()) {
        update_order.push_back("rxo");
        for (size_t i = 1; i < f->rvars.size(); ++i) update_order.push_back(f->rvars[i]);
      }
      for (const std::string& v : f->vars) {
        if (v != row) pure_order.push_back(v), update_order.push_back(v);
      }
      pure_order.push_back(row);
      update_order.push_back(row);
      w.stage(f->name).reorder(pure_order).gpu_threads({row});
      w.stage(f->name, 0).reorder(update_order).gpu_threads({row});
      if (!partial.empty()) partial_results_per_block(w, *f, partial, h.name, block, std::ceil(row_length(*f) / t.threads));
      decide("schedule", f->name + ": computed per block of rows of " + h.name +
                             (partial.empty() ? " (serial per row: Halide cannot rfactor it: " + why + ")"
                                              : " (" + std::to_string(t.threads) + " partial results per row)"));
    }
    std::string staged_names;
    for (const std::string& name : staged) {
      stage_rows(w, info.at(name), h.name, block, t);
      staged_names += (staged_names.empty() ? "" : ", ") + name;
    }
    result.predicted_s += pr.total_s;
    std::ostringstream o;
    o << h.name << ": one kernel for " << members.size() << " row reductions and the output, " << t.threads
      << " threads per row, " << t.rows << " rows per block"
      << (staged.empty() ? "" : "; the rows of " + staged_names + " read once into shared memory") << "; predicted "
      << pr.str();
    decide("schedule", o.str());
  }

  // One thread per kept point, the reduction serial in it (columns adjacent in a warp).
  void schedule_serial_reduction(ScheduleWriter& w, const FuncInfo& f, const std::string& why) {
    w.compute_root(f.name);
    if (f.vars.empty()) {
      w.stage(f.name).gpu_single_thread();
      for (int u = 0; u < int(f.function.updates().size()); ++u) w.stage(f.name, u).gpu_single_thread();
      decide("schedule", f.name + ": one GPU thread (" + why + ")");
      return;
    }
    GpuPrediction pr;
    GpuBlockTiling t = choose_pointwise(f, f.flops_per_point + f.update_flops * f.reduction_trips(), false, &pr);
    pointwise_loops(w.stage(f.name), f.vars, f.extents, t, false, TailStrategy::GuardWithIf);
    for (int u = 0; u < int(f.function.updates().size()); ++u) {
      // Updates whose pure vars are all the Func's can run over them in parallel; others
      // (a scatter) run in one thread.
      const auto& args = f.function.update(u).args();
      bool pure = args.size() == f.vars.size();
      for (size_t d = 0; pure && d < args.size(); ++d) {
        const Halide::Internal::Variable* v = args[d].as<Halide::Internal::Variable>();
        pure = v && v->name == f.vars[d];
      }
      if (pure) pointwise_loops(w.stage(f.name, u), f.vars, f.extents, t, false, TailStrategy::GuardWithIf);
      else w.stage(f.name, u).gpu_single_thread();
    }
    result.predicted_s += pr.total_s;
    decide("schedule", f.name + ": one thread per point, the reduction serial (" + why + "); blocks of " +
                           std::to_string(t.tx) + " x " + std::to_string(t.ty) + " threads");
  }

  // Everything reduced: `partials` threads each reduce a strided slice, then `combine`
  // threads reduce those, then one thread the last `combine`.
  void schedule_total_reduction(ScheduleWriter& w, const FuncInfo& f) {
    const double n = f.reduction_trips();
    if (n < 1 << 16 || f.rvars.empty()) {
      schedule_serial_reduction(w, f, "short");
      return;
    }
    const int partials = int(std::min(double(1 << 16), std::pow(2.0, std::floor(std::log2(n / 64)))));
    std::string why;
    const std::string first = rfactor_strided(w, f, partials, &why);
    if (first.empty()) {
      schedule_serial_reduction(w, f, "Halide cannot rfactor it: " + why);
      return;
    }
    w.compute_root(f.name);
    w.compute_root(first);
    for (int stage : {-1, 0}) {
      w.stage(first, stage).split("u", "bx", "tx", 256, TailStrategy::GuardWithIf).gpu_blocks({"bx"}).gpu_threads({"tx"});
    }
    // The second level: about sqrt(partials) threads, each a dependent chain of
    // partials / that loads, then one thread the last chain: the two chains balanced.
    const int combine = std::max(32, int(std::pow(2.0, std::round(std::log2(std::sqrt(double(partials)))))));
    w.stage(f.name, 0).split("ri", "mo", "mi", combine, TailStrategy::GuardWithIf);
    const std::string second = w.rfactor(f.name, "mi", "v");
    w.compute_root(second);
    for (int stage : {-1, 0}) {
      w.stage(second, stage)
          .split("v", "bx", "tx", std::min(combine, 256), TailStrategy::GuardWithIf)
          .gpu_blocks({"bx"})
          .gpu_threads({"tx"});
    }
    w.stage(f.name).gpu_single_thread();
    w.stage(f.name, 0).gpu_single_thread();
    GpuStagePlan p;
    p.blocks = partials / 256.0;
    p.threads = 256;
    p.steps = n / partials;
    p.step_issue = load_cycles(f.bytes) + fma_cycles(f.update_flops, m);
    p.step_latency = m.gpu_dram_latency;
    p.dram_bytes = n * f.bytes;
    const double chains = double(partials) / combine + combine;
    const double t = predict_gpu(p, m).total_s + 2 * m.launch_us * 1e-6 + chains * m.gpu_l2_latency / (m.gpu_ghz * 1e9);
    result.predicted_s += t;
    std::ostringstream o;
    o << f.name << ": everything reduced in " << partials << " then " << combine << " partial results; predicted "
      << t * 1e6 << " us";
    decide("schedule", o.str());
  }

  // `f`'s reduction variables fused into one and split into `ways` strided slices, which
  // rfactor makes the pure var "u" of a new Func (the partial results), returned by name;
  // "" where Halide cannot prove the update associative (`why` says so).
  std::string rfactor_strided(ScheduleWriter& w, const FuncInfo& f, int ways, std::string* why) {
    std::string all = f.rvars[0];
    StageWriter update = w.stage(f.name, 0);
    for (size_t i = 1; i < f.rvars.size(); ++i) {
      update.fuse(all, f.rvars[i], all + "_" + f.rvars[i]);
      all += "_" + f.rvars[i];
    }
    update.split(all, "ro", "ri", ways, TailStrategy::GuardWithIf);
    try {
      return w.rfactor(f.name, "ri", "u");
    } catch (const Halide::CompileError& e) {
      *why = e.what();
      return "";
    }
  }

  // A column reduction (a bias gradient: [rows, columns] summed over rows). One thread per
  // column leaves the GPU nearly empty when rows are many and columns few (4096 columns are
  // 128 warps on 132 SMs, each a chain of 8192 dependent loads: an H100 train step spent
  // milliseconds there). The rows are split: `chunks` threads per column each reduce every
  // chunks-th row (adjacent threads read adjacent columns, so loads coalesce), then one
  // thread per column adds its `chunks` partial results.
  void schedule_column_reduction(ScheduleWriter& w, const FuncInfo& f) {
    const double n = f.reduction_trips(), columns = product(f.extents, 0, f.extents.size());
    const double want = std::min(n / 32, std::max(1.0, double(1 << 17) / std::max(1.0, columns)));
    const int chunks = want >= 1 ? int(std::min(256.0, std::pow(2.0, std::floor(std::log2(want))))) : 1;
    if (chunks < 4 || f.vars.size() != 1) {
      schedule_serial_reduction(w, f, "columns in parallel");
      return;
    }
    std::string why;
    const std::string partial = rfactor_strided(w, f, chunks, &why);
    if (partial.empty()) {
      schedule_serial_reduction(w, f, "columns in parallel; Halide cannot rfactor it: " + why);
      return;
    }
    const std::string& x = f.vars[0];
    const int tx = columns >= 64 ? 64 : 32;
    w.compute_root(f.name);
    w.compute_root(partial);
    for (int stage : {-1, 0}) {
      // rfactor puts u innermost; the row loop stays inside each thread.
      std::vector<std::string> order = {"tx", "bx", "u"};
      if (stage == 0) order.insert(order.begin(), "ro");
      w.stage(partial, stage)
          .split(x, "bx", "tx", tx, TailStrategy::GuardWithIf)
          .reorder(order)
          .gpu_blocks({"bx", "u"})
          .gpu_threads({"tx"});
      w.stage(f.name, stage).split(x, "bx", "tx", 128, TailStrategy::GuardWithIf).gpu_blocks({"bx"}).gpu_threads({"tx"});
    }
    GpuStagePlan p;
    p.blocks = std::ceil(columns / tx) * chunks;
    p.threads = tx;
    p.steps = std::ceil(n / chunks);
    p.step_issue = load_cycles(f.bytes) + fma_cycles(f.update_flops, m);
    p.step_latency = m.gpu_dram_latency;
    p.dram_bytes = n * columns * f.bytes;
    GpuStagePlan q;
    q.blocks = std::ceil(columns / 128);
    q.threads = 128;
    q.steps = chunks;
    q.step_issue = load_cycles(f.bytes);
    q.step_latency = m.gpu_l2_latency;
    q.dram_bytes = 2 * columns * chunks * f.bytes;
    const double t = predict_gpu(p, m).total_s + predict_gpu(q, m).total_s + 2 * m.launch_us * 1e-6;
    result.predicted_s += t;
    std::ostringstream o;
    o << f.name << ": columns reduced in " << chunks << " strided row chunks per column (" << tx
      << " columns per block), then the partial results per column; predicted " << t * 1e6 << " us";
    decide("schedule", o.str());
  }

  void schedule_reduction(ScheduleWriter& w, const FuncInfo& f) {
    if (at_thread.count(f.name)) return;  // with its output
    if (f.reduction == ReductionKind::Contraction && f.vars.size() >= 2) {
      schedule_contraction_copy(w, f);
      return;
    }
    if (f.reduction == ReductionKind::Row && !f.rvars.empty() && f.function.values().size() == 1) {
      schedule_row_reduction(w, f);
      return;
    }
    if (f.reduction == ReductionKind::Total && f.function.values().size() == 1) {
      schedule_total_reduction(w, f);
      return;
    }
    if (f.reduction == ReductionKind::Column && !f.rvars.empty() && f.function.values().size() == 1) {
      schedule_column_reduction(w, f);
      return;
    }
    schedule_serial_reduction(w, f, f.reduction == ReductionKind::Other ? "an update kiln does not parallelize"
                                                                        : "columns in parallel");
  }

  // Every Func not inlined nor fixed gets kernels of its own; row reductions and
  // contractions hosted by an output are written with it.
  void schedule_all(ScheduleWriter& w) {
    consumers_first([&](const FuncInfo& f) {
      if (is_fixed(f.name) || inlined.at(f.name) || f.function.has_extern_definition()) return;
      if (at_rows.count(f.name)) return;  // with its output
      if (hosted.count(f.name)) {
        schedule_contraction_output(w, f);
      } else if (is_fused_row_host(f.name)) {
        schedule_fused_rows(w, f);
      } else if (f.reduction != ReductionKind::None) {
        schedule_reduction(w, f);
      } else {
        schedule_pointwise(w, f);
      }
    });
  }
};

}  // namespace

std::vector<std::pair<GpuContractionTiling, GpuPrediction>> gpu_contraction_candidates(const ContractionShape& s,
                                                                                      const MachineModel& m) {
  std::vector<std::pair<GpuContractionTiling, GpuPrediction>> scored;
  const int max_c = vector_elems(s.bytes);
  // Blocks that are mostly past the edge are pruned, unless nothing else is left (a
  // product smaller than any block).
  for (bool prune : {true, false}) {
    for (int r : {1, 2, 4, 8}) {
      for (int c = 1; c <= max_c; c *= 2) {
        if (r > s.m || c > s.n) continue;
        for (int tx : {8, 16, 32, 64}) {
          for (int ty : {1, 2, 4, 8, 16}) {
            if (tx * ty < 64 || tx * ty > 512) continue;
            if (prune && (double(tx) * c > 2 * s.n || double(ty) * r > 2 * s.m)) continue;
            for (int ku : {1, 2, 4, 8}) {
              if (gpu_unrolled_steps(s, ku) != ku && ku > 1) continue;  // a short inner dim is unrolled whole
              const GpuContractionTiling t{r, c, tx, ty, ku};
              const GpuPrediction p = predict_gpu(gpu_contraction_plan(s, t, m), m);
              if (p.fits) scored.push_back({t, p});
            }
          }
        }
      }
    }
    if (!scored.empty()) break;
  }
  return scored;
}

int gpu_unrolled_steps(const ContractionShape& s, int unroll) {
  const double inner = s.inner_k > 0 ? s.inner_k : s.k;
  return inner <= 8 ? int(inner) : unroll;
}

GpuStagePlan gpu_contraction_plan(const ContractionShape& s, const GpuContractionTiling& t, const MachineModel& m) {
  GpuStagePlan p;
  const double unrolled = gpu_unrolled_steps(s, t.unroll);
  p.threads = t.tx * t.ty;
  p.blocks = ceil_div(s.n, double(t.tx) * t.cols) * ceil_div(s.m, double(t.ty) * t.rows) * s.batch;
  const double acc = double(t.rows) * t.cols;
  // Accumulators, the operands of the unrolled steps, and the loops' own registers.
  p.registers =
      int(acc + (t.rows * s.row_operands + t.cols * s.column_operands + acc * s.point_operands) * unrolled + 24);
  p.steps = s.k / unrolled;
  // Per step and warp: the FMAs of the tile and the L1 wavefronts of its loads. A warp
  // spans min(tx, 32) threads along the columns and 32 / that along the rows: a column
  // operand's vector is read by each column thread (the rows share it), a row operand's
  // value by each row of threads (one broadcast each), a point operand's by every thread.
  const double lanes_n = std::min(t.tx, 32), groups_m = 32 / lanes_n;
  const double column_wavefronts = std::ceil(lanes_n * t.cols * s.bytes / 128);
  const double point_wavefronts = groups_m * std::ceil(lanes_n * s.bytes / 128);
  const double fmas = acc * unrolled * s.flops_per_step / 2.0;
  const double loads = unrolled * (t.rows * s.row_operands * groups_m + s.column_operands * column_wavefronts +
                                   acc * s.point_operands * point_wavefronts);
  p.step_issue = std::max(fma_cycles(fmas, m), loads);
  p.step_latency = m.gpu_l2_latency;
  p.flops = s.flops_per_step * s.n * s.m * s.k * s.batch;
  // Each block reads its panels of the operands through L2 once per reduction step.
  p.l2_bytes = p.blocks * s.k * s.bytes *
               (double(t.tx) * t.cols * s.column_operands + double(t.ty) * t.rows * s.row_operands +
                double(t.tx) * t.cols * t.ty * t.rows * s.point_operands);
  p.dram_bytes = s.bytes * s.batch * (s.m * s.n + s.k * (s.n * s.column_operands + s.m * s.row_operands));
  return p;
}

SearchResult schedule_gpu_pipeline(const Halide::Pipeline& pipeline, const Halide::Target& target,
                                   const MachineModel& machine, const Knobs* knobs, const FixedFuncs* fixed) {
  KILN_CHECK(target.has_feature(Halide::Target::CUDA), "the Kiln GPU search plans CUDA targets, not ",
             target.to_string());
  GpuSearch s(pipeline, target, machine, knobs, fixed);
  return s.run();
}

}  // namespace kiln::autoschedule
