// The loops of the search's decisions, written as schedule source: rows, tiles, vectors
// and the parallel tasks of each output and stored Func.
#include "search_state.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace kiln::autoschedule::search_impl {

std::string Search::outer_loops(StageWriter& s, const std::vector<std::string>& vars, const std::string& first_outer,
                        int band) {
  std::string rows = first_outer;
  for (size_t d = 2; d < vars.size(); ++d) {
    const std::string fused = rows + "_" + vars[d];
    s.fuse(rows, vars[d], fused);
    rows = fused;
  }
  if (band > 1) {
    s.split(rows, rows + "_task", rows + "_in", band, TailStrategy::GuardWithIf).parallel(rows + "_task");
    return rows + "_in";
  }
  s.parallel(rows);
  return rows;
}

StagePlan Search::row_plan(const FuncInfo& h, double flops_per_point, double rows, int band) const {
  StagePlan p;
  p.flops = flops_per_point * h.points();
  p.lanes = lanes(h);
  p.tasks = std::ceil(rows / band);
  p.streams.push_back({2.0 * h.bytes_total(), 2.0 * h.bytes_total()});
  return p;
}

StagePlan Search::row_reduction_plan(const FuncInfo& r, int band) const {
  StagePlan p;
  const double steps = r.reduction_trips() * r.points();
  p.flops = std::max(1.0, step_flops(r)) * steps;
  p.lanes = lanes(r);
  p.loads = steps / p.lanes;
  const double input = double(r.bytes) * steps;
  p.streams.push_back({input, input});
  p.streams.push_back({r.bytes_total(), r.bytes_total()});
  p.tasks = std::ceil(r.points() / band);
  return p;
}

int Search::least_band(const FuncInfo& r, double rows) const {
  const double bytes_per_row = double(r.bytes) * r.reduction_trips();
  int least = 1;
  while (2.0 * least * bytes_per_row <= kMinTaskBytes && std::ceil(rows / (2.0 * least)) >= m.cores) least *= 2;
  return least;
}

void Search::schedule_output(ScheduleWriter& w, const FuncInfo& h) {
  w.compute_root(h.name);
  if (auto t = tiles.find(h.name); t != tiles.end()) {
    schedule_tiled_output(w, h, t->second);
    return;
  }
  const int vw = loop_lanes(h, output_scalar_cycles(h));
  // Arithmetic per output point, with what is inlined into it.
  double flops = point_flops(h);
  for (const auto& [name, e] : evaluations) flops += point_flops(info.at(name)) * e / h.points();
  for (const auto& [name, p] : place) {
    const FuncInfo& f = info.at(name);
    if (p.where == Where::AtRow && p.host == h.name && f.reduction == ReductionKind::None) {
      flops += point_flops(f) * f.points() / h.points();
    }
  }
  if (h.vars.size() == 1) {
    schedule_vector_output(w, h, flops, vw);
    return;
  }
  double rows = 1;
  for (size_t d = 1; d < h.extents.size(); ++d) rows *= double(h.extents[d]);
  const auto [band, pr] = choose_band(h.name, rows, 1, [&](int b) { return row_plan(h, flops, rows, b); });
  StageWriter spec = w.specialize_min_extents(h.name, {vw});
  const std::string row = outer_loops(spec, h.vars, h.vars[1], band);
  spec.vectorize(h.vars[0], vw, TailStrategy::ShiftInwards);
  StageWriter base = w.stage(h.name);
  outer_loops(base, h.vars, h.vars[1], band);
  if (rows_var.count(h.name)) rows_var[h.name] = row;
  decide("schedule", h.name + ": vectorized by " + std::to_string(vw) + ", parallel tasks of " +
                         std::to_string(band) + " rows; predicted " + pr.str());
}

int Search::choose_vector_task(const FuncInfo& h, double flops, Prediction* pr) const {
  const double n = double(h.extents[0]);
  int best = 0;
  for (int chunk = kVectorTask; 2.0 * chunk <= n; chunk *= 2) {
    const Prediction p = predict(row_plan(h, flops, std::ceil(n / chunk), 1), m);
    if (best == 0 || p.total_s < pr->total_s * 0.999) best = chunk, *pr = p;
  }
  return best;
}

void Search::schedule_vector_output(ScheduleWriter& w, const FuncInfo& h, double flops, int vw) {
  const std::string x = h.vars[0];
  const double n = double(h.extents[0]);
  if (rows_var.count(h.name)) {
    std::vector<const FuncInfo*> hosted;
    int least = 1;
    for (const auto& [name, p] : place) {
      if (p.where != Where::AtRow || p.host != h.name) continue;
      hosted.push_back(&info.at(name));
      least = std::max(least, least_band(info.at(name), n));
    }
    const auto [band, pr] = choose_band(h.name, n, least, [&](int b) {
      StagePlan plan = row_plan(h, flops, n, b);
      for (const FuncInfo* r : hosted) {
        const StagePlan rp = row_reduction_plan(*r, b);
        plan.flops += rp.flops;
        plan.loads += rp.loads;
        plan.streams.push_back(rp.streams[0]);  // the rows' input; their results stay in the task
      }
      return plan;
    });
    StageWriter s = w.stage(h.name);
    const std::string inner = outer_loops(s, {x}, x, band);
    rows_var[h.name] = band > 1 ? x + "_task" : x;
    if (band >= vw) s.vectorize(inner, vw, TailStrategy::GuardWithIf);
    decide("schedule", h.name + ": parallel tasks of " + std::to_string(band) + " elements, each computing its rows of " +
                           std::to_string(hosted.size()) + " row reduction" + (hosted.size() == 1 ? "" : "s") +
                           "; predicted " + pr.str());
    return;
  }
  Prediction pr = predict(row_plan(h, flops, 1, 1), m);
  const int chunk = choose_vector_task(h, flops, &pr);
  const bool tasks = chunk > 0;
  if (tasks) {
    // Vectors first, then tasks of vectors: every vector starts a whole number of
    // vectors from the output's min, which measured faster than vectors within tasks
    // of elements (docs/autoscheduler.md, "Measurements").
    w.specialize_min_extents(h.name, {2 * chunk})
        .split(x, "v", "l", vw, TailStrategy::ShiftInwards)
        .split("v", "t", "i", chunk / vw, TailStrategy::ShiftInwards)
        .parallel("t")
        .vectorize("l");
  }
  w.specialize_min_extents(h.name, {vw}).vectorize(x, vw, TailStrategy::ShiftInwards);
  result.predicted_s += pr.total_s;
  decide("schedule", h.name + ": vectorized by " + std::to_string(vw) +
                         (tasks ? ", parallel tasks of " + std::to_string(chunk) : std::string(", one task")) +
                         "; predicted " + pr.str());
}

void Search::schedule_tiled_output(ScheduleWriter& w, const FuncInfo& h, const TileChoice& tc) {
  const ContractionTiling& t = tc.tiling;
  const int tw = t.vectors * t.lanes, tm = t.rows;
  const std::vector<std::string>& vars = tile_vars.at(h.name);
  const size_t rows_dim = size_t(std::find(h.vars.begin(), h.vars.end(), vars[1]) - h.vars.begin());
  std::vector<int> min_extents(rows_dim + 1, 1);
  min_extents[0] = tw, min_extents[rows_dim] = tm;
  for (int pass = 0; pass < 2; ++pass) {
    const bool full = pass == 0;
    StageWriter s = full ? w.specialize_min_extents(h.name, min_extents) : w.stage(h.name);
    tile_loops(s, vars, t, full ? tw : 1, full ? tm : 1, full ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf,
               full);
  }
  compute_tile(w, info.at(tc.func), h.name, tc);
}

void Search::schedule_tiled_root(ScheduleWriter& w, const FuncInfo& r, const TileChoice& tc) {
  const ContractionTiling& t = tc.tiling;
  const int tw = t.vectors * t.lanes, tm = t.rows;
  const std::string copy = w.wrap(r.name);
  w.compute_root(copy);
  // Edges guarded, never shifted inwards: a kernel planned for one call's sizes serves
  // others (eager's shape-generic kernels, compile(dynamic)), and a copy smaller than a
  // tile then read before its input's min (a sum over dim 0 planned for [2, 33, 65] read
  // x at -2 when called with [2, 9, 6]: kiln_fuzz seed 70000). An intermediate Func has
  // no extents to specialize on, as the outputs' loops do.
  StageWriter s = w.stage(copy);
  tile_loops(s, r.vars, t, tw, tm, TailStrategy::GuardWithIf, true);
  compute_tile(w, r, copy, tc);
}

void Search::tile_loops(StageWriter& s, const std::vector<std::string>& vars, const ContractionTiling& t, int tw, int tm,
                TailStrategy tail, bool full) {
  s.split(vars[0], "no", "ni", tw, tail).split(vars[1], "mo", "mi", tm, tail);
  std::vector<std::string> order = {"ni", "mi", "no", "mo"};
  const bool blocked = full && t.block > 0;
  if (blocked) s.split("no", "nb", "no", int(t.block) / tw, TailStrategy::GuardWithIf);
  for (size_t d = 2; d < vars.size(); ++d) order.push_back(vars[d]);
  if (blocked) order.push_back("nb");
  s.reorder(order);
  outer_loops(s, vars, "mo", full ? t.band : 1);
  if (full) s.vectorize("ni", t.lanes, tail).unroll("ni").unroll("mi");
}

void Search::compute_tile(ScheduleWriter& w, const FuncInfo& r, const std::string& host, const TileChoice& tc) {
  const ContractionTiling& t = tc.tiling;
  w.compute_at(r.name, host, "no");
  const std::string rn = r.vars[0], rm = r.vars[1];
  w.stage(r.name).vectorize(rn, t.lanes, TailStrategy::GuardWithIf).unroll(rn).unroll(rm);
  std::vector<std::string> order = {rn, rm};
  for (const std::string& rv : r.rvars) order.push_back(rv);
  for (size_t d = 2; d < r.vars.size(); ++d) order.push_back(r.vars[d]);
  w.stage(r.name, 0).reorder(order).vectorize(rn, t.lanes, TailStrategy::GuardWithIf).unroll(rn).unroll(rm);
  result.predicted_s += tc.prediction.total_s;
  std::ostringstream o;
  o << r.name << ": register tiles of " << t.rows << " rows x " << t.vectors << " vectors of " << t.lanes
    << ", column blocks of " << (t.block > 0 ? std::to_string(int(t.block)) : std::string("all")) << ", "
    << t.band << " tile rows per task, computed per tile of " << host << " (loads per step: "
    << r.operand_loads.columns << " per column vector, " << r.operand_loads.rows << " per row, "
    << r.operand_loads.both << " per point); predicted " << tc.prediction.str();
  decide("schedule", o.str());
}

void Search::vectorize_rows(ScheduleWriter& w, const FuncInfo& r, const std::string& row) {
  const int vw = lanes(r);
  if (r.function.values().size() != 1 || r.rvar_extents.empty() || r.rvar_extents[0] < 2 * vw) return;
  int vectors = kAccumulators;
  while (vectors > 1 && r.rvar_extents[0] < 2 * vectors * vw) vectors /= 2;
  w.stage(r.name, 0).split(r.rvars[0], "rvo", "rvi", vectors * vw, TailStrategy::GuardWithIf);
  try {
    const std::string partial = w.rfactor(r.name, "rvi", "lane");
    w.compute_at(partial, r.name, row.empty() ? r.vars.back() : row);
    StageWriter init = w.stage(partial), update = w.stage(partial, 0);
    update.reorder({"lane", "rvo"});
    for (StageWriter* s : {&init, &update}) {
      if (vectors > 1) {
        s->vectorize("lane", vw, TailStrategy::GuardWithIf).unroll("lane");
      } else {
        s->vectorize("lane");
      }
    }
    StageWriter final_sum = w.stage(r.name, 0);
    final_sum.atomic();
    if (vectors > 1) {
      final_sum.split("rvi", "rvio", "rvii", vw, TailStrategy::GuardWithIf).vectorize("rvii");
    } else {
      final_sum.vectorize("rvi");
    }
    decide("schedule", r.name + ": row reduction in " + std::to_string(vectors) + (vectors > 1 ? " vectors" : " vector") + " of " +
                           std::to_string(vw) + " partial results, their lanes combined in a tree");
  } catch (const Halide::CompileError& e) {
    decide("schedule", r.name + ": serial row reduction (Halide cannot rfactor it: " + std::string(e.what()) + ")");
  }
}

void Search::schedule_reduction(ScheduleWriter& w, const FuncInfo& r, const Placement& p) {
  const int vw = lanes(r);
  if (p.where == Where::AtTile) return;  // scheduled with its output
  if (p.where == Where::AtRow) {
    w.compute_at(r.name, p.host, rows_var.at(p.host));
    vectorize_rows(w, r);
    return;
  }
  if (auto t = root_tiles.find(r.name); t != root_tiles.end()) {
    schedule_tiled_root(w, r, t->second);
    return;
  }
  w.compute_root(r.name);
  if (r.reduction == ReductionKind::Other) {
    decide("schedule", r.name + ": serial (an update kiln does not parallelize)");
    return;
  }
  if (r.reduction == ReductionKind::Total) {
    const double trips = r.reduction_trips();
    const int chunk = int(std::max(4096.0, std::ceil(trips / (4.0 * m.cores))));
    if (trips < 2.0 * chunk) return;
    w.declare_rvar(r.name, r.rvars.back());
    w.stage(r.name, 0).split(r.rvars.back(), "ro", "ri", chunk, TailStrategy::GuardWithIf);
    try {
      const std::string partial = w.rfactor(r.name, "ro", "u");
      w.compute_root(partial);
      w.stage(partial, 0).parallel("u");
      decide("schedule", r.name + ": partial results over chunks of " + std::to_string(chunk) + ", in parallel");
    } catch (const Halide::CompileError& e) {
      decide("schedule", r.name + ": serial (Halide cannot rfactor it: " + std::string(e.what()) + ")");
    }
    return;
  }
  const std::string outer = r.vars.back();
  StageWriter pure = w.stage(r.name), update = w.stage(r.name, 0);
  if (r.reduction == ReductionKind::Row) {
    // Its rows (kept dims fused into one loop) in tasks of `band` (from least_band up,
    // the cost model's choice). Partial results are computed per row, so they stay in
    // registers and L1.
    const double rows = r.points();
    const auto [band, pr] = choose_band(r.name, rows, least_band(r, rows), [&](int b) { return row_reduction_plan(r, b); });
    std::vector<std::string> loops = {""};  // outer_loops' vars: the row dims follow a vector dim
    loops.insert(loops.end(), r.vars.begin(), r.vars.end());
    const std::string row = outer_loops(pure, loops, r.vars[0], band);
    outer_loops(update, loops, r.vars[0], band);
    decide("schedule", r.name + ": rows in parallel tasks of " + std::to_string(band) + "; predicted " + pr.str());
    vectorize_rows(w, r, row);
    return;
  }
  // Contraction without a tile host, or Column: columns vectorized outside the
  // reduction loops, the outermost kept dim in parallel.
  std::vector<std::string> order = {r.vars[0]};
  for (const std::string& rv : r.rvars) order.push_back(rv);
  for (size_t d = 1; d < r.vars.size(); ++d) order.push_back(r.vars[d]);
  update.reorder(order);
  if (r.extents[0] >= vw) {
    pure.vectorize(r.vars[0], vw, TailStrategy::GuardWithIf);
    update.vectorize(r.vars[0], vw, TailStrategy::GuardWithIf);
  }
  if (r.vars.size() >= 2) {
    pure.parallel(outer);
    update.parallel(outer);
  }
  decide("schedule", r.name + ": columns vectorized by " + std::to_string(vw) + " outside the reduction");
}

void Search::schedule_root(ScheduleWriter& w, const FuncInfo& f) {
  w.compute_root(f.name);
  if (f.vars.empty() || f.function.has_extern_definition()) return;
  StageWriter s = w.stage(f.name);
  const int vw = loop_lanes(f, f.scalar_cycles_per_point);
  Prediction pr;
  if (const int chunk = f.vars.size() == 1 ? choose_vector_task(f, point_flops(f), &pr) : 0) {
    // One dim: tasks as a 1-D output's (it was one serial loop: the seed's sin and cos
    // at root, 8M elements, took a core each).
    s.split(f.vars[0], "t", "i", chunk, TailStrategy::GuardWithIf).parallel("t");
    s.vectorize("i", vw, TailStrategy::GuardWithIf);
    result.predicted_s += pr.total_s;
    decide("schedule", f.name + ": vectorized by " + std::to_string(vw) + ", parallel tasks of " +
                           std::to_string(chunk) + "; predicted " + pr.str());
    return;
  }
  if (f.vars.size() < 2) {  // one dim, too short for two tasks: one serial loop
    if (f.extents[0] >= vw) s.vectorize(f.vars[0], vw, TailStrategy::GuardWithIf);
    pr = predict(row_plan(f, point_flops(f), 1, 1), m);
    result.predicted_s += pr.total_s;
    decide("schedule", f.name + ": vectorized by " + std::to_string(vw) + ", one task; predicted " + pr.str());
    return;
  }
  // More dims: the outer ones fused into rows, in tasks of the band the cost model
  // prices lowest, as an output's. (The outermost dim alone in parallel ran kiln_conv2d's
  // zero-padded input, whose outermost dim is a batch of 4, on 4 of 16 cores.)
  double rows = 1;
  for (size_t d = 1; d < f.extents.size(); ++d) rows *= double(f.extents[d]);
  const auto [band, chosen] =
      choose_band(f.name, rows, 1, [&](int b) { return row_plan(f, point_flops(f), rows, b); });
  const std::string row = outer_loops(s, f.vars, f.vars[1], band);
  if (rows_var.count(f.name)) rows_var[f.name] = row;  // row reductions computed per row of it
  if (f.extents[0] >= vw) s.vectorize(f.vars[0], vw, TailStrategy::GuardWithIf);
  decide("schedule", f.name + ": vectorized by " + std::to_string(vw) + ", parallel tasks of " + std::to_string(band) +
                         " rows; predicted " + chosen.str());
}

}  // namespace kiln::autoschedule::search_impl
