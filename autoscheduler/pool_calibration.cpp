#include "pool_calibration.h"

#include <Halide.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace kiln::autoschedule {

double time_stage_chain_us(int width, int tasks, bool parallel, int reps) {
  constexpr int kStages = 16;
  Halide::Buffer<float> in(width, tasks), out(width, tasks);
  in.fill(1.0f);
  Halide::Var x("x"), t("t");
  Halide::Func prev("in_copy");
  prev(x, t) = in(x, t);
  prev.compute_root();
  for (int i = 0; i < kStages; ++i) {
    Halide::Func g("stage" + std::to_string(i));
    g(x, t) = prev(x, t) * 0.999f + 0.5f;
    g.compute_root().vectorize(x, 16, Halide::TailStrategy::GuardWithIf);
    if (parallel) g.parallel(t);
    prev = g;
  }
  Halide::Func result("chain_out");
  result(x, t) = prev(x, t);
  Halide::Pipeline p(result);
  p.compile_jit(Halide::get_host_target());
  std::vector<double> ms;
  for (int r = 0; r < reps + 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    p.realize(out);
    if (r >= 5) ms.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] / kStages;
}

PoolCalibration calibrate_thread_pool(int cores) {
  PoolCalibration c;
  double num = 0, den = 0;
  for (int k = 2; k <= std::max(2, cores); k *= 2) {
    const double per_task =
        std::max(0.0, time_stage_chain_us(16, k, true, 200) - time_stage_chain_us(16, k, false, 200)) / k;
    c.task_us_by_claimers.push_back({k, per_task});
    const double f = std::max(0.5, std::log2(double(k)));
    num += per_task * f;
    den += f * f;
  }
  c.lock_us = num / den;
  return c;
}

std::string PoolCalibration::str() const {
  std::string s = "cores claiming   us per empty task\n";
  char line[96];
  for (const auto& [k, us] : task_us_by_claimers) {
    std::snprintf(line, sizeof line, "%14d   %.3f\n", k, us);
    s += line;
  }
  std::snprintf(line, sizeof line, "KILN_MACHINE=lock_us=%.3g\n", lock_us);
  return s + line;
}

}  // namespace kiln::autoschedule
