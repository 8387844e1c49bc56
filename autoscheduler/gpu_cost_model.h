// The GPU side of kiln's cost model: the predicted time of one kernel (a stage's loop
// nest on gpu_blocks and gpu_threads) from the machine model alone.
//
// A kernel is a grid of blocks; each thread runs `steps` dependent steps (one iteration
// of its serial loop: a reduction step, or the whole body for a pointwise stage). Every
// step issues its loads at once, waits for them (`step_latency` cycles) and then spends
// `step_issue` SM cycles per warp issuing its arithmetic and loads. An SM keeps
// `resident` warps (limited by threads, registers and shared memory per SM), so
//
//   step time = max(resident x step_issue, step_latency + step_issue)   (issue vs latency bound)
//   time      = waves x steps x step time / clock, at least the DRAM and L2 traffic over
//               their bandwidths, plus one launch.
//
// Occupancy, waves (a partial last wave costs a whole one), latency hiding by warps and
// by independent loads per step, and coalescing (bytes moved per warp load) are all in
// those few terms, each visible in the log line.
#pragma once

#include <string>

#include "machine_model.h"

namespace kiln::autoschedule {

struct GpuStagePlan {
  double blocks = 1;        // blocks in the grid
  int threads = 32;         // threads per block
  int registers = 32;       // per thread
  double smem = 0;          // bytes of shared memory per block
  double steps = 1;         // dependent steps per thread
  double step_issue = 1;    // SM cycles one warp spends issuing one step
  double step_latency = 0;  // cycles a step waits for its loads
  double flops = 0;         // whole kernel, for the arithmetic bound
  double dram_bytes = 0;    // traffic to DRAM
  double l2_bytes = 0;      // traffic between L2 and the SMs
  double serial_s = 0;      // time added after the parallel part (a single-thread tail)
};

struct GpuPrediction {
  double total_s = 0;
  double occupancy = 0;      // resident warps per SM / the most an SM holds
  double waves = 0;
  bool fits = true;          // false: a block cannot be resident at all (registers, smem)
  std::string bound;         // "latency", "issue", "dram", "l2" or "arithmetic"
  std::string str() const;   // "12.3 us (dram bound, occupancy 0.75, 2 waves)"
};

GpuPrediction predict_gpu(const GpuStagePlan& plan, const MachineModel& m);

}  // namespace kiln::autoschedule
