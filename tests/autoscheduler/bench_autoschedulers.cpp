// Not a test: times kiln's default rules, the Kiln autoscheduler and Halide's
// Mullapudi2016 and Adams2019 on three kiln pipelines (search time, then the best of
// several runs), checking each against the default schedule's output. Current numbers
// for Kiln against Halide's autoschedulers: docs/benchmarks.md (kiln bench-kernels).
//   kiln_autoscheduler_bench <halide lib64 dir> <libautoschedule_kiln.so> [runs]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cases.h"
#include "lower/default_schedule.h"

using namespace kiln;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln_autoscheduler_bench <halide lib64 dir> <libautoschedule_kiln.so> [runs]\n");
    return 2;
  }
  const std::string lib = argv[1];
  Halide::load_plugin(argv[2]);
  Halide::load_plugin(lib + "/libautoschedule_mullapudi2016.so");
  Halide::load_plugin(lib + "/libautoschedule_adams2019.so");
  const int runs = argc > 3 ? std::atoi(argv[3]) : 10;
  const Halide::Target target = Halide::get_jit_target_from_environment();
  const std::vector<as_test::Case> cases = {
      {"matmul 512x512x512", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[1])}; },
       {rand({512, 512}, 1, -1, 1), rand({512, 512}, 2, -1, 1)}},
      {"softmax 1024x4096", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; },
       {rand({1024, 4096}, 3, -4, 4)}},
      {"conv2d n4c64hw56 3x3",
       [](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1], in[2], {1}, {1})}; },
       {rand({4, 64, 56, 56}, 4, -1, 1), rand({64, 64, 3, 3}, 5, -1, 1), rand({64}, 6, -1, 1)}},
  };
  std::printf("| pipeline | schedule | search (ms) | run (ms, best of %d) | max rel diff vs default |\n", runs);
  std::printf("|---|---|---:|---:|---:|\n");
  for (const as_test::Case& c : cases) {
    Halide::Buffer<float> reference;
    for (const std::string s : {"default", "Kiln", "Mullapudi2016", "Adams2019"}) {
      LoweredGraph l = as_test::lower_case(c);
      const auto t0 = Clock::now();
      if (s == "default") {
        apply_default_schedule(l, target);
      } else {
        l.pipeline().apply_autoscheduler(target, {s, {}});
      }
      const double search_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      Halide::Buffer<float> out = as_test::run_case(c, l);  // compiles and warms up
      double best = 1e30;
      for (int i = 0; i < runs; ++i) {
        const auto r0 = Clock::now();
        l.pipeline().realize(out, target);
        best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - r0).count());
      }
      if (s == "default") reference = out.copy();
      double diff = 0;
      out.for_each_element([&](const int* p) {
        diff = std::max(diff, double(std::abs(out(p) - reference(p))) / std::max(1.0, double(std::abs(reference(p)))));
      });
      std::printf("| %s | %s | %.1f | %.3f | %.1e |\n", c.name.c_str(), s.c_str(), search_ms, best, diff);
      std::fflush(stdout);
    }
  }
  return 0;
}
