// kiln's default schedule: always valid, instant to compute, reasonably fast.
//   - pointwise and injective nodes are inlined into their consumers, so a pointwise
//     chain becomes one loop nest;
//   - outputs and reduction accumulators get loop nests of their own (compute_root);
//   - CPU: the innermost dimension vectorized at the target's natural width, the outer
//     dimensions fused and parallel (a value stored for a contraction: in tasks of about
//     2^14 elements); a reduction to a scalar is split with rfactor so its partial sums
//     run in parallel;
//   - CUDA: gpu_tile over the innermost one or two dimensions.
#pragma once

#include <Halide.h>

#include <functional>
#include <map>
#include <string>

#include "autoscheduler/fixed_funcs.h"
#include "lower/lower_to_halide.h"

namespace kiln {

void apply_default_schedule(LoweredGraph& lowered, const Halide::Target& target);

// A conv2d register tile on the CPU: `vectors` vectors of output columns x `channels`
// output channels (the rules' loops around it are fixed). The rules take 2 x 4.
struct CpuConvTile {
  int vectors = 2, channels = 4;
};
// The tile for one conv2d accumulator, from its stage (StageInfo::extents: ow, o, oh, n)
// and the target's vector lanes: how the Kiln scheduler sizes the tiles of the rules' loops.
using CpuConvTileChoice = std::function<CpuConvTile(const StageInfo& conv, int lanes)>;

// A matmul's register tile on the CPU: `rows` rows x `vectors` vectors of columns.
struct CpuMatmulTile {
  int vectors = 4, rows = 6;
};
// The tile for a product of `columns` columns (0: dynamic) of `type`: as many vectors as
// the register file holds (4 with AVX-512, 2 with AVX2) x 6 rows, but no wider than the
// columns, with the rows that fill the same accumulators instead (up to 12): a 64-column
// tile over attention's 32 head dims computed every product twice.
CpuMatmulTile cpu_matmul_tile(const Halide::Target& target, Halide::Type type, int64_t columns);

// How a matmul's register tiles are divided into parallel tasks on the CPU: `band` row
// tiles per task, each task sweeping `column_tiles` column tiles (0: all), per column
// tile the band's row tiles. The rules take 8 x all: a column tile of b is read from L2
// by 7 of the band's 8 row tiles.
struct CpuMatmulTasks {
  int band = 8, column_tiles = 0;
  // Whether b is packed into column panels first (the rules always pack); else the tiles
  // read b where it lies (matmul_reads_b_in_place).
  bool pack_b = true;
};
// Whether a matmul accumulator's b is an input or constant read at (column, k, batch...),
// through identity wrappers only: stored with its columns innermost, so the register
// tiles can load its vectors in place instead of from packed panels. (A transposed view,
// such as attention's K^T, is not: its packing transposes it.)
bool matmul_reads_b_in_place(const Halide::Func& acc);
// The tasks of one matmul accumulator, from its stage (StageInfo::extents: n, m, batch...)
// and its register tile (of vectors of `lanes` columns).
using CpuMatmulTasksChoice = std::function<CpuMatmulTasks(const StageInfo& matmul, int lanes, CpuMatmulTile tile)>;

// What the Kiln scheduler sizes within the rules' loops (unset: the rules' sizes).
struct CpuContractionChoices {
  CpuConvTileChoice conv_tile;
  CpuMatmulTasksChoice matmul_tasks;
  // The values stored for contractions to read get compute_root() alone, and the
  // caller (the search) writes their loops: autoschedule::Fixed::Stored.
  bool stored_loops_to_caller = false;
};

// Only the default rules' CPU contractions: every matmul and conv2d accumulator with its
// register tiles, its epilogue host, its packed or padded operands, and the values stored
// (or inlined) for contractions to read. The Kiln scheduler starts from these, which are
// written for the microkernel's register budget, and plans the rest of the pipeline
// around them. Returns what it placed, by Func name: left inline, with loops of its own,
// or stored with its loops left to the caller.
// With `choices`, each conv2d accumulator gets the tile, and each matmul accumulator the
// tasks, that they return instead of the rules'.
autoschedule::FixedFuncs apply_default_cpu_contraction_schedule(LoweredGraph& lowered, const Halide::Target& target,
                                                                const CpuContractionChoices& choices = {});

// The GPU counterpart for matmuls only: each matmul accumulator with the rules' register
// tiles per thread and its stored product, and the contraction operands stored
// contiguously (a transposed operand read in place costs strided loads). Kiln's GPU
// search plans the rest, conv2d included. Same return value (nothing left to the caller).
autoschedule::FixedFuncs apply_default_gpu_matmul_schedule(LoweredGraph& lowered, const Halide::Target& target);

}  // namespace kiln
