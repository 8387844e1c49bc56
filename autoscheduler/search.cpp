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

namespace kiln::autoschedule {

using Halide::TailStrategy;

StagePlan contraction_plan(const ContractionShape& s, const ContractionTiling& t) {
  StagePlan p;
  const double tile_cols = double(t.vectors) * t.lanes;
  const double row_tiles = std::ceil(s.m / t.rows), col_tiles = std::ceil(s.n / tile_cols);
  const double tiles = row_tiles * col_tiles * s.batch;
  // Every tile is whole (edge tiles shift inwards), so a ragged edge is computed twice.
  p.flops = s.flops_per_step * tiles * t.rows * tile_cols * s.k;
  p.lanes = t.lanes;
  // Per tile and reduction step: a broadcast per row of each row operand, a vector per
  // column vector of each column operand, one of each for an operand indexed by both.
  p.loads = tiles * s.k *
            (t.rows * s.row_operands + t.vectors * s.column_operands + t.rows * t.vectors * s.point_operands);
  // Accumulators, the column vectors, one broadcast; a value loaded per point is held
  // with a temporary until the update consumes it.
  p.vector_registers = t.rows * t.vectors * (1 + 2 * s.point_operands) + t.vectors * s.column_operands + 1;
  p.chains = t.rows * t.vectors;
  const double block = t.block > 0 ? std::min(t.block, s.n) : s.n;
  // b is read once per band of rows; it stays cached when one block of it fits.
  p.streams.push_back({row_tiles * s.k * s.n * s.bytes * s.batch, s.k * block * s.bytes});
  // a's rows of a tile are read once per tile of columns, from a panel of rows x k.
  p.streams.push_back({col_tiles * s.m * s.k * s.bytes * s.batch, t.rows * s.k * s.bytes});
  // The output is written once.
  p.streams.push_back({s.m * s.n * s.bytes * s.batch, s.m * s.n * s.bytes * s.batch});
  const double blocks = std::ceil(s.n / block);
  p.tasks = t.parallel ? blocks * std::ceil(row_tiles / t.band) * s.batch : 1;
  return p;
}

bool conv_tile_fits(const ConvTile& t, const MachineModel& m) {
  return t.vectors >= 1 && t.channels >= 1 && t.vectors * t.channels + t.vectors + 1 <= m.registers;
}

ConvTile choose_conv_tile(double columns, double channels, double rows, double steps, int lanes, int bytes,
                          const MachineModel& m, std::string* why, std::vector<std::pair<ConvTile, double>>* runner_ups) {
  // Output columns are the matmul's n (vectors of the input row, one load each per step),
  // output channels its m (a broadcast weight each); the rules' loops run every tile of a
  // row in one task.
  ContractionShape s;
  s.n = columns;
  s.m = channels;
  s.k = steps;
  s.batch = rows;
  s.bytes = bytes;
  auto plan = [&](const ConvTile& t) {
    StagePlan p = contraction_plan(s, ContractionTiling{t.channels, t.vectors, lanes, 0, 1, true});
    p.tasks = rows;
    return predict(p, m);
  };
  // Every tile runs the same tasks, a row each: the thread pool costs them alike. Its
  // lock's price eases as tasks do more work, and must not pick a slower tile (on 16
  // cores it preferred resnet18's tiles one channel wide): tiles are ranked by their work.
  auto work = [](const Prediction& p) { return p.total_s - p.overhead_s; };
  const ConvTile rules;
  ConvTile best = rules;
  Prediction best_pr = plan(rules);
  const Prediction rules_pr = best_pr;
  std::vector<std::pair<ConvTile, double>> scored = {{rules, work(rules_pr)}};
  for (int vectors = 1; vectors <= 4; ++vectors) {
    for (int ch = 1; ch <= 16; ++ch) {
      const ConvTile t{vectors, ch};
      if (!conv_tile_fits(t, m) || t == rules) continue;
      const Prediction pr = plan(t);
      scored.push_back({t, work(pr)});
      if (work(pr) < work(best_pr) * 0.99) best = t, best_pr = pr;
    }
  }
  if (why) {
    std::ostringstream o;
    o << best.vectors * lanes << " columns x " << best.channels << " channels, predicted " << best_pr.str();
    if (!(best == rules)) o << " (the rules' " << rules.vectors * lanes << " x " << rules.channels << ": " << rules_pr.str() << ")";
    *why = o.str();
  }
  if (runner_ups) {
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    runner_ups->clear();
    for (const auto& [t, seconds] : scored) {
      if (t == best) continue;
      if (runner_ups->size() == kConvRunnerUps) break;
      runner_ups->push_back({t, seconds - work(best_pr)});
    }
  }
  return best;
}

bool matmul_tasks_valid(const MatmulTasks& t) { return t.band >= 1 && t.column_tiles >= 0; }

StagePlan matmul_tasks_plan(const ContractionShape& s, int rows, int vectors, int lanes, const MatmulTasks& t) {
  // Arithmetic, loads and registers are the register tile's, whatever the tasks.
  StagePlan p = contraction_plan(s, ContractionTiling{rows, vectors, lanes, 0, 1, true});
  const double tile_cols = double(vectors) * lanes;
  const double row_tiles = std::ceil(s.m / rows), col_tiles = std::ceil(s.n / tile_cols);
  const double band = std::min(double(t.band), row_tiles);
  const double per_task = t.column_tiles > 0 ? std::min(double(t.column_tiles), col_tiles) : col_tiles;
  const double bands = std::ceil(row_tiles / band), groups = std::ceil(col_tiles / per_task);
  const double a_bytes = s.m * s.k * s.bytes, b_bytes = s.k * s.n * s.bytes;
  const double b_tile = s.k * tile_cols * s.bytes, a_tile = rows * s.k * s.bytes;
  p.streams.clear();
  // b, four lines a step that no prefetcher hides: each task reads its column tiles once
  // from wherever b lives, and the band's other row tiles read each again after one row
  // tile of a has passed through the cache.
  p.streams.push_back({bands * b_bytes * s.batch, b_bytes});
  p.streams.push_back({(row_tiles - bands) * b_bytes * s.batch, b_tile + a_tile});
  // a, broadcasts the prefetcher runs ahead of: the band's rows once per task, and again
  // per further column tile after the whole band and a column tile of b.
  p.streams.push_back({groups * a_bytes * s.batch, a_bytes, true});
  p.streams.push_back({(col_tiles - groups) * a_bytes * s.batch, band * a_tile + b_tile, true});
  p.streams.push_back({s.m * s.n * s.bytes * s.batch, s.m * s.n * s.bytes * s.batch});
  p.tasks = bands * groups * s.batch;
  // Tasks run band by band, column groups within a band; the last of each may be short.
  // A queue of many thousands evens out anyway.
  if (p.tasks <= 16384) {
    std::vector<double> sizes;
    for (double b = 0; b < s.batch; ++b) {
      for (double r = 0; r < bands; ++r) {
        for (double g = 0; g < groups; ++g) {
          sizes.push_back(std::min(band, row_tiles - r * band) * std::min(per_task, col_tiles - g * per_task));
        }
      }
    }
    p.task_sizes = std::move(sizes);
  }
  return p;
}

MatmulTasks choose_matmul_tasks(const ContractionShape& s, int rows, int vectors, int lanes, const MachineModel& m,
                                std::string* why, std::vector<std::pair<MatmulTasks, double>>* runner_ups) {
  auto plan = [&](const MatmulTasks& t) { return matmul_tasks_plan(s, rows, vectors, lanes, t); };
  const MatmulTasks rules;
  const Prediction rules_pr = predict(plan(rules), m);
  struct Scored {
    MatmulTasks tasks;
    Prediction prediction;
    double count;  // parallel tasks
  };
  std::vector<Scored> scored = {{rules, rules_pr, plan(rules).tasks}};
  const double row_tiles = std::ceil(s.m / rows), col_tiles = std::ceil(s.n / (double(vectors) * lanes));
  // Bands of powers of two row tiles, and all of them (a task per group of columns).
  std::vector<int> bands;
  for (int band = 1; band < row_tiles; band *= 2) bands.push_back(band);
  bands.push_back(int(row_tiles));
  for (int band : bands) {
    for (int columns = 0; columns == 0 || columns < col_tiles; columns = columns == 0 ? 1 : 2 * columns) {
      const MatmulTasks t{band, columns};
      if (t == rules) continue;
      const StagePlan p = plan(t);
      scored.push_back({t, predict(p, m), p.tasks});
    }
  }
  // Of the choices within 2% of the fastest, the tallest band, then the fewest tasks:
  // the model does not see noise that small, nor what shorter bands and smaller tasks
  // lose (b read by more tasks, each from the core that packed it; L1 reuse, prefetch
  // runs); and the rules' unless that is 3% faster.
  double fastest = rules_pr.total_s;
  for (const Scored& c : scored) fastest = std::min(fastest, c.prediction.total_s);
  const Scored* pick = nullptr;
  auto band_of = [&](const Scored& c) { return std::min(double(c.tasks.band), row_tiles); };
  for (const Scored& c : scored) {
    if (c.prediction.total_s > fastest * 1.02) continue;
    if (!pick || band_of(c) > band_of(*pick) || (band_of(c) == band_of(*pick) && c.count < pick->count)) pick = &c;
  }
  if (pick->prediction.total_s > rules_pr.total_s * 0.97) pick = &scored[0];
  const MatmulTasks best = pick->tasks;
  const Prediction best_pr = pick->prediction;
  auto str = [](const MatmulTasks& t) {
    return std::to_string(t.band) + " row tiles x " + (t.column_tiles ? std::to_string(t.column_tiles) : std::string("all")) +
           " column tiles";
  };
  if (why) {
    std::ostringstream o;
    o << "tasks of " << str(best) << ", predicted " << best_pr.str();
    if (!(best == rules)) o << " (the rules' " << str(rules) << ": " << rules_pr.str() << ")";
    *why = o.str();
  }
  if (runner_ups) {
    std::stable_sort(scored.begin(), scored.end(),
                     [](const Scored& a, const Scored& b) { return a.prediction.total_s < b.prediction.total_s; });
    runner_ups->clear();
    for (const Scored& c : scored) {
      if (c.tasks == best) continue;
      if (runner_ups->size() == kMatmulRunnerUps) break;
      runner_ups->push_back({c.tasks, c.prediction.total_s - best_pr.total_s});
    }
  }
  return best;
}

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

namespace {

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

// Runner-ups kept per decision: enough to fill any sensible --candidates.
constexpr size_t kAlternativesPerDecision = 8;

// The least input a parallel task of a reduction at root reads (see schedule_reduction).
constexpr double kMinTaskBytes = 256 * 1024;

// Vectors of partial results a row reduction keeps (see vectorize_rows).
constexpr int kAccumulators = 4;

struct Search {
  const Halide::Pipeline& pipeline;
  const Halide::Target& target;
  const MachineModel& m;
  const Knobs* knobs;  // forced choices, or null
  const FixedFuncs* fixed;  // scheduled already, or null
  PipelineInfo info;
  std::vector<Alternative> alternatives;
  std::map<std::string, Placement> place;
  std::map<std::string, double> evaluations;  // of inlined Funcs: how often each point is recomputed
  std::map<std::string, TileChoice> tiles;    // by host output
  // A tile host's vars in the order of its contraction's dims (then its others, in its
  // own order), where it reads the contraction at a permutation of its point.
  std::map<std::string, std::vector<std::string>> tile_vars;
  std::map<std::string, TileChoice> root_tiles;  // contractions tiled in a stored wrapper, by name
  std::map<std::string, std::string> rows_var;  // host output -> its row loop
  SearchResult result;

  Search(const Halide::Pipeline& p, const Halide::Target& t, const MachineModel& mm, const Knobs* k,
         const FixedFuncs* fx = nullptr)
      : pipeline(p), target(t), m(mm), knobs(k), fixed(fx), info(analyze(p)) {}

  // Scheduled before the search (Inline or OwnLoops); a Stored Func is the search's to loop.
  bool is_fixed(const std::string& name) const {
    auto it = fixed ? fixed->find(name) : FixedFuncs::const_iterator{};
    return fixed && it != fixed->end() && it->second != Fixed::Stored;
  }
  bool is_stored(const std::string& name) const {
    auto it = fixed ? fixed->find(name) : FixedFuncs::const_iterator{};
    return fixed && it != fixed->end() && it->second == Fixed::Stored;
  }

  int lanes(const FuncInfo& f) const {
    return std::max(1, target.natural_vector_size(f.function.output_types()[0]));
  }

  // A point's (a reduction step's) arithmetic in the cost model's vector flops: a libm
  // call per lane costs its cycles on every lane, which vector arithmetic would share.
  double as_vector_flops(const FuncInfo& f, double flops, double scalar_cycles) const {
    return flops + scalar_cycles * 2.0 * lanes(f) * m.fma_units;
  }
  double point_flops(const FuncInfo& f) const {
    return as_vector_flops(f, f.flops_per_point, f.scalar_cycles_per_point);
  }
  double step_flops(const FuncInfo& f) const { return as_vector_flops(f, f.update_flops, f.update_scalar_cycles); }

  // Whether the search vectorizes `f`'s loop over its points as a whole: an output that
  // is not register-tiled, or a pointwise Func at root. A lanes knob names one of these.
  bool has_own_vector_loop(const FuncInfo& f) const {
    if (is_fixed(f.name) || f.vars.empty()) return false;
    if (f.is_output && is_pure_output(f)) return !tiles.count(f.name);
    return f.reduction == ReductionKind::None && place.at(f.name).where == Where::Root &&
           !f.function.has_extern_definition();
  }

  // The vector lanes of `f`'s own loop, which makes `scalar_cycles` of per-lane libm calls
  // per point. A libm call costs the same per lane at any width, but each lane is taken
  // out of the vector and put back, which can make half the width faster (docs/
  // autoscheduler.md, "Measurements"). The cost model cannot tell the widths apart, so
  // half the target's width is a runner-up at the same prediction, for kiln tune to
  // measure. A knob overrides.
  int loop_lanes(const FuncInfo& f, double scalar_cycles) {
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
      alternatives.push_back({f.name, change, 0.0});
    }
    return chosen;
  }

  // Per-lane libm cycles per point of output `h`, with those of the Funcs inlined into
  // it and computed per row of it (as schedule_output counts their arithmetic).
  double output_scalar_cycles(const FuncInfo& h) const {
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

  void decide(const std::string& stream, const std::string& line) {
    result.decisions.push_back(line);
    log(stream, line);
  }

  InlineView view() const {
    return {info, [this](const std::string& f) { return place.at(f).where == Where::Inline; }, evaluations};
  }
  std::set<std::string> effective_consumers(const FuncInfo& f) const { return view().effective_consumers(f); }
  double inline_evaluations(const FuncInfo& f) const { return view().inline_evaluations(f); }

  // An output whose loops the search writes: tiles and rows of other Funcs go there.
  bool is_pure_output(const FuncInfo& f) const {
    return f.is_output && !f.function.has_update_definition() && !f.function.has_extern_definition() &&
           !f.vars.empty() && !is_fixed(f.name);
  }

  // A Func whose rows may compute the rows of row reductions it reads: an output whose
  // loops the search writes, or a value of two dims or more stored for a contraction,
  // whose rows the search loops too (a layer norm's or a softmax's result feeding a
  // matmul: its sums are taken per row of it, not in parallel loops of their own).
  bool hosts_rows(const FuncInfo& h) const {
    return is_pure_output(h) || (is_stored(h.name) && h.vars.size() >= 2 && h.reduction == ReductionKind::None &&
                                 !h.function.has_extern_definition());
  }

  // ---- placement (consumers before producers) --------------------------------------

  void place_func(const FuncInfo& f) {
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
      alternatives.push_back({f.name, change, pred.total_s - options[chosen].second.total_s});
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

  // The output at whose rows every reader of pointwise `f` is computed (the output
  // itself, or row reductions at its rows), where a row of `f` is a row of it; or "".
  std::string row_host(const FuncInfo& f) const {
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

  void place_reduction(const FuncInfo& f) {
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

  TileChoice choose_tiling(const FuncInfo& f) {
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
      alternatives.push_back({f.name, change, std::max(0.0, c.prediction.total_s - chosen.prediction.total_s)});
    }
    result.knobs.tiles[info.key(f.name)] = chosen.tiling;
    return chosen;
  }

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

  size_t count_alternatives(const std::string& func) const {
    return size_t(std::count_if(alternatives.begin(), alternatives.end(),
                                [&](const Alternative& a) { return a.func == func; }));
  }

  std::optional<ContractionTiling> knob_tile(const std::string& func) const {
    if (!knobs) return std::nullopt;
    auto it = knobs->tiles.find(info.key(func));
    return it == knobs->tiles.end() ? std::nullopt : std::optional(it->second);
  }

  std::optional<Fusion> knob_fusion(const std::string& func) const {
    if (!knobs) return std::nullopt;
    auto it = knobs->fusion.find(info.key(func));
    return it == knobs->fusion.end() ? std::nullopt : std::optional(it->second);
  }

  // A placement the search chose between `chosen` and `other` (`extra_s` slower, by the
  // cost model): a knob, and `other` a runner-up.
  // `drops_band`: a Func that `other` leaves without rows to band (see Alternative).
  void record_fusion(const FuncInfo& f, Fusion chosen, Fusion other, double extra_s,
                     const std::string& drops_band = "") {
    result.knobs.fusion[info.key(f.name)] = chosen;
    Knobs change;
    change.fusion[info.key(f.name)] = other;
    alternatives.push_back({f.name, change, extra_s, drops_band.empty() ? "" : info.key(drops_band)});
  }

  // A fusion knob for `f` (if any) that must be one of `allowed`; a kiln::Error otherwise.
  std::optional<Fusion> allowed_fusion(const FuncInfo& f, std::initializer_list<Fusion> allowed,
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

  std::optional<int> knob_band(const std::string& func) const {
    if (!knobs) return std::nullopt;
    auto it = knobs->bands.find(info.key(func));
    return it == knobs->bands.end() ? std::nullopt : std::optional(it->second);
  }

  // Knobs must name the decisions this pipeline has, with values the loops can take:
  // checked after placement (which schedules nothing) and before the first directive,
  // so a stale knob leaves the pipeline untouched.
  // Whether `f`'s rows are split into parallel tasks of a band (a knob): a pure output
  // of two dims or more that is not register-tiled, a 1-D output that computes row
  // reductions, a row reduction at root, or a pointwise Func of two dims or more at root.
  bool has_band(const FuncInfo& f) const {
    if (f.is_output && is_pure_output(f)) return (f.vars.size() >= 2 || rows_var.count(f.name)) && !tiles.count(f.name);
    if (is_fixed(f.name)) return false;
    if (f.reduction == ReductionKind::None) {
      return !f.is_output && f.vars.size() >= 2 && place.at(f.name).where == Where::Root &&
             !f.function.has_extern_definition();
    }
    return f.reduction == ReductionKind::Row && place.at(f.name).where == Where::Root && !root_tiles.count(f.name);
  }

  // The Func a knob names (by its key, PipelineInfo::keys) that `fits`, or nullptr.
  template <typename Fits>
  const FuncInfo* knob_func(const std::string& key, Fits fits) const {
    for (const auto& [name, fi] : info.funcs) {
      if (info.key(name) == key && fits(fi)) return &fi;
    }
    return nullptr;
  }

  void check_knobs() const {
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

  std::string tiled_names() const {
    std::string s;
    for (const auto* set : {&tiles, &root_tiles}) {
      for (const auto& [key, tc] : *set) s += (s.empty() ? "" : ", ") + info.key(tc.func);
    }
    return s.empty() ? "(none)" : s;
  }

  // ---- loops ------------------------------------------------------------------------

  // The outer loops of an output: outer dims fused into one row loop, split into
  // parallel tasks of `band` rows. Returns the row loop's name.
  std::string outer_loops(StageWriter& s, const std::vector<std::string>& vars, const std::string& first_outer,
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

  // An output's rows (outer dims fused) in parallel tasks of `band` rows, each row one
  // vectorized loop over the innermost dim.
  StagePlan row_plan(const FuncInfo& h, double flops_per_point, double rows, int band) const {
    StagePlan p;
    p.flops = flops_per_point * h.points();
    p.lanes = lanes(h);
    p.tasks = std::ceil(rows / band);
    p.streams.push_back({2.0 * h.bytes_total(), 2.0 * h.bytes_total()});
    return p;
  }

  // A row reduction at root: its rows in parallel tasks of `band`, each row
  // reduced in vectors of partial results (vectorize_rows), its input read once.
  StagePlan row_reduction_plan(const FuncInfo& r, int band) const {
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

  // The fewest rows of reduction `r` per task: tasks that read at least kMinTaskBytes
  // while there is a task per core (one task per short row costs more in the thread pool,
  // its queue's lock contended by every core, than summing the row does: on 16 cores,
  // four tasks per core put gpt_block's layer norms, 128 rows of 128, in 64 tasks of 1 KB,
  // and `kiln tune` measured larger bands faster).
  int least_band(const FuncInfo& r, double rows) const {
    const double bytes_per_row = double(r.bytes) * r.reduction_trips();
    int least = 1;
    while (2.0 * least * bytes_per_row <= kMinTaskBytes && std::ceil(rows / (2.0 * least)) >= m.cores) least *= 2;
    return least;
  }

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
      alternatives.push_back({func, change, pr.total_s - chosen.second.total_s});
    }
    result.knobs.bands[info.key(func)] = chosen.first;
    result.predicted_s += chosen.second.total_s;
    return chosen;
  }

  void schedule_output(ScheduleWriter& w, const FuncInfo& h) {
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

  // Elements per parallel task of 1-D stage `h` (`flops` a point): of kVectorTask and its
  // doublings that leave two tasks at least, the one the cost model prices lowest (fewer
  // tasks cost the thread pool less; more leave less of the end idle), with its
  // prediction in *pr; 0 (and *pr untouched) where the stage is too short for two.
  int choose_vector_task(const FuncInfo& h, double flops, Prediction* pr) const {
    const double n = double(h.extents[0]);
    int best = 0;
    for (int chunk = kVectorTask; 2.0 * chunk <= n; chunk *= 2) {
      const Prediction p = predict(row_plan(h, flops, std::ceil(n / chunk), 1), m);
      if (best == 0 || p.total_s < pr->total_s * 0.999) best = chunk, *pr = p;
    }
    return best;
  }

  // A 1-D output. Where it computes row reductions (their rows are its elements), tasks of
  // a band of elements, each computing its band of rows first (one parallel loop, where
  // the reductions at root and a copy to the output would be two); else tasks of 2^14
  // elements where there are two of them at least.
  void schedule_vector_output(ScheduleWriter& w, const FuncInfo& h, double flops, int vw) {
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

  // A contraction computed per register tile of its output: tiles of rows x vectors,
  // shifted inwards at the edges (so every tile is full), column blocks outermost, bands
  // of tile rows as parallel tasks. Outputs smaller than a tile use 1 x 1 tiles.
  void schedule_tiled_output(ScheduleWriter& w, const FuncInfo& h, const TileChoice& tc) {
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

  // A contraction that no output can host, computed per register tile of a stored copy
  // of itself (Func::in()). Edge tiles are shifted inwards, so every tile is whole and its
  // accumulators fit in registers; that needs the copy to be at least one tile, which the
  // estimates say it is (were it smaller at run time, the tile would read before the
  // region: kiln's ops clamp their reads, another generator's may fail a bounds check).
  // Below a tile, edge tiles are guarded.
  void schedule_tiled_root(ScheduleWriter& w, const FuncInfo& r, const TileChoice& tc) {
    const ContractionTiling& t = tc.tiling;
    const int tw = t.vectors * t.lanes, tm = t.rows;
    const bool whole = r.extents[0] >= tw && r.extents[1] >= tm;
    const std::string copy = w.wrap(r.name);
    w.compute_root(copy);
    StageWriter s = w.stage(copy);
    tile_loops(s, r.vars, t, tw, tm, whole ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf, true);
    compute_tile(w, r, copy, tc);
  }

  // The loops of a tile host over `vars`: tiles of tw columns x tm rows, column blocks,
  // bands of tile rows in parallel; the tile's columns vectorized and both unrolled.
  void tile_loops(StageWriter& s, const std::vector<std::string>& vars, const ContractionTiling& t, int tw, int tm,
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

  // The contraction `r` per tile of `host`: its tile in registers across the reduction.
  void compute_tile(ScheduleWriter& w, const FuncInfo& r, const std::string& host, const TileChoice& tc) {
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

  // Rows of a reduction along the contiguous dim: partial results in vectors (rfactor)
  // so its body runs vectorized, then those vectors reduced.
  // The vectors of partial results are computed per row (`row`: r's loop over its rows).
  // Up to kAccumulators vectors of partial results, unrolled, so that independent adds
  // hide the add's latency (one vector accumulator waits ~4 cycles per step), where each
  // gets at least two steps. Their lanes then combine in a tree (atomic, vectorized: a
  // VectorReduce), not one lane after another, whose serial sum of 4 x 16 lanes cost a
  // short row as much as its loads (docs/autoscheduler.md, "Measurements").
  void vectorize_rows(ScheduleWriter& w, const FuncInfo& r, const std::string& row = "") {
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

  void schedule_reduction(ScheduleWriter& w, const FuncInfo& r, const Placement& p) {
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

  void schedule_root(ScheduleWriter& w, const FuncInfo& f) {
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

  SearchResult run() {
    result.warnings = info.warnings;
    for (auto it = info.order.rbegin(); it != info.order.rend(); ++it) place_func(info.at(*it));
    check_knobs();
    ScheduleWriter w = writer_for(info);
    // Outputs first (their loops are where tiles and rows are computed), then the rest.
    for (auto it = info.order.rbegin(); it != info.order.rend(); ++it) {
      const FuncInfo& f = info.at(*it);
      if (f.is_output && is_pure_output(f)) schedule_output(w, f);
    }
    for (auto it = info.order.rbegin(); it != info.order.rend(); ++it) {
      const FuncInfo& f = info.at(*it);
      const Placement& p = place.at(f.name);
      if ((f.is_output && is_pure_output(f)) || is_fixed(f.name)) continue;
      if (f.reduction != ReductionKind::None) {
        schedule_reduction(w, f, p);
      } else if (p.where == Where::Root) {
        schedule_root(w, f);
      } else if (p.where == Where::AtRow) {
        w.compute_at(f.name, p.host, rows_var.at(p.host));
        if (f.extents[0] >= lanes(f)) w.stage(f.name).vectorize(f.vars[0], lanes(f), TailStrategy::GuardWithIf);
        decide("schedule", f.name + ": a row at a time, vectorized by " + std::to_string(lanes(f)));
      }
    }
    result.source = w.source();
    result.alternatives = alternatives;
    return result;
  }
};

}  // namespace

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
