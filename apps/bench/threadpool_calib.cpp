// What Halide's thread pool costs a parallel stage on this machine: a chain of S stages
// computed at root, each parallel over T tasks of W floats (a multiply-add per float),
// timed with the loop parallel and serial. Stages of W = 16 are empty tasks: their time is
// the pool's, which the Kiln cost model's task_us and lock_us stand for (cost_model.h).
//
//   kiln_threadpool_calib [--quick]    # one line per W and T: W T us-parallel us-serial
//
// Results: apps/bench/results/2026-12-06_session9_*_threadpool_calib.txt.
#include "Halide.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
using namespace Halide;
static double time_ms(Pipeline& p, Buffer<float>& out, int reps) {
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) p.realize(out);
  for (int r = 0; r < reps; ++r) {
    auto a = std::chrono::steady_clock::now();
    p.realize(out);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int S = 16;
  Target target = get_host_target();
  std::printf("# S=%d stages; columns: W T per-stage-us(parallel) per-stage-us(serial)\n", S);
  for (int W : {16, 1024, 8192, 32768}) {
    if (quick && W > 16) break;
    for (int T : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
      if ((W >= 32768 || quick) && T > 32) continue;
      double us[2];
      for (int par = 0; par < 2; ++par) {
        Buffer<float> in(W, T);
        in.fill(1.0f);
        Var x("x"), t("t");
        Func prev = lambda(x, t, in(x, t));
        for (int i = 0; i < S; ++i) {
          Func g("s" + std::to_string(i));
          g(x, t) = prev(x, t) * 0.999f + 0.5f;
          g.compute_root().vectorize(x, 16);
          if (par) g.parallel(t);
          prev = g;
        }
        Func out_f("out");
        out_f(x, t) = prev(x, t);
        out_f.vectorize(x, 16);
        if (par) out_f.parallel(t);
        Pipeline p(out_f);
        p.compile_jit(target);
        Buffer<float> out(W, T);
        int reps = std::max(20, std::min(400, int(2e6 / (double(W) * T * S + 1))));
        us[par] = time_ms(p, out, reps) * 1e3 / (S + 1);
      }
      std::printf("%6d %4d %9.2f %9.2f\n", W, T, us[1], us[0]);
      std::fflush(stdout);
    }
  }
}
