// Plans of contractions for the cost model, and the CPU contraction choices made before the
// search: conv2d tiles and matmul tasks (search.h).
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

// A vendor GEMM picks an output tile per SM from a few sizes (and splits k across SMs
// when there are fewer tiles than SMs); large tiles reach a larger share of the math
// units' peak (cuBLAS f32 on an H100: ~50 of 67 TFLOP/s), small ones fill more SMs.
struct VendorTile {
  double rows, cols, efficiency;
};
constexpr VendorTile kVendorTiles[] = {{128, 128, 0.75}, {128, 64, 0.65}, {64, 64, 0.5}, {64, 32, 0.35}, {32, 32, 0.25}};
// k per SM below which splitting k no longer pays (the partial sums' extra pass).
constexpr double kMinSplitK = 256;
// Tensor cores give 16-bit types (and TF32) about this many times the f32 FMA lanes' peak
// (dense: an A100's 312 against 19.5 TFLOP/s, an H100's 989 against 67); f64 runs at half
// of f32.
constexpr double kTensorCoreSpeedup = 12;
// The GPU model ranks kiln's tilings against one another; against a vendor kernel it needs
// their real speed. On an H100 kiln's register tiles ran at about 0.4 of the speed the
// model predicts (mlp_f32 8192x1024x4096, KILN_VENDOR=off: 7.67 ms measured for the two
// products predicted at 3.16 ms; its train step's six products 26.2 ms against 9.5),
// while the vendor model above was within 10% (2.98 ms against 3.04).
constexpr double kKilnTileAchieved = 0.4;

GpuMatmulChoice choose_gpu_matmul(const ContractionShape& s, GpuMathUnit unit, double stored_bytes,
                                  const MachineModel& m, const std::string& vendor) {
  GpuMatmulChoice c;
  const double unit_peak = m.gpu_peak_flops() * (unit == GpuMathUnit::TensorCores ? kTensorCoreSpeedup
                                                 : unit == GpuMathUnit::Fp64    ? 0.5
                                                                                : 1.0);
  const double sms = std::max(1, m.sm_count);
  double compute_s = INFINITY, waves = 1, split = 1;
  const VendorTile* tile = &kVendorTiles[0];
  for (const VendorTile& t : kVendorTiles) {
    const double tiles = std::ceil(s.m / t.rows) * std::ceil(s.n / t.cols) * s.batch;
    const double sp = std::max(1.0, std::min(std::floor(sms / tiles), std::floor(s.k / kMinSplitK)));
    const double w = std::ceil(tiles * sp / sms);
    const double time = w * (2.0 * t.rows * t.cols * std::ceil(s.k / sp)) / (unit_peak * t.efficiency / sms);
    if (time < compute_s) compute_s = time, waves = w, split = sp, tile = &t;
  }
  const double bytes = s.bytes * s.batch * (s.m * s.k + s.k * s.n + s.m * s.n);
  const double memory_s = bytes / (m.gpu_dram_gbps * 1e9);
  // Its result is stored and read back by its consumers' kernel (kiln's own kernel
  // computes it in its output's threads, its epilogue fused): a launch and a round trip.
  const double result_bytes = s.bytes * s.batch * s.m * s.n;
  c.vendor_s = std::max(compute_s, memory_s) + 2 * m.launch_us * 1e-6 +
               2.0 * (stored_bytes + result_bytes) / (m.gpu_dram_gbps * 1e9);
  const auto candidates = gpu_contraction_candidates(s, m);
  const std::pair<GpuContractionTiling, GpuPrediction>* best = nullptr;
  for (const auto& cand : candidates) {
    if (!best || cand.second.total_s < best->second.total_s) best = &cand;
  }
  const double launch_s = m.launch_us * 1e-6;
  c.kiln_s = best && best->second.total_s >= 0
                 ? launch_s + std::max(0.0, best->second.total_s - launch_s) / kKilnTileAchieved
                 : INFINITY;
  c.vendor = c.vendor_s < c.kiln_s;
  std::ostringstream o;
  o << (c.vendor ? vendor : std::string("kiln's kernel")) << ": " << vendor << " predicted " << c.vendor_s * 1e3 << " ms ("
    << waves << (waves == 1 ? " wave" : " waves") << " of " << tile->rows << " x " << tile->cols << " tiles"
    << (split > 1 ? ", k split " + std::to_string(int(split)) + " ways" : "")
    << (unit == GpuMathUnit::TensorCores ? " on tensor cores" : "") << "), kiln's best tiling ";
  if (best) {
    const GpuContractionTiling& t = best->first;
    o << c.kiln_s * 1e3 << " ms (" << t.rows << " x " << t.cols << " per thread, " << t.tx << " x " << t.ty
      << " threads)";
  } else {
    o << "none fits";
  }
  c.why = o.str();
  return c;
}

}  // namespace kiln::autoschedule
