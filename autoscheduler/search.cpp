// The Kiln search's entry points: schedule_pipeline runs the steps of search_state.h in
// order; ranked_candidates lists the runner-ups for kiln tune. Knob and name helpers.
#include "search.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "analysis.h"
#include "core/error.h"
#include "core/log.h"
#include "schedule_writer.h"
#include "search_state.h"

namespace kiln::autoschedule {

ContractionShape contraction_shape(const FuncInfo& f) {
  ContractionShape s;
  s.n = double(f.extents[0]);
  s.m = double(f.extents[1]);
  s.k = f.reduction_trips();
  for (size_t d = 2; d < f.extents.size(); ++d) s.batch *= double(f.extents[d]);
  s.bytes = f.bytes;
  s.column_operands = f.operand_loads.columns;
  s.row_operands = f.operand_loads.rows;
  s.point_operands = f.operand_loads.both;
  s.flops_per_step = std::max(1.0, f.update_flops);
  s.inner_k = f.rvar_extents.empty() ? 1 : double(f.rvar_extents[0]);
  return s;
}

std::string stable_name(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '$' && i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) {
      while (i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) ++i;
      continue;
    }
    out += name[i];
  }
  return out;
}

const char* fusion_name(Fusion f) {
  switch (f) {
    case Fusion::Inline: return "inline";
    case Fusion::Root: return "root";
    case Fusion::PerRow: return "row";
  }
  return "?";
}

bool Knobs::empty() const {
  return tiles.empty() && bands.empty() && fusion.empty() && lanes.empty() && conv_tiles.empty() && matmul_tasks.empty() &&
         gpu_tiles.empty() && gpu_blocks.empty() && gpu_rows.empty();
}

bool Knobs::operator==(const Knobs& o) const {
  return tiles == o.tiles && bands == o.bands && fusion == o.fusion && lanes == o.lanes && conv_tiles == o.conv_tiles &&
         matmul_tasks == o.matmul_tasks && gpu_tiles == o.gpu_tiles && gpu_blocks == o.gpu_blocks && gpu_rows == o.gpu_rows;
}

void Knobs::merge(const Knobs& change) {
  for (const auto& [f, t] : change.tiles) tiles[f] = t;
  for (const auto& [f, b] : change.bands) bands[f] = b;
  for (const auto& [f, p] : change.fusion) fusion[f] = p;
  for (const auto& [f, l] : change.lanes) lanes[f] = l;
  for (const auto& [f, t] : change.conv_tiles) conv_tiles[f] = t;
  for (const auto& [f, t] : change.matmul_tasks) matmul_tasks[f] = t;
  for (const auto& [f, t] : change.gpu_tiles) gpu_tiles[f] = t;
  for (const auto& [f, t] : change.gpu_blocks) gpu_blocks[f] = t;
  for (const auto& [f, t] : change.gpu_rows) gpu_rows[f] = t;
}

std::string Knobs::str() const {
  std::ostringstream o;
  auto next = [&o](const std::string& f) -> std::ostream& { return o << (o.tellp() > 0 ? "; " : "") << f << ": "; };
  for (const auto& [f, t] : tiles) next(f) << t.rows << "x" << t.vectors << " tiles, block " << int(t.block) << ", band " << t.band;
  for (const auto& [f, b] : bands) next(f) << "band " << b;
  for (const auto& [f, p] : fusion) next(f) << fusion_name(p);
  for (const auto& [f, l] : lanes) next(f) << l << " lanes";
  for (const auto& [f, t] : conv_tiles) next(f) << "conv tile " << t.vectors << " vectors x " << t.channels << " channels";
  for (const auto& [f, t] : matmul_tasks) {
    if (t.per_batch) {
      next(f) << "a task per batch element, its batched operands computed in it";
    } else {
      next(f) << "tasks of " << t.band << " row tiles x " << (t.column_tiles ? std::to_string(t.column_tiles) : "all")
              << " column tiles";
    }
    if (!t.pack_b) o << ", b read in place";
  }
  for (const auto& [f, t] : gpu_tiles) {
    next(f) << t.rows << "x" << t.cols << " per thread, " << t.tx << "x" << t.ty << " threads, unroll " << t.unroll;
  }
  for (const auto& [f, t] : gpu_blocks) next(f) << t.tx << "x" << t.ty << " threads, " << t.e << " per thread";
  for (const auto& [f, t] : gpu_rows) next(f) << t.threads << " threads per row, " << t.rows << " rows per block";
  return o.str();
}

namespace search_impl {

void Search::schedule_all(ScheduleWriter& w) {
  consumers_first([&](const FuncInfo& f) {
    if (f.is_output && is_pure_output(f)) schedule_output(w, f);
  });
  consumers_first([&](const FuncInfo& f) {
    const Placement& p = place.at(f.name);
    if ((f.is_output && is_pure_output(f)) || is_fixed(f.name)) return;
    if (f.reduction != ReductionKind::None) {
      schedule_reduction(w, f, p);
    } else if (p.where == Where::Root) {
      schedule_root(w, f);
    } else if (p.where == Where::AtRow) {
      w.compute_at(f.name, p.host, rows_var.at(p.host));
      if (f.extents[0] >= lanes(f)) w.stage(f.name).vectorize(f.vars[0], lanes(f), TailStrategy::GuardWithIf);
      decide("schedule", f.name + ": a row at a time, vectorized by " + std::to_string(lanes(f)));
    }
  });
}

}  // namespace search_impl

using search_impl::Search;

SearchResult schedule_pipeline(const Halide::Pipeline& pipeline, const Halide::Target& target,
                               const MachineModel& machine, const Knobs* knobs, const FixedFuncs* fixed) {
  if (target.has_gpu_feature()) {
    if (knobs && !(knobs->tiles.empty() && knobs->bands.empty() && knobs->fusion.empty() && knobs->lanes.empty())) {
      user_error("tuning knobs (", knobs->str(), ") are the CPU search's; ", target.to_string(),
                 " is planned by the Kiln GPU search (drop the tuning database entry, or use db=none)");
    }
    return schedule_gpu_pipeline(pipeline, target, machine, knobs, fixed);
  }
  if (knobs && !(knobs->gpu_tiles.empty() && knobs->gpu_blocks.empty() && knobs->gpu_rows.empty())) {
    user_error("tuning knobs (", knobs->str(), ") are the GPU search's; ", target.to_string(),
               " is planned by the Kiln CPU search (drop the tuning database entry, or use db=none)");
  }
  Search s(pipeline, target, machine, knobs, fixed);
  return s.run();
}

std::vector<Candidate> ranked_candidates(const Halide::Pipeline& pipeline, const Halide::Target& target,
                                         const MachineModel& machine, int n, const FixedFuncs* fixed,
                                         const std::vector<Alternative>* before) {
  const SearchResult best = schedule_pipeline(pipeline, target, machine, nullptr, fixed);
  // A Func that `a` takes off root, where it had a loop of its own (and a lanes knob).
  auto off_root = [](const Alternative& a) {
    for (const auto& [f, p] : a.change.fusion) {
      if (p != Fusion::Root) return f;
    }
    return std::string();
  };
  auto with = [&](Candidate c, const Alternative& a) {
    c.knobs.merge(a.change);
    // The change takes away the rows that the cost model's band split, or the loop whose
    // width (and, at several dims, whose band) it chose.
    if (!a.drops_band.empty()) c.knobs.bands.erase(a.drops_band);
    if (const std::string f = off_root(a); !f.empty()) c.knobs.lanes.erase(f), c.knobs.bands.erase(f);
    c.predicted_s += a.extra_s;
    return c;
  };
  const Candidate chosen{best.knobs, best.predicted_s};
  std::vector<Candidate> out = {chosen};
  for (const Alternative& a : best.alternatives) out.push_back(with(chosen, a));
  // Two or three knobs of different decisions at once, from each decision's best
  // runner-ups, predicted as the sum of their changes (see search.h).
  constexpr size_t kPairedPerDecision = 3, kTripleLeading = 12;
  std::map<std::string, size_t> taken;
  std::vector<const Alternative*> leading;
  std::vector<const Alternative*> sorted;
  for (const Alternative& a : best.alternatives) sorted.push_back(&a);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Alternative* a, const Alternative* b) { return a->extra_s < b->extra_s; });
  for (const Alternative* a : sorted) {
    if (taken[a->func]++ < kPairedPerDecision) leading.push_back(a);
  }
  // Two changes contradict where one takes away the rows that the other bands, or the
  // loop whose width the other sets.
  auto clash = [&](const Alternative& a, const Alternative& b) {
    auto takes = [&](const Alternative& x, const Alternative& y) {
      return (!x.drops_band.empty() && y.change.bands.count(x.drops_band)) || y.change.lanes.count(off_root(x)) ||
             y.change.bands.count(off_root(x));
    };
    return takes(a, b) || takes(b, a);
  };
  for (size_t i = 0; i < leading.size(); ++i) {
    for (size_t j = i + 1; j < leading.size(); ++j) {
      if (leading[i]->func == leading[j]->func || clash(*leading[i], *leading[j])) continue;
      const Candidate two = with(with(chosen, *leading[i]), *leading[j]);
      out.push_back(two);
      // Threes from the dozen closest runner-ups only: a whole model has hundreds of
      // decisions, and n is a handful.
      for (size_t k = j + 1; k < std::min(leading.size(), kTripleLeading); ++k) {
        if (leading[k]->func != leading[i]->func && leading[k]->func != leading[j]->func &&
            !clash(*leading[k], *leading[i]) && !clash(*leading[k], *leading[j])) {
          out.push_back(with(two, *leading[k]));
        }
      }
    }
  }
  // The cost model's choice stays first even where a runner-up ties it.
  std::stable_sort(out.begin() + 1, out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.predicted_s < b.predicted_s; });
  if (before && !before->empty()) {
    // Decisions made before the search (a compiled model's conv2d tiles, matmul tasks) are predicted
    // over their own stage, which the search's time leaves out: their extras do not rank
    // against its runner-ups (a model's many pointwise placements are predicted nearly
    // free, and would push every tile out of a handful of candidates). Each list keeps its
    // own order, taken in turns.
    std::vector<const Alternative*> pre;
    for (const Alternative& a : *before) pre.push_back(&a);
    std::stable_sort(pre.begin(), pre.end(), [](const Alternative* a, const Alternative* b) { return a->extra_s < b->extra_s; });
    std::vector<Candidate> turns = {out[0]};
    for (size_t i = 1, j = 0; i < out.size() || j < pre.size();) {
      if (j < pre.size()) turns.push_back(with(chosen, *pre[j++]));
      if (i < out.size()) turns.push_back(out[i++]);
    }
    out = std::move(turns);
  }
  if (out.size() > size_t(std::max(n, 1))) out.resize(size_t(std::max(n, 1)));
  return out;
}

}  // namespace kiln::autoschedule
