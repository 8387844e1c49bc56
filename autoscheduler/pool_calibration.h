// What Halide's thread pool costs a parallel stage on this machine, measured: the numbers
// behind MachineModel::lock_us (cost_model.h, pool_lock_s). `kiln machine --calibrate`
// prints them with the KILN_MACHINE setting they suggest.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kiln::autoschedule {

// Microseconds per stage of a chain of 16 stages computed at root, each over `tasks` tasks
// (its outer loop, parallel or serial) of `width` floats (a multiply-add each), JIT-compiled
// for the host: the median of `reps` runs, divided by the stages.
double time_stage_chain_us(int width, int tasks, bool parallel, int reps);

struct PoolCalibration {
  // (cores claiming, us per task): stages of that many empty tasks, less the same serial.
  std::vector<std::pair<int, double>> task_us_by_claimers;
  // The least-squares fit of those to lock_us x max(0.5, log2(cores claiming)).
  double lock_us = 0;
  std::string str() const;  // a table, then "KILN_MACHINE=lock_us=..."
};

// Times stages of 2, 4, ... tasks up to `cores` (2 at least) and fits lock_us.
PoolCalibration calibrate_thread_pool(int cores);

}  // namespace kiln::autoschedule
