// What Halide's thread pool costs a parallel stage on this machine: a chain of 16 stages
// at root, each over T tasks of W floats (a multiply-add per float), timed with the loop
// parallel and serial (autoschedule::time_stage_chain_us). Stages of W = 16 are empty
// tasks: their time is the pool's, which the Kiln cost model's task_us and lock_us stand
// for (cost_model.h); larger W shows how much of it hides behind work, and what reading
// the previous stage from other cores' caches costs. `kiln machine --calibrate` fits
// lock_us to the empty stages alone.
//
//   kiln_threadpool_calib [--quick]    # one line per W and T: W T us-parallel us-serial
//
// Results: docs/benchmarks.md, "The thread pool" (256 empty tasks: 190 us on 16 cores).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "autoscheduler/autoscheduler.h"

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::printf("# S=16 stages; columns: W T per-stage-us(parallel) per-stage-us(serial)\n");
  for (int W : {16, 1024, 8192, 32768}) {
    if (quick && W > 16) break;
    for (int T : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
      if ((W >= 32768 || quick) && T > 32) continue;
      const int reps = std::max(20, std::min(400, int(2e6 / (double(W) * T * 16 + 1))));
      const double par = kiln::autoschedule::time_stage_chain_us(W, T, true, reps);
      const double ser = kiln::autoschedule::time_stage_chain_us(W, T, false, reps);
      std::printf("%6d %4d %9.2f %9.2f\n", W, T, par, ser);
      std::fflush(stdout);
    }
  }
}
