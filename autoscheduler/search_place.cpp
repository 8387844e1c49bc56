// The search's decisions: where each Func is computed (consumers before producers), how
// each contraction is tiled, and the knobs that force them.
#include "search_state.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace kiln::autoschedule::search_impl {

bool Search::is_fixed(const std::string& name) const {
  auto it = fixed ? fixed->find(name) : FixedFuncs::const_iterator{};
  return fixed && it != fixed->end() && it->second != Fixed::Stored;
}

bool Search::is_stored(const std::string& name) const {
  auto it = fixed ? fixed->find(name) : FixedFuncs::const_iterator{};
  return fixed && it != fixed->end() && it->second == Fixed::Stored;
}

int Search::lanes(const FuncInfo& f) const {
  return std::max(1, target.natural_vector_size(f.function.output_types()[0]));
}

double Search::as_vector_flops(const FuncInfo& f, double flops, double scalar_cycles) const {
  return flops + scalar_cycles * 2.0 * lanes(f) * m.fma_units;
}

double Search::point_flops(const FuncInfo& f) const {
  return as_vector_flops(f, f.flops_per_point, f.scalar_cycles_per_point);
}

bool Search::has_own_vector_loop(const FuncInfo& f) const {
  if (is_fixed(f.name) || f.vars.empty()) return false;
  if (f.is_output && is_pure_output(f)) return !tiles.count(f.name);
  return f.reduction == ReductionKind::None && place.at(f.name).where == Where::Root &&
         !f.function.has_extern_definition();
}

int Search::loop_lanes(const FuncInfo& f, double scalar_cycles) {
  const int vw = lanes(f);
  const std::string key = info.key(f.name);
  const auto knob = knobs ? knobs->lanes.find(key) : std::map<std::string, int>::const_iterator{};
  const bool given = knobs && knob != knobs->lanes.end();
  if (!given && (scalar_cycles <= 0 || vw < 16)) return vw;
  const int chosen = given ? knob->second : vw;
  result.knobs.lanes[key] = chosen;
  for (int other : {vw, vw / 2}) {
    if (other == chosen) continue;
    Knobs change;
    change.lanes[key] = other;
    result.alternatives.push_back({f.name, change, 0.0});
  }
  return chosen;
}

double Search::output_scalar_cycles(const FuncInfo& h) const {
  double c = h.scalar_cycles_per_point;
  for (const auto& [name, e] : evaluations) c += info.at(name).scalar_cycles_per_point * e / h.points();
  for (const auto& [name, p] : place) {
    const FuncInfo& f = info.at(name);
    if (p.where == Where::AtRow && p.host == h.name && f.reduction == ReductionKind::None) {
      c += f.scalar_cycles_per_point * f.points() / h.points();
    }
  }
  return c;
}

InlineView Search::view() const {
  return {info, [this](const std::string& f) { return place.at(f).where == Where::Inline; }, evaluations};
}

bool Search::hosts_rows(const FuncInfo& h) const {
  return is_pure_output(h) || (is_stored(h.name) && h.vars.size() >= 2 && h.reduction == ReductionKind::None &&
                               !h.function.has_extern_definition());
}

void Search::place_func(const FuncInfo& f) {
  Placement p;
  if (is_stored(f.name)) {
    place[f.name] = p;  // at root
    decide("fusion", f.name + ": stored before the search (a contraction reads it); its loops are the search's");
    return;
  }
  if (is_fixed(f.name)) {
    const bool inlined = fixed->at(f.name) == Fixed::Inline;
    p.where = inlined ? Where::Inline : Where::Root;
    if (inlined) evaluations[f.name] = inline_evaluations(f);
    decide("fusion", f.name + ": scheduled before the search (" + (inlined ? "inlined" : "own loops") + ")");
    place[f.name] = p;
    return;
  }
  if (f.is_output || f.function.has_extern_definition()) {
    place[f.name] = p;
    return;
  }
  if (f.reduction != ReductionKind::None) {
    place_reduction(f);
    return;
  }
  const double evals = inline_evaluations(f);
  if (f.trivial || point_flops(f) == 0) {
    p.where = Where::Inline;
    evaluations[f.name] = evals;
    decide("fusion", f.name + ": inlined (a load" + std::string(f.trivial ? "" : " or index math") + ")");
    place[f.name] = p;
    return;
  }
  // Inline: its arithmetic at every use, vectorized with the consumer. Root: once per
  // point, plus a write and a read back of its values. Per row: once per point, where
  // its readers are all at the rows of one output (softmax's exp, read by the row's
  // sum and by the output): a row of values stored and loaded again from L1, which
  // costs load and store slots beside the arithmetic, not bandwidth. Inline and per
  // row add work to the tasks of a stage that runs anyway; only root adds a stage, and
  // with it the thread pool's cost of handing out its tasks.
  StagePlan in, root, row;
  in.flops = point_flops(f) * evals;
  in.lanes = root.lanes = row.lanes = lanes(f);
  in.tasks = root.tasks = row.tasks = 4.0 * m.cores;
  root.flops = row.flops = point_flops(f) * f.points();
  root.streams.push_back({2.0 * f.bytes_total(), f.bytes_total()});
  row.loads = 2.0 * evals / row.lanes;  // a store per point, a load per read
  const std::string host = row_host(f);
  std::vector<std::pair<Fusion, Prediction>> options = {{Fusion::Inline, predict_added_work(in, m)},
                                                        {Fusion::Root, predict(root, m)}};
  if (!host.empty()) options.push_back({Fusion::PerRow, predict_added_work(row, m)});
  size_t chosen = first_best(options, [](const auto& o) { return o.second.total_s; });
  if (auto k = allowed_fusion(f, {Fusion::Inline, Fusion::Root, Fusion::PerRow}, "a pointwise Func")) {
    for (size_t i = 0; i < options.size(); ++i) {
      if (options[i].first == *k) chosen = i;
    }
    if (options[chosen].first != *k) {
      decide("fusion", f.name + ": " + fusion_name(options[chosen].first) +
                           " although a knob asks for per row: its readers are not all at one output's rows");
    }
  }
  const Fusion fusion = options[chosen].first;
  result.knobs.fusion[info.key(f.name)] = fusion;
  for (const auto& [other, pred] : options) {
    if (other == fusion) continue;
    Knobs change;
    change.fusion[info.key(f.name)] = other;
    result.alternatives.push_back({f.name, change, pred.total_s - options[chosen].second.total_s});
  }
  p.where = fusion == Fusion::Inline ? Where::Inline : fusion == Fusion::Root ? Where::Root : Where::AtRow;
  if (p.where == Where::AtRow) p.host = host;
  if (p.where == Where::Inline) evaluations[f.name] = evals;
  std::ostringstream o;
  o << f.name << ": "
    << (p.where == Where::Inline ? "inlined" : p.where == Where::Root ? "computed at root" : "computed per row of " + host)
    << " (" << evals / f.points() << " evaluations per point";
  for (const auto& [option, pred] : options) o << "; " << (option == Fusion::PerRow ? "per row" : fusion_name(option)) << " " << pred.str();
  o << ")";
  decide("fusion", o.str());
  place[f.name] = p;
}

std::string Search::row_host(const FuncInfo& f) const {
  std::string host;
  for (const std::string& c : effective_consumers(f)) {
    const Placement& cp = place.at(c);
    const std::string h = cp.where == Where::AtRow ? cp.host : c;
    if (!host.empty() && host != h) return "";
    host = h;
  }
  if (host.empty() || !rows_var.count(host)) return "";
  const FuncInfo& h = info.at(host);
  return h.vars.size() >= 2 && h.extents == f.extents ? host : "";
}

void Search::place_reduction(const FuncInfo& f) {
  Placement p;
  const std::set<std::string> consumers = effective_consumers(f);
  if (f.reduction == ReductionKind::Contraction && consumers.size() == 1) {
    // Its one reader, an output, hosts its tiles where it reads it at a permutation of
    // its point that keeps the contiguous dim (kiln_conv2d's accumulator is (columns,
    // channels, rows, batch), its output (columns, rows, channels, batch)).
    const FuncInfo& h = info.at(*consumers.begin());
    const std::vector<int> dims = is_pure_output(h) ? view().dims_in_reader(f, h) : std::vector<int>{};
    bool fits = dims.size() == h.vars.size() && dims.size() >= 2 && dims[0] == 0;
    for (size_t d = 0; fits && d < dims.size(); ++d) fits = h.extents[size_t(dims[d])] == f.extents[d];
    if (fits && !tiles.count(h.name) && !rows_var.count(h.name) && f.extents[0] >= lanes(f)) {
      p = {Where::AtTile, h.name};
      tiles[h.name] = choose_tiling(f);
      std::vector<std::string>& vars = tile_vars[h.name];
      for (int d : dims) vars.push_back(h.vars[size_t(d)]);
    }
  }
  if (f.reduction == ReductionKind::Contraction && p.where == Where::Root && f.vars.size() >= 2 &&
      f.extents[0] >= lanes(f)) {
    // No output to tile (its consumer reads it in another order, or several read it):
    // a stored copy of it is tiled instead, the contraction computed per tile.
    root_tiles[f.name] = choose_tiling(f);
  }
  if (f.reduction == ReductionKind::Row && p.where == Where::Root) {
    // One row of this reduction per row of an output: compute it there, while the row
    // is in cache. Every consumer must be that output or computed at its rows too.
    std::string host;
    bool ok = !consumers.empty();
    for (const std::string& c : consumers) {
      const Placement& cp = place.at(c);
      const std::string h = cp.where == Where::AtRow ? cp.host : c;
      ok &= (host.empty() || host == h);
      host = h;
    }
    if (ok) {
      const FuncInfo& h = info.at(host);
      // A 1-D output of the reduction's shape takes its rows with its elements, in tasks.
      ok = hosts_rows(h) && !tiles.count(host) &&
           (h.vars.size() >= 2 ? reduces_rows_of(f, h) > 0 : f.vars.size() == 1 && f.extents == h.extents);
    }
    const std::optional<Fusion> k = allowed_fusion(f, {Fusion::PerRow, Fusion::Root}, "a row reduction");
    // At root, its input is read once more from wherever the whole of it fits.
    const double extra = predict(row_reduction_plan(f, 1), m).memory_s;
    if (ok && k != Fusion::Root) {
      p = {Where::AtRow, host};
      rows_var[host] = "";
      // A 1-D host has rows (and a band) only while this reduction is computed there.
      record_fusion(f, Fusion::PerRow, Fusion::Root, extra, info.at(host).vars.size() < 2 ? host : "");
    } else if (ok) {
      record_fusion(f, Fusion::Root, Fusion::PerRow, -extra, f.name);
    } else {
      // Other knobs can take its consumers off one output's rows (a consumer moved to
      // root): a knob asking for rows then yields to them.
      result.knobs.fusion[info.key(f.name)] = Fusion::Root;
      if (k == Fusion::PerRow) {
        decide("fusion", f.name + ": at root although a knob asks for per row: its consumers are not one output's rows");
      }
    }
  }
  std::string where = p.where == Where::Root ? (root_tiles.count(f.name) ? "computed per register tile of a stored copy"
                                                                        : "computed at root") :
                      p.where == Where::AtTile ? "computed per register tile of " + p.host :
                                                 "computed per row of " + p.host;
  decide("fusion", f.name + ": " + where);
  place[f.name] = p;
}

TileChoice Search::choose_tiling(const FuncInfo& f) {
  const ContractionShape s = contraction_shape(f);
  const int vw = lanes(f);
  std::vector<TileChoice> scored;
  for (int rows : {1, 2, 3, 4, 6, 8}) {
    for (int vectors : {1, 2, 3, 4}) {
      if (rows > s.m || vectors * vw > s.n) continue;
      for (double block : {0.0, 512.0, 256.0, 128.0, 64.0}) {
        if (block > 0 && (block >= s.n || std::fmod(block, vectors * vw) != 0)) continue;
        for (int band : {1, 2, 4, 8}) {
          ContractionTiling t{rows, vectors, vw, block, band, true};
          StagePlan plan = contraction_plan(s, t);
          // A tile needs its registers: past the register file LLVM spills and shuffles
          // accumulators in the reduction loop, far worse than the spill price predicts
          // (docs/autoscheduler.md, "Measurements"). A knob may still ask.
          if (plan.vector_registers > m.registers && !(rows == 1 && vectors == 1)) continue;
          // At least four tasks per core, so that a busy core does not hold the rest up,
          // unless the thread pool's lock bounds the stage (tasks of little work).
          const Prediction pr = predict(plan, m);
          if (plan.tasks < 4.0 * m.cores && band > 1 && !pr.lock_bound) continue;
          scored.push_back({f.name, t, pr});
        }
      }
    }
  }
  KILN_CHECK(!scored.empty(), f.name, ": no register tiling fits");
  size_t best = first_best(scored, [](const TileChoice& c) { return c.prediction.total_s; });
  // Where the thread pool's lock sets the stage's time, tilings within a fifth of the
  // lock's price of the best are ties: that price, fitted to +-20%, is the least certain
  // term, and it eases as tasks do more work, so it would favour slower tiles (a conv2d's
  // 3 x 2 tiles of 12 channels over 4 x 2, for their extra loads). The least work wins.
  if (scored[best].prediction.lock_bound) {
    const double limit = scored[best].prediction.total_s + 0.2 * scored[best].prediction.overhead_s;
    auto work = [](const TileChoice& c) { return c.prediction.compute_s + c.prediction.memory_s; };
    for (size_t i = 0; i < scored.size(); ++i) {
      if (scored[i].prediction.total_s <= limit && work(scored[i]) < work(scored[best]) * 0.999) best = i;
    }
  }
  TileChoice chosen = scored[best];
  if (auto k = knob_tile(f.name)) chosen = {f.name, *k, predict(contraction_plan(s, *k), m)};
  std::stable_sort(scored.begin(), scored.end(), [](const TileChoice& a, const TileChoice& b) {
    return a.prediction.total_s < b.prediction.total_s;
  });
  for (const TileChoice& c : scored) {
    if (c.tiling == chosen.tiling) continue;
    if (count_alternatives(f.name) >= kAlternativesPerDecision) break;
    Knobs change;
    change.tiles[info.key(f.name)] = c.tiling;
    // (A tie the lock's uncertainty broke toward less work counts as no faster.)
    result.alternatives.push_back({f.name, change, std::max(0.0, c.prediction.total_s - chosen.prediction.total_s)});
  }
  result.knobs.tiles[info.key(f.name)] = chosen.tiling;
  return chosen;
}

size_t Search::count_alternatives(const std::string& func) const {
  return size_t(std::count_if(result.alternatives.begin(), result.alternatives.end(),
                              [&](const Alternative& a) { return a.func == func; }));
}

std::optional<ContractionTiling> Search::knob_tile(const std::string& func) const {
  if (!knobs) return std::nullopt;
  auto it = knobs->tiles.find(info.key(func));
  return it == knobs->tiles.end() ? std::nullopt : std::optional(it->second);
}

std::optional<Fusion> Search::knob_fusion(const std::string& func) const {
  if (!knobs) return std::nullopt;
  auto it = knobs->fusion.find(info.key(func));
  return it == knobs->fusion.end() ? std::nullopt : std::optional(it->second);
}

void Search::record_fusion(const FuncInfo& f, Fusion chosen, Fusion other, double extra_s,
                   const std::string& drops_band) {
  result.knobs.fusion[info.key(f.name)] = chosen;
  Knobs change;
  change.fusion[info.key(f.name)] = other;
  result.alternatives.push_back({f.name, change, extra_s, drops_band.empty() ? "" : info.key(drops_band)});
}

std::optional<Fusion> Search::allowed_fusion(const FuncInfo& f, std::initializer_list<Fusion> allowed,
                                     const std::string& why) const {
  const std::optional<Fusion> k = knob_fusion(f.name);
  if (!k) return k;
  for (Fusion a : allowed) {
    if (*k == a) return k;
  }
  std::string names;
  for (Fusion a : allowed) names += std::string(names.empty() ? "'" : " or '") + fusion_name(a) + "'";
  user_error("tuning knobs: ", info.key(f.name), " cannot be placed '", fusion_name(*k), "' (", why,
             "); it can be ", names, " (re-run kiln tune for this pipeline)");
}

std::optional<int> Search::knob_band(const std::string& func) const {
  if (!knobs) return std::nullopt;
  auto it = knobs->bands.find(info.key(func));
  return it == knobs->bands.end() ? std::nullopt : std::optional(it->second);
}

bool Search::has_band(const FuncInfo& f) const {
  if (f.is_output && is_pure_output(f)) return (f.vars.size() >= 2 || rows_var.count(f.name)) && !tiles.count(f.name);
  if (is_fixed(f.name)) return false;
  if (f.reduction == ReductionKind::None) {
    return !f.is_output && f.vars.size() >= 2 && place.at(f.name).where == Where::Root &&
           !f.function.has_extern_definition();
  }
  return f.reduction == ReductionKind::Row && place.at(f.name).where == Where::Root && !root_tiles.count(f.name);
}

void Search::check_knobs() const {
  if (!knobs) return;
  for (const auto& [func, t] : knobs->tiles) {
    const FuncInfo* f = nullptr;
    for (const auto* set : {&tiles, &root_tiles}) {
      for (const auto& [key, tc] : *set) {
        if (info.key(tc.func) == func) f = &info.at(tc.func);
      }
    }
    if (!f) {
      user_error("tuning knobs: ", func, " is not a contraction computed per register tile in this pipeline; ",
                 "the tiled contractions are: ", tiled_names(), " (re-run kiln tune for this pipeline)");
    }
    const int vw = lanes(*f);
    if (t.rows < 1 || t.vectors < 1 || t.band < 1 || t.lanes != vw || t.block < 0 ||
        (t.block > 0 && std::fmod(t.block, t.vectors * vw) != 0)) {
      user_error("tuning knobs: ", func, "'s tiling (", t.rows, " rows x ", t.vectors, " vectors of ", t.lanes,
                 ", block ", t.block, ", band ", t.band, ") is not valid for this target: rows, vectors and band ",
                 "must be at least 1, lanes ", vw, ", and a block a multiple of vectors x lanes");
    }
  }
  for (const auto& [func, fusion] : knobs->fusion) {
    if (!result.knobs.fusion.count(func)) {
      std::string decided;
      for (const auto& [f, p] : result.knobs.fusion) decided += (decided.empty() ? "" : ", ") + f;
      user_error("tuning knobs: ", func, " is not a Func whose placement this pipeline's search chooses; those are: ",
                 decided.empty() ? "(none)" : decided, " (re-run kiln tune for this pipeline)");
    }
  }
  for (const auto& [func, band] : knobs->bands) {
    if (!knob_func(func, [&](const FuncInfo& f) { return has_band(f); })) {
      user_error("tuning knobs: ", func, " is not an output, a row reduction or a pointwise Func at root of ",
                 "this pipeline whose rows are split into tasks (re-run kiln tune for this pipeline)");
    }
    if (band < 1) user_error("tuning knobs: ", func, "'s band must be at least 1, not ", band);
  }
  for (const auto& [func, l] : knobs->lanes) {
    const FuncInfo* f = knob_func(func, [&](const FuncInfo& fi) { return has_own_vector_loop(fi); });
    if (!f) {
      user_error("tuning knobs: ", func, " is not an output or a pointwise Func at root of this pipeline, ",
                 "whose loop the search vectorizes (re-run kiln tune for this pipeline)");
    }
    const int vw = lanes(*f);
    if (vw < 16 || (l != vw && l != vw / 2)) {
      user_error("tuning knobs: ", func, "'s vector lanes (", l, ") are not valid for this target: they can be ",
                 vw < 16 ? std::to_string(vw) : std::to_string(vw) + " or " + std::to_string(vw / 2),
                 " (re-run kiln tune for this pipeline)");
    }
  }
}

std::string Search::tiled_names() const {
  std::string s;
  for (const auto* set : {&tiles, &root_tiles}) {
    for (const auto& [key, tc] : *set) s += (s.empty() ? "" : ", ") + info.key(tc.func);
  }
  return s.empty() ? "(none)" : s;
}

}  // namespace kiln::autoschedule::search_impl
