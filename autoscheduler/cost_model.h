// An analytical cost model: the predicted run time of one pipeline stage's loop nest,
// from the machine model alone, without compiling or running anything.
//
//   time = (compute + memory) x imbalance + max(tasks x task / cores, lock)
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
//   task     = a task's cost to the core that claims and calls it (MachineModel::task_us);
//   lock     = what the thread pool's one lock adds past the work: it hands out one
//              task at a time, each hand-out slower the more cores wait at it
//              (pool_lock_s). A stage starts with every core at the lock; later, cores
//              with work claim at different times and seldom wait (pool_s_per_task, a
//              machine-repairman queue), so tasks of a few us hide most of it. The
//              first cores / tasks of the hand-outs are priced with every core waiting
//              and the last of them then running its task (more work there never
//              predicts less time), the rest in the queue: pricing every hand-out at
//              full contention made the search pick too few tasks (docs/autoscheduler.md,
//              "Measurements behind the choices"). The queue's lock eases as tasks do
//              more work, so choices that keep the tasks (a conv2d's register tile) are
//              ranked by their work, not by this.
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
  // Read a line every many steps (a matmul's broadcasts of a: a line per 16 steps of a
  // row), which the prefetcher fetches while the arithmetic runs: these cost only the time
  // by which they exceed the stage's compute.
  bool overlaps_compute = false;
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
  bool lock_bound = false;  // the thread pool's lock, not the work, sets the stage's time
  std::string str() const;  // "1.23 ms (compute 0.9, memory 0.3, tasks 0.03)"
};

Prediction predict(const StagePlan& plan, const MachineModel& m);

// The time `plan` adds to the tasks of a stage that runs anyway (a Func inlined into its
// consumer, or computed per row of it): its work, without a stage's thread pool cost.
Prediction predict_added_work(const StagePlan& plan, const MachineModel& m);

// Seconds the thread pool's lock is held per task while `claimers` cores claim tasks
// from it: lock_us x log2(claimers), at least half of lock_us. Fitted to stages of empty
// tasks (docs/benchmarks.md, "The thread pool"): on the 16-core
// Xeon 0.17, 0.47, 0.70 and 1.08 us a task with 2, 4, 8 and 16 cores claiming (0.74 past
// 16 tasks), on the 2-core VM 0.11-0.16 us; lock_us = 0.22 gives 0.22, 0.44, 0.66, 0.88.
double pool_lock_s(double claimers, const MachineModel& m);

// Seconds per task that `cores` cores take through the thread pool when each task holds
// a core for `task_work_s` of work, hand-outs included: a machine-repairman queue whose one
// server, the lock, serves in pool_lock_s(cores waiting). pool_lock_s(cores) for empty
// tasks (all cores wait), (task_work_s + pool_lock_s(1)) / cores for long ones (none do).
double pool_s_per_task(double cores, double task_work_s, const MachineModel& m);

// The bandwidth (bytes/s for one core; the whole socket for DRAM) of the smallest level
// holding `working_set` bytes, and whether that level is private to a core.
double bandwidth_for(double working_set, const MachineModel& m, bool* per_core);

}  // namespace kiln::autoschedule
