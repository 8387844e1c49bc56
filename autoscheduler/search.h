// kiln's CPU search: for every Func of a pipeline, where it is computed (inlined into its
// consumers, computed per tile or row of an output, or at root) and how its loops run
// (register tiles, cache blocks, vector width, parallel tasks), each choice scored with
// the cost model over a small candidate set. Decisions are logged under KILN_LOG=schedule
// (loops and tiles) and KILN_LOG=fusion (where each Func is computed).
#pragma once

#include <Halide.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cost_model.h"
#include "gpu_cost_model.h"
#include "fixed_funcs.h"
#include "machine_model.h"

namespace kiln::autoschedule {

// One way to run a contraction: register tiles of `rows` x `vectors` vectors of `lanes`,
// column blocks of `block` columns, `band` tiles of rows per parallel task.
struct ContractionTiling {
  int rows = 1, vectors = 1, lanes = 1;
  double block = 0;  // 0: no column blocking
  int band = 1;
  bool parallel = true;
  bool operator==(const ContractionTiling& o) const = default;
};

// The GPU version of a contraction's tiling: each thread accumulates `rows` x `cols` points (cols adjacent, one
// vector) over the reduction, unrolled by `unroll` steps (an inner reduction dim of up
// to 8 is unrolled whole instead); blocks of `tx` x `ty` threads.
struct GpuContractionTiling {
  int rows = 1, cols = 1, tx = 32, ty = 8, unroll = 1;
  bool operator==(const GpuContractionTiling& o) const = default;
};

// A GPU kernel of one thread per point (pointwise stages, reductions serial per point):
// blocks of `tx` x `ty` threads, each `e` adjacent elements of the innermost dim as one
// vector.
struct GpuBlockTiling {
  int tx = 32, ty = 8, e = 1;
  bool operator==(const GpuBlockTiling& o) const = default;
};

// A GPU row reduction (alone, or fused into the row blocks of the output that reads it):
// `threads` per row, each reducing a strided slice, `rows` rows per block.
struct GpuRowTiling {
  int threads = 128, rows = 1;
  bool operator==(const GpuRowTiling& o) const = default;
};

// The register tile of a conv2d accumulator on the CPU, in the loops kiln's rules give it
// (lower/default_schedule.h): `vectors` vectors of output columns x `channels` output
// channels, accumulated over the whole window and all input channels, the tiles of each
// output row one parallel task. The rules always take 2 x 4; a row narrower than two
// vectors (resnet's later stages: 16, 8, 4 or 7 columns) then computes mostly padding.
struct ConvTile {
  int vectors = 2, channels = 4;
  bool operator==(const ConvTile& o) const = default;
};

// How a matmul accumulator's register tiles are divided into parallel tasks in the loops
// kiln's rules give it (lower/default_schedule.h): `band` row tiles per task, and
// `column_tiles` column tiles per task (0: all of them). Within a task each column tile
// of b (k x tile columns) is read from far memory once and from L2 by the band's other
// row tiles, and the band's rows of a stay in L2 across its column tiles. The rules take
// 8 row tiles and all the columns: few, unequal tasks on small batches (64 rows make 11
// row tiles: tasks of 8 and 3, one core idle most of the time).
struct MatmulTasks {
  int band = 8, column_tiles = 0;
  // One task per batch element (all its rows and columns), in which the batched values
  // the matmul reads are computed too: its packed b, a stored operand such as attention's
  // probabilities, and the matmul and packing behind that (src/lower/batch_fusion.h).
  bool per_batch = false;
  // Whether b is packed into column panels first (the rules always pack it); else the
  // tiles read it in place, where it is an input or a constant stored with its columns
  // innermost: a small b stays in L2 anyway, and packing it costs a pass over it per call.
  bool pack_b = true;
  bool operator==(const MatmulTasks& o) const = default;
};

// A Func's name without the "$<n>" suffixes Halide adds to keep names unique within a
// process: "matmul_acc$9" -> "matmul_acc". Fingerprints use it, and knobs (numbered
// where several Funcs share one: PipelineInfo::keys), so that they hold across processes
// that built other Funcs first.
std::string stable_name(const std::string& name);

// Where the CPU search computes a Func that it could compute elsewhere: a pointwise Func
// inline in its consumers or at root; a row reduction per row of the output that reads
// it (while the row is in cache) or at root.
enum class Fusion { Inline, Root, PerRow };
const char* fusion_name(Fusion f);  // "inline", "root", "row"

// The search's free choices, by stable Func name: what `kiln tune` varies and the tuning
// database stores, so that a measured winner can be applied again to the same pipeline.
// A Func without an entry gets the cost model's choice.
struct Knobs {
  // The CPU search's.
  std::map<std::string, ContractionTiling> tiles;  // contraction -> its register tiling
  std::map<std::string, int> bands;                // output, row reduction -> rows per parallel task
  std::map<std::string, Fusion> fusion;            // where a Func is computed (see Fusion)
  std::map<std::string, int> lanes;                // loop making per-lane libm calls -> its vector lanes
  // A compiled graph's conv2d accumulator -> its register tile in the rules' loops (chosen
  // before the search, by choose_conv_tile, in kiln's graph compiler; the search ignores it).
  std::map<std::string, ConvTile> conv_tiles;
  // A compiled graph's matmul accumulator -> its tasks in the rules' loops (the same way:
  // choose_matmul_tasks, before the search).
  std::map<std::string, MatmulTasks> matmul_tasks;
  // The GPU search's.
  std::map<std::string, GpuContractionTiling> gpu_tiles;  // contraction -> its per-thread tiling
  std::map<std::string, GpuBlockTiling> gpu_blocks;       // one-thread-per-point kernel -> its blocks
  std::map<std::string, GpuRowTiling> gpu_rows;           // row reduction, or fused row host -> its rows
  bool empty() const;
  bool operator==(const Knobs& o) const;
  // Every knob of `change` replaces this one's of the same Func and kind.
  void merge(const Knobs& change);
  std::string str() const;  // "matmul_acc: 6x2 tiles, block 0, band 4; out: band 8"
};

// A runner-up of one decision: `change` is its one knob that differs from the chosen
// schedule's, `extra_s` how much slower the cost model thinks the pipeline becomes.
struct Alternative {
  Alternative(std::string f, Knobs c, double extra, std::string drops = "")
      : func(std::move(f)), change(std::move(c)), extra_s(extra), drops_band(std::move(drops)) {}
  std::string func;
  Knobs change;
  double extra_s = 0;
  // A Func (stable name) whose rows this change takes away, so that no band can split
  // them: a row reduction moved off the rows of the 1-D output it gave rows to, or a row
  // reduction at root moved onto an output's rows. ranked_candidates drops the cost
  // model's band for that Func where it applies the change, and does not pair the change
  // with a runner-up band for it.
  std::string drops_band;
};

struct SearchResult {
  std::string source;                 // schedule source: the body of apply_schedule_<name>
  std::vector<std::string> decisions;  // one line per decision, as logged
  std::vector<std::string> warnings;   // missing estimates, defaults used
  double predicted_s = 0;              // the cost model's time for the whole pipeline
  Knobs knobs;                         // every choice made, as knobs
  std::vector<Alternative> alternatives;  // runner-ups of each decision, for ranked_candidates
};

// Funcs placed before the search: lower/fixed_funcs.h.

// Schedules `pipeline` (its Funcs are modified) for a CPU target, or a CUDA target (the
// GPU search). With `knobs`, their choices replace the cost model's; a knob naming a Func
// the pipeline lacks, or of the wrong kind, is a kiln::Error raised before anything is
// scheduled. CPU knobs for a GPU target, or GPU knobs for a CPU target, are an error too.
SearchResult schedule_pipeline(const Halide::Pipeline& pipeline, const Halide::Target& target,
                               const MachineModel& machine, const Knobs* knobs = nullptr,
                               const FixedFuncs* fixed = nullptr);

// The GPU search (gpu_search.cpp): blocks, threads and per-thread tiles for a CUDA
// target; schedule_pipeline calls it for targets with a GPU feature.
SearchResult schedule_gpu_pipeline(const Halide::Pipeline& pipeline, const Halide::Target& target,
                                   const MachineModel& machine, const Knobs* knobs = nullptr,
                                   const FixedFuncs* fixed = nullptr);

// One schedule the search could pick, with its predicted time.
struct Candidate {
  Knobs knobs;
  double predicted_s = 0;
};

// Up to `n` candidates, best predicted first: the cost model's choice, then the choice
// with one knob replaced by a runner-up of that decision (another register tiling, another
// task size, the other placement of a Func), or two or three knobs of different decisions
// replaced by their leading runner-ups. A register tiling or a task size changes its own
// stage's cost only, so those predictions are exact sums of the stages' costs; a
// placement also changes what its consumer computes, so with one the sum is an estimate.
// Schedules `pipeline` while searching: pass a throwaway copy (with `fixed`'s schedules
// applied, as schedule_pipeline is given them). GPU targets rank the GPU search's choices
// the same way (per-thread tilings, blocks, rows per block).
// `before`: runner-ups of decisions made before the search (a compiled model's conv2d
// tiles), best predicted first, taken in turns with the search's candidates after the
// cost model's choice (their extras are over their own stage, not the search's time).
std::vector<Candidate> ranked_candidates(const Halide::Pipeline& pipeline, const Halide::Target& target,
                                         const MachineModel& machine, int n, const FixedFuncs* fixed = nullptr,
                                         const std::vector<Alternative>* before = nullptr);

// A matmul-like stage, out[m][n] += a[m][k] b[k][n] over `batch` independent problems
// (its shape), and the plan of one way to run it (a ContractionTiling). The plan is what
// the search scores; tests rank schedules with it.
struct ContractionShape {
  double m = 1, n = 1, k = 1, batch = 1;
  int bytes = 4;
  // Loads per reduction step (see FuncInfo::OperandLoads): matmul reads one column
  // operand and one row operand; a pooling window one operand indexed by both.
  int column_operands = 1, row_operands = 1, point_operands = 0;
  double flops_per_step = 2;  // per output point and reduction step: an FMA
  double inner_k = 0;         // extent of the innermost reduction dim (0: all of k)
};

StagePlan contraction_plan(const ContractionShape& s, const ContractionTiling& t);

// The shape of a contraction Func: n its innermost dim, m the next, batch the rest, its
// operands' loads as the analysis counted them.
struct FuncInfo;
ContractionShape contraction_shape(const FuncInfo& f);

// The tile of least predicted time (contraction_plan: columns rounded up to whole vectors,
// channels to whole tiles; loads, accumulator chains and registers per step) for a
// convolution of `columns` x `channels` outputs per row, `rows` rows (output rows x batch)
// and `steps` reduction steps (input channels x window), at `lanes` lanes; the rules' 2 x 4
// where nothing predicts 1% faster. `why`, when given, gets the prediction; `runner_ups`
// the next best tiles (up to kConvRunnerUps) with how much slower each is predicted, for
// `kiln tune <model>` to measure.
ConvTile choose_conv_tile(double columns, double channels, double rows, double steps, int lanes, int bytes,
                          const MachineModel& m, std::string* why = nullptr,
                          std::vector<std::pair<ConvTile, double>>* runner_ups = nullptr);
constexpr size_t kConvRunnerUps = 4;
// Whether `t` fits the register file of `m` (accumulators, the input vectors, a weight).
bool conv_tile_fits(const ConvTile& t, const MachineModel& m);

// The plan of a matmul of shape `s` in the rules' loops: register tiles of `rows` x
// `vectors` vectors of `lanes` (the rules'), divided into tasks by `t`. Each task reads its
// column tiles of b and its band's rows of a once from wherever they live; a column tile
// of b is read again by the band's other row tiles from the cache that holds it and one
// row tile of a, the band's rows of a again per further column tile from the cache that
// holds them and a column tile of b. a's reads are broadcasts, a line per 16 steps of a
// row, which the prefetcher runs ahead of (Stream::overlaps_compute); b's, four lines a
// step, are not. Unequal tasks (a ragged last band or column group) are queued in order.
StagePlan matmul_tasks_plan(const ContractionShape& s, int rows, int vectors, int lanes, const MatmulTasks& t);

// The tasks for a matmul of shape `s` with the rules' register tiles, scored by
// matmul_tasks_plan (bands of any power of two row tiles or all of them, column groups of
// any power of two tiles): of those predicted within 2% of the fastest, the tallest band
// (b read by the fewest tasks), then the fewest tasks (the model does not see what smaller
// tasks lose in reuse); the rules' 8 row tiles and all columns unless that is predicted
// 3% faster. `why` and `runner_ups` as for choose_conv_tile (a
// runner-up may be predicted up to 2% faster than the choice).
MatmulTasks choose_matmul_tasks(const ContractionShape& s, int rows, int vectors, int lanes, const MachineModel& m,
                                std::string* why = nullptr,
                                std::vector<std::pair<MatmulTasks, double>>* runner_ups = nullptr);
// Whether `t` can divide a matmul's tiles: at least one row tile per band, and column
// tiles per task at least 1 or 0 (all).
bool matmul_tasks_valid(const MatmulTasks& t);
constexpr size_t kMatmulRunnerUps = 4;

// Reduction steps one iteration of the thread's loop unrolls.
int gpu_unrolled_steps(const ContractionShape& s, int unroll);
// The GPU search's register tilings of a contraction that fit, each with its prediction.
std::vector<std::pair<GpuContractionTiling, GpuPrediction>> gpu_contraction_candidates(const ContractionShape& s,
                                                                                      const MachineModel& m);

// A GPU matmul as a vendor GEMM (cuBLASLt) runs it, against kiln's best register tiling,
// each priced from the machine model: the vendor kernel in output tiles of 128 x 128 per SM
// at a share of the peak (f32 on FMA lanes; 16-bit types and TF32 on tensor cores), at
// least its operands' and result's DRAM traffic, plus its launch, its result stored and
// read back by the kernel of its consumers, and `stored_bytes` that kiln must store first
// for it (an operand computed by other Funcs, which kiln's own kernel may compute where it
// reads it).
struct GpuMatmulChoice {
  bool vendor = false;
  double vendor_s = 0, kiln_s = 0;
  std::string why;  // "cuBLASLt 0.41 ms against kiln's 1.2 ms (8 x 4 per thread, ...)"
};
enum class GpuMathUnit { Fp32, TensorCores, Fp64 };
// `vendor` names the library in `why` ("cuBLASLt", or "cuDNN" for a convolution priced as
// its implicit GEMM).
GpuMatmulChoice choose_gpu_matmul(const ContractionShape& s, GpuMathUnit unit, double stored_bytes,
                                  const MachineModel& m, const std::string& vendor = "cuBLASLt");
GpuStagePlan gpu_contraction_plan(const ContractionShape& s, const GpuContractionTiling& t, const MachineModel& m);

}  // namespace kiln::autoschedule
