// An analytical cost model: the predicted run time of one pipeline stage's loop nest,
// from the machine model alone, without compiling or running anything.
//
//   time = (compute + memory) x imbalance + tasks x task overhead / cores
//
//   compute  = cycles of the busiest issue port / (cores used x clock), where the ports
//              are the FMA units (vector arithmetic: flops / (lanes x 2 per FMA)) and the
//              load ports (vector or scalar loads); register tiles that need more
//              vector registers than exist pay a reload and a store per use of the
//              spilled share;
//   memory   = for each stream of bytes, bytes / bandwidth of the cache level that holds
//              the stream's working set (per-core levels scale with the cores used, DRAM
//              does not);
//   imbalance= the idle share of the end of the stage: the last partial wave,
//              ceil(tasks / cores) / (tasks / cores), or half a task per core, the
//              tail of a work queue whose cores do not run in lockstep
//              (1 + cores / (2 x tasks)), whichever is larger; for tasks of unequal
//              sizes, the busiest core's share of a queue that hands them out in order
//              (StagePlan::task_sizes) instead of the last wave;
//
// Compute and memory are added rather than overlapped: pessimistic, but it ranks
// candidates the same way and keeps each term visible in the logs.
#pragma once

#include <string>
#include <vector>

#include "machine_model.h"

namespace kiln::autoschedule {

struct Stream {
  double bytes = 0;        // bytes moved over the whole stage
  double working_set = 0;  // bytes that must stay cached for those bytes to hit
};

struct StagePlan {
  double flops = 0;             // arithmetic of the whole stage
  int lanes = 1;                // vector lanes of the innermost loop (1: scalar)
  double loads = 0;             // load instructions issued (vector or scalar)
  int vector_registers = 0;     // live vector registers the inner loop needs (0: few)
  int chains = 0;               // independent accumulators an FMA waits on (0: none, not latency-bound)
  std::vector<Stream> streams;  // memory traffic
  double tasks = 1;             // parallel tasks (1: serial)
  // Where tasks differ in size: their relative sizes, in the order the work queue hands
  // them out (empty: all equal). predict then takes the busiest core's share of them
  // instead of the last partial wave, which assumes equal tasks.
  std::vector<double> task_sizes;
};

struct Prediction {
  double compute_s = 0, memory_s = 0, overhead_s = 0, total_s = 0;
  std::string str() const;  // "1.23 ms (compute 0.9, memory 0.3, tasks 0.03)"
};

Prediction predict(const StagePlan& plan, const MachineModel& m);

// The bandwidth (bytes/s for one core; the whole socket for DRAM) of the smallest level
// holding `working_set` bytes, and whether that level is private to a core.
double bandwidth_for(double working_set, const MachineModel& m, bool* per_core);

}  // namespace kiln::autoschedule
