// The Kiln search's state and steps, shared by its files (internal to the autoscheduler):
// search_place.cpp decides where each Func is computed and how each contraction is tiled,
// search_loops.cpp writes the loops of those decisions, search.cpp runs them in order.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis.h"
#include "schedule_writer.h"
#include "search.h"
#include "search_skeleton.h"

namespace kiln::autoschedule::search_impl {

using Halide::TailStrategy;

// The fewest elements per parallel task of a 1-D stage (outputs and stages at root).
constexpr int kVectorTask = 1 << 14;

enum class Where { Inline, Root, AtTile, AtRow };

struct Placement {
  Where where = Where::Root;
  std::string host;  // AtTile, AtRow: the output whose loops compute this Func
};

struct TileChoice {
  std::string func;  // the contraction computed per tile
  ContractionTiling tiling;
  Prediction prediction;
};


// The least input a parallel task of a reduction at root reads (see schedule_reduction).
constexpr double kMinTaskBytes = 256 * 1024;

// Vectors of partial results a row reduction keeps (see vectorize_rows).
constexpr int kAccumulators = 4;

struct Search : SearchSkeleton<Search> {
  std::map<std::string, Placement> place;
  std::map<std::string, double> evaluations;  // of inlined Funcs: how often each point is recomputed
  std::map<std::string, TileChoice> tiles;    // by host output
  // A tile host's vars in the order of its contraction's dims (then its others, in its
  // own order), where it reads the contraction at a permutation of its point.
  std::map<std::string, std::vector<std::string>> tile_vars;
  std::map<std::string, TileChoice> root_tiles;  // contractions tiled in a stored wrapper, by name
  std::map<std::string, std::string> rows_var;  // host output -> its row loop

  Search(const Halide::Pipeline& p, const Halide::Target& t, const MachineModel& mm, const Knobs* k,
         const FixedFuncs* fx = nullptr)
      : SearchSkeleton(p, t, mm, k, fx) {}

  // Scheduled before the search (Inline or OwnLoops); a Stored Func is the search's to loop.
  bool is_fixed(const std::string& name) const;
  bool is_stored(const std::string& name) const;

  int lanes(const FuncInfo& f) const;

  // A point's (a reduction step's) arithmetic in the cost model's vector flops: a libm
  // call per lane costs its cycles on every lane, which vector arithmetic would share.
  double as_vector_flops(const FuncInfo& f, double flops, double scalar_cycles) const;
  double point_flops(const FuncInfo& f) const;
  double step_flops(const FuncInfo& f) const { return as_vector_flops(f, f.update_flops, f.update_scalar_cycles); }

  // Whether the search vectorizes `f`'s loop over its points as a whole: an output that
  // is not register-tiled, or a pointwise Func at root. A lanes knob names one of these.
  bool has_own_vector_loop(const FuncInfo& f) const;

  // The vector lanes of `f`'s own loop, which makes `scalar_cycles` of per-lane libm calls
  // per point. A libm call costs the same per lane at any width, but each lane is taken
  // out of the vector and put back, which can make half the width faster (docs/
  // autoscheduler.md, "Measurements"). The cost model cannot tell the widths apart, so
  // half the target's width is a runner-up at the same prediction, for kiln tune to
  // measure. A knob overrides.
  int loop_lanes(const FuncInfo& f, double scalar_cycles);

  // Per-lane libm cycles per point of output `h`, with those of the Funcs inlined into
  // it and computed per row of it (as schedule_output counts their arithmetic).
  double output_scalar_cycles(const FuncInfo& h) const;

  InlineView view() const;
  std::set<std::string> effective_consumers(const FuncInfo& f) const { return view().effective_consumers(f); }
  double inline_evaluations(const FuncInfo& f) const { return view().inline_evaluations(f); }

  // A Func whose rows may compute the rows of row reductions it reads: an output whose
  // loops the search writes, or a value of two dims or more stored for a contraction,
  // whose rows the search loops too (a layer norm's or a softmax's result feeding a
  // matmul: its sums are taken per row of it, not in parallel loops of their own).
  bool hosts_rows(const FuncInfo& h) const;

  // ---- placement (consumers before producers) --------------------------------------

  void place_func(const FuncInfo& f);

  // The output at whose rows every reader of pointwise `f` is computed (the output
  // itself, or row reductions at its rows), where a row of `f` is a row of it; or "".
  std::string row_host(const FuncInfo& f) const;

  void place_reduction(const FuncInfo& f);

  TileChoice choose_tiling(const FuncInfo& f);

  // The index of the best-scored choice, where a later one must be 0.1% faster to win:
  // of near-equal choices the first enumerated (the simplest) is taken, and rounding noise
  // does not decide.
  template <class T, class Seconds>
  static size_t first_best(const std::vector<T>& scored, Seconds seconds) {
    size_t best = 0;
    for (size_t i = 1; i < scored.size(); ++i) {
      if (seconds(scored[i]) < seconds(scored[best]) * 0.999) best = i;
    }
    return best;
  }

  size_t count_alternatives(const std::string& func) const;

  std::optional<ContractionTiling> knob_tile(const std::string& func) const;

  std::optional<Fusion> knob_fusion(const std::string& func) const;

  // A placement the search chose between `chosen` and `other` (`extra_s` slower, by the
  // cost model): a knob, and `other` a runner-up.
  // `drops_band`: a Func that `other` leaves without rows to band (see Alternative).
  void record_fusion(const FuncInfo& f, Fusion chosen, Fusion other, double extra_s,
                     const std::string& drops_band = "");

  // A fusion knob for `f` (if any) that must be one of `allowed`; a kiln::Error otherwise.
  std::optional<Fusion> allowed_fusion(const FuncInfo& f, std::initializer_list<Fusion> allowed,
                                       const std::string& why) const;

  std::optional<int> knob_band(const std::string& func) const;

  // Knobs must name the decisions this pipeline has, with values the loops can take:
  // checked after placement (which schedules nothing) and before the first directive,
  // so a stale knob leaves the pipeline untouched.
  // Whether `f`'s rows are split into parallel tasks of a band (a knob): a pure output
  // of two dims or more that is not register-tiled, a 1-D output that computes row
  // reductions, a row reduction at root, or a pointwise Func of two dims or more at root.
  bool has_band(const FuncInfo& f) const;

  // The Func a knob names (by its key, PipelineInfo::keys) that `fits`, or nullptr.
  template <typename Fits>
  const FuncInfo* knob_func(const std::string& key, Fits fits) const {
    for (const auto& [name, fi] : info.funcs) {
      if (info.key(name) == key && fits(fi)) return &fi;
    }
    return nullptr;
  }

  void check_knobs() const;

  std::string tiled_names() const;

  // ---- loops ------------------------------------------------------------------------

  // The outer loops of an output: outer dims fused into one row loop, split into
  // parallel tasks of `band` rows. Returns the row loop's name.
  std::string outer_loops(StageWriter& s, const std::vector<std::string>& vars, const std::string& first_outer,
                          int band);

  // An output's rows (outer dims fused) in parallel tasks of `band` rows, each row one
  // vectorized loop over the innermost dim.
  StagePlan row_plan(const FuncInfo& h, double flops_per_point, double rows, int band) const;

  // A row reduction at root: its rows in parallel tasks of `band`, each row
  // reduced in vectors of partial results (vectorize_rows), its input read once.
  StagePlan row_reduction_plan(const FuncInfo& r, int band) const;

  // The fewest rows of reduction `r` per task: tasks that read at least kMinTaskBytes
  // while there is a task per core (one task per short row costs more in the thread pool,
  // its queue's lock contended by every core, than summing the row does: on 16 cores,
  // four tasks per core put gpt_block's layer norms, 128 rows of 128, in 64 tasks of 1 KB,
  // and `kiln tune` measured larger bands faster).
  int least_band(const FuncInfo& r, double rows) const;

  // Rows per task for `func`'s `rows` (from `least` up, powers of two), while every core
  // still gets four tasks (dynamic balance on a shared machine), at the lowest time
  // `plan(band)` predicts. Past that, larger bands while the thread pool's lock bounds the
  // stage (little work per task), up to one task for all the rows: a stage of little work
  // runs in few tasks, or one. The other sizes are runner-ups, and so is the next larger
  // band while it leaves a task per core (for kiln tune to measure). A knob overrides the
  // choice.
  template <typename Plan>
  std::pair<int, Prediction> choose_band(const std::string& func, double rows, int least, Plan plan) {
    std::vector<std::pair<int, Prediction>> scored, runner_ups;
    // Below the least band, tasks of half as many rows are a runner-up too (for kiln tune
    // to measure whether the machine's thread pool pays for them).
    if (least > 1) runner_ups.push_back({least / 2, predict(plan(least / 2), m)});
    for (int band = least;; band *= 2) {
      const Prediction pr = predict(plan(band), m);
      if (band > least && std::ceil(rows / band) < 4.0 * m.cores && !scored.back().second.lock_bound) {
        if (std::ceil(rows / band) >= m.cores) runner_ups.push_back({band, pr});
        break;
      }
      scored.push_back({band, pr});
      if (band >= rows || band >= (1 << 24)) break;
    }
    std::pair<int, Prediction> chosen = scored[first_best(scored, [](const auto& c) { return c.second.total_s; })];
    if (auto k = knob_band(func)) chosen = {*k, predict(plan(*k), m)};
    runner_ups.insert(runner_ups.begin(), scored.begin(), scored.end());
    std::stable_sort(runner_ups.begin(), runner_ups.end(),
                     [](const auto& a, const auto& b) { return a.second.total_s < b.second.total_s; });
    for (const auto& [band, pr] : runner_ups) {
      if (band == chosen.first) continue;
      if (count_alternatives(func) >= kAlternativesPerDecision) break;
      Knobs change;
      change.bands[info.key(func)] = band;
      result.alternatives.push_back({func, change, pr.total_s - chosen.second.total_s});
    }
    result.knobs.bands[info.key(func)] = chosen.first;
    result.predicted_s += chosen.second.total_s;
    return chosen;
  }

  void schedule_output(ScheduleWriter& w, const FuncInfo& h);

  // Elements per parallel task of 1-D stage `h` (`flops` a point): of kVectorTask and its
  // doublings that leave two tasks at least, the one the cost model prices lowest (fewer
  // tasks cost the thread pool less; more leave less of the end idle), with its
  // prediction in *pr; 0 (and *pr untouched) where the stage is too short for two.
  int choose_vector_task(const FuncInfo& h, double flops, Prediction* pr) const;

  // A 1-D output. Where it computes row reductions (their rows are its elements), tasks of
  // a band of elements, each computing its band of rows first (one parallel loop, where
  // the reductions at root and a copy to the output would be two); else tasks of 2^14
  // elements where there are two of them at least.
  void schedule_vector_output(ScheduleWriter& w, const FuncInfo& h, double flops, int vw);

  // A contraction computed per register tile of its output: tiles of rows x vectors,
  // shifted inwards at the edges (so every tile is full), column blocks outermost, bands
  // of tile rows as parallel tasks. Outputs smaller than a tile use 1 x 1 tiles.
  void schedule_tiled_output(ScheduleWriter& w, const FuncInfo& h, const TileChoice& tc);

  // A contraction that no output can host, computed per register tile of a stored copy
  // of itself (Func::in()). Edge tiles are shifted inwards, so every tile is whole and its
  // accumulators fit in registers; that needs the copy to be at least one tile, which the
  // estimates say it is (were it smaller at run time, the tile would read before the
  // region: kiln's ops clamp their reads, another generator's may fail a bounds check).
  // Below a tile, edge tiles are guarded.
  void schedule_tiled_root(ScheduleWriter& w, const FuncInfo& r, const TileChoice& tc);

  // The loops of a tile host over `vars`: tiles of tw columns x tm rows, column blocks,
  // bands of tile rows in parallel; the tile's columns vectorized and both unrolled.
  void tile_loops(StageWriter& s, const std::vector<std::string>& vars, const ContractionTiling& t, int tw, int tm,
                  TailStrategy tail, bool full);

  // The contraction `r` per tile of `host`: its tile in registers across the reduction.
  void compute_tile(ScheduleWriter& w, const FuncInfo& r, const std::string& host, const TileChoice& tc);

  // Rows of a reduction along the contiguous dim: partial results in vectors (rfactor)
  // so its body runs vectorized, then those vectors reduced.
  // The vectors of partial results are computed per row (`row`: r's loop over its rows).
  // Up to kAccumulators vectors of partial results, unrolled, so that independent adds
  // hide the add's latency (one vector accumulator waits ~4 cycles per step), where each
  // gets at least two steps. Their lanes then combine in a tree (atomic, vectorized: a
  // VectorReduce), not one lane after another, whose serial sum of 4 x 16 lanes cost a
  // short row as much as its loads (docs/autoscheduler.md, "Measurements").
  void vectorize_rows(ScheduleWriter& w, const FuncInfo& r, const std::string& row = "");

  void schedule_reduction(ScheduleWriter& w, const FuncInfo& r, const Placement& p);

  void schedule_root(ScheduleWriter& w, const FuncInfo& f);

  // Outputs first (their loops are where tiles and rows are computed), then the rest.
  void schedule_all(ScheduleWriter& w);
};

}  // namespace kiln::autoschedule::search_impl
