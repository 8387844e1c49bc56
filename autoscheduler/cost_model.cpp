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
  for (const Stream& s : plan.streams) {
    bool per_core = false;
    const double bw = bandwidth_for(s.working_set, m, &per_core);
    p.memory_s += s.bytes / (per_core ? bw * cores : bw);
  }
  // Serial stages have no imbalance; a parallel one with fewer tasks than cores already
  // uses fewer cores above. Otherwise the larger of the last partial wave and the tail
  // of a shared work queue: cores never run in lockstep (they share DRAM, clocks differ,
  // the OS takes some), so when the queue runs dry each core is on average half a task
  // from done, idle for half a task's time.
  const double tail = 1.0 + 0.5 * m.cores / tasks;
  const double uneven = plan.task_sizes.empty() ? 1.0 : queue_unevenness(plan.task_sizes, m.cores);
  const double wave = plan.task_sizes.empty() ? waves * m.cores / tasks : uneven;
  const double waste = tasks < m.cores ? uneven : std::max(wave, tail);
  // Each core pays for the tasks it claims, and the pool's lock hands out one task at a
  // time, each hand-out slower the more cores contend: the last task starts no sooner than
  // tasks x that time, and then runs. Tasks with work hide the lock (the cores claim while
  // others work); short tasks wait on it. The bound assumes every core contends: fewer do
  // while tasks have work, but pricing that lets more work per task predict less time,
  // and the search would then pick slower loops (one output channel per conv2d register
  // tile) to calm the lock.
  const double work_s = (p.compute_s + p.memory_s) * waste;
  double own_s = 0, queue_s = 0;
  if (tasks > 1) {
    own_s = tasks * m.task_us * 1e-6 / cores;
    queue_s = tasks * pool_lock_s(cores, m) + work_s * cores / tasks;
  }
  p.overhead_s = std::max(own_s, queue_s - work_s);
  p.lock_bound = queue_s - work_s > own_s;
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
