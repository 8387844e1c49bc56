// Session 15's seed experiment (raw artifact, not built by CMake): kiln_seed's loops on the
// 2-core Xeon, one variant per process, each printing its median of 9 rounds' medians.
//   li3 plugin PLUGIN   Li2018 through its plugin (parallelism 2)
//   li3 manual          Li2018's directives written by hand
//   li3 lisN            Li2018's structure (vectors of 8 first), tasks of N vectors
//   li3 N               tasks of N elements, vectorized by 8 within each (kiln before 436f19a)
//   li3 kiln            kiln's schedule since 436f19a (lisN with 2048, plus its specializations)
//   li3 kilnnospec      the same without the specializations
// Build: g++ -O1 -std=c++20 li3.cpp -I src -I apps -I generators -I$HALIDE/include
//        build/generators/libkiln_kernel_specs.a build/src/libkiln.a -lHalide -fopenmp
#include "kernel_spec.h"
#include "kernel_timing.h"
#include <cstdio>
#include <algorithm>
#include <string>
using namespace kiln::kernels;
int main(int argc, char** argv) {
  try {
  std::string v = argv[1];
  DirectKernel k = build_direct(make_spec("seed"));
  Halide::Target t = Halide::get_host_target();
  if (v == "plugin") { Halide::load_plugin(argv[2]); k.lowered.pipeline().apply_autoscheduler(t, {"Li2018", {{"parallelism", "2"}}}); }
  else if (v == "manual") {
    Halide::Func out = k.out; Halide::Var d0 = out.args()[0], v0("a"), v1("b");
    out.compute_root().split(d0, v0, v1, 8, Halide::TailStrategy::ShiftInwards).reorder(v1, v0).parallel(v0, 65536, Halide::TailStrategy::ShiftInwards).vectorize(v1);
  } else if (v == "kiln") {  // the Kiln schedule as emitted now
    Halide::Func out = k.out; Halide::Var d0 = out.args()[0], vv("v"), l("l"), tt("t"), i("i");
    out.compute_root();
    Halide::Stage s0 = out.specialize(out.output_buffer().dim(0).extent() >= 32768);
    s0.split(d0, vv, l, 8, Halide::TailStrategy::ShiftInwards).split(vv, tt, i, 2048, Halide::TailStrategy::ShiftInwards).parallel(tt).vectorize(l);
    out.specialize(out.output_buffer().dim(0).extent() >= 8).vectorize(d0, 8, Halide::TailStrategy::ShiftInwards);
  } else if (v == "kilnnospec") {
    Halide::Func out = k.out; Halide::Var d0 = out.args()[0], vv("v"), l("l"), tt("t"), i("i");
    out.compute_root().split(d0, vv, l, 8, Halide::TailStrategy::ShiftInwards).split(vv, tt, i, 2048, Halide::TailStrategy::ShiftInwards).parallel(tt).vectorize(l);
  } else if (v.rfind("lis", 0) == 0) {  // Li2018's structure, tasks of N vectors
    int tv = std::stoi(v.substr(3));
    Halide::Func out = k.out; Halide::Var d0 = out.args()[0], v0("a"), v1("b");
    out.compute_root().split(d0, v0, v1, 8, Halide::TailStrategy::ShiftInwards).reorder(v1, v0).parallel(v0, tv, Halide::TailStrategy::ShiftInwards).vectorize(v1);
  } else {
    int chunk = std::stoi(v);
    Halide::Func out = k.out; Halide::Var d0 = out.args()[0], tt("t"), i("i");
    out.compute_root().split(d0, tt, i, chunk, Halide::TailStrategy::ShiftInwards).parallel(tt).vectorize(i, 8, Halide::TailStrategy::ShiftInwards);
  }
  KernelTimer timer(std::move(k), t);
  std::vector<double> r;
  for (int i = 0; i < 9; ++i) r.push_back(timer.time(10, 2.0, i ? 0.01 : 0.1).median_ms);
  std::sort(r.begin(), r.end());
  std::printf("%s %.3f\n", v.c_str(), r[4]);
  } catch (const std::exception& e) { std::printf("error: %s\n", e.what()); }
}
