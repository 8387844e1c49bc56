#include "cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::autoschedule {

double bandwidth_for(double working_set, const MachineModel& m, bool* per_core) {
  *per_core = true;
  if (working_set <= double(m.l1)) return m.l1_gbps * 1e9;
  if (working_set <= double(m.l2)) return m.l2_gbps * 1e9;
  if (working_set <= double(m.l3)) return m.l3_gbps * 1e9;
  *per_core = false;
  return m.dram_gbps * 1e9;
}

namespace {

// The busiest core's work x the cores used / all the work, for tasks of `sizes` handed
// out in order to whichever of `cores` cores is free first.
double queue_unevenness(const std::vector<double>& sizes, int cores) {
  const size_t used = std::min(sizes.size(), size_t(std::max(1, cores)));
  std::vector<double> busy(used, 0.0);
  double total = 0;
  for (double size : sizes) {
    *std::min_element(busy.begin(), busy.end()) += size;
    total += size;
  }
  return total > 0 ? *std::max_element(busy.begin(), busy.end()) * double(used) / total : 1.0;
}

}  // namespace

double pool_lock_s(double claimers, const MachineModel& m) {
  return m.lock_us * 1e-6 * std::max(0.5, std::log2(std::max(1.0, claimers)));
}

double pool_s_per_task(double cores, double task_work_s, const MachineModel& m) {
  const int n = std::max(1, int(std::lround(cores)));
  if (task_work_s <= 0) return pool_lock_s(n, m);
  if (!(pool_lock_s(1, m) > 0)) return task_work_s / n;  // a lock too cheap to price
  // The machine-repairman queue: n cores each work for task_work_s, then wait at the lock,
  // which hands out one task at a time in pool_lock_s(j) with j cores at it. With j at the
  // lock, the other n - j arrive at rate (n - j) / task_work_s and the lock serves at
  // 1 / pool_lock_s(j): the chance of j, p(j), is p(j - 1) x (n - j + 1) / task_work_s x
  // pool_lock_s(j) (in logarithms: the products run past a double for 128 cores of empty
  // tasks), and tasks leave the lock at sum_j>0 p(j) / pool_lock_s(j) a second.
  std::vector<double> log_p(n + 1, 0.0);
  for (int j = 1; j <= n; ++j) log_p[j] = log_p[j - 1] + std::log((n - j + 1) * pool_lock_s(j, m) / task_work_s);
  const double top = *std::max_element(log_p.begin(), log_p.end());
  double total = 0, rate = 0;
  for (int j = 0; j <= n; ++j) {
    const double p = std::exp(log_p[j] - top);
    total += p;
    if (j > 0) rate += p / pool_lock_s(j, m);
  }
  return total / rate;
}

Prediction predict(const StagePlan& plan, const MachineModel& m) {
  Prediction p;
  const double tasks = std::max(1.0, plan.tasks);
  const double cores = std::min(double(m.cores), tasks);
  const double waves = std::ceil(tasks / double(m.cores));
  // Vector arithmetic issues one FMA (2 flops x lanes) per unit per cycle.
  const int lanes = std::max(1, plan.lanes);
  // An accumulator's next FMA waits for its last one: with fewer independent chains than
  // fma_latency x fma_units, the units idle between them.
  double fmas_per_cycle = m.fma_units;
  if (plan.chains > 0) fmas_per_cycle = std::min(fmas_per_cycle, double(plan.chains) / std::max(1, m.fma_latency));
  double arith_cycles = plan.flops / (2.0 * lanes) / fmas_per_cycle;
  double load_cycles = plan.loads / m.load_ports;
  // A register tile larger than the register file spills: the spilled share of the
  // registers costs a reload (on the load ports) and a store (one store port) for every
  // arithmetic instruction that uses them.
  if (plan.vector_registers > m.registers) {
    const double spilled = double(plan.vector_registers - m.registers) / plan.vector_registers;
    load_cycles += spilled * plan.flops / (2.0 * lanes) * (1.0 / m.load_ports + 1.0);
  }
  p.compute_s = std::max(arith_cycles, load_cycles) / (cores * m.ghz * 1e9);
  double overlapped_s = 0;
  for (const Stream& s : plan.streams) {
    bool per_core = false;
    const double bw = bandwidth_for(s.working_set, m, &per_core);
    (s.overlaps_compute ? overlapped_s : p.memory_s) += s.bytes / (per_core ? bw * cores : bw);
  }
  p.memory_s += std::max(0.0, overlapped_s - p.compute_s);
  // Serial stages have no imbalance; a parallel one with fewer tasks than cores already
  // uses fewer cores above. Otherwise the larger of the last partial wave and the tail
  // of a shared work queue: cores never run in lockstep (they share DRAM, clocks differ,
  // the OS takes some), so when the queue runs dry each core is on average half a task
  // from done, idle for half a task's time.
  const double tail = 1.0 + 0.5 * m.cores / tasks;
  const double uneven = plan.task_sizes.empty() ? 1.0 : queue_unevenness(plan.task_sizes, m.cores);
  const double wave = plan.task_sizes.empty() ? waves * m.cores / tasks : uneven;
  const double waste = tasks < m.cores ? uneven : std::max(wave, tail);
  const double evenly_s = p.compute_s + p.memory_s;
  const double work_s = evenly_s * waste;
  // Each core pays for the tasks it claims (task_us), and the pool's lock hands them out
  // one at a time. A stage starts with every core at the lock: those first hand-outs
  // wait with all cores contending, the last of them then runs its task (the bound
  // before pool_s_per_task, which is monotone in work). Later ones come at times the
  // tasks' work has spread out (pool_s_per_task). With tasks / cores hand-outs per core,
  // the first are cores / tasks of them: the lock costs that blend of the two, past the
  // work alone. The blend keeps stages of one or two tasks per core, whose cores all
  // start together, from looking cheaper when each task does more (slower register tiles).
  double own_s = 0, lock_s = 0;
  if (tasks > 1) {
    own_s = tasks * m.task_us * 1e-6 / cores;
    const double task_s = evenly_s * cores / tasks;
    const double rush_s = std::max(0.0, tasks * pool_lock_s(cores, m) + task_s - evenly_s);
    const double spread_s = std::max(0.0, tasks * pool_s_per_task(cores, task_s, m) - evenly_s);
    const double first = cores / tasks;
    lock_s = first * rush_s + (1 - first) * spread_s;
  }
  p.overhead_s = std::max(own_s, lock_s);
  p.lock_bound = lock_s > own_s;
  p.total_s = work_s + p.overhead_s;
  return p;
}

Prediction predict_added_work(const StagePlan& plan, const MachineModel& m) {
  Prediction p = predict(plan, m);
  p.total_s -= p.overhead_s;
  p.overhead_s = 0;
  p.lock_bound = false;
  return p;
}

std::string Prediction::str() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.3g ms (compute %.3g, memory %.3g, tasks %.3g)", total_s * 1e3, compute_s * 1e3,
                memory_s * 1e3, overhead_s * 1e3);
  return buf;
}

}  // namespace kiln::autoschedule
