#include "gpu_cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::autoschedule {

std::string GpuPrediction::str() const {
  char buf[160];
  if (!fits) return "does not fit on an SM";
  std::snprintf(buf, sizeof(buf), "%.4g us (%s bound, occupancy %.2f, %.3g waves)", total_s * 1e6, bound.c_str(),
                occupancy, waves);
  return buf;
}

GpuPrediction predict_gpu(const GpuStagePlan& plan, const MachineModel& m) {
  GpuPrediction p;
  const int warps_per_block = (plan.threads + 31) / 32;
  const int max_warps = std::max(1, m.gpu_threads_per_sm / 32);
  // Registers are allocated per warp in units of 256 (8 per thread).
  const int regs = std::max(16, (plan.registers + 7) / 8 * 8);
  int blocks_per_sm = std::min(max_warps / warps_per_block, 32);
  blocks_per_sm = std::min(blocks_per_sm, m.regs_per_sm / (regs * warps_per_block * 32));
  if (plan.smem > 0) {
    if (plan.smem > double(m.smem_per_block)) blocks_per_sm = 0;
    else blocks_per_sm = std::min(blocks_per_sm, int(double(m.gpu_smem_per_sm) / plan.smem));
  }
  if (blocks_per_sm < 1 || regs > 255) {
    p.fits = false;
    p.total_s = 1e30;
    return p;
  }
  const double blocks = std::max(1.0, plan.blocks);
  const double per_wave = double(blocks_per_sm) * m.sm_count;
  p.waves = std::ceil(blocks / per_wave);
  // Warps resident on a busy SM: a grid smaller than a wave spreads over the SMs first.
  const double resident_blocks = std::min(double(blocks_per_sm), std::ceil(blocks / m.sm_count));
  const double resident = resident_blocks * warps_per_block;
  p.occupancy = resident / max_warps;
  const double hz = m.gpu_ghz * 1e9;
  const double issue = resident * plan.step_issue, wait = plan.step_latency + plan.step_issue;
  // A partial last wave: its blocks take as long as a full wave's.
  const double rounds = std::ceil(resident_blocks > 0 ? std::ceil(blocks / m.sm_count) / resident_blocks : 1);
  const double steps_s = rounds * plan.steps * std::max(issue, wait) / hz;
  const double active_sms = std::min(double(m.sm_count), blocks);
  const double arith_s = plan.flops / (active_sms * m.gpu_fp32_lanes * 2.0 * hz);
  const double dram_s = plan.dram_bytes / (m.gpu_dram_gbps * 1e9);
  const double l2_s = plan.l2_bytes / (m.gpu_l2_gbps * 1e9 * active_sms / m.sm_count);
  double t = steps_s;
  p.bound = issue >= wait ? "issue" : "latency";
  for (auto [s, name] : {std::pair{arith_s, "arithmetic"}, std::pair{dram_s, "dram"}, std::pair{l2_s, "l2"}}) {
    if (s > t) {
      t = s;
      p.bound = name;
    }
  }
  p.total_s = t + plan.serial_s + m.launch_us * 1e-6;
  return p;
}

}  // namespace kiln::autoschedule
